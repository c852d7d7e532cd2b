//! Groth16 parameters for a registered proof: the official file names inside the parameter
//! directory (plus cuzk's lock and test-parameter marker files) and loading them. Making test
//! parameters is [`super::test_params`]' job. The process-wide shared copy lives in
//! `cuzk_pipeline::resources`, keyed by circuit id.

use std::path::PathBuf;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use filecoin_proofs_api::RegisteredSealProof;

use crate::{Error, Result};
use cuzk_core::params::{self, ParamsLayout};

/// The files of one parameter set.
#[derive(Clone, Debug)]
pub struct ParamPaths {
    /// filecoin-proofs' cache identifier, e.g. `stacked-proof-of-replication-...`.
    pub id: String,
    /// The Groth16 parameter file (`.params`).
    pub params: PathBuf,
    /// The verifying-key file (`.vk`).
    pub vk: PathBuf,
    /// filecoin-proofs' metadata file (`.meta`) of the parameter set.
    pub meta: PathBuf,
    /// Present only next to test parameters that cuzk generated.
    pub test_marker: PathBuf,
}

impl ParamPaths {
    /// The paths filecoin-proofs uses for `rp` in the configured parameter directory.
    pub fn for_proof(rp: RegisteredSealProof) -> Result<Self> {
        let params = rp.cache_params_path().map_err(Error::filecoin)?;
        let vk = rp.cache_verifying_key_path().map_err(Error::filecoin)?;
        let id = rp.circuit_identifier().map_err(Error::filecoin)?;
        Ok(ParamPaths::from_files(id, params, vk))
    }

    /// The paths of the parameter set `id` whose `.params` and `.vk` files filecoin-proofs
    /// named (any proof kind); the metadata, marker and lock files sit beside them.
    pub fn from_files(id: String, params: PathBuf, vk: PathBuf) -> Self {
        let meta = storage_proofs_core::parameter_cache::parameter_cache_metadata_path(&id);
        let test_marker = params.with_extension("cuzk-test-params");
        ParamPaths { id, params, vk, meta, test_marker }
    }

    /// The lock file held while test parameters are generated, so concurrent processes generate them once.
    pub fn lock_path(&self) -> PathBuf {
        self.params.with_extension("cuzk-lock")
    }
}

/// Loads the parameters of `rp` (checking them first), with the time it took.
pub fn load(rp: RegisteredSealProof) -> Result<(Parameters<Bls12>, ParamsLayout)> {
    let paths = ensure_present(rp)?;
    params::check_vk_file(&paths.vk)?;
    Ok(params::load_params(&paths.params)?)
}

/// The parameter paths of `rp`, or an error naming the missing `.params` file and how to get it.
pub fn ensure_present(rp: RegisteredSealProof) -> Result<ParamPaths> {
    let paths = ParamPaths::for_proof(rp)?;
    if !paths.params.exists() {
        return Err(Error::params(
            &paths.params,
            format!(
                "missing Groth16 parameters for {rp:?}; run `cuzk params ensure --sector-size {}` \
                 for test parameters or fetch the official ones",
                super::kind::size_name(rp)
            ),
        ));
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_porep_variant_of_a_size_shares_the_interactive_parameter_files() {
        // filecoin-ffi numbers V1_1 5-9, SyntheticPoRep 10-14, NI-PoRep 15-19 (same size order);
        // their partition circuits are equal, so one parameter set (and one PCE) serves all.
        for at in 0..5u64 {
            let interactive = ParamPaths::for_proof(crate::curio::from_number(5 + at).unwrap()).unwrap();
            for variant in [10 + at, 15 + at] {
                let rp = crate::curio::from_number(variant).unwrap();
                let paths = ParamPaths::for_proof(rp).unwrap();
                assert_eq!((&paths.id, &paths.params), (&interactive.id, &interactive.params), "{rp:?}");
            }
        }
    }
}
