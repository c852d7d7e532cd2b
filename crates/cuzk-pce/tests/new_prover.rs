//! cuzk's own Groth16 prover (witness + PCE + CPU backend) against bellperson's
//! `create_proof` on small circuits: equal r and s give byte-identical proofs, in both MSM
//! modes; the proofs verify with bellperson's verifier; parameters of another circuit are
//! refused with a typed error.

use bellperson::groth16::{self, Parameters, Proof};
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::groth16::MsmMode;
use cuzk_core::mem::StageTracer;
use cuzk_core::testing::{RandomCircuit, SatisfiedCircuit};
use cuzk_pce::paramgen::{generate_for, Secrets};
use cuzk_pce::prove::{prove_circuit, Timings};
use cuzk_pce::{extract, PceError};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn bytes(p: &Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).unwrap();
    v
}

fn params_for<C: Circuit<Scalar>>(c: C, seed: u64) -> Parameters<Bls12> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    generate_for(c, &Secrets::random(&mut rng)).unwrap().0
}

fn public_inputs<C: Circuit<Scalar> + Clone>(c: &C) -> Vec<Scalar> {
    let pce = extract(c.clone()).unwrap();
    let w = cuzk_witness::witness(c.clone(), pce.num_inputs, pce.num_aux).unwrap();
    w.inputs[1..].to_vec()
}

#[test]
fn proofs_equal_bellpersons_for_equal_r_and_s() {
    let cpu = CpuBackend::new();
    let tracer = StageTracer::new();
    for seed in 0..6u64 {
        let circuit = RandomCircuit::new(seed, 300 + 40 * seed as usize, 500 + 100 * seed as usize);
        let params = params_for(circuit.clone(), seed + 100);
        let pce = extract(circuit.clone()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed + 7);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let want = groth16::create_proof(circuit.clone(), &params, r, s).unwrap();
        for mode in [MsmMode::Split, MsmMode::Plain, MsmMode::Auto] {
            let mut t = Timings::default();
            let got = prove_circuit(&cpu, &pce, &params, circuit.clone(), r, s, mode, &tracer, &mut t).unwrap();
            assert_eq!(bytes(&got), bytes(&want), "seed {seed}, {mode:?}: proof differs from bellperson's");
        }
    }
}

#[test]
fn proofs_of_satisfied_circuits_verify_and_match_bellperson() {
    let cpu = CpuBackend::new();
    let tracer = StageTracer::new();
    for seed in 0..4u64 {
        let circuit = SatisfiedCircuit { seed, steps: 400 + 300 * seed as usize };
        let params = params_for(circuit.clone(), seed + 50);
        let pce = extract(circuit.clone()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed + 9);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let mut t = Timings::default();
        let got = prove_circuit(&cpu, &pce, &params, circuit.clone(), r, s, MsmMode::Split, &tracer, &mut t).unwrap();
        let want = groth16::create_proof(circuit.clone(), &params, r, s).unwrap();
        assert_eq!(bytes(&got), bytes(&want), "seed {seed}: proof differs from bellperson's");
        let pvk = groth16::prepare_verifying_key(&params.vk);
        let inputs = public_inputs(&circuit);
        assert!(groth16::verify_proof(&pvk, &got, &inputs).unwrap(), "seed {seed}: proof rejected");
        let mut wrong = inputs.clone();
        if let Some(x) = wrong.first_mut() {
            *x += Scalar::ONE;
            assert!(!groth16::verify_proof(&pvk, &got, &wrong).unwrap(), "seed {seed}: accepted for other inputs");
        }
        // A different r gives a different, still valid proof.
        let other = prove_circuit(&cpu, &pce, &params, circuit.clone(), r + Scalar::ONE, s, MsmMode::Split, &tracer, &mut t).unwrap();
        assert_ne!(bytes(&other), bytes(&got));
        assert!(groth16::verify_proof(&pvk, &other, &inputs).unwrap());
    }
}

