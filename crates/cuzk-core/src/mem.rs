//! Memory accounting: the process's resident set now and at its peak (VmRSS and VmHWM from
//! `/proc/self/status`, with the resident set split into its anonymous, file-backed and shared
//! parts: a mapped parameter file's pages are file-backed, the kernel's to reclaim), `malloc_trim(0)` to hand freed heap back to the kernel between
//! stages, a stage tracer that records one (stage, start, duration, RSS, peak) row per
//! stage so that every command can print or save where its time and memory went, and
//! [`vec_with_huge_pages`] for the gigabyte buffers made afresh for every partition.

use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

/// Resident memory of this process, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemSnapshot {
    /// Current resident set size (VmRSS).
    pub rss_bytes: u64,
    /// Peak resident set size since the process started (VmHWM).
    pub peak_bytes: u64,
    /// The process's own memory in the resident set (RssAnon): heap, stacks, decoded data.
    pub anon_bytes: u64,
    /// Resident pages of mapped files (RssFile): the page cache's, reclaimable.
    pub file_bytes: u64,
    /// Resident shared memory (RssShmem: tmpfs files such as /dev/shm, shared mappings).
    pub shmem_bytes: u64,
}

/// Reads VmRSS, VmHWM and the RSS parts from `/proc/self/status`; zeros where that file (or
/// a field: kernels before 4.5 have no RssAnon) does not exist.
pub fn snapshot() -> MemSnapshot {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return MemSnapshot::default();
    };
    parse_status(&status)
}

fn parse_status(status: &str) -> MemSnapshot {
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    MemSnapshot {
        rss_bytes: field("VmRSS:"),
        peak_bytes: field("VmHWM:"),
        anon_bytes: field("RssAnon:"),
        file_bytes: field("RssFile:"),
        shmem_bytes: field("RssShmem:"),
    }
}

/// Returns freed heap memory to the kernel (glibc only; a no-op elsewhere).
pub fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only walks glibc's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// CPU time (user + system) this process has used so far, in seconds: the difference over a
/// stage is its core-seconds, whatever its parallelism.
pub fn cpu_seconds() -> f64 {
    let u = usage();
    u.user_s + u.system_s
}

/// What this process has used so far (all threads; zeros where it cannot be read).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// Page faults served without I/O (a fresh page mapped and zeroed, among others).
    pub minor_faults: u64,
    /// Seconds in user code.
    pub user_s: f64,
    /// Seconds in the kernel on the process's behalf (page faults and zeroing among them).
    pub system_s: f64,
}

/// The process's resource usage so far (`getrusage`).
pub fn usage() -> Usage {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into the pointer it is given, which is valid.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) } == 0;
    if !ok {
        return Usage::default();
    }
    // SAFETY: getrusage succeeded, so it filled the struct (and zeroed is valid anyway).
    let u = unsafe { u.assume_init() };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    Usage { minor_faults: u.ru_minflt as u64, user_s: t(u.ru_utime), system_s: t(u.ru_stime) }
}

/// The kernel's transparent-huge-page policy file: `always [madvise] never`, the bracketed
/// one in force.
pub const THP_POLICY_FILE: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Buffers at least this large are asked to be backed by huge pages.
pub const HUGE_PAGES_FROM: usize = 32 << 20;

/// An empty vector with room for `capacity` values whose buffer, when at least
/// [`HUGE_PAGES_FROM`] bytes, the kernel is asked (`madvise(MADV_HUGEPAGE)`) to back with
/// 2 MiB transparent huge pages where its policy is `madvise` (the common default) or
/// `always`. A partition's witness and its selected scalars are gigabytes written once into
/// fresh pages: with 4 KiB pages that is a page fault every 4 KiB (~1 M per 4 GiB, a third of
/// a 32 GiB pipeline's CPU time went to the kernel), with huge pages 512 times fewer. Elsewhere
/// (not Linux, policy `never`, advice refused) it is an ordinary vector.
pub fn vec_with_huge_pages<T>(capacity: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(capacity);
    advise_huge_pages(v.as_ptr().cast(), capacity.saturating_mul(std::mem::size_of::<T>()));
    v
}

