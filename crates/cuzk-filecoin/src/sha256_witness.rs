//! The witnesses of Filecoin's SHA-256 hash functions (filecoin-hashers' `Sha256Function`)
//! on top of [`cuzk_witness::sha256`]: a field element's bits as `to_bits_le` allocates them
//! and the hash reads them (bytes reversed), the digest packed back into a field element, and
//! the two-leaf hash of the binary SHA-256 trees (PoRep's comm_d, SnapDeals' TreeD and apex
//! tree). Every value lands where the gadgets would put it; the PoRep and SnapDeals witness
//! tests compare them with the gadgets'. It knows no circuit.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};

use cuzk_witness::sha256::{sha256, Bit};
use cuzk_witness::WitnessCs;

/// `AllocatedNum::to_bits_le` (255 allocated bits, least significant first) followed by
/// `reverse_bit_numbering` (pad to 256 with a constant zero, reverse each byte).
pub(crate) fn num_bits(cs: &mut WitnessCs, v: Option<Fr>) -> Result<Vec<Bit>, SynthesisError> {
    let repr = v.ok_or(SynthesisError::AssignmentMissing)?.to_repr();
    let bit = |i: usize| i < Fr::NUM_BITS as usize && (repr.as_ref()[i / 8] >> (i % 8)) & 1 == 1;
    cs.aux.extend((0..Fr::NUM_BITS as usize).map(|i| if bit(i) { Fr::ONE } else { Fr::ZERO }));
    let mut out = Vec::with_capacity(256);
    for byte in 0..32 {
        for j in (0..8).rev() {
            let i = byte * 8 + j;
            out.push(if i < Fr::NUM_BITS as usize { Bit::var(bit(i)) } else { Bit::constant(false) });
        }
    }
    Ok(out)
}

/// A digest's bits with each byte reversed, the first 254 packed into one allocated number
/// (`multipack::pack_bits`, as both the label and the SHA-256 tree hash end).
pub(crate) fn pack_digest(cs: &mut WitnessCs, digest: &[Bit]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut repr = [0u8; 32];
    for (i, b) in digest.chunks(8).flat_map(|c| c.iter().rev()).take(Fr::CAPACITY as usize).enumerate() {
        repr[i / 8] |= (b.value as u8) << (i % 8);
    }
    let v = Option::<Fr>::from(Fr::from_repr(repr)).ok_or(SynthesisError::Unsatisfiable)?;
    AllocatedNum::alloc(cs, || Ok(v))
}

/// `Sha256Function::hash2_circuit` (and `hash_multi_leaf_circuit` over two leaves): both
/// values' 255 bits allocated, bytes reversed, hashed, the digest packed.
pub(crate) fn hash_two(cs: &mut WitnessCs, a: Fr, b: Fr) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut preimage = num_bits(cs, Some(a))?;
    preimage.extend(num_bits(cs, Some(b))?);
    let digest = sha256(&mut cs.aux, &preimage);
    pack_digest(cs, &digest)
}
