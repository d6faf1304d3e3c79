//! Virtual Packet Substitution (paper 003, Lau 2006): weighted bandwidth differentiation among
//! the TCP flows one sender sends through one bottleneck, while the group as a whole stays as
//! aggressive as the same number of ordinary TCP flows.
//!
//! A [`VpsGroup`] holds, per application flow,
//!
//! * an **actual flow**: a real [`Connection`] to an unmodified receiver (buffering,
//!   transmission, RTT estimation, RTO, retransmission) without congestion control: it sends a
//!   new segment only when the controller gives it a virtual packet ([`Connection`] in
//!   `External` mode); a fast retransmit and the first retransmission after an RTO go out at once;
//! * a **virtual flow**: a standard Reno+SACK sender ([`Connection::virtual_sender`]) driven by
//!   virtual ACKs; its "transmissions" are virtual packets (transmission credits);
//!
//! and one controller that
//!
//! * pools the virtual packets and hands them to actual flows by the weighted random rule of
//!   Eq. 2 ([`Distributor`]): new virtual packets to flows that have data, are not
//!   receive-window-limited and are not suspended; virtual retransmissions only to flows with a
//!   retransmission pending (dropped, and counted, when there is none); a chosen flow with a lost
//!   segment pending retransmits it instead and the virtual packet is reused;
//! * records every substitution in a PSR and translates actual ACKs (cumulative and SACK) into
//!   virtual ACKs ([`Translator`]), marking lost packets and buffering translations that would
//!   open false holes (false-duplicate-ACK suppression for receivers with different RTTs);
//! * propagates an actual flow's timeout to the virtual flow named in the PSR of the segment it
//!   retransmits;
//! * suspends an actual flow in loss recovery while its copy of the virtual flow's `pipe` is not
//!   below its copy of `cwnd` (Sec. 5.2);
//! * sends at most `max_burst` packets in response to one ACK or timer (Sec. 4.5).
//!
//! Weights can change at run time ([`VpsGroup::set_weights`]).
//!
//! Assumptions where the thesis is silent (see `experiments/p3/README.md` and EXPERIMENTS.md §6):
//! the eligible-set fallback of Eq. 2 (P3-8); loss marking on the first SACK block above a
//! packet (P3-6); ACK counting (P3-9); after an RTO the actual flow is suspended with a copy
//! `cwnd = 1, pipe = 0` that grows by one per new ACK (the thesis defines suspension for fast
//! recovery only); a flow is suspended only while it has segments in flight (otherwise no ACK
//! could ever lower its copy of pipe and it would wait for an RTO: a liveness guard of ours); the
//! actual flow keeps its SACK scoreboard after an RTO (RFC 6675) while its PSRs are reset to U as
//! the thesis says.
//!
//! Drive it like a [`Connection`], with the flow index beside each packet:
//!
//! ```text
//! g.connect(i, local, remote, iss, now);     // each actual flow, when the application opens it
//! g.write(i, bytes, now);
//! g.handle_packet(now, i, &pkt);             // a segment for actual flow i arrived
//! while let Some((i, p)) = g.poll_transmit() { send p from flow i }
//! if let Some(t) = g.poll_timeout() { arm a timer; at t call g.handle_timeout(t) }
//! ```

mod dist;
mod psr;

pub use dist::{check_weights, Distributor};
pub use psr::{PsrState, PsrView, Translator, TranslatorStats, VirtualAck, PSR_BYTES};

use super::conn::{PERMIT_NEW, PERMIT_RTX};
use super::{Connection, TcpConfig, TcpEvent, TcpStats};
use crate::rng::Rng;
use crate::time::Time;
use ackshape_wire::{Packet, TcpFlags};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

