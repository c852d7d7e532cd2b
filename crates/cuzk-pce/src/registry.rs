//! The in-process registry: one [`PreCompiledCircuit`] per circuit identity per process,
//! shared as an `Arc` by every pipeline and proof (the seeds measured that the PCE is shared,
//! not copied; this is where that is guaranteed). Concurrent first users of one identity wait
//! for a single build or load.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::matrix::PreCompiledCircuit;
use crate::Result;

type Slot = Arc<Mutex<Option<Arc<PreCompiledCircuit>>>>;

fn slots() -> &'static Mutex<HashMap<String, Slot>> {
    static SLOTS: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    SLOTS.get_or_init(Default::default)
}

/// The shared PCE for `identity`, made by `init` on first use.
pub fn get_or_init(identity: &str, init: impl FnOnce() -> Result<PreCompiledCircuit>) -> Result<Arc<PreCompiledCircuit>> {
    let slot = {
        let mut map = slots().lock().unwrap_or_else(|e| e.into_inner());
        map.entry(identity.to_string()).or_default().clone()
    };
    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = guard.as_ref() {
        return Ok(p.clone());
    }
    let p = Arc::new(init()?);
    *guard = Some(p.clone());
    Ok(p)
}

