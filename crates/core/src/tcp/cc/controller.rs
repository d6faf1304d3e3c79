//! The seam itself: the [`Controller`] trait and what a connection lends a controller on each
//! event ([`Window`], [`Ack`], [`CaState`]). A leaf, so that the controllers (`reno.rs`,
//! `cubic.rs`, `bbr.rs`) and the dispatch in `mod.rs` that chooses among them share it without
//! naming each other back.

use crate::tcp::rate::RateSample;
use crate::time::{Dur, Time};

/// The window a controller works on: the connection's cwnd and ssthresh (bytes), with the
/// effective MSS and the cap on cwnd (`max_cwnd_bytes`, or a hard cap).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
    pub cap: u64,
    /// The peer's advertised window (bytes), for ns-2's `window()` = min(cwnd, rwnd).
    pub rwnd: u64,
}

/// What an ACK of new data tells a controller.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ack {
    pub now: Time,
    /// Bytes newly acknowledged cumulatively (at least 1 for an ACK of the FIN alone).
    pub acked: u64,
    /// Bytes in flight before this ACK.
    pub flight_before: u64,
    /// The smoothed RTT, once there is one.
    pub srtt: Option<Dur>,
    /// Bytes in flight after it.
    pub flight_after: u64,
    /// Linux's `icsk_ca_state` as far as a controller needs it.
    pub ca_state: CaState,
    /// The delivery-rate sample of this ACK (draft-cheng-iccrg-delivery-rate-estimation), for
    /// controllers that ask for one.
    pub rate: Option<RateSample>,
}

/// The sender's congestion state (Linux `enum tcp_ca_state`, the values a controller tells apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CaState {
    /// No recovery under way (`TCP_CA_Open`, `TCP_CA_Disorder`).
    Open,
    /// Fast recovery (`TCP_CA_Recovery`).
    Recovery,
    /// The go-back-N after a retransmission timeout (`TCP_CA_Loss`).
    Loss,
}

/// A congestion controller. Loss detection and retransmission are not its business.
pub(crate) trait Controller {
    /// An ACK of new data outside fast recovery (Linux `cong_avoid` / `cong_control`): grow
    /// (or, for a model-based controller, set) the window.
    fn on_ack(&mut self, w: &mut Window, a: &Ack);
    /// A congestion event (fast retransmit, RTO, ECN-Echo) with `flight` bytes outstanding:
    /// the new slow-start threshold (Linux `ssthresh`), before recovery sets cwnd from it.
    fn ssthresh(&mut self, w: &Window, flight: u64) -> u64;
    /// Whether congestion events reduce the window at all (false: a misbehaving sender).
    fn reduces(&self) -> bool {
        true
    }
    /// Every ACK, after loss recovery has processed it (Linux `cong_control`, which replaces
    /// `cong_avoid` and the recovery's window rules): the controller sets cwnd itself. Returns
    /// false if the controller has no such hook (the default).
    fn cong_control(&mut self, _w: &mut Window, _a: &Ack) -> bool {
        false
    }
    /// Whether `cong_control` owns cwnd (recovery and ECN then leave it alone).
    fn controls_cwnd(&self) -> bool {
        false
    }
    /// The retransmission timer expired (Linux `set_state(TCP_CA_Loss)`), after recovery set
    /// cwnd to one segment.
    fn on_rto(&mut self, _w: &mut Window) {}
    /// Pacing rate in bytes per second, or `None` for an ACK-clocked sender.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
}
