//! The engine's priority queue of partitions waiting for a witness worker: a job's
//! [`Priority`] decides which partition a free worker takes next, so a WinningPoSt submitted
//! behind a 32 GiB PoRep sector waits for at most the partitions already being worked on, not
//! for the whole sector. Within a priority, first submitted first served (a proof's partitions
//! in order). Nothing waits forever: a queued partition rises one priority level for every
//! `aging` it has waited, up to [`Priority::High`], so a steady stream of higher-priority work
//! delays lower-priority work but cannot starve it; only [`Priority::Critical`] work itself
//! can keep the workers busy past that, and it is the kind that is rare and short
//! (WinningPoSt). It knows nothing of what the items are.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How urgent a job is: `cuzk-core`'s level, so that the device lock orders a prover's calls
/// by the same priority its job was queued at (see [`cuzk_core::priority`]).
pub use cuzk_core::priority::Priority;

struct Entry<T> {
    priority: Priority,
    since: Instant,
    seq: u64,
    item: T,
}

struct State<T> {
    items: Vec<Entry<T>>,
    closed: bool,
}

/// A blocking multi-consumer priority queue with ageing (see the module documentation).
pub struct PriorityQueue<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    aging: Duration,
}

impl<T> PriorityQueue<T> {
    /// An empty queue whose waiting items rise one level per `aging` (zero: never).
    pub fn new(aging: Duration) -> Self {
        PriorityQueue { state: Mutex::new(State { items: Vec::new(), closed: false }), ready: Condvar::new(), aging }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `item` at `priority` (never blocks); among equal (aged) priorities the lowest
    /// `order` is served first (the engine passes submission order, so that which parse
    /// thread finished first does not matter). Items pushed after [`Self::close`] are still
    /// served.
    pub fn push(&self, priority: Priority, order: u64, item: T) {
        let mut s = self.lock();
        s.items.push(Entry { priority, since: Instant::now(), seq: order, item });
        drop(s);
        // Every waiter: a filtered one (`pop_at_least`) may not take this item.
        self.ready.notify_all();
    }

    /// No more pushes will come: once empty, [`Self::pop`] returns `None` to every caller.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// The item to serve now — highest aged priority, then earliest pushed — waiting for one;
    /// `None` once the queue is closed and empty.
    pub fn pop(&self) -> Option<T> {
        self.pop_at_least(Priority::Low)
    }

    /// [`Self::pop`] among the items queued at `min` or above (their own priority, not aged):
    /// what a worker reserved for urgent work takes.
    pub fn pop_at_least(&self, min: Priority) -> Option<T> {
        let mut s = self.lock();
        loop {
            if let Some(at) = self.best(&s.items, Instant::now(), min) {
                return Some(s.items.swap_remove(at).item);
            }
            if s.closed {
                return None;
            }
            s = self.ready.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// How many items wait.
    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn best(&self, items: &[Entry<T>], now: Instant, min: Priority) -> Option<usize> {
        let rank = |e: &Entry<T>| (e.priority.aged(now.duration_since(e.since), self.aging), std::cmp::Reverse(e.seq));
        (0..items.len()).filter(|&i| items[i].priority >= min).max_by_key(|&i| rank(&items[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn higher_priority_first_then_submission_order() {
        let q = PriorityQueue::new(Duration::ZERO);
        for (p, x) in [(Priority::Normal, 1), (Priority::Low, 2), (Priority::Normal, 3), (Priority::Critical, 4), (Priority::High, 5)] {
            q.push(p, x, x);
        }
        q.close();
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [4, 5, 1, 3, 2]);
    }

    #[test]
    fn waiting_work_ages_up_to_high_but_never_to_critical() {
        // The ageing rule itself is tested with `Priority::aged` in cuzk-core; here, the queue
        // serves by it.
        let aging = Duration::from_millis(40);
        let q = PriorityQueue::new(aging);
        q.push(Priority::Low, 0, "old low");
        std::thread::sleep(Duration::from_millis(90));
        q.push(Priority::High, 1, "new high");
        q.push(Priority::Critical, 2, "new critical");
        // The old LOW has aged to HIGH and, being older, goes before the new HIGH, never
        // before CRITICAL.
        assert_eq!((q.pop(), q.pop(), q.pop()), (Some("new critical"), Some("old low"), Some("new high")));
    }

    #[test]
    fn pop_waits_for_a_push_and_every_waiter_ends_on_close() {
        let q = Arc::new(PriorityQueue::new(Duration::ZERO));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn({
                    let q = q.clone();
                    move || q.pop()
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(30));
        q.push(Priority::Normal, 0, 7);
        q.close();
        let mut got: Vec<_> = waiters.into_iter().map(|t| t.join().unwrap()).collect();
        got.sort();
        assert_eq!(got, [None, None, Some(7)]);
        assert!(q.is_empty());
    }

    #[test]
    fn a_reserved_worker_takes_only_work_queued_urgent_and_is_woken_for_it() {
        use std::sync::mpsc::channel;
        let wait = Duration::from_secs(5);
        // Each worker reports what it took on a channel, so a lost wake-up fails, not hangs.
        let worker = |q: &Arc<PriorityQueue<&'static str>>, min: Priority| {
            let (tx, rx) = channel();
            let q = q.clone();
            std::thread::spawn(move || tx.send(q.pop_at_least(min)).unwrap());
            rx
        };
        // A Low item aged past High is still Low to a reserved worker: its own priority counts.
        let q = Arc::new(PriorityQueue::new(Duration::from_millis(1)));
        q.push(Priority::Low, 0, "sector");
        std::thread::sleep(Duration::from_millis(10));
        let reserved = worker(&q, Priority::High);
        assert!(reserved.recv_timeout(Duration::from_millis(50)).is_err(), "the reserved worker took Low work");
        q.push(Priority::Critical, 1, "winning");
        assert_eq!(reserved.recv_timeout(wait).unwrap(), Some("winning"));
        assert_eq!(q.pop(), Some("sector"));
        // Both kinds of worker asleep on the queue: a Low push must reach the plain one even
        // when the reserved one is woken too, and a High push then reaches the reserved one.
        let q = Arc::new(PriorityQueue::new(Duration::ZERO));
        let (plain, reserved) = (worker(&q, Priority::Low), worker(&q, Priority::High));
        std::thread::sleep(Duration::from_millis(30));
        q.push(Priority::Low, 2, "sector 2");
        assert_eq!(plain.recv_timeout(wait).unwrap(), Some("sector 2"), "the plain worker was not woken");
        q.push(Priority::High, 3, "window");
        assert_eq!(reserved.recv_timeout(wait).unwrap(), Some("window"));
    }
}
