//! The compact matrices and their evaluation. A [`CsrMatrix`] stores, per non-zero, a 32-bit
//! column (inputs first, then aux) and a 16-bit index into the circuit's table of distinct
//! coefficients; rows are 32-bit offsets. `a = A·w` runs in parallel over row blocks with
//! rayon; coefficients ±1 skip the multiply, and witness values 0 and 1 (most PoRep values are
//! bits) are recognised from a one-byte kind per value, without reading the value at all.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{PceError, Result};

/// One sparse matrix in compressed-row form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CsrMatrix {
    /// `row_ptr[r]..row_ptr[r+1]` are row r's entries; `rows + 1` long.
    pub row_ptr: Vec<u32>,
    /// Column of each entry: `< num_inputs` is an input, else aux `col - num_inputs`.
    pub cols: Vec<u32>,
    /// Index of each entry's coefficient in [`PreCompiledCircuit::coeffs`].
    pub coeff_idx: Vec<u16>,
}

impl CsrMatrix {
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// Bytes of the three arrays.
    pub fn bytes(&self) -> usize {
        self.row_ptr.len() * 4 + self.cols.len() * 4 + self.coeff_idx.len() * 2
    }
}

/// Coefficient table slots with a fast path.
pub const COEFF_ONE: u16 = 0;
pub const COEFF_MINUS_ONE: u16 = 1;

/// A circuit topology, recorded once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreCompiledCircuit {
    /// Constraints including the `input_i · 0 = 0` rows the prover appends.
    pub num_constraints: usize,
    /// Inputs including ONE.
    pub num_inputs: usize,
    pub num_aux: usize,
    pub a: CsrMatrix,
    pub b: CsrMatrix,
    pub c: CsrMatrix,
    /// Distinct coefficients; `coeffs[0] = 1`, `coeffs[1] = -1`.
    #[serde(with = "scalar_vec")]
    pub coeffs: Vec<Scalar>,
    /// Aux variables that appear in A (bit per aux, 64 per word).
    pub a_aux_density: Vec<u64>,
    /// Inputs that appear in B.
    pub b_input_density: Vec<u64>,
    /// Aux variables that appear in B.
    pub b_aux_density: Vec<u64>,
}

/// a = A·w, b = B·w, c = C·w, one value per constraint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluations {
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
}

/// Set bits in a density bitmap.
pub fn popcount(bits: &[u64]) -> usize {
    bits.iter().map(|w| w.count_ones() as usize).sum()
}

/// Whether bit `i` is set.
pub fn bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

const ROW_BLOCK: usize = 4096;

impl PreCompiledCircuit {
    pub fn nnz(&self) -> usize {
        self.a.nnz() + self.b.nnz() + self.c.nnz()
    }

    /// Bytes of the matrices, coefficient table and bitmaps.
    pub fn bytes(&self) -> usize {
        self.a.bytes()
            + self.b.bytes()
            + self.c.bytes()
            + self.coeffs.len() * 32
            + (self.a_aux_density.len() + self.b_input_density.len() + self.b_aux_density.len()) * 8
    }

    /// Evaluates the three matrices on a witness (`inputs[0]` must be ONE).
    pub fn evaluate(&self, inputs: &[Scalar], aux: &[Scalar]) -> Result<Evaluations> {
        if inputs.len() != self.num_inputs || aux.len() != self.num_aux {
            return Err(PceError::Witness(format!(
                "witness has {} inputs and {} aux; the circuit has {} and {}",
                inputs.len(),
                aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        let kinds = value_kinds(inputs, aux);
        let (a, (b, c)) = rayon::join(
            || self.mat_vec(&self.a, &kinds, inputs, aux),
            || rayon::join(|| self.mat_vec(&self.b, &kinds, inputs, aux), || self.mat_vec(&self.c, &kinds, inputs, aux)),
        );
        Ok(Evaluations { a, b, c })
    }

    fn mat_vec(&self, m: &CsrMatrix, kinds: &[u8], inputs: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
        let n_in = self.num_inputs;
        // Room for the prover's zero padding to the NTT domain, so it never reallocates.
        let mut out = Vec::with_capacity(m.rows().max(1).next_power_of_two());
        out.resize(m.rows(), Scalar::ZERO);
        out.par_chunks_mut(ROW_BLOCK).enumerate().for_each(|(blk, chunk)| {
            let first = blk * ROW_BLOCK;
            for (k, slot) in chunk.iter_mut().enumerate() {
                let r = first + k;
                let (lo, hi) = (m.row_ptr[r] as usize, m.row_ptr[r + 1] as usize);
                let mut acc = Scalar::ZERO;
                for e in lo..hi {
                    let col = m.cols[e] as usize;
                    // Zeros and ones are read from the one-byte kinds, not the 32-byte values:
                    // most PoRep values are bits, so most entries never touch `aux`.
                    match kinds[col] {
                        KIND_ZERO => continue,
                        KIND_ONE => {
                            acc += &self.coeffs[m.coeff_idx[e] as usize];
                            continue;
                        }
                        _ => {}
                    }
                    let w = if col < n_in { &inputs[col] } else { &aux[col - n_in] };
                    match m.coeff_idx[e] {
                        COEFF_ONE => acc += w,
                        COEFF_MINUS_ONE => acc -= w,
                        ci => acc += *w * self.coeffs[ci as usize],
                    }
                }
                *slot = acc;
            }
        });
        out
    }
}

const KIND_ZERO: u8 = 0;
const KIND_ONE: u8 = 1;
const KIND_OTHER: u8 = 2;

/// One byte per witness value (inputs, then aux): zero, one, or anything else.
fn value_kinds(inputs: &[Scalar], aux: &[Scalar]) -> Vec<u8> {
    let kind = |v: &Scalar| {
        if bool::from(v.is_zero()) {
            KIND_ZERO
        } else if *v == Scalar::ONE {
            KIND_ONE
        } else {
            KIND_OTHER
        }
    };
    let mut out = Vec::with_capacity(inputs.len() + aux.len());
    out.extend(inputs.iter().map(kind));
    out.par_extend(aux.par_iter().map(kind));
    out
}

mod scalar_vec {
    use blstrs::Scalar;
    use ff::PrimeField;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &[Scalar], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<[u8; 32]> = v.iter().map(|x| x.to_repr()).collect();
        bytes.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Scalar>, D::Error> {
        let bytes: Vec<[u8; 32]> = Vec::deserialize(d)?;
        bytes
            .into_iter()
            .map(|b| {
                Option::<Scalar>::from(Scalar::from_repr(b))
                    .ok_or_else(|| serde::de::Error::custom("coefficient is not a canonical field element"))
            })
            .collect()
    }
}
