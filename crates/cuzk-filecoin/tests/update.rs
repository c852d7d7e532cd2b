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

/// A synthetic request made with the real request's commitments has the real structure: as
/// many partition proofs, each of the same encoded length, every Merkle path at the same
/// leaf as filecoin-proofs-api's (challenges drawn from comm_r_new alike). It proves on the
/// engine with verification off, is refused where a verified proof is wanted, and its file
/// form keeps the mark (a real request's has none).
#[test]
fn a_synthetic_update_has_the_real_structure_and_proves_only_unverified() {
    use cuzk_filecoin::update::synthetic;
    use filecoin_proofs::types::PartitionProof;
    let w = world();
    let real = &w.input;
    let comms = [real.comm_r_old, real.comm_r_new, real.comm_d_new];
    let fake = synthetic::update_with(real.registered_proof, comms, 7).unwrap();
    assert!(fake.synthetic && !real.synthetic);
    assert_eq!(fake.vanilla_proofs.len(), real.vanilla_proofs.len());
    for (k, (f, r)) in fake.vanilla_proofs.iter().zip(&real.vanilla_proofs).enumerate() {
        assert_eq!(f.len(), r.len(), "partition {k}: encoded lengths differ");
        assert_ne!(f, r);
        let (f, r): (PartitionProof<SectorShape2KiB>, PartitionProof<SectorShape2KiB>) =
            (input::decode(f).unwrap(), input::decode(r).unwrap());
        assert_eq!(f.challenge_proofs.len(), r.challenge_proofs.len());
        for (c, (f, r)) in f.challenge_proofs.iter().zip(&r.challenge_proofs).enumerate() {
            let at = |p: &storage_proofs_update::ChallengeProof<SectorShape2KiB>| {
                use storage_proofs_core::merkle::MerkleProofTrait;
                [p.proof_r_old.path_index(), p.proof_d_new.path_index(), p.proof_r_new.path_index()]
            };
            assert_eq!(at(f), at(r), "partition {k}, challenge {c}: paths at other leaves");
        }
    }

    // Random contents: the deep check is skipped, verification refused by name.
    w.kind.check(&fake, false).unwrap();
    let e = w.kind.check(&fake, true).unwrap_err().to_string();
    assert!(e.contains("synthetic") && e.contains("--no-verify"), "{e}");
    let mut unmarked = fake.clone();
    unmarked.synthetic = false;
    assert!(w.kind.check(&unmarked, false).unwrap_err().to_string().contains("do not verify"));
    let proof = prove(&w.kind, fake.clone(), None);
    assert_eq!(proof.len(), 192 * fake.vanilla_proofs.len());
    assert!(verify::ensure_valid(&fake, &proof).is_err());

    let file = serde_json::to_value(fake.to_file()).unwrap();
    assert_eq!(file["cuzk_synthetic"], true);
    let again = UpdateInput::from_file_bytes("again", &serde_json::to_vec(&file).unwrap()).unwrap();
    assert!(again.synthetic && again.vanilla_proofs == fake.vanilla_proofs);
    assert!(serde_json::to_value(real.to_file()).unwrap().get("cuzk_synthetic").is_none());
}

/// At 32 GiB (16 partitions, oct trees with an oct sub-tree): made in seconds, and every
/// partition proof passes the request's shape checks for that size.
#[test]
fn a_synthetic_32gib_update_passes_the_shape_checks() {
    use cuzk_filecoin::update::synthetic;
    let rp = registry::for_size(32 << 30).unwrap();
    let t = std::time::Instant::now();
    let fake = synthetic::update(rp, 1).unwrap();
    let pp = input::public_params(rp);
    assert_eq!(fake.vanilla_proofs.len(), pp.partition_count);
    assert_eq!(pp.partition_count, 16);
    let again = UpdateInput::new("again", rp, &fake.comm_r_old, &fake.comm_r_new, &fake.comm_d_new, fake.vanilla_proofs.clone());
    assert!(again.is_ok(), "{:?}", again.err());
    eprintln!(
        "32 GiB synthetic update: {} bytes in {:.1} s",
        fake.vanilla_proofs.iter().map(Vec::len).sum::<usize>(),
        t.elapsed().as_secs_f64()
    );
}

/// The engine's SnapDeals witness (native SHA-256 and Poseidon, challenges in parallel) equals
/// the circuit's own gadgets value for value: the real 2 KiB request, and partition 5 of a
/// synthetic 32 GiB request (the production shape: 86 challenges, the oct-tree with its sub-tree
/// level, 128 apex leaves, h from 7 to 12; random contents, which the witness need not satisfy).
#[test]
fn the_native_update_witness_equals_the_gadgets() {
    let w = world();
    let r = circuit::compare_modes(&w.input, 0).unwrap();
    assert!(r.aux > 1000, "{} aux values", r.aux);
    assert_eq!(r.differing_values, 0, "2 KiB: the native witness differs");
    let big = cuzk_filecoin::update::synthetic::update(registry::for_size(32 << 30).unwrap(), 3).unwrap();
    let r = circuit::compare_modes(&big, 5).unwrap();
    assert!(r.aux > 80_000_000, "{} aux values in a 32 GiB partition", r.aux);
    assert_eq!(r.differing_values, 0, "32 GiB partition 5: the native witness differs");
}
