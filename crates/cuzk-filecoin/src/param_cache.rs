//! What is in a Groth16 parameter directory, file by file, judged against the manifest that
//! filecoin-proofs ships (`parameters.json` in storage-proofs-core: for every official `.params`
//! and `.vk` file, its sector size and a content digest, the first 32 hex digits of its
//! BLAKE2b-512). A file is official (digest matches), cuzk's insecure test parameters (the
//! marker [`crate::porep::params::ParamPaths::test_marker`] beside it names the key the files
//! carry), damaged or foreign
//! (digest differs, no marker), or not a parameter file filecoin-proofs knows. It owns reading
//! and classifying; what counts as ready is the caller's decision (`cuzk doctor`).

use std::io::Read;
use std::path::{Path, PathBuf};

use cuzk_core::progress::Progress;
use storage_proofs_core::parameter_cache::{ParameterData, PARAMETERS};

use crate::porep::params::ParamPaths;
use crate::{Error, Result};

/// The proof family a parameter file serves, read from its official name.
pub fn family_of(name: &str) -> &'static str {
    if name.contains("stacked-proof-of-replication") {
        "PoRep"
    } else if name.contains("empty-sector-update") {
        "SnapDeals"
    } else if name.contains("proof-of-spacetime-fallback") {
        "PoSt"
    } else {
        "other"
    }
}

/// Where one file's content comes from, as far as can be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Its digest equals the manifest's.
    Official,
    /// cuzk generated it as insecure test parameters (the marker is present); the digest is
    /// not compared.
    TestParameters,
    /// Listed in the manifest, no test marker, and the digest differs: damaged or foreign.
    DigestMismatch {
        /// The manifest's digest.
        expected: String,
        /// The file's.
        actual: String,
    },
    /// Listed in the manifest; the digest was not computed (asked not to).
    NotHashed,
    /// Not a file the manifest lists (another version, or not a parameter file).
    Unlisted,
}

/// One file of the parameter directory.
#[derive(Clone, Debug)]
pub struct CachedFile {
    /// Its name in the directory.
    pub name: String,
    /// Its path.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// `PoRep`, `SnapDeals`, `PoSt` or `other`.
    pub family: &'static str,
    /// The sector size the manifest gives it, if listed.
    pub sector_size: Option<u64>,
    /// Official, test parameters, damaged, or unknown.
    pub origin: Origin,
}

/// The manifest's entry for a file name, if any.
pub fn manifest_entry(name: &str) -> Option<&'static ParameterData> {
    PARAMETERS.get(name)
}

/// Every `.params` and `.vk` file in `dir`, sorted by name, classified against the manifest.
/// With `hash`, listed files without a test marker are read in full to compare digests
/// (progress is reported per byte: an official 32 GiB PoRep file is tens of GiB).
pub fn scan(dir: &Path, hash: bool) -> Result<Vec<CachedFile>> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.ends_with(".params") || name.ends_with(".vk")) {
            continue;
        }
        files.push(classify(&entry.path(), &name, hash)?);
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

fn classify(path: &Path, name: &str, hash: bool) -> Result<CachedFile> {
    let bytes = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    let entry = manifest_entry(name);
    let origin = match entry {
        None => Origin::Unlisted,
        Some(_) if marked_ours(path) => Origin::TestParameters,
        Some(_) if !hash => Origin::NotHashed,
        Some(data) => {
            let actual = digest(path)?;
            if actual == data.digest {
                Origin::Official
            } else {
                Origin::DigestMismatch { expected: data.digest.clone(), actual }
            }
        }
    };
    Ok(CachedFile {
        name: name.to_string(),
        path: path.to_path_buf(),
        bytes,
        family: family_of(name),
        sector_size: entry.map(|d| d.sector_size),
        origin,
    })
}

/// Whether cuzk's test-parameter marker beside a `.params` or `.vk` file vouches for it (it
/// names the verifying key the files carry; a stale or old-style marker vouches for nothing).
fn marked_ours(path: &Path) -> bool {
    let paths = ParamPaths {
        id: String::new(),
        params: path.with_extension("params"),
        vk: path.with_extension("vk"),
        meta: path.with_extension("meta"),
        test_marker: path.with_extension("cuzk-test-params"),
    };
    crate::porep::test_params::marked_ours(&paths)
}

/// A file's digest as the manifest writes it: BLAKE2b-512, first 32 hex digits.
pub fn digest(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    let progress = Progress::start(format!("digest of {}", path.file_name().unwrap_or_default().to_string_lossy()), "bytes", len);
    let mut state = blake2b_simd::Params::new().to_state();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        state.update(&buf[..n]);
        progress.advance(n as u64);
    }
    Ok(state.finalize().to_hex()[..32].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_blake2b_512_truncated_like_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.params");
        std::fs::write(&p, b"abc").unwrap();
        // BLAKE2b-512("abc") from RFC 7693, appendix A: ba80a53f981c4d0d...
        assert_eq!(digest(&p).unwrap(), "ba80a53f981c4d0d6a2797b69f12f6e9");
    }

    #[test]
    fn listed_files_are_told_apart_by_marker_and_digest() {
        let dir = tempfile::tempdir().unwrap();
        let (name, data) = PARAMETERS.iter().find(|(n, _)| n.contains("stacked-proof-of-replication") && n.ends_with(".vk")).unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, b"not the official key").unwrap();
        std::fs::write(dir.path().join("README.params.txt"), b"ignored").unwrap();
        std::fs::write(dir.path().join("v1-something-else.params"), b"x").unwrap();

        let files = scan(dir.path(), true).unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
        let listed = files.iter().find(|f| &f.name == name).unwrap();
        assert_eq!(listed.family, "PoRep");
        assert_eq!(listed.sector_size, Some(data.sector_size));
        assert!(matches!(&listed.origin, Origin::DigestMismatch { expected, .. } if expected == &data.digest), "{listed:?}");
        assert_eq!(files.iter().find(|f| f.name.starts_with("v1-")).unwrap().origin, Origin::Unlisted);

        // A marker that does not name this key vouches for nothing; one that does, does.
        let marker = path.with_extension("cuzk-test-params");
        std::fs::write(&marker, b"insecure test parameters generated by cuzk\n").unwrap();
        assert!(matches!(scan(dir.path(), true).unwrap().iter().find(|f| &f.name == name).unwrap().origin, Origin::DigestMismatch { .. }));
        let vk = std::fs::read(&path).unwrap();
        let text = format!(
            "insecure test parameters generated by cuzk\nvk-bytes {}\nvk-blake2b {}\n",
            vk.len(),
            blake2b_simd::blake2b(&vk).to_hex()
        );
        std::fs::write(&marker, text).unwrap();
        let again = scan(dir.path(), true).unwrap();
        assert_eq!(again.iter().find(|f| &f.name == name).unwrap().origin, Origin::TestParameters);
        assert_eq!(scan(dir.path(), false).unwrap().iter().find(|f| &f.name == name).unwrap().origin, Origin::TestParameters);
    }
}
