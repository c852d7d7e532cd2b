//! The constraint matrices as a backend evaluates them: [`Matrices`] borrows three matrices
//! in compressed-row form (32-bit row offsets and columns, a 16-bit index per entry into one
//! table of distinct coefficients, inputs before aux in the column space), and [`MatVec`]
//! computes a = A·w, b = B·w, c = C·w for a witness w. [`evaluate_cpu`] is the CPU kernel
//! (rayon over row blocks; coefficients ±1 skip the multiply; witness values 0 and 1 are
//! recognised from a one-byte kind per value, without reading the value), and the reference
//! every device implementation is checked against. Who records the matrices (the PCE) is not
//! this module's business.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{BackendError, BackendResult};

/// Coefficient-table slot of 1 (its entries are added without a multiply).
pub const COEFF_ONE: u16 = 0;
/// Coefficient-table slot of −1 (its entries are subtracted without a multiply).
pub const COEFF_MINUS_ONE: u16 = 1;

/// One matrix in compressed-row form.
#[derive(Clone, Copy, Debug)]
pub struct CsrView<'a> {
    /// `row_ptr[r]..row_ptr[r+1]` are row r's entries; `rows + 1` long.
    pub row_ptr: &'a [u32],
    /// Column of each entry: `< num_inputs` is an input, else aux `col - num_inputs`.
    pub cols: &'a [u32],
    /// Index of each entry's coefficient in [`Matrices::coeffs`].
    pub coeff_idx: &'a [u16],
}

impl CsrView<'_> {
    /// The number of rows (constraints).
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }
}

/// A circuit's A, B and C over one coefficient table.
#[derive(Clone, Copy, Debug)]
pub struct Matrices<'a> {
    /// Inputs including ONE.
    pub num_inputs: usize,
    /// Aux variables; their columns follow the inputs'.
    pub num_aux: usize,
    /// A: row i is the left factor of constraint i, `(A·w)ᵢ · (B·w)ᵢ = (C·w)ᵢ`.
    pub a: CsrView<'a>,
    /// B: row i is the right factor of constraint i.
    pub b: CsrView<'a>,
    /// C: row i is the product side of constraint i.
    pub c: CsrView<'a>,
    /// Distinct coefficients; `coeffs[0] = 1`, `coeffs[1] = -1`.
    pub coeffs: &'a [Scalar],
    /// A digest that names these matrices wherever they are held (the PCE's circuit
    /// identity), or `None`. A backend that keeps matrices resident keys them by it, and may
    /// then serve matrices whose host entries were released ([`Matrices::entries_released`]).
    pub identity: Option<u64>,
    /// The number of rows when the host released the matrices' entries and row offsets
    /// after a device took a copy (the three views are then empty), else `None`.
    pub released_rows: Option<usize>,
}

/// a = A·w, b = B·w, c = C·w, one value per constraint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluations {
    /// A·w, one value per constraint.
    pub a: Vec<Scalar>,
    /// B·w, one value per constraint.
    pub b: Vec<Scalar>,
    /// C·w, one value per constraint.
    pub c: Vec<Scalar>,
}

