//! The job table and the priority queues in front of the pipeline engine. A submission is
//! checked (request id length, room in the queue and in its client's share, kind, C1, sector
//! size, registered proof, synthetic input, parameters present) before it is queued; a
//! request over a limit is refused with a [`Refused`] (a gRPC status, no job), a bad one
//! becomes a FAILED job at once with the reason. Queued jobs wait in priority order
//! (CRITICAL > HIGH > NORMAL > LOW, then arrival); a dispatcher thread hands them to the
//! engine while fewer than `max_in_flight` are there, and one waiter thread per in-flight job
//! records its outcome. Job ids are random 128-bit numbers, so only the submitter knows one.
//! `request_id` makes submission idempotent per client: a repeated id gets the first job
//! back, unless that job FAILED or was CANCELLED (Curio retries a failed sector with the same
//! id), which queues a new one. Finished jobs are kept within a count, a byte total and an
//! age ([`Limits`]), collected ones forgotten first; refused garbage is kept apart, so it never
//! pushes out a proof. Every job carries a tracing span with its id and request id.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cuzk_filecoin::curio::Circuit;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::{self, SectorIdentity};
use cuzk_filecoin::porep::{params, PorepInput, RegisteredSealProof};
use cuzk_filecoin::post::{self, PostInput};
use cuzk_filecoin::update::{self, UpdateInput};
use cuzk_filecoin::Kinds;
use cuzk_pipeline::engine::{JobSource, PartitionInput};
use cuzk_pipeline::kind::ProofKind as _;
use cuzk_pipeline::{Engine, JobOptions, Priority, Trace};
use tokio::sync::watch;

use crate::config::DaemonConfig;
use crate::proto::{self, ProofKind, SubmitProofRequest};

/// Longest error text a job keeps (longer ones are cut on a character boundary).
pub const MAX_ERROR: usize = 4096;
/// Bytes a finished job is charged beyond its proof, error and ids (its table entries).
const JOB_OVERHEAD: u64 = 512;

/// A job's state as AwaitProof reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting in the priority queues.
    Queued,
    /// Handed to the engine, no answer yet.
    Running,
    /// Proved (and verified, when verification was asked for); the proof is in the view.
    Completed,
    /// Refused by the checks, failed in the engine, or still queued when the daemon drained;
    /// the view's error says why.
    Failed,
    /// Cancelled before it finished; a running job's eventual proof is discarded.
    Cancelled,
}

impl State {
    /// Whether the job has its final answer (COMPLETED, FAILED or CANCELLED).
    pub fn finished(self) -> bool {
        matches!(self, State::Completed | State::Failed | State::Cancelled)
    }
}

/// What a finished (or unfinished) job looks like from outside.
#[derive(Clone, Debug)]
pub struct JobView {
    /// The job's id: 32 hex digits of a random 128-bit number.
    pub job_id: String,
    /// Where the job is now.
    pub state: State,
    /// The proof bytes when COMPLETED; empty otherwise.
    pub proof: Vec<u8>,
    /// Why the job FAILED or was CANCELLED (cut to [`MAX_ERROR`] bytes); empty otherwise.
    pub error: String,
    /// The proof was verified and accepted before it was returned (false while unfinished, on
    /// failure, and when verification was skipped).
    pub verified: bool,
    /// Milliseconds from submission until the engine took the job (until it finished, if it
    /// never started); 0 until the job finishes.
    pub queue_wait_ms: u64,
    /// Milliseconds in the engine's parse stage: the request's checks and loading the
    /// circuit's parameters and PCE when they were not resident (0 until the engine answers).
    pub srs_load_ms: u64,
    /// Wall-clock milliseconds from the first witness or mat-vec stage of the job's partitions
    /// to the last one's end (0 until the engine answers).
    pub synthesis_ms: u64,
    /// Milliseconds of the prove stage summed over the job's partitions, on whichever backend
    /// proved them (0 until the engine answers).
    pub gpu_compute_ms: u64,
    /// Milliseconds from submission until the job finished; 0 until then.
    pub total_ms: u64,
}

/// What Submit answers.
#[derive(Clone, Debug)]
pub struct Submitted {
    /// The job's id (for AwaitProof and CancelProof).
    pub job_id: String,
    /// 1 + the queued jobs that run before it; 0 when it is not queued (refused at once,
    /// already running or finished).
    pub queue_position: u32,
}

