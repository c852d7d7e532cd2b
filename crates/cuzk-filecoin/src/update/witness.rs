//! The SnapDeals partition's witness, computed natively and in parallel: this module walks
//! `EmptySectorUpdateCircuit`'s allocation sequence — the common part (k and h_select and their
//! bits, the packed partition, the three commitments, phi, comm_c and the two roots, the apex
//! leaves and partition path, the two comm_r checks, the apex tree and its path to comm_d_new,
//! the challenge bits drawn from comm_r_new), then per challenge its high bits, rho, the three
//! leaves and the TreeR old/new and TreeD paths. SHA-256 (TreeD, the apex tree: ~97 % of the
//! constraints) goes through [`crate::sha256_witness`], Poseidon through
//! [`crate::poseidon_witness`]; the small gadgets (bit decompositions, picks, `select`,
//! `get_challenge_high_bits`, `label_r_new`) are storage-proofs' own. The challenges are
//! independent once the common part exists, so each is computed on its own witness in
//! parallel and their aux values are appended in challenge order: a witness constraint system
//! records values only, so a gadget may read the common part's variables from another one.
//! The tests compare the result with the circuit's own witness value for value.

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack::pack_bits;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_proofs::TreeRHasher;
use rayon::prelude::*;
use storage_proofs_core::gadgets::insertion::{insert, select};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::ChallengeProof;
use storage_proofs_update::constants::{hs, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;

use cuzk_pce::witness::Piece;
use cuzk_pce::PreCompiledCircuit;
use cuzk_witness::WitnessCs;

use crate::poseidon_witness::{hash_allocated_any, hash_allocated_with};
use crate::sha256_witness::hash_two;
use crate::{Error, Result};

type Synth<T> = std::result::Result<T, SynthesisError>;

/// What every challenge reads from the common part.
struct Common {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    phi: AllocatedNum<Fr>,
    apex_leafs: Vec<AllocatedNum<Fr>>,
    challenge_bits: Vec<Vec<AllocatedBit>>,
}

/// The circuit's shape, from its public parameters.
#[derive(Clone, Copy)]
struct Shape {
    sector_nodes: usize,
    challenge_bit_len: usize,
    partition_bit_len: usize,
    apex_leaf_bit_len: usize,
}

/// Partition `circuit`'s witness for `pce`: the common part, then every challenge in parallel,
/// joined in challenge order and checked against the PCE's counts.
pub(crate) fn native_witness<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: EmptySectorUpdateCircuit<TreeR>,
    pce: &PreCompiledCircuit,
) -> Result<WitnessCs> {
    let (num_inputs, num_aux) = (pce.num_inputs, pce.num_aux);
    let mut cs = cuzk_pce::witness::witness_with_room(num_inputs, num_aux);
    synthesize(&mut cs, &circuit, num_aux).map_err(|e| Error::Witness(format!("SnapDeals partition: {e}")))?;
    if (cs.inputs.len(), cs.aux.len()) != (num_inputs, num_aux) {
        return Err(Error::Witness(format!(
            "the SnapDeals witness has {} inputs and {} aux; the circuit has {num_inputs} and {num_aux}",
            cs.inputs.len(),
            cs.aux.len(),
        )));
    }
    Ok(cs)
}

/// [`synthesize`] as one witness piece (what `compare_modes` runs against the gadgets).
pub(crate) fn native_piece<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(circuit: EmptySectorUpdateCircuit<TreeR>) -> Piece {
    Box::new(move |cs: &mut WitnessCs| synthesize(cs, &circuit, 0))
}

