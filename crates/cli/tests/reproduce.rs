//! `ackshape reproduce`: listing, unknown IDs, and the output files of a run.

use std::process::Command;

fn ackshape(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ackshape")).args(args).output().unwrap()
}

#[test]
fn list_and_unknown_id() {
    let out = ackshape(&["reproduce", "--list"]);
    assert!(out.status.success());
    // The list cites every paper in full before the experiments.
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    for (id, words) in [
        ("P0", "Wei, S.-C. Tsao, Y.-D. Lin, \"Assessing and Improving TCP Rate Shaping over Edge Gateways\", IEEE Transactions on Computers"),
        ("P1", "Karandikar, S. Kalyanaraman, P. Bagal, B. Packer, \"TCP Rate Control\", ACM SIGCOMM Computer Communication Review"),
        ("P2", "Park, D. Park, S. Hong, J. Park, \"Preventing TCP performance interference on asymmetric links"),
        ("P3", "Lau, \"Sender-driven Bandwidth Differentiation for Transmitting Multimedia Flows over TCP\", M.Phil. thesis"),
        ("P4", "Bansal, P. A. S. Ward, \"Third-Party Flow Control\""),
    ] {
        let line = listed.lines().find(|l| l.trim_start().starts_with(&format!("{id} "))).unwrap_or_else(|| panic!("{listed}"));
        assert!(line.contains(words), "{id}: {line}");
    }
    let out = ackshape(&["reproduce", "NO-SUCH-ID"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown experiment `NO-SUCH-ID`"), "{err}");
}

#[test]
fn middlebox_errors_are_caught_by_validate() {
    let dir = std::env::temp_dir().join(format!("ackshape-mb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("mb.toml");
    std::fs::write(
        &p,
        r#"
duration = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "20ms", queue = "100pkt" }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 1
[[middlebox]]
node = "middle"
wan = "bottleneck"
kind = "pass-through"
"#,
    )
    .unwrap();
    let out = ackshape(&["validate", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("mb.toml: key `middlebox[0].node`") && err.contains("\"middle\""), "{err}");
}

#[test]
fn reproduce_p2_quick_json_has_one_record_per_claim() {
    let dir = std::env::temp_dir().join(format!("ackshape-repro-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = ackshape(&["reproduce", "P2", "--quick", "--json", "--quiet", "--out", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    let list = v.as_array().expect("a JSON list");
    let listed = String::from_utf8_lossy(&ackshape(&["reproduce", "--list"]).stdout).to_string();
    let p2: Vec<&str> =
        listed.lines().filter_map(|l| l.split_whitespace().next()).filter(|id| id.starts_with("P2-")).collect();
    assert!(p2.len() >= 5, "{listed}");
    for id in &p2 {
        assert!(list.iter().any(|c| c["id"] == *id), "no claims of {id}");
        let d = dir.join(id);
        for f in ["report.md", "claims.json", "run.json"] {
            assert!(d.join(f).is_file(), "{}", d.join(f).display());
        }
        let report = std::fs::read_to_string(d.join("report.md")).unwrap();
        assert!(report.contains(&format!("`ackshape reproduce {id} --quick`")), "{report}");
        // The report starts with the paper's full citation and where its assumptions are explained.
        let head: Vec<&str> = report.lines().take(3).collect();
        assert!(
            head[2].starts_with("Paper P2 (paper 002): J. Park, D. Park, S. Hong, J. Park, \"Preventing TCP")
                && head[2].contains("Computer Communications")
                && head[2].contains("docs/experiments.md#p2"),
            "{report}"
        );
    }
    for c in list {
        let o = c.as_object().expect("one object per claim");
        for k in ["id", "claim_id", "claim", "paper", "measured", "tolerance"] {
            let s = o.get(k).and_then(|x| x.as_str()).unwrap_or_else(|| panic!("`{k}` missing in {c}"));
            assert!(!s.is_empty() && !s.contains('\n'), "`{k}` in {c}");
        }
        assert!(o["holds"].is_boolean(), "{c}");
        assert_eq!(o["quick"], true);
        // Computed, not placeholders: every measurement states a number.
        assert!(o["measured"].as_str().unwrap().chars().any(|ch| ch.is_ascii_digit()), "{c}");
    }
    // Claims that hold robustly even in quick mode: the model's lemma/theorem, AFVQ on the ADSL link.
    let holds = |id: &str, claim: &str| {
        list.iter().find(|c| c["id"] == id && c["claim_id"] == claim).unwrap_or_else(|| panic!("{id} {claim}"))["holds"]
            == true
    };
    for c in ["lemma1", "theorem1-q", "theorem1-n"] {
        assert!(holds("P2-F11", c), "P2-F11 {c}");
    }
    assert!(holds("P2-F8", "afvq-download") && holds("P2-F8", "afvq-upload"));
    // Plots and the index.
    let svg = std::fs::read_to_string(dir.join("P2-F10/aggregated.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("AFVQ") && svg.contains("ACKs-first"));
    let index = std::fs::read_to_string(dir.join("index.md")).unwrap();
    for id in &p2 {
        assert!(index.contains(&format!("[{id}]({id}/report.md)")), "{index}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproduce_results_do_not_depend_on_the_number_of_workers() {
    let run = |jobs: &str| {
        let dir = std::env::temp_dir().join(format!("ackshape-repro-j{jobs}-{}", std::process::id()));
        let out = ackshape(&[
            "reproduce",
            "P2-F10",
            "--quick",
            "--json",
            "--quiet",
            "-j",
            jobs,
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let csv = std::fs::read_to_string(dir.join("P2-F10/sweep.csv")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        (String::from_utf8(out.stdout).unwrap(), csv)
    };
    let (one, csv1) = run("1");
    let (two, csv2) = run("3");
    assert_eq!(one, two);
    assert_eq!(csv1, csv2);
    assert!(csv1.lines().count() > 10, "{csv1}");
}

/// `reproduce --set` runs an experiment with a key of its file changed: the change reaches the
/// simulations (the measurements differ from the file's), and the records, run.json, the report
/// and its command say so. A bad key or value exits 2 before anything runs.
#[test]
fn reproduce_with_set_changes_the_file_and_says_so() {
    let dir = std::env::temp_dir().join(format!("ackshape-repro-set-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |out: &str, extra: &[&str]| {
        let d = dir.join(out);
        let mut args = vec!["reproduce", "P0-F9", "--quick", "--json", "-q", "--out", d.to_str().unwrap()];
        args.extend(extra);
        let o = ackshape(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (plain, reno) = (run("plain", &[]), run("reno", &["--set", "tcp.cc=reno"]));
    let (plain, reno) = (plain.as_array().unwrap(), reno.as_array().unwrap());
    assert_eq!(plain.len(), reno.len());
    assert!(plain.iter().all(|r| r.get("set").is_none()));
    assert!(reno.iter().all(|r| r["set"] == serde_json::json!(["tcp.cc=reno"])));
    // SACK vs Reno under 1% loss: the measured goodputs differ.
    assert!(plain.iter().zip(reno).any(|(a, b)| a["measured"] != b["measured"]), "{plain:?}");
    let run_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reno/P0-F9/run.json")).unwrap()).unwrap();
    assert_eq!(run_json["set"], serde_json::json!(["tcp.cc=reno"]));
    // Both JSON files name the build that wrote them, first; the file as run is beside them.
    let claims_text = std::fs::read_to_string(dir.join("reno/P0-F9/claims.json")).unwrap();
    let claims: serde_json::Value = serde_json::from_str(&claims_text).unwrap();
    for v in [&run_json, &claims] {
        assert_eq!(v["ackshape"]["version"], env!("CARGO_PKG_VERSION"));
        assert!(v["ackshape"]["commit"].as_str().is_some_and(|c| !c.is_empty()), "{v}");
    }
    assert!(claims_text.starts_with("{\n  \"ackshape\": {"), "{claims_text}");
    let scenario = std::fs::read_to_string(dir.join("reno/P0-F9/scenario.toml")).unwrap();
    let doc: toml::Table = scenario.parse().unwrap();
    assert_eq!(doc["tcp"]["cc"].as_str(), Some("reno"), "{scenario}");
    assert!(
        scenario.starts_with("# The scenario as ackshape ") && scenario.contains("--set tcp.cc=reno"),
        "{scenario}"
    );
    let report = std::fs::read_to_string(dir.join("reno/P0-F9/report.md")).unwrap();
    assert!(report.contains("**Changed from the file** (`--set`): `tcp.cc=reno`"), "{report}");
    assert!(report.contains("`ackshape reproduce P0-F9 --quick --set tcp.cc=reno`"), "{report}");
    let index = std::fs::read_to_string(dir.join("reno/index.md")).unwrap();
    assert!(index.contains("--set tcp.cc=reno"), "{index}");
    // Refused before anything runs.
    let bad = dir.join("bad");
    let o = ackshape(&["reproduce", "P0-F9", "--set", "tcp.cc=vegas", "--out", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("experiments/p0/f9-loss.toml: key `tcp.cc`") && err.contains("--set tcp.cc=vegas"), "{err}");
    assert!(!bad.exists());
    let o = ackshape(&["reproduce", "P0-F9", "--set", "tcp.cc=reno,sack", "--out", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!bad.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `reproduce --set` that the run would not read is refused before anything runs: a key under a
/// table the file does not have, and with --quick a key its quick settings shadow (each style the
/// experiment files use: `paper.quick.K`, `reproduce.quick.K`, a sibling `quick_K`). A key the
/// file does not have, under a table it does, is a warning.
#[test]
fn reproduce_set_that_would_change_nothing_is_refused() {
    let dir = std::env::temp_dir().join(format!("ackshape-repro-noop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.join("o");
    for (args, expect) in [
        (&["P0-F9", "--set", "reproduce.loss=[0.01]"][..], "no [reproduce] table, so P0-F9 reads nothing there"),
        (
            &["P0-F9", "--quick", "--set", "paper.loss=[0.01]"][..],
            "with --quick P0-F9 reads `paper.quick.loss` instead",
        ),
        (&["P1-T1-3", "--quick", "--set", "duration=10s"][..], "reads `paper.quick.duration` instead"),
        (&["P2-F9", "--quick", "--set", "reproduce.values=[1]"][..], "reads `reproduce.quick_values` instead"),
        (&["P3-F30", "--quick", "--set", "reproduce.seeds=1"][..], "reads `reproduce.quick.seeds` instead"),
        (&["P4-F7", "--quick", "--set", "paper.sweep.every=[2]"][..], "reads `paper.sweep.quick_every` instead"),
    ] {
        let mut a = vec!["reproduce", "-q", "--out", out.to_str().unwrap()];
        a.extend(args);
        let o = ackshape(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} ran");
    }
    // A key the file lacks, under a table it has: a warning, and the run goes on.
    let o = ackshape(&["reproduce", "-q", "P2-F11", "--set", "paper.nosuch=1", "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning: P2-F11") && err.contains("key `paper.nosuch` is not in the file"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
