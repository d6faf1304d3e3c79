//! One TCP endpoint (both halves). API contract; see the module doc for the driving loop.

use super::cc::{Ack, BbrMode, CaState, Cc, Window};
use super::config::{CcAlgo, LossRecovery, TcpConfig, WindowUpdate};
use super::rate::RateEstimator;
use super::recv::Reassembly;
use super::rtt::{RttEstimator, SampleAt};
use super::scoreboard::Scoreboard;
use super::sendbuf::SendBuf;
use crate::time::{Dur, Time};
use ackshape_wire::{Ecn, IpHdr, Packet, SackBlock, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Connection state (RFC 793 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
    Closed,
}

/// Something the application or the metrics want to know.
#[derive(Clone, Debug, PartialEq)]
pub enum TcpEvent {
    /// Handshake completed.
    Established,
    /// `bytes` new in-order bytes reached the receiving application.
    Delivered { bytes: u64 },
    /// Every byte written so far has been cumulatively acknowledged.
    AllAcked,
    /// A fast retransmit was triggered (entering fast recovery) at this sequence number.
    FastRetransmit { seq: SeqNum },
    /// The retransmission timer expired.
    Timeout { rto: Dur },
    /// The peer's FIN has been received (all its data delivered).
    PeerFin,
    /// Both directions are closed (or the connection was reset).
    Closed,
}

/// Cumulative counters. `#[non_exhaustive]`: more may be added.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TcpStats {
    /// Segments sent (all kinds, including pure ACKs and retransmissions).
    pub segs_sent: u64,
    /// Data segments sent, including retransmissions.
    pub data_segs_sent: u64,
    /// Payload bytes sent, including retransmissions.
    pub data_bytes_sent: u64,
    /// Retransmitted data segments.
    pub retrans_segs: u64,
    pub retrans_bytes: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    /// Duplicate ACKs received.
    pub dupacks_rcvd: u64,
    /// Pure ACKs sent by the receiving half.
    pub acks_sent: u64,
    /// In-order payload bytes delivered to the application.
    pub bytes_delivered: u64,
    /// Payload bytes acknowledged cumulatively (sending half).
    pub bytes_acked: u64,
    /// RTT samples taken: count, sum, min, max (ns).
    pub rtt_samples: u64,
    pub rtt_sum_ns: u64,
    pub rtt_min_ns: u64,
    pub rtt_max_ns: u64,
    /// Segments received with the IP CE mark / ACKs received with ECE.
    pub ce_rcvd: u64,
    pub ece_rcvd: u64,
    /// Multiplicative decreases of cwnd/ssthresh (fast retransmit, RTO, ECN); Misbehaving never counts.
    pub cwnd_reductions: u64,
    /// Of which caused by ECN-Echo (at most one per RTT).
    pub ecn_reductions: u64,
    /// Partial ACKs received during NewReno or SACK recovery.
    pub partial_acks: u64,
    /// Zero-window probes sent by the persist timer.
    pub persist_probes: u64,
    /// Window advertisements accepted that closed the send window (rwnd from > 0 to 0).
    pub zero_windows: u64,
    /// Time the send window stayed closed (rwnd = 0), summed over the closed periods that ended (ns).
    pub zero_window_ns: u64,
    /// SYN or SYN-ACK retransmissions.
    pub syn_retrans: u64,
    /// RFC 6675 rescue retransmissions (NextSeg rule 4).
    pub rescue_retrans: u64,
}

/// An instantaneous snapshot for per-flow traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct TcpTrace {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub srtt: Dur,
    pub rto: Dur,
    pub in_flight_bytes: u64,
    /// Peer's advertised window (scaled, bytes) as last seen.
    pub rwnd_seen_bytes: u64,
    /// The controller's pacing rate in bytes/s; 0 for an ACK-clocked sender.
    pub pacing_rate_bytes_s: u64,
    /// BBR's model (mode, bottleneck-bandwidth estimate in bytes/s, min RTT); `None` for other
    /// controllers.
    pub bbr: Option<BbrTrace>,
}

/// BBR's model at a trace sample.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BbrTrace {
    pub mode: BbrMode,
    /// The windowed-maximum delivery rate (`bbr_max_bw`), bytes/s.
    pub bw_bytes_s: f64,
    /// The windowed-minimum RTT (`bbr->min_rtt_us`); zero before the first sample.
    pub min_rtt: Dur,
    pub pacing_gain: f64,
}

/// Loss-recovery phase of the sending half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recovery {
    None,
    /// Reno / NewReno fast recovery (window inflation, one retransmission at a time).
    Fast,
    /// RFC 6675 SACK-based recovery (pipe, NextSeg).
    Sack,
}

/// Who governs the sending half's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drive {
    /// Its own congestion control: an ordinary TCP sender.
    Own,
    /// A VPS actual flow (paper 003): no congestion window. A fast retransmit and the first
    /// retransmission after an RTO go out at once; any other retransmission and all new data
    /// only with a permit from the controller ([`Connection::ext_permit`]).
    External,
    /// A VPS virtual flow: congestion control only, fed virtual ACKs, no RTO timer of its own
    /// (timeouts are propagated from actual flows).
    Virtual,
}

/// Permit bits for an `External` sender.
pub(crate) const PERMIT_NEW: u8 = 1;
pub(crate) const PERMIT_RTX: u8 = 2;

/// Hard cap on cwnd when `max_cwnd_bytes` is 0 (keeps Misbehaving from overflowing).
const CWND_CAP: u64 = 1 << 40;

/// One end of a TCP connection.
///
/// Internally every sequence number is a 64-bit *stream offset* (0 = first data byte after
/// the SYN); wire sequence numbers are derived from it, so there is no wrap-around logic
/// anywhere except at the conversion.
#[derive(Clone, Debug)]
pub struct Connection {
    cfg: TcpConfig,
    local: SocketAddr,
    remote: SocketAddr,
    state: TcpState,
    /// Effective MSS (payload bytes): min of ours and the peer's.
    mss: u64,
    /// Shift applied to windows we receive (peer's offer) / we send (ours).
    snd_shift: u8,
    rcv_shift: u8,
    ws_negotiated: bool,
    sack_ok: bool,
    ts_ok: bool,
    ecn_ok: bool,
    iss: u32,
    irs: u32,

    // --- handshake ---
    syn_pending: bool,
    syn_sent_at: Option<Time>,
    syn_retx: u32,

    // --- sending half ---
    sb: SendBuf,
    fin_queued: bool,
    una: u64,
    /// Highest offset sent + 1 (HighData); never moves back (go-back-N uses `rtx_ptr`).
    nxt: u64,
    cwnd: u64,
    ssthresh: u64,
    rwnd: u64,
    rwnd_max: u64,
    wl1: i64,
    wl2: u64,
    /// When the send window closed (rwnd = 0), while it stays closed.
    zero_since: Option<Time>,
    last_wnd_raw: u16,
    dupacks: u32,
    rec: Recovery,
    /// NewReno `recover` / RFC 6675 RecoveryPoint; also set on RTO.
    recover: Option<u64>,
    first_partial: bool,
    /// HighRxt: every un-SACKed byte in `[una, rtx_ptr)` has been retransmitted.
    rtx_ptr: u64,
    /// After an RTO (or Tahoe's fast retransmit) everything below this is presumed lost.
    rto_lost_to: u64,
    /// A one-shot retransmission of the segment at this offset, sent regardless of cwnd.
    pending_rtx: Option<u64>,
    /// Fast recovery was just entered with `new_data_on_fast_retransmit = false`: only the
    /// retransmission may go out until the next ACK arrives.
    entry_hold: bool,
    /// RFC 6675 RescueRxt.
    rescue_rxt: Option<u64>,
    sboard: Scoreboard,
    rtt: RttEstimator,
    /// Segment being timed when timestamps are off: (end offset, send time).
    rtt_timing: Option<(u64, Time)>,
    rtx_deadline: Option<Time>,
    consecutive_rtos: u32,
    probe_pending: bool,
    ecn_recover: u64,
    cwr_pending: bool,
    burst: u32,
    /// Loss recovery, implied by `cfg.cc`.
    recovery: LossRecovery,
    /// The congestion controller (window growth, reduction, pacing).
    cc: Cc,
    /// Delivery-rate estimation, for a controller that uses it (BBR).
    rate: Option<Box<RateEstimator>>,
    /// The controller paces: no data segment before `pace_next`.
    paced: bool,
    pace_next: Time,
    /// A data segment waits for `pace_next` (a timer for the driver).
    pace_wake: Option<Time>,
    /// `ns2_recovery`, Reno/NewReno: the part of `cwnd` that is ns-2's `dupwnd_` (the window
    /// inflation of fast recovery), bytes.
    ns2_dupwnd: u64,
    /// `ns2_recovery`, SACK recovery: `Sack1TcpAgent::pipe_` (segments; may go negative).
    ns2_pipe: i64,
    /// `ns2_recovery`, SACK: `Sack1TcpAgent::timeout_` — set at a timeout, cleared by the next
    /// new ACK; duplicate ACKs are ignored meanwhile.
    ns2_after_timeout: bool,
    drive: Drive,
    /// `External`: what the next `poll_transmit` may send besides free retransmissions.
    permit: u8,

    // --- receiving half ---
    rcv_nxt: u64,
    adv_edge: u64,
    reasm: Reassembly,
    rcv_mss: u64,
    unacked_bytes: u64,
    delack_deadline: Option<Time>,
    imm_acks: u32,
    last_ack_sent: u64,
    ts_recent: u32,
    ece_pending: bool,
    peer_fin_off: Option<u64>,
    peer_fin_rcvd: bool,
    read_q: VecDeque<Bytes>,
    tw_deadline: Option<Time>,

    /// A reset to send (sequence number, ACK number) in answer to a segment for a closed connection.
    rst_pending: Option<(SeqNum, Option<SeqNum>)>,

    events: VecDeque<TcpEvent>,
    stats: TcpStats,
    ip_id: u16,
}

