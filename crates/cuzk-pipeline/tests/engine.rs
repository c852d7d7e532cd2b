//! The engine on small satisfiable circuits (CPU backend): every proof equals bellperson's
//! `create_proof` for the same r and s and verifies; a partition that fails or panics fails
//! its own proof only, and all budget comes back; a working set larger than the budget is
//! refused, not waited on; a tight budget serialises partitions; a verification failure is
//! caught and nothing is returned; partitions of several proofs really overlap; shutdown with
//! queued work answers every ticket; an injected device failure fails its proof or is proved
//! again on the CPU, as configured, and so is a panic on the device; corrupted evaluations and
//! MSM results are caught by verification; a CRITICAL job takes the device from a running LOW
//! partition at its next call boundary.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bellperson::groth16::{self, Parameters, Proof};
use blstrs::{Bls12, Scalar};
use cuzk_core::backend::fault::{parse_plans, FaultyBackend};
use cuzk_core::testing::SatisfiedCircuit;
use cuzk_pce::paramgen::{generate_for, Secrets};
use cuzk_pce::{extract, PreCompiledCircuit};
use cuzk_pipeline::engine::{Synthesize, VerifyProof};
use cuzk_pipeline::{Config, DeviceErrorPolicy, Engine, HostVectors, Job, JobSource, Outcome, PartitionInput, PipelineError, WorkingSet};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const STEPS: usize = 400;

struct Fixture {
    circuit: SatisfiedCircuit,
    pce: Arc<PreCompiledCircuit>,
    params: Arc<Parameters<Bls12>>,
}

/// Bytes of one compressed Groth16 proof over BLS12-381.
const PROOF_BYTES: usize = 192;

fn fixture() -> Fixture {
    let circuit = SatisfiedCircuit { seed: 3, steps: STEPS };
    let pce = Arc::new(extract(circuit.clone()).unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let params = Arc::new(generate_for(circuit.clone(), &Secrets::random(&mut rng)).unwrap().0);
    Fixture { circuit, pce, params }
}

fn rs(seed: u64, n: usize) -> Vec<(Scalar, Scalar)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect()
}

/// Synthesis of `c`, taking at least `delay` (so that stages visibly overlap).
fn synth_ok(c: SatisfiedCircuit, delay: Duration) -> Synthesize {
    Box::new(move |pce: &PreCompiledCircuit| {
        std::thread::sleep(delay);
        cuzk_pce::witness::checked_witness(c, pce).map_err(PipelineError::shared)
    })
}

/// A job of `rs.len()` partitions; `bad` replaces one partition's synthesis.
fn job(f: &Fixture, rs: &[(Scalar, Scalar)], bad: Option<(usize, Synthesize)>, verify: Option<VerifyProof>) -> JobSource {
    job_with_delay(f, rs, bad, verify, Duration::ZERO)
}

fn job_with_delay(
    f: &Fixture,
    rs: &[(Scalar, Scalar)],
    bad: Option<(usize, Synthesize)>,
    verify: Option<VerifyProof>,
    delay: Duration,
) -> JobSource {
    let (pce, params, circuit) = (f.pce.clone(), f.params.clone(), f.circuit.clone());
    let rs = rs.to_vec();
    let mut bad = bad;
    Box::new(move || {
        let partitions = rs
            .iter()
            .enumerate()
            .map(|(k, &(r, s))| {
                let synthesize = match bad.take() {
                    Some((i, b)) if i == k => b,
                    other => {
                        bad = other;
                        synth_ok(circuit.clone(), delay)
                    }
                };
                PartitionInput { synthesize, r, s }
            })
            .collect();
        let assemble: cuzk_pipeline::engine::AssembleProof =
            Box::new(|proofs: &[_]| cuzk_pipeline::kind::concatenate(proofs).map_err(PipelineError::shared));
        Ok(Job { pce, params: Arc::new(Arc::unwrap_or_clone(params).into()), partitions, assemble, verify })
    })
}

fn reference(f: &Fixture, rs: &[(Scalar, Scalar)]) -> Vec<u8> {
    let mut out = Vec::new();
    for &(r, s) in rs {
        groth16::create_proof(f.circuit.clone(), &*f.params, r, s).unwrap().write(&mut out).unwrap();
    }
    out
}

fn verifies(f: &Fixture, bytes: &[u8]) -> bool {
    let pvk = groth16::prepare_verifying_key(&f.params.vk);
    let w = cuzk_witness::witness(f.circuit.clone(), f.pce.num_inputs, f.pce.num_aux).unwrap();
    bytes.chunks(PROOF_BYTES).all(|c| {
        let p = Proof::<Bls12>::read(c).unwrap();
        groth16::verify_proof(&pvk, &p, &w.inputs[1..]).unwrap()
    })
}

fn roomy() -> u64 {
    1 << 34
}

#[test]
fn proofs_equal_bellpersons_and_verify_with_several_proofs_in_flight() {
    let f = fixture();
    let mut cfg = Config::cpu(3, roomy());
    cfg.provers_per_device = 2;
    let engine = Engine::start(cfg).unwrap();
    let sets: Vec<Vec<(Scalar, Scalar)>> = (0..5).map(|k| rs(k, 3)).collect();
    let delay = Duration::from_millis(40);
    let tickets: Vec<_> = sets.iter().map(|s| engine.submit(job_with_delay(&f, s, None, None, delay)).unwrap()).collect();
    for (t, s) in tickets.into_iter().zip(&sets) {
        let out = t.wait();
        let bytes = out.result.unwrap();
        assert_eq!(bytes, reference(&f, s), "proof {} differs from bellperson's for the same r, s", out.id);
        assert!(verifies(&f, &bytes));
        assert!(!out.verified, "no verifier was given, so the outcome must not claim verification");
    }
    // Partitions of different proofs were in flight together.
    let ev = engine.trace().events();
    let witness: Vec<_> = ev.iter().filter(|e| e.stage == "witness").collect();
    assert_eq!(witness.len(), 15);
    let overlapping = witness.iter().any(|a| witness.iter().any(|b| a.proof != b.proof && a.start_s < b.end_s && b.start_s < a.end_s));
    assert!(overlapping, "with 3 synthesis workers, partitions of different proofs must overlap");
    assert_eq!(engine.budget().in_use(), 0);
    assert_eq!(engine.stats().completed.load(Ordering::Relaxed), 5);
}

