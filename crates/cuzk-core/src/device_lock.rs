//! A lock for the calls of one device, ordered by priority and surviving a panic. Each
//! device call (an MSM, an NTT or quotient step, an upload) takes it once, so the calls of
//! several jobs proving on one device interleave at those boundaries; [`DeviceLock`] decides
//! who goes next. **Pre-emption rule:** when it is released, the waiter whose thread's
//! current [`Priority`] (see [`crate::priority`]) is highest gets it; among equal priorities
//! the one that asked first (a FIFO ticket). A holder is never interrupted: an urgent job
//! takes the device at the next call boundary of the job running on it. **Starvation rule:**
//! a waiter passed over by a later arrival counts one *overtake*; once it has been overtaken
//! `max_overtakes` times ([`DEFAULT_MAX_OVERTAKES`], more than the device calls of one
//! partition) it goes next whatever the priorities (the earliest such waiter first), so a
//! stream of urgent calls delays a waiting lower-priority call by at most that many calls.
//! **Urgent grace:** with [`DeviceLock::with_urgent_grace`], a holder above
//! [`Priority::Normal`] keeps the lock reserved for its priority for that long after it
//! releases it: lower-priority waiters wait out the grace (or their overtake bound), so an
//! urgent job's next call, a few milliseconds of host work later, does not queue behind a
//! bulk job's call that slipped in between. **Panics:** a `std::sync::Mutex` whose holder panicked is poisoned and every later
//! `lock().unwrap()` panics too: one panic on a device would disable that GPU until the
//! process restarts. This lock never answers with poison: the next caller gets the guard
//! after `reset` has put the guarded state back into a known-good shape (for the CUDA
//! backend: resident bases and matrices forgotten, so they are uploaded again). It knows
//! nothing of devices beyond the reset its caller passes.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::priority::Priority;

/// Overtakes a waiter suffers before it goes next regardless of priority: above the ~10
/// device calls of one partition proof, so one urgent partition runs through without
/// yielding, while a steady stream of urgent partitions lets a waiting call in after at most
/// this many of theirs.
pub const DEFAULT_MAX_OVERTAKES: u32 = 16;

/// The urgent grace a device's lock gets by default, in milliseconds (see
/// [`DeviceLock::with_urgent_grace`]): on the H100 under PoRep load, 150 ms held a
/// WinningPoSt's calls together where 25 ms let bulk calls in between (docs/RESULTS.md).
pub const DEFAULT_URGENT_GRACE_MS: u32 = 150;
/// The longest urgent grace a configuration may ask for, in milliseconds.
pub const MAX_URGENT_GRACE_MS: u32 = 1000;

#[derive(Debug)]
struct Waiter {
    ticket: u64,
    priority: Priority,
    overtaken: u32,
}

#[derive(Debug, Default)]
struct State {
    held: bool,
    poisoned: bool,
    next_ticket: u64,
    waiters: Vec<Waiter>,
    /// The priority of the current (or last) holder.
    holder: Priority,
    /// Until when waiters below this priority are held back (the urgent grace).
    reserved: Option<(Priority, Instant)>,
}

/// A priority-ordered lock that recovers from a panicked holder (see the module text).
pub struct DeviceLock<T> {
    state: Mutex<State>,
    turn: Condvar,
    value: UnsafeCell<T>,
    recoveries: AtomicU64,
    max_overtakes: u32,
    urgent_grace: Duration,
}

// SAFETY: the value is reached only through a guard, and at most one guard exists at a time
// (`held`), exactly as for `std::sync::Mutex<T>`.
unsafe impl<T: Send> Send for DeviceLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for DeviceLock<T> {}

impl<T: Default> Default for DeviceLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> std::fmt::Debug for DeviceLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state();
        f.debug_struct("DeviceLock").field("held", &s.held).field("waiting", &s.waiters.len()).finish()
    }
}

impl<T> DeviceLock<T> {
    /// An unlocked lock holding `value`, with [`DEFAULT_MAX_OVERTAKES`] (`const`, so it can be
    /// a `static`).
    pub const fn new(value: T) -> Self {
        Self::with_max_overtakes(value, DEFAULT_MAX_OVERTAKES)
    }

    /// An unlocked lock whose waiters are overtaken at most `max_overtakes` times (0: plain
    /// arrival order).
    pub const fn with_max_overtakes(value: T, max_overtakes: u32) -> Self {
        DeviceLock {
            state: Mutex::new(State {
                held: false,
                poisoned: false,
                next_ticket: 0,
                waiters: Vec::new(),
                holder: Priority::Normal,
                reserved: None,
            }),
            turn: Condvar::new(),
            value: UnsafeCell::new(value),
            recoveries: AtomicU64::new(0),
            max_overtakes,
            urgent_grace: Duration::ZERO,
        }
    }

