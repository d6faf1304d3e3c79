//! The kinds a tap rule names: what it injects ([`Technique`]) and what its target rate applies
//! to ([`Scope`]). A leaf of [`crate::shape::tap`], so that its typed stats can name them too.

use serde::Deserialize;

/// What the tap injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Technique {
    /// `copies` exact duplicates of every f-th new ACK (P4-A1).
    TripleAck,
    /// One duplicate advertising `window` bytes on every f-th new ACK (P4-A2).
    ZeroWindow,
    /// Inject nothing; only measure.
    None,
}

/// What a target rate applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Each matching flow on its own.
    #[default]
    Flow,
    /// All the rule's flows together (a subscriber's subnet); one f for all of them.
    Aggregate,
}
