//! Random points of either group in bulk, reproducible from a seed: every point is a random
//! multiple of its group's generator, made in parallel blocks by one scalar multiplication and
//! then mixed additions of a fixed random step, normalised once per block — an addition per
//! point instead of a scalar multiplication, so hundreds of millions of points take seconds.
//! The backend's scaling runs and conformance suite draw their bases here, and the random
//! parameters of `random_srs` are built from it; this module knows curve points and seeds
//! only, nothing of parameters, circuits or the backends that consume the points.

use blstrs::Scalar;
use ff::Field;
use group::Curve;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::MsmPoint;

/// Points per block: one scalar multiplication and one batch normalisation each.
pub const BLOCK: usize = 1 << 14;

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

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use group::prime::PrimeCurveAffine;

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
}
