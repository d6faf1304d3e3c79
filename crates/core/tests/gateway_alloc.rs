//! The gateway's memory: no heap allocation per packet in steady state, and the bytes of state
//! each tracked flow costs (flow table entry, per-flow queue, mechanism state), measured with a
//! counting global allocator. Prints the per-flow bytes (`docs/benchmarks.md`).

use ackshape_core::middlebox::{Dir, Emit, Middlebox};
use ackshape_core::shape::gateway::Gateway;
use ackshape_core::shape::policy::Policy;
use ackshape_core::time::Time;
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, L4};
use std::net::{IpAddr, Ipv4Addr};

mod alloc_counter;
use alloc_counter::{allocs, live_bytes};

/// A policy file's text read as the format crate reads it (a TOML table), validated by the core.
fn parse_policy(text: &str, file: &str) -> Result<Policy, ackshape_core::shape::policy::PolicyError> {
    Policy::read(text.parse::<toml::Value>().expect("TOML"), file)
}

fn pkt(f: u32, ack: bool, seq: u32) -> (Dir, Packet) {
    let lan = IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + f));
    let wan = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    let sport = 1024 + (f % 60000) as u16;
    let ip = |src, dst| IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: 0 };
    let tcp = |sport, dport, flags| TcpHdr {
        sport,
        dport,
        seq: SeqNum(seq),
        ack: SeqNum(seq),
        flags,
        window: 502,
        ..Default::default()
    };
    if ack {
        (
            Dir::BToA,
            Packet { ip: ip(wan, lan), l4: L4::Tcp(tcp(80, sport, TcpFlags::ACK)), payload_len: 0, payload: None },
        )
    } else {
        (
            Dir::AToB,
            Packet { ip: ip(lan, wan), l4: L4::Tcp(tcp(sport, 80, TcpFlags::ACK)), payload_len: 1448, payload: None },
        )
    }
}

const LEAVES: &[(&str, &str)] = &[
    ("fifo, no mechanism", ""),
    ("pfq-drr", "qdisc = { kind = \"pfq-drr\" }"),
    (
        "pfq-drr + postack zero-timer",
        "qdisc = { kind = \"pfq-drr\" }\nmechanism = { kind = \"postack\", variant = \"zero-timer\" }",
    ),
    ("fifo + postack on-off", "mechanism = { kind = \"postack\" }"),
    ("fifo + tcr", "mechanism = { kind = \"tcr\" }"),
];

/// Run the gateway's timers for up to a second after `t`, until no ACK is held.
fn release_held(g: &mut Gateway, t: Time, out: &mut Emit) {
    let end = t + ackshape_core::time::Dur::from_secs(1);
    while let Some(x) = g.poll_timeout() {
        if x > end || g.acks_held() == 0 {
            break;
        }
        g.on_timeout(x, out);
        out.clear();
    }
}

fn gateway(leaf: &str) -> Gateway {
    let p = format!(
        "[flows]\nmax_flows = 1000000\n[[class]]\nname = \"c\"\nrate = \"10Gbit/s\"\n{leaf}\n[[rule]]\nclass = \"c\"\n"
    );
    Gateway::new(parse_policy(&p, "alloc.toml").unwrap(), 0, 1)
}

/// Drive `n` packets of `flows` flows (60 % data, 40 % ACKs), 1 µs apart, from `t`.
fn drive(g: &mut Gateway, out: &mut Emit, flows: u32, n: u32, t: &mut Time) {
    for i in 0..n {
        let h = i.wrapping_mul(2_654_435_761);
        let (d, p) = pkt((h >> 8) % flows, (h >> 24) % 100 < 40, i.wrapping_mul(1448));
        t.0 += 1_000;
        g.on_packet(*t, d, p, out);
        if g.poll_timeout().is_some_and(|x| x <= *t) {
            g.on_timeout(*t, out);
        }
        out.clear();
    }
}

