//! `cuzk doctor`: is this machine ready to prove? One line per check — the build, the GPU and
//! its driver, the parameter directory file by file (official, cuzk's test parameters, damaged
//! or unknown, against filecoin-proofs' manifest), each configured sector size's parameters and
//! PCE cache, free disk and memory against what that size needs — each `OK`, `INFO`, `WARN` or
//! `FAIL` with what to do. Exit 1 when a check FAILs (something blocks proving), else 0. The
//! judging lives in [`judge`] functions that take what was measured, so they are tested
//! without the machine.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use cuzk_core::mem::THP_POLICY_FILE;
use cuzk_filecoin::param_cache::{self, CachedFile, Origin};
use cuzk_filecoin::porep::params::ParamPaths;
use cuzk_filecoin::porep::sector;
use cuzk_pipeline::kind::ProofKind;

use crate::context::{kinds, settings};

#[derive(Args)]
pub struct DoctorArgs {
    /// Sector sizes this machine must prove (repeat the flag); default: every size whose PoRep
    /// parameters are present, or 2KiB when none are.
    #[arg(long = "sector-size")]
    sector_sizes: Vec<String>,
    /// Skip the digests of parameter files (reading an official 32 GiB file takes minutes).
    #[arg(long)]
    quick: bool,
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Ok,
    Info,
    Warn,
    Fail,
}

/// One line of the report.
#[derive(Debug)]
pub struct Check {
    pub status: Status,
    pub what: String,
    pub detail: String,
}

impl Check {
    fn new(status: Status, what: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { status, what: what.into(), detail: detail.into() }
    }

    fn render(&self) -> String {
        let tag = match self.status {
            Status::Ok => "OK  ",
            Status::Info => "INFO",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        };
        format!("{tag}  {}: {}", self.what, self.detail)
    }
}

