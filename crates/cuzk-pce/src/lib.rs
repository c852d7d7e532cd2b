//! `cuzk-pce` owns the Pre-Compiled Constraint Evaluator: one recording synthesis turns a
//! circuit into a [`PreCompiledCircuit`] — A, B and C as compact CSR (32-bit columns, interned
//! coefficients), the counts and the density bitmaps the prover needs — so that every later
//! proof of the same topology needs only a witness and three sparse mat-vecs instead of a full
//! R1CS synthesis. It also owns the on-disk cache ([`cache`]), the reference full synthesis the results are checked against
//! ([`reference`]), witnesses checked against and joined under a PCE ([`witness`]), one
//! partition's mat-vec and proof ([`prove`]) and the fast test-parameter generator
//! ([`paramgen`]). It knows no circuit family (Filecoin lives above it), no GPU and no
//! pipeline.

pub mod cache;
pub mod matrix;
pub mod paramgen;
pub mod prove;
pub mod record;
pub mod reference;
pub mod witness;

pub use matrix::{CsrMatrix, Evaluations, PreCompiledCircuit};
pub use record::{extract, RecordingCs};

/// Errors of the PCE crate.
#[derive(Debug, thiserror::Error)]
pub enum PceError {
    #[error("synthesis failed: {0}")]
    Synthesis(String),
    #[error("circuit too large for the compact format: {0}")]
    TooLarge(String),
    #[error("witness does not fit the circuit: {0}")]
    Witness(String),
    /// The circuit to record could not be built (the source says why).
    #[error("building the circuit to record")]
    Circuit(#[source] std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>),
    #[error(transparent)]
    Core(#[from] cuzk_core::Error),
}

pub type Result<T, E = PceError> = std::result::Result<T, E>;
