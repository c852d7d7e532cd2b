//! The backend seam: small traits with one job each — [`Msm`] (variable-base multi-scalar
//! multiplication over G1 or G2, with the 0/1-scalar split) and [`Ntt`] (number-theoretic
//! transforms over the BLS12-381 scalar field, and the quotient schedule built from them) —
//! plus [`MatVec`] (the constraint matrices times the witness), bundled as [`Backend`]. The
//! CPU implementation ([`cpu::CpuBackend`]) is always compiled; `cuzk-gpu` plugs its CUDA
//! implementation in behind the same traits, [`conformance`] is the one test suite every
//! implementation must pass, [`points`] makes the random bases that suite and the scaling runs
//! use, and [`fault`] injects failures for drills. It depends on nothing else of this crate:
//! the prover's assembly (`groth16`), parameter files and random parameters build on it, not
//! the other way round, and it knows no circuit, proof kind or device API.

/// Implements [`Msm`] (G1 and G2), [`Ntt`] and [`MatVec`] for a wrapper type by passing every
/// call to the backend that `$inner` (a method of the wrapper) returns; exported for wrappers
/// in other crates (test doubles that override only [`Backend`]'s own methods).
#[macro_export]
macro_rules! backend_pass_through {
    ($t:ty, $inner:ident) => {
        $crate::backend_pass_through!(@msm $t, $inner, $crate::G1Affine);
        $crate::backend_pass_through!(@msm $t, $inner, $crate::G2Affine);
        $crate::backend_pass_through!(@ntt_matvec $t, $inner);
    };
    // Ntt and MatVec alone, for a wrapper with MSMs of its own.
    (@ntt_matvec $t:ty, $inner:ident) => {
        impl $crate::backend::Ntt for $t {
            fn ntt(&self, data: &mut [$crate::Scalar], kind: $crate::backend::NttKind) -> $crate::backend::BackendResult<()> {
                self.$inner().ntt(data, kind)
            }
            fn quotient(
                &self,
                a: Vec<$crate::Scalar>,
                b: Vec<$crate::Scalar>,
                c: Vec<$crate::Scalar>,
            ) -> $crate::backend::BackendResult<Vec<$crate::Scalar>> {
                self.$inner().quotient(a, b, c)
            }
        }
        impl $crate::backend::MatVec for $t {
            fn mat_vec(
                &self,
                m: &$crate::backend::Matrices,
                inputs: &[$crate::Scalar],
                aux: &[$crate::Scalar],
            ) -> $crate::backend::BackendResult<$crate::backend::Evaluations> {
                self.$inner().mat_vec(m, inputs, aux)
            }
        }
    };
    (@msm $t:ty, $inner:ident, $p:ty) => {
        impl $crate::backend::Msm<$p> for $t {
            fn msm(&self, bases: &[$p], scalars: &[$crate::Scalar]) -> $crate::backend::BackendResult<<$p as $crate::group::prime::PrimeCurveAffine>::Curve> {
                <$p as $crate::backend::MsmPoint>::msm_of(self.$inner()).msm(bases, scalars)
            }
            fn sum_selected(&self, bases: &[$p], indices: &[u32]) -> $crate::backend::BackendResult<<$p as $crate::group::prime::PrimeCurveAffine>::Curve> {
                <$p as $crate::backend::MsmPoint>::msm_of(self.$inner()).sum_selected(bases, indices)
            }
            fn msm_split(&self, bases: &[$p], scalars: &[$crate::Scalar]) -> $crate::backend::BackendResult<<$p as $crate::group::prime::PrimeCurveAffine>::Curve> {
                <$p as $crate::backend::MsmPoint>::msm_of(self.$inner()).msm_split(bases, scalars)
            }
            fn msm_of_device_witness(
                &self,
                bases: &[$p],
                witness: &$crate::backend::DeviceWitness,
                density: Option<&[u64]>,
                mode: $crate::backend::MsmMode,
            ) -> Option<$crate::backend::BackendResult<<$p as $crate::group::prime::PrimeCurveAffine>::Curve>> {
                <$p as $crate::backend::MsmPoint>::msm_of(self.$inner()).msm_of_device_witness(bases, witness, density, mode)
            }
        }
    };
}

