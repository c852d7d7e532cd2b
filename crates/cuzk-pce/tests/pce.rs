//! The PCE against the reference full synthesis (bellperson's ProvingAssignment semantics):
//! on a circuit built to interleave `alloc_input` and `enforce`, on random circuits (property
//! test), and the cache's bad-file cases and the registry's sharing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk_core::registry::Registry;
use cuzk_core::testing::RandomCircuit;
use cuzk_pce::cache::{self, Outcome, Reject};
use cuzk_pce::witness::compare;
use cuzk_pce::{extract, reference, PreCompiledCircuit};
use ff::Field;
use proptest::prelude::*;

/// Inputs allocated after constraints that already used aux variables: a recorder that
/// offsets aux columns by the running input count gets the early rows wrong.
struct Interleaved;

impl Circuit<Scalar> for Interleaved {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut prev = cs.alloc(|| "x0", || Ok(Scalar::from(3u64)))?;
        for i in 0..20u64 {
            let sq = cs.alloc(|| format!("sq{i}"), || Ok(Scalar::from(i + 7)))?;
            cs.enforce(|| format!("sq{i}"), |lc| lc + prev, |lc| lc + prev + CS::one(), |lc| lc + sq);
            let inp = cs.alloc_input(|| format!("in{i}"), || Ok(Scalar::from(i * i)))?;
            cs.enforce(|| format!("bind{i}"), |lc| lc + inp, |lc| lc + CS::one(), |lc| lc + sq + (Scalar::from(2u64), prev));
            prev = sq;
        }
        Ok(())
    }
}

/// Whether a rejection is the expected one.
type IsReason = fn(&Reject) -> bool;

fn both_paths<C: Circuit<Scalar> + Clone>(c: C) -> (PreCompiledCircuit, cuzk_pce::witness::Mismatches) {
    let pce = extract(c.clone()).unwrap();
    let w = cuzk_witness::witness(c.clone(), pce.num_inputs, pce.num_aux).unwrap();
    let eval = pce.evaluate(&w.inputs, &w.aux).unwrap();
    let r = reference::synthesize(c).unwrap();
    let m = compare(&pce, &w, &eval, &r);
    (pce, m)
}

impl Clone for Interleaved {
    fn clone(&self) -> Self {
        Interleaved
    }
}

#[test]
fn interleaved_inputs_and_constraints_match_the_reference() {
    let (pce, m) = both_paths(Interleaved);
    assert_eq!(m.total(), 0, "{m:?}");
    assert_eq!(pce.num_inputs, 21);
    assert_eq!(pce.num_constraints, 40 + 21);
    // Every input has its appended `input · 0 = 0` row in A only.
    assert_eq!(pce.a.nnz(), 20 * 2 + 21);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_circuits_match_the_reference(seed in any::<u64>(), vars in 2usize..60, constraints in 1usize..120, rate in 0.0f64..0.6) {
        let mut c = RandomCircuit::new(seed, vars, constraints);
        c.input_rate = rate;
        let (_, m) = both_paths(c);
        prop_assert_eq!(m.total(), 0, "{:?}", m);
    }
}

#[test]
fn wrong_witness_size_is_an_error() {
    let pce = extract(Interleaved).unwrap();
    let e = pce.evaluate(&[Scalar::ONE], &[]).unwrap_err().to_string();
    assert!(e.contains("witness"), "{e}");
}

fn sample() -> PreCompiledCircuit {
    extract(RandomCircuit::new(3, 200, 400)).unwrap()
}

#[test]
fn cache_round_trip_and_every_bad_file_is_rejected_then_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pce");
    let id = "identity-1";
    let pce = sample();
    assert_eq!(cache::load(&path, id).unwrap_err(), Reject::Missing);
    cache::store(&path, id, &pce).unwrap();
    assert_eq!(cache::load(&path, id).unwrap(), pce);
    assert_eq!(cache::load(&path, "identity-2").unwrap_err(), Reject::Stale);
    let good = std::fs::read(&path).unwrap();

    let cases: Vec<(&str, Vec<u8>, IsReason)> = vec![
        ("truncated", good[..good.len() - 5].to_vec(), |r| matches!(r, Reject::Truncated { .. })),
        ("header only", good[..20].to_vec(), |r| matches!(r, Reject::Truncated { .. })),
        ("foreign", b"{\"not\": \"a pce\"}".repeat(10), |r| *r == Reject::Foreign),
        (
            "corrupt",
            {
                let mut b = good.clone();
                let n = b.len();
                b[n - 10] ^= 0xff;
                b
            },
            |r| *r == Reject::Checksum,
        ),
        (
            "version",
            {
                let mut b = good.clone();
                b[8] = 99;
                b
            },
            |r| matches!(r, Reject::Version(99)),
        ),
        ("empty", Vec::new(), |r| matches!(r, Reject::Truncated { .. } | Reject::Foreign)),
    ];
    for (name, bytes, ok) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let r = cache::load(&path, id).unwrap_err();
        assert!(ok(&r), "{name}: {r:?}");
        let (p, outcome) = cache::load_or_build(&path, id, || Ok(sample())).unwrap();
        assert_eq!(p, pce, "{name}");
        assert!(matches!(outcome, Outcome::Built { ref reason, .. } if *reason == r), "{name}: {outcome:?}");
        assert_eq!(cache::load(&path, id).unwrap(), pce, "{name}: not rebuilt");
    }
    let (_, outcome) = cache::load_or_build(&path, id, || panic!("must load, not build")).unwrap();
    assert!(matches!(outcome, Outcome::Loaded { .. }));
}

