//! The CUDA backend proper: device selection, the resident-bases cache (one upload per SRS
//! section per process, keyed by the host slice and a fingerprint of its points), the split
//! MSM (bitmap sum of the 0/1 scalars on the device + sppark Pippenger over the rest), cuzk's
//! own Pippenger driver for large G1 MSMs over resident bases, NTTs,
//! the resident quotient (a, b, c staged through pooled pinned host buffers, filled before the
//! device lock is taken) and the fused quotient + H MSM, where H never leaves the device.
//! Small inputs go to the CPU backend, where a launch costs more than the work. Calls on one
//! device are serialised (sppark's batched-addition kernel keeps a per-device counter) by a
//! priority-ordered [`DeviceLock`]: between two calls of a running partition, the waiting
//! call of the most urgent job goes next (the prover thread's priority, inherited by the
//! overlapped schedule's helper threads).

use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G2Affine, Scalar};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::{
    check_lengths, domain_size, gather, ones_bitmap_split, Backend, BackendError, BackendResult, Evaluations, MatVec, Matrices, Msm,
    MsmPoint, Ntt, NttKind,
};
use ff::{Field, PrimeField};
use group::Group;

use crate::ffi::{self, Handle};
use crate::lock::{DeviceGuard, DeviceLock};
use crate::residency::{RecentSlots, ResidentSet, SectionKey};
use crate::{DeviceInfo, GpuError, LockWaits, WaitedFor};
use cuzk_core::priority::Priority;

/// Below this many points an MSM runs on the CPU.
const CPU_BELOW: usize = 1 << 10;
/// From this many points on, bases are kept resident (below, they travel with each call).
const RESIDENT_FROM: usize = 1 << 16;
/// Circuits whose matrices stay resident at once (PoRep or SnapDeals, WindowPoSt,
/// WinningPoSt): a WinningPoSt between two PoRep partitions used to replace PoRep's 5.5 GiB of
/// matrices, which the next partition then uploaded again while the following WinningPoSt
/// waited for it (the 2–3 s tail of `bench post-load` on the H100, 2026-12-06).
const PCE_SLOTS: usize = 3;
/// The witness goes to the device in pieces of this many bytes, one device call each, before
/// the mat-vec + quotient call: a 32 GiB PoRep partition's 4.2 GB witness took ~0.49 s of that
/// call on the H100 as one copy, which an urgent job arriving meanwhile had to wait for.
const WITNESS_PIECE_BYTES: usize = 256 << 20;
/// Bases not kept on the device go up for a bitmap sum in chunks of this many points (384 MiB
/// of G1, 768 MiB of G2 on the device at a time).
const STREAM_CHUNK: usize = 1 << 22;
/// Below this size an NTT runs on the CPU.
const NTT_CPU_BELOW: usize = 1 << 10;
/// Below this many constraints the mat-vec runs on the CPU.
const MATVEC_CPU_BELOW: usize = 1 << 10;

/// The stage log's length bound: a process that never takes the log (the daemon) keeps only
/// the latest entries instead of growing with every device call.
const LOG_CAP: usize = 4096;

static LOG: DeviceLock<Vec<(String, f64)>> = DeviceLock::new(Vec::new());

/// Every device call's span, bounded like the stage log.
static CALLS: DeviceLock<Vec<crate::DeviceCall>> = DeviceLock::new(Vec::new());

pub(crate) fn take_calls() -> Vec<crate::DeviceCall> {
    std::mem::take(&mut *CALLS.lock())
}

/// The waits and holds of every CUDA backend in this process, per lock ([`WaitedFor`] as
/// index) and waiting thread's priority level ([`Priority::level`]), until taken.
static WAITS: DeviceLock<[[LockWaits; 4]; 2]> = DeviceLock::new([[LockWaits::NONE; 4]; 2]);

pub(crate) fn take_waits(lock: WaitedFor) -> Vec<(Priority, LockWaits)> {
    let taken = std::mem::replace(&mut WAITS.lock()[lock as usize], [LockWaits::NONE; 4]);
    [Priority::Low, Priority::Normal, Priority::High, Priority::Critical]
        .into_iter()
        .zip(taken)
        .filter(|(_, w)| w.acquisitions > 0)
        .collect()
}

/// Adds to the record of `lock` at the calling thread's priority.
fn record(lock: WaitedFor, add: impl FnOnce(&mut LockWaits)) {
    add(&mut WAITS.lock()[lock as usize][Priority::current().level() as usize]);
}

fn record_wait(lock: WaitedFor, waited: f64) {
    record(lock, |w| {
        w.acquisitions += 1;
        w.seconds += waited;
        w.max_seconds = w.max_seconds.max(waited);
    });
}

fn record_hold(lock: WaitedFor, held: f64) {
    record(lock, |w| {
        w.held_seconds += held;
        w.max_held_seconds = w.max_held_seconds.max(held);
    });
}

/// Appends to a log of at most [`LOG_CAP`] entries, dropping its older half when full.
fn push_bounded<T>(l: &DeviceLock<Vec<T>>, item: T) {
    let mut l = l.lock();
    if l.len() >= LOG_CAP {
        l.drain(..LOG_CAP / 2);
    }
    l.push(item);
}

fn log(stage: impl Into<String>, seconds: f64) {
    push_bounded(&LOG, (stage.into(), seconds));
}

pub(crate) fn take_log() -> Vec<(String, f64)> {
    std::mem::take(&mut *LOG.lock())
}

fn call(what: &'static str, f: impl FnOnce(*mut u8, usize) -> i32) -> Result<(), GpuError> {
    let mut msg = [0u8; 512];
    let code = f(msg.as_mut_ptr(), msg.len());
    if code == 0 {
        return Ok(());
    }
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    Err(GpuError::Cuda { what, code, message: String::from_utf8_lossy(&msg[..end]).into_owned() })
}

/// Whether `e` says the device ran out of memory (sppark reports cudaMalloc's failure with the
/// code negated).
fn out_of_memory(e: &GpuError) -> bool {
    matches!(e, GpuError::Cuda { code, message, .. } if code.abs() == 2 || message.contains("out of memory"))
}

/// An out-of-memory error that eviction could not cure, with the resident bytes left (held
/// by running or waiting calls) and the setting that leaves the call its room.
fn with_budget_hint(e: GpuError, resident_bytes: u64) -> GpuError {
    let GpuError::Cuda { what, code, message } = e else { return e };
    let gib = resident_bytes as f64 / (1u64 << 30) as f64;
    let message = format!(
        "{message} (with {gib:.2} GiB of SRS sections resident that running calls hold: a lower resident budget, \
         srs.device_budget or --device-budget, leaves the room this call needs)"
    );
    GpuError::Cuda { what, code, message }
}

/// ", cuzk driver" when an MSM's (first) pieces ran through cuzk's own Pippenger driver.
fn driver_note(driven: bool) -> &'static str {
    if driven {
        ", cuzk driver"
    } else {
        ""
    }
}

/// ", k device calls" for an MSM run in k > 1 pieces (the stage log's MSM lines).
fn piece_note(pieces: usize) -> String {
    if pieces > 1 {
        format!(", {pieces} device calls")
    } else {
        String::new()
    }
}

fn dev_err(e: GpuError) -> BackendError {
    BackendError::Device(e.to_string())
}

/// The G1 MSM's arithmetic ceilings on `device` (see [`crate::msm_ceilings`]).
pub(crate) fn msm_ceilings(device: usize, points: &[G1Affine], rounds: u32, batches: &[u32]) -> Result<crate::MsmCeilings, GpuError> {
    let k = batches.len();
    let (mut fp, mut fr, mut xyzz, mut affine) = (0f64, 0f64, vec![0f64; k], vec![0f64; k]);
    let (mut xyzz_sum, mut affine_sum) = (vec![blst::blst_p1::default(); k], vec![blst::blst_p1::default(); k]);
    call("arithmetic ceilings", |m, c| {
        // SAFETY: every output has room for `k` values; the points are blst affine points.
        unsafe {
            ffi::cuzk_g1_ceilings(
                device as i32,
                points.as_ptr() as *const blst::blst_p1_affine,
                points.len(),
                rounds,
                batches.as_ptr(),
                k,
                &mut fp,
                &mut fr,
                xyzz.as_mut_ptr(),
                affine.as_mut_ptr(),
                xyzz_sum.as_mut_ptr(),
                affine_sum.as_mut_ptr(),
                m,
                c,
            )
        }
    })?;
    let batches = (0..k)
        .map(|i| crate::CeilingBatch {
            batch: batches[i],
            xyzz_adds_per_s: xyzz[i],
            affine_adds_per_s: affine[i],
            sums_agree: G1Affine::from_raw(xyzz_sum[i]) == G1Affine::from_raw(affine_sum[i]),
        })
        .collect();
    Ok(crate::MsmCeilings { fp_mul_per_s: fp, fr_mul_per_s: fr, batches })
}

pub(crate) fn devices() -> Result<Vec<DeviceInfo>, GpuError> {
    let mut count = 0i32;
    // SAFETY: plain out-parameters.
    call("cudaGetDeviceCount", |m, c| unsafe { ffi::cuzk_device_count(&mut count, m, c) })
        .map_err(|e| GpuError::NoDevice(e.to_string()))?;
    if count <= 0 {
        return Err(GpuError::NoDevice("the CUDA runtime reports 0 devices".into()));
    }
    (0..count)
        .map(|i| {
            let mut name = [0u8; 256];
            let mut mem = 0usize;
            // SAFETY: buffers sized as passed.
            call("cudaGetDeviceProperties", |m, c| unsafe { ffi::cuzk_device_name(i, name.as_mut_ptr(), name.len(), &mut mem, m, c) })?;
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            Ok(DeviceInfo { index: i as usize, name: String::from_utf8_lossy(&name[..end]).into_owned(), memory_bytes: mem as u64 })
        })
        .collect()
}

