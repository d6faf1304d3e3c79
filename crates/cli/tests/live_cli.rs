//! The live commands end to end, through the real `ackshape` binary, inside network namespaces
//! the tests create (prefix `acks-lc…`). They need root, `ip` and `ethtool`; without them they
//! print `SKIPPED: <reason>` to stderr and return. A guard removes the namespaces even when a
//! test fails.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

static LIVE: Mutex<()> = Mutex::new(());

fn skip(test: &str) -> bool {
    if let Some(reason) = ackshape_live::testbed::preflight() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {test}: {reason}");
        return true;
    }
    false
}

/// Removes every namespace and link with the prefix when dropped (also on panic).
struct Cleanup(&'static str);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = ackshape_live::testbed::down(self.0);
    }
}

fn scenario(dir: &std::path::Path, prefix: &str) -> PathBuf {
    let p = dir.join("live.toml");
    std::fs::write(
        &p,
        format!(
            r#"
name = "live-cli"
duration = "8s"
warmup = "2s"
[tcp]
cc = "cubic"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbit/s", delay = "10ms", queue = "100pkt" }}
access = {{ rate = "100Mbit/s", delay = "0ms" }}
[[flows]]
count = 2
[live.testbed]
prefix = "{prefix}"
"#
        ),
    )
    .unwrap();
    p
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ackshape-livecli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn run_live_shapes_real_tcp_and_writes_summary() {
    if skip("run_live_shapes_real_tcp_and_writes_summary") {
        return;
    }
    let _l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let _c = Cleanup("acks-lc1");
    let d = tmp("run");
    let scn = scenario(&d, "acks-lc1");
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .args(["run", "--live"])
        .arg(&scn)
        .arg("--out")
        .arg(d.join("out"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "run --live failed");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(s["mode"], "live");
    let flows = s["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    for f in flows {
        assert_eq!(f["intact"], true, "{f}");
        assert!(f["bytes_delivered"].as_u64().unwrap() > 1_000_000, "{f}");
    }
    // Header-adjusted rate of the wanem's 10 Mbit/s limit (it counts Ethernet + IP bytes).
    let line = 10e6 * 1448.0 / 1514.0;
    let g = s["aggregate"]["goodput_bps"].as_f64().unwrap();
    println!("aggregate goodput {g:.0} bit/s vs header-adjusted {line:.0} ({:.3})", g / line);
    assert!((g / line - 1.0).abs() < 0.10, "aggregate goodput {g}");
    assert!(s["wanem"]["ports"].is_object(), "wanem stats included");
    let b = s["links"].as_array().unwrap().iter().find(|l| l["name"] == "bottleneck").expect("bottleneck link");
    let u = b["utilization"].as_f64().unwrap();
    println!("bottleneck: {b}");
    assert!(b["tx_packets"].as_u64().unwrap() > 1000 && u > 0.8 && u < 1.15, "{b}");
    assert!(ackshape_live::testbed::leftovers("acks-lc1").is_empty(), "namespaces removed after the run");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn testbed_up_then_down_leaves_nothing() {
    if skip("testbed_up_then_down_leaves_nothing") {
        return;
    }
    let _l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let _c = Cleanup("acks-lc2");
    let d = tmp("tb");
    let scn = scenario(&d, "acks-lc2");
    let up = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(["testbed", "up"]).arg(&scn).output().unwrap();
    assert!(up.status.success(), "{}", String::from_utf8_lossy(&up.stderr));
    assert!(!ackshape_live::testbed::namespaces("acks-lc2").is_empty(), "namespaces exist after up");
    let down = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(["testbed", "down"]).arg(&scn).output().unwrap();
    assert!(down.status.success(), "{}", String::from_utf8_lossy(&down.stderr));
    assert!(
        ackshape_live::testbed::leftovers("acks-lc2").is_empty(),
        "{:?}",
        ackshape_live::testbed::leftovers("acks-lc2")
    );
    std::fs::remove_dir_all(&d).ok();
}