/// Timestamp clock: microseconds (+1 so that a TSval is never 0). Wraps after ~71 minutes,
/// which RFC 7323's wrapping comparisons tolerate.
#[inline]
fn ts_now(now: Time) -> u32 {
    (now.0 / 1000).wrapping_add(1) as u32
}

impl Connection {
    fn new(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, state: TcpState) -> Connection {
        let mss = cfg.mss.clamp(1, 65535) as u64;
        Connection {
            local,
            remote,
            state,
            mss,
            snd_shift: 0,
            rcv_shift: 0,
            ws_negotiated: false,
            sack_ok: false,
            ts_ok: false,
            ecn_ok: false,
            iss,
            irs: 0,
            syn_pending: true,
            syn_sent_at: None,
            syn_retx: 0,
            sb: SendBuf::new(cfg.carry_payload),
            fin_queued: false,
            una: 0,
            nxt: 0,
            cwnd: mss * cfg.initial_window.max(1) as u64,
            ssthresh: if cfg.initial_ssthresh == 0 { u64::MAX } else { cfg.initial_ssthresh * mss },
            rwnd: 0,
            rwnd_max: 0,
            wl1: i64::MIN,
            wl2: 0,
            zero_since: None,
            last_wnd_raw: 0,
            dupacks: 0,
            rec: Recovery::None,
            recover: None,
            first_partial: false,
            rtx_ptr: 0,
            rto_lost_to: 0,
            pending_rtx: None,
            entry_hold: false,
            rescue_rxt: None,
            sboard: Scoreboard::default(),
            rtt: RttEstimator::new(cfg.rto, cfg.rto_model),
            rtt_timing: None,
            rtx_deadline: None,
            consecutive_rtos: 0,
            probe_pending: false,
            ecn_recover: 0,
            cwr_pending: false,
            burst: 0,
            recovery: cfg.cc.recovery(),
            cc: Cc::new(&cfg).seeded(iss as u64),
            rate: (cfg.cc == CcAlgo::Bbr).then(Box::default),
            paced: cfg.cc == CcAlgo::Bbr,
            pace_next: Time::ZERO,
            pace_wake: None,
            ns2_dupwnd: 0,
            ns2_pipe: 0,
            ns2_after_timeout: false,
            drive: Drive::Own,
            permit: 0,
            rcv_nxt: 0,
            adv_edge: 0,
            reasm: Reassembly::default(),
            rcv_mss: 536.min(mss),
            unacked_bytes: 0,
            delack_deadline: None,
            imm_acks: 0,
            last_ack_sent: 0,
            ts_recent: 0,
            ece_pending: false,
            peer_fin_off: None,
            peer_fin_rcvd: false,
            read_q: VecDeque::new(),
            tw_deadline: None,
            rst_pending: None,
            events: VecDeque::new(),
            stats: TcpStats::default(),
            ip_id: 0,
            cfg,
        }
    }

    /// Active open: returns a connection in `SynSent` whose first `poll_transmit` is the SYN.
    pub fn connect(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, now: Time) -> Connection {
        let _ = now;
        Connection::new(cfg, local, remote, iss, TcpState::SynSent)
    }

    /// BBR's state, for traces and tests: (mode, max bandwidth in bytes/s, min RTT, pacing
    /// gain, pacing rate in bytes/s). `None` for other controllers.
    pub fn bbr_state(&self) -> Option<(BbrMode, f64, Option<Dur>, f64, u64)> {
        let b = self.cc.bbr()?;
        Some((b.mode(), b.max_bw(), b.min_rtt(), b.pacing_gain(), self.cc.pacing_rate().unwrap_or(0)))
    }

    /// Passive open on receipt of `syn` (a SYN without ACK addressed to us). Returns `None` for
    /// anything else. The first `poll_transmit` is the SYN-ACK.
    pub fn accept(cfg: TcpConfig, syn: &Packet, iss: u32, now: Time) -> Option<Connection> {
        let _ = now;
        let t = syn.tcp()?;
        if !t.flags.contains(TcpFlags::SYN) || t.flags.contains(TcpFlags::ACK) || t.flags.contains(TcpFlags::RST) {
            return None;
        }
        let local = SocketAddr::new(syn.ip.dst, t.dport);
        let remote = SocketAddr::new(syn.ip.src, t.sport);
        let mut c = Connection::new(cfg, local, remote, iss, TcpState::SynReceived);
        c.irs = t.seq.0;
        c.negotiate(t, true);
        if let Some((tsval, _)) = t.opts.timestamps {
            c.ts_recent = tsval;
        }
        c.rwnd = t.window as u64; // never scaled in a SYN
        c.rwnd_max = c.rwnd;
        c.last_wnd_raw = t.window;
        Some(c)
    }

    /// Option negotiation from the peer's SYN (`is_syn`) or SYN-ACK.
    fn negotiate(&mut self, t: &TcpHdr, is_syn: bool) {
        let peer_mss = t.opts.mss.map(|m| m as u64).unwrap_or(536).max(1);
        self.mss = self.mss.min(peer_mss);
        self.rcv_mss = 536.min(self.mss);
        if let (Some(ours), Some(theirs)) = (self.cfg.wscale, t.opts.wscale) {
            self.rcv_shift = ours.min(14);
            self.snd_shift = theirs.min(14);
            self.ws_negotiated = true;
        }
        self.sack_ok = self.cfg.sack && t.opts.sack_permitted;
        self.ts_ok = self.cfg.timestamps && t.opts.timestamps.is_some();
        self.ecn_ok = self.cfg.ecn
            && if is_syn {
                t.flags.contains(TcpFlags::ECE) && t.flags.contains(TcpFlags::CWR)
            } else {
                t.flags.contains(TcpFlags::ECE) && !t.flags.contains(TcpFlags::CWR)
            };
        self.cwnd = self.mss * self.cfg.initial_window.max(1) as u64;
    }

    /// Append `n` bytes to the send stream (content: zeros unless `carry_payload`, then a
    /// deterministic pattern — use `write_bytes` to choose content).
    ///
    /// The pattern is [`super::pattern_byte`] of the stream offset. Writes after `close` are ignored.
    pub fn write(&mut self, n: u64) {
        if self.fin_queued {
            return;
        }
        self.sb.write(n);
        self.burst = 0;
    }

    /// Append explicit bytes to the send stream (requires `carry_payload`; without it only the
    /// length counts).
    pub fn write_bytes(&mut self, data: Bytes) {
        if self.fin_queued {
            return;
        }
        self.sb.write_bytes(data);
        self.burst = 0;
    }

    /// Send FIN once all written data has been sent.
    pub fn close(&mut self) {
        if !self.fin_queued {
            self.fin_queued = true;
            self.burst = 0;
        }
    }

    // ------------------------------------------------------------------ helpers

    #[inline]
    fn snd_seq(&self, off: u64) -> SeqNum {
        SeqNum(self.iss.wrapping_add(1).wrapping_add(off as u32))
    }
    #[inline]
    fn rcv_seq(&self, off: u64) -> SeqNum {
        SeqNum(self.irs.wrapping_add(1).wrapping_add(off as u32))
    }
    /// Wire ACK number → sending-stream offset (may be negative / beyond nxt).
    #[inline]
    fn ack_off(&self, ack: SeqNum) -> i64 {
        self.una as i64 + ack.diff(self.snd_seq(self.una)) as i64
    }
    /// Wire sequence number → receiving-stream offset.
    #[inline]
    fn seg_off(&self, seq: SeqNum) -> i64 {
        self.rcv_nxt as i64 + seq.diff(self.rcv_seq(self.rcv_nxt)) as i64
    }
    /// End of our sequence space: data plus the FIN if queued.
    #[inline]
    fn seq_end(&self) -> u64 {
        self.sb.written + self.fin_queued as u64
    }
    #[inline]
    fn sack_recovery(&self) -> bool {
        self.sack_ok && self.recovery == LossRecovery::Sack
    }
    /// `ns2_recovery` with SACK-based recovery: ns-2's `Sack1TcpAgent` rules.
    #[inline]
    fn ns2_sack(&self) -> bool {
        self.cfg.ns2_recovery && self.sack_recovery()
    }
    #[inline]
    fn can_send_data_state(&self) -> bool {
        matches!(
            self.state,
            TcpState::Established | TcpState::CloseWait | TcpState::FinWait1 | TcpState::Closing | TcpState::LastAck
        )
    }
    #[inline]
    fn cwnd_cap(&self) -> u64 {
        if self.cfg.max_cwnd_bytes > 0 {
            self.cfg.max_cwnd_bytes.max(self.mss)
        } else {
            CWND_CAP
        }
    }
    fn push_event(&mut self, ev: TcpEvent) {
        if let TcpEvent::Delivered { bytes } = ev {
            if let Some(TcpEvent::Delivered { bytes: b }) = self.events.back_mut() {
                *b += bytes;
                return;
            }
        }
        if ev == TcpEvent::AllAcked && self.events.back() == Some(&TcpEvent::AllAcked) {
            return;
        }
        self.events.push_back(ev);
    }

    /// Presumed-lost boundary: un-SACKed bytes in `[una, B)` are lost (RFC 6675 IsLost during
    /// SACK recovery; everything outstanding at an RTO / Tahoe fast retransmit).
    #[inline]
    fn lost_boundary(&self) -> u64 {
        let mut b = self.una;
        if self.rto_lost_to > b {
            b = self.rto_lost_to;
        }
        if self.rec == Recovery::Sack {
            // ns-2 `ScoreBoardRQ::GetNextRetran`: every hole below the highest SACKed segment
            // is due for retransmission (no DupThresh rule).
            let thresh = if self.cfg.ns2_recovery { 0 } else { (self.cfg.dupthresh.max(1) as u64 - 1) * self.mss };
            if let Some(l) = self.sboard.lost_boundary(thresh) {
                b = b.max(l);
            }
        }
        b.min(self.nxt)
    }

