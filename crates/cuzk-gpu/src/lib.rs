//! `cuzk-gpu` owns the CUDA backend: Pippenger MSMs (G1 and G2; G1 from 2^21 points through
//! cuzk's own driver over sppark's kernels, [`MsmKernel`]) and sppark's NTT behind
//! `cuzk-core`'s `Msm`/`Ntt` traits, with the SRS bases kept resident in device memory across
//! proofs, the 0/1 bitmap sums done by batched additions on the device, and the Groth16
//! quotient computed with a, b and c resident through every transform. CUDA failures come
//! back as typed errors. Built without feature `cuda` (the default, and what CI tests), the
//! crate still compiles and [`open`] answers [`GpuError::NotBuilt`]; circuits and pipelines
//! are not its business. Its locks ([`lock::DeviceLock`]) survive a panicked holder, so a
//! panic during one proof never disables the device for the next.
//!
//! # Example
//!
//! Proving on device 0 when this build has CUDA and the machine a device, else on the CPU:
//! either backend computes the same transforms and MSMs behind `cuzk-core`'s traits.
//!
//! ```
//! use cuzk_core::backend::cpu::CpuBackend;
//! use cuzk_core::backend::{Backend, Ntt, NttKind};
//! use cuzk_core::Scalar;
//! use cuzk_gpu::GpuError;
//!
//! let backend: Box<dyn Backend> = match cuzk_gpu::open(0) {
//!     Ok(gpu) => gpu,
//!     Err(e) => {
//!         eprintln!("proving on the CPU: {e}");
//!         Box::new(CpuBackend::new())
//!     }
//! };
//! if !cuzk_gpu::built_with_cuda() {
//!     // The default build: no device is ever listed or opened.
//!     assert!(matches!(cuzk_gpu::devices(), Err(GpuError::NotBuilt)));
//!     assert_eq!(backend.name(), "cpu");
//! }
//! let data: Vec<Scalar> = (1..=8u64).map(Scalar::from).collect();
//! let mut v = data.clone();
//! backend.ntt(&mut v, NttKind::Forward)?;
//! backend.ntt(&mut v, NttKind::Inverse)?;
//! assert_eq!(v, data);
//! # Ok::<(), cuzk_core::backend::BackendError>(())
//! ```

#![warn(missing_docs)]

// sppark's own device table (select_gpu, all_gpus) is in its native library: keep the crate
// linked although no Rust item of it is used.
#[cfg(feature = "cuda")]
extern crate sppark;

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
mod ffi;
pub mod lock;
pub mod residency;

pub use lock::DeviceLock;

use cuzk_core::backend::Backend;

/// What can go wrong opening or using a GPU.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// This build has no CUDA backend (feature `cuda` was off).
    #[error("this cuzk was built without cuda (rebuild with `cargo xtask build --cuda`)")]
    NotBuilt,
    /// The CUDA runtime found no device (or could not be asked: no driver); the runtime's
    /// message.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// The device index asked for is not below the number of devices present.
    #[error("CUDA device {device} does not exist ({count} present)")]
    BadDevice {
        /// The index asked for.
        device: usize,
        /// How many devices the runtime reports.
        count: usize,
    },
    /// A CUDA call failed.
    #[error("CUDA error {code} in {what}: {message}")]
    Cuda {
        /// The operation (the CUDA runtime call or cuzk kernel) that failed.
        what: &'static str,
        /// The CUDA error code (`cudaError_t`).
        code: i32,
        /// The runtime's description of the error.
        message: String,
    },
}

/// One CUDA device as the runtime reports it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    /// The CUDA device index, as [`open`] takes it.
    pub index: usize,
    /// The device name with its compute capability and SM count, e.g.
    /// `NVIDIA H200 (sm_90, 132 SMs)`.
    pub name: String,
    /// Total device memory in bytes.
    pub memory_bytes: u64,
}

/// Whether this build has the CUDA backend compiled in.
pub const fn built_with_cuda() -> bool {
    cfg!(feature = "cuda")
}

