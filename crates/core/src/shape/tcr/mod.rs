//! TCP Rate Control (TCR, paper 001; paper 000 §2.4) as an [`AckMechanism`]: a gateway
//! class's rate is divided among its TCP flows ([`alloc`]), and each flow is held to its
//! allocation A_i by rewriting the receiver window of the ACKs going back to its sender
//! (window sizing) and by clocking those ACKs out at the allocated rate (ACK pacing).
//!
//! ## Per flow (constant space)
//!
//! - **ACK queue as edges** (paper 001 §1.1.2): `left` is the highest ACK number forwarded to
//!   the sender, `right` the highest the receiver has sent, plus a count of duplicate ACKs and
//!   the latest real ACK as a template. No ACK is stored: paced ACKs are synthesised from the
//!   template with the ACK number advancing by one MSS per release ([`Release::Mss`], default;
//!   a delayed or stretch ACK covering k segments becomes k paced ACKs, which keeps the rate
//!   exact with delayed ACKs, trap P0-10/X-3) or by the receiver's own stride
//!   ([`Release::ReceiverAck`], the pacing interval scaled by the bytes covered). Timestamps
//!   and the ECE flag come from the newest packet of the receiver, the sequence number is the
//!   receiver's next one (so a synthesised ACK is never "old" to the sender).
//! - **Duplicate ACKs** are counted and sent, paced, after the ACK carrying `right` (they keep
//!   the window of that ACK, so they still count as duplicates). **SACK blocks** are withheld
//!   (removed) from every ACK below `right`: the receiver's first hole is at `right`, so a block
//!   shown with a smaller ACK number would report data as missing that has arrived.
//! - **Piggy-backed ACKs** (data from the receiver): the ACK information is recorded, then the
//!   packet's ACK number is set to what pacing allows (it carries a release if one is due) and
//!   its window and SACK are rewritten as for a paced ACK. Data is never held.
//! - **RTT**: one timed segment at a time (Karn: a retransmission overlapping it cancels it),
//!   from when the class sends it ([`RttFrom::Dequeue`], i.e. excluding the gateway's own
//!   queue, paper 000's D_w) to when the ACK covering it reaches the gateway, so neither the
//!   data queue nor the ACK queue counts. The handshake (SYN → SYN-ACK) gives the first sample.
//!   Samples are smoothed by an EWMA (gain `rtt_gain`, as TCP's SRTT; the "inaccurate D_w"
//!   side effect of paper 000 §2.4.3 item 3); `window_rtt = "min"` sizes windows with the
//!   smallest sample instead (queueing beyond the gateway excluded too).
//! - **Window**: W = A·RTT·MSS/S + (k − 1)·MSS (A counts class bytes, S = MSS + headers +
//!   `overhead_bytes` is a full segment as the class counts it, so W is in sequence bytes; k is
//!   an EWMA of the segments each receiver ACK covers, ≈ 2 with delayed ACKs: an ACK covering k
//!   segments is released over k pacing slots, so k − 1 segments of the window wait here as
//!   ACKs; without this term delayed ACKs made flows window-limited at ~91 % of A), rounded to whole
//!   segments (up by default, `window_rounding`), at least `min_window_segments` (1) MSS
//!   (traps P0-11, P1-6: below one MSS, pacing alone enforces the rate). The written window
//!   moves towards W by at most `window_step_segments` per forwarded ACK, never moves the
//!   advertised right edge (ACK + window) backwards, and is never above the receiver's own
//!   (the raw field is only ever lowered). The receiver's window scale is learned from the
//!   SYN/SYN-ACK (it applies when both offered it); for a flow whose handshake was not seen the
//!   window is not rewritten (pacing still applies). The SYN-ACK's (unscaled) window is
//!   rewritten as well, which bounds the sender's initial burst.
//! - **Pacing**: [`Pacing::PerFlow`] (paper 001): a flow releases one segment's worth every
//!   Δ_i = S_i/A_i, on one timer heap for the class ([`AckMechanism::poll_timeout`] is the
//!   earliest release). [`Pacing::ClassTick`] (paper 000): one class timer of period
//!   T = n·S/B, each tick releasing one ACK per flow with ACKs queued (each flow earns
//!   A_i·T of credit per tick, one release with equal shares). Per flow: an ACK arriving
//!   after its slot has passed is released at once; there is no catching up after idle time.
//!   Class tick: the timer keeps its grid while no flow has an ACK queued ("times out at
//!   intervals of MSS_i/BW_i"), so an ACK arriving between two timeouts waits for the next.
//!   The LAN round trip of the window's RTT is timed from an ACK advertising a new right edge
//!   to data filling the window up to that edge as far as full segments go (an edge in
//!   2^scale-byte units is rarely a segment boundary).
//!
//! ## Flow life
//!
//! A flow joins the allocation at its first packet (normally the SYN) and leaves at the
//! sender's FIN or an RST (its queued ACKs are then released at once and later ACKs pass
//! unpaced, still within TCR's window or the edge already advertised) or at
//! [`AckMechanism::on_flow_end`]. Its rate is first sampled one sampling
//! interval after its first data segment; until then it is hungry.
//!
//! **What it is not.** It never holds data, never injects packets of its own beyond ACKs
//! derived from the receiver's, and does not rewrite windows of flows whose handshake it
//! did not see. No per-packet allocation in steady state: state is per flow, the timer heap
//! and scratch vectors grow to the number of flows and stay.

pub mod alloc;
mod config;
pub mod workload;
pub use config::*;

use super::ackmech::{AckMechanism, FlowKey};
use super::guard::SynOptions;
use super::guard::{Check, SeqGuard};
use super::mechstats::MechStats;
pub use super::mechstats::{FlowInfo, TcrReport, TcrStats};
use crate::shape::LATE_WAKEUP_CATCHUP;
use crate::time::{Dur, Time};
use ackshape_wire::{Packet, SeqNum, TcpFlags};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Allocation passes triggered by flows starting or ending run at most this often; a flow
/// that starts in between gets B/N (Eq. 2) until the pass. A pass costs O(n log n) in the
/// class's flows, so without this a burst of n flow starts would cost O(n² log n).
pub const MIN_PASS_GAP: Dur = Dur::from_millis(1);
/// ... and, with many flows, at most once per this much time per flow in the class (1 000 flows:
/// 1 ms, the same as [`MIN_PASS_GAP`]; 65 536 flows: 66 ms). A pass over n flows costs about
/// 40 ns per flow, so passes triggered by flows starting take at most a few percent of the data
/// plane however many there are: a flood of new flows into one class cannot keep the gateway busy
/// reallocating (1M new flows at 50 000/s took a live gateway's loop from 34 to 16 Mbit/s of an
/// established flow in another class when every start could trigger a pass each millisecond).
pub const PASS_GAP_PER_FLOW: Dur = Dur::from_micros(1);

/// The segment being timed for an RTT sample.
#[derive(Clone, Copy, Debug)]
struct Timed {
    seq_end: SeqNum,
    /// Index of the segment among the flow's packets handed to `on_data`.
    idx: u32,
    t_enq: Time,
    t_fwd: Option<Time>,
}

