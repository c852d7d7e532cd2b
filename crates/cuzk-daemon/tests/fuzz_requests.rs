//! Fuzzing (proptest) of the daemon's request handling: random SubmitProofRequests (any
//! proof kind number, sector size, registered-proof number, priority, and a vanilla proof
//! that is random bytes, a truncated C1 or the real one) go through the job service's
//! submission checks. Every request that is not a valid 2 KiB PoRep request must become a
//! FAILED job with a non-empty reason at once — no panic, nothing queued, nothing proved —
//! and the service keeps answering. CI runs 64 cases; `PROPTEST_CASES=N` runs more.

use std::path::Path;
use std::sync::OnceLock;

use cuzk_daemon::jobs::{Jobs, JobsConfig, State};
use cuzk_daemon::proto::SubmitProofRequest;
use proptest::prelude::*;

fn fixture() -> &'static Vec<u8> {
    static F: OnceLock<Vec<u8>> = OnceLock::new();
    F.get_or_init(|| std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")).unwrap())
}

fn jobs() -> &'static Jobs {
    static J: OnceLock<Jobs> = OnceLock::new();
    J.get_or_init(|| {
        let settings = cuzk_filecoin::Settings::from_vars(|k| std::env::var_os(k));
        settings.apply().unwrap();
        let engine = cuzk_pipeline::Engine::start(cuzk_pipeline::Config::cpu(1, 1 << 30)).unwrap();
        let kinds = cuzk_filecoin::Kinds::new(&settings, Default::default());
        Jobs::new(engine, JobsConfig::default(), kinds).unwrap()
    })
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

fn vanilla() -> impl Strategy<Value = (u8, Vec<u8>)> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256).prop_map(|v| (0, v)),
        (1..fixture().len()).prop_map(|n| (1, fixture()[..n].to_vec())),
        Just((2, fixture().clone())),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_requests_fail_with_a_reason(
        kind in prop_oneof![Just(1), -2i32..8, any::<i32>()],
        size in prop_oneof![Just(0u64), Just(2048), Just(4096), Just(8 << 20), Just(32 << 30), any::<u64>()],
        rp in prop_oneof![Just(0u64), 0u64..20, any::<u64>()],
        priority in -1i32..7,
        (which, bytes) in vanilla(),
        request_id in "[a-z0-9]{0,8}",
    ) {
        // The one valid combination would be proved: leave it to the real-proof tests.
        prop_assume!(!(kind == 1 && which == 2 && matches!(size, 0 | 2048) && matches!(rp, 0 | 5)));
        let req = SubmitProofRequest {
            request_id: if request_id.is_empty() { String::new() } else { format!("fuzz-{request_id}-{kind}-{size}-{rp}-{which}-{}", bytes.len()) },
            proof_kind: kind,
            sector_size: size,
            registered_proof: rp,
            priority,
            vanilla_proof: bytes,
            miner_id: 1000,
            sector_number: 1,
            ..Default::default()
        };
        let s = std::panic::catch_unwind(|| jobs().submit(req.clone(), "fuzz"));
        let s = match s {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(TestCaseError::fail(format!("submit refused: {e}"))),
            Err(_) => return Err(TestCaseError::fail(format!("submit panicked on kind {kind} size {size} rp {rp}"))),
        };
        let v = jobs().view(&s.job_id).expect("the job is known");
        prop_assert_eq!(v.state, State::Failed, "kind {} size {} rp {} which {}", kind, size, rp, which);
        prop_assert!(!v.error.is_empty());
        prop_assert!(v.proof.is_empty());
        let c = jobs().counts();
        prop_assert_eq!(c.in_flight, 0, "nothing may reach the engine");
    }
}
