//! `cuzk prove`: one C1 (or, with `--post`, one PoSt request: [`crate::cmd::post`]) proved (new path through the pipeline engine, or bellperson's
//! reference prover) and written once verified, or several C1s through the engine together.
//! [`prove_with`] and [`render_breakdown`] are shared with `demo`. It must not know the other
//! commands or how the process was configured beyond [`crate::context::kinds`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_core::atomic::write_atomically;
use cuzk_core::mem::StageTracer;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorIdentity;
use cuzk_filecoin::porep::{reference_prover, PorepInput};

use crate::args::{make_backend, make_devices, Engine, EngineArgs, SectorArgs};
use crate::context::kinds;
use crate::engine_run;
use crate::input::{load_input, write_trace};

#[derive(Args)]
pub struct ProveArgs {
    /// The C1 output (lotus/filecoin-ffi JSON or filecoin-proofs' plain JSON); repeat the flag
    /// (or list several files) to prove several sectors through the pipeline.
    #[arg(long, required_unless_present_any = ["post", "update"], conflicts_with_all = ["post", "update"], num_args = 1..)]
    c1: Vec<PathBuf>,
    /// A PoSt request instead of a C1: a JSON file with the registered PoSt proof (lotus
    /// number: 0–4 WinningPoSt, 5–14 WindowPoSt), miner id, randomness, partition index and
    /// one base64 vanilla proof per sector, as `cuzk gen-post` writes and Curio sends. The
    /// proof (192 bytes) is checked with verify_winning_post / verify_window_post.
    #[arg(long, conflicts_with = "update")]
    post: Option<PathBuf>,
    /// A SnapDeals request instead of a C1: a JSON file with the registered update proof
    /// (lotus number 0–4), comm_r_old, comm_r_new, comm_d_new (hex) and one base64 partition
    /// proof per partition, as `cuzk gen-update` writes and Curio sends. The proof (192 bytes
    /// per partition) is checked with verify_empty_sector_update_proof.
    #[arg(long)]
    update: Option<PathBuf>,
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

pub fn run(a: ProveArgs) -> Result<ExitCode> {
    if let Some(post) = &a.post {
        return crate::cmd::post::prove_file(post, &a.out, &a.engine, !a.no_verify).map(|()| ExitCode::SUCCESS);
    }
    if let Some(update) = &a.update {
        return crate::cmd::update::prove_file(update, &a.out, &a.engine, !a.no_verify).map(|()| ExitCode::SUCCESS);
    }
    if a.c1.len() > 1 {
        return prove_many(&a).map(|()| ExitCode::SUCCESS);
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
    Ok(ExitCode::SUCCESS)
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
    let total = inputs.iter().map(|(c1, _)| engine_run::partitions_of(c1)).sum();
    let watch = engine_run::PartitionWatch::start(engine.trace().clone(), &format!("proving {} sectors", inputs.len()), total);
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
    drop(watch);
    engine.shutdown();
    if failed > 0 {
        bail!("{failed} of {} proofs failed", a.c1.len());
    }
    Ok(())
}

/// One proof with its stage trace, as `prove` and `demo` print it.
pub struct Proved {
    pub proof: Vec<u8>,
    pub tracer: StageTracer,
    pub verified: bool,
    /// The engine's stages of this proof (new path only).
    pub breakdown: Option<Vec<cuzk_pipeline::trace::StageSummary>>,
}

/// One C1 proved: on the new path through the pipeline engine (the one orchestration path:
/// the same job a daemon request or `prove` with several C1s becomes), or with bellperson's
/// reference prover; verified with `verify_seal` unless `verify` is off.
pub fn prove_with(c1: C1, identity: SectorIdentity, engine: &EngineArgs, verify: bool) -> Result<Proved> {
    let tracer = StageTracer::new();
    let input = std::sync::Arc::new(PorepInput { c1, identity });
    let kind = &kinds().porep;
    // load_input ran the deep checks; what remains before any parameter lookup is this.
    if verify {
        input.c1.ensure_provable()?;
    }
    let rp = input.c1.registered_proof;
    let params = kind.shared_params(rp, &tracer)?;
    let s = params.sections();
    tracing::info!(
        h = s.h.len(),
        l = s.l.len(),
        a = s.a.len(),
        b_g1 = s.b_g1.len(),
        b_g2 = s.b_g2.len(),
        layout = params.layout_name(),
        "parameters loaded"
    );
    if engine.engine == Engine::Bellperson {
        let proof = reference_prover::prove(&input.c1, &input.identity, &*crate::context::decoded(&params, rp)?, &tracer)?;
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

/// The engine's stages of one proof as the line `prove` and `demo` print.
pub fn render_breakdown(stages: &[cuzk_pipeline::trace::StageSummary]) -> String {
    let parts: Vec<String> = stages.iter().map(|s| format!("{} {:.3} s", s.stage, s.total_s)).collect();
    format!("new-path breakdown (engine stages): {}\n", parts.join(", "))
}
