//! Structure-aware input decoding shared by the ackshape fuzz targets (see README.md).
//!
//! A fuzz input is read as a sequence of [`Event`]s over a small world: 4 LAN/WAN host pairs
//! (IPv4 or IPv6, and a "salt" that shifts the LAN port to make many more flows), each with its
//! own TCP sequence state per side so that most segments are in order, retransmitted, ahead or
//! acknowledging what the other side sent — odd-but-valid TCP that the stateful mechanisms act on
//! — with fuzzed flags (any combination), sequence/ACK numbers (near-wrap, backwards), windows,
//! payload lengths, TCP options (MSS, window scale up to 255, SACK-permitted, 0–4 SACK blocks with
//! arbitrary edges, timestamps, unknown and garbage options), IPv4 options, IPv6 extension headers,
//! VLAN tags, ECN codepoints, ECE/CWR, UDP and ICMP; now and then a raw byte blob or a built frame
//! with bytes overwritten. Frames are built with valid checksums (raw blobs get theirs fixed when
//! they parse), so every frame a box emits must have valid checksums too: [`OutputCheck`].

use ackshape_core::time::{Dur, Time};
use ackshape_wire::checksum::{finish, pseudo_header_sum, sum_bytes};
use ackshape_wire::{Packet, ParsedFrame, L4};
use libfuzzer_sys::arbitrary::{Result as AResult, Unstructured};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The LAN side's host addresses (pair i uses index i): two in 10.1.0.0/30 (per-host classes),
/// one in 192.168.10.0/24 (subnet rules), one elsewhere.
pub const LAN_V4: [[u8; 4]; 4] = [[10, 1, 0, 1], [10, 1, 0, 2], [192, 168, 10, 5], [172, 16, 0, 9]];
/// The WAN side's hosts.
pub const WAN_V4: [[u8; 4]; 4] = [[198, 51, 100, 1], [198, 51, 100, 2], [203, 0, 113, 7], [198, 51, 100, 1]];
/// The WAN ports of the pairs: web, TLS, a SIP port (UDP rules), a P2P port (tap rules).
pub const WAN_PORT: [u16; 4] = [80, 443, 5060, 6881];
pub const LAN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
pub const WAN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

fn lan_addr(pair: usize, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, pair as u16 + 1))
    } else {
        IpAddr::V4(Ipv4Addr::from(LAN_V4[pair]))
    }
}
fn wan_addr(pair: usize, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0, pair as u16 + 1))
    } else {
        IpAddr::V4(Ipv4Addr::from(WAN_V4[pair]))
    }
}

/// Which transport a built frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp,
    Udp,
    Icmp,
}

/// Every header field of a frame to build.
#[derive(Clone, Debug)]
pub struct FrameSpec {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub vlan: Option<u16>,
    pub proto: Proto,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub urgent: u16,
    /// TCP option bytes (padded with EOL to a multiple of 4; at most 40 kept).
    pub opts: Vec<u8>,
    pub payload_len: usize,
    pub payload_byte: u8,
    /// The IP TOS / traffic class byte (DSCP and ECN).
    pub tos: u8,
    pub ttl: u8,
    pub ip_id: u16,
    pub df: bool,
    /// IPv4 options (padded to a multiple of 4, at most 40).
    pub ip_opts: Vec<u8>,
    /// IPv6: a hop-by-hop options header of this many 8-byte units (PadN inside).
    pub v6_hbh: Option<u8>,
    /// Ethernet padding after the IP packet.
    pub pad: usize,
}

fn be16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_be_bytes());
}

