//! Per-packet cost (one enqueue + one dequeue) of the AQM disciplines (`codel`, `fq-codel`,
//! `pie`, `cake`) against drop-tail and RED in the same run, on `core::shape::aqm::workload`:
//! 60 % data / 40 % ACKs of 16 (and 1024) TCP flows, a standing queue of 50 packets (sojourn
//! times below target, the disciplines' common case). Run:
//! `cargo bench -p ackshape-core --bench aqm` (criterion, then a summary: ns per packet and the
//! ratio to drop-tail and to RED, best of 5). Instruction counts: `scripts/aqm_instr.sh`.

use ackshape_core::shape::aqm::workload::{build, Source, NAMES};
use criterion::{criterion_group, Criterion, Throughput};
use std::time::{Duration, Instant};

const BATCH: usize = 1024;
const STANDING: usize = 50;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("aqm");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for &name in NAMES {
        let mut src = Source::new(16);
        let mut q = build(name);
        src.prefill(q.as_mut(), STANDING);
        g.bench_function(name, |b| b.iter(|| src.run(q.as_mut(), BATCH)));
    }
    g.finish();
}

/// ns per packet, best of 5 runs of 200 batches, for 16 and 1024 flows.
fn summary() {
    for flows in [16u16, 1024] {
        println!("\nns per packet (enqueue + dequeue, 60 % data / 40 % ACKs, {flows} flows, {STANDING} queued):");
        let mut times = Vec::new();
        for &name in NAMES {
            let mut src = Source::new(flows);
            let mut q = build(name);
            src.prefill(q.as_mut(), STANDING);
            src.run(q.as_mut(), 20 * BATCH);
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let t = Instant::now();
                src.run(q.as_mut(), 200 * BATCH);
                best = best.min(t.elapsed().as_nanos() as f64 / (200 * BATCH) as f64);
            }
            times.push((name, best));
        }
        let (dt, red) = (times[0].1, times[1].1);
        for (name, t) in times {
            println!("  {name:<16} {t:>7.1} ns  ({:.2}x drop-tail, {:.2}x RED)", t / dt, t / red);
        }
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
