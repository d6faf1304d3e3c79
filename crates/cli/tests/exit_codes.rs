//! The exit-status contract of every command (`ackshape --help` ends with it): 0 success, 1 a
//! failure while running, 2 bad input (named), 3 cannot run here (not root, a missing interface or
//! tool). One test per code, over the commands that can give it; none needs root or sends a frame
//! (the interfaces named do not exist, so no AF_PACKET socket is ever opened).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ackshape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .env("ACKSHAPE_LOG", "warn")
        .output()
        .unwrap()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ackshape-exit-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[track_caller]
fn expect(o: &Output, code: i32, stderr_has: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(stderr_has), "expected {stderr_has:?} in stderr: {err}");
}

/// Interface names no test namespace uses (at most 15 characters).
const NO_IF_A: &str = "acks-noif-a0";
const NO_IF_B: &str = "acks-noif-b0";

#[test]
fn help_states_the_contract() {
    let o = ackshape(&["--help"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for part in ["Exit status", "0 success", "1 runtime failure", "2 bad input", "3 cannot run here"] {
        assert!(out.contains(part), "{part:?} missing from --help:\n{out}");
    }
}

#[test]
fn exit_0_on_success() {
    expect(&ackshape(&["validate", "experiments/examples/dumbbell.toml"]), 0, "");
    expect(&ackshape(&["validate", "--policy", "experiments/examples/gateway-policy.toml"]), 0, "");
    expect(&ackshape(&["example", "scenario"]), 0, "");
    expect(&ackshape(&["run", "-q", "--set", "duration=2s", "--set", "warmup=1s"]), 0, "");
}

#[test]
fn exit_1_on_a_runtime_failure() {
    // The output directory cannot be created: a regular file stands where its parent should be.
    let d = tmpdir("rt");
    std::fs::write(d.join("file"), "").unwrap();
    let out = d.join("file").join("out");
    let o = ackshape(&["run", "-q", "--set", "duration=2s", "--set", "warmup=1s", "--out", out.to_str().unwrap()]);
    expect(&o, 1, "file");
    // A claim that does not hold, under --strict (P2-F3 reports its claims failing in quick mode).
    let o = ackshape(&["reproduce", "-q", "--quick", "--strict", "--out", d.join("r").to_str().unwrap(), "P2-F3"]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn exit_2_on_bad_input() {
    let d = tmpdir("bad");
    let bad = d.join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\nduration = \"ten seconds\"\n").unwrap();
    let b = bad.to_str().unwrap();
    expect(&ackshape(&["run", b]), 2, "bad.toml");
    expect(&ackshape(&["validate", b]), 2, "bad.toml");
    expect(&ackshape(&["sweep", b, "--set", "seed=1,2", "-q"]), 2, "bad.toml");
    expect(&ackshape(&["reproduce", "P9-F99"]), 2, "P9-F99");
    // The live boxes: one interface for both ports, or a bad flag, before any socket is opened.
    expect(&ackshape(&["gateway", "--lan", NO_IF_A, "--wan", NO_IF_A]), 2, "different interfaces");
    expect(&ackshape(&["wanem", "--a", NO_IF_A, "--b", NO_IF_B, "--delay", "soon"]), 2, "--delay");
    expect(&ackshape(&["wanem", "--a", NO_IF_A, "--b", NO_IF_A]), 2, "different interfaces");
    let pol = d.join("policy.toml");
    std::fs::write(&pol, "default_class = \"nosuch\"\n").unwrap();
    expect(
        &ackshape(&["gateway", "--lan", NO_IF_A, "--wan", NO_IF_B, "--policy", pol.to_str().unwrap()]),
        2,
        "policy.toml",
    );
    expect(
        &ackshape(&[
            "tap",
            "--mirror",
            NO_IF_A,
            "--inject",
            NO_IF_A,
            "--policy",
            "experiments/examples/tap-policy.toml",
            "--router-mac",
            "02:00:00:00:00:01",
        ]),
        2,
        "different interfaces",
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn exit_3_when_it_cannot_run_here() {
    // An interface that is not in this network namespace: the machine, not the input, lacks it.
    expect(&ackshape(&["gateway", "--lan", NO_IF_A, "--wan", NO_IF_B]), 3, NO_IF_A);
    expect(&ackshape(&["wanem", "--a", NO_IF_A, "--b", NO_IF_B]), 3, NO_IF_A);
    expect(
        &ackshape(&[
            "tap",
            "--mirror",
            NO_IF_A,
            "--inject",
            NO_IF_B,
            "--policy",
            "experiments/examples/tap-policy.toml",
            "--router-mac",
            "02:00:00:00:00:01",
        ]),
        3,
        NO_IF_A,
    );
    // A tool the command needs is missing (sweep --dask without Python).
    let d = tmpdir("tool");
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["sweep", "experiments/examples/dumbbell.toml", "--dask", "tcp://127.0.0.1:1", "-q"])
        .env("ACKSHAPE_PYTHON", d.join("no-such-python"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}