impl FrameSpec {
    /// The Ethernet frame, with valid IPv4 header and TCP/UDP/ICMP checksums.
    pub fn build(&self) -> Vec<u8> {
        let mut opts = self.opts.clone();
        opts.truncate(40);
        while opts.len() % 4 != 0 {
            opts.push(0);
        }
        let payload = vec![self.payload_byte; self.payload_len];
        let mut l4 = Vec::with_capacity(60 + payload.len());
        let proto_num = match self.proto {
            Proto::Tcp => {
                be16(&mut l4, self.sport);
                be16(&mut l4, self.dport);
                l4.extend_from_slice(&self.seq.to_be_bytes());
                l4.extend_from_slice(&self.ack.to_be_bytes());
                l4.push((((20 + opts.len()) / 4) as u8) << 4);
                l4.push(self.flags);
                be16(&mut l4, self.window);
                be16(&mut l4, 0);
                be16(&mut l4, self.urgent);
                l4.extend_from_slice(&opts);
                l4.extend_from_slice(&payload);
                6
            }
            Proto::Udp => {
                be16(&mut l4, self.sport);
                be16(&mut l4, self.dport);
                be16(&mut l4, (8 + payload.len()) as u16);
                be16(&mut l4, 0);
                l4.extend_from_slice(&payload);
                17
            }
            Proto::Icmp => {
                // Echo request (ICMPv6: 128).
                l4.push(if self.src.is_ipv6() { 128 } else { 8 });
                l4.push(0);
                be16(&mut l4, 0);
                be16(&mut l4, self.sport);
                be16(&mut l4, self.seq as u16);
                l4.extend_from_slice(&payload);
                if self.src.is_ipv6() {
                    58
                } else {
                    1
                }
            }
        };
        let (csum_at, with_pseudo) = match self.proto {
            Proto::Tcp => (16, true),
            Proto::Udp => (6, true),
            Proto::Icmp => (2, self.src.is_ipv6()),
        };
        let mut s = if with_pseudo { pseudo_header_sum(self.src, self.dst, proto_num, l4.len() as u32) } else { 0 };
        s = sum_bytes(s, &l4);
        let mut c = finish(s);
        if self.proto == Proto::Udp && c == 0 {
            c = 0xffff;
        }
        l4[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());

        let mut f = Vec::with_capacity(l4.len() + 80);
        f.extend_from_slice(&self.dst_mac);
        f.extend_from_slice(&self.src_mac);
        if let Some(tci) = self.vlan {
            be16(&mut f, 0x8100);
            be16(&mut f, tci);
        }
        match (self.src, self.dst) {
            (IpAddr::V4(s4), IpAddr::V4(d4)) => {
                be16(&mut f, 0x0800);
                let mut ipo = self.ip_opts.clone();
                ipo.truncate(40);
                while ipo.len() % 4 != 0 {
                    ipo.push(0);
                }
                let hl = 20 + ipo.len();
                let ip0 = f.len();
                f.push(0x40 | (hl / 4) as u8);
                f.push(self.tos);
                be16(&mut f, (hl + l4.len()).min(65535) as u16);
                be16(&mut f, self.ip_id);
                be16(&mut f, if self.df { 0x4000 } else { 0 });
                f.push(self.ttl);
                f.push(proto_num);
                be16(&mut f, 0);
                f.extend_from_slice(&s4.octets());
                f.extend_from_slice(&d4.octets());
                f.extend_from_slice(&ipo);
                let c = finish(sum_bytes(0, &f[ip0..ip0 + hl]));
                f[ip0 + 10..ip0 + 12].copy_from_slice(&c.to_be_bytes());
            }
            (s, d) => {
                let to6 = |a: IpAddr| match a {
                    IpAddr::V6(x) => x,
                    IpAddr::V4(x) => x.to_ipv6_mapped(),
                };
                be16(&mut f, 0x86dd);
                let ext_len = self.v6_hbh.map_or(0, |n| 8 * (n as usize + 1));
                f.extend_from_slice(&[0x60 | (self.tos >> 4), (self.tos & 0x0f) << 4, 0, 0]);
                be16(&mut f, (ext_len + l4.len()).min(65535) as u16);
                f.push(if self.v6_hbh.is_some() { 0 } else { proto_num });
                f.push(self.ttl);
                f.extend_from_slice(&to6(s).octets());
                f.extend_from_slice(&to6(d).octets());
                if let Some(n) = self.v6_hbh {
                    f.push(proto_num);
                    f.push(n);
                    // PadN filling the rest of the header.
                    let rest = ext_len - 2;
                    f.push(1);
                    f.push((rest - 2) as u8);
                    f.extend(std::iter::repeat_n(0u8, rest - 2));
                }
            }
        }
        f.extend_from_slice(&l4);
        f.extend(std::iter::repeat_n(0u8, self.pad));
        f
    }
}

