//! A rate-limited output with any queue discipline, per direction, as a [`Middlebox`]: what a
//! residential gateway does at its (asymmetric) access link, e.g. AFVQ on the uplink.
//!
//! In the simulator a link already has a rate and a discipline; this box exists so that the same
//! discipline at the same rate runs *in a box* — the live gateway drives it unchanged and then
//! it is the bottleneck of a real path. A direction without a rate passes packets through.
//! Each packet costs `ip_len + overhead_bytes` of serialisation time (the live driver uses 14 for
//! the Ethernet header, like the wanem's rate limiter).

use crate::impair::{Delay, Loss};
use crate::middlebox::{Dir, Emit, Middlebox};
use crate::queue::{Enqueue, QueueDisc};
use crate::stats::{AqmSummary, BoxStats, ImpairedDirStats, ImpairedLinkStats, LinkDirStats, LinkStats};
use crate::time::{Dur, Time};
use ackshape_wire::Packet;

/// One direction's rate and discipline.
pub struct Shaper {
    pub rate_bps: u64,
    pub queue: Box<dyn QueueDisc + Send>,
    busy_until: Time,
    /// Enqueued, sent, dropped at enqueue.
    pub counters: [u64; 3],
    /// Bytes sent, each packet counted with the box's per-packet overhead (as on the wire).
    pub sent_bytes: u64,
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
            sent_bytes: 0,
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
                    s.sent_bytes += (p.ip_len() + ovh) as u64;
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

    fn stats(&self) -> BoxStats {
        BoxStats::Link(self.link_stats())
    }
}

impl QdiscLink {
    /// Each direction's [`LinkDirStats`] (None: no shaper).
    pub fn link_stats(&self) -> LinkStats {
        let dir = |s: &Option<Shaper>| {
            s.as_ref().map(|s| LinkDirStats {
                rate_bps: s.rate_bps,
                enqueued: s.counters[0],
                sent: s.counters[1],
                sent_bytes: s.sent_bytes,
                dropped: s.counters[2] + s.queue.internal_drops(),
                queue_pkts: s.queue.len_pkts() as u64,
                data_queue_max_pkts: s.max_pkts as u64,
                qdisc: s.queue.counters().into_iter().collect(),
                asym: s.queue.asym_stats().cloned(),
                aqm: s.queue.aqm_stats().map(|a| AqmSummary {
                    packets: a.packets,
                    sojourn_avg_ms: a.avg_since(&Default::default()) * 1e3,
                    sojourn_max_ms: a.max_ns as f64 / 1e6,
                    drops: a.drops,
                    marks: a.marks,
                }),
            })
        };
        LinkStats { a_to_b: dir(&self.dirs[0]), b_to_a: dir(&self.dirs[1]) }
    }
}

/// What happens to a direction's packets around its [`Shaper`]: the loss before the queue (a
/// lost packet uses no capacity, as on a simulated link) and the delay line after it.
pub struct Impair {
    pub loss: Loss,
    pub delay: Delay,
}

/// A packet in a delay line, ordered by its exit time (ties: arrival order).
struct Held {
    exit: Time,
    seq: u64,
    dir: Dir,
    pkt: Packet,
}
impl PartialEq for Held {
    fn eq(&self, o: &Held) -> bool {
        (self.exit, self.seq) == (o.exit, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Held) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Held) -> std::cmp::Ordering {
        (o.exit, o.seq).cmp(&(self.exit, self.seq)) // a min-heap
    }
}

/// A whole link in a box, per direction as the simulator's link: loss, then the rate and queue
/// discipline of a [`QdiscLink`], then the propagation delay (with jitter). The live WAN emulator
/// runs it when a scenario's bottleneck has a `qdisc` (RED/ECN, DRR, AFVQ, …), which its own
/// drop-tail limiter cannot; a direction without an [`Impair`] only shapes.
pub struct WanLink {
    link: QdiscLink,
    impair: [Option<Impair>; 2],
    held: std::collections::BinaryHeap<Held>,
    seq: u64,
    scratch: Emit,
    /// Arrived, lost before the queue, left the delay line; the most held at once, per direction.
    counters: [[u64; 3]; 2],
    held_now: [usize; 2],
    held_max: [usize; 2],
}

