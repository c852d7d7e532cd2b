//! WinningPoSt and WindowPoSt through the daemon, encoded as Curio encodes them
//! (`proof_kind` WINNING_POST / WINDOW_POST_PARTITION, the lotus number in
//! `registered_proof`, one vanilla proof per sector in `vanilla_proofs` (field 11),
//! `randomness`, `miner_id`, `partition_index`, priorities CRITICAL / HIGH): the proofs come
//! back COMPLETED and `verify_winning_post` / `verify_window_post` accept them; a request that
//! does not hold together is FAILED with a message naming what is wrong, and no proof. (In its
//! own process: it loads the process-wide parameter and PCE registries.)

mod common;

use common::*;
use cuzk_daemon::proto::{self, await_proof_response::Status as S, ProofKind, SubmitProofRequest};
use cuzk_filecoin::post::fixture::SealedSectors;
use cuzk_filecoin::post::{registry, verify, PoSt, PostInput};

fn curio_request(input: &PostInput, request_id: &str) -> SubmitProofRequest {
    let winning = registry::is_winning(input.registered_proof);
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: if winning { ProofKind::WinningPost } else { ProofKind::WindowPostPartition } as i32,
        sector_size: registry::sector_size_of(input.registered_proof),
        registered_proof: registry::number(input.registered_proof),
        priority: if winning { proto::Priority::Critical } else { proto::Priority::High } as i32,
        vanilla_proofs: input.vanilla_proofs.clone(),
        miner_id: input.miner_id,
        randomness: input.randomness.to_vec(),
        partition_index: input.partition_index as u32,
        ..Default::default()
    }
}

/// Test parameters for both 2 KiB PoSts, and three sealed sectors (kept in `dir`).
fn sealed_sectors(dir: &std::path::Path) -> SealedSectors {
    let kind = PoSt::with_settings(&settings());
    for winning in [true, false] {
        kind.ensure_test_params(registry::for_size(2048, winning).unwrap(), None).unwrap();
    }
    SealedSectors::seal(2048, 3, 1000, 3, dir).unwrap()
}

