//! Round-trip estimation and retransmission-timeout computation: RFC 6298 with a clock
//! granularity `G` that also quantises when timers fire, or ns-2's `TcpAgent` timer
//! ([`RtoModel`]).

use super::config::{RtoConfig, RtoModel};
use crate::time::{Dur, Time};

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    cfg: RtoConfig,
    model: RtoModel,
    /// Smoothed RTT (ns); `None` before the first sample.
    srtt: Option<u64>,
    rttvar: u64,
    /// ns-2: SRTT in ticks × 8 and RTTVAR in ticks × 4 (`t_srtt_`, `t_rttvar_`); 0 = no sample.
    ns2_srtt8: i64,
    ns2_rttvar4: i64,
    /// RTO without backoff (ns).
    base: u64,
    /// Number of doublings applied (exponential backoff).
    backoff: u32,
}

#[inline]
fn round_up(x: u64, g: u64) -> u64 {
    if g <= 1 {
        x
    } else {
        x.div_ceil(g).saturating_mul(g)
    }
}

impl RttEstimator {
    pub fn new(cfg: RtoConfig, model: RtoModel) -> Self {
        let g = cfg.granularity.0.max(1);
        let base = match model {
            RtoModel::Rfc6298 => round_up(cfg.initial.0, g).min(cfg.max.0.max(1)),
            // ns-2: t_rtxcur_ = rtxcur_init_, used as is until the first sample.
            RtoModel::Ns2 => cfg.initial.0.max(1),
        };
        RttEstimator { cfg, model, srtt: None, rttvar: 0, ns2_srtt8: 0, ns2_rttvar4: 0, base, backoff: 0 }
    }

    /// Feed one RTT sample `r` taken at `now`; resets the backoff (Karn: only unambiguous
    /// samples are fed).
    pub fn sample(&mut self, now: Time, r: Dur) {
        let r = r.0.max(1);
        if self.model == RtoModel::Ns2 {
            self.sample_ns2(now, r);
            self.backoff = 0;
            return;
        }
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let d = s.abs_diff(r);
                self.rttvar = (3 * self.rttvar + d) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
        let g = self.cfg.granularity.0.max(1);
        let s = self.srtt.unwrap_or(r);
        let rto = s.saturating_add(g.max(self.rttvar.saturating_mul(4)));
        let rto = round_up(rto, g).max(self.cfg.min.0);
        self.base = rto.min(self.cfg.max.0.max(1));
        self.backoff = 0;
    }

    /// ns-2 `TcpAgent::rtt_update` (no timestamps): the sample is the number of clock ticks
    /// between the send time and now (`int((tao + tickoff)/tcp_tick_)`), at least 1; then the
    /// fixed-point Jacobson update and `t_rtxcur_ = ⌊srtt + 4·rttvar⌋` ticks.
    fn sample_ns2(&mut self, now: Time, r: u64) {
        let g = self.cfg.granularity.0.max(1);
        let sent = now.0.saturating_sub(r);
        let ticks = ((now.0 / g) as i64 - (sent / g) as i64).max(1);
        if self.ns2_srtt8 != 0 {
            let mut delta = ticks - (self.ns2_srtt8 >> 3);
            self.ns2_srtt8 += delta;
            if self.ns2_srtt8 <= 0 {
                self.ns2_srtt8 = 1;
            }
            delta = delta.abs() - (self.ns2_rttvar4 >> 2);
            self.ns2_rttvar4 += delta;
            if self.ns2_rttvar4 <= 0 {
                self.ns2_rttvar4 = 1;
            }
        } else {
            self.ns2_srtt8 = ticks << 3;
            self.ns2_rttvar4 = ticks << 1;
        }
        // rttvar_exp_ = 2: ((t_rttvar_ << (2 + (3 − 2))) + t_srtt_) >> 3.
        let rtx_ticks = ((self.ns2_rttvar4 << 3) + self.ns2_srtt8) >> 3;
        self.base = (rtx_ticks.max(1) as u64).saturating_mul(g);
        self.srtt = Some((self.ns2_srtt8 as u64).saturating_mul(g) / 8);
        self.rttvar = (self.ns2_rttvar4 as u64).saturating_mul(g) / 4;
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt.map(Dur)
    }

    /// Current RTO including backoff, clamped to `max`.
    pub fn rto(&self) -> Dur {
        let max = self.cfg.max.0.max(1);
        let v = if self.backoff >= 63 { u64::MAX } else { self.base.saturating_mul(1u64 << self.backoff) };
        match self.model {
            RtoModel::Rfc6298 => Dur(v.min(max)),
            // ns-2 `rtt_timeout()` (rfc2988_ off): t_rtxcur_ · t_backoff_, raised to minrto_,
            // capped at maxrto_, and never below two ticks.
            RtoModel::Ns2 => {
                let two_ticks = self.cfg.granularity.0.max(1).saturating_mul(2);
                Dur(v.max(self.cfg.min.0).min(max).max(two_ticks))
            }
        }
    }

