//! Fast Groth16 test-parameter generation. bellperson's generator evaluates the QAP with a
//! full iFFT and a wNAF table per scalar; here the circuit's recorded matrices (its
//! [`PreCompiledCircuit`], usually straight from the PCE cache) are evaluated at tau through
//! the domain's Lagrange basis in closed form
//! (`L_i(tau) = Z(tau)·ω^i / (m·(tau − ω^i))`, one batched inversion), and every SRS point is
//! made by a multi-threaded signed-window fixed-base multiplication with batched
//! normalisation ([`cuzk_core::fixed_base`]). For equal secrets the output equals bellperson's
//! `generate_parameters` point for point (tested), so the official prover accepts it.
//! Parameters made this way are for tests only: whoever ran the generator knows tau.

use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::Circuit;
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{BatchInvert, Field, PrimeField};
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use cuzk_core::fixed_base::FixedBaseTable;
use cuzk_core::progress::Progress;

use crate::matrix::{CsrMatrix, PreCompiledCircuit};
use crate::{PceError, Result};

/// The toxic waste of one parameter set, plus the two generators it multiplies.
#[derive(Clone, Debug)]
pub struct Secrets {
    /// The G1 generator the secrets multiply (random, as bellperson draws it).
    pub g1: G1Projective,
    /// The G2 generator the secrets multiply.
    pub g2: G2Projective,
    /// α of the Groth16 setup.
    pub alpha: Scalar,
    /// β of the Groth16 setup.
    pub beta: Scalar,
    /// γ, dividing the public-input part of the verifying key (must be non-zero).
    pub gamma: Scalar,
    /// δ, dividing the private part (must be non-zero).
    pub delta: Scalar,
    /// τ, the point the QAP polynomials are evaluated at.
    pub tau: Scalar,
}

impl Secrets {
    /// Draws every secret from `rng`, in the order bellperson's `generate_random_parameters`
    /// draws them (so the same seeded rng gives the same parameters in both generators).
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        Secrets {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }
}

/// Sizes of a generated parameter set, for reporting.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct GenReport {
    /// Constraints, the per-input rows included.
    pub constraints: usize,
    /// Inputs, ONE included.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// The evaluation domain's size (the constraints rounded up to a power of two).
    pub domain: usize,
    /// Points of the H query (domain − 1).
    pub h: usize,
    /// Points of the L query (one per aux).
    pub l: usize,
    /// Points of the A query (every input, and the aux variables that occur in A).
    pub a: usize,
    /// Points of the B query in G1 (the inputs and aux variables that occur in B).
    pub b_g1: usize,
    /// Points of the B query in G2 (as many as in G1).
    pub b_g2: usize,
    /// Seconds spent recording the circuit (zero when a PCE was given).
    pub synthesis_s: f64,
    /// Seconds spent evaluating the QAP at τ.
    pub evaluation_s: f64,
    /// Seconds spent making the G1 points.
    pub g1_s: f64,
    /// Seconds spent making the G2 points.
    pub g2_s: f64,
}

/// Records `circuit` and generates Groth16 parameters for it with the given secrets.
pub fn generate_for<C: Circuit<Scalar>>(circuit: C, secrets: &Secrets) -> Result<(Parameters<Bls12>, GenReport)> {
    let t = Instant::now();
    let pce = crate::record::extract(circuit)?;
    let synthesis_s = t.elapsed().as_secs_f64();
    let (params, report) = generate(&pce, secrets)?;
    Ok((params, GenReport { synthesis_s, ..report }))
}

