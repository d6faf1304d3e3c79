//! The **classic ACK filter** of paper 002's comparison (Balakrishnan et al. 1997 [8], "AF"):
//! when a pure ACK arrives, the queued pure ACKs of the same connection (same addresses and
//! ports, same direction) that acknowledge *less* (a smaller cumulative ACK number) are removed:
//! the newer cumulative ACK makes them redundant.
//!
//! - **Duplicate ACKs are kept.** A queued ACK with the *same* number as the arriving one is
//!   not older, so it stays: a run of dupACKs reaches the sender and can trigger its fast
//!   retransmit. This is the rule of the reference implementation by the authors of [8]
//!   (ns-2's `semantic-packetqueue.cc`, `filterAcks`: a queued ACK goes only if its
//!   `seqno < ack`). So the queued ACKs of a connection always carry one ACK number (the
//!   newest), possibly several times.
//! - **Position.** With `keep_position = false` (default, ns-2's `replace_head_ = false`) the
//!   older ACKs are removed and the newer joins the tail. With `keep_position = true` (ns-2's
//!   `replace_head_`) the queued ACKs with a smaller *or equal* number are removed and the
//!   newer ACK takes the place of the oldest of them (it leaves earlier; a more aggressive
//!   variant, which does thin dupACKs).
//! - **Stale arrivals.** An arriving ACK whose cumulative ACK is *before* a queued one's
//!   (reordering) is itself dropped as filtered: it carries nothing the queued one does not.
//!   (ns-2 queues it; reordering does not occur on the simulated paths.)
//! - One FIFO for all classes, drop-tail at `limit` packets (after filtering, so a replacement
//!   never overflows).
//!
//! **What it is not.** It is blunt on purpose: it drops SACK information, ECN echoes and ACKs
//! carrying window updates or unknown options, all of which
//! [`AckFilterCake`](super::AckFilterCake) keeps. Data segments (which also carry a cumulative
//! ACK) are never touched and never filter anything.

use super::slots::{Replaced, Slots};
use super::{classify, AsymQueue, AsymStats, DropReason, FlowKey, FlowMap, PktClass, FLOW_TABLE_SOFT_MAX};
use crate::queue::{Enqueue, QueueDisc};
use crate::time::Time;
use ackshape_wire::{Packet, SeqNum};

/// Classic ACK filter; see the module doc.
#[derive(Debug)]
pub struct AckFilterClassic {
    q: Slots,
    limit: usize,
    keep_position: bool,
    /// Ids of each flow's queued pure ACKs, oldest first; they all carry the same ACK number
    /// (the flow's newest, repeated by duplicate ACKs). Emptied lists are kept (no allocation
    /// per packet) and purged when the table grows past [`FLOW_TABLE_SOFT_MAX`] flows.
    acks: FlowMap<Vec<u64>>,
    /// Spare list swapped with a flow's list while its ACKs are purged.
    scratch: Vec<u64>,
    stats: AsymStats,
}

impl AckFilterClassic {
    /// `limit`: FIFO size in packets; `keep_position`: see the module doc.
    pub fn new(limit: usize, keep_position: bool) -> AckFilterClassic {
        AckFilterClassic {
            q: Slots::with_capacity(limit.min(4096)),
            limit,
            keep_position,
            acks: crate::hash::map(crate::hash::HashKey::default()),
            scratch: Vec::new(),
            stats: AsymStats { ack_q_limit: limit, ..AsymStats::default() },
        }
    }

    /// The ACK number the queued pure ACKs of a flow carry (`None` if none is queued).
    fn queued_ack(&self, ids: &[u64]) -> Option<SeqNum> {
        ids.iter().find_map(|&id| self.q.get(id)).and_then(|p| p.tcp()).map(|t| t.ack)
    }
}

impl QueueDisc for AckFilterClassic {
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        crate::hash::rekey(&mut self.acks, key);
    }
    fn asym_stats(&self) -> Option<&AsymStats> {
        Some(AsymQueue::stats(self))
    }
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Enqueue {
        let c = classify(&pkt);
        self.stats.arrive(c);
        let key = if c == PktClass::TcpAck { FlowKey::of(&pkt) } else { None };
        let (Some(key), Some(newer)) = (key, pkt.tcp().map(|t| t.ack)) else { return self.append(c, key, pkt) };
        let Some(queued) = self.acks.get(&key).and_then(|ids| self.queued_ack(ids)) else {
            return self.append(c, Some(key), pkt);
        };
        if newer > queued && !super::plausible_advance(queued, newer) {
            // Further ahead than any window allows: not the receiver's ACK (a blind spoof); it
            // must not purge the real ones. Queued as it is.
            return self.append(c, Some(key), pkt);
        }
        if newer < queued {
            // Stale (reordered): the queued ACK already says more.
            self.stats.drop(c, DropReason::AckFiltered, false);
            return Enqueue::Dropped(pkt);
        }
        // Older ACKs go; equal ones (duplicate ACKs) stay, unless the newer one is to take the
        // oldest one's place (`keep_position`, ns-2's `replace_head_`).
        let purge = if self.keep_position { queued <= newer } else { queued < newer };
        if !purge {
            return self.append(c, Some(key), pkt);
        }
        // Take the flow's list out (its slot keeps the empty spare), purge, keep the spare.
        let mut ids = std::mem::take(&mut self.scratch);
        if let Some(list) = self.acks.get_mut(&key) {
            std::mem::swap(list, &mut ids);
        }
        let head = if self.keep_position { ids.first().copied() } else { None };
        for &id in ids.iter().skip(usize::from(head.is_some())) {
            if self.q.take(id).is_some() {
                self.stats.drop(c, DropReason::AckFiltered, true);
            }
        }
        ids.clear();
        self.scratch = ids;
        let Some(head) = head else { return self.append(c, Some(key), pkt) };
        match self.q.replace(head, pkt) {
            Replaced::Old(_old) => {
                // The old ACK leaves, the new one takes its slot: net zero.
                self.stats.drop(c, DropReason::AckFiltered, false);
                self.acks.entry(key).or_default().push(head);
                Enqueue::Queued
            }
            Replaced::WasTombstone => {
                self.stats.queued(c);
                self.acks.entry(key).or_default().push(head);
                Enqueue::Queued
            }
            // Not queued after all (stale entry): append instead.
            Replaced::NotQueued(p) => self.append(c, Some(key), p),
        }
    }

    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let (id, p) = self.q.pop()?;
        let c = classify(&p);
        if c == PktClass::TcpAck {
            if let Some(ids) = FlowKey::of(&p).and_then(|key| self.acks.get_mut(&key)) {
                if ids.first() == Some(&id) {
                    ids.remove(0);
                } else if let Some(i) = ids.iter().position(|&x| x == id) {
                    ids.remove(i);
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
            if self.acks.len() >= FLOW_TABLE_SOFT_MAX && !self.acks.contains_key(&key) {
                self.acks.retain(|_, l| !l.is_empty());
            }
            self.acks.entry(key).or_default().push(id);
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
