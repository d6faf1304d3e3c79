//! PostACK (paper 000, Wei/Tsao/Lin): shape the TCP flows of a class by holding their ACKs in
//! per-flow ACK queues (PFAQ_i) instead of queuing their data, so the data queue of the class
//! (PCDQ_c) stays short while each flow gets BW_i = BW_c / n. It never rewrites a header: it only
//! decides *when* each real ACK packet goes back to its sender.
//!
//! Three variants, chosen by [`PostAckConfig::variant`]:
//!
//! - **`basic`** (Fig. 3, P0-A2): each returning ACK of flow i is delayed by
//!   PCDQ_i^qlen · MSS / BW_i, with PCDQ_i^qlen = W_i − W_w,i packets (0 when negative).
//!   W_i = min(W_c, W_r) is estimated from the two streams as the sender's outstanding data,
//!   `snd_nxt − last ACK released to the sender`, in full segments (snd_nxt = highest
//!   `seq + len` seen in the data); W_w,i = BW_i · D_w,i / MSS with D_w,i the smallest
//!   data→ACK time seen at the gateway (one timed segment at a time, retransmissions cancel the
//!   sample: Karn). Until a sample exists ACKs are not delayed. One deadline per held ACK, kept in
//!   a heap: O(log N) per ACK, the cost the paper holds against this form.
//! - **`on-off`** (Fig. 4/5, P0-A3): one class timer with period Δ_c = MSS / BW_i = n · MSS / BW_c
//!   (recomputed whenever n or the rate changes, P0-9). Per flow, `i.out` counts data that
//!   entered the class and was not yet "paid for" by a slot. At each slot, for each flow: if
//!   `i.out > 1` the QueueRelocator skips the slot (`i.out −= 1`), else one held ACK is released.
//!   So k packets entering after one released ACK make the next k − 1 slots of the flow skip.
//!   With `spread_slots` (not in the paper) the timer runs every MSS / BW_c and each slot serves
//!   only the next active flow, so a round's n releases are spread over Δ_c instead of leaving
//!   together (paper 000 Fig. 8 at 16–32 flows: the n-ACK burst needs an n-packet class FIFO).
//! - **`zero-timer`** (Fig. 13/14, P0-A5): no timer; the class's per-flow queues (PFQ+DRR)
//!   clock the ACKs. The paper's table is read on the length `qlen` of the DRR-selected flow's
//!   queue *when it is selected*, i.e. `flow_qlen + 1` with the seam's after-the-dequeue
//!   length: `qlen > 1` hold, `qlen == 1` (the packet leaving is the flow's last) release one
//!   ACK together with it, `qlen == 0` release its ACK (see P0-16 below).
//!
//! # Choices where the paper is silent (also in `docs/policy.md`)
//!
//! - **Fig. 4 lines 08–09 (P0-9).** A slot with `i.out ≤ 1` releases an ACK only if one is
//!   queued; whether or not it releases, `i.out` is decremented and floored at 0
//!   (`i.out = max(i.out − 1, 0)`). An unused slot thus pays for a packet that entered, and
//!   credit never accumulates (a flow that idled cannot burst later).
//! - **Byte counting (P0-10, X-3).** `i.out` counts *segments of data*: each data packet adds
//!   `payload / MSS_i` (MSS_i = largest payload seen from the flow), so a full segment counts 1
//!   and a short one a fraction. ACKs are *not* weighted by the segments they cover: an ACK
//!   covering k segments makes the sender emit ≈ k segments, which `i.out` counts, so the QR skips
//!   the flow's next k − 1 slots — the ACK costs k slots through its data. Weighting the ACK as
//!   well would charge it twice and halve the rate under delayed ACKs. Duplicate ACKs cover no
//!   new data but each one stands for a segment that reached the receiver, so they are paced
//!   like any ACK (one per slot).
//! - **Handshake and teardown.** SYN-ACK, FIN, RST and data with piggy-backed ACKs are never
//!   held. To keep each flow's ACKs in order (an older ACK released after a newer one with the
//!   same ACK number would count as a duplicate at the sender), such a packet first releases
//!   everything held for its flow, then goes itself. A flow's SYN does not count in `i.out`,
//!   and a flow joins n with its first data segment (SYN-only flows do not shrink the others'
//!   share). The first ACKs of a flow (slow start) follow the same rules as all others: its
//!   initial window entered the class at once and is paid for slot by slot, as per-flow queuing
//!   would send it.
//! - **n** counts the flows of the class that sent data within `idle_timeout_ms` or have ACKs
//!   held (on-off and basic); it is recounted at every slot and when a flow starts or ends.
//! - **qlen table (P0-16).** `flow_qlen` is the per-flow queue length *after* the dequeue; the
//!   paper's `qlen` is the length of the selected queue, one more. So an ACK is released when a
//!   dequeue leaves the flow's queue with at most `keep_in_pfq` packets (default 0: the paper —
//!   a backlogged flow then has about one packet in its queue between its turns, n packets in
//!   the class). `keep_in_pfq = 1` keeps one more packet per flow as a cushion for senders whose
//!   turnaround (gateway → sender → gateway) exceeds a DRR round (n packet times at the class
//!   rate), which would otherwise lose turns; it doubles the class queue.
//!   DRR never selects an empty queue, so the `qlen == 0` rule can never run as printed, and a
//!   flow whose queue ran empty while its ACKs are held would stall (nothing dequeues it) and
//!   strand its last ACKs at the end of a transfer. The hook: when an ACK arrives for a flow with
//!   nothing in the class, if it acknowledges everything the sender has sent (the flow is idle or
//!   done) everything held is released with it; otherwise it joins the queue and one ACK's
//!   worth of progress is released: the held duplicate ACKs ahead of the first ACK that advances
//!   the sender's window, and that ACK (duplicates clock no data before fast retransmit or after
//!   a timeout, so releasing one alone could leave the flow stalled until its next RTO). That
//!   restarts the dequeue clock. (Releasing all every time would dump a whole held window into
//!   the class whenever a flow's queue is empty for a moment, e.g. during loss recovery.)
//!   The mechanism tracks "packets in the class" per flow as (packets accepted − dequeued),
//!   resynchronised to `flow_qlen` at each dequeue of the flow; if the class drops a queued
//!   packet, the count is high until the flow's next dequeue (at worst until the sender's
//!   retransmission timeout brings one).
//! - **`flow_qlen == None`** (the class is a FIFO, no per-flow queues): zero-timer falls back to
//!   the mechanism's own count of the flow's packets in the class FIFO (accepted − dequeued) and
//!   applies the same table to it; counted as `dequeues_without_qlen`. (The factory cannot reject
//!   this at build time: it does not see the class's queue.)
//! - **Bounds.** At most `max_held_per_flow` ACKs wait per flow; beyond it the oldest is released
//!   at once (never dropped), so the flow's excess falls back to the class queue. With no class
//!   rate set (0), on-off and basic hold nothing.
//! - A late `on_timeout` (live driver) runs the slots it missed, at most 64 per call.
//!
//! **What it is not.** No header rewrite, no RTT measurement outside `basic`, no weights between
//! flows of a class; ACKs are never dropped. O(1) per packet (on-off, zero-timer) and O(n) per
//! slot; no allocation per packet in steady state (per-flow queues are reused).

