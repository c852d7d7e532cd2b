//! The typed errors of cuzk's generic libraries: every failure names the input (a file, a
//! field, a size) and what is wrong with it, so the CLI can print one line and exit non-zero.

use std::path::PathBuf;

/// Result with cuzk's error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in cuzk's libraries.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file (or directory) the operation was on.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A Groth16 parameter or verifying-key file is missing, truncated or malformed.
    #[error("{}: {reason}", path.display())]
    Params {
        /// The parameter or verifying-key file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Loaded parameters that do not belong to the circuit being proved.
    #[error("Groth16 parameters: {0}")]
    ParamLayout(String),
    /// The inputs are well-formed but do not belong together (wrong sector, bad path, ...).
    #[error("{0}")]
    Invalid(String),
    /// The proving device failed (or is gone) while proving; the same work may succeed on
    /// another backend.
    #[error("the proving device failed: {0}")]
    Device(String),
    /// Circuit synthesis or proving failed.
    #[error("proving failed: {0}")]
    Proving(String),
    /// A proof was produced but does not verify.
    #[error("proof does not verify: {0}")]
    Verification(String),
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// A parameter-file problem for `path`.
    pub fn params(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::Params { path: path.into(), reason: reason.into() }
    }
}
