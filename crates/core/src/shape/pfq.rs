//! Per-flow queuing the way paper 000 measured it: each flow of a class has its own FIFO and its
//! own token-bucket shaper at BW_c / n, n being the flows of the class (flows seen within
//! `idle_timeout`). Packets wait for their flow's tokens ([`QueueDisc::next_ready`]); among flows
//! ready at once, service is round-robin. A packet larger than the bucket (a jumbo frame) leaves
//! once its flow's bucket is full, the tokens going negative by the excess (it used to wait for
//! ever, blocking its flow and keeping it in n). (Paper 000 §6 replaces this with DRR, see
//! [`super::drr`], which is work-conserving; this shaper is not: an idle flow's share is not lent.)
//!
//! **What it is not.** O(n) per dequeue in the number of backlogged flows (fine for the paper's
//! 1–32 flows per class); no weights.

use super::drr::FlowId;
use crate::queue::{Enqueue, QueueDisc};
use crate::time::{Dur, Time};
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// Parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfqConfig {
    /// The class rate BW_c, bit/s (IP bytes).
    pub rate_bps: u64,
    /// Bucket depth per flow, bytes (≥ one packet).
    #[serde(default = "default_burst")]
    pub burst_bytes: u64,
    /// Per-flow queue, packets.
    #[serde(default = "default_limit")]
    pub flow_limit_pkts: usize,
    /// A flow with no packet for this long no longer counts in n.
    #[serde(default = "default_idle")]
    pub idle_timeout: Dur,
}

fn default_burst() -> u64 {
    1500
}
fn default_limit() -> usize {
    100
}
fn default_idle() -> Dur {
    Dur::from_secs(1)
}

impl PfqConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 {
            return Err("rate_bps must be positive".into());
        }
        if self.burst_bytes < 1500 {
            return Err(format!("burst_bytes must hold a full packet (≥ 1500), got {}", self.burst_bytes));
        }
        if self.flow_limit_pkts == 0 {
            return Err("flow_limit_pkts must be ≥ 1".into());
        }
        Ok(())
    }
}

struct Flow {
    q: VecDeque<Packet>,
    tokens: f64,
    last_refill: Time,
    last_seen: Time,
}

/// Per-flow token-bucket shaping within a class.
pub struct Pfq {
    cfg: PfqConfig,
    flows: crate::hash::KeyedMap<FlowId, usize>,
    slots: Vec<(FlowId, Flow)>,
    /// Round-robin order of flows with packets.
    backlog: VecDeque<usize>,
    pkts: usize,
    bytes: usize,
    drops: u64,
}

impl Pfq {
    pub fn new(cfg: PfqConfig) -> Pfq {
        Pfq {
            cfg,
            flows: crate::hash::map(crate::hash::HashKey::default()),
            slots: Vec::new(),
            backlog: VecDeque::new(),
            pkts: 0,
            bytes: 0,
            drops: 0,
        }
    }

    /// Flows counted in n at `now`.
    pub fn active_flows(&self, now: Time) -> usize {
        self.slots
            .iter()
            .filter(|(_, f)| !f.q.is_empty() || now.since(f.last_seen) < self.cfg.idle_timeout)
            .count()
            .max(1)
    }

    /// Packets queued for flow `id` (its per-flow queue length).
    pub fn flow_len(&self, id: &FlowId) -> usize {
        self.flows.get(id).map_or(0, |&i| self.slots[i].1.q.len())
    }

    fn per_flow_rate(&self, now: Time) -> f64 {
        self.cfg.rate_bps as f64 / self.active_flows(now) as f64
    }

    fn refill(&mut self, i: usize, now: Time, rate: f64) {
        let burst = self.cfg.burst_bytes as f64;
        let f = &mut self.slots[i].1;
        if now > f.last_refill {
            f.tokens = (f.tokens + now.since(f.last_refill).as_secs_f64() * rate / 8.0).min(burst);
            f.last_refill = now;
        }
    }

