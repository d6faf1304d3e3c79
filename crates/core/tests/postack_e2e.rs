//! End-to-end behaviour of PostACK with core's TCP `Connection`s: N senders ↔ an edge gateway
//! (one class at BW_c: a FIFO, or per-flow queues served round-robin; PostACK on the ACK path)
//! ↔ a WAN with a fixed delay ↔ N receivers. A tiny deterministic event loop, independent of the
//! simulator, so the mechanism is tested on its own seam.

use ackshape_core::shape::ackmech::{AckMechanism, FlowKey};
use ackshape_core::tcp::{Connection, TcpConfig};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::{Packet, TcpFlags};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ClassQ {
    /// One FIFO PCDQ for the class.
    Fifo,
    /// Per-flow queues served round-robin (PFQ+DRR with equal packets).
    Pfq,
}

enum Ev {
    /// A packet from sender i reaches the gateway.
    AtGw(usize, Packet),
    AtRcv(usize, Packet),
    /// A packet from receiver i reaches the gateway.
    BackAtGw(usize, Packet),
    AtSnd(usize, Packet),
}

struct Flow {
    snd: Connection,
    rcv: Option<Connection>,
    key: FlowKey,
    one_way: Dur,
    start: Time,
    bytes: u64,
    started: bool,
    delivered_at_warmup: u64,
}

struct Net {
    now: Time,
    flows: Vec<Flow>,
    ev: BTreeMap<(Time, u64), Ev>,
    seq: u64,
    cfg_rcv: TcpConfig,
    class: ClassQ,
    fifo: VecDeque<(usize, Packet, bool)>,
    pfq: Vec<VecDeque<(Packet, bool)>>,
    rr: VecDeque<usize>,
    queued: usize,
    limit: usize,
    rate: u64,
    busy_until: Time,
    link_next: Option<Time>,
    lan: Dur,
    mech: Option<Box<dyn AckMechanism + Send>>,
    // metrics (after warm-up)
    warmup: Time,
    q_max: usize,
    q_area: f64,
    q_last: Time,
    drops: u64,
    held_max: usize,
    out: Vec<Packet>,
    /// (drops, RTOs, retransmissions) at the end of the warm-up.
    at_warmup: (u64, u64, u64),
}

struct Report {
    goodput_bps: Vec<f64>,
    q_max: usize,
    q_mean: f64,
    drops: u64,
    held_max: usize,
    timeouts: u64,
    retrans: u64,
    held_end: usize,
    /// (drops, RTOs, retransmissions) during the warm-up.
    startup: (u64, u64, u64),
    /// Flows whose every byte was acknowledged.
    done: usize,
}

impl Report {
    fn total(&self) -> f64 {
        self.goodput_bps.iter().sum()
    }
    fn cov(&self) -> f64 {
        let n = self.goodput_bps.len() as f64;
        let m = self.total() / n;
        (self.goodput_bps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / n).sqrt() / m
    }
}

fn sock(i: usize, rcv: bool) -> SocketAddr {
    if rcv {
        format!("10.0.1.{}:80", 1 + i).parse().unwrap()
    } else {
        format!("10.0.0.{}:{}", 1 + i, 40_000 + i).parse().unwrap()
    }
}

struct Setup {
    rate: u64,
    rtts_ms: Vec<u64>,
    class: ClassQ,
    limit: usize,
    mech: Option<&'static str>,
    tcp: TcpConfig,
    /// Bytes per flow (u64::MAX/4: bulk).
    bytes: u64,
    /// Start of flow i: i × stagger.
    stagger: Dur,
}

fn tcp_cfg(delack_every: u32) -> TcpConfig {
    let mut c = TcpConfig { rcv_buf: 64 << 10, ..TcpConfig::default() };
    c.delack.every = delack_every;
    c
}

