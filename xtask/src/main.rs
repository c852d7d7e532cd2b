//! `cargo xtask ...`: the project's own automation. `demo` builds the release binary and
//! proves the bundled 2 KiB sector (making test parameters on first run); `test` runs the
//! whole test suite as CI does; `bench-params` reruns the parameter-generation
//! benchmark; `cuda-setup` installs the pinned CUDA 13.0 toolkit wheels into a virtualenv under
//! target/ (idempotent); `build --cuda` builds `cuzk` with the CUDA backend; `cuda-check`
//! compiles the CUDA code and tests of the workspace (what CI runs, no GPU needed);
//! `check-deps` fails if a generic crate depends on the Filecoin crates (see check_deps.rs);
//! `build --supraseal` builds the SupraSeal side-by-side harness; `gpu-pack` builds both GPU
//! binaries and packs everything the GPU check needs into one folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

mod check_deps;

const USAGE: &str = "usage: cargo xtask <command> [args]

  demo          build cuzk in release mode and prove + verify the bundled 2 KiB sector
  test          run the whole test suite (`cargo test --workspace`, one of the .ci/run steps)
  bench-params  cuzk vs bellperson parameter generation for 2 KiB, JSON to docs/bench/
  cuda-setup    install the pinned CUDA 13.0 wheels (xtask/cuda-requirements.txt) into
                target/cuda-venv; prints the CUDA_HOME it made. Idempotent.
  build --cuda  build `cuzk` (release) with the CUDA backend, copied to target/cuda-bin/cuzk
                (sm_90; CUZK_CUDA_ARCH=89 etc. to change)
  build --supraseal
                build the SupraSeal side-by-side harness `cuzk-supraseal` (release, links
                supraseal-c2), copied to target/cuda-bin/cuzk-supraseal
  cuda-check    compile the CUDA code (cuzk-gpu with feature cuda, the SupraSeal harness)
                and cuzk-gpu's CUDA tests (not run), nvcc included, no GPU needed
  check-deps    fail if cuzk-core, -witness, -pce, -gpu or -pipeline depends (normal or build
                dependency, directly or not) on filecoin-proofs(-api), filecoin-hashers or
                storage-proofs-*; prints a dependency path for each
  gpu-pack      build --cuda and --supraseal, then pack target/gpu-pack/ (binaries, fixture,
                gpu-check.sh) for the GPU machine: run `bash target/gpu-pack/gpu-check.sh OUTDIR`
                there";

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run(mut c: Command) -> Result<()> {
    eprintln!("xtask: running {c:?}");
    let status = c.status().with_context(|| format!("cannot start {c:?}"))?;
    if !status.success() {
        bail!("{c:?} failed with {status}");
    }
    Ok(())
}

/// Installs the CUDA wheels unless the venv already holds exactly the pinned set; returns
/// the toolkit root (`.../site-packages/nvidia/cu13`).
fn cuda_setup(root: &Path) -> Result<PathBuf> {
    let req = root.join("xtask/cuda-requirements.txt");
    let pins = std::fs::read_to_string(&req).with_context(|| format!("reading {}", req.display()))?;
    let venv = root.join("target/cuda-venv");
    let stamp = venv.join("cuzk-cuda-pins.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(pins.as_str()) {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        if !venv.join("bin/pip").exists() {
            let mut c = Command::new(&python);
            c.args(["-m", "venv"]).arg(&venv);
            run(c).context("making the CUDA virtualenv (needs python3 with venv)")?;
        }
        let mut c = Command::new(venv.join("bin/pip"));
        c.args(["install", "--quiet", "--disable-pip-version-check", "--no-deps", "--require-hashes", "-r"]).arg(&req);
        run(c).context("installing the pinned CUDA wheels (needs network access to PyPI)")?;
        std::fs::write(venv.join("cuzk-cuda-pins.txt.tmp"), &pins)?;
        std::fs::rename(venv.join("cuzk-cuda-pins.txt.tmp"), &stamp)?;
    }
    let lib = venv.join("lib");
    for e in std::fs::read_dir(&lib).with_context(|| format!("reading {}", lib.display()))? {
        let home = e?.path().join("site-packages/nvidia/cu13");
        if home.join("bin/nvcc").exists() {
            return Ok(home);
        }
    }
    bail!("no nvidia/cu13/bin/nvcc under {}: remove target/cuda-venv and run cargo xtask cuda-setup again", lib.display())
}

