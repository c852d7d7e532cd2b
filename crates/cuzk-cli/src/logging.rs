//! What the process prints to stderr besides its results: log lines through `tracing` (text,
//! or JSON for log shippers) and the progress of long work. Default levels: cuzk's own crates
//! at `info`, everything else (filecoin-proofs, storage-proofs, bellperson) at `warn`;
//! `RUST_LOG` replaces that. Progress events ([`cuzk_core::progress`]) become bars on a
//! terminal and, when stderr is not a terminal, one log line per task at most every
//! [`LINE_INTERVAL`] (plus one when it ends). It owns the output only; what is measured is the
//! libraries' business.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cuzk_core::progress::TARGET as PROGRESS;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracing::field::{Field, Visit};
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Shortest time between two progress lines of one task when stderr is not a terminal.
pub const LINE_INTERVAL: Duration = Duration::from_secs(5);

/// The cuzk crates whose `info` lines are shown by default.
const OWN_CRATES: [&str; 9] =
    ["cuzk", "cuzk_cli", "cuzk_core", "cuzk_witness", "cuzk_pce", "cuzk_gpu", "cuzk_pipeline", "cuzk_filecoin", "cuzk_daemon"];

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event, with the spans it happened in (a proof's request id among them).
    Json,
}

/// The filter of `RUST_LOG` when set, else the default described in the module doc. Progress
/// events are never printed as log lines (the progress layer renders them).
pub fn filter(rust_log: Option<&str>) -> EnvFilter {
    let base = match rust_log {
        Some(s) if !s.trim().is_empty() => s.to_string(),
        _ => default_directives(),
    };
    let f = EnvFilter::try_new(&base).unwrap_or_else(|e| {
        eprintln!("warning: RUST_LOG={base:?} is not a valid filter ({e}); using the default");
        EnvFilter::new(default_directives())
    });
    f.add_directive(format!("{PROGRESS}=off").parse().expect("a literal directive"))
}

fn default_directives() -> String {
    std::iter::once("warn".to_string()).chain(OWN_CRATES.iter().map(|c| format!("{c}=info"))).collect::<Vec<_>>().join(",")
}

/// Installs the process's subscriber: log lines in `format` filtered by `RUST_LOG` (or the
/// default), and progress shown as bars or throttled lines.
pub fn init(format: LogFormat) {
    let terminal = std::io::stderr().is_terminal();
    let bars = (format == LogFormat::Text && terminal).then(MultiProgress::new);
    let writer = Stderr { bars: bars.clone() };
    let filter = filter(std::env::var("RUST_LOG").ok().as_deref());
    let lines = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_writer(writer).with_target(false).with_ansi(terminal).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(writer).boxed(),
    };
    let progress = ProgressLayer { bars, tasks: Mutex::new(HashMap::new()) };
    tracing_subscriber::registry().with(lines.with_filter(filter)).with(progress.with_filter(filter_fn(|m| m.target() == PROGRESS))).init();
}

/// stderr, with any progress bars moved out of the way while a line is written.
#[derive(Clone)]
struct Stderr {
    bars: Option<MultiProgress>,
}

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = StderrLine;
    fn make_writer(&'a self) -> StderrLine {
        StderrLine { bars: self.bars.clone(), buf: Vec::new() }
    }
}

/// One log line, buffered and written at once when dropped.
struct StderrLine {
    bars: Option<MultiProgress>,
    buf: Vec<u8>,
}

impl Write for StderrLine {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for StderrLine {
    fn drop(&mut self) {
        let write = || {
            let _ = std::io::stderr().write_all(&self.buf);
        };
        match &self.bars {
            Some(m) => m.suspend(write),
            None => write(),
        }
    }
}

/// The fields of one progress event.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Event {
    pub task: String,
    pub unit: String,
    pub phase: String,
    pub done: u64,
    pub total: u64,
}

impl Visit for Event {
    fn record_u64(&mut self, f: &Field, v: u64) {
        match f.name() {
            "done" => self.done = v,
            "total" => self.total = v,
            _ => {}
        }
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        match f.name() {
            "unit" => self.unit = v.to_string(),
            "phase" => self.phase = v.to_string(),
            _ => {}
        }
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        if f.name() == "task" {
            self.task = format!("{v:?}");
        }
    }
}

/// A task being shown: its bar, or when its last line went out.
struct Shown {
    started: Instant,
    last_line: Instant,
    bar: Option<ProgressBar>,
}

