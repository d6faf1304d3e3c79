//! Byte conservation and determinism (issue 2, "done when" 4 and 6).

mod common;
use common::*;

const LOSSY: &str = r#"
seed = 11
duration = "40s"
verify_payload = true
[topology]
kind = "dumbbell"
access = { rate = "100Mbit/s", delay = "1ms", jitter = "1ms", loss = { kind = "bernoulli", p = 0.005 } }
[topology.bottleneck]
rate = "20Mbit/s"
delay = "15ms"
queue = "60pkt"
jitter = "3ms"
reorder = true
loss = { kind = "gilbert-elliott", p_gb = 0.005, p_bg = 0.3, loss_bad = 0.5 }
loss_both_ways = true

[[flows]]
count = 4
bytes = "3MB"
start = "uniform(0s, 1s)"
[[flows]]
count = 2
kind = "short"
bytes = "40KB"
think = "200ms"
tcp = { cc = "new-reno", sack = false }
[[flows]]
count = 2
tcp = { cc = "cubic" }
bytes = "2MB"
"#;

#[test]
fn every_byte_delivered_exactly_once_in_order() {
    let s = run(LOSSY);
    let v = s.verify.as_ref().unwrap();
    println!("{v:?}");
    let lost: u64 = s.links.iter().map(|l| l.lost).sum();
    println!("packets lost by the loss models: {lost}");
    assert!(lost > 50, "the scenario must actually lose packets ({lost})");
    assert_eq!(v.flows_checked, 8);
    assert_eq!(v.mismatched_flows, 0, "delivered streams differ from the sent streams");
    assert_eq!(v.incomplete_flows, 0, "finite transfers incomplete");
    for f in &s.flows {
        if f.kind == "bulk" {
            assert!(f.bytes_delivered == 3_000_000 || f.bytes_delivered == 2_000_000, "{f:?}");
        } else {
            assert!(f.transfers_completed >= 5, "{f:?}");
        }
    }
    assert!(v.bytes_checked >= 16_000_000);
}

#[test]
fn same_seed_same_summary() {
    let a = run(LOSSY);
    let b = run(LOSSY);
    let ja = serde_json::to_string(&a).unwrap();
    let jb = serde_json::to_string(&b).unwrap();
    assert_eq!(ja, jb);
    // A different seed changes the run.
    let c = run(&LOSSY.replace("seed = 11", "seed = 12"));
    assert_ne!(serde_json::to_string(&c).unwrap(), ja);
}
