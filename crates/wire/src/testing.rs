//! Test material for every crate: a deterministic corpus of malformed and unusual frames.
//!
//! Public and not behind `cfg(test)`: the live gateway's robustness test feeds the same
//! corpus through its data path (every frame must be counted and forwarded or dropped,
//! never crash it).

use crate::packet::{Ecn, IpHdr, Packet, SackBlock, TcpFlags, TcpHdr, TcpOptions, UdpHdr, L4};
use crate::seq::SeqNum;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The kinds of frames in [`malformed_corpus`]. Most must fail to parse; some are valid but
/// unusual (marked "parses"): the parser must handle them correctly, and a gateway must
/// forward them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MalformedKind {
    /// Shorter than 14 bytes.
    TruncatedEthernet,
    /// ARP or a random non-IP ethertype.
    UnknownEthertype,
    /// VLAN tag cut short.
    TruncatedVlan,
    /// Two stacked 802.1Q tags (only one is supported).
    DoubleVlan,
    /// IPv4 header cut short.
    TruncatedIpv4,
    /// Version nibble disagrees with the ethertype.
    BadIpVersion,
    /// IHL below 5.
    BadIhl,
    /// IHL pointing past the buffer.
    IhlBeyondBuffer,
    /// IPv4 total length larger than the buffer.
    TotalLengthBeyondBuffer,
    /// IPv4 total length smaller than the header.
    TotalLengthBelowHeader,
    /// First IPv4 fragment (MF set) of a TCP segment. Parses, as a fragment.
    Ipv4FirstFragment,
    /// Non-first IPv4 fragment whose data looks like a broken TCP header. Parses, as a
    /// fragment (`L4::Other`), never as TCP.
    Ipv4LaterFragment,
    /// IPv4 with header options (IHL > 5), otherwise valid TCP. Parses.
    Ipv4WithOptions,
    /// IPv6 header cut short.
    TruncatedIpv6,
    /// IPv6 payload length larger than the buffer.
    Ipv6LengthBeyondBuffer,
    /// IPv6 with hop-by-hop, routing and destination-options headers before TCP. Parses as TCP.
    Ipv6ExtensionChain,
    /// IPv6 extension header cut short.
    Ipv6TruncatedExtension,
    /// IPv6 non-first fragment. Parses, as a fragment.
    Ipv6Fragment,
    /// A chain of more extension headers than the parser follows.
    Ipv6TooManyExtensions,
    /// TCP header shorter than 20 bytes.
    TruncatedTcp,
    /// TCP data offset below 5.
    TcpDataOffsetTooSmall,
    /// TCP data offset past the end of the packet.
    TcpDataOffsetBeyondPacket,
    /// Options area filled with random bytes (may or may not parse).
    TcpGarbageOptions,
    /// An option with length byte 0.
    TcpZeroLengthOption,
    /// An option with length byte 1.
    TcpLengthOneOption,
    /// An option whose length runs past the header.
    TcpOversizedOption,
    /// MSS/WS/TS/SACK with a length it cannot have.
    TcpWrongLengthKnownOption,
    /// An unknown option kind with a valid length. Parses, with `has_other`.
    TcpUnknownOption,
    /// UDP header shorter than 8 bytes.
    TruncatedUdp,
    /// UDP length field below 8 or past the packet.
    BadUdpLength,
    /// Well-formed but with a wrong TCP or IPv4 checksum. Parses; `verify_checksums` fails.
    BadChecksum,
    /// Random bytes after an IPv4 or IPv6 ethertype (may or may not parse).
    RandomAfterEthertype,
    /// A valid frame with a few random bytes changed, cut or appended (may or may not parse).
    Mutated,
}

impl MalformedKind {
    /// Every kind, in the order the corpus cycles through them.
    pub const ALL: [MalformedKind; 33] = [
        MalformedKind::TruncatedEthernet,
        MalformedKind::UnknownEthertype,
        MalformedKind::TruncatedVlan,
        MalformedKind::DoubleVlan,
        MalformedKind::TruncatedIpv4,
        MalformedKind::BadIpVersion,
        MalformedKind::BadIhl,
        MalformedKind::IhlBeyondBuffer,
        MalformedKind::TotalLengthBeyondBuffer,
        MalformedKind::TotalLengthBelowHeader,
        MalformedKind::Ipv4FirstFragment,
        MalformedKind::Ipv4LaterFragment,
        MalformedKind::Ipv4WithOptions,
        MalformedKind::TruncatedIpv6,
        MalformedKind::Ipv6LengthBeyondBuffer,
        MalformedKind::Ipv6ExtensionChain,
        MalformedKind::Ipv6TruncatedExtension,
        MalformedKind::Ipv6Fragment,
        MalformedKind::Ipv6TooManyExtensions,
        MalformedKind::TruncatedTcp,
        MalformedKind::TcpDataOffsetTooSmall,
        MalformedKind::TcpDataOffsetBeyondPacket,
        MalformedKind::TcpGarbageOptions,
        MalformedKind::TcpZeroLengthOption,
        MalformedKind::TcpLengthOneOption,
        MalformedKind::TcpOversizedOption,
        MalformedKind::TcpWrongLengthKnownOption,
        MalformedKind::TcpUnknownOption,
        MalformedKind::TruncatedUdp,
        MalformedKind::BadUdpLength,
        MalformedKind::BadChecksum,
        MalformedKind::RandomAfterEthertype,
        MalformedKind::Mutated,
    ];

