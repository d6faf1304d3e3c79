//! A small simulation for the congestion controllers' per-ACK cost (`crates/core/benches/cc.rs`,
//! `scripts/cc_instr.sh` via the ignored test in `tests/cc_perf.rs`): one bulk flow between two
//! `Connection`s (the scenario's defaults: SACK, timestamps, 4 MB receive buffer, delayed ACKs)
//! over a 100 Mbit/s bottleneck with a 100-packet drop-tail queue and 10 ms each way (BDP ≈ 172
//! packets), so every controller goes through slow start, losses and recovery. The reverse path
//! has no limit. The sender's handling of each ACK goes through [`sender_ack`], which is not
//! inlined, so callgrind can count it alone (`--toggle-collect='*sender_ack*'`).

use ackshape_core::tcp::{CcAlgo, Connection, TcpConfig};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// The controllers measured, by their scenario names (`[tcp] cc`); `reno` is the reference.
pub const CCS: &[&str] = &["reno", "sack", "cubic", "bbr"];

pub fn algo(name: &str) -> CcAlgo {
    match name {
        "reno" => CcAlgo::Reno,
        "sack" => CcAlgo::Sack,
        "cubic" => CcAlgo::Cubic,
        "bbr" => CcAlgo::Bbr,
        _ => panic!("unknown controller {name:?} (names: {CCS:?})"),
    }
}

const RATE_BPS: u64 = 100_000_000;
const QUEUE_PKTS: usize = 100;
const ONE_WAY: Dur = Dur::from_millis(10);

/// What one run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// Packets (ACKs) the sender handled.
    pub acks: u64,
    /// Data segments the sender sent (retransmissions included).
    pub data_segs: u64,
    pub retrans: u64,
    pub timeouts: u64,
    /// Bytes the sender saw acknowledged.
    pub bytes_acked: u64,
    /// Bottleneck drops.
    pub drops: u64,
}

/// The sender's handling of one ACK (kept out of line for callgrind's `--toggle-collect`).
#[inline(never)]
pub fn sender_ack(a: &mut Connection, now: Time, p: &Packet) {
    a.handle_packet(now, p);
}

/// The sender's next packet, if it may send one now (out of line, for callgrind: the send side of
/// the controller's work, such as BBR's per-packet rate-sample state and pacing).
#[inline(never)]
pub fn sender_send(a: &mut Connection, now: Time) -> Option<Packet> {
    a.poll_transmit(now)
}

/// Run the flow for `secs` seconds of simulated time.
pub fn run(cc: &str, secs: f64) -> Outcome {
    let cfg = TcpConfig { cc: algo(cc), ..TcpConfig::default() };
    let mut a =
        Connection::connect(cfg.clone(), "10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap(), 1, Time::ZERO);
    let mut b: Option<Connection> = None;
    a.write(u64::MAX / 4);
    // Bottleneck: packets waiting (with nothing but their order), the time the one in service
    // ends; then the propagation delay, a FIFO of (arrival, packet).
    let mut queue: VecDeque<Packet> = VecDeque::new();
    let mut busy_until = Time::ZERO;
    let mut ab: VecDeque<(Time, Packet)> = VecDeque::new();
    let mut ba: VecDeque<(Time, Packet)> = VecDeque::new();
    let end = Time::ZERO + Dur::from_secs_f64(secs);
    let mut now = Time::ZERO;
    let mut out = Outcome::default();
    while now < end {
        // The receiver: data that has crossed the path, then what it sends back.
        while ab.front().is_some_and(|x| x.0 <= now) {
            let (_, p) = ab.pop_front().unwrap();
            match b.as_mut() {
                Some(b) => b.handle_packet(now, &p),
                None => b = Connection::accept(cfg.clone(), &p, 7, now),
            }
        }
        if let Some(b) = b.as_mut() {
            if b.poll_timeout().is_some_and(|t| t <= now) {
                b.handle_timeout(now);
            }
            while let Some(p) = b.poll_transmit(now) {
                ba.push_back((now + ONE_WAY, p));
            }
            while b.poll_event().is_some() {}
            while b.read().is_some() {}
        }
        // The sender: ACKs that have arrived, its timers, then what it may send now.
        while ba.front().is_some_and(|x| x.0 <= now) {
            let (_, p) = ba.pop_front().unwrap();
            out.acks += 1;
            sender_ack(&mut a, now, &p);
        }
        if a.poll_timeout().is_some_and(|t| t <= now) {
            a.handle_timeout(now);
        }
        while a.poll_event().is_some() {}
        while let Some(p) = sender_send(&mut a, now) {
            if queue.len() >= QUEUE_PKTS {
                out.drops += 1;
            } else {
                queue.push_back(p);
            }
        }
        // The bottleneck: the next packet starts when the last one ended.
        while busy_until <= now {
            let Some(p) = queue.pop_front() else { break };
            busy_until = busy_until.max(now) + Dur::tx_time(p.ip_len(), RATE_BPS);
            ab.push_back((busy_until + ONE_WAY, p));
        }
        let mut next = end;
        for t in [
            ab.front().map(|x| x.0),
            ba.front().map(|x| x.0),
            (!queue.is_empty()).then_some(busy_until),
            a.poll_timeout(),
            b.as_ref().and_then(|b| b.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        {
            next = next.min(t);
        }
        now = next.max(now + Dur::from_nanos(1));
    }
    let s = a.stats();
    out.data_segs = s.data_segs_sent;
    out.retrans = s.retrans_segs;
    out.timeouts = s.timeouts;
    out.bytes_acked = s.bytes_acked;
    out
}
