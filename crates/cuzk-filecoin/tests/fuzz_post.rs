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

mod common;
use common::mutate::{apply, config, fit, mutation};

fn good() -> &'static PostInput {
    static GOOD: OnceLock<PostInput> = OnceLock::new();
    GOOD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let sealed = SealedSectors::seal(2048, 2, 1000, 11, dir.path()).unwrap();
        sealed.window_post([5; 32].map(|b| b & 0x3f), 0, &[1, 2]).unwrap()
    })
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn mutated_vanilla_proofs_are_refused_by_name_or_checked_never_a_panic(which in 0usize..2, m in mutation(4096)) {
        let g = good();
        let mut proofs = g.vanilla_proofs.clone();
        let m = fit(m, proofs[which].len());
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
