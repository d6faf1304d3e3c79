//! `ackshape sweep` and `ackshape run --set`: the files agree with single runs, and a bad key is
//! named with the file and the `--set` it came from.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCENARIO: &str = r#"
name = "sweep-cli"
seed = 4
duration = "5s"
warmup = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "4Mbit/s", delay = "10ms", queue = "30pkt", loss = { kind = "bernoulli", p = 0.003 } }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 3
start = "uniform(0s, 500ms)"
"#;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ackshape-sweep-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ackshape(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ackshape")).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn csv(p: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let head = lines.next().unwrap().split(',').map(String::from).collect();
    (head, lines.map(|l| l.split(',').map(String::from).collect()).collect())
}

#[test]
fn a_sweep_writes_every_run_and_each_agrees_with_run_set() {
    let d = tmpdir("files");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    let out = d.join("out");
    // 3 rates × 2 senders.
    let sweep = |more: &[&str]| {
        let mut args =
            vec!["sweep", scn.to_str().unwrap(), "--set", "topology.bottleneck.rate=2Mbit/s,4Mbit/s,8Mbit/s"];
        args.extend(["--set", "tcp.cc=reno,cubic"]);
        args.extend(more);
        ackshape(&args)
    };
    let o = sweep(&["--seeds", "2", "--out", out.to_str().unwrap(), "-j", "2", "--plot", "jain,retransmit_ratio"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("6 points, 2 seeds each"), "{stdout}");
    let mut names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "scenario.toml",
            "sweep-goodput.png",
            "sweep-goodput.svg",
            "sweep-jain.png",
            "sweep-jain.svg",
            "sweep-points.csv",
            "sweep-queue.png",
            "sweep-queue.svg",
            "sweep-retransmit_ratio.png",
            "sweep-retransmit_ratio.svg",
            "sweep.csv",
            "sweep.json"
        ]
    );
    assert!(stdout.contains(&format!("wrote {}: sweep.json, sweep.csv, sweep-points.csv", out.display())), "{stdout}");

    let (head, rows) = csv(&out.join("sweep.csv"));
    assert_eq!(&head[..4], ["point", "topology.bottleneck.rate", "tcp.cc", "seed"]);
    assert_eq!(rows.len(), 12, "3 rates × 2 senders × 2 seeds");
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (g, q) = (col("goodput_mbps"), col("link_queue_avg_pkts"));
    // Seeds are the scenario's (4) and the next.
    assert!(rows.iter().all(|r| r[3] == "4" || r[3] == "5"));
    // Every row is what `run --set … --seed S --json` gives for that point.
    for r in rows.iter().step_by(5) {
        let o = ackshape(&[
            "run",
            scn.to_str().unwrap(),
            "--set",
            &format!("topology.bottleneck.rate={}", r[1]),
            "--set",
            &format!("tcp.cc={}", r[2]),
            "--seed",
            &r[3],
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let goodput = s["aggregate"]["goodput_bps"].as_f64().unwrap() / 1e6;
        // `run --json` prints floats to 12 significant digits; `sweep.csv` keeps full precision.
        let same = |a: f64, b: f64| (a - b).abs() <= 1e-11 * a.abs().max(b.abs());
        assert!(same(r[g].parse::<f64>().unwrap(), goodput), "row {r:?}: run --json gives {goodput}");
        let bn = s["links"].as_array().unwrap().iter().find(|l| l["name"] == "bottleneck").unwrap();
        let qj = bn["queue_avg_pkts"].as_f64().unwrap();
        assert!(same(r[q].parse::<f64>().unwrap(), qj), "row {r:?}: run --json gives {qj}");
        assert_eq!(s["seed"].as_u64().unwrap().to_string(), r[3]);
        let rate: f64 = r[1].trim_end_matches("Mbit/s").parse().unwrap();
        assert_eq!(bn["rate_bps"].as_f64().unwrap(), rate * 1e6);
        assert!(goodput < rate, "goodput {goodput} above the {rate} Mbit/s bottleneck");
    }
    // Each point's mean is the mean of its runs.
    let (phead, points) = csv(&out.join("sweep-points.csv"));
    assert_eq!(points.len(), 6);
    let gm = phead.iter().position(|h| h == "goodput_mbps_mean").unwrap();
    for p in &points {
        let xs: Vec<f64> =
            rows.iter().filter(|r| r[1] == p[0] && r[2] == p[1]).map(|r| r[g].parse().unwrap()).collect();
        assert_eq!(xs.len(), 2);
        let mean: f64 = p[gm].parse().unwrap();
        assert!((mean - (xs[0] + xs[1]) / 2.0).abs() < 1e-12, "{p:?}");
    }
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(j["runs"].as_array().unwrap().len(), 12);
    assert_eq!(j["link"], "bottleneck");
    assert!(std::fs::read_to_string(out.join("sweep-goodput.svg"))
        .unwrap()
        .contains("topology.bottleneck.rate (Mbit/s)"));

    // The same sweep on one worker writes the same rows.
    let out1 = d.join("out1");
    let o = sweep(&["--seeds", "4-5", "--out", out1.to_str().unwrap(), "-j", "1", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["sweep.csv", "sweep-points.csv"] {
        assert_eq!(std::fs::read(out.join(f)).unwrap(), std::fs::read(out1.join(f)).unwrap(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_set_names_the_file_the_key_and_the_set() {
    let d = tmpdir("bad");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    let f = scn.to_str().unwrap();
    let o = ackshape(&["sweep", f, "--set", "topology.bottleneck.rate=2Mbit/s,quick", "--seeds", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{f}: key `topology.bottleneck.rate`"))
            && e.contains("--set topology.bottleneck.rate=quick"),
        "{e}"
    );
    let o = ackshape(&["run", f, "--set", "topology.bottlenek.rate=2Mbit/s"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bottlenek"), "{}", stderr(&o));
    let o = ackshape(&["run", f, "--set", "flows[3].count=2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`flows` has 1 element, no index 3"), "{}", stderr(&o));
    let o = ackshape(&["run", f, "--set", "tcp.cc=reno,cubic"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ackshape sweep"), "{}", stderr(&o));
    let o = ackshape(&["sweep", f, "--set", "tcp.cc=reno", "--set", "tcp.cc=cubic"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("set twice"), "{}", stderr(&o));
    let o = ackshape(&["sweep", f, "--link", "nosuch", "--seeds", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--link nosuch") && stderr(&o).contains("bottleneck:rev"), "{}", stderr(&o));
    let o = ackshape(&["sweep", f, "--plot", "jian", "--out", d.join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--plot jian: no such metric") && stderr(&o).contains("jain"), "{}", stderr(&o));
    let o = ackshape(&["sweep", f, "--seeds", "0"]);
    assert_eq!(o.status.code(), Some(2));
    // A seed twice would repeat a run and shrink the standard error; a count beyond the bound is
    // refused before anything is allocated.
    let o = ackshape(&["sweep", f, "--seeds", "3,1,3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("seed 3 is given twice"), "{}", stderr(&o));
    let o = ackshape(&["sweep", f, "--seeds", "1000000000000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("at most 10000"), "{}", stderr(&o));
    // The gateway metrics need a gateway box; refused before anything runs.
    let o = ackshape(&["sweep", f, "--plot", "gateway_drops", "--out", d.join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--plot gateway_drops") && stderr(&o).contains("no gateway box"), "{}", stderr(&o));
    assert!(!d.join("o").exists());
    // A --metric path the runs do not have, or a name taken twice.
    let o =
        ackshape(&["sweep", f, "--seeds", "1", "--metric", "flows[0].nosuch", "--out", d.join("o").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--metric flows[0].nosuch") && stderr(&o).contains("--json"), "{}", stderr(&o));
    assert!(!d.join("o").exists());
    let o = ackshape(&["sweep", f, "--metric", "x=flows[0].id", "--metric", "x=flows[0].timeouts"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("given twice"), "{}", stderr(&o));
    // A --metric is a column, and --plot takes its name.
    let out = d.join("m");
    let o = ackshape(&[
        "sweep",
        f,
        "--seeds",
        "1",
        "--metric",
        "rtt=flows[0].rtt_mean_ms",
        "--plot",
        "rtt",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let (head, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    assert!(head.ends_with(",rtt"), "{head}");
    let rtt: f64 = row.rsplit(',').next().unwrap().parse().unwrap();
    assert!(rtt > 0.0, "{row}");
    assert!(out.join("sweep-rtt.svg").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn run_set_changes_the_embedded_example() {
    let o = ackshape(&["run", "--set", "topology.bottleneck.rate=2Mbit/s", "--set", "duration=10s", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let bn = s["links"].as_array().unwrap().iter().find(|l| l["name"] == "bottleneck").unwrap();
    assert_eq!(bn["rate_bps"].as_u64(), Some(2_000_000));
    // The summary says what was changed; without --set it has no `set`.
    assert_eq!(s["scenario"]["set"], serde_json::json!(["topology.bottleneck.rate=2Mbit/s", "duration=10s"]));
    let o = ackshape(&["run", "--json"]);
    let plain: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(plain["scenario"].get("set").is_none(), "{}", plain["scenario"]);
    let goodput = s["aggregate"]["goodput_bps"].as_f64().unwrap();
    assert!(goodput > 1.5e6 && goodput < 2e6, "{goodput}");
}

#[test]
fn a_closed_stdout_ends_the_printing_commands_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    for args in [&["sweep", "--seeds", "3", "--set", "duration=8s"][..], &["run", "--set", "duration=8s"][..]] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ackshape"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before the command prints (it prints only after its runs), as
        // `ackshape … | head -1` does once head has its line.
        drop(c.stdout.take());
        let o = c.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(o.status.success() || o.status.signal() == Some(13), "{args:?}: ended by {:?}: {err}", o.status);
    }
}

#[test]
fn a_store_makes_a_rerun_compute_nothing_and_gives_the_same_files() {
    let d = tmpdir("store");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    let store = d.join("store");
    let sweep = |out: &str, rates: &str| {
        let o = ackshape(&[
            "sweep",
            scn.to_str().unwrap(),
            "--set",
            &format!("topology.bottleneck.rate={rates}"),
            "--seeds",
            "2",
            "--store",
            store.to_str().unwrap(),
            "--out",
            d.join(out).to_str().unwrap(),
            "-q",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let first = sweep("a", "2Mbit/s,4Mbit/s");
    assert!(first.contains("0 runs found, 4 computed and kept"), "{first}");
    let again = sweep("b", "2Mbit/s,4Mbit/s");
    assert!(again.contains("4 runs found, 0 computed and kept"), "{again}");
    for f in ["sweep.json", "sweep.csv", "sweep-points.csv"] {
        assert_eq!(std::fs::read(d.join("a").join(f)).unwrap(), std::fs::read(d.join("b").join(f)).unwrap(), "{f}");
    }
    // One more value: only its runs are computed.
    let more = sweep("c", "2Mbit/s,4Mbit/s,8Mbit/s");
    assert!(more.contains("4 runs found, 2 computed and kept"), "{more}");
    // Each stored run is the summary.json that `run` writes for its scenario and seed.
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("c/sweep.json")).unwrap()).unwrap();
    assert_eq!(v["ackshape"]["version"], env!("CARGO_PKG_VERSION"));
    let o =
        ackshape(&["run", scn.to_str().unwrap(), "--set", "topology.bottleneck.rate=8Mbit/s", "--seed", "5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let by_run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let stored: Vec<serde_json::Value> = walk(&store.join("results"))
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "5.json"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    assert_eq!(stored.len(), 3);
    let same = stored.iter().find(|s| s["scenario"]["set"] == by_run["scenario"]["set"]).expect("the 8 Mbit/s run");
    assert_eq!(same["flows"], by_run["flows"]);
    assert_eq!(same["links"], by_run["links"]);
    assert_eq!(same["ackshape"], by_run["ackshape"]);
    // A directory that is not a store is refused before anything runs.
    std::fs::write(d.join("a").join("x"), "").unwrap();
    let o = ackshape(&["sweep", scn.to_str().unwrap(), "--store", d.join("a").to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not an ackshape result store"), "{}", stderr(&o));
    // --dask without the Python package says what to install.
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .args(["sweep", scn.to_str().unwrap(), "--dask", "tcp://127.0.0.1:1", "-q"])
        .env("ACKSHAPE_PYTHON", d.join("no-such-python"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("install the Python package"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        if e.path().is_dir() {
            v.extend(walk(&e.path()));
        } else {
            v.push(e.path());
        }
    }
    v
}
