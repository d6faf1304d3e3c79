//! What a run reports: `summary.json` (this module's [`Summary`]) and the CSV time series.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ScenarioInfo {
    pub name: String,
    pub file: String,
    pub duration_s: f64,
    /// Start of the measurement window (s); metrics marked "window" cover [measure_from_s, duration_s].
    pub measure_from_s: f64,
    /// The `--set KEY=VALUE`s applied to the file (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SimInfo {
    /// Events processed.
    pub events: u64,
    /// Wall-clock time of the run (the one non-deterministic field).
    pub wall_time_s: f64,
    /// Packets transmitted on all links.
    pub link_packets: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LinkSummary {
    pub name: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    /// Packets whose transmission started, whole run (a capture of the link sees exactly these).
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Queue drops, whole run: packets the discipline refused (drop-tail) and, for the AQM
    /// disciplines, those it dropped from its queues (head drops, drops from the fattest flow).
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
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub qdisc_counters: std::collections::BTreeMap<String, u64>,
    /// Sojourn times, drops and marks of the AQM disciplines (`codel`, `fq-codel`, `pie`,
    /// `cake`) over the measurement window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmSummary>,
    /// Goodput of the TCP flows whose data crosses this link direction, window (bit/s).
    pub tcp_goodput_bps: f64,
    /// `tcp_goodput_bps / rate_bps`: the share of the raw rate that carried TCP payload delivered
    /// in order (paper 002's per-direction utilization, with goodput for its "TCP throughput").
    pub goodput_utilization: f64,
    /// Per-class queue lengths, departures and drops over the window, for the asymmetric-link
    /// disciplines (`qdisc = { kind = "afvq" }` etc.).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<ClassesSummary>,
}

/// An AQM discipline on one link direction, over the measurement window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct AqmSummary {
    /// Average sojourn time (enqueue to dequeue) of the packets dequeued in the window (ms).
    pub sojourn_avg_ms: f64,
    /// The longest sojourn time, whole run (ms).
    pub sojourn_max_ms: f64,
    /// Packets dequeued in the window.
    pub packets: u64,
    /// Packets the discipline dropped in the window (buffer limit, AQM, overflow, ACK filter).
    pub drops: u64,
    /// Packets it marked CE in the window.
    pub marks: u64,
}

/// One traffic class of an asymmetric-link discipline, over the measurement window.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClassQueue {
    /// Time-average number of queued packets of this class.
    pub queue_avg_pkts: f64,
    /// Maximum number of queued packets of this class.
    pub queue_max_pkts: u64,
    pub arrived: u64,
    /// Packets of this class sent on the link.
    pub dequeued: u64,
    /// Packets of this class dropped by the discipline (arriving or already queued).
    pub dropped: u64,
    /// Average queueing delay of this class by Little's law, `queue_avg_pkts / (dequeued / window)`
    /// (seconds; 0 when nothing departed).
    pub queue_delay_avg_s: f64,
}

/// Per-class view of an asymmetric-link discipline over the measurement window (see
/// `ackshape_core::shape::asym` for the classes: a pure TCP ACK is TCP with ACK set, no payload,
/// no SYN/FIN/RST).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClassesSummary {
    /// The discipline's `kind` as in the scenario (`afvq`, `fifo`, …).
    pub kind: String,
    pub ack: ClassQueue,
    pub data: ClassQueue,
    pub non_tcp: ClassQueue,
    /// ACK drops by reason: the ACK queue (or the shared FIFO) was full on arrival …
    pub ack_drops_queue_full: u64,
    /// … an ACK filter removed an ACK made redundant by a newer one …
    pub ack_drops_filtered: u64,
    /// … AFVQ's drop-random on ACK-queue overflow (Eq. 16's size `s`).
    pub ack_drops_random: u64,
}

