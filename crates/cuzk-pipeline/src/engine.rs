//! The engine: long-lived stage threads joined by bounded crossbeam channels —
//! parse (a job source becomes a job: shared PCE and parameters plus one synthesis closure per
//! partition) → witness (`synthesis_workers` threads; admission against the byte budget
//! happens here) → mat-vec → prove (`provers_per_device` threads per device) → finalize
//! (assemble the partition proofs in order, verify, answer). The partition is the unit of
//! work, so partitions of one proof and of the next flow through together. Urgent work
//! (priority at or above [`Config::urgent_from`]) has a lane of its own: a witness thread
//! that takes only urgent partitions (so they never wait for a running synthesis), its
//! mat-vec on that witness thread, it goes to a channel that every prover looks at
//! first, and each device has one more prover that takes only urgent work. So an urgent
//! partition is proved beside a running one instead of after it, and its device calls,
//! made at its job's priority, win the device lock at the running partition's next MSM or
//! NTT boundary (`cuzk_core::device_lock`). Any stage's error
//! or panic fails that proof only (its later partitions are skipped, its budget returned);
//! the other proofs go on; a device failure or a panic while proving fails its partition too,
//! or, under [`DeviceErrorPolicy::RetryOnCpu`], has it evaluated again and proved on the CPU.
//! Every stage runs the job's code under `catch_unwind`, so a panic is that job's failure
//! (`PipelineError::Panic`), never the engine's. Dropping
//! the engine (or [`Engine::shutdown`]) drains and joins.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use cuzk_core::backend::Backend;
use cuzk_core::groth16::{self, MsmMode, Witness};
use cuzk_core::srs::Srs;
use cuzk_pce::prove::MatVecPlace;
use cuzk_pce::{Evaluations, PreCompiledCircuit};
use cuzk_witness::WitnessCs;
use serde::Serialize;

use crate::budget::{Budget, Lease};
use crate::queue::{Priority, PriorityQueue};
use crate::trace::Trace;
use crate::{PipelineError, SharedError};

/// Witness synthesis of one partition against its PCE.
pub type Synthesize = Box<dyn FnOnce(&PreCompiledCircuit) -> Result<WitnessCs, SharedError> + Send>;
/// Puts a job's partition proofs (in order) together into the bytes its user gets.
pub type AssembleProof = Box<dyn FnOnce(&[Proof<Bls12>]) -> Result<Vec<u8>, SharedError> + Send>;
/// Checks a finished proof's bytes with the kind's official verifier.
pub type VerifyProof = Box<dyn FnOnce(&[u8]) -> Result<(), SharedError> + Send>;
/// Turns a submission into a job (runs on the parse stage).
pub type JobSource = Box<dyn FnOnce() -> Result<Job, PipelineError> + Send>;

/// One partition of a job.
pub struct PartitionInput {
    /// Makes this partition's witness; runs on a witness-stage thread, after admission.
    pub synthesize: Synthesize,
    /// The Groth16 blinding scalar `r` of this partition's proof.
    pub r: Scalar,
    /// The Groth16 blinding scalar `s` of this partition's proof.
    pub s: Scalar,
}

/// One proof: its shared PCE and parameters (one process-wide copy each), its partitions,
/// how their proofs become the user's bytes, and how to check the result (`None`: returned
/// unverified, by the caller's choice). [`crate::kind::job`] makes one from any proof kind.
pub struct Job {
    /// The circuit's pre-compiled constraint system, which every partition is synthesized
    /// against and evaluated with.
    pub pce: Arc<PreCompiledCircuit>,
    /// The circuit's Groth16 parameters, which every partition is proved with.
    pub params: Arc<Srs>,
    /// The partitions, in the order their proofs are handed to `assemble`; a job with none
    /// fails with [`PipelineError::Job`].
    pub partitions: Vec<PartitionInput>,
    /// Runs on the finalize stage once every partition is proved.
    pub assemble: AssembleProof,
    /// Runs on the assembled bytes; `None` leaves the proof unverified
    /// ([`Outcome::verified`] is then false).
    pub verify: Option<VerifyProof>,
}

/// A device with its backend; its provers' lanes are named after it.
#[derive(Clone)]
pub struct Device {
    /// Names its prover threads (`cuzk-prove-<name>-<i>`) and their trace lanes.
    pub name: String,
    /// What its provers prove on.
    pub backend: Arc<dyn Backend>,
}

/// What the prover does when its device fails on a partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum DeviceErrorPolicy {
    /// The partition, and so its proof, fails with the device's error (or its panic).
    #[default]
    Fail,
    /// After a device error or a panic on the device, the partition is evaluated again and
    /// proved on the CPU backend (slow, but the proof arrives); counted in
    /// [`Stats::retried_on_cpu`].
    RetryOnCpu,
}