pub mod conformance;
pub mod cpu;
pub mod curve;
pub mod fault;
pub mod ntt;
pub mod points;
pub mod schedule;
pub mod sparse;

use blstrs::{G1Affine, G2Affine, Scalar};
use ff::Field;

pub use curve::MsmPoint;
pub use sparse::{Evaluations, MatVec, Matrices};

/// Errors a backend reports; CUDA failures arrive here as values, never as aborts.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Inputs that no backend could accept (mismatched lengths, a non-power-of-two domain).
    #[error("invalid backend input: {0}")]
    Input(String),
    /// The backend is not available here (no device, or built without it).
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    /// The device failed while working.
    #[error("device error: {0}")]
    Device(String),
}

/// Result of a backend call.
pub type BackendResult<T> = std::result::Result<T, BackendError>;

/// The direction and domain of one transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NttKind {
    /// Coefficients to evaluations on the subgroup of size n.
    Forward,
    /// Evaluations on the subgroup back to coefficients.
    Inverse,
    /// Coefficients to evaluations on the coset g·H (g = the field's multiplicative generator,
    /// as bellperson's evaluation domain uses).
    CosetForward,
    /// Evaluations on the coset g·H back to coefficients.
    CosetInverse,
}

/// The scalars of one MSM sorted by value class: most witness values are 0 or 1.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScalarSplit {
    /// Indices whose scalar is exactly 1 (their bases are simply added).
    pub ones: Vec<u32>,
    /// Indices of the other non-zero scalars.
    pub general: Vec<u32>,
    /// Number of zero scalars (skipped).
    pub zeros: usize,
}

impl ScalarSplit {
    /// Classifies `scalars`.
    pub fn of(scalars: &[Scalar]) -> Self {
        crate::reserved_pool::parallel(|| Self::of_here(scalars))
    }

    fn of_here(scalars: &[Scalar]) -> Self {
        use rayon::prelude::*;
        const BLOCK: usize = 1 << 16;
        let parts: Vec<ScalarSplit> = scalars
            .par_chunks(BLOCK)
            .enumerate()
            .map(|(b, chunk)| {
                let mut s = ScalarSplit::default();
                for (k, x) in chunk.iter().enumerate() {
                    let i = (b * BLOCK + k) as u32;
                    if bool::from(x.is_zero()) {
                        s.zeros += 1;
                    } else if *x == Scalar::ONE {
                        s.ones.push(i);
                    } else {
                        s.general.push(i);
                    }
                }
                s
            })
            .collect();
        let mut out = ScalarSplit {
            ones: Vec::with_capacity(parts.iter().map(|p| p.ones.len()).sum()),
            general: Vec::with_capacity(parts.iter().map(|p| p.general.len()).sum()),
            zeros: 0,
        };
        for p in parts {
            out.ones.extend_from_slice(&p.ones);
            out.general.extend_from_slice(&p.general);
            out.zeros += p.zeros;
        }
        out
    }
}

/// The 0/1 split in the form a device consumes, made in one parallel pass over the scalars:
/// a bitmap of the scalars equal to 1 (bit i of 32-bit word i/32) and the ascending indices
/// of the scalars that are neither 0 nor 1. Each block of the pass owns its own bitmap words,
/// so no index list of the ones is ever built.
pub fn ones_bitmap_split(scalars: &[Scalar]) -> (Vec<u32>, Vec<u32>) {
    crate::reserved_pool::parallel(|| ones_bitmap_split_here(scalars))
}

fn ones_bitmap_split_here(scalars: &[Scalar]) -> (Vec<u32>, Vec<u32>) {
    use rayon::prelude::*;
    const BLOCK: usize = 1 << 16; // a multiple of 32
    let mut map = vec![0u32; scalars.len().div_ceil(32)];
    let general: Vec<Vec<u32>> = scalars
        .par_chunks(BLOCK)
        .zip(map.par_chunks_mut(BLOCK / 32))
        .enumerate()
        .map(|(b, (chunk, words))| {
            let mut general = Vec::new();
            for (k, x) in chunk.iter().enumerate() {
                if *x == Scalar::ONE {
                    words[k / 32] |= 1 << (k % 32);
                } else if !bool::from(x.is_zero()) {
                    general.push((b * BLOCK + k) as u32);
                }
            }
            general
        })
        .collect();
    (map, general.concat())
}

