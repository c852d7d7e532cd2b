//! The checks a C1 output passes before any proving: each bad input below must give a clear
//! error that names the file and the problem, never a panic.

use std::path::{Path, PathBuf};

use cuzk_filecoin::porep::c1::{prepare, C1};
use cuzk_filecoin::porep::seal::gen_c1;
use cuzk_filecoin::porep::sector::{registered_proof, SectorIdentity, SectorMeta};
use cuzk_filecoin::Error;
use filecoin_proofs::constants::SectorShape2KiB;
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")
}

fn identity() -> SectorIdentity {
    SectorMeta::load(&fixture().with_file_name("c1.meta.json")).unwrap().identity()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn check(path: &Path, id: &SectorIdentity) -> Result<(), Error> {
    let c1 = C1::load(path, None)?;
    prepare::<SectorShape2KiB>(&c1, id).map(|_| ())
}

fn edited(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn bundled_fixture_passes_every_check() {
    let c1 = C1::load(&fixture(), None).unwrap();
    assert!(c1.wrapped);
    assert_eq!(c1.sector_size(), 2048);
    prepare::<SectorShape2KiB>(&c1, &identity()).unwrap();
}

#[test]
fn truncated_and_non_json_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(fixture()).unwrap();
    let p = write(dir.path(), "cut.json", &full[..full.len() / 2]);
    let e = C1::load(&p, None).unwrap_err().to_string();
    assert!(e.contains("cut.json") && e.contains("truncated"), "{e}");
    let p = write(dir.path(), "junk.json", b"\x00\x01 this is not json");
    let e = C1::load(&p, None).unwrap_err().to_string();
    assert!(e.contains("junk.json") && e.contains("not JSON"), "{e}");
    let p = write(dir.path(), "other.json", br#"{"hello": "world"}"#);
    let e = C1::load(&p, None).unwrap_err().to_string();
    assert!(e.contains("other.json") && e.contains("not a C1"), "{e}");
    let p = write(dir.path(), "empty.json", b"");
    assert!(C1::load(&p, None).unwrap_err().to_string().contains("empty"));
    let e = C1::load(&dir.path().join("absent.json"), None).unwrap_err().to_string();
    assert!(e.contains("absent.json"), "{e}");
}

#[test]
fn wrong_sector_size_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    // The caller expects 8 MiB but the file is a 2 KiB C1.
    let e = C1::load(&fixture(), Some(registered_proof(8 << 20).unwrap())).unwrap_err();
    assert!(matches!(e, Error::SectorSize(_)), "{e}");
    assert!(e.to_string().contains("2KiB") && e.to_string().contains("8MiB"), "{e}");
    // The file claims 8 MiB but carries 2 KiB proofs.
    let p = write(dir.path(), "claims8m.json", &edited(|v| v["registered_proof"] = "StackedDrg8MiBV1_1".into()));
    let e = C1::load(&p, None).unwrap_err().to_string();
    assert!(e.contains("claims8m.json") && e.contains("StackedDrg2KiBV1"), "{e}");
}

#[test]
fn plain_filecoin_proofs_form_is_accepted_with_a_size() {
    let dir = tempfile::tempdir().unwrap();
    let plain = edited(|v| {
        let o = v.as_object_mut().unwrap();
        o.remove("registered_proof");
        let inner = o["vanilla_proofs"]["StackedDrg2KiBV1"].take();
        o.insert("vanilla_proofs".into(), inner);
    });
    let p = write(dir.path(), "plain.json", &plain);
    let e = C1::load(&p, None).unwrap_err().to_string();
    assert!(e.contains("--sector-size"), "{e}");
    let c1 = C1::load(&p, Some(registered_proof(2048).unwrap())).unwrap();
    assert!(!c1.wrapped);
    prepare::<SectorShape2KiB>(&c1, &identity()).unwrap();
}

#[test]
fn c1_for_another_sector_is_rejected() {
    // Right file, wrong claimed identity.
    let mut other = identity();
    other.sector_number += 1;
    let e = check(&fixture(), &other).unwrap_err().to_string();
    assert!(e.contains("another sector") && e.contains("c1.json"), "{e}");

    // Commitments of one sector with the vanilla proofs of another.
    let dir = tempfile::tempdir().unwrap();
    gen_c1(2048, 99, identity(), dir.path(), "test").unwrap();
    let theirs: Value = serde_json::from_slice(&std::fs::read(dir.path().join("c1.json")).unwrap()).unwrap();
    let mixed = edited(|v| v["vanilla_proofs"] = theirs["vanilla_proofs"].clone());
    let p = write(dir.path(), "mixed.json", &mixed);
    let e = check(&p, &identity()).unwrap_err().to_string();
    assert!(e.contains("do not verify") && e.contains("mixed.json"), "{e}");
}

#[test]
fn removed_merkle_path_element_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    for (label, pointer) in [
        ("comm_d", "/vanilla_proofs/StackedDrg2KiBV1/0/0/comm_d_proofs/data/Single/path/path"),
        ("comm_r_last", "/vanilla_proofs/StackedDrg2KiBV1/0/1/comm_r_last_proof/data/Single/path/path"),
    ] {
        let bytes = edited(|v| {
            let path = v.pointer_mut(pointer).unwrap().as_array_mut().unwrap();
            assert!(path.len() > 1);
            path.pop();
        });
        let p = write(dir.path(), &format!("{label}.json"), &bytes);
        let e = check(&p, &identity()).unwrap_err().to_string();
        assert!(e.contains(&format!("{label} path")) && e.contains("levels"), "{label}: {e}");
    }
    // A sibling hash removed from one level.
    let bytes = edited(|v| {
        let hashes = v
            .pointer_mut("/vanilla_proofs/StackedDrg2KiBV1/0/0/comm_r_last_proof/data/Single/path/path/0/hashes")
            .unwrap()
            .as_array_mut()
            .unwrap();
        hashes.pop();
    });
    let p = write(dir.path(), "sibling.json", &bytes);
    let e = check(&p, &identity()).unwrap_err().to_string();
    assert!(e.contains("siblings"), "{e}");
}

