//! The PoRep partition's witness with its SHA-256 work done natively: this module walks
//! storage-proofs-porep's `StackedCircuit` allocation sequence step by step — the common part
//! (replica id, commitments, the comm_r check), then per challenge the comm_d path, the
//! parents' columns and paths, the challenge, the labels of every layer, the encoding and the
//! column hash — calling the circuit's own gadgets for the Poseidon parts and
//! [`cuzk_witness::sha256`] for everything hashed with SHA-256 (the labels and the comm_d Merkle
//! path, ~90 % of the gadget path's time). Field-to-bits unpacking is native too. Every value
//! lands in the same aux or input slot as the gadget path would put it; the tests compare the
//! two witnesses element by element, and `cuzk-pce`'s tests compare the proofs' a, b, c with
//! bellperson's.

use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::Hasher;
use storage_proofs_core::gadgets::{encode::encode, uint64::UInt64};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{Column, ColumnProof, Proof as VanillaProof, StackedCircuit, TOTAL_PARENTS};

use cuzk_witness::sha256::{sha256, Bit};
use cuzk_witness::WitnessCs;

use crate::poseidon_witness::{hash_allocated_any, levels, por_inclusion, Levels};
use crate::sha256_witness::{hash_two, num_bits, pack_digest};

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// What one partition circuit is made of (the fields `StackedCompound::circuit` fills in).
pub struct Partition<Tree: 'static + MerkleTreeTrait> {
    /// The sector's replica id.
    pub replica_id: Domain<Tree>,
    /// The unsealed-data commitment comm_d.
    pub comm_d: <Sha256Hasher as Hasher>::Domain,
    /// The replica commitment comm_r (`H(comm_c, comm_r_last)`).
    pub comm_r: Domain<Tree>,
    /// The root of the replica's Merkle tree.
    pub comm_r_last: Domain<Tree>,
    /// The root of the column commitments' tree.
    pub comm_c: Domain<Tree>,
    /// The partition's challenge proofs.
    pub proofs: Vec<VanillaProof<Tree, Sha256Hasher>>,
}

impl<Tree: 'static + MerkleTreeTrait> Clone for Partition<Tree> {
    fn clone(&self) -> Self {
        Partition { proofs: self.proofs.clone(), ..*self }
    }
}

