//! `cuzk bench pce-pipeline`: the seeds' second benchmark. Proves N copies of one C1 through
//! the pipeline engine with J syntheses in flight (optionally after the old path on the same
//! inputs, dropped first), prints the seeds' memory table (after C1 load, after PCE load, peak
//! with J in flight, after drop), checks the memory model out loud (measured peak against
//! static + partitions in flight × the per-partition working set the budget uses) and the
//! leak check (RSS after the last drop against RSS after the warm-up, ≤ 2 %), and reports
//! throughput, steady-state prover busy fraction per device and per-stage times; writes the
//! trace (JSON) and an SVG plot of RSS and stage activity.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_core::atomic::write_atomically;
use cuzk_core::mem::{self, human_bytes, StageTracer};
use cuzk_filecoin::porep::{reference_prover, verify, PorepInput};
use cuzk_pipeline::trace::StageSummary;
use cuzk_pipeline::JobOptions;
use cuzk_pipeline::{Config, Engine, Trace, WorkingSet};
use serde::Serialize;

use crate::args::{make_devices_with, BackendArg, SectorArgs};
use crate::context::kinds;
use crate::input::load_input;

#[derive(Args)]
pub struct PipelineArgs {
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
    /// Proofs to measure (each a full copy of the C1's partitions).
    #[arg(long, default_value_t = 4)]
    num_proofs: usize,
    /// Syntheses in flight (synthesis workers); 1 = sequential mode.
    #[arg(short = 'j', long = "jobs", default_value_t = 1)]
    jobs: usize,
    /// Provers per device.
    #[arg(long, default_value_t = 1)]
    provers_per_device: usize,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Cap on the GPU's resident SRS bytes (e.g. 24GiB), to see what a smaller card costs:
    /// sections over it travel with each call. Default: the whole device.
    #[arg(long, value_parser = crate::args::byte_size)]
    device_budget: Option<u64>,
    /// The Pippenger for G1 MSMs over resident bases: cuzk (cuzk's own driver from 2^21
    /// points) or sppark (sppark's for every size).
    #[arg(long, default_value = "cuzk", value_parser = crate::cmd::bench::msm_kernel)]
    msm_kernel: cuzk_gpu::MsmKernel,
    #[command(flatten)]
    side_msms: crate::args::SideMsmsArg,
    /// Proofs run together (and discarded) before the measured ones, so that one-time
    /// allocations (thread pools, allocator arenas of every stage thread, the device SRS
    /// upload) are not counted as leaks. Default: j + 2, enough to fill every stage once. With
    /// 0 the leak check is reported but not judged.
    #[arg(long)]
    warmup: Option<usize>,
    /// Host byte budget in GiB (default: 80 % of MemAvailable).
    #[arg(long)]
    budget_gib: Option<f64>,
    /// Idle gigabyte buffers kept for later partitions, in GiB (the engine's
    /// `buffer_pool_bytes`, the daemon's `engine.buffer_pool`; taken out of the budget, capped
    /// at half of it). Default 0: every partition's buffers are fresh memory.
    #[arg(long, default_value_t = 0.0)]
    buffer_pool_gib: f64,
    /// Drop the host's matrix entries once every device holds the matrices (the engine's
    /// `release_host_matrices`, the daemon's `engine.release_host_matrices`; with the mat-vec
    /// on the devices only). The report's `pce_bytes_end` is then the released copy's size.
    #[arg(long)]
    release_host_matrices: bool,
    /// First run the old path (bellperson synthesis + prover) on the same inputs, J at a time,
    /// report its time and RSS, and drop it before the PCE run.
    #[arg(long)]
    compare_old: bool,
    /// Print the host memory G GPUs × P pipelines would need, from the measured figures.
    #[arg(long)]
    project_gpus: Option<usize>,
    #[arg(long, default_value_t = 2)]
    pipelines_per_gpu: usize,
    /// Allowed RSS growth from after the warm-up to after the last drop.
    #[arg(long, default_value_t = 0.02)]
    leak_tolerance: f64,
    /// Write the full trace (stage events, RSS samples, marks) as JSON.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Write an SVG of RSS and stage activity over time.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write the report as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Do not verify the proofs (needed for synthetic C1s, whose proofs never verify).
    #[arg(long)]
    no_verify: bool,
    /// Where a, b, c are computed: host (the CPU mat-vec stage) or device (the prover's
    /// backend: only the witness is uploaded, and a partition holds no host a, b, c).
    /// auto: device on GPU backends, host on the CPU.
    #[arg(long, default_value = "auto")]
    matvec: cuzk_pce::prove::MatVecPlace,
}

