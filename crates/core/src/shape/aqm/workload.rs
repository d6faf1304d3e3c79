//! A packet workload for the AQM disciplines' benchmark (`crates/core/benches/aqm.rs`), their
//! instruction counts (`scripts/aqm_instr.sh`) and allocation test: TCP packets of `flows` flows,
//! 60 % data segments (1448 bytes) and 40 % pure ACKs with advancing ACK numbers and timestamps,
//! one packet per microsecond, and the disciplines built as a benchmark runs them.

use crate::queue::{DropTail, Limit, QueueDisc};
use crate::rng::stream;
use crate::shape::qdisc_spec::QdiscSpec;
use crate::table::{self, val, Value};
use crate::time::{Dur, Time};
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use std::net::{IpAddr, Ipv4Addr};

/// The disciplines measured, by name: `drop-tail` and `red` are the references.
pub const NAMES: &[&str] = &["drop-tail", "red", "codel", "fq-codel", "pie", "cake", "cake-shaped", "cake-ack-filter"];

/// A discipline of [`NAMES`] as the benchmark runs it: buffers of 1000 packets; RED with its
/// thresholds around the standing queue (30 … 90 packets), so it runs its average and its
/// random test on every packet; CAKE unshaped (`triple-isolate`), shaped at 100 Gbit/s (above
/// the workload's rate, so it never holds a packet but runs its shaper), and with the
/// conservative ACK filter.
pub fn build(name: &str) -> Box<dyn QueueDisc + Send> {
    let spec = |pairs: &[(&str, Value)]| -> QdiscSpec {
        let t = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        table::read::<QdiscSpec, table::Error>(t).expect("valid qdisc")
    };
    let kind = |k: &str| ("kind", val(k));
    let q = match name {
        "drop-tail" => return Box::new(DropTail::new(Limit::Packets(1000))),
        "red" => spec(&[kind("red"), ("min_th", val(30)), ("max_th", val(90)), ("limit_pkts", val(1000))]),
        "codel" => spec(&[kind("codel")]),
        "fq-codel" => spec(&[kind("fq-codel")]),
        "pie" => spec(&[kind("pie")]),
        "cake" => spec(&[kind("cake")]),
        "cake-shaped" => spec(&[kind("cake"), ("rate", val("100Gbit/s"))]),
        "cake-ack-filter" => spec(&[kind("cake"), ("ack_filter", val("conservative"))]),
        _ => panic!("unknown workload discipline {name:?} (names: {NAMES:?})"),
    };
    q.build(10_000_000_000, stream(1, name, 0))
}

/// The packet source.
pub struct Source {
    mix: Vec<Packet>,
    i: usize,
    ack: Vec<u32>,
    now: Time,
}

impl Source {
    pub fn new(flows: u16) -> Source {
        let mut rng = ackshape_wire::testing::Rng::new(42);
        let mix = (0..4096)
            .map(|_| {
                let flow = rng.below(flows as usize) as u16;
                let is_ack = rng.below(100) < 40;
                Packet {
                    ip: IpHdr {
                        src: IpAddr::V4(Ipv4Addr::new(10, 0, (flow >> 8) as u8, 1 + (flow & 0xff) as u8)),
                        dst: IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1)),
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
            .collect();
        Source { mix, i: 0, ack: vec![0; flows as usize], now: Time::ZERO }
    }
    /// The time of the last packet handed out.
    pub fn now(&self) -> Time {
        self.now
    }
    /// The next packet, 1 µs after the last.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Packet {
        let mut p = self.mix[self.i & 4095].clone();
        self.i += 1;
        self.now += Dur::from_micros(1);
        if let L4::Tcp(t) = &mut p.l4 {
            let f = (t.sport - 40_000) as usize;
            self.ack[f] = self.ack[f].wrapping_add(2896);
            t.ack = SeqNum(self.ack[f]);
            t.opts.timestamps = Some((self.ack[f], self.ack[f]));
        }
        p
    }
    /// Queue `n` packets (a standing queue).
    pub fn prefill(&mut self, q: &mut dyn QueueDisc, n: usize) {
        for _ in 0..n {
            let p = self.next();
            let _ = q.enqueue(self.now, p);
        }
    }
    /// `n` rounds of one enqueue and one dequeue.
    #[inline]
    pub fn run(&mut self, q: &mut dyn QueueDisc, n: usize) {
        for _ in 0..n {
            let p = self.next();
            let now = self.now;
            std::hint::black_box(q.enqueue(now, p));
            std::hint::black_box(q.dequeue(now));
        }
    }
}