impl<Tree: 'static + MerkleTreeTrait> Partition<Tree> {
    /// The partition cut into one partition per challenge: each repeats the common part and
    /// holds one challenge, so their witnesses can be computed apart and joined.
    pub fn per_challenge(self) -> Vec<Partition<Tree>> {
        let Partition { replica_id, comm_d, comm_r, comm_r_last, comm_c, proofs } = self;
        proofs.into_iter().map(|p| Partition { replica_id, comm_d, comm_r, comm_r_last, comm_c, proofs: vec![p] }).collect()
    }

    /// Appends this circuit's witness to `cs` (an empty witness holding ONE gives the whole
    /// circuit's assignments).
    pub fn synthesize(self, cs: &mut WitnessCs) -> Result<(), SynthesisError> {
        let Partition { replica_id, comm_d, comm_r, comm_r_last, comm_c, proofs } = self;
        let alloc = |cs: &mut WitnessCs, v: Fr| AllocatedNum::alloc(cs, || Ok(v));
        let rid = alloc(cs, replica_id.into())?;
        rid.inputize(&mut *cs)?;
        let rid_bits = views(&reverse_bit_numbering(rid.to_bits_le(&mut *cs)?))?;
        let comm_d = alloc(cs, comm_d.into())?;
        comm_d.inputize(&mut *cs)?;
        let comm_r = alloc(cs, comm_r.into())?;
        comm_r.inputize(&mut *cs)?;
        let comm_r_last = alloc(cs, comm_r_last.into())?;
        let comm_c = alloc(cs, comm_c.into())?;
        // Filecoin's replica trees hash with Poseidon, which is what the native walk computes.
        if <Tree::Hasher as Hasher>::name() != PoseidonHasher::name() {
            return Err(SynthesisError::Unsatisfiable);
        }
        // comm_r = H(comm_c || comm_r_last); the equality itself allocates nothing.
        hash_allocated_any(cs, &[comm_c.clone(), comm_r_last.clone()])?;

        // The Merkle paths and layer counts come from the vanilla proofs; the rest from the
        // circuit's own per-challenge type, which converts the vanilla proofs exactly as the
        // gadget path does (the type is not exported: `same_type` names it through
        // `StackedCircuit::synthesize`'s signature).
        let paths: Vec<ChallengePaths> = proofs.iter().map(ChallengePaths::of::<Tree>).collect::<Result<_, _>>()?;
        let circuit_proofs: Vec<_> = proofs.into_iter().map(Into::into).collect();
        same_type(&circuit_proofs, StackedCircuit::<Tree, Sha256Hasher>::synthesize::<&mut WitnessCs>);

        for (p, paths) in circuit_proofs.into_iter().zip(paths) {
            let layers = paths.layers;
            let data_leaf = AllocatedNum::alloc(&mut *cs, || p.data_leaf.ok_or(SynthesisError::AssignmentMissing))?;
            sha256_inclusion(cs, &paths.comm_d, &data_leaf)?;

            let (mut drg, mut exp) = (Vec::new(), Vec::new());
            for (list, list_paths, out) in [(p.drg_parents_proofs, paths.drg, &mut drg), (p.exp_parents_proofs, paths.exp, &mut exp)] {
                if list.len() != list_paths.len() {
                    return Err(SynthesisError::Unsatisfiable);
                }
                for (parent, levels) in list.into_iter().zip(list_paths) {
                    let (col, _) = parent.alloc(&mut *cs)?;
                    let rows: Vec<_> = (1..=layers).map(|l| col.get_value(l).clone()).collect();
                    let hash = column_hash(cs, &rows)?;
                    por_inclusion(cs, hash, &levels)?;
                    out.push(col);
                }
            }

            let challenge = UInt64::alloc(&mut *cs, p.challenge)?;
            challenge.pack_into_input(&mut *cs)?;
            let node_bits = views(&challenge.to_bits_be())?;

            let mut labels = Vec::with_capacity(layers);
            for layer in 1..=layers {
                let mut parents: Vec<Vec<Bit>> = Vec::with_capacity(drg.len() + exp.len());
                for col in &drg {
                    parents.push(num_bits(cs, col.get_value(layer).get_value())?);
                }
                if layer > 1 {
                    for col in &exp {
                        parents.push(num_bits(cs, col.get_value(layer - 1).get_value())?);
                    }
                }
                labels.push(label(cs, &rid_bits, &parents, layer as u32, &node_bits)?);
            }

            let encoded = encode(&mut *cs, labels.last().ok_or(SynthesisError::Unsatisfiable)?, &data_leaf)?;
            por_inclusion(cs, encoded, &paths.comm_r_last)?;
            let hash = column_hash(cs, &labels)?;
            por_inclusion(cs, hash, &paths.comm_c)?;
        }
        Ok(())
    }
}

/// The shape of `StackedCircuit::synthesize`: its last argument is the per-challenge proofs.
type SynthesizeFn<CS, A, B, C, D, E, P> = fn(CS, A, B, C, D, E, Vec<P>) -> Result<(), SynthesisError>;

/// Makes `P` the element type of `StackedCircuit::synthesize`'s proofs argument.
fn same_type<P, CS, A, B, C, D, E>(_: &[P], _: SynthesizeFn<CS, A, B, C, D, E, P>) {}

/// How the circuit sees a gadget `Boolean` (a witness has every value).
fn views(bits: &[Boolean]) -> Result<Vec<Bit>, SynthesisError> {
    bits.iter()
        .map(|b| {
            Ok(match b {
                Boolean::Constant(v) => Bit::constant(*v),
                Boolean::Is(a) => Bit::var(a.get_value().ok_or(SynthesisError::AssignmentMissing)?),
                Boolean::Not(a) => Bit { value: !a.get_value().ok_or(SynthesisError::AssignmentMissing)?, constant: false, negated: true },
            })
        })
        .collect()
}

fn pad_to(bits: &mut Vec<Bit>, multiple: usize) {
    while bits.len() % multiple != 0 {
        bits.push(Bit::constant(false));
    }
}

/// `create_label_circuit`: SHA-256 of replica id ‖ layer ‖ node ‖ the 37 parents (the
/// parents list repeated as the circuit repeats it), packed.
fn label(cs: &mut WitnessCs, rid: &[Bit], parents: &[Vec<Bit>], layer: u32, node: &[Bit]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut input = Vec::with_capacity((2 + TOTAL_PARENTS) * 256);
    input.extend_from_slice(rid);
    pad_to(&mut input, 256);
    input.extend((0..32).rev().map(|i| Bit::constant((layer >> i) & 1 == 1)));
    input.extend_from_slice(node);
    pad_to(&mut input, 512);
    let expanded: Vec<&Vec<Bit>> = if layer > 1 {
        parents.iter().chain(parents).chain(&parents[..9]).collect()
    } else {
        parents.iter().cycle().take(parents.len() * 6).chain(parents.first()).collect()
    };
    assert_eq!(expanded.len(), TOTAL_PARENTS, "the label's parents");
    for p in expanded {
        input.extend_from_slice(p);
        pad_to(&mut input, 256);
    }
    let digest = sha256(&mut cs.aux, &input);
    pack_digest(cs, &digest)
}