#[test]
fn with_the_backends_mat_vec_proofs_are_the_same_and_no_host_abc_is_budgeted() {
    let f = fixture();
    let mut cfg = Config::cpu(2, roomy());
    cfg.matvec = cuzk_pce::prove::MatVecPlace::Backend;
    let engine = Engine::start(cfg).unwrap();
    let sets: Vec<Vec<(Scalar, Scalar)>> = (10..12).map(|k| rs(k, 2)).collect();
    let tickets: Vec<_> = sets.iter().map(|s| engine.submit(job(&f, s, None, None)).unwrap()).collect();
    for (t, s) in tickets.into_iter().zip(&sets) {
        assert_eq!(t.wait().result.unwrap(), reference(&f, s), "the backend's mat-vec changed the proof");
    }
    let ev = engine.trace().events();
    assert!(ev.iter().all(|e| e.stage != "mat-vec"), "no host mat-vec stage runs when the backend evaluates");
    assert_eq!(engine.budget().in_use(), 0);
    let host = WorkingSet::of(&f.pce);
    let dev = WorkingSet::at(&f.pce, HostVectors::NoAbc);
    assert_eq!((dev.abc, dev.witness, dev.prover), (0, host.witness, host.prover));
}

/// A CPU backend that says it keeps its prover vectors, as the CUDA backend does with the
/// witness handed over to the side MSMs and no resident budget.
struct KeepingDevice(cuzk_core::backend::cpu::CpuBackend);

impl KeepingDevice {
    fn inner(&self) -> &cuzk_core::backend::cpu::CpuBackend {
        &self.0
    }
}

cuzk_core::backend_pass_through!(KeepingDevice, inner);

impl cuzk_core::backend::Backend for KeepingDevice {
    fn name(&self) -> &str {
        "keeping"
    }
    fn keeps_prover_vectors(&self) -> bool {
        true
    }
}

/// The budget charges a partition its witness alone only where every device keeps a, b, c,
/// H and the side MSMs' scalars itself and the mat-vec runs there; one device that does not
/// (the CPU) brings the prover's buffers back, and the host's mat-vec brings a, b, c back.
#[test]
fn the_working_set_drops_the_prover_buffers_only_where_every_device_keeps_them() {
    use cuzk_pce::prove::MatVecPlace;
    use cuzk_pipeline::Device;
    let f = fixture();
    let keeping = || Device { name: "keeping".into(), backend: Arc::new(KeepingDevice(Default::default())) };
    let cpu = || Device { name: "cpu".into(), backend: Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) };
    assert_eq!(HostVectors::of(MatVecPlace::Backend, &[keeping(), keeping()]), HostVectors::WitnessOnly);
    assert_eq!(HostVectors::of(MatVecPlace::Backend, &[keeping(), cpu()]), HostVectors::NoAbc);
    assert_eq!(HostVectors::of(MatVecPlace::Backend, &[]), HostVectors::NoAbc);
    assert_eq!(HostVectors::of(MatVecPlace::Host, &[keeping()]), HostVectors::All);
    let (all, lean) = (WorkingSet::of(&f.pce), WorkingSet::at(&f.pce, HostVectors::WitnessOnly));
    assert!(all.prover > 0 && all.abc > 0);
    assert_eq!((lean.witness, lean.abc, lean.prover, lean.total()), (all.witness, 0, 0, all.witness));
    assert_eq!(WorkingSet::at(&f.pce, HostVectors::All).total(), all.total());

    // The engine charges the budget so: a partition proved on a keeping device leases its
    // witness's bytes alone (the budget's high water after one partition).
    let mut cfg = Config::cpu(1, roomy());
    cfg.devices = vec![keeping()];
    cfg.matvec = MatVecPlace::Backend;
    let engine = Engine::start(cfg).unwrap();
    let s = rs(3, 1);
    assert_eq!(engine.submit(job(&f, &s, None, None)).unwrap().wait().result.unwrap(), reference(&f, &s));
    assert_eq!(engine.budget().high_water(), all.witness, "the lease of one partition is its witness alone");
}

#[test]
fn a_failing_or_panicking_partition_fails_its_proof_only_and_returns_its_budget() {
    let f = fixture();
    let engine = Engine::start(Config::cpu(2, roomy())).unwrap();
    let good1 = rs(1, 2);
    let t1 = engine.submit(job(&f, &good1, None, None)).unwrap();
    let fail: Synthesize = Box::new(|_: &PreCompiledCircuit| Err(cuzk_pipeline::message("injected synthesis failure")));
    let t2 = engine.submit(job(&f, &rs(2, 3), Some((1, fail)), None)).unwrap();
    let boom: Synthesize = Box::new(|_: &PreCompiledCircuit| panic!("injected panic"));
    let t3 = engine.submit(job(&f, &rs(3, 2), Some((0, boom)), None)).unwrap();
    let bad_source: JobSource = Box::new(|| Err(PipelineError::Job("garbage C1".into())));
    let t4 = engine.submit(bad_source).unwrap();
    let good5 = rs(5, 2);
    let t5 = engine.submit(job(&f, &good5, None, None)).unwrap();

    assert_eq!(t1.wait().result.unwrap(), reference(&f, &good1));
    match t2.wait().result {
        Err(PipelineError::Witness(m)) => assert!(m.to_string().contains("injected synthesis failure"), "{m}"),
        other => panic!("expected the witness error, got {other:?}"),
    }
    match t3.wait().result {
        Err(PipelineError::Panic { stage: "witness", message }) => assert!(message.contains("injected panic")),
        other => panic!("expected the panic to fail the job, got {other:?}"),
    }
    match t4.wait().result {
        Err(PipelineError::Job(m)) => assert_eq!(m, "garbage C1"),
        other => panic!("expected the parse error, got {other:?}"),
    }
    assert_eq!(t5.wait().result.unwrap(), reference(&f, &good5), "the engine must keep serving after failures");
    assert_eq!(engine.budget().in_use(), 0, "budget leaked by a failed job");
    assert_eq!(engine.stats().failed.load(Ordering::Relaxed), 2);
    engine.shutdown();
    assert_eq!(Arc::strong_count(&f.pce), 1, "a stage still holds the PCE after shutdown");
    assert_eq!(Arc::strong_count(&f.params), 1, "a stage still holds the parameters after shutdown");
}

