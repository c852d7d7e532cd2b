//! The compact matrices. A [`CsrMatrix`] stores, per non-zero, a 32-bit column (inputs first,
//! then aux) and a 16-bit index into the circuit's table of distinct coefficients; rows are
//! 32-bit offsets. [`PreCompiledCircuit::matrices`] lends them to a backend's mat-vec in
//! cuzk-core's view; [`PreCompiledCircuit::evaluate`] runs the CPU kernel (rayon over row
//! blocks, ±1 coefficients and 0/1 witness values on fast paths). The density bitmaps'
//! [`popcount`] and [`bit`] are defined once in `cuzk_core::bits` and re-exported here. It
//! knows how the matrices are stored, not how they were recorded or which circuit they encode.

use blstrs::Scalar;
use cuzk_core::backend::sparse::{evaluate_cpu, CsrView, Matrices};
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
    /// The number of rows (constraints).
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// The number of stored entries (non-zero coefficients).
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// Bytes of the three arrays.
    pub fn bytes(&self) -> usize {
        self.row_ptr.len() * 4 + self.cols.len() * 4 + self.coeff_idx.len() * 2
    }
}

pub use cuzk_core::backend::sparse::{Evaluations, COEFF_MINUS_ONE, COEFF_ONE};

/// A circuit topology, recorded once.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreCompiledCircuit {
    /// Constraints including the `input_i · 0 = 0` rows the prover appends.
    pub num_constraints: usize,
    /// Inputs including ONE.
    pub num_inputs: usize,
    /// Aux variables; their columns follow the inputs'.
    pub num_aux: usize,
    /// A: row i is the left factor of constraint i, `(A·w)ᵢ · (B·w)ᵢ = (C·w)ᵢ`.
    pub a: CsrMatrix,
    /// B: row i is the right factor of constraint i.
    pub b: CsrMatrix,
    /// C: row i is the product side of constraint i.
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
    /// A digest of the circuit's identity, set by whoever loads the PCE for a circuit (the
    /// pipeline's registry), not stored in the cache: devices key their resident copy of the
    /// matrices by it, which lets the host release its entries ([`Self::with_entries_released`]).
    #[serde(skip)]
    pub identity: Option<u64>,
    /// Set by [`Self::with_entries_released`]: A, B and C hold nothing on the host (a device
    /// holds them); never stored.
    #[serde(skip)]
    pub entries_released: bool,
}

/// The density bitmaps' helpers, defined once in cuzk-core.
pub use cuzk_core::bits::{bit, popcount};

impl PreCompiledCircuit {
    /// Stored entries of A, B and C together.
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

    /// This PCE without the matrices (row offsets, columns and coefficient indices, all but
    /// ~1/20 of its bytes at 32 GiB): what the host keeps once every device holds a copy of the
    /// matrices. The coefficients, densities and counts stay (the row count among them);
    /// [`Self::evaluate`] then refuses, and only a backend holding the matrices under
    /// [`Self::identity`] can prove with it. `None` when there is no identity to find the
    /// device copy by.
    pub fn with_entries_released(&self) -> Option<PreCompiledCircuit> {
        self.identity?;
        Some(PreCompiledCircuit { entries_released: true, ..self.clone_without_matrices() })
    }

    /// Whether the matrices' entries were released ([`Self::with_entries_released`]).
    pub fn entries_released(&self) -> bool {
        self.matrices().entries_released()
    }

    fn clone_without_matrices(&self) -> PreCompiledCircuit {
        PreCompiledCircuit {
            num_constraints: self.num_constraints,
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            a: CsrMatrix::default(),
            b: CsrMatrix::default(),
            c: CsrMatrix::default(),
            coeffs: self.coeffs.clone(),
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            identity: self.identity,
            entries_released: false,
        }
    }

    /// The matrices as a backend reads them.
    pub fn matrices(&self) -> Matrices<'_> {
        fn v(m: &CsrMatrix) -> CsrView<'_> {
            CsrView { row_ptr: &m.row_ptr, cols: &m.cols, coeff_idx: &m.coeff_idx }
        }
        Matrices {
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            a: v(&self.a),
            b: v(&self.b),
            c: v(&self.c),
            coeffs: &self.coeffs,
            identity: self.identity,
            released_rows: self.entries_released.then_some(self.num_constraints),
        }
    }

    /// Evaluates the three matrices on a witness (`inputs[0]` must be ONE) with the CPU
    /// kernel ([`cuzk_core::backend::sparse::evaluate_cpu`]).
    pub fn evaluate(&self, inputs: &[Scalar], aux: &[Scalar]) -> Result<Evaluations> {
        if self.entries_released() {
            return Err(PceError::Witness(
                "the matrices' entries were released on the host (a device holds them): reload the PCE to evaluate here".into(),
            ));
        }
        if inputs.len() != self.num_inputs || aux.len() != self.num_aux {
            return Err(PceError::Witness(format!(
                "witness has {} inputs and {} aux; the circuit has {} and {}",
                inputs.len(),
                aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        Ok(evaluate_cpu(&self.matrices(), inputs, aux))
    }
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
