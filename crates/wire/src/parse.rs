//! Parsing of Ethernet frames and IP packets into a [`Packet`], without panics.
//!
//! Our own small parser rather than etherparse's slices: the live gateway parses every frame
//! once on its hot path and needs the byte offsets (for in-place patching with
//! [`crate::view::TcpFrameMut`]), an explicit decision for fragments, and one error enum.
//! etherparse is the oracle in the tests.

use crate::checksum::{finish, pseudo_header_sum, sum_bytes};
use crate::packet::{Ecn, IpHdr, Packet, SackBlock, TcpFlags, TcpHdr, TcpOptions, UdpHdr, L4};
use crate::seq::SeqNum;
use crate::write::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN, PROTO_TCP, PROTO_UDP};
use bytes::Bytes;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The protocol layer a [`ParseError`] refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    Vlan,
    Ipv4,
    Ipv6,
    Ipv6Extension,
    Tcp,
    Udp,
}

impl core::fmt::Display for Layer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Layer::Ethernet => "Ethernet",
            Layer::Vlan => "802.1Q VLAN",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Ipv6Extension => "IPv6 extension",
            Layer::Tcp => "TCP",
            Layer::Udp => "UDP",
        })
    }
}

/// What was wrong with a TCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptionProblem {
    /// The kind byte is the last byte of the options: no length byte.
    MissingLength,
    /// Length byte below 2.
    LengthTooSmall,
    /// The option runs past the end of the TCP header.
    PastHeaderEnd,
    /// A known option (MSS, WS, SACK-perm, TS, SACK) with a length it cannot have.
    WrongLength,
}

/// Why a frame or packet could not be parsed. Offsets are from the start of the buffer that
/// was passed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    #[error("truncated {layer} header: need {need} bytes, have {have}")]
    Truncated { layer: Layer, need: usize, have: usize },
    #[error("ethertype {ethertype:#06x} is neither IPv4 nor IPv6 (nor one VLAN tag over them)")]
    NotIp { ethertype: u16 },
    #[error("IP version field is {found}, expected {expected}")]
    BadIpVersion { found: u8, expected: u8 },
    #[error("IPv4 header length (IHL) {ihl} is below the minimum of 5 words")]
    BadIhl { ihl: u8 },
    #[error("IPv4 total length {total_len} is below the header length {header_len}")]
    TotalLengthTooSmall { total_len: usize, header_len: usize },
    #[error("IP packet length {claimed} exceeds the {available} bytes available")]
    LengthExceedsBuffer { claimed: usize, available: usize },
    #[error("more than {limit} IPv6 extension headers")]
    TooManyExtensionHeaders { limit: usize },
    #[error("TCP data offset {data_offset} is below 5 or beyond the {available} bytes available")]
    BadTcpDataOffset { data_offset: u8, available: usize },
    #[error("TCP option kind {kind} at offset {offset}: {problem:?}")]
    BadTcpOption { kind: u8, offset: usize, problem: OptionProblem },
    #[error("UDP length {udp_len} is below 8 or beyond the {available} bytes available")]
    BadUdpLength { udp_len: usize, available: usize },
}

/// A parsed IP packet: the [`Packet`] and where its parts are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedIp {
    /// Offset of the transport header (= `payload_offset` for `L4::Other`).
    pub l4_offset: usize,
    /// Offset of the transport payload.
    pub payload_offset: usize,
    /// End of the IP packet (by its length field; a buffer may carry trailing padding).
    pub ip_end: usize,
    /// True for an IPv4 or IPv6 fragment (MF set or offset > 0). Fragments are reported as
    /// `L4::Other { proto }` with the upper-layer protocol (e.g. 6 for a fragment of TCP),
    /// and `payload_len` = the fragment's data: never parsed as TCP/UDP.
    pub fragment: bool,
    pub packet: Packet,
}

/// A parsed Ethernet frame. All offsets are from the start of the frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedFrame {
    pub eth_dst: [u8; 6],
    pub eth_src: [u8; 6],
    /// Ethertype of the IP layer (after the VLAN tag, if any).
    pub ethertype: u16,
    /// Tag control information of the 802.1Q tag, if there was one.
    pub vlan_tci: Option<u16>,
    pub ip_offset: usize,
    pub l4_offset: usize,
    pub payload_offset: usize,
    /// End of the IP packet; bytes after it are Ethernet padding.
    pub ip_end: usize,
    /// See [`ParsedIp::fragment`].
    pub fragment: bool,
    pub packet: Packet,
}

