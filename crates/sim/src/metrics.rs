//! What a run reports: `summary.json` (this module's [`Summary`]) and the CSV time series.

use serde::Serialize;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScenarioInfo {
    pub name: String,
    pub file: String,
    pub duration_s: f64,
    /// Start of the measurement window (s); metrics marked "window" cover [measure_from_s, duration_s].
    pub measure_from_s: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SimInfo {
    /// Events processed.
    pub events: u64,
    /// Wall-clock time of the run (the one non-deterministic field).
    pub wall_time_s: f64,
    /// Packets transmitted on all links.
    pub link_packets: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowSummary {
    pub id: u32,
    pub name: String,
    pub kind: String,
    pub src: String,
    pub dst: String,
    pub cc: String,
    /// Application-level goodput over the window: in-order payload delivered to the receiver (bit/s).
    pub goodput_bps: f64,
    /// Sender payload transmission rate over the window, retransmissions included (bit/s).
    pub throughput_bps: f64,
    /// Payload bytes delivered in order to the receiving application, whole run.
    pub bytes_delivered: u64,
    /// Data segments sent (first transmissions and retransmissions; UDP packets), window.
    pub data_packets_sent: u64,
    /// Retransmitted data segments, window.
    pub retransmitted_packets: u64,
    /// Retransmitted / all data segments sent, window.
    pub retransmit_ratio: f64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub rtt_samples: u64,
    pub rtt_mean_ms: f64,
    pub rtt_min_ms: f64,
    pub rtt_max_ms: f64,
    /// Completed transfers (short flows; finite bulk flows count 1 when done).
    pub transfers_completed: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkSummary {
    pub name: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    /// Packets whose transmission started, whole run (a capture of the link sees exactly these).
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Queue (drop-tail) drops, whole run.
    pub drops: u64,
    /// Impairment (loss model) drops, whole run.
    pub lost: u64,
    /// Busy fraction over the window.
    pub utilization: f64,
    /// Time-average queue length over the window (packets).
    pub queue_avg_pkts: f64,
    /// Maximum queue length over the window (packets).
    pub queue_max_pkts: u64,
    /// Per-class counters of an asymmetric-link discipline (`qdisc`), whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<QdiscSummary>,
    /// Named counters of the discipline (e.g. `red_ecn_marks`), whole run.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub qdisc_counters: std::collections::BTreeMap<String, u64>,
}

/// Counters of a `qdisc` (ACK/data/non-TCP arrivals, departures, drops by reason, queue lengths at the end).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct QdiscSummary {
    #[serde(flatten)]
    pub stats: ackshape_core::shape::asym::AsymStats,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Aggregate {
    pub flows: u32,
    pub goodput_bps: f64,
    pub throughput_bps: f64,
    /// Jain's fairness index of per-flow goodput.
    pub jain: f64,
    /// Coefficient of variation (population σ / mean) of per-flow goodput.
    pub cov: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ShortSummary {
    pub count: u64,
    pub mean_s: f64,
    pub cov: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct VerifySummary {
    pub flows_checked: u32,
    pub bytes_checked: u64,
    /// Flows whose delivered stream differed from the sent stream.
    pub mismatched_flows: u32,
    /// Finite flows that ended with fewer bytes delivered than written.
    pub incomplete_flows: u32,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub scenario: ScenarioInfo,
    pub seed: u64,
    pub sim: SimInfo,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    pub aggregate: Aggregate,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_transfers: Option<ShortSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifySummary>,
    /// One entry per `[[middlebox]]`: node, kind, packets seen/emitted and the box's own stats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub middleboxes: Vec<serde_json::Value>,
}

impl Summary {
    pub fn link(&self, name: &str) -> Option<&LinkSummary> {
        self.links.iter().find(|l| l.name == name)
    }
}

/// Jain's fairness index of `x` (1 = equal).
pub fn jain(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 1.0;
    }
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * s2)
    }
}

/// Coefficient of variation (population standard deviation / mean).
pub fn cov(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    if m == 0.0 {
        return 0.0;
    }
    let var = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n;
    var.sqrt() / m
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fairness() {
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
        assert!((cov(&[1.0, 3.0]) - 0.5).abs() < 1e-12);
    }
}
