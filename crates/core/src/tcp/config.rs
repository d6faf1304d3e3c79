//! TCP endpoint configuration. Units are in the names; defaults follow Linux where it matters.

use crate::time::Dur;

/// Congestion-control algorithm of the sending half.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CcAlgo {
    /// Slow start + congestion avoidance; every loss (3 dupacks or RTO) → cwnd = 1 MSS.
    Tahoe,
    /// Reno fast recovery: one retransmission per fast recovery, exits on the first new ACK.
    Reno,
    /// NewReno (RFC 6582): partial ACKs retransmit the next hole and stay in recovery.
    NewReno,
    /// NewReno-style window control with SACK-based loss recovery (RFC 6675). The default.
    #[default]
    Sack,
    /// CUBIC (RFC 9438) window growth with SACK-based recovery.
    Cubic,
    /// Misbehaving: no congestion avoidance, cwnd grows exponentially forever (paper 001 §2.4).
    /// Loss recovery as `Sack`, but cwnd is never reduced below what it was.
    Misbehaving,
    /// MulTCP (Crowcroft & Oechslin 1998): one flow that behaves like `multcp_n` Reno flows.
    /// Congestion avoidance adds `N·MSS²/cwnd` per ACK, a loss (fast retransmit or RTO) sets
    /// ssthresh = FlightSize·(1 − 1/(2N)); slow start (unless `multcp_slow_start` says otherwise),
    /// SACK recovery and timeouts as `Sack`
    /// (paper 003's baseline; its rules are assumed there, trap P3-10).
    #[serde(rename = "multcp")]
    MulTcp,
    /// BBR v1 (Cardwell et al. 2016, Linux `tcp_bbr.c`): a model of the path (max delivery rate,
    /// min RTT) sets a pacing rate and cwnd; SACK recovery; the sender paces.
    Bbr,
}

/// Loss recovery of the sending half (how losses are detected and repaired), implied by
/// [`CcAlgo`]; the window control is the congestion controller's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossRecovery {
    /// Every loss (3 dupACKs or RTO) → cwnd = 1 MSS and go-back-N.
    Tahoe,
    /// One fast retransmit, window inflation, exit on the first new ACK (RFC 5681).
    Reno,
    /// RFC 6582: partial ACKs retransmit the next hole and stay in recovery.
    NewReno,
    /// RFC 6675 SACK-based recovery when SACK is negotiated, NewReno's otherwise.
    Sack,
}

impl CcAlgo {
    /// The loss recovery this algorithm runs with: Tahoe, Reno and NewReno their own, every
    /// other one SACK (RFC 6675) recovery.
    pub fn recovery(self) -> LossRecovery {
        match self {
            CcAlgo::Tahoe => LossRecovery::Tahoe,
            CcAlgo::Reno => LossRecovery::Reno,
            CcAlgo::NewReno => LossRecovery::NewReno,
            CcAlgo::Sack | CcAlgo::Cubic | CcAlgo::Misbehaving | CcAlgo::MulTcp | CcAlgo::Bbr => LossRecovery::Sack,
        }
    }
}

/// Which window advertisements the sending half accepts (the SND.WL1/SND.WL2 test).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowUpdate {
    /// RFC 793 (RFC 9293 §3.10.7.4): any acceptable segment with SND.WL1 < SEG.SEQ, or
    /// SND.WL1 = SEG.SEQ and SND.WL2 ≤ SEG.ACK, sets the window, so a duplicate ACK with the same
    /// numbers can shrink it. The default.
    #[default]
    Rfc793,
    /// 4.4BSD `tcp_input` and Linux `tcp_may_update_window`: a segment with the same SEG.SEQ and
    /// SEG.ACK as the last update changes the window only if it *grows* it; only a segment that
    /// advances SEG.ACK (or SEG.SEQ) can shrink it.
    Bsd,
}

