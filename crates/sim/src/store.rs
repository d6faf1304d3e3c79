//! The result store: every finished simulation of a sweep, kept on disk under the key
//! (resolved scenario, seed, build), so that a rerun computes only the points it lacks and an
//! interrupted sweep resumes where it stopped.
//!
//! **What it is.** A directory (`ackshape sweep --store DIR`, `ackshape.sweep(..., store=DIR)`):
//!
//! ```text
//! DIR/store.json                          {"format": 1, ...}: marks the directory as a store
//! DIR/scenarios/HASH.toml                 a resolved scenario (what HASH stands for)
//! DIR/results/BUILD/HASH/SEED.json        the summary.json of that scenario and seed, run by BUILD
//! ```
//!
//! HASH is a SHA-256 of the resolved scenario ([`resolve`]: the `--set`s applied, policy files
//! inlined) without the keys that do not change a run (`seed`, `description`, `paper`,
//! `reproduce`, `live`); BUILD is [`Provenance::build_id`] (version and commit, and a hash of the
//! simulator's sources if they had uncommitted changes). Files are written whole and renamed into
//! place, so a sweep killed at any moment leaves only finished results; several processes may
//! fill one store at once.
//!
//! **What it is not.** Results of another build are never used: a rerun after a change of
//! version or commit computes every point again (and says how many results of other builds it
//! left aside, [`Store::other_builds`]). It keeps summaries only, not time series or pcaps.

use crate::provenance::Provenance;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The format this code reads and writes (`store.json`'s `format`).
pub const FORMAT: u64 = 1;

/// What went wrong with a store; every message names the path.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("{path}: {msg}")]
    Bad { path: String, msg: String },
    #[error(
        "a result was computed by {found}, but this process is {this}: results of different builds are never mixed \
         (install the same build of ackshape on every worker)"
    )]
    OtherBuild { found: Provenance, this: Provenance },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |err| StoreError::Io { path: path.display().to_string(), err }
}

/// The scenario document as a run uses it: a `policy_file` of a `[[middlebox]]` is read (relative
/// to `file`'s folder, as the simulator reads it) and put in as its inline `policy`, so that the
/// document holds everything the run depends on. Errors name the file and the key.
pub fn resolve(doc: &toml::Table, file: &str) -> Result<toml::Table, String> {
    let mut doc = doc.clone();
    let base = Path::new(file).parent();
    if let Some(toml::Value::Array(boxes)) = doc.get_mut("middlebox") {
        for (i, b) in boxes.iter_mut().enumerate() {
            let Some(t) = b.as_table_mut() else { continue };
            if t.contains_key("policy") {
                continue;
            }
            let Some(toml::Value::String(f)) = t.get("policy_file") else { continue };
            let path = match base {
                Some(b) if Path::new(f).is_relative() => b.join(f),
                _ => PathBuf::from(f),
            };
            let bad = |m: String| format!("{file}: key `middlebox[{i}].policy_file`: {}: {m}", path.display());
            let text = std::fs::read_to_string(&path).map_err(|e| bad(format!("cannot read: {e}")))?;
            let policy: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
            t.remove("policy_file");
            t.insert("policy".into(), toml::Value::Table(policy));
        }
    }
    Ok(doc)
}

/// The keys of a scenario that do not change what a run computes: the seed is a key of its own,
/// the rest are read only by `reproduce`, the live driver or people.
const NOT_RUN_KEYS: [&str; 5] = ["seed", "description", "paper", "reproduce", "live"];

