//! Circuit ids as Curio names them (`porep-32g`, `wpost-32g`, `winning-32g`, `snap-32g`, …: [`Circuit`])
//! and the request fields that name a PoRep proof type (sector size, numeric registered proof).

use crate::porep::sector;
use crate::porep::RegisteredSealProof;
use crate::post::{self, RegisteredPoStProof};
use crate::update::{self, RegisteredUpdateProof};
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

/// The circuit id of a proof type (`porep-32g`). A variant that proves the V1_1 circuit of its
/// size (synthetic and non-interactive PoRep: [`crate::porep::kind::circuit_twin`]) has that
/// circuit's id, since it uses (and keeps resident) the same parameters and PCE.
pub fn id(rp: RegisteredSealProof) -> String {
    let twin = crate::porep::kind::circuit_twin(rp);
    let s = POREP.iter().find(|(_, r)| *r == twin).map(|(s, _)| s.to_string()).unwrap_or_else(|| format!("{rp:?}"));
    format!("porep-{s}")
}

/// A circuit a process can hold resident, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Circuit {
    /// A PoRep partition circuit (`porep-<size>`).
    Porep(RegisteredSealProof),
    /// A PoSt circuit (`wpost-<size>`: WindowPoSt as lotus proves it today; `winning-<size>`).
    Post(RegisteredPoStProof),
    /// A SnapDeals partition circuit (`snap-<size>`).
    Update(RegisteredUpdateProof),
}

/// Every circuit id's circuit: PoRep, WindowPoSt, WinningPoSt and SnapDeals of every size.
pub fn circuits() -> impl Iterator<Item = Circuit> {
    let posts = POREP.iter().flat_map(|(_, rp)| {
        let size = sector::sector_size_of(*rp);
        [false, true].into_iter().filter_map(move |winning| post::registry::for_size(size, winning).ok())
    });
    let updates = update::registry::LOTUS_NUMBERS.into_iter().map(|(_, rp)| Circuit::Update(rp));
    all().map(Circuit::Porep).chain(posts.map(Circuit::Post)).chain(updates)
}

/// `porep-32g`, `wpost-32g`, `winning-32g`, `snap-32g` (the size also as `32GiB`) → the circuit.
pub fn parse_circuit(id: &str) -> Result<Circuit> {
    let kind = [("wpost-", Some(false)), ("winning-", Some(true)), ("snap-", None)].into_iter().find(|(p, _)| id.starts_with(p));
    let Some((prefix, winning)) = kind else {
        return parse(id).map(Circuit::Porep).map_err(|_| {
            Error::Invalid(format!(
                "circuit id {id:?}: expected porep-<size>, wpost-<size>, winning-<size> or snap-<size> (e.g. porep-32g)"
            ))
        });
    };
    let tail = &id[prefix.len()..];
    let size = POREP
        .iter()
        .find(|(s, _)| *s == tail.to_ascii_lowercase())
        .map(|(_, rp)| sector::sector_size_of(*rp))
        .or_else(|| sector::parse_sector_size(tail).ok())
        .ok_or_else(|| Error::Invalid(format!("circuit id {id:?}: unknown sector size {tail:?}")))?;
    let circuit = match winning {
        Some(winning) => post::registry::for_size(size, winning).map(Circuit::Post),
        None => update::registry::for_size(size).map(Circuit::Update),
    };
    circuit.map_err(|e| Error::Invalid(format!("circuit id {id:?}: {e}")))
}

/// The circuit id of a circuit (`porep-32g`, `wpost-32g`, `winning-32g`, `snap-32g`).
pub fn circuit_id(c: Circuit) -> String {
    let short =
        |size: u64| POREP.iter().find(|(_, r)| sector::sector_size_of(*r) == size).map_or_else(|| size.to_string(), |(s, _)| s.to_string());
    match c {
        Circuit::Porep(rp) => id(rp),
        Circuit::Post(rp) => {
            let kind = if post::registry::is_winning(rp) { "winning" } else { "wpost" };
            format!("{kind}-{}", short(post::registry::sector_size_of(rp)))
        }
        Circuit::Update(rp) => format!("snap-{}", short(update::registry::sector_size_of(rp))),
    }
}

/// What a commitment field on the wire commits to: a sealed replica (comm_r) or unsealed data
/// (comm_d), each with its own CID codec and multihash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commitment {
    /// `fil-commitment-sealed` (0xf102), multihash `poseidon-bls12_381-a2-fc1` (0xb401).
    Sealed,
    /// `fil-commitment-unsealed` (0xf101), multihash `sha2-256-trunc254-padded` (0x1012).
    Unsealed,
}

