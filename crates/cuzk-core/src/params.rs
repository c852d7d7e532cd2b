//! Groth16 parameter files in bellperson's format (the one filecoin-proofs ships): a cheap
//! structural check of `.params` and `.vk` files (every section's declared count against the
//! bytes actually there, so a truncated file is named and rejected before any proving), a
//! parallel loader, and atomic writes ([`crate::atomic`]: temp file + fsync + rename + directory
//! fsync), because filecoin-proofs never regenerates a partially written `.params` file. The
//! loader does not map the file: it checks the size against the headers, then reads each
//! section by positional reads into owned buffers, so a file truncated underneath the loader
//! (by another process) is an error that names it, never a SIGBUS.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

use crate::{Error, Result};

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;
/// alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2.
const VK_FIXED: usize = 3 * G1_BYTES + 3 * G2_BYTES;

/// Point counts of a `.params` file, from its headers.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ParamsLayout {
    /// G1 points of the verifying key's `ic` section (one per public input, ONE included).
    pub ic: usize,
    /// G1 points of the H query (the evaluation domain's size minus one).
    pub h: usize,
    /// G1 points of the L query (one per aux variable).
    pub l: usize,
    /// G1 points of the A query (one per variable that occurs in A).
    pub a: usize,
    /// G1 points of the B query (one per variable that occurs in B).
    pub b_g1: usize,
    /// G2 points of the B query (as many as `b_g1` in a well-formed file).
    pub b_g2: usize,
    /// Bytes of the verifying-key prefix.
    pub vk_bytes: usize,
    /// Total file size implied by the headers (equal to the real size when valid).
    pub file_bytes: usize,
}

/// Reads over the bytes of a `.vk` file (in memory).
struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
}

fn truncated(path: &Path, what: &str, n: u64, at: u64, left: u64) -> Error {
    Error::params(path, format!("truncated: {what} needs {n} bytes at offset {at} but only {left} remain"))
}

impl Cursor<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8]> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(truncated(self.path, what, n as u64, self.pos as u64, left as u64));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn section(&mut self, what: &str, point_bytes: usize) -> Result<(usize, usize)> {
        let c = self.take(4, &format!("the {what} count"))?;
        let n = u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize;
        let start = self.pos;
        self.take(n * point_bytes, &format!("{n} {what} points"))?;
        Ok((n, start))
    }
}

/// `buf.len()` bytes of `file` at `at`, by positional read (no mapping: a file truncated
/// after its size was checked is an error here, never a SIGBUS).
fn read_at(file: &File, path: &Path, buf: &mut [u8], at: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, at).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::params(
            path,
            format!(
                "truncated while loading: the {} bytes at offset {at} are gone (the file shrank after its size was checked)",
                buf.len()
            ),
        ),
        _ => Error::io(path, e),
    })
}

/// Walks the section headers of a `.params` file by positional reads, checking every
/// declared count against the file's size before anything is read.
struct Headers<'a> {
    path: &'a Path,
    file: &'a File,
    len: u64,
    pos: u64,
}

impl Headers<'_> {
    fn take(&mut self, n: u64, what: &str) -> Result<u64> {
        let left = self.len - self.pos;
        if n > left {
            return Err(truncated(self.path, what, n, self.pos, left));
        }
        let at = self.pos;
        self.pos += n;
        Ok(at)
    }

    fn section(&mut self, what: &str, point_bytes: u64) -> Result<(usize, usize)> {
        let at = self.take(4, &format!("the {what} count"))?;
        let mut c = [0u8; 4];
        read_at(self.file, self.path, &mut c, at)?;
        let n = u32::from_be_bytes(c) as u64;
        let start = self.pos;
        self.take(n * point_bytes, &format!("{n} {what} points"))?;
        Ok((n as usize, start as usize))
    }
}

/// Offsets (start of points) of each section, for the loader.
#[derive(Clone, Debug)]
struct Sections {
    layout: ParamsLayout,
    h: usize,
    l: usize,
    a: usize,
    b_g1: usize,
    b_g2: usize,
}

fn parse_sections(path: &Path, file: &File) -> Result<Sections> {
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut c = Headers { path, file, len, pos: 0 };
    c.take(VK_FIXED as u64, "the verifying key")?;
    let (ic, _) = c.section("ic", G1_BYTES as u64)?;
    let vk_bytes = c.pos as usize;
    let (h, h_at) = c.section("h", G1_BYTES as u64)?;
    let (l, l_at) = c.section("l", G1_BYTES as u64)?;
    let (a, a_at) = c.section("a", G1_BYTES as u64)?;
    let (b_g1, b1_at) = c.section("b_g1", G1_BYTES as u64)?;
    let (b_g2, b2_at) = c.section("b_g2", G2_BYTES as u64)?;
    if c.pos != len {
        return Err(Error::params(path, format!("{} unexpected trailing bytes after the b_g2 section", len - c.pos)));
    }
    if h == 0 || l == 0 {
        return Err(Error::params(path, "empty h or l section: not a Groth16 parameter file"));
    }
    Ok(Sections {
        layout: ParamsLayout { ic, h, l, a, b_g1, b_g2, vk_bytes, file_bytes: c.pos as usize },
        h: h_at,
        l: l_at,
        a: a_at,
        b_g1: b1_at,
        b_g2: b2_at,
    })
}

