//! Sans-IO TCP endpoint models.
//!
//! A [`Connection`] is one end of a TCP connection (both halves: it can send and receive
//! data). Drivers feed it packets and time and poll it for segments and timer deadlines:
//!
//! ```text
//! conn.handle_packet(now, &pkt);          // a segment arrived for this connection
//! while let Some(p) = conn.poll_transmit(now) { send(p) }
//! if let Some(t) = conn.poll_timeout() { arm timer at t } // call handle_timeout(now) when due
//! while let Some(ev) = conn.poll_event() { ... }
//! ```
//!
//! Congestion control and loss recovery are selected by [`TcpConfig`].

mod cc;
mod config;
mod conn;
mod recv;
mod rtt;
mod scoreboard;
mod sendbuf;

pub use config::*;
pub use conn::*;
pub use sendbuf::{pattern_byte, pattern_bytes};
