//! The on-disk PCE cache. A file is a fixed header — magic, format version, the SHA-256 of
//! the circuit identity (everything the topology depends on, as its proof kind states it), the
//! payload length and the payload's SHA-256 — followed by the zstd-compressed bincode of the
//! [`PreCompiledCircuit`]. Files are written to a temporary file and renamed, under a lock
//! file, so two processes building at once leave one valid file. On load the file is mapped
//! with memmap2 and streamed through the decoder; a foreign, stale, truncated or corrupt file
//! (and one whose contents are inconsistent) is reported in one log line and rebuilt.

use std::path::{Path, PathBuf};
use std::time::Instant;

use fs2::FileExt;
use sha2::{Digest, Sha256};

use crate::matrix::{CsrMatrix, PreCompiledCircuit};
use crate::{PceError, Result};

pub const MAGIC: &[u8; 8] = b"CUZKPCE\x01";
pub const FORMAT_VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 32 + 8 + 32;

/// Why a cache file was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reject {
    Missing,
    Foreign,
    Version(u32),
    Stale,
    Truncated { have: u64, want: u64 },
    Checksum,
    Corrupt(String),
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reject::Missing => write!(f, "no cache file"),
            Reject::Foreign => write!(f, "not a cuzk PCE file (bad magic)"),
            Reject::Version(v) => write!(f, "format version {v}, expected {FORMAT_VERSION}"),
            Reject::Stale => write!(f, "built for another circuit identity (stale)"),
            Reject::Truncated { have, want } => write!(f, "truncated: {have} bytes, header says {want}"),
            Reject::Checksum => write!(f, "checksum mismatch (corrupt)"),
            Reject::Corrupt(why) => write!(f, "corrupt contents: {why}"),
        }
    }
}

/// What `load_or_build` did.
#[derive(Clone, Debug)]
pub enum Outcome {
    Loaded { seconds: f64, file_bytes: u64 },
    Built { seconds: f64, file_bytes: u64, reason: Reject },
}

/// Hash of a circuit identity string.
pub fn identity_hash(identity: &str) -> [u8; 32] {
    Sha256::digest(identity.as_bytes()).into()
}

/// Tries to load `path` for `identity`.
pub fn load(path: &Path, identity: &str) -> std::result::Result<PreCompiledCircuit, Reject> {
    let Ok(file) = std::fs::File::open(path) else {
        return Err(Reject::Missing);
    };
    // SAFETY: read-only map; a concurrent writer only ever renames a complete new file over
    // this path, which leaves our mapping of the old inode intact.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Reject::Corrupt(e.to_string()))?;
    let have = map.len() as u64;
    if map.len() < 8 || &map[..8] != MAGIC {
        return Err(if map.len() < 8 && MAGIC.starts_with(&map[..]) {
            Reject::Truncated { have, want: HEADER as u64 }
        } else {
            Reject::Foreign
        });
    }
    if map.len() < HEADER {
        return Err(Reject::Truncated { have, want: HEADER as u64 });
    }
    let version = u32::from_le_bytes(map[8..12].try_into().unwrap());
    if version != FORMAT_VERSION {
        return Err(Reject::Version(version));
    }
    if map[12..44] != identity_hash(identity) {
        return Err(Reject::Stale);
    }
    let len = u64::from_le_bytes(map[44..52].try_into().unwrap());
    let want = HEADER as u64 + len;
    if have != want {
        return Err(Reject::Truncated { have, want });
    }
    let payload = &map[HEADER..];
    let sum: [u8; 32] = Sha256::digest(payload).into();
    if map[52..84] != sum {
        return Err(Reject::Checksum);
    }
    // Decompressing in one go and decoding from the slice is several times faster than
    // decoding through the streaming reader.
    let raw = zstd::decode_all(payload).map_err(|e| Reject::Corrupt(e.to_string()))?;
    let pce: PreCompiledCircuit = bincode::deserialize(&raw).map_err(|e| Reject::Corrupt(e.to_string()))?;
    drop(raw);
    validate(&pce).map_err(Reject::Corrupt)?;
    Ok(pce)
}

