//! The live commands end to end, through the real `ackshape` binary, inside network namespaces
//! the tests create (prefix `acks-lc…`). They need root, `ip` and `ethtool`; without them they
//! print `SKIPPED: <reason>` to stderr and return. A guard removes the namespaces even when a
//! test fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static LIVE: Mutex<()> = Mutex::new(());

fn skip(test: &str) -> bool {
    ackshape_live::testbed::skip_unless_live(test)
}

/// Removes every namespace and link with the prefix when dropped (also on panic).
struct Cleanup(&'static str);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = ackshape_live::testbed::down(self.0);
    }
}

/// What a live test holds while it runs: the lock that runs live tests one at a time, the guard
/// that removes the namespaces and links with its prefix (also when the test fails) and a fresh
/// temporary directory. The fields drop in order: the namespaces go before the lock does.
struct Live {
    dir: PathBuf,
    _cleanup: Cleanup,
    _lock: std::sync::MutexGuard<'static, ()>,
}

/// The hold of live test `test` on namespace prefix `prefix` and a directory tagged `tag`; `None`
/// (with the reason printed) where live tests cannot run.
fn live(test: &str, prefix: &'static str, tag: &str) -> Option<Live> {
    if skip(test) {
        return None;
    }
    let lock = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    Some(Live { _cleanup: Cleanup(prefix), dir: tmp(tag), _lock: lock })
}

/// The parts of a live test's dumbbell scenario ([`dumbbell`]) that differ between tests.
#[derive(Default)]
struct Dumbbell<'a> {
    /// The run's top-level keys (`duration`, `warmup`).
    run: &'a str,
    /// `[tcp]` keys besides `cc = "cubic"`.
    tcp: &'a str,
    /// The dumbbell's links (`bottleneck`, `access`, …).
    links: &'a str,
    /// The two flows' other keys, and what follows the flows (a `[[middlebox]]`).
    flows: &'a str,
}

