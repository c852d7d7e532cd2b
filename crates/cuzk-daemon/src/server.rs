//! Starting and stopping the gRPC server: binds the unix socket (in a directory it creates
//! 0700, the socket itself 0600 by default) or the TCP port (TLS and a token, or an explicit
//! `auth.insecure` that is warned about), starts the engine and the job service, preloads the
//! configured circuits, and serves through the bounded accept loop ([`crate::net`]) until told
//! to stop. Stopping drains first — new submissions are refused, queued jobs fail with
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

use crate::auth::Auth;
use crate::config::{DaemonConfig, Listen};
use crate::jobs::{Jobs, JobsConfig};
use crate::net::{self, Gate, Listener};
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
    /// The RPC service it serves (for status, metrics and the job table in-process).
    pub service: Service,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<bool, DaemonError>>,
    /// Drops idle circuits (`srs.idle_evict_s`); stopped with the daemon.
    evictor: Option<tokio::task::JoinHandle<()>>,
}

impl Handle {
    /// Stops the daemon (see the module text); true when every in-flight job finished within
    /// the grace period.
    pub async fn stop(mut self) -> Result<bool, DaemonError> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(e) = self.evictor.take() {
            e.abort();
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
    c.buffer_pool_bytes = cfg.buffer_pool_bytes();
    c.release_host_matrices = cfg.engine.release_host_matrices;
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
    c.urgent_from = match cfg.engine.urgent_lane.as_str() {
        "off" => None,
        "critical" => Some(cuzk_pipeline::Priority::Critical),
        _ => Some(cuzk_pipeline::Priority::High),
    };
    c.urgent_threads = cfg.urgent_threads();
    c.trace = Some(Trace::bounded(TRACE_CAP));
    Ok(c)
}

/// Starts a daemon on the current tokio runtime.
pub async fn start(cfg: &DaemonConfig, devices: Vec<Device>, settings: &cuzk_filecoin::Settings) -> Result<Handle, DaemonError> {
    cfg.validate()?;
    let listen = Listen::parse(&cfg.listen)?;
    let ecfg = try_engine_config(cfg, devices)?;
    let provers = ecfg.devices.len() * ecfg.provers_per_device;
    let max_in_flight = match cfg.engine.max_in_flight {
        0 => ecfg.synthesis_workers + provers,
        n => n,
    };
    let kinds = cuzk_filecoin::Kinds::new(settings, cfg.witness_mode()?);
    for c in &cfg.srs.preload {
        let rp = cuzk_filecoin::curio::parse_circuit(c).map_err(|e| DaemonError::Config(e.to_string()))?;
        let k = kinds.clone();
        tokio::task::spawn_blocking(move || crate::service::preload(&k, rp))
            .await
            .map_err(|e| DaemonError::Server(format!("preload task for {c}: {e}")))?
            .map_err(|source| DaemonError::Preload { circuit: c.clone(), source })?;
    }
    let unix = matches!(listen, Listen::Unix(_));
    let auth = Auth::from_config(cfg, unix)?;
    let gate = gate(cfg, &listen, &auth)?;
    let engine = Engine::start(ecfg).map_err(DaemonError::Engine)?;
    let jobs = Jobs::new(engine, JobsConfig::from_config(cfg, max_in_flight), kinds)?;
    let service = Service::new(jobs, auth);
    let max = cfg.bytes_of("jobs.max_request") as usize;
    let grpc = ProvingEngineServer::new(service.clone()).max_decoding_message_size(max).max_encoding_message_size(max);
    let (tx, rx) = oneshot::channel::<()>();
    let jobs = service.jobs().clone();
    let evictor = (cfg.srs.idle_evict_s > 0).then(|| {
        let idle = Duration::from_secs(cfg.srs.idle_evict_s);
        crate::idle::spawn_evictor(jobs.clone(), idle, cfg.srs.preload.clone())
    });
    let (bound, listener, socket) = bind(&listen, cfg).await?;
    let task = tokio::spawn(serve(grpc, net::incoming(listener, gate), jobs, rx, socket));
    tracing::info!(listen = %bound, max_in_flight, "cuzk daemon serving");
    Ok(Handle { listen: bound, service, stop: Some(tx), task, evictor })
}

/// The accept loop's limits, TLS on TCP when configured, and the warning an insecure TCP
/// listener deserves.
fn gate(cfg: &DaemonConfig, listen: &Listen, auth: &Auth) -> Result<Gate, DaemonError> {
    let a = &cfg.auth;
    let tls = match listen {
        Listen::Tcp(_) if !a.tls_cert.is_empty() => Some(net::tls_acceptor(&a.tls_cert, &a.tls_key)?),
        _ => None,
    };
    if let (Listen::Tcp(addr), true) = (listen, tls.is_none() || !auth.token_required()) {
        tracing::warn!(
            listen = %addr,
            tls = tls.is_some(),
            token = auth.token_required(),
            "auth.insecure: serving TCP without {}; anyone who can reach this port can submit and cancel proofs",
            if tls.is_none() { "TLS" } else { "a token" }
        );
    }
    Ok(Gate { max_connections: cfg.net.max_connections, handshake: Duration::from_millis(cfg.net.handshake_timeout_ms), tls })
}

/// Binds the listener: the TCP port, or the unix socket in its private directory with its mode.
async fn bind(listen: &Listen, cfg: &DaemonConfig) -> Result<(Listen, Listener, Option<PathBuf>), DaemonError> {
    match listen {
        Listen::Tcp(a) => {
            let l = tcp_listener(*a).map_err(|e| DaemonError::io(format!("binding {listen}"), e))?;
            let bound = Listen::Tcp(l.local_addr().map_err(|e| DaemonError::io("reading the bound address", e))?);
            Ok((bound, Listener::Tcp(l), None))
        }
        Listen::Unix(p) => {
            private_dir(p)?;
            clear_stale_socket(p).await?;
            let l = tokio::net::UnixListener::bind(p).map_err(|e| DaemonError::io(format!("binding {listen}"), e))?;
            let mode = cfg.socket_mode()?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
                .map_err(|e| DaemonError::io(format!("setting mode {mode:o} on {}", p.display()), e))?;
            Ok((listen.clone(), Listener::Unix(l), Some(p.clone())))
        }
    }
}

/// Connections the kernel queues for accept (tokio's default is 1024; a burst of a thousand
/// clients overflowed it and some were reset). The kernel caps it at net.core.somaxconn.
pub const LISTEN_BACKLOG: u32 = 4096;

fn tcp_listener(a: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let s = if a.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    s.set_reuseaddr(true)?;
    s.bind(a)?;
    s.listen(LISTEN_BACKLOG)
}

/// Creates the socket's directory 0700 when missing; refuses one that anyone may write to
/// (without the sticky bit), and warns about a shared sticky one such as /tmp.
fn private_dir(socket: &std::path::Path) -> Result<(), DaemonError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let Some(dir) = socket.parent().filter(|d| !d.as_os_str().is_empty()) else { return Ok(()) };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| DaemonError::io(format!("creating the socket directory {}", dir.display()), e))?;
        return Ok(());
    }
    let mode = std::fs::metadata(dir).map_err(|e| DaemonError::io(format!("reading {}", dir.display()), e))?.permissions().mode();
    if mode & 0o002 != 0 && mode & 0o1000 == 0 {
        return Err(DaemonError::Config(format!(
            "the socket directory {} is world-writable (mode {:o}): anyone could replace the socket; use a private directory",
            dir.display(),
            mode & 0o7777
        )));
    }
    if mode & 0o002 != 0 {
        tracing::warn!(dir = %dir.display(), "the socket is in a shared directory; a private one (the default /run/cuzk or $XDG_RUNTIME_DIR/cuzk) is safer");
    }
    Ok(())
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
        // A peer that stops answering pings is dropped (its connection slot with it).
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
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