/// Recompute the IPv4 header checksum and the TCP/UDP checksum of a frame that parses, in
/// place (for raw blobs). False when it does not parse or is a fragment.
pub fn fix_checksums(f: &mut [u8]) -> bool {
    let Ok(p) = Packet::parse_frame(f) else { return false };
    if p.packet.ip.src.is_ipv4() {
        let ip = p.ip_offset;
        let hl = (f[ip] & 0x0f) as usize * 4;
        f[ip + 10] = 0;
        f[ip + 11] = 0;
        let c = finish(sum_bytes(0, &f[ip..ip + hl]));
        f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    }
    if p.fragment {
        return false;
    }
    let l4 = p.l4_offset;
    let (proto, at, end) = match p.packet.l4 {
        L4::Tcp(_) => (6, 16, p.ip_end),
        L4::Udp(_) => (17, 6, l4 + 8 + p.packet.payload_len as usize),
        L4::Other { .. } => return true,
    };
    if end > f.len() || l4 + at + 2 > end {
        return false;
    }
    f[l4 + at] = 0;
    f[l4 + at + 1] = 0;
    let s = pseudo_header_sum(p.packet.ip.src, p.packet.ip.dst, proto, (end - l4) as u32);
    let mut c = finish(sum_bytes(s, &f[l4..end]));
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    f[l4 + at..l4 + at + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// A flow key without direction: the two (address, port) ends sorted, and the protocol.
pub type Conn = ((IpAddr, u16), (IpAddr, u16), u8);

/// The connection a parsed frame belongs to (ports 0 for other protocols).
pub fn conn_of(p: &ParsedFrame) -> Conn {
    let (sp, dp, pr) = match &p.packet.l4 {
        L4::Tcp(t) => (t.sport, t.dport, 6),
        L4::Udp(u) => (u.sport, u.dport, 17),
        L4::Other { proto } => (0, 0, *proto),
    };
    let a = (p.packet.ip.src, sp);
    let b = (p.packet.ip.dst, dp);
    if a <= b {
        (a, b, pr)
    } else {
        (b, a, pr)
    }
}

/// Checks every frame a pipeline emits: it parses, and its IP and TCP/UDP checksums are valid —
/// unless it belongs to a connection a frame with bad checksums was fed for (the box forwards such
/// frames as they came).
#[derive(Default)]
pub struct OutputCheck {
    dirty: HashSet<Conn>,
    pub frames: u64,
}

impl OutputCheck {
    /// Note a frame fed to the box: one with bad checksums makes its connection dirty.
    pub fn fed(&mut self, frame: &[u8]) {
        if let Ok(p) = Packet::parse_frame(frame) {
            if ackshape_wire::verify_checksums(frame).is_err() {
                self.dirty.insert(conn_of(&p));
            }
        }
    }
    pub fn check(&mut self, frame: &[u8], what: &str) {
        self.frames += 1;
        let p = match Packet::parse_frame(frame) {
            Ok(p) => p,
            Err(e) => panic!("{what}: an emitted frame does not parse: {e:?}\n{frame:02x?}"),
        };
        if let Err(e) = ackshape_wire::verify_checksums(frame) {
            if !self.dirty.contains(&conn_of(&p)) {
                panic!("{what}: an emitted frame has a bad checksum: {e:?}\n{frame:02x?}\n{:?}", p.packet);
            }
        }
    }
}

/// What to do next.
#[derive(Clone, Debug)]
pub enum Event {
    /// A frame arrives travelling `a_to_b` (LAN → WAN) after `dt` (csum_not_ready: the kernel's
    /// partial-checksum flag, for the tap).
    Frame { dt: Dur, a_to_b: bool, frame: Vec<u8>, csum_not_ready: bool },
    /// Time passes; timers fire at their deadlines (`late`: the engine wakes up that late).
    Advance { dt: Dur, late: Dur },
    /// The engine stalls for `dt`: the next timer call comes that late.
    Stall { dt: Dur },
    /// A policy reload (SIGHUP) to policy `k`.
    Reload { k: u8 },
}

#[derive(Clone, Copy, Default)]
struct SideSt {
    nxt: u32,
    mss: u16,
    ts: u32,
}

/// The decoder's state: per connection, each side's next sequence number.
#[derive(Default)]
pub struct World {
    flows: HashMap<(usize, bool, u8), [SideSt; 2]>,
    last: Option<(bool, Vec<u8>)>,
}

fn small_delta(u: &mut Unstructured) -> AResult<u32> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => 1,
        1 => u.int_in_range(1u32..=8)? * 1448,
        2 => u.int_in_range(1u32..=70_000)?,
        _ => u.arbitrary::<u32>()?,
    })
}