    pub fn back_off(&mut self) {
        match self.model {
            RtoModel::Rfc6298 => {
                if self.rto().0 < self.cfg.max.0 {
                    self.backoff += 1;
                }
            }
            // ns-2: `if (t_backoff_ < 64) t_backoff_ <<= 1`.
            RtoModel::Ns2 => {
                if self.backoff < 6 {
                    self.backoff += 1;
                }
            }
        }
    }

    /// Deadline for a timer of length `d` armed at `now`: RFC 6298 model, the first clock tick
    /// (multiple of the granularity since Time 0) at or after `now + d`; ns-2 model, `now + d`.
    #[inline]
    pub fn deadline(&self, now: Time, d: Dur) -> Time {
        match self.model {
            RtoModel::Rfc6298 => Time(round_up(now.0.saturating_add(d.0), self.cfg.granularity.0.max(1))),
            RtoModel::Ns2 => Time(now.0.saturating_add(d.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(g_ms: u64, min_ms: u64) -> RtoConfig {
        RtoConfig {
            min: Dur::from_millis(min_ms),
            max: Dur::from_secs(60),
            initial: Dur::from_secs(3),
            granularity: Dur::from_millis(g_ms),
        }
    }

    #[test]
    fn ns2_sub_tick_rtts_give_three_ticks() {
        // ns-2 with tcpTick_ 0.1: any RTT below a tick counts as 1 tick; srtt = 1 tick,
        // rttvar = 1/2 tick, and the fixed-point rttvar never decays below that (2 >> 2 = 0),
        // so the RTO stays ⌊1 + 4·0.5⌋ = 3 ticks = 300 ms for every later sample.
        let mut e = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        assert_eq!(e.rto(), Dur::from_secs(3), "rtxcur_init_ before the first sample");
        let mut now = Time(Dur::from_millis(1234).0);
        for _ in 0..50 {
            e.sample(now, Dur::from_millis(30));
            assert_eq!(e.rto(), Dur::from_millis(300));
            now += Dur::from_millis(37);
        }
        // The RFC 6298 model with the same tick gives 30 ms + 100 ms → 200 ms.
        let mut f = RttEstimator::new(cfg(100, 0), RtoModel::Rfc6298);
        for _ in 0..50 {
            f.sample(now, Dur::from_millis(30));
        }
        assert_eq!(f.rto(), Dur::from_millis(200));
    }

    #[test]
    fn ns2_counts_tick_boundaries_crossed() {
        let mut e = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        // Sent at 0.95 s, acked at 1.27 s: the 0.32 s cross the tick boundaries 1.0, 1.1 and
        // 1.2 (⌊12.7⌋ − ⌊9.5⌋ = 3 ticks); srtt 3, rttvar 1.5 → ⌊3 + 6⌋ = 9 ticks.
        e.sample(Time(Dur::from_millis(1270).0), Dur::from_millis(320));
        assert_eq!(e.rto(), Dur::from_millis(900));
    }

    #[test]
    fn ns2_backoff_min_and_floor() {
        let mut e = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        e.sample(Time(Dur::from_millis(500).0), Dur::from_millis(5));
        assert_eq!(e.rto(), Dur::from_millis(300));
        e.back_off();
        assert_eq!(e.rto(), Dur::from_millis(600));
        for _ in 0..10 {
            e.back_off();
        }
        assert_eq!(e.rto(), Dur::from_millis(300 * 64), "t_backoff_ stops at 64");
        // minrto_ raises the timeout, two ticks is the floor even with minrto_ 0.
        let mut m = RttEstimator::new(cfg(100, 1000), RtoModel::Ns2);
        m.sample(Time(Dur::from_millis(500).0), Dur::from_millis(5));
        assert_eq!(m.rto(), Dur::from_secs(1));
        let mut t = RttEstimator::new(cfg(10, 0), RtoModel::Ns2);
        t.sample(Time(Dur::from_millis(500).0), Dur::from_micros(30));
        assert_eq!(t.rto(), Dur::from_millis(30), "1 tick + 4·0.5 tick = 3 ticks of 10 ms");
    }

    #[test]
    fn ns2_timer_is_not_tick_aligned() {
        let now = Time(Dur::from_millis(1234).0);
        let d = Dur::from_millis(300);
        let ns2 = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        assert_eq!(ns2.deadline(now, d), Time(Dur::from_millis(1534).0));
        let bsd = RttEstimator::new(cfg(100, 0), RtoModel::Rfc6298);
        assert_eq!(bsd.deadline(now, d), Time(Dur::from_millis(1600).0));
    }
}