/// Engine settings.
#[derive(Clone)]
pub struct Config {
    /// Partitions in witness synthesis at once (the seeds' `-j`).
    pub synthesis_workers: usize,
    /// Mat-vec stage threads (0 is taken as 1).
    pub matvec_workers: usize,
    /// Prover threads per device, each proving one partition at a time (0 is taken as 1).
    pub provers_per_device: usize,
    /// The devices partitions are proved on; [`Engine::start`] refuses an empty list
    /// ([`PipelineError::Config`]).
    pub devices: Vec<Device>,
    /// Host bytes that admitted partitions may hold together, the buffer pool's included.
    pub budget_bytes: u64,
    /// Bytes of idle gigabyte buffers (witness aux, selected scalars) kept for later
    /// partitions in the process's pool ([`cuzk_core::buffer_pool`]), so a steady pipeline
    /// does not fault in and zero fresh memory for every partition. Taken out of
    /// `budget_bytes` (partitions are admitted against the rest) and capped at half of it.
    /// [`Engine::start`] sets the process's pool to it; 0 leaves the pool as it is (keeping
    /// nothing unless another engine in the process sized it).
    pub buffer_pool_bytes: u64,
    /// Release the host's copy of a circuit's matrices (row offsets and entries: all but
    /// ~0.05 of the 5.9 GB of a 32 GiB PoRep partition's PCE) once every device holds them, with the
    /// mat-vec on the devices ([`MatVecPlace::Backend`]). A device that has lost its copy, or a
    /// CPU fallback, reloads them from the PCE's cache file. Only PCEs loaded through
    /// [`crate::resources`] are released.
    pub release_host_matrices: bool,
    /// How the provers compute the aux MSMs (L, A, B in G1 and G2).
    pub mode: MsmMode,
    /// Where a, b, c are computed: the mat-vec stage on the CPU (host), or the prover's
    /// backend (on a GPU only the witness is uploaded; a partition then holds no host a, b, c
    /// and the mat-vec stage passes it straight on).
    pub matvec: MatVecPlace,
    /// What a prover does when its device fails on a partition.
    pub on_device_error: DeviceErrorPolicy,
    /// RSS sampling period of the trace.
    pub sample_period: Duration,
    /// Record into this trace (e.g. one a benchmark already marks phases on) instead of a
    /// fresh one.
    pub trace: Option<Arc<Trace>>,
    /// A partition waiting for a witness worker rises one priority level per this much
    /// waiting, up to [`Priority::High`] (see [`crate::queue`]); zero: never.
    pub aging: Duration,
    /// Parse-stage threads (0 is taken as 1): more than one lets an urgent job be checked
    /// while another job's parse loads a circuit.
    pub parse_workers: usize,
    /// Jobs at or above this priority take the urgent lane: a witness thread of their own
    /// (beside the `synthesis_workers`), mat-vec on the witness thread, a
    /// prove channel every prover serves first, and one extra prover per device
    /// (`prove-<device>-urgent`) that takes nothing else, so they are proved beside a running
    /// partition and take its device at the next MSM or NTT boundary. Their partitions are
    /// admitted against the byte budget like any other. `None`: no urgent lane (an urgent
    /// partition then waits for a free prover). Default [`Priority::High`] (WindowPoSt and
    /// WinningPoSt).
    pub urgent_from: Option<Priority>,
    /// Threads of the pool kept for urgent partitions' CPU work (their witness, mat-vec and
    /// the prover's host steps run there, and every rayon call inside them), so that it does
    /// not queue behind bulk jobs' tasks in the process-wide pool. 0: urgent work shares the
    /// process-wide pool. Used only with an urgent lane. Default [`default_urgent_threads`]:
    /// one per core, so an urgent job on an idle machine has every core (4 capped a 32 GiB
    /// WinningPoSt's witness at 0.17 s where 16 cores take 0.06 s), and under load its threads
    /// get their share of the cores beside the bulk pool's (the pool's threads sleep when no
    /// urgent work runs).
    pub urgent_threads: usize,
}

/// Threads of the urgent lane's reserved pool by default: one per core the process may use
/// (4 when that cannot be told).
pub fn default_urgent_threads() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get())
}

impl Config {
    /// One CPU-backend device, `j` synthesis workers, one prover, a budget of `budget_bytes`.
    pub fn cpu(j: usize, budget_bytes: u64) -> Self {
        Config {
            synthesis_workers: j.max(1),
            matvec_workers: 1,
            provers_per_device: 1,
            devices: vec![Device { name: "cpu".into(), backend: Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) }],
            budget_bytes,
            buffer_pool_bytes: 0,
            release_host_matrices: false,
            mode: MsmMode::Auto,
            matvec: MatVecPlace::Auto,
            on_device_error: DeviceErrorPolicy::Fail,
            sample_period: Duration::from_millis(100),
            trace: None,
            aging: Duration::from_secs(120),
            parse_workers: 2,
            urgent_from: Some(Priority::High),
            urgent_threads: default_urgent_threads(),
        }
    }
}

/// Which of a partition's vectors the host holds while it is proved, from where the mat-vec
/// runs and what the devices keep ([`Backend::keeps_prover_vectors`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum HostVectors {
    /// The witness, a, b, c and the prover's buffers (the mat-vec on the host).
    All,
    /// The witness and the prover's buffers: the backend makes a, b, c.
    NoAbc,
    /// The witness alone: the backend makes a, b, c and keeps H and the side MSMs' scalars.
    WitnessOnly,
}

impl HostVectors {
    /// What the host holds with the mat-vec at `place` (resolved) on `devices`: the witness
    /// alone only when every device keeps its prover vectors.
    pub fn of(place: MatVecPlace, devices: &[Device]) -> Self {
        match place {
            MatVecPlace::Backend if !devices.is_empty() && devices.iter().all(|d| d.backend.keeps_prover_vectors()) => {
                HostVectors::WitnessOnly
            }
            MatVecPlace::Backend => HostVectors::NoAbc,
            _ => HostVectors::All,
        }
    }
}

