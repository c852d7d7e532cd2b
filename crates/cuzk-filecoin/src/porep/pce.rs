//! The PoRep circuit under the PCE: the circuit identity of a registered proof (what the cache
//! is keyed on), extraction from the blank `StackedCircuit` (all partitions share one
//! topology), the witness modes, and the per-partition witnesses, profiles and reference
//! syntheses of a C1 output.

use super::witness::Partition;
use crate::porep::c1::{prepare, Prepared, C1};
use crate::porep::sector::SectorIdentity;
use crate::porep::{circuits, RegisteredSealProof};
use cuzk_witness::WitnessCs;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::with_shape;
use rayon::prelude::*;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use cuzk_pce::cache;
use cuzk_pce::matrix::PreCompiledCircuit;
use cuzk_pce::reference::{self, FullSynthesis};
use cuzk_pce::witness::{checked_witness, compare_piece_sets, split_witness, ModeComparison, Piece};

use crate::{Error, Result};

/// The circuit crates whose code defines the recorded topology (checked against Cargo.lock
/// by a test, so a dependency bump changes the identity and invalidates old caches).
pub const CIRCUIT_CRATES: &str =
    "storage-proofs-porep=19.1.0;storage-proofs-core=19.1.0;filecoin-proofs=19.1.0;bellperson=0.27.0;bellpepper-core=0.2.1;neptune=11.0.0";

/// Everything the topology of `rp`'s circuit depends on.
pub fn identity(rp: RegisteredSealProof) -> String {
    let cfg = rp.as_v1_config();
    format!(
        "cuzk-pce-v{}|{rp:?}|sector={}|partitions={}|porep_id={}|api={:?}|features={:?}|{CIRCUIT_CRATES}",
        cache::FORMAT_VERSION,
        u64::from(cfg.sector_size),
        usize::from(cfg.partitions),
        hex::encode(cfg.porep_id),
        cfg.api_version,
        cfg.api_features,
    )
}

/// Records the PCE of `rp`'s partition circuit (from the blank circuit).
pub fn extract(rp: RegisteredSealProof) -> Result<PreCompiledCircuit> {
    with_shape!(crate::porep::sector::sector_size_of(rp), extract_shaped, rp)
}

fn extract_shaped<Tree: 'static + MerkleTreeTrait>(rp: RegisteredSealProof) -> Result<PreCompiledCircuit> {
    let cfg = rp.as_v1_config();
    let pp = filecoin_proofs::parameters::public_params::<Tree>(&cfg).map_err(Error::filecoin)?;
    let blank =
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&pp);
    Ok(cuzk_pce::extract(blank)?)
}

/// How the new path computes a partition's witness: `Native` (default) walks the circuit's
/// allocation sequence with SHA-256 on machine words ([`super::witness`]); `Gadgets`
/// runs the circuit's own gadgets through a [`WitnessCs`]. Both give the same witness (tested);
/// the second is selected by configuration (`--witness gadgets`, `CUZK_WITNESS=gadgets`), for
/// comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WitnessMode {
    /// Witnesses computed natively on machine words ([`super::witness`]).
    #[default]
    Native,
    /// Witnesses computed by the circuit's own gadgets through a [`WitnessCs`].
    Gadgets,
}

impl std::str::FromStr for WitnessMode {
    type Err = String;
    /// `native` or `gadgets` (empty: native), as the CLI flag and the daemon config spell it.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "" | "native" => Ok(WitnessMode::Native),
            "gadgets" => Ok(WitnessMode::Gadgets),
            other => Err(format!("witness mode {other:?}: expected \"native\" or \"gadgets\"")),
        }
    }
}

/// Partition `k` of a prepared C1 as the native witness walks it.
pub fn partition<Tree: 'static + MerkleTreeTrait>(p: &Prepared<Tree>, k: usize) -> Result<Partition<Tree>> {
    let proofs = p.vanilla.get(k).ok_or_else(|| Error::Witness(format!("no partition {k}: the C1 has {}", p.vanilla.len())))?;
    let first = proofs.first().ok_or_else(|| Error::Witness(format!("partition {k} has no challenges")))?;
    let tau = p.public_inputs.tau.as_ref().ok_or_else(|| Error::Witness("the public inputs have no comm_d/comm_r".into()))?;
    let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
    if proofs.iter().any(|q| q.comm_r_last() != comm_r_last || q.comm_c() != comm_c) {
        return Err(Error::Witness(format!("partition {k}: its challenges disagree on comm_r_last or comm_c")));
    }
    Ok(Partition {
        replica_id: p.public_inputs.replica_id,
        comm_d: tau.comm_d,
        comm_r: tau.comm_r,
        comm_r_last,
        comm_c,
        proofs: proofs.clone(),
    })
}

/// Partition `k`'s witness pieces, one per challenge, computed as `mode` says.
pub fn challenge_pieces<Tree: 'static + MerkleTreeTrait>(p: &Prepared<Tree>, k: usize, mode: WitnessMode) -> Result<Vec<Piece>> {
    use bellperson::Circuit;
    Ok(match mode {
        WitnessMode::Native => {
            partition(p, k)?.per_challenge().into_iter().map(|c| Box::new(move |cs: &mut WitnessCs| c.synthesize(cs)) as Piece).collect()
        }
        WitnessMode::Gadgets => {
            circuits::challenge_circuits(p, k)?.into_iter().map(|c| Box::new(move |cs: &mut WitnessCs| c.synthesize(cs)) as Piece).collect()
        }
    })
}

