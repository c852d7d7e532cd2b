//! The CUDA backend against the shared conformance suite (CPU references, naive sums and
//! DFTs). Needs a build with feature `cuda` and a device: elsewhere it passes, checks that
//! opening the backend fails with the matching typed error, and says that it was SKIPPED and
//! why in the test output itself (written to stderr directly, so that libtest's capture of
//! passing tests does not hide it).

use std::io::Write;

use cuzk_core::backend::conformance::{assert_passes, Scale};
use cuzk_gpu::GpuError;

/// A line that shows in `cargo test` output even for a passing test.
fn say_skipped(test: &str, why: &GpuError) {
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {why} (the CUDA conformance suite did not run) ***");
}

#[test]
fn cuda_backend_conformance_or_skipped() {
    match cuzk_gpu::open(0) {
        Ok(b) => assert_passes(b.as_ref(), 7, Scale::Quick),
        Err(e) => {
            say_skipped("cuda_backend_conformance", &e);
            if cuzk_gpu::built_with_cuda() {
                assert!(matches!(e, GpuError::NoDevice(_)), "with cuda built in, only a missing device may skip: {e}");
            } else {
                assert!(matches!(e, GpuError::NotBuilt), "{e}");
            }
        }
    }
}

/// MSMs over resident bases cut into pieces of 2^16 points (the smallest piece), so that the
/// 2^18-point MSMs and the full-scale quotient's H MSM (2^18 − 1 scalars on the device, a
/// short last piece) each run as several device calls, and the full-scale mat-vec's 6 MB
/// witness goes up in three 2 MiB pieces (a short last one): the same results as the CPU.
#[test]
fn cuda_backend_conformance_in_msm_pieces_or_skipped() {
    match cuzk_gpu::open_with(0, &cuzk_gpu::GpuOptions { msm_piece_log2: Some(16), ..Default::default() }) {
        Ok(b) => assert_passes(b.as_ref(), 11, Scale::Full),
        Err(e) => {
            say_skipped("cuda_backend_conformance_in_msm_pieces", &e);
            assert!(matches!(e, GpuError::NoDevice(_) | GpuError::NotBuilt), "{e}");
        }
    }
}
