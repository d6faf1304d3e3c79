//! The edge gateway as a [`Middlebox`]: classify, link-share, shape, and hand each class's flows
//! to its ACK mechanism (paper 000 Fig. 1: per-class data queues, per-flow ACK control).
//!
//! **Walk of a packet** travelling `dir` (A→B is LAN→WAN, "outbound"):
//!
//! 1. *ACK path.* If it is a TCP packet with ACK set travelling towards the sender of a tracked
//!    flow (the flow's data goes the other way) whose class has a mechanism, it goes to
//!    [`AckMechanism::on_ack`] — pure ACKs and data with piggy-backed ACKs alike. What the
//!    mechanism releases (now, or later from its timer or the class clock) leaves at once if it is
//!    a pure ACK; if it carries data it takes step 2 as data of its own direction.
//! 2. *Data path.* Otherwise the packet is classified as data of `dir`: by its tracked flow's
//!    class, else by the policy's rules (first match, then the default class; no class: it
//!    passes unshaped). TCP flows are tracked from their first SYN, data or FIN (the table is
//!    bounded; idle flows are evicted). The class's leaf queue takes it; if accepted and the
//!    class has a mechanism, [`AckMechanism::on_data`] sees it (data, SYN, FIN).
//! 3. *Link sharing.* Per direction, classes form a tree (HTB-like, see `docs/policy.md`): each
//!    has a rate bucket and a ceiling bucket (credit in nanoseconds, may go negative, capped at
//!    `burst`/`cburst`). When the line is free the gateway sends the head of a leaf that can send:
//!    a leaf with rate credit sends on its own (level 0); a leaf without, but with ceiling credit,
//!    borrows from the nearest ancestor with rate credit whose chain up to it has ceiling credit
//!    (level = that ancestor's distance; the link itself lends whenever the line is free, and an
//!    unlimited link always). The lowest level sends first, then the lowest `priority` number;
//!    ties take turns by deficit round robin with the class `quantum`. A sent packet is charged
//!    to the leaf and all its ancestors. After each dequeue a mechanism class is told
//!    ([`AckMechanism::on_class_dequeue`]) with the flow's per-flow queue length.
//! 4. A packet leaves at the end of its serialisation at the link rate (the link rate given in
//!    `[link]`), or when its class may send if the direction has no link rate. Each packet costs
//!    `ip_len + overhead` bytes. A backlogged line starts its next frame when the last one ended,
//!    also when the wake-up comes late (live timers), up to 5 ms late.
//!
//! *Connections the receiver opened.* The opener's SYN is data of its own direction and the
//! answering SYN-ACK may take that direction's ACK path, so the half that carries the answer's
//! data would reach its mechanism without a handshake. When the other direction has a mechanism
//! class, the options of a tracked flow's opening SYN and of its SYN-ACK are kept; when the
//! answering half is first tracked (its SYN-ACK on the data path, or its first data) and its
//! class has a mechanism, the mechanism gets [`AckMechanism::on_receiver_open`] before it sees
//! that packet. The answering half of an upload sends no data and stays untracked. The kept
//! handshake is the one the gateway forwarded: a SYN on a flow past its handshake, or a SYN-ACK
//! that does not acknowledge the kept SYN, changes nothing (RFC 5961 §4).
//!
//! *A connection's second half.* When a flow starts to be tracked while the reverse half of its
//! connection is tracked by a mechanism (the receiver's data on a two-way connection), its
//! mechanism first learns what the other half's has seen of the connection's sequence numbers
//! ([`AckMechanism::adopt_reverse_facts`]), so that it judges its receiver's first packet
//! against them (see [`super::guard`]). An RST ends the connection only if every tracked half's
//! mechanism finds it in window.
//!
//! Flow end (RST, or FIN seen both ways) and eviction call [`AckMechanism::on_flow_end`].
//!
//! **Rates mechanisms see.** At start each class mechanism gets its class's rate
//! ([`AckMechanism::set_rate`]). When a class may borrow (its ceiling is above its rate), the
//! gateway recomputes every `borrow_interval` the rate the class can get now — its assured rate
//! plus its share of what its ancestors' other children leave unused, up to its ceiling — and
//! calls `set_rate` when that changed by more than 1%.
//!
//! **What it is not.** No admission control (paper 000 §1's minimum per-flow rate); no per-flow
//! weights within a class; the class choice is O(classes × depth) per packet sent.

use crate::hash::{HashKey, KeyedIndexMap, KeyedMap};
use crate::middlebox::{Dir, Emit, Middlebox};
use crate::queue::{DropTail, Enqueue, Limit, QueueDisc};
use crate::rng::stream;
use crate::shape::ackmech::{self, AckMechanism, FlowKey};
use crate::shape::drr::{Drr, FlowId};
use crate::shape::pfq::Pfq;
use crate::shape::policy::{LeafSpec, Policy};
use crate::shape::qdisc_spec::QdiscSpec;
use crate::shape::LATE_WAKEUP_CATCHUP;
use crate::stats::{
    BoxStats, BufferStats, ClassStats, ClassWindowStats, FlowTableStats, GatewayStats, LeafStats, PerHostStats,
};
use crate::time::{Dur, Time};
use ackshape_wire::{Packet, SeqNum, TcpFlags};
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;

// Flow state bits.
const DATA_SEEN: u8 = 1;
const FIN_FWD: u8 = 2;
const FIN_REV: u8 = 4;
const ENDED: u8 = 8;
/// Tracked from its opening SYN: the connection's direction is decided.
const SYN_OPENED: u8 = 16;

/// A tracked flow, keyed by its [`FlowKey`] in the data direction.
#[derive(Clone, Copy, Debug)]
struct FlowEntry {
    /// Class index or [`NONE`] (unshaped; cached so the rules run once per flow).
    class: u32,
    dir: Dir,
    state: u8,
    last_seen: Time,
}

/// The handshake of a flow tracked from its opening SYN (see `Gateway::syn_opts`).
#[derive(Clone, Copy, Debug)]
struct KeptSyn {
    /// The opener's initial sequence number: the answer acknowledges `isn + 1`.
    isn: SeqNum,
    opener: ackmech::SynOptions,
    /// The SYN-ACK's options, once the answer passed.
    answer: Option<ackmech::SynOptions>,
}

/// Time-weighted occupancy: current, maximum, and the integral since start; and the same
/// maximum and integral since the measurement window started ([`Middlebox::start_window`]).
#[derive(Clone, Copy, Debug, Default)]
struct Occ {
    cur: usize,
    max: usize,
    area: u128,
    last: Time,
    /// Start of the averaging window (0, or the stats reset).
    start: Time,
    /// Maximum since the window started (since start until then).
    wmax: usize,
    /// `area` when the window started, and when that was.
    warea0: u128,
    wsince: Option<Time>,
    /// When the window ended and its average then (None: still open).
    wend: Option<(Time, f64)>,
}
impl Occ {
    /// Start a new window at `from` (≤ `now`, the time of the call): the level is kept, the
    /// maximum restarts from it and the area counts the level since `from`.
    fn restart(&mut self, from: Time, now: Time) {
        self.area = self.cur as u128 * now.0.saturating_sub(from.0) as u128;
        self.last = now;
        self.max = self.cur;
        self.start = from;
        // A measurement window already open restarts too (its area is the new area from `from`).
        if self.wsince.is_some() {
            self.warea0 = 0;
            self.wmax = self.cur;
            self.wsince = Some(from);
            self.wend = None;
        }
    }
    #[inline]
    fn set(&mut self, now: Time, v: usize) {
        if now > self.last {
            self.area += self.cur as u128 * (now.0 - self.last.0) as u128;
            self.last = now;
        }
        self.cur = v;
        self.max = self.max.max(v);
        if self.wend.is_none() {
            self.wmax = self.wmax.max(v);
        }
    }
    /// Start the measurement window now: its maximum restarts from the current occupancy.
    fn start_window(&mut self, now: Time) {
        let cur = self.cur;
        self.set(now, cur);
        self.wmax = cur;
        self.warea0 = self.area;
        self.wsince = Some(now);
        self.wend = None;
    }
    /// End the measurement window now (if it is open): its maximum and average stop here.
    fn end_window(&mut self, now: Time) {
        if self.wsince.is_some() && self.wend.is_none() {
            let cur = self.cur;
            self.set(now, cur);
            let avg = self.window_avg(now).unwrap_or(0.0);
            self.wend = Some((now, avg));
        }
    }
    /// Average since the window started (None before it did).
    fn window_avg(&self, now: Time) -> Option<f64> {
        let since = self.wsince?;
        if let Some((_, avg)) = self.wend {
            return Some(avg);
        }
        let span = now.0.saturating_sub(since.0);
        if span == 0 {
            return Some(self.cur as f64);
        }
        let area = self.area - self.warea0 + self.cur as u128 * now.0.saturating_sub(self.last.0) as u128;
        Some(area as f64 / span as f64)
    }
    fn avg(&self, now: Time) -> f64 {
        let span = now.0.saturating_sub(self.start.0);
        if span == 0 {
            return 0.0;
        }
        let area = self.area + self.cur as u128 * now.0.saturating_sub(self.last.0) as u128;
        area as f64 / span as f64
    }
}

/// The PCDQ of the P0-A5 path: a FIFO whose limit applies to arrivals; the packet pulled from
/// the per-flow queues after each dequeue always gets in.
struct Pcdq {
    q: std::collections::VecDeque<Packet>,
    bytes: usize,
    limit: Limit,
}
impl Pcdq {
    fn new(limit: Limit) -> Pcdq {
        Pcdq { q: Default::default(), bytes: 0, limit }
    }
    fn enqueue(&mut self, _now: Time, p: Packet) -> Enqueue {
        let full = match self.limit {
            Limit::Packets(n) => self.q.len() >= n,
            Limit::Bytes(b) => self.bytes + p.ip_len() > b,
        };
        if full {
            return Enqueue::Dropped(p);
        }
        self.push(p);
        Enqueue::Queued
    }
    fn push(&mut self, p: Packet) {
        self.bytes += p.ip_len();
        self.q.push_back(p);
    }
    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.ip_len();
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
}

/// A leaf's discipline. Per-flow kinds are concrete so the gateway can read a flow's queue.
enum LeafQ {
    Plain(Box<dyn QueueDisc + Send>),
    Drr(Drr),
    Pfq(Pfq),
    /// P0-A5: per-flow DRR queues feeding a small PCDQ, one packet pulled per PCDQ dequeue.
    PfqDrr {
        pcdq: Pcdq,
        drr: Drr,
    },
}

