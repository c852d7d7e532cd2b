//! The job table and the priority queues in front of the pipeline engine. A submission is
//! checked (kind, C1, sector size, registered proof, parameters present) before it is
//! queued; a bad one becomes a FAILED job at once with the reason. Queued jobs wait in
//! priority order (CRITICAL > HIGH > NORMAL > LOW, then arrival); a dispatcher thread hands
//! them to the engine while fewer than `max_in_flight` are there, and one waiter thread per
//! in-flight job records its outcome. `request_id` makes submission idempotent: a repeated id
//! gets the first job back. Finished jobs are kept (the newest `retain`) for AwaitProof.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::{self, SectorIdentity};
use cuzk_filecoin::porep::{params, PorepInput, RegisteredSealProof};
use cuzk_filecoin::Kinds;
use cuzk_pipeline::{Engine, JobOptions, Trace};
use tokio::sync::watch;

use crate::proto::{ProofKind, SubmitProofRequest};

/// A job's state as AwaitProof reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl State {
    pub fn finished(self) -> bool {
        matches!(self, State::Completed | State::Failed | State::Cancelled)
    }
}

/// What a finished (or unfinished) job looks like from outside.
#[derive(Clone, Debug)]
pub struct JobView {
    pub job_id: String,
    pub state: State,
    pub proof: Vec<u8>,
    pub error: String,
    pub verified: bool,
    pub queue_wait_ms: u64,
    pub srs_load_ms: u64,
    pub synthesis_ms: u64,
    pub gpu_compute_ms: u64,
    pub total_ms: u64,
}

/// What Submit answers.
#[derive(Clone, Debug)]
pub struct Submitted {
    pub job_id: String,
    pub queue_position: u32,
}

/// A checked PoRep input, ready for the engine.
struct Input {
    porep: Arc<PorepInput>,
    verify: bool,
}

struct Job {
    kind: String,
    input: Option<Input>,
    view: JobView,
    submitted: Instant,
    started: Option<Instant>,
    done: watch::Sender<bool>,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct QueueKey {
    priority: i32,
    /// Negated arrival number, so earlier jobs of one priority come first.
    order: std::cmp::Reverse<u64>,
    job_id: String,
}

#[derive(Default)]
struct Table {
    jobs: HashMap<String, Job>,
    by_request: HashMap<String, String>,
    queue: BinaryHeap<QueueKey>,
    in_flight: usize,
    finished: VecDeque<String>,
    arrivals: u64,
    draining: bool,
    completed: u64,
    failed: u64,
    cancelled: u64,
    queue_wait_ms_sum: u64,
    queue_wait_count: u64,
}

/// Counts for status and metrics.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// (kind, queued, running)
    pub queues: Vec<(String, u32, u32)>,
    pub in_flight: usize,
    pub draining: bool,
    pub queue_wait_ms_sum: u64,
    pub queue_wait_count: u64,
}

struct Shared {
    table: Mutex<Table>,
    wake: Condvar,
    engine: Mutex<Option<Engine>>,
    trace: Arc<Trace>,
    budget: cuzk_pipeline::Budget,
    stats: Arc<cuzk_pipeline::engine::Stats>,
    max_in_flight: usize,
    retain: usize,
    verify_default: bool,
    kinds: Kinds,
    nonce: u64,
    seq: AtomicU64,
}

/// The job service (cheap to clone; all clones share one table and engine).
#[derive(Clone)]
pub struct Jobs {
    s: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// Settings of the job service.
#[derive(Clone, Debug)]
pub struct JobsConfig {
    pub max_in_flight: usize,
    pub retain: usize,
    pub verify: bool,
}

impl Jobs {
    /// The proof kinds this service proves.
    pub fn kinds(&self) -> &Kinds {
        &self.s.kinds
    }

    /// Takes over a started engine and starts the dispatcher.
    pub fn new(engine: Engine, cfg: JobsConfig, kinds: Kinds) -> Jobs {
        let trace = engine.trace().clone();
        let budget = engine.budget().clone();
        let stats = engine.stats().clone();
        let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
            ^ std::process::id() as u64;
        let s = Arc::new(Shared {
            table: Mutex::default(),
            wake: Condvar::new(),
            engine: Mutex::new(Some(engine)),
            trace,
            budget,
            stats,
            max_in_flight: cfg.max_in_flight.max(1),
            retain: cfg.retain.max(1),
            verify_default: cfg.verify,
            kinds,
            nonce: nonce & 0xffff_ffff,
            seq: AtomicU64::new(0),
        });
        let me = Jobs { s };
        let d = me.clone();
        std::thread::Builder::new().name("cuzk-dispatch".into()).spawn(move || d.dispatch()).expect("spawning the dispatcher");
        me
    }

