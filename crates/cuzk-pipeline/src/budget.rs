//! The byte budget: a counting gate over host bytes. A partition is admitted only when its
//! estimated working set fits in what is left; the [`Lease`] it gets travels with the
//! partition through the stages, gives parts back as buffers are freed
//! ([`Lease::release`]) and gives the rest back when dropped — on success, on error and on
//! panic alike, so a failing partition cannot leak budget.

use std::sync::{Arc, Condvar, Mutex};

use crate::PipelineError;

#[derive(Debug)]
struct State {
    total: u64,
    in_use: u64,
    /// Highest `in_use` seen.
    high_water: u64,
}

/// A shared byte budget.
#[derive(Clone, Debug)]
pub struct Budget {
    inner: Arc<(Mutex<State>, Condvar)>,
}

impl Budget {
    /// A budget of `total` bytes, none held.
    pub fn new(total: u64) -> Self {
        Budget { inner: Arc::new((Mutex::new(State { total, in_use: 0, high_water: 0 }), Condvar::new())) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The whole budget in bytes.
    pub fn total(&self) -> u64 {
        self.state().total
    }

    /// Bytes held by leases now.
    pub fn in_use(&self) -> u64 {
        self.state().in_use
    }

    /// The most bytes ever held at once.
    pub fn high_water(&self) -> u64 {
        self.state().high_water
    }

    /// Waits until `bytes` fit, then holds them. A request larger than the whole budget can
    /// never fit and is refused at once.
    pub fn acquire(&self, bytes: u64) -> Result<Lease, PipelineError> {
        let (_, cv) = &*self.inner;
        let mut s = self.state();
        if bytes > s.total {
            return Err(PipelineError::OverBudget { need: bytes, budget: s.total });
        }
        while s.in_use + bytes > s.total {
            s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.in_use += bytes;
        s.high_water = s.high_water.max(s.in_use);
        Ok(Lease { budget: self.clone(), held: bytes })
    }

    fn give_back(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut s = self.state();
        s.in_use -= bytes.min(s.in_use);
        drop(s);
        self.inner.1.notify_all();
    }
}

/// Bytes held against a [`Budget`]; returned when dropped.
#[derive(Debug)]
pub struct Lease {
    budget: Budget,
    held: u64,
}

impl Lease {
    /// Bytes this lease still holds.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Gives back up to `bytes` now (a buffer was freed).
    pub fn release(&mut self, bytes: u64) {
        let b = bytes.min(self.held);
        self.held -= b;
        self.budget.give_back(b);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

/// A default budget: 80 % of MemAvailable (from `/proc/meminfo`), or 16 GiB where that
/// cannot be read.
pub fn default_budget() -> u64 {
    let avail = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines().find(|l| l.starts_with("MemAvailable:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<u64>().ok())
    });
    match avail {
        Some(kb) => kb * 1024 / 5 * 4,
        None => 16 << 30,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn leases_block_until_bytes_are_released_and_drop_returns_the_rest() {
        let b = Budget::new(100);
        let mut first = b.acquire(70).unwrap();
        let waiter = {
            let b = b.clone();
            std::thread::spawn(move || b.acquire(50).map(|l| l.held()))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "50 bytes must not fit while 70 of 100 are held");
        first.release(30);
        assert_eq!(waiter.join().unwrap().unwrap(), 50);
        assert_eq!(b.in_use(), 40);
        drop(first);
        assert_eq!(b.in_use(), 0);
        assert_eq!(b.high_water(), 90);
    }

    #[test]
    fn a_request_larger_than_the_budget_is_refused_not_waited_on() {
        let b = Budget::new(10);
        match b.acquire(11) {
            Err(PipelineError::OverBudget { need: 11, budget: 10 }) => {}
            other => panic!("expected OverBudget, got {other:?}"),
        }
    }
}
