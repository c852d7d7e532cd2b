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
    /// Seeds the circuit's structure and values.
    pub seed: u64,
    /// The most variables, ONE included; each constraint allocates one new variable until there are this many.
    pub vars: usize,
    /// The number of constraints.
    pub constraints: usize,
    /// Probability that a new variable is an input.
    pub input_rate: f64,
}

impl RandomCircuit {
    /// A circuit with one input in five on average.
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

/// A random circuit whose witness satisfies every constraint (so its proofs verify): each
/// step allocates an input or aux value, mostly bits, and either enforces booleanity
/// (`x · (1 − x) = 0`) or a product `(Σ cᵢxᵢ) · (Σ dⱼxⱼ) = y` of random combinations of
/// earlier variables with a new aux `y`. Inputs are interleaved with the constraints.
#[derive(Clone, Debug)]
pub struct SatisfiedCircuit {
    /// Seeds the circuit's structure and values.
    pub seed: u64,
    /// Steps; each allocates two variables and enforces two constraints.
    pub steps: usize,
}

impl Circuit<Scalar> for SatisfiedCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut vars = vec![(CS::one(), Scalar::ONE)];
        for k in 0..self.steps {
            let bit = rng.gen_bool(0.8);
            let value = if bit { Scalar::from(rng.gen_range(0..2u64)) } else { Scalar::random(&mut rng) };
            let v = if rng.gen_bool(0.05) {
                cs.alloc_input(|| format!("in{k}"), || Ok(value))?
            } else {
                cs.alloc(|| format!("aux{k}"), || Ok(value))?
            };
            vars.push((v, value));
            if bit {
                cs.enforce(|| format!("bool{k}"), |lc| lc + v, |lc| lc + CS::one() - v, |lc| lc);
            } else {
                cs.enforce(|| format!("id{k}"), |lc| lc + v, |lc| lc + CS::one(), |lc| lc + v);
            }
            let pick = |rng: &mut ChaCha8Rng| {
                let mut lc = LinearCombination::zero();
                let mut val = Scalar::ZERO;
                for _ in 0..rng.gen_range(1..4) {
                    let (var, x) = vars[rng.gen_range(0..vars.len())];
                    let c = if rng.gen_bool(0.5) { Scalar::ONE } else { Scalar::random(&mut *rng) };
                    lc = lc + (c, var);
                    val += c * x;
                }
                (lc, val)
            };
            let ((la, va), (lb, vb)) = (pick(&mut rng), pick(&mut rng));
            let y = va * vb;
            let yv = cs.alloc(|| format!("y{k}"), || Ok(y))?;
            cs.enforce(|| format!("mul{k}"), |_| la, |_| lb, |lc| lc + yv);
            vars.push((yv, y));
        }
        Ok(())
    }
}
