//! Queue disciplines for the two output queues of a gateway on an **asymmetric access link**
//! (paper 002, Park et al., "Preventing TCP performance interference on asymmetric links using
//! ACKs-first variable-size queuing", Comput. Commun. 2010), and the baselines it is compared
//! with. Each is a [`QueueDisc`] and an [`AsymQueue`] (which adds [`AsymQueue::stats`]).
//!
//! | discipline | type | spec `kind` | what it does |
//! |---|---|---|---|
//! | FIFO drop-tail | [`Fifo`] (wraps [`DropTail`](crate::queue::DropTail)) | `fifo` | one FIFO, the problem case of §2.1 |
//! | ACKs-first | [`AcksFirst`] | `acks-first` | strict priority for pure TCP ACKs over everything else |
//! | classic ACK filter | [`AckFilterClassic`] | `ack-filter-classic` | a newer cumulative ACK of a flow removes its queued ACKs with a smaller number (dupACKs stay) |
//! | CAKE-safe ACK filter | [`AckFilterCake`] | `ack-filter-cake` | drops only provably redundant ACKs (Linux CAKE's rules) |
//! | ACQ | [`Acq`] | `acq` | ACK and data classes with adaptive DRR weights (Louati et al.) |
//! | AFVQ | [`Afvq`] | `afvq` | ACKs first, ACK queue sized by Eq. 16, round robin data/non-TCP |
//!
//! Configuration: [`AsymDiscSpec`] (serde, `kind = "..."`), built with [`AsymDiscSpec::build`].
//!
//! **Classes.** [`classify`]: a *TCP ACK* is a pure ACK ([`Packet::is_pure_ack`]: TCP, ACK
//! set, no payload, no SYN/FIN/RST); every other TCP segment (data, SYN, FIN, RST) is *TCP
//! data*; everything else is *non-TCP*. No discipline here keeps per-connection state except
//! the two ACK filters (flow tables keyed by [`FlowKey`]) and ACQ (last ACK number per flow, to
//! estimate the opposite direction's goodput).
//!
//! **Drops.** [`QueueDisc::enqueue`] returns at most one dropped packet: the arriving one.
//! Disciplines that drop *queued* packets (the ACK filters, AFVQ's random drop) count them in
//! [`AsymStats`] only; the caller sees them as packets that never come out.
//!
//! **What these are not.** No AQM (RED/CoDel), no rate shaping (they do not hold packets: a
//! packet is always eligible, `next_ready` is `None`), no per-flow fairness, no ACK
//! rewriting or pacing (see TCR/PostACK elsewhere). CAKE's maintainers declined ACK
//! *prioritisation* (sch_cake#131); ACKs-first and AFVQ do prioritise ACKs, as paper 002 does.

mod acks_first;
mod acq;
mod afvq;
mod fifo;
mod filter_cake;
mod filter_classic;
mod slots;
mod spec;
mod stats;

pub use acks_first::AcksFirst;
pub use acq::{Acq, AcqConfig};
pub use afvq::{eq16_ack_queue_size, Afvq, AfvqConfig, SizeModifier};
pub use fifo::Fifo;
pub(crate) use filter_cake::find_redundant as cake_find_redundant;
pub use filter_cake::{AckFilterCake, CakeMode};
pub use filter_classic::AckFilterClassic;
pub use spec::{AsymDiscSpec, SizeModifierSpec, SpecError};
pub use stats::{classify, AsymStats, ClassCounts, DropCounts, DropReason, PktClass};

use crate::queue::QueueDisc;
use ackshape_wire::{Packet, L4};
use std::net::IpAddr;

/// A TCP connection in one direction: addresses and ports as seen on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
}

impl FlowKey {
    /// The key of a TCP packet, `None` for other protocols.
    #[inline]
    pub fn of(p: &Packet) -> Option<FlowKey> {
        match &p.l4 {
            L4::Tcp(t) => Some(FlowKey { src: p.ip.src, dst: p.ip.dst, sport: t.sport, dport: t.dport }),
            _ => None,
        }
    }
}

