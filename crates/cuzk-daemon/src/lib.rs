//! `cuzk-daemon` owns the proving service: a tonic gRPC server speaking Curio's
//! `cuzk.v1.ProvingEngine` wire format ([`proto`], from `proto/cuzk.proto`), priority queues and
//! idempotent job bookkeeping in front of the pipeline engine ([`jobs`]), the RPC handlers
//! with status, preload and evict over the process-wide parameter and PCE registries
//! ([`service`]), the metrics text rendered from a snapshot the service takes ([`metrics`]),
//! the config file with env overrides ([`config`]), start/stop with a draining shutdown
//! ([`server`]) and a client ([`client`]). It reaches proofs only through cuzk-filecoin's
//! kinds and the engine, and knows nothing of CUDA or the command line; fault injection is
//! cuzk-core's and exists only with the feature `fault-injection` (off by default).

pub mod client;
pub mod config;
pub mod jobs;
pub mod metrics;
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
    #[error("config: {0}")]
    Config(String),
    #[error("the daemon is shutting down")]
    Draining,
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{0}")]
    Transport(String),
    #[error("server: {0}")]
    Server(String),
    #[error("engine")]
    Engine(#[source] cuzk_pipeline::PipelineError),
    #[error("preloading parameters: {0}")]
    Preload(String),
}

impl DaemonError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        DaemonError::Io { what: what.into(), source }
    }
}
