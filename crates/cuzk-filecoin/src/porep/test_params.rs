//! Insecure test parameters for a registered proof: `ensure` makes them with the fast
//! generator ([`cuzk_pce::paramgen`]) from the circuit's PCE when none exist — under a file lock,
//! so concurrent processes make them once, and with a marker file so that only parameters
//! cuzk made are ever regenerated — and `time_generators` runs cuzk's and bellperson's
//! generators side by side for the benchmark. The marker is written atomically before the
//! files and names the verifying key it vouches for; when the files beside it carry another
//! key (real parameters replaced ours), it is removed, and damaged files it does not vouch for
//! are an error, never regenerated over. Beside test parameters, `ensure` also writes a fake
//! SnarkPack SRS ([`ensure_test_srs`]) when none is there, for non-interactive PoRep.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::porep::params::ParamPaths;
use crate::porep::RegisteredSealProof;
use blstrs::Bls12;
use cuzk_core::params::{self, ParamsLayout};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::with_shape;
use fs2::FileExt;
use rand::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use cuzk_pce::paramgen::{self, GenReport, Secrets};
use cuzk_pce::PreCompiledCircuit;

use super::kind::PorepC2;
use crate::{Error, Result};

/// What `ensure` found or did.
#[derive(Clone, Debug)]
pub enum Ensured {
    /// Whole parameter and key files were already there.
    Present(ParamsLayout),
    /// Test parameters were generated now.
    Generated {
        /// The generator's sizes and phase timings.
        report: GenReport,
        /// Wall-clock seconds to make them: getting the circuit's PCE, generating, and writing
        /// the marker, `.params`, `.vk` and `.meta` files.
        seconds: f64,
        /// The layout of the `.params` file as written.
        layout: ParamsLayout,
    },
}

/// Makes sure parameters for `rp` exist, generating insecure test parameters if they do not.
/// Existing files are checked structurally; broken ones that cuzk generated are regenerated,
/// broken ones of any other origin are an error (they may be real parameters).
///
/// Where the parameters are cuzk's test parameters (made now or before), a fake SnarkPack SRS
/// is also written when none is there ([`ensure_test_srs`]), so that non-interactive PoRep
/// proofs can be aggregated and verified with them.
pub fn ensure(kind: &PorepC2, rp: RegisteredSealProof, seed: Option<u64>) -> Result<Ensured> {
    let paths = ParamPaths::for_proof(rp)?;
    let sector_size = crate::porep::sector::sector_size_of(rp);
    let ensured = ensure_files(&paths, &format!("{rp:?}"), sector_size, || Ok(kind.shared_pce(rp)?.0), seed)?;
    if matches!(ensured, Ensured::Generated { .. }) || marked_ours(&paths) {
        ensure_test_srs(seed)?;
    }
    Ok(ensured)
}

/// The size of the fake SnarkPack SRS: enough to aggregate 128 proofs, the most any
/// non-interactive PoRep aggregates (126 partitions at 32 and 64 GiB; 13, padded to 16, below).
pub const TEST_SRS_PROOFS: usize = 128;

