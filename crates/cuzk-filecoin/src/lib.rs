//! `cuzk-filecoin` holds everything cuzk knows about Filecoin, behind the engine's
//! [`cuzk_pipeline::ProofKind`] seam: one module per proof kind ([`post`]: WinningPoSt and WindowPoSt partitions from Curio's vanilla proofs; [`update`]: SnapDeals from Curio's partition proofs; [`porep`]: C1 files
//! and their checks, the registered-proof table, the partition circuits, the native witness,
//! the PCE identity, parameter files and test parameters, `verify_seal`, synthetic C1s, and
//! [`porep::PorepC2`], the kind itself), Curio's circuit names ([`curio`]), what a parameter directory holds against filecoin-proofs'
//! manifest ([`param_cache`]) and the settings
//! filecoin-proofs reads from the process environment ([`settings`]). The generic crates below
//! it (core, witness, PCE, GPU, pipeline) must never learn any of this; it must not know the
//! CLI, gRPC or a particular backend.
//!
//! # Example
//!
//! Parsing the bundled 2 KiB C1 output (lotus form, so it names its registered proof) and
//! running every check that comes before proving — partition count, Merkle path shapes, the
//! replica id against the sector identity in its metadata file, and filecoin-proofs' own
//! vanilla-proof verification. A C1 for another sector size than the one expected is refused
//! as such.
//!
//! ```
//! use cuzk_filecoin::porep::c1::{self, C1};
//! use cuzk_filecoin::porep::sector::{self, SectorMeta};
//! use cuzk_filecoin::{Error, RegisteredSealProof};
//!
//! let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/2kib/c1.json"));
//! let bytes = std::fs::read(path)?;
//! let c1 = C1::parse(path, &bytes, None)?;
//! assert_eq!(c1.sector_size(), 2048);
//! assert_eq!(c1.registered_proof, RegisteredSealProof::StackedDrg2KiBV1_1);
//! assert!(c1.wrapped && !c1.synthetic);
//!
//! let meta = SectorMeta::load(&sector::meta_path_for(path))?;
//! assert_eq!(hex::encode(c1.comm_r), meta.comm_r);
//! let prepared = c1::prepare::<filecoin_proofs::SectorShape2KiB>(&c1, &meta.identity())?;
//! assert_eq!(prepared.vanilla.len(), usize::from(c1.porep_config().partitions));
//!
//! let wrong = C1::parse(path, &bytes, Some(RegisteredSealProof::StackedDrg32GiBV1_1));
//! assert!(matches!(wrong, Err(Error::SectorSize(_))));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod curio;
pub mod error;
pub mod merkle_shape;
pub mod param_cache;
pub mod porep;
pub mod poseidon_witness;
pub mod post;
pub mod settings;
mod sha256_witness;
pub mod update;

pub use error::{Error, Result};
pub use porep::{PorepC2, PorepInput, RegisteredSealProof};
pub use settings::Settings;

use std::sync::Arc;

/// The proof kinds a process serves, configured once at the top (CLI flags, daemon config)
/// and shared by every request.
#[derive(Clone, Debug)]
pub struct Kinds {
    /// PoRep commit phase 2.
    pub porep: Arc<PorepC2>,
    /// WinningPoSt and WindowPoSt partitions.
    pub post: Arc<post::PoSt>,
    /// SnapDeals update proofs.
    pub update: Arc<update::SnapDeals>,
}

/// What of a circuit is resident in this process: its PCE and its parameters.
pub type Resident = (Option<Arc<cuzk_pce::PreCompiledCircuit>>, Option<Arc<cuzk_core::srs::Srs>>);

impl Kinds {
    /// What of `c` is resident in this process.
    pub fn resident(&self, c: curio::Circuit) -> Resident {
        use cuzk_pipeline::ProofKind;
        match c {
            curio::Circuit::Porep(rp) => self.porep.resident(rp),
            curio::Circuit::Post(rp) => cuzk_pipeline::resources::resident(&self.post.circuit_id(&rp)),
            curio::Circuit::Update(rp) => cuzk_pipeline::resources::resident(&self.update.circuit_id(&rp)),
        }
    }

    /// Drops this process's copies of `c`'s PCE and parameters (in-flight proofs keep theirs).
    pub fn evict(&self, c: curio::Circuit) -> Resident {
        use cuzk_pipeline::ProofKind;
        match c {
            curio::Circuit::Porep(rp) => self.porep.evict(rp),
            curio::Circuit::Post(rp) => cuzk_pipeline::resources::evict(&self.post.circuit_id(&rp)),
            curio::Circuit::Update(rp) => cuzk_pipeline::resources::evict(&self.update.circuit_id(&rp)),
        }
    }

    /// Loads `c`'s parameters and PCE if they are not resident; true if both already were.
    pub fn preload(&self, c: curio::Circuit) -> Result<bool> {
        match c {
            curio::Circuit::Porep(rp) => self.porep.preload(rp),
            curio::Circuit::Post(rp) => {
                let (pce, params) = self.resident(c);
                cuzk_pipeline::resources::shared(self.post.as_ref(), &rp)?;
                Ok(pce.is_some() && params.is_some())
            }
            curio::Circuit::Update(rp) => {
                let (pce, params) = self.resident(c);
                cuzk_pipeline::resources::shared(self.update.as_ref(), &rp)?;
                Ok(pce.is_some() && params.is_some())
            }
        }
    }

    /// Every kind with the directories of `settings`; PoRep witnesses computed as `witness` says.
    pub fn new(settings: &Settings, witness: porep::WitnessMode) -> Kinds {
        Kinds {
            porep: Arc::new(PorepC2::with_settings(settings).with_witness(witness)),
            post: Arc::new(post::PoSt::with_settings(settings)),
            update: Arc::new(update::SnapDeals::with_settings(settings)),
        }
    }
}
