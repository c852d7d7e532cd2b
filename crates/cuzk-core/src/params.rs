//! Groth16 parameter files in bellperson's format (the one filecoin-proofs ships): a cheap
//! structural check of `.params` and `.vk` files (every section's declared count against the
//! bytes actually there, so a truncated file is named and rejected before any proving), a
//! parallel mmap loader, and atomic writes ([`crate::atomic`]: temp file + fsync + rename), because
//! filecoin-proofs never regenerates a partially written `.params` file.

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
    pub ic: usize,
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
    /// Bytes of the verifying-key prefix.
    pub vk_bytes: usize,
    /// Total file size implied by the headers (equal to the real size when valid).
    pub file_bytes: usize,
}

struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8]> {
        let left = self.bytes.len() - self.pos;
        if n > left {
            return Err(Error::params(
                self.path,
                format!("truncated: {what} needs {n} bytes at offset {} but only {left} remain", self.pos),
            ));
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

/// Offsets (start of points) of each section, for the loader.
struct Sections {
    layout: ParamsLayout,
    h: usize,
    l: usize,
    a: usize,
    b_g1: usize,
    b_g2: usize,
}

fn parse_sections(path: &Path, bytes: &[u8]) -> Result<Sections> {
    let mut c = Cursor { path, bytes, pos: 0 };
    c.take(VK_FIXED, "the verifying key")?;
    let (ic, _) = c.section("ic", G1_BYTES)?;
    let vk_bytes = c.pos;
    let (h, h_at) = c.section("h", G1_BYTES)?;
    let (l, l_at) = c.section("l", G1_BYTES)?;
    let (a, a_at) = c.section("a", G1_BYTES)?;
    let (b_g1, b1_at) = c.section("b_g1", G1_BYTES)?;
    let (b_g2, b2_at) = c.section("b_g2", G2_BYTES)?;
    if c.pos != bytes.len() {
        return Err(Error::params(path, format!("{} unexpected trailing bytes after the b_g2 section", bytes.len() - c.pos)));
    }
    if h == 0 || l == 0 {
        return Err(Error::params(path, "empty h or l section: not a Groth16 parameter file"));
    }
    Ok(Sections {
        layout: ParamsLayout { ic, h, l, a, b_g1, b_g2, vk_bytes, file_bytes: c.pos },
        h: h_at,
        l: l_at,
        a: a_at,
        b_g1: b1_at,
        b_g2: b2_at,
    })
}

fn map(path: &Path) -> Result<memmap2::Mmap> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: the file is only read; a concurrent writer could change the bytes under us,
    // which at worst makes decoding fail with an error (every point is validated).
    unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))
}

/// Checks a `.params` file's structure without decoding any point.
pub fn check_params_file(path: &Path) -> Result<ParamsLayout> {
    let m = map(path)?;
    Ok(parse_sections(path, &m)?.layout)
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

fn decode<P, const N: usize>(path: &Path, what: &str, bytes: &[u8]) -> Result<Vec<P>>
where
    P: UncompressedEncoding + PrimeCurveAffine + Send,
{
    bytes
        .par_chunks(N)
        .enumerate()
        .map(|(i, chunk)| {
            let mut raw = P::Uncompressed::default();
            raw.as_mut().copy_from_slice(chunk);
            let p: Option<P> = P::from_uncompressed_unchecked(&raw).into();
            match p {
                Some(p) if !bool::from(p.is_identity()) => Ok(p),
                Some(_) => Err(Error::params(path, format!("{what} point {i} is the point at infinity"))),
                None => Err(Error::params(path, format!("{what} point {i} is not on the curve"))),
            }
        })
        .collect()
}

/// Loads a whole `.params` file into memory, decoding points on all cores.
pub fn load_params(path: &Path) -> Result<(Parameters<Bls12>, ParamsLayout)> {
    let m = map(path)?;
    let s = parse_sections(path, &m)?;
    let vk = VerifyingKey::read(&m[..s.layout.vk_bytes]).map_err(|e| Error::params(path, format!("bad verifying key: {e}")))?;
    let lay = &s.layout;
    let g1 = |at: usize, n: usize, what: &str| decode::<G1Affine, 96>(path, what, &m[at..at + n * G1_BYTES]);
    let h = g1(s.h, lay.h, "h")?;
    let l = g1(s.l, lay.l, "l")?;
    let a = g1(s.a, lay.a, "a")?;
    let b_g1 = g1(s.b_g1, lay.b_g1, "b_g1")?;
    let b_g2 = decode::<G2Affine, 192>(path, "b_g2", &m[s.b_g2..s.b_g2 + lay.b_g2 * G2_BYTES])?;
    let params = Parameters { vk, h: Arc::new(h), l: Arc::new(l), a: Arc::new(a), b_g1: Arc::new(b_g1), b_g2: Arc::new(b_g2) };
    Ok((params, s.layout))
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
