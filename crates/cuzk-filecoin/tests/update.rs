//! SnapDeals from a real 2 KiB sector: sealed with filecoin-proofs-api, new data encoded into
//! it and the update's partition proofs drawn by filecoin-proofs-api as Curio draws them,
//! proved on the engine's CPU backend. The proof is accepted by the official verifier
//! (`verify_empty_sector_update_proof`) and is bellperson's proof byte for byte for equal
//! (r, s); filecoin-proofs' own proof under the same parameters verifies too; a changed proof
//! is rejected; bad requests are refused by name before any parameter is looked up.

use std::sync::{Arc, OnceLock};

use bellperson::groth16;
use blstrs::Scalar;
use cuzk_filecoin::update::{circuit, input, reference_prover, registry, verify, SnapDeals, UpdateInput};
use cuzk_filecoin::Error;
use cuzk_pipeline::{Config, Engine, JobOptions};
use filecoin_proofs::SectorShape2KiB;

mod common;

struct World {
    _dir: tempfile::TempDir,
    input: UpdateInput,
    kind: Arc<SnapDeals>,
}

/// A sealed and updated 2 KiB sector's request and the kind with test parameters (made once).
fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        common::settings().apply().unwrap();
        let kind = Arc::new(SnapDeals::with_settings(&common::settings()));
        kind.ensure_test_params(registry::for_size(2048).unwrap(), None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let input = cuzk_filecoin::update::fixture::sealed_update(2048, 1000, 5, dir.path()).unwrap();
        World { _dir: dir, input, kind }
    })
}

fn prove(kind: &Arc<SnapDeals>, input: UpdateInput, rs: Option<(Scalar, Scalar)>) -> Vec<u8> {
    let engine = Engine::start(Config::cpu(1, 4 << 30)).unwrap();
    let job = kind.job(Arc::new(input), JobOptions { randomness: rs.map(|rs| vec![rs]), verify: false });
    let out = engine.submit(job).unwrap().wait();
    engine.shutdown();
    out.result.unwrap_or_else(|e| panic!("{}", e.chain()))
}

/// bellperson's proof of the same partition circuit with the same (r, s).
fn bellperson(input: &UpdateInput, (r, s): (Scalar, Scalar)) -> Vec<u8> {
    let paths = circuit::param_paths(input.registered_proof).unwrap();
    let (params, _) = cuzk_core::params::load_params(&paths.params).unwrap();
    let circuits = circuit::checked_circuits::<SectorShape2KiB>(input).unwrap();
    let n = circuits.len();
    let proofs = groth16::create_proof_batch(circuits, &params, vec![r; n], vec![s; n]).unwrap();
    let mut out = Vec::new();
    for p in proofs {
        p.write(&mut out).unwrap();
    }
    out
}

#[test]
fn an_update_proof_verifies_and_equals_bellpersons_proof() {
    let w = world();
    w.input.check().expect("the drawn partition proofs verify");
    let rs = (Scalar::from(17u64), Scalar::from(19u64));
    let ours = prove(&w.kind, w.input.clone(), Some(rs));
    assert_eq!(ours.len(), verify::PARTITION_PROOF_BYTES * input::public_params(w.input.registered_proof).partition_count);
    verify::ensure_valid(&w.input, &ours).unwrap_or_else(|e| panic!("the official verifier rejects our proof: {e}"));
    assert_eq!(ours, bellperson(&w.input, rs), "not bellperson's proof for equal (r, s)");

    let theirs = reference_prover::prove(&w.input).unwrap();
    verify::ensure_valid(&w.input, &theirs).expect("filecoin-proofs' proof under the same parameters");

    let fresh = prove(&w.kind, w.input.clone(), None);
    verify::ensure_valid(&w.input, &fresh).unwrap();
    let mut bad = fresh.clone();
    bad[10] ^= 1;
    assert!(verify::ensure_valid(&w.input, &bad).is_err(), "a damaged proof passed");
    // The proof binds the commitments: the same proof for another comm_d_new fails.
    let mut other = w.input.clone();
    other.comm_d_new = w.input.comm_r_new;
    assert!(verify::ensure_valid(&other, &fresh).is_err(), "the proof passed for another comm_d_new");
}

