//! Making C1 outputs to prove: seal a random piece with filecoin-proofs (add piece, PC1, PC2,
//! C1) in a temporary directory and write the C1 JSON in lotus' form plus the metadata file
//! that `verify_seal` needs. Deterministic for a given seed (piece, ticket and seed bytes).

use std::path::Path;

use filecoin_proofs_api::seal;
use filecoin_proofs_api::{ApiFeature, PaddedBytesAmount, RegisteredSealProof, UnpaddedBytesAmount};
use rand::{RngCore, SeedableRng};

use super::sector::{self, SectorIdentity, SectorMeta};
use crate::{Error, Result};
use cuzk_core::atomic::write_atomically;

/// A sector sealed (pre-committed) in a work directory: its replica, its cache of trees
/// and what commit phase 1 needs.
pub struct PreCommitted {
    /// The cache directory (tree_c, tree_r_last, p_aux, t_aux).
    pub cache: std::path::PathBuf,
    /// The sealed replica file.
    pub sealed: std::path::PathBuf,
    /// comm_r and comm_d with what commit phase 1 takes from pre-commit phase 2.
    pub pc2: seal::SealPreCommitPhase2Output,
    /// The piece the sector holds.
    pub pieces: Vec<filecoin_proofs_api::PieceInfo>,
    /// The sealing ticket.
    pub ticket: [u8; 32],
}

/// Seals a random piece (from `rng`) into a sector of `sector_size` bytes inside `dir`
/// (add piece, pre-commit phases 1 and 2), keeping the replica and its cache there.
pub fn pre_commit(sector_size: u64, rng: &mut impl RngCore, identity: SectorIdentity, dir: &Path) -> Result<PreCommitted> {
    pre_commit_as(sector::registered_proof(sector_size)?, rng, identity, dir)
}

/// [`pre_commit`] under the registered proof `rp` (a synthetic-PoRep proof also gets its
/// synthetic challenges' proofs generated and persisted, as filecoin-proofs requires before C1).
pub fn pre_commit_as(rp: RegisteredSealProof, rng: &mut impl RngCore, identity: SectorIdentity, dir: &Path) -> Result<PreCommitted> {
    let sector_size = sector::sector_size_of(rp);
    let fc = Error::filecoin;
    let cache = dir.join("cache");
    let staged = dir.join("staged");
    let sealed = dir.join("sealed");
    std::fs::create_dir_all(&cache).map_err(|e| Error::io(&cache, e))?;
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let mut piece = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut piece);
    let mut ticket = [0u8; 32];
    rng.fill_bytes(&mut ticket);

    tracing::info!(size = %sector::size_name(sector_size), "adding piece");
    let mut staged_file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&staged).map_err(|e| Error::io(&staged, e))?;
    let (piece_info, _) = seal::add_piece(rp, &piece[..], &mut staged_file, unpadded, &[]).map_err(fc)?;
    drop(staged_file);
    std::fs::File::create(&sealed).map_err(|e| Error::io(&sealed, e))?;
    let pieces = vec![piece_info];
    let (prover_id, sector_id) = (identity.prover_id(), identity.sector_id());
    tracing::info!("pre-commit phase 1 (SDR labelling)");
    let pc1 = seal::seal_pre_commit_phase1(rp, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces).map_err(fc)?;
    tracing::info!("pre-commit phase 2 (trees)");
    let pc2 = seal::seal_pre_commit_phase2(pc1, &cache, &sealed).map_err(fc)?;
    if rp.feature_enabled(ApiFeature::SyntheticPoRep) {
        tracing::info!("synthetic PoRep: generating the synthetic challenges' proofs");
        seal::generate_synth_proofs(&cache, &sealed, prover_id, sector_id, ticket, pc2.clone(), &pieces).map_err(fc)?;
    }
    Ok(PreCommitted { cache, sealed, pc2, pieces, ticket })
}

/// Seals a random sector of `sector_size` bytes and writes `out_dir/c1.json` and
/// `out_dir/c1.meta.json`. Returns the metadata.
pub fn gen_c1(sector_size: u64, seed: u64, identity: SectorIdentity, out_dir: &Path, command: &str) -> Result<SectorMeta> {
    gen_c1_as(sector::registered_proof(sector_size)?, seed, identity, out_dir, command)
}

/// [`gen_c1`] under the registered proof `rp` (any PoRep variant filecoin-proofs seals).
pub fn gen_c1_as(rp: RegisteredSealProof, seed: u64, identity: SectorIdentity, out_dir: &Path, command: &str) -> Result<SectorMeta> {
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let work = tempfile::Builder::new().prefix("cuzk-seal-").tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let sealed = pre_commit_as(rp, &mut rng, identity, work.path())?;
    let mut interactive_seed = [0u8; 32];
    rng.fill_bytes(&mut interactive_seed);
    let (comm_r, comm_d, ticket) = (sealed.pc2.comm_r, sealed.pc2.comm_d, sealed.ticket);
    let (prover_id, sector_id) = (identity.prover_id(), identity.sector_id());
    tracing::info!("commit phase 1 (vanilla proofs)");
    let c1 =
        seal::seal_commit_phase1(&sealed.cache, &sealed.sealed, prover_id, sector_id, ticket, interactive_seed, sealed.pc2, &sealed.pieces)
            .map_err(Error::filecoin)?;

    let meta = SectorMeta {
        registered_proof: rp,
        miner_id: identity.miner_id,
        sector_number: identity.sector_number,
        prover_id: hex::encode(prover_id),
        comm_r: hex::encode(comm_r),
        comm_d: hex::encode(comm_d),
        ticket: hex::encode(ticket),
        seed: hex::encode(interactive_seed),
        generated_by: command.to_string(),
    };
    let c1_path = out_dir.join("c1.json");
    write_atomically(&c1_path, |w| serde_json::to_writer(w, &c1).map_err(std::io::Error::other))?;
    let meta_path = sector::meta_path_for(&c1_path);
    write_atomically(&meta_path, |w| {
        serde_json::to_writer_pretty(&mut *w, &meta).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })?;
    Ok(meta)
}
