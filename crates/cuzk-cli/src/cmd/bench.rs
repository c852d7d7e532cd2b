//! `cuzk bench …`: the benchmark subcommands' flags and what each prints. The measuring
//! itself lives in [`crate::bench`]; this module turns flags into a run and its figures into
//! lines and an exit code (1 when compared results differ). It must not know how the
//! figures are measured.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use cuzk_core::mem::StageTracer;

use crate::args::{make_backend, on_off, proof_for, BackendArg, OnOff, SectorArgs, WitnessArg};
use crate::bench::partition::PartitionBench;
use crate::context::{kinds, rayon_threads};
use crate::input::{load_input, write_json};

#[derive(Subcommand)]
pub enum BenchCmd {
    /// Old path (full synthesis) vs new path (witness + PCE mat-vec) over the same circuits,
    /// every vector compared bit for bit; exits non-zero on any mismatch.
    Pce(PceArgs),
    /// One partition's witness computed natively and with the circuit's own gadgets (one piece
    /// per challenge of a PoRep C1, or per sector of a PoSt request with `--post`, in
    /// parallel, as the new path does; a SnapDeals partition with `--update`), every value
    /// compared, both timed in wall and core seconds. Needs no PCE or parameters: it runs on a
    /// synthetic 32 GiB C1 (`gen-c1 --synthetic`, ~10 GiB free), PoSt request (`gen-post
    /// --synthetic`) or update (`gen-update --synthetic`, ~6 GiB) on any machine.
    /// Exits 1 on any difference.
    WitnessModes(WitnessModesArgs),
    /// Where the gadget witness spends its time (the circuit's own gadgets, as `--witness
    /// gadgets` computes it): one partition's witness timed plainly, then
    /// again with every namespace timed (self and inclusive seconds, allocations, constraints
    /// per namespace path, numbers collapsed so repeated gadgets add up). The profiled witness
    /// is checked equal to the plain one.
    Witness(WitnessProfileArgs),
    /// End to end, old path (bellperson) then new path (witness + PCE + cuzk prover) over the
    /// same C1 with the same loaded parameters; both proofs verified; times per stage and the
    /// ratio. Writes JSON with --json.
    Prove(ProveArgs),
    /// One partition at full size on one backend, under random parameters of the circuit's
    /// exact layout (or a .params file): witness, CPU mat-vec, the backend's mat-vec checked
    /// value for value, then REPS proofs with a, b, c from the host and REPS with the backend
    /// evaluating the matrices itself (on a GPU only the witness is uploaded), all with one
    /// (r, s) and required to be the same bytes. Made for 32 GiB partitions (synthetic C1s):
    /// `--write-params` leaves the SRS on disk for cuzk-supraseal. Proofs under random
    /// parameters never verify; exits 1 when any two results differ.
    Partition(PartitionArgs),
    /// The 0/1 split (sum of the bases with scalar 1 + a general MSM over the rest) against the
    /// plain MSM, on the aux scalars of the C1's first partition (L, A, B in G1 and G2); each
    /// pair of results compared. Writes JSON with --json.
    MsmSplit(MsmSplitArgs),
    /// The pipeline engine over N copies of a C1 with J syntheses in flight: the seeds' memory
    /// table, the memory-model and leak checks (non-zero exit on failure), throughput,
    /// prover busy fraction, per-stage times; --compare-old runs the old path first.
    PcePipeline(crate::bench::pipeline::PipelineArgs),
    /// The daemon load test: N concurrent jobs over loopback gRPC (every other one submitted
    /// twice with the same request id) against the same N through the engine in process; all
    /// must complete and verify, none lost or duplicated, the byte budget held. Exit 1 if not.
    Daemon(crate::bench::daemon::DaemonBenchArgs),
    /// MSM (G1, and G2 at a quarter of the size) and NTT times of a backend from 2^MIN-LOG to
    /// 2^MAX-LOG points, on synthetic inputs.
    Backend(BackendArgs),
    /// Parameter generation: cuzk's generator against bellperson's (what filecoin-proofs runs),
    /// same circuit, same machine, one run. Writes JSON with --json.
    Params(ParamsArgs),
    /// Warm PoSt latency, request in → verified proof out: cuzk's engine against
    /// filecoin-proofs' own prover on the same request (`cuzk gen-post` writes one), one
    /// warm-up each, then RUNS alternating pairs; medians and their ratio. Writes JSON with --json.
    Post(PostBenchArgs),
    /// WinningPoSt latency while PoRep sectors prove on the same engine and device: a warm-up
    /// of each, IDLE-REQUESTS on the idle engine, then REQUESTS one every INTERVAL-MS with two
    /// PoRep sectors always in the engine; p50/p99/max per urgent-lane setting. Every
    /// WinningPoSt proof is verified. Writes JSON with --json.
    PostLoad(PostLoadArgs),
    /// A partition-sized buffer made, filled on every core and freed each round, against the
    /// same buffer kept in the buffer pool (the daemon's `engine.buffer_pool`) and refilled:
    /// wall seconds, minor page faults and system seconds per round, medians without the
    /// first round. Measures this machine's cost of fresh memory, not a proof.
    BufferPool(BufferPoolArgs),
    /// G1 MSMs of 2^k full random scalars for each k of --log-n, each implementation of
    /// --impl side by side in one run (bases resident on a device; there both with the scalars
    /// uploaded in the call and already on the device, the H MSM's case): one untimed run,
    /// then the median and minimum of --runs. Every implementation's sum must be the same
    /// point; exits 1 otherwise. 2^27 needs ~13 GiB for the bases (host and device).
    Msm(KernelArgs),
    /// One NTT of 2^k and the Groth16 quotient (six NTTs of 2^k and the pointwise steps) for
    /// each k of --log-n, each implementation side by side: on a device the NTT and quotient
    /// parts are CUDA-event times with the inputs on the device, and the round trip adds the
    /// host copies. Every implementation's H must be the same; exits 1 otherwise.
    Ntt(KernelArgs),
    /// The G1 MSM's arithmetic ceilings on a CUDA device (issue 24): Fp and Fr multiplications
    /// per second (the MSM's and the NTT's arithmetic), and for each --batch the XYZZ mixed additions (sppark's bucket step) against
    /// affine additions that share one inversion per batch (Montgomery's trick), each thread
    /// adding --rounds points to each of its accumulators. Both ways must give the same sum;
    /// exits 1 otherwise. Needs a CUDA build and a device.
    MsmCeiling(CeilingArgs),
}

