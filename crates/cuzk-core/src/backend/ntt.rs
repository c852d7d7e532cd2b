//! The CPU number-theoretic transform over the BLS12-381 scalar field: iterative radix-2
//! (bit-reversal, then butterflies), the first stages done block by block inside the cache and
//! the later ones split across threads within each butterfly group, all with rayon. One table
//! of ω^j (j < n/2) per domain size serves both directions (the inverse is the forward
//! transform read at indices −k, then scaled by 1/n); the stages past the cache block go two at
//! a time (radix 4) to halve the passes over memory. Domains and
//! the coset follow bellperson's evaluation domain exactly: ω = ROOT_OF_UNITY squared down to
//! order n, coset generator = the field's multiplicative generator.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::{BackendError, BackendResult, NttKind};

/// The largest supported domain, 2^S (the 2-adicity of the scalar field).
pub const MAX_LOG_N: u32 = Scalar::S;

/// Stages up to this block size run inside one block per task.
const BLOCK_LOG: u32 = 14;
/// Butterflies per task in the later stages.
const SPAN: usize = 1 << 12;

/// The powers of ω for one domain size.
#[derive(Debug)]
pub struct Domain {
    /// The domain has 2^log_n elements.
    pub log_n: u32,
    /// A primitive 2^log_n-th root of unity, the domain's generator.
    pub omega: Scalar,
    /// ω^j for j in 0..n/2.
    pub twiddles: Vec<Scalar>,
    /// Contiguous twiddles of the in-block stages: `[L/2 + j] = ω_L^j` for each stage length
    /// L up to the block size (strided reads of `twiddles` there miss the TLB on every block).
    pub stage_twiddles: Vec<Scalar>,
}

impl Domain {
    /// The domain of size 2^log_n.
    pub fn new(log_n: u32) -> BackendResult<Self> {
        if log_n > MAX_LOG_N {
            return Err(BackendError::Input(format!("NTT of size 2^{log_n} exceeds 2^{MAX_LOG_N}")));
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..Scalar::S {
            omega = omega.square();
        }
        let half = (1usize << log_n) / 2;
        let twiddles = powers(omega, Scalar::ONE, half);
        let n = 1usize << log_n;
        let blk = n.min(1 << BLOCK_LOG);
        let mut stage_twiddles = vec![Scalar::ONE; blk.max(1)];
        let mut len = 2;
        while len <= blk {
            for j in 0..len / 2 {
                stage_twiddles[len / 2 + j] = twiddles[j * (n / len)];
            }
            len *= 2;
        }
        Ok(Domain { log_n, omega, twiddles, stage_twiddles })
    }

    /// The number of elements, 2^log_n.
    pub fn size(&self) -> usize {
        1 << self.log_n
    }
}

/// `start · x^i` for i in 0..len, computed in parallel blocks.
pub fn powers(x: Scalar, start: Scalar, len: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    const B: usize = 1 << 14;
    out.par_chunks_mut(B).enumerate().for_each(|(k, chunk)| {
        let mut cur = start * x.pow_vartime([(k * B) as u64]);
        for slot in chunk {
            *slot = cur;
            cur *= x;
        }
    });
    out
}

/// Multiplies `data[i]` by `scale · x^i` in parallel.
pub fn distribute_powers(data: &mut [Scalar], x: Scalar, scale: Scalar) {
    const B: usize = 1 << 14;
    data.par_chunks_mut(B).enumerate().for_each(|(k, chunk)| {
        let mut cur = scale * x.pow_vartime([(k * B) as u64]);
        for v in chunk {
            *v *= cur;
            cur *= x;
        }
    });
}

/// `a[i] = (a[i]·b[i] − c[i]) / (gⁿ − 1)`: the division by Z on the coset, where Z is
/// constant.
pub fn pointwise_quotient(a: &mut [Scalar], b: &[Scalar], c: &[Scalar]) {
    let n = a.len() as u64;
    let z = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([n]) - Scalar::ONE;
    let zinv = z.invert().expect("gⁿ ≠ 1 for a generator of the full multiplicative group");
    a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).for_each(|((x, y), z)| {
        *x = (*x * y - z) * zinv;
    });
}