#[test]
fn no_allocation_per_packet_in_steady_state() {
    for (name, leaf) in LEAVES {
        let mut g = gateway(leaf);
        let mut out = Emit::with_capacity(64);
        let mut t = Time::ZERO;
        drive(&mut g, &mut out, 64, 200_000, &mut t);
        let before = allocs();
        drive(&mut g, &mut out, 64, 50_000, &mut t);
        let n = allocs() - before;
        eprintln!("{name}: {n} allocations in 50000 packets");
        // Periodic work (flow sweeps, borrow recomputation) may allocate; packets must not.
        assert!(n < 50, "{name}: {n} allocations in 50000 packets");
    }
}

#[test]
fn bytes_of_state_per_flow() {
    const N: u32 = 5_000;
    for (name, leaf) in LEAVES {
        let mut g = gateway(leaf);
        let mut out = Emit::with_capacity(64);
        let base = live_bytes();
        let mut t = Time::ZERO;
        // Each flow: one data packet in and out, one ACK back; all stay tracked.
        for f in 0..N {
            for ack in [false, true] {
                let (d, p) = pkt(f, ack, 1);
                t.0 += 1_000;
                g.on_packet(t, d, p, &mut out);
            }
            out.clear();
        }
        // Let the mechanisms release what they hold (held ACKs are traffic, not state).
        release_held(&mut g, t, &mut out);
        assert_eq!(g.acks_held(), 0, "{name}: ACKs still held");
        assert_eq!(g.flows_tracked(), N as usize);
        let per_flow = (live_bytes() - base) as f64 / N as f64;
        eprintln!("{name}: {per_flow:.0} bytes of heap per tracked flow ({N} flows)");
        // Bounded per flow: the flow table entry (and the per-flow queue slots) alone, or with
        // the mechanism's per-flow record and its emptied ACK queue.
        let bound = if leaf.contains("mechanism") { 4096.0 } else { 256.0 };
        assert!(per_flow < bound, "{name}: {per_flow} B per flow");
        drop(g);
    }
}

/// What the gateway keeps of a SYN-opened connection's handshake while the other direction has a
/// mechanism class (for a download its receiver opened; `flows.opening_syns_kept`): uploads keep
/// theirs as long as they are tracked. Measured as the difference between connections that
/// opened with a handshake and connections picked up mid-stream, with a TCR class both ways.
#[test]
fn bytes_of_a_kept_handshake() {
    const N: u32 = 5_000;
    let policy = "[flows]\nmax_flows = 1000000\n[[class]]\nname = \"c\"\nrate = \"10Gbit/s\"\n\
                  mechanism = { kind = \"tcr\" }\n[[rule]]\nclass = \"c\"\ndirection = \"both\"\n";
    let mut per_flow = Vec::new();
    for handshake in [false, true] {
        let mut g = Gateway::new(parse_policy(policy, "alloc.toml").unwrap(), 0, 1);
        let mut out = Emit::with_capacity(64);
        let base = live_bytes();
        let mut t = Time::ZERO;
        for f in 0..N {
            if handshake {
                for (ack, flags) in [(false, TcpFlags::SYN), (true, TcpFlags::SYN | TcpFlags::ACK)] {
                    let (d, mut p) = pkt(f, ack, 0);
                    p.payload_len = 0;
                    p.tcp_mut().unwrap().flags = flags;
                    t.0 += 1_000;
                    g.on_packet(t, d, p, &mut out);
                }
            }
            for ack in [false, true] {
                let (d, p) = pkt(f, ack, 1);
                t.0 += 1_000;
                g.on_packet(t, d, p, &mut out);
            }
            out.clear();
        }
        release_held(&mut g, t, &mut out);
        let kept = serde_json::to_value(g.stats()).unwrap()["flows"]["opening_syns_kept"].as_u64().unwrap();
        assert_eq!(kept, if handshake { N as u64 } else { 0 });
        per_flow.push((live_bytes() - base) as f64 / N as f64);
        drop(g);
    }
    let extra = per_flow[1] - per_flow[0];
    eprintln!(
        "tcr both ways: {:.0} B per flow picked up mid-stream, {:.0} B with a kept handshake (+{extra:.0} B)",
        per_flow[0], per_flow[1]
    );
    assert!(extra > 0.0 && extra < 256.0, "{extra} B per kept handshake");
}
