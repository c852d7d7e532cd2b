//! The proof-kind seam with a kind that is not Filecoin's: a toy kind over cuzk-core's
//! satisfiable test circuit proves through `kind::job` and the engine with the same bytes as
//! bellperson for equal r and s, verified by its own verifier; its PCE is cached under its
//! circuit id and shared in the process; a request the kind refuses is refused before any
//! parameters are looked up or loaded.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bellperson::groth16::{self, Proof};
use blstrs::{Bls12, Scalar};
use cuzk_core::testing::SatisfiedCircuit;
use cuzk_pce::paramgen::{generate_for, Secrets};
use cuzk_pce::PreCompiledCircuit;
use cuzk_pipeline::engine::Synthesize;
use cuzk_pipeline::kind::{concatenate, job, CircuitId, JobOptions, ProofKind};
use cuzk_pipeline::{resources, Config, Engine, PipelineError};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[derive(Debug, thiserror::Error)]
enum ToyError {
    #[error("toy request refused: {0}")]
    Refused(String),
    #[error("toy proof rejected")]
    Rejected,
    #[error(transparent)]
    Pce(#[from] cuzk_pce::PceError),
}

/// `partitions` instances of one circuit; `valid: false` is refused by the deep checks.
struct ToyRequest {
    partitions: usize,
    valid: bool,
}

/// A kind whose one circuit is `SatisfiedCircuit { seed, steps }`.
struct Toy {
    circuit: SatisfiedCircuit,
    params: PathBuf,
    pce_dir: PathBuf,
    params_lookups: AtomicUsize,
    /// Set: `params_path` answers that the parameter files are missing.
    params_missing: AtomicBool,
    extractions: AtomicUsize,
}

impl Toy {
    /// The kind with its parameters generated into `dir`.
    fn new(dir: &Path, seed: u64, steps: usize) -> Toy {
        let circuit = SatisfiedCircuit { seed, steps };
        let (params, _) = generate_for(circuit.clone(), &Secrets::random(&mut ChaCha8Rng::seed_from_u64(seed))).unwrap();
        let path = dir.join(format!("toy-{seed}-{steps}.params"));
        cuzk_core::params::write_params(&path, &params).unwrap();
        Toy {
            circuit,
            params: path,
            pce_dir: dir.join("pce"),
            params_lookups: AtomicUsize::new(0),
            params_missing: AtomicBool::new(false),
            extractions: AtomicUsize::new(0),
        }
    }

    fn verifies(&self, bytes: &[u8]) -> bool {
        let (params, _) = cuzk_core::params::load_params(&self.params).unwrap();
        let pvk = groth16::prepare_verifying_key(&params.vk);
        let w = cuzk_witness::witness(self.circuit.clone(), 1, 0).unwrap();
        bytes.len() % 192 == 0
            && bytes
                .chunks(192)
                .all(|c| Proof::<Bls12>::read(c).is_ok_and(|p| groth16::verify_proof(&pvk, &p, &w.inputs[1..]).unwrap_or(false)))
    }
}

impl ProofKind for Toy {
    type Request = ToyRequest;
    type CircuitKey = (u64, usize);
    type Error = ToyError;

    fn name(&self) -> &'static str {
        "toy"
    }
    fn circuit_key(&self, _: &ToyRequest) -> (u64, usize) {
        (self.circuit.seed, self.circuit.steps)
    }
    fn circuit_id(&self, (seed, steps): &(u64, usize)) -> CircuitId {
        CircuitId { name: format!("toy-{seed}-{steps}"), identity: format!("cuzk-test-toy|seed={seed}|steps={steps}") }
    }
    fn extract_pce(&self, _: &(u64, usize)) -> Result<PreCompiledCircuit, ToyError> {
        self.extractions.fetch_add(1, Ordering::Relaxed);
        Ok(cuzk_pce::extract(self.circuit.clone())?)
    }
    fn params_path(&self, _: &(u64, usize)) -> Result<PathBuf, ToyError> {
        self.params_lookups.fetch_add(1, Ordering::Relaxed);
        if self.params_missing.load(Ordering::Relaxed) {
            return Err(ToyError::Refused("no parameter files for this circuit".into()));
        }
        Ok(self.params.clone())
    }
    fn pce_cache_dir(&self) -> &Path {
        &self.pce_dir
    }
    fn partitions(&self, req: &ToyRequest) -> Result<Vec<Synthesize>, ToyError> {
        if !req.valid {
            return Err(ToyError::Refused("its commitments do not match".into()));
        }
        let one = |c: SatisfiedCircuit| -> Synthesize {
            Box::new(move |pce: &PreCompiledCircuit| cuzk_pce::witness::checked_witness(c, pce).map_err(PipelineError::shared))
        };
        Ok((0..req.partitions).map(|_| one(self.circuit.clone())).collect())
    }
    fn assemble(&self, _: &ToyRequest, proofs: &[Proof<Bls12>]) -> Result<Vec<u8>, ToyError> {
        concatenate(proofs).map_err(|e| ToyError::Refused(e.to_string()))
    }
    fn verify(&self, _: &ToyRequest, proof: &[u8]) -> Result<(), ToyError> {
        if self.verifies(proof) {
            Ok(())
        } else {
            Err(ToyError::Rejected)
        }
    }
}

