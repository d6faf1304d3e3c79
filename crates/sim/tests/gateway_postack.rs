//! PostACK in the simulated edge gateway (`[[middlebox]] kind = "gateway"`, a class with
//! `mechanism = { kind = "postack", … }`): 8 bulk flows in a 5 Mbit/s class at 40 ms RTT.
mod common;
use common::*;

/// Dumbbell, RTT 2 × (1 + 18 + 1) ms = 40 ms, fat links: the gateway's class is the bottleneck.
/// 1460-byte payloads in 1500-byte IP packets, 64 KB receive windows.
fn scenario(delack: u32, class: &str) -> String {
    format!(
        r#"
seed = 3
duration = "30s"
warmup = "5s"
[tcp]
cc = "sack"
mss = 1460
timestamps = false
rcv_buf = "64KB"
delack = {delack}
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "100Mbit/s", delay = "18ms", queue = "1000pkt" }}
access = {{ rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }}
[[flows]]
kind = "bulk"
count = 8
[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
policy = {{ class = [{{ name = "bulk", rate = "5Mbit/s", {class} }}], rule = [{{ class = "bulk" }}] }}
"#
    )
}

struct R {
    goodput: Vec<f64>,
    q_avg: f64,
    q_max: u64,
    drops: u64,
    acks_held_max: u64,
    mech: serde_json::Value,
}

impl R {
    fn total(&self) -> f64 {
        self.goodput.iter().sum()
    }
    fn cov(&self) -> f64 {
        let n = self.goodput.len() as f64;
        let m = self.total() / n;
        (self.goodput.iter().map(|g| (g - m).powi(2)).sum::<f64>() / n).sqrt() / m
    }
}

fn go(delack: u32, class: &str) -> R {
    let s = run(&scenario(delack, class));
    let c = &s.middleboxes[0]["stats"]["classes"]["bulk"];
    let r = R {
        goodput: s.flows.iter().map(|f| f.goodput_bps).collect(),
        q_avg: c["data_queue_avg_pkts"].as_f64().unwrap(),
        q_max: c["data_queue_max_pkts"].as_u64().unwrap(),
        drops: c["drops"].as_u64().unwrap(),
        acks_held_max: c["acks_held_max"].as_u64().unwrap(),
        mech: c["mechanism_stats"]["outbound"].clone(),
    };
    eprintln!(
        "{class} (delack {delack}): goodput {:.3} Mbit/s, CoV {:.3}, class queue avg {:.1} max {}, drops {}, ACKs held max {}",
        r.total() / 1e6,
        r.cov(),
        r.q_avg,
        r.q_max,
        r.drops,
        r.acks_held_max
    );
    r
}

/// 1460 payload bytes per 1500 IP bytes.
const GOODPUT_CEILING: f64 = 5e6 * 1460.0 / 1500.0;

/// The class data queue (averaged over the whole run, start-up included) stays at a few packets
/// with on-off PostACK, the flows share the class equally and fill it; class-only FIFO shaping
/// queues the flows' excess windows as data instead.
#[test]
fn on_off_in_the_gateway() {
    let fifo = go(1, r#"queue = "1000pkt""#);
    for delack in [1, 2] {
        let pa = go(delack, r#"queue = "1000pkt", mechanism = { kind = "postack", variant = "on-off" }"#);
        assert!(pa.total() >= 0.9 * 5e6, "goodput {:.0}", pa.total());
        assert!(pa.cov() <= 0.1, "CoV {:.3}", pa.cov());
        assert!(pa.q_avg <= 10.0, "class queue avg {:.1}", pa.q_avg);
        assert_eq!(pa.drops, 0);
        assert!(pa.acks_held_max >= 100, "the excess windows are held as ACKs: {}", pa.acks_held_max);
        assert_eq!(pa.mech["variant"], "on-off");
        assert!(fifo.q_avg >= 10.0 * pa.q_avg, "FIFO {:.1} vs PostACK {:.1}", fifo.q_avg, pa.q_avg);
    }
    assert!(fifo.total() >= 0.95 * GOODPUT_CEILING);
}

/// Zero-timer PostACK on the P0-A5 path (PCDQ + per-flow DRR queues): about one packet per flow
/// waits in the class; pfq-drr alone holds the excess windows.
#[test]
fn zero_timer_in_the_gateway() {
    let pfq = go(1, r#"qdisc = { kind = "pfq-drr" }"#);
    for delack in [1, 2] {
        let pa =
            go(delack, r#"qdisc = { kind = "pfq-drr" }, mechanism = { kind = "postack", variant = "zero-timer" }"#);
        assert!(pa.total() >= 0.9 * 5e6, "goodput {:.0}", pa.total());
        assert!(pa.cov() <= 0.1, "CoV {:.3}", pa.cov());
        assert!(pa.q_avg <= 2.0 * 8.0, "class queue avg {:.1}", pa.q_avg);
        assert_eq!(pa.drops, 0);
        assert_eq!(pa.mech["counters"]["dequeues_without_qlen"], 0, "pfq-drr reports per-flow queue lengths");
        assert!(pfq.q_avg >= 10.0 * pa.q_avg, "pfq-drr {:.1} vs PostACK {:.1}", pfq.q_avg, pa.q_avg);
    }
}

/// The basic form (Fig. 3) in the gateway.
#[test]
fn basic_in_the_gateway() {
    let pa = go(1, r#"queue = "1000pkt", mechanism = { kind = "postack", variant = "basic" }"#);
    assert!(pa.total() >= 0.9 * 5e6, "goodput {:.0}", pa.total());
    assert!(pa.cov() <= 0.1, "CoV {:.3}", pa.cov());
    assert!(pa.q_avg <= 10.0, "class queue avg {:.1}", pa.q_avg);
}