#[test]
fn the_byte_budget_refuses_what_can_never_fit_and_serialises_what_barely_fits() {
    let f = fixture();
    let ws = WorkingSet::of(&f.pce).total();
    let small = Engine::start(Config::cpu(2, ws - 1)).unwrap();
    match small.submit(job(&f, &rs(1, 2), None, None)).unwrap().wait().result {
        Err(PipelineError::OverBudget { need, budget }) => assert_eq!((need, budget), (ws, ws - 1)),
        other => panic!("expected OverBudget, got {other:?}"),
    }
    drop(small);

    // Room for exactly one partition: three workers, but never two partitions admitted at once.
    let mut cfg = Config::cpu(3, ws + ws / 2);
    cfg.provers_per_device = 2;
    let tight = Engine::start(cfg).unwrap();
    let sets: Vec<_> = (0..3).map(|k| rs(10 + k, 2)).collect();
    let tickets: Vec<_> = sets.iter().map(|s| tight.submit(job(&f, s, None, None)).unwrap()).collect();
    for (t, s) in tickets.into_iter().zip(&sets) {
        assert_eq!(t.wait().result.unwrap(), reference(&f, s));
    }
    assert!(tight.budget().high_water() <= ws + ws / 2 && tight.budget().high_water() >= ws);
    let ev = tight.trace().events();
    let mut spans: Vec<(f64, f64)> = Vec::new();
    for p in 1..=3u64 {
        for k in 0..2 {
            let start = ev.iter().find(|e| e.stage == "witness" && e.proof == p && e.partition == k).unwrap().start_s;
            let end = ev.iter().find(|e| e.stage == "prove" && e.proof == p && e.partition == k).unwrap().end_s;
            spans.push((start, end));
        }
    }
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            assert!(a.1 <= b.0 || b.1 <= a.0, "two partitions held the budget at once: {a:?} {b:?}");
        }
    }
}

#[test]
fn a_verification_failure_is_caught_and_no_proof_is_returned() {
    let f = fixture();
    let engine = Engine::start(Config::cpu(1, roomy())).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let reject: VerifyProof = Box::new(move |bytes: &[u8]| {
        c.fetch_add(1, Ordering::Relaxed);
        assert_eq!(bytes.len(), 2 * PROOF_BYTES);
        Err(cuzk_pipeline::message("injected: verifier says no"))
    });
    match engine.submit(job(&f, &rs(4, 2), None, Some(reject))).unwrap().wait().result {
        Err(PipelineError::Verify(m)) => assert!(m.to_string().contains("verifier says no")),
        other => panic!("a proof that fails verification must not be returned: {other:?}"),
    }
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    let pvk_f = fixture();
    let accept: VerifyProof =
        Box::new(move |bytes: &[u8]| if verifies(&pvk_f, bytes) { Ok(()) } else { Err(cuzk_pipeline::message("invalid")) });
    let out = engine.submit(job(&f, &rs(5, 2), None, Some(accept))).unwrap().wait();
    assert!(out.result.is_ok() && out.verified);
}

#[test]
fn shutdown_finishes_queued_jobs_and_refuses_no_ticket() {
    let f = fixture();
    let engine = Engine::start(Config::cpu(1, roomy())).unwrap();
    let tickets: Vec<_> = (0..3).map(|k| engine.submit(job(&f, &rs(20 + k, 1), None, None)).unwrap()).collect();
    engine.shutdown();
    for t in tickets {
        let out = t.wait_timeout(Duration::from_secs(1)).expect("every queued job is answered by shutdown");
        assert!(out.result.is_ok(), "{:?}", out.result);
    }
}

#[test]
fn partitions_spread_over_several_devices() {
    // Two simulated devices (CPU backends under device names): the multi-device paths of the
    // engine — one prover lane group per device, per-device busy accounting — with no GPU.
    let f = fixture();
    let mut cfg = Config::cpu(4, roomy());
    let cpu = || Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) as Arc<dyn cuzk_core::backend::Backend>;
    cfg.devices =
        vec![cuzk_pipeline::Device { name: "sim0".into(), backend: cpu() }, cuzk_pipeline::Device { name: "sim1".into(), backend: cpu() }];
    let engine = Engine::start(cfg).unwrap();
    let sets: Vec<_> = (0..6).map(|k| rs(30 + k, 2)).collect();
    let delay = Duration::from_millis(20);
    let tickets: Vec<_> = sets.iter().map(|s| engine.submit(job_with_delay(&f, s, None, None, delay)).unwrap()).collect();
    for (t, s) in tickets.into_iter().zip(&sets) {
        assert_eq!(t.wait().result.unwrap(), reference(&f, s));
    }
    let busy = engine.trace().device_busy(|_| true);
    assert_eq!(busy.keys().cloned().collect::<Vec<_>>(), vec!["sim0".to_string(), "sim1".to_string()], "both devices must prove");
    let lanes: std::collections::BTreeSet<String> =
        engine.trace().events().into_iter().filter(|e| e.stage == "prove").map(|e| e.lane).collect();
    assert_eq!(lanes.len(), 2, "{lanes:?}");
}

/// One device named `gpu0` whose backend is the CPU's with `plans` injected.
fn faulty_device(plans: &str) -> (Arc<FaultyBackend>, cuzk_pipeline::Device) {
    let cpu = Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) as Arc<dyn cuzk_core::backend::Backend>;
    let fb = Arc::new(FaultyBackend::new(cpu, parse_plans(plans).unwrap()));
    (fb.clone(), cuzk_pipeline::Device { name: "gpu0".into(), backend: fb })
}

