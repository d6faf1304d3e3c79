//! Bad scenario input: exit code 2 and a message naming the file, the key and what was expected.

use std::process::Command;

const GOOD: &str = r#"
duration = "10s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "20ms", queue = "100pkt" }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 2
"#;

/// Run `ackshape validate` and `ackshape run` on `text`; both must fail with code 2 and mention
/// the file name, `key` and every string in `expect`.
fn check(case: &str, text: &str, key: &str, expect: &[&str]) {
    let dir = std::env::temp_dir().join(format!("ackshape-bad-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{case}.toml"));
    std::fs::write(&path, text).unwrap();
    for sub in ["validate", "run"] {
        let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg(sub).arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        eprintln!("[{case}] ackshape {sub} → {:?}: {err}", out.status.code());
        assert_eq!(out.status.code(), Some(2), "{case}: exit code");
        assert!(err.contains(&format!("{case}.toml")), "{case}: names the file: {err}");
        assert!(err.contains(key), "{case}: names key {key}: {err}");
        for e in expect {
            assert!(err.contains(e), "{case}: says {e:?}: {err}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn good_scenario_validates() {
    let dir = std::env::temp_dir().join(format!("ackshape-good-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("good.toml");
    std::fs::write(&path, GOOD).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("validate").arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn malformed_toml() {
    check("malformed", &GOOD.replace("duration = \"10s\"", "duration = \"10s"), "line", &["TOML", "line 2"]);
}

#[test]
fn unknown_key() {
    check("unknown", &GOOD.replace("[[flows]]", "[[flows]]\nbogus_key = 3"), "flows[0].bogus_key", &["unknown field"]);
}

#[test]
fn wrong_unit() {
    check(
        "unit",
        &GOOD.replace("rate = \"10Mbit/s\"", "rate = \"10 furlongs\""),
        "topology.bottleneck.rate",
        &["expected a rate"],
    );
}

#[test]
fn negative_delay() {
    check(
        "negdelay",
        &GOOD.replace("delay = \"20ms\"", "delay = \"-20ms\""),
        "topology.bottleneck.delay",
        &["non-negative"],
    );
}

#[test]
fn loss_above_one() {
    check(
        "loss",
        &GOOD.replace("queue = \"100pkt\" }", "queue = \"100pkt\", loss = { kind = \"bernoulli\", p = 1.5 } }"),
        "topology.bottleneck.loss",
        &["probability", "1.5"],
    );
}

#[test]
fn zero_rate_link() {
    check(
        "zerorate",
        &GOOD.replace("rate = \"100Mbit/s\"", "rate = \"0Mbit/s\""),
        "topology.access.rate",
        &["positive rate"],
    );
}
