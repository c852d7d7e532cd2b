//! Reusable gigabyte buffers of scalars. A 32 GiB partition writes several gigabytes of
//! scalars into fresh buffers (its witness, the selected A and B aux values) and frees them
//! when its proof is made; the next partition asks the kernel for the same amount again, and
//! every fresh page is faulted in and zeroed by the kernel (system time, the rest of what huge
//! pages did not remove). The pool keeps buffers given back, up to a byte capacity, and hands
//! them out again to requests they fit, so a steady pipeline stops touching fresh memory.
//! Buffers under [`crate::mem::HUGE_PAGES_FROM`] bytes are never kept. The capacity starts at
//! zero (nothing kept); whoever owns the process's memory budget sets it and counts it against
//! that budget, since idle buffers are memory the process holds. It knows nothing of circuits
//! or partitions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use blstrs::Scalar;
use serde::Serialize;

use crate::mem::{vec_with_huge_pages, HUGE_PAGES_FROM};

/// Bytes of `n` scalars.
fn bytes_of(n: usize) -> u64 {
    (n as u64).saturating_mul(std::mem::size_of::<Scalar>() as u64)
}

/// Idle scalar buffers, handed out again by [`BufferPool::take`].
pub struct BufferPool {
    capacity_bytes: AtomicU64,
    /// Oldest first.
    idle: Mutex<Vec<Vec<Scalar>>>,
    reused: AtomicU64,
    fresh: AtomicU64,
}

/// What a pool holds and has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PoolStats {
    /// Bytes of idle buffers the pool may keep.
    pub capacity_bytes: u64,
    /// Buffers kept now.
    pub idle_buffers: usize,
    /// Their bytes.
    pub idle_bytes: u64,
    /// Requests of at least [`HUGE_PAGES_FROM`] bytes served from an idle buffer.
    pub reused: u64,
    /// Requests of at least [`HUGE_PAGES_FROM`] bytes that got a fresh allocation.
    pub fresh: u64,
}

static PROCESS_POOL: BufferPool = BufferPool::new();

/// The process's pool, shared by every pipeline and prover in it.
pub fn scalar_pool() -> &'static BufferPool {
    &PROCESS_POOL
}

