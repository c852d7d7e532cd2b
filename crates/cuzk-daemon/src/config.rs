//! The daemon's settings: defaults, then a TOML file, then `CUZK_*` environment variables
//! (then the command line, applied by the caller). [`DaemonConfig::render`] prints the
//! effective result as TOML, which is also a valid config file. It owns parsing and checking
//! the values (a fault plan is refused here when the build has no fault injection; TCP without
//! TLS and a token is refused unless `auth.insecure` says so), the default socket path (from
//! `XDG_RUNTIME_DIR`, else `/run/cuzk`), and reads the environment only through the look-up
//! function its caller passes; it knows nothing of the server, the service or the engine that
//! consume the settings.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::DaemonError;

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// A unix socket at this path (`unix:///PATH`).
    Unix(PathBuf),
    /// A TCP address (`tcp://HOST:PORT`; port 0 asks the kernel for a free one).
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
    /// Bytes of idle gigabyte buffers (a partition's witness and selected scalars) kept for
    /// the next partitions instead of being freed and faulted in afresh, e.g. "12GiB"; taken
    /// out of `budget` and capped at half of it, so add it to the budget. "0" (the default,
    /// until it is measured on a device) keeps none; "auto" = an eighth of the budget.
    pub buffer_pool: String,
    /// With the mat-vec on the GPUs, drop the host's copy of a circuit's matrix entries (4.3
    /// of the 5.9 GB a 32 GiB PoRep PCE holds) once every GPU holds the matrices; a GPU that
    /// loses its copy, or a CPU retry, reloads them from the PCE cache file. Off by default
    /// until measured on a device.
    pub release_host_matrices: bool,
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
    /// Which jobs take the engine's urgent lane (their own witness thread, an extra prover
    /// per device, the device at the next MSM or NTT boundary): "high" (WindowPoSt and
    /// WinningPoSt, the default), "critical" (WinningPoSt only) or "off".
    pub urgent_lane: String,
    /// Threads reserved for urgent partitions' CPU work (witness, host steps of the prover),
    /// so that they do not queue behind bulk jobs' tasks; 0 = none (they share the
    /// process-wide pool), or "auto" (the default): one per core.
    pub urgent_threads: String,
    /// GPU MSMs over resident bases run in pieces of at most 2^k points, one device call
    /// each, so an urgent job waits for one piece of a running partition's 2^27-point H MSM
    /// rather than all of it (16..=40, default 25; 0: one call per MSM). At 25 a loaded
    /// WinningPoSt's p99 fell from 1.04 to 0.45 s on an H100 and PoRep kept its throughput
    /// (docs/RESULTS.md, 2026-12-06, fifth session).
    pub msm_piece_log2: u32,
    /// Milliseconds the GPU stays reserved for an urgent job after each of its device calls,
    /// so that its next call, after some host work, does not queue behind a bulk partition's
    /// call (0..=1000; default 150). Longer keeps an urgent job's calls together when the
    /// host's cores are busy, at the price of the device idling that long after it.
    pub urgent_grace_ms: u32,
    /// Which Pippenger runs the GPU's G1 MSMs over resident bases: "cuzk" (cuzk's own driver
    /// over sppark's kernels from 2^21 points, the default: 10–15 % faster on an H100) or
    /// "sppark" (sppark's, the reference).
    pub msm_kernel: String,
    /// Where the GPU's side MSMs (L, A, B) get their scalars: "device" (the default: from the
    /// witness the GPU keeps after its upload, selected, split and gathered there) or "host"
    /// (selected and split on the host: the earlier layout, kept as the reference).
    pub side_msms: String,
}

impl Default for EngineSection {
    fn default() -> Self {
        EngineSection {
            backend: "auto".into(),
            synthesis_workers: 2,
            provers_per_device: 1,
            max_in_flight: 0,
            budget: "auto".into(),
            buffer_pool: "0".into(),
            release_host_matrices: false,
            verify: true,
            on_device_error: "fail".into(),
            inject_fault: String::new(),
            witness: "native".into(),
            urgent_lane: "high".into(),
            urgent_threads: "auto".into(),
            msm_piece_log2: 25,
            urgent_grace_ms: cuzk_core::device_lock::DEFAULT_URGENT_GRACE_MS,
            msm_kernel: "cuzk".into(),
            side_msms: "device".into(),
        }
    }
}

