//! Round-trip estimation and retransmission-timeout computation: Linux's (per-window deviation
//! with the minimum RTO added), RFC 6298 with a clock granularity `G` that also quantises when
//! timers fire, ns-2's `TcpAgent` timer, or Linux 2.2's ([`RtoModel`]).

use super::config::{RtoConfig, RtoModel};
use crate::time::{Dur, Time};

/// The sender's state an RTT sample is taken in (see [`RttEstimator::sample`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SampleAt {
    /// Congestion window in segments.
    pub cwnd_segments: u64,
    /// SND.UNA and SND.NXT as stream offsets, with the ACK applied.
    pub una: u64,
    pub nxt: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    cfg: RtoConfig,
    model: RtoModel,
    /// Smoothed RTT (ns); `None` before the first sample.
    srtt: Option<u64>,
    rttvar: u64,
    /// ns-2: SRTT in ticks × 8 and RTTVAR in ticks × 4 (`t_srtt_`, `t_rttvar_`); 0 = no sample.
    /// Linux 2.2: the same fixed point for `srtt` and `mdev` (jiffies × 8, mean deviation × 4).
    /// Linux: `srtt_us` and `mdev_us` in ns (SRTT × 8, mean deviation × 4).
    ns2_srtt8: i64,
    ns2_rttvar4: i64,
    /// Linux: `mdev_max_us` (largest `mdev` of the current window, at least the minimum RTO),
    /// `rttvar_us` (the deviation term of the RTO), both ns; `rtt_seq` (the window ends when
    /// SND.UNA passes it), a stream offset.
    lx_mdev_max: i64,
    lx_rttvar: i64,
    lx_rtt_seq: u64,
    /// RTO without backoff (ns).
    base: u64,
    /// Number of doublings applied (exponential backoff).
    backoff: u32,
}

#[inline]
fn round_up(x: u64, g: u64) -> u64 {
    if g <= 1 {
        x
    } else {
        x.div_ceil(g).saturating_mul(g)
    }
}

impl RttEstimator {
    pub fn new(cfg: RtoConfig, model: RtoModel) -> Self {
        let g = cfg.granularity.0.max(1);
        let base = match model {
            RtoModel::Rfc6298 | RtoModel::Linux => round_up(cfg.initial.0, g).min(cfg.max.0.max(1)),
            // ns-2: t_rtxcur_ = rtxcur_init_, used as is until the first sample; Linux 2.2:
            // TCP_TIMEOUT_INIT until the first sample.
            RtoModel::Ns2 | RtoModel::Ns2Rfc2988 | RtoModel::Linux22 => cfg.initial.0.max(1),
        };
        RttEstimator {
            cfg,
            model,
            srtt: None,
            rttvar: 0,
            ns2_srtt8: 0,
            ns2_rttvar4: 0,
            lx_mdev_max: 0,
            lx_rttvar: 0,
            lx_rtt_seq: 0,
            base,
            backoff: 0,
        }
    }

    /// Feed one RTT sample `r` taken at `now`; `at` is the sender's state with the ACK applied
    /// (the congestion window only Linux 2.2's RTO uses, SND.UNA and SND.NXT only Linux's).
    /// Resets the backoff (Karn: only unambiguous samples are fed).
    pub fn sample(&mut self, now: Time, r: Dur, at: SampleAt) {
        let r = r.0.max(1);
        let cwnd_segments = at.cwnd_segments;
        match self.model {
            RtoModel::Linux => {
                self.sample_linux(r, at.una, at.nxt);
                self.backoff = 0;
                return;
            }
            RtoModel::Ns2 | RtoModel::Ns2Rfc2988 => {
                self.sample_ns2(now, r);
                self.backoff = 0;
                return;
            }
            RtoModel::Linux22 => {
                self.sample_linux22(now, r, cwnd_segments);
                self.backoff = 0;
                return;
            }
            RtoModel::Rfc6298 => {}
        }
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let d = s.abs_diff(r);
                self.rttvar = (3 * self.rttvar + d) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
        let g = self.cfg.granularity.0.max(1);
        let s = self.srtt.unwrap_or(r);
        let rto = s.saturating_add(g.max(self.rttvar.saturating_mul(4)));
        let rto = round_up(rto, g).max(self.cfg.min.0);
        self.base = rto.min(self.cfg.max.0.max(1));
        self.backoff = 0;
    }

