//! Delay-based active queue management and flow queuing, as [`QueueDisc`](crate::queue::QueueDisc)s:
//! today's baselines for the papers' mechanisms.
//!
//! | discipline | type | spec `kind` | reference |
//! |---|---|---|---|
//! | CoDel | [`Codel`] | `codel` | RFC 8289 (Nichols, Jacobson, McGregor, Iyengar, 2018); Linux `include/net/codel_impl.h` where the RFC is silent |
//! | FQ-CoDel | [`FqCodel`] | `fq-codel` | RFC 8290 (Høiland-Jørgensen, McKenney, Täht, Gettys, Dumazet, 2018); Linux `net/sched/sch_fq_codel.c` |
//! | PIE | [`Pie`] | `pie` | RFC 8033 (Pan, Natarajan, Baker, White, 2017); Linux `net/sched/sch_pie.c` |
//! | CAKE-like shaper | [`Cake`] | `cake` | Høiland-Jørgensen, Täht, Morton, "Piece of CAKE", IEEE LANMAN 2018; Linux `net/sched/sch_cake.c` |
//!
//! Each module says which rules it takes from where, and where it departs from the reference.
//! The code is written from the RFCs' pseudocode and the behaviour the Linux functions named in
//! comments describe, not copied from them.
//!
//! **Lengths.** Byte quantities that the references count in frame bytes (FQ-CoDel's and CAKE's
//! quantum, CoDel's "less than one MTU queued" test, the fattest-flow choice, the memory limits)
//! count the Ethernet frame ([`Packet::frame_len`], 14 + IP length), as Linux's `qdisc_pkt_len`
//! does at an Ethernet egress; `len_bytes` reports IP bytes, as every discipline does.
//!
//! **Time.** Packets are timestamped at enqueue with the `now` the driver passes; the simulator's
//! clock is exact, so the control laws run on exact times (no 1 µs `codel_time_t`, no jiffies).
//! PIE's periodic probability update, a kernel timer in Linux, runs lazily: at each enqueue or
//! dequeue every update that fell due since the last one is run first, which gives the same
//! state, because nothing it reads changes between events.
//!
//! **Determinism.** Flow hashing is SipHash-1-3 under the key the driver gives the discipline
//! (`QueueDisc::set_hash_key`, see `crate::hash`): derived from the scenario seed in the
//! simulator, random in the live gateway. Probabilistic drops (PIE, COBALT's BLUE) draw from the
//! random stream the driver passes in.

mod cake;
mod codel;
mod fq_codel;
mod pie;
pub mod workload;

pub use cake::{AckFilterMode, Cake, CakeConfig, FlowMode};
pub use codel::{Codel, CodelConfig, CodelParams, CodelStats, CodelVars};
pub use fq_codel::{FqCodel, FqCodelConfig};
pub use pie::{Pie, PieConfig, PieEstimator};

use crate::hash::{HashKey, Keyed};
use crate::rng::Rng;
use crate::time::{Dur, Time};
use ackshape_wire::{Ecn, Packet, L4};
use rand::Rng as _;
use std::hash::{BuildHasher, Hash, Hasher};
use std::net::IpAddr;

/// The largest Ethernet frame without a VLAN tag (1500-byte MTU + 14-byte header): Linux's
/// `psched_mtu()` of an Ethernet device, used as CoDel's MTU and as the default quantum.
pub const MTU_FRAME: u32 = 1514;

/// A queued packet with its enqueue time and frame length.
#[derive(Debug)]
pub(crate) struct Timed {
    pub(crate) t: Time,
    /// Frame length in bytes ([`Packet::frame_len`]).
    pub(crate) len: u32,
    pub(crate) pkt: Packet,
}

impl Timed {
    #[inline]
    pub(crate) fn new(t: Time, pkt: Packet) -> Timed {
        Timed { t, len: pkt.frame_len() as u32, pkt }
    }
    /// IP length (what `len_bytes` counts).
    #[inline]
    pub(crate) fn ip_len(&self) -> usize {
        self.len as usize - 14
    }
}

/// Set CE on an ECN-capable packet (Linux `INET_ECN_set_ce`): true if the packet now carries
/// CE (it was ECT(0), ECT(1) or CE already), false for a Not-ECT packet, which must be dropped
/// instead.
#[inline]
pub(crate) fn set_ce(p: &mut Packet) -> bool {
    match p.ip.ecn {
        Ecn::NotEct => false,
        Ecn::Ce => true,
        Ecn::Ect0 | Ecn::Ect1 => {
            p.ip.ecn = Ecn::Ce;
            true
        }
    }
}

