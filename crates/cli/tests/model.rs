//! `ackshape model`: the printed numbers come from the core models, bad input exits 2.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("model").args(args).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr))
}

#[test]
fn mathis_and_padhye_match_the_formulas() {
    // Mathis with b = 2: (1/RTT)·sqrt(3/(2·2·0.01)) = 86.60 packets/s at RTT 100 ms.
    let (c, out) = run(&["mathis", "-p", "0.01", "--rtt", "100ms", "--json"]);
    assert_eq!(c, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!((v["packets_per_s"].as_f64().unwrap() - 86.60).abs() < 0.01, "{v}");
    let (c, out) = run(&["padhye", "-p", "0.01", "--rtt", "100ms", "--rto", "1s", "--json"]);
    assert_eq!(c, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let pps = v["packets_per_s"].as_f64().unwrap();
    assert!(pps > 60.0 && pps < 80.0, "Padhye below Mathis at p = 1%: {pps}");
}

#[test]
fn afvq_model_both_directions() {
    let (c, out) = run(&[
        "afvq",
        "--down",
        "2.1Mbit/s",
        "--up",
        "800kbit/s",
        "--delay",
        "10ms",
        "--data-bytes",
        "1500",
        "--maxwnd",
        "44",
    ]);
    assert_eq!(c, Some(0), "{out}");
    assert!(out.contains("download:") && out.contains("upload:") && out.contains("aggregated utilization"), "{out}");
    let (c, out) = run(&["afvq", "--down", "2.1Mbit/s", "--up", "800kbit/s", "--json"]);
    assert_eq!(c, Some(0));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let agg = v["output"]["aggregated_utilization"].as_f64().unwrap();
    assert!(agg > 1.5 && agg <= 2.0, "{agg}");
}

#[test]
fn bad_model_input_exits_2() {
    for args in [
        &["mathis", "-p", "2", "--rtt", "10ms"][..],
        &["padhye", "-p", "0.01", "--rtt", "10 parsecs"][..],
        &["afvq", "--down", "fast", "--up", "1Mbit/s"][..],
        &["afvq", "--down", "1Mbit/s", "--up", "1Mbit/s", "--loss", "2"][..],
    ] {
        let (c, out) = run(args);
        assert_eq!(c, Some(2), "{args:?}: {out}");
        assert!(out.contains("error:"), "{out}");
    }
}

/// Numbers that parse but give no throughput (NaN, an infinite or empty window) are errors naming
/// the flag, not a printed `NaN packets/s`.
#[test]
fn non_finite_or_empty_model_input_names_the_flag() {
    for (args, flag) in [
        (&["padhye", "-p", "0.01", "--rtt", "100ms", "--b", "NaN"][..], "--b:"),
        (&["mathis", "-p", "0.01", "--rtt", "100ms", "--b", "inf"][..], "--b:"),
        (&["padhye", "-p", "0.01", "--rtt", "100ms", "--wmax", "0"][..], "--wmax:"),
        (&["padhye", "-p", "0.01", "--rtt", "100ms", "--wmax", "NaN"][..], "--wmax:"),
        (&["edge", "-p", "0.01", "--ww", "inf"][..], "--ww:"),
        (&["edge", "-p", "0.01", "--ww", "1", "--mss", "inf"][..], "--mss:"),
    ] {
        let (c, out) = run(args);
        assert_eq!(c, Some(2), "{args:?}: {out}");
        assert!(out.contains(&format!("error: {flag}")), "{args:?} names {flag}: {out}");
    }
    let (c, out) = run(&["padhye", "-p", "0.01", "--rtt", "100ms", "--wmax", "1"]);
    assert_eq!(c, Some(0), "a one-segment window is a window: {out}");
}

/// `model afvq`'s errors name its flags, not the model's input fields.
#[test]
fn afvq_errors_name_the_flag() {
    for (extra, flag) in [
        (&["--down", "0bit/s", "--up", "1Mbit/s"][..], "--down: expected a number > 0"),
        (&["--down", "1Mbit/s", "--up", "0bit/s"][..], "--up: expected a number > 0"),
        (&["--down", "1Mbit/s", "--up", "1Mbit/s", "--loss", "1"][..], "--loss: expected a probability in [0, 1)"),
        (&["--down", "1Mbit/s", "--up", "1Mbit/s", "--maxwnd", "0"][..], "--maxwnd: expected a number > 0"),
        (&["--down", "1Mbit/s", "--up", "1Mbit/s", "--data-bytes", "0"][..], "--data-bytes"),
        (&["--down", "1Mbit/s", "--up", "1Mbit/s", "--acks-queued=-1"][..], "--acks-queued: expected a number >= 0"),
        (&["--down", "1Mbit/s", "--up", "1Mbit/s", "--b", "0"][..], "--b: expected at least 1"),
    ] {
        let args: Vec<&str> = std::iter::once("afvq").chain(extra.iter().copied()).collect();
        let (c, out) = run(&args);
        assert_eq!(c, Some(2), "{args:?}: {out}");
        assert!(out.contains(flag), "{args:?} names {flag:?}: {out}");
    }
}

#[test]
fn edge_model_from_rate_and_bad_input() {
    // 200 KB/s over 50 ms with 1500-byte packets: W_w = 6.67, the regime of p = 1% is case 3.
    let (c, out) = run(&["edge", "-p", "0.01", "--rate", "200KB/s", "--rtt", "50ms", "--json"]);
    assert_eq!(c, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!((v["point"]["ww"].as_f64().unwrap() - 6.667).abs() < 0.01, "{v}");
    assert_eq!(v["point"]["regime"], "case3", "{v}");
    let (pfq, tcr) = (v["pfq_bps"].as_f64().unwrap(), v["tcr_bps"].as_f64().unwrap());
    assert!(pfq > tcr && pfq <= 1.6e6, "{v}");
    let (c, out) = run(&["edge", "-p", "0.01"]);
    assert_eq!(c, Some(2), "{out}");
    assert!(out.contains("--rate") && out.contains("--ww"), "{out}");
    let (c, out) = run(&["edge", "-p", "0.01", "--rate", "200"]);
    assert_eq!(c, Some(2), "{out}");
    assert!(out.contains("--rate"), "{out}");
}
