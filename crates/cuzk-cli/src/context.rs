//! The process's configuration, set once by `main` before any command runs: the proof kinds
//! and the settings read from the environment, plus the machine's thread count. Commands read
//! it through [`kinds`] and [`settings`]; this module knows nothing of arguments or commands.

use std::sync::OnceLock;

use cuzk_filecoin::{Kinds, Settings};

/// The process's proof kinds, configured once in `main`'s `run` from the environment.
static KINDS: OnceLock<Kinds> = OnceLock::new();
static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// Records the kinds and the (already applied) settings; the first call wins.
pub fn init(kinds: Kinds, settings: Settings) {
    KINDS.get_or_init(|| kinds);
    SETTINGS.get_or_init(|| settings);
}

pub fn kinds() -> &'static Kinds {
    KINDS.get().expect("kinds are configured before any command runs")
}

pub fn settings() -> &'static Settings {
    SETTINGS.get().expect("settings are applied before any command runs")
}

pub fn rayon_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// `srs` as bellperson's decoded parameters (what its own prover reads): borrowed when
/// decoded, else decoded now from `rp`'s parameter file.
pub fn decoded(
    srs: &cuzk_core::srs::Srs,
    rp: cuzk_filecoin::porep::RegisteredSealProof,
) -> anyhow::Result<std::borrow::Cow<'_, bellperson::groth16::Parameters<blstrs::Bls12>>> {
    Ok(match srs.as_decoded() {
        Some(p) => std::borrow::Cow::Borrowed(p),
        None => std::borrow::Cow::Owned(cuzk_filecoin::porep::params::load(rp)?.0),
    })
}
