//! BBR v1's rules, driven with synthetic ACKs: one call of `Pipe::round` is one packet-timed
//! round (its sample was sent after the previous round's last delivery).

use super::*;
use crate::tcp::rate::RateSample;

const MSS: u64 = 1000;

struct Pipe {
    bbr: Bbr,
    w: Window,
    now: Time,
    delivered: u64,
}

impl Pipe {
    fn new(seed: u64) -> Pipe {
        let cfg = TcpConfig { mss: MSS as u32, ..TcpConfig::default() };
        let mut bbr = Bbr::new(&cfg);
        bbr.seed(seed);
        Pipe {
            bbr,
            w: Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS, cap: 1 << 40, rwnd: 1 << 30 },
            now: Time(1_000_000),
            delivered: 0,
        }
    }

    /// One ACK, `dt` after the previous one, ending a round that delivered `bw`·`rtt` bytes;
    /// `flight` bytes in flight before and after it.
    fn ack(&mut self, bw: f64, rtt: Dur, dt: Dur, flight: u64, new_round: bool) {
        let prior = self.delivered;
        let bytes = (bw * rtt.as_secs_f64()) as u64;
        self.now += dt;
        self.delivered += bytes;
        let rs = RateSample {
            delivered: bytes,
            interval: rtt,
            valid: true,
            prior_delivered: if new_round { prior } else { 0 },
            prior_in_flight: flight,
            is_app_limited: false,
            rtt: Some(rtt),
            acked_sacked: MSS,
            losses: 0,
            tp_delivered: self.delivered,
        };
        let a = Ack {
            now: self.now,
            acked: MSS,
            flight_before: flight,
            flight_after: flight,
            srtt: Some(rtt),
            ca_state: CaState::Open,
            rate: Some(rs),
        };
        self.bbr.cong_control(&mut self.w, &a);
    }

    fn round(&mut self, bw: f64, rtt: Dur, flight: u64) {
        self.ack(bw, rtt, rtt, flight, true);
    }
}

const RTT: Dur = Dur::from_millis(40);
/// 10 Mbit/s in bytes per second.
const BW: f64 = 1.25e6;

/// STARTUP until the max bandwidth grows less than 25% for three rounds; then DRAIN (pacing at
/// 1/2.885) until the flight is down to one BDP; then PROBE_BW.
#[test]
fn startup_drain_probe_bw() {
    let mut p = Pipe::new(1);
    let mut bw = BW / 64.0;
    let mut rounds = 0;
    while bw < BW {
        p.round(bw, RTT, 10 * MSS);
        rounds += 1;
        assert_eq!(p.bbr.mode(), BbrMode::Startup, "round {rounds}: still growing");
        assert_eq!(p.bbr.pacing_gain(), HIGH_GAIN);
        bw *= 2.0;
    }
    // The last doubling sets the reference; three rounds without 25% growth over it end STARTUP.
    p.round(BW, RTT, 100 * MSS);
    assert_eq!(p.bbr.mode(), BbrMode::Startup);
    p.round(BW, RTT, 100 * MSS);
    p.round(BW, RTT, 100 * MSS);
    assert_eq!(p.bbr.mode(), BbrMode::Startup, "two flat rounds are not enough");
    assert!(!p.bbr.full_bw_reached());
    p.round(BW, RTT, 100 * MSS);
    assert!(p.bbr.full_bw_reached(), "three flat rounds");
    assert_eq!(p.bbr.mode(), BbrMode::Drain);
    assert!((p.bbr.pacing_gain() - 1.0 / 2.885).abs() < 1e-9);
    let bdp = (BW * RTT.as_secs_f64()) as u64;
    assert!(p.w.ssthresh < 2 * bdp, "DRAIN sets ssthresh to about one BDP: {}", p.w.ssthresh);
    // Flight still above BDP (plus the quantization budget): stay in DRAIN.
    p.ack(BW, RTT, Dur::from_millis(1), 3 * bdp, false);
    assert_eq!(p.bbr.mode(), BbrMode::Drain);
    p.ack(BW, RTT, Dur::from_millis(1), bdp / 2, false);
    assert_eq!(p.bbr.mode(), BbrMode::ProbeBw);
    assert_eq!(p.bbr.cwnd_gain(), CWND_GAIN);
}

/// A round whose max bandwidth is 24% above the reference does not count as growth (it takes
/// 25%, `bbr_full_bw_thresh`), so three such rounds end STARTUP; at 26% the first of them becomes
/// the new reference and two more flat rounds are not enough.
#[test]
fn full_bw_threshold_is_25_percent() {
    for (g, expect_full) in [(1.24, true), (1.26, false)] {
        let mut p = Pipe::new(2);
        p.round(BW / 2.0, RTT, 10 * MSS);
        for _ in 0..3 {
            p.round(BW / 2.0 * g, RTT, 10 * MSS);
        }
        println!("growth {g}: full_bw_reached = {}", p.bbr.full_bw_reached());
        assert_eq!(p.bbr.full_bw_reached(), expect_full, "growth {g} per round");
    }
}

fn into_probe_bw(seed: u64) -> Pipe {
    let mut p = Pipe::new(seed);
    for _ in 0..6 {
        p.round(BW, RTT, 10 * MSS);
    }
    p.ack(BW, RTT, Dur::from_millis(1), 0, false);
    assert_eq!(p.bbr.mode(), BbrMode::ProbeBw);
    p
}