    /// Bytes in flight: `nxt − una` normally; RFC 6675 `pipe` during SACK recovery and after
    /// an RTO (SACKed and presumed-lost bytes excluded, retransmitted bytes included).
    fn flight(&self) -> u64 {
        if self.rec == Recovery::Sack && self.cfg.ns2_recovery {
            // `Sack1TcpAgent::send_much` sends while `pipe_ < int(cwnd_)`.
            return self.ns2_pipe.max(0) as u64 * self.mss;
        }
        if self.rto_lost_to <= self.una && self.rec != Recovery::Sack {
            return self.nxt - self.una;
        }
        let b = self.lost_boundary().max(self.una);
        let r = self.rtx_ptr.clamp(self.una, self.nxt);
        (self.nxt - b) - self.sboard.sacked_in(b, self.nxt) + (r - self.una) - self.sboard.sacked_in(self.una, r)
    }

    fn arm_rto(&mut self, now: Time) {
        if self.drive == Drive::Virtual {
            return; // a virtual flow's timeouts come from the actual flows
        }
        self.rtx_deadline = Some(self.rtt.deadline(now, self.rtt.rto()));
    }

    /// The window lent to the controller.
    #[inline]
    fn window(&self) -> Window {
        Window { cwnd: self.cwnd, ssthresh: self.ssthresh, mss: self.mss, cap: self.cwnd_cap(), rwnd: self.rwnd }
    }

    /// The controller's slow-start threshold for a congestion event with `flight` bytes out.
    fn cc_ssthresh(&mut self, flight: u64) -> u64 {
        let w = self.window();
        self.cc.ssthresh(&w, flight)
    }

    /// Feed an RTT sample; `una` is SND.UNA with the sampled ACK applied.
    fn rtt_sample(&mut self, now: Time, r: Dur, una: u64) {
        let at = SampleAt { cwnd_segments: self.cwnd / self.mss.max(1), una, nxt: self.nxt };
        self.rtt.sample(now, r, at);
        let s = &mut self.stats;
        s.rtt_samples += 1;
        s.rtt_sum_ns += r.0;
        s.rtt_min_ns = if s.rtt_samples == 1 { r.0 } else { s.rtt_min_ns.min(r.0) };
        s.rtt_max_ns = s.rtt_max_ns.max(r.0);
    }

    // ------------------------------------------------------------------ input

    /// A segment for this connection arrived.
    pub fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        let Some(t) = pkt.tcp() else { return };
        if self.state == TcpState::Closed {
            // RFC 793 reset generation for a closed connection (e.g. the peer retransmits its
            // FIN after our short TIME_WAIT ended).
            if !t.flags.contains(TcpFlags::RST) {
                self.rst_pending = Some(if t.flags.contains(TcpFlags::ACK) {
                    (t.ack, None)
                } else {
                    let len = pkt.payload_len
                        + t.flags.contains(TcpFlags::SYN) as u32
                        + t.flags.contains(TcpFlags::FIN) as u32;
                    (SeqNum(0), Some(t.seq + len))
                });
            }
            return;
        }
        if t.flags.contains(TcpFlags::RST) {
            // Minimal RST handling: accept a reset whose sequence number is in the window.
            let ok = match self.state {
                TcpState::SynSent => t.flags.contains(TcpFlags::ACK) && t.ack == self.snd_seq(0),
                _ => {
                    let o = self.seg_off(t.seq);
                    o >= self.rcv_nxt as i64 && o <= self.adv_edge.max(self.rcv_nxt + 1) as i64
                }
            };
            if ok {
                self.enter_closed();
            }
            return;
        }
        match self.state {
            TcpState::SynSent => {
                if t.flags.contains(TcpFlags::SYN) && t.flags.contains(TcpFlags::ACK) && t.ack == self.snd_seq(0) {
                    self.irs = t.seq.0;
                    self.negotiate(t, false);
                    if let Some((tsval, tsecr)) = t.opts.timestamps.filter(|_| self.ts_ok) {
                        self.ts_recent = tsval;
                        if tsecr != 0 && self.syn_retx == 0 {
                            self.rtt_sample(now, Dur(ts_now(now).wrapping_sub(tsecr) as u64 * 1000), 0);
                        }
                    } else if let (Some(t0), 0) = (self.syn_sent_at, self.syn_retx) {
                        self.rtt_sample(now, now.since(t0), 0);
                    }
                    self.rwnd = t.window as u64;
                    self.rwnd_max = self.rwnd;
                    self.last_wnd_raw = t.window;
                    self.wl1 = 0;
                    self.wl2 = 0;
                    self.rtx_deadline = None;
                    self.state = TcpState::Established;
                    self.push_event(TcpEvent::Established);
                    self.imm_acks += 1;
                    self.burst = 0;
                }
                return;
            }
            TcpState::SynReceived => {
                if t.flags.contains(TcpFlags::SYN) && !t.flags.contains(TcpFlags::ACK) {
                    // Our SYN-ACK was lost: send it again.
                    self.syn_pending = true;
                    return;
                }
                // The handshake completes on an ACK of our SYN (ack_off 0).
                if !t.flags.contains(TcpFlags::ACK) || self.ack_off(t.ack) != 0 {
                    return;
                }
                if self.syn_retx == 0 {
                    if let Some((_, tsecr)) = t.opts.timestamps.filter(|x| self.ts_ok && x.1 != 0) {
                        self.rtt_sample(now, Dur(ts_now(now).wrapping_sub(tsecr) as u64 * 1000), 0);
                    } else if let Some(t0) = self.syn_sent_at {
                        self.rtt_sample(now, now.since(t0), 0);
                    }
                }
                self.rtx_deadline = None;
                self.state = TcpState::Established;
                self.wl1 = 0;
                self.wl2 = 0;
                self.push_event(TcpEvent::Established);
                self.burst = 0;
                // Fall through: the ACK may carry data.
            }
            _ => {}
        }
        if t.flags.contains(TcpFlags::SYN) {
            // Retransmitted SYN-ACK (our ACK was lost): ACK it again.
            self.imm_acks += 1;
            return;
        }