/// Writes an INSECURE fake SnarkPack SRS (bellperson's `setup_fake_srs`, whose trapdoor the
/// writer knows) where filecoin-proofs reads the SRS, unless a file is already there (real or
/// ours: it is never replaced, since a process may hold keys specialised from it). Written to a
/// temporary file and linked into place without replacing, so concurrent writers leave one.
/// Returns whether it was written now.
pub fn ensure_test_srs(seed: Option<u64>) -> Result<bool> {
    let path = crate::porep::ni::srs_path();
    if path.exists() {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    tracing::warn!(path = %path.display(), "writing an INSECURE TEST SnarkPack SRS; never use it on the network");
    let srs = match seed {
        Some(s) => {
            bellperson::groth16::aggregate::setup_fake_srs::<Bls12, _>(&mut rand_chacha::ChaCha20Rng::seed_from_u64(s), TEST_SRS_PROOFS)
        }
        None => bellperson::groth16::aggregate::setup_fake_srs::<Bls12, _>(&mut rand_core::OsRng, TEST_SRS_PROOFS),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| Error::io(&dir, e))?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        srs.write(&mut w).and_then(|()| w.flush()).map_err(|e| Error::io(&path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| Error::io(&path, e))?;
    match tmp.persist_noclobber(&path) {
        Ok(_) => Ok(true),
        // Another process put one there first: keep theirs.
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(&path, e.error)),
    }
}

/// [`ensure`] for any circuit: the files of `paths`, labelled `label` in logs, for a sector of
/// `sector_size` bytes, generated from the PCE `pce` returns when they are absent or damaged
/// test parameters. Every proof kind's test parameters go through here.
pub fn ensure_files(
    paths: &ParamPaths,
    label: &str,
    sector_size: u64,
    pce: impl FnOnce() -> Result<Arc<PreCompiledCircuit>>,
    seed: Option<u64>,
) -> Result<Ensured> {
    let dir = paths.params.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let lock_path = paths.lock_path();
    let lock =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
    if lock.try_lock_exclusive().is_err() {
        tracing::info!(lock = %lock_path.display(), "another process is preparing these parameters; waiting");
        lock.lock_exclusive().map_err(|e| Error::io(&lock_path, e))?;
    }
    let present = paths.params.exists() || paths.vk.exists();
    if present {
        match (params::check_params_file(&paths.params), params::check_vk_file(&paths.vk)) {
            (Ok(layout), Ok(_)) => {
                forget_stale_marker(paths);
                return Ok(Ensured::Present(layout));
            }
            (Err(e), _) | (_, Err(e)) => {
                if !marked_ours(paths) {
                    forget_stale_marker(paths);
                    return Err(Error::params(
                        &paths.params,
                        format!(
                            "existing parameters are damaged ({e}) and were not made by cuzk; \
                             remove them to have test parameters generated, or restore real ones"
                        ),
                    ));
                }
                tracing::warn!(error = %e, "cuzk test parameters are damaged; regenerating");
            }
        }
    }
    tracing::warn!(
        "generating INSECURE TEST PARAMETERS for {label} into {}: whoever runs this knows the \
         trapdoor; never use them on the network",
        dir.display()
    );
    let start = Instant::now();
    let report = generate_into(pce()?, sector_size, paths, seed)?;
    let seconds = start.elapsed().as_secs_f64();
    let layout = params::check_params_file(&paths.params)?;
    drop(lock);
    Ok(Ensured::Generated { report, seconds, layout })
}

fn generate_into(pce: Arc<PreCompiledCircuit>, sector_size: u64, paths: &ParamPaths, seed: Option<u64>) -> Result<GenReport> {
    // The trapdoor lives only inside this block.
    let (p, report) = {
        let secrets = match seed {
            Some(s) => Secrets::random(&mut rand_chacha::ChaCha20Rng::seed_from_u64(s)),
            None => Secrets::random(&mut rand_core::OsRng),
        };
        paramgen::generate(&pce, &secrets)?
    };
    let t = Instant::now();
    // Marker first (atomically): if we die after it, files that are damaged but carry this
    // verifying key are known to be ours.
    let mut vk = Vec::new();
    p.vk.write(&mut vk).map_err(|e| Error::io(&paths.vk, e))?;
    cuzk_core::atomic::write_atomically(&paths.test_marker, |w| w.write_all(marker_text(&vk).as_bytes()))?;
    params::write_params(&paths.params, &p)?;
    params::write_vk(&paths.vk, &p.vk)?;
    let meta = serde_json::json!({ "sector_size": sector_size });
    cuzk_core::atomic::write_atomically(&paths.meta, |w| serde_json::to_writer(w, &meta).map_err(std::io::Error::other))?;
    tracing::info!(seconds = format!("{:.2}", t.elapsed().as_secs_f64()), path = %paths.params.display(), "parameters written");
    Ok(report)
}

const MARKER_TITLE: &str = "insecure test parameters generated by cuzk";

/// The marker of test parameters whose verifying key is `vk` (its bytes): the marker vouches
/// for these files only, not for whatever later replaces them.
fn marker_text(vk: &[u8]) -> String {
    format!("{MARKER_TITLE}\nvk-bytes {}\nvk-blake2b {}\n", vk.len(), blake2b_simd::blake2b(vk).to_hex())
}

/// (length, digest) of the verifying key a marker vouches for.
fn parse_marker(text: &str) -> Option<(usize, String)> {
    let mut lines = text.lines();
    (lines.next()? == MARKER_TITLE).then_some(())?;
    let len = lines.next()?.strip_prefix("vk-bytes ")?.parse().ok()?;
    let digest = lines.next()?.strip_prefix("vk-blake2b ")?.to_string();
    Some((len, digest))
}

/// The first `len` bytes of `path` (fewer when it is shorter), or nothing.
fn head(path: &Path, len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    std::fs::File::open(path).ok()?.take(len as u64).read_to_end(&mut out).ok()?;
    Some(out)
}

/// Whether the marker beside `paths` vouches for the files there: it names the verifying key
/// of the `.vk` file, or of the head of the `.params` file (which starts with its key).
pub fn marked_ours(paths: &ParamPaths) -> bool {
    let Some((len, digest)) = std::fs::read_to_string(&paths.test_marker).ok().as_deref().and_then(parse_marker) else {
        return false;
    };
    [head(&paths.vk, len + 1), head(&paths.params, len)]
        .into_iter()
        .flatten()
        .any(|vk| vk.len() == len && blake2b_simd::blake2b(&vk).to_hex().as_str() == digest)
}

/// Removes a marker that no longer vouches for the files beside it (they were replaced, e.g.
/// by real parameters), so that damage to those files is never taken for damage to ours.
fn forget_stale_marker(paths: &ParamPaths) {
    if paths.test_marker.exists() && !marked_ours(paths) {
        match std::fs::remove_file(&paths.test_marker) {
            Ok(()) => {
                tracing::info!(marker = %paths.test_marker.display(), "removed a test-parameter marker the files beside it no longer match")
            }
            Err(e) => tracing::warn!(marker = %paths.test_marker.display(), error = %e, "could not remove a stale test-parameter marker"),
        }
    }
}

/// Side-by-side timing of cuzk's generator and bellperson's (the one filecoin-proofs runs),
/// each generating parameters for `rp` and writing them to a scratch directory.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GeneratorTiming {
    /// The registered proof, as its `Debug` form prints it.
    pub registered_proof: String,
    /// Wall-clock seconds of cuzk's generator, writing the `.params` file included.
    pub cuzk_seconds: f64,
    /// Sizes and phase timings reported by cuzk's generator.
    pub cuzk: GenReport,
    /// Size in bytes of the `.params` file cuzk wrote.
    pub cuzk_file_bytes: u64,
    /// Wall-clock seconds of bellperson's `generate_random_parameters`, writing the file
    /// included; `None` when bellperson was not run.
    pub bellperson_seconds: Option<f64>,
    /// Size in bytes of the `.params` file from bellperson's parameters; `None` when it was
    /// not run.
    pub bellperson_file_bytes: Option<u64>,
    /// Whether both produced the same section sizes (they must).
    pub same_layout: Option<bool>,
    /// Threads of the rayon pool both generators ran on.
    pub threads: usize,
}

