//! The congestion controllers' small simulation for instruction counting (ignored by default;
//! `scripts/cc_instr.sh` runs it under callgrind, counting the sender's ACK handling alone, and
//! prints instructions per ACK). Settings from the environment: `CC_KIND` (a name of
//! `cc_workload::CCS`), `CC_SECS` (simulated seconds). Prints the ACK count; asserts nothing
//! about speed.

mod cc_workload;

fn env<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d)
}

#[test]
#[ignore]
fn workload() {
    let cc: String = env("CC_KIND", "reno".to_string());
    let secs: f64 = env("CC_SECS", 10.0);
    let o = cc_workload::run(&cc, secs);
    println!("CC_ACKS {}", o.acks);
    println!("{cc}: {o:?}");
}

/// Every controller fills most of the path in the workload, so the per-ACK figures are of a
/// working flow (not of one stuck in timeouts).
#[test]
fn every_controller_uses_the_workloads_path() {
    for &cc in cc_workload::CCS {
        let o = cc_workload::run(cc, 10.0);
        let mbps = o.bytes_acked as f64 * 8.0 / 10.0 / 1e6;
        println!("{cc}: {mbps:.1} Mbit/s, {o:?}");
        assert!(mbps > 60.0, "{cc}: {mbps:.1} Mbit/s of 100 over 10 s");
        assert!(o.acks > 5_000, "{cc}: {} ACKs", o.acks);
    }
}
