//! The shaping pipeline the engine runs on every frame: a sans-IO trait (frames and `now` in,
//! verdicts, frames and deadlines out) and the pass-through implementation. Any core
//! `Middlebox` runs as one through [`crate::mbpipe::MiddleboxPipeline`].

use crate::classify::FrameClass;
use ackshape_core::time::Time;
use bytes::Bytes;

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
    /// The pipeline took the frame; what it sends instead (now or later, either way) comes out
    /// of [`Pipeline::take_output`].
    Consumed,
}

/// A frame a pipeline wants sent (see [`Verdict::Consumed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutFrame {
    /// Direction it travels (`AToB` leaves by port B).
    pub dir: Dir,
    pub frame: Bytes,
    /// The timer deadline that released it (None: sent in response to an arriving frame); the
    /// engine records how late it left.
    pub due: Option<Time>,
}

/// A shaping stage. The engine calls `on_frame` for every frame that policy does not drop
/// outright, `on_timeout` when `poll_timeout` has passed. Implementations may rewrite the frame
/// in place (its length is fixed).
/// What a [`Pipeline::preparer`] built off the data path.
pub type Prepared = Box<dyn std::any::Any + Send>;
/// Builds a [`Prepared`] for a validated policy, on the engine's loader thread.
pub type Preparer = std::sync::Arc<dyn Fn(&crate::policy::Policy) -> Prepared + Send + Sync>;

pub trait Pipeline: Send {
    fn on_frame(&mut self, now: Time, dir: Dir, frame: &mut [u8], class: &FrameClass) -> Verdict;
    /// The next time the pipeline wants `on_timeout` (None = no timer).
    fn poll_timeout(&self) -> Option<Time> {
        None
    }
    fn on_timeout(&mut self, _now: Time) {}
    /// Move the frames the pipeline wants sent now into `out` (called after every `on_frame`
    /// that returned [`Verdict::Consumed`] and after every `on_timeout`).
    fn take_output(&mut self, _out: &mut Vec<OutFrame>) {}
    /// The engine reloaded its policy (SIGHUP): adopt it, or say why not (the engine then keeps
    /// the running policy and counts a reload error). Default: nothing to do.
    fn reload(&mut self, _now: Time, _policy: &crate::policy::Policy) -> Result<(), String> {
        Ok(())
    }
    /// [`Pipeline::reload`] with a policy of its own to keep (the engine clones it on its loader
    /// thread, so a pipeline that keeps the policy need not copy it on the data path). Default:
    /// `reload(now, &policy)`.
    fn reload_owned(&mut self, now: Time, policy: crate::policy::Policy) -> Result<(), String> {
        self.reload(now, &policy)
    }
    /// What the engine's loader thread may build for a validated policy before handing it over
    /// (e.g. the new shaping box), so the data path only swaps it in. Default: nothing.
    fn preparer(&self) -> Option<Preparer> {
        None
    }
    /// [`Pipeline::reload_owned`] with what [`Pipeline::preparer`] built for this policy.
    /// Default: ignore it.
    fn reload_prepared(
        &mut self,
        now: Time,
        policy: crate::policy::Policy,
        _prepared: Option<Prepared>,
    ) -> Result<(), String> {
        self.reload_owned(now, policy)
    }
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
