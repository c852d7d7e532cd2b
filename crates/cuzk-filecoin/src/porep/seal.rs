//! Making C1 outputs to prove: seal a random piece with filecoin-proofs (add piece, PC1, PC2,
//! C1) in a temporary directory and write the C1 JSON in lotus' form plus the metadata file
//! that `verify_seal` needs. Deterministic for a given seed (piece, ticket and seed bytes).

use std::path::Path;

use filecoin_proofs_api::seal;
use filecoin_proofs_api::{PaddedBytesAmount, UnpaddedBytesAmount};
use rand::{RngCore, SeedableRng};

use super::sector::{self, SectorIdentity, SectorMeta};
use crate::{Error, Result};
use cuzk_core::atomic::write_atomically;

/// Seals a random sector of `sector_size` bytes and writes `out_dir/c1.json` and
/// `out_dir/c1.meta.json`. Returns the metadata.
pub fn gen_c1(sector_size: u64, seed: u64, identity: SectorIdentity, out_dir: &Path, command: &str) -> Result<SectorMeta> {
    let rp = sector::registered_proof(sector_size)?;
    let fc = Error::filecoin;
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let work = tempfile::Builder::new().prefix("cuzk-seal-").tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let cache = work.path().join("cache");
    let staged = work.path().join("staged");
    let sealed = work.path().join("sealed");
    std::fs::create_dir_all(&cache).map_err(|e| Error::io(&cache, e))?;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let mut piece = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut piece);
    let mut ticket = [0u8; 32];
    let mut interactive_seed = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    rng.fill_bytes(&mut interactive_seed);
    let prover_id = identity.prover_id();
    let sector_id = identity.sector_id();

    tracing::info!(size = %sector::size_name(sector_size), "adding piece");
    let mut staged_file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&staged).map_err(|e| Error::io(&staged, e))?;
    let (piece_info, _) = seal::add_piece(rp, &piece[..], &mut staged_file, unpadded, &[]).map_err(fc)?;
    drop(staged_file);
    std::fs::File::create(&sealed).map_err(|e| Error::io(&sealed, e))?;
    let pieces = [piece_info];

    tracing::info!("pre-commit phase 1 (SDR labelling)");
    let pc1 = seal::seal_pre_commit_phase1(rp, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces).map_err(fc)?;
    tracing::info!("pre-commit phase 2 (trees)");
    let pc2 = seal::seal_pre_commit_phase2(pc1, &cache, &sealed).map_err(fc)?;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    tracing::info!("commit phase 1 (vanilla proofs)");
    let c1 = seal::seal_commit_phase1(&cache, &sealed, prover_id, sector_id, ticket, interactive_seed, pc2, &pieces).map_err(fc)?;

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
