//! `ackshape run` outputs: byte-identical summary.json for the same seed, pcap export that tshark
//! reads with valid checksums and the link's packet count (issue 2, "done when" 6 and 7), and the
//! CSV files agreeing with the summary.

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

fn run(scn: &Path, out: &Path, extra: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape"))
        .arg("run")
        .arg(scn)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "ackshape run failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
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
    for f in ["timeseries.csv", "trace.csv", "flows.csv", "links.csv", "queues.csv"] {
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
    // The build that wrote it comes first.
    assert!(a.starts_with("{\n  \"ackshape\": {\n    \"version\": "), "{a}");
    assert_eq!(v["ackshape"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(v["ackshape"]["commit"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(v["ackshape"]["source"].as_str().is_some_and(|c| c.len() == 16));
    // OUT/scenario.toml runs the same simulation again (only the file's name differs).
    let again = d.join("again");
    run(&d.join("a/scenario.toml"), &again, &[]);
    let c = std::fs::read_to_string(again.join("summary.json")).unwrap();
    let file_line = |s: &str| s.lines().find(|l| l.trim_start().starts_with("\"file\"")).unwrap().to_string();
    assert_eq!(without_wall_time(&c).replace(&file_line(&c), &file_line(&a)), without_wall_time(&a));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn scenario_toml_has_the_sets_the_seed_and_the_policy_file_inlined() {
    let d = tmpdir("resolved");
    std::fs::write(d.join("gw.toml"), "default_class = \"c\"\n[[class]]\nname = \"c\"\nrate = \"2Mbit/s\"\n").unwrap();
    let scn = d.join("s.toml");
    let text = SCENARIO.replace(
        "[[flows]]\ncount = 3",
        "[[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nkind = \"gateway\"\npolicy_file = \"gw.toml\"\n[[flows]]\ncount = 3",
    );
    assert_ne!(text, SCENARIO);
    std::fs::write(&scn, text).unwrap();
    run(&scn, &d.join("a"), &["--seed", "9", "--set", "topology.bottleneck.rate=6Mbit/s"]);
    let resolved = std::fs::read_to_string(d.join("a/scenario.toml")).unwrap();
    let doc: toml::Table = resolved.parse().unwrap();
    assert_eq!(doc["seed"].as_integer(), Some(9));
    assert_eq!(doc["topology"]["bottleneck"]["rate"].as_str(), Some("6Mbit/s"));
    let mb = &doc["middlebox"][0];
    assert!(mb.get("policy_file").is_none(), "{resolved}");
    assert_eq!(mb["policy"]["class"][0]["rate"].as_str(), Some("2Mbit/s"), "{resolved}");
    // Elsewhere (no policy file beside it), it runs the same simulation.
    let moved = d.join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::copy(d.join("a/scenario.toml"), moved.join("s.toml")).unwrap();
    run(&moved.join("s.toml"), &d.join("b"), &[]);
    let summary = |p: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join(p).join("summary.json")).unwrap()).unwrap()
    };
    let (a, b) = (summary("a"), summary("b"));
    assert_eq!(a["seed"], 9);
    for k in ["flows", "links", "aggregate", "middleboxes", "seed"] {
        assert_eq!(a[k], b[k], "{k}");
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
    // One file per direction, whole frames: every checksum can be verified.
    run(&scn, &d, &["--pcap", "bottleneck", "--pcap", "bottleneck:rev", "--pcap-one-way", "--snaplen", "0"]);
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

/// `--pcap LINK` (the default): both directions of the link in one file, in time order, each frame
/// cut after the snap length, and Wireshark's reader takes it.
#[test]
fn pcap_has_both_directions_cut_at_the_snap_length() {
    let Ok(tshark) = which("tshark") else {
        panic!("tshark is not installed: run ./scripts/setup.sh (the test command does)");
    };
    let d = tmpdir("pcap-both");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    run(&scn, &d, &["--pcap", "bottleneck"]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap();
    let counter = |link: &str| {
        v["links"].as_array().unwrap().iter().find(|l| l["name"] == link).unwrap()["tx_packets"].as_u64().unwrap()
    };
    let (fwd, rev) = (counter("bottleneck"), counter("bottleneck:rev"));
    let o = Command::new(&tshark)
        .args(["-n", "-r"])
        .arg(d.join("bottleneck.pcap"))
        .args(["-T", "fields", "-e", "frame.time_relative", "-e", "frame.len", "-e", "frame.cap_len", "-e", "tcp.len"])
        .output()
        .unwrap();
    assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Vec<f64>> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(|x| x.parse::<f64>().unwrap_or(f64::NAN)).collect())
        .collect();
    let data = rows.iter().filter(|r| r[3] > 0.0).count() as u64;
    let acks = rows.iter().filter(|r| r[3] == 0.0).count() as u64;
    println!("frames {} (data {data}, pure ACKs {acks}); link counters {fwd} + {rev}", rows.len());
    assert_eq!(rows.len() as u64, fwd + rev, "both directions, every frame");
    assert!(data > 100 && acks > 100, "data one way, ACKs the other");
    let snap = 134.0;
    assert!(rows.iter().all(|r| r[2] <= snap && r[2] <= r[1]), "every frame cut at {snap} bytes");
    assert!(rows.iter().any(|r| r[1] > r[2]), "the full-sized data frames are cut (their length is kept)");
    assert!(rows.windows(2).all(|w| w[0][0] <= w[1][0]), "in time order");
    std::fs::remove_dir_all(&d).ok();
}

/// A CSV file as header → column, rows (no quoted fields in these files).
fn csv(p: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines.map(|l| head.iter().map(|h| h.to_string()).zip(l.split(',').map(str::to_string)).collect()).collect()
}

#[test]
fn the_csv_files_agree_with_the_summary_and_the_run_says_what_it_wrote() {
    let d = tmpdir("csv");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    let stdout = run(&scn, &d.join("o"), &[]);
    let o = d.join("o");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(o.join("summary.json")).unwrap()).unwrap();
    // The "wrote" line names exactly the files in the directory.
    let line = stdout.lines().find(|l| l.starts_with("wrote ")).expect("a wrote line");
    let mut said: Vec<&str> = line.split_once(": ").unwrap().1.split(", ").collect();
    let mut there: Vec<String> =
        std::fs::read_dir(&o).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    said.sort();
    there.sort();
    assert_eq!(said, there, "{line}");
    for f in ["summary.json", "flows.csv", "links.csv", "timeseries.csv", "goodput.svg", "queues.csv", "queue.svg"] {
        assert!(there.iter().any(|x| x == f), "{f} written");
    }
    // flows.csv and links.csv: one row per flow / link direction, the summary's values.
    let flows = csv(&o.join("flows.csv"));
    assert_eq!(flows.len(), v["flows"].as_array().unwrap().len());
    for (row, f) in flows.iter().zip(v["flows"].as_array().unwrap()) {
        assert_eq!(row["name"], f["name"].as_str().unwrap());
        assert_eq!(row["goodput_bps"].parse::<f64>().unwrap(), f["goodput_bps"].as_f64().unwrap());
        assert_eq!(row["retransmitted_packets"].parse::<u64>().unwrap(), f["retransmitted_packets"].as_u64().unwrap());
    }
    let links = csv(&o.join("links.csv"));
    assert_eq!(links.len(), v["links"].as_array().unwrap().len());
    // queues.csv: per bin, and over the measurement window (1–8 s, whole 1-s bins) its bins give
    // the summary's time-average and maximum queue of each link direction.
    let queues = csv(&o.join("queues.csv"));
    let from = v["scenario"]["measure_from_s"].as_f64().unwrap();
    let mut queued = 0;
    for l in v["links"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        let bins: Vec<_> = queues.iter().filter(|r| r["link"] == name).collect();
        let (avg, max) = (l["queue_avg_pkts"].as_f64().unwrap(), l["queue_max_pkts"].as_u64().unwrap());
        if bins.is_empty() {
            assert_eq!(max, 0, "{name}: queued, but not in queues.csv");
            continue;
        }
        queued += 1;
        assert_eq!(bins.len(), 8, "{name}: one row per 1-s bin of the 8-s run");
        let window: Vec<_> = bins.iter().filter(|r| r["t_end_s"].parse::<f64>().unwrap() > from).collect();
        let mean =
            window.iter().map(|r| r["queue_avg_pkts"].parse::<f64>().unwrap()).sum::<f64>() / window.len() as f64;
        let peak = window.iter().map(|r| r["queue_max_pkts"].parse::<u64>().unwrap()).max().unwrap();
        println!("{name}: window mean of the bins {mean:.6} vs summary {avg:.6}; max {peak} vs {max}");
        assert!((mean - avg).abs() <= 1e-9 * avg.max(1.0), "{name}: bins' mean {mean} vs queue_avg_pkts {avg}");
        assert_eq!(peak, max, "{name}: bins' maximum vs queue_max_pkts");
    }
    assert!(queued >= 1, "the 10 Mbit/s bottleneck queues");
    let bottleneck =
        queues.iter().filter(|r| r["link"] == "bottleneck").map(|r| r["queue_max_pkts"].parse::<u64>().unwrap());
    assert!(bottleneck.max().unwrap() > 1, "the bottleneck's queue is in queues.csv");
    std::fs::remove_dir_all(&d).ok();
}

fn which(cmd: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join(cmd)).find(|p| p.is_file()))
        .ok_or(())
}

/// `run` on a paper's experiment file simulates only its base scenario; it says so on stderr and
/// names `reproduce ID`. Not with `--json` or `--quiet`, not for a copy outside `experiments/`.
#[test]
fn run_on_an_experiment_file_names_reproduce() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let f9 = repo.join("experiments/p0/f9-loss.toml");
    let ackshape =
        |args: &[&std::ffi::OsStr]| Command::new(env!("CARGO_BIN_EXE_ackshape")).args(args).output().unwrap();
    let o = ackshape(&["run".as_ref(), f9.as_os_str()]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("base scenario of experiment P0-F9") && err.contains("`ackshape reproduce P0-F9`"), "{err}");
    // A file two experiments share names both.
    let f3 = repo.join("experiments/p2/f3.toml");
    let o = ackshape(&["run".as_ref(), f3.as_os_str(), "--json".as_ref()]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ackshape(&["validate".as_ref(), f3.as_os_str()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("valid (2 flows)"));
    let o = ackshape(&["run".as_ref(), f9.as_os_str(), "-q".as_ref()]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    // The same text elsewhere is the user's own scenario.
    let d = tmpdir("expnote");
    let copy = d.join("f9-loss.toml");
    std::fs::copy(&f9, &copy).unwrap();
    let o = ackshape(&["run".as_ref(), copy.as_os_str()]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ackshape(&["validate".as_ref(), copy.as_os_str()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("valid (1 flow)"), "{}", String::from_utf8_lossy(&o.stdout));
    let _ = std::fs::remove_dir_all(&d);
}

/// `--pcap` of a link that does not exist names the links there are: all of a small topology's,
/// and a dozen and the count of a large one's (1001 flows: 4006 link directions, once a 60 KB line).
#[test]
fn pcap_of_an_unknown_link_names_the_links() {
    let d = tmpdir("pcap-unknown");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    let err = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_ackshape"))
            .arg("run")
            .arg(&scn)
            .arg("--out")
            .arg(d.join("o"))
            .args(["--pcap", "nolink"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let small = err(&["--set", "flows[0].count=1"]);
    assert!(small.contains("no link named \"nolink\"") && small.contains("bottleneck, bottleneck:rev"), "{small}");
    assert!(!small.contains("in all"), "{small}");
    let large = err(&["--set", "flows[0].count=1000"]);
    assert!(large.contains("… (4006 in all)"), "{large}");
    assert!(large.len() < 1000, "{} bytes: {large}", large.len());
    std::fs::remove_dir_all(&d).ok();
}

/// The table stays readable with many flows: the first 20 rows and a line on all of them; of many
/// access links that drop, the 8 that drop most and a line on the rest.
#[test]
fn the_table_folds_many_flows_and_dropping_access_links() {
    let d = tmpdir("fold");
    let scn = d.join("s.toml");
    std::fs::write(&scn, SCENARIO).unwrap();
    let table = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("run").arg(&scn).args(extra).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let few = table(&["--set", "flows[0].count=39"]);
    assert!(few.contains("\n  39 ") && !few.contains("more flows"), "40 flows: every row\n{few}");
    let many = table(&["--set", "flows[0].count=200"]);
    assert!(many.contains("\n  19 f19") && !many.contains("\n  20 f20"), "{many}");
    assert!(many.contains("… 181 more flows; goodput over all 201: min "), "{many}");
    let lossy = table(&[
        "--set",
        "flows[0].count=30",
        "--set",
        "topology.access.queue=\"3pkt\"",
        "--set",
        "topology.access.rate=\"10Mbit/s\"",
        "--set",
        "topology.bottleneck.rate=\"1Gbit/s\"",
    ]);
    let rows = lossy.lines().filter(|l| l.starts_with("access-")).count();
    assert_eq!(rows, 8, "{lossy}");
    assert!(lossy.contains("more access link directions with drops or losses"), "{lossy}");
    std::fs::remove_dir_all(&d).ok();
}
