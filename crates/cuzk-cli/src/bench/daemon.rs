//! `cuzk bench daemon`: the load test. N concurrent jobs over loopback gRPC (every other one
//! submitted twice with the same request id) against the same N proved in process by the
//! engine, same run; all must complete and verify, none lost or duplicated, the byte budget
//! held. It must not know the daemon's internals beyond its start/stop and client API.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_core::atomic::write_atomically;
use cuzk_core::mem::{self, human_bytes};
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus};
use cuzk_daemon::DaemonConfig;
use cuzk_filecoin::porep::verify;
use serde::Serialize;

use crate::args::{make_devices, BackendArg, SectorArgs};
use crate::cmd::daemon::runtime;
use crate::context::{kinds, settings};
use crate::input::load_input;

#[derive(Args)]
pub struct DaemonBenchArgs {
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
    /// Jobs per phase.
    #[arg(long, default_value_t = 20)]
    jobs: usize,
    /// Client requests in flight at once over gRPC (0 = all jobs at once).
    #[arg(long, default_value_t = 0)]
    concurrency: usize,
    /// Syntheses in flight in the engine.
    #[arg(short = 'j', long = "synthesis-workers", default_value_t = 2)]
    synthesis_workers: usize,
    #[arg(long, default_value_t = 1)]
    provers_per_device: usize,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Byte budget (e.g. 16GiB; default 80 % of MemAvailable).
    #[arg(long)]
    budget: Option<String>,
    /// Skip the in-process phase (daemon only, e.g. a soak).
    #[arg(long)]
    skip_in_process: bool,
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Serialize)]
struct PhaseReport {
    jobs: usize,
    wall_s: f64,
    s_per_proof: f64,
    completed: usize,
    verified: usize,
}

#[derive(Serialize)]
struct DaemonBenchReport {
    machine_threads: usize,
    backend: String,
    jobs: usize,
    concurrency: usize,
    in_process: Option<PhaseReport>,
    daemon: PhaseReport,
    daemon_over_in_process: Option<f64>,
    resubmissions: usize,
    resubmissions_same_job: usize,
    distinct_job_ids: usize,
    budget_bytes: u64,
    budget_high_water_bytes: u64,
    /// RSS after the first fifth of the gRPC jobs completed.
    rss_after_warmup_bytes: u64,
    /// RSS after each completed gRPC job, in completion order.
    rss_series_bytes: Vec<u64>,
    rss_growth_after_warmup: f64,
    peak_rss_bytes: u64,
}

