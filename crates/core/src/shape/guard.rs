//! What an ACK mechanism may learn from a packet: acceptance checks of one connection's
//! packets against what the gateway has already seen of it, in the spirit of RFC 5961
//! ("Improving TCP's Robustness to Blind In-Window Attacks").
//!
//! A gateway that shapes by rewriting or delaying ACKs must not let a packet that an endpoint
//! would reject move its state: a blind (off-path) sender that knows a flow's 4-tuple but not
//! its sequence numbers could otherwise change the learnt window scale, move the ACK edges
//! beyond the data the receiver has, or end the flow. [`SeqGuard`] keeps, per flow, the
//! sequence-number facts the gateway has seen (the handshake, the highest data of the sender,
//! the highest ACK and the next sequence number of the receiver, the largest windows each side
//! advertised) and judges each packet before the mechanism learns from it:
//!
//! - **SYN / SYN-ACK.** The sender's SYN is learnt while the connection is not yet established;
//!   a SYN on an established flow is [`Check::Ignore`] (RFC 5961 §4: the endpoint answers any
//!   SYN in a synchronised state with a challenge ACK, so forwarding it untouched is enough).
//!   The receiver's SYN-ACK is the handshake's answer only if it acknowledges the sender's SYN
//!   (`ACK = ISN + 1`) and nothing after it was acknowledged yet; a retransmitted answer
//!   (same sequence number) is [`Check::HandshakeAgain`]; anything else is ignored.
//! - **RST.** Acts only if its sequence number is within the window of the side it is sent
//!   to (RFC 5961 §3; the gateway cannot tell an exact `RCV.NXT` match from an in-window one,
//!   so it accepts the window, as the endpoint does before sending its challenge ACK), and not
//!   below the highest ACK that side sent (its `RCV.NXT` is at least that: the endpoint would
//!   reject it).
//! - **ACK number.** Acceptable when `highest ACK − MAX.SND.WND ≤ ACK ≤ highest data sent`
//!   (RFC 5961 §5.2: `SND.UNA − MAX.SND.WND ≤ SEG.ACK ≤ SND.NXT`, with the gateway's view of
//!   the sender: the highest `seq + len` it forwarded, SYN and FIN counted). A segment without
//!   ACK after the SYN is not acceptable (RFC 793 p. 72: drop it).
//! - **Sequence number.** A segment's `seq` must lie within the window its receiver advertised
//!   (RFC 793 p. 69, the acceptability test), measured from what that side has acknowledged.
//!
//! Windows are bounded by the largest the side advertised (scaled once the handshake gave the
//! scale; with no handshake seen, the largest scale, 2^14, is assumed: a lenient bound), and
//! never below 65,535 bytes. Nothing is checked against a fact not yet seen: a flow picked up
//! mid-stream is judged from its first packets on. Constant space per flow.

use ackshape_wire::{Packet, SeqNum, TcpFlags};

/// The options of one end's SYN or SYN-ACK: what a mechanism needs from a handshake it did not
/// see (see [`AckMechanism::on_receiver_open`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptions {
    pub mss: Option<u16>,
    /// The window-scale shift this end will apply to the windows it advertises.
    pub wscale: Option<u8>,
    pub timestamps: bool,
    pub sack_permitted: bool,
}

impl SynOptions {
    pub fn of(opts: &ackshape_wire::TcpOptions) -> SynOptions {
        SynOptions {
            mss: opts.mss,
            wscale: opts.wscale,
            timestamps: opts.timestamps.is_some(),
            sack_permitted: opts.sack_permitted,
        }
    }
}

/// The verdict on one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Consistent with what the gateway has seen: the mechanism may learn from it (the guard
    /// already has).
    Accept,
    /// The receiver's SYN-ACK answering the sender's SYN, first time: learn its options.
    Handshake,
    /// The same SYN-ACK again (a retransmission): nothing new to learn.
    HandshakeAgain,
    /// Not consistent: it must move no state. Forward it untouched (or drop a pure ACK).
    Ignore,
}

