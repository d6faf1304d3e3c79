//! Per-packet cost of the third-party tap's decision (`Tap::on_packet`): a mirrored mix of 50 %
//! data segments and 50 % pure ACKs (timestamps) over N flows, for the measuring-only rule, the
//! triple-ACK rule at f = 6 (1 in 6 ACKs cloned 3×) and zero-window on every ACK, and with
//! 16 or 10 000 tracked flows. A clone of the packet (what any driver hands over) is the
//! reference. Run: `cargo bench -p ackshape-core --bench tap` (prints ns/packet at the end).

use ackshape_core::middlebox::{Dir, Emit, Middlebox};
use ackshape_core::shape::tap::{Tap, TapSpec};
use ackshape_core::time::Time;
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use criterion::{black_box, criterion_group, Criterion, Throughput};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

const BATCH: usize = 1024;

fn pkt(flow: u32, ack: bool, n: u32) -> Packet {
    let a = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + flow));
    let b = IpAddr::V4(Ipv4Addr::new(10, 200, 0, 1));
    let (src, dst, sport, dport) = if ack { (b, a, 5201, 40_000) } else { (a, b, 40_000, 5201) };
    Packet {
        ip: IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: n as u16 },
        l4: L4::Tcp(TcpHdr {
            sport,
            dport,
            seq: SeqNum(if ack { 1 } else { n.wrapping_mul(1448) }),
            ack: SeqNum(if ack { n.wrapping_mul(1448) } else { 1 }),
            flags: TcpFlags::ACK,
            window: 502,
            urgent: 0,
            opts: TcpOptions { timestamps: Some((n, n)), ..TcpOptions::default() },
        }),
        payload_len: if ack { 0 } else { 1448 },
        payload: None,
    }
}

struct Source {
    flows: u32,
    i: u32,
    now: Time,
}

impl Source {
    fn next(&mut self) -> Packet {
        self.i += 1;
        self.now.0 += 1_000;
        let k = self.i / 2;
        pkt(k % self.flows, self.i % 2 == 1, k / self.flows + 1)
    }
}

fn run_batch(tap: &mut Tap, src: &mut Source, out: &mut Emit) {
    for _ in 0..BATCH {
        let p = src.next();
        tap.on_packet(src.now, Dir::AToB, p, out);
        black_box(out.len());
        out.clear();
    }
}

fn run_reference(src: &mut Source) {
    for _ in 0..BATCH {
        let p = src.next();
        black_box(p.clone());
    }
}

fn cases() -> Vec<(String, &'static str, u32)> {
    let mut v = Vec::new();
    for flows in [16, 10_000] {
        v.push((format!("measure/{flows}"), "technique = \"none\"", flows));
        v.push((format!("triple-ack-f6/{flows}"), "technique = \"triple-ack\"\nevery = 6", flows));
        v.push((format!("zero-window/{flows}"), "technique = \"zero-window\"", flows));
    }
    v
}

fn setup(spec: &str, flows: u32) -> (Tap, Source) {
    let mut tap = Tap::new(toml::from_str::<TapSpec>(&format!("[[rule]]\n{spec}")).unwrap());
    let mut src = Source { flows, i: 0, now: Time(0) };
    let mut out = Emit::new();
    for _ in 0..(2 * flows as usize).max(BATCH) {
        tap.on_packet(src.now, Dir::AToB, src.next(), &mut out);
        out.clear();
    }
    (tap, src)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("tap");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    {
        let mut src = Source { flows: 16, i: 0, now: Time(0) };
        g.bench_function("reference-clone", |b| b.iter(|| run_reference(&mut src)));
    }
    for (name, spec, flows) in cases() {
        let (mut tap, mut src) = setup(spec, flows);
        let mut out = Emit::new();
        g.bench_function(&name, |b| b.iter(|| run_batch(&mut tap, &mut src, &mut out)));
    }
    g.finish();
}

fn summary() {
    println!("\nns per mirrored packet (50 % data / 50 % pure ACKs):");
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
    let mut src = Source { flows: 16, i: 0, now: Time(0) };
    let r = time(&mut || run_reference(&mut src));
    println!("  {:<30} {:>7.1} ns", "reference (packet clone)", r);
    for (name, spec, flows) in cases() {
        let (mut tap, mut src) = setup(spec, flows);
        let mut out = Emit::new();
        let t = time(&mut || run_batch(&mut tap, &mut src, &mut out));
        println!("  {:<30} {:>7.1} ns  ({:.1}x reference)", name, t, t / r);
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
