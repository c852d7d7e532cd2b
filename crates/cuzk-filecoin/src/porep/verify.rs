//! Verification of seal proofs with filecoin-proofs' own `verify_seal`, after checking that
//! the verifying key it will read is present and whole (filecoin-proofs would otherwise
//! silently rebuild a missing `.vk` from the `.params` file, or fail with a vague error), and
//! for a non-interactive PoRep that the SnarkPack SRS is usable and the aggregate has the
//! right shape.

use super::c1::C1;
use super::ni;
use super::params::ParamPaths;
use super::sector::SectorIdentity;
use cuzk_core::params;

use crate::{Error, Result};

/// The outcome of verifying one proof.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The verifier accepted the proof.
    Valid,
    /// Why the proof was rejected.
    Invalid(String),
}

impl Verdict {
    /// Whether the proof verified.
    pub fn is_valid(&self) -> bool {
        matches!(self, Verdict::Valid)
    }
}

/// Verifies `proof` for the sector of `c1` owned by `identity`.
pub fn verify_seal(c1: &C1, identity: &SectorIdentity, proof: &[u8]) -> Result<Verdict> {
    let paths = ParamPaths::for_proof(c1.registered_proof)?;
    params::check_vk_file(&paths.vk)?;
    let partitions = usize::from(c1.porep_config().partitions);
    if ni::is_non_interactive(c1.registered_proof) {
        // verify_seal checks the SnarkPack aggregate with the SRS file: it must be there and
        // whole (a short one would panic), and the aggregate's proof count must be right.
        ni::check_srs(c1.registered_proof)?;
        if let Some(why) = ni::aggregate_shape_error(proof, partitions) {
            return Ok(Verdict::Invalid(why));
        }
    } else {
        let want = partitions * super::circuits::PARTITION_PROOF_BYTES;
        if proof.len() != want {
            return Ok(Verdict::Invalid(format!(
                "proof is {} bytes; a {} proof is {want}",
                proof.len(),
                super::sector::size_name(c1.sector_size())
            )));
        }
    }
    let r = filecoin_proofs_api::seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        identity.prover_id(),
        identity.sector_id(),
        c1.ticket,
        c1.seed,
        proof,
    );
    Ok(match r {
        Ok(true) => Verdict::Valid,
        Ok(false) => Verdict::Invalid("verify_seal rejected the proof".into()),
        // The inputs other than the proof were checked above, so what fails here is the
        // proof's own encoding (e.g. a point that does not decode).
        Err(e) => Verdict::Invalid(format!("verify_seal: {e:#}")),
    })
}

/// Verifies and turns a rejection into an error (for provers that must not return a bad
/// proof).
pub fn ensure_valid(c1: &C1, identity: &SectorIdentity, proof: &[u8]) -> Result<()> {
    match verify_seal(c1, identity, proof)? {
        Verdict::Valid => Ok(()),
        Verdict::Invalid(why) => Err(Error::Verification(why)),
    }
}
