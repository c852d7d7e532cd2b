//! Groth16 assembly from evaluations: given one circuit's witness (inputs with ONE first, then
//! aux), its constraint evaluations a, b, c and the density bitmaps, computes H through the
//! backend's NTT schedule, the five MSMs over bellperson's base layout (h; l over every aux;
//! a over every input and the A-dense aux; b_g1 and b_g2 over the B-dense inputs and aux),
//! and the randomised proof with r and s. Equal r and s give the proof bellperson's
//! `create_proof` gives, byte for byte. Most witness scalars are 0 or 1, so the aux MSMs go
//! through [`Msm::msm_split`] unless told not to. It knows Groth16 over any [`Backend`], not
//! which circuit or proof kind it proves, where the parameters came from, or any device; the
//! bitmap helper [`popcount`] is [`crate::bits`]'s, re-exported for this module's callers.

use std::time::{Duration, Instant};

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Curve;
use rayon::prelude::*;
use serde::Serialize;

use crate::backend::{Backend, DeviceWitness, Evaluations, Matrices, Msm, MsmPoint};
pub use crate::bits::popcount;
use crate::buffer_pool::scalar_pool;
use crate::params::ParamsLayout;
use crate::srs::SrsRef;
use crate::{Error, Result};

/// The density bitmaps of a circuit (bit i of word i/64), as the PCE records them.
#[derive(Clone, Copy, Debug)]
pub struct Densities<'a> {
    /// Aux variables that occur in A.
    pub a_aux: &'a [u64],
    /// Inputs that occur in B.
    pub b_input: &'a [u64],
    /// Aux variables that occur in B.
    pub b_aux: &'a [u64],
}

/// One circuit's share of a proving call.
#[derive(Debug)]
pub struct Witness<'a> {
    /// Input assignment, ONE first.
    pub inputs: &'a [Scalar],
    /// Aux assignment, in allocation order.
    pub aux: &'a [Scalar],
    /// Where a, b and c come from.
    pub evals: Evals<'a>,
}

/// Where the constraint evaluations a, b, c come from.
#[derive(Debug)]
pub enum Evals<'a> {
    /// A·w, B·w, C·w per constraint, already computed (consumed: the quotient reuses their
    /// memory).
    Host {
        /// A·w.
        a: Vec<Scalar>,
        /// B·w.
        b: Vec<Scalar>,
        /// C·w.
        c: Vec<Scalar>,
    },
    /// The matrices: the backend evaluates them on the witness itself (on a device backend,
    /// where the quotient needs them, so only the witness travels).
    Matrices(Matrices<'a>),
}

impl<'a> Witness<'a> {
    /// A witness whose evaluations are already computed.
    pub fn evaluated(inputs: &'a [Scalar], aux: &'a [Scalar], e: Evaluations) -> Self {
        Witness { inputs, aux, evals: Evals::Host { a: e.a, b: e.b, c: e.c } }
    }
}

pub use crate::backend::{MsmMode, AUTO_SAMPLE};

/// Where the time of one proof went.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProveTimings {
    /// The backend's mat-vec (zero when a, b, c came computed).
    pub matvec: Duration,
    /// The quotient H's NTTs.
    pub quotient: Duration,
    /// The H MSM (G1, over the domain minus one bases).
    pub msm_h: Duration,
    /// The L MSM (G1, over every aux value).
    pub msm_l: Duration,
    /// The A MSM (G1, over the inputs and the A-dense aux).
    pub msm_a: Duration,
    /// The B MSM in G1 (over the B-dense inputs and aux).
    pub msm_b_g1: Duration,
    /// The B MSM in G2 (over the B-dense inputs and aux).
    pub msm_b_g2: Duration,
    /// Assembling the proof's three points from the MSM results, r and s.
    pub assembly: Duration,
    /// The proof's wall time. Below the sum of the rows when the H step ran beside the other
    /// MSMs ([`Backend::overlap_h`]): their rows then include the wait for the device.
    pub wall: Duration,
}

impl ProveTimings {
    /// The wall time when recorded, else the sum of the rows.
    pub fn total(&self) -> Duration {
        if !self.wall.is_zero() {
            return self.wall;
        }
        self.matvec + self.quotient + self.msm_h + self.msm_l + self.msm_a + self.msm_b_g1 + self.msm_b_g2 + self.assembly
    }

