//! `cuzk bench post`: one PoSt request proved again and again, warm, by cuzk's engine (one
//! engine started once; parameters and PCE resident after the warm-up) and by filecoin-proofs'
//! own prover (`generate_winning_post_with_vanilla` / `generate_single_window_post_with_vanilla`,
//! its parameter cache warm after the warm-up), alternating, in one process on one machine;
//! every proof of both checked with the official verifier. Request in, verified proof out.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Result};
use cuzk_filecoin::post::{reference_prover, verify, PostInput};
use cuzk_pipeline::{Config, Device, Engine, JobOptions, Priority};
use serde::Serialize;

use crate::context::{kinds, rayon_threads};

/// One `bench post` run: latencies in seconds, warm-up excluded.
#[derive(Clone, Debug, Serialize)]
pub struct PostBench {
    pub registered_proof: String,
    pub sectors: usize,
    pub backend: String,
    pub threads: usize,
    pub runs: usize,
    /// cuzk: request submitted to the engine → verified proof bytes, each run.
    pub cuzk_s: Vec<f64>,
    /// filecoin-proofs' prover, then the official verifier, each run.
    pub filecoin_proofs_s: Vec<f64>,
    pub cuzk_median_s: f64,
    pub filecoin_proofs_median_s: f64,
    /// filecoin-proofs median / cuzk median.
    pub ratio: f64,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// filecoin-proofs' proof of `input`, verified.
fn filecoin_proofs(input: &PostInput) -> Result<Vec<u8>> {
    let proof = reference_prover::prove(input)?;
    verify::ensure_valid(input, &proof)?;
    Ok(proof)
}

/// Runs the benchmark: one warm-up each, then `runs` alternating pairs.
pub fn run(input: PostInput, backend: Arc<dyn cuzk_core::backend::Backend>, runs: usize) -> Result<PostBench> {
    let input = Arc::new(input);
    let mut cfg = Config::cpu(1, cuzk_pipeline::budget::default_budget());
    let name = backend.name().to_string();
    cfg.devices = vec![Device { name: name.clone(), backend }];
    let engine = Engine::start(cfg)?;
    let ours = || -> Result<f64> {
        let t = Instant::now();
        let job = kinds().post.job(input.clone(), JobOptions { randomness: None, verify: true });
        let out = engine.submit_at(job, Priority::Critical)?.wait();
        out.result.map_err(|e| anyhow!(e.chain()))?;
        anyhow::ensure!(out.verified, "the engine returned an unverified proof");
        Ok(t.elapsed().as_secs_f64())
    };
    let theirs = || -> Result<f64> {
        let t = Instant::now();
        filecoin_proofs(&input)?;
        Ok(t.elapsed().as_secs_f64())
    };
    tracing::info!("warm-up: one proof each (loads parameters and PCE)");
    ours()?;
    theirs()?;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        a.push(ours()?);
        b.push(theirs()?);
    }
    engine.shutdown();
    let (cuzk_median_s, filecoin_proofs_median_s) = (median(&a), median(&b));
    Ok(PostBench {
        registered_proof: format!("{:?}", input.registered_proof),
        sectors: input.sectors.len(),
        backend: name,
        threads: rayon_threads(),
        runs: a.len(),
        cuzk_s: a,
        filecoin_proofs_s: b,
        cuzk_median_s,
        filecoin_proofs_median_s,
        ratio: filecoin_proofs_median_s / cuzk_median_s,
    })
}
