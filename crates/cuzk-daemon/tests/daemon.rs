//! The daemon over a real gRPC client on loopback TCP, CPU backend, bundled 2 KiB C1:
//! bad requests answer FAILED with a message naming the problem while the daemon keeps
//! serving; real proofs complete, verify (checked again here with verify_seal), honour
//! priorities, idempotent request ids and cancellation; status and metrics agree with what
//! happened; stopping drains and refuses new work. (Injected faults: `faults.rs`, in its own
//! process, because this file's tests read the process-wide registries.)

mod common;

use std::time::{Duration, Instant};

use common::*;
use cuzk_daemon::proto::{self, await_proof_response::Status as S, ProofKind, SubmitProofRequest};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_fail_with_a_reason_and_the_daemon_keeps_serving() {
    let (bytes, id, _) = setup();
    let h = cuzk_daemon::start(&config(0), cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let good = porep(&bytes, id, "", proto::Priority::Normal);
    let text = String::from_utf8(bytes.clone()).unwrap();
    let cases: Vec<(&str, SubmitProofRequest, &str)> = vec![
        ("unset kind", SubmitProofRequest { proof_kind: 0, ..good.clone() }, "proof_kind is not set"),
        (
            "a C1 as a SnapDeals request",
            SubmitProofRequest { proof_kind: ProofKind::SnapDealsUpdate as i32, ..good.clone() },
            "vanilla_proofs is empty: a SnapDeals request",
        ),
        ("unknown kind", SubmitProofRequest { proof_kind: 77, ..good.clone() }, "unknown proof kind 77"),
        ("empty", SubmitProofRequest { vanilla_proof: vec![], ..good.clone() }, "vanilla_proof is empty"),
        ("garbage", SubmitProofRequest { vanilla_proof: b"\x00\x01garbage".to_vec(), ..good.clone() }, "not JSON"),
        ("truncated", SubmitProofRequest { vanilla_proof: bytes[..bytes.len() / 2].to_vec(), ..good.clone() }, "vanilla_proof"),
        ("foreign JSON", SubmitProofRequest { vanilla_proof: br#"{"hello": "world"}"#.to_vec(), ..good.clone() }, "vanilla_proof"),
        ("wrong sector size", SubmitProofRequest { sector_size: 32 << 30, ..good.clone() }, "32GiB was expected"),
        ("unsupported size", SubmitProofRequest { sector_size: 4096, ..good.clone() }, "sector_size 4096"),
        ("size vs proof", SubmitProofRequest { sector_size: 2048, registered_proof: 8, ..good.clone() }, "does not match sector_size"),
        ("V1 proof type", SubmitProofRequest { registered_proof: 3, ..good.clone() }, "V1"),
        (
            "spliced",
            SubmitProofRequest { vanilla_proof: text.replacen("\"comm_r\":[", "\"comm_r\":[1,", 1).into_bytes(), ..good.clone() },
            "vanilla_proof",
        ),
    ];
    for (name, req, want) in cases {
        let r = prove(&mut c, req).await;
        assert_eq!(r.status, S::Failed as i32, "{name}: {r:?}");
        assert!(r.error_message.contains(want), "{name}: {:?} does not name {want:?}", r.error_message);
        assert!(r.proof.is_empty(), "{name}: a failed job carries no proof");
    }
    // A wrong identity passes the submission checks but fails in the engine, naming the sector.
    let wrong = SubmitProofRequest { sector_number: id.sector_number + 1, ..good.clone() };
    let r = prove(&mut c, wrong).await;
    assert_eq!(r.status, S::Failed as i32, "{r:?}");
    assert!(r.error_message.to_lowercase().contains("replica"), "{}", r.error_message);

    let unknown = c.await_proof(proto::AwaitProofRequest { job_id: "nope".into(), timeout_ms: 10 }).await.unwrap().into_inner();
    assert_eq!(unknown.status, S::Unknown as i32);
    assert_eq!(c.cancel_proof(proto::CancelProofRequest { job_id: "nope".into() }).await.unwrap_err().code(), tonic::Code::NotFound);
    let e = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "snap-3g".into() }).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("snap-3g"));
    assert_eq!(c.prove(proto::ProveRequest { submit: None }).await.unwrap_err().code(), tonic::Code::InvalidArgument);

    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(s.total_proofs_failed, 13);
    assert_eq!(s.total_proofs_completed, 0);
    assert_eq!(s.gpus.len(), 1);
    assert_eq!(s.gpus[0].name, "cpu");
    assert!(s.budget_bytes == 16 << 30 && s.rss_bytes > 0);
    let m = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(m.contains("cuzk_proofs_total{outcome=\"failed\"} 13"), "{m}");
    assert!(h.stop().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_complete_verified_in_priority_order_with_idempotent_ids_and_cancel() {
    let (bytes, id, c1) = setup();
    // One job in the engine at a time, and the queue held while the jobs arrive, so that what
    // is queued, what runs first and what a cancel finds do not depend on timing (this used to
    // assert "3 pending, 1 running, nothing loaded yet" while the first job was already proving).
    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    h.service.jobs().hold(true);
    let addr = h.listen.to_string();
    let mut c = cuzk_daemon::client::connect(&addr).await.unwrap();
    let first = c.submit_proof(porep(&bytes, id, "first", proto::Priority::Normal)).await.unwrap().into_inner();
    let low = c.submit_proof(porep(&bytes, id, "low", proto::Priority::Low)).await.unwrap().into_inner();
    let doomed = c.submit_proof(porep(&bytes, id, "doomed", proto::Priority::Normal)).await.unwrap().into_inner();
    let critical = c.submit_proof(porep(&bytes, id, "critical", proto::Priority::Critical)).await.unwrap().into_inner();
    assert_eq!(critical.queue_position, 1, "CRITICAL goes to the front of the queue");
    assert_eq!(low.queue_position, 2, "LOW behind the NORMAL job queued before it");
    let again = c.submit_proof(porep(&bytes, id, "first", proto::Priority::Normal)).await.unwrap().into_inner();
    assert_eq!(again.job_id, first.job_id, "a repeated request id returns the first job");
    assert_eq!(again.queue_position, 2);

    let queued = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    let q = queued.queues.iter().find(|q| q.proof_kind == "POREP_SEAL_COMMIT").unwrap();
    assert_eq!((q.pending, q.in_progress), (4, 0));
    assert_eq!(queued.loaded_srs.len(), 0, "nothing was preloaded and nothing has started");

    let cancel = c.cancel_proof(proto::CancelProofRequest { job_id: doomed.job_id.clone() }).await.unwrap().into_inner();
    assert!(!cancel.was_running);
    let r = c.await_proof(proto::AwaitProofRequest { job_id: doomed.job_id.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
    assert_eq!(r.status, S::Cancelled as i32);
    h.service.jobs().hold(false);

    let pending = c.await_proof(proto::AwaitProofRequest { job_id: low.job_id.clone(), timeout_ms: 50 }).await.unwrap().into_inner();
    assert_eq!(pending.status, S::Timeout as i32, "an unfinished job times out: {pending:?}");

    let t0 = Instant::now();
    let mut waits = Vec::new();
    for job in [&first.job_id, &low.job_id, &critical.job_id] {
        let (addr, job) = (addr.clone(), job.clone());
        waits.push(tokio::spawn(async move {
            let mut c = cuzk_daemon::client::connect(&addr).await.unwrap();
            let r = c.await_proof(proto::AwaitProofRequest { job_id: job, timeout_ms: 0 }).await.unwrap().into_inner();
            (r, t0.elapsed())
        }));
    }
    let mut done = Vec::new();
    for w in waits {
        done.push(w.await.unwrap());
    }
    for (r, _) in &done {
        assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
        assert!(r.verified, "the daemon verifies before answering");
        cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &r.proof).expect("verify_seal accepts the daemon's proof");
        assert!(r.total_ms >= r.queue_wait_ms && r.gpu_compute_ms > 0 && r.synthesis_ms > 0, "{r:?}");
    }
    let (low_at, critical_at) = (done[1].1, done[2].1);
    assert!(critical_at < low_at, "CRITICAL ({critical_at:?}) must finish before LOW ({low_at:?})");
    assert_eq!(done[0].0.proof.len(), 192);

    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((s.total_proofs_completed, s.total_proofs_cancelled, s.total_proofs_failed), (3, 1, 0));
    assert_eq!(s.budget_in_use_bytes, 0, "every lease is back");
    let srs = s.loaded_srs.iter().find(|x| x.circuit_id == "porep-2k").expect("2 KiB parameters resident");
    assert!(srs.size_bytes > 0 && srs.pce_bytes > 0);
    let m = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(m.contains("cuzk_proofs_total{outcome=\"completed\"} 3"), "{m}");
    assert!(m.contains("cuzk_stage_seconds_count{stage=\"prove\"} 3"), "{m}");
    assert!(m.contains("cuzk_gpu_busy_ratio{device=\"cpu\"}"), "{m}");

    // Evict, then preload again: both answer what they did.
    let ev = c.evict_srs(proto::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(ev.was_loaded && ev.freed_bytes > srs.size_bytes);
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert!(s.loaded_srs.is_empty());
    let pre = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(!pre.already_loaded);
    let pre = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "porep-2KiB".into() }).await.unwrap().into_inner();
    assert!(pre.already_loaded);

    // Stopping drains: afterwards the address takes nothing.
    assert!(h.stop().await.unwrap());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = c.submit_proof(porep(&bytes, id, "late", proto::Priority::Normal)).await;
    assert!(after.is_err(), "a stopped daemon must not take jobs");
}
