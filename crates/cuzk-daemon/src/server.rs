//! Starting and stopping the gRPC server: binds the unix socket or TCP port, starts the
//! engine and the job service, preloads the configured circuits, and serves until told to
//! stop. Stopping drains first — new submissions are refused, queued jobs fail with
//! "shutting down", in-flight jobs finish and their waiting clients get the answers — then
//! closes the listener, joins the engine and removes the socket file. It wires the config,
//! engine, job service and listener together; the RPC handlers ([`crate::service`]), the
//! metrics text and fault injection itself (cuzk-core's `fault::wrap`, which refuses plans the
//! build cannot run, so no cfg is needed here) are not its business.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use cuzk_core::backend::fault;
use cuzk_pipeline::{Config, Device, Engine, Trace};
use tokio::sync::oneshot;
use tokio_stream::Stream;

use crate::config::{parse_bytes, DaemonConfig, Listen};
use crate::jobs::{Jobs, JobsConfig};
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::service::Service;
use crate::DaemonError;

/// How long a stop waits for in-flight jobs before the engine is joined anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(900);
/// Trace events and RSS samples a daemon keeps (older ones are dropped).
pub const TRACE_CAP: usize = 200_000;

/// A running daemon.
pub struct Handle {
    /// The address actually bound (a `tcp://…:0` request resolved to its port).
    pub listen: Listen,
    pub service: Service,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<bool, DaemonError>>,
}

impl Handle {
    /// Stops the daemon (see the module text); true when every in-flight job finished within
    /// the grace period.
    pub async fn stop(mut self) -> Result<bool, DaemonError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.await.map_err(|e| DaemonError::Server(format!("server task: {e}")))?
    }
}

/// The engine settings a daemon config asks for, over `devices` (each wrapped in the
/// configured fault injection, if any). `cfg` must have passed [`DaemonConfig::validate`]; a
/// config that [`try_engine_config`] refuses (a fault plan in a build without fault
/// injection) panics here.
pub fn engine_config(cfg: &DaemonConfig, devices: Vec<Device>) -> Config {
    try_engine_config(cfg, devices).unwrap_or_else(|e| panic!("engine_config needs a validated config: {e}"))
}

/// [`engine_config`], refusing a config whose fault plans this build cannot inject.
pub fn try_engine_config(cfg: &DaemonConfig, devices: Vec<Device>) -> Result<Config, DaemonError> {
    let mut c = Config::cpu(cfg.engine.synthesis_workers, cfg.budget_bytes());
    let plans = cfg.fault_plans()?;
    if !plans.is_empty() {
        tracing::warn!(faults = %cfg.engine.inject_fault, "FAULT INJECTION is on: device calls will fail or be corrupted as configured");
    }
    c.devices = devices
        .into_iter()
        .map(|d| Ok(Device { backend: fault::wrap(d.backend, &plans)?, name: d.name }))
        .collect::<Result<_, fault::FaultError>>()
        .map_err(|e| DaemonError::Config(format!("engine.inject_fault: {e}")))?;
    if cfg.engine.on_device_error == "retry-cpu" {
        c.on_device_error = cuzk_pipeline::DeviceErrorPolicy::RetryOnCpu;
    }
    c.provers_per_device = cfg.engine.provers_per_device.max(1);
    c.trace = Some(Trace::bounded(TRACE_CAP));
    Ok(c)
}