#[test]
fn gen_c1_is_deterministic_for_a_seed() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ma = gen_c1(2048, 7, identity(), a.path(), "t").unwrap();
    let mb = gen_c1(2048, 7, identity(), b.path(), "t").unwrap();
    assert_eq!(ma, mb);
    let c1 = C1::load(&a.path().join("c1.json"), None).unwrap();
    prepare::<SectorShape2KiB>(&c1, &identity()).unwrap();
}

/// Curio's c1.json form ({"SectorNum", "Phase1Out": base64 of the C1 output, "SectorSize"})
/// parses to the same C1 as the bare JSON; a wrong SectorSize in the envelope is refused.
#[test]
fn curio_phase1out_envelope_parses_like_the_bare_c1() {
    use base64::Engine as _;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json");
    let bare = std::fs::read(&path).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bare);
    let env = format!("{{\"SectorNum\":1,\"Phase1Out\":\"{b64}\",\"SectorSize\":2048}}");
    let a = cuzk_filecoin::porep::c1::C1::parse(&path, &bare, None).unwrap();
    let b = cuzk_filecoin::porep::c1::C1::parse(&path, env.as_bytes(), None).unwrap();
    assert_eq!((a.registered_proof, a.comm_r, a.comm_d, a.seed, a.ticket), (b.registered_proof, b.comm_r, b.comm_d, b.seed, b.ticket));
    let wrong = env.replace("\"SectorSize\":2048", "\"SectorSize\":8388608");
    let e = cuzk_filecoin::porep::c1::C1::parse(&path, wrong.as_bytes(), None).unwrap_err().to_string();
    assert!(e.contains("SectorSize 8388608"), "{e}");
}