/// Generates Groth16 parameters for a recorded circuit with the given secrets.
pub fn generate(pce: &PreCompiledCircuit, secrets: &Secrets) -> Result<(Parameters<Bls12>, GenReport)> {
    let mut rep = GenReport { constraints: pce.num_constraints, inputs: pce.num_inputs, aux: pce.num_aux, ..GenReport::default() };
    let t = Instant::now();
    let exp = pce.num_constraints.next_power_of_two().trailing_zeros();
    if exp > Scalar::S {
        return Err(PceError::TooLarge(format!("{} constraints exceed the scalar field's 2-adicity", pce.num_constraints)));
    }
    let m = 1usize << exp;
    rep.domain = m;
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in exp..Scalar::S {
        omega = omega.square();
    }
    let tau = secrets.tau;
    let z_tau = tau.pow_vartime([m as u64]) - Scalar::ONE;
    let m_inv = Scalar::from(m as u64).invert().unwrap();
    let lagrange = lagrange_at(tau, omega, z_tau * m_inv, pce.num_constraints);

    // Column j of a matrix evaluated at tau: Σ_rows coeff · L_row(tau).
    let eval = |m: &CsrMatrix| -> (Vec<Scalar>, Vec<Scalar>) {
        let mut cols = vec![Scalar::ZERO; pce.num_inputs + pce.num_aux];
        for (row, l) in lagrange.iter().enumerate() {
            for e in m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize {
                cols[m.cols[e] as usize] += *l * pce.coeffs[m.coeff_idx[e] as usize];
            }
        }
        let aux = cols.split_off(pce.num_inputs);
        (cols, aux)
    };
    let ((at_in, at_aux), ((bt_in, bt_aux), (ct_in, ct_aux))) =
        rayon::join(|| eval(&pce.a), || rayon::join(|| eval(&pce.b), || eval(&pce.c)));
    drop(lagrange);

    let gamma_inv = Option::<Scalar>::from(secrets.gamma.invert()).ok_or_else(|| PceError::Synthesis("gamma is zero".into()))?;
    let delta_inv = Option::<Scalar>::from(secrets.delta.invert()).ok_or_else(|| PceError::Synthesis("delta is zero".into()))?;
    let combine = |at: &[Scalar], bt: &[Scalar], ct: &[Scalar], inv: Scalar| -> Vec<Scalar> {
        at.par_iter().zip(bt.par_iter()).zip(ct.par_iter()).map(|((a, b), c)| (*a * secrets.beta + *b * secrets.alpha + c) * inv).collect()
    };
    let ic_s = combine(&at_in, &bt_in, &ct_in, gamma_inv);
    let l_s = combine(&at_aux, &bt_aux, &ct_aux, delta_inv);
    if l_s.iter().any(|s| bool::from(s.is_zero())) {
        return Err(PceError::Synthesis("an aux variable is unconstrained; the circuit cannot have parameters".into()));
    }
    let nonzero = |x: Vec<Scalar>, y: Vec<Scalar>| -> Vec<Scalar> { x.into_iter().chain(y).filter(|s| !bool::from(s.is_zero())).collect() };
    let a_s = nonzero(at_in, at_aux);
    let b_s = nonzero(bt_in, bt_aux);
    let h_s = powers(tau, z_tau * delta_inv, m - 1);
    rep.evaluation_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let n_g1 = h_s.len() + l_s.len() + a_s.len() + b_s.len() + ic_s.len();
    let g1_table = FixedBaseTable::new(secrets.g1, FixedBaseTable::<G1Projective>::window_for(n_g1));
    let progress = Progress::start("parameters: G1 points", "points", n_g1 as u64);
    let h: Vec<G1Affine> = g1_table.batch_mul_reporting(&h_s, &progress);
    drop(h_s);
    let l = g1_table.batch_mul_reporting(&l_s, &progress);
    let a = g1_table.batch_mul_reporting(&a_s, &progress);
    let b_g1 = g1_table.batch_mul_reporting(&b_s, &progress);
    let ic = g1_table.batch_mul_reporting(&ic_s, &progress);
    drop((g1_table, progress));
    rep.g1_s = t.elapsed().as_secs_f64();
    tracing::info!(points = n_g1, seconds = format!("{:.2}", rep.g1_s), "G1 points done");

    let t = Instant::now();
    let g2_table = FixedBaseTable::new(secrets.g2, FixedBaseTable::<G2Projective>::window_for(b_s.len()));
    let b_g2: Vec<G2Affine> = g2_table.batch_mul_reporting(&b_s, &Progress::start("parameters: G2 points", "points", b_s.len() as u64));
    rep.g2_s = t.elapsed().as_secs_f64();
    tracing::info!(points = b_g2.len(), seconds = format!("{:.2}", rep.g2_s), "G2 points done");

    let (g1, g2) = (secrets.g1, secrets.g2);
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1 * secrets.alpha).to_affine(),
        beta_g1: (g1 * secrets.beta).to_affine(),
        beta_g2: (g2 * secrets.beta).to_affine(),
        gamma_g2: (g2 * secrets.gamma).to_affine(),
        delta_g1: (g1 * secrets.delta).to_affine(),
        delta_g2: (g2 * secrets.delta).to_affine(),
        ic,
    };
    rep.h = h.len();
    rep.l = l.len();
    rep.a = a.len();
    rep.b_g1 = b_g1.len();
    rep.b_g2 = b_g2.len();
    Ok((Parameters { vk, h: Arc::new(h), l: Arc::new(l), a: Arc::new(a), b_g1: Arc::new(b_g1), b_g2: Arc::new(b_g2) }, rep))
}

