//! Real PoSt requests to prove: sectors sealed with filecoin-proofs in a work directory
//! ([`SealedSectors`]), and the WinningPoSt or WindowPoSt request a miner would send for them,
//! with vanilla proofs drawn by filecoin-proofs-api exactly as Curio draws them (challenges
//! from the randomness, one `generate_single_vanilla_proof` per sector). Deterministic for a
//! seed. Used by the tests and by `cuzk gen-post`.

use std::path::{Path, PathBuf};

use filecoin_proofs_api::{post, PrivateReplicaInfo, RegisteredPoStProof, SectorId};
use rand::SeedableRng;

use super::{registry, PostInput};
use crate::porep::seal::{pre_commit, PreCommitted};
use crate::porep::sector::{prover_id, SectorIdentity};
use crate::{Error, Result};

/// Sectors of one miner sealed into a directory, in ascending sector number.
pub struct SealedSectors {
    /// The miner that sealed them.
    pub miner_id: u64,
    /// The sector size in bytes.
    pub sector_size: u64,
    /// (sector number, the sealed sector) in ascending sector number.
    pub sectors: Vec<(u64, PreCommitted)>,
}

impl SealedSectors {
    /// Seals `count` random sectors of `sector_size` bytes for `miner_id`, numbered from 1,
    /// under `dir` (one subdirectory each); `seed` fixes their contents.
    pub fn seal(sector_size: u64, count: usize, miner_id: u64, seed: u64, dir: &Path) -> Result<SealedSectors> {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let sectors = (1..=count as u64)
            .map(|n| {
                let sector_dir = dir.join(format!("sector-{n}"));
                let identity = SectorIdentity { miner_id, sector_number: n };
                Ok((n, pre_commit(sector_size, &mut rng, identity, &sector_dir)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SealedSectors { miner_id, sector_size, sectors })
    }

    fn replica(&self, rp: RegisteredPoStProof, sealed: &PreCommitted) -> PrivateReplicaInfo {
        PrivateReplicaInfo::new(rp, sealed.pc2.comm_r, PathBuf::from(&sealed.cache), PathBuf::from(&sealed.sealed))
    }

    /// The vanilla proofs of `numbers` (ascending) for `rp` and `randomness`, their challenges
    /// drawn over `challenged` (a WindowPoSt's whole sector list: API 1.1 draws a sector's
    /// challenges from its place in it; WinningPoSt's drawn sector).
    fn vanilla_proofs(&self, rp: RegisteredPoStProof, randomness: &[u8; 32], challenged: &[u64], numbers: &[u64]) -> Result<Vec<Vec<u8>>> {
        let fc = Error::filecoin;
        let all: Vec<SectorId> = challenged.iter().map(|n| SectorId::from(*n)).collect();
        let ids: Vec<SectorId> = numbers.iter().map(|n| SectorId::from(*n)).collect();
        let challenges = post::generate_fallback_sector_challenges(rp, randomness, &all, prover_id(self.miner_id)).map_err(fc)?;
        ids.iter()
            .map(|id| {
                let (_, sealed) = self
                    .sectors
                    .iter()
                    .find(|(n, _)| SectorId::from(*n) == *id)
                    .ok_or_else(|| Error::Invalid(format!("sector {} is not among the sealed sectors", u64::from(*id))))?;
                let wanted = challenges.get(id).ok_or_else(|| Error::Invalid(format!("no challenges for sector {}", u64::from(*id))))?;
                post::generate_single_vanilla_proof(rp, *id, &self.replica(rp, sealed), wanted).map_err(fc)
            })
            .collect()
    }

    /// The WindowPoSt request (the current registered proof) for partition `partition_index`
    /// holding sectors `numbers`, all the sealed sectors making up the whole WindowPoSt (in
    /// order, so partition k's sectors must be the k-th run of the partition size).
    pub fn window_post(&self, randomness: [u8; 32], partition_index: usize, numbers: &[u64]) -> Result<PostInput> {
        self.window_post_as(registry::for_size(self.sector_size, false)?, randomness, partition_index, numbers)
    }

    /// [`Self::window_post`] under the registered WindowPoSt proof `rp`.
    pub fn window_post_as(
        &self,
        rp: RegisteredPoStProof,
        randomness: [u8; 32],
        partition_index: usize,
        numbers: &[u64],
    ) -> Result<PostInput> {
        let all: Vec<u64> = self.sectors.iter().map(|(n, _)| *n).collect();
        let proofs = self.vanilla_proofs(rp, &randomness, &all, numbers)?;
        PostInput::new("generated WindowPoSt", rp, &randomness, self.miner_id, partition_index, proofs)
    }

    /// The WinningPoSt request for `randomness`: the sector filecoin-proofs draws from all of
    /// these sectors, proved.
    pub fn winning_post(&self, randomness: [u8; 32]) -> Result<PostInput> {
        let rp = registry::for_size(self.sector_size, true)?;
        let drawn = post::generate_winning_post_sector_challenge(rp, &randomness, self.sectors.len() as u64, prover_id(self.miner_id))
            .map_err(Error::filecoin)?;
        let numbers: Vec<u64> = drawn.iter().map(|i| self.sectors[*i as usize].0).collect();
        let proofs = self.vanilla_proofs(rp, &randomness, &numbers, &numbers)?;
        PostInput::new("generated WinningPoSt", rp, &randomness, self.miner_id, 0, proofs)
    }
}
