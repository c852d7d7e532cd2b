//! Valid PoSt requests at any sector size without sealing a sector: for benchmarks at 32 and
//! 64 GiB, where sealing is out of reach. A PoSt vanilla proof only shows Merkle paths from
//! the challenged leaves to comm_r_last (and comm_r = H(comm_c, comm_r_last)), so each sector
//! here is a sparse tree: random leaves at the challenged positions and a random node for
//! every untouched subtree beside their paths (no verifier looks below a sibling, and equal
//! siblings in every sector — the hash of zero subtrees — would give the prover's MSMs
//! millions of equal scalars that no real sector has). The challenges are drawn
//! by filecoin-proofs-api from the randomness exactly as for a real sector, and the result
//! passes filecoin-proofs' vanilla verification and, once proved, the official verifiers. It
//! owns only the tree and the proof bytes; requests are checked by [`PostInput`].

use std::collections::{BTreeMap, BTreeSet};

use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{with_shape, FallbackPoStSectorProof};
use filecoin_proofs_api::{post, SectorId};
use generic_array::typenum::Unsigned;
use rand::SeedableRng;
use rayon::prelude::*;
use storage_proofs_core::merkle::{InclusionPath, MerkleProof, MerkleProofTrait, MerkleTreeTrait, PathElement};
use storage_proofs_post::fallback::{Proof as VanillaPartition, SectorProof};

use super::{circuit, registry, PostInput, RegisteredPoStProof};
use crate::porep::sector::prover_id;
use crate::{Error, Result};

/// The WinningPoSt request of `miner_id` for `randomness`: one sector (number 1) challenged
/// as filecoin-proofs challenges it. `seed` fixes the sector's contents.
pub fn winning_post(rp: RegisteredPoStProof, miner_id: u64, randomness: [u8; 32], seed: u64) -> Result<PostInput> {
    if !registry::is_winning(rp) {
        return Err(Error::Invalid(format!("{rp:?} is not a WinningPoSt proof")));
    }
    let drawn = post::generate_winning_post_sector_challenge(rp, &randomness, 1, prover_id(miner_id)).map_err(Error::filecoin)?;
    let numbers: Vec<u64> = drawn.iter().map(|i| i + 1).collect();
    let proofs = vanilla_proofs(rp, miner_id, &randomness, &numbers, &numbers, seed)?;
    PostInput::new("synthetic WinningPoSt", rp, &randomness, miner_id, 0, proofs)
}

/// Partition `partition_index` of the WindowPoSt of `miner_id` over sectors 1..=`sectors`
/// for `randomness` (the partition holds the `partition_index`-th run of the partition size).
pub fn window_post(
    rp: RegisteredPoStProof,
    miner_id: u64,
    randomness: [u8; 32],
    sectors: u64,
    partition_index: usize,
    seed: u64,
) -> Result<PostInput> {
    if registry::is_winning(rp) {
        return Err(Error::Invalid(format!("{rp:?} is not a WindowPoSt proof")));
    }
    let per = circuit::shape(rp)?.sectors_per_partition as u64;
    let all: Vec<u64> = (1..=sectors).collect();
    let first = partition_index as u64 * per;
    if first >= sectors {
        return Err(Error::Invalid(format!("partition {partition_index} is empty: {sectors} sectors, {per} per partition")));
    }
    let numbers: Vec<u64> = all[first as usize..(first + per).min(sectors) as usize].to_vec();
    let proofs = vanilla_proofs(rp, miner_id, &randomness, &all, &numbers, seed)?;
    PostInput::new("synthetic WindowPoSt", rp, &randomness, miner_id, partition_index, proofs)
}

/// The vanilla proofs of `numbers`, their challenges drawn over `challenged`.
fn vanilla_proofs(
    rp: RegisteredPoStProof,
    miner_id: u64,
    randomness: &[u8; 32],
    challenged: &[u64],
    numbers: &[u64],
    seed: u64,
) -> Result<Vec<Vec<u8>>> {
    let ids: Vec<SectorId> = challenged.iter().map(|n| SectorId::from(*n)).collect();
    let challenges = post::generate_fallback_sector_challenges(rp, randomness, &ids, prover_id(miner_id)).map_err(Error::filecoin)?;
    numbers
        .par_iter()
        .map(|n| {
            let wanted = challenges.get(&SectorId::from(*n)).ok_or_else(|| Error::Invalid(format!("no challenges for sector {n}")))?;
            with_shape!(registry::sector_size_of(rp), sector_proof, *n, wanted, seed, registry::sector_size_of(rp) as usize / 32)
        })
        .collect()
}

/// One sector's vanilla proof (a tree of `leaves` leaves), bincode-encoded as filecoin-proofs-api encodes it.
fn sector_proof<Tree: 'static + MerkleTreeTrait>(number: u64, challenges: &[u64], seed: u64, leaves: usize) -> Result<Vec<u8>> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ number.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let challenged: BTreeMap<usize, D<Tree>> = challenges.iter().map(|c| (*c as usize, D::<Tree>::random(&mut rng))).collect();
    let tree = SparseTree::<Tree>::build(level_arities::<Tree>(leaves), challenged, &mut rng);
    let inclusion_proofs = challenges.iter().map(|c| tree.proof(*c as usize)).collect::<Result<Vec<_>>>()?;
    let comm_c = D::<Tree>::random(&mut rng);
    let comm_r_last = tree.root()?;
    let comm_r = <<Tree::Hasher as Hasher>::Function as HashFunction<D<Tree>>>::hash2(&comm_c, &comm_r_last);
    let proof = FallbackPoStSectorProof::<Tree> {
        sector_id: SectorId::from(number),
        comm_r,
        vanilla_proof: VanillaPartition { sectors: vec![SectorProof { inclusion_proofs, comm_c, comm_r_last }] },
    };
    bincode::serialize(&proof).map_err(|e| Error::Invalid(format!("encoding a vanilla proof: {e}")))
}

