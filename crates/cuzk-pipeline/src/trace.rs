//! The pipeline's trace: every stage of every partition records its lane (worker), start,
//! end and the RSS when it ended; a sampler thread records RSS every period (100 ms by
//! default) so transient peaks between stage ends show up; phase marks label the run. From it
//! come per-stage summaries, the busy fraction of each prover lane group (a GPU) in steady
//! state, the peak seen, and an SVG of RSS and lane activity over time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cuzk_core::mem;
use serde::Serialize;

/// One stage of one partition.
#[derive(Clone, Debug, Serialize)]
pub struct Event {
    /// The stage's name, one of [`STAGES`].
    pub stage: &'static str,
    /// The job (proof) id the engine gave the submission.
    pub proof: u64,
    /// The partition's index within its proof (0 for the per-proof parse stage).
    pub partition: usize,
    /// The worker that ran it, e.g. `witness-1` or `prove-gpu0-0`.
    pub lane: String,
    /// The device for prover stages (`gpu0`, `cpu`), else empty.
    pub device: String,
    /// Start in seconds since the trace began.
    pub start_s: f64,
    /// End in seconds since the trace began.
    pub end_s: f64,
    /// Process RSS in bytes when the stage ended.
    pub rss_end_bytes: u64,
}

/// One RSS sample.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the trace began.
    pub t_s: f64,
    /// Process RSS in bytes.
    pub rss_bytes: u64,
}

/// A labelled instant (a phase boundary).
#[derive(Clone, Debug, Serialize)]
pub struct Mark {
    /// Seconds since the trace began.
    pub t_s: f64,
    /// What the instant marks.
    pub label: String,
    /// Process RSS in bytes at the mark.
    pub rss_bytes: u64,
}

/// Totals of one stage.
#[derive(Clone, Debug, Serialize)]
pub struct StageSummary {
    /// The stage's name.
    pub stage: &'static str,
    /// How many times it ran.
    pub count: usize,
    /// Seconds over all its runs.
    pub total_s: f64,
    /// Mean seconds per run.
    pub mean_s: f64,
    /// Seconds of the longest run.
    pub max_s: f64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The trace of one engine (shared by its threads).
#[derive(Debug)]
pub struct Trace {
    origin: Instant,
    events: Mutex<Vec<Event>>,
    samples: Mutex<Vec<Sample>>,
    marks: Mutex<Vec<Mark>>,
    stop: AtomicBool,
    sampler: Mutex<Option<JoinHandle<()>>>,
    /// Most events (and samples) kept; the oldest half goes when it is exceeded.
    cap: usize,
}

/// Appends `item`, dropping the older half of `v` first when it holds `cap` items already.
fn push_capped<T>(v: &mut Vec<T>, item: T, cap: usize) {
    if v.len() >= cap {
        v.drain(..v.len() / 2 + 1);
    }
    v.push(item);
}

impl Trace {
    /// An unbounded trace starting now (no sampler running yet: see [`Trace::start_sampler`]).
    pub fn new() -> Arc<Trace> {
        Self::bounded(usize::MAX)
    }

    /// A trace that keeps at most `cap` events and `cap` RSS samples (a long-lived daemon's
    /// trace must not grow without bound); summaries then cover the retained window.
    pub fn bounded(cap: usize) -> Arc<Trace> {
        Arc::new(Trace {
            cap: cap.max(2),
            origin: Instant::now(),
            events: Mutex::default(),
            samples: Mutex::default(),
            marks: Mutex::default(),
            stop: AtomicBool::new(false),
            sampler: Mutex::default(),
        })
    }

    /// Seconds since the trace began.
    pub fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    /// Starts the RSS sampler (once; later calls do nothing).
    pub fn start_sampler(self: &Arc<Self>, period: Duration) {
        let mut slot = lock(&self.sampler);
        if slot.is_some() {
            return;
        }
        let me = Arc::clone(self);
        *slot = Some(
            std::thread::Builder::new()
                .name("cuzk-rss-sampler".into())
                .spawn(move || {
                    while !me.stop.load(Ordering::Relaxed) {
                        let s = Sample { t_s: me.now(), rss_bytes: mem::snapshot().rss_bytes };
                        push_capped(&mut lock(&me.samples), s, me.cap);
                        // Parked, not asleep: `stop_sampler` wakes it at once.
                        std::thread::park_timeout(period);
                    }
                })
                .expect("spawning the RSS sampler thread"),
        );
    }

