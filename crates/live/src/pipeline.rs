//! The shaping pipeline the engine runs on every frame: a sans-IO trait (frames and `now` in,
//! verdicts and deadlines out), the pass-through implementation, and the gateway's policy.

use crate::classify::FrameClass;
use ackshape_core::time::Time;

/// Direction of a frame through a two-port box (gateway: `AToB` = LAN → WAN). The same type
/// as the simulator's middlebox direction.
pub use ackshape_core::middlebox::Dir;

/// What to do with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it out of the other port now.
    Forward,
    /// Discard it.
    Drop,
    /// Send it out of the other port at this time (now or earlier = forward now).
    HoldUntil(Time),
}

/// A shaping stage. The engine calls `on_frame` for every frame that policy does not drop
/// outright, `on_timeout` when `poll_timeout` has passed. Implementations may rewrite the frame
/// in place (its length is fixed).
pub trait Pipeline: Send {
    fn on_frame(&mut self, now: Time, dir: Dir, frame: &mut [u8], class: &FrameClass) -> Verdict;
    /// The next time the pipeline wants `on_timeout` (None = no timer).
    fn poll_timeout(&self) -> Option<Time> {
        None
    }
    fn on_timeout(&mut self, _now: Time) {}
    /// Pipeline-specific stats merged into the JSON/Prometheus output.
    fn stats_json(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Forwards everything unchanged.
#[derive(Clone, Copy, Debug, Default)]
pub struct PassThrough;

impl Pipeline for PassThrough {
    fn on_frame(&mut self, _now: Time, _dir: Dir, _frame: &mut [u8], _class: &FrameClass) -> Verdict {
        Verdict::Forward
    }
}
