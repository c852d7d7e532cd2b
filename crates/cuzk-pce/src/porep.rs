//! PCE for the PoRep circuit: the circuit identity of a registered proof (what the cache is
//! keyed on), extraction from the blank `StackedCircuit` (all partitions share one topology),
//! the process-wide shared copy, and the per-partition witnesses and reference syntheses of a
//! C1 output.

use std::path::PathBuf;
use std::sync::Arc;

use blstrs::Scalar;
use cuzk_core::porep::c1::{prepare, Prepared, C1};
use cuzk_core::porep::sector::SectorIdentity;
use cuzk_core::porep::{bellperson_engine, RegisteredSealProof};
use cuzk_witness::porep::Partition;
use cuzk_witness::WitnessCs;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::with_shape;
use rayon::prelude::*;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use crate::cache::{self, Outcome};
use crate::matrix::PreCompiledCircuit;
use crate::reference::{self, FullSynthesis};
use crate::{registry, PceError, Result};

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

/// The PCE cache directory: `CUZK_PCE_CACHE`, else `~/.cache/cuzk/pce`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("CUZK_PCE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| cuzk_core::params::default_cache_dir().with_file_name("pce"))
}

/// The cache file of `rp`.
pub fn cache_path(rp: RegisteredSealProof) -> PathBuf {
    let h = hex::encode(&cache::identity_hash(&identity(rp))[..8]);
    cache_dir().join(format!("{rp:?}-{h}.pce"))
}

/// Records the PCE of `rp`'s partition circuit (from the blank circuit).
pub fn extract(rp: RegisteredSealProof) -> Result<PreCompiledCircuit> {
    with_shape!(cuzk_core::porep::sector::sector_size_of(rp), extract_shaped, rp)
}

fn extract_shaped<Tree: 'static + MerkleTreeTrait>(rp: RegisteredSealProof) -> Result<PreCompiledCircuit> {
    let cfg = rp.as_v1_config();
    let pp = filecoin_proofs::parameters::public_params::<Tree>(&cfg).map_err(cuzk_core::Error::filecoin)?;
    let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&pp);
    crate::record::extract(blank)
}

/// The process-wide PCE of `rp`: from the registry, else the disk cache, else extracted (and
/// cached). The outcome is `None` when the registry already held it.
pub fn shared(rp: RegisteredSealProof) -> Result<(Arc<PreCompiledCircuit>, Option<Outcome>)> {
    let id = identity(rp);
    let mut outcome = None;
    let pce = registry::get_or_init(&id, || {
        let (p, o) = cache::load_or_build(&cache_path(rp), &id, || extract(rp))?;
        outcome = Some(o);
        Ok(p)
    })?;
    Ok((pce, outcome))
}

/// The PCE of `rp` if it is resident in this process now.
pub fn resident(rp: RegisteredSealProof) -> Option<Arc<PreCompiledCircuit>> {
    registry::resident(&identity(rp))
}

/// Drops the process-wide PCE of `rp` (in-flight proofs keep their `Arc`).
pub fn evict(rp: RegisteredSealProof) -> Option<Arc<PreCompiledCircuit>> {
    registry::evict(&identity(rp))
}

/// How the new path computes a partition's witness: `Native` (default) walks the circuit's
/// allocation sequence with SHA-256 on machine words ([`cuzk_witness::porep`]); `Gadgets`
/// runs the circuit's own gadgets through a [`WitnessCs`]. Both give the same witness (tested);
/// `CUZK_WITNESS=gadgets` selects the second, for comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WitnessMode {
    Native,
    Gadgets,
}

impl WitnessMode {
    /// From `CUZK_WITNESS` (`native` | `gadgets`; unset: native).
    pub fn from_env() -> Result<Self> {
        match std::env::var("CUZK_WITNESS").as_deref() {
            Err(_) | Ok("") | Ok("native") => Ok(WitnessMode::Native),
            Ok("gadgets") => Ok(WitnessMode::Gadgets),
            Ok(other) => Err(PceError::Witness(format!("CUZK_WITNESS={other:?}: expected \"native\" or \"gadgets\""))),
        }
    }
}