/// Paper 002's metrics for one asymmetric access link (a link whose two directions differ in
/// rate, or run an asymmetric-link discipline). *Up* is the slower direction (the forward one
/// when both rates are equal), *down* the other.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AsymLinkSummary {
    /// The link's name (its forward direction).
    pub link: String,
    /// Direction names, e.g. `access` and `access:rev`.
    pub up: String,
    pub down: String,
    pub up_rate_bps: u64,
    pub down_rate_bps: u64,
    /// Goodput of TCP flows whose data crosses each direction, window (bit/s).
    pub up_goodput_bps: f64,
    pub down_goodput_bps: f64,
    /// U_u, U_d: goodput / raw rate of the direction.
    pub up_utilization: f64,
    pub down_utilization: f64,
    /// U_u + U_d (ideal 2).
    pub aggregated_utilization: f64,
    /// Population variance of {U_u, U_d}: ((U_u − U_d)/2)² (at most 0.25).
    pub utilization_variance_population: f64,
    /// Sample variance of {U_u, U_d}: (U_u − U_d)²/2 (at most 0.5).
    pub utilization_variance_sample: f64,
    /// Downlink rate / uplink rate.
    pub asymmetry_ratio: f64,
}

impl AsymLinkSummary {
    /// Build from the two directions' rates and TCP goodputs.
    pub fn new(link: &str, up: &LinkSummary, down: &LinkSummary) -> AsymLinkSummary {
        let uu = up.goodput_utilization;
        let ud = down.goodput_utilization;
        let (p, s) = utilization_variances(uu, ud);
        AsymLinkSummary {
            link: link.to_string(),
            up: up.name.clone(),
            down: down.name.clone(),
            up_rate_bps: up.rate_bps,
            down_rate_bps: down.rate_bps,
            up_goodput_bps: up.tcp_goodput_bps,
            down_goodput_bps: down.tcp_goodput_bps,
            up_utilization: uu,
            down_utilization: ud,
            aggregated_utilization: uu + ud,
            utilization_variance_population: p,
            utilization_variance_sample: s,
            asymmetry_ratio: down.rate_bps as f64 / up.rate_bps.max(1) as f64,
        }
    }
}

/// (population, sample) variance of the two utilizations {a, b}: ((a − b)/2)² and (a − b)²/2.
pub fn utilization_variances(a: f64, b: f64) -> (f64, f64) {
    let d = a - b;
    (d * d / 4.0, d * d / 2.0)
}

/// Counters of a `qdisc` (ACK/data/non-TCP arrivals, departures, drops by reason, queue lengths at the end).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct QdiscSummary {
    #[serde(flatten)]
    pub stats: ackshape_core::shape::asym::AsymStats,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Aggregate {
    pub flows: u32,
    pub goodput_bps: f64,
    pub throughput_bps: f64,
    /// Jain's fairness index of per-flow goodput.
    pub jain: f64,
    /// Coefficient of variation (population σ / mean) of per-flow goodput.
    pub cov: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ShortSummary {
    pub count: u64,
    pub mean_s: f64,
    pub cov: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VerifySummary {
    pub flows_checked: u32,
    pub bytes_checked: u64,
    /// Flows whose delivered stream differed from the sent stream.
    pub mismatched_flows: u32,
    /// Finite flows that ended with fewer bytes delivered than written.
    pub incomplete_flows: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// The build that produced it: version, commit, whether the sources had uncommitted changes,
    /// and a hash of the simulator's sources.
    pub ackshape: crate::provenance::Provenance,
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
    /// One entry per VPS sender group: flows, weights, controller counters, virtual flows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<serde_json::Value>,
    /// Paper 002's metrics for each asymmetric access link (see [`AsymLinkSummary`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asym_links: Vec<AsymLinkSummary>,
}

impl Summary {
    pub fn link(&self, name: &str) -> Option<&LinkSummary> {
        self.links.iter().find(|l| l.name == name)
    }

    /// Paper 002's metrics of the asymmetric link named `name` (its forward direction's name).
    pub fn asym_link(&self, name: &str) -> Option<&AsymLinkSummary> {
        self.asym_links.iter().find(|l| l.link == name)
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
    #[test]
    fn variance_forms() {
        // {0.9, 0.1}: mean 0.5; population ((0.8)/2)^2 = 0.16, sample 0.8^2/2 = 0.32.
        let (p, s) = utilization_variances(0.9, 0.1);
        assert!((p - 0.16).abs() < 1e-12 && (s - 0.32).abs() < 1e-12);
        assert_eq!(utilization_variances(0.5, 0.5), (0.0, 0.0));
    }
}
