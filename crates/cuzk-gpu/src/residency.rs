//! Which SRS sections and circuit matrices stay in device memory. [`ResidentSet`]: resident
//! copies of SRS sections under a byte budget, least recently used dropped first when a new
//! one needs the room — unless the proofs cycle through more sections than fit: a section
//! whose room would cost a copy used since the section's own last use is streamed instead,
//! so one section travels with each call rather than every section being uploaded again in
//! turn. A copy a running call still holds (its `Arc` is shared) is never chosen, so eviction
//! cannot free memory under a kernel; a section larger than the whole budget is refused, and
//! the caller streams its bases with each call instead.
//! [`RecentSlots`]: the matrices of the last few circuits, so that circuits proved in turn on
//! one device (PoRep partitions with a WinningPoSt between them) each find theirs resident
//! instead of uploading gigabytes again at every switch. [`smallest_fitting`]: which pooled
//! pinned host buffer a call takes. All know keys, sizes and use order — not CUDA — so the
//! policies are tested without a device; the CUDA backend keeps its handles in them.

use std::sync::Arc;

use cuzk_core::backend::ResidentReport;

/// Which host slice a resident copy mirrors: curve tag, address, length and a fingerprint of
/// its contents (a freed slice's address can be reused for other points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionKey {
    /// The curve (G1 or G2) of the points.
    pub tag: u8,
    /// The host slice's address.
    pub addr: usize,
    /// Its length in points.
    pub len: usize,
    /// A sample of its contents.
    pub fingerprint: u64,
}

struct Entry<T> {
    key: SectionKey,
    bytes: u64,
    last_use: u64,
    value: Arc<T>,
}

/// Why a section cannot be made resident now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRoom {
    /// It is larger than the whole budget.
    OverBudget,
    /// Copies in use by running calls hold the room it needs.
    Busy,
    /// The room would cost a copy used since this section's own last use: the proofs cycle
    /// through more sections than fit, and evicting that copy would only move the miss to it.
    Cycle,
}

/// How many sections' last uses a [`ResidentSet`] remembers after they left (or never
/// entered) it: the SRS sections of a few circuits.
const REMEMBERED: usize = 64;

/// Resident copies under an optional byte budget.
pub struct ResidentSet<T> {
    entries: Vec<Entry<T>>,
    budget: Option<u64>,
    clock: u64,
    /// When sections were last asked for while not resident, or last used before they were
    /// evicted; oldest record first.
    last_asked: Vec<(SectionKey, u64)>,
    evictions: u64,
    streamed: u64,
}

impl<T> ResidentSet<T> {
    /// An empty set; `budget` caps the bytes it holds (`None`: no cap).
    pub fn new(budget: Option<u64>) -> Self {
        ResidentSet { entries: Vec::new(), budget, clock: 0, last_asked: Vec::new(), evictions: 0, streamed: 0 }
    }

    /// The copy of `key`, marked as just used.
    pub fn get(&mut self, key: &SectionKey) -> Option<Arc<T>> {
        self.clock += 1;
        let now = self.clock;
        let e = self.entries.iter_mut().find(|e| e.key == *key)?;
        e.last_use = now;
        Some(e.value.clone())
    }

    /// Drops copies of the slice at `addr` with curve `tag` whatever their length or
    /// contents: that slice is gone, or holds other points now.
    pub fn remove_stale(&mut self, tag: u8, addr: usize) {
        self.entries.retain(|e| !(e.key.tag == tag && e.key.addr == addr));
    }

    /// Frees room for `bytes` more under the budget for the section `key` (not resident),
    /// dropping unused copies least recently used first. Refused when the section is larger
    /// than the budget, when running calls hold the room, or when the room would cost a copy
    /// used since `key` was last asked for ([`NoRoom::Cycle`]). On `Err` nothing was dropped,
    /// and the caller streams the section with its call.
    pub fn make_room(&mut self, key: &SectionKey, bytes: u64) -> Result<(), NoRoom> {
        self.clock += 1;
        let previous = self.remember_asked(key, self.clock);
        let Some(budget) = self.budget else { return Ok(()) };
        let refused = |set: &mut Self, why| {
            set.streamed += 1;
            Err(why)
        };
        if bytes > budget {
            return refused(self, NoRoom::OverBudget);
        }
        let Some(victims) = self.victims_for(budget, bytes) else { return refused(self, NoRoom::Busy) };
        let newest_victim = victims.iter().map(|&i| self.entries[i].last_use).max();
        if let (Some(asked), Some(used)) = (previous, newest_victim) {
            if used > asked {
                return refused(self, NoRoom::Cycle);
            }
        }
        // Descending, so that each swap_remove moves only an entry that stays.
        let mut victims = victims;
        victims.sort_unstable_by(|a, b| b.cmp(a));
        for i in victims {
            self.evict_at(i);
        }
        Ok(())
    }

