//! Fuzzing (proptest) of the PoSt request reader: real 2 KiB vanilla proofs (one WindowPoSt
//! partition of two sealed sectors), mutated — truncated, bytes flipped, garbage spliced in,
//! a length field made huge — go through `PostInput::new` and, when that accepts them, the
//! deep check `PostInput::check` (filecoin-proofs' vanilla verification). Each gives a result
//! or an error naming the request, never a panic; a mutated request that passes both must
//! still be a well-formed 2 KiB request. CI runs 48 cases; `PROPTEST_CASES=N` runs more.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cuzk_filecoin::post::fixture::SealedSectors;
use cuzk_filecoin::post::PostInput;
use proptest::prelude::*;

fn good() -> &'static PostInput {
    static GOOD: OnceLock<PostInput> = OnceLock::new();
    GOOD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let sealed = SealedSectors::seal(2048, 2, 1000, 11, dir.path()).unwrap();
        sealed.window_post([5; 32].map(|b| b & 0x3f), 0, &[1, 2]).unwrap()
    })
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    Splice(usize, Vec<u8>),
    /// A u64 little-endian length or count at this offset set to a huge value.
    HugeLength(usize),
}

fn mutation(len: usize) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..len).prop_map(Mutation::Truncate),
        (0..len, any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (0..len, proptest::collection::vec(any::<u8>(), 1..48)).prop_map(|(i, v)| Mutation::Splice(i, v)),
        (0..len.saturating_sub(8)).prop_map(Mutation::HugeLength),
    ]
}

fn apply(mut b: Vec<u8>, m: &Mutation) -> Vec<u8> {
    match m {
        Mutation::Truncate(n) => b.truncate(*n),
        Mutation::Flip(i, v) => b[*i] ^= v | 1,
        Mutation::Splice(i, v) => {
            b.splice(*i..*i, v.iter().cloned());
        }
        Mutation::HugeLength(i) => b[*i..*i + 8].copy_from_slice(&(u64::MAX / 3).to_le_bytes()),
    }
    b
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_vanilla_proofs_are_refused_by_name_or_checked_never_a_panic(which in 0usize..2, m in mutation(4096)) {
        let g = good();
        let mut proofs = g.vanilla_proofs.clone();
        let len = proofs[which].len();
        let m = match m {
            Mutation::Truncate(n) => Mutation::Truncate(n % len),
            Mutation::Flip(i, b) => Mutation::Flip(i % len, b),
            Mutation::Splice(i, v) => Mutation::Splice(i % len, v),
            Mutation::HugeLength(i) => Mutation::HugeLength(i % (len - 8)),
        };
        proofs[which] = apply(proofs[which].clone(), &m);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let input = PostInput::new("fuzzed", g.registered_proof, &g.randomness, g.miner_id, 0, proofs)?;
            input.check()?;
            Ok::<_, cuzk_filecoin::Error>(input)
        }));
        match outcome {
            Err(_) => prop_assert!(false, "{m:?} panicked"),
            Ok(Err(e)) => prop_assert!(e.to_string().starts_with("fuzzed: "), "{m:?}: {e}"),
            Ok(Ok(input)) => prop_assert_eq!(input.sectors.len(), 2),
        }
    }
}
