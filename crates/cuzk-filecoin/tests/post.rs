//! WinningPoSt and WindowPoSt from real 2 KiB sectors: three sectors sealed with
//! filecoin-proofs-api, vanilla proofs drawn with filecoin-proofs-api as Curio draws them,
//! proved on the engine's CPU backend. Each proof is accepted by the official verifier
//! (`verify_winning_post` / `verify_window_post`) and is bellperson's proof byte for byte for
//! equal (r, s); a changed proof is rejected; bad requests are refused by name before any
//! parameter is looked up, and never panic.

use std::sync::{Arc, OnceLock};

use bellperson::groth16;
use blstrs::Scalar;
use cuzk_filecoin::post::fixture::SealedSectors;
use cuzk_filecoin::post::{circuit, input, registry, verify, PoSt, PostInput};
use cuzk_filecoin::Error;
use cuzk_pipeline::{Config, Engine, JobOptions};
use filecoin_proofs::SectorShape2KiB;

mod common;

const MINER: u64 = 1000;

struct World {
    _dir: tempfile::TempDir,
    sectors: SealedSectors,
    kind: Arc<PoSt>,
}

/// Three sealed 2 KiB sectors and the PoSt kind with test parameters for both PoSts (made once).
fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        common::settings().apply().unwrap();
        let kind = Arc::new(PoSt::with_settings(&common::settings()));
        for winning in [true, false] {
            kind.ensure_test_params(registry::for_size(2048, winning).unwrap(), None).unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let sectors = SealedSectors::seal(2048, 3, MINER, 7, dir.path()).unwrap();
        World { _dir: dir, sectors, kind }
    })
}

fn prove(kind: &Arc<PoSt>, input: PostInput, rs: Option<(Scalar, Scalar)>) -> Vec<u8> {
    let engine = Engine::start(Config::cpu(1, 4 << 30)).unwrap();
    let job = kind.job(Arc::new(input), JobOptions { randomness: rs.map(|rs| vec![rs]), verify: false });
    let out = engine.submit(job).unwrap().wait();
    engine.shutdown();
    out.result.unwrap_or_else(|e| panic!("{}", e.chain()))
}

/// bellperson's proof of the same circuit with the same (r, s).
fn bellperson(input: &PostInput, (r, s): (Scalar, Scalar)) -> Vec<u8> {
    let paths = circuit::param_paths(input.registered_proof).unwrap();
    let (params, _) = cuzk_core::params::load_params(&paths.params).unwrap();
    let c = circuit::circuit::<SectorShape2KiB>(input).unwrap();
    let proofs = groth16::create_proof_batch(vec![c], &params, vec![r], vec![s]).unwrap();
    let mut out = Vec::new();
    proofs[0].write(&mut out).unwrap();
    out
}

fn randomness(b: u8) -> [u8; 32] {
    let mut r = [b; 32];
    r[31] &= 0x3f; // a field element, as the chain's randomness is made one
    r
}

#[test]
fn window_and_winning_post_verify_and_equal_bellpersons_proof() {
    let w = world();
    let rs = (Scalar::from(11u64), Scalar::from(13u64));
    let cases = [
        ("window partition 0 (two sectors)", w.sectors.window_post(randomness(1), 0, &[1, 2]).unwrap()),
        ("window partition 1 (one sector, padded)", w.sectors.window_post(randomness(1), 1, &[3]).unwrap()),
        ("winning", w.sectors.winning_post(randomness(2)).unwrap()),
    ];
    for (name, input) in cases {
        input.check().unwrap_or_else(|e| panic!("{name}: {e}"));
        let ours = prove(&w.kind, input.clone(), Some(rs));
        assert_eq!(ours.len(), verify::PROOF_BYTES, "{name}");
        verify::ensure_valid(&input, &ours).unwrap_or_else(|e| panic!("{name}: the official verifier rejects our proof: {e}"));
        assert_eq!(ours, bellperson(&input, rs), "{name}: not bellperson's proof for equal r and s");
        // filecoin-proofs' own prover, on the same request and parameters, is accepted too.
        let theirs = cuzk_filecoin::post::reference_prover::prove(&input).unwrap();
        verify::ensure_valid(&input, &theirs).unwrap_or_else(|e| panic!("{name}: filecoin-proofs' proof: {e}"));
        // Fresh randomness: another proof, also valid.
        let fresh = prove(&w.kind, input.clone(), None);
        assert_ne!(fresh, ours, "{name}");
        verify::ensure_valid(&input, &fresh).unwrap();
        // A changed proof is rejected (a bit of A flipped, or another partition's proof).
        let mut bad = ours.clone();
        bad[5] ^= 1;
        assert!(verify::ensure_valid(&input, &bad).is_err(), "{name}: a damaged proof passed");
    }
}