impl Net {
    fn new(s: &Setup) -> Net {
        let flows = s
            .rtts_ms
            .iter()
            .enumerate()
            .map(|(i, &rtt)| {
                let (a, b) = (sock(i, false), sock(i, true));
                let start = Time(s.stagger.0 * i as u64);
                Flow {
                    snd: Connection::connect(s.tcp.clone(), a, b, 1000 + i as u32 * 7919, start),
                    rcv: None,
                    key: (a.ip(), b.ip(), a.port(), b.port()),
                    one_way: Dur::from_micros(rtt * 500),
                    start,
                    bytes: s.bytes,
                    started: false,
                    delivered_at_warmup: 0,
                }
            })
            .collect::<Vec<_>>();
        let mech = s.mech.map(|v| {
            // A variant name, or a whole settings table.
            let src = if v.contains('=') { v.to_string() } else { format!("variant = \"{v}\"") };
            let t: ackshape_core::table::Table = toml::from_str(&src).unwrap();
            let mut m = ackshape_core::shape::mechanism::build("postack", &t).unwrap().unwrap();
            m.set_rate(Time::ZERO, s.rate);
            m
        });
        let n = flows.len();
        Net {
            now: Time::ZERO,
            flows,
            ev: BTreeMap::new(),
            seq: 0,
            cfg_rcv: s.tcp.clone(),
            class: s.class,
            fifo: VecDeque::new(),
            pfq: (0..n).map(|_| VecDeque::new()).collect(),
            rr: VecDeque::new(),
            queued: 0,
            limit: s.limit,
            rate: s.rate,
            busy_until: Time::ZERO,
            link_next: None,
            lan: Dur::from_micros(50),
            mech,
            warmup: Time::ZERO,
            q_max: 0,
            q_area: 0.0,
            q_last: Time::ZERO,
            drops: 0,
            held_max: 0,
            out: Vec::new(),
            at_warmup: (0, 0, 0),
        }
    }

    fn at(&mut self, t: Time, e: Ev) {
        self.ev.insert((t, self.seq), e);
        self.seq += 1;
    }

    fn flow_of_sender(&self, p: &Packet) -> usize {
        let t = p.tcp().unwrap();
        (t.dport - 40_000) as usize
    }

    fn q_change(&mut self, delta: isize) {
        let now = self.now;
        if now >= self.warmup {
            let from = self.q_last.max(self.warmup);
            self.q_area += self.queued as f64 * now.since(from).as_secs_f64();
        }
        self.q_last = now;
        self.queued = (self.queued as isize + delta) as usize;
        if now >= self.warmup {
            self.q_max = self.q_max.max(self.queued);
        }
    }

    /// A forward packet of flow i at the gateway: the class.
    fn enqueue(&mut self, i: usize, p: Packet) {
        if self.queued >= self.limit {
            self.drops += 1;
            return;
        }
        let t = p.tcp().unwrap();
        let counted = p.payload_len > 0 || t.flags.0 & (TcpFlags::SYN.0 | TcpFlags::FIN.0) != 0;
        if counted {
            if let Some(m) = self.mech.as_mut() {
                m.on_data(self.now, self.flows[i].key, &p);
            }
        }
        match self.class {
            ClassQ::Fifo => self.fifo.push_back((i, p, counted)),
            ClassQ::Pfq => {
                if self.pfq[i].is_empty() {
                    self.rr.push_back(i);
                }
                self.pfq[i].push_back((p, counted));
            }
        }
        self.q_change(1);
        self.kick();
    }

    fn kick(&mut self) {
        if self.queued == 0 {
            return;
        }
        if self.busy_until > self.now {
            self.link_next = Some(self.busy_until);
            return;
        }
        let (i, p, counted, qlen) = match self.class {
            ClassQ::Fifo => {
                let (i, p, c) = self.fifo.pop_front().unwrap();
                (i, p, c, None)
            }
            ClassQ::Pfq => {
                let i = self.rr.pop_front().unwrap();
                let (p, c) = self.pfq[i].pop_front().unwrap();
                if !self.pfq[i].is_empty() {
                    self.rr.push_back(i);
                }
                (i, p, c, Some(self.pfq[i].len()))
            }
        };
        self.q_change(-1);
        if counted {
            if let Some(m) = self.mech.as_mut() {
                let mut out = std::mem::take(&mut self.out);
                m.on_class_dequeue(self.now, self.flows[i].key, qlen, &mut out);
                self.send_back(&mut out);
                self.out = out;
            }
        }
        self.busy_until = self.now + Dur::tx_time(p.ip_len(), self.rate);
        let arr = self.busy_until + self.flows[i].one_way;
        self.at(arr, Ev::AtRcv(i, p));
        self.link_next = if self.queued > 0 { Some(self.busy_until) } else { None };
    }

    fn send_back(&mut self, out: &mut Vec<Packet>) {
        for p in out.drain(..) {
            let i = self.flow_of_sender(&p);
            let t = self.now + self.lan;
            self.at(t, Ev::AtSnd(i, p));
        }
    }

    fn back_at_gw(&mut self, i: usize, p: Packet) {
        let mut out = std::mem::take(&mut self.out);
        match self.mech.as_mut() {
            Some(m) => {
                m.on_ack(self.now, self.flows[i].key, p, &mut out);
                self.held_max = self.held_max.max(m.acks_held());
            }
            None => out.push(p),
        }
        self.send_back(&mut out);
        self.out = out;
    }

