//! `cuzk bench post-load`: WinningPoSt latency (request in, verified proof out) while PoRep
//! sectors prove on the same engine and device, next to its latency on the idle engine. One
//! engine; a warm-up WinningPoSt and a warm-up PoRep sector first (parameters, PCE and device
//! uploads of both); then idle requests one after another; then PoRep sectors back to back
//! (two in the engine at all times) with one WinningPoSt every interval, submitted at
//! CRITICAL as the daemon submits them (PoRep at the default priority), each waited for
//! before the next. It proves nothing a user keeps.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use cuzk_filecoin::porep::PorepInput;
use cuzk_filecoin::post::PostInput;
use cuzk_gpu::WaitedFor;
use cuzk_pipeline::{Config, Device, Engine, JobOptions, Priority, Ticket};
use serde::Serialize;

use crate::bench::post::{stage_medians, stage_seconds};
use crate::context::kinds;

/// How to load the engine.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Loaded WinningPoSt requests to measure.
    pub requests: usize,
    /// Idle requests measured before the load.
    pub idle_requests: usize,
    /// Pause between a WinningPoSt's proof and the next request.
    pub interval: Duration,
    /// Partitions in witness synthesis at once.
    pub jobs: usize,
    pub provers_per_device: usize,
    pub budget_bytes: u64,
    /// The engine's urgent lane (see `cuzk_pipeline::Config::urgent_from`); off: urgent
    /// partitions wait for a free prover.
    pub urgent_lane: bool,
    /// Threads reserved for urgent partitions (see `cuzk_pipeline::Config::urgent_threads`).
    pub urgent_threads: usize,
    /// The MSM piece the device was opened with (`cuzk_gpu::GpuOptions::msm_piece_log2`),
    /// recorded in the report.
    pub msm_piece_log2: Option<u32>,
    /// The device's urgent grace (`cuzk_gpu::GpuOptions::urgent_grace_ms`), recorded.
    pub urgent_grace_ms: u32,
    /// Verify the PoRep proofs (a synthetic C1's never verify).
    pub porep_verify: bool,
}

/// The figures, in seconds.
#[derive(Clone, Debug, Serialize)]
pub struct PostLoadBench {
    pub registered_proof: String,
    pub porep_c1: String,
    pub backend: String,
    pub urgent_lane: bool,
    pub urgent_threads: usize,
    /// The device's MSM piece (2^k points per call; `None`: one call per MSM).
    pub msm_piece_log2: Option<u32>,
    pub urgent_grace_ms: u32,
    pub jobs: usize,
    pub provers_per_device: usize,
    pub idle_s: Vec<f64>,
    pub idle_p50_s: f64,
    pub loaded_s: Vec<f64>,
    pub loaded_p50_s: f64,
    pub loaded_p99_s: f64,
    pub loaded_max_s: f64,
    /// Per loaded request (in `loaded_s`'s order), seconds per engine stage (parse, witness,
    /// mat-vec, prove — device waits included —, finalize, and `waiting` between stages),
    /// plus `prove.device_wait`: the part of them its device calls spent waiting for the
    /// device lock (while bulk calls held it), `prove.device_wait_max`, the longest single
    /// wait, `prove.device_calls` the number of acquisitions, `prove.device_held` the
    /// seconds its calls held the device, and `prove.matrices_wait` its wait for the resident
    /// matrices' lock (held while another circuit's matrices upload; CUDA only).
    pub loaded_stages_s: Vec<BTreeMap<String, f64>>,
    /// The median of each stage over the loaded requests.
    pub loaded_stage_median_s: BTreeMap<String, f64>,
    /// The device's resident SRS sections and matrices after both warm-ups (WinningPoSt and
    /// PoRep together).
    pub resident_after_warmup: cuzk_core::backend::ResidentReport,
    /// The PoRep (NORMAL) device calls' record over the loaded phase: their number, lock
    /// waits and holds — `max_held_seconds` is the longest bulk call a WinningPoSt could have
    /// arrived during (CUDA only; zeros elsewhere).
    pub bulk_calls: cuzk_gpu::LockWaits,
    /// Seconds the loaded phase lasted, and the PoRep partitions whose prove stage ended in
    /// it: the sectors' throughput under WinningPoSt interference (partitions per second =
    /// their ratio), comparable between settings when sectors do not complete in the window.
    pub loaded_s_total: f64,
    pub porep_partitions_proved: usize,
    /// The eight longest device stages (as `bench partition` names them) of the loaded
    /// phase, PoRep's and WinningPoSt's together, in seconds: which bulk call a WinningPoSt
    /// can wait longest for (CUDA only).
    pub longest_device_stages: Vec<(String, f64)>,
    /// Time between successive PoRep sector completions while loaded requests ran (two
    /// sectors kept in the engine): the sector throughput under WinningPoSt interference.
    pub porep_sector_s: Vec<f64>,
}

