//! What the daemon's test files share: the bundled 2 KiB fixture with its parameters made,
//! a CPU device list, a loopback config, a PoRep request and a prove call.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use cuzk_daemon::client::Client;
use cuzk_daemon::proto::{self, ProofKind, SubmitProofRequest};
use cuzk_daemon::DaemonConfig;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::{SectorIdentity, SectorMeta};

pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")
}

/// The Filecoin settings of this test process (its environment, as the CLI reads it).
pub fn settings() -> cuzk_filecoin::Settings {
    cuzk_filecoin::Settings::from_vars(|k| std::env::var_os(k))
}

pub fn setup() -> (Vec<u8>, SectorIdentity, C1) {
    settings().apply().unwrap();
    let c1 = C1::load(&fixture(), None).unwrap();
    let kind = cuzk_filecoin::PorepC2::with_settings(&settings());
    cuzk_filecoin::porep::test_params::ensure(&kind, c1.registered_proof, None).unwrap();
    let id = SectorMeta::load(&fixture().with_file_name("c1.meta.json")).unwrap().identity();
    (std::fs::read(fixture()).unwrap(), id, c1)
}

pub fn cpu() -> Vec<cuzk_pipeline::Device> {
    cuzk_pipeline::Config::cpu(1, 0).devices
}

/// Plain TCP on loopback (`auth.insecure`, no token), as Curio's client connects.
pub fn config(max_in_flight: usize) -> DaemonConfig {
    let mut c = DaemonConfig { listen: "tcp://127.0.0.1:0".into(), ..Default::default() };
    c.auth.insecure = true;
    c.engine.synthesis_workers = 1;
    c.engine.max_in_flight = max_in_flight;
    c.engine.budget = "16GiB".into();
    c
}

pub fn porep(bytes: &[u8], id: SectorIdentity, request_id: &str, priority: proto::Priority) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        priority: priority as i32,
        vanilla_proof: bytes.to_vec(),
        miner_id: id.miner_id,
        sector_number: id.sector_number,
        ..Default::default()
    }
}

pub async fn prove(c: &mut Client, req: SubmitProofRequest) -> proto::AwaitProofResponse {
    c.prove(proto::ProveRequest { submit: Some(req) }).await.unwrap().into_inner().result.unwrap()
}