    fn pump(&mut self) {
        let now = self.now;
        for i in 0..self.flows.len() {
            if !self.flows[i].started && now >= self.flows[i].start {
                self.flows[i].started = true;
                let b = self.flows[i].bytes;
                self.flows[i].snd.write(b);
            }
            while let Some(p) = self.flows[i].snd.poll_transmit(now) {
                let t = now + self.lan;
                self.at(t, Ev::AtGw(i, p));
            }
            let ow = self.flows[i].one_way;
            let mut back = vec![];
            if let Some(r) = self.flows[i].rcv.as_mut() {
                while let Some(p) = r.poll_transmit(now) {
                    back.push(p);
                }
                while r.poll_event().is_some() {}
                while r.read().is_some() {}
            }
            for p in back {
                self.at(now + ow, Ev::BackAtGw(i, p));
            }
            while self.flows[i].snd.poll_event().is_some() {}
        }
    }

    fn next_time(&self) -> Option<Time> {
        let mut t: Option<Time> = self.ev.keys().next().map(|k| k.0);
        let mut take = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        };
        take(self.link_next);
        take(self.mech.as_ref().and_then(|m| m.poll_timeout()));
        for f in &self.flows {
            take(f.snd.poll_timeout());
            take(f.rcv.as_ref().and_then(|r| r.poll_timeout()));
            if !f.started {
                take(Some(f.start));
            }
        }
        t
    }

    fn run(&mut self, warmup: Time, end: Time) {
        self.warmup = warmup;
        let mut warmed = false;
        self.pump();
        while let Some(t) = self.next_time() {
            if t > end {
                break;
            }
            if !warmed && t >= warmup {
                warmed = true;
                for f in self.flows.iter_mut() {
                    f.delivered_at_warmup = f.rcv.as_ref().map_or(0, |r| r.stats().bytes_delivered);
                }
                self.at_warmup = self.counters();
                self.held_max = 0;
            }
            self.now = t;
            while let Some((&k, _)) = self.ev.iter().next() {
                if k.0 > t {
                    break;
                }
                match self.ev.remove(&k).unwrap() {
                    Ev::AtGw(i, p) => self.enqueue(i, p),
                    Ev::AtRcv(i, p) => match self.flows[i].rcv.as_mut() {
                        Some(r) => r.handle_packet(t, &p),
                        None => self.flows[i].rcv = Connection::accept(self.cfg_rcv.clone(), &p, 5000, t),
                    },
                    Ev::BackAtGw(i, p) => self.back_at_gw(i, p),
                    Ev::AtSnd(i, p) => self.flows[i].snd.handle_packet(t, &p),
                }
                self.pump();
            }
            if self.link_next.is_some_and(|x| x <= t) {
                self.link_next = None;
                self.kick();
            }
            if let Some(m) = self.mech.as_mut() {
                if m.poll_timeout().is_some_and(|x| x <= t) {
                    let mut out = std::mem::take(&mut self.out);
                    m.on_timeout(t, &mut out);
                    self.held_max = self.held_max.max(m.acks_held());
                    self.send_back(&mut out);
                    self.out = out;
                }
            }
            for f in self.flows.iter_mut() {
                if f.snd.poll_timeout().is_some_and(|x| x <= t) {
                    f.snd.handle_timeout(t);
                }
                if let Some(r) = f.rcv.as_mut() {
                    if r.poll_timeout().is_some_and(|x| x <= t) {
                        r.handle_timeout(t);
                    }
                }
            }
            self.pump();
        }
        self.now = end;
        self.q_change(0);
    }

    fn counters(&self) -> (u64, u64, u64) {
        (
            self.drops,
            self.flows.iter().map(|f| f.snd.stats().timeouts).sum(),
            self.flows.iter().map(|f| f.snd.stats().retrans_segs).sum(),
        )
    }

    fn report(&self, warmup: Time, end: Time) -> Report {
        let (d, t, r) = self.counters();
        let w = self.at_warmup;
        let secs = end.since(warmup).as_secs_f64();
        Report {
            goodput_bps: self
                .flows
                .iter()
                .map(|f| {
                    let d = f.rcv.as_ref().map_or(0, |r| r.stats().bytes_delivered) - f.delivered_at_warmup;
                    d as f64 * 8.0 / secs
                })
                .collect(),
            q_max: self.q_max,
            q_mean: self.q_area / secs,
            drops: d - w.0,
            held_max: self.held_max,
            timeouts: t - w.1,
            retrans: r - w.2,
            startup: w,
            held_end: self.mech.as_ref().map_or(0, |m| m.acks_held()),
            done: self.flows.iter().filter(|f| f.snd.stats().bytes_acked >= f.bytes).count(),
        }
    }
}

