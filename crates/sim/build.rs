//! Provenance of the simulator build: the git commit it was built from, whether the simulator's
//! sources differed from that commit, and a hash of those sources (`src/provenance.rs` reads them).
//!
//! The simulator's results depend on the sources of `wire`, `core` and `sim` and on the locked
//! dependency versions; the hash covers exactly those files, so two builds with the same hash run
//! the same code whatever their commit says. Without git (a source archive) the commit is
//! `unknown` unless `ACKSHAPE_COMMIT` names it.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files (relative to the workspace root) whose content determines a simulation's result.
const SOURCE_DIRS: [&str; 3] = ["crates/wire/src", "crates/core/src", "crates/sim/src"];
const SOURCE_FILES: [&str; 6] = [
    "Cargo.lock",
    "Cargo.toml",
    "crates/wire/Cargo.toml",
    "crates/core/Cargo.toml",
    "crates/sim/Cargo.toml",
    "crates/sim/build.rs",
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("../..");
    let mut files = Vec::new();
    for d in SOURCE_DIRS {
        let dir = root.join(d);
        if dir.is_dir() {
            println!("cargo:rerun-if-changed={}", dir.display());
            walk(&dir, &mut files);
        }
    }
    for f in SOURCE_FILES {
        let p = root.join(f);
        if p.is_file() {
            println!("cargo:rerun-if-changed={}", p.display());
            files.push(p);
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        let data = std::fs::read(f).unwrap_or_default();
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update((data.len() as u64).to_le_bytes());
        h.update(&data);
    }
    let source: String = h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=ACKSHAPE_SOURCE_HASH={source}");

    println!("cargo:rerun-if-env-changed=ACKSHAPE_COMMIT");
    let git = |args: &[&str]| -> Option<String> {
        let o = Command::new("git").arg("-C").arg(&root).args(args).output().ok()?;
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let (commit, dirty) = match std::env::var("ACKSHAPE_COMMIT") {
        Ok(c) if !c.trim().is_empty() => (c.trim().to_string(), false),
        _ => match git(&["rev-parse", "HEAD"]) {
            Some(c) => {
                // Rebuild when HEAD moves: its file, the branch it names and the packed refs (only
                // files that exist: cargo reruns a build script on every build for a missing one).
                let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
                watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
                for p in watch {
                    if let Some(path) = git(&["rev-parse", "--git-path", &p]).map(|p| abs(&root, &p)) {
                        if path.is_file() {
                            println!("cargo:rerun-if-changed={}", path.display());
                        }
                    }
                }
                let mut args = vec!["status", "--porcelain", "--"];
                args.extend(SOURCE_DIRS);
                args.extend(SOURCE_FILES);
                let dirty = git(&args).is_some_and(|s| !s.is_empty());
                (c, dirty)
            }
            None => ("unknown".to_string(), false),
        },
    };
    println!("cargo:rustc-env=ACKSHAPE_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=ACKSHAPE_GIT_DIRTY={}", if dirty { "1" } else { "0" });
}

fn abs(root: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}
