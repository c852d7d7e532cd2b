//! `cuzk bench prove` and `cuzk bench msm-split`: the old path (bellperson synthesis and
//! prover) and the new path (witness + PCE mat-vec + cuzk's prover on a backend) end to end
//! over the same C1, one after the other in one process with the same shared parameters, both
//! proofs checked with `verify_seal`; and the 0/1 split against the plain MSM on the real
//! witness's A, L and B scalars, each pair of results compared.

use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use cuzk_core::backend::{Backend, MsmPoint, ScalarSplit};
use cuzk_core::groth16::{popcount, select, ProveTimings};
use cuzk_core::mem::{self, StageTracer};
use cuzk_core::porep::c1::C1;
use cuzk_core::porep::sector::SectorIdentity;
use cuzk_core::porep::{bellperson_engine, verify};
use serde::Serialize;

use crate::prove::{prove_c1, Options};
use crate::{porep, PceError, Result};

/// The old path's figures.
#[derive(Clone, Debug, Serialize)]
pub struct OldPath {
    /// Circuit building, bellperson synthesis and prover.
    pub prove_s: f64,
    pub verify_s: f64,
}

/// The new path's figures.
#[derive(Clone, Debug, Serialize)]
pub struct NewPath {
    pub witness_s: f64,
    pub matvec_s: f64,
    pub prover: ProveTimings,
    /// Everything from C1 to proof bytes (witness, mat-vec, prover, circuit building).
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
    backend: &dyn Backend,
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
        let proof = bellperson_engine::prove(c1, id, params, tracer)?;
        let prove_s = secs(t);
        let t = Instant::now();
        tracer.stage("old: verify", || verify::ensure_valid(c1, id, &proof))?;
        mem::malloc_trim();
        Some(OldPath { prove_s, verify_s: secs(t) })
    };
    let t = Instant::now();
    let (pce, _) = tracer.stage("pce-load", || porep::shared(c1.registered_proof))?;
    let pce_load_s = secs(t);
    let t = Instant::now();
    let (proof, times) = prove_c1(backend, &pce, params, c1, id, &Options::default(), tracer)?;
    let prove_s = secs(t);
    let t = Instant::now();
    tracer.stage("new: verify", || verify::ensure_valid(c1, id, &proof))?;
    let new = NewPath {
        witness_s: times.witness.as_secs_f64(),
        matvec_s: times.matvec.as_secs_f64(),
        prover: times.prover,
        prove_s,
        verify_s: secs(t),
    };
    let ratio = old.as_ref().map(|o| (o.prove_s + o.verify_s) / (new.prove_s + new.verify_s));
    Ok(ProveBench {
        backend: backend.name().to_string(),
        threads: rayon::current_num_threads(),
        partitions: proof.len() / bellperson_engine::PARTITION_PROOF_BYTES,
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
    let err = PceError::backend;
    let t = Instant::now();
    let plain = m.msm(bases, scalars).map_err(err)?;
    let plain_s = secs(t);
    let t = Instant::now();
    let split = m.msm_split(bases, scalars).map_err(err)?;
    let split_s = secs(t);
    if plain != split {
        return Err(PceError::Core(cuzk_core::Error::Proving(format!("{name}: split MSM differs from the plain MSM"))));
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
    let (pce, _) = porep::shared(c1.registered_proof)?;
    let ws = porep::witnesses(c1, id, &pce, 1, porep::WitnessMode::from_env()?)?;
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

impl PceError {
    /// Wraps a backend error as a proving error.
    pub fn backend(e: cuzk_core::backend::BackendError) -> Self {
        PceError::Core(cuzk_core::Error::Proving(e.to_string()))
    }
}