struct Flow {
    key: FlowKey,
    // --- handshake ---
    syn_seen: bool,
    snd_ws: bool,
    snd_ts: bool,
    snd_mss: Option<u16>,
    /// Scale of the window field in packets to the sender; None = unknown (no rewrite).
    rcv_scale: Option<u8>,
    /// What may be learnt from a packet (RFC 5961 spirit; see `guard`).
    guard: SeqGuard,
    mss: u32,
    /// `mss` came from the handshake or data (not the default).
    mss_known: bool,
    /// Header bytes of a data segment (IP + TCP with options).
    hdr: u32,
    // --- sender → receiver ---
    snd_valid: bool,
    snd_max: SeqNum,
    enq: u32,
    deq: u32,
    deq_seen: bool,
    timed: Option<Timed>,
    srtt: Option<f64>,
    rtt_min: f64,
    /// LAN side: the advertised right edge being timed (release → data reaching it), the
    /// highest edge advertised before it, and when it was advertised.
    lan_timed: Option<(SeqNum, SeqNum, Time)>,
    /// Highest right edge advertised.
    edge_max: Option<SeqNum>,
    /// Smallest LAN round trip seen (gateway → sender → gateway), s.
    lan_rtt: Option<f64>,
    // --- allocation ---
    joined: bool,
    finished: bool,
    idle: bool,
    alloc: f64,
    alloc_int: f64,
    alloc_t: Time,
    alloc_avg: f64,
    rate: f64,
    sampled: bool,
    bottlenecked: bool,
    bytes: u64,
    sample_start: Option<Time>,
    last_data: Time,
    // --- ACK queue ---
    edges: bool,
    left: SeqNum,
    right: SeqNum,
    dups: u32,
    stride: u32,
    /// EWMA of the receiver's ACK stride, in segments (≥ 1).
    stride_segs: f64,
    template: Option<Packet>,
    rcv_valid: bool,
    rcv_nxt: SeqNum,
    recv_field: u16,
    // --- window ---
    cur_win: f64,
    adv_right: Option<SeqNum>,
    last_field: u16,
    // --- pacing ---
    next_allowed: Time,
    last_base: Time,
    last_cost: f64,
    scheduled: Option<Time>,
    credit: f64,
    flush: bool,
    /// ACKs of this flow included in `Tcr::held`.
    counted: u32,
}

impl Flow {
    /// Counts in the allocation.
    #[inline]
    fn member(&self) -> bool {
        !self.finished && !self.idle
    }

    fn new(key: FlowKey, cfg: &TcrConfig, now: Time) -> Flow {
        let ip = if key.0.is_ipv4() { 20 } else { 40 };
        Flow {
            key,
            syn_seen: false,
            snd_ws: false,
            snd_ts: false,
            snd_mss: None,
            rcv_scale: None,
            guard: SeqGuard::new(),
            mss: cfg.default_mss,
            mss_known: false,
            hdr: ip + 20,
            snd_valid: false,
            snd_max: SeqNum(0),
            enq: 0,
            deq: 0,
            deq_seen: false,
            timed: None,
            srtt: None,
            rtt_min: f64::INFINITY,
            lan_timed: None,
            edge_max: None,
            lan_rtt: None,
            joined: true,
            finished: false,
            idle: false,
            alloc: 0.0,
            alloc_int: 0.0,
            alloc_t: now,
            alloc_avg: 0.0,
            rate: 0.0,
            sampled: false,
            bottlenecked: false,
            bytes: 0,
            sample_start: None,
            last_data: now,
            edges: false,
            left: SeqNum(0),
            right: SeqNum(0),
            dups: 0,
            stride: 0,
            stride_segs: 1.0,
            template: None,
            rcv_valid: false,
            rcv_nxt: SeqNum(0),
            recv_field: 0,
            cur_win: 0.0,
            adv_right: None,
            last_field: 0,
            next_allowed: Time::ZERO,
            last_base: Time::ZERO,
            last_cost: 0.0,
            scheduled: None,
            credit: 0.0,
            flush: false,
            counted: 0,
        }
    }

    /// A full segment as the class counts it.
    #[inline]
    fn seg_wire(&self, overhead: u32) -> f64 {
        (self.mss + self.hdr + overhead) as f64
    }

    #[inline]
    fn queued_bytes(&self) -> u32 {
        if self.edges && self.right > self.left {
            (self.right - self.left) as u32
        } else {
            0
        }
    }

    #[inline]
    fn has_queue(&self) -> bool {
        self.queued_bytes() > 0 || self.dups > 0
    }

    #[inline]
    fn unit(&self, release: Release) -> u32 {
        match release {
            Release::Mss => self.mss.max(1),
            Release::ReceiverAck => self.stride.max(1),
        }
    }

    /// ACKs this flow holds: queued bytes in release units, plus pending duplicates.
    #[inline]
    fn acks_queued(&self, release: Release) -> u32 {
        self.queued_bytes().div_ceil(self.unit(release)) + self.dups
    }

    /// Class bytes the next release lets the sender send.
    #[inline]
    fn next_cost(&self, cfg: &TcrConfig) -> f64 {
        let s = self.seg_wire(cfg.overhead_bytes);
        let q = self.queued_bytes();
        if q > 0 {
            q.min(self.unit(cfg.release)) as f64 * s / self.mss.max(1) as f64
        } else {
            s
        }
    }

    fn accumulate_alloc(&mut self, now: Time) {
        self.alloc_int += self.alloc * now.since(self.alloc_t).as_secs_f64();
        self.alloc_t = now;
    }

    fn target_window(&self, cfg: &TcrConfig) -> Option<f64> {
        let wan = match cfg.window_rtt {
            WindowRtt::Smoothed => self.srtt?,
            WindowRtt::Min => self.srtt.map(|_| self.rtt_min)?,
        };
        let rtt = wan + self.lan_rtt.unwrap_or(0.0);
        let mss = self.mss.max(1) as f64;
        // A·RTT, plus what the receiver's ACK stride makes the ACK queue hold: an ACK that
        // covers k segments is released over k pacing slots, so k − 1 segments of the window
        // are, on average, ACKs waiting here (delayed ACKs: k ≈ 2).
        let w = self.alloc * rtt * mss / self.seg_wire(cfg.overhead_bytes) + (self.stride_segs - 1.0).max(0.0) * mss;
        let w = match cfg.window_rounding {
            Rounding::Up => (w / mss).ceil() * mss,
            Rounding::Nearest => (w / mss).round() * mss,
            Rounding::Down => (w / mss).floor() * mss,
            Rounding::Bytes => w.ceil(),
        };
        Some(w.max(cfg.min_window_segments as f64 * mss))
    }
}

struct Slot {
    gen: u32,
    flow: Option<Flow>,
}

/// TCP Rate Control for one class. See the module documentation.
pub struct Tcr {
    cfg: TcrConfig,
    rate_bps: u64,
    index: crate::hash::KeyedMap<FlowKey, u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    heap: BinaryHeap<Reverse<(Time, u32, u32)>>,
    flush_list: Vec<u32>,
    flush_at: Option<Time>,
    next_tick: Option<Time>,
    /// Grid time of the last class tick run: the class timer keeps this grid while it has
    /// nothing to release (paper 000: it "times out at intervals of MSS_i/BW_i").
    last_tick: Option<Time>,
    tick_period: Dur,
    next_sample: Option<Time>,
    /// The sampling interval in force (recomputed at each allocation pass).
    interval: Dur,
    /// Flows in the allocation.
    members: usize,
    last_pass: Option<Time>,
    /// A pass deferred by flow starts/ends within `MIN_PASS_GAP` of the last one.
    pass_due: Option<Time>,
    /// Where the last `shift_pacing` put the earliest timer (now − `LATE_WAKEUP_CATCHUP`). An
    /// entry at or before it is one that stall already moved: the driver has not run it yet.
    shifted_to: Option<Time>,
    scratch: Vec<alloc::Entry>,
    scratch_idx: Vec<u32>,
    scratch_f: Vec<f64>,
    held: u64,
    /// The packet of the last `on_ack` was forwarded untouched as inconsistent.
    last_untouched: bool,
    stats: TcrStats,
}