impl Check {
    #[inline]
    pub fn accepted(self) -> bool {
        self != Check::Ignore
    }
}

/// Smallest window assumed for a side (an unscaled field's maximum).
const MIN_WND: u32 = 65_535;
/// Largest scale shift (RFC 7323 §2.3).
const MAX_SCALE: u8 = 14;

/// Is `v` in `[lo, hi]` in sequence space (`hi − lo < 2^32`)?
#[inline]
fn within(v: SeqNum, lo: SeqNum, hi: SeqNum) -> bool {
    v.0.wrapping_sub(lo.0) <= hi.0.wrapping_sub(lo.0)
}

/// Per-flow sequence-number facts and the acceptance checks. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqGuard {
    /// The sender's ISN (its SYN, or its SYN-ACK for a connection the receiver opened).
    snd_isn: Option<SeqNum>,
    /// Highest `seq + len` of the sender's accepted segments.
    snd_max: Option<SeqNum>,
    snd_wscale: Option<u8>,
    /// Largest window the sender advertised, bytes.
    snd_wnd_max: u32,
    /// Highest ACK number the sender sent (accepted): the sender's `RCV.NXT` is at least this.
    snd_ack: Option<SeqNum>,
    /// The receiver's ISN (its SYN-ACK).
    rcv_isn: Option<SeqNum>,
    rcv_wscale: Option<u8>,
    /// Highest `seq + len` of the receiver's accepted segments.
    rcv_nxt: Option<SeqNum>,
    /// Highest ACK number the receiver sent (accepted).
    rcv_ack: Option<SeqNum>,
    /// Largest window the receiver advertised, bytes.
    rcv_wnd_max: u32,
    /// Both sides' SYN options are known (window scale applies as negotiated).
    handshake: bool,
    /// The sender opened the connection (its SYN was seen): the receiver's first segment must
    /// be its SYN-ACK.
    sender_opened: bool,
}

/// Counters of packets a guard did not accept (in a mechanism's statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct GuardStats {
    /// SYNs / SYN-ACKs on an established flow, or SYN-ACKs not answering the SYN seen.
    pub syn_ignored: u64,
    /// RSTs outside the window (forwarded untouched, the flow kept).
    pub rst_ignored: u64,
    /// Pure ACKs with an unacceptable ACK or sequence number, dropped.
    pub acks_dropped: u64,
    /// Data (or FIN) from the receiver with an unacceptable ACK or sequence number, forwarded
    /// untouched.
    pub ack_path_untouched: u64,
    /// Segments from the sender outside the receiver's window (state not updated).
    pub data_ignored: u64,
}

impl SeqGuard {
    pub fn new() -> SeqGuard {
        SeqGuard::default()
    }

    /// Highest `seq + len` the sender sent (as accepted), if any.
    pub fn snd_max(&self) -> Option<SeqNum> {
        self.snd_max
    }

    /// Highest ACK the receiver sent (as accepted), if any.
    pub fn rcv_ack(&self) -> Option<SeqNum> {
        self.rcv_ack
    }

    /// The connection is synchronised: something beyond the SYN was seen.
    pub fn established(&self) -> bool {
        self.rcv_isn.is_some() || self.rcv_ack.is_some() || self.rcv_nxt.is_some()
    }

    fn scale(&self, w: Option<u8>) -> u8 {
        if self.handshake {
            // RFC 7323 §2.2: scaling applies only when both sides offered it.
            match (self.snd_wscale, self.rcv_wscale) {
                (Some(_), Some(_)) => w.unwrap_or(0).min(MAX_SCALE),
                _ => 0,
            }
        } else {
            MAX_SCALE
        }
    }

    /// The receiver's window bound, bytes.
    fn rcv_wnd(&self) -> u32 {
        self.rcv_wnd_max.max(MIN_WND)
    }

