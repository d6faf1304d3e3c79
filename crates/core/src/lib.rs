//! # ackshape-core
//!
//! Everything in ackshape that *decides*, as sans-IO state machines: packets and `now` go in,
//! packets, verdicts and timer deadlines come out.
//!
//! - [`tcp`]: TCP endpoint models (Tahoe, Reno, NewReno, SACK, CUBIC, MulTCP, a misbehaving
//!   sender; RFC 6298 timers with a configurable clock tick; delayed ACKs, SACK, timestamps, ECN),
//!   and paper 003's sender-side Virtual Packet Substitution ([`tcp::vps`]).
//! - [`queue`]: the [`queue::QueueDisc`] seam where shaping plugs into an output, and drop-tail.
//! - [`shape`]: the gateway mechanisms: the edge gateway (policy, classes, link sharing) with
//!   TCR (paper 001) and PostACK (paper 000) as its ACK mechanisms, PFQ, DRR, RED/ECN, the
//!   asymmetric-link disciplines of paper 002 (AFVQ, ACKs-first, ACK filters, ACQ) and the
//!   third-party tap of paper 004.
//! - [`middlebox`]: the [`middlebox::Middlebox`] seam for boxes in the path (edge gateway, tap).
//! - [`impair`]: loss and delay models shared by simulated links and the live WAN emulator.
//! - [`model`], [`model_afvq`], [`model_edge`]: analytic throughput models (Mathis, Padhye; paper
//!   002's two-way model; paper 000's edge-gateway model of App. B/C, corrected).
//! - [`units`]: values with units as written in scenario and policy files; [`table`]: tables
//!   picked by a key (`qdisc`, `mechanism`), held without their file format, and how every
//!   reader names the key of a bad value.
//! - [`time`], [`rng`]: time passed in by drivers; seeded random streams.
//!
//! **What it is not.** It never touches a socket, a file or the OS clock, and it has no event loop:
//! the `ackshape-sim` and `ackshape-live` crates are its two drivers.
#![deny(unsafe_code)]

pub mod hash;
pub mod impair;
pub mod middlebox;
pub mod model;
pub mod model_afvq;
pub mod model_edge;
pub mod queue;
pub mod rng;
pub mod shape;
pub mod stats;
pub mod table;
pub mod tcp;
pub mod time;
pub mod units;

pub use time::{Dur, Time};
