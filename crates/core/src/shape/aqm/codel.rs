//! CoDel, Controlled Delay (RFC 8289): a FIFO whose head packet is dropped (or, with `ecn`, marked)
//! while the queue's *sojourn time* has stayed above `target` for at least `interval`.
//!
//! The state machine is RFC 8289 §5's pseudocode (`dodequeue`, `dequeue`, `control_law`):
//! - a dequeued packet is *ok to drop* when its sojourn time has been at or above `target` for
//!   `interval` (`first_above_time`), unless at most one MTU is left queued (RFC 8289 §5.3,
//!   `bytes() <= MAXPACKET`; Linux `codel_should_drop` compares the remaining backlog with the
//!   device MTU, here [`MTU_FRAME`](super::MTU_FRAME));
//! - on entering the dropping state it drops that packet and schedules the next drop at
//!   `now + interval / sqrt(count)`; `count` restarts from the number of drops of the last
//!   dropping episode when it ended less than 16 intervals ago and dropped more than one
//!   packet (RFC 8289 §5.5, which gives Linux's rule);
//! - in the dropping state, each time `now` reaches `drop_next` it drops, increments `count`
//!   and moves `drop_next` by `interval / sqrt(count)` from the last scheduled drop — the drop
//!   rate grows with the square root of the drops; it leaves the state at the first packet
//!   below `target`.
//!
//! **ECN** (`ecn = true`): an ECN-capable packet due for a drop is marked CE instead and
//! delivered; a Not-ECT packet is dropped. As Linux `codel_dequeue` does, a mark ends the
//! dequeue (one mark per dequeue, the schedule moves on as for a drop). RFC 8289 leaves ECN to
//! the implementation.
//!
//! The control law uses exact square roots (Linux: a Newton-step approximation of
//! 1/sqrt(count)); the enqueue side is a drop-tail limit of `limit_pkts` (Linux `sch_codel`
//! default 1000).
//!
//! **What it is not.** No `ce_threshold` (L4S-style marking), no byte limit.

use super::{control_law, set_ce, Timed, MTU_FRAME};
use crate::queue::{AqmStats, Enqueue, QueueDisc};
use crate::time::{Dur, Time};
use crate::units::DurV;
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// CoDel's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing queue delay (RFC 8289: 5 ms).
    pub target: Dur,
    /// Sliding-minimum window, on the order of a worst-case RTT (RFC 8289: 100 ms).
    pub interval: Dur,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// Bytes (frames) queued at or below which nothing is dropped (one MTU).
    pub mtu: u32,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams { target: Dur::from_millis(5), interval: Dur::from_millis(100), ecn: false, mtu: MTU_FRAME }
    }
}

/// CoDel's per-queue state (RFC 8289 §5.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CodelVars {
    /// Drops (and marks) in the current dropping episode; drives the drop rate.
    pub count: u32,
    /// `count` when the last episode started.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// When the sojourn time will have been above target for an interval (None: below).
    pub first_above_time: Option<Time>,
    /// When the next drop is due in the dropping state.
    pub drop_next: Time,
}

/// Counters of CoDel's decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Packets dropped at the head by the control law.
    pub drops: u64,
    /// ECN-capable packets marked CE instead.
    pub marks: u64,
}

/// What CoDel's dequeue needs of a queue: take the head packet, and the bytes left queued
/// (after that packet left) for the one-MTU test.
pub(crate) trait CodelQueue {
    fn pop(&mut self) -> Option<Timed>;
    fn backlog(&self) -> u64;
}