    /// The sender's window bound, bytes.
    fn snd_wnd(&self) -> u32 {
        self.snd_wnd_max.max(MIN_WND)
    }

    /// A connection its receiver opened: the options of the sender's SYN-ACK and of the
    /// receiver's SYN (see [`super::ackmech::AckMechanism::on_receiver_open`]).
    pub fn receiver_opened(&mut self, sender: &SynOptions, receiver: &SynOptions) {
        self.snd_wscale = sender.wscale;
        self.rcv_wscale = receiver.wscale;
        self.handshake = true;
    }

    /// Learn what the guard of the same connection's other half (`other`, whose sender is this
    /// half's receiver) has seen, for facts this guard has not seen yet: the two ends' ISNs,
    /// highest sequence numbers, window scales and largest windows. The gateway calls this when
    /// a connection's second half starts to be tracked (the receiver's data on a two-way
    /// connection), so that its checks start from the connection's numbers rather than from
    /// nothing: the first packet of its receiver is judged like any other.
    pub fn adopt_reverse(&mut self, other: &SeqGuard) {
        self.snd_isn = self.snd_isn.or(other.rcv_isn);
        self.snd_max = self.snd_max.or(other.rcv_nxt);
        self.snd_ack = self.snd_ack.or(other.rcv_ack);
        self.rcv_isn = self.rcv_isn.or(other.snd_isn);
        self.rcv_nxt = self.rcv_nxt.or(other.snd_max);
        self.snd_wnd_max = self.snd_wnd_max.max(other.rcv_wnd_max);
        self.rcv_wnd_max = self.rcv_wnd_max.max(other.snd_wnd_max);
        if !self.handshake && other.handshake {
            self.snd_wscale = other.rcv_wscale;
            self.rcv_wscale = other.snd_wscale;
            self.handshake = true;
        }
    }

    /// An RST from the sender acts only within the receiver's window, from what the receiver
    /// acknowledged (RFC 5961 §3.2: `RCV.NXT ≤ SEG.SEQ < RCV.NXT + RCV.WND`; the receiver's
    /// `RCV.NXT` is at least the highest ACK it sent, so an RST below that is one it rejects).
    pub fn rst_from_sender_ok(&self, pkt: &Packet) -> bool {
        let Some(t) = pkt.tcp() else { return false };
        let w = self.rcv_wnd();
        match (self.rcv_ack, self.snd_max) {
            (Some(a), m) => within(t.seq, a, m.map_or(a, |m| m.max(a)) + w),
            (None, Some(m)) => within(t.seq, m - w, m + w),
            (None, None) => true,
        }
    }

    /// An RST from the receiver acts only within the sender's window, from the receiver's next
    /// sequence number (RFC 5961 §3.2); before anything of the receiver was seen, only one
    /// refusing the SYN (RFC 793 p. 36: RST with ACK = ISN + 1) or one with nothing to judge by.
    /// The sender's `RCV.NXT` may lag the receiver's next sequence number by what is in flight
    /// (at most a window), but it is at least the highest ACK the sender sent: an RST below that
    /// is one the sender rejects.
    pub fn rst_from_receiver_ok(&self, pkt: &Packet) -> bool {
        let Some(t) = pkt.tcp() else { return false };
        let ws = self.snd_wnd();
        match self.rcv_nxt {
            Some(n) => {
                let lo = match self.snd_ack {
                    Some(a) if within(a, n - ws, n) => a,
                    _ => n - ws,
                };
                within(t.seq, lo, n + ws)
            }
            None => match (self.snd_isn, t.flags.contains(TcpFlags::ACK)) {
                (Some(i), true) => within(t.ack, i + 1, self.snd_max.unwrap_or(i + 1)),
                (Some(_), false) => false,
                (None, _) => true,
            },
        }
    }