/// Parameter (SRS) settings.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SrsSection {
    /// Circuits whose parameters and PCE are loaded at start, e.g. ["porep-32g"]; they are
    /// never dropped for being idle.
    pub preload: Vec<String>,
    /// Drop a circuit's parameters and PCE after this many seconds without a job (0: keep
    /// them until evicted by an admin).
    pub idle_evict_s: u64,
    /// Device bytes of SRS sections each GPU keeps between proofs, e.g. "40GiB"; when another
    /// circuit's sections need the room, the least recently used go first, and a section
    /// larger than the cap travels with each call. "" (the default): the whole device, copies
    /// dropped only when an upload runs out of memory.
    pub device_budget: String,
    /// Directory of SRS map files (`cuzk_core::srs_map`): when set, parameters are mapped
    /// from there (each map made from its `.params` file on first use, as large as that file)
    /// instead of decoded into host memory. "" (the default): decoded.
    pub map_dir: String,
}

/// Job bookkeeping and the limits that keep a hostile client from exhausting the daemon.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct JobsSection {
    /// Finished proofs (accepted jobs) remembered for AwaitProof and idempotent resubmission.
    pub retain: usize,
    /// Bytes of retained results (proofs and error texts) at most, e.g. "256MiB"; collected
    /// results are forgotten first.
    pub retain_bytes: String,
    /// Seconds a finished job is remembered at most.
    pub retain_secs: u64,
    /// Refused requests (bad kind, bad C1, …) remembered apart, so they never push a proof out.
    pub retain_rejected: usize,
    /// Largest request accepted, e.g. "256MiB" (a 32 GiB C1 is ~50 MB).
    pub max_request: String,
    /// Jobs queued or running at once (RESOURCE_EXHAUSTED beyond).
    pub max_queued: usize,
    /// Bytes of C1 input held by queued or running jobs at once, e.g. "8GiB".
    pub max_queued_bytes: String,
    /// Jobs one client (its token, else its address) may have queued or running at once.
    pub max_per_client: usize,
    /// Longest request id in bytes (INVALID_ARGUMENT beyond).
    pub max_request_id: usize,
    /// Honour a request's `skip_verify` (otherwise the proof is verified anyway).
    pub allow_skip_verify: bool,
    /// Accept synthetic C1s (`cuzk gen-c1 --synthetic`: their proofs never verify).
    pub allow_synthetic: bool,
}

impl Default for JobsSection {
    fn default() -> Self {
        JobsSection {
            retain: 10_000,
            retain_bytes: "256MiB".into(),
            retain_secs: 24 * 3600,
            retain_rejected: 1000,
            max_request: "256MiB".into(),
            max_queued: 256,
            max_queued_bytes: "16GiB".into(),
            max_per_client: 256,
            max_request_id: 256,
            allow_skip_verify: false,
            allow_synthetic: false,
        }
    }
}

/// Who may talk to the daemon.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    /// File holding the client token (`authorization: Bearer TOKEN`); required on TCP unless
    /// `insecure`; "" = none.
    pub token_file: String,
    /// Also require the token on the unix socket (whose 0600 mode already limits it to this user).
    pub token_on_unix: bool,
    /// File holding the admin token (`x-cuzk-admin-token: TOKEN`) that PreloadSRS and EvictSRS
    /// need when set; "" = admin calls need only what every call needs.
    pub admin_token_file: String,
    /// PEM certificate chain for TLS on TCP; "" = no TLS (give both this and `tls_key`, or neither).
    pub tls_cert: String,
    /// PEM private key of `tls_cert`; "" = no TLS.
    pub tls_key: String,
    /// Allow TCP without TLS and without a token (Curio's client as it is); warned about at start.
    pub insecure: bool,
    /// The unix socket's mode, octal ("0600": only the daemon's user; "0660" adds its group).
    pub socket_mode: String,
}

impl Default for AuthSection {
    fn default() -> Self {
        AuthSection {
            token_file: String::new(),
            token_on_unix: false,
            admin_token_file: String::new(),
            tls_cert: String::new(),
            tls_key: String::new(),
            insecure: false,
            socket_mode: "0600".into(),
        }
    }
}

/// Connection limits.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NetSection {
    /// Open connections at once; later ones are closed at once until one goes away.
    pub max_connections: usize,
    /// Milliseconds a new connection has to send its first bytes (and finish TLS) before it is closed.
    pub handshake_timeout_ms: u64,
}

impl Default for NetSection {
    fn default() -> Self {
        NetSection { max_connections: 2048, handshake_timeout_ms: 10_000 }
    }
}

/// Everything `cuzk daemon` reads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// `unix:///PATH` or `tcp://HOST:PORT`.
    pub listen: String,
    /// `[engine]`: backend, workers, byte budget, verification and device-error policy.
    pub engine: EngineSection,
    /// `[srs]`: circuits preloaded at start.
    pub srs: SrsSection,
    /// `[jobs]`: job retention and the queue and request limits.
    pub jobs: JobsSection,
    /// `[auth]`: tokens, TLS and the unix socket's mode.
    pub auth: AuthSection,
    /// `[net]`: connection limits.
    pub net: NetSection,
}