/// Whether `parse_*` copy the payload bytes into `Packet::payload`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Payload {
    Skip,
    Copy,
}

/// At most this many IPv6 extension headers are skipped before giving up.
pub const MAX_IPV6_EXT_HEADERS: usize = 8;

impl Packet {
    /// Parses an Ethernet II frame (optionally with one 802.1Q tag) carrying IPv4 or IPv6.
    /// `packet.payload` is `None`; see [`Packet::parse_frame_with_payload`].
    #[inline]
    pub fn parse_frame(frame: &[u8]) -> Result<ParsedFrame, ParseError> {
        parse_frame_impl(frame, Payload::Skip)
    }

    /// Like [`Packet::parse_frame`], and copies the payload bytes into `packet.payload`.
    pub fn parse_frame_with_payload(frame: &[u8]) -> Result<ParsedFrame, ParseError> {
        parse_frame_impl(frame, Payload::Copy)
    }

    /// Parses an IP packet (no link layer); IPv4 or IPv6 by its version nibble.
    /// `packet.payload` is `None`.
    #[inline]
    pub fn parse_ip(ip: &[u8]) -> Result<ParsedIp, ParseError> {
        parse_ip_impl(ip, None, Payload::Skip)
    }

    /// Like [`Packet::parse_ip`], and copies the payload bytes into `packet.payload`.
    pub fn parse_ip_with_payload(ip: &[u8]) -> Result<ParsedIp, ParseError> {
        parse_ip_impl(ip, None, Payload::Copy)
    }
}

#[inline]
fn need(layer: Layer, buf: &[u8], n: usize) -> Result<(), ParseError> {
    if buf.len() < n {
        Err(ParseError::Truncated { layer, need: n, have: buf.len() })
    } else {
        Ok(())
    }
}

#[inline(always)]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}
#[inline(always)]
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn parse_frame_impl(frame: &[u8], mode: Payload) -> Result<ParsedFrame, ParseError> {
    need(Layer::Ethernet, frame, 14)?;
    let mut eth_dst = [0u8; 6];
    let mut eth_src = [0u8; 6];
    eth_dst.copy_from_slice(&frame[0..6]);
    eth_src.copy_from_slice(&frame[6..12]);
    let mut ethertype = be16(frame, 12);
    let mut ip_offset = 14;
    let mut vlan_tci = None;
    if ethertype == ETHERTYPE_VLAN {
        need(Layer::Vlan, frame, 18)?;
        vlan_tci = Some(be16(frame, 14));
        ethertype = be16(frame, 16);
        ip_offset = 18;
    }
    let expected = match ethertype {
        ETHERTYPE_IPV4 => 4,
        ETHERTYPE_IPV6 => 6,
        _ => return Err(ParseError::NotIp { ethertype }),
    };
    let p = parse_ip_impl(&frame[ip_offset..], Some(expected), mode).map_err(|e| shift(e, ip_offset))?;
    Ok(ParsedFrame {
        eth_dst,
        eth_src,
        ethertype,
        vlan_tci,
        ip_offset,
        l4_offset: ip_offset + p.l4_offset,
        payload_offset: ip_offset + p.payload_offset,
        ip_end: ip_offset + p.ip_end,
        fragment: p.fragment,
        packet: p.packet,
    })
}

/// Makes offsets in errors relative to the frame.
fn shift(e: ParseError, by: usize) -> ParseError {
    match e {
        ParseError::BadTcpOption { kind, offset, problem } => {
            ParseError::BadTcpOption { kind, offset: offset + by, problem }
        }
        e => e,
    }
}

fn parse_ip_impl(ip: &[u8], expected: Option<u8>, mode: Payload) -> Result<ParsedIp, ParseError> {
    if ip.is_empty() {
        let layer = if expected == Some(6) { Layer::Ipv6 } else { Layer::Ipv4 };
        return Err(ParseError::Truncated { layer, need: 1, have: 0 });
    }
    let version = ip[0] >> 4;
    if let Some(e) = expected {
        if version != e {
            return Err(ParseError::BadIpVersion { found: version, expected: e });
        }
    }
    match version {
        4 => parse_v4(ip, mode),
        6 => parse_v6(ip, mode),
        v => Err(ParseError::BadIpVersion { found: v, expected: 4 }),
    }
}