/// Appends `circuit`'s assignments to `cs`: the common part, then every challenge in parallel
/// (each sized from `aux_hint`, the expected total, when known), in challenge order.
fn synthesize<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    circuit: &EmptySectorUpdateCircuit<TreeR>,
    aux_hint: usize,
) -> Synth<()> {
    let (common, shape) = synthesize_common(cs, circuit)?;
    let challenges = &circuit.priv_inputs.challenge_proofs;
    if challenges.len() != common.challenge_bits.len() {
        return Err(SynthesisError::IncompatibleLengthVector(format!(
            "{} challenge proofs for {} drawn challenges",
            challenges.len(),
            common.challenge_bits.len()
        )));
    }
    let each = aux_hint.saturating_sub(cs.aux.len()) / challenges.len().max(1);
    let pieces = challenges
        .par_iter()
        .enumerate()
        .map(|(i, proof)| {
            let mut piece = WitnessCs { inputs: Vec::new(), aux: Vec::with_capacity(each) };
            synthesize_challenge(&mut piece, &common, shape, i, proof)?;
            if !piece.inputs.is_empty() {
                return Err(SynthesisError::Unsatisfiable);
            }
            Ok(piece.aux)
        })
        .collect::<Synth<Vec<_>>>()?;
    cuzk_pce::witness::append_all(&mut cs.aux, &pieces.iter().map(Vec::as_slice).collect::<Vec<_>>());
    Ok(())
}

fn value(v: Option<Fr>) -> Synth<Fr> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

fn alloc(cs: &mut WitnessCs, v: Option<Fr>) -> Synth<AllocatedNum<Fr>> {
    let v = value(v)?;
    AllocatedNum::alloc(cs, || Ok(v))
}

fn alloc_input(cs: &mut WitnessCs, v: Option<Fr>) -> Synth<AllocatedNum<Fr>> {
    let n = alloc(cs, v)?;
    n.inputize(&mut *cs)?;
    Ok(n)
}

