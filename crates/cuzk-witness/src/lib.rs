//! `cuzk-witness` owns witness-only synthesis: a bellpepper `ConstraintSystem` that records
//! only the input and aux assignments — `alloc` and `alloc_input` evaluate and store their
//! values, `enforce` and namespaces do nothing — so a circuit's witness costs only its value
//! computations. The matrices live in `cuzk-pce`; this crate knows nothing of them or of GPUs.
//! [`profile`] times the same pass by namespace; [`sha256`] computes the SHA-256 gadget's
//! assignments on machine words, for circuit families that walk their own allocation sequence
//! natively. It knows no circuit family (those live above the generic layers).
//!
//! # Example
//!
//! The witness of a circuit proving knowledge of a square root: `y = x²` with `y` public.
//!
//! ```
//! use bellperson::{Circuit, ConstraintSystem, SynthesisError};
//! use blstrs::Scalar;
//! use ff::Field;
//!
//! struct Square(Scalar);
//!
//! impl Circuit<Scalar> for Square {
//!     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//!         let x = cs.alloc(|| "x", || Ok(self.0))?;
//!         let y = cs.alloc_input(|| "y", || Ok(self.0.square()))?;
//!         cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//!         Ok(())
//!     }
//! }
//!
//! // The counts (here 2 inputs, 1 aux) only pre-size the vectors; a PCE supplies them.
//! let w = cuzk_witness::witness(Square(Scalar::from(3u64)), 2, 1)?;
//! assert_eq!(w.inputs, vec![Scalar::ONE, Scalar::from(9u64)]);
//! assert_eq!(w.aux, vec![Scalar::from(3u64)]);
//! # Ok::<(), SynthesisError>(())
//! ```

#![warn(missing_docs)]

pub mod profile;
pub mod sha256;

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// The assignments of one circuit, in allocation order. `inputs[0]` is the constant ONE.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WitnessCs {
    /// The public-input assignments in `alloc_input` order, starting with ONE at index 0.
    pub inputs: Vec<Scalar>,
    /// The auxiliary (private) assignments in `alloc` order.
    pub aux: Vec<Scalar>,
}

impl WitnessCs {
    /// An empty witness holding only ONE, with room for the given counts (from the PCE).
    pub fn with_capacity(inputs: usize, aux: usize) -> Self {
        let mut w = WitnessCs { inputs: Vec::with_capacity(inputs.max(1)), aux: Vec::with_capacity(aux) };
        w.inputs.push(Scalar::ONE);
        w
    }
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn new() -> Self {
        WitnessCs::with_capacity(1, 0)
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
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

/// Runs `circuit` through a [`WitnessCs`] pre-sized for the given counts.
pub fn witness<C: bellperson::Circuit<Scalar>>(circuit: C, inputs: usize, aux: usize) -> Result<WitnessCs, SynthesisError> {
    let mut cs = WitnessCs::with_capacity(inputs, aux);
    circuit.synthesize(&mut cs)?;
    Ok(cs)
}
