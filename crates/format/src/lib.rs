//! The file formats of ackshape, at the edge of the sans-IO core: reading files into the core's
//! typed configurations, and turning the core's values into text for people.
//!
//! - [`policy`]: reading a gateway policy file (`--policy`, a scenario's `policy_file`) into a
//!   validated [`Policy`](ackshape_core::shape::policy::Policy); errors name the file, the key and
//!   what was expected.
//! - [`policy_report`]: what a validated policy will do, for people (`ackshape validate
//!   --policy`, the live gateway's start and reload lines), and warnings about valid policies that
//!   are probably not what the author meant.
//! - [`tomlerr`]: how every TOML reader words a syntax error (its line) and a bad value (its key).
//! - [`tap`]: reading a tap configuration (`ackshape tap --policy`, a scenario's tap box) into
//!   a validated [`TapSpec`](ackshape_core::shape::tap::TapSpec).
//!
//! **What it is not.** No decision about packets lives here; `ackshape-core` does not depend on
//! this crate, and the simulator and the live gateway read their files through it.

pub mod policy;
pub mod policy_report;
pub mod tap;
pub mod tomlerr;
