//! Token-bucket shaping of a FIFO (a class rate, as in paper 000's class-only shaping): packets
//! leave at most at `rate` on average with bursts up to `burst_bytes`; the rest wait in a drop-tail
//! FIFO of `limit_pkts`. Holds packets until tokens suffice ([`QueueDisc::next_ready`]). A packet
//! larger than the bucket (a jumbo frame) leaves once the bucket is full, and the tokens go
//! negative by the excess: it waits no longer than a full refill and the rate holds on average.
//!
//! **What it is not.** Not hierarchical (no borrowing between classes; link sharing builds on it).

use crate::queue::{Enqueue, QueueDisc};
use crate::time::{Dur, Time};
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// Token bucket parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TbfConfig {
    /// Shaping rate in bit/s (IP bytes count).
    pub rate_bps: u64,
    /// Bucket depth in bytes (≥ one packet).
    #[serde(default = "default_burst")]
    pub burst_bytes: u64,
    #[serde(default = "default_limit")]
    pub limit_pkts: usize,
}

fn default_burst() -> u64 {
    3000
}
fn default_limit() -> usize {
    100
}

impl TbfConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 {
            return Err("rate_bps must be positive".into());
        }
        if self.burst_bytes < 1500 {
            return Err(format!("burst_bytes must hold a full packet (≥ 1500), got {}", self.burst_bytes));
        }
        if self.limit_pkts == 0 {
            return Err("limit_pkts must be ≥ 1".into());
        }
        Ok(())
    }
}

/// A token-bucket-shaped FIFO.
pub struct Tbf {
    cfg: TbfConfig,
    q: VecDeque<Packet>,
    bytes: usize,
    /// Tokens in bytes.
    tokens: f64,
    last: Time,
    drops: u64,
}

impl Tbf {
    pub fn new(cfg: TbfConfig) -> Tbf {
        let tokens = cfg.burst_bytes as f64;
        Tbf { cfg, q: VecDeque::new(), bytes: 0, tokens, last: Time::ZERO, drops: 0 }
    }
    fn refill(&mut self, now: Time) {
        if now > self.last {
            let add = now.since(self.last).as_secs_f64() * self.cfg.rate_bps as f64 / 8.0;
            self.tokens = (self.tokens + add).min(self.cfg.burst_bytes as f64);
            self.last = now;
        }
    }
}

impl QueueDisc for Tbf {
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Enqueue {
        if self.q.len() >= self.cfg.limit_pkts {
            self.drops += 1;
            return Enqueue::Dropped(pkt);
        }
        self.bytes += pkt.ip_len();
        self.q.push_back(pkt);
        Enqueue::Queued
    }
    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        self.refill(now);
        let need = self.q.front()?.ip_len() as f64;
        if self.tokens + 1e-6 < need.min(self.cfg.burst_bytes as f64) {
            return None;
        }
        self.tokens -= need;
        let p = self.q.pop_front().unwrap();
        self.bytes -= p.ip_len();
        Some(p)
    }
    fn next_ready(&self, now: Time) -> Option<Time> {
        // Above the bucket size: a full bucket lets it go (the tokens can never exceed it).
        let need = (self.q.front()?.ip_len() as f64).min(self.cfg.burst_bytes as f64);
        let have = (self.tokens + now.since(self.last).as_secs_f64() * self.cfg.rate_bps as f64 / 8.0)
            .min(self.cfg.burst_bytes as f64);
        if have >= need {
            return Some(now);
        }
        let wait = (need - have) * 8.0 / self.cfg.rate_bps as f64;
        Some(now + Dur((wait * 1e9).ceil() as u64 + 1))
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("tbf_drops", self.drops)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackshape_wire::{Ecn, IpHdr, TcpHdr, L4};
    use std::net::{IpAddr, Ipv4Addr};

    fn pkt() -> Packet {
        Packet {
            ip: IpHdr {
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
                ttl: 64,
                dscp: 0,
                ecn: Ecn::NotEct,
                id: 0,
            },
            l4: L4::Tcp(TcpHdr::default()),
            payload_len: 1460,
            payload: None,
        }
    }

    /// A packet larger than the bucket leaves once the bucket is full (it used to wait for ever,
    /// blocking the FIFO; found by fuzzing the gateway's PFQ, which shares the rule), and the
    /// rate holds on average: the tokens go negative by the excess.
    #[test]
    fn a_packet_larger_than_the_bucket_leaves_when_the_bucket_is_full() {
        let mut t = Tbf::new(TbfConfig { rate_bps: 1_200_000, burst_bytes: 1500, limit_pkts: 10 });
        let mut jumbo = pkt();
        jumbo.payload_len = 8960;
        t.enqueue(Time::ZERO, pkt());
        t.enqueue(Time::ZERO, jumbo);
        t.enqueue(Time::ZERO, pkt());
        assert!(t.dequeue(Time::ZERO).is_some());
        // 1500 B refill in 10 ms (150 kB/s): then the jumbo frame goes.
        let t1 = t.next_ready(Time::ZERO).unwrap();
        assert!(t1 > Time::from_secs_f64(0.0099) && t1 <= Time::from_secs_f64(0.0101), "{t1:?}");
        assert_eq!(t.dequeue(t1).map(|p| p.ip_len()), Some(9000));
        // It owes 7500 B: the next 1500-byte packet waits for 9000 B of refill, 60 ms.
        let t2 = t.next_ready(t1).unwrap();
        let gap = t2.since(t1).as_secs_f64();
        assert!((gap - 0.060).abs() < 1e-4, "{gap}");
        assert!(t.dequeue(t2).is_some());
        assert_eq!(t.len_pkts(), 0);
    }

    #[test]
    fn long_run_rate_and_burst() {
        // 1 Mbit/s, 3000-byte bucket: 1500-byte packets; the first two leave at once.
        let mut t = Tbf::new(TbfConfig { rate_bps: 1_000_000, burst_bytes: 3000, limit_pkts: 10_000 });
        for _ in 0..1000 {
            t.enqueue(Time::ZERO, pkt());
        }
        let mut now = Time::ZERO;
        let mut times = Vec::new();
        while let Some(ready) = t.next_ready(now) {
            now = ready.max(now);
            match t.dequeue(now) {
                Some(_) => times.push(now),
                None => now += Dur(1),
            }
        }
        assert_eq!(times.len(), 1000);
        assert_eq!(times[1], Time::ZERO, "burst of two");
        // 998 more packets of 1500 B at 1 Mbit/s = 11.976 s.
        let last = times[999].as_secs_f64();
        assert!((last - 11.976).abs() < 0.001, "last departure {last}");
    }

    #[test]
    fn holds_until_tokens_suffice() {
        let mut t = Tbf::new(TbfConfig { rate_bps: 8_000_000, burst_bytes: 1500, limit_pkts: 10 });
        t.enqueue(Time::ZERO, pkt());
        t.enqueue(Time::ZERO, pkt());
        assert!(t.dequeue(Time::ZERO).is_some());
        assert!(t.dequeue(Time::ZERO).is_none(), "bucket empty");
        let r = t.next_ready(Time::ZERO).unwrap();
        assert!((r.as_secs_f64() - 0.0015).abs() < 1e-6, "1500 B at 8 Mbit/s = 1.5 ms, got {r:?}");
        assert!(t.dequeue(r).is_some());
    }
}