impl WanLink {
    pub fn new(link: QdiscLink, a_to_b: Option<Impair>, b_to_a: Option<Impair>) -> WanLink {
        WanLink {
            link,
            impair: [a_to_b, b_to_a],
            held: std::collections::BinaryHeap::new(),
            seq: 0,
            scratch: Emit::new(),
            counters: [[0; 3]; 2],
            held_now: [0; 2],
            held_max: [0; 2],
        }
    }

    /// Packets the shaper let go of enter their direction's delay line (or leave, without one).
    fn delay(&mut self, now: Time, out: &mut Emit) {
        for (dir, pkt) in self.scratch.drain(..) {
            let d = dir.index();
            match self.impair[d].as_mut() {
                Some(im) => {
                    let exit = im.delay.exit_time(now);
                    self.seq += 1;
                    self.held.push(Held { exit, seq: self.seq, dir, pkt });
                    self.held_now[d] += 1;
                    self.held_max[d] = self.held_max[d].max(self.held_now[d]);
                }
                None => {
                    self.counters[d][2] += 1;
                    out.push((dir, pkt));
                }
            }
        }
        while self.held.peek().is_some_and(|h| h.exit <= now) {
            let h = self.held.pop().expect("peeked");
            let d = h.dir.index();
            self.held_now[d] -= 1;
            self.counters[d][2] += 1;
            out.push((h.dir, h.pkt));
        }
    }
}

impl Middlebox for WanLink {
    fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
        let d = dir.index();
        self.counters[d][0] += 1;
        if self.impair[d].as_mut().is_some_and(|im| im.loss.drop_next()) {
            self.counters[d][1] += 1;
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        self.link.on_packet(now, dir, pkt, &mut scratch);
        self.scratch = scratch;
        self.delay(now, out);
    }

