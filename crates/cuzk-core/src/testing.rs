//! Test circuits shared by the crates' test suites: a seeded random R1CS that interleaves
//! `alloc_input`, `alloc` and `enforce` (the pattern that breaks naive column bookkeeping),
//! with witness values that are mostly 0 and 1, and coefficients ±1, small, random and
//! cancelling (`x − x`); and [`WitnessKeepingCpu`], a CPU backend that hands its witness
//! over to the side MSMs as a device backend does.

use std::sync::atomic::{AtomicUsize, Ordering};

use bellperson::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::{G1Affine, G1Projective, G2Affine, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group;

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendResult, DeviceWitness, Matrices, Msm, MsmMode, MsmPoint};
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

/// A CPU backend that hands its witness over as a device backend does: after the fused H
/// step it passes a [`DeviceWitness`] holding its own copy of the aux, from which it computes
/// the side MSMs itself (selecting by the density it is given, on the CPU). It overlaps the H
/// step as the CUDA backend does. For tests of the prover's hand-over and of the conformance
/// case over device witnesses, without a GPU.
pub struct WitnessKeepingCpu {
    cpu: CpuBackend,
    /// Declines the G2 MSM over the witness (the prover must then select and split on the host).
    decline_g2: bool,
    /// Adds the group's generator to every MSM over the witness: a wrong backend.
    skew: bool,
    /// MSMs computed from the witness.
    pub from_witness: AtomicUsize,
    /// `msm_split` calls (the prover splitting on the host).
    pub host_splits: AtomicUsize,
}

/// What [`WitnessKeepingCpu`] keeps "on the device".
struct AuxCopy(Vec<Scalar>);

impl WitnessKeepingCpu {
    /// A correct stand-in that computes every MSM over the witness it is offered.
    pub fn new() -> Self {
        WitnessKeepingCpu {
            cpu: CpuBackend::new(),
            decline_g2: false,
            skew: false,
            from_witness: AtomicUsize::new(0),
            host_splits: AtomicUsize::new(0),
        }
    }

    /// The same, declining B in G2's MSM over the witness (as a device backend declines bases
    /// it does not keep).
    pub fn declining_g2(mut self, decline: bool) -> Self {
        self.decline_g2 = decline;
        self
    }

    /// The same, with every MSM over the witness off by the group's generator.
    pub fn skewed(mut self) -> Self {
        self.skew = true;
        self
    }

    fn inner(&self) -> &CpuBackend {
        &self.cpu
    }

    fn msm_from_copy<P: MsmPoint>(&self, bases: &[P], w: &DeviceWitness, density: Option<&[u64]>) -> Option<BackendResult<P::Curve>> {
        let aux = &w.handle::<AuxCopy>()?.0;
        self.from_witness.fetch_add(1, Ordering::SeqCst);
        let picked: Vec<Scalar> = match density {
            None => aux.clone(),
            Some(d) => aux.iter().enumerate().filter(|(i, _)| crate::bits::bit(d, *i)).map(|(_, s)| *s).collect(),
        };
        let skew = if self.skew { P::generator().to_curve() } else { P::Curve::identity() };
        Some(P::msm_of(&self.cpu).msm(bases, &picked).map(|v| v + skew))
    }
}

impl Default for WitnessKeepingCpu {
    fn default() -> Self {
        Self::new()
    }
}

macro_rules! witness_keeping_msm {
    ($p:ty, $declines:expr) => {
        impl Msm<$p> for WitnessKeepingCpu {
            fn msm(&self, bases: &[$p], scalars: &[Scalar]) -> BackendResult<<$p as PrimeCurveAffine>::Curve> {
                Msm::<$p>::msm(&self.cpu, bases, scalars)
            }
            fn sum_selected(&self, bases: &[$p], indices: &[u32]) -> BackendResult<<$p as PrimeCurveAffine>::Curve> {
                Msm::<$p>::sum_selected(&self.cpu, bases, indices)
            }
            fn msm_split(&self, bases: &[$p], scalars: &[Scalar]) -> BackendResult<<$p as PrimeCurveAffine>::Curve> {
                self.host_splits.fetch_add(1, Ordering::SeqCst);
                Msm::<$p>::msm_split(&self.cpu, bases, scalars)
            }
            fn msm_of_device_witness(
                &self,
                bases: &[$p],
                w: &DeviceWitness,
                density: Option<&[u64]>,
                _mode: MsmMode,
            ) -> Option<BackendResult<<$p as PrimeCurveAffine>::Curve>> {
                if $declines(self) {
                    return None;
                }
                self.msm_from_copy(bases, w, density)
            }
        }
    };
}
witness_keeping_msm!(G1Affine, |_: &WitnessKeepingCpu| false);
witness_keeping_msm!(G2Affine, |b: &WitnessKeepingCpu| b.decline_g2);

crate::backend_pass_through!(@ntt_matvec WitnessKeepingCpu, inner);

impl Backend for WitnessKeepingCpu {
    fn name(&self) -> &str {
        "witness-keeping cpu"
    }

    fn overlap_h(&self) -> bool {
        true
    }

    fn matvec_quotient_msm_h(
        &self,
        m: &Matrices,
        inputs: &[Scalar],
        aux: &[Scalar],
        h_bases: &[G1Affine],
        witness_sent: &dyn Fn(Option<DeviceWitness>),
    ) -> BackendResult<(G1Projective, std::time::Duration, std::time::Duration)> {
        witness_sent(Some(DeviceWitness::new(AuxCopy(aux.to_vec()))));
        self.cpu.matvec_quotient_msm_h(m, inputs, aux, h_bases, &|_| {})
    }
}