fn parse_v4(ip: &[u8], mode: Payload) -> Result<ParsedIp, ParseError> {
    need(Layer::Ipv4, ip, 20)?;
    let ihl = ip[0] & 0x0f;
    if ihl < 5 {
        return Err(ParseError::BadIhl { ihl });
    }
    let hlen = ihl as usize * 4;
    need(Layer::Ipv4, ip, hlen)?;
    let total = be16(ip, 2) as usize;
    if total < hlen {
        return Err(ParseError::TotalLengthTooSmall { total_len: total, header_len: hlen });
    }
    if total > ip.len() {
        return Err(ParseError::LengthExceedsBuffer { claimed: total, available: ip.len() });
    }
    let tos = ip[1];
    let frag = be16(ip, 6);
    let fragment = frag & 0x3fff != 0; // MF or offset
    let proto = ip[9];
    let hdr = IpHdr {
        src: IpAddr::V4(Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15])),
        dst: IpAddr::V4(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19])),
        ttl: ip[8],
        dscp: tos >> 2,
        ecn: Ecn::from_bits(tos),
        id: be16(ip, 4),
    };
    parse_l4(ip, hdr, proto, hlen, total, fragment, mode)
}

fn parse_v6(ip: &[u8], mode: Payload) -> Result<ParsedIp, ParseError> {
    need(Layer::Ipv6, ip, 40)?;
    let plen = be16(ip, 4) as usize;
    let end = 40 + plen;
    if end > ip.len() {
        return Err(ParseError::LengthExceedsBuffer { claimed: end, available: ip.len() });
    }
    let tc = ((be16(ip, 0) >> 4) & 0xff) as u8;
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&ip[8..24]);
    dst.copy_from_slice(&ip[24..40]);
    let hdr = IpHdr {
        src: IpAddr::V6(Ipv6Addr::from(src)),
        dst: IpAddr::V6(Ipv6Addr::from(dst)),
        ttl: ip[7],
        dscp: tc >> 2,
        ecn: Ecn::from_bits(tc),
        id: 0,
    };
    let mut next = ip[6];
    let mut off = 40;
    let mut fragment = false;
    let mut count = 0;
    loop {
        match next {
            // hop-by-hop, routing, destination options
            0 | 43 | 60 => {
                let rest = &ip[off..end];
                need(Layer::Ipv6Extension, rest, 8)?;
                let len = 8 + rest[1] as usize * 8;
                need(Layer::Ipv6Extension, rest, len)?;
                next = rest[0];
                off += len;
            }
            // fragment
            44 => {
                let rest = &ip[off..end];
                need(Layer::Ipv6Extension, rest, 8)?;
                let fo = be16(rest, 2);
                // offset (13 bits) or M flag: a real fragment; else an atomic fragment.
                if fo & 0xfff9 != 0 {
                    fragment = true;
                }
                next = rest[0];
                off += 8;
            }
            _ => break,
        }
        count += 1;
        if count > MAX_IPV6_EXT_HEADERS {
            return Err(ParseError::TooManyExtensionHeaders { limit: MAX_IPV6_EXT_HEADERS });
        }
        if fragment {
            break;
        }
    }
    parse_l4(ip, hdr, next, off, end, fragment, mode)
}

fn payload_of(ip: &[u8], from: usize, to: usize, mode: Payload) -> Option<Bytes> {
    match mode {
        Payload::Skip => None,
        Payload::Copy => Some(Bytes::copy_from_slice(&ip[from..to])),
    }
}