/// Flow tables: keys come from the wire, so they are hashed with a key the driver sets
/// (`crate::hash`; [`crate::queue::QueueDisc::set_hash_key`]).
pub(crate) type FlowMap<V> = crate::hash::KeyedMap<FlowKey, V>;

/// Flow tables are purged of idle entries when they grow past this many flows.
pub(crate) const FLOW_TABLE_SOFT_MAX: usize = 4096;

/// A queue discipline of this module: a [`QueueDisc`] with statistics.
pub trait AsymQueue: QueueDisc {
    /// Counters and current queue lengths (see [`AsymStats`]).
    fn stats(&self) -> &AsymStats;
    /// Short name, the spec's `kind` (e.g. `"afvq"`).
    fn kind(&self) -> &'static str;
}

/// Smallest DRR quantum accepted (bytes).
pub const MIN_QUANTUM: u32 = 64;

/// Deficit round robin between two classes, by bytes. `quantum[i]` bytes are credited to class
/// `i` each time its turn comes; a class with an empty queue loses its deficit. Work-conserving.
#[derive(Clone, Debug)]
pub(crate) struct Drr2 {
    pub(crate) quantum: [u32; 2],
    deficit: [u64; 2],
    turn: usize,
    fresh: bool,
}

impl Drr2 {
    pub(crate) fn new(quantum: [u32; 2]) -> Drr2 {
        Drr2 {
            quantum: [quantum[0].max(MIN_QUANTUM), quantum[1].max(MIN_QUANTUM)],
            deficit: [0; 2],
            turn: 0,
            fresh: true,
        }
    }
    /// Which class to serve, given the byte size of each class's head packet.
    #[inline]
    pub(crate) fn pick(&mut self, heads: [Option<usize>; 2]) -> Option<usize> {
        match heads {
            [None, None] => {
                self.deficit = [0; 2];
                return None;
            }
            [Some(_), None] | [None, Some(_)] => {
                // Only one class backlogged: serve it; the idle one keeps no credit.
                let i = if heads[0].is_some() { 0 } else { 1 };
                self.deficit[i ^ 1] = 0;
                if self.turn != i {
                    self.turn = i;
                    self.fresh = true;
                }
            }
            _ => {}
        }
        // Bounded: quanta are >= MIN_QUANTUM bytes and packets < 2^16 bytes, so a few hundred
        // passes at most; a class alone is topped up in one step.
        loop {
            let i = self.turn;
            let Some(sz) = heads[i] else {
                self.deficit[i] = 0;
                self.turn ^= 1;
                self.fresh = true;
                continue;
            };
            let sz = sz as u64;
            if self.fresh {
                self.deficit[i] += self.quantum[i] as u64;
                self.fresh = false;
            }
            if self.deficit[i] >= sz {
                self.deficit[i] -= sz;
                return Some(i);
            }
            if heads[i ^ 1].is_none() {
                // Alone: top up in one step instead of spinning.
                let q = self.quantum[i] as u64;
                let need = sz - self.deficit[i];
                self.deficit[i] += need.div_ceil(q) * q;
                continue;
            }
            self.turn ^= 1;
            self.fresh = true;
        }
    }
}

/// The largest window TCP can advertise (65,535 · 2^14 bytes, RFC 7323 §2.3): two ACKs of one
/// connection can be at most this far apart, so a newer ACK further ahead than that cannot be the
/// receiver's (a blind spoof far ahead, RFC 5961 §5) and must not make real ACKs redundant.
pub(crate) const MAX_ACK_ADVANCE: u32 = 65_535 << 14;

/// `newer` is at most [`MAX_ACK_ADVANCE`] after `older` (sequence space).
#[inline]
pub(crate) fn plausible_advance(older: ackshape_wire::SeqNum, newer: ackshape_wire::SeqNum) -> bool {
    newer.0.wrapping_sub(older.0) <= MAX_ACK_ADVANCE
}
