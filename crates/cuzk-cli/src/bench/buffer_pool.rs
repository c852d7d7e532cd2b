//! `cuzk bench buffer-pool`: what a partition-sized buffer costs when it is fresh memory every
//! round (made, filled on every core, freed: the kernel maps and zeroes each page) against
//! when it comes back from the process's buffer pool ([`cuzk_core::buffer_pool`]) already
//! mapped. Per round: wall seconds, minor page faults and system seconds of the whole process.
//! It measures the mechanism on this machine's memory, not a proof.

use std::time::Instant;

use blstrs::Scalar;
use cuzk_core::buffer_pool::BufferPool;
use rayon::prelude::*;
use serde::Serialize;

use crate::bench::post::median;

/// One round: take a buffer, fill it, give it back (or free it).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Round {
    pub seconds: f64,
    pub minor_faults: u64,
    pub system_seconds: f64,
}

/// The report: every round of each way, and the medians over all but the first.
#[derive(Clone, Debug, Serialize)]
pub struct BufferPoolBench {
    pub buffer_bytes: u64,
    pub threads: usize,
    pub transparent_huge_pages: String,
    pub fresh: Vec<Round>,
    pub pooled: Vec<Round>,
    pub fresh_median: Round,
    pub pooled_median: Round,
}

/// `rounds` rounds each way with a buffer of `scalars` scalars.
pub fn run(scalars: usize, rounds: usize) -> BufferPoolBench {
    let rounds = rounds.max(2);
    let fresh_pool = BufferPool::new();
    let fresh: Vec<Round> = (0..rounds).map(|_| round(&fresh_pool, scalars)).collect();
    let buffer_bytes = scalars as u64 * 32;
    let pool = BufferPool::new();
    pool.set_capacity(buffer_bytes);
    let pooled: Vec<Round> = (0..rounds).map(|_| round(&pool, scalars)).collect();
    let policy = std::fs::read_to_string(cuzk_core::mem::THP_POLICY_FILE).unwrap_or_default();
    BufferPoolBench {
        buffer_bytes,
        threads: rayon::current_num_threads(),
        transparent_huge_pages: policy.trim().to_string(),
        fresh_median: median_of_warm(&fresh),
        pooled_median: median_of_warm(&pooled),
        fresh,
        pooled,
    }
}

fn round(pool: &BufferPool, scalars: usize) -> Round {
    let (before, t) = (cuzk_core::mem::usage(), Instant::now());
    let mut v = pool.take(scalars);
    v.par_extend((0..scalars as u64).into_par_iter().map(Scalar::from));
    std::hint::black_box(&v);
    pool.give(v);
    let after = cuzk_core::mem::usage();
    Round {
        seconds: t.elapsed().as_secs_f64(),
        minor_faults: after.minor_faults - before.minor_faults,
        system_seconds: after.system_s - before.system_s,
    }
}

/// Medians of each figure over the rounds after the first.
fn median_of_warm(rounds: &[Round]) -> Round {
    let med = |f: fn(&Round) -> f64| median(&rounds[1..].iter().map(f).collect::<Vec<_>>());
    Round { seconds: med(|r| r.seconds), minor_faults: med(|r| r.minor_faults as f64) as u64, system_seconds: med(|r| r.system_seconds) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pooled_buffer_is_refilled_without_page_faults_and_a_fresh_one_is_not() {
        let r = super::run((64 << 20) / 32, 3);
        assert_eq!(r.fresh.len(), 3);
        // A fresh 64 MiB buffer: at least one fault per 2 MiB page even on huge pages.
        assert!(r.fresh_median.minor_faults >= 32, "{:?}", r.fresh_median);
        // The pooled one was faulted in by its first round only (a few faults may come from
        // other allocations of the round: rayon's, the test harness's).
        assert!(r.pooled_median.minor_faults * 8 <= r.fresh_median.minor_faults, "{:?} vs {:?}", r.pooled_median, r.fresh_median);
    }
}