#[test]
fn a_proof_of_one_partition_does_not_pass_for_another() {
    let w = world();
    let p0 = w.sectors.window_post(randomness(3), 0, &[1, 2]).unwrap();
    let p1 = w.sectors.window_post(randomness(3), 1, &[3]).unwrap();
    let proof0 = prove(&w.kind, p0.clone(), None);
    verify::ensure_valid(&p0, &proof0).unwrap();
    assert!(matches!(verify::ensure_valid(&p1, &proof0), Err(Error::Verification(_))));
}

#[test]
fn an_api_1_1_window_partition_past_the_first_is_judged_on_its_own() {
    // API 1.1 draws a sector's challenges from its place in the whole WindowPoSt, so
    // partition 1 cannot be judged by verify_window_post over its own sectors; it is judged
    // with filecoin-proofs' public inputs for partition 1.
    let w = world();
    let v1 = filecoin_proofs_api::RegisteredPoStProof::StackedDrgWindow2KiBV1;
    w.kind.ensure_test_params(v1, None).unwrap();
    let p1 = w.sectors.window_post_as(v1, randomness(6), 1, &[3]).unwrap();
    p1.check().unwrap();
    let proof = prove(&w.kind, p1.clone(), None);
    verify::ensure_valid(&p1, &proof).expect("partition 1 of an API 1.1 WindowPoSt verifies");
    // Claimed as partition 0, the same vanilla proof and the same SNARK are refused.
    let as_p0 = PostInput { partition_index: 0, ..p1 };
    assert!(verify::ensure_valid(&as_p0, &proof).is_err(), "partition 1's proof passed as partition 0");
    let e = as_p0.check().expect_err("partition 1's vanilla proof as partition 0").to_string();
    assert!(e.contains("do not verify"), "{e}");
}