/// Settings of a VPS group.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VpsConfig {
    /// Application-specified ratios w_i (positive), one per flow.
    pub weights: Vec<f64>,
    /// Maximum packets sent in response to one ACK or timer (thesis: 4); 0 = unlimited. Also
    /// the virtual flows' own `max_burst`.
    pub max_burst: u32,
    /// Temporary suspension of actual flows in loss recovery (Sec. 5.2).
    pub suspension: bool,
    /// False-duplicate-ACK suppression (Sec. 4.4). Off: translations are never buffered, so a
    /// virtual ACK above an unacknowledged (not lost) packet is a duplicate ACK (ablation).
    pub suppression: bool,
    /// Also suspend an actual flow after its RTO, with a copy `cwnd = 1, pipe = 0` that grows by
    /// one per new ACK (slow start). An assumption: the thesis defines suspension for fast
    /// recovery only (Sec. 5.2) and its actual flows "do not set cwnd" on a timeout (Sec. 4.2,
    /// Fig. 12), but without it an actual flow whose RTO retransmission is lost again keeps
    /// taking virtual packets it cannot get acknowledged, holding its virtual flows in recovery
    /// (N = 10 at 1 Mbit/s: the group's F falls to 0.66, against the thesis's F ≈ 1). On by
    /// default; off is the literal reading (sensitivity variant).
    #[serde(default = "yes")]
    pub rto_suspension: bool,
}

fn yes() -> bool {
    true
}

impl Default for VpsConfig {
    fn default() -> Self {
        VpsConfig { weights: vec![1.0], max_burst: 4, suspension: true, suppression: true, rto_suspension: true }
    }
}

/// Counters of a VPS group. `#[non_exhaustive]`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct VpsStats {
    /// Actual ACKs translated.
    pub actual_acks: u64,
    /// Histogram of PSRs scanned per actual ACK (index = iterations; the last bucket holds
    /// everything at or above it) (Fig. 21).
    pub scan_hist: Vec<u64>,
    /// The same, counting the scan from the head of a PSR list that also still holds the records
    /// the actual cumulative ACK has passed but a virtual flow has not (Sec. 4.6's freeing rule).
    pub scan_head_hist: Vec<u64>,
    /// Histogram of virtual ACKs generated per actual ACK (Fig. 22).
    pub vacks_hist: Vec<u64>,
    /// Virtual new packets substituted by actual new packets (= PSRs created).
    pub virtual_new: u64,
    /// Virtual retransmissions given to an actual flow with a retransmission pending.
    pub virtual_old: u64,
    /// Virtual retransmissions no actual flow could use (none had a retransmission pending).
    pub virtual_old_dropped: u64,
    /// Virtual retransmissions of a virtual segment whose actual packet was not marked lost.
    pub virtual_rtx_not_lost: u64,
    /// Actual retransmissions sent in place of a virtual new packet (which was then reused).
    pub free_retransmits: u64,
    /// Virtual flows' fast retransmits whose hole maps to an actual packet marked lost (L)...
    pub virtual_fr_lost: u64,
    /// ...and whose hole does not (a false fast retransmit: reordering, RTT differences).
    pub virtual_fr_false: u64,
    /// Timeouts propagated to virtual flows.
    pub virtual_timeouts: u64,
    /// Actual flows entering temporary suspension (fast recovery / RTO).
    pub suspensions: u64,
    /// Times a suspended flow was left out of a distribution.
    pub suspended_skips: u64,
    /// Total time translations spent buffered (B), ns, and how many were released.
    pub buffer_delay_ns: u64,
    pub buffer_released: u64,
    /// Eq. 2 rounds completed, and rounds advanced by the P3-8 fallback.
    pub rounds: u64,
    pub round_fallbacks: u64,
    /// PSR translation counters.
    pub translator: TranslatorStats,
    /// Size of one PSR in bytes.
    pub psr_bytes: u64,
}

const SCAN_BUCKETS: usize = 256;
const VACK_BUCKETS: usize = 17;

/// Local copies of the virtual flow's cwnd and pipe while an actual flow recovers (segments).
#[derive(Clone, Copy, Debug)]
struct Susp {
    cwnd: f64,
    pipe: f64,
    /// Entered on an RTO (the copy grows by one per new ACK, like slow start).
    rto: bool,
}