    /// What [`crate::Packet::parse_frame`] does with this kind: `Some(true)` parses
    /// (possibly as a fragment), `Some(false)` is an error, `None` depends on the random bytes.
    pub fn parses(self) -> Option<bool> {
        use MalformedKind::*;
        match self {
            Ipv4FirstFragment | Ipv4LaterFragment | Ipv4WithOptions | Ipv6ExtensionChain | Ipv6Fragment
            | TcpUnknownOption | BadChecksum => Some(true),
            TcpGarbageOptions | RandomAfterEthertype | Mutated => None,
            _ => Some(false),
        }
    }
}

/// SplitMix64: small, deterministic, no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
    pub fn fill(&mut self, b: &mut [u8]) {
        for x in b {
            *x = self.byte();
        }
    }
}

const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

/// A valid TCP packet (IPv4 or IPv6) with timestamps, some SACK blocks and a payload.
pub fn sample_tcp(v6: bool, payload_len: u32, rng: &mut Rng) -> Packet {
    let (src, dst) = if v6 {
        (IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)), IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)))
    } else {
        (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)))
    };
    let mut opts =
        TcpOptions { timestamps: Some((rng.next_u64() as u32, rng.next_u64() as u32)), ..Default::default() };
    let n = rng.below(4);
    let base = rng.next_u64() as u32;
    let blocks: Vec<SackBlock> = (0..n as u32)
        .map(|k| SackBlock { left: SeqNum(base + 3000 * k), right: SeqNum(base + 3000 * k + 1448) })
        .collect();
    opts.set_sack_blocks(&blocks);
    Packet {
        ip: IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::Ect0, id: if v6 { 0 } else { rng.next_u64() as u16 } },
        l4: L4::Tcp(TcpHdr {
            sport: 40000 + rng.below(1000) as u16,
            dport: 5201,
            seq: SeqNum(rng.next_u64() as u32),
            ack: SeqNum(rng.next_u64() as u32),
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: rng.next_u64() as u16,
            urgent: 0,
            opts,
        }),
        payload_len,
        payload: None,
    }
}

fn tcp_frame(v6: bool, payload_len: u32, rng: &mut Rng) -> Vec<u8> {
    sample_tcp(v6, payload_len, rng).to_frame(MAC_A, MAC_B)
}

fn udp_frame(v6: bool, rng: &mut Rng) -> Vec<u8> {
    let mut p = sample_tcp(v6, rng.below(64) as u32, rng);
    p.l4 = L4::Udp(UdpHdr { sport: 5353, dport: 5353 });
    p.to_frame(MAC_A, MAC_B)
}

/// Sets the IPv4 header checksum of a frame (IP at offset 14) after a manual edit, so
/// that the frame is wrong only in the way intended.
fn fix_v4_checksum(f: &mut [u8]) {
    if f.len() < 34 {
        return;
    }
    let hl = ((f[14] & 0x0f) as usize * 4).clamp(20, 60);
    if f.len() < 14 + hl {
        return;
    }
    f[24] = 0;
    f[25] = 0;
    let c = crate::checksum::finish(crate::checksum::sum_bytes(0, &f[14..14 + hl]));
    f[24..26].copy_from_slice(&c.to_be_bytes());
}

/// Offset of the TCP header in a frame made by [`tcp_frame`].
fn tcp_off(v6: bool) -> usize {
    if v6 {
        54
    } else {
        34
    }
}

