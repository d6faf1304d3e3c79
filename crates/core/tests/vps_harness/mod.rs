//! A small deterministic multi-flow network for the VPS tests: one sender (a VPS group or a set
//! of ordinary TCP connections), one FIFO drop-tail bottleneck, `n` receivers with optional
//! extra one-way delays. ACKs return without queuing.
#![allow(dead_code)]

use ackshape_core::tcp::vps::VpsGroup;
use ackshape_core::tcp::{Connection, DelAckConfig, TcpConfig};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::Packet;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

pub fn secs(x: u64) -> Time {
    Time(Dur::from_secs(x).0)
}

/// What sends: a VPS group or `n` independent TCP connections, behind one interface.
pub trait Sender {
    fn connect(&mut self, i: usize, local: SocketAddr, remote: SocketAddr, iss: u32, now: Time);
    fn write(&mut self, i: usize, n: u64, now: Time);
    fn handle_packet(&mut self, now: Time, i: usize, p: &Packet);
    fn handle_timeout(&mut self, now: Time);
    fn poll_transmit(&mut self, now: Time) -> Option<(usize, Packet)>;
    fn poll_timeout(&self) -> Option<Time>;
    /// Aggregate congestion window (segments): the virtual flows' for VPS.
    fn cwnd_sum(&self) -> f64;
    fn vps(&self) -> Option<&VpsGroup> {
        None
    }
    fn vps_mut(&mut self) -> Option<&mut VpsGroup> {
        None
    }
}

impl Sender for VpsGroup {
    fn connect(&mut self, i: usize, l: SocketAddr, r: SocketAddr, iss: u32, now: Time) {
        VpsGroup::connect(self, i, l, r, iss, now)
    }
    fn write(&mut self, i: usize, n: u64, now: Time) {
        VpsGroup::write(self, i, n, now)
    }
    fn handle_packet(&mut self, now: Time, i: usize, p: &Packet) {
        VpsGroup::handle_packet(self, now, i, p)
    }
    fn handle_timeout(&mut self, now: Time) {
        VpsGroup::handle_timeout(self, now)
    }
    fn poll_transmit(&mut self, _now: Time) -> Option<(usize, Packet)> {
        VpsGroup::poll_transmit(self)
    }
    fn poll_timeout(&self) -> Option<Time> {
        VpsGroup::poll_timeout(self)
    }
    fn cwnd_sum(&self) -> f64 {
        self.aggregate_cwnd()
    }
    fn vps(&self) -> Option<&VpsGroup> {
        Some(self)
    }
    fn vps_mut(&mut self) -> Option<&mut VpsGroup> {
        Some(self)
    }
}

/// `n` ordinary TCP senders.
pub struct TcpSet {
    cfg: TcpConfig,
    conns: Vec<Option<Connection>>,
}

impl TcpSet {
    pub fn new(cfg: TcpConfig, n: usize) -> TcpSet {
        TcpSet { cfg, conns: (0..n).map(|_| None).collect() }
    }
}

impl Sender for TcpSet {
    fn connect(&mut self, i: usize, l: SocketAddr, r: SocketAddr, iss: u32, now: Time) {
        self.conns[i] = Some(Connection::connect(self.cfg.clone(), l, r, iss, now));
    }
    fn write(&mut self, i: usize, n: u64, _now: Time) {
        self.conns[i].as_mut().unwrap().write(n);
    }
    fn handle_packet(&mut self, now: Time, i: usize, p: &Packet) {
        self.conns[i].as_mut().unwrap().handle_packet(now, p);
    }
    fn handle_timeout(&mut self, now: Time) {
        for c in self.conns.iter_mut().flatten() {
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
        }
    }
    fn poll_transmit(&mut self, now: Time) -> Option<(usize, Packet)> {
        for (i, c) in self.conns.iter_mut().enumerate() {
            if let Some(p) = c.as_mut().and_then(|c| c.poll_transmit(now)) {
                return Some((i, p));
            }
        }
        None
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.conns.iter().flatten().filter_map(|c| c.poll_timeout()).min()
    }
    fn cwnd_sum(&self) -> f64 {
        self.conns.iter().flatten().map(|c| c.trace().cwnd_bytes as f64 / c.mss() as f64).sum()
    }
}

