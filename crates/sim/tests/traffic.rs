//! Traffic kinds and topology features: UDP CBR/Poisson rates, repeated short transfers,
//! heterogeneous RTT groups, byte-limited queues, graph routing.

mod common;
use common::*;

#[test]
fn udp_cbr_and_poisson_rates() {
    let s = run(r#"
duration = "20s"
warmup = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "100Mbit/s", delay = "5ms" }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
kind = "udp-cbr"
rate = "2Mbit/s"
packet_size = "1000B"
[[flows]]
kind = "udp-poisson"
rate = "3Mbit/s"
packet_size = "500B"
"#);
    // Goodput counts UDP payload (IP size − 28).
    let cbr = s.flows[0].goodput_bps / (2e6 * 972.0 / 1000.0);
    let poi = s.flows[1].goodput_bps / (3e6 * 472.0 / 500.0);
    println!("CBR goodput/offered payload rate {cbr:.4}, Poisson {poi:.4}");
    assert!((cbr - 1.0).abs() < 0.01, "CBR {cbr}");
    assert!((poi - 1.0).abs() < 0.05, "Poisson {poi}");
}

#[test]
fn short_transfers_complete_and_are_timed() {
    let s = run(r#"
duration = "30s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "20ms" }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
kind = "short"
count = 3
bytes = "20KB"
think = "1s"
"#);
    let st = s.short_transfers.as_ref().unwrap();
    println!("{st:?}");
    // Each cycle: handshake (1 RTT) + 20 KB in slow start from IW 10 (2 RTT) ≈ 3 × 42 ms, then 1 s.
    assert!(st.count >= 3 * 25, "{}", st.count);
    assert!(st.mean_s > 0.08 && st.mean_s < 0.2, "mean completion {}", st.mean_s);
    for f in &s.flows {
        assert_eq!(f.bytes_delivered, f.transfers_completed * 20_000);
    }
    // The sender counters cover every transfer, not just the last connection: 20 KB is 14
    // segments of 1448 bytes per transfer (the one under way may have sent some of its own).
    for f in &s.flows {
        let min = f.transfers_completed * 14;
        assert!(
            f.data_packets_sent >= min && f.data_packets_sent <= min + 14,
            "{} sent {}",
            f.name,
            f.data_packets_sent
        );
    }
}

/// Transfers their receivers open (`open = "receiver"`: the client connects, the sender listens
/// and answers): the same transfers, each a connection the receiver opened, and the payload
/// checked end to end.
#[test]
fn short_transfers_the_receiver_opens() {
    let sc = |open: &str| {
        format!(
            r#"
duration = "30s"
verify_payload = true
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbit/s", delay = "20ms" }}
access = {{ rate = "100Mbit/s", delay = "1ms" }}
[[flows]]
kind = "short"
count = 3
bytes = "20KB"
think = "1s"
open = "{open}"
"#
        )
    };
    let (a, b) = (run(&sc("sender")), run(&sc("receiver")));
    let (sa, sb) = (a.short_transfers.as_ref().unwrap(), b.short_transfers.as_ref().unwrap());
    println!("opened by the sender {sa:?}\nby the receiver {sb:?}");
    let v = b.verify.as_ref().unwrap();
    assert_eq!((v.mismatched_flows, v.incomplete_flows), (0, 0), "{v:?}");
    for f in &b.flows {
        assert_eq!(f.bytes_delivered, f.transfers_completed * 20_000);
        assert!(f.data_packets_sent >= f.transfers_completed * 14, "{}", f.data_packets_sent);
    }
    // The same transfers, half a round trip later: the receiver's SYN has to reach the sender
    // (22 ms one way here) before the handshake that a sender starts itself. A transfer is timed
    // from its opener's SYN.
    assert!(sb.count.abs_diff(sa.count) <= 3, "{} vs {}", sb.count, sa.count);
    let extra = sb.mean_s - sa.mean_s;
    assert!((extra - 0.022).abs() < 0.004, "{} vs {}: {extra}", sb.mean_s, sa.mean_s);
}

#[test]
fn rtt_groups_and_rtt_unfairness() {
    let s = run(r#"
duration = "60s"
warmup = "10s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "10ms", queue = "50pkt" }
access = { rate = "100Mbit/s", delay = "1ms" }
[[topology.groups]]
senders = 2
access = { delay = "2ms" }
[[topology.groups]]
senders = 2
access = { delay = "60ms" }
[[flows]]
count = 4
"#);
    let (short, long): (Vec<_>, Vec<_>) = s.flows.iter().partition(|f| f.id < 2);
    let rs: f64 = short.iter().map(|f| f.rtt_min_ms).sum::<f64>() / 2.0;
    let rl: f64 = long.iter().map(|f| f.rtt_min_ms).sum::<f64>() / 2.0;
    let gs: f64 = short.iter().map(|f| f.goodput_bps).sum();
    let gl: f64 = long.iter().map(|f| f.goodput_bps).sum();
    println!("min RTT short group {rs:.1} ms, long group {rl:.1} ms; goodput short {gs:.0}, long {gl:.0}");
    assert!(rs > 25.0 && rs < 40.0, "{rs}");
    assert!(rl > 140.0 && rl < 160.0, "{rl}");
    assert!(gs > 1.5 * gl, "short-RTT flows get more (TCP's RTT bias)");
}

#[test]
fn byte_limited_queue_caps_occupancy() {
    let s = run(r#"
duration = "20s"
warmup = "2s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "5Mbit/s", delay = "10ms", queue = "15000B" }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 4
"#);
    let b = s.link("bottleneck").unwrap();
    println!("max queue {} packets, drops {}", b.queue_max_pkts, b.drops);
    assert!(b.queue_max_pkts <= 10, "15000 B holds at most 10 full packets");
    assert!(b.drops > 0);
}

#[test]
fn graph_routes_over_shortest_path() {
    let s = run(r#"
duration = "5s"
[topology]
kind = "graph"
nodes = [
  { name = "h1", kind = "host" }, { name = "r1", kind = "router" }, { name = "r2", kind = "router" },
  { name = "r3", kind = "router" }, { name = "h2", kind = "host" },
]
links = [
  { name = "a", a = "h1", b = "r1", rate = "100Mbit/s" },
  { name = "long1", a = "r1", b = "r2", rate = "100Mbit/s" },
  { name = "long2", a = "r2", b = "r3", rate = "100Mbit/s" },
  { name = "short", a = "r1", b = "r3", rate = "10Mbit/s" },
  { name = "b", a = "r3", b = "h2", rate = "100Mbit/s" },
]
[[flows]]
from = "h1"
to = "h2"
"#);
    assert!(s.link("short").unwrap().tx_packets > 100);
    assert_eq!(s.link("long1").unwrap().tx_packets, 0);
    assert!(s.link("short:rev").unwrap().tx_packets > 50, "ACKs come back the same way");
}

/// Regression: with equal-rate hops, packets reach the next link exactly when it becomes free;
/// the link must keep serving its queue (it once stalled with a full queue).
#[test]
fn equal_rate_hops_keep_the_link_busy() {
    let s = run(r#"
duration = "20s"
warmup = "5s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "100Mbit/s", delay = "20ms", queue = "100pkt" }
access = { rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }
[[flows]]
count = 10
start = "uniform(0s, 1s)"
"#);
    let total: f64 = s
        .links
        .iter()
        .filter(|l| l.name.starts_with("access-s") && !l.name.ends_with(":rev"))
        .map(|l| l.utilization)
        .sum();
    let b = s.link("bottleneck").unwrap();
    println!(
        "bottleneck utilization {:.4}, sum of sender access utilizations {total:.4}, aggregate goodput {:.0}",
        b.utilization, s.aggregate.goodput_bps
    );
    assert!(s.aggregate.goodput_bps > 80e6, "{}", s.aggregate.goodput_bps);
    assert!(s.flows.iter().all(|f| f.goodput_bps > 1e6), "every flow makes progress");
}

/// Routing skips leaves (nodes whose one link is their only neighbour) in its search; a host with
/// two parallel links to its router is no leaf and keeps its table: it sends on the first, and a
/// dead-end router off the path changes nothing.
#[test]
fn graph_routes_around_leaves_and_over_parallel_links() {
    let s = run(r#"
duration = "5s"
[topology]
kind = "graph"
nodes = [
  { name = "h1", kind = "host" }, { name = "r1", kind = "router" }, { name = "stub", kind = "router" },
  { name = "r2", kind = "router" }, { name = "h2", kind = "host" }, { name = "h3", kind = "host" },
]
links = [
  { name = "first", a = "h1", b = "r1", rate = "100Mbit/s" },
  { name = "second", a = "h1", b = "r1", rate = "100Mbit/s" },
  { name = "dead-end", a = "r1", b = "stub", rate = "100Mbit/s" },
  { name = "core", a = "r1", b = "r2", rate = "10Mbit/s" },
  { name = "b", a = "r2", b = "h2", rate = "100Mbit/s" },
  { name = "c", a = "r2", b = "h3", rate = "100Mbit/s" },
]
[[flows]]
from = "h1"
to = "h2"
[[flows]]
from = "h3"
to = "h1"
"#);
    assert!(s.link("first").unwrap().tx_packets > 100, "h1 sends on its first link");
    assert_eq!(s.link("second").unwrap().tx_packets, 0);
    assert!(s.link("first:rev").unwrap().tx_packets > 100, "r1 reaches h1 over the first link too");
    assert_eq!(s.link("dead-end").unwrap().tx_packets + s.link("dead-end:rev").unwrap().tx_packets, 0);
    assert!(s.flows.iter().all(|f| f.goodput_bps > 1e6), "both flows make progress");
}

/// A flow between two parts of a graph that no link joins is an error naming the flow and both ends.
#[test]
fn graph_without_a_path_names_the_flow() {
    let sc = parse(
        r#"
duration = "5s"
[topology]
kind = "graph"
nodes = [
  { name = "h1", kind = "host" }, { name = "r1", kind = "router" }, { name = "h2", kind = "host" },
  { name = "h3", kind = "host" }, { name = "r2", kind = "router" }, { name = "h4", kind = "host" },
]
links = [
  { a = "h1", b = "r1", rate = "10Mbit/s" }, { a = "r1", b = "h2", rate = "10Mbit/s" },
  { a = "h3", b = "r2", rate = "10Mbit/s" }, { a = "r2", b = "h4", rate = "10Mbit/s" },
]
[[flows]]
from = "h1"
to = "h2"
[[flows]]
from = "h4"
to = "h1"
[[flows]]
from = "h2"
to = "h3"
"#,
    );
    let err = match ackshape_sim::Sim::build(&sc, "test.toml", None, ackshape_sim::RunOptions::default()) {
        Ok(_) => panic!("built a flow without a path"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("key `flows[1]`"), "the first flow without a path: {err}");
    assert!(err.contains("no path between h4 and h1"), "{err}");
}
