//! PoRep variants beyond V1_1: a 2 KiB sector sealed by filecoin-proofs-api under
//! `StackedDrg2KiBV1_1_Feat_SyntheticPoRep` (synthetic challenges' proofs generated after
//! pre-commit, as the API requires), its C1 proved on the engine's CPU backend and accepted by
//! `verify_seal`; the same C1 claimed under another variant is refused.

use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::{SectorIdentity, SectorMeta};
use cuzk_filecoin::porep::{seal, test_params, verify, RegisteredSealProof};

mod common;

#[test]
fn a_synthetic_porep_c1_proves_and_verify_seal_accepts_it() {
    let kind = common::kind();
    let rp = RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep;
    let dir = tempfile::tempdir().unwrap();
    let identity = SectorIdentity { miner_id: 1000, sector_number: 7 };
    seal::gen_c1_as(rp, 3, identity, dir.path(), "test").unwrap();
    let path = dir.path().join("c1.json");
    let c1 = C1::load(&path, None).unwrap();
    assert_eq!(c1.registered_proof, rp);
    let meta = SectorMeta::load(&dir.path().join("c1.meta.json")).unwrap();
    assert_eq!(meta.registered_proof, rp);
    test_params::ensure(&kind, rp, None).unwrap();
    let proof = common::prove_on_engine(&kind, c1.clone(), identity, None);
    verify::ensure_valid(&c1, &identity, &proof).expect("verify_seal accepts the synthetic-PoRep proof");
    // One circuit, one parameter set (filecoin-proofs names the same file): one resident copy.
    let plain = RegisteredSealProof::StackedDrg2KiBV1_1;
    use cuzk_pipeline::ProofKind;
    assert_eq!(kind.circuit_id(&rp), kind.circuit_id(&plain));
    let (a, b) = (kind.resident(rp), kind.resident(plain));
    assert!(std::sync::Arc::ptr_eq(a.0.as_ref().unwrap(), b.0.as_ref().unwrap()), "two PCE copies of one circuit");
    assert!(std::sync::Arc::ptr_eq(a.1.as_ref().unwrap(), b.1.as_ref().unwrap()), "two parameter copies of one circuit");
    let mut bad = proof.clone();
    bad[10] ^= 1;
    assert!(verify::ensure_valid(&c1, &identity, &bad).is_err());
}
