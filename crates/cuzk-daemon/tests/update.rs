//! SnapDeals through the daemon, encoded as Curio encodes it (`proof_kind`
//! SNAP_DEALS_UPDATE, the lotus update number in `registered_proof`, one partition proof per
//! partition in `vanilla_proofs` (field 11), comm_r_old / comm_r_new / comm_d_new in fields
//! 30–32 as CID bytes or raw): the proof comes back COMPLETED and
//! `verify_empty_sector_update_proof` accepts it; a request that does not hold together is
//! FAILED with a message naming what is wrong, and no proof. (In its own process: it loads
//! the process-wide parameter and PCE registries.)

mod common;

use common::*;
use cuzk_daemon::proto::{self, await_proof_response::Status as S, ProofKind, SubmitProofRequest};
use cuzk_filecoin::curio::{commitment_cid, Commitment};
use cuzk_filecoin::update::{fixture, registry, verify, SnapDeals, UpdateInput};

/// The request Curio sends: commitments as CID bytes (`cid.Bytes()`).
fn curio_request(input: &UpdateInput, request_id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        sector_size: registry::sector_size_of(input.registered_proof),
        registered_proof: registry::number(input.registered_proof),
        priority: proto::Priority::Normal as i32,
        vanilla_proofs: input.vanilla_proofs.clone(),
        comm_r_old: commitment_cid(&input.comm_r_old, Commitment::Sealed),
        comm_r_new: commitment_cid(&input.comm_r_new, Commitment::Sealed),
        comm_d_new: commitment_cid(&input.comm_d_new, Commitment::Unsealed),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snap_deals_requests_from_curio_are_proved_and_verified() {
    let (c1_bytes, _, _) = setup();
    let kind = SnapDeals::with_settings(&settings());
    kind.ensure_test_params(registry::for_size(2048).unwrap(), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = fixture::sealed_update(2048, 1000, 9, dir.path()).unwrap();

    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let raw = SubmitProofRequest {
        comm_r_old: input.comm_r_old.to_vec(),
        comm_r_new: input.comm_r_new.to_vec(),
        comm_d_new: input.comm_d_new.to_vec(),
        ..curio_request(&input, "snap-1000-1-raw")
    };
    for (id, req) in [("snap-1000-1", curio_request(&input, "snap-1000-1")), ("raw commitments", raw)] {
        let r = prove(&mut c, req).await;
        assert_eq!(r.status, S::Completed as i32, "{id}: {}", r.error_message);
        assert!(r.verified, "{id}");
        verify::ensure_valid(&input, &r.proof).unwrap_or_else(|e| panic!("{id}: {e}"));
    }

    let good = curio_request(&input, "");
    let cases: Vec<(&str, SubmitProofRequest, &str)> = vec![
        ("no partition proofs", SubmitProofRequest { vanilla_proofs: vec![], ..good.clone() }, "vanilla_proofs is empty"),
        (
            "a PoRep C1 as a partition proof",
            SubmitProofRequest { vanilla_proofs: vec![c1_bytes.clone()], ..good.clone() },
            "partition proof 0: not a PartitionProof",
        ),
        (
            "two partitions at 2 KiB",
            SubmitProofRequest { vanilla_proofs: vec![input.vanilla_proofs[0].clone(); 2], ..good.clone() },
            "2 partition proofs",
        ),
        ("unknown registered proof", SubmitProofRequest { registered_proof: 9, ..good.clone() }, "registered update proof 9"),
        ("size vs proof", SubmitProofRequest { sector_size: 32 << 30, ..good.clone() }, "does not match sector_size"),
        (
            "comm_d as a sealed CID",
            SubmitProofRequest { comm_d_new: commitment_cid(&input.comm_d_new, Commitment::Sealed), ..good.clone() },
            "comm_d_new: a CID whose codec",
        ),
        ("short comm_r_old", SubmitProofRequest { comm_r_old: vec![1; 20], ..good.clone() }, "comm_r_old"),
        (
            "commitments swapped",
            SubmitProofRequest { comm_r_old: good.comm_r_new.clone(), comm_r_new: good.comm_r_old.clone(), ..good.clone() },
            "do not verify against comm_r_old",
        ),
    ];
    for (name, req, want) in cases {
        let r = prove(&mut c, req).await;
        assert_eq!(r.status, S::Failed as i32, "{name}: {r:?}");
        assert!(r.error_message.contains(want), "{name}: {:?} does not name {want:?}", r.error_message);
        assert!(r.proof.is_empty(), "{name}: a failed job carries no proof");
    }
    let e = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "snap-2k".into() }).await;
    assert!(e.is_ok(), "snap-2k preload: {e:?}");
    assert!(h.stop().await.unwrap());
}
