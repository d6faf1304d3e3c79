//! The AQM disciplines (`codel`, `fq-codel`, `pie`, `cake`) on a simulated bottleneck: what each
//! is for, end to end with the simulator's TCP, against a drop-tail FIFO of the same buffer; the
//! link report (`aqm`, `drops`); determinism; and the file errors.
mod common;
use common::*;

/// 10 SACK flows, 10 Mbit/s bottleneck with `qdisc` and a 1000-packet buffer, 40 ms base RTT, 40 s.
fn dumbbell(qdisc: &str, extra: &str) -> String {
    format!(
        r#"
seed = 3
duration = "40s"
warmup = "10s"
[tcp]
cc = "sack"
{extra}
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbit/s", delay = "18ms", queue = "1000pkt"{qdisc} }}
access = {{ rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }}
[[flows]]
count = 10
start = "uniform(0s, 1s)"
"#
    )
}

fn bottleneck(s: &ackshape_sim::Summary) -> &ackshape_sim::metrics::LinkSummary {
    s.links.iter().find(|l| l.name == "bottleneck").unwrap()
}

#[test]
fn each_discipline_holds_the_delay_near_its_target_where_a_fifo_fills_its_buffer() {
    let fifo = run(&dumbbell("", ""));
    let fifo_delay_ms = bottleneck(&fifo).queue_avg_pkts * 1.2; // 1500-byte packets at 10 Mbit/s
    println!(
        "fifo: goodput {:.3} Mbit/s, queue {:.0} pkts (≈ {fifo_delay_ms:.0} ms)",
        fifo.aggregate.goodput_bps / 1e6,
        bottleneck(&fifo).queue_avg_pkts
    );
    assert!(fifo_delay_ms > 200.0, "the FIFO's standing queue is the problem case");
    // (discipline, target ms): the average sojourn stays within 3× target.
    for (q, target) in [("codel", 5.0), ("fq-codel", 5.0), ("pie", 15.0), ("cake", 5.0)] {
        let s = run(&dumbbell(&format!(", qdisc = {{ kind = \"{q}\" }}"), ""));
        let b = bottleneck(&s);
        let a = b.aqm.as_ref().expect("an AQM link reports `aqm`");
        println!(
            "{q:<9} goodput {:.3} Mbit/s, Jain {:.4}, sojourn {:.2} ms (max {:.0}), drops {} (window {}), utilization {:.3}",
            s.aggregate.goodput_bps / 1e6,
            s.aggregate.jain,
            a.sojourn_avg_ms,
            a.sojourn_max_ms,
            b.drops,
            a.drops,
            b.utilization
        );
        assert!(a.sojourn_avg_ms < 3.0 * target, "{q}: sojourn {} ms", a.sojourn_avg_ms);
        assert!(s.aggregate.goodput_bps > 0.95 * fifo.aggregate.goodput_bps, "{q}: goodput");
        assert!(a.drops > 0 && b.drops >= a.drops, "{q}: drops are reported in `drops` and `aqm.drops`");
        // Little's law on the link's own queue average agrees with the discipline's sojourn.
        let little_ms = b.queue_avg_pkts / (a.packets as f64 / 30.0) * 1e3;
        assert!(
            (little_ms - a.sojourn_avg_ms).abs() < 0.15 * a.sojourn_avg_ms + 0.5,
            "{q}: {little_ms} vs {}",
            a.sojourn_avg_ms
        );
        if q == "fq-codel" || q == "cake" {
            assert!(s.aggregate.jain > 0.99, "{q}: flow queuing shares evenly");
        }
    }
}

#[test]
fn ecn_capable_flows_are_marked_instead_of_dropped() {
    for q in [r#""codel", ecn = true"#, r#""fq-codel""#, r#""pie", ecn = true"#, r#""cake""#] {
        let s = run(&dumbbell(&format!(", qdisc = {{ kind = {q} }}"), "ecn = true"));
        let a = bottleneck(&s).aqm.clone().unwrap();
        println!("{q}: marks {}, drops {}", a.marks, a.drops);
        assert!(a.marks > 100, "{q}: {a:?}");
        assert!(a.drops * 10 < a.marks, "{q}: mostly marks: {a:?}");
    }
}

#[test]
fn a_shaped_cake_holds_its_rate_on_a_faster_link() {
    let s = run(&dumbbell("", "").replace(
        "rate = \"10Mbit/s\", delay = \"18ms\", queue = \"1000pkt\"",
        "rate = \"100Mbit/s\", delay = \"18ms\", queue = \"1000pkt\", qdisc = { kind = \"cake\", rate = \"8Mbit/s\" }",
    ));
    let b = bottleneck(&s);
    let ip_rate = b.utilization * 100e6;
    println!(
        "cake at 8 Mbit/s on a 100 Mbit/s link: {:.3} Mbit/s of IP bytes, sojourn {:.2} ms",
        ip_rate / 1e6,
        b.aqm.as_ref().unwrap().sojourn_avg_ms
    );
    assert!((ip_rate / 8e6 - 1.0).abs() < 0.02, "{ip_rate}");
}

#[test]
fn same_seed_same_summary() {
    for q in ["codel", "fq-codel", "pie", "cake"] {
        let text = dumbbell(&format!(", qdisc = {{ kind = \"{q}\" }}"), "");
        let a = serde_json::to_string(&run(&text).links).unwrap();
        let b = serde_json::to_string(&run(&text).links).unwrap();
        assert_eq!(a, b, "{q}");
        // Another seed moves the flows (and the hash key): a different run.
        let c = serde_json::to_string(&run(&text.replace("seed = 3", "seed = 4")).links).unwrap();
        assert_ne!(a, c, "{q}");
    }
}

#[test]
fn bad_keys_are_named() {
    for (q, want) in [
        (r#"{ kind = "pie", target = 15 }"#, "`target`"),
        (r#"{ kind = "codel", targte = "5ms" }"#, "targte"),
        (r#"{ kind = "fq-codel", quantum = "3pkt" }"#, "`quantum`"),
        (r#"{ kind = "cake", flow_mode = "per-host" }"#, "triple-isolate"),
        (r#"{ kind = "codel", target = "50ms", interval = "10ms" }"#, "interval"),
        (r#"{ kind = "cake", rate = "0bit/s" }"#, "rate"),
    ] {
        let text = dumbbell(&format!(", qdisc = {q}"), "");
        let e = match ackshape_sim::Scenario::parse(&text, "t.toml") {
            Err(e) => e.to_string(),
            Ok(sc) => match ackshape_sim::Sim::build(&sc, "t.toml", None, Default::default()) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{q} was accepted"),
            },
        };
        println!("{q}: {e}");
        assert!(e.contains("t.toml") && e.contains("qdisc") && e.contains(want), "{q}: {e}");
    }
}
