//! Groth16 parameters for a registered proof: the official file names inside the parameter
//! directory, loading them, and `ensure` — making insecure *test* parameters with cuzk's fast
//! generator when none exist (under a file lock, so concurrent processes make them once, and
//! with a marker file so that only parameters cuzk made are ever regenerated).

use std::path::{Path, PathBuf};
use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs_api::RegisteredSealProof;
use filecoin_proofs::with_shape;
use fs2::FileExt;
use rand::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use crate::paramgen::{self, GenReport, Secrets};
use crate::params::{self, ParamsLayout};
use crate::{Error, Result};

/// The files of one parameter set.
#[derive(Clone, Debug)]
pub struct ParamPaths {
    /// filecoin-proofs' cache identifier, e.g. `stacked-proof-of-replication-...`.
    pub id: String,
    pub params: PathBuf,
    pub vk: PathBuf,
    pub meta: PathBuf,
    /// Present only next to test parameters that cuzk generated.
    pub test_marker: PathBuf,
}

impl ParamPaths {
    /// The paths filecoin-proofs uses for `rp` in the configured parameter directory.
    pub fn for_proof(rp: RegisteredSealProof) -> Result<Self> {
        let params = rp.cache_params_path().map_err(Error::filecoin)?;
        let vk = rp.cache_verifying_key_path().map_err(Error::filecoin)?;
        let id = rp.circuit_identifier().map_err(Error::filecoin)?;
        let meta = storage_proofs_core::parameter_cache::parameter_cache_metadata_path(&id);
        let test_marker = params.with_extension("cuzk-test-params");
        Ok(ParamPaths { id, params, vk, meta, test_marker })
    }

    fn lock_path(&self) -> PathBuf {
        self.params.with_extension("cuzk-lock")
    }
}

/// What `ensure` found or did.
#[derive(Clone, Debug)]
pub enum Ensured {
    /// Whole parameter and key files were already there.
    Present(ParamsLayout),
    /// Test parameters were generated now.
    Generated { report: GenReport, seconds: f64, layout: ParamsLayout },
}

/// Makes sure parameters for `rp` exist, generating insecure test parameters if they do not.
/// Existing files are checked structurally; broken ones that cuzk generated are regenerated,
/// broken ones of any other origin are an error (they may be real parameters).
pub fn ensure(rp: RegisteredSealProof, seed: Option<u64>) -> Result<Ensured> {
    let paths = ParamPaths::for_proof(rp)?;
    let dir = paths.params.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let lock_path = paths.lock_path();
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?;
    if lock.try_lock_exclusive().is_err() {
        tracing::info!(lock = %lock_path.display(), "another process is preparing these parameters; waiting");
        lock.lock_exclusive().map_err(|e| Error::io(&lock_path, e))?;
    }
    let present = paths.params.exists() || paths.vk.exists();
    if present {
        match (params::check_params_file(&paths.params), params::check_vk_file(&paths.vk)) {
            (Ok(layout), Ok(_)) => return Ok(Ensured::Present(layout)),
            (Err(e), _) | (_, Err(e)) => {
                if !paths.test_marker.exists() {
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
        "generating INSECURE TEST PARAMETERS for {rp:?} into {}: whoever runs this knows the \
         trapdoor; never use them on the network",
        dir.display()
    );
    let start = Instant::now();
    let report = with_shape!(
        crate::porep::sector::sector_size_of(rp),
        generate_shaped,
        rp,
        &paths,
        seed,
    )?;
    let seconds = start.elapsed().as_secs_f64();
    let layout = params::check_params_file(&paths.params)?;
    drop(lock);
    Ok(Ensured::Generated { report, seconds, layout })
}

fn generate_shaped<Tree: 'static + MerkleTreeTrait>(
    rp: RegisteredSealProof,
    paths: &ParamPaths,
    seed: Option<u64>,
) -> Result<GenReport> {
    let config = rp.as_v1_config();
    let public_params = filecoin_proofs::parameters::public_params::<Tree>(&config).map_err(Error::filecoin)?;
    let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&public_params);
    let secrets = match seed {
        Some(s) => Secrets::random(&mut rand_chacha::ChaCha20Rng::seed_from_u64(s)),
        None => Secrets::random(&mut rand_core::OsRng),
    };
    let (p, report) = paramgen::generate(circuit, &secrets)?;
    drop(secrets);
    let t = Instant::now();
    // Marker first: if we die after it, the damaged files are known to be ours.
    std::fs::write(&paths.test_marker, b"insecure test parameters generated by cuzk\n")
        .map_err(|e| Error::io(&paths.test_marker, e))?;
    params::write_params(&paths.params, &p)?;
    params::write_vk(&paths.vk, &p.vk)?;
    let meta = serde_json::json!({ "sector_size": crate::porep::sector::sector_size_of(rp) });
    params::write_atomically(&paths.meta, |w| serde_json::to_writer(w, &meta).map_err(std::io::Error::other))?;
    tracing::info!(seconds = format!("{:.2}", t.elapsed().as_secs_f64()), path = %paths.params.display(), "parameters written");
    Ok(report)
}

/// Loads the parameters of `rp` (checking them first), with the time it took.
pub fn load(rp: RegisteredSealProof) -> Result<(Parameters<Bls12>, ParamsLayout)> {
    let paths = ParamPaths::for_proof(rp)?;
    if !paths.params.exists() {
        return Err(Error::params(
            &paths.params,
            format!(
                "missing Groth16 parameters for {rp:?}; run `cuzk params ensure --sector-size {}` \
                 for test parameters or fetch the official ones",
                crate::porep::sector::size_name(crate::porep::sector::sector_size_of(rp))
            ),
        ));
    }
    params::check_vk_file(&paths.vk)?;
    params::load_params(&paths.params)
}

/// Side-by-side timing of cuzk's generator and bellperson's (the one filecoin-proofs runs),
/// each generating parameters for `rp` and writing them to a scratch directory.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GeneratorTiming {
    pub registered_proof: String,
    pub cuzk_seconds: f64,
    pub cuzk: GenReport,
    pub cuzk_file_bytes: u64,
    pub bellperson_seconds: Option<f64>,
    pub bellperson_file_bytes: Option<u64>,
    /// Whether both produced the same section sizes (they must).
    pub same_layout: Option<bool>,
    pub threads: usize,
}

/// Runs the generators for `rp` into `scratch` (the files are deleted afterwards).
pub fn time_generators(rp: RegisteredSealProof, with_bellperson: bool, scratch: &Path) -> Result<GeneratorTiming> {
    with_shape!(crate::porep::sector::sector_size_of(rp), time_shaped, rp, with_bellperson, scratch)
}

fn time_shaped<Tree: 'static + MerkleTreeTrait>(
    rp: RegisteredSealProof,
    with_bellperson: bool,
    scratch: &Path,
) -> Result<GeneratorTiming> {
    let config = rp.as_v1_config();
    let public_params = filecoin_proofs::parameters::public_params::<Tree>(&config).map_err(Error::filecoin)?;
    let blank = || <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&public_params);
    let ours_path = scratch.join("cuzk.params");
    let t = Instant::now();
    let (p, report) = paramgen::generate(blank(), &Secrets::random(&mut rand_core::OsRng))?;
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
