//! The daemon's settings: defaults, then a TOML file, then `CUZK_*` environment variables
//! (then the command line, applied by the caller). [`DaemonConfig::render`] prints the
//! effective result as TOML, which is also a valid config file. It owns parsing and checking
//! the values (a fault plan is refused here when the build has no fault injection), and reads
//! the environment only through the look-up function its caller passes; it knows nothing of
//! the server, the service or the engine that consume the settings.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::DaemonError;

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    Unix(PathBuf),
    Tcp(std::net::SocketAddr),
}

impl Listen {
    /// `unix:///PATH` or `tcp://HOST:PORT` (`unix:PATH` and a bare `HOST:PORT` are accepted too).
    pub fn parse(s: &str) -> Result<Listen, DaemonError> {
        let bad = |why: &str| DaemonError::Config(format!("listen address {s:?}: {why} (want unix:///PATH or tcp://HOST:PORT)"));
        if let Some(p) = s.strip_prefix("unix://").or_else(|| s.strip_prefix("unix:")) {
            if p.is_empty() {
                return Err(bad("empty socket path"));
            }
            return Ok(Listen::Unix(PathBuf::from(p)));
        }
        let hp = s.strip_prefix("tcp://").unwrap_or(s);
        use std::net::ToSocketAddrs;
        let addr = hp.to_socket_addrs().map_err(|e| bad(&e.to_string()))?.next().ok_or_else(|| bad("no address"))?;
        Ok(Listen::Tcp(addr))
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Unix(p) => write!(f, "unix://{}", p.display()),
            Listen::Tcp(a) => write!(f, "tcp://{a}"),
        }
    }
}

/// Engine settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EngineSection {
    /// `auto` (every visible CUDA device, else the CPU), `cpu` or `cuda`.
    pub backend: String,
    /// Partitions in witness synthesis at once.
    pub synthesis_workers: usize,
    /// Prover threads per device.
    pub provers_per_device: usize,
    /// Jobs handed to the engine at once (the rest wait in the priority queues); 0 = synthesis
    /// workers + provers.
    pub max_in_flight: usize,
    /// Host bytes in-flight partitions may hold together, e.g. "24GiB"; "auto" = 80 % of
    /// MemAvailable at start.
    pub budget: String,
    /// Run verify_seal on every proof before returning it (a request can opt out).
    pub verify: bool,
    /// When a device fails on a partition: "fail" (the job fails with the device's error) or
    /// "retry-cpu" (that partition is evaluated again and proved on the CPU).
    pub on_device_error: String,
    /// Testing and failure drills only: faults injected into every device's backend, e.g.
    /// "device-error" or "device-error;corrupt-msm,skip=1" (docs/RELIABILITY.md); "" = none.
    pub inject_fault: String,
    /// How PoRep witnesses are computed: "native" (machine-word SHA-256, the default) or
    /// "gadgets" (the circuit's own gadgets, for comparison).
    pub witness: String,
}

impl Default for EngineSection {
    fn default() -> Self {
        EngineSection {
            backend: "auto".into(),
            synthesis_workers: 2,
            provers_per_device: 1,
            max_in_flight: 0,
            budget: "auto".into(),
            verify: true,
            on_device_error: "fail".into(),
            inject_fault: String::new(),
            witness: "native".into(),
        }
    }
}

/// Parameter (SRS) settings.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SrsSection {
    /// Circuits whose parameters and PCE are loaded at start, e.g. ["porep-32g"].
    pub preload: Vec<String>,
}

/// Job bookkeeping.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct JobsSection {
    /// Finished jobs remembered for AwaitProof and idempotent resubmission.
    pub retain: usize,
    /// Largest request accepted, e.g. "256MiB" (a 32 GiB C1 is ~50 MB).
    pub max_request: String,
}

impl Default for JobsSection {
    fn default() -> Self {
        JobsSection { retain: 10_000, max_request: "256MiB".into() }
    }
}

/// Everything `cuzk daemon` reads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// `unix:///PATH` or `tcp://HOST:PORT`.
    pub listen: String,
    pub engine: EngineSection,
    pub srs: SrsSection,
    pub jobs: JobsSection,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: "unix:///tmp/cuzk.sock".into(),
            engine: EngineSection::default(),
            srs: SrsSection::default(),
            jobs: JobsSection::default(),
        }
    }
}

/// Why one config value was refused (the caller names the key or variable it came from).
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("unknown key {0}")]
    UnknownKey(String),
    #[error("not a count")]
    NotACount(#[source] std::num::ParseIntError),
    #[error("want true or false")]
    NotABool,
    #[error("{0:?} is not a byte size like 24GiB")]
    NotASize(String),
    #[error("{text:?}: unknown unit {unit:?}")]
    UnknownUnit { text: String, unit: String },
}