/// How a MulTCP flow (`CcAlgo::MulTcp`) opens its window in slow start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MultcpSlowStart {
    /// One MSS per ACK, as one Reno flow (the window doubles per round trip). The default.
    #[default]
    Reno,
    /// Catch up with N flows: two MSS per ACK (the window triples per round trip) while cwnd is
    /// below 3^(ln N / ln 1.5) segments, then one MSS per ACK. That is where a window tripling
    /// from one segment meets N windows doubling from one segment each (3^k = N·2^k). The reading
    /// of Crowcroft & Oechslin's slow start in a public ns-3 `TcpMultcp`; paper 003 states neither.
    NFlows,
}

/// The window, in segments, below which `MultcpSlowStart::NFlows` opens two MSS per ACK:
/// 3^(ln N / ln 1.5), where a window tripling per round trip from one segment meets N windows
/// doubling from one segment each. 1 (never) for N ≤ 1; about 19.6 for N = 3 and 3.8·10³ for N = 21.
pub fn multcp_catch_up_segments(n: f64) -> f64 {
    if n.is_nan() || n <= 1.0 {
        return 1.0;
    }
    3f64.powf(n.ln() / 1.5f64.ln())
}

/// Retransmission timer settings (RFC 6298).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RtoConfig {
    /// Minimum RTO (RFC 6298: 1 s; Linux: 200 ms): a floor, or with [`RtoModel::Linux`] the
    /// least deviation term added to SRTT.
    pub min: Dur,
    /// Upper bound on RTO (≥ 60 s per RFC 6298).
    pub max: Dur,
    /// RTO before the first RTT sample (RFC 6298: 1 s).
    pub initial: Dur,
    /// Clock granularity G. Fine (1 ms) like Linux; 500 ms models a BSD/Solaris coarse tick,
    /// where the timer also fires only on tick boundaries.
    pub granularity: Dur,
}

impl Default for RtoConfig {
    fn default() -> Self {
        RtoConfig {
            min: Dur::from_secs(1),
            max: Dur::from_secs(60),
            initial: Dur::from_secs(1),
            granularity: Dur::from_millis(1),
        }
    }
}

/// How the retransmission timer is computed and when it fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RtoModel {
    /// Linux's (`tcp_rtt_estimator`, `tcp_set_rto`, net/ipv4/tcp_input.c): SRTT and the mean
    /// deviation as Jacobson's (a sample below SRTT moves the deviation with gain 1/32), but the
    /// RTO is SRTT + the largest deviation term of the last window of data, which starts every
    /// window at `min` and decays towards it by a quarter per window — the minimum RTO is added
    /// to SRTT, not a floor under the sum, so a sample on every ACK (timestamps) cannot wear
    /// the RTO down to just above SRTT. Rounded up to the tick G, capped at `max`; fires on a
    /// tick. The default.
    #[default]
    Linux,
    /// RFC 6298 with the clock granularity G of [`RtoConfig`]: RTO = SRTT + max(G, 4·RTTVAR),
    /// rounded up to a tick and floored at `min`; the timer fires on the first tick boundary
    /// (a multiple of G since time 0) at or after its deadline, as BSD's slow timer does, so
    /// every connection that times out within one tick retransmits at the same instant.
    Rfc6298,
    /// ns-2's `TcpAgent` with `rfc2988_` off (tcp.cc; the default before 2002): an RTT sample is the number
    /// of ticks G it spans (at least 1); SRTT and RTTVAR are kept in ticks with 3 and 2
    /// fraction bits; RTO = ⌊SRTT + 4·RTTVAR⌋ ticks; the timeout is RTO × backoff (backoff
    /// ≤ 64), raised to `min` and to 2 ticks, capped at `max`; and the timer is armed for
    /// exactly that long from now (`rtx_timer_.resched`), not aligned to a tick.
    Ns2,
    /// ns-2.35's `TcpAgent` timer with its default `rfc2988_ true` (tcp.cc): samples and
    /// estimator as [`RtoModel::Ns2`] (`rtt_update`), but `rtt_timeout` clamps the unbacked-off
    /// value to `minrto_` *before* applying the backoff (`minrto_ · t_backoff_` when
    /// `t_rtxcur_ < minrto_`), capped at `maxrto_`, at least two ticks; `rtt_backoff` keeps
    /// doubling while the result is below `maxrto_`, and once `t_backoff_` exceeds 8 it clobbers
    /// the smoothed RTT (`t_srtt_ = 0`), so the next sample re-initialises the estimator.
    #[serde(rename = "ns2-rfc2988")]
    Ns2Rfc2988,
    /// Linux 2.2's timer (`tcp_rtt_estimator`, `tcp_set_rto`, `tcp_bound_rto` of 2.2.x, the
    /// stack paper 000's testbed ran): samples in whole jiffies G (at least 1), SRTT and the
    /// mean deviation kept as Jacobson's fixed point (first sample: MDEV = the sample), and
    /// RTO = R + R/4 + R >> (cwnd − 1) with R = SRTT + 4·MDEV, computed at each sample with the
    /// congestion window (segments) then in force — 2.25·R at one segment, 1.75·R at two,
    /// → 1.25·R for large windows — bounded to [`min`, `max`] (2.2: HZ/5 and 120 s). A timeout
    /// doubles it (capped at `max`); the timer fires on the first jiffy at or after its deadline.
    Linux22,
}