    /// The unheld copies, least recently used first, whose eviction makes room for `bytes`
    /// (empty when it fits now); `None` when all of them together are not enough.
    fn victims_for(&self, budget: u64, bytes: u64) -> Option<Vec<usize>> {
        let mut free = budget.saturating_sub(self.bytes());
        let mut unheld: Vec<usize> = (0..self.entries.len()).filter(|&i| Arc::strong_count(&self.entries[i].value) == 1).collect();
        unheld.sort_by_key(|&i| self.entries[i].last_use);
        let mut victims = Vec::new();
        for i in unheld {
            if free >= bytes {
                break;
            }
            free += self.entries[i].bytes;
            victims.push(i);
        }
        (free >= bytes).then_some(victims)
    }

    /// Records that `key` was asked for (or, leaving, last used) at `now`; returns the time
    /// recorded before, if remembered.
    fn remember_asked(&mut self, key: &SectionKey, now: u64) -> Option<u64> {
        let before = self.last_asked.iter().position(|(k, _)| k == key).map(|i| self.last_asked.remove(i).1);
        if self.last_asked.len() == REMEMBERED {
            self.last_asked.remove(0);
        }
        self.last_asked.push((*key, now));
        before
    }

    /// Drops the least recently used copy no call holds; `false` when there is none.
    pub fn evict_lru(&mut self) -> bool {
        let victim = self.entries.iter().enumerate().filter(|(_, e)| Arc::strong_count(&e.value) == 1).min_by_key(|(_, e)| e.last_use);
        let Some((i, _)) = victim else { return false };
        self.evict_at(i);
        true
    }

    /// Drops entry `i`, remembering when it was last used.
    fn evict_at(&mut self, i: usize) {
        let gone = self.entries.swap_remove(i);
        self.remember_asked(&gone.key, gone.last_use);
        self.evictions += 1;
    }

    /// Adds a copy of `bytes` device bytes (after [`ResidentSet::make_room`]).
    pub fn insert(&mut self, key: SectionKey, bytes: u64, value: Arc<T>) {
        self.clock += 1;
        self.entries.push(Entry { key, bytes, last_use: self.clock, value });
    }

    /// Drops the copies of curve `tag` whose host slices lie inside the host byte range
    /// `range` (a parameter section, of which a prover may have used sub-slices), with
    /// `point_size` host bytes per point; returns the bytes freed now (copies a running call
    /// holds are freed when it lets go, and are not counted).
    pub fn forget(&mut self, tag: u8, range: std::ops::Range<usize>, point_size: usize) -> u64 {
        let mut freed = 0;
        self.entries.retain(|e| {
            let k = e.key;
            let hit = k.tag == tag && k.addr >= range.start && k.addr + k.len * point_size <= range.end;
            if hit && Arc::strong_count(&e.value) == 1 {
                freed += e.bytes;
            }
            !hit
        });
        freed
    }

    /// Drops every copy (after a panic under the device lock, or before a last-chance retry).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.bytes).sum()
    }

    /// What is resident, for status and metrics.
    pub fn report(&self) -> ResidentReport {
        ResidentReport {
            sections: self.entries.len(),
            bytes: self.bytes(),
            budget_bytes: self.budget,
            evictions: self.evictions,
            streamed: self.streamed,
            ..ResidentReport::default()
        }
    }

    /// The copies, most recently used last (for tests and logs).
    pub fn keys_by_use(&self) -> Vec<SectionKey> {
        let mut v: Vec<_> = self.entries.iter().map(|e| (e.last_use, e.key)).collect();
        v.sort_by_key(|(t, _)| *t);
        v.into_iter().map(|(_, k)| k).collect()
    }
}

/// The values of the last `capacity` keys used, most recent last: a new key beyond the
/// capacity drops the least recently used value (a running call holding its `Arc` keeps it
/// alive until it finishes; nothing else does).
pub struct RecentSlots<K, T> {
    capacity: usize,
    entries: Vec<(K, Arc<T>)>,
}

