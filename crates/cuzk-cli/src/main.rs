//! The `cuzk` binary: argument parsing and output around the cuzk libraries. Every command
//! prints one `error: ...` line naming the bad input and exits 2 on failure; `verify` exits 1
//! for a proof that does not verify. Logs go to stderr through `tracing` (`RUST_LOG`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use cuzk_core::mem::{self, StageTracer};
use cuzk_core::params;
use cuzk_core::porep::c1::C1;
use cuzk_core::porep::sector::{self, SectorIdentity, SectorMeta};
use cuzk_core::porep::setup::{self, Ensured, ParamPaths};
use cuzk_core::porep::verify::{self, Verdict};
use cuzk_core::porep::{bellperson_engine, seal, RegisteredSealProof};

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
    /// Prove a C1 output and write the seal proof bytes (verified first unless --no-verify).
    Prove(ProveArgs),
    /// Verify a seal proof with filecoin-proofs' verify_seal: prints VALID (exit 0) or INVALID (exit 1).
    Verify(VerifyArgs),
    /// Seal a random sector with filecoin-proofs and write DIR/c1.json plus DIR/c1.meta.json.
    GenC1(GenC1Args),
    /// Groth16 parameter files: make test parameters, check files, show paths.
    #[command(subcommand)]
    Params(ParamsCmd),
    /// Benchmarks (each compares implementations side by side in one run).
    #[command(subcommand)]
    Bench(BenchCmd),
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

#[derive(Clone, Copy, ValueEnum)]
enum Engine {
    /// bellperson's synthesis and prover on the real StackedCircuit (the reference path).
    Bellperson,
}

#[derive(Args)]
struct ProveArgs {
    /// The C1 output (lotus/filecoin-ffi JSON or filecoin-proofs' plain JSON).
    #[arg(long)]
    c1: PathBuf,
    /// Where to write the proof bytes (written atomically, only once verified).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
    /// Which prover to run.
    #[arg(long, value_enum, default_value = "bellperson")]
    engine: Engine,
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
enum BenchCmd {
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
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
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
    cuzk_core::porep::init_env()?;
    match cli.cmd {
        Cmd::Demo(a) => demo(a),
        Cmd::Prove(a) => prove(a).map(|_| ExitCode::SUCCESS),
        Cmd::Verify(a) => verify_cmd(a),
        Cmd::GenC1(a) => gen_c1(a).map(|_| ExitCode::SUCCESS),
        Cmd::Params(p) => params_cmd(p).map(|_| ExitCode::SUCCESS),
        Cmd::Bench(b) => bench(b).map(|_| ExitCode::SUCCESS),
    }
}

/// The bundled fixture, found next to the binary's source tree or the working directory.
fn bundled_c1() -> Result<PathBuf> {
    let rel = Path::new("fixtures/2kib/c1.json");
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel),
        rel.to_path_buf(),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .with_context(|| format!("bundled fixture {} not found; pass --c1", rel.display()))
}

/// C1 plus the sector it is for, from the flags and the metadata file next to it.
fn load_input(c1_path: &Path, s: &SectorArgs) -> Result<(C1, SectorIdentity)> {
    let meta_path = sector::meta_path_for(c1_path);
    let meta = if meta_path.exists() {
        Some(SectorMeta::load(&meta_path)?)
    } else {
        None
    };
    let expected: Option<RegisteredSealProof> = match &s.sector_size {
        Some(size) => Some(sector::registered_proof(sector::parse_sector_size(size)?)?),
        None => meta.as_ref().map(|m| m.registered_proof),
    };
    let c1 = C1::load(c1_path, expected)?;
    let pick = |flag: Option<u64>, from_meta: Option<u64>, name: &str| -> Result<u64> {
        flag.or(from_meta).with_context(|| {
            format!(
                "--{name} is required: no {} next to {}",
                meta_path.display(),
                c1_path.display()
            )
        })
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
}

fn prove_with(c1: &C1, identity: &SectorIdentity, verify_first: bool) -> Result<Proved> {
    let tracer = StageTracer::new();
    let (params, layout) = tracer.stage("load-params", || setup::load(c1.registered_proof))?;
    tracing::info!(h = layout.h, l = layout.l, a = layout.a, b_g1 = layout.b_g1, b_g2 = layout.b_g2, "parameters loaded");
    let proof = bellperson_engine::prove(c1, identity, &params, &tracer)?;
    drop(params);
    if verify_first {
        tracer.stage("verify", || verify::ensure_valid(c1, identity, &proof))?;
    }
    Ok(Proved { proof, tracer, verified: verify_first })
}

fn write_trace(path: &Path, tracer: &StageTracer) -> Result<()> {
    let rows = tracer.rows();
    params::write_atomically(path, |w| serde_json::to_writer_pretty(w, &rows).map_err(std::io::Error::other))?;
    Ok(())
}

fn prove(a: ProveArgs) -> Result<()> {
    let (c1, identity) = load_input(&a.c1, &a.sector)?;
    let Engine::Bellperson = a.engine;
    let p = prove_with(&c1, &identity, !a.no_verify)?;
    params::write_atomically(&a.out, |w| w.write_all(&p.proof))?;
    print!("{}", p.tracer.render());
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
    match setup::ensure(rp, seed)? {
        Ensured::Present(l) => println!(
            "parameters present: {} ({}; h {}, l {}, a {}, b_g1 {}, b_g2 {})",
            paths.params.display(),
            mem::human_bytes(l.file_bytes as u64),
            l.h, l.l, l.a, l.b_g1, l.b_g2
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
    println!("step 2/2: prove (bellperson engine) and verify with verify_seal");
    let p = prove_with(&c1, &identity, true)?;
    println!("proof ({} bytes): {}", p.proof.len(), hex::encode(&p.proof));
    print!("{}", p.tracer.render());
    println!("verify_seal: VALID");
    if let Some(out) = &a.out {
        params::write_atomically(out, |w| w.write_all(&p.proof))?;
    }
    if let Some(t) = &a.trace {
        write_trace(t, &p.tracer)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn gen_c1(a: GenC1Args) -> Result<()> {
    let size = sector::parse_sector_size(&a.sector_size)?;
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
    println!(
        "wrote {}/c1.json and c1.meta.json ({:?}, comm_r {})",
        a.out.display(),
        meta.registered_proof,
        meta.comm_r
    );
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
            println!("{}: ok ({} bytes, ic {}, h {}, l {}, a {}, b_g1 {}, b_g2 {})", paths.params.display(), l.file_bytes, l.ic, l.h, l.l, l.a, l.b_g1, l.b_g2);
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

fn bench(b: BenchCmd) -> Result<()> {
    match b {
        BenchCmd::Params { sector_size, skip_bellperson, json } => {
            let rp = proof_for(&sector_size)?;
            let scratch = tempfile::tempdir().context("scratch directory")?;
            let t = setup::time_generators(rp, !skip_bellperson, scratch.path())?;
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
                params::write_atomically(&path, |w| serde_json::to_writer_pretty(w, &t).map_err(std::io::Error::other))?;
            }
            Ok(())
        }
    }
}
