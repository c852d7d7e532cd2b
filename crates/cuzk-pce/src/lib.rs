//! `cuzk-pce` owns the Pre-Compiled Constraint Evaluator: one recording synthesis turns a
//! circuit into a [`PreCompiledCircuit`] — A, B and C as compact CSR (32-bit columns, interned
//! coefficients), the counts and the density bitmaps the prover needs — so that every later
//! proof of the same topology needs only a witness and three sparse mat-vecs instead of a full
//! R1CS synthesis. It also owns the on-disk cache ([`cache`]), the reference full synthesis the results are checked against
//! ([`reference`](mod@reference)), witnesses checked against and joined under a PCE ([`witness`]), one
//! partition's mat-vec and proof ([`prove`]) and the fast test-parameter generator
//! ([`paramgen`]). It knows no circuit family (Filecoin lives above it), no GPU and no
//! pipeline.
//!
//! # Example
//!
//! Record a small circuit once, then compute its constraint evaluations from the witness
//! alone and check them against a full R1CS synthesis; prove with the PCE on the CPU backend
//! (with test parameters made from the same recording) and verify.
//!
//! ```
//! use bellperson::groth16;
//! use cuzk_core::backend::cpu::CpuBackend;
//! use cuzk_core::groth16::MsmMode;
//! use cuzk_core::mem::StageTracer;
//! use cuzk_core::testing::SatisfiedCircuit;
//! use cuzk_core::Scalar;
//! use cuzk_pce::paramgen::{generate_for, Secrets};
//! use cuzk_pce::prove::{prove_circuit, Timings};
//! use rand::SeedableRng;
//!
//! let circuit = SatisfiedCircuit { seed: 3, steps: 40 };
//! let pce = cuzk_pce::extract(circuit.clone())?;
//!
//! // The new path: witness-only synthesis, then three sparse mat-vecs.
//! let w = cuzk_pce::witness::checked_witness(circuit.clone(), &pce)?;
//! let evals = pce.evaluate(&w.inputs, &w.aux)?;
//! // The old path: bellperson's full synthesis, linear combinations and all.
//! let full = cuzk_pce::reference::synthesize(circuit.clone())?;
//! assert_eq!((&w.inputs, &w.aux, &evals), (&full.inputs, &full.aux, &full.eval));
//! assert_eq!(pce.num_constraints, full.eval.a.len());
//!
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
//! let (params, _report) = generate_for(circuit.clone(), &Secrets::random(&mut rng))?;
//! let (r, s) = (Scalar::from(5u64), Scalar::from(7u64));
//! let (tracer, mut times) = (StageTracer::new(), Timings::default());
//! let proof = prove_circuit(&CpuBackend::new(), &pce, &params, circuit, r, s, MsmMode::Split, &tracer, &mut times)?;
//! let pvk = groth16::prepare_verifying_key(&params.vk);
//! assert!(groth16::verify_proof(&pvk, &proof, &w.inputs[1..])?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod cache;
pub mod matrix;
pub mod paramgen;
pub mod prove;
pub mod record;
pub mod reference;
pub mod witness;

pub use matrix::{CsrMatrix, Evaluations, PreCompiledCircuit};
pub use record::{extract, extract_split, RecordPiece, RecordingCs};

/// Errors of the PCE crate.
#[derive(Debug, thiserror::Error)]
pub enum PceError {
    /// Synthesising the circuit (or its witness) failed, or the parameters cannot be made for it; the message says why.
    #[error("synthesis failed: {0}")]
    Synthesis(String),
    /// The circuit exceeds the compact format's or the field's limits (variables, distinct coefficients, entries or domain size).
    #[error("circuit too large for the compact format: {0}")]
    TooLarge(String),
    /// A witness whose counts (or pieces) do not match the PCE it is used with.
    #[error("witness does not fit the circuit: {0}")]
    Witness(String),
    /// The circuit to record could not be built (the source says why).
    #[error("building the circuit to record")]
    Circuit(#[source] std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>),
    /// An error from cuzk-core (files, parameters, proving).
    #[error(transparent)]
    Core(#[from] cuzk_core::Error),
}

/// Result with [`PceError`].
pub type Result<T, E = PceError> = std::result::Result<T, E>;
