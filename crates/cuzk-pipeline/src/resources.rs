//! The circuits resident in this process, keyed by [`CircuitId`]: each circuit's PCE (from
//! the registry, else its cache file, else extracted from the kind's blank circuit and
//! cached) and its Groth16 parameters (checked, then decoded once, or mapped from an SRS map
//! file when the kind names a map directory). Both live in cuzk-core's
//! one [`Registry`] type, so concurrent first users of a circuit wait for a single load and
//! every later proof shares the same `Arc`; a long-lived process lists and evicts them. It
//! knows circuits only through the [`ProofKind`] seam.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cuzk_core::mem::StageTracer;
use cuzk_core::registry::Registry;
use cuzk_core::srs::{Srs, SrsRef};
use cuzk_core::srs_map::{self, MapOutcome};
use cuzk_pce::cache::{self, Outcome};
use cuzk_pce::{PceError, PreCompiledCircuit};

use crate::engine::Device;
use crate::kind::{CircuitId, ProofKind};
use crate::PipelineError;

static PCES: Registry<PreCompiledCircuit> = Registry::new();
static PARAMS: Registry<Srs> = Registry::new();
/// Where each PCE in [`PCES`] came from, by its identity digest ([`PreCompiledCircuit::identity`]):
/// its registry key and cache file, what reloading released matrix entries needs.
static PCE_SOURCES: Mutex<Option<HashMap<u64, (String, PathBuf)>>> = Mutex::new(None);

/// What a circuit needs resident to prove: its PCE and its parameters.
#[derive(Clone)]
pub struct Resident {
    /// The circuit's recorded constraint system.
    pub pce: Arc<PreCompiledCircuit>,
    /// The circuit's Groth16 parameters.
    pub params: Arc<Srs>,
}

/// The PCE cache file of `id` in `dir`: its name and a digest of its identity.
pub fn pce_cache_path(dir: &Path, id: &CircuitId) -> PathBuf {
    let h = hex_prefix(&cache::identity_hash(&id.identity));
    dir.join(format!("{}-{h}.pce", id.name))
}

fn hex_prefix(bytes: &[u8; 32]) -> String {
    bytes[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn request_error<K: ProofKind>(kind: &K, e: K::Error) -> PipelineError {
    PipelineError::Request { kind: kind.name(), source: Arc::new(e) }
}

/// The process-wide PCE of `key`: from the registry, else the disk cache, else extracted and
/// cached. The outcome is `None` when the registry already held it.
pub fn shared_pce<K: ProofKind>(kind: &K, key: &K::CircuitKey) -> Result<(Arc<PreCompiledCircuit>, Option<Outcome>), PipelineError> {
    let id = kind.circuit_id(key);
    let build = || kind.extract_pce(key).map_err(|e| PceError::Circuit(Arc::new(e)));
    pce_from_cache(&pce_cache_path(kind.pce_cache_dir(), &id), &id.identity, build)
        .map_err(|e| PipelineError::Request { kind: kind.name(), source: Arc::new(e) })
}

/// The process-wide PCE of `identity`: from the registry, else the cache file at `path`, else
/// `build` (then cached). It carries the identity's digest, and its source is remembered, so
/// that its matrix entries can be released while devices hold them and reloaded when needed
/// ([`release_host_entries`], [`with_entries`]). The outcome is `None` when the registry
/// already held it.
pub fn pce_from_cache(
    path: &Path,
    identity: &str,
    build: impl FnOnce() -> Result<PreCompiledCircuit, PceError>,
) -> Result<(Arc<PreCompiledCircuit>, Option<Outcome>), PceError> {
    let mut outcome = None;
    let pce = PCES.get_or_init(identity, || {
        let (mut p, o) = cache::load_or_build(path, identity, build)?;
        outcome = Some(o);
        p.identity = Some(identity_digest(identity));
        lock_sources().get_or_insert_with(HashMap::new).insert(identity_digest(identity), (identity.to_string(), path.to_path_buf()));
        Ok::<_, PceError>(p)
    })?;
    Ok((pce, outcome))
}

fn identity_digest(identity: &str) -> u64 {
    let h = cache::identity_hash(identity);
    u64::from_le_bytes(h[..8].try_into().expect("8 bytes"))
}

fn lock_sources() -> std::sync::MutexGuard<'static, Option<HashMap<u64, (String, PathBuf)>>> {
    PCE_SOURCES.lock().unwrap_or_else(|e| e.into_inner())
}

fn source_of(pce: &PreCompiledCircuit) -> Option<(String, PathBuf)> {
    lock_sources().as_ref()?.get(&pce.identity?).cloned()
}

/// Replaces the registry's copy of `pce`'s circuit by one without its matrix entries
/// ([`PreCompiledCircuit::with_entries_released`]): call it once every device holds the
/// matrices. Proofs in flight keep the full copy until they finish; later jobs get the
/// released one. Returns the host bytes the released copy no longer holds (0 when nothing
/// was released: already released, or a PCE not from the registry).
pub fn release_host_entries(pce: &PreCompiledCircuit) -> u64 {
    let Some((identity, _)) = source_of(pce) else { return 0 };
    let mut freed = 0;
    let _ = PCES.update::<()>(&identity, |cur| {
        let Some(cur) = cur.filter(|c| !c.entries_released() && c.identity == pce.identity) else { return Ok(None) };
        let released = cur.with_entries_released();
        freed = released.as_ref().map_or(0, |r| (cur.bytes() - r.bytes()) as u64);
        Ok(released)
    });
    if freed > 0 {
        tracing::info!(circuit = %identity, bytes = freed, "host matrix entries released: the devices hold the matrices");
    }
    freed
}

/// `pce` with its matrix entries: itself when it has them, else the registry's copy, reloaded
/// from its cache file when the registry holds only the released one (a device lost its copy,
/// or the CPU must evaluate).
pub fn with_entries(pce: &Arc<PreCompiledCircuit>) -> Result<Arc<PreCompiledCircuit>, PipelineError> {
    if !pce.entries_released() {
        return Ok(pce.clone());
    }
    let lost = || PipelineError::Job("a PCE whose matrix entries were released has no cache file to reload them from".into());
    let (identity, path) = source_of(pce).ok_or_else(lost)?;
    let reloaded = PCES.update(&identity, |cur| match cur {
        Some(c) if !c.entries_released() => Ok(None),
        _ => {
            let t = std::time::Instant::now();
            let mut full = cache::load(&path, &identity)
                .map_err(|why| PipelineError::Job(format!("reloading the released matrix entries from {}: {why}", path.display())))?;
            full.identity = pce.identity;
            tracing::info!(circuit = %identity, secs = t.elapsed().as_secs_f64(), "matrix entries reloaded from the PCE cache");
            Ok(Some(full))
        }
    })?;
    reloaded.ok_or_else(lost)
}

/// The process-wide parameters of `key`: checked and loaded once (traced as `load-params`
/// on `tracer` when this call loads them), then shared.
pub fn shared_params<K: ProofKind>(kind: &K, key: &K::CircuitKey, tracer: &StageTracer) -> Result<Arc<Srs>, PipelineError> {
    params_from(kind, key, None, tracer)
}

/// [`shared_params`], loading from `path` when the caller has already looked it up.
fn params_from<K: ProofKind>(
    kind: &K,
    key: &K::CircuitKey,
    path: Option<PathBuf>,
    tracer: &StageTracer,
) -> Result<Arc<Srs>, PipelineError> {
    let id = kind.circuit_id(key);
    PARAMS.get_or_init(&id.identity, || {
        // Looked up only when they are not resident: a loaded set needs no files.
        let path = match path {
            Some(p) => p,
            None => kind.params_path(key).map_err(|e| request_error(kind, e))?,
        };
        tracer
            .stage("load-params", || load_srs(&path, kind.srs_map_dir()))
            .map_err(|e| PipelineError::Request { kind: kind.name(), source: Arc::new(e) })
    })
}

/// The SRS map file of the `.params` file at `params` in `dir`.
pub fn srs_map_path(dir: &Path, params: &Path) -> PathBuf {
    let stem = params.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "params".into());
    dir.join(format!("{stem}.srsmap"))
}

