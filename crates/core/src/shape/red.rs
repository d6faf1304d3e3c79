//! RED (Floyd & Jacobson, "Random Early Detection Gateways for Congestion Avoidance", 1993) with
//! optional ECN marking (RFC 3168) and the "gentle" variant, as a [`QueueDisc`].
//!
//! Per arrival: the average queue `avg` is an EWMA of the instantaneous length with weight
//! `w_q` (decayed over idle periods as if `m` small packets had gone by, m = idle time /
//! `mean_pkt_time`); below `min_th` nothing happens; between `min_th` and `max_th` the packet is
//! marked with p_a = p_b / (1 − count·p_b), p_b = max_p·(avg − min_th)/(max_th − min_th), `count`
//! being the packets since the last mark (uniformly spread marks); above `max_th` every packet is
//! dropped (or, `gentle`, p_b rises linearly from max_p to 1 up to 2·max_th). "Mark" means set CE on
//! an ECN-capable packet when `ecn` is on, otherwise drop. Above `max_th` (non-gentle) and at the
//! physical limit, packets are dropped even if ECN-capable — unless `mark_only`: then RED is a
//! pure marker that never drops for congestion (ECN-capable packets are marked in every region,
//! above max_th too; packets that cannot be marked — SYNs, pure ACKs and retransmissions, which
//! RFC 3168 keeps non-ECT — are admitted unmarked) and only the physical limit drops. Paper 001
//! uses min 10, max 30, w_q 0.02, max_p 0.2; its ECN tables (zero drops with average queues of
//! hundreds to thousands of packets, far above max_th; one-way ns-2 agents without SYNs) imply
//! `mark_only`.
//!
//! **What it is not.** No adaptive RED, no byte mode: lengths are in packets.

use crate::queue::{Enqueue, QueueDisc};
use crate::rng::Rng;
use crate::time::{Dur, Time};
use ackshape_wire::{Ecn, Packet};
use rand::Rng as _;
use std::collections::VecDeque;

/// RED parameters (lengths in packets).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedConfig {
    pub min_th: f64,
    pub max_th: f64,
    pub w_q: f64,
    pub max_p: f64,
    /// Physical queue limit (packets).
    pub limit_pkts: usize,
    /// Mark ECN-capable packets (CE) instead of dropping them.
    pub ecn: bool,
    pub gentle: bool,
    /// With `ecn`: never drop for congestion (see the module documentation). Off by default
    /// (RFC 3168 drops above max_th).
    pub mark_only: bool,
    /// With `mark_only`: while avg ≥ max_th (non-gentle), ECN-capable packets are admitted
    /// without a mark instead of being marked — an ECN router that only turns RED's *early*
    /// drops into marks and, its buffer being unlimited, has no forced-drop region to turn into
    /// anything. Off by default (every region marks). Paper 001 does not describe its ECN;
    /// this is a sensitivity reading for its Tables 8 and 11.
    pub pass_above_max_th: bool,
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            min_th: 10.0,
            max_th: 30.0,
            w_q: 0.02,
            max_p: 0.2,
            limit_pkts: 100,
            ecn: false,
            gentle: false,
            mark_only: false,
            pass_above_max_th: false,
        }
    }
}

impl RedConfig {
    /// Check the parameters; says which is wrong and why.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.min_th >= 0.0 && self.max_th > self.min_th) {
            return Err(format!("needs 0 ≤ min_th < max_th, got min_th {} and max_th {}", self.min_th, self.max_th));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(format!("w_q must be in (0, 1], got {}", self.w_q));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(format!("max_p must be in (0, 1], got {}", self.max_p));
        }
        if self.limit_pkts == 0 || (self.limit_pkts as f64) < self.max_th {
            return Err(format!("limit_pkts must be ≥ max_th ({}), got {}", self.max_th, self.limit_pkts));
        }
        Ok(())
    }
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct RedStats {
    /// Dropped by the random early test (not ECN-capable or ECN off).
    pub early_drops: u64,
    /// Dropped because avg ≥ max_th (non-gentle) or at the physical limit.
    pub forced_drops: u64,
    /// ECN-capable packets marked CE instead of dropped.
    pub ecn_marks: u64,
}

