//! The `cuzk` binary: argument parsing and output around the cuzk libraries. Every command
//! prints one `error: ...` line naming the bad input and exits 2 on failure; `verify` exits 1
//! for a proof that does not verify. Logs and progress go to stderr ([`logging`]).
//!
//! This file only declares the command line and dispatches: each subcommand lives in its own
//! module under [`cmd`], shared flags in [`args`], shared file handling in [`input`], the
//! process's configuration in [`context`], the benchmarks' measuring in [`mod@bench`].

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use cuzk_filecoin::Kinds;

mod args;
mod bench;
mod cmd;
mod context;
mod engine_run;
mod input;
mod logging;

/// cuzk: a Groth16 prover for Filecoin PoRep commit phase 2 (C1 output in, seal proof out).
///
/// Parameters are read from FIL_PROOFS_PARAMETER_CACHE (default: ~/.cache/cuzk/filecoin-proof-parameters,
/// never the production directory). RUST_LOG sets the log filter (default: cuzk's crates at info,
/// filecoin-proofs, storage-proofs and bellperson at warn). Long work shows progress on stderr.
#[derive(Parser)]
#[command(name = "cuzk", version, about, long_about = None)]
struct Cli {
    /// Log line format on stderr: text, or json (one object per line, with the proof's
    /// request id in its spans) for log shippers.
    #[arg(long, global = true, value_enum, default_value_t = logging::LogFormat::Text)]
    log_format: logging::LogFormat,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prove the bundled 2 KiB sector end to end: make test parameters if needed, prove,
    /// verify with verify_seal, print the proof, stage times and peak RSS.
    Demo(cmd::demo::DemoArgs),
    /// Prove C1 outputs and write the seal proof bytes, or a PoSt request (--post) and write its
    /// proof (verified first unless --no-verify).
    /// Several C1 files go through the pipeline engine together (-j syntheses in flight).
    Prove(cmd::prove::ProveArgs),
    /// Verify a seal proof with filecoin-proofs' verify_seal: prints VALID (exit 0) or INVALID (exit 1).
    Verify(cmd::verify::VerifyArgs),
    /// Seal a random sector with filecoin-proofs and write DIR/c1.json plus DIR/c1.meta.json.
    GenC1(cmd::gen_c1::GenC1Args),
    /// Seal sectors and write the WinningPoSt and WindowPoSt request files a miner would send
    /// for them (vanilla proofs drawn by filecoin-proofs-api) as `DIR/winning.json` and
    /// `DIR/window-<partition>.json`, to prove with `prove --post`;
    /// `--synthetic` makes valid requests at any sector size without sealing.
    GenPost(cmd::post::GenPostArgs),
    /// Seal a sector, encode new data into it (SnapDeals) and write the update request Curio
    /// would send for it (partition proofs drawn by filecoin-proofs-api) as `DIR/update.json`,
    /// to prove with `prove --update`; `--synthetic` writes one of real structure and random
    /// contents at any sector size, for timing.
    GenUpdate(cmd::update::GenUpdateArgs),
    /// Groth16 parameter files: make test parameters, check files, show paths.
    #[command(subcommand)]
    Params(cmd::params::ParamsCmd),
    /// Pre-Compiled Constraint Evaluator: extract (or load) the cached matrices of a circuit.
    #[command(subcommand)]
    Pce(cmd::pce::PceCmd),
    /// Benchmarks (each compares implementations side by side in one run).
    #[command(subcommand)]
    Bench(cmd::bench::BenchCmd),
    /// Check a backend against the CPU: the conformance suite at full scale, then the same C1
    /// proved on both with the same r and s (byte-identical, verify_seal), warm times of both.
    /// Exits 1 on any failure. The GPU machine's check (`gpu-check.sh`) runs this.
    Selftest(cmd::selftest::SelftestArgs),
    /// Serve cuzk.v1.ProvingEngine over gRPC (Curio's wire format) on a unix socket or TCP
    /// port; SIGTERM/SIGINT drain in-flight jobs and exit 0. See docs/DAEMON.md.
    Daemon(cmd::daemon::DaemonArgs),
    /// Is this machine ready to prove? Checks the build, GPU and driver, parameter files
    /// (official, test or damaged, against filecoin-proofs' parameters.json), PCE cache, disk
    /// and memory for the sector sizes given; one line per check, exit 1 if any FAILs.
    Doctor(cmd::doctor::DoctorArgs),
    /// Talk to a running daemon: prove, submit, await, status, cancel, metrics, preload, evict.
    Client(cmd::client::ClientArgs),
}

/// Ends the process quietly when stdout is a closed pipe (`cuzk params path | head -1`), as a
/// command-line tool should: Rust ignores SIGPIPE, so the write fails and `println!` panics.
/// Every other panic keeps the default report.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    logging::init(cli.log_format);
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
    context::init(Kinds::new(&settings, witness), settings);
    match cli.cmd {
        Cmd::Demo(a) => cmd::demo::run(a),
        Cmd::Prove(a) => cmd::prove::run(a),
        Cmd::Verify(a) => cmd::verify::run(a),
        Cmd::GenC1(a) => cmd::gen_c1::run(a),
        Cmd::GenPost(a) => cmd::post::gen(a),
        Cmd::GenUpdate(a) => cmd::update::gen(a),
        Cmd::Params(p) => cmd::params::run(p),
        Cmd::Pce(p) => cmd::pce::run(p),
        Cmd::Bench(b) => cmd::bench::run(b),
        Cmd::Selftest(a) => cmd::selftest::run(a),
        Cmd::Daemon(a) => cmd::daemon::run(a),
        Cmd::Client(a) => cmd::client::run(a),
        Cmd::Doctor(a) => cmd::doctor::run(a),
    }
}
