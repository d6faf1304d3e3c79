//! # ackshape-sim
//!
//! The deterministic discrete-event simulator: the embedded default driver of `ackshape-core`.
#![deny(unsafe_code)]
