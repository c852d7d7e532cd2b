//! The old path, kept as baseline and as the reference: bellperson's own synthesis and
//! Groth16 prover over the partition circuits of a C1 ([`super::circuits`]), with the proof
//! bytes laid out exactly as `seal_commit_phase2` returns them (one 192-byte compressed
//! proof per partition, in partition order; for a non-interactive PoRep their SnarkPack
//! aggregate, which is deterministic). Equal (r, s) give the new path's bytes.

use bellperson::groth16::{self, Parameters};
use blstrs::Bls12;
use cuzk_core::mem::StageTracer;
use filecoin_proofs::with_shape;
use rand_core::OsRng;
use storage_proofs_core::merkle::MerkleTreeTrait;

use super::c1::{prepare, C1};
use super::circuits::{circuits, PARTITION_PROOF_BYTES};
use super::sector::SectorIdentity;
use crate::{Error, Result};

/// Proves a C1 with bellperson and returns the seal proof bytes.
pub fn prove(c1: &C1, identity: &SectorIdentity, params: &Parameters<Bls12>, tracer: &StageTracer) -> Result<Vec<u8>> {
    prove_with(c1, identity, params, None, tracer)
}

/// As [`prove`], with fixed (r, s) per partition when given (bellperson's `create_proof_batch`:
/// the reference for byte-for-byte comparisons).
pub fn prove_with(
    c1: &C1,
    identity: &SectorIdentity,
    params: &Parameters<Bls12>,
    randomness: Option<&[(blstrs::Scalar, blstrs::Scalar)]>,
    tracer: &StageTracer,
) -> Result<Vec<u8>> {
    with_shape!(c1.sector_size(), prove_shaped, c1, identity, params, randomness, tracer)
}

fn prove_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &C1,
    identity: &SectorIdentity,
    params: &Parameters<Bls12>,
    randomness: Option<&[(blstrs::Scalar, blstrs::Scalar)]>,
    tracer: &StageTracer,
) -> Result<Vec<u8>> {
    let prepared = tracer.stage("check-c1", || prepare::<Tree>(c1, identity))?;
    let circuits = tracer.stage("build-circuits", || circuits(&prepared))?;
    drop(prepared);
    let proofs = tracer.stage("bellperson-prove", || {
        match randomness {
            None => groth16::create_random_proof_batch(circuits, params, &mut OsRng),
            Some(rs) if rs.len() != circuits.len() => {
                return Err(Error::Invalid(format!("{} (r, s) pairs for {} partitions", rs.len(), circuits.len())))
            }
            Some(rs) => {
                let (r, s): (Vec<_>, Vec<_>) = rs.iter().copied().unzip();
                groth16::create_proof_batch(circuits, params, r, s)
            }
        }
        .map_err(|e| Error::Proving(format!("bellperson: {e}")))
    })?;
    let mut out = Vec::with_capacity(proofs.len() * PARTITION_PROOF_BYTES);
    for p in &proofs {
        p.write(&mut out).map_err(|e| Error::Proving(e.to_string()))?;
    }
    if super::ni::is_non_interactive(c1.registered_proof) {
        // As seal_commit_phase2 (and the engine) return it: the SnarkPack aggregate.
        return tracer.stage("aggregate", || super::ni::aggregate(c1, &out));
    }
    Ok(out)
}
