//! BBR v1 (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016),
//! following Linux's net/ipv4/tcp_bbr.c, in bytes rather than packets.
//!
//! Modelled: the model (windowed max of delivery-rate samples over 10 packet-timed rounds with
//! Nichols' running-max filter, lib/minmax.c; min RTT over 10 s), the four modes
//! STARTUP → DRAIN → PROBE_BW ⇄ PROBE_RTT, the pacing-gain cycle, full-bandwidth detection, the
//! cwnd rules (target = gain·BDP + quantization budget, packet conservation in the first round of
//! recovery, restore on exit) and the pacing rate. Not modelled: the long-term (policer)
//! bandwidth estimate (`bbr_lt_bw_sampling`), the ACK-aggregation allowance
//! (`bbr_update_ack_aggregation`), idle restart (`bbr_cwnd_event` `CA_EVENT_TX_START`), and
//! Linux's pacing credit (`tcp_update_skb_after_send`).

use super::{Ack, CaState, Controller, Window};
use crate::tcp::config::TcpConfig;
use crate::time::{Dur, Time};

/// STARTUP's pacing and cwnd gain, 2/ln 2 (`bbr_high_gain` = 2885/1000).
pub(crate) const HIGH_GAIN: f64 = 2.885;
/// DRAIN's pacing gain, its inverse (`bbr_drain_gain` = 1000/2885).
pub(crate) const DRAIN_GAIN: f64 = 1.0 / 2.885;
/// PROBE_BW's cwnd gain (`bbr_cwnd_gain`).
pub(crate) const CWND_GAIN: f64 = 2.0;
/// PROBE_BW's pacing-gain cycle (`bbr_pacing_gain`).
pub(crate) const PACING_GAIN: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Window of the max-bandwidth filter in rounds (`bbr_bw_rtts` = cycle length + 2).
pub(crate) const BW_RTTS: u64 = 10;
/// Window of the min-RTT filter (`bbr_min_rtt_win_sec`).
pub(crate) const MIN_RTT_WIN: Dur = Dur::from_millis(10_000);
/// Time spent in PROBE_RTT at the minimum window (`bbr_probe_rtt_mode_ms`).
pub(crate) const PROBE_RTT_TIME: Dur = Dur::from_millis(200);
/// The minimum window in segments (`bbr_cwnd_min_target`).
pub(crate) const CWND_MIN_SEGS: u64 = 4;
/// Growth that counts as "still growing" in STARTUP (`bbr_full_bw_thresh` = 5/4) and the rounds
/// without it that end STARTUP (`bbr_full_bw_cnt`).
pub(crate) const FULL_BW_THRESH: f64 = 1.25;
pub(crate) const FULL_BW_CNT: u32 = 3;
/// Pace below the estimate by this fraction (`bbr_pacing_margin_percent` = 1).
const PACING_MARGIN: f64 = 0.01;
/// Linux's initial window (`TCP_INIT_CWND`), in segments.
const INIT_CWND_SEGS: u64 = 10;

/// BBR's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Kathleen Nichols' windowed running maximum of three samples (Linux lib/minmax.c,
/// `minmax_running_max` and `minmax_subwin_update`), time in rounds.
#[derive(Clone, Copy, Debug, Default)]
struct MaxFilter {
    s: [(u64, f64); 3],
}

impl MaxFilter {
    fn get(&self) -> f64 {
        self.s[0].1
    }
    fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        let val = (t, v);
        if v >= self.s[0].1 || t - self.s[2].0 > win {
            self.s = [val; 3];
            return v;
        }
        if v >= self.s[1].1 {
            self.s[1] = val;
            self.s[2] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        let dt = t - self.s[0].0;
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t - self.s[0].0 > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// BBR v1 state (Linux `struct bbr`).
#[derive(Clone, Debug)]
pub(crate) struct Bbr {
    mode: BbrMode,
    mss: u64,
    /// Max filter of bandwidth samples (bytes/s) over `BW_RTTS` rounds.
    bw: MaxFilter,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    min_rtt: Option<Dur>,
    min_rtt_stamp: Time,
    probe_rtt_done: Option<Time>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    prev_ca_state: CaState,
    prior_cwnd: u64,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    cycle_stamp: Time,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing_rate: u64,
    has_seen_rtt: bool,
    /// State of the generator that picks PROBE_BW's first phase (Linux: `prandom_u32_max`).
    rand: u64,
    initialised: bool,
}

impl Bbr {
    pub fn new(cfg: &TcpConfig) -> Bbr {
        let mut b = Bbr {
            mode: BbrMode::Startup,
            mss: cfg.mss.max(1) as u64,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            prior_cwnd: 0,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: 0,
            has_seen_rtt: false,
            rand: 0x9e37_79b9_7f4a_7c15,
            initialised: false,
        };
        // `bbr_init` → `bbr_init_pacing_rate_from_rtt` with the initial window, before any RTT.
        b.init_pacing_rate(cfg.initial_window.max(1) as u64 * b.mss, None);
        b
    }

    /// Seed of the phase randomisation (the connection's initial sequence number, itself drawn
    /// from the run's seed), for reproducible runs.
    pub fn seed(&mut self, s: u64) {
        self.rand ^= s.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1;
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    #[cfg(test)]
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }
    pub fn max_bw(&self) -> f64 {
        self.bw.get()
    }
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }
    #[cfg(test)]
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    #[cfg(test)]
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64*.
        let mut x = self.rand;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rand = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32
    }

