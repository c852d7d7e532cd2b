//! The tonic `ProvingEngine` service: checks each call's token ([`crate::auth`]; the admin
//! token for PreloadSRS and EvictSRS) and the length of the ids it carries, then maps it onto
//! the job service ([`crate::jobs`]) on behalf of the calling client (its address, from the
//! connection's [`Peer`]), the process-wide parameter and PCE registries (status, preload,
//! evict) and the metrics text, for which it fills a [`metrics::Snapshot`] that
//! [`crate::metrics`] renders (the dependency points from here to there only). Blocking work
//! (parsing a C1, loading or dropping parameters) runs on tokio's blocking pool. It knows the
//! wire format and the job service, not how the server is bound or stopped, nor the
//! Prometheus text format.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_filecoin::curio::Circuit;
use cuzk_filecoin::{curio, Kinds};
use cuzk_pipeline::resources::params_bytes;
use tonic::{Request, Response, Status};

use crate::auth::Auth;
use crate::jobs::{loggable, JobView, Jobs, State};
use crate::metrics;
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::*;

/// Longest job id a call may carry (cuzk's are 32 hex digits); longer ones are INVALID_ARGUMENT.
pub const MAX_JOB_ID: usize = 64;

/// The other end of a connection, as the server's accept loop saw it; the client a request
/// is counted against ("tcp:ADDRESS" without the port, "unix:uid=N").
#[derive(Clone, Debug)]
pub struct Peer(pub String);

/// The service state.
#[derive(Clone)]
pub struct Service {
    pub(crate) jobs: Jobs,
    pub(crate) started: Instant,
    pub(crate) auth: Arc<Auth>,
}

/// The client a request comes from (its connection's [`Peer`], else "local").
fn client_of<T>(r: &Request<T>) -> String {
    r.extensions().get::<Peer>().map(|p| p.0.clone()).unwrap_or_else(|| "local".into())
}

/// Refuses a job id no daemon could have made, without echoing it whole.
#[allow(clippy::result_large_err)] // tonic's handlers answer with a Status
fn check_job_id(id: &str) -> Result<(), Status> {
    if id.len() > MAX_JOB_ID {
        return Err(Status::invalid_argument(format!("job_id is {} bytes; job ids have at most {MAX_JOB_ID}", id.len())));
    }
    Ok(())
}

impl Service {
    /// The service over `jobs`, reporting the engine's devices (in ordinal order) in its
    /// status and checking each call with `auth`; its uptime counts from now.
    pub fn new(jobs: Jobs, auth: Auth) -> Service {
        Service { jobs, started: Instant::now(), auth: Arc::new(auth) }
    }

    /// The job service behind it.
    pub fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    async fn submit(&self, req: SubmitProofRequest, client: String) -> Result<SubmitProofResponse, Status> {
        let jobs = self.jobs.clone();
        let out = tokio::task::spawn_blocking(move || jobs.submit(req, &client))
            .await
            .map_err(|e| Status::internal(format!("submission task failed: {e}")))?;
        match out {
            Ok(s) => Ok(SubmitProofResponse { job_id: s.job_id, queue_position: s.queue_position, assigned_gpu: String::new() }),
            Err(e) => Err(Status::new(e.code(), e.to_string())),
        }
    }

    async fn await_job(&self, job_id: &str, timeout_ms: u64) -> Result<AwaitProofResponse, Status> {
        check_job_id(job_id)?;
        let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
        match self.jobs.wait(job_id, timeout).await {
            Some(v) => Ok(answer(v)),
            None => Ok(AwaitProofResponse {
                job_id: job_id.to_string(),
                status: await_proof_response::Status::Unknown as i32,
                error_message: format!(
                    "no job \"{}\" (never submitted, or forgotten: see jobs.retain, retain_bytes and retain_secs)",
                    loggable(job_id)
                ),
                ..Default::default()
            }),
        }
    }