fn dur_small(u: &mut Unstructured) -> AResult<Dur> {
    let b: u8 = u.arbitrary()?;
    // 0, then up to ≈ 65 ms, squared for more short gaps than long ones.
    Ok(Dur((b as u64) * (b as u64) * 1_000))
}

impl World {
    /// Decode the next event, or None when the input is used up.
    pub fn next_event(&mut self, u: &mut Unstructured) -> AResult<Option<Event>> {
        if u.is_empty() {
            return Ok(None);
        }
        let op: u8 = u.arbitrary()?;
        Ok(Some(match op {
            0..=199 => {
                let dt = dur_small(u)?;
                let (a_to_b, frame) = self.frame(u)?;
                let csum_not_ready = u.ratio(1u8, 32)?;
                self.last = Some((a_to_b, frame.clone()));
                Event::Frame { dt, a_to_b, frame, csum_not_ready }
            }
            200..=224 => {
                let dt = match u.int_in_range(0u8..=3)? {
                    0 => Dur::from_micros(u.int_in_range(1u64..=5_000)?),
                    1 => Dur::from_millis(u.int_in_range(1u64..=1_000)?),
                    2 => Dur::from_millis(u.int_in_range(1_000u64..=20_000)?),
                    _ => Dur::from_secs(u.int_in_range(20u64..=300)?),
                };
                let late = match u.int_in_range(0u8..=3)? {
                    0 | 1 => Dur(0),
                    2 => Dur::from_micros(u.int_in_range(1u64..=500)?),
                    _ => Dur::from_millis(u.int_in_range(1u64..=50)?),
                };
                Event::Advance { dt, late }
            }
            225..=234 => Event::Stall { dt: Dur::from_millis(u.int_in_range(1u64..=400)?) },
            235..=241 => {
                let dt = dur_small(u)?;
                let a_to_b: bool = u.arbitrary()?;
                let frame = self.raw(u)?;
                Event::Frame { dt, a_to_b, frame, csum_not_ready: false }
            }
            242..=244 => Event::Reload { k: u.arbitrary()? },
            _ => {
                // The last frame again (a duplicate: dupACKs, retransmissions).
                let dt = dur_small(u)?;
                match self.last.clone() {
                    Some((a_to_b, frame)) => Event::Frame { dt, a_to_b, frame, csum_not_ready: false },
                    None => Event::Advance { dt, late: Dur(0) },
                }
            }
        }))
    }

    /// A raw blob: random bytes, or a built frame with bytes overwritten; checksums fixed when
    /// it parses (mostly).
    fn raw(&mut self, u: &mut Unstructured) -> AResult<Vec<u8>> {
        let mut f = if u.arbitrary::<bool>()? {
            let n = u.int_in_range(0usize..=200)?;
            let mut v = u.bytes(n.min(u.len()))?.to_vec();
            // Often behind an IP ethertype so it reaches the parser's deeper layers.
            if v.len() >= 15 && u.arbitrary::<bool>()? {
                let et: [u8; 2] = if v[14] >> 4 == 6 { [0x86, 0xdd] } else { [0x08, 0x00] };
                v[12..14].copy_from_slice(&et);
            }
            v
        } else {
            let (_, mut v) = self.frame(u)?;
            for _ in 0..u.int_in_range(1u8..=6)? {
                if v.is_empty() {
                    break;
                }
                let i = u.choose_index(v.len())?;
                v[i] = u.arbitrary()?;
            }
            if u.ratio(1u8, 4)? {
                let n = u.choose_index(v.len() + 1)?;
                v.truncate(n);
            }
            v
        };
        if !u.ratio(1u8, 8)? {
            fix_checksums(&mut f);
        }
        Ok(f)
    }