    /// Linux `tcp_rtt_estimator` and `tcp_set_rto` (net/ipv4/tcp_input.c, 3.x to 6.x): SRTT
    /// (× 8) and the mean deviation (× 4) as Jacobson's, except that a sample *below* SRTT moves
    /// the deviation with gain 1/32 instead of 1/4; the RTO's deviation term `rttvar` is the
    /// largest deviation seen in the current window of data (`mdev_max`, which starts each window
    /// at the minimum RTO) and, when a window ends (SND.UNA passes the SND.NXT recorded at its
    /// start), decays by a quarter towards it; RTO = SRTT + `rttvar`, rounded up to the clock
    /// tick, capped at `max` (`tcp_bound_rto`). So the minimum RTO is *added* to SRTT rather
    /// than being a floor: per-ACK samples cannot shrink the RTO to just above SRTT. The first
    /// sample gives SRTT = m and `rttvar` = max(2m, minimum RTO).
    fn sample_linux(&mut self, r: u64, una: u64, nxt: u64) {
        let rto_min = self.cfg.min.0 as i64;
        let mut m = r.min(i64::MAX as u64 >> 4) as i64;
        if self.ns2_srtt8 != 0 {
            m -= self.ns2_srtt8 >> 3; // error in the estimate
            self.ns2_srtt8 += m; // SRTT = 7/8 SRTT + 1/8 m
            if m < 0 {
                m = -m - (self.ns2_rttvar4 >> 2);
                if m > 0 {
                    m >>= 3; // a lower sample raises mdev with gain 1/32 only
                }
            } else {
                m -= self.ns2_rttvar4 >> 2;
            }
            self.ns2_rttvar4 += m; // mdev = 3/4 mdev + 1/4 |error|
            if self.ns2_rttvar4 > self.lx_mdev_max {
                self.lx_mdev_max = self.ns2_rttvar4;
                self.lx_rttvar = self.lx_rttvar.max(self.lx_mdev_max);
            }
            if una > self.lx_rtt_seq {
                if self.lx_mdev_max < self.lx_rttvar {
                    self.lx_rttvar -= (self.lx_rttvar - self.lx_mdev_max) >> 2;
                }
                self.lx_rtt_seq = nxt;
                self.lx_mdev_max = rto_min;
            }
        } else {
            self.ns2_srtt8 = m << 3;
            self.ns2_rttvar4 = m << 1;
            self.lx_rttvar = self.ns2_rttvar4.max(rto_min);
            self.lx_mdev_max = self.lx_rttvar;
            self.lx_rtt_seq = nxt;
        }
        self.ns2_srtt8 = self.ns2_srtt8.max(1);
        let srtt = (self.ns2_srtt8 >> 3) as u64;
        self.srtt = Some(srtt);
        self.rttvar = (self.ns2_rttvar4.max(0) as u64) / 4;
        let g = self.cfg.granularity.0.max(1);
        let rto = round_up(srtt.saturating_add(self.lx_rttvar.max(0) as u64), g);
        self.base = rto.min(self.cfg.max.0.max(1));
    }

    /// ns-2 `TcpAgent::rtt_update` (no timestamps): the sample is the number of clock ticks
    /// between the send time and now (`int((tao + tickoff)/tcp_tick_)`), at least 1; then the
    /// fixed-point Jacobson update and `t_rtxcur_ = ⌊srtt + 4·rttvar⌋` ticks.
    fn sample_ns2(&mut self, now: Time, r: u64) {
        let g = self.tick_sample(now, r, false);
        // rttvar_exp_ = 2: ((t_rttvar_ << (2 + (3 − 2))) + t_srtt_) >> 3.
        let rtx_ticks = ((self.ns2_rttvar4 << 3) + self.ns2_srtt8) >> 3;
        self.base = (rtx_ticks.max(1) as u64).saturating_mul(g);
    }

