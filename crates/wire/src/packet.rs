//! The compact packet representation shared by the simulator and the live gateway.
//!
//! See the crate doc for why headers are kept as a struct rather than bytes.

use crate::seq::SeqNum;
use bytes::Bytes;
use std::net::IpAddr;

/// ECN codepoint of the IP header (RFC 3168).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    #[default]
    NotEct = 0,
    Ect1 = 1,
    Ect0 = 2,
    Ce = 3,
}

impl Ecn {
    pub fn from_bits(b: u8) -> Ecn {
        match b & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

/// IP header fields that ackshape reads or writes. IPv4 or IPv6 is decided by the address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpHdr {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ttl: u8,
    pub dscp: u8,
    pub ecn: Ecn,
    /// IPv4 identification (ignored for IPv6).
    pub id: u16,
}

/// TCP flag bits, in wire order (FIN = bit 0 … CWR = bit 7).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const URG: TcpFlags = TcpFlags(0x20);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);
    #[inline]
    pub fn contains(self, o: TcpFlags) -> bool {
        self.0 & o.0 == o.0
    }
    #[inline]
    pub fn insert(&mut self, o: TcpFlags) {
        self.0 |= o.0;
    }
    #[inline]
    pub fn remove(&mut self, o: TcpFlags) {
        self.0 &= !o.0;
    }
}
impl core::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, o: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | o.0)
    }
}
impl core::fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        const N: [&str; 8] = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
        let mut first = true;
        for (i, n) in N.iter().enumerate() {
            if self.0 & (1 << i) != 0 {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(n)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// One SACK block `[left, right)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub left: SeqNum,
    pub right: SeqNum,
}

/// Maximum number of SACK blocks carried (4 without timestamps, 3 with; we cap at 4).
pub const MAX_SACK_BLOCKS: usize = 4;

/// TCP options ackshape understands. Unknown options are only flagged (`has_other`):
/// the live path keeps them by patching the original frame in place
/// ([`crate::view::TcpFrameMut`]) rather than re-serialising it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr)
    pub timestamps: Option<(u32, u32)>,
    pub sack_len: u8,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    /// True if the header carried options other than MSS/WS/SACK-perm/SACK/TS/NOP/EOL.
    pub has_other: bool,
}

impl TcpOptions {
    #[inline]
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
    pub fn set_sack_blocks(&mut self, blocks: &[SackBlock]) {
        let n = blocks.len().min(MAX_SACK_BLOCKS);
        self.sack[..n].copy_from_slice(&blocks[..n]);
        self.sack_len = n as u8;
    }
}

/// TCP header fields.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TcpHdr {
    pub sport: u16,
    pub dport: u16,
    pub seq: SeqNum,
    pub ack: SeqNum,
    pub flags: TcpFlags,
    /// Raw 16-bit window field (unscaled).
    pub window: u16,
    pub urgent: u16,
    pub opts: TcpOptions,
}

/// UDP header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UdpHdr {
    pub sport: u16,
    pub dport: u16,
}

/// Transport layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum L4 {
    Tcp(TcpHdr),
    Udp(UdpHdr),
    /// Any other IP protocol; ackshape forwards it untouched.
    Other {
        proto: u8,
    },
}

/// A packet: parsed headers plus a payload that is either real bytes (live path,
/// or simulations that verify content) or only a length (fast simulation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub ip: IpHdr,
    pub l4: L4,
    /// Transport payload length in bytes.
    pub payload_len: u32,
    /// Payload bytes, when carried. If `Some`, its length equals `payload_len`.
    pub payload: Option<Bytes>,
}

impl Packet {
    #[inline]
    pub fn tcp(&self) -> Option<&TcpHdr> {
        match &self.l4 {
            L4::Tcp(t) => Some(t),
            _ => None,
        }
    }
    #[inline]
    pub fn tcp_mut(&mut self) -> Option<&mut TcpHdr> {
        match &mut self.l4 {
            L4::Tcp(t) => Some(t),
            _ => None,
        }
    }
    /// A pure ACK: TCP, ACK set, no payload, no SYN/FIN/RST.
    #[inline]
    pub fn is_pure_ack(&self) -> bool {
        match &self.l4 {
            L4::Tcp(t) => {
                self.payload_len == 0
                    && t.flags.contains(TcpFlags::ACK)
                    && t.flags.0 & (TcpFlags::SYN.0 | TcpFlags::FIN.0 | TcpFlags::RST.0) == 0
            }
            _ => false,
        }
    }
}

impl TcpOptions {
    /// Length in bytes of the serialised options, padded to a multiple of 4.
    /// Serialisation packs options and pads with NOP/EOL so that it is exactly this long.
    #[inline]
    pub fn wire_len(&self) -> usize {
        let mut n = 0usize;
        if self.mss.is_some() {
            n += 4;
        }
        if self.sack_permitted {
            n += 2;
        }
        if self.timestamps.is_some() {
            n += 10;
        }
        if self.wscale.is_some() {
            n += 3;
        }
        if self.sack_len > 0 {
            n += 2 + 8 * self.sack_len as usize;
        }
        (n + 3) & !3
    }
}

impl Packet {
    /// IP header length (20 for IPv4 without options, 40 for IPv6).
    #[inline]
    pub fn ip_hdr_len(&self) -> usize {
        if self.ip.src.is_ipv4() {
            20
        } else {
            40
        }
    }
    /// Transport header length including options.
    #[inline]
    pub fn l4_hdr_len(&self) -> usize {
        match &self.l4 {
            L4::Tcp(t) => 20 + t.opts.wire_len(),
            L4::Udp(_) => 8,
            L4::Other { .. } => 0,
        }
    }
    /// Length of the IP packet (IP header + transport header + payload): what a
    /// simulated link serialises.
    #[inline]
    pub fn ip_len(&self) -> usize {
        self.ip_hdr_len() + self.l4_hdr_len() + self.payload_len as usize
    }
    /// Length of the Ethernet frame carrying it (14-byte header, no FCS).
    #[inline]
    pub fn frame_len(&self) -> usize {
        14 + self.ip_len()
    }
}
