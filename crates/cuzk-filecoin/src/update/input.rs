//! A SnapDeals request as Curio sends it — the registered update proof, comm_r_old (the
//! sector key's), comm_r_new and comm_d_new (32 bytes each) and one bincode `PartitionProof`
//! per partition — and the checks that need no parameters: the commitments' lengths and that
//! they are field elements, the partition count, every partition proof decoding for this
//! sector size with nothing left over, its challenge and apex-leaf counts and every Merkle
//! path's shape; then (in [`UpdateInput::check`]) filecoin-proofs' own verification of the
//! partition proofs against the three commitments. A file form for the command line
//! ([`UpdateFile`]) carries the same.

use std::io::Cursor;

use filecoin_proofs::types::{PartitionProof, SectorUpdateConfig};
use filecoin_proofs::{with_shape, TreeRHasher};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::PublicParams;

use super::registry;
use crate::merkle_shape::{canonical, path_problem};
use crate::{Error, Result};

/// Most bytes one partition proof may have: a 64 GiB partition (2,222 challenges, three
/// Merkle paths each of up to ~30 levels) is ~9 MiB.
pub const MAX_PARTITION_PROOF_BYTES: usize = 32 << 20;

/// One SnapDeals request, cheaply checked when made.
#[derive(Clone, Debug)]
pub struct UpdateInput {
    /// Where it came from (a file, a request id), for errors.
    pub source: String,
    /// The registered update proof.
    pub registered_proof: RegisteredUpdateProof,
    /// The sector key's comm_r (before the update).
    pub comm_r_old: [u8; 32],
    /// The updated replica's comm_r.
    pub comm_r_new: [u8; 32],
    /// The new data's comm_d.
    pub comm_d_new: [u8; 32],
    /// One bincode `PartitionProof` per partition, in partition order.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// Made by `cuzk gen-update --synthetic` ([`super::synthetic`]): real structure, random
    /// contents; never verifies, so the deep check is skipped and only unverified proving is
    /// allowed.
    pub synthetic: bool,
}

/// The file form of a request (`cuzk gen-update` writes it, `cuzk prove --update` reads it).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct UpdateFile {
    /// Always [`FILE_KIND`].
    pub kind: String,
    /// Lotus's number of the registered update proof.
    pub registered_proof: u64,
    /// Hex of the sector key's 32-byte comm_r.
    pub comm_r_old: String,
    /// Hex of the updated replica's comm_r.
    pub comm_r_new: String,
    /// Hex of the new data's comm_d.
    pub comm_d_new: String,
    /// Base64 of each partition proof.
    pub vanilla_proofs: Vec<String>,
    /// Marks a synthetic request (random contents, for timing only).
    #[serde(default, rename = "cuzk_synthetic", skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
}

/// The value of [`UpdateFile::kind`].
pub const FILE_KIND: &str = "snap";

/// The vanilla public parameters of `rp` (challenges and apex leaves per partition, partitions).
pub fn public_params(rp: RegisteredUpdateProof) -> PublicParams {
    PublicParams::from_sector_size(registry::sector_size_of(rp))
}

/// filecoin-proofs' settings for `rp` (partitions, h).
pub fn config(rp: RegisteredUpdateProof) -> SectorUpdateConfig {
    SectorUpdateConfig::from_porep_config(&rp.as_v1_config())
}

