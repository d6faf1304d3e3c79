//! Queue disciplines: the seam where shaping mechanisms plug into a link's output.
//!
//! A [`QueueDisc`] takes packets in and hands them out when the link is free. Disciplines
//! that hold packets until a time (token buckets, ACK pacing) report it via `next_ready`.
//! The simulator and the live gateway drive the same trait.

use crate::time::Time;
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// Outcome of an enqueue.
#[derive(Debug)]
pub enum Enqueue {
    Queued,
    /// The packet was dropped (returned so the caller can count or trace it).
    Dropped(Packet),
}

/// A queue discipline on one output.
pub trait QueueDisc {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue;
    /// Next packet to transmit now, if any is eligible.
    fn dequeue(&mut self, now: Time) -> Option<Packet>;
    /// If packets are queued but none is eligible now: when one will be.
    fn next_ready(&self, _now: Time) -> Option<Time> {
        None
    }
    fn len_pkts(&self) -> usize;
    fn len_bytes(&self) -> usize;
    /// True if a packet offered to this (empty) discipline while the link is idle would be
    /// dequeued at once, unchanged: the driver may then skip enqueue/dequeue. Default false.
    fn idle_bypass(&self) -> bool {
        false
    }
    /// Per-class counters of the asymmetric-link disciplines (`shape::asym`); `None` for others.
    fn asym_stats(&self) -> Option<&crate::shape::asym::AsymStats> {
        None
    }
    /// Named counters of the discipline (e.g. RED's marks and drops) for reports; empty by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Key the discipline's flow tables (`crate::hash`): called by the driver before the first
    /// packet. Default: nothing to key.
    fn set_hash_key(&mut self, _key: crate::hash::HashKey) {}
}

/// Limit of a drop-tail FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(usize),
    Bytes(usize),
}

impl From<crate::units::Size> for Limit {
    /// A size as a file gives it (`"100pkt"`, `"30000B"`).
    fn from(s: crate::units::Size) -> Limit {
        match s {
            crate::units::Size::Packets(p) => Limit::Packets(p as usize),
            crate::units::Size::Bytes(b) => Limit::Bytes(b as usize),
        }
    }
}

/// Drop-tail FIFO, limited in packets or bytes (IP length).
#[derive(Debug)]
pub struct DropTail {
    q: VecDeque<Packet>,
    limit: Limit,
    bytes: usize,
}

impl DropTail {
    pub fn new(limit: Limit) -> DropTail {
        DropTail { q: VecDeque::new(), limit, bytes: 0 }
    }
}

impl QueueDisc for DropTail {
    #[inline]
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Enqueue {
        let len = pkt.ip_len();
        let full = match self.limit {
            Limit::Packets(n) => self.q.len() >= n,
            Limit::Bytes(b) => self.bytes + len > b,
        };
        if full {
            return Enqueue::Dropped(pkt);
        }
        self.bytes += len;
        self.q.push_back(pkt);
        Enqueue::Queued
    }
    #[inline]
    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.ip_len();
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
    #[inline]
    fn idle_bypass(&self) -> bool {
        self.q.is_empty()
    }
}
