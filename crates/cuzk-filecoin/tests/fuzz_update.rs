//! Fuzzing (proptest) of the SnapDeals request reader: a real 2 KiB update's partition proof
//! (a sealed sector with new data encoded into it), mutated — truncated, bytes flipped,
//! garbage spliced in, a length field made huge, digits spliced in — goes through
//! `UpdateInput::new` and, when that accepts it, the deep check `UpdateInput::check`
//! (filecoin-proofs' vanilla verification against the commitments). Each gives a result or an
//! error naming the request, never a panic; a mutated request that passes both must still be
//! a well-formed 2 KiB request. CI runs 48 cases; `PROPTEST_CASES=N` runs more.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cuzk_filecoin::update::{fixture, UpdateInput};
use proptest::prelude::*;

mod common;
use common::mutate::{apply, config, fit, mutation};

fn good() -> &'static UpdateInput {
    static GOOD: OnceLock<UpdateInput> = OnceLock::new();
    GOOD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        fixture::sealed_update(2048, 1000, 13, dir.path()).unwrap()
    })
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn mutated_partition_proofs_are_refused_by_name_or_checked_never_a_panic(m in mutation(8192)) {
        let g = good();
        let m = fit(m, g.vanilla_proofs[0].len());
        let proofs = vec![apply(g.vanilla_proofs[0].clone(), &m)];
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let input = UpdateInput::new("fuzzed", g.registered_proof, &g.comm_r_old, &g.comm_r_new, &g.comm_d_new, proofs)?;
            input.check()?;
            Ok::<_, cuzk_filecoin::Error>(input)
        }));
        match outcome {
            Err(_) => prop_assert!(false, "{m:?} panicked"),
            Ok(Err(e)) => prop_assert!(e.to_string().starts_with("fuzzed: "), "{m:?}: {e}"),
            Ok(Ok(input)) => prop_assert_eq!(input.vanilla_proofs.len(), 1),
        }
    }
}