use super::ackmech::{AckMechanism, FlowKey};
use super::guard::SynOptions;
use super::guard::{Check, SeqGuard};
use super::mechstats::MechStats;
pub use super::mechstats::{PostAckFlow, PostAckReport, PostAckStats};
use crate::shape::LATE_WAKEUP_CATCHUP;
use crate::time::{Dur, Time};
use ackshape_wire::{Packet, SeqNum, TcpFlags};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Flow index: keyed SipHash (`crate::hash`), keyed by the gateway.
type FlowIndex = crate::hash::KeyedMap<FlowKey, usize>;

/// Which PostACK (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Fig. 3: per-ACK delay from the estimated window and WAN RTT.
    Basic,
    /// Fig. 4/5: per-class ACK-pacing timer with the QueueRelocator (the default).
    #[default]
    OnOff,
    /// Fig. 13/14: clocked by the class's per-flow queues (PFQ+DRR), no timer.
    ZeroTimer,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Basic => "basic",
            Variant::OnOff => "on-off",
            Variant::ZeroTimer => "zero-timer",
        }
    }
}

/// `mechanism = { kind = "postack", … }`. Every key is optional.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostAckConfig {
    /// `"basic"`, `"on-off"` (default) or `"zero-timer"`.
    #[serde(default)]
    pub variant: Variant,
    /// Bytes of a full-size data packet as the class counts them (IP bytes plus the gateway's
    /// per-packet overhead): the MSS of Δ_c = MSS / BW_i and of the basic delay. 0 (default) =
    /// learned: the largest IP data packet seen in the class (1500 until the first one) plus the
    /// gateway's overhead.
    #[serde(default)]
    pub packet_bytes: u32,
    /// A flow with no data for this long (and no ACK held) leaves n, ms. Default 1000.
    #[serde(default = "d_idle")]
    pub idle_timeout_ms: u64,
    /// ACKs held per flow at most; beyond it the oldest is released at once. Default 1024.
    #[serde(default = "d_max_held")]
    pub max_held_per_flow: usize,
    /// zero-timer: release one ACK when a dequeue leaves the flow's per-flow queue with at most
    /// this many packets. Default 0 (the paper's table); 1 keeps a packet per flow as a cushion.
    #[serde(default)]
    pub keep_in_pfq: usize,
    /// on-off only: spread each round of slots over the round. The class timer runs n times as
    /// often (period MSS / BW_c) and each slot serves the next active flow in turn, with the
    /// same QR / `i.out` rule; each flow still gets one slot per Δ_c = n·MSS/BW_c. Default false:
    /// the paper's Fig. 4, where every slot serves all n flows at once (an n-ACK burst).
    #[serde(default)]
    pub spread_slots: bool,
    /// basic only: the longest one ACK is delayed, ms (None: [`DEFAULT_MAX_HOLD_MS`]). Fig. 3's delay grows with
    /// the flow's estimated window; an ACK held past the sender's retransmission timeout only
    /// stalls it, and an estimate no real window explains (a stray segment far ahead) would hold
    /// the flow's ACKs for hours.
    #[serde(default)]
    pub max_hold_ms: Option<u64>,
}

/// The basic variant's default longest delay of one ACK (60 s).
pub const DEFAULT_MAX_HOLD_MS: u64 = 60_000;