fn rs(n: usize) -> Vec<(Scalar, Scalar)> {
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    (0..n).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect()
}

#[test]
fn a_kind_outside_filecoin_proves_through_the_engine_with_bellpersons_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let kind = Arc::new(Toy::new(dir.path(), 5, 300));
    let engine = Engine::start(Config::cpu(1, 1 << 30)).unwrap();
    let pairs = rs(2);
    let req = Arc::new(ToyRequest { partitions: 2, valid: true });
    let out = engine.submit(job(kind.clone(), req.clone(), JobOptions { randomness: Some(pairs.clone()), verify: true })).unwrap().wait();
    let bytes = out.result.unwrap_or_else(|e| panic!("{}", e.chain()));
    assert!(out.verified, "the kind's verifier ran");
    let (params, _) = cuzk_core::params::load_params(&kind.params).unwrap();
    let mut want = Vec::new();
    for (r, s) in pairs {
        groth16::create_proof(kind.circuit.clone(), &params, r, s).unwrap().write(&mut want).unwrap();
    }
    assert_eq!(bytes, want, "the engine's proof differs from bellperson's for equal r and s");

    // The PCE is cached under the kind's circuit id and resident once per process.
    let id = kind.circuit_id(&(5, 300));
    assert!(resources::pce_cache_path(&kind.pce_dir, &id).exists());
    let (pce, params) = resources::resident(&id);
    let again = engine.submit(job(kind.clone(), req, JobOptions::default())).unwrap().wait();
    assert!(again.verified && kind.verifies(&again.result.unwrap()));
    let (pce2, params2) = resources::resident(&id);
    assert!(Arc::ptr_eq(&pce.unwrap(), &pce2.unwrap()) && Arc::ptr_eq(&params.unwrap(), &params2.unwrap()));
    assert_eq!(kind.params_lookups.load(Ordering::Relaxed), 1, "resident parameters are not looked up again");
    engine.shutdown();
}

#[test]
fn a_refused_request_loads_nothing_and_names_its_kind_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let kind = Arc::new(Toy::new(dir.path(), 6, 120));
    let engine = Engine::start(Config::cpu(1, 1 << 30)).unwrap();
    let out = engine.submit(job(kind.clone(), Arc::new(ToyRequest { partitions: 1, valid: false }), JobOptions::default())).unwrap().wait();
    match out.result {
        Err(e @ PipelineError::Request { kind: "toy", .. }) => {
            assert!(e.chain().contains("toy request refused: its commitments do not match"), "{}", e.chain())
        }
        other => panic!("expected the kind's refusal, got {other:?}"),
    }
    assert_eq!(kind.params_lookups.load(Ordering::Relaxed), 0, "parameters were looked up for a refused request");
    let (pce, params) = resources::resident(&kind.circuit_id(&(6, 120)));
    assert!(pce.is_none() && params.is_none(), "nothing may be loaded for a refused request");
    engine.shutdown();
}

#[test]
fn missing_parameters_are_reported_before_a_pce_is_extracted() {
    let dir = tempfile::tempdir().unwrap();
    let kind = Arc::new(Toy::new(dir.path(), 8, 150));
    kind.params_missing.store(true, Ordering::Relaxed);
    let engine = Engine::start(Config::cpu(1, 1 << 30)).unwrap();
    let out = engine.submit(job(kind.clone(), Arc::new(ToyRequest { partitions: 1, valid: true }), JobOptions::default())).unwrap().wait();
    engine.shutdown();
    let e = out.result.expect_err("a circuit without parameters was proved").chain();
    assert!(e.contains("no parameter files"), "{e}");
    assert_eq!(kind.extractions.load(Ordering::Relaxed), 0, "a PCE was extracted for a circuit that has no parameters");
}