#[test]
fn parameters_of_another_circuit_are_refused() {
    let cpu = CpuBackend::new();
    let a = RandomCircuit::new(1, 200, 300);
    let b = RandomCircuit::new(2, 250, 700);
    let params_b = params_for(b, 5);
    let pce = extract(a.clone()).unwrap();
    let mut t = Timings::default();
    let err = prove_circuit(&cpu, &pce, &params_b, a, Scalar::ONE, Scalar::ONE, MsmMode::Split, &StageTracer::new(), &mut t).unwrap_err();
    assert!(matches!(err, PceError::Core(cuzk_core::Error::ParamLayout(_))), "expected a parameter-layout error, got {err}");
    assert!(err.to_string().contains("do not fit this circuit"), "{err}");
}

#[test]
fn the_backends_own_mat_vec_gives_bellpersons_proof_too() {
    use cuzk_core::backend::schedule::Scheduled;
    use cuzk_core::backend::Backend;
    use cuzk_pce::prove::{prove_witness, MatVecPlace};
    // Overlapped, the H step runs on its own thread beside the other MSMs: the schedule the
    // CUDA backend asks for.
    let cpu = CpuBackend::new();
    let backends = [Scheduled::new(&cpu, false), Scheduled::new(&cpu, true)];
    let tracer = StageTracer::new();
    for seed in 0..3u64 {
        let circuit = RandomCircuit::new(seed + 20, 500, 700);
        let params = params_for(circuit.clone(), seed + 200);
        let pce = extract(circuit.clone()).unwrap();
        let w = cuzk_witness::witness(circuit.clone(), pce.num_inputs, pce.num_aux).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed + 3);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let want = groth16::create_proof(circuit.clone(), &params, r, s).unwrap();
        for (backend, place) in backends.iter().flat_map(|b| [(b, MatVecPlace::Host), (b, MatVecPlace::Backend)]) {
            let overlap = backend.overlap_h();
            let mut t = Timings::default();
            let got = prove_witness(backend, &pce, &params, &w, r, s, MsmMode::Split, place, &tracer, &mut t).unwrap();
            assert_eq!(bytes(&got), bytes(&want), "seed {seed}, mat-vec {place:?}, overlap {overlap}: proof differs from bellperson's");
            assert!(t.prover.matvec.is_zero() == (place == MatVecPlace::Host), "{place:?}: the backend's mat-vec time");
            let rows: std::time::Duration = t.prover.rows().iter().map(|r| r.1).sum();
            assert!(!t.prover.wall.is_zero() && t.prover.total() == t.prover.wall, "the wall time is the total: {:?}", t.prover);
            if !overlap {
                assert!(t.prover.wall >= rows, "sequential: the wall time covers the rows ({:?} < {rows:?})", t.prover.wall);
            }
        }
    }
}

/// A CPU backend, overlapped like the CUDA one, whose witness "upload" (the start of the fused
/// mat-vec + quotient + H MSM) takes 150 ms before it reports the witness sent, or fails there
/// without reporting it. Every call of the side MSMs (L, A, B) passes through `inner`, which
/// notes the first one.
struct SlowUpload {
    cpu: CpuBackend,
    fail: bool,
    sent: std::sync::Mutex<Option<std::time::Instant>>,
    first_side_call: std::sync::Mutex<Option<std::time::Instant>>,
}

impl SlowUpload {
    fn new(fail: bool) -> Self {
        SlowUpload { cpu: CpuBackend::new(), fail, sent: Default::default(), first_side_call: Default::default() }
    }

    fn inner(&self) -> &CpuBackend {
        self.first_side_call.lock().unwrap().get_or_insert_with(std::time::Instant::now);
        &self.cpu
    }
}

cuzk_core::backend_pass_through!(SlowUpload, inner);

impl cuzk_core::backend::Backend for SlowUpload {
    fn name(&self) -> &str {
        "slow-upload"
    }

    fn overlap_h(&self) -> bool {
        true
    }