/// The host bytes one partition holds between admission and the end of its proof, from the
/// PCE's counts: the witness (inputs and aux), a, b, c padded to the NTT domain, and the
/// prover's own buffers (H over the domain, the selected A and B aux scalars).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct WorkingSet {
    /// Bytes of the witness: 32 per input and per aux variable.
    pub witness: u64,
    /// Bytes of a, b and c on the host: 3 × 32 per domain element (the constraints rounded up
    /// to a power of two); zero when the backend does the mat-vec. Given back to the budget
    /// as soon as the prove step returns.
    pub abc: u64,
    /// Bytes of the prover's own buffers: 32 per domain element (H) plus 32 per set bit of
    /// the A and B aux densities (the selected scalars); zero when the device keeps them.
    pub prover: u64,
}

impl WorkingSet {
    /// The working set of the vectors `held` says the host holds.
    pub fn at(pce: &PreCompiledCircuit, held: HostVectors) -> Self {
        let ws = Self::of(pce);
        match held {
            HostVectors::All => ws,
            HostVectors::NoAbc => WorkingSet { abc: 0, ..ws },
            HostVectors::WitnessOnly => WorkingSet { abc: 0, prover: 0, ..ws },
        }
    }

    /// The working set with a, b, c on the host (the mat-vec stage on the CPU).
    pub fn of(pce: &PreCompiledCircuit) -> Self {
        const S: u64 = 32;
        let domain = pce.num_constraints.max(1).next_power_of_two() as u64;
        let (ni, na) = (pce.num_inputs as u64, pce.num_aux as u64);
        let selected = cuzk_pce::matrix::popcount(&pce.a_aux_density) + cuzk_pce::matrix::popcount(&pce.b_aux_density);
        WorkingSet { witness: S * (ni + na), abc: 3 * S * domain, prover: S * domain + S * selected as u64 }
    }

    /// Bytes in all: what a partition acquires from the budget on admission.
    pub fn total(&self) -> u64 {
        self.witness + self.abc + self.prover
    }
}

/// The answer for one submitted job.
#[derive(Debug)]
pub struct Outcome {
    /// The job's id, as on its [`Ticket`].
    pub id: u64,
    /// The proof bytes (partition proofs in order), or why there are none.
    pub result: Result<Vec<u8>, PipelineError>,
    /// True only when the job's verifier ran and accepted the proof (false for an error and
    /// for a job submitted without a verifier).
    pub verified: bool,
    /// When the job was submitted, in seconds on the engine's trace clock ([`Trace::now`]);
    /// 0 when the engine shut down before answering.
    pub submitted_s: f64,
    /// When the answer was made, in seconds on the same clock; 0 when the engine shut down
    /// before answering.
    pub finished_s: f64,
}

/// A submitted job's handle.
#[derive(Debug)]
pub struct Ticket {
    /// The job's id in this engine: assigned on submission, from 1 upward.
    pub id: u64,
    rx: Receiver<Outcome>,
}

impl Ticket {
    /// Waits for the outcome.
    pub fn wait(self) -> Outcome {
        let id = self.id;
        self.rx.recv().unwrap_or(Outcome { id, result: Err(PipelineError::Shutdown), verified: false, submitted_s: 0.0, finished_s: 0.0 })
    }

    /// Waits at most `timeout`; `None` if it is not done yet.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Outcome> {
        self.rx.recv_timeout(timeout).ok()
    }
}

struct Submission {
    id: u64,
    priority: Priority,
    source: JobSource,
    reply: Sender<Outcome>,
    submitted_s: f64,
}

struct ProofState {
    parts: Vec<Option<Proof<Bls12>>>,
    remaining: usize,
    error: Option<PipelineError>,
    assemble: AssembleProof,
    verify: Option<VerifyProof>,
    reply: Sender<Outcome>,
    submitted_s: f64,
    /// The job's priority: an urgent proof is finished on the urgent lane.
    priority: Priority,
}

/// The proofs inside the engine, by id: their partition proofs so far and how to answer.
type InFlight = Arc<Mutex<HashMap<u64, ProofState>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn failed(reg: &InFlight, id: u64) -> bool {
    lock(reg).get(&id).is_none_or(|s| s.error.is_some())
}

/// What every partition carries between stages.
struct Carry {
    id: u64,
    k: usize,
    r: Scalar,
    s: Scalar,
    pce: Arc<PreCompiledCircuit>,
    params: Arc<Srs>,
    /// The job's working set per partition (computed once per job).
    ws: WorkingSet,
    /// The job's priority: its provers' device calls are made at it.
    priority: Priority,
}

struct WitnessItem {
    c: Carry,
    synth: Synthesize,
}

struct MatvecItem {
    c: Carry,
    w: WitnessCs,
    lease: Lease,
}

struct ProveItem {
    c: Carry,
    w: WitnessCs,
    /// None: the backend evaluates the matrices itself.
    eval: Option<Evaluations>,
    lease: Lease,
}

struct Done {
    id: u64,
    k: usize,
    result: Result<Proof<Bls12>, PipelineError>,
}

fn guarded<T>(stage: &'static str, f: impl FnOnce() -> Result<T, PipelineError>) -> Result<T, PipelineError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let message = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic without a message".into());
        Err(PipelineError::Panic { stage, message })
    })
}

/// The running engine.
pub struct Engine {
    submit: Option<Arc<PriorityQueue<Submission>>>,
    threads: Vec<JoinHandle<()>>,
    trace: Arc<Trace>,
    budget: Budget,
    next_id: AtomicU64,
    stats: Arc<Stats>,
    devices: Vec<Device>,
}