/// The witness of every partition of a C1 (partitions and, inside each, challenges in
/// parallel: [`split_witness`]).
pub fn witnesses(c1: &C1, id: &SectorIdentity, pce: &PreCompiledCircuit, circuits: usize, mode: WitnessMode) -> Result<Vec<WitnessCs>> {
    with_shape!(c1.sector_size(), witnesses_shaped, c1, id, pce, circuits, mode)
}

fn witnesses_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &C1,
    id: &SectorIdentity,
    pce: &PreCompiledCircuit,
    circuits: usize,
    mode: WitnessMode,
) -> Result<Vec<WitnessCs>> {
    let prepared = prepare::<Tree>(c1, id)?;
    let ks = repeat((0..prepared.vanilla.len()).collect(), circuits);
    ks.into_par_iter().map(|k| Ok(split_witness(challenge_pieces(&prepared, k, mode)?, pce)?)).collect()
}

/// The witness of partition `k` alone (its challenges in parallel).
pub fn partition_witness(c1: &C1, id: &SectorIdentity, pce: &PreCompiledCircuit, k: usize, mode: WitnessMode) -> Result<WitnessCs> {
    with_shape!(c1.sector_size(), partition_witness_shaped, c1, id, pce, k, mode)
}

fn partition_witness_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &C1,
    id: &SectorIdentity,
    pce: &PreCompiledCircuit,
    k: usize,
    mode: WitnessMode,
) -> Result<WitnessCs> {
    let prepared = prepare::<Tree>(c1, id)?;
    if k >= prepared.vanilla.len() {
        return Err(Error::Witness(format!("partition {k} asked for; the C1 has {}", prepared.vanilla.len())));
    }
    Ok(split_witness(challenge_pieces(&prepared, k, mode)?, pce)?)
}

/// Full (old-path) synthesis of every partition circuit, in parallel as bellperson does it.
pub fn full_syntheses(c1: &C1, id: &SectorIdentity, circuits: usize) -> Result<Vec<FullSynthesis>> {
    with_shape!(c1.sector_size(), full_shaped, c1, id, circuits)
}

fn full_shaped<Tree: 'static + MerkleTreeTrait>(c1: &C1, id: &SectorIdentity, circuits: usize) -> Result<Vec<FullSynthesis>> {
    let prepared = prepare::<Tree>(c1, id)?;
    let list = repeat(circuits::circuits(&prepared)?, circuits);
    list.into_par_iter().map(|c| reference::synthesize(c).map_err(|e| Error::Witness(e.to_string()))).collect()
}

/// The first partition's witness profiled by namespace ([`cuzk_witness::profile`]), after a
/// plain timed witness pass of the same circuit; the profiled witness must equal the plain
/// one. Returns (plain seconds, profiled seconds, rows).
pub fn profile_witness(
    c1: &C1,
    id: &SectorIdentity,
    pce: &PreCompiledCircuit,
    depth: usize,
) -> Result<(f64, f64, Vec<cuzk_witness::profile::Row>)> {
    with_shape!(c1.sector_size(), profile_shaped, c1, id, pce, depth)
}

fn profile_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &C1,
    id: &SectorIdentity,
    pce: &PreCompiledCircuit,
    depth: usize,
) -> Result<(f64, f64, Vec<cuzk_witness::profile::Row>)> {
    use bellperson::Circuit;
    let prepared = prepare::<Tree>(c1, id)?;
    let circuit = circuits::circuits(&prepared)?.into_iter().next().ok_or_else(|| Error::Witness("the C1 has no partitions".into()))?;
    let t = std::time::Instant::now();
    let plain = checked_witness(circuit.clone(), pce)?;
    let plain_s = t.elapsed().as_secs_f64();
    let mut cs = cuzk_witness::profile::ProfileCs::new(pce.num_inputs, pce.num_aux, depth);
    let t = std::time::Instant::now();
    circuit.synthesize(&mut cs).map_err(|e| Error::Witness(e.to_string()))?;
    let profiled_s = t.elapsed().as_secs_f64();
    if cs.w != plain {
        return Err(Error::Witness("the profiled witness differs from the plain one".into()));
    }
    Ok((plain_s, profiled_s, cs.rows()))
}

/// `n` circuits cycling through the partitions (`n = 0`: one per partition).
fn repeat<T: Clone>(v: Vec<T>, n: usize) -> Vec<T> {
    if n == 0 {
        return v;
    }
    v.iter().cycle().take(n).cloned().collect()
}

/// Partition `k`'s witness computed natively and with the circuit's gadgets, one piece per
/// challenge in parallel as the new path does, every piece compared value for value. Needs
/// no PCE, so it runs on a 32 GiB partition before its PCE exists.
pub fn compare_modes(c1: &C1, id: &SectorIdentity, k: usize) -> Result<ModeComparison> {
    with_shape!(c1.sector_size(), compare_modes_shaped, c1, id, k)
}

fn compare_modes_shaped<Tree: 'static + MerkleTreeTrait>(c1: &C1, id: &SectorIdentity, k: usize) -> Result<ModeComparison> {
    let prepared = prepare::<Tree>(c1, id)?;
    Ok(compare_piece_sets(k, challenge_pieces(&prepared, k, WitnessMode::Gadgets)?, challenge_pieces(&prepared, k, WitnessMode::Native)?)?)
}
