//! `cuzk client …`: every RPC of a running daemon from the command line (prove, submit, await,
//! status, cancel, metrics, preload, evict). It must not know how the daemon proves.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use cuzk_core::atomic::write_atomically;
use cuzk_core::mem::human_bytes;
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus};
use cuzk_filecoin::porep::sector::{self, SectorIdentity, SectorMeta};

use crate::args::SectorArgs;
use crate::cmd::daemon::runtime;

#[derive(Clone, Copy, ValueEnum)]
pub enum PriorityArg {
    Low,
    Normal,
    High,
    Critical,
}

impl PriorityArg {
    fn proto(self) -> i32 {
        (match self {
            PriorityArg::Low => proto::Priority::Low,
            PriorityArg::Normal => proto::Priority::Normal,
            PriorityArg::High => proto::Priority::High,
            PriorityArg::Critical => proto::Priority::Critical,
        }) as i32
    }
}

#[derive(Args)]
pub struct SubmitArgs {
    /// The C1 output (JSON) to prove; its .meta.json, if present, supplies the sector identity.
    #[arg(long)]
    c1: PathBuf,
    #[command(flatten)]
    sector: SectorArgs,
    #[arg(long, value_enum, default_value = "normal")]
    priority: PriorityArg,
    /// Idempotency key: submitting the same id again returns the first job.
    #[arg(long, default_value = "")]
    request_id: String,
    /// Ask the daemon to skip verify_seal before answering.
    #[arg(long)]
    no_verify: bool,
}