/// Asks for huge pages over the whole 2 MiB pages inside `[start, start + len)`, when `len`
/// is at least [`HUGE_PAGES_FROM`]; returns whether the kernel took the advice.
fn advise_huge_pages(start: *const u8, len: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if len < HUGE_PAGES_FROM {
            return false;
        }
        let (from, to) = ((start as usize).next_multiple_of(HUGE), (start as usize + len) / HUGE * HUGE);
        // SAFETY: [from, to) lies inside the caller's allocation; MADV_HUGEPAGE only changes
        // how the kernel backs those pages, never their contents or validity.
        to > from && unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) } == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (start, len);
        false
    }
}

/// Formats a byte count as GiB/MiB for humans.
pub fn human_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let b = bytes as f64;
    if b >= 1024.0 * MIB {
        format!("{:.2} GiB", b / (1024.0 * MIB))
    } else {
        format!("{:.1} MiB", b / MIB)
    }
}

/// One stage of a traced run.
#[derive(Clone, Debug, Serialize)]
pub struct StageRow {
    /// Stage name, e.g. `"load-params"`.
    pub stage: String,
    /// Seconds from the tracer's creation to the stage's start.
    pub start_s: f64,
    /// Seconds the stage took.
    pub duration_s: f64,
    /// RSS right after the stage (after `malloc_trim`).
    pub rss_bytes: u64,
    /// Peak RSS of the process at the end of the stage.
    pub peak_bytes: u64,
}

/// Records a [`StageRow`] for every stage run through it. Cheap, thread-safe.
#[derive(Debug)]
pub struct StageTracer {
    origin: Instant,
    rows: Mutex<Vec<StageRow>>,
}

impl Default for StageTracer {
    fn default() -> Self {
        Self::new()
    }
}

impl StageTracer {
    /// A tracer whose clock starts now.
    pub fn new() -> Self {
        StageTracer { origin: Instant::now(), rows: Mutex::new(Vec::new()) }
    }

    /// Runs `f` as stage `name`, recording its time and the memory after it.
    pub fn stage<T>(&self, name: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        tracing::info!(stage = name, "stage start");
        let out = f();
        let duration_s = start.elapsed().as_secs_f64();
        malloc_trim();
        let mem = snapshot();
        tracing::info!(stage = name, seconds = format!("{duration_s:.3}"), rss = human_bytes(mem.rss_bytes), "stage done");
        self.rows.lock().unwrap_or_else(|e| e.into_inner()).push(StageRow {
            stage: name.to_string(),
            start_s: start.duration_since(self.origin).as_secs_f64(),
            duration_s,
            rss_bytes: mem.rss_bytes,
            peak_bytes: mem.peak_bytes,
        });
        out
    }

    /// Records a stage that ran elsewhere (e.g. on an engine's thread) and ended just now,
    /// with the RSS measured at its end; the peak is the process's peak now.
    pub fn push(&self, name: &str, duration_s: f64, rss_bytes: u64) {
        let end_s = self.origin.elapsed().as_secs_f64();
        self.rows.lock().unwrap_or_else(|e| e.into_inner()).push(StageRow {
            stage: name.to_string(),
            start_s: (end_s - duration_s).max(0.0),
            duration_s,
            rss_bytes,
            peak_bytes: snapshot().peak_bytes,
        });
    }

    /// The rows recorded so far, in completion order.
    pub fn rows(&self) -> Vec<StageRow> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A fixed-width table of the rows, one line per stage, with a final peak line.
    pub fn render(&self) -> String {
        let rows = self.rows();
        let mut out = format!("{:<22} {:>10} {:>12} {:>12}\n", "stage", "seconds", "rss", "peak rss");
        for r in &rows {
            out.push_str(&format!(
                "{:<22} {:>10.3} {:>12} {:>12}\n",
                r.stage,
                r.duration_s,
                human_bytes(r.rss_bytes),
                human_bytes(r.peak_bytes)
            ));
        }
        let peak = rows.iter().map(|r| r.peak_bytes).max().unwrap_or(0);
        out.push_str(&format!("peak RSS (VmHWM): {}\n", human_bytes(peak)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minor page faults of this thread so far.
    fn thread_minor_faults() -> i64 {
        let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one rusage into the valid pointer it is given.
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, u.as_mut_ptr()) }, 0);
        // SAFETY: filled by the successful call above.
        unsafe { u.assume_init() }.ru_minflt
    }

