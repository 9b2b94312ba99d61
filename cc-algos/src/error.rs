//! The crate's error type: every variant says which parameter was wrong and why.

/// Errors from building a controller or policy out of a configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A configuration field is out of range or inconsistent with another.
    #[error("invalid {algo} config: field `{field}`: {reason}")]
    InvalidConfig {
        /// The algorithm or policy being configured (e.g. "dcqcn", "red").
        algo: &'static str,
        /// The offending field.
        field: &'static str,
        /// What was expected.
        reason: String,
    },
    /// An algorithm or preset name that is not known.
    #[error("unknown {what} `{name}`; expected one of: {expected}")]
    UnknownName {
        /// What was being looked up ("algorithm", "DCQCN preset", "EV policy").
        what: &'static str,
        /// The name given.
        name: String,
        /// The accepted names, comma-separated.
        expected: &'static str,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

pub(crate) fn invalid(algo: &'static str, field: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidConfig {
        algo,
        field,
        reason: reason.into(),
    }
}
