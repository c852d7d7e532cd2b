//! A request for a sector size whose Groth16 parameters are not on disk answers FAILED with
//! the missing file and how to get it, and the daemon keeps serving (own process: the
//! parameter directory is process-wide and must point at an empty folder before first use).

use std::path::Path;

use cuzk_daemon::proto::{self, await_proof_response::Status as S, ProofKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_parameters_are_named() {
    let empty = tempfile::tempdir().unwrap();
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", empty.path());
    cuzk_filecoin::Settings::apply_from(|k| std::env::var_os(k)).unwrap();
    let c1 = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json");
    let mut cfg = cuzk_daemon::DaemonConfig { listen: "tcp://127.0.0.1:0".into(), ..Default::default() };
    cfg.auth.insecure = true;
    let h =
        cuzk_daemon::start(&cfg, cuzk_pipeline::Config::cpu(1, 0).devices, &cuzk_filecoin::Settings::from_vars(|k| std::env::var_os(k)))
            .await
            .unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let req = proto::SubmitProofRequest {
        proof_kind: ProofKind::PorepSealCommit as i32,
        vanilla_proof: std::fs::read(c1).unwrap(),
        miner_id: 1000,
        sector_number: 1,
        ..Default::default()
    };
    for _ in 0..2 {
        let r = c.prove(proto::ProveRequest { submit: Some(req.clone()) }).await.unwrap().into_inner().result.unwrap();
        assert_eq!(r.status, S::Failed as i32);
        assert!(
            r.error_message.contains("missing Groth16 parameters") && r.error_message.contains("cuzk params ensure"),
            "{}",
            r.error_message
        );
        assert!(r.error_message.contains(&empty.path().display().to_string()), "names the file: {}", r.error_message);
    }
    let e = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap_err();
    assert!(e.message().contains("missing Groth16 parameters"), "{}", e.message());
    assert!(h.stop().await.unwrap());
}
