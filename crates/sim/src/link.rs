//! One direction of a simulated link: a queue discipline, a transmitter of fixed rate, and a
//! wan-emu style impairment stage (loss on entry, then a delay line with optional jitter).

use ackshape_core::impair::{Delay, Loss};
use ackshape_core::queue::{Enqueue, QueueDisc};
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

/// What the driver must schedule after offering a packet or freeing the transmitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    Nothing,
    /// A packet started transmission: schedule `Wire` at `wire_at` and `TxDone` at `txdone_at`.
    Sent {
        wire_at: Option<Time>,
        txdone_at: Option<Time>,
    },
    /// The transmitter is busy and a queue formed: schedule `TxDone` at this time.
    TxDoneAt(Time),
    /// Packets are held by the discipline until this time: schedule `QueueReady`.
    ReadyAt(Time),
}

pub struct LinkDir {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub queue: Box<dyn QueueDisc>,
    pub loss: Loss,
    pub delay: Delay,
    pub reorder: bool,
    /// The transmitter is busy until this time.
    pub busy_until: Time,
    /// A `TxDone` event is scheduled.
    pub txdone_pending: bool,
    /// Packets on the wire with their arrival times (sorted by arrival).
    pub wire: VecDeque<(Time, Packet)>,
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
    pub capture: Option<Box<dyn Capture>>,
}

impl LinkDir {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        from: u32,
        to: u32,
        rate_bps: u64,
        queue: Box<dyn QueueDisc>,
        loss: Loss,
        delay: Delay,
        reorder: bool,
    ) -> LinkDir {
        let has_classes = queue.asym_stats().is_some();
        LinkDir {
            name,
            from,
            to,
            rate_bps,
            queue,
            loss,
            delay,
            reorder,
            busy_until: Time::ZERO,
            txdone_pending: false,
            wire: VecDeque::new(),
            wire_event: None,
            ready_event: None,
            c: LinkCounters::default(),
            q_max: 0,
            q_max_window: 0,
            class_q_max_window: [0; 3],
            has_classes,
            qdisc_kind: None,
            q_last: Time::ZERO,
            capture: None,
        }
    }

    #[inline]
    fn account_queue(&mut self, now: Time) {
        let len = self.queue.len_pkts() as u128;
        let dt = now.since(self.q_last).0 as u128;
        self.c.q_integral += len * dt;
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

    /// Offer a packet to the link at `now`; says what the driver must schedule.
    #[inline]
    pub fn offer(&mut self, now: Time, pkt: Packet) -> Offer {
        if self.loss.drop_next() {
            self.c.lost += 1;
            return Offer::Nothing;
        }
        let idle = now >= self.busy_until;
        if idle && self.queue.idle_bypass() {
            // Fast path: an idle work-conserving link transmits at once, no queue round-trip.
            return self.transmit(now, pkt);
        }
        self.account_queue(now);
        match self.queue.enqueue(now, pkt) {
            Enqueue::Queued => {
                let l = self.queue.len_pkts();
                self.q_max = self.q_max.max(l);
                self.q_max_window = self.q_max_window.max(l);
                if self.has_classes {
                    let lens = self.class_lens();
                    for (m, l) in self.class_q_max_window.iter_mut().zip(lens) {
                        *m = (*m).max(l);
                    }
                }
            }
            Enqueue::Dropped(_) => {
                self.c.drops += 1;
                return Offer::Nothing;
            }
        }
        if idle {
            self.start_tx(now)
        } else if !self.txdone_pending {
            self.txdone_pending = true;
            Offer::TxDoneAt(self.busy_until)
        } else {
            Offer::Nothing
        }
    }

    /// The transmitter is free at `now` (a `TxDone` or `QueueReady` event): start the next
    /// eligible packet, if any.
    #[inline]
    pub fn start_tx(&mut self, now: Time) -> Offer {
        if now < self.busy_until {
            // Busy (e.g. an arrival at the same instant as a pending `TxDone` already started the
            // next packet): make sure the queue is served when this transmission ends.
            if self.queue.len_pkts() > 0 && !self.txdone_pending {
                self.txdone_pending = true;
                return Offer::TxDoneAt(self.busy_until);
            }
            return Offer::Nothing;
        }
        self.account_queue(now);
        match self.queue.dequeue(now) {
            Some(p) => self.transmit(now, p),
            None => {
                if self.queue.len_pkts() > 0 {
                    if let Some(t) = self.queue.next_ready(now) {
                        return Offer::ReadyAt(t);
                    }
                }
                Offer::Nothing
            }
        }
    }

    /// Serialise `pkt` from `now`; it enters the delay line at the end of its transmission
    /// (its exit time is known now, so no event is needed for that).
    #[inline]
    fn transmit(&mut self, now: Time, pkt: Packet) -> Offer {
        let len = pkt.ip_len();
        let d = Dur::tx_time(len, self.rate_bps);
        let end = now + d;
        self.busy_until = end;
        self.c.tx_packets += 1;
        self.c.tx_bytes += len as u64;
        self.c.busy_ns += d.0;
        if let Some(cap) = self.capture.as_mut() {
            cap.capture(now, &pkt);
        }
        let exit = self.delay.exit_time(end);
        if self.reorder {
            let pos = self.wire.partition_point(|(t, _)| *t <= exit);
            self.wire.insert(pos, (exit, pkt));
        } else {
            self.wire.push_back((exit, pkt));
        }
        let wire_at = match self.wire_event {
            Some(t) if t <= exit => None,
            _ => {
                self.wire_event = Some(exit);
                Some(exit)
            }
        };
        let txdone_at = if self.queue.len_pkts() > 0 && !self.txdone_pending {
            self.txdone_pending = true;
            Some(end)
        } else {
            None
        };
        Offer::Sent { wire_at, txdone_at }
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
}
