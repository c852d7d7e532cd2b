//! `cuzk bench partition`: one partition of a C1 or of a PoSt request proved at full size on
//! one backend, for the sizes whose real parameters cannot be made here (32 GiB). The parameters are random points
//! of exactly the layout the circuit needs ([`cuzk_core::random_srs`]), or a `.params` file;
//! they can be written out so another prover (SupraSeal) runs on the very same SRS. The
//! witness and the CPU mat-vec are computed once; the backend's own mat-vec is checked equal
//! to the CPU's, value for value; then the partition is proved `reps` times with a, b, c
//! handed over from the host and `reps` times with the backend evaluating the matrices itself,
//! all with one (r, s), and every proof must be the same bytes; each of those under every
//! H-step schedule asked for (the H step beside the other MSMs, or before them). Proofs under random
//! parameters do not verify, and a synthetic C1's circuit is not satisfied: this measures
//! work, and checks agreement between paths, not validity.

use std::path::PathBuf;
use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use cuzk_core::backend::schedule::Scheduled;
use cuzk_core::backend::Backend;
use cuzk_core::groth16::{self, Evals, MsmMode, ProveTimings, Witness};
use cuzk_core::mem::{self, cpu_seconds};
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorIdentity;
use cuzk_filecoin::post::{self, PostInput};
use cuzk_filecoin::update::{self, UpdateInput};
use cuzk_pce::witness::WitnessCs;
use cuzk_pce::PreCompiledCircuit;
use ff::Field;
use rand::SeedableRng;
use serde::Serialize;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use cuzk_filecoin::porep::pce as porep;
use cuzk_pce::prove::{densities, MatVecPlace};