#[test]
fn a_device_failure_fails_its_proof_or_is_retried_on_the_cpu_as_configured() {
    let f = fixture();
    // Fail (the default): the first partition's device call fails; that proof fails with the
    // device's error, the engine keeps serving and the next proof is bellperson's.
    let (fb, dev) = faulty_device("device-error");
    let mut cfg = Config::cpu(2, roomy());
    cfg.devices = vec![dev];
    assert_eq!(cfg.on_device_error, DeviceErrorPolicy::Fail);
    let engine = Engine::start(cfg).unwrap();
    match engine.submit(job(&f, &rs(40, 2), None, None)).unwrap().wait().result {
        Err(PipelineError::Device(m)) => assert!(m.contains("injected fault"), "{m}"),
        other => panic!("an injected device failure must fail its proof: {other:?}"),
    }
    let s = rs(41, 2);
    assert_eq!(engine.submit(job(&f, &s, None, None)).unwrap().wait().result.unwrap(), reference(&f, &s));
    assert_eq!((fb.injected(), engine.stats().retried_on_cpu.load(Ordering::Relaxed)), (1, 0));
    assert_eq!(engine.budget().in_use(), 0, "the failed partition's budget came back");
    drop(engine);

    // RetryOnCpu: a device that always fails; every partition is proved again on the CPU and
    // the proof is still bellperson's, bit for bit.
    let (fb, dev) = faulty_device("device-error,times=all");
    let mut cfg = Config::cpu(2, roomy());
    cfg.devices = vec![dev];
    cfg.on_device_error = DeviceErrorPolicy::RetryOnCpu;
    let engine = Engine::start(cfg).unwrap();
    let s = rs(42, 3);
    assert_eq!(engine.submit(job(&f, &s, None, None)).unwrap().wait().result.unwrap(), reference(&f, &s));
    assert_eq!((fb.injected(), engine.stats().retried_on_cpu.load(Ordering::Relaxed)), (3, 3));
    let retried = engine.trace().events().into_iter().filter(|e| e.lane.starts_with("retry-cpu-gpu0") && e.stage == "prove").count();
    assert_eq!(retried, 3, "each retry is traced on its own lane");
    assert_eq!(engine.budget().in_use(), 0);
}

#[test]
fn corrupted_evaluations_and_msm_results_are_caught_by_verification() {
    let f = fixture();
    for plan in ["corrupt-evaluation,times=all", "corrupt-msm,times=all"] {
        let (fb, dev) = faulty_device(plan);
        let mut cfg = Config::cpu(1, roomy());
        cfg.devices = vec![dev];
        let engine = Engine::start(cfg).unwrap();
        // Unverified (the caller opted out), the corrupted proof comes out and is invalid: the
        // injected fault is real.
        let out = engine.submit(job(&f, &rs(50, 1), None, None)).unwrap().wait();
        assert!(!out.verified);
        assert!(!verifies(&f, &out.result.unwrap()), "{plan}: the fault must spoil the proof");
        // With verification, it is caught and no proof is returned.
        let vf = fixture();
        let check: VerifyProof =
            Box::new(move |b: &[u8]| if verifies(&vf, b) { Ok(()) } else { Err(cuzk_pipeline::message("the proof is invalid")) });
        match engine.submit(job(&f, &rs(51, 1), None, Some(check))).unwrap().wait() {
            Outcome { result: Err(PipelineError::Verify(m)), verified: false, .. } => assert!(m.to_string().contains("invalid")),
            other => panic!("{plan}: a corrupted proof must not be returned: {other:?}"),
        }
        assert_eq!(fb.injected(), 2, "{plan}");
    }
}

#[test]
fn a_panic_on_the_device_fails_its_proof_or_is_retried_on_the_cpu_as_configured() {
    let f = fixture();
    // Fail: the panic is that proof's failure (named, with its stage); the engine serves on.
    let (d, dev) = faulty_device("panic");
    let mut cfg = Config::cpu(1, roomy());
    cfg.devices = vec![dev];
    let engine = Engine::start(cfg).unwrap();
    match engine.submit(job(&f, &rs(60, 1), None, None)).unwrap().wait().result {
        Err(PipelineError::Panic { stage: "prove", message }) => assert!(message.contains("injected fault: panic"), "{message}"),
        other => panic!("a panic while proving must fail its proof: {other:?}"),
    }
    let s = rs(61, 2);
    assert_eq!(engine.submit(job(&f, &s, None, None)).unwrap().wait().result.unwrap(), reference(&f, &s));
    assert_eq!(engine.stats().retried_on_cpu.load(Ordering::Relaxed), 0);
    assert_eq!(engine.budget().in_use(), 0);
    drop(engine);
    assert_eq!(d.injected(), 1);

    // RetryOnCpu: the partitions that panicked on the device are proved again on the CPU; the
    // proof is bellperson's and verifies; later partitions run on the device again.
    let (d, dev) = faulty_device("panic,times=2");
    let mut cfg = Config::cpu(1, roomy());
    cfg.devices = vec![dev];
    cfg.on_device_error = DeviceErrorPolicy::RetryOnCpu;
    let engine = Engine::start(cfg).unwrap();
    let s = rs(62, 3);
    let bytes = engine.submit(job(&f, &s, None, None)).unwrap().wait().result.unwrap();
    assert_eq!(bytes, reference(&f, &s));
    assert!(verifies(&f, &bytes));
    assert_eq!(engine.stats().retried_on_cpu.load(Ordering::Relaxed), 2, "both panicked partitions were retried");
    assert_eq!(d.injected(), 2, "only the first two partitions panicked; the third ran on the device");
    let retried = engine.trace().events().into_iter().filter(|e| e.lane.starts_with("retry-cpu-gpu0") && e.stage == "prove").count();
    assert_eq!(retried, 2);
    assert_eq!(engine.budget().in_use(), 0);
}

#[test]
fn a_critical_job_overtakes_the_queued_partitions_of_earlier_lower_priority_jobs() {
    use cuzk_pipeline::Priority;
    let f = fixture();
    let engine = Engine::start(Config::cpu(1, roomy())).unwrap();
    let delay = Duration::from_millis(60);
    // Eight partitions of a NORMAL proof (one witness worker: they run one at a time), then a
    // LOW one, then a CRITICAL one-partition proof while the first is still being worked on.
    let normal = engine.submit_at(job_with_delay(&f, &rs(1, 8), None, None, delay), Priority::Normal).unwrap();
    let low = engine.submit_at(job_with_delay(&f, &rs(2, 1), None, None, delay), Priority::Low).unwrap();
    std::thread::sleep(delay * 2);
    let critical = engine.submit_at(job_with_delay(&f, &rs(3, 1), None, None, delay), Priority::Critical).unwrap();
    let ids = (normal.id, low.id, critical.id);
    for (t, seed, n) in [(critical, 3, 1), (normal, 1, 8), (low, 2, 1)] {
        let out = t.wait();
        assert_eq!(out.result.unwrap(), reference(&f, &rs(seed, n)), "priority must not change a proof");
    }
    let mut witness: Vec<_> = engine.trace().events().into_iter().filter(|e| e.stage == "witness").collect();
    witness.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let order: Vec<u64> = witness.iter().map(|e| e.proof).collect();
    let at = |id| order.iter().position(|p| *p == id).unwrap();
    // The CRITICAL partition's witness starts within two partitions of its submission (the
    // one being worked on and at most one taken since), long before the NORMAL proof's end.
    assert!(at(ids.2) <= 4, "critical waited behind queued partitions: {order:?}");
    // The LOW one, queued before the CRITICAL, still comes after every NORMAL partition.
    assert_eq!(at(ids.1), order.len() - 1, "{order:?}");
}

