//! A token-bucket class rate on a faster link: the simulator's hold-until-time path.

mod common;
use common::*;

#[test]
fn tbf_class_rate_caps_tcp_at_the_rate() {
    let s = run(r#"
duration = "40s"
warmup = "5s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "20ms", qdisc = { kind = "tbf", rate = "2Mbit/s", burst = "3000B", limit_pkts = 50 } }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 3
start = "uniform(0s, 1s)"
"#);
    let b = s.link("bottleneck").unwrap();
    // 2 Mbit/s of IP bytes; goodput excludes 52 header bytes per 1500-byte packet.
    let expect = 2e6 * 1448.0 / 1500.0;
    println!(
        "goodput {:.0} (expected {expect:.0}), utilization {:.3}, queue avg {:.1}, counters {:?}",
        s.aggregate.goodput_bps, b.utilization, b.queue_avg_pkts, b.qdisc_counters
    );
    assert!((s.aggregate.goodput_bps / expect - 1.0).abs() < 0.03, "{}", s.aggregate.goodput_bps);
    assert!((b.utilization - 0.2).abs() < 0.01, "the 10 Mbit/s link is busy 20% of the time: {}", b.utilization);
    assert!(b.queue_avg_pkts > 5.0, "packets wait for tokens");
}
