//! `cuzk bench post`: one PoSt request proved again and again, warm, by cuzk's engine (one
//! engine started once; parameters and PCE resident after the warm-up) and by filecoin-proofs'
//! own prover (`generate_winning_post_with_vanilla` / `generate_single_window_post_with_vanilla`,
//! its parameter cache warm after the warm-up), alternating, in one process on one machine;
//! every proof of both checked with the official verifier. Request in, verified proof out.

use std::collections::BTreeMap;
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
    /// The engine's urgent-lane pool (`Config::urgent_threads`; 0: the process-wide pool).
    pub urgent_threads: usize,
    pub runs: usize,
    /// cuzk: request submitted to the engine → verified proof bytes, each run.
    pub cuzk_s: Vec<f64>,
    /// filecoin-proofs' prover, then the official verifier, each run.
    pub filecoin_proofs_s: Vec<f64>,
    pub cuzk_median_s: f64,
    pub filecoin_proofs_median_s: f64,
    /// filecoin-proofs median / cuzk median.
    pub ratio: f64,
    /// cuzk's median seconds per engine stage (parse: decode, vanilla check and circuit;
    /// witness; mat-vec; prove; finalize: assembly and the official verifier) and `waiting`:
    /// the rest of each run (queues and hand-overs between stages).
    pub cuzk_stage_median_s: BTreeMap<String, f64>,
}

/// Seconds per stage of one job's trace events, plus `waiting` = `total_s` minus their sum.
pub(crate) fn stage_seconds(events: &[cuzk_pipeline::trace::Event], total_s: f64) -> BTreeMap<String, f64> {
    let mut by_stage = BTreeMap::new();
    for e in events {
        *by_stage.entry(e.stage.to_string()).or_insert(0.0) += e.end_s - e.start_s;
    }
    let busy: f64 = by_stage.values().sum();
    by_stage.insert("waiting".into(), (total_s - busy).max(0.0));
    by_stage
}

/// The median of each stage over runs (a stage missing from a run counts as 0 there).
pub(crate) fn stage_medians(runs: &[BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let names: std::collections::BTreeSet<&String> = runs.iter().flat_map(|r| r.keys()).collect();
    names.into_iter().map(|n| (n.clone(), median(&runs.iter().map(|r| r.get(n).copied().unwrap_or(0.0)).collect::<Vec<_>>()))).collect()
}

/// The upper median (the middle value of an odd count, the upper middle of an even one).
pub(crate) fn median(v: &[f64]) -> f64 {
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
pub fn run(
    input: PostInput,
    backend: Arc<dyn cuzk_core::backend::Backend>,
    runs: usize,
    urgent_threads: Option<usize>,
) -> Result<PostBench> {
    let input = Arc::new(input);
    let mut cfg = Config::cpu(1, cuzk_pipeline::budget::default_budget());
    if let Some(n) = urgent_threads {
        cfg.urgent_threads = n;
    }
    let urgent_threads = cfg.urgent_threads;
    let name = backend.name().to_string();
    cfg.devices = vec![Device { name: name.clone(), backend }];
    let engine = Engine::start(cfg)?;
    let ours = || -> Result<(f64, BTreeMap<String, f64>)> {
        let t = Instant::now();
        let job = kinds().post.job(input.clone(), JobOptions { randomness: None, verify: true });
        let ticket = engine.submit_at(job, Priority::Critical)?;
        let id = ticket.id;
        let out = ticket.wait();
        let total_s = t.elapsed().as_secs_f64();
        out.result.map_err(|e| anyhow!(e.chain()))?;
        anyhow::ensure!(out.verified, "the engine returned an unverified proof");
        Ok((total_s, stage_seconds(&engine.trace().events_of(id), total_s)))
    };
    let theirs = || -> Result<f64> {
        let t = Instant::now();
        filecoin_proofs(&input)?;
        Ok(t.elapsed().as_secs_f64())
    };
    tracing::info!("warm-up: one proof each (loads parameters and PCE)");
    ours()?;
    theirs()?;
    let (mut a, mut b, mut stages) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let (total_s, by_stage) = ours()?;
        a.push(total_s);
        stages.push(by_stage);
        b.push(theirs()?);
    }
    engine.shutdown();
    let (cuzk_median_s, filecoin_proofs_median_s) = (median(&a), median(&b));
    Ok(PostBench {
        registered_proof: format!("{:?}", input.registered_proof),
        sectors: input.sectors.len(),
        backend: name,
        threads: rayon_threads(),
        urgent_threads,
        runs: a.len(),
        cuzk_s: a,
        filecoin_proofs_s: b,
        cuzk_median_s,
        filecoin_proofs_median_s,
        ratio: filecoin_proofs_median_s / cuzk_median_s,
        cuzk_stage_median_s: stage_medians(&stages),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_pipeline::trace::Event;

    fn event(stage: &'static str, start_s: f64, end_s: f64) -> Event {
        Event { stage, proof: 1, partition: 0, lane: String::new(), device: String::new(), start_s, end_s, rss_end_bytes: 0 }
    }

    #[test]
    fn stage_seconds_sum_each_stage_and_leave_the_rest_as_waiting() {
        let ev = [event("parse", 0.0, 0.5), event("witness", 0.6, 0.8), event("witness", 0.7, 0.9), event("prove", 1.0, 1.5)];
        let s = stage_seconds(&ev, 2.0);
        assert!((s["parse"] - 0.5).abs() < 1e-9);
        assert!((s["witness"] - 0.4).abs() < 1e-9);
        assert!((s["prove"] - 0.5).abs() < 1e-9);
        assert!((s["waiting"] - 0.6).abs() < 1e-9);
        let m = stage_medians(&[s, stage_seconds(&ev[..1], 1.0), stage_seconds(&ev[..1], 3.0)]);
        assert!((m["parse"] - 0.5).abs() < 1e-9);
        assert_eq!(m["prove"], 0.0, "a stage absent from most runs has median 0");
        assert!((m["waiting"] - 0.6).abs() < 1e-9, "{m:?}");
    }
}
