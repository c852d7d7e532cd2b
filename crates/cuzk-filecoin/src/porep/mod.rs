//! PoRep commit phase 2 (C2) as a proof kind: sector sizes and identities ([`sector`]), C1
//! files in both JSON forms and their sanity checks ([`c1`]), the partition circuits
//! ([`circuits`]) and their native witness ([`witness`]), the PCE identity and the witness
//! modes ([`pce`]), parameter files ([`params`]) and insecure test parameters
//! ([`test_params`]), sealing a random sector to make a C1 ([`seal`]), synthetic full-size
//! C1s ([`synthetic`]), the bellperson reference prover ([`reference_prover`]),
//! `verify_seal` ([`verify`]), non-interactive PoRep's SnarkPack aggregation and SRS check
//! ([`ni`]), and [`PorepC2`], the kind the engine proves through ([`kind`]).

pub mod c1;
pub mod circuits;
pub mod kind;
pub mod ni;
pub mod params;
pub mod pce;
pub mod reference_prover;
pub mod seal;
pub mod sector;
pub mod synthetic;
pub mod test_params;
pub mod verify;
pub mod witness;

pub use filecoin_proofs_api::RegisteredSealProof;
pub use kind::{PorepC2, PorepInput};
pub use pce::WitnessMode;