/// A RED queue.
pub struct Red {
    cfg: RedConfig,
    q: VecDeque<Packet>,
    bytes: usize,
    avg: f64,
    count: i64,
    idle_since: Option<Time>,
    mean_pkt_time: Dur,
    rng: Rng,
    stats: RedStats,
}

impl Red {
    /// `mean_pkt_time`: transmission time of a typical packet on the link (idle decay).
    pub fn new(cfg: RedConfig, mean_pkt_time: Dur, rng: Rng) -> Red {
        Red {
            cfg,
            q: VecDeque::new(),
            bytes: 0,
            avg: 0.0,
            count: -1,
            idle_since: Some(Time::ZERO),
            mean_pkt_time,
            rng,
            stats: RedStats::default(),
        }
    }
    pub fn stats(&self) -> &RedStats {
        &self.stats
    }
    /// Current average queue length (packets).
    pub fn avg(&self) -> f64 {
        self.avg
    }

    fn update_avg(&mut self, now: Time) {
        let w = self.cfg.w_q;
        match self.idle_since {
            Some(t0) if self.q.is_empty() => {
                let m =
                    if self.mean_pkt_time.0 > 0 { now.since(t0).0 as f64 / self.mean_pkt_time.0 as f64 } else { 0.0 };
                self.avg *= (1.0 - w).powf(m);
            }
            _ => self.avg = (1.0 - w) * self.avg + w * self.q.len() as f64,
        }
    }

    /// Decide for an arrival: None = accept, Some(true) = mark/drop early, Some(false) = forced drop.
    fn decide(&mut self) -> Option<bool> {
        let c = &self.cfg;
        let pb = if self.avg < c.min_th {
            self.count = -1;
            return None;
        } else if self.avg < c.max_th {
            c.max_p * (self.avg - c.min_th) / (c.max_th - c.min_th)
        } else if c.gentle && self.avg < 2.0 * c.max_th {
            c.max_p + (1.0 - c.max_p) * (self.avg - c.max_th) / c.max_th
        } else {
            self.count = 0;
            return Some(false);
        };
        self.count += 1;
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
        if self.rng.gen::<f64>() < pa {
            self.count = 0;
            Some(true)
        } else {
            None
        }
    }
}

impl QueueDisc for Red {
    fn enqueue(&mut self, now: Time, mut pkt: Packet) -> Enqueue {
        self.update_avg(now);
        if self.q.len() >= self.cfg.limit_pkts {
            self.stats.forced_drops += 1;
            return Enqueue::Dropped(pkt);
        }
        let ect = self.cfg.ecn && matches!(pkt.ip.ecn, Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce);
        let mark_only = self.cfg.ecn && self.cfg.mark_only;
        match self.decide() {
            None => {}
            Some(true) if ect => {
                pkt.ip.ecn = Ecn::Ce;
                self.stats.ecn_marks += 1;
            }
            Some(false) if mark_only && ect && self.cfg.pass_above_max_th => {}
            Some(false) if mark_only && ect => {
                pkt.ip.ecn = Ecn::Ce;
                self.stats.ecn_marks += 1;
            }
            Some(_) if mark_only => {}
            Some(true) => {
                self.stats.early_drops += 1;
                return Enqueue::Dropped(pkt);
            }
            Some(false) => {
                self.stats.forced_drops += 1;
                return Enqueue::Dropped(pkt);
            }
        }
        self.idle_since = None;
        self.bytes += pkt.ip_len();
        self.q.push_back(pkt);
        Enqueue::Queued
    }
    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.ip_len();
        if self.q.is_empty() {
            self.idle_since = Some(now);
        }
        Some(p)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("red_early_drops", self.stats.early_drops),
            ("red_forced_drops", self.stats.forced_drops),
            ("red_ecn_marks", self.stats.ecn_marks),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use ackshape_wire::{IpHdr, TcpHdr, L4};
    use std::net::{IpAddr, Ipv4Addr};

    fn pkt(ecn: Ecn) -> Packet {
        Packet {
            ip: IpHdr {
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
                ttl: 64,
                dscp: 0,
                ecn,
                id: 0,
            },
            l4: L4::Tcp(TcpHdr::default()),
            payload_len: 1448,
            payload: None,
        }
    }

