//! Fixed-base scalar multiplication in bulk: a signed-digit window table of one base point,
//! then millions of `k·G` computed with one mixed addition per window and converted to affine
//! with blst's batched (Montgomery-trick) normalisation. This is what makes test-parameter
//! generation fast: every point of a Groth16 SRS is a multiple of one of two generators.

use std::ops::{AddAssign, Neg};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

use crate::progress::Progress;

/// Projective curve types whose points can be normalised to affine in batches.
pub trait BatchNormalize: Curve + Group<Scalar = Scalar> + Send + Sync
where
    Self::AffineRepr: Copy + Send + Sync + Neg<Output = Self::AffineRepr> + PrimeCurveAffine,
    for<'a> Self: AddAssign<&'a Self::AffineRepr>,
{
    /// Writes the affine form of every point of `src` into `dst`. No point may be the identity.
    fn normalize_batch(src: &[Self], dst: &mut [Self::AffineRepr]);

    /// `acc += p` without the doubling check: correct whenever `acc ≠ ±p` (the identity on
    /// either side is fine). Cheaper than the general mixed addition.
    fn add_distinct(acc: &mut Self, p: &Self::AffineRepr);
}

impl BatchNormalize for G1Projective {
    fn normalize_batch(src: &[Self], dst: &mut [G1Affine]) {
        assert_eq!(src.len(), dst.len());
        if src.is_empty() {
            return;
        }
        debug_assert!(src.iter().all(|p| !bool::from(p.is_identity())));
        // blst walks a contiguous array when the pointer list ends in NULL.
        let ptrs = [src.as_ptr() as *const blst::blst_p1, std::ptr::null()];
        // SAFETY: G1Projective and G1Affine are repr(transparent) over blst_p1 and
        // blst_p1_affine; `dst` has room for `src.len()` points; no point is at infinity.
        unsafe { blst::blst_p1s_to_affine(dst.as_mut_ptr() as *mut blst::blst_p1_affine, ptrs.as_ptr(), src.len()) };
    }

    fn add_distinct(acc: &mut Self, p: &G1Affine) {
        let a: *mut blst::blst_p1 = (acc as *mut G1Projective).cast();
        // SAFETY: repr(transparent) blst types; blst allows `out` to alias the first input.
        unsafe { blst::blst_p1_add_affine(a, a, (p as *const G1Affine).cast()) };
    }
}

impl BatchNormalize for G2Projective {
    fn normalize_batch(src: &[Self], dst: &mut [G2Affine]) {
        assert_eq!(src.len(), dst.len());
        if src.is_empty() {
            return;
        }
        debug_assert!(src.iter().all(|p| !bool::from(p.is_identity())));
        let ptrs = [src.as_ptr() as *const blst::blst_p2, std::ptr::null()];
        // SAFETY: as for G1: repr(transparent) blst types, sized destination, no infinity.
        unsafe { blst::blst_p2s_to_affine(dst.as_mut_ptr() as *mut blst::blst_p2_affine, ptrs.as_ptr(), src.len()) };
    }

    fn add_distinct(acc: &mut Self, p: &G2Affine) {
        let a: *mut blst::blst_p2 = (acc as *mut G2Projective).cast();
        // SAFETY: as for G1.
        unsafe { blst::blst_p2_add_affine(a, a, (p as *const G2Affine).cast()) };
    }
}

/// Precomputed multiples of one base point: `table[j][d-1] = d·2^(w·j)·G` for
/// `d in 1..=2^(w-1)`; scalars are recoded into signed digits in `[-2^(w-1), 2^(w-1)]`.
pub struct FixedBaseTable<G: BatchNormalize>
where
    G::AffineRepr: Copy + Send + Sync + Neg<Output = G::AffineRepr> + PrimeCurveAffine,
    for<'a> G: AddAssign<&'a G::AffineRepr>,
{
    window: usize,
    tables: Vec<Vec<G::AffineRepr>>,
}

/// Points computed per rayon task (and per batched normalisation).
const CHUNK: usize = 2048;

