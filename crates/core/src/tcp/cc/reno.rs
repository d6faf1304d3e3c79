//! Window growth and reduction of the classic senders (Tahoe, Reno, NewReno, SACK: RFC 5681
//! slow start and congestion avoidance, halving on a congestion event) and of MulTCP
//! (Crowcroft & Oechslin 1998: N times Reno's increase, a reduction of 1/(2N)).

use super::{Ack, Controller, Window};
use crate::tcp::config::{multcp_catch_up_segments, MultcpSlowStart, TcpConfig};

/// The switches of [`TcpConfig`] that shape Reno-style growth.
#[derive(Clone, Copy, Debug)]
struct Growth {
    abc: bool,
    cwnd_validation: bool,
    no_congestion_avoidance: bool,
}

impl Growth {
    fn new(cfg: &TcpConfig) -> Growth {
        Growth {
            abc: cfg.abc,
            cwnd_validation: cfg.cwnd_validation,
            no_congestion_avoidance: cfg.no_congestion_avoidance,
        }
    }
}

/// Whether the window was in use before this ACK (RFC 7661 spirit, Linux `tcp_is_cwnd_limited`:
/// in slow start, cwnd < 2·flight; after it, flight within a segment of cwnd).
pub(super) fn cwnd_limited(w: &Window, flight_before: u64) -> bool {
    if w.cwnd < w.ssthresh {
        w.cwnd < 2 * flight_before
    } else {
        flight_before + w.mss >= w.cwnd
    }
}

/// Slow start (RFC 5681 §3.1: +1 MSS per ACK, or with ABC, RFC 3465, L = 2: +min(acked, 2 MSS));
/// `double` opens two increments per ACK (MulTCP catching up with N flows). Returns false in
/// congestion avoidance.
fn slow_start(g: &Growth, w: &mut Window, acked: u64, double: bool) -> bool {
    if w.cwnd < w.ssthresh || g.no_congestion_avoidance {
        let mut inc = if g.abc { acked.min(2 * w.mss) } else { w.mss };
        if double {
            inc *= 2;
        }
        w.cwnd = w.cwnd.saturating_add(inc).min(w.cap);
        return true;
    }
    false
}

/// Congestion avoidance, N times Reno's additive increase (RFC 5681 §3.1: MSS²/cwnd per ACK, or
/// with ABC one MSS per cwnd of bytes acknowledged, counted in `acc`).
fn congestion_avoidance(g: &Growth, w: &mut Window, acc: &mut u64, acked: u64, n: f64) {
    let mss = w.mss;
    if g.abc {
        *acc += acked;
        let per = ((w.cwnd as f64 / n) as u64).max(1);
        if *acc >= per {
            *acc -= per;
            w.cwnd += mss;
        }
    } else if n == 1.0 {
        w.cwnd += (mss * mss / w.cwnd).max(1);
    } else {
        w.cwnd += ((n * (mss * mss) as f64 / w.cwnd as f64) as u64).max(1);
    }
    w.cwnd = w.cwnd.min(w.cap);
}

/// Tahoe, Reno, NewReno and SACK senders' window control (they differ in loss recovery only).
#[derive(Clone, Debug)]
pub(crate) struct Reno {
    g: Growth,
    ns2_slowdown: bool,
    /// ABC byte counter of congestion avoidance.
    acc: u64,
}

impl Reno {
    pub fn new(cfg: &TcpConfig) -> Reno {
        Reno { g: Growth::new(cfg), ns2_slowdown: cfg.ns2_slowdown, acc: 0 }
    }
}

impl Controller for Reno {
    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if self.g.cwnd_validation && !cwnd_limited(w, a.flight_before) {
            return;
        }
        if !slow_start(&self.g, w, a.acked, false) {
            congestion_avoidance(&self.g, w, &mut self.acc, a.acked, 1.0);
        }
    }

    fn ssthresh(&mut self, w: &Window, flight: u64) -> u64 {
        let two = 2 * w.mss;
        if self.ns2_slowdown {
            // ns-2 `TcpAgent::slowdown(CLOSE_SSTHRESH_HALF)`: `(int)(window() / 2)` with
            // `window()` = ⌊min(cwnd_, wnd_)⌋ in packets, and `ssthresh_ ≥ 2`.
            let mss = w.mss.max(1);
            let win = w.cwnd.min(w.rwnd.max(mss)) / mss;
            return ((win / 2) * mss).max(two);
        }
        // RFC 5681 (4): ssthresh = max(FlightSize / 2, 2·SMSS).
        (flight / 2).max(two)
    }

    fn on_rto(&mut self, _w: &mut Window) {
        self.acc = 0;
    }
}

/// MulTCP: one flow that behaves like `multcp_n` Reno flows.
#[derive(Clone, Debug)]
pub(crate) struct MulTcp {
    g: Growth,
    n: f64,
    slow_start: MultcpSlowStart,
    acc: u64,
}

impl MulTcp {
    pub fn new(cfg: &TcpConfig) -> MulTcp {
        MulTcp { g: Growth::new(cfg), n: cfg.multcp_n, slow_start: cfg.multcp_slow_start, acc: 0 }
    }
}

impl Controller for MulTcp {
    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if self.g.cwnd_validation && !cwnd_limited(w, a.flight_before) {
            return;
        }
        let double = self.slow_start == MultcpSlowStart::NFlows
            && (w.cwnd as f64) < multcp_catch_up_segments(self.n) * w.mss as f64;
        if !slow_start(&self.g, w, a.acked, double) {
            congestion_avoidance(&self.g, w, &mut self.acc, a.acked, self.n.max(1.0));
        }
    }

    fn ssthresh(&mut self, w: &Window, flight: u64) -> u64 {
        // FlightSize·(1 − 1/(2N)).
        let n = self.n.max(1.0);
        ((flight as f64 * (1.0 - 1.0 / (2.0 * n))) as u64).max(2 * w.mss)
    }

    fn on_rto(&mut self, _w: &mut Window) {
        self.acc = 0;
    }
}