/// One independent piece of a circuit's witness (see [`split_witness`]).
pub type Piece = Box<dyn FnOnce(&mut WitnessCs) -> std::result::Result<(), bellperson::SynthesisError> + Send>;

/// Partition `k` of a prepared C1 as the native witness walks it.
pub fn partition<Tree: 'static + MerkleTreeTrait>(p: &Prepared<Tree>, k: usize) -> Result<Partition<Tree>> {
    let proofs = p.vanilla.get(k).ok_or_else(|| PceError::Witness(format!("no partition {k}: the C1 has {}", p.vanilla.len())))?;
    let first = proofs.first().ok_or_else(|| PceError::Witness(format!("partition {k} has no challenges")))?;
    let tau = p.public_inputs.tau.as_ref().ok_or_else(|| PceError::Witness("the public inputs have no comm_d/comm_r".into()))?;
    let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
    if proofs.iter().any(|q| q.comm_r_last() != comm_r_last || q.comm_c() != comm_c) {
        return Err(PceError::Witness(format!("partition {k}: its challenges disagree on comm_r_last or comm_c")));
    }
    Ok(Partition { replica_id: p.public_inputs.replica_id, comm_d: tau.comm_d, comm_r: tau.comm_r, comm_r_last, comm_c, proofs: proofs.clone() })
}

/// Partition `k`'s witness pieces, one per challenge, computed as `mode` says.
pub fn challenge_pieces<Tree: 'static + MerkleTreeTrait>(p: &Prepared<Tree>, k: usize, mode: WitnessMode) -> Result<Vec<Piece>> {
    use bellperson::Circuit;
    Ok(match mode {
        WitnessMode::Native => partition(p, k)?.per_challenge().into_iter().map(|c| Box::new(move |cs: &mut WitnessCs| c.synthesize(cs)) as Piece).collect(),
        WitnessMode::Gadgets => bellperson_engine::challenge_circuits(p, k)?
            .into_iter()
            .map(|c| Box::new(move |cs: &mut WitnessCs| c.synthesize(cs)) as Piece)
            .collect(),
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
    ks.into_par_iter().map(|k| split_witness(challenge_pieces(&prepared, k, mode)?, pce)).collect()
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
        return Err(PceError::Witness(format!("partition {k} asked for; the C1 has {}", prepared.vanilla.len())));
    }
    split_witness(challenge_pieces(&prepared, k, mode)?, pce)
}

/// The witness of one circuit from its independent pieces (e.g. one per challenge,
/// [`challenge_pieces`]), computed in parallel and joined: every piece
/// repeats the same common part, then adds its own variables; the join keeps the common part
/// once and appends each piece's own variables in order — the allocation order of the whole
/// circuit. The pieces' sizes are derived from the PCE's totals, every piece must have the
/// same shape and repeat exactly the same common values, and the result must have the PCE's
/// counts; anything else is an error, never a silently different witness.
pub fn split_witness(pieces: Vec<Piece>, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    let n = pieces.len();
    let bad = |why: String| PceError::Witness(format!("joining {n} circuit pieces: {why}"));
    let (ti, ta) = (pce.num_inputs, pce.num_aux);
    // The first piece gets the whole circuit's room, so the join appends without moving it
    // (untouched capacity costs address space, not memory); the others about their share.
    let ws: Vec<WitnessCs> = pieces
        .into_par_iter()
        .enumerate()
        .map(|(i, piece)| {
            let (ci, ca) = if i == 0 { (ti, ta) } else { (ti / n + 64, ta / n + 8192) };
            let mut cs = WitnessCs::with_capacity(ci, ca);
            piece(&mut cs).map_err(|e| PceError::Synthesis(e.to_string()))?;
            Ok(cs)
        })
        .collect::<Result<_>>()?;
    let Some(first) = ws.first() else { return Err(bad("no pieces".into())) };
    let (si, sa) = (first.inputs.len(), first.aux.len());
    if let Some(w) = ws.iter().find(|w| (w.inputs.len(), w.aux.len()) != (si, sa)) {
        return Err(bad(format!("pieces of unequal shape: {si}+{sa} and {}+{}", w.inputs.len(), w.aux.len())));
    }
    // The common part's size: a piece is common + own, the whole is common + n × own.
    let common = |total: usize, single: usize| -> Result<usize> {
        if n == 1 {
            return Ok(0);
        }
        let extra = total.checked_sub(single).filter(|e| e % (n - 1) == 0);
        let own = extra.map(|e| e / (n - 1)).filter(|&p| p <= single).ok_or_else(|| bad(format!("{total} variables are not 1 common part + {n} pieces of {single}")))?;
        Ok(single - own)
    };
    let (pre_i, pre_a) = (common(ti, si)?, common(ta, sa)?);
    let mut it = ws.into_iter();
    let mut out = it.next().unwrap_or_default();
    for (i, w) in it.enumerate() {
        if w.inputs[..pre_i] != out.inputs[..pre_i] || w.aux[..pre_a] != out.aux[..pre_a] {
            return Err(bad(format!("piece {} does not repeat the common part", i + 1)));
        }
        out.inputs.extend_from_slice(&w.inputs[pre_i..]);
        out.aux.extend_from_slice(&w.aux[pre_a..]);
    }
    if (out.inputs.len(), out.aux.len()) != (ti, ta) {
        return Err(bad(format!("{} inputs and {} aux; the PCE has {ti} and {ta}", out.inputs.len(), out.aux.len())));
    }
    Ok(out)
}

