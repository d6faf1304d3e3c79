//! The **classic ACK filter** of paper 002's comparison (Balakrishnan et al. 1997 [8], "AF"):
//! when a pure ACK arrives and an older pure ACK of the same connection (same addresses and
//! ports, same direction) is queued, the newer cumulative ACK replaces the older one. So at
//! most one pure ACK per connection is ever queued, and it is the newest.
//!
//! - **Position.** With `keep_position = false` (default, the paper's "older queued ACKs are
//!   removed"), the older ACK is removed and the newer joins the tail. With
//!   `keep_position = true` the newer ACK takes the older one's place in the queue (it leaves
//!   earlier; a more aggressive variant).
//! - **Stale arrivals.** An arriving ACK whose cumulative ACK is *before* the queued one's
//!   (reordering) is itself dropped as filtered: it carries nothing the queued one does not.
//! - One FIFO for all classes, drop-tail at `limit` packets (after filtering, so a replacement
//!   never overflows).
//!
//! **What it is not.** It is blunt on purpose: it drops duplicate ACKs, SACK information, ECN
//! echoes and ACKs carrying window updates or unknown options, all of which
//! [`AckFilterCake`](super::AckFilterCake) keeps. Data segments (which also carry a cumulative
//! ACK) are never touched and never filter anything.

use super::slots::{Replaced, Slots};
use super::{classify, AsymQueue, AsymStats, DropReason, FlowKey, FlowMap, PktClass};
use crate::queue::{Enqueue, QueueDisc};
use crate::time::Time;
use ackshape_wire::Packet;

/// Classic ACK filter; see the module doc.
#[derive(Debug)]
pub struct AckFilterClassic {
    q: Slots,
    limit: usize,
    keep_position: bool,
    /// Id of the (single) queued pure ACK of each flow.
    acks: FlowMap<u64>,
    stats: AsymStats,
}

impl AckFilterClassic {
    /// `limit`: FIFO size in packets; `keep_position`: see the module doc.
    pub fn new(limit: usize, keep_position: bool) -> AckFilterClassic {
        AckFilterClassic {
            q: Slots::with_capacity(limit.min(4096)),
            limit,
            keep_position,
            acks: FlowMap::default(),
            stats: AsymStats { ack_q_limit: limit, ..AsymStats::default() },
        }
    }
}

impl QueueDisc for AckFilterClassic {
    fn asym_stats(&self) -> Option<&AsymStats> {
        Some(AsymQueue::stats(self))
    }
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Enqueue {
        let c = classify(&pkt);
        self.stats.arrive(c);
        let key = if c == PktClass::TcpAck { FlowKey::of(&pkt) } else { None };
        if let Some(key) = key {
            if let Some(&old_id) = self.acks.get(&key) {
                let older = self.q.get(old_id).and_then(|o| o.tcp()).map(|t| t.ack);
                let newer = pkt.tcp().map(|t| t.ack);
                if let (Some(older), Some(newer)) = (older, newer) {
                    if newer < older {
                        self.stats.drop(c, DropReason::AckFiltered, false);
                        return Enqueue::Dropped(pkt);
                    }
                    if self.keep_position {
                        return match self.q.replace(old_id, pkt) {
                            Replaced::Old(_old) => {
                                // The old ACK leaves, the new one takes its slot: net zero.
                                self.stats.drop(c, DropReason::AckFiltered, false);
                                Enqueue::Queued
                            }
                            Replaced::WasTombstone => {
                                self.stats.queued(c);
                                Enqueue::Queued
                            }
                            Replaced::NotQueued(p) => {
                                // Not queued after all (stale entry): fall back to append.
                                self.acks.remove(&key);
                                self.append(c, Some(key), p)
                            }
                        };
                    }
                    if self.q.take(old_id).is_some() {
                        self.stats.drop(c, DropReason::AckFiltered, true);
                    }
                }
                self.acks.remove(&key);
            }
        }
        self.append(c, key, pkt)
    }

    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let (id, p) = self.q.pop()?;
        let c = classify(&p);
        if c == PktClass::TcpAck {
            if let Some(key) = FlowKey::of(&p) {
                if self.acks.get(&key) == Some(&id) {
                    self.acks.remove(&key);
                }
            }
        }
        self.stats.dequeue(c);
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.q.bytes()
    }
}

impl AckFilterClassic {
    #[inline]
    fn append(&mut self, c: PktClass, key: Option<FlowKey>, pkt: Packet) -> Enqueue {
        if self.q.len() >= self.limit {
            self.stats.drop(c, DropReason::QueueFull, false);
            return Enqueue::Dropped(pkt);
        }
        let id = self.q.push(pkt);
        self.stats.queued(c);
        if let Some(key) = key {
            self.acks.insert(key, id);
        }
        Enqueue::Queued
    }
}

impl AsymQueue for AckFilterClassic {
    fn stats(&self) -> &AsymStats {
        &self.stats
    }
    fn kind(&self) -> &'static str {
        "ack-filter-classic"
    }
}
