//! Packet substitution records and ACK translation (paper 003 Sec. 3.2, Ch. 4).
//!
//! The [`Translator`] holds the PSRs of a VPS group, linked into one list per actual flow
//! (ordered by actual sequence) and one per virtual flow (ordered by virtual sequence). It turns
//! an actual ACK (cumulative point and SACK blocks) into virtual ACKs, marks lost packets
//! (P3-6: literally, as soon as one SACK block lies above an unacknowledged packet), buffers
//! translations that would open a false hole (Sec. 4.4) and frees a PSR once both the actual
//! and the virtual cumulative ACK have passed it.
//!
//! Units: actual sequence numbers are stream offsets with a length (an actual segment may be
//! shorter than the MSS at the end of the data); virtual sequence numbers count unit segments.

use std::collections::VecDeque;

/// State of a PSR (Sec. 3.2): unacknowledged, received (translated), lost, buffered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PsrState {
    U,
    R,
    L,
    B,
}

const ST_MASK: u8 = 0b11;
const ST_U: u8 = 0;
const ST_R: u8 = 1;
const ST_L: u8 = 2;
const ST_B: u8 = 3;
/// Acknowledged by the actual ACK being translated now (groups it into that ACK's virtual ACK).
const FRESH: u8 = 0b100;
/// Its virtual ACK has been delivered (survives the reset to U after an actual timeout, so a
/// virtual segment is never acknowledged twice).
const VACKED: u8 = 0b1000;
/// Passed by its actual flow's cumulative ACK but still held by its virtual flow's list.
const RETAINED: u8 = 0b10000;

/// One packet substitution record: actual segment `[a_seq, a_seq + a_len)` of actual flow
/// `a_id` carries virtual segment `v_seq` of virtual flow `v_id`.
///
/// 24 bytes (the thesis counts 18: four 4-byte numbers, a state byte and a reference count; we
/// keep the actual sequence number as a 64-bit stream offset plus an explicit length).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Psr {
    a_seq: u64,
    v_seq: u32,
    a_len: u16,
    a_id: u16,
    v_id: u16,
    state: u8,
    /// Lists still holding this record (actual, virtual): freed at 0.
    refs: u8,
}

impl Psr {
    #[inline]
    fn st(&self) -> u8 {
        self.state & ST_MASK
    }
    #[inline]
    fn set(&mut self, st: u8) {
        self.state = (self.state & !ST_MASK) | st;
    }
    #[inline]
    fn end(&self) -> u64 {
        self.a_seq + self.a_len as u64
    }
    fn view(&self) -> PsrView {
        PsrView {
            a_id: self.a_id as usize,
            a_seq: self.a_seq,
            a_len: self.a_len as u64,
            v_id: self.v_id as usize,
            v_seq: self.v_seq as u64,
            state: match self.st() {
                ST_U => PsrState::U,
                ST_R => PsrState::R,
                ST_L => PsrState::L,
                _ => PsrState::B,
            },
            virtual_acked: self.state & VACKED != 0,
        }
    }
}

/// A PSR as seen from outside (tests, debugging).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsrView {
    pub a_id: usize,
    pub a_seq: u64,
    pub a_len: u64,
    pub v_id: usize,
    pub v_seq: u64,
    pub state: PsrState,
    /// Its virtual ACK has been delivered.
    pub virtual_acked: bool,
}

/// Size of one PSR in memory, bytes.
pub const PSR_BYTES: usize = std::mem::size_of::<Psr>();

/// A virtual ACK for virtual flow `v`: everything below `cum` and the `sacks` ranges
/// (half-open, in virtual segments, any number of them) have been received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualAck {
    pub v: usize,
    pub cum: u64,
    pub sacks: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Default)]
struct AList {
    list: VecDeque<u32>,
}

#[derive(Clone, Debug, Default)]
struct VList {
    /// Virtual sequence of `list[0]`.
    base: u64,
    /// First virtual segment whose virtual ACK has not been delivered (the virtual flow's SND.UNA).
    cum: u64,
    list: VecDeque<u32>,
}

/// Translation counters.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct TranslatorStats {
    pub psr_created: u64,
    pub psr_freed: u64,
    pub psr_live_max: u64,
    /// U → L (an unacknowledged packet with a SACK block above it).
    pub lost_marked: u64,
    /// L → acknowledged (a retransmission arrived, or the packet was only reordered).
    pub lost_acked: u64,
    /// Translations held back (B) because an earlier virtual segment was still U.
    pub buffered: u64,
    /// Virtual ACKs generated.
    pub virtual_acks: u64,
    /// Virtual duplicate ACKs (the cumulative point did not move).
    pub virtual_dupacks: u64,
    /// PSRs examined while translating actual ACKs (the thesis's scan iterations).
    pub scan_iterations: u64,
}

