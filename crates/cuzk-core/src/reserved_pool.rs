//! A thread pool kept for urgent work. The CPU-parallel parts of a proof (witness pieces,
//! density selection, the 0/1 split, gathers, CPU MSMs) run on rayon; in the process-wide
//! pool an urgent job's tasks queue behind every task a bulk job already spawned, so a
//! WinningPoSt waits for PoRep's work however high its priority. Work run through
//! [`ReservedPool::install`] — and every rayon call nested in it — uses this pool's own
//! threads instead, which the operating system schedules beside the global pool's. Work that
//! blocks (a prover's threads wait on the device lock) must not sit on those threads: it runs
//! on its own threads under [`ReservedPool::route`], and only its CPU-parallel parts, each
//! wrapped in [`parallel`], are sent to the pool — from the routed thread and from the threads
//! it starts through [`inherit`]. It knows nothing of jobs or priorities: the caller decides
//! what is urgent.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

thread_local! {
    /// The pool [`parallel`] sends work to from this thread, if any.
    static ROUTED: RefCell<Option<Arc<rayon::ThreadPool>>> = const { RefCell::new(None) };
}

/// A named rayon pool of a fixed number of threads.
pub struct ReservedPool {
    pool: Arc<rayon::ThreadPool>,
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
            .map(|pool| ReservedPool { pool: Arc::new(pool) })
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

    /// Until the guard drops, [`parallel`] on this thread (and in threads started through
    /// [`inherit`]) runs on this pool; the thread itself stays where it is, free to block.
    #[must_use = "the route holds only while the guard lives"]
    pub fn route(&self) -> RouteScope {
        let previous = ROUTED.with(|r| r.replace(Some(self.pool.clone())));
        RouteScope { previous, _thread: PhantomData }
    }
}

/// The guard of [`ReservedPool::route`]: restores the thread's previous route when dropped.
#[derive(Debug)]
pub struct RouteScope {
    previous: Option<Arc<rayon::ThreadPool>>,
    /// Not `Send`: the thread-local it restores belongs to the thread that routed.
    _thread: PhantomData<*const ()>,
}

impl Drop for RouteScope {
    fn drop(&mut self) {
        ROUTED.with(|r| *r.borrow_mut() = self.previous.take());
    }
}

/// Runs `f`, a CPU-parallel computation that takes no lock, on the pool this thread is routed
/// to (the caller waits), or here — on the pool the thread is in, else rayon's global one —
/// when it is not routed. `f` must not block: the pool's threads are few and shared.
pub fn parallel<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match ROUTED.with(|r| r.borrow().clone()) {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// `f` wrapped to run under the calling thread's route, wherever it runs (for threads a routed
/// thread starts: `std::thread::spawn(inherit(|| ...))`).
pub fn inherit<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let routed = ROUTED.with(|r| r.borrow().clone());
    move || {
        let previous = ROUTED.with(|r| r.replace(routed));
        let _restore = RouteScope { previous, _thread: PhantomData };
        f()
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

    fn worker_names() -> Vec<String> {
        (0..64).into_par_iter().map(|_| std::thread::current().name().unwrap_or("").to_string()).collect()
    }

    #[test]
    fn routed_threads_and_the_threads_they_start_send_parallel_work_to_the_pool_only_while_routed() {
        let pool = ReservedPool::new(2, "cuzk-test-routed").unwrap();
        let on_pool = |names: &[String]| names.iter().all(|n| n.starts_with("cuzk-test-routed-"));
        assert!(!on_pool(&parallel(worker_names)), "unrouted: the global pool");
        {
            let _route = pool.route();
            assert!(on_pool(&parallel(worker_names)));
            // The routed thread itself is not one of the pool's (it may block).
            assert!(!std::thread::current().name().unwrap_or("").starts_with("cuzk-test-routed-"));
            let (told, untold) = std::thread::scope(|s| {
                let told = s.spawn(inherit(|| parallel(worker_names))).join().unwrap();
                let untold = s.spawn(|| parallel(worker_names)).join().unwrap();
                (told, untold)
            });
            assert!(on_pool(&told), "a started thread told to inherit the route uses the pool");
            assert!(!on_pool(&untold), "one not told does not");
        }
        assert!(!on_pool(&parallel(worker_names)), "the route ends with its guard");
    }

    #[test]
    fn a_one_thread_pool_serves_several_routed_threads_that_block_without_deadlock() {
        // Four routed threads, each holding a lock in turn while the pool's one thread does
        // their parallel work: the pool's thread never blocks, so all finish.
        let pool = ReservedPool::new(1, "cuzk-test-one").unwrap();
        let lock = std::sync::Mutex::new(0u64);
        let _route = pool.route();
        std::thread::scope(|s| {
            for k in 0..4u64 {
                let lock = &lock;
                s.spawn(inherit(move || {
                    let mut held = lock.lock().unwrap();
                    *held += parallel(|| (0..1000u64).into_par_iter().map(|i| i * k).sum::<u64>());
                }));
            }
        });
        assert_eq!(*lock.lock().unwrap(), (0..4u64).map(|k| k * 499_500).sum::<u64>());
    }
}
