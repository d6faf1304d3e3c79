//! The event queue, ordered by (time, insertion order): events at the same instant run in the
//! order they were scheduled. That order is the simulator's determinism.
//!
//! It is a timing wheel, the calendar queue's fixed-year form (R. Brown, "Calendar queues: a fast
//! O(1) priority queue implementation for the simulation event set problem", CACM 31(10), 1988;
//! ns-2's default scheduler is a calendar queue): time is cut into buckets of `2^shift` ns and the
//! next [`BUCKETS`] buckets from the current one are a ring, each holding its events sorted; a
//! bitmap finds the next non-empty bucket. Events further ahead wait in a binary heap and move
//! into the ring when it reaches them. Same order as a heap on (time, insertion number), in a
//! few instructions per event instead of a sift through the heap's levels. A bucket keeps its
//! earliest event inline and only the others in a vector.

use ackshape_core::time::Time;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// Buckets in the ring (a power of two).
pub const BUCKETS: usize = 4096;
const WORDS: usize = BUCKETS / 64;

/// What happens. Small and `Copy`: packets live in links, not in the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A link direction finished serialising its current packet.
    TxDone(u32),
    /// The head of a link's delay line reaches the far end.
    Wire(u32),
    /// A queue discipline that was holding packets may have one ready.
    QueueReady(u32),
    /// A TCP connection's timer.
    ConnTimer(u32),
    /// A flow (or its next short transfer) starts.
    FlowStart(u32),
    /// A UDP source sends its next packet.
    UdpSend(u32),
    /// Start of the measurement window.
    Warmup,
    /// Periodic trace sampling.
    Trace,
    /// A middlebox's timer.
    MbTimer(u32),
    /// Mirror mode: the head of the copies' delay line reaches the box.
    MbCopy(u32),
    /// Mirror mode: the head of the injections' delay line reaches the node.
    MbInject(u32),
    /// A sender group's timer (VPS).
    GroupTimer(u32),
    /// The head of a host's output line (`host_jitter`) leaves the host; the node's index.
    HostOut(u32),
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    t: Time,
    seq: u64,
    ev: Ev,
}
impl Entry {
    #[inline]
    fn key(&self) -> (Time, u64) {
        (self.t, self.seq)
    }
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we want the earliest first.
        o.key().cmp(&self.key())
    }
}

/// Deterministic event queue: [`pop`](EventQueue::pop) returns the earliest event, and of
/// events at the same time the one pushed first. No push may be earlier than the last event
/// popped (the simulator never schedules into the past).
pub struct EventQueue {
    /// Bucket width: `2^shift` ns.
    shift: u32,
    /// Absolute index (time >> shift) of the current bucket: no pending event is earlier.
    cur: u64,
    /// Ring position `s % BUCKETS` holds the events of bucket `s` for `s` in
    /// `[cur, cur + BUCKETS)`: the earliest in `head`, the others (when `more` says so) in
    /// `rest`, sorted latest first. Most buckets hold one event or none.
    head: Vec<Entry>,
    rest: Vec<Vec<Entry>>,
    /// Bit `i` set: position `i` holds events (its `head` is valid).
    bits: [u64; WORDS],
    /// Bit `i` set: `rest[i]` is not empty.
    more: [u64; WORDS],
    /// Events in buckets from `cur + BUCKETS` on.
    far: BinaryHeap<Entry>,
    seq: u64,
    popped: u64,
    len: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::new()
    }
}

#[inline]
fn test(bits: &[u64; WORDS], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}
#[inline]
fn set(bits: &mut [u64; WORDS], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}
#[inline]
fn clear(bits: &mut [u64; WORDS], i: usize) {
    bits[i / 64] &= !(1 << (i % 64));
}

impl EventQueue {
    /// Buckets of 16.4 µs (a ring of 67 ms).
    pub fn new() -> EventQueue {
        EventQueue::with_bucket_shift(14)
    }

    /// Buckets of `2^shift` ns. The order of events does not depend on it, only the speed: best
    /// when a bucket rarely holds more than one or two events and the ring spans most of the
    /// delays that events are scheduled ahead.
    pub fn with_bucket_shift(shift: u32) -> EventQueue {
        let empty = Entry { t: Time::ZERO, seq: 0, ev: Ev::Warmup };
        EventQueue {
            shift: shift.min(40),
            cur: 0,
            head: vec![empty; BUCKETS],
            rest: (0..BUCKETS).map(|_| Vec::new()).collect(),
            bits: [0; WORDS],
            more: [0; WORDS],
            far: BinaryHeap::new(),
            seq: 0,
            popped: 0,
            len: 0,
        }
    }