impl<K: PartialEq, T> RecentSlots<K, T> {
    /// Empty, keeping at most `capacity` values (at least 1).
    pub const fn new(capacity: usize) -> Self {
        RecentSlots { capacity: if capacity == 0 { 1 } else { capacity }, entries: Vec::new() }
    }

    /// The value of `key`, now the most recently used; `None` if absent.
    pub fn get(&mut self, key: &K) -> Option<Arc<T>> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        let entry = self.entries.remove(i);
        let value = entry.1.clone();
        self.entries.push(entry);
        Some(value)
    }

    /// Whether `key` has a value (its use is not counted).
    pub fn contains(&self, key: &K) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    /// Adds `value` under `key` (replacing a value of the same key) as the most recently used,
    /// dropping the least recently used values beyond the capacity; returns how many it dropped.
    pub fn insert(&mut self, key: K, value: Arc<T>) -> usize {
        self.entries.retain(|(k, _)| *k != key);
        self.entries.push((key, value));
        let over = self.entries.len().saturating_sub(self.capacity);
        self.entries.drain(..over);
        over
    }

    /// Drops the least recently used value no running call holds; `false` if there is none.
    pub fn evict_lru_unheld(&mut self) -> bool {
        match self.entries.iter().position(|(_, v)| Arc::strong_count(v) == 1) {
            Some(i) => {
                self.entries.remove(i);
                true
            }
            None => false,
        }
    }

    /// Drops every value (those running calls hold live on until they finish).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The values it keeps, least recently used first.
    pub fn values(&self) -> impl Iterator<Item = &Arc<T>> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// How many values it keeps now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The index of the smallest of `sizes` that holds `bytes`, if any: a small proof's staging