#[test]
fn an_urgent_job_is_parsed_while_a_slow_parse_runs_and_equal_priorities_keep_submission_order() {
    use cuzk_pipeline::Priority;
    let f = fixture();
    let engine = Engine::start(Config::cpu(1, roomy())).unwrap();
    // A NORMAL job whose parse takes 1.5 s (a first-time circuit load), then a CRITICAL one.
    let slow_source = job(&f, &rs(1, 1), None, None);
    let slow: JobSource = Box::new(move || {
        std::thread::sleep(Duration::from_millis(1500));
        slow_source()
    });
    let slow = engine.submit_at(slow, Priority::Normal).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let urgent = engine.submit_at(job(&f, &rs(2, 1), None, None), Priority::Critical).unwrap();
    let u = urgent.wait();
    assert_eq!(u.result.unwrap(), reference(&f, &rs(2, 1)));
    let s = slow.wait();
    assert!(u.finished_s < s.finished_s, "the urgent proof waited for the slow parse");
    assert!(u.finished_s - u.submitted_s < 1.4, "the urgent proof took {:.2} s", u.finished_s - u.submitted_s);
    assert_eq!(s.result.unwrap(), reference(&f, &rs(1, 1)));

    // Equal priorities: partitions waiting together go to the witness worker in submission
    // order, whichever parse thread finished first. A one-partition job whose witness takes 1 s
    // holds the only witness worker while both jobs are parsed and queued (without it, an idle
    // worker takes whichever job's partitions arrive first: a race, not an order).
    let blocker = engine.submit(job_with_delay(&f, &rs(5, 1), None, None, Duration::from_millis(1000))).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let a = engine.submit(job_with_delay(&f, &rs(3, 3), None, None, Duration::from_millis(20))).unwrap();
    let b = engine.submit(job_with_delay(&f, &rs(4, 3), None, None, Duration::from_millis(20))).unwrap();
    let ids = (a.id, b.id);
    a.wait().result.unwrap();
    b.wait().result.unwrap();
    blocker.wait().result.unwrap();
    let mut witness: Vec<_> =
        engine.trace().events().into_iter().filter(|e| e.stage == "witness" && (e.proof == ids.0 || e.proof == ids.1)).collect();
    witness.sort_by(|x, y| x.start_s.total_cmp(&y.start_s));
    let order: Vec<(u64, usize)> = witness.iter().map(|e| (e.proof, e.partition)).collect();
    let want: Vec<(u64, usize)> = [ids.0, ids.1].into_iter().flat_map(|p| (0..3).map(move |k| (p, k))).collect();
    assert_eq!(order, want);
}

/// The pre-emption test's "device": the CPU backend behind a priority-ordered
/// [`cuzk_core::device_lock::DeviceLock`] taken once per MSM, bitmap sum, NTT and mat-vec, as
/// the CUDA backend takes its own, with the overlapped schedule on (five threads of a
/// partition queue on the lock, as on a GPU). Under the lock it records every call with the
/// calling thread's priority. On the LOW job's `GATE`th call it keeps the lock until a
/// CRITICAL thread and another LOW thread wait for it (at most 20 s), so that who goes next is
/// the lock's decision.
mod gated {
    use std::sync::{Condvar, Mutex};
    use std::time::{Duration, Instant};

    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
    use cuzk_core::backend::cpu::CpuBackend;
    use cuzk_core::backend::{Backend, BackendResult, Evaluations, MatVec, Matrices, Msm, Ntt, NttKind};
    use cuzk_core::device_lock::DeviceLock;
    use cuzk_pipeline::Priority;

    pub const GATE: usize = 3;

    #[derive(Default)]
    pub struct GatedDevice {
        cpu: CpuBackend,
        lock: DeviceLock<()>,
        calls: Mutex<Vec<(Priority, &'static str)>>,
        /// The priorities of the threads waiting for the lock.
        wanting: Mutex<Vec<Priority>>,
        changed: Condvar,
    }

    impl GatedDevice {
        pub fn calls(&self) -> Vec<(Priority, &'static str)> {
            self.calls.lock().unwrap().clone()
        }

        fn want(&self, p: Priority, waits: bool) {
            let mut w = self.wanting.lock().unwrap();
            if waits {
                w.push(p);
            } else if let Some(i) = w.iter().position(|q| *q == p) {
                w.swap_remove(i);
            }
            self.changed.notify_all();
        }

        fn call<R>(&self, what: &'static str, f: impl FnOnce() -> R) -> R {
            let p = Priority::current();
            self.want(p, true);
            let _device = self.lock.lock();
            self.want(p, false);
            let lows = {
                let mut calls = self.calls.lock().unwrap();
                calls.push((p, what));
                calls.iter().filter(|c| c.0 == Priority::Low).count()
            };
            if p == Priority::Low && lows == GATE {
                let deadline = Instant::now() + Duration::from_secs(20);
                let mut w = self.wanting.lock().unwrap();
                while !(w.contains(&Priority::Critical) && w.contains(&Priority::Low)) && Instant::now() < deadline {
                    w = self.changed.wait_timeout(w, Duration::from_millis(100)).unwrap().0;
                }
            }
            f()
        }
    }

