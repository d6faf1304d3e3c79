//! [`TcrConfig`]: the `mechanism = { kind = "tcr", … }` table of a policy class.
//!
//! Plain numbers with the unit in the key (`*_ms`, `*_segments`, `*_bytes`), as the other
//! configurations in `core::shape`. Every key has a default; unknown keys are errors.

/// How the class rate is divided among the class's flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// Paper 001 Algorithm 1 (Charny's max-min with a satisfaction percentage), run when a flow
    /// starts or ends and every sampling interval. See [`super::alloc`].
    #[default]
    MaxMin,
    /// Paper 000's fixed shares BW_i = BW_c / n over the class's active flows (trap P0-18).
    Equal,
}

/// How the residual bandwidth U reaches the hungry flows (trap P1-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Residual {
    /// Max-min water-filling: hungry flows share B − Σ(bottlenecked A_k) equally; a bottlenecked
    /// flow keeps at least R_k/p² (hysteresis). See [`super::alloc::max_min_pass`].
    #[default]
    Equalize,
    /// Eq. 3 literally: A_j += U/H with U = B − ΣA after step 6 (so Σ A = B). A hungry flow
    /// never gains from another hungry flow, so one left with a small allocation stays there.
    Increment,
    /// Eq. 3 with step 4's U read as "the bandwidth which remains unutilized by the
    /// bottlenecked flows": U = Σ_k (A_k − R_k) over the bottlenecked flows (before step 6
    /// halves their excess), A_j += U/H. Nothing else is ever handed out: capacity that no
    /// flow's allocation holds any more (Σ A < B, e.g. after every flow was bottlenecked
    /// elsewhere) is not re-injected, so a flow turning hungry gains only what the others
    /// currently leave unused. Newcomers get B/N (Eq. 2), the others making room in proportion.
    Unused,
}

/// What Algorithm 1 does with the residual when every flow is bottlenecked (no hungry flow to
/// take it; trap P1-8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllBottlenecked {
    /// Spread it equally over all flows, so Σ A = B: the class rate is always handed out.
    #[default]
    Spread,
    /// Leave it unallocated, as paper 001 states ("repeat until there is no residual bandwidth
    /// or all flows are bottlenecked"): allocations follow the measured rates (step 6) and Σ A ≤ B;
    /// a flow whose rate then reaches p·A turns hungry and takes the residual at the next pass.
    /// This is what removes the excess allocation of flows limited elsewhere when TCR runs
    /// upstream of a remote bottleneck (P1-T10–12).
    Leave,
}

/// How held ACKs are clocked out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pacing {
    /// Paper 001: each flow releases one segment's worth of ACK every Δ_i = S_i/A_i
    /// (S_i the flow's segment on the wire), on a shared timer heap.
    #[default]
    PerFlow,
    /// Paper 000 §2.4.2: one class timer; each tick releases one ACK to every flow with ACKs
    /// queued (more exactly: each flow earns A_i·T of credit per tick of period T = n·S/B).
    ClassTick,
    /// No pacing: ACKs leave at once, only the window is rewritten (window sizing alone).
    None,
}

/// How far one released ACK moves the ACK number (trap P0-10 / X-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Release {
    /// One MSS per released ACK (paper 001 Algorithm 2 step 6): a receiver's stretch or
    /// delayed ACK covering k segments is split into k paced ACKs. Rate-exact with delayed ACKs.
    #[default]
    Mss,
    /// As far as the receiver's latest ACK moved it (its stride, e.g. 2 MSS with delayed ACKs);
    /// the pacing interval grows in proportion (byte counting), so the rate is the same and
    /// the sender sees as many ACKs as the receiver sent.
    ReceiverAck,
}

/// Where an RTT sample starts (it always ends when the covering ACK reaches the gateway).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RttFrom {
    /// When the class sends the timed segment (`on_class_dequeue`): excludes the gateway's data
    /// queue, so the estimate is the WAN round trip D_w. Falls back to `enqueue` for flows
    /// whose dequeues the gateway does not report.
    #[default]
    Dequeue,
    /// When the class accepts it (`on_data`): includes the class queue (paper 000's
    /// "inaccurate D_w" side effect, P0-A1 item 4).
    Enqueue,
}

