//! The CPU backend: blst's single-threaded Pippenger kernels in parallel with rayon — over
//! tiles (a chunk of at most 2^20 points × a window of the scalar bits) when there are fewer
//! chunks than threads, else over one slice of bases per task (so the scalar bytes in flight
//! stay small); bitmap sums by blst's batched affine additions over index slices; the
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
    let threads = rayon::current_num_threads().max(1);
    let chunks = n.div_ceil(MAX_TASK);
    if chunks < threads && n >= TILES_FROM {
        let chunk = n.div_ceil(chunks);
        return Ok(msm_tiled(bases, scalars, chunk, tile_window(chunk, chunks, threads)));
    }
    msm_by_slices(bases, scalars)
}

/// The MSM cut by points alone: one Pippenger per slice of bases, as many slices as a
/// multiple of the thread count. What the CPU backend does when there are at least as many
/// 2^20-point chunks as threads; kept public so `cuzk bench msm --impl cpu-slices`
/// can set it against the tiled cut.
pub fn msm_by_slices<P: MsmPoint>(bases: &[P], scalars: &[Scalar]) -> BackendResult<P::Curve> {
    check_lengths(bases.len(), scalars.len())?;
    if bases.is_empty() {
        return Ok(super::identity::<P>());
    }
    let task = task_len(bases.len(), rayon::current_num_threads().max(1));
    let sum = bases.par_chunks(task).zip(scalars.par_chunks(task)).map(|(b, s)| P::pippenger(b, &scalar_bytes(s)));
    Ok(sum.reduce(super::identity::<P>, |x, y| x + y))
}

/// Below this many points an MSM is cut by points only.
const TILES_FROM: usize = 1 << 12;

/// The MSM cut into tiles: chunks of `chunk` points (at most [`MAX_TASK`]) × windows of the
/// scalar bits, one tile per task. With fewer chunks than threads, cutting by points alone
/// gives each thread a Pippenger over fewer points, which costs more additions in all (a
/// smaller window over the same 255 bits, and 16 bucket passes instead of one): for 2^19
/// points on 16 threads, ~12.9 M point additions against ~9.4 M in 16 tiles of one chunk.
fn msm_tiled<P: MsmPoint>(bases: &[P], scalars: &[Scalar], chunk: usize, window: usize) -> P::Curve {
    bases
        .par_chunks(chunk)
        .zip(scalars.par_chunks(chunk))
        .map(|(b, s)| {
            let bytes = scalar_bytes(s);
            let tiles: Vec<P::Curve> = (0..=255 / window)
                .into_par_iter()
                .map_init(Vec::new, |scratch, y| P::pippenger_tile(b, &bytes, y * window, window, scratch))
                .collect();
            combine_tiles(tiles, window)
        })
        .reduce(super::identity::<P>, |x, y| x + y)
}

/// Σ 2^(y·window) · tiles[y], from the top tile down (doublings between tiles).
fn combine_tiles<C: group::Group>(tiles: Vec<C>, window: usize) -> C {
    tiles.into_iter().rev().fold(C::identity(), |acc, tile| (0..window).fold(acc, |a, _| a.double()) + tile)
}

/// The tiles' window for `chunks` chunks of `chunk` points on `threads` threads: the width
/// from 4 to 20 bits with the least modelled time (the narrower on a tie), rounds of tiles ×
/// (points + buckets), since a tile passes once over its chunk's points and about twice over
/// its 2^(w−1) buckets, and the tiles run `threads` at a time. The width the tiles took before,
/// from the point count alone, can leave a short last round: on the 16-core H100 host its 19
/// tiles of 14 bits at 2^17 points (two rounds) made the tiles 1.20× slower than the slices,
/// where 16 tiles of 16 bits fill one round.
fn tile_window(chunk: usize, chunks: usize, threads: usize) -> usize {
    let time = |w: usize| (chunks * (255 / w + 1)).div_ceil(threads.max(1)) * (chunk + (1 << w));
    (5..=20).fold(4, |best, w| if time(w) < time(best) { w } else { best })
}

/// 32 little-endian bytes per scalar, as blst reads them.
fn scalar_bytes(s: &[Scalar]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(s.len() * 32);
    for x in s {
        bytes.extend_from_slice(&x.to_bytes_le());
    }
    bytes
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
        m.check_entries_present()?;
        Ok(parallel(|| evaluate_cpu(m, inputs, aux)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Pippenger window for `n` points from the point count alone (wider for more points:
    /// the bucket pass costs 2^w additions, the point pass n per window): the width the tiles
    /// took before [`tile_window`], and a width blst's tile kernel must sum right.
    fn window_bits(n: usize) -> usize {
        match n.max(1).ilog2() as usize {
            lg if lg > 12 => lg - 3,
            lg if lg > 8 => lg - 2,
            lg if lg > 4 => lg - 1,
            _ => 2,
        }
    }

    #[test]
    fn the_tiles_window_fills_whole_rounds_of_threads() {
        let tiles = |w: usize| 255 / w + 1;
        // 16 threads, one chunk of 2^17 points: window_bits' 14 bits make 19 tiles, two rounds.
        assert_eq!(tiles(window_bits(1 << 17)), 19);
        let w = tile_window(1 << 17, 1, 16);
        assert!(tiles(w) <= 16, "{w} bits make {} tiles for 16 threads", tiles(w));
        // Where the default already fills the rounds it stays: 2^19 points on 16 threads.
        assert_eq!(tile_window(1 << 19, 1, 16), window_bits(1 << 19));
        // Two threads, 2^16 points: many rounds either way; the point-count width stays.
        assert_eq!(tile_window(1 << 16, 1, 2), window_bits(1 << 16));
    }

    #[test]
    fn tiled_msms_equal_the_naive_sum_for_every_window_and_chunk() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for n in [1usize, 7, 300, 1100] {
            let bases: Vec<G1Affine> = super::super::points::random_points(n, n as u64);
            let scalars = super::super::conformance::edge_scalars(&mut rng, n);
            let naive: blstrs::G1Projective = bases.iter().zip(&scalars).map(|(p, k)| blstrs::G1Projective::from(*p) * k).sum();
            for chunk in [n, n.div_ceil(3).max(1)] {
                for w in [window_bits(chunk), tile_window(chunk, n.div_ceil(chunk), 16)] {
                    assert_eq!(msm_tiled(&bases, &scalars, chunk, w), naive, "n {n}, chunk {chunk}, window {w}");
                }
            }
            // Every window width, including ones that divide 255 (3, 5, 15, 17).
            let bytes = scalar_bytes(&scalars);
            for window in [1usize, 2, 3, 5, 8, 13, 15, 16, 17] {
                let mut scratch = Vec::new();
                let tiles: Vec<blstrs::G1Projective> =
                    (0..=255 / window).map(|y| G1Affine::pippenger_tile(&bases, &bytes, y * window, window, &mut scratch)).collect();
                assert_eq!(combine_tiles(tiles, window), naive, "n {n}, window {window}");
            }
        }
        let g2: Vec<G2Affine> = super::super::points::random_points(500, 9);
        let scalars = super::super::conformance::edge_scalars(&mut rng, 500);
        let naive: blstrs::G2Projective = g2.iter().zip(&scalars).map(|(p, k)| blstrs::G2Projective::from(*p) * k).sum();
        assert_eq!(msm_tiled(&g2, &scalars, 200, window_bits(200)), naive);
    }

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