    /// A segment travelling from the sender to the receiver (the data direction).
    pub fn sender_packet(&mut self, pkt: &Packet) -> Check {
        let Some(t) = pkt.tcp() else { return Check::Ignore };
        let syn = t.flags.contains(TcpFlags::SYN);
        if syn {
            // The sender's SYN (or, for a connection the receiver opened, its SYN-ACK). Once the
            // receiver has answered, any SYN is the endpoint's business (RFC 5961 §4).
            if self.established() {
                return Check::Ignore;
            }
            if self.snd_isn == Some(t.seq) {
                return Check::HandshakeAgain;
            }
            // First SYN, or a new attempt with another ISN before any answer.
            self.snd_isn = Some(t.seq);
            self.snd_max = Some(t.seq + 1);
            self.sender_opened = !t.flags.contains(TcpFlags::ACK);
            if !self.handshake {
                self.snd_wscale = t.opts.wscale;
            }
            self.snd_wnd_max = self.snd_wnd_max.max(t.window as u32);
            return Check::Handshake;
        }
        let len = pkt.payload_len + t.flags.contains(TcpFlags::FIN) as u32;
        let w = self.rcv_wnd();
        if t.flags.contains(TcpFlags::RST) {
            return if self.rst_from_sender_ok(pkt) { Check::Accept } else { Check::Ignore };
        }
        // RFC 793 p. 69: the segment must overlap the receiver's window. Retransmissions may
        // start below what the receiver acknowledged (the sender learns it later), so the
        // window also extends that far below.
        if let Some(base) = self.rcv_ack.or(self.snd_max) {
            let hi = self.snd_max.map_or(base, |m| m.max(base)) + w;
            if !within(t.seq, base - w, hi) || !within(t.seq + len, base - w, hi) {
                return Check::Ignore;
            }
        }
        if t.flags.contains(TcpFlags::ACK) {
            if let Some(n) = self.rcv_nxt {
                let ws = self.snd_wnd();
                if !within(t.ack, n - ws, n) {
                    return Check::Ignore;
                }
            }
        }
        let end = t.seq + len;
        if self.snd_max.is_none_or(|m| end > m) {
            self.snd_max = Some(end);
        }
        if t.flags.contains(TcpFlags::ACK) && self.snd_ack.is_none_or(|a| t.ack > a) {
            self.snd_ack = Some(t.ack);
        }
        let bytes = ((t.window as u64) << self.scale(self.snd_wscale)).min(1 << 30) as u32;
        self.snd_wnd_max = self.snd_wnd_max.max(bytes);
        Check::Accept
    }

