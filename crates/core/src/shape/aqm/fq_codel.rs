//! FQ-CoDel, the FlowQueue-CoDel scheduler and AQM (RFC 8290): packets are hashed into `flows`
//! queues, each managed by its own CoDel (RFC 8289), served by a deficit round robin with a byte
//! `quantum` over two lists of active queues.
//!
//! From RFC 8290 §4 and Linux `net/sched/sch_fq_codel.c`:
//! - **Classification** (`fq_codel_hash`): a keyed hash of the 5-tuple, scaled to `flows`
//!   queues (collisions share a queue, as in Linux; no set associativity — that is CAKE's).
//! - **Enqueue** (`fq_codel_enqueue`): the packet is timestamped and appended to its queue; a
//!   queue that is on neither list joins the tail of the *new* list with a deficit of one
//!   quantum. When the total exceeds `limit_pkts` or `memory_limit`, packets are dropped from
//!   the head of the queue with the largest byte backlog — up to `drop_batch` packets or until
//!   half of its backlog is gone (`fq_codel_drop`) — and that queue's CoDel `count` grows by
//!   the number dropped ("tell codel to increase its signal strength").
//! - **Dequeue** (`fq_codel_dequeue`, RFC 8290 §4.2): take the first queue of the new list,
//!   else of the old list; a queue whose deficit is used up gets another quantum and moves to
//!   the tail of the old list; otherwise CoDel dequeues from it and the packet's frame length
//!   is charged to its deficit. A queue found empty moves to the old list if it came from the
//!   new list and the old list is not empty (so a flow cannot stay "new" by emptying its queue
//!   each round), and otherwise leaves the lists. New queues thus go first (*new-flow
//!   priority*), and backlogged queues share the link byte-fairly within one quantum.
//! - **CoDel** per queue with shared parameters; its one-MTU test looks at the whole
//!   scheduler's backlog, as Linux passes `sch->qstats.backlog` (RFC 8290 does not say).
//!   ECN marking is on by default (RFC 8290 §5.1, Linux).
//!
//! **Where it differs from Linux.** The memory limit counts frame bytes, not the kernel's
//! `skb->truesize` (which adds buffer overhead); no `ce_threshold`; no external classifier.

