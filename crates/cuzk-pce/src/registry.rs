//! The in-process registry: one [`PreCompiledCircuit`] per circuit identity per process,
//! shared as an `Arc` by every pipeline and proof (the seeds measured that the PCE is shared,
//! not copied; this is where that is guaranteed). Concurrent first users of one identity wait
//! for a single build or load. Built on cuzk-core's generic [`Registry`].

use std::sync::Arc;

use cuzk_core::registry::Registry;

use crate::matrix::PreCompiledCircuit;
use crate::Result;

static PCES: Registry<PreCompiledCircuit> = Registry::new();

/// The shared PCE for `identity`, made by `init` on first use.
pub fn get_or_init(identity: &str, init: impl FnOnce() -> Result<PreCompiledCircuit>) -> Result<Arc<PreCompiledCircuit>> {
    PCES.get_or_init(identity, init)
}

/// The PCE of `identity` if it is resident now.
pub fn resident(identity: &str) -> Option<Arc<PreCompiledCircuit>> {
    PCES.get(identity)
}

/// Drops the registry's copy of `identity`'s PCE (holders of an `Arc` keep theirs).
pub fn evict(identity: &str) -> Option<Arc<PreCompiledCircuit>> {
    PCES.evict(identity)
}
