//! **ACQ**, adaptive class-based queuing (Louati, Barakat, Dabbous, "Handling two-way TCP
//! traffic in asymmetric networks", HSNMC 2004, LNCS 3079, and INRIA report 2003 — paper 002's
//! refs [22, 23]).
//!
//! What the reference design says (from its abstracts; the full text was not available to us):
//! ACQ runs at the entry of the slow link, keeps **two classes, one for ACKs and one for
//! data**, serves them with a weighted scheduler, and **adapts the two weights to the crossing
//! traffic** so as to maximise a utility function chosen by the user or operator; the aim is
//! to use both directions of the asymmetric access well at once.
//!
//! What this implementation does (our reading, to be checked against the paper's text):
//! - two drop-tail FIFOs: pure TCP ACKs (`ack_limit`) and everything else (`data_limit`);
//! - byte DRR between them; per round the ACK class gets `w · round_bytes` and the data class
//!   `(1 − w) · round_bytes` (each at least [`MIN_QUANTUM`](super::MIN_QUANTUM));
//! - utility: **the smaller of the two directions' utilisations** (max-min), where
//!   `U_rev` = bytes of the data class sent on this link / (`period` · `rate_bps`) and
//!   `U_fwd` = bytes newly acknowledged by the ACKs sent (per-connection ACK-number advance)
//!   / (`period` · `reverse_rate_bps`), i.e. the goodput of the opposite direction;
//! - every `period` (checked at enqueue and dequeue) the weight moves by `step` towards the
//!   less-utilised direction: `w += step` if `U_fwd < U_rev` and ACKs waited while data was
//!   sent during the period, `w −= step` if `U_fwd > U_rev` and data waited while ACKs were
//!   sent; otherwise unchanged. `w` stays within `[step, 1 − step]`, starting at
//!   `initial_ack_weight`.
//!
//! **The two parameters** (paper 002: "we used the same values provided in [23]", not given
//! there): the adaptation period `period` and the weight step `step`. The values of [23] could
//! not be retrieved here (EXPERIMENTS.md P2-13), so the defaults — `period = 200 ms`,
//! `step = 0.05` — are **assumed**, chosen as a few RTTs of the paper's simulated paths and a
//! 20-step range; any ACQ result must say so.
//!
//! **What it is not.** Not a faithful copy of Louati et al.'s controller (unverified, see
//! above); no ACK thinning (ACKs are only dropped when their FIFO is full).

use super::{classify, AsymQueue, AsymStats, DropReason, Drr2, FlowKey, FlowMap, PktClass, FLOW_TABLE_SOFT_MAX};
use crate::queue::{Enqueue, QueueDisc};
use crate::time::{Dur, Time};
use ackshape_wire::{Packet, SeqNum, TcpFlags};
use std::collections::VecDeque;

/// ACQ parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AcqConfig {
    /// ACK FIFO size (packets).
    pub ack_limit: usize,
    /// Data FIFO size (packets; TCP data and non-TCP).
    pub data_limit: usize,
    /// Rate of the link this queue feeds (bit/s).
    pub rate_bps: u64,
    /// Rate of the opposite direction (bit/s), whose goodput the ACKs clock.
    pub reverse_rate_bps: u64,
    /// Weight adaptation period (ACQ parameter 1; assumed 200 ms).
    pub period: Dur,
    /// Weight step per period (ACQ parameter 2; assumed 0.05).
    pub step: f64,
    /// Starting ACK-class share (0.5).
    pub initial_ack_weight: f64,
    /// Bytes per DRR round, split by weight between the classes (3000).
    pub round_bytes: u32,
}

impl AcqConfig {
    /// Defaults for a link of `rate_bps` whose opposite direction runs at `reverse_rate_bps`.
    pub fn new(rate_bps: u64, reverse_rate_bps: u64) -> AcqConfig {
        AcqConfig {
            ack_limit: 100,
            data_limit: 100,
            rate_bps,
            reverse_rate_bps,
            period: Dur::from_millis(200),
            step: 0.05,
            initial_ack_weight: 0.5,
            round_bytes: 3000,
        }
    }
}

/// ACQ; see the module doc.
#[derive(Debug)]
pub struct Acq {
    cfg: AcqConfig,
    acks: VecDeque<Packet>,
    data: VecDeque<Packet>,
    drr: Drr2,
    w: f64,
    bytes: usize,
    /// Start of the current measurement period (`None` before the first packet).
    period_start: Option<Time>,
    data_bytes_out: u64,
    acked_bytes: u64,
    ack_waited: bool,
    data_waited: bool,
    last_ack: FlowMap<SeqNum>,
    stats: AsymStats,
}

