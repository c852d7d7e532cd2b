//! The conformance suite every backend must pass, written once: MSMs (plain, split, bitmap
//! sums) over G1 and G2 against naive sums of scalar multiplications, NTTs against the naive
//! DFT and by round trips and spot evaluations at large sizes, the quotient against the
//! polynomial identity A·B − C = H·Z at a random point and against bellperson's evaluation
//! domain, the sparse mat-vec against the plainest evaluation (alone and fused into the
//! quotient and H MSM), and the typed errors for bad inputs. Inputs are random with the edge values mixed
//! in (0, 1, r − 1, points at infinity, repeated and opposite points). The CPU backend runs it
//! in CI (`cargo test`); the CUDA backend runs it on the GPU machine (`cuzk selftest`).

use std::time::Instant;

use bellperson::domain::EvaluationDomain;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ec_gpu_gen::threadpool::Worker;
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Backend, BackendError, Msm, MsmPoint, NttKind};

/// How big the cases are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// CI-sized: naive references up to a few thousand points, NTTs to 2^16.
    Quick,
    /// Adds MSMs of 2^18 points against the CPU backend and NTTs of 2^20.
    Full,
}

/// The outcome of one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The case's name, as the report prints it.
    pub name: String,
    /// Wall time of the case in seconds.
    pub seconds: f64,
    /// `None` when it passed, else what differed.
    pub failure: Option<String>,
}

/// Runs every case against `backend`; never panics on a wrong answer.
pub fn run(backend: &dyn Backend, seed: u64, scale: Scale) -> Vec<CaseResult> {
    run_with(backend, seed, scale, false)
}