/// Device functions of one curve group.
pub(crate) trait GpuCurve: MsmPoint {
    type Raw;
    type RawProj: Default;
    const TAG: u8;
    unsafe fn upload(dev: i32, p: *const Self::Raw, n: usize, h: *mut Handle, m: *mut u8, c: usize) -> i32;
    unsafe fn free(h: Handle);
    unsafe fn resident(h: Handle, off: usize, s: *const blst::blst_fr, n: usize, o: *mut Self::RawProj, m: *mut u8, c: usize) -> i32;
    unsafe fn host(dev: i32, p: *const Self::Raw, s: *const blst::blst_fr, n: usize, o: *mut Self::RawProj, m: *mut u8, c: usize) -> i32;
    unsafe fn sum(h: Handle, map: *const u32, w: usize, o: *mut Self::RawProj, m: *mut u8, c: usize) -> i32;
    /// sppark's MSM over resident bases with the scalars in device memory.
    unsafe fn resident_dev(h: Handle, off: usize, s: *const std::ffi::c_void, n: usize, o: *mut Self::RawProj, m: *mut u8, c: usize)
        -> i32;
    /// The 0/1/general split of an MSM over resident bases from device scalars
    /// (`ffi::cuzk_g1_witness_split`).
    #[allow(clippy::too_many_arguments)]
    unsafe fn split(
        h: Handle,
        w: *const std::ffi::c_void,
        sel: *const u32,
        n: usize,
        one: *const u32,
        mode: i32,
        ones: *mut Self::RawProj,
        gen_bases: *mut Handle,
        gen_scalars: *mut *mut std::ffi::c_void,
        n_general: *mut usize,
        m: *mut u8,
        c: usize,
    ) -> i32;
    /// cuzk's own Pippenger driver over resident bases, the scalars in host memory
    /// (`on_host`) or device memory, where the group has one (G1): `Some(code)`; `None` for a
    /// group without.
    #[allow(clippy::too_many_arguments)]
    unsafe fn windowed(
        _h: Handle,
        _off: usize,
        _s: *const std::ffi::c_void,
        _on_host: bool,
        _n: usize,
        _plan: crate::MsmPlan,
        _o: *mut Self::RawProj,
        _m: *mut u8,
        _c: usize,
    ) -> Option<i32> {
        None
    }
    #[allow(clippy::too_many_arguments)]
    unsafe fn sum_host(
        dev: i32,
        p: *const Self::Raw,
        n: usize,
        map: *const u32,
        w: usize,
        chunk: usize,
        o: *mut Self::RawProj,
        m: *mut u8,
        c: usize,
    ) -> i32;
    fn from_raw(p: Self::RawProj) -> Self::Curve;
}

macro_rules! gpu_curve {
    (
        $t:ty,
        $raw:ty,
        $proj:ty,
        $tag:expr,
        $up:ident,
        $free:ident,
        $res:ident,
        $res_dev:ident,
        $host:ident,
        $sum:ident,
        $sum_host:ident,
        $split:ident
        $(, $win:ident)?
    ) => {
        impl GpuCurve for $t {
            type Raw = $raw;
            type RawProj = $proj;
            const TAG: u8 = $tag;
            unsafe fn upload(dev: i32, p: *const $raw, n: usize, h: *mut Handle, m: *mut u8, c: usize) -> i32 {
                unsafe { ffi::$up(dev, p, n, h, m, c) }
            }
            unsafe fn free(h: Handle) {
                unsafe { ffi::$free(h) }
            }
            unsafe fn resident(h: Handle, off: usize, s: *const blst::blst_fr, n: usize, o: *mut $proj, m: *mut u8, c: usize) -> i32 {
                unsafe { ffi::$res(h, off, s, n, o, m, c) }
            }
            unsafe fn host(dev: i32, p: *const $raw, s: *const blst::blst_fr, n: usize, o: *mut $proj, m: *mut u8, c: usize) -> i32 {
                unsafe { ffi::$host(dev, p, s, n, o, m, c) }
            }
            unsafe fn sum(h: Handle, map: *const u32, w: usize, o: *mut $proj, m: *mut u8, c: usize) -> i32 {
                unsafe { ffi::$sum(h, map, w, o, m, c) }
            }
            unsafe fn resident_dev(h: Handle, off: usize, s: *const std::ffi::c_void, n: usize, o: *mut $proj, m: *mut u8, c: usize) -> i32 {
                unsafe { ffi::$res_dev(h, off, s, n, o, m, c) }
            }
            unsafe fn split(
                h: Handle,
                w: *const std::ffi::c_void,
                sel: *const u32,
                n: usize,
                one: *const u32,
                mode: i32,
                ones: *mut $proj,
                gen_bases: *mut Handle,
                gen_scalars: *mut *mut std::ffi::c_void,
                n_general: *mut usize,
                m: *mut u8,
                c: usize,
            ) -> i32 {
                unsafe { ffi::$split(h, w, sel, n, one, mode, ones, gen_bases, gen_scalars, n_general, m, c) }
            }
            unsafe fn sum_host(
                dev: i32,
                p: *const $raw,
                n: usize,
                map: *const u32,
                w: usize,
                chunk: usize,
                o: *mut $proj,
                m: *mut u8,
                c: usize,
            ) -> i32 {
                unsafe { ffi::$sum_host(dev, p, n, map, w, chunk, o, m, c) }
            }
            $(
                unsafe fn windowed(
                    h: Handle,
                    off: usize,
                    s: *const std::ffi::c_void,
                    on_host: bool,
                    n: usize,
                    plan: crate::MsmPlan,
                    o: *mut $proj,
                    m: *mut u8,
                    c: usize,
                ) -> Option<i32> {
                    Some(unsafe { ffi::$win(h, off, s, on_host.into(), n, plan.window, plan.chunks, o, std::ptr::null_mut(), m, c) })
                }
            )?
            fn from_raw(p: $proj) -> Self::Curve {
                // SAFETY: the blstrs projective types are repr(transparent) over blst's Jacobian
                // points, which is the layout sppark's jacobian_t writes.
                unsafe { std::mem::transmute::<$proj, Self::Curve>(p) }
            }
        }
    };
}

gpu_curve!(
    G1Affine,
    blst::blst_p1_affine,
    blst::blst_p1,
    1,
    cuzk_g1_upload,
    cuzk_g1_free,
    cuzk_g1_msm_resident,
    cuzk_g1_msm_resident_dev,
    cuzk_g1_msm_host,
    cuzk_g1_sum_bitmap,
    cuzk_g1_sum_bitmap_host,
    cuzk_g1_witness_split,
    cuzk_g1_msm_windowed
);
gpu_curve!(
    G2Affine,
    blst::blst_p2_affine,
    blst::blst_p2,
    2,
    cuzk_g2_upload,
    cuzk_g2_free,
    cuzk_g2_msm_resident,
    cuzk_g2_msm_resident_dev,
    cuzk_g2_msm_host,
    cuzk_g2_sum_bitmap,
    cuzk_g2_sum_bitmap_host,
    cuzk_g2_witness_split
);

/// Bases resident on the device, freed on drop.
struct Resident {
    handle: Handle,
    free: unsafe fn(Handle),
}

// SAFETY: the handle is an opaque device allocation, used only under the backend's lock.
unsafe impl Send for Resident {}
unsafe impl Sync for Resident {}

impl Drop for Resident {
    fn drop(&mut self) {
        // SAFETY: the handle came from the matching upload and is freed once.
        unsafe { (self.free)(self.handle) }
    }
}

/// A circuit's matrices resident on the device, freed on drop; keyed by the host arrays'
/// addresses and lengths and a sample of their contents.
struct ResidentPce {
    handle: Handle,
    /// Device bytes of the matrices and their coefficient table.
    bytes: u64,
}

// SAFETY: an opaque device allocation, used only under the backend's lock.
unsafe impl Send for ResidentPce {}
unsafe impl Sync for ResidentPce {}

impl Drop for ResidentPce {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuzk_pce_upload and is freed once.
        unsafe { ffi::cuzk_pce_free(self.handle) }
    }
}

/// The resident matrices' key: the caller's identity with the shape, which lets matrices whose
/// host entries were released find their device copy; else the host arrays' addresses and
/// fingerprints.
fn pce_key(m: &Matrices) -> Vec<u64> {
    let mut key = vec![m.num_inputs as u64, m.num_aux as u64, m.coeffs.len() as u64, fingerprint(m.coeffs)];
    if let Some(id) = m.identity {
        key.extend([u64::MAX, id, m.rows() as u64]);
        return key;
    }
    for x in [&m.a, &m.b, &m.c] {
        key.extend([x.cols.as_ptr() as u64, x.cols.len() as u64, x.row_ptr.as_ptr() as u64, fingerprint(x.cols), fingerprint(x.coeff_idx)]);
    }
    key
}

/// The Groth16 coset's 1/Z = 1/(gⁿ − 1).
fn zinv(n: usize) -> BackendResult<Scalar> {
    let z = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([n as u64]) - Scalar::ONE;
    Option::from(z.invert()).ok_or_else(|| BackendError::Input("Z vanishes on the coset".into()))
}

/// A device buffer handed over by the quotient, freed on drop.
struct DeviceBuf(i32, *mut std::ffi::c_void);

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        // SAFETY: the buffer came from a device allocation (the quotient's H, a witness copy)
        // and is freed once.
        unsafe { ffi::cuzk_device_free(self.0, self.1) }
    }
}

/// The witness (inputs, then aux) a fused H step left on the device for the proof's other
/// MSMs ([`cuzk_core::backend::DeviceWitness`]): read by this backend's device calls alone,
/// freed when the proof's last MSM drops it.
struct WitnessOnDevice {
    buf: DeviceBuf,
    /// The backend that made it (its address): another backend's witness is not read.
    backend: usize,
    inputs: usize,
    aux: usize,
}

// SAFETY: device memory, read only by device calls under the backend's device lock and
// freed once (DeviceBuf's drop).
unsafe impl Send for WitnessOnDevice {}
unsafe impl Sync for WitnessOnDevice {}

/// A density's selection (the aux indices whose bit is set, ascending) as a device index
/// list, made once per circuit: the side MSMs read their scalars through it.
struct Selection {
    key: (usize, usize, usize, u64),
    indices: DeviceBuf,
    count: usize,
}

// SAFETY: as WitnessOnDevice.
unsafe impl Send for Selection {}
unsafe impl Sync for Selection {}

/// Selections kept at once (PoRep's A and B, a PoSt's A and B).
const SELECTIONS: usize = 4;

/// The aux indices (below `aux`) whose bit is set in `density`.
fn selected_indices(density: &[u64], aux: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(cuzk_core::bits::popcount(density));
    for (k, &word) in density.iter().enumerate().take(aux.div_ceil(64)) {
        let mut w = word;
        while w != 0 {
            let i = k * 64 + w.trailing_zeros() as usize;
            if i >= aux {
                break;
            }
            out.push(i as u32);
            w &= w - 1;
        }
    }
    out
}

/// A hash of every word of a density (its key with its address and lengths).
fn density_hash(density: &[u64]) -> u64 {
    density.iter().fold(0x9E37_79B9_7F4A_7C15u64, |h, &w| (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29))
}

/// The device split's code for a mode (cuda/witness_split.cuh).
fn split_mode_code(mode: cuzk_core::backend::MsmMode) -> i32 {
    use cuzk_core::backend::MsmMode;
    match mode {
        MsmMode::Auto => 0,
        MsmMode::Split => 1,
        MsmMode::Plain => 2,
    }
}

/// 1 in blst's Montgomery form, as the device split compares scalars with it.
fn montgomery_one() -> [u32; 8] {
    // SAFETY: Scalar is repr(transparent) over blst_fr's four little-endian u64 limbs, which
    // are eight little-endian u32 limbs on the little-endian targets CUDA runs on.
    unsafe { std::mem::transmute::<Scalar, [u32; 8]>(Scalar::ONE) }
}

