//! `cuzk bench msm` and `cuzk bench ntt`: the prover's two heavy kernels, a G1 MSM of 2^k full
//! scalars and the Groth16 quotient (six NTTs of 2^k and the pointwise steps), timed for each
//! implementation asked for over the same synthetic inputs, one untimed run first and the
//! median of the rest; every implementation's result at a size must equal the others'. An
//! implementation is a backend's kernels (`cpu`: blst's Pippenger in tiles and cuzk's NTT on
//! the host; `cpu-slices`: the MSM cut by points only; `sppark`: sppark's Pippenger and NTT on
//! a CUDA device, bases resident; `cuzk`: cuzk's own Pippenger driver over sppark's kernels,
//! one row per window and chunk setting, with its phases); this module
//! measures and compares, it does not choose kernels for the prover.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::{points, Backend, Msm, Ntt, NttKind};
use cuzk_core::{G1Affine, G1Projective, Scalar};
use rayon::prelude::*;
use serde::Serialize;

use crate::bench::post::median;

/// A kernel implementation `bench msm` and `bench ntt` can time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Impl {
    /// The CPU backend on this process's thread pool.
    Cpu,
    /// The CPU MSM cut by points alone (one Pippenger per slice of bases), which the CPU
    /// backend's tiles replaced below 2^20 points per thread: for comparison (MSM only).
    CpuSlices,
    /// sppark's kernels on the CUDA device (needs a CUDA build and a device).
    Sppark,
    /// cuzk's own Pippenger driver over sppark's kernels, device scalars, for each
    /// `--msm-window` × `--msm-chunks` (MSM only; needs a CUDA build and a device).
    Cuzk,
}

impl Impl {
    /// The name `--impl` takes.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Cpu => "cpu",
            Impl::CpuSlices => "cpu-slices",
            Impl::Sppark => "sppark",
            Impl::Cuzk => "cuzk",
        }
    }
}

/// One implementation's times at one size.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub implementation: Impl,
    /// What was timed (e.g. "msm, device scalars", "quotient, six NTTs").
    pub what: String,
    pub log_n: u32,
    pub median_s: f64,
    pub min_s: f64,
    /// Every timed run, in order.
    pub runs_s: Vec<f64>,
    /// cuzk's driver: the setting timed, the device bytes it allocated (buckets, digits,
    /// sort) and the median milliseconds of each of its phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<DriverRow>,
}

/// What a `cuzk` row adds: its plan, device bytes and phase medians.
#[derive(Clone, Debug, Serialize)]
pub struct DriverRow {
    pub plan: cuzk_gpu::MsmPlan,
    pub device_bytes: u64,
    /// (phase, median ms) in the driver's order.
    pub phases_ms: Vec<(String, f64)>,
}

impl Row {
    fn new(implementation: Impl, what: &str, log_n: u32, runs_s: Vec<f64>) -> Row {
        let min_s = runs_s.iter().copied().fold(f64::INFINITY, f64::min);
        Row { implementation, what: what.into(), log_n, median_s: median(&runs_s), min_s, runs_s, driver: None }
    }
}

/// What a kernel bench reports: its rows and the sizes at which implementations disagreed.
#[derive(Clone, Debug, Serialize)]
pub struct KernelBench {
    pub threads: usize,
    pub device: Option<String>,
    pub rows: Vec<Row>,
    /// Sizes (log2) whose results differed between implementations (or between the two ways
    /// one implementation ran); empty when every result agreed.
    pub mismatches: Vec<String>,
}

/// Where a device implementation runs.
pub struct DeviceChoice {
    pub device: usize,
    pub options: cuzk_gpu::GpuOptions,
    /// The settings `cuzk` times, in order.
    pub msm_plans: Vec<cuzk_gpu::MsmPlan>,
}

fn device_name(impls: &[Impl], d: &DeviceChoice) -> Option<String> {
    if !impls.iter().any(|i| matches!(i, Impl::Sppark | Impl::Cuzk)) {
        return None;
    }
    let devices = cuzk_gpu::devices().ok()?;
    devices.get(d.device).map(|i| i.name.clone())
}

/// `f` once untimed, then `runs` times; the timed calls' values (each call times itself, so
/// that making its inputs is left out).
fn repeat<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<Vec<T>> {
    f()?;
    (0..runs).map(|_| f()).collect()
}