/// Counters over the engine's life.
#[derive(Debug, Default)]
pub struct Stats {
    /// Proofs answered with their bytes (assembled and, when asked, verified).
    pub completed: AtomicU64,
    /// Proofs answered with an error by the finalize stage (a job whose source fails on the
    /// parse stage is answered there and not counted).
    pub failed: AtomicU64,
    /// Partitions proved, on their device or again on the CPU.
    pub partitions_proved: AtomicU64,
    /// Partitions whose device failed (or panicked) and that were proved again on the CPU.
    pub retried_on_cpu: AtomicU64,
}

impl Engine {
    /// Starts the stage threads.
    pub fn start(cfg: Config) -> Result<Engine, PipelineError> {
        if cfg.devices.is_empty() {
            return Err(PipelineError::Config("no proving device".into()));
        }
        let trace = cfg.trace.clone().unwrap_or_else(Trace::new);
        trace.start_sampler(cfg.sample_period);
        let pool_bytes = cfg.buffer_pool_bytes.min(cfg.budget_bytes / 2);
        if pool_bytes > 0 {
            cuzk_core::buffer_pool::scalar_pool().set_capacity(pool_bytes);
        }
        let budget = Budget::new(cfg.budget_bytes - pool_bytes);
        let stats = Arc::new(Stats::default());
        let (j, matvec_workers) = (cfg.synthesis_workers.max(1), cfg.matvec_workers.max(1));
        let provers = cfg.devices.len() * cfg.provers_per_device.max(1);
        let submissions = Arc::new(PriorityQueue::<Submission>::new(cfg.aging));
        let waiting = Arc::new(PriorityQueue::<WitnessItem>::new(cfg.aging));
        let (mv_tx, mv_rx) = bounded::<MatvecItem>(matvec_workers);
        let (pr_tx, pr_rx) = bounded::<ProveItem>(provers);
        // The urgent lane's prove channel: the witness threads send into it, every prover
        // looks at it first.
        let (urgent_tx, urgent_rx) = bounded::<ProveItem>(cfg.devices.len());
        let (done_tx, done_rx) = unbounded::<Done>();
        let stage = Stage { trace: trace.clone(), inflight: Arc::default(), done: done_tx };
        let matvec = cfg.matvec.resolve(&cfg.devices.iter().map(|d| d.backend.name()).collect::<Vec<_>>());
        let held = HostVectors::of(matvec, &cfg.devices);
        let fallback: Option<Arc<dyn Backend>> = (cfg.on_device_error == DeviceErrorPolicy::RetryOnCpu)
            .then(|| Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) as Arc<dyn Backend>);

        // The witness queue closes when the last parse thread is gone, however it ends.
        let closer = Arc::new(CloseOnDrop(waiting.clone()));
        let mut threads = Vec::new();
        for pi in 0..cfg.parse_workers.max(1) {
            let stage_fn = parse_stage(stage.clone(), submissions.clone(), waiting.clone(), closer.clone(), held);
            threads.push(spawn(format!("cuzk-parse-{pi}"), stage_fn)?);
        }
        drop(closer);
        let pool = match (cfg.urgent_from, cfg.urgent_threads) {
            (Some(_), n) if n > 0 => Some(Arc::new(
                cuzk_core::reserved_pool::ReservedPool::new(n, "cuzk-urgent")
                    .map_err(|e| PipelineError::Config(format!("the urgent lane's {n} threads: {e}")))?,
            )),
            _ => None,
        };
        let urgent_lane = UrgentLane { from: cfg.urgent_from, pool };
        let out = || WitnessOut { matvec: mv_tx.clone(), urgent: urgent_tx.clone(), lane: urgent_lane.clone(), place: matvec };
        for wi in 0..j {
            let stage_fn = witness_stage(stage.clone(), wi.to_string(), waiting.clone(), out(), budget.clone(), None);
            threads.push(spawn(format!("cuzk-witness-{wi}"), stage_fn)?);
        }
        if let Some(u) = cfg.urgent_from {
            let stage_fn = witness_stage(stage.clone(), "urgent".into(), waiting.clone(), out(), budget.clone(), Some(u));
            threads.push(spawn("cuzk-witness-urgent".into(), stage_fn)?);
        }
        drop((mv_tx, urgent_tx));
        for mi in 0..matvec_workers {
            threads.push(spawn(format!("cuzk-matvec-{mi}"), matvec_stage(stage.clone(), mi, mv_rx.clone(), pr_tx.clone(), matvec))?);
        }
        drop(pr_tx);
        let release_when_held: Option<Arc<[Arc<dyn Backend>]>> =
            (cfg.release_host_matrices && matvec == MatVecPlace::Backend).then(|| cfg.devices.iter().map(|d| d.backend.clone()).collect());
        for dev in &cfg.devices {
            let prover = |index: String| Prover {
                dev: dev.clone(),
                index,
                mode: cfg.mode,
                stats: stats.clone(),
                fallback: fallback.clone(),
                release_when_held: release_when_held.clone(),
            };
            for pi in 0..cfg.provers_per_device.max(1) {
                let stage_fn =
                    prove_stage(stage.clone(), prover(pi.to_string()), urgent_rx.clone(), Some(pr_rx.clone()), urgent_lane.clone());
                threads.push(spawn(format!("cuzk-prove-{}-{pi}", dev.name), stage_fn)?);
            }
            if cfg.urgent_from.is_some() {
                let stage_fn = prove_stage(stage.clone(), prover("urgent".into()), urgent_rx.clone(), None, urgent_lane.clone());
                threads.push(spawn(format!("cuzk-prove-{}-urgent", dev.name), stage_fn)?);
            }
        }
        // The finalize thread ends when every stage thread (each holding a `done` sender) has.
        let (trace_f, inflight_f) = (stage.trace.clone(), stage.inflight.clone());
        drop(stage);
        let (bulk_tx, bulk_rx) = crossbeam_channel::unbounded();
        let answering = Answering { trace: trace_f, stats: stats.clone() };
        threads.push(spawn("cuzk-finalize-bulk".into(), finalize_bulk_stage(answering.clone(), bulk_rx))?);
        threads.push(spawn("cuzk-finalize".into(), finalize_stage(answering, inflight_f, done_rx, bulk_tx, urgent_lane))?);
        Ok(Engine { submit: Some(submissions), threads, trace, budget, next_id: AtomicU64::new(1), stats, devices: cfg.devices })
    }

    /// The proving devices (for what they keep resident, and to make them forget it).
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// Queues a job at [`Priority::Normal`]; its outcome comes through the ticket.
    pub fn submit(&self, source: JobSource) -> Result<Ticket, PipelineError> {
        self.submit_at(source, Priority::Normal)
    }

    /// Queues a job whose partitions go to the witness workers in `priority` order (see
    /// [`crate::queue`]); its outcome comes through the ticket.
    pub fn submit_at(&self, source: JobSource, priority: Priority) -> Result<Ticket, PipelineError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (reply, rx) = bounded(1);
        let queue = self.submit.as_ref().ok_or(PipelineError::Shutdown)?;
        queue.push(priority, id, Submission { id, priority, source, reply, submitted_s: self.trace.now() });
        Ok(Ticket { id, rx })
    }

    /// The trace the stages record into: their events and the RSS samples.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }

    /// The byte budget partitions are admitted against (its use and high-water mark).
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The engine's counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Stops taking jobs, lets the queued ones finish, joins every thread and the sampler.
    pub fn shutdown(mut self) {
        self.join();
    }

    fn join(&mut self) {
        if let Some(q) = self.submit.take() {
            q.close();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.trace.stop_sampler();
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.join();
    }
}

