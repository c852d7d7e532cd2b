//! The reference the PCE is checked against: full R1CS synthesis as bellperson's prover does
//! it (its `ProvingAssignment`, which bellperson keeps private, written again here from its
//! definition): every `alloc` stores its value, every `enforce` builds the three linear
//! combinations and evaluates them on the assignment so far, skipping zero coefficients and
//! marking the A-aux, B-input and B-aux densities. This is the "old path" synthesis of the
//! `bench pce` comparison.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::matrix::Evaluations;

/// Assignments, evaluations and densities of one full synthesis.
#[derive(Clone, Debug, Default)]
pub struct FullSynthesis {
    /// Input assignments, ONE first.
    pub inputs: Vec<Scalar>,
    /// Aux assignments.
    pub aux: Vec<Scalar>,
    /// A·w, B·w and C·w per constraint, the per-input rows included.
    pub eval: Evaluations,
    /// Per aux variable: whether it occurs in A.
    pub a_aux_density: Vec<bool>,
    /// Per input: whether it occurs in B.
    pub b_input_density: Vec<bool>,
    /// Per aux variable: whether it occurs in B.
    pub b_aux_density: Vec<bool>,
}

fn eval_lc(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut in_dens: Option<&mut Vec<bool>>,
    mut aux_dens: Option<&mut Vec<bool>>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += inputs[*i] * coeff;
        if let Some(d) = in_dens.as_deref_mut() {
            d[*i] = true;
        }
    }
    for (i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += aux[*i] * coeff;
        if let Some(d) = aux_dens.as_deref_mut() {
            d[*i] = true;
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for FullSynthesis {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux_density.push(false);
        self.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        self.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (a(LinearCombination::zero()), b(LinearCombination::zero()), c(LinearCombination::zero()));
        let va = eval_lc(&a, &self.inputs, &self.aux, None, Some(&mut self.a_aux_density));
        let vb = eval_lc(&b, &self.inputs, &self.aux, Some(&mut self.b_input_density), Some(&mut self.b_aux_density));
        let vc = eval_lc(&c, &self.inputs, &self.aux, None, None);
        self.eval.a.push(va);
        self.eval.b.push(vb);
        self.eval.c.push(vc);
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

/// Synthesises `circuit` the way bellperson's prover does: ONE first, the circuit, then
/// `input_i · 0 = 0` for every input.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<FullSynthesis, SynthesisError> {
    let mut cs = FullSynthesis::default();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.inputs.len() {
        cs.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
    }
    Ok(cs)
}

impl FullSynthesis {
    /// Rows where `a·b ≠ c` (zero for a satisfied circuit).
    pub fn unsatisfied(&self) -> usize {
        self.eval.a.iter().zip(&self.eval.b).zip(&self.eval.c).filter(|((a, b), c)| **a * **b != **c).count()
    }
}