/// How the aux MSMs are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub enum MsmMode {
    /// Sum of the bases whose scalar is 1, plus a general MSM over the rest.
    #[default]
    Split,
    /// One general MSM over every selected scalar.
    Plain,
    /// Split when at most a third of the scalars are general (neither 0 nor 1), else plain:
    /// a split pays when it removes most of the MSM (PoRep's bit-heavy aux, ~2 % general),
    /// but over mostly general scalars (Poseidon-heavy PoSt) it only adds the gather of the
    /// general bases and, on a device, their upload beside the resident copy.
    Auto,
}

/// The most scalars [`MsmMode::resolve`] looks at.
pub const AUTO_SAMPLE: usize = 4096;

impl MsmMode {
    /// The mode an MSM over `scalars` runs in: [`MsmMode::Auto`] resolved by counting the
    /// general ones among [`AUTO_SAMPLE`] scalars drawn along a Weyl sequence (every scalar
    /// when there are fewer). The choice never changes the result, only its cost, so a
    /// sample decides it without another pass over a 32 GiB partition's 4 GiB of aux; the
    /// irrational stride keeps it from locking onto a circuit's periodic layout, as evenly
    /// spaced picks could.
    pub fn resolve(self, scalars: &[Scalar]) -> MsmMode {
        let is_general = |s: &Scalar| !(bool::from(s.is_zero()) || *s == Scalar::ONE);
        match self {
            MsmMode::Auto => {
                let n = scalars.len();
                let (seen, general) = if n <= AUTO_SAMPLE {
                    (n, scalars.iter().filter(|s| is_general(s)).count())
                } else {
                    // k·φ·2^64 mod 2^64, scaled to [0, n).
                    let pick = |k: usize| (((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as u128 * n as u128) >> 64) as usize;
                    (AUTO_SAMPLE, (0..AUTO_SAMPLE).filter(|&k| is_general(&scalars[pick(k)])).count())
                };
                if general * 3 <= seen {
                    MsmMode::Split
                } else {
                    MsmMode::Plain
                }
            }
            m => m,
        }
    }
}

/// The witness of one proof (its inputs, then its aux) as a device backend keeps it after
/// the H step's upload, handed by [`Backend::matvec_quotient_msm_h`] to the prover's other
/// MSMs so that they select, split and gather their scalars where the witness already is
/// ([`Msm::msm_of_device_witness`]). Opaque here: only the backend that made it reads it.
/// Its device memory is freed when the last clone is dropped.
#[derive(Clone)]
pub struct DeviceWitness(std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl DeviceWitness {
    /// Wraps a backend's own handle.
    pub fn new<T: std::any::Any + Send + Sync>(handle: T) -> Self {
        DeviceWitness(std::sync::Arc::new(handle))
    }

    /// The backend's handle, if this witness is of type `T` (made by that backend).
    pub fn handle<T: std::any::Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for DeviceWitness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceWitness")
    }
}

/// Variable-base MSM over one group.
pub trait Msm<P: MsmPoint>: Send + Sync {
    /// `Σ scalars[i] · bases[i]`; the two slices have equal length.
    fn msm(&self, bases: &[P], scalars: &[Scalar]) -> BackendResult<P::Curve>;

    /// `Σ bases[i]` over the given indices (the bitmap-selected sum for scalars equal to 1).
    fn sum_selected(&self, bases: &[P], indices: &[u32]) -> BackendResult<P::Curve>;

    /// The same value as [`Msm::msm`], computed as a sum of the bases whose scalar is 1 plus a
    /// general MSM over the scalars that are neither 0 nor 1.
    fn msm_split(&self, bases: &[P], scalars: &[Scalar]) -> BackendResult<P::Curve> {
        check_lengths(bases.len(), scalars.len())?;
        let split = ScalarSplit::of(scalars);
        let ones = self.sum_selected(bases, &split.ones)?;
        if split.general.is_empty() {
            return Ok(ones);
        }
        let (gb, gs) = gather(bases, scalars, &split.general);
        Ok(ones + self.msm(&gb, &gs)?)
    }

