//! Dropping idle parameters: when each circuit was last used by a job (or preloaded), which
//! are in use now, and the evictor that, when `srs.idle_evict_s` is set, drops the parameters
//! and PCE of a circuit that no job has used for that long — except the circuits the config
//! preloads, which stay resident (WinningPoSt's, for instance, so that a call does no loading).
//! It knows circuits by their Curio ids and nothing of what they hold.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cuzk_filecoin::curio::{self, Circuit};

use crate::jobs::Jobs;

#[derive(Clone, Copy, Debug)]
struct Use {
    last: Instant,
    active: usize,
}

/// When each circuit was last used and how many jobs use it now.
#[derive(Debug, Default)]
pub struct Usage {
    by_circuit: Mutex<HashMap<String, Use>>,
}

impl Usage {
    fn update(&self, id: String, f: impl FnOnce(&mut Use)) {
        let mut m = self.by_circuit.lock().unwrap_or_else(|e| e.into_inner());
        let u = m.entry(id).or_insert(Use { last: Instant::now(), active: 0 });
        f(u);
        u.last = Instant::now();
    }

    /// A job on `c` starts.
    pub fn begin(&self, c: Circuit) {
        self.update(curio::circuit_id(c), |u| u.active += 1);
    }

    /// A job on `c` ended (however it ended).
    pub fn end(&self, c: Circuit) {
        self.update(curio::circuit_id(c), |u| u.active = u.active.saturating_sub(1));
    }

    /// `c` was loaded or asked for without a job (a preload).
    pub fn touch(&self, c: Circuit) {
        self.update(curio::circuit_id(c), |_| {});
    }

    /// The circuits no job uses now and none has used for `idle` as of `now`, other than `pinned`.
    pub fn idle(&self, now: Instant, idle: Duration, pinned: &[String]) -> Vec<String> {
        let m = self.by_circuit.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<String> = m
            .iter()
            .filter(|(id, u)| u.active == 0 && now.saturating_duration_since(u.last) >= idle && !pinned.contains(id))
            .map(|(id, _)| id.clone())
            .collect();
        out.sort();
        out
    }
}

/// Every `idle / 4` (at least 100 ms), drops what [`Usage::idle`] names and is resident;
/// runs until the returned task is aborted.
pub fn spawn_evictor(jobs: Jobs, idle: Duration, pinned: Vec<String>) -> tokio::task::JoinHandle<()> {
    let period = (idle / 4).max(Duration::from_millis(100));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(period).await;
            for id in jobs.usage().idle(Instant::now(), idle, &pinned) {
                let Ok(c) = curio::parse_circuit(&id) else { continue };
                let j = jobs.clone();
                // Dropping tens of GiB takes a while: off the async workers.
                let out = tokio::task::spawn_blocking(move || crate::service::evict(&j, c)).await;
                if let Ok(r) = out {
                    if r.was_loaded {
                        let (freed, device_freed) = (r.freed_bytes, r.device_freed_bytes);
                        tracing::info!(circuit = %id, freed, device_freed, idle_s = idle.as_secs_f64(), "evicted an idle circuit");
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_circuits_unused_for_the_idle_time_and_not_pinned_are_idle() {
        let u = Usage::default();
        let (winning, wpost, porep) = (
            curio::parse_circuit("winning-2k").unwrap(),
            curio::parse_circuit("wpost-2k").unwrap(),
            curio::parse_circuit("porep-2k").unwrap(),
        );
        u.begin(porep);
        u.touch(winning);
        u.begin(wpost);
        u.end(wpost);
        let later = Instant::now() + Duration::from_secs(10);
        // porep-2k is in use; winning-2k is pinned.
        assert_eq!(u.idle(later, Duration::from_secs(5), &["winning-2k".into()]), vec!["wpost-2k".to_string()]);
        assert!(u.idle(Instant::now(), Duration::from_secs(5), &[]).is_empty(), "nothing is idle yet");
        u.end(porep);
        assert_eq!(u.idle(later, Duration::from_secs(5), &[]), vec!["porep-2k", "winning-2k", "wpost-2k"]);
    }
}