/// The PSR tables of one VPS group and the ACK translation.
#[derive(Clone, Debug)]
pub struct Translator {
    psr: Vec<Psr>,
    free: Vec<u32>,
    live: u64,
    actual: Vec<AList>,
    virt: Vec<VList>,
    /// Per actual flow: records its cumulative ACK has passed that a virtual flow still holds.
    retained: Vec<u64>,
    /// False-duplicate-ACK suppression (Sec. 4.4); off translates at once (ablation).
    suppression: bool,
    fresh: Vec<u32>,
    touched: Vec<u16>,
    pending: Vec<(u32, bool)>,
    /// PSRs that entered B while translating the last actual ACK (newly buffered).
    pub(crate) newly_buffered: Vec<u32>,
    /// PSRs released from B while translating the last actual ACK.
    pub(crate) released: Vec<u32>,
    /// PSRs reset from B to U by the last actual timeout.
    pub(crate) reset_buffered: Vec<u32>,
    stats: TranslatorStats,
}

impl Translator {
    /// Tables for `n_actual` actual and `n_virtual` virtual flows (virtual sequences from 0).
    pub fn new(n_actual: usize, n_virtual: usize, suppression: bool) -> Translator {
        Translator {
            psr: Vec::new(),
            free: Vec::new(),
            live: 0,
            actual: vec![AList::default(); n_actual],
            virt: vec![VList::default(); n_virtual],
            retained: vec![0; n_actual],
            suppression,
            fresh: Vec::new(),
            touched: Vec::new(),
            pending: Vec::new(),
            newly_buffered: Vec::new(),
            released: Vec::new(),
            reset_buffered: Vec::new(),
            stats: TranslatorStats::default(),
        }
    }

    /// Start virtual flow `v`'s sequence at `v_seq` (tests that number from 1, like the thesis).
    pub fn set_virtual_base(&mut self, v: usize, v_seq: u64) {
        let vl = &mut self.virt[v];
        assert!(vl.list.is_empty(), "set the base before the first PSR");
        vl.base = v_seq;
        vl.cum = v_seq;
    }

    pub fn stats(&self) -> &TranslatorStats {
        &self.stats
    }

    /// Live PSRs.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// Records of actual flow `a` that its cumulative ACK has passed but that a virtual flow still
    /// holds (the thesis frees a PSR only once both edges have passed it, Sec. 4.6, so a list
    /// linked from both sides still holds them at its head).
    pub fn retained(&self, a: usize) -> u64 {
        self.retained[a]
    }

    /// A virtual new packet `v_seq` of virtual flow `v` was substituted by actual new segment
    /// `[a_seq, a_seq + a_len)` of actual flow `a`: create its PSR in state U.
    ///
    /// Virtual sequences of one virtual flow and actual sequences of one actual flow must come
    /// in increasing order (each list is appended to).
    pub fn substitute(&mut self, a: usize, a_seq: u64, a_len: u64, v: usize, v_seq: u64) {
        let vl = &mut self.virt[v];
        debug_assert_eq!(v_seq, vl.base + vl.list.len() as u64, "virtual flow {v}: out-of-order substitution");
        if vl.list.is_empty() {
            vl.base = v_seq;
        }
        let p = Psr {
            a_seq,
            v_seq: v_seq as u32,
            a_len: a_len.min(u16::MAX as u64) as u16,
            a_id: a as u16,
            v_id: v as u16,
            state: ST_U,
            refs: 2,
        };
        let idx = match self.free.pop() {
            Some(i) => {
                self.psr[i as usize] = p;
                i
            }
            None => {
                self.psr.push(p);
                self.psr.len() as u32 - 1
            }
        };
        self.actual[a].list.push_back(idx);
        self.virt[v].list.push_back(idx);
        self.live += 1;
        self.stats.psr_created += 1;
        self.stats.psr_live_max = self.stats.psr_live_max.max(self.live);
    }