/// The domains already built, by log size.
#[derive(Debug, Default)]
pub struct DomainCache {
    map: Mutex<HashMap<u32, Arc<Domain>>>,
}

impl DomainCache {
    /// The domain of size 2^log_n, built on the first request and shared afterwards; an error past [`MAX_LOG_N`].
    pub fn get(&self, log_n: u32) -> BackendResult<Arc<Domain>> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = map.get(&log_n) {
            return Ok(d.clone());
        }
        let d = Arc::new(Domain::new(log_n)?);
        map.insert(log_n, d.clone());
        Ok(d)
    }
}

/// One transform of `data` in place with the domains of `cache`.
pub fn transform(cache: &DomainCache, data: &mut [Scalar], kind: NttKind) -> BackendResult<()> {
    let n = data.len();
    if !n.is_power_of_two() {
        return Err(BackendError::Input(format!("NTT length {n} is not a power of two")));
    }
    let log_n = n.trailing_zeros();
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let domain = cache.get(log_n)?;
    match kind {
        NttKind::Forward => butterflies(data, &domain),
        NttKind::CosetForward => {
            distribute_powers(data, g, Scalar::ONE);
            butterflies(data, &domain);
        }
        NttKind::Inverse | NttKind::CosetInverse => {
            butterflies(data, &domain);
            negate_indices(data);
            let ninv = Scalar::from(n as u64).invert().unwrap();
            if kind == NttKind::Inverse {
                data.par_iter_mut().for_each(|v| *v *= ninv);
            } else {
                distribute_powers(data, g.invert().unwrap(), ninv);
            }
        }
    }
    Ok(())
}

/// The quotient of [`super::Ntt::quotient`] in six transforms instead of seven, with the
/// scalings fused. Every step is linear, so with z = gⁿ − 1
/// `icoset((A_c·B_c − C_c)/z) = icoset(A_c·B_c)/z − C/z`, where `icoset(C_c) = C` because C
/// has degree < n: C's coefficients are needed, its coset evaluations are not. The result is
/// the same vector as the seven-transform schedule (bellperson's) for any a, b, c. Each of a
/// and b goes through an unscaled inverse transform, one pass multiplying by n⁻¹·gⁱ, and the
/// forward transform; c through the inverse transform scaled by n⁻¹·z⁻¹.
pub fn quotient(cache: &DomainCache, mut a: Vec<Scalar>, mut b: Vec<Scalar>, mut c: Vec<Scalar>) -> BackendResult<Vec<Scalar>> {
    let n = super::domain_size(a.len().max(b.len()).max(c.len()))?;
    let domain = cache.get(n.trailing_zeros())?;
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let ginv = g.invert().unwrap();
    let ninv = Scalar::from(n as u64).invert().unwrap();
    let zinv = (g.pow_vartime([n as u64]) - Scalar::ONE).invert().expect("gⁿ ≠ 1 for a generator of the full multiplicative group");
    for v in [&mut a, &mut b] {
        v.resize(n, Scalar::ZERO);
        butterflies(v, &domain);
        negate_indices(v);
        distribute_powers(v, g, ninv);
        butterflies(v, &domain);
    }
    a.par_iter_mut().zip(b.par_iter()).for_each(|(x, y)| *x *= y);
    drop(b);
    c.resize(n, Scalar::ZERO);
    butterflies(&mut c, &domain);
    negate_indices(&mut c);
    butterflies(&mut a, &domain);
    negate_indices(&mut a);
    // a ← icoset(a)/z, c ← C/z, h = a − c, fused into one pass.
    let scale = ninv * zinv;
    const B: usize = 1 << 14;
    a.par_chunks_mut(B).zip(c.par_chunks(B)).enumerate().for_each(|(k, (ac, cc))| {
        let mut cur = scale * ginv.pow_vartime([(k * B) as u64]);
        for (x, y) in ac.iter_mut().zip(cc) {
            *x = *x * cur - *y * scale;
            cur *= ginv;
        }
    });
    a.truncate(n - 1);
    Ok(a)
}

