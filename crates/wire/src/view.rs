//! In-place views for the live hot path: patch a TCP/IP frame's bytes and update the
//! checksums incrementally (RFC 1624) instead of re-serialising.
//!
//! Parse once with [`Packet::parse_frame`](crate::Packet::parse_frame), decide on the
//! [`Packet`](crate::Packet), then patch the original bytes through [`TcpFrameMut`].

use crate::checksum::{fold, sum_bytes, update_sums, update_u16, update_u32};
use crate::packet::{Ecn, SackBlock, TcpFlags, MAX_SACK_BLOCKS};
use crate::parse::ParsedFrame;
use crate::seq::SeqNum;
use crate::L4;

/// Why a view could not be made or a change could not be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    #[error("the parsed frame is not TCP (or is a fragment)")]
    NotTcp,
    #[error("buffer of {have} bytes is too short: need {need}")]
    Truncated { need: usize, have: usize },
    #[error("IP version nibble {0} at the IP offset is neither 4 nor 6")]
    BadIpVersion(u8),
    #[error("the TCP header has no SACK option to rewrite")]
    NoSackOption,
    #[error("{want} SACK blocks do not fit where the header has room for {room}")]
    NoRoom { want: usize, room: usize },
}

/// A mutable view of a TCP segment inside a frame (or an IP packet: use `ip_offset` 0).
///
/// Every setter keeps the TCP checksum (and for ECN the IPv4 header checksum) valid by an
/// incremental update: the cost is independent of the segment size.
#[derive(Debug)]
pub struct TcpFrameMut<'a> {
    buf: &'a mut [u8],
    ip: usize,
    tcp: usize,
    v4: bool,
}