/// The `q` quantile (nearest rank) of `v`.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len().max(1));
    s.get(rank - 1).copied().unwrap_or(f64::NAN)
}

/// Runs the benchmark on `device`.
pub fn run(post: PostInput, porep: Arc<PorepInput>, device: Device, o: &LoadOptions) -> Result<PostLoadBench> {
    let backend = device.backend.name().to_string();
    let resident = device.backend.clone();
    let mut cfg = Config::cpu(o.jobs, o.budget_bytes);
    cfg.devices = vec![device];
    cfg.provers_per_device = o.provers_per_device.max(1);
    if !o.urgent_lane {
        cfg.urgent_from = None;
    }
    cfg.urgent_threads = o.urgent_threads;
    let engine = Engine::start(cfg)?;
    let post = Arc::new(post);
    // The bulk (NORMAL) device calls' lock record over the loaded phase, gathered around each
    // WinningPoSt (taking the record resets it).
    let bulk = std::cell::Cell::new(cuzk_gpu::LockWaits::NONE);
    let add_bulk = |taken: Vec<(Priority, cuzk_gpu::LockWaits)>| {
        for (_, w) in taken.into_iter().filter(|(p, _)| *p == Priority::Normal) {
            bulk.set(bulk.get().merged(w));
        }
    };
    // One WinningPoSt: its seconds, and its seconds per engine stage.
    let winning = || -> Result<(f64, BTreeMap<String, f64>)> {
        add_bulk(cuzk_gpu::take_device_waits(WaitedFor::Device));
        drop(cuzk_gpu::take_device_waits(WaitedFor::Matrices));
        let t = Instant::now();
        let job = kinds().post.job(post.clone(), JobOptions { randomness: None, verify: true });
        let ticket = engine.submit_at(job, Priority::Critical)?;
        let id = ticket.id;
        let out = ticket.wait();
        let total_s = t.elapsed().as_secs_f64();
        out.result.map_err(|e| anyhow!("WinningPoSt: {}", e.chain()))?;
        anyhow::ensure!(out.verified, "the engine returned an unverified WinningPoSt proof");
        let mut stages = stage_seconds(&engine.trace().events_of(id), total_s);
        // Only this WinningPoSt works at CRITICAL, so those waits are its own.
        let waits = cuzk_gpu::take_device_waits(WaitedFor::Device);
        if let Some((_, w)) = waits.iter().find(|(p, _)| *p == Priority::Critical) {
            stages.insert("prove.device_wait".into(), w.seconds);
            stages.insert("prove.device_wait_max".into(), w.max_seconds);
            stages.insert("prove.device_calls".into(), w.acquisitions as f64);
            stages.insert("prove.device_held".into(), w.held_seconds);
        }
        add_bulk(waits);
        let matrices = cuzk_gpu::take_device_waits(WaitedFor::Matrices);
        if let Some((_, w)) = matrices.iter().find(|(p, _)| *p == Priority::Critical) {
            stages.insert("prove.matrices_wait".into(), w.seconds);
        }
        Ok((total_s, stages))
    };
    let porep_ids = std::cell::RefCell::new(Vec::new());
    let sector = || -> Result<Ticket> {
        let opts = JobOptions { randomness: None, verify: o.porep_verify };
        let ticket = engine.submit(kinds().porep.job(porep.clone(), opts))?;
        porep_ids.borrow_mut().push(ticket.id);
        Ok(ticket)
    };
    let finished = |ticket: Ticket| -> Result<()> { ticket.wait().result.map(drop).map_err(|e| anyhow!("PoRep sector: {}", e.chain())) };
    tracing::info!("warm-up: one WinningPoSt and one PoRep sector");
    winning().context("warm-up")?;
    finished(sector()?).context("warm-up")?;
    let resident_after_warmup = resident.resident_report();
    let idle_s = (0..o.idle_requests.max(1)).map(|_| winning().map(|(s, _)| s)).collect::<Result<Vec<_>>>()?;
    tracing::info!(idle_p50_s = quantile(&idle_s, 0.5), "idle latency measured; loading the engine");

    // Two sectors in the engine at all times, so the device never waits for a sector's parse.
    let (mut loaded_s, mut loaded_stages_s, mut porep_sector_s) = (Vec::new(), Vec::new(), Vec::new());
    let mut in_engine: VecDeque<Ticket> = (0..2).map(|_| sector()).collect::<Result<_>>()?;
    bulk.set(cuzk_gpu::LockWaits::NONE);
    drop(cuzk_gpu::take_stage_log());
    let loaded_from = engine.trace().mark("loaded phase begins").t_s;
    let mut last_done = Instant::now();
    while loaded_s.len() < o.requests {
        std::thread::sleep(o.interval);
        while let Some(out) = in_engine.front().and_then(|t| t.wait_timeout(Duration::ZERO)) {
            out.result.map_err(|e| anyhow!("PoRep sector: {}", e.chain()))?;
            porep_sector_s.push(last_done.elapsed().as_secs_f64());
            last_done = Instant::now();
            in_engine.pop_front();
            in_engine.push_back(sector()?);
        }
        let (seconds, stages) = winning()?;
        tracing::info!(request = loaded_s.len() + 1, seconds, ?stages, "WinningPoSt under load");
        loaded_s.push(seconds);
        loaded_stages_s.push(stages);
    }
    add_bulk(cuzk_gpu::take_device_waits(WaitedFor::Device));
    let bulk_calls = bulk.get();
    let loaded_to = engine.trace().mark("loaded phase ends").t_s;
    let porep_partitions_proved = porep_partitions_between(&engine.trace().events(), &porep_ids.borrow(), loaded_from, loaded_to);
    let mut longest_device_stages = cuzk_gpu::take_stage_log();
    longest_device_stages.sort_by(|a, b| b.1.total_cmp(&a.1));
    longest_device_stages.truncate(8);
    for t in in_engine {
        finished(t)?;
    }
    engine.shutdown();
    Ok(PostLoadBench {
        registered_proof: format!("{:?}", post.registered_proof),
        porep_c1: porep.c1.path.display().to_string(),
        backend,
        urgent_lane: o.urgent_lane,
        urgent_threads: o.urgent_threads,
        msm_piece_log2: o.msm_piece_log2,
        urgent_grace_ms: o.urgent_grace_ms,
        jobs: o.jobs,
        provers_per_device: o.provers_per_device,
        idle_p50_s: quantile(&idle_s, 0.5),
        idle_s,
        loaded_p50_s: quantile(&loaded_s, 0.5),
        loaded_p99_s: quantile(&loaded_s, 0.99),
        loaded_max_s: loaded_s.iter().copied().fold(0.0, f64::max),
        loaded_s,
        loaded_stage_median_s: stage_medians(&loaded_stages_s),
        loaded_stages_s,
        resident_after_warmup,
        bulk_calls,
        longest_device_stages,
        loaded_s_total: loaded_to - loaded_from,
        porep_partitions_proved,
        porep_sector_s,
    })
}

