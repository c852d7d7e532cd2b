//! One proof on the pipeline engine, for the commands that prove a single C1 (`prove`,
//! `demo`, `selftest`): the same job a daemon request or several `--c1` files become, on an
//! engine with one device, and the engine's per-stage figures of that proof.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use cuzk_core::backend::Backend;
use cuzk_core::progress::Progress;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::PorepInput;
use cuzk_pipeline::trace::{Event, StageSummary, Trace};
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
    let watch = PartitionWatch::start(engine.trace().clone(), "proving", partitions_of(&input.c1));
    let out = engine.submit(crate::context::kinds().porep.job(input, opts))?.wait();
    drop(watch);
    let events = engine.trace().events_of(out.id);
    let stages = engine.trace().stage_summaries(|e| e.proof == out.id);
    engine.shutdown();
    let proof = out.result.map_err(|e| anyhow::anyhow!(e.chain()))?;
    Ok(EngineRun { proof, verified: out.verified, stages, events })
}

/// One job (a PoSt or SnapDeals request) proved on an engine with `engine`'s backend, with
/// progress over its `partitions`: the proof and whether it was verified.
pub fn prove_job(engine: &crate::args::EngineArgs, task: &str, partitions: u64, job: cuzk_pipeline::JobSource) -> Result<(Vec<u8>, bool)> {
    anyhow::ensure!(engine.engine == crate::args::Engine::Pce, "{task} runs on the pipeline engine only (--engine pce)");
    let backend = crate::args::make_backend(engine.backend)?;
    let mut cfg = Config::cpu(1, cuzk_pipeline::budget::default_budget());
    cfg.devices = vec![Device { name: backend.name().to_string(), backend }];
    let engine = Engine::start(cfg)?;
    let watch = PartitionWatch::start(engine.trace().clone(), task, partitions);
    let done = engine.submit(job)?.wait();
    drop(watch);
    engine.shutdown();
    let proof = done.result.map_err(|e| anyhow::anyhow!(e.chain()))?;
    Ok((proof, done.verified))
}

/// The partitions a C1 is proved in.
pub fn partitions_of(c1: &C1) -> u64 {
    usize::from(c1.porep_config().partitions) as u64
}

/// Reports the partitions proved on an engine (its trace's `prove` events) as progress, from
/// a thread polling the trace, until dropped.
pub struct PartitionWatch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PartitionWatch {
    /// Starts reporting `task`, out of `total` partitions.
    pub fn start(trace: Arc<Trace>, task: &str, total: u64) -> PartitionWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, task) = (stop.clone(), task.to_string());
        let thread = std::thread::Builder::new()
            .name("cuzk-progress".into())
            .spawn(move || {
                let progress = Progress::start(task, "partitions", total);
                loop {
                    let done = flag.load(Ordering::Relaxed);
                    progress.set(partitions_proved(&trace));
                    if done {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
            .ok();
        PartitionWatch { stop, thread }
    }
}

/// Distinct (proof, partition) pairs with a `prove` event: a partition retried on the CPU
/// after a device failure has two.
fn partitions_proved(trace: &Trace) -> u64 {
    let proved: std::collections::HashSet<(u64, usize)> =
        trace.events().iter().filter(|e| e.stage == "prove").map(|e| (e.proof, e.partition)).collect();
    proved.len() as u64
}

impl Drop for PartitionWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