/// The socket a daemon listens on when nothing says otherwise (and `XDG_RUNTIME_DIR` is unset).
pub const DEFAULT_SOCKET: &str = "/run/cuzk/cuzk.sock";

/// The default listen address: `unix://$XDG_RUNTIME_DIR/cuzk/cuzk.sock` (a per-user 0700
/// directory) when `env` has an absolute `XDG_RUNTIME_DIR`, else `unix:///run/cuzk/cuzk.sock`.
/// Never a world-writable directory such as /tmp.
pub fn default_listen(env: impl Fn(&str) -> Option<String>) -> String {
    match env("XDG_RUNTIME_DIR") {
        Some(d) if Path::new(&d).is_absolute() => format!("unix://{}", Path::new(&d).join("cuzk").join("cuzk.sock").display()),
        _ => format!("unix://{DEFAULT_SOCKET}"),
    }
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: format!("unix://{DEFAULT_SOCKET}"),
            engine: EngineSection::default(),
            srs: SrsSection::default(),
            jobs: JobsSection::default(),
            auth: AuthSection::default(),
            net: NetSection::default(),
        }
    }
}

/// Why one config value was refused (the caller names the key or variable it came from).
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    /// [`DaemonConfig::set`] was given a key it does not know (the dotted key).
    #[error("unknown key {0}")]
    UnknownKey(String),
    /// A count key's value is not a non-negative integer.
    #[error("not a count")]
    NotACount(#[source] std::num::ParseIntError),
    /// A boolean key's value is none of 1/true/yes/on or 0/false/no/off.
    #[error("want true or false")]
    NotABool,
    /// A byte size does not start with a number (the text as given).
    #[error("{0:?} is not a byte size like 24GiB")]
    NotASize(String),
    /// A byte size has a unit [`parse_bytes`] does not know.
    #[error("{text:?}: unknown unit {unit:?}")]
    UnknownUnit {
        /// The size as given.
        text: String,
        /// The unit, lower-cased.
        unit: String,
    },
    /// A byte size is above 2^62 bytes or not finite (the text as given).
    #[error("{0:?} is too large (at most 2^62 bytes)")]
    TooLarge(String),
}

/// The environment variables that override config keys, in the order they are applied.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("CUZK_LISTEN", "listen"),
    ("CUZK_BACKEND", "engine.backend"),
    ("CUZK_SYNTHESIS_WORKERS", "engine.synthesis_workers"),
    ("CUZK_PROVERS_PER_DEVICE", "engine.provers_per_device"),
    ("CUZK_MAX_IN_FLIGHT", "engine.max_in_flight"),
    ("CUZK_BUDGET", "engine.budget"),
    ("CUZK_BUFFER_POOL", "engine.buffer_pool"),
    ("CUZK_RELEASE_HOST_MATRICES", "engine.release_host_matrices"),
    ("CUZK_VERIFY", "engine.verify"),
    ("CUZK_ON_DEVICE_ERROR", "engine.on_device_error"),
    ("CUZK_INJECT_FAULT", "engine.inject_fault"),
    ("CUZK_WITNESS", "engine.witness"),
    ("CUZK_URGENT_LANE", "engine.urgent_lane"),
    ("CUZK_URGENT_THREADS", "engine.urgent_threads"),
    ("CUZK_MSM_PIECE_LOG2", "engine.msm_piece_log2"),
    ("CUZK_URGENT_GRACE_MS", "engine.urgent_grace_ms"),
    ("CUZK_MSM_KERNEL", "engine.msm_kernel"),
    ("CUZK_SIDE_MSMS", "engine.side_msms"),
    ("CUZK_PRELOAD", "srs.preload"),
    ("CUZK_IDLE_EVICT_S", "srs.idle_evict_s"),
    ("CUZK_SRS_DEVICE_BUDGET", "srs.device_budget"),
    ("CUZK_SRS_MAP_DIR", "srs.map_dir"),
    ("CUZK_RETAIN_JOBS", "jobs.retain"),
    ("CUZK_RETAIN_BYTES", "jobs.retain_bytes"),
    ("CUZK_RETAIN_SECS", "jobs.retain_secs"),
    ("CUZK_RETAIN_REJECTED", "jobs.retain_rejected"),
    ("CUZK_MAX_REQUEST", "jobs.max_request"),
    ("CUZK_MAX_QUEUED", "jobs.max_queued"),
    ("CUZK_MAX_QUEUED_BYTES", "jobs.max_queued_bytes"),
    ("CUZK_MAX_PER_CLIENT", "jobs.max_per_client"),
    ("CUZK_MAX_REQUEST_ID", "jobs.max_request_id"),
    ("CUZK_ALLOW_SKIP_VERIFY", "jobs.allow_skip_verify"),
    ("CUZK_ALLOW_SYNTHETIC", "jobs.allow_synthetic"),
    ("CUZK_TOKEN_FILE", "auth.token_file"),
    ("CUZK_TOKEN_ON_UNIX", "auth.token_on_unix"),
    ("CUZK_ADMIN_TOKEN_FILE", "auth.admin_token_file"),
    ("CUZK_TLS_CERT", "auth.tls_cert"),
    ("CUZK_TLS_KEY", "auth.tls_key"),
    ("CUZK_INSECURE", "auth.insecure"),
    ("CUZK_SOCKET_MODE", "auth.socket_mode"),
    ("CUZK_MAX_CONNECTIONS", "net.max_connections"),
    ("CUZK_HANDSHAKE_TIMEOUT_MS", "net.handshake_timeout_ms"),
];

