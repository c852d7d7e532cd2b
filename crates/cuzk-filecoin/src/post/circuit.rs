//! The PoSt partition circuit (`FallbackPoStCircuit`): a registered proof's shape (sectors per
//! partition, challenges per sector), the vanilla public parameters filecoin-proofs sets up
//! for it, one partition's vanilla proof laid out (and padded) as filecoin-proofs lays it out,
//! the circuit built from it, the blank circuit the PCE is recorded from, the PCE identity and
//! the parameter file names. WinningPoSt's one sector is unrolled into one "sector" per
//! challenge, as filecoin-proofs does, so both PoSts share this code.

use filecoin_proofs::{single_partition_vanilla_proofs, with_shape, PoStType};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use super::input::{decoded, Decoded, PostInput};
use super::registry;
use super::witness::{native_pieces, native_witness, sector_values, SectorValues};
use crate::porep::params::ParamPaths;
use crate::{Error, Result};
use cuzk_pce::cache;
use cuzk_pce::witness::{compare_piece_sets, ModeComparison};
use cuzk_pce::witness::{split_witness, Piece};
use cuzk_pce::PreCompiledCircuit;
use cuzk_witness::WitnessCs;

/// The circuit crates whose code defines the PoSt topology (checked against Cargo.lock by a
/// test, so a dependency bump changes the identity and invalidates old caches).
pub const CIRCUIT_CRATES: &str =
    "storage-proofs-post=19.1.0;storage-proofs-core=19.1.0;filecoin-proofs=19.1.0;bellperson=0.27.0;bellpepper-core=0.2.1;neptune=11.0.0";

/// How many sectors one partition proves and how many challenges each gets, as the request
/// counts them (WinningPoSt: 1 sector, 66 challenges).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Sectors (vanilla proofs) one request carries at most.
    pub sectors_per_partition: usize,
    /// Challenges per sector.
    pub challenges_per_sector: usize,
}

/// `rp`'s shape.
pub fn shape(rp: RegisteredPoStProof) -> Result<Shape> {
    let cfg = rp.as_v1_config();
    Ok(Shape { sectors_per_partition: cfg.sector_count, challenges_per_sector: cfg.challenge_count })
}

/// The vanilla public parameters filecoin-proofs proves `rp` with (WinningPoSt's challenges
/// become its "sectors").
pub fn vanilla_params(rp: RegisteredPoStProof) -> Result<fallback::PublicParams> {
    let cfg = rp.as_v1_config();
    let setup = match cfg.typ {
        PoStType::Winning => filecoin_proofs::parameters::winning_post_setup_params(&cfg).map_err(Error::filecoin)?,
        PoStType::Window => filecoin_proofs::parameters::window_post_setup_params(&cfg),
    };
    Ok(fallback::PublicParams {
        sector_size: setup.sector_size,
        challenge_count: setup.challenge_count,
        sector_count: setup.sector_count,
        api_version: setup.api_version,
    })
}

/// Everything the topology of `rp`'s circuit depends on.
pub fn identity(rp: RegisteredPoStProof) -> Result<String> {
    let pp = vanilla_params(rp)?;
    Ok(format!(
        "cuzk-pce-v{}|{rp:?}|sector={}|sectors={}|challenges={}|api={:?}|{CIRCUIT_CRATES}",
        cache::FORMAT_VERSION,
        pp.sector_size,
        pp.sector_count,
        pp.challenge_count,
        pp.api_version,
    ))
}

/// The parameter files filecoin-proofs uses for `rp`.
pub fn param_paths(rp: RegisteredPoStProof) -> Result<ParamPaths> {
    let params = rp.cache_params_path().map_err(Error::filecoin)?;
    let vk = rp.cache_verifying_key_path().map_err(Error::filecoin)?;
    let id = rp.circuit_identifier().map_err(Error::filecoin)?;
    Ok(ParamPaths::from_files(id, params, vk))
}

/// Records the PCE of `rp`'s circuit (from the blank circuit), one sector per piece in
/// parallel (`cuzk_pce::extract_split`): the circuit synthesises its sectors one after the
/// other and they share nothing but ONE, so the join is the whole circuit's recording (a test
/// compares the two). A 32 GiB WindowPoSt partition (2349 sectors, 125 M constraints) records
/// at ~0.39 M constraints per second on one core.
pub fn extract(rp: RegisteredPoStProof) -> Result<PreCompiledCircuit> {
    with_shape!(registry::sector_size_of(rp), extract_shaped, rp)
}

fn blank<Tree: 'static + MerkleTreeTrait>(rp: RegisteredPoStProof) -> Result<FallbackPoStCircuit<Tree>> {
    let pp = vanilla_params(rp)?;
    Ok(<FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::blank_circuit(&pp))
}

fn extract_shaped<Tree: 'static + MerkleTreeTrait>(rp: RegisteredPoStProof) -> Result<PreCompiledCircuit> {
    Ok(cuzk_pce::extract_split(sector_pieces(blank::<Tree>(rp)?))?)
}

/// `circuit` as one piece per sector, each the same circuit over that sector alone, to
/// synthesise into a constraint system of type `CS` (recording or witness) and join.
#[allow(clippy::type_complexity)]
fn sector_pieces<Tree: 'static + MerkleTreeTrait, CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
    circuit: FallbackPoStCircuit<Tree>,
) -> Vec<Box<dyn FnOnce(&mut CS) -> std::result::Result<(), bellperson::SynthesisError> + Send>> {
    use bellperson::Circuit;
    let FallbackPoStCircuit { prover_id, sectors } = circuit;
    sectors
        .into_iter()
        .map(|sector| {
            let one = FallbackPoStCircuit::<Tree> { prover_id, sectors: vec![sector] };
            Box::new(move |cs: &mut CS| one.synthesize(cs)) as Box<dyn FnOnce(&mut CS) -> _ + Send>
        })
        .collect()
}

