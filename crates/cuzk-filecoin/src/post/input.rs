//! A PoSt request as Curio sends it — the registered PoSt proof, the 32-byte randomness, the
//! miner id, the WindowPoSt partition index and one bincode `FallbackPoStSectorProof` per
//! sector — and the checks that need no parameters: the proof's kind and sector size, the
//! randomness' length, how many sectors a partition takes, every vanilla proof decoding for
//! this sector size with nothing left over, sector ids in ascending order without repeats,
//! and (in [`PostInput::check`]) filecoin-proofs' own verification of the vanilla proofs
//! against the randomness. A file form for the command line ([`PostFile`]) carries the same.

use std::io::Cursor;

use filecoin_hashers::Hasher;
use filecoin_proofs::{as_safe_commitment, with_shape, FallbackPoStSectorProof};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, PublicSector};

use super::{circuit, registry};
use crate::merkle_shape::{canonical, path_problem};
use crate::{Error, Result};

/// Most bytes one vanilla proof may have: a 64 GiB sector's WindowPoSt proof (10 challenges,
/// ~30 Merkle levels of up to 8 siblings) is ~80 KiB; WinningPoSt's 66 challenges ~530 KiB.
pub const MAX_VANILLA_PROOF_BYTES: usize = 4 << 20;

/// One PoSt request, cheaply checked when made.
#[derive(Clone, Debug)]
pub struct PostInput {
    /// Where it came from (a file, a request id), for error messages.
    pub source: String,
    /// Which PoSt, hence the circuit and the parameter files.
    pub registered_proof: RegisteredPoStProof,
    /// The chain randomness the challenges are drawn from.
    pub randomness: [u8; 32],
    /// The miner (the prover id is derived from it as lotus does).
    pub miner_id: u64,
    /// Which WindowPoSt partition these sectors are (0 for WinningPoSt).
    pub partition_index: usize,
    /// The vanilla proofs, one per sector, as filecoin-proofs-api serialises them.
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// (sector id, comm_r) of each vanilla proof, in order.
    pub sectors: Vec<(u64, [u8; 32])>,
}

/// The JSON file `cuzk prove` reads for a PoSt: the same fields as Curio's request.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PostFile {
    /// Always `"post"`: tells a PoSt file from a C1 output.
    pub kind: String,
    /// The lotus number of the registered PoSt proof (0–4 WinningPoSt, 5–14 WindowPoSt).
    pub registered_proof: u64,
    /// The miner id.
    pub miner_id: u64,
    /// The randomness, 64 hex digits.
    pub randomness: String,
    /// The WindowPoSt partition index (0 for WinningPoSt).
    #[serde(default)]
    pub partition_index: u32,
    /// The vanilla proofs, base64, one per sector.
    pub vanilla_proofs: Vec<String>,
}

/// The value of [`PostFile::kind`].
pub const FILE_KIND: &str = "post";

impl PostInput {
    /// The request with its cheap checks done (see the module documentation).
    pub fn new(
        source: impl Into<String>,
        registered_proof: RegisteredPoStProof,
        randomness: &[u8],
        miner_id: u64,
        partition_index: usize,
        vanilla_proofs: Vec<Vec<u8>>,
    ) -> Result<PostInput> {
        let source = source.into();
        let bad = |reason: String| Error::PostInput { source_name: source.clone(), reason };
        let randomness: [u8; 32] =
            randomness.try_into().map_err(|_| bad(format!("the randomness has {} bytes; it must have 32", randomness.len())))?;
        let shape = circuit::shape(registered_proof)?;
        let (n, most) = (vanilla_proofs.len(), shape.sectors_per_partition);
        if n == 0 || n > most || (registry::is_winning(registered_proof) && n != most) {
            return Err(bad(format!(
                "{n} vanilla proofs; a {registered_proof:?} partition takes 1 to {most} (WinningPoSt exactly {most})"
            )));
        }
        if registry::is_winning(registered_proof) && partition_index != 0 {
            return Err(bad(format!("partition index {partition_index}: WinningPoSt has only partition 0")));
        }
        if let Some((i, p)) = vanilla_proofs.iter().enumerate().find(|(_, p)| p.len() > MAX_VANILLA_PROOF_BYTES) {
            return Err(bad(format!("vanilla proof {i} has {} bytes; at most {MAX_VANILLA_PROOF_BYTES} are accepted", p.len())));
        }
        let sectors =
            with_shape!(registry::sector_size_of(registered_proof), sector_list, &vanilla_proofs, registered_proof).map_err(bad)?;
        if let Some(w) = sectors.windows(2).find(|w| w[0].0 >= w[1].0) {
            return Err(bad(format!(
                "sector {} comes after sector {}: the vanilla proofs must be in ascending sector order without repeats",
                w[1].0, w[0].0
            )));
        }
        Ok(PostInput { source, registered_proof, randomness, miner_id, partition_index, vanilla_proofs, sectors })
    }

    /// Reads the file form (see [`PostFile`]); `source` names it in errors.
    pub fn from_file_bytes(source: &str, bytes: &[u8]) -> Result<PostInput> {
        let bad = |reason: String| Error::PostInput { source_name: source.to_string(), reason };
        let f: PostFile = serde_json::from_slice(bytes).map_err(|e| bad(format!("not a PoSt request file: {e}")))?;
        if f.kind != FILE_KIND {
            return Err(bad(format!("kind {:?}; a PoSt request file has kind {FILE_KIND:?}", f.kind)));
        }
        let rp = registry::from_number(f.registered_proof)?;
        let randomness = hex::decode(&f.randomness).map_err(|e| bad(format!("randomness: {e}")))?;
        use base64::Engine as _;
        let proofs = f
            .vanilla_proofs
            .iter()
            .enumerate()
            .map(|(i, p)| base64::engine::general_purpose::STANDARD.decode(p).map_err(|e| bad(format!("vanilla proof {i}: {e}"))))
            .collect::<Result<Vec<_>>>()?;
        PostInput::new(source, rp, &randomness, f.miner_id, f.partition_index as usize, proofs)
    }