impl LeafQ {
    fn new(spec: &LeafSpec, rate_bps: u64, rng: crate::rng::Rng) -> LeafQ {
        match spec {
            LeafSpec::Fifo(l) => LeafQ::Plain(Box::new(DropTail::new(*l))),
            LeafSpec::PfqDrr { pcdq, drr } => LeafQ::PfqDrr { pcdq: Pcdq::new(*pcdq), drr: Drr::new(drr.clone()) },
            LeafSpec::Qdisc(QdiscSpec::Drr(c)) => LeafQ::Drr(Drr::new(c.clone())),
            LeafSpec::Qdisc(QdiscSpec::Pfq(c)) => LeafQ::Pfq(Pfq::new(c.clone())),
            LeafSpec::Qdisc(q) => LeafQ::Plain(q.build(rate_bps, rng)),
        }
    }
    fn q(&self) -> &dyn QueueDisc {
        match self {
            LeafQ::Plain(q) => q.as_ref(),
            LeafQ::Drr(d) => d,
            LeafQ::Pfq(p) => p,
            LeafQ::PfqDrr { drr, .. } => drr,
        }
    }
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        match self {
            LeafQ::Plain(q) => q.enqueue(now, pkt),
            LeafQ::Drr(d) => d.enqueue(now, pkt),
            LeafQ::Pfq(p) => p.enqueue(now, pkt),
            LeafQ::PfqDrr { pcdq, drr } => {
                // Straight into the PCDQ only while nobody waits in a per-flow queue (so no flow
                // jumps the round robin and a flow's packets stay in order).
                if drr.len_pkts() == 0 {
                    match pcdq.enqueue(now, pkt) {
                        Enqueue::Queued => Enqueue::Queued,
                        Enqueue::Dropped(p) => drr.enqueue(now, p),
                    }
                } else {
                    drr.enqueue(now, pkt)
                }
            }
        }
    }
    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        match self {
            LeafQ::Plain(q) => q.dequeue(now),
            LeafQ::Drr(d) => d.dequeue(now),
            LeafQ::Pfq(p) => p.dequeue(now),
            LeafQ::PfqDrr { pcdq, drr } => {
                let p = pcdq.dequeue(now).or_else(|| drr.dequeue(now));
                // Step 2.4: pull one packet from the DRR-selected per-flow queue so the PCDQ
                // stays backlogged. While per-flow queues hold packets the PCDQ is full, so the
                // pulled packet replaces the one sent (with a byte limit it may exceed it by
                // less than one packet).
                if p.is_some() {
                    if let Some(m) = drr.dequeue(now) {
                        pcdq.push(m);
                    }
                }
                p
            }
        }
    }
    fn len_pkts(&self) -> usize {
        match self {
            LeafQ::PfqDrr { pcdq, drr } => pcdq.len_pkts() + drr.len_pkts(),
            _ => self.q().len_pkts(),
        }
    }
    fn len_bytes(&self) -> usize {
        match self {
            LeafQ::PfqDrr { pcdq, drr } => pcdq.len_bytes() + drr.len_bytes(),
            _ => self.q().len_bytes(),
        }
    }
    fn next_ready(&self, now: Time) -> Option<Time> {
        match self {
            LeafQ::PfqDrr { .. } => None,
            _ => self.q().next_ready(now),
        }
    }
    fn set_hash_key(&mut self, key: HashKey) {
        match self {
            LeafQ::Plain(q) => q.set_hash_key(key),
            LeafQ::Drr(d) => d.set_hash_key(key),
            LeafQ::Pfq(p) => p.set_hash_key(key),
            LeafQ::PfqDrr { drr, .. } => drr.set_hash_key(key),
        }
    }
    /// The per-flow queue length of `id` (None: the discipline has no per-flow queues).
    fn flow_qlen(&self, id: &FlowId) -> Option<usize> {
        match self {
            LeafQ::Plain(_) => None,
            LeafQ::Drr(d) => Some(d.flow_len(id)),
            LeafQ::Pfq(p) => Some(p.flow_len(id)),
            LeafQ::PfqDrr { drr, .. } => Some(drr.flow_len(id)),
        }
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            LeafQ::PfqDrr { drr, .. } => drr.counters(),
            _ => self.q().counters(),
        }
    }
    /// Drops made inside the discipline (AQM head drops; [`QueueDisc::internal_drops`]).
    fn internal_drops(&self) -> u64 {
        match self {
            LeafQ::Plain(q) => q.internal_drops(),
            _ => 0,
        }
    }
}

/// Counters of one class in one direction.
#[derive(Clone, Copy, Debug, Default)]
struct CStats {
    enq_pkts: u64,
    enq_bytes: u64,
    drops: u64,
    /// The discipline's internal drops when these counters (re)started.
    internal_drops0: u64,
    sent_pkts: u64,
    sent_bytes: u64,
    /// Sent while borrowing (level > 0).
    borrowed_pkts: u64,
    /// Packets handed to the mechanism's ACK path.
    acks_in: u64,
    data: Occ,
    acks: Occ,
    /// `drops` when the measurement window started and (once closed) ended.
    wdrops: Option<(u64, Option<u64>)>,
}

/// One class in one direction.
impl ClassState {
    /// Data packets the class dropped: refused at enqueue, and dropped inside its discipline.
    fn drops(&self) -> u64 {
        let internal = self.leaf.as_ref().map_or(0, |l| l.internal_drops());
        self.st.drops + internal.saturating_sub(self.st.internal_drops0)
    }
}

struct ClassState {
    /// Rate and ceiling credit, ns (may be negative), as of `t_last`.
    tokens: i64,
    ctokens: i64,
    t_last: Time,
    burst_ns: i64,
    cburst_ns: i64,
    deficit: i64,
    /// Nanoseconds per byte at the rate and at the ceiling, ×2^32 (a multiply per packet
    /// instead of a division).
    rate_q: u128,
    ceil_q: u128,
    leaf: Option<LeafQ>,
    mech: Option<Box<dyn AckMechanism + Send>>,
    /// Rate last handed to the mechanism.
    mech_rate: u64,
    st: CStats,
    /// Bytes sent at the last borrow recomputation, and whether it had a backlog since.
    window_bytes: u64,
    backlogged: bool,
}

/// One direction: its line and its class tree.
struct Side {
    dir: Dir,
    link_bps: Option<u64>,
    busy_until: Time,
    in_tx: Option<Packet>,
    cls: Vec<ClassState>,
    /// Round-robin cursor per priority.
    cursor: [usize; 8],
    wake: Option<Time>,
    skip: Vec<bool>,
    /// The leaves that may hold packets (every leaf an enqueue made non-empty; emptied ones leave
    /// lazily when a scan finds them empty), so choosing a leaf and the next wake-up cost the
    /// backlogged leaves, not all classes (a policy with thousands of per-host classes).
    active: Vec<usize>,
    in_active: Vec<bool>,
    /// The classes with an ACK mechanism (in index order): the timers to poll.
    mechs: Vec<usize>,
}

/// Flows tracked in one class and direction (the per-class bounds of `[flows]`).
#[derive(Clone, Copy, Debug, Default)]
struct ClassFlows {
    /// Tracked.
    flows: u32,
    /// ... of which seen only opening (no data yet).
    embryonic: u32,
    /// ... not ended (RST, FIN both ways).
    live: u32,
}

/// Flows one step of the sweep looks at, at most (so one call stays short however many flows
/// are tracked); a pass over more flows continues [`SWEEP_STEP`] later.
pub const SWEEP_CHUNK: usize = 1024;
/// The time between two steps of a sweep pass over more than [`SWEEP_CHUNK`] flows.
pub const SWEEP_STEP: Dur = Dur::from_millis(1);

/// Gateway-wide counters.
#[derive(Clone, Copy, Debug, Default)]
struct GStats {
    unclassified_pkts: u64,
    /// New flows not tracked because their class, their source or their class's embryonic
    /// flows were at their bound (packets).
    untracked_class_full: u64,
    untracked_source_full: u64,
    untracked_embryonic_full: u64,
    flows_created: u64,
    flows_evicted: u64,
    flows_ended: u64,
    /// Flows whose receiver opened the connection, shown to their mechanism at the SYN-ACK.
    receiver_opened: u64,
    untracked_pkts: u64,
    reversed_pkts: u64,
    data_total: Occ,
    acks_total: Occ,
}

/// Per-host classes listed in the statistics per template: the busiest ones (by bytes sent).
pub const PER_HOST_LISTED: usize = 64;

/// The edge gateway. See the module documentation.
pub struct Gateway {
    policy: Policy,
    overhead: usize,
    sides: [Side; 2],
    /// Tracked flows, in insertion order (with removals moving the last one into the gap):
    /// the sweep walks them a chunk at a time, in an order that does not depend on the hash key.
    flows: KeyedIndexMap<FlowKey, FlowEntry>,
    /// Per direction and class: tracked, embryonic and live flows.
    class_flows: [Vec<ClassFlows>; 2],
    /// Tracked flows per data source address (only with `[flows] max_flows_per_source`).
    sources: KeyedMap<std::net::IpAddr, u32>,
    /// The per-class and per-source bounds in force.
    max_per_class: usize,
    max_per_source: usize,
    max_embryonic: usize,
    /// Where the sweep pass in progress continues (None: no pass in progress).
    sweep_at: Option<usize>,
    key: HashKey,
    /// The handshake of a tracked flow that opened with a SYN, when the other direction has a
    /// mechanism class: the SYN's sequence number and options, and the options of the SYN-ACK
    /// that acknowledged it, once it passed. Whenever the answering half starts to be tracked
    /// (its SYN-ACK on the data path, or its first data; again if it ended alone and comes
    /// back), its mechanism is shown the handshake ([`AckMechanism::on_receiver_open`]): a
    /// connection its receiver opened (a download asked for on the LAN), or the reverse data of
    /// a two-way connection. Learnt only from the handshake the gateway forwarded: a SYN on a
    /// flow past its handshake, or a SYN-ACK that does not acknowledge the kept SYN, changes
    /// nothing (RFC 5961 §4). Bounded by the flow table: removed with the opener's flow.
    syn_opts: KeyedMap<FlowKey, KeptSyn>,
    scratch: Vec<Packet>,
    /// Packets released by a mechanism that carry data: they take the data path next (the flag:
    /// the mechanism accepted the packet, so it may start tracking a flow).
    reinject: Vec<(Dir, Packet, bool)>,
    next_sweep: Time,
    /// When the next sweep pass starts (`next_sweep` is the next step of the pass in progress).
    next_sweep_pass: Time,
    sweep_every: Dur,
    next_borrow: Option<Time>,
    last_now: Time,
    g: GStats,
    /// Reset the class and buffer statistics at the first event at or after this time.
    stats_from: Option<Time>,
    /// The mechanisms' next deadlines, cached after every call into them, so `poll_timeout`
    /// does not ask every mechanism (thousands, with per-host classes) after every event.
    timers: Timers,
}

