//! The SnapDeals partition circuit (`EmptySectorUpdateCircuit`): the public inputs
//! filecoin-proofs sets for a request, partition `k`'s circuit built as filecoin-proofs builds
//! it, the blank circuit the PCE is recorded from, the PCE identity and the parameter file
//! names. The names are worked out from the update circuit's own parameter-set identifier:
//! filecoin-proofs-api 19.1's `RegisteredUpdateProof::cache_params_path` and
//! `cache_verifying_key_path` name the PoRep circuit's files, not the update circuit's.

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::types::PartitionProof;
use filecoin_proofs::{with_shape, DefaultPieceDomain, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{parameter_cache_params_path, parameter_cache_verifying_key_path, CacheableParameters};
use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicInputs};

use super::input::{config, decoded, public_params, verify_vanilla, UpdateInput};
use super::registry;
use crate::porep::params::ParamPaths;
use crate::{Error, Result};
use cuzk_pce::cache;
use cuzk_pce::witness::{compare_piece_sets, ModeComparison};
use cuzk_pce::witness::{Piece, WitnessCs};
use cuzk_pce::PreCompiledCircuit;

/// The circuit crates whose code defines the update topology (checked against Cargo.lock by
/// a test, so a dependency bump changes the identity and invalidates old caches).
pub const CIRCUIT_CRATES: &str =
    "storage-proofs-update=19.1.0;storage-proofs-core=19.1.0;filecoin-proofs=19.1.0;bellperson=0.27.0;bellpepper-core=0.2.1;neptune=11.0.0";

/// Everything the topology of `rp`'s partition circuit depends on.
pub fn identity(rp: RegisteredUpdateProof) -> String {
    let pp = public_params(rp);
    format!(
        "cuzk-pce-v{}|{rp:?}|nodes={}|challenges={}|partitions={}|apex={}|h={}|{CIRCUIT_CRATES}",
        cache::FORMAT_VERSION,
        pp.sector_nodes,
        pp.challenge_count,
        pp.partition_count,
        pp.apex_leaf_count,
        config(rp).h,
    )
}

/// The parameter files filecoin-proofs' update prover and verifier use for `rp`.
pub fn param_paths(rp: RegisteredUpdateProof) -> Result<ParamPaths> {
    with_shape!(registry::sector_size_of(rp), param_paths_shaped, rp)
}

fn param_paths_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(rp: RegisteredUpdateProof) -> Result<ParamPaths> {
    let id =
        <EmptySectorUpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(&public_params(rp));
    Ok(ParamPaths::from_files(id.clone(), parameter_cache_params_path(&id), parameter_cache_verifying_key_path(&id)))
}

/// Records the PCE of `rp`'s partition circuit (from the blank circuit).
pub fn extract(rp: RegisteredUpdateProof) -> Result<PreCompiledCircuit> {
    with_shape!(registry::sector_size_of(rp), extract_shaped, rp)
}

fn extract_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(rp: RegisteredUpdateProof) -> Result<PreCompiledCircuit> {
    let blank = <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::blank_circuit(
        &public_params(rp),
    );
    Ok(cuzk_pce::extract(blank)?)
}

/// The vanilla public inputs filecoin-proofs proves `input` with.
pub fn public_inputs(input: &UpdateInput) -> Result<PublicInputs> {
    let bad = |reason: String| Error::UpdateInput { source_name: input.source.clone(), reason };
    let r = |name: &str, c: &[u8; 32]| <TreeRHasher as Hasher>::Domain::try_from_bytes(c).map_err(|e| bad(format!("{name}: {e:#}")));
    let comm_d_new = DefaultPieceDomain::try_from_bytes(&input.comm_d_new).map_err(|e| bad(format!("comm_d_new: {e:#}")))?;
    let cfg = config(input.registered_proof);
    Ok(PublicInputs {
        k: usize::from(cfg.update_partitions),
        comm_r_old: r("comm_r_old", &input.comm_r_old)?,
        comm_d_new,
        comm_r_new: r("comm_r_new", &input.comm_r_new)?,
        h: cfg.h,
    })
}

/// Every partition's circuit, after the deep check ([`UpdateInput::check`]; none for a
/// synthetic request), decoding the partition proofs once for both (what the engine's parse
/// stage runs).
pub fn checked_circuits<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
) -> Result<Vec<EmptySectorUpdateCircuit<Tree>>> {
    let proofs = checked_proofs::<Tree>(input)?;
    let inputs = public_inputs(input)?;
    proofs.iter().enumerate().map(|(k, p)| build(input, &inputs, p, k)).collect()
}

/// The partition proofs of `input`, decoded, after the deep check (none for a synthetic
/// request).
fn checked_proofs<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &UpdateInput) -> Result<Vec<PartitionProof<Tree>>> {
    let proofs = decoded::<Tree>(input)?;
    if !input.synthetic {
        verify_vanilla(input, &proofs)?;
    }
    Ok(proofs)
}

/// The witness of partition `k` of `input` for `pce` (after the deep check, unless the
/// request is synthetic), as the engine computes it: natively, its challenges in parallel
/// (`update/witness.rs`), checked against the PCE's counts.
pub fn partition_witness(input: &UpdateInput, pce: &PreCompiledCircuit, k: usize) -> Result<cuzk_pce::witness::WitnessCs> {
    with_shape!(registry::sector_size_of(input.registered_proof), witness_shaped, input, pce, k)
}

fn witness_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
    pce: &PreCompiledCircuit,
    k: usize,
) -> Result<cuzk_pce::witness::WitnessCs> {
    super::witness::native_witness(partition_circuit::<Tree>(input, k)?, pce)
}

/// Partition `k`'s circuit after the deep check (only that one is built: 16 at 32 GiB would
/// be built for nothing).
fn partition_circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
    k: usize,
) -> Result<EmptySectorUpdateCircuit<Tree>> {
    let bad = |reason: String| Error::UpdateInput { source_name: input.source.clone(), reason };
    let proofs = checked_proofs::<Tree>(input)?;
    let proof = proofs.get(k).ok_or_else(|| bad(format!("no partition {k}: the request has {}", proofs.len())))?;
    build(input, &public_inputs(input)?, proof, k)
}

/// Partition `k`'s witness through the circuit's own gadgets and natively, timed and compared
/// value by value, as one piece each (`cuzk bench witness-modes --update`); needs no PCE.
pub fn compare_modes(input: &UpdateInput, k: usize) -> Result<ModeComparison> {
    with_shape!(registry::sector_size_of(input.registered_proof), compare_modes_shaped, input, k)
}

fn compare_modes_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &UpdateInput, k: usize) -> Result<ModeComparison> {
    let gadget = partition_circuit::<Tree>(input, k)?;
    let gadget: Piece = Box::new(move |cs: &mut WitnessCs| bellperson::Circuit::synthesize(gadget, cs));
    let native = super::witness::native_piece(partition_circuit::<Tree>(input, k)?);
    Ok(compare_piece_sets(k, vec![gadget], vec![native])?)
}

/// Partition `k`'s circuit, built exactly as filecoin-proofs builds it.
fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
    inputs: &PublicInputs,
    proof: &PartitionProof<Tree>,
    k: usize,
) -> Result<EmptySectorUpdateCircuit<Tree>> {
    <EmptySectorUpdateCompound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::circuit(
        inputs,
        (),
        proof,
        &public_params(input.registered_proof),
        Some(k),
    )
    .map_err(|e| Error::UpdateInput { source_name: input.source.clone(), reason: format!("building partition {k}'s circuit: {e:#}") })
}
