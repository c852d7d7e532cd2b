//! Random Groth16 parameters of a given layout, for benchmarks at sizes where real parameters
//! cannot be made here (a 32 GiB partition needs ~47 GB of points): every point is a random
//! multiple of its group's generator, made in parallel blocks by one scalar multiplication
//! and then mixed additions of a fixed random step, normalised once per block. That costs an
//! addition per point instead of a scalar multiplication, so 350M points take seconds per
//! core-hundred, not hours. Such parameters prove nothing: nobody knows a trapdoor that ties
//! them to a circuit, so their proofs never verify. They exercise the prover at full size.

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Curve;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::sync::Arc;

use crate::backend::MsmPoint;
use crate::params::ParamsLayout;

/// Points per block: one scalar multiplication and one batch normalisation each.
const BLOCK: usize = 1 << 14;

/// `n` random points of `P`'s group, the same for the same `seed`.
pub fn random_points<P: MsmPoint>(n: usize, seed: u64) -> Vec<P> {
    let g = P::generator().to_curve();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let step: P = (g * Scalar::random(&mut rng)).to_affine();
    let mut out = vec![P::identity(); n];
    out.par_chunks_mut(BLOCK).enumerate().for_each(|(k, chunk)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(k as u64 + 1);
        let mut p = g * Scalar::random(&mut rng);
        let mut proj = Vec::with_capacity(chunk.len());
        for _ in 0..chunk.len() {
            proj.push(p);
            p += step;
        }
        P::batch_to_affine(&proj, chunk);
    });
    out
}

/// Random parameters with `layout`'s point counts (its byte fields are ignored).
pub fn random_params(layout: &ParamsLayout, seed: u64) -> Parameters<Bls12> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut g1 = || (G1Affine::generator() * Scalar::random(&mut rng)).to_affine();
    let (alpha_g1, beta_g1, delta_g1) = (g1(), g1(), g1());
    let mut g2 = || (G2Affine::generator() * Scalar::random(&mut rng)).to_affine();
    let (beta_g2, gamma_g2, delta_g2) = (g2(), g2(), g2());
    let s = |k: u64| seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(k);
    let vk = VerifyingKey::<Bls12> { alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic: random_points(layout.ic, s(1)) };
    Parameters {
        vk,
        h: Arc::new(random_points(layout.h, s(2))),
        l: Arc::new(random_points(layout.l, s(3))),
        a: Arc::new(random_points(layout.a, s(4))),
        b_g1: Arc::new(random_points(layout.b_g1, s(5))),
        b_g2: Arc::new(random_points(layout.b_g2, s(6))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};

    #[test]
    fn points_are_distinct_valid_and_reproducible() {
        let n = 3 * BLOCK / 2 + 7;
        let p = random_points::<G1Affine>(n, 9);
        assert_eq!(p.len(), n);
        assert!(p.iter().all(|x| bool::from(x.is_on_curve() & x.is_torsion_free() & !x.is_identity())));
        let mut bytes: Vec<_> = p.iter().map(|x| x.to_compressed()).collect();
        bytes.sort_unstable();
        bytes.dedup();
        assert_eq!(bytes.len(), n, "repeated points");
        assert!(random_points::<G1Affine>(n, 9) == p);
        assert!(random_points::<G1Affine>(n, 10) != p);
        // Consecutive points of a block differ by the same step; blocks start elsewhere.
        let d = |i: usize| G1Projective::from(p[i + 1]) - G1Projective::from(p[i]);
        assert_eq!(d(0), d(BLOCK - 2));
        assert_ne!(d(BLOCK - 1), d(0));
        let q = random_points::<G2Affine>(40, 3);
        assert!(q.iter().all(|x| bool::from(x.is_on_curve() & x.is_torsion_free())));
        assert_ne!(G2Projective::from(q[0]), G2Projective::from(q[1]));
    }

    #[test]
    fn params_have_the_layout_asked_for() {
        let layout = ParamsLayout { ic: 3, h: 15, l: 9, a: 11, b_g1: 4, b_g2: 4, ..Default::default() };
        let p = random_params(&layout, 1);
        let got = (p.vk.ic.len(), p.h.len(), p.l.len(), p.a.len(), p.b_g1.len(), p.b_g2.len());
        assert_eq!(got, (3, 15, 9, 11, 4, 4));
        assert!(random_params(&layout, 1) == p);
        assert!(!bool::from(p.vk.delta_g1.is_identity() | p.vk.delta_g2.is_identity()));
    }
}