/// A sample of the points' bytes: a freed slice whose address is reused by other points is
/// not mistaken for the resident copy.
fn fingerprint<P>(bases: &[P]) -> u64 {
    let bytes = std::mem::size_of::<P>();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let n = bases.len();
    let picks = [0, 1, n / 3, n / 2, (2 * n) / 3, n.saturating_sub(2), n.saturating_sub(1)];
    for &i in picks.iter().filter(|&&i| i < n) {
        // SAFETY: reading the bytes of an initialised element.
        let s = unsafe { std::slice::from_raw_parts(&bases[i] as *const P as *const u8, bytes) };
        for &b in s {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// A page-locked host buffer that the quotient stages a, b, c through. Buffers are pooled
/// (one per concurrent prover), filled outside the device lock and reused by later proofs.
struct Staging {
    ptr: *mut std::ffi::c_void,
    bytes: usize,
    /// The backend's count of pinned bytes alive, given back on drop.
    live: Arc<std::sync::atomic::AtomicU64>,
}

// SAFETY: a plain host allocation, used by one thread at a time (taken out of the pool).
unsafe impl Send for Staging {}

impl Staging {
    /// `bytes` of pinned memory, counted in `live` until dropped.
    fn alloc(dev: i32, bytes: usize, live: &Arc<std::sync::atomic::AtomicU64>) -> Result<Staging, GpuError> {
        let mut p = std::ptr::null_mut();
        // SAFETY: out-parameter for a fresh allocation of `bytes`.
        call("cudaMallocHost", |m, c| unsafe { ffi::cuzk_host_alloc(dev, bytes, &mut p, m, c) })?;
        live.fetch_add(bytes as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(Staging { ptr: p, bytes, live: live.clone() })
    }

    /// The first `count` scalars of the buffer (which holds at least that many).
    fn scalars(&mut self, count: usize) -> &mut [Scalar] {
        assert!(count * std::mem::size_of::<Scalar>() <= self.bytes);
        // SAFETY: the allocation holds at least `count` scalars, is page-aligned, and is
        // borrowed mutably through `self` only.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut Scalar, count) }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // SAFETY: our own allocation, freed once.
        unsafe { ffi::cuzk_host_free(self.ptr) }
        self.live.fetch_sub(self.bytes as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Fills `dst` with the scalars of the witness (inputs, then aux) from position `start`.
fn fill_witness_piece(dst: &mut [Scalar], start: usize, inputs: &[Scalar], aux: &[Scalar]) {
    let in_start = start.min(inputs.len());
    let from_inputs = (inputs.len() - in_start).min(dst.len());
    let (di, da) = dst.split_at_mut(from_inputs);
    di.copy_from_slice(&inputs[in_start..in_start + from_inputs]);
    let aux_start = (start + from_inputs).saturating_sub(inputs.len()); // 0 when the piece ends inside the inputs
    par_copy(da, &aux[aux_start..aux_start + da.len()]);
}

/// Copies `src` into `dst` on all cores (a fresh pinned buffer is no slower to fill than to
/// read, and one thread would not keep up with the DMA).
fn par_copy(dst: &mut [Scalar], src: &[Scalar]) {
    use rayon::prelude::*;
    const B: usize = 1 << 15;
    cuzk_core::reserved_pool::parallel(|| dst.par_chunks_mut(B).zip(src.par_chunks(B)).for_each(|(d, s)| d.copy_from_slice(s)));
}

/// `first` (a device call's result), or, while it and each retry fail out of device memory and
/// `evict` drops something resident that no call uses (it says whether it did), the result of
/// `retry` after each drop.
fn evict_while_out_of_memory(
    evict: &mut dyn FnMut() -> bool,
    what: &'static str,
    first: Result<(), GpuError>,
    mut retry: impl FnMut() -> Result<(), GpuError>,
) -> Result<(), GpuError> {
    let mut result = first;
    while let Err(e) = &result {
        if !out_of_memory(e) || !evict() {
            break;
        }
        tracing::warn!(error = %e, what, "device out of memory; evicted the least recently used resident copy no call holds, retrying");
        result = retry();
    }
    result
}

/// The CUDA backend on one device.
pub struct CudaBackend {
    dev: i32,
    name: String,
    cpu: CpuBackend,
    /// The resident SRS sections, under the resident budget (least recently used dropped first).
    resident: DeviceLock<ResidentSet<Resident>>,
    /// The matrices of the last [`PCE_SLOTS`] circuits evaluated on the device.
    pce: DeviceLock<RecentSlots<Vec<u64>, ResidentPce>>,
    /// Serialises device calls, the most urgent waiting job's first (see
    /// `cuzk_core::device_lock`); a panic under it makes the next holder forget the resident
    /// bases and matrices ([`CudaBackend::device`]).
    lock: DeviceLock<()>,
    /// Pinned staging buffers not in use.
    staging: DeviceLock<Vec<Staging>>,
    /// Bytes of the pinned staging buffers alive, in use or not.
    pinned_bytes: Arc<std::sync::atomic::AtomicU64>,
    /// Set once pinned allocation failed: uploads then go from pageable memory.
    no_pinned: std::sync::atomic::AtomicBool,
    /// The most points one device call of a resident MSM covers (see
    /// [`CudaBackend::with_msm_piece`]).
    msm_piece: usize,
    /// The smallest G1 MSM piece cuzk's own Pippenger driver takes (`None`: sppark always;
    /// [`CudaBackend::with_driver_from`]).
    driver_from: Option<usize>,
    /// The most bytes one device call of a witness upload copies.
    witness_piece: usize,
    /// Points per chunk of a bitmap sum over bases not kept on the device.
    stream_chunk: usize,
    /// The densities' device index lists, most recent last (at most [`SELECTIONS`]).
    selections: DeviceLock<Vec<Arc<Selection>>>,
    /// The fused H step hands its device witness to the side MSMs
    /// ([`CudaBackend::with_witness_hand_over`]).
    hand_over_witness: bool,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend").field("dev", &self.dev).field("name", &self.name).finish()
    }
}

impl CudaBackend {
    /// The backend on `device`; `resident_budget` caps the device bytes of SRS sections kept
    /// between calls (`None`: the whole device, dropping copies only when an upload fails).
    pub fn new(device: usize, resident_budget: Option<u64>, urgent_grace: std::time::Duration) -> Result<Self, GpuError> {
        let all = devices()?;
        let info = all.get(device).ok_or(GpuError::BadDevice { device, count: all.len() })?;
        tracing::info!(device, name = %info.name, memory_gib = info.memory_bytes as f64 / (1u64 << 30) as f64, "CUDA backend");
        Ok(Self {
            dev: device as i32,
            name: format!("cuda:{device} {}", info.name),
            cpu: CpuBackend::new(),
            resident: DeviceLock::new(ResidentSet::new(resident_budget)),
            pce: DeviceLock::new(RecentSlots::new(PCE_SLOTS)),
            lock: DeviceLock::new(()).with_urgent_grace(urgent_grace),
            staging: DeviceLock::new(Vec::new()),
            pinned_bytes: Arc::default(),
            no_pinned: std::sync::atomic::AtomicBool::new(false),
            msm_piece: usize::MAX,
            driver_from: None,
            witness_piece: WITNESS_PIECE_BYTES,
            stream_chunk: STREAM_CHUNK,
            selections: DeviceLock::new(Vec::new()),
            hand_over_witness: false,
        })
    }

    /// MSMs over resident bases run in pieces of at most `points` points (at least 2^16), one
    /// device call each, so a more urgent job's calls wait for one piece of a 2^27-point H
    /// MSM, not for all of it; the pieces' sums are added. `usize::MAX` (the default): one call.
    /// The witness upload before a mat-vec then goes in pieces of at most as many scalars
    /// (and at most [`WITNESS_PIECE_BYTES`]).
    pub fn with_msm_piece(mut self, points: usize) -> Self {
        self.msm_piece = points.max(RESIDENT_FROM);
        self.witness_piece = self.msm_piece.saturating_mul(std::mem::size_of::<Scalar>()).min(WITNESS_PIECE_BYTES);
        self
    }

    /// With `true` the fused H step hands its witness to the side MSMs, which then select,
    /// split and gather on the device; with `false` (a bare backend's default; `open_with`
    /// follows [`crate::GpuOptions::side_msms`], device by default) it frees the witness after
    /// the mat-vec and they work on the host.
    pub fn with_witness_hand_over(mut self, hand_over: bool) -> Self {
        self.hand_over_witness = hand_over;
        self
    }

    /// G1 MSM pieces over resident bases of at least `from` points run through cuzk's own
    /// Pippenger driver ([`crate::MsmPlan::for_points`]); smaller ones, and all with `None`
    /// (the default), through sppark's.
    pub fn with_driver_from(mut self, from: Option<usize>) -> Self {
        self.driver_from = from;
        self
    }

    /// One resident piece of `len` scalars from `off` through cuzk's driver, when it takes
    /// pieces that long and the group has one (`driven` is then set); else `None`, and the
    /// caller runs sppark's.
    ///
    /// # Safety
    /// `s` holds the scalars (host memory when `on_host`, else this device's) for the resident
    /// bases `r` covers from `off` to `off + len`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn driver_piece<P: GpuCurve>(
        &self,
        r: &Resident,
        off: usize,
        s: *const std::ffi::c_void,
        on_host: bool,
        len: usize,
        out: *mut P::RawProj,
        m: *mut u8,
        c: usize,
        driven: &std::cell::Cell<bool>,
    ) -> Option<i32> {
        if self.driver_from.is_none_or(|from| len < from) {
            return None;
        }
        let code = unsafe { P::windowed(r.handle, off, s, on_host, len, crate::MsmPlan::for_points(len), out, m, c) };
        driven.set(driven.get() || code.is_some());
        code
    }

    /// One device call under the device lock; its seconds from the lock's acquisition (device
    /// time, not waiting). Out of device memory, it drops other circuits' matrices, then
    /// resident bases, that no call holds, least recently used first, retrying after each,
    /// until the call runs or nothing is left to drop: a copy is uploaded again when next
    /// needed, a failed proof is lost. It keeps the device lock and the resident locks from
    /// the failure to the last retry, so no
    /// other call or upload takes the freed room in between (an MSM thread waiting for the
    /// device used to upload again what had just been dropped).
    fn device_call(&self, what: &'static str, mut f: impl FnMut(*mut u8, usize) -> i32) -> Result<f64, GpuError> {
        let _g = self.device();
        let t = Instant::now();
        let mut result = call(what, &mut f);
        if matches!(&result, Err(e) if out_of_memory(e)) {
            let (mut pce, mut cache) = (self.pce_slots(), self.resident_cache());
            let mut evict = || pce.evict_lru_unheld() || cache.evict_lru();
            result = evict_while_out_of_memory(&mut evict, what, result, || call(what, &mut f));
            if let Err(e) = result {
                result = Err(if out_of_memory(&e) { with_budget_hint(e, cache.report().bytes) } else { e });
            }
        }
        let end = Instant::now();
        let held = (end - t).as_secs_f64();
        record_hold(WaitedFor::Device, held);
        push_bounded(&CALLS, crate::DeviceCall { device: self.dev as usize, what, start: t, end });
        result.map(|()| held)
    }

    /// `Σ` over `n` points of one resident MSM, in pieces of at most `msm_piece` points:
    /// `piece(off, len, out)` runs the piece at `off` (one device call each). Returns the sum,
    /// the number of pieces and their device seconds together (waits for the lock excluded).
    fn in_pieces<P: GpuCurve>(
        &self,
        what: &'static str,
        n: usize,
        mut piece: impl FnMut(usize, usize, *mut P::RawProj, *mut u8, usize) -> i32,
    ) -> Result<(P::Curve, usize, f64), GpuError> {
        let (mut sum, mut pieces, mut secs) = (P::Curve::identity(), 0, 0.0);
        for off in (0..n).step_by(self.msm_piece) {
            let len = self.msm_piece.min(n - off);
            let mut out = P::RawProj::default();
            secs += self.device_call(what, |m, c| piece(off, len, &mut out, m, c))?;
            sum += P::from_raw(out);
            pieces += 1;
        }
        Ok((sum, pieces, secs))
    }

    /// The device lock. After a panic under it, what is resident may not be what the cache
    /// says (an upload or a kernel stopped half-way), so the bases and matrices are forgotten
    /// and uploaded again on next use; the device keeps serving.
    fn device(&self) -> DeviceGuard<'_, ()> {
        let asked = Instant::now();
        let guard = self.lock.lock_or_reset(|_| {
            self.resident_cache().clear();
            self.pce_slots().clear();
        });
        record_wait(WaitedFor::Device, asked.elapsed().as_secs_f64());
        guard
    }

    /// The resident bases, emptied when a holder panicked mid-update.
    fn resident_cache(&self) -> DeviceGuard<'_, ResidentSet<Resident>> {
        self.resident.lock_or_reset(|cache| cache.clear())
    }

    /// The resident matrices, forgotten when a holder panicked mid-upload. Lock order: the
    /// device lock, then this, then the resident bases.
    fn pce_slots(&self) -> DeviceGuard<'_, RecentSlots<Vec<u64>, ResidentPce>> {
        self.pce.lock_or_reset(|slots| slots.clear())
    }

    /// The resident copy of `bases`, uploading it on first use; `None` when the resident
    /// budget has no room for it (too large, or the room is held by running calls): the
    /// caller then sends the bases with the call.
    fn resident<P: GpuCurve>(&self, bases: &[P]) -> BackendResult<Option<Arc<Resident>>> {
        let key = SectionKey { tag: P::TAG, addr: bases.as_ptr() as usize, len: bases.len(), fingerprint: fingerprint(bases) };
        // Take (and at once release) the device lock first: if a holder panicked, its reset
        // empties the cache now, so no copy made before the panic is handed out (found on the
        // device: the lookup used to run before the caller's own lock took the reset).
        drop(self.device());
        let mut cache = self.resident_cache();
        if let Some(r) = cache.get(&key) {
            return Ok(Some(r));
        }
        // The same address with other contents: the old slice is gone.
        cache.remove_stale(key.tag, key.addr);
        let bytes = (key.len * std::mem::size_of::<P::Raw>()) as u64;
        if let Err(why) = cache.make_room(&key, bytes) {
            tracing::debug!(curve = P::NAME, len = key.len, bytes, ?why, "bases not kept resident: streamed with the call");
            return Ok(None);
        }
        let t = Instant::now();
        let mut handle: Handle = std::ptr::null_mut();
        let mut attempt = || {
            call("upload bases", |m, c| unsafe {
                // SAFETY: `bases` is len points of the blst layout.
                P::upload(self.dev, bases.as_ptr() as *const P::Raw, key.len, &mut handle, m, c)
            })
        };
        let first = attempt();
        evict_while_out_of_memory(&mut || cache.evict_lru(), "upload bases", first, attempt).map_err(dev_err)?;
        let secs = t.elapsed().as_secs_f64();
        log(format!("upload {} bases ({})", P::NAME, key.len), secs);
        tracing::debug!(curve = P::NAME, len = key.len, bytes, secs, "bases resident");
        let r = Arc::new(Resident { handle, free: P::free });
        cache.insert(key, bytes, r.clone());
        Ok(Some(r))
    }

    /// An MSM; bases of `RESIDENT_FROM` points or more are kept resident when `keep` says so
    /// (SRS sections), else they travel with the call (the gathered bases of a split MSM,
    /// different for every witness).
    fn msm_gpu<P: GpuCurve>(&self, bases: &[P], scalars: &[Scalar], keep: bool) -> BackendResult<P::Curve> {
        check_lengths(bases.len(), scalars.len())?;
        let n = bases.len();
        if n < CPU_BELOW {
            return P::msm_of(&self.cpu).msm(bases, scalars);
        }
        let s = scalars.as_ptr() as *const blst::blst_fr;
        let r = if keep && n >= RESIDENT_FROM { self.resident(bases)? } else { None };
        if let Some(r) = r {
            let driven = std::cell::Cell::new(false);
            let (sum, pieces, secs) = self
                .in_pieces::<P>("msm", n, |off, len, out, m, c| {
                    // SAFETY: scalars[off..off + len] against resident bases [off..off + len].
                    unsafe {
                        self.driver_piece::<P>(&r, off, s.cast(), true, len, out, m, c, &driven)
                            .unwrap_or_else(|| P::resident(r.handle, off, s.add(off), len, out, m, c))
                    }
                })
                .map_err(dev_err)?;
            log(format!("msm {} ({n}{}{})", P::NAME, piece_note(pieces), driver_note(driven.get())), secs);
            return Ok(sum);
        }
        // Bases from host memory, in pieces as resident ones are (a section a device budget
        // streams can be 12 GB: one call would hold the device lock for all of its transfer).
        let p = bases.as_ptr() as *const P::Raw;
        let (sum, pieces, secs) = self
            .in_pieces::<P>("msm", n, |off, len, out, m, c| {
                // SAFETY: bases[off..off + len] and scalars[off..off + len] in host memory.
                unsafe { P::host(self.dev, p.add(off), s.add(off), len, out, m, c) }
            })
            .map_err(dev_err)?;
        log(format!("msm {} ({n}{}, bases from the host)", P::NAME, piece_note(pieces)), secs);
        Ok(sum)
    }

    fn sum_gpu<P: GpuCurve>(&self, bases: &[P], indices: &[u32]) -> BackendResult<P::Curve> {
        if bases.len() < RESIDENT_FROM {
            return P::msm_of(&self.cpu).sum_selected(bases, indices);
        }
        let mut map = vec![0u32; bases.len().div_ceil(32)];
        for &i in indices {
            let i = i as usize;
            if i >= bases.len() {
                return Err(BackendError::Input(format!("index {i} outside {} bases", bases.len())));
            }
            map[i / 32] |= 1 << (i % 32);
        }
        self.sum_bitmap_gpu(bases, &map, indices.len())
    }

    /// `Σ bases[i]` over the set bits of `map` (bit i of word i/32), on the resident bases.
    fn sum_bitmap_gpu<P: GpuCurve>(&self, bases: &[P], map: &[u32], count: usize) -> BackendResult<P::Curve> {
        // Bases not kept on the device go up with the call, in chunks.
        let resident = self.resident(bases)?;
        let mut out = P::RawProj::default();
        let p = bases.as_ptr() as *const P::Raw;
        // SAFETY: the map covers the bases (resident, or bases.len() points of the blst layout
        // in host memory); map.len() words.
        let secs = self
            .device_call("bitmap sum", |m, c| unsafe {
                match &resident {
                    Some(r) => P::sum(r.handle, map.as_ptr(), map.len(), &mut out, m, c),
                    None => P::sum_host(self.dev, p, bases.len(), map.as_ptr(), map.len(), self.stream_chunk, &mut out, m, c),
                }
            })
            .map_err(dev_err)?;
        let from = if resident.is_some() { "" } else { ", bases from the host" };
        log(format!("bitmap sum {} ({count} of {}{from})", P::NAME, bases.len()), secs);
        Ok(P::from_raw(out))
    }

    /// The smallest pooled pinned buffer of at least `count` scalars
    /// ([`crate::residency::smallest_fitting`]), or a new one; `None` when the driver refuses
    /// pinned memory.
    fn take_staging(&self, count: usize) -> Option<Staging> {
        use std::sync::atomic::Ordering;
        let bytes = count * std::mem::size_of::<Scalar>();
        let mut pool = self.staging.lock();
        if let Some(i) = crate::residency::smallest_fitting(pool.iter().map(|b| b.bytes), bytes) {
            return Some(pool.swap_remove(i));
        }
        drop(pool);
        if self.no_pinned.load(Ordering::Relaxed) {
            return None;
        }
        match Staging::alloc(self.dev, bytes, &self.pinned_bytes) {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::warn!(error = %e, bytes, "no pinned staging buffer; uploads use pageable memory");
                self.no_pinned.store(true, Ordering::Relaxed);
                None
            }
        }
    }

    /// The quotient on the device: a, b, c staged through pinned memory (filled before the
    /// device lock is taken), H downloaded into `h` (n − 1 values) when given, else left on the
    /// device and its buffer returned.
    fn quotient_on_device(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        n: usize,
        h: Option<*mut Scalar>,
    ) -> BackendResult<*mut std::ffi::c_void> {
        let t = Instant::now();
        let mut staging = self.take_staging(a.len() + b.len() + c.len());
        let pinned = staging.as_mut().map(|s| {
            let buf = s.scalars(a.len() + b.len() + c.len());
            let (pa, rest) = buf.split_at_mut(a.len());
            let (pb, pc) = rest.split_at_mut(b.len());
            par_copy(pa, a);
            par_copy(pb, b);
            par_copy(pc, c);
            (&*pa, &*pb, &*pc)
        });
        let (a, b, c) = match pinned {
            Some(p) => {
                log("quotient: stage a, b, c into pinned memory (host copy)", t.elapsed().as_secs_f64());
                p
            }
            None => (a, b, c),
        };
        let zinv = zinv(n)?;
        let mut ms = [0f64; ffi::QUOTIENT_STAGES.len()];
        let mut keep: *mut std::ffi::c_void = std::ptr::null_mut();
        let keep_ptr: *mut *mut std::ffi::c_void = if h.is_some() { std::ptr::null_mut() } else { &mut keep };
        let p = |v: &[Scalar]| v.as_ptr() as *const blst::blst_fr;
        // SAFETY: each input holds its stated length; h (when given) has room for n − 1
        // values; ms has one slot per stage.
        let secs = self
            .device_call("quotient", |m, cap| unsafe {
                ffi::cuzk_quotient(
                    self.dev,
                    p(a),
                    a.len(),
                    p(b),
                    b.len(),
                    p(c),
                    c.len(),
                    n.trailing_zeros(),
                    &zinv as *const Scalar as *const blst::blst_fr,
                    h.map_or(std::ptr::null_mut(), |h| h as *mut blst::blst_fr),
                    keep_ptr,
                    ms.as_mut_ptr(),
                    m,
                    cap,
                )
            })
            .map_err(dev_err)?;
        for (stage, v) in ffi::QUOTIENT_STAGES.iter().zip(ms) {
            log(*stage, v / 1e3);
        }
        log(format!("quotient total (2^{})", n.trailing_zeros()), secs);
        if let Some(s) = staging {
            self.staging.lock().push(s);
        }
        Ok(keep)
    }

    fn split_gpu<P: GpuCurve>(&self, bases: &[P], scalars: &[Scalar]) -> BackendResult<P::Curve> {
        check_lengths(bases.len(), scalars.len())?;
        if bases.len() < RESIDENT_FROM {
            return P::msm_of(&self.cpu).msm_split(bases, scalars);
        }
        // One parallel pass makes the ones' bitmap and the general indices.
        let t = Instant::now();
        let (map, general) = ones_bitmap_split(scalars);
        log(format!("split {} scalars into a ones bitmap + {} general (host)", scalars.len(), general.len()), t.elapsed().as_secs_f64());
        let count = map.iter().map(|w| w.count_ones() as usize).sum();
        let ones = self.sum_bitmap_gpu(bases, &map, count)?;
        if general.is_empty() {
            return Ok(ones);
        }
        let (gb, gs) = gather(bases, scalars, &general);
        Ok(ones + self.msm_gpu(&gb, &gs, false)?)
    }

    /// The matrices resident on the device, uploading them (after checking every index) on
    /// first use; the least recently used of [`PCE_SLOTS`] circuits' goes when a new one
    /// comes. Its waits for the matrices' lock, and how long it held it, are counted.
    fn resident_pce(&self, m: &Matrices) -> BackendResult<Arc<ResidentPce>> {
        let asked = Instant::now();
        let mut slots = self.pce_slots();
        let got = Instant::now();
        record_wait(WaitedFor::Matrices, (got - asked).as_secs_f64());
        let r = self.resident_pce_locked(&mut slots, m);
        record_hold(WaitedFor::Matrices, got.elapsed().as_secs_f64());
        r
    }

    fn resident_pce_locked(&self, slots: &mut RecentSlots<Vec<u64>, ResidentPce>, m: &Matrices) -> BackendResult<Arc<ResidentPce>> {
        let key = pce_key(m);
        if let Some(r) = slots.get(&key) {
            return Ok(r);
        }
        if m.entries_released() {
            // Not resident here (evicted, or another device's copy): the caller reloads the
            // entries and calls again.
            return Err(BackendError::Device(format!(
                "the matrices of this circuit ({} rows) are not resident on device {} and their host entries were released",
                m.rows(),
                self.dev
            )));
        }
        m.check_indices()?;
        let t = Instant::now();
        let host = [&m.a, &m.b, &m.c].map(|x| ffi::CsrHost {
            row_ptr: x.row_ptr.as_ptr(),
            cols: x.cols.as_ptr(),
            coeff: x.coeff_idx.as_ptr(),
            rows: x.rows(),
            nnz: x.cols.len(),
        });
        let mut handle: Handle = std::ptr::null_mut();
        let mut attempt = || {
            call("upload matrices", |msg, cap| unsafe {
                // SAFETY: three matrices whose arrays hold the stated counts (checked above),
                // a coefficient table of coeffs.len() scalars in blst's layout.
                ffi::cuzk_pce_upload(
                    self.dev,
                    host.as_ptr(),
                    m.coeffs.as_ptr() as *const blst::blst_fr,
                    m.coeffs.len(),
                    m.num_inputs,
                    m.num_aux,
                    &mut handle,
                    msg,
                    cap,
                )
            })
        };
        let mut result = attempt();
        if result.is_err() {
            // Lock order: these matrices (held), then the resident bases.
            let mut cache = self.resident_cache();
            result = evict_while_out_of_memory(&mut || slots.evict_lru_unheld() || cache.evict_lru(), "upload matrices", result, attempt);
        }
        result.map_err(dev_err)?;
        let nnz = m.a.cols.len() + m.b.cols.len() + m.c.cols.len();
        log(format!("upload matrices ({} rows, {nnz} non-zeros)", m.rows()), t.elapsed().as_secs_f64());
        let bytes = [&m.a, &m.b, &m.c]
            .iter()
            .map(|x| std::mem::size_of_val(x.row_ptr) + std::mem::size_of_val(x.cols) + std::mem::size_of_val(x.coeff_idx))
            .sum::<usize>()
            + std::mem::size_of_val(m.coeffs);
        let r = Arc::new(ResidentPce { handle, bytes: bytes as u64 });
        slots.insert(key, r.clone());
        Ok(r)
    }

    /// The witness (inputs, then aux) in one pinned buffer from the pool, or in pageable memory
    /// when the driver refuses pinned memory; hand the first back with `self.give_back`.
    fn stage_witness(&self, inputs: &[Scalar], aux: &[Scalar]) -> (Option<Staging>, Vec<Scalar>) {
        let width = inputs.len() + aux.len();
        match self.take_staging(width) {
            Some(mut s) => {
                fill_witness_piece(s.scalars(width), 0, inputs, aux);
                (Some(s), Vec::new())
            }
            None => (None, [inputs, aux].concat()),
        }
    }

    /// A device copy of the `width` scalars at `w`, made in pieces of at most
    /// [`WITNESS_PIECE_BYTES`] (fewer with MSM pieces), one device call each (so a more urgent job's call waits for one
    /// piece, not the whole copy); with the device seconds of the allocation and the pieces.
    fn upload_witness(&self, w: *const Scalar, width: usize) -> Result<(DeviceBuf, f64), GpuError> {
        let bytes = width * std::mem::size_of::<Scalar>();
        let (buf, mut secs) = self.witness_buffer(bytes)?;
        for off in (0..bytes).step_by(self.witness_piece) {
            let len = self.witness_piece.min(bytes - off);
            // SAFETY: `w` holds `width` scalars, so off + len ≤ bytes lies inside it.
            secs += self.upload_witness_piece(&buf, off, unsafe { w.cast::<u8>().add(off) }, len)?;
        }
        Ok((buf, secs))
    }

    /// A device allocation of `bytes` for a witness, with the device seconds it took.
    fn witness_buffer(&self, bytes: usize) -> Result<(DeviceBuf, f64), GpuError> {
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: p receives a device allocation of `bytes`, owned by the DeviceBuf returned.
        let secs = self.device_call("witness buffer", |m, c| unsafe { ffi::cuzk_device_alloc(self.dev, bytes, &mut p, m, c) })?;
        Ok((DeviceBuf(self.dev, p), secs))
    }

    /// `len` bytes from host `src` to byte `off` of the device witness buffer, one device call.
    /// The caller guarantees that `src` holds `len` bytes and that off + len fits the buffer.
    fn upload_witness_piece(&self, buf: &DeviceBuf, off: usize, src: *const u8, len: usize) -> Result<f64, GpuError> {
        self.device_call("upload witness", |m, c| unsafe {
            // SAFETY: the caller's guarantee above.
            ffi::cuzk_copy_to_device(self.dev, buf.1.cast::<u8>().add(off).cast(), src.cast(), len, m, c)
        })
    }

    /// The witness (inputs, then aux) on the device, staged through a pinned buffer from the
    /// pool one piece at a time: a helper thread copies piece k + 1 into pinned memory while
    /// piece k uploads, so the prover waits for about the host copy alone instead of the copy
    /// and then the upload. Without pinned memory the concatenation uploads from pageable
    /// memory. Returns the buffer, the host copy's seconds and the device calls' seconds.
    fn upload_witness_staged(&self, inputs: &[Scalar], aux: &[Scalar]) -> Result<(DeviceBuf, f64, f64), GpuError> {
        let width = inputs.len() + aux.len();
        let Some(mut staging) = self.take_staging(width) else {
            let t = Instant::now();
            let w = [inputs, aux].concat();
            let copy_s = t.elapsed().as_secs_f64();
            let (buf, secs) = self.upload_witness(w.as_ptr(), width)?;
            return Ok((buf, copy_s, secs));
        };
        let piece = (self.witness_piece / std::mem::size_of::<Scalar>()).max(1);
        let result = self.witness_buffer(width * std::mem::size_of::<Scalar>()).and_then(|(buf, alloc_s)| {
            let pieces: Vec<&mut [Scalar]> = staging.scalars(width).chunks_mut(piece).collect();
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, &[Scalar])>(pieces.len());
            let (copy_s, upload) = std::thread::scope(|scope| {
                // Under the caller's route: an urgent job's copy runs on its reserved pool.
                let copier = scope.spawn(cuzk_core::reserved_pool::inherit(move || {
                    let t = Instant::now();
                    for (k, dst) in pieces.into_iter().enumerate() {
                        fill_witness_piece(dst, k * piece, inputs, aux);
                        if tx.send((k * piece, dst)).is_err() {
                            break; // an upload failed; the uploader stopped listening
                        }
                    }
                    t.elapsed().as_secs_f64()
                }));
                let rx = rx; // owned here, so an early return drops it and stops the copier
                let mut secs = alloc_s;
                for (at, src) in rx.iter() {
                    let off = at * std::mem::size_of::<Scalar>();
                    match self.upload_witness_piece(&buf, off, src.as_ptr().cast(), std::mem::size_of_val(src)) {
                        Ok(s) => secs += s,
                        Err(e) => return (0.0, Err(e)),
                    }
                }
                // A panicked copier sent only some pieces: its panic goes on up, never a
                // partly uploaded witness.
                (copier.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), Ok(secs))
            });
            upload.map(|secs| (buf, copy_s, secs))
        });
        self.give_back(Some(staging));
        result
    }

    fn give_back(&self, s: Option<Staging>) {
        if let Some(s) = s {
            self.staging.lock().push(s);
        }
    }

    /// A G1 MSM timed both ways the prover runs it, bases resident (uploaded before any timing):
    /// scalars read from host memory (uploaded within each call) and scalars already on the
    /// device (the H MSM's case, uploaded once before timing). One untimed call each way, then
    /// `runs` timed ones; with both ways' last results, for the caller to compare.
    pub(crate) fn time_g1_msm(&self, bases: &[G1Affine], scalars: &[Scalar], runs: usize) -> BackendResult<crate::MsmTimes> {
        check_lengths(bases.len(), scalars.len())?;
        let n = bases.len();
        let r = self
            .resident(bases)?
            .ok_or_else(|| BackendError::Device(format!("{n} G1 bases do not fit in the device's resident budget")))?;
        let mut host_scalars_s = Vec::with_capacity(runs);
        let mut host_result = blstrs::G1Projective::identity();
        for i in 0..=runs {
            let t = Instant::now();
            host_result = self.msm_gpu(bases, scalars, true)?;
            if i > 0 {
                host_scalars_s.push(t.elapsed().as_secs_f64());
            }
        }
        let (d_s, _) = self.upload_witness(scalars.as_ptr(), n).map_err(dev_err)?;
        let mut device_scalars_s = Vec::with_capacity(runs);
        let mut device_result = blstrs::G1Projective::identity();
        for i in 0..=runs {
            let (sum, _, secs, _) = self.msm_device_scalars::<G1Affine>(&r, d_s.1, n)?;
            device_result = sum;
            if i > 0 {
                device_scalars_s.push(secs);
            }
        }
        Ok(crate::MsmTimes { host_scalars_s, device_scalars_s, host_result, device_result })
    }

    /// cuzk's own Pippenger driver over resident `bases` and the `scalars` uploaded once, for
    /// each plan (checked by the caller) `runs` times after one untimed call (`runs` = 0: the
    /// result alone).
    pub(crate) fn time_g1_msm_windowed(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
        plans: &[crate::MsmPlan],
        runs: usize,
    ) -> BackendResult<Vec<crate::WindowedMsmTimes>> {
        check_lengths(bases.len(), scalars.len())?;
        let n = bases.len();
        let times = |plan| crate::WindowedMsmTimes {
            plan,
            // SAFETY: a pure size computation on this device's properties.
            device_bytes: unsafe { ffi::cuzk_g1_msm_windowed_bytes(self.dev, n, plan.window, plan.chunks) } as u64,
            runs_s: Vec::with_capacity(runs),
            phases_ms: Vec::with_capacity(runs),
            result: blstrs::G1Projective::identity(),
        };
        if n == 0 {
            return Ok(plans.iter().map(|&plan| times(plan)).collect());
        }
        let r = self
            .resident(bases)?
            .ok_or_else(|| BackendError::Device(format!("{n} G1 bases do not fit in the device's resident budget")))?;
        let (d_s, _) = self.upload_witness(scalars.as_ptr(), n).map_err(dev_err)?;
        let mut all = Vec::with_capacity(plans.len());
        for &plan in plans {
            let mut t = times(plan);
            for i in 0..=runs {
                let (sum, phases, secs) = self.msm_windowed(&r, &d_s, n, plan)?;
                t.result = sum;
                if i > 0 {
                    t.runs_s.push(secs);
                    t.phases_ms.push(phases);
                }
            }
            all.push(t);
        }
        Ok(all)
    }

    /// One call of the driver: the sum, its phases (ms) and the call's seconds.
    fn msm_windowed(
        &self,
        r: &Resident,
        d_s: &DeviceBuf,
        n: usize,
        plan: crate::MsmPlan,
    ) -> BackendResult<(blstrs::G1Projective, [f64; ffi::MSM_PHASES.len()], f64)> {
        let mut out = blst::blst_p1::default();
        let mut ms = [0f32; ffi::MSM_PHASES.len()];
        let secs = self
            .device_call("msm (cuzk driver)", |m, c| {
                // SAFETY: d_s holds n scalars on this device, r holds n bases; `ms` has room
                // for every phase the driver times.
                unsafe { ffi::cuzk_g1_msm_windowed(r.handle, 0, d_s.1, 0, n, plan.window, plan.chunks, &mut out, ms.as_mut_ptr(), m, c) }
            })
            .map_err(dev_err)?;
        Ok((G1Affine::from_raw(out), ms.map(f64::from), secs))
    }

    /// `Σ d_s[i] · r[i]` over `count` scalars already in device memory (`d_s`) and resident
    /// bases, in pieces: the sum, the pieces, their device seconds and whether cuzk's driver
    /// ran any of them (G1 pieces it takes).
    fn msm_device_scalars<P: GpuCurve>(
        &self,
        r: &Resident,
        d_s: *const std::ffi::c_void,
        count: usize,
    ) -> BackendResult<(P::Curve, usize, f64, bool)> {
        let driven = std::cell::Cell::new(false);
        let (sum, pieces, secs) = self
            .in_pieces::<P>("msm (device scalars)", count, |off, len, out, m, c| {
                // SAFETY: d_s holds at least `count` scalars on this device; r holds `count` bases.
                unsafe {
                    self.driver_piece::<P>(r, off, d_s, false, len, out, m, c, &driven)
                        .unwrap_or_else(|| P::resident_dev(r.handle, off, d_s, len, out, m, c))
                }
            })
            .map_err(dev_err)?;
        Ok((sum, pieces, secs, driven.get()))
    }

    /// The device index list of `density`'s selection among `aux` values, made and uploaded
    /// on first use (once per circuit), the least recently used of [`SELECTIONS`] dropped.
    fn selection(&self, density: &[u64], aux: usize) -> BackendResult<Arc<Selection>> {
        let key = (density.as_ptr() as usize, density.len(), aux, density_hash(density));
        let mut kept = self.selections.lock();
        if let Some(i) = kept.iter().position(|s| s.key == key) {
            let s = kept.remove(i);
            kept.push(s.clone());
            return Ok(s);
        }
        let t = Instant::now();
        let indices = selected_indices(density, aux);
        let bytes = std::mem::size_of_val(indices.as_slice()).max(4);
        let (buf, _) = self.witness_buffer(bytes).map_err(dev_err)?;
        if !indices.is_empty() {
            self.upload_witness_piece(&buf, 0, indices.as_ptr().cast(), bytes).map_err(dev_err)?;
        }
        log(format!("upload a density's selection ({} of {aux} aux)", indices.len()), t.elapsed().as_secs_f64());
        let s = Arc::new(Selection { key, indices: buf, count: indices.len() });
        if kept.len() >= SELECTIONS {
            kept.remove(0);
        }
        kept.push(s.clone());
        Ok(s)
    }

    /// [`Msm::msm_of_device_witness`] for this backend: `None` (the prover then works on the
    /// host) for a witness it did not make, bases too small to keep resident, or bases that
    /// do not fit the resident budget.
    fn witness_msm<P: GpuCurve>(
        &self,
        bases: &[P],
        w: &cuzk_core::backend::DeviceWitness,
        density: Option<&[u64]>,
        mode: cuzk_core::backend::MsmMode,
    ) -> Option<BackendResult<P::Curve>> {
        let w = w.handle::<WitnessOnDevice>()?;
        if w.backend != self as *const Self as usize || bases.len() < RESIDENT_FROM {
            return None;
        }
        self.witness_msm_resident(bases, w, density, mode).transpose()
    }

    /// The MSM over the device witness on resident bases; `Ok(None)` when the bases do not
    /// fit the resident budget.
    fn witness_msm_resident<P: GpuCurve>(
        &self,
        bases: &[P],
        w: &WitnessOnDevice,
        density: Option<&[u64]>,
        mode: cuzk_core::backend::MsmMode,
    ) -> BackendResult<Option<P::Curve>> {
        let selection = density.map(|d| self.selection(d, w.aux)).transpose()?;
        let n = selection.as_ref().map_or(w.aux, |s| s.count);
        check_lengths(bases.len(), n)?;
        let Some(r) = self.resident(bases)? else { return Ok(None) };
        // SAFETY: the witness buffer holds inputs + aux scalars; the aux start lies inside it.
        let d_aux: *const std::ffi::c_void = unsafe { w.buf.1.cast::<u8>().add(w.inputs * std::mem::size_of::<Scalar>()) }.cast();
        let sel = selection.as_ref().map_or(std::ptr::null(), |s| s.indices.1 as *const u32);
        let one = montgomery_one();
        let (mut ones, mut gen_bases, mut gen_scalars, mut general) =
            (P::RawProj::default(), std::ptr::null_mut(), std::ptr::null_mut(), 0usize);
        let split_s = self
            .device_call("witness split", |m, c| unsafe {
                // SAFETY: d_aux holds the aux (w.aux scalars) on this device, `sel` n indices
                // below w.aux, `r` n resident bases; the outputs are plain out-parameters.
                P::split(
                    r.handle,
                    d_aux,
                    sel,
                    n,
                    one.as_ptr(),
                    split_mode_code(mode),
                    &mut ones,
                    &mut gen_bases,
                    &mut gen_scalars,
                    &mut general,
                    m,
                    c,
                )
            })
            .map_err(dev_err)?;
        // Owned from here: freed on every path out.
        let gen_bases = (!gen_bases.is_null()).then(|| Resident { handle: gen_bases, free: P::free });
        let gen_scalars = (!gen_scalars.is_null()).then(|| DeviceBuf(self.dev, gen_scalars));
        let scalars = gen_scalars.as_ref().map_or(d_aux, |b| b.1 as *const std::ffi::c_void);
        let (sum, what) = match (&gen_bases, general) {
            (_, 0) => (P::from_raw(ones), "ones only"),
            (Some(gb), g) => (P::from_raw(ones) + self.msm_device_scalars::<P>(gb, scalars, g)?.0, "ones + general"),
            (None, g) => (self.msm_device_scalars::<P>(&r, scalars, g)?.0, "plain"),
        };
        log(format!("msm {} over the device witness ({what}: {general} general of {n}; split {:.1} ms)", P::NAME, split_s * 1e3), split_s);
        Ok(Some(sum))
    }

    /// The H MSM over H left on the device by the quotient (freed here), in pieces.
    fn msm_h_on_device(&self, r: &Resident, d_h: DeviceBuf, count: usize) -> BackendResult<blstrs::G1Projective> {
        let (sum, pieces, secs, driven) = self.msm_device_scalars::<G1Affine>(r, d_h.1, count)?;
        drop(d_h);
        log(format!("msm G1 h from device-resident scalars ({count}{}{})", piece_note(pieces), driver_note(driven)), secs);
        Ok(sum)
    }
}