/// Each mechanism's `poll_timeout` as of the last call into it (`due[side][class]`), and a heap of
/// them with lazy deletion: an entry is current while `due` still holds its time, and the heap's
/// top is always current (stale tops are popped as they surface).
#[derive(Default)]
struct Timers {
    due: [Vec<Option<Time>>; 2],
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Time, usize, usize)>>,
    /// `on_timeout`'s work lists, kept to reuse their memory.
    pending: std::collections::BinaryHeap<std::cmp::Reverse<(usize, usize)>>,
    later: Vec<std::cmp::Reverse<(Time, usize, usize)>>,
}

impl Timers {
    fn current(&self, t: Time, d: usize, c: usize) -> bool {
        self.due[d][c] == Some(t)
    }

    fn set(&mut self, d: usize, c: usize, t: Option<Time>) {
        if self.due[d][c] != t {
            self.due[d][c] = t;
            if let Some(t) = t {
                self.heap.push(std::cmp::Reverse((t, d, c)));
            }
        }
        self.clean();
    }

    /// Pop stale tops; rebuild the heap when stale entries outnumber the current ones.
    fn clean(&mut self) {
        while let Some(&std::cmp::Reverse((t, d, c))) = self.heap.peek() {
            if self.current(t, d, c) {
                break;
            }
            self.heap.pop();
        }
        let live = self.due[0].len() + self.due[1].len();
        if self.heap.len() > 4 * live + 64 {
            self.heap = (0..2)
                .flat_map(|d| {
                    self.due[d].iter().enumerate().filter_map(move |(c, t)| t.map(|t| std::cmp::Reverse((t, d, c))))
                })
                .collect();
        }
    }

    fn next(&self) -> Option<Time> {
        self.heap.peek().map(|r| r.0 .0)
    }
}

/// Inverse of a flow key (the key of the packets travelling to its sender).
#[inline]
fn rev(k: &FlowKey) -> FlowKey {
    (k.1, k.0, k.3, k.2)
}

#[inline]
fn key_of(p: &Packet) -> Option<FlowKey> {
    p.tcp().map(|t| (p.ip.src, p.ip.dst, t.sport, t.dport))
}

/// Does a mechanism see this data-direction packet (data, SYN or FIN)?
#[inline]
fn is_flow_data(p: &Packet) -> bool {
    match p.tcp() {
        Some(t) => p.payload_len > 0 || t.flags.0 & (TcpFlags::SYN.0 | TcpFlags::FIN.0) != 0,
        None => false,
    }
}

/// 8·10⁹·2³² / rate: nanoseconds per byte in 32.32 fixed point.
fn per_byte_q32(bps: u64) -> u128 {
    ((8_000_000_000u128) << 32) / bps.max(1) as u128
}

/// Nanoseconds `bytes` take at the rate encoded by `q` (rounded up).
#[inline]
fn cost(bytes: usize, q: u128) -> i64 {
    let v = (bytes as u128 * q).div_ceil(1 << 32);
    v.min(i64::MAX as u128) as i64
}

fn ns(d: Dur) -> i64 {
    d.0.min(i64::MAX as u64) as i64
}

impl Gateway {
    /// Every occupancy counter with a measurement window: data and ACKs of each class on each
    /// side, and the gateway-wide totals.
    fn occupancies(&mut self) -> impl Iterator<Item = &mut Occ> {
        let classes =
            self.sides.iter_mut().flat_map(|s| s.cls.iter_mut()).flat_map(|c| [&mut c.st.data, &mut c.st.acks]);
        classes.chain([&mut self.g.data_total, &mut self.g.acks_total])
    }

    /// A gateway running `policy`. Each packet costs `ip_len + overhead_bytes` of link and class
    /// credit (the live driver uses 14, the Ethernet header). `seed` seeds the leaf disciplines'
    /// random streams and the key of every flow table ([`HashKey::from_seed`]: the simulator's
    /// choice, deterministic).
    pub fn new(policy: Policy, overhead_bytes: usize, seed: u64) -> Gateway {
        Gateway::with_key(policy, overhead_bytes, seed, HashKey::from_seed(seed))
    }