/// The CUDA devices present, in index order: [`GpuError::NotBuilt`] without CUDA,
/// [`GpuError::NoDevice`] when the runtime reports none.
pub fn devices() -> Result<Vec<DeviceInfo>, GpuError> {
    #[cfg(feature = "cuda")]
    {
        cuda::devices()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(GpuError::NotBuilt)
    }
}

/// Opens the CUDA backend on `device` (an index into [`devices`]): [`GpuError::NotBuilt`]
/// without CUDA, [`GpuError::BadDevice`] for an index past the devices present.
pub fn open(device: usize) -> Result<Box<dyn Backend>, GpuError> {
    open_with(device, &GpuOptions::default())
}

pub use cuzk_core::device_lock::DEFAULT_URGENT_GRACE_MS;

/// How a CUDA backend uses its device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuOptions {
    /// Device bytes of SRS sections kept between calls (`None`: as many as the device holds).
    /// When a section does not fit, the least recently used sections no running call holds
    /// are dropped; a section larger than the budget travels with each call instead.
    pub resident_budget: Option<u64>,
    /// MSMs over resident bases run in pieces of at most 2^k points, one device call each, so
    /// that a more urgent job's calls wait for one piece rather than a whole 2^27-point MSM
    /// (`None`: one call per MSM).
    pub msm_piece_log2: Option<u32>,
    /// How long, in milliseconds, the device stays reserved for an urgent job (WinningPoSt,
    /// WindowPoSt) after each of its calls, so that its next call, after some host work, does
    /// not queue behind a bulk partition's call (`cuzk_core::device_lock`'s urgent grace;
    /// `None`: [`DEFAULT_URGENT_GRACE_MS`]). Longer holds more of an urgent job's calls
    /// together under CPU contention, at the price of bulk calls idling the device meanwhile.
    pub urgent_grace_ms: Option<u32>,
    /// Which Pippenger runs the G1 MSMs over resident bases (H, and L, A, B in plain mode).
    pub msm_kernel: MsmKernel,
    /// The smallest MSM (piece), as 2^k points, that [`MsmKernel::Cuzk`] hands to cuzk's
    /// driver; smaller ones stay with sppark (`None`: [`DRIVER_FROM_LOG2`]). For tests that
    /// run the driver at small sizes.
    pub msm_driver_from_log2: Option<u32>,
    /// Where the side MSMs (L, A, B in G1 and G2) get their scalars (issue 23).
    pub side_msms: SideMsms,
}

/// Where a CUDA backend's side MSMs (L, A, B in G1 and G2) get their scalars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SideMsms {
    /// From the witness the backend keeps on the device after the mat-vec's upload: selected
    /// through each density's index list, split into ones and general scalars and gathered
    /// there, one device call per MSM. The default: on an H100 the 32 GiB partition proves in
    /// the same bytes 6–10 % faster than with [`SideMsms::Host`], and the pipeline spends 40 %
    /// less CPU time (RESULTS, 2026-12-07).
    #[default]
    Device,
    /// Selected and split on the host, the general bases gathered there (the earlier layout,
    /// kept as the reference and for backends that keep no witness).
    Host,
}

impl SideMsms {
    /// Every place, in the order errors list them.
    pub const ALL: [SideMsms; 2] = [SideMsms::Device, SideMsms::Host];

    /// The name config files and `--side-msms` take.
    pub fn name(self) -> &'static str {
        match self {
            SideMsms::Device => "device",
            SideMsms::Host => "host",
        }
    }

    /// The place a name gives, or an error that lists the names.
    pub fn parse(name: &str) -> Result<SideMsms, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| format!("`{name}` is not a place for the side MSMs (device or host)"))
    }
}

/// Below 2^21 points cuzk's driver measured no faster than sppark (RESULTS, 2026-12-07).
pub const DRIVER_FROM_LOG2: u32 = 21;

/// The Pippenger implementation for G1 MSMs over resident bases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MsmKernel {
    /// cuzk's own driver over sppark's kernels ([`MsmPlan::for_points`]), 10–15 % faster
    /// from 2^21 points on the H100; sppark below [`GpuOptions::msm_driver_from_log2`].
    #[default]
    Cuzk,
    /// sppark's `msm_t` for every size (the reference, and the fallback).
    Sppark,
}

