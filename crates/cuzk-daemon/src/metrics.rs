//! Prometheus text exposition of the daemon: proofs by outcome, per-stage durations (from the
//! engine's trace), queue wait, queue depths, memory (RSS, byte budget) and GPU busy.

use std::fmt::Write as _;

use crate::service::Service;

pub fn render(svc: &Service) -> String {
    let c = svc.jobs().counts();
    let mut s = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, rows: Vec<(String, f64)>| {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(s, "{name}{labels} {v}");
        }
    };
    metric(
        "cuzk_proofs_total",
        "counter",
        "Finished proof jobs by outcome.",
        vec![
            ("{outcome=\"completed\"}".into(), c.completed as f64),
            ("{outcome=\"failed\"}".into(), c.failed as f64),
            ("{outcome=\"cancelled\"}".into(), c.cancelled as f64),
        ],
    );
    metric(
        "cuzk_partitions_retried_on_cpu_total",
        "counter",
        "Partitions whose device failed and that were proved again on the CPU.",
        vec![(String::new(), svc.jobs().engine_stats().retried_on_cpu.load(std::sync::atomic::Ordering::Relaxed) as f64)],
    );
    let trace = svc.jobs().trace();
    let stages = trace.stage_summaries(|_| true);
    metric(
        "cuzk_stage_seconds_sum",
        "counter",
        "Seconds spent per pipeline stage (partitions of retained trace events).",
        stages.iter().map(|st| (format!("{{stage=\"{}\"}}", st.stage), st.total_s)).collect(),
    );
    metric(
        "cuzk_stage_seconds_count",
        "counter",
        "Stage runs per pipeline stage.",
        stages.iter().map(|st| (format!("{{stage=\"{}\"}}", st.stage), st.count as f64)).collect(),
    );
    metric(
        "cuzk_queue_wait_seconds_sum",
        "counter",
        "Seconds jobs waited in the priority queues.",
        vec![(String::new(), c.queue_wait_ms_sum as f64 / 1000.0)],
    );
    metric(
        "cuzk_queue_wait_seconds_count",
        "counter",
        "Jobs that left the queues for the engine.",
        vec![(String::new(), c.queue_wait_count as f64)],
    );
    metric(
        "cuzk_queue_pending",
        "gauge",
        "Queued jobs per proof kind.",
        c.queues.iter().map(|(k, q, _)| (format!("{{kind=\"{k}\"}}"), *q as f64)).collect(),
    );
    metric(
        "cuzk_queue_in_progress",
        "gauge",
        "Jobs in the engine per proof kind.",
        c.queues.iter().map(|(k, _, r)| (format!("{{kind=\"{k}\"}}"), *r as f64)).collect(),
    );
    metric(
        "cuzk_rss_bytes",
        "gauge",
        "Resident set size of the daemon.",
        vec![(String::new(), cuzk_core::mem::snapshot().rss_bytes as f64)],
    );
    let b = svc.jobs().budget();
    metric("cuzk_budget_bytes", "gauge", "The byte budget for in-flight partitions.", vec![(String::new(), b.total() as f64)]);
    metric("cuzk_budget_in_use_bytes", "gauge", "Bytes leased by in-flight partitions now.", vec![(String::new(), b.in_use() as f64)]);
    metric("cuzk_budget_high_water_bytes", "gauge", "Most bytes ever leased at once.", vec![(String::new(), b.high_water() as f64)]);
    metric(
        "cuzk_gpu_busy_ratio",
        "gauge",
        "Fraction of the retained window during which a device's provers were busy.",
        trace.device_busy(|_| true).into_iter().map(|(d, f)| (format!("{{device=\"{d}\"}}"), f)).collect(),
    );
    let srs = svc.status().loaded_srs;
    metric(
        "cuzk_srs_resident_bytes",
        "gauge",
        "Host bytes of resident parameters per circuit.",
        srs.iter().map(|x| (format!("{{circuit=\"{}\"}}", x.circuit_id), x.size_bytes as f64)).collect(),
    );
    metric(
        "cuzk_pce_resident_bytes",
        "gauge",
        "Host bytes of resident pre-compiled constraint evaluators per circuit.",
        srs.iter().map(|x| (format!("{{circuit=\"{}\"}}", x.circuit_id), x.pce_bytes as f64)).collect(),
    );
    metric("cuzk_uptime_seconds", "gauge", "Seconds since the daemon started.", vec![(String::new(), svc.started.elapsed().as_secs_f64())]);
    s
}
