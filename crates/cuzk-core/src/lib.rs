//! `cuzk-core` owns what every other cuzk crate stands on: the field and curve types
//! (re-exported from blstrs, ff, group and pairing), the typed errors, Groth16 itself (the
//! backend seam of MSM, NTT and mat-vec with its CPU implementation and conformance suite,
//! the prover's assembly, parameter files in bellperson's format, random parameters), atomic
//! file writes, the process-wide registry of shared values, memory accounting (RSS, peak
//! RSS, `malloc_trim`, the stage tracer), and the priority a thread works at with the
//! priority-ordered, panic-surviving lock that device calls take ([`priority`],
//! [`device_lock`]), and the thread pool kept for urgent work ([`reserved_pool`]). It knows Groth16, not Filecoin: no proof kind, file
//! format of a request or verifier lives here, nor anything of CUDA, pipelines or the CLI.
//!
//! # Example
//!
//! Proving `x · x = y` (x = 3 private, y = 9 public) on the CPU backend. The prover takes the
//! witness, the constraint evaluations and the density bitmaps; `cuzk-pce` records those for
//! a real circuit, here they are written out by hand. Bellperson's prover appends one row
//! `input_i · 0 = 0` per input, so the rows are `x·x = y`, `1·0 = 0` and `y·0 = 0`.
//!
//! ```
//! use bellperson::groth16;
//! use bellperson::{Circuit, ConstraintSystem, SynthesisError};
//! use cuzk_core::backend::cpu::CpuBackend;
//! use cuzk_core::groth16::{prove, Densities, MsmMode, Witness};
//! use cuzk_core::backend::Evaluations;
//! use cuzk_core::Scalar;
//! use cuzk_core::ff::Field;
//! use rand::SeedableRng;
//!
//! struct Square;
//! impl Circuit<Scalar> for Square {
//!     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//!         let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
//!         let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
//!         cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//!         Ok(())
//!     }
//! }
//!
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
//! let params = groth16::generate_random_parameters(Square, &mut rng)?;
//!
//! let (x, y) = (Scalar::from(3u64), Scalar::from(9u64));
//! let (inputs, aux) = ([Scalar::ONE, y], [x]);
//! let evals = Evaluations { a: vec![x, Scalar::ONE, y], b: vec![x, Scalar::ZERO, Scalar::ZERO], c: vec![y, Scalar::ZERO, Scalar::ZERO] };
//! // x occurs in A and in B; no input occurs in B.
//! let densities = Densities { a_aux: &[1], b_input: &[0], b_aux: &[1] };
//!
//! let (r, s) = (Scalar::from(5u64), Scalar::from(7u64));
//! let witness = Witness::evaluated(&inputs, &aux, evals);
//! let (proof, _timings) = prove(&CpuBackend::new(), (&params).into(), &densities, witness, r, s, MsmMode::Split)?;
//!
//! let pvk = groth16::prepare_verifying_key(&params.vk);
//! assert!(groth16::verify_proof(&pvk, &proof, &[y])?);
//! assert!(!groth16::verify_proof(&pvk, &proof, &[x])?);
//! // The same r and s give bellperson's own proof.
//! assert!(proof == groth16::create_proof(Square, &params, r, s)?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod atomic;
pub mod backend;
pub mod bits;
pub mod buffer_pool;
pub mod device_lock;
pub mod error;
pub mod fixed_base;
pub mod groth16;
pub mod mem;
pub mod params;
pub mod priority;
pub mod progress;
pub mod random_srs;
pub mod registry;
pub mod reserved_pool;
pub mod srs;
pub mod srs_map;
pub mod testing;

pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
pub use error::{Error, Result};
pub use ff;
pub use group;
pub use pairing;
