//! # ackshape-sim
//!
//! The deterministic discrete-event simulator: the embedded default driver of `ackshape-core`.
//!
//! **What it is.** A packet-level simulator of hosts running `ackshape-core`'s TCP endpoint models,
//! routers, and links with rate, propagation delay, drop-tail (or any [`QueueDisc`]) queues and
//! wan-emu impairments (loss models, jitter). Scenarios are TOML files ([`scenario`]); a run yields a
//! [`metrics::Summary`] (`summary.json`), goodput time series and optional pcap captures.
//! Events at the same instant run in scheduling order; every random stream is derived from the
//! scenario seed, so the same scenario and seed give identical results.
//!
//! **What it is not.** No wall clock, no sockets: the live gateway is `ackshape-live`. It models
//! no link-layer effects beyond serialisation time (no MAC contention, no PHY errors).
//!
//! [`QueueDisc`]: ackshape_core::queue::QueueDisc
#![deny(unsafe_code)]

pub mod dask;
pub mod engine;
pub mod keypath;
pub mod link;
pub mod metrics;
pub mod middlebox;
pub mod parallel;
pub mod pcap;
pub mod plot;
pub mod pool;
pub mod provenance;
pub mod run;
pub mod scenario;
pub mod stats;
pub mod store;
pub mod sweep;
pub mod world;

pub use metrics::Summary;
pub use scenario::{Scenario, ScenarioError};
pub use world::{RunOptions, Sim};
