//! A device whose lock saw a panic keeps serving. The "device" here is the CPU backend behind
//! the CUDA backend's own lock type, `cuzk_gpu::DeviceLock`, with the same recovery the CUDA
//! backend uses (a panicked holder makes the next one forget what is resident, which is then
//! uploaded again); so it runs on machines without a GPU. Through the engine under
//! `RetryOnCpu`: the proof whose partition panicked on the device is proved again on the CPU
//! and is bellperson's; the next proof runs on the device, whose lock recovered once.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bellperson::groth16::{self, Proof};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::{Backend, BackendResult, Evaluations, MatVec, Matrices, Msm, Ntt, NttKind};
use cuzk_core::testing::SatisfiedCircuit;
use cuzk_gpu::DeviceLock;
use cuzk_pce::paramgen::{generate_for, Secrets};
use cuzk_pce::PreCompiledCircuit;
use cuzk_pipeline::{Config, Device, DeviceErrorPolicy, Engine, Job, JobSource, PartitionInput, PipelineError};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What the device lock guards: the "resident" upload (forgotten after a panic).
#[derive(Default)]
struct DeviceState {
    resident: Option<usize>,
}

struct LockedDevice {
    cpu: CpuBackend,
    lock: DeviceLock<DeviceState>,
    calls: AtomicUsize,
    uploads: AtomicUsize,
    panic_on_call: usize,
}

impl LockedDevice {
    /// The device lock, recovering as `CudaBackend::device` does: what was resident is forgotten.
    fn device(&self) -> cuzk_gpu::lock::DeviceGuard<'_, DeviceState> {
        self.lock.lock_or_reset(|s| s.resident = None)
    }
}

impl Msm<G1Affine> for LockedDevice {
    fn msm(&self, bases: &[G1Affine], scalars: &[Scalar]) -> BackendResult<G1Projective> {
        Msm::<G1Affine>::msm(&self.cpu, bases, scalars)
    }
    fn sum_selected(&self, bases: &[G1Affine], indices: &[u32]) -> BackendResult<G1Projective> {
        Msm::<G1Affine>::sum_selected(&self.cpu, bases, indices)
    }
}
impl Msm<G2Affine> for LockedDevice {
    fn msm(&self, bases: &[G2Affine], scalars: &[Scalar]) -> BackendResult<G2Projective> {
        Msm::<G2Affine>::msm(&self.cpu, bases, scalars)
    }
    fn sum_selected(&self, bases: &[G2Affine], indices: &[u32]) -> BackendResult<G2Projective> {
        Msm::<G2Affine>::sum_selected(&self.cpu, bases, indices)
    }
}
impl Ntt for LockedDevice {
    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> BackendResult<()> {
        self.cpu.ntt(data, kind)
    }
}
impl MatVec for LockedDevice {
    fn mat_vec(&self, m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> BackendResult<Evaluations> {
        self.cpu.mat_vec(m, inputs, aux)
    }
}
impl Backend for LockedDevice {
    fn name(&self) -> &str {
        "locked-device"
    }
    /// Under the device lock: "uploads" the bases when nothing is resident, then panics (with
    /// the lock held) on the planned call, else proves on the CPU.
    fn quotient_msm_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        h: &[G1Affine],
    ) -> BackendResult<(G1Projective, std::time::Duration)> {
        let mut state = self.device();
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if state.resident.is_none() {
            self.uploads.fetch_add(1, Ordering::SeqCst);
            state.resident = Some(h.len());
        }
        if n == self.panic_on_call {
            panic!("injected panic under the device lock, call {n}");
        }
        self.cpu.quotient_msm_h(a, b, c, h)
    }
}

struct Fixture {
    circuit: SatisfiedCircuit,
    pce: Arc<PreCompiledCircuit>,
    params: Arc<groth16::Parameters<Bls12>>,
}