    /// [`Gateway::new`] with the flow tables (the gateway's, its leaf disciplines' and its
    /// mechanisms') keyed by `key` (the live gateway: [`HashKey::random`]).
    pub fn with_key(policy: Policy, overhead_bytes: usize, seed: u64, key: HashKey) -> Gateway {
        let mk_side = |d: Dir| {
            let cls = policy
                .classes
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let used = c.dirs[d.index()];
                    let leaf = match (&c.leaf, used) {
                        (Some(l), true) => {
                            let mut q = LeafQ::new(l, c.rate_bps, stream(seed, "gw-leaf", (i * 2 + d.index()) as u64));
                            q.set_hash_key(key.derive("gw-leaf", (i * 2 + d.index()) as u64));
                            Some(q)
                        }
                        _ => None,
                    };
                    let mech = match (&c.mechanism, used) {
                        (Some((kind, settings)), true) => {
                            let mut m = crate::shape::mechanism::build(kind, settings)
                                .expect("validated by Policy")
                                .expect("kind \"none\" is not stored");
                            m.set_overhead(overhead_bytes as u32);
                            m.set_hash_key(key.derive("gw-mech", (i * 2 + d.index()) as u64));
                            m.set_rate(Time::ZERO, c.rate_bps);
                            Some(m)
                        }
                        _ => None,
                    };
                    let burst_ns = ns(Dur::tx_time(c.burst_bytes as usize, c.rate_bps));
                    let cburst_ns = ns(Dur::tx_time(c.cburst_bytes as usize, c.ceil_bps));
                    ClassState {
                        tokens: burst_ns,
                        ctokens: cburst_ns,
                        t_last: Time::ZERO,
                        burst_ns,
                        cburst_ns,
                        deficit: c.quantum_bytes as i64,
                        rate_q: per_byte_q32(c.rate_bps),
                        ceil_q: per_byte_q32(c.ceil_bps),
                        leaf,
                        mech,
                        mech_rate: c.rate_bps,
                        st: CStats::default(),
                        window_bytes: 0,
                        backlogged: false,
                    }
                })
                .collect::<Vec<_>>();
            Side {
                dir: d,
                link_bps: policy.link_bps[d.index()],
                busy_until: Time::ZERO,
                in_tx: None,
                skip: vec![false; cls.len()],
                active: Vec::new(),
                in_active: vec![false; cls.len()],
                mechs: (0..cls.len()).filter(|&c| cls[c].mech.is_some()).collect(),
                cls,
                cursor: [0; 8],
                wake: None,
            }
        };
        let sides = [mk_side(Dir::AToB), mk_side(Dir::BToA)];
        let borrows = policy.classes.iter().any(|c| c.mechanism.is_some() && c.ceil_bps > c.rate_bps);
        let sweep_every =
            Dur::from_secs_f64(policy.flows.embryonic_timeout_s.min(policy.flows.idle_timeout_s) / 2.0).max(Dur(1));
        let n = policy.classes.len();
        let (max_per_class, max_per_source, max_embryonic) = policy.flows.bounds(policy.leaves().count());
        let mut gw = Gateway {
            next_borrow: borrows.then_some(Time::ZERO + policy.borrow_interval),
            policy,
            overhead: overhead_bytes,
            sides,
            flows: crate::hash::index_map(key.derive("gw-flows", 0)),
            class_flows: [vec![ClassFlows::default(); n], vec![ClassFlows::default(); n]],
            sources: crate::hash::map(key.derive("gw-sources", 0)),
            max_per_class,
            max_per_source,
            max_embryonic,
            sweep_at: None,
            key,
            syn_opts: crate::hash::map(key.derive("gw-syn-opts", 0)),
            scratch: Vec::new(),
            reinject: Vec::new(),
            next_sweep: Time::ZERO + sweep_every,
            next_sweep_pass: Time::ZERO + sweep_every,
            sweep_every,
            last_now: Time::ZERO,
            g: GStats::default(),
            stats_from: None,
            timers: Timers::default(),
        };
        for d in 0..2 {
            gw.timers.due[d] = vec![None; gw.sides[d].cls.len()];
            for i in 0..gw.sides[d].mechs.len() {
                let c = gw.sides[d].mechs[i];
                gw.refresh_timer(d, c);
            }
        }
        gw
    }

    /// Cache mechanism `c`'s (side `d`) next deadline after a call into it.
    #[inline]
    fn refresh_timer(&mut self, d: usize, c: usize) {
        let t = self.sides[d].cls[c].mech.as_ref().and_then(|m| m.poll_timeout());
        self.timers.set(d, c, t);
    }

    /// Replace the mechanism of leaf `class` in `dir` (e.g. a mechanism built outside the
    /// factory, or a test double); it gets the gateway's overhead and the class's rate. Panics if the class carries no
    /// traffic in `dir`.
    pub fn set_mechanism(&mut self, class: usize, dir: Dir, mut m: Box<dyn AckMechanism + Send>) {
        let rate = self.policy.classes[class].rate_bps;
        let c = &mut self.sides[dir.index()].cls[class];
        assert!(c.leaf.is_some(), "class {class} carries no traffic in {dir:?}");
        m.set_overhead(self.overhead as u32);
        m.set_hash_key(self.key.derive("gw-mech", (class * 2 + dir.index()) as u64));
        m.set_rate(self.last_now, rate);
        c.mech = Some(m);
        c.mech_rate = rate;
        let side = &mut self.sides[dir.index()];
        if let Err(at) = side.mechs.binary_search(&class) {
            side.mechs.insert(at, class);
        }
        self.refresh_timer(dir.index(), class);
        if self.policy.classes[class].ceil_bps > rate && self.next_borrow.is_none() {
            self.next_borrow = Some(self.last_now + self.policy.borrow_interval);
        }
    }

    /// Measure from `t` on (a warm-up): at the first packet or timer at or after `t` the
    /// per-class counters (enqueued, sent, borrowed, drops, ACKs in) restart from zero and the
    /// buffer occupancies (per class and gateway-wide: average and maximum, data and ACKs)
    /// restart from their level at `t`, so the start-up burst does not count. Flow-table
    /// counters and the mechanisms' own `mechanism_stats` stay whole-run.
    pub fn reset_stats_at(&mut self, t: Time) {
        self.stats_from = Some(t);
    }

    fn maybe_reset_stats(&mut self, now: Time) {
        let Some(t) = self.stats_from else { return };
        if now < t {
            return;
        }
        self.stats_from = None;
        for s in &mut self.sides {
            for c in &mut s.cls {
                // No event since `t`: the levels have held since then.
                let (mut data, mut acks) = (c.st.data, c.st.acks);
                data.restart(t, now);
                acks.restart(t, now);
                // Counters restart from zero, so an open window's drops count from zero too.
                let wdrops = c.st.wdrops.map(|(_, end)| (0, end.map(|_| 0)));
                let internal_drops0 = c.leaf.as_ref().map_or(0, |l| l.internal_drops());
                c.st = CStats { data, acks, wdrops, internal_drops0, ..CStats::default() };
            }
        }
        self.g.data_total.restart(t, now);
        self.g.acks_total.restart(t, now);
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Flows currently tracked.
    pub fn flows_tracked(&self) -> usize {
        self.flows.len()
    }

    /// The rate last handed to the mechanism of `class` in `dir` (None: no mechanism there).
    pub fn mechanism_rate(&self, class: usize, dir: Dir) -> Option<u64> {
        let c = &self.sides[dir.index()].cls[class];
        c.mech.as_ref().map(|_| c.mech_rate)
    }

    /// ACKs the mechanisms hold now, over all classes and directions.
    pub fn acks_held(&self) -> usize {
        self.sides.iter().flat_map(|s| s.cls.iter()).filter_map(|c| c.mech.as_ref()).map(|m| m.acks_held()).sum()
    }

    /// Packets (data) queued in `class` in `dir`.
    pub fn class_queue_pkts(&self, class: usize, dir: Dir) -> usize {
        self.sides[dir.index()].cls[class].leaf.as_ref().map_or(0, |l| l.len_pkts())
    }

    // ---- flows ----

    /// Take over from `old`, the gateway a policy reload replaces, the state of every class the
    /// new policy keeps, so that a reload does not make the mechanisms learn their flows again
    /// (TCR's window scale and right edge, PostACK's queue of ACKs) from mid-connection packets.
    ///
    /// Classes are matched by name, per direction. For a class both policies have:
    /// - its rate and ceiling credit carry over (converted to the new rates, at most the new
    ///   bursts), so that a reload does not hand it a fresh burst;
    /// - if it is a leaf carrying data that way in both and its mechanism is the same (kind and
    ///   settings), the mechanism moves over with its per-flow state and the ACKs it holds (it is
    ///   told the new rate), and so do the class's tracked flows (the class of a tracked flow is
    ///   kept; changed rules classify new flows) and their kept handshakes;
    /// - if, in addition, its leaf discipline and rate are the same, its queue moves over too, so
    ///   its packets leave in order at the class's rate and a mechanism that counts the class's
    ///   departures of a flow (PostACK) sees them.
    ///
    /// Every other flow `old` tracks in a class with a mechanism is ended there: the mechanism
    /// releases what it holds for it onto `out` now ([`AckMechanism::on_flow_end`]), rather
    /// than keeping it until the retired box is dropped. Unshaped flows (no class) are not
    /// carried: the new rules classify them at their next packet. Flows beyond the new policy's
    /// `[flows]` bounds are ended rather than carried.
    pub fn take_over_from(&mut self, now: Time, old: &mut Gateway, out: &mut Emit) -> crate::middlebox::TakeOver {
        let mut r = crate::middlebox::TakeOver::default();
        let map: Vec<Option<usize>> = old.policy.classes.iter().map(|c| self.policy.class_index(&c.name)).collect();
        // carried[d][old class]: its flows (and mechanism) move to `map[old class]`.
        let mut carried = [vec![false; map.len()], vec![false; map.len()]];
        for (d, carried_d) in carried.iter_mut().enumerate() {
            for (i, j) in map.iter().enumerate() {
                let Some(j) = *j else { continue };
                let (oc, nc) = (&old.policy.classes[i], &self.policy.classes[j]);
                let (os, ns_) = (&mut old.sides[d].cls[i], &mut self.sides[d].cls[j]);
                // Credit in ns at the old rate → the same bytes in ns at the new one.
                let conv = |t: i64, from: u64, to: u64, cap: i64| -> i64 {
                    let v = t as i128 * from as i128 / to.max(1) as i128;
                    v.clamp(i64::MIN as i128, cap as i128) as i64
                };
                ns_.tokens = conv(os.tokens, oc.rate_bps, nc.rate_bps, ns_.burst_ns);
                ns_.ctokens = conv(os.ctokens, oc.ceil_bps, nc.ceil_bps, ns_.cburst_ns);
                ns_.t_last = os.t_last;
                if !(oc.is_leaf() && nc.is_leaf() && oc.dirs[d] && nc.dirs[d] && oc.mechanism == nc.mechanism) {
                    continue;
                }
                carried_d[i] = true;
                if os.mech.is_some() && ns_.mech.is_some() {
                    // Swapped, not taken: the retired box keeps a (fresh) mechanism in the class,
                    // as every code path there expects.
                    std::mem::swap(&mut os.mech, &mut ns_.mech);
                    if let Some(m) = ns_.mech.as_mut() {
                        m.set_rate(now, nc.rate_bps);
                    }
                    ns_.mech_rate = nc.rate_bps;
                    r.mechanisms_carried += 1;
                }
                if oc.leaf == nc.leaf && oc.rate_bps == nc.rate_bps && os.leaf.is_some() && ns_.leaf.is_some() {
                    std::mem::swap(&mut os.leaf, &mut ns_.leaf);
                    os.st.internal_drops0 = os.leaf.as_ref().map_or(0, |l| l.internal_drops());
                    ns_.st.internal_drops0 = ns_.leaf.as_ref().map_or(0, |l| l.internal_drops());
                    if ns_.leaf.as_ref().is_some_and(|l| l.len_pkts() > 0) && !self.sides[d].in_active[j] {
                        self.sides[d].in_active[j] = true;
                        self.sides[d].active.push(j);
                    }
                }
            }
        }
        // The flows, in `old`'s insertion order (so the new table's order, and the order of
        // what is released, do not depend on the hash keys).
        let keys: Vec<FlowKey> = old.flows.keys().copied().collect();
        for k in keys {
            let Some(&e) = old.flows.get(&k) else { continue };
            if e.class == NONE {
                continue;
            }
            let (d, i) = (e.dir.index(), e.class as usize);
            let target = map[i].filter(|_| carried[d][i] && e.state & ENDED == 0);
            let fits = target.is_some_and(|j| {
                !self.flows.contains_key(&k) && self.admit(e.dir, Some(j), k.0, e.state & DATA_SEEN == 0)
            });
            match target {
                Some(j) if fits => {
                    let j = j as u32;
                    self.flows.insert(k, FlowEntry { class: j, ..e });
                    self.count_flow(e.dir, j, k.0, e.state, 1);
                    if let Some(ks) = old.syn_opts.get(&k) {
                        self.syn_opts.insert(k, *ks);
                    }
                    r.flows_carried += 1;
                }
                _ => {
                    if e.state & ENDED == 0 && old.sides[d].cls[i].mech.is_some() {
                        old.end_flow(now, k, out);
                        r.flows_released += 1;
                    }
                }
            }
        }
        // `old` forgets every flow: it gets no more packets, and the carried ones' state is here.
        old.flows.clear();
        old.syn_opts.clear();
        old.sources.clear();
        old.sweep_at = None;
        for cf in old.class_flows.iter_mut().flat_map(|v| v.iter_mut()) {
            *cf = ClassFlows::default();
        }
        old.drain_reinject(now, out);
        for d in 0..2 {
            for c in 0..old.sides[d].cls.len() {
                old.refresh_timer(d, c);
                old.note_acks(now, old.sides[d].dir, c);
                old.note_data(now, d, c);
            }
            for c in 0..self.sides[d].cls.len() {
                self.refresh_timer(d, c);
                self.note_acks(now, self.sides[d].dir, c);
                self.note_data(now, d, c);
            }
            self.pump(now, d, out);
        }
        self.last_now = self.last_now.max(now);
        self.drain_reinject(now, out);
        r
    }

    /// The class of a data packet travelling `dir`, tracking its flow if it is TCP (and
    /// `may_open`: not a packet a mechanism judged inconsistent with its flow).
    fn class_of(&mut self, now: Time, dir: Dir, pkt: &Packet, may_open: bool) -> Option<usize> {
        let Some(key) = key_of(pkt) else {
            return self.policy.classify(dir, pkt);
        };
        if let Some(e) = self.flows.get_mut(&key) {
            if e.dir == dir {
                e.last_seen = now;
                if pkt.payload_len > 0 && e.state & DATA_SEEN == 0 {
                    e.state |= DATA_SEEN;
                    if e.class != NONE {
                        self.class_flows[dir.index()][e.class as usize].embryonic -= 1;
                    }
                }
                return (e.class != NONE).then_some(e.class as usize);
            }
            // The same key travelling the other way (spoofed, or routed asymmetrically): the flow
            // stays with the direction it was tracked in, whose mechanism holds its state and is
            // told when it ends; this packet is classified by the rules, untracked. (Replacing
            // the entry left that mechanism's state for the flow in place for good.)
            self.g.reversed_pkts += 1;
            return self.policy.classify(dir, pkt);
        }
        let class = self.policy.classify(dir, pkt);
        let t = pkt.tcp().expect("TCP");
        // A flow's direction comes from its SYN. Every segment after the SYN carries an ACK
        // (RFC 793 §3.1), so one without is no flow's start. A SYN for the reverse of a flow
        // tracked from its own SYN the other way opens nothing (the connection is already
        // there; a simultaneous open of the same tuple is not one a blind sender gets to make),
        // and a packet its mechanism judged inconsistent (spoofed data with a real flow's tuple)
        // opens nothing either: the real sender's data would otherwise meet a mechanism on the
        // ACK path that rewrites it.
        let syn = t.flags.contains(TcpFlags::SYN);
        let answered = syn
            && !t.flags.contains(TcpFlags::ACK)
            && self.flows.get(&rev(&key)).is_some_and(|e| e.dir != dir && e.state & SYN_OPENED != 0);
        let opens = is_flow_data(pkt)
            && !t.flags.contains(TcpFlags::RST)
            && (syn || t.flags.contains(TcpFlags::ACK))
            && may_open
            && !answered;
        if opens {
            if self.admit(dir, class, key.0, pkt.payload_len == 0) {
                let mut state = if pkt.payload_len > 0 { DATA_SEEN } else { 0 };
                if syn && !t.flags.contains(TcpFlags::ACK) {
                    state |= SYN_OPENED;
                }
                let class = class.map_or(NONE, |c| c as u32);
                self.flows.insert(key, FlowEntry { class, dir, state, last_seen: now });
                self.count_flow(dir, class, key.0, state, 1);
                self.g.flows_created += 1;
                if !self.syn_opts.is_empty() {
                    self.receiver_opened(now, dir, key, class);
                }
                self.adopt_reverse_facts(now, dir, key, class);
            } else {
                self.g.untracked_pkts += 1;
            }
        }
        class
    }

    /// May a new flow from `src` (embryonic: no data yet) be tracked in `class` travelling
    /// `dir`? Within `[flows] max_flows` overall, the class's share (`max_flows_per_class`), its
    /// embryonic flows' (`max_embryonic_per_class`) and the source's (`max_flows_per_source`): a
    /// flood of new flows in one class, or from one source, cannot take every other class's
    /// room in the table (nor their mechanisms' state). Refusals are counted by reason.
    fn admit(&mut self, dir: Dir, class: Option<usize>, src: std::net::IpAddr, embryonic: bool) -> bool {
        if self.flows.len() >= self.policy.flows.max_flows {
            return false;
        }
        if let Some(c) = class {
            let cf = &self.class_flows[dir.index()][c];
            if cf.flows as usize >= self.max_per_class {
                self.g.untracked_class_full += 1;
                return false;
            }
            if embryonic && cf.embryonic as usize >= self.max_embryonic {
                self.g.untracked_embryonic_full += 1;
                return false;
            }
        }
        if self.max_per_source < self.policy.flows.max_flows
            && self.sources.get(&src).is_some_and(|&n| n as usize >= self.max_per_source)
        {
            self.g.untracked_source_full += 1;
            return false;
        }
        true
    }

    /// Count a flow in (`by` = 1) or out (-1) of its class's and its source's totals.
    fn count_flow(&mut self, dir: Dir, class: u32, src: std::net::IpAddr, state: u8, by: i32) {
        if class != NONE {
            let cf = &mut self.class_flows[dir.index()][class as usize];
            cf.flows = cf.flows.wrapping_add_signed(by);
            if state & DATA_SEEN == 0 {
                cf.embryonic = cf.embryonic.wrapping_add_signed(by);
            }
            if state & ENDED == 0 {
                cf.live = cf.live.wrapping_add_signed(by);
            }
        }
        if self.max_per_source < self.policy.flows.max_flows {
            let n = self.sources.entry(src).or_insert(0);
            *n = n.wrapping_add_signed(by);
            if *n == 0 {
                self.sources.remove(&src);
            }
        }
    }

    /// Forget a tracked flow (and its kept SYN options).
    fn remove_flow(&mut self, key: &FlowKey) {
        if let Some(e) = self.flows.swap_remove(key) {
            self.count_flow(e.dir, e.class, key.0, e.state, -1);
        }
        self.syn_opts.remove(key);
    }

    /// `key` (travelling `dir`, in `class`) has just been tracked: if it answers a kept SYN, its
    /// receiver opened the connection; show its mechanism the handshake.
    fn receiver_opened(&mut self, now: Time, dir: Dir, key: FlowKey, class: u32) {
        let rk = rev(&key);
        // Kept (not taken): if this half ends alone (an RST its mechanism judged in window)
        // and comes back, it learns the same handshake again rather than none.
        let Some(&KeptSyn { opener, answer: Some(answer), .. }) = self.syn_opts.get(&rk) else { return };
        let (d, c) = (dir.index(), class as usize);
        if class == NONE {
            return;
        }
        if let Some(m) = self.sides[d].cls[c].mech.as_mut() {
            self.g.receiver_opened += 1;
            m.on_receiver_open(now, key, &answer, &opener);
            self.refresh_timer(d, c);
        }
    }

    /// `key` (travelling `dir`, in `class`) has just been tracked: if the other half of its
    /// connection is tracked by a mechanism, this one's mechanism learns what that one has seen
    /// of the connection's sequence numbers ([`AckMechanism::adopt_reverse_facts`]). Without
    /// this, the second half (the receiver's data on a two-way connection) started knowing
    /// nothing of its receiver's numbers, and took that receiver's first packet on trust: spoofed
    /// data far ahead with the sender's tuple had its window rewritten as the sender's ACK.
    fn adopt_reverse_facts(&mut self, now: Time, dir: Dir, key: FlowKey, class: u32) {
        if class == NONE || self.sides[dir.index()].cls[class as usize].mech.is_none() {
            return;
        }
        let rk = rev(&key);
        let Some(e) = self.flows.get(&rk) else { return };
        if e.dir != dir.reverse() || e.class == NONE || e.state & ENDED != 0 {
            return;
        }
        let (rd, rc) = (e.dir.index(), e.class as usize);
        let Some(facts) = self.sides[rd].cls[rc].mech.as_ref().and_then(|m| m.seq_facts(rk)) else { return };
        if let Some(m) = self.sides[dir.index()].cls[class as usize].mech.as_mut() {
            m.adopt_reverse_facts(now, key, &facts);
            self.refresh_timer(dir.index(), class as usize);
        }
    }

    /// Whether an RST for tracked flow `key` (from its sender if `from_sender`) acts: its
    /// mechanism's judgement ([`AckMechanism::rst_in_window`]); true for flows without one.
    fn rst_in_window(&self, key: FlowKey, pkt: &Packet, from_sender: bool) -> bool {
        let Some(e) = self.flows.get(&key) else { return true };
        if e.class == NONE {
            return true;
        }
        match self.sides[e.dir.index()].cls[e.class as usize].mech.as_ref() {
            Some(m) => m.rst_in_window(key, pkt, from_sender),
            None => true,
        }
    }

    /// End a flow: the mechanism releases what it holds for it.
    fn end_flow(&mut self, now: Time, key: FlowKey, out: &mut Emit) {
        let Some(e) = self.flows.get_mut(&key) else { return };
        if e.state & ENDED != 0 {
            return;
        }
        e.state |= ENDED;
        self.g.flows_ended += 1;
        let (class, dir) = (e.class, e.dir);
        if class == NONE {
            return;
        }
        self.class_flows[dir.index()][class as usize].live -= 1;
        let d = dir.index();
        if let Some(m) = self.sides[d].cls[class as usize].mech.as_mut() {
            let mut scratch = std::mem::take(&mut self.scratch);
            m.on_flow_end(now, key, &mut scratch);
            self.refresh_timer(d, class as usize);
            self.mech_out(now, dir, class as usize, &mut scratch, out, true);
            self.scratch = scratch;
        }
    }

    /// Evict idle flows: a pass over every tracked flow each `sweep_every`, in steps of at most
    /// [`SWEEP_CHUNK`] flows [`SWEEP_STEP`] apart, so no call of the box ends (and lets go of)
    /// tens of thousands of flows at once. The walk is in the flow table's insertion order, so
    /// the order in which flows end does not depend on the hash key.
    fn sweep(&mut self, now: Time, out: &mut Emit) {
        if now < self.next_sweep {
            return;
        }
        let start = match self.sweep_at {
            Some(i) => i,
            None => {
                // A new pass; the next one starts `sweep_every` after this one's start.
                self.next_sweep_pass = now + self.sweep_every;
                0
            }
        };
        let idle = Dur::from_secs_f64(self.policy.flows.idle_timeout_s);
        let emb = Dur::from_secs_f64(self.policy.flows.embryonic_timeout_s);
        let mut i = start;
        let mut budget = SWEEP_CHUNK;
        while budget > 0 && i < self.flows.len() {
            budget -= 1;
            let Some((&k, e)) = self.flows.get_index(i) else { break };
            let lim = if e.state & DATA_SEEN == 0 || e.state & ENDED != 0 { emb } else { idle };
            if now.since(e.last_seen) < lim {
                i += 1;
                continue;
            }
            self.end_flow(now, k, out);
            // The last flow moves into slot i: it is looked at next.
            self.remove_flow(&k);
            self.g.flows_evicted += 1;
        }
        if i < self.flows.len() {
            self.sweep_at = Some(i);
            self.next_sweep = now + SWEEP_STEP;
        } else {
            self.sweep_at = None;
            self.next_sweep = self.next_sweep_pass.max(now + Dur(1));
        }
    }

    // ---- mechanisms ----

    /// What mechanism `class` (shaping `data_dir`) released: pure ACKs leave towards the senders
    /// now; packets with data take the data path of their own direction.
    /// `accepted`: false when the mechanism forwarded the packet it was given untouched as
    /// inconsistent ([`AckMechanism::last_ack_untouched`]).
    fn mech_out(
        &mut self,
        now: Time,
        data_dir: Dir,
        class: usize,
        pkts: &mut Vec<Packet>,
        out: &mut Emit,
        accepted: bool,
    ) {
        let ack_dir = data_dir.reverse();
        for p in pkts.drain(..) {
            if p.payload_len > 0 {
                self.reinject.push((ack_dir, p, accepted));
            } else {
                out.push((ack_dir, p));
            }
        }
        self.note_acks(now, data_dir, class);
    }

    fn note_acks(&mut self, now: Time, data_dir: Dir, class: usize) {
        let c = &mut self.sides[data_dir.index()].cls[class];
        if let Some(m) = &c.mech {
            let held = m.acks_held();
            let old = c.st.acks.cur;
            c.st.acks.set(now, held);
            let tot = self.g.acks_total.cur + held - old;
            self.g.acks_total.set(now, tot);
        }
    }

    fn note_data(&mut self, now: Time, d: usize, class: usize) {
        let c = &mut self.sides[d].cls[class];
        let len = c.leaf.as_ref().map_or(0, |l| l.len_pkts());
        let old = c.st.data.cur;
        c.st.data.set(now, len);
        let tot = self.g.data_total.cur + len - old;
        self.g.data_total.set(now, tot);
    }

    // ---- the data path ----

    fn data_path(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit, may_open: bool) {
        let Some(class) = self.class_of(now, dir, &pkt, may_open) else {
            self.g.unclassified_pkts += 1;
            out.push((dir, pkt));
            return;
        };
        let d = dir.index();
        // Only a flow tracked in this direction and class (its end reaches this mechanism).
        let tracked_mech = self.sides[d].cls[class].mech.is_some()
            && is_flow_data(&pkt)
            && key_of(&pkt).is_some_and(|k| {
                self.flows.get(&k).is_some_and(|e| e.dir == dir && e.class == class as u32 && e.state & ENDED == 0)
            });
        let probe = tracked_mech.then(|| pkt.clone());
        let len = pkt.ip_len() as u64;
        if self.sides[d].in_tx.is_some() && self.sides[d].busy_until < now {
            // The line finished a frame before `now` and its (late, live) wake-up has not come
            // yet: let it take what was queued then before this packet joins, so that `pump`
            // never starts this packet before it arrived. (Never in the simulator: its wake-ups
            // come at `busy_until` exactly.)
            self.pump(now, d, out);
        }
        let c = &mut self.sides[d].cls[class];
        let leaf = c.leaf.as_mut().expect("rules and the default class name leaves");
        let accepted = match leaf.enqueue(now, pkt) {
            Enqueue::Queued => true,
            Enqueue::Dropped(v) => {
                c.st.drops += 1;
                // Another packet may have been pushed out (longest-queue drop): ours is in.
                probe.as_ref().is_some_and(|p| *p != v)
            }
        };
        c.st.enq_pkts += 1;
        c.st.enq_bytes += len;
        c.backlogged = true;
        if accepted {
            if let (Some(p), Some(m)) = (probe.as_ref(), c.mech.as_mut()) {
                m.on_data(now, key_of(p).expect("TCP"), p);
                self.refresh_timer(d, class);
            }
        }
        if !self.sides[d].in_active[class] && self.sides[d].cls[class].leaf.as_ref().is_some_and(|l| l.len_pkts() > 0) {
            self.sides[d].in_active[class] = true;
            self.sides[d].active.push(class);
        }
        self.note_data(now, d, class);
        self.pump(now, d, out);
    }

    /// Charge a sent packet to a class and its ancestors.
    fn charge(&mut self, d: usize, class: usize, bytes: usize, now: Time) {
        let mut at = Some(class);
        while let Some(c) = at {
            let pc = &self.policy.classes[c];
            let s = &mut self.sides[d].cls[c];
            Self::refill(s, now);
            s.tokens -= cost(bytes, s.rate_q);
            s.ctokens -= cost(bytes, s.ceil_q);
            at = pc.parent;
        }
    }

    /// Bring a class's credit up to `now`.
    #[inline]
    fn refill(s: &mut ClassState, now: Time) {
        if now > s.t_last {
            let el = ns(now.since(s.t_last));
            s.tokens = (s.tokens.saturating_add(el)).min(s.burst_ns);
            s.ctokens = (s.ctokens.saturating_add(el)).min(s.cburst_ns);
            s.t_last = now;
        }
    }

    /// The level at which leaf `c` can send now (0: on its own rate; k: borrowing from the
    /// ancestor k up; depth+1: from the link), or None.
    fn level(&mut self, d: usize, c: usize, now: Time) -> Option<usize> {
        let mut at = c;
        let mut lvl = 0;
        loop {
            let s = &mut self.sides[d].cls[at];
            Self::refill(s, now);
            if s.ctokens < 0 {
                return None;
            }
            if s.tokens >= 0 {
                return Some(lvl);
            }
            match self.policy.classes[at].parent {
                Some(p) => {
                    at = p;
                    lvl += 1;
                }
                None => return Some(lvl + 1),
            }
        }
    }

    /// When leaf `c` (credit brought up to `now`) can next send by credit alone.
    fn ready_at(&self, d: usize, c: usize, now: Time) -> Time {
        let neg = |v: i64| if v < 0 { (-v) as u64 } else { 0 };
        let s = &self.sides[d].cls[c];
        let ceil_wait = neg(s.ctokens);
        let mut best = neg(s.tokens);
        // Borrowing via ancestor k: ceiling credit of the chain up to k, rate credit of k.
        let mut chain = ceil_wait;
        let mut at = self.policy.classes[c].parent;
        while let Some(a) = at {
            let sa = &self.sides[d].cls[a];
            let el = now.since(sa.t_last).0 as i64;
            let tok = (sa.tokens.saturating_add(el)).min(sa.burst_ns);
            let ctok = (sa.ctokens.saturating_add(el)).min(sa.cburst_ns);
            chain = chain.max(neg(ctok));
            best = best.min(chain.max(neg(tok)));
            at = self.policy.classes[a].parent;
        }
        // The link lends whenever the line is free.
        best = best.min(chain);
        now + Dur(ceil_wait.max(best))
    }

    /// Send what the line allows now.
    fn pump(&mut self, now: Time, d: usize, out: &mut Emit) {
        let dir = self.sides[d].dir;
        let ovh = self.overhead;
        {
            let side = &mut self.sides[d];
            for &c in &side.active {
                side.skip[c] = false;
            }
        }
        // Set when this call took the line's last frame: it ended at `busy_until` (< now when
        // this wake-up came late) and nothing ran in between (an arrival first lets the line
        // catch up, in `data_path`), so what is queued now was queued then.
        let mut line_was_busy = false;
        loop {
            {
                let side = &mut self.sides[d];
                if side.link_bps.is_some() {
                    if side.busy_until > now {
                        break;
                    }
                    if let Some(p) = side.in_tx.take() {
                        out.push((dir, p));
                        line_was_busy = true;
                    }
                }
            }
            // Choose a leaf: lowest level, then priority, then round robin.
            // Over the backlogged leaves only; the choice does not depend on their order (the
            // round-robin distance from the cursor is unique per class).
            let mut best: Option<(usize, u8, usize)> = None; // (level, prio, class)
            let ncls = self.policy.classes.len();
            let mut k = 0;
            while k < self.sides[d].active.len() {
                let c = self.sides[d].active[k];
                let side = &mut self.sides[d];
                if side.cls[c].leaf.as_ref().is_none_or(|l| l.len_pkts() == 0) {
                    side.active.swap_remove(k);
                    side.in_active[c] = false;
                    continue;
                }
                k += 1;
                if side.skip[c] {
                    continue;
                }
                let Some(lvl) = self.level(d, c, now) else { continue };
                let prio = self.policy.classes[c].priority;
                let cur = self.sides[d].cursor[prio as usize];
                let better = match best {
                    None => true,
                    Some((bl, bp, bc)) => {
                        (lvl, prio) < (bl, bp)
                            || ((lvl, prio) == (bl, bp) && (c + ncls - cur) % ncls < (bc + ncls - cur) % ncls)
                    }
                };
                if better {
                    best = Some((lvl, prio, c));
                }
            }
            let Some((lvl, prio, c)) = best else { break };
            let Some(p) = self.sides[d].cls[c].leaf.as_mut().and_then(|l| l.dequeue(now)) else {
                // Its discipline holds its packets for now (e.g. per-flow token buckets).
                self.sides[d].skip[c] = true;
                continue;
            };
            let bytes = p.ip_len() + ovh;
            self.charge(d, c, bytes, now);
            {
                let quantum = self.policy.classes[c].quantum_bytes as i64;
                let side = &mut self.sides[d];
                let cs = &mut side.cls[c];
                cs.deficit -= bytes as i64;
                if cs.deficit <= 0 {
                    cs.deficit += quantum;
                    side.cursor[prio as usize] = (c + 1) % ncls;
                } else {
                    side.cursor[prio as usize] = c;
                }
                cs.st.sent_pkts += 1;
                cs.st.sent_bytes += p.ip_len() as u64;
                if lvl > 0 {
                    cs.st.borrowed_pkts += 1;
                }
            }
            self.note_data(now, d, c);
            // The class clock (zero-timer PostACK, 000 §6 step 2.4).
            if self.sides[d].cls[c].mech.is_some() && is_flow_data(&p) {
                if let Some(k) = key_of(&p).filter(|k| self.flows.get(k).is_some_and(|e| e.state & ENDED == 0)) {
                    let cs = &mut self.sides[d].cls[c];
                    let qlen = cs.leaf.as_ref().and_then(|l| l.flow_qlen(&FlowId::of(&p)));
                    let mut scratch = std::mem::take(&mut self.scratch);
                    cs.mech.as_mut().unwrap().on_class_dequeue(now, k, qlen, &mut scratch);
                    self.refresh_timer(d, c);
                    self.mech_out(now, dir, c, &mut scratch, out, true);
                    self.scratch = scratch;
                }
            }
            let side = &mut self.sides[d];
            match side.link_bps {
                Some(r) => {
                    // A backlogged line starts its next frame when the last one ended, also
                    // when the wake-up comes late (the live driver's timers run µs–ms late):
                    // starting at `now` would lose each wake-up's lateness, so a line at 100%
                    // would drain below its rate while an ACK clock on a grid (PostACK's slots,
                    // TCR's pacing) keeps admitting at the rate, and the class queue would creep
                    // up. Lateness beyond LATE_WAKEUP_CATCHUP is given up (a stalled process does
                    // not turn into a long burst), and only that part: PostACK's slot timer and
                    // TCR's pacing make up the same LATE_WAKEUP_CATCHUP, so after a stall all have
                    // given up the same service (docs/policy.md, "Late wake-ups"). The
                    // simulator's wake-ups are exact, so there `busy_until == now` whenever the
                    // line was busy.
                    let start = if line_was_busy {
                        side.busy_until.max(now - LATE_WAKEUP_CATCHUP)
                    } else if side.busy_until + Dur(1) >= now {
                        side.busy_until.max(now)
                    } else {
                        now
                    };
                    side.busy_until = start + Dur::tx_time(bytes, r);
                    side.in_tx = Some(p);
                }
                None => out.push((dir, p)),
            }
        }
        self.rewake(now, d);
    }

    fn rewake(&mut self, now: Time, d: usize) {
        let side = &self.sides[d];
        if side.link_bps.is_some() && side.in_tx.is_some() {
            self.sides[d].wake = Some(side.busy_until);
            return;
        }
        let mut wake: Option<Time> = None;
        for &c in &self.sides[d].active {
            let Some(leaf) = self.sides[d].cls[c].leaf.as_ref() else { continue };
            if leaf.len_pkts() == 0 {
                continue;
            }
            let mut t = self.ready_at(d, c, now);
            if let Some(r) = leaf.next_ready(now) {
                t = t.max(r);
            }
            let t = t.max(now + Dur(1));
            wake = Some(wake.map_or(t, |w| w.min(t)));
        }
        self.sides[d].wake = wake;
    }

    // ---- borrowing ----

    /// Recompute the rate each mechanism class can get now and tell the mechanisms that changed.
    fn rebalance(&mut self, now: Time) {
        let Some(t) = self.next_borrow else { return };
        if now < t {
            return;
        }
        let interval = self.policy.borrow_interval;
        self.next_borrow = Some(now + interval);
        let n = self.policy.classes.len();
        for d in 0..2 {
            // Demand of each leaf over the last interval: a mechanism class with flows or a
            // class that had a backlog wants its ceiling; others what they sent.
            let mut demand = vec![0u64; n];
            let live: Vec<bool> = self.class_flows[d].iter().map(|c| c.live > 0).collect();
            for c in 0..n {
                let pc = &self.policy.classes[c];
                let s = &mut self.sides[d].cls[c];
                if s.leaf.is_none() {
                    continue;
                }
                let sent = s.st.sent_bytes - s.window_bytes;
                s.window_bytes = s.st.sent_bytes;
                let measured = (sent as f64 * 8.0 / interval.as_secs_f64()) as u64;
                let has_backlog = s.backlogged || s.leaf.as_ref().is_some_and(|l| l.len_pkts() > 0);
                s.backlogged = false;
                demand[c] =
                    if (s.mech.is_some() && live[c]) || has_backlog { pc.ceil_bps } else { measured.min(pc.ceil_bps) };
            }
            let alloc = allocate(&self.policy, d, &demand);
            for (c, &a) in alloc.iter().enumerate() {
                let s = &mut self.sides[d].cls[c];
                let Some(m) = s.mech.as_mut() else { continue };
                let pc = &self.policy.classes[c];
                if pc.ceil_bps <= pc.rate_bps {
                    continue;
                }
                let r = a.clamp(pc.rate_bps, pc.ceil_bps);
                if r.abs_diff(s.mech_rate) * 100 > s.mech_rate {
                    s.mech_rate = r;
                    m.set_rate(now, r);
                    self.refresh_timer(d, c);
                }
            }
        }
    }

    fn drain_reinject(&mut self, now: Time, out: &mut Emit) {
        while let Some((dir, p, accepted)) = self.reinject.pop() {
            self.data_path(now, dir, p, out, accepted);
        }
    }
}

