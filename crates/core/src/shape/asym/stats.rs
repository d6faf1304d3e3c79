//! The classes the asymmetric-link disciplines sort packets into ([`PktClass`], [`classify`]) and
//! their counters ([`AsymStats`], which any [`QueueDisc`](crate::queue::QueueDisc) may report).
//! A leaf: the queue trait names [`AsymStats`] without depending on the disciplines.

use ackshape_wire::{Packet, L4};

/// Traffic class as the disciplines here see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PktClass {
    /// Pure TCP ACK ([`Packet::is_pure_ack`]).
    TcpAck,
    /// Any other TCP segment (payload, SYN, FIN, RST).
    TcpData,
    /// UDP and every other IP protocol.
    NonTcp,
}

/// The class of a packet (see [`crate::shape::asym`]).
#[inline]
pub fn classify(p: &Packet) -> PktClass {
    match &p.l4 {
        L4::Tcp(_) if p.is_pure_ack() => PktClass::TcpAck,
        L4::Tcp(_) => PktClass::TcpData,
        _ => PktClass::NonTcp,
    }
}

/// Packet counts per class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClassCounts {
    pub ack: u64,
    pub data: u64,
    pub non_tcp: u64,
}

impl ClassCounts {
    #[inline]
    fn add(&mut self, c: PktClass) {
        match c {
            PktClass::TcpAck => self.ack += 1,
            PktClass::TcpData => self.data += 1,
            PktClass::NonTcp => self.non_tcp += 1,
        }
    }
    /// Sum over the classes.
    pub fn total(&self) -> u64 {
        self.ack + self.data + self.non_tcp
    }
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Drop-tail: the arriving packet found its FIFO full.
    QueueFull,
    /// An ACK filter removed an ACK that a newer one made redundant (queued or arriving).
    AckFiltered,
    /// AFVQ: the ACK queue was over its size `s`; a random ACK (queued or arriving) went.
    AckRandomDrop,
}

/// Drop counts by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DropCounts {
    pub queue_full: u64,
    pub ack_filtered: u64,
    pub ack_random_drop: u64,
}

impl DropCounts {
    pub fn total(&self) -> u64 {
        self.queue_full + self.ack_filtered + self.ack_random_drop
    }
}

/// Counters and gauges of one discipline, read with
/// [`AsymQueue::stats`](crate::shape::asym::AsymQueue::stats).
///
/// Invariant: `arrived − dequeued − dropped` equals the packets queued, per class
/// (`ack_q_len`, `data_q_len`, `non_tcp_q_len`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct AsymStats {
    /// Packets offered to `enqueue`, by class.
    pub arrived: ClassCounts,
    /// Packets handed out by `dequeue`, by class.
    pub dequeued: ClassCounts,
    /// Packets dropped (arriving or already queued), by class.
    pub dropped: ClassCounts,
    /// Packets dropped, by reason.
    pub drops: DropCounts,
    /// Pure ACKs queued now (in the ACK queue, or in the single FIFO).
    pub ack_q_len: usize,
    /// TCP data segments queued now.
    pub data_q_len: usize,
    /// Non-TCP packets queued now.
    pub non_tcp_q_len: usize,
    /// Current capacity of the ACK queue in packets: AFVQ's `s` (Eq. 16), the ACK limit of
    /// ACKs-first and ACQ, the shared limit of single-FIFO disciplines.
    pub ack_q_limit: usize,
    /// ACQ: current share of the ACK class in the DRR (0..1); 0 for the others.
    pub ack_weight: f64,
}

impl AsymStats {
    #[inline]
    pub(crate) fn arrive(&mut self, c: PktClass) {
        self.arrived.add(c);
    }
    #[inline]
    fn gauge(&mut self, c: PktClass) -> &mut usize {
        match c {
            PktClass::TcpAck => &mut self.ack_q_len,
            PktClass::TcpData => &mut self.data_q_len,
            PktClass::NonTcp => &mut self.non_tcp_q_len,
        }
    }
    #[inline]
    pub(crate) fn queued(&mut self, c: PktClass) {
        *self.gauge(c) += 1;
    }
    #[inline]
    pub(crate) fn dequeue(&mut self, c: PktClass) {
        self.dequeued.add(c);
        let g = self.gauge(c);
        *g = g.saturating_sub(1);
    }
    /// A drop; `was_queued` if the packet had been counted as queued.
    #[inline]
    pub(crate) fn drop(&mut self, c: PktClass, why: DropReason, was_queued: bool) {
        self.dropped.add(c);
        match why {
            DropReason::QueueFull => self.drops.queue_full += 1,
            DropReason::AckFiltered => self.drops.ack_filtered += 1,
            DropReason::AckRandomDrop => self.drops.ack_random_drop += 1,
        }
        if was_queued {
            let g = self.gauge(c);
            *g = g.saturating_sub(1);
        }
    }
}
