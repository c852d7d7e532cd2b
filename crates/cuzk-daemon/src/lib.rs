//! `cuzk-daemon` owns the proving service: a tonic gRPC server speaking Curio's
//! `cuzk.v1.ProvingEngine` wire format ([`proto`], from `proto/cuzk.proto`), priority queues and
//! idempotent job bookkeeping in front of the pipeline engine ([`jobs`]), the RPC handlers
//! with status, preload and evict over the process-wide parameter and PCE registries
//! ([`service`]), the metrics text rendered from a snapshot the service takes ([`metrics`]),
//! the config file with env overrides ([`config`]), tokens ([`auth`]), a bounded accept loop
//! with TLS ([`net`]), start/stop with a draining shutdown ([`server`]) and a client
//! ([`client`]). It reaches proofs only through cuzk-filecoin's
//! kinds and the engine, and knows nothing of CUDA or the command line; fault injection is
//! cuzk-core's and exists only with the feature `fault-injection` (off by default).
//!
//! # Example
//!
//! A config from TOML text (missing keys take their defaults, misspelt ones are refused), the
//! rule that TCP needs TLS and a token unless `auth.insecure` says so, and the `CUZK_*`
//! overrides [`DaemonConfig::load`] applies (it reads the environment only through the look-up
//! it is given). Nothing is bound or proved.
//!
//! ```
//! use cuzk_daemon::{DaemonConfig, DaemonError, Listen};
//!
//! let cfg: DaemonConfig = toml::from_str("listen = \"tcp://127.0.0.1:9820\"\n[jobs]\nmax_queued = 64\n")?;
//! assert_eq!(cfg.jobs.max_queued, 64);
//! assert_eq!(cfg.jobs.max_per_client, 256); // the default
//! assert_eq!(cfg.bytes_of("jobs.max_request"), 256 << 20);
//! assert_eq!(Listen::parse(&cfg.listen)?, Listen::Tcp("127.0.0.1:9820".parse()?));
//! assert!(toml::from_str::<DaemonConfig>("[jobs]\nmax_qeued = 64\n").is_err());
//!
//! // Plain TCP to anyone who can reach the port is refused, and the error names the way out.
//! let err = cfg.validate().unwrap_err();
//! assert!(matches!(err, DaemonError::Config(_)) && err.to_string().contains("auth.insecure"));
//! assert_eq!(err.code(), tonic::Code::InvalidArgument);
//!
//! // Defaults, then the environment; with no `listen`, the socket goes under XDG_RUNTIME_DIR.
//! let env = |name: &str| match name {
//!     "XDG_RUNTIME_DIR" => Some("/run/user/1000".to_string()),
//!     "CUZK_MAX_PER_CLIENT" => Some("8".to_string()),
//!     _ => None,
//! };
//! let cfg = DaemonConfig::load(None, env)?;
//! assert_eq!(cfg.listen, "unix:///run/user/1000/cuzk/cuzk.sock");
//! assert_eq!(cfg.jobs.max_per_client, 8);
//! // The effective config `render` prints is itself a config file.
//! assert_eq!(toml::from_str::<DaemonConfig>(&cfg.render())?, cfg);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod auth;
pub mod client;
pub mod config;
pub mod idle;
pub mod jobs;
pub mod metrics;
pub mod net;
pub mod server;
pub mod service;

/// The generated protobuf messages and the tonic client and server.
#[allow(clippy::all, missing_docs)]
pub mod proto {
    tonic::include_proto!("cuzk.v1");
}

pub use config::{DaemonConfig, Listen};
pub use server::{start, Handle};

