//! PoSt on the command line: `cuzk gen-post` seals sectors and writes the WinningPoSt and
//! WindowPoSt request files a miner would send for them, and [`prove_file`] proves one such
//! file through the engine for `cuzk prove --post`. It must not know the daemon.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_core::atomic::write_atomically;
use cuzk_filecoin::porep::sector;
use cuzk_filecoin::post::fixture::SealedSectors;
use cuzk_filecoin::post::{circuit, PostInput};
use cuzk_pipeline::JobOptions;
use rand::{RngCore, SeedableRng};

use crate::args::{EngineArgs, GenArgs};
use crate::context::kinds;
use crate::engine_run::prove_job;
use crate::input::write_json;

#[derive(Args)]
pub struct GenPostArgs {
    /// Writes `winning.json` and `window-<partition>.json` into `--out`; the seed fixes the
    /// sectors' contents and the randomness.
    #[command(flatten)]
    gen: GenArgs,
    /// Sectors to seal; the WindowPoSt files cover them all, one file per partition.
    #[arg(long, default_value_t = 3)]
    sectors: usize,
    /// Seal nothing: each sector is a sparse Merkle tree with random leaves at the challenged
    /// positions and zero elsewhere, so any sector size (32GiB, 64GiB) takes seconds. The
    /// requests pass the vanilla check and their proofs verify like a real sector's; for
    /// benchmarks (`bench post`) at sizes that cannot be sealed here.
    #[arg(long)]
    synthetic: bool,
}

pub fn gen(a: GenPostArgs) -> Result<ExitCode> {
    anyhow::ensure!(a.sectors > 0, "--sectors must be at least 1");
    let size = a.gen.prepare()?;
    let randomness = randomness(a.gen.seed);
    if a.synthetic {
        return gen_synthetic(&a, size, randomness);
    }
    let work = tempfile::Builder::new().prefix("cuzk-gen-post-").tempdir().context("creating a work directory")?;
    tracing::info!(sectors = a.sectors, size = %sector::size_name(size), "sealing");
    let sealed = SealedSectors::seal(size, a.sectors, a.gen.miner_id, a.gen.seed, work.path())?;
    let winning = sealed.winning_post(randomness)?;
    write_request(&a.gen.out.join("winning.json"), &winning)?;
    let per_partition = circuit::shape(winning_window(size)?)?.sectors_per_partition;
    let numbers: Vec<u64> = sealed.sectors.iter().map(|(n, _)| *n).collect();
    for (k, chunk) in numbers.chunks(per_partition).enumerate() {
        let window = sealed.window_post(randomness, k, chunk)?;
        write_request(&a.gen.out.join(format!("window-{k}.json")), &window)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The chain randomness of `seed`: 32 bytes that are a field element, as the chain's are.
fn randomness(seed: u64) -> [u8; 32] {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ 0x9057);
    let mut randomness = [0u8; 32];
    rng.fill_bytes(&mut randomness);
    randomness[31] &= 0x3f;
    randomness
}

/// `gen-post --synthetic`: the same files, from sparse trees instead of sealed sectors.
fn gen_synthetic(a: &GenPostArgs, size: u64, randomness: [u8; 32]) -> Result<ExitCode> {
    use cuzk_filecoin::post::{registry, synthetic};
    let started = std::time::Instant::now();
    let winning = synthetic::winning_post(registry::for_size(size, true)?, a.gen.miner_id, randomness, a.gen.seed)?;
    write_request(&a.gen.out.join("winning.json"), &winning)?;
    let rp = winning_window(size)?;
    let partitions = (a.sectors as u64).div_ceil(circuit::shape(rp)?.sectors_per_partition as u64);
    for k in 0..partitions as usize {
        let window = synthetic::window_post(rp, a.gen.miner_id, randomness, a.sectors as u64, k, a.gen.seed)?;
        write_request(&a.gen.out.join(format!("window-{k}.json")), &window)?;
    }
    tracing::info!(seconds = started.elapsed().as_secs_f64(), "synthetic PoSt requests written");
    Ok(ExitCode::SUCCESS)
}

fn winning_window(size: u64) -> Result<cuzk_filecoin::post::RegisteredPoStProof> {
    Ok(cuzk_filecoin::post::registry::for_size(size, false)?)
}

fn write_request(path: &Path, input: &PostInput) -> Result<()> {
    write_json(path, &input.to_file())?;
    println!(
        "wrote {} ({:?}, partition {}, sectors {})",
        path.display(),
        input.registered_proof,
        input.partition_index,
        sector_numbers(input)
    );
    Ok(())
}

/// The request's sector numbers, shortened to a range when there are many.
fn sector_numbers(input: &PostInput) -> String {
    let n: Vec<u64> = input.sectors.iter().map(|(n, _)| *n).collect();
    match n.as_slice() {
        [first, .., last] if n.len() > 8 => format!("{first}..={last} ({})", n.len()),
        _ => format!("{n:?}"),
    }
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
    let input = Arc::new(load(path)?);
    let started = std::time::Instant::now();
    let job = kinds().post.job(input.clone(), JobOptions { randomness: None, verify });
    let (proof, verified) = prove_job(engine, "proving PoSt", 1, job).with_context(|| path.display().to_string())?;
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
        if verified { format!(", verified with {verifier}") } else { ", NOT verified (--no-verify)".into() }
    );
    Ok(())
}
