//! PIE, Proportional Integral controller Enhanced (RFC 8033): a FIFO that drops (or marks)
//! arriving packets at random with a probability that a PI controller on the queueing delay
//! updates every `t_update`.
//!
//! From RFC 8033:
//! - **Drop probability update** (§4.2), every `t_update`:
//!   `p = alpha·(qdelay − target) + beta·(qdelay − qdelay_old)` (delays in seconds, alpha and
//!   beta in Hz), *auto-tuned* by the current probability: p is divided by 2048, 512, 128, 32,
//!   8 or 2 while the probability is below 10⁻⁶, 10⁻⁵, 10⁻⁴, 10⁻³, 10⁻² or 10⁻¹, so the
//!   controller is gentle when little dropping controls the queue; above 10% a step is capped
//!   at 2% (§5.5, *cap drop adjustment*). The probability decays by 2% per update while
//!   `qdelay` and `qdelay_old` are both 0 (§4.2), and stays in [0, 1].
//! - **Random drop on arrival** (§4.1): not while burst allowance is left; not while
//!   `qdelay_old < target/2` and the probability is below 20%, nor with at most two mean-size
//!   packets queued (work conservation). *Derandomisation* (§5.4, on by default as in Linux):
//!   the probabilities of successive arrivals accumulate; no drop below 0.85, a certain drop
//!   at 8.5, a random one between.
//! - **Burst tolerance** (§4.4): `max_burst` of allowance, decreased by `t_update` at each
//!   update, restored when the probability is 0 and the current and previous delays are both
//!   below `target/2`.
//! - **Queueing delay** (§4.3, §5.2), `estimator`: `"timestamp"` (default, as in Linux and
//!   ns-3): the sojourn time of the last dequeued packet (0 once the queue is empty, as Linux
//!   `pie_process_dequeue` has it); `"departure-rate"`: RFC 8033 §5.2's estimate, backlog ×
//!   the average time to send `dq_threshold` bytes (measured while at least that many are
//!   queued, averaged with weight dq_threshold/2¹⁶) / `dq_threshold`.
//! - **ECN** (§5.1): with `ecn = true`, an ECN-capable packet chosen for a drop is marked
//!   instead while the probability is at most `mark_ecn_th` (10%).
//!
//! The update timer runs on a grid of `t_update` from t = 0 (see the module above for how it
//! is run lazily). The enqueue side drops at `limit_pkts` (Linux default 1000). Not
//! implemented: §5.3's active/inactive switch (Linux does not have it either), byte mode,
//! and Linux's extra 2% step for delays above 250 ms, which RFC 8033 does not have.

use super::{set_ce, Timed, MTU_FRAME};
use crate::queue::{AqmStats, Enqueue, QueueDisc};
use crate::rng::Rng;
use crate::time::{Dur, Time};
use crate::units::{DurV, SizeV};
use ackshape_wire::Packet;
use rand::Rng as _;
use std::collections::VecDeque;

/// How PIE estimates the queueing delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PieEstimator {
    /// Sojourn time of the last dequeued packet.
    #[default]
    Timestamp,
    /// Backlog over the measured departure rate (RFC 8033 §5.2).
    DepartureRate,
}

impl PieEstimator {
    fn name(self) -> &'static str {
        match self {
            PieEstimator::Timestamp => "timestamp",
            PieEstimator::DepartureRate => "departure-rate",
        }
    }
}

