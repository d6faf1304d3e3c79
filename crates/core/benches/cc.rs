//! Per-ACK cost of the congestion controllers (`reno`, `sack`, `cubic`, `bbr`) in a small
//! simulation (`tests/cc_workload`: one bulk flow, 100 Mbit/s, 20 ms RTT, 100-packet drop-tail
//! bottleneck, 10 s simulated): the wall time of the whole run (sender, receiver and the path
//! model) per ACK the sender handles, and its ratio to reno's in the same invocation. Run:
//! `cargo bench -p ackshape-core --bench cc` (criterion, then a summary: best of 5). Instruction
//! counts of the sender's ACK handling alone: `scripts/cc_instr.sh`.

#[path = "../tests/cc_workload/mod.rs"]
mod cc_workload;

use cc_workload::{run, CCS};
use criterion::{criterion_group, Criterion, Throughput};
use std::time::{Duration, Instant};

const SECS: f64 = 10.0;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("cc");
    g.measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_millis(500)).sample_size(20);
    for &cc in CCS {
        g.throughput(Throughput::Elements(run(cc, SECS).acks));
        g.bench_function(cc, |b| b.iter(|| run(cc, SECS)));
    }
    g.finish();
}

/// ns per sender ACK, best of 5 runs, and the ratio to reno.
fn summary() {
    println!("\nns per ACK the sender handles (whole small simulation, {SECS} s simulated, best of 5):");
    let mut rows = Vec::new();
    for &cc in CCS {
        let mut best = f64::INFINITY;
        let mut o = run(cc, SECS);
        for _ in 0..5 {
            let t = Instant::now();
            o = run(cc, SECS);
            best = best.min(t.elapsed().as_nanos() as f64 / o.acks as f64);
        }
        rows.push((cc, best, o));
    }
    let reno = rows[0].1;
    for (cc, t, o) in rows {
        println!(
            "  {cc:<6} {t:>7.1} ns  ({:.2}x reno)  [{} ACKs, {} data segments, {} retransmitted, {} drops, {} timeouts, {:.1} Mbit/s]",
            t / reno,
            o.acks,
            o.data_segs,
            o.retrans,
            o.drops,
            o.timeouts,
            o.bytes_acked as f64 * 8.0 / SECS / 1e6
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
