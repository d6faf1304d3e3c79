//! Per-ACK cost of VPS ACK translation (paper 003 Sec. 4.6) against the number of flows, and the
//! memory of one packet substitution record.
//!
//! Steady state of a group of n actual and n virtual flows, each actual flow with `WINDOW`
//! segments in flight: the actual flows take turns; each turn one in-order ACK of the flow's
//! oldest segment is translated and the flow sends one new segment, which carries the next
//! virtual packet of the virtual flow chosen by Eq. 2 (weights 1..n), so a virtual flow's packets
//! are spread over all actual flows as in a real group. `reorder` swaps the ACKs of each pair of
//! segments (the later one arrives first, SACKing its segment: a SACK hole that marks the earlier
//! PSR lost, then a cumulative ACK that covers both), the thesis's Fig. 15–17 case.
//!
//! Run: `cargo bench -p ackshape-core --bench vps` (prints ns per actual ACK, the mean PSR scan
//! iterations and virtual ACKs per actual ACK, and the PSR size at the end).

use ackshape_core::rng;
use ackshape_core::tcp::vps::{Distributor, Translator, VirtualAck, PSR_BYTES};
use criterion::{black_box, criterion_group, Criterion, Throughput};
use std::time::Duration;

const WINDOW: u64 = 32;
/// Actual ACKs per measured iteration.
const BATCH: u64 = 1024;

struct Group {
    t: Translator,
    d: Distributor,
    r: rng::Rng,
    /// Per actual flow: first unacknowledged segment, next segment to send.
    una: Vec<u64>,
    nxt: Vec<u64>,
    /// Per virtual flow: next virtual segment.
    vnext: Vec<u64>,
    all: Vec<usize>,
    turn: usize,
    reorder: bool,
    out: Vec<VirtualAck>,
    acks: u64,
}

impl Group {
    fn new(n: usize, reorder: bool) -> Group {
        let w: Vec<f64> = (1..=n).map(|i| i as f64).collect();
        let mut g = Group {
            t: Translator::new(n, n, true),
            d: Distributor::new(&w).unwrap(),
            r: rng::stream(1, "bench-vps", 0),
            una: vec![0; n],
            nxt: vec![0; n],
            vnext: vec![0; n],
            all: (0..n).collect(),
            turn: 0,
            reorder,
            out: Vec::new(),
            acks: 0,
        };
        for _ in 0..WINDOW {
            for a in 0..n {
                g.send(a);
            }
        }
        g
    }

    fn send(&mut self, a: usize) {
        let v = self.d.select(&self.all, &mut self.r).unwrap();
        self.d.assign(v);
        self.t.substitute(a, self.nxt[a], 1, v, self.vnext[v]);
        self.vnext[v] += 1;
        self.nxt[a] += 1;
    }

    /// One turn: translate the actual flow's next ACK(s) and refill its window.
    fn step(&mut self) -> usize {
        let a = self.turn;
        self.turn = (self.turn + 1) % self.una.len();
        let u = self.una[a];
        let mut nv = 0;
        if self.reorder {
            // ACK of segment u + 1 first: cumulative u, SACK [u + 1, u + 2); then ACK of u.
            self.out.clear();
            self.t.on_actual_ack(a, u, &[(u + 1, u + 2)], Some(u + 2), &mut self.out);
            nv += self.out.len();
            self.out.clear();
            self.t.on_actual_ack(a, u + 2, &[], None, &mut self.out);
            nv += self.out.len();
            self.una[a] = u + 2;
            self.acks += 2;
            self.send(a);
            self.send(a);
        } else {
            self.out.clear();
            self.t.on_actual_ack(a, u + 1, &[], None, &mut self.out);
            nv += self.out.len();
            self.una[a] = u + 1;
            self.acks += 1;
            self.send(a);
        }
        nv
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("vps-translate");
    g.throughput(Throughput::Elements(BATCH));
    let mut summary = Vec::new();
    for reorder in [false, true] {
        for n in [1usize, 2, 3, 5, 10, 20, 50] {
            let mut grp = Group::new(n, reorder);
            let name = if reorder { "reorder" } else { "in-order" };
            g.bench_function(format!("{name}/n={n}"), |b| {
                b.iter(|| {
                    let mut v = 0;
                    let start = grp.acks;
                    while grp.acks - start < BATCH {
                        v += grp.step();
                    }
                    black_box(v)
                })
            });
            // Counters of a fresh group over a fixed number of ACKs (criterion's iteration count
            // varies).
            let mut m = Group::new(n, reorder);
            let mut vacks = 0;
            while m.acks < 100_000 {
                vacks += m.step();
            }
            let s = m.t.stats();
            summary.push(format!(
                "{name:8} n = {n:2}: {:.2} scan iterations and {:.3} virtual ACKs per actual ACK, {} live PSRs ({} bytes)",
                s.scan_iterations as f64 / m.acks as f64,
                vacks as f64 / m.acks as f64,
                m.t.live(),
                m.t.live() as usize * PSR_BYTES
            ));
        }
    }
    g.finish();
    println!("PSR size: {PSR_BYTES} bytes (the thesis: 18); window {WINDOW} segments per actual flow");
    for l in summary {
        println!("{l}");
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    targets = bench
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
