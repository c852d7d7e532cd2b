//! End to end on the bundled 2 KiB sector with the shared test parameters (generated once per
//! machine into the parameter cache outside the checkout): the bellperson reference proof
//! verifies with `verify_seal` and tampered proofs do not; the new path (witness + PCE +
//! cuzk's prover on the CPU backend) gives the same bytes for the same r and s, and a valid
//! proof with fresh randomness; filecoin-proofs' own prover
//! (`seal_commit_phase2`, which re-verifies) accepts the parameters cuzk's generator made.

use std::path::{Path, PathBuf};

use cuzk_core::mem::StageTracer;
use cuzk_core::Scalar;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorMeta;
use cuzk_filecoin::porep::test_params::ensure;
use cuzk_filecoin::porep::verify::{verify_seal, Verdict};
use cuzk_filecoin::porep::{params, reference_prover};

mod common;
use ff::Field;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")
}

fn meta() -> SectorMeta {
    SectorMeta::load(&fixture().with_file_name("c1.meta.json")).unwrap()
}

fn ready() -> C1 {
    let kind = common::kind();
    let c1 = C1::load(&fixture(), None).unwrap();
    ensure(&kind, c1.registered_proof, None).unwrap();
    c1
}

#[test]
fn bellperson_proof_verifies_and_tampered_proofs_do_not() {
    let c1 = ready();
    let id = meta().identity();
    let (params, _) = params::load(c1.registered_proof).unwrap();
    let tracer = StageTracer::new();
    let rs = vec![(Scalar::from(0x1234_5678u64).square(), Scalar::from(0x9abc_def0u64).square())];
    let proof = reference_prover::prove_with(&c1, &id, &params, Some(&rs), &tracer).unwrap();
    assert_eq!(proof.len(), 192);
    assert_eq!(verify_seal(&c1, &id, &proof).unwrap(), Verdict::Valid);
    for at in [0usize, 50, 100, 191] {
        let mut bad = proof.clone();
        bad[at] ^= 0x01;
        assert!(!verify_seal(&c1, &id, &bad).unwrap().is_valid(), "flipped byte {at} accepted");
    }
    assert!(!verify_seal(&c1, &id, &proof[..191]).unwrap().is_valid());
    let mut other = id;
    other.sector_number += 1;
    assert!(!verify_seal(&c1, &other, &proof).unwrap().is_valid(), "proof accepted for another sector");
    let stages: Vec<String> = tracer.rows().into_iter().map(|r| r.stage).collect();
    assert_eq!(stages, ["check-c1", "build-circuits", "bellperson-prove"]);

    // The new path through the engine, same r and s: the same bytes.
    let kind = common::kind();
    let ours = common::prove_on_engine(&kind, c1.clone(), id, Some(rs));
    assert_eq!(hex::encode(&ours), hex::encode(&proof), "new-path proof differs from bellperson's for equal r and s");
    // Fresh randomness: a different proof, still valid.
    let fresh = common::prove_on_engine(&kind, c1.clone(), id, None);
    assert_ne!(fresh, proof);
    assert_eq!(verify_seal(&c1, &id, &fresh).unwrap(), Verdict::Valid);
}

#[test]
fn official_prover_accepts_cuzk_test_parameters() {
    let c1 = ready();
    let m = meta();
    let api_c1: filecoin_proofs_api::seal::SealCommitPhase1Output = serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    // seal_commit_phase2 proves with the .params file and re-verifies with the .vk file.
    let out = filecoin_proofs_api::seal::seal_commit_phase2(api_c1, m.identity().prover_id(), m.identity().sector_id())
        .expect("filecoin-proofs rejected cuzk's parameters");
    assert_eq!(verify_seal(&c1, &m.identity(), &out.proof).unwrap(), Verdict::Valid);
}