#[inline(always)]
fn rd16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}
#[inline(always)]
fn rd32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl<'a> TcpFrameMut<'a> {
    /// A view over `frame` as described by `parsed` (from [`Packet::parse_frame`](crate::Packet::parse_frame)
    /// of the same bytes). Fails if it is not an unfragmented TCP segment.
    pub fn new(frame: &'a mut [u8], parsed: &ParsedFrame) -> Result<Self, ViewError> {
        if parsed.fragment || !matches!(parsed.packet.l4, L4::Tcp(_)) {
            return Err(ViewError::NotTcp);
        }
        Self::from_offsets(frame, parsed.ip_offset, parsed.l4_offset)
    }

    /// A view from known offsets. Checks only that the fixed IP header and the 20-byte
    /// TCP header (and its data offset) fit in `buf`; the caller vouches that it is TCP.
    pub fn from_offsets(buf: &'a mut [u8], ip_offset: usize, tcp_offset: usize) -> Result<Self, ViewError> {
        let have = buf.len();
        if ip_offset >= have {
            return Err(ViewError::Truncated { need: ip_offset + 1, have });
        }
        let v4 = match buf[ip_offset] >> 4 {
            4 => true,
            6 => false,
            v => return Err(ViewError::BadIpVersion(v)),
        };
        let ip_min = ip_offset + if v4 { 20 } else { 40 };
        let need = ip_min.max(tcp_offset.saturating_add(20));
        if have < need || tcp_offset < ip_min {
            return Err(ViewError::Truncated { need, have });
        }
        let hl = (buf[tcp_offset + 12] >> 4) as usize * 4;
        if hl < 20 || have < tcp_offset + hl {
            return Err(ViewError::Truncated { need: tcp_offset + hl.max(20), have });
        }
        Ok(TcpFrameMut { buf, ip: ip_offset, tcp: tcp_offset, v4 })
    }

    /// The underlying bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf
    }

    #[inline]
    fn check(&self) -> u16 {
        rd16(self.buf, self.tcp + 16)
    }
    #[inline]
    fn set_check(&mut self, c: u16) {
        self.buf[self.tcp + 16..self.tcp + 18].copy_from_slice(&c.to_be_bytes());
    }

    /// The TCP checksum field.
    pub fn checksum(&self) -> u16 {
        self.check()
    }
    pub fn window(&self) -> u16 {
        rd16(self.buf, self.tcp + 14)
    }
    pub fn seq(&self) -> SeqNum {
        SeqNum(rd32(self.buf, self.tcp + 4))
    }
    pub fn ack(&self) -> SeqNum {
        SeqNum(rd32(self.buf, self.tcp + 8))
    }
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buf[self.tcp + 13])
    }
    pub fn ecn(&self) -> Ecn {
        if self.v4 {
            Ecn::from_bits(self.buf[self.ip + 1])
        } else {
            Ecn::from_bits(self.buf[self.ip + 1] >> 4)
        }
    }

    /// Sets the raw (unscaled) window field.
    #[inline]
    pub fn set_window(&mut self, w: u16) {
        let old = self.window();
        let c = update_u16(self.check(), old, w);
        self.buf[self.tcp + 14..self.tcp + 16].copy_from_slice(&w.to_be_bytes());
        self.set_check(c);
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack(&mut self, ack: SeqNum) {
        let old = self.ack().0;
        let c = update_u32(self.check(), old, ack.0);
        self.buf[self.tcp + 8..self.tcp + 12].copy_from_slice(&ack.0.to_be_bytes());
        self.set_check(c);
    }

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq(&mut self, seq: SeqNum) {
        let old = self.seq().0;
        let c = update_u32(self.check(), old, seq.0);
        self.buf[self.tcp + 4..self.tcp + 8].copy_from_slice(&seq.0.to_be_bytes());
        self.set_check(c);
    }

    /// Sets the 8 flag bits (e.g. to set or clear ECE/CWR).
    #[inline]
    pub fn set_flags(&mut self, f: TcpFlags) {
        let i = self.tcp + 12;
        let old = rd16(self.buf, i);
        let new = (old & 0xff00) | f.0 as u16;
        let c = update_u16(self.check(), old, new);
        self.buf[i + 1] = f.0;
        self.set_check(c);
    }

    /// Sets the ECN codepoint of the IP header (IPv4: header checksum updated; the TCP
    /// checksum does not cover it).
    #[inline]
    pub fn set_ecn(&mut self, ecn: Ecn) {
        set_ip_ecn_at(self.buf, self.ip, self.v4, ecn);
    }

    /// Offset (in the buffer) and block count of the SACK option, if any.
    fn find_sack(&self) -> Option<(usize, usize)> {
        let hl = (self.buf[self.tcp + 12] >> 4) as usize * 4;
        let opts = &self.buf[self.tcp + 20..self.tcp + hl];
        let mut i = 0;
        while i < opts.len() {
            match opts[i] {
                0 => return None,
                1 => i += 1,
                k => {
                    let len = *opts.get(i + 1)? as usize;
                    if len < 2 || i + len > opts.len() {
                        return None;
                    }
                    if k == 5 {
                        if !(len - 2).is_multiple_of(8) {
                            return None;
                        }
                        return Some((self.tcp + 20 + i, (len - 2) / 8));
                    }
                    i += len;
                }
            }
        }
        None
    }

    /// The SACK blocks currently in the header (up to 4).
    pub fn sack_blocks(&self) -> ([SackBlock; MAX_SACK_BLOCKS], usize) {
        let mut out = [SackBlock::default(); MAX_SACK_BLOCKS];
        let Some((at, n)) = self.find_sack() else {
            return (out, 0);
        };
        let n = n.min(MAX_SACK_BLOCKS);
        for (k, b) in out.iter_mut().enumerate().take(n) {
            b.left = SeqNum(rd32(self.buf, at + 2 + 8 * k));
            b.right = SeqNum(rd32(self.buf, at + 6 + 8 * k));
        }
        (out, n)
    }

    /// Rewrites the existing SACK option in place with `blocks` (no more than it has room
    /// for; the header length never changes). Freed bytes become NOPs; with zero blocks the
    /// whole option becomes NOPs.
    pub fn set_sack_blocks(&mut self, blocks: &[SackBlock]) -> Result<(), ViewError> {
        let (at, room) = self.find_sack().ok_or(ViewError::NoSackOption)?;
        if blocks.len() > room {
            return Err(ViewError::NoRoom { want: blocks.len(), room });
        }
        let len = 2 + 8 * room;
        // Align the patched region to the 16-bit words of the TCP checksum stream.
        let lo = at - (at - self.tcp) % 2;
        let mut hi = at + len;
        if (hi - self.tcp) % 2 == 1 {
            hi += 1;
        }
        let old = fold(sum_bytes(0, &self.buf[lo..hi]));
        {
            let o = &mut self.buf[at..at + len];
            if blocks.is_empty() {
                o.fill(1);
            } else {
                o[1] = (2 + 8 * blocks.len()) as u8;
                for (k, b) in blocks.iter().enumerate() {
                    o[2 + 8 * k..6 + 8 * k].copy_from_slice(&b.left.0.to_be_bytes());
                    o[6 + 8 * k..10 + 8 * k].copy_from_slice(&b.right.0.to_be_bytes());
                }
                o[2 + 8 * blocks.len()..].fill(1);
            }
        }
        let new = fold(sum_bytes(0, &self.buf[lo..hi]));
        let c = update_sums(self.check(), old, new);
        self.set_check(c);
        Ok(())
    }
}

fn set_ip_ecn_at(buf: &mut [u8], ip: usize, v4: bool, ecn: Ecn) {
    if v4 {
        let old = rd16(buf, ip);
        let new = (old & !3) | ecn as u16;
        let c = update_u16(rd16(buf, ip + 10), old, new);
        buf[ip + 1] = new as u8;
        buf[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    } else {
        // Traffic class is bits 4..11 of the first word; ECN its low 2 bits.
        buf[ip + 1] = (buf[ip + 1] & !0x30) | ((ecn as u8) << 4);
    }
}

/// Sets the ECN codepoint of any IPv4/IPv6 packet at `ip_offset` in `frame` (IPv4 header
/// checksum updated incrementally).
pub fn set_ip_ecn(frame: &mut [u8], ip_offset: usize, ecn: Ecn) -> Result<(), ViewError> {
    let have = frame.len();
    let first = *frame.get(ip_offset).ok_or(ViewError::Truncated { need: ip_offset + 1, have })?;
    let v4 = match first >> 4 {
        4 => true,
        6 => false,
        v => return Err(ViewError::BadIpVersion(v)),
    };
    let need = ip_offset + if v4 { 20 } else { 40 };
    if have < need {
        return Err(ViewError::Truncated { need, have });
    }
    set_ip_ecn_at(frame, ip_offset, v4, ecn);
    Ok(())
}