    /// (name, duration) rows in schedule order.
    pub fn rows(&self) -> [(&'static str, Duration); 8] {
        [
            ("mat-vec (backend)", self.matvec),
            ("quotient (NTTs)", self.quotient),
            ("msm h", self.msm_h),
            ("msm l", self.msm_l),
            ("msm a", self.msm_a),
            ("msm b_g1", self.msm_b_g1),
            ("msm b_g2", self.msm_b_g2),
            ("assembly", self.assembly),
        ]
    }

    /// Adds `o`'s rows (and wall time) to this one's, for totals over several proofs.
    pub fn add(&mut self, o: &ProveTimings) {
        self.matvec += o.matvec;
        self.quotient += o.quotient;
        self.msm_h += o.msm_h;
        self.msm_l += o.msm_l;
        self.msm_a += o.msm_a;
        self.msm_b_g1 += o.msm_b_g1;
        self.msm_b_g2 += o.msm_b_g2;
        self.assembly += o.assembly;
        self.wall += o.wall;
    }
}

/// The values at the set bits of `bits` (bit i selects `values[i]`). Counted per block first,
/// then every block writes its share straight into one output allocation, in parallel (a
/// gather into per-block vectors and a single-threaded concatenation cost more than the
/// MSMs they feed on a GPU), in a buffer from the process's pool when large
/// ([`crate::buffer_pool`]; [`prove`] gives its selections back).
pub fn select(values: &[Scalar], bits: &[u64]) -> Vec<Scalar> {
    crate::reserved_pool::parallel(|| select_here(values, bits))
}

fn select_here(values: &[Scalar], bits: &[u64]) -> Vec<Scalar> {
    const B: usize = 1 << 14; // a multiple of 64
    let picked = |base: usize, j: usize| crate::bits::bit(bits, base + j);
    let counts: Vec<usize> =
        values.par_chunks(B).enumerate().map(|(k, chunk)| (0..chunk.len()).filter(|&j| picked(k * B, j)).count()).collect();
    let total: usize = counts.iter().sum();
    let mut out: Vec<Scalar> = scalar_pool().take(total);
    {
        let mut spare = &mut out.spare_capacity_mut()[..total];
        let mut slots = Vec::with_capacity(counts.len());
        for &c in &counts {
            let (head, tail) = spare.split_at_mut(c);
            slots.push(head);
            spare = tail;
        }
        values.par_chunks(B).zip(slots.into_par_iter()).enumerate().for_each(|(k, (chunk, slot))| {
            let mut w = 0;
            for (j, v) in chunk.iter().enumerate() {
                if picked(k * B, j) {
                    slot[w].write(*v);
                    w += 1;
                }
            }
            assert_eq!(w, slot.len(), "select: block {k} wrote {w} of its {} values", slot.len());
        });
    }
    // SAFETY: block k wrote exactly counts[k] values (the same predicate counted them) into
    // its disjoint share of the first `total` slots.
    unsafe { out.set_len(total) };
    out
}

fn mismatch(what: &str, params: usize, circuit: usize) -> Error {
    Error::ParamLayout(format!("the parameters do not fit this circuit: {what} has {params} points, the circuit needs {circuit}"))
}

/// The point counts of the parameters a circuit with these counts and densities needs (the
/// byte fields follow from them).
pub fn layout(num_inputs: usize, num_aux: usize, domain: usize, d: &Densities) -> ParamsLayout {
    let (bi, ba, aa) = (popcount(d.b_input), popcount(d.b_aux), popcount(d.a_aux));
    let b = bi + ba;
    let vk_bytes = 3 * 96 + 3 * 192 + 4 + num_inputs * 96;
    let g1 = domain - 1 + num_aux + num_inputs + aa + b;
    ParamsLayout {
        ic: num_inputs,
        h: domain - 1,
        l: num_aux,
        a: num_inputs + aa,
        b_g1: b,
        b_g2: b,
        vk_bytes,
        file_bytes: vk_bytes + 5 * 4 + g1 * 96 + b * 192,
    }
}

/// Checks that `params` has the layout the circuit's counts and densities call for.
pub fn check_layout(params: SrsRef<'_>, num_inputs: usize, num_aux: usize, domain: usize, d: &Densities) -> Result<()> {
    let want = layout(num_inputs, num_aux, domain, d);
    let checks = [
        ("the verifying key's ic", params.vk.ic.len(), want.ic),
        ("h", params.h.len(), want.h),
        ("l", params.l.len(), want.l),
        ("a", params.a.len(), want.a),
        ("b_g1", params.b_g1.len(), want.b_g1),
        ("b_g2", params.b_g2.len(), want.b_g2),
    ];
    for (what, have, need) in checks {
        if have != need {
            return Err(mismatch(what, have, need));
        }
    }
    if bool::from(params.vk.delta_g1.is_identity() | params.vk.delta_g2.is_identity()) {
        return Err(Error::ParamLayout("the verifying key's delta is the point at infinity (subverted parameters)".into()));
    }
    Ok(())
}

fn backend_err(e: crate::backend::BackendError) -> Error {
    use crate::backend::BackendError as B;
    match e {
        B::Device(m) | B::Unavailable(m) => Error::Device(m),
        B::Input(_) => Error::Proving(e.to_string()),
    }
}

fn msm<P: MsmPoint>(b: &dyn Backend, bases: &[P], scalars: &[Scalar], mode: MsmMode) -> Result<P::Curve> {
    let m = P::msm_of(b);
    match mode.resolve(scalars) {
        MsmMode::Split => m.msm_split(bases, scalars),
        _ => m.msm(bases, scalars),
    }
    .map_err(backend_err)
}

/// Which aux values an MSM's scalars are.
#[derive(Clone, Copy)]
enum AuxPick<'a> {
    /// Every one (L).
    All,
    /// Those a density picks, selected on the host for this MSM alone (A), the vector back to
    /// the pool right after it.
    Own(&'a [u64]),
    /// Those a density picks, selected on the host once for two MSMs (B in G1 and G2): the
    /// first to need it fills the cell, the caller gives the vector back after both.
    Shared(&'a [u64], &'a std::sync::OnceLock<Vec<Scalar>>),
}

/// The MSM over `bases` of the aux values `pick` names: on the device witness when the
/// backend computes it there, else selected and split here.
fn aux_msm<P: MsmPoint>(
    b: &dyn Backend,
    bases: &[P],
    aux: &[Scalar],
    witness: Option<&DeviceWitness>,
    pick: AuxPick<'_>,
    mode: MsmMode,
) -> Result<P::Curve> {
    let density = match pick {
        AuxPick::All => None,
        AuxPick::Own(d) | AuxPick::Shared(d, _) => Some(d),
    };
    if let Some(r) = witness.and_then(|w| P::msm_of(b).msm_of_device_witness(bases, w, density, mode)) {
        return r.map_err(backend_err);
    }
    match pick {
        AuxPick::All => msm(b, bases, aux, mode),
        AuxPick::Own(d) => {
            let sel = select(aux, d);
            let r = msm(b, bases, &sel, mode);
            scalar_pool().give(sel);
            r
        }
        AuxPick::Shared(d, cell) => msm(b, bases, cell.get_or_init(|| select(aux, d)), mode),
    }
}

/// `f`'s value with the time it took.
fn clocked<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, Duration)> {
    let t = Instant::now();
    Ok((f()?, t.elapsed()))
}

