//! What the per-paper reproduction tests share: one quick run of a paper, its expectation table, and
//! the vacuity check.
//!
//! **Expectation tables** (`tests/expect/pN.txt`): one line per claim record of a `--quick` run,
//! `experiment <TAB> claim [@ reading] <TAB> status`. The test asserts the table exactly, so any
//! claim that flips (or appears, or goes) fails it and the docs must follow. Regenerate after a
//! deliberate change with
//!
//! ```sh
//! ACKSHAPE_BLESS=1 cargo test --release -p ackshape-repro --test reproduce_p0   # … p1, p2, p3, p4
//! ```
//!
//! and review the diff (`git diff crates/repro/tests/expect/`): every flip needs a reason.
#![allow(dead_code)]

use ackshape_repro::{registry, run_experiment, ClaimRecord, Ctx, ExpOutput, Status};
use std::path::PathBuf;

/// Run every experiment of `paper` (`P0` … `P4`) in quick mode, seed 1; `off`: the vacuity check
/// (mechanisms switched off, no readings).
pub fn run_paper(paper: &str, off: bool) -> Vec<ExpOutput> {
    registry()
        .iter()
        .filter(|e| e.id.starts_with(&format!("{paper}-")))
        .map(|e| {
            let mut ctx = Ctx { mechanism_off: off, readings: !off, ..Ctx::new(true, 1) };
            run_experiment(e, &mut ctx).unwrap_or_else(|err| panic!("{}: {err}", e.id))
        })
        .collect()
}

/// The expectation lines of a run.
pub fn table(outs: &[ExpOutput]) -> String {
    let mut s = String::new();
    for o in outs {
        for c in &o.claims {
            s += &format!("{}\t{}\t{}\n", c.id, c.key(), c.status.as_str());
        }
    }
    s
}

fn expect_path(paper: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/expect").join(format!("{}.txt", paper.to_lowercase()))
}

/// Every record is complete and clean: numbers where the status needs them, a cause and a link for
/// every failure, one-line texts, no placeholder or internal wording.
pub fn check_records(outs: &[ExpOutput]) {
    for o in outs {
        for c in &o.claims {
            check_record(c);
        }
    }
}

pub fn check_record(c: &ClaimRecord) {
    let who = format!("{} {} ({})", c.id, c.claim_id, c.reading);
    assert!(c.paper_value.is_finite() && c.tolerance.is_finite() && c.tolerance >= 0.0, "{who}");
    for (k, t) in [
        ("claim", &c.claim),
        ("paper", &c.paper),
        ("measure", &c.measure),
        ("measured", &c.measured),
        ("criterion", &c.criterion),
        ("reading", &c.reading),
        ("cause", &c.cause),
        ("reason", &c.reason),
        ("link", &c.link),
    ] {
        assert!(!t.trim().is_empty() && !t.contains('\n'), "{who}: `{k}` = {t:?}");
        for bad in ["Some(", "None", "issue", "NaN", "inf ", "(issue bar)", "at never", "{:"] {
            assert!(!t.contains(bad), "{who}: `{k}` has {bad:?}: {t}");
        }
    }
    match c.status {
        Status::Holds => {
            assert!(c.measured_value.is_some(), "{who}: holds without a value");
            assert_eq!((c.cause.as_str(), c.reason.as_str(), c.link.as_str()), ("n/a", "n/a", "n/a"), "{who}");
        }
        Status::Fails => {
            assert!(c.measured_value.is_some(), "{who}: fails without a value");
            assert!(
                ["irreproducible", "unstated-parameter", "metric", "model"].contains(&c.cause.as_str()),
                "{who}: a failure without a cause ({})",
                c.cause
            );
            assert!(c.link.starts_with("docs/reproduction.md#"), "{who}: {}", c.link);
        }
        Status::NotAssessable => {
            assert_eq!(c.cause, "n/a", "{who}");
            assert_ne!(c.reason, "n/a", "{who}: not assessable without a reason");
        }
    }
}

/// Compare the run with `tests/expect/<paper>.txt` exactly (`ACKSHAPE_BLESS=1` rewrites it).
pub fn check_expectations(paper: &str, outs: &[ExpOutput]) {
    let got = table(outs);
    let path = expect_path(paper);
    if std::env::var_os("ACKSHAPE_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (ACKSHAPE_BLESS=1 writes it)", path.display()));
    if got != want {
        let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
        let mut diff = String::new();
        for l in &w {
            if !g.contains(l) {
                diff += &format!("  expected: {l}\n");
            }
        }
        for l in &g {
            if !w.contains(l) {
                diff += &format!("  got:      {l}\n");
            }
        }
        panic!(
            "{paper}: the claims' statuses differ from {} (a flip: update docs/reproduction.md and regenerate with ACKSHAPE_BLESS=1):\n{diff}",
            path.display()
        );
    }
    // The measured values beside the statuses, for the log.
    for o in outs {
        for c in &o.claims {
            println!("{} {} [{}]: {} — {}", c.id, c.key(), c.status.as_str(), c.measured, c.criterion);
        }
    }
}

/// The vacuity check: with every mechanism switched off, no claim about a mechanism holds (it fails
/// or is not assessable). Returns the claims that still hold: those the file marks as about no
/// mechanism (baselines, models), which the caller names.
pub fn check_vacuity(paper: &str) -> Vec<String> {
    let outs = run_paper(paper, true);
    let mut still = Vec::new();
    for e in registry().iter().filter(|e| e.id.starts_with(&format!("{paper}-"))) {
        let specs = ackshape_repro::claims::specs(e.text, e.file, e.id).unwrap();
        let o = outs.iter().find(|o| o.id == e.id).unwrap();
        for c in o.claims.iter().filter(|c| c.status == Status::Holds) {
            let s = specs.iter().find(|s| s.id == c.claim_id).unwrap();
            assert!(
                s.mechanism.is_empty(),
                "{} {}: holds with its mechanism ({}) switched off: {}",
                c.id,
                c.claim_id,
                s.mechanism.join(", "),
                c.measured
            );
            still.push(format!("{} {}", c.id, c.claim_id));
        }
        assert!(!o.claims.is_empty(), "{}", e.id);
    }
    still
}