fn parse_l4(
    ip: &[u8],
    hdr: IpHdr,
    proto: u8,
    l4_off: usize,
    end: usize,
    fragment: bool,
    mode: Payload,
) -> Result<ParsedIp, ParseError> {
    let l4 = &ip[l4_off..end];
    if fragment || (proto != PROTO_TCP && proto != PROTO_UDP) {
        return Ok(ParsedIp {
            l4_offset: l4_off,
            payload_offset: l4_off,
            ip_end: end,
            fragment,
            packet: Packet {
                ip: hdr,
                l4: L4::Other { proto },
                payload_len: l4.len() as u32,
                payload: payload_of(ip, l4_off, end, mode),
            },
        });
    }
    if proto == PROTO_UDP {
        need(Layer::Udp, l4, 8)?;
        let udp_len = be16(l4, 4) as usize;
        if udp_len < 8 || udp_len > l4.len() {
            return Err(ParseError::BadUdpLength { udp_len, available: l4.len() });
        }
        let pay = l4_off + 8;
        let pend = l4_off + udp_len;
        return Ok(ParsedIp {
            l4_offset: l4_off,
            payload_offset: pay,
            ip_end: end,
            fragment,
            packet: Packet {
                ip: hdr,
                l4: L4::Udp(UdpHdr { sport: be16(l4, 0), dport: be16(l4, 2) }),
                payload_len: (udp_len - 8) as u32,
                payload: payload_of(ip, pay, pend, mode),
            },
        });
    }
    need(Layer::Tcp, l4, 20)?;
    let data_offset = l4[12] >> 4;
    let hlen = data_offset as usize * 4;
    if data_offset < 5 || hlen > l4.len() {
        return Err(ParseError::BadTcpDataOffset { data_offset, available: l4.len() });
    }
    let opts = parse_tcp_options(&l4[20..hlen]).map_err(|e| shift(e, l4_off + 20))?;
    let tcp = TcpHdr {
        sport: be16(l4, 0),
        dport: be16(l4, 2),
        seq: SeqNum(be32(l4, 4)),
        ack: SeqNum(be32(l4, 8)),
        flags: TcpFlags(l4[13]),
        window: be16(l4, 14),
        urgent: be16(l4, 18),
        opts,
    };
    let pay = l4_off + hlen;
    Ok(ParsedIp {
        l4_offset: l4_off,
        payload_offset: pay,
        ip_end: end,
        fragment,
        packet: Packet {
            ip: hdr,
            l4: L4::Tcp(tcp),
            payload_len: (end - pay) as u32,
            payload: payload_of(ip, pay, end, mode),
        },
    })
}

