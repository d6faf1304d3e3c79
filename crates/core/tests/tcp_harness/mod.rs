//! A tiny deterministic two-endpoint harness for the TCP tests: two `Connection`s joined by
//! a fake path per direction (fixed one-way delay, optional rate limit, scripted drops by
//! data-segment index, random loss and reordering from a seeded stream, scripted CE marks).
#![allow(dead_code)]

use ackshape_core::rng;
use ackshape_core::tcp::*;
use ackshape_core::time::{Dur, Time};
use ackshape_wire::{Ecn, Packet};
use rand::Rng as _;
use std::collections::BTreeMap;
use std::net::SocketAddr;

pub type DropFn = Box<dyn FnMut(&Packet, u64) -> bool>;
pub type PktDropFn = Box<dyn FnMut(&Packet) -> bool>;
pub type MutateFn = Box<dyn FnMut(Time, &mut Packet)>;
pub type StepFn = Box<dyn FnMut(Time, &Connection, Option<&Connection>)>;

pub struct Path {
    pub delay: Dur,
    pub rate_bps: Option<u64>,
    busy_until: Time,
    /// Data-segment indices (0-based, all data segments in this direction incl. retransmissions) to drop.
    pub drop_data: Vec<u64>,
    /// Data-segment indices to CE-mark.
    pub ce_data: Vec<u64>,
    pub loss_p: f64,
    pub reorder_p: f64,
    pub reorder_extra: Dur,
    /// Probability that a packet is delivered twice (the copy 1 ms later).
    pub dup_p: f64,
    pub drop_fn: Option<DropFn>,
    /// Drop decision for any packet (control segments included).
    pub drop_pkt: Option<PktDropFn>,
    /// Rewrites every packet sent on this path (a middlebox).
    pub mutate: Option<MutateFn>,
    data_idx: u64,
    rng: rng::Rng,
    pub dropped: u64,
}

impl Path {
    pub fn new(delay: Dur, seed: u64) -> Path {
        Path {
            delay,
            rate_bps: None,
            busy_until: Time::ZERO,
            drop_data: vec![],
            ce_data: vec![],
            loss_p: 0.0,
            reorder_p: 0.0,
            reorder_extra: Dur::ZERO,
            dup_p: 0.0,
            drop_fn: None,
            mutate: None,
            drop_pkt: None,
            data_idx: 0,
            rng: rng::stream(seed, "path", 0),
            dropped: 0,
        }
    }

    /// Whether to deliver a duplicate of the last packet sent.
    fn duplicate(&mut self) -> bool {
        self.dup_p > 0.0 && self.rng.gen::<f64>() < self.dup_p
    }

    /// Arrival time of `p` sent at `now`, or None if dropped.
    fn send(&mut self, now: Time, p: &mut Packet) -> Option<Time> {
        let mut t = now;
        if let Some(m) = self.mutate.as_mut() {
            m(now, p);
        }
        if let Some(f) = self.drop_pkt.as_mut() {
            if f(p) {
                self.dropped += 1;
                return None;
            }
        }
        if let Some(r) = self.rate_bps {
            let start = t.max(self.busy_until);
            self.busy_until = start + Dur::tx_time(p.ip_len(), r);
            t = self.busy_until;
        }
        t += self.delay;
        if p.payload_len > 0 {
            let idx = self.data_idx;
            self.data_idx += 1;
            if self.drop_data.contains(&idx) {
                self.dropped += 1;
                return None;
            }
            if self.ce_data.contains(&idx) && p.ip.ecn != Ecn::NotEct {
                p.ip.ecn = Ecn::Ce;
            }
            if let Some(f) = self.drop_fn.as_mut() {
                if f(p, idx) {
                    self.dropped += 1;
                    return None;
                }
            }
        }
        if self.loss_p > 0.0 && self.rng.gen::<f64>() < self.loss_p {
            self.dropped += 1;
            return None;
        }
        if self.reorder_p > 0.0 && self.rng.gen::<f64>() < self.reorder_p {
            t += self.reorder_extra;
        }
        Some(t)
    }
}

/// A sent packet as recorded by the harness.
#[derive(Clone, Debug)]
pub struct Sent {
    pub t: Time,
    pub from_a: bool,
    pub pkt: Packet,
    pub dropped: bool,
}

pub struct Sim {
    pub now: Time,
    pub a: Connection,
    pub b: Option<Connection>,
    pub cfg_b: TcpConfig,
    pub ab: Path,
    pub ba: Path,
    queue: BTreeMap<(Time, u64), (bool, Packet)>,
    qseq: u64,
    pub events: Vec<(Time, bool, TcpEvent)>,
    pub read_a: Vec<u8>,
    pub read_b: Vec<u8>,
    pub sent: Vec<Sent>,
    pub record: bool,
    /// Close each side automatically when its peer's FIN arrives.
    pub auto_close: bool,
    /// Called after every step (for traces).
    pub on_step: Option<StepFn>,
    iss_b: u32,
}

pub fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

impl Sim {
    pub fn new(cfg_a: TcpConfig, cfg_b: TcpConfig, one_way: Dur) -> Sim {
        Sim::with_iss(cfg_a, cfg_b, one_way, 1000, 5000)
    }

