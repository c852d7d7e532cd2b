//! C1 files: the JSON that commit phase 1 produces, in both forms cuzk accepts — lotus and
//! filecoin-ffi's (filecoin-proofs-api's `SealCommitPhase1Output`, with `registered_proof` and
//! the vanilla proofs wrapped in a per-proof-version variant) and filecoin-proofs' plain form
//! (no registered proof: the sector size comes from the metadata file or the caller) — and
//! the checks that run before any proving: sector size, partition count, Merkle path shapes,
//! the replica id against the claimed sector identity, and filecoin-proofs' own vanilla-proof
//! sanity check.

use std::path::{Path, PathBuf};

use filecoin_hashers::Hasher;
use filecoin_proofs::constants::{DefaultPieceDomain, DefaultPieceHasher, DefaultTreeDomain};
use filecoin_proofs::{as_safe_commitment, PoRepConfig};
use filecoin_proofs_api::RegisteredSealProof;
use serde::Deserialize;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};
use typenum::Unsigned;

use super::sector::{self, SectorIdentity};
use crate::{Error, Result};

/// A parsed C1 file. The vanilla proofs stay as JSON until a typed view is asked for, since
/// their Rust type depends on the sector's tree shape.
#[derive(Clone, Debug)]
pub struct C1 {
    /// The file the C1 was read from (named in every error about it).
    pub path: PathBuf,
    /// The registered proof: the file's own for the lotus form, the caller's expectation for the plain form.
    pub registered_proof: RegisteredSealProof,
    /// True for the filecoin-proofs-api (lotus) form.
    pub wrapped: bool,
    /// The replica commitment comm_r.
    pub comm_r: [u8; 32],
    /// The unsealed-data commitment comm_d.
    pub comm_d: [u8; 32],
    /// The replica id the sector was sealed with (checked against the sector identity by [`prepare`]).
    pub replica_id: DefaultTreeDomain,
    /// The interactive seed (randomness drawn after pre-commit).
    pub seed: [u8; 32],
    /// The sealing ticket.
    pub ticket: [u8; 32],
    /// Made by `cuzk gen-c1 --synthetic` ([`super::synthetic`]): real structure, random
    /// contents; its circuits are not satisfied and no proof of it verifies.
    pub synthetic: bool,
    vanilla_proofs: serde_json::Value,
}

#[derive(Deserialize)]
struct RawC1 {
    #[serde(default)]
    registered_proof: Option<RegisteredSealProof>,
    vanilla_proofs: serde_json::Value,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    replica_id: DefaultTreeDomain,
    seed: [u8; 32],
    ticket: [u8; 32],
    #[serde(default, rename = "cuzk_synthetic")]
    synthetic: bool,
}

/// Curio's / lotus-bench's c1.json: the C1 output JSON, base64-encoded.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize", default)]
    sector_size: Option<u64>,
}

/// The error for bytes that are not a C1 output, by what serde saw.
fn classify(path: &Path, e: serde_json::Error) -> Error {
    let what = if e.is_eof() {
        "truncated JSON"
    } else if e.is_syntax() {
        "not JSON"
    } else {
        "not a C1 output (SealCommitPhase1Output)"
    };
    Error::c1(path, format!("{what}: {e}"))
}

/// The variant name filecoin-proofs-api wraps a sector size's vanilla proofs in.
pub(crate) fn variant_for(sector_size: u64) -> String {
    format!("StackedDrg{}V1", sector::size_name(sector_size))
}