fn randomness() -> [u8; 32] {
    let mut randomness = [9u8; 32];
    randomness[31] = 0;
    randomness
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_and_winning_post_requests_from_curio_are_proved_and_verified() {
    let (c1_bytes, _, _) = setup();
    let dir = tempfile::tempdir().unwrap();
    let sealed = sealed_sectors(dir.path());
    let randomness = randomness();
    let winning = sealed.winning_post(randomness).unwrap();
    let window0 = sealed.window_post(randomness, 0, &[1, 2]).unwrap();
    let window1 = sealed.window_post(randomness, 1, &[3]).unwrap();

    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    for (id, input) in [("winpost-1000-09", &winning), ("wdpost-1000-0-09", &window0), ("wdpost-1000-1-09", &window1)] {
        let r = prove(&mut c, curio_request(input, id)).await;
        assert_eq!(r.status, S::Completed as i32, "{id}: {}", r.error_message);
        assert!(r.verified, "{id}");
        assert_eq!(r.proof.len(), verify::PROOF_BYTES, "{id}");
        verify::ensure_valid(input, &r.proof).unwrap_or_else(|e| panic!("{id}: {e}"));
    }

    let good = curio_request(&window0, "");
    let cases: Vec<(&str, SubmitProofRequest, &str)> = vec![
        ("no vanilla proofs", SubmitProofRequest { vanilla_proofs: vec![], ..good.clone() }, "vanilla_proofs is empty"),
        (
            "a PoRep C1 as a PoSt",
            SubmitProofRequest { vanilla_proofs: vec![c1_bytes.clone()], ..good.clone() },
            "vanilla proof 0: not a FallbackPoStSectorProof",
        ),
        (
            "WinningPoSt proof under the WindowPoSt kind",
            SubmitProofRequest { registered_proof: 0, ..good.clone() },
            "is not a WINDOW_POST_PARTITION proof",
        ),
        ("unknown registered proof", SubmitProofRequest { registered_proof: 99, ..good.clone() }, "registered PoSt proof 99"),
        ("size vs proof", SubmitProofRequest { sector_size: 32 << 30, ..good.clone() }, "does not match sector_size"),
        ("short randomness", SubmitProofRequest { randomness: vec![1; 16], ..good.clone() }, "16 bytes"),
        ("other randomness", SubmitProofRequest { randomness: vec![0; 32], ..good.clone() }, "do not verify"),
        (
            "too many sectors",
            SubmitProofRequest { vanilla_proofs: [&window0.vanilla_proofs[..], &window1.vanilla_proofs[..]].concat(), ..good.clone() },
            "3 vanilla proofs",
        ),
    ];
    for (name, req, want) in cases {
        let r = prove(&mut c, req).await;
        assert_eq!(r.status, S::Failed as i32, "{name}: {r:?}");
        assert!(r.error_message.contains(want), "{name}: {:?} does not name {want:?}", r.error_message);
        assert!(r.proof.is_empty(), "{name}");
    }
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!((s.total_proofs_completed, s.total_proofs_failed, s.budget_in_use_bytes), (3, 8, 0));
    // Both PoSt circuits stay resident under Curio's ids; an operator can evict and preload them.
    let resident: Vec<String> = s.loaded_srs.iter().map(|l| l.circuit_id.clone()).collect();
    assert!(resident.contains(&"winning-2k".into()) && resident.contains(&"wpost-2k".into()), "{resident:?}");
    let ev = c.evict_srs(proto::EvictSrsRequest { circuit_id: "winning-2k".into() }).await.unwrap().into_inner();
    assert!(ev.was_loaded && ev.freed_bytes > 0);
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert!(!s.loaded_srs.iter().any(|l| l.circuit_id == "winning-2k"));
    let pre = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "winning-2k".into() }).await.unwrap().into_inner();
    assert!(!pre.already_loaded);
    let pre = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "winning-2k".into() }).await.unwrap().into_inner();
    assert!(pre.already_loaded);
    let r = prove(&mut c, curio_request(&winning, "winpost-again")).await;
    assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
    assert!(h.stop().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winning_post_overtakes_queued_porep_work() {
    // One job in flight at a time: three PoRep proofs queue behind each other. A WinningPoSt
    // without a priority (so CRITICAL, by its kind) submitted while the first is proving
    // enters the engine at once and is proved before the third PoRep has even started.
    let (bytes, id, _) = setup();
    let dir = tempfile::tempdir().unwrap();
    let winning = sealed_sectors(dir.path()).winning_post(randomness()).unwrap();
    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let mut porep_jobs = Vec::new();
    for k in 0..3 {
        let r = c.submit_proof(porep(&bytes, id, &format!("porep-{k}"), proto::Priority::Normal)).await.unwrap().into_inner();
        porep_jobs.push(r.job_id);
    }
    let running = || async {
        let s = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap().get_status(proto::GetStatusRequest {}).await;
        s.unwrap().into_inner().queues.iter().map(|q| q.in_progress).sum::<u32>()
    };
    while running().await == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let req = SubmitProofRequest { priority: 0, ..curio_request(&winning, "winpost-1000-09") };
    let r = prove(&mut c, req).await;
    assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
    verify::ensure_valid(&winning, &r.proof).unwrap();
    let last = c.await_proof(proto::AwaitProofRequest { job_id: porep_jobs[2].clone(), timeout_ms: 1 }).await.unwrap().into_inner();
    assert_eq!(last.status, S::Timeout as i32, "the WinningPoSt waited for all queued PoRep work");
    let mut done = Vec::new();
    for job_id in porep_jobs {
        let d = c.await_proof(proto::AwaitProofRequest { job_id, timeout_ms: 0 }).await.unwrap().into_inner();
        assert_eq!(d.status, S::Completed as i32, "{}", d.error_message);
        done.push(d);
    }
    // It did not wait in the daemon's queue for the running PoRep to finish: it took the
    // extra in-flight slot at once (submitted just after that PoRep started).
    assert!(r.queue_wait_ms * 2 < done[0].total_ms, "queued {} ms behind a {} ms PoRep", r.queue_wait_ms, done[0].total_ms);
    assert!(h.stop().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_circuits_are_dropped_and_preloaded_ones_stay() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let sealed = sealed_sectors(dir.path());
    let (winning, window) = (sealed.winning_post(randomness()).unwrap(), sealed.window_post(randomness(), 0, &[1, 2]).unwrap());
    let mut cfg = config(1);
    cfg.srs.idle_evict_s = 1;
    cfg.srs.preload = vec!["winning-2k".into()];
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    for (id, input) in [("winpost", &winning), ("wdpost", &window)] {
        let r = prove(&mut c, curio_request(input, id)).await;
        assert_eq!(r.status, S::Completed as i32, "{id}: {}", r.error_message);
    }
    let resident = |s: proto::GetStatusResponse| s.loaded_srs.into_iter().map(|l| l.circuit_id).collect::<Vec<_>>();
    let before = resident(c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner());
    assert!(before.contains(&"winning-2k".into()) && before.contains(&"wpost-2k".into()), "{before:?}");
    // A second and a half without a job: the WindowPoSt circuit goes, the preloaded one stays.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let after = resident(c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner());
    assert!(after.contains(&"winning-2k".into()), "a preloaded circuit was dropped: {after:?}");
    assert!(!after.contains(&"wpost-2k".into()), "an idle circuit stayed: {after:?}");
    // It is loaded again for the next job.
    let r = prove(&mut c, curio_request(&window, "wdpost-again")).await;
    assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
    verify::ensure_valid(&window, &r.proof).unwrap();
    assert!(h.stop().await.unwrap());
}
