//! cuzk's SRS map file: a circuit's Groth16 parameters decoded once, written in the host's
//! in-memory point layout, and mapped read-only by every later load, so that a process holds
//! no decoded copy in anonymous memory (the points sit in the page cache, which the kernel may
//! drop and read again) and a restart decodes nothing. The file is made from a `.params` file
//! section by section in bounded pieces (every point checked on the curve, as the loader
//! does), written through a temp file and a rename; it records the parameter file's verifying
//! key bytes and point counts, which must match the `.params` file at every open, and a
//! checksum per section, verified at every open. A map that is foreign, truncated, corrupt or
//! stale (the `.params` file changed) is rebuilt by [`open_or_build`]. The map is only ever
//! replaced by rename, never written in place; a tool that truncates it in place while a
//! process has it mapped kills that process (SIGBUS), as with any mapped file. It knows
//! nothing of circuits or of where files live.

use std::fs::File;
use std::path::Path;

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G2Affine};
use rayon::prelude::*;

use crate::params::{G1Section, ParamsFile, ParamsLayout};
use crate::srs::SrsRef;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"CUZKSRS1";
const TRAILER_MAGIC: &[u8; 8] = b"CUZKSEND";
const VERSION: u64 = 1;
/// Sections start on page boundaries, so every slice is aligned for its point type.
const PAGE: usize = 4096;
/// Points per checksum piece (a section's checksum is the checksum of its pieces' checksums).
const HASH_POINTS: usize = 1 << 15;
/// Points decoded per piece while building (a multiple of `HASH_POINTS`).
const BUILD_POINTS: usize = if cfg!(test) { HASH_POINTS } else { 1 << 20 };
const G1_SIZE: usize = std::mem::size_of::<G1Affine>();
const G2_SIZE: usize = std::mem::size_of::<G2Affine>();
const _: () = assert!(G1_SIZE == 96 && G2_SIZE == 192 && PAGE % std::mem::align_of::<G2Affine>() == 0);

/// The sections in file order: h, l, a, b_g1 (G1), b_g2 (G2).
const SECTIONS: usize = 5;
/// The G1 sections, in file order.
const G1_SECTIONS: [G1Section; 4] = [G1Section::H, G1Section::L, G1Section::A, G1Section::BG1];

/// Header fields, each a little-endian u64 after the magic.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Header {
    counts: [u64; SECTIONS],
    ic: u64,
    vk_bytes: u64,
    vk_at: u64,
    at: [u64; SECTIONS],
    trailer_at: u64,
}

impl Header {
    fn for_layout(lay: &ParamsLayout) -> Header {
        let counts = [lay.h, lay.l, lay.a, lay.b_g1, lay.b_g2].map(|n| n as u64);
        let vk_at = PAGE as u64;
        let mut at = [0u64; SECTIONS];
        let mut pos = round_up(vk_at + lay.vk_bytes as u64);
        for (i, n) in counts.iter().enumerate() {
            at[i] = pos;
            pos = round_up(pos + n * point_size(i) as u64);
        }
        Header { counts, ic: lay.ic as u64, vk_bytes: lay.vk_bytes as u64, vk_at, at, trailer_at: pos }
    }

    fn words(&self) -> Vec<u64> {
        let mut w = vec![VERSION, G1_SIZE as u64, G2_SIZE as u64, self.ic, self.vk_bytes, self.vk_at, self.trailer_at];
        w.extend(self.counts);
        w.extend(self.at);
        w
    }

    fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; PAGE];
        b[..8].copy_from_slice(MAGIC);
        let words = self.words();
        for (i, w) in words.iter().enumerate() {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&w.to_le_bytes());
        }
        let end = 8 + 8 * words.len();
        let sum = checksum(&b[..end]);
        b[end..end + 8].copy_from_slice(&sum.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> std::result::Result<Header, String> {
        if b.len() < PAGE || &b[..8] != MAGIC {
            return Err("not a cuzk SRS map (no magic)".into());
        }
        let word = |i: usize| u64::from_le_bytes(b[8 + 8 * i..16 + 8 * i].try_into().unwrap());
        let n = 7 + 2 * SECTIONS;
        let end = 8 + 8 * n;
        if u64::from_le_bytes(b[end..end + 8].try_into().unwrap()) != checksum(&b[..end]) {
            return Err("header checksum mismatch".into());
        }
        if (word(0), word(1), word(2)) != (VERSION, G1_SIZE as u64, G2_SIZE as u64) {
            return Err(format!(
                "version {} with point sizes {}/{}; this build writes {VERSION} with {G1_SIZE}/{G2_SIZE}",
                word(0),
                word(1),
                word(2)
            ));
        }
        let mut h =
            Header { counts: [0; SECTIONS], ic: word(3), vk_bytes: word(4), vk_at: word(5), at: [0; SECTIONS], trailer_at: word(6) };
        for i in 0..SECTIONS {
            h.counts[i] = word(7 + i);
            h.at[i] = word(7 + SECTIONS + i);
        }
        Ok(h)
    }
}