/// Replaces the TCP options area of a plain frame with `opts` (a multiple of 4 bytes, at most
/// 40), fixing lengths and the data offset. The TCP checksum is left as it was.
fn with_options(v6: bool, opts: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut p = sample_tcp(v6, rng.below(100) as u32, rng);
    if let Some(t) = p.tcp_mut() {
        t.opts = TcpOptions::default();
    }
    let mut f = p.to_frame(MAC_A, MAC_B);
    let t = tcp_off(v6);
    let tail = f.split_off(t + 20);
    f.extend_from_slice(opts);
    f.extend_from_slice(&tail);
    f[t + 12] = (((20 + opts.len()) / 4) << 4) as u8;
    set_ip_len(&mut f, v6);
    f
}

/// Sets the IP length field from the frame length, and fixes the IPv4 header checksum.
fn set_ip_len(f: &mut [u8], v6: bool) {
    if v6 {
        let l = (f.len() - 54) as u16;
        f[18..20].copy_from_slice(&l.to_be_bytes());
    } else {
        let l = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&l.to_be_bytes());
        fix_v4_checksum(f);
    }
}

/// One frame of the given kind.
pub fn malformed_frame(kind: MalformedKind, rng: &mut Rng) -> Vec<u8> {
    use MalformedKind::*;
    let v6 = rng.bool();
    match kind {
        TruncatedEthernet => {
            let mut f = tcp_frame(v6, 0, rng);
            f.truncate(rng.below(14));
            f
        }
        UnknownEthertype => {
            let mut f = tcp_frame(false, 0, rng);
            let et: u16 = if rng.bool() {
                0x0806
            } else {
                loop {
                    let e = rng.next_u64() as u16;
                    if e != 0x0800 && e != 0x86dd && e != 0x8100 {
                        break e;
                    }
                }
            };
            f[12..14].copy_from_slice(&et.to_be_bytes());
            f
        }
        TruncatedVlan => {
            let mut f = vec![0u8; 14 + rng.below(4)];
            f[..6].copy_from_slice(&MAC_B);
            f[6..12].copy_from_slice(&MAC_A);
            f[12] = 0x81;
            f[13] = 0x00;
            f
        }
        DoubleVlan => {
            let f = tcp_frame(v6, 10, rng);
            let mut g = f[..12].to_vec();
            g.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a, 0x81, 0x00, 0x00, 0x14]);
            g.extend_from_slice(&f[12..]);
            g
        }
        TruncatedIpv4 => {
            let mut f = tcp_frame(false, 0, rng);
            f.truncate(14 + rng.below(20));
            f
        }
        BadIpVersion => {
            let mut f = tcp_frame(v6, 0, rng);
            let bad = [0u8, 1, 2, 3, 5, 7, 9, 15][rng.below(8)];
            f[14] = (bad << 4) | (f[14] & 0x0f);
            f
        }
        BadIhl => {
            let mut f = tcp_frame(false, 20, rng);
            f[14] = 0x40 | rng.below(5) as u8;
            fix_v4_checksum(&mut f);
            f
        }
        IhlBeyondBuffer => {
            let mut f = tcp_frame(false, 0, rng);
            f.truncate(14 + 20 + rng.below(20));
            f[14] = 0x4f;
            f
        }
        TotalLengthBeyondBuffer => {
            let mut f = tcp_frame(v6, rng.below(200) as u32, rng);
            let extra = 1 + rng.below(1000) as u16;
            let (i, base) = if v6 { (18, f.len() - 54) } else { (16, f.len() - 14) };
            f[i..i + 2].copy_from_slice(&(base as u16 + extra).to_be_bytes());
            fix_v4_checksum(&mut f);
            f
        }
        TotalLengthBelowHeader => {
            let mut f = tcp_frame(false, 10, rng);
            f[16..18].copy_from_slice(&(rng.below(20) as u16).to_be_bytes());
            fix_v4_checksum(&mut f);
            f
        }
        Ipv4FirstFragment => {
            let mut f = tcp_frame(false, 400, rng);
            f[20] = 0x20; // MF, offset 0
            f[21] = 0;
            fix_v4_checksum(&mut f);
            f
        }
        Ipv4LaterFragment => {
            let mut f = tcp_frame(false, 64, rng);
            let off = 1 + rng.below(0x1ff) as u16;
            let mf = if rng.bool() { 0x2000 } else { 0 };
            f[20..22].copy_from_slice(&(mf | off).to_be_bytes());
            // Make the "TCP header" bytes nonsense.
            f[34 + 12] = 0x10 * rng.below(5) as u8;
            fix_v4_checksum(&mut f);
            f
        }
        Ipv4WithOptions => {
            let f = tcp_frame(false, 32, rng);
            let words = 1 + rng.below(10);
            let mut g = f[..34].to_vec();
            g.extend(std::iter::repeat_n(1u8, 4 * words - 1)); // NOPs
            g.push(0); // EOL
            g.extend_from_slice(&f[34..]);
            g[14] = 0x40 | (5 + words) as u8;
            set_ip_len(&mut g, false);
            g
        }
        TruncatedIpv6 => {
            let mut f = tcp_frame(true, 0, rng);
            f.truncate(14 + rng.below(40));
            f
        }
        Ipv6LengthBeyondBuffer => {
            let mut f = tcp_frame(true, rng.below(100) as u32, rng);
            let l = (f.len() - 54 + 1 + rng.below(500)) as u16;
            f[18..20].copy_from_slice(&l.to_be_bytes());
            f
        }
        Ipv6ExtensionChain => {
            let f = tcp_frame(true, rng.below(100) as u32, rng);
            let mut ext = Vec::new();
            // hop-by-hop (PadN), routing (type 0 header, segments left 0), dest-opts
            ext.extend_from_slice(&[43, 0, 1, 4, 0, 0, 0, 0]);
            ext.extend_from_slice(&[60, 0, 0, 0, 0, 0, 0, 0]);
            ext.extend_from_slice(&[6, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            let mut g = f[..54].to_vec();
            g[20] = 0; // next header: hop-by-hop
            g.extend_from_slice(&ext);
            g.extend_from_slice(&f[54..]);
            set_ip_len(&mut g, true);
            g
        }
        Ipv6TruncatedExtension => {
            let mut g = tcp_frame(true, 0, rng)[..54].to_vec();
            g[20] = [0u8, 43, 60, 44][rng.below(4)];
            // Either fewer than 8 bytes, or a length byte claiming more than there is.
            if rng.bool() {
                g.extend((0..rng.below(8)).map(|_| 6u8));
            } else {
                g.extend_from_slice(&[6, 1 + rng.byte() % 8, 0, 0, 0, 0, 0, 0]);
            }
            set_ip_len(&mut g, true);
            g
        }
        Ipv6Fragment => {
            let f = tcp_frame(true, 64, rng);
            let mut g = f[..54].to_vec();
            g[20] = 44;
            let off = (1 + rng.below(0x1fff) as u16) << 3;
            g.extend_from_slice(&[6, 0]);
            g.extend_from_slice(&(off | rng.bool() as u16).to_be_bytes());
            g.extend_from_slice(&(rng.next_u64() as u32).to_be_bytes());
            let mut junk = f[54..].to_vec();
            junk[12] = 0x10 * rng.below(5) as u8;
            g.extend_from_slice(&junk);
            set_ip_len(&mut g, true);
            g
        }
        Ipv6TooManyExtensions => {
            let mut g = tcp_frame(true, 0, rng)[..54].to_vec();
            g[20] = 60;
            let n = crate::parse::MAX_IPV6_EXT_HEADERS + 1 + rng.below(4);
            for _ in 0..n {
                g.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
            }
            g.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
            set_ip_len(&mut g, true);
            g
        }
        TruncatedTcp => {
            let mut f = tcp_frame(v6, 0, rng);
            f.truncate(tcp_off(v6) + rng.below(20));
            set_ip_len(&mut f, v6);
            f
        }
        TcpDataOffsetTooSmall => {
            let mut f = tcp_frame(v6, 40, rng);
            let t = tcp_off(v6);
            f[t + 12] = (rng.below(5) as u8) << 4;
            f
        }
        TcpDataOffsetBeyondPacket => {
            // No payload, so the segment is at most 56 bytes: data offset 14 words or less.
            let mut f = tcp_frame(v6, 0, rng);
            let t = tcp_off(v6);
            let hl = (f.len() - t) / 4;
            f[t + 12] = ((hl + 1 + rng.below(15 - hl)) as u8) << 4;
            f
        }
        TcpGarbageOptions => {
            let mut o = vec![0u8; 4 * (1 + rng.below(10))];
            rng.fill(&mut o);
            with_options(v6, &o, rng)
        }
        TcpZeroLengthOption => {
            let kind = [2u8, 3, 4, 5, 8, 30, 254][rng.below(7)];
            with_options(v6, &[1, 1, kind, 0, 0, 0, 0, 0], rng)
        }
        TcpLengthOneOption => {
            let kind = [2u8, 3, 4, 5, 8, 30, 254][rng.below(7)];
            with_options(v6, &[kind, 1, 1, 1], rng)
        }
        TcpOversizedOption => {
            let kind = [2u8, 5, 8, 19, 29, 34][rng.below(6)];
            let mut o = vec![1u8; 4 * (1 + rng.below(9))];
            let at = rng.below(o.len() - 1);
            o[at] = kind;
            o[at + 1] = (o.len() - at + 1 + rng.below(200)).min(255) as u8;
            with_options(v6, &o, rng)
        }
        TcpWrongLengthKnownOption => {
            let o: &[u8] = match rng.below(5) {
                0 => &[2, 5, 5, 180, 1, 1, 1, 0],
                1 => &[3, 4, 7, 0],
                2 => &[4, 3, 0, 0],
                3 => &[8, 8, 0, 0, 0, 0, 0, 0],
                _ => &[5, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            };
            with_options(v6, o, rng)
        }
        TcpUnknownOption => {
            // TCP-AO-like (29) or an experimental option (254) with a valid length.
            let mut o = vec![1u8, 1, 254, 6, 0xf9, 0x89, 0, 0];
            if rng.bool() {
                o = vec![29, 8, 1, 2, 3, 4, 5, 6];
            }
            let mut f = with_options(v6, &o, rng);
            fix_tcp_checksum(&mut f, v6);
            f
        }
        TruncatedUdp => {
            let mut f = udp_frame(v6, rng);
            f.truncate(tcp_off(v6) + rng.below(8));
            set_ip_len(&mut f, v6);
            f
        }
        BadUdpLength => {
            let mut f = udp_frame(v6, rng);
            let t = tcp_off(v6);
            let avail = f.len() - t;
            let l = if rng.bool() { rng.below(8) } else { avail + 1 + rng.below(100) };
            f[t + 4..t + 6].copy_from_slice(&(l as u16).to_be_bytes());
            f
        }
        BadChecksum => {
            let mut f = tcp_frame(v6, rng.below(300) as u32, rng);
            let t = tcp_off(v6);
            if !v6 && rng.bool() {
                f[24] ^= 1 + rng.byte() % 255;
            } else {
                f[t + 16] ^= 1 + rng.byte() % 255;
            }
            f
        }
        RandomAfterEthertype => {
            let mut f = vec![0u8; 14 + rng.below(120)];
            rng.fill(&mut f[14..]);
            f[..6].copy_from_slice(&MAC_B);
            f[6..12].copy_from_slice(&MAC_A);
            let (et, ver) = if v6 { (0x86ddu16, 0x60u8) } else { (0x0800, 0x40) };
            f[12..14].copy_from_slice(&et.to_be_bytes());
            if f.len() > 14 && rng.bool() {
                f[14] = ver | (f[14] & 0x0f);
            }
            f
        }
        Mutated => {
            let mut f = if rng.bool() { tcp_frame(v6, rng.below(200) as u32, rng) } else { udp_frame(v6, rng) };
            match rng.below(3) {
                0 => {
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(f.len());
                        f[i] = rng.byte();
                    }
                }
                1 => {
                    let n = rng.below(f.len());
                    f.truncate(n);
                }
                _ => {
                    for _ in 0..1 + rng.below(40) {
                        f.push(rng.byte());
                    }
                }
            }
            f
        }
    }
}