/// Why a submission was refused without a job.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The daemon is draining for shutdown (UNAVAILABLE).
    #[error("the daemon is shutting down and takes no new jobs")]
    Draining,
    /// The request id is longer than `jobs.max_request_id` (INVALID_ARGUMENT).
    #[error("request_id is {len} bytes; at most {max} are accepted (jobs.max_request_id)")]
    RequestIdTooLong {
        /// The request id's length in bytes.
        len: usize,
        /// `jobs.max_request_id`.
        max: usize,
    },
    /// `jobs.max_queued` jobs are already queued or running (RESOURCE_EXHAUSTED).
    #[error("the queue is full: {held} jobs queued or running (jobs.max_queued = {max})")]
    QueueFull {
        /// Jobs queued or running now.
        held: usize,
        /// `jobs.max_queued`.
        max: usize,
    },
    /// This request's C1 would take the queued bytes past `jobs.max_queued_bytes`
    /// (RESOURCE_EXHAUSTED).
    #[error("queued C1s hold {held} bytes; {size} more would pass jobs.max_queued_bytes = {max}")]
    QueueBytes {
        /// Bytes of C1 input held by queued or running jobs now.
        held: u64,
        /// Bytes of this request's C1 (`vanilla_proof`).
        size: u64,
        /// `jobs.max_queued_bytes` in bytes.
        max: u64,
    },
    /// This client already has `jobs.max_per_client` jobs queued or running (RESOURCE_EXHAUSTED).
    #[error("this client has {held} jobs queued or running (jobs.max_per_client = {max})")]
    ClientLimit {
        /// The client's jobs queued or running now.
        held: usize,
        /// `jobs.max_per_client`.
        max: usize,
    },
}

impl Refused {
    /// The gRPC status code a client gets.
    pub fn code(&self) -> tonic::Code {
        match self {
            Refused::Draining => tonic::Code::Unavailable,
            Refused::RequestIdTooLong { .. } => tonic::Code::InvalidArgument,
            _ => tonic::Code::ResourceExhausted,
        }
    }
}

/// The bounds on what the job table holds (`[jobs]` in the config).
#[derive(Clone, Debug)]
pub struct Limits {
    /// Finished accepted jobs remembered at most (`jobs.retain`).
    pub retain: usize,
    /// Bytes finished accepted jobs may keep together (proof, error, ids and 512 bytes of
    /// bookkeeping each; `jobs.retain_bytes`).
    pub retain_bytes: u64,
    /// How long after finishing a job is remembered at most (`jobs.retain_secs`).
    pub retain_for: Duration,
    /// Jobs that failed their checks at submission (bad kind, bad C1, …) remembered at most,
    /// apart from accepted ones (`jobs.retain_rejected`).
    pub retain_rejected: usize,
    /// Most jobs queued or running at once (`jobs.max_queued`).
    pub max_queued: usize,
    /// Most bytes of C1 input queued or running jobs may hold together (`jobs.max_queued_bytes`).
    pub max_queued_bytes: u64,
    /// Most jobs one client may have queued or running at once (`jobs.max_per_client`).
    pub max_per_client: usize,
    /// Longest request id in bytes (`jobs.max_request_id`).
    pub max_request_id: usize,
}

/// What a request may ask of the proof.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Verify every proof before answering.
    pub verify: bool,
    /// Honour a request's `skip_verify`.
    pub allow_skip_verify: bool,
    /// Accept synthetic C1s.
    pub allow_synthetic: bool,
}

/// Settings of the job service.
#[derive(Clone, Debug)]
pub struct JobsConfig {
    /// Jobs handed to the engine at once (0 is taken as 1); the rest wait in the queues.
    pub max_in_flight: usize,
    /// What the job table holds and the queue admits.
    pub limits: Limits,
    /// Verification and synthetic-input policy.
    pub policy: Policy,
}

impl JobsConfig {
    /// The settings a (validated) daemon config asks for.
    pub fn from_config(cfg: &DaemonConfig, max_in_flight: usize) -> JobsConfig {
        let j = &cfg.jobs;
        JobsConfig {
            max_in_flight,
            limits: Limits {
                retain: j.retain,
                retain_bytes: cfg.bytes_of("jobs.retain_bytes"),
                retain_for: Duration::from_secs(j.retain_secs),
                retain_rejected: j.retain_rejected,
                max_queued: j.max_queued,
                max_queued_bytes: cfg.bytes_of("jobs.max_queued_bytes"),
                max_per_client: j.max_per_client,
                max_request_id: j.max_request_id,
            },
            policy: Policy { verify: cfg.engine.verify, allow_skip_verify: j.allow_skip_verify, allow_synthetic: j.allow_synthetic },
        }
    }
}

impl Default for JobsConfig {
    /// The defaults of [`DaemonConfig`], one job in flight.
    fn default() -> Self {
        JobsConfig::from_config(&DaemonConfig::default(), 1)
    }
}

/// A checked input, ready for the engine.
struct Input {
    request: Request,
    verify: bool,
    /// Its order in the engine's queue of partitions.
    priority: Priority,
}

/// What a job proves, of its kind.
enum Request {
    Porep(Arc<PorepInput>),
    Post(Arc<PostInput>),
    Update(Arc<UpdateInput>),
}

impl Request {
    /// The circuit its partitions are instances of.
    fn circuit(&self) -> Circuit {
        match self {
            Request::Porep(r) => Circuit::Porep(r.c1.registered_proof),
            Request::Post(r) => Circuit::Post(r.registered_proof),
            Request::Update(r) => Circuit::Update(r.registered_proof),
        }
    }
}

/// The by-request key: the client and its request id.
type RequestKey = (String, String);

