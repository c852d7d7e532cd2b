//! The old path, kept as baseline and as the reference: bellperson's own synthesis and
//! Groth16 prover over the real `StackedCircuit`s that `storage-proofs-porep` builds from a C1
//! output, with the proof bytes laid out exactly as `seal_commit_phase2` returns them (one
//! 192-byte compressed proof per partition, in partition order).

use bellperson::groth16::{self, Parameters};
use blstrs::Bls12;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::with_shape;
use rand_core::OsRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

use super::c1::{prepare, Prepared, C1};
use super::sector::SectorIdentity;
use crate::mem::StageTracer;
use crate::{Error, Result};

/// Bytes of one partition's proof.
pub const PARTITION_PROOF_BYTES: usize = 192;

/// Builds the partition circuits of a prepared C1 (one per partition).
pub fn circuits<Tree: 'static + MerkleTreeTrait>(
    p: &Prepared<Tree>,
) -> Result<Vec<StackedCircuit<Tree, DefaultPieceHasher>>> {
    p.vanilla
        .iter()
        .enumerate()
        .map(|(k, proof)| {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::circuit(
                &p.public_inputs,
                (),
                proof,
                &p.public_params.vanilla_params,
                Some(k),
            )
            .map_err(Error::filecoin)
        })
        .collect()
}

/// Partition `k`'s circuit cut into one circuit per challenge: each holds the partition's
/// common part (replica id, commitments, the comm_r check) and that one challenge. The
/// challenges share nothing but the common part, so their witnesses can be computed apart
/// and joined (`cuzk_pce::porep::split_witness`).
pub fn challenge_circuits<Tree: 'static + MerkleTreeTrait>(
    p: &Prepared<Tree>,
    k: usize,
) -> Result<Vec<StackedCircuit<Tree, DefaultPieceHasher>>> {
    let proofs = p.vanilla.get(k).ok_or_else(|| Error::Invalid(format!("no partition {k}: the C1 has {}", p.vanilla.len())))?;
    proofs
        .iter()
        .map(|proof| {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::circuit(
                &p.public_inputs,
                (),
                &vec![proof.clone()],
                &p.public_params.vanilla_params,
                Some(k),
            )
            .map_err(Error::filecoin)
        })
        .collect()
}

/// Proves a C1 with bellperson and returns the seal proof bytes.
pub fn prove(
    c1: &C1,
    identity: &SectorIdentity,
    params: &Parameters<Bls12>,
    tracer: &StageTracer,
) -> Result<Vec<u8>> {
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
    Ok(out)
}
