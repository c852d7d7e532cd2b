//! PoSt on the command line: `cuzk gen-post` seals sectors and writes the WinningPoSt and
//! WindowPoSt request files a miner would send for them, and [`prove_file`] proves one such
//! file through the engine for `cuzk prove --post`. It must not know the daemon.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_core::atomic::write_atomically;
use cuzk_filecoin::porep::sector;
use cuzk_filecoin::post::fixture::SealedSectors;
use cuzk_filecoin::post::{circuit, PostInput};
use cuzk_pipeline::{Config, Device, Engine, JobOptions};
use rand::{RngCore, SeedableRng};

use crate::args::{make_backend, EngineArgs};
use crate::context::kinds;
use crate::engine_run::PartitionWatch;
use crate::input::write_json;

#[derive(Args)]
pub struct GenPostArgs {
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Sectors to seal; the WindowPoSt files cover them all, one file per partition.
    #[arg(long, default_value_t = 3)]
    sectors: usize,
    #[arg(long, default_value_t = 1000)]
    miner_id: u64,
    /// Seed for the sectors' contents and the randomness (same seed, same files).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output directory: `winning.json` and `window-<partition>.json`.
    #[arg(long)]
    out: PathBuf,
}

pub fn gen(a: GenPostArgs) -> Result<ExitCode> {
    let size = sector::parse_sector_size(&a.sector_size)?;
    anyhow::ensure!(a.sectors > 0, "--sectors must be at least 1");
    std::fs::create_dir_all(&a.out).with_context(|| format!("{}: cannot create the output directory", a.out.display()))?;
    let work = tempfile::Builder::new().prefix("cuzk-gen-post-").tempdir().context("creating a work directory")?;
    tracing::info!(sectors = a.sectors, size = %sector::size_name(size), "sealing");
    let sealed = SealedSectors::seal(size, a.sectors, a.miner_id, a.seed, work.path())?;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(a.seed ^ 0x9057);
    let mut randomness = [0u8; 32];
    rng.fill_bytes(&mut randomness);
    randomness[31] &= 0x3f;
    let winning = sealed.winning_post(randomness)?;
    write_request(&a.out.join("winning.json"), &winning)?;
    let per_partition = circuit::shape(winning_window(size)?)?.sectors_per_partition;
    let numbers: Vec<u64> = sealed.sectors.iter().map(|(n, _)| *n).collect();
    for (k, chunk) in numbers.chunks(per_partition).enumerate() {
        let window = sealed.window_post(randomness, k, chunk)?;
        write_request(&a.out.join(format!("window-{k}.json")), &window)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn winning_window(size: u64) -> Result<cuzk_filecoin::post::RegisteredPoStProof> {
    Ok(cuzk_filecoin::post::registry::for_size(size, false)?)
}

fn write_request(path: &Path, input: &PostInput) -> Result<()> {
    write_json(path, &input.to_file())?;
    println!(
        "wrote {} ({:?}, partition {}, sectors {:?})",
        path.display(),
        input.registered_proof,
        input.partition_index,
        sector_numbers(input)
    );
    Ok(())
}

fn sector_numbers(input: &PostInput) -> Vec<u64> {
    input.sectors.iter().map(|(n, _)| *n).collect()
}

/// Reads a PoSt request file and runs its checks (the vanilla proofs verified) before any
/// parameter is looked up.
pub fn load(path: &Path) -> Result<PostInput> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let input = PostInput::from_file_bytes(&path.display().to_string(), &bytes)?;
    kinds().post.check(&input)?;
    Ok(input)
}

/// Proves the PoSt request in `path` on the engine and writes the proof to `out` (verified
/// first with the official verifier unless `verify` is off).
pub fn prove_file(path: &Path, out: &Path, engine: &EngineArgs, verify: bool) -> Result<()> {
    anyhow::ensure!(engine.engine == crate::args::Engine::Pce, "--post proves on the pipeline engine only (--engine pce)");
    let input = Arc::new(load(path)?);
    let backend = make_backend(engine.backend)?;
    let mut cfg = Config::cpu(1, cuzk_pipeline::budget::default_budget());
    cfg.devices = vec![Device { name: backend.name().to_string(), backend }];
    let engine = Engine::start(cfg)?;
    let watch = PartitionWatch::start(engine.trace().clone(), "proving PoSt", 1);
    let started = std::time::Instant::now();
    let done = engine.submit(kinds().post.job(input.clone(), JobOptions { randomness: None, verify }))?.wait();
    drop(watch);
    engine.shutdown();
    let proof = done.result.map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.chain()))?;
    write_atomically(out, |w| w.write_all(&proof))?;
    let verifier =
        if cuzk_filecoin::post::registry::is_winning(input.registered_proof) { "verify_winning_post" } else { "verify_window_post" };
    println!(
        "wrote {} ({} bytes, {:?}, partition {}, {:.2} s){}",
        out.display(),
        proof.len(),
        input.registered_proof,
        input.partition_index,
        started.elapsed().as_secs_f64(),
        if done.verified { format!(", verified with {verifier}") } else { ", NOT verified (--no-verify)".into() }
    );
    Ok(())
}