struct Job {
    kind: String,
    client: String,
    request: Option<RequestKey>,
    input: Option<Input>,
    input_bytes: u64,
    /// Counted in the queue's and its client's totals (until it finishes).
    holds: bool,
    /// It passed the checks (a refused one is kept in the rejected ring).
    accepted: bool,
    /// An AwaitProof has returned its final answer.
    collected: bool,
    view: JobView,
    submitted: Instant,
    started: Option<Instant>,
    finished: Option<Instant>,
    span: tracing::Span,
    done: watch::Sender<bool>,
}

impl Job {
    /// The bytes its finished result keeps in the table.
    fn retained_bytes(&self) -> u64 {
        let ids = self.view.job_id.len() + self.request.as_ref().map(|(c, r)| c.len() + r.len()).unwrap_or(0);
        (self.view.proof.len() + self.view.error.len() + ids) as u64 + JOB_OVERHEAD
    }
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
    by_request: HashMap<RequestKey, String>,
    queue: BinaryHeap<QueueKey>,
    in_flight: usize,
    /// Jobs queued or running (not finished), their input bytes, and per client.
    held: usize,
    held_bytes: u64,
    per_client: HashMap<String, usize>,
    /// Finished accepted jobs, oldest first, and the bytes they keep.
    finished: VecDeque<String>,
    retained_bytes: u64,
    /// Finished refused jobs, oldest first.
    rejected: VecDeque<String>,
    arrivals: u64,
    draining: bool,
    /// The dispatcher hands nothing to the engine while set ([`Jobs::hold`]).
    held_back: bool,
    completed: u64,
    failed: u64,
    cancelled: u64,
    queue_wait_ms_sum: u64,
    queue_wait_count: u64,
}

/// Counts for status and metrics.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Jobs COMPLETED since start.
    pub completed: u64,
    /// Jobs FAILED since start (those that failed their checks at submission included).
    pub failed: u64,
    /// Jobs CANCELLED since start.
    pub cancelled: u64,
    /// (kind, queued, running) for each proof kind with a queued or running job, by kind name.
    pub queues: Vec<(String, u32, u32)>,
    /// Jobs handed to the engine whose answer has not come back yet.
    pub in_flight: usize,
    /// The service is draining for shutdown.
    pub draining: bool,
    /// Milliseconds finished jobs waited in the queues before the engine took them, summed.
    pub queue_wait_ms_sum: u64,
    /// Finished jobs that the engine took (the count behind `queue_wait_ms_sum`).
    pub queue_wait_count: u64,
    /// Finished accepted jobs remembered now.
    pub retained: usize,
    /// Jobs that failed their checks at submission, remembered now.
    pub rejected_retained: usize,
    /// Bytes the remembered accepted jobs keep (as [`Limits::retain_bytes`] counts them).
    pub retained_bytes: u64,
}

struct Shared {
    table: Mutex<Table>,
    wake: Condvar,
    engine: Mutex<Option<Engine>>,
    trace: Arc<Trace>,
    budget: cuzk_pipeline::Budget,
    stats: Arc<cuzk_pipeline::engine::Stats>,
    max_in_flight: usize,
    limits: Limits,
    policy: Policy,
    kinds: Kinds,
    usage: Arc<crate::idle::Usage>,
    devices: Vec<cuzk_pipeline::Device>,
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

/// A fresh job id: 128 random bits from the thread's CSPRNG, as 32 hex digits.
fn new_job_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// A client-supplied string as it may appear in a log line: escaped, at most 80 characters.
pub fn loggable(s: &str) -> String {
    let mut out: String = s.chars().take(80).flat_map(char::escape_debug).collect();
    if s.chars().nth(80).is_some() {
        out.push('…');
    }
    out
}

/// `s` cut to at most `max` bytes on a character boundary.
fn truncated(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str(" …(truncated)");
    }
    s
}

impl Jobs {
    /// The proof kinds this service proves.
    pub fn kinds(&self) -> &Kinds {
        &self.s.kinds
    }

    /// Takes over a started engine and starts the dispatcher.
    pub fn new(engine: Engine, cfg: JobsConfig, kinds: Kinds) -> Result<Jobs, crate::DaemonError> {
        let s = Arc::new(Shared {
            table: Mutex::default(),
            wake: Condvar::new(),
            trace: engine.trace().clone(),
            budget: engine.budget().clone(),
            stats: engine.stats().clone(),
            devices: engine.devices().to_vec(),
            engine: Mutex::new(Some(engine)),
            max_in_flight: cfg.max_in_flight.max(1),
            limits: cfg.limits,
            policy: cfg.policy,
            kinds,
            usage: Arc::default(),
        });
        let me = Jobs { s };
        let d = me.clone();
        std::thread::Builder::new()
            .name("cuzk-dispatch".into())
            .spawn(move || d.dispatch())
            .map_err(|e| crate::DaemonError::io("spawning the dispatcher thread", e))?;
        Ok(me)
    }

