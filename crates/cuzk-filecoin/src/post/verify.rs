//! The official verdict on PoSt proof bytes: `verify_winning_post`, and `verify_window_post`
//! over the partition's sectors where that call can judge one partition on its own (API 1.2,
//! whose challenges do not depend on where a sector sits, or partition 0). An API-1.1
//! WindowPoSt partition past the first is judged the way `verify_window_post` judges each
//! partition: filecoin-proofs' public inputs for that partition index and bellperson's
//! verifier with the verifying key from the parameter directory.

use std::collections::BTreeMap;

use bellperson::groth16;
use filecoin_proofs::with_shape;
use filecoin_proofs_api::{post, ApiVersion, PublicReplicaInfo, SectorId};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use super::circuit::{param_paths, vanilla_params};
use super::input::{decoded, PostInput};
use super::registry;
use crate::{Error, Result};

/// Bytes of one Groth16 proof: a PoSt partition's whole proof.
pub const PROOF_BYTES: usize = 192;

/// Ok when the official verifier accepts `proof` for `input`.
pub fn ensure_valid(input: &PostInput, proof: &[u8]) -> Result<()> {
    if proof.len() != PROOF_BYTES {
        return Err(Error::Verification(format!("{} proof bytes; a PoSt partition proof has {PROOF_BYTES}", proof.len())));
    }
    let rp = input.registered_proof;
    let replicas: BTreeMap<SectorId, PublicReplicaInfo> =
        input.sectors.iter().map(|(id, comm_r)| (SectorId::from(*id), PublicReplicaInfo::new(rp, *comm_r))).collect();
    let (randomness, prover_id) = (&input.randomness, input.prover_id());
    let ok = if registry::is_winning(rp) {
        judged(post::verify_winning_post(randomness, proof, &replicas, prover_id))?
    } else if input.partition_index == 0 || rp.version() == ApiVersion::V1_2_0 {
        judged(post::verify_window_post(randomness, &[(rp, proof)], &replicas, prover_id))?
    } else {
        with_shape!(registry::sector_size_of(rp), verify_partition, input, proof)?
    };
    if !ok {
        return Err(Error::Verification(format!("{rp:?} proof rejected by the verifier")));
    }
    Ok(())
}

/// The verifier's answer, its error (with filecoin-proofs' context chain) as ours.
fn judged<E: std::fmt::Display>(r: std::result::Result<bool, E>) -> Result<bool> {
    r.map_err(|e| Error::Verification(format!("{e:#}")))
}

/// Partition `k` of an API-1.1 WindowPoSt on its own: the public inputs filecoin-proofs makes
/// for partition k (the earlier partitions' places filled, as only their count matters).
fn verify_partition<Tree: 'static + MerkleTreeTrait>(input: &PostInput, proof: &[u8]) -> Result<bool> {
    let d = decoded::<Tree>(input)?;
    let pp = vanilla_params(input.registered_proof)?;
    let k = input.partition_index;
    let mut sectors = vec![d.inputs.sectors[0].clone(); k * pp.sector_count];
    sectors.extend(d.inputs.sectors.iter().cloned());
    let inputs = fallback::PublicInputs { sectors, k: Some(k), ..d.inputs };
    let public = <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::generate_public_inputs(
        &inputs,
        &pp,
        Some(k),
    )
    .map_err(|e| Error::Verification(format!("public inputs of partition {k}: {e:#}")))?;
    let vk = cuzk_core::params::load_vk(&param_paths(input.registered_proof)?.vk)?;
    let proof = groth16::Proof::read(proof).map_err(|e| Error::Verification(format!("proof bytes: {e}")))?;
    groth16::verify_proof(&groth16::prepare_verifying_key(&vk), &proof, &public).map_err(|e| Error::Verification(format!("{e}")))
}