    /// Forget flows idle past the timeout (bounded state).
    fn expire(&mut self, now: Time) {
        let idle = self.cfg.idle_timeout;
        if self.slots.len() < 64 {
            return;
        }
        let keep: Vec<bool> =
            self.slots.iter().map(|(_, f)| !f.q.is_empty() || now.since(f.last_seen) < idle).collect();
        if keep.iter().all(|k| *k) {
            return;
        }
        let old = std::mem::take(&mut self.slots);
        let mut remap = vec![usize::MAX; old.len()];
        for (i, (s, k)) in old.into_iter().zip(&keep).enumerate() {
            if *k {
                remap[i] = self.slots.len();
                self.slots.push(s);
            }
        }
        self.flows = self.slots.iter().enumerate().map(|(i, (id, _))| (*id, i)).collect();
        for b in self.backlog.iter_mut() {
            *b = remap[*b];
        }
    }
}

impl QueueDisc for Pfq {
    fn set_hash_key(&mut self, key: crate::hash::HashKey) {
        crate::hash::rekey(&mut self.flows, key);
    }
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Enqueue {
        self.expire(now);
        let id = FlowId::of(&pkt);
        let i = match self.flows.get(&id) {
            Some(&i) => i,
            None => {
                let f =
                    Flow { q: VecDeque::new(), tokens: self.cfg.burst_bytes as f64, last_refill: now, last_seen: now };
                self.slots.push((id, f));
                self.flows.insert(id, self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        let f = &mut self.slots[i].1;
        f.last_seen = now;
        if f.q.len() >= self.cfg.flow_limit_pkts {
            self.drops += 1;
            return Enqueue::Dropped(pkt);
        }
        if f.q.is_empty() {
            self.backlog.push_back(i);
        }
        self.pkts += 1;
        self.bytes += pkt.ip_len();
        f.q.push_back(pkt);
        Enqueue::Queued
    }

    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        let rate = self.per_flow_rate(now);
        for _ in 0..self.backlog.len() {
            let i = *self.backlog.front()?;
            self.refill(i, now, rate);
            let f = &mut self.slots[i].1;
            let need = f.q.front().map(|p| p.ip_len() as f64).unwrap_or(0.0);
            if f.tokens + 1e-6 >= need.min(self.cfg.burst_bytes as f64) {
                f.tokens -= need;
                let p = f.q.pop_front().unwrap();
                self.backlog.pop_front();
                if !f.q.is_empty() {
                    self.backlog.push_back(i);
                }
                self.pkts -= 1;
                self.bytes -= p.ip_len();
                return Some(p);
            }
            self.backlog.rotate_left(1);
        }
        None
    }

    fn next_ready(&self, now: Time) -> Option<Time> {
        let rate = self.per_flow_rate(now);
        let burst = self.cfg.burst_bytes as f64;
        self.backlog
            .iter()
            .map(|&i| {
                let f = &self.slots[i].1;
                let need = f.q.front().map(|p| p.ip_len() as f64).unwrap_or(0.0).min(burst);
                let have = (f.tokens + now.since(f.last_refill).as_secs_f64() * rate / 8.0).min(burst);
                if have >= need {
                    now
                } else {
                    now + Dur(((need - have) * 8.0 / rate * 1e9).ceil() as u64 + 1)
                }
            })
            .min()
    }
    fn len_pkts(&self) -> usize {
        self.pkts
    }
    fn len_bytes(&self) -> usize {
        self.bytes
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("pfq_drops", self.drops), ("pfq_flows", self.slots.len() as u64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackshape_wire::{Ecn, IpHdr, TcpHdr, L4};
    use std::collections::HashMap;
    use std::net::{IpAddr, Ipv4Addr};

    fn pkt(flow: u8) -> Packet {
        Packet {
            ip: IpHdr {
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, flow)),
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)),
                ttl: 64,
                dscp: 0,
                ecn: Ecn::NotEct,
                id: 0,
            },
            l4: L4::Tcp(TcpHdr { sport: 1000 + flow as u16, dport: 80, ..Default::default() }),
            payload_len: 1460,
            payload: None,
        }
    }

