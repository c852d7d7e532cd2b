//! Atomic file writes for every file cuzk makes (parameters, verifying keys, PCE caches):
//! the bytes go to a temporary file next to the target, named after it and held under an
//! exclusive lock while it is written, then fsynced and renamed into place, and the directory
//! is fsynced after the rename, so a crash (of the process or of the machine) leaves either
//! the old file or the complete new one and never a partial file under the real name.
//! A writer killed mid-write leaves its temporary file behind; the next write of the same
//! target removes every such file whose lock is free (its writer is dead — a live writer
//! still holds its lock). It knows files and locks, not what the bytes mean, and reads no
//! environment: the kill tests' stall hook (`set_stall_hook`, which makes a write stop
//! mid-file and wait to be killed) exists only with the `test-hooks` feature, which only
//! test builds turn on.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use fs2::FileExt;

use crate::{Error, Result};

/// The name prefix of `target`'s temporary files.
fn temp_prefix(target: &Path) -> String {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.cuzk-tmp-")
}

/// Temporary files of `target` in its directory (live or dead).
pub fn temp_files(target: &Path) -> Vec<PathBuf> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let prefix = temp_prefix(target);
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> =
        rd.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).map(|e| e.path()).collect();
    v.sort();
    v
}

/// Removes the temporary files of `target` that no live writer holds; returns how many.
pub fn sweep_dead_temps(target: &Path) -> usize {
    let mut removed = 0;
    for p in temp_files(target) {
        let Ok(f) = std::fs::OpenOptions::new().read(true).write(true).open(&p) else { continue };
        if f.try_lock_exclusive().is_ok() && std::fs::remove_file(&p).is_ok() {
            tracing::warn!(path = %p.display(), "removed a partial file left by a writer that died");
            removed += 1;
        }
    }
    removed
}

#[cfg(feature = "test-hooks")]
pub use stall::{clear_stall_hook, set_stall_hook, StallHook};

/// The kill tests' stall hook (feature `test-hooks`; see the module text).
#[cfg(feature = "test-hooks")]
mod stall {
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    /// Makes a write of a file whose name contains `name_contains` stop once `bytes` bytes are
    /// on disk, create `marker` and sleep until the process is killed.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct StallHook {
        /// Text the target's file name (not its directory) must contain for the hook to apply.
        pub name_contains: String,
        /// Bytes of the file written (and flushed) before the write stalls.
        pub bytes: u64,
        /// File created once the write has stalled, so that a test knows when to kill.
        pub marker: PathBuf,
    }

    static HOOK: Mutex<Option<StallHook>> = Mutex::new(None);

    /// Installs `hook` for every later write of this process (replacing any earlier one).
    pub fn set_stall_hook(hook: StallHook) {
        *HOOK.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
    }

    /// Removes the hook: later writes run to the end.
    pub fn clear_stall_hook() {
        *HOOK.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The hook's (bytes, marker) for `target`, if it applies.
    pub(super) fn stall_for(target: &Path) -> Option<(u64, PathBuf)> {
        let guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
        let h = guard.as_ref()?;
        target.file_name()?.to_string_lossy().contains(&h.name_contains).then(|| (h.bytes, h.marker.clone()))
    }

    /// A writer that, once `left` bytes have passed, flushes them to disk, creates the marker
    /// and sleeps forever: a process stopped mid-write, for the kill tests.
    pub(super) struct Stall<W: Write> {
        pub inner: W,
        pub left: u64,
        pub marker: PathBuf,
    }

    impl<W: Write> Write for Stall<W> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if (buf.len() as u64) < self.left {
                self.left -= buf.len() as u64;
                return self.inner.write(buf);
            }
            self.inner.write_all(&buf[..self.left as usize])?;
            self.inner.flush()?;
            std::fs::write(&self.marker, b"stalled mid-write\n")?;
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }

        fn flush(&mut self) -> std::io::Result<()> {
            self.inner.flush()
        }
    }
}

/// Writes `path` atomically (see the module text) with the bytes `f` produces.
pub fn write_atomically(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    sweep_dead_temps(path);
    let tmp = tempfile::Builder::new().prefix(&temp_prefix(path)).tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
    tmp.as_file().lock_exclusive().map_err(|e| Error::io(tmp.path(), e))?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file());
        #[cfg(feature = "test-hooks")]
        let written = match stall::stall_for(path) {
            Some((left, marker)) => f(&mut stall::Stall { inner: &mut w, left, marker }),
            None => f(&mut w),
        };
        #[cfg(not(feature = "test-hooks"))]
        let written = f(&mut w);
        written.map_err(|e| Error::io(path, e))?;
        w.flush().map_err(|e| Error::io(path, e))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(|e| Error::io(path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    sync_dir(dir)
}

// Directory syncs made by this thread (for the test that every write makes one).
#[cfg(test)]
thread_local! {
    static DIR_SYNCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Makes the entries of `dir` durable (after a rename into it, the new name survives a power
/// loss only once the directory itself is fsynced).
pub fn sync_dir(dir: &Path) -> Result<()> {
    let d = std::fs::File::open(dir).map_err(|e| Error::io(dir, e))?;
    d.sync_all().map_err(|e| Error::io(dir, e))?;
    #[cfg(test)]
    DIR_SYNCS.with(|n| n.set(n.get() + 1));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_target_and_sweeps_only_dead_temporary_files() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("x.params");
        // A dead writer's leftover (nobody holds its lock) and a live writer's file.
        let dead = d.path().join(format!("{}dead", temp_prefix(&target)));
        std::fs::write(&dead, b"partial").unwrap();
        let live = d.path().join(format!("{}live", temp_prefix(&target)));
        std::fs::write(&live, b"partial").unwrap();
        let held = std::fs::OpenOptions::new().write(true).open(&live).unwrap();
        held.lock_exclusive().unwrap();
        // Another target's leftover is not touched.
        let other = d.path().join(format!("{}dead", temp_prefix(&d.path().join("y.vk"))));
        std::fs::write(&other, b"partial").unwrap();

        write_atomically(&target, |w| w.write_all(b"complete")).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"complete");
        assert!(!dead.exists(), "the dead writer's temporary file must be removed");
        assert!(live.exists(), "a live writer's temporary file must be left alone");
        assert!(other.exists());
        assert_eq!(temp_files(&target), vec![live.clone()]);
        drop(held);
        assert_eq!(sweep_dead_temps(&target), 1);
        assert!(temp_files(&target).is_empty());
    }

    #[test]
    fn every_write_syncs_its_directory_after_the_rename() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("proof.bin");
        let before = DIR_SYNCS.with(|n| n.get());
        write_atomically(&target, |w| w.write_all(b"proof")).unwrap();
        assert_eq!(DIR_SYNCS.with(|n| n.get()), before + 1, "the directory was not fsynced after the rename");
        let e = sync_dir(&d.path().join("missing")).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn a_failing_producer_leaves_the_old_file_and_no_temporary_file() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("c.pce");
        write_atomically(&target, |w| w.write_all(b"old")).unwrap();
        let e = write_atomically(&target, |w| {
            w.write_all(b"half of the new")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("disk full") && e.to_string().contains("c.pce"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert!(temp_files(&target).is_empty());
    }
}
