//! A CAKE-like shaper (Høiland-Jørgensen, Täht, Morton, "Piece of CAKE: A Comprehensive Queue
//! Management Solution for Home Gateways", IEEE LANMAN 2018; Linux `net/sched/sch_cake.c`):
//! a deficit-mode rate shaper over flow queues with per-host fairness, each queue managed by
//! COBALT, with CAKE's ACK filter. One tin (CAKE's `besteffort`): no Diffserv tins.
//!
//! What it takes from `sch_cake.c` (function names in brackets):
//! - **Set-associative flow hashing** [`cake_hash`]: 1024 queues in sets of 8 ways. A flow's
//!   32-bit hash picks a set and a first way; the flow keeps the queue whose tag is its hash, or
//!   takes an idle queue of the set, and only when all 8 are busy shares one (a *collision*).
//!   Hash collisions between active flows are thus rare until a set has 8 active flows.
//! - **Flow modes** (`flow_mode`): `flowblind` (one queue), `srchost`, `dsthost`, `hosts` (a
//!   queue per source, destination or address pair), `flows` (per 5-tuple), `dual-srchost`,
//!   `dual-dsthost`, `triple-isolate` (default): per 5-tuple queues, and fairness between
//!   source hosts, destination hosts, or both. Hosts are tracked in a second set-associative
//!   table with a count of each host's bulk flows.
//! - **DRR++ with host fairness** [`cake_enqueue`, `cake_dequeue`]: flows are *sparse* on the
//!   new list, *bulk* once they have used a quantum, *decaying* while their COBALT state
//!   relaxes after they emptied; new (sparse) flows go first. Each time a flow's deficit is
//!   refilled it gets `quantum / host_load`, where host_load is the larger of its source's and
//!   destination's bulk-flow counts (in the dual modes), so a host with four bulk flows gets
//!   about the share of a host with one. The refill is dithered by a random 16-bit fraction, as
//!   in CAKE.
//! - **COBALT** [`cobalt_should_drop`, `cobalt_queue_full`, `cobalt_queue_empty`]: CoDel
//!   with CAKE's simplified schedule (the drop count decays instead of restarting when the
//!   sojourn time falls below target, and `drop_next` doubles as an activity timeout), ECN
//!   marking whenever the packet is ECN-capable (CAKE has no `noecn`), plus BLUE: a queue that
//!   overflows the buffer raises its drop probability by 1/256 (at most once per `target`), an
//!   empty queue lowers it by 1/4096, and packets are dropped at random with it (BLUE never
//!   marks). The last packet of a queue is never dropped. BLUE's probability relaxes only
//!   when the scheduler finds a queue empty while other queues hold packets (`cake_dequeue`
//!   returns at once when nothing is queued): with one queue (`flowblind`) it does not relax,
//!   so a buffer overflow (slow start into a small `memory_limit`) leaves a lasting drop
//!   probability. (ns-3's COBALT relaxes it at every dequeue from an empty queue.)
//! - **Shaper** [`cake_advance_shaper`]: with a `rate`, each packet moves the next send time on
//!   by its length (IP length + `overhead`, at least `mpu`) at the rate; `dequeue` holds
//!   packets until then ([`QueueDisc::next_ready`]). No token bucket and no burst parameter; a
//!   failsafe time advancing at 1.5× the rate bounds how far dropped packets (ingress mode) can
//!   push it. Without a `rate` it is unshaped and only schedules.
//! - **Autotuning** [`cake_set_rate`]: with a rate, target is at least 1.5 MTU times and the
//!   interval at least twice the target (`rtt` + target − configured target); the quantum is
//!   rate/4096 within 300 … 1514 bytes.
//! - **Memory limit** [`cake_reconfigure`, `cake_drop`]: `memory_limit`, or 4 × rate × rtt
//!   (at least 4 MiB) with a rate, and at most `limit_pkts` × 1514 bytes; when over, the head of
//!   the longest queue is dropped (and its BLUE told the queue was full) until under.
//! - **ACK filter** [`cake_ack_filter`] (`ack_filter = "conservative"` / `"aggressive"`): on
//!   each enqueue into a flow queue, the rules of [`AckFilterCake`](crate::shape::asym::AckFilterCake)
//!   applied to that queue's packets of the same connection.
//! - **Ingress mode** (`ingress = true`): dropped packets count against the shaper and the
//!   deficit, and the target grows with the number of bulk flows (2 MTU times each).
//!
//! **Where it differs.** Lengths are frame bytes for the quantum and memory and IP length +
//! `overhead` for the shaper (Linux: the skb length, with `overhead` replacing the MAC header;
//! the kernel's memory counts `skb->truesize`); the control law uses exact square roots (Linux:
//! a cache and Newton steps); the longest queue is found by a scan (Linux: a heap); no Diffserv
//! tins, no `wash`, `nat`, ATM/PTM framing, autorate or GSO splitting; the hash key is drawn
//! from the driver's random stream.

use super::{control_law, set_ce, FlowHasher, Timed, MTU_FRAME};
use crate::queue::{AqmStats, Enqueue, QueueDisc};
use crate::rng::Rng;
use crate::shape::asym::{CakeMode, FlowKey};
use crate::time::{Dur, Time};
use crate::units::{DurV, RateV, SizeV};
use ackshape_wire::{Packet, TcpFlags};
use rand::Rng as _;
use std::collections::VecDeque;

const QUEUES: usize = 1024;
const WAYS: usize = 8;

/// How packets are assigned to queues (CAKE's flow isolation keywords).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowMode {
    /// One queue for everything.
    Flowblind,
    /// A queue per source address.
    Srchost,
    /// A queue per destination address.
    Dsthost,
    /// A queue per address pair.
    Hosts,
    /// A queue per 5-tuple.
    Flows,
    /// Per-flow queues, fairness between source hosts.
    DualSrchost,
    /// Per-flow queues, fairness between destination hosts.
    DualDsthost,
    /// Per-flow queues, fairness between source hosts and between destination hosts.
    #[default]
    TripleIsolate,
}

