//! Proof-of-Spacetime as proof kinds: WinningPoSt and one WindowPoSt partition, proved from
//! the vanilla proofs Curio sends (one bincode `FallbackPoStSectorProof` per sector). It owns
//! the registered PoSt proofs and their lotus numbers ([`registry`]), the request and its
//! checks ([`input`]), the partition circuit, its PCE identity and parameter files
//! ([`circuit`]), the official verifiers ([`verify`]), sealing sectors and drawing vanilla
//! proofs for tests and fixtures ([`fixture`]), filecoin-proofs' own prover as the baseline
//! ([`reference_prover`]), valid requests at any size without sealing ([`synthetic`]), and [`PoSt`], the kind the engine proves
//! through ([`kind`]). It shares the engine, the PCE machinery and test-parameter generation
//! with PoRep and knows nothing of gRPC, the command line or a backend.

pub mod circuit;
pub mod fixture;
pub mod input;
pub mod kind;
pub mod reference_prover;
pub mod registry;
pub mod synthetic;
pub mod verify;
mod witness;

pub use filecoin_proofs_api::RegisteredPoStProof;
pub use input::PostInput;
pub use kind::PoSt;
