//! The PoRep partition circuits of a checked C1: the real `StackedCircuit`s that
//! `storage-proofs-porep` builds (one per partition, or one per challenge of a partition for
//! the split witness), as both the new path's gadget witness and the old path use them.

use filecoin_proofs::constants::DefaultPieceHasher;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

use super::c1::Prepared;

use crate::{Error, Result};

/// Bytes of one partition's proof.
pub const PARTITION_PROOF_BYTES: usize = 192;

/// Builds the partition circuits of a prepared C1 (one per partition).
pub fn circuits<Tree: 'static + MerkleTreeTrait>(p: &Prepared<Tree>) -> Result<Vec<StackedCircuit<Tree, DefaultPieceHasher>>> {
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
/// and joined (`cuzk_filecoin::porep::pce::split_witness`).
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
