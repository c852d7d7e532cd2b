//! [`PoSt`], WinningPoSt and WindowPoSt (one partition per request) behind the engine's
//! [`ProofKind`] seam. A request is a [`PostInput`]; the circuit key is its registered PoSt
//! proof; the parse stage verifies the vanilla proofs and hands the engine the one partition's
//! witness (the circuit's own gadgets through a witness-only constraint system, one piece per
//! sector in parallel, checked against the PCE's counts); the proof is the partition's 192 bytes, judged by
//! `verify_winning_post` / `verify_window_post`. Test parameters come from the same generator
//! as PoRep's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::Proof;
use blstrs::Bls12;
use cuzk_pce::cache::Outcome;
use cuzk_pce::PreCompiledCircuit;
use cuzk_pipeline::engine::Synthesize;
use cuzk_pipeline::kind::{concatenate, CircuitId, JobOptions, ProofKind};
use cuzk_pipeline::{resources, JobSource, PipelineError};
use filecoin_proofs::with_shape;
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::merkle::MerkleTreeTrait;

use super::{circuit, registry, verify, PostInput};
use crate::porep::test_params::{self, Ensured};
use crate::settings::Settings;
use crate::{Error, Result};

/// The PoSt proof kinds (WinningPoSt and WindowPoSt partitions), configured from the top.
#[derive(Clone, Debug)]
pub struct PoSt {
    pce_cache_dir: PathBuf,
    srs_map_dir: Option<PathBuf>,
}

impl PoSt {
    /// The kind with its PCE cache files in `pce_cache_dir`.
    pub fn new(pce_cache_dir: PathBuf) -> Self {
        PoSt { pce_cache_dir, srs_map_dir: None }
    }

    /// The same kind mapping its parameters from SRS map files in `dir` (`None`: decoded).
    pub fn with_srs_map_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.srs_map_dir = dir;
        self
    }

    /// The kind with the directories of `settings`.
    pub fn with_settings(settings: &Settings) -> Self {
        PoSt::new(settings.pce_cache_dir.clone()).with_srs_map_dir(settings.srs_map_dir.clone())
    }

    /// The engine job of one request.
    pub fn job(self: &Arc<Self>, input: Arc<PostInput>, opts: JobOptions) -> JobSource {
        cuzk_pipeline::kind::job(self.clone(), input, opts)
    }

    /// The request's own checks, which need neither parameters nor PCE (the vanilla proofs
    /// verified against the randomness); run before anything is loaded.
    pub fn check(&self, req: &PostInput) -> Result<()> {
        req.check()
    }

    /// `rp`'s process-wide PCE (the outcome says whether it was loaded or built now).
    pub fn shared_pce(&self, rp: RegisteredPoStProof) -> Result<(Arc<PreCompiledCircuit>, Option<Outcome>)> {
        Ok(resources::shared_pce(self, &rp)?)
    }

    /// Makes sure `rp`'s parameters exist, generating insecure test parameters (from the PCE)
    /// when none do; see [`test_params::ensure_files`].
    pub fn ensure_test_params(&self, rp: RegisteredPoStProof, seed: Option<u64>) -> Result<Ensured> {
        let paths = circuit::param_paths(rp)?;
        test_params::ensure_files(&paths, &format!("{rp:?}"), registry::sector_size_of(rp), || Ok(self.shared_pce(rp)?.0), seed)
    }
}

impl ProofKind for PoSt {
    type Request = PostInput;
    type CircuitKey = RegisteredPoStProof;
    type Error = Error;

    fn name(&self) -> &'static str {
        "post"
    }

    fn circuit_key(&self, req: &PostInput) -> RegisteredPoStProof {
        req.registered_proof
    }

    fn circuit_id(&self, rp: &RegisteredPoStProof) -> CircuitId {
        // A registered proof without an identity (never one filecoin-proofs defines) gets one
        // no cache file carries; extracting its circuit then reports the same error.
        let identity = circuit::identity(*rp).unwrap_or_else(|e| format!("no identity: {e}"));
        CircuitId { name: format!("{rp:?}"), identity }
    }

    fn extract_pce(&self, rp: &RegisteredPoStProof) -> Result<PreCompiledCircuit> {
        circuit::extract(*rp)
    }

    fn params_path(&self, rp: &RegisteredPoStProof) -> Result<PathBuf> {
        let paths = circuit::param_paths(*rp)?;
        if !paths.params.exists() {
            return Err(Error::params(
                &paths.params,
                format!(
                    "missing Groth16 parameters for {rp:?}; run `cuzk params ensure --post {}` for test parameters or fetch the official ones",
                    registry::number(*rp)
                ),
            ));
        }
        cuzk_core::params::check_vk_file(&paths.vk)?;
        Ok(paths.params)
    }

    fn pce_cache_dir(&self) -> &Path {
        &self.pce_cache_dir
    }

    fn srs_map_dir(&self) -> Option<&Path> {
        self.srs_map_dir.as_deref()
    }

    fn partitions(&self, req: &PostInput) -> Result<Vec<Synthesize>> {
        with_shape!(registry::sector_size_of(req.registered_proof), partition_shaped, req)
    }

    fn assemble(&self, _req: &PostInput, proofs: &[Proof<Bls12>]) -> Result<Vec<u8>> {
        if proofs.len() != 1 {
            return Err(Error::Proving(format!("{} partition proofs for one PoSt partition", proofs.len())));
        }
        concatenate(proofs).map_err(|e| Error::Proving(format!("serialising the proof: {e}")))
    }

    fn verify(&self, req: &PostInput, proof: &[u8]) -> Result<()> {
        verify::ensure_valid(req, proof)
    }
}

fn partition_shaped<Tree: 'static + MerkleTreeTrait>(req: &PostInput) -> Result<Vec<Synthesize>> {
    let sectors = circuit::checked_sector_values::<Tree>(req)?;
    Ok(vec![
        Box::new(move |pce: &PreCompiledCircuit| super::witness::native_witness(sectors, pce).map_err(PipelineError::shared)) as Synthesize
    ])
}