fn d_idle() -> u64 {
    1000
}

fn d_max_held() -> usize {
    1024
}

impl Default for PostAckConfig {
    fn default() -> Self {
        PostAckConfig {
            variant: Variant::default(),
            packet_bytes: 0,
            idle_timeout_ms: d_idle(),
            max_held_per_flow: d_max_held(),
            keep_in_pfq: 0,
            spread_slots: false,
            max_hold_ms: None,
        }
    }
}

/// The keys [`PostAckConfig`] accepts.
pub const KEYS: &[&str] =
    &["variant", "packet_bytes", "idle_timeout_ms", "max_held_per_flow", "keep_in_pfq", "spread_slots", "max_hold_ms"];

impl PostAckConfig {
    /// Parse the `mechanism` table (without `kind`). Errors are `(key, message)`.
    pub fn from_table(t: &crate::table::Table) -> Result<PostAckConfig, (String, String)> {
        use crate::table::{read, Error, Table};
        for k in t.keys() {
            if !KEYS.contains(&k.as_str()) {
                return Err((
                    k.clone(),
                    format!("unknown key for mechanism \"postack\"; expected one of {}", KEYS.join(", ")),
                ));
            }
        }
        for k in KEYS {
            if let Some(v) = t.get(*k) {
                let mut one = Table::new();
                one.insert(k.to_string(), v.clone());
                if let Err(e) = read::<PostAckConfig, Error>(one) {
                    return Err((k.to_string(), e.0.trim_end().to_string()));
                }
            }
        }
        let cfg: PostAckConfig = read(t.clone()).map_err(|e: Error| ("kind".to_string(), e.0))?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.packet_bytes != 0 && self.packet_bytes < 64 {
            return Err((
                "packet_bytes".into(),
                format!("expected 0 (learned) or ≥ 64 bytes, got {}", self.packet_bytes),
            ));
        }
        if self.spread_slots && self.variant != Variant::OnOff {
            return Err(("spread_slots".into(), "applies to variant = \"on-off\" only".into()));
        }
        if self.max_held_per_flow == 0 {
            return Err(("max_held_per_flow".into(), "expected ≥ 1".into()));
        }
        if self.idle_timeout_ms == 0 {
            return Err(("idle_timeout_ms".into(), "expected ≥ 1 ms".into()));
        }
        match self.max_hold_ms {
            Some(0) => return Err(("max_hold_ms".into(), "expected ≥ 1 ms".into())),
            Some(_) if self.variant != Variant::Basic => {
                return Err(("max_hold_ms".into(), "applies to variant = \"basic\" only".into()))
            }
            _ => {}
        }
        Ok(())
    }
}

struct Held {
    arrived: Time,
    /// basic: the release deadline.
    due: Time,
    pkt: Packet,
}

struct Flow {
    key: FlowKey,
    live: bool,
    /// What may be learnt from a packet (RFC 5961 spirit; see `guard`).
    guard: SeqGuard,
    gen: u64,
    held: VecDeque<Held>,
    // on-off
    /// i.out in payload bytes (1 segment = `mss`).
    out: u64,
    /// Largest payload seen (≥ 1 once data was seen).
    mss: u32,
    seen_data: bool,
    last_data: Time,
    active: bool,
    // zero-timer
    in_class: usize,
    // basic
    snd_nxt: Option<SeqNum>,
    ack_sent: Option<SeqNum>,
    timing: Option<(SeqNum, Time)>,
    min_rtt: Option<Dur>,
    /// The deadline of this flow's live heap entry.
    sched: Option<Time>,
    // stats
    held_max: usize,
    released: u64,
    skipped: u64,
}

impl Flow {
    fn new(key: FlowKey, gen: u64, held: VecDeque<Held>) -> Flow {
        Flow {
            key,
            live: true,
            guard: SeqGuard::new(),
            gen,
            held,
            out: 0,
            mss: 0,
            seen_data: false,
            last_data: Time::ZERO,
            active: false,
            in_class: 0,
            snd_nxt: None,
            ack_sent: None,
            timing: None,
            min_rtt: None,
            sched: None,
            held_max: 0,
            released: 0,
            skipped: 0,
        }
    }
}

/// Maximum slots run by one `on_timeout` call (a late live timer catches up to this).
const MAX_CATCHUP_SLOTS: u32 = 64;

/// PostACK for one class. See the module documentation.
pub struct PostAck {
    cfg: PostAckConfig,
    rate_bps: u64,
    flows: Vec<Flow>,
    index: FlowIndex,
    free: Vec<usize>,
    spare_queues: Vec<VecDeque<Held>>,
    next_gen: u64,
    /// Flows counted in n.
    n: usize,
    learned_pkt: u32,
    /// The gateway's per-packet overhead, added to a learned packet size.
    overhead: u32,
    // on-off timer
    delta: Option<Dur>,
    last_slot: Option<Time>,
    next_slot: Option<Time>,
    rr: usize,
    // basic deadlines: (due, slot, gen)
    heap: BinaryHeap<Reverse<(Time, usize, u64)>>,
    last_recount: Time,
    /// The packet of the last `on_ack` was forwarded untouched as inconsistent.
    last_untouched: bool,
    stats: PostAckStats,
}