    /// Drain with an infinitely fast link; returns per-flow departure counts by `until`.
    fn drain(p: &mut Pfq, until: Time) -> HashMap<u8, usize> {
        let mut now = Time::ZERO;
        let mut out = HashMap::new();
        while let Some(t) = p.next_ready(now) {
            if t > until {
                break;
            }
            now = t.max(now);
            match p.dequeue(now) {
                Some(pk) => {
                    let f = match pk.ip.src {
                        IpAddr::V4(a) => a.octets()[3],
                        _ => 0,
                    };
                    *out.entry(f).or_insert(0) += 1;
                }
                None => now += Dur(1),
            }
        }
        out
    }

    #[test]
    fn each_flow_gets_rate_over_n() {
        // 1.2 Mbit/s class, 3 backlogged flows → 400 kbit/s each = 33.3 packets/s of 1500 B.
        let mut p = Pfq::new(PfqConfig {
            rate_bps: 1_200_000,
            burst_bytes: 1500,
            flow_limit_pkts: 1000,
            idle_timeout: Dur::from_secs(1),
        });
        for _ in 0..500 {
            for f in 1..=3 {
                p.enqueue(Time::ZERO, pkt(f));
            }
        }
        let out = drain(&mut p, Time::from_secs_f64(10.0));
        println!("{out:?}");
        for f in 1..=3 {
            let n = out[&f] as f64;
            assert!((n - 334.0).abs() <= 3.0, "flow {f}: {n} packets in 10 s");
        }
    }

    /// A packet larger than the bucket (a 9000-byte jumbo frame through a 3000-byte bucket)
    /// leaves once the bucket is full, and the flow keeps its rate on average. Found by fuzzing
    /// (`fuzz/`, gateway_frames): such a packet never left, blocked its flow's queue for ever and
    /// kept the class's timer firing.
    #[test]
    fn a_packet_larger_than_the_bucket_leaves_when_the_bucket_is_full() {
        let mut p = Pfq::new(PfqConfig {
            rate_bps: 1_200_000,
            burst_bytes: 3000,
            flow_limit_pkts: 100,
            idle_timeout: Dur::from_secs(1),
        });
        let mut jumbo = pkt(1);
        jumbo.payload_len = 8960;
        p.enqueue(Time::ZERO, jumbo);
        for _ in 0..10 {
            p.enqueue(Time::ZERO, pkt(1));
        }
        // The bucket starts full: the jumbo frame goes at once, then the flow owes 6000 B.
        assert_eq!(p.next_ready(Time::ZERO), Some(Time::ZERO));
        assert_eq!(p.dequeue(Time::ZERO).map(|x| x.ip_len()), Some(9000));
        let out = drain(&mut p, Time::from_secs_f64(10.0));
        assert_eq!(out[&1], 10, "{out:?}");
        assert_eq!(p.len_pkts(), 0);
        // Behind a packet that emptied a 1500-byte bucket.
        let mut q = Pfq::new(PfqConfig {
            rate_bps: 1_200_000,
            burst_bytes: 1500,
            flow_limit_pkts: 10,
            idle_timeout: Dur::from_secs(1),
        });
        let mut j = pkt(2);
        j.payload_len = 8960;
        q.enqueue(Time::ZERO, pkt(2));
        q.enqueue(Time::ZERO, j);
        assert!(q.dequeue(Time::ZERO).is_some());
        // The bucket refills to 1500 B in 10 ms: then the jumbo frame goes (not never).
        let t = q.next_ready(Time::ZERO).unwrap();
        assert!(t > Time::ZERO && t <= Time::from_secs_f64(0.0101), "{t:?}");
        assert_eq!(q.dequeue(t).map(|x| x.ip_len()), Some(9000));
    }

    #[test]
    fn a_single_flow_cannot_exceed_the_class() {
        let mut p = Pfq::new(PfqConfig {
            rate_bps: 1_200_000,
            burst_bytes: 1500,
            flow_limit_pkts: 2000,
            idle_timeout: Dur::from_secs(1),
        });
        for _ in 0..2000 {
            p.enqueue(Time::ZERO, pkt(1));
        }
        let out = drain(&mut p, Time::from_secs_f64(10.0));
        assert!((out[&1] as f64 - 1001.0).abs() <= 2.0, "{out:?}");
    }
}
