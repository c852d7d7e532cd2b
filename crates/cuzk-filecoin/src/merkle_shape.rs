//! Shape checks of Merkle inclusion proofs decoded from a client's bytes, shared by the proof
//! kinds whose requests carry them (PoSt, SnapDeals): bincode alone cannot tell one sector
//! size's proof from another's, and filecoin-proofs indexes paths and converts hashes to field
//! elements without checking, so a hostile proof must be refused here, by name, before it
//! reaches filecoin-proofs. It knows Merkle proofs, not what they prove.

use generic_array::typenum::Unsigned;
use storage_proofs_core::merkle::MerkleProofTrait;

/// Whether `bytes` is a canonical encoding of a scalar field element.
pub fn canonical(bytes: &[u8]) -> bool {
    let Ok(repr) = <[u8; 32]>::try_from(bytes) else { return false };
    bool::from(<blstrs::Scalar as ff::PrimeField>::from_repr(repr).is_some())
}

/// The arity of each level of a path of `len` levels of `P`'s tree: the base tree's levels,
/// then the sub-tree's and the top tree's level when the tree has them.
pub fn level_arities<P: MerkleProofTrait>(len: usize) -> Vec<usize> {
    let (base, sub, top) = (P::Arity::to_usize(), P::SubTreeArity::to_usize(), P::TopTreeArity::to_usize());
    let upper: Vec<usize> = [sub, top].into_iter().filter(|a| *a > 0).collect();
    let mut out = vec![base; len.saturating_sub(upper.len())];
    out.extend(upper);
    out
}

/// What is wrong with the shape of `proof` in a tree of `leaves` leaves: its length, a level
/// whose siblings or position do not fit the arity, a hash that is not a field element.
pub fn path_problem<P: MerkleProofTrait>(proof: &P, leaves: usize) -> Option<String> {
    let path = proof.path();
    if path.len() != proof.expected_len(leaves) {
        return Some(format!(
            "a Merkle path of {} levels where this sector size's tree has {}: not a proof for this sector size",
            path.len(),
            proof.expected_len(leaves)
        ));
    }
    let arities = level_arities::<P>(path.len());
    if let Some((level, (siblings, index), arity)) =
        path.iter().zip(&arities).enumerate().find(|(_, ((s, i), a))| s.len() + 1 != **a || *i >= **a).map(|(l, (p, a))| (l, p, a))
    {
        return Some(format!("level {level}: {} siblings at position {index} in a tree of arity {arity}", siblings.len()));
    }
    let mut hashes = vec![proof.leaf(), proof.root()];
    hashes.extend(path.into_iter().flat_map(|(siblings, _)| siblings));
    hashes.iter().any(|h| !canonical(h.as_ref())).then(|| "a hash of the path is not a field element".to_string())
}
