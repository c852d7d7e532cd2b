//! Hostile PCE cache files: a file truncated underneath the reader (after its header and size
//! were checked) is rejected as truncated, not a SIGBUS; a zip-bomb payload (a valid header
//! and checksum over a frame that claims far more than the bounds) is refused before it is
//! decompressed, without the memory it claims; a frame that hides more data than its header
//! claims, or states no size, is refused; `load_or_build` rebuilds over each of them.

use std::io::Write;
use std::path::Path;

use cuzk_core::testing::RandomCircuit;
use cuzk_pce::cache::{self, CacheFile, Outcome, Reject, MAGIC};
use cuzk_pce::{extract, PreCompiledCircuit};
use sha2::{Digest, Sha256};

const HEADER: usize = 8 + 4 + 32 + 8 + 32;

fn sample() -> PreCompiledCircuit {
    extract(RandomCircuit::new(9, 200, 400)).unwrap()
}

/// A cache file for `identity` around `payload`, with a correct header and checksum.
fn sealed(identity: &str, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER + payload.len());
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&cache::FORMAT_VERSION.to_le_bytes());
    b.extend_from_slice(&cache::identity_hash(identity));
    b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    b.extend_from_slice(&Sha256::digest(payload));
    b.extend_from_slice(payload);
    b
}

/// `zeros` zero bytes through zstd's streaming encoder (never all in memory), with the size
/// in the frame header when `pledge`.
fn zstd_zeros(zeros: u64, pledge: bool) -> Vec<u8> {
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    if pledge {
        e.include_contentsize(true).unwrap();
        e.set_pledged_src_size(Some(zeros)).unwrap();
    }
    let block = vec![0u8; 1 << 20];
    let mut left = zeros;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        e.write_all(&block[..n]).unwrap();
        left -= n as u64;
    }
    e.finish().unwrap()
}

fn rebuilt(path: &Path, identity: &str) {
    let (p, outcome) = cache::load_or_build(path, identity, || Ok(sample())).unwrap();
    assert!(p == sample());
    assert!(matches!(outcome, Outcome::Built { .. }), "{outcome:?}");
    assert!(cache::load(path, identity).unwrap() == sample(), "the rebuilt file loads");
}

#[test]
fn a_cache_file_truncated_underneath_the_reader_is_rejected_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pce");
    let full_len = cache::store(&path, "id", &sample()).unwrap();
    let full = std::fs::read(&path).unwrap();
    assert!(full_len > 2 * 4096, "the payload must span several pages ({full_len} bytes)");
    for cut in [0, HEADER as u64, HEADER as u64 + 10, full_len / 2, full_len - 1] {
        std::fs::write(&path, &full).unwrap();
        let open = CacheFile::open(&path, "id").expect("the whole file passes the header checks");
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(cut).unwrap();
        match open.read() {
            Err(Reject::Truncated { have, want }) => assert_eq!((have, want), (cut, full_len), "cut {cut}"),
            other => panic!("cut {cut}: a file cut underneath the reader must be Truncated, got {:?}", other.map(|_| "a PCE")),
        }
    }
    std::fs::write(&path, &full[..full.len() / 2]).unwrap();
    rebuilt(&path, "id");
}

#[test]
fn a_zip_bomb_payload_is_refused_before_it_is_decompressed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.pce");
    let claimed = 512u64 << 20;
    let payload = zstd_zeros(claimed, true);
    assert!(payload.len() < 64 << 10, "{} bytes", payload.len());
    std::fs::write(&path, sealed("id", &payload)).unwrap();
    let before = cuzk_core::mem::snapshot();
    let r = cache::load(&path, "id").unwrap_err();
    let after = cuzk_core::mem::snapshot();
    match &r {
        Reject::Oversized { claimed: c, limit } => {
            assert_eq!(*c, claimed);
            assert!(*limit <= payload.len() as u64 * cache::MAX_RATIO && *limit <= cache::MAX_DECODED_BYTES);
        }
        other => panic!("a zip bomb must be refused as oversized, got {other}"),
    }
    assert!(r.to_string().contains("refused before decompressing"), "{r}");
    let grew = after.peak_bytes.saturating_sub(before.peak_bytes.max(before.rss_bytes));
    assert!(grew < 64 << 20, "refusing the bomb raised the peak RSS by {grew} bytes");
    rebuilt(&path, "id");
}

#[test]
fn a_frame_that_hides_more_than_it_claims_or_claims_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lie.pce");
    // A first frame claiming 1000 bytes, followed by a second one of 8 MiB: within the ratio
    // bound by the claim, but the decoder must stop at the claim.
    let mut payload = zstd::bulk::compress(&[7u8; 1000], 3).unwrap();
    payload.extend_from_slice(&zstd_zeros(8 << 20, true));
    std::fs::write(&path, sealed("id", &payload)).unwrap();
    match cache::load(&path, "id").unwrap_err() {
        Reject::Corrupt(m) => assert!(m.contains("more than the 1000 bytes"), "{m}"),
        other => panic!("{other}"),
    }
    rebuilt(&path, "id");
    // A frame without its size.
    std::fs::write(&path, sealed("id", &zstd_zeros(1 << 20, false))).unwrap();
    match cache::load(&path, "id").unwrap_err() {
        Reject::Corrupt(m) => assert!(m.contains("does not state the decompressed size"), "{m}"),
        other => panic!("{other}"),
    }
    rebuilt(&path, "id");
}
