//! Circuit ids as Curio names them (`porep-32g`, `wpost-32g`, `winning-32g`, …: [`Circuit`])
//! and the request fields that name a PoRep proof type (sector size, numeric registered proof).

use crate::porep::sector;
use crate::porep::RegisteredSealProof;
use crate::post::{self, RegisteredPoStProof};
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

/// A circuit a process can hold resident, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Circuit {
    /// A PoRep partition circuit (`porep-<size>`).
    Porep(RegisteredSealProof),
    /// A PoSt circuit (`wpost-<size>`: WindowPoSt as lotus proves it today; `winning-<size>`).
    Post(RegisteredPoStProof),
}

/// Every circuit id's circuit: PoRep, WindowPoSt and WinningPoSt of every size.
pub fn circuits() -> impl Iterator<Item = Circuit> {
    let posts = POREP.iter().flat_map(|(_, rp)| {
        let size = sector::sector_size_of(*rp);
        [false, true].into_iter().filter_map(move |winning| post::registry::for_size(size, winning).ok())
    });
    all().map(Circuit::Porep).chain(posts.map(Circuit::Post))
}

/// `porep-32g`, `wpost-32g`, `winning-32g` (the size also as `32GiB`) → the circuit.
pub fn parse_circuit(id: &str) -> Result<Circuit> {
    let post_kind = [("wpost-", false), ("winning-", true)].into_iter().find(|(p, _)| id.starts_with(p));
    let Some((prefix, winning)) = post_kind else {
        return parse(id).map(Circuit::Porep).map_err(|_| {
            Error::Invalid(format!("circuit id {id:?}: expected porep-<size>, wpost-<size> or winning-<size> (e.g. porep-32g)"))
        });
    };
    let tail = &id[prefix.len()..];
    let size = POREP
        .iter()
        .find(|(s, _)| *s == tail.to_ascii_lowercase())
        .map(|(_, rp)| sector::sector_size_of(*rp))
        .or_else(|| sector::parse_sector_size(tail).ok())
        .ok_or_else(|| Error::Invalid(format!("circuit id {id:?}: unknown sector size {tail:?}")))?;
    post::registry::for_size(size, winning).map(Circuit::Post).map_err(|e| Error::Invalid(format!("circuit id {id:?}: {e}")))
}

/// The circuit id of a circuit (`porep-32g`, `wpost-32g`, `winning-32g`).
pub fn circuit_id(c: Circuit) -> String {
    match c {
        Circuit::Porep(rp) => id(rp),
        Circuit::Post(rp) => {
            let size = post::registry::sector_size_of(rp);
            let short =
                POREP.iter().find(|(_, r)| sector::sector_size_of(*r) == size).map_or_else(|| size.to_string(), |(s, _)| s.to_string());
            format!("{}-{short}", if post::registry::is_winning(rp) { "winning" } else { "wpost" })
        }
    }
}

/// filecoin-ffi's numeric `RegisteredSealProof` (what Curio sends in `registered_proof`):
/// 0–4 are the V1 types, 5–9 V1_1, 10–14 V1_1 with synthetic PoRep, 15–19 V1_2 with
/// non-interactive PoRep (not served yet).
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
        10 => StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        11 => StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        12 => StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        13 => StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        14 => StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        15..=19 => return Err(Error::Invalid(format!("registered_proof {n} is a non-interactive PoRep type, not supported yet"))),
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
        let ids: Vec<String> = circuits().map(circuit_id).collect();
        assert_eq!(ids.len(), 15);
        for c in circuits() {
            assert_eq!(parse_circuit(&circuit_id(c)).unwrap(), c);
        }
        assert!(ids.contains(&"wpost-32g".to_string()) && ids.contains(&"winning-2k".to_string()));
        assert_eq!(parse_circuit("wpost-32g").unwrap(), Circuit::Post(RegisteredPoStProof::StackedDrgWindow32GiBV1_2));
        assert_eq!(parse_circuit("winning-32GiB").unwrap(), Circuit::Post(RegisteredPoStProof::StackedDrgWinning32GiBV1));
        assert_eq!(parse_circuit("porep-2k").unwrap(), Circuit::Porep(RegisteredSealProof::StackedDrg2KiBV1_1));
        for bad in ["snap-32g", "wpost-3g", "winning-", "porep-3k"] {
            assert!(parse_circuit(bad).unwrap_err().to_string().contains(bad), "{bad}");
        }
        assert_eq!(from_number(8).unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1);
        assert!(from_number(3).unwrap_err().to_string().contains("V1"));
        assert_eq!(from_number(13).unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1_Feat_SyntheticPoRep);
        assert!(from_number(17).unwrap_err().to_string().contains("non-interactive"));
        assert!(from_number(99).is_err());
    }
}
