//! `ackshape reproduce`: listing, unknown IDs, and the output files of a run.

use std::process::Command;

fn ackshape(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ackshape")).args(args).output().unwrap()
}

#[test]
fn list_and_unknown_id() {
    let out = ackshape(&["reproduce", "--list"]);
    assert!(out.status.success());
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
