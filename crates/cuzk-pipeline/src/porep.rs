//! PoRep C2 jobs: a C1 (with its sector identity) becomes one [`Job`] whose partitions
//! synthesize the real `StackedCircuit` witnesses against the process-wide PCE of its proof
//! type, proved with the process-wide parameters, and verified with `verify_seal` unless the
//! caller opts out.

use std::sync::Arc;

use blstrs::Scalar;
use cuzk_core::mem::StageTracer;
use cuzk_core::porep::c1::{prepare, C1};
use cuzk_core::porep::sector::SectorIdentity;
use cuzk_core::porep::{setup, verify};
use filecoin_proofs::with_shape;
use storage_proofs_core::merkle::MerkleTreeTrait;

use crate::engine::{Job, JobSource, PartitionInput};
use crate::PipelineError;

/// How a PoRep job is made.
#[derive(Clone, Debug)]
pub struct PorepOptions {
    /// Fixed (r, s) per partition (reproducible proofs); `None` draws fresh ones.
    pub randomness: Option<Vec<(Scalar, Scalar)>>,
    /// Run `verify_seal` on the proof before returning it.
    pub verify: bool,
}

impl Default for PorepOptions {
    fn default() -> Self {
        PorepOptions { randomness: None, verify: true }
    }
}

/// A job source for one C1 (parsed already; its checks and circuit building run on the
/// engine's parse stage).
pub fn job(c1: Arc<C1>, id: SectorIdentity, opts: PorepOptions) -> JobSource {
    Box::new(move || make(c1, id, opts))
}

fn make(c1: Arc<C1>, id: SectorIdentity, opts: PorepOptions) -> Result<Job, PipelineError> {
    if c1.synthetic && opts.verify {
        return Err(PipelineError::Job(format!("{}: {}", c1.path.display(), cuzk_core::porep::synthetic::NOT_PROVABLE)));
    }
    let rp = c1.registered_proof;
    let (pce, _) = cuzk_pce::porep::shared(rp).map_err(|e| PipelineError::Job(e.to_string()))?;
    let params = setup::shared(rp, &StageTracer::new()).map_err(|e| PipelineError::Job(e.to_string()))?;
    // CUZK_WITNESS=gadgets falls back to the circuit's own gadgets for the witness.
    let mode = cuzk_pce::porep::WitnessMode::from_env().map_err(|e| PipelineError::Job(e.to_string()))?;
    let partitions = with_shape!(c1.sector_size(), partitions_shaped, &c1, &id, mode)?;
    let rs = match opts.randomness {
        Some(v) if v.len() != partitions.len() => {
            return Err(PipelineError::Job(format!("{} (r, s) pairs for {} partitions", v.len(), partitions.len())))
        }
        Some(v) => v,
        None => cuzk_core::groth16::random_rs(partitions.len()),
    };
    let partitions = partitions
        .into_iter()
        .zip(rs)
        .map(|(synthesize, (r, s))| PartitionInput { synthesize, r, s })
        .collect();
    let verify = opts.verify.then(|| {
        Box::new(move |bytes: &[u8]| verify::ensure_valid(&c1, &id, bytes).map_err(|e| e.to_string()))
            as crate::engine::VerifyProof
    });
    Ok(Job { pce, params, partitions, verify })
}

fn partitions_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &C1,
    id: &SectorIdentity,
    mode: cuzk_pce::porep::WitnessMode,
) -> Result<Vec<crate::engine::Synthesize>, PipelineError> {
    let job_err = |e: cuzk_core::Error| PipelineError::Job(e.to_string());
    let prepared = prepare::<Tree>(c1, id).map_err(job_err)?;
    (0..prepared.vanilla.len())
        .map(|k| {
            // One piece per challenge, their witnesses computed in parallel and joined.
            let pieces = cuzk_pce::porep::challenge_pieces(&prepared, k, mode).map_err(|e| PipelineError::Job(e.to_string()))?;
            Ok(Box::new(move |pce: &cuzk_pce::PreCompiledCircuit| {
                cuzk_pce::porep::split_witness(pieces, pce).map_err(|e| e.to_string())
            }) as crate::engine::Synthesize)
        })
        .collect()
}