impl PostAck {
    pub fn new(cfg: PostAckConfig) -> PostAck {
        PostAck {
            cfg,
            rate_bps: 0,
            flows: Vec::new(),
            index: crate::hash::map(crate::hash::HashKey::default()),
            free: Vec::new(),
            spare_queues: Vec::new(),
            next_gen: 0,
            n: 0,
            learned_pkt: 0,
            overhead: 0,
            delta: None,
            last_slot: None,
            next_slot: None,
            rr: 0,
            heap: BinaryHeap::new(),
            last_recount: Time::ZERO,
            last_untouched: false,
            stats: PostAckStats::default(),
        }
    }

    pub fn config(&self) -> &PostAckConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &PostAckStats {
        &self.stats
    }
    /// Flows counted in n.
    pub fn active_flows(&self) -> usize {
        self.n
    }
    /// The on-off slot period Δ_c now (None: no rate, or another variant).
    pub fn slot_period(&self) -> Option<Dur> {
        self.delta
    }
    /// Bytes the class is charged for a full-size data packet, as used for Δ_c: the configured
    /// `packet_bytes`, or the largest IP data packet seen (1500 before the first) plus the
    /// gateway's overhead.
    /// The report [`AckMechanism::stats`] gives.
    pub fn report(&self) -> PostAckReport {
        // The first flows only, as TCR's `per_flow`: the live gateway takes these stats every
        // second on its data-plane thread, and listing 100 000 flows took 1.4 s there (wall, on a
        // loaded machine; 15 MB of JSON; docs/benchmarks.md, "PostACK with many flows").
        let flows = self
            .flows
            .iter()
            .filter(|f| f.live)
            .take(PostAckReport::LISTED)
            .map(|f| PostAckFlow {
                flow: format!("{}:{}>{}:{}", f.key.0, f.key.2, f.key.1, f.key.3),
                held: f.held.len(),
                held_max: f.held_max,
                released: f.released,
                qr_skips: f.skipped,
                out_segments: if f.mss == 0 { 0.0 } else { f.out as f64 / f.mss as f64 },
                in_class: f.in_class,
                active: f.active,
                min_rtt_ms: f.min_rtt.map(|d| d.as_secs_f64() * 1e3),
            })
            .collect();
        let hold_ms_mean = if self.stats.released == 0 {
            0.0
        } else {
            self.stats.hold_ns_sum as f64 / self.stats.released as f64 / 1e6
        };
        PostAckReport {
            mechanism: "postack",
            variant: self.cfg.variant.name(),
            rate_bps: self.rate_bps,
            active_flows: self.n,
            slot_period_ms: self.delta.map(|d| d.as_secs_f64() * 1e3),
            packet_bytes: self.packet_bytes(),
            acks_held: self.stats.held_now,
            acks_held_max: self.stats.held_max,
            hold_ms_mean,
            hold_ms_max: self.stats.hold_ns_max as f64 / 1e6,
            counters: self.stats,
            flows_live: self.index.len(),
            flows,
        }
    }

    pub fn packet_bytes(&self) -> u32 {
        if self.cfg.packet_bytes != 0 {
            self.cfg.packet_bytes
        } else if self.learned_pkt != 0 {
            self.learned_pkt + self.overhead
        } else {
            1500 + self.overhead
        }
    }
    /// ACKs held for `flow` now.
    pub fn held_for(&self, flow: &FlowKey) -> usize {
        self.index.get(flow).map_or(0, |&s| self.flows[s].held.len())
    }
    /// on-off: `i.out` of `flow`, in segments.
    pub fn out_segments(&self, flow: &FlowKey) -> Option<f64> {
        self.index.get(flow).map(|&s| {
            let f = &self.flows[s];
            if f.mss == 0 {
                0.0
            } else {
                f.out as f64 / f.mss as f64
            }
        })
    }
    /// Bytes of mechanism state for one flow with an empty ACK queue (struct + index entry),
    /// and per held ACK.
    pub fn state_bytes_per_flow() -> (usize, usize) {
        (
            std::mem::size_of::<Flow>() + std::mem::size_of::<(FlowKey, usize)>() + std::mem::size_of::<u64>(),
            std::mem::size_of::<Held>(),
        )
    }

    fn slot_of(&mut self, key: FlowKey) -> usize {
        if let Some(&s) = self.index.get(&key) {
            return s;
        }
        let q = self.spare_queues.pop().unwrap_or_default();
        let gen = self.next_gen;
        self.next_gen += 1;
        let f = Flow::new(key, gen, q);
        let s = match self.free.pop() {
            Some(s) => {
                self.flows[s] = f;
                s
            }
            None => {
                self.flows.push(f);
                self.flows.len() - 1
            }
        };
        self.index.insert(key, s);
        s
    }

    fn shaping(&self) -> bool {
        match self.cfg.variant {
            Variant::ZeroTimer => true,
            _ => self.rate_bps > 0,
        }
    }

    /// Δ_c for the current n and rate.
    fn recompute_delta(&mut self, now: Time) {
        if self.cfg.variant != Variant::OnOff || self.rate_bps == 0 {
            // Rate 0 = not shaping: new ACKs pass, and what is held drains on the old grid.
            return;
        }
        // Spread slots: one flow per slot, so the slot period is a round (Δ_c) over n.
        let n = if self.cfg.spread_slots { 1 } else { self.n.max(1) };
        let d = Dur::tx_time(self.packet_bytes() as usize * n, self.rate_bps).max(Dur(1));
        if self.delta != Some(d) {
            self.delta = Some(d);
            if self.next_slot.is_some() {
                self.next_slot = Some(self.grid_next(now));
            }
        }
    }

