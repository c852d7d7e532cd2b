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

pub mod auth;
pub mod client;
pub mod config;
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
    #[error(transparent)]
    Refused(#[from] crate::jobs::Refused),
    #[error("preloading {circuit}")]
    Preload {
        circuit: String,
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
