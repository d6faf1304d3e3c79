//! Serialisation of a [`Packet`] into an exact, valid IP packet or Ethernet frame.

use crate::checksum::{finish, pseudo_header_sum, sum_bytes, v4_of, v6_of};
use crate::packet::{Packet, TcpOptions, L4};
use std::net::IpAddr;

/// Largest TCP options area (data offset 15 → 60-byte header).
pub const MAX_TCP_OPTIONS_LEN: usize = 40;

/// Ethertype of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// Ethertype of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// Ethertype of an 802.1Q VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;

/// IP protocol numbers used here.
pub const PROTO_TCP: u8 = 6;
/// UDP.
pub const PROTO_UDP: u8 = 17;

impl TcpOptions {
    /// Number of SACK blocks that are actually serialised: all of them unless the options
    /// would exceed [`MAX_TCP_OPTIONS_LEN`] (e.g. 4 blocks together with timestamps), in
    /// which case trailing blocks are dropped, as a real TCP would.
    #[inline]
    pub fn sack_len_on_wire(&self) -> usize {
        let base = self.wire_len_without_sack();
        let mut n = self.sack_len as usize;
        while n > 0 && base + 2 + 8 * n > MAX_TCP_OPTIONS_LEN {
            n -= 1;
        }
        n
    }

    #[inline]
    fn wire_len_without_sack(&self) -> usize {
        4 * self.mss.is_some() as usize
            + 2 * self.sack_permitted as usize
            + 10 * self.timestamps.is_some() as usize
            + 3 * self.wscale.is_some() as usize
    }

    /// Length of the options as serialised: [`TcpOptions::wire_len`] unless that exceeds 40
    /// bytes (then SACK blocks are dropped, see [`TcpOptions::sack_len_on_wire`]).
    #[inline]
    pub fn serialized_len(&self) -> usize {
        let n = self.sack_len_on_wire();
        let raw = self.wire_len_without_sack() + if n > 0 { 2 + 8 * n } else { 0 };
        (raw + 3) & !3
    }

    /// Zeroes the unused SACK slots, so that `==` compares only what is on the wire.
    pub fn normalize(&mut self) {
        let n = (self.sack_len as usize).min(crate::packet::MAX_SACK_BLOCKS);
        self.sack_len = n as u8;
        for b in &mut self.sack[n..] {
            *b = Default::default();
        }
    }

    /// Writes the options into `out` (which must be exactly `serialized_len()` bytes and
    /// zeroed): MSS, SACK-permitted, timestamps, window scale, SACK, then EOL padding.
    fn write_into(&self, out: &mut [u8]) {
        let mut i = 0;
        if let Some(mss) = self.mss {
            out[i] = 2;
            out[i + 1] = 4;
            out[i + 2..i + 4].copy_from_slice(&mss.to_be_bytes());
            i += 4;
        }
        if self.sack_permitted {
            out[i] = 4;
            out[i + 1] = 2;
            i += 2;
        }
        if let Some((tsval, tsecr)) = self.timestamps {
            out[i] = 8;
            out[i + 1] = 10;
            out[i + 2..i + 6].copy_from_slice(&tsval.to_be_bytes());
            out[i + 6..i + 10].copy_from_slice(&tsecr.to_be_bytes());
            i += 10;
        }
        if let Some(ws) = self.wscale {
            out[i] = 3;
            out[i + 1] = 3;
            out[i + 2] = ws;
            i += 3;
        }
        let n = self.sack_len_on_wire();
        if n > 0 {
            out[i] = 5;
            out[i + 1] = (2 + 8 * n) as u8;
            i += 2;
            for b in &self.sack[..n] {
                out[i..i + 4].copy_from_slice(&b.left.0.to_be_bytes());
                out[i + 4..i + 8].copy_from_slice(&b.right.0.to_be_bytes());
                i += 8;
            }
        }
        // Remaining bytes are already 0 = EOL.
        debug_assert!(i <= out.len());
    }
}

impl Packet {
    /// Transport header length as serialised (differs from [`Packet::l4_hdr_len`] only when
    /// TCP options exceed 40 bytes, see [`TcpOptions::serialized_len`]).
    #[inline]
    fn l4_hdr_len_on_wire(&self) -> usize {
        match &self.l4 {
            L4::Tcp(t) => 20 + t.opts.serialized_len(),
            L4::Udp(_) => 8,
            L4::Other { .. } => 0,
        }
    }

    /// Appends the Ethernet II frame carrying this packet to `out` (no FCS, no padding to
    /// 60 bytes). See [`Packet::write_ip`] for the IP part.
    ///
    /// Allocation: only what growing `out` needs; reuse one `Vec` across calls.
    pub fn write_frame(&self, src_mac: [u8; 6], dst_mac: [u8; 6], out: &mut Vec<u8>) {
        let ethertype = if self.ip.src.is_ipv4() { ETHERTYPE_IPV4 } else { ETHERTYPE_IPV6 };
        let mut eth = [0u8; 14];
        eth[..6].copy_from_slice(&dst_mac);
        eth[6..12].copy_from_slice(&src_mac);
        eth[12..].copy_from_slice(&ethertype.to_be_bytes());
        out.extend_from_slice(&eth);
        self.write_ip(out);
    }