impl Matrices<'_> {
    /// Constraints (rows of each matrix).
    pub fn rows(&self) -> usize {
        self.released_rows.unwrap_or_else(|| self.a.rows())
    }

    /// Whether the host released these matrices' entries (columns and coefficient indices)
    /// after a device took a copy ([`Self::released_rows`], or row offsets without their
    /// entries): only a backend holding the copy, found by [`Self::identity`], can evaluate them.
    pub fn entries_released(&self) -> bool {
        let expected = |m: &CsrView| m.row_ptr.last().is_some_and(|&n| n as usize != m.cols.len());
        self.identity.is_some() && (self.released_rows.is_some() || expected(&self.a) || expected(&self.b) || expected(&self.c))
    }

    /// Refuses matrices whose entries were released ([`Self::entries_released`]): what a
    /// backend that evaluates host matrices checks first (a device holding its own copy
    /// does not need the entries).
    pub fn check_entries_present(&self) -> BackendResult<()> {
        if self.entries_released() {
            return Err(BackendError::Input(
                "these matrices' entries were released on the host (a device holds them); reload the PCE to evaluate them here".into(),
            ));
        }
        Ok(())
    }

    /// Checks that the witness fits and the three matrices agree in shape (when their entries
    /// were released, the witness only: the row count stays, the offsets went).
    pub fn check_witness(&self, inputs: &[Scalar], aux: &[Scalar]) -> BackendResult<()> {
        if inputs.len() != self.num_inputs || aux.len() != self.num_aux {
            return Err(BackendError::Input(format!(
                "witness has {} inputs and {} aux; the matrices have {} and {}",
                inputs.len(),
                aux.len(),
                self.num_inputs,
                self.num_aux
            )));
        }
        if self.released_rows.is_none() && (self.b.rows() != self.rows() || self.c.rows() != self.rows()) {
            return Err(BackendError::Input(format!("matrices of unequal height: {}, {}, {}", self.rows(), self.b.rows(), self.c.rows())));
        }
        Ok(())
    }

    /// Checks every index (row offsets ascending and ending at the entry count, columns inside
    /// the witness, coefficient indices inside the table), in parallel: what a device kernel,
    /// which reads without bounds checks, needs to be sure of before it is handed the matrices.
    pub fn check_indices(&self) -> BackendResult<()> {
        let width = (self.num_inputs + self.num_aux) as u64;
        let table = self.coeffs.len();
        if table < 2 {
            return Err(BackendError::Input("coefficient table lacks 1 and -1".into()));
        }
        for (name, m) in [("A", &self.a), ("B", &self.b), ("C", &self.c)] {
            let bad = |what: String| Err(BackendError::Input(format!("matrix {name}: {what}")));
            if m.cols.len() != m.coeff_idx.len() {
                return bad(format!("{} columns but {} coefficient indices", m.cols.len(), m.coeff_idx.len()));
            }
            if m.row_ptr.first() != Some(&0) || m.row_ptr.last().map(|&x| x as usize) != Some(m.cols.len()) {
                return bad("row offsets do not span the entries".into());
            }
            if m.row_ptr.par_windows(2).any(|w| w[0] > w[1]) {
                return bad("row offsets descend".into());
            }
            if m.cols.par_iter().any(|&c| c as u64 >= width) {
                return bad(format!("a column outside the {width} witness values"));
            }
            if m.coeff_idx.par_iter().any(|&i| i as usize >= table) {
                return bad(format!("a coefficient index outside the table of {table}"));
            }
        }
        Ok(())
    }
}