pub fn run(a: DoctorArgs) -> Result<ExitCode> {
    let mut checks = vec![build()];
    checks.extend(gpu());
    checks.push(driver());
    checks.push(judge::huge_pages(std::fs::read_to_string(THP_POLICY_FILE).ok().as_deref()));
    let dir = &settings().parameter_dir;
    let files = match param_cache::scan(dir, !a.quick) {
        Ok(f) => f,
        Err(e) => {
            checks.push(Check::new(Status::Fail, "parameter directory", format!("{e}; create it or set FIL_PROOFS_PARAMETER_CACHE")));
            Vec::new()
        }
    };
    checks.extend(files.iter().map(judge::file));
    for size in sizes(&a.sector_sizes, &files)? {
        checks.extend(sector_checks(size)?);
    }
    let failed = checks.iter().any(|c| c.status == Status::Fail);
    for c in &checks {
        println!("{}", c.render());
    }
    println!("{}", if failed { "not ready: fix the FAIL lines above" } else { "ready to prove" });
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The sizes asked for, else those whose PoRep parameters are present, else 2 KiB.
fn sizes(asked: &[String], files: &[CachedFile]) -> Result<Vec<u64>> {
    if !asked.is_empty() {
        return asked.iter().map(|s| Ok(sector::parse_sector_size(s)?)).collect();
    }
    let mut present: Vec<u64> =
        files.iter().filter(|f| f.family == "PoRep" && f.name.ends_with(".params")).filter_map(|f| f.sector_size).collect();
    present.sort_unstable();
    present.dedup();
    Ok(if present.is_empty() { vec![2 << 10] } else { present })
}

fn build() -> Check {
    let version = env!("CARGO_PKG_VERSION");
    if cuzk_gpu::built_with_cuda() {
        Check::new(Status::Ok, "build", format!("cuzk {version}, CUDA backend compiled in"))
    } else {
        Check::new(Status::Warn, "build", format!("cuzk {version}, CPU only: GPU proving needs a binary from `cargo xtask build --cuda`"))
    }
}

fn gpu() -> Vec<Check> {
    match cuzk_gpu::devices() {
        Ok(devs) => devs
            .iter()
            .map(|d| Check::new(Status::Ok, format!("gpu {}", d.index), format!("{}, {}", d.name, gib(d.memory_bytes))))
            .collect(),
        Err(cuzk_gpu::GpuError::NotBuilt) => vec![Check::new(Status::Info, "gpu", "not checked: this build has no CUDA backend")],
        Err(e) => vec![Check::new(Status::Warn, "gpu", format!("{e}: proofs run on the CPU backend (minutes per 32 GiB partition)"))],
    }
}

fn driver() -> Check {
    match std::fs::read_to_string("/proc/driver/nvidia/version") {
        Ok(s) => Check::new(Status::Ok, "driver", s.lines().next().unwrap_or("").trim().to_string()),
        Err(_) if cuzk_gpu::built_with_cuda() => {
            Check::new(Status::Warn, "driver", "no NVIDIA kernel driver loaded (/proc/driver/nvidia/version)")
        }
        Err(_) => Check::new(Status::Info, "driver", "not checked: this build has no CUDA backend"),
    }
}

/// Parameters, PCE cache, disk and memory for one sector size.
fn sector_checks(size: u64) -> Result<Vec<Check>> {
    let name = sector::size_name(size);
    let rp = sector::registered_proof(size)?;
    let paths = ParamPaths::for_proof(rp)?;
    let params = params_layout(&paths);
    let params_bytes = params.as_ref().ok().copied();
    let kind = &kinds().porep;
    let pce_path = cuzk_pipeline::resources::pce_cache_path(&settings().pce_cache_dir, &kind.circuit_id(&rp));
    let pce_bytes = std::fs::metadata(&pce_path).ok().map(|m| m.len());
    let need = judge::Needs::of(params_bytes);
    Ok(vec![
        judge::params(&name, &paths, params),
        judge::pce(&name, &pce_path, pce_bytes),
        judge::disk(&name, &settings().pce_cache_dir, free_space(&settings().pce_cache_dir), pce_bytes.is_none(), &need),
        judge::memory(&name, meminfo(), &need),
    ])
}

/// The `.params` file's size once its headers and length agree, and the `.vk` file checked.
fn params_layout(paths: &ParamPaths) -> std::result::Result<u64, String> {
    if !paths.params.exists() {
        return Err("missing".into());
    }
    let layout = cuzk_core::params::check_params_file(&paths.params).map_err(|e| e.to_string())?;
    cuzk_core::params::check_vk_file(&paths.vk).map_err(|e| e.to_string())?;
    Ok(layout.file_bytes as u64)
}

/// Free bytes on the file system holding `dir` (its nearest existing ancestor).
fn free_space(dir: &Path) -> Option<u64> {
    dir.ancestors().find(|d| d.exists()).and_then(|d| fs2::available_space(d).ok())
}

/// (MemTotal, MemAvailable) in bytes from /proc/meminfo.
fn meminfo() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |key: &str| -> Option<u64> {
        let line = s.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}

/// `b` bytes in KiB, MiB or GiB, whichever reads best.
fn gib(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}

/// The verdicts, from what was measured.
pub mod judge {
    use super::*;

    /// Host memory and PCE-cache disk one sector size needs, derived from its `.params` size
    /// with the ratios measured at 32 GiB (docs/RESULTS.md): the process peaks at 2.3× the
    /// parameter file while loading it (101 GiB for 44.1 GiB), plus 1 GiB of everything
    /// else; the PCE cache file is 4.5 % of it (1.95 GiB).
    #[derive(Debug, PartialEq)]
    pub struct Needs {
        pub memory: Option<u64>,
        pub pce_disk: Option<u64>,
    }

    impl Needs {
        pub fn of(params_bytes: Option<u64>) -> Needs {
            Needs { memory: params_bytes.map(|p| p * 23 / 10 + (1 << 30)), pce_disk: params_bytes.map(|p| p * 45 / 1000 + (64 << 20)) }
        }
    }

    pub fn file(f: &CachedFile) -> Check {
        let what = format!("file {}", f.name);
        let about = match f.sector_size {
            Some(s) => format!("{} {}, {}", f.family, sector::size_name(s), gib(f.bytes)),
            None => gib(f.bytes),
        };
        match &f.origin {
            Origin::Official => Check::new(Status::Ok, what, format!("{about}, official (digest matches parameters.json)")),
            Origin::NotHashed => Check::new(Status::Ok, what, format!("{about}, listed in parameters.json (digest not checked: --quick)")),
            Origin::TestParameters => Check::new(
                Status::Warn,
                what,
                format!("{about}, cuzk's locally generated TEST parameters: insecure, proofs verify only against them"),
            ),
            Origin::DigestMismatch { expected, actual } => Check::new(
                Status::Fail,
                what,
                format!("{about}, digest {actual} but parameters.json says {expected}: damaged or foreign; delete it and fetch it again"),
            ),
            Origin::Unlisted => {
                Check::new(Status::Info, what, format!("{about}, not in this filecoin-proofs' parameters.json (another version?)"))
            }
        }
    }

    pub fn params(size: &str, paths: &ParamPaths, layout: std::result::Result<u64, String>) -> Check {
        let what = format!("porep {size} parameters");
        match layout {
            Ok(bytes) => Check::new(Status::Ok, what, format!("{} ({}) and its .vk: sections agree with the file length", paths.params.display(), gib(bytes))),
            Err(why) => Check::new(
                Status::Fail,
                what,
                format!(
                    "{}: {why}; fetch the official files (`curio fetch-params {size}` or `lotus fetch-params {size}`), or for tests `cuzk params ensure --sector-size {size}`",
                    paths.params.display()
                ),
            ),
        }
    }

    pub fn pce(size: &str, path: &Path, bytes: Option<u64>) -> Check {
        let what = format!("porep {size} PCE cache");
        match bytes {
            Some(b) => {
                Check::new(Status::Ok, what, format!("{} ({}); checked in full when loaded, rebuilt if bad", path.display(), gib(b)))
            }
            None => Check::new(
                Status::Info,
                what,
                format!("{} absent: extracted on the first proof (minutes at 32 GiB), or now with `cuzk pce extract`", path.display()),
            ),
        }
    }

    pub fn disk(size: &str, dir: &Path, free: Option<u64>, pce_missing: bool, need: &Needs) -> Check {
        let what = format!("porep {size} disk");
        match (free, need.pce_disk) {
            (None, _) => Check::new(Status::Warn, what, format!("cannot read the free space of {}", dir.display())),
            (Some(f), Some(n)) if pce_missing && f < n => Check::new(
                Status::Fail,
                what,
                format!(
                    "{} free in {}, the PCE cache file needs about {}: free space there or move CUZK_PCE_CACHE",
                    gib(f),
                    dir.display(),
                    gib(n)
                ),
            ),
            (Some(f), _) => Check::new(Status::Ok, what, format!("{} free in {}", gib(f), dir.display())),
        }
    }

    pub fn memory(size: &str, mem: Option<(u64, u64)>, need: &Needs) -> Check {
        let what = format!("porep {size} memory");
        match (mem, need.memory) {
            (None, _) => Check::new(Status::Warn, what, "cannot read /proc/meminfo"),
            (Some((total, avail)), None) => Check::new(
                Status::Info,
                what,
                format!("{} total, {} available; need unknown until the parameters are present", gib(total), gib(avail)),
            ),
            (Some((total, _)), Some(n)) if total < n => Check::new(
                Status::Fail,
                what,
                format!(
                    "{} total, a proof peaks near {} while loading the parameters: this machine cannot prove {size}",
                    gib(total),
                    gib(n)
                ),
            ),
            (Some((total, avail)), Some(n)) if avail < n => Check::new(
                Status::Warn,
                what,
                format!("{} available of {} total, a proof peaks near {}: stop other work first", gib(avail), gib(total), gib(n)),
            ),
            (Some((_, avail)), Some(n)) => Check::new(Status::Ok, what, format!("{} available, a proof peaks near {}", gib(avail), gib(n))),
        }
    }

    /// The transparent-huge-page policy (the file's text, if readable): the per-partition
    /// buffers ask for 2 MiB pages, which `always` and `madvise` grant and `never` refuses.
    pub fn huge_pages(policy_file: Option<&str>) -> Check {
        let what = "huge pages";
        let policy = policy_file.and_then(|s| s.split_whitespace().find_map(|w| w.strip_prefix('[')?.strip_suffix(']')));
        match policy {
            Some(p @ ("always" | "madvise")) => {
                Check::new(Status::Ok, what, format!("transparent huge pages: {p} (per-partition buffers on 2 MiB pages)"))
            }
            Some(p) => Check::new(
                Status::Warn,
                what,
                format!(
                    "transparent huge pages: {p}; a 32 GiB NI-PoRep proof took 9× the page faults and 38 % instead of 24 % of its CPU \
                     time in the kernel without them (docs/RESULTS.md): `echo madvise > {THP_POLICY_FILE}`"
                ),
            ),
            None => Check::new(Status::Info, what, format!("not checked: no policy in {THP_POLICY_FILE}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::judge::*;
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn needs_scale_from_the_measured_32gib_figures() {
        let n = Needs::of(Some(44 * GIB));
        // 2.3 × 44 GiB + 1 GiB = 102.2 GiB; 4.5 % of 44 GiB + 64 MiB = 2.04 GiB.
        assert_eq!(n.memory, Some(44 * GIB * 23 / 10 + GIB));
        assert!((101 * GIB..104 * GIB).contains(&n.memory.unwrap()));
        assert!((GIB * 19 / 10..GIB * 21 / 10).contains(&n.pce_disk.unwrap()));
        assert_eq!(Needs::of(None), Needs { memory: None, pce_disk: None });
    }

    #[test]
    fn memory_fails_below_the_need_warns_when_only_busy() {
        let need = Needs::of(Some(44 * GIB));
        assert_eq!(memory("32GiB", Some((64 * GIB, 60 * GIB)), &need).status, Status::Fail);
        assert_eq!(memory("32GiB", Some((256 * GIB, 90 * GIB)), &need).status, Status::Warn);
        assert_eq!(memory("32GiB", Some((256 * GIB, 200 * GIB)), &need).status, Status::Ok);
        assert_eq!(memory("32GiB", None, &need).status, Status::Warn);
    }

    #[test]
    fn disk_fails_only_when_a_missing_pce_cache_cannot_fit() {
        let need = Needs::of(Some(44 * GIB));
        let d = Path::new("/x");
        assert_eq!(disk("32GiB", d, Some(GIB), true, &need).status, Status::Fail);
        assert_eq!(disk("32GiB", d, Some(GIB), false, &need).status, Status::Ok);
        assert_eq!(disk("32GiB", d, Some(10 * GIB), true, &need).status, Status::Ok);
    }

    #[test]
    fn huge_pages_warn_only_when_the_kernel_refuses_them() {
        assert_eq!(huge_pages(Some("always [madvise] never\n")).status, Status::Ok);
        assert_eq!(huge_pages(Some("[always] madvise never\n")).status, Status::Ok);
        let never = huge_pages(Some("always madvise [never]\n"));
        assert_eq!(never.status, Status::Warn);
        assert!(never.detail.contains("never") && never.detail.contains("echo madvise"), "{}", never.detail);
        assert_eq!(huge_pages(None).status, Status::Info);
        assert_eq!(huge_pages(Some("garbage")).status, Status::Info);
    }

    #[test]
    fn damaged_parameter_files_fail_and_test_parameters_warn() {
        let f = |origin| CachedFile {
            name: "v28-x.params".into(),
            path: "/p/v28-x.params".into(),
            bytes: 10,
            family: "PoRep",
            sector_size: Some(2048),
            origin,
        };
        let bad = file(&f(Origin::DigestMismatch { expected: "aa".into(), actual: "bb".into() }));
        assert_eq!(bad.status, Status::Fail);
        assert!(bad.detail.contains("bb") && bad.detail.contains("aa"), "{}", bad.detail);
        assert_eq!(file(&f(Origin::TestParameters)).status, Status::Warn);
        assert_eq!(file(&f(Origin::Official)).status, Status::Ok);
    }
}
