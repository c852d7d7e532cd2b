//! `cuzk verify`: a seal proof checked with filecoin-proofs' verify_seal; VALID exits 0,
//! INVALID exits 1. It must not know how proofs are made.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use cuzk_filecoin::porep::verify::{self, Verdict};

use crate::args::SectorArgs;
use crate::input::load_input;

#[derive(Args)]
pub struct VerifyArgs {
    #[arg(long)]
    c1: PathBuf,
    /// The proof bytes to verify.
    #[arg(long)]
    proof: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
}

pub fn run(a: VerifyArgs) -> Result<ExitCode> {
    let (c1, identity) = load_input(&a.c1, &a.sector)?;
    let proof = std::fs::read(&a.proof).with_context(|| format!("{}: cannot read proof", a.proof.display()))?;
    match verify::verify_seal(&c1, &identity, &proof)? {
        Verdict::Valid => {
            println!("VALID");
            Ok(ExitCode::SUCCESS)
        }
        Verdict::Invalid(why) => {
            println!("INVALID: {why}");
            Ok(ExitCode::from(1))
        }
    }
}
