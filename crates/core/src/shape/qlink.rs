//! A rate-limited output with any queue discipline, per direction, as a [`Middlebox`]: what a
//! residential gateway does at its (asymmetric) access link, e.g. AFVQ on the uplink.
//!
//! In the simulator a link already has a rate and a discipline; this box exists so that the same
//! discipline at the same rate runs *in a box* — the live gateway drives it unchanged and then
//! it is the bottleneck of a real path. A direction without a rate passes packets through.
//! Each packet costs `ip_len + overhead_bytes` of serialisation time (the live driver uses 14 for
//! the Ethernet header, like the wanem's rate limiter).

use crate::middlebox::{Dir, Emit, Middlebox};
use crate::queue::{Enqueue, QueueDisc};
use crate::time::{Dur, Time};
use ackshape_wire::Packet;

/// One direction's rate and discipline.
pub struct Shaper {
    pub rate_bps: u64,
    pub queue: Box<dyn QueueDisc + Send>,
    busy_until: Time,
    /// Enqueued, sent, dropped at enqueue.
    pub counters: [u64; 3],
    /// Time-weighted queue length (packets·ns) and maximum.
    area: u128,
    last: Time,
    pub max_pkts: usize,
    /// When this direction next needs the driver (computed after every pump).
    wake: Option<Time>,
    /// The packet being serialised (it leaves at `busy_until`).
    in_tx: Option<Packet>,
}

impl Shaper {
    pub fn new(rate_bps: u64, queue: Box<dyn QueueDisc + Send>) -> Shaper {
        assert!(rate_bps > 0, "rate must be > 0");
        Shaper {
            rate_bps,
            queue,
            busy_until: Time::ZERO,
            counters: [0; 3],
            area: 0,
            last: Time::ZERO,
            max_pkts: 0,
            wake: None,
            in_tx: None,
        }
    }

    fn account(&mut self, now: Time) {
        if now > self.last {
            self.area += self.queue.len_pkts() as u128 * (now.0 - self.last.0) as u128;
            self.last = now;
        }
    }
}

/// The box: an optional [`Shaper`] per direction.
pub struct QdiscLink {
    dirs: [Option<Shaper>; 2],
    overhead_bytes: usize,
}

impl QdiscLink {
    /// `a_to_b`, `b_to_a`: the shaper of each direction (None: pass through).
    pub fn new(a_to_b: Option<Shaper>, b_to_a: Option<Shaper>, overhead_bytes: usize) -> QdiscLink {
        QdiscLink { dirs: [a_to_b, b_to_a], overhead_bytes }
    }

    /// Send what has finished serialising; start the next packet when the line is free. A packet
    /// leaves the box at the end of its serialisation, as it leaves a link.
    ///
    /// `arrived_to_empty`: the pump follows the enqueue of a packet into an empty queue (it may
    /// start now). Otherwise a packet dequeued right after another finished was already waiting
    /// when the line freed up, so it starts back to back at `busy_until` even if the driver calls
    /// late (a real clock's timer): lateness must not stretch the schedule and lower the rate.
    fn pump(&mut self, now: Time, d: usize, out: &mut Emit, arrived_to_empty: bool) {
        let dir = if d == 0 { Dir::AToB } else { Dir::BToA };
        let ovh = self.overhead_bytes;
        let Some(s) = self.dirs[d].as_mut() else { return };
        loop {
            if s.busy_until > now {
                break;
            }
            let was_sending = match s.in_tx.take() {
                Some(p) => {
                    out.push((dir, p));
                    s.counters[1] += 1;
                    true
                }
                None => false,
            };
            s.account(now);
            let Some(p) = s.queue.dequeue(now) else { break };
            // Back to back when the previous one just ended and this one was waiting, else from now.
            let back_to_back = (was_sending && !arrived_to_empty) || s.busy_until + Dur(1) >= now;
            let start = if back_to_back { s.busy_until } else { now };
            s.busy_until = start.max(s.busy_until) + Dur::tx_time(p.ip_len() + ovh, s.rate_bps);
            s.in_tx = Some(p);
        }
        s.wake = if s.in_tx.is_some() {
            Some(s.busy_until)
        } else if s.queue.len_pkts() == 0 {
            None
        } else {
            // Packets wait but none is eligible (a shaping discipline): its own time, strictly later.
            s.queue.next_ready(now).map(|t| t.max(now + Dur(1)))
        };
    }