/// Full-width pseudo-random scalars, the same for every run with the same `n` and `seed`.
fn scalars(n: usize, seed: u64) -> Vec<Scalar> {
    use ff::Field;
    use rand::SeedableRng;
    (0..n)
        .into_par_iter()
        .chunks(1 << 16)
        .flat_map_iter(|chunk| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (chunk[0] as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            chunk.into_iter().map(move |_| Scalar::random(&mut rng)).collect::<Vec<_>>()
        })
        .collect()
}

/// G1 MSMs of 2^k points for each k in `log_ns`, each implementation in `impls`.
pub fn msm(impls: &[Impl], log_ns: &[u32], runs: usize, d: &DeviceChoice) -> Result<KernelBench> {
    let max = 1usize << log_ns.iter().copied().max().context("no sizes")?;
    let t = Instant::now();
    let bases: Vec<G1Affine> = points::random_points(max, 11);
    let scalars = scalars(max, 12);
    tracing::info!(points = max, seconds = t.elapsed().as_secs_f64(), "msm inputs made");
    let cpu = CpuBackend::new();
    let mut rows = Vec::new();
    let mut mismatches = Vec::new();
    for &log_n in log_ns {
        let n = 1usize << log_n;
        let (b, s) = (&bases[..n], &scalars[..n]);
        let mut results: Vec<(String, G1Projective)> = Vec::new();
        for &imp in impls {
            match imp {
                Impl::Cpu | Impl::CpuSlices => {
                    let mut sum = <G1Projective as cuzk_core::group::Group>::identity();
                    let secs = repeat(runs, || {
                        let t = Instant::now();
                        sum = match imp {
                            Impl::CpuSlices => cuzk_core::backend::cpu::msm_by_slices(b, s)?,
                            _ => Msm::<G1Affine>::msm(&cpu, b, s)?,
                        };
                        Ok(t.elapsed().as_secs_f64())
                    })?;
                    rows.push(Row::new(imp, "msm", log_n, secs));
                    results.push((imp.name().into(), sum));
                }
                Impl::Sppark => {
                    let m = cuzk_gpu::time_g1_msm(d.device, &d.options, b, s, runs)?;
                    rows.push(Row::new(imp, "msm, host scalars", log_n, m.host_scalars_s));
                    rows.push(Row::new(imp, "msm, device scalars", log_n, m.device_scalars_s));
                    results.push(("sppark (host scalars)".into(), m.host_result));
                    results.push(("sppark (device scalars)".into(), m.device_result));
                }
                Impl::Cuzk => {
                    for t in cuzk_gpu::time_g1_msm_windowed(d.device, &d.options, b, s, &d.msm_plans, runs)? {
                        let what = format!("msm, w{} c{}", t.plan.window, t.plan.chunks);
                        results.push((format!("cuzk ({what})"), t.result));
                        rows.push(driver_row(t, &what, log_n));
                    }
                }
            }
            tracing::info!(log_n, implementation = ?imp, "msm size done");
        }
        mismatches.extend(disagreements(log_n, &results));
    }
    Ok(KernelBench { threads: rayon::current_num_threads(), device: device_name(impls, d), rows, mismatches })
}

/// A `cuzk` row: the driver's times with its phase medians.
fn driver_row(t: cuzk_gpu::WindowedMsmTimes, what: &str, log_n: u32) -> Row {
    let phases_ms = cuzk_gpu::MSM_PHASES
        .iter()
        .enumerate()
        .map(|(i, name)| (name.to_string(), median(&t.phases_ms.iter().map(|p| p[i]).collect::<Vec<_>>())))
        .collect();
    let mut row = Row::new(Impl::Cuzk, what, log_n, t.runs_s);
    row.driver = Some(DriverRow { plan: t.plan, device_bytes: t.device_bytes, phases_ms });
    row
}

/// "2^k: x ≠ y" for each result that differs from the first.
fn disagreements<T: PartialEq>(log_n: u32, results: &[(String, T)]) -> Vec<String> {
    let Some((first, r0)) = results.first() else { return Vec::new() };
    results.iter().skip(1).filter(|(_, r)| r != r0).map(|(name, _)| format!("2^{log_n}: {name} ≠ {first}")).collect()
}

