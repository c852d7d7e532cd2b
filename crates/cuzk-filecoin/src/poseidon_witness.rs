//! The assignments of neptune's legacy Poseidon circuit (`neptune::circuit::poseidon_hash`,
//! the one every Filecoin circuit hashes with: Merkle paths, comm_r = H(comm_c, comm_r_last),
//! column hashes) computed on field elements alone, for a [`WitnessCs`]. The gadget builds a
//! linear combination for every state element of every round only for a witness-only
//! constraint system to drop it; this walks the same rounds with the same compressed round
//! constants and (sparse) MDS matrices and pushes the same values in the same order: per
//! S-box its input when the gadget allocates it, then l², l⁴ and l⁵ (+ round key), and the
//! result last. About 30× cheaper than the gadget through a `WitnessCs`; the tests compare
//! both value by value for every arity Filecoin uses. [`por_inclusion`] is storage-proofs'
//! `PoRCircuit` path on top of it (the PoSt and PoRep walks share it). It knows no circuit.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::PoseidonArity;
use generic_array::typenum::{U11, U2, U4, U8};
use neptune::poseidon::{Arity, PoseidonConstants};
use storage_proofs_core::gadgets::insertion::insert;

use cuzk_witness::WitnessCs;

/// The legacy Poseidon circuit's hash of `preimage` (one element per arity slot) with `A`'s
/// constants, its assignments appended to `cs` exactly as the gadget appends them; returns
/// the allocated result, like the gadget.
pub fn hash_allocated<A: PoseidonArity>(cs: &mut WitnessCs, preimage: &[AllocatedNum<Fr>]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    hash_allocated_with(cs, preimage, A::PARAMETERS())
}

/// [`hash_allocated`] with other constants of the same arity (SnapDeals draws its randomness
/// with its own hash type).
pub fn hash_allocated_with<A: Arity<Fr>>(
    cs: &mut WitnessCs,
    preimage: &[AllocatedNum<Fr>],
    constants: &PoseidonConstants<Fr, A>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    if preimage.len() != A::to_usize() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let values = preimage.iter().map(|n| n.get_value().ok_or(SynthesisError::AssignmentMissing)).collect::<Result<Vec<_>, _>>()?;
    let out = permute_recording(&values, constants, &mut cs.aux);
    AllocatedNum::alloc(cs, || Ok(out))
}

