//! # ackshape-wire
//!
//! Packet representation, views, builders and checksums shared by every part of ackshape.
#![deny(unsafe_code)]

pub mod checksum;
pub mod packet;
pub mod parse;
pub mod pcap;
pub mod seq;
pub mod testing;
pub mod view;
pub mod write;

pub use packet::*;
pub use parse::{verify_checksums, ChecksumError, Layer, OptionProblem, ParseError, ParsedFrame, ParsedIp};
pub use seq::SeqNum;
pub use view::{set_ip_ecn, TcpFrameMut, ViewError};
pub use write::MAX_TCP_OPTIONS_LEN;