/// How many `prove` events of the jobs `ids` ended in (`from`, `to`].
fn porep_partitions_between(events: &[cuzk_pipeline::trace::Event], ids: &[u64], from: f64, to: f64) -> usize {
    events.iter().filter(|e| e.stage == "prove" && ids.contains(&e.proof) && e.end_s > from && e.end_s <= to).count()
}

#[cfg(test)]
mod tests {
    use super::{porep_partitions_between, quantile};
    use cuzk_pipeline::trace::Event;

    #[test]
    fn partitions_are_counted_by_job_stage_and_window() {
        let e = |stage: &'static str, proof: u64, end_s: f64| Event {
            stage,
            proof,
            partition: 0,
            lane: String::new(),
            device: String::new(),
            start_s: end_s - 1.0,
            end_s,
            rss_end_bytes: 0,
        };
        let events =
            [e("prove", 1, 5.0), e("prove", 1, 11.0), e("witness", 1, 6.0), e("prove", 2, 6.0), e("prove", 3, 7.0), e("prove", 1, 10.0)];
        // Job 2 is not PoRep; 5.0 is at the open end of the window, 11.0 past it.
        assert_eq!(porep_partitions_between(&events, &[1, 3], 5.0, 10.0), 2);
        assert_eq!(porep_partitions_between(&events, &[], 0.0, 100.0), 0);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 10.0);
        assert_eq!(quantile(&v, 0.99), 20.0);
        assert_eq!(quantile(&v, 0.95), 19.0);
        assert_eq!(quantile(&[3.0], 0.99), 3.0);
    }
}