struct ProgressLayer {
    bars: Option<MultiProgress>,
    tasks: Mutex<HashMap<String, Shown>>,
}

impl<S: tracing::Subscriber> Layer<S> for ProgressLayer {
    fn on_event(&self, e: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut ev = Event::default();
        e.record(&mut ev);
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let shown = tasks.entry(ev.task.clone()).or_insert_with(|| Shown {
            started: now,
            last_line: now,
            bar: self.bars.as_ref().map(|m| m.add(new_bar(&ev))),
        });
        let finished = ev.phase == "finish";
        match &shown.bar {
            Some(bar) => {
                bar.set_position(ev.done);
                if finished {
                    bar.finish_and_clear();
                }
            }
            None => {
                let due = now.duration_since(shown.last_line) >= LINE_INTERVAL;
                if finished || (due && ev.phase == "update") {
                    shown.last_line = now;
                    let line = line(&ev, now.duration_since(shown.started));
                    tracing::info!(target: "cuzk::cli::progress", "{line}");
                }
            }
        }
        if finished {
            tasks.remove(&ev.task);
        }
    }
}

fn new_bar(ev: &Event) -> ProgressBar {
    let bar = if ev.total > 0 { ProgressBar::new(ev.total) } else { ProgressBar::new_spinner() };
    let template = if ev.total > 0 {
        "{msg} [{bar:30}] {percent:>3}% {human_pos}/{human_len} {prefix} ({per_sec}, ETA {eta})"
    } else {
        "{spinner} {msg} {human_pos} {prefix} ({per_sec})"
    };
    let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(ev.task.clone());
    bar.set_prefix(ev.unit.clone());
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

/// The line for a task that has run `elapsed`: done (of total, percent), rate and ETA.
pub fn line(ev: &Event, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let rate = ev.done as f64 / secs;
    let per_s = format!("{} {}/s", significant(rate), ev.unit);
    if ev.phase == "finish" {
        return format!("{}: {} {} done in {:.1} s ({per_s})", ev.task, ev.done, ev.unit, secs);
    }
    if ev.total == 0 {
        return format!("{}: {} {} ({per_s})", ev.task, ev.done, ev.unit);
    }
    let pct = 100.0 * ev.done as f64 / ev.total as f64;
    let eta = if rate > 0.0 { format!("{:.0} s", ev.total.saturating_sub(ev.done) as f64 / rate) } else { "?".into() };
    format!("{}: {:.0}% ({}/{} {}, {per_s}, ETA {})", ev.task, pct, ev.done, ev.total, ev.unit, eta)
}

/// A rate with about two significant digits (0.02, 0.5, 3.4, 120).
fn significant(x: f64) -> String {
    match x {
        x if x >= 10.0 => format!("{x:.0}"),
        x if x >= 1.0 => format!("{x:.1}"),
        x => format!("{x:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(phase: &str, done: u64, total: u64) -> Event {
        Event { task: "params".into(), unit: "points".into(), phase: phase.into(), done, total }
    }

    #[test]
    fn line_gives_percent_rate_and_eta() {
        let l = line(&ev("update", 250, 1000), Duration::from_secs(5));
        assert_eq!(l, "params: 25% (250/1000 points, 50 points/s, ETA 15 s)");
        assert_eq!(line(&ev("update", 30, 0), Duration::from_secs(3)), "params: 30 points (10 points/s)");
        assert_eq!(line(&ev("update", 1, 10), Duration::from_secs(50)), "params: 10% (1/10 points, 0.02 points/s, ETA 450 s)");
        assert_eq!(line(&ev("finish", 1000, 1000), Duration::from_secs(4)), "params: 1000 points done in 4.0 s (250 points/s)");
    }

    #[test]
    fn default_filter_keeps_cuzk_info_and_silences_third_party_info() {
        use tracing::level_filters::LevelFilter;
        let d = default_directives();
        assert!(d.starts_with("warn,"), "{d}");
        for c in OWN_CRATES {
            assert!(d.split(',').any(|x| x == format!("{c}=info")), "{c} missing from {d}");
        }
        // RUST_LOG replaces the default; progress is never a log line either way.
        let f = filter(Some("debug"));
        assert!(f.to_string().contains(&format!("{PROGRESS}=off")), "{f}");
        assert_eq!(f.max_level_hint(), Some(LevelFilter::DEBUG));
    }
}
