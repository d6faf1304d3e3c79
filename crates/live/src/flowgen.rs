//! Synthetic many-flow load for live benchmarks: `N` TCP flows kept alive through the box in the
//! middle of a testbed by frames injected with AF_PACKET on both sides, without `N` sockets.
//!
//! Each flow is a sender (LAN side) and a receiver (WAN side). The generator visits the flows
//! round-robin at a fixed rate of data segments. On its first visit a flow opens (SYN, then its
//! first data segment; the receiver answers SYN-ACK, then the ACK of that segment); on every
//! later visit it sends its next full segment and the receiver ACKs it. The reverse frames of
//! one batch are sent with the next batch (one batch interval later, a short "RTT"), so the box
//! sees a flow's data before the ACK of it, as with real TCP. So with `N` flows and `data_fps`
//! segments per second each flow sends one segment every `N / data_fps` seconds, and a box in
//! the middle tracks (and, with an ACK mechanism, holds and releases the ACKs of) all `N` flows.
//!
//! **What it is not.** There is no TCP behind the frames: nothing reacts to the box (a held ACK
//! does not slow the generator, a dropped segment is not retransmitted). It is load that keeps a
//! flow table full and a mechanism busy at a known frame rate; throughput and congestion
//! control are measured with real TCP (iperf3) running through the box alongside.
//!
//! Addressing: flow `k` runs from `src_net + 1 + k / PORTS_PER_ADDR` port
//! `SPORT_BASE + k % PORTS_PER_ADDR` to `dst_addr:dport`; frames go to [`crate::testing::SINK_MAC`]
//! (nobody's), so the endpoints' kernels discard them at once (PACKET_OTHERHOST) and never answer.

use crate::sys::PacketSocket;
use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, TcpOptions, L4};
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Source ports per source address (flow `k` uses port `SPORT_BASE + k % PORTS_PER_ADDR`).
pub const PORTS_PER_ADDR: usize = 50_000;
/// First source port.
pub const SPORT_BASE: u16 = 10_000;

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowGenSpec {
    /// Concurrent flows (1 ..= 1 000 000).
    pub flows: usize,
    /// Data segments per second over all flows (each answered by one ACK).
    pub data_fps: u64,
    /// Payload bytes per data segment (1448: 1514-byte frames with the timestamp option).
    pub payload: u32,
    /// Senders' network: flow `k`'s sender is `src_net + 1 + k / PORTS_PER_ADDR` (a /16 holds
    /// 3.2 M flows).
    pub src_net: Ipv4Addr,
    /// Receiver address of every flow (an address no host owns).
    pub dst_addr: Ipv4Addr,
    pub dport: u16,
    /// Data segments per send (their ACKs go with the next batch).
    pub batch: usize,
    /// Source MACs of the data frames (sender side) and of the reverse frames (receiver side).
    pub sender_mac: [u8; 6],
    pub receiver_mac: [u8; 6],
}

impl FlowGenSpec {
    pub fn new(flows: usize, data_fps: u64) -> FlowGenSpec {
        FlowGenSpec {
            flows,
            data_fps,
            payload: 1448,
            src_net: Ipv4Addr::new(10, 80, 0, 0),
            dst_addr: Ipv4Addr::new(10, 90, 0, 1),
            dport: 5001,
            batch: 32,
            sender_mac: crate::testing::SRC_MAC,
            receiver_mac: crate::testing::SRC_MAC,
        }
    }

