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

/// Columns recorded at once by one remapping task.
const REMAP_TASK: usize = 1 << 20;

/// `m`'s tagged columns remapped to `inputs first, then aux`, in parallel; with `density`,
/// also the bitmaps of the input and aux columns it uses (else empty bitmaps).
fn remap(mut m: Building, n_in: usize, n_aux: usize, density: bool) -> (CsrMatrix, (Vec<u64>, Vec<u64>)) {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    let words = |n: usize| if density { (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect() } else { Vec::new() };
    let (din, daux): (Vec<AtomicU64>, Vec<AtomicU64>) = (words(n_in), words(n_aux));
    m.cols.par_chunks_mut(REMAP_TASK).for_each(|chunk| {
        for col in chunk.iter_mut() {
            let (is_input, idx) = (*col & INPUT_TAG != 0, (*col & !INPUT_TAG) as usize);
            if density {
                let bits = if is_input { &din } else { &daux };
                bits[idx / 64].fetch_or(1 << (idx % 64), Ordering::Relaxed);
            }
            *col = if is_input { idx as u32 } else { (n_in + idx) as u32 };
        }
    });
    let plain = |v: Vec<AtomicU64>| v.into_iter().map(AtomicU64::into_inner).collect();
    (CsrMatrix { row_ptr: m.row_ptr, cols: m.cols, coeff_idx: m.coeff_idx }, (plain(din), plain(daux)))
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
        let [a, b, c] = self.mats;
        // A's input density is not tracked by the prover (every input has an A query).
        let (a, (_, a_aux)) = remap(a, n_in, n_aux, true);
        let (b, (b_in, b_aux)) = remap(b, n_in, n_aux, true);
        let (c, _) = remap(c, n_in, n_aux, false);
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
            identity: None,
            entries_released: false,
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

/// One independent part of a circuit for [`extract_split`]: it synthesises its constraints
/// into the system it is given, sharing nothing with the other parts but the constant ONE.
pub type RecordPiece = Box<dyn FnOnce(&mut RecordingCs) -> std::result::Result<(), SynthesisError> + Send>;

/// Pieces recorded at once by [`extract_split`]: enough to keep the threads busy while only
/// this many recordings wait to be joined.
const SPLIT_BATCH: usize = 64;

/// The PCE of a circuit that is `pieces` synthesised one after the other (a PoSt circuit: one
/// piece per sector), recorded in parallel and joined in order: piece k's inputs and aux
/// variables follow those of pieces 0..k, its rows follow theirs, its coefficients are
/// re-interned into one table. Equal to [`extract`] of the whole circuit exactly when the
/// circuit synthesises its pieces in this order and they share nothing but ONE (a test checks
/// that for PoSt); a piece that fails fails the whole.
pub fn extract_split(mut pieces: Vec<RecordPiece>) -> Result<PreCompiledCircuit> {
    use rayon::prelude::*;
    let progress = Progress::start("PCE extraction", "constraints", 0);
    let mut whole = RecordingCs::default();
    while !pieces.is_empty() {
        let batch: Vec<RecordPiece> = pieces.drain(..SPLIT_BATCH.min(pieces.len())).collect();
        let recorded: Vec<RecordingCs> = batch
            .into_par_iter()
            .map(|piece| {
                let mut cs = RecordingCs::default();
                piece(&mut cs).map_err(|e| PceError::Synthesis(e.to_string()))?;
                Ok(cs)
            })
            .collect::<Result<_>>()?;
        for part in recorded {
            whole.append(part);
        }
        progress.set((whole.mats[2].row_ptr.len() - 1) as u64);
    }
    whole.progress = Some(progress);
    whole.finish()
}

impl RecordingCs {
    /// Appends `part`, recorded on its own, as if it had been synthesised here next: its ONE
    /// is this system's ONE, its other inputs and its aux variables come after this system's,
    /// its coefficients are interned here.
    fn append(&mut self, part: RecordingCs) {
        if let Some(why) = part.overflow {
            self.overflow.get_or_insert(why);
        }
        // Columns are u32 with the input tag in bit 31: past that, nothing more is mapped and
        // `finish` refuses the circuit.
        if self.num_inputs + part.num_inputs + self.num_aux + part.num_aux >= INPUT_TAG as usize {
            self.overflow.get_or_insert_with(|| "2^31 or more variables".into());
            self.num_inputs += part.num_inputs - 1;
            self.num_aux += part.num_aux;
            return;
        }
        let (in_base, aux_base) = (self.num_inputs as u32 - 1, self.num_aux as u32);
        let coeff_map: Vec<u16> = part.coeffs.iter().map(|c| self.intern(c)).collect();
        for (into, from) in self.mats.iter_mut().zip(part.mats) {
            let base = *into.row_ptr.last().unwrap_or(&0);
            into.row_ptr.extend(from.row_ptr[1..].iter().map(|&r| base.saturating_add(r)));
            into.cols.extend(from.cols.iter().map(|&col| match (col & INPUT_TAG != 0, col & !INPUT_TAG) {
                (true, 0) => col,
                (true, i) => (in_base + i) | INPUT_TAG,
                (false, i) => aux_base + i,
            }));
            into.coeff_idx.extend(from.coeff_idx.iter().map(|&c| coeff_map[c as usize]));
        }
        if u32::try_from(self.mats.iter().map(|m| m.cols.len()).max().unwrap_or(0)).is_err() {
            self.overflow.get_or_insert_with(|| "more than 2^32 non-zeros in one matrix".into());
        }
        self.num_inputs += part.num_inputs - 1;
        self.num_aux += part.num_aux;
    }
}

#[cfg(test)]
mod tests {
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::Scalar;
    use cuzk_core::testing::RandomCircuit;

    use super::*;

    /// Random circuits synthesised one after the other, as a PoSt circuit does its sectors.
    #[derive(Clone)]
    struct Sequence(Vec<RandomCircuit>);

    impl Circuit<Scalar> for Sequence {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            for (i, c) in self.0.into_iter().enumerate() {
                c.synthesize(&mut cs.namespace(|| format!("piece {i}")))?;
            }
            Ok(())
        }
    }

    fn pieces(s: &Sequence) -> Vec<RecordPiece> {
        s.0.iter().cloned().map(|c| Box::new(move |cs: &mut RecordingCs| c.synthesize(cs)) as RecordPiece).collect()
    }

    /// Joining pieces past 2^31 variables (the input tag's bit) maps no column and the
    /// recording is refused as too large, in any build (no u32 overflow on the way).
    #[test]
    fn appending_past_the_column_range_is_refused_not_wrapped() {
        let mut whole = RecordingCs { num_aux: (INPUT_TAG as usize) - 10, ..RecordingCs::default() };
        let mut part = RecordingCs::default();
        for _ in 0..20 {
            part.alloc(|| "x", || Ok(Scalar::ONE)).unwrap();
        }
        let x = part.alloc(|| "y", || Ok(Scalar::ONE)).unwrap();
        part.enforce(|| "y*y", |lc| lc + x, |lc| lc + x, |lc| lc + x);
        whole.append(part);
        assert!(whole.overflow.is_some());
        assert_eq!(whole.mats[0].cols.len(), 0, "nothing was mapped");
        assert!(matches!(whole.finish(), Err(PceError::TooLarge(_))));
    }

    #[test]
    fn split_extraction_equals_the_whole_circuits_across_batches() {
        // 150 pieces: three batches, the last one partial; pieces of different sizes and
        // their own coefficients, so the join's offsets and re-interning are all exercised.
        for (count, seed) in [(1usize, 1u64), (3, 2), (150, 3)] {
            let s = Sequence((0..count).map(|i| RandomCircuit::new(seed * 1000 + i as u64, 20 + i % 7, 25 + i % 11)).collect());
            let whole = extract(s.clone()).unwrap();
            let split = extract_split(pieces(&s)).unwrap();
            assert!(whole.num_inputs > count, "the pieces have inputs of their own");
            assert_eq!(split, whole, "{count} pieces");
        }
    }

    #[test]
    fn a_failing_piece_fails_the_split_extraction() {
        let mut p = pieces(&Sequence(vec![RandomCircuit::new(1, 10, 10); 3]));
        p.insert(1, Box::new(|_: &mut RecordingCs| Err(SynthesisError::AssignmentMissing)));
        let e = extract_split(p).unwrap_err();
        assert!(matches!(e, PceError::Synthesis(_)), "{e}");
    }
}
