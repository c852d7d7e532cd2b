//! PoRep variants beyond V1_1, sealed by filecoin-proofs-api itself at 2 KiB and proved on the
//! engine's CPU backend:
//! - `StackedDrg2KiBV1_1_Feat_SyntheticPoRep` (synthetic challenges' proofs generated after
//!   pre-commit, as the API requires): `verify_seal` accepts the proof; one circuit, one
//!   parameter copy with V1_1;
//! - `StackedDrg2KiBV1_2_Feat_NonInteractivePoRep` (13 partitions; the proof is their SnarkPack
//!   aggregate): `verify_seal` accepts it, one circuit and parameter copy with V1_1, flipped
//!   bytes are rejected, the C1 claimed as V1_1 is refused, and with no SnarkPack SRS the
//!   request is refused, naming the file, before anything is proved or loaded (in a child
//!   process with an empty parameter directory).

use std::sync::Arc;
use std::time::Instant;

use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::{SectorIdentity, SectorMeta};
use cuzk_filecoin::porep::{ni, seal, test_params, verify, PorepInput, RegisteredSealProof};
use cuzk_pipeline::{Config, Engine, JobOptions, PipelineError, ProofKind};

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
    assert_eq!(kind.circuit_id(&rp), kind.circuit_id(&plain));
    let (a, b) = (kind.resident(rp), kind.resident(plain));
    assert!(std::sync::Arc::ptr_eq(a.0.as_ref().unwrap(), b.0.as_ref().unwrap()), "two PCE copies of one circuit");
    assert!(std::sync::Arc::ptr_eq(a.1.as_ref().unwrap(), b.1.as_ref().unwrap()), "two parameter copies of one circuit");
    let mut bad = proof.clone();
    bad[10] ^= 1;
    assert!(verify::ensure_valid(&c1, &identity, &bad).is_err());
}

/// Set (to the directory of an NI C1) in the child process of the missing-SRS check.
const CHILD: &str = "CUZK_TEST_NI_NO_SRS_C1_DIR";
const CHILD_TEST: &str = "child_a_missing_srs_refuses_a_non_interactive_request_before_proving";

