//! What a box reports ([`crate::middlebox::Middlebox::stats`]): typed counters and gauges, one
//! struct per kind of box, serialised by the drivers at the edge (the simulator's
//! `summary.json`, the live gateway's stats lines and Prometheus endpoint). Field names are the
//! keys of those reports; a field that is `None` is left out unless its doc says it reads null.
//!
//! A leaf module: it names only the types the boxes report (mechanism and discipline stats, the
//! tap's kinds), never the boxes.

use crate::shape::asym::AsymStats;
use crate::shape::mechstats::MechStats;
use crate::shape::tapkind::{Scope, Technique};
use serde::Serialize;
use std::collections::BTreeMap;

/// A box's report. Serialised as the report's own object (no tag); [`BoxStats::None`] as null.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum BoxStats {
    /// A box with nothing to report.
    #[default]
    None,
    /// A single counter (a box of a test or of a driver).
    Count(u64),
    /// Boxes in series or side by side, each report under its box's name.
    Named(BTreeMap<String, BoxStats>),
    /// A rate-limited link with a queueing discipline per direction.
    Link(LinkStats),
    /// A link with loss and delay around its discipline (the WAN emulator's path).
    ImpairedLink(ImpairedLinkStats),
    /// The edge gateway.
    Gateway(Box<GatewayStats>),
    /// The third-party tap.
    Tap(Box<TapStats>),
}

impl BoxStats {
    /// The gateway's report, if this is the gateway's.
    pub fn gateway(&self) -> Option<&GatewayStats> {
        match self {
            BoxStats::Gateway(g) => Some(g),
            _ => None,
        }
    }
    /// The tap's report, if this is the tap's.
    pub fn tap(&self) -> Option<&TapStats> {
        match self {
            BoxStats::Tap(t) => Some(t),
            _ => None,
        }
    }
    /// The report as JSON, for tests that read it by key as the drivers' reports do.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("stats serialise")
    }
    /// The report of the box named `name` (in a series or a split).
    pub fn named(&self, name: &str) -> Option<&BoxStats> {
        match self {
            BoxStats::Named(m) => m.get(name),
            _ => None,
        }
    }
}

/// Both directions of a rate-limited link; a direction without a shaper reads null.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LinkStats {
    pub a_to_b: Option<LinkDirStats>,
    pub b_to_a: Option<LinkDirStats>,
}

/// One direction of a rate-limited link.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LinkDirStats {
    pub rate_bps: u64,
    /// Packets offered to the discipline.
    pub enqueued: u64,
    pub sent: u64,
    pub sent_bytes: u64,
    /// Dropped on arrival or inside the discipline.
    pub dropped: u64,
    /// Packets queued now.
    pub queue_pkts: u64,
    /// Most packets queued.
    pub data_queue_max_pkts: u64,
    /// The discipline's own counters, by name.
    pub qdisc: BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asym: Option<AsymStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmSummary>,
}

/// An active queue manager's sojourn times and verdicts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AqmSummary {
    pub packets: u64,
    pub sojourn_avg_ms: f64,
    pub sojourn_max_ms: f64,
    pub drops: u64,
    pub marks: u64,
}

/// Both directions of a link with loss and delay around its discipline.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ImpairedLinkStats {
    pub a_to_b: ImpairedDirStats,
    pub b_to_a: ImpairedDirStats,
}

/// One direction of an impaired link: the discipline's stats (if it has one) and the keys of the
/// WAN emulator's own stats, so a run reads either.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ImpairedDirStats {
    #[serde(flatten)]
    pub link: Option<LinkDirStats>,
    /// Packets arrived.
    pub frames: u64,
    /// Lost before the queue.
    pub lost: u64,
    /// Left the delay line.
    pub forwarded: u64,
    /// The discipline's drops.
    pub queue_drops: u64,
    /// The discipline's most packets.
    pub max_queue: u64,
    /// In the delay line now.
    pub in_flight: u64,
    /// Most in the delay line.
    pub in_flight_max: u64,
}

/// The edge gateway's report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GatewayStats {
    /// Each class (per-host classes: the busiest of each template), by name.
    pub classes: BTreeMap<String, ClassStats>,
    pub buffer: BufferStats,
    pub flows: FlowTableStats,
    pub unclassified_pkts: u64,
    /// Totals of each per-host template, by template name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_host: BTreeMap<String, PerHostStats>,
}