    /// `bbr_bdp` plus `bbr_quantization_budget`: gain·BDP in bytes, plus three send quanta,
    /// rounded up to an even number of segments, plus two segments in the 1.25 phase. Without
    /// an RTT sample, the initial window (`TCP_INIT_CWND`).
    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        let Some(min_rtt) = self.min_rtt else {
            return INIT_CWND_SEGS * self.mss;
        };
        let bdp = bw * min_rtt.as_secs_f64();
        let segs = (bdp * gain / self.mss as f64).ceil() as u64;
        let mut segs = segs + 3 * self.tso_segs_goal();
        segs = (segs + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            segs += 2;
        }
        segs * self.mss
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate (`tcp_tso_autosize`,
    /// `sk_pacing_shift` = 10), at least `bbr_min_tso_segs` (1 below 1.2 Mbit/s, else 2), at most
    /// 64 KB.
    fn tso_segs_goal(&self) -> u64 {
        let min = if self.pacing_rate < 1_200_000 / 8 { 1 } else { 2 };
        ((self.pacing_rate >> 10) / self.mss).clamp(min, (65536 / self.mss).max(min))
    }

    /// `bbr_rate_bytes_per_sec`, with the pacing margin.
    fn rate(&self, bw: f64, gain: f64) -> u64 {
        (bw * gain * (1.0 - PACING_MARGIN)) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`: high gain × cwnd / RTT (1 ms without a sample).
    fn init_pacing_rate(&mut self, cwnd: u64, srtt: Option<Dur>) {
        let rtt = match srtt {
            Some(r) if r.0 > 0 => {
                self.has_seen_rtt = true;
                r
            }
            _ => Dur::from_millis(1),
        };
        let bw = cwnd as f64 / rtt.as_secs_f64();
        self.pacing_rate = self.rate(bw, HIGH_GAIN);
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self, cwnd: u64) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_update_bw`: packet-timed rounds and the max-bandwidth filter.
    fn update_bw(&mut self, a: &Ack) {
        self.round_start = false;
        let Some(rs) = a.rate.filter(|r| r.valid) else { return };
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = rs.tp_delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = rs.bw();
        // App-limited samples count only if they raise the estimate.
        if !rs.is_app_limited || bw >= self.bw.get() {
            self.bw.update(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_is_next_cycle_phase` / `bbr_advance_cycle_phase` (`bbr_update_cycle_phase`).
    fn update_cycle_phase(&mut self, a: &Ack) {
        if self.mode != BbrMode::ProbeBw {
            return;
        }
        let min_rtt = self.min_rtt.unwrap_or(Dur::ZERO);
        let full_length = a.now.since(self.cycle_stamp) > min_rtt;
        let gain = self.pacing_gain;
        let inflight = a.rate.map_or(a.flight_before, |r| r.prior_in_flight);
        let losses = a.rate.is_some_and(|r| r.losses > 0);
        let next = if gain == 1.0 {
            full_length
        } else if gain > 1.0 {
            full_length && (losses || inflight >= self.inflight(self.bw.get(), gain))
        } else {
            full_length || inflight <= self.inflight(self.bw.get(), 1.0)
        };
        if next {
            self.cycle_idx = (self.cycle_idx + 1) % PACING_GAIN.len();
            self.cycle_stamp = a.now;
        }
    }

    /// `bbr_reset_probe_bw_mode`: start the cycle at a random phase other than 0.75.
    fn reset_probe_bw(&mut self, now: Time) {
        self.mode = BbrMode::ProbeBw;
        let r = (self.next_rand() % 7) as usize;
        self.cycle_idx = (PACING_GAIN.len() - 1 - r + 1) % PACING_GAIN.len();
        self.cycle_stamp = now;
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self, now: Time) {
        if self.full_bw_reached {
            self.reset_probe_bw(now);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// `bbr_check_full_bw_reached`: three rounds in a row without 25% growth.
    fn check_full_bw_reached(&mut self, a: &Ack) {
        if self.full_bw_reached || !self.round_start || a.rate.is_none_or(|r| r.is_app_limited) {
            return;
        }
        let bw = self.bw.get();
        if bw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = bw;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, w: &mut Window, a: &Ack) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            w.ssthresh = self.inflight(self.bw.get(), 1.0);
        }
        if self.mode == BbrMode::Drain && a.flight_after <= self.inflight(self.bw.get(), 1.0) {
            self.reset_probe_bw(a.now);
        }
    }

    /// `bbr_update_min_rtt` with `bbr_check_probe_rtt_done`.
    fn update_min_rtt(&mut self, w: &mut Window, a: &Ack) {
        let expired = a.now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(r) = a.rate.and_then(|r| r.rtt) {
            if self.min_rtt.is_none_or(|m| r < m) || expired {
                self.min_rtt = Some(r);
                self.min_rtt_stamp = a.now;
            }
        }
        if expired && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(w.cwnd);
            self.probe_rtt_done = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            match self.probe_rtt_done {
                None if a.flight_after <= CWND_MIN_SEGS * self.mss => {
                    self.probe_rtt_done = Some(a.now + PROBE_RTT_TIME);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = a.rate.map_or(0, |r| r.tp_delivered);
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && a.now > done {
                        self.min_rtt_stamp = a.now;
                        w.cwnd = w.cwnd.max(self.prior_cwnd);
                        self.reset_mode(a.now);
                    }
                }
                None => {}
            }
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, w: &Window, a: &Ack) {
        let bw = self.bw.get();
        if !self.has_seen_rtt && a.srtt.is_some() {
            self.init_pacing_rate(w.cwnd, a.srtt);
        }
        let rate = self.rate(bw, self.pacing_gain);
        if rate > 0 && (self.full_bw_reached || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    /// `bbr_set_cwnd` with `bbr_set_cwnd_to_recover_or_restore`. Linux skips both on an ACK
    /// that delivers nothing and leaves cwnd to PRR; here recovery does not touch a BBR cwnd,
    /// so the recovery entry and exit rules run on every ACK and only growth needs a delivery.
    fn set_cwnd(&mut self, w: &mut Window, a: &Ack) {
        let acked = a.rate.map_or(a.acked, |r| r.acked_sacked);
        let min = CWND_MIN_SEGS * self.mss;
        let mut cwnd = w.cwnd;
        let losses = a.rate.map_or(0, |r| r.losses);
        if losses > 0 {
            cwnd = cwnd.saturating_sub(losses).max(self.mss);
        }
        let state = a.ca_state;
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            // The first round of recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = a.rate.map_or(0, |r| r.tp_delivered);
            cwnd = a.flight_after + acked;
        } else if self.prev_ca_state >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            cwnd = cwnd.max(a.flight_after + acked);
        } else if acked > 0 {
            let target = self.inflight(self.bw.get(), self.cwnd_gain);
            let delivered = a.rate.map_or(u64::MAX, |r| r.tp_delivered);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || delivered < INIT_CWND_SEGS * self.mss {
                cwnd += acked;
            }
            cwnd = cwnd.max(min);
        }
        w.cwnd = cwnd.min(w.cap).max(self.mss);
        if self.mode == BbrMode::ProbeRtt {
            w.cwnd = w.cwnd.min(min);
        }
    }

    /// `bbr_main`: update the model, then set pacing rate and cwnd.
    fn main(&mut self, w: &mut Window, a: &Ack) {
        if !self.initialised {
            // `bbr_init`.
            self.initialised = true;
            self.mss = w.mss;
            self.min_rtt_stamp = a.now;
            self.init_pacing_rate(w.cwnd, a.srtt);
        }
        self.mss = w.mss;
        self.update_bw(a);
        self.update_cycle_phase(a);
        self.check_full_bw_reached(a);
        self.check_drain(w, a);
        self.update_min_rtt(w, a);
        self.update_gains();
        self.set_pacing_rate(w, a);
        self.set_cwnd(w, a);
    }
}

impl BbrMode {
    /// The mode's name as Linux's `tcp_bbr.c` spells it in lower case (`probe_bw`, …).
    pub fn name(self) -> &'static str {
        match self {
            BbrMode::Startup => "startup",
            BbrMode::Drain => "drain",
            BbrMode::ProbeBw => "probe_bw",
            BbrMode::ProbeRtt => "probe_rtt",
        }
    }
}

impl Controller for Bbr {
    fn on_ack(&mut self, _w: &mut Window, _a: &Ack) {}

    fn cong_control(&mut self, w: &mut Window, a: &Ack) -> bool {
        self.main(w, a);
        true
    }

    /// `bbr_ssthresh`: save cwnd, leave ssthresh as it is.
    fn ssthresh(&mut self, w: &Window, _flight: u64) -> u64 {
        self.save_cwnd(w.cwnd);
        w.ssthresh
    }

    /// `bbr_set_state(TCP_CA_Loss)`: the RTO ends the round and restarts full-bandwidth
    /// detection's reference.
    fn on_rto(&mut self, _w: &mut Window) {
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
    }

    fn controls_cwnd(&self) -> bool {
        true
    }

    fn pacing_rate(&self) -> Option<u64> {
        Some(self.pacing_rate.max(1))
    }
}

#[cfg(test)]
mod tests;
