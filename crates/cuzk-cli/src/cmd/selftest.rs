//! `cuzk selftest`: the GPU check. Runs the backend conformance suite (full scale) against a
//! backend, then proves one C1 with the CPU backend and with that backend using the same r and
//! s, requires byte-identical proofs that pass `verify_seal`, and times repeated warm proofs
//! on both (the GPU's device-resident SRS is uploaded by the first). Writes JSON with --json;
//! exits 1 on any failure. It must not know the other commands.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use clap::Args;
use cuzk_core::backend::{conformance, Backend};
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorIdentity;
use cuzk_filecoin::porep::{verify, PorepInput};
use cuzk_pipeline::trace::StageSummary;
use cuzk_pipeline::JobOptions;
use ff::Field;
use rand::SeedableRng;
use serde::Serialize;

use crate::args::{make_backend_with, BackendArg, SectorArgs};
use crate::input::{bundled_c1, load_input, write_json};

#[derive(Args)]
pub struct SelftestArgs {
    /// The backend under test (compared with the CPU backend).
    #[arg(long, value_enum, default_value = "cuda")]
    backend: BackendArg,
    /// C1 file to prove (default: the bundled 2 KiB fixture).
    #[arg(long)]
    c1: Option<PathBuf>,
    #[command(flatten)]
    sector: SectorArgs,
    /// Seed of the conformance inputs and of r and s.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Proofs per backend (the first is cold; the median of the others is reported).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// With `device` (the default, as in the daemon) the CUDA backend's side MSMs run on its
    /// device witness, and the conformance suite requires the witness to be handed over and
    /// read; `host` checks the layout that `engine.side_msms = "host"` selects.
    #[command(flatten)]
    side_msms: crate::args::SideMsmsArg,
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn run(a: SelftestArgs) -> Result<ExitCode> {
    let on_device = a.side_msms.on_device();
    let backend = make_backend_with(a.backend, &cuzk_gpu::GpuOptions { side_msms: a.side_msms.place(), ..Default::default() })?;
    // Only a device backend (which overlaps its H step) keeps a witness to hand over.
    let expect_device_witness = on_device && backend.overlap_h();
    let path = match a.c1 {
        Some(p) => p,
        None => bundled_c1()?,
    };
    let (c1, id) = load_input(&path, &a.sector)?;
    let r = measure(backend, c1, id, a.seed, a.repeats, expect_device_witness)?;
    if let Some(p) = &a.json {
        write_json(p, &r)?;
    }
    println!(
        "{}: proofs equal to the CPU's: {}, verify_seal: {}, warm CPU/backend ratio {:.2}x ({} threads)",
        r.backend, r.proofs_equal, r.verified, r.cpu_over_backend, r.threads
    );
    match check(&r) {
        Ok(()) => {
            println!("selftest PASSED");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: selftest FAILED: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

#[derive(Serialize)]
pub struct CaseRow {
    pub name: String,
    pub seconds: f64,
    pub failure: Option<String>,
}

#[derive(Serialize)]
pub struct ProveRow {
    pub backend: String,
    pub run: usize,
    pub seconds: f64,
    /// The engine's stages of this proof.
    pub stages: Vec<StageSummary>,
    /// Device stages logged during this run (seconds).
    pub device_stages: Vec<(String, f64)>,
}

#[derive(Serialize)]
pub struct Report {
    pub backend: String,
    pub threads: usize,
    pub conformance: Vec<CaseRow>,
    pub partitions: usize,
    pub proofs_equal: bool,
    pub verified: bool,
    pub runs: Vec<ProveRow>,
    /// Median warm CPU proof time over median warm backend proof time.
    pub cpu_over_backend: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

fn measure(
    backend: Arc<dyn Backend>,
    c1: C1,
    id: SectorIdentity,
    seed: u64,
    repeats: usize,
    expect_device_witness: bool,
) -> Result<Report> {
    let mut report = Report {
        backend: backend.name().to_string(),
        threads: rayon::current_num_threads(),
        conformance: Vec::new(),
        partitions: usize::from(c1.porep_config().partitions),
        proofs_equal: false,
        verified: false,
        runs: Vec::new(),
        cpu_over_backend: f64::NAN,
    };
    tracing::info!(backend = backend.name(), "conformance (full scale)");
    for r in conformance::run_with(backend.as_ref(), seed, conformance::Scale::Full, expect_device_witness) {
        println!("  {:<34} {:>8.3} s  {}", r.name, r.seconds, r.failure.as_deref().unwrap_or("ok"));
        report.conformance.push(CaseRow { name: r.name, seconds: r.seconds, failure: r.failure });
    }
    let cpu: Arc<dyn Backend> = Arc::new(cuzk_core::backend::cpu::CpuBackend::new());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let rs: Vec<(Scalar, Scalar)> = (0..report.partitions).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();
    // Verified separately below, so that a wrong proof is reported, not just refused.
    let opts = JobOptions { randomness: Some(rs), verify: false };
    let input = Arc::new(PorepInput { c1, identity: id });
    let mut proofs: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, b) in [("cpu", cpu), ("backend", backend)] {
        let mut times = Vec::new();
        for k in 0..repeats.max(1) {
            let _ = cuzk_gpu::take_stage_log();
            let t = Instant::now();
            let run =
                crate::engine_run::prove_one(b.clone(), input.clone(), opts.clone()).with_context(|| format!("proving on {}", b.name()))?;
            let seconds = t.elapsed().as_secs_f64();
            println!("  prove on {:<40} run {k}: {seconds:>8.3} s", b.name());
            report.runs.push(ProveRow {
                backend: b.name().to_string(),
                run: k,
                seconds,
                stages: run.stages,
                device_stages: cuzk_gpu::take_stage_log(),
            });
            if k > 0 || repeats <= 1 {
                times.push(seconds);
            }
            if k == 0 {
                proofs.push((name.to_string(), run.proof));
            }
        }
        if name == "cpu" {
            report.cpu_over_backend = median(times);
        } else {
            report.cpu_over_backend /= median(times);
        }
    }
    report.proofs_equal = proofs[0].1 == proofs[1].1;
    report.verified = verify::verify_seal(&input.c1, &input.identity, &proofs[1].1)?.is_valid();
    Ok(report)
}

fn check(r: &Report) -> Result<()> {
    let failed: Vec<&CaseRow> = r.conformance.iter().filter(|c| c.failure.is_some()).collect();
    if !failed.is_empty() {
        bail!(
            "{} conformance case(s) failed on {}: {}",
            failed.len(),
            r.backend,
            failed.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    if !r.proofs_equal {
        bail!("the {} proof differs from the CPU proof for the same r and s", r.backend);
    }
    if !r.verified {
        bail!("the {} proof does not pass verify_seal", r.backend);
    }
    Ok(())
}
