//! Gateway shaping mechanisms, as sans-IO [`QueueDisc`](crate::queue::QueueDisc)s and helpers.
//!
//! - [`aqm`]: today's delay-based AQMs and flow queuing: CoDel (RFC 8289), FQ-CoDel (RFC 8290),
//!   PIE (RFC 8033) and a CAKE-like shaper (COBALT, set-associative flow hashing, per-host
//!   fairness, deficit-mode shaper, CAKE's ACK filter).
//! - [`asym`]: queue disciplines for the output queues of a gateway on an asymmetric access
//!   link (paper 002): FIFO, ACKs-first, two ACK filters (the paper's classic one and a
//!   CAKE-safe one), ACQ and AFVQ, with per-discipline statistics and a serde spec.
//! - [`drr`]: per-flow queuing with Deficit Round Robin and longest-queue drop (PFQ).
//! - [`gateway`]: the edge gateway box: classify by policy rules, track flows, link-share
//!   among classes (HTB-like: rate, ceiling, priority, borrowing), leaf queues, and each class's
//!   ACK mechanism ([`ackmech`]: TCR, PostACK).
//! - [`policy`]: the gateway's shaping policy file (classes, rules) and its validation.
//! - [`qdisc_spec`]: the `qdisc = { kind = … }` table shared by scenario and policy files.
//! - [`pfq`]: per-flow token-bucket shaping at BW_c/n (paper 000's PFQ baseline).
//! - [`postack`]: PostACK (paper 000 §3, §6), an [`ackmech::AckMechanism`] that holds ACKs in
//!   per-flow ACK queues: basic, on-off (per-class timer) and zero-timer (clocked by PFQ+DRR).
//! - [`red`]: RED with ECN marking and the gentle variant (paper 001's baseline).
//! - [`tap`]: third-party flow control (paper 004): a mirror-port tap that injects duplicate
//!   ACKs (triple-ACK duplication, zero-window ACKs) with a feedback controller on the rate.
//! - [`tbf`]: token-bucket shaping of a FIFO (a class rate).
//! - [`tcr`]: TCP Rate Control (paper 001; paper 000 §2.4), an [`ackmech::AckMechanism`] that
//!   allocates the class rate (max-min or equal shares), rewrites receiver windows to A·RTT and
//!   paces ACKs at each flow's allocation.
//!
//! **What it is not.** Nothing here reads a clock, touches a socket or allocates per packet in
//! steady state; the simulator and the live gateway drive these types with `now` and packets.

pub mod ackmech;
pub mod aqm;
pub mod asym;
pub mod drr;
pub mod gateway;
pub mod guard;
pub mod mechanism;
pub mod mechstats;
pub mod pfq;
pub mod policy;
pub mod postack;
pub mod qdisc_spec;
pub mod qlink;
pub mod red;
pub mod tap;
pub mod tapkind;
pub mod tbf;
pub mod tcr;

use crate::time::Dur;

/// How much of a late wake-up the gateway makes up for. The live driver's timers run µs–ms late
/// and its process can stall for tens of ms; the gateway's line then starts its next frame when
/// the last one ended (up to this much in the past), PostACK's on-off timer runs the slots that
/// fell due within this much before `now`, and TCR moves its per-flow pacing grid by the lateness
/// beyond this much. Lateness beyond it is given up by all alike (the class's own bucket makes up
/// at most its `burst`): a line that cannot make up a stall's lost service must not be fed a
/// stall's worth of released ACKs either, or the data they trigger stays queued in the class
/// (docs/live.md, point 2). The simulator's wake-ups are exact, so there this never applies.
pub const LATE_WAKEUP_CATCHUP: Dur = Dur::from_millis(5);
