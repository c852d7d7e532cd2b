//! Prometheus text exposition of the daemon: proofs by outcome, per-stage durations, queue
//! wait, queue depths, memory (RSS, byte budget), GPU busy and resident parameters, rendered
//! from a plain [`Snapshot`] of numbers and names that the service fills in (its `metrics`
//! method). This module knows the exposition format and the metric names only, not the
//! service, the job table, the engine or its trace.

use std::fmt::Write as _;

/// Seconds and runs of one pipeline stage.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTime {
    /// The stage's name ("parse", "witness", "mat-vec", "prove", "finalize").
    pub stage: String,
    /// Seconds over all its runs.
    pub total_s: f64,
    /// How many times it ran.
    pub count: u64,
}

/// Jobs of one proof kind waiting in the queues and inside the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueDepth {
    /// The proof kind's name, e.g. "POREP_SEAL_COMMIT".
    pub kind: String,
    /// Jobs of this kind waiting in the priority queues.
    pub pending: u32,
    /// Jobs of this kind handed to the engine.
    pub in_progress: u32,
}

/// Host bytes resident for one circuit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resident {
    /// The circuit id, e.g. "porep-32g".
    pub circuit: String,
    /// Host bytes of its Groth16 parameters.
    pub params_bytes: u64,
    /// Host bytes of its pre-compiled constraint evaluator (0 when not loaded).
    pub pce_bytes: u64,
}

/// Everything the metrics text shows, taken at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Jobs cancelled since start.
    pub cancelled: u64,
    /// Partitions whose device failed and that were proved again on the CPU.
    pub retried_on_cpu: u64,
    /// Per-stage seconds and runs over the trace events still retained.
    pub stages: Vec<StageTime>,
    /// Seconds jobs waited in the priority queues before the engine took them, summed.
    pub queue_wait_s_sum: f64,
    /// Jobs that left the queues for the engine (the count behind `queue_wait_s_sum`).
    pub queue_wait_count: u64,
    /// Queued and running jobs per proof kind.
    pub queues: Vec<QueueDepth>,
    /// Resident set size of the daemon's process.
    pub rss_bytes: u64,
    /// The byte budget for in-flight partitions.
    pub budget_bytes: u64,
    /// Bytes leased from the budget now.
    pub budget_in_use_bytes: u64,
    /// Most bytes ever leased from the budget at once.
    pub budget_high_water_bytes: u64,
    /// The process's buffer pool (`engine.buffer_pool`): capacity, idle bytes, reuses.
    pub buffer_pool: cuzk_core::buffer_pool::PoolStats,
    /// (device, fraction of the retained window its provers were busy)
    pub device_busy: Vec<(String, f64)>,
    /// Host bytes of parameters and PCE per resident circuit.
    pub resident: Vec<Resident>,
    /// (device, what it keeps resident in device memory)
    pub device_resident: Vec<(String, cuzk_core::backend::ResidentReport)>,
    /// Seconds since the service started.
    pub uptime_s: f64,
}

