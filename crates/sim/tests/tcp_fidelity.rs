//! TCP model fidelity on the simulator (issue 2, "done when" 1, 2, 3, 5).

mod common;
use ackshape_core::model::{padhye, ModelInput};
use ackshape_sim::RunOptions;
use common::*;

fn one_flow(cc: &str, p: f64, rtt_ms: u64, secs: u64, seed: u64) -> String {
    // An unconstrained 1 Gbit/s path; loss on the data direction only; RTT = 2 × one-way delay.
    format!(
        r#"
seed = {seed}
duration = "{secs}s"
warmup = "10s"
[tcp]
cc = "{cc}"
min_rto = "1s"
delack = 2
[topology]
kind = "graph"
nodes = [{{ name = "a", kind = "host" }}, {{ name = "b", kind = "host" }}]
links = [{{ name = "path", a = "a", b = "b", rate = "1Gbit/s", delay = "{d}us", queue = "100000pkt",
           loss = {{ kind = "bernoulli", p = {p} }} }}]
[[flows]]
from = "a"
to = "b"
"#,
        d = rtt_ms * 500
    )
}

/// Goodput vs the Padhye full model for Reno, NewReno and SACK over p × RTT.
#[test]
fn model_agreement_padhye() {
    let mut worst: f64 = 1.0;
    let mut failures = Vec::new();
    for cc in ["reno", "new-reno", "sack"] {
        for rtt_ms in [20u64, 100] {
            for p in [0.001, 0.005, 0.01, 0.02] {
                // Long enough for a few hundred loss events.
                let secs = if p < 0.004 { 400 } else { 200 };
                let s = run(&one_flow(cc, p, rtt_ms, secs, 1));
                let f = &s.flows[0];
                let model_pps = padhye(&ModelInput {
                    p,
                    rtt_s: rtt_ms as f64 / 1e3,
                    b: 2.0,
                    t0_s: 1.0,
                    wmax: (4u64 << 20) as f64 / 1448.0,
                });
                let model_bps = model_pps * 1448.0 * 8.0;
                let ratio = f.goodput_bps / model_bps;
                println!(
                    "padhye {cc:>8} p={p:<5} rtt={rtt_ms:>3}ms: measured {:>10.0} bit/s, model {:>10.0} bit/s, ratio {ratio:.3} (RTO {}, FR {})",
                    f.goodput_bps, model_bps, f.timeouts, f.fast_retransmits
                );
                if (ratio - 1.0).abs() > 0.30 {
                    failures.push(format!("{cc} p={p} rtt={rtt_ms}ms ratio {ratio:.3}"));
                }
                if (ratio - 1.0).abs() > (worst - 1.0).abs() {
                    worst = ratio;
                }
            }
        }
    }
    println!("worst ratio {worst:.3}");
    assert!(failures.is_empty(), "outside ±30% of Padhye: {failures:?}");
}

/// One flow limited by the receiver window: throughput = rwnd / RTT within 2%.
#[test]
fn window_limited_rate() {
    for (buf, rtt_ms) in [(65536u64, 100u64), (131072, 50)] {
        let text = format!(
            r#"
duration = "30s"
warmup = "5s"
[tcp]
rcv_buf = "{buf}B"
[topology]
kind = "graph"
nodes = [{{ name = "a", kind = "host" }}, {{ name = "b", kind = "host" }}]
links = [{{ a = "a", b = "b", rate = "1Gbit/s", delay = "{d}us" }}]
[[flows]]
from = "a"
to = "b"
"#,
            d = rtt_ms * 500
        );
        let s = run(&text);
        let expect = buf as f64 * 8.0 / (rtt_ms as f64 / 1e3);
        let got = s.flows[0].goodput_bps;
        println!(
            "rwnd {buf} B, RTT {rtt_ms} ms: goodput {got:.0} bit/s, rwnd/RTT {expect:.0} bit/s, ratio {:.4}",
            got / expect
        );
        assert!((got / expect - 1.0).abs() <= 0.02, "ratio {}", got / expect);
    }
}