fn run(s: &Setup, secs: u64) -> Report {
    run_w(s, 5, secs)
}

fn run_w(s: &Setup, warmup_s: u64, secs: u64) -> Report {
    let mut n = Net::new(s);
    let (w, e) = (Time(Dur::from_secs(warmup_s).0), Time(Dur::from_secs(secs).0));
    n.run(w, e);
    let r = n.report(w, e);
    println!(
        "{:?} {:?} {:?} ms, delack {}: total {:.3} Mbit/s, CoV {:.3}, queue max {} mean {:.1}, drops {}, ACKs held max {}, RTOs {}, retrans {} (warm-up: drops, RTOs, retrans {:?})",
        s.mech,
        s.class,
        s.rtts_ms,
        s.tcp.delack.every,
        r.total() / 1e6,
        r.cov(),
        r.q_max,
        r.q_mean,
        r.drops,
        r.held_max,
        r.timeouts,
        r.retrans,
        r.startup
    );
    r
}

const RATE: u64 = 5_000_000;

fn eight_flows(class: ClassQ, mech: Option<&'static str>, delack: u32) -> Setup {
    Setup {
        rate: RATE,
        rtts_ms: vec![40; 8],
        class,
        limit: 1000,
        mech,
        tcp: tcp_cfg(delack),
        bytes: u64::MAX / 4,
        stagger: Dur::from_millis(100),
    }
}

/// 8 flows in a 5 Mbit/s class at 40 ms RTT (receiver ACKs every segment, as paper 000
/// assumes): on-off PostACK keeps the class FIFO short with ≥ 90 % of the class rate as goodput
/// and fair flows, where class-only FIFO shaping queues the flows' whole excess windows.
#[test]
fn on_off_keeps_the_class_queue_short() {
    let fifo = run(&eight_flows(ClassQ::Fifo, None, 1), 25);
    let pa = run(&eight_flows(ClassQ::Fifo, Some("on-off"), 1), 25);
    assert!(pa.total() >= 0.9 * RATE as f64, "goodput {:.0}", pa.total());
    assert!(pa.cov() <= 0.1, "CoV {:.3}", pa.cov());
    assert!(pa.q_max <= 10, "class queue max {}", pa.q_max);
    assert_eq!((pa.drops, pa.timeouts), (0, 0));
    assert!(fifo.q_mean >= 10.0 * pa.q_mean.max(1.0), "FIFO mean queue {:.1} vs {:.1}", fifo.q_mean, pa.q_mean);
    assert!(fifo.q_max >= 10 * pa.q_max, "FIFO max queue {} vs {}", fifo.q_max, pa.q_max);
    // The window the FIFO held as data, PostACK holds as ACKs.
    assert!(pa.held_max as f64 >= 0.5 * fifo.q_max as f64, "ACKs held {} vs FIFO {}", pa.held_max, fifo.q_max);
}

/// P0-10: with delayed ACKs (one per two segments) the on-off variant still reaches the class
/// rate (the QR skips every other slot of a flow; each release brings two segments).
#[test]
fn on_off_with_delayed_acks() {
    let pa = run(&eight_flows(ClassQ::Fifo, Some("on-off"), 2), 25);
    assert!(pa.total() >= 0.9 * RATE as f64, "goodput {:.0}", pa.total());
    assert!(pa.cov() <= 0.1, "CoV {:.3}", pa.cov());
    assert!(pa.q_max <= 20, "class queue max {}", pa.q_max);
    assert_eq!((pa.drops, pa.timeouts), (0, 0));
}

/// Zero-timer PostACK on per-flow queues (paper 000 §6): about one packet per flow stays in the
/// per-flow queues (two with `keep_in_pfq = 1`), while PFQ alone holds the flows' excess windows
/// as data.
#[test]
fn zero_timer_keeps_the_per_flow_queues_short() {
    for delack in [1, 2] {
        let pfq = run(&eight_flows(ClassQ::Pfq, None, delack), 25);
        let mut means = vec![];
        for (mech, per_flow) in [("zero-timer", 1.6), ("variant = \"zero-timer\"\nkeep_in_pfq = 1", 2.6)] {
            let pa = run(&eight_flows(ClassQ::Pfq, Some(mech), delack), 25);
            assert!(pa.total() >= 0.9 * RATE as f64, "goodput {:.0}", pa.total());
            assert!(pa.cov() <= 0.1, "CoV {:.3}", pa.cov());
            assert!(pa.q_mean <= per_flow * 8.0, "{mech}: class queue mean {:.1}", pa.q_mean);
            assert_eq!((pa.drops, pa.timeouts), (0, 0));
            assert!(pfq.q_mean >= 10.0 * pa.q_mean.max(1.0), "PFQ mean queue {:.1} vs {:.1}", pfq.q_mean, pa.q_mean);
            means.push(pa.q_mean);
        }
        assert!(means[1] - means[0] >= 0.5 * 8.0, "keep_in_pfq = 1 keeps a packet per flow more: {means:?}");
    }
}

