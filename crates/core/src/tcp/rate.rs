//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02), as Linux's
//! net/ipv4/tcp_rate.c does it, in bytes rather than packets.
//!
//! Every data segment sent records the connection's delivery state at that moment
//! (`tcp_rate_skb_sent`: bytes delivered so far, when the last delivery happened, the send time
//! of the first segment of the current flight, whether the sender was application-limited).
//! When an ACK delivers segments (cumulatively or by SACK) the most recently *sent* of them
//! gives the sample's start (`tcp_rate_skb_delivered`), and `tcp_rate_gen` turns it into
//! delivered bytes over max(send interval, ACK interval), discarding intervals shorter than
//! the minimum RTT. A retransmission re-stamps its segment.

use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// One ACK's delivery-rate sample (Linux `struct rate_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over `interval`; meaningful only when `valid`.
    pub delivered: u64,
    /// max(send elapsed, ACK elapsed) of the sample.
    pub interval: Dur,
    /// Whether `delivered / interval` is a valid observation.
    pub valid: bool,
    /// The connection's delivered count when the sampled segment was sent.
    pub prior_delivered: u64,
    /// Bytes in flight before this ACK.
    pub prior_in_flight: u64,
    /// The sampled segment was sent while the sender was application-limited.
    pub is_app_limited: bool,
    /// RTT of the most recently sent, never retransmitted segment this ACK delivered.
    pub rtt: Option<Dur>,
    /// Bytes this ACK delivered (cumulatively or by SACK).
    pub acked_sacked: u64,
    /// Bytes this ACK made presumed lost.
    pub losses: u64,
    /// The connection's delivered count after this ACK.
    pub tp_delivered: u64,
}

impl RateSample {
    /// Delivery rate in bytes per second (0 unless valid).
    pub fn bw(&self) -> f64 {
        if !self.valid || self.interval.0 == 0 {
            return 0.0;
        }
        self.delivered as f64 / self.interval.as_secs_f64()
    }
}

/// Per-segment transmit state (Linux `tcp_skb_cb::tx`).
#[derive(Clone, Copy, Debug)]
struct Tx {
    start: u64,
    end: u64,
    sent: Time,
    first_tx: Time,
    delivered_at: Time,
    delivered: u64,
    app_limited: bool,
    retrans: bool,
    done: bool,
}

/// The sending half's delivery-rate state.
#[derive(Clone, Debug, Default)]
pub struct RateEstimator {
    tx: VecDeque<Tx>,
    /// Bytes delivered so far (Linux `tp->delivered`, in bytes).
    delivered: u64,
    delivered_at: Time,
    first_tx: Time,
    /// Application-limited until `delivered` exceeds this (0 = not limited).
    app_limited: u64,
    min_rtt: Option<Dur>,
    // The sample being built during one ACK.
    have: bool,
    s_sent: Time,
    s_end: u64,
    s_first_tx: Time,
    s_prior_at: Time,
    s_prior_delivered: u64,
    s_app_limited: bool,
    s_rtt_sent: Option<Time>,
    s_acked: u64,
}

impl RateEstimator {
    /// Bytes delivered so far.
    #[cfg(test)]
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// `tcp_rate_skb_sent`: a data segment `[s, e)` goes out; `nothing_out` if no data was
    /// outstanding (the start of a new flight re-bases the send and delivery clocks).
    pub fn on_sent(&mut self, now: Time, s: u64, e: u64, nothing_out: bool, rtx: bool) {
        if nothing_out {
            self.first_tx = now;
            self.delivered_at = now;
        }
        let rec = Tx {
            start: s,
            end: e,
            sent: now,
            first_tx: self.first_tx,
            delivered_at: self.delivered_at,
            delivered: self.delivered,
            app_limited: self.app_limited != 0,
            retrans: rtx,
            done: false,
        };
        if rtx {
            // Re-stamp the segment holding `s` (the retransmission may be shorter than it).
            let i = self.tx.partition_point(|t| t.end <= s);
            if let Some(t) = self.tx.get_mut(i) {
                if t.start <= s && !t.done {
                    *t = Tx { start: t.start, end: t.end, ..rec };
                }
            }
            return;
        }
        self.tx.push_back(rec);
    }