/// What every stage thread but finalize shares: the trace, the proofs in flight and the
/// channel to finalize.
#[derive(Clone)]
struct Stage {
    trace: Arc<Trace>,
    inflight: InFlight,
    done: Sender<Done>,
}

impl Stage {
    fn done(&self, id: u64, k: usize, result: Result<Proof<Bls12>, PipelineError>) {
        let _ = self.done.send(Done { id, k, result });
    }

    /// True (and the partition reported skipped) when another partition of its proof failed.
    fn skipped(&self, c: &Carry) -> bool {
        let failed = failed(&self.inflight, c.id);
        if failed {
            self.done(c.id, c.k, Err(PipelineError::Skipped));
        }
        failed
    }

    /// Passes `item` on to the next stage, or reports its partition lost to shutdown.
    fn forward<T>(&self, tx: &Sender<T>, item: T, id: u64, k: usize) {
        if tx.send(item).is_err() {
            self.done(id, k, Err(PipelineError::Shutdown));
        }
    }
}

type StageFn = Box<dyn FnOnce() + Send>;

fn spawn(name: String, f: StageFn) -> Result<JoinHandle<()>, PipelineError> {
    std::thread::Builder::new().name(name.clone()).spawn(f).map_err(|e| PipelineError::Config(format!("spawning {name}: {e}")))
}

/// Closes a queue when dropped (the last parse thread's share closes the witness queue).
struct CloseOnDrop<T>(Arc<PriorityQueue<T>>);

impl<T> Drop for CloseOnDrop<T> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Parse (`parse_workers` threads): the most urgent submission's job source runs here; its
/// partitions wait for the witness stage in the priority queue. Several threads, so that an
/// urgent job is parsed while a slow one (a first-time circuit load) is.
fn parse_stage(
    st: Stage,
    submissions: Arc<PriorityQueue<Submission>>,
    waiting: Arc<PriorityQueue<WitnessItem>>,
    closer: Arc<CloseOnDrop<WitnessItem>>,
    held: HostVectors,
) -> StageFn {
    Box::new(move || {
        let _closer = closer;
        while let Some(sub) = submissions.pop() {
            let job = st.trace.record("parse", sub.id, 0, "parse", "", || guarded("parse", sub.source));
            let job = match job {
                Ok(j) if j.partitions.is_empty() => Err(PipelineError::Job("the job has no partitions".into())),
                other => other,
            };
            let job = match job {
                Ok(job) => job,
                Err(e) => {
                    let outcome =
                        Outcome { id: sub.id, result: Err(e), verified: false, submitted_s: sub.submitted_s, finished_s: st.trace.now() };
                    let _ = sub.reply.send(outcome);
                    continue;
                }
            };
            let n = job.partitions.len();
            let state = ProofState {
                parts: (0..n).map(|_| None).collect(),
                remaining: n,
                error: None,
                assemble: job.assemble,
                verify: job.verify,
                reply: sub.reply,
                submitted_s: sub.submitted_s,
                priority: sub.priority,
            };
            lock(&st.inflight).insert(sub.id, state);
            let ws = WorkingSet::at(&job.pce, held);
            for (k, p) in job.partitions.into_iter().enumerate() {
                let c =
                    Carry { id: sub.id, k, r: p.r, s: p.s, pce: job.pce.clone(), params: job.params.clone(), ws, priority: sub.priority };
                // Submission order, then partition order (a proof has far fewer than 2^20).
                waiting.push(sub.priority, (sub.id << 20) | k as u64, WitnessItem { c, synth: p.synthesize });
            }
        }
    })
}

