//! **AFVQ**, ACKs-first variable-size queuing (paper 002 §5.1, Fig. 6, Table 3, Eq. 16).
//!
//! - **Classifier** (no per-connection state) into three FIFOs: TCP pure ACK, TCP data,
//!   non-TCP ([`classify`](super::classify)).
//! - **Priority scheduler**: the ACK queue is served first, always (strict priority).
//! - **Round robin** between TCP data and non-TCP with equal shares: byte-based deficit round
//!   robin with equal quanta (`quantum_bytes`, default 1500), work-conserving. The paper's
//!   gateway used CBQ classes of weight 0.5 each, i.e. equal *bandwidth*, hence bytes rather
//!   than packets (EXPERIMENTS.md P2-12); with equal packet sizes both are the same.
//! - **Queue-size modifier** (Eq. 16): the ACK queue's size is
//!   `s = ⌈−s_max/n_thr · n + s_max⌉` for `0 ≤ n < n_thr`, else 1, where `n` is the number of
//!   packets in the TCP data queue ([`eq16_ack_queue_size`]). Defaults `s_max = 5`,
//!   `n_thr = 36` (the paper's measured values). [`SizeModifier::Continuous`] recomputes `s`
//!   at every enqueue; [`SizeModifier::Sampled`] recomputes it only when `now` crosses the next
//!   multiple of `period` (checked at every enqueue and dequeue) — the paper's user-space
//!   `tc` script ran at 1 Hz.
//! - **Drop-random** on ACK-queue overflow: when an ACK arrives and the ACK queue already holds
//!   `s` or more, the arriving ACK joins the candidates and ACKs chosen uniformly at random
//!   among *all* candidates (queued + arriving) are dropped until `s` remain (our reading of
//!   "a randomly selected packet is dropped from the queue"; EXPERIMENTS.md P2-12 assumes the
//!   same). It is also ns-2's convention for a random forced drop (`REDQueue::enque` with
//!   `drop_rand_`: the arriving packet is enqueued first, then `Random::integer(length())`
//!   picks the victim), the simulator the paper used. If `s` shrank below the occupancy, the
//!   excess goes at the next ACK arrival, not at once. `s ≥ 1`, so the ACK queue is never
//!   emptied by a drop.
//! - TCP data and non-TCP FIFOs are drop-tail at `data_limit` / `non_tcp_limit` packets
//!   (the paper: the system default; in its simulations "arbitrarily large").
//!
//! **What it is not.** Not per-flow: one ACK queue for all connections (EXPERIMENTS.md X-2).
//! It does not look at ACK numbers (a random ACK goes, possibly the newest of its flow), and it
//! does not shape: it only decides order and drops.

use super::{classify, AsymQueue, AsymStats, DropReason, Drr2, PktClass};
use crate::queue::{Enqueue, QueueDisc};
use crate::rng::Rng;
use crate::time::{Dur, Time};
use ackshape_wire::Packet;
use rand::Rng as _;
use std::collections::VecDeque;

/// Eq. 16 of paper 002: the ACK-queue size for `n` packets in the TCP data queue.
///
/// `⌈−s_max/n_thr · n + s_max⌉` for `n < n_thr`, else 1; computed exactly in integers as
/// `s_max − ⌊s_max·n / n_thr⌋`. Always `≥ 1` (`s_max = 0` is treated as 1; `n_thr = 0` gives 1).
#[inline]
pub fn eq16_ack_queue_size(n: usize, s_max: usize, n_thr: usize) -> usize {
    let s_max = s_max.max(1);
    if n >= n_thr {
        return 1;
    }
    let s = s_max as u128 - (s_max as u128 * n as u128) / n_thr as u128;
    (s as usize).max(1)
}

/// When AFVQ recomputes the ACK-queue size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeModifier {
    /// At every enqueue.
    Continuous,
    /// When `now` crosses a multiple of `period` (the paper's 1 Hz script: 1 s).
    Sampled { period: Dur },
}

/// AFVQ parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AfvqConfig {
    /// Maximum ACK-queue size (packets). Paper: 5.
    pub s_max: usize,
    /// Data-queue length at which the ACK queue reaches its minimum of 1 (packets). Paper: 36.
    pub n_thr: usize,
    /// TCP data FIFO size (packets).
    pub data_limit: usize,
    /// Non-TCP FIFO size (packets).
    pub non_tcp_limit: usize,
    /// Continuous or sampled size modifier.
    pub modifier: SizeModifier,
    /// DRR quantum of both the TCP data and the non-TCP class (bytes, equal weights).
    pub quantum_bytes: u32,
}