    fn unref(&mut self, idx: u32) {
        let p = &mut self.psr[idx as usize];
        p.refs -= 1;
        if p.refs == 0 && p.state & RETAINED != 0 {
            p.state &= !RETAINED;
            self.retained[p.a_id as usize] -= 1;
        }
        if p.refs == 0 {
            self.free.push(idx);
            self.live -= 1;
            self.stats.psr_freed += 1;
        }
    }

    /// The PSR of actual flow `a` whose segment starts at `a_seq` (also once the actual
    /// cumulative ACK has passed it, while its virtual flow still holds it).
    pub fn find_actual(&self, a: usize, a_seq: u64) -> Option<PsrView> {
        let l = &self.actual[a].list;
        let i = l.partition_point(|&x| self.psr[x as usize].a_seq < a_seq);
        if let Some(p) = l.get(i).map(|&x| self.psr[x as usize]).filter(|p| p.a_seq == a_seq) {
            return Some(p.view());
        }
        self.virt
            .iter()
            .flat_map(|v| v.list.iter())
            .map(|&x| self.psr[x as usize])
            .find(|p| p.a_id as usize == a && p.a_seq == a_seq)
            .map(|p| p.view())
    }

    /// The PSR of virtual segment `v_seq` of virtual flow `v`, while it is still held.
    pub fn find_virtual(&self, v: usize, v_seq: u64) -> Option<PsrView> {
        let vl = &self.virt[v];
        let k = v_seq.checked_sub(vl.base)?;
        vl.list.get(k as usize).map(|&x| self.psr[x as usize].view())
    }

    /// Every live PSR, by actual flow then actual sequence (tests, debugging).
    pub fn records(&self) -> Vec<PsrView> {
        let mut seen = vec![false; self.psr.len()];
        let mut out = Vec::new();
        for l in self.actual.iter().map(|a| &a.list).chain(self.virt.iter().map(|v| &v.list)) {
            for &x in l {
                if !std::mem::replace(&mut seen[x as usize], true) {
                    out.push(self.psr[x as usize].view());
                }
            }
        }
        out.sort_by_key(|p| (p.a_id, p.a_seq));
        out
    }

    /// The virtual flow's cumulative point: first virtual segment not yet acknowledged.
    pub fn virtual_cum(&self, v: usize) -> u64 {
        self.virt[v].cum
    }

    /// Translate an actual ACK of actual flow `a`: cumulative point `cum`, the ACK's SACK
    /// blocks `sacks` and the highest SACKed offset the flow knows of (`sack_hi`, for the loss
    /// marking). Virtual ACKs are appended to `out` in the order they are to be delivered.
    /// Returns the number of PSRs scanned.
    pub fn on_actual_ack(
        &mut self,
        a: usize,
        cum: u64,
        sacks: &[(u64, u64)],
        sack_hi: Option<u64>,
        out: &mut Vec<VirtualAck>,
    ) -> u64 {
        self.fresh.clear();
        self.touched.clear();
        self.newly_buffered.clear();
        self.released.clear();
        let mut hi = cum;
        for &(_, r) in sacks {
            hi = hi.max(r);
        }
        if let Some(h) = sack_hi {
            hi = hi.max(h);
        }
        let mut iters = 0;
        let list = &self.actual[a].list;
        for &idx in list {
            iters += 1;
            let p = &mut self.psr[idx as usize];
            if p.a_seq >= hi {
                break;
            }
            let end = p.end();
            let acked = end <= cum || sacks.iter().any(|&(l, r)| l <= p.a_seq && end <= r);
            let st = p.st();
            if acked {
                if st == ST_U || st == ST_L {
                    if st == ST_L {
                        self.stats.lost_acked += 1;
                    }
                    p.set(ST_B);
                    p.state |= FRESH;
                    self.fresh.push(idx);
                    if !self.touched.contains(&p.v_id) {
                        self.touched.push(p.v_id);
                    }
                }
            } else if st == ST_U && sack_hi.is_some_and(|h| end <= h) {
                // P3-6: lost as soon as one SACK block lies above it.
                p.set(ST_L);
                self.stats.lost_marked += 1;
                if !self.touched.contains(&p.v_id) {
                    self.touched.push(p.v_id);
                }
            }
        }
        self.stats.scan_iterations += iters;
        // The actual cumulative ACK has passed these records.
        while let Some(&idx) = self.actual[a].list.front() {
            if self.psr[idx as usize].end() > cum {
                break;
            }
            self.actual[a].list.pop_front();
            let p = &mut self.psr[idx as usize];
            if p.refs > 1 {
                p.state |= RETAINED;
                self.retained[a] += 1;
            }
            self.unref(idx);
        }
        let touched = std::mem::take(&mut self.touched);
        for &v in &touched {
            self.release(v as usize, out);
        }
        self.touched = touched;
        for i in 0..self.fresh.len() {
            let idx = self.fresh[i];
            let p = &mut self.psr[idx as usize];
            if p.state & FRESH != 0 {
                p.state &= !FRESH;
                if p.st() == ST_B {
                    self.stats.buffered += 1;
                    self.newly_buffered.push(idx);
                }
            }
        }
        iters
    }