/// Where a witness thread sends its partitions: the mat-vec stage, or (urgent work) straight
/// to the provers' urgent channel after doing the mat-vec itself.
struct WitnessOut {
    matvec: Sender<MatvecItem>,
    urgent: Sender<ProveItem>,
    lane: UrgentLane,
    place: MatVecPlace,
}

/// Which partitions are urgent, and the pool their CPU work runs on.
#[derive(Clone)]
struct UrgentLane {
    from: Option<Priority>,
    pool: Option<Arc<cuzk_core::reserved_pool::ReservedPool>>,
}

impl UrgentLane {
    /// Whether work of priority `p` is urgent.
    fn takes(&self, p: Priority) -> bool {
        self.from.is_some_and(|u| p >= u)
    }

    /// `f`, CPU work that does not block (synthesis, the host mat-vec, finishing a proof), at
    /// priority `p`: on the reserved pool when `p` is urgent and there is one.
    fn run<R: Send>(&self, p: Priority, f: impl FnOnce() -> R + Send) -> R {
        let at_priority = || {
            let _p = p.enter();
            f()
        };
        match &self.pool {
            Some(pool) if self.takes(p) => pool.install(at_priority),
            _ => at_priority(),
        }
    }

    /// `f`, work that blocks (a proof: its threads wait on the device lock), at priority `p`
    /// on this thread, its parallel host work routed to the reserved pool when `p` is urgent.
    /// Run there instead, its waits would hold the pool's few threads, and its own threads would
    /// send their host work to rayon's global pool, behind every bulk task.
    fn route<R>(&self, p: Priority, f: impl FnOnce() -> R) -> R {
        let _p = p.enter();
        let _route = match &self.pool {
            Some(pool) if self.takes(p) => Some(pool.route()),
            _ => None,
        };
        f()
    }
}

/// Witness: admission against the byte budget, then the partition's witness synthesis. An
/// urgent partition's mat-vec runs here too, so that it never queues behind other
/// partitions in the mat-vec stage or the provers' ordinary channel. A thread with
/// `only_from` takes only partitions queued at that priority or above (the urgent lane's own
/// witness thread, so an urgent partition never waits for a running synthesis).
fn witness_stage(
    st: Stage,
    name: String,
    waiting: Arc<PriorityQueue<WitnessItem>>,
    out: WitnessOut,
    budget: Budget,
    only_from: Option<Priority>,
) -> StageFn {
    Box::new(move || {
        let lane = format!("witness-{name}");
        while let Some(WitnessItem { c, synth }) = waiting.pop_at_least(only_from.unwrap_or(Priority::Low)) {
            if st.skipped(&c) {
                continue;
            }
            let made = budget.acquire(c.ws.total()).and_then(|lease| {
                let w = out.lane.run(c.priority, || {
                    st.trace
                        .record("witness", c.id, c.k, &lane, "", || guarded("witness", || synth(&c.pce).map_err(PipelineError::Witness)))
                })?;
                Ok((w, lease))
            });
            let (id, k) = (c.id, c.k);
            let urgent = out.lane.takes(c.priority);
            match made {
                Ok((w, lease)) if urgent => match out.lane.run(c.priority, || evaluate(&st, &lane, &c, &w, out.place)) {
                    Ok(eval) => st.forward(&out.urgent, ProveItem { c, w, eval, lease }, id, k),
                    Err(e) => st.done(id, k, Err(e)),
                },
                Ok((w, lease)) => st.forward(&out.matvec, MatvecItem { c, w, lease }, id, k),
                Err(e) => st.done(id, k, Err(e)),
            }
        }
    })
}

/// a, b, c of a partition on the host (traced as `mat-vec` on `lane`), or `None` when the
/// backend evaluates the matrices itself.
fn evaluate(st: &Stage, lane: &str, c: &Carry, w: &WitnessCs, place: MatVecPlace) -> Result<Option<Evaluations>, PipelineError> {
    match place {
        MatVecPlace::Backend => Ok(None),
        _ => st.trace.record("mat-vec", c.id, c.k, lane, "", || guarded("mat-vec", || evaluate_on_host(c, w).map(Some))),
    }
}

/// a, b, c of a partition on the host, with the matrix entries reloaded first if they were
/// released.
fn evaluate_on_host(c: &Carry, w: &WitnessCs) -> Result<Evaluations, PipelineError> {
    let pce = crate::resources::with_entries(&c.pce)?;
    pce.evaluate(&w.inputs, &w.aux).map_err(|e| PipelineError::Prove(Arc::new(e)))
}

/// Mat-vec: a, b, c on the host, unless the backend evaluates the matrices itself.
fn matvec_stage(st: Stage, mi: usize, rx: Receiver<MatvecItem>, tx: Sender<ProveItem>, matvec: MatVecPlace) -> StageFn {
    Box::new(move || {
        let lane = format!("mat-vec-{mi}");
        for MatvecItem { c, w, lease } in rx {
            if st.skipped(&c) {
                continue;
            }
            let eval = evaluate(&st, &lane, &c, &w, matvec);
            let (id, k) = (c.id, c.k);
            match eval {
                Ok(eval) => st.forward(&tx, ProveItem { c, w, eval, lease }, id, k),
                Err(e) => st.done(id, k, Err(e)),
            }
        }
    })
}