/// The environment variables that override config keys, in the order they are applied.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("CUZK_LISTEN", "listen"),
    ("CUZK_BACKEND", "engine.backend"),
    ("CUZK_SYNTHESIS_WORKERS", "engine.synthesis_workers"),
    ("CUZK_PROVERS_PER_DEVICE", "engine.provers_per_device"),
    ("CUZK_MAX_IN_FLIGHT", "engine.max_in_flight"),
    ("CUZK_BUDGET", "engine.budget"),
    ("CUZK_VERIFY", "engine.verify"),
    ("CUZK_ON_DEVICE_ERROR", "engine.on_device_error"),
    ("CUZK_INJECT_FAULT", "engine.inject_fault"),
    ("CUZK_WITNESS", "engine.witness"),
    ("CUZK_PRELOAD", "srs.preload"),
    ("CUZK_RETAIN_JOBS", "jobs.retain"),
    ("CUZK_MAX_REQUEST", "jobs.max_request"),
];

impl DaemonConfig {
    /// Defaults, then `file` if given, then the environment (`env` looks a name up).
    pub fn load(file: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Result<Self, DaemonError> {
        let mut cfg = match file {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| DaemonError::Config(format!("{}: {e}", p.display())))?;
                toml::from_str(&text).map_err(|e| DaemonError::Config(format!("{}: {e}", p.display())))?
            }
            None => DaemonConfig::default(),
        };
        cfg.validate()?;
        for (var, key) in ENV_KEYS {
            if let Some(v) = env(var) {
                let named = |e: String| DaemonError::Config(format!("{var}={v:?}: {e}"));
                cfg.set(key, &v).map_err(|e| named(cuzk_pipeline::error_chain(&e)))?;
                // Checked per variable, so that a bad value is blamed on the variable.
                cfg.validate().map_err(|e| named(e.to_string()))?;
            }
        }
        Ok(cfg)
    }

    /// Sets one dotted key from its text form.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), ValueError> {
        let num = |v: &str| v.trim().parse::<usize>().map_err(ValueError::NotACount);
        match key {
            "listen" => self.listen = v.into(),
            "engine.backend" => self.engine.backend = v.into(),
            "engine.synthesis_workers" => self.engine.synthesis_workers = num(v)?,
            "engine.provers_per_device" => self.engine.provers_per_device = num(v)?,
            "engine.max_in_flight" => self.engine.max_in_flight = num(v)?,
            "engine.budget" => self.engine.budget = v.into(),
            "engine.verify" => {
                self.engine.verify = match v.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" => false,
                    _ => return Err(ValueError::NotABool),
                }
            }
            "engine.on_device_error" => self.engine.on_device_error = v.trim().into(),
            "engine.inject_fault" => self.engine.inject_fault = v.trim().into(),
            "engine.witness" => self.engine.witness = v.trim().into(),
            "srs.preload" => self.srs.preload = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
            "jobs.retain" => self.jobs.retain = num(v)?,
            "jobs.max_request" => self.jobs.max_request = v.into(),
            _ => return Err(ValueError::UnknownKey(key.to_string())),
        }
        Ok(())
    }

    /// Checks every value that can be checked without starting anything.
    pub fn validate(&self) -> Result<(), DaemonError> {
        let bad = |k: &str, why: String| Err(DaemonError::Config(format!("{k}: {why}")));
        Listen::parse(&self.listen)?;
        if !["auto", "cpu", "cuda"].contains(&self.engine.backend.as_str()) {
            return bad("engine.backend", format!("{:?} is not auto, cpu or cuda", self.engine.backend));
        }
        if self.engine.synthesis_workers == 0 || self.engine.provers_per_device == 0 {
            return bad("engine", "synthesis_workers and provers_per_device must be at least 1".into());
        }
        if !["fail", "retry-cpu"].contains(&self.engine.on_device_error.as_str()) {
            return bad("engine.on_device_error", format!("{:?} is not fail or retry-cpu", self.engine.on_device_error));
        }
        self.fault_plans()?;
        self.witness_mode()?;
        if self.engine.budget != "auto" {
            parse_bytes(&self.engine.budget).map_err(|e| DaemonError::Config(format!("engine.budget: {e}")))?;
        }
        parse_bytes(&self.jobs.max_request).map_err(|e| DaemonError::Config(format!("jobs.max_request: {e}")))?;
        for c in &self.srs.preload {
            cuzk_filecoin::curio::parse(c).map_err(|e| DaemonError::Config(format!("srs.preload: {e}")))?;
        }
        Ok(())
    }

    /// The fault plans `engine.inject_fault` names; refused when there are any and this build
    /// has no fault injection (cuzk-core's feature `fault-injection`).
    pub fn fault_plans(&self) -> Result<Vec<cuzk_core::backend::fault::FaultPlan>, DaemonError> {
        cuzk_core::backend::fault::plans(&self.engine.inject_fault).map_err(|e| DaemonError::Config(format!("engine.inject_fault: {e}")))
    }

    /// The PoRep witness mode `engine.witness` names.
    pub fn witness_mode(&self) -> Result<cuzk_filecoin::porep::WitnessMode, DaemonError> {
        self.engine.witness.parse().map_err(|e| DaemonError::Config(format!("engine.witness: {e}")))
    }

    /// The effective config as TOML.
    pub fn render(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    }

    /// The byte budget (resolving "auto").
    pub fn budget_bytes(&self) -> u64 {
        match self.engine.budget.as_str() {
            "auto" => cuzk_pipeline::budget::default_budget(),
            b => parse_bytes(b).unwrap_or(0),
        }
    }
}