#[derive(Clone, Debug)]
pub struct NetCfg {
    pub rate_bps: u64,
    /// One-way delay of every path (each direction).
    pub delay: Dur,
    /// Extra one-way delay per receiver (each direction); missing entries are 0.
    pub extra: Vec<Dur>,
    /// Bottleneck buffer, packets.
    pub queue: usize,
}

impl Default for NetCfg {
    fn default() -> Self {
        NetCfg { rate_bps: 2_000_000, delay: Dur::from_millis(20), extra: vec![], queue: 50 }
    }
}

pub struct Net {
    pub cfg: NetCfg,
    pub now: Time,
    q: BTreeMap<(Time, u64), (bool, usize, Packet)>,
    qseq: u64,
    pub sender: Box<dyn Sender>,
    pub recv: Vec<Option<Connection>>,
    pub rcv_cfg: TcpConfig,
    /// Receive buffer per receiver (bytes), overriding `rcv_cfg`.
    pub rcv_buf: Vec<u32>,
    busy_until: Time,
    departures: VecDeque<Time>,
    pub drops: u64,
    /// Aggregate cwnd after each packet the sender received.
    pub cwnd_trace: Vec<f64>,
    /// Bytes each flow writes (default: unlimited).
    pub write_limit: Option<u64>,
    /// Drop every first transmission of flow `.0` at or above stream offset `.1`.
    pub drop_tail_of: Option<(usize, u64)>,
    /// Drop the first `.2` transmissions (the original and retransmissions) of the segment of
    /// flow `.0` that starts at stream offset `.1`.
    pub drop_seg: Option<(usize, u64, u32)>,
    max_off: Vec<u64>,
    started: bool,
    n: usize,
}

fn iss(i: usize) -> u32 {
    1000 + 7919 * i as u32
}

impl Net {
    pub fn new(cfg: NetCfg, sender: Box<dyn Sender>, n: usize) -> Net {
        let rcv_cfg = TcpConfig {
            mss: 1000,
            timestamps: false,
            delack: DelAckConfig { every: 1, ..Default::default() },
            ..TcpConfig::default()
        };
        Net {
            now: Time::ZERO,
            q: BTreeMap::new(),
            qseq: 0,
            sender,
            recv: (0..n).map(|_| None).collect(),
            rcv_buf: vec![rcv_cfg.rcv_buf; n],
            rcv_cfg,
            busy_until: Time::ZERO,
            departures: VecDeque::new(),
            drops: 0,
            cwnd_trace: Vec::new(),
            write_limit: None,
            drop_tail_of: None,
            drop_seg: None,
            max_off: vec![0; n],
            started: false,
            n,
            cfg,
        }
    }

    pub fn vps(&self) -> &VpsGroup {
        self.sender.vps().expect("a VPS sender")
    }

    pub fn vps_mut(&mut self) -> &mut VpsGroup {
        self.sender.vps_mut().expect("a VPS sender")
    }

    pub fn delivered(&self) -> Vec<u64> {
        self.recv.iter().map(|r| r.as_ref().map_or(0, |c| c.stats().bytes_delivered)).collect()
    }

    fn extra(&self, i: usize) -> Dur {
        self.cfg.extra.get(i).copied().unwrap_or(Dur::ZERO)
    }

    fn push(&mut self, t: Time, to_recv: bool, i: usize, p: Packet) {
        self.q.insert((t, self.qseq), (to_recv, i, p));
        self.qseq += 1;
    }

