//! Frame classification: a bounds-checked parse of an Ethernet frame into an
//! [`ackshape_wire::Packet`], or the reason it is not a TCP/IP packet we shape.
//!
//! This is the one function to swap for `ackshape_wire::Packet::parse_frame` once it lands; it is
//! written on top of etherparse's checked slicers plus a small TCP-option walker. It never panics.

use ackshape_wire::{
    Ecn, IpHdr, Packet, SackBlock, SeqNum, TcpFlags, TcpHdr, TcpOptions, UdpHdr, L4,
};
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use std::net::IpAddr;

/// Why a frame is malformed (counted; forwarded or dropped by policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Malformed {
    /// Shorter than an Ethernet header, or an IP/TCP/UDP header cut short.
    Truncated,
    /// A header field is invalid (IP version, IHL, lengths, TCP data offset, ...).
    BadHeader,
    /// TCP options that cannot be walked (bad lengths, overrunning the header).
    BadTcpOptions,
}

/// What the gateway learned about a frame.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameClass {
    /// Not IPv4/IPv6 (ARP, LLDP, unknown ethertypes).
    NonIp { ethertype: u16 },
    /// IP but not a TCP segment we can shape (UDP, ICMP, other protocols, fragments).
    /// `packet` is filled when the headers parse (UDP/other, unfragmented).
    NonTcp {
        packet: Option<Packet>,
        fragment: bool,
    },
    /// A TCP segment.
    Tcp(Packet),
    /// Unparseable.
    Malformed(Malformed),
}

impl FrameClass {
    pub fn packet(&self) -> Option<&Packet> {
        match self {
            FrameClass::Tcp(p) => Some(p),
            FrameClass::NonTcp { packet, .. } => packet.as_ref(),
            _ => None,
        }
    }
}

/// Classify one Ethernet frame (no FCS). Payload bytes are not copied into the `Packet`
/// (`payload: None`, `payload_len` set).
pub fn classify(frame: &[u8]) -> FrameClass {
    if frame.len() < 14 {
        return FrameClass::Malformed(Malformed::Truncated);
    }
    let mut ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    // Look through up to two VLAN tags for the ethertype of the payload.
    let mut off = 14;
    for _ in 0..2 {
        if matches!(ethertype, 0x8100 | 0x88a8 | 0x9100) {
            if frame.len() < off + 4 {
                return FrameClass::Malformed(Malformed::Truncated);
            }
            ethertype = u16::from_be_bytes([frame[off + 2], frame[off + 3]]);
            off += 4;
        }
    }
    if ethertype != 0x0800 && ethertype != 0x86dd {
        return FrameClass::NonIp { ethertype };
    }
    let sliced = match SlicedPacket::from_ethernet(frame) {
        Ok(s) => s,
        Err(e) => {
            use etherparse::err::packet::SliceError as E;
            return FrameClass::Malformed(match e {
                E::Len(_) => Malformed::Truncated,
                _ => Malformed::BadHeader,
            });
        }
    };
    let Some(net) = &sliced.net else {
        return FrameClass::Malformed(Malformed::BadHeader);
    };
    let (ip, fragmented) = match net {
        NetSlice::Ipv4(v4) => {
            let h = v4.header();
            (
                IpHdr {
                    src: IpAddr::V4(h.source_addr()),
                    dst: IpAddr::V4(h.destination_addr()),
                    ttl: h.ttl(),
                    dscp: h.dcp().value(),
                    ecn: Ecn::from_bits(h.ecn().value()),
                    id: h.identification(),
                },
                v4.is_payload_fragmented(),
            )
        }
        NetSlice::Ipv6(v6) => {
            let h = v6.header();
            let tc = h.traffic_class();
            (
                IpHdr {
                    src: IpAddr::V6(h.source_addr()),
                    dst: IpAddr::V6(h.destination_addr()),
                    ttl: h.hop_limit(),
                    dscp: tc >> 2,
                    ecn: Ecn::from_bits(tc),
                    id: 0,
                },
                v6.is_payload_fragmented(),
            )
        }
    };
    if fragmented {
        return FrameClass::NonTcp {
            packet: None,
            fragment: true,
        };
    }
    match &sliced.transport {
        Some(TransportSlice::Tcp(t)) => {
            let opts = match parse_tcp_options(t.options()) {
                Some(o) => o,
                None => return FrameClass::Malformed(Malformed::BadTcpOptions),
            };
            let mut flags = TcpFlags(0);
            for (on, f) in [
                (t.fin(), TcpFlags::FIN),
                (t.syn(), TcpFlags::SYN),
                (t.rst(), TcpFlags::RST),
                (t.psh(), TcpFlags::PSH),
                (t.ack(), TcpFlags::ACK),
                (t.urg(), TcpFlags::URG),
                (t.ece(), TcpFlags::ECE),
                (t.cwr(), TcpFlags::CWR),
            ] {
                if on {
                    flags.insert(f);
                }
            }
            FrameClass::Tcp(Packet {
                ip,
                l4: L4::Tcp(TcpHdr {
                    sport: t.source_port(),
                    dport: t.destination_port(),
                    seq: SeqNum(t.sequence_number()),
                    ack: SeqNum(t.acknowledgment_number()),
                    flags,
                    window: t.window_size(),
                    urgent: t.urgent_pointer(),
                    opts,
                }),
                payload_len: t.payload().len() as u32,
                payload: None,
            })
        }
        Some(TransportSlice::Udp(u)) => FrameClass::NonTcp {
            packet: Some(Packet {
                ip,
                l4: L4::Udp(UdpHdr {
                    sport: u.source_port(),
                    dport: u.destination_port(),
                }),
                payload_len: u.payload().len() as u32,
                payload: None,
            }),
            fragment: false,
        },
        _ => {
            let proto = match net {
                NetSlice::Ipv4(v4) => v4.payload_ip_number().0,
                NetSlice::Ipv6(v6) => v6.payload().ip_number.0,
            };
            let plen = net.ip_payload_ref().map_or(0, |p| p.payload.len()) as u32;
            FrameClass::NonTcp {
                packet: Some(Packet {
                    ip,
                    l4: L4::Other { proto },
                    payload_len: plen,
                    payload: None,
                }),
                fragment: false,
            }
        }
    }
}

