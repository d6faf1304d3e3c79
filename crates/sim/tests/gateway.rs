//! `kind = "gateway"`: the edge gateway box shapes classes to their rates and splits a link
//! between classes by their rates (and, with ceilings, lends idle bandwidth).
mod common;
use common::*;

/// Dumbbell with a fat bottleneck (the gateway is the bottleneck); `n` bulk flows, 1460-byte
/// payloads in 1500-byte IP packets (no timestamps), the gateway at `left`.
fn scenario(n: u32, duration: &str, gateway: &str) -> String {
    format!(
        r#"
seed = 4
duration = "{duration}"
warmup = "5s"
[tcp]
cc = "sack"
mss = 1460
timestamps = false
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "100Mbit/s", delay = "20ms", queue = "1000pkt" }}
access = {{ rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }}
[[flows]]
kind = "bulk"
count = {n}
[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
{gateway}
"#
    )
}

fn class<'a>(s: &'a ackshape_sim::Summary, name: &str) -> &'a serde_json::Value {
    &s.middleboxes[0]["stats"]["classes"][name]
}

/// Goodput a class rate allows: 1460 payload bytes per 1500 IP bytes.
fn adjusted(rate: f64) -> f64 {
    rate * 1460.0 / 1500.0
}

#[test]
fn three_flows_in_a_class_get_the_header_adjusted_rate() {
    let s = run(&scenario(
        3,
        "30s",
        r#"policy = { class = [{ name = "bulk", rate = "2Mbit/s", queue = "50pkt" }], rule = [{ class = "bulk" }] }"#,
    ));
    let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    let want = adjusted(2e6);
    eprintln!(
        "aggregate goodput {total:.0} bit/s, expected {want:.0}; per flow {:?}",
        s.flows.iter().map(|f| f.goodput_bps as u64).collect::<Vec<_>>()
    );
    assert!((total / want - 1.0).abs() < 0.02, "aggregate {total} vs {want}");
    let c = class(&s, "bulk");
    assert!(c["data_queue_max_pkts"].as_u64().unwrap() <= 50);
    assert!(c["sent_pkts"].as_u64().unwrap() > 0);
    // The class is the bottleneck: its queue fills and overflows (FIFO drop-tail PCDQ).
    assert!(c["drops"].as_u64().unwrap() > 0, "{c}");
    assert!(c["data_queue_avg_pkts"].as_f64().unwrap() > 5.0, "{c}");
    assert_eq!(s.middleboxes[0]["stats"]["flows"]["shaped"].as_u64(), Some(3));
}

/// Dumbbell sender k has address 10.0.0.(2k+1).
const SPLIT: &str = r#"policy = { link = { outbound = "10Mbit/s" }, class = [
  { name = "a", rate = "3Mbit/s", ceil = "10Mbit/s" },
  { name = "b", rate = "7Mbit/s", ceil = "10Mbit/s" },
], rule = [
  { class = "a", src = ["10.0.0.1", "10.0.0.3"] },
  { class = "b", src = ["10.0.0.5", "10.0.0.7"] },
] }"#;

#[test]
fn two_classes_split_a_link_by_their_rates() {
    let s = run(&scenario(4, "30s", SPLIT));
    let a: f64 = s.flows[0].goodput_bps + s.flows[1].goodput_bps;
    let b: f64 = s.flows[2].goodput_bps + s.flows[3].goodput_bps;
    eprintln!("class a {a:.0} bit/s, class b {b:.0} bit/s");
    assert!((a / adjusted(3e6) - 1.0).abs() < 0.04, "a {a}");
    assert!((b / adjusted(7e6) - 1.0).abs() < 0.04, "b {b}");
}

#[test]
fn an_idle_class_lends_its_rate_up_to_the_ceiling() {
    // Only class a has traffic (senders 0 and 1): it borrows b's idle 7 Mbit/s.
    let s = run(&scenario(2, "30s", SPLIT));
    let a: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    eprintln!("class a alone: {a:.0} bit/s");
    assert!((a / adjusted(10e6) - 1.0).abs() < 0.03, "a {a}");
    let c = class(&s, "a");
    assert!(c["borrowed_pkts"].as_u64().unwrap() > c["sent_pkts"].as_u64().unwrap() / 2, "{c}");
    // Without a ceiling above its rate it stays at its rate.
    let s = run(&scenario(2, "30s", &SPLIT.replace(r#"rate = "3Mbit/s", ceil = "10Mbit/s""#, r#"rate = "3Mbit/s""#)));
    let a: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    assert!((a / adjusted(3e6) - 1.0).abs() < 0.03, "a {a}");
}

#[test]
fn policy_file_is_read_relative_to_the_scenario_and_errors_name_the_key() {
    let dir = std::env::temp_dir().join(format!("ackshape-gw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.toml"), "[[class]]\nname = \"c\"\nrate = \"2Mbit/s\"\n[[rule]]\nclass = \"c\"\n")
        .unwrap();
    let sc = scenario(1, "6s", "policy_file = \"p.toml\"");
    let path = dir.join("s.toml");
    std::fs::write(&path, &sc).unwrap();
    let parsed = ackshape_sim::Scenario::load(&path).unwrap();
    let mut sim = ackshape_sim::Sim::build(&parsed, &path.display().to_string(), None, Default::default()).unwrap();
    sim.run(None);
    assert!(sim.summary(0.0).middleboxes[0]["stats"]["classes"]["c"]["sent_pkts"].as_u64().unwrap() > 0);

    std::fs::write(dir.join("p.toml"), "[[class]]\nname = \"c\"\nrate = \"2Mbit/s\"\nceil = \"1Mbit/s\"\n").unwrap();
    let e = ackshape_sim::Sim::build(&parsed, &path.display().to_string(), None, Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("key `middlebox[0].policy_file`")
            && e.contains("p.toml: key `class[0].ceil`: ceiling 1Mbit/s is below rate 2Mbit/s"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();

    for (gw, key) in [
        (
            r#"policy = { class = [{ name = "c", rate = "2Mbit/s", ceil = "1Mbit/s" }] }"#,
            "middlebox[0].policy.class[0].ceil",
        ),
        (r#"policy = { rule = [{ class = "nope" }] }"#, "middlebox[0].policy.rule[0].class"),
        ("overhead = 14", "middlebox[0].policy"),
        ("policy = {}\nrate = \"1Mbit/s\"", "middlebox[0].rate"),
    ] {
        let sc = parse(&scenario(1, "6s", gw));
        let e = ackshape_sim::Sim::build(&sc, "gw.toml", None, Default::default()).err().expect(gw).to_string();
        assert!(e.contains(&format!("gw.toml: key `{key}`")), "{gw}\n=> {e}");
    }
}
