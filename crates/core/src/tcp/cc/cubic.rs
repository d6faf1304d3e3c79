//! CUBIC window growth (RFC 9438): β = 0.7, C = 0.4, fast convergence, Reno-friendly region.

use super::reno::cwnd_limited;
use super::{Ack, Controller, Window};
use crate::tcp::config::TcpConfig;
use crate::time::{Dur, Time};

const BETA: f64 = 0.7;
const C: f64 = 0.4;

#[derive(Clone, Debug, Default)]
pub(crate) struct Cubic {
    abc: bool,
    cwnd_validation: bool,
    no_congestion_avoidance: bool,
    /// W_max in segments.
    w_max: f64,
    k: f64,
    origin: f64,
    epoch: Option<Time>,
    /// Reno-friendly estimate W_est in segments.
    w_est: f64,
}

impl Cubic {
    pub fn new(cfg: &TcpConfig) -> Cubic {
        Cubic {
            abc: cfg.abc,
            cwnd_validation: cfg.cwnd_validation,
            no_congestion_avoidance: cfg.no_congestion_avoidance,
            ..Cubic::default()
        }
    }

    /// Congestion event with `cwnd` segments before the reduction. Returns the new
    /// ssthresh in segments (not floored).
    fn on_congestion(&mut self, cwnd: f64) -> f64 {
        if cwnd < self.w_max {
            // Fast convergence.
            self.w_max = cwnd * (1.0 + BETA) / 2.0;
        } else {
            self.w_max = cwnd;
        }
        self.epoch = None;
        cwnd * BETA
    }

    fn reset_epoch(&mut self) {
        self.epoch = None;
    }

    /// Congestion-avoidance growth for an ACK of `acked` segments; returns the new cwnd in
    /// segments.
    fn grow(&mut self, now: Time, cwnd: f64, acked: f64, srtt: Dur) -> f64 {
        let epoch = match self.epoch {
            Some(e) => e,
            None => {
                self.epoch = Some(now);
                if cwnd < self.w_max {
                    self.k = ((self.w_max - cwnd) / C).cbrt();
                    self.origin = self.w_max;
                } else {
                    self.k = 0.0;
                    self.origin = cwnd;
                }
                self.w_est = cwnd;
                now
            }
        };
        let t = now.since(epoch).as_secs_f64();
        let w_cubic = |t: f64| C * (t - self.k).powi(3) + self.origin;
        let target = w_cubic(t + srtt.as_secs_f64()).clamp(cwnd, 1.5 * cwnd);
        let alpha = if self.w_est >= self.w_max { 1.0 } else { 3.0 * (1.0 - BETA) / (1.0 + BETA) };
        self.w_est += alpha * acked / cwnd;
        if w_cubic(t) < self.w_est {
            self.w_est.max(cwnd)
        } else {
            cwnd + (target - cwnd) / cwnd * acked
        }
    }
}

impl Controller for Cubic {
    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if self.cwnd_validation && !cwnd_limited(w, a.flight_before) {
            return;
        }
        let mss = w.mss;
        if w.cwnd < w.ssthresh || self.no_congestion_avoidance {
            // Slow start as RFC 5681 (RFC 9438 §4.10).
            let inc = if self.abc { a.acked.min(2 * mss) } else { mss };
            w.cwnd = w.cwnd.saturating_add(inc).min(w.cap);
            return;
        }
        let srtt = a.srtt.unwrap_or(Dur::from_millis(100));
        let m = mss as f64;
        let c = self.grow(a.now, w.cwnd as f64 / m, a.acked as f64 / m, srtt);
        w.cwnd = ((c * m) as u64).max(w.cwnd).min(w.cap);
    }

    fn ssthresh(&mut self, w: &Window, _flight: u64) -> u64 {
        let c = self.on_congestion(w.cwnd as f64 / w.mss as f64);
        ((c * w.mss as f64) as u64).max(2 * w.mss)
    }

    fn on_rto(&mut self, _w: &mut Window) {
        self.reset_epoch();
    }
}
