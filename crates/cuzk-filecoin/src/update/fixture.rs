//! Real SnapDeals requests to prove: a sector sealed with filecoin-proofs in a work
//! directory, new data encoded into it (`empty_sector_update_encode_into`) and the partition
//! proofs filecoin-proofs-api draws for the update (`generate_partition_proofs`), exactly the
//! bytes Curio sends. Deterministic for a seed. Used by the tests and by `cuzk gen-update`.

use std::path::Path;

use filecoin_proofs_api::{seal, update, PaddedBytesAmount, UnpaddedBytesAmount};
use rand::{RngCore, SeedableRng};

use super::{registry, UpdateInput};
use crate::porep::seal::pre_commit;
use crate::porep::sector::{self, SectorIdentity};
use crate::{Error, Result};

/// Seals a `sector_size` sector of `miner_id` (number 1) under `dir`, encodes random data
/// into it and returns the update's request; `seed` fixes every byte.
pub fn sealed_update(sector_size: u64, miner_id: u64, seed: u64, dir: &Path) -> Result<UpdateInput> {
    let rp = registry::for_size(sector_size)?;
    let fc = Error::filecoin;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let key = pre_commit(sector_size, &mut rng, SectorIdentity { miner_id, sector_number: 1 }, &dir.join("sector-key"))?;

    let (staged, replica, cache) = (dir.join("update-staged"), dir.join("update-sealed"), dir.join("update-cache"));
    std::fs::create_dir_all(&cache).map_err(|e| Error::io(&cache, e))?;
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let mut staged_file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&staged).map_err(|e| Error::io(&staged, e))?;
    let (piece, _) = seal::add_piece(sector::registered_proof(sector_size)?, &data[..], &mut staged_file, unpadded, &[]).map_err(fc)?;
    drop(staged_file);
    // filecoin-proofs writes the new replica into a file already the sector key's size.
    std::fs::File::create(&replica).and_then(|f| f.set_len(sector_size)).map_err(|e| Error::io(&replica, e))?;

    tracing::info!("encoding new data into the sector (empty_sector_update_encode_into)");
    let encoded = update::empty_sector_update_encode_into(rp, &replica, &cache, &key.sealed, &key.cache, &staged, &[piece]).map_err(fc)?;
    let comm_r_old = key.pc2.comm_r;
    tracing::info!("drawing the update's partition proofs");
    let proofs = update::generate_partition_proofs(
        rp,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &key.sealed,
        &key.cache,
        &replica,
        &cache,
    )
    .map_err(fc)?;
    UpdateInput::new(
        "generated SnapDeals",
        rp,
        &comm_r_old,
        &encoded.comm_r_new,
        &encoded.comm_d_new,
        proofs.into_iter().map(|p| p.0).collect(),
    )
}
