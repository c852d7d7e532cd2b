//! [`Scheduled`]: any backend with the prover's H-step schedule chosen by the caller instead
//! of by the backend ([`Backend::overlap_h`]). Benchmarks use it to time both schedules on one
//! device in one run; the suite without a GPU uses it to run the overlapped schedule, which
//! device backends ask for, on the CPU backend.

use blstrs::{G1Affine, G1Projective, Scalar};

use super::{Backend, BackendResult, Matrices};

/// `inner`, with [`Backend::overlap_h`] answered by `overlap`.
pub struct Scheduled<'a> {
    inner: &'a dyn Backend,
    overlap: bool,
}

impl<'a> Scheduled<'a> {
    /// Wraps `inner`, answering [`Backend::overlap_h`] with `overlap`.
    pub fn new(inner: &'a dyn Backend, overlap: bool) -> Self {
        Scheduled { inner, overlap }
    }

    fn inner(&self) -> &dyn Backend {
        self.inner
    }
}

crate::backend_pass_through!(Scheduled<'_>, inner);

impl Backend for Scheduled<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn overlap_h(&self) -> bool {
        self.overlap
    }

    fn keeps_prover_vectors(&self) -> bool {
        self.overlap && self.inner.keeps_prover_vectors()
    }

    fn resident_report(&self) -> super::ResidentReport {
        self.inner.resident_report()
    }

    fn holds_matrices(&self, m: &Matrices) -> bool {
        self.inner.holds_matrices(m)
    }

    fn forget_bases(&self, g1: &[&[G1Affine]], g2: &[&[blstrs::G2Affine]]) -> u64 {
        self.inner.forget_bases(g1, g2)
    }

    fn quotient_msm_h(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
        h_bases: &[G1Affine],
    ) -> BackendResult<(G1Projective, std::time::Duration)> {
        self.inner.quotient_msm_h(a, b, c, h_bases)
    }

    fn matvec_quotient_msm_h(
        &self,
        m: &Matrices,
        inputs: &[Scalar],
        aux: &[Scalar],
        h_bases: &[G1Affine],
        witness_sent: &dyn Fn(Option<super::DeviceWitness>),
    ) -> BackendResult<(G1Projective, std::time::Duration, std::time::Duration)> {
        self.inner.matvec_quotient_msm_h(m, inputs, aux, h_bases, witness_sent)
    }
}