/// An open `.params` file whose headers were read and whose size matches them: what
/// [`load_params`] does in two steps, so that a caller (or a test) can hold the file between
/// the check and the load. The load reads every section by positional reads into owned
/// buffers; a file truncated in between is an error that names it.
#[derive(Debug)]
pub struct ParamsFile {
    path: std::path::PathBuf,
    file: File,
    sections: Sections,
}

impl ParamsFile {
    /// Opens `path` and checks its structure (no point is read).
    pub fn open(path: &Path) -> Result<ParamsFile> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let sections = parse_sections(path, &file)?;
        Ok(ParamsFile { path: path.to_path_buf(), file, sections })
    }

    /// The point counts and sizes its headers declare.
    pub fn layout(&self) -> &ParamsLayout {
        &self.sections.layout
    }

    /// Reads and decodes the whole file, on all cores.
    pub fn load(&self) -> Result<(Parameters<Bls12>, ParamsLayout)> {
        let (path, s, lay) = (self.path.as_path(), &self.sections, &self.sections.layout);
        let mut vk_bytes = vec![0u8; lay.vk_bytes];
        read_at(&self.file, path, &mut vk_bytes, 0)?;
        let vk = VerifyingKey::read(&vk_bytes[..]).map_err(|e| Error::params(path, format!("bad verifying key: {e}")))?;
        let g1 = |at: usize, n: usize, what: &str| self.section::<G1Affine, G1_BYTES>(what, at, n);
        let h = g1(s.h, lay.h, "h")?;
        let l = g1(s.l, lay.l, "l")?;
        let a = g1(s.a, lay.a, "a")?;
        let b_g1 = g1(s.b_g1, lay.b_g1, "b_g1")?;
        let b_g2 = self.section::<G2Affine, G2_BYTES>("b_g2", s.b_g2, lay.b_g2)?;
        let params = Parameters { vk, h: Arc::new(h), l: Arc::new(l), a: Arc::new(a), b_g1: Arc::new(b_g1), b_g2: Arc::new(b_g2) };
        Ok((params, lay.clone()))
    }

    /// The `n` points at byte offset `at`: each thread reads a chunk into its own buffer and
    /// decodes it straight into its slots of the result.
    fn section<P, const N: usize>(&self, what: &str, at: usize, n: usize) -> Result<Vec<P>>
    where
        P: UncompressedEncoding + PrimeCurveAffine + Send,
    {
        self.points::<P, N>(what, at, 0, n)
    }

    /// Points `first..first + n` of the section `what` whose points start at byte offset `at`
    /// (each checked on the curve and not the identity; errors name the point's index).
    fn points<P, const N: usize>(&self, what: &str, at: usize, first: usize, n: usize) -> Result<Vec<P>>
    where
        P: UncompressedEncoding + PrimeCurveAffine + Send,
    {
        // Tests read in chunks of a few points, so that the chunk offsets are exercised.
        const CHUNK: usize = if cfg!(test) { 3 } else { 1 << 14 };
        let path = self.path.as_path();
        let mut out: Vec<P> = Vec::with_capacity(n);
        out.spare_capacity_mut()[..n].par_chunks_mut(CHUNK).enumerate().try_for_each_init(
            || vec![0u8; CHUNK * N],
            |buf, (i, slots)| {
                let raw = &mut buf[..slots.len() * N];
                read_at(&self.file, path, raw, (at + (first + i * CHUNK) * N) as u64)?;
                for (j, (slot, bytes)) in slots.iter_mut().zip(raw.chunks_exact(N)).enumerate() {
                    slot.write(decode_point::<P>(path, what, first + i * CHUNK + j, bytes)?);
                }
                Ok::<(), Error>(())
            },
        )?;
        // SAFETY: every one of the first n slots was written above (the loop returned Ok only
        // after every chunk, and the chunks cover all n slots).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// The verifying key's bytes as the file holds them (bellperson's encoding).
    pub fn vk_bytes(&self) -> Result<Vec<u8>> {
        let mut vk = vec![0u8; self.sections.layout.vk_bytes];
        read_at(&self.file, &self.path, &mut vk, 0)?;
        Ok(vk)
    }

    /// Points `first..first + n` of G1 section `which` (`h`, `l`, `a` or `b_g1`), decoded and
    /// checked as [`ParamsFile::load`] does: for reading a section in pieces.
    pub fn g1_points(&self, which: G1Section, first: usize, n: usize) -> Result<Vec<G1Affine>> {
        let (s, lay) = (&self.sections, &self.sections.layout);
        let (what, at, len) = match which {
            G1Section::H => ("h", s.h, lay.h),
            G1Section::L => ("l", s.l, lay.l),
            G1Section::A => ("a", s.a, lay.a),
            G1Section::BG1 => ("b_g1", s.b_g1, lay.b_g1),
        };
        self.check_range(what, first, n, len)?;
        self.points::<G1Affine, G1_BYTES>(what, at, first, n)
    }

    /// Points `first..first + n` of the G2 section `b_g2`, as [`ParamsFile::g1_points`].
    pub fn b_g2_points(&self, first: usize, n: usize) -> Result<Vec<G2Affine>> {
        self.check_range("b_g2", first, n, self.sections.layout.b_g2)?;
        self.points::<G2Affine, G2_BYTES>("b_g2", self.sections.b_g2, first, n)
    }

    fn check_range(&self, what: &str, first: usize, n: usize, len: usize) -> Result<()> {
        if first.checked_add(n).is_none_or(|end| end > len) {
            return Err(Error::Invalid(format!("points {first}..{} of {what}, which has {len}", first.saturating_add(n))));
        }
        Ok(())
    }
}

