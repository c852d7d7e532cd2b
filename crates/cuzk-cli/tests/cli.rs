//! The `cuzk` binary as a user runs it: the demo, prove/verify round trips, and every bad
//! input giving a one-line error that names the file, a non-zero exit and no output file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")
}

fn cuzk(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    c.args(args).env("RUST_LOG", "warn");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Makes sure the shared test parameters exist; returns the .params and .vk paths.
fn shared_params() -> (PathBuf, PathBuf) {
    let o = cuzk(&["params", "ensure", "--sector-size", "2KiB"], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = cuzk(&["params", "path", "--sector-size", "2KiB"], &[]);
    let out = text(&o.stdout);
    let mut lines = out.lines();
    (PathBuf::from(lines.next().unwrap()), PathBuf::from(lines.next().unwrap()))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn assert_clean_failure(o: &Output, must_name: &str, must_say: &str, out_file: &Path) {
    assert_eq!(o.status.code(), Some(2), "stdout {} stderr {}", text(&o.stdout), text(&o.stderr));
    let err = text(&o.stderr);
    let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("no error line: {err}"));
    assert!(line.contains(must_name) && line.contains(must_say), "{line}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out_file.exists(), "partial output left at {}", out_file.display());
}

#[test]
fn demo_proves_the_bundled_sector_and_the_proof_verifies_only_untampered() {
    shared_params();
    let dir = tempfile::tempdir().unwrap();
    let proof = dir.path().join("demo.proof");
    let trace = dir.path().join("trace.json");
    let o = cuzk(&["demo", "--out", s(&proof), "--trace", s(&trace)], &[]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    let bytes = std::fs::read(&proof).unwrap();
    assert_eq!(bytes.len(), 192);
    assert!(out.contains(&hex_of(&bytes)) && out.contains("verify_seal: VALID") && out.contains("peak RSS"), "{out}");
    assert!(out.contains("new path") && out.contains("new-path breakdown"), "{out}");
    let rows: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let stages: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["stage"].as_str().unwrap()).collect();
    // Loading, then the engine's stages of the proof (finalize assembles and runs verify_seal).
    assert_eq!(stages, ["load-params", "pce-load", "parse", "witness", "mat-vec", "prove", "finalize"]);

    let o = cuzk(&["verify", "--c1", s(&fixture()), "--proof", s(&proof)], &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout).trim(), "VALID");
    let mut flipped = bytes.clone();
    flipped[77] ^= 0x10;
    let bad = dir.path().join("flipped.proof");
    std::fs::write(&bad, &flipped).unwrap();
    let o = cuzk(&["verify", "--c1", s(&fixture()), "--proof", s(&bad)], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(text(&o.stdout).starts_with("INVALID"));
    // The right proof for the wrong sector number is invalid too.
    let o = cuzk(&["verify", "--c1", s(&fixture()), "--proof", s(&proof), "--sector-number", "2"], &[]);
    assert_ne!(o.status.code(), Some(0));
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn bad_parameter_files_are_named_and_nothing_is_written() {
    let (params, vk) = shared_params();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never.proof");
    let c1 = fixture();
    let prove = |cache: &Path| cuzk(&["prove", "--c1", s(&c1), "--out", s(&out)], &[("FIL_PROOFS_PARAMETER_CACHE", cache)]);
    let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_clean_failure(&prove(&empty), &name(&params), "missing Groth16 parameters", &out);

    // Truncated .params next to a good .vk.
    let cut = dir.path().join("cut");
    std::fs::create_dir(&cut).unwrap();
    let head = {
        use std::io::Read;
        let mut v = vec![0u8; 4 << 20];
        std::fs::File::open(&params).unwrap().read_exact(&mut v).unwrap();
        v
    };
    std::fs::write(cut.join(name(&params)), head).unwrap();
    std::fs::copy(&vk, cut.join(name(&vk))).unwrap();
    assert_clean_failure(&prove(&cut), &name(&params), "truncated", &out);

    // Good .params, missing .vk, then truncated .vk.
    let novk = dir.path().join("novk");
    std::fs::create_dir(&novk).unwrap();
    std::os::unix::fs::symlink(&params, novk.join(name(&params))).unwrap();
    assert_clean_failure(&prove(&novk), &name(&vk), "No such file", &out);
    let vk_bytes = std::fs::read(&vk).unwrap();
    std::fs::write(novk.join(name(&vk)), &vk_bytes[..vk_bytes.len() - 10]).unwrap();
    assert_clean_failure(&prove(&novk), &name(&vk), "truncated", &out);
}

#[test]
fn bad_c1_files_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never.proof");
    let full = std::fs::read(fixture()).unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("truncated.json", full[..full.len() - 100].to_vec(), "truncated"),
        ("garbage.json", b"PK\x03\x04 not json".to_vec(), "not JSON"),
        ("foreign.json", br#"{"proof": [1, 2, 3]}"#.to_vec(), "not a C1"),
    ];
    for (file, bytes, says) in cases {
        let p = dir.path().join(file);
        std::fs::write(&p, bytes).unwrap();
        let o =
            cuzk(&["prove", "--c1", s(&p), "--out", s(&out), "--sector-size", "2KiB", "--miner-id", "1000", "--sector-number", "1"], &[]);
        assert_clean_failure(&o, file, says, &out);
    }
    // Wrong sector size for the file.
    let o = cuzk(&["prove", "--c1", s(&fixture()), "--out", s(&out), "--sector-size", "512MiB"], &[]);
    assert_clean_failure(&o, "c1.json", "512MiB", &out);
    // No metadata and no identity flags.
    let lone = dir.path().join("lone.json");
    std::fs::write(&lone, &full).unwrap();
    let o = cuzk(&["prove", "--c1", s(&lone), "--out", s(&out)], &[]);
    assert_clean_failure(&o, "lone.json", "--miner-id", &out);
    // An unsupported size.
    let o = cuzk(&["params", "ensure", "--sector-size", "3KiB"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unsupported sector size"));
}

#[test]
fn a_synthetic_c1_is_benchmarked_but_never_proved_as_if_real() {
    let dir = tempfile::tempdir().unwrap();
    let o = cuzk(&["gen-c1", "--synthetic", "--sector-size", "2KiB", "--seed", "9", "--out", s(dir.path())], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("SYNTHETIC"), "{}", text(&o.stdout));
    let c1 = dir.path().join("c1.json");
    let out = dir.path().join("never.proof");
    let o = cuzk(&["prove", "--c1", s(&c1), "--out", s(&out)], &[]);
    assert_clean_failure(&o, "c1.json", "synthetic", &out);
    let o = cuzk(&["bench", "witness-modes", "--c1", s(&c1)], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("SYNTHETIC") && stdout.contains("witnesses: EQUAL"), "{stdout}");
}

#[test]
fn help_explains_the_commands() {
    let o = cuzk(&["--help"], &[]);
    let h = text(&o.stdout);
    for cmd in ["demo", "prove", "verify", "gen-c1", "params", "bench"] {
        assert!(h.contains(cmd), "{cmd} missing from --help: {h}");
    }
    let o = cuzk(&["prove", "--help"], &[]);
    assert!(text(&o.stdout).contains("--no-verify"));
}

#[test]
fn prove_several_c1_files_through_the_pipeline_and_each_proof_verifies() {
    shared_params();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("proofs");
    let f = fixture();
    let o = cuzk(&["prove", "--c1", s(&f), "--c1", s(&f), "--out", s(&out), "-j", "2", "--backend", "cpu"], &[]);
    let stdout = text(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", text(&o.stderr));
    let mut proofs = Vec::new();
    for k in 0..2 {
        let p = out.join(format!("{k}-c1.proof"));
        assert!(stdout.contains(&format!("wrote {}", p.display())) && stdout.contains("verified with verify_seal"), "{stdout}");
        let v = cuzk(&["verify", "--c1", s(&f), "--proof", s(&p)], &[]);
        assert_eq!(text(&v.stdout).trim(), "VALID", "{}", text(&v.stderr));
        proofs.push(std::fs::read(&p).unwrap());
    }
    assert_ne!(proofs[0], proofs[1], "fresh r and s per proof");
    let leftovers: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 2, "only the two proofs may be written: {leftovers:?}");

    // One unreadable input among good ones: named, non-zero exit, refused before any proving.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{\"not\": \"a c1\"}").unwrap();
    let out2 = dir.path().join("proofs2");
    let o = cuzk(&["prove", "--c1", s(&f), "--c1", s(&bad), "--out", s(&out2), "--backend", "cpu"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("bad.json"), "{}", text(&o.stderr));
    assert!(!out2.exists(), "nothing may be written when an input is refused");
}

#[test]
fn pce_pipeline_bench_rejects_bad_arguments_with_one_line() {
    let o = cuzk(&["bench", "pce-pipeline", "--c1", s(&fixture()), "--num-proofs", "0"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--num-proofs and -j must be at least 1"), "{}", text(&o.stderr));
    let o = cuzk(&["bench", "pce-pipeline", "--help"], &[]);
    let help = text(&o.stdout);
    for flag in ["--num-proofs", "--jobs", "--compare-old", "--trace", "--plot", "--project-gpus", "--pipelines-per-gpu"] {
        assert!(help.contains(flag), "--help lacks {flag}: {help}");
    }
}

#[test]
fn pce_pipeline_without_a_warm_up_reports_growth_but_does_not_judge_it_a_leak() {
    shared_params();
    let dir = tempfile::tempdir().unwrap();
    let (json, c1) = (dir.path().join("pipe.json"), fixture());
    let o =
        cuzk(&["bench", "pce-pipeline", "--c1", s(&c1), "--backend", "cpu", "--num-proofs", "1", "--warmup", "0", "--json", s(&json)], &[]);
    let stdout = text(&o.stdout);
    let leak_line =
        stdout.lines().find(|l| l.starts_with("leak check:")).unwrap_or_else(|| panic!("no leak line: {stdout}\n{}", text(&o.stderr)));
    assert!(leak_line.contains("not judged"), "{leak_line}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!((r["warmup"].as_u64(), r["leak_checked"].as_bool(), r["leak_ok"].as_bool()), (Some(0), Some(false), Some(true)), "{r}");
    assert_eq!(r["all_verified"].as_bool(), Some(true), "{r}");
    assert!(r["device_held_fraction"].is_null(), "no GPU, no device share: {r}");
}

#[test]
fn post_load_bench_refuses_pieces_and_graces_out_of_range_before_any_work() {
    for (flag, value, says) in [("--msm-piece-log2", "0,12", "12 is not 0"), ("--urgent-grace-ms", "5000", "5000")] {
        let o = cuzk(&["bench", "post-load", "--post", "none.json", "--c1", "none.json", flag, value], &[]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let e = text(&o.stderr);
        assert!(e.contains(flag) && e.contains(says), "{flag} {value}: {e}");
    }
}

/// `cuzk daemon` on a unix socket driven by `cuzk client`: status, a garbage C1 answered
/// FAILED (exit 1, reason printed), a real 2 KiB job submitted and awaited by another client
/// process while SIGTERM arrives — the in-flight job still completes (its proof verifies),
/// the daemon exits 0 and removes its socket; `--print-config` shows env overrides and a bad
/// config key is refused with its name.
#[test]
fn daemon_serves_clients_and_drains_on_sigterm() {
    shared_params();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cuzk.toml");
    std::fs::write(&cfg, "[engine]\nsynthesis_workers = 1\nbackend = \"cpu\"\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--print-config", "--config", s(&cfg)])
        .env("CUZK_PROVERS_PER_DEVICE", "3")
        .output()
        .unwrap();
    let shown = text(&o.stdout);
    assert!(o.status.success() && shown.contains("provers_per_device = 3") && shown.contains("synthesis_workers = 1"), "{shown}");
    std::fs::write(dir.path().join("bad.toml"), "[engine]\nbakend = \"cpu\"\n").unwrap();
    let o = cuzk(&["daemon", "--print-config", "--config", s(&dir.path().join("bad.toml"))], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("bakend"), "{}", text(&o.stderr));

    let sock = dir.path().join("d.sock");
    let addr = format!("unix://{}", sock.display());
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--config", s(&cfg), "--listen", &addr])
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while !sock.exists() {
        assert!(t.elapsed().as_secs() < 60, "the daemon did not create its socket");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let o = cuzk(&["client", "--addr", &addr, "status"], &[]);
    assert!(o.status.success() && text(&o.stdout).contains("device 0: cpu"), "{}", text(&o.stdout));
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"not\": \"a c1\"}").unwrap();
    let o = cuzk(
        &[
            "client",
            "--addr",
            &addr,
            "prove",
            "--c1",
            s(&garbage),
            "--miner-id",
            "1",
            "--sector-number",
            "1",
            "--out",
            s(&dir.path().join("g.proof")),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).contains("FAILED") && text(&o.stdout).contains("vanilla_proof"), "{}", text(&o.stdout));
    assert!(!dir.path().join("g.proof").exists(), "a failed job writes no proof");

    let c1 = fixture();
    let o = cuzk(&["client", "--addr", &addr, "submit", "--c1", s(&c1)], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let job = text(&o.stdout).trim().to_string();
    let proof = dir.path().join("p.proof");
    let waiter = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["client", "--addr", &addr, "await", "--job-id", &job, "--out", s(&proof)])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // SIGTERM once the daemon has the job in its engine (or already finished it), not after a
    // fixed sleep that a slow machine may not have reached.
    let t = std::time::Instant::now();
    loop {
        let o = cuzk(&["client", "--addr", &addr, "status"], &[]);
        let shown = text(&o.stdout);
        if shown.contains("1 in progress") || shown.contains("1 completed") {
            break;
        }
        assert!(t.elapsed().as_secs() < 120, "the job never started: {shown}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let k = Command::new("kill").args(["-TERM", &daemon.id().to_string()]).status().unwrap();
    assert!(k.success());
    let w = waiter.wait_with_output().unwrap();
    assert!(w.status.success(), "the in-flight job must complete during the drain: {}", text(&w.stdout));
    assert!(text(&w.stdout).contains("COMPLETED"));
    let status = daemon.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(daemon.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "daemon exit {status:?}: {err}");
    assert!(err.contains("stopped"), "{err}");
    assert!(!sock.exists(), "the socket is removed on exit");
    let o = cuzk(&["verify", "--c1", s(&c1), "--proof", s(&proof)], &[]);
    assert!(o.status.success() && text(&o.stdout).contains("VALID"), "{}", text(&o.stdout));
}

/// Output into a pipe nobody reads (`cuzk params path | head -1` after head exits): the
/// command ends quietly with success instead of panicking on the failed write.
#[test]
fn a_closed_stdout_pipe_ends_the_command_quietly() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["params", "path", "--sector-size", "2KiB"])
        .env("RUST_LOG", "warn")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert!(o.status.success() && !err.contains("panicked"), "{:?}: {err}", o.status);
}

/// A device budget that is not a byte size is refused by name before anything runs.
#[test]
fn a_bad_device_budget_is_refused_by_name() {
    for cmd in [&["bench", "partition", "--c1", "x.json"][..], &["bench", "pce-pipeline", "--c1", "x.json"][..]] {
        let o = cuzk(&[cmd, &["--device-budget", "lots"]].concat(), &[]);
        let err = text(&o.stderr);
        assert!(!o.status.success() && err.contains("--device-budget") && err.contains("lots"), "{cmd:?}: {err}");
    }
}
