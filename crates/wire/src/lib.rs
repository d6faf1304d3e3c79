//! # ackshape-wire
//!
//! Packet representation, views, builders and checksums shared by every part of ackshape.
//!
//! **What it is.**
//! - [`packet`]: [`Packet`], the one packet type of the core, the simulator and the live gateway:
//!   the IP and TCP/UDP header fields ackshape reads or writes, kept as a struct, and the payload's
//!   length with its bytes only when they are carried ([`Packet::payload`]).
//! - [`parse`]: Ethernet frames (one 802.1Q tag at most) and IPv4/IPv6 packets into a
//!   [`Packet`], with the byte offsets of each layer; never panics, every refusal a
//!   [`ParseError`]; fragments come out as `L4::Other`.
//! - [`write`](mod@write): a [`Packet`] into an exact, valid IP packet or Ethernet frame.
//! - [`view`]: in-place patching of a frame's TCP/IP fields with incremental checksum updates,
//!   for the live hot path.
//! - [`checksum`] (RFC 1071 and RFC 1624), [`seq`] (wrapping sequence numbers), [`pcap`] (capture
//!   files Wireshark opens, over `pcap-file`), [`testing`] (a deterministic corpus of malformed
//!   frames every crate's robustness tests share).
//!
//! **Why headers are a struct, not bytes.** The simulator moves millions of packets and its
//! mechanisms read a few fields of each (ports, sequence numbers, flags, window, SACK blocks): as
//! a struct they cost no parsing and no serialisation unless a pcap or the live path needs the
//! bytes. The live gateway parses each frame once into the same struct, decides on it with the
//! same core code, and patches the original bytes through [`view`] rather than re-serialising.
//!
//! **What it is not.** No I/O (the pcap writer takes any `std::io::Write`), no TCP state and no
//! decisions: those are `ackshape-core`'s. It is not a general protocol library either: only the
//! fields and options ackshape uses are represented (IPv4 options are skipped; other TCP options
//! are noted, `has_other`, not kept), and IP fragments are not reassembled.
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
pub use parse::{
    verify_checksums, verify_parsed, ChecksumError, Layer, OptionProblem, ParseError, ParsedFrame, ParsedIp,
};
pub use seq::SeqNum;
pub use view::{set_ip_ecn, TcpFrameMut, ViewError};
pub use write::MAX_TCP_OPTIONS_LEN;
