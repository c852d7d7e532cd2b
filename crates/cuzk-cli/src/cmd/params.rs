//! `cuzk params`: Groth16 parameter files of a sector size made (insecure test parameters),
//! checked or located. [`ensure_params`] is shared with `demo`. It must not know proving.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use cuzk_core::{mem, params};
use cuzk_filecoin::porep::params::ParamPaths;
use cuzk_filecoin::porep::test_params::Ensured;
use cuzk_filecoin::porep::RegisteredSealProof;

use crate::args::proof_for;
use crate::context::{kinds, rayon_threads};

#[derive(Subcommand)]
pub enum ParamsCmd {
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

pub fn run(p: ParamsCmd) -> Result<ExitCode> {
    match p {
        ParamsCmd::Ensure { sector_size, seed } => ensure_params(proof_for(&sector_size)?, seed).map(|()| ExitCode::SUCCESS),
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
            Ok(ExitCode::SUCCESS)
        }
        ParamsCmd::Path { sector_size } => {
            let paths = ParamPaths::for_proof(proof_for(&sector_size)?)?;
            println!("{}\n{}\n{}", paths.params.display(), paths.vk.display(), paths.meta.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Makes insecure test parameters for `rp` unless they exist (then checks them); prints which.
pub fn ensure_params(rp: RegisteredSealProof, seed: Option<u64>) -> Result<()> {
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
