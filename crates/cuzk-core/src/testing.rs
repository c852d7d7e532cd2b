//! Test circuits shared by the crates' test suites: a seeded random R1CS that interleaves
//! `alloc_input`, `alloc` and `enforce` (the pattern that breaks naive column bookkeeping),
//! with witness values that are mostly 0 and 1, and coefficients ±1, small, random and
//! cancelling (`x − x`).

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A random circuit; the same seed gives the same circuit and witness.
#[derive(Clone, Debug)]
pub struct RandomCircuit {
    pub seed: u64,
    pub vars: usize,
    pub constraints: usize,
    /// Probability that a new variable is an input.
    pub input_rate: f64,
}

impl RandomCircuit {
    pub fn new(seed: u64, vars: usize, constraints: usize) -> Self {
        RandomCircuit { seed, vars, constraints, input_rate: 0.2 }
    }
}

impl Circuit<Scalar> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut vars = vec![CS::one()];
        for k in 0..self.constraints {
            if vars.len() < self.vars {
                let value = match rng.gen_range(0..4) {
                    0 => Scalar::ZERO,
                    1 | 2 => Scalar::ONE,
                    _ => Scalar::random(&mut rng),
                };
                let v = if rng.gen_bool(self.input_rate) {
                    cs.alloc_input(|| format!("in{k}"), || Ok(value))?
                } else {
                    cs.alloc(|| format!("aux{k}"), || Ok(value))?
                };
                vars.push(v);
            }
            let pick = |rng: &mut ChaCha8Rng| {
                let mut lc = LinearCombination::zero();
                for _ in 0..rng.gen_range(0..4) {
                    let v = vars[rng.gen_range(0..vars.len())];
                    let c = match rng.gen_range(0..5) {
                        0 => Scalar::ONE,
                        1 => -Scalar::ONE,
                        2 => Scalar::from(1u64 << rng.gen_range(1..20)),
                        3 => {
                            // A term that cancels: its coefficient merges to zero.
                            lc = lc + (Scalar::from(5u64), v);
                            -Scalar::from(5u64)
                        }
                        _ => Scalar::random(&mut *rng),
                    };
                    lc = lc + (c, v);
                }
                lc
            };
            let (a, b, c) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
            let newest = *vars.last().unwrap();
            cs.enforce(|| format!("c{k}"), |_| a + newest, |_| b, |_| c);
        }
        Ok(())
    }
}