/// Runs the generators for `rp` into `scratch` (the files are deleted afterwards).
pub fn time_generators(rp: RegisteredSealProof, with_bellperson: bool, scratch: &Path) -> Result<GeneratorTiming> {
    with_shape!(crate::porep::sector::sector_size_of(rp), time_shaped, rp, with_bellperson, scratch)
}

fn time_shaped<Tree: 'static + MerkleTreeTrait>(rp: RegisteredSealProof, with_bellperson: bool, scratch: &Path) -> Result<GeneratorTiming> {
    let config = rp.as_v1_config();
    let public_params = filecoin_proofs::parameters::public_params::<Tree>(&config).map_err(Error::filecoin)?;
    let blank = || {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(
            &public_params,
        )
    };
    let ours_path = scratch.join("cuzk.params");
    let t = Instant::now();
    let (p, report) = paramgen::generate_for(blank(), &Secrets::random(&mut rand_core::OsRng))?;
    params::write_params(&ours_path, &p)?;
    let cuzk_seconds = t.elapsed().as_secs_f64();
    drop(p);
    let ours_layout = params::check_params_file(&ours_path)?;
    std::fs::remove_file(&ours_path).map_err(|e| Error::io(&ours_path, e))?;
    tracing::info!(seconds = format!("{cuzk_seconds:.1}"), "cuzk generator done");
    let (mut bellperson_seconds, mut bellperson_file_bytes, mut same_layout) = (None, None, None);
    if with_bellperson {
        tracing::info!("running bellperson's generate_random_parameters (this is the slow one)");
        let theirs_path = scratch.join("bellperson.params");
        let t = Instant::now();
        let p = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(blank(), &mut rand_core::OsRng)
            .map_err(|e| Error::Proving(format!("bellperson generator: {e}")))?;
        params::write_params(&theirs_path, &p)?;
        bellperson_seconds = Some(t.elapsed().as_secs_f64());
        drop(p);
        let theirs_layout = params::check_params_file(&theirs_path)?;
        std::fs::remove_file(&theirs_path).map_err(|e| Error::io(&theirs_path, e))?;
        bellperson_file_bytes = Some(theirs_layout.file_bytes as u64);
        same_layout = Some(theirs_layout == ours_layout);
    }
    Ok(GeneratorTiming {
        registered_proof: format!("{rp:?}"),
        cuzk_seconds,
        cuzk: report,
        cuzk_file_bytes: ours_layout.file_bytes as u64,
        bellperson_seconds,
        bellperson_file_bytes,
        same_layout,
        threads: rayon::current_num_threads(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn paths(dir: &Path) -> ParamPaths {
        let params = dir.join("p.params");
        ParamPaths {
            id: "p".into(),
            vk: params.with_extension("vk"),
            meta: params.with_extension("meta"),
            test_marker: params.with_extension("cuzk-test-params"),
            params,
        }
    }

    fn some_params(seed: u64) -> bellperson::groth16::Parameters<Bls12> {
        let circuit = cuzk_core::testing::SatisfiedCircuit { seed, steps: 8 };
        paramgen::generate_for(circuit, &Secrets::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed))).unwrap().0
    }

    /// What `generate_into` writes, without the circuit: marker, parameters, key.
    fn write_ours(paths: &ParamPaths, p: &bellperson::groth16::Parameters<Bls12>) {
        let mut vk = Vec::new();
        p.vk.write(&mut vk).unwrap();
        cuzk_core::atomic::write_atomically(&paths.test_marker, |w| w.write_all(marker_text(&vk).as_bytes())).unwrap();
        params::write_params(&paths.params, p).unwrap();
        params::write_vk(&paths.vk, &p.vk).unwrap();
    }

    #[test]
    fn the_marker_vouches_for_our_files_even_damaged_and_is_removed_once_they_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let paths = paths(dir.path());
        let ours = some_params(1);
        write_ours(&paths, &ours);
        assert!(marked_ours(&paths));
        // Damaged: the key file gone and the parameters cut after their key: still ours.
        std::fs::remove_file(&paths.vk).unwrap();
        let layout = params::check_params_file(&paths.params).unwrap();
        std::fs::OpenOptions::new().write(true).open(&paths.params).unwrap().set_len(layout.vk_bytes as u64 + 10).unwrap();
        assert!(marked_ours(&paths), "damaged files that carry our key are ours");
        // Cut inside the key, and no key file: nothing proves they are ours.
        std::fs::OpenOptions::new().write(true).open(&paths.params).unwrap().set_len(100).unwrap();
        assert!(!marked_ours(&paths));

        // Real (other) parameters replace ours: the marker no longer vouches and is removed.
        write_ours(&paths, &ours);
        let theirs = some_params(2);
        params::write_params(&paths.params, &theirs).unwrap();
        params::write_vk(&paths.vk, &theirs.vk).unwrap();
        assert!(!marked_ours(&paths), "a marker must not vouch for files that carry another key");
        forget_stale_marker(&paths);
        assert!(!paths.test_marker.exists(), "the stale marker is removed");
        // A marker of the old, unbound form vouches for nothing.
        std::fs::write(&paths.test_marker, format!("{MARKER_TITLE}\n")).unwrap();
        assert!(!marked_ours(&paths));
    }
}