/// One prover thread's device and settings.
struct Prover {
    dev: Device,
    /// Its number on the device, or `urgent`.
    index: String,
    mode: MsmMode,
    stats: Arc<Stats>,
    /// The CPU backend a failed device's partition is retried on (`RetryOnCpu`).
    fallback: Option<Arc<dyn Backend>>,
    /// Every device of the engine, when the host releases a circuit's matrix entries once they
    /// all hold its matrices (`Config::release_host_matrices`).
    release_when_held: Option<Arc<[Arc<dyn Backend>]>>,
}

impl Prover {
    /// The partition's proof on the device, or (device failure or panic under `RetryOnCpu`)
    /// on the CPU.
    fn prove(&self, trace: &Trace, lane: &str, c: &Carry, w: &WitnessCs, eval: Option<Evaluations>) -> Result<Proof<Bls12>, PipelineError> {
        let dev = &self.dev;
        let on_device = eval.is_none();
        let prove_on_device = |pce: &PreCompiledCircuit, eval| {
            trace.record("prove", c.id, c.k, lane, &dev.name, || {
                guarded("prove", || prove_partition(dev.backend.as_ref(), c, pce, w, eval, self.mode))
            })
        };
        let result = match prove_on_device(&c.pce, eval) {
            // The matrices' host entries were released and this device has no copy (evicted,
            // or never uploaded): reload them, let the device take its copy again, and release
            // them again once every device holds one.
            Err(e) if retried_on_cpu(&e) && c.pce.entries_released() => {
                tracing::info!(proof = c.id, partition = c.k, device = %dev.name, "{}; reloading the matrix entries", e.chain());
                crate::resources::with_entries(&c.pce).and_then(|full| {
                    let proof = prove_on_device(&full, None)?;
                    self.release_if_held(&full);
                    Ok(proof)
                })
            }
            Ok(proof) if on_device => {
                self.release_if_held(&c.pce);
                Ok(proof)
            }
            r => r,
        };
        match (result, &self.fallback) {
            (Err(e), Some(cpu)) if retried_on_cpu(&e) => {
                tracing::warn!(proof = c.id, partition = c.k, device = %dev.name, "{}; proving this partition again on the CPU", e.chain());
                self.stats.retried_on_cpu.fetch_add(1, Ordering::Relaxed);
                trace.record("prove", c.id, c.k, &format!("retry-cpu-{}-{}", dev.name, self.index), "cpu", || {
                    guarded("prove", || {
                        let pce = crate::resources::with_entries(&c.pce)?;
                        let eval = pce.evaluate(&w.inputs, &w.aux).map_err(|e| PipelineError::Prove(Arc::new(e)))?;
                        prove_partition(cpu.as_ref(), c, &pce, w, Some(eval), self.mode)
                    })
                })
            }
            (r, _) => r,
        }
    }

    /// Releases the host's matrix entries of `pce` once every device of the engine holds its
    /// matrices (with `Config::release_host_matrices`).
    fn release_if_held(&self, pce: &PreCompiledCircuit) {
        let Some(devices) = &self.release_when_held else { return };
        if pce.entries_released() {
            return;
        }
        let m = pce.matrices();
        if m.identity.is_some() && devices.iter().all(|d| d.holds_matrices(&m)) {
            crate::resources::release_host_entries(pce);
        }
    }
}

/// Whether `RetryOnCpu` proves a partition again after this prove-stage error: a device
/// error, or a panic on the device (a panic is a fault of this partition, not of the process;
/// the backend's locks survive it, see `cuzk_gpu::DeviceLock`).
fn retried_on_cpu(e: &PipelineError) -> bool {
    matches!(e, PipelineError::Device(_) | PipelineError::Panic { stage: "prove", .. })
}

/// The next partition for a prover: an urgent one first, else whichever comes first of the
/// urgent channel and `normal` (`None`: the thread serves only urgent work); `None` once
/// every channel it serves is closed and empty (the mat-vec and witness threads, which hold
/// both senders, are gone).
fn next_item(urgent: &Receiver<ProveItem>, normal: Option<&Receiver<ProveItem>>) -> Option<ProveItem> {
    let Some(normal) = normal else { return urgent.recv().ok() };
    crossbeam_channel::select_biased! {
        recv(urgent) -> item => item.ok().or_else(|| normal.recv().ok()),
        recv(normal) -> item => item.ok().or_else(|| urgent.recv().ok()),
    }
}

/// Prove: the Groth16 proof of each partition on this thread's device, its device calls made
/// at the partition's job priority (see `cuzk_core::priority`).
fn prove_stage(
    st: Stage,
    prover: Prover,
    urgent: Receiver<ProveItem>,
    normal: Option<Receiver<ProveItem>>,
    urgent_lane: UrgentLane,
) -> StageFn {
    Box::new(move || {
        let lane = format!("prove-{}-{}", prover.dev.name, prover.index);
        while let Some(ProveItem { c, w, eval, mut lease }) = next_item(&urgent, normal.as_ref()) {
            if st.skipped(&c) {
                continue;
            }
            let result = urgent_lane.route(c.priority, || prover.prove(&st.trace, &lane, &c, &w, eval));
            // a, b, c were consumed (and freed) by the prover; the witness goes now, its aux
            // back to the process's buffer pool for a later partition.
            lease.release(c.ws.abc);
            cuzk_core::buffer_pool::scalar_pool().give(w.aux);
            drop(lease);
            if result.is_ok() {
                prover.stats.partitions_proved.fetch_add(1, Ordering::Relaxed);
            }
            st.done(c.id, c.k, result);
        }
    })
}

