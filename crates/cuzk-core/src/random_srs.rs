//! Random Groth16 parameters of a given layout, for benchmarks at sizes where real parameters
//! cannot be made here (a 32 GiB partition needs ~47 GB of points): every point comes from
//! [`crate::backend::points::random_points`] (random multiples of the generators by batched
//! additions, seconds per hundred million points). Such parameters prove nothing: nobody knows
//! a trapdoor that ties them to a circuit, so their proofs never verify. They exercise the
//! prover at full size. This module knows the parameters' layout, not circuits or how the
//! points are made.

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Curve;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

use crate::backend::points::random_points;
use crate::params::ParamsLayout;

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
