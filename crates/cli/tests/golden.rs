//! Golden digests: the sha256 of a few outputs that must not move unless a change means them to.
//!
//! Every case runs the `ackshape` binary from the workspace root (so paths in the outputs are the
//! repository-relative ones) and hashes what it wrote:
//!
//! - `run … --out DIR`: `DIR/summary.json` with two parts removed first, the only parts that differ
//!   between two builds or two runs of the same scenario and seed: the `"ackshape"` provenance
//!   object (version, commit, dirty flag, source digest: the lines from `  "ackshape": {` to the
//!   first `  },`) and the `"wall_time_s"` line. Everything else is hashed byte for byte, number
//!   formatting and key order included.
//! - `reproduce --quick --json ID`: standard output as printed (it carries no provenance or time).
//!
//! The expected digests are in `tests/golden.sha256` (`sha256sum` format, one case a line). A
//! change that moves an output on purpose refreshes them with
//!
//! ```text
//! ACKSHAPE_BLESS=1 cargo test --release -p ackshape-cli --test golden
//! ```
//!
//! and says in its commit which outputs moved and why. On a mismatch the normalised outputs are
//! left in a temporary directory (named in the failure) to diff against a run of the previous
//! build.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One golden case: a name and the `ackshape` arguments; `--out DIR` is appended to `run` cases.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
}

const CASES: &[Case] = &[
    // The embedded example: a dumbbell with bulk flows through a FIFO bottleneck.
    Case { name: "run-default", args: &["run", "-q", "--set", "duration=5s", "--set", "warmup=1s"] },
    // An asymmetric access link (800 kbit/s up, 2.1 Mbit/s down) with two-way TCP through a FIFO.
    Case {
        name: "run-asymmetric",
        args: &["run", "-q", "experiments/p2/adsl-two-way.toml", "--set", "duration=10s", "--set", "warmup=2s"],
    },
    // A gateway with a TCR class (window rewriting and ACK pacing).
    Case { name: "run-gateway-tcr", args: &["run", "-q", "experiments/live/rate-tcr.toml", "--set", "duration=5s"] },
    // Virtual Packet Substitution flows (weights 1:2:3) against TCP and on/off UDP.
    Case { name: "run-vps", args: &["run", "-q", "experiments/p3/thesis-topology.toml", "--set", "duration=20s"] },
    // Two fast experiments of the reproduction, as their JSON claim records.
    Case { name: "reproduce-P2-F11", args: &["reproduce", "-q", "--quick", "--json", "P2-F11"] },
    Case { name: "reproduce-P4-F7", args: &["reproduce", "-q", "--quick", "--json", "P4-F7"] },
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn digests_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden.sha256")
}

/// `summary.json` without the provenance object and the wall-time line (see the module doc).
fn normalise_summary(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_provenance = false;
    let mut saw_provenance = false;
    for line in text.split_inclusive('\n') {
        if in_provenance {
            if line.trim_end() == "  }," {
                in_provenance = false;
            }
            continue;
        }
        if line.trim_end() == "  \"ackshape\": {" {
            in_provenance = true;
            saw_provenance = true;
            continue;
        }
        if line.trim_start().starts_with("\"wall_time_s\"") {
            continue;
        }
        out.push_str(line);
    }
    assert!(saw_provenance, "summary.json has no \"ackshape\" provenance object to remove:\n{text}");
    assert!(!in_provenance, "summary.json: the \"ackshape\" object is not closed by a `  }},` line");
    out
}

fn run_case(case: &Case, tmp: &Path) -> String {
    let root = workspace_root();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ackshape"));
    cmd.current_dir(&root).args(case.args).env("ACKSHAPE_LOG", "warn");
    let out_dir = tmp.join(case.name);
    let _ = std::fs::remove_dir_all(&out_dir);
    // `run` writes summary.json there; `reproduce` its reports, kept out of the repository.
    cmd.arg("--out").arg(&out_dir);
    let is_run = case.args[0] == "run";
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{}: ackshape {:?} failed ({}): {}",
        case.name,
        case.args,
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    if is_run {
        let s = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
        normalise_summary(&s)
    } else {
        String::from_utf8(o.stdout).unwrap()
    }
}

fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn read_expected() -> BTreeMap<String, String> {
    let path = digests_file();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (digest, name) = line
            .split_once("  ")
            .unwrap_or_else(|| panic!("{}:{}: expected `<sha256>  <case>`, got {line:?}", path.display(), i + 1));
        assert!(
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}:{}: expected 64 hex digits, got {digest:?}",
            path.display(),
            i + 1
        );
        m.insert(name.trim().to_string(), digest.to_string());
    }
    m
}

#[test]
fn normalisation_removes_only_provenance_and_wall_time() {
    let s = "{\n  \"ackshape\": {\n    \"version\": \"0.1.0\",\n    \"commit\": \"abc\"\n  },\n  \"seed\": 1,\n  \"sim\": {\n    \"events\": 3,\n    \"wall_time_s\": 0.5,\n    \"link_packets\": 2\n  },\n  \"x\": { \"ackshape\": 1 }\n}\n";
    let n = normalise_summary(s);
    assert_eq!(
        n,
        "{\n  \"seed\": 1,\n  \"sim\": {\n    \"events\": 3,\n    \"link_packets\": 2\n  },\n  \"x\": { \"ackshape\": 1 }\n}\n"
    );
}

#[test]
fn golden_digests() {
    let tmp = std::env::temp_dir().join(format!("ackshape-golden-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let bless = std::env::var_os("ACKSHAPE_BLESS").is_some_and(|v| v == "1");
    let expected = read_expected();
    let mut got = BTreeMap::new();
    let mut failures = Vec::new();
    for case in CASES {
        let text = run_case(case, &tmp);
        let digest = sha256_hex(&text);
        let kept = tmp.join(format!("{}.normalised", case.name));
        std::fs::write(&kept, &text).unwrap();
        match expected.get(case.name) {
            Some(want) if *want == digest => eprintln!("{:<20} {digest} ok", case.name),
            Some(want) => {
                eprintln!("{:<20} {digest} expected {want}", case.name);
                failures.push(format!("{}: sha256 {digest}, expected {want} (output: {})", case.name, kept.display()));
            }
            None => {
                eprintln!("{:<20} {digest} (no expected digest)", case.name);
                failures.push(format!("{}: no digest in {}", case.name, digests_file().display()));
            }
        }
        got.insert(case.name, digest);
    }
    let stale: Vec<_> = expected.keys().filter(|k| !got.contains_key(k.as_str())).cloned().collect();
    if bless {
        let mut text = String::from(
            "# sha256 of normalised outputs (crates/cli/tests/golden.rs). Refresh:\n\
             # ACKSHAPE_BLESS=1 cargo test --release -p ackshape-cli --test golden\n",
        );
        for case in CASES {
            text.push_str(&format!("{}  {}\n", got[case.name], case.name));
        }
        std::fs::write(digests_file(), text).unwrap();
        eprintln!("wrote {}", digests_file().display());
        let _ = std::fs::remove_dir_all(&tmp);
        return;
    }
    for k in &stale {
        failures.push(format!("{k}: digest in {} but no such case", digests_file().display()));
    }
    assert!(
        failures.is_empty(),
        "golden outputs moved:\n  {}\nIf the change means this, refresh with \
         `ACKSHAPE_BLESS=1 cargo test --release -p ackshape-cli --test golden` and say why in the commit",
        failures.join("\n  ")
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