    /// A bucket width for links of these rates (bit/s): a quarter of the fastest link's
    /// transmission time of a 1500-byte packet, as a power of two between 256 ns and 65.5 µs.
    pub fn bucket_shift_for(rates_bps: impl Iterator<Item = u64>) -> u32 {
        let fastest = rates_bps.filter(|&r| r > 0).max().unwrap_or(10_000_000);
        let ns = (1500u64 * 8 * 1_000_000_000 / fastest / 4).max(1);
        (63 - ns.leading_zeros()).clamp(8, 16)
    }

    #[inline]
    fn slot(&self, t: Time) -> u64 {
        t.0 >> self.shift
    }

    /// Put `e` into the ring (its bucket is within it).
    #[inline]
    fn insert(&mut self, e: Entry, s: u64) {
        let i = (s as usize) & (BUCKETS - 1);
        if !test(&self.bits, i) {
            self.head[i] = e;
            set(&mut self.bits, i);
            return;
        }
        // The earliest stays in `head`; the other goes into `rest`, latest first.
        let e = if e.key() < self.head[i].key() { std::mem::replace(&mut self.head[i], e) } else { e };
        let b = &mut self.rest[i];
        let mut at = b.len();
        while at > 0 && b[at - 1].key() < e.key() {
            at -= 1;
        }
        b.insert(at, e);
        set(&mut self.more, i);
    }

    #[inline]
    pub fn push(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.len += 1;
        let e = Entry { t, seq: self.seq, ev };
        let s = self.slot(t);
        debug_assert!(s >= self.cur, "event at {t:?} before the current bucket");
        if s < self.cur + BUCKETS as u64 {
            self.insert(e, s);
        } else {
            self.far.push(e);
        }
    }

    /// The bucket and time of the next event (None: no event pending).
    #[inline]
    fn next(&self) -> Option<(u64, Time)> {
        let i = (self.cur as usize) & (BUCKETS - 1);
        let (w, b) = (i / 64, i % 64);
        let m = self.bits[w] & (!0u64 << b);
        let j = if m != 0 {
            w * 64 + m.trailing_zeros() as usize
        } else {
            // The following words, wrapping around to the start of the current one.
            let mut found = None;
            for k in 1..=WORDS {
                let m = self.bits[(w + k) % WORDS];
                if m != 0 {
                    found = Some(((w + k) % WORDS) * 64 + m.trailing_zeros() as usize);
                    break;
                }
            }
            match found {
                Some(j) => j,
                None => return self.far.peek().map(|e| (self.slot(e.t), e.t)),
            }
        };
        Some((self.cur + ((j + BUCKETS - i) % BUCKETS) as u64, self.head[j].t))
    }

    /// Make bucket `s` (not after the next event) the current one; events from the heap that
    /// now fall within the ring move into it.
    #[inline]
    fn advance(&mut self, s: u64) {
        if s == self.cur {
            return;
        }
        self.cur = s;
        let end = s + BUCKETS as u64;
        while let Some(e) = self.far.peek() {
            let es = self.slot(e.t);
            if es >= end {
                break;
            }
            let e = self.far.pop().expect("peeked");
            self.insert(e, es);
        }
    }

    #[inline]
    fn take_head(&mut self) -> (Time, Ev) {
        let i = (self.cur as usize) & (BUCKETS - 1);
        let e = self.head[i];
        if test(&self.more, i) {
            let b = &mut self.rest[i];
            self.head[i] = b.pop().expect("marked");
            if b.is_empty() {
                clear(&mut self.more, i);
            }
        } else {
            clear(&mut self.bits, i);
        }
        self.popped += 1;
        self.len -= 1;
        (e.t, e.ev)
    }

