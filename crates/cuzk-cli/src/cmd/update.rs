//! SnapDeals on the command line: `cuzk gen-update` seals a sector, encodes new data into it
//! and writes the update request Curio would send for it, and [`prove_file`] proves one such
//! file through the engine for `cuzk prove --update`. It must not know the daemon.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_core::atomic::write_atomically;
use cuzk_filecoin::porep::sector;
use cuzk_filecoin::update::{fixture, input, synthetic, UpdateInput};
use cuzk_pipeline::JobOptions;

use crate::args::{EngineArgs, GenArgs};
use crate::context::kinds;
use crate::engine_run::prove_job;
use crate::input::write_json;

#[derive(Args)]
pub struct GenUpdateArgs {
    /// Writes `update.json` into `--out`; the seed fixes the sector's and the new data's
    /// contents.
    #[command(flatten)]
    gen: GenArgs,
    /// Write a synthetic request instead: no sector is sealed; the real structure (partition
    /// count, challenges, Merkle path shapes) with random contents, at any size (32 GiB in a
    /// few seconds). Its proof cannot verify: prove it with --no-verify, to time proving.
    #[arg(long)]
    synthetic: bool,
}

pub fn gen(a: GenUpdateArgs) -> Result<ExitCode> {
    let size = a.gen.prepare()?;
    if a.synthetic {
        let started = std::time::Instant::now();
        let update = synthetic::update(cuzk_filecoin::update::registry::for_size(size)?, a.gen.seed)?;
        let path = a.gen.out.join("update.json");
        write_json(&path, &update.to_file())?;
        println!(
            "wrote {} (synthetic {:?}, {} partition proofs, {:.1} s; prove it with --no-verify)",
            path.display(),
            update.registered_proof,
            update.vanilla_proofs.len(),
            started.elapsed().as_secs_f64()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let work = tempfile::Builder::new().prefix("cuzk-gen-update-").tempdir().context("creating a work directory")?;
    tracing::info!(size = %sector::size_name(size), "sealing a sector and encoding new data into it");
    let update = fixture::sealed_update(size, a.gen.miner_id, a.gen.seed, work.path())?;
    let path = a.gen.out.join("update.json");
    write_json(&path, &update.to_file())?;
    println!("wrote {} ({:?}, {} partition proofs)", path.display(), update.registered_proof, update.vanilla_proofs.len());
    Ok(ExitCode::SUCCESS)
}

/// Reads a SnapDeals request file and runs its checks (the partition proofs verified against
/// the commitments; a synthetic request refused when `verify` is on) before any parameter is
/// looked up.
pub fn load(path: &Path, verify: bool) -> Result<UpdateInput> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let input = UpdateInput::from_file_bytes(&path.display().to_string(), &bytes)?;
    kinds().update.check(&input, verify)?;
    Ok(input)
}

/// Proves the SnapDeals request in `path` on the engine and writes the proof to `out`
/// (verified first with verify_empty_sector_update_proof unless `verify` is off).
pub fn prove_file(path: &Path, out: &Path, engine: &EngineArgs, verify: bool) -> Result<()> {
    let input = Arc::new(load(path, verify)?);
    let started = std::time::Instant::now();
    let partitions = input::public_params(input.registered_proof).partition_count as u64;
    let job = kinds().update.job(input.clone(), JobOptions { randomness: None, verify });
    let (proof, verified) = prove_job(engine, "proving SnapDeals", partitions, job).with_context(|| path.display().to_string())?;
    write_atomically(out, |w| w.write_all(&proof))?;
    println!(
        "wrote {} ({} bytes, {:?}, {partitions} partitions, {:.2} s){}",
        out.display(),
        proof.len(),
        input.registered_proof,
        started.elapsed().as_secs_f64(),
        if verified { ", verified with verify_empty_sector_update_proof" } else { ", NOT verified (--no-verify)" }
    );
    Ok(())
}