#[derive(Args)]
pub struct CeilingArgs {
    /// Random resident points, as log2 of their count.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(4..=26))]
    log_points: u32,
    /// Points each accumulator adds.
    #[arg(long, default_value_t = 64)]
    rounds: u32,
    /// Accumulators per thread (the affine way's batch per inversion), each timed.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64,128")]
    batch: Vec<u32>,
    /// The CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
pub struct PostLoadArgs {
    /// The WinningPoSt request (`cuzk gen-post`, `--synthetic` at 32GiB).
    #[arg(long)]
    post: PathBuf,
    /// The C1 whose sectors load the engine (a synthetic C1 needs --porep-no-verify).
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long, default_value_t = 20)]
    requests: usize,
    #[arg(long, default_value_t = 5)]
    idle_requests: usize,
    /// Pause between one WinningPoSt's proof and the next request.
    #[arg(long, default_value_t = 1000)]
    interval_ms: u64,
    /// PoRep partitions in witness synthesis at once.
    #[arg(short = 'j', long = "jobs", default_value_t = 2)]
    jobs: usize,
    #[arg(long, default_value_t = 1)]
    provers_per_device: usize,
    /// Host byte budget in GiB (default: 80 % of MemAvailable).
    #[arg(long)]
    budget_gib: Option<f64>,
    /// Urgent-lane settings to measure, in order (one engine each): on (an extra prover per
    /// device for WinningPoSt/WindowPoSt, winning the device at the next MSM or NTT boundary),
    /// off (they wait for a free prover).
    #[arg(long, value_delimiter = ',', default_value = "on")]
    urgent_lane: Vec<OnOff>,
    /// Threads reserved for urgent partitions' CPU work, each count measured in turn with the
    /// lane on (0: they share the process-wide pool).
    #[arg(long, value_delimiter = ',', default_value = "4")]
    urgent_threads: Vec<usize>,
    /// MSM pieces to measure, each setting in turn: 2^K points per device call of an MSM
    /// over resident bases (0: one call per MSM).
    #[arg(long, value_name = "K", value_delimiter = ',', default_value = "0", value_parser = piece_or_off)]
    msm_piece_log2: Vec<u32>,
    /// Urgent graces to measure, each in turn (for each MSM piece): milliseconds the device
    /// stays reserved for the WinningPoSt after each of its calls (0..=1000).
    #[arg(
        long,
        value_name = "MS",
        value_delimiter = ',',
        default_values_t = [cuzk_core::device_lock::DEFAULT_URGENT_GRACE_MS],
        value_parser = clap::value_parser!(u32).range(0..=i64::from(cuzk_core::device_lock::MAX_URGENT_GRACE_MS))
    )]
    urgent_grace_ms: Vec<u32>,
    /// Do not verify the PoRep proofs (required for a synthetic C1).
    #[arg(long)]
    porep_no_verify: bool,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    #[arg(long)]
    json: Option<PathBuf>,
}

/// An MSM piece setting: 0 (one call per MSM) or a log2 in 16..=40, as
/// `engine.msm_piece_log2` takes it ([`cuzk_core::backend::msm_piece_setting`]).
fn piece_or_off(s: &str) -> std::result::Result<u32, String> {
    let k: u32 = s.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    cuzk_core::backend::msm_piece_setting(k).map(|_| k)
}

/// An MSM piece size: a log2 in 16..=40 ([`cuzk_core::backend::MSM_PIECE_LOG2`]).
fn piece_log2(s: &str) -> std::result::Result<u32, String> {
    match piece_or_off(s)? {
        0 => Err("0 is not a piece size (leave the option out for one call per MSM)".into()),
        k => Ok(k),
    }
}