/// Why the daemon or a client could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// A setting, address, token or certificate file was refused; the text names the key (or
    /// file) and why (INVALID_ARGUMENT).
    #[error("config: {0}")]
    Config(String),
    /// The daemon is shutting down and takes no new work (UNAVAILABLE).
    #[error("the daemon is shutting down")]
    Draining,
    /// A file or socket operation failed (INTERNAL).
    #[error("{what}: {source}")]
    Io {
        /// What was being done, e.g. "binding unix:///run/cuzk/cuzk.sock".
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A client could not connect to the daemon; the text names the address (UNAVAILABLE).
    #[error("{0}")]
    Transport(String),
    /// The gRPC server, its task or one the server waited on failed (INTERNAL).
    #[error("server: {0}")]
    Server(String),
    /// The pipeline engine refused to start or failed; the code follows [`engine_code`].
    #[error("engine")]
    Engine(#[source] cuzk_pipeline::PipelineError),
    /// A submission was refused without a job (a limit, or a draining daemon); the code is
    /// [`jobs::Refused::code`].
    #[error(transparent)]
    Refused(#[from] crate::jobs::Refused),
    /// Loading a circuit's parameters and PCE (`srs.preload` or PreloadSRS) failed
    /// (FAILED_PRECONDITION).
    #[error("preloading {circuit}")]
    Preload {
        /// The circuit id as given, e.g. "porep-32g".
        circuit: String,
        /// Why it could not be loaded (unknown id, missing or bad parameter file, …).
        #[source]
        source: cuzk_filecoin::Error,
    },
}

impl DaemonError {
    /// The gRPC status code a client gets for this error.
    pub fn code(&self) -> tonic::Code {
        match self {
            DaemonError::Config(_) => tonic::Code::InvalidArgument,
            DaemonError::Draining => tonic::Code::Unavailable,
            DaemonError::Io { .. } | DaemonError::Server(_) => tonic::Code::Internal,
            DaemonError::Transport(_) => tonic::Code::Unavailable,
            DaemonError::Engine(e) => engine_code(e),
            DaemonError::Preload { .. } => tonic::Code::FailedPrecondition,
            DaemonError::Refused(r) => r.code(),
        }
    }

    /// A [`DaemonError::Io`] saying what was being done when `source` happened.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        DaemonError::Io { what: what.into(), source }
    }
}

/// The gRPC status code of an engine error: the client's fault (a refused request, a job the
/// engine cannot run, a witness that does not fit its circuit) is InvalidArgument; no room
/// is ResourceExhausted; a device or an engine going away is Unavailable; the rest is ours.
pub fn engine_code(e: &cuzk_pipeline::PipelineError) -> tonic::Code {
    use cuzk_pipeline::PipelineError as P;
    match e {
        P::Request { .. } | P::Job(_) | P::Witness(_) => tonic::Code::InvalidArgument,
        P::OverBudget { .. } => tonic::Code::ResourceExhausted,
        P::Device(_) | P::Shutdown => tonic::Code::Unavailable,
        P::Skipped => tonic::Code::Aborted,
        P::Config(_) | P::Prove(_) | P::Verify(_) | P::Panic { .. } => tonic::Code::Internal,
    }
}

impl From<DaemonError> for tonic::Status {
    /// The status with the error's whole chain as its message.
    fn from(e: DaemonError) -> Self {
        tonic::Status::new(e.code(), cuzk_pipeline::error_chain(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_pipeline::PipelineError;

    #[test]
    fn errors_map_to_grpc_codes_with_their_chain() {
        let refused = PipelineError::Request { kind: "porep-c2", source: cuzk_pipeline::message("bad C1: no comm_d") };
        let s = tonic::Status::from(DaemonError::Engine(refused));
        assert_eq!(s.code(), tonic::Code::InvalidArgument);
        assert!(s.message().contains("porep-c2 request refused") && s.message().contains("no comm_d"), "{}", s.message());
        assert_eq!(tonic::Status::from(DaemonError::Draining).code(), tonic::Code::Unavailable);
        let big = DaemonError::Engine(PipelineError::OverBudget { need: 2, budget: 1 });
        assert_eq!(big.code(), tonic::Code::ResourceExhausted);
        assert_eq!(DaemonError::Engine(PipelineError::Device("gone".into())).code(), tonic::Code::Unavailable);
        let bad_id = cuzk_filecoin::curio::parse("porep-3k").unwrap_err();
        let pre = DaemonError::Preload { circuit: "porep-3k".into(), source: bad_id };
        assert_eq!(pre.code(), tonic::Code::FailedPrecondition);
        assert!(tonic::Status::from(pre).message().contains("porep-3k"));
    }
}