impl MsmKernel {
    /// The name config files and `--msm-kernel` take.
    pub fn name(self) -> &'static str {
        match self {
            MsmKernel::Cuzk => "cuzk",
            MsmKernel::Sppark => "sppark",
        }
    }

    /// The kernel a name gives, or an error that lists the names.
    pub fn parse(name: &str) -> Result<MsmKernel, String> {
        match name {
            "cuzk" => Ok(MsmKernel::Cuzk),
            "sppark" => Ok(MsmKernel::Sppark),
            _ => Err(format!("`{name}` is not an MSM kernel (cuzk or sppark)")),
        }
    }
}

impl GpuOptions {
    /// The smallest piece cuzk's driver takes, in points (`None`: sppark for every size).
    pub fn driver_from(&self) -> Option<usize> {
        match self.msm_kernel {
            MsmKernel::Sppark => None,
            MsmKernel::Cuzk => Some(1usize.checked_shl(self.msm_driver_from_log2.unwrap_or(DRIVER_FROM_LOG2)).unwrap_or(usize::MAX)),
        }
    }

    /// The urgent grace in force.
    pub fn urgent_grace(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.urgent_grace_ms.unwrap_or(DEFAULT_URGENT_GRACE_MS).into())
    }
}

/// How long the threads of one priority waited for a device lock (see [`take_device_waits`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LockWaits {
    /// Times the lock was taken.
    pub acquisitions: u64,
    /// Seconds spent waiting for it, all acquisitions together.
    pub seconds: f64,
    /// The longest single wait, in seconds.
    pub max_seconds: f64,
    /// Seconds the device calls of this priority held the lock, all together.
    pub held_seconds: f64,
    /// The longest single device call of this priority, lock held, in seconds: what a more
    /// urgent call arriving during it may have to wait.
    pub max_held_seconds: f64,
}

impl LockWaits {
    /// No acquisition yet.
    pub const NONE: LockWaits = LockWaits { acquisitions: 0, seconds: 0.0, max_seconds: 0.0, held_seconds: 0.0, max_held_seconds: 0.0 };

    /// Both records as one (counts and seconds added, maxima kept).
    pub fn merged(self, other: LockWaits) -> LockWaits {
        LockWaits {
            acquisitions: self.acquisitions + other.acquisitions,
            seconds: self.seconds + other.seconds,
            max_seconds: self.max_seconds.max(other.max_seconds),
            held_seconds: self.held_seconds + other.held_seconds,
            max_held_seconds: self.max_held_seconds.max(other.max_held_seconds),
        }
    }
}

/// [`open`] with `options`.
pub fn open_with(device: usize, options: &GpuOptions) -> Result<Box<dyn Backend>, GpuError> {
    #[cfg(feature = "cuda")]
    {
        let mut b = cuda::CudaBackend::new(device, options.resident_budget, options.urgent_grace())?;
        if let Some(k) = options.msm_piece_log2 {
            b = b.with_msm_piece(1usize.checked_shl(k).unwrap_or(usize::MAX));
        }
        Ok(Box::new(b.with_driver_from(options.driver_from()).with_witness_hand_over(options.side_msms == SideMsms::Device)))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (device, options);
        Err(GpuError::NotBuilt)
    }
}

/// The quotient's transforms as the stage log ([`take_stage_log`]) names them: six NTTs of the
/// domain size, each timed on the device with CUDA events.
pub const QUOTIENT_TRANSFORM_STAGES: [&str; 6] =
    ["quotient: a intt", "quotient: a coset ntt", "quotient: b intt", "quotient: b coset ntt", "quotient: c intt", "quotient: coset intt"];

/// The quotient's pointwise steps as the stage log names them: a·b, then (a·b − c)/Z with the
/// final bit reversal.
pub const QUOTIENT_POINTWISE_STAGES: [&str; 2] = ["quotient: a*b", "quotient: (-c)/z + bit reversal"];

