//! Per-packet cost of each PostACK variant in a steady state: flows take turns; each turn one
//! ACK of the flow comes back and is held, the variant's clock releases held ACKs (on-off: the
//! class slot; zero-timer: the class dequeue; basic: the deadlines), and each released ACK makes
//! its sender put one data packet into the class. About 32 ACKs stand per flow. A plain per-flow `VecDeque`
//! push/pop of the same ACKs (the least a per-flow ACK queue costs) is the reference.
//! Run: `cargo bench -p ackshape-core --bench postack` (prints ns per data+ACK pair and the
//! bytes of state per flow at the end).

use ackshape_core::shape::ackmech::{AckMechanism, FlowKey};
use ackshape_core::shape::postack::{PostAck, PostAckConfig, Variant};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use criterion::{black_box, criterion_group, Criterion, Throughput};
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

const BATCH: usize = 1024;
const STANDING: u32 = 32;
const RATE: u64 = 100_000_000;
const PKT: u32 = 1500;
const MSS: u32 = 1448;

fn addr(f: u32, rcv: bool) -> IpAddr {
    if rcv {
        IpAddr::V4(Ipv4Addr::new(10, 1, (f >> 8) as u8, f as u8))
    } else {
        IpAddr::V4(Ipv4Addr::new(10, 0, (f >> 8) as u8, f as u8))
    }
}

fn key(f: u32) -> FlowKey {
    (addr(f, false), addr(f, true), 40_000, 80)
}

fn tcp(f: u32, back: bool, seq: u32, ack: u32, payload: u32) -> Packet {
    let (src, dst, sport, dport) =
        if back { (addr(f, true), addr(f, false), 80, 40_000) } else { (addr(f, false), addr(f, true), 40_000, 80) };
    Packet {
        ip: IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: 0 },
        l4: L4::Tcp(TcpHdr {
            sport,
            dport,
            seq: SeqNum(seq),
            ack: SeqNum(ack),
            flags: TcpFlags::ACK,
            window: 502,
            urgent: 0,
            opts: TcpOptions { timestamps: Some((seq, ack)), ..TcpOptions::default() },
        }),
        payload_len: payload,
        payload: None,
    }
}

/// Flows taking turns at one packet time each.
struct Driver {
    m: PostAck,
    flows: u32,
    turn: u32,
    now: Time,
    tick: Dur,
    seq: Vec<u32>,
    ack: Vec<u32>,
    out: Vec<Packet>,
    variant: Variant,
}

impl Driver {
    fn new(variant: Variant, flows: u32) -> Driver {
        let mut m = PostAck::new(PostAckConfig { variant, packet_bytes: PKT, ..PostAckConfig::default() });
        m.set_rate(Time::ZERO, RATE);
        let mut d = Driver {
            m,
            flows,
            turn: 0,
            now: Time(1),
            tick: Dur::tx_time(PKT as usize, RATE),
            seq: vec![1; flows as usize],
            ack: vec![1; flows as usize],
            out: Vec::with_capacity(64),
            variant,
        };
        // Open the flows: a timed segment and its ACK 20 ms later (basic's RTT sample), then a
        // standing window of held ACKs.
        for f in 0..flows {
            d.m.on_data(d.now, key(f), &tcp(f, false, 0, 0, 0));
            d.m.on_ack(d.now, key(f), tcp(f, true, 0, 1, 0), &mut d.out);
        }
        for f in 0..flows {
            let s = d.seq[f as usize];
            d.m.on_data(d.now, key(f), &tcp(f, false, s, 1, MSS));
            d.seq[f as usize] += MSS;
        }
        d.now += Dur::from_millis(20);
        for f in 0..flows {
            d.ack[f as usize] += MSS;
            let a = d.ack[f as usize];
            d.m.on_ack(d.now, key(f), tcp(f, true, 1, a, 0), &mut d.out);
            for _ in 0..STANDING + 10 {
                let s = d.seq[f as usize];
                d.m.on_data(d.now, key(f), &tcp(f, false, s, 1, MSS));
                d.seq[f as usize] += MSS;
            }
            for _ in 0..STANDING {
                d.ack[f as usize] += MSS;
                let a = d.ack[f as usize];
                d.m.on_ack(d.now, key(f), tcp(f, true, 1, a, 0), &mut d.out);
            }
        }
        d.out.clear();
        // Until the on-off counters have paid for the standing window (i.out ≤ 1).
        for _ in 0..(STANDING as usize + 16) * flows as usize {
            d.step();
        }
        d
    }

