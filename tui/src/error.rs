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
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A recording could not be read or written.
    #[error("{path}: {source}")]
    Recording {
        /// The recording.
        path: String,
        /// What was wrong.
        source: fabric_api::Error,
    },
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
