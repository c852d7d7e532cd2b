//! The registered update proofs (SnapDeals) cuzk serves: their lotus / go-state-types numbers
//! (what Curio puts in `registered_proof`, from 0) and sector sizes.

use filecoin_proofs_api::RegisteredUpdateProof;

use crate::{Error, Result};

use RegisteredUpdateProof::*;

/// Every registered update proof with its lotus number, in lotus order.
pub const LOTUS_NUMBERS: [(u64, RegisteredUpdateProof); 5] =
    [(0, StackedDrg2KiBV1), (1, StackedDrg8MiBV1), (2, StackedDrg512MiBV1), (3, StackedDrg32GiBV1), (4, StackedDrg64GiBV1)];

/// The registered update proof lotus numbers `n`.
pub fn from_number(n: u64) -> Result<RegisteredUpdateProof> {
    LOTUS_NUMBERS
        .iter()
        .find(|(k, _)| *k == n)
        .map(|(_, rp)| *rp)
        .ok_or_else(|| Error::Invalid(format!("registered update proof {n} is not one lotus defines (0–4)")))
}

/// Lotus's number for `rp`.
pub fn number(rp: RegisteredUpdateProof) -> u64 {
    LOTUS_NUMBERS.iter().find(|(_, r)| *r == rp).map(|(k, _)| *k).expect("every registered update proof is in LOTUS_NUMBERS")
}

/// `rp`'s sector size in bytes.
pub fn sector_size_of(rp: RegisteredUpdateProof) -> u64 {
    u64::from(rp.sector_size())
}

/// The registered update proof of a sector size.
pub fn for_size(sector_size: u64) -> Result<RegisteredUpdateProof> {
    LOTUS_NUMBERS
        .iter()
        .map(|(_, rp)| *rp)
        .find(|rp| sector_size_of(*rp) == sector_size)
        .ok_or_else(|| Error::SectorSize(format!("no registered update proof for {sector_size}-byte sectors")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lotus_numbers_round_trip_and_name_the_right_size() {
        for (n, rp) in LOTUS_NUMBERS {
            assert_eq!(from_number(n).unwrap(), rp);
            assert_eq!(number(rp), n);
            assert_eq!(sector_size_of(rp), [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30][n as usize], "{rp:?}");
            assert_eq!(for_size(sector_size_of(rp)).unwrap(), rp);
        }
        assert!(from_number(5).unwrap_err().to_string().contains('5'));
        assert!(for_size(4096).is_err());
    }
}