impl BufferPool {
    /// An empty pool of capacity zero (it keeps nothing).
    pub const fn new() -> Self {
        BufferPool { capacity_bytes: AtomicU64::new(0), idle: Mutex::new(Vec::new()), reused: AtomicU64::new(0), fresh: AtomicU64::new(0) }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Scalar>>> {
        // Its state is a list of buffers, whole at every moment: a panic elsewhere leaves it valid.
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets how many bytes of idle buffers the pool may keep; buffers beyond it are freed now
    /// (oldest first).
    pub fn set_capacity(&self, bytes: u64) {
        self.capacity_bytes.store(bytes, Ordering::Relaxed);
        let freed = Self::trim(&mut self.idle(), bytes);
        drop(freed);
    }

    /// An empty vector with room for at least `capacity` scalars: an idle buffer that fits
    /// (the smallest of those at most twice the request, so a small request does not take a
    /// large buffer), else a fresh one on huge pages ([`vec_with_huge_pages`]).
    pub fn take(&self, capacity: usize) -> Vec<Scalar> {
        if bytes_of(capacity) < HUGE_PAGES_FROM as u64 {
            return vec_with_huge_pages(capacity);
        }
        let mut idle = self.idle();
        let fits = idle
            .iter()
            .enumerate()
            .filter(|(_, v)| v.capacity() >= capacity && v.capacity() / 2 <= capacity)
            .min_by_key(|(_, v)| v.capacity())
            .map(|(i, _)| i);
        if let Some(i) = fits {
            let v = idle.remove(i);
            self.reused.fetch_add(1, Ordering::Relaxed);
            return v;
        }
        drop(idle);
        self.fresh.fetch_add(1, Ordering::Relaxed);
        vec_with_huge_pages(capacity)
    }

    /// Gives a buffer back (its contents are discarded): kept when it is large enough to be
    /// worth keeping and fits the capacity, the oldest idle buffers freed to make room.
    pub fn give(&self, mut v: Vec<Scalar>) {
        let cap = self.capacity_bytes.load(Ordering::Relaxed);
        let b = bytes_of(v.capacity());
        if b < HUGE_PAGES_FROM as u64 || b > cap {
            return;
        }
        v.clear();
        let freed = {
            let mut idle = self.idle();
            idle.push(v);
            Self::trim(&mut idle, cap)
        };
        // Freed outside the lock: unmapping gigabytes takes a while.
        drop(freed);
    }

    /// Removes the oldest buffers until the rest fit `cap`; returns them, to be freed.
    fn trim(idle: &mut Vec<Vec<Scalar>>, cap: u64) -> Vec<Vec<Scalar>> {
        let mut held: u64 = idle.iter().map(|v| bytes_of(v.capacity())).sum();
        let mut n = 0;
        while held > cap {
            held -= bytes_of(idle[n].capacity());
            n += 1;
        }
        idle.drain(..n).collect()
    }

    /// What the pool holds now and has served so far.
    pub fn stats(&self) -> PoolStats {
        let idle = self.idle();
        PoolStats {
            capacity_bytes: self.capacity_bytes.load(Ordering::Relaxed),
            idle_buffers: idle.len(),
            idle_bytes: idle.iter().map(|v| bytes_of(v.capacity())).sum(),
            reused: self.reused.load(Ordering::Relaxed),
            fresh: self.fresh.load(Ordering::Relaxed),
        }
    }
}

impl Default for BufferPool {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scalars in `HUGE_PAGES_FROM` bytes: the smallest buffer the pool keeps.
    const MIN: usize = HUGE_PAGES_FROM / 32;

    #[test]
    fn a_buffer_given_back_is_handed_out_again_and_a_new_one_is_made_otherwise() {
        let pool = BufferPool::new();
        pool.set_capacity(bytes_of(4 * MIN));
        let mut v = pool.take(MIN);
        v.extend(std::iter::repeat_n(Scalar::from(3u64), MIN));
        let at = v.as_ptr();
        pool.give(v);
        assert_eq!(pool.stats().idle_buffers, 1);
        let again = pool.take(MIN);
        assert_eq!(again.as_ptr(), at, "the same buffer");
        assert!(again.is_empty() && again.capacity() >= MIN);
        let other = pool.take(MIN);
        assert_ne!(other.as_ptr(), at);
        assert_eq!((pool.stats().reused, pool.stats().fresh), (1, 2));
    }

    #[test]
    fn nothing_is_kept_over_the_capacity_or_under_the_huge_page_size() {
        let pool = BufferPool::new();
        pool.give(Vec::with_capacity(MIN));
        assert_eq!(pool.stats().idle_buffers, 0, "capacity zero keeps nothing");
        pool.set_capacity(bytes_of(2 * MIN));
        pool.give(Vec::with_capacity(MIN / 2));
        pool.give(Vec::with_capacity(3 * MIN));
        assert_eq!(pool.stats().idle_buffers, 0, "too small, too large");
        let (a, b, c) = (Vec::with_capacity(MIN), Vec::<Scalar>::with_capacity(MIN), Vec::<Scalar>::with_capacity(MIN));
        let (first, last) = (a.as_ptr(), c.as_ptr());
        pool.give(a);
        pool.give(b);
        pool.give(c);
        let s = pool.stats();
        assert_eq!((s.idle_buffers, s.idle_bytes), (2, bytes_of(2 * MIN)), "the oldest freed to stay within capacity");
        let mut got: Vec<_> = (0..2).map(|_| pool.take(MIN)).collect();
        assert!(got.iter().all(|v| v.as_ptr() != first) && got.iter().any(|v| v.as_ptr() == last));
        got.clear();
        pool.give(Vec::with_capacity(MIN));
        pool.set_capacity(0);
        assert_eq!(pool.stats().idle_bytes, 0, "a lower capacity frees what is over it");
    }

    #[test]
    fn a_small_request_does_not_take_a_much_larger_buffer() {
        let pool = BufferPool::new();
        pool.set_capacity(bytes_of(8 * MIN));
        let big: Vec<Scalar> = Vec::with_capacity(4 * MIN);
        let fit: Vec<Scalar> = Vec::with_capacity(2 * MIN);
        let (big_at, fit_at) = (big.as_ptr(), fit.as_ptr());
        pool.give(big);
        pool.give(fit);
        let (first, second) = (pool.take(MIN + 1), pool.take(MIN + 1));
        assert_eq!(first.as_ptr(), fit_at, "the smallest that fits");
        assert_ne!(second.as_ptr(), big_at, "over twice the request: not taken");
        let third = pool.take(3 * MIN);
        assert_eq!(third.as_ptr(), big_at);
    }
}