impl FlowMode {
    /// CAKE's bits: 1 source address, 2 destination address, 4 flows.
    fn bits(self) -> u8 {
        match self {
            FlowMode::Flowblind => 0,
            FlowMode::Srchost => 1,
            FlowMode::Dsthost => 2,
            FlowMode::Hosts => 3,
            FlowMode::Flows => 4,
            FlowMode::DualSrchost => 5,
            FlowMode::DualDsthost => 6,
            FlowMode::TripleIsolate => 7,
        }
    }
    fn name(self) -> &'static str {
        match self {
            FlowMode::Flowblind => "flowblind",
            FlowMode::Srchost => "srchost",
            FlowMode::Dsthost => "dsthost",
            FlowMode::Hosts => "hosts",
            FlowMode::Flows => "flows",
            FlowMode::DualSrchost => "dual-srchost",
            FlowMode::DualDsthost => "dual-dsthost",
            FlowMode::TripleIsolate => "triple-isolate",
        }
    }
    /// Fairness between source hosts (`cake_dsrc`).
    fn dsrc(self) -> bool {
        self.bits() & 5 == 5
    }
    /// Fairness between destination hosts (`cake_ddst`).
    fn ddst(self) -> bool {
        self.bits() & 6 == 6
    }
}

/// CAKE's ACK filter setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AckFilterMode {
    #[default]
    None,
    /// CAKE `ack-filter`.
    Conservative,
    /// CAKE `ack-filter-aggressive`.
    Aggressive,
}

impl AckFilterMode {
    fn name(self) -> &'static str {
        match self {
            AckFilterMode::None => "none",
            AckFilterMode::Conservative => "conservative",
            AckFilterMode::Aggressive => "aggressive",
        }
    }
}

/// `{ kind = "cake", rate = "10Mbit/s", flow_mode = "triple-isolate", target = "5ms",
/// rtt = "100ms", memory_limit = "4MiB", ack_filter = "none", overhead = 0, mpu = 0,
/// limit_pkts = 10240, ingress = false }` — every key optional; no `rate`: unshaped.
#[derive(Clone, Debug, PartialEq)]
pub struct CakeConfig {
    /// Shaped rate, bit/s (None: unlimited).
    pub rate_bps: Option<u64>,
    pub flow_mode: FlowMode,
    /// COBALT's target (CAKE: 5 ms).
    pub target: Dur,
    /// The expected RTT, COBALT's interval (CAKE: 100 ms).
    pub rtt: Dur,
    /// Buffer limit in frame bytes (None: CAKE's automatic limit).
    pub memory_limit: Option<u64>,
    pub ack_filter: AckFilterMode,
    /// Bytes added to each packet's IP length when charging the shaper.
    pub overhead: i32,
    /// Smallest length charged to the shaper, bytes.
    pub mpu: u32,
    /// Packets × 1514 bytes caps the buffer (Linux: the qdisc's `limit`, 10240).
    pub limit_pkts: usize,
    pub ingress: bool,
}

impl Default for CakeConfig {
    fn default() -> Self {
        CakeConfig {
            rate_bps: None,
            flow_mode: FlowMode::TripleIsolate,
            target: Dur::from_millis(5),
            rtt: Dur::from_millis(100),
            memory_limit: None,
            ack_filter: AckFilterMode::None,
            overhead: 0,
            mpu: 0,
            limit_pkts: 10240,
            ingress: false,
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CakeV {
    rate: Option<RateV>,
    flow_mode: Option<FlowMode>,
    target: Option<DurV>,
    rtt: Option<DurV>,
    memory_limit: Option<SizeV>,
    ack_filter: Option<AckFilterMode>,
    overhead: Option<i32>,
    mpu: Option<u32>,
    limit_pkts: Option<usize>,
    ingress: Option<bool>,
}

impl CakeConfig {
    pub(crate) fn from_table(t: crate::table::Table) -> Result<CakeConfig, String> {
        let v: CakeV = crate::table::keyed(t)?;
        let d = CakeConfig::default();
        Ok(CakeConfig {
            rate_bps: v.rate.map(|r| r.0 .0),
            flow_mode: v.flow_mode.unwrap_or(d.flow_mode),
            target: v.target.map_or(d.target, |x| x.0),
            rtt: v.rtt.map_or(d.rtt, |x| x.0),
            memory_limit: match v.memory_limit {
                None => None,
                Some(s) => Some(crate::units::bytes_of("memory_limit", s.0)?),
            },
            ack_filter: v.ack_filter.unwrap_or(d.ack_filter),
            overhead: v.overhead.unwrap_or(d.overhead),
            mpu: v.mpu.unwrap_or(d.mpu),
            limit_pkts: v.limit_pkts.unwrap_or(d.limit_pkts),
            ingress: v.ingress.unwrap_or(d.ingress),
        })
    }
    pub(crate) fn to_table(&self) -> crate::table::Table {
        let mut t = crate::table::Table::new();
        if let Some(r) = self.rate_bps {
            t.insert("rate".into(), crate::table::val(format!("{r}bit/s")));
        }
        t.insert("flow_mode".into(), crate::table::val(self.flow_mode.name()));
        t.insert("target".into(), crate::table::val(super::dur_str(self.target)));
        t.insert("rtt".into(), crate::table::val(super::dur_str(self.rtt)));
        if let Some(m) = self.memory_limit {
            t.insert("memory_limit".into(), crate::table::val(format!("{m}B")));
        }
        t.insert("ack_filter".into(), crate::table::val(self.ack_filter.name()));
        t.insert("overhead".into(), crate::table::val(self.overhead as i64));
        t.insert("mpu".into(), crate::table::val(self.mpu as i64));
        t.insert("limit_pkts".into(), crate::table::val(self.limit_pkts as i64));
        t.insert("ingress".into(), crate::table::val(self.ingress));
        t
    }
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == Some(0) {
            return Err("rate must be > 0 (leave it out for an unshaped CAKE)".into());
        }
        if self.target.0 == 0 || self.rtt.0 == 0 {
            return Err("target and rtt must be > 0".into());
        }
        if self.limit_pkts == 0 {
            return Err("limit_pkts must be ≥ 1".into());
        }
        if let Some(m) = self.memory_limit {
            if m < MTU_FRAME as u64 {
                return Err(format!("memory_limit must hold one full frame ({MTU_FRAME} B), got {m} B"));
            }
        }
        if !(-64..=256).contains(&self.overhead) {
            return Err(format!("overhead must be in -64 … 256 bytes (as CAKE's), got {}", self.overhead));
        }
        Ok(())
    }
}

/// COBALT's parameters (`struct cobalt_params`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CobaltParams {
    pub interval: Dur,
    pub target: Dur,
    /// Serialisation time of one MTU at the shaped rate (0 unshaped).
    pub mtu_time: Dur,
    /// BLUE's increment and decrement, 0.32 fixed point.
    pub p_inc: u32,
    pub p_dec: u32,
}

/// COBALT's per-queue state (`struct cobalt_vars`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CobaltVars {
    pub count: u32,
    pub drop_next: Time,
    pub blue_timer: Time,
    /// BLUE's drop probability, 0.32 fixed point.
    pub p_drop: u32,
    pub dropping: bool,
    pub ecn_marked: bool,
}