    /// Deliver what virtual flow `v` may now be told, in virtual-sequence order: acknowledged
    /// records (B) below which every unacknowledged record is lost (L). Records acknowledged by
    /// the current actual ACK share one virtual ACK; each record released from earlier buffering
    /// gets its own (it stands for an earlier actual ACK).
    fn release(&mut self, v: usize, out: &mut Vec<VirtualAck>) {
        let vl = &self.virt[v];
        let start = (vl.cum - vl.base) as usize;
        self.pending.clear();
        for k in start..vl.list.len() {
            let idx = vl.list[k];
            let p = &mut self.psr[idx as usize];
            if p.state & VACKED != 0 {
                if p.st() == ST_B {
                    // Acknowledged again after the reset of an actual timeout: already told.
                    p.set(ST_R);
                    p.state &= !FRESH;
                }
                continue;
            }
            match p.st() {
                ST_L => continue,
                ST_U if self.suppression => break,
                ST_U => continue,
                ST_B => self.pending.push((idx, p.state & FRESH != 0)),
                _ => continue,
            }
        }
        let mut i = 0;
        let pending = std::mem::take(&mut self.pending);
        while i < pending.len() {
            let fresh = pending[i].1;
            let mut j = i + 1;
            if fresh {
                while j < pending.len() && pending[j].1 {
                    j += 1;
                }
            }
            for &(x, f) in &pending[i..j] {
                let p = &mut self.psr[x as usize];
                p.set(ST_R);
                p.state = (p.state & !FRESH) | VACKED;
                if !f {
                    self.released.push(x);
                }
            }
            out.push(self.virtual_ack(v));
            i = j;
        }
        self.pending = pending;
        // Reclaim records the virtual cumulative ACK has passed.
        loop {
            let vl = &mut self.virt[v];
            let Some(&idx) = vl.list.front() else { break };
            if vl.base < vl.cum {
                vl.list.pop_front();
                vl.base += 1;
                self.unref(idx);
            } else {
                break;
            }
        }
    }

    /// Advance `v`'s cumulative point over delivered records and describe what it has received.
    fn virtual_ack(&mut self, v: usize) -> VirtualAck {
        let vl = &mut self.virt[v];
        let old = vl.cum;
        let mut k = (vl.cum - vl.base) as usize;
        while k < vl.list.len() && self.psr[vl.list[k] as usize].state & VACKED != 0 {
            k += 1;
        }
        vl.cum = vl.base + k as u64;
        let mut sacks = Vec::new();
        let mut run: Option<(u64, u64)> = None;
        for k in k..vl.list.len() {
            let p = &self.psr[vl.list[k] as usize];
            let s = vl.base + k as u64;
            if p.state & VACKED != 0 {
                run = Some(match run {
                    Some((l, r)) if r == s => (l, s + 1),
                    Some(b) => {
                        sacks.push(b);
                        (s, s + 1)
                    }
                    None => (s, s + 1),
                });
            } else if p.st() == ST_U && self.suppression {
                break;
            }
        }
        sacks.extend(run);
        self.stats.virtual_acks += 1;
        if vl.cum == old {
            self.stats.virtual_dupacks += 1;
        }
        VirtualAck { v, cum: vl.cum, sacks }
    }

    /// Actual flow `a` timed out with cumulative point `una`: reset its records to U (it clears
    /// its scoreboard, Sec. 4.2). Returns the virtual flow named in the record of the segment it
    /// retransmits (the one at `una`), which times out too.
    pub fn on_actual_timeout(&mut self, a: usize, una: u64) -> Option<usize> {
        let mut v = None;
        self.reset_buffered.clear();
        for &idx in &self.actual[a].list {
            let p = &mut self.psr[idx as usize];
            if p.a_seq == una {
                v = Some(p.v_id as usize);
            }
            if p.st() == ST_B {
                self.reset_buffered.push(idx);
            }
            p.set(ST_U);
        }
        v
    }
}