/// Parses a TCP options area (the bytes after the fixed 20-byte header).
/// Offsets in errors are relative to the start of `opts`.
pub fn parse_tcp_options(opts: &[u8]) -> Result<TcpOptions, ParseError> {
    let mut o = TcpOptions::default();
    let mut i = 0;
    while i < opts.len() {
        let kind = opts[i];
        match kind {
            0 => break,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let bad = |problem| Err(ParseError::BadTcpOption { kind, offset: i, problem });
        if i + 1 >= opts.len() {
            return bad(OptionProblem::MissingLength);
        }
        let len = opts[i + 1] as usize;
        if len < 2 {
            return bad(OptionProblem::LengthTooSmall);
        }
        if i + len > opts.len() {
            return bad(OptionProblem::PastHeaderEnd);
        }
        let v = &opts[i + 2..i + len];
        match kind {
            2 => {
                if len != 4 {
                    return bad(OptionProblem::WrongLength);
                }
                o.mss = Some(be16(v, 0));
            }
            3 => {
                if len != 3 {
                    return bad(OptionProblem::WrongLength);
                }
                o.wscale = Some(v[0]);
            }
            4 => {
                if len != 2 {
                    return bad(OptionProblem::WrongLength);
                }
                o.sack_permitted = true;
            }
            5 => {
                let n = (len - 2) / 8;
                if !(len - 2).is_multiple_of(8) || n == 0 || n > crate::packet::MAX_SACK_BLOCKS {
                    return bad(OptionProblem::WrongLength);
                }
                let mut blocks = [SackBlock::default(); crate::packet::MAX_SACK_BLOCKS];
                for (k, b) in blocks.iter_mut().enumerate().take(n) {
                    b.left = SeqNum(be32(v, 8 * k));
                    b.right = SeqNum(be32(v, 8 * k + 4));
                }
                o.sack = blocks;
                o.sack_len = n as u8;
            }
            8 => {
                if len != 10 {
                    return bad(OptionProblem::WrongLength);
                }
                o.timestamps = Some((be32(v, 0), be32(v, 4)));
            }
            _ => o.has_other = true,
        }
        i += len;
    }
    Ok(o)
}

/// Which checksum of a frame is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChecksumError {
    #[error("cannot check checksums: {0}")]
    Parse(#[from] ParseError),
    #[error("IPv4 header checksum is {found:#06x}, should be {expected:#06x}")]
    Ipv4Header { found: u16, expected: u16 },
    #[error("TCP checksum is {found:#06x}, should be {expected:#06x}")]
    Tcp { found: u16, expected: u16 },
    #[error("UDP checksum is {found:#06x}, should be {expected:#06x}")]
    Udp { found: u16, expected: u16 },
}

/// Checks the IPv4 header checksum and the TCP/UDP checksum of an Ethernet frame
/// (transport checksums are not checked for fragments or other protocols; a UDP/IPv4
/// checksum of 0 means "none" and passes).
pub fn verify_checksums(frame: &[u8]) -> Result<(), ChecksumError> {
    let p = Packet::parse_frame(frame)?;
    verify_parsed(frame, &p)
}

/// [`verify_checksums`] for a frame already parsed into `p` (by [`Packet::parse_frame`] of the
/// same bytes): one pass over the IP packet, no second parse. The live data plane calls it on
/// every frame it receives. Offsets out of range (a `p` of other bytes) give
/// [`ParseError::Truncated`], never a panic.
pub fn verify_parsed(frame: &[u8], p: &ParsedFrame) -> Result<(), ChecksumError> {
    if p.ip_offset > p.ip_end || p.ip_end > frame.len() || p.l4_offset < p.ip_offset || p.l4_offset > p.ip_end {
        return Err(ChecksumError::Parse(ParseError::Truncated {
            layer: Layer::Ethernet,
            need: p.ip_end,
            have: frame.len(),
        }));
    }
    let ip = &frame[p.ip_offset..p.ip_end];
    let l4_off = p.l4_offset - p.ip_offset;
    let short = || ChecksumError::Parse(ParseError::Truncated { layer: Layer::Tcp, need: p.ip_end, have: frame.len() });
    if p.packet.ip.src.is_ipv4() {
        let hlen = (ip.first().ok_or_else(short)? & 0x0f) as usize * 4;
        if hlen < 20 || hlen > ip.len() {
            return Err(short());
        }
        let found = be16(ip, 10);
        let mut h = [0u8; 60];
        h[..hlen].copy_from_slice(&ip[..hlen]);
        h[10] = 0;
        h[11] = 0;
        let expected = finish(sum_bytes(0, &h[..hlen]));
        if found != expected {
            return Err(ChecksumError::Ipv4Header { found, expected });
        }
    }
    if p.fragment {
        return Ok(());
    }
    let (proto, field) = match p.packet.l4 {
        L4::Tcp(_) => (PROTO_TCP, 16),
        L4::Udp(_) => (PROTO_UDP, 6),
        L4::Other { .. } => return Ok(()),
    };
    let seg = match p.packet.l4 {
        // UDP: the checksum covers the UDP length, not trailing bytes of the IP packet.
        L4::Udp(_) => ip.get(l4_off..l4_off + 8 + p.packet.payload_len as usize),
        _ => ip.get(l4_off..),
    }
    .filter(|s| s.len() >= field + 2)
    .ok_or_else(short)?;
    let found = be16(seg, field);
    if proto == PROTO_UDP && found == 0 && p.packet.ip.src.is_ipv4() {
        return Ok(());
    }
    let mut s = pseudo_header_sum(p.packet.ip.src, p.packet.ip.dst, proto, seg.len() as u32);
    s = sum_bytes(s, &seg[..field]);
    s = sum_bytes(s, &seg[field + 2..]);
    let mut expected = finish(s);
    if proto == PROTO_UDP && expected == 0 {
        expected = 0xffff;
    }
    // One's-complement arithmetic has two zeros. A checksum whose canonical value is 0x0000
    // may be written 0xffff: Linux's `skb_checksum_help` (net/core/dev.c) stores
    // `csum_fold(csum) ?: CSUM_MANGLED_0` for TCP as for UDP, and RFC 1071's check (the sum
    // over the segment including the field is all ones) accepts both, as receivers do.
    let zero_alias = proto == PROTO_TCP && expected == 0 && found == 0xffff;
    if found != expected && !zero_alias {
        return Err(if proto == PROTO_TCP {
            ChecksumError::Tcp { found, expected }
        } else {
            ChecksumError::Udp { found, expected }
        });
    }
    Ok(())
}
