//! Locks that survive a panic. A `std::sync::Mutex` whose holder panicked is poisoned, and
//! every later `lock().unwrap()` panics too: one panic on a device would disable that GPU
//! until the process restarts. [`DeviceLock`] never answers with poison: the next caller gets
//! the guard, after `reset` has put the guarded state back into a known-good shape (for the
//! CUDA backend: resident bases and matrices forgotten, so they are uploaded again), and the
//! poison is cleared. It is compiled with or without CUDA, so the recovery is tested on
//! machines without a GPU; it knows nothing of devices beyond the reset its caller passes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A mutex whose lock recovers from a panicked holder (see the module text).
#[derive(Debug, Default)]
pub struct DeviceLock<T> {
    inner: Mutex<T>,
    recoveries: AtomicU64,
}

impl<T> DeviceLock<T> {
    /// An unlocked lock holding `value` (`const`, so it can be a `static`).
    pub const fn new(value: T) -> Self {
        DeviceLock { inner: Mutex::new(value), recoveries: AtomicU64::new(0) }
    }

    /// The guard; when a holder panicked, `reset` repairs the state first and the lock is
    /// usable again (counted in [`DeviceLock::recoveries`]).
    pub fn lock_or_reset(&self, reset: impl FnOnce(&mut T)) -> MutexGuard<'_, T> {
        match self.inner.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                reset(&mut guard);
                self.inner.clear_poison();
                let n = self.recoveries.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!(recoveries = n, "a holder of this lock panicked; its state was reset and the lock is in use again");
                guard
            }
        }
    }

    /// The guard, keeping the state as the panicked holder (if any) left it: for state that
    /// is consistent after every single step (a pool, a log).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.lock_or_reset(|_| {})
    }

    /// How many times a panicked holder's state was reset.
    pub fn recoveries(&self) -> u64 {
        self.recoveries.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    #[test]
    fn a_panicked_holder_poisons_nothing_and_the_reset_runs_once() {
        let l = DeviceLock::new(vec![1, 2, 3]);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut g = l.lock();
            g.push(4);
            panic!("injected panic while holding the lock");
        }));
        assert!(r.is_err());
        let resets = std::cell::Cell::new(0);
        let g = l.lock_or_reset(|v| {
            resets.set(resets.get() + 1);
            v.clear();
        });
        assert!(g.is_empty(), "the reset must run before the guard is handed out");
        drop(g);
        let g = l.lock_or_reset(|_| resets.set(resets.get() + 1));
        drop(g);
        assert_eq!((resets.get(), l.recoveries()), (1, 1), "the poison is cleared: the second lock needs no reset");
    }
}