    /// Check the bounds; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.flows == 0 || self.flows > 1_000_000 {
            return Err(format!("flowgen: flows: expected 1..=1000000, got {}", self.flows));
        }
        if self.data_fps == 0 || self.data_fps > 10_000_000 {
            return Err(format!("flowgen: data_fps: expected 1..=10000000, got {}", self.data_fps));
        }
        if self.payload == 0 || self.payload > 1448 {
            return Err(format!("flowgen: payload: expected 1..=1448 bytes, got {}", self.payload));
        }
        if self.batch == 0 || self.batch > 1024 {
            return Err(format!("flowgen: batch: expected 1..=1024, got {}", self.batch));
        }
        Ok(())
    }

    /// Seconds between two segments of one flow.
    pub fn flow_period_s(&self) -> f64 {
        self.flows as f64 / self.data_fps as f64
    }

    /// Bytes of a data frame (Ethernet header included).
    pub fn data_frame_bytes(&self) -> usize {
        14 + 20 + 32 + self.payload as usize
    }

    /// Offered load of the data frames, bit/s of Ethernet frames.
    pub fn data_bps(&self) -> f64 {
        self.data_fps as f64 * self.data_frame_bytes() as f64 * 8.0
    }

    /// Flow `k`'s (sender address, sender port, receiver address, receiver port).
    pub fn flow(&self, k: usize) -> (Ipv4Addr, u16, Ipv4Addr, u16) {
        let a = u32::from(self.src_net).wrapping_add(1 + (k / PORTS_PER_ADDR) as u32);
        (Ipv4Addr::from(a), SPORT_BASE + (k % PORTS_PER_ADDR) as u16, self.dst_addr, self.dport)
    }
}

/// Frames of one batch, back to back in one buffer.
#[derive(Default, Debug)]
pub struct Frames {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Frames {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
    pub fn slices(&self) -> Vec<&[u8]> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }
    fn push(&mut self, p: &Packet, src_mac: [u8; 6]) {
        p.write_frame(src_mac, crate::testing::SINK_MAC, &mut self.bytes);
        self.ends.push(self.bytes.len());
    }
}

/// The frame builder: which flow comes next, and its segment numbers.
#[derive(Debug)]
pub struct FlowGen {
    spec: FlowGenSpec,
    cursor: usize,
    cycle: u32,
    ip_id: u16,
}

impl FlowGen {
    pub fn new(spec: FlowGenSpec) -> Result<FlowGen, String> {
        spec.validate()?;
        Ok(FlowGen { spec, cursor: 0, cycle: 0, ip_id: 0 })
    }

    pub fn spec(&self) -> &FlowGenSpec {
        &self.spec
    }

    /// Completed rounds over all flows.
    pub fn cycles(&self) -> u32 {
        self.cycle
    }

    fn isn(k: usize) -> u32 {
        (k as u32).wrapping_mul(2_654_435_761).wrapping_add(1)
    }
    fn irs(k: usize) -> u32 {
        Self::isn(k) ^ 0x5a5a_5a5a
    }

    fn packet(&mut self, src: Ipv4Addr, dst: Ipv4Addr, tcp: TcpHdr, payload_len: u32) -> Packet {
        self.ip_id = self.ip_id.wrapping_add(1);
        Packet {
            ip: IpHdr {
                src: IpAddr::V4(src),
                dst: IpAddr::V4(dst),
                ttl: 64,
                dscp: 0,
                ecn: Ecn::NotEct,
                id: self.ip_id,
            },
            l4: L4::Tcp(tcp),
            payload_len,
            payload: None,
        }
    }