    impl Msm<G1Affine> for GatedDevice {
        fn msm(&self, bases: &[G1Affine], scalars: &[Scalar]) -> BackendResult<G1Projective> {
            self.call("msm g1", || Msm::<G1Affine>::msm(&self.cpu, bases, scalars))
        }
        fn sum_selected(&self, bases: &[G1Affine], indices: &[u32]) -> BackendResult<G1Projective> {
            self.call("sum g1", || Msm::<G1Affine>::sum_selected(&self.cpu, bases, indices))
        }
    }
    impl Msm<G2Affine> for GatedDevice {
        fn msm(&self, bases: &[G2Affine], scalars: &[Scalar]) -> BackendResult<G2Projective> {
            self.call("msm g2", || Msm::<G2Affine>::msm(&self.cpu, bases, scalars))
        }
        fn sum_selected(&self, bases: &[G2Affine], indices: &[u32]) -> BackendResult<G2Projective> {
            self.call("sum g2", || Msm::<G2Affine>::sum_selected(&self.cpu, bases, indices))
        }
    }
    impl Ntt for GatedDevice {
        fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> BackendResult<()> {
            self.call("ntt", || self.cpu.ntt(data, kind))
        }
    }
    impl MatVec for GatedDevice {
        fn mat_vec(&self, m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> BackendResult<Evaluations> {
            self.call("mat-vec", || self.cpu.mat_vec(m, inputs, aux))
        }
    }
    impl Backend for GatedDevice {
        fn name(&self) -> &str {
            "gated"
        }
        fn overlap_h(&self) -> bool {
            true
        }
    }
}

#[test]
fn a_critical_job_takes_the_device_at_the_next_call_boundary_of_a_running_low_partition() {
    use cuzk_pipeline::{Device, Priority};
    let f = fixture();
    let dev = Arc::new(gated::GatedDevice::default());
    let mut cfg = Config::cpu(2, roomy());
    cfg.devices = vec![Device { name: "gated".into(), backend: dev.clone() }];
    assert_eq!((cfg.provers_per_device, cfg.urgent_from), (1, Some(Priority::High)), "one prover per device, urgent lane on by default");
    let engine = Engine::start(cfg).unwrap();
    let low = engine.submit_at(job(&f, &rs(1, 1), None, None), Priority::Low).unwrap();
    // The LOW partition is on the device (held at its GATE-th call) ...
    let start = std::time::Instant::now();
    while dev.calls().len() < gated::GATE {
        assert!(start.elapsed() < Duration::from_secs(60), "the LOW partition never reached the device");
        std::thread::sleep(Duration::from_millis(5));
    }
    // ... when a CRITICAL job arrives; the only ordinary prover is busy.
    let critical = engine.submit_at(job(&f, &rs(2, 1), None, None), Priority::Critical).unwrap();
    let ids = (low.id, critical.id);
    let (c, l) = (critical.wait(), low.wait());
    assert_eq!(c.result.unwrap(), reference(&f, &rs(2, 1)), "pre-emption must not change a proof");
    assert_eq!(l.result.unwrap(), reference(&f, &rs(1, 1)), "pre-emption must not change a proof");

    let calls = dev.calls();
    let tags: Vec<String> = calls.iter().map(|(p, what)| format!("{p:?} {what}")).collect();
    assert!(
        calls.iter().all(|(p, _)| matches!(p, Priority::Low | Priority::Critical)),
        "every device call is made at its job's priority, helper threads included: {tags:?}"
    );
    let first_critical = calls.iter().position(|(p, _)| *p == Priority::Critical).expect("critical calls");
    assert_eq!(
        first_critical,
        gated::GATE,
        "the CRITICAL job's first call comes at the LOW partition's next boundary, before the LOW calls already waiting: {tags:?}"
    );
    let low_after = calls[first_critical..].iter().filter(|(p, _)| *p == Priority::Low).count();
    assert!(low_after > 0, "the LOW partition was mid-way when it was pre-empted: {tags:?}");
    let prove_lanes: Vec<(u64, String)> =
        engine.trace().events().into_iter().filter(|e| e.stage == "prove").map(|e| (e.proof, e.lane)).collect();
    assert!(prove_lanes.contains(&(ids.1, "prove-gated-urgent".into())), "{prove_lanes:?}");
    assert!(prove_lanes.contains(&(ids.0, "prove-gated-0".into())), "{prove_lanes:?}");
    assert_eq!(engine.budget().in_use(), 0);
}

/// An urgent partition's witness runs on the urgent lane's reserved pool (and so does every
/// rayon call inside it), a normal one's on its witness thread; with no reserved threads the
/// urgent one runs where it is taken. The proofs are the same either way.
#[test]
fn urgent_partitions_compute_on_the_reserved_pool() {
    use cuzk_pipeline::Priority;
    use std::sync::Mutex;
    let f = fixture();
    let seen: Arc<Mutex<Vec<(Priority, String)>>> = Arc::default();
    let recording = |p: Priority| -> Synthesize {
        let (c, seen) = (f.circuit.clone(), seen.clone());
        Box::new(move |pce: &PreCompiledCircuit| {
            seen.lock().unwrap().push((p, std::thread::current().name().unwrap_or("").to_string()));
            cuzk_pce::witness::checked_witness(c, pce).map_err(PipelineError::shared)
        })
    };
    for threads in [2, 0] {
        seen.lock().unwrap().clear();
        let engine = Engine::start(Config { urgent_threads: threads, ..Config::cpu(1, roomy()) }).unwrap();
        for (p, seed) in [(Priority::Normal, 1), (Priority::Critical, 2), (Priority::High, 3)] {
            let t = engine.submit_at(job(&f, &rs(seed, 1), Some((0, recording(p))), None), p).unwrap();
            assert_eq!(t.wait().result.unwrap(), reference(&f, &rs(seed, 1)), "the lane must not change a proof");
        }
        engine.shutdown();
        for (p, thread) in seen.lock().unwrap().iter() {
            let reserved = thread.starts_with("cuzk-urgent-");
            assert_eq!(reserved, threads > 0 && *p >= Priority::High, "{p:?} ran on {thread:?} with {threads} reserved threads");
        }
        assert_eq!(seen.lock().unwrap().len(), 3);
    }
}

/// A CPU backend whose H step runs beside the other MSMs on helper threads (as the CUDA
/// backend's does) and which records, for each MSM, the priority and thread of the call and
/// the thread its parallel host work ran on.
mod routed {
    use std::sync::Mutex;

    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
    use cuzk_core::backend::cpu::CpuBackend;
    use cuzk_core::backend::{Backend, BackendResult, Evaluations, MatVec, Matrices, Msm, Ntt, NttKind};
    use cuzk_core::reserved_pool::parallel;
    use cuzk_pipeline::Priority;

    /// (priority, calling thread, thread of its parallel work)
    pub type Seen = (Priority, String, String);

    #[derive(Default)]
    pub struct RecordingDevice {
        cpu: CpuBackend,
        seen: Mutex<Vec<Seen>>,
    }

