//! A TCR workload for instruction counting (ignored by default; `scripts/tcr_instr.sh` runs it
//! under callgrind with 0 and N operations and prints instructions per operation). Settings
//! from the environment: `TCR_OPS` (operations), `TCR_FLOWS`, `TCR_MODE` (`data` or `ack`),
//! `TCR_PACING` (`per-flow` or `class-tick`). Asserts nothing about speed (DESIGN.md §7).

use ackshape_core::shape::tcr::workload::Workload;
use ackshape_core::shape::tcr::{Allocation, Pacing, TcrConfig};

fn env<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d)
}

#[test]
#[ignore]
fn workload() {
    let ops: u64 = env("TCR_OPS", 100_000);
    let flows: u32 = env("TCR_FLOWS", 16);
    let mode: String = env("TCR_MODE", "ack".to_string());
    // The workload's ACKs follow its data at once; use the interval a WAN gives (as the bench).
    let interval_ms = (flows as f64 * 1500.0 * 8.0 / 1e8 * 1e3).max(40.0);
    let mut cfg = TcrConfig { sample_interval_ms: interval_ms, ..TcrConfig::default() };
    if env("TCR_PACING", "per-flow".to_string()) == "class-tick" {
        cfg = TcrConfig { pacing: Pacing::ClassTick, allocation: Allocation::Equal, idle_timeout_ms: 1e12, ..cfg };
    }
    let mut w = Workload::new(cfg, flows, 100_000_000);
    for _ in 0..4 * flows.max(1024) {
        w.cycle();
    }
    if mode == "data" {
        w.settle();
    }
    for _ in 0..ops {
        if mode == "data" {
            w.data()
        } else {
            w.ack_alone()
        }
    }
}