fn post_load_bench(a: PostLoadArgs) -> Result<ExitCode> {
    use crate::bench::post_load::{run, LoadOptions};
    let post = crate::cmd::post::load(&a.post)?;
    anyhow::ensure!(
        cuzk_filecoin::post::registry::is_winning(post.registered_proof),
        "{}: a WinningPoSt request is needed",
        a.post.display()
    );
    let (c1, identity) = load_input(&a.c1, &a.sector)?;
    let porep = std::sync::Arc::new(cuzk_filecoin::porep::PorepInput { c1, identity });
    let budget_bytes = a.budget_gib.map(|g| (g * (1u64 << 30) as f64) as u64).unwrap_or_else(cuzk_pipeline::budget::default_budget);
    let mut reports = Vec::new();
    let lanes = a.urgent_lane.iter().flat_map(|lane| match lane {
        OnOff::On => a.urgent_threads.iter().map(|t| (true, *t)).collect::<Vec<_>>(),
        OnOff::Off => vec![(false, 0)],
    });
    let pieces = a.msm_piece_log2.iter().flat_map(|k| a.urgent_grace_ms.iter().map(move |g| (Some(*k).filter(|k| *k > 0), *g)));
    let settings = lanes.flat_map(|lane| pieces.clone().map(move |p| (lane, p)));
    for ((urgent_lane, urgent_threads), (msm_piece_log2, urgent_grace_ms)) in settings {
        let o = LoadOptions {
            requests: a.requests,
            idle_requests: a.idle_requests,
            interval: std::time::Duration::from_millis(a.interval_ms),
            jobs: a.jobs,
            provers_per_device: a.provers_per_device,
            budget_bytes,
            urgent_lane,
            urgent_threads,
            msm_piece_log2,
            urgent_grace_ms,
            porep_verify: !a.porep_no_verify,
        };
        let gpu = cuzk_gpu::GpuOptions { msm_piece_log2, urgent_grace_ms: Some(urgent_grace_ms), ..Default::default() };
        let device = crate::args::make_devices_with(a.backend, &gpu)?.into_iter().next().context("no device")?;
        let r = run(post.clone(), porep.clone(), device, &o)?;
        println!(
            "{} under {} sectors on {} (urgent lane {}, {} reserved threads, MSM pieces {}, urgent grace {} ms): idle p50 {:.3} s; loaded p50 {:.3} s, p99 {:.3} s, max {:.3} s over {} requests; PoRep sector every {:?} s",
            r.registered_proof,
            r.porep_c1,
            r.backend,
            on_off(r.urgent_lane),
            r.urgent_threads,
            r.msm_piece_log2.map_or("off".to_string(), |k| format!("of 2^{k} points")),
            r.urgent_grace_ms,
            r.idle_p50_s,
            r.loaded_p50_s,
            r.loaded_p99_s,
            r.loaded_max_s,
            r.loaded_s.len(),
            r.porep_sector_s.iter().map(|s| (s * 100.0).round() / 100.0).collect::<Vec<_>>()
        );
        let rounded =
            |m: &std::collections::BTreeMap<String, f64>| m.iter().map(|(k, v)| format!("{k} {v:.3}")).collect::<Vec<_>>().join(", ");
        println!("  loaded median per stage: {}", rounded(&r.loaded_stage_median_s));
        let res = &r.resident_after_warmup;
        println!(
            "  device resident after the warm-ups (WinningPoSt + PoRep): SRS {} sections, {:.2} GiB, {} evicted; matrices of {} circuits, {:.2} GiB",
            res.sections,
            res.bytes as f64 / (1u64 << 30) as f64,
            res.evictions,
            res.matrices,
            res.matrix_bytes as f64 / (1u64 << 30) as f64
        );
        let b = &r.bulk_calls;
        println!(
            "  PoRep device calls while loaded: {} ({:.1} s held, longest {:.3} s; {:.1} s waiting for the lock, longest {:.3} s)",
            b.acquisitions, b.held_seconds, b.max_held_seconds, b.seconds, b.max_seconds
        );
        let longest: Vec<String> = r.longest_device_stages.iter().map(|(n, s)| format!("{n} {s:.3}")).collect();
        println!("  longest device stages while loaded (s): {}", longest.join("; "));
        println!(
            "  PoRep partitions proved while loaded: {} in {:.1} s ({:.3} per second)",
            r.porep_partitions_proved,
            r.loaded_s_total,
            r.porep_partitions_proved as f64 / r.loaded_s_total.max(1e-9)
        );
        if let Some(i) = (0..r.loaded_s.len()).max_by(|&a, &b| r.loaded_s[a].total_cmp(&r.loaded_s[b])) {
            println!("  slowest loaded request ({:.3} s): {}", r.loaded_s[i], rounded(&r.loaded_stages_s[i]));
        }
        reports.push(r);
    }
    if let Some(p) = &a.json {
        write_json(p, &reports)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct PostBenchArgs {
    /// The PoSt request file (as `cuzk prove --post` takes).
    #[arg(long)]
    post: PathBuf,
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[arg(long, value_enum, default_value = "auto")]
    backend: crate::args::BackendArg,
    /// Threads of the engine's urgent-lane pool, where the request's CPU work runs (0: the
    /// process-wide pool). Default: the engine's, one per core.
    #[arg(long)]
    urgent_threads: Option<usize>,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn post_bench(a: PostBenchArgs) -> Result<ExitCode> {
    let input = crate::cmd::post::load(&a.post)?;
    let r = crate::bench::post::run(input, crate::args::make_backend(a.backend)?, a.runs, a.urgent_threads)?;
    println!(
        "{} ({} sectors), backend {}, {} threads ({} in the urgent pool), {} runs after a warm-up each:",
        r.registered_proof, r.sectors, r.backend, r.threads, r.urgent_threads, r.runs
    );
    println!("  cuzk engine        median {:.3} s  {:?}", r.cuzk_median_s, r.cuzk_s);
    println!("  filecoin-proofs    median {:.3} s  {:?}", r.filecoin_proofs_median_s, r.filecoin_proofs_s);
    println!("  ratio (filecoin-proofs / cuzk): {:.2}x, every proof verified", r.ratio);
    let stages: Vec<String> = r.cuzk_stage_median_s.iter().map(|(k, v)| format!("{k} {v:.3} s")).collect();
    println!("  cuzk median per stage: {}", stages.join(", "));
    if let Some(p) = &a.json {
        write_json(p, &r)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(b: BenchCmd) -> Result<ExitCode> {
    match b {
        BenchCmd::Pce(a) => pce(a),
        BenchCmd::WitnessModes(a) => witness_modes(a),
        BenchCmd::Witness(a) => witness(a),
        BenchCmd::Partition(a) => partition(a),
        BenchCmd::Prove(a) => prove(a),
        BenchCmd::PcePipeline(a) => crate::bench::pipeline::run(a),
        BenchCmd::Daemon(a) => crate::bench::daemon::run(a),
        BenchCmd::Backend(a) => backend(a),
        BenchCmd::MsmSplit(a) => msm_split(a),
        BenchCmd::Params(a) => params(a),
        BenchCmd::Post(a) => post_bench(a),
        BenchCmd::PostLoad(a) => post_load_bench(a),
        BenchCmd::BufferPool(a) => buffer_pool_bench(a),
        BenchCmd::Msm(a) => kernel_bench(a, crate::bench::kernels::msm),
        BenchCmd::Ntt(a) => kernel_bench(a, crate::bench::kernels::ntt),
        BenchCmd::MsmCeiling(a) => msm_ceiling(a),
    }
}

#[derive(Args)]
pub struct PceArgs {
    #[arg(long)]
    c1: PathBuf,
    /// Circuits to synthesise (cycling through the C1's partitions; 0 = one per partition).
    #[arg(long, default_value_t = 0)]
    circuits: usize,
    /// Hold both paths' results and count mismatches per vector (peak RSS then covers both).
    #[arg(long)]
    compare_old: bool,
    /// How the new path computes witnesses: `native` (SHA-256 on machine words, the
    /// default) or `gadgets` (the circuit's own gadgets through a witness-only CS).
    #[arg(long, value_enum, default_value_t = WitnessArg::Native)]
    witness: WitnessArg,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn pce(a: PceArgs) -> Result<ExitCode> {
    let PceArgs { c1, circuits, compare_old, witness, sector, json } = a;
    let (c1, id) = load_input(&c1, &sector)?;
    let tracer = StageTracer::new();
    let r = crate::bench::pce::run(&c1, &id, circuits, compare_old, witness.mode(), &tracer)?;
    print!("{}", tracer.render());
    println!(
        "{} circuits of {} constraints on {} threads{}",
        r.circuits,
        r.constraints,
        r.threads,
        if compare_old {
            " (--compare-old: both paths' results held at once)"
        } else {
            " (old results dropped before the new path; compared by digest)"
        }
    );
    println!("  old path (full synthesis)     {:>8.3} s", r.old_seconds);
    println!(
        "  new path (witness + mat-vec)  {:>8.3} s  = witness {:.3} s + mat-vec {:.3} s",
        r.new_seconds, r.witness_seconds, r.matvec_seconds
    );
    println!("  speedup                       {:>8.2}x  (witness: {})", r.speedup, r.witness_mode);
    println!(
        "  core-seconds: old {:.3}, new {:.3} (witness {:.3} + mat-vec {:.3}) -> {:.2}x",
        r.old_cpu_seconds,
        r.witness_cpu_seconds + r.matvec_cpu_seconds,
        r.witness_cpu_seconds,
        r.matvec_cpu_seconds,
        r.cpu_speedup
    );
    let m = r.mismatches;
    println!("  mismatches: a {} b {} c {} input {} aux {} density {}", m.a, m.b, m.c, m.input, m.aux, m.density);
    if let Some(path) = json {
        write_json(&path, &r)?;
    }
    if m.total() != 0 {
        eprintln!("error: the new path differs from the old path");
        return Ok(ExitCode::from(1));
    }
    println!("bit-for-bit: EQUAL");
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct WitnessModesArgs {
    /// The C1 whose partition to compare.
    #[arg(long, required_unless_present_any = ["post", "update"], conflicts_with_all = ["post", "update"])]
    c1: Option<PathBuf>,
    /// A PoSt request (`cuzk gen-post`, `--synthetic` at 32GiB) instead: its partition's
    /// sectors, through the gadgets and with the native Poseidon witness.
    #[arg(long, conflicts_with = "update")]
    post: Option<PathBuf>,
    /// A SnapDeals request (`cuzk gen-update`, `--synthetic` at 32GiB) instead: partition
    /// `--partition` whole through the gadgets, natively with its challenges in parallel.
    #[arg(long)]
    update: Option<PathBuf>,
    /// The partition to compare.
    #[arg(long, default_value_t = 0)]
    partition: usize,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn witness_modes(a: WitnessModesArgs) -> Result<ExitCode> {
    let WitnessModesArgs { c1, post, update, partition, sector, json } = a;
    let r = match (c1, post, update) {
        (Some(c1), _, _) => {
            let (c1, id) = load_input(&c1, &sector)?;
            if c1.synthetic {
                println!("{}: SYNTHETIC C1 (random contents; its circuits are not satisfied — exactness still applies)", c1.path.display());
            }
            let r = cuzk_filecoin::porep::pce::compare_modes(&c1, &id, partition)?;
            println!(
                "partition {} of {:?}: {} challenge pieces, {} inputs + {} aux (common part once per piece), {} threads",
                r.partition, c1.registered_proof, r.pieces, r.inputs, r.aux, r.threads
            );
            r
        }
        (None, Some(post), _) => {
            let input = crate::cmd::post::load(&post)?;
            let r = cuzk_filecoin::post::circuit::compare_modes(&input)?;
            println!(
                "partition {} of {:?}: {} sector pieces, {} inputs + {} aux, {} threads",
                r.partition, input.registered_proof, r.pieces, r.inputs, r.aux, r.threads
            );
            r
        }
        (None, None, Some(update)) => {
            let input = crate::cmd::update::load(&update, false)?;
            let r = cuzk_filecoin::update::circuit::compare_modes(&input, partition)?;
            println!(
                "partition {} of {:?}: {} inputs + {} aux (native: the challenges in parallel), {} threads",
                r.partition, input.registered_proof, r.inputs, r.aux, r.threads
            );
            r
        }
        (None, None, None) => anyhow::bail!("--c1, --post or --update is required"),
    };
    println!("  gadgets  {:>8.3} s wall  {:>9.3} core-s", r.gadget_seconds, r.gadget_cpu_seconds);
    println!("  native   {:>8.3} s wall  {:>9.3} core-s", r.native_seconds, r.native_cpu_seconds);
    println!(
        "  native is {:.2}x faster in wall time, {:.2}x in core-seconds; {:.3} vs {:.3} core-ns per aux value",
        r.gadget_seconds / r.native_seconds,
        r.gadget_cpu_seconds / r.native_cpu_seconds,
        r.gadget_cpu_seconds * 1e9 / r.aux.max(1) as f64,
        r.native_cpu_seconds * 1e9 / r.aux.max(1) as f64
    );
    println!("  differing: {} pieces, {} values", r.differing_pieces, r.differing_values);
    if let Some(path) = json {
        write_json(&path, &r)?;
    }
    if r.differing_pieces > 0 {
        println!("native and gadget witnesses: DIFFERENT");
        return Ok(ExitCode::from(1));
    }
    println!("native and gadget witnesses: EQUAL");
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct WitnessProfileArgs {
    #[arg(long)]
    c1: PathBuf,
    /// Namespace levels kept apart (deeper ones are counted in their ancestor).
    #[arg(long, default_value_t = 4)]
    depth: usize,
    /// Rows printed (largest inclusive time first).
    #[arg(long, default_value_t = 30)]
    top: usize,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn witness(a: WitnessProfileArgs) -> Result<ExitCode> {
    let WitnessProfileArgs { c1, depth, top, sector, json } = a;
    let (c1, id) = load_input(&c1, &sector)?;
    let (pce, _) = kinds().porep.shared_pce(c1.registered_proof)?;
    let (plain, profiled, rows) = cuzk_filecoin::porep::pce::profile_witness(&c1, &id, &pce, depth)?;
    let per = plain * 1e6 / pce.num_constraints.max(1) as f64;
    println!(
        "witness of one partition: {plain:.3} s plain ({per:.3} us/constraint, {} constraints), {profiled:.3} s profiled",
        pce.num_constraints
    );
    println!("{:>8} {:>6} {:>8} {:>11} {:>11}  namespace", "incl s", "incl %", "self s", "allocs", "constraints");
    let total = rows.first().map(|r| r.seconds).unwrap_or(0.0).max(1e-12);
    for r in rows.iter().take(top) {
        println!(
            "{:>8.3} {:>5.1}% {:>8.3} {:>11} {:>11}  {}{}",
            r.seconds,
            100.0 * r.seconds / total,
            r.self_seconds,
            r.allocs,
            r.constraints,
            "  ".repeat(r.depth.saturating_sub(1)),
            r.path
        );
    }
    if let Some(path) = json {
        let doc = serde_json::json!({ "plain_seconds": plain, "profiled_seconds": profiled, "constraints": pce.num_constraints, "us_per_constraint": per, "rows": rows });
        write_json(&path, &doc)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct PartitionArgs {
    /// The C1 whose partition to prove.
    #[arg(long, required_unless_present_any = ["post", "update"], conflicts_with_all = ["post", "update"])]
    c1: Option<PathBuf>,
    /// A PoSt request (`cuzk gen-post`, `--synthetic` at 32GiB) whose partition to prove
    /// instead of a C1's.
    #[arg(long, conflicts_with = "update")]
    post: Option<PathBuf>,
    /// A SnapDeals request (`cuzk gen-update`, `--synthetic` at 32GiB) whose partition
    /// `--partition` to prove instead of a C1's.
    #[arg(long)]
    update: Option<PathBuf>,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Cap on the GPU's resident SRS bytes (e.g. 24GiB), to see what a smaller card costs:
    /// sections over it travel with each call. Default: the whole device.
    #[arg(long, value_parser = crate::args::byte_size)]
    device_budget: Option<u64>,
    /// Run each MSM over resident bases in pieces of at most 2^K points, one device call
    /// each (the pre-emption grain an urgent job waits for). Default: one call per MSM.
    #[arg(long, value_name = "K", value_parser = piece_log2)]
    msm_piece_log2: Option<u32>,
    /// The Pippenger for G1 MSMs over resident bases: cuzk (cuzk's own driver from 2^21
    /// points) or sppark (sppark's for every size).
    #[arg(long, default_value = "cuzk", value_parser = msm_kernel)]
    msm_kernel: cuzk_gpu::MsmKernel,
    #[arg(long, default_value_t = 0)]
    partition: usize,
    /// Proofs per mat-vec place (the first of each is cold: uploads).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Mat-vec places to measure, in order: host (the CPU kernel, a, b, c uploaded) and/or
    /// device (the backend's own mat-vec).
    #[arg(long, value_delimiter = ',', default_value = "host,device")]
    matvec: Vec<cuzk_pce::prove::MatVecPlace>,
    /// H-step schedules to measure, in order: on (mat-vec, quotient and H MSM on their own
    /// thread beside the other four MSMs, whose host work then hides behind the device's
    /// H MSM) and/or off (the H step first). Default: the backend's own choice (on for
    /// cuda, off for cpu).
    #[arg(long, value_delimiter = ',')]
    overlap: Vec<OnOff>,
    /// Seed of the random parameters.
    #[arg(long, default_value_t = 1)]
    srs_seed: u64,
    /// Load these parameters instead of generating random ones.
    #[arg(long)]
    params: Option<PathBuf>,
    /// Write the parameters (and a .vk beside them) here, atomically; an existing
    /// directory gets them under the official file names (usable as
    /// FIL_PROOFS_PARAMETER_CACHE by later runs).
    #[arg(long)]
    write_params: Option<PathBuf>,
    /// Seed of the (r, s) every proof uses.
    #[arg(long, default_value_t = 7)]
    rs_seed: u64,
    /// MSM modes to measure, in order (all proofs must still be the same bytes): split (the
    /// bases of scalar 1 summed, a general MSM over the gathered rest), plain (one MSM over
    /// every scalar, on the resident bases) and/or auto (split where at most a third of the
    /// scalars are general, as the engine does).
    #[arg(long, value_delimiter = ',', default_value = "split")]
    msm: Vec<MsmModeArg>,
    #[command(flatten)]
    side_msms: crate::args::SideMsmsArg,
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The `--msm` values of `bench partition`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum MsmModeArg {
    Split,
    Plain,
    Auto,
}

impl From<MsmModeArg> for cuzk_core::groth16::MsmMode {
    fn from(m: MsmModeArg) -> Self {
        match m {
            MsmModeArg::Split => Self::Split,
            MsmModeArg::Plain => Self::Plain,
            MsmModeArg::Auto => Self::Auto,
        }
    }
}

fn partition(a: PartitionArgs) -> Result<ExitCode> {
    use crate::bench::partition::{Options, Subject};
    let PartitionArgs {
        c1,
        post,
        update,
        sector,
        backend,
        device_budget,
        msm_piece_log2,
        msm_kernel,
        partition,
        reps,
        matvec,
        overlap,
        srs_seed,
        params: params_in,
        write_params,
        rs_seed,
        msm,
        side_msms,
        json,
    } = a;
    let side_msms_on_device = side_msms.on_device();
    let backend = crate::args::make_backend_with(
        backend,
        &cuzk_gpu::GpuOptions {
            resident_budget: device_budget,
            msm_piece_log2,
            msm_kernel,
            side_msms: side_msms.place(),
            ..Default::default()
        },
    )?;
    let overlap = overlap.into_iter().map(|x| x == OnOff::On).collect();
    let msm = msm.into_iter().map(Into::into).collect();
    let o = Options { reps, places: matvec, overlap, srs_seed, params: params_in, write_params, rs_seed, msm, side_msms_on_device };
    let r = match (c1, post, update) {
        (Some(c1), _, _) => {
            let (c1, id) = load_input(&c1, &sector)?;
            if c1.synthetic {
                println!("{}: SYNTHETIC C1 (random contents; its circuits are not satisfied)", c1.path.display());
            }
            crate::bench::partition::run(&Subject::PoRep { c1: &c1, id: &id, partition }, backend.as_ref(), &o, &cuzk_gpu::take_stage_log)?
        }
        (None, Some(post), _) => {
            let input = crate::cmd::post::load(&post)?;
            crate::bench::partition::run(&Subject::Post(&input), backend.as_ref(), &o, &cuzk_gpu::take_stage_log)?
        }
        (None, None, Some(update)) => {
            // Timing only: proofs under random parameters, so a synthetic request is welcome.
            let input = crate::cmd::update::load(&update, false)?;
            if input.synthetic {
                println!("{}: SYNTHETIC SnapDeals request (random contents; its circuits are not satisfied)", update.display());
            }
            crate::bench::partition::run(&Subject::Update { input: &input, partition }, backend.as_ref(), &o, &cuzk_gpu::take_stage_log)?
        }
        (None, None, None) => anyhow::bail!("--c1, --post or --update is required"),
    };
    print_partition(&r);
    let resident = r.resident_after;
    if resident != Default::default() {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        println!(
            "device resident: {} sections, {:.2} GiB (budget {}), {} evicted, {} streamed with their calls; matrices of {} circuits, {:.2} GiB; host memory pinned for uploads {:.2} GiB",
            resident.sections,
            gib(resident.bytes),
            resident.budget_bytes.map_or("the whole device".into(), |b| format!("{:.2} GiB", gib(b))),
            resident.evictions,
            resident.streamed,
            resident.matrices,
            gib(resident.matrix_bytes),
            gib(resident.pinned_host_bytes)
        );
    }
    if let Some(path) = json {
        write_json(&path, &r)?;
    }
    if !(r.proofs_equal && r.backend_matvec_equal) {
        eprintln!("error: results differ between paths");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_partition(r: &PartitionBench) {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    println!(
        "partition {} of {}: {} constraints, {} inputs, {} aux, {} non-zeros, domain 2^{}, {} threads, backend {}",
        r.partition, r.input, r.constraints, r.inputs, r.aux, r.nnz, r.domain_log2, r.threads, r.backend
    );
    println!(
        "  side MSMs' scalars: {}",
        if r.side_msms_on_device { "device witness, where the backend keeps one" } else { "host (selected and split there)" }
    );
    println!("  PCE {:.1} s ({:.2} GiB)", r.pce_seconds, gib(r.pce_bytes as u64));
    println!("  witness        {:>8.3} s  ({:.1} core-s)", r.witness_seconds, r.witness_cpu_seconds);
    println!("  CPU mat-vec    {:>8.3} s  ({:.1} core-s)", r.cpu_matvec_seconds, r.cpu_matvec_cpu_seconds);
    println!(
        "  parameters     {:>8.3} s  ({}; {:.2} GiB as a file; RSS after {:.1} GiB)",
        r.srs_seconds,
        r.srs_source,
        gib(r.srs_file_bytes as u64),
        gib(r.rss_after_srs_bytes)
    );
    if let Some(w) = r.params_write_seconds {
        println!("  params written {w:>8.3} s");
    }
    println!("  backend mat-vec {:>7.3} s, equal to the CPU's: {}", r.backend_matvec_seconds, r.backend_matvec_equal);
    for run in &r.runs {
        let t = &run.timings;
        println!(
            "  prove (msm {:?}, mat-vec {:?}, overlap {}) rep {}: {:>7.3} s; mat-vec {:.3} quotient {:.3} msm h {:.3} | l {:.3} a {:.3} b_g1 {:.3} b_g2 {:.3}{}",
            run.msm, run.matvec, on_off(run.overlap), run.rep, run.seconds, t.matvec.as_secs_f64(), t.quotient.as_secs_f64(), t.msm_h.as_secs_f64(),
            t.msm_l.as_secs_f64(), t.msm_a.as_secs_f64(), t.msm_b_g1.as_secs_f64(), t.msm_b_g2.as_secs_f64(),
            if run.overlap { " (after | beside the H step, waits included)" } else { "" }
        );
        if !run.stages.is_empty() {
            let stages: Vec<String> = run.stages.iter().map(|(name, s)| format!("{name} {:.1} ms", s * 1e3)).collect();
            println!("    device calls: {}", stages.join("; "));
        }
    }
    for m in &r.medians {
        println!(
            "  warm median, msm {:?}, mat-vec {:?}, overlap {}: {}",
            m.msm,
            m.matvec,
            on_off(m.overlap),
            m.seconds.map_or("-".into(), |v| format!("{v:.3} s"))
        );
    }
    let show = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3} s"));
    println!(
        "  warm medians (overlap {}): a, b, c from the host {}; mat-vec on the backend {}",
        on_off(r.median_overlap),
        show(r.median_host_matvec_seconds),
        show(r.median_backend_matvec_seconds)
    );
    println!("  peak RSS {:.1} GiB; all proofs equal: {}", gib(r.peak_rss_bytes), r.proofs_equal);
}

#[derive(Args)]
pub struct ProveArgs {
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// Run only the new path.
    #[arg(long)]
    skip_old: bool,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn prove(a: ProveArgs) -> Result<ExitCode> {
    let ProveArgs { c1, sector, backend, skip_old, json } = a;
    let (c1, id) = load_input(&c1, &sector)?;
    let tracer = StageTracer::new();
    let t = std::time::Instant::now();
    let params = kinds().porep.shared_params(c1.registered_proof, &tracer)?;
    let load_s = t.elapsed().as_secs_f64();
    let backend = make_backend(backend)?;
    let r = crate::bench::prove::run_prove(
        backend,
        &*crate::context::decoded(&params, c1.registered_proof)?,
        load_s,
        &c1,
        &id,
        skip_old,
        &tracer,
    )?;
    print!("{}", tracer.render());
    println!(
        "{} partition(s) of {} constraints, {} threads, backend {}; parameters loaded once ({:.2} s), PCE loaded once ({:.2} s), both excluded from the ratio",
        r.partitions, r.constraints, r.threads, r.backend, r.params_load_s, r.pce_load_s
    );
    if let Some(o) = &r.old {
        println!("  old path  prove {:>8.3} s  verify {:.3} s   (bellperson synthesis + prover)", o.prove_s, o.verify_s);
    }
    let n = &r.new;
    println!("  new path  prove {:>8.3} s  verify {:.3} s", n.prove_s, n.verify_s);
    for st in &n.stages {
        println!("    {:<18} {:>8.3} s", st.stage, st.total_s);
    }
    if let Some(x) = r.ratio {
        println!("  ratio old/new (prove + verify): {x:.2}x");
    }
    println!("both proofs verified with verify_seal");
    if let Some(path) = json {
        write_json(&path, &r)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct BackendArgs {
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    #[arg(long, default_value_t = 16)]
    min_log: u32,
    #[arg(long, default_value_t = 20)]
    max_log: u32,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn backend(a: BackendArgs) -> Result<ExitCode> {
    let BackendArgs { backend, min_log, max_log, json } = a;
    if min_log > max_log || max_log > 28 {
        bail!("--min-log {min_log} --max-log {max_log}: need min ≤ max ≤ 28");
    }
    let backend = make_backend(backend)?;
    let rows = cuzk_core::backend::scaling(backend.as_ref(), min_log, max_log)?;
    println!("backend {} on {} threads", backend.name(), rayon_threads());
    for r in &rows {
        println!("  {:<14} 2^{:<3} {:>10.4} s", r.op, r.log_n, r.seconds);
    }
    if let Some(path) = json {
        write_json(&path, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct MsmSplitArgs {
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn msm_split(a: MsmSplitArgs) -> Result<ExitCode> {
    let MsmSplitArgs { c1, sector, backend, json } = a;
    let (c1, id) = load_input(&c1, &sector)?;
    let params = kinds().porep.shared_params(c1.registered_proof, &StageTracer::new())?;
    let backend = make_backend(backend)?;
    let rows = crate::bench::prove::run_msm_split(backend.as_ref(), &*crate::context::decoded(&params, c1.registered_proof)?, &c1, &id)?;
    println!(
        "{:<24} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8}",
        "msm", "scalars", "zeros", "ones", "general", "plain s", "split s", "speedup"
    );
    for r in &rows {
        println!(
            "{:<24} {:>9} {:>9} {:>9} {:>8} {:>9.3} {:>9.3} {:>7.2}x",
            r.msm, r.scalars, r.zeros, r.ones, r.general, r.plain_s, r.split_s, r.speedup
        );
    }
    println!("every split result equals its plain result ({} threads, backend {})", rayon_threads(), backend.name());
    if let Some(path) = json {
        write_json(&path, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct ParamsArgs {
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Skip bellperson's generator (it takes ~12 minutes for 2 KiB on 2 cores).
    #[arg(long)]
    skip_bellperson: bool,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn params(a: ParamsArgs) -> Result<ExitCode> {
    let ParamsArgs { sector_size, skip_bellperson, json } = a;
    let rp = proof_for(&sector_size)?;
    let scratch = tempfile::tempdir().context("scratch directory")?;
    let t = cuzk_filecoin::porep::test_params::time_generators(rp, !skip_bellperson, scratch.path())?;
    println!("parameter generation for {:?} on {} threads (generate + write the .params file):", rp, t.threads);
    println!("  cuzk        {:>8.1} s  ({} bytes)", t.cuzk_seconds, t.cuzk_file_bytes);
    if let (Some(s), Some(bytes)) = (t.bellperson_seconds, t.bellperson_file_bytes) {
        println!("  bellperson  {:>8.1} s  ({} bytes)", s, bytes);
        println!("  speedup     {:>8.2}x", s / t.cuzk_seconds);
        if t.same_layout != Some(true) {
            bail!("the two generators produced different section sizes");
        }
    }
    if let Some(path) = json {
        write_json(&path, &t)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct BufferPoolArgs {
    /// The buffer's size in GiB (a 32 GiB PoRep partition's witness is ~4; its buffers ~13).
    #[arg(long, default_value_t = 4.0)]
    gib: f64,
    /// Rounds each way (the first is left out of the medians).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    #[arg(long)]
    json: Option<PathBuf>,
}

fn buffer_pool_bench(a: BufferPoolArgs) -> Result<ExitCode> {
    if !(a.gib > 0.0 && a.gib <= 1024.0) {
        bail!("--gib must be in (0, 1024], not {}", a.gib);
    }
    let scalars = (a.gib * (1u64 << 30) as f64 / 32.0) as usize;
    let r = crate::bench::buffer_pool::run(scalars, a.rounds);
    println!(
        "{} buffer, {} threads, transparent huge pages: {}",
        cuzk_core::mem::human_bytes(r.buffer_bytes),
        r.threads,
        r.transparent_huge_pages
    );
    for (name, m) in [("fresh", &r.fresh_median), ("pooled", &r.pooled_median)] {
        println!(
            "  {name:<7} {:>8.3} s  {:>9} minor faults  {:>7.3} s system  (median of rounds 2..)",
            m.seconds, m.minor_faults, m.system_seconds
        );
    }
    if let Some(path) = a.json {
        write_json(&path, &r)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub struct KernelArgs {
    /// Sizes as log2 of the point count: a range `20..27` (both ends included) or a list
    /// `20,24,27`.
    #[arg(long, default_value = "16..20", value_parser = log_sizes)]
    log_n: LogSizes,
    /// Implementations to time, side by side: cpu (this host's cores), cpu-slices (the CPU
    /// MSM cut by points only, the cut before tiles; MSM only), sppark (sppark's kernels on
    /// the CUDA device; needs a CUDA build), cuzk (cuzk's own Pippenger driver over sppark's
    /// kernels, device scalars, one row per --msm-window × --msm-chunks, with its phases;
    /// MSM only, needs a CUDA build).
    #[arg(long = "impl", value_enum, value_delimiter = ',', default_value = "cpu")]
    implementations: Vec<crate::bench::kernels::Impl>,
    /// Timed runs per size and implementation, after one untimed run.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Window widths (bits) the cuzk driver is timed with: a range `16..21` or a list
    /// `18,20,22` (10 to 26; sppark picks at most 18).
    #[arg(long, default_value = "18", value_parser = msm_windows)]
    msm_window: MsmWindows,
    /// Chunk counts the cuzk driver is timed with, for each window: the points are processed
    /// in this many chunks (fewer chunks, more device memory for digits and the sort; 0: as
    /// few as fit half the free device memory, as the prover runs it).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    msm_chunks: Vec<u32>,
    /// The CUDA device index.
    #[arg(long, default_value_t = 0)]
    device: usize,
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `--msm-kernel`'s value.
pub fn msm_kernel(v: &str) -> std::result::Result<cuzk_gpu::MsmKernel, String> {
    cuzk_gpu::MsmKernel::parse(v)
}

/// Window widths from `--msm-window`.
#[derive(Clone, Debug)]
pub struct MsmWindows(Vec<u32>);

fn msm_windows(v: &str) -> std::result::Result<MsmWindows, String> {
    let (lo, hi) = (cuzk_gpu::MsmPlan::MIN_WINDOW, cuzk_gpu::MsmPlan::MAX_WINDOW);
    let ws = ranged_list(v, "window width (bits)")?;
    match ws.iter().find(|&&w| !(lo..=hi).contains(&w)) {
        Some(w) => Err(format!("a window of {w} bits is outside {lo}..{hi}")),
        None => Ok(MsmWindows(ws)),
    }
}

/// `lo..hi` (both ends included) or `a,b,c`, each a number; `what` names one in errors.
fn ranged_list(v: &str, what: &str) -> std::result::Result<Vec<u32>, String> {
    let parse = |x: &str| x.trim().parse::<u32>().map_err(|_| format!("`{x}` is not a {what}"));
    let list: Vec<u32> = match v.split_once("..") {
        Some((lo, hi)) => (parse(lo)?..=parse(hi)?).collect(),
        None => v.split(',').map(parse).collect::<std::result::Result<_, _>>()?,
    };
    if list.is_empty() {
        return Err(format!("`{v}` names no {what} (a range lo..hi needs lo ≤ hi)"));
    }
    Ok(list)
}

/// Sizes (log2) from `--log-n`.
#[derive(Clone, Debug)]
pub struct LogSizes(Vec<u32>);

fn log_sizes(v: &str) -> std::result::Result<LogSizes, String> {
    let sizes = ranged_list(v, "size (log2 of the point count)")?;
    match sizes.iter().find(|&&k| !(1..=28).contains(&k)) {
        Some(k) => Err(format!("2^{k} is outside 2^1..2^28")),
        None => Ok(LogSizes(sizes)),
    }
}

fn msm_ceiling(a: CeilingArgs) -> Result<ExitCode> {
    if a.rounds == 0 || a.batch.contains(&0) {
        bail!("--rounds and every --batch must be at least 1");
    }
    let points: Vec<cuzk_core::G1Affine> = cuzk_core::backend::points::random_points(1 << a.log_points, 13);
    let r = cuzk_gpu::msm_ceilings(a.device, &points, a.rounds, &a.batch)?;
    println!("Fp multiplications: {:.3e} /s", r.fp_mul_per_s);
    println!("Fr multiplications: {:.3e} /s", r.fr_mul_per_s);
    println!("{:>6} {:>14} {:>14} {:>8} {:>6}", "batch", "xyzz adds/s", "affine adds/s", "ratio", "agree");
    for b in &r.batches {
        let ratio = b.affine_adds_per_s / b.xyzz_adds_per_s;
        println!("{:>6} {:>14.4e} {:>14.4e} {:>8.3} {:>6}", b.batch, b.xyzz_adds_per_s, b.affine_adds_per_s, ratio, b.sums_agree);
    }
    if let Some(path) = a.json {
        write_json(&path, &r)?;
    }
    if r.batches.iter().all(|b| b.sums_agree) {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("the affine and XYZZ sums differ: the affine formulas are wrong");
        Ok(ExitCode::from(1))
    }
}

type KernelRun =
    fn(&[crate::bench::kernels::Impl], &[u32], usize, &crate::bench::kernels::DeviceChoice) -> Result<crate::bench::kernels::KernelBench>;

fn kernel_bench(a: KernelArgs, run: KernelRun) -> Result<ExitCode> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let msm_plans =
        a.msm_window.0.iter().flat_map(|&window| a.msm_chunks.iter().map(move |&chunks| cuzk_gpu::MsmPlan { window, chunks })).collect();
    let device = crate::bench::kernels::DeviceChoice { device: a.device, options: cuzk_gpu::GpuOptions::default(), msm_plans };
    let r = run(&a.implementations, &a.log_n.0, a.runs, &device)?;
    println!("{} threads{}", r.threads, r.device.as_ref().map(|d| format!(", device {d}")).unwrap_or_default());
    println!("{:<10} {:<24} {:>5} {:>11} {:>11}", "impl", "what", "n", "median s", "min s");
    for x in &r.rows {
        println!("{:<10} {:<24} 2^{:<3} {:>11.5} {:>11.5}", x.implementation.name(), x.what, x.log_n, x.median_s, x.min_s);
        if let Some(d) = &x.driver {
            let phases: Vec<String> = d.phases_ms.iter().map(|(name, ms)| format!("{name} {ms:.1} ms")).collect();
            let bytes = match d.device_bytes {
                0 => "device bytes as the driver chose its chunks".to_string(),
                b => format!("{:.2} GiB on the device", b as f64 / (1u64 << 30) as f64),
            };
            println!("{:<10} {bytes}; {}", "", phases.join(", "));
        }
    }
    if let Some(path) = a.json {
        write_json(&path, &r)?;
    }
    if r.mismatches.is_empty() {
        println!("every implementation's result agreed at every size");
        Ok(ExitCode::SUCCESS)
    } else {
        for m in &r.mismatches {
            eprintln!("results differ: {m}");
        }
        Ok(ExitCode::from(1))
    }
}

#[cfg(test)]
mod kernel_args_tests {
    #[test]
    fn sizes_parse_as_a_range_or_a_list_and_bad_ones_are_named() {
        assert_eq!(super::log_sizes("20..23").unwrap().0, [20, 21, 22, 23]);
        assert_eq!(super::log_sizes("20,27").unwrap().0, [20, 27]);
        assert!(super::log_sizes("27..20").unwrap_err().contains("lo ≤ hi"));
        assert!(super::log_sizes("20..40").unwrap_err().contains("2^29"));
        assert!(super::log_sizes("x").unwrap_err().contains("`x`"));
        assert!(super::log_sizes("").unwrap_err().contains("not a size"));
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn the_ceiling_bench_refuses_empty_batches_and_names_a_missing_cuda_build() {
        let args = |batch: Vec<u32>| super::CeilingArgs { log_points: 4, rounds: 2, batch, device: 0, json: None };
        assert!(super::msm_ceiling(args(vec![8, 0])).unwrap_err().to_string().contains("at least 1"));
        assert!(format!("{:#}", super::msm_ceiling(args(vec![8])).unwrap_err()).contains("built without cuda"));
    }

    #[test]
    fn msm_windows_parse_within_the_drivers_range() {
        assert_eq!(super::msm_windows("16..18").unwrap().0, [16, 17, 18]);
        assert_eq!(super::msm_windows("20,22").unwrap().0, [20, 22]);
        assert!(super::msm_windows("9..12").unwrap_err().contains("9 bits is outside 10..26"));
        assert!(super::msm_windows("27").unwrap_err().contains("27 bits"));
        assert!(super::msm_windows("22..20").unwrap_err().contains("lo ≤ hi"));
    }
}
