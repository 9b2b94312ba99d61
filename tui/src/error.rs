//! The crate's error type.

/// Everything that can go wrong in the library part of `fabric-tui`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `/` filter expression did not parse.
    #[error("filter: {0}")]
    Filter(#[from] crate::filter::ParseError),
    /// The TOML config file is invalid.
    #[error("{path}: {msg}")]
    Config {
        /// The config file.
        path: String,
        /// What was wrong (names the field).
        msg: String,
    },
    /// A file could not be opened or created.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// The OS error (part of the message, so not a separate `source`).
        error: std::io::Error,
    },
    /// A recording could not be read or written.
    #[error("{path}: {error}")]
    Recording {
        /// The recording.
        path: String,
        /// What was wrong (part of the message, so not a separate `source`).
        error: fabric_api::Error,
    },
    /// A tenant file could not be read or does not fit the fabric (the message names the
    /// file, the entry and the limit).
    #[error("{0}")]
    Tenants(String),
    /// A key binding names a key that does not exist.
    #[error("key binding `{key}` for `{action}`: {msg}")]
    Key {
        /// The action being bound.
        action: String,
        /// The key text as written.
        key: String,
        /// What was expected.
        msg: String,
    },
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
