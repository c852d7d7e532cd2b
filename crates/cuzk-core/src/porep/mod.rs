//! Filecoin PoRep commit phase 2 glue around the published circuit crates: sector sizes and
//! identities ([`sector`]), C1 files in both JSON forms and their sanity checks ([`c1`]),
//! Groth16 parameter files for a registered proof, including fast insecure test parameters
//! ([`setup`]), sealing a random sector to make a C1 ([`seal`]), synthetic full-size C1s ([`synthetic`]), the bellperson reference
//! prover ("old path", [`bellperson_engine`]) and `verify_seal` ([`verify`]).

pub mod bellperson_engine;
pub mod c1;
pub mod seal;
pub mod sector;
pub mod setup;
pub mod synthetic;
pub mod verify;

pub use filecoin_proofs_api::RegisteredSealProof;

/// Sets the directories filecoin-proofs reads from the environment (parameters, and the
/// SDR parent cache used when sealing) to cuzk's defaults where the user has not set them,
/// and checks that filecoin-proofs agrees. Call once, early, before any thread reads them.
pub fn init_env() -> crate::Result<std::path::PathBuf> {
    const PARENTS_ENV: &str = "FIL_PROOFS_PARENT_CACHE";
    if std::env::var_os(PARENTS_ENV).is_none() {
        let dir = crate::params::default_cache_dir()
            .parent()
            .map(|p| p.join("filecoin-parents"))
            .unwrap_or_else(|| std::env::temp_dir().join("cuzk-filecoin-parents"));
        std::env::set_var(PARENTS_ENV, dir);
    }
    crate::params::init_cache_dir()
}
