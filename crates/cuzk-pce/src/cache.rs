//! The on-disk PCE cache. A file is a fixed header — magic, format version, the SHA-256 of
//! the circuit identity (everything the topology depends on, as its proof kind states it), the
//! payload length and the payload's SHA-256 — followed by the zstd-compressed bincode of the
//! [`PreCompiledCircuit`]. Files are written to a temporary file and renamed, under a lock
//! file, so two processes building at once leave one valid file. On load the header is
//! checked against the file's size first; the payload is then read (no mapping, so a file
//! truncated underneath the reader is `Truncated`, never a SIGBUS), hashed and decompressed as
//! it streams, into exactly the size its zstd frame header claims, which must be within
//! [`MAX_DECODED_BYTES`] and [`MAX_RATIO`] times the payload (a zip bomb is refused before any
//! decompression). A foreign, stale, truncated, oversized or corrupt file (and one whose
//! contents are inconsistent) is reported in one log line and rebuilt.

use std::path::{Path, PathBuf};
use std::time::Instant;

use fs2::FileExt;
use sha2::{Digest, Sha256};

use crate::matrix::{CsrMatrix, PreCompiledCircuit};
use crate::{PceError, Result};

/// The first 8 bytes of every cache file; a file that does not start with them is
/// [`Reject::Foreign`].
pub const MAGIC: &[u8; 8] = b"CUZKPCE\x01";
/// The layout version written after [`MAGIC`] (little-endian `u32`); a file of another
/// version is [`Reject::Version`] and is rebuilt.
pub const FORMAT_VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 32 + 8 + 32;

/// Why a cache file was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reject {
    /// The file could not be opened (normally: it does not exist yet).
    Missing,
    /// The file does not start with [`MAGIC`]: not a cuzk PCE cache.
    Foreign,
    /// The file's format version (carried), which is not [`FORMAT_VERSION`].
    Version(u32),
    /// The file was built for another circuit identity (its identity hash differs).
    Stale,
    /// The file is shorter or longer than its header says, or ran out while being read.
    Truncated {
        /// The file's size in bytes, or, when the payload ran out while being read, the header
        /// plus the payload bytes read.
        have: u64,
        /// The size in bytes the header implies (the header alone when even that is incomplete).
        want: u64,
    },
    /// The payload's SHA-256 differs from the one in the header.
    Checksum,
    /// The payload claims to decompress to more than the bounds allow (a zip bomb).
    Oversized {
        /// The decompressed size in bytes the zstd frame header claims.
        claimed: u64,
        /// The most bytes allowed: [`MAX_DECODED_BYTES`], or [`MAX_RATIO`] times the payload
        /// length if smaller (`usize::MAX` when `claimed` does not fit in a `usize`).
        limit: u64,
    },
    /// The file could not be read, decompressed or decoded, or its decoded contents are
    /// inconsistent (see [`validate`]); the message says which.
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
            Reject::Oversized { claimed, limit } => {
                write!(f, "the payload claims {claimed} bytes decompressed, over the limit of {limit} (refused before decompressing)")
            }
            Reject::Corrupt(why) => write!(f, "corrupt contents: {why}"),
        }
    }
}

/// What `load_or_build` did.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A valid cache file was used.
    Loaded {
        /// Wall-clock seconds from the call to the loaded PCE (including any wait for another
        /// process's build under the lock).
        seconds: f64,
        /// Size in bytes of the cache file.
        file_bytes: u64,
    },
    /// The PCE was built and stored.
    Built {
        /// Wall-clock seconds spent building the PCE and writing its file.
        seconds: f64,
        /// Size in bytes of the file written.
        file_bytes: u64,
        /// Why no cache file was used ([`Reject::Missing`] when there was none).
        reason: Reject,
    },
}

/// Hash of a circuit identity string.
pub fn identity_hash(identity: &str) -> [u8; 32] {
    Sha256::digest(identity.as_bytes()).into()
}

/// Most bytes a cache payload may decompress to: the 32 GiB PoRep partition's PCE is
/// 5.5 GiB in memory, so 64 GiB leaves room for larger circuits and none for a zip bomb.
pub const MAX_DECODED_BYTES: u64 = 64 << 30;
/// Most decompressed bytes per compressed byte: real PCEs compress about 3:1; zstd can reach
/// over 30 000:1 on a crafted frame.
pub const MAX_RATIO: u64 = 256;

/// An open cache file whose header was checked (magic, version, identity, and the file's size
/// against the payload length it declares): [`load`] in two steps, so that a caller (or a
/// test) can hold the file between the check and the read.
#[derive(Debug)]
pub struct CacheFile {
    file: std::fs::File,
    len: u64,
    checksum: [u8; 32],
}