/// The witness of one circuit, checked against the PCE's counts.
pub fn checked_witness<C: bellperson::Circuit<Scalar>>(circuit: C, pce: &PreCompiledCircuit) -> Result<WitnessCs> {
    let w = cuzk_witness::witness(circuit, pce.num_inputs, pce.num_aux).map_err(|e| PceError::Synthesis(e.to_string()))?;
    if w.inputs.len() != pce.num_inputs || w.aux.len() != pce.num_aux {
        return Err(PceError::Witness(format!(
            "the circuit allocated {} inputs and {} aux; the PCE has {} and {}",
            w.inputs.len(),
            w.aux.len(),
            pce.num_inputs,
            pce.num_aux
        )));
    }
    Ok(w)
}

/// Full (old-path) synthesis of every partition circuit, in parallel as bellperson does it.
pub fn full_syntheses(c1: &C1, id: &SectorIdentity, circuits: usize) -> Result<Vec<FullSynthesis>> {
    with_shape!(c1.sector_size(), full_shaped, c1, id, circuits)
}

fn full_shaped<Tree: 'static + MerkleTreeTrait>(c1: &C1, id: &SectorIdentity, circuits: usize) -> Result<Vec<FullSynthesis>> {
    let prepared = prepare::<Tree>(c1, id)?;
    let list = repeat(bellperson_engine::circuits(&prepared)?, circuits);
    list.into_par_iter()
        .map(|c| reference::synthesize(c).map_err(|e| PceError::Synthesis(e.to_string())))
        .collect()
}