/// A G1 MSM's times on a device from [`time_g1_msm`]: seconds per timed call each way the
/// prover runs it, and each way's result.
#[derive(Clone, Debug)]
pub struct MsmTimes {
    /// Scalars read from host memory and uploaded within each call (the A, B and L MSMs).
    pub host_scalars_s: Vec<f64>,
    /// Scalars already in device memory (the H MSM, whose scalars the quotient leaves there).
    pub device_scalars_s: Vec<f64>,
    /// The last host-scalars call's result.
    pub host_result: cuzk_core::G1Projective,
    /// The last device-scalars call's result.
    pub device_result: cuzk_core::G1Projective,
}

/// A setting of cuzk's own Pippenger driver (issue 24): signed windows of `window` bits
/// (sppark picks at most 18), the points processed in `chunks` chunks (more chunks, less
/// device memory for digits and sort; sppark uses 2^(lg 1.5n − w − 6); 0: the driver picks
/// the fewest, in powers of two, whose working memory fits half the free device memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MsmPlan {
    /// Window width in bits.
    pub window: u32,
    /// Chunks the points are processed in, one after another (0: the driver picks).
    pub chunks: u32,
}

impl MsmPlan {
    /// The narrowest window the driver takes (sppark's narrowest).
    pub const MIN_WINDOW: u32 = 10;
    /// The widest (sppark's sort handles at most 26 bucket bits; buckets alone are
    /// 2^(w−1) × 192 B per window).
    pub const MAX_WINDOW: u32 = 26;
    /// What a valid plan is, for error messages.
    pub const RULE: &'static str = "the window must be 10..=26 bits";

    /// Whether the driver accepts this plan.
    pub fn is_valid(&self) -> bool {
        (Self::MIN_WINDOW..=Self::MAX_WINDOW).contains(&self.window)
    }

    /// The prover's plan for an MSM of `n` points: the fastest window measured for that size
    /// on the H100 (docs/RESULTS.md, "cuzk's own Pippenger driver beside sppark": 16 bits up
    /// to 2^23 points, 17 at 2^24–2^25, 20 from 2^26), the chunks left to the driver.
    pub fn for_points(n: usize) -> MsmPlan {
        let lg = n.max(1).next_power_of_two().trailing_zeros();
        let window = match lg {
            0..=23 => 16,
            24..=25 => 17,
            _ => 20,
        };
        MsmPlan { window, chunks: 0 }
    }
}

/// The driver's times for one plan from [`time_g1_msm_windowed`].
#[derive(Clone, Debug)]
pub struct WindowedMsmTimes {
    /// The plan timed.
    pub plan: MsmPlan,
    /// Device bytes the driver allocates for its buckets, digits and sort (bases and scalars
    /// not counted).
    pub device_bytes: u64,
    /// Seconds per timed call.
    pub runs_s: Vec<f64>,
    /// Per timed call, milliseconds in each of [`MSM_PHASES`].
    pub phases_ms: Vec<[f64; 4]>,
    /// The last call's result.
    pub result: cuzk_core::G1Projective,
}

/// The phases [`WindowedMsmTimes::phases_ms`] holds, in order: digits (breakdown and sort),
/// bucket accumulation, the buckets reduced to 2^11 segment sums per window (device time
/// from CUDA events), and the host's combination of the segments and windows that the next
/// chunk's kernels did not hide.
pub const MSM_PHASES: [&str; 4] = ["digits", "accumulate", "segment sums", "host combine"];

/// The arithmetic ceilings of the G1 MSM's accumulation on a device, from [`msm_ceilings`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct MsmCeilings {
    /// Fp multiplications per second (four independent chains per thread, every SM busy).
    pub fp_mul_per_s: f64,
    /// Fr multiplications per second, the same way (the NTT butterfly's arithmetic).
    pub fr_mul_per_s: f64,
    /// Per batch size, XYZZ against batched affine additions.
    pub batches: Vec<CeilingBatch>,
}

/// One batch size's additions per second each way.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CeilingBatch {
    /// Accumulators per thread, which share one inversion per round in the affine way.
    pub batch: u32,
    /// XYZZ mixed additions (sppark's bucket step) per second, one bucket chain at a time.
    pub xyzz_adds_per_s: f64,
    /// Affine additions per second, `batch` of them per thread sharing one inversion.
    pub affine_adds_per_s: f64,
    /// Whether both ways' sums of the same additions are equal.
    pub sums_agree: bool,
}

