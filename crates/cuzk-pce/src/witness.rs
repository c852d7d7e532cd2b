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

/// Appends `parts` to `dst` in order, copying them in parallel (a 32 GiB partition's pieces
/// are gigabytes: one thread copying them into fresh pages took longer than computing them).
pub fn append_all(dst: &mut Vec<Scalar>, parts: &[&[Scalar]]) {
    let start = dst.len();
    let total: usize = parts.iter().map(|p| p.len()).sum();
    dst.reserve(total);
    {
        let mut spare = &mut dst.spare_capacity_mut()[..total];
        let mut slots = Vec::with_capacity(parts.len());
        for p in parts {
            let (head, tail) = spare.split_at_mut(p.len());
            slots.push(head);
            spare = tail;
        }
        slots.into_par_iter().zip(parts.par_iter()).for_each(|(slot, part)| {
            for (s, v) in slot.iter_mut().zip(part.iter()) {
                s.write(*v);
            }
        });
    }
    // SAFETY: part k was written whole into its own slot; the slots are the first `total`
    // spare places, disjoint, with lengths summing to `total`.
    unsafe { dst.set_len(start + total) };
}

/// The native and gadget witnesses of one partition side by side ([`compare_piece_sets`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ModeComparison {
    /// The partition compared.
    pub partition: usize,
    /// Pieces (one per challenge, sector or partition, as the circuit family splits it) the
    /// partition's witness was computed in.
    pub pieces: usize,
    /// Input values of the pieces together, ONE included (the common part counted once per
    /// piece).
    pub inputs: usize,
    /// Aux values of the pieces together, counted the same way.
    pub aux: usize,
    /// Wall seconds of the native witness.
    pub native_seconds: f64,
    /// CPU seconds (all threads) of the native witness.
    pub native_cpu_seconds: f64,
    /// Wall seconds of the gadget witness.
    pub gadget_seconds: f64,
    /// CPU seconds (all threads) of the gadget witness.
    pub gadget_cpu_seconds: f64,
    /// Pieces whose native and gadget witnesses differ in any input or aux value.
    pub differing_pieces: usize,
    /// Input and aux values that differ, over all pieces.
    pub differing_values: usize,
    /// The rayon threads the pieces ran on.
    pub threads: usize,
}