/// Write `DIR/FILE`: scenario `name`, two CUBIC flows over a dumbbell, `parts`, and the testbed's
/// namespace prefix `prefix`.
fn dumbbell(dir: &Path, file: &str, name: &str, prefix: &str, parts: Dumbbell) -> PathBuf {
    let Dumbbell { run, tcp, links, flows } = parts;
    let p = dir.join(file);
    let text = format!(
        "\nname = \"{name}\"\n{run}\n[tcp]\ncc = \"cubic\"\n{tcp}\n[topology]\nkind = \"dumbbell\"\n{links}\n\
         [[flows]]\ncount = 2\n{flows}\n[live.testbed]\nprefix = \"{prefix}\"\n"
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// A 100 Mbit/s bottleneck (1000-packet queue) behind 1 Gbit/s access links.
const LINKS_1G: &str = r#"bottleneck = { rate = "100Mbit/s", delay = "10ms", queue = "1000pkt" }
access = { rate = "1Gbit/s", delay = "0ms" }"#;

/// The 10 Mbit/s bottleneck (100-packet queue) behind 100 Mbit/s access links.
const LINKS_10M: &str = r#"bottleneck = { rate = "10Mbit/s", delay = "10ms", queue = "100pkt" }
access = { rate = "100Mbit/s", delay = "0ms" }"#;

fn scenario(dir: &std::path::Path, prefix: &str) -> PathBuf {
    let run = "duration = \"8s\"\nwarmup = \"2s\"";
    dumbbell(dir, "live.toml", "live-cli", prefix, Dumbbell { run, links: LINKS_10M, ..Default::default() })
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ackshape-livecli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `ackshape run -q --json SCN` (with `--live` when `live`), which must succeed: the summary and
/// what it printed to stderr (printed too).
fn run_json(scn: &Path, live: bool) -> (serde_json::Value, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ackshape"));
    c.args(["run", "-q", "--json"]).arg(scn);
    if live {
        c.arg("--live");
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    println!("{err}");
    assert!(o.status.success(), "run (live {live}) failed: {err}");
    (serde_json::from_slice(&o.stdout).unwrap(), err)
}

/// The summary's link `name`.
fn link_row(summary: &serde_json::Value, name: &str) -> serde_json::Value {
    summary["links"].as_array().unwrap().iter().find(|l| l["name"] == name).cloned().unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn run_live_shapes_real_tcp_and_writes_summary() {
    let Some(t) = live("run_live_shapes_real_tcp_and_writes_summary", "acks-lc1", "run") else {
        return;
    };
    let d = t.dir.clone();
    let scn = scenario(&d, "acks-lc1");
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .args(["run", "--live"])
        .arg(&scn)
        .arg("--out")
        .arg(d.join("out"))
        // The file says 10 Mbit/s: `--set` reaches the live run too.
        .args(["--set", "topology.bottleneck.rate=8Mbit/s"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "run --live failed");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(s["mode"], "live");
    assert_eq!(s["scenario"]["set"], serde_json::json!(["topology.bottleneck.rate=8Mbit/s"]));
    let flows = s["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    for f in flows {
        assert_eq!(f["intact"], true, "{f}");
        assert!(f["bytes_delivered"].as_u64().unwrap() > 1_000_000, "{f}");
    }
    // Header-adjusted rate of the wanem's 8 Mbit/s limit (it counts Ethernet + IP bytes).
    let line = 8e6 * 1448.0 / 1514.0;
    let g = s["aggregate"]["goodput_bps"].as_f64().unwrap();
    println!("aggregate goodput {g:.0} bit/s vs header-adjusted {line:.0} ({:.3})", g / line);
    assert!((g / line - 1.0).abs() < 0.10, "aggregate goodput {g}");
    assert!(s["wanem"]["ports"].is_object(), "wanem stats included");
    // Retransmissions per flow from the senders' TCP_INFO: every segment the wanem's queue dropped
    // was sent again (a retransmission may carry two lost segments, hence the margin).
    let retrans: u64 = flows.iter().map(|f| f["retransmitted_packets"].as_u64().expect("a count per flow")).sum();
    let drops = s["wanem"]["pipeline"]["a_to_b"]["queue_drops"].as_u64().unwrap();
    println!("retransmitted {retrans} segments; wanem queue drops {drops}");
    assert!(retrans as f64 >= 0.8 * drops as f64, "retransmitted {retrans} < drops {drops}");
    let b = s["links"].as_array().unwrap().iter().find(|l| l["name"] == "bottleneck").expect("bottleneck link");
    let u = b["utilization"].as_f64().unwrap();
    println!("bottleneck: {b}");
    assert!(b["tx_packets"].as_u64().unwrap() > 1000 && u > 0.8 && u < 1.15, "{b}");
    assert_eq!(b["rate_bps"].as_u64(), Some(8_000_000), "the --set rate: {b}");
    // The simulator's CSV files, for what a live run measures, and a line naming them.
    let o = d.join("out");
    let wrote = stdout.lines().find(|l| l.starts_with("wrote ")).expect("a wrote line");
    let mut said: Vec<&str> = wrote.split_once(": ").unwrap().1.split(", ").collect();
    let mut there: Vec<String> =
        std::fs::read_dir(&o).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    said.sort();
    there.sort();
    assert_eq!(said, there, "{wrote}");
    let csv = |f: &str| -> Vec<Vec<String>> {
        let t = std::fs::read_to_string(o.join(f)).unwrap();
        t.lines().map(|l| l.split(',').map(str::to_string).collect()).collect()
    };
    let fl = csv("flows.csv");
    assert_eq!(fl[0][..4], ["id", "name", "cc", "goodput_bps"]);
    assert_eq!(fl.len(), 3, "a header and two flows");
    let ts = csv("timeseries.csv");
    assert_eq!(ts[0], ["t_end_s", "flow", "goodput_bps"]);
    for (i, f) in flows.iter().enumerate() {
        let g = f["goodput_bps"].as_f64().unwrap();
        assert_eq!(fl[i + 1][3].parse::<f64>().unwrap(), g, "flows.csv row {i}");
        // The summary's goodput is the mean of the flow's 1-s bins that start in [warm-up, duration).
        let bins: Vec<f64> = ts[1..]
            .iter()
            .filter(|r| r[1] == i.to_string())
            .filter(|r| (2.0..8.0).contains(&(r[0].parse::<f64>().unwrap() - 1.0)))
            .map(|r| r[2].parse().unwrap())
            .collect();
        let mean = bins.iter().sum::<f64>() / bins.len() as f64;
        assert!((mean - g).abs() <= 1e-9 * g, "flow {i}: timeseries.csv window mean {mean} vs goodput {g}");
    }
    assert_eq!(csv("links.csv").len(), 3, "a header and the bottleneck's two directions");
    assert!(ackshape_live::testbed::leftovers("acks-lc1").is_empty(), "namespaces removed after the run");
    std::fs::remove_dir_all(&d).ok();
}

/// Flows their receivers open (`open = "receiver"`: the WAN-side receiver connects to a listener
/// on the LAN side, which answers with the data) through a TCR class: real TCP carries them, and
/// the gateway shows TCR each handshake, so it knows the window scale and rewrites windows, as in
/// the simulator.
#[test]
fn run_live_with_flows_their_receivers_open() {
    let Some(t) = live("run_live_with_flows_their_receivers_open", "acks-lc7", "ropen") else {
        return;
    };
    let d = t.dir.clone();
    let scn = dumbbell(
        &d,
        "ropen.toml",
        "ropen",
        "acks-lc7",
        Dumbbell {
            run: "duration = \"6s\"\nwarmup = \"2s\"",
            links: LINKS_1G,
            flows: r#"open = "receiver"
[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
policy = { default_class = "c", class = [ { name = "c", rate = "6Mbit/s", queue = "100pkt", mechanism = { kind = "tcr", overhead_bytes = 14 } } ], link = { outbound = "6Mbit/s" } }"#,
            ..Default::default()
        },
    );
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .args(["run", "--live"])
        .arg(&scn)
        .arg("--out")
        .arg(d.join("out"))
        .output()
        .unwrap();
    println!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "run --live failed");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap()).unwrap();
    let flows = s["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    for f in flows {
        assert_eq!(f["intact"], true, "{f}");
    }
    let g = s["aggregate"]["goodput_bps"].as_f64().unwrap();
    let want = 6e6 * 1448.0 / 1514.0;
    let st = &s["middleboxes"][0]["stats"];
    let tcr = &st["classes"]["c"]["mechanism_stats"]["outbound"];
    println!(
        "goodput {g:.0} bit/s of {want:.0}; receiver-opened {}, window rewrites {}, without handshake {}",
        st["flows"]["receiver_opened"], tcr["window_rewrites"], tcr["flows_without_handshake"]
    );
    assert!((g / want - 1.0).abs() < 0.10, "aggregate goodput {g}");
    assert_eq!(st["flows"]["receiver_opened"].as_u64(), Some(2), "{}", st["flows"]);
    assert_eq!(tcr["flows_without_handshake"].as_u64(), Some(0), "{tcr}");
    assert!(tcr["window_rewrites"].as_u64().unwrap() > 500, "{tcr}");
    for f in tcr["per_flow"].as_array().unwrap() {
        assert!(f["rcv_scale"].is_u64(), "{f}");
    }
    assert!(ackshape_live::testbed::leftovers("acks-lc7").is_empty());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn testbed_up_then_down_leaves_nothing() {
    let Some(t) = live("testbed_up_then_down_leaves_nothing", "acks-lc2", "tb") else {
        return;
    };
    let d = t.dir.clone();
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

/// A two-flow scenario through a qdisc-link box. The measured window starts at 4 s, after the
/// loss recovery that ends slow start: in-order goodput over a window that starts mid-recovery
/// counts the out-of-order backlog a hole fill releases (the simulator measured 4.26 Mbit/s of
/// goodput through a 4 Mbit/s box with the window from 2 s, 3.83 from 4 s).
fn qlink_scenario(dir: &std::path::Path, name: &str, queue: u32, prefix: &str) -> PathBuf {
    let flows = format!(
        "[[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nkind = \"qdisc-link\"\nrate = \"5Mbit/s\"\n\
         queue = \"{queue}pkt\"\noverhead = 14"
    );
    let parts =
        Dumbbell { run: "duration = \"10s\"\nwarmup = \"4s\"", links: LINKS_10M, flows: &flows, ..Default::default() };
    dumbbell(dir, &format!("{name}.toml"), name, prefix, parts)
}

#[test]
fn compare_runs_a_qdisc_link_box_in_both_drivers() {
    let Some(t) = live("compare_runs_a_qdisc_link_box_in_both_drivers", "acks-lc3", "compare") else {
        return;
    };
    let d = t.dir.clone();
    let big = qlink_scenario(&d, "qlink-q50", 50, "acks-lc3");
    let small = qlink_scenario(&d, "qlink-q12", 12, "acks-lc3");
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .arg("compare")
        .args([&big, &small])
        // The files say 5 Mbit/s; `--set` reaches both drivers.
        .args(["--set", "middlebox[0].rate=4Mbit/s"])
        .args(["--json", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "compare failed");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = r["scenarios"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, q) in rows.iter().zip([50.0, 12.0]) {
        // The box's queue is the buffer both drivers report, and TCP fills it in both.
        for side in ["sim", "live"] {
            let b = row[side]["buffer_max_pkts"].as_f64().unwrap();
            assert!(b <= q && b >= q * 0.5, "{side} buffer {b} for a {q}-packet queue: {row}");
        }
        assert_eq!(row["goodput_within_tolerance"], true, "{row}");
    }
    assert_eq!(r["same_buffer_ordering"], true);
    assert_eq!(r["set"], serde_json::json!(["middlebox[0].rate=4Mbit/s"]), "the report says what was set");
    // The live summary carries the box like the simulator's: kind, counts and its own stats.
    let live: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/qlink-q12/live/summary.json")).unwrap()).unwrap();
    let sim: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/qlink-q12/sim/summary.json")).unwrap()).unwrap();
    for s in [&live, &sim] {
        let m = &s["middleboxes"][0];
        assert_eq!(m["kind"], "qdisc-link", "{m}");
        assert_eq!(m["stats"]["a_to_b"]["rate_bps"], 4_000_000, "{m}");
        assert!(m["stats"]["a_to_b"]["sent"].as_u64().unwrap() > 1000, "{m}");
        assert!(m["packets_seen"].as_u64().unwrap() >= m["stats"]["a_to_b"]["sent"].as_u64().unwrap());
    }
    // Box drops make the senders retransmit, in both drivers.
    let retrans: u64 =
        live["flows"].as_array().unwrap().iter().map(|f| f["retransmitted_packets"].as_u64().unwrap()).sum();
    let dropped = live["middleboxes"][0]["stats"]["a_to_b"]["dropped"].as_u64().unwrap();
    assert!(retrans as f64 >= 0.8 * dropped as f64 && dropped > 0, "retrans {retrans}, box drops {dropped}");
    // Each side's directory has its run's files; compare.csv has the report's numbers.
    for side in ["sim", "live"] {
        for f in ["flows.csv", "links.csv", "timeseries.csv", "goodput.svg"] {
            assert!(d.join("out/qlink-q12").join(side).join(f).is_file(), "{side}/{f}");
        }
    }
    let svg = std::fs::read_to_string(d.join("out/qlink-q12/goodput-sim-vs-live.svg")).unwrap();
    assert!(svg.contains("simulator") && svg.contains("live"), "both series in the overlay");
    let csv = std::fs::read_to_string(d.join("out/compare.csv")).unwrap();
    let lines: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(lines.len(), 3, "a header and a row per scenario:\n{csv}");
    let col = |h: &str| lines[0].iter().position(|x| *x == h).unwrap_or_else(|| panic!("column {h}"));
    for (line, row) in lines[1..].iter().zip(rows) {
        assert_eq!(line[col("scenario")], row["scenario"].as_str().unwrap());
        for (h, side, key) in
            [("sim_goodput_bps", "sim", "goodput_bps"), ("live_buffer_max_pkts", "live", "buffer_max_pkts")]
        {
            assert_eq!(line[col(h)].parse::<f64>().unwrap(), row[side][key].as_f64().unwrap(), "{h}");
        }
        assert_eq!(line[col("goodput_within_tolerance")], row["goodput_within_tolerance"].to_string());
        // No policy, so nothing the live run could classify otherwise.
        assert_eq!(row["live_warnings"], 0, "{row}");
        assert_eq!(line[col("live_warnings")], "0");
        // Floats as summary.json prints them (the simulator's side is a mean over seeds).
        for cell in line {
            if let Ok(x) = cell.parse::<f64>() {
                assert_eq!(ackshape_sim::run::round_sig(x), x, "{cell} in compare.csv has more than 12 digits");
            }
        }
        let g = row["sim"]["goodput_bps"].as_f64().unwrap();
        assert_eq!(ackshape_sim::run::round_sig(g), g, "compare.json's sim goodput {g}");
    }
    assert!(ackshape_live::testbed::leftovers("acks-lc3").is_empty());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn run_live_rejects_a_box_it_cannot_place() {
    // Bad input is reported before anything needs root.
    let d = tmp("badbox");
    let p = qlink_scenario(&d, "bad", 10, "acks-lc4");
    let text = std::fs::read_to_string(&p).unwrap().replace("node = \"left\"", "node = \"right\"");
    std::fs::write(&p, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(["run", "--live"]).arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml") && err.contains("middlebox[0].node") && err.contains("\"left\""), "{err}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn run_live_rejects_more_flows_than_it_can_open() {
    // Also before anything needs root: 2000 flows would need ports past 6000 + 1000 and 4000 threads.
    let d = tmp("manyflows");
    let p = scenario(&d, "acks-lc9");
    let text = std::fs::read_to_string(&p).unwrap().replace("count = 2", "count = 2000");
    std::fs::write(&p, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(["run", "--live"]).arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("live.toml") && err.contains("flows[0].count") && err.contains("at most 1000 flows"), "{err}");
    std::fs::remove_dir_all(&d).ok();
}

/// The last JSON line of a stats file (None while there is none).
fn last_stats(p: &std::path::Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(p).ok()?;
    serde_json::from_str(text.lines().last()?).ok()
}

fn wait_stats(p: &std::path::Path, what: &str, ok: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(v) = last_stats(p).filter(|v| ok(v)) {
            return v;
        }
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn class_policy(rate: &str) -> String {
    format!(
        "malformed = \"drop\"\ndefault_class = \"all\"\n[link]\noutbound = \"{rate}\"\n[[class]]\nname = \"all\"\nrate = \"{rate}\"\nqueue = \"50pkt\"\n"
    )
}

#[test]
fn gateway_runs_its_policy_and_sighup_swaps_it() {
    use ackshape_live::testbed::{spawn_in_netns, TestbedGuard, TopologySpec};
    use std::time::{Duration, Instant};
    if skip("gateway_runs_its_policy_and_sighup_swaps_it") {
        return;
    }
    let _l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let mut spec = TopologySpec::new("acks-lc5");
    spec.wanem = false;
    let tb = TestbedGuard::up(&spec).unwrap();
    let d = tmp("gw");
    let (pol, stats) = (d.join("policy.toml"), d.join("stats.jsonl"));
    std::fs::write(&pol, class_policy("10Mbit/s")).unwrap();
    let gw = Command::new("ip")
        .args(["netns", "exec", &tb.ns_gateway, env!("CARGO_BIN_EXE_ackshape"), "gateway"])
        .args(["--lan", &tb.if_gw_lan, "--wan", &tb.if_gw_wan, "--stats-interval", "100ms", "--policy"])
        .arg(&pol)
        .arg("--stats-json")
        .arg(&stats)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut gw = Kill(gw);
    let pid = gw.0.id().to_string();
    let signal = |sig: &str| assert!(Command::new("kill").args([sig, &pid]).status().unwrap().success());
    wait_stats(&stats, "the gateway to start", |_| true);
    // Least privilege: once running, every thread of the `ackshape gateway` process has
    // CAP_NET_RAW (bit 13) and, for its default nice of -20, CAP_SYS_NICE (bit 23) as its
    // effective capabilities, nothing else, though it was started as root; its stats file is 0600.
    let want: u64 = (1 << 13) | (1 << 23);
    let tasks: Vec<(String, u64)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| {
            let st = std::fs::read_to_string(t.ok()?.path().join("status")).ok()?;
            let name = st.lines().find_map(|l| l.strip_prefix("Name:"))?.trim().to_string();
            let eff = st.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim().to_string();
            Some((name, u64::from_str_radix(&eff, 16).ok()?))
        })
        .collect();
    eprintln!("`ackshape gateway` threads and their effective capabilities: {tasks:x?}");
    assert!(!tasks.is_empty() && tasks.iter().all(|(_, e)| *e == want), "{tasks:x?}, expected {want:#x}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&stats).unwrap().permissions().mode() & 0o777, 0o600);
    // One TCP flow for 7 s; the policy is swapped from 10 to 4 Mbit/s 3 s in.
    let dst = std::net::SocketAddr::from((tb.receiver_addr, 5001));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = spawn_in_netns(&tb.ns_receiver, "sink", move || {
        let l = std::net::TcpListener::bind(dst)?;
        let _ = tx.send(());
        ackshape_live::traffic::tcp_sink(&l, 32 * 1024)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let src = spawn_in_netns(&tb.ns_sender, "source", move || {
        ackshape_live::traffic::tcp_source_until(dst, None, Some(Duration::from_secs(7)), 1, Some("cubic"))
    })
    .unwrap();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(2500));
    // A bad policy is rejected; the running one stays.
    std::fs::write(&pol, "default_class = \"nobody\"\n").unwrap();
    signal("-HUP");
    let v = wait_stats(&stats, "the rejected reload", |v| v["policy_reload_errors"] == 1);
    assert_eq!(v["pipeline"]["stats"]["classes"]["all"]["rate_bps"], 10_000_000);
    // The new policy also has a class nothing is sent to: valid, but the reload logs a warning.
    std::fs::write(&pol, class_policy("4Mbit/s") + "[[class]]\nname = \"spare\"\nrate = \"1Mbit/s\"\n").unwrap();
    signal("-HUP");
    wait_stats(&stats, "the reload", |v| v["policy_reloads"] == 1);
    let swapped = t0.elapsed();
    let s = src.join().unwrap().unwrap().unwrap();
    let r = sink.join().unwrap().unwrap().unwrap();
    signal("-TERM");
    let out = gw.0.wait_with_output_ref();
    assert_eq!(s.sha256, r.sha256);
    // Goodput before and after the swap, from the sink's byte marks (time since its first byte,
    // which came right after t0).
    let rate = |from: f64, to: f64| {
        let m: Vec<&(u64, Duration)> =
            r.marks.iter().filter(|(_, t)| t.as_secs_f64() >= from && t.as_secs_f64() <= to).collect();
        let (a, b) = (m.first().unwrap(), m.last().unwrap());
        (b.0 - a.0) as f64 * 8.0 / (b.1 - a.1).as_secs_f64()
    };
    let sw = swapped.as_secs_f64();
    let (before, after) = (rate(1.0, 2.4), rate(sw + 0.8, 6.8));
    let fx = 1448.0 / 1514.0;
    println!(
        "gateway policy 10 → 4 Mbit/s at {sw:.2} s: goodput {:.3} then {:.3} Mbit/s (header-adjusted {:.3}, {:.3}); stderr: {}",
        before / 1e6,
        after / 1e6,
        10.0 * fx,
        4.0 * fx,
        out.1
    );
    assert!((before / (10e6 * fx) - 1.0).abs() < 0.1, "before {before}");
    assert!((after / (4e6 * fx) - 1.0).abs() < 0.1, "after {after}");
    assert!(out.0.success(), "gateway exit");
    let last: serde_json::Value = serde_json::from_str(out.2.lines().last().unwrap()).unwrap();
    assert_eq!(last["pipeline"]["kind"], "gateway");
    assert_eq!(last["pipeline"]["reloads"], 1);
    assert_eq!(last["pipeline"]["stats"]["classes"]["all"]["rate_bps"], 4_000_000);
    assert!(out.1.contains("nobody"), "the rejection names the bad class: {}", out.1);
    // The log on stderr: the start, the reload, and the new policy's warning with its key.
    for line in [
        "gateway up: lan ",
        "(1 class, 0 rules, outbound 10Mbit/s, inbound unlimited); SIGHUP reloads",
        "policy reloaded from ",
        "2 classes, 0 rules, outbound 4Mbit/s",
        "key `class[1]`: no rule names class \"spare\"",
    ] {
        assert!(out.1.contains(line), "stderr lacks {line:?}: {}", out.1);
    }
    std::fs::remove_dir_all(&d).ok();
}

trait WaitOutput {
    /// Wait for the child; (status, stderr, stdout).
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String, String);
}
impl WaitOutput for std::process::Child {
    fn wait_with_output_ref(&mut self) -> (std::process::ExitStatus, String, String) {
        use std::io::Read;
        let (mut o, mut e) = (String::new(), String::new());
        if let Some(s) = self.stdout.as_mut() {
            let _ = s.read_to_string(&mut o);
        }
        if let Some(s) = self.stderr.as_mut() {
            let _ = s.read_to_string(&mut e);
        }
        (self.wait().unwrap(), e, o)
    }
}

/// The commands `testbed up` prints run the scenario by hand: its wanem, its gateway with the
/// policy `--policy-out` wrote (a 4 Mbit/s class on a 100 Mbit/s WAN, so the rate is the policy's),
/// and iperf3; `testbed down` then stops what runs in the namespaces.
#[test]
fn the_commands_testbed_up_prints_run_the_scenario_by_hand() {
    let Some(t) = live("the_commands_testbed_up_prints_run_the_scenario_by_hand", "acks-lc6", "hand") else {
        return;
    };
    if Command::new("iperf3").arg("--version").output().is_err() {
        ackshape_live::testbed::skip(
            "the_commands_testbed_up_prints_run_the_scenario_by_hand",
            "no iperf3 (scripts/setup.sh installs it)",
        );
        return;
    }
    let d = t.dir.clone();
    let scn = dumbbell(
        &d,
        "hand.toml",
        "hand",
        "acks-lc6",
        Dumbbell {
            run: "duration = \"4s\"",
            links: &LINKS_1G.replace("delay = \"10ms\"", "delay = \"5ms\""),
            flows: r#"[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
policy = { default_class = "c", class = [ { name = "c", rate = "4Mbit/s", queue = "50pkt", mechanism = { kind = "tcr" } } ] }"#,
            ..Default::default()
        },
    );
    let bin = env!("CARGO_BIN_EXE_ackshape");
    let up = Command::new(bin)
        .args(["testbed", "up"])
        .arg(&scn)
        .arg("--policy-out")
        .arg(d.join("gw.toml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&up.stdout).to_string();
    assert!(up.status.success(), "{}{}", text, String::from_utf8_lossy(&up.stderr));
    eprintln!("{text}");
    // The printed commands, as a user would paste them (the binary named by its path).
    let cmds: Vec<Vec<String>> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ip netns exec "))
        .map(|l| {
            let l = l.trim_end_matches('&').trim();
            let mut w: Vec<String> = vec!["netns".into(), "exec".into()];
            w.extend(l.split_whitespace().map(|x| if x == "ackshape" { bin.to_string() } else { x.to_string() }));
            w
        })
        .collect();
    let find = |what: &str| {
        cmds.iter()
            .find(|c| c.iter().any(|w| w == what))
            .unwrap_or_else(|| panic!("no {what} command in:\n{text}"))
            .clone()
    };
    let wanem = find("wanem");
    let gateway = find("gateway");
    let server = find("-s");
    let client = find("-c");
    assert!(wanem.join(" ").contains("--delay 5ms --rate 100Mbit/s --queue 1000"), "{wanem:?}");
    assert!(gateway.join(" ").contains(&format!("--policy {}", d.join("gw.toml").display())), "{gateway:?}");
    assert!(client.join(" ").contains("-t 4 -P 2 -C cubic"), "{client:?}");
    let spawn = |c: &[String]| {
        Command::new("ip")
            .args(c)
            .current_dir(&d)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let w = spawn(&wanem);
    let g = spawn(&gateway);
    let s = Command::new("ip").args(&server).current_dir(&d).status().unwrap();
    assert!(s.success(), "iperf3 server");
    // `iperf3 -s -D` returns before its daemon listens: wait for the socket (a condition, not a
    // time). A SYN that reaches the gateway before it is up is retransmitted by TCP.
    let t0 = std::time::Instant::now();
    loop {
        let ss = Command::new("ip").args(["netns", "exec", "acks-lc6-rcv", "ss", "-ltnH"]).output().unwrap();
        if String::from_utf8_lossy(&ss.stdout).contains(":5201") {
            break;
        }
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "iperf3 -s never listened");
        std::thread::yield_now();
    }
    let mut client_j = client.clone();
    client_j.push("-J".into());
    let out = Command::new("ip").args(&client_j).current_dir(&d).output().unwrap();
    assert!(out.status.success(), "iperf3 client: {}", String::from_utf8_lossy(&out.stdout));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bps = j["end"]["sum_received"]["bits_per_second"].as_f64().unwrap();
    // The class's 4 Mbit/s carries 4 × 1448/1514 of TCP payload; iperf3's average includes the
    // start (slow start and the sender's initial window). Far below the WAN's 100 Mbit/s.
    eprintln!("iperf3 through the hand-run gateway: {:.3} Mbit/s (class 4 Mbit/s, WAN 100 Mbit/s)", bps / 1e6);
    assert!(bps > 0.8 * 3.826e6 && bps < 1.1 * 4e6, "{bps} bit/s");
    // The same the other way (`-R`): a download the receiver asked for, shaped by the class's
    // inbound TCR, which learns the handshake from the gateway and so rewrites windows.
    client_j.push("-R".into());
    let out = Command::new("ip").args(&client_j).current_dir(&d).output().unwrap();
    assert!(out.status.success(), "iperf3 -R client: {}", String::from_utf8_lossy(&out.stdout));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bps_r = j["end"]["sum_received"]["bits_per_second"].as_f64().unwrap();
    eprintln!(
        "iperf3 -R (download the receiver opened): {:.3} Mbit/s, {} retransmissions",
        bps_r / 1e6,
        j["end"]["sum_sent"]["retransmits"]
    );
    assert!(bps_r > 0.8 * 3.826e6 && bps_r < 1.1 * 4e6, "{bps_r} bit/s");
    let down = Command::new(bin).args(["testbed", "down", "--prefix", "acks-lc6"]).output().unwrap();
    let dtext = String::from_utf8_lossy(&down.stdout).to_string();
    eprintln!("{dtext}");
    assert!(down.status.success(), "{}", String::from_utf8_lossy(&down.stderr));
    assert!(dtext.contains("stopped 3 processes") && dtext.contains("(iperf3)"), "{dtext}");
    // The gateway and the wanem got SIGTERM: they exit cleanly and print their last stats.
    let go = g.wait_with_output().unwrap();
    let wo = w.wait_with_output().unwrap();
    assert!(go.status.success() && wo.status.success(), "{:?} {:?}", go.status, wo.status);
    let last: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&go.stdout).lines().last().unwrap()).unwrap();
    let class = &last["pipeline"]["stats"]["classes"]["c"];
    assert_eq!(class["mechanism"], "tcr", "the gateway ran the scenario's policy: {class}");
    assert!(class["sent_pkts"].as_u64().unwrap() > 1000, "{class}");
    let inbound = &class["mechanism_stats"]["inbound"];
    let flows = &last["pipeline"]["stats"]["flows"];
    eprintln!(
        "inbound TCR: {} window rewrites, {} flows without a handshake; {flows}",
        inbound["window_rewrites"], inbound["flows_without_handshake"]
    );
    assert!(flows["receiver_opened"].as_u64().unwrap() >= 2, "the -R data connections: {flows}");
    assert_eq!(inbound["flows_without_handshake"].as_u64(), Some(0), "{inbound}");
    assert!(inbound["window_rewrites"].as_u64().unwrap() > 500, "{inbound}");
    assert!(ackshape_live::testbed::processes("acks-lc6").is_empty());
    assert!(ackshape_live::testbed::leftovers("acks-lc6").is_empty());
    std::fs::remove_dir_all(&d).ok();
}

/// A bottleneck with a queue discipline runs live: the wanem runs the simulator's link code
/// (`WanLink`: loss, rate and discipline, delay) instead of its drop-tail limiter. RED with ECN
/// between ECN-capable Linux hosts marks instead of filling the queue, in both drivers; the
/// summary's bottleneck link reads the box's counters.
#[test]
fn run_live_runs_the_bottleneck_qdisc_in_the_wanem() {
    let Some(t) = live("run_live_runs_the_bottleneck_qdisc_in_the_wanem", "acks-lc8", "redecn") else {
        return;
    };
    let d = t.dir.clone();
    let links = LINKS_10M.replace(
        "queue = \"100pkt\"",
        "qdisc = { kind = \"red\", ecn = true, min_th = 5, max_th = 15, limit_pkts = 100 }",
    );
    let run = "duration = \"8s\"\nwarmup = \"2s\"";
    let parts = Dumbbell { run, tcp: "ecn = true", links: &links, ..Default::default() };
    let scn = dumbbell(&d, "red.toml", "live-red-ecn", "acks-lc8", parts);
    let run = |live: bool| {
        let (summary, err) = run_json(&scn, live);
        assert!(!err.contains("bottleneck.qdisc"), "no warning that the discipline is not applied: {err}");
        summary
    };
    let (sim, live) = (run(false), run(true));
    let p = &live["wanem"]["pipeline"];
    assert_eq!(p["kind"], "wan-link", "the wanem ran the link box: {p}");
    let fwd = &p["stats"]["a_to_b"];
    println!("live bottleneck: {fwd}");
    let marks = fwd["qdisc"]["red_ecn_marks"].as_u64().unwrap();
    let queue_max = fwd["max_queue"].as_u64().unwrap();
    assert!(marks > 0, "RED marked ECN-capable packets live: {fwd}");
    assert!(queue_max < 100, "the queue never reached its 100-packet limit (drop-tail's would): {fwd}");
    let link = link_row(&live, "bottleneck");
    assert_eq!(link["drops"], fwd["queue_drops"], "{link}");
    assert_eq!(link["queue_max_pkts"].as_u64(), Some(queue_max), "{link}");
    let sim_link = link_row(&sim, "bottleneck");
    let sim_marks = sim_link["qdisc_counters"]["red_ecn_marks"].as_u64().unwrap_or(0);
    assert!(sim_marks > 0, "the simulator marks too: {sim_link}");
    let (gs, gl) =
        (sim["aggregate"]["goodput_bps"].as_f64().unwrap(), live["aggregate"]["goodput_bps"].as_f64().unwrap());
    println!("goodput sim {gs:.0} live {gl:.0} ({:.3}); ECN marks sim {sim_marks} live {marks}", gl / gs);
    // The wanem charges the Ethernet header, the simulator's link does not: 1448/1514 vs 1448/1500.
    assert!((gl / (gs * 1500.0 / 1514.0) - 1.0).abs() < 0.15, "goodput sim {gs} live {gl}");
    assert!(ackshape_live::testbed::leftovers("acks-lc8").is_empty());
    std::fs::remove_dir_all(&d).ok();
}

/// Each flow's path beyond the bottleneck runs live as in the simulator: the wanem runs the
/// bottleneck followed by each receiver's own access link (`Series` of the bottleneck and a
/// `Split` of `WanLink`s, by the flow's port), with its rate, queue and loss, and each pair's
/// access delays (an RTT group's too). Two flows behind 6 Mbit/s access links get 6 Mbit/s each,
/// together more than one such link carries; the random loss is the access links' alone.
#[test]
fn run_live_runs_each_flows_access_link_behind_the_bottleneck() {
    let Some(t) = live("run_live_runs_each_flows_access_link_behind_the_bottleneck", "acks-lca", "racc") else {
        return;
    };
    let d = t.dir.clone();
    let links = LINKS_10M.replace("10Mbit/s", "20Mbit/s")
        + r#"
receiver_access = { rate = "6Mbit/s", delay = "5ms", queue = "50pkt", loss = { kind = "bernoulli", p = 0.002 } }
[[topology.groups]]
senders = 1
access = { delay = "10ms" }"#;
    let run = "duration = \"8s\"\nwarmup = \"2s\"";
    let scn = dumbbell(
        &d,
        "racc.toml",
        "live-receiver-access",
        "acks-lca",
        Dumbbell { run, links: &links, ..Default::default() },
    );
    let run = |live: bool| {
        let (summary, err) = run_json(&scn, live);
        assert!(!err.contains("access") && !err.contains("groups"), "no warning that a link is not applied: {err}");
        summary
    };
    let (sim, live) = (run(false), run(true));
    let p = &live["wanem"]["pipeline"];
    assert_eq!(p["kind"], "wan-link", "the wanem ran the link box: {p}");
    let link = link_row;
    for name in ["bottleneck", "access-d0", "access-d1"] {
        println!("{name}: sim {}\n{name}: live {}", link(&sim, name), link(&live, name));
    }
    let bn = &p["stats"]["bottleneck"]["a_to_b"];
    let acc = [&p["stats"]["access"]["access-d0"]["a_to_b"], &p["stats"]["access"]["access-d1"]["a_to_b"]];
    // The loss is the access links' alone, Bernoulli(0.002) over what reached them: within five
    // standard deviations of its mean.
    assert_eq!(bn["lost"].as_u64(), Some(0), "{bn}");
    let num = |v: &serde_json::Value| v.as_u64().unwrap() as f64;
    let (frames, lost) = (num(&acc[0]["frames"]) + num(&acc[1]["frames"]), num(&acc[0]["lost"]) + num(&acc[1]["lost"]));
    let mean = 0.002 * frames;
    assert!(lost > 0.0 && (lost - mean).abs() <= 5.0 * mean.sqrt(), "lost {lost} of {frames} (mean {mean})");
    // Everything the bottleneck sent reached one of the access links, each flow's its own.
    assert_eq!(num(&acc[0]["frames"]) + num(&acc[1]["frames"]), num(&bn["forwarded"]), "{p}");
    assert!(num(&acc[0]["frames"]) > 1000.0 && num(&acc[1]["frames"]) > 1000.0, "{p}");
    assert_eq!(link(&live, "access-d1")["lost"], acc[1]["lost"]);
    // Each flow gets at most its access link's 6 Mbit/s (1448 of each 1514-byte frame), the two
    // together more than one such link: each has its own, as in the simulator.
    let cap = 6e6 * 1448.0 / 1514.0;
    let flows = live["flows"].as_array().unwrap();
    for f in flows {
        let g = f["goodput_bps"].as_f64().unwrap();
        assert!(g <= 1.02 * cap, "flow goodput {g} above its {cap} bit/s access link: {f}");
    }
    let gl = live["aggregate"]["goodput_bps"].as_f64().unwrap();
    let gs = sim["aggregate"]["goodput_bps"].as_f64().unwrap();
    println!("goodput sim {gs:.0} live {gl:.0} ({:.3})", gl / gs);
    assert!(gl > 1.2 * cap, "two flows on their own access links: {gl} bit/s in all");
    assert!((gl / gs - 1.0).abs() < 0.15, "goodput sim {gs} live {gl}");
    assert!(ackshape_live::testbed::leftovers("acks-lca").is_empty());
    std::fs::remove_dir_all(&d).ok();
}
