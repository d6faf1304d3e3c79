//! Receive-side reassembly: out-of-order ranges (for SACK and the advertised window) and,
//! with `carry_payload`, the out-of-order bytes themselves.

use bytes::Bytes;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub(crate) struct Reassembly {
    /// Out-of-order ranges above `rcv_nxt`: sorted, disjoint, coalesced.
    ranges: Vec<(u64, u64)>,
    pub ooo_bytes: u64,
    /// Out-of-order payload pieces keyed by start offset (may overlap; union = `ranges`).
    data: BTreeMap<u64, Bytes>,
    /// Most recently changed ranges, most recent first (RFC 2018 block order).
    recent: Vec<(u64, u64)>,
}

impl Reassembly {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Store `[s, e)` (strictly above rcv_nxt). Returns the range now containing it.
    pub fn insert(&mut self, s: u64, e: u64, payload: Option<Bytes>) -> (u64, u64) {
        let (mut l, mut r) = (s, e);
        let start = self.ranges.partition_point(|b| b.1 < l);
        let mut i = start;
        while i < self.ranges.len() && self.ranges[i].0 <= r {
            l = l.min(self.ranges[i].0);
            r = r.max(self.ranges[i].1);
            self.ooo_bytes -= self.ranges[i].1 - self.ranges[i].0;
            i += 1;
        }
        if i == start {
            self.ranges.insert(start, (l, r));
        } else {
            self.ranges[start] = (l, r);
            self.ranges.drain(start + 1..i);
        }
        self.ooo_bytes += r - l;
        if let Some(p) = payload {
            match self.data.get(&s) {
                Some(old) if old.len() >= p.len() => {}
                _ => {
                    self.data.insert(s, p);
                }
            }
        }
        self.recent.retain(|&(a, b)| b < l || a > r);
        self.recent.insert(0, (l, r));
        self.recent.truncate(4);
        (l, r)
    }

    /// Advance `rcv_nxt` over stored ranges now contiguous with it; hands stored payload
    /// in order to `deliver`. Returns the new `rcv_nxt`.
    pub fn advance(&mut self, mut rcv_nxt: u64, mut deliver: impl FnMut(Bytes)) -> u64 {
        let old = rcv_nxt;
        while let Some(&(l, r)) = self.ranges.first() {
            if l > rcv_nxt {
                break;
            }
            self.ooo_bytes -= r - l;
            rcv_nxt = rcv_nxt.max(r);
            self.ranges.remove(0);
        }
        if rcv_nxt == old {
            return rcv_nxt;
        }
        self.recent.retain(|&(_, b)| b > rcv_nxt);
        let mut pos = old;
        while let Some(entry) = self.data.first_entry() {
            let s = *entry.key();
            if s >= rcv_nxt {
                break;
            }
            let p = entry.remove();
            let e = s + p.len() as u64;
            if e > pos && s <= pos {
                deliver(p.slice((pos - s) as usize..));
                pos = e;
            }
        }
        rcv_nxt
    }

    /// SACK blocks to report, most recent first.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.recent
    }
}