    /// The MSM whose scalars are the aux values of `witness` picked by `density` (bit i: aux
    /// i; every aux value when `None`), in `mode`, computed where the witness is: the device
    /// selects, splits and gathers, the host walks nothing. `None` when this backend cannot
    /// (a witness it did not make, bases it does not keep): the prover then selects and
    /// splits on the host, as before. The default is `None`.
    fn msm_of_device_witness(
        &self,
        _bases: &[P],
        _witness: &DeviceWitness,
        _density: Option<&[u64]>,
        _mode: MsmMode,
    ) -> Option<BackendResult<P::Curve>> {
        None
    }
}

/// Transforms over the scalar field, and the Groth16 quotient built from them.
pub trait Ntt: Send + Sync {
    /// Transforms `data` in place; its length must be a power of two.
    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> BackendResult<()>;

    /// The coefficients of H = (A·B − C)/Z from the evaluations a, b, c of one circuit on the
    /// domain (each zero-padded to the domain size n, a power of two): inverse, coset forward,
    /// pointwise (a·b − c)/(gⁿ − 1), coset inverse. Returns n − 1 coefficients (the top one is
    /// zero for a satisfied circuit), as bellperson's prover does. Backends with device memory
    /// override this to keep the vectors resident between steps.
    fn quotient(&self, mut a: Vec<Scalar>, mut b: Vec<Scalar>, mut c: Vec<Scalar>) -> BackendResult<Vec<Scalar>> {
        let n = domain_size(a.len().max(b.len()).max(c.len()))?;
        for v in [&mut a, &mut b, &mut c] {
            v.resize(n, Scalar::ZERO);
        }
        for v in [&mut a, &mut b, &mut c] {
            self.ntt(v, NttKind::Inverse)?;
            self.ntt(v, NttKind::CosetForward)?;
        }
        ntt::pointwise_quotient(&mut a, &b, &c);
        drop((b, c));
        self.ntt(&mut a, NttKind::CosetInverse)?;
        a.truncate(n - 1);
        Ok(a)
    }
}

/// A device backend's resident copies (SRS sections, matrices) at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResidentReport {
    /// Sections resident now.
    pub sections: usize,
    /// Device bytes they hold.
    pub bytes: u64,
    /// The cap on those bytes (`None`: the whole device; copies are then dropped only when
    /// an upload fails for want of memory).
    pub budget_bytes: Option<u64>,
    /// Sections dropped so far to make room for others (least recently used first).
    pub evictions: u64,
    /// Sections too large for the budget, so their bases travelled with each call instead.
    pub streamed: u64,
    /// Circuits whose constraint matrices (for the device mat-vec) are resident now.
    pub matrices: usize,
    /// Device bytes those matrices hold (outside the budget above).
    pub matrix_bytes: u64,
    /// Host bytes the backend keeps pinned for its uploads (staging buffers reused from call
    /// to call): host memory outside the engine's budget, as static as the parameters once
    /// the first proofs have run.
    pub pinned_host_bytes: u64,
}

/// Everything the prover needs from a backend.
pub trait Backend: Msm<G1Affine> + Msm<G2Affine> + Ntt + MatVec {
    /// Short name for logs and reports ("cpu", "cuda").
    fn name(&self) -> &str;

    /// Whether the prover should run the H step (mat-vec, quotient, H MSM) on its own thread
    /// beside the other four MSMs. Worth it when the H step is device time and the others
    /// begin with host work (density selection, the ones/general split): that host work then
    /// hides behind the device's H MSM. Off by default: on the CPU both sides compete for the
    /// same cores.
    fn overlap_h(&self) -> bool {
        false
    }

    /// Whether, with the mat-vec on this backend, a partition's prover vectors — a, b, c, the
    /// quotient H and the side MSMs' selected and split scalars — live in this backend's own
    /// memory, so that the host holds nothing for the prover beyond the witness. The memory
    /// budget then charges a partition its witness alone. False by default (the host makes
    /// them); a device backend answers true only where no MSM can fall back to the host's
    /// selection and split in normal operation (a retry on the CPU after a device failure
    /// still allocates them, outside the budget).
    fn keeps_prover_vectors(&self) -> bool {
        false
    }

