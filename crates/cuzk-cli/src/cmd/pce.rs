//! `cuzk pce extract`: the Pre-Compiled Constraint Evaluator cache of a C1's circuit built (or
//! loaded) and described: counts, densities, bytes per non-zero, extraction and load times.
//! It must not know proving.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use cuzk_core::mem;

use crate::args::SectorArgs;
use crate::context::kinds;
use crate::input::load_input;

#[derive(Subcommand)]
pub enum PceCmd {
    /// Build or load the PCE cache for the circuit of a C1 file and print counts, densities,
    /// bytes per non-zero, extraction time and cache load time.
    Extract {
        #[arg(long)]
        c1: PathBuf,
        #[command(flatten)]
        sector: SectorArgs,
    },
}

/// What the published PCE stores for one 32 GiB partition (non-zeros), for extrapolation.
const PUBLISHED_32GIB_NNZ: f64 = 722_388_891.0;

pub fn run(p: PceCmd) -> Result<ExitCode> {
    let PceCmd::Extract { c1, sector } = p;
    let (c1, _) = load_input(&c1, &sector)?;
    let rp = c1.registered_proof;
    let kind = &kinds().porep;
    let id = cuzk_pipeline::ProofKind::circuit_id(kind.as_ref(), &rp);
    let path = cuzk_pipeline::resources::pce_cache_path(cuzk_pipeline::ProofKind::pce_cache_dir(kind.as_ref()), &id);
    // A fresh process: the PCE comes from the cache file or is extracted (and cached) now.
    let (pce, outcome) = kind.shared_pce(rp)?;
    let outcome = outcome.context("the PCE was already resident in this process")?;
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
    Ok(ExitCode::SUCCESS)
}