impl C1 {
    /// Reads a C1 file. `expected` is the registered proof the caller believes in (from the
    /// metadata file or `--sector-size`); it is required for the plain form and must agree
    /// with the file for the wrapped form.
    pub fn load(path: &Path, expected: Option<RegisteredSealProof>) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::parse(path, &bytes, expected)
    }

    /// As [`C1::load`], from bytes already in memory (`path` names them in errors).
    pub fn parse(path: &Path, bytes: &[u8], expected: Option<RegisteredSealProof>) -> Result<Self> {
        if bytes.is_empty() {
            return Err(Error::c1(path, "empty file"));
        }
        // A C1 output is a JSON object; anything else (an array, a number) is valid JSON that
        // serde would report as a syntax error deep inside the struct, so say it here.
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') | None => {}
            Some(b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n')
                if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() =>
            {
                return Err(Error::c1(path, "not a C1 output (SealCommitPhase1Output): the JSON value is not an object"));
            }
            Some(_) => {}
        }
        let raw: RawC1 = match serde_json::from_slice(bytes) {
            Ok(r) => r,
            Err(first) => {
                // Curio's and lotus-bench's c1.json files wrap the C1 output, base64-encoded,
                // as {"SectorNum": …, "Phase1Out": "…", "SectorSize": …}.
                if let Ok(env) = serde_json::from_slice::<Envelope>(bytes) {
                    use base64::Engine as _;
                    let inner = base64::engine::general_purpose::STANDARD
                        .decode(env.phase1_out.trim())
                        .map_err(|e| Error::c1(path, format!("Phase1Out is not base64: {e}")))?;
                    let c1 = Self::parse(path, &inner, expected).map_err(|e| match e {
                        Error::C1 { reason, .. } => Error::c1(path, format!("inside Phase1Out: {reason}")),
                        other => other,
                    })?;
                    if let Some(size) = env.sector_size {
                        if size != c1.sector_size() {
                            return Err(Error::c1(path, format!("SectorSize {size} does not match the wrapped C1's {}", c1.sector_size())));
                        }
                    }
                    return Ok(c1);
                }
                return Err(classify(path, first));
            }
        };
        let wrapped = raw.registered_proof.is_some();
        let registered_proof = match (raw.registered_proof, expected) {
            (Some(file), Some(exp)) if file.sector_size() != exp.sector_size() => {
                return Err(Error::SectorSize(format!(
                    "{}: the C1 output is for a {} sector ({file:?}) but {} was expected",
                    path.display(),
                    sector::size_name(sector::sector_size_of(file)),
                    sector::size_name(sector::sector_size_of(exp)),
                )))
            }
            (Some(file), _) => file,
            (None, Some(exp)) => exp,
            (None, None) => {
                return Err(Error::c1(
                    path,
                    "plain filecoin-proofs C1 (no registered_proof field) and no sector size \
                     given: pass --sector-size or keep the .meta.json file next to it",
                ))
            }
        };
        let size = sector::sector_size_of(registered_proof);
        let vanilla_proofs = if wrapped {
            let want = variant_for(size);
            match raw.vanilla_proofs {
                serde_json::Value::Object(mut m) if m.len() == 1 => match m.remove(&want) {
                    Some(v) => v,
                    None => {
                        let got = m.keys().next().cloned().unwrap_or_default();
                        return Err(Error::SectorSize(format!(
                            "{}: registered_proof says {} but the vanilla proofs are {got}",
                            path.display(),
                            sector::size_name(size)
                        )));
                    }
                },
                _ => return Err(Error::c1(path, "vanilla_proofs must be an object with one proof-version key")),
            }
        } else {
            raw.vanilla_proofs
        };
        if !vanilla_proofs.is_array() {
            return Err(Error::c1(path, "vanilla_proofs is not a list of partitions"));
        }
        Ok(C1 {
            path: path.to_path_buf(),
            registered_proof,
            wrapped,
            comm_r: raw.comm_r,
            comm_d: raw.comm_d,
            replica_id: raw.replica_id,
            seed: raw.seed,
            ticket: raw.ticket,
            synthetic: raw.synthetic,
            vanilla_proofs,
        })
    }

    /// Sector size in bytes.
    pub fn sector_size(&self) -> u64 {
        sector::sector_size_of(self.registered_proof)
    }

    /// filecoin-proofs' configuration for this C1's registered proof.
    pub fn porep_config(&self) -> PoRepConfig {
        self.registered_proof.as_v1_config()
    }

    /// The vanilla proofs typed for tree shape `Tree` (one list of challenge proofs per
    /// partition).
    pub fn vanilla<Tree: 'static + MerkleTreeTrait>(&self) -> Result<Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>> {
        serde_json::from_value(self.vanilla_proofs.clone()).map_err(|e| Error::c1(&self.path, format!("malformed vanilla proofs: {e}")))
    }
}

/// Everything filecoin-proofs needs to build and check the partition circuits of one C1.
pub struct Prepared<Tree: 'static + MerkleTreeTrait> {
    /// filecoin-proofs' PoRep configuration of the registered proof.
    pub config: PoRepConfig,
    /// The public inputs of every partition circuit.
    pub public_inputs: stacked::PublicInputs<<Tree::Hasher as Hasher>::Domain, DefaultPieceDomain>,
    /// The public parameters of the stacked DRG proof (graph, challenges, layers).
    pub public_params: compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>,
    /// The vanilla proofs, one list of challenge proofs per partition.
    pub vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
}

