//! Circuit ids as Curio names them (`porep-32g`, `porep-2k`, …) and the request fields that
//! name a PoRep proof type (sector size, numeric registered proof).

use crate::porep::sector;
use crate::porep::RegisteredSealProof;
use crate::{Error, Result};

/// The PoRep proof types cuzk proves, with Curio's circuit id suffix.
const POREP: &[(&str, RegisteredSealProof)] = &[
    ("2k", RegisteredSealProof::StackedDrg2KiBV1_1),
    ("8m", RegisteredSealProof::StackedDrg8MiBV1_1),
    ("512m", RegisteredSealProof::StackedDrg512MiBV1_1),
    ("32g", RegisteredSealProof::StackedDrg32GiBV1_1),
    ("64g", RegisteredSealProof::StackedDrg64GiBV1_1),
];

/// Every PoRep proof type the daemon knows.
pub fn all() -> impl Iterator<Item = RegisteredSealProof> {
    POREP.iter().map(|(_, rp)| *rp)
}

/// `porep-32g` (also `porep-32GiB`) → the proof type.
pub fn parse(id: &str) -> Result<RegisteredSealProof> {
    let tail = id
        .strip_prefix("porep-")
        .ok_or_else(|| Error::Invalid(format!("circuit id {id:?}: only porep-<size> circuits (e.g. porep-32g) are served")))?;
    let lower = tail.to_ascii_lowercase();
    if let Some((_, rp)) = POREP.iter().find(|(s, _)| *s == lower) {
        return Ok(*rp);
    }
    let size = sector::parse_sector_size(tail).map_err(|_| Error::Invalid(format!("circuit id {id:?}: unknown sector size {tail:?}")))?;
    sector::registered_proof(size).map_err(|e| Error::Invalid(format!("circuit id {id:?}: {e}")))
}

/// The circuit id of a proof type (`porep-32g`).
pub fn id(rp: RegisteredSealProof) -> String {
    let s = POREP.iter().find(|(_, r)| *r == rp).map(|(s, _)| s.to_string()).unwrap_or_else(|| format!("{rp:?}"));
    format!("porep-{s}")
}

/// filecoin-ffi's numeric `RegisteredSealProof` (what Curio sends in `registered_proof`):
/// 0–4 are the V1 types, 5–9 V1_1, 10–14 V1_1 with synthetic PoRep.
pub fn from_number(n: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Ok(match n {
        5 => StackedDrg2KiBV1_1,
        6 => StackedDrg8MiBV1_1,
        7 => StackedDrg512MiBV1_1,
        8 => StackedDrg32GiBV1_1,
        9 => StackedDrg64GiBV1_1,
        0..=4 => {
            return Err(Error::Invalid(format!(
                "registered_proof {n} is a V1 (pre-V1_1) seal proof type, which is no longer accepted by the chain"
            )))
        }
        10..=14 => return Err(Error::Invalid(format!("registered_proof {n} is a synthetic-PoRep type, not supported yet"))),
        _ => return Err(Error::Invalid(format!("registered_proof {n} is not a known seal proof type"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_bad_ones_are_named() {
        for rp in all() {
            assert_eq!(parse(&id(rp)).unwrap(), rp);
        }
        assert_eq!(parse("porep-32GiB").unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1);
        assert!(parse("porep-3k").unwrap_err().to_string().contains("porep-3k"));
        assert!(parse("wpost-32g").unwrap_err().to_string().contains("wpost-32g"));
        assert_eq!(from_number(8).unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1);
        assert!(from_number(3).unwrap_err().to_string().contains("V1"));
        assert!(from_number(99).is_err());
    }
}