/// A one-way gate carrying the H step's [`DeviceWitness`]: [`Gate::wait`] blocks until
/// [`Gate::open`] has been called and returns what the first opening brought (later openings
/// change nothing).
#[derive(Default)]
struct Gate {
    opened: std::sync::Mutex<Option<Option<DeviceWitness>>>,
    turn: std::sync::Condvar,
}

impl Gate {
    fn open(&self, witness: Option<DeviceWitness>) {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if opened.is_none() {
            *opened = Some(witness);
        }
        self.turn.notify_all();
    }

    fn wait(&self) -> Option<DeviceWitness> {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(w) = &*opened {
                return w.clone();
            }
            opened = self.turn.wait(opened).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Opens its gate (without a witness, if not opened yet) when dropped: at the end of the H
/// step however it ends (return, error, panic), so the side MSMs never wait for a signal that
/// will not come.
struct OpenOnDrop<'a>(&'a Gate);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.open(None);
    }
}

/// Starts `f` on a named thread of the scope, at the calling thread's priority (its device
/// calls then wait on the device lock as the job's own do) and under its route (its parallel
/// host work goes where the job's own does: an urgent job's to the reserved pool).
fn spawn_named<'s, T: Send + 's>(
    sc: &'s std::thread::Scope<'s, '_>,
    name: &str,
    f: impl FnOnce() -> Result<T> + Send + 's,
) -> std::io::Result<std::thread::ScopedJoinHandle<'s, Result<T>>> {
    std::thread::Builder::new().name(format!("cuzk-{name}")).spawn_scoped(sc, crate::reserved_pool::inherit(crate::priority::inherit(f)))
}

