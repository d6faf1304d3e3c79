//! Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Ours and small: the hot paths (serialising millions of simulated packets, patching a
//! live ACK) need a summing loop that works 8 bytes at a time and an update that touches
//! only the changed words. Full recomputation is cross-checked against etherparse in tests.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Adds `data` to a running one's-complement sum.
///
/// `data` must start at an even offset of the checksummed stream; if its length is odd,
/// it is treated as padded with one zero byte (so only the last segment may be odd).
/// The returned value is an unfolded accumulator; finish with [`fold`] or [`finish`].
#[inline]
pub fn sum_bytes(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        acc = add64(acc, u64::from_be_bytes(w));
    }
    let rem = chunks.remainder();
    if !rem.is_empty() {
        let mut w = [0u8; 8];
        w[..rem.len()].copy_from_slice(rem);
        acc = add64(acc, u64::from_be_bytes(w));
    }
    acc
}

/// One's-complement 64-bit addition (end-around carry).
#[inline(always)]
fn add64(a: u64, b: u64) -> u64 {
    let (s, o) = a.overflowing_add(b);
    s + o as u64
}

/// Adds one 16-bit word to a running sum.
#[inline(always)]
pub fn sum_u16(acc: u64, w: u16) -> u64 {
    add64(acc, w as u64)
}

/// Folds an accumulator to a 16-bit one's-complement sum (not inverted).
#[inline]
pub fn fold(mut s: u64) -> u16 {
    s = (s & 0xffff_ffff) + (s >> 32);
    s = (s & 0xffff_ffff) + (s >> 32);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s as u16
}

/// The checksum field value for an accumulated sum: `!fold(sum)`.
#[inline]
pub fn finish(s: u64) -> u16 {
    !fold(s)
}

/// `a` as an IPv4 address for a packet whose other address is IPv4: an IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`) maps down, any other IPv6 address becomes `0.0.0.0`. The serialiser writes
/// the header with it and [`pseudo_header_sum`] sums it, so the two agree.
pub(crate) fn v4_of(a: IpAddr) -> Ipv4Addr {
    match a {
        IpAddr::V4(a) => a,
        IpAddr::V6(a) => a.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
    }
}

/// `a` as an IPv6 address for a packet whose other address is IPv6: IPv4 maps to `::ffff:a.b.c.d`.
pub(crate) fn v6_of(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// Sum of the TCP/UDP pseudo-header (RFC 793 / RFC 8200 §8.1) for `l4_len` bytes of
/// transport header + payload. If the families differ, IPv4 addresses are mapped to IPv6
/// (`::ffff:a.b.c.d`) when `src` is IPv6, and IPv6 addresses are mapped down (or zero)
/// when `src` is IPv4 — the same rule the serialiser uses.
#[inline]
pub fn pseudo_header_sum(src: IpAddr, dst: IpAddr, proto: u8, l4_len: u32) -> u64 {
    let mut acc = 0u64;
    match src {
        IpAddr::V4(s) => {
            let d = v4_of(dst);
            acc = add64(acc, u32::from_be_bytes(s.octets()) as u64);
            acc = add64(acc, u32::from_be_bytes(d.octets()) as u64);
        }
        IpAddr::V6(s) => {
            let d = v6_of(dst);
            acc = sum_bytes(acc, &s.octets());
            acc = sum_bytes(acc, &d.octets());
        }
    }
    acc = add64(acc, proto as u64);
    add64(acc, l4_len as u64)
}

/// RFC 1624 eqn. 3: the new checksum field after 16-bit data word `old` became `new`.
#[inline]
pub fn update_u16(check: u16, old: u16, new: u16) -> u16 {
    // HC' = ~(~HC + ~m + m')
    let s = add64(add64(!check as u64, !old as u64), new as u64);
    !fold(s)
}

/// RFC 1624 for a 32-bit field (two 16-bit words).
#[inline]
pub fn update_u32(check: u16, old: u32, new: u32) -> u16 {
    let c = update_u16(check, (old >> 16) as u16, (new >> 16) as u16);
    update_u16(c, old as u16, new as u16)
}

/// RFC 1624 for a region: `old_sum`/`new_sum` are the folded one's-complement sums of the
/// region (aligned to the checksummed stream) before and after the change.
#[inline]
pub fn update_sums(check: u16, old_sum: u16, new_sum: u16) -> u16 {
    update_u16(check, old_sum, new_sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(data: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for c in data.chunks(2) {
            let w = if c.len() == 2 { u16::from_be_bytes([c[0], c[1]]) } else { (c[0] as u16) << 8 };
            s += w as u32;
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    #[test]
    fn matches_naive_and_internet_checksum() {
        let mut data = Vec::new();
        let mut x: u32 = 12345;
        for len in 0..300 {
            data.clear();
            for _ in 0..len {
                x = x.wrapping_mul(1103515245).wrapping_add(12345);
                data.push((x >> 16) as u8);
            }
            let ours = finish(sum_bytes(0, &data));
            assert_eq!(ours, naive(&data), "len {len}");
            let theirs = u16::from_be_bytes(internet_checksum::checksum(&data));
            assert_eq!(ours, theirs, "len {len}");
        }
    }

    #[test]
    fn incremental_matches_full() {
        let mut data: Vec<u8> = (0..64u32).map(|i| (i * 37 % 251) as u8).collect();
        let c0 = finish(sum_bytes(0, &data));
        let old = u16::from_be_bytes([data[10], data[11]]);
        data[10] = 0xff;
        data[11] = 0x00;
        let c1 = update_u16(c0, old, 0xff00);
        assert_eq!(c1, finish(sum_bytes(0, &data)));
        let old32 = u32::from_be_bytes([data[20], data[21], data[22], data[23]]);
        data[20..24].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        assert_eq!(update_u32(c1, old32, 0xdead_beef), finish(sum_bytes(0, &data)));
    }
}
