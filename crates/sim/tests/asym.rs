//! Asymmetric-link disciplines in the simulator (issue 4): two-way TCP over an ADSL-like link,
//! the scenario in experiments/p2/adsl-two-way.toml with the discipline swapped.

mod common;
use common::*;

fn two_way(qdisc: &str) -> (f64, f64) {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/p2/adsl-two-way.toml"))
        .unwrap()
        .replace(r#"qdisc = { kind = "fifo", limit_pkts = 100 }"#, &format!("qdisc = {qdisc}"));
    let s = run(&text);
    let up = s.flows.iter().find(|f| f.name == "upload").unwrap().goodput_bps / 800e3;
    let down = s.flows.iter().find(|f| f.name == "download").unwrap().goodput_bps / 2.1e6;
    let acc = s.link("access").unwrap();
    println!(
        "{qdisc}: upload {:.1}%, download {:.1}% of the raw rates; uplink qdisc {:?}",
        up * 100.0,
        down * 100.0,
        acc.qdisc
    );
    (up, down)
}

#[test]
fn afvq_keeps_both_directions_near_line_rate() {
    // Paper 002 Fig. 8 (real gateway): 95.2% down, 93.8% up with AFVQ.
    let (up, down) = two_way(r#"{ kind = "afvq" }"#);
    assert!(up >= 0.90 && down >= 0.90, "AFVQ: up {up:.3}, down {down:.3}");
}

#[test]
fn fifo_lets_one_direction_collapse() {
    // Paper 002 §2.1: with a FIFO one direction collapses; which one depends on the queue sizes.
    for q in [r#"{ kind = "fifo", limit_pkts = 100 }"#, r#"{ kind = "fifo", limit_pkts = 200 }"#] {
        let (up, down) = two_way(q);
        assert!(up.min(down) < 0.7, "{q}: up {up:.3}, down {down:.3}");
    }
}

#[test]
fn asym_link_metrics_are_consistent() {
    // Paper 002's metrics in summary.json: per-direction TCP goodput and utilization,
    // aggregated utilization and both variance forms, per-class queues and ACK drops by reason.
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments/p2/adsl-two-way.toml"))
        .unwrap()
        .replace(r#"qdisc = { kind = "fifo", limit_pkts = 100 }"#, r#"qdisc = { kind = "afvq" }"#)
        .replace(r#"duration = "120s""#, r#"duration = "40s""#)
        .replace(r#"warmup = "20s""#, r#"warmup = "10s""#);
    let s = run(&text);
    let flow = |n: &str| s.flows.iter().find(|f| f.name == n).unwrap().goodput_bps;
    let a = s.asym_link("access").expect("the access link is asymmetric");
    assert_eq!((a.up.as_str(), a.down.as_str()), ("access", "access:rev"));
    assert_eq!((a.up_rate_bps, a.down_rate_bps), (800_000, 2_100_000));
    assert_eq!(a.up_goodput_bps, flow("upload"));
    assert_eq!(a.down_goodput_bps, flow("download"));
    assert!((a.up_utilization - flow("upload") / 800e3).abs() < 1e-12);
    assert!((a.aggregated_utilization - a.up_utilization - a.down_utilization).abs() < 1e-12);
    let d = a.up_utilization - a.down_utilization;
    assert!((a.utilization_variance_population - d * d / 4.0).abs() < 1e-12);
    assert!((a.utilization_variance_sample - 2.0 * a.utilization_variance_population).abs() < 1e-12);
    // The home and internet links carry the same flows but are symmetric without classes.
    assert!(s.asym_link("home").is_none() && s.asym_link("internet").is_none());
    assert_eq!(s.link("home").unwrap().tcp_goodput_bps, flow("upload"));
    assert_eq!(s.link("internet:rev").unwrap().tcp_goodput_bps, flow("download"));
    for dir in ["access", "access:rev"] {
        let l = s.link(dir).unwrap();
        let c = l.classes.as_ref().expect("AFVQ reports classes");
        assert_eq!(c.kind, "afvq");
        // AFVQ's ACK queue never exceeds s_max = 5; the classes add up to the whole queue.
        assert!(c.ack.queue_max_pkts <= 5, "{dir}: {c:?}");
        let sum = c.ack.queue_avg_pkts + c.data.queue_avg_pkts + c.non_tcp.queue_avg_pkts;
        assert!(
            (sum - l.queue_avg_pkts).abs() < 1e-6 * (1.0 + l.queue_avg_pkts),
            "{dir}: {sum} vs {}",
            l.queue_avg_pkts
        );
        assert_eq!(c.ack.dropped, c.ack_drops_random + c.ack_drops_filtered + c.ack_drops_queue_full);
        assert_eq!(c.ack_drops_filtered, 0);
        // Window counters: what arrived left, was dropped, or is still queued (≤ a queue's worth).
        for k in [&c.ack, &c.data] {
            let pending = k.arrived as i64 - k.dequeued as i64 - k.dropped as i64;
            assert!(pending.abs() <= 110, "{dir}: {k:?}");
        }
    }
    // The uplink carries the download's ACKs behind upload data: AFVQ drops some of them.
    let up = s.link("access").unwrap().classes.clone().unwrap();
    assert!(up.ack_drops_random > 0 && up.ack.dequeued > 0, "{up:?}");
    assert!(up.ack.queue_delay_avg_s > 0.0 && up.data.queue_delay_avg_s > up.ack.queue_delay_avg_s, "{up:?}");
}
