//! Process-wide shared values, one per key: the parameters of a proof type, the PCE of a
//! circuit. Concurrent first users of one key wait for a single load; later users get the
//! same `Arc`. A long-lived process (the daemon) can list what is resident and evict it —
//! in-flight users keep their `Arc` until they finish.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Slot<T> = Arc<Mutex<Option<Arc<T>>>>;

/// A map from key to a lazily made shared value.
pub struct Registry<T> {
    slots: Mutex<Option<HashMap<String, Slot<T>>>>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> Registry<T> {
    /// An empty registry (`const`, so it can be a `static`).
    pub const fn new() -> Self {
        Registry { slots: Mutex::new(None) }
    }

    fn slot(&self, key: &str) -> Slot<T> {
        lock(&self.slots).get_or_insert_with(HashMap::new).entry(key.to_string()).or_default().clone()
    }

    /// The value of `key`, made by `init` if no one made it yet (a failed `init` leaves the
    /// slot empty, so the next caller tries again).
    pub fn get_or_init<E>(&self, key: &str, init: impl FnOnce() -> Result<T, E>) -> Result<Arc<T>, E> {
        let slot = self.slot(key);
        let mut guard = lock(&slot);
        if let Some(v) = guard.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(init()?);
        *guard = Some(v.clone());
        Ok(v)
    }

    /// The value of `key` if it is resident now (never waits for a load in progress).
    pub fn get(&self, key: &str) -> Option<Arc<T>> {
        let slot = lock(&self.slots).as_ref()?.get(key)?.clone();
        let guard = slot.try_lock().ok()?;
        guard.clone()
    }

    /// Replaces `key`'s value by what `f` makes of the current one (`None` from `f`: keep it),
    /// under the slot's lock, so concurrent updates and first loads of the key run one at a
    /// time; returns the value now held. An error from `f` changes nothing.
    pub fn update<E>(&self, key: &str, f: impl FnOnce(Option<&Arc<T>>) -> Result<Option<T>, E>) -> Result<Option<Arc<T>>, E> {
        let slot = self.slot(key);
        let mut guard = lock(&slot);
        if let Some(v) = f(guard.as_ref())? {
            *guard = Some(Arc::new(v));
        }
        Ok(guard.clone())
    }

    /// Drops the registry's reference to `key`'s value and returns it (`None` if absent).
    pub fn evict(&self, key: &str) -> Option<Arc<T>> {
        let slot = lock(&self.slots).as_ref()?.get(key)?.clone();
        let mut guard = lock(&slot);
        guard.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_key_until_evicted() {
        let r: Registry<u32> = Registry::new();
        assert!(r.get("a").is_none());
        let failed: Result<_, &str> = r.get_or_init("a", || Err("no"));
        assert!(failed.is_err());
        assert!(r.get("a").is_none(), "a failed init leaves nothing");
        let a = r.get_or_init::<()>("a", || Ok(1)).unwrap();
        let again = r.get_or_init::<()>("a", || Ok(2)).unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(*r.get("a").unwrap(), 1);
        let out = r.evict("a").unwrap();
        assert!(Arc::ptr_eq(&a, &out));
        assert!(r.get("a").is_none());
        assert!(r.evict("a").is_none());
        assert_eq!(*r.get_or_init::<()>("a", || Ok(3)).unwrap(), 3, "made again after eviction");
    }

    #[test]
    fn update_replaces_keeps_or_fails_without_change() {
        let r: Registry<u32> = Registry::new();
        let kept = r.update::<()>("a", |cur| Ok(cur.map(|v| **v + 1))).unwrap();
        assert!(kept.is_none(), "nothing to update, nothing made");
        r.get_or_init::<()>("a", || Ok(1)).unwrap();
        assert_eq!(*r.update::<()>("a", |cur| Ok(cur.map(|v| **v + 1))).unwrap().unwrap(), 2);
        assert_eq!(*r.update::<()>("a", |_| Ok(None)).unwrap().unwrap(), 2, "None keeps the value");
        assert!(r.update("a", |_| Err("no")).is_err());
        assert_eq!(*r.get("a").unwrap(), 2, "a failed update changes nothing");
    }
}
