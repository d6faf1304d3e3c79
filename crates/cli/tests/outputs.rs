//! `ackshape run` outputs: byte-identical summary.json for the same seed, and pcap export that tshark
//! reads with valid checksums and the link's packet count (issue 2, "done when" 6 and 7).

use std::path::{Path, PathBuf};
use std::process::Command;

const SCENARIO: &str = r#"
name = "outputs-test"
seed = 5
duration = "8s"
warmup = "1s"
trace_interval = "100ms"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "10ms", queue = "50pkt", jitter = "1ms", loss = { kind = "bernoulli", p = 0.002 } }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 3
start = "uniform(0s, 500ms)"
[[flows]]
kind = "udp-poisson"
rate = "500kbit/s"
"#;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ackshape-out-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(scn: &Path, out: &Path, extra: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .arg("run")
        .arg(scn)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "ackshape run failed: {}", String::from_utf8_lossy(&o.stderr));
}

fn without_wall_time(s: &str) -> String {
    s.lines().filter(|l| !l.trim_start().starts_with("\"wall_time_s\"")).collect::<Vec<_>>().join("\n")
}

#[test]
fn same_seed_gives_byte_identical_summary() {
    let d = tmpdir("det");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    run(&scn, &d.join("a"), &[]);
    run(&scn, &d.join("b"), &[]);
    let a = std::fs::read_to_string(d.join("a/summary.json")).unwrap();
    let b = std::fs::read_to_string(d.join("b/summary.json")).unwrap();
    assert!(a.contains("\"wall_time_s\""));
    assert_eq!(without_wall_time(&a), without_wall_time(&b));
    for f in ["timeseries.csv", "trace.csv"] {
        assert_eq!(std::fs::read(d.join("a").join(f)).unwrap(), std::fs::read(d.join("b").join(f)).unwrap(), "{f}");
    }
    // Required fields are present.
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    for k in ["events", "wall_time_s"] {
        assert!(v["sim"][k].is_number(), "sim.{k}");
    }
    assert_eq!(v["seed"], 5);
    for k in ["id", "goodput_bps", "bytes_delivered", "retransmitted_packets"] {
        assert!(!v["flows"][0][k].is_null(), "flows[].{k}");
    }
    for k in ["tx_packets", "drops", "utilization", "queue_avg_pkts", "queue_max_pkts"] {
        assert!(!v["links"][0][k].is_null(), "links[].{k}");
    }
    for k in ["goodput_bps", "jain", "cov"] {
        assert!(v["aggregate"][k].is_number(), "aggregate.{k}");
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn pcap_checksums_valid_and_count_matches() {
    let Ok(tshark) = which("tshark") else {
        panic!("tshark is not installed: run ./scripts/setup.sh (the test command does)");
    };
    let d = tmpdir("pcap");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    run(&scn, &d, &["--pcap", "bottleneck", "--pcap", "bottleneck:rev"]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap();
    for (link, file) in [("bottleneck", "bottleneck.pcap"), ("bottleneck:rev", "bottleneck_rev.pcap")] {
        let counter =
            v["links"].as_array().unwrap().iter().find(|l| l["name"] == link).unwrap()["tx_packets"].as_u64().unwrap();
        let pcap = d.join(file);
        let count = |filter: &str| -> u64 {
            let o = Command::new(&tshark)
                .args(["-n", "-r"])
                .arg(&pcap)
                .args([
                    "-o",
                    "tcp.check_checksum:TRUE",
                    "-o",
                    "udp.check_checksum:TRUE",
                    "-o",
                    "ip.check_checksum:TRUE",
                ])
                .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
                .output()
                .unwrap();
            assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.is_empty()).count() as u64
        };
        let all = count("frame");
        let tcp = count("tcp");
        let bad =
            count("tcp.checksum.status == \"Bad\" || udp.checksum.status == \"Bad\" || ip.checksum.status == \"Bad\"");
        let good_tcp = count("tcp.checksum.status == \"Good\"");
        println!("{link}: link counter {counter}, pcap frames {all}, TCP {tcp} (good checksums {good_tcp}), bad {bad}");
        assert!(counter > 100);
        assert_eq!(all, counter, "{link}: pcap frames vs link counter");
        assert_eq!(bad, 0, "{link}: bad checksums");
        assert_eq!(good_tcp, tcp, "{link}: every TCP checksum validated as good");
    }
    std::fs::remove_dir_all(&d).ok();
}

fn which(cmd: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(cmd)).find(|p| p.is_file()))
        .ok_or(())
}