#[track_caller]
fn message(r: cuzk_filecoin::Result<PostInput>) -> String {
    match r {
        Ok(_) => panic!("a bad request was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_post_requests_are_refused_by_name() {
    let w = world();
    let good = w.sectors.window_post(randomness(4), 0, &[1, 2]).unwrap();
    let rp = good.registered_proof;
    let new = |proofs: Vec<Vec<u8>>, randomness: &[u8], partition: usize| PostInput::new("req-7", rp, randomness, MINER, partition, proofs);
    let v = good.vanilla_proofs.clone();

    let m = message(new(v.clone(), &good.randomness[..31], 0));
    assert!(m.starts_with("req-7: ") && m.contains("31 bytes"), "{m}");
    let m = message(new(vec![v[0].clone(), v[1].clone(), v[0].clone()], &good.randomness, 0));
    assert!(m.contains("3 vanilla proofs") && m.contains("1 to 2"), "{m}");
    let m = message(new(vec![], &good.randomness, 0));
    assert!(m.contains("0 vanilla proofs"), "{m}");
    let m = message(new(vec![v[1].clone(), v[0].clone()], &good.randomness, 0));
    assert!(m.contains("ascending sector order"), "{m}");
    let m = message(new(vec![v[0].clone(), v[0].clone()], &good.randomness, 0));
    assert!(m.contains("ascending sector order"), "{m}");
    let mut cut = v[0].clone();
    cut.truncate(cut.len() / 2);
    let m = message(new(vec![cut], &good.randomness, 0));
    assert!(m.contains("vanilla proof 0") && m.contains("FallbackPoStSectorProof"), "{m}");
    let mut long = v[0].clone();
    long.extend_from_slice(&[0; 7]);
    let m = message(new(vec![long], &good.randomness, 0));
    assert!(m.contains("7 bytes left over"), "{m}");
    // A 2 KiB sector's proofs under the 32 GiB proof: refused as the wrong sector size.
    let big = registry::for_size(32 << 30, false).unwrap();
    let m = message(PostInput::new("req-8", big, &good.randomness, MINER, 0, v.clone()));
    assert!(m.starts_with("req-8: vanilla proof 0") && m.contains("for this sector size"), "{m}");
    // WinningPoSt has one partition and one sector.
    let win = registry::for_size(2048, true).unwrap();
    let m = message(PostInput::new("req-9", win, &good.randomness, MINER, 1, vec![v[0].clone()]));
    assert!(m.contains("only partition 0"), "{m}");

    // Well-formed, but the vanilla proofs were drawn for other randomness: the deep check
    // refuses them. (The miner is not bound by PoSt's vanilla proofs nor by its SNARK, so
    // another miner id is not an error that can be caught.)
    let e = new(v.clone(), &randomness(5), 0).unwrap().check().expect_err("other randomness").to_string();
    assert!(e.contains("req-7") && e.contains("do not verify"), "{e}");
    // A flipped byte inside a Merkle path.
    let mut flipped = v[0].clone();
    let at = flipped.len() - 40;
    flipped[at] ^= 0x10;
    if let Ok(input) = new(vec![flipped, v[1].clone()], &good.randomness, 0) {
        assert!(input.check().is_err(), "a tampered path passed the deep check");
    }

    // Files: a C1 output is not a PoSt file; the file form round-trips.
    let c1 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/2kib/c1.json")).unwrap();
    let m = message(PostInput::from_file_bytes("c1.json", &c1));
    assert!(m.starts_with("c1.json: ") && m.contains("not a PoSt request file"), "{m}");
    let text = serde_json::to_vec(&good.to_file()).unwrap();
    let back = PostInput::from_file_bytes("post.json", &text).unwrap();
    assert_eq!((back.registered_proof, back.randomness, back.sectors.clone()), (rp, good.randomness, good.sectors.clone()));
    let mut f = good.to_file();
    f.registered_proof = 99;
    let m = message(PostInput::from_file_bytes("post.json", &serde_json::to_vec(&f).unwrap()));
    assert!(m.contains("registered PoSt proof 99"), "{m}");
    assert!(input::MAX_VANILLA_PROOF_BYTES > v[0].len());
}

#[test]
fn pce_identity_names_the_circuit_crates_in_cargo_lock() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).unwrap();
    for pair in circuit::CIRCUIT_CRATES.split(';') {
        let (name, version) = pair.split_once('=').unwrap();
        assert!(lock.contains(&format!("name = \"{name}\"\nversion = \"{version}\"")), "{name} {version} is not in Cargo.lock");
    }
    let win = circuit::identity(registry::for_size(2048, true).unwrap()).unwrap();
    let window = circuit::identity(registry::for_size(2048, false).unwrap()).unwrap();
    assert_ne!(win, window);
    assert!(win.contains("sectors=66|challenges=1") && window.contains("sectors=2|challenges=10"), "{win}\n{window}");
}

/// Synthetic requests (sparse trees, nothing sealed) pass filecoin-proofs' vanilla check and
/// prove to proofs the official verifiers accept, at 2 KiB (a padded partition past the first
/// included); at 32 GiB their vanilla proofs pass the same check (no parameters to prove with).
#[test]
fn synthetic_post_requests_pass_the_vanilla_check_and_prove_to_verified_proofs() {
    use cuzk_filecoin::post::synthetic;
    let w = world();
    let cases = [
        ("winning", synthetic::winning_post(registry::for_size(2048, true).unwrap(), MINER, randomness(3), 1).unwrap()),
        ("window partition 0", synthetic::window_post(registry::for_size(2048, false).unwrap(), MINER, randomness(4), 3, 0, 1).unwrap()),
        (
            "window partition 1 (padded)",
            synthetic::window_post(registry::for_size(2048, false).unwrap(), MINER, randomness(4), 3, 1, 1).unwrap(),
        ),
    ];
    for (name, input) in cases {
        input.check().unwrap_or_else(|e| panic!("{name}: {e}"));
        let proof = prove(&w.kind, input.clone(), None);
        verify::ensure_valid(&input, &proof).unwrap_or_else(|e| panic!("{name}: the official verifier rejects the proof: {e}"));
    }
    let big = 32u64 << 30;
    let winning = cuzk_filecoin::post::synthetic::winning_post(registry::for_size(big, true).unwrap(), MINER, randomness(5), 2).unwrap();
    let window = synthetic::window_post(registry::for_size(big, false).unwrap(), MINER, randomness(5), 3, 0, 2).unwrap();
    for input in [winning, window] {
        input.check().unwrap_or_else(|e| panic!("32 GiB {:?}: {e}", input.registered_proof));
    }
    // Another seed, other leaves: the same request's sectors get other commitments.
    let a = synthetic::winning_post(registry::for_size(2048, true).unwrap(), MINER, randomness(3), 1).unwrap();
    let b = synthetic::winning_post(registry::for_size(2048, true).unwrap(), MINER, randomness(3), 9).unwrap();
    assert_eq!(a.sectors.len(), 1);
    assert_ne!(a.sectors[0].1, b.sectors[0].1, "the seed does not reach the sector's contents");
}