impl MatVec for CudaBackend {
    /// On the device, downloaded (for checks and for callers that need a, b, c on the host).
    fn mat_vec(&self, m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> BackendResult<Evaluations> {
        m.check_witness(inputs, aux)?;
        let rows = m.rows();
        if rows < MATVEC_CPU_BELOW {
            return self.cpu.mat_vec(m, inputs, aux);
        }
        let pce = self.resident_pce(m)?;
        let (staged, pageable) = self.stage_witness(inputs, aux);
        let w = staged.as_ref().map_or(pageable.as_ptr(), |s| s.ptr as *const Scalar);
        let cap = rows.next_power_of_two();
        let (mut a, mut b, mut c) = (Vec::with_capacity(cap), Vec::with_capacity(cap), Vec::with_capacity(cap));
        let mut ms = [0f64; ffi::MATVEC_STAGES + 1];
        let p = |v: &mut Vec<Scalar>| v.as_mut_ptr() as *mut blst::blst_fr;
        let (pa, pb, pc) = (p(&mut a), p(&mut b), p(&mut c));
        // SAFETY: w holds inputs + aux scalars; a, b, c have room for `rows` values each.
        self.device_call("mat-vec", |msg, cap| unsafe {
            ffi::cuzk_matvec(pce.handle, w as *const blst::blst_fr, pa, pb, pc, ms.as_mut_ptr(), msg, cap)
        })
        .map_err(dev_err)?;
        self.give_back(staged);
        // SAFETY: the device wrote `rows` values into each.
        unsafe {
            a.set_len(rows);
            b.set_len(rows);
            c.set_len(rows);
        }
        for (stage, v) in ffi::MATVEC_QUOTIENT_STAGES.iter().take(ffi::MATVEC_STAGES).zip(ms) {
            log(*stage, v / 1e3);
        }
        log("mat-vec: download a, b, c", ms[ffi::MATVEC_STAGES] / 1e3);
        Ok(Evaluations { a, b, c })
    }
}

/// Each group's MSMs through the generic methods above.
macro_rules! cuda_msm {
    ($aff:ty, $proj:ty) => {
        impl Msm<$aff> for CudaBackend {
            fn msm(&self, bases: &[$aff], scalars: &[Scalar]) -> BackendResult<$proj> {
                self.msm_gpu(bases, scalars, true)
            }
            fn sum_selected(&self, bases: &[$aff], indices: &[u32]) -> BackendResult<$proj> {
                self.sum_gpu(bases, indices)
            }
            fn msm_of_device_witness(
                &self,
                bases: &[$aff],
                w: &cuzk_core::backend::DeviceWitness,
                density: Option<&[u64]>,
                mode: cuzk_core::backend::MsmMode,
            ) -> Option<BackendResult<$proj>> {
                self.witness_msm(bases, w, density, mode)
            }
            fn msm_split(&self, bases: &[$aff], scalars: &[Scalar]) -> BackendResult<$proj> {
                self.split_gpu(bases, scalars)
            }
        }
    };
}
cuda_msm!(G1Affine, blstrs::G1Projective);
cuda_msm!(G2Affine, blstrs::G2Projective);

fn kind_code(k: NttKind) -> i32 {
    match k {
        NttKind::Forward => 0,
        NttKind::Inverse => 1,
        NttKind::CosetForward => 2,
        NttKind::CosetInverse => 3,
    }
}

impl Ntt for CudaBackend {
    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> BackendResult<()> {
        let n = data.len();
        if !n.is_power_of_two() {
            return Err(BackendError::Input(format!("NTT of {n} values: not a power of two")));
        }
        domain_size(n)?;
        if n < NTT_CPU_BELOW {
            return self.cpu.ntt(data, kind);
        }
        let d = data.as_mut_ptr() as *mut blst::blst_fr;
        // SAFETY: n = 2^lg values in place.
        let secs = self
            .device_call("ntt", |m, c| unsafe { ffi::cuzk_ntt(self.dev, d, n.trailing_zeros(), kind_code(kind), m, c) })
            .map_err(dev_err)?;
        log(format!("ntt {kind:?} (2^{})", n.trailing_zeros()), secs);
        Ok(())
    }