    fn matvec_quotient_msm_h(
        &self,
        m: &cuzk_core::backend::Matrices,
        inputs: &[Scalar],
        aux: &[Scalar],
        h_bases: &[blstrs::G1Affine],
        witness_sent: &dyn Fn(Option<cuzk_core::backend::DeviceWitness>),
    ) -> cuzk_core::backend::BackendResult<(blstrs::G1Projective, std::time::Duration, std::time::Duration)> {
        std::thread::sleep(std::time::Duration::from_millis(150));
        if self.fail {
            return Err(cuzk_core::backend::BackendError::Device("the witness upload failed (test)".into()));
        }
        *self.sent.lock().unwrap() = Some(std::time::Instant::now());
        witness_sent(None);
        self.cpu.matvec_quotient_msm_h(m, inputs, aux, h_bases, &|_| {})
    }
}

#[test]
fn the_side_msms_start_once_the_witness_is_sent_and_never_wait_for_a_failed_h_step() {
    use cuzk_pce::prove::{prove_witness, MatVecPlace};
    let circuit = RandomCircuit::new(31, 500, 700);
    let params = params_for(circuit.clone(), 310);
    let pce = extract(circuit.clone()).unwrap();
    let w = cuzk_witness::witness(circuit.clone(), pce.num_inputs, pce.num_aux).unwrap();
    let (r, s) = (Scalar::from(5u64), Scalar::from(7u64));
    let want = groth16::create_proof(circuit.clone(), &params, r, s).unwrap();
    let tracer = StageTracer::new();

    let slow = SlowUpload::new(false);
    let mut t = Timings::default();
    let got = prove_witness(&slow, &pce, &params, &w, r, s, MsmMode::Split, MatVecPlace::Backend, &tracer, &mut t).unwrap();
    assert_eq!(bytes(&got), bytes(&want), "the gated schedule changes no byte of the proof");
    let sent = slow.sent.lock().unwrap().expect("the H step reported the witness sent");
    let first = slow.first_side_call.lock().unwrap().expect("the side MSMs ran");
    assert!(first >= sent, "a side MSM started {:?} before the witness was sent", sent - first);

    // The H step fails before it reports: its end opens the gate, the side MSMs run, and the
    // proof fails with the H step's error instead of hanging.
    let failing = SlowUpload::new(true);
    let err = prove_witness(&failing, &pce, &params, &w, r, s, MsmMode::Split, MatVecPlace::Backend, &tracer, &mut t).unwrap_err();
    assert!(err.to_string().contains("the witness upload failed"), "{err}");
    assert!(failing.first_side_call.lock().unwrap().is_some(), "the side MSMs were let through when the H step ended");
}

#[test]
fn the_side_msms_read_the_handed_over_witness_and_fall_back_to_the_host_where_declined() {
    use cuzk_pce::prove::{prove_witness, MatVecPlace};
    use std::sync::atomic::Ordering::SeqCst;
    let circuit = RandomCircuit::new(37, 500, 700);
    let params = params_for(circuit.clone(), 370);
    let pce = extract(circuit.clone()).unwrap();
    let w = cuzk_witness::witness(circuit.clone(), pce.num_inputs, pce.num_aux).unwrap();
    let (r, s) = (Scalar::from(11u64), Scalar::from(13u64));
    let want = groth16::create_proof(circuit.clone(), &params, r, s).unwrap();
    let tracer = StageTracer::new();
    for (decline_g2, from_witness, host_splits) in [(false, 4, 0), (true, 3, 1)] {
        let b = cuzk_core::testing::WitnessKeepingCpu::new().declining_g2(decline_g2);
        let mut t = Timings::default();
        let got = prove_witness(&b, &pce, &params, &w, r, s, MsmMode::Split, MatVecPlace::Backend, &tracer, &mut t).unwrap();
        assert_eq!(bytes(&got), bytes(&want), "decline G2 {decline_g2}: the proof differs from bellperson's");
        assert_eq!(
            b.from_witness.load(SeqCst),
            from_witness,
            "decline G2 {decline_g2}: MSMs made from the witness (L, A, B in G1, B in G2)"
        );
        assert_eq!(b.host_splits.load(SeqCst), host_splits, "decline G2 {decline_g2}: aux MSMs split on the host");
    }
}
