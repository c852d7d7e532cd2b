//! SnapDeals requests at any sector size without sealing, to time proving at 32 and 64 GiB:
//! the real structure — the partition count, each partition's challenges drawn by
//! storage-proofs-update from comm_r_new, the apex-leaf count, every Merkle path the shape of
//! that size's trees and positioned at its challenge — with random contents. Unlike PoSt's
//! sparse trees, a valid update cannot be built this way (comm_r_new fixes the challenges,
//! and the new replica's challenged leaves fix comm_r_new), so these requests never verify:
//! they are marked synthetic, skip the deep check, and are proved only with verification off.
//! It owns the proof bytes; the request's checks are [`UpdateInput`]'s.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use filecoin_hashers::{Domain, Hasher, PoseidonArity};
use filecoin_proofs::types::PartitionProof;
use filecoin_proofs::{with_shape, TreeRHasher};
use rand::SeedableRng;
use rayon::prelude::*;
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain};
use storage_proofs_update::{phi, rho, ChallengeProof, Challenges};

use super::input::{config, public_params};
use super::{registry, RegisteredUpdateProof, UpdateInput};
use crate::{Error, Result};

/// What proving a synthetic request with verification on answers.
pub const NOT_PROVABLE: &str = "a synthetic SnapDeals request (gen-update --synthetic: random contents) has no valid \
     proof; prove it only to time proving, with verification off (--no-verify)";

/// The three commitments of a request: comm_r_old, comm_r_new, comm_d_new.
pub type Commitments = [[u8; 32]; 3];

/// A synthetic request for `rp` with random commitments; `seed` fixes every byte.
pub fn update(rp: RegisteredUpdateProof, seed: u64) -> Result<UpdateInput> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let mut field = || Fr::random(&mut rng).to_repr();
    update_with(rp, [field(), field(), field()], seed)
}

/// A synthetic request for `rp` with these commitments (the challenges follow comm_r_new).
pub fn update_with(rp: RegisteredUpdateProof, comms: Commitments, seed: u64) -> Result<UpdateInput> {
    let proofs = with_shape!(registry::sector_size_of(rp), partition_proofs, rp, &comms, seed)?;
    let [old, new, d] = comms;
    let mut input = UpdateInput::new("synthetic SnapDeals", rp, &old, &new, &d, proofs)?;
    input.synthetic = true;
    Ok(input)
}

/// The partition proofs. What the circuit's synthesis asserts holds: each challenge's new
/// replica leaf is the old one plus the new data's leaf times rho (the update encoding), and
/// a partition's TreeD paths share their top levels (the partition's own subtree); the rest is
/// random.
fn partition_proofs<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    rp: RegisteredUpdateProof,
    comms: &Commitments,
    seed: u64,
) -> Result<Vec<Vec<u8>>> {
    let pp = public_params(rp);
    let bad = |name: &str, e: String| Error::Invalid(format!("{name} is not a field element: {e}"));
    let comm_r_old = TreeRDomain::try_from_bytes(&comms[0]).map_err(|e| bad("comm_r_old", format!("{e:#}")))?;
    let comm_r_new = TreeRDomain::try_from_bytes(&comms[1]).map_err(|e| bad("comm_r_new", format!("{e:#}")))?;
    let comm_d_new = TreeDDomain::try_from_bytes(&comms[2]).map_err(|e| bad("comm_d_new", format!("{e:#}")))?;
    let phi = phi(&comm_d_new, &comm_r_old);
    let high_shift = pp.sector_nodes.trailing_zeros() as usize - config(rp).h;
    let partition_levels = pp.partition_count.trailing_zeros() as usize;
    (0..pp.partition_count)
        .into_par_iter()
        .map(|k| {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed ^ (k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let partition_path: Vec<TreeDDomain> = (0..partition_levels).map(|_| Domain::random(&mut rng)).collect();
            let challenge_proofs = Challenges::new(pp.sector_nodes, comm_r_new, k)
                .map(|c| {
                    let (r_old, d_new): (Fr, Fr) = (Fr::random(&mut rng), Fr::random(&mut rng));
                    let r_new = r_old + d_new * rho(&phi, c >> high_shift);
                    let c = c as usize;
                    let d_levels = pp.sector_nodes.trailing_zeros() as usize;
                    let mut d_sibling =
                        |level: usize, rng: &mut rand_chacha::ChaCha20Rng| match level.checked_sub(d_levels - partition_levels) {
                            Some(top) => partition_path[top],
                            None => Domain::random(rng),
                        };
                    ChallengeProof::<Tree> {
                        proof_r_old: path(c, pp.sector_nodes, r_old.into(), &mut rng, |_, rng| Domain::random(rng)),
                        proof_d_new: path(c, pp.sector_nodes, d_new.into(), &mut rng, &mut d_sibling),
                        proof_r_new: path(c, pp.sector_nodes, r_new.into(), &mut rng, |_, rng| Domain::random(rng)),
                    }
                })
                .collect();
            let proof = PartitionProof::<Tree> {
                comm_c: Domain::random(&mut rng),
                apex_leafs: (0..pp.apex_leaf_count).map(|_| Domain::random(&mut rng)).collect(),
                challenge_proofs,
            };
            bincode::serialize(&proof).map_err(|e| Error::Invalid(format!("encoding a partition proof: {e}")))
        })
        .collect()
}

/// The path from leaf `index` (value `leaf`) of a tree of `leaves` leaves (base arity `A`,
/// sub-tree arity `B`, top arity `C`; 0 = none), each level's position that of `index`, its
/// siblings from `sibling(level, rng)` and a random root.
fn path<H: Hasher, A: PoseidonArity, B: PoseidonArity, C: PoseidonArity, R: rand::RngCore>(
    index: usize,
    leaves: usize,
    leaf: H::Domain,
    rng: &mut R,
    mut sibling: impl FnMut(usize, &mut R) -> H::Domain,
) -> MerkleProof<H, A, B, C> {
    let upper: Vec<usize> = [B::to_usize(), C::to_usize()].into_iter().filter(|a| *a > 0).collect();
    let base = A::to_usize();
    let mut arities = vec![base; (leaves / upper.iter().product::<usize>()).ilog(base) as usize];
    arities.extend(upper);
    let mut rest = index;
    let mut levels = Vec::with_capacity(arities.len());
    for (level, &arity) in arities.iter().enumerate() {
        let position = rest % arity;
        rest /= arity;
        levels.push(((1..arity).map(|_| sibling(level, &mut *rng)).collect(), position));
    }
    MerkleProof::from_parts(leaf, H::Domain::random(rng), levels)
}