/// The arity of each level of `Tree` over `leaves` leaves, leaves up: the base tree's levels, then the sub-tree's
/// and the top tree's level where the shape has them.
fn level_arities<Tree: MerkleTreeTrait>(leaves: usize) -> Vec<usize> {
    let (base, sub, top) = (Tree::Arity::to_usize(), Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
    let per_base_tree = leaves / (sub.max(1) * top.max(1));
    let mut out = vec![base; per_base_tree.ilog(base) as usize];
    out.extend([sub, top].into_iter().filter(|a| *a > 0));
    out
}

/// A node (and leaf) value of `Tree`.
type D<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// The inclusion proof type of `Tree`.
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A Merkle tree of which only the paths to a few leaves are stored, with the siblings along
/// them: a sibling off every path is the random root of an untouched subtree.
struct SparseTree<Tree: MerkleTreeTrait> {
    arities: Vec<usize>,
    /// Per height (0 = leaves): the stored nodes by index, every path node and its siblings.
    levels: Vec<BTreeMap<usize, <Tree::Hasher as Hasher>::Domain>>,
}

impl<Tree: MerkleTreeTrait> SparseTree<Tree> {
    fn build(arities: Vec<usize>, leaves: BTreeMap<usize, <Tree::Hasher as Hasher>::Domain>, rng: &mut impl rand::RngCore) -> Self {
        let mut levels = vec![leaves];
        for (height, arity) in arities.iter().enumerate() {
            let below = &mut levels[height];
            let parents: BTreeSet<usize> = below.keys().map(|i| i / arity).collect();
            let mut level = BTreeMap::new();
            for p in parents {
                let children: Vec<D<Tree>> =
                    (p * arity..(p + 1) * arity).map(|i| *below.entry(i).or_insert_with(|| D::<Tree>::random(&mut *rng))).collect();
                level.insert(p, hash::<Tree>(&children));
            }
            levels.push(level);
        }
        SparseTree { arities, levels }
    }

    /// A stored node (the build stored every node a path or its siblings need).
    fn node(&self, height: usize, index: usize) -> Result<<Tree::Hasher as Hasher>::Domain> {
        let stored = self.levels.get(height).and_then(|level| level.get(&index));
        stored.copied().ok_or_else(|| Error::Invalid(format!("the synthetic tree holds no node {index} at height {height}")))
    }

    fn root(&self) -> Result<<Tree::Hasher as Hasher>::Domain> {
        self.node(self.arities.len(), 0)
    }

    /// The inclusion proof of leaf `leaf`, checked: it hashes to the root and names `leaf`.
    fn proof(&self, leaf: usize) -> Result<TreeProof<Tree>> {
        let mut index = leaf;
        let mut path = Vec::with_capacity(self.arities.len());
        for (height, arity) in self.arities.iter().enumerate() {
            let (parent, position) = (index / arity, index % arity);
            let siblings = (0..*arity).filter(|j| *j != position).map(|j| self.node(height, parent * arity + j)).collect::<Result<_>>()?;
            path.push((siblings, position));
            index = parent;
        }
        let proof = MerkleProof::from_parts(self.node(0, leaf)?, self.root()?, path);
        if !proof.verify() || proof.path_index() != leaf {
            return Err(Error::Invalid(format!("the synthetic Merkle path of leaf {leaf} does not verify")));
        }
        Ok(proof)
    }
}

/// The parent of `children` as the tree hashes it (Poseidon of the arity's width).
fn hash<Tree: MerkleTreeTrait>(children: &[<Tree::Hasher as Hasher>::Domain]) -> <Tree::Hasher as Hasher>::Domain {
    let path: InclusionPath<Tree::Hasher, Tree::Arity> = vec![PathElement::from((children[1..].to_vec(), 0))].into();
    path.root(children[0])
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use filecoin_proofs::SectorShape32GiB;

    use super::*;

    /// Every node a 32 GiB tree stores (ten challenged paths and their siblings) has its own
    /// value: two siblings are equal only where they are the same node, as in a real sector
    /// (equal default siblings gave the prover's MSMs millions of equal scalars), and every
    /// path still hashes to the root.
    #[test]
    fn a_32_gib_tree_stores_distinct_siblings_and_its_paths_verify() {
        type Tree = SectorShape32GiB;
        let leaves = (32usize << 30) / 32;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let challenged: BTreeMap<usize, D<Tree>> =
            (0..10usize).map(|k| ((k * 104_729_023 + 7) % leaves, D::<Tree>::random(&mut rng))).collect();
        let tree = SparseTree::<Tree>::build(level_arities::<Tree>(leaves), challenged.clone(), &mut rng);
        let mut seen: HashMap<D<Tree>, (usize, usize)> = HashMap::new();
        for (height, level) in tree.levels.iter().enumerate() {
            for (index, value) in level {
                if let Some(first) = seen.insert(*value, (height, *index)) {
                    panic!("node {index} at height {height} repeats the value of node {first:?}");
                }
            }
        }
        // Ten paths of 8-ary levels store their 7 siblings per level (fewer where paths meet).
        assert!(seen.len() > 10 * 7 * 8, "only {} nodes stored", seen.len());
        for leaf in challenged.keys() {
            tree.proof(*leaf).unwrap();
        }
    }
}