/// The result of a thread from [`spawn_named`] (its panic, resumed, if it panicked).
fn finish<T>(j: std::io::Result<std::thread::ScopedJoinHandle<'_, Result<T>>>) -> Result<T> {
    match j {
        Ok(j) => j.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
        Err(e) => Err(Error::Proving(format!("cannot start a prover thread: {e}"))),
    }
}

/// Proves one circuit with the given r and s.
pub fn prove(
    backend: &dyn Backend,
    params: SrsRef<'_>,
    d: &Densities,
    w: Witness,
    r: Scalar,
    s: Scalar,
    mode: MsmMode,
) -> Result<(Proof<Bls12>, ProveTimings)> {
    let mut t = ProveTimings::default();
    let (ni, na) = (w.inputs.len(), w.aux.len());
    let rows = match &w.evals {
        Evals::Host { a, b, c } => {
            if b.len() != a.len() || c.len() != a.len() {
                return Err(Error::Invalid(format!("evaluations of unequal length: {}, {}, {}", a.len(), b.len(), c.len())));
            }
            a.len()
        }
        Evals::Matrices(m) => m.rows(),
    };
    let domain = crate::backend::domain_size(rows).map_err(backend_err)?;
    check_layout(params, ni, na, domain, d)?;
    if ni == 0 || w.inputs[0] != Scalar::ONE {
        return Err(Error::Invalid("the first input must be ONE".into()));
    }

    let wall = Instant::now();
    let (inputs, aux, evals) = (w.inputs, w.aux, w.evals);
    // The H step: (H MSM, mat-vec time, quotient time, H MSM time).
    // `witness_sent` is called once the witness has left the host (see
    // Backend::matvec_quotient_msm_h).
    let h_step = move |witness_sent: &dyn Fn(Option<DeviceWitness>)| -> Result<(G1Projective, Duration, Duration, Duration)> {
        let start = Instant::now();
        let (h, mv, q) = match evals {
            Evals::Host { a, b, c } => {
                witness_sent(None);
                let (h, q) = backend.quotient_msm_h(a, b, c, params.h).map_err(backend_err)?;
                (h, Duration::ZERO, q)
            }
            Evals::Matrices(m) => backend.matvec_quotient_msm_h(&m, inputs, aux, params.h, witness_sent).map_err(backend_err)?,
        };
        Ok((h, mv, q, start.elapsed().saturating_sub(q + mv)))
    };
    // The other four MSMs, each with its time, their aux scalars read from the device
    // witness when the H step left one (else selected and split on the host).
    let l_msm = |w: Option<&DeviceWitness>| aux_msm::<G1Affine>(backend, params.l, aux, w, AuxPick::All, mode);
    let a_msm = |w: Option<&DeviceWitness>| -> Result<G1Projective> {
        let a_in = Msm::<G1Affine>::msm(backend, &params.a[..ni], inputs).map_err(backend_err)?;
        Ok(a_in + aux_msm::<G1Affine>(backend, &params.a[ni..], aux, w, AuxPick::Own(d.a_aux), mode)?)
    };
    let bi = popcount(d.b_input);
    // `b_aux`: B's aux selection, made at most once for both B MSMs (only when one of them
    // runs on the host).
    let b1_msm = |b_in: &[Scalar], b_aux: AuxPick<'_>, w: Option<&DeviceWitness>| -> Result<G1Projective> {
        Ok(Msm::<G1Affine>::msm(backend, &params.b_g1[..bi], b_in).map_err(backend_err)?
            + aux_msm::<G1Affine>(backend, &params.b_g1[bi..], aux, w, b_aux, mode)?)
    };
    let b2_msm = |b_in: &[Scalar], b_aux: AuxPick<'_>, w: Option<&DeviceWitness>| -> Result<G2Projective> {
        Ok(Msm::<G2Affine>::msm(backend, &params.b_g2[..bi], b_in).map_err(backend_err)?
            + aux_msm::<G2Affine>(backend, &params.b_g2[bi..], aux, w, b_aux, mode)?)
    };
    // The two B MSMs: one after the other, or (`beside`) B in G2 on a thread of its own, so
    // that its host split runs while B in G1 waits for the device instead of after it (on the
    // GPU, B in G2's split and gather were a gap at the proof's end, the device idle behind
    // them).
    let b_msms = |beside: bool, w: Option<&DeviceWitness>| -> Result<((G1Projective, Duration), (G2Projective, Duration))> {
        let t = Instant::now();
        let b_in = select(inputs, d.b_input);
        let cell = std::sync::OnceLock::new();
        let b_aux = AuxPick::Shared(d.b_aux, &cell);
        let both = if beside {
            let (b1, b2) = std::thread::scope(|sc| {
                let b2 = spawn_named(sc, "msm-b2", || clocked(|| b2_msm(&b_in, b_aux, w)));
                (b1_msm(&b_in, b_aux, w).map(|v| (v, t.elapsed())), finish(b2))
            });
            b1.and_then(|b1| Ok((b1, b2?)))
        } else {
            b1_msm(&b_in, b_aux, w).and_then(|b1| Ok(((b1, t.elapsed()), clocked(|| b2_msm(&b_in, b_aux, w))?)))
        };
        if let Some(v) = cell.into_inner() {
            scalar_pool().give(v);
        }
        both
    };
    let (h_res, l, a, b) = if backend.overlap_h() {
        // Five threads: the H step, L, A, B in G1 and B in G2. Their work starts once the H
        // step's witness has left the host — on the device witness it hands over, or as host
        // selections, splits and gathers that then no longer compete with the witness copy
        // for memory bandwidth — and their device calls queue on the backend's device lock,
        // at the job's priority (inherited by each thread). Plain threads, not rayon tasks,
        // since they block on that lock; their parallel host work follows the caller's route
        // (crate::reserved_pool).
        let gate = Gate::default();
        std::thread::scope(|sc| {
            let h = spawn_named(sc, "h-step", || {
                let _open = OpenOnDrop(&gate); // whatever happens in the H step
                h_step(&|w| gate.open(w))
            });
            if h.is_err() {
                gate.open(None); // no H step to open it
            }
            let l = spawn_named(sc, "msm-l", || {
                let w = gate.wait();
                clocked(|| l_msm(w.as_ref()))
            });
            let a = spawn_named(sc, "msm-a", || {
                let w = gate.wait();
                clocked(|| a_msm(w.as_ref()))
            });
            let b = b_msms(true, gate.wait().as_ref());
            (finish(h), finish(l), finish(a), b)
        })
    } else {
        // One after the other: the H step's device witness, if any, serves the others.
        let witness = std::sync::Mutex::new(None);
        let h = h_step(&|w| *witness.lock().unwrap_or_else(|e| e.into_inner()) = w);
        let w = witness.into_inner().unwrap_or_else(|e| e.into_inner());
        let (l, a, b) = (clocked(|| l_msm(w.as_ref())), clocked(|| a_msm(w.as_ref())), b_msms(false, w.as_ref()));
        (h, l, a, b)
    };
    let (h_acc, mv, q, hm) = h_res?;
    let ((l_acc, l_t), (a_acc, a_t), ((b1_acc, b1_t), (b2_acc, b2_t))) = (l?, a?, b?);
    t.matvec = mv;
    t.quotient = q;
    t.msm_h = hm;
    (t.msm_l, t.msm_a, t.msm_b_g1, t.msm_b_g2) = (l_t, a_t, b1_t, b2_t);

    let start = Instant::now();
    let vk = params.vk;
    let g_a: G1Projective = vk.delta_g1 * r + vk.alpha_g1 + a_acc;
    let g_b: G2Projective = vk.delta_g2 * s + vk.beta_g2 + b2_acc;
    let g_c: G1Projective = a_acc * s + b1_acc * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + h_acc + l_acc;
    let proof = Proof { a: g_a.to_affine(), b: g_b.to_affine(), c: g_c.to_affine() };
    t.assembly = start.elapsed();
    t.wall = wall.elapsed();
    Ok((proof, t))
}