/// The quotient H = (a·b − c)/Z of 2^k random a, b, c for each k in `log_ns`, and one NTT of
/// 2^k, each implementation in `impls`. On a device the NTT and the quotient's parts are its
/// CUDA-event stage times (inputs already on the device); the round trip adds the host copies.
pub fn ntt(impls: &[Impl], log_ns: &[u32], runs: usize, d: &DeviceChoice) -> Result<KernelBench> {
    let max = 1usize << log_ns.iter().copied().max().context("no sizes")?;
    let inputs: Vec<Vec<Scalar>> = (0..3).map(|i| scalars(max, 21 + i)).collect();
    let cpu = CpuBackend::new();
    let gpu: Option<Box<dyn Backend>> = if impls.contains(&Impl::Sppark) {
        Some(cuzk_gpu::open_with(d.device, &d.options).context("opening the CUDA device")?)
    } else {
        None
    };
    let mut rows = Vec::new();
    let mut mismatches = Vec::new();
    for &log_n in log_ns {
        let n = 1usize << log_n;
        let abc = || (inputs[0][..n].to_vec(), inputs[1][..n].to_vec(), inputs[2][..n].to_vec());
        let mut results: Vec<(String, Vec<Scalar>)> = Vec::new();
        for &imp in impls {
            match imp {
                Impl::CpuSlices | Impl::Cuzk => bail!("{} is an MSM implementation; the NTT bench takes cpu or sppark", imp.name()),
                Impl::Cpu => {
                    let ntt_s = repeat(runs, || {
                        let mut v = inputs[0][..n].to_vec();
                        let t = Instant::now();
                        cpu.ntt(&mut v, NttKind::Forward)?;
                        Ok(t.elapsed().as_secs_f64())
                    })?;
                    rows.push(Row::new(imp, "ntt", log_n, ntt_s));
                    let mut h = Vec::new();
                    let quotient_s = repeat(runs, || {
                        let (a, b, c) = abc();
                        let t = Instant::now();
                        h = cpu.quotient(a, b, c)?;
                        Ok(t.elapsed().as_secs_f64())
                    })?;
                    rows.push(Row::new(imp, "quotient", log_n, quotient_s));
                    results.push(("cpu".into(), h));
                }
                Impl::Sppark => {
                    let gpu = gpu.as_deref().expect("opened above when sppark is asked for");
                    let (h, parts) = device_quotient_runs(gpu, runs, abc)?;
                    for (what, secs) in parts {
                        rows.push(Row::new(imp, what, log_n, secs));
                    }
                    results.push(("sppark".into(), h));
                }
            }
            tracing::info!(log_n, implementation = ?imp, "ntt size done");
        }
        mismatches.extend(disagreements(log_n, &results));
    }
    Ok(KernelBench { threads: rayon::current_num_threads(), device: device_name(impls, d), rows, mismatches })
}