/// The first partition's witness profiled by namespace ([`cuzk_witness::profile`]), after a
/// plain timed witness pass of the same circuit; the profiled witness must equal the plain
/// one. Returns (plain seconds, profiled seconds, rows).
pub fn profile_witness(c1: &C1, id: &SectorIdentity, pce: &PreCompiledCircuit, depth: usize) -> Result<(f64, f64, Vec<cuzk_witness::profile::Row>)> {
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
    let circuit = bellperson_engine::circuits(&prepared)?.into_iter().next().ok_or_else(|| PceError::Witness("the C1 has no partitions".into()))?;
    let t = std::time::Instant::now();
    let plain = checked_witness(circuit.clone(), pce)?;
    let plain_s = t.elapsed().as_secs_f64();
    let mut cs = cuzk_witness::profile::ProfileCs::new(pce.num_inputs, pce.num_aux, depth);
    let t = std::time::Instant::now();
    circuit.synthesize(&mut cs).map_err(|e| PceError::Synthesis(e.to_string()))?;
    let profiled_s = t.elapsed().as_secs_f64();
    if cs.w != plain {
        return Err(PceError::Witness("the profiled witness differs from the plain one".into()));
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

/// Mismatch counts between the new path (witness + PCE) and the old path for one circuit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Mismatches {
    pub a: usize,
    pub b: usize,
    pub c: usize,
    pub input: usize,
    pub aux: usize,
    pub density: usize,
}

impl Mismatches {
    pub fn total(&self) -> usize {
        self.a + self.b + self.c + self.input + self.aux + self.density
    }
}

fn diff(x: &[Scalar], y: &[Scalar]) -> usize {
    x.iter().zip(y).filter(|(a, b)| a != b).count() + x.len().abs_diff(y.len())
}

/// Compares one circuit's new-path results with its reference synthesis.
pub fn compare(pce: &PreCompiledCircuit, w: &WitnessCs, eval: &crate::Evaluations, r: &FullSynthesis) -> Mismatches {
    let dens = |bits: &[u64], flags: &[bool]| {
        flags.iter().enumerate().filter(|(i, f)| crate::matrix::bit(bits, *i) != **f).count()
            + (crate::matrix::popcount(bits) > flags.len()) as usize
    };
    Mismatches {
        a: diff(&eval.a, &r.eval.a),
        b: diff(&eval.b, &r.eval.b),
        c: diff(&eval.c, &r.eval.c),
        input: diff(&w.inputs, &r.inputs),
        aux: diff(&w.aux, &r.aux),
        density: dens(&pce.a_aux_density, &r.a_aux_density)
            + dens(&pce.b_input_density, &r.b_input_density)
            + dens(&pce.b_aux_density, &r.b_aux_density),
    }
}

/// The native and gadget witnesses of one partition side by side ([`compare_modes`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ModeComparison {
    pub partition: usize,
    pub pieces: usize,
    /// Inputs and aux of the pieces together (the common part counted once per piece).
    pub inputs: usize,
    pub aux: usize,
    pub native_seconds: f64,
    pub native_cpu_seconds: f64,
    pub gadget_seconds: f64,
    pub gadget_cpu_seconds: f64,
    /// Pieces whose native and gadget witnesses differ in any input or aux value.
    pub differing_pieces: usize,
    pub differing_values: usize,
    pub threads: usize,
}

/// Partition `k`'s witness computed natively and with the circuit's gadgets, one piece per
/// challenge in parallel as the new path does, every piece compared value for value. Needs
/// no PCE, so it runs on a 32 GiB partition before its PCE exists.
pub fn compare_modes(c1: &C1, id: &SectorIdentity, k: usize) -> Result<ModeComparison> {
    with_shape!(c1.sector_size(), compare_modes_shaped, c1, id, k)
}

fn compare_modes_shaped<Tree: 'static + MerkleTreeTrait>(c1: &C1, id: &SectorIdentity, k: usize) -> Result<ModeComparison> {
    use cuzk_core::mem::cpu_seconds;
    let prepared = prepare::<Tree>(c1, id)?;
    let run = |mode: WitnessMode| -> Result<(Vec<WitnessCs>, f64, f64)> {
        let pieces = challenge_pieces(&prepared, k, mode)?;
        let (t, cpu) = (std::time::Instant::now(), cpu_seconds());
        let ws = pieces
            .into_par_iter()
            .map(|piece| {
                let mut cs = WitnessCs::with_capacity(1, 0);
                piece(&mut cs).map_err(|e| PceError::Synthesis(e.to_string()))?;
                Ok(cs)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((ws, t.elapsed().as_secs_f64(), cpu_seconds() - cpu))
    };
    let (gadget, gadget_seconds, gadget_cpu_seconds) = run(WitnessMode::Gadgets)?;
    let (native, native_seconds, native_cpu_seconds) = run(WitnessMode::Native)?;
    let (mut differing_pieces, mut differing_values) = (0, 0);
    for (n, g) in native.iter().zip(&gadget) {
        let d = diff(&n.inputs, &g.inputs) + diff(&n.aux, &g.aux);
        differing_values += d;
        differing_pieces += usize::from(d > 0);
    }
    Ok(ModeComparison {
        partition: k,
        pieces: native.len(),
        inputs: native.iter().map(|w| w.inputs.len()).sum(),
        aux: native.iter().map(|w| w.aux.len()).sum(),
        native_seconds,
        native_cpu_seconds,
        gadget_seconds,
        gadget_cpu_seconds,
        differing_pieces: differing_pieces + native.len().abs_diff(gadget.len()),
        differing_values,
        threads: rayon::current_num_threads(),
    })
}
