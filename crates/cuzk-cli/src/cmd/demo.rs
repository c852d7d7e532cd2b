//! `cuzk demo`: the bundled 2 KiB sector (or a given C1) end to end: test parameters if
//! needed, one proof through `prove`'s path, verify_seal, the proof and stage times printed.
//! It must not know how proving or parameter generation work inside.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use cuzk_core::atomic::write_atomically;
use cuzk_filecoin::porep::sector;

use crate::args::{Engine, EngineArgs, SectorArgs};
use crate::cmd::params::ensure_params;
use crate::cmd::prove::{prove_with, render_breakdown};
use crate::input::{bundled_c1, load_input, write_trace};

#[derive(Args)]
pub struct DemoArgs {
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

pub fn run(a: DemoArgs) -> Result<ExitCode> {
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