impl Tcr {
    /// A TCR instance for a class of `rate_bps` (bit/s). `cfg` should have been validated.
    pub fn new(cfg: TcrConfig, rate_bps: u64) -> Tcr {
        Tcr {
            cfg,
            rate_bps,
            index: crate::hash::map(crate::hash::HashKey::default()),
            slots: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            flush_list: Vec::new(),
            flush_at: None,
            next_tick: None,
            last_tick: None,
            tick_period: Dur::ZERO,
            next_sample: None,
            interval: Dur::from_millis(1),
            members: 0,
            last_pass: None,
            pass_due: None,
            shifted_to: None,
            scratch: Vec::new(),
            scratch_idx: Vec::new(),
            scratch_f: Vec::new(),
            held: 0,
            last_untouched: false,
            stats: TcrStats::default(),
        }
    }

    pub fn config(&self) -> &TcrConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &TcrStats {
        &self.stats
    }

    /// Entries in the pacing timer heap (live and superseded).
    pub fn timer_entries(&self) -> usize {
        self.heap.len()
    }

    /// Flows tracked.
    pub fn flow_count(&self) -> usize {
        self.index.len()
    }

    /// Bytes of state per tracked flow: the flow record (with its template ACK), its slot and
    /// its flow-table entry (excluding hash-table slack).
    pub fn state_bytes_per_flow() -> usize {
        std::mem::size_of::<Slot>() + std::mem::size_of::<(FlowKey, u32)>()
    }

    /// Snapshot of one flow.
    pub fn flow_info(&self, key: &FlowKey) -> Option<FlowInfo> {
        let i = *self.index.get(key)?;
        self.slots[i as usize].flow.as_ref().map(|f| self.info(f))
    }

    /// Snapshots of all flows, in slot order.
    /// The report [`AckMechanism::stats`] gives.
    pub fn report(&self) -> TcrReport {
        TcrReport {
            kind: "tcr",
            counters: self.stats,
            acks_held: self.held,
            flows: self.index.len(),
            timer_entries: self.heap.len(),
            per_flow: self.flow_infos().take(TcrReport::LISTED).collect(),
        }
    }