    fn name() -> String {
        std::thread::current().name().unwrap_or("").to_string()
    }

    impl RecordingDevice {
        pub fn take(&self) -> Vec<Seen> {
            std::mem::take(&mut *self.seen.lock().unwrap())
        }
        fn record(&self) {
            self.seen.lock().unwrap().push((Priority::current(), name(), parallel(name)));
        }
    }

    impl Msm<G1Affine> for RecordingDevice {
        fn msm(&self, bases: &[G1Affine], scalars: &[Scalar]) -> BackendResult<G1Projective> {
            self.record();
            Msm::<G1Affine>::msm(&self.cpu, bases, scalars)
        }
        fn sum_selected(&self, bases: &[G1Affine], indices: &[u32]) -> BackendResult<G1Projective> {
            Msm::<G1Affine>::sum_selected(&self.cpu, bases, indices)
        }
    }
    impl Msm<G2Affine> for RecordingDevice {
        fn msm(&self, bases: &[G2Affine], scalars: &[Scalar]) -> BackendResult<G2Projective> {
            self.record();
            Msm::<G2Affine>::msm(&self.cpu, bases, scalars)
        }
        fn sum_selected(&self, bases: &[G2Affine], indices: &[u32]) -> BackendResult<G2Projective> {
            Msm::<G2Affine>::sum_selected(&self.cpu, bases, indices)
        }
    }
    impl Ntt for RecordingDevice {
        fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> BackendResult<()> {
            self.cpu.ntt(data, kind)
        }
    }
    impl MatVec for RecordingDevice {
        fn mat_vec(&self, m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> BackendResult<Evaluations> {
            self.cpu.mat_vec(m, inputs, aux)
        }
    }
    impl Backend for RecordingDevice {
        fn name(&self) -> &str {
            "recording"
        }
        fn overlap_h(&self) -> bool {
            true
        }
    }
}

/// An urgent proof's MSMs — made on the prover's helper threads, which block on the device and
/// so are not the reserved pool's — send their parallel host work to the reserved pool, not to
/// rayon's global pool where bulk work queues; a normal proof's stays off the reserved pool.
#[test]
fn an_urgent_proofs_helper_threads_compute_on_the_reserved_pool() {
    use cuzk_pipeline::{Device, Priority};
    let f = fixture();
    let dev = Arc::new(routed::RecordingDevice::default());
    let mut cfg = Config { urgent_threads: 2, ..Config::cpu(1, roomy()) };
    cfg.devices = vec![Device { name: "recording".into(), backend: dev.clone() }];
    let engine = Engine::start(cfg).unwrap();
    for (p, seed) in [(Priority::Normal, 1), (Priority::Critical, 2)] {
        let t = engine.submit_at(job(&f, &rs(seed, 1), None, None), p).unwrap();
        assert_eq!(t.wait().result.unwrap(), reference(&f, &rs(seed, 1)), "routing must not change a proof");
        let seen = dev.take();
        assert!(seen.len() >= 4, "{seen:?}");
        assert!(seen.iter().any(|(_, caller, _)| caller.starts_with("cuzk-msm-")), "helper threads made MSMs: {seen:?}");
        for (at, caller, worker) in &seen {
            assert_eq!(*at, p, "{seen:?}");
            assert!(!caller.starts_with("cuzk-urgent-"), "a blocking prover thread must not hold a reserved thread: {seen:?}");
            assert_eq!(worker.starts_with("cuzk-urgent-"), p == Priority::Critical, "{p:?}: {seen:?}");
        }
    }
    engine.shutdown();
}

/// An urgent proof is verified and answered while a bulk proof's verification is still
/// running (the bulk one has its own finalize thread), and its verification runs on the
/// reserved pool; the bulk one's does not.
#[test]
fn an_urgent_proof_is_answered_while_a_bulk_proofs_verification_runs() {
    use cuzk_pipeline::Priority;
    use std::sync::mpsc;
    let f = fixture();
    let engine = Engine::start(Config { urgent_threads: 2, ..Config::cpu(1, roomy()) }).unwrap();
    let (started_tx, started_rx) = mpsc::channel::<String>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let bulk_verify: VerifyProof = Box::new(move |_| {
        started_tx.send(std::thread::current().name().unwrap_or("").to_string()).unwrap();
        // Held until the urgent proof is answered (or 60 s, which fails the test below).
        match release_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(()) => Ok(()),
            Err(_) => Err(PipelineError::shared(std::io::Error::other("released by nobody"))),
        }
    });
    let bulk = engine.submit_at(job(&f, &rs(1, 1), None, Some(bulk_verify)), Priority::Normal).unwrap();
    let bulk_thread = started_rx.recv_timeout(Duration::from_secs(60)).expect("the bulk proof reached verification");
    let (urgent_tx, urgent_rx) = mpsc::channel::<String>();
    let urgent_verify: VerifyProof = Box::new(move |_| {
        urgent_tx.send(std::thread::current().name().unwrap_or("").to_string()).unwrap();
        Ok(())
    });
    let urgent = engine.submit_at(job(&f, &rs(2, 1), None, Some(urgent_verify)), Priority::Critical).unwrap();
    let answered = urgent.wait();
    assert_eq!(answered.result.unwrap(), reference(&f, &rs(2, 1)));
    assert!(answered.verified);
    release_tx.send(()).unwrap();
    let b = bulk.wait();
    assert_eq!(b.result.unwrap(), reference(&f, &rs(1, 1)), "the bulk proof was answered after the urgent one");
    let urgent_thread = urgent_rx.recv().unwrap();
    assert!(urgent_thread.starts_with("cuzk-urgent-"), "urgent verification on {urgent_thread:?}");
    assert!(!bulk_thread.starts_with("cuzk-urgent-"), "bulk verification on {bulk_thread:?}");
    engine.shutdown();
}

#[test]
fn the_buffer_pool_is_taken_out_of_the_budget_and_capped_at_half_of_it() {
    let pool = || cuzk_core::buffer_pool::scalar_pool().stats().capacity_bytes;
    let engine = Engine::start(Config { buffer_pool_bytes: 1 << 30, ..Config::cpu(1, 8 << 30) }).unwrap();
    assert_eq!((engine.budget().total(), pool()), (7 << 30, 1 << 30));
    engine.shutdown();
    let engine = Engine::start(Config { buffer_pool_bytes: 64 << 30, ..Config::cpu(1, 8 << 30) }).unwrap();
    assert_eq!((engine.budget().total(), pool()), (4 << 30, 4 << 30));
    engine.shutdown();
    cuzk_core::buffer_pool::scalar_pool().set_capacity(0);
}

/// A device that keeps its own copy of the matrices it is given, by their identity, as the
/// CUDA backend keeps them resident: it proves with released host entries when it holds the
/// matrices and fails like a device without them otherwise.
mod holding {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use blstrs::{G1Affine, G1Projective, Scalar};
    use cuzk_core::backend::cpu::CpuBackend;
    use cuzk_core::backend::sparse::OwnedMatrices;
    use cuzk_core::backend::{Backend, BackendError, BackendResult, Matrices};