/// The engine's PoSt witness (one piece per sector in parallel, joined) is the circuit's own
/// witness value for value, for a WindowPoSt partition of two sectors, a padded one and a
/// WinningPoSt (66 pieces).
#[test]
fn the_sector_split_witness_equals_the_whole_circuits_witness() {
    let w = world();
    let cases = [
        w.sectors.window_post(randomness(6), 0, &[1, 2]).unwrap(),
        w.sectors.window_post(randomness(6), 1, &[3]).unwrap(),
        w.sectors.winning_post(randomness(7)).unwrap(),
    ];
    for input in cases {
        let (pce, _) = w.kind.shared_pce(input.registered_proof).unwrap();
        let whole = cuzk_pce::witness::checked_witness(circuit::circuit::<SectorShape2KiB>(&input).unwrap(), &pce).unwrap();
        let split = circuit::sector_split_witness(circuit::circuit::<SectorShape2KiB>(&input).unwrap(), &pce).unwrap();
        assert!(whole.inputs == split.inputs && whole.aux == split.aux, "{:?}: the split witness differs", input.registered_proof);
        // The engine's witness: native Poseidon, one piece per sector.
        let native = circuit::partition_witness(&input, &pce).unwrap();
        assert_eq!((native.inputs.len(), native.aux.len()), (whole.inputs.len(), whole.aux.len()));
        assert_eq!(cuzk_pce::witness::diff(&native.aux, &whole.aux), 0, "{:?}: the native witness differs", input.registered_proof);
        assert!(native.inputs == whole.inputs, "{:?}: the native witness's inputs differ", input.registered_proof);
    }
}

/// The native PoSt witness (Poseidon on field elements) equals the gadgets' sector by sector
/// for a real-size tree: the 32 GiB WinningPoSt (66 one-challenge pieces, base and sub tree
/// levels; a 32 GiB WindowPoSt partition is 2349 sectors of the same paths, too slow through
/// the gadgets for a test).
#[test]
fn the_native_post_witness_equals_the_gadgets_for_32_gib_trees() {
    let big = 32u64 << 30;
    let winning = cuzk_filecoin::post::synthetic::winning_post(registry::for_size(big, true).unwrap(), MINER, randomness(8), 4).unwrap();
    let r = circuit::compare_modes(&winning).unwrap();
    assert_eq!(r.pieces, 66);
    assert!(r.aux > 66 * 5000, "{} aux values for 66 challenges of a 32 GiB tree", r.aux);
    assert_eq!((r.differing_pieces, r.differing_values), (0, 0), "32 GiB WinningPoSt");
}

/// The PoSt PCE recorded one sector per piece in parallel equals the whole circuit's recording
/// (matrices, coefficient table, densities), for both 2 KiB PoSts and the 32 GiB WinningPoSt
/// (66 pieces of a real-size tree).
#[test]
fn the_sector_split_pce_equals_the_whole_circuits_recording() {
    for (size, winning) in [(2048u64, true), (2048, false), (32 << 30, true)] {
        let rp = registry::for_size(size, winning).unwrap();
        let split = circuit::extract(rp).unwrap();
        let whole = circuit::extract_whole(rp).unwrap();
        assert!(split.num_constraints > 0 && split.num_inputs > 1);
        assert!(split == whole, "{rp:?}: the split PCE differs from the whole circuit's");
    }
}
