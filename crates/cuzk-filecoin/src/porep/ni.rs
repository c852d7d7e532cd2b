//! Non-interactive PoRep (`StackedDrg*V1_2_Feat_NonInteractivePoRep`): its partitions are the
//! V1_1 partition circuit (same parameter set, see [`super::kind::circuit_twin`]), proved by
//! the engine like any PoRep's; what differs is the proof the chain takes. filecoin-proofs'
//! `seal_commit_phase2` aggregates the partition proofs with SnarkPack (V2, transcript = the
//! sha256 of comm_r) and returns the aggregate, and `verify_seal` expects that. So after the
//! partitions are proved, [`aggregate`] hands them to filecoin-proofs' own
//! `aggregate_seal_commit_proofs`. Aggregating and verifying read the SnarkPack SRS file
//! (`v28-fil-inner-product-v1.srs` in the parameter directory); [`check_srs`] checks it is
//! there, whole, and large enough before anything is proved (filecoin-proofs would otherwise
//! fail only after every partition was proved, or panic on a short file).

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use filecoin_proofs_api::seal::{self, SealCommitPhase2Output};
use filecoin_proofs_api::{ApiFeature, RegisteredAggregationProof, RegisteredSealProof};

use super::c1::C1;
use super::circuits::PARTITION_PROOF_BYTES;
use crate::{Error, Result};

/// Whether `rp` is a non-interactive PoRep proof (its proof is a SnarkPack aggregate).
pub fn is_non_interactive(rp: RegisteredSealProof) -> bool {
    rp.feature_enabled(ApiFeature::NonInteractivePoRep)
}

/// How many proofs filecoin-proofs aggregates for `partitions` partition proofs: padded (with
/// copies of the last) to a power of two, at least two.
pub fn aggregated_count(partitions: usize) -> usize {
    partitions.max(2).next_power_of_two()
}

// Compressed sizes in bellperson's SnarkPack encoding: a target-group element, G1, G2.
const GT: usize = 288;
const G1: usize = 48;
const G2: usize = 96;

/// The length in bytes of a SnarkPack aggregate of `partitions` partition proofs as bellperson
/// writes it: com_ab, com_c, ip_ab (5 Gt), agg_c (G1); then the TIPP/MIPP proof: the proof
/// count (u32), per GIPA round 10 Gt and 2 G1, the final A (G1), B (G2), C (G1), v key
/// (2 G2) and w key (2 G1), and the v and w key openings (2 G2 + 2 G1).
pub fn aggregate_len(partitions: usize) -> usize {
    let rounds = aggregated_count(partitions).trailing_zeros() as usize;
    5 * GT + G1 + 4 + rounds * (10 * GT + 2 * G1) + (4 * G1 + 3 * G2) + (2 * G2 + 2 * G1)
}

/// Where the proof count sits in an aggregate (after com_ab, com_c, ip_ab and agg_c).
const COUNT_AT: usize = 5 * GT + G1;

/// Why `proof` cannot be the aggregate of a C1 with `partitions` partitions, or `None` if its
/// length and proof count are right (the cheap shape check before `verify_seal`, whose reader
/// trusts the count: an absurd one would index past the SRS).
pub fn aggregate_shape_error(proof: &[u8], partitions: usize) -> Option<String> {
    let want = aggregate_len(partitions);
    if proof.len() != want {
        return Some(format!(
            "proof is {} bytes; a non-interactive PoRep proof of {partitions} partitions is a {want}-byte SnarkPack aggregate",
            proof.len()
        ));
    }
    let count = u32::from_le_bytes([proof[COUNT_AT], proof[COUNT_AT + 1], proof[COUNT_AT + 2], proof[COUNT_AT + 3]]);
    let target = aggregated_count(partitions);
    if count as usize != target {
        return Some(format!("the aggregate says it holds {count} proofs; {partitions} partitions aggregate as {target}"));
    }
    None
}

/// The SnarkPack SRS file filecoin-proofs reads (one file for every sector size), in the
/// configured parameter directory.
pub fn srs_path() -> PathBuf {
    storage_proofs_core::parameter_cache::parameter_cache_srs_key_path("", 0)
}

/// The most elements of each SRS vector filecoin-proofs reads (`read_cached_srs_key`).
const SRS_READ_MAX: usize = (2 << 14) + 1;
/// The most elements an SRS vector may declare (bellperson's `MAX_SRS_SIZE`).
const SRS_MAX: usize = (2 << 19) + 1;

/// Checks that the SRS file is present and whole and holds enough powers to aggregate `rp`'s
/// partition proofs (a no-op for interactive proofs). The file is four vectors (g^α^i, g^β^i in
/// G1, h^α^i, h^β^i in G2), each a big-endian u32 count and compressed points; filecoin-proofs
/// reads at most 32769 of each and needs twice the aggregated proof count.
pub fn check_srs(rp: RegisteredSealProof) -> Result<()> {
    if !is_non_interactive(rp) {
        return Ok(());
    }
    let path = srs_path();
    let need = 2 * aggregated_count(usize::from(rp.as_v1_config().partitions));
    check_srs_file(&path, need).map_err(|reason| Error::params(&path, reason))
}