    pub fn flow_infos(&self) -> impl Iterator<Item = FlowInfo> + '_ {
        self.slots.iter().filter_map(|s| s.flow.as_ref()).map(|f| self.info(f))
    }

    fn info(&self, f: &Flow) -> FlowInfo {
        let k = f.key;
        let scale = f.rcv_scale.unwrap_or(0);
        FlowInfo {
            flow: format!("{}:{}>{}:{}", k.0, k.2, k.1, k.3),
            alloc_bps: f.alloc * 8.0,
            rate_bps: f.rate * 8.0,
            bottlenecked: f.bottlenecked,
            member: f.member(),
            srtt_ms: f.srtt.map(|s| s * 1e3),
            rtt_min_ms: f.rtt_min.is_finite().then_some(f.rtt_min * 1e3),
            lan_rtt_ms: f.lan_rtt.map(|s| s * 1e3),
            mss: f.mss,
            segment_bytes: f.seg_wire(self.cfg.overhead_bytes) as u32,
            rcv_scale: f.rcv_scale,
            window_target_bytes: f.target_window(&self.cfg).map(|w| w as u64),
            window_bytes: (f.last_field as u64) << scale,
            left_edge: f.left.0,
            right_edge: f.right.0,
            dupacks_pending: f.dups,
            acks_queued: f.acks_queued(self.cfg.release),
        }
    }

    /// Class capacity handed out, bytes/s.
    fn capacity(&self) -> f64 {
        self.rate_bps as f64 / 8.0 * self.cfg.target_utilization
    }

    fn flow_mut(&mut self, i: u32) -> &mut Flow {
        self.slots[i as usize].flow.as_mut().expect("live slot")
    }

    /// A new connection on the same addresses and ports: start the flow over.
    fn restart_flow(&mut self, now: Time, key: FlowKey, i: u32) {
        let f = self.slots[i as usize].flow.as_mut().unwrap();
        let counted = f.counted as u64;
        let was_member = f.member();
        *f = Flow::new(key, &self.cfg, now);
        self.held -= counted;
        let slot = &mut self.slots[i as usize];
        slot.gen = slot.gen.wrapping_add(1);
        self.stats.flows_started += 1;
        if !was_member {
            self.members += 1;
        }
        self.membership_changed(now, Some(i));
    }

    fn lookup_or_create(&mut self, now: Time, key: FlowKey) -> u32 {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let f = Flow::new(key, &self.cfg, now);
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize].flow = Some(f);
                i
            }
            None => {
                self.slots.push(Slot { gen: 0, flow: Some(f) });
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, i);
        self.stats.flows_started += 1;
        self.members += 1;
        self.membership_changed(now, Some(i));
        if self.next_sample.is_none() {
            self.next_sample = Some(now + self.interval);
        }
        i
    }

    // ------------------------------------------------------------------ allocation

    /// The rate-sampling interval for the current flows (O(n); cached in `interval`).
    fn sample_interval(&self) -> Dur {
        if self.cfg.sample_interval_ms > 0.0 {
            return Dur::from_secs_f64(self.cfg.sample_interval_ms * 1e-3);
        }
        let b = self.capacity().max(1.0);
        let mut n = 0usize;
        let mut s_max: f64 = 0.0;
        let mut rtt_max: f64 = 0.0;
        for f in self.slots.iter().filter_map(|s| s.flow.as_ref()).filter(|f| f.member()) {
            n += 1;
            s_max = s_max.max(f.seg_wire(self.cfg.overhead_bytes));
            rtt_max = rtt_max.max(f.srtt.unwrap_or(0.0));
        }
        Dur::from_secs_f64((n as f64 * s_max / b).max(rtt_max).max(1e-3))
    }

    /// A flow joined (`newcomer`) or left the allocation: run a pass now, or at most
    /// `MIN_PASS_GAP` after the last one (the newcomer gets B/N meanwhile).
    fn membership_changed(&mut self, now: Time, newcomer: Option<u32>) {
        let gap = MIN_PASS_GAP.max(Dur(PASS_GAP_PER_FLOW.0.saturating_mul(self.members as u64)));
        if self.last_pass.is_none_or(|t| now >= t + gap) {
            self.realloc(now);
            return;
        }
        if let Some(i) = newcomer {
            let share = self.capacity() / self.members.max(1) as f64;
            let f = self.flow_mut(i);
            f.accumulate_alloc(now);
            f.alloc = share;
        }
        let due = self.last_pass.unwrap() + gap;
        self.pass_due = Some(self.pass_due.map_or(due, |t| t.min(due)));
    }

    /// Moves the pacing grid past a stall of the driver (see `shift_pacing`) and runs a deferred
    /// allocation pass if it is due. Every entry point calls it first.
    #[inline]
    fn catch_up(&mut self, now: Time) {
        if let Some(&Reverse((t, _, _))) = self.heap.peek() {
            // Once per stall: until the driver runs the moved timer, packets that arrive meanwhile
            // find it overdue again, and moving every flow for each would cost O(flows) per
            // packet exactly when the gateway is behind. New entries are never scheduled before
            // `now`, so one at or before `shifted_to` is one a shift already moved; it is moved
            // again only once it is another `LATE_WAKEUP_CATCHUP` late (at most one O(flows)
            // pass per 5 ms however long the driver stays behind).
            let moved = |s: Time| t <= s && now <= s + LATE_WAKEUP_CATCHUP + LATE_WAKEUP_CATCHUP;
            if t + LATE_WAKEUP_CATCHUP < now && !self.shifted_to.is_some_and(moved) {
                let to = now - LATE_WAKEUP_CATCHUP;
                self.shift_pacing(to.since(t));
                self.shifted_to = Some(to);
            }
        }
        if self.pass_due.is_some_and(|t| t <= now) {
            self.realloc(now);
        }
    }

    /// Runs an allocation pass over the member flows and applies the result.
    fn realloc(&mut self, now: Time) {
        self.last_pass = Some(now);
        self.pass_due = None;
        let b = self.capacity();
        let mut entries = std::mem::take(&mut self.scratch);
        let mut idx = std::mem::take(&mut self.scratch_idx);
        entries.clear();
        idx.clear();
        let mut joined = 0usize;
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some(f) = s.flow.as_mut() else { continue };
            f.accumulate_alloc(now);
            let member = f.member();
            if !member {
                f.alloc = 0.0;
                f.bottlenecked = false;
                continue;
            }
            if f.joined {
                joined += 1;
            }
            idx.push(i as u32);
            entries.push(alloc::Entry {
                rate: f.rate,
                alloc_avg: f.alloc_avg,
                alloc: f.alloc,
                sampled: f.sampled,
                bottlenecked: false,
            });
        }
        match self.cfg.allocation {
            Allocation::Equal => alloc::equal_share(b, &mut entries),
            Allocation::MaxMin => {
                if joined > 0 && matches!(self.cfg.residual, Residual::Increment | Residual::Unused) {
                    // Eq. 2 for the newcomers; the others make room in proportion.
                    let share = b / entries.len() as f64;
                    let old: f64 = idx
                        .iter()
                        .zip(&entries)
                        .filter(|(i, _)| !self.slots[**i as usize].flow.as_ref().unwrap().joined)
                        .map(|(_, e)| e.alloc)
                        .sum();
                    let room = (b - share * joined as f64).max(0.0);
                    for (i, e) in idx.iter().zip(entries.iter_mut()) {
                        if self.slots[*i as usize].flow.as_ref().unwrap().joined {
                            e.alloc = share;
                        } else if old > 0.0 {
                            e.alloc *= room / old;
                        } else {
                            e.alloc = share;
                        }
                    }
                }
                alloc::max_min_pass_with(
                    b,
                    self.cfg.satisfaction,
                    self.cfg.residual,
                    self.cfg.all_bottlenecked,
                    &mut entries,
                    &mut self.scratch_f,
                );
            }
        }
        self.stats.allocations += 1;
        let per_flow = self.cfg.pacing == Pacing::PerFlow;
        self.interval = self.sample_interval();
        let max_d = self.interval.as_secs_f64();
        for (&i, e) in idx.iter().zip(&entries) {
            let gen = self.slots[i as usize].gen;
            let f = self.slots[i as usize].flow.as_mut().unwrap();
            f.joined = false;
            f.alloc = e.alloc;
            f.bottlenecked = e.bottlenecked;
            if per_flow {
                if let Some(at) = f.scheduled {
                    // The rate changed: the pending release moves (earlier needs a new entry).
                    let d = pace_interval(f.last_cost, f.alloc, max_d);
                    let next = f.last_base + Dur::from_secs_f64(d);
                    f.next_allowed = next;
                    if next < at {
                        let t = next.max(now);
                        f.scheduled = Some(t);
                        self.heap.push(Reverse((t, i, gen)));
                    }
                }
            }
        }
        self.members = entries.len();
        self.scratch = entries;
        self.scratch_idx = idx;
        if self.cfg.pacing == Pacing::ClassTick {
            self.update_tick_period();
        }
    }

    fn update_tick_period(&mut self) {
        let b = self.capacity().max(1.0);
        let mut n = 0usize;
        let mut s_max: f64 = 0.0;
        for f in self.slots.iter().filter_map(|s| s.flow.as_ref()).filter(|f| f.member()) {
            n += 1;
            s_max = s_max.max(f.seg_wire(self.cfg.overhead_bytes));
        }
        self.tick_period = Dur::from_secs_f64(n.max(1) as f64 * s_max.max(1.0) / b).max(Dur::from_nanos(1));
    }

    /// Sampling interval expired: take rate samples, detect idle flows, reallocate.
    fn sample(&mut self, now: Time) {
        let half = self.interval.as_secs_f64() / 2.0;
        let g = self.cfg.rate_gain;
        let idle_after = Dur::from_secs_f64(self.cfg.idle_timeout_ms * 1e-3);
        let equal = self.cfg.allocation == Allocation::Equal;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Some(f) = slot.flow.as_mut() else { continue };
            f.accumulate_alloc(now);
            if let Some(start) = f.sample_start {
                let span = now.since(start).as_secs_f64();
                if span >= half && span > 0.0 {
                    let r = f.bytes as f64 / span;
                    let a = f.alloc_int / span;
                    if f.sampled {
                        f.rate += g * (r - f.rate);
                        f.alloc_avg += g * (a - f.alloc_avg);
                    } else {
                        f.rate = r;
                        f.alloc_avg = a;
                        f.sampled = true;
                    }
                    f.bytes = 0;
                    f.alloc_int = 0.0;
                    f.sample_start = Some(now);
                }
            } else {
                f.alloc_int = 0.0;
            }
            if equal && f.member() && now.since(f.last_data) > idle_after {
                // Out of n: what it holds goes now, and its ACKs pass unpaced until it sends again.
                f.idle = true;
                if f.has_queue() && !f.flush {
                    f.flush = true;
                    self.flush_list.push(i as u32);
                    self.flush_at = Some(self.flush_at.map_or(now, |t| t.min(now)));
                }
            }
        }
        self.realloc(now);
        self.next_sample = if self.index.is_empty() { None } else { Some(now + self.interval) };
    }

    // ------------------------------------------------------------------ RTT

    fn rtt_on_ack(&mut self, i: u32, now: Time, ack: SeqNum) {
        let gain = self.cfg.rtt_gain;
        let from_deq = self.cfg.rtt_from == RttFrom::Dequeue;
        let f = self.flow_mut(i);
        let Some(tm) = f.timed else { return };
        if ack < tm.seq_end {
            return;
        }
        f.timed = None;
        let start = if from_deq && f.deq_seen {
            match tm.t_fwd {
                Some(t) => t,
                None => {
                    self.stats.rtt_samples_discarded += 1;
                    return;
                }
            }
        } else {
            tm.t_enq
        };
        let s = now.since(start).as_secs_f64();
        f.srtt = Some(match f.srtt {
            Some(r) => r + gain * (s - r),
            None => s,
        });
        f.rtt_min = f.rtt_min.min(s);
        self.stats.rtt_samples += 1;
    }

    // ------------------------------------------------------------------ windows

    /// The window field for a (non-duplicate) ACK with number `ack` leaving now, and its
    /// bookkeeping. `syn` marks the SYN-ACK (unscaled field).
    fn window_field(&mut self, i: u32, now: Time, ack: SeqNum, syn: bool) -> u16 {
        let cfg = &self.cfg;
        let f = self.slots[i as usize].flow.as_mut().unwrap();
        let recv = f.recv_field;
        let scale = if syn { 0 } else { f.rcv_scale.unwrap_or(0) };
        let mut field = recv;
        if cfg.window_sizing && f.rcv_scale.is_some() {
            if let Some(target) = f.target_window(cfg) {
                let step = cfg.window_step_segments as f64 * f.mss as f64;
                if f.cur_win <= 0.0 || step == 0.0 || syn {
                    f.cur_win = target;
                } else {
                    f.cur_win += (target - f.cur_win).clamp(-step, step);
                }
                let mut eff = f.cur_win.ceil().max(0.0) as u64;
                if let Some(r) = f.adv_right {
                    let d = r - ack;
                    if d > 0 && d as u64 > eff {
                        eff = d as u64;
                    }
                }
                let want = eff.div_ceil(1u64 << scale).min(65_535) as u16;
                field = want.min(recv);
            }
        }
        if field != recv {
            self.stats.window_rewrites += 1;
        }
        let edge = ack + ((field as u32) << scale);
        f.adv_right = Some(edge);
        f.last_field = field;
        if f.edge_max.is_none_or(|m| edge > m) {
            let prev = f.edge_max.unwrap_or(ack);
            f.edge_max = Some(edge);
            if f.lan_timed.is_none() {
                f.lan_timed = Some((edge, prev, now));
            }
        }
        field
    }

    // ------------------------------------------------------------------ releasing ACKs

    /// Releases one unit of flow `i`'s queue (an advance of the ACK number, or a duplicate
    /// once `right` has gone). Returns the class bytes it lets the sender send.
    fn release_one(&mut self, i: u32, now: Time, out: &mut Vec<Packet>) -> Option<f64> {
        let release = self.cfg.release;
        let overhead = self.cfg.overhead_bytes;
        let f = self.flow_mut(i);
        f.template.as_ref()?;
        let s = f.seg_wire(overhead);
        let q = f.queued_bytes();
        if q > 0 {
            let adv = q.min(f.unit(release));
            let new_left = f.left + adv;
            f.left = new_left;
            let cost = adv as f64 * s / f.mss.max(1) as f64;
            let withhold = new_left < f.right;
            let field = self.window_field(i, now, new_left, false);
            let f = self.flow_mut(i);
            let mut p = f.template.clone().unwrap();
            let rcv_nxt = f.rcv_nxt;
            let t = p.tcp_mut().unwrap();
            t.ack = new_left;
            t.seq = rcv_nxt;
            t.window = field;
            if withhold && t.opts.sack_len > 0 {
                t.opts.sack_len = 0;
                self.stats.sack_withheld += 1;
            }
            out.push(p);
            self.stats.acks_paced += 1;
            self.stats.acks_out += 1;
            Some(cost)
        } else if f.dups > 0 {
            f.dups -= 1;
            let mut p = f.template.clone().unwrap();
            let t = p.tcp_mut().unwrap();
            t.ack = f.right;
            t.seq = f.rcv_nxt;
            // The window of the ACK at the right edge (so it counts as a duplicate), unless the
            // receiver has since lowered its own.
            t.window = f.last_field.min(f.recv_field);
            out.push(p);
            self.stats.dupacks_out += 1;
            self.stats.acks_paced += 1;
            self.stats.acks_out += 1;
            Some(s)
        } else {
            None
        }
    }

    /// Pacing bookkeeping after a release of `cost` class bytes at `now` (per-flow pacing).
    fn after_release(&mut self, i: u32, now: Time, cost: f64) {
        let max_d = self.interval.as_secs_f64();
        match self.cfg.pacing {
            Pacing::PerFlow => {
                let f = self.flow_mut(i);
                let d = pace_interval(cost, f.alloc, max_d);
                // Slightly late (timer jitter): keep the grid; after idle time: restart it.
                let base = if f.next_allowed <= now && now.since(f.next_allowed).as_secs_f64() < d {
                    f.next_allowed
                } else {
                    now
                };
                f.last_base = base;
                f.last_cost = cost;
                f.next_allowed = base + Dur::from_secs_f64(d);
            }
            Pacing::ClassTick => {
                let f = self.flow_mut(i);
                f.credit -= cost;
            }
            Pacing::None => {}
        }
    }

    fn release_due(&self, f: &Flow, now: Time) -> bool {
        match self.cfg.pacing {
            Pacing::PerFlow => now >= f.next_allowed,
            Pacing::ClassTick => f.credit >= f.next_cost(&self.cfg),
            Pacing::None => true,
        }
    }

    /// The timer came `by` later than [`LATE_WAKEUP_CATCHUP`] allows (the live driver's process
    /// stalled; the simulator's timers are exact): the class's line has given up that much of its
    /// service, so every flow's pacing grid moves by it too, keeping the flows' phases. Released
    /// on their old grids, the ACKs due in the stall would trigger data the line can no longer
    /// carry in their time, and it would stay queued in the class. O(flows), once per stall.
    fn shift_pacing(&mut self, by: Dur) {
        for s in self.slots.iter_mut() {
            if let Some(f) = s.flow.as_mut() {
                f.next_allowed += by;
                f.last_base += by;
                if let Some(t) = f.scheduled.as_mut() {
                    *t += by;
                }
            }
        }
        let mut v = std::mem::take(&mut self.heap).into_vec();
        for Reverse((t, _, _)) in v.iter_mut() {
            *t += by;
        }
        self.heap = BinaryHeap::from(v);
        self.stats.late_timer_shifts += 1;
        self.stats.late_timer_shift_ns += by.0;
    }

    /// Makes sure flow `i` will be served (per-flow: a heap entry; class tick: the ticker runs).
    fn ensure_scheduled(&mut self, i: u32, now: Time, out: &mut Vec<Packet>) {
        let gen = self.slots[i as usize].gen;
        let pacing = self.cfg.pacing;
        let f = self.flow_mut(i);
        if f.finished || !f.has_queue() {
            return;
        }
        match pacing {
            Pacing::PerFlow => {
                if f.scheduled.is_none() {
                    let t = f.next_allowed.max(now);
                    f.scheduled = Some(t);
                    self.heap.push(Reverse((t, i, gen)));
                }
            }
            Pacing::ClassTick => {
                if self.next_tick.is_none() {
                    // The class timer was idle. It keeps its grid: the ACK waits for the next
                    // timeout on it (at once only if this is the timer's first start or `now`
                    // is a grid point), as a periodic timer would release it.
                    match self.next_grid_tick(now) {
                        Some(t) if t > now => self.next_tick = Some(t),
                        _ => self.tick(now, out),
                    }
                }
            }
            Pacing::None => {}
        }
    }

    /// The first point of the class timer's grid (`last_tick + k·T`, k ≥ 1) at or after `now`;
    /// None before the first tick.
    fn next_grid_tick(&self, now: Time) -> Option<Time> {
        let last = self.last_tick?;
        let d = self.tick_period.0.max(1);
        let first = last + Dur(d);
        if first >= now {
            return Some(first);
        }
        let k = now.since(last).0.div_ceil(d);
        Some(last + Dur(k.saturating_mul(d)))
    }

    /// Releases everything flow `i` holds: one ACK up to `right` (with its SACK blocks and TCR's
    /// window) and the pending duplicates.
    fn flush(&mut self, i: u32, now: Time, out: &mut Vec<Packet>) {
        let f = self.flow_mut(i);
        if !f.has_queue() {
            return;
        }
        let Some(mut p) = f.template.clone() else {
            f.left = f.right;
            f.dups = 0;
            return;
        };
        let (right, rcv_nxt, n) = (f.right, f.rcv_nxt, f.dups);
        f.left = right;
        f.dups = 0;
        // The window TCR computed (never moving the advertised right edge left), not the
        // receiver's: a flushed flow is leaving the allocation, not being handed a larger window.
        let field = self.window_field(i, now, right, false);
        let t = p.tcp_mut().unwrap();
        t.ack = right;
        t.seq = rcv_nxt;
        t.window = field;
        // The cumulative ACK and its duplicates are the same packet.
        for _ in 0..n {
            out.push(p.clone());
        }
        out.push(p);
        self.stats.acks_out += 1 + n as u64;
        self.stats.dupacks_out += n as u64;
    }

    /// The flow leaves the allocation (sender FIN or RST): its ACKs will be flushed and later
    /// ones pass unpaced (windows still within TCR's).
    fn finish(&mut self, i: u32, now: Time) {
        let f = self.flow_mut(i);
        if f.finished {
            return;
        }
        let was_member = f.member();
        f.finished = true;
        f.flush = true;
        self.flush_list.push(i);
        self.flush_at = Some(self.flush_at.map_or(now, |t| t.min(now)));
        if was_member {
            self.members -= 1;
            self.membership_changed(now, None);
        }
    }

    /// One class tick (paper 000): every flow earns A_i·T of credit and spends it on releases.
    fn tick(&mut self, now: Time, out: &mut Vec<Packet>) {
        let dt = self.tick_period.as_secs_f64();
        let mut any = false;
        for i in 0..self.slots.len() as u32 {
            let Some(f) = self.slots[i as usize].flow.as_mut() else { continue };
            if f.finished {
                continue;
            }
            if !f.has_queue() {
                // No banking while idle: a flow's first ACK after idle waits for a tick.
                f.credit = 0.0;
                continue;
            }
            let s = f.seg_wire(self.cfg.overhead_bytes);
            f.credit = (f.credit + f.alloc * dt).min(2.0 * s);
            loop {
                let f = self.slots[i as usize].flow.as_ref().unwrap();
                if !f.has_queue() || f.credit < f.next_cost(&self.cfg) {
                    break;
                }
                match self.release_one(i, now, out) {
                    Some(c) => self.flow_mut(i).credit -= c,
                    None => break,
                }
            }
            self.sync_held(i);
            any |= self.slots[i as usize].flow.as_ref().unwrap().has_queue();
        }
        let t = Dur(self.tick_period.0.max(1));
        // This tick's grid time: the scheduled one (a live timer may run late), or now.
        // A tick more than a period late restarts the grid from now.
        let at = self.next_tick.filter(|&x| x <= now && x + t > now).unwrap_or(now);
        self.last_tick = Some(at);
        self.next_tick = if any { Some(at + t) } else { None };
    }

    /// Brings `held` up to date with flow `i`'s queue (idempotent).
    fn sync_held(&mut self, i: u32) {
        let release = self.cfg.release;
        if let Some(f) = self.slots[i as usize].flow.as_mut() {
            let now = f.acks_queued(release);
            self.held = self.held + now as u64 - f.counted as u64;
            f.counted = now;
            self.stats.acks_held_max = self.stats.acks_held_max.max(self.held);
        }
    }

    // ------------------------------------------------------------------ packet handlers

    /// The receiver's SYN-ACK answering the sender's SYN (the guard checked it): `first` learns
    /// its options; a retransmission only has its window rewritten.
    fn handle_synack(&mut self, i: u32, now: Time, mut pkt: Packet, out: &mut Vec<Packet>, first: bool) {
        let t = pkt.tcp().unwrap();
        let (ack, seq, win) = (t.ack, t.seq, t.window);
        let (ws, ts, mss_opt) = (t.opts.wscale, t.opts.timestamps.is_some(), t.opts.mss);
        if !first {
            let field = self.window_field(i, now, ack, true).min(win);
            pkt.tcp_mut().unwrap().window = field;
            self.stats.acks_out += 1;
            out.push(pkt);
            return;
        }
        self.rtt_on_ack(i, now, ack);
        let f = self.flow_mut(i);
        if f.syn_seen {
            f.rcv_scale = Some(if f.snd_ws { ws.map_or(0, |w| w.min(14)) } else { 0 });
        }
        let negotiated = match (f.snd_mss, mss_opt) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let ts_on = f.snd_ts && ts;
        if let (Some(m), false) = (negotiated, f.mss_known) {
            // Payload of a full segment: the MSS option less the timestamp option (as Linux).
            f.mss = (m as u32).saturating_sub(if ts_on { 12 } else { 0 }).max(1);
            f.mss_known = true;
        }
        if ts_on {
            f.hdr = f.hdr.max(if f.key.0.is_ipv4() { 52 } else { 72 });
        }
        f.left = ack;
        f.right = ack;
        f.edges = true;
        f.dups = 0;
        f.rcv_nxt = seq + 1;
        f.rcv_valid = true;
        f.recv_field = win;
        let field = self.window_field(i, now, ack, true);
        pkt.tcp_mut().unwrap().window = field;
        self.stats.acks_out += 1;
        out.push(pkt);
    }

    /// `on_ack` without the held-ACK bookkeeping; returns the flow's slot.
    fn ack_path(&mut self, now: Time, flow: FlowKey, mut pkt: Packet, out: &mut Vec<Packet>) -> Option<u32> {
        let Some(t) = pkt.tcp() else {
            out.push(pkt);
            return None;
        };
        let (flags, a, seq, win) = (t.flags, t.ack, t.seq, t.window);
        self.catch_up(now);
        let i = self.lookup_or_create(now, flow);
        self.stats.acks_in += 1;
        // State only from packets consistent with what the gateway forwarded (RFC 5961 spirit,
        // see `guard`): an inconsistent one moves nothing and is never a template. A pure ACK
        // is dropped (its sender would discard it: RFC 5961 §5.2, RFC 793 p. 72); anything else
        // is forwarded untouched for its endpoint to judge (a SYN-ACK or RST draws the
        // endpoint's challenge ACK; data is never lost to a wrong guess here).
        let check = self.flow_mut(i).guard.receiver_packet(&pkt);
        if check == Check::Ignore {
            let g = &mut self.stats.inconsistent;
            if flags.contains(TcpFlags::SYN) {
                g.syn_ignored += 1;
            } else if flags.contains(TcpFlags::RST) {
                g.rst_ignored += 1;
            } else if pkt.payload_len == 0 && !flags.contains(TcpFlags::FIN) && flags.contains(TcpFlags::ACK) {
                g.acks_dropped += 1;
                return Some(i);
            } else {
                g.ack_path_untouched += 1;
            }
            self.last_untouched = true;
            out.push(pkt);
            return Some(i);
        }
        if flags.contains(TcpFlags::RST) {
            self.flush(i, now, out);
            self.finish(i, now);
            self.stats.acks_out += 1;
            out.push(pkt);
            return Some(i);
        }
        if flags.contains(TcpFlags::SYN) {
            if flags.contains(TcpFlags::ACK) {
                self.handle_synack(i, now, pkt, out, check == Check::Handshake);
            } else {
                self.stats.acks_out += 1;
                out.push(pkt);
            }
            return Some(i);
        }
        if !flags.contains(TcpFlags::ACK) {
            self.stats.acks_out += 1;
            out.push(pkt);
            return Some(i);
        }
        let fin = flags.contains(TcpFlags::FIN);
        let is_data = pkt.payload_len > 0 || fin;
        let seg_end = seq + pkt.payload_len + fin as u32;
        self.rtt_on_ack(i, now, a);
        let pacing = self.cfg.pacing;
        let release = self.cfg.release;
        let f = self.flow_mut(i);
        if !f.rcv_valid || seg_end > f.rcv_nxt {
            f.rcv_nxt = seg_end;
            f.rcv_valid = true;
        }
        let first = !f.edges;
        if first {
            f.left = a;
            f.right = a;
            f.edges = true;
            f.recv_field = win;
        }
        if f.finished {
            // Out of the allocation: ACKs pass through unpaced, with at most the window TCR
            // last computed (or the right edge already advertised): the sender has closed, but
            // nothing on the wire advertises more than TCR's window.
            if a >= f.right {
                f.right = a;
                f.recv_field = win;
            }
            f.left = f.right;
            let field = self.window_field(i, now, a, false).min(win);
            pkt.tcp_mut().unwrap().window = field;
            self.stats.acks_out += 1;
            out.push(pkt);
            return Some(i);
        }
        let no_handshake = first && !f.syn_seen;
        // Classify against the receiver's highest ACK.
        let mut stale = false;
        let mut window_update = false;
        if a > f.right {
            f.stride = (a - f.right) as u32;
            let k = (f.stride as f64 / f.mss.max(1) as f64).clamp(1.0, 8.0);
            f.stride_segs += (k - f.stride_segs) / 8.0;
            f.right = a;
            f.dups = 0;
            f.recv_field = win;
        } else if a == f.right {
            let outstanding = !f.snd_valid || f.snd_max > a;
            if !is_data && !first && win == f.recv_field && outstanding {
                f.dups += 1;
                self.stats.dupacks_in += 1;
            } else {
                window_update = win != f.recv_field;
                f.recv_field = win;
            }
        } else {
            stale = true;
        }
        if no_handshake {
            self.stats.flows_without_handshake += 1;
        }
        // Newest timestamps/ECE come from any packet; the template is a pure ACK.
        if pacing == Pacing::None || self.flow_mut(i).idle {
            let f = self.flow_mut(i);
            f.left = f.right;
            f.dups = 0;
            if !stale {
                f.template = Some(template_of(&pkt));
            }
            if stale && !is_data {
                self.stats.acks_stale_dropped += 1;
                return Some(i);
            }
            let left = self.flow_mut(i).left;
            let field = self.window_field(i, now, left, false);
            let t = pkt.tcp_mut().unwrap();
            t.ack = left;
            t.window = field;
            if is_data {
                self.stats.piggyback_rewrites += 1;
            }
            self.stats.acks_out += 1;
            out.push(pkt);
            return Some(i);
        }
        if is_data {
            if !stale {
                self.flow_mut(i).template = Some(template_of(&pkt));
            }
            // Piggy-backed ACK: never hold the data; it carries a release if one is due.
            let f = self.slots[i as usize].flow.as_ref().unwrap();
            if f.queued_bytes() > 0 && self.release_due(f, now) {
                let overhead = self.cfg.overhead_bytes;
                let f = self.flow_mut(i);
                let adv = f.queued_bytes().min(f.unit(release));
                let cost = adv as f64 * f.seg_wire(overhead) / f.mss.max(1) as f64;
                f.left += adv;
                self.after_release(i, now, cost);
            }
            let f = self.flow_mut(i);
            let left = f.left;
            let withhold = left < f.right;
            let field = self.window_field(i, now, left, false);
            let t = pkt.tcp_mut().unwrap();
            t.ack = left;
            t.window = field;
            if withhold && t.opts.sack_len > 0 {
                t.opts.sack_len = 0;
                self.stats.sack_withheld += 1;
            }
            self.stats.piggyback_rewrites += 1;
            self.stats.acks_out += 1;
            out.push(pkt);
            self.ensure_scheduled(i, now, out);
            return Some(i);
        }
        if stale {
            self.stats.acks_stale_dropped += 1;
            return Some(i);
        }
        // A pure ACK: it becomes the template (no copy).
        self.flow_mut(i).template = Some(into_template(pkt));
        let f = self.slots[i as usize].flow.as_ref().unwrap();
        if (first || window_update) && !f.has_queue() {
            // Nothing queued: a window update (or the first ACK of a flow picked up
            // mid-stream) goes at once; window updates are not clocked.
            let left = f.left;
            let field = self.window_field(i, now, left, false);
            let f = self.flow_mut(i);
            let mut p = f.template.clone().unwrap();
            let rcv_nxt = f.rcv_nxt;
            let t = p.tcp_mut().unwrap();
            t.ack = left;
            t.seq = rcv_nxt;
            t.window = field;
            self.stats.acks_out += 1;
            out.push(p);
            return Some(i);
        }
        if f.scheduled.is_none() && f.has_queue() && self.release_due(f, now) && pacing == Pacing::PerFlow {
            if let Some(c) = self.release_one(i, now, out) {
                self.after_release(i, now, c);
            }
        }
        self.ensure_scheduled(i, now, out);
        Some(i)
    }
}

