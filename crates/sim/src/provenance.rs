//! Which build of ackshape produced a result: recorded in every JSON output (`summary.json`,
//! `sweep.json`, `run.json`, `claims.json`, `compare.json`) and part of the result store's key.

use serde::{Deserialize, Serialize};

/// The ackshape version (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit the simulator was built from (`unknown` without git or `ACKSHAPE_COMMIT`).
pub const COMMIT: &str = env!("ACKSHAPE_GIT_COMMIT");
/// Whether the simulator's sources differed from [`COMMIT`] when it was built.
pub const DIRTY: bool = matches!(env!("ACKSHAPE_GIT_DIRTY").as_bytes(), b"1");
/// SHA-256 (first 16 hex digits) of the sources that determine a simulation's result: the
/// `wire`, `core` and `sim` crates and `Cargo.lock`.
pub const SOURCE: &str = env!("ACKSHAPE_SOURCE_HASH");

/// The `ackshape` object of the JSON outputs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub version: String,
    pub commit: String,
    /// The simulator's sources had changes not in `commit` (then `source` tells builds apart).
    #[serde(default)]
    pub dirty: bool,
    pub source: String,
}

impl Provenance {
    /// This build's.
    pub fn this() -> Provenance {
        Provenance { version: VERSION.into(), commit: COMMIT.into(), dirty: DIRTY, source: SOURCE.into() }
    }

    /// One name for the code that computed a result: `VERSION+COMMIT12` for a clean build,
    /// `VERSION+COMMIT12.dirty.SOURCE` with uncommitted changes, `VERSION+nogit.SOURCE` without
    /// a commit. Results of different builds never share it.
    pub fn build_id(&self) -> String {
        let c: String = self.commit.chars().take(12).collect();
        if self.commit == "unknown" || self.commit.is_empty() {
            format!("{}+nogit.{}", self.version, self.source)
        } else if self.dirty {
            format!("{}+{c}.dirty.{}", self.version, self.source)
        } else {
            format!("{}+{c}", self.version)
        }
    }

    /// As JSON (for outputs built with `serde_json::json!`).
    pub fn json() -> serde_json::Value {
        serde_json::to_value(Provenance::this()).expect("strings and a bool")
    }
}

/// A JSON output with the build's [`Provenance`] as its first key, `ackshape`, before the
/// output's own keys (`inner` serialises as a map: a struct or a JSON object).
#[derive(Serialize)]
pub struct Stamped<'a, T: Serialize> {
    pub ackshape: Provenance,
    #[serde(flatten)]
    pub inner: &'a T,
}

/// `inner` stamped with this build's provenance.
pub fn stamped<T: Serialize>(inner: &T) -> Stamped<'_, T> {
    Stamped { ackshape: Provenance::this(), inner }
}

/// `inner` stamped, as pretty JSON text.
pub fn pretty_stamped<T: Serialize>(inner: &T) -> String {
    serde_json::to_string_pretty(&stamped(inner)).expect("a JSON output serialises")
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ackshape {} (commit {}", self.version, self.commit)?;
        if self.dirty {
            write!(f, " with uncommitted changes, sources {}", self.source)?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_ids_tell_clean_dirty_and_unknown_builds_apart() {
        let p = |commit: &str, dirty| Provenance {
            version: "1.2.0".into(),
            commit: commit.into(),
            dirty,
            source: "00112233aabbccdd".into(),
        };
        let c = "a611bf9c0ffee0123456789abcdef0123456789a";
        assert_eq!(p(c, false).build_id(), "1.2.0+a611bf9c0ffe");
        assert_eq!(p(c, true).build_id(), "1.2.0+a611bf9c0ffe.dirty.00112233aabbccdd");
        assert_eq!(p("unknown", false).build_id(), "1.2.0+nogit.00112233aabbccdd");
        assert_eq!(Provenance::this().version, env!("CARGO_PKG_VERSION"));
        assert_eq!(Provenance::this().source.len(), 16);
    }

    #[test]
    fn stamped_outputs_start_with_the_provenance() {
        #[derive(Serialize)]
        struct Out {
            zeta: u32,
            alpha: &'static str,
        }
        let text = serde_json::to_string(&stamped(&Out { zeta: 1, alpha: "a" })).unwrap();
        let head = format!(r#"{{"ackshape":{}"#, serde_json::to_string(&Provenance::this()).unwrap());
        assert!(text.starts_with(&head), "{text}");
        assert!(text.ends_with(r#","zeta":1,"alpha":"a"}"#), "{text}");
    }
}
