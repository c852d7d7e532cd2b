//! `cargo xtask ...`: the project's own automation. `demo` builds the release binary and
//! proves the bundled 2 KiB sector (making test parameters on first run); `test` runs the
//! whole test suite exactly as CI does; `bench-params` reruns the parameter-generation
//! benchmark recorded in docs/RESULTS.md.

use std::process::Command;

use anyhow::{bail, Context, Result};

const USAGE: &str = "usage: cargo xtask <demo|test|bench-params> [args passed through]

  demo          build cuzk in release mode and prove + verify the bundled 2 KiB sector
  test          run the whole test suite (what .ci/run runs)
  bench-params  cuzk vs bellperson parameter generation for 2 KiB, JSON to docs/bench/";

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

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let cmd = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
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
            c.current_dir(&root).args([
                "run", "--release", "-p", "cuzk-cli", "--", "bench", "params", "--sector-size", "2KiB",
                "--json", "docs/bench/params-2kib.json",
            ]).args(&rest);
            run(c)
        }
        "" | "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => bail!("unknown xtask command {other:?}\n{USAGE}"),
    }
}