/// `PoRCircuit` over the binary SHA-256 tree (comm_d), private root: per level the index
/// bit, the sibling, the two `pick`s of the insertion, the two leaves' bits and the hash;
/// then the index bits packed into public inputs.
fn sha256_inclusion(cs: &mut WitnessCs, path: &[(Vec<Option<Fr>>, Option<usize>)], leaf: &AllocatedNum<Fr>) -> Result<(), SynthesisError> {
    let missing = SynthesisError::AssignmentMissing;
    let mut cur = leaf.get_value().ok_or(missing)?;
    let mut index_bits = Vec::with_capacity(path.len());
    for (hashes, index) in path {
        let [Some(sibling)] = hashes.as_slice() else {
            return Err(SynthesisError::IncompatibleLengthVector(format!(
                "a comm_d path level with {} siblings (a binary tree has 1)",
                hashes.len()
            )));
        };
        let right = index.ok_or(SynthesisError::AssignmentMissing)? & 1 == 1;
        index_bits.push(right);
        let (l, r) = if right { (*sibling, cur) } else { (cur, *sibling) };
        cs.aux.extend([if right { Fr::ONE } else { Fr::ZERO }, *sibling, l, r]);
        cur = hash_two(cs, l, r)?.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    }
    for chunk in index_bits.chunks(Fr::CAPACITY as usize) {
        let v = chunk.iter().rev().fold(Fr::ZERO, |acc, &b| acc.double() + if b { Fr::ONE } else { Fr::ZERO });
        cs.inputs.push(v);
    }
    Ok(())
}

/// `hash_single_column` (columns of 2 or 11 layers), natively.
fn column_hash(cs: &mut WitnessCs, column: &[AllocatedNum<Fr>]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    match column.len() {
        2 | 11 => hash_allocated_any(cs, column),
        n => Err(SynthesisError::IncompatibleLengthVector(format!("a column of {n} layers"))),
    }
}

/// One challenge's Merkle paths and layer count, from its vanilla proof.
struct ChallengePaths {
    layers: usize,
    comm_d: Vec<(Vec<Option<Fr>>, Option<usize>)>,
    comm_r_last: Levels,
    comm_c: Levels,
    drg: Vec<Levels>,
    exp: Vec<Levels>,
}

impl ChallengePaths {
    fn of<Tree: 'static + MerkleTreeTrait>(p: &VanillaProof<Tree, Sha256Hasher>) -> Result<Self, SynthesisError> {
        let columns = &p.replica_column_proofs;
        let column_paths = |list: &[ColumnProof<_>]| list.iter().map(column_path).collect::<Result<Vec<_>, _>>();
        Ok(ChallengePaths {
            layers: p.labeling_proofs.len(),
            comm_d: p.comm_d_proofs.as_options(),
            comm_r_last: levels(p.comm_r_last_proof.as_options())?,
            comm_c: column_path(&columns.c_x)?,
            drg: column_paths(&columns.drg_parents)?,
            exp: column_paths(&columns.exp_parents)?,
        })
    }
}

/// A column proof's fields in their serialized order: storage-proofs keeps the Merkle path of
/// a `ColumnProof` crate-private, its serde form is public, so the path is read back through it.
#[derive(serde::Deserialize)]
struct ColumnProofFields<C, P> {
    #[allow(dead_code)]
    column: C,
    inclusion_proof: P,
}

/// The Merkle path of a column proof (the column's hash up to comm_c).
fn column_path<P>(p: &ColumnProof<P>) -> Result<Levels, SynthesisError>
where
    P: MerkleProofTrait + serde::Serialize + serde::de::DeserializeOwned,
{
    let unreadable = |e: bincode::Error| SynthesisError::IncompatibleLengthVector(format!("a column proof's Merkle path: {e}"));
    let bytes = bincode::serialize(p).map_err(unreadable)?;
    let fields: ColumnProofFields<Column<P::Hasher>, P> = bincode::deserialize(&bytes).map_err(unreadable)?;
    levels(fields.inclusion_proof.as_options())
}