impl UpdateInput {
    /// The request with its cheap checks done (see the module documentation).
    pub fn new(
        source: impl Into<String>,
        registered_proof: RegisteredUpdateProof,
        comm_r_old: &[u8],
        comm_r_new: &[u8],
        comm_d_new: &[u8],
        vanilla_proofs: Vec<Vec<u8>>,
    ) -> Result<UpdateInput> {
        let source = source.into();
        let bad = |reason: String| Error::UpdateInput { source_name: source.clone(), reason };
        let commitment = |name: &str, b: &[u8]| -> Result<[u8; 32]> {
            let c: [u8; 32] = b.try_into().map_err(|_| bad(format!("{name} has {} bytes; it must have 32", b.len())))?;
            if !canonical(&c) {
                return Err(bad(format!("{name} {} is not a field element", hex::encode(c))));
            }
            Ok(c)
        };
        let (comm_r_old, comm_r_new, comm_d_new) =
            (commitment("comm_r_old", comm_r_old)?, commitment("comm_r_new", comm_r_new)?, commitment("comm_d_new", comm_d_new)?);
        let partitions = public_params(registered_proof).partition_count;
        if vanilla_proofs.len() != partitions {
            return Err(bad(format!("{} partition proofs; a {registered_proof:?} update has {partitions}", vanilla_proofs.len())));
        }
        if let Some((i, p)) = vanilla_proofs.iter().enumerate().find(|(_, p)| p.len() > MAX_PARTITION_PROOF_BYTES) {
            return Err(bad(format!("partition proof {i} has {} bytes; at most {MAX_PARTITION_PROOF_BYTES} are accepted", p.len())));
        }
        let input = UpdateInput { source, registered_proof, comm_r_old, comm_r_new, comm_d_new, vanilla_proofs, synthetic: false };
        with_shape!(registry::sector_size_of(registered_proof), shape_checked, &input)?;
        Ok(input)
    }

    /// Reads the file form (see [`UpdateFile`]); `source` names it in errors.
    pub fn from_file_bytes(source: &str, bytes: &[u8]) -> Result<UpdateInput> {
        use base64::Engine as _;
        let bad = |reason: String| Error::UpdateInput { source_name: source.to_string(), reason };
        let f: UpdateFile = serde_json::from_slice(bytes).map_err(|e| bad(format!("not a SnapDeals request file: {e}")))?;
        if f.kind != FILE_KIND {
            return Err(bad(format!("kind {:?}; a SnapDeals request file has kind {FILE_KIND:?}", f.kind)));
        }
        let rp = registry::from_number(f.registered_proof)?;
        let hex32 = |name: &str, h: &str| hex::decode(h).map_err(|e| bad(format!("{name}: {e}")));
        let proofs = f
            .vanilla_proofs
            .iter()
            .enumerate()
            .map(|(i, p)| base64::engine::general_purpose::STANDARD.decode(p).map_err(|e| bad(format!("partition proof {i}: {e}"))))
            .collect::<Result<Vec<_>>>()?;
        let mut input = UpdateInput::new(
            source,
            rp,
            &hex32("comm_r_old", &f.comm_r_old)?,
            &hex32("comm_r_new", &f.comm_r_new)?,
            &hex32("comm_d_new", &f.comm_d_new)?,
            proofs,
        )?;
        if f.synthetic {
            tracing::warn!(source, "synthetic SnapDeals request: real structure, random contents; its proof cannot verify");
        }
        input.synthetic = f.synthetic;
        Ok(input)
    }

    /// The file form of this request.
    pub fn to_file(&self) -> UpdateFile {
        use base64::Engine as _;
        UpdateFile {
            kind: FILE_KIND.into(),
            registered_proof: registry::number(self.registered_proof),
            comm_r_old: hex::encode(self.comm_r_old),
            comm_r_new: hex::encode(self.comm_r_new),
            comm_d_new: hex::encode(self.comm_d_new),
            vanilla_proofs: self.vanilla_proofs.iter().map(|p| base64::engine::general_purpose::STANDARD.encode(p)).collect(),
            synthetic: self.synthetic,
        }
    }

    /// The deep check: filecoin-proofs verifies every partition proof against comm_r_old,
    /// comm_r_new and comm_d_new (another sector's proofs, swapped commitments or a tampered
    /// path are refused here, before any parameter is looked up). A synthetic request, whose
    /// contents are random by design, has had its shape checks only.
    pub fn check(&self) -> Result<()> {
        if self.synthetic {
            return Ok(());
        }
        with_shape!(registry::sector_size_of(self.registered_proof), check_shaped, self)
    }