    pub fn trace(&self) -> &Arc<Trace> {
        &self.s.trace
    }

    pub fn budget(&self) -> &cuzk_pipeline::Budget {
        &self.s.budget
    }

    /// The engine's counters.
    pub fn engine_stats(&self) -> &cuzk_pipeline::engine::Stats {
        &self.s.stats
    }

    /// Queues a request (or returns the job an earlier request with the same id made). Blocks
    /// while the C1 is parsed: call it off the async runtime.
    pub fn submit(&self, req: SubmitProofRequest) -> Result<Submitted, crate::DaemonError> {
        if !req.request_id.is_empty() {
            let t = lock(&self.s.table);
            if let Some(id) = t.by_request.get(&req.request_id) {
                let pos = position(&t, id);
                return Ok(Submitted { job_id: id.clone(), queue_position: pos });
            }
        }
        if lock(&self.s.table).draining {
            return Err(crate::DaemonError::Draining);
        }
        let kind = kind_name(req.proof_kind);
        let priority = match req.priority {
            0 => 2,
            p => p.clamp(1, 4),
        };
        let job_id = format!("{:08x}-{}", self.s.nonce, self.s.seq.fetch_add(1, Ordering::Relaxed) + 1);
        let checked = check(&self.s.kinds, &req, &job_id, self.s.verify_default);
        let mut t = lock(&self.s.table);
        // A concurrent duplicate may have won the race while this one was being parsed.
        if !req.request_id.is_empty() {
            if let Some(id) = t.by_request.get(&req.request_id) {
                let pos = position(&t, id);
                return Ok(Submitted { job_id: id.clone(), queue_position: pos });
            }
            t.by_request.insert(req.request_id.clone(), job_id.clone());
        }
        let (done, _) = watch::channel(false);
        let mut job = Job {
            kind,
            input: None,
            view: JobView {
                job_id: job_id.clone(),
                state: State::Queued,
                proof: Vec::new(),
                error: String::new(),
                verified: false,
                queue_wait_ms: 0,
                srs_load_ms: 0,
                synthesis_ms: 0,
                gpu_compute_ms: 0,
                total_ms: 0,
            },
            submitted: Instant::now(),
            started: None,
            done,
        };
        match checked {
            Ok(input) => {
                job.input = Some(input);
                t.arrivals += 1;
                let order = std::cmp::Reverse(t.arrivals);
                t.queue.push(QueueKey { priority, order, job_id: job_id.clone() });
                t.jobs.insert(job_id.clone(), job);
                let pos = position(&t, &job_id);
                drop(t);
                self.s.wake.notify_all();
                tracing::info!(job = %job_id, request = %req.request_id, priority, "queued");
                Ok(Submitted { job_id, queue_position: pos })
            }
            Err(why) => {
                tracing::warn!(job = %job_id, request = %req.request_id, error = %why, "rejected");
                t.jobs.insert(job_id.clone(), job);
                finish(&mut t, &job_id, State::Failed, Err(why), self.s.retain);
                Ok(Submitted { job_id, queue_position: 0 })
            }
        }
    }

    /// The job's view now (`None` for an unknown id).
    pub fn view(&self, job_id: &str) -> Option<JobView> {
        lock(&self.s.table).jobs.get(job_id).map(|j| j.view.clone())
    }

    /// Waits until the job is finished or `timeout` passes (`None` = no limit); returns its
    /// view then (state not finished = timed out), or `None` for an unknown id.
    pub async fn wait(&self, job_id: &str, timeout: Option<Duration>) -> Option<JobView> {
        let mut rx = {
            let t = lock(&self.s.table);
            let j = t.jobs.get(job_id)?;
            j.done.subscribe()
        };
        let done = async move {
            let _ = rx.wait_for(|d| *d).await;
        };
        match timeout {
            Some(t) => {
                let _ = tokio::time::timeout(t, done).await;
            }
            None => done.await,
        }
        self.view(job_id)
    }

    /// Cancels a job: a queued one is dropped; a running one is answered CANCELLED now and its
    /// proof, when the engine finishes it, is discarded. Returns (known, was_running).
    pub fn cancel(&self, job_id: &str) -> (bool, bool) {
        let mut t = lock(&self.s.table);
        let Some(j) = t.jobs.get(job_id) else { return (false, false) };
        let state = j.view.state;
        match state {
            State::Queued => {
                t.queue.retain(|k| k.job_id != job_id);
                finish(&mut t, job_id, State::Cancelled, Err("cancelled before it started".into()), self.s.retain);
                (true, false)
            }
            State::Running => {
                finish(&mut t, job_id, State::Cancelled, Err("cancelled while running; its result is discarded".into()), self.s.retain);
                (true, true)
            }
            _ => (true, false),
        }
    }