impl<G: BatchNormalize> FixedBaseTable<G>
where
    G::AffineRepr: Copy + Send + Sync + Neg<Output = G::AffineRepr> + PrimeCurveAffine,
    for<'a> G: AddAssign<&'a G::AffineRepr>,
{
    /// Builds the table for `base` with window width `window` bits (2..=22).
    pub fn new(base: G, window: usize) -> Self {
        assert!((2..=22).contains(&window), "window {window} out of range");
        assert!(!bool::from(base.is_identity()), "base point is the identity");
        let windows = windows_for(window);
        let mut window_bases = Vec::with_capacity(windows);
        let mut b = base;
        for _ in 0..windows {
            window_bases.push(b);
            for _ in 0..window {
                b = b.double();
            }
        }
        let half = 1usize << (window - 1);
        let tables = window_bases
            .into_par_iter()
            .map(|wb| {
                let wb_affine = wb.to_affine();
                let mut proj = Vec::with_capacity(half);
                let mut acc = wb;
                proj.push(acc);
                for _ in 1..half {
                    acc += &wb_affine;
                    proj.push(acc);
                }
                let mut affine = vec![G::AffineRepr::identity(); half];
                for (s, d) in proj.chunks(CHUNK).zip(affine.chunks_mut(CHUNK)) {
                    G::normalize_batch(s, d);
                }
                affine
            })
            .collect();
        FixedBaseTable { window, tables }
    }

    /// The window width (at most 20 bits, a 650 MB G1 table) that minimises the additions
    /// for `n` points: `n` per window plus `2^(w-1)` per window to build the table.
    pub fn window_for(n: usize) -> usize {
        (4..=20).min_by_key(|&w| windows_for(w) * (n + (1usize << (w - 1)))).unwrap_or(16)
    }

    /// `s·G` in projective form.
    pub fn mul(&self, s: &Scalar) -> G {
        let repr = s.to_repr();
        let bytes = repr.as_ref();
        let w = self.window;
        let mask = (1u64 << w) - 1;
        let half = 1i64 << (w - 1);
        let mut acc = G::identity();
        let mut carry = 0i64;
        for (j, table) in self.tables.iter().enumerate() {
            let bit = j * w;
            let raw = bits_at(bytes, bit, w) & mask;
            let mut d = raw as i64 + carry;
            if d > half {
                d -= 1 << w;
                carry = 1;
            } else {
                carry = 0;
            }
            // While every value involved stays below 2^253 < r/2 in magnitude, the partial
            // sum (|Σ_{i<j} d_i·2^(wi)| < 2^(wj)) can never equal ± the entry (≥ 2^(wj)), so
            // the doubling check can be skipped; the top windows take the general addition.
            let distinct = (j + 1) * w <= 253;
            let entry = match d.cmp(&0) {
                std::cmp::Ordering::Greater => table[(d - 1) as usize],
                std::cmp::Ordering::Less => -table[(-d - 1) as usize],
                std::cmp::Ordering::Equal => continue,
            };
            if distinct {
                G::add_distinct(&mut acc, &entry);
            } else {
                acc += &entry;
            }
        }
        debug_assert_eq!(carry, 0);
        acc
    }

    /// `s·G` for every scalar, in affine form, in parallel. Zero scalars give the identity.
    pub fn batch_mul(&self, scalars: &[Scalar]) -> Vec<G::AffineRepr> {
        let mut out = vec![G::AffineRepr::identity(); scalars.len()];
        self.batch_mul_into(scalars, &mut out);
        out
    }

    /// As [`Self::batch_mul`], counting the points done on `progress`.
    pub fn batch_mul_reporting(&self, scalars: &[Scalar], progress: &Progress) -> Vec<G::AffineRepr> {
        let mut out = vec![G::AffineRepr::identity(); scalars.len()];
        self.batch_mul_chunks(scalars, &mut out, Some(progress));
        out
    }

    /// As [`Self::batch_mul`], writing into `out` (same length as `scalars`).
    pub fn batch_mul_into(&self, scalars: &[Scalar], out: &mut [G::AffineRepr]) {
        self.batch_mul_chunks(scalars, out, None)
    }

    fn batch_mul_chunks(&self, scalars: &[Scalar], out: &mut [G::AffineRepr], progress: Option<&Progress>) {
        assert_eq!(scalars.len(), out.len());
        scalars.par_chunks(CHUNK).zip(out.par_chunks_mut(CHUNK)).for_each(|(s, o)| {
            self.mul_chunk(s, o);
            if let Some(p) = progress {
                p.advance(s.len() as u64);
            }
        });
    }

    fn mul_chunk(&self, s: &[Scalar], o: &mut [G::AffineRepr]) {
        let nonzero: Vec<usize> = (0..s.len()).filter(|&i| !bool::from(s[i].is_zero())).collect();
        let proj: Vec<G> = nonzero.iter().map(|&i| self.mul(&s[i])).collect();
        if nonzero.len() == s.len() {
            G::normalize_batch(&proj, o);
        } else {
            let mut aff = vec![G::AffineRepr::identity(); proj.len()];
            G::normalize_batch(&proj, &mut aff);
            o.fill(G::AffineRepr::identity());
            for (k, &i) in nonzero.iter().enumerate() {
                o[i] = aff[k];
            }
        }
    }
}