/// The parameters at `path`: mapped from (and on first use written to) `map_dir` when given,
/// else decoded into host memory.
pub fn load_srs(path: &Path, map_dir: Option<&Path>) -> Result<Srs, cuzk_core::Error> {
    let Some(dir) = map_dir else {
        return Ok(Srs::Decoded(cuzk_core::params::load_params(path)?.0));
    };
    let map = srs_map_path(dir, path);
    let t = std::time::Instant::now();
    let (m, outcome) = srs_map::open_or_build(&map, path)?;
    let how = match outcome {
        MapOutcome::Mapped => "mapped",
        MapOutcome::Built => "built and mapped",
        MapOutcome::Rebuilt(_) => "rebuilt and mapped",
    };
    tracing::info!(map = %map.display(), bytes = m.file_bytes(), secs = t.elapsed().as_secs_f64(), "parameters {how} (no decoded host copy)");
    Ok(Srs::Mapped(m))
}

/// `key`'s PCE and parameters, loading what is not resident yet. Missing parameter files
/// are reported before a PCE is extracted (minutes at 32 GiB) that could not be used.
pub fn shared<K: ProofKind>(kind: &K, key: &K::CircuitKey) -> Result<Resident, PipelineError> {
    let path = match PARAMS.get(&kind.circuit_id(key).identity) {
        Some(_) => None,
        None => Some(kind.params_path(key).map_err(|e| request_error(kind, e))?),
    };
    let (pce, _) = shared_pce(kind, key)?;
    let params = params_from(kind, key, path, &StageTracer::new())?;
    Ok(Resident { pce, params })
}

/// What of `id` is resident now (never waits for a load in progress).
pub fn resident(id: &CircuitId) -> (Option<Arc<PreCompiledCircuit>>, Option<Arc<Srs>>) {
    (PCES.get(&id.identity), PARAMS.get(&id.identity))
}

/// Drops this process's copies of `id`'s PCE and parameters (proofs in flight keep theirs);
/// returns what was resident.
pub fn evict(id: &CircuitId) -> (Option<Arc<PreCompiledCircuit>>, Option<Arc<Srs>>) {
    (PCES.evict(&id.identity), PARAMS.evict(&id.identity))
}

/// Drops the devices' resident copies of `params`' SRS sections — call it as the host lets
/// the parameters go, or the device keeps copies no proof will ask for again until memory
/// runs short. Returns the device bytes freed now (a copy a running call holds goes when the
/// call ends; a proof still in flight uploads what it needs again).
pub fn forget_on_devices(params: &Srs, devices: &[Device]) -> u64 {
    let s = params.sections();
    devices.iter().map(|d| d.backend.forget_bases(&s.g1_sections(), &[s.b_g2])).sum()
}

/// Bytes of a parameter set's points (G1 affine 96 B, G2 affine 192 B), wherever they live.
pub fn params_bytes(p: &Srs) -> u64 {
    SrsRef::point_bytes(&p.sections())
}