    /// The status message (also what `cuzk client status` prints).
    pub fn status(&self) -> GetStatusResponse {
        let c = self.jobs.counts();
        let kinds = self.jobs.kinds();
        let loaded_srs = curio::circuits()
            .filter_map(|c| {
                let (pce, p) = kinds.resident(c);
                let p = p?;
                Some(SrsStatus {
                    circuit_id: curio::circuit_id(c),
                    tier: srs_status::Tier::Hot as i32,
                    size_bytes: params_bytes(&p),
                    // Holders besides the registry and this look-up.
                    ref_count: Arc::strong_count(&p).saturating_sub(2) as u32,
                    pce_bytes: pce.map(|p| p.bytes() as u64).unwrap_or(0),
                })
            })
            .collect();
        let budget = self.jobs.budget();
        GetStatusResponse {
            gpus: self
                .jobs
                .devices()
                .iter()
                .enumerate()
                .map(|(k, d)| {
                    let r = d.backend.resident_report();
                    GpuStatus {
                        ordinal: k as u32,
                        name: d.name.clone(),
                        resident_sections: r.sections as u32,
                        resident_bytes: r.bytes,
                        resident_budget_bytes: r.budget_bytes.unwrap_or(0),
                        resident_evictions: r.evictions,
                        resident_matrices: r.matrices as u32,
                        resident_matrix_bytes: r.matrix_bytes,
                        ..Default::default()
                    }
                })
                .collect(),
            loaded_srs,
            queues: c.queues.iter().map(|(k, q, r)| QueueStatus { proof_kind: k.clone(), pending: *q, in_progress: *r }).collect(),
            total_proofs_completed: c.completed,
            total_proofs_failed: c.failed,
            uptime_seconds: self.started.elapsed().as_secs(),
            pinned_memory_bytes: budget.in_use(),
            pinned_memory_limit_bytes: budget.total(),
            budget_in_use_bytes: budget.in_use(),
            budget_bytes: budget.total(),
            rss_bytes: cuzk_core::mem::snapshot().rss_bytes,
            total_proofs_cancelled: c.cancelled,
            draining: c.draining,
        }
    }

    /// The numbers the metrics text shows, taken now.
    pub fn metrics_snapshot(&self) -> metrics::Snapshot {
        let c = self.jobs.counts();
        let trace = self.jobs.trace();
        let budget = self.jobs.budget();
        metrics::Snapshot {
            completed: c.completed,
            failed: c.failed,
            cancelled: c.cancelled,
            retried_on_cpu: self.jobs.engine_stats().retried_on_cpu.load(std::sync::atomic::Ordering::Relaxed),
            stages: trace
                .stage_summaries(|_| true)
                .into_iter()
                .map(|st| metrics::StageTime { stage: st.stage.to_string(), total_s: st.total_s, count: st.count as u64 })
                .collect(),
            queue_wait_s_sum: c.queue_wait_ms_sum as f64 / 1000.0,
            queue_wait_count: c.queue_wait_count,
            queues: c.queues.into_iter().map(|(kind, pending, in_progress)| metrics::QueueDepth { kind, pending, in_progress }).collect(),
            rss_bytes: cuzk_core::mem::snapshot().rss_bytes,
            budget_bytes: budget.total(),
            budget_in_use_bytes: budget.in_use(),
            budget_high_water_bytes: budget.high_water(),
            buffer_pool: cuzk_core::buffer_pool::scalar_pool().stats(),
            device_busy: trace.device_busy(|_| true).into_iter().collect(),
            resident: self
                .status()
                .loaded_srs
                .into_iter()
                .map(|x| metrics::Resident { circuit: x.circuit_id, params_bytes: x.size_bytes, pce_bytes: x.pce_bytes })
                .collect(),
            device_resident: self.jobs.devices().iter().map(|d| (d.name.clone(), d.backend.resident_report())).collect(),
            uptime_s: self.started.elapsed().as_secs_f64(),
        }
    }

    /// The Prometheus text.
    pub fn metrics(&self) -> String {
        metrics::render(&self.metrics_snapshot())
    }
}