#[derive(Clone, Copy)]
struct SharedPtr(*mut Scalar);
// SAFETY: used only to swap disjoint index pairs (i, rev(i)) from different tasks.
unsafe impl Send for SharedPtr {}
unsafe impl Sync for SharedPtr {}

fn bit_reverse(data: &mut [Scalar]) {
    let n = data.len();
    let log_n = n.trailing_zeros();
    if log_n == 0 {
        return;
    }
    let p = SharedPtr(data.as_mut_ptr());
    (0..n).into_par_iter().with_min_len(1 << 12).for_each(move |i| {
        let j = i.reverse_bits() >> (usize::BITS - log_n);
        if i < j {
            let p = p;
            // SAFETY: i < j < n, and each pair {i, j} is swapped by exactly one index (the
            // smaller), so no two tasks touch the same element.
            unsafe { std::ptr::swap(p.0.add(i), p.0.add(j)) };
        }
    });
}

/// One radix-2 group: `lo[k], hi[k]` with twiddle `w[k]`; `w[0]` must be 1 when `skip_first`.
#[inline(always)]
fn group(lo: &mut [Scalar], hi: &mut [Scalar], w: &[Scalar], skip_first: bool) {
    let mut k0 = 0;
    if skip_first {
        // ω^0 = 1: no multiplication.
        let t = hi[0];
        hi[0] = lo[0] - t;
        lo[0] += t;
        k0 = 1;
    }
    for ((u, v), w) in lo.iter_mut().zip(hi.iter_mut()).zip(w).skip(k0) {
        let t = *v * w;
        *v = *u - t;
        *u += t;
    }
}

/// Two DIT stages at once (lengths `len` and `2·len`) over one group of `2·len` values,
/// restricted to `q0.len()` offsets starting at `first`; `t2[k] = ω_{2·len}^k`.
#[inline(always)]
fn group4(q: [&mut [Scalar]; 4], t2: &[Scalar], first: usize, half: usize) {
    let [q0, q1, q2, q3] = q;
    let wa = &t2[first..first + q0.len()];
    let wb = &t2[first + half..first + half + q0.len()];
    let w1 = &t2[2 * first..];
    for k in 0..q0.len() {
        let w = w1[2 * k];
        let (t1, t3) = (q1[k] * w, q3[k] * w);
        let (b0, b1, b2, b3) = (q0[k] + t1, q0[k] - t1, q2[k] + t3, q2[k] - t3);
        let ta = b2 * wa[k];
        let tb = b3 * wb[k];
        q0[k] = b0 + ta;
        q2[k] = b0 - ta;
        q1[k] = b1 + tb;
        q3[k] = b1 - tb;
    }
}

/// `ω_len^k` for k in 0..count, contiguous (borrowed from the table when it already is).
fn stage_table(tw: &[Scalar], n: usize, len: usize, count: usize) -> std::borrow::Cow<'_, [Scalar]> {
    let step = n / len;
    if step == 1 {
        std::borrow::Cow::Borrowed(&tw[..count])
    } else {
        std::borrow::Cow::Owned((0..count).into_par_iter().with_min_len(1 << 12).map(|k| tw[k * step]).collect())
    }
}

