//! The PoSt partition's witness with its Poseidon work done natively: this module walks
//! `FallbackPoStCircuit`'s allocation sequence per sector — comm_r_last, comm_c, comm_r (and
//! its input), H(comm_c, comm_r_last), then per challenge the leaf and its Merkle path
//! ([`crate::poseidon_witness::por_inclusion`]: storage-proofs' own insertion gadget and
//! bellperson's packing around a native hash per level) — with [`crate::poseidon_witness`]
//! for every hash (97 % of the aux values and nearly all of the gadget path's time). The
//! values come from the laid-out vanilla proofs as `FallbackPoStCompound::circuit` takes them, the last public sector repeated
//! for padding as it does. Sectors are independent pieces (`cuzk_pce::witness::split_witness`);
//! the tests compare the result with the circuit's own witness value for value.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use filecoin_hashers::Hasher;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_post::fallback::{self, SectorProof};

use cuzk_pce::witness::{split_witness, Piece};
use cuzk_pce::PreCompiledCircuit;
use cuzk_witness::WitnessCs;

use crate::poseidon_witness::{hash_allocated_any, levels, por_inclusion, Levels};
use crate::{Error, Result};

/// One challenge of a sector: the challenged leaf and its path.
struct Challenge {
    leaf: Fr,
    levels: Levels,
}

/// The values one sector of the circuit is built from.
pub(crate) struct SectorValues {
    comm_r: Fr,
    comm_c: Fr,
    comm_r_last: Fr,
    challenges: Vec<Challenge>,
}

/// The sectors of `partition` paired with their public sectors as the compound circuit pairs
/// them (partition 0 of `inputs`; the last public sector repeated where the proof is padded).
pub(crate) fn sector_values<Tree: 'static + MerkleTreeTrait>(
    inputs: &fallback::PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    partition: &fallback::Proof<Tree::Proof>,
) -> Result<Vec<SectorValues>> {
    let last = inputs.sectors.last().ok_or_else(|| Error::Witness("a PoSt partition without public sectors".into()))?;
    partition
        .sectors
        .iter()
        .enumerate()
        .map(|(i, proof)| one_sector::<Tree>(inputs.sectors.get(i).unwrap_or(last).comm_r.into(), proof))
        .collect()
}

fn one_sector<Tree: 'static + MerkleTreeTrait>(comm_r: Fr, proof: &SectorProof<Tree::Proof>) -> Result<SectorValues> {
    let missing = |e: SynthesisError| Error::Witness(format!("a vanilla inclusion proof: {e}"));
    let challenges = proof
        .inclusion_proofs()
        .iter()
        .map(|p| Ok(Challenge { leaf: p.leaf().into(), levels: levels(p.as_options()).map_err(missing)? }))
        .collect::<Result<Vec<_>>>()?;
    Ok(SectorValues { comm_r, comm_c: proof.comm_c.into(), comm_r_last: proof.comm_r_last.into(), challenges })
}

/// Appends one sector's assignments to `cs`, in the circuit's allocation order.
fn synthesize_sector(cs: &mut WitnessCs, s: &SectorValues) -> std::result::Result<(), SynthesisError> {
    let alloc = |cs: &mut WitnessCs, v: Fr| AllocatedNum::alloc(cs, || Ok(v));
    let comm_r_last = alloc(cs, s.comm_r_last)?;
    let comm_c = alloc(cs, s.comm_c)?;
    let comm_r = alloc(cs, s.comm_r)?;
    comm_r.inputize(&mut *cs)?;
    // H(comm_c, comm_r_last); its equality with comm_r allocates nothing.
    hash_allocated_any(cs, &[comm_c, comm_r_last])?;
    for c in &s.challenges {
        // The leaf is allocated (`Root::Val`), the root is comm_r_last's variable.
        let leaf = alloc(cs, c.leaf)?;
        por_inclusion(cs, leaf, &c.levels)?;
    }
    Ok(())
}

/// One witness piece per sector of `sectors`.
pub(crate) fn native_pieces(sectors: Vec<SectorValues>) -> Vec<Piece> {
    sectors.into_iter().map(|s| Box::new(move |cs: &mut WitnessCs| synthesize_sector(cs, &s)) as Piece).collect()
}

/// The partition's witness for `pce` from its sectors' values, one piece per sector in
/// parallel, joined and checked against the PCE's counts.
pub(crate) fn native_witness(sectors: Vec<SectorValues>, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    Ok(split_witness(native_pieces(sectors), pce)?)
}