impl CodelVars {
    /// RFC 8289 `dodequeue`'s test on a packet just taken from the queue: true when it may be
    /// dropped. Updates `first_above_time`.
    #[inline]
    fn ok_to_drop(&mut self, p: Option<&Timed>, backlog: u64, prm: &CodelParams, now: Time) -> bool {
        let Some(p) = p else {
            self.first_above_time = None;
            return false;
        };
        let sojourn = now.since(p.t);
        if sojourn < prm.target || backlog <= prm.mtu as u64 {
            // Went (or stayed) below target: stay below for at least an interval.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + prm.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// RFC 8289 `dequeue`: the next packet to send, dropping (or marking) at the head as the
    /// control law says. `drop` receives every dropped packet.
    pub(crate) fn dequeue(
        &mut self,
        q: &mut impl CodelQueue,
        prm: &CodelParams,
        stats: &mut CodelStats,
        now: Time,
        mut drop: impl FnMut(Timed),
    ) -> Option<Timed> {
        let mut p = q.pop();
        let Some(_) = p else {
            // An empty queue ends the dropping state (Linux `codel_dequeue`).
            self.dropping = false;
            self.first_above_time = None;
            return None;
        };
        let mut ok = self.ok_to_drop(p.as_ref(), q.backlog(), prm, now);
        if self.dropping {
            if !ok {
                // Sojourn time below target: leave the dropping state.
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                let Some(mut cur) = p.take() else { break };
                self.count = self.count.wrapping_add(1);
                if prm.ecn && set_ce(&mut cur.pkt) {
                    stats.marks += 1;
                    self.drop_next = control_law(self.drop_next, prm.interval, self.count);
                    return Some(cur);
                }
                stats.drops += 1;
                drop(cur);
                p = q.pop();
                if !self.ok_to_drop(p.as_ref(), q.backlog(), prm, now) {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, prm.interval, self.count);
                }
            }
        } else if ok {
            let mut cur = p.take().expect("checked above");
            if prm.ecn && set_ce(&mut cur.pkt) {
                stats.marks += 1;
                p = Some(cur);
            } else {
                stats.drops += 1;
                drop(cur);
                p = q.pop();
                ok = self.ok_to_drop(p.as_ref(), q.backlog(), prm, now);
                let _ = ok;
            }
            self.dropping = true;
            // If the queue went above target soon after the last episode, start from the drop
            // rate that controlled it then (RFC 8289 §5.5; `drop_next` is at most an interval
            // after the last drop, so now − drop_next approximates the time since).
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent = (now.0 as i128 - self.drop_next.0 as i128) < 16 * prm.interval.0 as i128;
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.lastcount = self.count;
            self.drop_next = control_law(now, prm.interval, self.count);
        }
        p
    }
}

/// `{ kind = "codel", target = "5ms", interval = "100ms", limit_pkts = 1000, ecn = false }`
#[derive(Clone, Debug, PartialEq)]
pub struct CodelConfig {
    pub params: CodelParams,
    /// Drop-tail limit, packets.
    pub limit_pkts: usize,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig { params: CodelParams::default(), limit_pkts: 1000 }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CodelV {
    target: Option<DurV>,
    interval: Option<DurV>,
    limit_pkts: Option<usize>,
    ecn: Option<bool>,
}

impl CodelConfig {
    /// From a `qdisc` table without its `kind`.
    pub(crate) fn from_table(t: crate::table::Table) -> Result<CodelConfig, String> {
        let v: CodelV = crate::table::keyed(t)?;
        let d = CodelConfig::default();
        Ok(CodelConfig {
            params: CodelParams {
                target: v.target.map_or(d.params.target, |x| x.0),
                interval: v.interval.map_or(d.params.interval, |x| x.0),
                ecn: v.ecn.unwrap_or(d.params.ecn),
                mtu: MTU_FRAME,
            },
            limit_pkts: v.limit_pkts.unwrap_or(d.limit_pkts),
        })
    }
    pub(crate) fn to_table(&self) -> crate::table::Table {
        let mut t = crate::table::Table::new();
        t.insert("target".into(), crate::table::val(super::dur_str(self.params.target)));
        t.insert("interval".into(), crate::table::val(super::dur_str(self.params.interval)));
        t.insert("limit_pkts".into(), crate::table::val(self.limit_pkts as i64));
        t.insert("ecn".into(), crate::table::val(self.params.ecn));
        t
    }
    pub fn validate(&self) -> Result<(), String> {
        validate_params(&self.params)?;
        if self.limit_pkts == 0 {
            return Err("limit_pkts must be ≥ 1".into());
        }
        Ok(())
    }
}

/// Checks shared by the CoDel-based disciplines.
pub(crate) fn validate_params(p: &CodelParams) -> Result<(), String> {
    if p.target.0 == 0 {
        return Err("target must be > 0".into());
    }
    if p.interval < p.target {
        return Err(format!(
            "interval ({} ms) must be at least target ({} ms)",
            p.interval.as_secs_f64() * 1e3,
            p.target.as_secs_f64() * 1e3
        ));
    }
    Ok(())
}

/// The FIFO CoDel runs on.
#[derive(Debug, Default)]
struct Fifo {
    q: VecDeque<Timed>,
    /// Frame bytes queued.
    bytes: u64,
}

impl CodelQueue for Fifo {
    #[inline]
    fn pop(&mut self) -> Option<Timed> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        Some(p)
    }
    #[inline]
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

/// A CoDel queue (see the module documentation).
#[derive(Debug)]
pub struct Codel {
    cfg: CodelConfig,
    fifo: Fifo,
    vars: CodelVars,
    stats: CodelStats,
    limit_drops: u64,
    sojourn: AqmStats,
}

impl Codel {
    pub fn new(cfg: CodelConfig) -> Codel {
        Codel {
            cfg,
            fifo: Fifo::default(),
            vars: CodelVars::default(),
            stats: CodelStats::default(),
            limit_drops: 0,
            sojourn: AqmStats::default(),
        }
    }
    pub fn stats(&self) -> &CodelStats {
        &self.stats
    }
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl QueueDisc for Codel {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        if self.fifo.q.len() >= self.cfg.limit_pkts {
            self.limit_drops += 1;
            return Enqueue::Dropped(pkt);
        }
        let p = Timed::new(now, pkt);
        self.fifo.bytes += p.len as u64;
        self.fifo.q.push_back(p);
        Enqueue::Queued
    }
    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        let p = self.vars.dequeue(&mut self.fifo, &self.cfg.params, &mut self.stats, now, |_| {})?;
        self.sojourn.add(now.since(p.t));
        Some(p.pkt)
    }
    fn len_pkts(&self) -> usize {
        self.fifo.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.fifo.bytes as usize - 14 * self.fifo.q.len()
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("codel_drops", self.stats.drops),
            ("codel_ecn_marks", self.stats.marks),
            ("codel_limit_drops", self.limit_drops),
        ]
    }
    fn internal_drops(&self) -> u64 {
        self.stats.drops
    }
    fn aqm_stats(&self) -> Option<AqmStats> {
        Some(AqmStats { drops: self.stats.drops + self.limit_drops, marks: self.stats.marks, ..self.sojourn })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testpkt::tcp;
    use super::*;
    use ackshape_wire::Ecn;

    fn ms(x: u64) -> Dur {
        Dur::from_millis(x)
    }

    /// A queue fed `per_ms` packets per ms and drained one packet per `drain_us`, both from
    /// t = 0 for `until`; returns the times of the drops.
    fn run(cfg: CodelConfig, per_ms: u32, drain_us: u64, until: Dur, ecn: Ecn) -> (Codel, Vec<Time>) {
        let mut c = Codel::new(cfg);
        let mut drops = Vec::new();
        let mut next_arr = Time::ZERO;
        let mut next_dep = Time::ZERO;
        let arr_gap = Dur(1_000_000 / per_ms as u64);
        while next_arr.0 < until.0 || next_dep.0 < until.0 {
            if next_arr <= next_dep {
                let _ = c.enqueue(next_arr, tcp(1, 1000, 1, 1446, ecn));
                next_arr += arr_gap;
            } else {
                let before = c.stats().drops;
                let _ = c.dequeue(next_dep);
                for _ in before..c.stats().drops {
                    drops.push(next_dep);
                }
                next_dep += Dur::from_micros(drain_us);
            }
        }
        (c, drops)
    }

    #[test]
    fn below_target_never_drops() {
        // Arrivals slower than departures: the queue never stands.
        let (c, drops) = run(CodelConfig::default(), 1, 900, Dur::from_secs(5), Ecn::NotEct);
        assert!(drops.is_empty(), "{drops:?}");
        assert!(!c.vars().dropping);
    }

    #[test]
    fn first_drop_comes_one_interval_after_the_queue_stands_above_target() {
        // 2 packets per ms in, 1 out: the sojourn time passes 5 ms at about t = 10 ms (the
        // packet dequeued then arrived at 5 ms), so the first drop is due an interval later.
        let (_, drops) = run(CodelConfig::default(), 2, 1000, Dur::from_millis(300), Ecn::NotEct);
        let first = drops[0];
        println!("first drop at {:.3} ms", first.as_secs_f64() * 1e3);
        assert!(first >= Time(ms(110).0) && first <= Time(ms(112).0), "first drop at {first:?}");
    }

    #[test]
    fn drop_schedule_follows_interval_over_sqrt_count() {
        // A queue that stays far above target: the gaps between drops within one episode are
        // interval/sqrt(count) for count = 1, 2, 3, … (to the 1 ms the test's dequeues allow).
        let (_, drops) = run(CodelConfig::default(), 3, 1000, Dur::from_millis(1500), Ecn::NotEct);
        assert!(drops.len() > 8, "{}", drops.len());
        for (k, w) in drops.windows(2).take(8).enumerate() {
            let gap = w[1].since(w[0]).as_secs_f64();
            let want = 0.1 / ((k + 1) as f64).sqrt();
            println!(
                "drop {}→{}: gap {:.2} ms, interval/sqrt({}) = {:.2} ms",
                k + 1,
                k + 2,
                gap * 1e3,
                k + 1,
                want * 1e3
            );
            assert!((gap - want).abs() <= 0.0011, "gap {gap} vs {want}");
        }
    }

    #[test]
    fn ecn_capable_packets_are_marked_on_the_same_schedule() {
        let cfg = CodelConfig { params: CodelParams { ecn: true, ..CodelParams::default() }, ..Default::default() };
        let (c, drops) = run(cfg, 2, 1000, Dur::from_millis(600), Ecn::Ect0);
        assert!(drops.is_empty(), "ECT packets are not dropped: {drops:?}");
        assert!(c.stats().marks >= 3, "{:?}", c.stats());
        // A Not-ECT packet on an ECN queue is still dropped.
        let (c, drops) = run(cfg_ecn(), 2, 1000, Dur::from_millis(600), Ecn::NotEct);
        assert!(!drops.is_empty());
        assert_eq!(c.stats().marks, 0);
    }

    fn cfg_ecn() -> CodelConfig {
        CodelConfig { params: CodelParams { ecn: true, ..CodelParams::default() }, ..Default::default() }
    }

    #[test]
    fn at_most_one_mtu_queued_is_never_dropped() {
        // Two packets: the one left after a dequeue is under one MTU, however long they wait.
        let mut c = Codel::new(CodelConfig::default());
        for i in 0..50u64 {
            let t = Time(ms(200 * i).0);
            let _ = c.enqueue(t, tcp(1, 1, 1, 1446, Ecn::NotEct));
            let _ = c.enqueue(t, tcp(1, 1, 1, 1446, Ecn::NotEct));
            let later = t + ms(150);
            assert!(c.dequeue(later).is_some());
            assert!(c.dequeue(later + ms(1)).is_some());
        }
        assert_eq!(c.stats().drops, 0);
    }

    #[test]
    fn the_limit_drops_at_the_tail() {
        let mut c = Codel::new(CodelConfig { limit_pkts: 3, ..Default::default() });
        let r: Vec<bool> =
            (0..5).map(|_| matches!(c.enqueue(Time::ZERO, tcp(1, 1, 1, 100, Ecn::NotEct)), Enqueue::Queued)).collect();
        assert_eq!(r, [true, true, true, false, false]);
        assert_eq!(c.counters()[2], ("codel_limit_drops", 2));
        assert_eq!(c.internal_drops(), 0);
    }

    /// RFC 8289 §5's pseudocode, transcribed as directly as possible (times in integer ns, the
    /// control law's `interval / sqrt(count)` rounded down to a ns as in the implementation),
    /// as the reference for the property test.
    struct Reference {
        q: VecDeque<(u64, u32)>,
        bytes: u64,
        first_above_time: u64,
        drop_next: u64,
        count: u32,
        lastcount: u32,
        dropping: bool,
        drops: u64,
    }

    impl Reference {
        const TARGET: u64 = 5_000_000;
        const INTERVAL: u64 = 100_000_000;
        const MAXPACKET: u64 = 1514;
        fn new() -> Self {
            Reference {
                q: VecDeque::new(),
                bytes: 0,
                first_above_time: 0,
                drop_next: 0,
                count: 0,
                lastcount: 0,
                dropping: false,
                drops: 0,
            }
        }
        fn control_law(&self, t: u64) -> u64 {
            t + (Self::INTERVAL as f64 / (self.count as f64).sqrt()) as u64
        }
        fn dodequeue(&mut self, now: u64) -> (Option<(u64, u32)>, bool) {
            let Some(p) = self.q.pop_front() else {
                self.first_above_time = 0;
                return (None, false);
            };
            self.bytes -= p.1 as u64;
            let sojourn = now - p.0;
            if sojourn < Self::TARGET || self.bytes <= Self::MAXPACKET {
                self.first_above_time = 0;
                return (Some(p), false);
            }
            if self.first_above_time == 0 {
                self.first_above_time = now + Self::INTERVAL;
                (Some(p), false)
            } else {
                (Some(p), now >= self.first_above_time)
            }
        }
        fn dequeue(&mut self, now: u64) -> Option<(u64, u32)> {
            let (mut p, ok) = self.dodequeue(now);
            if p.is_none() {
                self.dropping = false;
                return None;
            }
            if self.dropping {
                if !ok {
                    self.dropping = false;
                }
                while now >= self.drop_next && self.dropping {
                    self.drops += 1;
                    self.count += 1;
                    let (np, nok) = self.dodequeue(now);
                    p = np;
                    if !nok {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next);
                    }
                }
            } else if ok {
                self.drops += 1;
                let (np, _) = self.dodequeue(now);
                p = np;
                self.dropping = true;
                let delta = self.count.wrapping_sub(self.lastcount);
                self.count = 1;
                if delta > 1 && (now as i128 - self.drop_next as i128) < 16 * Self::INTERVAL as i128 {
                    self.count = delta;
                }
                self.drop_next = self.control_law(now);
                self.lastcount = self.count;
            }
            p
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Any arrival and service pattern (bursts, idle gaps, overload): the implementation
        /// drops exactly the packets RFC 8289's pseudocode drops and hands out the same ones.
        #[test]
        fn matches_the_rfc_pseudocode(
            events in proptest::collection::vec((0u8..5, 1u64..3000, 40u32..1500), 200..3000),
        ) {
            let mut c = Codel::new(CodelConfig { limit_pkts: usize::MAX, ..Default::default() });
            let mut r = Reference::new();
            let mut t = 0u64; // µs
            for (kind, gap, size) in events {
                t += gap;
                let now = Time(t * 1000);
                if kind < 3 {
                    // Arrivals outnumber departures 3:2: queues build, drain and build again.
                    let p = tcp(1, 1, 1, size, Ecn::NotEct);
                    let len = p.frame_len() as u32;
                    let _ = c.enqueue(now, p);
                    r.q.push_back((now.0, len));
                    r.bytes += len as u64;
                } else {
                    let a = c.dequeue(now).map(|p| p.payload_len);
                    let b = r.dequeue(now.0).map(|(_, l)| l - 54);
                    proptest::prop_assert_eq!(a, b, "at {} µs", t);
                    proptest::prop_assert_eq!(c.stats().drops, r.drops, "at {} µs", t);
                }
            }
        }
    }
}