/// One class of the gateway, its directions summed (maxima: the larger).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ClassStats {
    /// The parent class's name (null: a root).
    pub parent: Option<String>,
    pub rate_bps: u64,
    pub ceil_bps: u64,
    pub priority: u8,
    /// "outbound", "inbound" or both.
    pub directions: Vec<&'static str>,
    /// The mechanism's kind (null: none).
    pub mechanism: Option<String>,
    pub enqueued_pkts: u64,
    pub enqueued_bytes: u64,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub borrowed_pkts: u64,
    pub drops: u64,
    pub acks_in: u64,
    pub data_queue_avg_pkts: f64,
    pub data_queue_max_pkts: u64,
    pub acks_held_avg: f64,
    pub acks_held_max: u64,
    /// The same since the scenario's warm-up (when the window started).
    #[serde(flatten)]
    pub after_warmup: Option<ClassWindowStats>,
    /// A leaf's discipline per direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<BTreeMap<&'static str, LeafStats>>,
    /// A leaf's mechanism's report per direction (left out when it has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mechanism_stats: Option<BTreeMap<&'static str, MechStats>>,
    /// The rate the mechanism paces to, per direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mechanism_rate_bps: Option<BTreeMap<&'static str, u64>>,
}

/// A class's occupancy and drops since the scenario's warm-up (start-up bursts, e.g. the flows'
/// initial windows, which no ACK can pace, excluded).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ClassWindowStats {
    pub data_queue_max_pkts_after_warmup: u64,
    pub data_queue_avg_pkts_after_warmup: f64,
    pub acks_held_max_after_warmup: u64,
    pub acks_held_avg_after_warmup: f64,
    pub drops_after_warmup: u64,
}

/// A leaf class's discipline in one direction.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LeafStats {
    pub queue_pkts: u64,
    pub queue_bytes: u64,
    /// The discipline's own counters, by name.
    pub counters: BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asym: Option<AsymStats>,
}

/// The gateway's whole buffer (all classes); the `…_after_warmup` values read null before the
/// window starts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BufferStats {
    pub data_avg_pkts: f64,
    pub data_max_pkts: u64,
    pub acks_avg: f64,
    pub acks_max: u64,
    pub data_max_pkts_after_warmup: Option<u64>,
    pub data_avg_pkts_after_warmup: Option<f64>,
    pub acks_max_after_warmup: Option<u64>,
    pub acks_avg_after_warmup: Option<f64>,
}

/// The gateway's flow table.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FlowTableStats {
    pub tracked: u64,
    pub shaped: u64,
    pub untracked_class_full: u64,
    pub untracked_source_full: u64,
    pub untracked_embryonic_full: u64,
    pub max_flows_per_class: u64,
    pub max_embryonic_per_class: u64,
    pub created: u64,
    pub ended: u64,
    pub evicted: u64,
    pub receiver_opened: u64,
    pub opening_syns_kept: u64,
    pub untracked_pkts: u64,
    pub reversed_pkts: u64,
}

/// Totals of one per-host class template.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PerHostStats {
    /// Classes (hosts) of the template.
    pub classes: u64,
    /// Those with any traffic.
    pub active: u64,
    /// Those listed under the gateway's `classes`.
    pub listed: u64,
    pub enqueued_pkts: u64,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub drops: u64,
    pub acks_in: u64,
    pub data_queue_pkts: u64,
    pub acks_held: u64,
}

/// The third-party tap's report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TapStats {
    pub packets_seen: u64,
    pub non_tcp: u64,
    pub acks_beyond_data: u64,
    pub flows_now: u64,
    pub flows_untracked: u64,
    pub flows_evicted: u64,
    pub injections: u64,
    pub packets_injected: u64,
    pub rules: Vec<TapRuleStats>,
    /// The busiest flows (by data bytes).
    pub top_flows: Vec<TapFlowStats>,
    /// The controller's samples (with `history = true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<CtlSample>>,
}

/// One tap rule.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TapRuleStats {
    pub name: String,
    pub technique: Technique,
    pub flows: u64,
    pub data_bytes: u64,
    pub new_data_bytes: u64,
    pub acks: u64,
    pub new_acks: u64,
    pub injections: u64,
    pub packets_injected: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_bps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// f: the controller's, or the fixed one (left out for a target without a controller yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every: Option<f64>,
    #[serde(flatten)]
    pub control: Option<TapControlStats>,
}

/// A tap rule's rate controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TapControlStats {
    pub rate_bps: f64,
    pub samples: u64,
    pub saturated_low: u64,
    pub saturated_high: u64,
}

/// One flow the tap follows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TapFlowStats {
    pub id: u64,
    /// "address:port".
    pub src: String,
    pub dst: String,
    /// The rule's index.
    pub rule: u64,
    pub data_bytes: u64,
    pub new_data_bytes: u64,
    pub acks: u64,
    pub new_acks: u64,
    pub injections: u64,
    pub every: f64,
    #[serde(flatten)]
    pub control: Option<TapFlowControlStats>,
}

/// A flow's rate controller.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TapFlowControlStats {
    pub rate_bps: f64,
    pub saturated_low: u64,
    pub saturated_high: u64,
}

/// One controller sample (recorded when `history = true`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CtlSample {
    pub t_s: f64,
    pub rule: usize,
    /// Flow id (scope = flow) or None (aggregate).
    pub flow: Option<u64>,
    /// Rate measured over the last interval (bit/s).
    pub raw_bps: f64,
    /// Smoothed rate (bit/s).
    pub rate_bps: f64,
    /// f after this sample.
    pub every: f64,
}
