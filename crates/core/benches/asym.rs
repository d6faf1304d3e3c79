//! Per-packet cost (one enqueue + one dequeue) of each asymmetric-link discipline with a
//! realistic mix: 60 % TCP data, 40 % pure ACKs (SACK-less, with timestamps) over 16 flows,
//! a standing queue of ~50 packets. A plain `VecDeque` push/pop of the same packets is the
//! reference. Run: `cargo bench -p ackshape-core --bench asym` (prints ns/packet at the end).

use ackshape_core::queue::QueueDisc;
use ackshape_core::rng::stream;
use ackshape_core::shape::asym::{AsymDiscSpec, CakeMode, SizeModifierSpec};
use ackshape_core::time::Time;
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use criterion::{black_box, criterion_group, Criterion, Throughput};
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

const FLOWS: u16 = 16;
const BATCH: usize = 1024;
const STANDING: usize = 50;

fn mix() -> Vec<Packet> {
    let mut rng = ackshape_wire::testing::Rng::new(42);
    (0..4096)
        .map(|_| {
            let flow = rng.below(FLOWS as usize) as u16;
            let is_ack = rng.below(100) < 40;
            Packet {
                ip: IpHdr {
                    src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1 + flow as u8)),
                    dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
                    ttl: 64,
                    dscp: 0,
                    ecn: Ecn::NotEct,
                    id: 0,
                },
                l4: L4::Tcp(TcpHdr {
                    sport: 40_000 + flow,
                    dport: 5201,
                    seq: SeqNum(1),
                    ack: SeqNum(1),
                    flags: if is_ack { TcpFlags::ACK } else { TcpFlags::ACK | TcpFlags::PSH },
                    window: 502,
                    urgent: 0,
                    opts: TcpOptions { timestamps: Some((1, 1)), ..TcpOptions::default() },
                }),
                payload_len: if is_ack { 0 } else { 1448 },
                payload: None,
            }
        })
        .collect()
}

fn specs() -> Vec<(&'static str, AsymDiscSpec)> {
    vec![
        ("fifo", AsymDiscSpec::Fifo { limit_pkts: 1000 }),
        ("acks-first", AsymDiscSpec::AcksFirst { ack_limit_pkts: 1000, data_limit_pkts: 1000 }),
        ("ack-filter-classic", AsymDiscSpec::AckFilterClassic { limit_pkts: 1000, keep_position: false }),
        (
            "ack-filter-cake/conservative",
            AsymDiscSpec::AckFilterCake { limit_pkts: 1000, mode: CakeMode::Conservative },
        ),
        ("ack-filter-cake/aggressive", AsymDiscSpec::AckFilterCake { limit_pkts: 1000, mode: CakeMode::Aggressive }),
        (
            "acq",
            AsymDiscSpec::Acq {
                rate_bps: 1_000_000,
                reverse_rate_bps: 20_000_000,
                ack_limit_pkts: 1000,
                data_limit_pkts: 1000,
                period_ms: 200,
                step: 0.05,
                initial_ack_weight: 0.5,
                round_bytes: 3000,
            },
        ),
        (
            "afvq/continuous",
            AsymDiscSpec::Afvq {
                s_max: 5,
                n_thr: 36,
                data_limit_pkts: 1000,
                non_tcp_limit_pkts: 1000,
                modifier: SizeModifierSpec::Continuous,
                period_ms: 1000,
                quantum_bytes: 1500,
            },
        ),
        (
            "afvq/sampled",
            AsymDiscSpec::Afvq {
                s_max: 5,
                n_thr: 36,
                data_limit_pkts: 1000,
                non_tcp_limit_pkts: 1000,
                modifier: SizeModifierSpec::Sampled,
                period_ms: 1000,
                quantum_bytes: 1500,
            },
        ),
    ]
}

/// Packet source: cycles the mix, giving each flow increasing ACK numbers and timestamps.
struct Source {
    mix: Vec<Packet>,
    i: usize,
    ack: [u32; FLOWS as usize],
    now: Time,
}

impl Source {
    fn new() -> Source {
        Source { mix: mix(), i: 0, ack: [0; FLOWS as usize], now: Time(0) }
    }
    #[inline]
    fn next(&mut self) -> Packet {
        let mut p = self.mix[self.i & 4095].clone();
        self.i += 1;
        self.now.0 += 1_000; // 1 µs per packet
        if let L4::Tcp(t) = &mut p.l4 {
            let f = (t.sport - 40_000) as usize;
            self.ack[f] = self.ack[f].wrapping_add(2896);
            t.ack = SeqNum(self.ack[f]);
            t.opts.timestamps = Some((self.ack[f], self.ack[f]));
        }
        p
    }
}

fn run_batch(q: &mut dyn QueueDisc, src: &mut Source) {
    for _ in 0..BATCH {
        let p = src.next();
        let now = src.now;
        black_box(q.enqueue(now, p));
        black_box(q.dequeue(now));
    }
}

fn run_reference(q: &mut VecDeque<Packet>, src: &mut Source) {
    for _ in 0..BATCH {
        let p = src.next();
        q.push_back(p);
        black_box(q.pop_front());
    }
}

fn prefill(q: &mut dyn QueueDisc, src: &mut Source) {
    for _ in 0..STANDING {
        let p = src.next();
        q.enqueue(src.now, p);
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("asym");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    {
        let mut src = Source::new();
        let mut q: VecDeque<Packet> = (0..STANDING).map(|_| src.next()).collect();
        g.bench_function("reference-vecdeque", |b| b.iter(|| run_reference(&mut q, &mut src)));
    }
    for (name, spec) in specs() {
        let mut src = Source::new();
        let mut q = spec.build(stream(1, name, 0));
        prefill(q.as_mut(), &mut src);
        g.bench_function(name, |b| b.iter(|| run_batch(q.as_mut(), &mut src)));
    }
    g.finish();
}

/// A plain timing summary (ns per enqueue+dequeue), best of 5 runs of 200 batches.
fn summary() {
    println!("\nns per packet (enqueue + dequeue, 60 % data / 40 % ACKs, 16 flows, ~{STANDING} queued):");
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
    let mut src = Source::new();
    let mut rq: VecDeque<Packet> = (0..STANDING).map(|_| src.next()).collect();
    let r = time(&mut || run_reference(&mut rq, &mut src));
    println!("  {:<30} {:>7.1} ns", "reference (VecDeque)", r);
    for (name, spec) in specs() {
        let mut src = Source::new();
        let mut q = spec.build(stream(1, name, 0));
        prefill(q.as_mut(), &mut src);
        let t = time(&mut || run_batch(q.as_mut(), &mut src));
        println!("  {:<30} {:>7.1} ns  ({:.1}x reference)", name, t, t / r);
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
