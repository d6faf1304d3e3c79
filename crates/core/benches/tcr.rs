//! Cost of TCP Rate Control per data packet (`on_data` + `on_class_dequeue`) and per receiver
//! ACK (`on_ack` + the timer work it causes: two paced ACKs out per delayed ACK in), in steady
//! state at the class rate, with 16 and 4096 flows; a packet clone + push is the reference.
//! Run: `cargo bench -p ackshape-core --bench tcr` (prints ns per operation and bytes of state
//! per flow at the end).

use ackshape_core::shape::tcr::workload::Workload;
use ackshape_core::shape::tcr::{Allocation, Pacing, Tcr, TcrConfig};
use criterion::{black_box, criterion_group, Criterion, Throughput};
use std::time::{Duration, Instant};

const BATCH: usize = 1024;
const RATE: u64 = 100_000_000;

/// The workload's ACKs follow its data at once (RTT ≈ 0); the sampling interval is set to
/// what the automatic rule gives on a WAN: max(RTT 40 ms, n·S/B), one allocation pass per
/// interval (O(n log n)).
fn configs(flows: u32) -> Vec<(&'static str, TcrConfig)> {
    let auto_ms = (flows as f64 * 1500.0 * 8.0 / RATE as f64 * 1e3).max(40.0);
    let base = TcrConfig { sample_interval_ms: auto_ms, ..TcrConfig::default() };
    vec![
        ("per-flow", base.clone()),
        // (The ACK-only runs send no data: keep the flows counted in n.)
        (
            "class-tick",
            TcrConfig { pacing: Pacing::ClassTick, allocation: Allocation::Equal, idle_timeout_ms: 1e12, ..base },
        ),
    ]
}

fn workload(cfg: TcrConfig, flows: u32) -> Workload {
    let mut w = Workload::new(cfg, flows, RATE);
    for _ in 0..4 * flows.max(1024) {
        w.cycle();
    }
    w
}

fn reference(v: &mut Vec<ackshape_wire::Packet>, p: &ackshape_wire::Packet) {
    for _ in 0..BATCH {
        v.push(black_box(p.clone()));
        v.clear();
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("tcr");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    {
        let p = ackshape_wire::testing::sample_tcp(false, 0, &mut ackshape_wire::testing::Rng::new(1));
        let mut v = Vec::with_capacity(4);
        g.bench_function("reference-clone-push", |b| b.iter(|| reference(&mut v, &p)));
    }
    for flows in [16u32, 4096] {
        for (name, cfg) in configs(flows) {
            let mut w = workload(cfg.clone(), flows);
            w.settle();
            g.bench_function(format!("data/{name}/{flows}"), |b| {
                b.iter(|| {
                    for _ in 0..BATCH {
                        w.data()
                    }
                })
            });
            let mut w = workload(cfg, flows);
            g.bench_function(format!("ack/{name}/{flows}"), |b| {
                b.iter(|| {
                    for _ in 0..BATCH {
                        w.ack_alone()
                    }
                })
            });
        }
    }
    g.finish();
}

/// Best of 5 runs of 200 batches, ns per operation.
fn summary() {
    let time = |f: &mut dyn FnMut()| {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..200 {
                f();
            }
            best = best.min(t.elapsed().as_nanos() as f64 / (200 * BATCH) as f64);
        }
        best
    };
    let p = ackshape_wire::testing::sample_tcp(false, 0, &mut ackshape_wire::testing::Rng::new(1));
    let mut v = Vec::with_capacity(4);
    let r = time(&mut || reference(&mut v, &p));
    println!("\nns per operation (steady state at the class rate, 100 Mbit/s; best of 5):");
    println!("  {:<34} {:>7.1} ns", "reference (packet clone + push)", r);
    for flows in [16u32, 4096] {
        for (name, cfg) in configs(flows) {
            let mut w = workload(cfg.clone(), flows);
            w.settle();
            let d = time(&mut || {
                for _ in 0..BATCH {
                    w.data()
                }
            });
            let mut w = workload(cfg, flows);
            let a = time(&mut || {
                for _ in 0..BATCH {
                    w.ack_alone()
                }
            });
            println!(
                "  {:<34} {:>7.1} ns  ({:.1}x reference)",
                format!("data packet, {name}, {flows} flows"),
                d,
                d / r
            );
            println!(
                "  {:<34} {:>7.1} ns  ({:.1}x reference; 2 paced ACKs out)",
                format!("receiver ACK, {name}, {flows} flows"),
                a,
                a / r
            );
        }
    }
    println!(
        "state per flow: {} B (flow record with its template ACK, slot, table entry)",
        Tcr::state_bytes_per_flow()
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
