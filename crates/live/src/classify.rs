//! Frame classification: every frame the engine receives is parsed once with
//! [`ackshape_wire::Packet::parse_frame`] (bounds-checked, no panics) into a [`ParsedFrame`]
//! (the [`ackshape_wire::Packet`] plus byte offsets for in-place patching), or the reason it is
//! not a TCP/IP packet we shape.

use ackshape_wire::parse::{ParseError, ParsedFrame};
use ackshape_wire::{Packet, L4};

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
    /// Not IPv4/IPv6 (ARP, LLDP, unknown ethertypes, stacked VLAN tags).
    NonIp { ethertype: u16 },
    /// IP but not a TCP segment we can shape (UDP, ICMP, other protocols, fragments).
    NonTcp { parsed: Box<ParsedFrame>, fragment: bool },
    /// A TCP segment.
    Tcp(Box<ParsedFrame>),
    /// Unparseable; the parser's error says where and why.
    Malformed(Malformed, ParseError),
}

impl FrameClass {
    /// The parsed headers, for TCP and other IP frames.
    pub fn packet(&self) -> Option<&Packet> {
        match self {
            FrameClass::Tcp(p) => Some(&p.packet),
            FrameClass::NonTcp { parsed, .. } => Some(&parsed.packet),
            _ => None,
        }
    }
    /// The parsed frame with byte offsets, for TCP and other IP frames.
    pub fn parsed(&self) -> Option<&ParsedFrame> {
        match self {
            FrameClass::Tcp(p) => Some(p),
            FrameClass::NonTcp { parsed, .. } => Some(parsed),
            _ => None,
        }
    }
    pub fn is_malformed(&self) -> bool {
        matches!(self, FrameClass::Malformed(..))
    }
}

/// Classify one Ethernet frame (no FCS). Payload bytes are not copied into the `Packet`.
pub fn classify(frame: &[u8]) -> FrameClass {
    match Packet::parse_frame(frame) {
        Ok(pf) => {
            let fragment = pf.fragment;
            if !fragment && matches!(pf.packet.l4, L4::Tcp(_)) {
                FrameClass::Tcp(Box::new(pf))
            } else {
                FrameClass::NonTcp { parsed: Box::new(pf), fragment }
            }
        }
        Err(ParseError::NotIp { ethertype }) => FrameClass::NonIp { ethertype },
        Err(e @ ParseError::Truncated { .. }) => FrameClass::Malformed(Malformed::Truncated, e),
        Err(e @ ParseError::BadTcpOption { .. }) => FrameClass::Malformed(Malformed::BadTcpOptions, e),
        Err(e) => FrameClass::Malformed(Malformed::BadHeader, e),
    }
}

/// Whether a frame is a pure TCP ACK (no payload, no SYN/FIN/RST; not a fragment). Parses it
/// (≈ 0.1 µs): for statistics of frames the engine already sends, not for the receive path.
pub fn is_pure_ack_frame(frame: &[u8]) -> bool {
    Packet::parse_frame(frame).is_ok_and(|p| !p.fragment && p.packet.is_pure_ack())
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
                let t = p.packet.tcp().unwrap();
                assert_eq!((t.sport, t.dport), (1234, 80));
                assert!(t.flags.contains(ackshape_wire::TcpFlags::SYN));
                assert_eq!(t.opts.mss, Some(1460));
            }
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn pure_acks_are_told_from_data_and_control() {
        let ack = testing::tcp_frame([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000, 1, 0x10, &[], &[]);
        let data = testing::tcp_frame([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 1, 0x18, &[], &[1; 100]);
        let synack = testing::tcp_frame([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000, 1, 0x12, &[], &[]);
        let fin = testing::tcp_frame([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000, 1, 0x11, &[], &[]);
        assert!(is_pure_ack_frame(&ack));
        assert!(!is_pure_ack_frame(&data) && !is_pure_ack_frame(&synack) && !is_pure_ack_frame(&fin));
        assert!(!is_pure_ack_frame(&ack[..40]));
    }

    #[test]
    fn corpus_never_panics_and_mostly_malformed() {
        for corpus in [testing::malformed_corpus(42, 20_000), testing::extra_malformed_corpus(42, 20_000)] {
            let malformed = corpus.iter().filter(|f| classify(f).is_malformed()).count();
            assert!(malformed > corpus.len() / 3, "{malformed}");
        }
    }

    #[test]
    fn wire_corpus_kinds_classify_as_labelled() {
        for (kind, f) in ackshape_wire::testing::malformed_corpus_labeled(7, 5_000) {
            let c = classify(&f);
            match kind.parses() {
                Some(true) => assert!(!c.is_malformed(), "{kind:?} {c:?}"),
                Some(false) => assert!(c.is_malformed() || matches!(c, FrameClass::NonIp { .. }), "{kind:?} {c:?}"),
                None => {}
            }
        }
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
