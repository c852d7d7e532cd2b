//! The CUDA backend against the shared conformance suite (CPU references, naive sums and
//! DFTs). Needs a build with feature `cuda` and a device: elsewhere it prints why it is
//! SKIPPED and checks that opening the backend fails with the matching typed error.

use cuzk_core::backend::conformance::{assert_passes, Scale};
use cuzk_gpu::GpuError;

#[test]
fn cuda_backend_conformance_or_skipped() {
    match cuzk_gpu::open(0) {
        Ok(b) => assert_passes(b.as_ref(), 7, Scale::Quick),
        Err(e) => {
            eprintln!("SKIPPED cuda_backend_conformance: {e}");
            if cuzk_gpu::built_with_cuda() {
                assert!(matches!(e, GpuError::NoDevice(_)), "with cuda built in, only a missing device may skip: {e}");
            } else {
                assert!(matches!(e, GpuError::NotBuilt), "{e}");
            }
        }
    }
}