#[derive(Clone, Debug)]
struct Actual {
    conn: Option<Connection>,
    susp: Option<Susp>,
    established: bool,
    /// Data written before `connect`.
    pre_written: u64,
}

#[derive(Clone, Debug)]
struct Virt {
    conn: Connection,
    active: bool,
}

#[derive(Clone, Copy, Debug)]
struct VPkt {
    v: usize,
    vseq: u64,
    old: bool,
}

/// Errors of [`VpsGroup`] operations.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VpsError {
    #[error("VPS weights: {0}")]
    Weights(String),
}

/// A VPS sender group: `n` actual flows, `n` virtual flows and the controller (module docs).
#[derive(Debug)]
pub struct VpsGroup {
    cfg: VpsConfig,
    tcp: TcpConfig,
    vmss: u64,
    flows: Vec<Actual>,
    virt: Vec<Virt>,
    tr: Translator,
    dist: Distributor,
    rng: Rng,
    pool: VecDeque<VPkt>,
    rr: usize,
    out: VecDeque<(usize, Packet)>,
    events: VecDeque<(usize, TcpEvent)>,
    stats: VpsStats,
    vacks: Vec<VirtualAck>,
    scratch: Vec<usize>,
    skip: Vec<bool>,
    b_since: HashMap<u32, Time>,
    trace: Option<Vec<VirtualAck>>,
}

