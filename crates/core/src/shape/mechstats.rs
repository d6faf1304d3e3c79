//! What the ACK mechanisms report ([`MechStats`]: TCR's [`TcrReport`], PostACK's
//! [`PostAckReport`]), typed; the drivers serialise them at the edge. A leaf of the mechanisms'
//! modules: they and the trait they implement name these types, these name none of them.

use super::guard::GuardStats;

/// What a mechanism reports ([`AckMechanism::stats`](crate::shape::ackmech::AckMechanism::stats)): one variant per mechanism. Serialised as
/// the mechanism's own object (no tag: each carries its kind in a field of its own).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum MechStats {
    Tcr(TcrReport),
    PostAck(PostAckReport),
    /// A mechanism with no report of its own (one defined outside this crate, a test's): what
    /// every mechanism has.
    Other {
        acks_held: usize,
    },
}

impl MechStats {
    /// TCR's report, if this is TCR's.
    pub fn tcr(&self) -> Option<&TcrReport> {
        match self {
            MechStats::Tcr(r) => Some(r),
            _ => None,
        }
    }
    /// PostACK's report, if this is PostACK's.
    pub fn postack(&self) -> Option<&PostAckReport> {
        match self {
            MechStats::PostAck(r) => Some(r),
            _ => None,
        }
    }
}

/// Counters (cumulative unless noted).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct TcrStats {
    pub flows_started: u64,
    pub flows_ended: u64,
    /// Flows first seen after their handshake (window not rewritten).
    pub flows_without_handshake: u64,
    /// Packets handed to `on_ack`.
    pub acks_in: u64,
    /// Packets sent towards senders (paced, forwarded, piggy-backed, flushed).
    pub acks_out: u64,
    /// Paced ACKs synthesised from a template.
    pub acks_paced: u64,
    /// Pure ACKs below the receiver's highest, dropped (their information was already held).
    pub acks_stale_dropped: u64,
    pub dupacks_in: u64,
    pub dupacks_out: u64,
    /// ACKs whose window field was lowered.
    pub window_rewrites: u64,
    /// Data packets from receivers whose ACK number/window was rewritten.
    pub piggyback_rewrites: u64,
    /// ACKs sent without the SACK blocks their template had.
    pub sack_withheld: u64,
    /// Most ACKs held at once (over all flows).
    pub acks_held_max: u64,
    /// Allocation passes run.
    pub allocations: u64,
    pub rtt_samples: u64,
    /// RTT samples discarded (retransmission overlap, or the timed segment's dequeue was not seen).
    pub rtt_samples_discarded: u64,
    /// Per-flow pacing: timer calls that came more than
    /// [`LATE_WAKEUP_CATCHUP`](crate::shape::LATE_WAKEUP_CATCHUP) late (live only), and the time
    /// every flow's pacing grid was moved by for them, ns.
    pub late_timer_shifts: u64,
    pub late_timer_shift_ns: u64,
    /// Packets inconsistent with what the gateway saw of their flow: they moved no state.
    pub inconsistent: GuardStats,
}

/// What TCR reports ([`AckMechanism::stats`](crate::shape::ackmech::AckMechanism::stats)): its counters, what it holds now and the first
/// [`TcrReport::LISTED`] flows. Serialised flat: the counters' keys beside the others.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct TcrReport {
    /// Always `"tcr"`.
    pub kind: &'static str,
    #[serde(flatten)]
    pub counters: TcrStats,
    /// ACKs held now.
    pub acks_held: u64,
    /// Flows tracked now.
    pub flows: usize,
    /// Entries in the pacing timer heap.
    pub timer_entries: usize,
    /// The first [`TcrReport::LISTED`] flows.
    pub per_flow: Vec<FlowInfo>,
}

impl TcrReport {
    /// How many flows `per_flow` lists at most (the live gateway takes these stats every second
    /// on its data-plane thread).
    pub const LISTED: usize = 64;
}

