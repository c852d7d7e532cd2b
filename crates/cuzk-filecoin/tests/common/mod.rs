//! What the Filecoin test files share: this process's settings applied, the PoRep kind, and
//! a proof through the pipeline engine on the CPU backend (the path every user runs).
#![allow(dead_code)]

pub mod mutate;

use std::sync::Arc;

use blstrs::Scalar;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorIdentity;
use cuzk_filecoin::porep::PorepInput;
use cuzk_filecoin::{PorepC2, Settings};
use cuzk_pipeline::{Config, Engine, JobOptions};

pub fn settings() -> Settings {
    Settings::from_vars(|k| std::env::var_os(k))
}

/// The PoRep kind with this process's directories (applied to filecoin-proofs first).
pub fn kind() -> Arc<PorepC2> {
    settings().apply().unwrap();
    Arc::new(PorepC2::with_settings(&settings()))
}

/// `c1` proved on the engine with the CPU backend; unverified, so that the caller judges it.
pub fn prove_on_engine(kind: &Arc<PorepC2>, c1: C1, identity: SectorIdentity, randomness: Option<Vec<(Scalar, Scalar)>>) -> Vec<u8> {
    let engine = Engine::start(Config::cpu(1, 8 << 30)).unwrap();
    let input = Arc::new(PorepInput { c1, identity });
    let out = engine.submit(kind.job(input, JobOptions { randomness, verify: false })).unwrap().wait();
    engine.shutdown();
    out.result.unwrap_or_else(|e| panic!("{}", e.chain()))
}