/// [`run`]; with `expect_device_witness` the fused H step must hand over a device witness and
/// the side MSMs must read it (a device backend told to: `cuzk_gpu`'s `GpuOptions::side_msms`),
/// so that the case over it cannot pass by not running.
pub fn run_with(backend: &dyn Backend, seed: u64, scale: Scale, expect_device_witness: bool) -> Vec<CaseResult> {
    let mut out = Vec::new();
    let mut case = |name: &str, f: &mut dyn FnMut() -> Result<(), String>| {
        let t = Instant::now();
        let r = f();
        out.push(CaseResult { name: name.to_string(), seconds: t.elapsed().as_secs_f64(), failure: r.err() });
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    case("msm g1 vs naive", &mut || msm_vs_naive::<G1Affine>(backend, &mut rng, &[0, 1, 2, 3, 31, 32, 33, 257, 2049]));
    case("msm g2 vs naive", &mut || msm_vs_naive::<G2Affine>(backend, &mut rng, &[0, 1, 2, 33, 300]));
    case("sum g1 vs naive", &mut || sum_vs_naive::<G1Affine>(backend, &mut rng, 3000));
    case("sum g2 vs naive", &mut || sum_vs_naive::<G2Affine>(backend, &mut rng, 400));
    case("msm g1 bit-heavy split", &mut || split_bit_heavy::<G1Affine>(backend, &mut rng, 5000));
    case("ntt vs naive dft", &mut || ntt_vs_naive(backend, &mut rng));
    case("ntt round trips", &mut || ntt_round_trips(backend, &mut rng, if scale == Scale::Full { 20 } else { 16 }));
    // Sizes on both sides of the CPU NTT's block size (2^14) and its radix-4 passes.
    case("ntt spot evaluations", &mut || {
        let sizes: &[u32] = if scale == Scale::Full { &[15, 16, 17, 18, 19, 20, 21] } else { &[14, 15, 16, 17, 18] };
        sizes.iter().try_for_each(|&l| ntt_spot_checks(backend, &mut rng, l))
    });
    case("quotient identity", &mut || quotient_identity(backend, &mut rng));
    case("quotient vs bellperson domain", &mut || quotient_vs_bellperson(backend, &mut rng));
    case("bad inputs rejected", &mut || bad_inputs(backend));
    {
        let cpu = super::cpu::CpuBackend::new();
        let len = if scale == Scale::Full { 140_000 } else { 3000 };
        case("quotient + msm h vs separate cpu steps", &mut || quotient_msm_h_vs(backend, &cpu, &mut rng, len));
        let rows = if scale == Scale::Full { 140_000 } else { 3000 };
        case("mat-vec vs naive, and mat-vec + quotient + msm h", &mut || matvec_vs_naive(backend, &cpu, &mut rng, rows));
        case("msms over the device witness vs cpu", &mut || device_witness_msms(backend, &cpu, &mut rng, rows, expect_device_witness));
        case("msm g1 with five distinct scalars vs cpu", &mut || msm_vs_backend::<G1Affine>(backend, &cpu, &mut rng, 3000, Some(5)));
    }
    if scale == Scale::Full {
        let cpu = super::cpu::CpuBackend::new();
        case("msm g1 2^18 vs cpu", &mut || msm_vs_backend::<G1Affine>(backend, &cpu, &mut rng, 1 << 18, None));
        case("msm g2 2^16 vs cpu", &mut || msm_vs_backend::<G2Affine>(backend, &cpu, &mut rng, 1 << 16, None));
        case("msm g1 2^18 with five distinct scalars vs cpu", &mut || {
            msm_vs_backend::<G1Affine>(backend, &cpu, &mut rng, 1 << 18, Some(5))
        });
    }
    out
}

/// Panics with every failure listed (for `#[test]`s).
pub fn assert_passes(backend: &dyn Backend, seed: u64, scale: Scale) {
    assert_passes_with(backend, seed, scale, false)
}

/// [`assert_passes`] with [`run_with`]'s expectation.
pub fn assert_passes_with(backend: &dyn Backend, seed: u64, scale: Scale, expect_device_witness: bool) {
    let results = run_with(backend, seed, scale, expect_device_witness);
    let failed: Vec<String> = results.iter().filter_map(|r| r.failure.as_ref().map(|f| format!("{}: {f}", r.name))).collect();
    assert!(failed.is_empty(), "{} backend failed conformance:\n{}", backend.name(), failed.join("\n"));
}

/// Scalars with the edge values mixed in: 0, 1, r − 1, 2 and random.
pub fn edge_scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
    (0..n)
        .map(|i| match i % 7 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            2 => -Scalar::ONE,
            3 => Scalar::from(2u64),
            4 if rng.gen_bool(0.5) => Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

/// Random points with the identity at some positions.
pub fn edge_points<P: MsmPoint>(rng: &mut ChaCha8Rng, n: usize) -> Vec<P> {
    let g = P::generator().to_curve();
    (0..n).map(|i| if i % 11 == 5 { P::identity() } else { (g * Scalar::random(&mut *rng)).to_affine() }).collect()
}

fn naive<P: MsmPoint>(bases: &[P], scalars: &[Scalar]) -> P::Curve {
    use rayon::prelude::*;
    bases.par_iter().zip(scalars.par_iter()).map(|(b, s)| b.to_curve() * s).reduce(super::identity::<P>, |x, y| x + y)
}

fn same<P: MsmPoint>(what: &str, got: P::Curve, want: P::Curve) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{} {what}: backend and reference differ", P::NAME))
    }
}

fn msm_vs_naive<P: MsmPoint>(b: &dyn Backend, rng: &mut ChaCha8Rng, sizes: &[usize]) -> Result<(), String> {
    let b = P::msm_of(b);
    for &n in sizes {
        let bases = edge_points::<P>(rng, n);
        let scalars = edge_scalars(rng, n);
        let want = naive(&bases, &scalars);
        same::<P>(&format!("msm n={n}"), b.msm(&bases, &scalars).map_err(|e| e.to_string())?, want)?;
        same::<P>(&format!("msm_split n={n}"), b.msm_split(&bases, &scalars).map_err(|e| e.to_string())?, want)?;
    }
    Ok(())
}

