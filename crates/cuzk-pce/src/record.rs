//! Extraction: a recording `ConstraintSystem` that turns one synthesis into a
//! [`PreCompiledCircuit`]. PoRep synthesis interleaves `alloc_input` with `enforce`, so the
//! final number of inputs is unknown while constraints are recorded: each column is recorded
//! tagged input-or-aux with its own index and remapped to `inputs first, then aux` once the
//! circuit is complete (using the running input count as the aux offset is the bug the seeds
//! found). The `input_i · 0 = 0` rows that the Groth16 prover appends are added at the end, so
//! evaluations match the prover's a, b, c row for row.

use std::collections::HashMap;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use cuzk_core::progress::Progress;
use ff::{Field, PrimeField};

use crate::matrix::{CsrMatrix, PreCompiledCircuit};
use crate::{PceError, Result};

const INPUT_TAG: u32 = 1 << 31;

#[derive(Default)]
struct Building {
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    coeff_idx: Vec<u16>,
}

/// Records A, B and C of a circuit (values are never computed).
pub struct RecordingCs {
    num_inputs: usize,
    num_aux: usize,
    mats: [Building; 3],
    coeffs: Vec<Scalar>,
    coeff_ids: HashMap<[u8; 32], u16>,
    overflow: Option<String>,
    /// Constraints recorded, reported every [`PROGRESS_STEP`] rows while extracting.
    progress: Option<Progress>,
}

const PROGRESS_STEP: usize = 1 << 16;

impl Default for RecordingCs {
    fn default() -> Self {
        let mut cs = RecordingCs {
            num_inputs: 1,
            num_aux: 0,
            mats: Default::default(),
            coeffs: Vec::new(),
            coeff_ids: HashMap::new(),
            overflow: None,
            progress: None,
        };
        for m in &mut cs.mats {
            m.row_ptr.push(0);
        }
        cs.intern(&Scalar::ONE);
        cs.intern(&-Scalar::ONE);
        cs
    }
}

impl RecordingCs {
    fn intern(&mut self, c: &Scalar) -> u16 {
        let key = c.to_repr();
        if let Some(&i) = self.coeff_ids.get(&key) {
            return i;
        }
        let Ok(i) = u16::try_from(self.coeffs.len()) else {
            self.overflow.get_or_insert_with(|| "more than 65536 distinct coefficients".into());
            return 0;
        };
        self.coeffs.push(*c);
        self.coeff_ids.insert(key, i);
        i
    }

    fn push_row(&mut self, which: usize, lc: &LinearCombination<Scalar>) {
        for (var, coeff) in lc.iter() {
            // The prover skips zero coefficients (a merged `x − x`) in values and densities.
            if bool::from(coeff.is_zero()) {
                continue;
            }
            let col = match var.get_unchecked() {
                Index::Input(i) => i as u32 | INPUT_TAG,
                Index::Aux(i) => i as u32,
            };
            let ci = self.intern(coeff);
            let m = &mut self.mats[which];
            m.cols.push(col);
            m.coeff_idx.push(ci);
        }
        let m = &mut self.mats[which];
        match u32::try_from(m.cols.len()) {
            Ok(n) => m.row_ptr.push(n),
            Err(_) => {
                self.overflow.get_or_insert_with(|| "more than 2^32 non-zeros in one matrix".into());
                m.row_ptr.push(u32::MAX);
            }
        }
    }

    /// Finishes the recording: appends the per-input rows, remaps tagged columns and
    /// computes the densities.
    pub fn finish(mut self) -> Result<PreCompiledCircuit> {
        if let Some(p) = self.progress.take() {
            p.set((self.mats[2].row_ptr.len() - 1) as u64);
        }
        if self.num_inputs + self.num_aux >= INPUT_TAG as usize {
            return Err(PceError::TooLarge(format!("{} variables", self.num_inputs + self.num_aux)));
        }
        for i in 0..self.num_inputs {
            let lc = LinearCombination::zero() + Variable::new_unchecked(Index::Input(i));
            self.push_row(0, &lc);
            self.push_row(1, &LinearCombination::zero());
            self.push_row(2, &LinearCombination::zero());
        }
        if let Some(why) = self.overflow {
            return Err(PceError::TooLarge(why));
        }
        let (n_in, n_aux) = (self.num_inputs, self.num_aux);
        let words = |n: usize| vec![0u64; n.div_ceil(64)];
        let (mut a_aux, mut b_in, mut b_aux) = (words(n_aux), words(n_in), words(n_aux));
        let [a, b, c] = self.mats;
        let finish = |mut m: Building, dens: Option<(&mut Vec<u64>, &mut Vec<u64>)>| -> CsrMatrix {
            let mut dens = dens;
            for col in m.cols.iter_mut() {
                let (is_input, idx) = (*col & INPUT_TAG != 0, (*col & !INPUT_TAG) as usize);
                if let Some((din, daux)) = dens.as_mut() {
                    let bits = if is_input { &mut **din } else { &mut **daux };
                    bits[idx / 64] |= 1 << (idx % 64);
                }
                *col = if is_input { idx as u32 } else { (n_in + idx) as u32 };
            }
            CsrMatrix { row_ptr: m.row_ptr, cols: m.cols, coeff_idx: m.coeff_idx }
        };
        // A's input density is not tracked by the prover (every input has an A query).
        let mut a_in_unused = words(n_in);
        let a = finish(a, Some((&mut a_in_unused, &mut a_aux)));
        let b = finish(b, Some((&mut b_in, &mut b_aux)));
        let c = finish(c, None);
        Ok(PreCompiledCircuit {
            num_constraints: a.rows(),
            num_inputs: n_in,
            num_aux: n_aux,
            a,
            b,
            c,
            coeffs: self.coeffs,
            a_aux_density: a_aux,
            b_input_density: b_in,
            b_aux_density: b_aux,
        })
    }
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.push_row(0, &a(LinearCombination::zero()));
        self.push_row(1, &b(LinearCombination::zero()));
        self.push_row(2, &c(LinearCombination::zero()));
        let rows = self.mats[2].row_ptr.len() - 1;
        if rows % PROGRESS_STEP == 0 {
            if let Some(p) = &self.progress {
                p.set(rows as u64);
            }
        }
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Records `circuit` into a [`PreCompiledCircuit`].
pub fn extract<C: Circuit<Scalar>>(circuit: C) -> Result<PreCompiledCircuit> {
    let mut cs = RecordingCs { progress: Some(Progress::start("PCE extraction", "constraints", 0)), ..RecordingCs::default() };
    circuit.synthesize(&mut cs).map_err(|e| PceError::Synthesis(e.to_string()))?;
    cs.finish()
}
