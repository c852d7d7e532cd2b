//! Fuzzing (proptest) of the two readers that take outside bytes in cuzk-core: the C1 parser
//! and the `.params` structure check. Mutations of the real 2 KiB C1 and of a valid parameter
//! header (truncation, byte flips, spliced garbage, huge length fields) must give an error
//! naming the file, or parse — never panic, and never allocate from a length field (the
//! params reader only ever compares counts against the bytes present). Also runs the committed
//! corpus `fixtures/bad-inputs/manifest.json`: every file there must be listed with a
//! non-empty message and be rejected with it. CI runs 64 cases per property; `PROPTEST_CASES=N` runs more.

use std::path::{Path, PathBuf};

use cuzk_core::params::check_params_file;
use cuzk_filecoin::porep::c1::C1;
use proptest::prelude::*;

mod common;
use common::mutate::{apply, config, mutation};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture() -> Vec<u8> {
    std::fs::read(root().join("fixtures/2kib/c1.json")).unwrap()
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn c1_parser_never_panics(m in mutation(fixture().len())) {
        let bytes = apply(fixture(), &m);
        let path = Path::new("fuzzed-c1.json");
        match std::panic::catch_unwind(|| C1::parse(path, &bytes, None)) {
            Err(_) => prop_assert!(false, "C1::parse panicked on {m:?}"),
            Ok(Err(e)) => prop_assert!(e.to_string().contains("fuzzed-c1.json"), "error does not name the file: {e}"),
            Ok(Ok(c1)) => {
                // A mutation that still parses (in a hash, say) must still be a 2 KiB C1;
                // the replica-id and path-shape checks catch the rest before proving.
                prop_assert_eq!(c1.sector_size(), 2048);
            }
        }
    }

    #[test]
    fn params_reader_never_panics_or_trusts_a_count(
        counts in proptest::collection::vec(prop_oneof![0u32..4, any::<u32>()], 6),
        cut in any::<prop::sample::Index>(),
        flip in any::<(prop::sample::Index, u8)>(),
    ) {
        // A small file: the fixed verifying key, then six sections with the drawn counts and
        // at most a few points' worth of bytes behind them.
        let mut b = vec![0u8; 864];
        for (k, n) in counts.iter().enumerate() {
            b.extend_from_slice(&n.to_be_bytes());
            let point = if k == 5 { 192 } else { 96 };
            b.extend(std::iter::repeat_n(7u8, (*n).min(3) as usize * point));
        }
        let (i, v) = flip;
        let at = i.index(b.len());
        b[at] ^= v;
        b.truncate(cut.index(b.len() + 1));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fuzzed.params");
        std::fs::write(&p, &b).unwrap();
        match std::panic::catch_unwind(|| check_params_file(&p)) {
            Err(_) => prop_assert!(false, "check_params_file panicked"),
            Ok(Ok(layout)) => prop_assert_eq!(layout.file_bytes, b.len(), "accepted only when the counts add up to the file"),
            Ok(Err(e)) => prop_assert!(e.to_string().contains("fuzzed.params"), "{e}"),
        }
    }
}

#[derive(serde::Deserialize)]
struct Case {
    file: String,
    kind: String,
    error: String,
}

/// The committed bad inputs, each with the message it must produce (PCE files are checked by
/// cuzk-pce's own corpus test).
#[test]
fn committed_corpus_is_rejected_with_its_messages() {
    let dir = root().join("fixtures/bad-inputs");
    let cases: Vec<Case> = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    // Every entry names its message (an empty one is contained in every error, so it would
    // pass whatever the reader said), and every file of the corpus has an entry.
    for c in &cases {
        assert!(!c.error.trim().is_empty(), "{}: the manifest names no expected message", c.file);
        assert!(dir.join(&c.file).is_file(), "{}: listed but missing", c.file);
    }
    let listed: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.file.as_str()).collect();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(name == "manifest.json" || listed.contains(name.as_str()), "{name}: in the corpus but not in the manifest");
    }
    let mut seen = 0;
    for c in cases.iter().filter(|c| c.kind != "pce") {
        let p = dir.join(&c.file);
        let err = match c.kind.as_str() {
            "c1" => C1::parse(&p, &std::fs::read(&p).unwrap(), None).err().map(|e| e.to_string()),
            "params" => check_params_file(&p).err().map(|e| e.to_string()),
            k => panic!("unknown kind {k}"),
        };
        let err = err.unwrap_or_else(|| panic!("{} was accepted", c.file));
        assert!(err.contains(&c.file), "{}: the error does not name the file: {err}", c.file);
        eprintln!("corpus {}: {err}", c.file);
        assert!(err.contains(&c.error), "{}: {err:?} lacks {:?}", c.file, c.error);
        seen += 1;
    }
    assert!(seen >= 10, "the corpus shrank to {seen} files");
}