/// CoDel's control law, `t + interval / sqrt(count)` (RFC 8289 §5.4 `control_law`), on exact
/// square roots (Linux approximates 1/sqrt(count) by Newton steps); `count` 0 is taken as 1.
#[inline]
pub(crate) fn control_law(t: Time, interval: Dur, count: u32) -> Time {
    let c = count.max(1) as f64;
    t + Dur((interval.0 as f64 / c.sqrt()) as u64)
}

/// A keyed flow hash: the 5-tuple (or, for the per-host hashes, one address) hashed with
/// SipHash-1-3 under a [`HashKey`], as Linux perturbs its flow hash with SipHash under a random
/// key (`skb_get_hash_perturb`, used by `fq_codel_hash` and `cake_hash`): without the key,
/// nobody can choose tuples that share a queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlowHasher {
    keyed: Keyed,
}

impl FlowHasher {
    /// A hasher keyed from one draw of `rng` (the driver normally rekeys it with
    /// [`FlowHasher::keyed`] through `QueueDisc::set_hash_key` before the first packet).
    pub(crate) fn new(rng: &mut Rng) -> FlowHasher {
        FlowHasher::keyed(HashKey::from_seed(rng.gen()))
    }
    pub(crate) fn keyed(key: HashKey) -> FlowHasher {
        FlowHasher { keyed: Keyed::new(key) }
    }
    /// The hash of a packet's flow: addresses, protocol and ports (0 for protocols without).
    #[inline]
    pub(crate) fn flow(&self, p: &Packet) -> u32 {
        let (sport, dport, proto) = match &p.l4 {
            L4::Tcp(t) => (t.sport, t.dport, 6u8),
            L4::Udp(u) => (u.sport, u.dport, 17),
            L4::Other { proto } => (0, 0, *proto),
        };
        let mut h = self.keyed.build_hasher();
        p.ip.src.hash(&mut h);
        p.ip.dst.hash(&mut h);
        (sport, dport, proto).hash(&mut h);
        h.finish() as u32
    }
    /// The hash of one host address (CAKE's per-host hashes).
    #[inline]
    pub(crate) fn host(&self, a: IpAddr, dst: bool) -> u32 {
        let mut h = self.keyed.build_hasher();
        dst.hash(&mut h);
        a.hash(&mut h);
        h.finish() as u32
    }
}

/// `hash` scaled to `[0, n)` by its high bits (Linux `reciprocal_scale`).
#[inline]
pub(crate) fn reduce(hash: u32, n: u32) -> u32 {
    ((hash as u64 * n as u64) >> 32) as u32
}

/// Durations as files write them, for the configs' `to_table`.
pub(crate) fn dur_str(d: Dur) -> String {
    format!("{}ns", d.0)
}

#[cfg(test)]
pub(crate) mod testpkt {
    //! Packets for the tests of this module.
    use ackshape_wire::{Ecn, IpHdr, Packet, TcpHdr, UdpHdr, L4};
    use std::net::{IpAddr, Ipv4Addr};

    /// A TCP data packet from host `src` (10.0.0.src) port `sport` to 10.0.1.`dst`, with
    /// `payload` bytes (frame length = payload + 54 without options).
    pub(crate) fn tcp(src: u8, sport: u16, dst: u8, payload: u32, ecn: Ecn) -> Packet {
        Packet {
            ip: IpHdr {
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, src)),
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, dst)),
                ttl: 64,
                dscp: 0,
                ecn,
                id: 0,
            },
            l4: L4::Tcp(TcpHdr { sport, dport: 80, ..Default::default() }),
            payload_len: payload,
            payload: None,
        }
    }
    /// A UDP packet of one flow per `flow` (source port), `payload` bytes.
    pub(crate) fn udp(flow: u16, payload: u32) -> Packet {
        Packet {
            ip: IpHdr {
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
                ttl: 64,
                dscp: 0,
                ecn: Ecn::NotEct,
                id: 0,
            },
            l4: L4::Udp(UdpHdr { sport: flow, dport: 9 }),
            payload_len: payload,
            payload: None,
        }
    }
    /// The source port (flow id) of a test packet.
    pub(crate) fn port(p: &Packet) -> u16 {
        match &p.l4 {
            L4::Tcp(t) => t.sport,
            L4::Udp(u) => u.sport,
            _ => 0,
        }
    }
}