/// A G1 section of a parameter file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G1Section {
    /// The H query.
    H,
    /// The L query.
    L,
    /// The A query.
    A,
    /// The B query in G1.
    BG1,
}

/// Checks a `.params` file's structure without decoding any point.
pub fn check_params_file(path: &Path) -> Result<ParamsLayout> {
    Ok(ParamsFile::open(path)?.sections.layout)
}

/// Checks a `.vk` file's structure.
pub fn check_vk_file(path: &Path) -> Result<usize> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    check_vk_bytes(path, &bytes)
}

fn check_vk_bytes(path: &Path, bytes: &[u8]) -> Result<usize> {
    let mut c = Cursor { path, bytes, pos: 0 };
    c.take(VK_FIXED, "the verifying key")?;
    let (ic, _) = c.section("ic", G1_BYTES)?;
    if c.pos != bytes.len() {
        return Err(Error::params(path, format!("{} unexpected trailing bytes", bytes.len() - c.pos)));
    }
    Ok(ic)
}

/// Reads and validates a verifying key file.
pub fn load_vk(path: &Path) -> Result<VerifyingKey<Bls12>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    check_vk_bytes(path, &bytes)?;
    VerifyingKey::read(&bytes[..]).map_err(|e| Error::params(path, format!("bad verifying key: {e}")))
}

/// Point `i` of section `what` from its uncompressed bytes: on the curve and not infinity.
fn decode_point<P>(path: &Path, what: &str, i: usize, bytes: &[u8]) -> Result<P>
where
    P: UncompressedEncoding + PrimeCurveAffine,
{
    let mut raw = P::Uncompressed::default();
    raw.as_mut().copy_from_slice(bytes);
    let p: Option<P> = P::from_uncompressed_unchecked(&raw).into();
    match p {
        Some(p) if !bool::from(p.is_identity()) => Ok(p),
        Some(_) => Err(Error::params(path, format!("{what} point {i} is the point at infinity"))),
        None => Err(Error::params(path, format!("{what} point {i} is not on the curve"))),
    }
}

/// Loads a whole `.params` file into memory, decoding points on all cores
/// ([`ParamsFile::open`] then [`ParamsFile::load`]).
pub fn load_params(path: &Path) -> Result<(Parameters<Bls12>, ParamsLayout)> {
    ParamsFile::open(path)?.load()
}

use crate::atomic::write_atomically;

/// Serialises parameters exactly as bellperson's `Parameters::write` does (the same bytes),
/// into `path` (atomically), encoding the points on all cores: at 32 GiB sizes (350M points)
/// one thread would take minutes.
pub fn write_params(path: &Path, params: &Parameters<Bls12>) -> Result<()> {
    write_atomically(path, |w| {
        params.vk.write(&mut *w)?;
        write_section::<G1Affine, G1_BYTES>(w, &params.h)?;
        write_section::<G1Affine, G1_BYTES>(w, &params.l)?;
        write_section::<G1Affine, G1_BYTES>(w, &params.a)?;
        write_section::<G1Affine, G1_BYTES>(w, &params.b_g1)?;
        write_section::<G2Affine, G2_BYTES>(w, &params.b_g2)
    })
}