    /// The fixed-point Jacobson update both tick models share (ns-2 `rtt_update`, Linux 2.2
    /// `tcp_rtt_estimator`): the sample is the number of ticks G between the send time and now,
    /// at least 1; SRTT is kept × 8 and the deviation × 4. A first sample sets the deviation to
    /// half the sample (ns-2) or the whole sample (`linux`); ns-2 also keeps both above 0.
    /// Updates `srtt`/`rttvar` and returns G.
    fn tick_sample(&mut self, now: Time, r: u64, linux: bool) -> u64 {
        let g = self.cfg.granularity.0.max(1);
        let sent = now.0.saturating_sub(r);
        let m = ((now.0 / g) as i64 - (sent / g) as i64).max(1);
        if self.ns2_srtt8 != 0 {
            let mut e = m - (self.ns2_srtt8 >> 3);
            self.ns2_srtt8 += e;
            e = e.abs() - (self.ns2_rttvar4 >> 2);
            self.ns2_rttvar4 += e;
            if !linux {
                self.ns2_srtt8 = self.ns2_srtt8.max(1);
                self.ns2_rttvar4 = self.ns2_rttvar4.max(1);
            }
        } else {
            self.ns2_srtt8 = m << 3;
            self.ns2_rttvar4 = if linux { m << 2 } else { m << 1 };
        }
        self.srtt = Some((self.ns2_srtt8.max(0) as u64).saturating_mul(g) / 8);
        self.rttvar = (self.ns2_rttvar4.max(0) as u64).saturating_mul(g) / 4;
        g
    }

    /// Linux 2.2 `tcp_rtt_estimator` + `tcp_set_rto` + `tcp_bound_rto`: the sample in jiffies
    /// (ticks of G crossed, at least 1), `srtt` (× 8) and `mdev` (× 4) updated as Jacobson's
    /// fixed point (first sample: srtt = m, mdev = m), R = srtt + mdev (i.e. SRTT + 4·mean
    /// deviation), RTO = R + R/4 + R >> (cwnd − 1), then bounded to [`min`, `max`].
    fn sample_linux22(&mut self, now: Time, r: u64, cwnd_segments: u64) {
        let g = self.tick_sample(now, r, true);
        let r0 = ((self.ns2_srtt8 >> 3) + self.ns2_rttvar4).max(0);
        // A shift by 31 or more leaves nothing of a 32-bit jiffies count (2.2's `long` on
        // i386; the hardware's masking of shift counts ≥ 32 is not modelled).
        let shift = cwnd_segments.max(1) - 1;
        let extra = if shift >= 31 { 0 } else { r0 >> shift };
        let rto_ticks = (r0 + (r0 >> 2) + extra) as u64;
        let max = self.cfg.max.0.max(1);
        self.base = rto_ticks.saturating_mul(g).min(max).max(self.cfg.min.0);
    }

