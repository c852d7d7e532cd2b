//! A thread pool kept for urgent work. The CPU-parallel parts of a proof (witness pieces,
//! density selection, the 0/1 split, gathers, CPU MSMs) run on rayon; in the process-wide
//! pool an urgent job's tasks queue behind every task a bulk job already spawned, so a
//! WinningPoSt waits for PoRep's work however high its priority. Work run through
//! [`ReservedPool::install`] — and every rayon call nested in it — uses this pool's own
//! threads instead, which the operating system schedules beside the global pool's. It knows
//! nothing of jobs or priorities: the caller decides what is urgent.

/// A named rayon pool of a fixed number of threads.
pub struct ReservedPool {
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for ReservedPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReservedPool").field("threads", &self.threads()).finish()
    }
}

impl ReservedPool {
    /// A pool of `threads` threads (at least 1) named `<name>-<i>`.
    pub fn new(threads: usize, name: &str) -> std::io::Result<Self> {
        let prefix = name.to_string();
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(move |i| format!("{prefix}-{i}"))
            .build()
            .map(|pool| ReservedPool { pool })
            .map_err(std::io::Error::other)
    }

    /// Runs `f` on this pool (the caller waits); rayon calls inside `f` stay on it.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    /// How many threads it has.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn work_and_nested_parallel_work_run_on_the_reserved_threads() {
        let pool = ReservedPool::new(2, "cuzk-test-urgent").unwrap();
        assert_eq!(pool.threads(), 2);
        let names: Vec<String> =
            pool.install(|| (0..64).into_par_iter().map(|_| std::thread::current().name().unwrap_or("").to_string()).collect());
        assert!(names.iter().all(|n| n.starts_with("cuzk-test-urgent-")), "{names:?}");
        // Outside it, rayon is the global pool again.
        let outside: Vec<String> = (0..64).into_par_iter().map(|_| std::thread::current().name().unwrap_or("").to_string()).collect();
        assert!(!outside.iter().any(|n| n.starts_with("cuzk-test-urgent-")));
    }
}
