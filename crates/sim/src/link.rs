//! One direction of a simulated link: a queue discipline, a transmitter of fixed rate, and a
//! wan-emu style impairment stage (loss on entry, then a delay line with optional jitter).

use crate::engine::{Ev, EventQueue};
use crate::pool::{PacketPool, Pkt};
use ackshape_core::impair::{Delay, JitterSpec, Loss};
use ackshape_core::queue::{Enqueue, Limit, QueueDisc};
use ackshape_core::shape::asym::AsymStats;
use ackshape_core::time::{Dur, Time};
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// Something that records packets a link transmits (e.g. a pcap writer).
pub trait Capture {
    fn capture(&mut self, t: Time, pkt: &Packet);
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Counters of one link direction.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LinkCounters {
    /// Packets whose transmission started (what a capture on the link sees).
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Dropped by the queue (full).
    pub drops: u64,
    /// Dropped by the loss model.
    pub lost: u64,
    /// Time spent transmitting (ns).
    pub busy_ns: u64,
    /// ∫ queue length (packets) dt, in packet·ns.
    pub q_integral: u128,
    /// Per class (pure TCP ACK, TCP data, non-TCP), for disciplines that report per-class queue
    /// lengths (`QueueDisc::asym_stats`): ∫ queue length dt in packet·ns. Zero for the others.
    pub class_q_integral: [u128; 3],
}

/// The queue of a link direction.
pub enum LinkQueue {
    /// A drop-tail FIFO of packet handles, limited in packets or bytes: the queue of a link
    /// without a `qdisc`. Same rules as [`ackshape_core::queue::DropTail`] (drop an arrival that
    /// finds `limit` packets, or whose bytes would exceed `limit`), without moving packets.
    Fifo { q: VecDeque<Pkt>, limit: Limit, bytes: usize },
    /// Any queue discipline (it owns the packets it holds).
    Disc(Box<dyn QueueDisc>),
}

impl LinkQueue {
    /// A drop-tail FIFO.
    pub fn fifo(limit: Limit) -> LinkQueue {
        LinkQueue::Fifo { q: VecDeque::new(), limit, bytes: 0 }
    }
    #[inline]
    pub fn len_pkts(&self) -> usize {
        match self {
            LinkQueue::Fifo { q, .. } => q.len(),
            LinkQueue::Disc(d) => d.len_pkts(),
        }
    }
    /// Per-class counters of the asymmetric-link disciplines; `None` for others.
    pub fn asym_stats(&self) -> Option<&AsymStats> {
        match self {
            LinkQueue::Fifo { .. } => None,
            LinkQueue::Disc(d) => d.asym_stats(),
        }
    }
    /// Named counters of the discipline, for reports.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            LinkQueue::Fifo { .. } => Vec::new(),
            LinkQueue::Disc(d) => d.counters(),
        }
    }
}

pub struct LinkDir {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub queue: LinkQueue,
    pub loss: Loss,
    pub delay: Delay,
    /// The delay has no jitter: a packet leaves `delay` after its transmission ends (the
    /// [`Delay`] model is not consulted; without jitter it gives exactly that).
    fixed_delay: Option<Dur>,
    pub reorder: bool,
    /// The transmitter is busy until this time.
    pub busy_until: Time,
    /// A `TxDone` event is scheduled.
    pub txdone_pending: bool,
    /// Packets on the wire with their arrival times (sorted by arrival).
    pub wire: VecDeque<(Time, Pkt)>,
    /// The last packet length serialised and its transmission time (most packets of a link
    /// have the same length: this saves a 64-bit division per packet).
    tx_memo: (usize, Dur),
    /// Time of the pending `Wire` event, if one is scheduled.
    pub wire_event: Option<Time>,
    /// Time of the pending `QueueReady` event, if one is scheduled.
    pub ready_event: Option<Time>,
    pub c: LinkCounters,
    pub q_max: usize,
    /// Max queue length inside the measurement window.
    pub q_max_window: usize,
    /// Per-class (ACK, data, non-TCP) max queue length inside the measurement window (only for
    /// disciplines with per-class statistics, see [`LinkCounters::class_q_integral`]).
    pub class_q_max_window: [usize; 3],
    /// The discipline reports per-class queue lengths.
    has_classes: bool,
    /// The discipline's scenario `kind` when it is one of the asymmetric-link disciplines.
    pub qdisc_kind: Option<&'static str>,
    q_last: Time,
    /// Queue length per time bin (for `queues.csv`).
    bins: QueueBins,
    pub capture: Option<Box<dyn Capture>>,
}

