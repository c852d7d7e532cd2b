//! `cargo xtask check-deps`: keeps the generic crates (prover core, witness, PCE, GPU and
//! pipeline) free of the Filecoin proof crates. This module owns the list of generic crates,
//! the rule for what counts as a Filecoin crate, and the walk over the dependency graph that
//! `cargo metadata` resolves. Only normal and build dependencies are followed, so tests may
//! still use the Filecoin crates as oracles through dev-dependencies. The graph is the
//! workspace-wide one (features unified across all members, every target platform), so an
//! optional Filecoin dependency that any member switches on is caught too.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The crates that must build without any Filecoin crate.
pub const GENERIC_CRATES: &[&str] = &["cuzk-core", "cuzk-witness", "cuzk-pce", "cuzk-gpu", "cuzk-pipeline"];

/// Whether `name` is one of the Filecoin proof crates.
fn is_filecoin(name: &str) -> bool {
    matches!(name, "filecoin-proofs" | "filecoin-proofs-api" | "filecoin-hashers") || name.starts_with("storage-proofs-")
}

/// Runs `cargo metadata` in `root`, checks every generic crate and prints one line each.
pub fn run(root: &Path) -> Result<()> {
    let mut c = crate::cargo();
    c.current_dir(root).args(["metadata", "--format-version", "1"]).stderr(Stdio::inherit());
    let out = c.output().with_context(|| format!("cannot start {c:?}"))?;
    if !out.status.success() {
        bail!("{c:?} failed with {}", out.status);
    }
    let meta: Value = serde_json::from_slice(&out.stdout).context("parsing cargo metadata")?;
    for line in check(&meta, GENERIC_CRATES)? {
        println!("{line}");
    }
    Ok(())
}

/// Checks `crates` (workspace members) against the metadata `meta`: one "Filecoin-free" line
/// per crate, or an error naming each missing crate and each Filecoin crate reached, with a path.
pub fn check(meta: &Value, crates: &[&str]) -> Result<Vec<String>> {
    let graph = Graph::parse(meta)?;
    let mut clean = Vec::new();
    let mut problems = Vec::new();
    for &name in crates {
        let Some(root) = graph.member(name) else {
            problems.push(format!("{name}: not a workspace member (renamed? update GENERIC_CRATES in xtask/src/check_deps.rs)"));
            continue;
        };
        let reach = graph.reach(root);
        if reach.filecoin.is_empty() {
            clean.push(format!("{name}: Filecoin-free ({} packages)", reach.count));
        } else {
            problems.push(format!("{name} reaches {} Filecoin crate(s):", reach.filecoin.len()));
            problems.extend(reach.filecoin.iter().map(|(dep, path)| format!("  {dep}: {path}")));
        }
    }
    if !problems.is_empty() {
        bail!("generic crates must not depend on the Filecoin crates (normal and build dependencies):\n{}", problems.join("\n"));
    }
    Ok(clean)
}

/// The resolved dependency graph, keyed by package id.
struct Graph<'a> {
    names: HashMap<&'a str, &'a str>,
    /// Normal and build dependencies only.
    deps: HashMap<&'a str, Vec<&'a str>>,
    members: Vec<&'a str>,
}

/// What one crate reaches: how many packages it depends on (directly or not) and, for each
/// Filecoin crate among them, a shortest path to it ("a -> b -> filecoin-proofs").
struct Reach {
    count: usize,
    filecoin: BTreeMap<String, String>,
}

impl<'a> Graph<'a> {
    fn parse(meta: &'a Value) -> Result<Self> {
        let mut names = HashMap::new();
        for p in array(&meta["packages"], "packages")? {
            names.insert(text(&p["id"], "package id")?, text(&p["name"], "package name")?);
        }
        let members =
            array(&meta["workspace_members"], "workspace_members")?.iter().map(|m| text(m, "workspace member")).collect::<Result<_>>()?;
        let mut deps = HashMap::new();
        let nodes = array(&meta["resolve"]["nodes"], "resolve.nodes (was --no-deps used?)")?;
        for node in nodes {
            deps.insert(text(&node["id"], "node id")?, linked_deps(node)?);
        }
        Ok(Graph { names, deps, members })
    }

