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
    for sub in ["validate", "run"] {
        let (code, err) = ackshape(sub, case, text);
        eprintln!("[{case}] ackshape {sub} → {code:?}: {err}");
        assert_eq!(code, Some(2), "{case}: exit code");
        assert!(err.contains(&format!("{case}.toml")), "{case}: names the file: {err}");
        assert!(err.contains(key), "{case}: names key {key}: {err}");
        for e in expect {
            assert!(err.contains(e), "{case}: says {e:?}: {err}");
        }
    }
}

/// `ackshape SUB CASE.toml` on `text` (in a directory of its own, removed after): exit code and
/// stderr.
fn ackshape(sub: &str, case: &str, text: &str) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!("ackshape-bad-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{case}.toml"));
    std::fs::write(&path, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg(sub).arg(&path).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
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

/// `validate A B C`: every file is checked (a bad one does not stop the others) and the exit
/// status is 2 if any is invalid.
#[test]
fn validate_checks_every_file_it_is_given() {
    let dir = std::env::temp_dir().join(format!("ackshape-many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, bad, b) = (dir.join("a.toml"), dir.join("bad.toml"), dir.join("b.toml"));
    std::fs::write(&a, GOOD).unwrap();
    std::fs::write(&bad, GOOD.replace("count = 2", "count = -1")).unwrap();
    std::fs::write(&b, GOOD.replace("count = 2", "count = 3")).unwrap();
    let run = |files: &[&std::path::Path]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("validate").args(files).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&[&a, &b]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("a.toml: valid (2 flows)") && out.contains("b.toml: valid (3 flows)"), "{out}");
    let (code, out, err) = run(&[&a, &bad, &b]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(out.contains("a.toml: valid") && out.contains("b.toml: valid"), "the others are still checked: {out}");
    assert!(err.contains("bad.toml") && err.contains("flows[0].count"), "{err}");
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

/// `[live]` is read only by the live driver, but a typo in it is an error everywhere.
#[test]
fn unknown_or_bad_live_keys() {
    check(
        "live-unknown",
        &format!("{GOOD}[live]\nccc = \"cubic\"\n"),
        "live.ccc",
        &["unknown key", "`cc`", "`testbed`"],
    );
    check("live-cc", &format!("{GOOD}[live]\ncc = 3\n"), "live.cc", &["congestion control name"]);
    check("live-testbed", &format!("{GOOD}[live]\ntestbed = \"acks-x\"\n"), "live.testbed", &["expected a table"]);
}

/// `[live.testbed]`'s own keys, checked by `validate` as `testbed up` and `run --live` read them
/// (the simulator ignores the table).
#[test]
fn bad_live_testbed_is_named_by_validate() {
    let dir = std::env::temp_dir().join(format!("ackshape-bad-{}-testbed", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (case, table, key, expect) in [
        ("tb-field", "prefx = \"acks-a\"", "live.testbed", "unknown field `prefx`"),
        ("tb-prefix", "prefix = \"mynet\"", "live.testbed.prefix", "must start with \"acks-\""),
        ("tb-subnet", "receiver_addr = \"10.78.0.2\"", "live.testbed.receiver_addr", "sender's subnet 10.77.0.0/24"),
        ("tb-same", "receiver_addr = \"10.77.0.1\"", "live.testbed.receiver_addr", "other than the sender's"),
        ("tb-len", "prefix_len = 31", "live.testbed.prefix_len", "8 to 30"),
    ] {
        let path = dir.join(format!("{case}.toml"));
        std::fs::write(&path, format!("{GOOD}[live.testbed]\n{table}\n")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("validate").arg(&path).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        eprintln!("[{case}] ackshape validate → {:?}: {err}", out.status.code());
        assert_eq!(out.status.code(), Some(2), "{case}: exit code");
        assert!(err.contains(&format!("{case}.toml")), "{case}: names the file: {err}");
        assert!(err.contains(&format!("key `{key}`")), "{case}: names key {key}: {err}");
        assert!(err.contains(expect), "{case}: says {expect:?}: {err}");
        // The simulator does not read it.
        let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(["run", "--quiet"]).arg(&path).output().unwrap();
        assert!(out.status.success(), "{case}: run: {}", String::from_utf8_lossy(&out.stderr));
    }
    // A good one.
    let path = dir.join("tb-good.toml");
    std::fs::write(&path, format!("{GOOD}[live]\ncc = \"bbr\"\n[live.testbed]\nprefix = \"acks-v\"\nsender_addr = \"192.168.5.10\"\nreceiver_addr = \"192.168.5.20\"\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("validate").arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
}

/// A scenario meant for live runs (it has `[live]`) whose gateway rules match on the simulator's
/// addresses: `validate` accepts it and warns, in one line, of the flows that would be in another
/// class live.
#[test]
fn validate_warns_of_a_policy_that_classifies_otherwise_live() {
    let dir = std::env::temp_dir().join(format!("ackshape-drift-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gw = "[[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nkind = \"gateway\"\n\
              policy = { class = [{ name = \"c\", rate = \"5Mbit/s\" }], rule = [{ class = \"c\", dst = \"10.0.0.0/24\" }] }\n";
    let stderr = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("validate").arg(&path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let err = stderr("live.toml", format!("{GOOD}{gw}[live.testbed]\nprefix = \"acks-v\"\n"));
    eprintln!("{err}");
    assert_eq!(err.matches("warning: ").count(), 1, "one line for the box: {err}");
    assert!(
        err.contains("live.toml: key `middlebox[0].policy`: flow 0's data is in `c` (class[0]) in the simulator")
            && err.contains("; flow 1's data is in `c`"),
        "{err}"
    );
    // The testbed in the simulator's subnet: nothing to warn of.
    let err = stderr(
        "same.toml",
        format!("{GOOD}{gw}[live.testbed]\nsender_addr = \"10.0.0.101\"\nreceiver_addr = \"10.0.0.102\"\n"),
    );
    assert!(!err.contains("warning"), "{err}");
    // Not meant for live (no `[live]`): not checked.
    let err = stderr("sim.toml", format!("{GOOD}{gw}"));
    assert!(!err.contains("warning"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// What a run keeps per flow is bounded: a typo in a count or a bin width is an error naming the
/// key, not a run that takes the machine's memory.
#[test]
fn sizes_beyond_the_limits() {
    check(
        "manyflows",
        &GOOD.replace("count = 2", "count = 10000000"),
        "flows[0].count",
        &["at most 200000 flows", "10000000"],
    );
    check(
        "twoentries",
        &GOOD.replace("count = 2", "count = 2\n[[flows]]\ncount = 150000\n[[flows]]\ncount = 150000"),
        "flows[1].count",
        &["at most 200000 flows", "300002", "150000 here"],
    );
    check(
        "tinybin",
        &GOOD.replace("duration = \"10s\"", "duration = \"10s\"\nbin = \"1ns\""),
        "bin",
        &["2 flows × 10000000000 bins"],
    );
    check(
        "tinytrace",
        &GOOD.replace("duration = \"10s\"", "duration = \"10s\"\ntrace_interval = \"1us\""),
        "trace_interval",
        &["2 flows × 10000000 samples"],
    );
    check(
        "manypairs",
        &GOOD.replace(
            "access = { rate = \"100Mbit/s\", delay = \"1ms\" }",
            "access = { rate = \"100Mbit/s\", delay = \"1ms\" }\nsenders = 10000000",
        ),
        "topology.senders",
        &["at most 200000 sender/receiver pairs", "10000000"],
    );
    check(
        "manygrouped",
        &GOOD.replace(
            "[[flows]]",
            "[[topology.groups]]\nsenders = 4000000000\n[[topology.groups]]\nsenders = 4000000000\n[[flows]]",
        ),
        "topology.groups",
        &["at most 200000 sender/receiver pairs", "8000000000"],
    );
    check(
        "zerotrace",
        &GOOD.replace("duration = \"10s\"", "duration = \"10s\"\ntrace_interval = \"0s\""),
        "trace_interval",
        &["positive"],
    );
}

/// A graph link from a node to itself, and a flow from a host to itself, are errors (the flow once
/// ran at 50 Mbit/s over no link at all).
#[test]
fn graph_self_loops() {
    const GRAPH: &str = r#"
duration = "3s"
[topology]
kind = "graph"
nodes = [{ name = "h1", kind = "host" }, { name = "r1", kind = "router" }, { name = "h2", kind = "host" }]
links = [{ a = "h1", b = "r1", rate = "100Mbit/s" }, { a = "r1", b = "h2", rate = "10Mbit/s" }]
[[flows]]
from = "h1"
to = "h2"
"#;
    check(
        "selflink",
        &GRAPH.replace("{ a = \"r1\", b = \"h2\"", "{ a = \"h2\", b = \"h2\""),
        "topology.links[1].b",
        &["other than `a`"],
    );
    check("selfflow", &GRAPH.replace("to = \"h2\"", "to = \"h1\""), "flows[0].to", &["other than `from`", "\"h1\""]);
}

/// Values that parse but leave nothing to simulate (a window or buffer below one segment, a queue
/// that cannot hold a packet, a flow that starts after the end) are errors, not silent runs.
#[test]
fn degenerate_values_are_errors() {
    let tcp = |kv: &str| GOOD.replace("[topology]", &format!("[tcp]\n{kv}\n[topology]"));
    let cases: [(&str, String, &str, &[&str]); 11] = [
        ("noname", GOOD.replace("count = 2", "count = 2\nname = \" \""), "flows[0].name", &["expected a name"]),
        ("maxwin0", tcp("max_window = \"0pkt\""), "tcp.max_window", &["at least one segment", "got 0"]),
        ("rcvbuf", tcp("rcv_buf = \"1000B\""), "tcp.rcv_buf", &["`mss` = 1448 B", "got 1000 B"]),
        (
            "flowwin",
            GOOD.replace("count = 2", "count = 2\ntcp = { mss = 536, max_window = \"500B\" }"),
            "flows[0].tcp.max_window",
            &["`mss` = 536 B", "got 500 B"],
        ),
        ("wscale", tcp("wscale = -5"), "tcp.wscale", &["-1 for none", "got -5"]),
        ("ssthresh0", tcp("initial_ssthresh = 0"), "tcp.initial_ssthresh", &["at least 1 segment"]),
        ("maxrto", tcp("max_rto = \"100ms\""), "tcp.max_rto", &["at least `min_rto` (1s)", "got 100ms"]),
        ("initrto", tcp("initial_rto = \"0s\""), "tcp.initial_rto", &["positive"]),
        (
            "bytequeue",
            GOOD.replace("queue = \"100pkt\"", "queue = \"1000B\""),
            "topology.bottleneck.queue",
            &["at least one packet (1500 B", "got 1000 B"],
        ),
        ("bytes0", GOOD.replace("count = 2", "count = 2\nbytes = \"0B\""), "flows[0].bytes", &["at least 1 byte"]),
        (
            "late",
            GOOD.replace("count = 2", "count = 2\nstart = \"10s\""),
            "flows[0].start",
            &["`duration` = 10s", "got 10s", "never run"],
        ),
    ];
    for (case, text, key, expect) in cases {
        check(case, &text, key, expect);
    }
    // At the limits they are fine: a byte queue of exactly one packet of the scenario's MSS.
    for (i, text) in [
        GOOD.replace("queue = \"100pkt\"", "queue = \"1500B\""),
        tcp("mss = 536\ntimestamps = false").replace("queue = \"100pkt\"", "queue = \"576B\""),
        tcp("rcv_buf = \"1448B\"\nmax_rto = \"1s\""),
    ]
    .iter()
    .enumerate()
    {
        let (code, err) = ackshape("validate", &format!("edge{i}"), text);
        assert_eq!(code, Some(0), "edge{i}: {err}");
    }
}

/// A value of the wrong shape for a choice of names (a number for `cc`, a bare probability for
/// `loss`, a bare name for `qdisc`) gets the names to choose from, in one line.
#[test]
fn a_value_of_the_wrong_shape_lists_the_choices() {
    let link = |kv: &str| GOOD.replace("queue = \"100pkt\" }", &format!("queue = \"100pkt\", {kv} }}"));
    let cases: [(&str, String, &str, &[&str]); 6] = [
        (
            "ccnum",
            GOOD.replace("[topology]", "[tcp]\ncc = 1\n[topology]"),
            "tcp.cc",
            &["one of `tahoe`", "`cubic`", "(as a string), got 1"],
        ),
        (
            "lossnum",
            link("loss = 0.01"),
            "topology.bottleneck.loss",
            &["{ kind = … }", "`bernoulli`", "`gilbert-elliott`", "got 0.01"],
        ),
        ("losskind", link("loss = { p = 0.1 }"), "topology.bottleneck.loss", &["missing field `kind`", "`bernoulli`"]),
        ("qdiscname", link("qdisc = \"red\""), "topology.bottleneck.qdisc", &["{ kind = \"red\" }"]),
        (
            "qdisckind",
            link("qdisc = { kind = \"rde\" }"),
            "topology.bottleneck.qdisc",
            &["red, drr", "afvq", "got \"rde\""],
        ),
        ("flowkind", GOOD.replace("count = 2", "count = 2\nkind = true"), "flows[0].kind", &["`bulk`", "got true"]),
    ];
    for (case, text, key, expect) in cases {
        check(case, &text, key, expect);
        // One line: the message does not repeat the key on a line of its own.
        let (_, err) = ackshape("validate", case, &text);
        assert_eq!(err.trim_end().lines().count(), 1, "{case}: {err}");
    }
}

/// `compare`'s thresholds: a NaN, negative or infinite value would make every comparison hold or
/// none; refused by the argument parser (exit 2) before any run, so no root is needed.
#[test]
fn compare_thresholds_must_be_finite() {
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/live/rate-tcr.toml");
    for (flag, value) in [
        ("--tolerance", "NaN"),
        ("--tolerance", "inf"),
        ("--tolerance=-0.1", ""),
        ("--cov-tie", "inf"),
        ("--noise-z", "NaN"),
        ("--buffer-tie", "1"),
        ("--buffer-tie", "NaN"),
    ] {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ackshape"));
        c.args(["compare", "-q", f, flag]);
        if !value.is_empty() {
            c.arg(value);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains("expected a f"), "{flag} {value}: {err}");
    }
}

/// A scenario without `[[flows]]` sends nothing: an error naming `flows`, not a run that prints
/// "goodput 0 bit/s, Jain 1.0000".
#[test]
fn a_scenario_without_flows() {
    let text = GOOD.replace("[[flows]]\ncount = 2\n", "");
    assert!(!text.contains("flows"));
    check("noflows", &text, "flows", &["at least one [[flows]] table", "nothing is sent"]);
}

/// Units: the message reads "expected a non-negative rate", a close spelling gets a suggestion, and
/// `h` is an hour.
#[test]
fn unit_messages_and_suggestions() {
    check(
        "negrate",
        &GOOD.replace("rate = \"10Mbit/s\"", "rate = \"-10Mbit/s\""),
        "topology.bottleneck.rate",
        &["expected a non-negative rate with a unit"],
    );
    let (_, err) = ackshape("validate", "negrate2", &GOOD.replace("rate = \"10Mbit/s\"", "rate = \"-10Mbit/s\""));
    assert!(!err.contains("a non-negative a"), "{err}");
    check(
        "mbps",
        &GOOD.replace("rate = \"10Mbit/s\"", "rate = \"10mbps\""),
        "topology.bottleneck.rate",
        &["unknown unit \"mbps\"", "did you mean \"10Mbps\"?"],
    );
    check("sec", &GOOD.replace("duration = \"10s\"", "duration = \"10sec\""), "duration", &["did you mean \"10s\"?"]);
    // An hour is a unit: `duration = "1h"` is valid.
    let dir = std::env::temp_dir().join(format!("ackshape-hour-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("hour.toml");
    std::fs::write(&p, GOOD.replace("duration = \"10s\"", "duration = \"1h\"")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape")).arg("validate").arg(&p).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A TOML syntax error names the line and the column and shows the line with a caret under the
/// column.
#[test]
fn toml_syntax_errors_show_line_column_and_the_line() {
    let text = GOOD.replace("count = 2", "count = = 2");
    check("syntax", &text, "line 8, column 9", &["TOML syntax error", "8 | count = = 2", "|         ^"]);
}

/// `--seed -1` is refused with what a seed is, not with the argument parser's tip to write `-- -1`.
#[test]
fn a_negative_seed() {
    for args in [&["run", "--seed", "-1"][..], &["reproduce", "P2-F11", "--seed", "-1"][..]] {
        let o = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("expected a seed: a whole number from 0 to 18446744073709551615, got \"-1\""), "{err}");
        assert!(!err.contains("tip:") && !err.contains("-- -1"), "{err}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(["sweep", "--seeds", "-1"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--seeds \"-1\": expected a count (5), a range (1-5) or a list (1,5,9)"), "{err}");
}

/// A link of a graph topology can be named in `--set` (`topology.links[access]`); a wrong name, or
/// the array addressed like a table, lists the elements with their indices and names.
#[test]
fn links_by_name_in_set() {
    let adsl = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/p2/adsl-two-way.toml");
    let run = |set: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_ackshape"))
            .args(["run", "-q", adsl, "--set", set, "--set", "duration=3s", "--set", "warmup=1s"])
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, err) = run("topology.links[access].qdisc={ kind = \"afvq\" }");
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("afvq"), "the access link runs AFVQ: {out}");
    for bad in ["topology.links[acess].qdisc=afvq", "topology.links.access.qdisc=afvq"] {
        let (code, _, err) = run(bad);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains("adsl-two-way.toml") && err.contains("[1] or [access]"), "{bad}: {err}");
    }
}

/// `ackshape example …` prints starting files that validate without warnings.
#[test]
fn example_files_validate_without_warnings() {
    let dir = std::env::temp_dir().join(format!("ackshape-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (what, flag) in [("scenario", None), ("policy", Some("--policy")), ("tap", Some("--tap"))] {
        let o = Command::new(env!("CARGO_BIN_EXE_ackshape")).args(["example", what]).output().unwrap();
        assert!(o.status.success());
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.starts_with('#') && text.lines().filter(|l| l.contains('#')).count() >= 5, "commented: {text}");
        let p = dir.join(format!("{what}.toml"));
        std::fs::write(&p, &text).unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_ackshape"));
        c.arg("validate");
        if let Some(f) = flag {
            c.arg(f);
        }
        let o = c.arg(&p).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success() && err.is_empty(), "{what}: {err}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("valid"), "{what}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
