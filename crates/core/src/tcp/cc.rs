//! CUBIC window growth (RFC 9438): β = 0.7, C = 0.4, fast convergence, Reno-friendly region.

use crate::time::{Dur, Time};

const BETA: f64 = 0.7;
const C: f64 = 0.4;

#[derive(Clone, Debug, Default)]
pub(crate) struct Cubic {
    /// W_max in segments.
    w_max: f64,
    k: f64,
    origin: f64,
    epoch: Option<Time>,
    /// Reno-friendly estimate W_est in segments.
    w_est: f64,
}

impl Cubic {
    /// Congestion event with `cwnd` segments before the reduction. Returns the new
    /// ssthresh in segments (not floored).
    pub fn on_congestion(&mut self, cwnd: f64) -> f64 {
        if cwnd < self.w_max {
            // Fast convergence.
            self.w_max = cwnd * (1.0 + BETA) / 2.0;
        } else {
            self.w_max = cwnd;
        }
        self.epoch = None;
        cwnd * BETA
    }

    pub fn reset_epoch(&mut self) {
        self.epoch = None;
    }

    /// Congestion-avoidance growth for an ACK of `acked` segments; returns the new cwnd in
    /// segments.
    pub fn on_ack(&mut self, now: Time, cwnd: f64, acked: f64, srtt: Dur) -> f64 {
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