    /// This lock with the urgent grace (see the module text): after a holder above
    /// [`Priority::Normal`] releases it, lower-priority waiters wait up to `grace` more.
    pub fn with_urgent_grace(mut self, grace: Duration) -> Self {
        self.urgent_grace = grace;
        self
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while this inner mutex is held; recover anyway.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The waiter to serve now: the earliest one overtaken `max_overtakes` times, else the
    /// highest priority, earliest ticket first, among those at or above `floor` (the
    /// reserved priority during an urgent grace); `None` when every waiter is below it.
    fn next(&self, waiters: &[Waiter], floor: Priority) -> Option<usize> {
        let due = (0..waiters.len()).filter(|&i| waiters[i].overtaken >= self.max_overtakes).min_by_key(|&i| waiters[i].ticket);
        due.or_else(|| {
            (0..waiters.len())
                .filter(|&i| waiters[i].priority >= floor)
                .max_by_key(|&i| (waiters[i].priority, std::cmp::Reverse(waiters[i].ticket)))
        })
    }

    /// The guard, at the calling thread's current priority; when a holder panicked, `reset`
    /// repairs the state first and the lock is usable again (counted in
    /// [`DeviceLock::recoveries`]).
    pub fn lock_or_reset(&self, reset: impl FnOnce(&mut T)) -> DeviceGuard<'_, T> {
        let priority = Priority::current();
        let mut s = self.state();
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        s.waiters.push(Waiter { ticket, priority, overtaken: 0 });
        loop {
            // The grace in force now, if any: its priority floor and when it ends.
            let now = Instant::now();
            let grace = s.reserved.filter(|(_, until)| *until > now);
            if !s.held {
                let floor = grace.map_or(Priority::Low, |(p, _)| p);
                if let Some(i) = self.next(&s.waiters, floor) {
                    if s.waiters[i].ticket == ticket {
                        s.waiters.swap_remove(i);
                        for w in s.waiters.iter_mut().filter(|w| w.ticket < ticket) {
                            w.overtaken += 1;
                        }
                        s.held = true;
                        s.holder = priority;
                        break;
                    }
                }
            }
            s = match grace {
                // Held back by a grace: look again when it ends (or when the lock turns).
                Some((_, until)) => self.turn.wait_timeout(s, until - now).unwrap_or_else(|e| e.into_inner()).0,
                None => self.turn.wait(s).unwrap_or_else(|e| e.into_inner()),
            };
        }
        let poisoned = std::mem::take(&mut s.poisoned);
        drop(s);
        let mut guard = DeviceGuard { lock: self, panicking: std::thread::panicking(), _thread: PhantomData };
        if poisoned {
            reset(&mut guard);
            let n = self.recoveries.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(recoveries = n, "a holder of this lock panicked; its state was reset and the lock is in use again");
        }
        guard
    }

    /// The guard, keeping the state as the panicked holder (if any) left it: for state that
    /// is consistent after every single step (a pool, a log).
    pub fn lock(&self) -> DeviceGuard<'_, T> {
        self.lock_or_reset(|_| {})
    }

    /// How many times a panicked holder's state was reset.
    pub fn recoveries(&self) -> u64 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// How many threads wait for the lock now.
    pub fn waiting(&self) -> usize {
        self.state().waiters.len()
    }

    fn release(&self, panicked: bool) {
        let mut s = self.state();
        s.held = false;
        s.poisoned |= panicked;
        if s.holder > Priority::Normal && !self.urgent_grace.is_zero() {
            s.reserved = Some((s.holder, Instant::now() + self.urgent_grace));
        }
        drop(s);
        self.turn.notify_all();
    }
}

/// Access to a [`DeviceLock`]'s value; dropping it hands the lock to the next waiter.
pub struct DeviceGuard<'a, T> {
    lock: &'a DeviceLock<T>,
    /// Whether the thread was already unwinding when it took the lock (as `std` does, only a
    /// panic that starts under the guard poisons).
    panicking: bool,
    /// Not `Send`, like `std::sync::MutexGuard`.
    _thread: PhantomData<*const ()>,
}