/// Types the C1 for `Tree` and runs every check: partition count, Merkle path shapes, the
/// replica id against `identity`, and filecoin-proofs' vanilla-proof verification. A
/// synthetic C1 gets the structural checks only (its contents are random by design).
pub fn prepare<Tree: 'static + MerkleTreeTrait>(c1: &C1, identity: &SectorIdentity) -> Result<Prepared<Tree>> {
    let config = c1.porep_config();
    let bad = |reason: String| Error::c1(&c1.path, reason);
    if c1.comm_d == [0; 32] || c1.comm_r == [0; 32] {
        return Err(bad("all-zero comm_r or comm_d".into()));
    }
    if c1.seed == [0; 32] {
        return Err(bad("all-zero interactive seed".into()));
    }
    let vanilla = c1.vanilla::<Tree>()?;
    let partitions = usize::from(config.partitions);
    if vanilla.len() != partitions || vanilla.iter().any(|p| p.is_empty()) {
        return Err(bad(format!(
            "{} partitions of vanilla proofs (some empty?) but a {} sector has {partitions}",
            vanilla.len(),
            sector::size_name(c1.sector_size())
        )));
    }
    let nodes = (c1.sector_size() / 32) as usize;
    for (k, partition) in vanilla.iter().enumerate() {
        for (i, proof) in partition.iter().enumerate() {
            check_path(&proof.comm_d_proofs, nodes, !c1.synthetic)
                .map_err(|e| bad(format!("partition {k} challenge {i}: comm_d path {e}")))?;
            check_path(&proof.comm_r_last_proof, nodes, !c1.synthetic)
                .map_err(|e| bad(format!("partition {k} challenge {i}: comm_r_last path {e}")))?;
        }
    }
    let expected_replica = stacked::generate_replica_id::<Tree::Hasher, _>(
        &identity.prover_id(),
        identity.sector_number,
        &c1.ticket,
        c1.comm_d,
        &config.porep_id,
    );
    let replica: <Tree::Hasher as Hasher>::Domain = {
        let fr: blstrs::Scalar = c1.replica_id.into();
        fr.into()
    };
    if c1.synthetic {
        tracing::warn!(c1 = %c1.path.display(), "synthetic C1: real structure, random contents; its proofs cannot verify");
    }
    if expected_replica != replica && !c1.synthetic {
        return Err(Error::Invalid(format!(
            "{}: this C1 output was made for another sector: its replica id does not match \
             miner {} sector {} with its ticket and comm_d",
            c1.path.display(),
            identity.miner_id,
            identity.sector_number
        )));
    }
    let comm_r = as_safe_commitment(&c1.comm_r, "comm_r").map_err(|e| bad(format!("{e:#}")))?;
    let comm_d: DefaultPieceDomain = as_safe_commitment(&c1.comm_d, "comm_d").map_err(|e| bad(format!("{e:#}")))?;
    let public_inputs =
        stacked::PublicInputs { replica_id: replica, tau: Some(stacked::Tau { comm_d, comm_r }), k: None, seed: Some(c1.seed) };
    let setup = compound_proof::SetupParams {
        vanilla_params: filecoin_proofs::parameters::setup_params(&config).map_err(Error::filecoin)?,
        partitions: Some(partitions),
        priority: false,
    };
    let public_params =
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::setup(&setup)
            .map_err(Error::filecoin)?;
    let ok = c1.synthetic
        || StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&public_params.vanilla_params, &public_inputs, &vanilla)
            .map_err(Error::filecoin)?;
    if !ok {
        return Err(Error::Invalid(format!(
            "{}: the vanilla proofs do not verify against comm_r/comm_d/seed (corrupt C1, or \
             proofs from another sector)",
            c1.path.display()
        )));
    }
    Ok(Prepared { config, public_inputs, public_params, vanilla })
}

/// A Merkle inclusion proof must have one level per tree level, each with `arity − 1`
/// sibling hashes, and (when `hashes` is set) must hash up to its stated root.
fn check_path<P: MerkleProofTrait>(proof: &P, leaves: usize, hashes: bool) -> std::result::Result<(), String> {
    let path = proof.path();
    let want = proof.expected_len(leaves);
    if path.len() != want {
        return Err(format!("has {} levels, expected {want}", path.len()));
    }
    let (a, b, c) = (P::Arity::to_usize(), P::SubTreeArity::to_usize(), P::TopTreeArity::to_usize());
    let base = want - usize::from(b > 0) - usize::from(c > 0);
    for (level, (hashes, index)) in path.iter().enumerate() {
        let arity = if level < base {
            a
        } else if level == base && b > 0 {
            b
        } else {
            c
        };
        if hashes.len() + 1 != arity || *index >= arity {
            return Err(format!("level {level} has {} siblings and index {index}, expected {} siblings", hashes.len(), arity - 1));
        }
    }
    if hashes && !proof.verify() {
        return Err("does not hash to its root".into());
    }
    Ok(())
}
