//! The CPU backend: blst's single-threaded Pippenger over contiguous slices of bases in
//! parallel with rayon (one slice per thread, at most 2^20 points each, so the scalar bytes in
//! flight stay small); bitmap sums by blst's batched affine additions over index slices; the
//! rayon NTT of [`super::ntt`]. Each call's parallel work runs through
//! [`crate::reserved_pool::parallel`], so a thread routed to the urgent pool computes there.
//! Always compiled; it is the reference the CUDA backend is tested against.

use blstrs::{G1Affine, G2Affine, Scalar};
use rayon::prelude::*;

use super::ntt::{self, DomainCache};
use super::sparse::{evaluate_cpu, Evaluations, MatVec, Matrices};
use super::{check_lengths, Backend, BackendError, BackendResult, Msm, MsmPoint, Ntt, NttKind};
use crate::reserved_pool::parallel;

/// The most points one Pippenger task takes.
const MAX_TASK: usize = 1 << 20;
/// Indices per batched-addition task.
const SUM_TASK: usize = 1 << 15;

/// The CPU backend (uses the current rayon pool).
#[derive(Debug, Default)]
pub struct CpuBackend {
    domains: DomainCache,
}

impl CpuBackend {
    /// A CPU backend with no NTT domains built yet (each size is built on first use and kept).
    pub fn new() -> Self {
        Self::default()
    }
}

fn msm_cpu<P: MsmPoint>(bases: &[P], scalars: &[Scalar]) -> BackendResult<P::Curve> {
    check_lengths(bases.len(), scalars.len())?;
    let n = bases.len();
    if n == 0 {
        return Ok(super::identity::<P>());
    }
    let task = task_len(n, rayon::current_num_threads().max(1));
    let sum = bases
        .par_chunks(task)
        .zip(scalars.par_chunks(task))
        .map(|(b, s)| {
            let mut bytes = Vec::with_capacity(s.len() * 32);
            for x in s {
                bytes.extend_from_slice(&x.to_bytes_le());
            }
            P::pippenger(b, &bytes)
        })
        .reduce(super::identity::<P>, |x, y| x + y);
    Ok(sum)
}

/// Points per Pippenger task: at most [`MAX_TASK`], and as many tasks as a multiple of the
/// thread count, so that no thread runs a last task alone (2.7 M points on 2 threads made
/// three 1 M tasks: the third ran while the other thread idled).
fn task_len(n: usize, threads: usize) -> usize {
    let tasks = n.div_ceil(MAX_TASK).div_ceil(threads).max(1) * threads;
    n.div_ceil(tasks).max(1)
}

fn sum_cpu<P: MsmPoint>(bases: &[P], indices: &[u32]) -> BackendResult<P::Curve> {
    if let Some(&bad) = indices.iter().find(|&&i| i as usize >= bases.len()) {
        return Err(BackendError::Input(format!("index {bad} outside {} bases", bases.len())));
    }
    let sum = indices
        .par_chunks(SUM_TASK)
        .map(|idx| {
            let refs: Vec<*const P> = idx.iter().map(|&i| &bases[i as usize] as *const P).collect();
            P::sum_refs(&refs)
        })
        .reduce(super::identity::<P>, |x, y| x + y);
    Ok(sum)
}

impl Msm<G1Affine> for CpuBackend {
    fn msm(&self, bases: &[G1Affine], scalars: &[Scalar]) -> BackendResult<blstrs::G1Projective> {
        parallel(|| msm_cpu(bases, scalars))
    }
    fn sum_selected(&self, bases: &[G1Affine], indices: &[u32]) -> BackendResult<blstrs::G1Projective> {
        parallel(|| sum_cpu(bases, indices))
    }
}

impl Msm<G2Affine> for CpuBackend {
    fn msm(&self, bases: &[G2Affine], scalars: &[Scalar]) -> BackendResult<blstrs::G2Projective> {
        parallel(|| msm_cpu(bases, scalars))
    }
    fn sum_selected(&self, bases: &[G2Affine], indices: &[u32]) -> BackendResult<blstrs::G2Projective> {
        parallel(|| sum_cpu(bases, indices))
    }
}

impl Ntt for CpuBackend {
    fn ntt(&self, data: &mut [Scalar], kind: NttKind) -> BackendResult<()> {
        parallel(|| ntt::transform(&self.domains, data, kind))
    }

    fn quotient(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> BackendResult<Vec<Scalar>> {
        parallel(|| ntt::quotient(&self.domains, a, b, c))
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }
}

impl MatVec for CpuBackend {
    fn mat_vec(&self, m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> BackendResult<Evaluations> {
        m.check_witness(inputs, aux)?;
        Ok(parallel(|| evaluate_cpu(m, inputs, aux)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msm_tasks_are_at_most_max_task_and_come_in_multiples_of_the_thread_count() {
        for threads in [1usize, 2, 3, 16] {
            for n in [1usize, 2, 5, 1000, MAX_TASK - 1, MAX_TASK, MAX_TASK + 1, 2_686_244, 3 * MAX_TASK, (1 << 27) + 12345] {
                let t = task_len(n, threads);
                let tasks = n.div_ceil(t);
                assert!((1..=MAX_TASK).contains(&t), "n {n}, {threads} threads: task of {t}");
                assert!(tasks * t >= n);
                if n >= threads * MAX_TASK / 2 {
                    assert_eq!(tasks % threads, 0, "n {n}, {threads} threads: {tasks} tasks of {t}");
                }
            }
        }
        assert_eq!(task_len(2_686_244, 2), 671_561, "2.7 M points on 2 threads: four equal tasks");
    }
}