fn check_srs_file(path: &std::path::Path, need: usize) -> std::result::Result<(), String> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("missing SnarkPack SRS, needed to aggregate non-interactive PoRep proofs: fetch it with the official \
                 parameters (`paramfetch` with srs-inner-product.json), or run `cuzk params ensure` for a test one"
                .into())
        }
        Err(e) => return Err(format!("cannot open the SnarkPack SRS: {e}")),
    };
    let size = f.metadata().map_err(|e| format!("cannot read the SnarkPack SRS: {e}"))?.len();
    let mut at = 0u64;
    let mut usable = Vec::with_capacity(4);
    for point in [G1, G1, G2, G2] {
        let mut len = [0u8; 4];
        f.seek(SeekFrom::Start(at))
            .and_then(|_| f.read_exact(&mut len))
            .map_err(|_| format!("damaged SnarkPack SRS: cut off at byte {at}"))?;
        let n = u32::from_be_bytes(len) as usize;
        if n > SRS_MAX {
            return Err(format!("damaged SnarkPack SRS: a vector of {n} points (at most {SRS_MAX})"));
        }
        at += 4 + (n * point) as u64;
        usable.push(n.min(SRS_READ_MAX));
    }
    if at != size {
        return Err(format!("damaged SnarkPack SRS: {size} bytes, its vectors take {at}"));
    }
    if usable.iter().any(|n| *n != usable[0]) {
        return Err(format!("damaged SnarkPack SRS: vectors of unequal lengths {usable:?}"));
    }
    if usable[0] < need {
        return Err(format!("SnarkPack SRS too small: {} powers, {need} needed to aggregate this proof", usable[0]));
    }
    Ok(())
}

/// The proof the chain takes for the partition proofs `partition_proofs` (192 bytes each, in
/// partition order) of `c1`: filecoin-proofs' SnarkPack V2 aggregate, exactly as its
/// `seal_commit_phase2` makes it for a non-interactive PoRep.
pub fn aggregate(c1: &C1, partition_proofs: &[u8]) -> Result<Vec<u8>> {
    let rp = c1.registered_proof;
    let partitions = usize::from(c1.porep_config().partitions);
    if partition_proofs.len() != partitions * PARTITION_PROOF_BYTES {
        return Err(Error::Proving(format!(
            "{} bytes of partition proofs for {partitions} partitions of {PARTITION_PROOF_BYTES} bytes",
            partition_proofs.len()
        )));
    }
    check_srs(rp)?;
    let out = SealCommitPhase2Output { proof: partition_proofs.to_vec() };
    seal::aggregate_seal_commit_proofs(rp, RegisteredAggregationProof::SnarkPackV2, &[c1.comm_r], &[c1.seed], &[out])
        .map_err(|e| Error::Filecoin(format!("aggregating the partition proofs (SnarkPack): {e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_lengths() {
        assert_eq!(aggregated_count(1), 2);
        assert_eq!(aggregated_count(13), 16);
        assert_eq!(aggregated_count(126), 128);
        assert_eq!(aggregate_len(13), aggregate_len(16));
        assert_eq!(aggregate_len(13), 14164, "the length of the 2 KiB aggregate filecoin-proofs wrote in tests/porep_variants.rs");
        assert_eq!(aggregate_len(16) - aggregate_len(8), 10 * GT + 2 * G1);
        let mut p = vec![0u8; aggregate_len(13)];
        assert!(aggregate_shape_error(&p, 13).unwrap().contains("holds 0 proofs"));
        p[COUNT_AT..COUNT_AT + 4].copy_from_slice(&16u32.to_le_bytes());
        assert_eq!(aggregate_shape_error(&p, 13), None);
        assert!(aggregate_shape_error(&p[1..], 13).unwrap().contains("bytes"));
    }

    #[test]
    fn srs_files_are_checked_by_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("srs");
        assert!(check_srs_file(&path, 4).unwrap_err().contains("missing"));
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        let srs = bellperson::groth16::aggregate::setup_fake_srs::<blstrs::Bls12, _>(&mut rng, 4);
        let mut bytes = Vec::new();
        srs.write(&mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        check_srs_file(&path, 8).unwrap();
        assert!(check_srs_file(&path, 16).unwrap_err().contains("too small"));
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(check_srs_file(&path, 8).unwrap_err().contains("damaged"));
        std::fs::write(&path, &bytes[..3]).unwrap();
        assert!(check_srs_file(&path, 8).unwrap_err().contains("cut off"));
    }
}