/// Ten equal-RTT flows through a drop-tail bottleneck with buffer ≥ BDP for 60 s.
#[test]
fn sharing_utilization_and_fairness() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../benches/reference-dumbbell.toml")).unwrap();
    let s = run(&text);
    let b = s.link("bottleneck").unwrap();
    println!(
        "utilization {:.4}, Jain {:.4}, aggregate goodput {:.0} bit/s",
        b.utilization, s.aggregate.jain, s.aggregate.goodput_bps
    );
    assert!(b.utilization >= 0.95, "utilization {}", b.utilization);
    assert!(s.aggregate.jain >= 0.95, "Jain {}", s.aggregate.jain);
}

/// A scripted single drop: times of the first transmission and the retransmission of the dropped
/// data segment, plus the flow's timeouts and fast retransmits.
fn single_drop(cc: &str, iw: u32, drop_idx: u64, gran: &str, min_rto: &str) -> (f64, u64, u64) {
    let text = format!(
        r#"
duration = "10s"
[tcp]
cc = "{cc}"
initial_window = {iw}
rto_granularity = "{gran}"
min_rto = "{min_rto}"
[topology]
kind = "graph"
nodes = [{{ name = "a", kind = "host" }}, {{ name = "b", kind = "host" }}]
links = [{{ name = "path", a = "a", b = "b", rate = "10Mbit/s", delay = "20ms",
           loss = {{ kind = "script", drop = [{drop_idx}] }} }}]
[[flows]]
from = "a"
to = "b"
bytes = "200KB"
"#
    );
    let rec = Recorder::default();
    let opts = RunOptions { captures: vec![("path".into(), Box::new(rec.clone()))] };
    let (s, _) = run_with(&text, opts);
    let pkts = rec.0.lock().unwrap();
    // The dropped packet never reaches the transmitter; find the first data segment sent twice.
    let mut first = std::collections::HashMap::new();
    let mut stall = f64::NAN;
    for (t, p) in pkts.iter() {
        if p.payload_len == 0 {
            continue;
        }
        let seq = p.tcp().unwrap().seq.0;
        if let Some(t0) = first.get(&seq) {
            stall = (t.0 - *t0) as f64 * 1e-9;
            break;
        }
        first.insert(seq, t.0);
    }
    // The dropped one's first transmission is not captured (lost before the queue); use the
    // transmission time of the segment that followed it instead.
    let f = &s.flows[0];
    assert_eq!(f.bytes_delivered, 200_000, "transfer completes");
    (stall, f.timeouts, f.fast_retransmits)
}

#[test]
fn single_drop_large_window_is_fast_retransmit() {
    for cc in ["new-reno", "sack"] {
        // Link packets: 1 SYN, 2 handshake ACK, 3.. data: drop the 5th data segment of IW 10.
        let (_, rto, fr) = single_drop(cc, 10, 7, "1ms", "1s");
        println!("{cc}: cwnd 10, one drop → timeouts {rto}, fast retransmits {fr}");
        assert_eq!((rto, fr), (0, 1), "{cc}");
    }
}

#[test]
fn single_drop_small_window_needs_timeout() {
    for cc in ["new-reno", "sack"] {
        // IW 3: drop the 2nd data segment; only one duplicate ACK can follow.
        let (stall, rto, fr) = single_drop(cc, 3, 4, "1ms", "200ms");
        println!("{cc}: cwnd 3, one drop, fine clock, min RTO 200 ms → timeouts {rto}, FR {fr}, stall {stall:.3} s");
        assert_eq!(rto, 1, "{cc}: timeouts");
        assert_eq!(fr, 0, "{cc}: fast retransmits");
        assert!(stall > 0.15 && stall < 0.45, "{cc}: stall {stall}");
        let (stall, rto, _) = single_drop(cc, 3, 4, "500ms", "1s");
        println!("{cc}: cwnd 3, one drop, 500 ms tick → timeouts {rto}, stall {stall:.3} s");
        assert_eq!(rto, 1);
        assert!(stall > 0.9 && stall < 1.6, "{cc}: coarse-tick stall {stall}");
    }
}
