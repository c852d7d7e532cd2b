//! The PCE of the real 2 KiB PoRep circuit: its row and input counts equal those bellperson's
//! own counting constraint system gives the blank circuit; witness + mat-vec equals the reference full
//! synthesis bit for bit on the bundled sector and on a freshly sealed one, the witness
//! satisfies the recorded constraints, the fresh sector proves on the new path with a proof
//! `verify_seal` accepts, and the compact format stays within 10 bytes per
//! non-zero; a freshly sealed 8 MiB sector matches bit for bit too. The witnesses are the
//! challenge-parallel ones (`split_witness`), computed both natively and with the circuit's
//! gadgets; on circuits made unsatisfiable (another replica id) the two still agree value for
//! value, as they must for synthetic inputs.

use std::path::{Path, PathBuf};

use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::pce::{challenge_pieces, full_syntheses, witnesses, WitnessMode};
use cuzk_filecoin::porep::sector::{SectorIdentity, SectorMeta};
use cuzk_pce::witness::{compare, split_witness};

mod common;
use storage_proofs_core::merkle::MerkleTreeTrait;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")
}

fn check_sector(c1: &C1, id: &SectorIdentity, pce: &cuzk_pce::PreCompiledCircuit) {
    let refs = full_syntheses(c1, id, 0).unwrap();
    for mode in [WitnessMode::Native, WitnessMode::Gadgets] {
        let ws = witnesses(c1, id, pce, 0, mode).unwrap();
        assert_eq!(ws.len(), refs.len());
        check_witnesses(pce, &ws, &refs);
    }
}

/// Native and gadget witnesses of every partition agree when the circuit is not satisfied:
/// the replica id is replaced, so no label matches its column any more.
fn check_unsatisfied<Tree: 'static + MerkleTreeTrait>(c1: &C1, id: &SectorIdentity, pce: &cuzk_pce::PreCompiledCircuit) {
    let mut p = cuzk_filecoin::porep::c1::prepare::<Tree>(c1, id).unwrap();
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&0x5eed_u64.to_le_bytes());
    p.public_inputs.replica_id = bytes.into();
    for k in 0..p.vanilla.len() {
        let native = split_witness(challenge_pieces(&p, k, WitnessMode::Native).unwrap(), pce).unwrap();
        let gadgets = split_witness(challenge_pieces(&p, k, WitnessMode::Gadgets).unwrap(), pce).unwrap();
        let differ = native.aux.iter().zip(&gadgets.aux).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "partition {k}: {differ} aux values differ");
        assert_eq!(native, gadgets, "partition {k}");
        let eval = pce.evaluate(&native.inputs, &native.aux).unwrap();
        let bad = eval.a.iter().zip(&eval.b).zip(&eval.c).filter(|((a, b), c)| **a * **b != **c).count();
        assert!(bad > 0, "the altered circuit should be unsatisfied");
    }
}

fn check_witnesses(pce: &cuzk_pce::PreCompiledCircuit, ws: &[cuzk_witness::WitnessCs], refs: &[cuzk_pce::reference::FullSynthesis]) {
    for (w, r) in ws.iter().zip(refs) {
        let eval = pce.evaluate(&w.inputs, &w.aux).unwrap();
        let m = compare(pce, w, &eval, r);
        assert_eq!(m.total(), 0, "{m:?}");
        assert_eq!(r.unsatisfied(), 0, "the reference witness does not satisfy the circuit");
        let bad = eval.a.iter().zip(&eval.b).zip(&eval.c).filter(|((a, b), c)| **a * **b != **c).count();
        assert_eq!(bad, 0, "{bad} PCE rows with a·b ≠ c");
    }
}

/// (rows, inputs) of `rp`'s blank partition circuit as bellperson's own counting constraint
/// system (`BenchCS`) sees it: its constraints plus the one row per input (ONE included) that
/// bellperson's prover adds.
fn counted_by_bellperson<Tree: 'static + MerkleTreeTrait>(rp: cuzk_filecoin::porep::RegisteredSealProof) -> (usize, usize) {
    use bellperson::util_cs::bench_cs::BenchCS;
    use bellperson::Circuit;
    use storage_proofs_core::compound_proof::CompoundProof;
    use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
    type Hasher = filecoin_proofs::constants::DefaultPieceHasher;
    let pp = filecoin_proofs::parameters::public_params::<Tree>(&rp.as_v1_config()).unwrap();
    let blank = <StackedCompound<Tree, Hasher> as CompoundProof<StackedDrg<'_, Tree, Hasher>, _>>::blank_circuit(&pp);
    let mut cs = BenchCS::<blstrs::Scalar>::new();
    blank.synthesize(&mut cs).unwrap();
    (cs.num_constraints() + cs.num_inputs(), cs.num_inputs())
}

