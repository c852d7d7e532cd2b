//! The two groups as the MSM code sees them: [`MsmPoint`] gives G1 and G2 affine points the
//! single-threaded blst kernels the CPU backend parallelises — Pippenger over a contiguous
//! run of bases with 255-bit little-endian scalars, and the sum of a list of points by
//! batched affine additions (one field inversion per batch, blst's `pXs_add`). The blstrs
//! types are `repr(transparent)` over blst's, which is what makes the pointer casts sound.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::prime::PrimeCurveAffine;

use super::{Backend, Msm};

/// A group element type the backends can multiply in bulk.
pub trait MsmPoint: PrimeCurveAffine<Scalar = blstrs::Scalar> + Send + Sync + 'static {
    /// "G1" or "G2".
    const NAME: &'static str;

    /// `Σ scalars[i] · points[i]` on one thread; `scalars` holds 32 little-endian bytes per
    /// point.
    fn pippenger(points: &[Self], scalars: &[u8]) -> Self::Curve;

    /// One tile of a Pippenger MSM on one thread: `Σ dᵢ · points[i]` where dᵢ is the signed
    /// (Booth-encoded) digit of `scalars[i]` at bits `bit0 .. bit0 + window`, the carry from
    /// the bits below included. Tiles at `bit0 = 0, w, 2w, …, ⌊255/w⌋·w` with one window `w`,
    /// combined as Σ 2^bit0 · tile, make the whole MSM (the top tile, shorter than `w`, takes
    /// the last carry). `scratch` is grown to the buckets' size as needed.
    fn pippenger_tile(points: &[Self], scalars: &[u8], bit0: usize, window: usize, scratch: &mut Vec<u64>) -> Self::Curve;

    /// `Σ *points[i]` on one thread by batched affine additions.
    fn sum_refs(points: &[*const Self]) -> Self::Curve;

    /// `b`'s MSM over this group.
    fn msm_of(b: &dyn Backend) -> &dyn Msm<Self>;

    /// `out[i] = points[i]` in affine form with one field inversion for the whole batch
    /// (blst's; `group`'s default `batch_normalize` inverts once per point).
    fn batch_to_affine(points: &[Self::Curve], out: &mut [Self]);
}

macro_rules! impl_point {
    ($aff:ty, $proj:ty, $name:literal, $blst_aff:ty, $blst_proj:ty, $mult:ident, $tile:ident, $scratch:ident, $add:ident, $to_aff:ident) => {
        impl MsmPoint for $aff {
            const NAME: &'static str = $name;

            fn pippenger(points: &[Self], scalars: &[u8]) -> $proj {
                assert_eq!(points.len() * 32, scalars.len(), "one 32-byte scalar per point");
                let mut out = <$proj as group::Group>::identity();
                if points.is_empty() {
                    return out;
                }
                // A pointer followed by null: blst reads the run contiguously.
                let pts = [points.as_ptr() as *const $blst_aff, std::ptr::null()];
                let scs = [scalars.as_ptr(), std::ptr::null()];
                // SAFETY: the blstrs types are repr(transparent) over the blst ones; blst reads
                // `points.len()` points and scalars from the two runs and writes `out`; the
                // scratch has the size blst asks for (in bytes), in 8-byte limbs.
                unsafe {
                    let bytes = blst::$scratch(points.len());
                    let mut scratch = vec![0u64; bytes.div_ceil(8)];
                    blst::$mult(
                        (&mut out as *mut $proj).cast::<$blst_proj>(),
                        pts.as_ptr(),
                        points.len(),
                        scs.as_ptr(),
                        255,
                        scratch.as_mut_ptr() as *mut blst::limb_t,
                    );
                }
                out
            }

            fn pippenger_tile(points: &[Self], scalars: &[u8], bit0: usize, window: usize, scratch: &mut Vec<u64>) -> $proj {
                assert_eq!(points.len() * 32, scalars.len(), "one 32-byte scalar per point");
                assert!((1..=30).contains(&window) && bit0 <= 255, "window {window} at bit {bit0}");
                let mut out = <$proj as group::Group>::identity();
                if points.is_empty() {
                    return out;
                }
                if points.len() == 1 {
                    // blst's tile kernel reads one point and scalar past a run of one: pad the
                    // run with a zero scalar.
                    let mut padded = scalars.to_vec();
                    padded.resize(64, 0);
                    return Self::pippenger_tile(&[points[0], points[0]], &padded, bit0, window, scratch);
                }
                // blst's buckets for a window of w bits: 2^(w-1) of them, each the size its
                // scratch query reports for a one-bit window.
                // SAFETY: a size query.
                let bucket_bytes = unsafe { blst::$scratch(0) };
                let words = (bucket_bytes << (window - 1)).div_ceil(8);
                if scratch.len() < words {
                    scratch.resize(words, 0);
                }
                let pts = [points.as_ptr() as *const $blst_aff, std::ptr::null()];
                let scs = [scalars.as_ptr(), std::ptr::null()];
                // SAFETY: as in `pippenger`; the scratch holds the 2^(window-1) buckets blst
                // uses for one tile of at most `window` bits.
                unsafe {
                    blst::$tile(
                        (&mut out as *mut $proj).cast::<$blst_proj>(),
                        pts.as_ptr(),
                        points.len(),
                        scs.as_ptr(),
                        255,
                        scratch.as_mut_ptr() as *mut blst::limb_t,
                        bit0,
                        window,
                    );
                }
                out
            }

            fn msm_of(b: &dyn Backend) -> &dyn Msm<Self> {
                b
            }

            fn batch_to_affine(points: &[$proj], out: &mut [Self]) {
                assert_eq!(points.len(), out.len(), "one output per point");
                if points.is_empty() {
                    return;
                }
                // A pointer followed by null: blst reads the points contiguously.
                let pts = [points.as_ptr() as *const $blst_proj, std::ptr::null()];
                // SAFETY: repr(transparent) types; blst reads points.len() points and writes as
                // many affine points into `out`.
                unsafe { blst::$to_aff(out.as_mut_ptr() as *mut $blst_aff, pts.as_ptr(), points.len()) }
            }

            fn sum_refs(points: &[*const Self]) -> $proj {
                let mut out = <$proj as group::Group>::identity();
                if points.is_empty() {
                    return out;
                }
                // SAFETY: every pointer is non-null and points at a live point (the callers
                // take them from slices they borrow); blst copies them into its own scratch.
                unsafe {
                    blst::$add((&mut out as *mut $proj).cast::<$blst_proj>(), points.as_ptr() as *const *const $blst_aff, points.len());
                }
                out
            }
        }
    };
}

impl_point!(
    G1Affine,
    G1Projective,
    "G1",
    blst::blst_p1_affine,
    blst::blst_p1,
    blst_p1s_mult_pippenger,
    blst_p1s_tile_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p1s_add,
    blst_p1s_to_affine
);
impl_point!(
    G2Affine,
    G2Projective,
    "G2",
    blst::blst_p2_affine,
    blst::blst_p2,
    blst_p2s_mult_pippenger,
    blst_p2s_tile_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof,
    blst_p2s_add,
    blst_p2s_to_affine
);
