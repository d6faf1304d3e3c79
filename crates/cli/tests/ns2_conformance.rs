//! The reduced conformance grid against ns-2.35 (`scripts/peers/ns2/harness.py grid --set
//! reduced`): each point runs the same dumbbell in ns-2.35 and in `ackshape run` with
//! `tcp.profile = "ns2"`, and must agree within the harness's tolerance — aggregate goodput
//! within 5% of ns-2.35's, timeouts per flow within 25% or 2. Points the harness marks as a
//! known gap (with its cause) are printed but not asserted.
//!
//! Needs `ns` (Debian package `ns2`, installed by scripts/setup.sh) and `python3`. Without them
//! the test fails under CI (`CI` set) and is skipped loudly otherwise. About a minute: points with
//! fewer than 16 flows run 16 ÷ flows seeds (a single flow's goodput under random loss varies by
//! 10–25% between seeds, in ns-2.35 too), and their means are compared.

use std::path::PathBuf;
use std::process::Command;

fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd).arg(arg).output().map(|o| o.status.success() || !o.stdout.is_empty()).unwrap_or(false)
}

#[test]
fn reduced_grid_within_tolerance_of_ns2() {
    let ns_ok = Command::new("sh").args(["-c", "command -v ns"]).output().map(|o| o.status.success()).unwrap_or(false);
    let py_ok = have("python3", "--version");
    if !ns_ok || !py_ok {
        let why = format!("ns-2.35 (`ns`, apt-get install ns2) found: {ns_ok}; python3 found: {py_ok}");
        if std::env::var("CI").is_ok() {
            panic!("the ns-2 conformance grid cannot run under CI: {why}");
        }
        eprintln!("SKIPPED ns2 conformance grid: {why} (scripts/setup.sh installs ns2)");
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("ackshape-ns2-grid-{}.json", std::process::id()));
    let run = Command::new("python3")
        .arg(root.join("scripts/peers/ns2/harness.py"))
        .args(["grid", "--set", "reduced", "--jobs", "2", "--flow-runs", "16", "--profile", "ns2"])
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_ackshape"))
        .arg("--json")
        .arg(&out)
        .output()
        .expect("run the harness");
    println!("{}", String::from_utf8_lossy(&run.stdout));
    assert!(out.exists(), "the harness wrote no results: {}\n{}", run.status, String::from_utf8_lossy(&run.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = v["rows"].as_array().expect("rows");
    assert!(!rows.is_empty());
    let mut bad = Vec::new();
    for r in rows {
        let p = &r["point"];
        let desc = format!(
            "{} p={} rtt={} buf={} flows={} minrto={} delack={}",
            p["cc"], p["loss"], p["rtt"], p["buf"], p["flows"], p["minrto"], p["delack"]
        );
        let (g, tn, ta) = (
            r["goodput_ratio"].as_f64().unwrap(),
            r["ns2"]["timeouts_per_flow"].as_f64().unwrap(),
            r["ackshape"]["timeouts_per_flow"].as_f64().unwrap(),
        );
        let line = format!("{desc}: goodput ackshape/ns-2 = {g:.3} (expected 1 ± 0.05), timeouts per flow {ta:.2} vs ns-2 {tn:.2} (expected ± max(25%, 2))");
        match r.get("known_gap").and_then(|k| k.as_str()) {
            Some(cause) => println!("known gap, not asserted — {line}; cause: {cause}"),
            None if r["ok"].as_bool() == Some(true) => println!("ok — {line}"),
            None => bad.push(line),
        }
    }
    assert!(bad.is_empty(), "points outside the tolerance:\n{}", bad.join("\n"));
}
