//! ACKs-first scheduling (Balakrishnan et al. 1997 [8]; Park & Hong 2007 [18]): pure TCP
//! ACKs get strict priority over every other packet.
//!
//! Two FIFOs with **separate** packet limits: `ack_limit` for pure ACKs, `data_limit` for all
//! other packets (TCP data and non-TCP together, in arrival order). Both are drop-tail. There
//! is no ACK thinning: on a very slow uplink the ACK queue can take the whole link and starve
//! the upload (the weakness paper 002 §1.1 points out), which is what this baseline is for.

use super::{classify, AsymQueue, AsymStats, DropReason, PktClass};
use crate::queue::{Enqueue, QueueDisc};
use crate::time::Time;
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// Strict priority for pure ACKs; see the module doc.
#[derive(Debug)]
pub struct AcksFirst {
    acks: VecDeque<Packet>,
    rest: VecDeque<Packet>,
    ack_limit: usize,
    data_limit: usize,
    bytes: usize,
    stats: AsymStats,
}

impl AcksFirst {
    /// `ack_limit`: pure-ACK FIFO size (packets); `data_limit`: FIFO size for everything else.
    pub fn new(ack_limit: usize, data_limit: usize) -> AcksFirst {
        AcksFirst {
            acks: VecDeque::with_capacity(ack_limit.min(4096)),
            rest: VecDeque::with_capacity(data_limit.min(4096)),
            ack_limit,
            data_limit,
            bytes: 0,
            stats: AsymStats { ack_q_limit: ack_limit, ..AsymStats::default() },
        }
    }
}

impl QueueDisc for AcksFirst {
    fn asym_stats(&self) -> Option<&AsymStats> {
        Some(AsymQueue::stats(self))
    }
    #[inline]
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Enqueue {
        let c = classify(&pkt);
        self.stats.arrive(c);
        let (q, lim) =
            if c == PktClass::TcpAck { (&mut self.acks, self.ack_limit) } else { (&mut self.rest, self.data_limit) };
        if q.len() >= lim {
            self.stats.drop(c, DropReason::QueueFull, false);
            return Enqueue::Dropped(pkt);
        }
        self.bytes += pkt.ip_len();
        q.push_back(pkt);
        self.stats.queued(c);
        Enqueue::Queued
    }
    #[inline]
    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let p = match self.acks.pop_front() {
            Some(p) => p,
            None => self.rest.pop_front()?,
        };
        self.bytes -= p.ip_len();
        self.stats.dequeue(classify(&p));
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.acks.len() + self.rest.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
}

impl AsymQueue for AcksFirst {
    fn stats(&self) -> &AsymStats {
        &self.stats
    }
    fn kind(&self) -> &'static str {
        "acks-first"
    }
}
