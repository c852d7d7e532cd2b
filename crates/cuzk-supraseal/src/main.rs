//! `cuzk-supraseal`: the side-by-side harness for SupraSeal C2 (crate `supraseal-c2`, the GPU
//! prover behind bellperson's `cuda-supraseal` feature). For one C1 it proves every partition
//! with SupraSeal twice per round — once fed by the old path (bellperson-style full synthesis,
//! i.e. what SupraSeal C2 does end to end) and once fed by cuzk's witness + PCE mat-vec — with
//! the same parameters file and the same (r, s) as a cuzk CPU-backend reference proof, and
//! requires all three proofs to be byte-identical and to pass `verify_seal`. It times each
//! stage of each round (first round cold: SRS upload and kernel JIT), so cuzk's GPU prover
//! (`cuzk selftest`, same machine, same command) can be compared stage against stage. It is
//! a separate binary because SupraSeal and cuzk-gpu each carry a copy of sppark's kernels.
//! Partition mode proves one partition of a C1 or of a SnapDeals request under a given
//! `.params` file (the random 32 GiB SRS `cuzk bench partition --write-params` wrote) with
//! that bench's (r, s), and compares the proof with the one cuzk made there.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "cuzk-supraseal",
    version,
    about = "SupraSeal C2 side by side with cuzk on the same C1, parameters and (r, s)",
    long_about = "Proves one C1 with SupraSeal's GPU prover, fed first by the old path \
                  (full bellperson-style synthesis: SupraSeal C2 end to end) and then by cuzk's \
                  witness + PCE mat-vec; every proof must equal the cuzk CPU-backend proof made \
                  with the same (r, s) and pass verify_seal. Needs a binary built with \
                  `cargo xtask build --supraseal` and an NVIDIA GPU. The parameters must exist \
                  (`cuzk params ensure --sector-size 2KiB`); the PCE cache is made if missing. \
                  Partition mode (--partition, --params) proves one partition of a C1 or of a \
                  SnapDeals request (--update) under a given parameters file."
)]
struct Args {
    /// C1 output (JSON); its `.meta.json` must sit next to it.
    #[arg(long, required_unless_present = "update", conflicts_with = "update")]
    c1: Option<PathBuf>,
    /// A SnapDeals request (`cuzk gen-update`'s file) instead of a C1: partition mode only
    /// (one of its partitions through SupraSeal's prover, as filecoin-proofs'
    /// `cuda-supraseal` proves updates).
    #[arg(long, requires = "partition")]
    update: Option<PathBuf>,
    /// Rounds; the first one is cold (SRS upload, kernel JIT) and is left out of the medians.
    #[arg(long, default_value_t = 4)]
    repeats: usize,
    /// Seed of the (r, s) pairs.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Write the report as JSON here (atomically).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Partition mode: prove only this partition with SupraSeal under the `.params` file
    /// given by --params (e.g. the random 32 GiB SRS `cuzk bench partition --write-params`
    /// wrote), fed by cuzk's witness and CPU mat-vec, with the (r, s) drawn from --seed as
    /// `cuzk bench partition --rs-seed` draws it. No reference proof, no verify_seal (random
    /// parameters never verify); with --expect, the proof must equal that report's.
    #[arg(long, requires = "params")]
    partition: Option<usize>,
    /// The parameters file for partition mode.
    #[arg(long)]
    params: Option<PathBuf>,
    /// A `cuzk bench partition --json` report whose proof SupraSeal's must equal.
    #[arg(long, requires = "partition")]
    expect: Option<PathBuf>,
}

/// Packs per-variable flags into 64-bit words, bit i in word i / 64 (bellperson's and the
/// PCE's density layout).
pub fn pack_bits(flags: &[bool]) -> Vec<u64> {
    let mut words = vec![0u64; flags.len().div_ceil(64)];
    for (i, _) in flags.iter().enumerate().filter(|(_, f)| **f) {
        words[i / 64] |= 1 << (i % 64);
    }
    words
}

/// The median of the values (NaN when empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(feature = "supraseal")]
mod harness;

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
    let args = Args::parse();
    #[cfg(feature = "supraseal")]
    {
        let result = if args.partition.is_some() { harness::run_partition(&args) } else { harness::run(&args) };
        match result {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        }
    }
    #[cfg(not(feature = "supraseal"))]
    {
        let _ = (&args.c1, &args.update, args.repeats, args.seed, &args.json, args.partition, &args.params, &args.expect);
        eprintln!("error: cuzk-supraseal was built without SupraSeal; build it with `cargo xtask build --supraseal`");
        ExitCode::from(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_flags_read_back_through_the_pce_bit_accessor() {
        let flags: Vec<bool> = (0..300).map(|i| (i * 7919) % 5 < 2).collect();
        let words = pack_bits(&flags);
        assert_eq!(words.len(), 5);
        for (i, f) in flags.iter().enumerate() {
            assert_eq!(cuzk_pce::matrix::bit(&words, i), *f, "bit {i}");
        }
        assert_eq!(cuzk_pce::matrix::popcount(&words), flags.iter().filter(|f| **f).count());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
        assert!(median(Vec::new()).is_nan());
    }
}