/// Runs the reference (`gadget`) pieces, then the `native` ones, each set in parallel from an
/// empty witness, timed (wall and CPU seconds), and compares them piece by piece: a circuit
/// family's fast witness against its gadgets, for the `partition` named in the result.
pub fn compare_piece_sets(partition: usize, gadget: Vec<Piece>, native: Vec<Piece>) -> Result<ModeComparison> {
    use cuzk_core::mem::cpu_seconds;
    let run = |pieces: Vec<Piece>| -> Result<(Vec<WitnessCs>, f64, f64)> {
        let (t, cpu) = (std::time::Instant::now(), cpu_seconds());
        let ws = pieces
            .into_par_iter()
            .map(|piece| {
                let mut cs = WitnessCs::with_capacity(1, 0);
                piece(&mut cs).map_err(|e| PceError::Synthesis(e.to_string()))?;
                Ok(cs)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((ws, t.elapsed().as_secs_f64(), cpu_seconds() - cpu))
    };
    let (gadget, gadget_seconds, gadget_cpu_seconds) = run(gadget)?;
    let (native, native_seconds, native_cpu_seconds) = run(native)?;
    let (mut differing_pieces, mut differing_values) = (0, 0);
    for (n, g) in native.iter().zip(&gadget) {
        let d = diff(&n.inputs, &g.inputs) + diff(&n.aux, &g.aux);
        differing_values += d;
        differing_pieces += usize::from(d > 0);
    }
    Ok(ModeComparison {
        partition,
        pieces: native.len(),
        inputs: native.iter().map(|w| w.inputs.len()).sum(),
        aux: native.iter().map(|w| w.aux.len()).sum(),
        native_seconds,
        native_cpu_seconds,
        gadget_seconds,
        gadget_cpu_seconds,
        differing_pieces: differing_pieces + native.len().abs_diff(gadget.len()),
        differing_values,
        threads: rayon::current_num_threads(),
    })
}

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
            let mut cs = witness_with_room(ci, ca);
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
    let rest: Vec<WitnessCs> = it.collect();
    if let Some(i) = rest.par_iter().position_first(|w| w.inputs[..pre_i] != out.inputs[..pre_i] || w.aux[..pre_a] != out.aux[..pre_a]) {
        return Err(bad(format!("piece {} does not repeat the common part", i + 1)));
    }
    for w in &rest {
        out.inputs.extend_from_slice(&w.inputs[pre_i..]);
    }
    append_all(&mut out.aux, &rest.iter().map(|w| &w.aux[pre_a..]).collect::<Vec<_>>());
    for w in rest {
        cuzk_core::buffer_pool::scalar_pool().give(w.aux);
    }
    if (out.inputs.len(), out.aux.len()) != (ti, ta) {
        return Err(bad(format!("{} inputs and {} aux; the PCE has {ti} and {ta}", out.inputs.len(), out.aux.len())));
    }
    Ok(out)
}

/// An empty witness with room for `inputs` and `aux` values, its aux (gigabytes at 32 GiB,
/// written once per partition) from the process's buffer pool when large, else on huge pages
/// ([`cuzk_core::buffer_pool`]; the pipeline gives it back once the partition is proved).
pub fn witness_with_room(inputs: usize, aux: usize) -> WitnessCs {
    let mut w = WitnessCs::with_capacity(inputs, 0);
    w.aux = cuzk_core::buffer_pool::scalar_pool().take(aux);
    w
}

/// The witness of one circuit, checked against the PCE's counts.
pub fn checked_witness<C: bellperson::Circuit<Scalar>>(circuit: C, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    let mut w = witness_with_room(pce.num_inputs, pce.num_aux);
    circuit.synthesize(&mut w).map_err(|e| PceError::Synthesis(e.to_string()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};

    /// A common input and aux value, then per piece k an aux x_k = k + 2 and its square.
    fn piece(cs: &mut WitnessCs, common: u64, k: u64, extra: bool) -> std::result::Result<(), SynthesisError> {
        let c = cs.alloc(|| "common", || Ok(Scalar::from(common)))?;
        let i = cs.alloc_input(|| "common input", || Ok(Scalar::from(common)))?;
        cs.enforce(|| "c = i", |lc| lc + c, |lc| lc + WitnessCs::one(), |lc| lc + i);
        let x = Scalar::from(k + 2);
        let xv = cs.alloc(|| "x", || Ok(x))?;
        let sq = cs.alloc(|| "x^2", || Ok(x * x))?;
        cs.enforce(|| "x*x", |lc| lc + xv, |lc| lc + xv, |lc| lc + sq);
        if extra {
            cs.alloc(|| "one too many", || Ok(x))?;
        }
        Ok(())
    }

    struct Whole(u64);
    impl Circuit<Scalar> for Whole {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> std::result::Result<(), SynthesisError> {
            let c = cs.alloc(|| "common", || Ok(Scalar::from(7u64)))?;
            let i = cs.alloc_input(|| "common input", || Ok(Scalar::from(7u64)))?;
            cs.enforce(|| "c = i", |lc| lc + c, |lc| lc + CS::one(), |lc| lc + i);
            for k in 0..self.0 {
                let x = Scalar::from(k + 2);
                let xv = cs.alloc(|| "x", || Ok(x))?;
                let sq = cs.alloc(|| "x^2", || Ok(x * x))?;
                cs.enforce(|| "x*x", |lc| lc + xv, |lc| lc + xv, |lc| lc + sq);
            }
            Ok(())
        }
    }

    fn pieces(n: u64, common_of: impl Fn(u64) -> u64, extra_at: Option<u64>) -> Vec<Piece> {
        (0..n)
            .map(|k| {
                let (common, extra) = (common_of(k), extra_at == Some(k));
                Box::new(move |cs: &mut WitnessCs| piece(cs, common, k, extra)) as Piece
            })
            .collect()
    }

    /// Equal piece sets compare equal; a piece with another common value counts as one
    /// differing piece (two values: its common aux and input), an extra value as one more, and
    /// a missing piece as a differing piece.
    #[test]
    fn compare_piece_sets_counts_the_pieces_and_values_that_differ() {
        let r = compare_piece_sets(3, pieces(4, |_| 7, None), pieces(4, |_| 7, None)).unwrap();
        assert_eq!((r.partition, r.pieces, r.differing_pieces, r.differing_values), (3, 4, 0, 0));
        assert_eq!((r.inputs, r.aux), (4 * 2, 4 * 3), "ONE and one input, three aux per piece");
        let r = compare_piece_sets(0, pieces(4, |_| 7, None), pieces(4, |k| if k == 2 { 8 } else { 7 }, Some(1))).unwrap();
        assert_eq!((r.differing_pieces, r.differing_values), (2, 3));
        let r = compare_piece_sets(0, pieces(4, |_| 7, None), pieces(3, |_| 7, None)).unwrap();
        assert_eq!(r.differing_pieces, 1);
    }

    #[test]
    fn split_pieces_join_into_the_whole_witness_and_bad_pieces_are_refused() {
        let n = 5;
        let pce = crate::extract(Whole(n)).unwrap();
        let whole = crate::witness::checked_witness(Whole(n), &pce).unwrap();
        let split = split_witness(pieces(n, |_| 7, None), &pce).unwrap();
        assert!(split.inputs == whole.inputs && split.aux == whole.aux, "the joined witness differs from the whole");

        let e = split_witness(pieces(n, |k| if k == 3 { 8 } else { 7 }, None), &pce).unwrap_err().to_string();
        assert!(e.contains("piece 3 does not repeat the common part"), "{e}");
        let e = split_witness(pieces(n, |_| 7, Some(2)), &pce).unwrap_err().to_string();
        assert!(e.contains("unequal shape"), "{e}");
        let e = split_witness(pieces(n - 1, |_| 7, None), &pce).unwrap_err().to_string();
        assert!(e.contains("are not 1 common part"), "{e}");
    }

    #[test]
    fn append_all_is_the_serial_concatenation_for_parts_of_any_length() {
        let v = |n: u64| Scalar::from(n);
        let parts: Vec<Vec<Scalar>> =
            [0usize, 3, 0, 1, 1000, 7].iter().enumerate().map(|(k, &n)| (0..n as u64).map(|i| v(1000 * k as u64 + i)).collect()).collect();
        let mut dst = vec![v(42), v(43)];
        let mut want = dst.clone();
        for p in &parts {
            want.extend_from_slice(p);
        }
        append_all(&mut dst, &parts.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert_eq!(dst.len(), want.len());
        assert!(dst == want, "the parallel append differs from the serial one");
        append_all(&mut dst, &[]);
        assert_eq!(dst.len(), want.len(), "no parts append nothing");
    }
}