    /// The earliest event, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Ev)> {
        let (s, _) = self.next()?;
        self.advance(s);
        Some(self.take_head())
    }

    /// The earliest event if it is due at or before `limit`; else `None` (the queue keeps it).
    #[inline]
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, Ev)> {
        let (s, t) = self.next()?;
        if t > limit {
            return None;
        }
        self.advance(s);
        Some(self.take_head())
    }

    /// Time of the earliest event.
    pub fn peek_time(&self) -> Option<Time> {
        self.next().map(|(_, t)| t)
    }
    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.popped
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Time(5), Ev::Trace);
        q.push(Time(1), Ev::FlowStart(1));
        q.push(Time(5), Ev::Warmup);
        q.push(Time(1), Ev::FlowStart(2));
        let v: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            v,
            vec![(Time(1), Ev::FlowStart(1)), (Time(1), Ev::FlowStart(2)), (Time(5), Ev::Trace), (Time(5), Ev::Warmup)]
        );
    }

    /// The order a binary heap on (time, insertion number) gives: the reference.
    #[test]
    fn same_order_as_a_heap_on_time_then_insertion() {
        use rand::{Rng, SeedableRng};
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        for seed in 0..30u64 {
            let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            // Bucket widths from 1 ns (every span crosses buckets) to 1 ms.
            let mut q = EventQueue::with_bucket_shift([0, 8, 14, 20][seed as usize % 4]);
            let mut reference = BinaryHeap::new();
            let (mut n, mut now) = (0u32, 0u64);
            // Spans from ties (0) over nanoseconds to seconds, as links and timers give.
            let spans = [0u64, 1, 7, 1_200_000, 20_000_000, 1_000_000_000, 1 << 40];
            for _ in 0..5000 {
                for _ in 0..r.gen_range(0..4) {
                    let span = spans[r.gen_range(0..spans.len())];
                    let t = now + if span == 0 { 0 } else { r.gen_range(0..span) };
                    q.push(Time(t), Ev::FlowStart(n));
                    reference.push(Reverse((t, n)));
                    n += 1;
                }
                for _ in 0..r.gen_range(0..4) {
                    let want = reference.pop().map(|Reverse((t, i))| (Time(t), Ev::FlowStart(i)));
                    let got = q.pop();
                    assert_eq!(got, want, "seed {seed}");
                    if let Some((t, _)) = got {
                        now = t.0;
                    }
                }
                assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse((t, i))) = reference.pop() {
                assert_eq!(q.pop(), Some((Time(t), Ev::FlowStart(i))));
            }
            assert!(q.pop().is_none() && q.is_empty());
        }
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::new();
        q.push(Time(10), Ev::Trace);
        q.push(Time(30), Ev::Warmup);
        assert_eq!(q.pop_until(Time(20)), Some((Time(10), Ev::Trace)));
        assert_eq!(q.pop_until(Time(20)), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.peek_time(), Some(Time(30)));
        assert_eq!(q.pop_until(Time(30)), Some((Time(30), Ev::Warmup)));
        assert_eq!(q.processed(), 2);
    }

    #[test]
    fn a_full_drain_is_sorted_and_stable() {
        use rand::{Rng, SeedableRng};
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut q = EventQueue::new();
        let mut sorted = Vec::new();
        for i in 0..10_000u32 {
            let t = Time(r.gen_range(0..2050));
            q.push(t, Ev::FlowStart(i));
            sorted.push((t, i));
        }
        sorted.sort();
        let drained: Vec<(Time, u32)> = std::iter::from_fn(|| q.pop())
            .map(|(t, e)| match e {
                Ev::FlowStart(i) => (t, i),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(drained, sorted);
    }
}

/// Items waiting for their exit times, which never decrease (a FIFO delay line): a host's output
/// (`host_jitter`), a mirror box's copies and its injections. Its owner keeps one event pending for
/// the head: [`push`](DelayLine::push) says when a new head needs one, [`pop_due`](DelayLine::pop_due)
/// takes what is due, [`next_at`](DelayLine::next_at) is when the next event must fire.
#[derive(Debug)]
pub struct DelayLine<T>(VecDeque<(Time, T)>);

impl<T> Default for DelayLine<T> {
    fn default() -> Self {
        DelayLine(VecDeque::new())
    }
}

impl<T> DelayLine<T> {
    /// Append `x`, leaving at `t` (not before the last one's exit time). Returns `t` if the line
    /// was empty: the caller schedules the head's event then.
    pub fn push(&mut self, t: Time, x: T) -> Option<Time> {
        debug_assert!(self.0.back().is_none_or(|&(last, _)| t >= last), "exit times must not decrease");
        self.0.push_back((t, x));
        (self.0.len() == 1).then_some(t)
    }

    /// The head, if it is due at `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<T> {
        match self.0.front() {
            Some(&(t, _)) if t <= now => self.0.pop_front().map(|(_, x)| x),
            _ => None,
        }
    }

    /// The head's exit time (the event to schedule after draining what is due).
    pub fn next_at(&self) -> Option<Time> {
        self.0.front().map(|&(t, _)| t)
    }
}