    /// Hold the queue at `n` packets for `steps` arrivals (one departure per arrival) and return
    /// (early drops + marks, forced drops).
    /// 400 arrivals 1 µs apart without departures, from `t`: the average climbs past max_th
    /// (asserted). Returns the time reached and how many arrivals were queued.
    fn fill_past_max_th(red: &mut Red, mut t: Time, ecn: Ecn) -> (Time, usize) {
        let mut queued = 0;
        for _ in 0..400 {
            t += Dur::from_micros(1);
            queued += matches!(red.enqueue(t, pkt(ecn)), Enqueue::Queued) as usize;
        }
        assert!(red.avg() >= 30.0, "avg {}", red.avg());
        (t, queued)
    }

    fn hold(red: &mut Red, n: usize, steps: usize, ecn: Ecn) -> (u64, u64) {
        let mut t = Time::ZERO;
        while red.len_pkts() < n {
            t += Dur::from_micros(1);
            let _ = red.enqueue(t, pkt(ecn));
        }
        let s0 = *red.stats();
        for _ in 0..steps {
            t += Dur::from_micros(1);
            if let Enqueue::Queued = red.enqueue(t, pkt(ecn)) {
                red.dequeue(t);
            }
        }
        let s = *red.stats();
        (s.early_drops - s0.early_drops + s.ecn_marks - s0.ecn_marks, s.forced_drops - s0.forced_drops)
    }

    #[test]
    fn below_min_th_never_marks() {
        let mut r = Red::new(RedConfig::default(), Dur::from_micros(1), stream(1, "red", 0));
        assert_eq!(hold(&mut r, 8, 10_000, Ecn::NotEct), (0, 0));
        assert!(r.avg() < 10.0);
    }

    #[test]
    fn above_max_th_drops_everything() {
        let cfg = RedConfig { limit_pkts: 1000, ..RedConfig::default() };
        let mut r = Red::new(cfg, Dur::from_micros(1), stream(1, "red", 0));
        // Fill without departures: avg climbs past max_th.
        let (mut t, _) = fill_past_max_th(&mut r, Time::ZERO, Ecn::NotEct);
        let before = r.stats().forced_drops;
        for _ in 0..100 {
            t += Dur::from_micros(1);
            assert!(matches!(r.enqueue(t, pkt(Ecn::Ect0)), Enqueue::Dropped(_)), "forced drop even if ECT");
        }
        assert_eq!(r.stats().forced_drops - before, 100);
    }

    #[test]
    fn mark_only_marks_above_max_th_and_never_drops_below_the_limit() {
        let cfg = RedConfig { limit_pkts: 600, ecn: true, mark_only: true, ..RedConfig::default() };
        let mut r = Red::new(cfg, Dur::from_micros(1), stream(1, "red", 0));
        let (mut t, queued) = fill_past_max_th(&mut r, Time::ZERO, Ecn::Ect0);
        assert_eq!(queued, 400, "nothing dropped on the way up");
        let marks = r.stats().ecn_marks;
        for _ in 0..100 {
            t += Dur::from_micros(1);
            assert!(matches!(r.enqueue(t, pkt(Ecn::Ect0)), Enqueue::Queued), "marked, not dropped");
        }
        assert_eq!(r.stats().ecn_marks - marks, 100, "every packet above max_th is marked");
        assert_eq!(r.stats().forced_drops, 0);
        // A packet that cannot be marked (SYN, retransmission) is admitted unmarked; the physical
        // limit still drops.
        let syn = Packet { payload_len: 0, ..pkt(Ecn::NotEct) };
        assert!(matches!(r.enqueue(t, syn), Enqueue::Queued));
        assert!(matches!(r.enqueue(t, pkt(Ecn::NotEct)), Enqueue::Queued));
        while r.len_pkts() < 600 {
            let _ = r.enqueue(t, pkt(Ecn::Ect0));
        }
        assert!(matches!(r.enqueue(t, pkt(Ecn::Ect0)), Enqueue::Dropped(_)));
        assert_eq!(r.stats().forced_drops, 1);
        assert_eq!(r.stats().early_drops, 0);
    }