    fn quotient(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> BackendResult<Vec<Scalar>> {
        let n = domain_size(a.len().max(b.len()).max(c.len()))?;
        if n < NTT_CPU_BELOW {
            return self.cpu.quotient(a, b, c);
        }
        let mut h = Vec::with_capacity(n - 1);
        self.quotient_on_device(&a, &b, &c, n, Some(h.spare_capacity_mut().as_mut_ptr() as *mut Scalar))?;
        // SAFETY: the device wrote all n − 1 values into the spare capacity.
        unsafe { h.set_len(n - 1) };
        Ok(h)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &str {
        &self.name
    }

    /// The H step is device time (the H MSM alone is ~1.1 s at 2^27) while the other MSMs
    /// start with seconds of host work (selection, ones/general split, gathers): overlapped,
    /// that host work hides behind the H MSM and the device calls queue on the device lock.
    fn overlap_h(&self) -> bool {
        true
    }

    /// With the witness handed over, the fused H step keeps a, b, c and H on the device and
    /// the side MSMs select and split there; without a resident budget no section is left out,
    /// so none falls back to the host's split (but sections too small to keep resident, below
    /// 2^16 points: bytes that do not matter to a budget).
    fn keeps_prover_vectors(&self) -> bool {
        self.hand_over_witness && self.resident_cache().report().budget_bytes.is_none()
    }

    fn resident_report(&self) -> cuzk_core::backend::ResidentReport {
        let bases = self.resident_cache().report();
        let slots = self.pce_slots();
        cuzk_core::backend::ResidentReport {
            matrices: slots.len(),
            matrix_bytes: slots.values().map(|p| p.bytes).sum(),
            pinned_host_bytes: self.pinned_bytes.load(std::sync::atomic::Ordering::Relaxed),
            ..bases
        }
    }

    fn holds_matrices(&self, m: &Matrices) -> bool {
        m.identity.is_some() && self.pce_slots().contains(&pce_key(m))
    }

    fn forget_bases(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> u64 {
        fn range<P>(b: &[P]) -> std::ops::Range<usize> {
            b.as_ptr() as usize..b.as_ptr() as usize + std::mem::size_of_val(b)
        }
        let mut cache = self.resident_cache();
        let (t1, s1) = (<G1Affine as GpuCurve>::TAG, std::mem::size_of::<G1Affine>());
        let (t2, s2) = (<G2Affine as GpuCurve>::TAG, std::mem::size_of::<G2Affine>());
        let g1: u64 = g1.iter().map(|b| cache.forget(t1, range(b), s1)).sum();
        g1 + g2.iter().map(|b| cache.forget(t2, range(b), s2)).sum::<u64>()
    }

    /// H never leaves the device: the quotient's output buffer is the H MSM's scalars.
    fn quotient_msm_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        h_bases: &[G1Affine],
    ) -> BackendResult<(blstrs::G1Projective, std::time::Duration)> {
        let n = domain_size(a.len().max(b.len()).max(c.len()))?;
        if n < NTT_CPU_BELOW || h_bases.len() < RESIDENT_FROM {
            return cuzk_core::backend::quotient_then_msm_h(self, a, b, c, h_bases);
        }
        check_lengths(h_bases.len(), n - 1)?;
        let Some(r) = self.resident(h_bases)? else {
            // H's bases do not fit the resident budget: H comes back to the host for its MSM.
            return cuzk_core::backend::quotient_then_msm_h(self, a, b, c, h_bases);
        };
        let t = Instant::now();
        let d_h = self.quotient_on_device(&a, &b, &c, n, None)?;
        let q = t.elapsed();
        drop((a, b, c));
        let h = self.msm_h_on_device(&r, DeviceBuf(self.dev, d_h), n - 1)?;
        Ok((h, q))
    }

    /// Only the witness travels: a, b, c are made in device memory from the resident
    /// matrices and go straight into the quotient, whose H stays for the H MSM.
    /// `witness_sent` is called once the witness is on the device (at the start on the small
    /// sizes that take the host path).
    fn matvec_quotient_msm_h(
        &self,
        m: &Matrices,
        inputs: &[Scalar],
        aux: &[Scalar],
        h_bases: &[G1Affine],
        witness_sent: &dyn Fn(Option<cuzk_core::backend::DeviceWitness>),
    ) -> BackendResult<(blstrs::G1Projective, std::time::Duration, std::time::Duration)> {
        m.check_witness(inputs, aux)?;
        let n = domain_size(m.rows())?;
        let r = if n < NTT_CPU_BELOW || m.rows() < MATVEC_CPU_BELOW || h_bases.len() < RESIDENT_FROM {
            None
        } else {
            check_lengths(h_bases.len(), n - 1)?;
            self.resident(h_bases)?
        };
        let Some(r) = r else {
            witness_sent(None);
            let t = Instant::now();
            let e = self.mat_vec(m, inputs, aux)?;
            let mv = t.elapsed();
            let (h, q) = self.quotient_msm_h(e.a, e.b, e.c, h_bases)?;
            return Ok((h, mv, q));
        };
        let pce = self.resident_pce(m)?;
        let zinv = zinv(n)?;
        let t = Instant::now();
        let (d_w, stage_s, upload_s) = self.upload_witness_staged(inputs, aux).map_err(dev_err)?;
        let sent_s = t.elapsed().as_secs_f64(); // the copy and the upload overlap: not their sum
        let d_w_ptr = d_w.1 as *const blst::blst_fr;
        let witness = cuzk_core::backend::DeviceWitness::new(WitnessOnDevice {
            buf: d_w,
            backend: self as *const Self as usize,
            inputs: inputs.len(),
            aux: aux.len(),
        });
        // The other MSMs read their scalars from it; it stays on the device until they end.
        witness_sent(self.hand_over_witness.then(|| witness.clone()));
        let mut ms = [0f64; ffi::MATVEC_QUOTIENT_STAGES.len()];
        let mut keep: *mut std::ffi::c_void = std::ptr::null_mut();
        {
            // SAFETY: d_w_ptr holds inputs + aux scalars on this device (`witness` keeps it past
            // this call); ms has one slot per stage.
            self.device_call("mat-vec + quotient", |msg, cap| unsafe {
                ffi::cuzk_matvec_quotient(
                    pce.handle,
                    d_w_ptr,
                    n.trailing_zeros(),
                    &zinv as *const Scalar as *const blst::blst_fr,
                    &mut keep,
                    ms.as_mut_ptr(),
                    msg,
                    cap,
                )
            })
            .map_err(dev_err)?;
        }
        drop(witness);
        log("mat-vec: stage witness into pinned memory (host copy, beside the upload)", stage_s);
        log(format!("mat-vec: upload witness in pieces of {} KiB (separate calls)", self.witness_piece >> 10), upload_s);
        for (stage, v) in ffi::MATVEC_QUOTIENT_STAGES.iter().zip(ms) {
            log(*stage, v / 1e3);
        }
        let mv_ms: f64 = ms[..ffi::MATVEC_STAGES].iter().sum();
        let q_ms: f64 = ms[ffi::MATVEC_STAGES..].iter().sum();
        let h = self.msm_h_on_device(&r, DeviceBuf(self.dev, keep), n - 1)?;
        let secs = std::time::Duration::from_secs_f64;
        Ok((h, secs(sent_s + mv_ms / 1e3), secs(q_ms / 1e3)))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use cuzk_core::backend::points::random_points;
    use ff::Field;
    use rand::SeedableRng;

    use super::*;

    /// A density's device selection is every aux index whose bit is set, ascending, none at
    /// or past the aux's length (a density's last word may carry bits there), and the hash
    /// tells densities apart that differ in one bit.
    #[test]
    fn a_selection_lists_the_set_bits_below_the_aux_in_order() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let density: Vec<u64> = (0..9).map(|_| rand::Rng::gen::<u64>(&mut rng)).collect();
        for aux in [0, 1, 63, 64, 65, 500, 9 * 64, 9 * 64 + 100] {
            let naive: Vec<u32> = (0..aux.min(9 * 64)).filter(|&i| density[i / 64] >> (i % 64) & 1 == 1).map(|i| i as u32).collect();
            assert_eq!(selected_indices(&density, aux), naive, "aux {aux}");
        }
        let mut other = density.clone();
        other[4] ^= 1 << 17;
        assert_ne!(density_hash(&density), density_hash(&other));
    }

    /// Every piece of the staged upload holds exactly its range of inputs-then-aux, for pieces
    /// inside the inputs, across their end, and inside the aux, with a short last piece.
    #[test]
    fn witness_pieces_cover_the_inputs_then_the_aux() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        for (ni, na, piece) in [(7usize, 40usize, 16usize), (20, 13, 8), (1, 0, 4), (3, 30, 1), (5, 5, 100)] {
            let inputs: Vec<Scalar> = (0..ni).map(|_| Scalar::random(&mut rng)).collect();
            let aux: Vec<Scalar> = (0..na).map(|_| Scalar::random(&mut rng)).collect();
            let want = [inputs.as_slice(), aux.as_slice()].concat();
            let mut got = vec![Scalar::ZERO; ni + na];
            for (k, dst) in got.chunks_mut(piece).enumerate() {
                fill_witness_piece(dst, k * piece, &inputs, &aux);
            }
            assert!(got == want, "{ni} inputs, {na} aux, pieces of {piece}");
        }
    }

    /// The backend on device 0 with `budget`, or `None` after saying in the test output that
    /// `test` was SKIPPED and why (no device, or no CUDA build).
    fn backend_or_skipped(test: &str, budget: Option<u64>) -> Option<CudaBackend> {
        CudaBackend::new(0, budget, crate::GpuOptions::default().urgent_grace())
            .map_err(|e| writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {e} ***"))
            .ok()
    }

    /// On a GPU, under a resident budget of one 2^16-point G1 section: a second section evicts
    /// the first, a section over the budget is streamed with the call, every result is the
    /// CPU's, and forgetting a section frees its device bytes. Without a device it passes and
    /// says SKIPPED in the output.
    #[test]
    fn a_resident_budget_evicts_the_least_recently_used_and_streams_what_cannot_fit() {
        let n = RESIDENT_FROM;
        let one = (n * std::mem::size_of::<G1Affine>()) as u64;
        let Some(b) = backend_or_skipped("a_resident_budget_evicts_the_least_recently_used", Some(one)) else { return };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let scalars: Vec<Scalar> = (0..2 * n).map(|_| Scalar::random(&mut rng)).collect();
        let (first, second, big): (Vec<G1Affine>, Vec<G1Affine>, Vec<G1Affine>) =
            (random_points(n, 1), random_points(n, 2), random_points(2 * n, 3));
        for (bases, sections, evictions, streamed) in [(&first, 1, 0, 0), (&second, 1, 1, 0), (&big, 1, 1, 1)] {
            let s = &scalars[..bases.len()];
            let want = Msm::<G1Affine>::msm(&b.cpu, bases, s).unwrap();
            assert_eq!(Msm::<G1Affine>::msm(&b, bases, s).unwrap(), want);
            let r = b.resident_report();
            assert_eq!((r.sections, r.evictions, r.streamed), (sections, evictions, streamed), "{r:?}");
            assert!(r.bytes <= one);
        }
        assert_eq!(b.forget_bases(&[&second], &[]), one);
        assert_eq!(b.resident_report().bytes, 0);
        // A split MSM over the bases that do not fit: the ones' sum streams them up in chunks
        // (here of 1024 points, so a sum crosses 128 chunks and a partial last word), the
        // general part takes the host-bases MSM in pieces; both against the CPU.
        let mut b = b.with_msm_piece(RESIDENT_FROM);
        b.stream_chunk = 1000;
        let streamed = b.resident_report().streamed;
        let mixed: Vec<Scalar> = (0..2 * n)
            .map(|i| match i % 7 {
                0 | 3 => Scalar::ZERO,
                1 | 4 | 5 => Scalar::ONE,
                _ => scalars[i],
            })
            .collect();
        for (bases, scalars) in [(&big, &mixed[..]), (&big, &mixed[..2 * n - 77])] {
            let bases = &bases[..scalars.len()];
            let want = Msm::<G1Affine>::msm(&b.cpu, bases, scalars).unwrap();
            assert_eq!(Msm::<G1Affine>::msm_split(&b, bases, scalars).unwrap(), want, "{} points", scalars.len());
            assert_eq!(Msm::<G1Affine>::msm(&b, bases, scalars).unwrap(), want, "{} points, plain", scalars.len());
        }
        assert_eq!(b.resident_report().streamed, streamed + 4, "each call streamed the bases");
    }

    /// On a GPU: an MSM with resident bases, a panic while the device lock is held, then the
    /// same MSM again. The lock recovers (once), what was resident is uploaded again, and the
    /// result is still the CPU's. Without a device it passes and says SKIPPED in the output.
    #[test]
    fn a_panic_under_the_device_lock_leaves_the_device_serving() {
        let Some(b) = backend_or_skipped("a_panic_under_the_device_lock_leaves_the_device_serving", None) else { return };
        let n = RESIDENT_FROM;
        let bases: Vec<G1Affine> = random_points(n, 3);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let want = Msm::<G1Affine>::msm(&b.cpu, &bases, &scalars).unwrap();
        assert_eq!(Msm::<G1Affine>::msm(&b, &bases, &scalars).unwrap(), want);
        // One guard at a time: `resident_cache()` takes a lock, so the key is read under its own
        // guard before the lookup takes the next one (nesting them deadlocked this test).
        let key = |b: &CudaBackend| b.resident_cache().keys_by_use().first().copied().expect("the bases are resident");
        let first_key = key(&b);
        let first = b.resident_cache().get(&first_key).expect("the bases are resident");
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _g = b.device();
            panic!("injected panic under the device lock");
        }));
        assert!(r.is_err());
        assert_eq!(Msm::<G1Affine>::msm(&b, &bases, &scalars).unwrap(), want, "the device must serve after the panic");
        assert_eq!(b.lock.recoveries(), 1);
        let second_key = key(&b);
        let second = b.resident_cache().get(&second_key).expect("the bases are resident again");
        assert!(!Arc::ptr_eq(&first, &second), "what was resident when the panic hit must be uploaded again");
    }