/// Structural consistency, so that a file with a valid checksum but impossible contents can
/// never make evaluation index out of bounds.
pub fn validate(p: &PreCompiledCircuit) -> std::result::Result<(), String> {
    let vars = p.num_inputs + p.num_aux;
    let check = |name: &str, m: &CsrMatrix| -> std::result::Result<(), String> {
        if m.rows() != p.num_constraints {
            return Err(format!("{name} has {} rows, expected {}", m.rows(), p.num_constraints));
        }
        if m.cols.len() != m.coeff_idx.len() || m.row_ptr.first() != Some(&0) || m.row_ptr.last().map(|&x| x as usize) != Some(m.cols.len())
        {
            return Err(format!("{name} row pointers do not match its entries"));
        }
        if m.row_ptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!("{name} row pointers decrease"));
        }
        if m.cols.iter().any(|&c| c as usize >= vars) {
            return Err(format!("{name} has a column past the {vars} variables"));
        }
        if m.coeff_idx.iter().any(|&i| i as usize >= p.coeffs.len()) {
            return Err(format!("{name} has a coefficient index past the table"));
        }
        Ok(())
    };
    check("A", &p.a)?;
    check("B", &p.b)?;
    check("C", &p.c)?;
    let words = |n: usize| n.div_ceil(64);
    if p.coeffs.len() < 2
        || p.a_aux_density.len() != words(p.num_aux)
        || p.b_aux_density.len() != words(p.num_aux)
        || p.b_input_density.len() != words(p.num_inputs)
    {
        return Err("density bitmaps or coefficient table have the wrong size".into());
    }
    Ok(())
}

/// Writes `pce` to `path` atomically. Returns the file size.
pub fn store(path: &Path, identity: &str, pce: &PreCompiledCircuit) -> Result<u64> {
    let raw = bincode::serialize(pce).map_err(|e| PceError::Synthesis(format!("encoding PCE: {e}")))?;
    let payload = zstd::bulk::compress(&raw, 3).map_err(|e| cuzk_core::Error::io(path, e))?;
    drop(raw);
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.extend_from_slice(&identity_hash(identity));
    header.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    header.extend_from_slice(&Sha256::digest(&payload));
    cuzk_core::atomic::write_atomically(path, |w: &mut dyn std::io::Write| {
        w.write_all(&header)?;
        w.write_all(&payload)
    })?;
    Ok((HEADER + payload.len()) as u64)
}

fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Loads the cache at `path`, or builds it with `build` and stores it (under a lock, so
/// concurrent processes build once).
pub fn load_or_build(
    path: &Path,
    identity: &str,
    build: impl FnOnce() -> Result<PreCompiledCircuit>,
) -> Result<(PreCompiledCircuit, Outcome)> {
    let t = Instant::now();
    let first = match load(path, identity) {
        Ok(p) => {
            let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            return Ok((p, Outcome::Loaded { seconds: t.elapsed().as_secs_f64(), file_bytes }));
        }
        Err(r) => r,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| cuzk_core::Error::io(dir, e))?;
    }
    let lp = lock_path(path);
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lp).map_err(|e| cuzk_core::Error::io(&lp, e))?;
    lock.lock_exclusive().map_err(|e| cuzk_core::Error::io(&lp, e))?;
    // Someone may have built it while we waited.
    let reason = match load(path, identity) {
        Ok(p) => {
            let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            return Ok((p, Outcome::Loaded { seconds: t.elapsed().as_secs_f64(), file_bytes }));
        }
        Err(Reject::Missing) => first,
        Err(r) => r,
    };
    if reason != Reject::Missing {
        tracing::warn!(path = %path.display(), "PCE cache unusable ({reason}); rebuilding");
    }
    let t = Instant::now();
    let pce = build()?;
    let file_bytes = store(path, identity, &pce)?;
    drop(lock);
    Ok((pce, Outcome::Built { seconds: t.elapsed().as_secs_f64(), file_bytes, reason }))
}
