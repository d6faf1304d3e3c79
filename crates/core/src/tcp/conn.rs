//! One TCP endpoint (both halves). API contract; see the module doc for the driving loop.

use super::config::TcpConfig;
use crate::time::{Dur, Time};
use ackshape_wire::{Packet, SeqNum};
use bytes::Bytes;
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
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
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
}

/// One end of a TCP connection.
pub struct Connection {
    _todo: (),
}

impl Connection {
    /// Active open: returns a connection in `SynSent` whose first `poll_transmit` is the SYN.
    pub fn connect(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, now: Time) -> Connection {
        let _ = (cfg, local, remote, iss, now);
        todo!()
    }

    /// Passive open on receipt of `syn` (a SYN without ACK addressed to us). Returns `None` for
    /// anything else. The first `poll_transmit` is the SYN-ACK.
    pub fn accept(cfg: TcpConfig, syn: &Packet, iss: u32, now: Time) -> Option<Connection> {
        let _ = (cfg, syn, iss, now);
        todo!()
    }

    /// Append `n` bytes to the send stream (content: zeros unless `carry_payload`, then a
    /// deterministic pattern — use `write_bytes` to choose content).
    pub fn write(&mut self, n: u64) {
        let _ = n;
        todo!()
    }

    /// Append explicit bytes to the send stream (requires `carry_payload`).
    pub fn write_bytes(&mut self, data: Bytes) {
        let _ = data;
        todo!()
    }

    /// Send FIN once all written data has been sent.
    pub fn close(&mut self) {
        todo!()
    }

    /// A segment for this connection arrived.
    pub fn handle_packet(&mut self, now: Time, pkt: &Packet) {
        let _ = (now, pkt);
        todo!()
    }

    /// Next segment to send now, if any (data, retransmission, ACK, SYN, FIN).
    pub fn poll_transmit(&mut self, now: Time) -> Option<Packet> {
        let _ = now;
        todo!()
    }

    /// Earliest pending timer (RTO, delayed ACK, persist), if any.
    pub fn poll_timeout(&self) -> Option<Time> {
        todo!()
    }

    /// Process timers due at or before `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        let _ = now;
        todo!()
    }

    pub fn poll_event(&mut self) -> Option<TcpEvent> {
        todo!()
    }

    /// In-order payload delivered since the last call (only with `carry_payload`).
    pub fn read(&mut self) -> Option<Bytes> {
        todo!()
    }

    pub fn stats(&self) -> &TcpStats {
        todo!()
    }

    pub fn trace(&self) -> TcpTrace {
        todo!()
    }

    pub fn state(&self) -> TcpState {
        todo!()
    }

    pub fn local(&self) -> SocketAddr {
        todo!()
    }

    pub fn remote(&self) -> SocketAddr {
        todo!()
    }
}