#[derive(Subcommand)]
pub enum ClientCmd {
    /// Submit a C1 and wait for the proof; writes it to --out.
    Prove {
        #[command(flatten)]
        submit: SubmitArgs,
        #[arg(long)]
        out: PathBuf,
    },
    /// Submit a C1; prints the job id.
    Submit(SubmitArgs),
    /// Wait for a job; writes its proof to --out when it completed.
    Await {
        #[arg(long)]
        job_id: String,
        /// Give up after this many ms (0 = wait until it is done).
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Daemon status: devices, resident SRS/PCE, queues, counts, memory.
    Status,
    /// Cancel a job.
    Cancel {
        #[arg(long)]
        job_id: String,
    },
    /// Prometheus metrics text.
    Metrics,
    /// Load a circuit's parameters and PCE (e.g. porep-32g).
    Preload { circuit: String },
    /// Drop a circuit's parameters and PCE from the daemon's memory.
    Evict { circuit: String },
}

#[derive(Args)]
pub struct ClientArgs {
    /// Daemon address, unix:///PATH or tcp://HOST:PORT [default: the daemon's default socket,
    /// $XDG_RUNTIME_DIR/cuzk/cuzk.sock or /run/cuzk/cuzk.sock].
    #[arg(long, env = "CUZK_ADDR")]
    addr: Option<String>,
    /// File holding the daemon's client token (sent as "authorization: Bearer TOKEN").
    #[arg(long, env = "CUZK_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// File holding the admin token (sent as x-cuzk-admin-token; preload and evict need it).
    #[arg(long, env = "CUZK_ADMIN_TOKEN_FILE")]
    admin_token_file: Option<PathBuf>,
    /// TLS: the PEM CA certificate that signed the daemon's certificate.
    #[arg(long, env = "CUZK_CA")]
    ca: Option<PathBuf>,
    /// TLS: the name the daemon's certificate must carry [default: the address's host].
    #[arg(long)]
    tls_domain: Option<String>,
    #[command(subcommand)]
    cmd: ClientCmd,
}

/// The token in a file, trimmed.
fn read_token(path: &Path) -> Result<String> {
    let t = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read the token file", path.display()))?;
    Ok(t.trim().to_string())
}

/// The connection options the flags ask for.
fn options(a: &ClientArgs) -> Result<cuzk_daemon::client::Options> {
    Ok(cuzk_daemon::client::Options {
        token: a.token_file.as_deref().map(read_token).transpose()?,
        admin_token: a.admin_token_file.as_deref().map(read_token).transpose()?,
        ca: a.ca.clone(),
        domain: a.tls_domain.clone(),
    })
}

/// The request for a C1 file: its bytes as they are, the identity from flags or its meta file.
fn request(a: &SubmitArgs) -> Result<proto::SubmitProofRequest> {
    let bytes = std::fs::read(&a.c1).with_context(|| format!("{}: cannot read the C1 file", a.c1.display()))?;
    let meta_path = sector::meta_path_for(&a.c1);
    let meta = if meta_path.exists() { Some(SectorMeta::load(&meta_path)?) } else { None };
    let pick = |flag: Option<u64>, m: Option<u64>, name: &str| {
        flag.or(m).with_context(|| format!("--{name} is required: no {} next to {}", meta_path.display(), a.c1.display()))
    };
    let id = SectorIdentity {
        miner_id: pick(a.sector.miner_id, meta.as_ref().map(|m| m.miner_id), "miner-id")?,
        sector_number: pick(a.sector.sector_number, meta.as_ref().map(|m| m.sector_number), "sector-number")?,
    };
    let sector_size = match &a.sector.sector_size {
        Some(s) => sector::parse_sector_size(s)?,
        None => meta.as_ref().map(|m| sector::sector_size_of(m.registered_proof)).unwrap_or(0),
    };
    Ok(proto::SubmitProofRequest {
        request_id: a.request_id.clone(),
        proof_kind: proto::ProofKind::PorepSealCommit as i32,
        sector_size,
        priority: a.priority.proto(),
        vanilla_proof: bytes,
        sector_number: id.sector_number,
        miner_id: id.miner_id,
        skip_verify: a.no_verify,
        ..Default::default()
    })
}

/// Prints an await answer; writes the proof when there is one. Exit 0 only for COMPLETED.
fn report(r: &proto::AwaitProofResponse, out: Option<&Path>) -> Result<ExitCode> {
    let status = AwaitStatus::try_from(r.status).map(|s| s.as_str_name()).unwrap_or("?");
    println!("job {}: {status}", r.job_id);
    if !r.error_message.is_empty() {
        println!("  error: {}", r.error_message);
    }
    println!(
        "  queue wait {} ms, srs/parse {} ms, synthesis {} ms, prove {} ms, total {} ms{}",
        r.queue_wait_ms,
        r.srs_load_ms,
        r.synthesis_ms,
        r.gpu_compute_ms,
        r.total_ms,
        if r.status == AwaitStatus::Completed as i32 {
            if r.verified {
                ", verified with verify_seal"
            } else {
                ", NOT verified"
            }
        } else {
            ""
        }
    );
    if r.status != AwaitStatus::Completed as i32 {
        return Ok(ExitCode::from(1));
    }
    if let Some(p) = out {
        write_atomically(p, |w| w.write_all(&r.proof))?;
        println!("wrote {} ({} bytes)", p.display(), r.proof.len());
    }
    Ok(ExitCode::SUCCESS)
}

fn status_text(s: &proto::GetStatusResponse) -> String {
    let mut t = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(t, "uptime {} s{}", s.uptime_seconds, if s.draining { " (draining)" } else { "" });
    let _ = writeln!(
        t,
        "proofs: {} completed, {} failed, {} cancelled",
        s.total_proofs_completed, s.total_proofs_failed, s.total_proofs_cancelled
    );
    for g in &s.gpus {
        let _ = write!(t, "device {}: {}", g.ordinal, g.name);
        if g.resident_sections > 0 || g.resident_budget_bytes > 0 {
            let cap = if g.resident_budget_bytes > 0 { human_bytes(g.resident_budget_bytes) } else { "the whole device".into() };
            let _ = write!(
                t,
                "; {} SRS sections resident ({} of {cap}), {} evicted",
                g.resident_sections,
                human_bytes(g.resident_bytes),
                g.resident_evictions
            );
        }
        if g.resident_matrices > 0 {
            let _ = write!(t, "; matrices of {} circuits resident ({})", g.resident_matrices, human_bytes(g.resident_matrix_bytes));
        }
        let _ = writeln!(t);
    }
    for x in &s.loaded_srs {
        let _ = writeln!(
            t,
            "resident {}: parameters {}, PCE {}, in use by {}",
            x.circuit_id,
            human_bytes(x.size_bytes),
            human_bytes(x.pce_bytes),
            x.ref_count
        );
    }
    for q in &s.queues {
        let _ = writeln!(t, "queue {}: {} pending, {} in progress", q.proof_kind, q.pending, q.in_progress);
    }
    let _ = writeln!(
        t,
        "memory: budget {} of {} in use, RSS {}",
        human_bytes(s.budget_in_use_bytes),
        human_bytes(s.budget_bytes),
        human_bytes(s.rss_bytes)
    );
    t
}

pub fn run(a: ClientArgs) -> Result<ExitCode> {
    let rt = runtime()?;
    let addr = a.addr.clone().unwrap_or_else(|| cuzk_daemon::config::default_listen(|k| std::env::var(k).ok()));
    let opts = options(&a)?;
    rt.block_on(async move {
        let mut c = cuzk_daemon::client::connect_with(&addr, &opts).await?;
        let rpc = |e: tonic::Status| anyhow::anyhow!("{addr}: {:?}: {}", e.code(), e.message());
        match a.cmd {
            ClientCmd::Prove { submit, out } => {
                let req = request(&submit)?;
                let r = c.prove(proto::ProveRequest { submit: Some(req) }).await.map_err(rpc)?.into_inner();
                report(&r.result.unwrap_or_default(), Some(&out))
            }
            ClientCmd::Submit(s) => {
                let r = c.submit_proof(request(&s)?).await.map_err(rpc)?.into_inner();
                println!("{}", r.job_id);
                eprintln!("queue position {}", r.queue_position);
                Ok(ExitCode::SUCCESS)
            }
            ClientCmd::Await { job_id, timeout_ms, out } => {
                let r = c.await_proof(proto::AwaitProofRequest { job_id, timeout_ms }).await.map_err(rpc)?.into_inner();
                report(&r, out.as_deref())
            }
            ClientCmd::Status => {
                let s = c.get_status(proto::GetStatusRequest {}).await.map_err(rpc)?.into_inner();
                print!("{}", status_text(&s));
                Ok(ExitCode::SUCCESS)
            }
            ClientCmd::Cancel { job_id } => {
                let r = c.cancel_proof(proto::CancelProofRequest { job_id: job_id.clone() }).await.map_err(rpc)?.into_inner();
                println!("cancelled {job_id}{}", if r.was_running { " (it was running; its result is discarded)" } else { "" });
                Ok(ExitCode::SUCCESS)
            }
            ClientCmd::Metrics => {
                let r = c.get_metrics(proto::GetMetricsRequest {}).await.map_err(rpc)?.into_inner();
                print!("{}", r.prometheus_text);
                Ok(ExitCode::SUCCESS)
            }
            ClientCmd::Preload { circuit } => {
                let r = c.preload_srs(proto::PreloadSrsRequest { circuit_id: circuit.clone() }).await.map_err(rpc)?.into_inner();
                println!("{circuit}: {} ({} ms)", if r.already_loaded { "already loaded" } else { "loaded" }, r.load_time_ms);
                Ok(ExitCode::SUCCESS)
            }
            ClientCmd::Evict { circuit } => {
                let r = c.evict_srs(proto::EvictSrsRequest { circuit_id: circuit.clone() }).await.map_err(rpc)?.into_inner();
                println!(
                    "{circuit}: {} ({} freed on the host, {} on the devices)",
                    if r.was_loaded { "evicted" } else { "was not loaded" },
                    human_bytes(r.freed_bytes),
                    human_bytes(r.device_freed_bytes)
                );
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}
