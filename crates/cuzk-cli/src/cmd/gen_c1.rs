//! `cuzk gen-c1`: a C1 file plus its `.meta.json`, sealed for real by filecoin-proofs or, with
//! `--synthetic`, made with the real structure and random contents. It must not know proving.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use cuzk_filecoin::porep::seal;
use cuzk_filecoin::porep::sector::{self, SectorIdentity};

#[derive(Args)]
pub struct GenC1Args {
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
    /// partitions, challenges, parents and tree shapes, for the --porep-variant given) with
    /// random contents, made in seconds even for 32 GiB. Its circuits synthesize at full size
    /// but are NOT satisfied: no proof of it verifies. For benchmarks and exactness checks only.
    #[arg(long)]
    synthetic: bool,
    /// Seal under this PoRep variant: `v1_1` (interactive PoRep, what most sectors use),
    /// `synthetic-porep` (`..._Feat_SyntheticPoRep`: challenges drawn from proofs stored at
    /// pre-commit, generated here as filecoin-proofs requires) or `ni-porep`
    /// (`..._V1_2_Feat_NonInteractivePoRep`: challenges derived from the sector alone, more
    /// partitions, the proof a SnarkPack aggregate of them). All prove the same circuit.
    #[arg(long, default_value = "v1_1", value_parser = ["v1_1", "synthetic-porep", "ni-porep"])]
    porep_variant: String,
}

pub fn run(a: GenC1Args) -> Result<ExitCode> {
    let size = sector::parse_sector_size(&a.sector_size)?;
    // filecoin-ffi numbers the synthetic-PoRep types 10-14 and the non-interactive ones 15-19,
    // in the order of sector::SIZES.
    let at = sector::SIZES.iter().position(|(_, b)| *b == size).unwrap_or(0) as u64;
    let rp = match a.porep_variant.as_str() {
        "synthetic-porep" => cuzk_filecoin::curio::from_number(10 + at)?,
        "ni-porep" => cuzk_filecoin::curio::from_number(15 + at)?,
        _ => sector::registered_proof(size)?,
    };
    if a.synthetic {
        let command = format!(
            "cuzk gen-c1 --synthetic --sector-size {} --porep-variant {} --seed {} --out {}",
            sector::size_name(size),
            a.porep_variant,
            a.seed,
            a.out.display()
        );
        let t = std::time::Instant::now();
        let meta = cuzk_filecoin::porep::synthetic::write(rp, a.seed, &a.out, &command)?;
        println!(
            "wrote {}/c1.json and c1.meta.json ({:?}) in {:.1} s: SYNTHETIC — random contents, its circuits are not satisfied and no proof of it verifies",
            a.out.display(),
            meta.registered_proof,
            t.elapsed().as_secs_f64()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let command = format!(
        "cuzk gen-c1 --sector-size {} --porep-variant {} --seed {} --miner-id {} --sector-number {} --out {}",
        sector::size_name(size),
        a.porep_variant,
        a.seed,
        a.miner_id,
        a.sector_number,
        a.out.display()
    );
    let identity = SectorIdentity { miner_id: a.miner_id, sector_number: a.sector_number };
    let meta = seal::gen_c1_as(rp, a.seed, identity, &a.out, &command)?;
    println!("wrote {}/c1.json and c1.meta.json ({:?}, comm_r {})", a.out.display(), meta.registered_proof, meta.comm_r);
    Ok(ExitCode::SUCCESS)
}
