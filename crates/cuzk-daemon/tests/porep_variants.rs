//! A synthetic-PoRep sector through the daemon as Curio sends it (`registered_proof` 10, lotus's
//! `StackedDrg2KiBV1_1_Feat_SyntheticPoRep`): COMPLETED and accepted by `verify_seal`; the same
//! C1 under the plain V1_1 number is refused with a reason. (In its own process: it loads the
//! process-wide registries.)

mod common;

use common::*;
use cuzk_daemon::proto::{self, await_proof_response::Status as S, SubmitProofRequest};
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorIdentity;
use cuzk_filecoin::porep::{seal, test_params, verify, RegisteredSealProof};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synthetic_porep_request_from_curio_is_proved_and_verified() {
    setup();
    let rp = RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep;
    let dir = tempfile::tempdir().unwrap();
    let id = SectorIdentity { miner_id: 1000, sector_number: 9 };
    seal::gen_c1_as(rp, 5, id, dir.path(), "test").unwrap();
    let path = dir.path().join("c1.json");
    test_params::ensure(&cuzk_filecoin::PorepC2::with_settings(&settings()), rp, None).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let req = SubmitProofRequest { registered_proof: 10, sector_size: 2048, ..porep(&bytes, id, "porep-1000-9", proto::Priority::Normal) };
    let r = prove(&mut c, req.clone()).await;
    assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
    let c1 = C1::load(&path, None).unwrap();
    verify::ensure_valid(&c1, &id, &r.proof).expect("verify_seal accepts it");
    let wrong = prove(&mut c, SubmitProofRequest { registered_proof: 5, request_id: "porep-1000-9-v11".into(), ..req }).await;
    assert_eq!(wrong.status, S::Failed as i32);
    assert!(
        wrong.error_message.contains("registered_proof 5") && wrong.error_message.contains("SyntheticPoRep"),
        "{}",
        wrong.error_message
    );
    assert!(h.stop().await.unwrap());
}
