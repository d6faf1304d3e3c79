//! Per-packet cost of the edge gateway (`shape::gateway::Gateway::on_packet`): classification
//! (flow-table hit, or the rules for packets of untracked flows) plus the class enqueue, the
//! link-sharing choice and the dequeue, for 256 flows with class rates high enough that every
//! packet leaves within its own call. A plain `VecDeque` push/pop of the same packets is the
//! reference. Run: `cargo bench -p ackshape-core --bench gateway` (prints ns/packet at the end).

use ackshape_core::middlebox::{Dir, Emit, Middlebox};
use ackshape_core::shape::gateway::Gateway;
use ackshape_core::shape::policy::Policy;
use ackshape_core::time::Time;
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use criterion::{black_box, criterion_group, Criterion, Throughput};
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

/// A policy file's text read as the format crate reads it (a TOML table), validated by the core.
fn parse_policy(text: &str, file: &str) -> Result<Policy, ackshape_core::shape::policy::PolicyError> {
    Policy::read(text.parse::<toml::Value>().expect("TOML"), file)
}

const FLOWS: u32 = 256;
const BATCH: usize = 1024;

/// 16 rules (the last 8 by destination port), a default class.
fn rules() -> String {
    let mut r = String::new();
    for i in 0..8 {
        r += &format!("[[rule]]\nclass = \"l{}\"\nsrc = \"10.{}.0.0/16\"\ndport = 9\n", i % 4, 100 + i);
    }
    for i in 0..8 {
        r += &format!("[[rule]]\nclass = \"l{}\"\ndport = {}\n", i % 4, 6000 + i);
    }
    r
}

/// Four leaves under two parents; `leaf` is appended to every leaf class.
fn policy(leaf: &str) -> String {
    let mut p = String::from(
        "default_class = \"l3\"\n[[class]]\nname = \"p0\"\nrate = \"50Gbit/s\"\nceil = \"100Gbit/s\"\n[[class]]\nname = \"p1\"\nrate = \"50Gbit/s\"\nceil = \"100Gbit/s\"\n",
    );
    for i in 0..4 {
        p += &format!(
            "[[class]]\nname = \"l{i}\"\nparent = \"p{}\"\nrate = \"20Gbit/s\"\nceil = \"100Gbit/s\"\npriority = {i}\n{leaf}\n",
            i / 2
        );
    }
    p + &rules()
}

fn variants() -> Vec<(&'static str, String)> {
    vec![
        ("fifo, no mechanism", policy("")),
        ("red", policy("qdisc = { kind = \"red\", limit_pkts = 1000, max_th = 100, min_th = 50 }")),
        ("pfq-drr", policy("qdisc = { kind = \"pfq-drr\" }")),
        (
            "pfq-drr + postack zero-timer",
            policy("qdisc = { kind = \"pfq-drr\" }\nmechanism = { kind = \"postack\", variant = \"zero-timer\" }"),
        ),
        ("fifo + postack on-off", policy("mechanism = { kind = \"postack\" }")),
        ("fifo + tcr", policy("mechanism = { kind = \"tcr\" }")),
        ("per-host, 256 classes", per_host(24)),
        ("per-host, 1024 classes", per_host(26)),
        ("per-host, 4096 classes", per_host(28)),
        ("per-host, 256 classes + tcr", per_host(24).replace("[[rule]]", "mechanism = { kind = \"tcr\" }\n[[rule]]")),
        ("per-host, 4096 classes + tcr", per_host(28).replace("[[rule]]", "mechanism = { kind = \"tcr\" }\n[[rule]]")),
    ]
}

/// A per-host template over the flows' LAN addresses (10.100-107.0-31.1): 8 × /19 in blocks of
/// /`block` (/24: one class per flow's host, 256; /26 and /28: 1024 and 4096 classes, of which 256
/// carry traffic), each 1 Gbit/s with a 100 Gbit/s ceiling under one parent.
fn per_host(block: u8) -> String {
    let nets: Vec<String> = (0..8).map(|i| format!("\"10.{}.0.0/19\"", 100 + i)).collect();
    format!(
        "[[class]]\nname = \"subs\"\nrate = \"5000Gbit/s\"\n[[class]]\nname = \"h\"\nparent = \"subs\"\nper_host = [{}]\nhost_prefix = {block}\nrate = \"1Gbit/s\"\nceil = \"100Gbit/s\"\n[[rule]]\nclass = \"h\"\n",
        nets.join(", ")
    )
}

/// 60 % data LAN → WAN, 40 % pure ACKs WAN → LAN, over `FLOWS` TCP flows spread over the rules.
struct Source {
    i: u32,
    seq: Vec<u32>,
    now: Time,
}

