//! `cuzk-filecoin` holds everything cuzk knows about Filecoin, behind the engine's
//! [`cuzk_pipeline::ProofKind`] seam: one module per proof kind ([`porep`] today: C1 files
//! and their checks, the registered-proof table, the partition circuits, the native witness,
//! the PCE identity, parameter files and test parameters, `verify_seal`, synthetic C1s, and
//! [`porep::PorepC2`], the kind itself), Curio's circuit names ([`curio`]) and the settings
//! filecoin-proofs reads from the process environment ([`settings`]). The generic crates below
//! it (core, witness, PCE, GPU, pipeline) must never learn any of this; it must not know the
//! CLI, gRPC or a particular backend.

pub mod curio;
pub mod error;
pub mod porep;
pub mod settings;

pub use error::{Error, Result};
pub use porep::{PorepC2, PorepInput, RegisteredSealProof};
pub use settings::Settings;

use std::sync::Arc;

/// The proof kinds a process serves, configured once at the top (CLI flags, daemon config)
/// and shared by every request.
#[derive(Clone, Debug)]
pub struct Kinds {
    pub porep: Arc<PorepC2>,
}

impl Kinds {
    /// Every kind with the directories of `settings`; PoRep witnesses computed as `witness` says.
    pub fn new(settings: &Settings, witness: porep::WitnessMode) -> Kinds {
        Kinds { porep: Arc::new(PorepC2::with_settings(settings).with_witness(witness)) }
    }
}