    /// A segment travelling from the receiver to the sender (the ACK direction).
    pub fn receiver_packet(&mut self, pkt: &Packet) -> Check {
        let Some(t) = pkt.tcp() else { return Check::Ignore };
        let f = t.flags;
        if f.contains(TcpFlags::SYN) {
            if !f.contains(TcpFlags::ACK) {
                return Check::Ignore;
            }
            // The answer to the sender's SYN: it acknowledges exactly the SYN, and nothing of
            // the data was acknowledged yet (RFC 793 §3.4: an established end answers a SYN-ACK
            // with an ACK, its state unchanged; RFC 5961 §4).
            let Some(isn) = self.snd_isn else { return Check::Ignore };
            if t.ack != isn + 1 || self.rcv_ack.is_some_and(|a| a != isn + 1) {
                return Check::Ignore;
            }
            return match self.rcv_isn {
                Some(r) if r == t.seq => Check::HandshakeAgain,
                Some(_) => Check::Ignore,
                None => {
                    self.rcv_isn = Some(t.seq);
                    self.rcv_nxt = Some(t.seq + 1);
                    self.rcv_ack = Some(t.ack);
                    self.rcv_wscale = t.opts.wscale;
                    self.handshake = true;
                    // The SYN-ACK's window is never scaled (RFC 7323 §2.2).
                    self.rcv_wnd_max = self.rcv_wnd_max.max(t.window as u32);
                    Check::Handshake
                }
            };
        }
        let len = pkt.payload_len + f.contains(TcpFlags::FIN) as u32;
        let ws = self.snd_wnd();
        if f.contains(TcpFlags::RST) {
            return if self.rst_from_receiver_ok(pkt) { Check::Accept } else { Check::Ignore };
        }
        if !f.contains(TcpFlags::ACK) || (self.sender_opened && self.rcv_isn.is_none()) {
            // No ACK after the SYN (RFC 793 p. 72), or an ACK before the SYN-ACK.
            return Check::Ignore;
        }
        if let Some(m) = self.snd_max {
            // RFC 5961 §5.2: SND.UNA − MAX.SND.WND ≤ SEG.ACK ≤ SND.NXT.
            // With neither an ACK nor the SYN seen, the left edge is unknown: only the largest
            // window (2^30, RFC 7323 §2.3) bounds how far behind the data an ACK can be.
            let lo = match (self.rcv_ack, self.snd_isn) {
                (Some(a), _) => a - self.rcv_wnd(),
                (None, Some(i)) => i,
                (None, None) => m - (1 << 30),
            };
            if !within(t.ack, lo, m) {
                return Check::Ignore;
            }
        }
        if let Some(n) = self.rcv_nxt {
            if !within(t.seq, n - ws, n + ws) || !within(t.seq + len, n - ws, n + ws) {
                return Check::Ignore;
            }
        }
        if self.rcv_ack.is_none_or(|a| t.ack > a) {
            self.rcv_ack = Some(t.ack);
        }
        let end = t.seq + len;
        if self.rcv_nxt.is_none_or(|n| end > n) {
            self.rcv_nxt = Some(end);
        }
        let bytes = ((t.window as u64) << self.scale(self.rcv_wscale)).min(1 << 30) as u32;
        self.rcv_wnd_max = self.rcv_wnd_max.max(bytes);
        Check::Accept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackshape_wire::{IpHdr, TcpHdr, TcpOptions, L4};

    fn seg(flags: TcpFlags, seq: u32, ack: u32, win: u16, len: u32, ws: Option<u8>) -> Packet {
        let mut opts = TcpOptions::default();
        opts.wscale = ws;
        Packet {
            ip: IpHdr {
                src: "10.0.0.1".parse().unwrap(),
                dst: "10.0.0.2".parse().unwrap(),
                ttl: 64,
                dscp: 0,
                ecn: ackshape_wire::Ecn::NotEct,
                id: 0,
            },
            l4: L4::Tcp(TcpHdr {
                sport: 1,
                dport: 2,
                seq: SeqNum(seq),
                ack: SeqNum(ack),
                flags,
                window: win,
                urgent: 0,
                opts,
            }),
            payload_len: len,
            payload: None,
        }
    }

    const A: TcpFlags = TcpFlags::ACK;

    /// SYN (ISN 1000, ws 7), SYN-ACK (ISN 5000, ws 7), then 10 segments of 1000 B acked.
    fn established() -> SeqGuard {
        let mut g = SeqGuard::new();
        assert_eq!(g.sender_packet(&seg(TcpFlags::SYN, 1000, 0, 65535, 0, Some(7))), Check::Handshake);
        // An ACK before the SYN-ACK answers nothing.
        assert_eq!(g.receiver_packet(&seg(A, 5001, 1001, 65535, 0, None)), Check::Ignore);
        let sa = seg(TcpFlags(TcpFlags::SYN.0 | A.0), 5000, 1001, 65535, 0, Some(7));
        assert_eq!(g.receiver_packet(&sa), Check::Handshake);
        assert_eq!(g.receiver_packet(&sa), Check::HandshakeAgain);
        for k in 0..10 {
            assert_eq!(g.sender_packet(&seg(A, 1001 + 1000 * k, 5001, 512, 1000, None)), Check::Accept);
        }
        assert_eq!(g.receiver_packet(&seg(A, 5001, 6001, 1024, 0, None)), Check::Accept);
        g
    }

    #[test]
    fn spoofed_handshake_on_an_established_flow_is_ignored() {
        let mut g = established();
        let before = g;
        let spoof = seg(TcpFlags(TcpFlags::SYN.0 | A.0), 0xdead_beef, 0x1234_5678, 1, 0, Some(14));
        assert_eq!(g.receiver_packet(&spoof), Check::Ignore);
        // Even one acknowledging the real ISN: the flow is past its handshake.
        let spoof2 = seg(TcpFlags(TcpFlags::SYN.0 | A.0), 77, 1001, 1, 0, Some(14));
        assert_eq!(g.receiver_packet(&spoof2), Check::Ignore);
        assert_eq!(g.sender_packet(&seg(TcpFlags::SYN, 99, 0, 1, 0, Some(14))), Check::Ignore);
        assert_eq!(g, before, "no state moved");
    }

    #[test]
    fn acks_beyond_the_data_or_far_behind_are_ignored() {
        let mut g = established();
        let real = 6001u32;
        for off in [1u32 << 30, (1u32 << 31) - 1, 10_000 + 1] {
            assert_eq!(
                g.receiver_packet(&seg(A, 5001, real.wrapping_add(off), 1024, 0, None)),
                Check::Ignore,
                "+{off}"
            );
        }
        // 2^31 + k ahead is 2^31 − k behind: far below the left edge.
        assert_eq!(
            g.receiver_packet(&seg(A, 5001, real.wrapping_add(1 << 31).wrapping_add(5), 1024, 0, None)),
            Check::Ignore
        );
        // The highest data: fine; a spoofed sequence number is not.
        assert_eq!(g.receiver_packet(&seg(A, 5001, 11001, 1024, 0, None)), Check::Accept);
        assert_eq!(g.rcv_ack(), Some(SeqNum(11001)));
        assert_eq!(g.receiver_packet(&seg(A, 5001 + (1 << 30), 11001, 1024, 0, None)), Check::Ignore);
        // No ACK flag after the handshake.
        assert_eq!(g.receiver_packet(&seg(TcpFlags(0), 5001, 11001, 1024, 0, None)), Check::Ignore);
    }

    #[test]
    fn rst_acts_only_in_window() {
        let mut g = established();
        let mut x: u32 = 0x9e37_79b9;
        let mut accepted = 0;
        for _ in 0..1000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            accepted += g.receiver_packet(&seg(TcpFlags::RST, x, 0, 0, 0, None)).accepted() as u32;
        }
        // Window 65,535 · 2^7 each way of 2^32: about 0.4 % pass.
        assert!(accepted < 20, "{accepted} of 1000 random RSTs accepted");
        assert_eq!(g.receiver_packet(&seg(TcpFlags::RST, 5001, 0, 0, 0, None)), Check::Accept);
        assert_eq!(g.sender_packet(&seg(TcpFlags::RST, 11001, 0, 0, 0, None)), Check::Accept);
        assert_eq!(g.sender_packet(&seg(TcpFlags::RST, 11001 + (1 << 31), 0, 0, 0, None)), Check::Ignore);
    }