#[test]
fn a_non_interactive_porep_c1_proves_aggregates_and_verify_seal_accepts_it() {
    let kind = common::kind();
    let rp = RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;
    let plain = RegisteredSealProof::StackedDrg2KiBV1_1;
    // The partition circuit is V1_1's (filecoin-proofs names the same parameter set).
    assert_eq!(kind.circuit_id(&rp), kind.circuit_id(&plain));
    let dir = tempfile::tempdir().unwrap();
    let identity = SectorIdentity { miner_id: 1000, sector_number: 9 };
    let t = Instant::now();
    seal::gen_c1_as(rp, 5, identity, dir.path(), "test").unwrap();
    let seal_s = t.elapsed().as_secs_f64();
    let path = dir.path().join("c1.json");
    let c1 = C1::load(&path, None).unwrap();
    assert_eq!(c1.registered_proof, rp);
    let partitions = usize::from(c1.porep_config().partitions);
    assert_eq!(partitions, 13, "NI-PoRep at 2 KiB: 13 partitions of 2 challenges");
    let meta = SectorMeta::load(&dir.path().join("c1.meta.json")).unwrap();
    assert_eq!((meta.registered_proof, meta.identity()), (rp, identity));

    let t = Instant::now();
    test_params::ensure(&kind, rp, None).unwrap();
    assert!(ni::srs_path().exists(), "test parameters come with a test SnarkPack SRS");
    ni::check_srs(rp).unwrap();
    let params_s = t.elapsed().as_secs_f64();

    // Proved on the engine (13 partitions), aggregated, and accepted by verify_seal.
    let t = Instant::now();
    let proof = common::prove_on_engine(&kind, c1.clone(), identity, None);
    let prove_s = t.elapsed().as_secs_f64();
    assert_eq!(proof.len(), ni::aggregate_len(partitions), "a SnarkPack aggregate of 16 proofs");
    let t = Instant::now();
    verify::ensure_valid(&c1, &identity, &proof).expect("verify_seal accepts the NI-PoRep aggregate");
    let verify_s = t.elapsed().as_secs_f64();
    // One circuit, one parameter set with V1_1: one resident copy.
    let (a, b) = (kind.resident(rp), kind.resident(plain));
    assert!(Arc::ptr_eq(a.0.as_ref().unwrap(), b.0.as_ref().unwrap()), "two PCE copies of one circuit");
    assert!(Arc::ptr_eq(a.1.as_ref().unwrap(), b.1.as_ref().unwrap()), "two parameter copies of one circuit");

    // Damaged proofs are rejected: a flipped byte in a commitment, in an opening, in the count.
    for at in [10, proof.len() - 10, 5 * 288 + 48] {
        let mut bad = proof.clone();
        bad[at] ^= 1;
        assert!(verify::ensure_valid(&c1, &identity, &bad).is_err(), "byte {at} flipped");
    }
    assert!(verify::ensure_valid(&c1, &identity, &proof[..proof.len() - 1]).is_err());

    // The NI C1 claimed as V1_1 (its registered proof edited) is refused before proving.
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["registered_proof"] = "StackedDrg2KiBV1_1".into();
    let claimed = dir.path().join("claims-v1_1.json");
    std::fs::write(&claimed, serde_json::to_vec(&v).unwrap()).unwrap();
    let as_plain = C1::load(&claimed, None).unwrap();
    assert_eq!(as_plain.registered_proof, plain);
    let e = kind.check(&PorepInput { c1: as_plain.clone(), identity }, true).unwrap_err().to_string();
    assert!(e.contains("13 partitions") && e.contains("has 1"), "{e}");
    // Nor does the NI aggregate pass for a V1_1 proof of the sector.
    assert!(verify::ensure_valid(&as_plain, &identity, &proof).is_err());

    // With no SRS, the request is refused before anything is proved: a child process with an
    // empty parameter directory (filecoin-proofs reads its directory once per process).
    let empty = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.path())
        .env("FIL_PROOFS_PARAMETER_CACHE", empty.path())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "child:\n{text}");
    assert!(std::fs::read_dir(empty.path()).unwrap().next().is_none(), "the refused request wrote into the parameter directory");

    eprintln!(
        "NI-PoRep 2 KiB timings: seal+C1 {seal_s:.2} s, params+SRS {params_s:.2} s, engine prove+aggregate {prove_s:.2} s, \
         verify_seal {verify_s:.2} s"
    );
}

/// The child of the test above (does nothing unless it is that child): the SRS file is missing.
#[test]
fn child_a_missing_srs_refuses_a_non_interactive_request_before_proving() {
    let Some(dir) = std::env::var_os(CHILD) else { return };
    let kind = common::kind();
    let dir = std::path::PathBuf::from(dir);
    let c1 = C1::load(&dir.join("c1.json"), None).unwrap();
    let rp = c1.registered_proof;
    let identity = SectorMeta::load(&dir.join("c1.meta.json")).unwrap().identity();
    let srs = ni::srs_path();
    assert!(!srs.exists());
    let input = Arc::new(PorepInput { c1, identity });
    // The cheap checks name it, in one line.
    let e = kind.check(&input, true).unwrap_err().to_string();
    assert!(e.contains(&srs.display().to_string()) && e.contains("SnarkPack SRS") && !e.contains('\n'), "{e}");
    // The engine refuses it on the parse stage: nothing proved, nothing loaded.
    let engine = Engine::start(Config::cpu(1, 8 << 30)).unwrap();
    let out = engine.submit(kind.job(input, JobOptions::default())).unwrap().wait();
    let proved = engine.stats().partitions_proved.load(std::sync::atomic::Ordering::Relaxed);
    engine.shutdown();
    let err = out.result.unwrap_err();
    assert!(matches!(err, PipelineError::Request { .. }), "{}", err.chain());
    assert!(err.chain().contains(&srs.display().to_string()), "{}", err.chain());
    assert_eq!(proved, 0);
    let (pce, params) = kind.resident(rp);
    assert!(pce.is_none() && params.is_none(), "a refused request loaded its circuit");
}
