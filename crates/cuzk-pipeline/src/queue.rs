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

use serde::Serialize;

/// How urgent a job is (the daemon maps Curio's wire priorities onto these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Priority {
    /// Background work.
    Low,
    /// PoRep, SnapDeals.
    #[default]
    Normal,
    /// WindowPoSt.
    High,
    /// WinningPoSt: a block reward is lost if it is late.
    Critical,
}

impl Priority {
    fn level(self) -> u64 {
        self as u64
    }

    /// This priority after waiting `waited`, aged one level per `aging` up to `High`
    /// (`Critical` stays itself; nothing else becomes it).
    pub fn aged(self, waited: Duration, aging: Duration) -> u64 {
        if self >= Priority::High || aging.is_zero() {
            return self.level();
        }
        let steps = (waited.as_nanos() / aging.as_nanos()).min(u64::MAX as u128) as u64;
        (self.level().saturating_add(steps)).min(Priority::High.level())
    }
}

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
        self.ready.notify_one();
    }

    /// No more pushes will come: once empty, [`Self::pop`] returns `None` to every caller.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// The item to serve now — highest aged priority, then earliest pushed — waiting for one;
    /// `None` once the queue is closed and empty.
    pub fn pop(&self) -> Option<T> {
        let mut s = self.lock();
        loop {
            if let Some(at) = self.best(&s.items, Instant::now()) {
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

    fn best(&self, items: &[Entry<T>], now: Instant) -> Option<usize> {
        let rank = |e: &Entry<T>| (e.priority.aged(now.duration_since(e.since), self.aging), std::cmp::Reverse(e.seq));
        (0..items.len()).max_by_key(|&i| rank(&items[i]))
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
        let aging = Duration::from_millis(40);
        assert_eq!(Priority::Low.aged(Duration::from_millis(39), aging), Priority::Low.level());
        assert_eq!(Priority::Low.aged(Duration::from_millis(80), aging), Priority::High.level());
        assert_eq!(Priority::Low.aged(Duration::from_secs(3600), aging), Priority::High.level());
        assert_eq!(Priority::Critical.aged(Duration::ZERO, aging), Priority::Critical.level());

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
}