fn round_up(x: u64) -> u64 {
    x.div_ceil(PAGE as u64) * PAGE as u64
}

fn point_size(section: usize) -> usize {
    if section == SECTIONS - 1 {
        G2_SIZE
    } else {
        G1_SIZE
    }
}

/// A 64-bit checksum of `bytes` (not cryptographic: it catches corruption and truncation,
/// not forgery — the map is the operator's own file).
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x243F_6A88_85A3_08D3 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h.rotate_left(23) ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    for &b in words.remainder() {
        h = (h.rotate_left(23) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    h ^ (h >> 29)
}

/// The checksums of each `HASH_POINTS` piece of `bytes` (points of `point` bytes), hashed in
/// parallel, as little-endian bytes in order.
fn piece_sums(bytes: &[u8], point: usize) -> Vec<u8> {
    bytes.par_chunks(HASH_POINTS * point).flat_map_iter(|c| checksum(c).to_le_bytes()).collect()
}

/// The checksum of a section's bytes: the checksum of its pieces' checksums. `build`
/// computes the same, piece by piece as it writes (its pieces are whole `HASH_POINTS` pieces).
fn section_checksum(bytes: &[u8], point: usize) -> u64 {
    checksum(&piece_sums(bytes, point))
}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: points are plain data (blst's affine coordinates, no padding: the sizes are
    // asserted above); reading their bytes is reading initialised memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Writes the SRS map of the `.params` file at `params` to `dest` (temp file + rename), one
/// bounded piece of points at a time; returns the parameter file's layout.
pub fn build(params: &Path, dest: &Path) -> Result<ParamsLayout> {
    let pf = ParamsFile::open(params)?;
    let lay = pf.layout().clone();
    let header = Header::for_layout(&lay);
    let vk = pf.vk_bytes()?;
    let mut failure: Option<Error> = None;
    let wrote = crate::atomic::write_atomically(dest, |w| {
        let mut pos = 0u64;
        let put = |w: &mut dyn std::io::Write, bytes: &[u8], pos: &mut u64| -> std::io::Result<()> {
            w.write_all(bytes)?;
            *pos += bytes.len() as u64;
            Ok(())
        };
        let pad_to = |w: &mut dyn std::io::Write, pos: &mut u64, to: u64| -> std::io::Result<()> {
            let zeros = vec![0u8; (to - *pos) as usize];
            w.write_all(&zeros)?;
            *pos = to;
            Ok(())
        };
        put(w, &header.encode(), &mut pos)?;
        put(w, &vk, &mut pos)?;
        // A decoding error aborts the write; it is kept to be returned as it is.
        let mut keep = |e: Error| {
            let msg = e.to_string();
            failure = Some(e);
            std::io::Error::other(msg)
        };
        let mut sums = [0u64; SECTIONS];
        for (i, sum) in sums.iter_mut().enumerate() {
            pad_to(w, &mut pos, header.at[i])?;
            let n = header.counts[i] as usize;
            let mut pieces = Vec::new();
            for first in (0..n).step_by(BUILD_POINTS) {
                let k = BUILD_POINTS.min(n - first);
                let mut write = |bytes: &[u8]| {
                    pieces.extend(piece_sums(bytes, point_size(i)));
                    put(w, bytes, &mut pos)
                };
                match i {
                    4 => write(as_bytes(&pf.b_g2_points(first, k).map_err(&mut keep)?))?,
                    _ => write(as_bytes(&pf.g1_points(G1_SECTIONS[i], first, k).map_err(&mut keep)?))?,
                }
            }
            *sum = checksum(&pieces);
        }
        pad_to(w, &mut pos, header.trailer_at)?;
        put(w, &trailer(&sums), &mut pos)
    });
    match (wrote, failure) {
        (_, Some(e)) | (Err(e), None) => Err(e),
        (Ok(()), None) => Ok(lay),
    }
}

fn trailer(sums: &[u64; SECTIONS]) -> Vec<u8> {
    let mut b = vec![0u8; PAGE];
    b[..8].copy_from_slice(TRAILER_MAGIC);
    for (i, s) in sums.iter().enumerate() {
        b[8 + 8 * i..16 + 8 * i].copy_from_slice(&s.to_le_bytes());
    }
    let end = 8 + 8 * SECTIONS;
    let sum = checksum(&b[..end]);
    b[end..end + 8].copy_from_slice(&sum.to_le_bytes());
    b
}

/// A read-only private mapping of a whole file, unmapped on drop.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only for its whole life; sharing immutable bytes is sound.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    fn of(file: &File, path: &Path) -> Result<Mapping> {
        use std::os::unix::io::AsRawFd;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len() as usize;
        if len < 2 * PAGE {
            return Err(Error::params(path, format!("{len} bytes: too short for a cuzk SRS map")));
        }
        // SAFETY: a fresh read-only private mapping of a file we opened; checked below.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(Error::io(path, std::io::Error::last_os_error()));
        }
        Ok(Mapping { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes are mapped readable at `ptr` until drop.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `of` mapped; no slice of it outlives `self` (they
        // borrow the `MappedSrs` that owns it).
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// One circuit's parameters, mapped from an SRS map file.
pub struct MappedSrs {
    map: Mapping,
    header: Header,
    vk: VerifyingKey<Bls12>,
}

/// Why an SRS map file cannot be used.
enum Unusable {
    /// The map is foreign, truncated, corrupt or made from other parameters: rebuild it.
    Stale(String),
    /// The parameter file itself is the problem (missing, truncated): report it.
    Params(Error),
}

impl MappedSrs {
    /// Maps `path`, checking it against the `.params` file at `params` (point counts and
    /// verifying key bytes) and every section's checksum.
    pub fn open(path: &Path, params: &Path) -> Result<MappedSrs> {
        Self::open_checked(path, params, Sections::Verify)
    }

    fn open_checked(path: &Path, params: &Path, sections: Sections) -> Result<MappedSrs> {
        Self::try_open(path, params, sections).map_err(|u| match u {
            Unusable::Stale(why) => Error::params(path, why),
            Unusable::Params(e) => e,
        })
    }

    fn try_open(path: &Path, params: &Path, sections: Sections) -> std::result::Result<MappedSrs, Unusable> {
        let pf = ParamsFile::open(params).map_err(Unusable::Params)?;
        let file = File::open(path).map_err(|e| Unusable::Stale(format!("cannot open: {e}")))?;
        let map = Mapping::of(&file, path).map_err(|e| Unusable::Stale(e.to_string()))?;
        let b = map.bytes();
        let header = Header::decode(b).map_err(Unusable::Stale)?;
        if header != Header::for_layout(pf.layout()) {
            return Err(Unusable::Stale(format!("made for other parameters than {} (point counts differ)", params.display())));
        }
        if b.len() as u64 != header.trailer_at + PAGE as u64 {
            return Err(Unusable::Stale(format!("{} bytes where its header implies {}", b.len(), header.trailer_at + PAGE as u64)));
        }
        let vk_bytes = &b[header.vk_at as usize..(header.vk_at + header.vk_bytes) as usize];
        if pf.vk_bytes().map_err(Unusable::Params)? != vk_bytes {
            return Err(Unusable::Stale(format!("made for other parameters than {} (verifying keys differ)", params.display())));
        }
        let t = &b[header.trailer_at as usize..];
        let end = 8 + 8 * SECTIONS;
        if &t[..8] != TRAILER_MAGIC || u64::from_le_bytes(t[end..end + 8].try_into().unwrap()) != checksum(&t[..end]) {
            return Err(Unusable::Stale("trailer missing or corrupt (an interrupted or truncated write)".into()));
        }
        for i in (0..SECTIONS).filter(|_| sections == Sections::Verify) {
            let want = u64::from_le_bytes(t[8 + 8 * i..16 + 8 * i].try_into().unwrap());
            let at = header.at[i] as usize;
            let bytes = &b[at..at + header.counts[i] as usize * point_size(i)];
            if section_checksum(bytes, point_size(i)) != want {
                return Err(Unusable::Stale(format!("section {} fails its checksum (corrupt)", ["h", "l", "a", "b_g1", "b_g2"][i])));
            }
        }
        let vk = VerifyingKey::read(vk_bytes).map_err(|e| Unusable::Stale(format!("bad verifying key: {e}")))?;
        Ok(MappedSrs { map, header, vk })
    }

    /// The borrowed view: slices into the mapping.
    pub fn sections(&self) -> SrsRef<'_> {
        let g1 = |i: usize| -> &[G1Affine] {
            // SAFETY: the section lies inside the mapping (checked against the file size at
            // open), starts on a page boundary (aligned for G1Affine), and holds the bytes of
            // `counts[i]` points this module wrote from decoded, curve-checked points; its
            // checksum was verified at open (or this process had just written it).
            unsafe {
                std::slice::from_raw_parts(self.map.bytes()[self.header.at[i] as usize..].as_ptr().cast(), self.header.counts[i] as usize)
            }
        };
        // SAFETY: as above, for the G2 section.
        let b_g2: &[G2Affine] = unsafe {
            std::slice::from_raw_parts(self.map.bytes()[self.header.at[4] as usize..].as_ptr().cast(), self.header.counts[4] as usize)
        };
        SrsRef { vk: &self.vk, h: g1(0), l: g1(1), a: g1(2), b_g1: g1(3), b_g2 }
    }

    /// Bytes of the map file.
    pub fn file_bytes(&self) -> u64 {
        self.map.len as u64
    }
}

/// What [`open_or_build`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapOutcome {
    /// The map existed and checked.
    Mapped,
    /// There was no map; it was built.
    Built,
    /// The map could not be used (the reason); it was rebuilt.
    Rebuilt(String),
}

/// The SRS map at `path` of the `.params` file at `params`: mapped when it checks, else
/// (missing, foreign, corrupt, stale) built anew from `params` and mapped. Errors of the
/// parameter file itself are returned as they are, and no map is written for it.
pub fn open_or_build(path: &Path, params: &Path) -> Result<(MappedSrs, MapOutcome)> {
    let outcome = match MappedSrs::try_open(path, params, Sections::Verify) {
        Ok(m) => return Ok((m, MapOutcome::Mapped)),
        Err(Unusable::Params(e)) => return Err(e),
        Err(Unusable::Stale(_)) if !path.exists() => MapOutcome::Built,
        Err(Unusable::Stale(why)) => {
            tracing::warn!(map = %path.display(), "SRS map unusable ({why}); rebuilding it from {}", params.display());
            MapOutcome::Rebuilt(why)
        }
    };
    build(params, path)?;
    // Written just now from checked points, with the sums in its trailer computed from the
    // same bytes: hashing every section again would double the first use (~44 GB read at
    // 32 GiB). The header, verifying key and trailer are still checked.
    Ok((MappedSrs::open_checked(path, params, Sections::Trust)?, outcome))
}

/// Whether an open recomputes the section checksums.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sections {
    /// Every section hashed and compared with the trailer (any map found on disk).
    Verify,
    /// Not hashed: the map this process has just written.
    Trust,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{load_params, write_params};
    use bellperson::groth16::Parameters;

    /// `k` points along a random line (start + i * step): cheap, distinct, all on the curve.
    fn line<P: group::Curve + group::Group<Scalar = blstrs::Scalar>>(k: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<P::AffineRepr> {
        use ff::Field;
        let g = P::generator();
        let (mut acc, step) = (g * blstrs::Scalar::random(&mut *rng), g * blstrs::Scalar::random(&mut *rng));
        let v: Vec<P> = (0..k)
            .map(|_| {
                acc += step;
                acc
            })
            .collect();
        let mut out: Vec<P::AffineRepr> = (0..k).map(|_| g.to_affine()).collect();
        P::batch_normalize(&v, &mut out);
        out
    }

    fn random_params(n: usize, seed: u64) -> Parameters<Bls12> {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let g1 = |k: usize, rng: &mut rand_chacha::ChaCha8Rng| line::<blstrs::G1Projective>(k, rng);
        let g2 = |k: usize, rng: &mut rand_chacha::ChaCha8Rng| line::<blstrs::G2Projective>(k, rng);
        let p1 = g1(6, &mut rng);
        let p2 = g2(3, &mut rng);
        let vk = VerifyingKey {
            alpha_g1: p1[0],
            beta_g1: p1[1],
            beta_g2: p2[0],
            gamma_g2: p2[1],
            delta_g1: p1[2],
            delta_g2: p2[2],
            ic: g1(3, &mut rng),
        };
        use std::sync::Arc;
        Parameters {
            vk,
            h: Arc::new(g1(n + 1, &mut rng)),
            l: Arc::new(g1(n, &mut rng)),
            a: Arc::new(g1(n + 2, &mut rng)),
            b_g1: Arc::new(g1(n / 2 + 1, &mut rng)),
            b_g2: Arc::new(g2(n / 2 + 1, &mut rng)),
        }
    }

    fn same(a: SrsRef<'_>, b: SrsRef<'_>) -> bool {
        a.vk == b.vk && a.h == b.h && a.l == b.l && a.a == b.a && a.b_g1 == b.b_g1 && a.b_g2 == b.b_g2
    }

    // More points than one build piece, so piece boundaries and checksums over pieces are
    // exercised.
    const N: usize = BUILD_POINTS + 1000;

    #[test]
    fn a_map_holds_exactly_the_decoded_parameters_and_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let (params, map) = (dir.path().join("p.params"), dir.path().join("p.srsmap"));
        write_params(&params, &random_params(N, 1)).unwrap();
        let (decoded, _) = load_params(&params).unwrap();
        let (m, outcome) = open_or_build(&map, &params).unwrap();
        assert_eq!(outcome, MapOutcome::Built);
        assert!(same(m.sections(), (&decoded).into()), "the mapped points differ from the decoded ones");
        assert_eq!(m.sections().point_bytes(), SrsRef::from(&decoded).point_bytes());
        assert_eq!(m.sections().h.as_ptr() as usize % PAGE, 0);
        drop(m);
        let (again, outcome) = open_or_build(&map, &params).unwrap();
        assert_eq!(outcome, MapOutcome::Mapped);
        assert!(same(again.sections(), (&decoded).into()));
    }

    #[test]
    fn corrupt_truncated_or_stale_maps_are_rebuilt_and_bad_params_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (params, map) = (dir.path().join("p.params"), dir.path().join("p.srsmap"));
        write_params(&params, &random_params(N, 2)).unwrap();
        build(&params, &map).unwrap();
        let good = std::fs::read(&map).unwrap();
        let h = Header::decode(&good).unwrap();
        // One flipped bit in the last section; a cut file; a foreign file.
        let mut flipped = good.clone();
        flipped[h.at[4] as usize + 5] ^= 1;
        let cases: [(&str, Vec<u8>, &str); 3] = [
            ("flipped", flipped, "checksum"),
            ("cut", good[..good.len() - 100].to_vec(), "bytes"),
            ("foreign", vec![7u8; 3 * PAGE], "magic"),
        ];
        for (name, bytes, why) in cases {
            std::fs::write(&map, &bytes).unwrap();
            let err = MappedSrs::open(&map, &params).err().expect(name).to_string();
            assert!(err.contains(why), "{name}: {err}");
            let (m, outcome) = open_or_build(&map, &params).unwrap();
            assert!(matches!(outcome, MapOutcome::Rebuilt(ref r) if r.contains(why)), "{name}: {outcome:?}");
            assert!(std::fs::read(&map).unwrap() == good, "{name}: the rebuilt map is the original");
            drop(m);
        }
        // The parameters changed under the map (same counts, other points): stale, rebuilt.
        write_params(&params, &random_params(N, 3)).unwrap();
        let err = MappedSrs::open(&map, &params).err().unwrap().to_string();
        assert!(err.contains("verifying keys differ"), "{err}");
        let (m, outcome) = open_or_build(&map, &params).unwrap();
        assert!(matches!(outcome, MapOutcome::Rebuilt(_)));
        assert!(same(m.sections(), (&load_params(&params).unwrap().0).into()));
        // A truncated parameter file is its own error; the map is left alone.
        let before = std::fs::read(&map).unwrap();
        let bytes = std::fs::read(&params).unwrap();
        std::fs::write(&params, &bytes[..bytes.len() - 10]).unwrap();
        let err = open_or_build(&map, &params).err().unwrap().to_string();
        assert!(err.contains("p.params") && err.contains("truncated"), "{err}");
        assert!(std::fs::read(&map).unwrap() == before, "the map must be left alone");
    }

    #[test]
    fn a_bad_point_in_the_params_file_fails_the_build_and_writes_no_map() {
        let dir = tempfile::tempdir().unwrap();
        let (params, map) = (dir.path().join("p.params"), dir.path().join("p.srsmap"));
        write_params(&params, &random_params(N, 4)).unwrap();
        let mut bytes = std::fs::read(&params).unwrap();
        let n = bytes.len();
        bytes[n - 100] ^= 0x55; // inside the last b_g2 point
        std::fs::write(&params, &bytes).unwrap();
        let err = build(&params, &map).err().unwrap().to_string();
        assert!(err.contains("b_g2 point"), "{err}");
        assert!(!map.exists(), "no map may be left after a failed build");
        assert!(crate::atomic::temp_files(&map).is_empty(), "no temp file may be left");
    }
}