/// The store's HASH of a resolved scenario ([`resolve`]): SHA-256 of its canonical JSON (keys
/// sorted) without [`NOT_RUN_KEYS`], as 32 hex digits.
pub fn scenario_hash(resolved: &toml::Table) -> String {
    let mut doc = resolved.clone();
    for k in NOT_RUN_KEYS {
        doc.remove(k);
    }
    // toml::Table and serde_json's map are ordered by key: the text is canonical.
    let text = serde_json::to_string(&doc).expect("a TOML document is JSON");
    Sha256::digest(text.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// A result store in a directory (see the module's documentation).
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
    build: String,
    this: Provenance,
}

impl Store {
    /// Open the store in `dir`, creating it if it does not exist (or is empty). A directory with
    /// other files and no `store.json`, or a store of another format, is refused.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let marker = dir.join("store.json");
        let bad = |msg: String| StoreError::Bad { path: dir.display().to_string(), msg };
        if marker.is_file() {
            let text = std::fs::read_to_string(&marker).map_err(io(&marker))?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| StoreError::Bad {
                path: marker.display().to_string(),
                msg: format!("not JSON ({e}); expected an ackshape result store's store.json"),
            })?;
            match v.get("format").and_then(|f| f.as_u64()) {
                Some(FORMAT) => {}
                Some(f) => {
                    return Err(bad(format!(
                        "a result store of format {f}; this ackshape reads format {FORMAT} (use another directory)"
                    )))
                }
                None => return Err(bad("store.json has no `format`: not an ackshape result store".into())),
            }
        } else {
            let non_empty = std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(false);
            if non_empty {
                return Err(bad(
                    "exists and is not an ackshape result store (no store.json); give an empty or new directory".into(),
                ));
            }
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            let doc = serde_json::json!({
                "format": FORMAT,
                "what": "ackshape result store: results/BUILD/HASH/SEED.json is the summary.json of scenarios/HASH.toml run with SEED by BUILD",
                "created_by": Provenance::json(),
            });
            write_atomic(&marker, &(serde_json::to_string_pretty(&doc).expect("JSON") + "\n"))?;
        }
        let this = Provenance::this();
        Ok(Store { root: dir.to_path_buf(), build: this.build_id(), this })
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This build's name in the store (`results/BUILD`).
    pub fn build(&self) -> &str {
        &self.build
    }

    fn result_path(&self, build: &str, hash: &str, seed: u64) -> PathBuf {
        self.root.join("results").join(build).join(hash).join(format!("{seed}.json"))
    }

    /// This build's summary of scenario `hash` with `seed`, if the store has it. A stored file
    /// that is not that summary is an error naming it.
    pub fn get(&self, hash: &str, seed: u64) -> Result<Option<String>, StoreError> {
        let p = self.result_path(&self.build, hash, seed);
        let text = match std::fs::read_to_string(&p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::Io { path: p.display().to_string(), err: e }),
        };
        check_summary(&text, seed, &self.this).map_err(|msg| StoreError::Bad {
            path: p.display().to_string(),
            msg: format!("{msg} (remove the file to compute it again)"),
        })?;
        Ok(Some(text))
    }

    /// Keep `summary` (a summary.json text) as the result of scenario `hash` (`scenario`: its
    /// resolved TOML text) with `seed`. A summary of another build is refused.
    pub fn put(&self, hash: &str, seed: u64, scenario: &str, summary: &str) -> Result<(), StoreError> {
        let prov = summary_provenance(summary).map_err(|msg| StoreError::Bad {
            path: self.result_path(&self.build, hash, seed).display().to_string(),
            msg,
        })?;
        if prov != self.this {
            return Err(StoreError::OtherBuild { found: prov, this: self.this.clone() });
        }
        let s = self.root.join("scenarios").join(format!("{hash}.toml"));
        if !s.is_file() {
            write_atomic(&s, scenario)?;
        }
        write_atomic(&self.result_path(&self.build, hash, seed), summary)
    }

    /// The other builds that have a result of scenario `hash` with `seed` (never used by this one).
    pub fn other_builds(&self, hash: &str, seed: u64) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.root.join("results")) else { return Vec::new() };
        let mut v: Vec<String> = rd
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|b| *b != self.build && self.result_path(b, hash, seed).is_file())
            .collect();
        v.sort();
        v
    }

    /// How many results this build has in the store.
    pub fn len(&self) -> usize {
        let dir = self.root.join("results").join(&self.build);
        let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
        rd.flatten()
            .filter_map(|h| std::fs::read_dir(h.path()).ok())
            .map(|d| d.flatten().filter(|f| f.path().extension().is_some_and(|x| x == "json")).count())
            .sum()
    }

    /// Whether this build has no result in the store.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The `ackshape` object of a summary.json text.
pub fn summary_provenance(summary: &str) -> Result<Provenance, String> {
    #[derive(serde::Deserialize)]
    struct Head {
        ackshape: Provenance,
    }
    serde_json::from_str::<Head>(summary)
        .map(|h| h.ackshape)
        .map_err(|e| format!("expected a summary.json with its `ackshape` version and commit ({e})"))
}

fn check_summary(text: &str, seed: u64, this: &Provenance) -> Result<(), String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not a summary.json ({e})"))?;
    let prov: Provenance = serde_json::from_value(v["ackshape"].clone())
        .map_err(|e| format!("a summary.json without its `ackshape` version and commit ({e})"))?;
    if &prov != this {
        return Err(format!("the summary was computed by {prov}, expected {this}"));
    }
    if v["seed"].as_u64() != Some(seed) {
        return Err(format!("the summary's seed is {}, expected {seed}", v["seed"]));
    }
    Ok(())
}