/// What answering a finished proof needs: the trace and the counters.
#[derive(Clone)]
struct Answering {
    trace: Arc<Trace>,
    stats: Arc<Stats>,
}

impl Answering {
    /// Assembles, verifies and answers proof `id`, whose partitions are all in.
    fn answer(&self, id: u64, st: ProofState, lane: &str) {
        let (result, verified) = self.trace.record("finalize", id, 0, lane, "", || finish(st.parts, st.error, st.assemble, st.verify));
        let counter = if result.is_ok() { &self.stats.completed } else { &self.stats.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        let _ = st.reply.send(Outcome { id, result, verified, submitted_s: st.submitted_s, finished_s: self.trace.now() });
    }
}

/// Finalize: collects partition proofs. A proof whose partitions are all in is assembled,
/// verified and answered — here, on the urgent lane's pool, when it is urgent (its
/// verification then waits neither for a bulk proof's nor for bulk work on rayon's global
/// pool), else on the bulk finalize thread.
fn finalize_stage(
    answering: Answering,
    inflight: InFlight,
    rx: Receiver<Done>,
    bulk: Sender<(u64, ProofState)>,
    lane: UrgentLane,
) -> StageFn {
    Box::new(move || {
        for d in rx {
            let Some(st) = record_partition(&inflight, d.id, d.k, d.result) else { continue };
            let priority = st.priority;
            if lane.takes(priority) {
                lane.run(priority, || answering.answer(d.id, st, "finalize-urgent"));
            } else if let Err(e) = bulk.send((d.id, st)) {
                // The bulk thread is gone (it panicked): answer here rather than drop the reply.
                let (id, st) = e.into_inner();
                answering.answer(id, st, "finalize");
            }
        }
    })
}

/// The bulk finalize thread: answers the proofs that are not urgent, in the order they finish.
fn finalize_bulk_stage(answering: Answering, rx: Receiver<(u64, ProofState)>) -> StageFn {
    Box::new(move || {
        for (id, st) in rx {
            answering.answer(id, st, "finalize");
        }
    })
}

/// Files one partition's result under its proof; returns the proof's state once its last
/// partition is in (and removes it from the in-flight table).
fn record_partition(inflight: &InFlight, id: u64, k: usize, result: Result<Proof<Bls12>, PipelineError>) -> Option<ProofState> {
    let mut map = lock(inflight);
    let st = map.get_mut(&id)?;
    match result {
        Ok(p) => st.parts[k] = Some(p),
        Err(PipelineError::Skipped) => {}
        Err(e) => {
            if st.error.is_none() {
                tracing::warn!(proof = id, partition = k, "partition failed: {}", e.chain());
                st.error = Some(e);
            }
        }
    }
    st.remaining -= 1;
    if st.remaining == 0 {
        map.remove(&id)
    } else {
        None
    }
}

/// One partition's Groth16 proof on `backend` (a, b, c are consumed; without them the backend
/// evaluates the matrices).
fn prove_partition(
    backend: &dyn Backend,
    c: &Carry,
    pce: &PreCompiledCircuit,
    w: &WitnessCs,
    eval: Option<Evaluations>,
    mode: MsmMode,
) -> Result<Proof<Bls12>, PipelineError> {
    let d = cuzk_pce::prove::densities(pce);
    let wit = match eval {
        Some(e) => Witness::evaluated(&w.inputs, &w.aux, e),
        None => Witness { inputs: &w.inputs, aux: &w.aux, evals: cuzk_core::groth16::Evals::Matrices(pce.matrices()) },
    };
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    groth16::prove(backend, c.params.sections(), &d, wit, c.r, c.s, mode)
        .map(|(p, t)| {
            tracing::debug!(
                proof = c.id,
                partition = c.k,
                wall_ms = ms(t.wall),
                matvec_ms = ms(t.matvec),
                quotient_ms = ms(t.quotient),
                msm_h_ms = ms(t.msm_h),
                msm_l_ms = ms(t.msm_l),
                msm_a_ms = ms(t.msm_a),
                msm_b_g1_ms = ms(t.msm_b_g1),
                msm_b_g2_ms = ms(t.msm_b_g2),
                "prover steps"
            );
            p
        })
        .map_err(|e| match e {
            cuzk_core::Error::Device(m) => PipelineError::Device(m),
            e => PipelineError::Prove(Arc::new(e)),
        })
}

fn finish(
    parts: Vec<Option<Proof<Bls12>>>,
    error: Option<PipelineError>,
    assemble: AssembleProof,
    verify: Option<VerifyProof>,
) -> (Result<Vec<u8>, PipelineError>, bool) {
    if let Some(e) = error {
        return (Err(e), false);
    }
    let proofs: Option<Vec<Proof<Bls12>>> = parts.into_iter().collect();
    let Some(proofs) = proofs else {
        return (Err(PipelineError::Job("a partition produced no proof".into())), false);
    };
    let out = match guarded("assemble", || assemble(&proofs).map_err(PipelineError::Prove)) {
        Ok(out) => out,
        Err(e) => return (Err(e), false),
    };
    match verify {
        None => (Ok(out), false),
        Some(v) => match guarded("verify", || v(&out).map_err(PipelineError::Verify)) {
            Ok(()) => (Ok(out), true),
            Err(e) => (Err(e), false),
        },
    }
}