#[test]
fn real_2kib_circuit_matches_bit_for_bit() {
    // Before anything reads filecoin-proofs' settings (they are fixed on first use).
    let kind = common::kind();
    let c1 = C1::load(&fixture(), None).unwrap();
    let id = SectorMeta::load(&fixture().with_file_name("c1.meta.json")).unwrap().identity();
    let pce = cuzk_filecoin::porep::pce::extract(c1.registered_proof).unwrap();
    // The counts bellperson itself makes of the same blank circuit (its counting constraint
    // system; the prover adds one row per input), computed apart from the recorder.
    assert_eq!((pce.num_constraints, pce.num_inputs), counted_by_bellperson::<filecoin_proofs::SectorShape2KiB>(c1.registered_proof));
    // ... which are DESIGN.md's published counts for the 2 KiB circuit, input rows included.
    assert_eq!((pce.num_constraints, pce.num_inputs), (2_687_961, 40));
    let per_nnz = pce.bytes() as f64 / pce.nnz() as f64;
    assert!(per_nnz <= 10.0, "{per_nnz:.2} bytes per non-zero");
    check_sector(&c1, &id, &pce);
    check_unsatisfied::<filecoin_proofs::SectorShape2KiB>(&c1, &id, &pce);

    // A freshly sealed sector of another miner shares the topology.
    let dir = tempfile::tempdir().unwrap();
    let other = SectorIdentity { miner_id: 4242, sector_number: 17 };
    cuzk_filecoin::porep::seal::gen_c1(2048, 1234, other, dir.path(), "test").unwrap();
    let fresh = C1::load(&dir.path().join("c1.json"), None).unwrap();
    check_sector(&fresh, &other, &pce);

    // ... and proves on the new path with a proof verify_seal accepts (and not for the
    // bundled sector's identity).
    cuzk_filecoin::porep::test_params::ensure(&kind, fresh.registered_proof, None).unwrap();
    let proof = common::prove_on_engine(&kind, fresh.clone(), other, None);
    use cuzk_filecoin::porep::verify::{verify_seal, Verdict};
    assert_eq!(verify_seal(&fresh, &other, &proof).unwrap(), Verdict::Valid);
    assert!(!verify_seal(&c1, &id, &proof).unwrap().is_valid());
}

#[test]
fn fresh_8mib_sector_matches_bit_for_bit() {
    // Before anything reads filecoin-proofs' settings (they are fixed on first use).
    common::kind();
    // Another topology (oct-arity Poseidon trees, more challenges): the challenge-parallel
    // witness joined in allocation order must still equal the reference synthesis.
    let dir = tempfile::tempdir().unwrap();
    let id = SectorIdentity { miner_id: 1000, sector_number: 3 };
    cuzk_filecoin::porep::seal::gen_c1(8 << 20, 77, id, dir.path(), "test").unwrap();
    let c1 = C1::load(&dir.path().join("c1.json"), None).unwrap();
    let pce = cuzk_filecoin::porep::pce::extract(c1.registered_proof).unwrap();
    assert_eq!((pce.num_constraints, pce.num_inputs), counted_by_bellperson::<filecoin_proofs::SectorShape8MiB>(c1.registered_proof));
    check_sector(&c1, &id, &pce);
    check_unsatisfied::<filecoin_proofs::SectorShape8MiB>(&c1, &id, &pce);
}

#[test]
fn identity_names_the_circuit_crates_in_cargo_lock() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).unwrap();
    for pair in cuzk_filecoin::porep::pce::CIRCUIT_CRATES.split(';') {
        let (name, version) = pair.split_once('=').unwrap();
        let entry = format!("name = \"{name}\"\nversion = \"{version}\"");
        assert!(lock.contains(&entry), "Cargo.lock has no {name} {version}: update CIRCUIT_CRATES");
    }
}
