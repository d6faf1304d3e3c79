//! Paper 003 in the simulator: VPS groups, MulTCP flows, the WRR application, on/off UDP,
//! receiver groups, and the scenario errors of the new keys.

mod common;
use ackshape_sim::Scenario;
use common::*;

/// The thesis topology (Sec. 6.2), shortened: `GROUP` is replaced by a flow entry.
fn topo(rate: &str, group: &str, duration: &str) -> String {
    format!(
        r#"
duration = "{duration}"
[tcp]
cc = "sack"
mss = 1000
initial_window = 2
max_burst = 4
timestamps = false
delack = 1
rcv_buf = "128pkt"
[topology]
kind = "dumbbell"
senders = 7
bottleneck = {{ rate = "{rate}", delay = "25ms", queue = "50pkt" }}
access = {{ rate = "100Mbit/s", delay = "5ms" }}
{group}
[[flows]]
kind = "bulk"
count = 3
start = "uniform(0s, 1s)"
"#
    )
}

fn shares(g: &[f64]) -> Vec<f64> {
    let t: f64 = g.iter().sum();
    g.iter().map(|x| x / t).collect()
}

#[test]
fn vps_group_splits_by_weight_and_matches_tcp_aggregate() {
    let vps = r#"
[[flows]]
kind = "vps"
count = 3
weights = [1, 2, 3]
start = "uniform(0s, 1s)""#;
    let tcp = r#"
[[flows]]
kind = "bulk"
count = 3
start = "uniform(0s, 1s)""#;
    let a = run(&topo("2Mbit/s", vps, "200s"));
    let b = run(&topo("2Mbit/s", tcp, "200s"));
    let g: Vec<f64> = a.flows[..3].iter().map(|f| f.goodput_bps).collect();
    let s = shares(&g);
    for (i, w) in [1.0, 2.0, 3.0].iter().enumerate() {
        let acc = s[i] / (w / 6.0);
        assert!((acc - 1.0).abs() < 0.02, "flow {i}: A_i = {acc} ({g:?})");
    }
    // All three flows leave one sender host, to three receivers.
    assert!(a.flows[..3].iter().all(|f| f.src == a.flows[0].src));
    assert_eq!(a.flows[0].kind, "vps");
    let f = g.iter().sum::<f64>() / b.flows[..3].iter().map(|f| f.goodput_bps).sum::<f64>();
    assert!((f - 1.0).abs() < 0.1, "fairness ratio {f}");
    // The group's counters are in the summary.
    assert_eq!(a.groups.len(), 1);
    let st = &a.groups[0]["stats"];
    assert!(st["actual_acks"].as_u64().unwrap() > 10_000);
    assert!(st["translator"]["psr_created"].as_u64().unwrap() > 10_000);
    assert_eq!(a.groups[0]["weights"], serde_json::json!([1.0, 2.0, 3.0]));
    assert!(a.flows[0].retransmitted_packets > 0, "actual flows' counters reported");
}

#[test]
fn multcp_flows_take_more_than_their_share() {
    let m = r#"
[[flows]]
kind = "multcp"
count = 3
weights = [1, 2, 3]
start = "uniform(0s, 1s)""#;
    let s = run(&topo("2Mbit/s", m, "200s"));
    let mul: f64 = s.flows[..3].iter().map(|f| f.goodput_bps).sum();
    let tcp: f64 = s.flows[3..6].iter().map(|f| f.goodput_bps).sum();
    assert_eq!(s.flows[2].cc, "multcp");
    assert!(mul > 1.3 * tcp, "MulTCP with N = 1, 2, 3 acts like 6 flows: {mul} vs {tcp}");
    assert!(s.flows[2].goodput_bps > s.flows[0].goodput_bps);
}