    /// The first slot ≥ now on the grid last_slot + k·Δ (now + Δ if there is no grid yet).
    fn grid_next(&self, now: Time) -> Time {
        let d = self.delta.expect("on-off with a rate").0;
        match self.last_slot {
            None => now + Dur(d),
            Some(l) => {
                let first = l + Dur(d);
                if first >= now {
                    first
                } else {
                    let k = now.since(l).0.div_ceil(d);
                    l + Dur(k.saturating_mul(d))
                }
            }
        }
    }

    fn ensure_timer(&mut self, now: Time) {
        if self.cfg.variant == Variant::OnOff && self.next_slot.is_none() && self.delta.is_some() {
            if self.last_slot.is_none() {
                // The grid starts when the timer first starts.
                self.last_slot = Some(now);
            }
            self.next_slot = Some(self.grid_next(now));
        }
    }

    fn set_active(&mut self, s: usize, active: bool, now: Time) {
        if self.flows[s].active != active {
            self.flows[s].active = active;
            if active {
                self.n += 1;
            } else {
                self.n -= 1;
            }
            self.recompute_delta(now);
        }
    }

    /// Emit `pkt` to the sender of flow slot `s` (tracks the last ACK released, for basic).
    fn emit(flows: &mut [Flow], s: usize, pkt: Packet, out: &mut Vec<Packet>) {
        if let Some(t) = pkt.tcp() {
            if t.flags.contains(TcpFlags::ACK) {
                let f = &mut flows[s];
                f.ack_sent = Some(match f.ack_sent {
                    Some(a) => a.max(t.ack),
                    None => t.ack,
                });
            }
        }
        out.push(pkt);
    }

    /// Release the head ACK of flow slot `s`.
    fn release_head(&mut self, s: usize, now: Time, out: &mut Vec<Packet>) -> bool {
        let Some(h) = self.flows[s].held.pop_front() else { return false };
        let hold = now.since(h.arrived).0;
        self.stats.released += 1;
        self.stats.held_now -= 1;
        self.stats.hold_ns_sum += hold;
        self.stats.hold_ns_max = self.stats.hold_ns_max.max(hold);
        self.flows[s].released += 1;
        Self::emit(&mut self.flows, s, h.pkt, out);
        true
    }

    /// Release everything held for slot `s`; returns how many.
    fn flush(&mut self, s: usize, now: Time, out: &mut Vec<Packet>) -> u64 {
        let mut k = 0;
        while self.release_head(s, now, out) {
            k += 1;
        }
        k
    }

    fn push_held(&mut self, s: usize, now: Time, due: Time, pkt: Packet, out: &mut Vec<Packet>) {
        let f = &mut self.flows[s];
        f.held.push_back(Held { arrived: now, due, pkt });
        f.held_max = f.held_max.max(f.held.len());
        self.stats.acks_queued += 1;
        self.stats.held_now += 1;
        self.stats.held_max = self.stats.held_max.max(self.stats.held_now);
        if self.flows[s].held.len() > self.cfg.max_held_per_flow {
            self.release_head(s, now, out);
            self.stats.released_by_overflow += 1;
        }
    }

    /// A flow is counted in n while it sent data recently or has ACKs held.
    fn is_active(&self, f: &Flow, now: Time) -> bool {
        f.live
            && (!f.held.is_empty()
                || (f.seen_data && now.since(f.last_data) < Dur::from_millis(self.cfg.idle_timeout_ms)))
    }

    // ---- on-off ----

    fn run_slot(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.cfg.spread_slots {
            return self.run_spread_slot(now, out);
        }
        self.stats.slots += 1;
        self.recount(now);
        let len = self.flows.len();
        if len == 0 {
            return;
        }
        let start = self.rr % len;
        self.rr = self.rr.wrapping_add(1);
        for j in 0..len {
            let s = (start + j) % len;
            let f = &mut self.flows[s];
            if !f.live || (f.mss == 0 && f.held.is_empty()) {
                continue;
            }
            let seg = f.mss.max(1) as u64;
            if f.out > seg {
                // QR: the flow put more data into the class than its slots paid for.
                f.out -= seg;
                f.skipped += 1;
                self.stats.qr_skips += 1;
            } else {
                f.out = f.out.saturating_sub(seg);
                if self.release_head(s, now, out) {
                    self.stats.released_by_rule += 1;
                } else {
                    self.stats.unused_slots += 1;
                }
            }
        }
    }

