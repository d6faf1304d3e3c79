//! Congestion controllers: the seam between loss recovery (in `conn.rs`: fast retransmit,
//! NewReno partial ACKs, RFC 6675 SACK recovery, the RTO's go-back-N) and congestion control
//! (how the window grows, how much a congestion event takes off, whether the sender paces).
//!
//! The shape follows Linux's `struct tcp_congestion_ops` (include/net/tcp.h: `ssthresh`,
//! `cong_avoid`/`cong_control`, `set_state`, `cwnd_event`, `pkts_acked`) and quinn-proto's
//! `congestion::Controller` (`on_ack`, `on_congestion_event`, `window`, `pacing_rate`): the
//! connection owns cwnd and ssthresh (Linux's `tp->snd_cwnd` / `tp->snd_ssthresh`) and lends them
//! to the controller on each event; recovery may still set them (window inflation and deflation
//! are recovery's, as in Linux's `tcp_cwnd_reduction` outside the ops).

mod bbr;
mod controller;
mod cubic;
mod reno;

pub(crate) use bbr::Bbr;
pub use bbr::BbrMode;
pub(crate) use controller::{Ack, CaState, Controller, Window};
pub(crate) use cubic::Cubic;
pub(crate) use reno::{MulTcp, Reno};

use super::config::{CcAlgo, TcpConfig};

/// Misbehaving (paper 001 §2.4): byte-counted slow start forever, never reduces.
#[derive(Clone, Debug, Default)]
pub(crate) struct Misbehaving {
    cwnd_validation: bool,
}

impl Controller for Misbehaving {
    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if self.cwnd_validation && !reno::cwnd_limited(w, a.flight_before) {
            return;
        }
        // No congestion avoidance: byte-counted slow start forever (doubles per RTT).
        w.cwnd = w.cwnd.saturating_add(a.acked).min(w.cap);
    }
    fn ssthresh(&mut self, w: &Window, _flight: u64) -> u64 {
        w.ssthresh
    }
    fn reduces(&self) -> bool {
        false
    }
}

/// The controller of a connection, chosen by `cc` (enum dispatch keeps `Connection` `Clone`
/// and its size known).
#[derive(Clone, Debug)]
pub(crate) enum Cc {
    Reno(Reno),
    Cubic(Cubic),
    MulTcp(MulTcp),
    Misbehaving(Misbehaving),
    Bbr(Box<Bbr>),
}

impl Cc {
    pub fn new(cfg: &TcpConfig) -> Cc {
        match cfg.cc {
            CcAlgo::Tahoe | CcAlgo::Reno | CcAlgo::NewReno | CcAlgo::Sack => Cc::Reno(Reno::new(cfg)),
            CcAlgo::Cubic => Cc::Cubic(Cubic::new(cfg)),
            CcAlgo::MulTcp => Cc::MulTcp(MulTcp::new(cfg)),
            CcAlgo::Misbehaving => Cc::Misbehaving(Misbehaving { cwnd_validation: cfg.cwnd_validation }),
            CcAlgo::Bbr => Cc::Bbr(Box::new(Bbr::new(cfg))),
        }
    }

    #[inline]
    fn get(&mut self) -> &mut dyn Controller {
        match self {
            Cc::Reno(c) => c,
            Cc::Cubic(c) => c,
            Cc::MulTcp(c) => c,
            Cc::Misbehaving(c) => c,
            Cc::Bbr(c) => c.as_mut(),
        }
    }

    #[inline]
    fn get_ref(&self) -> &dyn Controller {
        match self {
            Cc::Reno(c) => c,
            Cc::Cubic(c) => c,
            Cc::MulTcp(c) => c,
            Cc::Misbehaving(c) => c,
            Cc::Bbr(c) => c.as_ref(),
        }
    }

    pub fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        self.get().on_ack(w, a)
    }
    pub fn ssthresh(&mut self, w: &Window, flight: u64) -> u64 {
        self.get().ssthresh(w, flight)
    }
    pub fn cong_control(&mut self, w: &mut Window, a: &Ack) -> bool {
        self.get().cong_control(w, a)
    }
    pub fn controls_cwnd(&self) -> bool {
        self.get_ref().controls_cwnd()
    }
    /// Seed what a controller randomises (BBR's first PROBE_BW phase).
    pub fn seeded(mut self, seed: u64) -> Cc {
        if let Cc::Bbr(b) = &mut self {
            b.seed(seed);
        }
        self
    }
    pub fn bbr(&self) -> Option<&Bbr> {
        match self {
            Cc::Bbr(b) => Some(b),
            _ => None,
        }
    }
    pub fn reduces(&self) -> bool {
        self.get_ref().reduces()
    }
    pub fn on_rto(&mut self, w: &mut Window) {
        self.get().on_rto(w)
    }
    pub fn pacing_rate(&self) -> Option<u64> {
        self.get_ref().pacing_rate()
    }
}
