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