/// `{ kind = "pie", target = "15ms", t_update = "15ms", alpha = 0.125, beta = 1.25,
/// max_burst = "150ms", limit_pkts = 1000, ecn = false, mark_ecn_th = 0.1,
/// estimator = "timestamp", dq_threshold = "16KiB", derandomize = true, cap_drop = true }`
#[derive(Clone, Debug, PartialEq)]
pub struct PieConfig {
    /// QDELAY_REF (RFC 8033: 15 ms).
    pub target: Dur,
    /// T_UPDATE (RFC 8033: 15 ms).
    pub t_update: Dur,
    /// Hz (RFC 8033: 0.125).
    pub alpha: f64,
    /// Hz (RFC 8033: 1.25).
    pub beta: f64,
    /// MAX_BURST (RFC 8033: 150 ms).
    pub max_burst: Dur,
    pub limit_pkts: usize,
    pub ecn: bool,
    /// Highest drop probability at which ECN-capable packets are marked instead (RFC 8033: 0.1).
    pub mark_ecn_th: f64,
    pub estimator: PieEstimator,
    /// DQ_THRESHOLD, bytes (RFC 8033: 2¹⁴).
    pub dq_threshold: u64,
    /// §5.4 derandomisation.
    pub derandomize: bool,
    /// §5.5 cap drop adjustment.
    pub cap_drop: bool,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            target: Dur::from_millis(15),
            t_update: Dur::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Dur::from_millis(150),
            limit_pkts: 1000,
            ecn: false,
            mark_ecn_th: 0.1,
            estimator: PieEstimator::Timestamp,
            dq_threshold: 1 << 14,
            derandomize: true,
            cap_drop: true,
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PieV {
    target: Option<DurV>,
    t_update: Option<DurV>,
    alpha: Option<f64>,
    beta: Option<f64>,
    max_burst: Option<DurV>,
    limit_pkts: Option<usize>,
    ecn: Option<bool>,
    mark_ecn_th: Option<f64>,
    estimator: Option<PieEstimator>,
    dq_threshold: Option<SizeV>,
    derandomize: Option<bool>,
    cap_drop: Option<bool>,
}

impl PieConfig {
    pub(crate) fn from_table(t: crate::table::Table) -> Result<PieConfig, String> {
        let v: PieV = crate::table::keyed(t)?;
        let d = PieConfig::default();
        Ok(PieConfig {
            target: v.target.map_or(d.target, |x| x.0),
            t_update: v.t_update.map_or(d.t_update, |x| x.0),
            alpha: v.alpha.unwrap_or(d.alpha),
            beta: v.beta.unwrap_or(d.beta),
            max_burst: v.max_burst.map_or(d.max_burst, |x| x.0),
            limit_pkts: v.limit_pkts.unwrap_or(d.limit_pkts),
            ecn: v.ecn.unwrap_or(d.ecn),
            mark_ecn_th: v.mark_ecn_th.unwrap_or(d.mark_ecn_th),
            estimator: v.estimator.unwrap_or(d.estimator),
            dq_threshold: match v.dq_threshold {
                None => d.dq_threshold,
                Some(s) => crate::units::bytes_of("dq_threshold", s.0)?,
            },
            derandomize: v.derandomize.unwrap_or(d.derandomize),
            cap_drop: v.cap_drop.unwrap_or(d.cap_drop),
        })
    }
    pub(crate) fn to_table(&self) -> crate::table::Table {
        let mut t = crate::table::Table::new();
        t.insert("target".into(), crate::table::val(super::dur_str(self.target)));
        t.insert("t_update".into(), crate::table::val(super::dur_str(self.t_update)));
        t.insert("alpha".into(), crate::table::val(self.alpha));
        t.insert("beta".into(), crate::table::val(self.beta));
        t.insert("max_burst".into(), crate::table::val(super::dur_str(self.max_burst)));
        t.insert("limit_pkts".into(), crate::table::val(self.limit_pkts as i64));
        t.insert("ecn".into(), crate::table::val(self.ecn));
        t.insert("mark_ecn_th".into(), crate::table::val(self.mark_ecn_th));
        t.insert("estimator".into(), crate::table::val(self.estimator.name()));
        t.insert("dq_threshold".into(), crate::table::val(format!("{}B", self.dq_threshold)));
        t.insert("derandomize".into(), crate::table::val(self.derandomize));
        t.insert("cap_drop".into(), crate::table::val(self.cap_drop));
        t
    }
    pub fn validate(&self) -> Result<(), String> {
        if self.target.0 == 0 || self.t_update.0 == 0 {
            return Err("target and t_update must be > 0".into());
        }
        for (k, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{k} must be a non-negative number (Hz), got {v}"));
            }
        }
        if !(0.0..=1.0).contains(&self.mark_ecn_th) {
            return Err(format!("mark_ecn_th must be in [0, 1], got {}", self.mark_ecn_th));
        }
        if self.limit_pkts == 0 {
            return Err("limit_pkts must be ≥ 1".into());
        }
        if self.dq_threshold < MTU_FRAME as u64 {
            return Err(format!("dq_threshold must be at least one frame ({MTU_FRAME} B), got {}", self.dq_threshold));
        }
        Ok(())
    }
}

