//! The Groth16 parameters a proof reads, whatever holds them: [`SrsRef`] is the borrowed view
//! the prover and the backends take (the verifying key and the five point sections as
//! slices); [`Srs`] owns one, either decoded into host memory (bellperson's [`Parameters`],
//! the layout every earlier release used) or mapped from cuzk's SRS map file
//! ([`crate::srs_map`]), where the points live in the page cache and the process holds no
//! decoded copy. It knows nothing of circuits or of where the files come from.

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};

use crate::srs_map::MappedSrs;

/// The parameters of one circuit as slices: what proving reads.
#[derive(Clone, Copy)]
pub struct SrsRef<'a> {
    /// The verifying key (alpha, beta, delta, gamma and `ic`).
    pub vk: &'a VerifyingKey<Bls12>,
    /// The H query (domain size minus one points).
    pub h: &'a [G1Affine],
    /// The L query (one point per aux variable).
    pub l: &'a [G1Affine],
    /// The A query (one point per variable that occurs in A).
    pub a: &'a [G1Affine],
    /// The B query in G1.
    pub b_g1: &'a [G1Affine],
    /// The B query in G2.
    pub b_g2: &'a [G2Affine],
}

impl<'a> From<&'a Parameters<Bls12>> for SrsRef<'a> {
    fn from(p: &'a Parameters<Bls12>) -> Self {
        SrsRef { vk: &p.vk, h: &p.h, l: &p.l, a: &p.a, b_g1: &p.b_g1, b_g2: &p.b_g2 }
    }
}

impl SrsRef<'_> {
    /// Bytes of the points (G1 affine 96 B, G2 affine 192 B), the verifying key's `ic` included.
    pub fn point_bytes(&self) -> u64 {
        let g1 = self.h.len() + self.l.len() + self.a.len() + self.b_g1.len() + self.vk.ic.len();
        (g1 * std::mem::size_of::<G1Affine>() + std::mem::size_of_val(self.b_g2)) as u64
    }

    /// The four G1 sections, in the order H, L, A, B.
    pub fn g1_sections(&self) -> [&[G1Affine]; 4] {
        [self.h, self.l, self.a, self.b_g1]
    }
}

/// One circuit's parameters, owned.
pub enum Srs {
    /// Decoded into host memory (anonymous pages, counted in the process's RSS).
    Decoded(Parameters<Bls12>),
    /// Mapped from an SRS map file (file-backed pages the kernel may drop and read again).
    Mapped(MappedSrs),
}

impl Srs {
    /// The borrowed view.
    pub fn sections(&self) -> SrsRef<'_> {
        match self {
            Srs::Decoded(p) => p.into(),
            Srs::Mapped(m) => m.sections(),
        }
    }

    /// Host bytes this set keeps in anonymous memory: its points when decoded, none when mapped.
    pub fn host_bytes(&self) -> u64 {
        match self {
            Srs::Decoded(p) => SrsRef::from(p).point_bytes(),
            Srs::Mapped(_) => 0,
        }
    }

    /// The decoded parameters (bellperson's type, what its own prover reads); `None` when
    /// mapped.
    pub fn as_decoded(&self) -> Option<&Parameters<Bls12>> {
        match self {
            Srs::Decoded(p) => Some(p),
            Srs::Mapped(_) => None,
        }
    }

    /// `"decoded"` or `"mapped"`, for logs and reports.
    pub fn layout_name(&self) -> &'static str {
        match self {
            Srs::Decoded(_) => "decoded",
            Srs::Mapped(_) => "mapped",
        }
    }
}

impl From<Parameters<Bls12>> for Srs {
    fn from(p: Parameters<Bls12>) -> Self {
        Srs::Decoded(p)
    }
}

impl std::fmt::Debug for Srs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.sections();
        f.debug_struct("Srs").field("layout", &self.layout_name()).field("h", &s.h.len()).field("l", &s.l.len()).finish()
    }
}
