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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_and_winning_post_requests_from_curio_are_proved_and_verified() {
    let (c1_bytes, _, _) = setup();
    let kind = PoSt::with_settings(&settings());
    for winning in [true, false] {
        kind.ensure_test_params(registry::for_size(2048, winning).unwrap(), None).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let sealed = SealedSectors::seal(2048, 3, 1000, 3, dir.path()).unwrap();
    let mut randomness = [9u8; 32];
    randomness[31] = 0;
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
    assert!(h.stop().await.unwrap());
}