fn parse_bool(v: &str) -> Result<bool, ValueError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ValueError::NotABool),
    }
}

impl DaemonConfig {
    /// Defaults, then `file` if given, then the environment (`env` looks a name up). A file
    /// without `listen` gets [`default_listen`] of `env`.
    pub fn load(file: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Result<Self, DaemonError> {
        let mut cfg = match file {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| DaemonError::Config(format!("{}: {e}", p.display())))?;
                let mut cfg: DaemonConfig = toml::from_str(&text).map_err(|e| DaemonError::Config(format!("{}: {e}", p.display())))?;
                if !text.parse::<toml::Table>().map(|t| t.contains_key("listen")).unwrap_or(false) {
                    cfg.listen = default_listen(&env);
                }
                cfg
            }
            None => DaemonConfig { listen: default_listen(&env), ..DaemonConfig::default() },
        };
        cfg.validate_values()?;
        for (var, key) in ENV_KEYS {
            if let Some(v) = env(var) {
                let named = |e: String| DaemonError::Config(format!("{var}={v:?}: {e}"));
                cfg.set(key, &v).map_err(|e| named(cuzk_pipeline::error_chain(&e)))?;
                // Checked per variable, so that a bad value is blamed on the variable.
                cfg.validate_values().map_err(|e| named(e.to_string()))?;
            }
        }
        // Rules across keys once every variable is in (CUZK_LISTEN comes before CUZK_INSECURE).
        cfg.check_transport()?;
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
            "engine.buffer_pool" => self.engine.buffer_pool = v.trim().into(),
            "engine.release_host_matrices" => self.engine.release_host_matrices = parse_bool(v)?,
            "engine.verify" => self.engine.verify = parse_bool(v)?,
            "engine.on_device_error" => self.engine.on_device_error = v.trim().into(),
            "engine.inject_fault" => self.engine.inject_fault = v.trim().into(),
            "engine.witness" => self.engine.witness = v.trim().into(),
            "engine.urgent_lane" => self.engine.urgent_lane = v.trim().into(),
            "engine.urgent_threads" => self.engine.urgent_threads = v.trim().into(),
            "engine.msm_piece_log2" => self.engine.msm_piece_log2 = num(v)? as u32,
            "engine.urgent_grace_ms" => self.engine.urgent_grace_ms = num(v)?.min(u32::MAX as usize) as u32,
            "engine.msm_kernel" => self.engine.msm_kernel = v.trim().into(),
            "engine.side_msms" => self.engine.side_msms = v.trim().into(),
            "srs.preload" => self.srs.preload = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
            "srs.idle_evict_s" => self.srs.idle_evict_s = num(v)? as u64,
            "srs.device_budget" => self.srs.device_budget = v.trim().into(),
            "srs.map_dir" => self.srs.map_dir = v.trim().into(),
            "jobs.retain" => self.jobs.retain = num(v)?,
            "jobs.max_request" => self.jobs.max_request = v.into(),
            _ => return self.set_limit(key, v),
        }
        Ok(())
    }

    /// [`DaemonConfig::set`] for the limit, policy and auth keys.
    fn set_limit(&mut self, key: &str, v: &str) -> Result<(), ValueError> {
        let num = |v: &str| v.trim().parse::<usize>().map_err(ValueError::NotACount);
        let (j, a) = (&mut self.jobs, &mut self.auth);
        match key {
            "jobs.retain_bytes" => j.retain_bytes = v.trim().into(),
            "jobs.retain_secs" => j.retain_secs = num(v)? as u64,
            "jobs.retain_rejected" => j.retain_rejected = num(v)?,
            "jobs.max_queued" => j.max_queued = num(v)?,
            "jobs.max_queued_bytes" => j.max_queued_bytes = v.trim().into(),
            "jobs.max_per_client" => j.max_per_client = num(v)?,
            "jobs.max_request_id" => j.max_request_id = num(v)?,
            "jobs.allow_skip_verify" => j.allow_skip_verify = parse_bool(v)?,
            "jobs.allow_synthetic" => j.allow_synthetic = parse_bool(v)?,
            "auth.token_file" => a.token_file = v.trim().into(),
            "auth.token_on_unix" => a.token_on_unix = parse_bool(v)?,
            "auth.admin_token_file" => a.admin_token_file = v.trim().into(),
            "auth.tls_cert" => a.tls_cert = v.trim().into(),
            "auth.tls_key" => a.tls_key = v.trim().into(),
            "auth.insecure" => a.insecure = parse_bool(v)?,
            "auth.socket_mode" => a.socket_mode = v.trim().into(),
            "net.max_connections" => self.net.max_connections = num(v)?,
            "net.handshake_timeout_ms" => self.net.handshake_timeout_ms = num(v)? as u64,
            _ => return Err(ValueError::UnknownKey(key.to_string())),
        }
        Ok(())
    }

    /// Checks every value that can be checked without starting anything, and the rules across
    /// keys (TCP needs TLS and a token, or `auth.insecure`).
    pub fn validate(&self) -> Result<(), DaemonError> {
        self.validate_values()?;
        self.check_transport()
    }

    /// Checks each value on its own.
    fn validate_values(&self) -> Result<(), DaemonError> {
        let bad = |k: &str, why: String| Err(DaemonError::Config(format!("{k}: {why}")));
        Listen::parse(&self.listen)?;
        if !["auto", "cpu", "cuda"].contains(&self.engine.backend.as_str()) {
            return bad("engine.backend", format!("{:?} is not auto, cpu or cuda", self.engine.backend));
        }
        if self.engine.synthesis_workers == 0 || self.engine.provers_per_device == 0 {
            return bad("engine", "synthesis_workers and provers_per_device must be at least 1".into());
        }
        if !["high", "critical", "off"].contains(&self.engine.urgent_lane.as_str()) {
            return bad("engine.urgent_lane", format!("{:?} is not high, critical or off", self.engine.urgent_lane));
        }
        if !["cuzk", "sppark"].contains(&self.engine.msm_kernel.as_str()) {
            return bad("engine.msm_kernel", format!("{:?} is not cuzk or sppark", self.engine.msm_kernel));
        }
        if !["device", "host"].contains(&self.engine.side_msms.as_str()) {
            return bad("engine.side_msms", format!("{:?} is not device or host", self.engine.side_msms));
        }
        if !["fail", "retry-cpu"].contains(&self.engine.on_device_error.as_str()) {
            return bad("engine.on_device_error", format!("{:?} is not fail or retry-cpu", self.engine.on_device_error));
        }
        self.fault_plans()?;
        self.witness_mode()?;
        self.urgent_threads_setting()?;
        if let Err(why) = cuzk_core::backend::msm_piece_setting(self.engine.msm_piece_log2) {
            return bad("engine.msm_piece_log2", why);
        }
        if self.engine.urgent_grace_ms > cuzk_core::device_lock::MAX_URGENT_GRACE_MS {
            let most = cuzk_core::device_lock::MAX_URGENT_GRACE_MS;
            return bad("engine.urgent_grace_ms", format!("{} is over {most}", self.engine.urgent_grace_ms));
        }
        if self.engine.budget != "auto" {
            parse_bytes(&self.engine.budget).map_err(|e| DaemonError::Config(format!("engine.budget: {e}")))?;
        }
        if self.engine.buffer_pool != "auto" {
            parse_bytes(&self.engine.buffer_pool).map_err(|e| DaemonError::Config(format!("engine.buffer_pool: {e}")))?;
        }
        if !self.srs.device_budget.is_empty() {
            parse_bytes(&self.srs.device_budget).map_err(|e| DaemonError::Config(format!("srs.device_budget: {e}")))?;
        }
        for (k, v) in [
            ("jobs.max_request", &self.jobs.max_request),
            ("jobs.retain_bytes", &self.jobs.retain_bytes),
            ("jobs.max_queued_bytes", &self.jobs.max_queued_bytes),
        ] {
            parse_bytes(v).map_err(|e| DaemonError::Config(format!("{k}: {e}")))?;
        }
        let j = &self.jobs;
        if j.retain == 0 || j.max_queued == 0 || j.max_per_client == 0 || j.max_request_id == 0 || self.net.max_connections == 0 {
            return bad("jobs/net", "retain, max_queued, max_per_client, max_request_id and max_connections must be at least 1".into());
        }
        for c in &self.srs.preload {
            cuzk_filecoin::curio::parse_circuit(c).map_err(|e| DaemonError::Config(format!("srs.preload: {e}")))?;
        }
        self.socket_mode().map(|_| ())
    }

    /// TCP needs TLS and a token unless `auth.insecure`; TLS needs both the certificate and the key.
    fn check_transport(&self) -> Result<(), DaemonError> {
        let a = &self.auth;
        if a.token_on_unix && a.token_file.is_empty() {
            return Err(DaemonError::Config("auth.token_on_unix needs auth.token_file".into()));
        }
        if a.tls_cert.is_empty() != a.tls_key.is_empty() {
            return Err(DaemonError::Config("auth.tls_cert and auth.tls_key: give both or neither".into()));
        }
        if let Listen::Tcp(addr) = Listen::parse(&self.listen)? {
            if !a.insecure && (a.tls_cert.is_empty() || a.token_file.is_empty()) {
                return Err(DaemonError::Config(format!(
                    "listen tcp://{addr}: TCP needs auth.tls_cert, auth.tls_key and auth.token_file, \
                     or auth.insecure = true (CUZK_INSECURE=1) to serve plain TCP to anyone who can reach the port"
                )));
            }
        }
        Ok(())
    }

    /// `auth.socket_mode` as a number (at most 0o777).
    pub fn socket_mode(&self) -> Result<u32, DaemonError> {
        u32::from_str_radix(self.auth.socket_mode.trim(), 8)
            .ok()
            .filter(|m| *m <= 0o777)
            .ok_or_else(|| DaemonError::Config(format!("auth.socket_mode {:?}: want an octal mode like 0600", self.auth.socket_mode)))
    }

    /// A byte-size key (already validated).
    pub fn bytes_of(&self, key: &str) -> u64 {
        let v = match key {
            "jobs.max_request" => &self.jobs.max_request,
            "jobs.retain_bytes" => &self.jobs.retain_bytes,
            "jobs.max_queued_bytes" => &self.jobs.max_queued_bytes,
            _ => return 0,
        };
        parse_bytes(v).unwrap_or(0)
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

    /// The cap on each device's resident SRS bytes (`None`: the whole device).
    pub fn device_budget_bytes(&self) -> Option<u64> {
        match self.srs.device_budget.as_str() {
            "" => None,
            b => parse_bytes(b).ok(),
        }
    }

    /// The MSM piece of every GPU (2^k points per device call; `None`: one call per MSM).
    pub fn msm_piece_log2(&self) -> Option<u32> {
        cuzk_core::backend::msm_piece_setting(self.engine.msm_piece_log2).ok().flatten()
    }

    /// The SRS map directory (`None`: parameters are decoded).
    pub fn srs_map_dir(&self) -> Option<std::path::PathBuf> {
        Some(self.srs.map_dir.as_str()).filter(|d| !d.is_empty()).map(Into::into)
    }

    /// Threads of the urgent lane's pool (resolving "auto": one per core; a value `validate`
    /// refuses also gives the default).
    pub fn urgent_threads(&self) -> usize {
        self.urgent_threads_setting().unwrap_or_else(|_| cuzk_pipeline::engine::default_urgent_threads())
    }

    fn urgent_threads_setting(&self) -> Result<usize, DaemonError> {
        match self.engine.urgent_threads.as_str() {
            "auto" => Ok(cuzk_pipeline::engine::default_urgent_threads()),
            n => n.parse().map_err(|_| DaemonError::Config(format!("engine.urgent_threads: {n:?} is neither \"auto\" nor a thread count"))),
        }
    }

    /// The buffer pool's bytes (resolving "auto": an eighth of the budget); the engine takes
    /// them out of the budget and caps them at half of it.
    pub fn buffer_pool_bytes(&self) -> u64 {
        match self.engine.buffer_pool.as_str() {
            "auto" => self.budget_bytes() / 8,
            b => parse_bytes(b).unwrap_or(0),
        }
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
    let v = n * mult;
    // A float cast saturates: without this check "1e30GiB" would become u64::MAX, no limit at all.
    if !v.is_finite() || v > (1u64 << 62) as f64 {
        return Err(ValueError::TooLarge(s.to_string()));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_env_and_render_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("cuzk.toml");
        std::fs::write(
            &f,
            "listen = \"tcp://127.0.0.1:9820\"\n[engine]\nsynthesis_workers = 6\nbudget = \"24GiB\"\n[auth]\ninsecure = true\n",
        )
        .unwrap();
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
        let e = DaemonConfig::load(None, |k| (k == "CUZK_URGENT_LANE").then(|| "asap".into())).unwrap_err().to_string();
        assert!(e.contains("CUZK_URGENT_LANE") && e.contains("critical"), "{e}");
        let e = DaemonConfig::load(None, |k| (k == "CUZK_MSM_PIECE_LOG2").then(|| "12".into())).unwrap_err().to_string();
        assert!(e.contains("msm_piece_log2") && e.contains("16..=40"), "{e}");
        let piece = |v: &str| DaemonConfig::load(None, |k| (k == "CUZK_MSM_PIECE_LOG2").then(|| v.into())).unwrap().msm_piece_log2();
        assert_eq!((piece("0"), piece("25")), (None, Some(25)));
        let e = DaemonConfig::load(None, |k| (k == "CUZK_URGENT_GRACE_MS").then(|| "5000".into())).unwrap_err().to_string();
        assert!(e.contains("urgent_grace_ms") && e.contains("5000"), "{e}");
        let grace = DaemonConfig::load(None, |k| (k == "CUZK_URGENT_GRACE_MS").then(|| "60".into())).unwrap().engine.urgent_grace_ms;
        assert_eq!(grace, 60);
        let e = DaemonConfig::load(None, |k| (k == "CUZK_MSM_KERNEL").then(|| "blst".into())).unwrap_err().to_string();
        assert!(e.contains("CUZK_MSM_KERNEL") && e.contains("cuzk or sppark"), "{e}");
        let kernel = |v: &str| DaemonConfig::load(None, |k| (k == "CUZK_MSM_KERNEL").then(|| v.into())).unwrap().engine.msm_kernel;
        assert_eq!((kernel("sppark"), DaemonConfig::load(None, |_| None).unwrap().engine.msm_kernel), ("sppark".into(), "cuzk".into()));
        let e = DaemonConfig::load(None, |k| (k == "CUZK_SIDE_MSMS").then(|| "gpu".into())).unwrap_err().to_string();
        assert!(e.contains("CUZK_SIDE_MSMS") && e.contains("device or host"), "{e}");
        let side = |v: &str| DaemonConfig::load(None, |k| (k == "CUZK_SIDE_MSMS").then(|| v.into())).unwrap().engine.side_msms;
        assert_eq!((side("host"), DaemonConfig::load(None, |_| None).unwrap().engine.side_msms), ("host".into(), "device".into()));
    }

    #[test]
    fn the_urgent_lane_setting_reaches_the_engine() {
        let cpu =
            || vec![cuzk_pipeline::Device { name: "cpu".into(), backend: std::sync::Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) }];
        let engine = |v: &'static str| {
            let cfg = DaemonConfig::load(None, move |k| (k == "CUZK_URGENT_LANE").then(|| v.to_string())).unwrap();
            crate::server::try_engine_config(&cfg, cpu()).unwrap().urgent_from
        };
        assert_eq!(engine("high"), Some(cuzk_pipeline::Priority::High));
        assert_eq!(engine("critical"), Some(cuzk_pipeline::Priority::Critical));
        assert_eq!(engine("off"), None);
        assert_eq!(DaemonConfig::default().engine.urgent_lane, "high");
        let threads = |v: &'static str| {
            let cfg = DaemonConfig::load(None, move |k| (k == "CUZK_URGENT_THREADS").then(|| v.to_string())).unwrap();
            crate::server::try_engine_config(&cfg, cpu()).unwrap().urgent_threads
        };
        assert_eq!((threads("0"), threads("6"), threads("auto")), (0, 6, cuzk_pipeline::engine::default_urgent_threads()));
        assert_eq!(DaemonConfig::default().urgent_threads(), cuzk_pipeline::engine::default_urgent_threads());
        let bad =
            DaemonConfig::load(None, |k| (k == "CUZK_URGENT_THREADS").then(|| "many".to_string())).and_then(|c| c.validate().map(|_| c));
        let e = bad.unwrap_err().to_string();
        assert!(e.contains("engine.urgent_threads") && e.contains("many"), "{e}");
    }

    #[test]
    fn the_buffer_pool_is_an_eighth_of_the_budget_a_byte_size_or_none_and_reaches_the_engine() {
        let load = |pool: &'static str| {
            DaemonConfig::load(None, move |k| match k {
                "CUZK_BUDGET" => Some("24GiB".into()),
                "CUZK_BUFFER_POOL" => Some(pool.into()),
                _ => None,
            })
            .and_then(|c| c.validate().map(|_| c))
        };
        assert_eq!(DaemonConfig::default().buffer_pool_bytes(), 0);
        assert_eq!(load("auto").unwrap().buffer_pool_bytes(), 3 << 30);
        assert_eq!(load("5GiB").unwrap().buffer_pool_bytes(), 5 << 30);
        assert_eq!(load("0").unwrap().buffer_pool_bytes(), 0);
        let e = load("plenty").unwrap_err().to_string();
        assert!(e.contains("engine.buffer_pool") && e.contains("plenty"), "{e}");
        let cpu =
            vec![cuzk_pipeline::Device { name: "cpu".into(), backend: std::sync::Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) }];
        let c = crate::server::try_engine_config(&load("5GiB").unwrap(), cpu).unwrap();
        assert_eq!((c.buffer_pool_bytes, c.budget_bytes), (5 << 30, 24 << 30));
    }

    #[test]
    fn releasing_host_matrices_is_off_by_default_and_reaches_the_engine_when_set() {
        let cpu =
            || vec![cuzk_pipeline::Device { name: "cpu".into(), backend: std::sync::Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) }];
        let off = DaemonConfig::load(None, |_| None).unwrap();
        assert!(!crate::server::try_engine_config(&off, cpu()).unwrap().release_host_matrices);
        let on = DaemonConfig::load(None, |k| (k == "CUZK_RELEASE_HOST_MATRICES").then(|| "true".to_string())).unwrap();
        assert!(crate::server::try_engine_config(&on, cpu()).unwrap().release_host_matrices);
        assert!(DaemonConfig::load(None, |k| (k == "CUZK_RELEASE_HOST_MATRICES").then(|| "maybe".to_string())).is_err());
    }

    #[test]
    fn the_device_budget_is_a_byte_size_or_the_whole_device() {
        let load = |v: &'static str| DaemonConfig::load(None, move |k| (k == "CUZK_SRS_DEVICE_BUDGET").then(|| v.to_string()));
        assert_eq!(DaemonConfig::default().device_budget_bytes(), None);
        assert_eq!(load("40GiB").unwrap().device_budget_bytes(), Some(40 << 30));
        assert_eq!(load(" ").unwrap().device_budget_bytes(), None);
        let e = load("lots").unwrap_err().to_string();
        assert!(e.contains("srs.device_budget") && e.contains("lots"), "{e}");
    }

    #[test]
    fn the_srs_map_dir_comes_from_the_file_or_the_environment_and_is_off_by_default() {
        assert_eq!(DaemonConfig::default().srs_map_dir(), None);
        let env = DaemonConfig::load(None, |k| (k == "CUZK_SRS_MAP_DIR").then(|| " /var/cuzk/maps ".to_string())).unwrap();
        assert_eq!(env.srs_map_dir(), Some("/var/cuzk/maps".into()));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cuzk.toml");
        std::fs::write(&file, "[srs]\nmap_dir = \"/srv/maps\"\n").unwrap();
        let from_file = DaemonConfig::load(Some(&file), |_| None).unwrap();
        assert_eq!(from_file.srs_map_dir(), Some("/srv/maps".into()));
        assert!(from_file.render().contains("map_dir = \"/srv/maps\""));
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
        // Used to saturate to u64::MAX (an unlimited max_request); now an error.
        assert!(matches!(parse_bytes("99999999999999999999999GiB"), Err(ValueError::TooLarge(_))));
        assert!(matches!(parse_bytes("18446744073709551615"), Err(ValueError::TooLarge(_))));
        assert_eq!(parse_bytes("4TiB").unwrap(), 4 << 40);
        let e = DaemonConfig::load(None, |k| (k == "CUZK_MAX_REQUEST").then(|| "1e400".into())).unwrap_err().to_string();
        assert!(e.contains("CUZK_MAX_REQUEST"), "{e}");
    }

    #[test]
    fn tcp_needs_tls_and_a_token_unless_insecure_and_the_socket_avoids_tmp() {
        let tcp = |k: &str| (k == "CUZK_LISTEN").then(|| "tcp://127.0.0.1:9820".to_string());
        let e = DaemonConfig::load(None, tcp).unwrap_err().to_string();
        assert!(e.contains("auth.insecure") && e.contains("auth.tls_cert"), "{e}");
        let insecure = |k: &str| match k {
            "CUZK_INSECURE" => Some("1".to_string()),
            _ => tcp(k),
        };
        assert!(DaemonConfig::load(None, insecure).unwrap().auth.insecure);
        let half = |k: &str| match k {
            "CUZK_TLS_CERT" => Some("/c.pem".to_string()),
            _ => None,
        };
        assert!(DaemonConfig::load(None, half).unwrap_err().to_string().contains("both or neither"));
        let xdg = |k: &str| (k == "XDG_RUNTIME_DIR").then(|| "/run/user/1000".to_string());
        assert_eq!(DaemonConfig::load(None, xdg).unwrap().listen, "unix:///run/user/1000/cuzk/cuzk.sock");
        assert_eq!(DaemonConfig::load(None, |_| None).unwrap().listen, "unix:///run/cuzk/cuzk.sock");
        assert!(!DaemonConfig::default().listen.contains("/tmp"));
    }
}