/// Split each node's capacity among its children (HTB's steady state): each child first gets
/// min(its demand, its rate); what is left goes to children that want more, in proportion to
/// their quanta, up to min(demand, ceil). Top-level classes share the link rate (unlimited: each
/// gets its demand). Returns each class's allocation.
fn allocate(policy: &Policy, d: usize, demand_leaf: &[u64]) -> Vec<u64> {
    let n = policy.classes.len();
    // Demand of inner classes: the sum of their children's, capped at their ceiling.
    let mut demand = demand_leaf.to_vec();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&c| std::cmp::Reverse(policy.classes[c].depth));
    for &c in &order {
        let pc = &policy.classes[c];
        if !pc.children.is_empty() {
            demand[c] = pc.children.iter().map(|&k| demand[k]).sum::<u64>().min(pc.ceil_bps);
        }
    }
    let mut alloc = vec![0u64; n];
    let split = |cap: u64, kids: &[usize], alloc: &mut Vec<u64>| {
        let want = |k: usize| demand[k].min(policy.classes[k].ceil_bps);
        let mut left = cap;
        for &k in kids {
            let a = want(k).min(policy.classes[k].rate_bps);
            alloc[k] = a;
            left = left.saturating_sub(a);
        }
        // Water-fill the rest in proportion to quanta.
        let mut open: Vec<usize> = kids.iter().copied().filter(|&k| alloc[k] < want(k)).collect();
        while left > 0 && !open.is_empty() {
            let qsum: u64 = open.iter().map(|&k| policy.classes[k].quantum_bytes).sum();
            let mut given = 0;
            for &k in &open {
                let share = (left as u128 * policy.classes[k].quantum_bytes as u128 / qsum as u128) as u64;
                let g = share.min(want(k) - alloc[k]);
                alloc[k] += g;
                given += g;
            }
            left -= given;
            open.retain(|&k| alloc[k] < want(k));
            if given == 0 {
                break;
            }
        }
    };
    let top: Vec<usize> = (0..n).filter(|&c| policy.classes[c].parent.is_none()).collect();
    match policy.link_bps[d] {
        Some(link) => split(link, &top, &mut alloc),
        None => {
            for &c in &top {
                alloc[c] = demand[c].min(policy.classes[c].ceil_bps);
            }
        }
    }
    let mut by_depth: Vec<usize> = (0..n).collect();
    by_depth.sort_by_key(|&c| policy.classes[c].depth);
    for &c in &by_depth {
        let kids = &policy.classes[c].children;
        if !kids.is_empty() {
            split(alloc[c], kids, &mut alloc);
        }
    }
    alloc
}

