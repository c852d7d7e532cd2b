//! The seeds' validation benchmark (`cuzk bench pce`): the old path (full synthesis, as
//! bellperson's prover does it) and the new path (witness-only synthesis + PCE mat-vec) over
//! the same circuits, one after the other in one process, with every vector compared bit for
//! bit. With `compare_old` both results are held and mismatches counted per vector; without
//! it the old results are reduced to per-vector SHA-256 digests and dropped (and trimmed)
//! before the new path runs, so the peak RSS reflects one path at a time.

use std::time::Instant;

use blstrs::Scalar;
use cuzk_core::mem::StageTracer;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorIdentity;
use ff::PrimeField;
use sha2::{Digest, Sha256};

use anyhow::Result;
use cuzk_filecoin::porep::pce::{self as porep, WitnessMode};
use cuzk_pce::reference::FullSynthesis;
use cuzk_pce::witness::Mismatches;

/// Results of one `bench pce` run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PceBench {
    pub circuits: usize,
    pub compare_old: bool,
    pub constraints: usize,
    pub nnz: usize,
    pub pce_bytes: usize,
    pub old_seconds: f64,
    pub witness_seconds: f64,
    pub matvec_seconds: f64,
    pub new_seconds: f64,
    /// old / new.
    pub speedup: f64,
    /// How the new path computed its witnesses (`native` | `gadgets`).
    pub witness_mode: String,
    /// CPU time (user + system, all threads) of each path: its core-seconds.
    pub old_cpu_seconds: f64,
    pub witness_cpu_seconds: f64,
    pub matvec_cpu_seconds: f64,
    /// old core-seconds / new core-seconds.
    pub cpu_speedup: f64,
    /// Summed over circuits; with digests only, 1 per differing vector.
    pub mismatches: Mismatches,
    pub threads: usize,
}

fn digest(v: &[Scalar]) -> [u8; 32] {
    let mut h = Sha256::new();
    for x in v {
        h.update(x.to_repr());
    }
    h.finalize().into()
}

type Digests = [[u8; 32]; 5];

fn digests(r: &FullSynthesis) -> Digests {
    [digest(&r.eval.a), digest(&r.eval.b), digest(&r.eval.c), digest(&r.inputs), digest(&r.aux)]
}

/// Runs the benchmark over `circuits` circuits of `c1` (0: one per partition).
pub fn run(c1: &C1, id: &SectorIdentity, circuits: usize, compare_old: bool, mode: WitnessMode, tracer: &StageTracer) -> Result<PceBench> {
    use cuzk_core::mem::cpu_seconds;
    let (pce, _) = tracer.stage("pce-load", || crate::context::kinds().porep.shared_pce(c1.registered_proof))?;
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let old = tracer.stage("old-synthesis", || porep::full_syntheses(c1, id, circuits))?;
    let (old_seconds, old_cpu_seconds) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let n = old.len();
    let (held, old_digests): (Option<Vec<FullSynthesis>>, Vec<Digests>) = if compare_old {
        (Some(old), Vec::new())
    } else {
        let d = old.iter().map(digests).collect();
        tracer.stage("drop-old", || drop(old));
        (None, d)
    };
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let ws = tracer.stage("witness", || porep::witnesses(c1, id, &pce, circuits, mode))?;
    let (witness_seconds, witness_cpu_seconds) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let evals = tracer.stage("mat-vec", || ws.iter().map(|w| pce.evaluate(&w.inputs, &w.aux)).collect::<Result<Vec<_>, _>>())?;
    let (matvec_seconds, matvec_cpu_seconds) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let mut mismatches = Mismatches::default();
    for (k, (w, e)) in ws.iter().zip(&evals).enumerate() {
        let m = match &held {
            Some(old) => cuzk_pce::witness::compare(&pce, w, e, &old[k]),
            None => {
                let d = &old_digests[k];
                let ne = |x: &[Scalar], i: usize| usize::from(digest(x) != d[i]);
                Mismatches { a: ne(&e.a, 0), b: ne(&e.b, 1), c: ne(&e.c, 2), input: ne(&w.inputs, 3), aux: ne(&w.aux, 4), density: 0 }
            }
        };
        mismatches.a += m.a;
        mismatches.b += m.b;
        mismatches.c += m.c;
        mismatches.input += m.input;
        mismatches.aux += m.aux;
        mismatches.density += m.density;
    }
    let new_seconds = witness_seconds + matvec_seconds;
    Ok(PceBench {
        circuits: n,
        compare_old,
        constraints: pce.num_constraints,
        nnz: pce.nnz(),
        pce_bytes: pce.bytes(),
        old_seconds,
        witness_seconds,
        matvec_seconds,
        new_seconds,
        speedup: old_seconds / new_seconds,
        witness_mode: format!("{mode:?}").to_lowercase(),
        old_cpu_seconds,
        witness_cpu_seconds,
        matvec_cpu_seconds,
        cpu_speedup: old_cpu_seconds / (witness_cpu_seconds + matvec_cpu_seconds),
        mismatches,
        threads: rayon::current_num_threads(),
    })
}