    /// The file form of this request.
    pub fn to_file(&self) -> PostFile {
        use base64::Engine as _;
        PostFile {
            kind: FILE_KIND.into(),
            registered_proof: registry::number(self.registered_proof),
            miner_id: self.miner_id,
            randomness: hex::encode(self.randomness),
            partition_index: self.partition_index as u32,
            vanilla_proofs: self.vanilla_proofs.iter().map(|p| base64::engine::general_purpose::STANDARD.encode(p)).collect(),
        }
    }

    /// The prover id lotus derives from the miner id.
    pub fn prover_id(&self) -> [u8; 32] {
        crate::porep::sector::prover_id(self.miner_id)
    }

    /// The deep check: filecoin-proofs verifies the vanilla proofs of this partition against
    /// the randomness, the prover and the sectors (wrong randomness, a wrong sector size's
    /// paths or a tampered path are refused here, before any parameter is looked up).
    pub fn check(&self) -> Result<()> {
        with_shape!(registry::sector_size_of(self.registered_proof), check_shaped, self)
    }
}

fn sector_list<Tree: 'static + MerkleTreeTrait>(
    proofs: &[Vec<u8>],
    rp: RegisteredPoStProof,
) -> std::result::Result<Vec<(u64, [u8; 32])>, String> {
    let challenges = rp.as_v1_config().challenge_count;
    let leaves = (registry::sector_size_of(rp) / 32) as usize;
    proofs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let proof = decode::<Tree>(p).map_err(|e| format!("vanilla proof {i}: {e}"))?;
            shape_problem(&proof, challenges, leaves).map_or(Ok(()), |e| Err(format!("vanilla proof {i}: {e}")))?;
            let mut comm_r = [0u8; 32];
            comm_r.copy_from_slice(AsRef::<[u8]>::as_ref(&proof.comm_r));
            Ok((u64::from(proof.sector_id), comm_r))
        })
        .collect()
}

/// What is wrong with the shape of a decoded proof: it must hold one sector proof with one
/// Merkle path per challenge, each as long as this sector size's tree is deep (bincode alone
/// cannot tell one sector size's proof from another's).
fn shape_problem<Tree: MerkleTreeTrait>(proof: &FallbackPoStSectorProof<Tree>, challenges: usize, leaves: usize) -> Option<String> {
    let [sector] = &proof.vanilla_proof.sectors[..] else {
        return Some(format!("{} sector proofs; one is expected", proof.vanilla_proof.sectors.len()));
    };
    if sector.inclusion_proofs.len() != challenges {
        return Some(format!("{} Merkle paths; {challenges} challenges are expected", sector.inclusion_proofs.len()));
    }
    // Every hash a field element (filecoin-proofs' Poseidon panics on one that is not), every
    // path as long as this sector size's tree is deep, every level within its arity.
    let commitments = [proof.comm_r, sector.comm_c, sector.comm_r_last];
    if let Some(i) = commitments.iter().position(|h| !canonical(h.as_ref())) {
        return Some(format!("commitment {i} of the proof is not a field element"));
    }
    sector.inclusion_proofs.iter().enumerate().find_map(|(c, p)| path_problem(p, leaves).map(|e| format!("path {c}: {e}")))
}

/// One vanilla proof, decoded as filecoin-proofs-api encodes it (bincode), all bytes used.
pub fn decode<Tree: 'static + MerkleTreeTrait>(bytes: &[u8]) -> std::result::Result<FallbackPoStSectorProof<Tree>, String> {
    let mut cursor = Cursor::new(bytes);
    let proof: FallbackPoStSectorProof<Tree> =
        bincode::deserialize_from(&mut cursor).map_err(|e| format!("not a FallbackPoStSectorProof for this sector size ({e})"))?;
    if cursor.position() as usize != bytes.len() {
        return Err(format!(
            "{} bytes left over after the proof: not a proof for this sector size",
            bytes.len() - cursor.position() as usize
        ));
    }
    Ok(proof)
}

/// The decoded proofs and the public inputs of `input`'s partition.
pub(crate) struct Decoded<Tree: MerkleTreeTrait> {
    pub proofs: Vec<FallbackPoStSectorProof<Tree>>,
    pub inputs: fallback::PublicInputs<<Tree::Hasher as Hasher>::Domain>,
}

pub(crate) fn decoded<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<Decoded<Tree>> {
    let bad = |reason: String| Error::PostInput { source_name: input.source.clone(), reason };
    let proofs = input.vanilla_proofs.iter().map(|p| decode::<Tree>(p)).collect::<std::result::Result<Vec<_>, _>>().map_err(bad)?;
    let randomness = as_safe_commitment(&input.randomness, "randomness").map_err(|e| bad(format!("{e:#}")))?;
    let prover_id = as_safe_commitment(&input.prover_id(), "prover_id").map_err(|e| bad(format!("{e:#}")))?;
    let sectors = proofs.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect();
    let k = Some(input.partition_index);
    Ok(Decoded { proofs, inputs: fallback::PublicInputs { randomness, prover_id, sectors, k } })
}

fn check_shaped<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<()> {
    let d = decoded::<Tree>(input)?;
    // filecoin-proofs verifies the vanilla proofs as it lays the partition out.
    circuit::vanilla_partition::<Tree>(input, &d).map(drop)
}