/// One named figure's timed runs.
type Column = (&'static str, Vec<f64>);

/// The quotient on a device backend `runs` times after one untimed run, split by its stage
/// log into one NTT (the first transform), the six NTTs, the pointwise steps, their sum (the
/// device's time with the inputs on it) and the host's round trip; with the last H.
fn device_quotient_runs(
    gpu: &dyn Backend,
    runs: usize,
    abc: impl Fn() -> (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>),
) -> Result<(Vec<Scalar>, Vec<Column>)> {
    let (transforms, pointwise) = (&cuzk_gpu::QUOTIENT_TRANSFORM_STAGES, &cuzk_gpu::QUOTIENT_POINTWISE_STAGES);
    let mut h = Vec::new();
    let per_run = repeat(runs, || {
        let (a, b, c) = abc();
        cuzk_gpu::take_stage_log();
        let t = Instant::now();
        h = gpu.quotient(a, b, c)?;
        let round_trip = t.elapsed().as_secs_f64();
        let log = cuzk_gpu::take_stage_log();
        let of = |names: &[&str]| log.iter().filter(|(s, _)| names.contains(&s.as_str())).map(|(_, v)| *v).collect::<Vec<f64>>();
        let (six, steps) = (of(transforms), of(pointwise));
        if six.len() != transforms.len() || steps.len() != pointwise.len() {
            bail!("the device's stage log lacks the quotient's stages (a size below the device's NTT threshold runs on the CPU)");
        }
        let (six_s, steps_s) = (six.iter().sum::<f64>(), steps.iter().sum::<f64>());
        Ok([six[0], six_s, steps_s, six_s + steps_s, round_trip])
    })?;
    let names = ["ntt", "quotient, six NTTs", "quotient, pointwise", "quotient, device", "quotient, round trip"];
    let columns = names.iter().enumerate().map(|(i, &what)| (what, per_run.iter().map(|r| r[i]).collect())).collect();
    Ok((h, columns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_only() -> DeviceChoice {
        DeviceChoice { device: 0, options: cuzk_gpu::GpuOptions::default(), msm_plans: vec![cuzk_gpu::MsmPlan { window: 18, chunks: 1 }] }
    }

    #[test]
    fn the_msm_bench_times_each_size_and_its_result_is_the_naive_sum() {
        let r = msm(&[Impl::Cpu], &[4, 6], 3, &cpu_only()).unwrap();
        assert_eq!(r.rows.iter().map(|x| (x.log_n, x.runs_s.len())).collect::<Vec<_>>(), [(4, 3), (6, 3)]);
        assert!(r.rows.iter().all(|x| x.min_s <= x.median_s && x.median_s > 0.0), "{:?}", r.rows);
        assert!(r.mismatches.is_empty());
        // The inputs the bench uses, summed naively, equal what its MSM computed (the bench
        // compares implementations with each other; this checks the one it has here).
        let (b, s) = (points::random_points::<G1Affine>(64, 11), scalars(64, 12));
        let naive: G1Projective = b.iter().zip(&s).map(|(p, k)| G1Projective::from(*p) * k).sum();
        assert_eq!(Msm::<G1Affine>::msm(&CpuBackend::new(), &b, &s).unwrap(), naive);
    }

    #[test]
    fn the_ntt_bench_reports_the_transform_and_the_quotient_per_size() {
        let r = ntt(&[Impl::Cpu], &[5], 2, &cpu_only()).unwrap();
        let whats: Vec<&str> = r.rows.iter().map(|x| x.what.as_str()).collect();
        assert_eq!(whats, ["ntt", "quotient"]);
        assert!(r.rows.iter().all(|x| x.runs_s.len() == 2 && x.log_n == 5));
    }

    #[test]
    fn each_implementation_is_named_as_impl_takes_it() {
        use clap::ValueEnum;
        for imp in Impl::value_variants() {
            assert_eq!(imp.to_possible_value().unwrap().get_name(), imp.name());
        }
    }

    #[test]
    fn disagreeing_results_are_named_with_their_size() {
        let d = disagreements(20, &[("cpu".to_string(), 1), ("sppark".to_string(), 2), ("x".to_string(), 1)]);
        assert_eq!(d, ["2^20: sppark ≠ cpu"]);
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn without_cuda_the_sppark_implementation_is_a_clear_error() {
        let e = msm(&[Impl::Sppark], &[4], 1, &cpu_only()).unwrap_err();
        assert!(format!("{e:#}").contains("built without cuda"), "{e:#}");
        let e = msm(&[Impl::Cuzk], &[4], 1, &cpu_only()).unwrap_err();
        assert!(format!("{e:#}").contains("built without cuda"), "{e:#}");
    }

    #[test]
    fn the_ntt_bench_refuses_msm_only_implementations_by_name() {
        let e = ntt(&[Impl::Cuzk], &[4], 1, &cpu_only()).unwrap_err();
        assert!(format!("{e:#}").contains("cuzk is an MSM implementation"), "{e:#}");
    }

    #[test]
    fn a_driver_row_carries_its_plan_bytes_and_phase_medians() {
        let t = cuzk_gpu::WindowedMsmTimes {
            plan: cuzk_gpu::MsmPlan { window: 20, chunks: 2 },
            device_bytes: 1 << 30,
            runs_s: vec![0.3, 0.1, 0.2],
            phases_ms: vec![[1.0, 10.0, 3.0, 0.5], [3.0, 30.0, 1.0, 0.7], [2.0, 20.0, 2.0, 0.6]],
            result: <G1Projective as cuzk_core::group::Group>::generator(),
        };
        let row = driver_row(t, "msm, w20 c2", 27);
        assert_eq!((row.median_s, row.min_s, row.implementation), (0.2, 0.1, Impl::Cuzk));
        let d = row.driver.unwrap();
        assert_eq!((d.plan.window, d.device_bytes), (20, 1 << 30));
        let names: Vec<&str> = d.phases_ms.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, cuzk_gpu::MSM_PHASES);
        assert_eq!(d.phases_ms.iter().map(|(_, ms)| *ms).collect::<Vec<_>>(), [2.0, 20.0, 2.0, 0.6]);
    }
}
