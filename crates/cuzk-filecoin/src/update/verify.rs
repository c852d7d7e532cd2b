//! The official verdict on SnapDeals proof bytes: filecoin-proofs-api's
//! `verify_empty_sector_update_proof` with the request's three commitments.

use filecoin_proofs_api::update;

use super::input::{public_params, UpdateInput};
use crate::{Error, Result};

/// Bytes of one partition's Groth16 proof; a whole update proof is one per partition.
pub const PARTITION_PROOF_BYTES: usize = 192;

/// Ok when the official verifier accepts `proof` for `input`.
pub fn ensure_valid(input: &UpdateInput, proof: &[u8]) -> Result<()> {
    let want = PARTITION_PROOF_BYTES * public_params(input.registered_proof).partition_count;
    if proof.len() != want {
        return Err(Error::Verification(format!("{} proof bytes; a {:?} proof has {want}", proof.len(), input.registered_proof)));
    }
    let ok = update::verify_empty_sector_update_proof(input.registered_proof, proof, input.comm_r_old, input.comm_r_new, input.comm_d_new)
        .map_err(|e| Error::Verification(format!("verify_empty_sector_update_proof: {e:#}")))?;
    if !ok {
        return Err(Error::Verification("verify_empty_sector_update_proof rejects the proof".into()));
    }
    Ok(())
}