/// Which RTT the window A·RTT uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowRtt {
    /// The EWMA of the samples (gain `rtt_gain`).
    #[default]
    Smoothed,
    /// The smallest sample seen: "the round trip time of the flow, not including queuing
    /// delays" (paper 001 §1.1.2) also where the queue is beyond the gateway (a remote
    /// bottleneck, P1-T10–12), which the dequeue-timed samples cannot exclude.
    Min,
}

/// Rounding of the computed window A·RTT to whole segments (traps P0-11, P1-6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rounding {
    /// Up to a whole number of segments: the window never binds below the allocation (pacing
    /// enforces the rate); rounding down would make a flow look bottlenecked to Algorithm 1.
    #[default]
    Up,
    /// To the nearest whole number of segments.
    Nearest,
    /// Down to a whole number of segments.
    Down,
    /// No rounding (bytes; may ask the sender for partial segments).
    Bytes,
}

/// TCR settings. Units are in the names; see `docs/policy.md` for the table.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcrConfig {
    /// `"max-min"` (default, paper 001) or `"equal"` (paper 000).
    pub allocation: Allocation,
    /// Max-min: `"equalize"` (default), `"increment"` (Eq. 3 with U = B − ΣA) or `"unused"`
    /// (Eq. 3 with U = what the bottlenecked flows leave unused).
    pub residual: Residual,
    /// Max-min, every flow bottlenecked: `"spread"` (default) or `"leave"` the residual.
    pub all_bottlenecked: AllBottlenecked,
    /// Max-min satisfaction percentage p in (0, 1]: a flow with measured rate R < p·A is
    /// bottlenecked. Default 0.9 (assumed; the paper does not give it).
    pub satisfaction: f64,
    /// Rate-sampling interval, ms. 0 (default) = automatic: max(longest smoothed RTT of the
    /// class's flows, time to see one segment from every flow at its fair share n·S/B), at least 1 ms.
    pub sample_interval_ms: f64,
    /// Gain of the EWMA of each flow's measured rate, (0, 1]. Default 0.25 (assumed).
    pub rate_gain: f64,
    /// Fraction of the class rate TCR hands out, (0, 1]. Default 1.
    pub target_utilization: f64,
    /// Bytes the class counts per packet beyond the IP packet (14 if it counts Ethernet
    /// frames). Must match the class's own accounting or the pacing over- or under-fills it.
    /// Default 0 (IP bytes, as the simulator's classes count).
    pub overhead_bytes: u32,
    /// `"per-flow"` (default, paper 001), `"class-tick"` (paper 000) or `"none"`.
    pub pacing: Pacing,
    /// `"mss"` (default) or `"receiver-ack"`.
    pub release: Release,
    /// Rewrite the receiver window (window sizing). Default true; false = ACK pacing only.
    pub window_sizing: bool,
    /// `"up"` (default), `"nearest"`, `"down"` or `"bytes"`.
    pub window_rounding: Rounding,
    /// Smallest window written, in segments (≥ 1). Default 1 (traps P0-11, P1-6).
    pub min_window_segments: u32,
    /// Largest change of the written window per forwarded ACK, in segments; 0 = jump at once.
    /// Default 1 (window changes spread over several ACKs, paper 001 §1.1.2).
    pub window_step_segments: u32,
    /// Gain of the RTT EWMA, (0, 1]. Default 0.125 (as TCP's SRTT).
    pub rtt_gain: f64,
    /// `"dequeue"` (default) or `"enqueue"`.
    pub rtt_from: RttFrom,
    /// `"smoothed"` (default) or `"min"`: the RTT in the window A·RTT.
    pub window_rtt: WindowRtt,
    /// Equal allocation: a flow with no data for this long no longer counts in n, ms. Default 1000.
    pub idle_timeout_ms: f64,
    /// Segment size assumed until the handshake or data tell, bytes. Default 1460.
    pub default_mss: u32,
}