/// Starts a daemon on the current tokio runtime.
pub async fn start(cfg: &DaemonConfig, devices: Vec<Device>, settings: &cuzk_filecoin::Settings) -> Result<Handle, DaemonError> {
    cfg.validate()?;
    let listen = Listen::parse(&cfg.listen)?;
    let names: Vec<String> = devices.iter().map(|d| d.name.clone()).collect();
    let ecfg = try_engine_config(cfg, devices)?;
    let provers = ecfg.devices.len() * ecfg.provers_per_device;
    let max_in_flight = match cfg.engine.max_in_flight {
        0 => ecfg.synthesis_workers + provers,
        n => n,
    };
    let kinds = cuzk_filecoin::Kinds::new(settings, cfg.witness_mode()?);
    for c in &cfg.srs.preload {
        let rp = cuzk_filecoin::curio::parse(c).map_err(|e| DaemonError::Config(e.to_string()))?;
        let k = kinds.clone();
        tokio::task::spawn_blocking(move || crate::service::preload(&k, rp))
            .await
            .map_err(|e| DaemonError::Server(format!("preload task for {c}: {e}")))?
            .map_err(|source| DaemonError::Preload { circuit: c.clone(), source })?;
    }
    let engine = Engine::start(ecfg).map_err(DaemonError::Engine)?;
    let jobs = Jobs::new(engine, JobsConfig { max_in_flight, retain: cfg.jobs.retain, verify: cfg.engine.verify }, kinds);
    let service = Service::new(jobs, names);
    let max = parse_bytes(&cfg.jobs.max_request).map_err(|e| DaemonError::Config(format!("jobs.max_request: {e}")))? as usize;
    let grpc = ProvingEngineServer::new(service.clone()).max_decoding_message_size(max).max_encoding_message_size(max);
    let (tx, rx) = oneshot::channel::<()>();
    let jobs = service.jobs().clone();
    let (bound, task) = match &listen {
        Listen::Tcp(a) => {
            let l = tokio::net::TcpListener::bind(a).await.map_err(|e| DaemonError::io(format!("binding {listen}"), e))?;
            let bound = Listen::Tcp(l.local_addr().map_err(|e| DaemonError::io("reading the bound address", e))?);
            (bound, tokio::spawn(serve(grpc, tokio_stream::wrappers::TcpListenerStream::new(l), jobs, rx, None)))
        }
        Listen::Unix(p) => {
            clear_stale_socket(p).await?;
            let l = tokio::net::UnixListener::bind(p).map_err(|e| DaemonError::io(format!("binding {listen}"), e))?;
            (listen.clone(), tokio::spawn(serve(grpc, tokio_stream::wrappers::UnixListenerStream::new(l), jobs, rx, Some(p.clone()))))
        }
    };
    tracing::info!(listen = %bound, max_in_flight, "cuzk daemon serving");
    Ok(Handle { listen: bound, service, stop: Some(tx), task })
}

/// Serves until `stop` resolves (or its sender is dropped), then winds down.
pub async fn run_until(
    cfg: &DaemonConfig,
    devices: Vec<Device>,
    settings: &cuzk_filecoin::Settings,
    stop: impl Future<Output = ()>,
) -> Result<bool, DaemonError> {
    let h = start(cfg, devices, settings).await?;
    stop.await;
    tracing::info!("stopping: draining in-flight jobs");
    h.stop().await
}

async fn serve<S, IO, IE>(
    grpc: ProvingEngineServer<Service>,
    incoming: S,
    jobs: Jobs,
    stop: oneshot::Receiver<()>,
    socket: Option<PathBuf>,
) -> Result<bool, DaemonError>
where
    S: Stream<Item = Result<IO, IE>> + Send + 'static,
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + tonic::transport::server::Connected + Unpin + Send + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let drain_jobs = jobs.clone();
    let clean = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let c2 = clean.clone();
    let shutdown = async move {
        let _ = stop.await;
        let ok = tokio::task::spawn_blocking(move || drain_jobs.drain(SHUTDOWN_GRACE)).await.unwrap_or(false);
        c2.store(ok, std::sync::atomic::Ordering::Relaxed);
    };
    let served = tonic::transport::Server::builder()
        .add_service(grpc)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|e| DaemonError::Server(e.to_string()));
    let joined = tokio::task::spawn_blocking(move || jobs.shutdown(Duration::ZERO)).await;
    if let Some(p) = socket {
        let _ = std::fs::remove_file(&p);
    }
    served?;
    joined.map_err(|e| DaemonError::Server(format!("joining the engine: {e}")))?;
    Ok(clean.load(std::sync::atomic::Ordering::Relaxed))
}

/// Removes a socket file left by a daemon that is gone; refuses if one still answers there.
async fn clear_stale_socket(p: &std::path::Path) -> Result<(), DaemonError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(p) else { return Ok(()) };
    if !meta.file_type().is_socket() {
        return Err(DaemonError::Config(format!("{} exists and is not a socket; refusing to replace it", p.display())));
    }
    if tokio::net::UnixStream::connect(p).await.is_ok() {
        return Err(DaemonError::Config(format!("another daemon is listening on {}", p.display())));
    }
    std::fs::remove_file(p).map_err(|e| DaemonError::io(format!("removing the stale socket {}", p.display()), e))
}