    /// What this backend keeps in device memory between calls (nothing, on the CPU).
    fn resident_report(&self) -> ResidentReport {
        ResidentReport::default()
    }

    /// Whether this backend holds its own copy of these matrices (by [`Matrices::identity`])
    /// and can evaluate them with the host's entries released. The CPU holds none.
    fn holds_matrices(&self, _m: &Matrices) -> bool {
        false
    }

    /// Drops the device copies of these host bases — the sections of parameters the host is
    /// evicting — and returns the device bytes freed now (a copy a running call holds is freed
    /// when that call ends). The CPU keeps no copies.
    fn forget_bases(&self, _g1: &[&[G1Affine]], _g2: &[&[G2Affine]]) -> u64 {
        0
    }

    /// `Σ h[i]·h_bases[i]` for the quotient `h` of a, b, c, with the time the quotient took.
    /// A device backend overrides this to keep `h` in device memory between the two steps.
    fn quotient_msm_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        h_bases: &[G1Affine],
    ) -> BackendResult<(blstrs::G1Projective, std::time::Duration)> {
        quotient_then_msm_h(self, a, b, c, h_bases)
    }

    /// [`Backend::quotient_msm_h`] starting from the witness: a, b, c are evaluated by this
    /// backend's [`MatVec`] first. Returns the H MSM, the mat-vec's time and the quotient's.
    /// A device backend overrides this so that only the witness travels and a, b, c are made
    /// where the quotient needs them. `witness_sent` is called (at most once) when the witness
    /// no longer needs the host — a device backend: after its upload; this default: first — so
    /// that the prover starts its memory-heavy side work (the L, A, B selections and splits)
    /// then instead of competing with the witness copy. A device backend passes the witness it
    /// keeps on the device ([`DeviceWitness`]) for those MSMs to read instead; this default
    /// passes `None`.
    fn matvec_quotient_msm_h(
        &self,
        m: &Matrices,
        inputs: &[Scalar],
        aux: &[Scalar],
        h_bases: &[G1Affine],
        witness_sent: &dyn Fn(Option<DeviceWitness>),
    ) -> BackendResult<(blstrs::G1Projective, std::time::Duration, std::time::Duration)> {
        witness_sent(None);
        let t = std::time::Instant::now();
        let e = self.mat_vec(m, inputs, aux)?;
        let mv = t.elapsed();
        let (h, q) = self.quotient_msm_h(e.a, e.b, e.c, h_bases)?;
        Ok((h, mv, q))
    }
}