    /// Stops the sampler and waits for it (taking a last sample). Returns at once: the
    /// sampler is woken from its wait, so a short-lived engine does not pay a sample period.
    pub fn stop_sampler(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = lock(&self.sampler).take() {
            h.thread().unpark();
            let _ = h.join();
        }
        lock(&self.samples).push(Sample { t_s: self.now(), rss_bytes: mem::snapshot().rss_bytes });
    }

    /// Records a labelled instant with the RSS now, and returns it.
    pub fn mark(&self, label: impl Into<String>) -> Mark {
        let m = Mark { t_s: self.now(), label: label.into(), rss_bytes: mem::snapshot().rss_bytes };
        lock(&self.marks).push(m.clone());
        m
    }

    /// Adds a span that something outside the engine timed (a GPU's device calls) as an
    /// event of `stage` on `lane`, not tied to a proof; spans that began before the trace are
    /// left out.
    pub fn add_span(&self, stage: &'static str, lane: &str, device: &str, start: Instant, end: Instant) {
        let (Some(from), Some(to)) = (start.checked_duration_since(self.origin), end.checked_duration_since(self.origin)) else { return };
        let e = Event {
            stage,
            proof: 0,
            partition: 0,
            lane: lane.into(),
            device: device.into(),
            start_s: from.as_secs_f64(),
            end_s: to.as_secs_f64(),
            rss_end_bytes: 0,
        };
        push_capped(&mut lock(&self.events), e, self.cap);
    }

    /// Runs `f` as one stage of (proof, partition) on `lane`.
    pub fn record<T>(&self, stage: &'static str, proof: u64, partition: usize, lane: &str, device: &str, f: impl FnOnce() -> T) -> T {
        let start_s = self.now();
        let out = f();
        let e = Event {
            stage,
            proof,
            partition,
            lane: lane.to_string(),
            device: device.to_string(),
            start_s,
            end_s: self.now(),
            rss_end_bytes: mem::snapshot().rss_bytes,
        };
        push_capped(&mut lock(&self.events), e, self.cap);
        out
    }

    /// The retained stage events, oldest first.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.events).clone()
    }

    /// The retained events of one proof.
    pub fn events_of(&self, proof: u64) -> Vec<Event> {
        lock(&self.events).iter().filter(|e| e.proof == proof).cloned().collect()
    }

    /// The retained RSS samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        lock(&self.samples).clone()
    }

    /// Every mark, oldest first.
    pub fn marks(&self) -> Vec<Mark> {
        lock(&self.marks).clone()
    }

    /// Highest RSS in the samples and stage ends.
    pub fn peak_rss(&self) -> u64 {
        let s = self.samples().iter().map(|s| s.rss_bytes).max().unwrap_or(0);
        let e = self.events().iter().map(|e| e.rss_end_bytes).max().unwrap_or(0);
        s.max(e)
    }

    /// Highest sampled RSS within [from, to].
    pub fn peak_rss_between(&self, from: f64, to: f64) -> u64 {
        self.samples().iter().filter(|s| s.t_s >= from && s.t_s <= to).map(|s| s.rss_bytes).max().unwrap_or(0)
    }

    /// Totals per stage over the events `keep` selects, in schedule order.
    pub fn stage_summaries(&self, keep: impl Fn(&Event) -> bool) -> Vec<StageSummary> {
        let mut by: BTreeMap<(usize, &'static str), Vec<f64>> = BTreeMap::new();
        for e in self.events().into_iter().filter(|e| keep(e)) {
            by.entry((stage_rank(e.stage), e.stage)).or_default().push(e.end_s - e.start_s);
        }
        by.into_iter()
            .map(|((_, stage), v)| {
                let total_s: f64 = v.iter().sum();
                StageSummary {
                    stage,
                    count: v.len(),
                    total_s,
                    mean_s: total_s / v.len() as f64,
                    max_s: v.iter().cloned().fold(0.0, f64::max),
                }
            })
            .collect()
    }

    /// For each device with prove stages among the events `keep` selects, the fraction of its
    /// steady-state window (first prove start to last prove end on that device) during which at
    /// least one of its provers was busy.
    pub fn device_busy(&self, keep: impl Fn(&Event) -> bool) -> BTreeMap<String, f64> {
        let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for e in self.events().into_iter().filter(|e| e.stage == "prove" && keep(e)) {
            by.entry(e.device.clone()).or_default().push((e.start_s, e.end_s));
        }
        by.into_iter().map(|(d, v)| (d, busy_fraction(v))).collect()
    }

    /// An SVG of RSS over time (top) and each lane's stages (bottom), with the marks.
    pub fn svg(&self, title: &str) -> String {
        render_svg(title, &self.samples(), &self.events(), &self.marks())
    }
}