fn answer(v: JobView) -> AwaitProofResponse {
    use await_proof_response::Status as S;
    let status = match v.state {
        State::Completed => S::Completed,
        State::Failed => S::Failed,
        State::Cancelled => S::Cancelled,
        State::Queued | State::Running => S::Timeout,
    };
    AwaitProofResponse {
        job_id: v.job_id,
        status: status as i32,
        proof: v.proof,
        error_message: if v.state.finished() { v.error } else { format!("not finished yet ({:?})", v.state).to_lowercase() },
        queue_wait_ms: v.queue_wait_ms,
        srs_load_ms: v.srs_load_ms,
        synthesis_ms: v.synthesis_ms,
        gpu_compute_ms: v.gpu_compute_ms,
        total_ms: v.total_ms,
        verified: v.verified,
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(&self, r: Request<SubmitProofRequest>) -> Result<Response<SubmitProofResponse>, Status> {
        self.auth.check(r.metadata())?;
        let client = client_of(&r);
        self.submit(r.into_inner(), client).await.map(Response::new)
    }

    async fn await_proof(&self, r: Request<AwaitProofRequest>) -> Result<Response<AwaitProofResponse>, Status> {
        self.auth.check(r.metadata())?;
        let r = r.into_inner();
        self.await_job(&r.job_id, r.timeout_ms).await.map(Response::new)
    }

    async fn prove(&self, r: Request<ProveRequest>) -> Result<Response<ProveResponse>, Status> {
        self.auth.check(r.metadata())?;
        let client = client_of(&r);
        let submit = r.into_inner().submit.ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let s = self.submit(submit, client).await?;
        let result = self.await_job(&s.job_id, 0).await?;
        Ok(Response::new(ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(&self, r: Request<CancelProofRequest>) -> Result<Response<CancelProofResponse>, Status> {
        self.auth.check(r.metadata())?;
        let id = r.into_inner().job_id;
        check_job_id(&id)?;
        match self.jobs.cancel(&id) {
            (false, _) => Err(Status::not_found(format!("no job \"{}\"", loggable(&id)))),
            (true, was_running) => Ok(Response::new(CancelProofResponse { was_running })),
        }
    }

    async fn get_status(&self, r: Request<GetStatusRequest>) -> Result<Response<GetStatusResponse>, Status> {
        self.auth.check(r.metadata())?;
        Ok(Response::new(self.status()))
    }

    async fn get_metrics(&self, r: Request<GetMetricsRequest>) -> Result<Response<GetMetricsResponse>, Status> {
        self.auth.check(r.metadata())?;
        Ok(Response::new(GetMetricsResponse { prometheus_text: self.metrics() }))
    }

    async fn preload_srs(&self, r: Request<PreloadSrsRequest>) -> Result<Response<PreloadSrsResponse>, Status> {
        self.auth.check_admin(r.metadata())?;
        let id = r.into_inner().circuit_id;
        let rp = curio::parse_circuit(&id).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let kinds = self.jobs.kinds().clone();
        self.jobs.usage().touch(rp);
        let out = tokio::task::spawn_blocking(move || preload(&kinds, rp))
            .await
            .map_err(|e| Status::internal(format!("preload task failed: {e}")))?;
        out.map(Response::new).map_err(|e| Status::from(crate::DaemonError::Preload { circuit: id, source: e }))
    }

    async fn evict_srs(&self, r: Request<EvictSrsRequest>) -> Result<Response<EvictSrsResponse>, Status> {
        self.auth.check_admin(r.metadata())?;
        let id = r.into_inner().circuit_id;
        let rp = curio::parse_circuit(&id).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let jobs = self.jobs.clone();
        // Dropping tens of GiB of parameters takes a while: not on an async worker.
        let out =
            tokio::task::spawn_blocking(move || evict(&jobs, rp)).await.map_err(|e| Status::internal(format!("evict task failed: {e}")))?;
        tracing::info!(circuit = %id, freed = out.freed_bytes, device_freed = out.device_freed_bytes, "evicted");
        Ok(Response::new(out))
    }
}

/// Drops the parameters and the PCE of `rp` from the process registries (the last holder
/// frees them, here or when an in-flight proof finishes) and the devices' copies of the
/// parameters.
pub fn evict(jobs: &Jobs, rp: Circuit) -> EvictSrsResponse {
    let (pce, p) = jobs.kinds().evict(rp);
    let freed = p.as_ref().map(|p| params_bytes(p)).unwrap_or(0) + pce.as_ref().map(|p| p.bytes() as u64).unwrap_or(0);
    let device_freed_bytes = p.as_ref().map(|p| cuzk_pipeline::resources::forget_on_devices(p, jobs.devices())).unwrap_or(0);
    EvictSrsResponse { was_loaded: p.is_some() || pce.is_some(), freed_bytes: freed, device_freed_bytes }
}

/// Loads the parameters and the PCE of `rp` into the process registries.
pub fn preload(kinds: &Kinds, rp: Circuit) -> Result<PreloadSrsResponse, cuzk_filecoin::Error> {
    let t = Instant::now();
    let already = kinds.preload(rp)?;
    let load_time_ms = t.elapsed().as_millis() as u64;
    tracing::info!(circuit = %curio::circuit_id(rp), load_time_ms, already, "preloaded");
    Ok(PreloadSrsResponse { already_loaded: already, load_time_ms })
}