    fn options(&self, u: &mut Unstructured, ack: u32, other_nxt: u32, syn: bool) -> AResult<Vec<u8>> {
        let mut o = Vec::new();
        // Usual shapes first, so that most segments carry plausible options.
        match u.int_in_range(0u8..=7)? {
            0 | 1 => {}
            2 if syn => {
                o.extend_from_slice(&[2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7]);
                return Ok(o);
            }
            2 | 3 => {
                o.extend_from_slice(&[1, 1, 8, 10]);
                o.extend_from_slice(&u.arbitrary::<u32>()?.to_be_bytes());
                o.extend_from_slice(&u.arbitrary::<u32>()?.to_be_bytes());
                return Ok(o);
            }
            _ => {}
        }
        for _ in 0..u.int_in_range(0u8..=5)? {
            match u.int_in_range(0u8..=11)? {
                0 => {
                    o.extend_from_slice(&[2, 4]);
                    o.extend_from_slice(&u.arbitrary::<u16>()?.to_be_bytes());
                }
                1 => {
                    let ws = if u.arbitrary::<bool>()? { u.int_in_range(0u8..=14)? } else { u.arbitrary()? };
                    o.extend_from_slice(&[3, 3, ws]);
                }
                2 => o.extend_from_slice(&[4, 2]),
                3 | 4 => {
                    let n = u.int_in_range(0u8..=4)?;
                    o.extend_from_slice(&[5, 2 + 8 * n]);
                    for _ in 0..n {
                        let base = match u.int_in_range(0u8..=2)? {
                            0 => ack,
                            1 => other_nxt,
                            _ => u.arbitrary()?,
                        };
                        let l = if u.arbitrary()? {
                            base.wrapping_add(small_delta(u)?)
                        } else {
                            base.wrapping_sub(small_delta(u)?)
                        };
                        let r = if u.ratio(7u8, 8)? { l.wrapping_add(small_delta(u)?) } else { u.arbitrary()? };
                        o.extend_from_slice(&l.to_be_bytes());
                        o.extend_from_slice(&r.to_be_bytes());
                    }
                }
                5 | 6 => {
                    o.extend_from_slice(&[8, 10]);
                    o.extend_from_slice(&u.arbitrary::<u32>()?.to_be_bytes());
                    o.extend_from_slice(&u.arbitrary::<u32>()?.to_be_bytes());
                }
                7 => o.push(1),
                8 => o.push(0),
                9 => {
                    // An unknown option of a valid length.
                    let kind = u.int_in_range(9u8..=254)?;
                    let len = u.int_in_range(2u8..=10)?;
                    o.extend_from_slice(&[kind, len]);
                    for _ in 2..len {
                        o.push(u.arbitrary()?);
                    }
                }
                10 => {
                    // A known option with a wrong length.
                    let kind = *u.choose(&[2u8, 3, 4, 5, 8])?;
                    o.extend_from_slice(&[kind, u.arbitrary()?]);
                }
                _ => {
                    let n = u.int_in_range(1usize..=6)?;
                    o.extend_from_slice(u.bytes(n.min(u.len()))?);
                }
            }
        }
        Ok(o)
    }