impl Middlebox for Gateway {
    fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
        self.last_now = now;
        self.maybe_reset_stats(now);
        self.sweep(now, out);
        if let (Some(key), Some(t)) = (key_of(&pkt), pkt.tcp()) {
            let flags = t.flags;
            // RST ends the connection both ways, if in window (RFC 5961 §3): each tracked half's
            // mechanism judges that, and the RST acts only if every one finds it in window. The
            // halves of one connection see the same sequence numbers, so a real RST passes
            // both; one that a half rejects contradicts what the gateway saw and ends nothing
            // (ending the other half alone left it to come back with no handshake learnt).
            if flags.contains(TcpFlags::RST) {
                let halves = [key, rev(&key)];
                if halves.iter().all(|&k| self.rst_in_window(k, &pkt, k == key)) {
                    for k in halves {
                        self.end_flow(now, k, out);
                        self.remove_flow(&k);
                    }
                }
                self.data_path(now, dir, pkt, out, true);
                self.drain_reinject(now, out);
                return;
            }
            let fin = flags.contains(TcpFlags::FIN);
            if fin {
                for (k, bit) in [(key, FIN_FWD), (rev(&key), FIN_REV)] {
                    if let Some(e) = self.flows.get_mut(&k) {
                        e.state |= bit;
                        if e.state & (FIN_FWD | FIN_REV) == FIN_FWD | FIN_REV {
                            self.end_flow(now, k, out);
                        }
                    }
                }
            }
            if flags.contains(TcpFlags::SYN) {
                if flags.contains(TcpFlags::ACK) {
                    // The answer to a kept SYN: keep its options for the answering half. Only
                    // the first answer, and only one that acknowledges the SYN (RFC 793 §3.4):
                    // a later SYN-ACK (spoofed, or a retransmission with the same options) or a
                    // blind one with another ACK number teaches nothing.
                    if let Some(e) = self.syn_opts.get_mut(&rev(&key)) {
                        if e.answer.is_none() && t.ack == e.isn + 1 {
                            e.answer = Some(ackmech::SynOptions::of(&t.opts));
                        }
                    }
                } else if !self.sides[dir.reverse().index()].mechs.is_empty() {
                    // An opening SYN: the answer's half may carry data shaped by a mechanism.
                    // It is kept if it opens the flow (not tracked, or ended), or repeats or
                    // replaces one not answered yet; a SYN on a flow past its handshake (a
                    // spoof: its endpoint answers it with a challenge ACK, RFC 5961 §4) keeps
                    // the handshake the gateway saw.
                    let kept = KeptSyn { isn: t.seq, opener: ackmech::SynOptions::of(&t.opts), answer: None };
                    let opens = match self.flows.get(&key) {
                        None => true,
                        Some(e) => {
                            e.dir == dir
                                && (e.state & ENDED != 0 || self.syn_opts.get(&key).is_some_and(|k| k.answer.is_none()))
                        }
                    };
                    self.data_path(now, dir, pkt, out, true);
                    if opens && self.flows.get(&key).is_some_and(|e| e.dir == dir) {
                        self.syn_opts.insert(key, kept);
                    }
                    self.drain_reinject(now, out);
                    return;
                }
            }
            // The ACK path: towards the sender of a tracked flow of a mechanism class.
            let rk = rev(&key);
            if flags.contains(TcpFlags::ACK) {
                if let Some(e) = self.flows.get_mut(&rk) {
                    if e.dir == dir.reverse() && e.class != NONE && e.state & ENDED == 0 {
                        e.last_seen = now;
                        let (c, dd) = (e.class as usize, e.dir);
                        let cs = &mut self.sides[dd.index()].cls[c];
                        if let Some(m) = cs.mech.as_mut() {
                            cs.st.acks_in += 1;
                            let mut scratch = std::mem::take(&mut self.scratch);
                            m.on_ack(now, rk, pkt, &mut scratch);
                            let accepted = !m.last_ack_untouched();
                            self.refresh_timer(dd.index(), c);
                            self.mech_out(now, dd, c, &mut scratch, out, accepted);
                            self.scratch = scratch;
                            self.drain_reinject(now, out);
                            return;
                        }
                    }
                }
            }
        }
        self.data_path(now, dir, pkt, out, true);
        self.drain_reinject(now, out);
    }

    fn poll_timeout(&self) -> Option<Time> {
        let mut t = self.next_borrow;
        let mut take = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y: Time| y.min(x)));
            }
        };
        for s in &self.sides {
            take(s.wake);
        }
        take(self.timers.next());
        t
    }

    fn on_timeout(&mut self, now: Time, out: &mut Emit) {
        self.last_now = now;
        self.maybe_reset_stats(now);
        // Every mechanism due now, side by side and in class order, each asked again when its
        // turn comes (what an earlier one did may have changed it), as a scan of all mechanisms
        // would; one that falls due meanwhile is served in this pass if its turn is still
        // ahead, else at the next call.
        let mut pending = std::mem::take(&mut self.timers.pending);
        let mut later = std::mem::take(&mut self.timers.later);
        pending.clear();
        later.clear();
        let mut pos: Option<(usize, usize)> = None;
        loop {
            while let Some(&std::cmp::Reverse((t, d, c))) = self.timers.heap.peek() {
                if t > now {
                    break;
                }
                self.timers.heap.pop();
                if !self.timers.current(t, d, c) {
                    continue;
                }
                if pos.is_none_or(|p| (d, c) > p) {
                    pending.push(std::cmp::Reverse((d, c)));
                } else {
                    later.push(std::cmp::Reverse((t, d, c)));
                }
            }
            let Some(std::cmp::Reverse((d, c))) = pending.pop() else { break };
            if pos == Some((d, c)) {
                continue; // a second entry of the one just served
            }
            pos = Some((d, c));
            let due = self.sides[d].cls[c].mech.as_ref().and_then(|m| m.poll_timeout()).is_some_and(|t| t <= now);
            if due {
                let mut scratch = std::mem::take(&mut self.scratch);
                self.sides[d].cls[c].mech.as_mut().unwrap().on_timeout(now, &mut scratch);
                self.refresh_timer(d, c);
                let dir = self.sides[d].dir;
                self.mech_out(now, dir, c, &mut scratch, out, true);
                self.scratch = scratch;
            }
            // Its entry left the heap: put its deadline back whether or not it moved.
            if let Some(t) = self.timers.due[d][c] {
                self.timers.heap.push(std::cmp::Reverse((t, d, c)));
            }
        }
        self.timers.heap.extend(later.drain(..));
        self.timers.pending = pending;
        self.timers.later = later;
        self.timers.clean();
        for d in 0..2 {
            if self.sides[d].wake.is_some_and(|t| t <= now) {
                self.pump(now, d, out);
            }
        }
        self.rebalance(now);
        self.sweep(now, out);
        self.drain_reinject(now, out);
    }

    fn start_window(&mut self, now: Time) {
        self.last_now = self.last_now.max(now);
        self.occupancies().for_each(|o| o.start_window(now));
        self.sides.iter_mut().flat_map(|s| s.cls.iter_mut()).for_each(|c| c.st.wdrops = Some((c.drops(), None)));
    }

    fn end_window(&mut self, now: Time) {
        self.last_now = self.last_now.max(now);
        self.occupancies().for_each(|o| o.end_window(now));
        for c in self.sides.iter_mut().flat_map(|s| s.cls.iter_mut()) {
            let drops = c.drops();
            if let Some((_, end @ None)) = &mut c.st.wdrops {
                *end = Some(drops);
            }
        }
    }

    fn take_over(&mut self, now: Time, old: &mut (dyn Middlebox + Send), out: &mut Emit) -> crate::middlebox::TakeOver {
        match old.as_any_mut().and_then(|a| a.downcast_mut::<Gateway>()) {
            Some(old) => self.take_over_from(now, old, out),
            None => crate::middlebox::TakeOver::default(),
        }
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    fn stats(&self) -> BoxStats {
        let now = self.last_now;
        let dir_name = |d: usize| if d == 0 { "outbound" } else { "inbound" };
        let class_stats = |i: usize| -> ClassStats {
            let pc = &self.policy.classes[i];
            let used: Vec<usize> = (0..2).filter(|&d| pc.dirs[d]).collect();
            let sum = |f: &dyn Fn(&CStats) -> u64| used.iter().map(|&d| f(&self.sides[d].cls[i].st)).sum::<u64>();
            let drops = used.iter().map(|&d| self.sides[d].cls[i].drops()).sum::<u64>();
            let wdrops = used
                .iter()
                .map(|&d| {
                    let c = &self.sides[d].cls[i];
                    c.st.wdrops.map_or(0, |(d0, d1)| d1.unwrap_or(c.drops()).saturating_sub(d0))
                })
                .sum::<u64>();
            let maxu = |f: &dyn Fn(&CStats) -> usize| {
                used.iter().map(|&d| f(&self.sides[d].cls[i].st)).max().unwrap_or(0) as u64
            };
            let avg = |f: &dyn Fn(&CStats) -> f64| used.iter().map(|&d| f(&self.sides[d].cls[i].st)).sum::<f64>();
            // After the scenario's warm-up (start-up bursts, e.g. the flows' initial windows,
            // which no ACK can pace, excluded).
            let after_warmup =
                used.iter().any(|&d| self.sides[d].cls[i].st.data.wsince.is_some()).then(|| ClassWindowStats {
                    data_queue_max_pkts_after_warmup: maxu(&|s| s.data.wmax),
                    data_queue_avg_pkts_after_warmup: avg(&|s| s.data.window_avg(now).unwrap_or(0.0)),
                    acks_held_max_after_warmup: maxu(&|s| s.acks.wmax),
                    acks_held_avg_after_warmup: avg(&|s| s.acks.window_avg(now).unwrap_or(0.0)),
                    drops_after_warmup: wdrops,
                });
            let (mut qdisc, mut mechanism_stats, mut mechanism_rate_bps) = (None, None, None);
            if pc.is_leaf() {
                let mut q = BTreeMap::new();
                let mut mech = BTreeMap::new();
                let mut rates = BTreeMap::new();
                for &d in &used {
                    let cs = &self.sides[d].cls[i];
                    if let Some(l) = &cs.leaf {
                        q.insert(
                            dir_name(d),
                            LeafStats {
                                queue_pkts: l.len_pkts() as u64,
                                queue_bytes: l.len_bytes() as u64,
                                counters: l.counters().into_iter().collect(),
                                asym: l.q().asym_stats().cloned(),
                            },
                        );
                    }
                    if let Some(mm) = &cs.mech {
                        mech.insert(dir_name(d), mm.stats());
                        rates.insert(dir_name(d), cs.mech_rate);
                    }
                }
                qdisc = Some(q);
                if !mech.is_empty() {
                    mechanism_stats = Some(mech);
                    mechanism_rate_bps = Some(rates);
                }
            }
            ClassStats {
                parent: pc.parent.map(|p| self.policy.classes[p].name.clone()),
                rate_bps: pc.rate_bps,
                ceil_bps: pc.ceil_bps,
                priority: pc.priority,
                directions: used.iter().map(|&d| dir_name(d)).collect(),
                mechanism: pc.mechanism.as_ref().map(|(k, _)| k.clone()),
                enqueued_pkts: sum(&|s| s.enq_pkts),
                enqueued_bytes: sum(&|s| s.enq_bytes),
                sent_pkts: sum(&|s| s.sent_pkts),
                sent_bytes: sum(&|s| s.sent_bytes),
                borrowed_pkts: sum(&|s| s.borrowed_pkts),
                drops,
                acks_in: sum(&|s| s.acks_in),
                data_queue_avg_pkts: avg(&|s| s.data.avg(now)),
                data_queue_max_pkts: maxu(&|s| s.data.max),
                acks_held_avg: avg(&|s| s.acks.avg(now)),
                acks_held_max: maxu(&|s| s.acks.max),
                after_warmup,
                qdisc,
                mechanism_stats,
                mechanism_rate_bps,
            }
        };
        let mut classes = BTreeMap::new();
        let mut templates: Vec<&str> = Vec::new();
        for (i, pc) in self.policy.classes.iter().enumerate() {
            match &pc.host {
                None => {
                    classes.insert(pc.name.clone(), class_stats(i));
                }
                Some((t, _)) if !templates.contains(&t.as_str()) => templates.push(t),
                Some(_) => {}
            }
        }
        // Per-host classes: the busiest PER_HOST_LISTED of each template with any traffic, and the
        // template's totals (a snapshot of every class of thousands of hosts would stall the
        // live data plane for tens of ms).
        let mut per_host = BTreeMap::new();
        for t in templates {
            let members: Vec<usize> = (0..self.policy.classes.len())
                .filter(|&i| self.policy.classes[i].host.as_ref().is_some_and(|(x, _)| x == t))
                .collect();
            let total = |f: &dyn Fn(&ClassState) -> u64| -> u64 {
                members.iter().flat_map(|&i| self.sides.iter().map(move |s| &s.cls[i])).map(f).sum()
            };
            let mut busy: Vec<(u64, usize)> = members
                .iter()
                .filter(|&&i| self.sides.iter().any(|s| s.cls[i].st.enq_pkts > 0 || s.cls[i].st.acks_in > 0))
                .map(|&i| (self.sides.iter().map(|s| s.cls[i].st.sent_bytes).sum::<u64>(), i))
                .collect();
            let active = busy.len();
            busy.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            busy.truncate(PER_HOST_LISTED);
            for &(_, i) in &busy {
                classes.insert(self.policy.classes[i].name.clone(), class_stats(i));
            }
            per_host.insert(
                t.to_string(),
                PerHostStats {
                    classes: members.len() as u64,
                    active: active as u64,
                    listed: busy.len() as u64,
                    enqueued_pkts: total(&|c| c.st.enq_pkts),
                    sent_pkts: total(&|c| c.st.sent_pkts),
                    sent_bytes: total(&|c| c.st.sent_bytes),
                    drops: total(&|c| c.drops()),
                    acks_in: total(&|c| c.st.acks_in),
                    data_queue_pkts: total(&|c| c.leaf.as_ref().map_or(0, |l| l.len_pkts() as u64)),
                    acks_held: total(&|c| c.mech.as_ref().map_or(0, |m| m.acks_held() as u64)),
                },
            );
        }
        let g = &self.g;
        BoxStats::Gateway(Box::new(GatewayStats {
            classes,
            buffer: BufferStats {
                data_avg_pkts: g.data_total.avg(now),
                data_max_pkts: g.data_total.max as u64,
                acks_avg: g.acks_total.avg(now),
                acks_max: g.acks_total.max as u64,
                data_max_pkts_after_warmup: g.data_total.wsince.map(|_| g.data_total.wmax as u64),
                data_avg_pkts_after_warmup: g.data_total.window_avg(now),
                acks_max_after_warmup: g.acks_total.wsince.map(|_| g.acks_total.wmax as u64),
                acks_avg_after_warmup: g.acks_total.window_avg(now),
            },
            flows: FlowTableStats {
                tracked: self.flows.len() as u64,
                shaped: self.class_flows.iter().flatten().map(|c| c.flows as u64).sum::<u64>(),
                untracked_class_full: g.untracked_class_full,
                untracked_source_full: g.untracked_source_full,
                untracked_embryonic_full: g.untracked_embryonic_full,
                max_flows_per_class: self.max_per_class as u64,
                max_embryonic_per_class: self.max_embryonic as u64,
                created: g.flows_created,
                ended: g.flows_ended,
                evicted: g.flows_evicted,
                receiver_opened: g.receiver_opened,
                opening_syns_kept: self.syn_opts.len() as u64,
                untracked_pkts: g.untracked_pkts,
                reversed_pkts: g.reversed_pkts,
            },
            unclassified_pkts: g.unclassified_pkts,
            per_host,
        }))
    }
}