    pub fn with_iss(cfg_a: TcpConfig, cfg_b: TcpConfig, one_way: Dur, iss_a: u32, iss_b: u32) -> Sim {
        let a = Connection::connect(cfg_a, addr("10.0.0.1:40000"), addr("10.0.0.2:80"), iss_a, Time::ZERO);
        Sim {
            now: Time::ZERO,
            a,
            b: None,
            cfg_b,
            ab: Path::new(one_way, 1),
            ba: Path::new(one_way, 2),
            queue: BTreeMap::new(),
            qseq: 0,
            events: vec![],
            read_a: vec![],
            read_b: vec![],
            sent: vec![],
            record: true,
            auto_close: false,
            on_step: None,
            iss_b,
        }
    }

    pub fn b(&self) -> &Connection {
        self.b.as_ref().expect("server side exists")
    }

    fn pump(&mut self) {
        let now = self.now;
        loop {
            let mut any = false;
            while let Some(mut p) = self.a.poll_transmit(now) {
                any = true;
                let arr = self.ab.send(now, &mut p);
                if self.record {
                    self.sent.push(Sent { t: now, from_a: true, pkt: p.clone(), dropped: arr.is_none() });
                }
                if let Some(t) = arr {
                    if self.ab.duplicate() {
                        self.queue.insert((t + Dur::from_millis(1), self.qseq), (true, p.clone()));
                        self.qseq += 1;
                    }
                    self.queue.insert((t, self.qseq), (true, p));
                    self.qseq += 1;
                }
            }
            if let Some(b) = self.b.as_mut() {
                while let Some(mut p) = b.poll_transmit(now) {
                    any = true;
                    let arr = self.ba.send(now, &mut p);
                    if self.record {
                        self.sent.push(Sent { t: now, from_a: false, pkt: p.clone(), dropped: arr.is_none() });
                    }
                    if let Some(t) = arr {
                        if self.ba.duplicate() {
                            self.queue.insert((t + Dur::from_millis(1), self.qseq), (false, p.clone()));
                            self.qseq += 1;
                        }
                        self.queue.insert((t, self.qseq), (false, p));
                        self.qseq += 1;
                    }
                }
            }
            // Events and reads.
            while let Some(ev) = self.a.poll_event() {
                if ev == TcpEvent::PeerFin && self.auto_close {
                    self.a.close();
                    any = true;
                }
                self.events.push((now, true, ev));
            }
            if let Some(d) = self.a.read() {
                self.read_a.extend_from_slice(&d);
            }
            if let Some(b) = self.b.as_mut() {
                while let Some(ev) = b.poll_event() {
                    if ev == TcpEvent::PeerFin && self.auto_close {
                        b.close();
                        any = true;
                    }
                    self.events.push((now, false, ev));
                }
                if let Some(d) = b.read() {
                    self.read_b.extend_from_slice(&d);
                }
            }
            if !any {
                break;
            }
        }
    }

    fn next_time(&self) -> Option<Time> {
        let mut t = self.queue.keys().next().map(|k| k.0);
        for x in [self.a.poll_timeout(), self.b.as_ref().and_then(|b| b.poll_timeout())].into_iter().flatten() {
            t = Some(t.map_or(x, |y| y.min(x)));
        }
        t
    }

    /// Run until `limit` or until `stop` returns true (checked after each step) or nothing is pending.
    pub fn run_until(&mut self, limit: Time, mut stop: impl FnMut(&Sim) -> bool) {
        self.pump();
        loop {
            if stop(self) {
                return;
            }
            let Some(t) = self.next_time() else { return };
            if t > limit {
                self.now = limit;
                return;
            }
            self.now = t;
            while let Some((&(at, k), _)) = self.queue.iter().next() {
                if at > self.now {
                    break;
                }
                let (to_b, p) = self.queue.remove(&(at, k)).unwrap();
                if to_b {
                    match self.b.as_mut() {
                        Some(b) => b.handle_packet(self.now, &p),
                        None => {
                            self.b = Connection::accept(self.cfg_b.clone(), &p, self.iss_b, self.now);
                        }
                    }
                } else {
                    self.a.handle_packet(self.now, &p);
                }
                self.pump();
                if stop(self) {
                    return;
                }
            }
            if self.a.poll_timeout().is_some_and(|x| x <= self.now) {
                self.a.handle_timeout(self.now);
            }
            if let Some(b) = self.b.as_mut() {
                if b.poll_timeout().is_some_and(|x| x <= self.now) {
                    b.handle_timeout(self.now);
                }
            }
            self.pump();
            if let Some(f) = self.on_step.as_mut() {
                f(self.now, &self.a, self.b.as_ref());
            }
        }
    }

    /// A→B bulk transfer of `n` bytes; runs until everything is acknowledged. Returns the time.
    pub fn bulk(&mut self, n: u64, limit: Time) -> Time {
        self.a.write(n);
        self.run_until(limit, |s| s.a.stats().bytes_acked >= n);
        self.now
    }

    pub fn count(&self, from_a: bool, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|(_, a, e)| *a == from_a && f(e)).count()
    }

    pub fn event_time(&self, from_a: bool, f: impl Fn(&Event) -> bool) -> Option<Time> {
        self.events.iter().find(|(_, a, e)| *a == from_a && f(e)).map(|x| x.0)
    }
}

pub type Event = TcpEvent;

pub fn base_cfg() -> TcpConfig {
    TcpConfig::default()
}
