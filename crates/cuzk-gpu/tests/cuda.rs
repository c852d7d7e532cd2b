//! The CUDA backend against the shared conformance suite (CPU references, naive sums and
//! DFTs). Needs a build with feature `cuda` and a device: elsewhere it passes, checks that
//! opening the backend fails with the matching typed error, and says that it was SKIPPED and
//! why in the test output itself (written to stderr directly, so that libtest's capture of
//! passing tests does not hide it).

use std::io::Write;

use cuzk_core::backend::conformance::{assert_passes, assert_passes_with, Scale};
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
/// The side MSMs run on the device witness here, which the suite then requires to be handed
/// over and read (split, plain and auto; every aux, density selections, G1 and G2).
#[test]
fn cuda_backend_conformance_in_msm_pieces_or_skipped() {
    let options = cuzk_gpu::GpuOptions { msm_piece_log2: Some(16), side_msms: cuzk_gpu::SideMsms::Device, ..Default::default() };
    match cuzk_gpu::open_with(0, &options) {
        Ok(b) => assert_passes_with(b.as_ref(), 11, Scale::Full, true),
        Err(e) => {
            say_skipped("cuda_backend_conformance_in_msm_pieces", &e);
            assert!(matches!(e, GpuError::NoDevice(_) | GpuError::NotBuilt), "{e}");
        }
    }
}

/// cuzk's own Pippenger driver (issue 24) against the CPU backend's MSM (blst), point for
/// point, at several windows and chunk counts, on random scalars and the adversarial ones:
/// all zero, all one, all r − 1, all equal, one non-zero scalar at the first, middle and last
/// index, only bit 0, only the top window's bits, repeated bases with equal scalars (one
/// bucket doubling into itself) and opposite bases (cancelling to the identity), and lengths
/// that are not powers of two or straddle a chunk boundary.
#[test]
fn cuzk_msm_driver_matches_the_cpu_or_skipped() {
    use cuzk_core::backend::cpu::CpuBackend;
    use cuzk_core::backend::{points::random_points, Msm};
    use cuzk_core::{G1Affine, Scalar};
    use cuzk_gpu::MsmPlan;
    use ff::Field;
    use rand::SeedableRng;

    if let Err(e) = cuzk_gpu::open(0) {
        say_skipped("cuzk_msm_driver_matches_the_cpu", &e);
        assert!(matches!(e, GpuError::NoDevice(_) | GpuError::NotBuilt), "{e}");
        return;
    }
    let cpu = CpuBackend::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(24);
    let n = (1 << 16) + 3;
    let bases: Vec<G1Affine> = random_points(n, 24);
    let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
    let two = Scalar::from(2u64);
    let one_at = |i: usize, len: usize| (0..len).map(|j| if j == i { random[0] } else { Scalar::ZERO }).collect::<Vec<_>>();
    let p = bases[7];
    let repeated = vec![p; 4099];
    let opposite: Vec<G1Affine> = (0..4099).map(|i| if i % 2 == 0 { p } else { -p }).collect();
    let cases: Vec<(&str, &[G1Affine], Vec<Scalar>)> = vec![
        ("random", &bases, random.clone()),
        ("all zero", &bases, vec![Scalar::ZERO; n]),
        ("all one", &bases, vec![Scalar::ONE; n]),
        ("all r - 1", &bases, vec![-Scalar::ONE; n]),
        ("all equal", &bases[..5000], vec![random[1]; 5000]),
        ("one non-zero, first", &bases[..4097], one_at(0, 4097)),
        ("one non-zero, middle", &bases[..4097], one_at(2048, 4097)),
        ("one non-zero, last", &bases[..4097], one_at(4096, 4097)),
        ("only bit 0 or 1", &bases[..3000], (0..3000).map(|i| Scalar::from((i % 2) as u64)).collect()),
        ("only the top window", &bases[..3000], vec![two.pow_vartime([253]); 3000]),
        ("repeated base, equal scalars", &repeated, vec![random[2]; 4099]),
        ("opposite bases, equal scalars", &opposite, vec![random[3]; 4099]),
        ("n = 1", &bases[..1], random[..1].to_vec()),
        ("n = 2", &bases[..2], random[..2].to_vec()),
        ("n = 31", &bases[..31], random[..31].to_vec()),
        ("n = 33", &bases[..33], random[..33].to_vec()),
    ];
    let plans = [
        MsmPlan { window: 10, chunks: 1 },
        MsmPlan { window: 13, chunks: 3 },
        MsmPlan { window: 16, chunks: 2 },
        MsmPlan { window: 18, chunks: 1 },
        MsmPlan { window: 21, chunks: 1 },
    ];
    for (name, b, s) in &cases {
        let expected = Msm::<G1Affine>::msm(&cpu, b, s).unwrap();
        let got = cuzk_gpu::time_g1_msm_windowed(0, &cuzk_gpu::GpuOptions::default(), b, s, &plans, 0).unwrap();
        for t in got {
            assert_eq!(t.result, expected, "{name} (n = {}) with {:?}", s.len(), t.plan);
        }
    }
    let bad = cuzk_gpu::time_g1_msm_windowed(0, &Default::default(), &bases[..4], &random[..4], &[MsmPlan { window: 27, chunks: 1 }], 0);
    assert!(bad.unwrap_err().to_string().contains("10..=26"));
}

/// The conformance suite with cuzk's own Pippenger driver taking every resident G1 MSM piece
/// from 2^10 points (host scalars: A, B, L in plain mode; device scalars: H), where the
/// default hands it only pieces from 2^21: the prover's path through the driver against the
/// CPU backend at sizes a test can afford. The side MSMs are selected and split on the host
/// here, so that layout (the default's fallback) stays covered on the device too.
#[test]
fn cuda_backend_conformance_through_the_cuzk_driver_or_skipped() {
    let options = cuzk_gpu::GpuOptions { msm_driver_from_log2: Some(10), side_msms: cuzk_gpu::SideMsms::Host, ..Default::default() };
    match cuzk_gpu::open_with(0, &options) {
        Ok(b) => assert_passes(b.as_ref(), 13, Scale::Full),
        Err(e) => {
            say_skipped("cuda_backend_conformance_through_the_cuzk_driver", &e);
            assert!(matches!(e, GpuError::NoDevice(_) | GpuError::NotBuilt), "{e}");
        }
    }
}