fn message(r: cuzk_filecoin::Result<UpdateInput>) -> String {
    match r {
        Ok(_) => panic!("a bad request was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_update_requests_are_refused_by_name() {
    let w = world();
    let i = &w.input;
    let rp = i.registered_proof;
    let new = |rp, old: &[u8], new: &[u8], d: &[u8], proofs: Vec<Vec<u8>>| UpdateInput::new("req", rp, old, new, d, proofs);

    // Wrong partition count.
    let m = message(new(rp, &i.comm_r_old, &i.comm_r_new, &i.comm_d_new, vec![]));
    assert!(m.contains("0 partition proofs"), "{m}");
    let two = vec![i.vanilla_proofs[0].clone(); 2];
    assert!(message(new(rp, &i.comm_r_old, &i.comm_r_new, &i.comm_d_new, two)).contains("2 partition proofs"));
    // Commitments of the wrong length or not field elements.
    assert!(
        message(new(rp, &i.comm_r_old[..31], &i.comm_r_new, &i.comm_d_new, i.vanilla_proofs.clone())).contains("comm_r_old has 31 bytes")
    );
    assert!(message(new(rp, &i.comm_r_old, &[0xff; 32], &i.comm_d_new, i.vanilla_proofs.clone())).contains("comm_r_new"));
    // Truncated, padded and foreign partition proofs.
    let mut cut = i.vanilla_proofs[0].clone();
    cut.truncate(cut.len() - 7);
    assert!(message(new(rp, &i.comm_r_old, &i.comm_r_new, &i.comm_d_new, vec![cut])).contains("not a PartitionProof"));
    let mut long = i.vanilla_proofs[0].clone();
    long.extend([0u8; 5]);
    assert!(message(new(rp, &i.comm_r_old, &i.comm_r_new, &i.comm_d_new, vec![long])).contains("5 bytes left over"));
    let c1 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/2kib/c1.json")).unwrap();
    let m = message(new(rp, &i.comm_r_old, &i.comm_r_new, &i.comm_d_new, vec![c1.clone()]));
    assert!(m.contains("partition proof 0"), "{m}");
    // A C1 file where an update request file is expected.
    assert!(message(UpdateInput::from_file_bytes("c1.json", &c1)).contains("not a SnapDeals request file"));
    // 2 KiB proofs under the 32 GiB registered proof (16 partitions expected).
    let big = registry::for_size(32 << 30).unwrap();
    assert!(message(new(big, &i.comm_r_old, &i.comm_r_new, &i.comm_d_new, i.vanilla_proofs.clone()))
        .contains("a StackedDrg32GiBV1 update has 16"));

    // Commitments that do not match the partition proofs: well formed, refused by the deep
    // check, by name, before any parameter is looked up.
    let swapped = new(rp, &i.comm_r_new, &i.comm_r_old, &i.comm_d_new, i.vanilla_proofs.clone()).unwrap();
    let e = swapped.check().unwrap_err();
    assert!(matches!(e, Error::UpdateInput { .. }) && e.to_string().contains("do not verify"), "{e}");
    // The file form round-trips.
    let bytes = serde_json::to_vec(&i.to_file()).unwrap();
    let back = UpdateInput::from_file_bytes("f", &bytes).unwrap();
    assert_eq!(
        (back.comm_r_old, back.comm_r_new, back.comm_d_new, &back.vanilla_proofs),
        (i.comm_r_old, i.comm_r_new, i.comm_d_new, &i.vanilla_proofs)
    );
}

#[test]
fn pce_identity_names_the_update_circuit_crates_in_cargo_lock() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).unwrap();
    for pin in circuit::CIRCUIT_CRATES.split(';') {
        let (name, version) = pin.split_once('=').unwrap();
        assert!(lock.contains(&format!("name = \"{name}\"\nversion = \"{version}\"")), "{name} {version} is not in Cargo.lock");
    }
    // The update circuit's parameter file is not the PoRep circuit's.
    let update = circuit::param_paths(registry::for_size(2048).unwrap()).unwrap();
    let porep = cuzk_filecoin::porep::params::ParamPaths::for_proof(cuzk_filecoin::RegisteredSealProof::StackedDrg2KiBV1_1).unwrap();
    assert_ne!(update.params, porep.params);
    assert!(update.params.to_string_lossy().contains("empty-sector-update"), "{}", update.params.display());
}