/// PIE's controller state (RFC 8033 §4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieVars {
    pub drop_prob: f64,
    /// The latest delay estimate (timestamp estimator: set at each dequeue).
    pub qdelay: Dur,
    /// The estimate at the last update.
    pub qdelay_old: Dur,
    pub burst_allowance: Dur,
    pub accu_prob: f64,
    // Departure-rate estimator (RFC 8033 §5.2).
    in_measurement: bool,
    dq_count: u64,
    measurement_start: Time,
    /// Average time to dequeue `dq_threshold` bytes, ns (0: none yet).
    avg_dq_time: f64,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PieStats {
    /// Arrivals dropped at random.
    pub early_drops: u64,
    /// ECN-capable arrivals marked instead.
    pub ecn_marks: u64,
    /// Arrivals dropped at `limit_pkts`.
    pub limit_drops: u64,
    /// Probability updates run.
    pub updates: u64,
}

/// A PIE queue (see the module documentation).
pub struct Pie {
    cfg: PieConfig,
    q: VecDeque<Timed>,
    /// Frame bytes queued.
    bytes: u64,
    vars: PieVars,
    next_update: Time,
    rng: Rng,
    stats: PieStats,
    sojourn: AqmStats,
}

impl Pie {
    pub fn new(cfg: PieConfig, rng: Rng) -> Pie {
        Pie {
            vars: PieVars {
                drop_prob: 0.0,
                qdelay: Dur::ZERO,
                qdelay_old: Dur::ZERO,
                burst_allowance: cfg.max_burst,
                accu_prob: 0.0,
                in_measurement: false,
                dq_count: 0,
                measurement_start: Time::ZERO,
                avg_dq_time: 0.0,
            },
            next_update: Time::ZERO + cfg.t_update,
            cfg,
            q: VecDeque::new(),
            bytes: 0,
            rng,
            stats: PieStats::default(),
            sojourn: AqmStats::default(),
        }
    }
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }
    pub fn stats(&self) -> &PieStats {
        &self.stats
    }

    /// The current delay estimate (§4.3 / §5.2).
    fn current_qdelay(&self) -> Dur {
        match self.cfg.estimator {
            PieEstimator::Timestamp => self.vars.qdelay,
            PieEstimator::DepartureRate => {
                Dur((self.bytes as f64 * self.vars.avg_dq_time / self.cfg.dq_threshold as f64) as u64)
            }
        }
    }

    /// One run of RFC 8033 §4.2's `calculate_drop_prob` with §4.4's burst allowance and §5.5's
    /// cap.
    fn update(&mut self) {
        self.stats.updates += 1;
        let c = &self.cfg;
        let qd = self.current_qdelay();
        let v = &mut self.vars;
        let s = |d: Dur| d.as_secs_f64();
        let mut p = c.alpha * (s(qd) - s(c.target)) + c.beta * (s(qd) - s(v.qdelay_old));
        // Auto-tuning: smaller steps at lower drop probabilities.
        let scale = if v.drop_prob < 1e-6 {
            2048.0
        } else if v.drop_prob < 1e-5 {
            512.0
        } else if v.drop_prob < 1e-4 {
            128.0
        } else if v.drop_prob < 1e-3 {
            32.0
        } else if v.drop_prob < 1e-2 {
            8.0
        } else if v.drop_prob < 1e-1 {
            2.0
        } else {
            1.0
        };
        p /= scale;
        if c.cap_drop && v.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        v.drop_prob += p;
        if qd.0 == 0 && v.qdelay_old.0 == 0 {
            v.drop_prob *= 0.98;
        }
        v.drop_prob = v.drop_prob.clamp(0.0, 1.0);
        v.burst_allowance = Dur(v.burst_allowance.0.saturating_sub(c.t_update.0));
        let half = Dur(c.target.0 / 2);
        if v.drop_prob == 0.0 && qd < half && v.qdelay_old < half {
            v.burst_allowance = c.max_burst;
        }
        v.qdelay_old = qd;
        if c.estimator == PieEstimator::DepartureRate {
            v.qdelay = qd;
        }
    }

    /// Run the updates due by `now`. Nothing an update reads changes between events, so once
    /// an update leaves the state as it was, the remaining due ones would too.
    fn catch_up(&mut self, now: Time) {
        while now >= self.next_update {
            let before = self.vars;
            self.update();
            self.next_update += self.cfg.t_update;
            if self.vars == before && now >= self.next_update {
                let k = now.since(self.next_update).0 / self.cfg.t_update.0 + 1;
                self.next_update += Dur(k * self.cfg.t_update.0);
            }
        }
    }

    /// §4.1 and §5.4: should this arrival be dropped (or marked)?
    fn drop_early(&mut self) -> bool {
        let v = &mut self.vars;
        if v.burst_allowance.0 > 0 {
            return false;
        }
        if (v.qdelay_old.0 < self.cfg.target.0 / 2 && v.drop_prob < 0.2) || self.bytes <= 2 * MTU_FRAME as u64 {
            return false;
        }
        if self.cfg.derandomize {
            if v.drop_prob == 0.0 {
                v.accu_prob = 0.0;
            }
            v.accu_prob += v.drop_prob;
            if v.accu_prob < 0.85 {
                return false;
            }
            if v.accu_prob >= 8.5 {
                return true;
            }
        }
        if self.rng.gen::<f64>() < v.drop_prob {
            v.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// §5.2: the departure-rate measurement, after a packet of `len` bytes left.
    fn measure_departure(&mut self, now: Time, len: u64) {
        let th = self.cfg.dq_threshold;
        let v = &mut self.vars;
        if v.in_measurement {
            v.dq_count += len;
            if v.dq_count >= th {
                let dq_int = now.since(v.measurement_start).0 as f64;
                if v.avg_dq_time == 0.0 {
                    v.avg_dq_time = dq_int;
                } else {
                    let w = th as f64 / 65536.0;
                    v.avg_dq_time = dq_int * w + v.avg_dq_time * (1.0 - w);
                }
                v.in_measurement = false;
            }
        }
        if self.bytes >= th && !v.in_measurement {
            v.in_measurement = true;
            v.measurement_start = now;
            v.dq_count = 0;
        }
    }
}

impl QueueDisc for Pie {
    fn enqueue(&mut self, now: Time, mut pkt: Packet) -> Enqueue {
        self.catch_up(now);
        if self.q.len() >= self.cfg.limit_pkts {
            self.stats.limit_drops += 1;
            self.vars.accu_prob = 0.0;
            return Enqueue::Dropped(pkt);
        }
        if self.drop_early() {
            if self.cfg.ecn && self.vars.drop_prob <= self.cfg.mark_ecn_th && set_ce(&mut pkt) {
                self.stats.ecn_marks += 1;
            } else {
                self.stats.early_drops += 1;
                self.vars.accu_prob = 0.0;
                return Enqueue::Dropped(pkt);
            }
        }
        let p = Timed::new(now, pkt);
        self.bytes += p.len as u64;
        self.q.push_back(p);
        Enqueue::Queued
    }

    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        self.catch_up(now);
        let p = self.q.pop_front()?;
        self.bytes -= p.len as u64;
        let sojourn = now.since(p.t);
        match self.cfg.estimator {
            PieEstimator::Timestamp => self.vars.qdelay = if self.q.is_empty() { Dur::ZERO } else { sojourn },
            PieEstimator::DepartureRate => self.measure_departure(now, p.len as u64),
        }
        self.sojourn.add(sojourn);
        Some(p.pkt)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes as usize - 14 * self.q.len()
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("pie_early_drops", self.stats.early_drops),
            ("pie_ecn_marks", self.stats.ecn_marks),
            ("pie_limit_drops", self.stats.limit_drops),
        ]
    }
    fn aqm_stats(&self) -> Option<AqmStats> {
        Some(AqmStats {
            drops: self.stats.early_drops + self.stats.limit_drops,
            marks: self.stats.ecn_marks,
            ..self.sojourn
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testpkt::tcp;
    use super::*;
    use crate::rng::stream;
    use ackshape_wire::Ecn;

    fn pie(cfg: PieConfig) -> Pie {
        Pie::new(cfg, stream(3, "pie-test", 0))
    }

    /// Set the controller's state directly and run one update with a delay estimate of `qd`.
    fn step(prob: f64, qd_ms: f64, old_ms: f64) -> f64 {
        let mut p = pie(PieConfig::default());
        p.vars.drop_prob = prob;
        p.vars.qdelay = Dur::from_secs_f64(qd_ms / 1e3);
        p.vars.qdelay_old = Dur::from_secs_f64(old_ms / 1e3);
        p.bytes = 100_000; // a queue, so the estimate is not 0 for "no backlog"
        p.update();
        p.vars.drop_prob
    }

    #[test]
    fn update_is_the_pi_law_scaled_by_the_probability_band() {
        // qdelay 25 ms, old 20 ms: alpha·(0.025 − 0.015) + beta·(0.005) = 0.0075.
        let raw = 0.125 * 0.010 + 1.25 * 0.005;
        for (prob, scale) in
            [(0.0, 2048.0), (5e-6, 512.0), (5e-5, 128.0), (5e-4, 32.0), (5e-3, 8.0), (0.05, 2.0), (0.5, 1.0)]
        {
            let got = step(prob, 25.0, 20.0) - prob;
            let want = raw / scale;
            println!("p = {prob:e}: step {got:.3e}, expected {want:.3e} (÷{scale})");
            assert!((got - want).abs() < 1e-12, "p = {prob}: {got} vs {want}");
        }
    }

    #[test]
    fn steps_above_ten_percent_are_capped_at_two_percent() {
        // A 200 ms delay jump would add 0.25 at once.
        let got = step(0.3, 215.0, 15.0) - 0.3;
        assert!((got - 0.02).abs() < 1e-12, "{got}");
        // Below 10% the cap does not apply (only the ÷2 scaling).
        let got = step(0.05, 215.0, 15.0) - 0.05;
        assert!(got > 0.1, "{got}");
    }

    #[test]
    fn probability_falls_when_delay_is_below_target_and_decays_at_zero_delay() {
        assert!(step(0.1, 5.0, 5.0) < 0.1);
        // Zero delay twice: −alpha·target, then ×0.98.
        let want = (0.1 - 0.125 * 0.015 / 1.0) * 0.98;
        assert!((step(0.1, 0.0, 0.0) - want).abs() < 1e-12);
        assert_eq!(step(0.0, 0.0, 0.0), 0.0, "bounded below by 0");
        assert_eq!(step(1.0, 500.0, 100.0), 1.0, "bounded above by 1");
    }

    #[test]
    fn burst_allowance_is_used_up_and_restored() {
        let mut p = pie(PieConfig::default());
        assert_eq!(p.vars.burst_allowance, Dur::from_millis(150));
        // A standing queue: the allowance shrinks by t_update per update (the first update, at
        // 15 ms, still sees no delay and restores it); no drop meanwhile.
        let mut t = Time::ZERO;
        for _ in 0..30 {
            p.enqueue(t, tcp(1, 1, 1, 1446, Ecn::NotEct));
        }
        let mut drops_during_burst = 0;
        for _ in 0..10 {
            t += Dur::from_millis(15);
            let _ = p.dequeue(t);
            drops_during_burst += !matches!(p.enqueue(t, tcp(1, 1, 1, 1446, Ecn::NotEct)), Enqueue::Queued) as u32;
        }
        assert_eq!(drops_during_burst, 0);
        assert!(p.vars.burst_allowance <= Dur::from_millis(15), "{:?}", p.vars.burst_allowance);
        t += Dur::from_millis(30);
        p.catch_up(t);
        assert_eq!(p.vars.burst_allowance, Dur::ZERO);
        assert!(p.vars.drop_prob > 0.0);
        // Empty the queue and wait: the probability decays to 0 and the allowance comes back.
        while p.dequeue(t).is_some() {}
        t += Dur::from_secs(30);
        p.catch_up(t);
        assert_eq!(p.vars.drop_prob, 0.0);
        assert_eq!(p.vars.burst_allowance, Dur::from_millis(150));
    }

    /// A queue fed at `load` × its service rate for `secs`; returns (drop rate, mean sojourn).
    fn overload(cfg: PieConfig, load: f64, secs: u64, ecn: Ecn) -> (Pie, f64, f64) {
        let mut p = pie(cfg);
        let service = Dur::from_micros(1200); // 10 Mbit/s for 1500-byte packets
        let arrive = Dur::from_secs_f64(service.as_secs_f64() / load);
        let (mut ta, mut td) = (Time::ZERO, Time::ZERO);
        let end = Time(Dur::from_secs(secs).0);
        let (mut offered, mut dropped) = (0u64, 0u64);
        while ta < end {
            if ta <= td {
                offered += 1;
                dropped += !matches!(p.enqueue(ta, tcp(1, 1, 1, 1446, ecn)), Enqueue::Queued) as u64;
                ta += arrive;
            } else {
                let _ = p.dequeue(td);
                td += service;
            }
        }
        let s = p.aqm_stats().unwrap();
        let avg = s.total_ns as f64 / s.packets.max(1) as f64 / 1e6;
        (p, dropped as f64 / offered as f64, avg)
    }

    #[test]
    fn an_unresponsive_overload_is_held_near_target_by_dropping_the_excess() {
        // 20% more than the link takes: PIE must drop about 1/6 of the arrivals and keep the
        // delay near 15 ms instead of filling the 1000-packet buffer (1.2 s).
        let (p, rate, avg_ms) = overload(PieConfig::default(), 1.2, 60, Ecn::NotEct);
        println!("drop rate {rate:.3}, mean sojourn {avg_ms:.1} ms, p {:.3}", p.vars.drop_prob);
        assert!((0.13..0.2).contains(&rate), "{rate}");
        assert!(avg_ms < 60.0, "{avg_ms}");
        assert_eq!(p.stats().limit_drops, 0);
    }

    #[test]
    fn the_departure_rate_estimator_sees_the_same_delay() {
        let cfg = PieConfig { estimator: PieEstimator::DepartureRate, ..PieConfig::default() };
        let (p, rate, avg_ms) = overload(cfg, 1.2, 60, Ecn::NotEct);
        println!(
            "departure-rate: drop rate {rate:.3}, mean sojourn {avg_ms:.1} ms, avg_dq_time {:.0} ns",
            p.vars.avg_dq_time
        );
        // 16384 bytes at 10 Mbit/s (1500-byte packets every 1.2 ms) take ≈ 13.1 ms.
        assert!((p.vars.avg_dq_time / 1e6 - 13.1).abs() < 1.5, "{}", p.vars.avg_dq_time);
        assert!((0.13..0.2).contains(&rate), "{rate}");
        assert!(avg_ms < 60.0, "{avg_ms}");
    }

    /// A queue with `n` packets queued for a long time, burst allowance used up and the given
    /// drop probability; `k` ECT(0) arrivals: (marked, dropped).
    fn arrivals_at(prob: f64, k: usize, ecn: bool, derandomize: bool) -> (u64, u64) {
        let mut p = pie(PieConfig { ecn, derandomize, limit_pkts: 100_000, ..PieConfig::default() });
        for _ in 0..20 {
            p.enqueue(Time::ZERO, tcp(1, 1, 1, 1446, Ecn::NotEct));
        }
        p.vars.burst_allowance = Dur::ZERO;
        p.vars.drop_prob = prob;
        p.vars.qdelay_old = Dur::from_millis(40);
        p.next_update = Time::MAX; // hold the state
        for _ in 0..k {
            let _ = p.enqueue(Time::ZERO, tcp(1, 1, 1, 1446, Ecn::Ect0));
        }
        (p.stats().ecn_marks, p.stats().early_drops)
    }

    #[test]
    fn ecn_marks_up_to_the_threshold_and_drops_above_it() {
        // Derandomised: no drop until 0.85 of probability has accumulated (17 arrivals at
        // p = 0.05), so fewer than p of the arrivals are chosen.
        let (marks, drops) = arrivals_at(0.05, 20_000, true, true);
        println!("p = 0.05, ECN: {marks} marks, {drops} drops");
        assert_eq!(drops, 0);
        assert!(marks > 200 && marks <= 20_000 / 17, "{marks}");
        let (marks, drops) = arrivals_at(0.3, 20_000, true, true);
        println!("p = 0.3, ECN: {marks} marks, {drops} drops");
        assert_eq!(marks, 0, "above mark_ecn_th ECN-capable packets are dropped");
        assert!(drops > 20_000 / 8 && drops <= 20_000 / 3, "{drops}");
        // Bernoulli at p without derandomisation, ECN off: drops, about 5%.
        let (marks, drops) = arrivals_at(0.05, 20_000, false, false);
        println!("p = 0.05, no ECN, no derandomisation: {drops} drops");
        assert_eq!(marks, 0);
        assert!((850..1150).contains(&drops), "{drops}");
    }

    #[test]
    fn derandomisation_spaces_the_drops() {
        // At p = 0.1 the accumulated probability reaches 0.85 after 9 arrivals: never two
        // drops closer than 9 arrivals apart, and a certain drop by 85.
        let mut p = pie(PieConfig { limit_pkts: 100_000, ..PieConfig::default() });
        for _ in 0..20 {
            p.enqueue(Time::ZERO, tcp(1, 1, 1, 1446, Ecn::NotEct));
        }
        p.vars.burst_allowance = Dur::ZERO;
        p.vars.drop_prob = 0.1;
        p.vars.qdelay_old = Dur::from_millis(40);
        p.next_update = Time::MAX;
        let mut last: Option<usize> = None;
        let mut gaps = Vec::new();
        for i in 0..20_000 {
            if !matches!(p.enqueue(Time::ZERO, tcp(1, 1, 1, 1446, Ecn::NotEct)), Enqueue::Queued) {
                if let Some(l) = last {
                    gaps.push(i - l);
                }
                last = Some(i);
            }
        }
        let (mn, mx) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
        println!("gaps between drops: min {mn}, max {mx}, drops {}", gaps.len() + 1);
        assert!(mn >= 9 && mx <= 86, "{mn} {mx}");
        // Without it, drops are Bernoulli: some come back to back.
        let (_, drops) = arrivals_at(0.1, 20_000, false, false);
        assert!((1700..2300).contains(&drops), "{drops}");
    }

    #[test]
    fn lazy_updates_run_on_the_t_update_grid() {
        let mut p = pie(PieConfig::default());
        p.catch_up(Time(Dur::from_millis(100).0));
        // Updates at 15, 30, …, 90 ms; the idle state is a fixed point, so they may be
        // skipped, but the next one is due at 105 ms either way.
        assert_eq!(p.next_update, Time(Dur::from_millis(105).0));
        p.catch_up(Time(Dur::from_secs(1000).0));
        assert!(p.stats().updates < 10, "idle updates are skipped: {}", p.stats().updates);
        assert_eq!(p.next_update.0 % Dur::from_millis(15).0, 0);
    }
}
