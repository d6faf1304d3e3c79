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
    /// Packet being serialised, if any.
    pub tx: Option<Packet>,
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
    q_last: Time,
    pub capture: Option<Box<dyn Capture>>,
}

impl LinkDir {
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
        LinkDir {
            name,
            from,
            to,
            rate_bps,
            queue,
            loss,
            delay,
            reorder,
            tx: None,
            wire: VecDeque::new(),
            wire_event: None,
            ready_event: None,
            c: LinkCounters::default(),
            q_max: 0,
            q_max_window: 0,
            q_last: Time::ZERO,
            capture: None,
        }
    }

    #[inline]
    fn account_queue(&mut self, now: Time) {
        let len = self.queue.len_pkts() as u128;
        self.c.q_integral += len * now.since(self.q_last).0 as u128;
        self.q_last = now;
    }

    /// Offer a packet to the link. Returns `true` if the transmitter is idle and should be kicked.
    #[inline]
    pub fn offer(&mut self, now: Time, pkt: Packet) -> bool {
        if self.loss.drop_next() {
            self.c.lost += 1;
            return false;
        }
        self.account_queue(now);
        match self.queue.enqueue(now, pkt) {
            Enqueue::Queued => {
                let l = self.queue.len_pkts();
                if l > self.q_max {
                    self.q_max = l;
                }
                if l > self.q_max_window {
                    self.q_max_window = l;
                }
            }
            Enqueue::Dropped(_) => self.c.drops += 1,
        }
        self.tx.is_none()
    }

    /// Start transmitting the next eligible packet, if idle. Returns the time transmission ends.
    #[inline]
    pub fn start_tx(&mut self, now: Time) -> Option<Time> {
        if self.tx.is_some() {
            return None;
        }
        self.account_queue(now);
        let pkt = self.queue.dequeue(now)?;
        let len = pkt.ip_len();
        let d = Dur::tx_time(len, self.rate_bps);
        self.c.tx_packets += 1;
        self.c.tx_bytes += len as u64;
        self.c.busy_ns += d.0;
        if let Some(cap) = self.capture.as_mut() {
            cap.capture(now, &pkt);
        }
        self.tx = Some(pkt);
        Some(now + d)
    }

    /// Transmission finished: the packet enters the delay line. Returns the time a `Wire`
    /// event must be scheduled for, if a new one is needed.
    #[inline]
    pub fn finish_tx(&mut self, now: Time) -> Option<Time> {
        let pkt = self.tx.take()?;
        let exit = self.delay.exit_time(now);
        if self.reorder {
            let pos = self.wire.partition_point(|(t, _)| *t <= exit);
            self.wire.insert(pos, (exit, pkt));
        } else {
            self.wire.push_back((exit, pkt));
        }
        match self.wire_event {
            Some(t) if t <= exit => None,
            _ => {
                self.wire_event = Some(exit);
                Some(exit)
            }
        }
    }

    /// When the measurement window starts, restart the window maxima.
    pub fn start_window(&mut self) {
        self.q_max_window = self.queue.len_pkts();
    }

    /// Close the queue integral at `now`.
    pub fn settle(&mut self, now: Time) {
        self.account_queue(now);
    }
}
