//! Sans-IO TCP endpoint models.
//!
//! A [`Connection`] is one end of a TCP connection (both halves: it can send and receive
//! data). Drivers feed it packets and time and poll it for segments and timer deadlines:
//!
//! ```text
//! conn.handle_packet(now, &pkt);          // a segment arrived for this connection
//! while let Some(p) = conn.poll_transmit(now) { send(p) }
//! if let Some(t) = conn.poll_timeout() { arm timer at t } // call handle_timeout(now) when due
//! while let Some(ev) = conn.poll_event() { ... }
//! ```
//!
//! Congestion control and loss recovery are selected by [`TcpConfig`].
//!
//! Call `poll_transmit` until it returns `None` after every `handle_packet`, `handle_timeout`,
//! `write` and `close`: one call per incoming segment keeps one duplicate ACK per
//! out-of-order segment and makes `max_burst` count per ACK.
//!
//! # What is modelled
//!
//! * **Handshake**: MSS = min of both offers (536 if the peer sends none); window scaling,
//!   SACK-permitted and timestamps only if both offer; ECN per RFC 3168 (SYN with ECE|CWR,
//!   SYN-ACK with ECE). SYN / SYN-ACK retransmitted on the RTO (initial RTO, backed off).
//!   The SYN window is unscaled and capped at 65535. No data on SYNs, no simultaneous open.
//! * **Teardown**: FIN both ways through FIN_WAIT_1/2, CLOSING, CLOSE_WAIT, LAST_ACK,
//!   TIME_WAIT. TIME_WAIT lasts `time_wait`, by default `2 × max(SRTT, 1 ms)` (not 2·MSL: simulations
//!   reuse nothing).
//!   A closed connection answers any non-RST segment with an RST (RFC 793 reset generation),
//!   which also ends a peer stuck in LAST_ACK after a short TIME_WAIT. An in-window RST
//!   closes the connection (no RFC 5961 challenge ACKs).
//! * **Sequence space**: internally 64-bit stream offsets (0 = first byte after the SYN);
//!   wire numbers wrap freely.
//! * **Sender**: segments of exactly MSS payload bytes (options do not reduce it), Nagle off,
//!   sender SWS avoidance (a partial segment only if all pending data or ≥ half the largest
//!   window the peer offered), window = min(cwnd, rwnd·2^wscale, `max_cwnd_bytes`). The
//!   cwnd gate is byte-based: a segment goes out if `flight + len ≤ cwnd` (or nothing is in
//!   flight). Persist timer with zero-window probes (`SND.UNA − 1`, no data) when data waits,
//!   nothing is in flight and the window does not allow a segment; when the window is open
//!   but smaller than a segment, the persist expiry sends a window-sized segment instead
//!   (Linux `tcp_write_wakeup`), so a sub-MSS window still makes progress.
//! * **Congestion control**: slow start +1 MSS per ACK (ABC: +min(acked, 2 MSS)),
//!   congestion avoidance +MSS²/cwnd per ACK (ABC: +MSS per cwnd of bytes ACKed).
//!   Tahoe: 3 dupACKs → ssthresh = FlightSize/2, cwnd = 1 MSS, go-back-N. Reno: one fast
//!   retransmit, inflation, exit on the first new ACK, no `recover` guard; new data on the
//!   entering dupACK if the inflated window allows (off with `new_data_on_fast_retransmit`:
//!   4.4BSD and ns-2 FullTcp send only the retransmission). NewReno (RFC 6582):
//!   partial ACKs retransmit the next hole and deflate; the RTO timer is reset only on the
//!   first partial ACK ("impatient"); full ACK → cwnd = min(ssthresh, max(FlightSize, MSS) + MSS).
//!   SACK (RFC 6675): entry on dupthresh dupACKs *or* IsLost(SND.UNA) (more than
//!   (dupthresh−1)·MSS SACKed above it), ssthresh = cwnd = FlightSize/2, pipe, NextSeg rules
//!   1–3 and, with `rescue_retransmission`, rule 4; exit at the RecoveryPoint. CUBIC (RFC 9438):
//!   β = 0.7, C = 0.4, fast convergence, Reno-friendly W_est, target at t + SRTT clamped to
//!   [cwnd, 1.5·cwnd], SACK recovery; ssthresh = β·cwnd. Misbehaving: byte-counted slow
//!   start forever (doubles per RTT), ssthresh and cwnd never reduced (by loss, RTO, or — unless
//!   `misbehaving_ecn_response` — ECN), losses retransmitted. With `sack` off (or the peer
//!   not permitting it) Sack/Cubic/Misbehaving recover like NewReno. Tahoe/Reno/NewReno
//!   ignore received SACK blocks (classic ns-2-style senders) even when SACK is negotiated;
//!   their receivers still send them.
//!   No limited transmit unless `limited_transmit`. Duplicate ACK = RFC 5681 (no data, no
//!   SYN/FIN, same ACK number, same window, data outstanding): a window change (e.g. an
//!   injected zero-window copy) is not a duplicate. No fast retransmit during a go-back-N.
//!   `cwnd_validation` (off by default) stops growth while the window is not in use.
//!   `no_congestion_avoidance` keeps slow-start growth above ssthresh while keeping the
//!   algorithm's loss and ECN responses (paper 001's misbehaving source with Reno halving).
//! * **Controllers** (`cc/`): loss recovery above is separate from the congestion controller
//!   (Linux `tcp_congestion_ops`): Reno-style AIMD for Tahoe/Reno/NewReno/SACK, CUBIC, MulTCP,
//!   misbehaving, and BBR v1 (Linux `tcp_bbr.c`): on every ACK a delivery-rate sample
//!   (draft-cheng-iccrg-delivery-rate-estimation, Linux `tcp_rate.c`) feeds the model, which sets
//!   cwnd and the pacing rate; a BBR sender paces every data segment (the next one leaves
//!   len / rate after the previous one; `poll_timeout` includes that departure time), runs SACK
//!   recovery with packet conservation in its first round, and ignores ECN-Echo.
//! * **RTO (RFC 6298)**: SRTT/RTTVAR, RTO = max(min, SRTT + max(G, 4·RTTVAR)) rounded up to
//!   a multiple of G, clamped to max, doubled per expiry (backoff reset by the next valid
//!   sample). Timer deadlines are rounded up to the next multiple of G since Time 0, so with
//!   G = 500 ms a timer fires only on tick boundaries. RTT samples: timestamps on every ACK
//!   of new data when negotiated, otherwise one timed segment per RTT with Karn's rule.
//!   On expiry: ssthresh = max(FlightSize/2, 2 MSS) (β·cwnd for CUBIC; held on consecutive
//!   expiries), cwnd = 1 MSS, go-back-N from SND.UNA skipping SACKed data (the scoreboard is
//!   kept), `recover` = SND.MAX.
//! * **Receiver**: advertised window = `rcv_buf` − out-of-order bytes held (the application
//!   reads instantly), right edge never shrinks, rounded down to the scale unit. Delayed ACK:
//!   an ACK once `delack.every` × (largest segment seen) bytes are unacknowledged, else after
//!   `delack.timeout`; immediate ACK for out-of-order, duplicate or hole-filling segments,
//!   FIN, CE marks and old-sequence probes. The first data segment after the handshake is
//!   *not* ACKed immediately. SACK blocks per RFC 2018 (most recent first; 3 with
//!   timestamps, 4 without); no D-SACK. Timestamps per RFC 7323 (TS.Recent from the segment
//!   at the last ACKed edge); the TS clock counts microseconds (+1). ECN: ECE on every ACK
//!   from a CE-marked data segment until a CWR arrives; data (not retransmissions, not pure
//!   ACKs) marked ECT(0); the sender reduces once per window of data and sets CWR on the
//!   next new data segment.
//!
//! # Not modelled
//!
//! Reneging detection, D-SACK/undo, RACK/TLP, PRR, F-RTO, lost-retransmission detection
//! (a lost retransmission costs an RTO), SYN cookies, urgent data, Nagle, receive-side
//! application back-pressure, RFC 6298 §5.7 (RTO = 3 s after a lost SYN).

mod cc;
mod config;
mod conn;
mod rate;
mod recv;
mod rtt;
mod scoreboard;
mod sendbuf;
pub mod vps;

pub use cc::BbrMode;
pub use config::*;
pub use conn::*;
pub use rate::RateSample;
pub use sendbuf::{pattern_byte, pattern_bytes};