/// Bit-reversal followed by all log n DIT butterfly stages with ω: the forward transform, in
/// natural order, unscaled.
fn butterflies(data: &mut [Scalar], d: &Domain) {
    let n = data.len();
    if n <= 1 {
        return;
    }
    bit_reverse(data);
    let tw = &d.twiddles;
    let blk = n.min(1 << BLOCK_LOG);
    let st = &d.stage_twiddles;
    data.par_chunks_mut(blk).for_each(|block| {
        let mut len = 2;
        while len <= blk {
            let half = len / 2;
            let w = &st[half..len];
            for g in block.chunks_mut(len) {
                let (lo, hi) = g.split_at_mut(half);
                group(lo, hi, w, true);
            }
            len *= 2;
        }
    });
    // The stages past the block size stream the whole vector: take them two at a time.
    let mut len = blk * 2;
    while len * 2 <= n {
        let half = len / 2;
        let t2 = stage_table(tw, n, 2 * len, len);
        let t2 = &t2[..];
        data.par_chunks_mut(2 * len).for_each(|g| {
            let (a, b) = g.split_at_mut(len);
            let (q0, q1) = a.split_at_mut(half);
            let (q2, q3) = b.split_at_mut(half);
            q0.par_chunks_mut(SPAN)
                .zip(q1.par_chunks_mut(SPAN))
                .zip(q2.par_chunks_mut(SPAN).zip(q3.par_chunks_mut(SPAN)))
                .enumerate()
                .for_each(|(k, ((c0, c1), (c2, c3)))| group4([c0, c1, c2, c3], t2, k * SPAN, half));
        });
        len *= 4;
    }
    if len <= n {
        let half = len / 2;
        let t = stage_table(tw, n, len, half);
        let t = &t[..];
        data.par_chunks_mut(len).for_each(|g| {
            let (lo, hi) = g.split_at_mut(half);
            lo.par_chunks_mut(SPAN).zip(hi.par_chunks_mut(SPAN)).enumerate().for_each(|(k, (l, h))| {
                group(l, h, &t[k * SPAN..], k == 0);
            });
        });
    }
}

/// Maps X[k] to X[(n − k) mod n]: turns a forward transform into an (unscaled) inverse one.
fn negate_indices(data: &mut [Scalar]) {
    let n = data.len();
    if n <= 2 {
        return;
    }
    let (_, rest) = data.split_at_mut(1);
    // rest[i] is index i + 1; its partner n − (i + 1) is rest[n − 2 − i].
    let m = rest.len();
    let (lo, hi) = rest.split_at_mut(m / 2);
    let hi_len = hi.len();
    let (_, hi_tail) = hi.split_at_mut(hi_len - lo.len());
    lo.par_iter_mut().zip(hi_tail.par_iter_mut().rev()).for_each(|(a, b)| std::mem::swap(a, b));
}

#[cfg(test)]
mod timing {
    use super::*;
    use std::time::Instant;

    #[test]
    #[ignore = "timing probe, run by hand"]
    fn phases() {
        let log_n = 22;
        let d = Domain::new(log_n).unwrap();
        let mut v: Vec<Scalar> = (0..1u64 << log_n).map(|i| Scalar::from(i * 7 + 1)).collect();
        let t = Instant::now();
        bit_reverse(&mut v);
        eprintln!("bit_reverse {:?}", t.elapsed());
        let t = Instant::now();
        butterflies(&mut v, &d);
        eprintln!("butterflies (incl. bit reverse) {:?}", t.elapsed());
        let t = Instant::now();
        negate_indices(&mut v);
        eprintln!("negate {:?}", t.elapsed());
        let t = Instant::now();
        distribute_powers(&mut v, Scalar::MULTIPLICATIVE_GENERATOR, Scalar::ONE);
        eprintln!("distribute {:?}", t.elapsed());
        let t = Instant::now();
        let x: Scalar = v.par_iter().map(|a| a.square()).sum();
        eprintln!("4M squares {:?} {}", t.elapsed(), bool::from(x.is_zero()));
        let cache = DomainCache::default();
        let mk = |k: u64| -> Vec<Scalar> { (0..2_687_961u64).map(|i| Scalar::from(i * k + 1)).collect() };
        for _ in 0..2 {
            let (a, b, c) = (mk(3), mk(5), mk(7));
            let t = Instant::now();
            let h = quotient(&cache, a, b, c).unwrap();
            eprintln!("quotient {:?} ({} coefficients)", t.elapsed(), h.len());
        }
    }
}