/// "24GiB", "512MiB", "64KiB", "1.5GiB", "1000000" (bytes); also kB/MB/GB (decimal).
pub fn parse_bytes(s: &str) -> Result<u64, ValueError> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| ValueError::NotASize(s.to_string()))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" | "k" => 1024.0,
        "mib" | "m" => 1024.0 * 1024.0,
        "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
        "tib" | "t" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        u => return Err(ValueError::UnknownUnit { text: s.to_string(), unit: u.to_string() }),
    };
    Ok((n * mult) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env_and_render_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("cuzk.toml");
        std::fs::write(&f, "listen = \"tcp://127.0.0.1:9820\"\n[engine]\nsynthesis_workers = 6\nbudget = \"24GiB\"\n").unwrap();
        let env = |k: &str| match k {
            "CUZK_PROVERS_PER_DEVICE" => Some("2".to_string()),
            "CUZK_PRELOAD" => Some("porep-2k, porep-32g".to_string()),
            "CUZK_VERIFY" => Some("false".to_string()),
            _ => None,
        };
        let c = DaemonConfig::load(Some(&f), env).unwrap();
        assert_eq!(c.listen, "tcp://127.0.0.1:9820");
        assert_eq!(c.engine.synthesis_workers, 6);
        assert_eq!(c.engine.provers_per_device, 2);
        assert!(!c.engine.verify);
        assert_eq!(c.srs.preload, vec!["porep-2k", "porep-32g"]);
        assert_eq!(c.budget_bytes(), 24 << 30);
        let back: DaemonConfig = toml::from_str(&c.render()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn bad_values_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("cuzk.toml");
        std::fs::write(&f, "[engine]\nsynthesis_wrokers = 6\n").unwrap();
        let e = DaemonConfig::load(Some(&f), |_| None).unwrap_err().to_string();
        assert!(e.contains("synthesis_wrokers"), "{e}");
        let e = DaemonConfig::load(None, |k| (k == "CUZK_BUDGET").then(|| "lots".into())).unwrap_err().to_string();
        assert!(e.contains("CUZK_BUDGET") && e.contains("lots"), "{e}");
        let e = DaemonConfig::load(None, |k| (k == "CUZK_LISTEN").then(|| "http://x".into())).unwrap_err().to_string();
        assert!(e.contains("http://x"), "{e}");
        let e = DaemonConfig::load(None, |k| (k == "CUZK_PRELOAD").then(|| "porep-3k".into())).unwrap_err().to_string();
        assert!(e.contains("porep-3k"), "{e}");
        let e = DaemonConfig::load(None, |k| (k == "CUZK_ON_DEVICE_ERROR").then(|| "pray".into())).unwrap_err().to_string();
        assert!(e.contains("CUZK_ON_DEVICE_ERROR") && e.contains("retry-cpu"), "{e}");
        let e = DaemonConfig::load(None, |k| (k == "CUZK_INJECT_FAULT").then(|| "melt".into())).unwrap_err().to_string();
        assert!(e.contains("CUZK_INJECT_FAULT") && e.contains("melt"), "{e}");
        let ok = DaemonConfig::load(None, |k| (k == "CUZK_ON_DEVICE_ERROR").then(|| "retry-cpu".into())).unwrap();
        assert_eq!(ok.engine.on_device_error, "retry-cpu");
    }

    #[test]
    fn fault_injection_is_refused_unless_this_build_has_it() {
        let set = |v: &'static str| move |k: &str| (k == "CUZK_INJECT_FAULT").then(|| v.to_string());
        assert!(DaemonConfig::load(None, set("")).unwrap().fault_plans().unwrap().is_empty());
        let r = DaemonConfig::load(None, set("device-error;corrupt-msm,skip=1"));
        if cuzk_core::backend::fault::AVAILABLE {
            assert_eq!(r.unwrap().fault_plans().unwrap().len(), 2);
        } else {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("CUZK_INJECT_FAULT") && e.contains("this build has no fault injection"), "{e}");
            assert!(e.contains("--features fault-injection"), "{e}");
        }
    }

    #[test]
    fn listen_and_bytes_parse() {
        assert_eq!(Listen::parse("unix:///run/cuzk.sock").unwrap(), Listen::Unix("/run/cuzk.sock".into()));
        assert_eq!(Listen::parse("tcp://127.0.0.1:9820").unwrap(), Listen::Tcp("127.0.0.1:9820".parse().unwrap()));
        assert!(Listen::parse("unix://").is_err());
        assert_eq!(parse_bytes("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("1000").unwrap(), 1000);
        assert!(parse_bytes("GiB").is_err() && parse_bytes("3 parsecs").is_err());
    }
}