    #[test]
    fn pass_above_max_th_admits_unmarked_but_still_marks_early() {
        let cfg =
            RedConfig { limit_pkts: 600, ecn: true, mark_only: true, pass_above_max_th: true, ..RedConfig::default() };
        let mut r = Red::new(cfg, Dur::from_micros(1), stream(3, "red", 0));
        // Between the thresholds it marks like mark_only.
        let (early, forced) = hold(&mut r, 20, 20_000, Ecn::Ect0);
        assert!(early > 1000, "{early}");
        assert_eq!(forced, 0);
        // Above max_th: admitted, neither marked nor dropped.
        let (mut t, _) = fill_past_max_th(&mut r, Time(1 << 30), Ecn::Ect0);
        let marks = r.stats().ecn_marks;
        for _ in 0..100 {
            t += Dur::from_micros(1);
            assert!(matches!(r.enqueue(t, pkt(Ecn::Ect0)), Enqueue::Queued));
        }
        assert_eq!(r.stats().ecn_marks, marks, "no marks above max_th");
        assert_eq!(r.stats().forced_drops + r.stats().early_drops, 0);
    }

    #[test]
    fn between_thresholds_marks_at_about_the_red_rate() {
        // avg ≈ 20 → p_b = 0.1; with uniform spacing the mark rate is ≈ 2·p_b/(1+p_b) ≈ 0.18.
        let mut r =
            Red::new(RedConfig { limit_pkts: 100, ..RedConfig::default() }, Dur::from_micros(1), stream(5, "red", 0));
        let (marks, forced) = hold(&mut r, 20, 50_000, Ecn::NotEct);
        let rate = marks as f64 / 50_000.0;
        println!("avg {:.2}, mark rate {rate:.4}, forced {forced}", r.avg());
        assert_eq!(forced, 0);
        assert!((0.12..0.22).contains(&rate), "rate {rate}");
    }

    #[test]
    fn ecn_capable_packets_are_marked_not_dropped() {
        let cfg = RedConfig { ecn: true, ..RedConfig::default() };
        let mut r = Red::new(cfg, Dur::from_micros(1), stream(2, "red", 0));
        let (marks, _) = hold(&mut r, 20, 20_000, Ecn::Ect0);
        assert!(marks > 1000);
        assert_eq!(r.stats().early_drops, 0);
        assert_eq!(r.stats().ecn_marks, marks);
        let mut ce = 0;
        while let Some(p) = r.dequeue(Time(1 << 40)) {
            ce += (p.ip.ecn == Ecn::Ce) as u32;
        }
        assert!(ce > 0, "marked packets stay queued with CE set");
        // Non-ECT traffic on the same queue is dropped early instead.
        let drops_before = r.stats().early_drops;
        let marks_before = r.stats().ecn_marks;
        let (m2, _) = hold(&mut r, 20, 20_000, Ecn::NotEct);
        assert!(m2 > 1000, "{m2}");
        assert_eq!(r.stats().ecn_marks, marks_before, "no CE marks on non-ECT packets");
        assert!(r.stats().early_drops - drops_before >= m2);
    }

    #[test]
    fn idle_time_decays_the_average() {
        let mut r =
            Red::new(RedConfig { limit_pkts: 1000, ..RedConfig::default() }, Dur::from_micros(10), stream(1, "red", 0));
        let _ = hold(&mut r, 25, 2_000, Ecn::NotEct);
        let high = r.avg();
        while r.dequeue(Time(10_000_000)).is_some() {}
        // 10 ms idle = 1000 packet times: (0.98)^1000 ≈ 2e-9.
        let _ = r.enqueue(Time(20_000_000), pkt(Ecn::NotEct));
        assert!(high > 15.0 && r.avg() < 0.01, "high {high}, after idle {}", r.avg());
    }

    #[test]
    fn config_is_validated() {
        assert!(RedConfig::default().validate().is_ok());
        assert!(RedConfig { min_th: 30.0, max_th: 10.0, ..Default::default() }.validate().is_err());
        assert!(RedConfig { max_p: 0.0, ..Default::default() }.validate().is_err());
        assert!(RedConfig { limit_pkts: 20, ..Default::default() }.validate().is_err());
    }
}