#[derive(Serialize)]
struct TableRow {
    phase: String,
    t_s: f64,
    rss_bytes: u64,
    /// The RSS's parts at the mark: the process's own memory, mapped files' pages (a mapped
    /// SRS: the page cache's, reclaimable) and shared memory.
    anon_bytes: u64,
    file_bytes: u64,
    shmem_bytes: u64,
}

#[derive(Serialize)]
struct OldReport {
    proofs: usize,
    seconds: f64,
    s_per_proof: f64,
    peak_rss_bytes: u64,
    rss_after_drop_bytes: u64,
}

#[derive(Serialize)]
struct Report {
    c1: String,
    backend: String,
    /// `--side-msms device`: the side MSMs on the device witness.
    side_msms_on_device: bool,
    devices: Vec<String>,
    threads: usize,
    jobs: usize,
    provers_per_device: usize,
    num_proofs: usize,
    warmup: usize,
    partitions_per_proof: usize,
    budget_bytes: u64,
    old: Option<OldReport>,
    table: Vec<TableRow>,
    /// RSS after parameters and PCE are loaded (both shared by every pipeline).
    static_rss_bytes: u64,
    /// What parameters + PCE added to the RSS after the C1 load.
    static_added_bytes: u64,
    /// The process's own memory (RssAnon) after parameters and PCE are loaded: with mapped
    /// parameters their pages count as file-backed instead (`table`'s parts).
    static_anon_bytes: u64,
    pce_bytes: u64,
    /// The registry's PCE at the end of the run: smaller than `pce_bytes` when its matrix
    /// entries were released (`--release-host-matrices`).
    pce_bytes_end: u64,
    working_set: WorkingSet,
    /// Most partitions holding budget at once (budget high water / working set).
    max_in_flight: u64,
    /// Highest sampled RSS during the measured run.
    peak_rss_bytes: u64,
    /// VmHWM of the whole process (includes the old path when it ran).
    vm_hwm_bytes: u64,
    /// Host bytes the devices keep pinned for uploads at the end (staging buffers made by the
    /// first proofs, so not in the static figure; outside the budget).
    pinned_host_bytes: u64,
    /// static + pinned + max_in_flight × working set + the buffer pool's capacity.
    model_peak_bytes: u64,
    /// The process's buffer pool at the end: capacity, idle buffers, and how many large
    /// requests it served from idle buffers (`reused`) or fresh memory (`fresh`).
    buffer_pool: cuzk_core::buffer_pool::PoolStats,
    /// static + J × working set (the seeds' form).
    model_j_bytes: u64,
    memory_model_ok: bool,
    rss_after_warmup_bytes: u64,
    rss_after_drop_bytes: u64,
    leak_growth: f64,
    /// Whether the leak check ran: not with `--warmup 0`, where the growth it would judge is
    /// the one-time allocations the warm-up exists to exclude.
    leak_checked: bool,
    leak_ok: bool,
    seconds: f64,
    s_per_proof: f64,
    /// The gap between the first and the last measured completion per proof. With j > 1 and
    /// few proofs it reads low (consecutive sectors' partitions interleave, so the first
    /// measured sector completes late); it is not a throughput.
    steady_s_per_proof: Option<f64>,
    /// The prove stage's seconds per measured proof spread over the prover lanes: what a
    /// proof costs while the provers are the bottleneck (busy ~100 %), a lower bound otherwise.
    prover_bound_s_per_proof: Option<f64>,
    /// Per device, the fraction of the steady-state window with at least one prover stage
    /// running (host work of the prover included).
    device_busy: Vec<(String, f64)>,
    /// Seconds the device locks were held by calls (MSMs, bitmap sums, the quotient, uploads)
    /// in the measured run over the steady-state window, per GPU: the GPU's own busy
    /// fraction. The lock is exclusive, so this stays within 1 but for calls at the window's
    /// ends (the sum of the stage log did not, 110–157 %: it counts host-side steps too).
    device_held_fraction: Option<f64>,
    device_held_s: f64,
    /// The sum of the GPU stage log's entries (host-side steps included), for comparison with
    /// runs before `device_held_s` existed.
    device_call_s: f64,
    stages: Vec<StageSummary>,
    /// The process's CPU time and minor faults over the measured proofs alone (from the
    /// warm-up's end to the last measured proof): the steady state, without the parameter
    /// load's faults and decoding, which dominate a whole-run `time -v`.
    measured_cpu: MeasuredCpu,
    all_verified: bool,
    projection: Option<(usize, usize, u64)>,
}

