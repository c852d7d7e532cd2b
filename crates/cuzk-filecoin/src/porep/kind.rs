//! [`PorepC2`], PoRep commit phase 2 behind the engine's [`ProofKind`] seam. A request is a
//! C1 with its sector identity ([`PorepInput`], parsed and shape-checked when loaded); the
//! circuit key is its registered proof; the parse stage runs the deep checks of
//! [`super::c1::prepare`] and hands the engine one split witness per partition (natively or
//! through the circuit's gadgets, as configured); the partition proofs are concatenated as
//! `seal_commit_phase2` lays them out (for a non-interactive PoRep, then aggregated with
//! SnarkPack as it does: [`super::ni`]), and `verify_seal` judges them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::Proof;
use blstrs::Bls12;
use cuzk_core::mem::StageTracer;
use cuzk_core::srs::Srs;
use cuzk_pce::cache::Outcome;
use cuzk_pce::witness::split_witness;
use cuzk_pce::PreCompiledCircuit;
use cuzk_pipeline::engine::Synthesize;
use cuzk_pipeline::kind::{concatenate, CircuitId, JobOptions, ProofKind};
use cuzk_pipeline::{resources, JobSource, PipelineError};
use filecoin_proofs::with_shape;
use storage_proofs_core::merkle::MerkleTreeTrait;

use super::c1::{prepare, C1};
use super::pce::{challenge_pieces, WitnessMode};
use super::sector::{self, SectorIdentity};
use super::{ni, params, synthetic, verify, RegisteredSealProof};
use crate::settings::Settings;
use crate::{Error, Result};

/// One PoRep C2 request: a loaded C1 and the sector it belongs to.
#[derive(Debug)]
pub struct PorepInput {
    /// The parsed (and cheaply checked) C1 output.
    pub c1: C1,
    /// The miner and sector the C1 claims to be for.
    pub identity: SectorIdentity,
}

/// The PoRep C2 proof kind, configured from the top (no environment reads below).
#[derive(Clone, Debug)]
pub struct PorepC2 {
    pce_cache_dir: PathBuf,
    srs_map_dir: Option<PathBuf>,
    witness: WitnessMode,
}

impl PorepC2 {
    /// The kind with its PCE cache files in `pce_cache_dir`, witnesses computed as `witness` says.
    pub fn new(pce_cache_dir: PathBuf, witness: WitnessMode) -> Self {
        PorepC2 { pce_cache_dir, srs_map_dir: None, witness }
    }

    /// The kind with the directories of `settings` and the native witness.
    pub fn with_settings(settings: &Settings) -> Self {
        PorepC2::new(settings.pce_cache_dir.clone(), WitnessMode::Native).with_srs_map_dir(settings.srs_map_dir.clone())
    }

    /// The same kind mapping its parameters from SRS map files in `dir` (`None`: decoded).
    pub fn with_srs_map_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.srs_map_dir = dir;
        self
    }

    /// The same kind computing witnesses as `mode` says.
    pub fn with_witness(mut self, mode: WitnessMode) -> Self {
        self.witness = mode;
        self
    }

    /// How this kind computes partition witnesses.
    pub fn witness_mode(&self) -> WitnessMode {
        self.witness
    }

    /// The engine job of one request.
    pub fn job(self: &Arc<Self>, input: Arc<PorepInput>, opts: JobOptions) -> JobSource {
        cuzk_pipeline::kind::job(self.clone(), input, opts)
    }

    /// The request's own checks, which need neither parameters nor PCE: refusal of a synthetic
    /// C1 when `verify` is asked, then the deep checks of [`prepare`] (partition count, path
    /// shapes, replica id). The engine's job runs the same before loading its circuit; a caller
    /// that loads parameters itself runs this first, so a bad input is named before a missing
    /// parameter file is.
    pub fn check(&self, req: &PorepInput, verify: bool) -> Result<()> {
        if verify {
            self.verifiable(req)?;
        }
        ni::check_srs(req.c1.registered_proof)?;
        with_shape!(req.c1.sector_size(), check_shaped, req)
    }

    /// `rp`'s process-wide PCE (the outcome says whether it was loaded or built now; `None`
    /// when it was resident already).
    pub fn shared_pce(&self, rp: RegisteredSealProof) -> Result<(Arc<PreCompiledCircuit>, Option<Outcome>)> {
        Ok(resources::shared_pce(self, &rp)?)
    }

    /// `rp`'s process-wide parameters (traced as `load-params` on `tracer` when loaded now).
    pub fn shared_params(&self, rp: RegisteredSealProof, tracer: &StageTracer) -> Result<Arc<Srs>> {
        Ok(resources::shared_params(self, &rp, tracer)?)
    }

    /// What of `rp`'s circuit is resident in this process: (PCE, parameters).
    pub fn resident(&self, rp: RegisteredSealProof) -> (Option<Arc<PreCompiledCircuit>>, Option<Arc<Srs>>) {
        resources::resident(&self.circuit_id(&rp))
    }

    /// Drops this process's copies of `rp`'s PCE and parameters.
    pub fn evict(&self, rp: RegisteredSealProof) -> (Option<Arc<PreCompiledCircuit>>, Option<Arc<Srs>>) {
        resources::evict(&self.circuit_id(&rp))
    }

    /// Loads `rp`'s parameters and PCE if they are not resident; true if both already were.
    pub fn preload(&self, rp: RegisteredSealProof) -> Result<bool> {
        let (pce, params) = self.resident(rp);
        self.shared_params(rp, &StageTracer::new())?;
        self.shared_pce(rp)?;
        Ok(pce.is_some() && params.is_some())
    }
}

