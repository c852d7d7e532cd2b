//! `cuzk-core` owns what every other cuzk crate stands on: the field and curve types
//! (re-exported from blstrs, ff, group and pairing), the typed errors, the Filecoin PoRep glue
//! (C1 parsing and sanity checks, sector identity, parameter files and the fast test-parameter
//! generator, the bellperson reference prover, `verify_seal`), and memory accounting (RSS,
//! peak RSS, `malloc_trim`, the stage tracer). It knows nothing of CUDA, pipelines or the CLI.

pub mod atomic;
pub mod backend;
pub mod error;
pub mod fixed_base;
pub mod groth16;
pub mod mem;
pub mod params;
pub mod porep;
pub mod random_srs;
pub mod registry;
pub mod testing;

pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
pub use error::{Error, Result};
pub use ff;
pub use group;
pub use pairing;
