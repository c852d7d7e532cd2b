//! PoRep jobs from the bundled 2 KiB C1: every job of a proof type references the one
//! process-wide PCE and parameter set (shared, not copied), with one partition input per
//! partition; a wrong number of (r, s) pairs is refused with a message. (Proving real C1s
//! through the engine, verified with verify_seal, is the CLI test `prove_several_c1_files_*`.)

use std::path::Path;
use std::sync::Arc;

use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorMeta;
use cuzk_filecoin::porep::PorepInput;
use cuzk_pipeline::{JobOptions, PipelineError};

mod common;

#[test]
fn jobs_share_one_pce_and_one_parameter_set() {
    let kind = common::kind();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json");
    let c1 = C1::load(&path, None).unwrap();
    cuzk_filecoin::porep::test_params::ensure(&kind, c1.registered_proof, None).unwrap();
    let identity = SectorMeta::load(&path.with_file_name("c1.meta.json")).unwrap().identity();
    let partitions = usize::from(c1.porep_config().partitions);
    let input = Arc::new(PorepInput { c1, identity });
    let a = kind.job(input.clone(), JobOptions::default())().unwrap();
    let b = kind.job(input.clone(), JobOptions { randomness: None, verify: false })().unwrap();
    assert!(Arc::ptr_eq(&a.pce, &b.pce), "two jobs hold different PCE copies");
    assert!(Arc::ptr_eq(&a.params, &b.params), "two jobs hold different parameter copies");
    assert_eq!(a.partitions.len(), partitions);
    assert!(a.verify.is_some() && b.verify.is_none());

    let two = vec![(blstrs::Scalar::from(1u64), blstrs::Scalar::from(2u64)); 2];
    match kind.job(input, JobOptions { randomness: Some(two), verify: true })() {
        Err(PipelineError::Job(m)) => assert!(m.contains("2 (r, s) pairs for 1 partitions"), "{m}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a wrong number of (r, s) pairs must be refused"),
    }
}

#[test]
fn a_synthetic_c1_is_refused_when_its_proof_would_be_verified() {
    let kind = common::kind();
    let dir = tempfile::tempdir().unwrap();
    let rp = cuzk_filecoin::porep::sector::registered_proof(2048).unwrap();
    cuzk_filecoin::porep::synthetic::write(rp, 5, dir.path(), "test").unwrap();
    let c1 = C1::load(&dir.path().join("c1.json"), None).unwrap();
    assert!(c1.synthetic);
    let rp = c1.registered_proof;
    let identity = SectorMeta::load(&dir.path().join("c1.meta.json")).unwrap().identity();
    let input = Arc::new(PorepInput { c1, identity });
    match kind.job(input.clone(), JobOptions::default())() {
        Err(e @ PipelineError::Request { .. }) => {
            let m = e.chain();
            assert!(m.contains("synthetic C1") && m.contains("--no-verify"), "{m}")
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a synthetic C1 must not be proved with verification on"),
    }
    // Unverified (for timing) it is a job like any other.
    cuzk_filecoin::porep::test_params::ensure(&kind, rp, None).unwrap();
    let j = kind.job(input, JobOptions { randomness: None, verify: false })().unwrap();
    assert_eq!(j.partitions.len(), 1);
}
