//! The new path for one circuit: witness-only synthesis, the PCE's three mat-vecs (on the
//! host or inside the backend, [`MatVecPlace`]), and cuzk-core's Groth16 assembly on a
//! backend, with per-stage times and RSS on the tracer. The pipeline runs exactly these steps
//! per partition; benchmarks and tests call them directly. It knows no circuit family.

use std::time::{Duration, Instant};

use bellperson::groth16::{Parameters, Proof};
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use cuzk_core::backend::Backend;
use cuzk_core::groth16::{self, Densities, Evals, MsmMode, ProveTimings, Witness};
use cuzk_core::mem::StageTracer;
use serde::Serialize;

use crate::matrix::PreCompiledCircuit;
use crate::Result;

/// Where a, b, c = A·w, B·w, C·w are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum MatVecPlace {
    /// The backend's own mat-vec on a GPU backend (measured faster there: only the witness
    /// crosses the bus, and no host a, b, c are held), the CPU kernel on the CPU backend.
    #[default]
    Auto,
    /// The CPU kernel, before the backend is called (its own "mat-vec" stage).
    Host,
    /// The backend's own mat-vec, inside the proving call: on a GPU only the witness is
    /// uploaded and a, b, c are made in device memory, where the quotient reads them.
    Backend,
}

impl std::str::FromStr for MatVecPlace {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(MatVecPlace::Auto),
            "host" | "cpu" => Ok(MatVecPlace::Host),
            "backend" | "device" | "gpu" => Ok(MatVecPlace::Backend),
            other => Err(format!("unknown mat-vec place {other:?}: want auto, host or device")),
        }
    }
}

impl MatVecPlace {
    /// `Auto` decided for the backends that will prove (by name: "cpu" is the CPU backend):
    /// the backend's mat-vec when every one of them is a device, else the host's.
    pub fn resolve(self, backends: &[&str]) -> MatVecPlace {
        match self {
            MatVecPlace::Auto if !backends.is_empty() && backends.iter().all(|b| *b != "cpu") => MatVecPlace::Backend,
            MatVecPlace::Auto => MatVecPlace::Host,
            other => other,
        }
    }
}

/// How to prove.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// How the aux MSMs are computed.
    pub mode: MsmMode,
    /// Where the mat-vec runs.
    pub matvec: MatVecPlace,
    /// Fixed (r, s) per partition (for reproducible proofs); `None` draws fresh ones.
    pub randomness: Option<Vec<(Scalar, Scalar)>>,
}

/// Where the time of the new path went, summed over partitions.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Witness synthesis.
    pub witness: Duration,
    /// The mat-vecs, on the host or in the backend.
    pub matvec: Duration,
    /// The Groth16 prover's own stages.
    pub prover: ProveTimings,
}

impl Timings {
    /// Witness, mat-vec and prover time together, the prover's mat-vec not counted twice.
    pub fn total(&self) -> Duration {
        // The prover's own mat-vec time is already in `matvec`.
        self.witness + self.matvec + self.prover.total().saturating_sub(self.prover.matvec)
    }
}

/// The densities of a PCE in the prover's form.
pub fn densities(pce: &PreCompiledCircuit) -> Densities<'_> {
    Densities { a_aux: &pce.a_aux_density, b_input: &pce.b_input_density, b_aux: &pce.b_aux_density }
}

/// Witness, mat-vec and proof of one circuit of `pce`'s topology.
#[allow(clippy::too_many_arguments)]
pub fn prove_circuit<C: Circuit<Scalar>>(
    backend: &dyn Backend,
    pce: &PreCompiledCircuit,
    params: &Parameters<Bls12>,
    circuit: C,
    r: Scalar,
    s: Scalar,
    mode: MsmMode,
    tracer: &StageTracer,
    times: &mut Timings,
) -> Result<Proof<Bls12>> {
    let t = Instant::now();
    let w = tracer.stage("witness", || crate::witness::checked_witness(circuit, pce))?;
    times.witness += t.elapsed();
    prove_witness(backend, pce, params, &w, r, s, mode, MatVecPlace::Host, tracer, times)
}

/// The mat-vec and Groth16 steps of [`prove_circuit`] on a witness already computed.
#[allow(clippy::too_many_arguments)]
pub fn prove_witness(
    backend: &dyn Backend,
    pce: &PreCompiledCircuit,
    params: &Parameters<Bls12>,
    w: &cuzk_witness::WitnessCs,
    r: Scalar,
    s: Scalar,
    mode: MsmMode,
    matvec: MatVecPlace,
    tracer: &StageTracer,
    times: &mut Timings,
) -> Result<Proof<Bls12>> {
    let witness = match matvec.resolve(&[backend.name()]) {
        MatVecPlace::Host | MatVecPlace::Auto => {
            let t = Instant::now();
            let eval = tracer.stage("mat-vec", || pce.evaluate(&w.inputs, &w.aux))?;
            times.matvec += t.elapsed();
            Witness::evaluated(&w.inputs, &w.aux, eval)
        }
        MatVecPlace::Backend => Witness { inputs: &w.inputs, aux: &w.aux, evals: Evals::Matrices(pce.matrices()) },
    };
    let (proof, pt) = tracer.stage("prove", || groth16::prove(backend, params.into(), &densities(pce), witness, r, s, mode))?;
    // The backend's mat-vec counts as mat-vec, wherever it ran.
    times.matvec += pt.matvec;
    times.prover.add(&pt);
    Ok(proof)
}