impl Default for AfvqConfig {
    fn default() -> AfvqConfig {
        AfvqConfig {
            s_max: 5,
            n_thr: 36,
            data_limit: 100,
            non_tcp_limit: 100,
            modifier: SizeModifier::Continuous,
            quantum_bytes: 1500,
        }
    }
}

/// AFVQ; see the module doc.
#[derive(Debug)]
pub struct Afvq {
    cfg: AfvqConfig,
    acks: VecDeque<Packet>,
    data: VecDeque<Packet>,
    other: VecDeque<Packet>,
    /// Current ACK-queue size (Eq. 16).
    s: usize,
    next_sample: Time,
    drr: Drr2,
    rng: Rng,
    bytes: usize,
    stats: AsymStats,
}

impl Afvq {
    /// AFVQ with its own random stream for the drop-random policy.
    pub fn new(cfg: AfvqConfig, rng: Rng) -> Afvq {
        let s = eq16_ack_queue_size(0, cfg.s_max, cfg.n_thr);
        Afvq {
            acks: VecDeque::with_capacity(cfg.s_max.clamp(1, 4096) + 1),
            data: VecDeque::with_capacity(cfg.data_limit.min(4096)),
            other: VecDeque::with_capacity(cfg.non_tcp_limit.min(4096)),
            s,
            next_sample: Time::ZERO,
            drr: Drr2::new([cfg.quantum_bytes, cfg.quantum_bytes]),
            rng,
            bytes: 0,
            stats: AsymStats { ack_q_limit: s, ..AsymStats::default() },
            cfg,
        }
    }

    /// The current ACK-queue size `s`.
    pub fn ack_queue_size(&self) -> usize {
        self.s
    }

    #[inline]
    fn sample(&mut self, now: Time, on_enqueue: bool) {
        match self.cfg.modifier {
            SizeModifier::Continuous => {
                if !on_enqueue {
                    return;
                }
            }
            SizeModifier::Sampled { period } => {
                if now < self.next_sample {
                    return;
                }
                let p = period.as_nanos().max(1);
                self.next_sample = Time((now.0 / p).saturating_add(1).saturating_mul(p));
            }
        }
        self.s = eq16_ack_queue_size(self.data.len(), self.cfg.s_max, self.cfg.n_thr);
        self.stats.ack_q_limit = self.s;
    }

    fn enqueue_ack(&mut self, pkt: Packet) -> Enqueue {
        self.bytes += pkt.ip_len();
        self.acks.push_back(pkt);
        self.stats.queued(PktClass::TcpAck);
        let mut arriving = Some(self.acks.len() - 1);
        let mut dropped_arriving = None;
        while self.acks.len() > self.s {
            let r = self.rng.gen_range(0..self.acks.len());
            let Some(p) = self.acks.remove(r) else { break };
            self.bytes -= p.ip_len();
            self.stats.drop(PktClass::TcpAck, DropReason::AckRandomDrop, true);
            match arriving {
                Some(a) if a == r => {
                    arriving = None;
                    dropped_arriving = Some(p);
                }
                Some(a) if r < a => arriving = Some(a - 1),
                _ => {}
            }
        }
        match dropped_arriving {
            Some(p) => Enqueue::Dropped(p),
            None => Enqueue::Queued,
        }
    }
}

impl QueueDisc for Afvq {
    fn asym_stats(&self) -> Option<&AsymStats> {
        Some(AsymQueue::stats(self))
    }
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        let c = classify(&pkt);
        self.stats.arrive(c);
        self.sample(now, true);
        let (q, lim) = match c {
            PktClass::TcpAck => return self.enqueue_ack(pkt),
            PktClass::TcpData => (&mut self.data, self.cfg.data_limit),
            PktClass::NonTcp => (&mut self.other, self.cfg.non_tcp_limit),
        };
        if q.len() >= lim {
            self.stats.drop(c, DropReason::QueueFull, false);
            return Enqueue::Dropped(pkt);
        }
        self.bytes += pkt.ip_len();
        q.push_back(pkt);
        self.stats.queued(c);
        Enqueue::Queued
    }

    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        self.sample(now, false);
        let p = if let Some(p) = self.acks.pop_front() {
            p
        } else {
            let heads = [self.data.front().map(|p| p.ip_len()), self.other.front().map(|p| p.ip_len())];
            match self.drr.pick(heads)? {
                0 => self.data.pop_front()?,
                _ => self.other.pop_front()?,
            }
        };
        self.bytes -= p.ip_len();
        self.stats.dequeue(classify(&p));
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.acks.len() + self.data.len() + self.other.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
}

impl AsymQueue for Afvq {
    fn stats(&self) -> &AsymStats {
        &self.stats
    }
    fn kind(&self) -> &'static str {
        "afvq"
    }
}