    /// The frame as a new `Vec` (convenience; allocates).
    pub fn to_frame(&self, src_mac: [u8; 6], dst_mac: [u8; 6]) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.frame_len());
        self.write_frame(src_mac, dst_mac, &mut v);
        v
    }

    /// Appends the IP packet (no link layer) to `out`.
    ///
    /// - IPv4 if `ip.src` is IPv4 (20-byte header, DF set, given id/ttl/dscp/ecn, correct
    ///   header checksum), else IPv6 (traffic class = dscp/ecn, hop limit = ttl, flow label 0).
    ///   A destination of the other family is mapped (`::ffff:a.b.c.d`, or 0.0.0.0).
    /// - TCP: options in exactly `opts.wire_len()` bytes (order MSS, SACK-perm, TS, WS, SACK,
    ///   EOL padding); if they would exceed 40 bytes, trailing SACK blocks are dropped.
    ///   `has_other` cannot be reproduced (the unknown bytes are not kept) and is ignored.
    /// - UDP: length = 8 + payload.
    /// - TCP/UDP checksums over the pseudo-header are correct (UDP 0 is sent as 0xffff).
    /// - Payload: `payload_len` bytes: the `payload` bytes if present (truncated or
    ///   zero-padded to `payload_len` if their length differs), else zeros.
    /// - Lengths above the 16-bit length fields (no jumbograms) are saturated: such a packet
    ///   is not valid, but writing it does not panic.
    pub fn write_ip(&self, out: &mut Vec<u8>) {
        let ip_hdr_len = self.ip_hdr_len();
        let l4_hdr_len = self.l4_hdr_len_on_wire();
        let payload_len = self.payload_len as usize;
        let total = ip_hdr_len + l4_hdr_len + payload_len;
        let start = out.len();
        out.resize(start + total, 0);
        let buf = &mut out[start..];
        let (proto, l4_len) = match &self.l4 {
            L4::Tcp(_) => (PROTO_TCP, l4_hdr_len + payload_len),
            L4::Udp(_) => (PROTO_UDP, l4_hdr_len + payload_len),
            L4::Other { proto } => (*proto, payload_len),
        };
        let tos = (self.ip.dscp << 2) | (self.ip.ecn as u8);
        match self.ip.src {
            IpAddr::V4(src) => {
                let dst = v4_of(self.ip.dst);
                let h = &mut buf[..20];
                h[0] = 0x45;
                h[1] = tos;
                h[2..4].copy_from_slice(&(total.min(0xffff) as u16).to_be_bytes());
                h[4..6].copy_from_slice(&self.ip.id.to_be_bytes());
                h[6] = 0x40; // DF
                h[7] = 0;
                h[8] = self.ip.ttl;
                h[9] = proto;
                h[12..16].copy_from_slice(&src.octets());
                h[16..20].copy_from_slice(&dst.octets());
                let c = finish(sum_bytes(0, h));
                h[10..12].copy_from_slice(&c.to_be_bytes());
            }
            IpAddr::V6(src) => {
                let dst = v6_of(self.ip.dst);
                let h = &mut buf[..40];
                let first = (6u32 << 28) | ((tos as u32) << 20);
                h[0..4].copy_from_slice(&first.to_be_bytes());
                h[4..6].copy_from_slice(&(l4_len.min(0xffff) as u16).to_be_bytes());
                h[6] = proto;
                h[7] = self.ip.ttl;
                h[8..24].copy_from_slice(&src.octets());
                h[24..40].copy_from_slice(&dst.octets());
            }
        }
        let l4 = &mut buf[ip_hdr_len..];
        // Payload first, so the checksum can include it.
        let mut payload_sum = 0u64;
        if let Some(p) = &self.payload {
            let n = p.len().min(payload_len);
            let dst = &mut l4[l4_hdr_len..l4_hdr_len + n];
            dst.copy_from_slice(&p[..n]);
            payload_sum = sum_bytes(0, dst);
        }
        match &self.l4 {
            L4::Tcp(t) => {
                let h = &mut l4[..l4_hdr_len];
                h[0..2].copy_from_slice(&t.sport.to_be_bytes());
                h[2..4].copy_from_slice(&t.dport.to_be_bytes());
                h[4..8].copy_from_slice(&t.seq.0.to_be_bytes());
                h[8..12].copy_from_slice(&t.ack.0.to_be_bytes());
                h[12] = ((l4_hdr_len / 4) as u8) << 4;
                h[13] = t.flags.0;
                h[14..16].copy_from_slice(&t.window.to_be_bytes());
                h[18..20].copy_from_slice(&t.urgent.to_be_bytes());
                t.opts.write_into(&mut h[20..]);
                let mut s = pseudo_header_sum(self.ip.src, self.ip.dst, PROTO_TCP, l4_len as u32);
                s = sum_bytes(s, h);
                // The payload starts at an even offset (the header is a multiple of 4).
                let c = finish(add_acc(s, payload_sum)).to_be_bytes();
                h[16..18].copy_from_slice(&c);
            }
            L4::Udp(u) => {
                let h = &mut l4[..8];
                h[0..2].copy_from_slice(&u.sport.to_be_bytes());
                h[2..4].copy_from_slice(&u.dport.to_be_bytes());
                h[4..6].copy_from_slice(&(l4_len.min(0xffff) as u16).to_be_bytes());
                let mut s = pseudo_header_sum(self.ip.src, self.ip.dst, PROTO_UDP, l4_len as u32);
                s = sum_bytes(s, h);
                let mut c = finish(add_acc(s, payload_sum));
                if c == 0 {
                    c = 0xffff;
                }
                h[6..8].copy_from_slice(&c.to_be_bytes());
            }
            L4::Other { .. } => {}
        }
    }
}

#[inline(always)]
fn add_acc(a: u64, b: u64) -> u64 {
    let (s, o) = a.overflowing_add(b);
    s + o as u64
}