/// Everything the circuit allocates before its per-challenge loop.
fn synthesize_common<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    c: &EmptySectorUpdateCircuit<TreeR>,
) -> Synth<(Common, Shape)> {
    let p = &c.pub_params;
    let shape = Shape {
        sector_nodes: p.sector_nodes,
        challenge_bit_len: p.challenge_bit_len,
        partition_bit_len: p.partition_bit_len,
        apex_leaf_bit_len: p.apex_leaf_bit_len,
    };
    let h_select_bit_len = hs(p.sector_nodes).len();
    let first = c.priv_inputs.challenge_proofs.first().ok_or(SynthesisError::Unsatisfiable)?;
    let partition_path = first.path_d_new.get(p.challenge_bit_len - p.partition_bit_len..).ok_or(SynthesisError::Unsatisfiable)?;

    let k_and_h_select = alloc_input(cs, c.pub_inputs.k_and_h_select)?;
    let kh_bits: Vec<bool> =
        value(k_and_h_select.get_value())?.to_le_bits().into_iter().take(p.partition_bit_len + h_select_bit_len).collect();
    let bits = kh_bits.into_iter().map(|b| AllocatedBit::alloc(&mut *cs, Some(b))).collect::<Synth<Vec<_>>>()?;
    let (partition_bits, h_select_bits) = (bits[..p.partition_bit_len].to_vec(), bits[p.partition_bit_len..].to_vec());
    let partition = pack_bits(&mut *cs, &partition_bits.iter().cloned().map(Boolean::from).collect::<Vec<_>>())?;

    let comm_r_old = alloc_input(cs, c.pub_inputs.comm_r_old)?;
    let comm_d_new = alloc_input(cs, c.pub_inputs.comm_d_new)?;
    let comm_r_new = alloc_input(cs, c.pub_inputs.comm_r_new)?;
    let phi = hash_allocated_with(cs, &[comm_d_new.clone(), comm_r_old], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;

    let comm_c = alloc(cs, c.priv_inputs.comm_c)?;
    let root_r_old = alloc(cs, c.priv_inputs.root_r_old)?;
    let root_r_new = alloc(cs, c.priv_inputs.root_r_new)?;
    let apex_leafs = c.priv_inputs.apex_leafs.iter().map(|l| alloc(cs, *l)).collect::<Synth<Vec<_>>>()?;
    let partition_path = partition_path
        .iter()
        .map(|siblings| Ok(vec![alloc(cs, *siblings.first().ok_or(SynthesisError::Unsatisfiable)?)?]))
        .collect::<Synth<Vec<_>>>()?;

    // comm_r_old = H(comm_c, root_r_old), comm_r_new = H(comm_c, root_r_new): the equalities
    // allocate nothing.
    hash_allocated_any(cs, &[comm_c.clone(), root_r_old])?;
    hash_allocated_any(cs, &[comm_c, root_r_new])?;

    // The apex tree over the apex leaves, then its root's path up to comm_d_new.
    let mut row = apex_leafs.clone();
    while row.len() > 1 {
        row = row.chunks(2).map(|pair| sha_pair(cs, pair)).collect::<Synth<Vec<_>>>()?;
    }
    let apex_root = row.pop().ok_or(SynthesisError::Unsatisfiable)?;
    path_with_given_bits(cs, &partition_bits, apex_root, partition_path, sha_pair)?;

    let challenge_bits = draw_challenge_bits(cs, &comm_r_new, &partition, p.challenge_count, p.challenge_bit_len - p.partition_bit_len)?;
    Ok((Common { partition_bits, h_select_bits, phi, apex_leafs, challenge_bits }, shape))
}

/// `gen_challenge_bits`: per digest its index, the digest (Poseidon with the randomness
/// constants) and its 255 allocated bits, cut into challenges.
fn draw_challenge_bits(
    cs: &mut WitnessCs,
    comm_r_new: &AllocatedNum<Fr>,
    partition: &AllocatedNum<Fr>,
    challenges: usize,
    bits_per_challenge: usize,
) -> Synth<Vec<Vec<AllocatedBit>>> {
    let per_digest = Fr::CAPACITY as usize / bits_per_challenge;
    let digests = challenges.div_ceil(per_digest);
    let k = value(partition.get_value())?;
    let mut out = Vec::with_capacity(challenges);
    for j in 0..digests {
        let index = alloc(cs, Some(k * Fr::from(digests as u64) + Fr::from(j as u64)))?;
        let digest = hash_allocated_with(cs, &[comm_r_new.clone(), index], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;
        let bits = field_into_allocated_bits_le(&mut *cs, digest.get_value())?;
        let take = if j == digests - 1 { challenges - out.len() } else { per_digest };
        out.extend(bits.chunks(bits_per_challenge).take(take).map(<[AllocatedBit]>::to_vec));
    }
    Ok(out)
}

/// One challenge's allocations, in the circuit's order.
fn synthesize_challenge<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    common: &Common,
    shape: Shape,
    i: usize,
    proof: &ChallengeProof<TreeR>,
) -> Synth<()> {
    let c_bits: Vec<AllocatedBit> = common.challenge_bits[i].iter().chain(&common.partition_bits).cloned().collect();
    let c_high = challenge_high_bits(cs, &c_bits, &common.h_select_bits, &hs(shape.sector_nodes))?;
    let rho = hash_allocated_with(cs, &[common.phi.clone(), c_high], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;
    let leaf_r_old = alloc(cs, proof.leaf_r_old)?;
    let leaf_d_new = alloc(cs, proof.leaf_d_new)?;
    let leaf_r_new = label_r_new(cs, &leaf_r_old, &leaf_d_new, &rho)?;

    let siblings = |cs: &mut WitnessCs, path: &[Vec<Option<Fr>>]| {
        path.iter().map(|row| row.iter().map(|s| alloc(cs, *s)).collect::<Synth<Vec<_>>>()).collect::<Synth<Vec<_>>>()
    };
    let path_r_old = siblings(cs, &proof.path_r_old)?;
    path_with_given_bits(cs, &c_bits, leaf_r_old, path_r_old, hash_allocated_any)?;
    let path_r_new = siblings(cs, &proof.path_r_new)?;
    path_with_given_bits(cs, &c_bits, leaf_r_new, path_r_new, hash_allocated_any)?;

    let start = shape.challenge_bit_len - shape.partition_bit_len - shape.apex_leaf_bit_len;
    let apex_bits: Vec<Boolean> = c_bits[start..start + shape.apex_leaf_bit_len].iter().cloned().map(Boolean::from).collect();
    // The TreeD path's root: the apex leaf the challenge falls under.
    let _apex_leaf = select(&mut *cs, &common.apex_leafs, &apex_bits)?;
    let to_apex = proof.path_d_new.get(..start).ok_or(SynthesisError::Unsatisfiable)?;
    let path_d =
        to_apex.iter().map(|row| Ok(vec![alloc(cs, *row.first().ok_or(SynthesisError::Unsatisfiable)?)?])).collect::<Synth<Vec<_>>>()?;
    path_with_given_bits(cs, &c_bits[..start], leaf_d_new, path_d, sha_pair)?;
    Ok(())
}

/// `get_challenge_high_bits`: per allowed h, the challenge's h high bits packed and that value
/// or zero (as h_select's bit says); then their sum.
fn challenge_high_bits(
    cs: &mut WitnessCs,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Synth<AllocatedNum<Fr>> {
    let c_bits: Vec<Boolean> = c_bits.iter().cloned().map(Boolean::from).collect();
    let mut sum = Fr::ZERO;
    for (h, selected) in hs.iter().zip(h_select_bits) {
        let high = c_bits.get(c_bits.len().checked_sub(*h).ok_or(SynthesisError::Unsatisfiable)?..).ok_or(SynthesisError::Unsatisfiable)?;
        let c_high = pack_bits(&mut *cs, high)?;
        let or_zero = if selected.get_value().ok_or(SynthesisError::AssignmentMissing)? { value(c_high.get_value())? } else { Fr::ZERO };
        alloc(cs, Some(or_zero))?;
        sum += or_zero;
    }
    alloc(cs, Some(sum))
}

/// `label_r_new`: label_d_new · rho, then label_r_old + that product.
fn label_r_new(
    cs: &mut WitnessCs,
    label_r_old: &AllocatedNum<Fr>,
    label_d_new: &AllocatedNum<Fr>,
    rho: &AllocatedNum<Fr>,
) -> Synth<AllocatedNum<Fr>> {
    let product = label_d_new.mul(&mut *cs, rho)?;
    alloc(cs, Some(value(label_r_old.get_value())? + value(product.get_value())?))
}

/// The binary SHA-256 tree's hash of two allocated nodes.
fn sha_pair(cs: &mut WitnessCs, pair: &[AllocatedNum<Fr>]) -> Synth<AllocatedNum<Fr>> {
    match pair {
        [a, b] => hash_two(cs, value(a.get_value())?, value(b.get_value())?),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// `por_no_challenge_input`: from `leaf`, per level the insertion (the circuit's gadget, with
/// the next log2(arity) of `bits`) among the level's already allocated siblings and the level's
/// hash; every bit must be used. The root's equality allocates nothing.
fn path_with_given_bits(
    cs: &mut WitnessCs,
    bits: &[AllocatedBit],
    leaf: AllocatedNum<Fr>,
    path: Vec<Vec<AllocatedNum<Fr>>>,
    hash: impl Fn(&mut WitnessCs, &[AllocatedNum<Fr>]) -> Synth<AllocatedNum<Fr>>,
) -> Synth<AllocatedNum<Fr>> {
    let mut bits = bits.iter().cloned().map(Boolean::from);
    let mut cur = leaf;
    for siblings in path {
        let arity = siblings.len() + 1;
        if !arity.is_power_of_two() {
            return Err(SynthesisError::Unsatisfiable);
        }
        let index: Vec<Boolean> = bits.by_ref().take(arity.trailing_zeros() as usize).collect();
        if index.len() != arity.trailing_zeros() as usize {
            return Err(SynthesisError::Unsatisfiable);
        }
        let inserted = insert(cs, &cur, &index, &siblings)?;
        cur = hash(cs, &inserted)?;
    }
    if bits.next().is_some() {
        return Err(SynthesisError::Unsatisfiable);
    }
    Ok(cur)
}