/// Write `text` to `path` whole: into a temporary file beside it, then renamed over it.
fn write_atomic(path: &Path, text: &str) -> Result<(), StoreError> {
    let dir = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path.file_name().expect("a file name").to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        StoreError::Io { path: path.display().to_string(), err: e }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ackshape-store-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn doc(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn the_hash_ignores_key_order_seed_and_notes_but_not_values() {
        let a = doc("seed = 1\nduration = \"4s\"\n[topology]\nkind = \"dumbbell\"\nrate = \"5Mbit/s\"\n");
        let b = doc("[topology]\nrate = \"5Mbit/s\"\nkind = \"dumbbell\"\n[paper]\nx = 1\n[live]\ny = 2\n")
            .into_iter()
            .chain(doc("duration = \"4s\"\nseed = 9\ndescription = \"d\"\n"))
            .collect();
        assert_eq!(scenario_hash(&a), scenario_hash(&b));
        assert_eq!(scenario_hash(&a).len(), 32);
        let c = doc("seed = 1\nduration = \"4s\"\n[topology]\nkind = \"dumbbell\"\nrate = \"6Mbit/s\"\n");
        assert_ne!(scenario_hash(&a), scenario_hash(&c));
        // An integer and a float are different values.
        assert_ne!(scenario_hash(&doc("x = 1")), scenario_hash(&doc("x = 1.0")));
    }

    #[test]
    fn policy_files_are_inlined_relative_to_the_scenario() {
        let d = tmp("resolve");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("p.toml"), "default_class = \"c\"\n[[class]]\nname = \"c\"\nrate = \"1Mbit/s\"\n")
            .unwrap();
        let file = d.join("s.toml").display().to_string();
        let s = doc("[[middlebox]]\nkind = \"gateway\"\npolicy_file = \"p.toml\"\n");
        let r = resolve(&s, &file).unwrap();
        let mb = &r["middlebox"][0];
        assert!(mb.get("policy_file").is_none());
        assert_eq!(mb["policy"]["class"][0]["rate"].as_str(), Some("1Mbit/s"));
        // A changed policy file changes the hash.
        let h1 = scenario_hash(&r);
        std::fs::write(d.join("p.toml"), "default_class = \"c\"\n[[class]]\nname = \"c\"\nrate = \"2Mbit/s\"\n")
            .unwrap();
        assert_ne!(h1, scenario_hash(&resolve(&s, &file).unwrap()));
        let e = resolve(&doc("[[middlebox]]\nkind = \"gateway\"\npolicy_file = \"nope.toml\"\n"), &file).unwrap_err();
        assert!(e.contains("s.toml: key `middlebox[0].policy_file`") && e.contains("nope.toml"), "{e}");
        std::fs::remove_dir_all(&d).ok();
    }

    fn summary(seed: u64, prov: &Provenance) -> String {
        serde_json::to_string_pretty(&serde_json::json!({ "ackshape": prov, "seed": seed, "x": 1.5 })).unwrap()
    }

    #[test]
    fn results_come_back_for_their_build_only_and_foreign_ones_are_refused() {
        let d = tmp("put");
        let st = Store::open(&d).unwrap();
        let this = Provenance::this();
        assert_eq!(st.get("h1", 3).unwrap(), None);
        st.put("h1", 3, "x = 1\n", &summary(3, &this)).unwrap();
        assert_eq!(st.get("h1", 3).unwrap(), Some(summary(3, &this)));
        assert_eq!(std::fs::read_to_string(d.join("scenarios/h1.toml")).unwrap(), "x = 1\n");
        assert_eq!(st.len(), 1);
        // Reopening finds it.
        let st = Store::open(&d).unwrap();
        assert!(st.get("h1", 3).unwrap().is_some());
        assert_eq!(st.get("h1", 4).unwrap(), None);
        // Another build's summary is refused, and one it left in the store is not used but listed.
        let other = Provenance { commit: "0000000000000000000000000000000000000000".into(), ..this.clone() };
        let e = st.put("h1", 5, "x = 1\n", &summary(5, &other)).unwrap_err();
        assert!(matches!(e, StoreError::OtherBuild { .. }), "{e}");
        let p = d.join("results").join(other.build_id()).join("h1/5.json");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, summary(5, &other)).unwrap();
        assert_eq!(st.get("h1", 5).unwrap(), None);
        assert_eq!(st.other_builds("h1", 5), vec![other.build_id()]);
        // A damaged result names its file.
        std::fs::write(d.join("results").join(st.build()).join("h1/3.json"), "{").unwrap();
        let e = st.get("h1", 3).unwrap_err().to_string();
        assert!(e.contains("3.json") && e.contains("not a summary.json"), "{e}");
        // No temporary files are left behind.
        let tmp_left = walk(&d).into_iter().filter(|p| p.to_string_lossy().ends_with(".tmp")).count();
        assert_eq!(tmp_left, 0);
        std::fs::remove_dir_all(&d).ok();
    }

    fn walk(d: &Path) -> Vec<PathBuf> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.path().is_dir() {
                v.extend(walk(&e.path()));
            } else {
                v.push(e.path());
            }
        }
        v
    }

    #[test]
    fn a_directory_that_is_not_a_store_is_refused() {
        let d = tmp("notstore");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        let e = Store::open(&d).unwrap_err().to_string();
        assert!(e.contains("not an ackshape result store"), "{e}");
        std::fs::remove_file(d.join("notes.txt")).unwrap();
        std::fs::write(d.join("store.json"), r#"{"format": 99}"#).unwrap();
        let e = Store::open(&d).unwrap_err().to_string();
        assert!(e.contains("format 99"), "{e}");
        std::fs::remove_dir_all(&d).ok();
    }
}
