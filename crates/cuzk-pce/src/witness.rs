//! Witnesses against a PCE, independent of any circuit family: the witness of one circuit
//! checked against the PCE's counts, the witness of a circuit split into independent pieces
//! (computed in parallel and joined in allocation order), and the value-by-value comparison
//! of the new path with a reference synthesis. It must not know which circuit it serves.

use blstrs::Scalar;
pub use cuzk_witness::WitnessCs;
use rayon::prelude::*;

use crate::matrix::PreCompiledCircuit;
use crate::reference::FullSynthesis;
use crate::{PceError, Result};

/// One independent piece of a circuit's witness (see [`split_witness`]).
pub type Piece = Box<dyn FnOnce(&mut WitnessCs) -> std::result::Result<(), bellperson::SynthesisError> + Send>;

/// The witness of one circuit from its independent pieces (e.g. one per challenge), computed in parallel and joined: every piece
/// repeats the same common part, then adds its own variables; the join keeps the common part
/// once and appends each piece's own variables in order — the allocation order of the whole
/// circuit. The pieces' sizes are derived from the PCE's totals, every piece must have the
/// same shape and repeat exactly the same common values, and the result must have the PCE's
/// counts; anything else is an error, never a silently different witness.
pub fn split_witness(pieces: Vec<Piece>, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    let n = pieces.len();
    let bad = |why: String| PceError::Witness(format!("joining {n} circuit pieces: {why}"));
    let (ti, ta) = (pce.num_inputs, pce.num_aux);
    // The first piece gets the whole circuit's room, so the join appends without moving it
    // (untouched capacity costs address space, not memory); the others about their share.
    let ws: Vec<WitnessCs> = pieces
        .into_par_iter()
        .enumerate()
        .map(|(i, piece)| {
            let (ci, ca) = if i == 0 { (ti, ta) } else { (ti / n + 64, ta / n + 8192) };
            let mut cs = WitnessCs::with_capacity(ci, ca);
            piece(&mut cs).map_err(|e| PceError::Synthesis(e.to_string()))?;
            Ok(cs)
        })
        .collect::<Result<_>>()?;
    let Some(first) = ws.first() else { return Err(bad("no pieces".into())) };
    let (si, sa) = (first.inputs.len(), first.aux.len());
    if let Some(w) = ws.iter().find(|w| (w.inputs.len(), w.aux.len()) != (si, sa)) {
        return Err(bad(format!("pieces of unequal shape: {si}+{sa} and {}+{}", w.inputs.len(), w.aux.len())));
    }
    // The common part's size: a piece is common + own, the whole is common + n × own.
    let common = |total: usize, single: usize| -> Result<usize> {
        if n == 1 {
            return Ok(0);
        }
        let extra = total.checked_sub(single).filter(|e| e % (n - 1) == 0);
        let own = extra
            .map(|e| e / (n - 1))
            .filter(|&p| p <= single)
            .ok_or_else(|| bad(format!("{total} variables are not 1 common part + {n} pieces of {single}")))?;
        Ok(single - own)
    };
    let (pre_i, pre_a) = (common(ti, si)?, common(ta, sa)?);
    let mut it = ws.into_iter();
    let mut out = it.next().unwrap_or_default();
    for (i, w) in it.enumerate() {
        if w.inputs[..pre_i] != out.inputs[..pre_i] || w.aux[..pre_a] != out.aux[..pre_a] {
            return Err(bad(format!("piece {} does not repeat the common part", i + 1)));
        }
        out.inputs.extend_from_slice(&w.inputs[pre_i..]);
        out.aux.extend_from_slice(&w.aux[pre_a..]);
    }
    if (out.inputs.len(), out.aux.len()) != (ti, ta) {
        return Err(bad(format!("{} inputs and {} aux; the PCE has {ti} and {ta}", out.inputs.len(), out.aux.len())));
    }
    Ok(out)
}

/// The witness of one circuit, checked against the PCE's counts.
pub fn checked_witness<C: bellperson::Circuit<Scalar>>(circuit: C, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    let w = cuzk_witness::witness(circuit, pce.num_inputs, pce.num_aux).map_err(|e| PceError::Synthesis(e.to_string()))?;
    if w.inputs.len() != pce.num_inputs || w.aux.len() != pce.num_aux {
        return Err(PceError::Witness(format!(
            "the circuit allocated {} inputs and {} aux; the PCE has {} and {}",
            w.inputs.len(),
            w.aux.len(),
            pce.num_inputs,
            pce.num_aux
        )));
    }
    Ok(w)
}

/// Mismatch counts between the new path (witness + PCE) and the old path for one circuit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Mismatches {
    /// Constraints whose A·w differs.
    pub a: usize,
    /// Constraints whose B·w differs.
    pub b: usize,
    /// Constraints whose C·w differs.
    pub c: usize,
    /// Input assignments that differ.
    pub input: usize,
    /// Aux assignments that differ.
    pub aux: usize,
    /// Density bits that differ, over the three bitmaps.
    pub density: usize,
}

impl Mismatches {
    /// All mismatches together (zero when the new path agrees).
    pub fn total(&self) -> usize {
        self.a + self.b + self.c + self.input + self.aux + self.density
    }
}

/// How many positions two vectors differ at, plus the difference of their lengths.
pub fn diff(x: &[Scalar], y: &[Scalar]) -> usize {
    x.iter().zip(y).filter(|(a, b)| a != b).count() + x.len().abs_diff(y.len())
}

/// Compares one circuit's new-path results with its reference synthesis.
pub fn compare(pce: &PreCompiledCircuit, w: &WitnessCs, eval: &crate::Evaluations, r: &FullSynthesis) -> Mismatches {
    let dens = |bits: &[u64], flags: &[bool]| {
        flags.iter().enumerate().filter(|(i, f)| crate::matrix::bit(bits, *i) != **f).count()
            + (crate::matrix::popcount(bits) > flags.len()) as usize
    };
    Mismatches {
        a: diff(&eval.a, &r.eval.a),
        b: diff(&eval.b, &r.eval.b),
        c: diff(&eval.c, &r.eval.c),
        input: diff(&w.inputs, &r.inputs),
        aux: diff(&w.aux, &r.aux),
        density: dens(&pce.a_aux_density, &r.a_aux_density)
            + dens(&pce.b_input_density, &r.b_input_density)
            + dens(&pce.b_aux_density, &r.b_aux_density),
    }
}
