//! One proof on the pipeline engine, for the commands that prove a single C1 (`prove`,
//! `demo`, `selftest`): the same job a daemon request or several `--c1` files become, on an
//! engine with one device, and the engine's per-stage figures of that proof.

use std::sync::Arc;

use anyhow::Result;
use cuzk_core::backend::Backend;
use cuzk_filecoin::porep::PorepInput;
use cuzk_pipeline::trace::{Event, StageSummary};
use cuzk_pipeline::{Config, Device, Engine, JobOptions};

/// A proof and where its time went.
pub struct EngineRun {
    pub proof: Vec<u8>,
    pub verified: bool,
    pub stages: Vec<StageSummary>,
    pub events: Vec<Event>,
}

/// Proves `input` on `backend` through the engine (one synthesis worker, one prover, the
/// default byte budget).
pub fn prove_one(backend: Arc<dyn Backend>, input: Arc<PorepInput>, opts: JobOptions) -> Result<EngineRun> {
    let mut cfg = Config::cpu(1, cuzk_pipeline::budget::default_budget());
    cfg.devices = vec![Device { name: backend.name().to_string(), backend }];
    let engine = Engine::start(cfg)?;
    let out = engine.submit(crate::context::kinds().porep.job(input, opts))?.wait();
    let events = engine.trace().events_of(out.id);
    let stages = engine.trace().stage_summaries(|e| e.proof == out.id);
    engine.shutdown();
    let proof = out.result.map_err(|e| anyhow::anyhow!(e.chain()))?;
    Ok(EngineRun { proof, verified: out.verified, stages, events })
}
