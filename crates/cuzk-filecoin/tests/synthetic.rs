//! Synthetic C1s (`gen-c1 --synthetic`): on a synthetic 8 MiB sector the new path (native
//! witness + PCE) equals the old path's full synthesis bit for bit, and on a synthetic 32 GiB
//! partition — the real production circuit, 130 M constraints — the native witness equals the
//! gadget witness value for value, every challenge piece of it.

use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::pce::{compare_modes, full_syntheses, witnesses, WitnessMode};
use cuzk_filecoin::porep::sector::{registered_proof, SectorIdentity, SectorMeta};
use cuzk_pce::witness::compare;

fn synthetic(size: u64, seed: u64, dir: &std::path::Path) -> (C1, SectorIdentity) {
    cuzk_filecoin::porep::synthetic::write(registered_proof(size).unwrap(), seed, dir, "test").unwrap();
    let c1 = C1::load(&dir.join("c1.json"), None).unwrap();
    assert!(c1.synthetic);
    (c1, SectorMeta::load(&dir.join("c1.meta.json")).unwrap().identity())
}

#[test]
fn synthetic_8mib_new_path_equals_old_path() {
    let dir = tempfile::tempdir().unwrap();
    let (c1, id) = synthetic(8 << 20, 11, dir.path());
    let pce = cuzk_filecoin::porep::pce::extract(c1.registered_proof).unwrap();
    let ws = witnesses(&c1, &id, &pce, 0, WitnessMode::Native).unwrap();
    let refs = full_syntheses(&c1, &id, 0).unwrap();
    assert_eq!(ws.len(), refs.len());
    for (w, r) in ws.iter().zip(&refs) {
        let eval = pce.evaluate(&w.inputs, &w.aux).unwrap();
        let m = compare(&pce, w, &eval, r);
        assert_eq!(m.total(), 0, "{m:?}");
        // Random contents: the circuit is not satisfied, and the witness says so.
        assert!(r.unsatisfied() > 0, "a synthetic circuit should not be satisfied");
    }
}

#[test]
fn synthetic_32gib_partition_native_witness_equals_gadget_witness() {
    let dir = tempfile::tempdir().unwrap();
    let (c1, id) = synthetic(32 << 30, 12, dir.path());
    let r = compare_modes(&c1, &id, 0).unwrap();
    assert_eq!(r.pieces, 18, "a 32 GiB partition has 18 challenges");
    assert!(r.aux > 130_000_000, "{} aux values: not the full-size circuit", r.aux);
    assert_eq!((r.differing_pieces, r.differing_values), (0, 0), "{r:?}");
}
