//! A synthetic steady-state workload for TCR's benchmark and allocation test (not part of the
//! mechanism): `n` flows with handshakes seen, then round-robin data segments and delayed ACKs
//! (one per two segments) at exactly the class rate, so pacing releases two ACKs per receiver ACK.
#![doc(hidden)]

use super::{Tcr, TcrConfig};
use crate::shape::ackmech::{AckMechanism, FlowKey};
use crate::time::{Dur, Time};
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use std::net::{IpAddr, Ipv4Addr};

const MSS: u32 = 1448;

/// The workload state.
pub struct Workload {
    pub tcr: Tcr,
    pub now: Time,
    n: u32,
    next: u32,
    sent: Vec<u32>,
    acked: Vec<u32>,
    data: Vec<Packet>,
    acks: Vec<Packet>,
    dt: Dur,
    pub out: Vec<Packet>,
}

fn key(i: u32) -> FlowKey {
    (ip(0, i), ip(1, i), 40_000 + (i % 20_000) as u16, 80)
}

fn ip(side: u8, i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, side, (i >> 8) as u8, i as u8))
}

fn pkt(i: u32, to_receiver: bool, seq: u32, ack: u32, flags: TcpFlags, opts: TcpOptions, len: u32) -> Packet {
    let k = key(i);
    let (src, dst, sport, dport) = if to_receiver { (k.0, k.1, k.2, k.3) } else { (k.1, k.0, k.3, k.2) };
    Packet {
        ip: IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: 0 },
        l4: L4::Tcp(TcpHdr { sport, dport, seq: SeqNum(seq), ack: SeqNum(ack), flags, window: 1000, urgent: 0, opts }),
        payload_len: len,
        payload: None,
    }
}

impl Workload {
    /// `n` flows in a class of `rate_bps`, RTT 40 ms, handshakes done.
    pub fn new(cfg: TcrConfig, n: u32, rate_bps: u64) -> Workload {
        let mut tcr = Tcr::new(cfg, 0);
        tcr.set_rate(Time::ZERO, rate_bps);
        let mut out = Vec::with_capacity(64);
        let ts = TcpOptions { timestamps: Some((1, 1)), ..Default::default() };
        for i in 0..n {
            let syn = TcpOptions { mss: Some(1460), wscale: Some(7), sack_permitted: true, ..ts.clone() };
            tcr.on_data(Time::ZERO, key(i), &pkt(i, true, 0, 0, TcpFlags::SYN, syn.clone(), 0));
            tcr.on_class_dequeue(Time::ZERO, key(i), None, &mut out);
            let sa = pkt(i, false, 0, 1, TcpFlags::SYN | TcpFlags::ACK, syn, 0);
            tcr.on_ack(Time(40_000_000), key(i), sa, &mut out);
        }
        out.clear();
        let data = (0..n).map(|i| pkt(i, true, 1, 1, TcpFlags::ACK, ts.clone(), MSS)).collect();
        let acks = (0..n).map(|i| pkt(i, false, 1, 1, TcpFlags::ACK, ts.clone(), 0)).collect();
        Workload {
            tcr,
            now: Time(40_000_000),
            n,
            next: 0,
            sent: vec![0; n as usize],
            acked: vec![0; n as usize],
            data,
            acks,
            dt: Dur::tx_time(1500, rate_bps),
            out,
        }
    }

    /// Two data segments of the next flow, their delayed ACK, and the timers that are due.
    pub fn cycle(&mut self) {
        let i = self.next;
        self.data();
        self.next = i;
        self.data();
        self.next = i;
        self.ack();
    }

    /// One data segment of the next flow enters and leaves the class (round robin).
    #[inline]
    pub fn data(&mut self) {
        let i = self.next;
        let s = &mut self.sent[i as usize];
        let p = &mut self.data[i as usize];
        if let L4::Tcp(t) = &mut p.l4 {
            t.seq = SeqNum(1 + *s * MSS);
        }
        *s += 1;
        self.tcr.on_data(self.now, key(i), p);
        self.tcr.on_class_dequeue(self.now, key(i), None, &mut self.out);
        self.now += self.dt;
        self.next = (i + 1) % self.n;
    }

    /// The state before a data-only run: runs the timers, moving the clock with them, until no
    /// ACK is held and two seconds have passed (a flow's release moved earlier leaves its old
    /// heap entry behind, due later). [`Workload::data`] runs no timers (a data packet's own cost),
    /// so without this the warm-up's last timers would stay overdue for the whole run, which no
    /// driver does, and TCR would take the clock for a stalled one (`docs/policy.md`, "Late
    /// wake-ups").
    pub fn settle(&mut self) {
        let until = self.now + Dur::from_secs_f64(2.0);
        while let Some(t) = self.tcr.poll_timeout().filter(|&t| t <= until || self.tcr.acks_held() > 0) {
            self.now = self.now.max(t);
            self.tcr.on_timeout(self.now, &mut self.out);
        }
        self.now = self.now.max(until);
        self.out.clear();
    }

    /// [`Workload::ack`] with the time two segments take at the class rate.
    #[inline]
    pub fn ack_alone(&mut self) {
        self.now += self.dt + self.dt;
        self.ack();
    }

    /// A (delayed) ACK of two more segments of the next flow (round robin), and the timers
    /// that are due: two paced ACKs leave per call in steady state.
    #[inline]
    pub fn ack(&mut self) {
        let i = self.next;
        let a = &mut self.acked[i as usize];
        *a += 2;
        let mut p = self.acks[i as usize].clone();
        if let L4::Tcp(t) = &mut p.l4 {
            t.ack = SeqNum(1 + *a * MSS);
        }
        self.tcr.on_ack(self.now, key(i), p, &mut self.out);
        while let Some(t) = self.tcr.poll_timeout().filter(|t| *t <= self.now) {
            self.tcr.on_timeout(t, &mut self.out);
        }
        self.out.clear();
        self.next = (i + 1) % self.n;
    }
}
