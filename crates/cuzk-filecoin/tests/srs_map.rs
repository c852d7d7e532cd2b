//! Mapped parameters end to end (its own test binary: the process-wide parameter registry
//! must not already hold the decoded set): the PoRep kind with an SRS map directory proves the
//! bundled 2 KiB sector on the engine with parameters mapped from a map file built from the
//! `.params` file on first use — the same bytes as bellperson's proof for equal r and s, and
//! `verify_seal` accepts them — the resident set holds no decoded host copy, and a corrupted
//! map is rebuilt by the next load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cuzk_core::mem::StageTracer;
use cuzk_core::srs::Srs;
use cuzk_core::Scalar;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::SectorMeta;
use cuzk_filecoin::porep::test_params::ensure;
use cuzk_filecoin::porep::verify::{verify_seal, Verdict};
use cuzk_filecoin::porep::{params, reference_prover};
use cuzk_filecoin::PorepC2;
use cuzk_pipeline::ProofKind;
use ff::Field;

mod common;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")
}

#[test]
fn mapped_parameters_prove_the_same_bytes_as_bellperson_and_a_corrupt_map_is_rebuilt() {
    let decoded_kind = common::kind();
    let c1 = C1::load(&fixture(), None).unwrap();
    ensure(&decoded_kind, c1.registered_proof, None).unwrap();
    let id = SectorMeta::load(&fixture().with_file_name("c1.meta.json")).unwrap().identity();
    let maps = tempfile::tempdir().unwrap();
    let kind = Arc::new(PorepC2::with_settings(&common::settings()).with_srs_map_dir(Some(maps.path().to_path_buf())));

    let rs = vec![(Scalar::from(0x5151u64).square(), Scalar::from(0x7373u64).square())];
    let (decoded, _) = params::load(c1.registered_proof).unwrap();
    let reference = reference_prover::prove_with(&c1, &id, &decoded, Some(&rs), &StageTracer::new()).unwrap();
    let ours = common::prove_on_engine(&kind, c1.clone(), id, Some(rs));
    assert_eq!(ours, reference, "mapped parameters must give bellperson's bytes for equal r and s");
    assert_eq!(verify_seal(&c1, &id, &ours).unwrap(), Verdict::Valid);

    let (_, resident) = kind.resident(c1.registered_proof);
    let srs = resident.expect("the parameters stay resident after the proof");
    assert!(matches!(*srs, Srs::Mapped(_)), "{srs:?}");
    assert_eq!(srs.host_bytes(), 0, "a mapped set keeps no decoded host copy");
    {
        let s = srs.sections();
        assert!(
            s.h == &decoded.h[..] && s.l == &decoded.l[..] && s.b_g2 == &decoded.b_g2[..],
            "mapped points differ from the decoded ones"
        );
    }

    // One flipped byte in a section of the map: the next load (after eviction) rebuilds it.
    let map = cuzk_pipeline::resources::srs_map_path(maps.path(), &kind.params_path(&c1.registered_proof).unwrap());
    assert!(map.exists(), "{} was not written", map.display());
    drop(srs);
    kind.evict(c1.registered_proof);
    // The corrupt copy replaces the map by rename, as any writer of it must (see srs_map).
    let mut bytes = std::fs::read(&map).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    let corrupt = map.with_extension("corrupt");
    std::fs::write(&corrupt, &bytes).unwrap();
    std::fs::rename(&corrupt, &map).unwrap();
    let again = common::prove_on_engine(&kind, c1.clone(), id, None);
    assert_eq!(verify_seal(&c1, &id, &again).unwrap(), Verdict::Valid, "a proof after the rebuild must verify");
    // (assert!, not assert_ne!: a failure must not format two 1 GiB vectors.)
    assert!(std::fs::read(&map).unwrap() != bytes, "the corrupt map must have been rebuilt");
}