impl CobaltVars {
    /// `cobalt_queue_full`: the queue overflowed. True if BLUE went from idle to active.
    fn queue_full(&mut self, p: &CobaltParams, now: Time) -> bool {
        let mut up = false;
        if now.0 as i128 - self.blue_timer.0 as i128 > p.target.0 as i128 {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.checked_add(p.p_inc).unwrap_or(u32::MAX);
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// `cobalt_queue_empty`: the queue was found empty. True if BLUE went from active to idle.
    fn queue_empty(&mut self, p: &CobaltParams, now: Time) -> bool {
        let mut down = false;
        if self.p_drop != 0 && now.0 as i128 - self.blue_timer.0 as i128 > p.target.0 as i128 {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now >= self.drop_next {
            self.count -= 1;
            self.drop_next = control_law(self.drop_next, p.interval, self.count);
        }
        down
    }

    /// `cobalt_should_drop` for a packet just taken from the queue (enqueued at `t`): true to
    /// drop it; may mark it CE instead (then `ecn_marked`).
    fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: Time,
        pkt: &mut Packet,
        t: Time,
        bulk_flows: u32,
        rng: &mut Rng,
    ) -> bool {
        let sojourn = now.since(t).0;
        let mut schedule = now.0 as i128 - self.drop_next.0 as i128;
        let over_target = sojourn > p.target.0
            && sojourn > p.mtu_time.0.saturating_mul(bulk_flows as u64 * 2)
            && sojourn > p.mtu_time.0.saturating_mul(4);
        let mut next_due = self.count != 0 && schedule >= 0;
        let mut drop = false;
        self.ecn_marked = false;
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = control_law(now, p.interval, self.count);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            // Mark if possible, else drop.
            self.ecn_marked = set_ce(pkt);
            drop = !self.ecn_marked;
            self.count = self.count.saturating_add(1);
            self.drop_next = control_law(self.drop_next, p.interval, self.count);
            schedule = now.0 as i128 - self.drop_next.0 as i128;
        } else {
            // Below target, or not yet due: let the drop rate decay.
            while next_due {
                self.count -= 1;
                self.drop_next = control_law(self.drop_next, p.interval, self.count);
                schedule = now.0 as i128 - self.drop_next.0 as i128;
                next_due = self.count != 0 && schedule >= 0;
            }
        }
        // BLUE (no ECN, deliberately, as in CAKE).
        if self.p_drop != 0 && rng.gen::<u32>() < self.p_drop {
            drop = true;
        }
        // drop_next doubles as an activity timeout.
        if self.count == 0 {
            self.drop_next = now + p.interval;
        } else if schedule > 0 && !drop {
            self.drop_next = now;
        }
        drop
    }
}

/// Where a queue is in CAKE's DRR++ (`CAKE_SET_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum Set {
    #[default]
    None,
    Sparse,
    /// Counted as sparse, but in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Debug, Default)]
struct Flow {
    q: VecDeque<Timed>,
    /// Frame bytes queued.
    backlog: u64,
    deficit: i32,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: Set,
}

#[derive(Clone, Copy, Debug, Default)]
struct Host {
    src_tag: u32,
    dst_tag: u32,
    src_bulk: u16,
    dst_bulk: u16,
}

/// The three rotations of queue indices, as doubly linked lists (a queue moves to the tail of
/// any of them from anywhere, as Linux's `list_move_tail`).
#[derive(Debug)]
struct Chains {
    prev: Vec<u16>,
    next: Vec<u16>,
    on: Vec<u8>,
    head: [u16; 3],
    tail: [u16; 3],
}

const NIL: u16 = u16::MAX;
const OFF: u8 = 3;
const NEW: u8 = 0;
const OLD: u8 = 1;
const DECAYING: u8 = 2;

impl Chains {
    fn new(n: usize) -> Chains {
        Chains { prev: vec![NIL; n], next: vec![NIL; n], on: vec![OFF; n], head: [NIL; 3], tail: [NIL; 3] }
    }
    #[inline]
    fn front(&self, c: u8) -> Option<usize> {
        (self.head[c as usize] != NIL).then_some(self.head[c as usize] as usize)
    }
    #[inline]
    fn is_empty(&self, c: u8) -> bool {
        self.head[c as usize] == NIL
    }
    fn remove(&mut self, i: usize) {
        let c = self.on[i];
        if c == OFF {
            return;
        }
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NIL {
            self.head[c as usize] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail[c as usize] = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[i] = NIL;
        self.next[i] = NIL;
        self.on[i] = OFF;
    }
    fn move_tail(&mut self, i: usize, c: u8) {
        self.remove(i);
        let t = self.tail[c as usize];
        self.prev[i] = t;
        self.next[i] = NIL;
        if t == NIL {
            self.head[c as usize] = i as u16;
        } else {
            self.next[t as usize] = i as u16;
        }
        self.tail[c as usize] = i as u16;
        self.on[i] = c;
    }
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CakeStats {
    /// Dropped at dequeue by COBALT (CoDel's schedule or BLUE).
    pub drops: u64,
    pub ecn_marks: u64,
    /// Dropped from the longest queue while over the memory limit.
    pub overlimit_drops: u64,
    /// Queued ACKs the ACK filter dropped.
    pub ack_drops: u64,
    /// Set-associative hashing: direct hits, found in another way, took an idle way, and
    /// collisions (all 8 ways busy).
    pub way_directs: u64,
    pub way_hits: u64,
    pub way_misses: u64,
    pub way_collisions: u64,
}

/// The CAKE-like shaper (see the module documentation).
pub struct Cake {
    cfg: CakeConfig,
    prm: CobaltParams,
    hasher: FlowHasher,
    rng: Rng,
    flows: Vec<Flow>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    chains: Chains,
    flow_quantum: u32,
    sparse: u32,
    bulk: u32,
    decaying: u32,
    unresponsive: u32,
    pkts: usize,
    /// Frame bytes queued (CAKE's `buffer_used`).
    bytes: u64,
    buffer_limit: u64,
    time_next: Time,
    failsafe_next: Time,
    stats: CakeStats,
    returned_drops: u64,
    sojourn: AqmStats,
}

impl Cake {
    /// `rng`: the hash key, BLUE's drops and the quantum dither draw from it.
    pub fn new(cfg: CakeConfig, mut rng: Rng) -> Cake {
        // cake_set_rate, cake_reconfigure (besteffort: one tin at the full rate).
        let mtu_time = cfg.rate_bps.map_or(Dur::ZERO, |r| Dur::tx_time(MTU_FRAME as usize, r));
        let target = cfg.target.max(Dur(mtu_time.0 * 3 / 2));
        let interval = Dur((cfg.rtt.0 + target.0 - cfg.target.0).max(2 * target.0));
        let prm = CobaltParams { interval, target, mtu_time, p_inc: 1 << 24, p_dec: 1 << 20 };
        let flow_quantum = cfg.rate_bps.map_or(MTU_FRAME, |r| ((r / 8) >> 12).clamp(300, MTU_FRAME as u64) as u32);
        let auto = match (cfg.memory_limit, cfg.rate_bps) {
            (Some(m), _) => m,
            (None, Some(r)) => ((r as f64 / 8.0 * cfg.rtt.as_secs_f64() * 4.0) as u64).max(4 << 20),
            (None, None) => u64::MAX,
        };
        let buffer_limit = auto.min((cfg.limit_pkts as u64 * MTU_FRAME as u64).max(cfg.memory_limit.unwrap_or(0)));
        Cake {
            prm,
            hasher: FlowHasher::new(&mut rng),
            rng,
            flows: (0..QUEUES).map(|_| Flow::default()).collect(),
            tags: vec![0; QUEUES],
            hosts: vec![Host::default(); QUEUES],
            chains: Chains::new(QUEUES),
            flow_quantum,
            sparse: 0,
            bulk: 0,
            decaying: 0,
            unresponsive: 0,
            pkts: 0,
            bytes: 0,
            buffer_limit,
            time_next: Time::ZERO,
            failsafe_next: Time::ZERO,
            stats: CakeStats::default(),
            returned_drops: 0,
            sojourn: AqmStats::default(),
            cfg,
        }
    }
    pub fn stats(&self) -> &CakeStats {
        &self.stats
    }
    pub fn params(&self) -> &CobaltParams {
        &self.prm
    }
    /// The buffer limit in frame bytes.
    pub fn buffer_limit(&self) -> u64 {
        self.buffer_limit
    }
    /// The per-flow quantum in bytes.
    pub fn quantum(&self) -> u32 {
        self.flow_quantum
    }
    /// Flows on the sparse, bulk and decaying rotations.
    pub fn flow_counts(&self) -> (u32, u32, u32) {
        (self.sparse, self.bulk, self.decaying)
    }

    /// `cake_hash`: the queue of a packet, reserving it (and its hosts) in the set-associative
    /// tables.
    fn classify(&mut self, p: &Packet) -> usize {
        let mode = self.cfg.flow_mode;
        let bits = mode.bits();
        if bits == 0 {
            return 0;
        }
        let src_hash = self.hasher.host(p.ip.src, false);
        let dst_hash = self.hasher.host(p.ip.dst, true);
        let mut flow_hash = if bits & 4 != 0 { self.hasher.flow(p) } else { 0 };
        if bits & 4 == 0 {
            if bits & 1 != 0 {
                flow_hash ^= src_hash;
            }
            if bits & 2 != 0 {
                flow_hash ^= dst_hash;
            }
        }
        let reduced = flow_hash as usize % QUEUES;
        if self.tags[reduced] == flow_hash && self.flows[reduced].set != Set::None {
            self.stats.way_directs += 1;
            return reduced;
        }
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let (mut alloc_src, mut alloc_dst) = (false, false);
        let mut found = None;
        // A queue of the set already tagged for this flow?
        for i in 0..WAYS {
            let k = (inner + i) % WAYS;
            if self.tags[outer + k] == flow_hash {
                if i != 0 {
                    self.stats.way_hits += 1;
                }
                if self.flows[outer + k].set == Set::None {
                    alloc_src = mode.dsrc();
                    alloc_dst = mode.ddst();
                }
                found = Some(k);
                break;
            }
        }
        // Else an idle queue of the set.
        if found.is_none() {
            for i in 0..WAYS {
                let k = (inner + i) % WAYS;
                if self.flows[outer + k].set == Set::None {
                    self.stats.way_misses += 1;
                    alloc_src = mode.dsrc();
                    alloc_dst = mode.ddst();
                    found = Some(k);
                    break;
                }
            }
        }
        // Else share the flow's own queue with whoever holds it.
        let k = match found {
            Some(k) => k,
            None => {
                self.stats.way_collisions += 1;
                let f = &self.flows[reduced];
                if f.set == Set::Bulk {
                    let (s, d) = (f.srchost as usize, f.dsthost as usize);
                    self.hosts[s].src_bulk = self.hosts[s].src_bulk.saturating_sub(1);
                    self.hosts[d].dst_bulk = self.hosts[d].dst_bulk.saturating_sub(1);
                }
                alloc_src = mode.dsrc();
                alloc_dst = mode.ddst();
                inner
            }
        };
        let idx = outer + k;
        self.tags[idx] = flow_hash;
        if alloc_src {
            let h = self.host_slot(src_hash, false);
            if self.flows[idx].set == Set::Bulk {
                self.hosts[h].src_bulk += 1;
            }
            self.flows[idx].srchost = h as u16;
        }
        if alloc_dst {
            let h = self.host_slot(dst_hash, true);
            if self.flows[idx].set == Set::Bulk {
                self.hosts[h].dst_bulk += 1;
            }
            self.flows[idx].dsthost = h as u16;
        }
        idx
    }

    /// The host table entry of a source (or destination) host hash, set-associatively: the
    /// way tagged with it, else the first without bulk flows, else the hash's own way.
    fn host_slot(&mut self, hash: u32, dst: bool) -> usize {
        let reduced = hash as usize % QUEUES;
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let tag = |h: &Host| if dst { h.dst_tag } else { h.src_tag };
        let bulk = |h: &Host| if dst { h.dst_bulk } else { h.src_bulk };
        for i in 0..WAYS {
            let k = (inner + i) % WAYS;
            if tag(&self.hosts[outer + k]) == hash {
                return outer + k;
            }
        }
        let k = (0..WAYS).map(|i| (inner + i) % WAYS).find(|&k| bulk(&self.hosts[outer + k]) == 0).unwrap_or(inner);
        let h = &mut self.hosts[outer + k];
        if dst {
            h.dst_tag = hash;
        } else {
            h.src_tag = hash;
        }
        outer + k
    }

    /// The larger of a flow's hosts' bulk-flow counts (in the dual modes), at least 1.
    fn host_load(&self, i: usize) -> u32 {
        let f = &self.flows[i];
        let mut load = 1u32;
        if self.cfg.flow_mode.dsrc() {
            load = load.max(self.hosts[f.srchost as usize].src_bulk as u32);
        }
        if self.cfg.flow_mode.ddst() {
            load = load.max(self.hosts[f.dsthost as usize].dst_bulk as u32);
        }
        load
    }

    /// Count a flow's move into (+1) or out of (−1) the bulk rotation at its hosts.
    fn host_bulk(&mut self, i: usize, up: bool) {
        let (s, d) = (self.flows[i].srchost as usize, self.flows[i].dsthost as usize);
        let step = |c: &mut u16| *c = if up { c.saturating_add(1) } else { c.saturating_sub(1) };
        if self.cfg.flow_mode.dsrc() {
            step(&mut self.hosts[s].src_bulk);
        }
        if self.cfg.flow_mode.ddst() {
            step(&mut self.hosts[d].dst_bulk);
        }
    }

    /// Length charged to the shaper and the deficits: IP length + overhead, at least `mpu`.
    #[inline]
    fn adjusted_len(&self, p: &Timed) -> u32 {
        ((p.ip_len() as i64 + self.cfg.overhead as i64).max(1) as u32).max(self.cfg.mpu)
    }

    /// `cake_advance_shaper` (one tin): returns the adjusted length.
    fn advance_shaper(&mut self, p: &Timed, drop: bool) -> u32 {
        let len = self.adjusted_len(p);
        if let Some(r) = self.cfg.rate_bps {
            let d = Dur::tx_time(len as usize, r);
            self.time_next += d;
            if !drop {
                self.failsafe_next += Dur(d.0 + d.0 / 2);
            }
        }
        len
    }

    fn pop(&mut self, i: usize) -> Option<Timed> {
        let p = self.flows[i].q.pop_front()?;
        self.flows[i].backlog -= p.len as u64;
        self.pkts -= 1;
        self.bytes -= p.len as u64;
        Some(p)
    }

    /// `cake_drop`: drop the head of the longest queue. Returns the queue and the packet.
    fn drop_longest(&mut self, now: Time) -> Option<(usize, Timed)> {
        let (mut idx, mut max) = (0, 0);
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max {
                max = f.backlog;
                idx = i;
            }
        }
        let p = self.pop(idx)?;
        if self.flows[idx].cvars.queue_full(&self.prm, now) {
            self.unresponsive += 1;
        }
        self.stats.overlimit_drops += 1;
        if self.cfg.ingress {
            self.advance_shaper(&p, true);
        }
        Some((idx, p))
    }

    /// `cake_ack_filter`: a queued ACK of the same connection that the packet just appended
    /// to queue `i` makes redundant, removed.
    fn ack_filter(&mut self, i: usize) -> Option<Timed> {
        let mode = match self.cfg.ack_filter {
            AckFilterMode::None => return None,
            AckFilterMode::Conservative => CakeMode::Conservative,
            AckFilterMode::Aggressive => CakeMode::Aggressive,
        };
        let q = &self.flows[i].q;
        let trig = q.back()?;
        let t = trig.pkt.tcp()?;
        if !t.flags.contains(TcpFlags::ACK) || t.flags.contains(TcpFlags::SYN) {
            return None;
        }
        let key = FlowKey::of(&trig.pkt);
        let n = q.len() - 1;
        let cands = q.iter().take(n).map(|c| (FlowKey::of(&c.pkt) == key).then_some(&c.pkt));
        let j = crate::shape::asym::cake_find_redundant(cands, n, t, mode)?;
        let p = self.flows[i].q.remove(j)?;
        self.flows[i].backlog -= p.len as u64;
        self.pkts -= 1;
        self.bytes -= p.len as u64;
        Some(p)
    }
}

impl QueueDisc for Cake {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        let idx = self.classify(&pkt);
        if self.pkts == 0 && self.time_next < now {
            // The shaper's schedule is stale after idleness.
            self.time_next = now;
            self.failsafe_next = now;
        }
        let p = Timed::new(now, pkt);
        let len = p.len as u64;
        self.flows[idx].q.push_back(p);
        self.flows[idx].backlog += len;
        self.pkts += 1;
        self.bytes += len;
        if let Some(ack) = self.ack_filter(idx) {
            self.stats.ack_drops += 1;
            if self.cfg.ingress {
                self.advance_shaper(&ack, true);
            }
        }
        // Flow chains.
        match self.flows[idx].set {
            Set::None | Set::Decaying => {
                if self.flows[idx].set == Set::Decaying {
                    self.decaying -= 1;
                }
                self.chains.move_tail(idx, NEW);
                self.flows[idx].set = Set::Sparse;
                self.sparse += 1;
                let load = self.host_load(idx);
                self.flows[idx].deficit = ((self.flow_quantum * (65535 / load)) >> 16) as i32;
            }
            Set::SparseWait => {
                self.flows[idx].set = Set::Bulk;
                self.sparse -= 1;
                self.bulk += 1;
                self.host_bulk(idx, true);
            }
            Set::Sparse | Set::Bulk => {}
        }
        let mut own = None;
        while self.bytes > self.buffer_limit {
            match self.drop_longest(now) {
                Some((q, p)) => {
                    if q == idx && self.flows[idx].q.is_empty() {
                        own = Some(p);
                    }
                }
                None => break,
            }
        }
        match own {
            Some(p) => {
                self.returned_drops += 1;
                Enqueue::Dropped(p.pkt)
            }
            None => Enqueue::Queued,
        }
    }

    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        // Decaying flows get one look first per dequeue, not per pass (`first_flow` is set
        // once, before `begin`, in `cake_dequeue`).
        let mut first_flow = true;
        'begin: loop {
            if self.pkts == 0 {
                return None;
            }
            if self.cfg.rate_bps.is_some() && self.time_next > now && self.failsafe_next > now {
                return None;
            }
            'retry: loop {
                let head = if first_flow && !self.chains.is_empty(DECAYING) {
                    DECAYING
                } else if !self.chains.is_empty(NEW) {
                    NEW
                } else if !self.chains.is_empty(OLD) {
                    OLD
                } else if !self.chains.is_empty(DECAYING) {
                    DECAYING
                } else {
                    return None;
                };
                let i = self.chains.front(head).expect("not empty");
                first_flow = false;
                if self.flows[i].deficit <= 0 {
                    // Keep flows with deficits out of the sparse and decaying rotations.
                    if self.flows[i].set == Set::Sparse {
                        if !self.flows[i].q.is_empty() {
                            self.sparse -= 1;
                            self.bulk += 1;
                            self.host_bulk(i, true);
                            self.flows[i].set = Set::Bulk;
                        } else {
                            self.flows[i].set = Set::SparseWait;
                        }
                    }
                    let load = self.host_load(i);
                    let dither = self.rng.gen::<u32>() >> 16;
                    self.flows[i].deficit += ((self.flow_quantum * (65535 / load) + dither) >> 16) as i32;
                    self.chains.move_tail(i, OLD);
                    continue 'retry;
                }
                // Retrieve a packet via the AQM.
                let p = loop {
                    let Some(mut p) = self.pop(i) else {
                        // The queue was empty.
                        if self.flows[i].cvars.queue_empty(&self.prm, now) {
                            self.unresponsive = self.unresponsive.saturating_sub(1);
                        }
                        let c = self.flows[i].cvars;
                        if c.p_drop != 0 || c.count != 0 || now < c.drop_next {
                            // Keep it in the rotation until its state has decayed to rest.
                            self.chains.move_tail(i, DECAYING);
                            match self.flows[i].set {
                                Set::Bulk => {
                                    self.bulk -= 1;
                                    self.host_bulk(i, false);
                                    self.decaying += 1;
                                }
                                Set::Sparse | Set::SparseWait => {
                                    self.sparse -= 1;
                                    self.decaying += 1;
                                }
                                _ => {}
                            }
                            self.flows[i].set = Set::Decaying;
                        } else {
                            self.chains.remove(i);
                            match self.flows[i].set {
                                Set::Sparse | Set::SparseWait => self.sparse -= 1,
                                Set::Bulk => {
                                    self.bulk -= 1;
                                    self.host_bulk(i, false);
                                }
                                Set::Decaying => self.decaying -= 1,
                                Set::None => {}
                            }
                            self.flows[i].set = Set::None;
                        }
                        continue 'begin;
                    };
                    let bulk_flows = if self.cfg.ingress { self.bulk } else { 0 };
                    let prm = self.prm;
                    let drop = self.flows[i].cvars.should_drop(&prm, now, &mut p.pkt, p.t, bulk_flows, &mut self.rng);
                    // The last packet of a queue is delivered, marked or not.
                    if !drop || self.flows[i].q.is_empty() {
                        break p;
                    }
                    self.stats.drops += 1;
                    if self.cfg.ingress {
                        let len = self.advance_shaper(&p, true);
                        self.flows[i].deficit -= len as i32;
                        continue 'retry;
                    }
                };
                self.stats.ecn_marks += self.flows[i].cvars.ecn_marked as u64;
                let len = self.advance_shaper(&p, false);
                self.flows[i].deficit -= len as i32;
                self.sojourn.add(now.since(p.t));
                return Some(p.pkt);
            }
        }
    }

    fn next_ready(&self, now: Time) -> Option<Time> {
        if self.pkts == 0 || self.cfg.rate_bps.is_none() {
            return None;
        }
        let t = self.time_next.min(self.failsafe_next);
        (t > now).then_some(t)
    }
    fn len_pkts(&self) -> usize {
        self.pkts
    }
    fn len_bytes(&self) -> usize {
        self.bytes as usize - 14 * self.pkts
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("cake_drops", s.drops),
            ("cake_ecn_marks", s.ecn_marks),
            ("cake_overlimit_drops", s.overlimit_drops),
            ("cake_ack_drops", s.ack_drops),
            ("cake_way_directs", s.way_directs),
            ("cake_way_hits", s.way_hits),
            ("cake_way_misses", s.way_misses),
            ("cake_way_collisions", s.way_collisions),
        ]
    }
    fn internal_drops(&self) -> u64 {
        self.stats.drops + self.stats.overlimit_drops + self.stats.ack_drops - self.returned_drops
    }
    /// Keys the flow hash (before the first packet: queued packets keep the queue they hashed to).
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        self.hasher = super::FlowHasher::keyed(key.derive("cake", 0));
    }
    fn aqm_stats(&self) -> Option<AqmStats> {
        Some(AqmStats {
            drops: self.stats.drops + self.stats.overlimit_drops + self.stats.ack_drops,
            marks: self.stats.ecn_marks,
            ..self.sojourn
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testpkt::{port, tcp};
    use super::*;
    use crate::rng::stream;
    use ackshape_wire::{Ecn, SeqNum, L4};

    fn cake(cfg: CakeConfig) -> Cake {
        Cake::new(cfg, stream(7, "cake-test", 0))
    }

    fn src_of(p: &Packet) -> u8 {
        match p.ip.src {
            std::net::IpAddr::V4(a) => a.octets()[3],
            _ => 0,
        }
    }

    #[test]
    fn set_associative_hashing_gives_flows_of_one_set_their_own_queues_until_it_is_full() {
        let mut c = cake(CakeConfig { flow_mode: FlowMode::Flows, ..Default::default() });
        // Nine flows whose hashes fall in the same set of 8 queues.
        let set = |c: &Cake, sport: u16| (c.hasher.flow(&tcp(1, sport, 1, 100, Ecn::NotEct)) as usize % QUEUES) / WAYS;
        let s0 = set(&c, 1);
        let ports: Vec<u16> = (1u16..).filter(|&p| set(&c, p) == s0).take(9).collect();
        for &p in &ports[..8] {
            c.enqueue(Time::ZERO, tcp(1, p, 1, 100, Ecn::NotEct));
        }
        // Eight flows, eight distinct queues of that set, one flow each.
        let busy: Vec<usize> = (0..QUEUES).filter(|&i| !c.flows[i].q.is_empty()).collect();
        assert_eq!(busy.len(), 8, "{busy:?}");
        assert!(busy.iter().all(|&i| i / WAYS == s0));
        assert_eq!(c.stats().way_collisions, 0);
        // The ninth finds every way busy: it shares a queue (a collision).
        c.enqueue(Time::ZERO, tcp(1, ports[8], 1, 100, Ecn::NotEct));
        assert_eq!(c.stats().way_collisions, 1);
        assert_eq!((0..QUEUES).filter(|&i| !c.flows[i].q.is_empty()).count(), 8);
        // A flow that comes back finds its tagged queue again (a direct hit or a way hit).
        let before = c.stats().way_directs + c.stats().way_hits;
        c.enqueue(Time::ZERO, tcp(1, ports[3], 1, 100, Ecn::NotEct));
        assert_eq!(c.stats().way_directs + c.stats().way_hits, before + 1);
        // Plain hashing (reduced hash only) would have put some of these nine together even
        // with idle queues around: count the distinct direct slots.
        let direct: std::collections::HashSet<usize> =
            ports.iter().map(|&p| c.hasher.flow(&tcp(1, p, 1, 100, Ecn::NotEct)) as usize % QUEUES).collect();
        println!("9 flows of one set: 8 queues with 8 ways, {} distinct slots by direct hashing", direct.len());
    }

    /// Backlogged TCP flows: `(src host, dst host, sport)` each; bytes sent per flow while
    /// ~2 MB are dequeued at t = 0 (no sojourn, so no AQM).
    fn share(mode: FlowMode, flows: &[(u8, u8, u16)]) -> Vec<u64> {
        let mut c = cake(CakeConfig { flow_mode: mode, ..Default::default() });
        for _ in 0..2000 {
            for &(s, d, p) in flows {
                c.enqueue(Time::ZERO, tcp(s, p, d, 1400, Ecn::NotEct));
            }
        }
        let mut bytes = vec![0u64; flows.len()];
        let mut sent = 0;
        while sent < 2_000_000 {
            let p = c.dequeue(Time::ZERO).unwrap();
            let k = flows.iter().position(|&(s, _, sp)| s == src_of(&p) && sp == port(&p)).unwrap();
            bytes[k] += p.frame_len() as u64;
            sent += p.frame_len() as u64;
        }
        bytes
    }

    #[test]
    fn dual_and_triple_isolation_share_between_hosts() {
        let per_host = |b: &[u64]| (b[0] as f64, b[1..].iter().sum::<u64>() as f64);
        // Host 1 runs one flow, host 2 four, all to one destination.
        let flows = [(1, 1, 100), (2, 1, 200), (2, 1, 201), (2, 1, 202), (2, 1, 203)];
        let (a, b) = per_host(&share(FlowMode::DualSrchost, &flows));
        println!("dual-srchost: host 1 {a}, host 2 {b} bytes");
        assert!((a / b - 1.0).abs() < 0.1, "source hosts share equally: {a} vs {b}");
        // Per-flow fairness only: host 2 gets four shares.
        let (a, b) = per_host(&share(FlowMode::Flows, &flows));
        println!("flows: host 1 {a}, host 2 {b} bytes");
        assert!((b / a - 4.0).abs() < 0.4, "{a} vs {b}");
        // Triple-isolate weighs each flow by the busier of its two hosts: all five share the
        // one destination (load 5), so here it is per-flow fair, as CAKE is.
        let (a, b) = per_host(&share(FlowMode::TripleIsolate, &flows));
        println!("triple-isolate, one destination: host 1 {a}, host 2 {b} bytes");
        assert!((b / a - 4.0).abs() < 0.4, "{a} vs {b}");
        // … and host-fair when the hosts talk to different destinations.
        let flows = [(1, 1, 100), (2, 2, 200), (2, 2, 201), (2, 2, 202), (2, 2, 203)];
        let (a, b) = per_host(&share(FlowMode::TripleIsolate, &flows));
        println!("triple-isolate, two destinations: host 1 {a}, host 2 {b} bytes");
        assert!((a / b - 1.0).abs() < 0.1, "{a} vs {b}");
        // Destination fairness: one flow to host 1, four to host 2, from one source.
        let flows = [(1, 1, 100), (1, 2, 200), (1, 2, 201), (1, 2, 202), (1, 2, 203)];
        let (a, b) = per_host(&share(FlowMode::DualDsthost, &flows));
        println!("dual-dsthost: to host 1 {a}, to host 2 {b} bytes");
        assert!((a / b - 1.0).abs() < 0.1, "{a} vs {b}");
        // dual-srchost does not balance destinations.
        let (a, b) = per_host(&share(FlowMode::DualSrchost, &flows));
        assert!((b / a - 4.0).abs() < 0.4, "{a} vs {b}");
    }

    #[test]
    fn flowblind_is_one_fifo() {
        let mut c = cake(CakeConfig { flow_mode: FlowMode::Flowblind, ..Default::default() });
        for i in 0..20u16 {
            c.enqueue(Time::ZERO, tcp(1 + (i % 3) as u8, 100 + i, 1, 100, Ecn::NotEct));
        }
        let order: Vec<u16> = (0..20).map(|_| port(&c.dequeue(Time::ZERO).unwrap())).collect();
        assert_eq!(order, (100..120).collect::<Vec<_>>());
    }

    #[test]
    fn the_shaper_spaces_packets_at_the_rate_without_bursts() {
        let rate = 10_000_000;
        let mut c = cake(CakeConfig { rate_bps: Some(rate), overhead: 14, ..Default::default() });
        for _ in 0..50 {
            c.enqueue(Time::ZERO, tcp(1, 1, 1, 1460, Ecn::NotEct)); // 1500 B IP, 1514 charged
        }
        let gap = Dur::tx_time(1514, rate);
        let mut t = Time::ZERO;
        let mut times = Vec::new();
        while c.len_pkts() > 0 {
            match c.dequeue(t) {
                Some(_) => times.push(t),
                None => t = c.next_ready(t).expect("held packets have a time"),
            }
        }
        assert_eq!(times.len(), 50);
        for w in times.windows(2) {
            assert_eq!(w[1].since(w[0]), gap);
        }
        // After idleness the schedule is not stale: a new packet goes at once.
        let later = t + Dur::from_secs(1);
        c.enqueue(later, tcp(1, 1, 1, 1446, Ecn::NotEct));
        assert!(c.dequeue(later).is_some());
        // Rate-dependent settings (cake_set_rate): quantum rate/4096 within 300 … 1514 bytes,
        // target ≥ 1.5 MTU times, buffer 4 × rate × rtt but at least 4 MiB.
        assert_eq!(c.quantum(), 305);
        assert_eq!(c.params().target, Dur::from_millis(5));
        assert_eq!(c.buffer_limit(), 4 << 20);
        let slow = cake(CakeConfig { rate_bps: Some(1_000_000), ..Default::default() });
        assert_eq!(slow.params().target, Dur(Dur::tx_time(1514, 1_000_000).0 * 3 / 2));
        assert!(slow.params().interval >= Dur(2 * slow.params().target.0));
        assert_eq!(slow.quantum(), 300);
    }

    /// One flow fed 2 packets per ms and served one per ms (a standing queue); returns CAKE.
    fn standing(ecn: Ecn, ms: u64) -> Cake {
        let mut c = cake(CakeConfig { flow_mode: FlowMode::Flowblind, ..Default::default() });
        for k in 0..ms {
            let t = Time(Dur::from_millis(k).0);
            c.enqueue(t, tcp(1, 1, 1, 1446, ecn));
            c.enqueue(t + Dur::from_micros(500), tcp(1, 1, 1, 1446, ecn));
            let _ = c.dequeue(t + Dur::from_micros(999));
        }
        c
    }

    #[test]
    fn cobalt_drops_a_standing_queue_on_codel_schedule_and_marks_ect() {
        let c = standing(Ecn::NotEct, 100);
        assert_eq!(c.stats().drops, 0, "no drop within the first interval");
        let c = standing(Ecn::NotEct, 1000);
        println!("1 s of a standing queue: {:?}, count {}", c.stats(), c.flows[0].cvars.count);
        assert!(c.stats().drops > 10);
        assert_eq!(c.internal_drops(), c.stats().drops);
        let c = standing(Ecn::Ect0, 1000);
        assert_eq!(c.stats().drops, 0);
        assert!(c.stats().ecn_marks > 10, "{:?}", c.stats());
    }

    #[test]
    fn blue_rises_on_overflow_and_drops_unresponsive_traffic_then_decays() {
        // A small buffer overflowed by one flow: each overflow (at most once per target)
        // raises its BLUE probability by 1/256; BLUE then drops at dequeue even without a
        // standing sojourn time.
        let mut c = cake(CakeConfig { memory_limit: Some(20 * 1514), ..Default::default() });
        let mut t = Time::ZERO;
        for _ in 0..2000 {
            t += Dur::from_micros(500);
            for _ in 0..3 {
                c.enqueue(t, tcp(1, 1, 1, 1446, Ecn::NotEct));
            }
            let _ = c.dequeue(t);
        }
        let i = (0..QUEUES).find(|&i| c.flows[i].cvars.p_drop > 0).expect("BLUE active");
        let p = c.flows[i].cvars.p_drop;
        println!("after overload: {:?}, p_drop {:.4}", c.stats(), p as f64 / u32::MAX as f64);
        assert!(c.stats().overlimit_drops > 1000);
        assert!(p >= 100 << 24, "about one step per 5 ms of overflow: {p}");
        assert!(c.stats().drops > 0, "BLUE dropped at dequeue");
        // Drain, then a sparse flow keeps the scheduler visiting the idle queue: its BLUE
        // probability decays by 1/4096 per visit at most once per target.
        while c.dequeue(t).is_some() {}
        for _ in 0..200 {
            t += Dur::from_millis(6);
            c.enqueue(t, tcp(2, 9, 2, 100, Ecn::NotEct));
            while c.dequeue(t).is_some() {}
        }
        let p2 = c.flows[i].cvars.p_drop;
        println!("after 1.2 s idle: p_drop {:.4}", p2 as f64 / u32::MAX as f64);
        assert!(p2 < p && p - p2 <= 200 << 20, "{p} → {p2}");
    }

    fn ack(n: u32) -> Packet {
        let mut p = tcp(1, 5000, 1, 0, Ecn::NotEct);
        if let L4::Tcp(t) = &mut p.l4 {
            t.flags = TcpFlags::ACK;
            t.ack = SeqNum(n);
        }
        p
    }

    #[test]
    fn the_ack_filter_runs_in_each_flow_queue() {
        let mut c = cake(CakeConfig { ack_filter: AckFilterMode::Conservative, ..Default::default() });
        // Another connection's data in between does not change anything.
        for n in [1000, 2000] {
            c.enqueue(Time::ZERO, ack(n));
            c.enqueue(Time::ZERO, tcp(3, 80, 3, 1000, Ecn::NotEct));
        }
        assert_eq!(c.stats().ack_drops, 0, "one eligible ACK: conservative keeps it");
        c.enqueue(Time::ZERO, ack(3000));
        assert_eq!(c.stats().ack_drops, 1, "two eligible: the older goes");
        c.enqueue(Time::ZERO, ack(4000));
        assert_eq!(c.stats().ack_drops, 2);
        let acks: Vec<u32> = std::iter::from_fn(|| c.dequeue(Time::ZERO))
            .filter_map(|p| p.tcp().filter(|_| p.payload_len == 0).map(|t| t.ack.0))
            .collect();
        assert_eq!(acks, [3000, 4000]);
        assert_eq!(c.internal_drops(), 2);
        // Off: nothing filtered.
        let mut c = cake(CakeConfig::default());
        for n in [1000, 2000, 3000] {
            c.enqueue(Time::ZERO, ack(n));
        }
        assert_eq!(c.stats().ack_drops, 0);
    }

    #[test]
    fn over_the_memory_limit_the_longest_queue_loses_its_head() {
        let mut c =
            cake(CakeConfig { flow_mode: FlowMode::Flows, memory_limit: Some(10 * 1514), ..Default::default() });
        // A bulk flow: 10 packets of 1500 B frames, two sent (its quantum is used up), two more.
        for _ in 0..10 {
            c.enqueue(Time::ZERO, tcp(1, 1, 1, 1446, Ecn::NotEct));
        }
        c.dequeue(Time::ZERO).unwrap();
        c.dequeue(Time::ZERO).unwrap();
        for _ in 0..2 {
            c.enqueue(Time::ZERO, tcp(1, 1, 1, 1446, Ecn::NotEct));
        }
        assert_eq!(c.stats().overlimit_drops, 0);
        // 10 × 1500 B queued; a new flow's packet overflows the 15 140 B: the bulk flow loses
        // its head, the new packet stays and goes first.
        assert!(matches!(c.enqueue(Time::ZERO, tcp(2, 2, 2, 1446, Ecn::NotEct)), Enqueue::Queued));
        assert_eq!(c.stats().overlimit_drops, 1);
        assert_eq!(c.len_pkts(), 10);
        let first = c.dequeue(Time::ZERO).unwrap();
        assert_eq!(src_of(&first), 2, "the new (sparse) flow first");
        assert_eq!(c.len_pkts(), 9);
        assert_eq!(c.internal_drops(), 1);
    }

    #[test]
    fn config_is_validated() {
        assert!(CakeConfig::default().validate().is_ok());
        assert!(CakeConfig { rate_bps: Some(0), ..Default::default() }.validate().is_err());
        assert!(CakeConfig { memory_limit: Some(100), ..Default::default() }.validate().is_err());
    }
}