impl ProofKind for PorepC2 {
    type Request = PorepInput;
    type CircuitKey = RegisteredSealProof;
    type Error = Error;

    fn name(&self) -> &'static str {
        "porep-c2"
    }

    fn circuit_key(&self, req: &PorepInput) -> RegisteredSealProof {
        req.c1.registered_proof
    }

    fn circuit_id(&self, rp: &RegisteredSealProof) -> CircuitId {
        let rp = circuit_twin(*rp);
        CircuitId { name: format!("{rp:?}"), identity: super::pce::identity(rp) }
    }

    fn extract_pce(&self, rp: &RegisteredSealProof) -> Result<PreCompiledCircuit> {
        // Recorded from the twin the circuit id names, whichever variant asked first.
        super::pce::extract(circuit_twin(*rp))
    }

    fn params_path(&self, rp: &RegisteredSealProof) -> Result<PathBuf> {
        let paths = params::ensure_present(*rp)?;
        cuzk_core::params::check_vk_file(&paths.vk)?;
        Ok(paths.params)
    }

    fn pce_cache_dir(&self) -> &Path {
        &self.pce_cache_dir
    }

    fn srs_map_dir(&self) -> Option<&Path> {
        self.srs_map_dir.as_deref()
    }

    fn verifiable(&self, req: &PorepInput) -> Result<()> {
        req.c1.ensure_provable()
    }

    fn partitions(&self, req: &PorepInput) -> Result<Vec<Synthesize>> {
        // A non-interactive proof is aggregated once its partitions are proved: a missing or
        // short SnarkPack SRS is named now, before anything is proved.
        ni::check_srs(req.c1.registered_proof)?;
        with_shape!(req.c1.sector_size(), partitions_shaped, req, self.witness)
    }

    fn assemble(&self, req: &PorepInput, proofs: &[Proof<Bls12>]) -> Result<Vec<u8>> {
        let bytes = concatenate(proofs).map_err(|e| Error::Proving(format!("serialising the partition proofs: {e}")))?;
        if ni::is_non_interactive(req.c1.registered_proof) {
            // What seal_commit_phase2 returns for a non-interactive PoRep: the SnarkPack
            // aggregate of the partition proofs.
            return ni::aggregate(&req.c1, &bytes);
        }
        Ok(bytes)
    }

    fn verify(&self, req: &PorepInput, proof: &[u8]) -> Result<()> {
        verify::ensure_valid(&req.c1, &req.identity, proof)
    }
}

fn check_shaped<Tree: 'static + MerkleTreeTrait>(req: &PorepInput) -> Result<()> {
    prepare::<Tree>(&req.c1, &req.identity).map(drop)
}

fn partitions_shaped<Tree: 'static + MerkleTreeTrait>(req: &PorepInput, mode: WitnessMode) -> Result<Vec<Synthesize>> {
    let prepared = prepare::<Tree>(&req.c1, &req.identity)?;
    (0..prepared.vanilla.len())
        .map(|k| {
            // One piece per challenge, their witnesses computed in parallel and joined.
            let pieces = challenge_pieces(&prepared, k, mode)?;
            Ok(Box::new(move |pce: &PreCompiledCircuit| split_witness(pieces, pce).map_err(PipelineError::shared)) as Synthesize)
        })
        .collect()
}

impl C1 {
    /// Refuses a synthetic C1 (random contents: it never verifies) where a verified proof is
    /// asked for; the one place that rule lives.
    pub fn ensure_provable(&self) -> Result<()> {
        if self.synthetic {
            return Err(Error::c1(&self.path, synthetic::NOT_PROVABLE));
        }
        Ok(())
    }
}

/// The registered proof whose circuit `rp` proves: the plain V1_1 proof of its size when
/// filecoin-proofs names the same parameter set for both (synthetic and non-interactive PoRep:
/// where the challenges come from and how many partitions there are differ, not the partition
/// circuit), else `rp` itself. Proofs with one twin share
/// one PCE and one parameter copy in the process.
pub fn circuit_twin(rp: RegisteredSealProof) -> RegisteredSealProof {
    // filecoin-proofs builds the public parameters (and logs them) to name a parameter set:
    // worked out once per registered proof, not on every registry lookup.
    static TWINS: std::sync::Mutex<Vec<(RegisteredSealProof, RegisteredSealProof)>> = std::sync::Mutex::new(Vec::new());
    let mut twins = TWINS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, twin)) = twins.iter().find(|(r, _)| *r == rp) {
        return *twin;
    }
    let plain = sector::registered_proof(sector::sector_size_of(rp)).unwrap_or(rp);
    let twin = match (rp.circuit_identifier(), plain.circuit_identifier()) {
        (Ok(a), Ok(b)) if a == b => plain,
        _ => rp,
    };
    twins.push((rp, twin));
    twin
}

/// The sector size name of `rp` (`32GiB`), for messages.
pub fn size_name(rp: RegisteredSealProof) -> String {
    sector::size_name(sector::sector_size_of(rp))
}