/// Sparse matrix times witness vector on some backend.
pub trait MatVec: Send + Sync {
    /// a, b, c for the witness (`inputs[0]` is ONE), each [`Matrices::rows`] long, in host
    /// memory.
    fn mat_vec(&self, m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> BackendResult<Evaluations>;
}

const ROW_BLOCK: usize = 4096;

/// Kind of a witness value equal to zero (see [`value_kinds`]).
pub const KIND_ZERO: u8 = 0;
/// Kind of a witness value equal to one.
pub const KIND_ONE: u8 = 1;
/// Kind of any other witness value.
pub const KIND_OTHER: u8 = 2;

/// One byte per witness value (inputs, then aux).
pub fn value_kinds(inputs: &[Scalar], aux: &[Scalar]) -> Vec<u8> {
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

/// The CPU mat-vec (the witness must fit: see [`Matrices::check_witness`]).
pub fn evaluate_cpu(m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> Evaluations {
    let kinds = value_kinds(inputs, aux);
    let one = |x: &CsrView| mat_vec_cpu(m, x, &kinds, inputs, aux);
    let (a, (b, c)) = rayon::join(|| one(&m.a), || rayon::join(|| one(&m.b), || one(&m.c)));
    Evaluations { a, b, c }
}

fn mat_vec_cpu(m: &Matrices, x: &CsrView, kinds: &[u8], inputs: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
    let n_in = m.num_inputs;
    // Room for the prover's zero padding to the NTT domain, so it never reallocates; on huge
    // pages (4 GiB per matrix at 32 GiB, made afresh every partition).
    let mut out = crate::mem::vec_with_huge_pages(x.rows().max(1).next_power_of_two());
    out.resize(x.rows(), Scalar::ZERO);
    out.par_chunks_mut(ROW_BLOCK).enumerate().for_each(|(blk, chunk)| {
        let first = blk * ROW_BLOCK;
        for (k, slot) in chunk.iter_mut().enumerate() {
            let r = first + k;
            let (lo, hi) = (x.row_ptr[r] as usize, x.row_ptr[r + 1] as usize);
            let mut acc = Scalar::ZERO;
            for e in lo..hi {
                let col = x.cols[e] as usize;
                // Zeros and ones are read from the one-byte kinds, not the 32-byte values:
                // most PoRep values are bits, so most entries never touch `aux`.
                match kinds[col] {
                    KIND_ZERO => continue,
                    KIND_ONE => {
                        acc += &m.coeffs[x.coeff_idx[e] as usize];
                        continue;
                    }
                    _ => {}
                }
                let w = if col < n_in { &inputs[col] } else { &aux[col - n_in] };
                match x.coeff_idx[e] {
                    COEFF_ONE => acc += w,
                    COEFF_MINUS_ONE => acc -= w,
                    ci => acc += *w * m.coeffs[ci as usize],
                }
            }
            *slot = acc;
        }
    });
    out
}

/// The plainest possible evaluation (one multiply per entry, no shortcuts): the reference the
/// conformance suite holds every backend's [`MatVec`] to.
pub fn evaluate_naive(m: &Matrices, inputs: &[Scalar], aux: &[Scalar]) -> Evaluations {
    let one = |x: &CsrView| -> Vec<Scalar> {
        (0..x.rows())
            .map(|r| {
                (x.row_ptr[r] as usize..x.row_ptr[r + 1] as usize)
                    .map(|e| {
                        let col = x.cols[e] as usize;
                        let w = if col < m.num_inputs { inputs[col] } else { aux[col - m.num_inputs] };
                        w * m.coeffs[x.coeff_idx[e] as usize]
                    })
                    .sum()
            })
            .collect()
    };
    Evaluations { a: one(&m.a), b: one(&m.b), c: one(&m.c) }
}

/// Owned matrices with random structure, for tests: `rows` rows of 0 to `max_row` entries
/// (a few rows much longer), columns anywhere in the witness, coefficients from a table of
/// `table` values (1 and -1 first, so their fast paths are exercised).
#[derive(Clone, Debug)]
pub struct OwnedMatrices {
    /// Inputs including ONE.
    pub num_inputs: usize,
    /// Aux variables.
    pub num_aux: usize,
    /// A, B and C as (row offsets, columns, coefficient indices), as in [`CsrView`].
    pub mats: [(Vec<u32>, Vec<u32>, Vec<u16>); 3],
    /// The coefficient table; 1 and −1 first.
    pub coeffs: Vec<Scalar>,
}

impl OwnedMatrices {
    /// Random matrices as described on [`OwnedMatrices`], the same for the same `rng` state.
    pub fn random(rng: &mut impl rand::Rng, num_inputs: usize, num_aux: usize, rows: usize, max_row: usize, table: usize) -> Self {
        let width = (num_inputs + num_aux) as u32;
        let mut coeffs = vec![Scalar::ONE, -Scalar::ONE];
        coeffs.extend((2..table.max(2)).map(|_| Scalar::random(&mut *rng)));
        let mut one = || {
            let (mut row_ptr, mut cols, mut idx) = (vec![0u32], Vec::new(), Vec::new());
            for r in 0..rows {
                let len = if r % 97 == 5 { max_row * 20 } else { rng.gen_range(0..=max_row) };
                for _ in 0..len {
                    cols.push(rng.gen_range(0..width));
                    idx.push(rng.gen_range(0..coeffs.len() as u16));
                }
                row_ptr.push(cols.len() as u32);
            }
            (row_ptr, cols, idx)
        };
        let mats = [one(), one(), one()];
        OwnedMatrices { num_inputs, num_aux, mats, coeffs }
    }

    /// The matrices as a backend reads them.
    pub fn view(&self) -> Matrices<'_> {
        fn v(m: &(Vec<u32>, Vec<u32>, Vec<u16>)) -> CsrView<'_> {
            CsrView { row_ptr: &m.0, cols: &m.1, coeff_idx: &m.2 }
        }
        Matrices {
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            a: v(&self.mats[0]),
            b: v(&self.mats[1]),
            c: v(&self.mats[2]),
            coeffs: &self.coeffs,
            identity: None,
            released_rows: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn cpu_kernel_equals_the_naive_evaluation_and_bad_indices_are_named() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let owned = OwnedMatrices::random(&mut rng, 5, 3000, 9000, 6, 40);
        let m = owned.view();
        let inputs: Vec<Scalar> = std::iter::once(Scalar::ONE).chain((1..5).map(|_| Scalar::random(&mut rng))).collect();
        let aux = super::super::conformance::edge_scalars(&mut rng, 3000);
        m.check_witness(&inputs, &aux).unwrap();
        m.check_indices().unwrap();
        assert_eq!(evaluate_cpu(&m, &inputs, &aux), evaluate_naive(&m, &inputs, &aux));
        assert!(m.check_witness(&inputs[..4], &aux).unwrap_err().to_string().contains("4 inputs"));
        let mut broken = owned.clone();
        broken.mats[1].1[7] = 3005;
        assert!(broken.view().check_indices().unwrap_err().to_string().contains("matrix B: a column"));
        let mut broken = owned.clone();
        broken.mats[2].2[3] = 40;
        assert!(broken.view().check_indices().unwrap_err().to_string().contains("matrix C: a coefficient"));
        let mut broken = owned;
        broken.mats[0].0[4] = 0;
        assert!(broken.view().check_indices().unwrap_err().to_string().contains("matrix A: row offsets"));
    }

    #[test]
    fn matrices_with_released_entries_are_refused_by_the_host_and_named_as_released() {
        use super::super::cpu::CpuBackend;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        let owned = OwnedMatrices::random(&mut rng, 2, 50, 60, 4, 8);
        let whole = Matrices { identity: Some(7), ..owned.view() };
        assert!(!whole.entries_released(), "all entries present");
        let rows_only = OwnedMatrices { mats: owned.mats.clone().map(|(rows, _, _)| (rows, Vec::new(), Vec::new())), ..owned.clone() };
        let released = Matrices { identity: Some(7), ..rows_only.view() };
        assert!(released.entries_released());
        released.check_witness(&[Scalar::ONE, Scalar::ONE], &[Scalar::ONE; 50]).expect("the shape is still known");
        let e = released.check_entries_present().unwrap_err().to_string();
        assert!(e.contains("released"), "{e}");
        whole.check_entries_present().unwrap();
        let e = CpuBackend::new().mat_vec(&released, &[Scalar::ONE, Scalar::ONE], &[Scalar::ONE; 50]).unwrap_err().to_string();
        assert!(e.contains("released"), "the CPU refuses to evaluate them: {e}");
        assert!(!rows_only.view().entries_released(), "without an identity nothing names a device copy: merely broken");
        // Released as the PCE releases them: no offsets either, the row count kept.
        let none = OwnedMatrices { mats: owned.mats.clone().map(|_| (Vec::new(), Vec::new(), Vec::new())), ..owned.clone() };
        let bare = Matrices { identity: Some(7), released_rows: Some(whole.rows()), ..none.view() };
        assert!(bare.entries_released() && bare.rows() == 60, "rows {}", bare.rows());
        bare.check_witness(&[Scalar::ONE, Scalar::ONE], &[Scalar::ONE; 50]).expect("the witness still fits");
        assert!(bare.check_witness(&[Scalar::ONE], &[Scalar::ONE; 50]).is_err(), "and a wrong one is still refused");
        let e = CpuBackend::new().mat_vec(&bare, &[Scalar::ONE, Scalar::ONE], &[Scalar::ONE; 50]).unwrap_err().to_string();
        assert!(e.contains("released"), "{e}");
    }
}
