//! What the commands read and write besides their own results: the bundled C1 fixture, a C1
//! with the sector it is for (flags or the `.meta.json` beside it), and JSON files (stage
//! traces, reports) written atomically. It must not know which command calls it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cuzk_core::atomic::write_atomically;
use cuzk_core::mem::StageTracer;
use cuzk_filecoin::porep::c1::C1;
use cuzk_filecoin::porep::sector::{self, SectorIdentity, SectorMeta};
use cuzk_filecoin::porep::{PorepInput, RegisteredSealProof};
use serde::Serialize;

use crate::args::SectorArgs;

/// The bundled fixture, found next to the binary's source tree or the working directory.
pub fn bundled_c1() -> Result<PathBuf> {
    let rel = Path::new("fixtures/2kib/c1.json");
    let candidates = [PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel), rel.to_path_buf()];
    candidates.iter().find(|p| p.exists()).cloned().with_context(|| format!("bundled fixture {} not found; pass --c1", rel.display()))
}

/// C1 plus the sector it is for, from the flags and the metadata file next to it, checked in
/// full (shape, partitions, replica id) before any parameter file or cache is looked up, so an
/// error names the input rather than a parameter file it led to.
pub fn load_input(c1_path: &Path, s: &SectorArgs) -> Result<(C1, SectorIdentity)> {
    let meta_path = sector::meta_path_for(c1_path);
    let meta = if meta_path.exists() { Some(SectorMeta::load(&meta_path)?) } else { None };
    let expected: Option<RegisteredSealProof> = match &s.sector_size {
        Some(size) => Some(sector::registered_proof(sector::parse_sector_size(size)?)?),
        None => meta.as_ref().map(|m| m.registered_proof),
    };
    let c1 = C1::load(c1_path, expected)?;
    let pick = |flag: Option<u64>, from_meta: Option<u64>, name: &str| -> Result<u64> {
        flag.or(from_meta).with_context(|| format!("--{name} is required: no {} next to {}", meta_path.display(), c1_path.display()))
    };
    let identity = SectorIdentity {
        miner_id: pick(s.miner_id, meta.as_ref().map(|m| m.miner_id), "miner-id")?,
        sector_number: pick(s.sector_number, meta.as_ref().map(|m| m.sector_number), "sector-number")?,
    };
    let input = PorepInput { c1, identity };
    crate::context::kinds().porep.check(&input, false)?;
    Ok((input.c1, input.identity))
}

/// The stage trace (stage, seconds, RSS, peak RSS) as JSON.
pub fn write_trace(path: &Path, tracer: &StageTracer) -> Result<()> {
    write_json(path, &tracer.rows())
}

/// `value` as pretty JSON at `path`, written atomically.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    write_atomically(path, |w| serde_json::to_writer_pretty(w, value).map_err(std::io::Error::other))?;
    Ok(())
}