    /// Refuses a synthetic request where a verified proof is wanted (it has none).
    pub fn refuse_synthetic(&self, verify: bool) -> Result<()> {
        if self.synthetic && verify {
            return Err(Error::UpdateInput { source_name: self.source.clone(), reason: super::synthetic::NOT_PROVABLE.into() });
        }
        Ok(())
    }
}

/// The partition proofs of `input`, decoded, every one's shape checked.
pub(crate) fn decoded<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &UpdateInput) -> Result<Vec<PartitionProof<Tree>>> {
    let bad = |reason: String| Error::UpdateInput { source_name: input.source.clone(), reason };
    let pp = public_params(input.registered_proof);
    input
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, bytes)| {
            let proof = decode::<Tree>(bytes).map_err(|e| bad(format!("partition proof {k}: {e}")))?;
            shape_problem(&proof, &pp).map_or(Ok(proof), |e| Err(bad(format!("partition proof {k}: {e}"))))
        })
        .collect()
}

/// One partition proof, decoded as filecoin-proofs-api encodes it (bincode), all bytes used.
pub fn decode<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(bytes: &[u8]) -> std::result::Result<PartitionProof<Tree>, String> {
    let mut cursor = Cursor::new(bytes);
    let proof: PartitionProof<Tree> =
        bincode::deserialize_from(&mut cursor).map_err(|e| format!("not a PartitionProof for this sector size ({e})"))?;
    if cursor.position() as usize != bytes.len() {
        return Err(format!(
            "{} bytes left over after the proof: not a proof for this sector size",
            bytes.len() - cursor.position() as usize
        ));
    }
    Ok(proof)
}

/// What is wrong with the shape of a decoded partition proof: its challenge and apex-leaf
/// counts, a value that is not a field element, a Merkle path that does not fit the trees.
fn shape_problem<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(proof: &PartitionProof<Tree>, pp: &PublicParams) -> Option<String> {
    if proof.challenge_proofs.len() != pp.challenge_count {
        return Some(format!("{} challenge proofs; {} are expected", proof.challenge_proofs.len(), pp.challenge_count));
    }
    if proof.apex_leafs.len() != pp.apex_leaf_count {
        return Some(format!("{} apex leaves; {} are expected", proof.apex_leafs.len(), pp.apex_leaf_count));
    }
    if !canonical(proof.comm_c.as_ref()) || proof.apex_leafs.iter().any(|l| !canonical(l.as_ref())) {
        return Some("comm_c or an apex leaf is not a field element".into());
    }
    proof.challenge_proofs.iter().enumerate().find_map(|(c, p)| {
        let named = |which: &str, e: String| format!("challenge {c}, {which}: {e}");
        path_problem(&p.proof_r_old, pp.sector_nodes)
            .map(|e| named("proof_r_old", e))
            .or_else(|| path_problem(&p.proof_d_new, pp.sector_nodes).map(|e| named("proof_d_new", e)))
            .or_else(|| path_problem(&p.proof_r_new, pp.sector_nodes).map(|e| named("proof_r_new", e)))
    })
}

fn shape_checked<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &UpdateInput) -> Result<()> {
    decoded::<Tree>(input).map(drop)
}

fn check_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(input: &UpdateInput) -> Result<()> {
    let proofs = decoded::<Tree>(input)?;
    verify_vanilla(input, &proofs)
}

/// filecoin-proofs' verdict on `proofs`, the decoded partition proofs of `input`.
pub(crate) fn verify_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
    proofs: &[PartitionProof<Tree>],
) -> Result<()> {
    let bad = |reason: String| Error::UpdateInput { source_name: input.source.clone(), reason };
    let ok = filecoin_proofs::verify_partition_proofs::<Tree>(
        config(input.registered_proof),
        proofs,
        input.comm_r_old,
        input.comm_r_new,
        input.comm_d_new,
    )
    .map_err(|e| bad(format!("partition proofs: {e:#}")))?;
    if !ok {
        return Err(bad("the partition proofs do not verify against comm_r_old, comm_r_new and comm_d_new".into()));
    }
    Ok(())
}