    /// Spread slots: serve the next active flow after the cursor (the QR rule as in
    /// [`Self::run_slot`]). n is recounted when the cursor wraps (once per round), and flows
    /// that went idle then forget their `i.out` (they get no slots while idle).
    fn run_spread_slot(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stats.slots += 1;
        let len = self.flows.len();
        if len == 0 {
            return;
        }
        let active = |f: &Flow| f.live && f.active;
        if self.rr >= len {
            self.rr = 0;
        }
        if self.rr == 0 {
            self.new_round(now);
        }
        let s = match (self.rr..len).find(|&s| active(&self.flows[s])) {
            Some(s) => s,
            None => {
                self.new_round(now);
                match (0..len).find(|&s| active(&self.flows[s])) {
                    Some(s) => s,
                    None => {
                        self.rr = 0;
                        self.stats.unused_slots += 1;
                        return;
                    }
                }
            }
        };
        self.rr = s + 1;
        let f = &mut self.flows[s];
        let seg = f.mss.max(1) as u64;
        if f.out > seg {
            f.out -= seg;
            f.skipped += 1;
            self.stats.qr_skips += 1;
        } else {
            f.out = f.out.saturating_sub(seg);
            if self.release_head(s, now, out) {
                self.stats.released_by_rule += 1;
            } else {
                self.stats.unused_slots += 1;
            }
        }
    }

    /// Spread slots: a new round recounts n; flows that went idle forget their `i.out`.
    fn new_round(&mut self, now: Time) {
        self.recount(now);
        for f in self.flows.iter_mut().filter(|f| f.live && !f.active) {
            f.out = 0;
        }
    }

    fn needs_slots(&self) -> bool {
        self.flows.iter().any(|f| f.live && (f.out > 0 || !f.held.is_empty()))
    }

    // ---- basic ----

    fn basic_delay(&self, f: &Flow) -> Dur {
        let (Some(rtt), Some(nxt), Some(acked)) = (f.min_rtt, f.snd_nxt, f.ack_sent) else { return Dur::ZERO };
        if f.mss == 0 || self.rate_bps == 0 {
            return Dur::ZERO;
        }
        // More outstanding than any TCP window can hold (2^30 bytes with window scaling, RFC
        // 7323): the last ACK released was not one of this sender's (a stray or forged ACK
        // number); the estimate means nothing, so no delay. (It once held every later ACK of
        // the flow for years.)
        let outstanding = nxt.diff(acked);
        if outstanding > MAX_TCP_WINDOW {
            return Dur::ZERO;
        }
        let w_pkts = outstanding.max(0) as f64 / f.mss as f64;
        let bw_i = self.rate_bps as f64 / self.n.max(1) as f64;
        let pkt_bits = self.packet_bytes() as f64 * 8.0;
        let w_w = bw_i * rtt.as_secs_f64() / pkt_bits;
        if w_pkts <= w_w {
            return Dur::ZERO;
        }
        Dur::from_secs_f64((w_pkts - w_w) * pkt_bits / bw_i)
            .min(Dur::from_millis(self.cfg.max_hold_ms.unwrap_or(DEFAULT_MAX_HOLD_MS)))
    }

    /// Keep one heap entry per flow, at its head ACK's deadline.
    fn schedule_head(&mut self, s: usize) {
        let f = &mut self.flows[s];
        if let Some(h) = f.held.front() {
            if f.sched != Some(h.due) {
                f.sched = Some(h.due);
                self.heap.push(Reverse((h.due, s, f.gen)));
            }
        }
    }

    /// Recount n (flows go idle with time). O(flows).
    fn recount(&mut self, now: Time) {
        self.last_recount = now;
        for s in 0..self.flows.len() {
            if self.flows[s].live {
                let a = self.is_active(&self.flows[s], now);
                self.set_active(s, a, now);
            }
        }
    }
}

/// The largest window a TCP sender can have outstanding (65535 << 14, RFC 7323), bytes.
const MAX_TCP_WINDOW: i32 = 1 << 30;

fn is_control(pkt: &Packet) -> bool {
    match pkt.tcp() {
        Some(t) => {
            pkt.payload_len > 0
                || t.flags.0 & (TcpFlags::SYN.0 | TcpFlags::FIN.0 | TcpFlags::RST.0) != 0
                || !t.flags.contains(TcpFlags::ACK)
        }
        None => true,
    }
}

