//! The edge gateway under floods (`shape::gateway::Gateway`), measured against a reference run in
//! the same invocation:
//!
//! 1. **New-flow flood.** 256 established flows in class `bulk` (TCR) carry data and ACKs; then
//!    the same traffic with a flood of new 5-tuples (half SYNs, half data segments of flows
//!    picked up mid-stream) into class `other` (TCR too, so each new flow could reach a
//!    mechanism), one flood packet per established packet. Reported: ns per packet of each run,
//!    the ratio, and the longest single call into the box (what would block a live forwarding
//!    loop), for tables of 64 Ki flows.
//! 2. **Crafted keys.** Inserting and looking up flow keys chosen to collide in the hash table of
//!    an unkeyed hasher (FxHash, which the flow tables used before they were keyed) against as many
//!    random keys: with FxHash the crafted keys cost many times more; with the keyed hasher the
//!    flow tables use now (`ackshape_core::hash`), they cost the same as random ones.
//!
//! Run: `cargo bench -p ackshape-core --bench flood` (a plain timing summary; no criterion).

use ackshape_core::middlebox::{Dir, Emit, Middlebox};
use ackshape_core::shape::gateway::Gateway;
use ackshape_core::shape::policy::Policy;
use ackshape_core::time::Time;
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

/// A policy file's text read as the format crate reads it (a TOML table), validated by the core.
fn parse_policy(text: &str, file: &str) -> Result<Policy, ackshape_core::shape::policy::PolicyError> {
    Policy::read(text.parse::<toml::Value>().expect("TOML"), file)
}

const FLOWS: u32 = 256;

const POLICY: &str = r#"
default_class = "other"
[flows]
max_flows = 65536
[[class]]
name = "bulk"
rate = "10Gbit/s"
mechanism = { kind = "tcr" }
[[class]]
name = "other"
rate = "10Gbit/s"
queue = "1000pkt"
mechanism = { kind = "tcr" }
[[rule]]
class = "bulk"
proto = "tcp"
dport = 5001
"#;

fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: TcpFlags) -> L4 {
    L4::Tcp(TcpHdr {
        sport,
        dport,
        seq: SeqNum(seq),
        ack: SeqNum(ack),
        flags,
        window: 502,
        urgent: 0,
        opts: TcpOptions::default(),
    })
}

fn ip(src: IpAddr, dst: IpAddr) -> IpHdr {
    IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: 0 }
}

const WAN: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));

fn lan(f: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 1, (f >> 8) as u8, f as u8))
}

/// Established traffic: data of flow `f` (LAN → WAN, to port 5001) or the receiver's ACK.
struct Bulk {
    i: u32,
    seq: Vec<u32>,
}

impl Bulk {
    fn new() -> Bulk {
        Bulk { i: 0, seq: vec![1; FLOWS as usize] }
    }
    fn syn(f: u32) -> (Dir, Packet) {
        let p =
            Packet { ip: ip(lan(f), WAN), l4: tcp(40_000, 5001, 0, 0, TcpFlags::SYN), payload_len: 0, payload: None };
        (Dir::AToB, p)
    }
    fn synack(f: u32) -> (Dir, Packet) {
        let p = Packet {
            ip: ip(WAN, lan(f)),
            l4: tcp(5001, 40_000, 0, 1, TcpFlags::SYN | TcpFlags::ACK),
            payload_len: 0,
            payload: None,
        };
        (Dir::BToA, p)
    }
    fn next(&mut self) -> (Dir, Packet) {
        self.i = self.i.wrapping_add(1);
        let h = self.i.wrapping_mul(2_654_435_761);
        let f = (h >> 8) % FLOWS;
        let s = self.seq[f as usize];
        if (h >> 24) % 100 < 40 {
            // The receiver acknowledges what was sent.
            let p = Packet {
                ip: ip(WAN, lan(f)),
                l4: tcp(5001, 40_000, 1, s, TcpFlags::ACK),
                payload_len: 0,
                payload: None,
            };
            (Dir::BToA, p)
        } else {
            self.seq[f as usize] = s.wrapping_add(1448);
            let p = Packet {
                ip: ip(lan(f), WAN),
                l4: tcp(40_000, 5001, s, 1, TcpFlags::ACK | TcpFlags::PSH),
                payload_len: 1448,
                payload: None,
            };
            (Dir::AToB, p)
        }
    }
}

/// Flood packet `n`: a new 5-tuple into class `other`, a SYN (even n) or a data segment with ACK
/// set (odd n), as the live flood test sends them.
fn flood(n: u32) -> (Dir, Packet) {
    let src = IpAddr::V4(Ipv4Addr::new(10, 128 + ((n >> 22) & 63) as u8, (n >> 14) as u8, (n >> 6) as u8));
    let sport = 1024 + (n & 63) as u16 * 97 + (n >> 28) as u16;
    let dport = 6000 + (n % 1000) as u16;
    let (flags, len) = if n % 2 == 0 { (TcpFlags::SYN, 0) } else { (TcpFlags::ACK | TcpFlags::PSH, 32) };
    (Dir::AToB, Packet { ip: ip(src, WAN), l4: tcp(sport, dport, n, 1, flags), payload_len: len, payload: None })
}

struct Run {
    ns_per_pkt: f64,
    max_call_us: f64,
}