fn sum_vs_naive<P: MsmPoint>(b: &dyn Backend, rng: &mut ChaCha8Rng, n: usize) -> Result<(), String> {
    let b = P::msm_of(b);
    let mut bases = edge_points::<P>(rng, n);
    // Opposite pairs (cancellation) and a run of equal points (doubling).
    for i in (0..n.saturating_sub(1)).step_by(97) {
        bases[i + 1] = (-bases[i].to_curve()).to_affine();
    }
    for i in (n / 2..n).take(20) {
        bases[i] = bases[n / 2];
    }
    let mut idx: Vec<u32> = (0..n as u32).filter(|_| rng.gen_bool(0.7)).collect();
    idx.extend([0u32, 0, 1, 1].iter().filter(|&&i| (i as usize) < n));
    let want = idx.iter().fold(super::identity::<P>(), |acc, &i| acc + bases[i as usize].to_curve());
    same::<P>("sum_selected", b.sum_selected(&bases, &idx).map_err(|e| e.to_string())?, want)?;
    same::<P>("sum_selected (empty)", b.sum_selected(&bases, &[]).map_err(|e| e.to_string())?, super::identity::<P>())
}

fn split_bit_heavy<P: MsmPoint>(b: &dyn Backend, rng: &mut ChaCha8Rng, n: usize) -> Result<(), String> {
    let b = P::msm_of(b);
    // Like a witness: ~97% zeros and ones.
    let bases = edge_points::<P>(rng, n);
    let scalars: Vec<Scalar> = (0..n)
        .map(|_| match rng.gen_range(0..100) {
            0..=49 => Scalar::ZERO,
            50..=96 => Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect();
    let want = naive(&bases, &scalars);
    same::<P>("bit-heavy msm", b.msm(&bases, &scalars).map_err(|e| e.to_string())?, want)?;
    same::<P>("bit-heavy msm_split", b.msm_split(&bases, &scalars).map_err(|e| e.to_string())?, want)
}

/// The backend's MSM (plain and split) against `reference`'s over `n` bases, with the edge
/// scalars or, with `distinct`, only that many values drawn at random: many equal scalars put
/// many points into the same Pippenger bucket in every window.
fn msm_vs_backend<P: MsmPoint>(
    b: &dyn Backend,
    reference: &dyn Backend,
    rng: &mut ChaCha8Rng,
    n: usize,
    distinct: Option<usize>,
) -> Result<(), String> {
    let b = P::msm_of(b);
    let g = P::generator().to_curve();
    let step = g * Scalar::random(&mut *rng);
    let mut acc = step;
    let bases: Vec<P> = (0..n)
        .map(|_| {
            acc += step.double();
            acc.to_affine()
        })
        .collect();
    let scalars = match distinct {
        None => edge_scalars(rng, n),
        Some(k) => {
            let values: Vec<Scalar> = (0..k).map(|_| Scalar::random(&mut *rng)).collect();
            (0..n).map(|_| values[rng.gen_range(0..k)]).collect()
        }
    };
    let reference = P::msm_of(reference);
    let want = reference.msm(&bases, &scalars).map_err(|e| e.to_string())?;
    same::<P>(&format!("msm n={n}"), b.msm(&bases, &scalars).map_err(|e| e.to_string())?, want)?;
    same::<P>(&format!("msm_split n={n}"), b.msm_split(&bases, &scalars).map_err(|e| e.to_string())?, want)
}

fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

/// Evaluates the polynomial with coefficients `coeffs` at `x`.
fn horner(coeffs: &[Scalar], x: Scalar) -> Scalar {
    coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
}

fn ntt_vs_naive(b: &dyn Backend, rng: &mut ChaCha8Rng) -> Result<(), String> {
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    for log_n in [0u32, 1, 2, 3, 6] {
        let n = 1usize << log_n;
        let w = omega(log_n);
        let coeffs = edge_scalars(rng, n);
        let pts: Vec<Scalar> = (0..n).map(|k| w.pow_vartime([k as u64])).collect();
        let fwd: Vec<Scalar> = pts.iter().map(|&x| horner(&coeffs, x)).collect();
        let cos: Vec<Scalar> = pts.iter().map(|&x| horner(&coeffs, g * x)).collect();
        let mut v = coeffs.clone();
        b.ntt(&mut v, NttKind::Forward).map_err(|e| e.to_string())?;
        if v != fwd {
            return Err(format!("forward NTT of size {n} differs from the DFT"));
        }
        let mut v = coeffs.clone();
        b.ntt(&mut v, NttKind::CosetForward).map_err(|e| e.to_string())?;
        if v != cos {
            return Err(format!("coset NTT of size {n} differs from evaluation on g·H"));
        }
        let mut v = fwd.clone();
        b.ntt(&mut v, NttKind::Inverse).map_err(|e| e.to_string())?;
        if v != coeffs {
            return Err(format!("inverse NTT of size {n} does not recover the coefficients"));
        }
        let mut v = cos.clone();
        b.ntt(&mut v, NttKind::CosetInverse).map_err(|e| e.to_string())?;
        if v != coeffs {
            return Err(format!("coset inverse NTT of size {n} does not recover the coefficients"));
        }
    }
    Ok(())
}

fn ntt_round_trips(b: &dyn Backend, rng: &mut ChaCha8Rng, max_log: u32) -> Result<(), String> {
    for log_n in [10, 13, max_log] {
        let x = edge_scalars(rng, 1 << log_n);
        for (fwd, inv) in [(NttKind::Forward, NttKind::Inverse), (NttKind::CosetForward, NttKind::CosetInverse)] {
            let mut v = x.clone();
            b.ntt(&mut v, fwd).map_err(|e| e.to_string())?;
            if v == x {
                return Err(format!("{fwd:?} of size 2^{log_n} left the data unchanged"));
            }
            b.ntt(&mut v, inv).map_err(|e| e.to_string())?;
            if v != x {
                return Err(format!("{inv:?}∘{fwd:?} of size 2^{log_n} is not the identity"));
            }
        }
    }
    Ok(())
}

fn ntt_spot_checks(b: &dyn Backend, rng: &mut ChaCha8Rng, log_n: u32) -> Result<(), String> {
    let n = 1usize << log_n;
    let w = omega(log_n);
    let coeffs = edge_scalars(rng, n);
    let mut fwd = coeffs.clone();
    b.ntt(&mut fwd, NttKind::Forward).map_err(|e| e.to_string())?;
    let mut cos = coeffs.clone();
    b.ntt(&mut cos, NttKind::CosetForward).map_err(|e| e.to_string())?;
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    for k in [0, 1, n / 2, n - 1, rng.gen_range(0..n), rng.gen_range(0..n)] {
        let x = w.pow_vartime([k as u64]);
        if fwd[k] != horner(&coeffs, x) {
            return Err(format!("forward NTT of size 2^{log_n} wrong at index {k}"));
        }
        if cos[k] != horner(&coeffs, g * x) {
            return Err(format!("coset NTT of size 2^{log_n} wrong at index {k}"));
        }
    }
    Ok(())
}

/// Value at `tau` of the polynomial of degree < n through `evals` on the domain of size n.
fn lagrange_eval(evals: &[Scalar], tau: Scalar) -> Scalar {
    let n = evals.len();
    let w = omega(n.trailing_zeros());
    let zt = tau.pow_vartime([n as u64]) - Scalar::ONE;
    let ninv = Scalar::from(n as u64).invert().unwrap();
    let mut wi = Scalar::ONE;
    let mut acc = Scalar::ZERO;
    for e in evals {
        acc += *e * wi * (tau - wi).invert().unwrap();
        wi *= w;
    }
    acc * zt * ninv
}

fn quotient_identity(b: &dyn Backend, rng: &mut ChaCha8Rng) -> Result<(), String> {
    for (len, n) in [(5usize, 8usize), (1000, 1024), (1024, 1024)] {
        let a = edge_scalars(rng, len);
        let bb: Vec<Scalar> = (0..len).map(|_| Scalar::random(&mut *rng)).collect();
        let c: Vec<Scalar> = a.iter().zip(&bb).map(|(x, y)| *x * y).collect();
        let h = b.quotient(a.clone(), bb.clone(), c.clone()).map_err(|e| e.to_string())?;
        if h.len() != n - 1 {
            return Err(format!("quotient of a size-{n} domain has {} coefficients, not {}", h.len(), n - 1));
        }
        let tau = Scalar::random(&mut *rng);
        let pad = |v: &[Scalar]| {
            let mut v = v.to_vec();
            v.resize(n, Scalar::ZERO);
            lagrange_eval(&v, tau)
        };
        let lhs = pad(&a) * pad(&bb) - pad(&c);
        let rhs = horner(&h, tau) * (tau.pow_vartime([n as u64]) - Scalar::ONE);
        if lhs != rhs {
            return Err(format!("A·B − C ≠ H·Z at a random point (domain {n})"));
        }
    }
    Ok(())
}

/// The fused quotient + H MSM (a device keeps H resident between the two) against the CPU's
/// quotient followed by the CPU's MSM.
fn quotient_msm_h_vs(b: &dyn Backend, cpu: &dyn Backend, rng: &mut ChaCha8Rng, len: usize) -> Result<(), String> {
    let [a, bb, c] = [(); 3].map(|_| edge_scalars(rng, len));
    let n = len.next_power_of_two();
    let bases = super::points::random_points::<G1Affine>(n - 1, rng.gen());
    let h = cpu.quotient(a.clone(), bb.clone(), c.clone()).map_err(|e| e.to_string())?;
    let want = Msm::<G1Affine>::msm(cpu, &bases, &h).map_err(|e| e.to_string())?;
    let (got, _) = b.quotient_msm_h(a, bb, c, &bases).map_err(|e| e.to_string())?;
    same::<G1Affine>(&format!("quotient + msm h, {len} rows"), got, want)?;
    match b.quotient_msm_h(vec![Scalar::ONE; 8], vec![Scalar::ONE; 8], vec![Scalar::ONE; 8], &bases[..3]) {
        Err(BackendError::Input(_)) => Ok(()),
        other => Err(format!("h bases of the wrong length must be refused, got {other:?}")),
    }
}

/// The backend's mat-vec equals the naive evaluation on random matrices (long rows, ±1 and
/// general coefficients, 0/1-heavy witness), and its fused mat-vec + quotient + H MSM equals
/// the CPU's separate steps; a witness of the wrong size is refused.
fn matvec_vs_naive(b: &dyn Backend, cpu: &dyn Backend, rng: &mut ChaCha8Rng, rows: usize) -> Result<(), String> {
    let (ni, na) = (7, rows + rows / 3);
    let owned = super::sparse::OwnedMatrices::random(rng, ni, na, rows, 5, 300);
    let m = owned.view();
    let mut inputs = edge_scalars(rng, ni);
    inputs[0] = Scalar::ONE;
    let aux = edge_scalars(rng, na);
    let want = super::sparse::evaluate_naive(&m, &inputs, &aux);
    let got = b.mat_vec(&m, &inputs, &aux).map_err(|e| e.to_string())?;
    for (name, g, w) in [("a", &got.a, &want.a), ("b", &got.b, &want.b), ("c", &got.c, &want.c)] {
        if let Some(i) = (0..w.len().max(g.len())).find(|&i| g.get(i) != w.get(i)) {
            return Err(format!("mat-vec {name} differs at row {i} of {rows}"));
        }
    }
    let n = rows.next_power_of_two();
    let bases = super::points::random_points::<G1Affine>(n - 1, rng.gen());
    let (h_want, _) = cpu.quotient_msm_h(want.a, want.b, want.c, &bases).map_err(|e| e.to_string())?;
    let (h_got, _, _) = b.matvec_quotient_msm_h(&m, &inputs, &aux, &bases, &|_| {}).map_err(|e| e.to_string())?;
    same::<G1Affine>(&format!("mat-vec + quotient + msm h, {rows} rows"), h_got, h_want)?;
    match b.mat_vec(&m, &inputs, &aux[1..]) {
        Err(BackendError::Input(_)) => Ok(()),
        other => Err(format!("a witness of the wrong size must be refused, got {:?}", other.map(|_| ()))),
    }
}

/// The side MSMs over the witness a backend keeps after its fused H step, if it hands one
/// over: over every aux value and over density selections (the bit-heavy half, the general
/// half, a sparse pattern with bits past the aux, none, a single one), in split, plain and
/// auto mode, each against the CPU's MSM over the same scalars selected on the host; G2 on
/// one selection. `expect_witness`: handing none over (or using it for no MSM) is a failure.
fn device_witness_msms(b: &dyn Backend, cpu: &dyn Backend, rng: &mut ChaCha8Rng, rows: usize, expect_witness: bool) -> Result<(), String> {
    use super::{DeviceWitness, MsmMode};
    let (ni, na) = (5, rows + rows / 3);
    let owned = super::sparse::OwnedMatrices::random(rng, ni, na, rows, 5, 300);
    let m = owned.view();
    let mut inputs = edge_scalars(rng, ni);
    inputs[0] = Scalar::ONE;
    // The first half bit-heavy (one general value in 50), the second half mostly general.
    let aux: Vec<Scalar> = (0..na)
        .map(|i| match (i < na / 2, rng.gen_range(0..50)) {
            (true, 0) | (false, 2..) => Scalar::random(&mut *rng),
            (_, k) if k % 2 == 1 => Scalar::ONE,
            _ => Scalar::ZERO,
        })
        .collect();
    let h_bases = super::points::random_points::<G1Affine>(rows.next_power_of_two() - 1, rng.gen());
    let slot = std::sync::Mutex::new(None::<DeviceWitness>);
    b.matvec_quotient_msm_h(&m, &inputs, &aux, &h_bases, &|w| *slot.lock().unwrap() = w).map_err(|e| e.to_string())?;
    let Some(witness) = slot.into_inner().unwrap() else {
        return if expect_witness { Err("the fused H step handed no device witness over".into()) } else { Ok(()) };
    };
    let words = na.div_ceil(64) + 1; // one word past the aux: bits there select nothing
    let half = |first: bool| -> Vec<u64> {
        let mut d = vec![0u64; words];
        for i in (0..na).filter(|&i| (i < na / 2) == first) {
            d[i / 64] |= 1 << (i % 64);
        }
        d
    };
    let sparse: Vec<u64> = (0..words).map(|_| rng.gen::<u64>() & rng.gen::<u64>()).collect();
    let mut single = vec![0u64; words];
    single[(na - 1) / 64] |= 1 << ((na - 1) % 64);
    let densities: [(&str, Option<Vec<u64>>); 6] = [
        ("every aux value", None),
        ("the bit-heavy half", Some(half(true))),
        ("the general half", Some(half(false))),
        ("a sparse pattern", Some(sparse)),
        ("none", Some(vec![0; words])),
        ("the last one", Some(single)),
    ];
    let mut used = 0;
    for (what, d) in &densities {
        let selected = match d {
            None => aux.clone(),
            Some(d) => aux.iter().enumerate().filter(|(i, _)| d[i / 64] >> (i % 64) & 1 == 1).map(|(_, s)| *s).collect(),
        };
        let bases = super::points::random_points::<G1Affine>(selected.len(), rng.gen());
        let want = Msm::<G1Affine>::msm(cpu, &bases, &selected).map_err(|e| e.to_string())?;
        for mode in [MsmMode::Split, MsmMode::Plain, MsmMode::Auto] {
            match Msm::<G1Affine>::msm_of_device_witness(b, &bases, &witness, d.as_deref(), mode) {
                None => {}
                Some(got) => {
                    used += 1;
                    same::<G1Affine>(&format!("msm over the device witness, {what}, {mode:?}"), got.map_err(|e| e.to_string())?, want)?;
                }
            }
        }
        if *what == "the bit-heavy half" {
            let bases = super::points::random_points::<G2Affine>(selected.len(), rng.gen());
            let want = Msm::<G2Affine>::msm(cpu, &bases, &selected).map_err(|e| e.to_string())?;
            if let Some(got) = Msm::<G2Affine>::msm_of_device_witness(b, &bases, &witness, d.as_deref(), MsmMode::Auto) {
                used += 1;
                same::<G2Affine>(&format!("msm over the device witness, {what}"), got.map_err(|e| e.to_string())?, want)?;
            }
        }
    }
    if expect_witness && used == 0 {
        return Err("a device witness was handed over but no MSM read it".into());
    }
    Ok(())
}

fn quotient_vs_bellperson(b: &dyn Backend, rng: &mut ChaCha8Rng) -> Result<(), String> {
    // An unsatisfied system: H is then not a polynomial quotient, so only the exact same
    // schedule (domain, coset, order of steps) reproduces bellperson's vector.
    for len in [3000, 140_000] {
        quotient_vs_bellperson_at(b, rng, len)?;
    }
    Ok(())
}

fn quotient_vs_bellperson_at(b: &dyn Backend, rng: &mut ChaCha8Rng, len: usize) -> Result<(), String> {
    let [a, bb, c] = [(); 3].map(|_| edge_scalars(rng, len));
    let got = b.quotient(a.clone(), bb.clone(), c.clone()).map_err(|e| e.to_string())?;
    let worker = Worker::new();
    let dom = |v: Vec<Scalar>| EvaluationDomain::from_coeffs(v).map_err(|e| e.to_string());
    let (mut da, mut db, mut dc) = (dom(a)?, dom(bb)?, dom(c)?);
    for d in [&mut da, &mut db, &mut dc] {
        d.ifft(&worker, &mut None).map_err(|e| e.to_string())?;
        d.coset_fft(&worker, &mut None).map_err(|e| e.to_string())?;
    }
    da.mul_assign(&worker, &db);
    da.sub_assign(&worker, &dc);
    da.divide_by_z_on_coset(&worker);
    da.icoset_fft(&worker, &mut None).map_err(|e| e.to_string())?;
    let mut want = da.into_coeffs();
    want.pop();
    if got != want {
        return Err(format!("quotient of {len} values differs from bellperson's evaluation-domain schedule"));
    }
    Ok(())
}

fn bad_inputs(b: &dyn Backend) -> Result<(), String> {
    let mut v = vec![Scalar::ONE; 12];
    match b.ntt(&mut v, NttKind::Forward) {
        Err(BackendError::Input(_)) => {}
        other => return Err(format!("NTT of length 12 gave {other:?}, not an input error")),
    }
    let pts = vec![G1Affine::generator(); 3];
    match Msm::<G1Affine>::msm(b, &pts, &[Scalar::ONE; 2]) {
        Err(BackendError::Input(_)) => {}
        other => return Err(format!("MSM of 3 bases and 2 scalars gave {other:?}, not an input error")),
    }
    match Msm::<G1Affine>::sum_selected(b, &pts, &[0, 3]) {
        Err(BackendError::Input(_)) => {}
        other => return Err(format!("sum with index 3 of 3 bases gave {other:?}, not an input error")),
    }
    let g2 = vec![G2Affine::generator(); 2];
    match Msm::<G2Affine>::msm(b, &g2, &[Scalar::ONE; 3]) {
        Err(BackendError::Input(_)) => {}
        other => return Err(format!("G2 MSM of 2 bases and 3 scalars gave {other:?}, not an input error")),
    }
    let _: (G1Projective, G2Projective) = (G1Projective::identity(), G2Projective::identity());
    Ok(())
}
