//! Injected faults through the daemon over a real gRPC client, CPU backend, bundled 2 KiB C1
//! (in its own process: it loads the process-wide parameter and PCE registries that
//! `daemon.rs` asserts on): a device failure is retried on the CPU or fails the job as
//! configured, a corrupted result is caught by verify_seal and never returned, and the daemon
//! keeps serving.

mod common;

use common::*;
use cuzk_daemon::proto::{self, await_proof_response::Status as S};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_device_failures_and_corrupted_results_never_yield_a_bad_proof() {
    let (bytes, id, c1) = setup();
    // retry-cpu: the first partition's device call fails and is proved again on the CPU; the
    // second one's H MSM is corrupted, which verify_seal must catch; the third is clean.
    let mut cfg = config(1);
    cfg.engine.on_device_error = "retry-cpu".into();
    cfg.engine.inject_fault = "device-error; corrupt-msm,skip=1".into();
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let retried = prove(&mut c, porep(&bytes, id, "retried", proto::Priority::Normal)).await;
    assert_eq!(retried.status, S::Completed as i32, "{}", retried.error_message);
    assert!(retried.verified);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &retried.proof).expect("the CPU retry's proof is valid");
    let corrupt = prove(&mut c, porep(&bytes, id, "corrupt", proto::Priority::Normal)).await;
    assert_eq!(corrupt.status, S::Failed as i32, "a corrupted proof must not be returned");
    assert!(corrupt.proof.is_empty() && corrupt.error_message.contains("verification"), "{}", corrupt.error_message);
    let clean = prove(&mut c, porep(&bytes, id, "clean", proto::Priority::Normal)).await;
    assert_eq!(clean.status, S::Completed as i32, "the daemon keeps serving: {}", clean.error_message);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &clean.proof).unwrap();
    let m = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(m.contains("cuzk_partitions_retried_on_cpu_total 1"), "{m}");
    assert!(m.contains("cuzk_proofs_total{outcome=\"failed\"} 1") && m.contains("cuzk_proofs_total{outcome=\"completed\"} 2"), "{m}");
    assert!(h.stop().await.unwrap());

    // fail (the default): the device's failure fails the job with its error, at once.
    let mut cfg = config(1);
    cfg.engine.inject_fault = "device-error,times=all".into();
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let failed = prove(&mut c, porep(&bytes, id, "failed", proto::Priority::Normal)).await;
    assert_eq!(failed.status, S::Failed as i32);
    assert!(
        failed.error_message.contains("proving device failed") && failed.error_message.contains("injected"),
        "{}",
        failed.error_message
    );
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((s.total_proofs_failed, s.budget_in_use_bytes), (1, 0));
    assert!(h.stop().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_a_job_fails_that_job_or_is_retried_and_the_daemon_lives_on() {
    let (bytes, id, c1) = setup();
    // fail: the panic is that job's failure, named; the next job proves on the same daemon.
    let mut cfg = config(1);
    cfg.engine.inject_fault = "panic".into();
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let panicked = prove(&mut c, porep(&bytes, id, "panicked", proto::Priority::Normal)).await;
    assert_eq!(panicked.status, S::Failed as i32);
    assert!(panicked.proof.is_empty());
    assert!(panicked.error_message.contains("panic") && panicked.error_message.contains("injected"), "{}", panicked.error_message);
    let after = prove(&mut c, porep(&bytes, id, "after-panic", proto::Priority::Normal)).await;
    assert_eq!(after.status, S::Completed as i32, "the daemon keeps serving after a panic: {}", after.error_message);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &after.proof).unwrap();
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((s.total_proofs_failed, s.total_proofs_completed, s.budget_in_use_bytes), (1, 1, 0));
    assert!(h.stop().await.unwrap());

    // retry-cpu: a partition that panicked on the device is proved again on the CPU.
    let mut cfg = config(1);
    cfg.engine.on_device_error = "retry-cpu".into();
    cfg.engine.inject_fault = "panic".into();
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let retried = prove(&mut c, porep(&bytes, id, "retried-panic", proto::Priority::Normal)).await;
    assert_eq!(retried.status, S::Completed as i32, "{}", retried.error_message);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &retried.proof).expect("the CPU retry's proof is valid");
    let m = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(m.contains("cuzk_partitions_retried_on_cpu_total 1"), "{m}");
    assert!(h.stop().await.unwrap());
}
