//! The **CAKE-safe ACK filter**: drops a queued pure ACK only when a newer packet of the same
//! connection makes it provably redundant, by the rules of Linux CAKE's ACK filter
//! (`sch_cake.c`, summarised in `references/cake-ack-filter.md`; written from those rules, not
//! from CAKE's code).
//!
//! On every enqueue of a TCP packet with ACK set and SYN clear (the *trigger*; it may carry
//! data), the connection's queued packets are scanned from the oldest; a queued packet is
//! *eligible* only if all of these hold:
//! 1. same addresses and ports (same direction) as the trigger;
//! 2. ACK set, and URG, PSH, RST, SYN, FIN clear (ECE/CWR: rule 7);
//! 3. no options but NOP/EOL, SACK and timestamps — no MSS, window scale, SACK-permitted or
//!    unknown option (`has_other`) — and its TSval and TSecr are not newer than the trigger's
//!    (a timestamped ACK is kept if the trigger has no timestamps);
//! 4. no payload;
//! 5. its cumulative ACK is not after the trigger's;
//! 6. SACK: kept if it carries a D-SACK (a block starting before its cumulative ACK), or SACK
//!    blocks while the trigger has none; otherwise each of its blocks must lie inside one of
//!    the trigger's, and the trigger must acknowledge strictly further or SACK strictly more
//!    bytes. Hence a duplicate ACK (same ACK number, no new SACK information) is never dropped;
//! 7. ECN: when ECE/CWR differ between successive eligible packets, the eligible set restarts
//!    (the ECN transition is information and is kept).
//!
//! At most one packet is dropped per trigger: the oldest of the current eligible set.
//! - [`CakeMode::Conservative`] (CAKE's `ack-filter`): only when the eligible set has at least
//!   two members.
//! - [`CakeMode::Aggressive`] (`ack-filter-aggressive`): also when it has one member that is
//!   the connection's last queued packet (immediately before the trigger) and has the same
//!   ECE/CWR bits as the trigger.
//!
//! Unlike CAKE (one queue per flow), this is a single FIFO with drop-tail at `limit` packets;
//! "the connection's queue" is the sub-sequence of its packets, tracked per connection. The
//! filter runs before the limit check, so a filtered drop can make room for the trigger.
//!
//! **What it is not.** It does not reorder, delay, rewrite or merge ACKs, nor filter ACKs
//! without a newer packet of the same connection behind them.

use super::slots::Slots;
use super::{classify, AsymQueue, AsymStats, DropReason, FlowKey, FlowMap, FLOW_TABLE_SOFT_MAX};
use crate::queue::{Enqueue, QueueDisc};
use crate::time::Time;
use ackshape_wire::{Packet, TcpFlags, TcpHdr};
use std::collections::VecDeque;

/// CAKE's two ACK-filter modes (`"conservative"`, `"aggressive"` in spec files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CakeMode {
    /// Drop only when at least two eligible ACKs are queued (CAKE `ack-filter`).
    #[default]
    Conservative,
    /// Also drop a single eligible ACK right before the trigger (CAKE `ack-filter-aggressive`).
    Aggressive,
}

/// CAKE-safe ACK filter; see the module doc.
#[derive(Debug)]
pub struct AckFilterCake {
    q: Slots,
    limit: usize,
    mode: CakeMode,
    /// Ids of each connection's queued packets, oldest first.
    flows: FlowMap<VecDeque<u64>>,
    stats: AsymStats,
}

impl AckFilterCake {
    /// `limit`: FIFO size in packets.
    pub fn new(limit: usize, mode: CakeMode) -> AckFilterCake {
        AckFilterCake {
            q: Slots::with_capacity(limit.min(4096)),
            limit,
            mode,
            flows: crate::hash::map(crate::hash::HashKey::default()),
            stats: AsymStats { ack_q_limit: limit, ..AsymStats::default() },
        }
    }

    /// Index (in the flow's list) of the queued packet the trigger makes redundant, if any.
    fn find_redundant(&self, list: &VecDeque<u64>, trig: &TcpHdr) -> Option<usize> {
        let mut elig: Option<(usize, u8)> = None;
        let mut found = 0usize;
        for (i, &id) in list.iter().enumerate() {
            let Some(cand) = self.q.get(id) else { continue };
            let Some(ct) = cand.tcp() else { continue };
            if cand.payload_len != 0 || !may_drop(ct, trig) {
                continue;
            }
            let e = ecn_bits(ct.flags);
            if let Some((_, ef)) = elig {
                if ef != e {
                    elig = None;
                    found = 0;
                }
            }
            if elig.is_none() {
                elig = Some((i, e));
            }
            found += 1;
        }
        let (i, e) = elig?;
        if found >= 2 {
            return Some(i);
        }
        let last = i + 1 == list.len();
        (self.mode == CakeMode::Aggressive && last && e == ecn_bits(trig.flags)).then_some(i)
    }
}

