//! The dependency rules of `ARCHITECTURE.md`, checked against what Cargo
//! actually builds: each crate's dependencies on other weir crates are
//! exactly the table's (normal and test ones apart), `anyhow` is a
//! dependency of binaries only, and every crate root but weir-sys forbids
//! `unsafe`. A boundary that moves without the document fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// A crate's weir dependencies: for its code, and for its tests only.
#[derive(Debug, Default, PartialEq)]
struct Deps {
    normal: BTreeSet<String>,
    dev: BTreeSet<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The table under "## Dependency rules": `| crate | deps | test deps |`.
fn documented() -> BTreeMap<String, Deps> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = text
        .split("\n## Dependency rules\n")
        .nth(1)
        .expect("a \"## Dependency rules\" section")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split(',')
            .map(|n| n.trim().trim_matches('`').to_owned())
            .filter(|n| !n.is_empty() && n != "—")
            .collect()
    };
    let mut table = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        assert_eq!(cells.len(), 3, "a row of three cells: {line}");
        let name = cells[0].trim().trim_matches('`').to_owned();
        let deps = Deps {
            normal: names(cells[1]),
            dev: names(cells[2]),
        };
        assert!(
            table.insert(name, deps).is_none(),
            "a crate listed twice: {line}"
        );
    }
    assert!(!table.is_empty(), "the dependency table has no rows");
    table
}

/// `cargo metadata` for the workspace's own packages.
fn metadata() -> Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON")
}

fn packages(meta: &Value) -> &[Value] {
    meta["packages"].as_array().expect("packages")
}

fn name(package: &Value) -> &str {
    package["name"].as_str().expect("a package name")
}

/// Whether a dependency entry is a normal one (`kind` null) or a test one.
fn kind_is(dep: &Value, kind: Option<&str>) -> bool {
    dep["kind"].as_str() == kind
}

fn built(package: &Value) -> Deps {
    let deps = package["dependencies"].as_array().expect("dependencies");
    let weir = |kind: Option<&str>| -> BTreeSet<String> {
        deps.iter()
            .filter(|d| kind_is(d, kind))
            .filter_map(|d| d["name"].as_str())
            .filter(|n| n.starts_with("weir"))
            .map(str::to_owned)
            .collect()
    };
    Deps {
        normal: weir(None),
        dev: weir(Some("dev")),
    }
}

/// The kinds of a package's targets that are compiled into what it ships.
fn target_kinds(package: &Value) -> BTreeSet<String> {
    package["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .flat_map(|t| t["kind"].as_array().expect("kind").iter())
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn each_crate_depends_on_exactly_the_weir_crates_the_document_lists() {
    let meta = metadata();
    let doc = documented();
    let actual: BTreeMap<String, Deps> = packages(&meta)
        .iter()
        .map(|p| (name(p).to_owned(), built(p)))
        .collect();
    let doc_names: BTreeSet<&String> = doc.keys().collect();
    let actual_names: BTreeSet<&String> = actual.keys().collect();
    assert_eq!(
        doc_names, actual_names,
        "the table's crates are not the workspace's"
    );
    for (crate_name, deps) in &actual {
        assert_eq!(
            deps, &doc[crate_name],
            "{crate_name}'s weir dependencies differ from ARCHITECTURE.md"
        );
    }
}

#[test]
fn anyhow_is_a_dependency_of_binaries_only() {
    let meta = metadata();
    for package in packages(&meta) {
        let uses_anyhow = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .any(|d| d["name"] == "anyhow" && kind_is(d, None));
        if uses_anyhow {
            assert!(
                !target_kinds(package).contains("lib"),
                "{} is a library and depends on anyhow",
                name(package)
            );
        }
    }
}

#[test]
fn every_crate_root_but_weir_sys_forbids_unsafe() {
    let meta = metadata();
    let mut roots = 0;
    for package in packages(&meta) {
        for target in package["targets"].as_array().expect("targets") {
            let kinds = target["kind"].as_array().expect("kind");
            if !kinds.iter().any(|k| k == "lib" || k == "bin") {
                continue;
            }
            let path = target["src_path"].as_str().expect("src_path");
            let source = std::fs::read_to_string(path).expect("a crate root");
            let forbids = source.contains("#![forbid(unsafe_code)]");
            if name(package) == "weir-sys" {
                assert!(!forbids, "weir-sys is where unsafe lives");
            } else {
                assert!(forbids, "{path} does not forbid unsafe code");
            }
            roots += 1;
        }
    }
    assert!(roots >= 10, "only {roots} crate roots found");
}