    fn deliver(&mut self, i: usize) {
        let t = self.tx[i];
        self.tx[i].done = true;
        self.delivered += t.end - t.start;
        self.s_acked += t.end - t.start;
        // `tcp_rate_skb_delivered`: the most recently sent segment (ties: the higher one)
        // defines the sample.
        if !self.have || t.sent > self.s_sent || (t.sent == self.s_sent && t.end > self.s_end) {
            self.have = true;
            self.s_sent = t.sent;
            self.s_end = t.end;
            self.s_first_tx = t.first_tx;
            self.s_prior_at = t.delivered_at;
            self.s_prior_delivered = t.delivered;
            self.s_app_limited = t.app_limited;
            // Send-side interval runs from this segment's send time (`tp->first_tx_mstamp`).
            self.first_tx = t.sent;
        }
        if !t.retrans && self.s_rtt_sent.is_none_or(|x| t.sent > x) {
            self.s_rtt_sent = Some(t.sent);
        }
    }

    /// Segments wholly inside a newly SACKed range `[l, r)` are delivered.
    pub fn on_sack(&mut self, l: u64, r: u64) {
        let mut i = self.tx.partition_point(|t| t.end <= l);
        while i < self.tx.len() && self.tx[i].start < r {
            if !self.tx[i].done && self.tx[i].start >= l && self.tx[i].end <= r {
                self.deliver(i);
            }
            i += 1;
        }
    }

    /// Everything below `ack` is delivered; its records are dropped.
    pub fn on_cum_ack(&mut self, ack: u64) {
        while let Some(t) = self.tx.front() {
            if t.start >= ack {
                break;
            }
            if t.end > ack {
                // A partially acknowledged segment: trim it.
                let n = ack - t.start;
                if !t.done {
                    self.delivered += n;
                    self.s_acked += n;
                }
                self.tx[0].start = ack;
                break;
            }
            if !t.done {
                self.deliver(0);
            }
            self.tx.pop_front();
        }
    }

    /// `tcp_rate_gen`: the sample of this ACK.
    pub fn generate(&mut self, now: Time, prior_in_flight: u64, losses: u64) -> RateSample {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let acked = std::mem::take(&mut self.s_acked);
        if acked > 0 {
            self.delivered_at = now;
        }
        let rtt = self.s_rtt_sent.take().map(|t| now.since(t));
        if let Some(r) = rtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        let mut rs = RateSample {
            prior_in_flight,
            rtt,
            acked_sacked: acked,
            losses,
            tp_delivered: self.delivered,
            ..RateSample::default()
        };
        if !std::mem::take(&mut self.have) {
            return rs;
        }
        rs.prior_delivered = self.s_prior_delivered;
        rs.is_app_limited = self.s_app_limited;
        rs.delivered = self.delivered - self.s_prior_delivered;
        let snd = self.s_sent.since(self.s_first_tx);
        let ack = now.since(self.s_prior_at);
        rs.interval = snd.max(ack);
        // An interval below the minimum RTT would overestimate the rate (ACK compression).
        rs.valid = rs.interval.0 > 0 && self.min_rtt.is_none_or(|m| rs.interval >= m);
        rs
    }

    /// `tcp_rate_check_app_limited`: the sender has no data to send while the window has room;
    /// samples are app-limited until what is in flight now has been delivered.
    pub fn set_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_flow_samples_the_bottleneck_rate() {
        // 1000-byte segments sent every 1 ms, each ACKed 50 ms later: 1 MB/s.
        let mut r = RateEstimator::default();
        let ms = |n: u64| Time(n * 1_000_000);
        let mut last = RateSample::default();
        for k in 0..200u64 {
            r.on_sent(ms(k), k * 1000, (k + 1) * 1000, k == 0, false);
            if k >= 50 {
                let a = k - 50;
                r.on_cum_ack((a + 1) * 1000);
                last = r.generate(ms(k) + Dur(1), 50_000, 0);
            }
        }
        assert!(last.valid);
        let bw = last.bw();
        println!("measured {bw:.0} B/s, expected 1e6 B/s (±2%)");
        assert!((bw - 1e6).abs() < 0.02e6, "{bw}");
        assert_eq!(last.rtt, Some(Dur(50_000_001)));
    }

    #[test]
    fn sacked_segment_delivers_once() {
        let mut r = RateEstimator::default();
        for k in 0..4u64 {
            r.on_sent(Time(k), k * 100, (k + 1) * 100, k == 0, false);
        }
        r.on_sack(200, 300);
        let s = r.generate(Time(10), 400, 0);
        assert_eq!(s.acked_sacked, 100);
        r.on_cum_ack(400);
        let s = r.generate(Time(20), 300, 0);
        assert_eq!(s.acked_sacked, 300, "the SACKed segment is not counted again");
        assert_eq!(r.delivered(), 400);
    }
}
