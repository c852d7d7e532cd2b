//! `cuzk bench prove` and `cuzk bench msm-split`: the old path (bellperson synthesis and
//! prover) and the new path (witness + PCE mat-vec + cuzk's prover on a backend) end to end
//! over the same C1, one after the other in one process with the same shared parameters, both
//! proofs checked with `verify_seal`; and the 0/1 split against the plain MSM on the real
//! witness's A, L and B scalars, each pair of results compared.

use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use cuzk_core::backend::{Backend, MsmPoint, ScalarSplit};
use cuzk_core::groth16::{popcount, select};
use cuzk_core::mem::{self, StageTracer};
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorIdentity;
use cuzk_filecoin::porep::{circuits, pce as porep, reference_prover, verify, PorepInput};
use cuzk_pipeline::trace::StageSummary;
use cuzk_pipeline::JobOptions;
use serde::Serialize;

use anyhow::{anyhow, Result};

/// The old path's figures.
#[derive(Clone, Debug, Serialize)]
pub struct OldPath {
    /// Circuit building, bellperson synthesis and prover.
    pub prove_s: f64,
    pub verify_s: f64,
}

/// The new path's figures (one proof through the pipeline engine).
#[derive(Clone, Debug, Serialize)]
pub struct NewPath {
    /// The engine's stages of the proof (parse and checks, witness, mat-vec, prove,
    /// finalize = assembly and `verify_seal`).
    pub stages: Vec<StageSummary>,
    /// Everything from C1 to proof bytes (the engine's wall time less finalize).
    pub prove_s: f64,
    pub verify_s: f64,
}

/// One `bench prove` run.
#[derive(Clone, Debug, Serialize)]
pub struct ProveBench {
    pub backend: String,
    pub threads: usize,
    pub partitions: usize,
    pub constraints: usize,
    /// Loading the shared parameters (once, used by both paths).
    pub params_load_s: f64,
    /// Loading (or extracting) the shared PCE (once per process).
    pub pce_load_s: f64,
    pub old: Option<OldPath>,
    pub new: NewPath,
    /// (old prove + verify) / (new prove + verify), parameters and PCE resident.
    pub ratio: Option<f64>,
    pub peak_rss_bytes: u64,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Runs the old path (unless `skip_old`) and then the new path over `c1`.
pub fn run_prove(
    backend: std::sync::Arc<dyn Backend>,
    params: &Parameters<Bls12>,
    params_load_s: f64,
    c1: &C1,
    id: &SectorIdentity,
    skip_old: bool,
    tracer: &StageTracer,
) -> Result<ProveBench> {
    let old = if skip_old {
        None
    } else {
        let t = Instant::now();
        let proof = reference_prover::prove(c1, id, params, tracer)?;
        let prove_s = secs(t);
        let t = Instant::now();
        tracer.stage("old: verify", || verify::ensure_valid(c1, id, &proof))?;
        mem::malloc_trim();
        Some(OldPath { prove_s, verify_s: secs(t) })
    };
    let t = Instant::now();
    let (pce, _) = tracer.stage("pce-load", || crate::context::kinds().porep.shared_pce(c1.registered_proof))?;
    let pce_load_s = secs(t);
    let t = Instant::now();
    let input = std::sync::Arc::new(PorepInput { c1: c1.clone(), identity: *id });
    let run = tracer.stage("new: prove + verify", || crate::engine_run::prove_one(backend.clone(), input, JobOptions::default()))?;
    let wall = secs(t);
    if !run.verified {
        return Err(anyhow!("the engine returned an unverified proof"));
    }
    let verify_s = run.stages.iter().filter(|s| s.stage == "finalize").map(|s| s.total_s).sum::<f64>();
    let proof = run.proof;
    let new = NewPath { stages: run.stages, prove_s: wall - verify_s, verify_s };
    let ratio = old.as_ref().map(|o| (o.prove_s + o.verify_s) / (new.prove_s + new.verify_s));
    Ok(ProveBench {
        backend: backend.name().to_string(),
        threads: rayon::current_num_threads(),
        partitions: proof.len() / circuits::PARTITION_PROOF_BYTES,
        constraints: pce.num_constraints,
        params_load_s,
        pce_load_s,
        old,
        new,
        ratio,
        peak_rss_bytes: mem::snapshot().peak_bytes,
    })
}

/// One MSM measured both ways.
#[derive(Clone, Debug, Serialize)]
pub struct SplitRow {
    pub msm: String,
    pub scalars: usize,
    pub zeros: usize,
    pub ones: usize,
    pub general: usize,
    pub plain_s: f64,
    pub split_s: f64,
    /// plain / split.
    pub speedup: f64,
}

fn measure<P: MsmPoint>(backend: &dyn Backend, name: &str, bases: &[P], scalars: &[Scalar]) -> Result<SplitRow> {
    let m = P::msm_of(backend);
    let err = |e: cuzk_core::backend::BackendError| anyhow!("{name}: {e}");
    let t = Instant::now();
    let plain = m.msm(bases, scalars).map_err(err)?;
    let plain_s = secs(t);
    let t = Instant::now();
    let split = m.msm_split(bases, scalars).map_err(err)?;
    let split_s = secs(t);
    if plain != split {
        return Err(anyhow!("{name}: split MSM differs from the plain MSM"));
    }
    let c = ScalarSplit::of(scalars);
    tracing::info!(msm = name, plain_s, split_s, "measured");
    Ok(SplitRow {
        msm: name.to_string(),
        scalars: scalars.len(),
        zeros: c.zeros,
        ones: c.ones.len(),
        general: c.general.len(),
        plain_s,
        split_s,
        speedup: plain_s / split_s,
    })
}

/// Plain vs split MSM over the aux scalars of the first partition of `c1` (L, A's dense aux,
/// B's dense aux in G1 and in G2), each result compared.
pub fn run_msm_split(backend: &dyn Backend, params: &Parameters<Bls12>, c1: &C1, id: &SectorIdentity) -> Result<Vec<SplitRow>> {
    let (pce, _) = crate::context::kinds().porep.shared_pce(c1.registered_proof)?;
    let ws = porep::witnesses(c1, id, &pce, 1, crate::context::kinds().porep.witness_mode())?;
    let w = &ws[0];
    let ni = w.inputs.len();
    let bi = popcount(&pce.b_input_density);
    let a_aux = select(&w.aux, &pce.a_aux_density);
    let b_aux = select(&w.aux, &pce.b_aux_density);
    Ok(vec![
        measure::<G1Affine>(backend, "l (G1, every aux)", &params.l, &w.aux)?,
        measure::<G1Affine>(backend, "a (G1, A-dense aux)", &params.a[ni..], &a_aux)?,
        measure::<G1Affine>(backend, "b_g1 (G1, B-dense aux)", &params.b_g1[bi..], &b_aux)?,
        measure::<G2Affine>(backend, "b_g2 (G2, B-dense aux)", &params.b_g2[bi..], &b_aux)?,
    ])
}