    /// A frame of one of the flows, built from fuzzed fields; returns (travels LAN → WAN, bytes).
    pub fn frame(&mut self, u: &mut Unstructured) -> AResult<(bool, Vec<u8>)> {
        let sel: u8 = u.arbitrary()?;
        let pair = (sel & 3) as usize;
        let v6 = sel & 4 != 0;
        let salt = if sel & 0x18 == 0x18 { u.int_in_range(1u8..=40)? } else { 0 };
        let a_to_b = sel & 0x20 != 0;
        // Now and then a frame on the "wrong" port for its addresses (asymmetric routing).
        let wrong_side = sel & 0xc0 == 0xc0 && u.ratio(1u8, 4)?;
        let from_lan = a_to_b != wrong_side;
        let side = if from_lan { 0 } else { 1 };
        let st = match self.flows.get(&(pair, v6, salt)) {
            Some(s) => *s,
            None => {
                let mut isn = || -> AResult<u32> {
                    Ok(match u.int_in_range(0u8..=3)? {
                        0 => 1,
                        1 => u32::MAX - u.int_in_range(0u32..=20_000)?,
                        _ => u.arbitrary()?,
                    })
                };
                let s = [SideSt { nxt: isn()?, mss: 1448, ts: 1 }, SideSt { nxt: isn()?, mss: 1448, ts: 1 }];
                self.flows.insert((pair, v6, salt), s);
                s
            }
        };
        let me = st[side];
        let other = st[1 - side];
        let proto = match u.int_in_range(0u8..=31)? {
            0 => Proto::Udp,
            1 => Proto::Icmp,
            _ => Proto::Tcp,
        };
        let flags: u8 = match u.int_in_range(0u8..=15)? {
            0 => 0x02,
            1 => 0x12,
            2..=6 => 0x10,
            7..=9 => 0x18,
            10 => 0x11,
            11 => 0x04,
            12 => 0x14,
            13 => 0x01,
            14 => 0x19,
            _ => u.arbitrary()?,
        } | if u.ratio(1u8, 8)? { u.int_in_range(0u8..=3)? << 6 } else { 0 };
        let syn = flags & 0x02 != 0;
        let seq = match u.int_in_range(0u8..=9)? {
            0..=5 => me.nxt,
            6 => me.nxt.wrapping_sub(small_delta(u)?),
            7 => me.nxt.wrapping_add(small_delta(u)?),
            8 => u32::MAX - u.int_in_range(0u32..=3000)?,
            _ => u.arbitrary()?,
        };
        let ack = if flags & 0x10 == 0 && u.arbitrary::<bool>()? {
            0
        } else {
            match u.int_in_range(0u8..=9)? {
                0..=5 => other.nxt,
                6 => other.nxt.wrapping_sub(small_delta(u)?),
                7 => other.nxt.wrapping_add(small_delta(u)?),
                8 => other.nxt.wrapping_sub(u.int_in_range(1u32..=3)?),
                _ => u.arbitrary()?,
            }
        };
        let window = match u.int_in_range(0u8..=7)? {
            0..=3 => 65535,
            4 => 0,
            5 => u.int_in_range(1u16..=3000)?,
            _ => u.arbitrary()?,
        };
        let payload_len = if syn && u.ratio(7u8, 8)? {
            0
        } else {
            match u.int_in_range(0u8..=9)? {
                0..=3 => 0,
                4..=6 => me.mss as usize,
                7 => u.int_in_range(1usize..=1460)?,
                8 => u.int_in_range(1usize..=64)?,
                _ => u.int_in_range(0usize..=9000)?,
            }
        };
        let opts = if proto == Proto::Tcp { self.options(u, ack, other.nxt, syn)? } else { Vec::new() };
        let tos = if u.ratio(1u8, 4)? { u.arbitrary()? } else { u.int_in_range(0u8..=3)? };
        let ip_opts = if !v6 && u.ratio(1u8, 16)? {
            let n = u.int_in_range(1usize..=12)?;
            let mut v = vec![1u8; n];
            if u.arbitrary()? {
                v[0] = 0x94; // router alert, length 4
                if n >= 2 {
                    v[1] = 4;
                }
            }
            v
        } else {
            Vec::new()
        };
        let v6_hbh = if v6 && u.ratio(1u8, 16)? { Some(u.int_in_range(0u8..=2)?) } else { None };
        let (src, dst) =
            if from_lan { (lan_addr(pair, v6), wan_addr(pair, v6)) } else { (wan_addr(pair, v6), lan_addr(pair, v6)) };
        let lan_port = 40_000 + pair as u16 * 100 + salt as u16;
        let (sport, dport) = if from_lan { (lan_port, WAN_PORT[pair]) } else { (WAN_PORT[pair], lan_port) };
        let spec = FrameSpec {
            src,
            dst,
            src_mac: if from_lan { LAN_MAC } else { WAN_MAC },
            dst_mac: if u.ratio(1u8, 32)? {
                [0xff; 6]
            } else if from_lan {
                WAN_MAC
            } else {
                LAN_MAC
            },
            vlan: if u.ratio(1u8, 16)? { Some(u.arbitrary()?) } else { None },
            proto,
            sport,
            dport,
            seq,
            ack,
            flags,
            window,
            urgent: if flags & 0x20 != 0 { u.arbitrary()? } else { 0 },
            opts,
            payload_len,
            payload_byte: u.arbitrary()?,
            tos,
            ttl: if u.ratio(1u8, 16)? { u.arbitrary()? } else { 64 },
            ip_id: u.arbitrary()?,
            df: u.arbitrary()?,
            ip_opts,
            v6_hbh,
            pad: if u.ratio(1u8, 16)? { u.int_in_range(1usize..=20)? } else { 0 },
        };
        let mut frame = spec.build();
        if frame.len() < 60 && u.ratio(1u8, 2)? {
            frame.resize(60, 0); // Ethernet minimum
        }
        // Advance the sender's state with what it sent (when it went forward).
        let len = payload_len as u32 + syn as u32 + (flags & 0x01) as u32;
        let end = seq.wrapping_add(len);
        let e = self.flows.get_mut(&(pair, v6, salt)).expect("inserted");
        if end.wrapping_sub(e[side].nxt) as i32 > 0 {
            e[side].nxt = end;
        }
        e[side].ts = e[side].ts.wrapping_add(1);
        if syn {
            if let Some(m) =
                spec.opts.windows(4).find(|w| w[0] == 2 && w[1] == 4).map(|w| u16::from_be_bytes([w[2], w[3]]))
            {
                e[side].mss = m.clamp(1, 1460);
            }
        }
        Ok((a_to_b, frame))
    }
}

