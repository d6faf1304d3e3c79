//! TCR allocates nothing per packet in steady state, and its state per flow is small (counted
//! per thread by a wrapping global allocator).

use ackshape_core::shape::tcr::workload::Workload;
use ackshape_core::shape::tcr::{Allocation, Pacing, Release, TcrConfig};

mod alloc_counter;
use alloc_counter::{allocs, live_bytes};

#[test]
fn no_allocation_per_packet_in_steady_state() {
    for (name, cfg) in [
        ("per-flow", TcrConfig::default()),
        ("receiver-ack", TcrConfig { release: Release::ReceiverAck, ..TcrConfig::default() }),
        ("class-tick", TcrConfig { pacing: Pacing::ClassTick, allocation: Allocation::Equal, ..TcrConfig::default() }),
    ] {
        let mut w = Workload::new(cfg, 64, 10_000_000);
        for _ in 0..20_000 {
            w.cycle();
        }
        let before = allocs();
        for _ in 0..50_000 {
            w.cycle();
        }
        let n = allocs() - before;
        assert_eq!(n, 0, "{name}: {n} allocations in 100k data packets and 50k ACKs");
        let per_ack = if name == "receiver-ack" { 1 } else { 2 };
        assert!(w.tcr.stats().acks_paced >= per_ack * 50_000, "{name}: {:?}", w.tcr.stats());
        assert!(w.tcr.timer_entries() <= 2 * 64, "{name}: {} timer entries", w.tcr.timer_entries());
    }
}

#[test]
fn state_per_flow_is_constant_and_small() {
    let record = ackshape_core::shape::tcr::Tcr::state_bytes_per_flow();
    let mut per = Vec::new();
    for n in [2_000u32, 20_000] {
        let before = live_bytes();
        let w = Workload::new(TcrConfig::default(), n, 1_000_000_000);
        let bytes = (live_bytes() - before) as f64 / n as f64;
        // Less the workload's own packet vectors (two packets and two u32 per flow).
        let own = 2.0 * std::mem::size_of::<ackshape_wire::Packet>() as f64 + 8.0;
        per.push(bytes - own);
        drop(w);
    }
    eprintln!(
        "TCR heap per flow: {:.0} B at 2k flows, {:.0} B at 20k (record + slot + table entry {record} B; the rest is container slack)",
        per[0], per[1]
    );
    // The record (flow state, its template ACK, the handshake/sequence guard that keeps spoofed
    // packets from moving it, slot and table entry) stays within 640 B; the heap per flow,
    // slack included, under 2 KiB.
    assert!(record <= 640, "{record} B record");
    assert!(per.iter().all(|b| *b < 2048.0), "{per:?}");
}
