//! A FIFO of packets with stable ids, so that a packet in the middle can be removed or
//! replaced in O(1) (the removed slot becomes a tombstone, skipped at dequeue).

use ackshape_wire::Packet;
use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct Slots {
    q: VecDeque<Option<Packet>>,
    /// Id of `q[0]`.
    head_id: u64,
    live: usize,
    bytes: usize,
}

impl Slots {
    pub(crate) fn with_capacity(cap: usize) -> Slots {
        Slots { q: VecDeque::with_capacity(cap), head_id: 0, live: 0, bytes: 0 }
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.live
    }
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
    /// Appends; returns the packet's id.
    #[inline]
    pub(crate) fn push(&mut self, p: Packet) -> u64 {
        let id = self.head_id + self.q.len() as u64;
        self.bytes += p.ip_len();
        self.live += 1;
        self.q.push_back(Some(p));
        id
    }
    /// Removes the oldest live packet.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, Packet)> {
        loop {
            let s = self.q.pop_front()?;
            let id = self.head_id;
            self.head_id += 1;
            if let Some(p) = s {
                self.live -= 1;
                self.bytes -= p.ip_len();
                return Some((id, p));
            }
        }
    }
    #[inline]
    fn index(&self, id: u64) -> Option<usize> {
        if id < self.head_id {
            return None;
        }
        let i = (id - self.head_id) as usize;
        (i < self.q.len()).then_some(i)
    }
    #[inline]
    pub(crate) fn get(&self, id: u64) -> Option<&Packet> {
        self.q.get(self.index(id)?)?.as_ref()
    }
    /// Removes packet `id` (leaves a tombstone).
    pub(crate) fn take(&mut self, id: u64) -> Option<Packet> {
        let i = self.index(id)?;
        let p = self.q.get_mut(i)?.take()?;
        self.live -= 1;
        self.bytes -= p.ip_len();
        while let Some(None) = self.q.front() {
            self.q.pop_front();
            self.head_id += 1;
        }
        Some(p)
    }
    /// Puts `p` in the slot of packet `id`.
    pub(crate) fn replace(&mut self, id: u64, p: Packet) -> Replaced {
        let Some(i) = self.index(id) else { return Replaced::NotQueued(p) };
        let Some(slot) = self.q.get_mut(i) else { return Replaced::NotQueued(p) };
        self.bytes += p.ip_len();
        match slot.replace(p) {
            Some(old) => {
                self.bytes -= old.ip_len();
                Replaced::Old(old)
            }
            None => {
                self.live += 1;
                Replaced::WasTombstone
            }
        }
    }
}

/// Outcome of [`Slots::replace`].
pub(crate) enum Replaced {
    /// `p` took the slot; this is the packet it held.
    Old(Packet),
    /// The slot was a tombstone: `p` is now live there.
    WasTombstone,
    /// `id` is not in the queue: `p` is given back.
    NotQueued(Packet),
}
