//! The proof-kind seam: everything the engine needs from a kind of proof, and nothing of
//! what the kind is. A kind names the circuit a request is an instance of (its
//! [`CircuitId`]: the key of PCE cache files, parameter files and the process-wide
//! registries), records that circuit's PCE from its blank form and the path of its parameters,
//! turns a checked request into one witness synthesis per partition, puts the partition
//! proofs together into the bytes the user gets, and verifies them with its official
//! verifier. [`job`] turns a request of any kind into the engine's [`Job`]; every caller
//! (a single proof, many, the daemon, a benchmark) goes through it. Kinds live above this
//! crate; this module must not know any of them.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};

use cuzk_pce::PreCompiledCircuit;

use crate::engine::{Job, JobSource, PartitionInput, Synthesize, VerifyProof};
use crate::resources;
use crate::PipelineError;

/// One circuit topology. `name` is short and readable (file names, logs, metrics); `identity`
/// is everything the topology depends on (hashed into the PCE cache header, so a change of
/// any of it invalidates old caches). Requests with equal ids share one PCE and one
/// parameter set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CircuitId {
    /// Short readable name for file names, logs and metrics (PoRep uses the registered proof,
    /// e.g. `StackedDrg32GiBV1_1`).
    pub name: String,
    /// Everything the topology depends on; two circuits with equal identities must have equal constraint systems.
    pub identity: String,
}

impl std::fmt::Display for CircuitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// A kind of proof (PoRep C2, SnapDeals, WindowPoSt, ...), as the engine sees it.
pub trait ProofKind: Send + Sync + 'static {
    /// A parsed request whose cheap checks passed (file form, sizes, registered proof).
    type Request: Send + Sync + 'static;
    /// Which circuit: the kind's own key (e.g. a registered proof), one per topology.
    type CircuitKey: Clone + Debug + Send + Sync + 'static;
    /// The kind's typed error; it reaches the user as the source of a [`PipelineError`].
    type Error: std::error::Error + Send + Sync + 'static;

    /// Short name for logs, metrics and errors (`porep-c2`).
    fn name(&self) -> &'static str;
    /// The circuit `req`'s partitions are instances of.
    fn circuit_key(&self, req: &Self::Request) -> Self::CircuitKey;
    /// The id of `key`'s circuit.
    fn circuit_id(&self, key: &Self::CircuitKey) -> CircuitId;
    /// `key`'s PCE, recorded from its circuit with no assignment (all partitions share it):
    /// `cuzk_pce::extract(blank_circuit)`, once the kind has built its circuit type.
    fn extract_pce(&self, key: &Self::CircuitKey) -> Result<PreCompiledCircuit, Self::Error>;
    /// Where `key`'s Groth16 parameters are, checked present and whole.
    fn params_path(&self, key: &Self::CircuitKey) -> Result<PathBuf, Self::Error>;
    /// The directory the PCE cache files of this kind live in.
    fn pce_cache_dir(&self) -> &Path;
    /// The directory of this kind's SRS map files ([`cuzk_core::srs_map`]): parameters are
    /// then mapped from there (the map built from the `.params` file on first use) instead of
    /// decoded into host memory. `None` (the default) decodes them.
    fn srs_map_dir(&self) -> Option<&Path> {
        None
    }
    /// Whether a proof of `req` can verify at all (a benchmark-only request cannot); such a
    /// request is refused unless the caller opted out of verification.
    fn verifiable(&self, _req: &Self::Request) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The deep checks of `req` and one witness synthesis per partition, in partition order.
    /// Runs on the engine's parse stage.
    fn partitions(&self, req: &Self::Request) -> Result<Vec<Synthesize>, Self::Error>;
    /// The bytes the user gets from the partition proofs (in partition order).
    fn assemble(&self, req: &Self::Request, proofs: &[Proof<Bls12>]) -> Result<Vec<u8>, Self::Error>;
    /// The official verifier's verdict on the assembled bytes.
    fn verify(&self, req: &Self::Request, proof: &[u8]) -> Result<(), Self::Error>;
}

/// How a job is run.
#[derive(Clone, Debug)]
pub struct JobOptions {
    /// Fixed (r, s) per partition (reproducible proofs); `None` draws fresh ones.
    pub randomness: Option<Vec<(Scalar, Scalar)>>,
    /// Verify the proof before returning it (the default; opting out is the caller's call).
    pub verify: bool,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions { randomness: None, verify: true }
    }
}

/// Partition proofs as 192-byte compressed Groth16 proofs, concatenated in order (the layout
/// filecoin-proofs returns for multi-partition proofs).
pub fn concatenate(proofs: &[Proof<Bls12>]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(proofs.len() * 192);
    for p in proofs {
        p.write(&mut out)?;
    }
    Ok(out)
}

fn refused<K: ProofKind>(kind: &K, e: K::Error) -> PipelineError {
    PipelineError::Request { kind: kind.name(), source: Arc::new(e) }
}

/// The engine job of one request: its checks and partitions with their (r, s), its circuit's
/// shared PCE and parameters, assembly and (unless opted out) verification. Everything runs on the
/// engine's parse stage, so a slow load or check never blocks the submitter.
pub fn job<K: ProofKind>(kind: Arc<K>, req: Arc<K::Request>, opts: JobOptions) -> JobSource {
    Box::new(move || {
        if opts.verify {
            kind.verifiable(&req).map_err(|e| refused(kind.as_ref(), e))?;
        }
        // The request's own checks first: a bad request is refused before any (for a full-size
        // circuit, tens of GiB of) parameters are loaded for it.
        let partitions = kind.partitions(&req).map_err(|e| refused(kind.as_ref(), e))?;
        let rs = match opts.randomness {
            Some(v) if v.len() != partitions.len() => {
                return Err(PipelineError::Job(format!("{} (r, s) pairs for {} partitions", v.len(), partitions.len())))
            }
            Some(v) => v,
            None => cuzk_core::groth16::random_rs(partitions.len()),
        };
        let circuit = resources::shared(kind.as_ref(), &kind.circuit_key(&req))?;
        let partitions = partitions.into_iter().zip(rs).map(|(synthesize, (r, s))| PartitionInput { synthesize, r, s }).collect();
        let (k2, r2) = (kind.clone(), req.clone());
        let assemble = Box::new(move |proofs: &[Proof<Bls12>]| k2.assemble(&r2, proofs).map_err(PipelineError::shared));
        let verify =
            opts.verify.then(|| Box::new(move |bytes: &[u8]| kind.verify(&req, bytes).map_err(PipelineError::shared)) as VerifyProof);
        Ok(Job { pce: circuit.pce, params: circuit.params, partitions, assemble, verify })
    })
}