impl VpsGroup {
    /// A group of `cfg.weights.len()` flows. `tcp` configures the actual flows (and, with
    /// `max_burst` from `cfg`, the virtual flows); `rng` drives Eq. 2.
    pub fn new(cfg: VpsConfig, tcp: TcpConfig, rng: Rng) -> Result<VpsGroup, VpsError> {
        let dist = Distributor::new(&cfg.weights).map_err(VpsError::Weights)?;
        let n = cfg.weights.len();
        let vmss = tcp.mss.max(1) as u64;
        let mut vcfg = tcp.clone();
        vcfg.max_burst = cfg.max_burst;
        vcfg.timestamps = false;
        vcfg.sack = true;
        vcfg.carry_payload = false;
        let virt = (0..n).map(|_| Virt { conn: Connection::virtual_sender(vcfg.clone()), active: false }).collect();
        let flows = (0..n).map(|_| Actual { conn: None, susp: None, established: false, pre_written: 0 }).collect();
        let stats = VpsStats {
            scan_hist: vec![0; SCAN_BUCKETS],
            scan_head_hist: vec![0; SCAN_BUCKETS],
            vacks_hist: vec![0; VACK_BUCKETS],
            psr_bytes: PSR_BYTES as u64,
            ..Default::default()
        };
        Ok(VpsGroup {
            tr: Translator::new(n, n, cfg.suppression),
            cfg,
            tcp,
            vmss,
            flows,
            virt,
            dist,
            rng,
            pool: VecDeque::new(),
            rr: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            stats,
            vacks: Vec::new(),
            scratch: Vec::new(),
            skip: vec![false; n],
            b_since: HashMap::new(),
            trace: None,
        })
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Record every virtual ACK delivered (tests).
    pub fn record_virtual_acks(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// The virtual ACKs delivered since the last call (when recording).
    pub fn take_virtual_acks(&mut self) -> Vec<VirtualAck> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Open actual flow `i` (active open; the first `poll_transmit` for it is the SYN).
    pub fn connect(&mut self, i: usize, local: SocketAddr, remote: SocketAddr, iss: u32, now: Time) {
        let mut c = Connection::connect(self.tcp.clone(), local, remote, iss, now);
        c.set_external();
        let pre = std::mem::take(&mut self.flows[i].pre_written);
        if pre > 0 {
            c.write(pre);
        }
        self.flows[i].conn = Some(c);
        self.flush(i, now);
    }

    /// The application writes `n` bytes to flow `i`.
    pub fn write(&mut self, i: usize, n: u64, now: Time) {
        match self.flows[i].conn.as_mut() {
            Some(c) => c.write(n),
            None => self.flows[i].pre_written += n,
        }
        self.distribute(now, self.cfg.max_burst);
    }

    /// Close flow `i` once its data is sent.
    pub fn close(&mut self, i: usize, now: Time) {
        if let Some(c) = self.flows[i].conn.as_mut() {
            c.close();
        }
        self.flush(i, now);
    }

    /// New weights, effective at once (the distribution rounds restart).
    pub fn set_weights(&mut self, w: &[f64]) -> Result<(), VpsError> {
        self.dist.set_weights(w).map_err(VpsError::Weights)?;
        self.cfg.weights = w.to_vec();
        Ok(())
    }

    pub fn weights(&self) -> &[f64] {
        &self.cfg.weights
    }

    pub fn config(&self) -> &VpsConfig {
        &self.cfg
    }

    /// A segment for actual flow `i` arrived.
    pub fn handle_packet(&mut self, now: Time, i: usize, pkt: &Packet) {
        let was_est = self.flows[i].established;
        let Some(conn) = self.flows[i].conn.as_mut() else { return };
        let Some(t) = pkt.tcp() else { return };
        let fr0 = conn.stats().fast_retransmits;
        let una0 = conn.una_off();
        let nxt0 = conn.nxt_off();
        let ack_off = conn.send_offset(t.ack);
        conn.handle_packet(now, pkt);
        self.drain_events(i);
        let is_ack = t.flags.contains(TcpFlags::ACK) && !t.flags.contains(TcpFlags::SYN) && was_est;
        if is_ack {
            self.translate(now, i, t);
            let conn = self.flows[i].conn.as_ref().unwrap();
            let valid = ack_off >= una0 as i64 && ack_off <= nxt0 as i64;
            let entered = conn.stats().fast_retransmits > fr0;
            let cum = conn.una_off();
            let recovering = conn.in_loss_recovery();
            if entered {
                self.enter_suspension(i, false);
            } else if let Some(s) = self.flows[i].susp.as_mut() {
                if valid && !s.rto {
                    // Sec. 5.2: the copy of pipe falls by one per valid ACK.
                    s.pipe = (s.pipe - 1.0).max(0.0);
                } else if valid && cum > una0 {
                    // After an RTO the copy acts as a TCP restarting from cwnd = 1 (RFC 5681
                    // slow start, ACK counting): its pipe counts what was sent since the RTO and
                    // only an ACK of new data frees some of it and grows cwnd by one. Duplicate
                    // ACKs for segments sent before the RTO open nothing, as in TCP.
                    let acked = ((cum - una0) as f64 / self.vmss as f64).ceil();
                    s.pipe = (s.pipe - acked).max(0.0);
                    s.cwnd += 1.0;
                }
            }
            if !recovering {
                self.flows[i].susp = None;
            }
        }
        self.flush(i, now);
        self.distribute(now, self.cfg.max_burst);
    }

    /// Earliest timer of any actual flow.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.flows.iter().filter_map(|a| a.conn.as_ref()?.poll_timeout()).min()
    }

    /// Process timers due at or before `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        for i in 0..self.flows.len() {
            let est = self.flows[i].established;
            let Some(conn) = self.flows[i].conn.as_mut() else { continue };
            if conn.poll_timeout().is_none_or(|t| t > now) {
                continue;
            }
            let to0 = conn.stats().timeouts;
            conn.handle_timeout(now);
            let timed_out = conn.stats().timeouts > to0 && est;
            let una = conn.una_off();
            self.drain_events(i);
            if timed_out && una < self.flows[i].conn.as_ref().unwrap().nxt_off() {
                if let Some(v) = self.tr.on_actual_timeout(i, una) {
                    self.virt[v].conn.virtual_timeout(now);
                    self.stats.virtual_timeouts += 1;
                }
                for idx in std::mem::take(&mut self.tr.reset_buffered) {
                    self.b_since.remove(&idx);
                }
                // The thesis's actual flow does not set cwnd on a timeout (Sec. 4.2, Fig. 12) and is
                // suspended only in fast recovery (Sec. 5.2): it stays eligible for virtual packets.
                self.flows[i].susp = None;
                if self.cfg.suspension && self.cfg.rto_suspension {
                    self.flows[i].susp = Some(Susp { cwnd: 1.0, pipe: 0.0, rto: true });
                    self.stats.suspensions += 1;
                }
            }
            self.flush(i, now);
        }
        self.distribute(now, self.cfg.max_burst);
    }

    /// Next packet to send, with the index of the actual flow it belongs to.
    pub fn poll_transmit(&mut self) -> Option<(usize, Packet)> {
        self.out.pop_front()
    }

    /// Next event of an actual flow.
    pub fn poll_event(&mut self) -> Option<(usize, TcpEvent)> {
        self.events.pop_front()
    }

    pub fn stats(&self) -> VpsStats {
        let mut s = self.stats.clone();
        s.translator = self.tr.stats().clone();
        s.rounds = self.dist.rounds;
        s.round_fallbacks = self.dist.fallbacks;
        s
    }

    /// Actual flow `i` (None before `connect`).
    pub fn actual(&self, i: usize) -> Option<&Connection> {
        self.flows[i].conn.as_ref()
    }

    /// Counters of actual flow `i`.
    pub fn flow_stats(&self, i: usize) -> Option<&TcpStats> {
        self.flows[i].conn.as_ref().map(|c| c.stats())
    }

    /// Virtual flow `v`.
    pub fn virtual_flow(&self, v: usize) -> &Connection {
        &self.virt[v].conn
    }

    /// Sum of the virtual flows' congestion windows, in segments.
    pub fn aggregate_cwnd(&self) -> f64 {
        self.virt.iter().map(|v| v.conn.cwnd_bytes() as f64 / self.vmss as f64).sum()
    }

    pub fn translator(&self) -> &Translator {
        &self.tr
    }

    pub fn distributor(&self) -> &Distributor {
        &self.dist
    }

    /// Whether actual flow `i` is suspended now.
    pub fn suspended(&self, i: usize) -> bool {
        let a = &self.flows[i];
        self.cfg.suspension
            && a.susp.is_some_and(|s| s.pipe >= s.cwnd)
            // Liveness guard (ours): only while an ACK can still come to bring the copy of pipe
            // down, i.e. the actual flow has segments in flight (RFC 6675 pipe > 0). As written,
            // P3-A9 leaves a flow whose copy of pipe exceeds its own flight suspended until an RTO.
            && a.conn.as_ref().is_some_and(|c| c.pipe_bytes() > 0)
    }

    // ------------------------------------------------------------------ internals

    fn drain_events(&mut self, i: usize) {
        while let Some(ev) = self.flows[i].conn.as_mut().and_then(|c| c.poll_event()) {
            if ev == TcpEvent::Established {
                self.flows[i].established = true;
                self.virt[i].active = true;
            }
            self.events.push_back((i, ev));
        }
    }

    /// Translate the ACK `t` that actual flow `i` just processed and deliver the virtual ACKs.
    fn translate(&mut self, now: Time, i: usize, t: &ackshape_wire::TcpHdr) {
        let conn = self.flows[i].conn.as_ref().unwrap();
        let cum = conn.una_off();
        let nxt = conn.nxt_off();
        let mut sacks = [(0u64, 0u64); 4];
        let mut ns = 0;
        for b in t.opts.sack_blocks() {
            let l = conn.send_offset(b.left).max(cum as i64);
            let r = conn.send_offset(b.right).min(nxt as i64);
            if l < r && ns < sacks.len() {
                sacks[ns] = (l as u64, r as u64);
                ns += 1;
            }
        }
        let sack_hi = conn.sack_highest();
        let mut vacks = std::mem::take(&mut self.vacks);
        vacks.clear();
        let held = self.tr.retained(i);
        let iters = self.tr.on_actual_ack(i, cum, &sacks[..ns], sack_hi, &mut vacks);
        self.stats.actual_acks += 1;
        self.stats.scan_hist[(iters as usize).min(SCAN_BUCKETS - 1)] += 1;
        self.stats.scan_head_hist[((held + iters) as usize).min(SCAN_BUCKETS - 1)] += 1;
        self.stats.vacks_hist[vacks.len().min(VACK_BUCKETS - 1)] += 1;
        for &idx in &self.tr.newly_buffered {
            self.b_since.insert(idx, now);
        }
        for &idx in &self.tr.released {
            if let Some(t0) = self.b_since.remove(&idx) {
                self.stats.buffer_delay_ns += now.since(t0).0;
                self.stats.buffer_released += 1;
            }
        }
        let m = self.vmss;
        let mut sk: Vec<(u64, u64)> = Vec::new();
        for va in &vacks {
            let vc = &mut self.virt[va.v].conn;
            let fr0 = vc.stats().fast_retransmits;
            sk.clear();
            sk.extend(va.sacks.iter().map(|&(l, r)| (l * m, r * m)));
            vc.virtual_ack(now, va.cum * m, &sk);
            if vc.stats().fast_retransmits > fr0 {
                let hole = self.tr.find_virtual(va.v, vc.una_off() / m);
                if hole.is_some_and(|p| p.state == PsrState::L) {
                    self.stats.virtual_fr_lost += 1;
                } else {
                    self.stats.virtual_fr_false += 1;
                }
            }
        }
        if let Some(tr) = self.trace.as_mut() {
            tr.extend(vacks.iter().cloned());
        }
        self.vacks = vacks;
    }

    /// Actual flow `i` entered loss recovery: copy (or estimate) the virtual flow's cwnd and
    /// pipe from the PSR of the retransmitted segment (Sec. 5.2).
    fn enter_suspension(&mut self, i: usize, _rto: bool) {
        if !self.cfg.suspension {
            return;
        }
        let conn = self.flows[i].conn.as_ref().unwrap();
        let una = conn.una_off();
        let Some(p) = self.tr.find_actual(i, una) else { return };
        let vc = &self.virt[p.v_id].conn;
        let m = self.vmss as f64;
        let (cwnd, pipe) = if vc.in_fast_recovery() {
            (vc.cwnd_bytes() as f64 / m, vc.pipe_bytes() as f64 / m)
        } else {
            let outstanding = vc.nxt_off() - vc.una_off() - vc.sacked_bytes();
            (vc.cwnd_bytes() as f64 / m / 2.0, outstanding as f64 / m)
        };
        self.flows[i].susp = Some(Susp { cwnd: cwnd.max(1.0), pipe, rto: false });
        self.stats.suspensions += 1;
    }

    /// Send what actual flow `i` may send without a permit (SYN, ACKs, fast retransmit, the
    /// retransmission after an RTO).
    fn flush(&mut self, i: usize, now: Time) {
        self.send(i, 0, now);
    }

    /// Poll actual flow `i` with `permit`; returns the new segment sent, if any.
    fn send(&mut self, i: usize, permit: u8, now: Time) -> Option<(u64, u64)> {
        let a = &mut self.flows[i];
        let conn = a.conn.as_mut()?;
        let nxt0 = conn.nxt_off();
        conn.ext_permit(permit);
        let mut new_seg = None;
        while let Some(p) = conn.poll_transmit(now) {
            let t = p.tcp().expect("a TCP connection sends TCP");
            let fin = t.flags.contains(TcpFlags::FIN);
            if p.payload_len > 0 || fin {
                let s = conn.send_offset(t.seq);
                if s >= nxt0 as i64 && new_seg.is_none() && p.payload_len > 0 {
                    new_seg = Some((s as u64, p.payload_len as u64));
                }
                if let Some(sp) = a.susp.as_mut() {
                    sp.pipe += 1.0;
                }
            }
            self.out.push_back((i, p));
        }
        conn.ext_permit(0);
        new_seg
    }

    fn eligible_new(&self, i: usize) -> bool {
        let a = &self.flows[i];
        a.established && !self.skip[i] && a.conn.as_ref().is_some_and(|c| c.can_send_new()) && !self.suspended(i)
    }

    fn eligible_old(&self, i: usize) -> bool {
        let a = &self.flows[i];
        a.established && !self.skip[i] && a.conn.as_ref().is_some_and(|c| c.rtx_pending()) && !self.suspended(i)
    }

    fn any_taker(&self) -> bool {
        (0..self.flows.len()).any(|i| self.eligible_new(i) || self.eligible_old(i))
    }

    /// The next virtual packet of an active virtual flow, round robin.
    fn poll_virtual(&mut self, now: Time) -> Option<VPkt> {
        let n = self.virt.len();
        for k in 0..n {
            let v = (self.rr + k) % n;
            if !self.virt[v].active {
                continue;
            }
            if let Some((s, _e, old)) = self.virt[v].conn.poll_segment(now) {
                self.rr = (v + 1) % n;
                let vseq = s / self.vmss;
                if old && self.tr.find_virtual(v, vseq).is_some_and(|p| p.state != PsrState::L) {
                    self.stats.virtual_rtx_not_lost += 1;
                }
                return Some(VPkt { v, vseq, old });
            }
        }
        None
    }

    /// Hand pooled and newly generated virtual packets to actual flows (Sec. 5.1).
    fn distribute(&mut self, now: Time, max_burst: u32) {
        let mut budget: u64 = if max_burst == 0 { u64::MAX } else { max_burst as u64 };
        self.skip.iter_mut().for_each(|s| *s = false);
        for i in 0..self.flows.len() {
            if self.flows[i].established && self.suspended(i) {
                self.stats.suspended_skips += 1;
            }
        }
        'outer: while budget > 0 {
            let pkt = match self.pool.pop_front() {
                Some(p) => p,
                None => {
                    if !self.any_taker() {
                        break;
                    }
                    match self.poll_virtual(now) {
                        Some(p) => p,
                        None => break,
                    }
                }
            };
            if pkt.old {
                let mut k = std::mem::take(&mut self.scratch);
                k.clear();
                k.extend((0..self.flows.len()).filter(|&i| self.eligible_old(i)));
                let pick = self.dist.select(&k, &mut self.rng);
                self.scratch = k;
                match pick {
                    None => self.stats.virtual_old_dropped += 1,
                    Some(i) => {
                        self.send(i, PERMIT_RTX, now);
                        self.stats.virtual_old += 1;
                        budget -= 1;
                    }
                }
                continue;
            }
            loop {
                let mut k = std::mem::take(&mut self.scratch);
                k.clear();
                k.extend((0..self.flows.len()).filter(|&i| self.eligible_new(i)));
                let pick = self.dist.select(&k, &mut self.rng);
                self.scratch = k;
                let Some(i) = pick else {
                    self.pool.push_front(pkt);
                    break 'outer;
                };
                if self.flows[i].conn.as_ref().is_some_and(|c| c.lost_pending()) {
                    // A retransmission in place of the virtual packet, which is reused.
                    self.send(i, PERMIT_RTX, now);
                    self.stats.free_retransmits += 1;
                    budget -= 1;
                    if budget == 0 {
                        self.pool.push_front(pkt);
                        break 'outer;
                    }
                    continue;
                }
                match self.send(i, PERMIT_NEW, now) {
                    Some((s, len)) => {
                        self.tr.substitute(i, s, len, pkt.v, pkt.vseq);
                        self.dist.assign(i);
                        self.stats.virtual_new += 1;
                        budget -= 1;
                        break;
                    }
                    None => {
                        debug_assert!(false, "flow {i} was eligible but sent nothing new");
                        self.skip[i] = true;
                    }
                }
            }
        }
    }
}
