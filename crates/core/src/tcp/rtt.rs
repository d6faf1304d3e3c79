//! RFC 6298 round-trip estimation and retransmission-timeout computation, with a clock
//! granularity `G` that also quantises when timers fire.

use super::config::RtoConfig;
use crate::time::{Dur, Time};

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    cfg: RtoConfig,
    /// Smoothed RTT (ns); `None` before the first sample.
    srtt: Option<u64>,
    rttvar: u64,
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
    pub fn new(cfg: RtoConfig) -> Self {
        let g = cfg.granularity.0.max(1);
        let base = round_up(cfg.initial.0, g).min(cfg.max.0.max(1));
        RttEstimator { cfg, srtt: None, rttvar: 0, base, backoff: 0 }
    }

    /// Feed one RTT sample; resets the backoff (Karn: only unambiguous samples are fed).
    pub fn sample(&mut self, r: Dur) {
        let r = r.0.max(1);
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

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt.map(Dur)
    }

    /// Current RTO including backoff, clamped to `max`.
    pub fn rto(&self) -> Dur {
        let max = self.cfg.max.0.max(1);
        let v = if self.backoff >= 63 { u64::MAX } else { self.base.saturating_mul(1u64 << self.backoff) };
        Dur(v.min(max))
    }

    pub fn back_off(&mut self) {
        if self.rto().0 < self.cfg.max.0 {
            self.backoff += 1;
        }
    }

    /// Deadline for a timer of length `d` armed at `now`: the first clock tick (multiple of
    /// the granularity since Time 0) at or after `now + d`.
    #[inline]
    pub fn deadline(&self, now: Time, d: Dur) -> Time {
        Time(round_up(now.0.saturating_add(d.0), self.cfg.granularity.0.max(1)))
    }
}