/// The basic form (Fig. 3) shapes too, from its window and RTT estimates.
#[test]
fn basic_keeps_the_class_queue_short() {
    let pa = run(&eight_flows(ClassQ::Fifo, Some("basic"), 1), 25);
    assert!(pa.total() >= 0.9 * RATE as f64, "goodput {:.0}", pa.total());
    assert!(pa.cov() <= 0.1, "CoV {:.3}", pa.cov());
    assert!(pa.q_max <= 20, "class queue max {}", pa.q_max);
    assert_eq!((pa.drops, pa.timeouts), (0, 0));
}

/// Fig. 8's point: with a small class buffer (12 packets for 8 flows), class-only shaping keeps
/// losing packets (and goodput to retransmissions) while PostACK, once its flows run, needs no
/// more buffer than that. The 10-segment initial windows arrive before any ACK exists, so PostACK
/// cannot pace them: some are lost during the start-up, and the retransmission timeouts that
/// follow back off for seconds, so the steady state is measured after a 15 s warm-up.
/// (Measured: on-off's class queue peaks at 7–11 packets, zero-timer's holds one packet per
/// flow and peaks at 10–12 while flows recover; zero-timer with a 10-packet buffer keeps losing.)
#[test]
fn small_class_buffer_suffices_with_postack() {
    let small = |mech, class| Setup { limit: 12, ..eight_flows(class, mech, 1) };
    for class in [ClassQ::Fifo, ClassQ::Pfq] {
        let only = run_w(&small(None, class), 15, 40);
        assert!(only.drops > 50 && only.retrans > 50, "class-only {class:?}");
    }
    for (mech, class) in [("on-off", ClassQ::Fifo), ("zero-timer", ClassQ::Pfq)] {
        let pa = run_w(&small(Some(mech), class), 15, 40);
        assert_eq!((pa.drops, pa.retrans, pa.timeouts), (0, 0, 0), "{mech}");
        assert!(pa.total() >= 0.9 * RATE as f64, "{mech}: goodput {:.0}", pa.total());
        assert!(pa.cov() <= 0.1, "{mech}: CoV {:.3}", pa.cov());
    }
}

/// Fig. 10's setting: flows with 10, 50 and 150 ms RTT in a 200 KB/s class get equal shares
/// with PostACK.
#[test]
fn heterogeneous_rtts_share_equally() {
    for (mech, class) in [("on-off", ClassQ::Fifo), ("zero-timer", ClassQ::Pfq), ("basic", ClassQ::Fifo)] {
        let s = Setup {
            rate: 1_600_000,
            rtts_ms: vec![10, 50, 150],
            class,
            limit: 1000,
            mech: Some(mech),
            tcp: tcp_cfg(1),
            bytes: u64::MAX / 4,
            stagger: Dur::from_millis(100),
        };
        let pa = run(&s, 40);
        assert!(pa.cov() <= 0.1, "{mech}: CoV {:.3}", pa.cov());
        assert!(pa.total() >= 0.9 * 1_600_000.0, "{mech}: goodput {:.0}", pa.total());
    }
}

/// Finite transfers: every flow completes without a retransmission timeout and no ACK stays
/// held once the transfers are over (the end-of-transfer gap of P0-16 included).
#[test]
fn transfers_end_and_nothing_stays_held() {
    for delack in [1, 2] {
        for (mech, class) in [
            ("on-off", ClassQ::Fifo),
            ("zero-timer", ClassQ::Pfq),
            ("zero-timer", ClassQ::Fifo),
            ("basic", ClassQ::Fifo),
        ] {
            let s =
                Setup { bytes: 300_000 + 1, stagger: Dur::from_millis(37), ..eight_flows(class, Some(mech), delack) };
            let r = run_w(&s, 0, 20);
            assert_eq!(r.done, 8, "{mech} {class:?} delack {delack}: all transfers complete");
            assert_eq!(r.timeouts, 0, "{mech} {class:?} delack {delack}");
            assert_eq!(r.held_end, 0, "{mech} {class:?} delack {delack}: ACKs stranded");
        }
    }
}