    /// The id of the workspace member called `name`.
    fn member(&self, name: &str) -> Option<&'a str> {
        self.members.iter().copied().find(|id| self.name(id) == name)
    }

    fn name(&self, id: &str) -> &'a str {
        self.names.get(id).copied().unwrap_or("?")
    }

    /// Breadth-first walk from `root`, so the recorded paths are shortest ones.
    fn reach(&self, root: &'a str) -> Reach {
        let mut parent: HashMap<&'a str, &'a str> = HashMap::from([(root, root)]);
        let mut queue = VecDeque::from([root]);
        let mut filecoin = BTreeMap::new();
        while let Some(id) = queue.pop_front() {
            if id != root && is_filecoin(self.name(id)) {
                filecoin.insert(self.name(id).to_string(), self.path(&parent, id));
            }
            for &dep in self.deps.get(id).into_iter().flatten() {
                if !parent.contains_key(dep) {
                    parent.insert(dep, id);
                    queue.push_back(dep);
                }
            }
        }
        Reach { count: parent.len() - 1, filecoin }
    }

    /// The names from the walk's root down to `id`, following `parent`.
    fn path(&self, parent: &HashMap<&'a str, &'a str>, mut id: &'a str) -> String {
        let mut names = vec![self.name(id)];
        while parent[id] != id {
            id = parent[id];
            names.push(self.name(id));
        }
        names.reverse();
        names.join(" -> ")
    }
}

/// The ids of the normal and build dependencies of one `resolve.nodes` entry.
fn linked_deps(node: &Value) -> Result<Vec<&str>> {
    let mut out = Vec::new();
    for dep in array(&node["deps"], "node deps")? {
        let kinds = array(&dep["dep_kinds"], "dep_kinds (cargo 1.41 or newer needed)")?;
        if kinds.iter().any(|k| k["kind"].is_null() || k["kind"] == "build") {
            out.push(text(&dep["pkg"], "dep pkg")?);
        }
    }
    Ok(out)
}

fn array<'v>(v: &'v Value, what: &str) -> Result<&'v Vec<Value>> {
    v.as_array().with_context(|| format!("cargo metadata: {what} is not an array"))
}

fn text<'v>(v: &'v Value, what: &str) -> Result<&'v str> {
    v.as_str().with_context(|| format!("cargo metadata: {what} is not a string"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `clean` uses only `util`; `dirty` reaches storage-proofs-core through `middle`;
    /// `testonly` reaches it only as a dev-dependency (of itself and through `middle`).
    const META: &str = r#"{
      "packages": [
        {"id": "clean 0.1", "name": "clean"},
        {"id": "dirty 0.1", "name": "dirty"},
        {"id": "testonly 0.1", "name": "testonly"},
        {"id": "middle 0.1", "name": "middle"},
        {"id": "util 1.0", "name": "util"},
        {"id": "spc 1.0", "name": "storage-proofs-core"}
      ],
      "workspace_members": ["clean 0.1", "dirty 0.1", "testonly 0.1", "middle 0.1"],
      "resolve": {"nodes": [
        {"id": "clean 0.1", "deps": [
          {"pkg": "util 1.0", "dep_kinds": [{"kind": null, "target": null}]}]},
        {"id": "dirty 0.1", "deps": [
          {"pkg": "util 1.0", "dep_kinds": [{"kind": "build", "target": null}]},
          {"pkg": "middle 0.1", "dep_kinds": [{"kind": null, "target": null}]}]},
        {"id": "testonly 0.1", "deps": [
          {"pkg": "util 1.0", "dep_kinds": [{"kind": null, "target": null}]},
          {"pkg": "middle 0.1", "dep_kinds": [{"kind": "dev", "target": null}]},
          {"pkg": "spc 1.0", "dep_kinds": [{"kind": "dev", "target": null}]}]},
        {"id": "middle 0.1", "deps": [
          {"pkg": "spc 1.0", "dep_kinds": [{"kind": null, "target": null}]}]},
        {"id": "util 1.0", "deps": []},
        {"id": "spc 1.0", "deps": []}
      ]}
    }"#;

    fn meta() -> Value {
        serde_json::from_str(META).unwrap()
    }

    #[test]
    fn clean_and_dev_only_crates_pass() {
        let lines = check(&meta(), &["clean", "testonly"]).unwrap();
        assert_eq!(lines, ["clean: Filecoin-free (1 packages)", "testonly: Filecoin-free (1 packages)"]);
    }

    #[test]
    fn normal_dependency_through_an_intermediate_fails_with_its_path() {
        let err = check(&meta(), &["clean", "dirty", "testonly"]).unwrap_err().to_string();
        assert!(err.contains("dirty reaches 1 Filecoin crate(s):"), "{err}");
        assert!(err.contains("  storage-proofs-core: dirty -> middle -> storage-proofs-core"), "{err}");
        assert!(!err.contains("clean"), "{err}");
        assert!(!err.contains("testonly"), "{err}");
    }

    #[test]
    fn missing_crate_fails() {
        let err = check(&meta(), &["clean", "renamed"]).unwrap_err().to_string();
        assert!(err.contains("renamed: not a workspace member"), "{err}");
    }

    #[test]
    fn filecoin_names() {
        for name in ["filecoin-proofs", "filecoin-proofs-api", "filecoin-hashers", "storage-proofs-porep"] {
            assert!(is_filecoin(name), "{name}");
        }
        for name in ["filecoin-proofs-v2", "storage-proofs", "bellperson", "cuzk-core"] {
            assert!(!is_filecoin(name), "{name}");
        }
    }
}