impl<T: std::fmt::Debug> std::fmt::Debug for DeviceGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<T> Deref for DeviceGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (`held`), so no `&mut` to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for DeviceGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only one and is borrowed mutably.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for DeviceGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.release(!self.panicking && std::thread::panicking());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::Arc;

    /// Starts a thread that takes `lock` at `p` and records `name` under it; returns once it
    /// waits (so that the tickets are in spawn order).
    fn waiter(lock: &Arc<DeviceLock<Vec<&'static str>>>, p: Priority, name: &'static str) -> std::thread::JoinHandle<()> {
        let before = lock.waiting();
        let l = lock.clone();
        let t = std::thread::spawn(move || {
            let _p = p.enter();
            l.lock().push(name);
        });
        let start = Instant::now();
        while lock.waiting() == before {
            assert!(start.elapsed() < Duration::from_secs(10), "{name} never queued");
            std::thread::yield_now();
        }
        t
    }

    fn order(lock: DeviceLock<Vec<&'static str>>, queue: &[(Priority, &'static str)]) -> Vec<&'static str> {
        let lock = Arc::new(lock);
        let holder = lock.lock();
        let threads: Vec<_> = queue.iter().map(|&(p, name)| waiter(&lock, p, name)).collect();
        drop(holder);
        threads.into_iter().for_each(|t| t.join().unwrap());
        let got = lock.lock().clone();
        got
    }

    #[test]
    fn the_highest_priority_waiter_goes_first_and_equal_priorities_in_arrival_order() {
        let got =
            order(DeviceLock::new(Vec::new()), &[(Priority::Low, "low 1"), (Priority::Critical, "critical"), (Priority::Low, "low 2")]);
        assert_eq!(got, ["critical", "low 1", "low 2"]);
        let got = order(
            DeviceLock::new(Vec::new()),
            &[(Priority::Normal, "n1"), (Priority::High, "h1"), (Priority::Normal, "n2"), (Priority::High, "h2"), (Priority::Low, "l")],
        );
        assert_eq!(got, ["h1", "h2", "n1", "n2", "l"]);
    }

    #[test]
    fn a_waiter_is_overtaken_at_most_max_overtakes_times() {
        let queue = [
            (Priority::Low, "low"),
            (Priority::Critical, "c1"),
            (Priority::Critical, "c2"),
            (Priority::Critical, "c3"),
            (Priority::Critical, "c4"),
        ];
        // Overtaken by c1 and c2, the LOW waiter goes before c3.
        assert_eq!(order(DeviceLock::with_max_overtakes(Vec::new(), 2), &queue), ["c1", "c2", "low", "c3", "c4"]);
        // Zero: arrival order.
        assert_eq!(order(DeviceLock::with_max_overtakes(Vec::new(), 0), &queue), ["low", "c1", "c2", "c3", "c4"]);
        // The default bound is above this stream.
        assert_eq!(order(DeviceLock::new(Vec::new()), &queue), ["c1", "c2", "c3", "c4", "low"]);
    }

    /// A CRITICAL holder that releases and comes back within the grace goes before a NORMAL
    /// waiter that queued while it held the lock; without a grace, the NORMAL waiter goes in
    /// between; and a grace that is not used ends: the waiter is served after it.
    #[test]
    fn the_urgent_grace_holds_lower_waiters_back_until_it_ends() {
        fn run(grace: Duration, back_after: Duration) -> (Vec<&'static str>, Duration) {
            let lock = Arc::new(DeviceLock::new(Vec::new()).with_urgent_grace(grace));
            let (to_urgent, urgent_rx) = std::sync::mpsc::channel::<()>();
            let l = lock.clone();
            let urgent = std::thread::spawn(move || {
                let _p = Priority::Critical.enter();
                let mut g = l.lock();
                g.push("critical 1");
                urgent_rx.recv().unwrap();
                drop(g);
                std::thread::sleep(back_after);
                l.lock().push("critical 2");
            });
            while lock.state().holder != Priority::Critical {
                std::thread::yield_now();
            }
            let normal = waiter(&lock, Priority::Normal, "normal");
            let released = Instant::now();
            to_urgent.send(()).unwrap();
            normal.join().unwrap();
            let normal_waited = released.elapsed();
            urgent.join().unwrap();
            let got = lock.lock().clone();
            (got, normal_waited)
        }
        let (got, _) = run(Duration::from_millis(500), Duration::from_millis(20));
        assert_eq!(got, ["critical 1", "critical 2", "normal"], "the urgent holder's next call comes first");
        let (got, _) = run(Duration::ZERO, Duration::from_millis(200));
        assert_eq!(got, ["critical 1", "normal", "critical 2"], "no grace: the waiter goes at once");
        let (got, waited) = run(Duration::from_millis(100), Duration::from_millis(1500));
        assert_eq!(got, ["critical 1", "normal", "critical 2"], "an unused grace ends");
        assert!(waited >= Duration::from_millis(100) && waited < Duration::from_millis(1400), "waited {waited:?}");
    }

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

    #[test]
    fn a_guard_taken_while_unwinding_poisons_nothing() {
        struct LockOnDrop<'a>(&'a DeviceLock<u32>);
        impl Drop for LockOnDrop<'_> {
            fn drop(&mut self) {
                *self.0.lock() += 1;
            }
        }
        let l = DeviceLock::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _d = LockOnDrop(&l);
            panic!("unwinding past a lock taken in a destructor");
        }));
        assert!(r.is_err());
        let resets = std::cell::Cell::new(0);
        assert_eq!(*l.lock_or_reset(|_| resets.set(1)), 1);
        assert_eq!((resets.get(), l.recoveries()), (0, 0));
    }
}
