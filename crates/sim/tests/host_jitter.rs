//! `host_jitter`: every packet a host sends leaves it after an extra delay uniform in [0, jitter],
//! in order — a real host's timing noise, which breaks the drop-tail phase effects of a noise-free
//! simulation.

mod common;
use ackshape_sim::{RunOptions, Sim};
use common::*;

/// One flow, window-limited far below a fast path: almost no queue, so every RTT sample is the
/// 20 ms of propagation plus the two hosts' noise (data and ACK) plus serialisation.
const QUIET_PATH: &str = r#"
duration = "10s"
[tcp]
rcv_buf = "32KB"
delack = 1
[topology]
kind = "dumbbell"
bottleneck = { rate = "1Gbit/s", delay = "10ms" }
access = { rate = "1Gbit/s", delay = "0s" }
[[flows]]
"#;

#[test]
fn host_jitter_delays_what_hosts_send_within_its_bound_and_in_order() {
    let plain = run(QUIET_PATH);
    let text = format!("host_jitter = \"2ms\"\n{QUIET_PATH}");
    let rec = Recorder::default();
    let opts = RunOptions { captures: vec![("access-s0".into(), Box::new(rec.clone()))] };
    let (noisy, _) = run_with(&text, opts);
    let (p, n) = (&plain.flows[0], &noisy.flows[0]);
    println!(
        "RTT without noise {:.3}–{:.3} ms, with 2 ms of host jitter {:.3}–{:.3} ms",
        p.rtt_min_ms, p.rtt_max_ms, n.rtt_min_ms, n.rtt_max_ms
    );
    // Without noise the samples differ only by the window's own queueing (22 segments at
    // 1 Gbit/s); with it they spread over at most 2 × 2 ms more (the data's host and the ACK's).
    assert!(p.rtt_max_ms - p.rtt_min_ms < 0.5, "{} {}", p.rtt_min_ms, p.rtt_max_ms);
    assert!(n.rtt_min_ms >= p.rtt_min_ms - 1e-6, "{} < {}", n.rtt_min_ms, p.rtt_min_ms);
    assert!(n.rtt_max_ms <= p.rtt_max_ms + 4.0 + 1e-6, "{} > {} + 4", n.rtt_max_ms, p.rtt_max_ms);
    assert!(n.rtt_max_ms - n.rtt_min_ms > 1.0, "no spread: {} {}", n.rtt_min_ms, n.rtt_max_ms);
    // In order: the sender's data segments leave its host with rising sequence numbers (no loss
    // here, so no retransmission).
    let pkts = rec.0.lock().unwrap();
    let seqs: Vec<u32> = pkts
        .iter()
        .filter_map(|(_, p)| match &p.l4 {
            ackshape_wire::L4::Tcp(t) if p.payload_len > 0 => Some(t.seq.0),
            _ => None,
        })
        .collect();
    assert!(seqs.len() > 1000, "{} data segments", seqs.len());
    assert_eq!(n.retransmitted_packets, 0);
    assert!(seqs.windows(2).all(|w| w[1].wrapping_sub(w[0]) as i32 > 0), "a segment overtook another");
}

#[test]
fn zero_host_jitter_is_no_noise_and_the_noise_follows_the_seed() {
    let json = |text: &str, seed: u64| {
        let sc = parse(text);
        let mut sim = Sim::build(&sc, "test.toml", Some(seed), RunOptions::default()).unwrap();
        sim.run(None);
        serde_json::to_string(&sim.summary(0.0)).unwrap()
    };
    let noisy = format!("host_jitter = \"1ms\"\n{QUIET_PATH}");
    assert_eq!(json(QUIET_PATH, 1), json(&format!("host_jitter = \"0s\"\n{QUIET_PATH}"), 1));
    assert_eq!(json(&noisy, 1), json(&noisy, 1));
    assert_ne!(json(&noisy, 1), json(&noisy, 2));
    assert_ne!(json(&noisy, 1), json(QUIET_PATH, 1));
}

/// The live comparison scenario: three cubic flows with 10, 50 and 150 ms round trips share a
/// drop-tail class queue. Without noise the queue's drops fall in phase with the flows' packets and
/// the 150-ms flow gets far less than with a little host noise (docs/live.md, "Flows with different
/// round trips": Linux gives it 1.65–2.79 Mbit/s).
#[test]
fn host_noise_breaks_the_drop_tail_phase_effect_against_the_long_flow() {
    let text = include_str!("../../../experiments/live/rtt-class-fifo.toml");
    let mut sc = parse(text);
    assert!(sc.host_jitter.is_some(), "the file models host noise");
    let long_share = |sc: &ackshape_sim::Scenario| -> f64 {
        let mut share = 0.0;
        for seed in 1..=4 {
            let mut sim = Sim::build(sc, "rtt-class-fifo.toml", Some(seed), RunOptions::default()).unwrap();
            sim.run(None);
            let s = sim.summary(0.0);
            let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
            share += s.flows[2].goodput_bps / total / 4.0;
        }
        share
    };
    let noisy = long_share(&sc);
    sc.host_jitter = None;
    let quiet = long_share(&sc);
    println!("the 150-ms flow's share, mean of 4 seeds: {quiet:.3} without host noise, {noisy:.3} with 100 µs");
    assert!(noisy > 1.5 * quiet, "host noise should lift the long flow's share: {quiet:.3} → {noisy:.3}");
}