/// PROBE_BW cycles 1.25, 0.75, 1, 1, 1, 1, 1, 1, one phase per min RTT; the 1.25 phase ends only
/// once the flight reaches 1.25·BDP, the 0.75 phase early once it is down to one BDP; it never
/// starts in the 0.75 phase.
#[test]
fn pacing_gain_cycle() {
    let bdp = (BW * RTT.as_secs_f64()) as u64;
    let mut starts = std::collections::BTreeSet::new();
    for seed in 0..40 {
        let mut p = into_probe_bw(seed);
        let first = p.bbr.cycle_idx();
        starts.insert(first);
        assert_ne!(first, 1, "seed {seed}: PROBE_BW never starts draining");
        let mut gains = vec![p.bbr.pacing_gain()];
        while gains.len() < 17 {
            let g = p.bbr.pacing_gain();
            let idx = p.bbr.cycle_idx();
            if g > 1.0 {
                // A full min RTT with a flight below 1.25·BDP does not end the probe...
                p.ack(BW, RTT, RTT + Dur(1), bdp, false);
                assert_eq!(p.bbr.cycle_idx(), idx, "1.25 phase waits for its inflight");
                // ...reaching it does.
                p.ack(BW, RTT, Dur(1), 2 * bdp, false);
            } else if g < 1.0 {
                // Draining ends early at one BDP in flight.
                p.ack(BW, RTT, Dur::from_millis(1), bdp / 2, false);
            } else {
                p.ack(BW, RTT, Dur::from_millis(20), bdp, false);
                assert_eq!(p.bbr.cycle_idx(), idx, "half a min RTT is not a phase");
                p.ack(BW, RTT, Dur::from_millis(21), bdp, false);
            }
            assert_ne!(p.bbr.cycle_idx(), idx, "phase {idx} ended");
            gains.push(p.bbr.pacing_gain());
        }
        let k = gains.iter().position(|&g| g == 1.25).unwrap();
        assert_eq!(&gains[k..k + 8], &PACING_GAIN, "seed {seed}: {gains:?}");
        assert_eq!(gains[k + 8], 1.25);
    }
    assert!(starts.len() >= 5, "the starting phase is randomised: {starts:?}");
}

/// No min-RTT sample as low for 10 s → PROBE_RTT: cwnd 4 segments, held 200 ms (and a round)
/// after the flight is down to 4 segments, then back to PROBE_BW with the cwnd restored.
#[test]
fn min_rtt_expiry_probe_rtt() {
    let mut p = into_probe_bw(3);
    // The minimum was measured by the first ACK (its round ended one RTT after the start).
    let t0 = Time(1_000_000) + RTT;
    // Rounds with a higher RTT than the minimum: the filter keeps the old value for 10 s.
    let high = Dur::from_millis(60);
    while p.now + high <= t0 + MIN_RTT_WIN {
        p.round(BW, high, 60 * MSS);
        assert_eq!(p.bbr.min_rtt(), Some(RTT));
        assert_ne!(p.bbr.mode(), BbrMode::ProbeRtt);
    }
    let cwnd_before = p.w.cwnd;
    assert!(cwnd_before > 40 * MSS);
    while p.bbr.mode() != BbrMode::ProbeRtt {
        p.round(BW, high, 60 * MSS);
        assert!(p.now <= t0 + MIN_RTT_WIN + high, "PROBE_RTT on the first ACK after 10 s");
    }
    assert_eq!(p.bbr.min_rtt(), Some(high), "an expired filter takes the current sample");
    assert_eq!(p.w.cwnd, 4 * MSS, "PROBE_RTT window");
    assert_eq!(p.bbr.pacing_gain(), 1.0);
    // Flight still high: the 200 ms have not started.
    p.ack(BW, high, Dur::from_millis(300), 60 * MSS, false);
    assert_eq!(p.bbr.mode(), BbrMode::ProbeRtt);
    // Flight down to 4 segments: 200 ms from now.
    p.ack(BW, high, Dur::from_millis(1), 4 * MSS, false);
    let start = p.now;
    while p.bbr.mode() == BbrMode::ProbeRtt {
        p.ack(BW, high, Dur::from_millis(10), 4 * MSS, true);
        assert_eq!(p.w.cwnd.min(4 * MSS), 4 * MSS);
        assert!(p.now < start + Dur::from_millis(300));
    }
    let held = p.now.since(start);
    println!("PROBE_RTT held {held:?} (expected just over 200 ms)");
    assert!(held > PROBE_RTT_TIME && held <= PROBE_RTT_TIME + Dur::from_millis(10));
    assert_eq!(p.bbr.mode(), BbrMode::ProbeBw);
    assert!(p.w.cwnd >= cwnd_before, "cwnd restored: {} vs {}", p.w.cwnd, cwnd_before);
}

/// The running-max filter forgets a peak after its window of rounds.
#[test]
fn max_filter_window() {
    let mut f = MaxFilter::default();
    f.update(10, 1, 100.0);
    for t in 2..=11 {
        assert_eq!(f.update(10, t, 50.0), 100.0, "round {t}");
    }
    assert_eq!(f.update(10, 12, 50.0), 50.0);
}