impl Acq {
    pub fn new(cfg: AcqConfig) -> Acq {
        let step = if cfg.step.is_finite() { cfg.step.clamp(0.001, 0.25) } else { 0.05 };
        let cfg = AcqConfig { step, ..cfg };
        let w0 = if cfg.initial_ack_weight.is_finite() { cfg.initial_ack_weight } else { 0.5 };
        let w = w0.clamp(step, 1.0 - step);
        let mut a = Acq {
            acks: VecDeque::with_capacity(cfg.ack_limit.min(4096)),
            data: VecDeque::with_capacity(cfg.data_limit.min(4096)),
            drr: Drr2::new([1, 1]),
            w,
            bytes: 0,
            period_start: None,
            data_bytes_out: 0,
            acked_bytes: 0,
            ack_waited: false,
            data_waited: false,
            last_ack: crate::hash::map(crate::hash::HashKey::default()),
            stats: AsymStats { ack_q_limit: cfg.ack_limit, ack_weight: w, ..AsymStats::default() },
            cfg,
        };
        a.set_quanta();
        a
    }

    /// Current ACK-class share of the DRR.
    pub fn ack_weight(&self) -> f64 {
        self.w
    }

    fn set_quanta(&mut self) {
        let r = self.cfg.round_bytes as f64;
        self.drr.quantum = [
            ((self.w * r).round() as u32).max(super::MIN_QUANTUM),
            (((1.0 - self.w) * r).round() as u32).max(super::MIN_QUANTUM),
        ];
        self.stats.ack_weight = self.w;
    }

    fn tick(&mut self, now: Time) {
        let Some(start) = self.period_start else {
            self.period_start = Some(now);
            return;
        };
        let el = now.since(start);
        if el < self.cfg.period || el == Dur::ZERO {
            return;
        }
        let secs = el.as_secs_f64();
        let u_rev = self.data_bytes_out as f64 * 8.0 / (secs * self.cfg.rate_bps.max(1) as f64);
        let u_fwd = self.acked_bytes as f64 * 8.0 / (secs * self.cfg.reverse_rate_bps.max(1) as f64);
        let step = self.cfg.step;
        if u_fwd < u_rev && self.ack_waited {
            self.w = (self.w + step).min(1.0 - step);
        } else if u_fwd > u_rev && self.data_waited {
            self.w = (self.w - step).max(step);
        }
        self.set_quanta();
        self.period_start = Some(now);
        self.data_bytes_out = 0;
        self.acked_bytes = 0;
        self.ack_waited = false;
        self.data_waited = false;
    }

    fn account_ack(&mut self, p: &Packet) {
        let (Some(key), Some(t)) = (FlowKey::of(p), p.tcp()) else { return };
        if !t.flags.contains(TcpFlags::ACK) {
            return;
        }
        if self.last_ack.len() >= FLOW_TABLE_SOFT_MAX && !self.last_ack.contains_key(&key) {
            self.last_ack.clear();
        }
        match self.last_ack.get_mut(&key) {
            Some(last) => {
                let adv = t.ack.diff(*last);
                if adv > 0 {
                    self.acked_bytes += adv as u64;
                    *last = t.ack;
                }
            }
            None => {
                self.last_ack.insert(key, t.ack);
            }
        }
    }
}

impl QueueDisc for Acq {
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        crate::hash::rekey(&mut self.last_ack, key);
    }
    fn asym_stats(&self) -> Option<&AsymStats> {
        Some(AsymQueue::stats(self))
    }
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        self.tick(now);
        let c = classify(&pkt);
        self.stats.arrive(c);
        let (q, lim) = if c == PktClass::TcpAck {
            (&mut self.acks, self.cfg.ack_limit)
        } else {
            (&mut self.data, self.cfg.data_limit)
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
        self.tick(now);
        let heads = [self.acks.front().map(|p| p.ip_len()), self.data.front().map(|p| p.ip_len())];
        let p = match self.drr.pick(heads)? {
            0 => {
                self.data_waited |= heads[1].is_some();
                self.acks.pop_front()?
            }
            _ => {
                self.ack_waited |= heads[0].is_some();
                self.data.pop_front()?
            }
        };
        self.bytes -= p.ip_len();
        let c = classify(&p);
        if c == PktClass::TcpAck {
            self.account_ack(&p);
        } else {
            self.data_bytes_out += p.ip_len() as u64;
            if c == PktClass::TcpData {
                self.account_ack(&p);
            }
        }
        self.stats.dequeue(c);
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.acks.len() + self.data.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
}

impl AsymQueue for Acq {
    fn stats(&self) -> &AsymStats {
        &self.stats
    }
    fn kind(&self) -> &'static str {
        "acq"
    }
}
