//! The old path for PoSt, kept as the baseline: filecoin-proofs-api's own prover on the
//! request's vanilla proofs (`generate_winning_post_with_vanilla`,
//! `generate_single_window_post_with_vanilla`: bellperson's synthesis and prover, its
//! parameter cache), returning the bytes those calls return.

use filecoin_proofs_api::post;

use super::{registry, PostInput};
use crate::{Error, Result};

/// filecoin-proofs' proof of `input` (unverified).
pub fn prove(input: &PostInput) -> Result<Vec<u8>> {
    let rp = input.registered_proof;
    if registry::is_winning(rp) {
        let out = post::generate_winning_post_with_vanilla(rp, &input.randomness, input.prover_id(), &input.vanilla_proofs)
            .map_err(Error::filecoin)?;
        out.into_iter().next().map(|(_, proof)| proof).ok_or_else(|| Error::Proving("filecoin-proofs returned no proof".into()))
    } else {
        post::generate_single_window_post_with_vanilla(
            rp,
            &input.randomness,
            input.prover_id(),
            &input.vanilla_proofs,
            input.partition_index,
        )
        .map(|p| p.0)
        .map_err(Error::filecoin)
    }
}