#[inline]
fn ecn_bits(f: TcpFlags) -> u8 {
    f.0 & (TcpFlags::ECE.0 | TcpFlags::CWR.0)
}

/// `a` is after `b` in 32-bit wrapping order (timestamps).
#[inline]
fn ts_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[inline]
fn sack_bytes(blocks: &[ackshape_wire::SackBlock]) -> u64 {
    blocks.iter().map(|b| b.right.diff(b.left).max(0) as u64).sum()
}

/// Rules 2, 3, 5 and 6 for candidate `c` against trigger `t` (rule 4, payload, is checked by
/// the caller; rule 7 is stateful).
pub(crate) fn may_drop(c: &TcpHdr, t: &TcpHdr) -> bool {
    const BAD: u8 = TcpFlags::URG.0 | TcpFlags::PSH.0 | TcpFlags::RST.0 | TcpFlags::SYN.0 | TcpFlags::FIN.0;
    if !c.flags.contains(TcpFlags::ACK) || c.flags.0 & BAD != 0 {
        return false;
    }
    let o = &c.opts;
    if o.mss.is_some() || o.wscale.is_some() || o.sack_permitted || o.has_other {
        return false;
    }
    if let Some((val, ecr)) = o.timestamps {
        match t.opts.timestamps {
            None => return false,
            Some((tval, tecr)) => {
                if ts_after(val, tval) || ts_after(ecr, tecr) {
                    return false;
                }
            }
        }
    }
    if c.ack > t.ack || !super::plausible_advance(c.ack, t.ack) {
        // Rule 5, and a trigger further ahead than any window allows is no real ACK of this
        // connection (a spoof must not evict the real ones).
        return false;
    }
    let cb = o.sack_blocks();
    let tb = t.opts.sack_blocks();
    if !cb.is_empty() {
        if cb.iter().any(|b| b.left < c.ack) || tb.is_empty() {
            return false;
        }
        let covered = cb.iter().all(|b| tb.iter().any(|x| x.left <= b.left && b.right <= x.right));
        if !covered {
            return false;
        }
    }
    let further = t.ack > c.ack;
    let more_sacked = sack_bytes(tb) > sack_bytes(cb);
    further || more_sacked
}

impl QueueDisc for AckFilterCake {
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        crate::hash::rekey(&mut self.flows, key);
    }
    fn asym_stats(&self) -> Option<&AsymStats> {
        Some(AsymQueue::stats(self))
    }
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Enqueue {
        let c = classify(&pkt);
        self.stats.arrive(c);
        let key = FlowKey::of(&pkt);
        if let (Some(key), Some(t)) = (key, pkt.tcp()) {
            let trigger = t.flags.contains(TcpFlags::ACK) && !t.flags.contains(TcpFlags::SYN);
            if trigger {
                if let Some(list) = self.flows.get(&key) {
                    if let Some(i) = self.find_redundant(list, t) {
                        let id = list[i];
                        if let Some(list) = self.flows.get_mut(&key) {
                            list.remove(i);
                        }
                        if let Some(old) = self.q.take(id) {
                            self.stats.drop(classify(&old), DropReason::AckFiltered, true);
                        }
                    }
                }
            }
        }
        if self.q.len() >= self.limit {
            self.stats.drop(c, DropReason::QueueFull, false);
            return Enqueue::Dropped(pkt);
        }
        let id = self.q.push(pkt);
        self.stats.queued(c);
        if let Some(key) = key {
            if self.flows.len() >= FLOW_TABLE_SOFT_MAX && !self.flows.contains_key(&key) {
                self.flows.retain(|_, l| !l.is_empty());
            }
            self.flows.entry(key).or_default().push_back(id);
        }
        Enqueue::Queued
    }

    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let (id, p) = self.q.pop()?;
        if let Some(key) = FlowKey::of(&p) {
            if let Some(list) = self.flows.get_mut(&key) {
                if list.front() == Some(&id) {
                    list.pop_front();
                } else if let Some(i) = list.iter().position(|&x| x == id) {
                    list.remove(i);
                }
            }
        }
        self.stats.dequeue(classify(&p));
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.q.bytes()
    }
}

impl AsymQueue for AckFilterCake {
    fn stats(&self) -> &AsymStats {
        &self.stats
    }
    fn kind(&self) -> &'static str {
        "ack-filter-cake"
    }
}