    /// Faults taken writing `n` values into a vector made by `make`.
    fn faults_filling(make: impl Fn(usize) -> Vec<u64>, n: usize) -> i64 {
        let before = thread_minor_faults();
        let mut v = make(n);
        v.extend(0..n as u64);
        let faults = thread_minor_faults() - before;
        assert_eq!(v[n - 1], n as u64 - 1);
        faults
    }

    #[test]
    fn a_large_buffer_on_huge_pages_takes_far_fewer_page_faults_where_the_kernel_allows_them() {
        let n = (128 << 20) / 8; // 128 MiB of u64
        let plain = faults_filling(Vec::with_capacity, n);
        let huge = faults_filling(vec_with_huge_pages, n);
        let policy = std::fs::read_to_string(THP_POLICY_FILE).unwrap_or_default();
        eprintln!("transparent huge pages {:?}: {plain} faults on 4 KiB pages, {huge} asked for huge pages", policy.trim());
        let pages = (n * 8 / 4096) as i64;
        if policy.contains("[always]") {
            // Every large buffer gets huge pages anyway; the advised one surely does.
            assert!(huge * 4 <= pages, "{huge} faults for {pages} small pages' worth");
        } else if policy.contains("[madvise]") {
            assert!(plain >= pages / 2, "a fresh 128 MiB buffer faults per 4 KiB page: {plain}");
            assert!(huge * 4 <= plain, "huge pages were asked for and allowed: {huge} faults against {plain}");
        } else {
            // Policy `never` (or no THP at all): the advice changes nothing, and it is harmless.
            assert!(plain >= pages / 2 && huge * 2 >= plain, "{huge} against {plain}");
        }
        // Small buffers are left alone.
        assert!(!advise_huge_pages(vec![0u8; 1 << 20].as_ptr(), 1 << 20));
    }

    #[test]
    fn parses_proc_status_fields() {
        let s = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t   600 kB\nRssFile:\t   400 kB\nRssShmem:\t     24 kB\n";
        let want = MemSnapshot {
            rss_bytes: 1024 * 1024,
            peak_bytes: 2048 * 1024,
            anon_bytes: 600 * 1024,
            file_bytes: 400 * 1024,
            shmem_bytes: 24 * 1024,
        };
        assert_eq!(parse_status(s), want);
        assert_eq!(parse_status("VmRSS:\t 8 kB\n"), MemSnapshot { rss_bytes: 8 * 1024, ..MemSnapshot::default() }, "missing fields are 0");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_resident_set_is_its_anonymous_file_and_shared_parts() {
        let s = snapshot();
        assert!(s.anon_bytes > 0 && s.file_bytes > 0, "{s:?}");
        assert_eq!(s.rss_bytes, s.anon_bytes + s.file_bytes + s.shmem_bytes, "{s:?}");
    }

    #[test]
    fn peak_tracks_a_large_allocation() {
        // Other tests of this binary allocate and free concurrently, which can hide one
        // allocation's rise in the process-wide RSS: the rise must show in one of five tries.
        let mut seen = Vec::new();
        for _ in 0..5 {
            let before = snapshot();
            assert!(before.rss_bytes > 0 && before.peak_bytes >= before.rss_bytes);
            let big = vec![1u8; 64 << 20];
            let during = snapshot();
            assert!(during.peak_bytes >= before.peak_bytes);
            drop(std::hint::black_box(big));
            if during.rss_bytes >= before.rss_bytes + (48 << 20) {
                return;
            }
            seen.push((before, during));
        }
        panic!("a 64 MiB allocation never raised the RSS by 48 MiB: {seen:?}");
    }

    #[test]
    fn tracer_records_each_stage_in_order() {
        let t = StageTracer::new();
        let v = t.stage("one", || 1 + 1);
        t.stage("two", || std::thread::sleep(std::time::Duration::from_millis(20)));
        assert_eq!(v, 2);
        let rows = t.rows();
        assert_eq!(rows.iter().map(|r| r.stage.as_str()).collect::<Vec<_>>(), ["one", "two"]);
        assert!(rows[1].duration_s >= 0.02);
        assert!(rows[1].start_s >= rows[0].start_s);
        assert!(t.render().contains("peak RSS"));
    }
}