/// A named set of TCP defaults (`[tcp] profile`); explicit keys override it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcpProfile {
    /// Modern (Linux-like) defaults: [`TcpConfig::default`].
    #[default]
    Default,
    /// ns-2.35's one-way agents and sinks: [`TcpConfig::ns2`].
    Ns2,
}

/// Delayed-ACK behaviour of the receiving half.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DelAckConfig {
    /// ACK every `every` full-sized segments (b). 1 = no delayed ACK.
    pub every: u32,
    /// Maximum delay of an ACK for in-order data (Linux 40 ms, BSD 200 ms).
    pub timeout: Dur,
}

impl Default for DelAckConfig {
    fn default() -> Self {
        DelAckConfig { every: 2, timeout: Dur::from_millis(40) }
    }
}

/// Configuration of one TCP endpoint.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TcpConfig {
    pub cc: CcAlgo,
    /// Sender maximum segment size (payload bytes), before negotiation (min with peer's MSS).
    pub mss: u32,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window: u32,
    /// Maximum segments sent in one burst in response to one ACK; 0 = unlimited.
    pub max_burst: u32,
    /// Appropriate Byte Counting (RFC 3465, L = 2) instead of per-ACK counting.
    pub abc: bool,
    /// Our receive window scale shift to offer (None = do not offer window scaling).
    pub wscale: Option<u8>,
    /// Offer/accept RFC 7323 timestamps.
    pub timestamps: bool,
    /// Offer/accept SACK (RFC 2018). With `cc = Sack`/`Cubic` and SACK off, recovery falls back to NewReno.
    pub sack: bool,
    /// Offer/accept ECN (RFC 3168).
    pub ecn: bool,
    /// Receive buffer in bytes: the advertised window is what is free of it.
    pub rcv_buf: u32,
    /// Maximum sender window in bytes, independent of rwnd (0 = unlimited), e.g. paper 002's 200 packets.
    pub max_cwnd_bytes: u64,
    pub delack: DelAckConfig,
    pub rto: RtoConfig,
    /// How `rto` is applied (RFC 6298 with tick-aligned firing, or ns-2's timer).
    #[serde(default)]
    pub rto_model: RtoModel,
    /// Duplicate-ACK threshold for fast retransmit.
    pub dupthresh: u32,
    /// Carry real payload bytes in segments (needed for content checks; slower).
    pub carry_payload: bool,
    /// RFC 3042 limited transmit (one new segment on each of the first two dupACKs).
    /// Off by default so that a window of ≤ 3 segments cannot fast-retransmit (paper 000's
    /// tiny-window effect).
    #[serde(default)]
    pub limited_transmit: bool,
    /// `Misbehaving` halves cwnd on ECN-Echo (paper 001 P1-10: "respond to ECN but never use
    /// linear increase"). Off by default: Misbehaving never reduces cwnd.
    #[serde(default)]
    pub misbehaving_ecn_response: bool,
    /// No congestion avoidance: slow-start growth (+1 MSS per ACK) above ssthresh too, while
    /// loss and ECN responses stay those of `cc` (paper 001 §2.4's misbehaving source: "we
    /// disabled the congestion avoidance logic", read with Reno's halving kept, trap P1-10).
    /// Off by default. `Misbehaving` is the stronger variant that never reduces cwnd.
    #[serde(default)]
    pub no_congestion_avoidance: bool,
    /// Grow cwnd only while the window is in use (RFC 7661 spirit; Linux `tcp_is_cwnd_limited`).
    /// Off by default (RFC 5681 / ns-2: an rwnd- or application-limited flow keeps growing cwnd).
    #[serde(default)]
    pub cwnd_validation: bool,
    /// TIME_WAIT duration; `None` = 2 × max(SRTT, 1 ms) (short: simulations reuse no ports).
    #[serde(default)]
    pub time_wait: Option<Dur>,
    /// RFC 6675 NextSeg rule 4 (rescue retransmission) during SACK recovery. Off by default
    /// (Linux does not implement it).
    #[serde(default)]
    pub rescue_retransmission: bool,
    /// Initial slow-start threshold in segments (0 = unlimited, RFC 5681's "arbitrarily high").
    #[serde(default)]
    pub initial_ssthresh: u64,
    /// MulTCP's N (how many Reno flows one `MulTcp` flow acts like); ignored by other algorithms.
    #[serde(default = "one")]
    pub multcp_n: f64,
    /// MulTCP's slow start (Reno's by default); ignored by other algorithms.
    #[serde(default)]
    pub multcp_slow_start: MultcpSlowStart,
    /// Which window advertisements are accepted (RFC 793 by default; `Bsd` as Linux and BSD).
    #[serde(default)]
    pub window_update: WindowUpdate,
    /// Reno/NewReno fast recovery: may the sender send new data in answer to the duplicate ACK
    /// that triggers the fast retransmit, if the inflated window (ssthresh + dupthresh·MSS)
    /// allows it? `true` by default (RFC 5681 §3.2 step 5 read as applying at entry, as Linux
    /// does). `false` is 4.4BSD's `tcp_input` and ns-2's `FullTcpAgent`: only the retransmission
    /// goes out (BSD sends it with cwnd = 1 MSS, then inflates; FullTcp `goto drop`s after
    /// `dupack_action()`), new data waits for the next ACK. Not used in SACK recovery.
    #[serde(default = "yes")]
    pub new_data_on_fast_retransmit: bool,
    /// ns-2's `TcpAgent::slowdown` for the window reductions of fast retransmit and timeout:
    /// ssthresh = ⌊⌊min(cwnd, rwnd) in segments⌋ / 2⌋ segments (at least 2) — computed from the
    /// congestion window, not the flight size, and at *every* timeout (so a second timeout in a
    /// row sets it to 2 segments) — after a timeout cwnd = `wnd_restart_` = 1 segment, and at a
    /// fast retransmit (Reno, NewReno, SACK) cwnd = min(cwnd, rwnd) / 2 *unrounded* and not
    /// raised to ssthresh (`CLOSE_CWND_HALF` with `precisionReduce_ true`: `cwnd_ = windowd()/2`),
    /// so a window of 3 segments continues with 1.5, i.e. one segment in flight.
    /// Off by default (RFC 5681: FlightSize / 2, ssthresh kept on a repeated timeout).
    #[serde(default)]
    pub ns2_slowdown: bool,
    /// Restart the retransmission timer (with the current RTO) at the fast retransmit: ns-2's
    /// `dupack_action` calls `reset_rtx_timer(1, 0)` → `set_rtx_timer()` (tcp-reno.cc,
    /// tcp-newreno.cc, tcp-sack1.cc), so the retransmission gets a full RTO. Off by default:
    /// the timer keeps running from the last new ACK (RFC 6298 §5.3), unless
    /// `rto_rearm_on_head_retransmit` re-arms it.
    #[serde(default)]
    pub rto_restart_on_fast_retransmit: bool,
    /// Restart the retransmission timer whenever the first unacknowledged segment is
    /// retransmitted — the fast retransmit, and in recovery the hole a partial ACK uncovers:
    /// Linux's `tcp_xmit_retransmit_queue` (`skb == rtx_head` → `rearm_timer` →
    /// `tcp_reset_xmit_timer`). Without it the timer runs from the last (partial) ACK, and a
    /// retransmission sent up to an RTT later through a full queue can time out spuriously.
    /// On by default (off in the ns2 profile: ns-2 re-arms only in `dupack_action` and at
    /// partial ACKs).
    #[serde(default = "yes")]
    pub rto_rearm_on_head_retransmit: bool,
    /// Forget the SACK scoreboard at a retransmission timeout, so the go-back-N resends SACKed
    /// segments too: ns-2 `Sack1TcpAgent::timeout` calls `scb_->ClearScoreBoard()`. Off by
    /// default (Linux keeps SACK information across an RTO unless the receiver reneges).
    #[serde(default)]
    pub sack_clear_on_rto: bool,
    /// ns-2.35's one-way agents' ACK processing (`RenoTcpAgent`, `NewRenoTcpAgent`,
    /// `Sack1TcpAgent` `recv` and `dupack_action`, tcp-reno.cc, tcp-newreno.cc, tcp-sack1.cc)
    /// instead of RFC 5681/6582/6675:
    /// - a fast retransmit only when `highest_ack_ > recover_` (`bug_fix_`), i.e. SND.UNA beyond
    ///   the HighData of the last fast retransmit or timeout by a segment, or before any data was
    ///   acknowledged — Reno included, so its second loss in a window waits for the timer;
    /// - Reno leaves recovery on any new ACK and NewReno on one reaching `recover_` with the
    ///   halved `cwnd_` as it stands (inflation `dupwnd_` removed, NewReno's partial deflation
    ///   kept), then grows it by that ACK (`opencwnd`); NewReno sends at most two segments per
    ///   ACK besides the retransmission during recovery (`send_much(0, 0, 2)`);
    /// - SACK (`Sack1TcpAgent`): a duplicate ACK counts only if its SACK blocks change the
    ///   scoreboard, which a new ACK outside recovery clears; after a timeout duplicate ACKs are
    ///   ignored until a new ACK (`timeout_`); recovery is paced by ns-2's `pipe_` counter
    ///   (outstanding − 3 at entry, −1 per ACK, −1 more per partial ACK, +1 per segment sent
    ///   after the fast retransmission; send while `pipe_ < ⌊cwnd_⌋`), every hole below the
    ///   highest SACKed segment is resent before new data (`GetNextRetran`), and leaving
    ///   recovery forgets `recover_` and does not grow the window;
    /// - RTT timing (Karn) is cancelled only by the fast retransmit and the timeout
    ///   (`reset_rtx_timer`), and partial ACKs give no sample.
    ///
    /// Off by default.
    #[serde(default)]
    pub ns2_recovery: bool,
}

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcAlgo::Sack,
            mss: 1448,
            initial_window: 10,
            max_burst: 0,
            abc: false,
            wscale: Some(7),
            timestamps: true,
            sack: true,
            ecn: false,
            rcv_buf: 4 << 20,
            max_cwnd_bytes: 0,
            delack: DelAckConfig::default(),
            rto: RtoConfig::default(),
            rto_model: RtoModel::Linux,
            dupthresh: 3,
            carry_payload: false,
            limited_transmit: false,
            misbehaving_ecn_response: false,
            no_congestion_avoidance: false,
            cwnd_validation: false,
            time_wait: None,
            rescue_retransmission: false,
            multcp_n: 1.0,
            multcp_slow_start: MultcpSlowStart::Reno,
            initial_ssthresh: 0,
            window_update: WindowUpdate::Rfc793,
            new_data_on_fast_retransmit: true,
            ns2_slowdown: false,
            rto_restart_on_fast_retransmit: false,
            // Linux `tcp_xmit_retransmit_queue`: retransmitting the first unacknowledged segment
            // re-arms the retransmission timer (`rearm_timer`, `tcp_reset_xmit_timer`).
            rto_rearm_on_head_retransmit: true,
            sack_clear_on_rto: false,
            ns2_recovery: false,
        }
    }
}