    /// Append the next batch: the data-direction frames of the next `batch` flows to `fwd`
    /// (SYN and data on a flow's first visit, data after) and the receiver's answers to them to
    /// `rev` (SYN-ACK and ACK, then ACK). Returns how many flows were visited.
    pub fn next_batch(&mut self, fwd: &mut Frames, rev: &mut Frames) -> usize {
        let n = self.spec.batch.min(self.spec.flows);
        let p = self.spec.payload;
        let (smac, rmac) = (self.spec.sender_mac, self.spec.receiver_mac);
        // Timestamps: TSval in ms of the generator's own round count (only needs to be present).
        let ts = self.cycle;
        for _ in 0..n {
            let k = self.cursor;
            let (sa, sp, da, dp) = self.spec.flow(k);
            let (isn, irs) = (Self::isn(k), Self::irs(k));
            let c = self.cycle;
            let ts_opts = TcpOptions { timestamps: Some((ts, ts)), ..Default::default() };
            let hdr = |seq: u32, ack: u32, flags: TcpFlags, opts: TcpOptions, fwd_dir: bool| TcpHdr {
                sport: if fwd_dir { sp } else { dp },
                dport: if fwd_dir { dp } else { sp },
                seq: SeqNum(seq),
                ack: SeqNum(ack),
                flags,
                window: 65_535,
                urgent: 0,
                opts,
            };
            let data_seq = isn.wrapping_add(1).wrapping_add(c.wrapping_mul(p));
            if c == 0 {
                let syn_opts = TcpOptions {
                    mss: Some(1460),
                    wscale: Some(7),
                    sack_permitted: true,
                    timestamps: Some((ts, 0)),
                    ..Default::default()
                };
                let syn = self.packet(sa, da, hdr(isn, 0, TcpFlags::SYN, syn_opts.clone(), true), 0);
                fwd.push(&syn, smac);
                let synack = self.packet(
                    da,
                    sa,
                    hdr(irs, isn.wrapping_add(1), TcpFlags::SYN | TcpFlags::ACK, syn_opts, false),
                    0,
                );
                rev.push(&synack, rmac);
            }
            let data = self.packet(
                sa,
                da,
                hdr(data_seq, irs.wrapping_add(1), TcpFlags::ACK | TcpFlags::PSH, ts_opts.clone(), true),
                p,
            );
            fwd.push(&data, smac);
            let ack = self.packet(
                da,
                sa,
                hdr(irs.wrapping_add(1), data_seq.wrapping_add(p), TcpFlags::ACK, ts_opts, false),
                0,
            );
            rev.push(&ack, rmac);
            self.cursor += 1;
            if self.cursor == self.spec.flows {
                self.cursor = 0;
                self.cycle = self.cycle.wrapping_add(1);
            }
        }
        n
    }
}

/// What a generator run did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FlowGenReport {
    pub flows: usize,
    /// Frames sent on the sender side (SYNs and data) and on the receiver side (SYN-ACKs, ACKs).
    pub fwd_frames: u64,
    pub rev_frames: u64,
    /// Data segments sent (one per flow visit).
    pub data_segments: u64,
    /// Frames the kernel would not take (socket buffer full for ~5 ms).
    pub send_failures: u64,
    /// Rounds over all flows completed.
    pub cycles: u32,
    pub elapsed_s: f64,
    /// Data segments per second achieved (the target is `FlowGenSpec::data_fps`).
    pub data_fps: f64,
    /// When the first round (every flow opened) completed, s after the start.
    pub first_cycle_s: Option<f64>,
}