/// Measures on `device`, over `points` (random, resident for the run): Fp multiplications per
/// second, and for each batch size the XYZZ mixed additions and the affine additions batched
/// with Montgomery's inversion trick per second, each thread adding `rounds` points to each of
/// its accumulators (issue 24's stage 4a gate: batch-affine accumulation is worth building only
/// if it adds ≥ 1.35× as fast). Errors name a missing build or device, or too few points.
pub fn msm_ceilings(
    device: usize,
    points: &[cuzk_core::G1Affine],
    rounds: u32,
    batches: &[u32],
) -> Result<MsmCeilings, cuzk_core::backend::BackendError> {
    #[cfg(feature = "cuda")]
    {
        cuda::msm_ceilings(device, points, rounds, batches).map_err(|e| cuzk_core::backend::BackendError::Device(e.to_string()))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (device, points, rounds, batches);
        Err(cuzk_core::backend::BackendError::Device(GpuError::NotBuilt.to_string()))
    }
}

/// Σ scalarsᵢ·basesᵢ in G1 on `device` through cuzk's own Pippenger driver for each of
/// `plans`, the bases resident and the scalars in device memory (uploaded once), `runs`
/// timed calls each after an untimed one (`runs` = 0 gives each plan's result alone): for
/// `cuzk bench msm --impl cuzk` and the driver's conformance tests. Errors name a plan outside
/// [`MsmPlan::RULE`], a missing build or device, or a failed CUDA call.
pub fn time_g1_msm_windowed(
    device: usize,
    options: &GpuOptions,
    bases: &[cuzk_core::G1Affine],
    scalars: &[cuzk_core::Scalar],
    plans: &[MsmPlan],
    runs: usize,
) -> Result<Vec<WindowedMsmTimes>, cuzk_core::backend::BackendError> {
    if let Some(bad) = plans.iter().find(|p| !p.is_valid()) {
        return Err(cuzk_core::backend::BackendError::Device(format!("{bad:?}: {}", MsmPlan::RULE)));
    }
    #[cfg(feature = "cuda")]
    {
        let b = cuda::CudaBackend::new(device, options.resident_budget, options.urgent_grace())
            .map_err(|e| cuzk_core::backend::BackendError::Device(e.to_string()))?;
        b.time_g1_msm_windowed(bases, scalars, plans, runs)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (device, options, bases, scalars, plans, runs);
        Err(cuzk_core::backend::BackendError::Device(GpuError::NotBuilt.to_string()))
    }
}

/// Times Σ scalarsᵢ·basesᵢ in G1 on `device` with its bases resident (uploaded before any
/// timing), `runs` times each way after one untimed call each, through sppark's `msm_t` only
/// (the backend made here has no driver: the reference `bench msm` compares against). Errors
/// name a missing build or device, bases that do not fit, or a failed CUDA call.
pub fn time_g1_msm(
    device: usize,
    options: &GpuOptions,
    bases: &[cuzk_core::G1Affine],
    scalars: &[cuzk_core::Scalar],
    runs: usize,
) -> Result<MsmTimes, cuzk_core::backend::BackendError> {
    #[cfg(feature = "cuda")]
    {
        let b = cuda::CudaBackend::new(device, options.resident_budget, options.urgent_grace())
            .map_err(|e| cuzk_core::backend::BackendError::Device(e.to_string()))?;
        b.time_g1_msm(bases, scalars, runs)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (device, options, bases, scalars, runs);
        Err(cuzk_core::backend::BackendError::Device(GpuError::NotBuilt.to_string()))
    }
}

/// Per-stage device times of the calls made so far as (stage, seconds), taken and reset, for
/// benchmarks; always empty without CUDA.
pub fn take_stage_log() -> Vec<(String, f64)> {
    #[cfg(feature = "cuda")]
    {
        cuda::take_log()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Vec::new()
    }
}

/// One device call of a CUDA backend: the device, the call, and when it held the device lock
/// (the call's kernels and copies run inside that span; waits for the lock are outside it).
#[derive(Clone, Copy, Debug)]
pub struct DeviceCall {
    /// The CUDA device index.
    pub device: usize,
    /// The call (e.g. "msm", "quotient", "mat-vec + quotient").
    pub what: &'static str,
    /// When the call took the device lock.
    pub start: std::time::Instant,
    /// When it let it go.
    pub end: std::time::Instant,
}