/// The queue length of one link direction per time bin `[k·width, (k+1)·width)`: its time
/// integral and maximum, kept only for bins in which something was queued.
#[derive(Default)]
struct QueueBins {
    /// Bin width in ns (0: not kept).
    width: u64,
    /// Index of the open bin, its end, and the time up to which it is accounted.
    cur: u64,
    edge: Time,
    last: Time,
    /// Open bin: ∫ queue length dt (packet·ns) and the maximum length.
    area: u128,
    max: usize,
    /// Closed bins with a non-empty queue: (index, area, max).
    done: Vec<(u64, u128, usize)>,
}

impl QueueBins {
    /// Account `len` queued packets from `last` up to `now`, closing the bins this crosses.
    #[inline]
    fn account(&mut self, now: Time, len: usize) {
        if self.width == 0 {
            return;
        }
        while now >= self.edge {
            self.area += len as u128 * self.edge.since(self.last).0 as u128;
            if self.area > 0 || self.max > 0 {
                self.done.push((self.cur, self.area, self.max));
            }
            self.area = 0;
            self.max = len;
            self.last = self.edge;
            self.cur += 1;
            if len == 0 && now.0 / self.width > self.cur {
                // An empty queue: skip the empty bins at once.
                self.cur = now.0 / self.width;
                self.last = Time(self.cur * self.width);
            }
            self.edge = Time((self.cur + 1) * self.width);
        }
        self.area += len as u128 * now.since(self.last).0 as u128;
        self.last = now;
    }

    /// Every bin before `end` in which something was queued: (index, time-average packets,
    /// maximum packets); the last bin's average is over its part before `end`.
    fn series(&self, end: Time) -> Vec<(u64, f64, usize)> {
        if self.width == 0 {
            return Vec::new();
        }
        let open = (self.area > 0 || self.max > 0).then_some((self.cur, self.area, self.max));
        self.done
            .iter()
            .copied()
            .chain(open)
            .filter(|&(k, _, _)| k * self.width < end.0)
            .map(|(k, area, max)| {
                let width = (((k + 1) * self.width).min(end.0) - k * self.width) as f64;
                (k, area as f64 / width, max)
            })
            .collect()
    }
}

