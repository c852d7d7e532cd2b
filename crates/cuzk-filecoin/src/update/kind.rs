//! [`SnapDeals`], the update proof behind the engine's [`ProofKind`] seam. A request is an
//! [`UpdateInput`]; the circuit key is its registered update proof; the parse stage verifies
//! the partition proofs and hands the engine one witness closure per partition (the circuit's
//! own gadgets through a witness-only constraint system, checked against the PCE's counts);
//! the proof is the partitions' 192-byte proofs in order, judged by
//! `verify_empty_sector_update_proof`. Test parameters come from the same generator as
//! PoRep's, under the update circuit's own file names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::Proof;
use blstrs::Bls12;
use cuzk_pce::cache::Outcome;
use cuzk_pce::PreCompiledCircuit;
use cuzk_pipeline::engine::Synthesize;
use cuzk_pipeline::kind::{concatenate, CircuitId, JobOptions, ProofKind};
use cuzk_pipeline::{resources, JobSource, PipelineError};
use filecoin_proofs::{with_shape, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::merkle::MerkleTreeTrait;

use super::{circuit, registry, verify, UpdateInput};
use crate::porep::test_params::{self, Ensured};
use crate::settings::Settings;
use crate::{Error, Result};

/// The SnapDeals proof kind, configured from the top.
#[derive(Clone, Debug)]
pub struct SnapDeals {
    pce_cache_dir: PathBuf,
    srs_map_dir: Option<PathBuf>,
}

impl SnapDeals {
    /// The kind with its PCE cache files in `pce_cache_dir`.
    pub fn new(pce_cache_dir: PathBuf) -> Self {
        SnapDeals { pce_cache_dir, srs_map_dir: None }
    }

    /// The same kind mapping its parameters from SRS map files in `dir` (`None`: decoded).
    pub fn with_srs_map_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.srs_map_dir = dir;
        self
    }

    /// The kind with the directories of `settings`.
    pub fn with_settings(settings: &Settings) -> Self {
        SnapDeals::new(settings.pce_cache_dir.clone()).with_srs_map_dir(settings.srs_map_dir.clone())
    }

    /// The engine job of one request.
    pub fn job(self: &Arc<Self>, input: Arc<UpdateInput>, opts: JobOptions) -> JobSource {
        cuzk_pipeline::kind::job(self.clone(), input, opts)
    }

    /// The request's own checks, which need neither parameters nor PCE: refusal of a
    /// synthetic request when `verify` is asked, then the partition proofs verified against
    /// the commitments; run before anything is loaded.
    pub fn check(&self, req: &UpdateInput, verify: bool) -> Result<()> {
        req.refuse_synthetic(verify)?;
        req.check()
    }

    /// `rp`'s process-wide PCE (the outcome says whether it was loaded or built now).
    pub fn shared_pce(&self, rp: RegisteredUpdateProof) -> Result<(Arc<PreCompiledCircuit>, Option<Outcome>)> {
        Ok(resources::shared_pce(self, &rp)?)
    }

    /// Makes sure `rp`'s parameters exist, generating insecure test parameters (from the PCE)
    /// when none do; see [`test_params::ensure_files`].
    pub fn ensure_test_params(&self, rp: RegisteredUpdateProof, seed: Option<u64>) -> Result<Ensured> {
        let paths = circuit::param_paths(rp)?;
        test_params::ensure_files(&paths, &format!("update {rp:?}"), registry::sector_size_of(rp), || Ok(self.shared_pce(rp)?.0), seed)
    }
}

impl ProofKind for SnapDeals {
    type Request = UpdateInput;
    type CircuitKey = RegisteredUpdateProof;
    type Error = Error;

    fn name(&self) -> &'static str {
        "snap"
    }

    fn circuit_key(&self, req: &UpdateInput) -> RegisteredUpdateProof {
        req.registered_proof
    }

    fn circuit_id(&self, rp: &RegisteredUpdateProof) -> CircuitId {
        // The seal proofs have variants of the same names (StackedDrg2KiBV1): prefix ours.
        CircuitId { name: format!("update-{rp:?}"), identity: circuit::identity(*rp) }
    }

    fn extract_pce(&self, rp: &RegisteredUpdateProof) -> Result<PreCompiledCircuit> {
        circuit::extract(*rp)
    }

    fn params_path(&self, rp: &RegisteredUpdateProof) -> Result<PathBuf> {
        let paths = circuit::param_paths(*rp)?;
        if !paths.params.exists() {
            return Err(Error::params(
                &paths.params,
                format!(
                    "missing Groth16 parameters for the {rp:?} update; run `cuzk params ensure --update {}` for test parameters or fetch the official ones",
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

    fn partitions(&self, req: &UpdateInput) -> Result<Vec<Synthesize>> {
        with_shape!(registry::sector_size_of(req.registered_proof), partitions_shaped, req)
    }

    fn assemble(&self, _req: &UpdateInput, proofs: &[Proof<Bls12>]) -> Result<Vec<u8>> {
        concatenate(proofs).map_err(|e| Error::Proving(format!("serialising the proof: {e}")))
    }

    fn verify(&self, req: &UpdateInput, proof: &[u8]) -> Result<()> {
        req.refuse_synthetic(true)?;
        verify::ensure_valid(req, proof)
    }
}

fn partitions_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(req: &UpdateInput) -> Result<Vec<Synthesize>> {
    let circuits = circuit::checked_circuits::<Tree>(req)?;
    Ok(circuits
        .into_iter()
        .map(|c| {
            Box::new(move |pce: &PreCompiledCircuit| super::witness::native_witness(c, pce).map_err(PipelineError::shared)) as Synthesize
        })
        .collect())
}