    /// The engine's proving devices.
    pub fn devices(&self) -> &[cuzk_pipeline::Device] {
        &self.s.devices
    }

    /// When each circuit was last used by a job (for dropping idle parameters).
    pub fn usage(&self) -> &Arc<crate::idle::Usage> {
        &self.s.usage
    }

    /// The engine's trace: per-stage events and RSS samples, bounded.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.s.trace
    }

    /// The engine's byte budget for in-flight partitions.
    pub fn budget(&self) -> &cuzk_pipeline::Budget {
        &self.s.budget
    }

    /// The engine's counters.
    pub fn engine_stats(&self) -> &cuzk_pipeline::engine::Stats {
        &self.s.stats
    }

    /// Queues a request of `client` (or returns the job an earlier request of that client with
    /// the same id made, unless it failed or was cancelled). Blocks while the C1 is parsed:
    /// call it off the async runtime.
    pub fn submit(&self, req: SubmitProofRequest, client: &str) -> Result<Submitted, Refused> {
        let lim = &self.s.limits;
        if req.request_id.len() > lim.max_request_id {
            return Err(Refused::RequestIdTooLong { len: req.request_id.len(), max: lim.max_request_id });
        }
        let key = (!req.request_id.is_empty()).then(|| (client.to_string(), req.request_id.clone()));
        let size = (req.vanilla_proof.len() + req.vanilla_proofs.iter().map(Vec::len).sum::<usize>()) as u64;
        {
            let t = lock(&self.s.table);
            if let Some(s) = existing(&t, key.as_ref()) {
                return Ok(s);
            }
            room(&t, lim, client, size)?;
        }
        let job_id = new_job_id();
        let span = tracing::info_span!("job", id = %job_id, request = %loggable(&req.request_id));
        let checked = span.in_scope(|| check(&self.s.kinds, &req, &job_id, self.s.policy));
        let mut t = lock(&self.s.table);
        // A concurrent duplicate may have won the race while this one was being parsed.
        if let Some(s) = existing(&t, key.as_ref()) {
            return Ok(s);
        }
        let mut job = Job {
            kind: kind_name(req.proof_kind),
            client: client.to_string(),
            request: None,
            input: None,
            input_bytes: size,
            holds: false,
            accepted: false,
            collected: false,
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
            finished: None,
            span,
            done: watch::channel(false).0,
        };
        match checked {
            Ok(input) => {
                room(&t, lim, client, size)?;
                job.input = Some(input);
                job.request = key;
                let pos = self.enqueue(&mut t, job, wire_priority(&req));
                drop(t);
                self.s.wake.notify_all();
                Ok(Submitted { job_id, queue_position: pos })
            }
            Err(why) => {
                job.span.in_scope(|| tracing::warn!(error = %why, "rejected"));
                t.jobs.insert(job_id.clone(), job);
                finish(&mut t, &job_id, State::Failed, Err(why), lim);
                Ok(Submitted { job_id, queue_position: 0 })
            }
        }
    }

    /// Puts a checked job in the queue and the totals; its queue position.
    fn enqueue(&self, t: &mut Table, mut job: Job, priority: i32) -> u32 {
        let id = job.view.job_id.clone();
        job.accepted = true;
        job.holds = true;
        t.held += 1;
        t.held_bytes += job.input_bytes;
        *t.per_client.entry(job.client.clone()).or_default() += 1;
        if let Some(k) = &job.request {
            t.by_request.insert(k.clone(), id.clone());
        }
        t.arrivals += 1;
        let order = std::cmp::Reverse(t.arrivals);
        t.queue.push(QueueKey { priority, order, job_id: id.clone() });
        job.span.in_scope(|| tracing::info!(priority, "queued"));
        t.jobs.insert(id.clone(), job);
        position(t, &id)
    }

    /// The job's view now (`None` for an unknown id).
    pub fn view(&self, job_id: &str) -> Option<JobView> {
        lock(&self.s.table).jobs.get(job_id).map(|j| j.view.clone())
    }

    /// Waits until the job is finished or `timeout` passes (`None` = no limit); returns its
    /// view then (state not finished = timed out), or `None` for an unknown id. A finished
    /// answer marks the job collected (it is forgotten before uncollected ones).
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
        let mut t = lock(&self.s.table);
        let j = t.jobs.get_mut(job_id)?;
        if j.view.state.finished() {
            j.collected = true;
        }
        Some(j.view.clone())
    }

    /// Cancels a job: a queued one is dropped; a running one is answered CANCELLED now and its
    /// proof, when the engine finishes it, is discarded. Returns (known, was_running).
    pub fn cancel(&self, job_id: &str) -> (bool, bool) {
        let mut t = lock(&self.s.table);
        let Some(j) = t.jobs.get(job_id) else { return (false, false) };
        let lim = &self.s.limits;
        match j.view.state {
            State::Queued => {
                t.queue.retain(|k| k.job_id != job_id);
                finish(&mut t, job_id, State::Cancelled, Err("cancelled before it started".into()), lim);
                (true, false)
            }
            State::Running => {
                finish(&mut t, job_id, State::Cancelled, Err("cancelled while running; its result is discarded".into()), lim);
                (true, true)
            }
            _ => (true, false),
        }
    }

    /// The counts for status and metrics, taken now.
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
            retained: t.finished.len(),
            rejected_retained: t.rejected.len(),
            retained_bytes: t.retained_bytes,
        }
    }

    /// Stops taking work: later submissions are refused, queued jobs fail with "shutting down";
    /// jobs in the engine go on. Then waits up to `grace` for those to finish.
    pub fn drain(&self, grace: Duration) -> bool {
        let mut t = lock(&self.s.table);
        t.draining = true;
        let queued: Vec<String> = t.queue.drain().map(|k| k.job_id).collect();
        for id in queued {
            finish(&mut t, &id, State::Failed, Err("the daemon shut down before this job started".into()), &self.s.limits);
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

    /// Holds the queue (`true`: queued jobs stay queued, the engine gets nothing new) or lets
    /// it go again; for an operator's pause and for tests that need a known queue.
    pub fn hold(&self, on: bool) {
        lock(&self.s.table).held_back = on;
        self.s.wake.notify_all();
    }

    /// The next queued job to hand to the engine, once there is room; `None` when draining.
    fn next(&self) -> Option<(String, Input, tracing::Span)> {
        let mut t = lock(&self.s.table);
        loop {
            if t.draining && t.queue.is_empty() {
                return None;
            }
            let paused = t.held_back && !t.draining;
            // A CRITICAL job (WinningPoSt) may take one slot beyond the limit, so that it
            // reaches the engine's priority queue at once instead of after a whole sector.
            let critical_next = t.queue.peek().is_some_and(|k| k.priority == CRITICAL);
            let limit = self.s.max_in_flight + usize::from(critical_next);
            if t.in_flight < limit && !paused {
                if let Some(k) = t.queue.pop() {
                    let Some(j) = t.jobs.get_mut(&k.job_id) else { continue };
                    let Some(input) = j.input.take() else { continue };
                    j.view.state = State::Running;
                    j.started = Some(Instant::now());
                    let span = j.span.clone();
                    t.in_flight += 1;
                    return Some((k.job_id, input, span));
                }
            }
            t = self.s.wake.wait(t).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn dispatch(&self) {
        while let Some((job_id, input, span)) = self.next() {
            span.in_scope(|| tracing::info!("started"));
            let (opts, priority) = (JobOptions { randomness: None, verify: input.verify }, input.priority);
            let circuit = input.request.circuit();
            self.s.usage.begin(circuit);
            let source = match input.request {
                Request::Porep(r) => in_span(span, self.s.kinds.porep.job(r, opts)),
                Request::Post(r) => in_span(span, self.s.kinds.post.job(r, opts)),
                Request::Update(r) => in_span(span, self.s.kinds.update.job(r, opts)),
            };
            let ticket = match lock(&self.s.engine).as_ref() {
                Some(e) => e.submit_at(source, priority),
                None => Err(cuzk_pipeline::PipelineError::Shutdown),
            };
            let failed = match ticket {
                Ok(ticket) => {
                    let (me, id) = (self.clone(), job_id.clone());
                    std::thread::Builder::new()
                        .name("cuzk-await".into())
                        .spawn(move || {
                            let engine_id = ticket.id;
                            let out = ticket.wait();
                            me.s.usage.end(circuit);
                            me.record(&id, engine_id, out);
                        })
                        .err()
                        .map(|e| format!("could not start a thread to wait for the job: {e}"))
                }
                Err(e) => Some(e.chain()),
            };
            if let Some(why) = failed {
                self.s.usage.end(circuit);
                let mut t = lock(&self.s.table);
                t.in_flight -= 1;
                finish(&mut t, &job_id, State::Failed, Err(why), &self.s.limits);
                self.s.wake.notify_all();
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
            if !j.view.state.finished() {
                j.view.srs_load_ms = sum("parse");
                j.view.synthesis_ms = span(&["witness", "mat-vec"]);
                j.view.gpu_compute_ms = sum("prove");
                j.view.verified = out.verified;
            }
        }
        let (state, result) = match out.result {
            Ok(p) => (State::Completed, Ok(p)),
            Err(e) => (State::Failed, Err(e.chain())),
        };
        finish(&mut t, job_id, state, result, &self.s.limits);
        drop(t);
        self.s.wake.notify_all();
    }
}

/// The job that an earlier request with the same key made, unless it failed or was cancelled
/// (then the request is a retry and gets a new job).
fn existing(t: &Table, key: Option<&RequestKey>) -> Option<Submitted> {
    let id = t.by_request.get(key?)?;
    let j = t.jobs.get(id)?;
    if matches!(j.view.state, State::Failed | State::Cancelled) {
        return None;
    }
    Some(Submitted { job_id: id.clone(), queue_position: position(t, id) })
}

/// Whether one more job of `client` with `size` input bytes fits in the limits.
fn room(t: &Table, lim: &Limits, client: &str, size: u64) -> Result<(), Refused> {
    if t.draining {
        return Err(Refused::Draining);
    }
    if t.held >= lim.max_queued {
        return Err(Refused::QueueFull { held: t.held, max: lim.max_queued });
    }
    if t.held_bytes + size > lim.max_queued_bytes {
        return Err(Refused::QueueBytes { held: t.held_bytes, size, max: lim.max_queued_bytes });
    }
    let mine = t.per_client.get(client).copied().unwrap_or(0);
    if mine >= lim.max_per_client {
        return Err(Refused::ClientLimit { held: mine, max: lim.max_per_client });
    }
    Ok(())
}

/// The engine job `src` with `span` entered wherever its closures run (parse, each
/// partition's witness, assembly, verification), so their log lines name the job.
fn in_span(span: tracing::Span, src: JobSource) -> JobSource {
    Box::new(move || {
        let mut job = span.in_scope(src)?;
        job.partitions = job
            .partitions
            .into_iter()
            .map(|p| {
                let (s, f) = (span.clone(), p.synthesize);
                PartitionInput { synthesize: Box::new(move |pce| s.in_scope(|| f(pce))), r: p.r, s: p.s }
            })
            .collect();
        let (s, assemble) = (span.clone(), job.assemble);
        job.assemble = Box::new(move |proofs| s.in_scope(|| assemble(proofs)));
        job.verify = job.verify.map(|v| -> cuzk_pipeline::engine::VerifyProof { Box::new(move |bytes| span.in_scope(|| v(bytes))) });
        Ok(job)
    })
}

/// How many queued jobs run before `id` (0 when it is not queued).
fn position(t: &Table, id: &str) -> u32 {
    let Some(me) = t.queue.iter().find(|k| k.job_id == id) else { return 0 };
    t.queue.iter().filter(|k| *k > me).count() as u32 + 1
}

/// Moves a job to a finished state once (later calls leave the first answer), wakes its
/// waiters, gives back its share of the queue and forgets what the limits no longer allow.
fn finish(t: &mut Table, id: &str, state: State, result: Result<Vec<u8>, String>, lim: &Limits) {
    let Some(j) = t.jobs.get_mut(id) else { return };
    if j.view.state.finished() {
        return;
    }
    let now = Instant::now();
    j.view.state = state;
    match result {
        Ok(p) => j.view.proof = p,
        Err(e) => j.view.error = truncated(e, MAX_ERROR),
    }
    let started = j.started;
    j.view.queue_wait_ms = ms(started.unwrap_or(now) - j.submitted);
    j.view.total_ms = ms(now - j.submitted);
    j.input = None;
    j.finished = Some(now);
    j.done.send_replace(true);
    j.span.in_scope(|| tracing::info!(state = ?state, total_ms = j.view.total_ms, "finished"));
    let (holds, accepted, bytes, client, size, wait) =
        (j.holds, j.accepted, j.input_bytes, j.client.clone(), j.retained_bytes(), j.view.queue_wait_ms);
    j.holds = false;
    if holds {
        release(t, &client, bytes);
    }
    if started.is_some() {
        t.queue_wait_ms_sum += wait;
        t.queue_wait_count += 1;
    }
    match state {
        State::Completed => t.completed += 1,
        State::Cancelled => t.cancelled += 1,
        _ => t.failed += 1,
    }
    if accepted {
        t.finished.push_back(id.to_string());
        t.retained_bytes += size;
    } else {
        t.rejected.push_back(id.to_string());
    }
    evict(t, lim, now);
}

/// Gives back a finished job's share of the queue totals.
fn release(t: &mut Table, client: &str, bytes: u64) {
    t.held = t.held.saturating_sub(1);
    t.held_bytes = t.held_bytes.saturating_sub(bytes);
    if let Some(n) = t.per_client.get_mut(client) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            t.per_client.remove(client);
        }
    }
}

/// Forgets refused jobs beyond their count, finished jobs older than the age limit, then
/// finished jobs beyond the count or byte limit: the oldest collected one first, else the oldest.
fn evict(t: &mut Table, lim: &Limits, now: Instant) {
    while t.rejected.len() > lim.retain_rejected {
        if let Some(old) = t.rejected.pop_front() {
            forget(t, &old);
        }
    }
    while let Some(old) = t.finished.front() {
        let expired = t.jobs.get(old).and_then(|j| j.finished).is_none_or(|f| now.duration_since(f) > lim.retain_for);
        if !expired {
            break;
        }
        if let Some(old) = t.finished.pop_front() {
            forget(t, &old);
        }
    }
    while t.finished.len() > lim.retain || (t.retained_bytes > lim.retain_bytes && !t.finished.is_empty()) {
        let at = t.finished.iter().position(|id| t.jobs.get(id).is_none_or(|j| j.collected)).unwrap_or(0);
        if let Some(old) = t.finished.remove(at) {
            forget(t, &old);
        }
    }
}

/// Removes a finished job and its request id (if that still names it).
fn forget(t: &mut Table, id: &str) {
    let Some(j) = t.jobs.remove(id) else { return };
    if j.accepted {
        t.retained_bytes = t.retained_bytes.saturating_sub(j.retained_bytes());
    }
    if let Some(k) = j.request {
        if t.by_request.get(&k).map(String::as_str) == Some(id) {
            t.by_request.remove(&k);
        }
    }
}

/// The name of a proof kind for queues and messages.
pub fn kind_name(k: i32) -> String {
    ProofKind::try_from(k).map(|k| k.as_str_name().to_string()).unwrap_or_else(|_| format!("PROOF_KIND_{k}"))
}

/// The registered proof the request names by number and by sector size, if they agree.
fn expected_proof(req: &SubmitProofRequest) -> Result<Option<RegisteredSealProof>, String> {
    let by_number = match req.registered_proof {
        0 => None,
        n => Some(cuzk_filecoin::curio::from_number(n).map_err(|e| e.to_string())?),
    };
    let by_size = match req.sector_size {
        0 => None,
        n => Some(sector::registered_proof(n).map_err(|e| format!("sector_size {n}: {e}"))?),
    };
    if let (Some(a), Some(b)) = (by_number, by_size) {
        if a.sector_size() != b.sector_size() {
            return Err(format!(
                "registered_proof {} ({a:?}) does not match sector_size {} ({b:?})",
                req.registered_proof, req.sector_size
            ));
        }
    }
    Ok(by_number.or(by_size))
}

/// Checks a request and parses its input; the error names what is wrong.
fn check(kinds: &Kinds, req: &SubmitProofRequest, job_id: &str, policy: Policy) -> Result<Input, String> {
    let skip = req.skip_verify && policy.allow_skip_verify;
    if req.skip_verify && !skip {
        tracing::info!("skip_verify asked for but not allowed (jobs.allow_skip_verify = false): the proof is verified");
    }
    let verify = policy.verify && !skip;
    let request = match ProofKind::try_from(req.proof_kind) {
        Ok(ProofKind::PorepSealCommit) => Request::Porep(check_porep(kinds, req, job_id, policy)?),
        Ok(ProofKind::WindowPostPartition | ProofKind::WinningPost) => Request::Post(check_post(kinds, req, job_id)?),
        Ok(ProofKind::SnapDealsUpdate) => Request::Update(check_update(kinds, req, job_id)?),
        Ok(ProofKind::Unspecified) => {
            return Err("proof_kind is not set (this daemon proves POREP_SEAL_COMMIT, SNAP_DEALS_UPDATE, WINDOW_POST_PARTITION \
                        and WINNING_POST)"
                .into())
        }
        Err(_) => return Err(format!("unknown proof kind {}", req.proof_kind)),
    };
    Ok(Input { request, verify, priority: engine_priority(wire_priority(req)) })
}

/// The wire's CRITICAL.
const CRITICAL: i32 = proto::Priority::Critical as i32;

/// The request's priority on the wire scale (LOW 1 … CRITICAL 4): as sent, or when not set
/// (UNSPECIFIED, 0) its kind's: WinningPoSt CRITICAL, WindowPoSt HIGH, the rest NORMAL.
fn wire_priority(req: &SubmitProofRequest) -> i32 {
    match req.priority {
        0 => match ProofKind::try_from(req.proof_kind) {
            Ok(ProofKind::WinningPost) => CRITICAL,
            Ok(ProofKind::WindowPostPartition) => proto::Priority::High as i32,
            _ => proto::Priority::Normal as i32,
        },
        p => p.clamp(1, 4),
    }
}

/// The engine's priority of a wire priority.
fn engine_priority(wire: i32) -> Priority {
    match wire {
        1 => Priority::Low,
        3 => Priority::High,
        4 => Priority::Critical,
        _ => Priority::Normal,
    }
}

/// How a request's input is named in errors.
fn input_name(req: &SubmitProofRequest, job_id: &str, field: &str) -> String {
    match req.request_id.as_str() {
        "" => format!("job {job_id}: {field}"),
        r => format!("request \"{}\": {field}", loggable(r)),
    }
}

fn check_porep(kinds: &Kinds, req: &SubmitProofRequest, job_id: &str, policy: Policy) -> Result<Arc<PorepInput>, String> {
    if req.vanilla_proof.is_empty() {
        return Err("vanilla_proof is empty: a PoRep request carries the C1 output JSON".into());
    }
    let expected = expected_proof(req)?;
    let name = input_name(req, job_id, "vanilla_proof");
    let c1 = C1::parse(std::path::Path::new(&name), &req.vanilla_proof, expected).map_err(|e| e.to_string())?;
    if c1.synthetic && !policy.allow_synthetic {
        return Err("vanilla_proof is a synthetic C1 (cuzk gen-c1 --synthetic, marked cuzk_synthetic): its proof can never \
                    verify, and this daemon refuses synthetic inputs (jobs.allow_synthetic = false)"
            .into());
    }
    let rp: RegisteredSealProof = c1.registered_proof;
    if let Some(asked) = expected.filter(|e| *e != rp && req.registered_proof != 0) {
        return Err(format!("registered_proof {} ({asked:?}) but the C1 is a {rp:?} output", req.registered_proof));
    }
    if kinds.porep.resident(rp).1.is_none() {
        params::ensure_present(rp).map_err(|e| e.to_string())?;
    }
    let identity = SectorIdentity { miner_id: req.miner_id, sector_number: req.sector_number };
    Ok(Arc::new(PorepInput { c1, identity }))
}

/// A PoSt request as Curio encodes it: the registered PoSt proof by lotus number (which must
/// be of the kind the request names and, when given, of its sector size), `vanilla_proofs`
/// (field 11), `randomness`, `miner_id` and, for WindowPoSt, `partition_index`. The vanilla
/// proofs' own verification runs on the engine's parse stage.
fn check_post(kinds: &Kinds, req: &SubmitProofRequest, job_id: &str) -> Result<Arc<PostInput>, String> {
    let winning = req.proof_kind == ProofKind::WinningPost as i32;
    if req.vanilla_proofs.is_empty() {
        return Err("vanilla_proofs is empty: a PoSt request carries one vanilla proof per sector (field 11)".into());
    }
    let rp = post::registry::from_number(req.registered_proof).map_err(|e| e.to_string())?;
    if post::registry::is_winning(rp) != winning {
        return Err(format!("registered_proof {} ({rp:?}) is not a {} proof", req.registered_proof, kind_name(req.proof_kind)));
    }
    let size = post::registry::sector_size_of(rp);
    if req.sector_size != 0 && req.sector_size != size {
        return Err(format!("registered_proof {} ({rp:?}) does not match sector_size {}", req.registered_proof, req.sector_size));
    }
    let name = input_name(req, job_id, "vanilla_proofs");
    let input = PostInput::new(name, rp, &req.randomness, req.miner_id, req.partition_index as usize, req.vanilla_proofs.clone())
        .map_err(|e| e.to_string())?;
    // Checked on disk only while not resident (as for PoRep): no file read per request.
    if kinds.resident(Circuit::Post(rp)).1.is_none() {
        kinds.post.params_path(&rp).map_err(|e| e.to_string())?;
    }
    Ok(Arc::new(input))
}

/// A SnapDeals request as Curio encodes it: the registered update proof by lotus number
/// (of `sector_size` when given), one partition proof per partition in `vanilla_proofs`
/// (field 11) and comm_r_old, comm_r_new, comm_d_new (fields 30–32: raw 32 bytes or the
/// commitments' CID bytes). The partition proofs' own verification runs on the engine's
/// parse stage.
fn check_update(kinds: &Kinds, req: &SubmitProofRequest, job_id: &str) -> Result<Arc<UpdateInput>, String> {
    use cuzk_filecoin::curio::{commitment_from_wire, Commitment};
    if req.vanilla_proofs.is_empty() {
        return Err("vanilla_proofs is empty: a SnapDeals request carries one partition proof per partition (field 11)".into());
    }
    let rp = update::registry::from_number(req.registered_proof).map_err(|e| e.to_string())?;
    let size = update::registry::sector_size_of(rp);
    if req.sector_size != 0 && req.sector_size != size {
        return Err(format!("registered_proof {} ({rp:?}) does not match sector_size {}", req.registered_proof, req.sector_size));
    }
    let comm = |field: &str, bytes: &[u8], kind| commitment_from_wire(field, bytes, kind).map_err(|e| e.to_string());
    let comm_r_old = comm("comm_r_old", &req.comm_r_old, Commitment::Sealed)?;
    let comm_r_new = comm("comm_r_new", &req.comm_r_new, Commitment::Sealed)?;
    let comm_d_new = comm("comm_d_new", &req.comm_d_new, Commitment::Unsealed)?;
    let name = input_name(req, job_id, "vanilla_proofs");
    let input = UpdateInput::new(name, rp, &comm_r_old, &comm_r_new, &comm_d_new, req.vanilla_proofs.clone()).map_err(|e| e.to_string())?;
    // Checked on disk only while not resident (as for PoRep): no file read per request.
    if kinds.resident(Circuit::Update(rp)).1.is_none() {
        kinds.update.params_path(&rp).map_err(|e| e.to_string())?;
    }
    Ok(Arc::new(input))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_text_is_bounded_and_escaped_and_errors_are_cut() {
        let long = "x\n".repeat(10_000);
        let l = loggable(&long);
        assert!(l.len() < 200 && l.contains("\\n") && !l.contains('\n') && l.ends_with('…'), "{l}");
        assert_eq!(loggable("porep-1000-1"), "porep-1000-1");
        let e = truncated("é".repeat(5000), MAX_ERROR);
        assert!(e.len() <= MAX_ERROR + 20 && e.ends_with("(truncated)"));
        let a = new_job_id();
        assert_eq!(a.len(), 32);
        assert_ne!(a, new_job_id());
    }
}