/// Sec. 2.1: blocking WRR gives the ratios but less than the fair aggregate; non-blocking gives
/// the fair aggregate but no differentiation.
#[test]
fn wrr_blocking_vs_non_blocking() {
    let w = |io: &str| {
        format!(
            r#"
[[flows]]
kind = "wrr"
count = 3
weights = [1, 2, 3]
io = "{io}"
sndbuf = "64KB"
start = "uniform(0s, 1s)""#
        )
    };
    let b = run(&topo("10Mbit/s", &w("blocking"), "100s"));
    let n = run(&topo("10Mbit/s", &w("non-blocking"), "100s"));
    let gb: Vec<f64> = b.flows[..3].iter().map(|f| f.goodput_bps).collect();
    let gn: Vec<f64> = n.flows[..3].iter().map(|f| f.goodput_bps).collect();
    let sb = shares(&gb);
    assert!((sb[1] / sb[0] - 2.0).abs() < 0.2 && (sb[2] / sb[0] - 3.0).abs() < 0.3, "blocking {gb:?}");
    let sn = shares(&gn);
    assert!(sn.iter().all(|x| (x - 1.0 / 3.0).abs() < 0.04), "non-blocking {gn:?}");
    let (ab, an): (f64, f64) = (gb.iter().sum(), gn.iter().sum());
    assert!(ab < 0.85 * an, "blocking aggregate {ab} vs non-blocking {an}");
}

#[test]
fn udp_onoff_mean_rate_and_receiver_groups() {
    let s = run(r#"
duration = "200s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "100Mbit/s", delay = "5ms" }
access = { rate = "100Mbit/s", delay = "1ms" }
receiver_groups = [{ receivers = 1, access = { delay = "1ms" } }, { receivers = 1, access = { delay = "21ms" } }]
[[flows]]
kind = "udp-onoff"
rate = "2Mbit/s"
on = "500ms"
off = "500ms"
packet_size = "1000B"
[[flows]]
kind = "bulk"
bytes = "10KB"
"#);
    // On half the time: half the peak rate of payload (IP size − 28).
    let r = s.flows[0].goodput_bps / (2e6 * 972.0 / 1000.0);
    assert!((r - 0.5).abs() < 0.05, "on/off duty {r}");
    // Receiver d1 is 20 ms further away each way: RTT 2·(1 + 5 + 21) ms.
    assert!((s.flows[1].rtt_min_ms - 54.0).abs() < 1.0, "{}", s.flows[1].rtt_min_ms);
    assert!(s.links.iter().any(|l| l.name == "access-d1"));
}

#[test]
fn deterministic() {
    let g = r#"
[[flows]]
kind = "vps"
count = 2
weights = [1, 3]
vps = { max_burst = 4, suspension = true, suppression = true }"#;
    let t = topo("1Mbit/s", g, "60s");
    let (a, b) = (run(&t), run(&t));
    assert_eq!(serde_json::to_string(&a.flows).unwrap(), serde_json::to_string(&b.flows).unwrap());
    assert_eq!(a.groups, b.groups);
}

#[test]
fn scenario_errors_name_the_key() {
    let cases = [
        ("[[flows]]\nkind = \"vps\"\ncount = 3\nweights = [1, 2]", "flows[0].weights", "one weight per flow"),
        ("[[flows]]\nkind = \"vps\"\ncount = 2\nweights = [1, 0]", "flows[0].weights", "positive"),
        ("[[flows]]\nkind = \"bulk\"\nweights = [1]", "flows[0].weights", "only `vps`"),
        ("[[flows]]\nkind = \"bulk\"\nio = \"blocking\"", "flows[0].io", "only a `wrr`"),
        ("[[flows]]\nkind = \"wrr\"\ncount = 2\nio = \"sometimes\"", "flows[0].io", "unknown variant"),
        ("[[flows]]\nkind = \"multcp\"\ncount = 2\nweights = [0.5, 2]", "flows[0].weights", "at least 1"),
        ("[[flows]]\nkind = \"udp-onoff\"\nrate = \"1Mbit/s\"\non = \"0s\"", "flows[0].on", "positive"),
        ("[[flows]]\nkind = \"vps\"\nvps = { burst = 3 }", "flows[0].vps.burst", "unknown field"),
    ];
    for (flows, key, msg) in cases {
        let text = format!(
            "duration = \"1s\"\n[topology]\nkind = \"dumbbell\"\nbottleneck = {{ rate = \"1Mbit/s\" }}\naccess = {{ rate = \"1Mbit/s\" }}\n{flows}\n"
        );
        let e = Scenario::parse(&text, "s.toml").expect_err(flows);
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
        assert!(e.msg.contains(msg), "{e}");
    }
}
