//! Progress of long work (parameter generation, PCE extraction, a sector's partitions) as
//! `tracing` events, so a library reports how far it is without knowing who listens: a
//! terminal's progress bar, a log line every few seconds, or nothing. Events go to the target
//! [`TARGET`] at `INFO` with the fields `task`, `unit`, `done` and `total` (0 when unknown);
//! updates are throttled to one per [`MIN_INTERVAL`], the first and the last are always sent.
//! It owns the counting and throttling only; how progress is shown belongs to the binary.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The `tracing` target of every progress event.
pub const TARGET: &str = "cuzk::progress";

/// Shortest time between two update events of one task.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// What an event says about its task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The task began (`done` is 0).
    Start,
    /// `done` moved on.
    Update,
    /// The task ended; `done` is final.
    Finish,
}

impl Phase {
    /// The value of the event's `phase` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::Update => "update",
            Phase::Finish => "finish",
        }
    }
}

/// A counter of one task's progress; shareable across threads (`advance` takes `&self`).
/// Dropping it sends the final event.
#[derive(Debug)]
pub struct Progress {
    task: String,
    unit: &'static str,
    total: u64,
    done: AtomicU64,
    started: Instant,
    /// Milliseconds after `started` of the last update event sent.
    last_sent_ms: AtomicU64,
}

impl Progress {
    /// Starts `task`, counted in `unit` ("points", "constraints"), out of `total` (0 if unknown).
    pub fn start(task: impl Into<String>, unit: &'static str, total: u64) -> Progress {
        let p =
            Progress { task: task.into(), unit, total, done: AtomicU64::new(0), started: Instant::now(), last_sent_ms: AtomicU64::new(0) };
        p.emit(Phase::Start, 0);
        p
    }

    /// Adds `n` to the count; sends an update unless one went out less than [`MIN_INTERVAL`] ago.
    pub fn advance(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        self.maybe_emit(done);
    }

    /// Sets the count to `done` (for work that knows its position rather than its steps).
    pub fn set(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
        self.maybe_emit(done);
    }

    /// The count so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    fn maybe_emit(&self, done: u64) {
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.last_sent_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) < MIN_INTERVAL.as_millis() as u64 {
            return;
        }
        // One thread wins the slot; the others skip this interval.
        if self.last_sent_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            self.emit(Phase::Update, done);
        }
    }

    fn emit(&self, phase: Phase, done: u64) {
        tracing::info!(target: TARGET, task = %self.task, unit = self.unit, done, total = self.total, phase = phase.as_str(), "progress");
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.emit(Phase::Finish, self.done());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};
    use tracing::subscriber::with_default;
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::Layer;

    /// Records (phase, done) of every progress event.
    struct Recorder(Arc<Mutex<Vec<(String, u64)>>>);

    #[derive(Default)]
    struct Fields {
        phase: String,
        done: u64,
    }

    impl Visit for Fields {
        fn record_u64(&mut self, f: &Field, v: u64) {
            if f.name() == "done" {
                self.done = v;
            }
        }
        fn record_str(&mut self, f: &Field, v: &str) {
            if f.name() == "phase" {
                self.phase = v.to_string();
            }
        }
        fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
    }

    impl<S: tracing::Subscriber> Layer<S> for Recorder {
        fn on_event(&self, e: &tracing::Event<'_>, _: Context<'_, S>) {
            if e.metadata().target() == TARGET {
                let mut f = Fields::default();
                e.record(&mut f);
                self.0.lock().unwrap().push((f.phase, f.done));
            }
        }
    }

    fn recorded(work: impl FnOnce()) -> Vec<(String, u64)> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        with_default(tracing_subscriber::registry().with(Recorder(seen.clone())), work);
        let out = seen.lock().unwrap().clone();
        out
    }

    #[test]
    fn many_fast_steps_are_throttled_but_start_and_final_count_are_sent() {
        let events = recorded(|| {
            let p = Progress::start("t", "steps", 100_000);
            for _ in 0..100_000 {
                p.advance(1);
            }
        });
        assert_eq!(events.first(), Some(&("start".to_string(), 0)));
        assert_eq!(events.last(), Some(&("finish".to_string(), 100_000)));
        // 100 000 steps in far less than 100 s: at most one update per 100 ms went out.
        assert!(events.len() < 1000, "{} events: not throttled", events.len());
    }

    #[test]
    fn an_update_goes_out_once_the_interval_has_passed() {
        let events = recorded(|| {
            let p = Progress::start("t", "steps", 2);
            std::thread::sleep(MIN_INTERVAL + Duration::from_millis(20));
            p.advance(1);
            p.set(2);
        });
        let phases: Vec<&str> = events.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(phases, ["start", "update", "finish"]);
        assert_eq!(events[1].1, 1);
        assert_eq!(events[2].1, 2);
    }
}
