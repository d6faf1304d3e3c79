//! # ackshape-wire
//!
//! Packet representation, views, builders and checksums shared by every part of ackshape.
//!
//! **What it is.** [`Packet`] is a compact header struct (IP, TCP with options, UDP) plus a payload
//! that is either real bytes or only a length. The simulator moves `Packet`s; the live gateway parses
//! frames into `Packet`s for its decisions and patches the original bytes in place (see `view`), so the
//! shaping code in `ackshape-core` sees one type in both drivers.
//!
//! **What it is not.** No I/O, no clocks, no policy. It never panics on input: parsing returns errors.
#![deny(unsafe_code)]

pub mod packet;
pub mod seq;

pub use packet::*;
pub use seq::SeqNum;