/// takes a small pooled buffer, never the big one the next big partition needs (which would
/// then pin a new one — seconds in the driver, beside every other device call).
pub fn smallest_fitting(sizes: impl Iterator<Item = usize>, bytes: usize) -> Option<usize> {
    sizes.enumerate().filter(|&(_, size)| size >= bytes).min_by_key(|&(_, size)| size).map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_takes_the_smallest_pooled_buffer_that_holds_it() {
        let pool = [4096, 12, 64, 12];
        assert_eq!(smallest_fitting(pool.into_iter(), 10), Some(1));
        assert_eq!(smallest_fitting(pool.into_iter(), 13), Some(2));
        assert_eq!(smallest_fitting(pool.into_iter(), 4096), Some(0));
        assert_eq!(smallest_fitting(pool.into_iter(), 4097), None);
        assert_eq!(smallest_fitting(std::iter::empty(), 1), None);
    }

    fn key(addr: usize) -> SectionKey {
        SectionKey { tag: 1, addr, len: 10, fingerprint: addr as u64 * 7 }
    }

    fn add(set: &mut ResidentSet<usize>, addr: usize, bytes: u64) -> Result<Arc<usize>, NoRoom> {
        set.make_room(&key(addr), bytes)?;
        let v = Arc::new(addr);
        set.insert(key(addr), bytes, v.clone());
        Ok(v)
    }

    #[test]
    fn the_least_recently_used_unheld_copy_goes_first() {
        let mut set = ResidentSet::new(Some(100));
        for a in [1, 2, 3] {
            drop(add(&mut set, a, 30).unwrap());
        }
        assert!(set.get(&key(1)).is_some(), "1 is used again: 2 is now the oldest");
        drop(add(&mut set, 4, 30).unwrap());
        assert_eq!(set.keys_by_use(), vec![key(3), key(1), key(4)]);
        assert_eq!(
            set.report(),
            ResidentReport {
                sections: 3,
                bytes: 90,
                budget_bytes: Some(100),
                evictions: 1,
                streamed: 0,
                matrices: 0,
                matrix_bytes: 0,
                pinned_host_bytes: 0
            }
        );
        // 60 more: the two oldest go.
        drop(add(&mut set, 5, 60).unwrap());
        assert_eq!(set.keys_by_use(), vec![key(4), key(5)]);
        assert_eq!(set.report().evictions, 3);
        assert!(set.bytes() <= 100);
    }

    #[test]
    fn copies_in_use_are_never_evicted_and_the_caller_is_told_to_stream() {
        let mut set = ResidentSet::new(Some(100));
        let held = add(&mut set, 1, 60).unwrap();
        drop(add(&mut set, 2, 30).unwrap());
        assert_eq!(add(&mut set, 3, 50).unwrap_err(), NoRoom::Busy, "only 40 bytes are reclaimable");
        assert_eq!(set.keys_by_use(), vec![key(1), key(2)], "a refused request drops nothing");
        assert_eq!(add(&mut set, 3, 101).unwrap_err(), NoRoom::OverBudget);
        assert_eq!(set.report().streamed, 2);
        drop(add(&mut set, 3, 40).unwrap());
        assert_eq!(set.keys_by_use(), vec![key(1), key(3)], "the unheld copy made the room");
        drop(held);
        drop(add(&mut set, 4, 90).unwrap());
        assert_eq!(set.keys_by_use(), vec![key(4)]);
        assert!(set.evict_lru());
        assert_eq!(set.bytes(), 0);
        assert!(!set.evict_lru(), "nothing left to drop");
    }

    /// What the CUDA backend does for one section: a hit, else room and an upload, else the
    /// section streamed with its call.
    #[derive(Debug, PartialEq, Eq)]
    enum Asked {
        Hit,
        Uploaded,
        Streamed(NoRoom),
    }

    fn ask(set: &mut ResidentSet<usize>, addr: usize, bytes: u64) -> Asked {
        if set.get(&key(addr)).is_some() {
            return Asked::Hit;
        }
        match add(set, addr, bytes) {
            Ok(_) => Asked::Uploaded,
            Err(why) => Asked::Streamed(why),
        }
    }

    #[test]
    fn proofs_cycling_through_more_sections_than_fit_stream_one_instead_of_uploading_all_again() {
        // Five sections of 20 under a budget of 80, asked for in turn proof after proof (a
        // WindowPoSt partition under a cap). Least recently used alone would evict the next
        // one asked for every time: five uploads per proof, forever.
        let mut set = ResidentSet::new(Some(80));
        let first: Vec<Asked> = (1..=5).map(|a| ask(&mut set, a, 20)).collect();
        assert_eq!(first, [Asked::Uploaded, Asked::Uploaded, Asked::Uploaded, Asked::Uploaded, Asked::Uploaded]);
        assert_eq!(set.report().evictions, 1, "the fifth took the first's room");
        for proof in 0..4 {
            let asked: Vec<Asked> = (1..=5).map(|a| ask(&mut set, a, 20)).collect();
            assert_eq!(
                asked,
                [Asked::Streamed(NoRoom::Cycle), Asked::Hit, Asked::Hit, Asked::Hit, Asked::Hit],
                "proof {proof}: only the section that did not fit travels"
            );
        }
        assert_eq!((set.report().evictions, set.report().streamed), (1, 4));
        // The same cycle in another order: still one section streamed per proof, no upload.
        for _ in 0..3 {
            let asked: Vec<Asked> = [3, 1, 5, 2, 4].into_iter().map(|a| ask(&mut set, a, 20)).collect();
            assert_eq!(asked.iter().filter(|a| **a == Asked::Hit).count(), 4, "{asked:?}");
        }
        assert_eq!(set.report().evictions, 1);
    }

    #[test]
    fn sections_no_longer_used_give_way_after_one_round_of_the_work_that_replaced_them() {
        let mut set = ResidentSet::new(Some(60));
        for a in [11, 12, 13] {
            assert_eq!(ask(&mut set, a, 20), Asked::Uploaded);
        }
        // Another circuit's sections, never asked for before: least recently used makes room.
        for a in [1, 2, 3] {
            assert_eq!(ask(&mut set, a, 20), Asked::Uploaded);
        }
        assert_eq!(set.report().evictions, 3);
        // Back to the first circuit: 1, 2, 3 were used since 11, 12, 13 left, which looks like
        // a cycle, so they are streamed once …
        let back: Vec<Asked> = [11, 12, 13].into_iter().map(|a| ask(&mut set, a, 20)).collect();
        assert_eq!(back, [Asked::Streamed(NoRoom::Cycle), Asked::Streamed(NoRoom::Cycle), Asked::Streamed(NoRoom::Cycle)]);
        // … and when asked for again with 1, 2, 3 unused in between, they take the room.
        let again: Vec<Asked> = [11, 12, 13].into_iter().map(|a| ask(&mut set, a, 20)).collect();
        assert_eq!(again, [Asked::Uploaded, Asked::Uploaded, Asked::Uploaded]);
        assert_eq!(set.keys_by_use(), vec![key(11), key(12), key(13)]);
        assert_eq!(set.report().evictions, 6);
    }

    #[test]
    fn a_cycle_is_judged_by_the_unheld_copies_only_and_the_memory_of_asks_is_bounded() {
        let mut set = ResidentSet::new(Some(60));
        let held = add(&mut set, 1, 20).unwrap();
        for a in [2, 3] {
            assert_eq!(ask(&mut set, a, 20), Asked::Uploaded);
        }
        // 4 is new: least recently used makes room from the unheld copies only (2 goes, not 1).
        assert_eq!(ask(&mut set, 4, 20), Asked::Uploaded);
        assert_eq!(set.keys_by_use(), vec![key(1), key(3), key(4)]);
        // 2 again: the only unheld victim (3) was used after 2 last was: a cycle, streamed.
        assert_eq!(ask(&mut set, 2, 20), Asked::Streamed(NoRoom::Cycle));
        drop(held);
        // 1 is unheld now and the least recently used of all: 2's next ask takes its room.
        assert_eq!(ask(&mut set, 2, 20), Asked::Uploaded);
        assert_eq!(set.keys_by_use(), vec![key(3), key(4), key(2)]);
        // Thousands of sections asked for once each: the set remembers at most REMEMBERED.
        for a in 100..2100 {
            let _ = ask(&mut set, a, 20);
        }
        assert_eq!(set.last_asked.len(), REMEMBERED);
    }

    #[test]
    fn without_a_budget_nothing_is_evicted_until_asked() {
        let mut set = ResidentSet::new(None);
        for a in 0..10 {
            drop(add(&mut set, a, 1 << 40).unwrap());
        }
        assert_eq!(set.report().sections, 10);
        assert!(set.evict_lru());
        assert!(set.get(&key(0)).is_none(), "the oldest went first");
        assert_eq!(set.report().evictions, 1);
    }

    #[test]
    fn forgetting_a_slice_frees_its_copy_and_stale_addresses_are_dropped() {
        // Sections of 10 points of 1 byte at addresses 100 and 200; a section is forgotten
        // when it lies inside the range, whatever sub-slice the prover used.
        let mut set = ResidentSet::new(Some(100));
        drop(add(&mut set, 100, 20).unwrap());
        let held = add(&mut set, 200, 30).unwrap();
        assert_eq!(set.forget(2, 0..1000, 1), 0, "another curve");
        assert_eq!(set.forget(1, 95..105, 1), 0, "the section reaches past the range");
        assert_eq!(set.forget(1, 90..110, 1), 20);
        assert_eq!(set.forget(1, 200..210, 1), 0, "held by a call: freed when it ends, not now");
        assert_eq!(set.report().sections, 0);
        drop(held);
        assert_eq!(set.forget(1, 0..1000, 1), 0, "already gone");
        drop(add(&mut set, 5, 20).unwrap());
        let other = SectionKey { fingerprint: 99, ..key(5) };
        assert!(set.get(&other).is_none(), "other contents at the same address are not a hit");
        set.remove_stale(1, 5);
        assert_eq!(set.report().sections, 0);
    }

    #[test]
    fn recent_slots_keep_the_last_used_keys_and_evict_only_unheld_values() {
        let mut slots: RecentSlots<u32, &str> = RecentSlots::new(2);
        assert_eq!(slots.insert(1, Arc::new("porep")), 0);
        assert_eq!(slots.insert(2, Arc::new("winning")), 0);
        // PoRep used again: WinningPoSt becomes the least recently used, and goes first.
        assert_eq!(slots.get(&1).as_deref(), Some(&"porep"));
        assert_eq!(slots.insert(3, Arc::new("window")), 1);
        assert!(slots.get(&2).is_none(), "the least recently used key was dropped");
        assert_eq!((slots.get(&1).as_deref(), slots.get(&3).as_deref()), (Some(&"porep"), Some(&"window")));
        // Same key again: replaced, not duplicated.
        assert_eq!(slots.insert(3, Arc::new("window'")), 0);
        assert_eq!((slots.len(), slots.get(&3).as_deref()), (2, Some(&"window'")));
        assert_eq!(slots.values().map(|v| **v).collect::<Vec<_>>(), vec!["porep", "window'"], "least recently used first");
        // A held value is never the one evicted; once released it goes.
        let held = slots.get(&1).unwrap();
        assert!(slots.evict_lru_unheld(), "3 is unheld");
        assert!(slots.get(&3).is_none() && slots.len() == 1);
        assert!(!slots.evict_lru_unheld(), "1 is held by a running call");
        drop(held);
        assert!(slots.evict_lru_unheld());
        assert!(slots.is_empty());
        assert_eq!(RecentSlots::<u32, ()>::new(0).insert(1, Arc::new(())), 0, "capacity 0 keeps one");
    }
}