/// CPU time and minor faults between two [`mem::usage`] readings, per partition proved.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MeasuredCpu {
    pub user_s: f64,
    pub system_s: f64,
    /// System time over user + system time (0 when both are 0).
    pub system_share: f64,
    pub minor_faults: u64,
    pub partitions: u64,
    pub minor_faults_per_partition: f64,
}

impl MeasuredCpu {
    /// The usage from `before` to `after` over `partitions` partitions.
    pub fn between(before: mem::Usage, after: mem::Usage, partitions: u64) -> Self {
        let user_s = (after.user_s - before.user_s).max(0.0);
        let system_s = (after.system_s - before.system_s).max(0.0);
        let cpu = user_s + system_s;
        let minor_faults = after.minor_faults.saturating_sub(before.minor_faults);
        MeasuredCpu {
            user_s,
            system_s,
            system_share: if cpu > 0.0 { system_s / cpu } else { 0.0 },
            minor_faults,
            partitions,
            minor_faults_per_partition: minor_faults as f64 / partitions.max(1) as f64,
        }
    }
}

/// Slack on the memory model: allocator retention and thread stacks (fraction of the model).
const MODEL_SLACK: f64 = 0.10;

pub fn run(a: PipelineArgs) -> Result<ExitCode> {
    if a.num_proofs == 0 || a.jobs == 0 {
        bail!("--num-proofs and -j must be at least 1");
    }
    let trace = Trace::new();
    trace.start_sampler(std::time::Duration::from_millis(100));
    let mut table = Vec::new();
    let mut mark = |label: &str| {
        let m = trace.mark(label);
        let parts = mem::snapshot();
        println!(
            "  {:<44} {:>8.2} s  RSS {} (anon {}, file {}, shmem {})",
            m.label,
            m.t_s,
            human_bytes(m.rss_bytes),
            human_bytes(parts.anon_bytes),
            human_bytes(parts.file_bytes),
            human_bytes(parts.shmem_bytes)
        );
        table.push(TableRow {
            phase: m.label,
            t_s: m.t_s,
            rss_bytes: m.rss_bytes,
            anon_bytes: parts.anon_bytes,
            file_bytes: parts.file_bytes,
            shmem_bytes: parts.shmem_bytes,
        });
        mem::MemSnapshot { rss_bytes: m.rss_bytes, ..parts }
    };
    let (c1, id) = load_input(&a.c1, &a.sector)?;
    if c1.synthetic {
        if !a.no_verify {
            bail!("{}: a SYNTHETIC C1 never verifies; benchmark it with --no-verify", a.c1.display());
        }
        println!("{}: SYNTHETIC C1 (random contents; proofs are not verified)", a.c1.display());
    }
    let input = Arc::new(PorepInput { c1, identity: id });
    let (c1, id) = (&input.c1, input.identity);
    let rss_c1 = mark("after C1 load").rss_bytes;
    let rp = c1.registered_proof;
    let srs = kinds().porep.shared_params(rp, &StageTracer::new())?;

    let old = if a.compare_old {
        let params = crate::context::decoded(&srs, rp)?;
        let t = Instant::now();
        let start = trace.now();
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| -> Result<()> {
            let workers: Vec<_> = (0..a.jobs.min(a.num_proofs))
                .map(|_| {
                    s.spawn(|| -> Result<()> {
                        while next.fetch_add(1, Ordering::Relaxed) < a.num_proofs {
                            let proof = reference_prover::prove(c1, &id, &params, &StageTracer::new())?;
                            verify::ensure_valid(c1, &id, &proof)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            for w in workers {
                w.join().map_err(|_| anyhow::anyhow!("an old-path worker panicked"))??;
            }
            Ok(())
        })
        .context("old path")?;
        let seconds = t.elapsed().as_secs_f64();
        let peak = trace.peak_rss_between(start, trace.now());
        mark(&format!("old path: {} proofs done (peak {})", a.num_proofs, human_bytes(peak)));
        mem::malloc_trim();
        let after = mark("after old-path drop").rss_bytes;
        Some(OldReport {
            proofs: a.num_proofs,
            seconds,
            s_per_proof: seconds / a.num_proofs as f64,
            peak_rss_bytes: peak,
            rss_after_drop_bytes: after,
        })
    } else {
        None
    };

    let (pce, _) = kinds().porep.shared_pce(rp)?;
    let loaded = mark("after params + PCE load");
    let (static_rss, static_anon) = (loaded.rss_bytes, loaded.anon_bytes);
    let devices = make_devices_with(
        a.backend,
        &cuzk_gpu::GpuOptions {
            resident_budget: a.device_budget,
            msm_kernel: a.msm_kernel,
            side_msms: a.side_msms.place(),
            ..Default::default()
        },
    )?;
    let matvec = a.matvec.resolve(&devices.iter().map(|d| d.backend.name()).collect::<Vec<_>>());
    let ws = WorkingSet::at(&pce, cuzk_pipeline::HostVectors::of(matvec, &devices));
    let pce_bytes = pce.bytes() as u64;
    // Only the engine's jobs hold the PCE from here on, so that a release frees its entries.
    drop(pce);
    let backend_name = devices.first().map(|d| d.backend.name().to_string()).unwrap_or_default();
    let budget = a.budget_gib.map(|g| (g * (1u64 << 30) as f64) as u64).unwrap_or_else(cuzk_pipeline::budget::default_budget);
    let mut cfg = Config::cpu(a.jobs, budget);
    cfg.buffer_pool_bytes = (a.buffer_pool_gib.max(0.0) * (1u64 << 30) as f64) as u64;
    cfg.release_host_matrices = a.release_host_matrices;
    cfg.devices = devices.clone();
    cfg.provers_per_device = a.provers_per_device.max(1);
    cfg.matvec = a.matvec;
    cfg.trace = Some(trace.clone());
    let engine = Engine::start(cfg)?;
    let opts = JobOptions { verify: !a.no_verify, ..JobOptions::default() };
    let job = |opts: JobOptions| kinds().porep.job(input.clone(), opts);
    let warmup = a.warmup.unwrap_or(a.jobs + 2);
    let per_proof = crate::engine_run::partitions_of(&input.c1);
    let partitions = (warmup + a.num_proofs) as u64 * per_proof;
    let watch = crate::engine_run::PartitionWatch::start(trace.clone(), "bench pce-pipeline (warm-up included)", partitions);
    let warm: Vec<_> = (0..warmup).map(|_| engine.submit(job(opts.clone()))).collect::<Result<_, _>>()?;
    for (k, t) in warm.into_iter().enumerate() {
        t.wait().result.with_context(|| format!("warm-up proof {k}"))?;
    }
    mem::malloc_trim();
    let rss_warm = mark(&format!("after {warmup} warm-up proof(s)")).rss_bytes;

    let _ = cuzk_gpu::take_stage_log();
    drop(cuzk_gpu::take_device_waits(cuzk_gpu::WaitedFor::Device));
    let start = trace.now();
    let t = Instant::now();
    let usage_start = mem::usage();
    let tickets: Vec<_> = (0..a.num_proofs).map(|_| engine.submit(job(opts.clone()))).collect::<Result<_, _>>()?;
    let ids: Vec<u64> = tickets.iter().map(|t| t.id).collect();
    let mut finished = Vec::new();
    let mut all_verified = true;
    let mut failed = 0usize;
    for (k, ticket) in tickets.into_iter().enumerate() {
        let out = ticket.wait();
        match &out.result {
            Ok(_) => all_verified &= out.verified,
            Err(e) => {
                all_verified = false;
                failed += 1;
                eprintln!("proof {k} failed: {e}");
            }
        }
        finished.push(out.finished_s);
    }
    let seconds = t.elapsed().as_secs_f64();
    let measured_cpu = MeasuredCpu::between(usage_start, mem::usage(), a.num_proofs as u64 * per_proof);
    let end = trace.now();
    let peak = trace.peak_rss_between(start, end);
    mark(&format!("{} proofs done, j = {} (peak {})", a.num_proofs, a.jobs, human_bytes(peak)));
    let high_water = engine.budget().high_water();
    // Whole device calls (the quotient's per-step entries are inside its total).
    let device_call_s: f64 = cuzk_gpu::take_stage_log().iter().filter(|(name, _)| !name.starts_with("quotient: ")).map(|(_, s)| s).sum();
    let device_held_s: f64 = cuzk_gpu::take_device_waits(cuzk_gpu::WaitedFor::Device).iter().map(|(_, w)| w.held_seconds).sum();
    drop(watch);
    engine.shutdown();
    mem::malloc_trim();
    let rss_drop = mark("after drop (engine shut down, malloc_trim)").rss_bytes;
    trace.stop_sampler();

    let measured = |e: &cuzk_pipeline::trace::Event| ids.contains(&e.proof);
    let busy = trace.device_busy(measured);
    let device_busy: Vec<(String, f64)> = devices.iter().map(|d| (d.name.clone(), busy.get(&d.name).copied().unwrap_or(0.0))).collect();
    let stages = trace.stage_summaries(measured);
    let events: Vec<_> = trace.events().into_iter().filter(measured).collect();
    let prove_iv: Vec<(f64, f64)> = events.iter().filter(|e| e.stage == "prove").map(|e| (e.start_s, e.end_s)).collect();
    let window = prove_iv.iter().map(|x| x.1).fold(f64::MIN, f64::max) - prove_iv.iter().map(|x| x.0).fold(f64::MAX, f64::min);
    let gpu_devices = devices.iter().filter(|d| d.name.starts_with("gpu")).count();
    let device_held_fraction = (gpu_devices > 0 && window > 0.0).then(|| device_held_s / window / gpu_devices as f64);
    finished.sort_by(|a, b| a.total_cmp(b));
    let steady = (finished.len() > 1).then(|| (finished[finished.len() - 1] - finished[0]) / (finished.len() - 1) as f64);
    let max_in_flight = high_water.div_ceil(ws.total().max(1));
    let buffer_pool = cuzk_core::buffer_pool::scalar_pool().stats();
    let pinned_host_bytes: u64 = devices.iter().map(|d| d.backend.resident_report().pinned_host_bytes).sum();
    let model_peak = static_rss + pinned_host_bytes + max_in_flight * ws.total() + buffer_pool.capacity_bytes;
    let model_j = static_rss + a.jobs as u64 * ws.total();
    let memory_model_ok = (peak as f64) <= model_peak as f64 * (1.0 + MODEL_SLACK);
    let leak_growth = (rss_drop as f64 - rss_warm as f64) / rss_warm.max(1) as f64;
    let leak_checked = warmup > 0;
    let leak_ok = !leak_checked || leak_growth <= a.leak_tolerance;
    let projection = a.project_gpus.map(|g| {
        let per = (peak.saturating_sub(static_rss)) / max_in_flight.max(1);
        (g, a.pipelines_per_gpu, static_rss + (g * a.pipelines_per_gpu) as u64 * per)
    });
    let report = Report {
        c1: a.c1.display().to_string(),
        backend: backend_name,
        side_msms_on_device: a.side_msms.on_device(),
        devices: devices.iter().map(|d| d.name.clone()).collect(),
        threads: rayon::current_num_threads(),
        jobs: a.jobs,
        provers_per_device: a.provers_per_device,
        num_proofs: a.num_proofs,
        warmup,
        partitions_per_proof: usize::from(c1.porep_config().partitions),
        budget_bytes: budget,
        old,
        table,
        static_rss_bytes: static_rss,
        static_added_bytes: static_rss.saturating_sub(rss_c1),
        static_anon_bytes: static_anon,
        pce_bytes,
        pce_bytes_end: kinds().porep.shared_pce(rp)?.0.bytes() as u64,
        working_set: ws,
        max_in_flight,
        peak_rss_bytes: peak,
        vm_hwm_bytes: mem::snapshot().peak_bytes,
        pinned_host_bytes,
        model_peak_bytes: model_peak,
        buffer_pool,
        model_j_bytes: model_j,
        memory_model_ok,
        rss_after_warmup_bytes: rss_warm,
        rss_after_drop_bytes: rss_drop,
        leak_growth,
        leak_checked,
        leak_ok,
        seconds,
        s_per_proof: seconds / a.num_proofs as f64,
        steady_s_per_proof: steady,
        prover_bound_s_per_proof: prover_bound_s_per_proof(&stages, a.num_proofs, devices.len() * a.provers_per_device.max(1)),
        device_busy,
        device_held_fraction,
        device_held_s,
        device_call_s,
        stages,
        measured_cpu,
        all_verified,
        projection,
    };
    print_report(&report);
    // Each GPU's device calls as a lane of their own (the device lock's spans: the calls'
    // kernels and copies), beside the prover lanes that wait for them.
    for call in cuzk_gpu::take_device_calls() {
        trace.add_span("device call", &format!("gpu{} calls", call.device), &format!("gpu{}", call.device), call.start, call.end);
    }
    if let Some(p) = &a.trace {
        #[derive(Serialize)]
        struct Dump {
            events: Vec<cuzk_pipeline::trace::Event>,
            samples: Vec<cuzk_pipeline::trace::Sample>,
            marks: Vec<cuzk_pipeline::trace::Mark>,
        }
        let d = Dump { events: trace.events(), samples: trace.samples(), marks: trace.marks() };
        write_atomically(p, |w| serde_json::to_writer(w, &d).map_err(std::io::Error::other))?;
    }
    if let Some(p) = &a.plot {
        let title = format!("cuzk pce-pipeline: {} proofs, j = {}, {} ({})", a.num_proofs, a.jobs, report.backend, a.c1.display());
        let svg = trace.svg(&title);
        write_atomically(p, |w| w.write_all(svg.as_bytes()))?;
    }
    if let Some(p) = &a.json {
        write_atomically(p, |w| serde_json::to_writer_pretty(w, &report).map_err(std::io::Error::other))?;
    }
    let proofs_ok = failed == 0 && (report.all_verified || a.no_verify);
    Ok(if report.memory_model_ok && report.leak_ok && proofs_ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The prove stage's total over `proofs` proofs and `lanes` prover lanes (see
/// [`Report::prover_bound_s_per_proof`]); `None` without proofs, lanes or a prove stage.
fn prover_bound_s_per_proof(stages: &[cuzk_pipeline::trace::StageSummary], proofs: usize, lanes: usize) -> Option<f64> {
    let prove = stages.iter().find(|s| s.stage == "prove")?;
    (proofs > 0 && lanes > 0).then(|| prove.total_s / (proofs * lanes) as f64)
}

fn print_report(r: &Report) {
    if let Some(o) = &r.old {
        println!(
            "old path (bellperson synthesis + prover), {} proofs, {} at a time: {:.2} s ({:.2} s/proof), peak RSS {}, after drop {}",
            o.proofs,
            r.jobs,
            o.seconds,
            o.s_per_proof,
            human_bytes(o.peak_rss_bytes),
            human_bytes(o.rss_after_drop_bytes)
        );
    }
    println!(
        "pipeline: {} proofs × {} partition(s), j = {}, {} prover(s) per device on {:?} ({}), {} threads",
        r.num_proofs, r.partitions_per_proof, r.jobs, r.provers_per_device, r.devices, r.backend, r.threads
    );
    println!(
        "  throughput {:.3} s/proof ({:.2} s for {}){}",
        r.s_per_proof,
        r.seconds,
        r.num_proofs,
        r.steady_s_per_proof
            .map(|s| format!(", completions every {s:.3} s (not a throughput while sectors interleave)"))
            .unwrap_or_default()
    );
    if let Some(s) = r.prover_bound_s_per_proof {
        println!("  prover-bound {s:.3} s/proof (the prove stage's time per proof over its lanes)");
    }
    for (d, f) in &r.device_busy {
        println!("  {d} prover stage busy {:.1} % of its steady-state window", f * 100.0);
    }
    if let Some(f) = r.device_held_fraction {
        println!("  GPU device calls held the device {:.3} s: {:.1} % of the steady-state window (per GPU)", r.device_held_s, f * 100.0);
    }
    for s in &r.stages {
        println!("  stage {:<9} ×{:<3} mean {:>8.3} s  total {:>8.3} s", s.stage, s.count, s.mean_s, s.total_s);
    }
    let c = &r.measured_cpu;
    println!(
        "  measured proofs' CPU: user {:.1} s, system {:.1} s ({:.1} % system), minor faults {:.2} M ({:.3} M per partition, {} partitions)",
        c.user_s,
        c.system_s,
        c.system_share * 100.0,
        c.minor_faults as f64 / 1e6,
        c.minor_faults_per_partition / 1e6,
        c.partitions
    );
    println!("memory model:");
    println!(
        "  static (params + PCE resident)      {} (anonymous {}; PCE {}, {} at the end; they added {} to the RSS after the C1 load)",
        human_bytes(r.static_rss_bytes),
        human_bytes(r.static_anon_bytes),
        human_bytes(r.pce_bytes),
        human_bytes(r.pce_bytes_end),
        human_bytes(r.static_added_bytes)
    );
    println!(
        "  per-partition working set (est.)    {} (witness {}, a/b/c {}, prover {})",
        human_bytes(r.working_set.total()),
        human_bytes(r.working_set.witness),
        human_bytes(r.working_set.abc),
        human_bytes(r.working_set.prover)
    );
    println!("  partitions in flight (budget peak)  {} (budget {})", r.max_in_flight, human_bytes(r.budget_bytes));
    println!("  pinned upload staging (devices)     {} (outside the budget)", human_bytes(r.pinned_host_bytes));
    println!(
        "  model: static + pinned + {} × working set + pool    {}   (seeds' form static + j × ws: {})",
        r.max_in_flight,
        human_bytes(r.model_peak_bytes),
        human_bytes(r.model_j_bytes)
    );
    println!(
        "  measured peak (sampled, 100 ms)     {}   VmHWM {}  → {}",
        human_bytes(r.peak_rss_bytes),
        human_bytes(r.vm_hwm_bytes),
        if r.memory_model_ok {
            format!("PASS (within the model + {:.0} %)", MODEL_SLACK * 100.0)
        } else {
            "FAIL: the peak exceeds the model".into()
        }
    );
    let pool = &r.buffer_pool;
    println!(
        "buffer pool: capacity {}, {} idle ({}); large buffers reused {}, fresh {}",
        human_bytes(pool.capacity_bytes),
        pool.idle_buffers,
        human_bytes(pool.idle_bytes),
        pool.reused,
        pool.fresh
    );
    println!(
        "leak check: RSS after warm-up {}, after the last drop {} → {:+.2} % {}",
        human_bytes(r.rss_after_warmup_bytes),
        human_bytes(r.rss_after_drop_bytes),
        r.leak_growth * 100.0,
        match (r.leak_checked, r.leak_ok) {
            (false, _) => "not judged: with --warmup 0 the growth includes one-time allocations",
            (true, true) => "PASS",
            (true, false) => "FAIL",
        }
    );
    if let Some((g, p, bytes)) = r.projection {
        println!(
            "projection: {g} GPUs × {p} pipelines would need about {} of host memory (static + {} × measured per-pipeline peak)",
            human_bytes(bytes),
            g * p
        );
    }
    println!("all proofs verified with verify_seal: {}", r.all_verified);
}

#[cfg(test)]
mod tests {
    use cuzk_pipeline::trace::StageSummary;

    fn stage(stage: &'static str, count: usize, total_s: f64) -> StageSummary {
        StageSummary { stage, count, total_s, mean_s: total_s / count as f64, max_s: total_s / count as f64 }
    }

    #[test]
    fn the_prover_bound_spreads_the_prove_stage_over_proofs_and_lanes() {
        let stages = [stage("witness", 30, 24.9), stage("prove", 30, 67.5)];
        assert_eq!(super::prover_bound_s_per_proof(&stages, 3, 1), Some(22.5));
        assert_eq!(super::prover_bound_s_per_proof(&stages, 3, 2), Some(11.25));
        assert_eq!(super::prover_bound_s_per_proof(&stages, 0, 1), None);
        assert_eq!(super::prover_bound_s_per_proof(&stages[..1], 3, 1), None, "no prove stage, no bound");
    }

    #[test]
    fn the_measured_cpu_is_the_difference_of_two_readings_per_partition() {
        use cuzk_core::mem::Usage;
        let before = Usage { minor_faults: 13_000_000, user_s: 100.0, system_s: 40.0 };
        let after = Usage { minor_faults: 16_000_000, user_s: 400.0, system_s: 55.0 };
        let c = super::MeasuredCpu::between(before, after, 30);
        assert_eq!((c.user_s, c.system_s, c.minor_faults), (300.0, 15.0, 3_000_000));
        assert!((c.system_share - 15.0 / 315.0).abs() < 1e-12);
        assert_eq!(c.minor_faults_per_partition, 100_000.0);
        // Unreadable usage (zeros after) never gives negative time or a share above 1.
        let z = super::MeasuredCpu::between(before, Usage::default(), 0);
        assert_eq!((z.user_s, z.system_s, z.system_share, z.minor_faults), (0.0, 0.0, 0.0, 0));
    }
}
