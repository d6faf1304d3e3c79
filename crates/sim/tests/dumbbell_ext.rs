//! Dumbbell extensions the paper 000/001 experiments need: per-group receiver access links (WAN
//! delays a gateway at `left` sees), an upstream router (paper 001 Fig. 4) and senders without
//! congestion avoidance (paper 001 §2.4).

mod common;
use common::*;

#[test]
fn group_receiver_access_sets_each_groups_wan_delay() {
    let s = run(r#"
duration = "5s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "100Mbit/s", delay = "0s" }
access = { rate = "100Mbit/s", delay = "0s" }
[[topology.groups]]
senders = 1
receiver_access = { delay = "5ms" }
[[topology.groups]]
senders = 1
receiver_access = { delay = "50ms" }
[[flows]]
count = 3
"#);
    let rtt: Vec<f64> = s.flows.iter().map(|f| f.rtt_min_ms).collect();
    println!("min RTTs (ms): {rtt:?}");
    // Round trip = 2 × the receiver access delay (+ serialisation); the third pair has none.
    assert!((rtt[0] - 10.0).abs() < 1.0, "{rtt:?}");
    assert!((rtt[1] - 100.0).abs() < 1.0, "{rtt:?}");
    assert!(rtt[2] < 1.0, "{rtt:?}");
}

#[test]
fn upstream_router_sits_between_senders_and_the_bottleneck() {
    let text = r#"
duration = "10s"
warmup = "2s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "2Mbit/s", delay = "5ms", queue = "50pkt" }
upstream = { rate = "20Mbit/s", delay = "1ms" }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 4
[[middlebox]]
node = "edge"
wan = "upstream"
kind = "pass-through"
"#;
    let s = run(text);
    let up = s.link("upstream").unwrap();
    let b = s.link("bottleneck").unwrap();
    println!(
        "upstream tx {} util {:.3}; bottleneck tx {} util {:.3}",
        up.tx_packets, up.utilization, b.tx_packets, b.utilization
    );
    // Every data packet crosses the upstream link first (drops at the bottleneck come after it).
    assert!(up.tx_packets >= b.tx_packets && up.tx_packets > 1000);
    assert!(b.utilization > 0.9 && up.utilization < 0.2);
    assert_eq!(s.middleboxes.len(), 1);
    assert_eq!(s.middleboxes[0]["node"], "edge");
    // The box sees the data before the upstream link and the ACKs coming back over it.
    let up_rev = s.link("upstream:rev").unwrap();
    assert_eq!(s.middleboxes[0]["packets_seen"].as_u64().unwrap(), up.tx_packets + up_rev.tx_packets);
    // Names in errors: a bad upstream link.
    let bad = text.replace(r#"upstream = { rate = "20Mbit/s", delay = "1ms" }"#, r#"upstream = { delay = "1ms" }"#);
    let err = ackshape_sim::Scenario::parse(&bad, "u.toml").unwrap_err().to_string();
    assert!(err.contains("u.toml") && err.contains("topology.upstream.rate"), "{err}");
}

#[test]
fn senders_without_congestion_avoidance_take_more_than_reno() {
    let s = run(r#"
duration = "40s"
warmup = "10s"
[tcp]
cc = "reno"
sack = false
delack = 1
ecn = true
rcv_buf = "64KB"
[topology]
kind = "dumbbell"
bottleneck = { rate = "5Mbit/s", delay = "10ms", qdisc = { kind = "red", min_th = 10, max_th = 30, w_q = 0.02, max_p = 0.2, limit_pkts = 10000, ecn = true, mark_only = true } }
access = { rate = "50Mbit/s", delay = "1ms" }
[[flows]]
count = 4
start = "uniform(0s, 1s)"
[[flows]]
count = 4
start = "uniform(0s, 1s)"
tcp = { congestion_avoidance = false }
"#);
    let g = |r: std::ops::Range<usize>| s.flows[r].iter().map(|f| f.goodput_bps).sum::<f64>();
    let (normal, greedy) = (g(0..4), g(4..8));
    let retx: u64 = s.flows[4..].iter().map(|f| f.retransmitted_packets).sum();
    println!("normal {normal:.0} bit/s, no-CA {greedy:.0} bit/s, no-CA retransmissions {retx}");
    let b = s.link("bottleneck").unwrap();
    println!("bottleneck drops {}, counters {:?}, queue avg {:.0}", b.drops, b.qdisc_counters, b.queue_avg_pkts);
    // Both kinds halve on ECN marks; without congestion avoidance the window doubles back.
    assert!(greedy > 1.3 * normal, "no-CA senders take more: {greedy} vs {normal}");
    assert_eq!(b.drops, 0, "mark-only RED drops nothing below its limit");
    assert!(s.flows.iter().all(|f| f.data_packets_sent >= f.retransmitted_packets && f.data_packets_sent > 0));
}
