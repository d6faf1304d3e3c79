//! FIFO drop-tail: the default output queue, and the problem case of paper 002 §2.1.

use super::{classify, AsymQueue, AsymStats, DropReason};
use crate::queue::{DropTail, Enqueue, Limit, QueueDisc};
use crate::time::Time;
use ackshape_wire::Packet;

/// [`DropTail`] with [`AsymStats`]. Every class shares one FIFO; the arriving packet is dropped
/// when the FIFO is full. It is the baseline, not a fix: ACKs wait behind data.
#[derive(Debug)]
pub struct Fifo {
    inner: DropTail,
    stats: AsymStats,
}

impl Fifo {
    pub fn new(limit: Limit) -> Fifo {
        let lim = match limit {
            Limit::Packets(n) => n,
            Limit::Bytes(_) => 0, // limited in bytes: no packet capacity to report
        };
        Fifo { inner: DropTail::new(limit), stats: AsymStats { ack_q_limit: lim, ..AsymStats::default() } }
    }
}

impl QueueDisc for Fifo {
    fn asym_stats(&self) -> Option<&AsymStats> {
        Some(AsymQueue::stats(self))
    }
    #[inline]
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        let c = classify(&pkt);
        self.stats.arrive(c);
        match self.inner.enqueue(now, pkt) {
            Enqueue::Queued => {
                self.stats.queued(c);
                Enqueue::Queued
            }
            Enqueue::Dropped(p) => {
                self.stats.drop(c, DropReason::QueueFull, false);
                Enqueue::Dropped(p)
            }
        }
    }
    #[inline]
    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        let p = self.inner.dequeue(now)?;
        self.stats.dequeue(classify(&p));
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.inner.len_pkts()
    }
    fn len_bytes(&self) -> usize {
        self.inner.len_bytes()
    }
}

impl AsymQueue for Fifo {
    fn stats(&self) -> &AsymStats {
        &self.stats
    }
    fn kind(&self) -> &'static str {
        "fifo"
    }
}
