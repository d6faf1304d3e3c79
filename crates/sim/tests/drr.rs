//! Per-flow DRR at a bottleneck: an unresponsive UDP flood cannot take the TCP flows' share.

mod common;
use common::*;

fn scenario(qdisc: &str) -> String {
    format!(
        r#"
duration = "40s"
warmup = "10s"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbit/s", delay = "20ms", queue = "100pkt"{qdisc} }}
access = {{ rate = "100Mbit/s", delay = "1ms" }}
[[flows]]
count = 3
start = "uniform(0s, 1s)"
[[flows]]
name = "flood"
kind = "udp-cbr"
rate = "8Mbit/s"
packet_size = "1500B"
"#
    )
}

#[test]
fn drr_gives_tcp_its_fair_share_against_a_udp_flood() {
    let fifo = run(&scenario(""));
    let drr =
        run(&scenario(r#", qdisc = { kind = "drr", quantum_bytes = 1514, limit_pkts = 100, flow_limit_pkts = 100 }"#));
    for (name, s) in [("FIFO", &fifo), ("DRR", &drr)] {
        let g: Vec<String> = s.flows.iter().map(|f| format!("{}={:.2}", f.name, f.goodput_bps / 1e6)).collect();
        println!(
            "{name}: goodput Mbit/s {g:?}, bottleneck counters {:?}",
            s.link("bottleneck").unwrap().qdisc_counters
        );
    }
    let tcp = |s: &ackshape_sim::Summary| -> Vec<f64> {
        s.flows.iter().filter(|f| f.kind == "bulk").map(|f| f.goodput_bps).collect()
    };
    let fifo_tcp: f64 = tcp(&fifo).iter().sum();
    let drr_tcp = tcp(&drr);
    assert!(fifo_tcp < 3.0e6, "under FIFO the flood takes most of the link ({fifo_tcp})");
    // Fair share: 10 Mbit/s / 4 flows = 2.5 Mbit/s of IP bytes each (≈ 2.4 Mbit/s of goodput).
    for g in &drr_tcp {
        assert!(*g > 2.0e6 && *g < 2.8e6, "each TCP flow near its fair share: {drr_tcp:?}");
    }
}