    /// On a GPU: the device-lock waits of an MSM made at CRITICAL are counted under CRITICAL
    /// and under nothing else, once taken they are gone, and a wait for a holder is counted
    /// as at least the time it held the lock. Without a device it passes and says SKIPPED.
    #[test]
    fn device_lock_waits_are_counted_under_the_callers_priority() {
        let Some(b) = backend_or_skipped("device_lock_waits_are_counted_under_the_callers_priority", None) else { return };
        let n = RESIDENT_FROM;
        let bases: Vec<G1Affine> = random_points(n, 5);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        drop(take_waits(WaitedFor::Device));
        {
            let _p = Priority::Critical.enter();
            Msm::<G1Affine>::msm(&b, &bases, &scalars).unwrap();
        }
        let waits = take_waits(WaitedFor::Device);
        assert_eq!(waits.len(), 1, "{waits:?}");
        assert_eq!(waits[0].0, Priority::Critical);
        assert!(waits[0].1.acquisitions >= 1, "{waits:?}");
        assert!(take_waits(WaitedFor::Device).is_empty(), "taken waits must be gone");
        // A Normal call waiting while another thread holds the device for 200 ms.
        let held = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _g = b.device();
                held.wait();
                std::thread::sleep(std::time::Duration::from_millis(200));
            });
            held.wait();
            drop(b.device());
        });
        let waits = take_waits(WaitedFor::Device);
        let normal = waits.iter().find(|(p, _)| *p == Priority::Normal).expect("normal waits").1;
        assert_eq!(normal.acquisitions, 2, "{waits:?}");
        assert!(normal.max_seconds >= 0.15 && normal.seconds >= normal.max_seconds, "{waits:?}");
        // Holds are counted for device calls: the CRITICAL MSM above held the device a while.
        assert!(waits.iter().all(|(p, w)| *p != Priority::Critical || w.held_seconds > 0.0), "{waits:?}");
    }

    /// On a GPU: with the device filled so that an NTT's buffer fits only once a resident
    /// section is gone, the NTT still runs — the out-of-memory retry drops the section (no call
    /// holds it) and tries again — and its result is the CPU's. Without a device it passes and
    /// says SKIPPED in the output.
    #[test]
    fn a_call_out_of_device_memory_evicts_unheld_resident_bases_and_runs() {
        let Some(b) = backend_or_skipped("a_call_out_of_device_memory_evicts", None) else { return };
        // A resident section of 2^20 G1 points (96 MiB), made by an MSM.
        let n = 1 << 20;
        let bases: Vec<G1Affine> = random_points(n, 9);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        assert_eq!(Msm::<G1Affine>::msm(&b, &bases, &scalars).unwrap(), Msm::<G1Affine>::msm(&b.cpu, &bases, &scalars).unwrap());
        assert_eq!(b.resident_report().sections, 1);
        let data: Vec<Scalar> = (0..1usize << 21).map(|_| Scalar::random(&mut rng)).collect();
        // One small NTT first: sppark makes its per-device NTT tables at the first NTT. It must
        // be small: sppark's buffers come from CUDA's stream-ordered pool, which keeps a freed
        // buffer cached, so a first NTT of the full size left its 64 MiB there and the NTT below
        // ran in it without any eviction (H100, 2026-12-06, second run of this test).
        Ntt::ntt(&b, &mut data[..NTT_CPU_BELOW].to_vec(), NttKind::Forward).unwrap();
        // Leave 16 MiB free: a 2^21-value NTT (64 MiB) fails until the 96 MiB section goes.
        let mut free = 0usize;
        call("free bytes", |m, c| unsafe { ffi::cuzk_device_free_bytes(b.dev, &mut free, m, c) }).unwrap();
        let mut hog: *mut std::ffi::c_void = std::ptr::null_mut();
        let hog_bytes = free.saturating_sub(16 << 20);
        call("hog", |m, c| unsafe { ffi::cuzk_device_alloc(b.dev, hog_bytes, &mut hog, m, c) }).unwrap();
        let hog = DeviceBuf(b.dev, hog);
        let (mut ours, mut cpu) = (data.clone(), data);
        let r = Ntt::ntt(&b, &mut ours, NttKind::Forward);
        drop(hog);
        r.unwrap();
        Ntt::ntt(&b.cpu, &mut cpu, NttKind::Forward).unwrap();
        assert!(ours == cpu, "the NTT after the retry differs from the CPU's");
        let report = b.resident_report();
        assert_eq!((report.sections, report.evictions), (0, 1), "{report:?}");
    }

    /// On a GPU: the pinned staging buffers are reported while they live, in use or kept for
    /// reuse, and no longer once freed (the figure the pipeline's memory model adds to the
    /// static host memory).
    #[test]
    fn pinned_staging_is_reported_while_it_lives() {
        let Some(b) = backend_or_skipped("pinned_staging_is_reported_while_it_lives", None) else { return };
        let pinned = |b: &CudaBackend| b.resident_report().pinned_host_bytes;
        assert_eq!(pinned(&b), 0);
        let s = b.take_staging(1000).expect("pinned memory");
        assert_eq!(pinned(&b), 32_000);
        b.give_back(Some(s));
        assert_eq!(pinned(&b), 32_000, "kept for reuse");
        let again = b.take_staging(10).expect("the kept buffer");
        assert_eq!((again.bytes, pinned(&b)), (32_000, 32_000), "the kept buffer is reused, not another made");
        drop(again);
        assert_eq!(pinned(&b), 0);
    }
}