/// The Prometheus text of `m`.
pub fn render(m: &Snapshot) -> String {
    let mut s = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, rows: Vec<(String, f64)>| {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(s, "{name}{labels} {v}");
        }
    };
    let one = |v: f64| vec![(String::new(), v)];
    metric(
        "cuzk_proofs_total",
        "counter",
        "Finished proof jobs by outcome.",
        vec![
            ("{outcome=\"completed\"}".into(), m.completed as f64),
            ("{outcome=\"failed\"}".into(), m.failed as f64),
            ("{outcome=\"cancelled\"}".into(), m.cancelled as f64),
        ],
    );
    metric(
        "cuzk_partitions_retried_on_cpu_total",
        "counter",
        "Partitions whose device failed and that were proved again on the CPU.",
        one(m.retried_on_cpu as f64),
    );
    metric(
        "cuzk_stage_seconds_sum",
        "counter",
        "Seconds spent per pipeline stage (partitions of retained trace events).",
        m.stages.iter().map(|st| (format!("{{stage=\"{}\"}}", st.stage), st.total_s)).collect(),
    );
    metric(
        "cuzk_stage_seconds_count",
        "counter",
        "Stage runs per pipeline stage.",
        m.stages.iter().map(|st| (format!("{{stage=\"{}\"}}", st.stage), st.count as f64)).collect(),
    );
    metric("cuzk_queue_wait_seconds_sum", "counter", "Seconds jobs waited in the priority queues.", one(m.queue_wait_s_sum));
    metric("cuzk_queue_wait_seconds_count", "counter", "Jobs that left the queues for the engine.", one(m.queue_wait_count as f64));
    metric(
        "cuzk_queue_pending",
        "gauge",
        "Queued jobs per proof kind.",
        m.queues.iter().map(|q| (format!("{{kind=\"{}\"}}", q.kind), q.pending as f64)).collect(),
    );
    metric(
        "cuzk_queue_in_progress",
        "gauge",
        "Jobs in the engine per proof kind.",
        m.queues.iter().map(|q| (format!("{{kind=\"{}\"}}", q.kind), q.in_progress as f64)).collect(),
    );
    metric("cuzk_rss_bytes", "gauge", "Resident set size of the daemon.", one(m.rss_bytes as f64));
    metric("cuzk_budget_bytes", "gauge", "The byte budget for in-flight partitions.", one(m.budget_bytes as f64));
    metric("cuzk_budget_in_use_bytes", "gauge", "Bytes leased by in-flight partitions now.", one(m.budget_in_use_bytes as f64));
    metric("cuzk_budget_high_water_bytes", "gauge", "Most bytes ever leased at once.", one(m.budget_high_water_bytes as f64));
    let pool = &m.buffer_pool;
    metric("cuzk_buffer_pool_capacity_bytes", "gauge", "Bytes of idle buffers the buffer pool may keep.", one(pool.capacity_bytes as f64));
    metric("cuzk_buffer_pool_idle_bytes", "gauge", "Bytes of idle buffers the buffer pool keeps now.", one(pool.idle_bytes as f64));
    metric(
        "cuzk_buffer_pool_reused_total",
        "counter",
        "Large buffer requests served from the pool's idle buffers.",
        one(pool.reused as f64),
    );
    metric("cuzk_buffer_pool_fresh_total", "counter", "Large buffer requests that got fresh memory.", one(pool.fresh as f64));
    metric(
        "cuzk_gpu_busy_ratio",
        "gauge",
        "Fraction of the retained window during which a device's provers were busy.",
        m.device_busy.iter().map(|(d, f)| (format!("{{device=\"{d}\"}}"), *f)).collect(),
    );
    metric(
        "cuzk_srs_resident_bytes",
        "gauge",
        "Host bytes of resident parameters per circuit.",
        m.resident.iter().map(|x| (format!("{{circuit=\"{}\"}}", x.circuit), x.params_bytes as f64)).collect(),
    );
    metric(
        "cuzk_pce_resident_bytes",
        "gauge",
        "Host bytes of resident pre-compiled constraint evaluators per circuit.",
        m.resident.iter().map(|x| (format!("{{circuit=\"{}\"}}", x.circuit), x.pce_bytes as f64)).collect(),
    );
    let per_device = |f: &dyn Fn(&cuzk_core::backend::ResidentReport) -> Option<f64>| -> Vec<(String, f64)> {
        m.device_resident.iter().filter_map(|(d, r)| Some((format!("{{device=\"{d}\"}}"), f(r)?))).collect()
    };
    metric(
        "cuzk_device_resident_bytes",
        "gauge",
        "Device bytes of SRS sections kept resident between proofs.",
        per_device(&|r| Some(r.bytes as f64)),
    );
    metric(
        "cuzk_device_resident_matrix_bytes",
        "gauge",
        "Device bytes of the circuits' constraint matrices kept resident for the device mat-vec.",
        per_device(&|r| Some(r.matrix_bytes as f64)),
    );
    metric(
        "cuzk_device_resident_budget_bytes",
        "gauge",
        "The cap on those bytes (absent: the whole device).",
        per_device(&|r| r.budget_bytes.map(|b| b as f64)),
    );
    metric(
        "cuzk_device_resident_evictions_total",
        "counter",
        "Resident SRS sections dropped to make room for others (least recently used first).",
        per_device(&|r| Some(r.evictions as f64)),
    );
    metric(
        "cuzk_device_streamed_sections_total",
        "counter",
        "SRS sections that did not fit the resident budget and travelled with each call.",
        per_device(&|r| Some(r.streamed as f64)),
    );
    metric("cuzk_uptime_seconds", "gauge", "Seconds since the daemon started.", one(m.uptime_s));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_renders_every_metric_with_its_labels() {
        let m = Snapshot {
            completed: 2,
            failed: 1,
            retried_on_cpu: 1,
            stages: vec![StageTime { stage: "prove".into(), total_s: 1.5, count: 3 }],
            queue_wait_s_sum: 0.25,
            queue_wait_count: 3,
            queues: vec![QueueDepth { kind: "porep".into(), pending: 4, in_progress: 1 }],
            budget_bytes: 1 << 30,
            buffer_pool: cuzk_core::buffer_pool::PoolStats { capacity_bytes: 64, idle_buffers: 1, idle_bytes: 32, reused: 5, fresh: 2 },
            device_busy: vec![("gpu0".into(), 0.5)],
            resident: vec![Resident { circuit: "porep-2k".into(), params_bytes: 10, pce_bytes: 20 }],
            device_resident: vec![
                (
                    "gpu0".into(),
                    cuzk_core::backend::ResidentReport {
                        sections: 3,
                        bytes: 300,
                        budget_bytes: Some(512),
                        evictions: 2,
                        streamed: 1,
                        matrices: 2,
                        matrix_bytes: 700,
                        pinned_host_bytes: 0,
                    },
                ),
                ("gpu1".into(), cuzk_core::backend::ResidentReport::default()),
            ],
            ..Default::default()
        };
        let t = render(&m);
        for want in [
            "# TYPE cuzk_proofs_total counter",
            "cuzk_proofs_total{outcome=\"completed\"} 2",
            "cuzk_proofs_total{outcome=\"failed\"} 1",
            "cuzk_proofs_total{outcome=\"cancelled\"} 0",
            "cuzk_partitions_retried_on_cpu_total 1",
            "cuzk_stage_seconds_sum{stage=\"prove\"} 1.5",
            "cuzk_stage_seconds_count{stage=\"prove\"} 3",
            "cuzk_queue_wait_seconds_sum 0.25",
            "cuzk_queue_pending{kind=\"porep\"} 4",
            "cuzk_queue_in_progress{kind=\"porep\"} 1",
            "cuzk_budget_bytes 1073741824",
            "cuzk_buffer_pool_capacity_bytes 64",
            "cuzk_buffer_pool_idle_bytes 32",
            "cuzk_buffer_pool_reused_total 5",
            "cuzk_buffer_pool_fresh_total 2",
            "cuzk_gpu_busy_ratio{device=\"gpu0\"} 0.5",
            "cuzk_srs_resident_bytes{circuit=\"porep-2k\"} 10",
            "cuzk_pce_resident_bytes{circuit=\"porep-2k\"} 20",
            "cuzk_device_resident_bytes{device=\"gpu0\"} 300",
            "cuzk_device_resident_bytes{device=\"gpu1\"} 0",
            "cuzk_device_resident_budget_bytes{device=\"gpu0\"} 512",
            "cuzk_device_resident_matrix_bytes{device=\"gpu0\"} 700",
            "cuzk_device_resident_evictions_total{device=\"gpu0\"} 2",
            "cuzk_device_streamed_sections_total{device=\"gpu0\"} 1",
            "# TYPE cuzk_uptime_seconds gauge",
        ] {
            assert!(t.lines().any(|l| l == want), "missing {want:?} in\n{t}");
        }
        assert!(!t.contains("cuzk_device_resident_budget_bytes{device=\"gpu1\"}"), "no budget, no budget line");
    }
}
