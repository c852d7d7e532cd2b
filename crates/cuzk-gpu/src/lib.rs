//! `cuzk-gpu` owns the CUDA backend: sppark's Pippenger MSM (G1 and G2) and NTT behind
//! `cuzk-core`'s `Msm`/`Ntt` traits, with the SRS bases kept resident in device memory across
//! proofs, the 0/1 bitmap sums done by batched additions on the device, and the Groth16
//! quotient computed with a, b and c resident through every transform. CUDA failures come
//! back as typed errors. Built without feature `cuda` (the default, and what CI tests), the
//! crate still compiles and [`open`] answers [`GpuError::NotBuilt`]; circuits and pipelines
//! are not its business.

// sppark's own device table (select_gpu, all_gpus) is in its native library: keep the crate
// linked although no Rust item of it is used.
#[cfg(feature = "cuda")]
extern crate sppark;

#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
mod ffi;

use cuzk_core::backend::Backend;

/// What can go wrong opening or using a GPU.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("this cuzk was built without cuda (rebuild with `cargo xtask build --cuda`)")]
    NotBuilt,
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    #[error("CUDA device {device} does not exist ({count} present)")]
    BadDevice { device: usize, count: usize },
    #[error("CUDA error {code} in {what}: {message}")]
    Cuda { what: &'static str, code: i32, message: String },
}

/// One CUDA device as the runtime reports it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    pub index: usize,
    pub name: String,
    pub memory_bytes: u64,
}

/// Whether this build has the CUDA backend compiled in.
pub const fn built_with_cuda() -> bool {
    cfg!(feature = "cuda")
}

/// The CUDA devices present (an error when there are none or the build has no CUDA).
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

/// Opens the CUDA backend on `device`.
pub fn open(device: usize) -> Result<Box<dyn Backend>, GpuError> {
    #[cfg(feature = "cuda")]
    {
        Ok(Box::new(cuda::CudaBackend::new(device)?))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        Err(GpuError::NotBuilt)
    }
}

/// Per-stage device times of the calls made so far (taken and reset), for benchmarks.
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
}