/// The two-step quotient + H MSM (H through host memory), with the quotient's time: the
/// default of [`Backend::quotient_msm_h`] and a device backend's fallback for small inputs.
pub fn quotient_then_msm_h<B: Backend + ?Sized>(
    backend: &B,
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
    h_bases: &[G1Affine],
) -> BackendResult<(blstrs::G1Projective, std::time::Duration)> {
    let t = std::time::Instant::now();
    let h = backend.quotient(a, b, c)?;
    let q = t.elapsed();
    Ok((Msm::<G1Affine>::msm(backend, h_bases, &h)?, q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_bitmap_split_agrees_with_the_index_split() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for n in [0usize, 1, 31, 32, 33, (1 << 16) + 77, 3 << 16] {
            let s = conformance::edge_scalars(&mut rng, n);
            let (map, general) = ones_bitmap_split(&s);
            let want = ScalarSplit::of(&s);
            assert_eq!(map.len(), n.div_ceil(32));
            let ones: Vec<u32> = (0..n as u32).filter(|&i| map[i as usize / 32] >> (i % 32) & 1 == 1).collect();
            assert_eq!(ones, want.ones, "n {n}: ones");
            assert_eq!(general, want.general, "n {n}: general");
        }
    }
}

/// The smallest power of two holding `len` values (at least 1), or an error past 2^32.
pub fn domain_size(len: usize) -> BackendResult<usize> {
    let n = len.max(1).next_power_of_two();
    if n.trailing_zeros() > ntt::MAX_LOG_N {
        return Err(BackendError::Input(format!("domain of {len} values exceeds 2^{}", ntt::MAX_LOG_N)));
    }
    Ok(n)
}

/// The bases and scalars at `indices` (the general part of a split MSM).
pub fn gather<P: Copy + Send + Sync>(bases: &[P], scalars: &[Scalar], indices: &[u32]) -> (Vec<P>, Vec<Scalar>) {
    use rayon::prelude::*;
    crate::reserved_pool::parallel(|| indices.par_iter().map(|&i| (bases[i as usize], scalars[i as usize])).unzip())
}

/// The piece sizes (log2 of the points per piece) a backend may run MSMs over resident bases
/// in: from 2^16 (smaller pieces cost more in per-call overhead than they save in waiting)
/// to 2^40 (past any MSM).
pub const MSM_PIECE_LOG2: std::ops::RangeInclusive<u32> = 16..=40;

/// An MSM piece setting as configurations and command lines take it: 0 (one call per MSM:
/// `None`) or a log2 in [`MSM_PIECE_LOG2`]; anything else is refused with the reason.
pub fn msm_piece_setting(k: u32) -> Result<Option<u32>, String> {
    match k {
        0 => Ok(None),
        k if MSM_PIECE_LOG2.contains(&k) => Ok(Some(k)),
        k => Err(format!("{k} is not 0 (one call per MSM) or {}..={}", MSM_PIECE_LOG2.start(), MSM_PIECE_LOG2.end())),
    }
}

/// Checks that an MSM has as many scalars as bases ([`BackendError::Input`] otherwise).
pub fn check_lengths(bases: usize, scalars: usize) -> BackendResult<()> {
    if bases != scalars {
        return Err(BackendError::Input(format!("MSM over {bases} bases and {scalars} scalars")));
    }
    Ok(())
}

/// The identity of `P`'s group.
pub fn identity<P: MsmPoint>() -> P::Curve {
    <P::Curve as group::Group>::identity()
}

/// One row of a backend scaling run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ScalingRow {
    /// The operation timed (`msm g1`, `msm g2 (n/4)`, `ntt`, `coset intt`).
    pub op: String,
    /// The size of the run as a power of two.
    pub log_n: u32,
    /// Wall time of the one call in seconds.
    pub seconds: f64,
}

/// Times G1 MSM (random scalars), G2 MSM (at 1/4 size) and forward / coset NTT for sizes
/// 2^min_log ..= 2^max_log. Bases are random multiples of the generators made by additions
/// ([`points::random_points`]), not sampled one by one.
pub fn scaling(backend: &dyn Backend, min_log: u32, max_log: u32) -> BackendResult<Vec<ScalingRow>> {
    use rayon::prelude::*;
    use std::time::Instant;
    let max = 1usize << max_log;
    let g1: Vec<G1Affine> = points::random_points(max, 7);
    let g2: Vec<G2Affine> = points::random_points((max / 4).max(1), 3);
    let scalars: Vec<Scalar> = (0..max as u64)
        .into_par_iter()
        .map(|i| Scalar::from(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1).pow_vartime([0x1234_5678_9abc_def1]))
        .collect();
    let mut rows = Vec::new();
    for log_n in min_log..=max_log {
        let n = 1usize << log_n;
        let t = Instant::now();
        Msm::<G1Affine>::msm(backend, &g1[..n], &scalars[..n])?;
        rows.push(ScalingRow { op: "msm g1".into(), log_n, seconds: t.elapsed().as_secs_f64() });
        let m = (n / 4).max(1);
        let t = Instant::now();
        Msm::<G2Affine>::msm(backend, &g2[..m], &scalars[..m])?;
        rows.push(ScalingRow { op: "msm g2 (n/4)".into(), log_n, seconds: t.elapsed().as_secs_f64() });
        let mut v = scalars[..n].to_vec();
        let t = Instant::now();
        backend.ntt(&mut v, NttKind::Forward)?;
        rows.push(ScalingRow { op: "ntt".into(), log_n, seconds: t.elapsed().as_secs_f64() });
        let t = Instant::now();
        backend.ntt(&mut v, NttKind::CosetInverse)?;
        rows.push(ScalingRow { op: "coset intt".into(), log_n, seconds: t.elapsed().as_secs_f64() });
        tracing::info!(log_n, "scaling step done");
    }
    Ok(rows)
}
