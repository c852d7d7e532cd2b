//! Where the Filecoin kinds keep their files: the Groth16 parameter directory (which
//! filecoin-proofs itself reads from `FIL_PROOFS_PARAMETER_CACHE`), the SDR parent cache used
//! when sealing test sectors, and the PCE cache. The values come in from the top: a binary
//! builds [`Settings`] from its own environment or config ([`Settings::from_vars`] takes the
//! lookup, so this crate reads no environment) and calls [`Settings::apply`] once, early.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::{Error, Result};

/// The variable filecoin-proofs reads the parameter directory from.
pub const PARAMS_VAR: &str = "FIL_PROOFS_PARAMETER_CACHE";
/// The variable filecoin-proofs reads the SDR parent cache directory from.
pub const PARENTS_VAR: &str = "FIL_PROOFS_PARENT_CACHE";
/// The variable that moves cuzk's PCE cache.
pub const PCE_VAR: &str = "CUZK_PCE_CACHE";
/// The variable that turns on mapped parameters: the directory of the SRS map files.
pub const SRS_MAP_VAR: &str = "CUZK_SRS_MAP_DIR";

/// The directories of the Filecoin proof kinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Groth16 `.params` / `.vk` files under their official names.
    pub parameter_dir: PathBuf,
    /// filecoin-proofs' SDR parent cache (sealing test sectors).
    pub parent_cache_dir: PathBuf,
    /// cuzk's PCE cache files.
    pub pce_cache_dir: PathBuf,
    /// cuzk's SRS map files (`cuzk_core::srs_map`): when set, every kind maps its parameters
    /// from there (each map made from its `.params` file on first use; as large as that file)
    /// instead of decoding them into host memory. Unset: decoded, as before.
    pub srs_map_dir: Option<PathBuf>,
}

impl Settings {
    /// The settings a process with these variables gets: each directory from its variable,
    /// else under `$XDG_CACHE_HOME/cuzk` (or `$HOME/.cache/cuzk`, or the temp directory).
    /// The default parameter directory is deliberately not filecoin's production one, since
    /// test parameters carry production file names.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Settings {
        let base = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir)
            .join("cuzk");
        let or = |name: &str, default: PathBuf| var(name).filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or(default);
        Settings {
            parameter_dir: or(PARAMS_VAR, base.join("filecoin-proof-parameters")),
            parent_cache_dir: or(PARENTS_VAR, base.join("filecoin-parents")),
            pce_cache_dir: or(PCE_VAR, base.join("pce")),
            srs_map_dir: var(SRS_MAP_VAR).filter(|v| !v.is_empty()).map(PathBuf::from),
        }
    }

    /// Hands the directories to filecoin-proofs (through the variables it reads, set before
    /// any of its code runs) and checks that it agrees. Returns the parameter directory; it is
    /// not created here (making test parameters creates it), so a command that only reads, or
    /// talks to a daemon, leaves the file system as it was. (The PCE cache directory travels
    /// in the kinds built from these settings.)
    pub fn apply(&self) -> Result<PathBuf> {
        std::env::set_var(PARENTS_VAR, &self.parent_cache_dir);
        std::env::set_var(PARAMS_VAR, &self.parameter_dir);
        let actual = PathBuf::from(storage_proofs_core::settings::SETTINGS.parameter_cache.clone());
        if actual.components().ne(self.parameter_dir.components()) {
            return Err(Error::Invalid(format!(
                "filecoin-proofs already uses parameter directory {} but cuzk was configured with {}",
                actual.display(),
                self.parameter_dir.display()
            )));
        }
        Ok(actual)
    }

    /// The settings of this process's environment, applied: what tests and the CLI call.
    pub fn apply_from(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
        Settings::from_vars(var).apply()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_override_defaults_under_the_cache_home() {
        let vars = |k: &str| match k {
            "HOME" => Some(OsString::from("/home/u")),
            PCE_VAR => Some(OsString::from("/fast/pce")),
            _ => None,
        };
        let s = Settings::from_vars(vars);
        assert_eq!(s.parameter_dir, PathBuf::from("/home/u/.cache/cuzk/filecoin-proof-parameters"));
        assert_eq!(s.parent_cache_dir, PathBuf::from("/home/u/.cache/cuzk/filecoin-parents"));
        assert_eq!(s.pce_cache_dir, PathBuf::from("/fast/pce"));
        let xdg = Settings::from_vars(|k| (k == "XDG_CACHE_HOME").then(|| OsString::from("/x")));
        assert_eq!(xdg.parameter_dir, PathBuf::from("/x/cuzk/filecoin-proof-parameters"));
    }
}