    /// An RST behind what the other end has acknowledged is one that end rejects (its
    /// `RCV.NXT` is at least the highest ACK it sent): it moves nothing, however close.
    #[test]
    fn rst_behind_what_its_target_acknowledged_is_ignored() {
        let mut g = established();
        // The sender's data acknowledged the receiver's SYN (ACK 5001 = the receiver's next
        // sequence number): an RST from the receiver one byte or 65,535 bytes behind it fails.
        for behind in [1u32, 1000, 65_535] {
            let rst = seg(TcpFlags::RST, 5001u32.wrapping_sub(behind), 0, 0, 0, None);
            assert_eq!(g.receiver_packet(&rst), Check::Ignore, "{behind} behind");
        }
        assert_eq!(g.receiver_packet(&seg(TcpFlags::RST, 5001, 0, 0, 0, None)), Check::Accept);
        // The receiver acknowledged 6001: an RST from the sender below it fails, at it passes.
        for behind in [1u32, 1000, 65_535] {
            let rst = seg(TcpFlags::RST, 6001 - behind, 0, 0, 0, None);
            assert_eq!(g.sender_packet(&rst), Check::Ignore, "{behind} behind");
        }
        assert_eq!(g.sender_packet(&seg(TcpFlags::RST, 6001, 0, 0, 0, None)), Check::Accept);
    }