impl Default for TcrConfig {
    fn default() -> Self {
        TcrConfig {
            allocation: Allocation::MaxMin,
            residual: Residual::Equalize,
            all_bottlenecked: AllBottlenecked::Spread,
            satisfaction: 0.9,
            sample_interval_ms: 0.0,
            rate_gain: 0.25,
            target_utilization: 1.0,
            overhead_bytes: 0,
            pacing: Pacing::PerFlow,
            release: Release::Mss,
            window_sizing: true,
            window_rounding: Rounding::Up,
            min_window_segments: 1,
            window_step_segments: 1,
            rtt_gain: 0.125,
            rtt_from: RttFrom::Dequeue,
            window_rtt: WindowRtt::Smoothed,
            idle_timeout_ms: 1000.0,
            default_mss: 1460,
        }
    }
}

/// Keys of the table, for error messages.
pub const KEYS: &[&str] = &[
    "allocation",
    "residual",
    "all_bottlenecked",
    "satisfaction",
    "sample_interval_ms",
    "rate_gain",
    "target_utilization",
    "overhead_bytes",
    "pacing",
    "release",
    "window_sizing",
    "window_rounding",
    "min_window_segments",
    "window_step_segments",
    "rtt_gain",
    "rtt_from",
    "window_rtt",
    "idle_timeout_ms",
    "default_mss",
];

impl TcrConfig {
    /// Values that deserialise but cannot work. Errors are `(key, message)`.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let unit = |k: &'static str, v: f64, zero_ok: bool| {
            if !(v.is_finite() && v <= 1.0 && (v > 0.0 || (zero_ok && v == 0.0))) {
                return Err((k, format!("expected a number in (0, 1], got {v}")));
            }
            Ok(())
        };
        unit("satisfaction", self.satisfaction, false)?;
        unit("rate_gain", self.rate_gain, false)?;
        unit("target_utilization", self.target_utilization, false)?;
        unit("rtt_gain", self.rtt_gain, false)?;
        if !(self.sample_interval_ms.is_finite() && self.sample_interval_ms >= 0.0) {
            return Err((
                "sample_interval_ms",
                format!("expected ms ≥ 0 (0 = automatic), got {}", self.sample_interval_ms),
            ));
        }
        if !(self.idle_timeout_ms.is_finite() && self.idle_timeout_ms > 0.0) {
            return Err(("idle_timeout_ms", format!("expected ms > 0, got {}", self.idle_timeout_ms)));
        }
        if self.min_window_segments == 0 {
            return Err(("min_window_segments", "expected at least 1 segment".into()));
        }
        if !(64..=65_535).contains(&self.default_mss) {
            return Err(("default_mss", format!("expected 64..=65535 bytes, got {}", self.default_mss)));
        }
        if self.overhead_bytes > 1_000 {
            return Err(("overhead_bytes", format!("expected at most 1000 bytes, got {}", self.overhead_bytes)));
        }
        Ok(())
    }

    /// Parses a policy table (without `kind`), naming the offending key on error.
    pub fn from_table(settings: &crate::table::Table) -> Result<TcrConfig, (String, String)> {
        use crate::table::{read, Error, Table};
        for k in settings.keys() {
            if !KEYS.contains(&k.as_str()) {
                return Err((
                    k.clone(),
                    format!("unknown key for mechanism \"tcr\"; expected one of {}", KEYS.join(", ")),
                ));
            }
        }
        // Deserialise key by key first so that a type error names its key.
        for (k, v) in settings {
            let mut one = Table::new();
            one.insert(k.clone(), v.clone());
            if let Err(e) = read::<TcrConfig, Error>(one) {
                return Err((k.clone(), e.0.trim_end().to_string()));
            }
        }
        let cfg: TcrConfig = read(settings.clone()).map_err(|e: Error| ("kind".to_string(), e.0))?;
        cfg.validate().map_err(|(k, m)| (k.to_string(), m))?;
        Ok(cfg)
    }
}
