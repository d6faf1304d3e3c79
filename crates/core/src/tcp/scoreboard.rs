//! SACK scoreboard (RFC 6675): a small sorted vector of disjoint SACKed ranges, in stream
//! offsets (u64, no wrap-around), all above the cumulative ACK point.

#[derive(Clone, Debug, Default)]
pub(crate) struct Scoreboard {
    blocks: Vec<(u64, u64)>,
    sacked: u64,
}

impl Scoreboard {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Forget every SACKed range (ns-2 `ScoreBoard::ClearScoreBoard`).
    pub fn clear(&mut self) {
        self.blocks.clear();
        self.sacked = 0;
    }

    /// Mark `[l, r)` SACKed; returns the number of newly SACKed bytes.
    pub fn add(&mut self, mut l: u64, mut r: u64) -> u64 {
        if l >= r {
            return 0;
        }
        let before = self.sacked;
        let start = self.blocks.partition_point(|b| b.1 < l);
        let mut i = start;
        while i < self.blocks.len() && self.blocks[i].0 <= r {
            l = l.min(self.blocks[i].0);
            r = r.max(self.blocks[i].1);
            self.sacked -= self.blocks[i].1 - self.blocks[i].0;
            i += 1;
        }
        if i == start {
            self.blocks.insert(start, (l, r));
        } else {
            self.blocks[start] = (l, r);
            self.blocks.drain(start + 1..i);
        }
        self.sacked += r - l;
        self.sacked - before
    }

    /// Forget everything below the cumulative ACK point `una`.
    pub fn advance(&mut self, una: u64) {
        if self.blocks.is_empty() || self.blocks[0].0 >= una {
            return;
        }
        let mut n = 0;
        for b in self.blocks.iter_mut() {
            if b.1 <= una {
                self.sacked -= b.1 - b.0;
                n += 1;
            } else {
                if b.0 < una {
                    self.sacked -= una - b.0;
                    b.0 = una;
                }
                break;
            }
        }
        self.blocks.drain(..n);
    }

    /// SACKed bytes inside `[a, b)`.
    pub fn sacked_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut s = 0;
        for &(l, r) in &self.blocks {
            if r <= a {
                continue;
            }
            if l >= b {
                break;
            }
            s += r.min(b) - l.max(a);
        }
        s
    }

    /// Highest SACKed offset (exclusive).
    pub fn highest(&self) -> Option<u64> {
        self.blocks.last().map(|b| b.1)
    }

    /// RFC 6675 IsLost as a boundary: un-SACKed bytes below the returned offset have more
    /// than `thresh` bytes SACKed above them (thresh = (DupThresh − 1)·MSS).
    pub fn lost_boundary(&self, thresh: u64) -> Option<u64> {
        let mut acc = 0;
        for &(l, r) in self.blocks.iter().rev() {
            acc += r - l;
            if acc > thresh {
                return Some(l);
            }
        }
        None
    }

    /// Highest un-SACKed range `[s, e)` inside `[from, limit)`.
    pub fn last_hole(&self, from: u64, limit: u64) -> Option<(u64, u64)> {
        let mut e = limit;
        for &(l, r) in self.blocks.iter().rev() {
            if l >= e {
                continue;
            }
            if r >= e {
                e = l; // e was inside the block: the hole ends at its left edge
                continue;
            }
            // r < e: hole [r, e)
            return (r.max(from) < e).then_some((r.max(from), e));
        }
        (from < e).then_some((from, e))
    }

    /// First un-SACKed range `[s, e)` with `from <= s < limit`; `e` is capped at `limit`.
    pub fn next_hole(&self, from: u64, limit: u64) -> Option<(u64, u64)> {
        let mut s = from;
        for &(l, r) in &self.blocks {
            if r <= s {
                continue;
            }
            if l <= s {
                s = r;
                continue;
            }
            // s < l: hole [s, l)
            if s >= limit {
                return None;
            }
            return Some((s, l.min(limit)));
        }
        if s >= limit {
            None
        } else {
            Some((s, limit))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn merge_and_holes() {
        let mut sb = Scoreboard::default();
        assert_eq!(sb.add(10, 20), 10);
        assert_eq!(sb.add(30, 40), 10);
        assert_eq!(sb.add(15, 32), 10);
        assert_eq!(sb.blocks, vec![(10, 40)]);
        assert_eq!(sb.add(50, 60), 10);
        assert_eq!(sb.next_hole(0, 100), Some((0, 10)));
        assert_eq!(sb.next_hole(10, 100), Some((40, 50)));
        assert_eq!(sb.next_hole(55, 100), Some((60, 100)));
        assert_eq!(sb.next_hole(40, 45), Some((40, 45)));
        assert_eq!(sb.sacked_in(0, 100), 40);
        assert_eq!(sb.lost_boundary(10), Some(10));
        assert_eq!(sb.lost_boundary(9), Some(50));
        assert_eq!(sb.last_hole(0, 100), Some((60, 100)));
        assert_eq!(sb.last_hole(0, 60), Some((40, 50)));
        assert_eq!(sb.last_hole(45, 60), Some((45, 50)));
        assert_eq!(sb.last_hole(0, 15), Some((0, 10)));
        assert_eq!(sb.last_hole(12, 15), None);
        sb.advance(35);
        assert_eq!(sb.sacked_in(0, 100), 15);
        sb.advance(70);
        assert!(sb.is_empty());
    }
}