/// Seconds between releases of `cost` class bytes at `alloc` bytes/s, at most `max_d`.
#[inline]
fn pace_interval(cost: f64, alloc: f64, max_d: f64) -> f64 {
    if alloc > 0.0 {
        (cost / alloc).min(max_d)
    } else {
        max_d
    }
}

impl AckMechanism for Tcr {
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        crate::hash::rekey(&mut self.index, key);
    }
    /// `overhead_bytes = 0` (the default) takes the gateway's per-packet overhead, so TCR counts
    /// packets as the class does; an explicit value is kept.
    fn set_overhead(&mut self, bytes: u32) {
        if self.cfg.overhead_bytes == 0 {
            self.cfg.overhead_bytes = bytes;
        }
    }
    fn set_rate(&mut self, now: Time, bps: u64) {
        if bps == self.rate_bps {
            return;
        }
        let old = self.capacity();
        self.rate_bps = bps;
        let new = self.capacity();
        if old > 0.0 {
            let k = new / old;
            for f in self.slots.iter_mut().filter_map(|s| s.flow.as_mut()) {
                f.accumulate_alloc(now);
                f.alloc *= k;
            }
        }
        self.realloc(now);
    }

    /// A download its receiver opened: the options of the sender's SYN-ACK and the receiver's SYN
    /// give what a sender-opened flow's SYN and SYN-ACK give (window scaling, segment size,
    /// timestamps); the edges start at the receiver's first ACK after this.
    fn on_receiver_open(&mut self, now: Time, flow: FlowKey, sender: &SynOptions, receiver: &SynOptions) {
        self.catch_up(now);
        let i = self.lookup_or_create(now, flow);
        if self.flow_mut(i).finished || self.flow_mut(i).edges {
            self.restart_flow(now, flow, i);
        }
        let f = self.flow_mut(i);
        f.guard.receiver_opened(sender, receiver);
        f.syn_seen = true;
        f.snd_ws = sender.wscale.is_some();
        f.snd_ts = sender.timestamps;
        f.snd_mss = sender.mss;
        f.rcv_scale = Some(if f.snd_ws { receiver.wscale.map_or(0, |w| w.min(14)) } else { 0 });
        let negotiated = match (sender.mss, receiver.mss) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let ts_on = f.snd_ts && receiver.timestamps;
        if let Some(m) = negotiated {
            f.mss = (m as u32).saturating_sub(if ts_on { 12 } else { 0 }).max(1);
            f.mss_known = true;
        }
        if ts_on {
            f.hdr = f.hdr.max(if f.key.0.is_ipv4() { 52 } else { 72 });
        }
    }

    fn seq_facts(&self, flow: FlowKey) -> Option<SeqGuard> {
        let &i = self.index.get(&flow)?;
        self.slots[i as usize].flow.as_ref().map(|f| f.guard)
    }

    fn adopt_reverse_facts(&mut self, now: Time, flow: FlowKey, reverse: &SeqGuard) {
        self.catch_up(now);
        let i = self.lookup_or_create(now, flow);
        self.flow_mut(i).guard.adopt_reverse(reverse);
    }

    fn on_data(&mut self, now: Time, flow: FlowKey, pkt: &Packet) {
        let Some(t) = pkt.tcp() else { return };
        self.catch_up(now);
        let i = self.lookup_or_create(now, flow);
        let f = self.slots[i as usize].flow.as_mut().unwrap();
        // A new connection on the same addresses and ports once the sender closed this one
        // (FIN or RST); a SYN on an established flow changes nothing (RFC 5961 §4: its
        // endpoint answers with a challenge ACK, and a real restart resets the old one first).
        if t.flags.contains(TcpFlags::SYN) && !t.flags.contains(TcpFlags::ACK) && f.finished {
            self.restart_flow(now, flow, i);
        }
        let overhead = self.cfg.overhead_bytes as u64;
        let f = self.flow_mut(i);
        let idx = f.enq;
        f.enq = f.enq.wrapping_add(1);
        if f.guard.sender_packet(pkt) == Check::Ignore {
            // Outside the receiver's window, or a SYN on an established flow: it is in the
            // class (counted for the dequeues) but moves no state.
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
        if syn && !t.flags.contains(TcpFlags::ACK) {
            f.syn_seen = true;
            f.snd_ws = t.opts.wscale.is_some();
            f.snd_ts = t.opts.timestamps.is_some();
            f.snd_mss = t.opts.mss;
        }
        let len = pkt.payload_len + syn as u32 + fin as u32;
        if len > 0 {
            let end = t.seq + len;
            if f.snd_valid && t.seq < f.snd_max {
                // Retransmission (Karn): it spoils the sample it overlaps.
                if f.timed.is_some_and(|tm| t.seq < tm.seq_end) {
                    f.timed = None;
                    self.stats.rtt_samples_discarded += 1;
                }
            } else {
                if f.timed.is_none() {
                    f.timed = Some(Timed { seq_end: end, idx, t_enq: now, t_fwd: None });
                }
                // New data up to an edge advertised at t: the sender had it a LAN round trip
                // after t at the earliest (later if its cwnd held it back: keep the minimum).
                // "Up to the edge" means the sender filled the window as far as full segments
                // go: an edge that is not a segment boundary (a window in 2^scale-byte units,
                // or not a multiple of the MSS) is never reached exactly by a window-limited
                // sender, whose next segment only fits after the next release. The data must
                // also pass the previous edge, so that it needed this release.
                if let Some((edge, prev, t0)) = f.lan_timed {
                    let mss = f.mss.max(1);
                    if end >= edge || (end > prev && edge - end < mss as i32) {
                        let s = now.since(t0).as_secs_f64();
                        f.lan_rtt = Some(f.lan_rtt.map_or(s, |m| m.min(s)));
                        f.lan_timed = None;
                    }
                }
            }
            let f = self.flow_mut(i);
            if !f.snd_valid || end > f.snd_max {
                f.snd_max = end;
                f.snd_valid = true;
            }
        }
        let f = self.flow_mut(i);
        if pkt.payload_len > 0 {
            // The segment size: from the handshake, raised to the largest payload seen (or,
            // without a handshake, the first payload).
            f.mss = if f.mss_known { f.mss.max(pkt.payload_len) } else { pkt.payload_len };
            f.mss_known = true;
            f.hdr = (pkt.ip_len() as u32).saturating_sub(pkt.payload_len);
            if f.sample_start.is_none() {
                f.sample_start = Some(now);
            }
        }
        f.bytes += pkt.ip_len() as u64 + overhead;
        if len > 0 {
            f.last_data = now;
        }
        let mut changed = false;
        if f.idle && len > 0 {
            f.idle = false;
            changed = true;
        }
        if changed {
            self.members += 1;
            self.membership_changed(now, Some(i));
        }
        if t.flags.contains(TcpFlags::RST) || fin {
            self.finish(i, now);
        }
    }

    fn on_ack(&mut self, now: Time, flow: FlowKey, pkt: Packet, out: &mut Vec<Packet>) {
        self.last_untouched = false;
        if let Some(i) = self.ack_path(now, flow, pkt, out) {
            self.sync_held(i);
        }
    }

    fn last_ack_untouched(&self) -> bool {
        self.last_untouched
    }

    fn rst_in_window(&self, flow: FlowKey, pkt: &Packet, from_sender: bool) -> bool {
        let Some(&i) = self.index.get(&flow) else { return true };
        let Some(f) = self.slots[i as usize].flow.as_ref() else { return true };
        if from_sender {
            f.guard.rst_from_sender_ok(pkt)
        } else {
            f.guard.rst_from_receiver_ok(pkt)
        }
    }

    fn on_class_dequeue(&mut self, now: Time, flow: FlowKey, _flow_qlen: Option<usize>, _out: &mut Vec<Packet>) {
        let Some(&i) = self.index.get(&flow) else { return };
        let f = self.flow_mut(i);
        f.deq = f.deq.wrapping_add(1);
        f.deq_seen = true;
        if (f.deq.wrapping_sub(f.enq) as i32) > 0 {
            // More dequeues than packets seen: the counts drifted; resynchronise.
            f.deq = f.enq;
            return;
        }
        if let Some(tm) = f.timed.as_mut() {
            if tm.t_fwd.is_none() && f.deq == tm.idx.wrapping_add(1) {
                tm.t_fwd = Some(now);
            }
        }
    }

    fn on_flow_end(&mut self, now: Time, flow: FlowKey, out: &mut Vec<Packet>) {
        self.catch_up(now);
        let Some(i) = self.index.remove(&flow) else { return };
        self.flush(i, now, out);
        self.sync_held(i);
        let slot = &mut self.slots[i as usize];
        let member = slot.flow.as_ref().is_some_and(|f| f.member());
        slot.flow = None;
        slot.gen = slot.gen.wrapping_add(1);
        self.free.push(i);
        self.stats.flows_ended += 1;
        if member {
            self.members -= 1;
            self.membership_changed(now, None);
        }
        if self.index.is_empty() {
            self.next_sample = None;
            self.next_tick = None;
            self.last_tick = None;
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        let mut t = self.next_sample;
        let mut take = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        };
        take(self.heap.peek().map(|r| r.0 .0));
        take(self.next_tick);
        take(self.flush_at);
        take(self.pass_due);
        t
    }

    fn on_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.catch_up(now);
        if self.flush_at.is_some_and(|t| t <= now) {
            let list = std::mem::take(&mut self.flush_list);
            for &i in &list {
                if self.slots[i as usize].flow.as_ref().is_some_and(|f| f.flush) {
                    self.flush(i, now, out);
                    self.flow_mut(i).flush = false;
                    self.sync_held(i);
                }
            }
            self.flush_list = list;
            self.flush_list.clear();
            self.flush_at = None;
        }
        if self.next_sample.is_some_and(|t| t <= now) {
            self.sample(now);
        }
        while let Some(&Reverse((t, i, gen))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            let slot = &self.slots[i as usize];
            if slot.gen != gen || slot.flow.as_ref().is_none_or(|f| f.scheduled != Some(t)) {
                continue; // superseded
            }
            let f = self.flow_mut(i);
            f.scheduled = None;
            if !f.finished && now >= f.next_allowed {
                if let Some(c) = self.release_one(i, now, out) {
                    self.after_release(i, now, c);
                }
            }
            self.ensure_scheduled(i, now, out);
            self.sync_held(i);
        }
        if self.cfg.pacing == Pacing::ClassTick && self.next_tick.is_some_and(|t| t <= now) {
            self.tick(now, out);
        }
    }

    fn acks_held(&self) -> usize {
        self.held as usize
    }

    fn stats(&self) -> MechStats {
        MechStats::Tcr(self.report())
    }
}

/// A header-only copy of a receiver's packet, as the template of paced ACKs (a pure ACK:
/// flags ACK and ECE only, no payload).
fn template_of(p: &Packet) -> Packet {
    into_template(Packet { ip: p.ip, l4: p.l4.clone(), payload_len: 0, payload: None })
}

/// [`template_of`] in place.
fn into_template(mut t: Packet) -> Packet {
    t.payload_len = 0;
    t.payload = None;
    if let Some(h) = t.tcp_mut() {
        h.flags = TcpFlags(h.flags.0 & (TcpFlags::ACK.0 | TcpFlags::ECE.0));
        h.urgent = 0;
    }
    t
}
