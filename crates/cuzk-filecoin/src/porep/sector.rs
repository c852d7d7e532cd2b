//! Sector sizes, registered proofs and sector identity: parsing "2KiB"-style sizes, the
//! registered proof cuzk uses for each, the prover id that lotus derives from a miner id, and
//! the metadata file written next to each generated C1 (what `verify_seal` needs besides the
//! proof).

use std::path::{Path, PathBuf};

use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The PoRep sector sizes filecoin-proofs registers, with their names.
pub const SIZES: [(&str, u64); 5] = [("2KiB", 2 << 10), ("8MiB", 8 << 20), ("512MiB", 512 << 20), ("32GiB", 32 << 30), ("64GiB", 64 << 30)];

/// Parses "2KiB", "8MiB", "512MiB", "32GiB", "64GiB" (case-insensitive) or a byte count.
pub fn parse_sector_size(s: &str) -> Result<u64> {
    let t = s.trim();
    if let Some((_, n)) = SIZES.iter().find(|(name, _)| name.eq_ignore_ascii_case(t)) {
        return Ok(*n);
    }
    match t.parse::<u64>() {
        Ok(n) if SIZES.iter().any(|(_, v)| *v == n) => Ok(n),
        _ => Err(Error::SectorSize(format!(
            "unsupported sector size {s:?}; expected one of {}",
            SIZES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// "2KiB" for 2048, etc.; the byte count for anything else.
pub fn size_name(bytes: u64) -> String {
    SIZES.iter().find(|(_, v)| *v == bytes).map(|(n, _)| n.to_string()).unwrap_or_else(|| format!("{bytes} bytes"))
}

/// The registered proof cuzk seals and proves with for a sector size (the V1_1 proofs that
/// the network uses for interactive PoRep).
pub fn registered_proof(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Ok(match sector_size {
        x if x == 2 << 10 => StackedDrg2KiBV1_1,
        x if x == 8 << 20 => StackedDrg8MiBV1_1,
        x if x == 512 << 20 => StackedDrg512MiBV1_1,
        x if x == 32 << 30 => StackedDrg32GiBV1_1,
        x if x == 64 << 30 => StackedDrg64GiBV1_1,
        _ => return Err(Error::SectorSize(format!("no registered PoRep proof for a {sector_size}-byte sector"))),
    })
}

/// The sector size a registered proof is for, in bytes.
pub fn sector_size_of(rp: RegisteredSealProof) -> u64 {
    u64::from(rp.sector_size())
}

/// The prover id of a miner: the payload of its ID address (the miner id as an unsigned
/// LEB128 varint), zero-padded to 32 bytes, as lotus and filecoin-ffi derive it.
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Which sector a proof is for: the miner (prover id) and the sector number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectorIdentity {
    /// The miner's actor id (`f0…` without the prefix).
    pub miner_id: u64,
    /// The sector's number within the miner.
    pub sector_number: u64,
}

impl SectorIdentity {
    /// The 32-byte prover id of the miner (see [`prover_id`]).
    pub fn prover_id(&self) -> [u8; 32] {
        prover_id(self.miner_id)
    }

    /// The sector number as filecoin-proofs' [`SectorId`].
    pub fn sector_id(&self) -> SectorId {
        SectorId::from(self.sector_number)
    }
}

/// What `verify_seal` needs besides the proof, saved next to a generated C1 file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectorMeta {
    /// The registered proof the C1 was sealed under.
    pub registered_proof: RegisteredSealProof,
    /// The miner's actor id.
    pub miner_id: u64,
    /// The sector's number within the miner.
    pub sector_number: u64,
    /// Hex of the 32-byte prover id (derived from `miner_id`).
    pub prover_id: String,
    /// Hex of comm_r.
    pub comm_r: String,
    /// Hex of comm_d.
    pub comm_d: String,
    /// Hex of the sealing ticket.
    pub ticket: String,
    /// Hex of the interactive seed.
    pub seed: String,
    /// The command that produced the C1 file.
    #[serde(default)]
    pub generated_by: String,
}

impl SectorMeta {
    /// The sector identity the metadata names.
    pub fn identity(&self) -> SectorIdentity {
        SectorIdentity { miner_id: self.miner_id, sector_number: self.sector_number }
    }

    /// Reads a metadata file, checking that its prover id matches its miner id.
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let meta: SectorMeta =
            serde_json::from_slice(&bytes).map_err(|e| Error::c1(path, format!("not a cuzk sector metadata file: {e}")))?;
        if meta.prover_id != hex::encode(prover_id(meta.miner_id)) {
            return Err(Error::c1(path, "prover_id does not match miner_id"));
        }
        Ok(meta)
    }
}

/// The metadata file that belongs to a C1 file: `c1.json` -> `c1.meta.json`.
pub fn meta_path_for(c1: &Path) -> PathBuf {
    let stem = c1.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "c1".into());
    c1.with_file_name(format!("{stem}.meta.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_name() {
        assert_eq!(parse_sector_size("2KiB").unwrap(), 2048);
        assert_eq!(parse_sector_size("8mib").unwrap(), 8 << 20);
        assert_eq!(parse_sector_size("34359738368").unwrap(), 32 << 30);
        assert!(parse_sector_size("4KiB").unwrap_err().to_string().contains("unsupported"));
        assert_eq!(size_name(512 << 20), "512MiB");
        for (name, n) in SIZES {
            let rp = registered_proof(n).unwrap();
            assert_eq!(sector_size_of(rp), n, "{name}");
        }
    }

    #[test]
    fn prover_id_is_the_id_address_payload() {
        // ID address payloads are unsigned varints: f01000 -> [0xe8, 0x07].
        assert_eq!(&prover_id(1000)[..3], &[0xe8, 0x07, 0]);
        assert_eq!(&prover_id(0)[..2], &[0, 0]);
        assert_eq!(&prover_id(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id(128)[..3], &[0x80, 0x01, 0]);
        assert_eq!(&prover_id(u64::MAX)[..11], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0]);
    }

    #[test]
    fn meta_path_sits_next_to_the_c1() {
        assert_eq!(meta_path_for(Path::new("/a/c1.json")), Path::new("/a/c1.meta.json"));
    }
}