/// `n` established packets (and with `flood`, one flood packet after each), 1 µs apart in the
/// box's time, the box's timers served as they fall due.
fn run(n: u32, with_flood: bool) -> Run {
    let mut g = Gateway::new(parse_policy(POLICY, "bench.toml").unwrap(), 14, 1);
    let mut out = Emit::new();
    let mut now = Time(0);
    for f in 0..FLOWS {
        for (d, p) in [Bulk::syn(f), Bulk::synack(f)] {
            g.on_packet(now, d, p, &mut out);
        }
    }
    out.clear();
    let mut b = Bulk::new();
    let mut max_call = 0u128;
    let mut pkts = 0u64;
    let t0 = Instant::now();
    let mut step = |g: &mut Gateway, now: Time, d: Dir, p: Packet, out: &mut Emit| {
        let t = Instant::now();
        g.on_packet(now, d, p, out);
        let a = t.elapsed().as_nanos();
        let t = Instant::now();
        if g.poll_timeout().is_some_and(|t| t <= now) {
            g.on_timeout(now, out);
        }
        let b = t.elapsed().as_nanos();
        if std::env::var("FLOOD_TRACE").is_ok() && a.max(b) > 1_000_000 {
            eprintln!(
                "slow call at {:?}: on_packet {} µs, on_timeout {} µs, tracked {}",
                now,
                a / 1000,
                b / 1000,
                g.flows_tracked()
            );
        }
        max_call = max_call.max(a).max(b);
        out.clear();
    };
    for i in 0..n {
        now.0 += 1_000;
        let (d, p) = b.next();
        step(&mut g, now, d, p, &mut out);
        pkts += 1;
        if with_flood {
            let (d, p) = flood(i);
            step(&mut g, now, d, p, &mut out);
            pkts += 1;
        }
    }
    let el = t0.elapsed().as_nanos() as f64;
    Run { ns_per_pkt: el / pkts as f64, max_call_us: max_call as f64 / 1000.0 }
}

type FlowKey = (IpAddr, IpAddr, u16, u16);

/// `n` flow keys whose FxHash (as `FxHashMap<FlowKey, _>` hashes them) agrees in its low `bits`
/// bits: they all start their probe in the same group of a hashbrown table of up to 2^bits
/// buckets. Found by trying tuples in order; costs about n · 2^bits hashes.
fn crafted_fx_keys(n: usize, bits: u32) -> Vec<FlowKey> {
    use std::hash::BuildHasher;
    let fx = rustc_hash::FxBuildHasher;
    let mask = (1u64 << bits) - 1;
    let mut out = Vec::with_capacity(n);
    let mut target = None;
    let mut i: u64 = 0;
    while out.len() < n {
        let k: FlowKey = (IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | (i >> 16) as u32)), WAN, (i & 0xffff) as u16, 443);
        i += 1;
        let h = fx.hash_one(k) & mask;
        if *target.get_or_insert(h) == h {
            out.push(k);
        }
    }
    out
}

/// As many keys from a random stream.
fn random_keys(n: usize) -> Vec<FlowKey> {
    use rand::RngCore;
    let mut r = ackshape_core::rng::stream(1, "bench-keys", 0);
    (0..n).map(|_| (IpAddr::V4(Ipv4Addr::from(r.next_u32())), WAN, r.next_u32() as u16, r.next_u32() as u16)).collect()
}

/// ns per key to insert `keys` into an empty table built by `build`, then look each up once.
fn table_ns<S: std::hash::BuildHasher>(keys: &[FlowKey], build: impl Fn() -> S) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let mut m: std::collections::HashMap<FlowKey, u32, S> = std::collections::HashMap::with_hasher(build());
        for (i, k) in keys.iter().enumerate() {
            m.insert(*k, i as u32);
        }
        let mut s = 0u64;
        for k in keys {
            s += *m.get(k).unwrap() as u64;
        }
        std::hint::black_box(s);
        best = best.min(t.elapsed().as_nanos() as f64 / (2 * keys.len()) as f64);
    }
    best
}

fn crafted_keys_summary() {
    let n = 8192;
    let crafted = crafted_fx_keys(n, 14);
    let random = random_keys(n);
    println!("\n{n} flow keys crafted to share the low 14 bits of their FxHash vs {n} random keys: insert + lookup, ns per operation:");
    let fx = |k: &[FlowKey]| table_ns(k, || rustc_hash::FxBuildHasher);
    let key = ackshape_core::hash::HashKey::random();
    let keyed = |k: &[FlowKey]| table_ns(k, || ackshape_core::hash::Keyed::new(key));
    let (fr, fc) = (fx(&random), fx(&crafted));
    let (kr, kc) = (keyed(&random), keyed(&crafted));
    println!(
        "  {:<44} random {:>8.1}  crafted {:>10.1}  ({:.1}x)",
        "FxHash (unkeyed; the tables before)",
        fr,
        fc,
        fc / fr
    );
    println!(
        "  {:<44} random {:>8.1}  crafted {:>10.1}  ({:.2}x)",
        "SipHash-1-3, random key (the tables now)",
        kr,
        kc,
        kc / kr
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    crafted_keys_summary();
    let n = 400_000;
    println!(
        "\nnew-flow flood into a TCR class beside 256 established TCR flows ({n} established packets, 1 µs apart):"
    );
    let best =
        |flood: bool| (0..3).map(|_| run(n, flood)).min_by(|a, b| a.ns_per_pkt.total_cmp(&b.ns_per_pkt)).unwrap();
    let r = best(false);
    let f = best(true);
    println!(
        "  {:<40} {:>8.1} ns/packet  longest call {:>8.1} µs",
        "established traffic alone (reference)", r.ns_per_pkt, r.max_call_us
    );
    println!(
        "  {:<40} {:>8.1} ns/packet  longest call {:>8.1} µs  ({:.2}x reference)",
        "with one new flow per packet",
        f.ns_per_pkt,
        f.max_call_us,
        f.ns_per_pkt / r.ns_per_pkt
    );
}