#[test]
fn a_valid_checksum_over_impossible_contents_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.pce");
    let mut pce = sample();
    pce.a.cols[0] = u32::MAX;
    cache::store(&path, "id", &pce).unwrap();
    assert!(matches!(cache::load(&path, "id").unwrap_err(), Reject::Corrupt(_)));
}

#[test]
fn concurrent_builders_build_once_and_leave_one_valid_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = Arc::new(dir.path().join("race.pce"));
    let builds = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (path, builds) = (path.clone(), builds.clone());
            std::thread::spawn(move || {
                cache::load_or_build(&path, "race", || {
                    builds.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    Ok(sample())
                })
                .unwrap()
                .0
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    assert!(results.iter().all(|r| *r == results[0]));
    assert_eq!(cache::load(&path, "race").unwrap(), results[0]);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 2, "{leftovers:?}"); // the file and its lock
}

#[test]
fn registry_hands_out_one_copy() {
    // Four threads ask for the same PCE at once (a barrier lines them up; the build takes
    // 100 ms, so the others arrive during it): it must be built once and every thread must
    // get that one allocation. Its arrays are written, not left as untouched zero pages, so
    // the copy is resident and shows in RSS: at least most of one copy, less than two.
    const N: usize = 16 << 20;
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    static REGISTRY: Registry<PreCompiledCircuit> = Registry::new();
    let big = || {
        BUILDS.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut p = sample();
        p.a.cols = (0..N as u32).collect();
        p.a.coeff_idx = vec![1; N];
        Ok::<_, ()>(p)
    };
    let before = cuzk_core::mem::snapshot().rss_bytes;
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                REGISTRY.get_or_init("big", big).unwrap()
            })
        })
        .collect();
    let got: Vec<Arc<PreCompiledCircuit>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(BUILDS.load(Ordering::SeqCst), 1, "concurrent first users must wait for one build");
    for g in &got {
        assert!(Arc::ptr_eq(g, &got[0]), "every user must get the same Arc");
        assert_eq!(g.a.cols.as_ptr(), got[0].a.cols.as_ptr(), "and so the same matrix memory");
    }
    assert_eq!(Arc::strong_count(&got[0]), got.len() + 1, "four users and the registry: no other copy");
    let grew = cuzk_core::mem::snapshot().rss_bytes.saturating_sub(before);
    let one_copy = (N * 2 * std::mem::size_of::<u32>()) as u64;
    assert!(grew >= one_copy / 2, "the PCE's touched pages must be resident (RSS grew {grew}, one copy is {one_copy})");
    assert!(grew < one_copy + one_copy / 2, "RSS grew {grew} bytes for one {one_copy}-byte PCE");
    let c = REGISTRY.get_or_init::<()>("big", || panic!("already built")).unwrap();
    assert!(Arc::ptr_eq(&got[0], &c));
    assert_eq!(BUILDS.load(Ordering::SeqCst), 1);
}

#[test]
fn a_pce_with_released_entries_keeps_its_counts_and_densities_and_refuses_to_evaluate() {
    let mut pce = sample();
    assert!(pce.with_entries_released().is_none(), "no identity: nothing could find the device copy");
    pce.identity = Some(42);
    let released = pce.with_entries_released().unwrap();
    assert!(released.entries_released() && !pce.entries_released());
    assert_eq!(
        (released.num_constraints, released.num_inputs, released.num_aux, released.identity),
        (pce.num_constraints, pce.num_inputs, pce.num_aux, Some(42))
    );
    assert_eq!((&released.a_aux_density, &released.b_aux_density, &released.coeffs), (&pce.a_aux_density, &pce.b_aux_density, &pce.coeffs));
    assert_eq!(released.matrices().rows(), pce.matrices().rows());
    let held = |p: &PreCompiledCircuit| [&p.a, &p.b, &p.c].iter().map(|m| m.row_ptr.len() + m.cols.len()).sum::<usize>();
    assert_eq!(held(&released), 0, "no row offsets, columns or indices stay on the host");
    assert!(held(&pce) > 0 && released.bytes() < pce.bytes());
    let inputs = vec![blstrs::Scalar::from(1u64); pce.num_inputs];
    let aux = vec![blstrs::Scalar::from(0u64); pce.num_aux];
    assert!(pce.evaluate(&inputs, &aux).is_ok());
    let e = released.evaluate(&inputs, &aux).unwrap_err().to_string();
    assert!(e.contains("released"), "{e}");
    released.matrices().check_witness(&inputs, &aux).expect("a device can still be handed the witness");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("released.pce");
    let e = cache::store(&path, "sample", &released).unwrap_err().to_string();
    assert!(e.contains("released") && !path.exists(), "{e}");
    assert!(released.matrices().check_witness(&inputs, &aux[1..]).is_err(), "a witness of the wrong width is still refused");
}