/// A snapshot of one flow's state (tests, stats).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct FlowInfo {
    pub flow: String,
    /// Allocation A_i, bit/s of class bytes.
    pub alloc_bps: f64,
    /// Measured rate R_i (EWMA), bit/s of class bytes.
    pub rate_bps: f64,
    pub bottlenecked: bool,
    /// Counts in the allocation.
    pub member: bool,
    pub srtt_ms: Option<f64>,
    pub rtt_min_ms: Option<f64>,
    /// Gateway → sender → gateway, smallest seen.
    pub lan_rtt_ms: Option<f64>,
    pub mss: u32,
    /// A full segment as the class counts it, bytes.
    pub segment_bytes: u32,
    pub rcv_scale: Option<u8>,
    /// The window TCR aims at (A·RTT, rounded, floored), bytes.
    pub window_target_bytes: Option<u64>,
    /// The window last written (raw field × 2^scale), bytes.
    pub window_bytes: u64,
    pub left_edge: u32,
    pub right_edge: u32,
    pub dupacks_pending: u32,
    /// ACKs held (queued bytes in release units + duplicates).
    pub acks_queued: u32,
}

/// What PostACK reports ([`AckMechanism::stats`](crate::shape::ackmech::AckMechanism::stats)).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct PostAckReport {
    /// Always `"postack"`.
    pub mechanism: &'static str,
    /// `basic`, `on-off` or `zero-timer`.
    pub variant: &'static str,
    /// The class rate it paces to, bit/s.
    pub rate_bps: u64,
    /// Flows counted active (n of BW_c/n).
    pub active_flows: usize,
    /// The on-off variant's slot period, ms.
    pub slot_period_ms: Option<f64>,
    pub packet_bytes: u32,
    pub acks_held: u64,
    pub acks_held_max: u64,
    pub hold_ms_mean: f64,
    pub hold_ms_max: f64,
    pub counters: PostAckStats,
    /// Flows tracked now.
    pub flows_live: usize,
    /// The first [`PostAckReport::LISTED`] live flows.
    pub flows: Vec<PostAckFlow>,
}

impl PostAckReport {
    /// How many flows `flows` lists at most.
    pub const LISTED: usize = 64;
}

/// One flow in [`PostAckReport::flows`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct PostAckFlow {
    /// `src:sport>dst:dport`.
    pub flow: String,
    /// ACKs held now, and at most.
    pub held: usize,
    pub held_max: usize,
    pub released: u64,
    pub qr_skips: u64,
    /// Data sent, in segments of the flow's MSS.
    pub out_segments: f64,
    /// The flow's packets in the class queue (zero-timer).
    pub in_class: usize,
    pub active: bool,
    pub min_rtt_ms: Option<f64>,
}

/// Class-wide counters. `#[non_exhaustive]`: more may come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct PostAckStats {
    /// Packets given to `on_ack`.
    pub acks_in: u64,
    /// Of which forwarded at once (not held).
    pub forwarded_now: u64,
    /// ACKs that entered a per-flow ACK queue.
    pub acks_queued: u64,
    /// ACKs released from the queues (by any rule).
    pub released: u64,
    /// Released by the mechanism's rule (slot, deadline, qlen table).
    pub released_by_rule: u64,
    /// Released ahead of a SYN/FIN/RST/piggy-backed ACK of their flow (order kept).
    pub released_by_flush: u64,
    /// Released because the flow ended.
    pub released_by_flow_end: u64,
    /// Released because the flow's queue exceeded `max_held_per_flow`.
    pub released_by_overflow: u64,
    /// Released by the P0-16 hook (an ACK arrived for a flow with nothing in the class).
    pub released_by_empty_hook: u64,
    /// ACKs held now, and the most held at once.
    pub held_now: u64,
    pub held_max: u64,
    /// Time released ACKs spent held: sum and maximum, ns.
    pub hold_ns_sum: u64,
    pub hold_ns_max: u64,
    /// on-off: class slots run, slots skipped by the QueueRelocator, slots that found no ACK.
    pub slots: u64,
    pub qr_skips: u64,
    pub unused_slots: u64,
    /// on-off: slots not run because the timer came more than
    /// [`LATE_WAKEUP_CATCHUP`](crate::shape::LATE_WAKEUP_CATCHUP) after them (live only).
    pub late_slots_given_up: u64,
    /// zero-timer: dequeues seen, those that held (the paper's qlen > 1), and those reported without
    /// a per-flow queue length (FIFO fallback).
    pub dequeues: u64,
    pub table_holds: u64,
    pub dequeues_without_qlen: u64,
    /// Data packets given to `on_data`.
    pub data_in: u64,
    /// Packets inconsistent with what the gateway saw of their flow (see `guard`): never held,
    /// never flushing what is held, no state learnt.
    pub inconsistent: GuardStats,
}
