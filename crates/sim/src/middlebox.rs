//! Middleboxes at simulated nodes: the factory that turns a `[[middlebox]]` table into a
//! [`Middlebox`], and the per-box state the world keeps.

use crate::scenario::{MbMode, MiddleboxSpec};
use ackshape_core::middlebox::{Dir, Emit, Middlebox, Observe, PassThrough};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::Packet;
use std::collections::VecDeque;

/// The kinds `[[middlebox]] kind = …` accepts.
pub const KINDS: &[&str] = &["pass-through"];

/// Build the box a `[[middlebox]]` table describes. Errors are `(key within the table, message)`.
pub fn build_middlebox(spec: &MiddleboxSpec, seed: u64, index: usize) -> Result<Box<dyn Middlebox>, (String, String)> {
    let _ = (seed, index);
    match spec.kind.as_str() {
        "pass-through" => {
            if let Some(k) = spec.settings.keys().next() {
                return Err((k.clone(), "unknown key for kind \"pass-through\" (it has no settings)".into()));
            }
            // Mirrored, "pass-through" means: watch, inject nothing.
            Ok(match spec.mode {
                MbMode::Inline => Box::new(PassThrough),
                MbMode::Mirror => Box::new(Observe),
            })
        }
        other => Err(("kind".into(), format!("expected one of {}, got {other:?}", KINDS.join(", ")))),
    }
}

/// A box attached to a node, with its delay lines (mirror mode) and scratch output.
pub(crate) struct MbSlot {
    pub node: u32,
    pub wan_link: u32,
    pub mode: MbMode,
    pub delay: Dur,
    pub kind: String,
    pub mb: Box<dyn Middlebox>,
    /// The pending timer event, if any.
    pub timer: Option<Time>,
    /// Mirror mode: copies on their way to the box.
    pub copies: VecDeque<(Time, Dir, Packet)>,
    /// Mirror mode: injected packets on their way to the node.
    pub injects: VecDeque<(Time, Packet)>,
    pub out: Emit,
    pub packets_seen: u64,
    pub packets_emitted: u64,
}