    /// Mean and maximum queue length (packets) of each direction since the start.
    pub fn queue_stats(&self, now: Time) -> [(f64, usize); 2] {
        let f = |s: &Option<Shaper>| match s {
            Some(s) if now.0 > 0 => {
                let area = s.area + s.queue.len_pkts() as u128 * now.0.saturating_sub(s.last.0) as u128;
                (area as f64 / now.0 as f64, s.max_pkts)
            }
            _ => (0.0, 0),
        };
        [f(&self.dirs[0]), f(&self.dirs[1])]
    }
}

impl Middlebox for QdiscLink {
    fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
        let d = dir.index();
        let Some(s) = self.dirs[d].as_mut() else {
            out.push((dir, pkt));
            return;
        };
        s.account(now);
        s.counters[0] += 1;
        let was_empty = s.queue.len_pkts() == 0;
        if let Enqueue::Dropped(_) = s.queue.enqueue(now, pkt) {
            s.counters[2] += 1;
        }
        s.max_pkts = s.max_pkts.max(s.queue.len_pkts());
        self.pump(now, d, out, was_empty);
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.dirs.iter().flatten().filter_map(|s| s.wake).min()
    }

    fn on_timeout(&mut self, now: Time, out: &mut Emit) {
        for d in 0..2 {
            self.pump(now, d, out, false);
        }
    }

    fn stats_json(&self) -> serde_json::Value {
        let dir = |s: &Option<Shaper>| match s {
            None => serde_json::Value::Null,
            Some(s) => {
                let mut m = serde_json::json!({
                    "rate_bps": s.rate_bps,
                    "enqueued": s.counters[0],
                    "sent": s.counters[1],
                    "dropped": s.counters[2],
                    "queue_pkts": s.queue.len_pkts(),
                    "data_queue_max_pkts": s.max_pkts,
                });
                let extra: serde_json::Map<String, serde_json::Value> =
                    s.queue.counters().into_iter().map(|(k, v)| (k.to_string(), v.into())).collect();
                m["qdisc"] = serde_json::Value::Object(extra);
                if let Some(a) = s.queue.asym_stats() {
                    m["asym"] = serde_json::to_value(a).unwrap_or_default();
                }
                m
            }
        };
        serde_json::json!({ "a_to_b": dir(&self.dirs[0]), "b_to_a": dir(&self.dirs[1]) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{DropTail, Limit};
    use ackshape_wire::testing::{sample_tcp, Rng};

    /// Drive a 10 Mbit/s box with `n` packets queued at t = 0, calling `on_timeout` `late` after
    /// each deadline (a real clock's timer); return when each packet left.
    fn drain(late: Dur, n: usize) -> Vec<Time> {
        let s = Shaper::new(10_000_000, Box::new(DropTail::new(Limit::Packets(n + 1))));
        let mut b = QdiscLink::new(Some(s), None, 14);
        let mut rng = Rng::new(1);
        let mut out = Emit::new();
        for _ in 0..n {
            b.on_packet(Time::ZERO, Dir::AToB, sample_tcp(false, 1000, &mut rng), &mut out);
        }
        let mut left = Vec::new();
        while let Some(t) = b.poll_timeout() {
            let now = t + late;
            b.on_timeout(now, &mut out);
            left.extend(out.drain(..).map(|_| now));
        }
        left
    }

    #[test]
    fn a_late_driver_does_not_stretch_the_schedule() {
        let exact = drain(Dur::ZERO, 200);
        let late = drain(Dur::from_micros(300), 200);
        assert_eq!((exact.len(), late.len()), (200, 200));
        // Each packet leaves at most the lateness after its exact time: the rate is kept.
        for (e, l) in exact.iter().zip(&late) {
            assert!(*l >= *e && l.since(*e) <= Dur::from_micros(300), "{e:?} vs {l:?}");
        }
    }
}