        let seg = self.seg_off(t.seq);
        // RFC 7323 TS.Recent update: only from a segment covering the left edge of what we ACKed.
        if self.ts_ok {
            if let Some((tsval, _)) = t.opts.timestamps {
                if seg <= self.last_ack_sent as i64 + self.peer_fin_rcvd as i64
                    && (tsval.wrapping_sub(self.ts_recent) as i32) >= 0
                {
                    self.ts_recent = tsval;
                }
            }
        }
        if t.flags.contains(TcpFlags::ACK) {
            self.on_ack(now, t, pkt);
        }
        if self.state == TcpState::Closed {
            return;
        }
        // ECN receiver side: CWR ends the echo, then CE (re)starts it.
        if self.ecn_ok {
            if t.flags.contains(TcpFlags::CWR) {
                self.ece_pending = false;
            }
            if pkt.ip.ecn == Ecn::Ce && pkt.payload_len > 0 {
                self.stats.ce_rcvd += 1;
                self.ece_pending = true;
                self.imm_acks = self.imm_acks.max(1);
            }
        }
        self.on_data(now, seg, t, pkt);
    }

    /// The sending half's ACK processing.
    fn on_ack(&mut self, now: Time, t: &TcpHdr, pkt: &Packet) {
        let ack = self.ack_off(t.ack);
        if ack < self.una as i64 || ack > self.nxt as i64 {
            return; // old or acknowledges unsent data
        }
        let ack = ack as u64;
        let flight_before = self.flight();
        // Window update (RFC 793 SND.WL1/WL2 rule).
        let seg = self.seg_off(t.seq);
        let window_changed = t.window != self.last_wnd_raw;
        let nwin = (t.window as u64) << self.snd_shift;
        let same = seg == self.wl1 && ack == self.wl2;
        let accept = match self.cfg.window_update {
            WindowUpdate::Rfc793 => seg > self.wl1 || (seg == self.wl1 && ack >= self.wl2),
            WindowUpdate::Bsd => seg > self.wl1 || (seg == self.wl1 && ack > self.wl2) || (same && nwin > self.rwnd),
        };
        if accept {
            if nwin == 0 && self.rwnd > 0 {
                self.stats.zero_windows += 1;
                self.zero_since = Some(now);
            } else if nwin > 0 {
                if let Some(t0) = self.zero_since.take() {
                    self.stats.zero_window_ns += now.since(t0).0;
                }
            }
            self.rwnd = nwin;
            self.rwnd_max = self.rwnd_max.max(self.rwnd);
            self.wl1 = seg;
            self.wl2 = ack;
            self.last_wnd_raw = t.window;
        }
        if self.una == self.nxt {
            // Nothing outstanding: the only timer could be the persist timer; poll_transmit
            // re-arms it (with the current backoff) if the window still does not allow sending.
            self.rtx_deadline = None;
        }
        // SACK information.
        let mut sacks = [(0u64, 0u64); 4];
        let mut ns = 0;
        // Only the SACK-based senders keep a scoreboard: Tahoe/Reno/NewReno ignore SACK blocks
        // (ns-2-style classic variants), even when SACK was negotiated.
        if self.sack_recovery() && t.opts.sack_len > 0 {
            for b in t.opts.sack_blocks() {
                let l = self.ack_off(b.left).max(ack as i64);
                let r = self.ack_off(b.right).min(self.nxt as i64);
                if l < r && ns < sacks.len() {
                    sacks[ns] = (l as u64, r as u64);
                    ns += 1;
                }
            }
        }
        let dup_eligible =
            pkt.payload_len == 0 && t.flags.0 & (TcpFlags::SYN.0 | TcpFlags::FIN.0) == 0 && !window_changed;
        let tsecr = if self.ts_ok { t.opts.timestamps.map(|x| x.1) } else { None };
        let lost_from = if self.rate.is_some() { self.lost_boundary().max(self.una) } else { 0 };
        self.process_ack(now, ack, &sacks[..ns], dup_eligible, tsecr, flight_before);

        // ECN-Echo: reduce once per window of data, as on loss but without retransmitting.
        if self.ecn_ok && t.flags.contains(TcpFlags::ECE) {
            self.on_ece();
        }
        if self.rate.is_some() {
            self.cong_control(now, &sacks[..ns], flight_before, lost_from);
        }
    }

    /// A rate-based controller's turn on every ACK (Linux `tcp_cong_control` after
    /// `tcp_rate_gen`): deliver the ACKed and SACKed segments to the rate estimator, count the
    /// bytes newly presumed lost (above `lost_from`), and let the controller set cwnd.
    fn cong_control(&mut self, now: Time, sacks: &[(u64, u64)], flight_before: u64, lost_from: u64) {
        let b = self.lost_boundary();
        let from = lost_from.max(self.una);
        let losses = if b > from { (b - from) - self.sboard.sacked_in(from, b) } else { 0 };
        let una = self.una;
        let Some(r) = self.rate.as_deref_mut() else { return };
        for &(l, e) in sacks {
            r.on_sack(l, e);
        }
        r.on_cum_ack(una);
        let rs = r.generate(now, flight_before, losses);
        let ca_state = if self.rec != Recovery::None {
            CaState::Recovery
        } else if self.rto_lost_to > self.una {
            CaState::Loss
        } else {
            CaState::Open
        };
        let a = Ack {
            now,
            acked: rs.acked_sacked,
            flight_before,
            flight_after: self.flight(),
            srtt: self.rtt.srtt(),
            ca_state,
            rate: Some(rs),
        };
        let mut w = self.window();
        self.cc.cong_control(&mut w, &a);
        (self.cwnd, self.ssthresh) = (w.cwnd, w.ssthresh);
    }

    /// The congestion-control part of an acceptable ACK (`una ≤ ack ≤ nxt`), in stream offsets:
    /// SACK blocks (already clipped to `[ack, nxt)`), whether it may count as a duplicate ACK,
    /// the echoed timestamp, and the flight before the ACK.
    fn process_ack(
        &mut self,
        now: Time,
        ack: u64,
        sacks: &[(u64, u64)],
        dup_eligible: bool,
        tsecr: Option<u32>,
        flight_before: u64,
    ) {
        // `max_burst` counts segments sent in answer to one ACK, duplicate ACKs included.
        self.burst = 0;
        self.entry_hold = false;
        if self.ns2_sack() {
            if self.rec == Recovery::Sack {
                // `Sack1TcpAgent::recv` in fast recovery: `--pipe_` for every ACK.
                self.ns2_pipe -= 1;
            } else if ack > self.una {
                // Outside recovery a new ACK clears the scoreboard without reading its SACK
                // blocks (`scb_->ClearScoreBoard()`) and ends `timeout_`.
                self.sboard.clear();
                self.ns2_after_timeout = false;
                self.on_new_ack(now, tsecr, ack, flight_before);
                return;
            } else if self.ns2_after_timeout {
                // `timeout_`: duplicate ACKs are ignored until a new ACK arrives.
                return;
            }
        }
        let mut newly_sacked = 0;
        for &(l, r) in sacks {
            newly_sacked += self.sboard.add(l, r);
        }
        self.sboard.advance(ack);

        if ack > self.una {
            self.on_new_ack(now, tsecr, ack, flight_before);
        } else if ack == self.una && self.nxt > self.una && dup_eligible {
            self.on_dupack(now, newly_sacked);
        } else if newly_sacked > 0 {
            self.maybe_sack_recovery(now);
        }
    }

    fn on_ece(&mut self) {
        self.stats.ece_rcvd += 1;
        if self.rec == Recovery::None && self.una >= self.ecn_recover && self.rto_lost_to <= self.una {
            let reduces = self.cc.reduces();
            // BBR v1 has no ECN response (`tcp_bbr.c` sets cwnd on every ACK regardless).
            if !self.cc.controls_cwnd() && (reduces || self.cfg.misbehaving_ecn_response) {
                let fl = self.nxt - self.una;
                self.ssthresh = if reduces { self.cc_ssthresh(fl) } else { (fl / 2).max(2 * self.mss) };
                self.cwnd = self.ssthresh;
                self.stats.cwnd_reductions += 1;
                self.stats.ecn_reductions += 1;
                self.cwr_pending = true;
            }
            self.ecn_recover = self.nxt.max(self.una + 1);
        }
    }

    fn on_new_ack(&mut self, now: Time, tsecr: Option<u32>, ack: u64, flight_before: u64) {
        let newly = ack - self.una;
        let fin_in = self.fin_queued && ack > self.sb.written && self.una <= self.sb.written;
        let data_acked = newly - fin_in as u64;
        self.stats.bytes_acked += data_acked;
        // RTT sample: timestamps (RFC 7323) or one timed segment (Karn: never a retransmission).
        if self.ts_ok {
            if let Some(tsecr) = tsecr {
                if tsecr != 0 {
                    let us = ts_now(now).wrapping_sub(tsecr);
                    if (us as i32) >= 0 {
                        self.rtt_sample(now, Dur(us as u64 * 1000), ack);
                    }
                }
            }
        } else if let Some((end, t0)) = self.rtt_timing {
            if ack >= end {
                let partial = self.cfg.ns2_recovery
                    && self.rec != Recovery::None
                    && !(self.rec == Recovery::Fast && self.recovery == LossRecovery::Reno)
                    && self.recover.is_some_and(|r| ack < r);
                if !partial {
                    self.rtt_sample(now, now.since(t0), ack);
                    self.rtt_timing = None;
                } else if self.rec == Recovery::Fast {
                    // ns-2 `NewRenoTcpAgent::partialnewack`: the timed segment is acknowledged,
                    // timing stops (`rtt_active_ = 0`, `t_backoff_ = 1`) but no sample is taken.
                    // (`Sack1TcpAgent` keeps timing through recovery: only `newack` samples.)
                    self.rtt_timing = None;
                    self.rtt.reset_backoff();
                }
            }
        }
        self.una = ack;
        self.sb.release(ack.min(self.sb.written));
        if self.rtx_ptr < ack {
            self.rtx_ptr = ack;
        }
        if matches!(self.pending_rtx, Some(p) if p < ack) {
            self.pending_rtx = None;
        }
        self.dupacks = 0;
        self.consecutive_rtos = 0;
        self.burst = 0;
        let mss = self.mss;
        let mut restart_timer = true;

        match self.rec {
            Recovery::Fast => {
                let full = self.recover.is_none_or(|r| ack >= r);
                let reno = self.recovery == LossRecovery::Reno;
                if (reno || full) && self.cfg.ns2_recovery && self.cc.reduces() {
                    // ns-2 `RenoTcpAgent::recv` / `NewRenoTcpAgent::recv` (`exit_recovery_fix_ 0`):
                    // `dupwnd_ = 0`, `cwnd_` kept as it stands, then `recv_newack_helper` →
                    // `opencwnd()` grows it for this ACK.
                    self.rec = Recovery::None;
                    self.cwnd = self.cwnd.saturating_sub(self.ns2_dupwnd).max(1);
                    self.ns2_dupwnd = 0;
                    self.grow_cwnd(now, data_acked.max(newly.min(1)), flight_before);
                } else if reno || full {
                    // Reno exits on any new ACK; NewReno on a full ACK (RFC 6582 option 1).
                    self.rec = Recovery::None;
                    self.cwnd = if !self.cc.reduces() {
                        self.cwnd
                    } else if reno {
                        self.ssthresh
                    } else {
                        let fl = self.nxt - self.una;
                        self.ssthresh.min(fl.max(mss) + mss)
                    };
                } else {
                    // NewReno partial ACK: retransmit the next hole, deflate, stay in recovery.
                    self.stats.partial_acks += 1;
                    self.pending_rtx = Some(ack);
                    if self.cfg.ns2_recovery && self.cc.reduces() {
                        // ns-2 `NewRenoTcpAgent::partialnewack` (`partial_window_deflation_ 1`),
                        // with deflate = the newly acknowledged data: if `dupwnd_ > deflate`,
                        // `dupwnd_ -= deflate − 1`; else `cwnd_ -= deflate − dupwnd_`,
                        // `dupwnd_ = 1`; `cwnd_ ≥ 1`.
                        let mut base = self.cwnd.saturating_sub(self.ns2_dupwnd);
                        if self.ns2_dupwnd > newly {
                            self.ns2_dupwnd = self.ns2_dupwnd + mss - newly;
                        } else {
                            base = base.saturating_sub(newly - self.ns2_dupwnd).max(mss);
                            self.ns2_dupwnd = mss;
                        }
                        self.cwnd = base + self.ns2_dupwnd;
                    } else if self.cc.reduces() {
                        self.cwnd = self.cwnd.saturating_sub(newly);
                        if newly >= mss {
                            self.cwnd += mss;
                        }
                        self.cwnd = self.cwnd.max(mss);
                    }
                    restart_timer = self.first_partial;
                    self.first_partial = false;
                }
            }
            Recovery::Sack => {
                if self.recover.is_none_or(|r| ack >= r) {
                    self.rec = Recovery::None;
                    self.rtx_ptr = ack;
                    if self.cfg.ns2_recovery {
                        // `Sack1TcpAgent::recv`, ACK ending fast recovery: `recover_ = 0`,
                        // `newack()` only (no window growth), scoreboard cleared.
                        self.recover = None;
                        self.sboard.clear();
                        self.ns2_after_timeout = false;
                    }
                } else {
                    self.stats.partial_acks += 1;
                    if self.cfg.ns2_recovery {
                        // Partial ACK (`partial_ack_ false`): `--pipe_` once more, `newtimer`,
                        // `t_backoff_ = 1`.
                        self.ns2_pipe -= 1;
                        self.rtt.reset_backoff();
                    }
                }
            }
            Recovery::None => self.grow_cwnd(now, data_acked.max(newly.min(1)), flight_before),
        }

        if self.una >= self.nxt {
            self.rtx_deadline = None;
        } else if restart_timer {
            self.arm_rto(now);
        }
        if data_acked > 0 && self.una >= self.sb.written {
            self.push_event(TcpEvent::AllAcked);
        }
        // Our FIN acknowledged?
        if self.fin_queued && self.una > self.sb.written {
            match self.state {
                TcpState::FinWait1 => self.state = TcpState::FinWait2,
                TcpState::Closing => self.enter_time_wait(now),
                TcpState::LastAck => self.enter_closed(),
                _ => {}
            }
        }
        if self.rec == Recovery::None && self.sack_recovery() && !self.sboard.is_empty() {
            self.maybe_sack_recovery(now);
        }
    }

    /// Congestion-window growth on an ACK of `acked` new bytes outside recovery: the
    /// controller's (Linux `tcp_cong_avoid`).
    fn grow_cwnd(&mut self, now: Time, acked: u64, flight_before: u64) {
        let a = Ack {
            now,
            acked,
            flight_before,
            srtt: self.rtt.srtt(),
            flight_after: self.nxt - self.una,
            ca_state: CaState::Open,
            rate: None,
        };
        let mut w = self.window();
        self.cc.on_ack(&mut w, &a);
        (self.cwnd, self.ssthresh) = (w.cwnd, w.ssthresh);
    }

    fn on_dupack(&mut self, now: Time, newly_sacked: u64) {
        self.stats.dupacks_rcvd += 1;
        if self.ns2_sack() && self.rec == Recovery::None && newly_sacked == 0 {
            // `Sack1TcpAgent::recv`: a duplicate ACK counts only if `scb_->CheckUpdate()`,
            // i.e. its SACK blocks changed the scoreboard.
            return;
        }
        self.dupacks += 1;
        match self.rec {
            Recovery::Fast => {
                // Window inflation (Reno / NewReno); Misbehaving never deflated, so no inflation.
                if self.cc.reduces() && !self.cc.controls_cwnd() {
                    self.cwnd = self.cwnd.saturating_add(self.mss);
                    if self.cfg.ns2_recovery {
                        self.ns2_dupwnd += self.mss; // `++dupwnd_`
                    }
                }
            }
            Recovery::Sack => {}
            Recovery::None => {
                // Never during a go-back-N (after an RTO or Tahoe's fast retransmit): the
                // duplicate ACKs then come from resent segments the receiver already holds.
                if self.dupacks == self.cfg.dupthresh.max(1) && self.rto_lost_to <= self.una {
                    let allowed = if self.cfg.ns2_recovery {
                        // ns-2 `dupack_action` (Reno, NewReno, Sack1) with `bug_fix_`: only if
                        // `highest_ack_ > recover_` (recover_ = maxseq_ at the last fast
                        // retransmit or timeout), or `bugfix_ss_` and `highest_ack_ == 0`. In
                        // stream offsets: SND.UNA beyond that HighData, or no data acked yet.
                        self.una == 0 || self.recover.is_none_or(|r| self.una > r)
                    } else {
                        // Reno and Tahoe have no `recover` guard (RFC 5681); NewReno/SACK do
                        // (RFC 6582 §3.2 step 2).
                        matches!(self.recovery, LossRecovery::Tahoe | LossRecovery::Reno)
                            || self.recover.is_none_or(|r| self.una >= r)
                    };
                    if allowed {
                        self.enter_recovery(now);
                        return;
                    }
                }
                if self.sack_recovery() {
                    self.maybe_sack_recovery(now);
                }
            }
        }
    }

    /// RFC 6675: enter recovery when the first un-ACKed byte is deemed lost by SACK info.
    fn maybe_sack_recovery(&mut self, now: Time) {
        // ns-2's Sack1 enters recovery only on the third counted duplicate ACK (`on_dupack`).
        if self.rec != Recovery::None || !self.sack_recovery() || self.rto_lost_to > self.una || self.cfg.ns2_recovery {
            return;
        }
        if self.recover.is_some_and(|r| self.una < r) {
            return;
        }
        let thresh = (self.cfg.dupthresh.max(1) as u64 - 1) * self.mss;
        if self.sboard.lost_boundary(thresh).is_some_and(|b| b > self.una) {
            self.enter_recovery(now);
        }
    }

    fn enter_recovery(&mut self, now: Time) {
        self.stats.fast_retransmits += 1;
        self.push_event(TcpEvent::FastRetransmit { seq: self.snd_seq(self.una) });
        let flight = self.nxt - self.una;
        self.recover = Some(self.nxt);
        if self.cfg.rto_restart_on_fast_retransmit {
            // ns-2 `dupack_action`: `reset_rtx_timer(1, 0)` re-arms the timer (no backoff).
            self.arm_rto(now);
        }
        if self.cfg.ns2_recovery {
            self.rtt_timing = None; // `reset_rtx_timer`: `rtt_active_ = 0`
        }
        // ns-2 `slowdown(CLOSE_CWND_HALF)` with `precisionReduce_`: cwnd_ = windowd() / 2,
        // not rounded and not raised to ssthresh_.
        let half = self.cfg.ns2_slowdown.then(|| self.cwnd.min(self.rwnd.max(self.mss)) / 2);
        let misbehaving = !self.cc.reduces();
        if !misbehaving {
            self.stats.cwnd_reductions += 1;
        }
        match self.recovery {
            LossRecovery::Tahoe => {
                self.ssthresh = (flight / 2).max(2 * self.mss);
                self.cwnd = self.mss;
                self.rto_lost_to = self.nxt;
                self.rtx_ptr = self.una;
                self.rec = Recovery::None;
            }
            _ if self.sack_recovery() => {
                if !misbehaving {
                    self.ssthresh = self.cc_ssthresh(flight);
                    if !self.cc.controls_cwnd() {
                        self.cwnd = half.unwrap_or(self.ssthresh);
                    }
                }
                self.rtx_ptr = self.una;
                self.pending_rtx = Some(self.una);
                self.rec = Recovery::Sack;
                if self.cfg.ns2_recovery {
                    // `Sack1TcpAgent::dupack_action`: `pipe_ = maxseq_ − highest_ack_ −
                    // numdupacks_`; the retransmission goes out with `output()` and nothing else
                    // is sent in answer to this ACK (`send_much` only when `dupacks_ == 0`).
                    self.ns2_pipe = flight.div_ceil(self.mss.max(1)) as i64 - self.cfg.dupthresh as i64;
                    self.entry_hold = true;
                }
            }
            _ => {
                if !misbehaving && self.cc.controls_cwnd() {
                    self.ssthresh = self.cc_ssthresh(flight);
                } else if !misbehaving {
                    self.ssthresh = self.cc_ssthresh(flight);
                    let inflation = self.cfg.dupthresh as u64 * self.mss;
                    self.cwnd = half.unwrap_or(self.ssthresh) + inflation;
                    if self.cfg.ns2_recovery {
                        self.ns2_dupwnd = inflation; // `dupwnd_ = numdupacks_`
                    }
                }
                self.pending_rtx = Some(self.una);
                self.entry_hold = !self.cfg.new_data_on_fast_retransmit;
                self.first_partial = true;
                self.rec = Recovery::Fast;
            }
        }
    }

    /// The receiving half.
    fn on_data(&mut self, now: Time, seg: i64, t: &TcpHdr, pkt: &Packet) {
        let len = pkt.payload_len as i64;
        let fin = t.flags.contains(TcpFlags::FIN);
        let rn = self.rcv_nxt as i64;
        if len == 0 && !fin {
            // A pure ACK. An old sequence number (e.g. a zero-window probe) elicits an ACK.
            if seg < rn + self.peer_fin_rcvd as i64 {
                self.imm_acks += 1;
            }
            return;
        }
        if !matches!(self.state, TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2) {
            // Data or FIN after the peer's FIN (a retransmission): ACK it.
            if self.peer_fin_rcvd {
                self.imm_acks += 1;
                if self.state == TcpState::TimeWait {
                    self.enter_time_wait(now);
                }
            }
            return;
        }
        let end = seg + len;
        if fin && self.peer_fin_off.is_none() && end >= rn {
            self.peer_fin_off = Some(end as u64);
        }
        if len > 0 {
            self.rcv_mss = self.rcv_mss.max(len as u64);
            let limit = self.adv_edge.max(self.rcv_nxt) as i64;
            let s = seg.max(rn);
            let e = end.min(limit);
            if end <= rn {
                self.imm_acks += 1; // duplicate segment → duplicate ACK
            } else if s >= e {
                self.imm_acks += 1; // beyond the window
            } else if s == rn {
                let had_ooo = !self.reasm.is_empty();
                let payload = if self.cfg.carry_payload {
                    pkt.payload.as_ref().map(|p| p.slice((s - seg) as usize..(e - seg) as usize))
                } else {
                    None
                };
                if let Some(p) = payload {
                    self.read_q.push_back(p);
                }
                let mut nxt = e as u64;
                if had_ooo {
                    let q = &mut self.read_q;
                    nxt = self.reasm.advance(nxt, |b| q.push_back(b));
                }
                let delivered = nxt - self.rcv_nxt;
                self.rcv_nxt = nxt;
                self.stats.bytes_delivered += delivered;
                self.push_event(TcpEvent::Delivered { bytes: delivered });
                self.unacked_bytes += delivered;
                let every = self.cfg.delack.every.max(1) as u64;
                if had_ooo || every <= 1 || self.unacked_bytes >= every * self.rcv_mss {
                    self.imm_acks = self.imm_acks.max(1);
                } else if self.delack_deadline.is_none() {
                    self.delack_deadline = Some(now + self.cfg.delack.timeout);
                }
            } else {
                let payload = if self.cfg.carry_payload {
                    pkt.payload.as_ref().map(|p| p.slice((s - seg) as usize..(e - seg) as usize))
                } else {
                    None
                };
                self.reasm.insert(s as u64, e as u64, payload);
                self.imm_acks += 1; // out of order → immediate (duplicate) ACK with SACK
            }
        }
        if let Some(fo) = self.peer_fin_off {
            if !self.peer_fin_rcvd && self.rcv_nxt == fo {
                self.peer_fin_rcvd = true;
                self.imm_acks = self.imm_acks.max(1);
                self.push_event(TcpEvent::PeerFin);
                match self.state {
                    TcpState::Established => self.state = TcpState::CloseWait,
                    TcpState::FinWait1 => self.state = TcpState::Closing,
                    TcpState::FinWait2 => self.enter_time_wait(now),
                    _ => {}
                }
            } else if fin && !self.peer_fin_rcvd {
                self.imm_acks = self.imm_acks.max(1);
            }
        }
    }

    fn enter_time_wait(&mut self, now: Time) {
        self.state = TcpState::TimeWait;
        let srtt = self.rtt.srtt().unwrap_or(Dur::ZERO).max(Dur::from_millis(1));
        self.tw_deadline = Some(now + Dur(srtt.0.saturating_mul(2)));
        self.rtx_deadline = None;
        self.delack_deadline = None;
    }

    fn enter_closed(&mut self) {
        if self.state != TcpState::Closed {
            self.state = TcpState::Closed;
            self.rtx_deadline = None;
            self.delack_deadline = None;
            self.tw_deadline = None;
            self.push_event(TcpEvent::Closed);
        }
    }

    // ------------------------------------------------------------------ output

    /// Next segment to send now, if any (data, retransmission, ACK, SYN, FIN).
    pub fn poll_transmit(&mut self, now: Time) -> Option<Packet> {
        match self.state {
            TcpState::Closed => {
                let (seq, ack) = self.rst_pending.take()?;
                let mut flags = TcpFlags::RST;
                if ack.is_some() {
                    flags.insert(TcpFlags::ACK);
                }
                let tcp = TcpHdr {
                    sport: self.local.port(),
                    dport: self.remote.port(),
                    seq,
                    ack: ack.unwrap_or_default(),
                    flags,
                    window: 0,
                    urgent: 0,
                    opts: TcpOptions::default(),
                };
                self.stats.segs_sent += 1;
                return Some(Packet { ip: self.ip_hdr(Ecn::NotEct), l4: L4::Tcp(tcp), payload_len: 0, payload: None });
            }
            TcpState::SynSent | TcpState::SynReceived => {
                if self.syn_pending {
                    self.syn_pending = false;
                    return Some(self.build_syn(now));
                }
                return None;
            }
            _ => {}
        }
        if self.can_send_data_state() {
            if let Some(p) = self.next_data_segment(now) {
                return Some(p);
            }
            if self.rate.is_some() && self.nxt >= self.sb.written && self.pace_wake.is_none() {
                // `tcp_rate_check_app_limited`: nothing left to send while the window has room.
                let flight = self.flight();
                if flight < self.cwnd && !self.lost_pending() {
                    if let Some(r) = self.rate.as_deref_mut() {
                        r.set_app_limited(flight);
                    }
                }
            }
            if self.probe_pending {
                self.probe_pending = false;
                self.stats.persist_probes += 1;
                // Like Linux's tcp_write_wakeup: if the window allows part of a segment, send
                // that much new data; if it is zero, a probe with an old sequence number.
                let edge = self.una + self.rwnd;
                if edge > self.nxt && self.nxt < self.sb.written {
                    let e = self.sb.written.min(self.nxt + self.mss).min(edge);
                    let s = self.nxt;
                    return Some(self.emit(now, s, e));
                }
                let seq = self.snd_seq(self.una) - 1;
                return Some(self.build(now, seq, TcpFlags::ACK, 0, None, false));
            }
            // Persist timer: data waiting, nothing in flight, and the peer's window too small
            // to send (RFC 1122 §4.2.2.17) — not a VPS actual flow waiting for a permit, whose
            // timer would otherwise run before its next segment is sent and fire spuriously.
            if self.rtx_deadline.is_none()
                && self.una == self.nxt
                && self.nxt < self.seq_end()
                && (self.drive != Drive::External || !self.can_send_new())
            {
                self.arm_rto(now);
            }
        }
        if self.imm_acks > 0 || (self.delack_deadline.is_some_and(|d| d <= now)) {
            self.stats.acks_sent += 1;
            let seq = self.snd_seq(self.nxt);
            return Some(self.build(now, seq, TcpFlags::ACK, 0, None, false));
        }
        None
    }

    fn next_data_segment(&mut self, now: Time) -> Option<Packet> {
        let end = self.seq_end();
        if self.una >= end {
            return None;
        }
        let mss = self.mss;
        if self.paced && now < self.pace_next {
            // Pacing (Linux's internal pacing, `tcp_pacing_check`): every data segment waits
            // for its departure time.
            self.pace_wake = Some(self.pace_next);
            return None;
        }
        // 1. One-shot retransmission (fast retransmit, NewReno partial ACK): ignores cwnd.
        if let Some(s) = self.pending_rtx.take() {
            if s >= self.una && s < self.nxt {
                if let Some((s, he)) = self.sboard.next_hole(s, self.nxt) {
                    let e = he.min(s + mss);
                    if (self.rec == Recovery::Sack || self.rto_lost_to > self.una) && e > self.rtx_ptr {
                        self.rtx_ptr = e;
                    }
                    let (burst, pipe) = (self.burst, self.ns2_pipe);
                    let p = self.emit(now, s, e);
                    if self.cfg.ns2_recovery {
                        // ns-2 sends it with `output()`, outside `send_much`: it counts neither
                        // towards `maxburst` nor (Sack1) towards `pipe_`.
                        self.burst = burst;
                        self.ns2_pipe = pipe;
                    }
                    return Some(p);
                }
            }
        }
        if self.entry_hold {
            return None;
        }
        // ns-2 `NewRenoTcpAgent::recv`: during fast recovery `send_much(0, 0, 2)`.
        let max_burst = if self.cfg.ns2_recovery && self.rec == Recovery::Fast && self.recovery == LossRecovery::NewReno
        {
            2
        } else {
            self.cfg.max_burst
        };
        if max_burst > 0 && self.burst >= max_burst {
            return None;
        }
        let flight = self.flight();
        let ext = self.drive == Drive::External;
        // An External sender has no congestion window: permits gate it instead.
        let cwnd = if ext { u64::MAX / 4 } else { self.cwnd.min(self.cwnd_cap()).max(mss) };
        // 2. Retransmit presumed-lost data (go-back-N after RTO; RFC 6675 NextSeg rule 1).
        let b = self.lost_boundary();
        if b > self.una && (!ext || self.permit & PERMIT_RTX != 0) {
            let from = self.rtx_ptr.max(self.una);
            if let Some((s, he)) = self.sboard.next_hole(from, b) {
                let e = he.min(s + mss);
                if flight + (e - s) > cwnd && flight > 0 {
                    return None;
                }
                self.rtx_ptr = e;
                self.permit = 0;
                return Some(self.emit(now, s, e));
            }
        }
        if ext && self.permit & PERMIT_NEW == 0 {
            return self.sack_rule3(now, flight, cwnd);
        }
        // 3. New data.
        if self.nxt < end {
            let written = self.sb.written;
            let mut e = written.min(self.nxt + mss);
            let len = e - self.nxt;
            if len > 0 {
                let edge = self.una + self.rwnd;
                if e > edge {
                    let allowed = edge.saturating_sub(self.nxt);
                    // Sender-side SWS avoidance (RFC 1122): a partial segment only if it is at
                    // least half the largest window the peer ever offered.
                    if allowed == 0 || allowed < (self.rwnd_max / 2).max(1) {
                        return self.sack_rule3(now, flight, cwnd);
                    }
                    e = self.nxt + allowed;
                }
                let mut lt = 0;
                if self.cfg.limited_transmit && self.rec == Recovery::None {
                    lt = self.dupacks.min(2) as u64 * mss;
                }
                if flight > 0 && flight + (e - self.nxt) > cwnd + lt {
                    return self.sack_rule3(now, flight, cwnd);
                }
            }
            if e == written && self.fin_queued {
                e += 1; // FIN rides on the last data segment (or goes alone)
            }
            if e > self.nxt {
                let s = self.nxt;
                self.permit = 0;
                return Some(self.emit(now, s, e));
            }
        }
        self.sack_rule3(now, flight, cwnd)
    }

    /// RFC 6675 NextSeg rule 3: during SACK recovery with no new data to send, retransmit an
    /// un-SACKed, not-yet-retransmitted segment below the highest SACKed byte.
    ///
    /// Then rule 4 (rescue retransmission, if `rescue_retransmission`): once per recovery,
    /// the segment holding the highest outstanding un-SACKed byte; HighRxt is not updated.
    fn sack_rule3(&mut self, now: Time, flight: u64, cwnd: u64) -> Option<Packet> {
        if self.rec != Recovery::Sack || (self.drive == Drive::External && self.permit & PERMIT_RTX == 0) {
            return None;
        }
        self.permit = 0;
        if let Some(hi) = self.sboard.highest() {
            let from = self.rtx_ptr.max(self.una);
            if let Some((s, he)) = self.sboard.next_hole(from, hi) {
                let e = he.min(s + self.mss);
                if flight + (e - s) > cwnd {
                    return None;
                }
                self.rtx_ptr = e;
                return Some(self.emit(now, s, e));
            }
        }
        if !self.cfg.rescue_retransmission || self.rescue_rxt.is_some_and(|r| self.una < r) {
            return None;
        }
        let (hs, e) = self.sboard.last_hole(self.una, self.nxt)?;
        let s = hs.max(e.saturating_sub(self.mss));
        if flight + (e - s) > cwnd {
            return None;
        }
        self.rescue_rxt = self.recover;
        self.stats.rescue_retrans += 1;
        Some(self.emit(now, s, e))
    }

    /// Build and account for the data/FIN segment covering sequence offsets `[s, e)`.
    fn emit(&mut self, now: Time, s: u64, e: u64) -> Packet {
        let written = self.sb.written;
        let data_end = e.min(written);
        let len = data_end.saturating_sub(s);
        let fin = self.fin_queued && e > written;
        let rtx = s < self.nxt;
        let mut flags = TcpFlags::ACK;
        if fin {
            flags.insert(TcpFlags::FIN);
        }
        if len > 0 && data_end == written {
            flags.insert(TcpFlags::PSH);
        }
        if self.cwr_pending && !rtx && len > 0 {
            flags.insert(TcpFlags::CWR);
            self.cwr_pending = false;
        }
        let payload = if self.cfg.carry_payload && len > 0 { self.sb.payload(s, data_end) } else { None };
        let ect = self.ecn_ok && len > 0 && !rtx;
        if len > 0 && self.paced {
            // `tcp_update_skb_after_send`: the next departure is len / pacing rate later (the
            // rate of the controller now; Linux's half-segment credit for a late departure is
            // not modelled).
            let nothing_out = self.nxt <= self.una;
            if let Some(r) = self.rate.as_deref_mut() {
                r.on_sent(now, s, data_end, nothing_out, rtx);
            }
            if let Some(rate) = self.cc.pacing_rate() {
                let ns = (len as u128 * 1_000_000_000 / rate.max(1) as u128) as u64;
                self.pace_next = self.pace_next.max(now) + Dur(ns);
            }
            self.pace_wake = None;
        }
        let seq = self.snd_seq(s);
        let p = self.build(now, seq, flags, len as u32, payload, ect);
        if len > 0 {
            self.stats.data_segs_sent += 1;
            self.stats.data_bytes_sent += len;
        }
        if self.rec == Recovery::Sack && self.cfg.ns2_recovery && len > 0 {
            self.ns2_pipe += 1; // `Sack1TcpAgent::send_much`: `pipe_++`
        }
        if rtx {
            if len > 0 {
                self.stats.retrans_segs += 1;
                self.stats.retrans_bytes += len;
                if s == self.una && self.cfg.rto_rearm_on_head_retransmit {
                    // Linux `tcp_xmit_retransmit_queue`: the head's retransmission re-arms the timer.
                    self.arm_rto(now);
                }
            }
            if !self.cfg.ns2_recovery {
                self.rtt_timing = None; // Karn
            }
        } else {
            if !self.ts_ok && self.rtt_timing.is_none() {
                self.rtt_timing = Some((e, now));
            }
            self.nxt = e;
            if fin {
                match self.state {
                    TcpState::Established => self.state = TcpState::FinWait1,
                    TcpState::CloseWait => self.state = TcpState::LastAck,
                    _ => {}
                }
            }
        }
        if self.nxt < e {
            self.nxt = e;
        }
        if self.rtx_deadline.is_none() {
            self.arm_rto(now);
        }
        self.burst += 1;
        p
    }

    fn build_syn(&mut self, now: Time) -> Packet {
        let mut opts = TcpOptions { mss: Some(self.cfg.mss.min(65535) as u16), ..Default::default() };
        let mut flags = TcpFlags::SYN;
        let (seq, ack) = (SeqNum(self.iss), SeqNum(0));
        if self.state == TcpState::SynSent {
            opts.wscale = self.cfg.wscale.map(|w| w.min(14));
            opts.sack_permitted = self.cfg.sack;
            if self.cfg.timestamps {
                opts.timestamps = Some((ts_now(now), 0));
            }
            if self.cfg.ecn {
                flags.insert(TcpFlags::ECE);
                flags.insert(TcpFlags::CWR);
            }
        } else {
            flags.insert(TcpFlags::ACK);
            if self.ws_negotiated {
                opts.wscale = Some(self.rcv_shift);
            }
            opts.sack_permitted = self.sack_ok;
            if self.ts_ok {
                opts.timestamps = Some((ts_now(now), self.ts_recent));
            }
            if self.ecn_ok {
                flags.insert(TcpFlags::ECE);
            }
        }
        let window = self.cfg.rcv_buf.min(65535) as u16;
        self.adv_edge = self.adv_edge.max(window as u64);
        if self.syn_sent_at.is_none() {
            self.syn_sent_at = Some(now);
        }
        self.rtx_deadline = Some(self.rtt.deadline(now, self.rtt.rto()));
        self.stats.segs_sent += 1;
        let ack = if self.state == TcpState::SynReceived { self.rcv_seq(0) } else { ack };
        let tcp =
            TcpHdr { sport: self.local.port(), dport: self.remote.port(), seq, ack, flags, window, urgent: 0, opts };
        Packet { ip: self.ip_hdr(Ecn::NotEct), l4: L4::Tcp(tcp), payload_len: 0, payload: None }
    }

    fn ip_hdr(&mut self, ecn: Ecn) -> IpHdr {
        self.ip_id = self.ip_id.wrapping_add(1);
        IpHdr { src: self.local.ip(), dst: self.remote.ip(), ttl: 64, dscp: 0, ecn, id: self.ip_id }
    }

    /// A segment carrying our current ACK state (ACK number, window, timestamps, SACK, ECE).
    fn build(
        &mut self,
        now: Time,
        seq: SeqNum,
        mut flags: TcpFlags,
        len: u32,
        payload: Option<Bytes>,
        ect: bool,
    ) -> Packet {
        let mut opts = TcpOptions::default();
        if self.ts_ok {
            opts.timestamps = Some((ts_now(now), self.ts_recent));
        }
        if self.sack_ok && !self.reasm.is_empty() {
            let max = if self.ts_ok { 3 } else { 4 };
            let blocks = self.reasm.sack_blocks();
            let n = blocks.len().min(max);
            for (i, &(l, r)) in blocks[..n].iter().enumerate() {
                opts.sack[i] = SackBlock { left: self.rcv_seq(l), right: self.rcv_seq(r) };
            }
            opts.sack_len = n as u8;
        }
        if self.ece_pending {
            flags.insert(TcpFlags::ECE);
        }
        // Advertised window: free receive buffer, scaled, never shrinking the right edge.
        let free = (self.cfg.rcv_buf as u64).saturating_sub(self.reasm.ooo_bytes);
        let edge = self.adv_edge.max(self.rcv_nxt + free);
        let wnd = edge - self.rcv_nxt;
        let sh = self.rcv_shift as u32;
        // Round down to the scale unit (like Linux), unless that would shrink the edge.
        let mut field = (wnd >> sh).min(65535);
        if self.rcv_nxt + (field << sh) < self.adv_edge {
            field = wnd.div_ceil(1u64 << sh).min(65535);
        }
        self.adv_edge = self.adv_edge.max(self.rcv_nxt + (field << sh));
        let ack = self.rcv_seq(self.rcv_nxt + self.peer_fin_rcvd as u64);
        self.last_ack_sent = self.rcv_nxt;
        self.unacked_bytes = 0;
        self.delack_deadline = None;
        self.imm_acks = self.imm_acks.saturating_sub(1);
        self.stats.segs_sent += 1;
        let tcp = TcpHdr {
            sport: self.local.port(),
            dport: self.remote.port(),
            seq,
            ack,
            flags,
            window: field as u16,
            urgent: 0,
            opts,
        };
        let ip = self.ip_hdr(if ect { Ecn::Ect0 } else { Ecn::NotEct });
        Packet { ip, l4: L4::Tcp(tcp), payload_len: len, payload }
    }

    // ------------------------------------------------------------------ timers

    /// Earliest pending timer (RTO, delayed ACK, persist, TIME_WAIT, a paced segment's departure), if any.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        let mut t = self.rtx_deadline;
        for d in [self.delack_deadline, self.tw_deadline, self.pace_wake].into_iter().flatten() {
            t = Some(t.map_or(d, |x| x.min(d)));
        }
        t
    }

    /// Process timers due at or before `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.tw_deadline.is_some_and(|d| d <= now) {
            self.tw_deadline = None;
            self.enter_closed();
            return;
        }
        if self.delack_deadline.is_some_and(|d| d <= now) {
            self.delack_deadline = None;
            self.imm_acks = self.imm_acks.max(1);
        }
        if self.pace_wake.is_some_and(|d| d <= now) {
            self.pace_wake = None; // the next poll_transmit may send
        }
        if self.rtx_deadline.is_some_and(|d| d <= now) {
            self.rtx_deadline = None;
            self.on_rtx_timer(now);
        }
    }

    fn on_rtx_timer(&mut self, now: Time) {
        match self.state {
            TcpState::SynSent | TcpState::SynReceived => {
                self.stats.timeouts += 1;
                self.stats.syn_retrans += 1;
                self.push_event(TcpEvent::Timeout { rto: self.rtt.rto() });
                self.rtt.back_off();
                self.syn_retx += 1;
                self.syn_pending = true;
                return;
            }
            TcpState::Closed | TcpState::TimeWait | TcpState::FinWait2 => return,
            _ => {}
        }
        if self.una >= self.nxt {
            if self.nxt < self.seq_end() {
                // Persist timer: probe the peer's window.
                self.probe_pending = true;
                self.rtt.back_off();
                self.arm_rto(now);
            }
            return;
        }
        // Retransmission timeout (RFC 6298 / RFC 5681).
        let rto = self.rtt.rto();
        self.stats.timeouts += 1;
        self.push_event(TcpEvent::Timeout { rto });
        let flight = self.nxt - self.una;
        if self.cfg.ns2_recovery {
            // `RenoTcpAgent::timeout`: `dupwnd_ = 0` before `slowdown()`; `Sack1TcpAgent::timeout`:
            // `fastrecov_ = FALSE`, `timeout_ = TRUE`.
            self.cwnd = self.cwnd.saturating_sub(self.ns2_dupwnd).max(1);
            self.ns2_dupwnd = 0;
            self.ns2_pipe = 0;
            self.ns2_after_timeout = true;
        }
        if self.cc.reduces() {
            // ns-2 `TcpAgent::timeout` calls `slowdown(CLOSE_SSTHRESH_HALF|CLOSE_CWND_RESTART)`
            // at every timeout, so a repeated one halves the one-segment window again.
            if self.consecutive_rtos == 0 || self.cfg.ns2_slowdown {
                self.ssthresh = self.cc_ssthresh(flight);
            }
            self.cwnd = self.mss;
            self.stats.cwnd_reductions += 1;
        }
        let mut w = self.window();
        self.cc.on_rto(&mut w);
        (self.cwnd, self.ssthresh) = (w.cwnd, w.ssthresh);
        self.consecutive_rtos += 1;
        self.rec = Recovery::None;
        self.dupacks = 0;
        self.entry_hold = false;
        // An External sender retransmits the segment at SND.UNA at once (paper 003 Fig. 12);
        // the rest of the go-back-N needs permits.
        self.pending_rtx = (self.drive == Drive::External).then_some(self.una);
        self.recover = Some(self.nxt);
        self.rto_lost_to = self.nxt;
        self.rtx_ptr = self.una;
        if self.cfg.sack_clear_on_rto {
            // ns-2 `Sack1TcpAgent::timeout`: `scb_->ClearScoreBoard()`.
            self.sboard.clear();
        }
        self.rtt_timing = None;
        self.burst = 0;
        self.rtt.back_off();
        self.arm_rto(now);
    }

    // ------------------------------------------------------------------ VPS hooks

    /// A VPS virtual flow: an established, always-backlogged sender with an unlimited receive
    /// window, SACK on, no timestamps and no RTO timer. Drive it with [`Self::virtual_ack`],
    /// [`Self::virtual_timeout`] and [`Self::poll_segment`].
    pub fn virtual_sender(cfg: TcpConfig) -> Connection {
        let addr: SocketAddr = SocketAddr::from(([0, 0, 0, 0], 0));
        let mut c = Connection::new(cfg, addr, addr, 0, TcpState::Established);
        c.drive = Drive::Virtual;
        c.syn_pending = false;
        c.sack_ok = true;
        c.ts_ok = false;
        c.rwnd = u64::MAX / 4;
        c.rwnd_max = c.rwnd;
        c.sb.write(u64::MAX / 4);
        c
    }

    /// Make this connection a VPS actual flow (before any data is sent).
    pub(crate) fn set_external(&mut self) {
        self.drive = Drive::External;
        self.cfg.max_burst = 0; // the VPS controller applies maxburst
    }

    /// `External`: allow the next `poll_transmit` one new segment and/or one retransmission
    /// (`PERMIT_*` bits); consumed by the segment sent, cleared with 0.
    pub(crate) fn ext_permit(&mut self, p: u8) {
        self.permit = p;
    }

    /// A virtual ACK: cumulative point `ack` and SACKed ranges (any number), in stream offsets.
    /// Counts as a duplicate ACK when `ack` equals SND.UNA. Old ACKs are ignored.
    pub fn virtual_ack(&mut self, now: Time, ack: u64, sacks: &[(u64, u64)]) {
        if ack < self.una || ack > self.nxt {
            return;
        }
        let flight_before = self.flight();
        let mut clipped = [(0u64, 0u64); 8];
        let mut k = 0;
        for &(l, r) in sacks {
            let (l, r) = (l.max(ack), r.min(self.nxt));
            if l < r {
                if k == clipped.len() {
                    // More blocks than fit: they only add to the scoreboard.
                    self.sboard.add(l, r);
                    continue;
                }
                clipped[k] = (l, r);
                k += 1;
            }
        }
        self.process_ack(now, ack, &clipped[..k], true, None, flight_before);
    }

    /// A virtual flow's timeout, propagated from an actual flow (paper 003 Fig. 13): recover,
    /// cwnd = 1, go-back-N from SND.UNA; the scoreboard is kept.
    pub fn virtual_timeout(&mut self, now: Time) {
        if self.una < self.nxt {
            self.on_rtx_timer(now);
        }
    }

    /// The next segment a (virtual) sender may send: `(start, end, retransmission)` offsets.
    pub fn poll_segment(&mut self, now: Time) -> Option<(u64, u64, bool)> {
        let nxt = self.nxt;
        let p = self.next_data_segment(now)?;
        let s = self.ack_off(p.tcp()?.seq).max(0) as u64;
        Some((s, s + p.payload_len as u64, s < nxt))
    }

    /// Sending-stream offset of one of our wire sequence numbers (e.g. an ACK or SACK edge).
    pub(crate) fn send_offset(&self, seq: SeqNum) -> i64 {
        self.ack_off(seq)
    }

    /// SND.UNA and SND.MAX (HighData) as stream offsets.
    pub fn una_off(&self) -> u64 {
        self.una
    }
    pub fn nxt_off(&self) -> u64 {
        self.nxt
    }

    /// Highest SACKed offset (exclusive), if any.
    pub fn sack_highest(&self) -> Option<u64> {
        self.sboard.highest()
    }

    /// Bytes SACKed above SND.UNA.
    pub fn sacked_bytes(&self) -> u64 {
        self.sboard.sacked_in(self.una, self.nxt)
    }

    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }

    /// RFC 6675 pipe during recovery, `nxt − una` otherwise.
    pub fn pipe_bytes(&self) -> u64 {
        self.flight()
    }

    /// In fast recovery (Reno/NewReno/SACK).
    pub fn in_fast_recovery(&self) -> bool {
        self.rec != Recovery::None
    }

    /// In fast recovery or in the go-back-N after an RTO.
    pub fn in_loss_recovery(&self) -> bool {
        self.rec != Recovery::None || self.rto_lost_to > self.una
    }

    /// Whether a full new segment (or the last partial one) may be sent as far as data, state
    /// and the peer's window go (congestion window ignored).
    pub(crate) fn can_send_new(&self) -> bool {
        if !matches!(self.state, TcpState::Established | TcpState::CloseWait) {
            return false;
        }
        let written = self.sb.written;
        if self.nxt >= written {
            return false;
        }
        let e = written.min(self.nxt + self.mss);
        let edge = self.una + self.rwnd;
        if e <= edge {
            return true;
        }
        let allowed = edge.saturating_sub(self.nxt);
        allowed > 0 && allowed >= (self.rwnd_max / 2).max(1)
    }

    /// A presumed-lost segment waits for retransmission (go-back-N after an RTO, or RFC 6675
    /// NextSeg rule 1 in SACK recovery).
    pub(crate) fn lost_pending(&self) -> bool {
        let b = self.lost_boundary();
        b > self.una && self.sboard.next_hole(self.rtx_ptr.max(self.una), b).is_some()
    }

    /// Any retransmission waits: [`Self::lost_pending`] or, in SACK recovery, an un-SACKed
    /// segment below the highest SACKed byte not yet retransmitted (NextSeg rule 3).
    pub(crate) fn rtx_pending(&self) -> bool {
        if self.lost_pending() {
            return true;
        }
        self.rec == Recovery::Sack
            && self.sboard.highest().is_some_and(|hi| self.sboard.next_hole(self.rtx_ptr.max(self.una), hi).is_some())
    }

    pub fn poll_event(&mut self) -> Option<TcpEvent> {
        self.events.pop_front()
    }

    /// In-order payload delivered since the last call (only with `carry_payload`).
    pub fn read(&mut self) -> Option<Bytes> {
        match self.read_q.len() {
            0 => None,
            1 => self.read_q.pop_front(),
            _ => {
                let n: usize = self.read_q.iter().map(|b| b.len()).sum();
                let mut out = BytesMut::with_capacity(n);
                for b in self.read_q.drain(..) {
                    out.extend_from_slice(&b);
                }
                Some(out.freeze())
            }
        }
    }

    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }

    pub fn trace(&self) -> TcpTrace {
        TcpTrace {
            cwnd_bytes: self.cwnd,
            ssthresh_bytes: self.ssthresh,
            srtt: self.rtt.srtt().unwrap_or(Dur::ZERO),
            rto: self.rtt.rto(),
            in_flight_bytes: self.flight(),
            rwnd_seen_bytes: self.rwnd,
            pacing_rate_bytes_s: self.cc.pacing_rate().unwrap_or(0),
            bbr: self.bbr_state().map(|(mode, bw, min_rtt, pacing_gain, _)| BbrTrace {
                mode,
                bw_bytes_s: bw,
                min_rtt: min_rtt.unwrap_or(Dur::ZERO),
                pacing_gain,
            }),
        }
    }

    pub fn state(&self) -> TcpState {
        self.state
    }

    pub fn local(&self) -> SocketAddr {
        self.local
    }

    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Oldest unacknowledged sequence number (SND.UNA).
    pub fn snd_una(&self) -> SeqNum {
        self.snd_seq(self.una)
    }

    /// Next sequence number to be sent for new data (highest sent + 1, SND.MAX).
    pub fn snd_nxt(&self) -> SeqNum {
        self.snd_seq(self.nxt)
    }

    /// The controller's pacing rate in bytes per second; `None` for an ACK-clocked sender.
    pub fn pacing_rate(&self) -> Option<u64> {
        self.cc.pacing_rate()
    }

    /// Negotiated effective MSS (payload bytes).
    pub fn mss(&self) -> u32 {
        self.mss as u32
    }

    /// Negotiated options: (window scaling, SACK, timestamps, ECN).
    pub fn negotiated(&self) -> Negotiated {
        Negotiated {
            mss: self.mss as u32,
            wscale: self.ws_negotiated.then_some((self.snd_shift, self.rcv_shift)),
            sack: self.sack_ok,
            timestamps: self.ts_ok,
            ecn: self.ecn_ok,
        }
    }
}

/// What the handshake negotiated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    pub mss: u32,
    /// (peer's shift applied to windows we receive, our shift applied to windows we send).
    pub wscale: Option<(u8, u8)>,
    pub sack: bool,
    pub timestamps: bool,
    pub ecn: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_is_send_and_small_enough() {
        fn assert_send<T: Send + Sync>() {}
        assert_send::<Connection>();
        assert!(std::mem::size_of::<Connection>() < 2048, "{}", std::mem::size_of::<Connection>());
    }

    #[test]
    fn seq_conversion_wraps() {
        let cfg = TcpConfig::default();
        let mut c = Connection::connect(
            cfg,
            "10.0.0.1:1".parse().unwrap(),
            "10.0.0.2:2".parse().unwrap(),
            u32::MAX - 10,
            Time::ZERO,
        );
        assert_eq!(c.snd_seq(0), SeqNum(u32::MAX - 9));
        assert_eq!(c.snd_seq(20), SeqNum(10));
        c.una = 5;
        c.nxt = 30;
        assert_eq!(c.ack_off(SeqNum(10)), 20);
        assert_eq!(c.ack_off(SeqNum(u32::MAX - 9)), 0);
    }
}
