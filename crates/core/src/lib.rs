//! # ackshape-core
//!
//! Everything in ackshape that *decides*, as sans-IO state machines: packets and `now` go in,
//! packets, verdicts and timer deadlines come out.
//!
//! - [`tcp`]: TCP endpoint models (sender variants, receiver) used by the simulator.
//! - [`impair`]: loss and delay models shared by simulated links and the live WAN emulator.
//! - [`model`]: analytic TCP throughput models (Mathis, Padhye).
//! - [`time`], [`rng`]: time passed in by drivers; seeded random streams.
//!
//! **What it is not.** It never touches a socket, a file or the OS clock; the `ackshape-sim` and
//! `ackshape-live` crates are its two drivers.
#![deny(unsafe_code)]

pub mod impair;
pub mod model;
pub mod queue;
pub mod rng;
pub mod tcp;
pub mod time;
pub mod units;

pub use time::{Dur, Time};