    #[test]
    fn sender_data_outside_the_receivers_window_moves_nothing() {
        let mut g = established();
        let before = g;
        assert_eq!(g.sender_packet(&seg(A, 1001 + (1 << 30), 5001, 512, 1000, None)), Check::Ignore);
        assert_eq!(g, before);
        // A retransmission and new data within the window are fine.
        assert_eq!(g.sender_packet(&seg(A, 3001, 5001, 512, 1000, None)), Check::Accept);
        assert_eq!(g.sender_packet(&seg(A, 11001, 5001, 512, 1000, None)), Check::Accept);
        assert_eq!(g.snd_max(), Some(SeqNum(12001)));
    }

    /// The receiver's data starts a second half whose sender is the receiver: it adopts what the
    /// first half saw, so its own receiver's (the first half's sender's) first packet is judged
    /// against the real numbers: far-ahead data is ignored, the real next segment accepted.
    #[test]
    fn a_second_half_adopts_the_first_halfs_facts() {
        let first = established();
        let mut second = SeqGuard::new();
        second.adopt_reverse(&first);
        assert_eq!(second.snd_max(), Some(SeqNum(5001)), "the receiver's next sequence number");
        assert!(second.handshake && second.rcv_wscale == Some(7) && second.snd_wscale == Some(7));
        // The receiver's data (this half's sender), then its receiver's packets.
        assert_eq!(second.sender_packet(&seg(A, 5001, 11001, 1024, 100, None)), Check::Accept);
        let far = seg(A, 11001 + (1 << 30), 5101, 512, 1000, None);
        assert_eq!(second.receiver_packet(&far), Check::Ignore, "far-ahead data with the real ACK");
        assert_eq!(second.receiver_packet(&seg(A, 11001, 5101, 512, 1000, None)), Check::Accept);
        // Facts it has seen itself are kept.
        let mut again = second;
        again.adopt_reverse(&SeqGuard::new());
        assert_eq!(again, second);
    }

    #[test]
    fn refused_syn_and_wrapping() {
        let mut g = SeqGuard::new();
        assert_eq!(g.sender_packet(&seg(TcpFlags::SYN, u32::MAX, 0, 65535, 0, None)), Check::Handshake);
        assert_eq!(g.sender_packet(&seg(TcpFlags::SYN, u32::MAX, 0, 65535, 0, None)), Check::HandshakeAgain);
        let rst_ack = TcpFlags(TcpFlags::RST.0 | A.0);
        assert_eq!(g.receiver_packet(&seg(rst_ack, 0, 7, 0, 0, None)), Check::Ignore);
        assert_eq!(g.receiver_packet(&seg(rst_ack, 0, 0, 0, 0, None)), Check::Accept);
        // Across the wrap: ISN 2^32 − 1, data from 0.
        let sa = seg(TcpFlags(TcpFlags::SYN.0 | A.0), 100, 0, 65535, 0, None);
        assert_eq!(g.receiver_packet(&sa), Check::Handshake);
        assert_eq!(g.sender_packet(&seg(A, 0, 101, 65535, 1000, None)), Check::Accept);
        assert_eq!(g.receiver_packet(&seg(A, 101, 1000, 65535, 0, None)), Check::Accept);
        assert_eq!(g.receiver_packet(&seg(A, 101, 1001, 65535, 0, None)), Check::Ignore);
    }
}
