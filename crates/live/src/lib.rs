//! # ackshape-live
//!
//! The live driver of `ackshape-core`: shapes real Linux TCP between two real interfaces.
//!
//! **What it is.**
//! - [`gateway`]: an inline bump-in-the-wire between a LAN and a WAN interface (one AF_PACKET
//!   raw socket per port, `PACKET_IGNORE_OUTGOING` + `PACKET_AUXDATA`, each frame sent through the
//!   socket of the port it leaves by), classifying every frame and running a [`pipeline::Pipeline`]
//!   — the policy's shaping gateway ([`gateway::PolicyPipeline`]) or pass-through — with per-port
//!   and per-flow stats, a bounded flow table, JSON-lines and Prometheus export, pcap capture,
//!   SIGHUP policy reload and clean shutdown.
//! - [`mbpipe`]: any `ackshape_core` `Middlebox` (the edge gateway, a `qdisc-link`, a scenario's
//!   `[[middlebox]]`) as a pipeline: frames in as `Packet`s, emitted packets out as the original
//!   bytes, patched in place or written anew, at the box's own times.
//! - [`wanem`]: a userspace WAN emulator (delay, jitter, loss, rate limit with a drop-tail queue)
//!   using the simulator's own loss/delay models from `ackshape_core::impair`.
//! - [`testbed`]: network namespaces (sender — gateway — wanem — receiver) wired with veth
//!   pairs, with the offload settings the data plane needs; cleanup by name prefix (`acks-`).
//! - [`tap`]: the third-party tap (paper 004): reads a tc-mirrored copy of a router's traffic
//!   and injects duplicate ACKs through a second port; its namespace testbed.
//! - [`rig`]: a testbed with the gateway and wanem running as threads inside their namespaces.
//! - [`traffic`]: built-in TCP/UDP senders and receivers (per-flow `TCP_CONGESTION`, sha256 of
//!   what was moved, goodput time series) for live runs and tests; [`flowgen`]: synthetic load
//!   of many TCP-like flows injected on both sides of a testbed (benchmarks).
//! - [`port`]: the packet-I/O trait with AF_PACKET and in-memory ports and pcap/fault wrappers;
//!   [`engine`]: the two-port loop (recvmmsg/sendmmsg batches, classify with
//!   `ackshape_wire::Packet::parse_frame`, policy, pipeline verdicts and output, deadlines for
//!   held frames and pipeline timers with a busy-poll before each, stats) that the gateway and
//!   the wanem share.
//!
//! Entry points for the `ackshape` CLI: [`gateway::run`], [`wanem::run`], [`testbed::up`],
//! [`testbed::down`], [`rig::Rig::start`] + [`traffic::run_flows`] for `run --live`.
//!
//! **What it is not.** Not a router (no IP forwarding, ARP or routing: frames are bridged
//! untouched unless the pipeline rewrites them), not TPACKET_V3 or AF_XDP (yet), not a shaper by
//! itself (the shaping mechanisms live in `ackshape-core`), and not safe to point at ports with
//! checksum/segmentation/GRO offloads on: it refuses them at start (with the `ethtool -K` fix).
//! Everything here needs Linux; the gateway, wanem and testbed need root (CAP_NET_RAW,
//! CAP_NET_ADMIN, CAP_SYS_ADMIN for namespaces).
//!
//! All `unsafe` is in [`sys`].
#![deny(unsafe_code)]

pub mod classify;
pub mod clock;
pub mod compare;
pub mod engine;
pub mod flowgen;
pub mod gateway;
pub mod guide;
pub mod mbpipe;
pub mod metrics_http;
pub mod pipeline;
pub mod plan;
pub mod policy;
pub mod port;
pub mod privs;
pub mod rig;
pub mod run;
pub mod stats;
#[allow(unsafe_code)]
pub mod sys;
pub mod tap;
pub mod testbed;
pub mod testing;
pub mod traffic;
pub mod wanem;

pub use engine::Control;
pub use gateway::{GatewayConfig, GatewayError};
pub use wanem::{LinkSpec, WanemConfig};
