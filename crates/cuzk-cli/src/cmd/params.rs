//! `cuzk params`: Groth16 parameter files of a sector size (or of a PoSt or update proof) made (insecure test parameters),
//! checked or located. [`ensure_params`] is shared with `demo`. It must not know proving.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use cuzk_core::{mem, params};
use cuzk_filecoin::porep::params::ParamPaths;
use cuzk_filecoin::porep::test_params::Ensured;
use cuzk_filecoin::porep::RegisteredSealProof;
use cuzk_filecoin::post::{circuit, registry};
use cuzk_filecoin::update;

use crate::args::proof_for;
use crate::context::{kinds, rayon_threads};

/// Which parameter set: PoRep's of a sector size, or a registered PoSt proof's.
#[derive(clap::Args)]
pub struct Which {
    /// The sector size of the PoRep parameters (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
    #[arg(long, required_unless_present_any = ["post", "update"], conflicts_with_all = ["post", "update"])]
    sector_size: Option<String>,
    /// Instead, the parameters of this registered PoSt proof, by its lotus number (0–4
    /// WinningPoSt 2KiB…64GiB, 5–9 WindowPoSt V1, 10–14 WindowPoSt V1_1 as lotus names them).
    #[arg(long, conflicts_with = "update")]
    post: Option<u64>,
    /// Instead, the parameters of this registered update proof (SnapDeals), by its lotus
    /// number (0–4: 2KiB…64GiB); their files are named after the update circuit.
    #[arg(long)]
    update: Option<u64>,
}

impl Which {
    fn paths(&self) -> Result<ParamPaths> {
        if let Some(n) = self.update {
            return Ok(update::circuit::param_paths(update::registry::from_number(n)?)?);
        }
        match (&self.sector_size, self.post) {
            (_, Some(n)) => Ok(circuit::param_paths(registry::from_number(n)?)?),
            (Some(size), None) => Ok(ParamPaths::for_proof(proof_for(size)?)?),
            (None, None) => anyhow::bail!("--sector-size or --post is required"),
        }
    }
}

#[derive(Subcommand)]
pub enum ParamsCmd {
    /// Make insecure TEST parameters (.params, .vk, .meta) if none exist; check them if they do.
    Ensure {
        #[command(flatten)]
        which: Which,
        /// Seed for the trapdoor (default: OS randomness).
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Check the parameter and verifying-key files of a sector size (or PoSt proof) structurally.
    Check {
        #[command(flatten)]
        which: Which,
    },
    /// Print the parameter file paths of a sector size (or PoSt proof).
    Path {
        #[command(flatten)]
        which: Which,
    },
}

pub fn run(p: ParamsCmd) -> Result<ExitCode> {
    match p {
        ParamsCmd::Ensure { which, seed } => match (which.update, which.post, &which.sector_size) {
            (Some(n), _, _) => {
                let rp = update::registry::from_number(n)?;
                report(&which.paths()?, kinds().update.ensure_test_params(rp, seed)?);
                Ok(ExitCode::SUCCESS)
            }
            (None, Some(n), _) => {
                let rp = registry::from_number(n)?;
                report(&which.paths()?, kinds().post.ensure_test_params(rp, seed)?);
                Ok(ExitCode::SUCCESS)
            }
            (None, None, Some(size)) => ensure_params(proof_for(size)?, seed).map(|()| ExitCode::SUCCESS),
            (None, None, None) => anyhow::bail!("--sector-size, --post or --update is required"),
        },
        ParamsCmd::Check { which } => {
            let paths = which.paths()?;
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
        ParamsCmd::Path { which } => {
            let paths = which.paths()?;
            println!("{}\n{}\n{}", paths.params.display(), paths.vk.display(), paths.meta.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Makes insecure test parameters for `rp` unless they exist (then checks them); prints which.
pub fn ensure_params(rp: RegisteredSealProof, seed: Option<u64>) -> Result<()> {
    let paths = ParamPaths::for_proof(rp)?;
    report(&paths, cuzk_filecoin::porep::test_params::ensure(&kinds().porep, rp, seed)?);
    Ok(())
}

/// Prints what [`cuzk_filecoin::porep::test_params::ensure_files`] found or made.
fn report(paths: &ParamPaths, ensured: Ensured) {
    match ensured {
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
}