impl CacheFile {
    /// Opens `path` and checks its header for `identity`; nothing of the payload is read.
    pub fn open(path: &Path, identity: &str) -> std::result::Result<CacheFile, Reject> {
        let Ok(mut file) = std::fs::File::open(path) else {
            return Err(Reject::Missing);
        };
        let have = file.metadata().map_err(|e| Reject::Corrupt(e.to_string()))?.len();
        let mut header = [0u8; HEADER];
        let got = read_up_to(&mut file, &mut header).map_err(|e| Reject::Corrupt(e.to_string()))?;
        let header = &header[..got];
        if header.len() < 8 || &header[..8] != MAGIC {
            return Err(if header.len() < 8 && MAGIC.starts_with(header) {
                Reject::Truncated { have, want: HEADER as u64 }
            } else {
                Reject::Foreign
            });
        }
        if header.len() < HEADER {
            return Err(Reject::Truncated { have, want: HEADER as u64 });
        }
        let version = u32::from_le_bytes(header[8..12].try_into().unwrap());
        if version != FORMAT_VERSION {
            return Err(Reject::Version(version));
        }
        if header[12..44] != identity_hash(identity) {
            return Err(Reject::Stale);
        }
        let len = u64::from_le_bytes(header[44..52].try_into().unwrap());
        let want = (HEADER as u64).saturating_add(len);
        if have != want {
            return Err(Reject::Truncated { have, want });
        }
        Ok(CacheFile { file, len, checksum: header[52..84].try_into().unwrap() })
    }

    /// Reads the payload (owned reads, no mapping: a file truncated since [`CacheFile::open`]
    /// is `Truncated`, never a SIGBUS), checking its checksum, decompressing it within the
    /// size its zstd frame header claims (bounded by [`MAX_DECODED_BYTES`] and
    /// [`MAX_RATIO`]), and decoding and validating the PCE.
    pub fn read(mut self) -> std::result::Result<PreCompiledCircuit, Reject> {
        let claimed = self.claimed_size()?;
        let source = Hashing { inner: std::io::Read::take(&mut self.file, self.len), hasher: Sha256::new(), read: 0 };
        let mut decoder = zstd::stream::read::Decoder::new(source).map_err(|e| Reject::Corrupt(e.to_string()))?;
        let decoded = read_exactly(&mut decoder, claimed);
        // The rest of the payload (zstd may stop before its end) goes through the checksum too.
        let mut source = decoder.finish();
        let drained = std::io::copy(&mut source, &mut std::io::sink());
        let source = source.into_inner();
        if source.read < self.len {
            return Err(Reject::Truncated { have: HEADER as u64 + source.read, want: HEADER as u64 + self.len });
        }
        drained.map_err(|e| Reject::Corrupt(e.to_string()))?;
        if <[u8; 32]>::from(source.hasher.finalize()) != self.checksum {
            return Err(Reject::Checksum);
        }
        let raw = decoded?;
        let pce: PreCompiledCircuit = bincode::deserialize(&raw).map_err(|e| Reject::Corrupt(e.to_string()))?;
        drop(raw);
        validate(&pce).map_err(Reject::Corrupt)?;
        Ok(pce)
    }

    /// The decompressed size the payload's zstd frame header claims, refused when absent or
    /// over the bounds.
    fn claimed_size(&self) -> std::result::Result<u64, Reject> {
        use std::os::unix::fs::FileExt;
        let mut head = [0u8; 18];
        let n = (self.len as usize).min(head.len());
        if self.file.read_exact_at(&mut head[..n], HEADER as u64).is_err() {
            let have = self.file.metadata().map_or(0, |m| m.len());
            return Err(Reject::Truncated { have, want: HEADER as u64 + self.len });
        }
        let claimed = match zstd::zstd_safe::get_frame_content_size(&head[..n]) {
            Ok(Some(c)) => c,
            Ok(None) => return Err(Reject::Corrupt("the zstd frame header does not state the decompressed size".into())),
            Err(_) => return Err(Reject::Corrupt("the payload does not start with a zstd frame header".into())),
        };
        let limit = MAX_DECODED_BYTES.min(self.len.saturating_mul(MAX_RATIO));
        if claimed > limit {
            return Err(Reject::Oversized { claimed, limit });
        }
        Ok(claimed)
    }
}

/// Fills `buf` as far as the file goes; the byte count.
fn read_up_to(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// Exactly `claimed` decompressed bytes, and not one more.
fn read_exactly(decoder: &mut impl std::io::Read, claimed: u64) -> std::result::Result<Vec<u8>, Reject> {
    let size = usize::try_from(claimed).map_err(|_| Reject::Oversized { claimed, limit: usize::MAX as u64 })?;
    let mut raw = vec![0u8; size];
    decoder.read_exact(&mut raw).map_err(|e| Reject::Corrupt(format!("decompressing {claimed} claimed bytes: {e}")))?;
    let mut extra = [0u8; 1];
    match decoder.read(&mut extra) {
        Ok(0) => Ok(raw),
        Ok(_) => Err(Reject::Corrupt(format!("the payload decompresses to more than the {claimed} bytes its frame header claims"))),
        Err(e) => Err(Reject::Corrupt(format!("decompressing: {e}"))),
    }
}

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    read: u64,
}

impl<R: std::io::Read> std::io::Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

/// Tries to load `path` for `identity` ([`CacheFile::open`] then [`CacheFile::read`]).
pub fn load(path: &Path, identity: &str) -> std::result::Result<PreCompiledCircuit, Reject> {
    CacheFile::open(path, identity)?.read()
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

/// Writes `pce` to `path` atomically. Returns the file size. A PCE whose matrices were
/// released on the host is refused: it has nothing to store.
pub fn store(path: &Path, identity: &str, pce: &PreCompiledCircuit) -> Result<u64> {
    if pce.entries_released {
        return Err(cuzk_core::Error::Invalid(format!("not caching {}: its matrices were released on the host", path.display())).into());
    }
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