/// The device calls of every CUDA backend in this process since the last take (the latest
/// few thousand), taken and reset: a trace's GPU lanes. Always empty without CUDA.
pub fn take_device_calls() -> Vec<DeviceCall> {
    #[cfg(feature = "cuda")]
    {
        cuda::take_calls()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Vec::new()
    }
}

/// Which lock of a CUDA backend a record counts (see [`take_device_waits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitedFor {
    /// The device lock, taken once per device call (its holds are the calls' device time).
    Device = 0,
    /// The resident matrices' lock, taken once per device mat-vec (its holds include the
    /// check and upload of a circuit's matrices when they were not resident).
    Matrices = 1,
}

/// How long the CUDA backends' calls waited for `lock` since the last take, and held it, by the
/// priority of the job that waited (levels with no acquisition left out), taken and reset, for
/// benchmarks: a WinningPoSt's waits under load are the time it lost to bulk work. Always
/// empty without CUDA.
pub fn take_device_waits(lock: WaitedFor) -> Vec<(cuzk_core::priority::Priority, LockWaits)> {
    #[cfg(feature = "cuda")]
    {
        cuda::take_waits(lock)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = lock;
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(not(feature = "cuda"))]
    fn without_cuda_open_says_so() {
        let e = super::open(0).err().expect("a build without cuda cannot open a GPU");
        assert!(matches!(e, super::GpuError::NotBuilt));
        assert!(e.to_string().contains("built without cuda"), "{e}");
        assert!(matches!(super::devices(), Err(super::GpuError::NotBuilt)));
    }

    #[test]
    fn the_provers_plan_follows_the_measured_best_window_and_sppark_stays_selectable() {
        use super::{GpuOptions, MsmKernel, MsmPlan};
        let w = |lg: u32| MsmPlan::for_points(1 << lg).window;
        assert_eq!([w(20), w(23), w(24), w(25), w(26), w(27)], [16, 16, 17, 17, 20, 20]);
        assert_eq!(MsmPlan::for_points((1 << 27) - 1), MsmPlan { window: 20, chunks: 0 });
        assert!(MsmPlan::for_points(1).is_valid());
        assert_eq!(GpuOptions::default().driver_from(), Some(1 << 21));
        assert_eq!(GpuOptions { msm_driver_from_log2: Some(10), ..Default::default() }.driver_from(), Some(1024));
        assert_eq!(GpuOptions { msm_kernel: MsmKernel::Sppark, ..Default::default() }.driver_from(), None);
        for k in [MsmKernel::Cuzk, MsmKernel::Sppark] {
            assert_eq!(MsmKernel::parse(k.name()), Ok(k));
        }
        assert!(MsmKernel::parse("blst").unwrap_err().contains("cuzk or sppark"));
        for s in super::SideMsms::ALL {
            assert_eq!(super::SideMsms::parse(s.name()), Ok(s));
        }
        assert_eq!(GpuOptions::default().side_msms, super::SideMsms::Device);
        assert!(super::SideMsms::parse("gpu").unwrap_err().contains("device or host"));
    }

    #[test]
    fn msm_plans_outside_the_drivers_range_are_refused_before_any_device_work() {
        use super::MsmPlan;
        assert!(MsmPlan { window: 10, chunks: 1 }.is_valid() && MsmPlan { window: 26, chunks: 8 }.is_valid());
        assert!(MsmPlan { window: 18, chunks: 0 }.is_valid(), "0 chunks: the driver picks");
        for bad in [MsmPlan { window: 9, chunks: 1 }, MsmPlan { window: 27, chunks: 1 }] {
            assert!(!bad.is_valid(), "{bad:?}");
            let e = super::time_g1_msm_windowed(0, &Default::default(), &[], &[], &[bad], 0).unwrap_err();
            assert!(e.to_string().contains("10..=26") && e.to_string().contains(&format!("window: {}", bad.window)), "{e}");
        }
    }
}
