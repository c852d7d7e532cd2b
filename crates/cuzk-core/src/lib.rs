//! `cuzk-core` owns what every other cuzk crate stands on: the field and curve types
//! (re-exported from blstrs, ff, group and pairing), the typed errors, Groth16 itself (the
//! backend seam of MSM, NTT and mat-vec with its CPU implementation and conformance suite,
//! the prover's assembly, parameter files in bellperson's format, random parameters), atomic
//! file writes, the process-wide registry of shared values, and memory accounting (RSS, peak
//! RSS, `malloc_trim`, the stage tracer). It knows Groth16, not Filecoin: no proof kind, file
//! format of a request or verifier lives here, nor anything of CUDA, pipelines or the CLI.

pub mod atomic;
pub mod backend;
pub mod bits;
pub mod error;
pub mod fixed_base;
pub mod groth16;
pub mod mem;
pub mod params;
pub mod random_srs;
pub mod registry;
pub mod testing;

pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
pub use error::{Error, Result};
pub use ff;
pub use group;
pub use pairing;