    fn poll_timeout(&self) -> Option<Time> {
        match (self.link.poll_timeout(), self.held.peek().map(|h| h.exit)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timeout(&mut self, now: Time, out: &mut Emit) {
        let mut scratch = std::mem::take(&mut self.scratch);
        self.link.on_timeout(now, &mut scratch);
        self.scratch = scratch;
        self.delay(now, out);
    }

    /// Per direction the [`QdiscLink`]'s stats plus `frames` (arrived), `lost` (before the
    /// queue), `queue_drops` (the discipline's), `forwarded` (left the delay line), `max_queue`
    /// (the discipline's most packets), `in_flight` and `in_flight_max` (in the delay line): the
    /// keys of the WAN emulator's own stats, so a run reads either.
    fn stats(&self) -> BoxStats {
        let link = self.link.link_stats();
        let dir = |d: usize, link: Option<LinkDirStats>| {
            let c = self.counters[d];
            ImpairedDirStats {
                frames: c[0],
                lost: c[1],
                forwarded: c[2],
                queue_drops: link.as_ref().map_or(0, |l| l.dropped),
                max_queue: link.as_ref().map_or(0, |l| l.data_queue_max_pkts),
                in_flight: self.held_now[d] as u64,
                in_flight_max: self.held_max[d] as u64,
                link,
            }
        };
        BoxStats::ImpairedLink(ImpairedLinkStats { a_to_b: dir(0, link.a_to_b), b_to_a: dir(1, link.b_to_a) })
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

    /// A 10 Mbit/s WanLink with 20 ms of delay and every 2nd packet lost; `n` 1000-byte packets
    /// arrive at t = 0 (the driver exact): when each left, and the box.
    fn wan(n: usize, queue: usize, every: u64) -> (Vec<(Time, usize)>, WanLink) {
        use crate::impair::{JitterSpec, LossSpec};
        let s = Shaper::new(10_000_000, Box::new(DropTail::new(Limit::Packets(queue))));
        let im = Impair {
            loss: Loss::new(LossSpec::Periodic { every, offset: 0 }, crate::rng::stream(1, "loss", 0)),
            delay: Delay::new(Dur::from_millis(20), JitterSpec::None, false, crate::rng::stream(1, "delay", 0)),
        };
        let mut b = WanLink::new(QdiscLink::new(Some(s), None, 0), Some(im), None);
        let mut rng = Rng::new(1);
        let mut out = Emit::new();
        for _ in 0..n {
            b.on_packet(Time::ZERO, Dir::AToB, sample_tcp(false, 1000, &mut rng), &mut out);
        }
        assert!(out.is_empty(), "nothing leaves before its delay");
        let mut left = Vec::new();
        while let Some(t) = b.poll_timeout() {
            b.on_timeout(t, &mut out);
            left.extend(out.drain(..).map(|(_, p)| (t, p.ip_len())));
        }
        (left, b)
    }

    #[test]
    fn wan_link_loses_before_the_queue_then_serialises_then_delays() {
        // 10 packets, every 2nd lost before the queue: 5 enter (one on the line, 4 waiting in a
        // queue of 4: none dropped there, the lost ones took no room); each leaves 20 ms after the
        // end of its serialisation.
        let (left, b) = wan(10, 4, 2);
        assert_eq!(left.len(), 5);
        let mut end = Time::ZERO;
        for (i, (t, len)) in left.iter().enumerate() {
            end += Dur::tx_time(*len, 10_000_000);
            assert_eq!(*t, end + Dur::from_millis(20), "packet {i}");
        }
        let st = b.stats().to_json();
        let d = &st["a_to_b"];
        assert_eq!((d["frames"].as_u64(), d["lost"].as_u64()), (Some(10), Some(5)), "{st}");
        assert_eq!((d["queue_drops"].as_u64(), d["forwarded"].as_u64()), (Some(0), Some(5)), "{st}");
        assert_eq!((d["max_queue"].as_u64(), d["in_flight"].as_u64()), (Some(4), Some(0)), "{st}");
        assert_eq!(d["in_flight_max"].as_u64(), Some(5), "all five in the delay line at once: {st}");
        // A queue of 2 behind no loss: one on the line, two waiting, the discipline drops the rest.
        let (left, b) = wan(10, 2, u64::MAX);
        assert_eq!(left.len(), 3);
        assert_eq!(b.stats().to_json()["a_to_b"]["queue_drops"].as_u64(), Some(7));
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

    /// A link of `rate` (None: no queue) and `delay` each way, no loss, no overhead.
    fn plain(rate: Option<u64>, delay_ms: u64) -> WanLink {
        use crate::impair::{JitterSpec, LossSpec};
        let im = |i| Impair {
            loss: Loss::new(LossSpec::None, crate::rng::stream(1, "loss", i)),
            delay: Delay::new(Dur::from_millis(delay_ms), JitterSpec::None, false, crate::rng::stream(1, "delay", i)),
        };
        let shaper = || rate.map(|r| Shaper::new(r, Box::new(DropTail::new(Limit::Packets(100)))));
        WanLink::new(QdiscLink::new(shaper(), shaper(), 0), Some(im(0)), Some(im(1)))
    }

    #[test]
    fn links_in_series_add_their_serialisation_and_delays_each_way() {
        use crate::middlebox::Series;
        // A → B: 10 Mbit/s and 5 ms, then 5 Mbit/s and 1 ms: three back-to-back packets queue at
        // the slower second link, each leaving it two of the first link's slots after the one
        // before. B → A: the second link's 1 ms first, then the first's 5 ms.
        let mut s = Series::new(vec![
            ("bottleneck".into(), Box::new(plain(Some(10_000_000), 5)) as Box<dyn Middlebox + Send>),
            ("access".into(), Box::new(plain(Some(5_000_000), 1))),
        ]);
        let mut rng = Rng::new(1);
        let mut out = Emit::new();
        let pkt = sample_tcp(false, 1000, &mut rng);
        let t1 = Dur::tx_time(pkt.ip_len(), 10_000_000);
        for _ in 0..3 {
            s.on_packet(Time::ZERO, Dir::AToB, pkt.clone(), &mut out);
        }
        s.on_packet(Time::ZERO, Dir::BToA, pkt.clone(), &mut out);
        assert!(out.is_empty());
        let mut left = Vec::new();
        while let Some(t) = s.poll_timeout() {
            s.on_timeout(t, &mut out);
            left.extend(out.drain(..).map(|(d, _)| (d, t)));
        }
        let at = |k: u64| Time::ZERO + Dur(k * t1.0) + Dur::from_millis(6);
        let back = Time::ZERO + Dur(3 * t1.0) + Dur::from_millis(6); // 2·t1 at 5 Mbit/s, then t1 at 10
        let mut want = vec![(Dir::AToB, at(3)), (Dir::AToB, at(5)), (Dir::AToB, at(7)), (Dir::BToA, back)];
        let key = |w: &(Dir, Time)| (w.1, w.0.index());
        want.sort_by_key(key);
        left.sort_by_key(key);
        assert_eq!(left, want);
        let st = s.stats().to_json();
        assert_eq!(st["bottleneck"]["a_to_b"]["forwarded"].as_u64(), Some(3), "{st}");
        // The third packet reaches the access link the instant the first ends there, before the
        // second is taken off its queue: two waiting.
        assert_eq!(st["access"]["a_to_b"]["max_queue"].as_u64(), Some(2), "{st}");
        assert_eq!(st["access"]["b_to_a"]["sent_bytes"].as_u64(), Some(pkt.ip_len() as u64), "{st}");
        assert_eq!(st["bottleneck"]["a_to_b"]["max_queue"].as_u64(), Some(2), "{st}");
    }

    #[test]
    fn split_gives_each_class_its_own_link() {
        use crate::middlebox::Split;
        use ackshape_wire::L4;
        // Port 6000 → a 1-ms link, port 6001 → a 3-ms one, anything else → the last; each has its
        // own queue, so the two packets sent at once both leave at their serialisation end.
        let links: crate::middlebox::Named = vec![
            ("a".into(), Box::new(plain(Some(10_000_000), 1))),
            ("b".into(), Box::new(plain(Some(10_000_000), 3))),
        ];
        let mut s = Split::new(links, Box::new(|p: &Packet| p.tcp().map_or(9, |t| t.dport as usize - 6000)));
        let mut rng = Rng::new(1);
        let mut out = Emit::new();
        let with_port = |port: u16, rng: &mut Rng| {
            let mut p = sample_tcp(false, 1000, rng);
            if let L4::Tcp(t) = &mut p.l4 {
                t.dport = port;
            }
            p
        };
        let pkt = with_port(6000, &mut rng);
        let t1 = Dur::tx_time(pkt.ip_len(), 10_000_000);
        s.on_packet(Time::ZERO, Dir::AToB, pkt, &mut out);
        s.on_packet(Time::ZERO, Dir::AToB, with_port(6001, &mut rng), &mut out);
        s.on_packet(Time::ZERO, Dir::AToB, with_port(7000, &mut rng), &mut out);
        let mut left = Vec::new();
        while let Some(t) = s.poll_timeout() {
            s.on_timeout(t, &mut out);
            left.extend(out.drain(..).map(|(_, p)| (t, p.tcp().unwrap().dport)));
        }
        let at = |ms| Time::ZERO + t1 + Dur::from_millis(ms);
        assert_eq!(left, [(at(1), 6000), (at(3), 6001), (at(3) + t1, 7000)]);
        let st = s.stats().to_json();
        assert_eq!(
            (st["a"]["a_to_b"]["forwarded"].as_u64(), st["b"]["a_to_b"]["forwarded"].as_u64()),
            (Some(1), Some(2))
        );
    }
}