pub fn run(a: DaemonBenchArgs) -> Result<ExitCode> {
    let (c1, id) = load_input(&a.c1, &a.sector)?;
    let bytes = std::fs::read(&a.c1).with_context(|| format!("{}: cannot read", a.c1.display()))?;
    let mut cfg = DaemonConfig { listen: "tcp://127.0.0.1:0".into(), ..Default::default() };
    // Loopback only, inside this process: plain TCP without a token, as Curio's client connects.
    cfg.auth.insecure = true;
    cfg.engine.synthesis_workers = a.synthesis_workers.max(1);
    cfg.engine.provers_per_device = a.provers_per_device.max(1);
    if let Some(b) = &a.budget {
        cfg.engine.budget = b.clone();
    }
    cfg.validate()?;
    let devices = make_devices(a.backend)?;
    let backend = devices.first().map(|d| d.name.clone()).unwrap_or_default();
    let n = a.jobs.max(1);
    let conc = if a.concurrency == 0 { n } else { a.concurrency };
    let input = std::sync::Arc::new(cuzk_filecoin::porep::PorepInput { c1, identity: id });
    // Warm-up: parameters, PCE and one proof, so both phases start warm.
    {
        let engine = cuzk_pipeline::Engine::start(cuzk_daemon::server::engine_config(&cfg, devices.clone()))?;
        let out = engine.submit(kinds().porep.job(input.clone(), Default::default()))?.wait();
        out.result.context("warm-up proof")?;
        engine.shutdown();
    }
    let rss_after_warmup = mem::snapshot().rss_bytes;
    eprintln!("warm ({}); {n} jobs per phase", human_bytes(rss_after_warmup));
    let in_process = if a.skip_in_process {
        None
    } else {
        let engine = cuzk_pipeline::Engine::start(cuzk_daemon::server::engine_config(&cfg, devices.clone()))?;
        let t = Instant::now();
        let tickets: Vec<_> =
            (0..n).map(|_| engine.submit(kinds().porep.job(input.clone(), Default::default()))).collect::<Result<_, _>>()?;
        let outs: Vec<_> = tickets.into_iter().map(|t| t.wait()).collect();
        let wall_s = t.elapsed().as_secs_f64();
        engine.shutdown();
        let completed = outs.iter().filter(|o| o.result.is_ok()).count();
        let verified = outs.iter().filter(|o| o.verified).count();
        eprintln!("in process: {completed}/{n} in {wall_s:.2} s");
        Some(PhaseReport { jobs: n, wall_s, s_per_proof: wall_s / n as f64, completed, verified })
    };
    let rt = runtime()?;
    let (daemon_phase, resub, same, distinct, hw, budget, series) = rt.block_on(async {
        let h = cuzk_daemon::start(&cfg, devices, settings()).await?;
        let addr = h.listen.to_string();
        let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(conc));
        let t = std::sync::Arc::new(Instant::now());
        let mut tasks = Vec::new();
        for k in 0..n {
            let t = t.clone();
            let (addr, sem, bytes) = (addr.clone(), sem.clone(), bytes.clone());
            tasks.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await?;
                let mut c = cuzk_daemon::client::connect(&addr).await?;
                let req = proto::SubmitProofRequest {
                    request_id: format!("load-{k}"),
                    proof_kind: proto::ProofKind::PorepSealCommit as i32,
                    vanilla_proof: bytes,
                    miner_id: id.miner_id,
                    sector_number: id.sector_number,
                    ..Default::default()
                };
                let first = c.submit_proof(req.clone()).await?.into_inner();
                // Every other job is submitted twice, as a client retrying after a lost reply.
                let again = if k % 2 == 0 { Some(c.submit_proof(req).await?.into_inner().job_id) } else { None };
                let r = c.await_proof(proto::AwaitProofRequest { job_id: first.job_id.clone(), timeout_ms: 0 }).await?.into_inner();
                let rss = mem::snapshot().rss_bytes;
                anyhow::Ok((first.job_id, again, r, (t.elapsed().as_secs_f64(), rss)))
            }));
        }
        let mut results = Vec::new();
        for t in tasks {
            results.push(t.await??);
        }
        let wall_s = t.elapsed().as_secs_f64();
        let hw = h.service.jobs().budget().high_water();
        let budget = h.service.jobs().budget().total();
        h.stop().await?;
        let mut ids = std::collections::BTreeSet::new();
        let (mut resub, mut same, mut completed, mut verified) = (0, 0, 0, 0);
        let mut done: Vec<(f64, u64)> = Vec::new();
        for (job, again, r, rss) in &results {
            ids.insert(job.clone());
            if let Some(a) = again {
                resub += 1;
                same += usize::from(a == job);
            }
            if r.status == AwaitStatus::Completed as i32 {
                completed += 1;
                // Checked here too, independently of the daemon's own verification.
                if r.verified && verify::ensure_valid(&input.c1, &input.identity, &r.proof).is_ok() {
                    verified += 1;
                }
            } else {
                eprintln!("job {job}: status {} {}", r.status, r.error_message);
            }
            done.push(*rss);
        }
        done.sort_by(|a, b| a.0.total_cmp(&b.0));
        let series = done.into_iter().map(|(_, r)| r).collect::<Vec<_>>();
        eprintln!("daemon: {completed}/{n} in {wall_s:.2} s");
        anyhow::Ok((
            PhaseReport { jobs: n, wall_s, s_per_proof: wall_s / n as f64, completed, verified },
            resub,
            same,
            ids.len(),
            hw,
            budget,
            series,
        ))
    })?;
    // Growth is judged from the RSS after the first fifth of the gRPC jobs (the daemon's own
    // warm-up: its buffers for several jobs in flight) to the RSS after the last one.
    let base = series.get(n / 5).copied().unwrap_or(rss_after_warmup);
    let last = series.last().copied().unwrap_or(base);
    let growth = (last as f64 - base as f64) / base.max(1) as f64;
    let report = DaemonBenchReport {
        machine_threads: rayon::current_num_threads(),
        backend,
        jobs: n,
        concurrency: conc,
        daemon_over_in_process: in_process.as_ref().map(|p| daemon_phase.wall_s / p.wall_s),
        in_process,
        daemon: daemon_phase,
        resubmissions: resub,
        resubmissions_same_job: same,
        distinct_job_ids: distinct,
        budget_bytes: budget,
        budget_high_water_bytes: hw,
        rss_after_warmup_bytes: base,
        rss_series_bytes: series,
        rss_growth_after_warmup: growth,
        peak_rss_bytes: mem::snapshot().peak_bytes,
    };
    println!(
        "bench daemon: {n} jobs of {} on {} ({} threads), {conc} client requests in flight",
        a.c1.display(),
        report.backend,
        report.machine_threads
    );
    if let Some(p) = &report.in_process {
        println!(
            "  in process (engine)   {:>8.2} s  {:>7.3} s/proof  {}/{} completed, {} verified",
            p.wall_s, p.s_per_proof, p.completed, p.jobs, p.verified
        );
    }
    let d = &report.daemon;
    println!(
        "  daemon (gRPC loopback){:>8.2} s  {:>7.3} s/proof  {}/{} completed, {} verified",
        d.wall_s, d.s_per_proof, d.completed, d.jobs, d.verified
    );
    if let Some(r) = report.daemon_over_in_process {
        println!("  daemon / in process   {r:>8.3}x");
    }
    println!(
        "  resubmissions: {} of {} got the same job back; distinct job ids {} for {n} jobs",
        report.resubmissions_same_job, report.resubmissions, report.distinct_job_ids
    );
    println!(
        "  budget high water {} of {}; RSS after warm-up {}, after the last job {} ({:+.2} %), peak {}",
        human_bytes(hw),
        human_bytes(budget),
        human_bytes(base),
        human_bytes(last),
        growth * 100.0,
        human_bytes(report.peak_rss_bytes)
    );
    if let Some(p) = &a.json {
        write_atomically(p, |w| serde_json::to_writer_pretty(w, &report).map_err(std::io::Error::other))?;
    }
    let ok = d.completed == n
        && d.verified == n
        && report.distinct_job_ids == n
        && report.resubmissions_same_job == report.resubmissions
        && hw <= budget
        && report.in_process.as_ref().is_none_or(|p| p.completed == n);
    if !ok {
        eprintln!("error: the load test failed (lost, unverified or duplicated jobs, or the budget was exceeded)");
        return Ok(ExitCode::from(1));
    }
    println!("load test: PASS (all completed and verified, none lost or duplicated, budget held)");
    if !a.skip_in_process {
        return Ok(ExitCode::SUCCESS);
    }
    if growth > 0.02 {
        eprintln!("error: RSS grew {:.2} % after warm-up (limit 2 %)", growth * 100.0);
        bail!("soak: RSS growth over 2 %");
    }
    Ok(ExitCode::SUCCESS)
}