impl AckMechanism for PostAck {
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        crate::hash::rekey(&mut self.index, key);
    }
    fn set_overhead(&mut self, bytes: u32) {
        self.overhead = bytes;
    }
    fn set_rate(&mut self, now: Time, bps: u64) {
        self.rate_bps = bps;
        self.recompute_delta(now);
    }

    fn on_data(&mut self, now: Time, flow: FlowKey, pkt: &Packet) {
        let Some(t) = pkt.tcp() else { return };
        self.stats.data_in += 1;
        let s = self.slot_of(flow);
        if self.flows[s].guard.sender_packet(pkt) == Check::Ignore {
            // A SYN on an established flow, or a segment outside the receiver's window: it is in
            // the class (counted for the dequeues) but moves nothing.
            self.flows[s].in_class += 1;
            let g = &mut self.stats.inconsistent;
            if t.flags.contains(TcpFlags::SYN) {
                g.syn_ignored += 1;
            } else if t.flags.contains(TcpFlags::RST) {
                g.rst_ignored += 1;
            } else {
                g.data_ignored += 1;
            }
            return;
        }
        let syn = t.flags.contains(TcpFlags::SYN);
        let fin = t.flags.contains(TcpFlags::FIN);
        let payload = pkt.payload_len;
        {
            let f = &mut self.flows[s];
            f.in_class += 1;
            // basic: the sender's snd_nxt and one timed segment (Karn).
            let end = t.seq + payload + syn as u32 + fin as u32;
            let fresh = f.snd_nxt.is_none_or(|n| t.seq >= n);
            if !fresh {
                if let Some((ts, _)) = f.timing {
                    if t.seq < ts {
                        f.timing = None;
                    }
                }
            }
            if payload > 0 && fresh && f.timing.is_none() {
                f.timing = Some((end, now));
            }
            f.snd_nxt = Some(match f.snd_nxt {
                Some(n) => n.max(end),
                None => end,
            });
            if syn && f.ack_sent.is_none() {
                // Nothing of the data stream is acknowledged before the SYN-ACK.
                f.ack_sent = Some(t.seq);
            }
        }
        if payload == 0 {
            return;
        }
        if self.cfg.packet_bytes == 0 {
            let l = pkt.ip_len() as u32;
            if l > self.learned_pkt {
                self.learned_pkt = l;
                self.recompute_delta(now);
            }
        }
        {
            let f = &mut self.flows[s];
            f.seen_data = true;
            f.last_data = now;
            f.mss = f.mss.max(payload);
            f.out += payload as u64;
        }
        self.set_active(s, true, now);
        if self.cfg.variant == Variant::OnOff {
            self.ensure_timer(now);
        }
    }

    fn on_ack(&mut self, now: Time, flow: FlowKey, pkt: Packet, out: &mut Vec<Packet>) {
        self.stats.acks_in += 1;
        self.last_untouched = false;
        let s = self.slot_of(flow);
        // Only a packet consistent with what the gateway forwarded is held or flushes what is
        // held (see `guard`): a spoofed pure ACK is dropped (its sender would discard it:
        // RFC 5961 §5.2), anything else goes on untouched, out of the flow's order, for its
        // endpoint to judge.
        if self.flows[s].guard.receiver_packet(&pkt) == Check::Ignore {
            let flags = pkt.tcp().map_or(TcpFlags(0), |t| t.flags);
            let g = &mut self.stats.inconsistent;
            if flags.contains(TcpFlags::SYN) {
                g.syn_ignored += 1;
            } else if flags.contains(TcpFlags::RST) {
                g.rst_ignored += 1;
            } else if pkt.payload_len == 0 && !flags.contains(TcpFlags::FIN) && flags.contains(TcpFlags::ACK) {
                g.acks_dropped += 1;
                return;
            } else {
                g.ack_path_untouched += 1;
            }
            self.last_untouched = true;
            self.stats.forwarded_now += 1;
            out.push(pkt);
            return;
        }
        // basic: the RTT sample.
        if let Some(t) = pkt.tcp() {
            if t.flags.contains(TcpFlags::ACK) {
                let f = &mut self.flows[s];
                if let Some((end, t0)) = f.timing {
                    if t.ack >= end {
                        let r = now.since(t0);
                        f.min_rtt = Some(f.min_rtt.map_or(r, |m| m.min(r)));
                        f.timing = None;
                    }
                }
            }
        }
        if is_control(&pkt) || !self.shaping() || !self.flows[s].seen_data {
            let k = self.flush(s, now, out);
            self.stats.released_by_flush += k;
            self.stats.forwarded_now += 1;
            Self::emit(&mut self.flows, s, pkt, out);
            return;
        }
        match self.cfg.variant {
            Variant::OnOff => {
                self.push_held(s, now, now, pkt, out);
                self.set_active(s, true, now);
                self.ensure_timer(now);
            }
            Variant::ZeroTimer => {
                let f = &self.flows[s];
                if f.in_class > 0 {
                    self.push_held(s, now, now, pkt, out);
                } else {
                    // P0-16: nothing of this flow is in the class, so no dequeue will clock its
                    // ACKs out. If this ACK covers everything the sender sent, the flow is idle
                    // or done: release all, in order. Otherwise release one ACK's worth of
                    // progress (the held duplicates ahead of the first ACK that advances the
                    // sender's window, and that one), which restarts the dequeue clock; the
                    // new ACK waits behind what is left.
                    let all = pkt.tcp().zip(f.snd_nxt).is_some_and(|(t, n)| t.ack >= n);
                    if all || f.held.is_empty() {
                        let k = self.flush(s, now, out);
                        self.stats.released_by_empty_hook += k;
                        self.stats.forwarded_now += 1;
                        Self::emit(&mut self.flows, s, pkt, out);
                    } else {
                        self.push_held(s, now, now, pkt, out);
                        loop {
                            let before = self.flows[s].ack_sent;
                            if !self.release_head(s, now, out) {
                                break;
                            }
                            self.stats.released_by_empty_hook += 1;
                            if self.flows[s].ack_sent != before {
                                break;
                            }
                        }
                    }
                }
            }
            Variant::Basic => {
                if now.since(self.last_recount) >= Dur::from_millis(self.cfg.idle_timeout_ms / 2) {
                    self.recount(now);
                }
                self.set_active(s, true, now);
                let d = self.basic_delay(&self.flows[s]);
                let f = &self.flows[s];
                let due = match f.held.back() {
                    Some(b) => b.due.max(now + d),
                    None => now + d,
                };
                if f.held.is_empty() && due <= now {
                    self.stats.forwarded_now += 1;
                    Self::emit(&mut self.flows, s, pkt, out);
                } else {
                    self.push_held(s, now, due, pkt, out);
                    self.schedule_head(s);
                }
            }
        }
    }

    fn on_receiver_open(&mut self, _now: Time, flow: FlowKey, sender: &SynOptions, receiver: &SynOptions) {
        let s = self.slot_of(flow);
        self.flows[s].guard.receiver_opened(sender, receiver);
    }

    fn seq_facts(&self, flow: FlowKey) -> Option<SeqGuard> {
        self.index.get(&flow).map(|&s| self.flows[s].guard)
    }

    fn adopt_reverse_facts(&mut self, _now: Time, flow: FlowKey, reverse: &SeqGuard) {
        let s = self.slot_of(flow);
        self.flows[s].guard.adopt_reverse(reverse);
    }

    fn last_ack_untouched(&self) -> bool {
        self.last_untouched
    }

    fn rst_in_window(&self, flow: FlowKey, pkt: &Packet, from_sender: bool) -> bool {
        let Some(&s) = self.index.get(&flow) else { return true };
        let g = &self.flows[s].guard;
        if from_sender {
            g.rst_from_sender_ok(pkt)
        } else {
            g.rst_from_receiver_ok(pkt)
        }
    }

    fn on_class_dequeue(&mut self, now: Time, flow: FlowKey, flow_qlen: Option<usize>, out: &mut Vec<Packet>) {
        let Some(&s) = self.index.get(&flow) else { return };
        let f = &mut self.flows[s];
        let q = match flow_qlen {
            Some(q) => q,
            None => {
                self.stats.dequeues_without_qlen += 1;
                f.in_class.saturating_sub(1)
            }
        };
        f.in_class = q;
        if self.cfg.variant != Variant::ZeroTimer {
            return;
        }
        self.stats.dequeues += 1;
        if q > self.cfg.keep_in_pfq {
            // The paper's qlen > 1: the flow has more queued; its ACKs wait.
            self.stats.table_holds += 1;
        } else if self.release_head(s, now, out) {
            // The paper's qlen == 1: one ACK goes with the flow's last queued packet.
            self.stats.released_by_rule += 1;
        }
    }

    fn on_flow_end(&mut self, now: Time, flow: FlowKey, out: &mut Vec<Packet>) {
        let Some(s) = self.index.remove(&flow) else { return };
        let k = self.flush(s, now, out);
        self.stats.released_by_flow_end += k;
        if self.flows[s].active {
            self.flows[s].active = false;
            self.n -= 1;
            self.recompute_delta(now);
        }
        let f = &mut self.flows[s];
        f.live = false;
        let q = std::mem::take(&mut f.held);
        self.spare_queues.push(q);
        self.free.push(s);
    }

    fn poll_timeout(&self) -> Option<Time> {
        match self.cfg.variant {
            Variant::OnOff => self.next_slot,
            Variant::Basic => self.heap.peek().map(|r| r.0 .0),
            Variant::ZeroTimer => None,
        }
    }

    fn on_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
        match self.cfg.variant {
            Variant::OnOff => {
                // A late timer (the live driver) runs the slots due within LATE_WAKEUP_CATCHUP of
                // now, and at least the latest one; older ones are given up, as the class's line
                // gives up that much of its service. Run anyway, their ACKs would trigger data the
                // line can no longer send in their time, and it would stay queued in the class.
                if let (Some(t), Some(d)) = (self.next_slot, self.delta) {
                    if t <= now && now.since(t) > LATE_WAKEUP_CATCHUP {
                        // Slots t + j·d for j < due are due; those with j ≥ first are recent.
                        let late = now.since(t).0;
                        let due = late / d.0 + 1;
                        let first = (late - LATE_WAKEUP_CATCHUP.0).div_ceil(d.0);
                        let drop = first.min(due - 1);
                        self.next_slot = Some(t + Dur(drop * d.0));
                        self.stats.late_slots_given_up += drop;
                    }
                }
                let mut ran = 0;
                while let Some(t) = self.next_slot {
                    if t > now || ran >= MAX_CATCHUP_SLOTS {
                        break;
                    }
                    self.last_slot = Some(t);
                    self.run_slot(now, out);
                    ran += 1;
                    self.next_slot = self.delta.map(|d| t + d);
                }
                if self.next_slot.is_some_and(|t| t <= now) {
                    // Too late to catch up: restart the grid from now.
                    self.last_slot = Some(now);
                    self.next_slot = self.delta.map(|d| now + d);
                }
                if !self.needs_slots() {
                    self.next_slot = None;
                }
            }
            Variant::Basic => {
                while let Some(&Reverse((due, s, gen))) = self.heap.peek() {
                    if due > now {
                        break;
                    }
                    self.heap.pop();
                    let f = &mut self.flows[s];
                    if !f.live || f.gen != gen || f.sched != Some(due) {
                        continue; // stale
                    }
                    f.sched = None;
                    while self.flows[s].held.front().is_some_and(|h| h.due <= now) {
                        self.release_head(s, now, out);
                        self.stats.released_by_rule += 1;
                    }
                    self.schedule_head(s);
                }
            }
            Variant::ZeroTimer => {}
        }
    }

    fn acks_held(&self) -> usize {
        self.stats.held_now as usize
    }

    fn stats(&self) -> MechStats {
        MechStats::PostAck(self.report())
    }
}
