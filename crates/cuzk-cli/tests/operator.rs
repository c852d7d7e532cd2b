//! What an operator sees: the default log level (cuzk's lines, no third-party info lines),
//! JSON logs, progress lines when stderr is not a terminal, the check order (an input's own
//! fault named before a missing parameter file), and `cuzk doctor`'s verdicts and exit code.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/2kib/c1.json")
}

/// `cuzk` with the default log filter (no RUST_LOG), and `env` added.
fn cuzk(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuzk"));
    c.args(args).env_remove("RUST_LOG");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ensure_params() {
    let o = cuzk(&["params", "ensure", "--sector-size", "2KiB"], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn default_json_logs_are_cuzk_only_and_report_progress() {
    ensure_params();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.proof");
    let f = fixture();
    let o = cuzk(&["--log-format", "json", "prove", "--c1", f.to_str().unwrap(), "--out", out.to_str().unwrap()], &[]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    let lines: Vec<serde_json::Value> =
        err.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}"))).collect();
    assert!(!lines.is_empty());
    for l in &lines {
        let target = l["target"].as_str().unwrap_or_default();
        // verify_seal and the parameter cache log at info in filecoin-proofs and storage-proofs:
        // at the default level only their warnings may show.
        assert!(target.starts_with("cuzk") || l["level"] != "INFO", "third-party info line: {l}");
    }
    let progress: Vec<&serde_json::Value> = lines.iter().filter(|l| l["target"] == "cuzk::cli::progress").collect();
    let last = progress.last().unwrap_or_else(|| panic!("no progress line in {err}"));
    let msg = last["fields"]["message"].as_str().unwrap();
    assert!(msg.starts_with("proving: 1 partitions done in"), "{msg}");
}

#[test]
fn a_c1_claimed_for_another_size_is_named_before_the_missing_parameters() {
    // The bundled 2 KiB C1 stripped to filecoin-proofs' plain form (no registered_proof) and
    // declared 8 MiB: the 8 MiB parameters are missing here, but the input is what is wrong.
    let dir = tempfile::tempdir().unwrap();
    let mut c1: serde_json::Value = serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    let obj = c1.as_object_mut().unwrap();
    obj.remove("registered_proof");
    let vanilla = obj["vanilla_proofs"].as_object().unwrap().values().next().unwrap().clone();
    obj.insert("vanilla_proofs".into(), vanilla);
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, serde_json::to_vec(&c1).unwrap()).unwrap();
    let empty_params = dir.path().join("params");
    std::fs::create_dir(&empty_params).unwrap();
    let out = dir.path().join("p.proof");
    let o = cuzk(
        &[
            "prove",
            "--c1",
            plain.to_str().unwrap(),
            "--sector-size",
            "8MiB",
            "--miner-id",
            "1000",
            "--sector-number",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("FIL_PROOFS_PARAMETER_CACHE", &empty_params)],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let line = err.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("no error line: {err}"));
    assert!(line.contains("plain.json"), "the error must name the input: {line}");
    assert!(!line.contains("missing Groth16 parameters"), "blamed on the parameters: {line}");
    assert!(!out.exists());
}

#[test]
fn doctor_fails_on_missing_and_damaged_parameters_and_passes_when_ready() {
    ensure_params();
    let ready = cuzk(&["doctor", "--sector-size", "2KiB"], &[]);
    let report = text(&ready.stdout);
    assert_eq!(ready.status.code(), Some(0), "{report}{}", text(&ready.stderr));
    assert!(report.contains("porep 2KiB parameters") && report.contains("TEST parameters"), "{report}");
    assert!(report.lines().all(|l| ["OK  ", "INFO", "WARN", "ready"].iter().any(|t| l.starts_with(t))), "{report}");

    let dir = tempfile::tempdir().unwrap();
    let missing = cuzk(&["doctor", "--sector-size", "2KiB"], &[("FIL_PROOFS_PARAMETER_CACHE", dir.path())]);
    let report = text(&missing.stdout);
    assert_eq!(missing.status.code(), Some(1), "{report}");
    assert!(report.lines().any(|l| l.starts_with("FAIL  porep 2KiB parameters") && l.contains("cuzk params ensure")), "{report}");

    // An official file name with other contents and no test marker: damaged.
    let o = cuzk(&["params", "path", "--sector-size", "2KiB"], &[]);
    let vk = PathBuf::from(text(&o.stdout).lines().nth(1).unwrap());
    std::fs::write(dir.path().join(vk.file_name().unwrap()), b"not a verifying key").unwrap();
    let damaged = cuzk(&["doctor", "--sector-size", "2KiB"], &[("FIL_PROOFS_PARAMETER_CACHE", dir.path())]);
    let report = text(&damaged.stdout);
    assert_eq!(damaged.status.code(), Some(1), "{report}");
    assert!(report.lines().any(|l| l.starts_with("FAIL  file ") && l.contains("damaged or foreign")), "{report}");
}

#[test]
fn gen_post_then_prove_post_writes_verified_proofs_and_refuses_a_c1() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = cuzk(&["gen-post", "--sector-size", "2KiB", "--sectors", "3", "--out", d.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    assert!(said.contains("winning.json") && said.contains("window-0.json") && said.contains("window-1.json"), "{said}");
    // Lotus numbers: 0 is WinningPoSt 2KiB, 10 WindowPoSt 2KiB (V1_1).
    for n in ["0", "10"] {
        let o = cuzk(&["params", "ensure", "--post", n], &[]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    for (file, verifier) in
        [("winning.json", "verify_winning_post"), ("window-0.json", "verify_window_post"), ("window-1.json", "verify_window_post")]
    {
        let out = d.join(format!("{file}.proof"));
        let input = d.join(file);
        let o = cuzk(&["prove", "--post", input.to_str().unwrap(), "--out", out.to_str().unwrap(), "--backend", "cpu"], &[]);
        let said = text(&o.stdout);
        assert!(o.status.success(), "{file}: {}", text(&o.stderr));
        assert!(said.contains(&format!("verified with {verifier}")), "{file}: {said}");
        let proof = std::fs::read(&out).unwrap();
        // The official verifier in this process, over the same parameter directory.
        cuzk_filecoin::Settings::from_vars(|k| std::env::var_os(k)).apply().unwrap();
        let request = cuzk_filecoin::post::PostInput::from_file_bytes(file, &std::fs::read(&input).unwrap()).unwrap();
        cuzk_filecoin::post::verify::ensure_valid(&request, &proof).unwrap();
    }
    // A C1 given as a PoSt request: one error line naming the file, no proof written.
    let out = d.join("c1.proof");
    let f = fixture();
    let o = cuzk(&["prove", "--post", f.to_str().unwrap(), "--out", out.to_str().unwrap(), "--backend", "cpu"], &[]);
    let err = text(&o.stderr);
    assert!(!o.status.success() && err.contains("c1.json") && err.contains("not a PoSt request file"), "{err}");
    assert!(!out.exists());
}

#[test]
fn gen_update_then_prove_update_writes_a_verified_proof_and_refuses_a_c1() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = cuzk(&["gen-update", "--sector-size", "2KiB", "--out", d.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = cuzk(&["params", "ensure", "--update", "0"], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (input, out) = (d.join("update.json"), d.join("update.proof"));
    let o = cuzk(&["prove", "--update", input.to_str().unwrap(), "--out", out.to_str().unwrap(), "--backend", "cpu"], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("verified with verify_empty_sector_update_proof"), "{}", text(&o.stdout));
    // The official verifier in this process, over the same parameter directory.
    cuzk_filecoin::Settings::from_vars(|k| std::env::var_os(k)).apply().unwrap();
    let request = cuzk_filecoin::update::UpdateInput::from_file_bytes("update.json", &std::fs::read(&input).unwrap()).unwrap();
    cuzk_filecoin::update::verify::ensure_valid(&request, &std::fs::read(&out).unwrap()).unwrap();
    // A C1 given as an update request, and an update request given as PoSt: one error line
    // naming the file, no proof written.
    let bad_out = d.join("bad.proof");
    let f = fixture();
    let o = cuzk(&["prove", "--update", f.to_str().unwrap(), "--out", bad_out.to_str().unwrap(), "--backend", "cpu"], &[]);
    let err = text(&o.stderr);
    assert!(!o.status.success() && err.contains("c1.json") && err.contains("not a SnapDeals request file"), "{err}");
    let o = cuzk(&["prove", "--post", input.to_str().unwrap(), "--out", bad_out.to_str().unwrap(), "--backend", "cpu"], &[]);
    assert!(!o.status.success() && text(&o.stderr).contains("not a PoSt request file"), "{}", text(&o.stderr));
    assert!(!bad_out.exists());
}

#[test]
fn a_synthetic_update_is_proved_only_with_verification_off() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = cuzk(&["gen-update", "--synthetic", "--sector-size", "2KiB", "--out", d.to_str().unwrap()], &[]);
    assert!(o.status.success() && text(&o.stdout).contains("synthetic"), "{}", text(&o.stderr));
    let o = cuzk(&["params", "ensure", "--update", "0"], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (input, out) = (d.join("update.json"), d.join("update.proof"));
    let prove = |extra: &[&str]| {
        let mut args = vec!["prove", "--update", input.to_str().unwrap(), "--out", out.to_str().unwrap(), "--backend", "cpu"];
        args.extend(extra);
        cuzk(&args, &[])
    };
    let o = prove(&[]);
    let err = text(&o.stderr);
    assert!(!o.status.success() && err.contains("synthetic") && err.contains("--no-verify"), "{err}");
    assert!(!out.exists(), "nothing is written for a refused request");
    let o = prove(&["--no-verify"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("NOT verified"), "{}", text(&o.stdout));
    assert_eq!(std::fs::read(&out).unwrap().len(), 192, "one partition's proof at 2 KiB");
    // The partition benchmark takes it too (random parameters: timing only); its repeated
    // proofs with one (r, s) must agree.
    let json = d.join("partition.json");
    let o = cuzk(
        &[
            "bench",
            "partition",
            "--update",
            input.to_str().unwrap(),
            "--backend",
            "cpu",
            "--device-budget",
            "1GiB",
            "--reps",
            "2",
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success() && text(&o.stdout).contains("SYNTHETIC"), "{}{}", text(&o.stdout), text(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["proofs_equal"], true, "{r}");
    assert!(r["runs"].as_array().is_some_and(|runs| runs.len() >= 2), "{r}");
}