    #[derive(Default)]
    pub struct HoldingDevice {
        cpu: CpuBackend,
        held: Mutex<HashMap<u64, OwnedMatrices>>,
        /// Calls served from the device's copy with the host's entries released.
        pub from_copy: AtomicUsize,
    }

    impl HoldingDevice {
        /// Loses every copy (an eviction).
        pub fn forget(&self) {
            self.held.lock().unwrap().clear();
        }
    }

    fn own(m: &Matrices) -> OwnedMatrices {
        let arrays = |v: &cuzk_core::backend::sparse::CsrView| (v.row_ptr.to_vec(), v.cols.to_vec(), v.coeff_idx.to_vec());
        OwnedMatrices {
            num_inputs: m.num_inputs,
            num_aux: m.num_aux,
            mats: [arrays(&m.a), arrays(&m.b), arrays(&m.c)],
            coeffs: m.coeffs.to_vec(),
        }
    }

    impl HoldingDevice {
        fn inner(&self) -> &CpuBackend {
            &self.cpu
        }
    }
    cuzk_core::backend_pass_through!(HoldingDevice, inner);
    impl Backend for HoldingDevice {
        fn name(&self) -> &str {
            "holding"
        }
        fn holds_matrices(&self, m: &Matrices) -> bool {
            m.identity.is_some_and(|id| self.held.lock().unwrap().contains_key(&id))
        }
        fn matvec_quotient_msm_h(
            &self,
            m: &Matrices,
            inputs: &[Scalar],
            aux: &[Scalar],
            h_bases: &[G1Affine],
            witness_sent: &dyn Fn(Option<cuzk_core::backend::DeviceWitness>),
        ) -> BackendResult<(G1Projective, std::time::Duration, std::time::Duration)> {
            // As the CUDA backend does: the witness against the matrices' shape first.
            m.check_witness(inputs, aux)?;
            let mut held = self.held.lock().unwrap();
            if m.entries_released() {
                let copy = m.identity.and_then(|id| held.get(&id)).ok_or_else(|| BackendError::Device("matrices not resident".into()))?;
                self.from_copy.fetch_add(1, Ordering::Relaxed);
                return self.cpu.matvec_quotient_msm_h(&copy.view(), inputs, aux, h_bases, witness_sent);
            }
            if let Some(id) = m.identity {
                held.entry(id).or_insert_with(|| own(m));
            }
            drop(held);
            self.cpu.matvec_quotient_msm_h(m, inputs, aux, h_bases, witness_sent)
        }
    }
}

#[test]
fn the_host_releases_matrix_entries_the_devices_hold_and_reloads_them_when_a_device_loses_its_copy() {
    use cuzk_pce::prove::MatVecPlace;
    use cuzk_pipeline::{resources, Device};
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("release.pce");
    // Loaded as every proof kind loads its PCE: through the registry, from a cache file.
    let identity = format!("engine-test-release-{}", std::process::id());
    let from_registry = || resources::pce_from_cache(&path, &identity, || Ok((*f.pce).clone())).unwrap().0;
    let full = from_registry();
    assert!(full.identity.is_some() && !full.entries_released());
    let with_pce = |pce: Arc<PreCompiledCircuit>| Fixture { circuit: f.circuit.clone(), pce, params: f.params.clone() };

    let dev = Arc::new(holding::HoldingDevice::default());
    let mut cfg = Config::cpu(1, roomy());
    cfg.devices = vec![Device { name: "holding".into(), backend: dev.clone() }];
    cfg.matvec = MatVecPlace::Backend;
    cfg.release_host_matrices = true;
    let engine = Engine::start(cfg).unwrap();

    // The first proof uploads the matrices; then the registry holds only their counts.
    let first = engine.submit(job(&with_pce(full.clone()), &rs(1, 2), None, None)).unwrap().wait();
    assert_eq!(first.result.unwrap(), reference(&f, &rs(1, 2)));
    let released = from_registry();
    assert!(released.entries_released(), "the device holds the matrices: the host's entries go");
    assert!(released.bytes() < full.bytes(), "{} of {} bytes kept", released.bytes(), full.bytes());
    assert_eq!((released.num_aux, &released.b_aux_density), (full.num_aux, &full.b_aux_density), "counts and densities stay");
    assert!(released.evaluate(&[Scalar::ONE], &[]).is_err(), "the host cannot evaluate released matrices");

    // A later proof with the released PCE is proved from the device's copy, the same bytes.
    let second = engine.submit(job(&with_pce(released.clone()), &rs(2, 1), None, None)).unwrap().wait();
    assert_eq!(second.result.unwrap(), reference(&f, &rs(2, 1)));
    assert!(dev.from_copy.load(Ordering::Relaxed) >= 1);

    // The device loses its copy: the entries are reloaded from the cache file, the device
    // takes its copy again, the proof is the same, and the host releases the entries again.
    dev.forget();
    let third = engine.submit(job(&with_pce(released), &rs(3, 1), None, None)).unwrap().wait();
    assert_eq!(third.result.unwrap(), reference(&f, &rs(3, 1)));
    assert!(cuzk_core::backend::Backend::holds_matrices(dev.as_ref(), &full.matrices()));
    assert!(from_registry().entries_released());

    // Without the cache file a lost copy cannot be rebuilt: the proof fails with a clear error,
    // never a wrong proof.
    dev.forget();
    std::fs::remove_file(&path).unwrap();
    let fourth = engine.submit(job(&with_pce(from_registry()), &rs(4, 1), None, None)).unwrap().wait();
    let e = fourth.result.unwrap_err().chain();
    assert!(e.contains("reloading the released matrix entries"), "{e}");
}