    /// One turn of flow f: one of its ACKs arrives and is held, the variant's clock releases,
    /// and every released ACK makes its sender send one segment (ACK-clocked senders).
    #[inline]
    fn step(&mut self) {
        let f = self.turn;
        self.turn = if self.turn + 1 == self.flows { 0 } else { self.turn + 1 };
        self.now += self.tick;
        let i = f as usize;
        self.ack[i] += MSS;
        let a = self.ack[i];
        self.m.on_ack(self.now, key(f), tcp(f, true, 1, a, 0), &mut self.out);
        match self.variant {
            Variant::ZeroTimer => self.m.on_class_dequeue(self.now, key(f), Some(0), &mut self.out),
            _ => {
                while self.m.poll_timeout().is_some_and(|t| t <= self.now) {
                    self.m.on_timeout(self.now, &mut self.out);
                }
            }
        }
        for k in 0..self.out.len() {
            let g = match self.out[k].ip.dst {
                IpAddr::V4(x) => {
                    let o = x.octets();
                    (o[2] as u32) << 8 | o[3] as u32
                }
                _ => unreachable!(),
            };
            let s = self.seq[g as usize];
            self.m.on_data(self.now, key(g), &tcp(g, false, s, 1, MSS));
            self.seq[g as usize] += MSS;
        }
        black_box(&self.out);
        self.out.clear();
    }

    fn batch(&mut self) {
        for _ in 0..BATCH {
            self.step();
        }
    }
}

/// The reference: per-flow VecDeques, one ACK in and one out per turn.
struct Reference {
    q: Vec<VecDeque<Packet>>,
    turn: usize,
    ack: u32,
}

impl Reference {
    fn new(flows: u32) -> Reference {
        let q = (0..flows).map(|f| (0..STANDING).map(|k| tcp(f, true, 1, k, 0)).collect()).collect();
        Reference { q, turn: 0, ack: 0 }
    }
    fn batch(&mut self) {
        for _ in 0..BATCH {
            let f = self.turn;
            self.turn = (self.turn + 1) % self.q.len();
            self.ack = self.ack.wrapping_add(MSS);
            self.q[f].push_back(tcp(f as u32, true, 1, self.ack, 0));
            black_box(self.q[f].pop_front());
        }
    }
}

const CASES: [(&str, Variant); 3] =
    [("basic", Variant::Basic), ("on-off", Variant::OnOff), ("zero-timer", Variant::ZeroTimer)];
const FLOWS: [u32; 2] = [16, 1024];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("postack");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for flows in FLOWS {
        let mut r = Reference::new(flows);
        g.bench_function(format!("reference-vecdeque/{flows}"), |b| b.iter(|| r.batch()));
        for (name, v) in CASES {
            let mut d = Driver::new(v, flows);
            g.bench_function(format!("{name}/{flows}"), |b| b.iter(|| d.batch()));
        }
    }
    g.finish();
}

/// A plain timing summary (ns per turn), best of 40 runs of 10 batches (short runs, so that on a
/// shared machine some run is not preempted).
fn summary() {
    let time = |f: &mut dyn FnMut()| {
        let mut best = f64::INFINITY;
        for _ in 0..40 {
            let t = Instant::now();
            for _ in 0..10 {
                f();
            }
            best = best.min(t.elapsed().as_nanos() as f64 / (10 * BATCH) as f64);
        }
        best
    };
    println!("\nns per turn (one ACK in and held; on average one ACK released and one data packet in):");
    for flows in FLOWS {
        let mut r = Reference::new(flows);
        let rt = time(&mut || r.batch());
        println!("  {:<26} {:>7.1} ns", format!("reference (VecDeque) /{flows}"), rt);
        for (name, v) in CASES {
            let mut d = Driver::new(v, flows);
            let held = d.m.acks_held();
            let t = time(&mut || d.batch());
            let released = d.m.stats().released;
            assert!(released > 0 && d.m.acks_held() <= held + flows as usize, "{name}: not a steady state");
            println!(
                "  {:<26} {:>7.1} ns  ({:.1}x reference; {} ACKs held)",
                format!("{name} /{flows}"),
                t,
                t / rt,
                d.m.acks_held()
            );
        }
    }
    let (per_flow, per_ack) = PostAck::state_bytes_per_flow();
    println!("state: {per_flow} B per flow + {per_ack} B per held ACK (+ the per-flow ACK queue's spare capacity)");
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
