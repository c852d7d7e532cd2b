//! Fuzzing (proptest) of the PCE cache reader: a valid cache file of a small circuit,
//! mutated (truncation, byte flips anywhere, spliced garbage), must load as exactly the stored
//! PCE or be rejected with a reason — never panic — and `load_or_build` must then rebuild it.
//! A second property re-seals the mutated payload with a correct length and checksum, so the
//! mutations reach the zstd decoder, bincode and the structural validation behind the
//! checksum. Also checks the committed corpus's PCE files (`fixtures/bad-inputs`). CI runs 64
//! cases per property; `PROPTEST_CASES=N` runs more.

use std::path::Path;

use cuzk_core::testing::RandomCircuit;
use cuzk_pce::cache::{self, Outcome, Reject};
use cuzk_pce::{extract, PreCompiledCircuit};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

const HEADER: usize = 8 + 4 + 32 + 8 + 32;

fn sample() -> PreCompiledCircuit {
    extract(RandomCircuit::new(5, 60, 120)).unwrap()
}

fn good_file() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.pce");
    cache::store(&p, "fuzz", &sample()).unwrap();
    std::fs::read(p).unwrap()
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Rewrites the length and checksum fields to match the (mutated) payload.
fn reseal(mut b: Vec<u8>) -> Vec<u8> {
    let len = (b.len() - HEADER) as u64;
    b[44..52].copy_from_slice(&len.to_le_bytes());
    let sum: [u8; 32] = Sha256::digest(&b[HEADER..]).into();
    b[52..84].copy_from_slice(&sum);
    b
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.pce");
    std::fs::write(&p, bytes).unwrap();
    let want = sample();
    match std::panic::catch_unwind(|| cache::load(&p, "fuzz")) {
        Err(_) => return Err(TestCaseError::fail("cache::load panicked")),
        Ok(Ok(pce)) => prop_assert!(pce == want, "a mutated file loaded as a different PCE"),
        Ok(Err(r)) => {
            prop_assert!(!r.to_string().is_empty());
            let (p2, outcome) = cache::load_or_build(&p, "fuzz", || Ok(sample())).unwrap();
            prop_assert!(p2 == want);
            prop_assert!(matches!(outcome, Outcome::Built { .. }), "not rebuilt: {outcome:?}");
            prop_assert!(cache::load(&p, "fuzz").is_ok(), "the rebuilt file does not load");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_cache_files_are_rejected_and_rebuilt(cut in any::<prop::sample::Index>(), flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..), 0..4), junk in proptest::collection::vec(any::<u8>(), 0..16)) {
        let mut b = good_file();
        for (i, v) in &flips {
            let at = i.index(b.len());
            b[at] ^= v;
        }
        let at = cut.index(b.len() + 1);
        b.truncate(at);
        b.extend_from_slice(&junk);
        check(&b)?;
    }

    #[test]
    fn resealed_payload_mutations_reach_the_decoder_safely(flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..), 1..6), cut in any::<prop::sample::Index>()) {
        let mut b = good_file();
        let payload = b.len() - HEADER;
        for (i, v) in &flips {
            let at = HEADER + i.index(payload);
            b[at] ^= v;
        }
        let keep = HEADER + 1 + cut.index(payload);
        b.truncate(keep);
        check(&reseal(b))?;
    }
}

#[test]
fn committed_corpus_pce_files_are_rejected_with_their_messages() {
    #[derive(serde::Deserialize)]
    struct Case {
        file: String,
        kind: String,
        error: String,
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/bad-inputs");
    let cases: Vec<Case> = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let mut seen = 0;
    for c in cases.iter().filter(|c| c.kind == "pce") {
        assert!(!c.error.trim().is_empty(), "{}: the manifest names no expected message", c.file);
        let r: Reject = cache::load(&dir.join(&c.file), "fuzz").unwrap_err();
        assert!(r.to_string().contains(&c.error), "{}: {r} lacks {:?}", c.file, c.error);
        seen += 1;
    }
    assert!(seen >= 4);
}
