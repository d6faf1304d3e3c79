//! BBR v1 end to end on the simulator: one flow through a 10 Mbit/s bottleneck with a 40 ms
//! base RTT and a buffer of about 1.5 BDP fills the link while keeping the queue short, where a
//! loss-based sender (SACK/NewReno window control) keeps the buffer full.
mod common;
use common::*;

/// One `cc` flow; bottleneck 10 Mbit/s, 18 ms, 50 packets (BDP = 50 kB ≈ 34 packets of 1500 B);
/// access links 100 Mbit/s, 1 ms (base RTT 40 ms).
fn dumbbell(cc: &str) -> String {
    format!(
        r#"
seed = 5
duration = "30s"
warmup = "5s"
[tcp]
cc = "{cc}"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbit/s", delay = "18ms", queue = "50pkt" }}
access = {{ rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }}
[[flows]]
count = 1
"#
    )
}

fn bottleneck(s: &ackshape_sim::Summary) -> &ackshape_sim::metrics::LinkSummary {
    s.links.iter().find(|l| l.name == "bottleneck").unwrap()
}

/// Expected: BBR's utilisation > 90% (BBR's design goal: full rate at one BDP in flight), and its
/// mean queue at most half the loss-based sender's, which fills the 50-packet buffer to losses.
#[test]
fn one_bbr_flow_fills_the_link_with_a_short_queue() {
    let bbr = run(&dumbbell("bbr"));
    let sack = run(&dumbbell("sack"));
    let (b, s) = (bottleneck(&bbr), bottleneck(&sack));
    println!(
        "bbr:  utilisation {:.3}, goodput {:.3} Mbit/s, queue avg {:.1} pkts, drops {}",
        b.utilization,
        bbr.aggregate.goodput_bps / 1e6,
        b.queue_avg_pkts,
        b.drops
    );
    println!(
        "sack: utilisation {:.3}, goodput {:.3} Mbit/s, queue avg {:.1} pkts, drops {}",
        s.utilization,
        sack.aggregate.goodput_bps / 1e6,
        s.queue_avg_pkts,
        s.drops
    );
    assert!(b.utilization > 0.90, "BBR utilisation {} (expected > 0.90)", b.utilization);
    assert!(
        b.queue_avg_pkts < 0.5 * s.queue_avg_pkts,
        "BBR queue {} pkts vs loss-based {} pkts (expected < half)",
        b.queue_avg_pkts,
        s.queue_avg_pkts
    );
}

/// Same scenario and seed → the same summary (pacing timers and the PROBE_BW phase draw are
/// deterministic).
#[test]
fn bbr_is_deterministic() {
    let a = run(&dumbbell("bbr"));
    let b = run(&dumbbell("bbr"));
    assert_eq!(a.aggregate.goodput_bps, b.aggregate.goodput_bps);
    assert_eq!(bottleneck(&a).queue_avg_pkts, bottleneck(&b).queue_avg_pkts);
}

/// A VPS group's flows follow the group's virtual windows: `cc = "bbr"` there is refused with the
/// key that set it.
#[test]
fn vps_group_refuses_bbr() {
    for (tcp, flow_tcp, key) in [("cc = \"bbr\"", "", "`tcp.cc`"), ("", "tcp = { cc = \"bbr\" }", "`flows[0].tcp.cc`")]
    {
        let text = format!(
            r#"
duration = "5s"
[tcp]
{tcp}
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbit/s", delay = "18ms", queue = "50pkt" }}
access = {{ rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }}
[[flows]]
kind = "vps"
count = 2
weights = [1, 2]
{flow_tcp}
"#
        );
        let e = match ackshape_sim::Scenario::parse(&text, "t.toml") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a VPS group with bbr was accepted"),
        };
        println!("{e}");
        assert!(e.contains("t.toml") && e.contains(key) && e.contains("window-based"), "{e}");
    }
}

/// The trace carries BBR's model. One flow alone on the link: in PROBE_BW the bandwidth estimate
/// (Linux's `bbr_max_bw`, a windowed maximum of delivery-rate samples) is at most the payload rate
/// the bottleneck can deliver — 10 Mbit/s × 1448 / 1500 for this scenario's 1500-byte packets — and at
/// least 95% of it, and the min-RTT estimate is the path's base RTT (40 ms of propagation plus a
/// 1500-byte packet's transmission on the three links, 41.44 ms) within 0.25 ms (the ACK's own
/// transmission times): the queue drains in every PROBE_RTT. A Reno flow's rows have no BBR model and no pacing rate.
#[test]
fn the_trace_carries_bbr_s_bandwidth_and_min_rtt() {
    let text = dumbbell("bbr").replace("[tcp]", "trace_interval = \"100ms\"\n[tcp]");
    let (_, sim) = common::run_with(&text, Default::default());
    let payload_rate = 10e6 * 1448.0 / 1500.0;
    let probe_bw: Vec<_> = sim
        .trace
        .iter()
        .filter(|r| r.t_s >= 5.0)
        .filter_map(|r| r.tr.bbr)
        .filter(|b| b.mode == ackshape_core::tcp::BbrMode::ProbeBw)
        .collect();
    assert!(probe_bw.len() > 200, "PROBE_BW samples after the warm-up: {}", probe_bw.len());
    let (lo, hi) =
        probe_bw.iter().map(|b| b.bw_bytes_s * 8.0).fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let rtt = probe_bw.iter().map(|b| b.min_rtt.as_secs_f64()).fold(0.0f64, f64::max);
    println!(
        "bandwidth estimate {:.3}–{:.3} Mbit/s (payload rate {:.3}), min RTT up to {:.2} ms",
        lo / 1e6,
        hi / 1e6,
        payload_rate / 1e6,
        rtt * 1e3
    );
    assert!(hi <= payload_rate * 1.0001, "estimate {hi} above the payload rate {payload_rate}");
    assert!(lo >= 0.95 * payload_rate, "estimate {lo} below 95% of the payload rate {payload_rate}");
    let base = 0.040 + 1500.0 * 8.0 / 10e6 + 2.0 * 1500.0 * 8.0 / 100e6;
    assert!((rtt - base).abs() < 0.00025, "min RTT {rtt} s, expected the base RTT {base} s");
    assert!(sim.trace.iter().all(|r| r.tr.pacing_rate_bytes_s > 0));

    let text = dumbbell("reno").replace("[tcp]", "trace_interval = \"100ms\"\n[tcp]");
    let (_, sim) = common::run_with(&text, Default::default());
    assert!(!sim.trace.is_empty());
    assert!(sim.trace.iter().all(|r| r.tr.bbr.is_none() && r.tr.pacing_rate_bytes_s == 0));
}