/// Windows needed for 255-bit scalars: the top window holds fewer than `w` bits, so its
/// signed digit cannot carry further — unless 255 is a multiple of `w`, which needs one more.
fn windows_for(w: usize) -> usize {
    let bits = Scalar::NUM_BITS as usize;
    bits.div_ceil(w) + usize::from(bits % w == 0)
}

/// `width` bits of the little-endian byte string `bytes` starting at bit `bit` (zero past
/// the end).
fn bits_at(bytes: &[u8], bit: usize, width: usize) -> u64 {
    let mut v = 0u64;
    let first = bit / 8;
    for k in 0..4 {
        if let Some(&b) = bytes.get(first + k) {
            v |= (b as u64) << (8 * k);
        }
    }
    (v >> (bit % 8)) & ((1u64 << width) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn edge_scalars(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
        let mut v = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64), Scalar::from(u64::MAX), -Scalar::from(1u64 << 40)];
        v.extend((0..n).map(|_| Scalar::random(&mut *rng)));
        v
    }

    #[test]
    fn g1_batch_matches_plain_scalar_multiplication() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let base = G1Projective::random(&mut rng);
        let scalars = edge_scalars(&mut rng, 300);
        for w in [3, 5, 7, 12, 15] {
            let t = FixedBaseTable::new(base, w);
            let got = t.batch_mul(&scalars);
            for (s, g) in scalars.iter().zip(&got) {
                assert_eq!(*g, (base * s).to_affine(), "window {w}, scalar {s:?}");
            }
        }
    }

    #[test]
    fn g2_batch_matches_plain_scalar_multiplication() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let base = G2Projective::random(&mut rng);
        let scalars = edge_scalars(&mut rng, 100);
        let t = FixedBaseTable::new(base, 8);
        let got = t.batch_mul(&scalars);
        for (s, g) in scalars.iter().zip(&got) {
            assert_eq!(*g, (base * s).to_affine());
        }
    }

    #[test]
    fn window_choice_grows_with_the_batch() {
        assert!(FixedBaseTable::<G1Projective>::window_for(100) <= 8);
        assert_eq!(FixedBaseTable::<G1Projective>::window_for(10_000_000), 20);
        assert_eq!(windows_for(16), 16);
        assert_eq!(windows_for(15), 18);
    }

    #[test]
    fn bit_extraction_reads_across_bytes() {
        let bytes = [0b1010_1100u8, 0b0000_0011, 0xff];
        assert_eq!(bits_at(&bytes, 2, 4), 0b1011);
        assert_eq!(bits_at(&bytes, 6, 4), 0b1110);
        assert_eq!(bits_at(&bytes, 20, 8), 0x0f);
        assert_eq!(bits_at(&bytes, 40, 8), 0);
    }
}
