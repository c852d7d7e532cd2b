//! The old path for SnapDeals, kept as the baseline: filecoin-proofs-api's own prover on the
//! request's partition proofs (`generate_empty_sector_update_proof_with_vanilla`: bellperson's
//! synthesis and prover, its parameter cache), returning the bytes it returns.

use filecoin_proofs_api::{update, PartitionProofBytes};

use super::UpdateInput;
use crate::{Error, Result};

/// filecoin-proofs' proof of `input` (unverified).
pub fn prove(input: &UpdateInput) -> Result<Vec<u8>> {
    let proofs = input.vanilla_proofs.iter().map(|p| PartitionProofBytes(p.clone())).collect();
    update::generate_empty_sector_update_proof_with_vanilla(
        input.registered_proof,
        proofs,
        input.comm_r_old,
        input.comm_r_new,
        input.comm_d_new,
    )
    .map(|p| p.0)
    .map_err(Error::filecoin)
}