/// Walk TCP options; `None` if an option's length is invalid or overruns the header.
pub fn parse_tcp_options(mut b: &[u8]) -> Option<TcpOptions> {
    let mut o = TcpOptions::default();
    while let Some(&kind) = b.first() {
        match kind {
            0 => break,
            1 => {
                b = &b[1..];
                continue;
            }
            _ => {}
        }
        let len = *b.get(1)? as usize;
        if len < 2 || len > b.len() {
            return None;
        }
        let body = &b[2..len];
        match (kind, body.len()) {
            (2, 2) => o.mss = Some(u16::from_be_bytes([body[0], body[1]])),
            (3, 1) => o.wscale = Some(body[0]),
            (4, 0) => o.sack_permitted = true,
            (8, 8) => {
                o.timestamps = Some((
                    u32::from_be_bytes([body[0], body[1], body[2], body[3]]),
                    u32::from_be_bytes([body[4], body[5], body[6], body[7]]),
                ))
            }
            (5, n) if n % 8 == 0 && n > 0 => {
                let blocks: Vec<SackBlock> = body
                    .chunks_exact(8)
                    .map(|c| SackBlock {
                        left: SeqNum(u32::from_be_bytes([c[0], c[1], c[2], c[3]])),
                        right: SeqNum(u32::from_be_bytes([c[4], c[5], c[6], c[7]])),
                    })
                    .collect();
                o.set_sack_blocks(&blocks);
            }
            (2..=5 | 8, _) => return None,
            _ => o.has_other = true,
        }
        b = &b[len..];
    }
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;

    #[test]
    fn tcp_syn_parses() {
        let f = testing::tcp_syn_frame([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80, 1);
        match classify(&f) {
            FrameClass::Tcp(p) => {
                let t = p.tcp().unwrap();
                assert_eq!((t.sport, t.dport), (1234, 80));
                assert!(t.flags.contains(TcpFlags::SYN));
                assert_eq!(t.opts.mss, Some(1460));
            }
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn corpus_never_panics_and_mostly_malformed() {
        let corpus = testing::malformed_corpus(42, 20_000);
        let mut malformed = 0;
        for f in &corpus {
            if matches!(classify(f), FrameClass::Malformed(_)) {
                malformed += 1;
            }
        }
        assert!(malformed > corpus.len() / 3, "{malformed}");
    }

    proptest::proptest! {
        #[test]
        fn classify_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = classify(&data);
        }
        #[test]
        fn classify_never_panics_on_ip_like(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..120), v6 in proptest::bool::ANY) {
            let mut f = vec![0u8; 12];
            f.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
            f.push(if v6 { 0x60 } else { 0x45 });
            f.extend_from_slice(&tail);
            let _ = classify(&f);
        }
    }
}