/// The partition measured: partition `partition` of a C1 or of a SnapDeals request, or a
/// PoSt request's one partition.
pub enum Subject<'a> {
    PoRep { c1: &'a C1, id: &'a SectorIdentity, partition: usize },
    Post(&'a PostInput),
    Update { input: &'a UpdateInput, partition: usize },
}

impl Subject<'_> {
    /// The input's name, whether it is synthetic (its circuit unsatisfied), the partition.
    fn describe(&self) -> (String, bool, usize) {
        match self {
            Subject::PoRep { c1, partition, .. } => (c1.path.display().to_string(), c1.synthetic, *partition),
            Subject::Post(p) => (p.source.clone(), false, p.partition_index),
            Subject::Update { input, partition } => (input.source.clone(), input.synthetic, *partition),
        }
    }

    fn pce(&self) -> Result<Arc<PreCompiledCircuit>> {
        let k = crate::context::kinds();
        Ok(match self {
            Subject::PoRep { c1, .. } => k.porep.shared_pce(c1.registered_proof)?.0,
            Subject::Post(p) => k.post.shared_pce(p.registered_proof)?.0,
            Subject::Update { input, .. } => k.update.shared_pce(input.registered_proof)?.0,
        })
    }

    fn witness(&self, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
        Ok(match self {
            Subject::PoRep { c1, id, partition } => {
                porep::partition_witness(c1, id, pce, *partition, crate::context::kinds().porep.witness_mode())?
            }
            Subject::Post(p) => post::circuit::partition_witness(p, pce)?,
            Subject::Update { input, partition } => update::circuit::partition_witness(input, pce, *partition)?,
        })
    }

    /// The official parameter file's path (its name is what `--write-params DIR` uses).
    fn official_params(&self) -> Result<PathBuf> {
        Ok(match self {
            Subject::PoRep { c1, .. } => cuzk_filecoin::porep::params::ParamPaths::for_proof(c1.registered_proof)?.params,
            Subject::Post(p) => post::circuit::param_paths(p.registered_proof)?.params,
            Subject::Update { input, .. } => update::circuit::param_paths(input.registered_proof)?.params,
        })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Proofs per mat-vec place (the first of each is cold).
    pub reps: usize,
    /// Where the mat-vec runs, in the order measured.
    pub places: Vec<MatVecPlace>,
    /// H-step schedules to measure (true: beside the other MSMs; see
    /// [`Backend::overlap_h`]); empty: the backend's own choice only.
    pub overlap: Vec<bool>,
    /// Random parameters from this seed, unless `params` names a file to load.
    pub srs_seed: u64,
    pub params: Option<PathBuf>,
    /// Write the parameters used here (and their `.vk` beside), atomically: to this file, or
    /// under the official file names when it is a directory (so a later run can load them as
    /// a parameter directory).
    pub write_params: Option<PathBuf>,
    /// Seed of the one (r, s) every proof uses.
    pub rs_seed: u64,
    /// MSM modes to measure, in order; empty: [`MsmMode::Split`] only.
    pub msm: Vec<MsmMode>,
    /// The backend was told to run the side MSMs on its device witness (`--side-msms
    /// device`), for the report.
    pub side_msms_on_device: bool,
}

/// One proof.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub msm: MsmMode,
    pub matvec: MatVecPlace,
    /// The H step ran beside the other MSMs.
    pub overlap: bool,
    pub rep: usize,
    /// The proving call: a, b, c given (host) or made by the backend (backend), to the proof.
    pub seconds: f64,
    pub timings: ProveTimings,
    /// The backend's own stage log for this proof (device times), when it keeps one.
    pub stages: Vec<(String, f64)>,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionBench {
    /// The C1 or PoSt request file.
    pub input: String,
    pub synthetic: bool,
    pub partition: usize,
    pub backend: String,
    pub threads: usize,
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    pub nnz: usize,
    pub domain_log2: u32,
    pub pce_bytes: usize,
    pub pce_seconds: f64,
    pub witness_seconds: f64,
    pub witness_cpu_seconds: f64,
    pub cpu_matvec_seconds: f64,
    pub cpu_matvec_cpu_seconds: f64,
    /// Random parameters generated ("random, seed N") or loaded (the path).
    pub srs_source: String,
    pub srs_seconds: f64,
    /// Bytes of the parameters as a `.params` file.
    pub srs_file_bytes: usize,
    pub params_write_seconds: Option<f64>,
    /// The backend's mat-vec (downloaded) against the CPU's.
    pub backend_matvec_seconds: f64,
    pub backend_matvec_equal: bool,
    pub runs: Vec<Run>,
    /// The side MSMs ran on the device witness ([`Options::side_msms_on_device`]).
    pub side_msms_on_device: bool,
    /// The backend's own H-step schedule ([`Backend::overlap_h`]).
    pub backend_overlaps: bool,
    /// The schedule of the two medians below: the backend's own when it was measured, else
    /// the first measured.
    pub median_overlap: bool,
    /// Median of the warm proofs (all but the first of each kind) per mat-vec place, under
    /// `median_overlap`.
    pub median_host_matvec_seconds: Option<f64>,
    pub median_backend_matvec_seconds: Option<f64>,
    /// The same medians for every (place, schedule) measured.
    pub medians: Vec<Median>,
    pub proofs_equal: bool,
    pub proof_hex: String,
    pub rss_after_srs_bytes: u64,
    pub peak_rss_bytes: u64,
    /// What the backend keeps on the device after the last proof (this circuit's SRS
    /// sections and matrices; zeros on the CPU): one kind's share of device memory.
    pub resident_after: cuzk_core::backend::ResidentReport,
}

/// The warm median of one (mat-vec place, schedule).
#[derive(Clone, Debug, Serialize)]
pub struct Median {
    pub msm: MsmMode,
    pub matvec: MatVecPlace,
    pub overlap: bool,
    pub seconds: Option<f64>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied()
}

/// Every (schedule, MSM mode, mat-vec place) to measure, in the order measured.
fn combinations(schedules: &[bool], modes: &[MsmMode], places: &[MatVecPlace]) -> Vec<(bool, MsmMode, MatVecPlace)> {
    let mut v = Vec::new();
    for &o in schedules {
        for &m in modes {
            for &p in places {
                v.push((o, m, p));
            }
        }
    }
    v
}

/// Runs the benchmark; `stage_log` takes the backend's stage log (empty for the CPU).
pub fn run(
    subject: &Subject<'_>,
    backend: &dyn Backend,
    o: &Options,
    stage_log: &dyn Fn() -> Vec<(String, f64)>,
) -> Result<PartitionBench> {
    let t = Instant::now();
    let (input, synthetic, partition) = subject.describe();
    let pce = subject.pce()?;
    let pce_seconds = t.elapsed().as_secs_f64();
    tracing::info!(pce_seconds, constraints = pce.num_constraints, "PCE ready");

    let (t, cpu) = (Instant::now(), cpu_seconds());
    let w = subject.witness(&pce)?;
    let (witness_seconds, witness_cpu_seconds) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let host = pce.evaluate(&w.inputs, &w.aux)?;
    let (cpu_matvec_seconds, cpu_matvec_cpu_seconds) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    tracing::info!(witness_seconds, cpu_matvec_seconds, "witness and CPU mat-vec done");

    let d = densities(&pce);
    let domain = cuzk_core::backend::domain_size(pce.num_constraints).map_err(|e| anyhow!("{e}"))?;
    let layout = groth16::layout(pce.num_inputs, pce.num_aux, domain, &d);
    let t = Instant::now();
    let (params, srs_source): (Parameters<Bls12>, String) = match &o.params {
        Some(p) => (cuzk_core::params::load_params(p)?.0, p.display().to_string()),
        None => (cuzk_core::random_srs::random_params(&layout, o.srs_seed), format!("random, seed {}", o.srs_seed)),
    };
    let srs_seconds = t.elapsed().as_secs_f64();
    groth16::check_layout((&params).into(), pce.num_inputs, pce.num_aux, domain, &d)?;
    let rss_after_srs_bytes = mem::snapshot().rss_bytes;
    tracing::info!(srs_seconds, file_bytes = layout.file_bytes, "parameters ready ({srs_source})");
    let target = match &o.write_params {
        Some(dir) if dir.is_dir() => {
            let official = subject.official_params()?;
            Some(dir.join(official.file_name().unwrap_or_default()))
        }
        other => other.clone(),
    };
    let params_write_seconds = match &target {
        Some(p) => {
            let t = Instant::now();
            cuzk_core::params::write_params(p, &params)?;
            cuzk_core::params::write_vk(&p.with_extension("vk"), &params.vk)?;
            let s = t.elapsed().as_secs_f64();
            tracing::info!(seconds = s, path = %p.display(), "parameters written");
            Some(s)
        }
        None => None,
    };

    let t = Instant::now();
    let dev = backend.mat_vec(&pce.matrices(), &w.inputs, &w.aux).map_err(|e| anyhow!("{e}"))?;
    let backend_matvec_seconds = t.elapsed().as_secs_f64();
    let backend_matvec_equal = dev == host;
    drop(dev);
    stage_log();
    tracing::info!(backend_matvec_seconds, backend_matvec_equal, "backend mat-vec checked against the CPU's");

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(o.rs_seed);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let mut runs = Vec::new();
    let mut proofs: Vec<Vec<u8>> = Vec::new();
    let own = backend.overlap_h();
    let schedules = if o.overlap.is_empty() { vec![own] } else { o.overlap.clone() };
    let places: Vec<MatVecPlace> = o.places.iter().map(|p| p.resolve(&[backend.name()])).collect();
    let modes = if o.msm.is_empty() { vec![MsmMode::Split] } else { o.msm.clone() };
    let combos = combinations(&schedules, &modes, &places);
    for &(overlap, msm, place) in &combos {
        let scheduled = Scheduled::new(backend, overlap);
        for rep in 0..o.reps.max(1) {
            let evals = match place {
                MatVecPlace::Backend => Evals::Matrices(pce.matrices()),
                _ => Evals::Host { a: host.a.clone(), b: host.b.clone(), c: host.c.clone() },
            };
            let wit = Witness { inputs: &w.inputs, aux: &w.aux, evals };
            let t = Instant::now();
            let (proof, timings) = groth16::prove(&scheduled, (&params).into(), &d, wit, r, s, msm)?;
            let seconds = t.elapsed().as_secs_f64();
            let mut bytes = Vec::new();
            proof.write(&mut bytes).map_err(|e| anyhow!("serialising the proof: {e}"))?;
            proofs.push(bytes);
            tracing::info!(?msm, ?place, overlap, rep, seconds, "partition proved");
            runs.push(Run { msm, matvec: place, overlap, rep, seconds, timings, stages: stage_log() });
            mem::malloc_trim();
        }
    }
    let warm = |m: MsmMode, p: MatVecPlace, o: bool| {
        median(runs.iter().filter(|x| x.msm == m && x.matvec == p && x.overlap == o && x.rep > 0).map(|x| x.seconds).collect())
    };
    let main = if schedules.contains(&own) { own } else { schedules[0] };
    let medians =
        combos.iter().map(|&(overlap, msm, matvec)| Median { msm, matvec, overlap, seconds: warm(msm, matvec, overlap) }).collect();
    Ok(PartitionBench {
        input,
        synthetic,
        partition,
        backend: backend.name().to_string(),
        threads: rayon::current_num_threads(),
        constraints: pce.num_constraints,
        inputs: pce.num_inputs,
        aux: pce.num_aux,
        nnz: pce.nnz(),
        domain_log2: domain.trailing_zeros(),
        pce_bytes: pce.bytes(),
        pce_seconds,
        witness_seconds,
        witness_cpu_seconds,
        cpu_matvec_seconds,
        cpu_matvec_cpu_seconds,
        srs_source,
        srs_seconds,
        srs_file_bytes: layout.file_bytes,
        params_write_seconds,
        backend_matvec_seconds,
        backend_matvec_equal,
        backend_overlaps: own,
        median_overlap: main,
        median_host_matvec_seconds: warm(modes[0], MatVecPlace::Host, main),
        median_backend_matvec_seconds: warm(modes[0], MatVecPlace::Backend, main),
        medians,
        proofs_equal: !proofs.is_empty() && proofs.iter().all(|p| *p == proofs[0]),
        proof_hex: proofs.first().map(hex::encode).unwrap_or_default(),
        runs,
        side_msms_on_device: o.side_msms_on_device,
        rss_after_srs_bytes,
        peak_rss_bytes: mem::snapshot().peak_bytes,
        resident_after: backend.resident_report(),
    })
}
