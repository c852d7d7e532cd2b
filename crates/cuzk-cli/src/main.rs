//! The `cuzk` binary: argument parsing and output around the cuzk libraries. Every command
//! prints one `error: ...` line naming the bad input and exits 2 on failure; `verify` exits 1
//! for a proof that does not verify. Logs go to stderr through `tracing` (`RUST_LOG`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use cuzk_core::atomic::write_atomically;
use cuzk_core::mem::{self, StageTracer};
use cuzk_core::params;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::params::ParamPaths;
use cuzk_filecoin::porep::sector::{self, SectorIdentity, SectorMeta};
use cuzk_filecoin::porep::test_params::Ensured;
use cuzk_filecoin::porep::verify::{self, Verdict};
use cuzk_filecoin::porep::{reference_prover, seal, PorepInput, RegisteredSealProof};
use cuzk_filecoin::Kinds;

mod bench;
mod daemon_cmd;
mod engine_run;
mod pipeline_bench;
mod selftest;

/// cuzk: a Groth16 prover for Filecoin PoRep commit phase 2 (C1 output in, seal proof out).
///
/// Parameters are read from FIL_PROOFS_PARAMETER_CACHE (default: ~/.cache/cuzk/filecoin-proof-parameters,
/// never the production directory). RUST_LOG sets the log level (default: info).
#[derive(Parser)]
#[command(name = "cuzk", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prove the bundled 2 KiB sector end to end: make test parameters if needed, prove,
    /// verify with verify_seal, print the proof, stage times and peak RSS.
    Demo(DemoArgs),
    /// Prove C1 outputs and write the seal proof bytes (verified first unless --no-verify).
    /// Several C1 files go through the pipeline engine together (-j syntheses in flight).
    Prove(ProveArgs),
    /// Verify a seal proof with filecoin-proofs' verify_seal: prints VALID (exit 0) or INVALID (exit 1).
    Verify(VerifyArgs),
    /// Seal a random sector with filecoin-proofs and write DIR/c1.json plus DIR/c1.meta.json.
    GenC1(GenC1Args),
    /// Groth16 parameter files: make test parameters, check files, show paths.
    #[command(subcommand)]
    Params(ParamsCmd),
    /// Pre-Compiled Constraint Evaluator: extract (or load) the cached matrices of a circuit.
    #[command(subcommand)]
    Pce(PceCmd),
    /// Benchmarks (each compares implementations side by side in one run).
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Check a backend against the CPU: the conformance suite at full scale, then the same C1
    /// proved on both with the same r and s (byte-identical, verify_seal), warm times of both.
    /// Exits 1 on any failure. The GPU machine's check (`gpu-check.sh`) runs this.
    Selftest(SelftestArgs),
    /// Serve cuzk.v1.ProvingEngine over gRPC (Curio's wire format) on a unix socket or TCP
    /// port; SIGTERM/SIGINT drain in-flight jobs and exit 0. See docs/DAEMON.md.
    Daemon(daemon_cmd::DaemonArgs),
    /// Talk to a running daemon: prove, submit, await, status, cancel, metrics, preload, evict.
    Client(daemon_cmd::ClientArgs),
}

