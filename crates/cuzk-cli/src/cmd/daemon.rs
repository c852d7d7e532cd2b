//! `cuzk daemon`: serve cuzk.v1.ProvingEngine until SIGTERM/SIGINT, then drain and exit 0.
//! Also the async runtime the gRPC commands share ([`runtime`]). It must not know the client
//! or the load test, which only borrow that runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use cuzk_daemon::DaemonConfig;

use crate::args::{make_devices_with, BackendArg};
use crate::context::settings;

#[derive(Args)]
pub struct DaemonArgs {
    /// Listen address, unix:///PATH or tcp://HOST:PORT (overrides the config and CUZK_LISTEN).
    #[arg(long)]
    listen: Option<String>,
    /// TOML config file (keys: see --print-config); CUZK_* variables override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print the effective config (defaults < file < env < flags) as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

/// The async runtime of the gRPC commands (daemon, client, bench daemon).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("starting the async runtime")
}

fn backend_of(name: &str) -> Result<BackendArg> {
    BackendArg::from_str(name, true).map_err(|e| anyhow::anyhow!("engine.backend {name:?}: {e}"))
}

fn effective_config(a: &DaemonArgs) -> Result<DaemonConfig> {
    let mut cfg = DaemonConfig::load(a.config.as_deref(), |k| std::env::var(k).ok())?;
    if let Some(l) = &a.listen {
        cfg.listen = l.clone();
    }
    cfg.validate()?;
    Ok(cfg)
}

pub fn run(a: DaemonArgs) -> Result<ExitCode> {
    let cfg = effective_config(&a)?;
    if a.print_config {
        print!("{}", cfg.render());
        return Ok(ExitCode::SUCCESS);
    }
    let gpu = cuzk_gpu::GpuOptions {
        resident_budget: cfg.device_budget_bytes(),
        msm_piece_log2: cfg.msm_piece_log2(),
        urgent_grace_ms: Some(cfg.engine.urgent_grace_ms),
        msm_kernel: cuzk_gpu::MsmKernel::parse(&cfg.engine.msm_kernel).map_err(anyhow::Error::msg)?,
        msm_driver_from_log2: None,
        side_msms: cuzk_gpu::SideMsms::parse(&cfg.engine.side_msms).map_err(anyhow::Error::msg)?,
    };
    let devices = make_devices_with(backend_of(&cfg.engine.backend)?, &gpu)?;
    let rt = runtime()?;
    let clean = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let mut settings = settings().clone();
        if let Some(dir) = cfg.srs_map_dir() {
            settings.srs_map_dir = Some(dir);
        }
        let h = cuzk_daemon::start(&cfg, devices, &settings).await?;
        eprintln!("cuzk daemon listening on {}", h.listen);
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: draining"),
            _ = int.recv() => tracing::info!("SIGINT: draining"),
        }
        anyhow::Ok(h.stop().await?)
    })?;
    if !clean {
        tracing::warn!("some in-flight jobs did not finish within the shutdown grace period");
    }
    eprintln!("cuzk daemon stopped");
    Ok(ExitCode::SUCCESS)
}