use super::codel::{validate_params, CodelQueue};
use super::{reduce, CodelParams, CodelStats, CodelVars, FlowHasher, Timed, MTU_FRAME};
use crate::queue::{AqmStats, Enqueue, QueueDisc};
use crate::rng::Rng;
use crate::time::Time;
use crate::units::{DurV, SizeV};
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// `{ kind = "fq-codel", flows = 1024, quantum = "1514B", target = "5ms", interval = "100ms",
/// limit_pkts = 10240, memory_limit = "32MiB", ecn = true, drop_batch = 64 }`
#[derive(Clone, Debug, PartialEq)]
pub struct FqCodelConfig {
    /// Number of flow queues (RFC 8290 §5.2.1 / Linux: 1024).
    pub flows: u32,
    /// Bytes (frames) a queue may send per round (Linux: the device MTU, 1514 for Ethernet).
    pub quantum: u32,
    /// CoDel's parameters, shared by every queue (ECN on by default).
    pub params: CodelParams,
    /// Total packets (Linux: 10240).
    pub limit_pkts: usize,
    /// Total frame bytes (Linux: 32 MiB).
    pub memory_limit: u64,
    /// Most packets dropped from the fattest queue at one overflow (Linux: 64).
    pub drop_batch: u32,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            flows: 1024,
            quantum: MTU_FRAME,
            params: CodelParams { ecn: true, ..CodelParams::default() },
            limit_pkts: 10240,
            memory_limit: 32 << 20,
            drop_batch: 64,
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FqCodelV {
    flows: Option<u32>,
    quantum: Option<SizeV>,
    target: Option<DurV>,
    interval: Option<DurV>,
    limit_pkts: Option<usize>,
    memory_limit: Option<SizeV>,
    ecn: Option<bool>,
    drop_batch: Option<u32>,
}

impl FqCodelConfig {
    pub(crate) fn from_table(t: crate::table::Table) -> Result<FqCodelConfig, String> {
        let v: FqCodelV = crate::table::keyed(t)?;
        let d = FqCodelConfig::default();
        Ok(FqCodelConfig {
            flows: v.flows.unwrap_or(d.flows),
            quantum: match v.quantum {
                None => d.quantum,
                Some(s) => crate::units::bytes_of("quantum", s.0)?.min(u32::MAX as u64) as u32,
            },
            params: CodelParams {
                target: v.target.map_or(d.params.target, |x| x.0),
                interval: v.interval.map_or(d.params.interval, |x| x.0),
                ecn: v.ecn.unwrap_or(d.params.ecn),
                mtu: MTU_FRAME,
            },
            limit_pkts: v.limit_pkts.unwrap_or(d.limit_pkts),
            memory_limit: match v.memory_limit {
                None => d.memory_limit,
                Some(s) => crate::units::bytes_of("memory_limit", s.0)?,
            },
            drop_batch: v.drop_batch.unwrap_or(d.drop_batch),
        })
    }
    pub(crate) fn to_table(&self) -> crate::table::Table {
        let mut t = crate::table::Table::new();
        t.insert("flows".into(), crate::table::val(self.flows as i64));
        t.insert("quantum".into(), crate::table::val(format!("{}B", self.quantum)));
        t.insert("target".into(), crate::table::val(super::dur_str(self.params.target)));
        t.insert("interval".into(), crate::table::val(super::dur_str(self.params.interval)));
        t.insert("limit_pkts".into(), crate::table::val(self.limit_pkts as i64));
        t.insert("memory_limit".into(), crate::table::val(format!("{}B", self.memory_limit)));
        t.insert("ecn".into(), crate::table::val(self.params.ecn));
        t.insert("drop_batch".into(), crate::table::val(self.drop_batch as i64));
        t
    }
    pub fn validate(&self) -> Result<(), String> {
        validate_params(&self.params)?;
        if !(1..=65536).contains(&self.flows) {
            return Err(format!("flows must be in 1 … 65536, got {}", self.flows));
        }
        if self.quantum < 256 {
            return Err(format!("quantum must be ≥ 256 bytes (Linux's floor), got {}", self.quantum));
        }
        if self.limit_pkts == 0 || self.drop_batch == 0 {
            return Err("limit_pkts and drop_batch must be ≥ 1".into());
        }
        if self.memory_limit < MTU_FRAME as u64 {
            return Err(format!("memory_limit must hold one full frame ({MTU_FRAME} B), got {} B", self.memory_limit));
        }
        Ok(())
    }
}

/// One flow queue.
#[derive(Debug, Default)]
struct Flow {
    q: VecDeque<Timed>,
    /// Frame bytes queued.
    backlog: u64,
    deficit: i64,
    vars: CodelVars,
    /// On the new or the old list.
    listed: bool,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FqCodelStats {
    /// CoDel's head drops and marks, over all queues.
    pub codel: CodelStats,
    /// Packets dropped because the scheduler was over `limit_pkts` or `memory_limit`.
    pub overlimit_drops: u64,
    /// … of which while over `memory_limit`.
    pub overmemory_drops: u64,
    /// Queues that joined the new list.
    pub new_flows: u64,
}

/// An FQ-CoDel scheduler (see the module documentation).
pub struct FqCodel {
    cfg: FqCodelConfig,
    hasher: FlowHasher,
    flows: Vec<Flow>,
    new_list: VecDeque<u32>,
    old_list: VecDeque<u32>,
    pkts: usize,
    /// Frame bytes queued.
    bytes: u64,
    stats: FqCodelStats,
    /// Overlimit drops handed back by `enqueue` (the arriving packet itself).
    returned_drops: u64,
    sojourn: AqmStats,
}

/// A flow queue as CoDel sees it: its packets, and the scheduler's total backlog.
struct FlowView<'a> {
    q: &'a mut VecDeque<Timed>,
    backlog: &'a mut u64,
    pkts: &'a mut usize,
    bytes: &'a mut u64,
}

impl CodelQueue for FlowView<'_> {
    #[inline]
    fn pop(&mut self) -> Option<Timed> {
        let p = self.q.pop_front()?;
        *self.backlog -= p.len as u64;
        *self.pkts -= 1;
        *self.bytes -= p.len as u64;
        Some(p)
    }
    #[inline]
    fn backlog(&self) -> u64 {
        *self.bytes
    }
}

impl FqCodel {
    /// `rng`: the hash key is drawn from it.
    pub fn new(cfg: FqCodelConfig, mut rng: Rng) -> FqCodel {
        let n = cfg.flows as usize;
        FqCodel {
            hasher: FlowHasher::new(&mut rng),
            flows: (0..n).map(|_| Flow::default()).collect(),
            cfg,
            new_list: VecDeque::new(),
            old_list: VecDeque::new(),
            pkts: 0,
            bytes: 0,
            stats: FqCodelStats::default(),
            returned_drops: 0,
            sojourn: AqmStats::default(),
        }
    }
    pub fn stats(&self) -> &FqCodelStats {
        &self.stats
    }
    /// The queue a packet hashes to.
    pub fn queue_of(&self, p: &Packet) -> usize {
        reduce(self.hasher.flow(p), self.cfg.flows) as usize
    }
    /// Packets in queue `i`.
    pub fn queue_len(&self, i: usize) -> usize {
        self.flows.get(i).map_or(0, |f| f.q.len())
    }
    /// Queues on the new and on the old list.
    pub fn list_lens(&self) -> (usize, usize) {
        (self.new_list.len(), self.old_list.len())
    }