#[derive(Args)]
struct SelftestArgs {
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
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct SectorArgs {
    /// Miner id (the prover id is its ID-address payload). Default: from the C1's .meta.json.
    #[arg(long)]
    miner_id: Option<u64>,
    /// Sector number. Default: from the C1's .meta.json.
    #[arg(long)]
    sector_number: Option<u64>,
    /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB); needed for filecoin-proofs' plain C1 form
    /// when no .meta.json is next to it, and checked against the file otherwise.
    #[arg(long)]
    sector_size: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Engine {
    /// The new path: witness-only synthesis, the cached PCE matrices, cuzk's Groth16 prover.
    Pce,
    /// bellperson's synthesis and prover on the real StackedCircuit (the old, reference path).
    Bellperson,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum WitnessArg {
    /// The PoRep allocation sequence walked with SHA-256 on machine words.
    Native,
    /// The circuit's own gadgets through a witness-only constraint system.
    Gadgets,
}

impl WitnessArg {
    fn mode(self) -> cuzk_filecoin::porep::pce::WitnessMode {
        match self {
            WitnessArg::Native => cuzk_filecoin::porep::pce::WitnessMode::Native,
            WitnessArg::Gadgets => cuzk_filecoin::porep::pce::WitnessMode::Gadgets,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OnOff {
    On,
    Off,
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendArg {
    /// CUDA when this build has it and a device is present, else the CPU (one log line says why).
    Auto,
    /// rayon + blst on this machine's cores.
    Cpu,
    /// sppark on CUDA device 0 (an error when the build or the machine has none).
    Cuda,
}

#[derive(Args)]
struct EngineArgs {
    /// Which prover to run.
    #[arg(long, value_enum, default_value = "pce")]
    engine: Engine,
    /// Where the new path's MSMs and NTTs run.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
}

/// The proving devices for the pipeline: every visible CUDA device (`CUDA_VISIBLE_DEVICES`
/// is honoured by the CUDA runtime) or the CPU.
fn make_devices(b: BackendArg) -> Result<Vec<cuzk_pipeline::Device>> {
    let cpu =
        || vec![cuzk_pipeline::Device { name: "cpu".into(), backend: std::sync::Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) }];
    let gpus = || -> Result<Vec<cuzk_pipeline::Device>, cuzk_gpu::GpuError> {
        let n = cuzk_gpu::devices()?.len();
        (0..n).map(|i| Ok(cuzk_pipeline::Device { name: format!("gpu{i}"), backend: std::sync::Arc::from(cuzk_gpu::open(i)?) })).collect()
    };
    match b {
        BackendArg::Cpu => Ok(cpu()),
        BackendArg::Cuda => {
            let v = gpus().context("--backend cuda")?;
            if v.is_empty() {
                bail!("--backend cuda: no CUDA device is visible");
            }
            Ok(v)
        }
        BackendArg::Auto => match gpus() {
            Ok(v) if !v.is_empty() => Ok(v),
            Ok(_) => {
                tracing::info!("backend auto: using the CPU backend because no CUDA device is visible");
                Ok(cpu())
            }
            Err(e) => {
                tracing::info!("backend auto: using the CPU backend because {e}");
                Ok(cpu())
            }
        },
    }
}

fn make_backend(b: BackendArg) -> Result<std::sync::Arc<dyn cuzk_core::backend::Backend>> {
    let cpu = || -> std::sync::Arc<dyn cuzk_core::backend::Backend> { std::sync::Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) };
    match b {
        BackendArg::Cpu => Ok(cpu()),
        BackendArg::Cuda => cuzk_gpu::open(0).map(std::sync::Arc::from).context("--backend cuda"),
        BackendArg::Auto => match cuzk_gpu::open(0) {
            Ok(b) => Ok(std::sync::Arc::from(b)),
            Err(e) => {
                tracing::info!("backend auto: using the CPU backend because {e}");
                Ok(cpu())
            }
        },
    }
}

#[derive(Args)]
struct ProveArgs {
    /// The C1 output (lotus/filecoin-ffi JSON or filecoin-proofs' plain JSON); repeat the flag
    /// (or list several files) to prove several sectors through the pipeline.
    #[arg(long, required = true, num_args = 1..)]
    c1: Vec<PathBuf>,
    /// Where to write the proof bytes (written atomically, only once verified): a file for one
    /// C1; a directory for several (one `<k>-<c1 file stem>.proof` per input).
    #[arg(long)]
    out: PathBuf,
    /// With several C1 files: syntheses in flight in the pipeline.
    #[arg(short = 'j', long = "jobs", default_value_t = 2)]
    jobs: usize,
    /// With several C1 files: provers per device (2 overlaps one proof's host work with
    /// another's device work).
    #[arg(long, default_value_t = 1)]
    provers_per_device: usize,
    #[command(flatten)]
    sector: SectorArgs,
    #[command(flatten)]
    engine: EngineArgs,
    /// Skip verifying the proof before writing it.
    #[arg(long)]
    no_verify: bool,
    /// Write the stage trace (stage, seconds, RSS, peak RSS) as JSON to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
}

#[derive(Args)]
struct VerifyArgs {
    #[arg(long)]
    c1: PathBuf,
    /// The proof bytes to verify.
    #[arg(long)]
    proof: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
}

#[derive(Args)]
struct DemoArgs {
    /// C1 file to prove (default: the bundled 2 KiB fixture).
    #[arg(long)]
    c1: Option<PathBuf>,
    /// Also write the proof here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the stage trace as JSON to this file.
    #[arg(long)]
    trace: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Args)]
struct GenC1Args {
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Seed for the piece, ticket and interactive seed (same seed, same C1).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value_t = 1000)]
    miner_id: u64,
    #[arg(long, default_value_t = 1)]
    sector_number: u64,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Write a synthetic C1 instead of sealing: the real structure of the sector size (its
    /// partitions, challenges, parents and tree shapes) with random contents, made in seconds
    /// even for 32 GiB. Its circuits synthesize at full size but are NOT satisfied: no proof
    /// of it verifies. For benchmarks and exactness checks only.
    #[arg(long)]
    synthetic: bool,
}

#[derive(Subcommand)]
enum ParamsCmd {
    /// Make insecure TEST parameters (.params, .vk, .meta) if none exist; check them if they do.
    Ensure {
        #[arg(long)]
        sector_size: String,
        /// Seed for the trapdoor (default: OS randomness).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Check the parameter and verifying-key files of a sector size structurally.
    Check {
        #[arg(long)]
        sector_size: String,
    },
    /// Print the parameter file paths for a sector size.
    Path {
        #[arg(long)]
        sector_size: String,
    },
}

#[derive(Subcommand)]
enum PceCmd {
    /// Build or load the PCE cache for the circuit of a C1 file and print counts, densities,
    /// bytes per non-zero, extraction time and cache load time.
    Extract {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        sector: SectorArgs,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Old path (full synthesis) vs new path (witness + PCE mat-vec) over the same circuits,
    /// every vector compared bit for bit; exits non-zero on any mismatch.
    Pce {
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
    },
    /// One partition's witness computed natively and with the circuit's own gadgets (one piece
    /// per challenge, in parallel, as the new path does), every value compared, both timed in
    /// wall and core seconds. Needs no PCE or parameters: it runs on a synthetic 32 GiB C1
    /// (`gen-c1 --synthetic`) on any machine with ~10 GiB free. Exits 1 on any difference.
    WitnessModes {
        #[arg(long)]
        c1: PathBuf,
        /// The partition to compare.
        #[arg(long, default_value_t = 0)]
        partition: usize,
        #[command(flatten)]
        sector: SectorArgs,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Where the gadget witness spends its time (the circuit's own gadgets, as `--witness
    /// gadgets` computes it): one partition's witness timed plainly, then
    /// again with every namespace timed (self and inclusive seconds, allocations, constraints
    /// per namespace path, numbers collapsed so repeated gadgets add up). The profiled witness
    /// is checked equal to the plain one.
    Witness {
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
    },
    /// End to end, old path (bellperson) then new path (witness + PCE + cuzk prover) over the
    /// same C1 with the same loaded parameters; both proofs verified; times per stage and the
    /// ratio. Writes JSON with --json.
    Prove {
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
    },
    /// One partition at full size on one backend, under random parameters of the circuit's
    /// exact layout (or a .params file): witness, CPU mat-vec, the backend's mat-vec checked
    /// value for value, then REPS proofs with a, b, c from the host and REPS with the backend
    /// evaluating the matrices itself (on a GPU only the witness is uploaded), all with one
    /// (r, s) and required to be the same bytes. Made for 32 GiB partitions (synthetic C1s):
    /// `--write-params` leaves the SRS on disk for cuzk-supraseal. Proofs under random
    /// parameters never verify; exits 1 when any two results differ.
    Partition {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        sector: SectorArgs,
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendArg,
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
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The 0/1 split (sum of the bases with scalar 1 + a general MSM over the rest) against the
    /// plain MSM, on the aux scalars of the C1's first partition (L, A, B in G1 and G2); each
    /// pair of results compared. Writes JSON with --json.
    MsmSplit {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        sector: SectorArgs,
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendArg,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The pipeline engine over N copies of a C1 with J syntheses in flight: the seeds' memory
    /// table, the memory-model and leak checks (non-zero exit on failure), throughput,
    /// prover busy fraction, per-stage times; --compare-old runs the old path first.
    PcePipeline(pipeline_bench::PipelineArgs),
    /// The daemon load test: N concurrent jobs over loopback gRPC (every other one submitted
    /// twice with the same request id) against the same N through the engine in process; all
    /// must complete and verify, none lost or duplicated, the byte budget held. Exit 1 if not.
    Daemon(daemon_cmd::DaemonBenchArgs),
    /// MSM (G1, and G2 at a quarter of the size) and NTT times of a backend from 2^MIN-LOG to
    /// 2^MAX-LOG points, on synthetic inputs.
    Backend {
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendArg,
        #[arg(long, default_value_t = 16)]
        min_log: u32,
        #[arg(long, default_value_t = 20)]
        max_log: u32,
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Parameter generation: cuzk's generator against bellperson's (what filecoin-proofs runs),
    /// same circuit, same machine, one run. Writes JSON with --json.
    Params {
        #[arg(long, default_value = "2KiB")]
        sector_size: String,
        /// Skip bellperson's generator (it takes ~12 minutes for 2 KiB on 2 cores).
        #[arg(long)]
        skip_bellperson: bool,
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let settings = cuzk_filecoin::Settings::from_vars(|k| std::env::var_os(k));
    settings.apply()?;
    let witness = std::env::var("CUZK_WITNESS").unwrap_or_default().parse().map_err(|e| anyhow::anyhow!("CUZK_WITNESS: {e}"))?;
    KINDS.get_or_init(|| Kinds::new(&settings, witness));
    SETTINGS.get_or_init(|| settings);
    match cli.cmd {
        Cmd::Demo(a) => demo(a),
        Cmd::Prove(a) => prove(a).map(|_| ExitCode::SUCCESS),
        Cmd::Verify(a) => verify_cmd(a),
        Cmd::GenC1(a) => gen_c1(a).map(|_| ExitCode::SUCCESS),
        Cmd::Params(p) => params_cmd(p).map(|_| ExitCode::SUCCESS),
        Cmd::Pce(p) => pce_cmd(p).map(|_| ExitCode::SUCCESS),
        Cmd::Bench(b) => bench(b),
        Cmd::Selftest(a) => selftest_cmd(a),
        Cmd::Daemon(a) => daemon_cmd::daemon(a),
        Cmd::Client(a) => daemon_cmd::client(a),
    }
}

/// The bundled fixture, found next to the binary's source tree or the working directory.
fn bundled_c1() -> Result<PathBuf> {
    let rel = Path::new("fixtures/2kib/c1.json");
    let candidates = [PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel), rel.to_path_buf()];
    candidates.iter().find(|p| p.exists()).cloned().with_context(|| format!("bundled fixture {} not found; pass --c1", rel.display()))
}

/// C1 plus the sector it is for, from the flags and the metadata file next to it.
fn load_input(c1_path: &Path, s: &SectorArgs) -> Result<(C1, SectorIdentity)> {
    let meta_path = sector::meta_path_for(c1_path);
    let meta = if meta_path.exists() { Some(SectorMeta::load(&meta_path)?) } else { None };
    let expected: Option<RegisteredSealProof> = match &s.sector_size {
        Some(size) => Some(sector::registered_proof(sector::parse_sector_size(size)?)?),
        None => meta.as_ref().map(|m| m.registered_proof),
    };
    let c1 = C1::load(c1_path, expected)?;
    let pick = |flag: Option<u64>, from_meta: Option<u64>, name: &str| -> Result<u64> {
        flag.or(from_meta).with_context(|| format!("--{name} is required: no {} next to {}", meta_path.display(), c1_path.display()))
    };
    let identity = SectorIdentity {
        miner_id: pick(s.miner_id, meta.as_ref().map(|m| m.miner_id), "miner-id")?,
        sector_number: pick(s.sector_number, meta.as_ref().map(|m| m.sector_number), "sector-number")?,
    };
    Ok((c1, identity))
}

struct Proved {
    proof: Vec<u8>,
    tracer: StageTracer,
    verified: bool,
    /// The engine's stages of this proof (new path only).
    breakdown: Option<Vec<cuzk_pipeline::trace::StageSummary>>,
}

/// The process's proof kinds, configured once in [`run`] from the environment.
static KINDS: std::sync::OnceLock<Kinds> = std::sync::OnceLock::new();
static SETTINGS: std::sync::OnceLock<cuzk_filecoin::Settings> = std::sync::OnceLock::new();

fn kinds() -> &'static Kinds {
    KINDS.get().expect("kinds are configured before any command runs")
}

fn settings() -> &'static cuzk_filecoin::Settings {
    SETTINGS.get().expect("settings are applied before any command runs")
}

/// One C1 proved: on the new path through the pipeline engine (the one orchestration path:
/// the same job a daemon request or `prove` with several C1s becomes), or with bellperson's
/// reference prover; verified with `verify_seal` unless `verify` is off.
fn prove_with(c1: C1, identity: SectorIdentity, engine: &EngineArgs, verify: bool) -> Result<Proved> {
    let tracer = StageTracer::new();
    let input = std::sync::Arc::new(PorepInput { c1, identity });
    let kind = &kinds().porep;
    if verify {
        input.c1.ensure_provable()?;
    }
    let rp = input.c1.registered_proof;
    let params = kind.shared_params(rp, &tracer)?;
    tracing::info!(
        h = params.h.len(),
        l = params.l.len(),
        a = params.a.len(),
        b_g1 = params.b_g1.len(),
        b_g2 = params.b_g2.len(),
        "parameters loaded"
    );
    if engine.engine == Engine::Bellperson {
        let proof = reference_prover::prove(&input.c1, &input.identity, &params, &tracer)?;
        drop(params);
        if verify {
            tracer.stage("verify", || cuzk_filecoin::porep::verify::ensure_valid(&input.c1, &input.identity, &proof))?;
        }
        return Ok(Proved { proof, tracer, verified: verify, breakdown: None });
    }
    drop(params);
    tracer.stage("pce-load", || kind.shared_pce(rp))?;
    let backend = make_backend(engine.backend)?;
    let run = engine_run::prove_one(backend, input, cuzk_pipeline::JobOptions { randomness: None, verify })?;
    for e in &run.events {
        tracer.push(e.stage, e.end_s - e.start_s, e.rss_end_bytes);
    }
    Ok(Proved { proof: run.proof, tracer, verified: run.verified, breakdown: Some(run.stages) })
}

fn render_breakdown(stages: &[cuzk_pipeline::trace::StageSummary]) -> String {
    let parts: Vec<String> = stages.iter().map(|s| format!("{} {:.3} s", s.stage, s.total_s)).collect();
    format!("new-path breakdown (engine stages): {}\n", parts.join(", "))
}

fn write_trace(path: &Path, tracer: &StageTracer) -> Result<()> {
    let rows = tracer.rows();
    write_atomically(path, |w| serde_json::to_writer_pretty(w, &rows).map_err(std::io::Error::other))?;
    Ok(())
}

/// Several C1 files through the pipeline engine; each proof written as soon as it is verified.
fn prove_many(a: &ProveArgs) -> Result<()> {
    if a.engine.engine != Engine::Pce {
        bail!("--engine bellperson proves one C1 at a time; several C1 files need --engine pce");
    }
    let inputs: Vec<_> = a.c1.iter().map(|p| load_input(p, &a.sector)).collect::<Result<_>>()?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("{}: cannot create the output directory", a.out.display()))?;
    let mut cfg = cuzk_pipeline::Config::cpu(a.jobs, cuzk_pipeline::budget::default_budget());
    cfg.devices = make_devices(a.engine.backend)?;
    cfg.provers_per_device = a.provers_per_device.max(1);
    let engine = cuzk_pipeline::Engine::start(cfg)?;
    let opts = cuzk_pipeline::JobOptions { randomness: None, verify: !a.no_verify };
    let tickets: Vec<_> = inputs
        .into_iter()
        .map(|(c1, identity)| engine.submit(kinds().porep.job(std::sync::Arc::new(PorepInput { c1, identity }), opts.clone())))
        .collect::<Result<_, _>>()?;
    let mut failed = 0;
    for (k, (t, path)) in tickets.into_iter().zip(&a.c1).enumerate() {
        let out = t.wait();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("c1");
        let dest = a.out.join(format!("{k}-{stem}.proof"));
        match out.result {
            Ok(bytes) => {
                write_atomically(&dest, |w| w.write_all(&bytes))?;
                println!(
                    "wrote {} ({} bytes, {:.2} s after submission){}",
                    dest.display(),
                    bytes.len(),
                    out.finished_s - out.submitted_s,
                    if out.verified { ", verified with verify_seal" } else { ", NOT verified (--no-verify)" }
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: {}: {}", path.display(), e.chain());
            }
        }
    }
    engine.shutdown();
    if failed > 0 {
        bail!("{failed} of {} proofs failed", a.c1.len());
    }
    Ok(())
}

fn prove(a: ProveArgs) -> Result<()> {
    if a.c1.len() > 1 {
        return prove_many(&a);
    }
    let (c1, identity) = load_input(&a.c1[0], &a.sector)?;
    let p = prove_with(c1, identity, &a.engine, !a.no_verify)?;
    write_atomically(&a.out, |w| w.write_all(&p.proof))?;
    print!("{}", p.tracer.render());
    if let Some(t) = &p.breakdown {
        print!("{}", render_breakdown(t));
    }
    if let Some(t) = &a.trace {
        write_trace(t, &p.tracer)?;
    }
    println!(
        "wrote {} ({} bytes){}",
        a.out.display(),
        p.proof.len(),
        if p.verified { ", verified with verify_seal" } else { ", NOT verified (--no-verify)" }
    );
    Ok(())
}

fn verify_cmd(a: VerifyArgs) -> Result<ExitCode> {
    let (c1, identity) = load_input(&a.c1, &a.sector)?;
    let proof = std::fs::read(&a.proof).with_context(|| format!("{}: cannot read proof", a.proof.display()))?;
    match verify::verify_seal(&c1, &identity, &proof)? {
        Verdict::Valid => {
            println!("VALID");
            Ok(ExitCode::SUCCESS)
        }
        Verdict::Invalid(why) => {
            println!("INVALID: {why}");
            Ok(ExitCode::from(1))
        }
    }
}

fn ensure_params(rp: RegisteredSealProof, seed: Option<u64>) -> Result<()> {
    let paths = ParamPaths::for_proof(rp)?;
    match cuzk_filecoin::porep::test_params::ensure(&kinds().porep, rp, seed)? {
        Ensured::Present(l) => println!(
            "parameters present: {} ({}; h {}, l {}, a {}, b_g1 {}, b_g2 {})",
            paths.params.display(),
            mem::human_bytes(l.file_bytes as u64),
            l.h,
            l.l,
            l.a,
            l.b_g1,
            l.b_g2
        ),
        Ensured::Generated { report, seconds, layout } => {
            println!("WARNING: generated INSECURE TEST PARAMETERS (the trapdoor was known to this process); never use them on the network");
            println!(
                "generated {} ({}) in {seconds:.1} s on {} threads: {} constraints, domain 2^{}, synthesis {:.1} s, QAP {:.1} s, G1 {:.1} s, G2 {:.1} s",
                paths.params.display(),
                mem::human_bytes(layout.file_bytes as u64),
                rayon_threads(),
                report.constraints,
                report.domain.trailing_zeros(),
                report.synthesis_s,
                report.evaluation_s,
                report.g1_s,
                report.g2_s
            );
        }
    }
    Ok(())
}

fn selftest_cmd(a: SelftestArgs) -> Result<ExitCode> {
    let backend = make_backend(a.backend)?;
    let path = match a.c1 {
        Some(p) => p,
        None => bundled_c1()?,
    };
    let (c1, id) = load_input(&path, &a.sector)?;
    let r = selftest::run(backend, c1, id, a.seed, a.repeats)?;
    if let Some(p) = &a.json {
        write_atomically(p, |w| serde_json::to_writer_pretty(w, &r).map_err(std::io::Error::other))?;
    }
    println!(
        "{}: proofs equal to the CPU's: {}, verify_seal: {}, warm CPU/backend ratio {:.2}x ({} threads)",
        r.backend, r.proofs_equal, r.verified, r.cpu_over_backend, r.threads
    );
    match selftest::check(&r) {
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

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn demo(a: DemoArgs) -> Result<ExitCode> {
    let c1_path = match a.c1 {
        Some(p) => p,
        None => bundled_c1()?,
    };
    println!("cuzk demo: proving {}", c1_path.display());
    let (c1, identity) = load_input(&c1_path, &SectorArgs { miner_id: None, sector_number: None, sector_size: None })?;
    println!(
        "sector: {} ({:?}), miner {}, sector {}",
        sector::size_name(c1.sector_size()),
        c1.registered_proof,
        identity.miner_id,
        identity.sector_number
    );
    println!("step 1/2: Groth16 parameters (generated on first run, then reused)");
    ensure_params(c1.registered_proof, None)?;
    println!(
        "step 2/2: prove ({}) and verify with verify_seal",
        match a.engine.engine {
            Engine::Pce => "new path: witness + PCE + cuzk prover on the CPU backend",
            Engine::Bellperson => "old path: bellperson",
        }
    );
    let p = prove_with(c1, identity, &a.engine, true)?;
    println!("proof ({} bytes): {}", p.proof.len(), hex::encode(&p.proof));
    print!("{}", p.tracer.render());
    if let Some(t) = &p.breakdown {
        print!("{}", render_breakdown(t));
    }
    println!("verify_seal: VALID");
    if let Some(out) = &a.out {
        write_atomically(out, |w| w.write_all(&p.proof))?;
    }
    if let Some(t) = &a.trace {
        write_trace(t, &p.tracer)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn gen_c1(a: GenC1Args) -> Result<()> {
    let size = sector::parse_sector_size(&a.sector_size)?;
    if a.synthetic {
        let command =
            format!("cuzk gen-c1 --synthetic --sector-size {} --seed {} --out {}", sector::size_name(size), a.seed, a.out.display());
        let t = std::time::Instant::now();
        let meta = cuzk_filecoin::porep::synthetic::write(sector::registered_proof(size)?, a.seed, &a.out, &command)?;
        println!(
            "wrote {}/c1.json and c1.meta.json ({:?}) in {:.1} s: SYNTHETIC — random contents, its circuits are not satisfied and no proof of it verifies",
            a.out.display(),
            meta.registered_proof,
            t.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let command = format!(
        "cuzk gen-c1 --sector-size {} --seed {} --miner-id {} --sector-number {} --out {}",
        sector::size_name(size),
        a.seed,
        a.miner_id,
        a.sector_number,
        a.out.display()
    );
    let identity = SectorIdentity { miner_id: a.miner_id, sector_number: a.sector_number };
    let meta = seal::gen_c1(size, a.seed, identity, &a.out, &command)?;
    println!("wrote {}/c1.json and c1.meta.json ({:?}, comm_r {})", a.out.display(), meta.registered_proof, meta.comm_r);
    Ok(())
}

fn proof_for(size: &str) -> Result<RegisteredSealProof> {
    Ok(sector::registered_proof(sector::parse_sector_size(size)?)?)
}

fn params_cmd(p: ParamsCmd) -> Result<()> {
    match p {
        ParamsCmd::Ensure { sector_size, seed } => ensure_params(proof_for(&sector_size)?, seed),
        ParamsCmd::Check { sector_size } => {
            let paths = ParamPaths::for_proof(proof_for(&sector_size)?)?;
            let l = params::check_params_file(&paths.params)?;
            let ic = params::check_vk_file(&paths.vk)?;
            println!(
                "{}: ok ({} bytes, ic {}, h {}, l {}, a {}, b_g1 {}, b_g2 {})",
                paths.params.display(),
                l.file_bytes,
                l.ic,
                l.h,
                l.l,
                l.a,
                l.b_g1,
                l.b_g2
            );
            println!("{}: ok (ic {ic})", paths.vk.display());
            if paths.test_marker.exists() {
                println!("these are INSECURE TEST PARAMETERS made by cuzk");
            }
            Ok(())
        }
        ParamsCmd::Path { sector_size } => {
            let paths = ParamPaths::for_proof(proof_for(&sector_size)?)?;
            println!("{}\n{}\n{}", paths.params.display(), paths.vk.display(), paths.meta.display());
            Ok(())
        }
    }
}

/// What the published PCE stores for one 32 GiB partition (non-zeros), for extrapolation.
const PUBLISHED_32GIB_NNZ: f64 = 722_388_891.0;

fn pce_cmd(p: PceCmd) -> Result<()> {
    let PceCmd::Extract { c1, sector } = p;
    let (c1, _) = load_input(&c1, &sector)?;
    let rp = c1.registered_proof;
    let kind = &kinds().porep;
    let id = kind.id_of(rp);
    let path = cuzk_pipeline::resources::pce_cache_path(cuzk_pipeline::ProofKind::pce_cache_dir(kind.as_ref()), &id);
    let (pce, outcome) = cuzk_pce::cache::load_or_build(&path, &id.identity, || {
        cuzk_filecoin::porep::pce::extract(rp).map_err(|e| cuzk_pce::PceError::Circuit(std::sync::Arc::new(e)))
    })?;
    let t = std::time::Instant::now();
    cuzk_pce::cache::load(&path, &id.identity).map_err(|r| anyhow::anyhow!("{}: cache just written is unusable: {r}", path.display()))?;
    let load_s = t.elapsed().as_secs_f64();
    match outcome {
        cuzk_pce::cache::Outcome::Built { seconds, file_bytes, reason } => {
            println!("extracted in {seconds:.2} s ({reason}); cache {} ({})", path.display(), mem::human_bytes(file_bytes))
        }
        cuzk_pce::cache::Outcome::Loaded { seconds, file_bytes } => {
            println!("loaded from cache in {seconds:.2} s: {} ({})", path.display(), mem::human_bytes(file_bytes))
        }
    }
    println!("cache load time: {load_s:.3} s");
    let dens = |bits: &[u64], n: usize| 100.0 * cuzk_pce::matrix::popcount(bits) as f64 / n.max(1) as f64;
    println!("constraints {} (incl. {} input rows), inputs {}, aux {}", pce.num_constraints, pce.num_inputs, pce.num_inputs, pce.num_aux);
    for (name, m) in [("A", &pce.a), ("B", &pce.b), ("C", &pce.c)] {
        println!(
            "  {name}: nnz {:>10}  {:>10}  {:.2} bytes/nnz",
            m.nnz(),
            mem::human_bytes(m.bytes() as u64),
            m.bytes() as f64 / m.nnz().max(1) as f64
        );
    }
    println!(
        "densities: A-aux {:.1}%, B-input {} of {}, B-aux {:.1}%; {} distinct coefficients",
        dens(&pce.a_aux_density, pce.num_aux),
        cuzk_pce::matrix::popcount(&pce.b_input_density),
        pce.num_inputs,
        dens(&pce.b_aux_density, pce.num_aux),
        pce.coeffs.len()
    );
    let per = pce.bytes() as f64 / pce.nnz() as f64;
    println!(
        "total {} for {} non-zeros: {per:.2} bytes per non-zero (published PCE: ~38); at this rate a 32 GiB partition's {} non-zeros take {:.2} GiB (published: 25.7 GiB)",
        mem::human_bytes(pce.bytes() as u64),
        pce.nnz(),
        PUBLISHED_32GIB_NNZ as u64,
        per * PUBLISHED_32GIB_NNZ / (1u64 << 30) as f64
    );
    Ok(())
}

fn bench(b: BenchCmd) -> Result<ExitCode> {
    match b {
        BenchCmd::Pce { c1, circuits, compare_old, witness, sector, json } => {
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
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &r).map_err(std::io::Error::other))?;
            }
            if m.total() != 0 {
                eprintln!("error: the new path differs from the old path");
                return Ok(ExitCode::from(1));
            }
            println!("bit-for-bit: EQUAL");
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::WitnessModes { c1, partition, sector, json } => {
            let (c1, id) = load_input(&c1, &sector)?;
            if c1.synthetic {
                println!("{}: SYNTHETIC C1 (random contents; its circuits are not satisfied — exactness still applies)", c1.path.display());
            }
            let r = cuzk_filecoin::porep::pce::compare_modes(&c1, &id, partition)?;
            println!(
                "partition {} of {:?}: {} challenge pieces, {} inputs + {} aux (common part once per piece), {} threads",
                r.partition, c1.registered_proof, r.pieces, r.inputs, r.aux, r.threads
            );
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
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &r).map_err(std::io::Error::other))?;
            }
            if r.differing_pieces > 0 {
                println!("native and gadget witnesses: DIFFERENT");
                return Ok(ExitCode::from(1));
            }
            println!("native and gadget witnesses: EQUAL");
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Witness { c1, depth, top, sector, json } => {
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
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &doc).map_err(std::io::Error::other))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Partition {
            c1,
            sector,
            backend,
            partition,
            reps,
            matvec,
            overlap,
            srs_seed,
            params: params_in,
            write_params,
            rs_seed,
            json,
        } => {
            let (c1, id) = load_input(&c1, &sector)?;
            if c1.synthetic {
                println!("{}: SYNTHETIC C1 (random contents; its circuits are not satisfied)", c1.path.display());
            }
            let backend = make_backend(backend)?;
            let overlap = overlap.into_iter().map(|x| x == OnOff::On).collect();
            let o = crate::bench::partition::Options {
                partition,
                reps,
                places: matvec,
                overlap,
                srs_seed,
                params: params_in,
                write_params,
                rs_seed,
            };
            let r = crate::bench::partition::run(&c1, &id, backend.as_ref(), &o, &cuzk_gpu::take_stage_log)?;
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            println!(
                "partition {} of {}: {} constraints, {} inputs, {} aux, {} non-zeros, domain 2^{}, {} threads, backend {}",
                r.partition, r.c1, r.constraints, r.inputs, r.aux, r.nnz, r.domain_log2, r.threads, r.backend
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
                    "  prove (mat-vec {:?}, overlap {}) rep {}: {:>7.3} s; mat-vec {:.3} quotient {:.3} msm h {:.3} | l {:.3} a {:.3} b_g1 {:.3} b_g2 {:.3}{}",
                    run.matvec, on_off(run.overlap), run.rep, run.seconds, t.matvec.as_secs_f64(), t.quotient.as_secs_f64(), t.msm_h.as_secs_f64(),
                    t.msm_l.as_secs_f64(), t.msm_a.as_secs_f64(), t.msm_b_g1.as_secs_f64(), t.msm_b_g2.as_secs_f64(),
                    if run.overlap { " (after | beside the H step, waits included)" } else { "" }
                );
            }
            for m in &r.medians {
                println!(
                    "  warm median, mat-vec {:?}, overlap {}: {}",
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
            if let Some(path) = json {
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &r).map_err(std::io::Error::other))?;
            }
            if !(r.proofs_equal && r.backend_matvec_equal) {
                eprintln!("error: results differ between paths");
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Prove { c1, sector, backend, skip_old, json } => {
            let (c1, id) = load_input(&c1, &sector)?;
            let tracer = StageTracer::new();
            let t = std::time::Instant::now();
            let params = kinds().porep.shared_params(c1.registered_proof, &tracer)?;
            let load_s = t.elapsed().as_secs_f64();
            let backend = make_backend(backend)?;
            let r = crate::bench::prove::run_prove(backend, &params, load_s, &c1, &id, skip_old, &tracer)?;
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
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &r).map_err(std::io::Error::other))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::PcePipeline(a) => pipeline_bench::run(a),
        BenchCmd::Daemon(a) => daemon_cmd::bench_daemon(a),
        BenchCmd::Backend { backend, min_log, max_log, json } => {
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
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &rows).map_err(std::io::Error::other))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::MsmSplit { c1, sector, backend, json } => {
            let (c1, id) = load_input(&c1, &sector)?;
            let params = kinds().porep.shared_params(c1.registered_proof, &StageTracer::new())?;
            let backend = make_backend(backend)?;
            let rows = crate::bench::prove::run_msm_split(backend.as_ref(), &params, &c1, &id)?;
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
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &rows).map_err(std::io::Error::other))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        BenchCmd::Params { sector_size, skip_bellperson, json } => {
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
                write_atomically(&path, |w| serde_json::to_writer_pretty(w, &t).map_err(std::io::Error::other))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