/// How a target drives timers between events: fires them at their deadlines (plus `late`), at
/// most `MAX_TIMER_CALLS` times per advance (then once at the target time, as a late engine
/// would: periodic timers, e.g. the borrow interval's, would otherwise take most of the time of
/// long advances), and panics if a timer stays due at the same deadline after being served
/// repeatedly (the engine would spin on it).
pub const MAX_TIMER_CALLS: usize = 300;
/// Calls in a row that may leave the same past deadline in place before that counts as stuck.
pub const STUCK_CALLS: usize = 16;

/// Something with a timer: a pipeline, a tap.
pub trait Timed {
    fn poll(&self) -> Option<Time>;
    fn fire(&mut self, now: Time);
}

/// Advance `now` to `to`, calling `x.fire(now)` whenever `x.poll()` is due.
pub fn advance(now: &mut Time, to: Time, late: Dur, x: &mut dyn Timed) {
    let mut calls = 0;
    let mut same = 0;
    let mut prev: Option<Time> = None;
    while let Some(t) = x.poll() {
        if t > to {
            break;
        }
        if prev == Some(t) && t <= *now {
            same += 1;
            assert!(same < STUCK_CALLS, "timer stuck: deadline {t:?} still due after {same} calls at {now:?}");
        } else {
            same = 0;
        }
        prev = Some(t);
        calls += 1;
        if calls > MAX_TIMER_CALLS {
            *now = to;
            x.fire(to);
            break;
        }
        let at = Time(t.0.saturating_add(late.0)).min(to).max(*now);
        *now = at;
        x.fire(at);
    }
    *now = (*now).max(to);
}

mod policies;
pub mod targets;
pub use policies::{GATEWAY_POLICIES, TAP_POLICIES};