    /// `fq_codel_drop`: drop from the head of the queue with the largest backlog, up to
    /// `drop_batch` packets or half its backlog. Returns the queue, how many were dropped and
    /// the last of them.
    fn drop_from_fattest(&mut self) -> (usize, u64, Option<Timed>) {
        let mut idx = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max {
                max = f.backlog;
                idx = i;
            }
        }
        let threshold = max / 2;
        let f = &mut self.flows[idx];
        let (mut n, mut len, mut last) = (0u64, 0u64, None);
        while let Some(p) = f.q.pop_front() {
            len += p.len as u64;
            f.backlog -= p.len as u64;
            self.pkts -= 1;
            self.bytes -= p.len as u64;
            last = Some(p);
            n += 1;
            if n >= self.cfg.drop_batch as u64 || len >= threshold {
                break;
            }
        }
        f.vars.count = f.vars.count.wrapping_add(n as u32);
        (idx, n, last)
    }
}

impl QueueDisc for FqCodel {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        let idx = self.queue_of(&pkt);
        let p = Timed::new(now, pkt);
        let len = p.len as u64;
        let f = &mut self.flows[idx];
        f.q.push_back(p);
        f.backlog += len;
        if !f.listed {
            f.listed = true;
            f.deficit = self.cfg.quantum as i64;
            self.new_list.push_back(idx as u32);
            self.stats.new_flows += 1;
        }
        self.pkts += 1;
        self.bytes += len;
        let over_memory = self.bytes > self.cfg.memory_limit;
        if self.pkts <= self.cfg.limit_pkts && !over_memory {
            return Enqueue::Queued;
        }
        let (fat, n, last) = self.drop_from_fattest();
        self.stats.overlimit_drops += n;
        if over_memory {
            self.stats.overmemory_drops += n;
        }
        // The arriving packet went too if its queue was emptied (it was at the tail).
        if fat == idx && self.flows[idx].q.is_empty() {
            if let Some(p) = last {
                self.returned_drops += 1;
                return Enqueue::Dropped(p.pkt);
            }
        }
        Enqueue::Queued
    }

    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        loop {
            let (from_new, idx) = match (self.new_list.front(), self.old_list.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return None,
            };
            let head = if from_new { &mut self.new_list } else { &mut self.old_list };
            let Flow { q, backlog, deficit, vars, listed } = &mut self.flows[idx];
            if *deficit <= 0 {
                *deficit += self.cfg.quantum as i64;
                head.pop_front();
                self.old_list.push_back(idx as u32);
                continue;
            }
            let mut view = FlowView { q, backlog, pkts: &mut self.pkts, bytes: &mut self.bytes };
            match vars.dequeue(&mut view, &self.cfg.params, &mut self.stats.codel, now, |_| {}) {
                None => {
                    head.pop_front();
                    if from_new && !self.old_list.is_empty() {
                        // Force a pass through the old list (RFC 8290 §4.2).
                        self.old_list.push_back(idx as u32);
                    } else {
                        *listed = false;
                    }
                }
                Some(p) => {
                    *deficit -= p.len as i64;
                    self.sojourn.add(now.since(p.t));
                    return Some(p.pkt);
                }
            }
        }
    }

    fn len_pkts(&self) -> usize {
        self.pkts
    }
    fn len_bytes(&self) -> usize {
        self.bytes as usize - 14 * self.pkts
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("fq_codel_drops", self.stats.codel.drops),
            ("fq_codel_ecn_marks", self.stats.codel.marks),
            ("fq_codel_overlimit_drops", self.stats.overlimit_drops),
            ("fq_codel_overmemory_drops", self.stats.overmemory_drops),
            ("fq_codel_new_flows", self.stats.new_flows),
        ]
    }
    fn internal_drops(&self) -> u64 {
        self.stats.codel.drops + self.stats.overlimit_drops - self.returned_drops
    }
    /// Keys the flow hash (before the first packet: queued packets keep the queue they hashed to).
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        self.hasher = super::FlowHasher::keyed(key.derive("fq-codel", 0));
    }
    fn aqm_stats(&self) -> Option<AqmStats> {
        Some(AqmStats {
            drops: self.stats.codel.drops + self.stats.overlimit_drops,
            marks: self.stats.codel.marks,
            ..self.sojourn
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testpkt::{port, udp};
    use super::*;
    use crate::rng::stream;
    use crate::time::Dur;

    fn fq(cfg: FqCodelConfig) -> FqCodel {
        FqCodel::new(cfg, stream(1, "fq-codel-test", 0))
    }

    /// Flows (source ports) that hash to distinct queues.
    fn distinct_flows(q: &FqCodel, n: usize) -> Vec<u16> {
        let mut seen = std::collections::HashSet::new();
        (1000u16..).filter(|&f| seen.insert(q.queue_of(&udp(f, 100)))).take(n).collect()
    }

    #[test]
    fn a_new_flow_goes_before_backlogged_old_flows() {
        let mut q = fq(FqCodelConfig::default());
        let f = distinct_flows(&q, 3);
        // Two bulk flows, served for a while so both sit on the old list.
        for _ in 0..100 {
            q.enqueue(Time::ZERO, udp(f[0], 1400));
            q.enqueue(Time::ZERO, udp(f[1], 1400));
        }
        for _ in 0..10 {
            q.dequeue(Time::ZERO).unwrap();
        }
        assert_eq!(q.list_lens(), (0, 2));
        // A sparse flow's packet arrives: it is the very next one out.
        q.enqueue(Time::ZERO, udp(f[2], 100));
        assert_eq!(q.list_lens(), (1, 2));
        assert_eq!(port(&q.dequeue(Time::ZERO).unwrap()), f[2]);
        // Its queue is now empty and the old list is not: on its next visit it moves to the
        // old list's tail (no second priority pass) while an old flow is served …
        assert_ne!(port(&q.dequeue(Time::ZERO).unwrap()), f[2]);
        assert_eq!(q.list_lens(), (0, 3));
        // … and leaves the lists when it is found empty there.
        for _ in 0..6 {
            q.dequeue(Time::ZERO).unwrap();
        }
        assert_eq!(q.list_lens(), (0, 2));
    }

    #[test]
    fn a_queue_emptied_on_the_new_list_does_not_come_back_as_new_at_once() {
        // Without that rule (RFC 8290 §4.2) a flow that sends one packet per round would be
        // "new" every round and starve the others.
        let mut q = fq(FqCodelConfig::default());
        let f = distinct_flows(&q, 2);
        for _ in 0..50 {
            q.enqueue(Time::ZERO, udp(f[0], 1400));
        }
        q.dequeue(Time::ZERO).unwrap(); // f0 moves to old after its quantum is spent
        q.dequeue(Time::ZERO).unwrap();
        q.enqueue(Time::ZERO, udp(f[1], 100));
        assert_eq!(port(&q.dequeue(Time::ZERO).unwrap()), f[1]);
        // f1's queue is empty; it was moved to the old list's tail on the next visit, so a
        // new packet of f1 does not jump ahead: it is on the old list, still "listed".
        let out = q.dequeue(Time::ZERO).unwrap();
        assert_eq!(port(&out), f[0]);
        q.enqueue(Time::ZERO, udp(f[1], 100));
        assert_eq!(q.list_lens().0, 0, "f1 is still on the old list, not new");
    }

    #[test]
    fn backlogged_flows_share_bytes_within_a_quantum() {
        let mut q = fq(FqCodelConfig { limit_pkts: 100_000, ..FqCodelConfig::default() });
        let f = distinct_flows(&q, 3);
        // 1.2 MB of each (more than any flow can send before 3 MB went): all stay backlogged.
        let sizes = [1400u32, 200, 700];
        for (k, &s) in sizes.iter().enumerate() {
            for _ in 0..1_200_000 / (s as usize + 42) {
                q.enqueue(Time::ZERO, udp(f[k], s));
            }
        }
        let mut bytes = [0u64; 3];
        let mut sent = 0u64;
        let max_frame = udp(0, 1400).frame_len() as u64;
        // Dequeue at t = 0: no sojourn, so CoDel never drops. Between two refills of one queue
        // every other backlogged queue gets exactly one quantum, and a queue's deficit stays in
        // (−max frame, quantum]: the bytes sent by two queues differ by at most two quanta and
        // a frame at any moment, and by under a quantum and a frame per round over time.
        while sent < 3_000_000 {
            let p = q.dequeue(Time::ZERO).unwrap();
            let k = f.iter().position(|&x| x == port(&p)).unwrap();
            bytes[k] += p.frame_len() as u64;
            sent += p.frame_len() as u64;
            let (mx, mn) = (*bytes.iter().max().unwrap(), *bytes.iter().min().unwrap());
            assert!(mx - mn <= 2 * MTU_FRAME as u64 + max_frame, "byte fairness within a quantum: {bytes:?}");
        }
        let (mx, mn) = (*bytes.iter().max().unwrap(), *bytes.iter().min().unwrap());
        println!("bytes per flow {bytes:?}: spread {} B over {} rounds", mx - mn, sent / (3 * MTU_FRAME as u64));
        assert!((mx - mn) as f64 / (mx as f64) < 0.01);
    }

    #[test]
    fn overflow_drops_from_the_fattest_queue_and_spares_the_small_one() {
        let cfg = FqCodelConfig { limit_pkts: 100, ..FqCodelConfig::default() };
        let mut q = fq(cfg);
        let f = distinct_flows(&q, 2);
        for _ in 0..99 {
            q.enqueue(Time::ZERO, udp(f[0], 1000));
        }
        assert!(matches!(q.enqueue(Time::ZERO, udp(f[1], 100)), Enqueue::Queued));
        // The 101st packet overflows: half of the fat flow's backlog (capped at 64) goes.
        assert!(matches!(q.enqueue(Time::ZERO, udp(f[1], 100)), Enqueue::Queued));
        assert_eq!(q.stats().overlimit_drops, 50, "{:?}", q.stats());
        assert_eq!(q.queue_len(q.queue_of(&udp(f[0], 1))), 49);
        assert_eq!(q.queue_len(q.queue_of(&udp(f[1], 1))), 2);
        assert_eq!(q.internal_drops(), 50);
        assert_eq!(q.len_pkts(), 51);
        // CoDel's count of the fat queue grew by the drops.
        assert_eq!(q.flows[q.queue_of(&udp(f[0], 1))].vars.count, 50);
    }

    #[test]
    fn the_arriving_packet_is_handed_back_when_its_own_queue_is_emptied() {
        let cfg = FqCodelConfig { limit_pkts: 1, ..FqCodelConfig::default() };
        let mut q = fq(cfg);
        let f = distinct_flows(&q, 2);
        assert!(matches!(q.enqueue(Time::ZERO, udp(f[0], 100)), Enqueue::Queued));
        // f1's one packet is the fattest queue (larger): dropped, handed back.
        match q.enqueue(Time::ZERO, udp(f[1], 1000)) {
            Enqueue::Dropped(p) => assert_eq!(port(&p), f[1]),
            Enqueue::Queued => panic!("over the limit"),
        }
        assert_eq!(q.internal_drops(), 0);
        assert_eq!(q.len_pkts(), 1);
    }

    #[test]
    fn each_queue_runs_its_own_codel() {
        // A standing queue in one flow (dequeued slower than it fills) is dropped by its CoDel;
        // a sparse flow through the same scheduler sees no sojourn time and no drops.
        let mut q = fq(FqCodelConfig::default());
        let f = distinct_flows(&q, 2);
        let mut t = Time::ZERO;
        let mut sparse_out = 0;
        for i in 0..3000u64 {
            t += Dur::from_micros(500);
            q.enqueue(t, udp(f[0], 1400));
            if i % 20 == 0 {
                q.enqueue(t, udp(f[1], 100));
            }
            if i % 2 == 0 {
                while let Some(p) = q.dequeue(t) {
                    if port(&p) == f[1] {
                        sparse_out += 1;
                        assert_eq!(p.payload_len, 100);
                    } else {
                        break;
                    }
                }
            }
        }
        println!("{:?}, sparse packets out {sparse_out}", q.stats());
        assert!(q.stats().codel.drops > 10, "{:?}", q.stats());
        assert_eq!(sparse_out, 150, "every sparse packet got through");
        let s = q.aqm_stats().unwrap();
        assert!(s.packets > 0 && s.max_ns > 5_000_000);
    }

    #[test]
    fn config_is_validated() {
        assert!(FqCodelConfig::default().validate().is_ok());
        assert!(FqCodelConfig { flows: 0, ..Default::default() }.validate().is_err());
        assert!(FqCodelConfig { quantum: 100, ..Default::default() }.validate().is_err());
        let p = CodelParams { interval: Dur::from_millis(1), ..CodelParams::default() };
        assert!(FqCodelConfig { params: p, ..Default::default() }.validate().unwrap_err().contains("interval"));
    }
}
