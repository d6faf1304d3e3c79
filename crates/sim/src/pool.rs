//! Packets in flight, by index: a packet is stored once when a host or a box emits it and
//! links, queues and delay lines move a 4-byte handle instead of the ~160-byte [`Packet`].
//! Its IP length (what a link serialises) is computed once, on entry.

use ackshape_wire::{IpHdr, Packet, L4};
use std::net::{IpAddr, Ipv4Addr};

/// Index of a packet in a [`PacketPool`].
pub type Pkt = u32;

/// A slab of packets with their IP lengths; freed slots are reused (LIFO, so the slots in use
/// stay few and warm in cache).
#[derive(Default)]
pub struct PacketPool {
    pkts: Vec<Packet>,
    lens: Vec<u32>,
    free: Vec<Pkt>,
}

/// What a slot holds after [`PacketPool::take`] (never read).
fn placeholder() -> Packet {
    let a = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    Packet {
        ip: IpHdr { src: a, dst: a, ttl: 0, dscp: 0, ecn: Default::default(), id: 0 },
        l4: L4::Other { proto: 0 },
        payload_len: 0,
        payload: None,
    }
}

impl PacketPool {
    /// Store `p`; its handle.
    #[inline]
    pub fn put(&mut self, p: Packet) -> Pkt {
        let len = p.ip_len() as u32;
        match self.free.pop() {
            Some(h) => {
                self.pkts[h as usize] = p;
                self.lens[h as usize] = len;
                h
            }
            None => {
                self.pkts.push(p);
                self.lens.push(len);
                self.pkts.len() as Pkt - 1
            }
        }
    }

    #[inline]
    pub fn get(&self, h: Pkt) -> &Packet {
        &self.pkts[h as usize]
    }

    /// IP length of packet `h` (header + transport header + payload).
    #[inline]
    pub fn len(&self, h: Pkt) -> usize {
        self.lens[h as usize] as usize
    }

    /// Release slot `h` (its payload bytes, if any, are dropped now).
    #[inline]
    pub fn free(&mut self, h: Pkt) {
        let p = &mut self.pkts[h as usize];
        if p.payload.is_some() {
            p.payload = None;
        }
        self.free.push(h);
    }

    /// Move packet `h` out and release its slot.
    #[inline]
    pub fn take(&mut self, h: Pkt) -> Packet {
        self.free.push(h);
        std::mem::replace(&mut self.pkts[h as usize], placeholder())
    }

    /// Slots in use.
    pub fn in_use(&self) -> usize {
        self.pkts.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackshape_wire::{TcpHdr, UdpHdr};

    fn udp(len: u32) -> Packet {
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        Packet {
            ip: IpHdr { src: a, dst: a, ttl: 64, dscp: 0, ecn: Default::default(), id: 0 },
            l4: L4::Udp(UdpHdr { sport: 1, dport: 2 }),
            payload_len: len,
            payload: None,
        }
    }

    #[test]
    fn slots_are_reused_and_lengths_follow_the_packet() {
        let mut p = PacketPool::default();
        let a = p.put(udp(100));
        let b = p.put(udp(200));
        assert_eq!((p.len(a), p.len(b)), (128, 228));
        p.free(a);
        let c = p.put(udp(0));
        assert_eq!(c, a, "a freed slot is reused first");
        assert_eq!(p.len(c), 28);
        let taken = p.take(b);
        assert_eq!(taken.payload_len, 200);
        assert_eq!(p.in_use(), 1);
        let mut t = udp(0);
        t.l4 = L4::Tcp(TcpHdr::default());
        let d = p.put(t);
        assert_eq!(d, b);
        assert_eq!(p.len(d), 40);
        assert!(p.get(d).tcp().is_some());
    }
}
