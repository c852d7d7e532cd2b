//! The CPU backend against the conformance suite (the same suite `cuzk selftest` runs
//! against CUDA on the GPU machine).

use cuzk_core::backend::conformance::{assert_passes, assert_passes_with, run, run_with, Scale};
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

/// The case over device witnesses checks what it claims: a backend that hands its witness
/// over and computes the side MSMs from it correctly passes it; one whose MSMs over the
/// witness are off by a point fails it; and when a witness is expected, a backend that hands
/// none over fails it instead of passing unchecked.
#[test]
fn the_device_witness_case_passes_a_correct_hand_over_and_fails_a_wrong_or_missing_one() {
    use cuzk_core::testing::WitnessKeepingCpu;
    const CASE: &str = "msms over the device witness vs cpu";
    let failure = |b: &dyn cuzk_core::backend::Backend| {
        run_with(b, 5, Scale::Quick, true).into_iter().find(|r| r.name == CASE).expect("the case ran").failure
    };
    let good = WitnessKeepingCpu::new();
    assert_passes_with(&good, 5, Scale::Quick, true);
    assert!(good.from_witness.load(std::sync::atomic::Ordering::SeqCst) > 0, "the MSMs were read from the witness");
    let skewed = WitnessKeepingCpu::new().skewed();
    assert!(failure(&skewed).is_some_and(|f| f.contains("differ")), "a wrong MSM over the witness must fail the case");
    assert!(failure(&CpuBackend::new()).is_some_and(|f| f.contains("no device witness")), "a missing hand-over must fail it");
}