/// Union length of the intervals over the span from the first start to the last end.
pub fn busy_fraction(mut v: Vec<(f64, f64)>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (first, last) = (v[0].0, v.iter().map(|x| x.1).fold(f64::MIN, f64::max));
    let (mut busy, mut cur) = (0.0, v[0]);
    for &(s, e) in &v[1..] {
        if s <= cur.1 {
            cur.1 = cur.1.max(e);
        } else {
            busy += cur.1 - cur.0;
            cur = (s, e);
        }
    }
    busy += cur.1 - cur.0;
    if last > first {
        busy / (last - first)
    } else {
        1.0
    }
}

/// The engine's stages in schedule order.
pub const STAGES: [&str; 5] = ["parse", "witness", "mat-vec", "prove", "finalize"];

fn stage_rank(stage: &str) -> usize {
    STAGES.iter().position(|s| *s == stage).unwrap_or(STAGES.len())
}

fn stage_colour(stage: &str) -> &'static str {
    match stage {
        "parse" => "#8c564b",
        "witness" => "#1f77b4",
        "mat-vec" => "#2ca02c",
        "prove" => "#d62728",
        "finalize" => "#9467bd",
        "device call" => "#111111",
        _ => "#7f7f7f",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn render_svg(title: &str, samples: &[Sample], events: &[Event], marks: &[Mark]) -> String {
    let (w, left, right) = (1000.0_f64, 70.0_f64, 20.0_f64);
    let mut lanes: Vec<&str> = events.iter().map(|e| e.lane.as_str()).collect();
    lanes.sort();
    lanes.dedup();
    let (rss_top, rss_h, lane_h) = (40.0_f64, 220.0_f64, 16.0_f64);
    let lanes_top = rss_top + rss_h + 40.0;
    let h = lanes_top + lane_h * lanes.len() as f64 + 50.0;
    let t_end = samples.iter().map(|s| s.t_s).chain(events.iter().map(|e| e.end_s)).chain(marks.iter().map(|m| m.t_s)).fold(1e-3, f64::max);
    let max_rss = samples.iter().map(|s| s.rss_bytes).chain(events.iter().map(|e| e.rss_end_bytes)).max().unwrap_or(1).max(1) as f64;
    let gib = (1u64 << 30) as f64;
    let x = |t: f64| left + (w - left - right) * t / t_end;
    let y = |b: f64| rss_top + rss_h * (1.0 - b / max_rss);
    let mut s = String::new();
    let _ = writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#);
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{left}" y="20" font-size="14">{}</text>"#, esc(title));
    // RSS axis and line.
    for k in 0..=4 {
        let b = max_rss * k as f64 / 4.0;
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#ddd"/><text x="4" y="{:.1}">{:.2} GiB</text>"##,
            w - right,
            y(b),
            y(b),
            y(b) + 4.0,
            b / gib
        );
    }
    let pts: Vec<String> = samples.iter().map(|p| format!("{:.1},{:.1}", x(p.t_s), y(p.rss_bytes as f64))).collect();
    let _ = writeln!(s, r##"<polyline fill="none" stroke="#000" stroke-width="1.2" points="{}"/>"##, pts.join(" "));
    let _ = writeln!(s, r#"<text x="{left}" y="{}">RSS (sampled)</text>"#, rss_top - 6.0);
    // Lanes.
    for (i, lane) in lanes.iter().enumerate() {
        let ly = lanes_top + lane_h * i as f64;
        let _ = writeln!(s, r#"<text x="4" y="{:.1}" font-size="9">{}</text>"#, ly + 11.0, esc(lane));
        for e in events.iter().filter(|e| e.lane == *lane) {
            let (x0, x1) = (x(e.start_s), x(e.end_s));
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} proof {} part {} {:.3}-{:.3} s</title></rect>"#,
                ly + 2.0,
                (x1 - x0).max(0.5),
                lane_h - 4.0,
                stage_colour(e.stage),
                e.stage,
                e.proof,
                e.partition,
                e.start_s,
                e.end_s
            );
        }
    }
    // Marks and time axis.
    for (i, m) in marks.iter().enumerate() {
        let mx = x(m.t_s);
        // Labels right of the line, or left of it in the last quarter of the plot.
        let (tx, anchor) = if mx > left + 0.75 * (w - left - right) { (mx - 2.0, "end") } else { (mx + 2.0, "start") };
        let _ = writeln!(
            s,
            r##"<line x1="{mx:.1}" x2="{mx:.1}" y1="{rss_top}" y2="{:.1}" stroke="#888" stroke-dasharray="4,3"/><text x="{:.1}" y="{:.1}" font-size="9" fill="#444" text-anchor="{anchor}">{}</text>"##,
            h - 30.0,
            tx,
            rss_top + 10.0 + 11.0 * (i % 6) as f64,
            esc(&m.label)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="{:.1}">0 s</text><text x="{:.1}" y="{:.1}" text-anchor="end">{t_end:.1} s</text>"#,
        h - 12.0,
        w - right,
        h - 12.0
    );
    let mut lx = left + 80.0;
    for st in STAGES {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}">{st}</text>"#,
            h - 21.0,
            stage_colour(st),
            lx + 13.0,
            h - 12.0
        );
        lx += 80.0;
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_fraction_merges_overlaps_and_counts_gaps() {
        // [0,2] ∪ [1,3] = [0,3]; gap (3,5); [5,6]: busy 4 of 6.
        let f = busy_fraction(vec![(5.0, 6.0), (0.0, 2.0), (1.0, 3.0)]);
        assert!((f - 4.0 / 6.0).abs() < 1e-12, "{f}");
        assert_eq!(busy_fraction(Vec::new()), 0.0);
    }

    #[test]
    fn spans_timed_outside_become_events_of_their_lane_and_earlier_ones_are_left_out() {
        let before = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        let t = Trace::new();
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(10));
        let end = Instant::now();
        t.add_span("device call", "gpu0 calls", "gpu0", start, end);
        t.add_span("device call", "gpu0 calls", "gpu0", before, end);
        let e = t.events();
        assert_eq!(e.len(), 1, "the span that began before the trace is left out");
        assert_eq!((e[0].stage, e[0].lane.as_str(), e[0].device.as_str()), ("device call", "gpu0 calls", "gpu0"));
        assert!(e[0].end_s - e[0].start_s >= 0.009 && e[0].start_s >= 0.0, "{:?}", e[0]);
        assert!(t.svg("gpu").contains("gpu0 calls"));
        assert!(t.device_busy(|_| true).is_empty(), "device calls are not prove stages");
    }

    #[test]
    fn stopping_the_sampler_does_not_wait_out_its_period() {
        let t = Trace::new();
        t.start_sampler(Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        t.stop_sampler();
        assert!(start.elapsed() < Duration::from_secs(5), "stop took {:?}", start.elapsed());
        assert!(t.samples().len() >= 2, "a first sample and the last one");
    }

    #[test]
    fn stages_are_recorded_and_summarised() {
        let t = Trace::new();
        t.start_sampler(Duration::from_millis(5));
        let v = t.record("witness", 1, 0, "witness-0", "", || {
            std::thread::sleep(Duration::from_millis(20));
            7
        });
        t.record("prove", 1, 0, "prove-cpu-0", "cpu", || ());
        t.mark("end");
        t.stop_sampler();
        assert_eq!(v, 7);
        let sum = t.stage_summaries(|_| true);
        let w = sum.iter().find(|s| s.stage == "witness").unwrap();
        assert_eq!(w.count, 1);
        assert!(w.total_s >= 0.019, "{}", w.total_s);
        assert!(t.samples().len() >= 2);
        assert!(t.peak_rss() > 0);
        let svg = t.svg("test <run>");
        assert!(svg.starts_with("<svg") && svg.contains("test &lt;run&gt;") && svg.contains("witness-0"));
    }

    #[test]
    fn a_bounded_trace_keeps_the_newest_events() {
        let t = Trace::bounded(10);
        for k in 0..25u64 {
            t.record("prove", k, 0, "prove-cpu-0", "cpu", || ());
        }
        let ev = t.events();
        assert!(ev.len() <= 10, "{} events kept", ev.len());
        assert_eq!(ev.last().unwrap().proof, 24, "the newest event is kept");
        assert!(ev.windows(2).all(|w| w[0].proof < w[1].proof), "order kept");
        assert_eq!(t.events_of(24).len(), 1);
        assert!(t.events_of(0).is_empty(), "the oldest were dropped");
    }
}
