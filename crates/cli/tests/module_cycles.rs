//! No import cycles between the files of a crate: `scripts/module_cycles.py` builds each crate's
//! module graph from its `use crate::…`/`super::…` paths and prints the cycles.
//!
//! The script is first shown to find a cycle in a small crate made for the purpose (so that a
//! script that finds nothing cannot pass), then run on the crates that must have none.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Run the script on `roots`: (exit code, standard output).
fn module_cycles(roots: &[PathBuf]) -> (i32, String) {
    let out = Command::new("python3")
        .arg(workspace_root().join("scripts/module_cycles.py"))
        .args(roots)
        .output()
        .expect("python3 runs scripts/module_cycles.py (python3 is needed by the test suite)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), stdout)
}

#[test]
fn the_script_finds_a_cycle_through_a_parent_and_a_reexport() {
    let d = std::env::temp_dir().join(format!("ackshape-cycles-{}", std::process::id()));
    let src = d.join("demo/src");
    std::fs::create_dir_all(src.join("shape")).unwrap();
    std::fs::write(d.join("demo/Cargo.toml"), "[package]\nname = \"demo\"\n").unwrap();
    // lib.rs re-exports `Gate` (no dependency of its own); queue.rs names it through the root,
    // which resolves to shape/gate.rs; gate.rs uses its parent's item, and the parent (shape/mod.rs)
    // uses queue.rs: queue → gate → shape → queue.
    std::fs::write(src.join("lib.rs"), "pub mod queue;\npub mod shape;\npub use shape::gate::Gate;\n").unwrap();
    std::fs::write(src.join("queue.rs"), "// use crate::shape::Nothing; (a comment)\npub fn q(_: crate::Gate) {}\n")
        .unwrap();
    std::fs::write(src.join("shape/mod.rs"), "pub mod gate;\nuse crate::queue::q;\npub struct Limit;\n").unwrap();
    std::fs::write(src.join("shape/gate.rs"), "use super::{Limit as L};\npub struct Gate(L);\n").unwrap();
    // A file with no cycle beside it: only the three files of the cycle are named.
    std::fs::write(src.join("shape/../extra.rs"), "use crate::queue::q;\n").unwrap();
    let (code, out) = module_cycles(&[d.clone()]);
    std::fs::remove_dir_all(&d).ok();
    assert_eq!(code, 1, "{out}");
    let line = out.lines().find(|l| l.starts_with("cycle in demo: ")).unwrap_or_else(|| panic!("a cycle in {out}"));
    assert_eq!(line, "cycle in demo: demo/src/queue.rs, demo/src/shape/gate.rs, demo/src/shape/mod.rs");
}

/// The crates this holds for — every member of the workspace and the fuzz harness: every file
/// of them may be used without a cycle back.
fn crates(root: &Path) -> Vec<PathBuf> {
    let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml")).unwrap().parse().unwrap();
    let members = manifest["workspace"]["members"].as_array().expect("workspace members");
    let mut crates: Vec<PathBuf> = members.iter().map(|m| root.join(m.as_str().expect("a member path"))).collect();
    crates.push(root.join("fuzz"));
    for c in &crates {
        assert!(c.join("src").is_dir(), "{} has no src/", c.display());
    }
    crates
}

#[test]
fn no_import_cycles_between_the_files_of_a_crate() {
    let root = workspace_root();
    let crates = crates(&root);
    for c in ["crates/core", "crates/format", "crates/live", "fuzz"] {
        assert!(crates.contains(&root.join(c)), "{c} is not checked");
    }
    let (code, out) = module_cycles(&crates);
    assert_eq!(code, 0, "import cycles between files:\n{out}");
    assert!(out.starts_with("no import cycles"), "{out}");
}