/// Send every frame, retrying briefly while the socket buffer is full; returns the failures.
fn send_all(sock: &PacketSocket, frames: &Frames) -> u64 {
    let slices = frames.slices();
    let mut off = 0;
    let mut tries = 0;
    while off < slices.len() {
        match sock.send_batch(&slices[off..]) {
            Ok(k) if k > 0 => {
                off += k;
                tries = 0;
            }
            Ok(_) => tries += 1,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) => tries += 1,
            Err(_) => return (slices.len() - off) as u64,
        }
        if tries > 100 {
            return (slices.len() - off) as u64;
        }
        if tries > 0 {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    0
}

/// Run the generator until `stop`: data frames out of `fwd` (a send-only socket on the sender's
/// interface), reverse frames out of `rev` (on the receiver's). `warm` is set once every flow
/// has been opened (the first round is complete).
pub fn run(
    spec: FlowGenSpec,
    fwd: &PacketSocket,
    rev: &PacketSocket,
    stop: &AtomicBool,
    warm: &AtomicBool,
) -> Result<FlowGenReport, String> {
    let mut g = FlowGen::new(spec)?;
    let period = Duration::from_secs_f64(g.spec.batch as f64 / g.spec.data_fps as f64);
    let (mut f, mut r, mut r_prev) = (Frames::default(), Frames::default(), Frames::default());
    let mut rep = FlowGenReport { flows: g.spec.flows, ..Default::default() };
    let t0 = Instant::now();
    let mut due = t0;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < due {
            std::thread::sleep(due - now);
        } else if now - due > Duration::from_millis(100) {
            // Far behind (the machine is busy): do not burst to catch up; the report's rate tells.
            due = now;
        }
        due += period;
        f.clear();
        r.clear();
        rep.data_segments += g.next_batch(&mut f, &mut r) as u64;
        rep.send_failures += send_all(fwd, &f);
        rep.fwd_frames += f.len() as u64;
        // The answers to the previous batch: one batch interval after their data.
        rep.send_failures += send_all(rev, &r_prev);
        rep.rev_frames += r_prev.len() as u64;
        std::mem::swap(&mut r, &mut r_prev);
        if g.cycles() >= 1 && rep.first_cycle_s.is_none() {
            rep.first_cycle_s = Some(t0.elapsed().as_secs_f64());
            warm.store(true, Ordering::SeqCst);
        }
    }
    rep.cycles = g.cycles();
    rep.elapsed_s = t0.elapsed().as_secs_f64();
    rep.data_fps = rep.data_segments as f64 / rep.elapsed_s.max(1e-9);
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn spec_bounds_name_the_field() {
        assert!(FlowGen::new(FlowGenSpec::new(0, 10)).unwrap_err().contains("flows"));
        assert!(FlowGen::new(FlowGenSpec::new(10, 0)).unwrap_err().contains("data_fps"));
        let mut s = FlowGenSpec::new(10, 10);
        s.payload = 2000;
        assert!(FlowGen::new(s).unwrap_err().contains("payload"));
        assert_eq!(FlowGenSpec::new(10, 10).data_frame_bytes(), 1514);
    }

    #[test]
    fn flows_are_distinct_up_to_the_limit() {
        let s = FlowGenSpec::new(200_000, 1);
        let keys: HashSet<_> = (0..s.flows).map(|k| s.flow(k)).collect();
        assert_eq!(keys.len(), s.flows);
        // All senders inside src_net/16.
        assert!((0..s.flows).step_by(9973).all(|k| s.flow(k).0.octets()[..2] == [10, 80]));
    }

    /// Every frame is valid TCP with correct checksums; a flow opens once (SYN, SYN-ACK) and then
    /// sends consecutive full segments, each ACKed exactly by its reverse frame.
    #[test]
    fn frames_open_each_flow_once_then_carry_consecutive_segments() {
        let mut spec = FlowGenSpec::new(5, 100);
        spec.batch = 3;
        let mut g = FlowGen::new(spec.clone()).unwrap();
        let (mut f, mut r) = (Frames::default(), Frames::default());
        let mut next_seq: std::collections::HashMap<(u16, u16), u32> = Default::default();
        let (mut syns, mut synacks, mut data, mut acks) = (0, 0, 0, 0);
        for _ in 0..10 {
            f.clear();
            r.clear();
            assert_eq!(g.next_batch(&mut f, &mut r), 3);
            let mut last_data: Vec<(u16, u32)> = Vec::new();
            for i in 0..f.len() {
                ackshape_wire::verify_checksums(f.get(i)).unwrap();
                let p = Packet::parse_frame(f.get(i)).unwrap().packet;
                let t = p.tcp().unwrap();
                if t.flags.contains(TcpFlags::SYN) {
                    syns += 1;
                    assert!(next_seq.insert((t.sport, t.dport), t.seq.0.wrapping_add(1)).is_none(), "one SYN per flow");
                    continue;
                }
                assert_eq!(p.payload_len, 1448);
                assert_eq!(f.get(i).len(), 1514);
                let want = next_seq.get_mut(&(t.sport, t.dport)).expect("data after the flow's SYN");
                assert_eq!(t.seq.0, *want, "consecutive segments");
                *want = want.wrapping_add(1448);
                last_data.push((t.sport, t.seq.0.wrapping_add(1448)));
                data += 1;
            }
            let mut acked = Vec::new();
            for i in 0..r.len() {
                ackshape_wire::verify_checksums(r.get(i)).unwrap();
                let p = Packet::parse_frame(r.get(i)).unwrap().packet;
                let t = p.tcp().unwrap();
                if t.flags.contains(TcpFlags::SYN) {
                    synacks += 1;
                    continue;
                }
                assert!(p.is_pure_ack());
                acked.push((t.dport, t.ack.0));
                acks += 1;
            }
            assert_eq!(acked, last_data, "each data segment of the batch is ACKed, in order");
        }
        assert_eq!((syns, synacks), (5, 5));
        assert_eq!((data, acks), (30, 30));
        assert_eq!(g.cycles(), 6);
    }
}
