//! SnapDeals (`EmptySectorUpdate`) as a proof kind: an update proof proved from the partition
//! proofs Curio sends (one bincode `PartitionProof` per partition) and the commitments
//! comm_r_old, comm_r_new and comm_d_new. It owns the registered update proofs and their lotus
//! numbers ([`registry`]), the request and its checks ([`input`]), the partition circuit, its
//! PCE identity and parameter files ([`circuit`]), the official verifier ([`verify`]), sealing
//! and updating a sector to make real requests ([`fixture`]), requests of real structure and
//! random contents at any size for timing ([`synthetic`]), filecoin-proofs' own prover as
//! the baseline ([`reference_prover`]) and [`SnapDeals`], the kind the engine proves through
//! ([`kind`]). It shares the engine, the PCE machinery and test-parameter generation with
//! PoRep and PoSt and knows nothing of gRPC, the command line or a backend.

pub mod circuit;
pub mod fixture;
pub mod input;
pub mod kind;
pub mod reference_prover;
pub mod registry;
pub mod synthetic;
pub mod verify;
mod witness;

pub use filecoin_proofs_api::RegisteredUpdateProof;
pub use input::UpdateInput;
pub use kind::SnapDeals;