const PAR_CHUNK: usize = 1 << 14;

/// `c·x^i` for `i in 0..n`, in parallel chunks.
fn powers(x: Scalar, c: Scalar, n: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(PAR_CHUNK).enumerate().for_each(|(k, chunk)| {
        let mut cur = c * x.pow_vartime([(k * PAR_CHUNK) as u64]);
        for v in chunk {
            *v = cur;
            cur *= x;
        }
    });
    out
}

/// `L_i(tau) = k·ω^i / (tau − ω^i)` for `i in 0..n`, where `k = Z(tau)/m`.
fn lagrange_at(tau: Scalar, omega: Scalar, k: Scalar, n: usize) -> Vec<Scalar> {
    let mut out = powers(omega, Scalar::ONE, n);
    out.par_chunks_mut(PAR_CHUNK).for_each(|chunk| {
        let mut den: Vec<Scalar> = chunk.iter().map(|w| tau - w).collect();
        den.iter_mut().batch_invert();
        for (v, d) in chunk.iter_mut().zip(den) {
            *v = k * *v * d;
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_core::testing::RandomCircuit;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn equals_bellperson_generator_for_equal_secrets() {
        for seed in 0..4u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
            let s = Secrets::random(&mut rng);
            let circuit = || RandomCircuit::new(seed, 20 + 15 * seed as usize, 40 + 30 * seed as usize);
            let (ours, rep) = generate_for(circuit(), &s).unwrap();
            let theirs =
                bellperson::groth16::generate_parameters::<Bls12, _>(circuit(), s.g1, s.g2, s.alpha, s.beta, s.gamma, s.delta, s.tau)
                    .unwrap();
            assert_eq!(ours.vk, theirs.vk, "seed {seed}");
            assert_eq!(ours.h, theirs.h, "seed {seed}: h");
            assert_eq!(ours.l, theirs.l, "seed {seed}: l");
            assert_eq!(ours.a, theirs.a, "seed {seed}: a");
            assert_eq!(ours.b_g1, theirs.b_g1, "seed {seed}: b_g1");
            assert_eq!(ours.b_g2, theirs.b_g2, "seed {seed}: b_g2");
            assert_eq!(rep.h, rep.domain - 1);
        }
    }

    #[test]
    fn lagrange_basis_sums_to_one_and_interpolates() {
        // Σ L_i(tau) = 1 and Σ ω^i·L_i(tau) = tau on the full domain.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let tau = Scalar::random(&mut rng);
        let exp = 5;
        let m = 1usize << exp;
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in exp..Scalar::S {
            omega = omega.square();
        }
        let k = (tau.pow_vartime([m as u64]) - Scalar::ONE) * Scalar::from(m as u64).invert().unwrap();
        let l = lagrange_at(tau, omega, k, m);
        let sum: Scalar = l.iter().sum();
        assert_eq!(sum, Scalar::ONE);
        let w = powers(omega, Scalar::ONE, m);
        let x: Scalar = l.iter().zip(&w).map(|(a, b)| *a * b).sum();
        assert_eq!(x, tau);
    }
}