/// The 32-byte commitment of a SnapDeals commitment field as Curio sends it: either the raw
/// 32 bytes or the commitment's CID bytes (`cid.Bytes()`: version 1, the codec, the multihash
/// code and length as varints, then the 32-byte digest), whose codec and multihash must be
/// `kind`'s.
pub fn commitment_from_wire(field: &str, bytes: &[u8], kind: Commitment) -> Result<[u8; 32]> {
    if let Ok(raw) = <[u8; 32]>::try_from(bytes) {
        return Ok(raw);
    }
    let bad = |what: String| Error::Invalid(format!("{field}: {what}"));
    let (codec, hash) = match kind {
        Commitment::Sealed => (0xf102, 0xb401),
        Commitment::Unsealed => (0xf101, 0x1012),
    };
    let mut rest = bytes;
    let mut varint = |name: &str| -> Result<u64> {
        let mut v = 0u64;
        for (i, b) in rest.iter().enumerate().take(9) {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                rest = &rest[i + 1..];
                return Ok(v);
            }
        }
        Err(bad(format!("{} bytes: neither 32 raw bytes nor a CID (its {name} is cut off)", bytes.len())))
    };
    let expect = |name: &str, got: u64, want: u64| {
        if got == want {
            Ok(())
        } else {
            Err(bad(format!("a CID whose {name} is {got:#x}; a {kind:?} commitment has {want:#x}")))
        }
    };
    expect("version", varint("version")?, 1)?;
    expect("codec", varint("codec")?, codec)?;
    expect("multihash", varint("multihash")?, hash)?;
    expect("digest length", varint("digest length")?, 32)?;
    <[u8; 32]>::try_from(rest).map_err(|_| bad(format!("a CID with {} digest bytes; 32 are expected", rest.len())))
}

/// The CID bytes of a commitment (what Curio's `cid.Bytes()` gives), the inverse of
/// [`commitment_from_wire`].
pub fn commitment_cid(commitment: &[u8; 32], kind: Commitment) -> Vec<u8> {
    let prefix: &[u8] = match kind {
        Commitment::Sealed => &[0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20],
        Commitment::Unsealed => &[0x01, 0x81, 0xe2, 0x03, 0x92, 0x20, 0x20],
    };
    [prefix, commitment].concat()
}

/// filecoin-ffi's numeric `RegisteredSealProof` (what Curio sends in `registered_proof`):
/// 0–4 are the V1 types, 5–9 V1_1, 10–14 V1_1 with synthetic PoRep, 15–19 V1_2 with
/// non-interactive PoRep (go-state-types' `RegisteredSealProof_StackedDrg*V1_2_Feat_NiPoRep`),
/// each group in the order 2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB.
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
        15 => StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        16 => StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        17 => StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        18 => StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        19 => StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
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
        assert_eq!(ids.len(), 20);
        for c in circuits() {
            assert_eq!(parse_circuit(&circuit_id(c)).unwrap(), c);
        }
        assert!(ids.contains(&"wpost-32g".to_string()) && ids.contains(&"winning-2k".to_string()));
        assert_eq!(parse_circuit("wpost-32g").unwrap(), Circuit::Post(RegisteredPoStProof::StackedDrgWindow32GiBV1_2));
        assert_eq!(parse_circuit("winning-32GiB").unwrap(), Circuit::Post(RegisteredPoStProof::StackedDrgWinning32GiBV1));
        assert_eq!(parse_circuit("porep-2k").unwrap(), Circuit::Porep(RegisteredSealProof::StackedDrg2KiBV1_1));
        assert_eq!(parse_circuit("snap-32g").unwrap(), Circuit::Update(RegisteredUpdateProof::StackedDrg32GiBV1));
        for bad in ["snap-3g", "wpost-3g", "winning-", "porep-3k", "update-32g"] {
            assert!(parse_circuit(bad).unwrap_err().to_string().contains(bad), "{bad}");
        }
        assert_eq!(from_number(8).unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1);
        assert!(from_number(3).unwrap_err().to_string().contains("V1"));
        assert_eq!(from_number(13).unwrap(), RegisteredSealProof::StackedDrg32GiBV1_1_Feat_SyntheticPoRep);
        assert_eq!(from_number(18).unwrap(), RegisteredSealProof::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep);
        for (n, (_, size)) in (5u64..).zip(sector::SIZES) {
            for group in 0..3 {
                let rp = from_number(n + 5 * group).unwrap();
                assert_eq!(sector::sector_size_of(rp), size, "{n}");
                // Every variant keeps the V1_1 circuit's id (one resident copy).
                assert_eq!(id(rp), id(from_number(n).unwrap()), "{rp:?}");
            }
        }
        assert!(from_number(20).is_err());
        assert!(from_number(99).is_err());
    }

    #[test]
    fn commitments_come_raw_or_as_their_cids_and_foreign_cids_are_named() {
        let c = [7u8; 32];
        for kind in [Commitment::Sealed, Commitment::Unsealed] {
            assert_eq!(commitment_from_wire("f", &c, kind).unwrap(), c);
            assert_eq!(commitment_from_wire("f", &commitment_cid(&c, kind), kind).unwrap(), c);
        }
        // The published CID prefixes: bagboea4b5abc… (comm_r) is 0x01 0x82e203 0x81e802 0x20.
        assert_eq!(commitment_cid(&c, Commitment::Sealed).len(), 40);
        assert_eq!(commitment_cid(&c, Commitment::Unsealed).len(), 39);
        let e = commitment_from_wire("comm_d_new", &commitment_cid(&c, Commitment::Sealed), Commitment::Unsealed).unwrap_err();
        assert!(e.to_string().contains("comm_d_new") && e.to_string().contains("codec"), "{e}");
        let cut = &commitment_cid(&c, Commitment::Sealed)[..39];
        assert!(commitment_from_wire("comm_r_old", cut, Commitment::Sealed).unwrap_err().to_string().contains("31 digest bytes"));
        assert!(commitment_from_wire("comm_r_old", &[0x81], Commitment::Sealed).is_err());
        assert!(commitment_from_wire("comm_r_old", &[], Commitment::Sealed).is_err());
    }
}