fn fixture() -> Fixture {
    let circuit = SatisfiedCircuit { seed: 4, steps: 300 };
    let pce = Arc::new(cuzk_pce::extract(circuit.clone()).unwrap());
    let params = Arc::new(generate_for(circuit.clone(), &Secrets::random(&mut ChaCha8Rng::seed_from_u64(12))).unwrap().0);
    Fixture { circuit, pce, params }
}

fn job(f: &Fixture, rs: Vec<(Scalar, Scalar)>) -> JobSource {
    let (pce, params, circuit) = (f.pce.clone(), f.params.clone(), f.circuit.clone());
    Box::new(move || {
        let partitions = rs
            .into_iter()
            .map(|(r, s)| {
                let c = circuit.clone();
                let synthesize: cuzk_pipeline::engine::Synthesize =
                    Box::new(move |pce: &PreCompiledCircuit| cuzk_pce::witness::checked_witness(c, pce).map_err(PipelineError::shared));
                PartitionInput { synthesize, r, s }
            })
            .collect();
        let assemble: cuzk_pipeline::engine::AssembleProof =
            Box::new(|proofs: &[_]| cuzk_pipeline::kind::concatenate(proofs).map_err(PipelineError::shared));
        Ok(Job { pce, params: Arc::new(Arc::unwrap_or_clone(params).into()), partitions, assemble, verify: None })
    })
}

fn rs(seed: u64, n: usize) -> Vec<(Scalar, Scalar)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect()
}

/// bellperson's proofs for the same r and s, and whether `bytes` verify.
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
    bytes.chunks(192).all(|c| groth16::verify_proof(&pvk, &Proof::<Bls12>::read(c).unwrap(), &w.inputs[1..]).unwrap())
}

#[test]
fn a_device_lock_that_saw_a_panic_keeps_serving_after_a_cpu_retry() {
    let f = fixture();
    let dev = Arc::new(LockedDevice {
        cpu: CpuBackend::new(),
        lock: DeviceLock::default(),
        calls: AtomicUsize::new(0),
        uploads: AtomicUsize::new(0),
        panic_on_call: 0,
    });
    let mut cfg = Config::cpu(1, 1 << 34);
    cfg.devices = vec![Device { name: "gpu0".into(), backend: dev.clone() }];
    cfg.on_device_error = DeviceErrorPolicy::RetryOnCpu;
    let engine = Engine::start(cfg).unwrap();

    let first = rs(1, 1);
    let bytes = engine.submit(job(&f, first.clone())).unwrap().wait().result.expect("the panicked partition is proved on the CPU");
    assert_eq!(bytes, reference(&f, &first));
    assert!(verifies(&f, &bytes));
    assert_eq!(engine.stats().retried_on_cpu.load(Ordering::Relaxed), 1);

    let second = rs(2, 2);
    let bytes = engine.submit(job(&f, second.clone())).unwrap().wait().result.expect("the device serves the next proof");
    assert_eq!(bytes, reference(&f, &second));
    assert_eq!(engine.stats().retried_on_cpu.load(Ordering::Relaxed), 1, "the next proof ran on the device, not on the CPU");
    assert_eq!(dev.calls.load(Ordering::SeqCst), 3);
    assert_eq!(dev.lock.recoveries(), 1, "the poisoned lock was recovered once");
    assert_eq!(dev.uploads.load(Ordering::SeqCst), 2, "what was resident when the panic hit was forgotten and uploaded again");
}

#[test]
fn a_std_mutex_would_have_disabled_the_device() {
    // What the CUDA backend had before: `lock().unwrap()` on a poisoned std mutex panics on
    // every later call. DeviceLock, in the same sequence, hands out the guard.
    let std_lock = std::sync::Mutex::new(());
    let ours = DeviceLock::new(());
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let _a = std_lock.lock().unwrap();
        let _b = ours.lock();
        panic!("injected");
    }));
    assert!(catch_unwind(AssertUnwindSafe(|| drop(std_lock.lock().unwrap()))).is_err());
    assert!(catch_unwind(AssertUnwindSafe(|| drop(ours.lock()))).is_ok());
    assert_eq!(ours.recoveries(), 1);
}