/// [`hash_allocated`] for the arity `preimage.len()` names (2, 4, 8 or 11: Filecoin's tree
/// and column arities); any other length is refused.
pub fn hash_allocated_any(cs: &mut WitnessCs, preimage: &[AllocatedNum<Fr>]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    match preimage.len() {
        2 => hash_allocated::<U2>(cs, preimage),
        4 => hash_allocated::<U4>(cs, preimage),
        8 => hash_allocated::<U8>(cs, preimage),
        11 => hash_allocated::<U11>(cs, preimage),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// A Merkle path as `MerkleProofTrait::as_options` gives it, every value present: per level
/// from the leaf up, the siblings and the node's position among them.
pub type Levels = Vec<(Vec<Fr>, usize)>;

/// `as_options`' levels with every sibling and position present (a blank circuit's are not).
pub fn levels(options: Vec<(Vec<Option<Fr>>, Option<usize>)>) -> Result<Levels, SynthesisError> {
    options
        .into_iter()
        .map(|(hashes, index)| {
            let hashes = hashes.into_iter().collect::<Option<Vec<_>>>().ok_or(SynthesisError::AssignmentMissing)?;
            Ok((hashes, index.ok_or(SynthesisError::AssignmentMissing)?))
        })
        .collect()
}

/// storage-proofs' `PoRCircuit` with a private root that is already a variable, from an
/// allocated `leaf`: per level the position's bits, the siblings, the insertion of the
/// current node among them (the circuit's own gadget) and the level's hash; then the
/// position bits packed into public inputs. Returns the computed root (whose equality with
/// the root allocates nothing).
pub fn por_inclusion(cs: &mut WitnessCs, leaf: AllocatedNum<Fr>, levels: &[(Vec<Fr>, usize)]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut cur = leaf;
    let mut path_bits = Vec::new();
    for (siblings, index) in levels {
        let arity = siblings.len() + 1;
        if !arity.is_power_of_two() {
            return Err(SynthesisError::Unsatisfiable);
        }
        let bits = (0..arity.trailing_zeros())
            .map(|b| AllocatedBit::alloc(&mut *cs, Some((index >> b) & 1 == 1)).map(Boolean::from))
            .collect::<Result<Vec<_>, _>>()?;
        path_bits.extend_from_slice(&bits);
        let siblings = siblings.iter().map(|h| AllocatedNum::alloc(&mut *cs, || Ok(*h))).collect::<Result<Vec<_>, _>>()?;
        let inserted = insert(cs, &cur, &bits, &siblings)?;
        cur = hash_allocated_any(cs, &inserted)?;
    }
    multipack::pack_into_inputs(&mut *cs, &path_bits)?;
    Ok(cur)
}

/// Runs the permutation over `[domain tag] ++ preimage` as the legacy circuit does, pushing
/// every value the circuit allocates onto `aux` except the result, which it returns.
fn permute_recording<A: Arity<Fr>>(preimage: &[Fr], k: &PoseidonConstants<Fr, A>, aux: &mut Vec<Fr>) -> Fr {
    let width = preimage.len() + 1;
    let rc = &k.compressed_round_constants;
    let half = k.half_full_rounds;
    let mut state = Vec::with_capacity(width);
    state.push(k.domain_tag);
    state.extend_from_slice(preimage);
    let mut next = vec![Fr::ZERO; width];
    let mut off = 0;
    let mut round = 0;

    // First full round: the round keys are added before the S-box; the tag's S-box is a
    // constant, the preimage's inputs are already allocated.
    let (pre, post) = (&rc[off..off + width], &rc[off + width..off + 2 * width]);
    off += 2 * width;
    let mut tag = state[0] + pre[0];
    tag = tag.square().square() * tag + post[0];
    state[0] = tag;
    for i in 1..width {
        let t = state[i] + pre[i];
        let l2 = t.square();
        let l4 = l2.square();
        let l5 = l4 * t + post[i];
        aux.extend_from_slice(&[l2, l4, l5]);
        state[i] = l5;
    }
    mix(k, round, &mut state, &mut next);
    round += 1;

    let full = |state: &mut Vec<Fr>, aux: &mut Vec<Fr>, keys: Option<&[Fr]>| {
        for (i, s) in state.iter_mut().enumerate() {
            *s = s_box(*s, keys.map(|k| k[i]), aux);
        }
    };
    for _ in 1..half {
        full(&mut state, aux, Some(&rc[off..off + width]));
        off += width;
        mix(k, round, &mut state, &mut next);
        round += 1;
    }
    for _ in 0..k.partial_rounds {
        state[0] = s_box(state[0], Some(rc[off]), aux);
        off += 1;
        mix(k, round, &mut state, &mut next);
        round += 1;
    }
    for _ in 0..half - 1 {
        full(&mut state, aux, Some(&rc[off..off + width]));
        off += width;
        mix(k, round, &mut state, &mut next);
        round += 1;
    }
    full(&mut state, aux, None);
    mix(k, round, &mut state, &mut next);
    state[1]
}

/// The gadget's S-box on a state element that is a linear combination: it allocates the
/// element, l², l⁴ and l⁵ (+ the round key, when there is one).
fn s_box(l: Fr, key: Option<Fr>, aux: &mut Vec<Fr>) -> Fr {
    let l2 = l.square();
    let l4 = l2.square();
    let mut l5 = l4 * l;
    if let Some(k) = key {
        l5 += k;
    }
    aux.extend_from_slice(&[l, l2, l4, l5]);
    l5
}

/// The MDS step after round `round`: the pre-sparse matrix before the partial rounds, the
/// sparse matrices during them, the full matrix otherwise (the optimised schedule the
/// compressed round constants belong to).
fn mix<A: Arity<Fr>>(k: &PoseidonConstants<Fr, A>, round: usize, state: &mut [Fr], next: &mut [Fr]) {
    let sparse_from = k.half_full_rounds - 1;
    if round > sparse_from && round < k.half_full_rounds + k.partial_rounds {
        let m = &k.sparse_matrixes[round - sparse_from - 1];
        let first = state[0];
        next[0] = state.iter().zip(&m.w_hat).map(|(s, w)| *s * w).sum();
        for j in 1..state.len() {
            next[j] = state[j] + first * m.v_rest[j - 1];
        }
    } else {
        let m = if round == sparse_from { &k.pre_sparse_matrix } else { &k.mds_matrices.m };
        for (j, n) in next.iter_mut().enumerate() {
            *n = state.iter().zip(m.iter()).map(|(s, row)| *s * row[j]).sum();
        }
    }
    state.copy_from_slice(next);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The gadget's witness and ours for one hash of random inputs: equal value by value.
    fn compare<A: PoseidonArity>(seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let values: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut rng)).collect();
        let run = |native: bool| {
            let mut cs = WitnessCs::with_capacity(1, 0);
            let pre: Vec<_> = values.iter().map(|v| AllocatedNum::alloc(&mut cs, || Ok(*v)).unwrap()).collect();
            let out = if native {
                hash_allocated::<A>(&mut cs, &pre).unwrap()
            } else {
                neptune::circuit::poseidon_hash(&mut cs, pre, A::PARAMETERS()).unwrap()
            };
            (cs, out.get_value().unwrap())
        };
        let (gadget, g_out) = run(false);
        let (ours, o_out) = run(true);
        assert_eq!(ours.aux.len(), gadget.aux.len(), "arity {}: allocation count", A::to_usize());
        let first_diff = ours.aux.iter().zip(&gadget.aux).position(|(a, b)| a != b);
        assert_eq!(first_diff, None, "arity {}: first differing aux", A::to_usize());
        assert_eq!(ours.inputs, gadget.inputs);
        assert_eq!(o_out, g_out);
        // And the value is Poseidon's own hash.
        let mut p = neptune::Poseidon::new_with_preimage(&values, A::PARAMETERS());
        assert_eq!(o_out, p.hash());
    }

    #[test]
    fn the_native_walk_assigns_what_the_legacy_gadget_assigns_for_every_filecoin_arity() {
        for seed in 0..3 {
            compare::<U2>(seed);
            compare::<U4>(seed);
            compare::<U8>(seed);
            compare::<U11>(seed);
        }
    }

    /// SnapDeals' randomness hash: arity 2 with its own hash type (another domain tag).
    #[test]
    fn other_constants_of_an_arity_are_walked_as_the_gadget_walks_them() {
        let k = &*storage_proofs_update::constants::POSEIDON_CONSTANTS_GEN_RANDOMNESS;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let values = [Fr::random(&mut rng), Fr::random(&mut rng)];
        let run = |native: bool| {
            let mut cs = WitnessCs::with_capacity(1, 0);
            let pre: Vec<_> = values.iter().map(|v| AllocatedNum::alloc(&mut cs, || Ok(*v)).unwrap()).collect();
            let out = if native {
                hash_allocated_with(&mut cs, &pre, k).unwrap()
            } else {
                neptune::circuit::poseidon_hash(&mut cs, pre, k).unwrap()
            };
            (cs.aux, out.get_value())
        };
        let (ours, gadget) = (run(true), run(false));
        assert_eq!(ours.0.len(), gadget.0.len());
        assert!(ours == gadget, "the GEN_RANDOMNESS walk differs from the gadget");
        assert_ne!(k.domain_tag, U2::PARAMETERS().domain_tag, "the test must use other constants than the tree's");
    }

    #[test]
    fn a_preimage_of_the_wrong_length_is_refused() {
        let mut cs = WitnessCs::with_capacity(1, 0);
        let x = AllocatedNum::alloc(&mut cs, || Ok(Fr::ONE)).unwrap();
        assert!(matches!(hash_allocated::<U8>(&mut cs, &[x.clone(), x.clone()]), Err(SynthesisError::Unsatisfiable)));
        assert!(matches!(hash_allocated_any(&mut cs, &[x.clone(), x.clone(), x]), Err(SynthesisError::Unsatisfiable)));
        assert_eq!(cs.aux.len(), 1, "a refused hash appends nothing");
    }
}
