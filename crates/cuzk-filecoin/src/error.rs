//! The typed errors of the Filecoin proof kinds: a bad C1 (naming the file and the field), a
//! sector size or registered proof cuzk does not serve, an error reported by the
//! filecoin-proofs crates (with its whole context chain), and the generic layers' errors
//! carried unchanged as sources.

use std::path::PathBuf;

/// Result with the Filecoin layer's error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while turning a Filecoin request into a verified proof.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A C1 output file is unreadable, malformed or inconsistent.
    #[error("{}: {reason}", path.display())]
    C1 {
        /// The C1 file (or the metadata file next to it).
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A PoSt request (file or RPC) that is malformed or whose vanilla proofs do not hold.
    #[error("{source_name}: {reason}")]
    PostInput {
        /// Where the request came from (a file, a request id).
        source_name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A SnapDeals request (file or RPC) that is malformed or whose partition proofs do not
    /// hold.
    #[error("{source_name}: {reason}")]
    UpdateInput {
        /// Where the request came from (a file, a request id).
        source_name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A sector size or registered proof that cuzk does not support, or that does not match.
    #[error("sector size: {0}")]
    SectorSize(String),
    /// The inputs are well-formed but do not belong together (wrong sector, bad path, ...).
    #[error("{0}")]
    Invalid(String),
    /// A partition's witness could not be computed or does not fit its circuit.
    #[error("witness: {0}")]
    Witness(String),
    /// The reference (bellperson) prover failed.
    #[error("proving failed: {0}")]
    Proving(String),
    /// A proof was produced but does not verify.
    #[error("proof does not verify: {0}")]
    Verification(String),
    /// An error reported by the filecoin-proofs family of crates.
    #[error("filecoin-proofs: {0}")]
    Filecoin(String),
    /// A generic failure from cuzk-core (files, parameters, proving, the device).
    #[error(transparent)]
    Core(#[from] cuzk_core::Error),
    /// A failure of the PCE layer (extraction, cache, witness join).
    #[error(transparent)]
    Pce(#[from] cuzk_pce::PceError),
    /// A failure inside the proving engine.
    #[error(transparent)]
    Pipeline(#[from] cuzk_pipeline::PipelineError),
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Core(cuzk_core::Error::io(path, source))
    }

    /// A C1 problem for `path`.
    pub fn c1(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::C1 { path: path.into(), reason: reason.into() }
    }

    /// A parameter-file problem for `path`.
    pub fn params(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::Core(cuzk_core::Error::params(path, reason))
    }

    /// Converts an error from the filecoin-proofs crates (which use anyhow) into ours,
    /// keeping its whole context chain in the message.
    pub fn filecoin(e: impl std::fmt::Display) -> Self {
        Error::Filecoin(format!("{e:#}"))
    }
}