    fn forward(&mut self, i: usize, p: Packet) {
        let now = self.now;
        if let Some((f, from)) = self.drop_tail_of {
            if f == i && p.payload_len > 0 {
                let off = p.tcp().unwrap().seq.0.wrapping_sub(iss(i).wrapping_add(1)) as u64;
                let new = off >= self.max_off[i];
                self.max_off[i] = self.max_off[i].max(off + p.payload_len as u64);
                if new && off >= from {
                    self.drops += 1;
                    return;
                }
            }
        }
        if let Some((f, at, left)) = self.drop_seg {
            if f == i && left > 0 && p.payload_len > 0 {
                let off = p.tcp().unwrap().seq.0.wrapping_sub(iss(i).wrapping_add(1)) as u64;
                if off == at {
                    self.drop_seg = Some((f, at, left - 1));
                    self.drops += 1;
                    return;
                }
            }
        }
        while self.departures.front().is_some_and(|&d| d <= now) {
            self.departures.pop_front();
        }
        if self.departures.len() >= self.cfg.queue {
            self.drops += 1;
            return;
        }
        let start = now.max(self.busy_until);
        self.busy_until = start + Dur::tx_time(p.ip_len(), self.cfg.rate_bps);
        self.departures.push_back(self.busy_until);
        let t = self.busy_until + self.cfg.delay + self.extra(i);
        self.push(t, true, i, p);
    }

    fn pump(&mut self) {
        let now = self.now;
        loop {
            let mut any = false;
            while let Some((i, p)) = self.sender.poll_transmit(now) {
                any = true;
                self.forward(i, p);
            }
            for i in 0..self.n {
                while let Some(p) = self.recv[i].as_mut().and_then(|c| c.poll_transmit(now)) {
                    any = true;
                    let t = now + self.cfg.delay + self.extra(i);
                    self.push(t, false, i, p);
                }
            }
            if !any {
                break;
            }
        }
    }

    fn next_time(&self) -> Option<Time> {
        let mut t = self.q.keys().next().map(|k| k.0);
        let timers = self.recv.iter().flatten().filter_map(|c| c.poll_timeout()).chain(self.sender.poll_timeout());
        for x in timers {
            t = Some(t.map_or(x, |y: Time| y.min(x)));
        }
        t
    }

    /// Run until `limit`.
    pub fn run(&mut self, limit: Time) {
        if !self.started {
            self.started = true;
            for i in 0..self.n {
                let local: SocketAddr = format!("10.0.0.1:{}", 40000 + i).parse().unwrap();
                let remote: SocketAddr = format!("10.0.1.{}:80", i + 1).parse().unwrap();
                self.sender.connect(i, local, remote, iss(i), self.now);
                self.sender.write(i, self.write_limit.unwrap_or(1 << 50), self.now);
            }
            self.pump();
        }
        loop {
            let Some(t) = self.next_time() else {
                self.now = limit;
                return;
            };
            if t > limit {
                self.now = limit;
                return;
            }
            self.now = t;
            while let Some((&(at, k), _)) = self.q.iter().next() {
                if at > self.now {
                    break;
                }
                let (to_recv, i, p) = self.q.remove(&(at, k)).unwrap();
                if to_recv {
                    match self.recv[i].as_mut() {
                        Some(c) => c.handle_packet(self.now, &p),
                        None => {
                            let cfg = TcpConfig { rcv_buf: self.rcv_buf[i], ..self.rcv_cfg.clone() };
                            self.recv[i] = Connection::accept(cfg, &p, 9000 + i as u32, self.now);
                        }
                    }
                } else {
                    self.sender.handle_packet(self.now, i, &p);
                    self.cwnd_trace.push(self.sender.cwnd_sum());
                }
                self.pump();
            }
            if self.sender.poll_timeout().is_some_and(|x| x <= self.now) {
                self.sender.handle_timeout(self.now);
            }
            for r in self.recv.iter_mut().flatten() {
                if r.poll_timeout().is_some_and(|x| x <= self.now) {
                    r.handle_timeout(self.now);
                }
            }
            self.pump();
        }
    }
}