/// A section: its u32 big-endian count, then every point uncompressed, encoded in parallel a
/// few million points at a time (so the encoded bytes in memory stay bounded).
fn write_section<P, const N: usize>(w: &mut dyn std::io::Write, points: &[P]) -> std::io::Result<()>
where
    P: UncompressedEncoding + Sync,
{
    let count = u32::try_from(points.len()).map_err(|_| std::io::Error::other("section of more than 2^32 points"))?;
    w.write_all(&count.to_be_bytes())?;
    for group in points.chunks(1 << 22) {
        let encoded: Vec<Vec<u8>> = group
            .par_chunks(1 << 14)
            .map(|c| {
                let mut v = Vec::with_capacity(c.len() * N);
                for p in c {
                    v.extend_from_slice(p.to_uncompressed().as_ref());
                }
                v
            })
            .collect();
        for e in encoded {
            w.write_all(&e)?;
        }
    }
    Ok(())
}

/// Writes a verifying key file (atomically).
pub fn write_vk(path: &Path, vk: &VerifyingKey<Bls12>) -> Result<()> {
    write_atomically(path, |w| vk.write(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};
    use blstrs::Scalar;
    use rand::SeedableRng;

    struct Square;
    impl Circuit<Scalar> for Square {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
            cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    fn small_params() -> Parameters<Bls12> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        bellperson::groth16::generate_random_parameters::<Bls12, _, _>(Square, &mut rng).unwrap()
    }

    #[test]
    fn round_trips_and_rejects_every_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.params");
        let params = small_params();
        write_params(&p, &params).unwrap();
        let mut bellperson_bytes = Vec::new();
        params.write(&mut bellperson_bytes).unwrap();
        assert!(std::fs::read(&p).unwrap() == bellperson_bytes, "the parallel writer must write bellperson's bytes");
        let (back, layout) = load_params(&p).unwrap();
        assert!(back == params);
        assert_eq!(layout.file_bytes as u64, std::fs::metadata(&p).unwrap().len());
        let full = std::fs::read(&p).unwrap();
        for cut in [0, 10, VK_FIXED + 2, layout.vk_bytes + 3, full.len() - 1] {
            std::fs::write(&p, &full[..cut]).unwrap();
            let err = load_params(&p).err().unwrap().to_string();
            assert!(err.contains("x.params") && err.contains("truncated"), "cut {cut}: {err}");
        }
        let mut longer = full.clone();
        longer.push(0);
        std::fs::write(&p, &longer).unwrap();
        assert!(check_params_file(&p).unwrap_err().to_string().contains("trailing"));
    }

    #[test]
    fn a_file_truncated_underneath_the_loader_is_an_error_not_a_crash() {
        // The size was checked against the headers when the file was opened; another process
        // then cuts it (in the verifying key, in the h section, in the last section). A
        // mapping would take SIGBUS on the missing pages; the loader must answer an error.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.params");
        write_params(&p, &small_params()).unwrap();
        let full = std::fs::read(&p).unwrap();
        let layout = check_params_file(&p).unwrap();
        for cut in [0, layout.vk_bytes / 2, layout.vk_bytes + 4 + G1_BYTES / 2, full.len() - 1] {
            std::fs::write(&p, &full).unwrap();
            let open = ParamsFile::open(&p).unwrap();
            assert_eq!(open.layout(), &layout);
            std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(cut as u64).unwrap();
            let err = open.load().err().expect("a truncated file must not load").to_string();
            assert!(err.contains("t.params") && err.contains("shrank"), "cut {cut}: {err}");
        }
    }

    #[test]
    fn corrupt_point_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("y.params");
        let params = small_params();
        write_params(&p, &params).unwrap();
        let mut bytes = std::fs::read(&p).unwrap();
        let layout = check_params_file(&p).unwrap();
        // First h point starts after the vk and the h count.
        bytes[layout.vk_bytes + 4 + 50] ^= 0x40;
        std::fs::write(&p, &bytes).unwrap();
        let err = load_params(&p).err().unwrap().to_string();
        assert!(err.contains("h point 0"), "{err}");
    }

    #[test]
    fn vk_file_checks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("z.vk");
        let params = small_params();
        write_vk(&p, &params.vk).unwrap();
        assert!(load_vk(&p).unwrap() == params.vk);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 7]).unwrap();
        assert!(load_vk(&p).unwrap_err().to_string().contains("truncated"));
        let missing = dir.path().join("missing.vk");
        let err = load_vk(&missing).unwrap_err().to_string();
        assert!(err.contains("missing.vk"), "{err}");
    }

    #[test]
    fn atomic_write_leaves_no_file_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.params");
        let r = write_atomically(&p, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("boom"))
        });
        assert!(r.is_err());
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "temp file left behind");
    }
}