impl LinkDir {
    /// `jitter` is the jitter `delay` was built with (`JitterSpec::None`: a fixed delay).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        from: u32,
        to: u32,
        rate_bps: u64,
        queue: LinkQueue,
        loss: Loss,
        delay: Delay,
        jitter: &JitterSpec,
        reorder: bool,
    ) -> LinkDir {
        let has_classes = queue.asym_stats().is_some();
        let fixed_delay = match jitter {
            JitterSpec::None => Some(delay.base()),
            JitterSpec::Uniform { max_ns: 0 } | JitterSpec::Normal { sigma_ns: 0 } => Some(delay.base()),
            _ => None,
        };
        LinkDir {
            name,
            from,
            to,
            rate_bps,
            queue,
            loss,
            delay,
            fixed_delay,
            reorder,
            busy_until: Time::ZERO,
            txdone_pending: false,
            wire: VecDeque::new(),
            tx_memo: (usize::MAX, Dur::ZERO),
            wire_event: None,
            ready_event: None,
            c: LinkCounters::default(),
            q_max: 0,
            q_max_window: 0,
            class_q_max_window: [0; 3],
            has_classes,
            qdisc_kind: None,
            q_last: Time::ZERO,
            bins: QueueBins::default(),
            capture: None,
        }
    }

    #[inline]
    fn account_queue(&mut self, now: Time) {
        let len = self.queue.len_pkts() as u128;
        let dt = now.since(self.q_last).0 as u128;
        self.c.q_integral += len * dt;
        self.bins.account(now, len as usize);
        if self.has_classes {
            let lens = self.class_lens();
            for (acc, l) in self.c.class_q_integral.iter_mut().zip(lens) {
                *acc += l as u128 * dt;
            }
        }
        self.q_last = now;
    }

    /// Queued packets per class (ACK, data, non-TCP); zeros for disciplines without classes.
    #[inline]
    pub fn class_lens(&self) -> [usize; 3] {
        match self.queue.asym_stats() {
            Some(st) => [st.ack_q_len, st.data_q_len, st.non_tcp_q_len],
            None => [0; 3],
        }
    }

    /// The discipline reports per-class queue lengths.
    pub fn has_classes(&self) -> bool {
        self.has_classes
    }

    /// Offer packet `h` to the link at `now`. The link schedules its own events (this is link
    /// number `me`): `Wire` for the head of its delay line, `TxDone` when a queue formed behind
    /// the packet being sent, `QueueReady` when its discipline holds packets until a time.
    #[inline]
    pub fn offer(&mut self, now: Time, h: Pkt, pool: &mut PacketPool, q: &mut EventQueue, me: u32) {
        if self.loss.drop_next() {
            self.c.lost += 1;
            pool.free(h);
            return;
        }
        let idle = now >= self.busy_until;
        let bypass = match &self.queue {
            LinkQueue::Fifo { q, .. } => q.is_empty(),
            LinkQueue::Disc(d) => d.idle_bypass(),
        };
        if idle && bypass {
            // Fast path: an idle work-conserving link transmits at once, no queue round-trip.
            return self.transmit(now, h, pool, q, me);
        }
        self.account_queue(now);
        let queued = match &mut self.queue {
            LinkQueue::Fifo { q, limit, bytes } => {
                let len = pool.len(h);
                let full = match *limit {
                    Limit::Packets(n) => q.len() >= n,
                    Limit::Bytes(b) => *bytes + len > b,
                };
                if full {
                    pool.free(h);
                    false
                } else {
                    *bytes += len;
                    q.push_back(h);
                    true
                }
            }
            LinkQueue::Disc(d) => matches!(d.enqueue(now, pool.take(h)), Enqueue::Queued),
        };
        if !queued {
            self.c.drops += 1;
            return;
        }
        let l = self.queue.len_pkts();
        self.q_max = self.q_max.max(l);
        self.q_max_window = self.q_max_window.max(l);
        self.bins.max = self.bins.max.max(l);
        if self.has_classes {
            let lens = self.class_lens();
            for (m, l) in self.class_q_max_window.iter_mut().zip(lens) {
                *m = (*m).max(l);
            }
        }
        if idle {
            self.start_tx(now, pool, q, me)
        } else if !self.txdone_pending {
            self.txdone_pending = true;
            q.push(self.busy_until, Ev::TxDone(me));
        }
    }

    /// The transmitter is free at `now` (a `TxDone` or `QueueReady` event): start the next
    /// eligible packet, if any.
    #[inline]
    pub fn start_tx(&mut self, now: Time, pool: &mut PacketPool, q: &mut EventQueue, me: u32) {
        if now < self.busy_until {
            // Busy (e.g. an arrival at the same instant as a pending `TxDone` already started the
            // next packet): make sure the queue is served when this transmission ends.
            if self.queue.len_pkts() > 0 && !self.txdone_pending {
                self.txdone_pending = true;
                q.push(self.busy_until, Ev::TxDone(me));
            }
            return;
        }
        self.account_queue(now);
        let next = match &mut self.queue {
            LinkQueue::Fifo { q, bytes, .. } => q.pop_front().inspect(|&h| *bytes -= pool.len(h)),
            LinkQueue::Disc(d) => d.dequeue(now).map(|p| pool.put(p)),
        };
        match next {
            Some(h) => self.transmit(now, h, pool, q, me),
            None => {
                if let LinkQueue::Disc(d) = &self.queue {
                    if d.len_pkts() > 0 {
                        if let Some(t) = d.next_ready(now) {
                            // Strictly later than now: a discipline that says "ready now" but
                            // held its packet must not spin the event loop at one instant.
                            let t = t.max(now + Dur(1));
                            if self.ready_event.is_none_or(|r| t < r) {
                                self.ready_event = Some(t);
                                q.push(t, Ev::QueueReady(me));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Serialise `pkt` from `now`; it enters the delay line at the end of its transmission
    /// (its exit time is known now, so no event is needed for that).
    #[inline]
    fn transmit(&mut self, now: Time, h: Pkt, pool: &PacketPool, q: &mut EventQueue, me: u32) {
        let len = pool.len(h);
        let d = if self.tx_memo.0 == len {
            self.tx_memo.1
        } else {
            let d = Dur::tx_time(len, self.rate_bps);
            self.tx_memo = (len, d);
            d
        };
        let end = now + d;
        self.busy_until = end;
        self.c.tx_packets += 1;
        self.c.tx_bytes += len as u64;
        self.c.busy_ns += d.0;
        if let Some(cap) = self.capture.as_mut() {
            cap.capture(now, pool.get(h));
        }
        let exit = match self.fixed_delay {
            Some(base) => end + base,
            None => self.delay.exit_time(end),
        };
        if self.reorder {
            let pos = self.wire.partition_point(|(t, _)| *t <= exit);
            self.wire.insert(pos, (exit, h));
        } else {
            self.wire.push_back((exit, h));
        }
        if self.wire_event.is_none_or(|t| t > exit) {
            self.wire_event = Some(exit);
            q.push(exit, Ev::Wire(me));
        }
        if !self.txdone_pending && self.queue.len_pkts() > 0 {
            self.txdone_pending = true;
            q.push(end, Ev::TxDone(me));
        }
    }

    /// When the measurement window starts, restart the window maxima.
    pub fn start_window(&mut self) {
        self.q_max_window = self.queue.len_pkts();
        self.class_q_max_window = self.class_lens();
    }

    /// Close the queue integral at `now`.
    pub fn settle(&mut self, now: Time) {
        self.account_queue(now);
    }

    /// Keep the queue length per bin of `width` from now on (call before the run; see
    /// [`LinkDir::queue_bins`]).
    pub fn keep_queue_bins(&mut self, width: Dur) {
        self.bins = QueueBins { width: width.0, edge: Time(width.0), ..QueueBins::default() };
    }

    /// The queue length per bin up to `end` (after [`LinkDir::settle`] at `end`): (bin index,
    /// time-average packets, maximum packets) for every bin in which something was queued.
    pub fn queue_bins(&self, end: Time) -> Vec<(u64, f64, usize)> {
        self.bins.series(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the link does: account the length so far, then change it (and raise the bin's
    /// maximum on an arrival).
    fn step(b: &mut QueueBins, t: u64, len_before: usize, len_after: usize) {
        b.account(Time(t), len_before);
        b.max = b.max.max(len_after);
    }

    #[test]
    fn queue_bins_split_the_integral_at_bin_edges_and_skip_empty_bins() {
        let mut b = QueueBins { width: 10, edge: Time(10), ..QueueBins::default() };
        step(&mut b, 5, 0, 2); // 2 packets queued at 5 …
        step(&mut b, 15, 2, 0); // … until 15, across the edge at 10
        step(&mut b, 40, 0, 1); // one packet at 40 (bins 2 and 3 stay empty)
        b.account(Time(45), 1); // the run ends at 45 with it queued
        let s = b.series(Time(45));
        assert_eq!(s, vec![(0, 1.0, 2), (1, 1.0, 2), (4, 1.0, 1)]);
        // The bins add up to the whole integral: 2·10 + 1·5 packet·ns.
        let area: f64 = s.iter().map(|&(k, avg, _)| avg * (((k + 1) * 10).min(45) - k * 10) as f64).sum();
        assert_eq!(area, 25.0);
    }

    #[test]
    fn a_queue_standing_at_an_edge_opens_the_next_bin_with_its_length() {
        let mut b = QueueBins { width: 10, edge: Time(10), ..QueueBins::default() };
        step(&mut b, 2, 0, 3);
        b.account(Time(30), 3); // 3 packets stand through bins 0, 1 and 2 and into bin 3 …
        let s = b.series(Time(30));
        // … which starts at the end of the run, so is not listed.
        assert_eq!(s, vec![(0, 2.4, 3), (1, 3.0, 3), (2, 3.0, 3)]);
        assert_eq!((b.cur, b.max), (3, 3));
        // Not kept at all with width 0.
        let mut off = QueueBins::default();
        off.account(Time(5), 4);
        assert!(off.series(Time(5)).is_empty());
    }
}