/// A cargo command with the CUDA toolkit of `home` in its environment.
fn cuda_cargo(home: &Path) -> Command {
    let mut c = cargo();
    let path = format!("{}:{}", home.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    c.env("CUDA_HOME", home).env("CUDA_PATH", home).env("PATH", path).env("LIBRARY_PATH", home.join("lib"));
    c
}

/// Builds `bin` of `package` in release mode with `feature` and the CUDA toolkit, and copies
/// it to target/cuda-bin/ (same target dir as the CPU build, so dependencies are shared).
fn build_cuda_bin(root: &Path, package: &str, feature: &str, bin: &str) -> Result<PathBuf> {
    let home = cuda_setup(root)?;
    let mut c = cuda_cargo(&home);
    c.current_dir(root).args(["build", "--release", "-p", package, "--features", feature]);
    run(c)?;
    let dir = root.join("target/cuda-bin");
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!("{bin}.tmp"));
    std::fs::copy(root.join("target/release").join(bin), &tmp)?;
    std::fs::rename(&tmp, dir.join(bin))?;
    Ok(dir.join(bin))
}

/// The GPU machine's `cuzk`: the CUDA backend, and fault injection for gpu-check.sh's drill
/// (a build without it refuses `CUZK_INJECT_FAULT`).
fn build_cuda(root: &Path) -> Result<PathBuf> {
    build_cuda_bin(root, "cuzk-cli", "cuzk-cli/cuda,cuzk-cli/fault-injection", "cuzk")
}

fn build_supraseal(root: &Path) -> Result<PathBuf> {
    build_cuda_bin(root, "cuzk-supraseal", "supraseal", "cuzk-supraseal")
}

fn gpu_pack(root: &Path) -> Result<()> {
    let bin = build_cuda(root)?;
    let harness = build_supraseal(root)?;
    let pack = root.join("target/gpu-pack");
    let tmp = root.join("target/gpu-pack.tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("fixtures"))?;
    std::fs::copy(&bin, tmp.join("cuzk"))?;
    std::fs::copy(&harness, tmp.join("cuzk-supraseal"))?;
    let mut c = Command::new("cp");
    c.arg("-r").arg(root.join("fixtures/2kib")).arg(tmp.join("fixtures/2kib"));
    run(c)?;
    std::fs::copy(root.join("xtask/gpu-check.sh"), tmp.join("gpu-check.sh"))?;
    let _ = std::fs::remove_dir_all(&pack);
    std::fs::rename(&tmp, &pack)?;
    println!("packed {} (carry it to the GPU machine and run: bash gpu-check.sh OUTDIR)", pack.display());
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let cmd = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize()?;
    match cmd.as_str() {
        "demo" => {
            let mut c = cargo();
            c.current_dir(&root).args(["run", "--release", "-p", "cuzk-cli", "--", "demo"]).args(&rest);
            run(c)
        }
        "test" => {
            let mut c = cargo();
            c.current_dir(&root).args(["test", "--workspace"]).args(&rest);
            run(c)
        }
        "bench-params" => {
            std::fs::create_dir_all(root.join("docs/bench"))?;
            let mut c = cargo();
            c.current_dir(&root)
                .args([
                    "run",
                    "--release",
                    "-p",
                    "cuzk-cli",
                    "--",
                    "bench",
                    "params",
                    "--sector-size",
                    "2KiB",
                    "--json",
                    "docs/bench/params-2kib.json",
                ])
                .args(&rest);
            run(c)
        }
        "cuda-setup" => {
            let home = cuda_setup(&root)?;
            println!("CUDA_HOME={}", home.display());
            Ok(())
        }
        "build" => {
            let bin = match rest.first().map(String::as_str) {
                Some("--cuda") => build_cuda(&root)?,
                Some("--supraseal") => build_supraseal(&root)?,
                _ => bail!("usage: cargo xtask build --cuda|--supraseal (the CPU build is plain `cargo build --release`)"),
            };
            println!("built {}", bin.display());
            Ok(())
        }
        "cuda-check" => {
            let home = cuda_setup(&root)?;
            let mut c = cuda_cargo(&home);
            // The test profile: after `cargo test` only cuzk-gpu and sppark are compiled anew.
            c.current_dir(&root).args([
                "build",
                "--profile",
                "test",
                "-p",
                "cuzk-gpu",
                "-p",
                "cuzk-supraseal",
                "--features",
                "cuzk-gpu/cuda,cuzk-supraseal/supraseal",
            ]);
            run(c)?;
            // Compile the CUDA tests too, so they cannot rot on machines without a GPU.
            let mut c = cuda_cargo(&home);
            c.current_dir(&root).args(["test", "--no-run", "--profile", "test", "-p", "cuzk-gpu", "--features", "cuzk-gpu/cuda"]);
            run(c)
        }
        "check-deps" => check_deps::run(&root),
        "gpu-pack" => gpu_pack(&root),
        "" | "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown xtask command {other:?}\n{USAGE}"),
    }
}
