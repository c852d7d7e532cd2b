//! How urgent the work of a thread is. [`Priority`] is the level a job is submitted at (the
//! pipeline's queues order by it, the daemon maps Curio's wire priorities onto it); a thread
//! that works for a job says so with [`Priority::enter`], a scoped guard that makes the job's
//! priority the thread's *current* one ([`Priority::current`]) until it is dropped. Locks
//! that order their waiters by priority ([`crate::device_lock::DeviceLock`]) read it, so a
//! backend learns whose device call it is serving without any change to its traits. A
//! thread-local does not cross threads by itself: code that hands a job's work to helper
//! threads passes it on explicitly with [`inherit`] (the overlapped MSM schedule of
//! [`crate::groth16::prove`] does). A thread that never entered one works at
//! [`Priority::Normal`]. It knows nothing of jobs, queues or devices.

use std::cell::Cell;
use std::marker::PhantomData;
use std::time::Duration;

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

thread_local! {
    static CURRENT: Cell<Option<Priority>> = const { Cell::new(None) };
}

impl Priority {
    /// The level as a number, `Low` = 0 up to `Critical` = 3.
    pub fn level(self) -> u64 {
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

    /// The priority of the job this thread works for: the innermost [`Priority::enter`]
    /// still in force, else [`Priority::Normal`].
    pub fn current() -> Priority {
        CURRENT.with(|c| c.get()).unwrap_or_default()
    }

    /// Makes `self` this thread's current priority until the guard is dropped, when the
    /// previous one (or none) is back. The guard stays on the thread that made it.
    #[must_use = "the priority holds only while the guard lives"]
    pub fn enter(self) -> PriorityScope {
        let previous = CURRENT.with(|c| c.replace(Some(self)));
        PriorityScope { previous, _thread: PhantomData }
    }
}

/// The guard of [`Priority::enter`]: restores the thread's previous priority when dropped.
#[derive(Debug)]
pub struct PriorityScope {
    previous: Option<Priority>,
    /// Not `Send`: the thread-local it restores belongs to the thread that entered.
    _thread: PhantomData<*const ()>,
}

impl Drop for PriorityScope {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// `f` wrapped to run at the calling thread's current priority, wherever it runs: call it
/// here, hand the result to another thread (`std::thread::spawn(inherit(|| ...))`).
pub fn inherit<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let p = Priority::current();
    move || {
        let _scope = p.enter();
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore_and_helper_threads_inherit_only_when_told() {
        assert_eq!(Priority::current(), Priority::Normal);
        {
            let _outer = Priority::Critical.enter();
            {
                let _inner = Priority::Low.enter();
                assert_eq!(Priority::current(), Priority::Low);
            }
            assert_eq!(Priority::current(), Priority::Critical);
            let told = std::thread::spawn(inherit(Priority::current)).join().unwrap();
            let untold = std::thread::spawn(Priority::current).join().unwrap();
            assert_eq!((told, untold), (Priority::Critical, Priority::Normal));
        }
        assert_eq!(Priority::current(), Priority::Normal);
    }

    #[test]
    fn waiting_work_ages_up_to_high_but_never_to_critical() {
        let aging = Duration::from_millis(40);
        assert_eq!(Priority::Low.aged(Duration::from_millis(39), aging), Priority::Low.level());
        assert_eq!(Priority::Low.aged(Duration::from_millis(80), aging), Priority::High.level());
        assert_eq!(Priority::Low.aged(Duration::from_secs(3600), aging), Priority::High.level());
        assert_eq!(Priority::Critical.aged(Duration::ZERO, aging), Priority::Critical.level());
        assert_eq!(Priority::Low.aged(Duration::from_secs(3600), Duration::ZERO), Priority::Low.level());
    }
}
