//! Paper 000's fairness setting (P0-F10 style): flows with 10/50/150 ms WAN delay in a 200 KB/s
//! class. Per-flow token buckets equalise them; a class FIFO lets short-RTT flows win.

mod common;
use common::*;

fn scenario(qdisc: &str) -> String {
    format!(
        r#"
duration = "60s"
warmup = "10s"
[tcp]
rcv_buf = "64KB"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbit/s", delay = "1ms", qdisc = {qdisc} }}
access = {{ rate = "100Mbit/s", delay = "1ms" }}
[[topology.groups]]
senders = 1
access = {{ delay = "10ms" }}
[[topology.groups]]
senders = 1
access = {{ delay = "50ms" }}
[[topology.groups]]
senders = 1
access = {{ delay = "150ms" }}
[[flows]]
count = 3
"#
    )
}

#[test]
fn pfq_equalises_flows_with_different_rtts() {
    let fifo = run(&scenario(r#"{ kind = "tbf", rate = "200KB/s", burst = "3000B", limit_pkts = 100 }"#));
    let pfq = run(&scenario(r#"{ kind = "pfq", rate = "200KB/s", burst = "1500B", flow_limit_pkts = 100 }"#));
    for (name, s) in [("class FIFO", &fifo), ("PFQ", &pfq)] {
        let g: Vec<String> = s.flows.iter().map(|f| format!("{:.1}", f.goodput_bps / 8e3)).collect();
        println!(
            "{name}: goodput KB/s {g:?}, aggregate {:.1} KB/s, CoV {:.3}",
            s.aggregate.goodput_bps / 8e3,
            s.aggregate.cov
        );
    }
    assert!(pfq.aggregate.cov < 0.05, "PFQ CoV {}", pfq.aggregate.cov);
    assert!(
        fifo.aggregate.cov > 2.0 * pfq.aggregate.cov,
        "class FIFO less fair: {} vs {}",
        fifo.aggregate.cov,
        pfq.aggregate.cov
    );
    // The class rate (IP bytes) bounds the aggregate: 200 KB/s × 1448/1500 of goodput.
    assert!(pfq.aggregate.goodput_bps < 200e3 * 8.0 * 1448.0 / 1500.0 * 1.01);
}