impl TcpConfig {
    /// The defaults of a profile.
    pub fn for_profile(p: TcpProfile) -> Self {
        match p {
            TcpProfile::Default => TcpConfig::default(),
            TcpProfile::Ns2 => TcpConfig::ns2(),
        }
    }

    /// ns-2.35's one-way TCP (`Agent/TCP` and its Reno, Newreno and Sack1 subclasses) with the
    /// defaults of its `tcl/lib/ns-default.tcl`, and the stock sinks. What is kept from
    /// [`TcpConfig::default`] is what ns-2 has no counterpart for (window scaling, ECN off).
    /// `window_` (ns-2's receiver window, 20 packets by default) is not taken: set `rcv_buf`.
    pub fn ns2() -> Self {
        TcpConfig {
            // `Agent/TCP set packetSize_ 1000`: payload bytes per segment.
            mss: 1000,
            // `windowInit_ 2` (`TcpAgent::initial_window`, `wnd_init_option_ 1`).
            initial_window: 2,
            // `maxburst_ 0`: `send_much` sends as much as the window allows.
            max_burst: 0,
            // `opencwnd` counts ACKs, not bytes (+1 per ACK in slow start, +1/cwnd after).
            abc: false,
            // `ts_option_ false`: no timestamps, so 40-byte headers (`tcpip_base_hdr_size_ 40`)
            // and RTT from one timed segment per window (`rtt_active_`/`rtt_seq_` in `output`,
            // ended in `newack`; Karn: `reset_rtx_timer` clears `rtt_active_`).
            timestamps: false,
            rto: RtoConfig {
                min: Dur::from_millis(200),        // minrto_ 0.2
                max: Dur::from_secs(60),           // maxrto_ 60
                initial: Dur::from_secs(3),        // rtxcur_init_ 3.0
                granularity: Dur::from_millis(10), // tcpTick_ 0.01
            },
            // `rfc2988_ true`: `rtt_timeout`, `rtt_backoff`.
            rto_model: RtoModel::Ns2Rfc2988,
            // numdupacks_ 3.
            dupthresh: 3,
            // `singledup_ 1`: `send_one()` on the first and second duplicate ACK (tcp-reno.cc,
            // tcp-newreno.cc, tcp-sack1.cc `recv`).
            limited_transmit: true,
            // The stock `Agent/TCPSink` ACKs every segment; with `delack = 2` the receiver is
            // `TCPSink/DelAck`: an ACK for every second segment or `interval_ 100ms` after the
            // first unacknowledged one (tcp-sink.cc `DelAckSink::recv`, `DelAckSink::timeout`).
            delack: DelAckConfig { every: 1, timeout: Dur::from_millis(100) },
            // `slowdown(CLOSE_SSTHRESH_HALF|…)` from cwnd, at every timeout.
            ns2_slowdown: true,
            // `dupack_action` → `reset_rtx_timer(1, 0)`: a full RTO for the fast retransmit.
            rto_restart_on_fast_retransmit: true,
            // ...and no re-arming at other retransmissions (`output()` arms the timer only
            // when none is pending).
            rto_rearm_on_head_retransmit: false,
            // `Sack1TcpAgent::timeout`: `scb_->ClearScoreBoard()`.
            sack_clear_on_rto: true,
            // `recv` / `dupack_action` of Agent/TCP/Reno, Newreno and Sack1 (`bugFix_ true`,
            // `exitFastRetrans_ true`, `partial_window_deflation_ 1`, `newreno_changes1_ 1`).
            ns2_recovery: true,
            // One-way agents: a timeout resets `t_seqno_` (go-back-N) and the sender sends
            // new data on the duplicate ACK that triggers the fast retransmit as the window
            // allows (`dupack_action` then `send_much`), as the default.
            ..TcpConfig::default()
        }
    }
}