    /// End the exponential backoff without a sample (ns-2: `t_backoff_ = 1` on a partial ACK).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt.map(Dur)
    }

    /// Current RTO including backoff, clamped to `max`.
    pub fn rto(&self) -> Dur {
        let max = self.cfg.max.0.max(1);
        let v = if self.backoff >= 63 { u64::MAX } else { self.base.saturating_mul(1u64 << self.backoff) };
        match self.model {
            // Linux `tcp_retransmit_timer`: rto = min(rto << 1, TCP_RTO_MAX) per timeout (2.2
            // too, with 120·HZ).
            RtoModel::Rfc6298 | RtoModel::Linux | RtoModel::Linux22 => Dur(v.min(max)),
            // ns-2 `rtt_timeout()` (rfc2988_ off): t_rtxcur_ · t_backoff_, raised to minrto_,
            // capped at maxrto_, and never below two ticks.
            RtoModel::Ns2 => {
                let two_ticks = self.cfg.granularity.0.max(1).saturating_mul(2);
                Dur(v.max(self.cfg.min.0).min(max).max(two_ticks))
            }
            // ns-2.35 `rtt_timeout()` with `rfc2988_` (its default): `minrto_ · t_backoff_`
            // if `t_rtxcur_ < minrto_`, else `t_rtxcur_ · t_backoff_`; capped at `maxrto_`;
            // never below two ticks.
            RtoModel::Ns2Rfc2988 => {
                let two_ticks = self.cfg.granularity.0.max(1).saturating_mul(2);
                let b = self.base.max(self.cfg.min.0);
                let v = if self.backoff >= 63 { u64::MAX } else { b.saturating_mul(1u64 << self.backoff) };
                Dur(v.min(max).max(two_ticks))
            }
        }
    }

    pub fn back_off(&mut self) {
        match self.model {
            RtoModel::Rfc6298 | RtoModel::Linux | RtoModel::Linux22 => {
                if self.rto().0 < self.cfg.max.0 {
                    self.backoff += 1;
                }
            }
            // ns-2: `if (t_backoff_ < 64) t_backoff_ <<= 1`.
            RtoModel::Ns2 => {
                if self.backoff < 6 {
                    self.backoff += 1;
                }
            }
            // ns-2.35 `rtt_backoff()`: `if (t_backoff_ < 64 || (rfc2988_ && rtt_timeout() <
            // maxrto_)) t_backoff_ <<= 1`; then, once `t_backoff_ > 8`, the smoothed RTT is
            // clobbered (`t_rttvar_ += t_srtt_ >> 3; t_srtt_ = 0`), so `rtt_update` treats the
            // next sample as the first. `t_rtxcur_` itself is kept until then.
            RtoModel::Ns2Rfc2988 => {
                if (self.backoff < 6 || self.rto().0 < self.cfg.max.0) && self.backoff < 62 {
                    self.backoff += 1;
                }
                if self.backoff > 3 {
                    self.ns2_rttvar4 += self.ns2_srtt8 >> 3;
                    self.ns2_srtt8 = 0;
                }
            }
        }
    }

    /// Deadline for a timer of length `d` armed at `now`: RFC 6298 and Linux 2.2 models, the
    /// first clock tick (multiple of the granularity since Time 0; a jiffy for Linux) at or
    /// after `now + d`; ns-2 model, `now + d`.
    #[inline]
    pub fn deadline(&self, now: Time, d: Dur) -> Time {
        match self.model {
            RtoModel::Rfc6298 | RtoModel::Linux | RtoModel::Linux22 => {
                Time(round_up(now.0.saturating_add(d.0), self.cfg.granularity.0.max(1)))
            }
            RtoModel::Ns2 | RtoModel::Ns2Rfc2988 => Time(now.0.saturating_add(d.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cw(n: u64) -> SampleAt {
        SampleAt { cwnd_segments: n, ..Default::default() }
    }

    fn cfg(g_ms: u64, min_ms: u64) -> RtoConfig {
        RtoConfig {
            min: Dur::from_millis(min_ms),
            max: Dur::from_secs(60),
            initial: Dur::from_secs(3),
            granularity: Dur::from_millis(g_ms),
        }
    }

    #[test]
    fn ns2_sub_tick_rtts_give_three_ticks() {
        // ns-2 with tcpTick_ 0.1: any RTT below a tick counts as 1 tick; srtt = 1 tick,
        // rttvar = 1/2 tick, and the fixed-point rttvar never decays below that (2 >> 2 = 0),
        // so the RTO stays ⌊1 + 4·0.5⌋ = 3 ticks = 300 ms for every later sample.
        let mut e = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        assert_eq!(e.rto(), Dur::from_secs(3), "rtxcur_init_ before the first sample");
        let mut now = Time(Dur::from_millis(1234).0);
        for _ in 0..50 {
            e.sample(now, Dur::from_millis(30), cw(1));
            assert_eq!(e.rto(), Dur::from_millis(300));
            now += Dur::from_millis(37);
        }
        // The RFC 6298 model with the same tick gives 30 ms + 100 ms → 200 ms.
        let mut f = RttEstimator::new(cfg(100, 0), RtoModel::Rfc6298);
        for _ in 0..50 {
            f.sample(now, Dur::from_millis(30), cw(1));
        }
        assert_eq!(f.rto(), Dur::from_millis(200));
    }

    #[test]
    fn ns2_counts_tick_boundaries_crossed() {
        let mut e = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        // Sent at 0.95 s, acked at 1.27 s: the 0.32 s cross the tick boundaries 1.0, 1.1 and
        // 1.2 (⌊12.7⌋ − ⌊9.5⌋ = 3 ticks); srtt 3, rttvar 1.5 → ⌊3 + 6⌋ = 9 ticks.
        e.sample(Time(Dur::from_millis(1270).0), Dur::from_millis(320), cw(1));
        assert_eq!(e.rto(), Dur::from_millis(900));
    }

    #[test]
    fn ns2_backoff_min_and_floor() {
        let mut e = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        e.sample(Time(Dur::from_millis(500).0), Dur::from_millis(5), cw(1));
        assert_eq!(e.rto(), Dur::from_millis(300));
        e.back_off();
        assert_eq!(e.rto(), Dur::from_millis(600));
        for _ in 0..10 {
            e.back_off();
        }
        assert_eq!(e.rto(), Dur::from_millis(300 * 64), "t_backoff_ stops at 64");
        // minrto_ raises the timeout, two ticks is the floor even with minrto_ 0.
        let mut m = RttEstimator::new(cfg(100, 1000), RtoModel::Ns2);
        m.sample(Time(Dur::from_millis(500).0), Dur::from_millis(5), cw(1));
        assert_eq!(m.rto(), Dur::from_secs(1));
        let mut t = RttEstimator::new(cfg(10, 0), RtoModel::Ns2);
        t.sample(Time(Dur::from_millis(500).0), Dur::from_micros(30), cw(1));
        assert_eq!(t.rto(), Dur::from_millis(30), "1 tick + 4·0.5 tick = 3 ticks of 10 ms");
    }

    #[test]
    fn ns2_rfc2988_clamps_before_backoff_and_clobbers_srtt() {
        // tcpTick_ 10 ms, minrto_ 200 ms: a 50 ms path gives t_rtxcur_ = 5 + 4·2.5 = 15 ticks
        // = 150 ms < minrto_, so the timeouts are 200, 400, 800 ms (rfc2988_), where the older
        // rule gives max(150·2^k, 200) = 200, 300, 600 ms.
        let mut e = RttEstimator::new(cfg(10, 200), RtoModel::Ns2Rfc2988);
        let mut o = RttEstimator::new(cfg(10, 200), RtoModel::Ns2);
        let at = Time(Dur::from_millis(1000).0);
        e.sample(at, Dur::from_millis(50), cw(1));
        o.sample(at, Dur::from_millis(50), cw(1));
        let mut got = vec![e.rto()];
        let mut old = vec![o.rto()];
        for _ in 0..2 {
            e.back_off();
            o.back_off();
            got.push(e.rto());
            old.push(o.rto());
        }
        assert_eq!(got, [200, 400, 800].map(Dur::from_millis));
        assert_eq!(old, [200, 300, 600].map(Dur::from_millis));
        // Backoff continues to maxrto_ (beyond 64×) and is capped there.
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Dur::from_secs(60));
        // t_backoff_ > 8 clobbered t_srtt_: the next sample (300 ms) re-initialises, giving
        // 30 + 4·15 = 90 ticks, not a smoothed value near 5 ticks.
        e.sample(Time(Dur::from_millis(100_000).0), Dur::from_millis(300), cw(1));
        assert_eq!(e.rto(), Dur::from_millis(900));
        assert_eq!(e.srtt(), Some(Dur::from_millis(300)));
    }

    #[test]
    fn ns2_timer_is_not_tick_aligned() {
        let now = Time(Dur::from_millis(1234).0);
        let d = Dur::from_millis(300);
        let ns2 = RttEstimator::new(cfg(100, 0), RtoModel::Ns2);
        assert_eq!(ns2.deadline(now, d), Time(Dur::from_millis(1534).0));
        let bsd = RttEstimator::new(cfg(100, 0), RtoModel::Rfc6298);
        assert_eq!(bsd.deadline(now, d), Time(Dur::from_millis(1600).0));
    }
    #[test]
    fn linux22_rto_depends_on_the_window_at_the_sample() {
        // HZ = 100, HZ/5 floor. First sample 5 jiffies (50 ms): srtt = 5, mdev (× 4) = 20, so
        // R = 25 jiffies; one segment: 25 + 6 + 25 = 56 jiffies, two: 25 + 6 + 12 = 43,
        // 31 or more: 25 + 6 = 31.
        let at = Time(Dur::from_millis(1000).0);
        for (cwnd, want) in [(1, 560), (2, 430), (3, 370), (31, 310), (32, 310), (1000, 310)] {
            let mut e = RttEstimator::new(cfg(10, 200), RtoModel::Linux22);
            e.sample(at, Dur::from_millis(50), cw(cwnd));
            assert_eq!(e.rto(), Dur::from_millis(want), "cwnd {cwnd}");
        }
        // Steady 50 ms samples: mdev decays by a quarter per sample towards 0 (its fixed point
        // keeps 3 units = 0.75 jiffy of mean deviation), so R → 5 + 3 = 8 jiffies and the RTO
        // at one segment → 8 + 2 + 8 = 18 jiffies: below the floor, 200 ms.
        let mut e = RttEstimator::new(cfg(10, 200), RtoModel::Linux22);
        let mut now = at;
        for _ in 0..40 {
            e.sample(now, Dur::from_millis(50), cw(1));
            now += Dur::from_millis(50);
        }
        assert_eq!(e.rto(), Dur::from_millis(200));
        assert_eq!(e.srtt(), Some(Dur::from_millis(50)));
    }

    #[test]
    fn linux22_backs_off_by_doubling_and_keeps_jiffy_timers() {
        let mut e = RttEstimator::new(cfg(10, 200), RtoModel::Linux22);
        assert_eq!(e.rto(), Dur::from_secs(3), "TCP_TIMEOUT_INIT before the first sample");
        e.sample(Time(Dur::from_millis(1000).0), Dur::from_millis(50), cw(1));
        e.back_off();
        assert_eq!(e.rto(), Dur::from_millis(1120));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Dur::from_secs(60), "capped at max");
        // A new sample removes the backoff.
        e.sample(Time(Dur::from_millis(2000).0), Dur::from_millis(50), cw(1));
        assert!(e.rto() < Dur::from_secs(1));
        // Timers fire on a jiffy.
        assert_eq!(
            e.deadline(Time(Dur::from_micros(1_234_500).0), Dur::from_millis(200)),
            Time(Dur::from_millis(1440).0)
        );
    }

    fn at(una: u64, nxt: u64) -> SampleAt {
        SampleAt { cwnd_segments: 10, una, nxt }
    }

    #[test]
    fn linux_adds_the_minimum_rto_to_srtt() {
        // First sample m: SRTT = m, rttvar = max(2m, rto_min): RTO = 3m, or m + rto_min.
        for (m, want) in [(50, 250), (300, 900)] {
            let mut e = RttEstimator::new(cfg(1, 200), RtoModel::Linux);
            e.sample(Time(Dur::from_millis(1000).0), Dur::from_millis(m), at(0, 0));
            assert_eq!(e.rto(), Dur::from_millis(want), "first sample {m} ms");
        }
        // A steady 50 ms path sampled on every ACK, windows of 10 segments: the RTO settles at
        // SRTT + rto_min = 250 ms, where RFC 6298's floor gives max(200, 50 + 4·RTTVAR) = 200.
        let mut e = RttEstimator::new(cfg(1, 200), RtoModel::Linux);
        let mut f = RttEstimator::new(cfg(1, 200), RtoModel::Rfc6298);
        let mut now = Time(Dur::from_millis(1000).0);
        for k in 0..400u64 {
            e.sample(now, Dur::from_millis(50), at(k * 1000, k * 1000 + 10_000));
            f.sample(now, Dur::from_millis(50), at(0, 0));
            now += Dur::from_millis(5);
        }
        assert_eq!(e.rto(), Dur::from_millis(250));
        assert_eq!(f.rto(), Dur::from_millis(200));
    }

    #[test]
    fn linux_deviation_decays_per_window_not_per_sample() {
        let mut e = RttEstimator::new(cfg(1, 200), RtoModel::Linux);
        let t = Time(Dur::from_millis(1000).0);
        // First sample 300 ms at SND.NXT = 10 000: rttvar = 600 ms, RTO 900 ms.
        e.sample(t, Dur::from_millis(300), at(0, 10_000));
        // Twenty more 300 ms samples inside that window (SND.UNA ≤ 10 000): rttvar holds.
        for k in 1..=20 {
            e.sample(t, Dur::from_millis(300), at(k * 400, 10_000));
        }
        assert_eq!(e.rto(), Dur::from_millis(900));
        // SND.UNA passes 10 000: the window's largest deviation (600) is not below rttvar, so
        // no decay; the next window starts its maximum at rto_min (200) and the one after that
        // ends with rttvar − (rttvar − 200)/4 = 500 ms.
        e.sample(t, Dur::from_millis(300), at(10_001, 20_000));
        assert_eq!(e.rto(), Dur::from_millis(900));
        e.sample(t, Dur::from_millis(300), at(20_001, 30_000));
        assert_eq!(e.rto(), Dur::from_millis(800));
        // A sample far above SRTT raises the deviation at once (gain 1/4): 300 → 1300 ms gives
        // |error| 1000, mdev×4 = 3/4·(decayed) + 1000 > rttvar.
        e.sample(t, Dur::from_millis(1300), at(20_002, 30_000));
        assert!(e.rto() > Dur::from_millis(1400), "{:?}", e.rto());
        // A sample below SRTT moves the deviation with gain 1/32 only: after 300 ms (mean
        // deviation 150 ms), a 10 ms sample (|error| 290 ms) adds (290 − 150)/32 = 4.375 ms,
        // where Jacobson's 1/4 would add 35 ms.
        let mut g = RttEstimator::new(cfg(1, 200), RtoModel::Linux);
        g.sample(t, Dur::from_millis(300), at(0, 10_000));
        let before = g.rttvar;
        g.sample(t, Dur::from_millis(10), at(100, 10_000));
        assert_eq!(g.rttvar - before, Dur::from_micros(4375).0);
    }
}