fn flow_pkt(f: u32, ack: bool, seq: u32) -> (Dir, Packet) {
    let lan = IpAddr::V4(Ipv4Addr::new(10, 100 + (f % 8) as u8, (f / 8) as u8, 1));
    let wan = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    let dport = if f.is_multiple_of(2) { 9 } else { 6000 + (f % 16) as u16 };
    let sport = 40_000 + f as u16;
    let tcp = |sport, dport, flags| TcpHdr {
        sport,
        dport,
        seq: SeqNum(seq),
        ack: SeqNum(seq),
        flags,
        window: 502,
        urgent: 0,
        opts: TcpOptions { timestamps: Some((seq, seq)), ..TcpOptions::default() },
    };
    let ip = |src, dst| IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: 0 };
    if ack {
        let p =
            Packet { ip: ip(wan, lan), l4: L4::Tcp(tcp(dport, sport, TcpFlags::ACK)), payload_len: 0, payload: None };
        (Dir::BToA, p)
    } else {
        let p = Packet {
            ip: ip(lan, wan),
            l4: L4::Tcp(tcp(sport, dport, TcpFlags::ACK | TcpFlags::PSH)),
            payload_len: 1448,
            payload: None,
        };
        (Dir::AToB, p)
    }
}

impl Source {
    fn new() -> Source {
        Source { i: 0, seq: vec![1; FLOWS as usize], now: Time(0) }
    }
    #[inline]
    fn next(&mut self) -> (Dir, Packet) {
        self.i = self.i.wrapping_add(1);
        self.now.0 += 1_000; // 1 µs per packet
        let h = self.i.wrapping_mul(2_654_435_761);
        let f = (h >> 8) % FLOWS;
        let ack = (h >> 24) % 100 < 40;
        let s = &mut self.seq[f as usize];
        *s = s.wrapping_add(1448);
        flow_pkt(f, ack, *s)
    }
}

fn gateway(text: &str) -> (Gateway, Source, Emit) {
    let mut g = Gateway::new(parse_policy(text, "bench.toml").unwrap(), 0, 1);
    let mut src = Source::new();
    let mut out = Emit::new();
    // Open every flow, then warm up.
    for f in 0..FLOWS {
        let (_, mut p) = flow_pkt(f, false, 0);
        p.tcp_mut().unwrap().flags = TcpFlags::SYN;
        p.payload_len = 0;
        g.on_packet(src.now, Dir::AToB, p, &mut out);
    }
    for _ in 0..20 * BATCH {
        let (d, p) = src.next();
        g.on_packet(src.now, d, p, &mut out);
        drain(&mut g, src.now, &mut out);
    }
    (g, src, out)
}

#[inline]
fn drain(g: &mut Gateway, now: Time, out: &mut Emit) {
    if g.poll_timeout().is_some_and(|t| t <= now) {
        g.on_timeout(now, out);
    }
    out.clear();
}

fn run_batch(g: &mut Gateway, src: &mut Source, out: &mut Emit) {
    for _ in 0..BATCH {
        let (d, p) = src.next();
        g.on_packet(src.now, d, p, out);
        drain(g, src.now, out);
    }
}

fn run_reference(q: &mut VecDeque<Packet>, src: &mut Source) {
    for _ in 0..BATCH {
        let (_, p) = src.next();
        q.push_back(p);
        black_box(q.pop_front());
    }
}

/// Classification alone: the rules for a packet that misses the flow table.
fn run_classify(p: &Policy, src: &mut Source) {
    for _ in 0..BATCH {
        let (d, pkt) = src.next();
        black_box(p.classify(d, &pkt));
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("gateway");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    {
        let mut src = Source::new();
        let mut q: VecDeque<Packet> = VecDeque::new();
        g.bench_function("reference-vecdeque", |b| b.iter(|| run_reference(&mut q, &mut src)));
    }
    {
        let p = parse_policy(&policy(""), "bench.toml").unwrap();
        let mut src = Source::new();
        g.bench_function("classify (16 rules)", |b| b.iter(|| run_classify(&p, &mut src)));
    }
    for (name, text) in variants() {
        let (mut gw, mut src, mut out) = gateway(&text);
        g.bench_function(name, |b| b.iter(|| run_batch(&mut gw, &mut src, &mut out)));
    }
    g.finish();
}

/// A plain timing summary (ns per packet), best of 5 runs of 200 batches.
fn summary() {
    println!("\nns per packet (on_packet: classify + class enqueue + link sharing + dequeue; 60 % data / 40 % ACKs, {FLOWS} flows, 4 leaves, 16 rules):");
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
    let mut rq: VecDeque<Packet> = VecDeque::new();
    let r = time(&mut || run_reference(&mut rq, &mut src));
    println!("  {:<32} {:>7.1} ns", "reference (VecDeque)", r);
    let p = parse_policy(&policy(""), "bench.toml").unwrap();
    let mut src = Source::new();
    let t = time(&mut || run_classify(&p, &mut src));
    println!("  {:<32} {:>7.1} ns  ({:.1}x reference)", "classify alone (16 rules)", t, t / r);
    for (name, text) in variants() {
        let (mut gw, mut src, mut out) = gateway(&text);
        let t = time(&mut || run_batch(&mut gw, &mut src, &mut out));
        println!("  {:<32} {:>7.1} ns  ({:.1}x reference)", name, t, t / r);
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
