//! A process killed while writing a PCE cache or Groth16 parameters leaves nothing that a
//! later start trusts. The test binary runs itself again as a child (the `child_*` tests,
//! ignored unless the child variable is set); the child reads its stall setting from its own
//! `CUZK_TEST_STALL_WRITE` variable and installs cuzk-core's stall hook (feature `test-hooks`,
//! on for this crate's tests only), so that it stops in the middle of its write with part of
//! the file on disk; it is then SIGKILLed, and a later load must not find a partial file under
//! the real name, must keep the old file intact, must rebuild, and must remove the dead
//! writer's leftover.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cuzk_core::atomic::{set_stall_hook, temp_files, StallHook};
use cuzk_core::testing::SatisfiedCircuit;
use cuzk_pce::cache::{self, Outcome, Reject};

const CHILD: &str = "CUZK_KILL_TEST_CHILD";
const TARGET: &str = "CUZK_KILL_TEST_TARGET";
/// The child's stall setting, `NAME:BYTES:MARKER`: a write of a file whose name contains NAME
/// stops after BYTES bytes are on disk and creates MARKER.
const STALL_ENV: &str = "CUZK_TEST_STALL_WRITE";

fn circuit() -> SatisfiedCircuit {
    SatisfiedCircuit { seed: 9, steps: 3000 }
}

fn spawn_child(test: &str, envs: &[(&str, String)]) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until the child has stalled mid-write (its marker exists).
fn wait_stalled(child: &mut Child, marker: &Path) {
    let t = Instant::now();
    while !marker.exists() {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the child exited ({st}) before stalling in its write");
        }
        assert!(t.elapsed() < Duration::from_secs(600), "the child never reached its write");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(mut child: Child) {
    child.kill().unwrap(); // SIGKILL: no destructor, no cleanup runs in the child
    child.wait().unwrap();
}

fn stall(name: &str, bytes: u64, marker: &Path) -> (&'static str, String) {
    (STALL_ENV, format!("{name}:{bytes}:{}", marker.display()))
}

/// In the child: installs the stall hook its parent asked for (see [`STALL_ENV`]).
fn install_stall_hook() {
    let v = std::env::var(STALL_ENV).unwrap_or_else(|_| panic!("the child needs {STALL_ENV}"));
    let mut it = v.splitn(3, ':');
    let (name, bytes, marker) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    set_stall_hook(StallHook { name_contains: name.into(), bytes: bytes.parse().unwrap(), marker: PathBuf::from(marker) });
}

#[test]
#[ignore = "run as a child process by pce_cache_write_killed_midway_is_never_trusted"]
fn child_builds_the_cache() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    install_stall_hook();
    let path = PathBuf::from(std::env::var(TARGET).unwrap());
    cache::load_or_build(&path, "new identity", || cuzk_pce::extract(circuit())).unwrap();
    panic!("the stall hook should have stopped this write");
}

#[test]
fn pce_cache_write_killed_midway_is_never_trusted() {
    let d = tempfile::tempdir().unwrap();
    let pce = cuzk_pce::extract(circuit()).unwrap();
    for old in [false, true] {
        let path = d.path().join(format!("killed-{old}.pce"));
        let old_bytes = old.then(|| {
            cache::store(&path, "old identity", &pce).unwrap();
            std::fs::read(&path).unwrap()
        });
        let marker = d.path().join(format!("stalled-{old}"));
        let stalled_at = 300;
        let mut child =
            spawn_child("child_builds_the_cache", &[stall("killed-", stalled_at, &marker), (TARGET, path.display().to_string())]);
        wait_stalled(&mut child, &marker);
        let temps = temp_files(&path);
        assert_eq!(temps.len(), 1, "the writer's temporary file: {temps:?}");
        assert_eq!(std::fs::metadata(&temps[0]).unwrap().len(), stalled_at, "part of the file is on disk");
        kill(child);

        // Nothing partial under the real name: the old file (if any) is intact, byte for byte.
        assert_eq!(std::fs::read(&path).ok(), old_bytes, "the real name must hold the old file or nothing");
        let want = if old { Reject::Stale } else { Reject::Missing };
        assert_eq!(cache::load(&path, "new identity").unwrap_err(), want);
        let (loaded, outcome) = cache::load_or_build(&path, "new identity", || cuzk_pce::extract(circuit())).unwrap();
        match outcome {
            Outcome::Built { reason, .. } => assert_eq!(reason, want),
            other => panic!("a later start must rebuild, not load: {other:?}"),
        }
        assert_eq!(loaded, pce);
        assert_eq!(cache::load(&path, "new identity").unwrap(), pce, "the rebuilt file loads");
        assert!(temp_files(&path).is_empty(), "the dead writer's leftover is removed");
    }
}

fn small_params() -> bellperson::groth16::Parameters<blstrs::Bls12> {
    let secrets = cuzk_pce::paramgen::Secrets::random(&mut <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(4));
    cuzk_pce::paramgen::generate_for(circuit(), &secrets).unwrap().0
}

#[test]
#[ignore = "run as a child process by parameter_write_killed_midway_is_never_trusted"]
fn child_writes_parameters() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    install_stall_hook();
    let path = PathBuf::from(std::env::var(TARGET).unwrap());
    cuzk_core::params::write_params(&path, &small_params()).unwrap();
    panic!("the stall hook should have stopped this write");
}

#[test]
fn parameter_write_killed_midway_is_never_trusted() {
    // `cuzk_filecoin::porep::test_params::ensure` decides from what is on disk: absent or damaged test
    // parameters are regenerated (its own tests); here the writer that `ensure` and every
    // other parameter write go through is killed mid-write.
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("v28-stacked-proof-of-replication-test.params");
    let marker = d.path().join("stalled");
    let mut child = spawn_child("child_writes_parameters", &[stall(".params", 1 << 16, &marker), (TARGET, path.display().to_string())]);
    wait_stalled(&mut child, &marker);
    let temps = temp_files(&path);
    assert_eq!(temps.len(), 1, "{temps:?}");
    kill(child);

    assert!(!path.exists(), "no parameter file under its real name");
    let e = cuzk_core::params::check_params_file(&path).unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()), "{e}");
    // Even read directly, the leftover is rejected as truncated: nothing trusts it.
    assert!(cuzk_core::params::check_params_file(&temps[0]).is_err());

    // The next write (a regeneration) replaces it and removes the leftover.
    let p = small_params();
    cuzk_core::params::write_params(&path, &p).unwrap();
    let layout = cuzk_core::params::check_params_file(&path).unwrap();
    assert_eq!(layout.h, p.h.len());
    assert!(temp_files(&path).is_empty(), "the dead writer's leftover is removed");
}