fn fix_tcp_checksum(f: &mut [u8], v6: bool) {
    let t = tcp_off(v6);
    let (src, dst) = if v6 {
        let mut s = [0u8; 16];
        let mut d = [0u8; 16];
        s.copy_from_slice(&f[22..38]);
        d.copy_from_slice(&f[38..54]);
        (IpAddr::V6(s.into()), IpAddr::V6(d.into()))
    } else {
        (IpAddr::V4(Ipv4Addr::new(f[26], f[27], f[28], f[29])), IpAddr::V4(Ipv4Addr::new(f[30], f[31], f[32], f[33])))
    };
    f[t + 16] = 0;
    f[t + 17] = 0;
    let seg = &f[t..];
    let s = crate::checksum::pseudo_header_sum(src, dst, 6, seg.len() as u32);
    let c = crate::checksum::finish(crate::checksum::sum_bytes(s, seg));
    f[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
}

/// `n` frames cycling through every [`MalformedKind`], labelled, deterministic in `seed`.
pub fn malformed_corpus_labeled(seed: u64, n: usize) -> Vec<(MalformedKind, Vec<u8>)> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let k = MalformedKind::ALL[i % MalformedKind::ALL.len()];
            (k, malformed_frame(k, &mut rng))
        })
        .collect()
}

/// `n` malformed or unusual Ethernet frames (see [`MalformedKind`]), deterministic in `seed`.
pub fn malformed_corpus(seed: u64, n: usize) -> Vec<Vec<u8>> {
    malformed_corpus_labeled(seed, n).into_iter().map(|(_, f)| f).collect()
}
