//! The registered PoSt proofs cuzk serves: their lotus / go-state-types numbers (what Curio
//! puts in `registered_proof`), which are WinningPoSt and which WindowPoSt, and sector sizes.
//! Lotus's `StackedDrgWindow*V1_1` (10–14) are filecoin-proofs-api's `*V1_2`, as filecoin-ffi
//! maps them.

use filecoin_proofs_api::{PoStType, RegisteredPoStProof};

use crate::{Error, Result};

use RegisteredPoStProof::*;

/// Every registered PoSt proof with its lotus number, in lotus order.
pub const LOTUS_NUMBERS: [(u64, RegisteredPoStProof); 15] = [
    (0, StackedDrgWinning2KiBV1),
    (1, StackedDrgWinning8MiBV1),
    (2, StackedDrgWinning512MiBV1),
    (3, StackedDrgWinning32GiBV1),
    (4, StackedDrgWinning64GiBV1),
    (5, StackedDrgWindow2KiBV1),
    (6, StackedDrgWindow8MiBV1),
    (7, StackedDrgWindow512MiBV1),
    (8, StackedDrgWindow32GiBV1),
    (9, StackedDrgWindow64GiBV1),
    (10, StackedDrgWindow2KiBV1_2),
    (11, StackedDrgWindow8MiBV1_2),
    (12, StackedDrgWindow512MiBV1_2),
    (13, StackedDrgWindow32GiBV1_2),
    (14, StackedDrgWindow64GiBV1_2),
];

/// The registered PoSt proof lotus numbers `n`.
pub fn from_number(n: u64) -> Result<RegisteredPoStProof> {
    LOTUS_NUMBERS
        .iter()
        .find(|(k, _)| *k == n)
        .map(|(_, rp)| *rp)
        .ok_or_else(|| Error::Invalid(format!("registered PoSt proof {n} is not one lotus defines (0–4 WinningPoSt, 5–14 WindowPoSt)")))
}

/// Lotus's number for `rp`.
pub fn number(rp: RegisteredPoStProof) -> u64 {
    LOTUS_NUMBERS.iter().find(|(_, r)| *r == rp).map(|(k, _)| *k).expect("every registered PoSt proof is in LOTUS_NUMBERS")
}

/// Whether `rp` is a WinningPoSt (else WindowPoSt).
pub fn is_winning(rp: RegisteredPoStProof) -> bool {
    rp.typ() == PoStType::Winning
}

/// `rp`'s sector size in bytes.
pub fn sector_size_of(rp: RegisteredPoStProof) -> u64 {
    u64::from(rp.sector_size())
}

/// The WinningPoSt or current WindowPoSt proof of a sector size (the ones lotus uses today).
pub fn for_size(sector_size: u64, winning: bool) -> Result<RegisteredPoStProof> {
    LOTUS_NUMBERS
        .iter()
        .map(|(_, rp)| *rp)
        .rfind(|rp| is_winning(*rp) == winning && sector_size_of(*rp) == sector_size)
        .ok_or_else(|| Error::SectorSize(format!("no registered PoSt proof for {sector_size}-byte sectors")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lotus_numbers_round_trip_and_name_the_right_kind_and_size() {
        for (n, rp) in LOTUS_NUMBERS {
            assert_eq!(from_number(n).unwrap(), rp);
            assert_eq!(number(rp), n);
            assert_eq!(is_winning(rp), n < 5, "{rp:?}");
            let size = [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30][(n % 5) as usize];
            assert_eq!(sector_size_of(rp), size, "{rp:?}");
        }
        assert!(from_number(15).unwrap_err().to_string().contains("15"));
        assert_eq!(for_size(2048, false).unwrap(), StackedDrgWindow2KiBV1_2);
        assert_eq!(for_size(32 << 30, true).unwrap(), StackedDrgWinning32GiBV1);
        assert!(for_size(4096, true).is_err());
    }
}