/// The PCE of `rp`'s blank circuit recorded whole, in one pass (what [`extract`] must equal).
pub fn extract_whole(rp: RegisteredPoStProof) -> Result<PreCompiledCircuit> {
    with_shape!(registry::sector_size_of(rp), extract_whole_shaped, rp)
}

fn extract_whole_shaped<Tree: 'static + MerkleTreeTrait>(rp: RegisteredPoStProof) -> Result<PreCompiledCircuit> {
    Ok(cuzk_pce::extract(blank::<Tree>(rp)?)?)
}

/// The request's partition as filecoin-proofs lays it out for its circuit (WindowPoSt: the
/// last sector repeated up to the partition size; WinningPoSt: one entry per challenge).
pub(crate) fn vanilla_partition<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    d: &Decoded<Tree>,
) -> Result<fallback::Proof<Tree::Proof>> {
    let bad = |reason: String| Error::PostInput { source_name: input.source.clone(), reason };
    // filecoin-proofs indexes these without checking; a hostile proof must not reach it.
    for (i, p) in d.proofs.iter().enumerate() {
        let per_sector = &p.vanilla_proof.sectors;
        if per_sector.len() != 1 || per_sector[0].inclusion_proofs.is_empty() {
            return Err(bad(format!(
                "vanilla proof {i} holds {} sector proofs with {} inclusion proofs; one sector proof with its challenges' paths is expected",
                per_sector.len(),
                per_sector.first().map_or(0, |s| s.inclusion_proofs.len())
            )));
        }
    }
    let cfg = input.registered_proof.as_v1_config();
    let pp = vanilla_params(input.registered_proof)?;
    single_partition_vanilla_proofs(&cfg, &pp, &d.inputs, &d.proofs)
        .map_err(|e| bad(format!("the vanilla proofs do not verify for this randomness, miner and partition ({e:#})")))
}

/// The circuit of `input`'s partition, built exactly as filecoin-proofs builds it.
pub fn circuit<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<FallbackPoStCircuit<Tree>> {
    let d = decoded::<Tree>(input)?;
    let partition = vanilla_partition::<Tree>(input, &d)?;
    build(input, &d, &partition)
}

/// The values of `input`'s partition the native witness walks, after the deep check (what
/// the engine's parse stage runs; the witness itself is [`native_witness`]).
pub(crate) fn checked_sector_values<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<Vec<SectorValues>> {
    let d = decoded::<Tree>(input)?;
    let partition = vanilla_partition::<Tree>(input, &d)?;
    sector_values::<Tree>(&d.inputs, &partition)
}

/// The witness of `input`'s partition for `pce`, after the deep check, as the engine computes
/// it: natively (`post/witness.rs`), one piece per sector in parallel.
pub fn partition_witness(input: &PostInput, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    with_shape!(registry::sector_size_of(input.registered_proof), witness_shaped, input, pce)
}

fn witness_shaped<Tree: 'static + MerkleTreeTrait>(input: &PostInput, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    native_witness(checked_sector_values::<Tree>(input)?, pce)
}

/// The witness of `circuit` for `pce` through the circuit's own gadgets, one piece per sector
/// (WinningPoSt: per challenge) computed in parallel and joined in allocation order
/// (`cuzk_pce::witness::split_witness`). The sectors share nothing but the constant ONE, so
/// this is the circuit's own witness value for value (a test compares it with
/// `cuzk_pce::witness::checked_witness`); the join checks every count. The reference the
/// native witness is compared with.
pub fn sector_split_witness<Tree: 'static + MerkleTreeTrait>(
    circuit: FallbackPoStCircuit<Tree>,
    pce: &PreCompiledCircuit,
) -> Result<WitnessCs> {
    let pieces: Vec<Piece> = sector_pieces(circuit);
    Ok(split_witness(pieces, pce)?)
}

/// `input`'s partition witness per sector through the gadgets and natively, timed and compared
/// piece by piece (`cuzk bench witness-modes --post`); needs no PCE.
pub fn compare_modes(input: &PostInput) -> Result<ModeComparison> {
    with_shape!(registry::sector_size_of(input.registered_proof), compare_modes_shaped, input)
}

fn compare_modes_shaped<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<ModeComparison> {
    let d = decoded::<Tree>(input)?;
    let partition = vanilla_partition::<Tree>(input, &d)?;
    let gadget = sector_pieces(build(input, &d, &partition)?);
    let native = native_pieces(sector_values::<Tree>(&d.inputs, &partition)?);
    Ok(compare_piece_sets(input.partition_index, gadget, native)?)
}

fn build<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    d: &Decoded<Tree>,
    partition: &fallback::Proof<Tree::Proof>,
) -> Result<FallbackPoStCircuit<Tree>> {
    let pp = vanilla_params(input.registered_proof)?;
    // filecoin-proofs proves the single partition it is given as partition 0 of its inputs.
    <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::circuit(
        &d.inputs,
        Default::default(),
        partition,
        &pp,
        Some(0),
    )
    .map_err(|e| Error::PostInput { source_name: input.source.clone(), reason: format!("building the circuit: {e:#}") })
}