/// Fresh r and s for each of `n` proofs.
pub fn random_rs(n: usize) -> Vec<(Scalar, Scalar)> {
    let mut rng = rand::rngs::OsRng;
    (0..n).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn auto_splits_only_where_at_most_a_third_of_the_scalars_are_general() {
        let general = Scalar::from(7u64);
        let mix = |ones: usize, zeros: usize, gen: usize| -> Vec<Scalar> {
            let mut v = vec![Scalar::ONE; ones];
            v.extend(std::iter::repeat_n(Scalar::ZERO, zeros));
            v.extend(std::iter::repeat_n(general, gen));
            v
        };
        assert_eq!(MsmMode::Auto.resolve(&mix(98, 0, 2)), MsmMode::Split, "PoRep-like: 2 % general");
        assert_eq!(MsmMode::Auto.resolve(&mix(10, 10, 10)), MsmMode::Split, "a third general still splits");
        assert_eq!(MsmMode::Auto.resolve(&mix(10, 9, 11)), MsmMode::Plain, "just over a third");
        assert_eq!(MsmMode::Auto.resolve(&mix(5, 5, 90)), MsmMode::Plain, "Poseidon-like: mostly general");
        assert_eq!(MsmMode::Auto.resolve(&[]), MsmMode::Split);
        assert_eq!(MsmMode::Plain.resolve(&mix(100, 0, 0)), MsmMode::Plain, "explicit modes are kept");
        assert_eq!(MsmMode::Split.resolve(&mix(0, 0, 100)), MsmMode::Split);
        // Long inputs are sampled, and periodic layouts do not fool the sample: one general
        // scalar in every 245 (the stride evenly spaced picks would take at this length) still
        // splits; 3 in every 5, and 2 in every 5 with the period of the picks, do not.
        let periodic = |n: usize, period: usize, generals: usize| -> Vec<Scalar> {
            (0..n).map(|i| if i % period < generals { general } else { Scalar::ONE }).collect()
        };
        assert_eq!(MsmMode::Auto.resolve(&periodic(1_000_003, 245, 1)), MsmMode::Split);
        assert_eq!(MsmMode::Auto.resolve(&periodic(1_000_003, 5, 3)), MsmMode::Plain);
        assert_eq!(MsmMode::Auto.resolve(&periodic(1_000_003, 5, 2)), MsmMode::Plain);
        assert_eq!(MsmMode::Auto.resolve(&periodic(1_000_003, 50, 1)), MsmMode::Split);
    }

    #[test]
    fn select_equals_a_naive_filter_across_block_edges_and_short_bitmaps() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for (n, words, density) in [(0usize, 0usize, 0.5), (1, 1, 1.0), (70_000, 1094, 0.996), (40_000, 300, 0.25), (5000, 79, 0.0)] {
            let values: Vec<Scalar> = (0..n).map(|i| Scalar::from(i as u64 * 3 + 1)).collect();
            let bits: Vec<u64> = (0..words).map(|_| (0..64).fold(0u64, |w, b| w | (u64::from(rng.gen_bool(density)) << b))).collect();
            let want: Vec<Scalar> = values
                .iter()
                .enumerate()
                .filter(|(i, _)| bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1))
                .map(|(_, v)| *v)
                .collect();
            assert_eq!(select(&values, &bits), want, "n {n}, {words} words, density {density}");
        }
    }

    #[test]
    fn select_into_a_reused_buffer_writes_every_value_over_the_old_contents() {
        // The only test that gives the process's pool a capacity and a buffer this large.
        let n = crate::mem::HUGE_PAGES_FROM / 32 * 2;
        scalar_pool().set_capacity(128 << 20);
        let dirty = vec![Scalar::from(u64::MAX); n];
        let at = dirty.as_ptr();
        scalar_pool().give(dirty);
        let values: Vec<Scalar> = (0..n as u64 + 64).map(Scalar::from).collect();
        let bits: Vec<u64> = (0..values.len() / 64).map(|w| if w % 97 == 3 { 0x0f0f } else { u64::MAX }).collect();
        let picked = select(&values, &bits);
        assert_eq!(picked.as_ptr(), at, "served from the pool");
        let want: Vec<Scalar> = values.iter().enumerate().filter(|(i, _)| crate::bits::bit(&bits, *i)).map(|(_, v)| *v).collect();
        assert_eq!(picked, want);
        scalar_pool().set_capacity(0);
    }
}
