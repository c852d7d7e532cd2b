//! The CPU backend against the conformance suite (the same suite `cuzk selftest` runs
//! against CUDA on the GPU machine).

use cuzk_core::backend::conformance::{assert_passes, run, Scale};
use cuzk_core::backend::cpu::CpuBackend;

#[test]
fn cpu_backend_passes_conformance() {
    let cpu = CpuBackend::new();
    for r in run(&cpu, 7, Scale::Quick) {
        eprintln!("{:<34} {:>7.2} s  {}", r.name, r.seconds, r.failure.as_deref().unwrap_or("ok"));
    }
    assert_passes(&cpu, 11, Scale::Quick);
}

#[test]
fn cpu_backend_passes_conformance_on_one_thread() {
    // The chunking across threads must not change any result.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| assert_passes(&CpuBackend::new(), 3, Scale::Quick));
}