    pub fn counts(&self) -> Counts {
        let t = lock(&self.s.table);
        let mut by: std::collections::BTreeMap<String, (u32, u32)> = std::collections::BTreeMap::new();
        for j in t.jobs.values() {
            match j.view.state {
                State::Queued => by.entry(j.kind.clone()).or_default().0 += 1,
                State::Running => by.entry(j.kind.clone()).or_default().1 += 1,
                _ => {}
            }
        }
        Counts {
            completed: t.completed,
            failed: t.failed,
            cancelled: t.cancelled,
            queues: by.into_iter().map(|(k, (q, r))| (k, q, r)).collect(),
            in_flight: t.in_flight,
            draining: t.draining,
            queue_wait_ms_sum: t.queue_wait_ms_sum,
            queue_wait_count: t.queue_wait_count,
        }
    }

    /// Stops taking work: later submissions are refused, queued jobs fail with "shutting down";
    /// jobs in the engine go on. Then waits up to `grace` for those to finish.
    pub fn drain(&self, grace: Duration) -> bool {
        let mut t = lock(&self.s.table);
        t.draining = true;
        let queued: Vec<String> = t.queue.drain().map(|k| k.job_id).collect();
        for id in queued {
            finish(&mut t, &id, State::Failed, Err("the daemon shut down before this job started".into()), self.s.retain);
        }
        self.s.wake.notify_all();
        let deadline = Instant::now() + grace;
        while t.in_flight > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            t = self.s.wake.wait_timeout(t, left.min(Duration::from_millis(200))).unwrap_or_else(|e| e.into_inner()).0;
        }
        true
    }

    /// Drains (see [`Jobs::drain`]) and joins the engine's threads.
    pub fn shutdown(&self, grace: Duration) -> bool {
        let clean = self.drain(grace);
        if let Some(e) = lock(&self.s.engine).take() {
            e.shutdown();
        }
        clean
    }

    fn dispatch(&self) {
        loop {
            let (job_id, input) = {
                let mut t = lock(&self.s.table);
                loop {
                    if t.draining && t.queue.is_empty() {
                        return;
                    }
                    if t.in_flight < self.s.max_in_flight {
                        if let Some(k) = t.queue.pop() {
                            let input = t.jobs.get_mut(&k.job_id).and_then(|j| j.input.take());
                            if let Some(input) = input {
                                let j = t.jobs.get_mut(&k.job_id).expect("queued job in the table");
                                j.view.state = State::Running;
                                j.started = Some(Instant::now());
                                t.in_flight += 1;
                                break (k.job_id, input);
                            }
                            continue;
                        }
                    }
                    t = self.s.wake.wait(t).unwrap_or_else(|e| e.into_inner());
                }
            };
            let opts = JobOptions { randomness: None, verify: input.verify };
            let ticket = match lock(&self.s.engine).as_ref() {
                Some(e) => e.submit(self.s.kinds.porep.job(input.porep, opts)),
                None => Err(cuzk_pipeline::PipelineError::Shutdown),
            };
            let me = self.clone();
            match ticket {
                Ok(ticket) => {
                    std::thread::Builder::new()
                        .name("cuzk-await".into())
                        .spawn(move || {
                            let engine_id = ticket.id;
                            let out = ticket.wait();
                            me.record(&job_id, engine_id, out);
                        })
                        .expect("spawning a job waiter");
                }
                Err(e) => {
                    let mut t = lock(&self.s.table);
                    t.in_flight -= 1;
                    finish(&mut t, &job_id, State::Failed, Err(e.chain()), self.s.retain);
                    self.s.wake.notify_all();
                }
            }
        }
    }

    fn record(&self, job_id: &str, engine_id: u64, out: cuzk_pipeline::Outcome) {
        // Per-stage times of this proof from the engine's trace.
        let ev = self.s.trace.events_of(engine_id);
        let span = |stages: &[&str]| -> u64 {
            let v: Vec<_> = ev.iter().filter(|e| stages.contains(&e.stage)).collect();
            let a = v.iter().map(|e| e.start_s).fold(f64::INFINITY, f64::min);
            let b = v.iter().map(|e| e.end_s).fold(0.0, f64::max);
            if v.is_empty() {
                0
            } else {
                ((b - a) * 1000.0) as u64
            }
        };
        let sum =
            |stage: &str| -> u64 { (ev.iter().filter(|e| e.stage == stage).map(|e| e.end_s - e.start_s).sum::<f64>() * 1000.0) as u64 };
        let mut t = lock(&self.s.table);
        t.in_flight -= 1;
        if let Some(j) = t.jobs.get_mut(job_id) {
            j.view.srs_load_ms = sum("parse");
            j.view.synthesis_ms = span(&["witness", "mat-vec"]);
            j.view.gpu_compute_ms = sum("prove");
            j.view.verified = out.verified;
        }
        let (state, result) = match out.result {
            Ok(p) => (State::Completed, Ok(p)),
            Err(e) => (State::Failed, Err(e.chain())),
        };
        finish(&mut t, job_id, state, result, self.s.retain);
        drop(t);
        self.s.wake.notify_all();
    }
}

/// How many queued jobs run before `id` (0 when it is not queued).
fn position(t: &Table, id: &str) -> u32 {
    let Some(me) = t.queue.iter().find(|k| k.job_id == id) else { return 0 };
    t.queue.iter().filter(|k| *k > me).count() as u32 + 1
}

/// Moves a job to a finished state once (later calls leave the first answer), wakes its
/// waiters and forgets the oldest finished jobs beyond `retain`.
fn finish(t: &mut Table, id: &str, state: State, result: Result<Vec<u8>, String>, retain: usize) {
    let Some(j) = t.jobs.get_mut(id) else { return };
    if j.view.state.finished() {
        return;
    }
    let now = Instant::now();
    j.view.state = state;
    match result {
        Ok(p) => j.view.proof = p,
        Err(e) => j.view.error = e,
    }
    let started = j.started;
    j.view.queue_wait_ms = ms(started.unwrap_or(now) - j.submitted);
    j.view.total_ms = ms(now - j.submitted);
    j.input = None;
    j.done.send_replace(true);
    let wait = j.view.queue_wait_ms;
    if started.is_some() {
        t.queue_wait_ms_sum += wait;
        t.queue_wait_count += 1;
    }
    match state {
        State::Completed => t.completed += 1,
        State::Cancelled => t.cancelled += 1,
        _ => t.failed += 1,
    }
    t.finished.push_back(id.to_string());
    while t.finished.len() > retain {
        if let Some(old) = t.finished.pop_front() {
            t.jobs.remove(&old);
            t.by_request.retain(|_, v| *v != old);
        }
    }
}

/// The name of a proof kind for queues and messages.
pub fn kind_name(k: i32) -> String {
    ProofKind::try_from(k).map(|k| k.as_str_name().to_string()).unwrap_or_else(|_| format!("PROOF_KIND_{k}"))
}

/// Checks a request and parses its C1; the error names what is wrong.
fn check(kinds: &Kinds, req: &SubmitProofRequest, job_id: &str, verify_default: bool) -> Result<Input, String> {
    match ProofKind::try_from(req.proof_kind) {
        Ok(ProofKind::PorepSealCommit) => {}
        Ok(ProofKind::Unspecified) => return Err("proof_kind is not set (POREP_SEAL_COMMIT is the kind this daemon proves)".into()),
        Ok(k) => return Err(format!("proof kind {} is not supported yet; this daemon proves POREP_SEAL_COMMIT only", k.as_str_name())),
        Err(_) => return Err(format!("unknown proof kind {}", req.proof_kind)),
    }
    if req.vanilla_proof.is_empty() {
        return Err("vanilla_proof is empty: a PoRep request carries the C1 output JSON".into());
    }
    let by_number = match req.registered_proof {
        0 => None,
        n => Some(cuzk_filecoin::curio::from_number(n).map_err(|e| e.to_string())?),
    };
    let by_size = match req.sector_size {
        0 => None,
        n => Some(sector::registered_proof(n).map_err(|e| format!("sector_size {n}: {e}"))?),
    };
    if let (Some(a), Some(b)) = (by_number, by_size) {
        if a != b {
            return Err(format!(
                "registered_proof {} ({a:?}) does not match sector_size {} ({b:?})",
                req.registered_proof, req.sector_size
            ));
        }
    }
    let expected = by_number.or(by_size);
    let name = match req.request_id.as_str() {
        "" => format!("job {job_id}: vanilla_proof"),
        r => format!("request {r:?}: vanilla_proof"),
    };
    let c1 = C1::parse(std::path::Path::new(&name), &req.vanilla_proof, expected).map_err(|e| e.to_string())?;
    let rp: RegisteredSealProof = c1.registered_proof;
    if kinds.porep.resident(rp).1.is_none() {
        params::ensure_present(rp).map_err(|e| e.to_string())?;
    }
    let identity = SectorIdentity { miner_id: req.miner_id, sector_number: req.sector_number };
    Ok(Input { porep: Arc::new(PorepInput { c1, identity }), verify: verify_default && !req.skip_verify })
}
