//! Scenario files: the TOML format that drives a simulation (and, later, a live run).
//!
//! The format is documented with examples in `docs/scenario.md`. Every value with a physical
//! dimension carries its unit as a string (`"10Mbit/s"`, `"20ms"`, `"100pkt"`). Unknown keys are
//! errors, and every error names the file, the key and what was expected.

use ackshape_core::impair::LossSpec;
use ackshape_core::tcp::{CcAlgo, MultcpSlowStart, RtoModel, TcpConfig, TcpProfile, WindowUpdate};
use ackshape_core::time::Dur;
use ackshape_core::units::{self, Rate, Size};
use ackshape_format::tomlerr;
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::path::Path;

/// A scenario error: which file, which key, what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub file: String,
    /// Dotted key path (`topology.bottleneck.rate`), when known.
    pub key: Option<String>,
    pub msg: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{}: key `{}`: {}", self.file, k, self.msg),
            None => write!(f, "{}: {}", self.file, self.msg),
        }
    }
}
impl std::error::Error for ScenarioError {}

pub use ackshape_core::shape::qdisc_spec::{QdiscSpec, QdiscTable};
pub use ackshape_core::units::{DurV, RateV, SizeV};

/// A start time: fixed (`"2s"`) or uniform in an interval (`"uniform(0s, 1s)"`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StartV {
    At(Dur),
    Uniform(Dur, Dur),
}
impl<'de> Deserialize<'de> for StartV {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let t = s.trim();
        if let Some(inner) = t.strip_prefix("uniform(").and_then(|r| r.strip_suffix(')')) {
            let mut it = inner.split(',');
            let (a, b) = match (it.next(), it.next(), it.next()) {
                (Some(a), Some(b), None) => (a, b),
                _ => {
                    return Err(serde::de::Error::custom(format!(
                        "expected \"uniform(FROM, TO)\" with two durations, got {s:?}"
                    )))
                }
            };
            let a = units::parse_duration(a).map_err(serde::de::Error::custom)?;
            let b = units::parse_duration(b).map_err(serde::de::Error::custom)?;
            if b < a {
                return Err(serde::de::Error::custom(format!("uniform(FROM, TO) needs FROM ≤ TO, got {s:?}")));
            }
            return Ok(StartV::Uniform(a, b));
        }
        units::parse_duration(t)
            .map(StartV::At)
            .map_err(|e| serde::de::Error::custom(format!("{e}, or \"uniform(0s, 1s)\"")))
    }
}

/// TCP settings; each key overrides the built-in default (see `docs/scenario.md`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    /// `"default"` (modern, Linux-like) or `"ns2"` (ns-2.35's one-way agents and sinks): the
    /// defaults the other keys override.
    pub profile: Option<TcpProfile>,
    pub cc: Option<CcAlgo>,
    pub mss: Option<u32>,
    pub initial_window: Option<u32>,
    pub max_burst: Option<u32>,
    pub abc: Option<bool>,
    /// Window-scale shift to offer; `-1` disables window scaling.
    pub wscale: Option<i8>,
    pub timestamps: Option<bool>,
    pub sack: Option<bool>,
    pub ecn: Option<bool>,
    pub rcv_buf: Option<SizeV>,
    pub max_window: Option<SizeV>,
    pub delack: Option<u32>,
    pub delack_timeout: Option<DurV>,
    pub min_rto: Option<DurV>,
    pub max_rto: Option<DurV>,
    pub initial_rto: Option<DurV>,
    pub rto_granularity: Option<DurV>,
    /// `"rfc6298"` (default; the timer fires on tick boundaries), `"ns2"` (ns-2's TcpAgent timer)
    /// or `"linux22"` (Linux 2.2's window-dependent RTO).
    pub rto_model: Option<RtoModel>,
    pub dupthresh: Option<u32>,
    /// MulTCP's N (with `cc = "multcp"`).
    pub multcp_n: Option<f64>,
    /// MulTCP's slow start: `"reno"` (default) or `"n-flows"` (two MSS per ACK until the window
    /// N flows would have).
    pub multcp_slow_start: Option<MultcpSlowStart>,
    /// Initial slow-start threshold in segments (default: unlimited).
    pub initial_ssthresh: Option<u64>,
    /// `false`: no congestion avoidance (slow-start growth above ssthresh; losses still halve).
    pub congestion_avoidance: Option<bool>,
    /// RFC 3042 limited transmit: one new segment on each of the first two duplicate ACKs
    /// (default false; ns-2's `singledup_`, on by default since 2001).
    pub limited_transmit: Option<bool>,
    /// Which window advertisements the sender accepts: `"rfc793"` (default) or `"bsd"` (Linux, BSD).
    pub window_update: Option<WindowUpdate>,
    /// Reno/NewReno: new data in answer to the duplicate ACK that triggers the fast retransmit
    /// (default true, Linux); false as 4.4BSD and ns-2's FullTcp (only the retransmission).
    pub new_data_on_fast_retransmit: Option<bool>,
    /// ns-2 `slowdown()`: ssthresh from the congestion window, at every timeout (default false;
    /// true in the ns2 profile).
    pub ns2_slowdown: Option<bool>,
    /// Re-arm the retransmission timer at the fast retransmit (ns-2 `dupack_action` →
    /// `reset_rtx_timer`; default false, true in the ns2 profile).
    pub rto_restart_on_fast_retransmit: Option<bool>,
    /// Re-arm the retransmission timer whenever the first unacknowledged segment is
    /// retransmitted (Linux `tcp_xmit_retransmit_queue`; default true, false in the ns2 profile).
    pub rto_rearm_on_head_retransmit: Option<bool>,
    /// Forget the SACK scoreboard at a timeout (ns-2 `Sack1TcpAgent::timeout`; default false,
    /// true in the ns2 profile).
    pub sack_clear_on_rto: Option<bool>,
    /// ns-2.35's one-way agents' duplicate-ACK and recovery rules (`RenoTcpAgent`,
    /// `NewRenoTcpAgent`, `Sack1TcpAgent`; default false, true in the ns2 profile).
    pub ns2_recovery: Option<bool>,
}

impl TcpSpec {
    /// `self` over `base` (keys set in `self` win).
    pub fn over(&self, base: &TcpSpec) -> TcpSpec {
        macro_rules! pick {
            ($($f:ident),*) => { TcpSpec { $($f: self.$f.clone().or_else(|| base.$f.clone())),* } };
        }
        pick!(
            profile,
            cc,
            mss,
            initial_window,
            max_burst,
            abc,
            wscale,
            timestamps,
            sack,
            ecn,
            rcv_buf,
            max_window,
            delack,
            delack_timeout,
            min_rto,
            max_rto,
            initial_rto,
            rto_granularity,
            rto_model,
            dupthresh,
            multcp_n,
            multcp_slow_start,
            initial_ssthresh,
            congestion_avoidance,
            limited_transmit,
            window_update,
            new_data_on_fast_retransmit,
            ns2_slowdown,
            rto_restart_on_fast_retransmit,
            rto_rearm_on_head_retransmit,
            sack_clear_on_rto,
            ns2_recovery
        )
    }

    /// Build the endpoint configuration.
    pub fn to_config(&self) -> TcpConfig {
        let mut c = TcpConfig::for_profile(self.profile.unwrap_or_default());
        if let Some(v) = self.cc {
            c.cc = v;
        }
        if let Some(v) = self.mss {
            c.mss = v;
        }
        if let Some(v) = self.initial_window {
            c.initial_window = v;
        }
        if let Some(v) = self.max_burst {
            c.max_burst = v;
        }
        if let Some(v) = self.abc {
            c.abc = v;
        }
        if let Some(v) = self.wscale {
            c.wscale = if v < 0 { None } else { Some(v as u8) };
        }
        if let Some(v) = self.timestamps {
            c.timestamps = v;
        }
        if let Some(v) = self.sack {
            c.sack = v;
        }
        if let Some(v) = self.ecn {
            c.ecn = v;
        }
        if let Some(SizeV(s)) = self.rcv_buf {
            c.rcv_buf = match s {
                Size::Bytes(b) => b.min(u32::MAX as u64) as u32,
                Size::Packets(p) => (p * c.mss as u64).min(u32::MAX as u64) as u32,
            };
        }
        if let Some(SizeV(s)) = self.max_window {
            c.max_cwnd_bytes = match s {
                Size::Bytes(b) => b,
                Size::Packets(p) => p * c.mss as u64,
            };
        }
        if let Some(v) = self.delack {
            c.delack.every = v;
        }
        if let Some(DurV(v)) = self.delack_timeout {
            c.delack.timeout = v;
        }
        if let Some(DurV(v)) = self.min_rto {
            c.rto.min = v;
        }
        if let Some(DurV(v)) = self.max_rto {
            c.rto.max = v;
        }
        if let Some(DurV(v)) = self.initial_rto {
            c.rto.initial = v;
        }
        if let Some(DurV(v)) = self.rto_granularity {
            c.rto.granularity = v;
        }
        if let Some(v) = self.rto_model {
            c.rto_model = v;
        }
        if let Some(v) = self.dupthresh {
            c.dupthresh = v;
        }
        if let Some(v) = self.multcp_n {
            c.multcp_n = v;
        }
        if let Some(v) = self.multcp_slow_start {
            c.multcp_slow_start = v;
        }
        if let Some(v) = self.initial_ssthresh {
            c.initial_ssthresh = v;
        }
        if let Some(v) = self.congestion_avoidance {
            c.no_congestion_avoidance = !v;
        }
        if let Some(v) = self.limited_transmit {
            c.limited_transmit = v;
        }
        if let Some(v) = self.window_update {
            c.window_update = v;
        }
        if let Some(v) = self.new_data_on_fast_retransmit {
            c.new_data_on_fast_retransmit = v;
        }
        if let Some(v) = self.ns2_slowdown {
            c.ns2_slowdown = v;
        }
        if let Some(v) = self.rto_restart_on_fast_retransmit {
            c.rto_restart_on_fast_retransmit = v;
        }
        if let Some(v) = self.rto_rearm_on_head_retransmit {
            c.rto_rearm_on_head_retransmit = v;
        }
        if let Some(v) = self.sack_clear_on_rto {
            c.sack_clear_on_rto = v;
        }
        if let Some(v) = self.ns2_recovery {
            c.ns2_recovery = v;
        }
        c
    }

    fn validate(&self, at: &str) -> Result<(), (String, String)> {
        let k = |f: &str| {
            if at.is_empty() {
                f.to_string()
            } else {
                format!("{at}.{f}")
            }
        };
        if let Some(m) = self.mss {
            if !(64..=65_000).contains(&m) {
                return Err((k("mss"), format!("expected an MSS in bytes between 64 and 65000, got {m}")));
            }
        }
        if self.initial_window == Some(0) {
            return Err((k("initial_window"), "expected at least 1 segment, got 0".into()));
        }
        if let Some(w) = self.wscale {
            if !(-1..=14).contains(&w) {
                return Err((k("wscale"), format!("expected a shift 0..=14 (or -1 for none), got {w}")));
            }
        }
        if self.delack == Some(0) {
            return Err((k("delack"), "expected b ≥ 1 segments per ACK, got 0".into()));
        }
        if self.dupthresh == Some(0) {
            return Err((k("dupthresh"), "expected at least 1, got 0".into()));
        }
        if let Some(DurV(g)) = self.rto_granularity {
            if g == Dur::ZERO {
                return Err((k("rto_granularity"), "expected a positive clock tick, got 0".into()));
            }
        }
        if let Some(n) = self.multcp_n {
            if !(n.is_finite() && n >= 1.0) {
                return Err((k("multcp_n"), format!("expected N ≥ 1, got {n}")));
            }
        }
        if self.initial_ssthresh == Some(0) {
            return Err((
                k("initial_ssthresh"),
                "expected at least 1 segment, got 0 (leave the key out for an unlimited threshold)".into(),
            ));
        }
        for (key, v) in [("rcv_buf", self.rcv_buf), ("max_window", self.max_window)] {
            if let Some(SizeV(Size::Packets(0) | Size::Bytes(0))) = v {
                return Err((k(key), "expected room for at least one segment, got 0".into()));
            }
        }
        for (key, v) in [("initial_rto", self.initial_rto), ("max_rto", self.max_rto)] {
            if v.is_some_and(|d| d.0 == Dur::ZERO) {
                return Err((k(key), "expected a positive duration, got 0".into()));
            }
        }
        Ok(())
    }

    /// Checks across keys of the settings a flow runs with (`self`: its own table over `[tcp]`).
    /// `key(f)` names key `f` where it was set (the flow's table or `[tcp]`).
    fn validate_effective(&self, key: impl Fn(&str) -> String) -> Result<(), (String, String)> {
        let c = self.to_config();
        for (name, v) in [("rcv_buf", self.rcv_buf), ("max_window", self.max_window)] {
            if let Some(SizeV(Size::Bytes(b))) = v {
                if b < u64::from(c.mss) {
                    return Err((
                        key(name),
                        format!("expected room for at least one segment (`mss` = {} B), got {b} B", c.mss),
                    ));
                }
            }
        }
        if c.rto.max < c.rto.min {
            return Err((
                key("max_rto"),
                format!("expected at least `min_rto` ({}), got {}", dur_text(c.rto.min), dur_text(c.rto.max)),
            ));
        }
        Ok(())
    }
}

/// Serde's messages for a value of the wrong shape for a choice of names (an enum) do not list the
/// names: "invalid type: unit variant, expected string only" or "wanted string or table" (a number
/// for `cc`), "invalid type: floating point `0.01`, expected internally tagged enum LossSpec" (a
/// number for `loss`), "missing field `kind`". Ask again with a name that is none of them: that
/// answer lists them.
fn explain_choice(table: &toml::Table, key: &str, msg: &str, file: &str) -> Option<String> {
    use crate::keypath::{get_path, set_path};
    const PH: &str = "\u{2}";
    let got = get_path(table, key)?;
    let name = || toml::Value::String(PH.into());
    // The first from a `toml::Value` (`--set`, `reproduce`), the second from text.
    let plain = msg.contains("expected string only") || msg.starts_with("wanted string or table");
    let (probe_key, probe) = if plain {
        (key.to_string(), name())
    } else if msg.contains("expected internally tagged enum") {
        (key.to_string(), toml::Value::Table(toml::Table::from_iter([("kind".to_string(), name())])))
    } else if msg.starts_with("missing field `kind`") && got.is_table() {
        (format!("{key}.kind"), name())
    } else {
        return None;
    };
    let mut t = table.clone();
    set_path(&mut t, &probe_key, probe).ok()?;
    let again = Scenario::deserialize_with_paths(toml::Value::Table(t), None, file).err()?;
    // "expected one of `a`, `b`, `c`" or "expected `a` or `b`"
    let names = again.msg.split_once(&format!("unknown variant `{PH}`, expected "))?.1.trim_end();
    Some(if plain {
        format!("expected {names} (as a string), got {got}")
    } else if msg.starts_with("missing field") {
        format!("missing field `kind`: expected {names}")
    } else {
        format!("expected a table `{{ kind = … }}` with `kind` {names}, got {got}")
    })
}

/// A duration as a scenario would write it: `"1s"`, `"200ms"`, `"1.5ms"`.
fn dur_text(d: Dur) -> String {
    if d.0.is_multiple_of(1_000_000_000) {
        format!("{}s", d.0 / 1_000_000_000)
    } else {
        format!("{}ms", d.0 as f64 / 1e6)
    }
}

/// Overrides for the reverse direction of a link.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DirSpec {
    pub qdisc: Option<QdiscTable>,
    pub rate: Option<RateV>,
    pub delay: Option<DurV>,
    pub queue: Option<SizeV>,
    pub loss: Option<LossSpec>,
    pub jitter: Option<DurV>,
    pub reorder: Option<bool>,
}

/// A bidirectional link. Values apply to both directions unless `reverse` overrides them.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Queue discipline (`{ kind = "afvq" }`, …; see `docs/scenario.md`); replaces the drop-tail
    /// FIFO. Applies to both directions unless `reverse.qdisc` is set. A `queue` given in packets
    /// sizes its limits where the table leaves them out ([`QdiscTable::with_queue`]).
    pub qdisc: Option<QdiscTable>,
    pub rate: Option<RateV>,
    pub delay: Option<DurV>,
    pub queue: Option<SizeV>,
    /// Loss model (`{ kind = "bernoulli", p = 0.01 }`, `periodic`, `gilbert-elliott`, `script`).
    pub loss: Option<LossSpec>,
    /// Uniform delay jitter in [0, jitter].
    pub jitter: Option<DurV>,
    /// Let jitter reorder packets (default false: a FIFO delay line).
    pub reorder: Option<bool>,
    /// Apply the loss model in both directions (default: forward only).
    pub loss_both_ways: Option<bool>,
    pub reverse: Option<DirSpec>,
}

impl LinkSpec {
    /// `self` over `base`, field by field.
    pub fn over(&self, base: &LinkSpec) -> LinkSpec {
        LinkSpec {
            qdisc: self.qdisc.clone().or_else(|| base.qdisc.clone()),
            rate: self.rate.or(base.rate),
            delay: self.delay.or(base.delay),
            queue: self.queue.or(base.queue),
            loss: self.loss.clone().or_else(|| base.loss.clone()),
            jitter: self.jitter.or(base.jitter),
            reorder: self.reorder.or(base.reorder),
            loss_both_ways: self.loss_both_ways.or(base.loss_both_ways),
            reverse: self.reverse.clone().or_else(|| base.reverse.clone()),
        }
    }

    /// Each direction's `qdisc` table and the `queue` given for it (forward, reverse): the
    /// reverse direction takes the forward one's where `reverse` does not say.
    fn dir_qdiscs(&self) -> [(Option<&QdiscTable>, Option<Size>); 2] {
        let r = self.reverse.as_ref();
        [
            (self.qdisc.as_ref(), self.queue.map(|q| q.0)),
            (
                r.and_then(|r| r.qdisc.as_ref()).or(self.qdisc.as_ref()),
                r.and_then(|r| r.queue).or(self.queue).map(|q| q.0),
            ),
        ]
    }

    /// The resolved parameters of each direction (forward, reverse).
    pub fn directions(&self) -> (DirParams, DirParams) {
        // `validate` reports a `queue` that cannot size the discipline; here it is left out.
        let [fq, rq] =
            self.dir_qdiscs().map(|(t, q)| t.map(|t| t.with_queue(q).map_or_else(|_| t.spec.clone(), |x| x.0)));
        let fwd = DirParams {
            qdisc: fq,
            rate: self.rate.map(|r| r.0).unwrap_or(Rate(0)),
            delay: self.delay.map(|d| d.0).unwrap_or(Dur::ZERO),
            queue: self.queue.map(|q| q.0).unwrap_or(Size::Packets(1000)),
            loss: self.loss.clone().unwrap_or_default(),
            jitter: self.jitter.map(|d| d.0).unwrap_or(Dur::ZERO),
            reorder: self.reorder.unwrap_or(false),
        };
        let r = self.reverse.clone().unwrap_or_default();
        let rev = DirParams {
            qdisc: rq,
            rate: r.rate.map(|x| x.0).unwrap_or(fwd.rate),
            delay: r.delay.map(|x| x.0).unwrap_or(fwd.delay),
            queue: r.queue.map(|x| x.0).unwrap_or(fwd.queue),
            loss: r.loss.clone().unwrap_or_else(|| {
                if self.loss_both_ways.unwrap_or(false) {
                    fwd.loss.clone()
                } else {
                    LossSpec::None
                }
            }),
            jitter: r.jitter.map(|x| x.0).unwrap_or(fwd.jitter),
            reorder: r.reorder.unwrap_or(fwd.reorder),
        };
        (fwd, rev)
    }

    /// `max_pkt`: the largest IP packet the scenario's TCP sends (bytes); a queue in bytes must
    /// hold one.
    fn validate(&self, at: &str, max_pkt: u64) -> Result<(), (String, String)> {
        let (f, r) = self.directions();
        if self.rate.is_none() {
            return Err((format!("{at}.rate"), "expected a link rate like \"10Mbit/s\" (the key is missing)".into()));
        }
        for (d, sub) in [(&f, ""), (&r, ".reverse")] {
            if d.rate.0 == 0 {
                return Err((format!("{at}{sub}.rate"), "expected a positive rate, got 0".into()));
            }
            if let Err(e) = d.loss.validate() {
                return Err((format!("{at}{sub}.loss"), e));
            }
            if matches!(d.queue, Size::Packets(0) | Size::Bytes(0)) {
                return Err((format!("{at}{sub}.queue"), "expected room for at least one packet, got 0".into()));
            }
            if let Size::Bytes(b) = d.queue {
                if b < max_pkt {
                    return Err((
                        format!("{at}{sub}.queue"),
                        format!(
                            "expected room for at least one packet ({max_pkt} B: the largest TCP segment with its \
                             IP and TCP headers), got {b} B"
                        ),
                    ));
                }
            }
        }
        for ((table, queue), sub) in self.dir_qdiscs().into_iter().zip(["", ".reverse"]) {
            let Some(t) = table else { continue };
            let (q, filled) = t.with_queue(queue).map_err(|e| (format!("{at}{sub}.queue"), e))?;
            if let Err(e) = q.validate() {
                let from_queue = match (filled.is_empty(), queue) {
                    (false, Some(Size::Packets(n))) => format!(
                        " ({} = {n} from `queue`)",
                        filled.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" and ")
                    ),
                    _ => String::new(),
                };
                return Err((format!("{at}{sub}.qdisc"), format!("{e}{from_queue}")));
            }
        }
        Ok(())
    }
}

/// Resolved parameters of one link direction.
#[derive(Clone, Debug, PartialEq)]
pub struct DirParams {
    pub qdisc: Option<QdiscSpec>,
    pub rate: Rate,
    pub delay: Dur,
    pub queue: Size,
    pub loss: LossSpec,
    pub jitter: Dur,
    pub reorder: bool,
}

/// A group of dumbbell senders sharing access-link settings (e.g. an RTT group).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub senders: u32,
    #[serde(default)]
    pub access: LinkSpec,
    /// The receiver access links of these pairs (over the topology's `receiver_access`): where a
    /// per-group WAN delay goes when a gateway at `left` must see it in its round trips.
    pub receiver_access: Option<LinkSpec>,
}

/// A group of dumbbell receivers sharing access-link settings (e.g. receivers at different
/// distances, paper 003 Sec. 6.7).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RecvGroupSpec {
    pub receivers: u32,
    #[serde(default)]
    pub access: LinkSpec,
}

/// The group of consecutive members `i` is in, given each group's size.
fn group_of(counts: impl Iterator<Item = u32>, i: u32) -> Option<usize> {
    let mut end = 0u64;
    for (g, c) in counts.enumerate() {
        end += c as u64;
        if (i as u64) < end {
            return Some(g);
        }
    }
    None
}

/// Dumbbell: senders `s0..` → router `left` → bottleneck → router `right` → receivers `d0..`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DumbbellSpec {
    /// Number of sender/receiver pairs (default: the number of flows).
    pub senders: Option<u32>,
    pub bottleneck: LinkSpec,
    /// Sender access links (each sender its own).
    pub access: LinkSpec,
    /// Receiver access links (default: same as `access`).
    pub receiver_access: Option<LinkSpec>,
    /// Sender groups overriding `access` for consecutive senders, in order.
    #[serde(default)]
    pub groups: Vec<GroupSpec>,
    /// Receiver groups overriding `receiver_access` for consecutive receivers, in order.
    #[serde(default)]
    pub receiver_groups: Vec<RecvGroupSpec>,
    /// A link from an upstream router `edge` to `left`: senders then attach to `edge`
    /// (paper 001 Fig. 4: a box at `edge` is upstream of the bottleneck, not at it).
    pub upstream: Option<LinkSpec>,
}

impl DumbbellSpec {
    /// The receivers' access link as built: `receiver_access` over `access`, or `access` itself.
    pub fn receiver_access_link(&self) -> LinkSpec {
        self.receiver_access.as_ref().map_or_else(|| self.access.clone(), |r| r.over(&self.access))
    }

    /// The number of sender/receiver pairs: `senders`, or one per flow.
    pub fn pair_count(&self, flow_count: u32) -> u32 {
        self.senders.unwrap_or_else(|| flow_count.max(1))
    }

    /// The access links of pair `i` as built, (sender's, receiver's): the sender's is its group's
    /// `access` over `access`; the receiver's is its sender group's `receiver_access` over the
    /// topology's, then its receiver group's `access` over that.
    pub fn pair_links(&self, i: u32) -> (LinkSpec, LinkSpec) {
        let racc = self.receiver_access_link();
        let sg = self.sender_group(i).map(|g| &self.groups[g]);
        let acc = sg.map_or_else(|| self.access.clone(), |g| g.access.over(&self.access));
        let racc = match sg.and_then(|g| g.receiver_access.as_ref()) {
            Some(r) => r.over(&racc),
            None => racc,
        };
        let racc = match group_of(self.receiver_groups.iter().map(|g| g.receivers), i) {
            Some(g) => self.receiver_groups[g].access.over(&racc),
            None => racc,
        };
        (acc, racc)
    }

    /// The sender group (`groups`) pair `i` is in, if any.
    pub fn sender_group(&self, i: u32) -> Option<usize> {
        group_of(self.groups.iter().map(|g| g.senders), i)
    }

    /// Which pair's sender and receiver each flow of `flows` runs between, in flow order (`count`
    /// expanded): consecutive pairs from the last flow's (or the flow's own `sender`), wrapping
    /// around the `n` pairs; a group kind's flows all leave the sender of its first pair.
    pub fn placement(flows: &[FlowSpec], n: u32) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut next = 0u32;
        for f in flows {
            let mut k = f.sender.unwrap_or(next);
            let first = k % n;
            for _ in 0..f.count.unwrap_or(1) {
                out.push((if f.kind.is_group() { first } else { k % n }, k % n));
                k += 1;
            }
            next = k;
        }
        out
    }
}

/// A node of a general graph.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    Host,
    Router,
}

/// A link of a general graph between nodes `a` and `b` (forward = a→b). The remaining keys are
/// those of [`LinkSpec`].
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GraphLinkSpec {
    pub name: Option<String>,
    pub a: String,
    pub b: String,
    pub qdisc: Option<QdiscTable>,
    pub rate: Option<RateV>,
    pub delay: Option<DurV>,
    pub queue: Option<SizeV>,
    pub loss: Option<LossSpec>,
    pub jitter: Option<DurV>,
    pub reorder: Option<bool>,
    pub loss_both_ways: Option<bool>,
    pub reverse: Option<DirSpec>,
}

impl GraphLinkSpec {
    pub fn link(&self) -> LinkSpec {
        LinkSpec {
            qdisc: self.qdisc.clone(),
            rate: self.rate,
            delay: self.delay,
            queue: self.queue,
            loss: self.loss.clone(),
            jitter: self.jitter,
            reorder: self.reorder,
            loss_both_ways: self.loss_both_ways,
            reverse: self.reverse.clone(),
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GraphSpec {
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<GraphLinkSpec>,
}

/// The topology, chosen by `kind = "dumbbell"` or `kind = "graph"`.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per scenario
pub enum TopologySpec {
    Dumbbell(DumbbellSpec),
    Graph(GraphSpec),
}

/// Marks an error message that carries a nested key path (see [`Scenario::parse`]).
const NESTED: char = '\u{1}';

impl<'de> Deserialize<'de> for TopologySpec {
    // Two steps instead of `#[serde(tag)]`, which buffers the table and loses inner key paths.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut t = toml::Table::deserialize(d)?;
        let expected = "expected \"dumbbell\" or \"graph\"";
        let kind = match t.remove("kind") {
            Some(toml::Value::String(k)) => k,
            Some(v) => return Err(D::Error::custom(format!("{NESTED}kind{NESTED}{expected}, got {v}"))),
            None => return Err(D::Error::custom(format!("{NESTED}kind{NESTED}{expected} (the key is missing)"))),
        };
        fn sub<T: serde::de::DeserializeOwned, E: Error>(t: toml::Table) -> Result<T, E> {
            serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
                let path = e.path().to_string();
                let msg = e.into_inner().message().to_string();
                E::custom(format!("{NESTED}{path}{NESTED}{}", msg.trim_end()))
            })
        }
        match kind.as_str() {
            "dumbbell" => sub(t).map(TopologySpec::Dumbbell),
            "graph" => sub(t).map(TopologySpec::Graph),
            other => Err(D::Error::custom(format!("{NESTED}kind{NESTED}{expected}, got {other:?}"))),
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    /// One TCP transfer, infinite or of `bytes`.
    #[default]
    Bulk,
    /// Repeated TCP transfers of `bytes`, each a new connection, separated by `think` time.
    Short,
    /// Constant-bit-rate UDP.
    UdpCbr,
    /// Poisson UDP (exponential inter-packet gaps).
    UdpPoisson,
    /// On/off UDP (ns-2 "Exponential"): CBR at `rate` during exponentially distributed on
    /// periods (mean `on`), silent during exponential off periods (mean `off`).
    UdpOnoff,
    /// A VPS sender group (paper 003): `count` TCP flows from one sender to `count` receivers,
    /// bandwidth split by `weights`, the group as aggressive as `count` TCP flows.
    Vps,
    /// `count` MulTCP flows from one sender, flow i with N = `weights[i]` (paper 003's baseline).
    Multcp,
    /// Application-layer weighted round robin over `count` ordinary TCP connections from one
    /// sender: `weights[i]` units per round, blocking or non-blocking sends (paper 003 Sec. 2.1).
    Wrr,
}

impl FlowKind {
    /// A UDP source.
    pub fn is_udp(self) -> bool {
        matches!(self, FlowKind::UdpCbr | FlowKind::UdpPoisson | FlowKind::UdpOnoff)
    }
    /// One of the group kinds whose `count` flows leave one sender host.
    pub fn is_group(self) -> bool {
        matches!(self, FlowKind::Vps | FlowKind::Multcp | FlowKind::Wrr)
    }
}

/// How the WRR application sends (`io`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WrrIo {
    /// Wait on a full socket buffer.
    #[default]
    Blocking,
    /// Skip a flow whose socket buffer is full.
    NonBlocking,
}

/// VPS controller settings (`vps = { ... }` on a `kind = "vps"` flow entry).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VpsSpec {
    /// Packets sent per ACK or timer (default 4, the thesis's maxburst).
    pub max_burst: Option<u32>,
    /// Temporary suspension of actual flows in recovery (default true).
    pub suspension: Option<bool>,
    /// False-duplicate-ACK suppression (default true).
    pub suppression: Option<bool>,
    /// Also suspend an actual flow after an RTO, slow-start style (default true; an assumption,
    /// the thesis suspends in fast recovery only).
    pub rto_suspension: Option<bool>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ThinkDist {
    #[default]
    Fixed,
    Exponential,
}

/// Who opens a TCP flow's connection.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FlowOpen {
    /// The sender connects and sends (an upload, or a server pushing).
    #[default]
    Sender,
    /// The receiver connects and the sender answers with the data (a download asked for by the
    /// receiver, as a LAN client fetching from a WAN server).
    Receiver,
}

/// One `[[flows]]` entry: `count` identical flows.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: Option<String>,
    #[serde(default)]
    pub kind: FlowKind,
    pub count: Option<u32>,
    /// Graph: source and destination host names. Dumbbell: optional sender index.
    pub from: Option<String>,
    pub to: Option<String>,
    /// Dumbbell: first sender index to place the flows on (default: next free).
    pub sender: Option<u32>,
    pub start: Option<StartV>,
    pub stop: Option<DurV>,
    pub bytes: Option<SizeV>,
    pub think: Option<DurV>,
    #[serde(default)]
    pub think_dist: ThinkDist,
    /// `bulk`, `short`: who opens the connection (default: the sender).
    #[serde(default)]
    pub open: FlowOpen,
    pub rate: Option<RateV>,
    pub packet_size: Option<SizeV>,
    pub tcp: Option<TcpSpec>,
    /// `udp-onoff`: mean on and off periods (exponential).
    pub on: Option<DurV>,
    pub off: Option<DurV>,
    /// `vps`, `multcp`, `wrr`: one positive weight per flow (default: all 1).
    pub weights: Option<Vec<f64>>,
    /// `wrr`: blocking (default) or non-blocking sends.
    pub io: Option<WrrIo>,
    /// `wrr`: socket send buffer (default 64KB).
    pub sndbuf: Option<SizeV>,
    /// `wrr`: bytes written per unit (default 1pkt = one MSS).
    pub unit: Option<SizeV>,
    /// `vps`: controller settings.
    pub vps: Option<VpsSpec>,
}

/// How a middlebox is attached to its node.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum MbMode {
    /// In the forwarding path: every packet crossing the node goes through the box.
    #[default]
    Inline,
    /// Beside the node (a mirror port): the box gets copies after `delay` and its injected
    /// packets enter the node after `delay`.
    Mirror,
}

/// A box in the path (`[[middlebox]]`): at router `node`, packets routed out over link `wan`
/// travel A→B (LAN→WAN, outbound), all others B→A. `kind` names the box; the remaining keys are
/// the box's own settings.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct MiddleboxSpec {
    pub node: String,
    pub wan: String,
    #[serde(default)]
    pub mode: MbMode,
    /// Mirror mode: one-way delay between the node and the box (default 0).
    pub delay: Option<DurV>,
    pub kind: String,
    /// The box's own settings (everything else in the table).
    #[serde(flatten)]
    pub settings: toml::Table,
}

/// A whole scenario file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub duration: DurV,
    /// Metrics are measured over [warmup, duration].
    pub warmup: Option<DurV>,
    /// Bin width of the goodput time series (default 1s).
    pub bin: Option<DurV>,
    /// Sampling interval of per-flow TCP traces (cwnd, srtt, …); none by default.
    pub trace_interval: Option<DurV>,
    /// Carry real payload bytes and check every flow's delivered stream against what was sent.
    #[serde(default)]
    pub verify_payload: bool,
    /// Every packet a host sends leaves it after an extra delay uniform in [0, host_jitter], in
    /// order: a real host's timing noise (ns-2's `overhead_`). None or 0: no noise.
    pub host_jitter: Option<DurV>,
    #[serde(default)]
    pub tcp: TcpSpec,
    pub topology: TopologySpec,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// Boxes in the path (edge gateways, taps) at router nodes: [`MiddleboxSpec`].
    #[serde(default)]
    pub middlebox: Vec<MiddleboxSpec>,
    /// Paper values, tolerances and notes for experiment scenarios (free-form, read by `reproduce`).
    pub paper: Option<toml::Table>,
    /// How `ackshape reproduce` runs an experiment file (sweeps, seeds, variants; free-form here,
    /// read by the experiment's code).
    pub reproduce: Option<toml::Table>,
    /// Settings only the live driver reads (free-form here).
    pub live: Option<toml::Table>,
    /// The command line's `--set KEY=VALUE`s that made this scenario from its file (not a key of
    /// the file; recorded in the summary as `scenario.set`).
    #[serde(skip)]
    pub set: Vec<String>,
}

/// At most this many flows in a scenario (about 2 GB of connection state).
pub const MAX_FLOWS: u64 = 200_000;
/// At most this many goodput bins (flows × `duration` ÷ `bin`; 8 bytes each).
pub const MAX_FLOW_BINS: u64 = 100_000_000;
/// At most this many TCP trace samples (flows × `duration` ÷ `trace_interval`).
pub const MAX_TRACE_SAMPLES: u64 = 10_000_000;

fn default_seed() -> u64 {
    1
}

impl Scenario {
    /// Read and validate a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            key: None,
            msg: format!("cannot read: {e}"),
        })?;
        Scenario::parse(&text, &file)
    }

    /// Parse and validate scenario text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let err = |key: Option<String>, msg: String| ScenarioError { file: file.to_string(), key, msg };
        let table = match text.parse::<toml::Table>() {
            Ok(t) => t,
            Err(e) => return Err(err(None, tomlerr::syntax_message(text, &e))),
        };
        let de = toml::Deserializer::new(text);
        let sc = Scenario::deserialize_with_paths(de, Some((text, &table)), file)?;
        sc.validate().map_err(|(k, m)| err(Some(k), m))?;
        Ok(sc)
    }

    /// Build and validate a scenario from an already parsed TOML table (e.g. an experiment's base
    /// scenario with sweep values set by `reproduce`); `file` names it in errors. Errors name the
    /// key as [`parse`](Self::parse) does, without line numbers.
    pub fn from_table(table: toml::Table, file: &str) -> Result<Scenario, ScenarioError> {
        let err = |key: Option<String>, msg: String| ScenarioError { file: file.to_string(), key, msg };
        let sc = Scenario::deserialize_with_paths(toml::Value::Table(table.clone()), Some(("", &table)), file)?;
        sc.validate().map_err(|(k, m)| err(Some(k), m))?;
        Ok(sc)
    }

    /// `source`: the text (empty if there is none: no line numbers) and the table it holds, to
    /// explain a value of the wrong shape for a choice of names ([`explain_choice`]).
    fn deserialize_with_paths<'de, D>(
        de: D,
        source: Option<(&str, &toml::Table)>,
        file: &str,
    ) -> Result<Scenario, ScenarioError>
    where
        D: serde::Deserializer<'de, Error = toml::de::Error>,
    {
        let err = |key: Option<String>, msg: String| ScenarioError { file: file.to_string(), key, msg };
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let msg = inner.message().to_string();
            let loc = match (inner.span(), source) {
                (Some(s), Some((text, _))) if !text.is_empty() => {
                    format!(" (line {})", tomlerr::line_of(text, s.start))
                }
                _ => String::new(),
            };
            // A nested path from a two-step deserialisation (see `TopologySpec`).
            let (path, msg) = match msg.split_once(NESTED) {
                Some((_, rest)) => {
                    let (inner, m) = rest.split_once(NESTED).unwrap_or(("", rest));
                    let inner = inner.trim_start_matches('.');
                    let p = if inner.is_empty() { path } else { format!("{path}.{inner}") };
                    (p, m.to_string())
                }
                None => (path, msg),
            };
            // Name the unknown key itself, not only its parent table.
            let (key, msg) = tomlerr::key_and_message(path, msg);
            let msg = match (&key, source) {
                (Some(k), Some((_, table))) => explain_choice(table, k, &msg, file).unwrap_or(msg),
                _ => msg,
            };
            err(key, format!("{msg}{loc}"))
        })
    }

    fn validate(&self) -> Result<(), (String, String)> {
        if self.flows.is_empty() {
            return Err((
                "flows".into(),
                "expected at least one [[flows]] table: without one nothing is sent (docs/scenario.md, `[[flows]]`)"
                    .into(),
            ));
        }
        if self.duration.0 == Dur::ZERO {
            return Err(("duration".into(), "expected a positive duration, got 0".into()));
        }
        if let Some(w) = self.warmup {
            if w.0 >= self.duration.0 {
                return Err(("warmup".into(), "expected a warm-up shorter than `duration`".into()));
            }
        }
        if let Some(b) = self.bin {
            if b.0 == Dur::ZERO {
                return Err(("bin".into(), "expected a positive bin width, got 0".into()));
            }
        }
        if self.trace_interval.is_some_and(|t| t.0 == Dur::ZERO) {
            return Err(("trace_interval".into(), "expected a positive sampling interval, got 0".into()));
        }
        self.check_size()?;
        if let Some(live) = &self.live {
            validate_live(live)?;
        }
        self.tcp.validate("tcp")?;
        self.tcp.validate_effective(|f| format!("tcp.{f}"))?;
        for (i, f) in self.flows.iter().enumerate() {
            let Some(t) = &f.tcp else { continue };
            t.validate(&format!("flows[{i}].tcp"))?;
            t.over(&self.tcp).validate_effective(|name| {
                let own = match name {
                    "rcv_buf" => t.rcv_buf.is_some(),
                    "max_window" => t.max_window.is_some(),
                    "max_rto" => t.max_rto.is_some(),
                    _ => true,
                };
                if own {
                    format!("flows[{i}].tcp.{name}")
                } else {
                    format!("tcp.{name}")
                }
            })?;
        }
        // A VPS group's actual flows are driven by the group's virtual windows (paper 003): a
        // rate-based controller has nothing to drive there.
        for (i, f) in self.flows.iter().enumerate() {
            let t = f.tcp.clone().unwrap_or_default().over(&self.tcp);
            if f.kind == FlowKind::Vps && t.cc == Some(CcAlgo::Bbr) {
                let own = f.tcp.as_ref().is_some_and(|x| x.cc.is_some());
                let key = if own { format!("flows[{i}].tcp.cc") } else { "tcp.cc".to_string() };
                return Err((
                    key,
                    format!("expected a window-based controller for the VPS group `flows[{i}]`, got \"bbr\""),
                ));
            }
        }
        // The largest IP packet a TCP flow sends: a queue given in bytes must hold it.
        let max_pkt = std::iter::once(self.tcp.clone())
            .chain(self.flows.iter().filter_map(|f| f.tcp.as_ref().map(|t| t.over(&self.tcp))))
            .map(|t| {
                let c = t.to_config();
                u64::from(c.mss) + 40 + if c.timestamps { 12 } else { 0 }
            })
            .max()
            .unwrap_or(0);
        match &self.topology {
            TopologySpec::Dumbbell(d) => {
                d.bottleneck.validate("topology.bottleneck", max_pkt)?;
                d.access.validate("topology.access", max_pkt)?;
                if let Some(r) = &d.receiver_access {
                    r.over(&d.access).validate("topology.receiver_access", max_pkt)?;
                }
                let racc = d.receiver_access_link();
                for (i, g) in d.groups.iter().enumerate() {
                    g.access.over(&d.access).validate(&format!("topology.groups[{i}].access"), max_pkt)?;
                    if let Some(r) = &g.receiver_access {
                        r.over(&racc).validate(&format!("topology.groups[{i}].receiver_access"), max_pkt)?;
                    }
                }
                if let Some(u) = &d.upstream {
                    u.validate("topology.upstream", max_pkt)?;
                }
                let racc = d.receiver_access_link();
                for (i, g) in d.receiver_groups.iter().enumerate() {
                    g.access.over(&racc).validate(&format!("topology.receiver_groups[{i}].access"), max_pkt)?;
                }
                let grouped: u64 = d.groups.iter().map(|g| u64::from(g.senders)).sum();
                if let Some(n) = d.senders {
                    if n == 0 {
                        return Err(("topology.senders".into(), "expected at least 1 sender".into()));
                    }
                    if grouped > u64::from(n) {
                        return Err((
                            "topology.groups".into(),
                            format!("groups hold {grouped} senders but topology.senders is {n}"),
                        ));
                    }
                    let rgrouped: u64 = d.receiver_groups.iter().map(|g| u64::from(g.receivers)).sum();
                    if rgrouped > u64::from(n) {
                        return Err((
                            "topology.receiver_groups".into(),
                            format!("receiver groups hold {rgrouped} receivers but topology.senders is {n}"),
                        ));
                    }
                }
            }
            TopologySpec::Graph(g) => {
                let mut names = std::collections::BTreeSet::new();
                for (i, n) in g.nodes.iter().enumerate() {
                    if !names.insert(n.name.as_str()) {
                        return Err((format!("topology.nodes[{i}].name"), format!("duplicate node name {:?}", n.name)));
                    }
                }
                for (i, l) in g.links.iter().enumerate() {
                    for (end, v) in [("a", &l.a), ("b", &l.b)] {
                        if !names.contains(v.as_str()) {
                            return Err((
                                format!("topology.links[{i}].{end}"),
                                format!("expected a node name, {v:?} is not one"),
                            ));
                        }
                    }
                    if l.a == l.b {
                        return Err((
                            format!("topology.links[{i}].b"),
                            format!("expected a node other than `a` ({:?}): a link joins two nodes", l.a),
                        ));
                    }
                    l.link().validate(&format!("topology.links[{i}]"), max_pkt)?;
                }
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            let at = format!("flows[{i}]");
            if f.count == Some(0) {
                return Err((format!("{at}.count"), "expected at least 1 flow".into()));
            }
            if f.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
                return Err((format!("{at}.name"), "expected a name (it names the flows in tables and files)".into()));
            }
            match f.kind {
                FlowKind::Short => {
                    if f.bytes.is_none() {
                        return Err((
                            format!("{at}.bytes"),
                            "a short-transfer flow needs a transfer size like \"50KB\"".into(),
                        ));
                    }
                }
                FlowKind::UdpCbr | FlowKind::UdpPoisson | FlowKind::UdpOnoff => match f.rate {
                    None => return Err((format!("{at}.rate"), "a UDP flow needs a rate like \"1Mbit/s\"".into())),
                    Some(r) if r.0 .0 == 0 => {
                        return Err((format!("{at}.rate"), "expected a positive rate, got 0".into()))
                    }
                    _ => {}
                },
                FlowKind::Bulk | FlowKind::Vps | FlowKind::Multcp | FlowKind::Wrr => {}
            }
            if f.kind == FlowKind::UdpOnoff {
                for (k, v) in [("on", f.on), ("off", f.off)] {
                    if v.is_some_and(|d| d.0 == Dur::ZERO) {
                        return Err((format!("{at}.{k}"), "expected a positive mean period, got 0".into()));
                    }
                }
            } else {
                for (k, v) in [("on", f.on.is_some()), ("off", f.off.is_some())] {
                    if v {
                        return Err((format!("{at}.{k}"), "only a `udp-onoff` flow has on/off periods".into()));
                    }
                }
            }
            if f.kind.is_group() {
                if let Some(w) = &f.weights {
                    let n = f.count.unwrap_or(1) as usize;
                    if w.len() != n {
                        return Err((
                            format!("{at}.weights"),
                            format!("expected one weight per flow ({n}, the `count`), got {}", w.len()),
                        ));
                    }
                    if let Err(e) = ackshape_core::tcp::vps::check_weights(w) {
                        return Err((format!("{at}.weights"), e));
                    }
                    if f.kind == FlowKind::Multcp && w.iter().any(|&x| x < 1.0) {
                        return Err((format!("{at}.weights"), "MulTCP's N must be at least 1".into()));
                    }
                }
            } else {
                for (k, v) in [("weights", f.weights.is_some()), ("vps", f.vps.is_some())] {
                    if v {
                        return Err((format!("{at}.{k}"), "only `vps`, `multcp` and `wrr` flows take this key".into()));
                    }
                }
            }
            if f.kind != FlowKind::Wrr {
                for (k, v) in [("io", f.io.is_some()), ("sndbuf", f.sndbuf.is_some()), ("unit", f.unit.is_some())] {
                    if v {
                        return Err((format!("{at}.{k}"), "only a `wrr` flow takes this key".into()));
                    }
                }
            }
            if f.kind != FlowKind::Vps && f.vps.is_some() {
                return Err((format!("{at}.vps"), "only a `vps` flow takes this key".into()));
            }
            if f.open == FlowOpen::Receiver && !matches!(f.kind, FlowKind::Bulk | FlowKind::Short) {
                return Err((
                    format!("{at}.open"),
                    "only a `bulk` or `short` flow can be opened by its receiver (`open = \"receiver\"`)".into(),
                ));
            }
            if f.kind.is_group() && f.bytes.is_some() {
                return Err((format!("{at}.bytes"), "group flows are always backlogged (no `bytes`)".into()));
            }
            if let Some(SizeV(Size::Packets(_))) = f.bytes {
                return Err((format!("{at}.bytes"), "expected a size in bytes like \"1MB\", not packets".into()));
            }
            if let Some(SizeV(Size::Bytes(0))) = f.bytes {
                return Err((format!("{at}.bytes"), "expected at least 1 byte, got 0".into()));
            }
            let earliest = match f.start {
                Some(StartV::At(t) | StartV::Uniform(t, _)) => t,
                None => Dur::ZERO,
            };
            if earliest >= self.duration.0 {
                return Err((
                    format!("{at}.start"),
                    format!(
                        "expected a start before the run ends (`duration` = {}), got {}: the flow would never run",
                        dur_text(self.duration.0),
                        dur_text(earliest)
                    ),
                ));
            }
            if let TopologySpec::Graph(g) = &self.topology {
                for (k, v) in [("from", &f.from), ("to", &f.to)] {
                    match v {
                        None => {
                            return Err((
                                format!("{at}.{k}"),
                                "expected a host name (graph topologies name both ends)".into(),
                            ))
                        }
                        Some(n) => {
                            if !g.nodes.iter().any(|x| &x.name == n && x.kind == NodeKind::Host) {
                                return Err((
                                    format!("{at}.{k}"),
                                    format!("expected the name of a host node, {n:?} is not one"),
                                ));
                            }
                        }
                    }
                }
                if f.from.is_some() && f.from == f.to {
                    return Err((
                        format!("{at}.to"),
                        format!(
                            "expected a host other than `from` ({:?}): a flow crosses the network",
                            f.from.as_deref().unwrap_or("")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Total number of flows.
    pub fn flow_count(&self) -> u32 {
        self.flows.iter().map(|f| f.count.unwrap_or(1)).sum()
    }

    /// The number of flows the scenario makes in all (each `[[flows]]` entry counts `count` times),
    /// and the index and `count` of its largest entry (the first of equals) — what a limit on the flow
    /// count names in its error (`flows[i].count`).
    pub fn flow_total(&self) -> (u64, usize, u32) {
        let total = self.flows.iter().map(|f| u64::from(f.count.unwrap_or(1))).sum();
        let (i, n) = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| (i, f.count.unwrap_or(1)))
            .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))
            .unwrap_or((0, 0));
        (total, i, n)
    }

    /// What a run keeps per flow grows with the flow count and with duration ÷ `bin` (and ÷
    /// `trace_interval`): a typo there (`count = 10000000`, `bin = "1ns"`) would otherwise take
    /// the machine's memory before the first event. The limits ([`MAX_FLOWS`], …) sit far above
    /// any experiment here; the error names the key to change.
    fn check_size(&self) -> Result<(), (String, String)> {
        let (flows, i, n) = self.flow_total();
        if flows > MAX_FLOWS {
            return Err((
                format!("flows[{i}].count"),
                if u64::from(n) == flows {
                    format!("expected at most {MAX_FLOWS} flows in all (a flow takes about 10 KB), got {flows}")
                } else {
                    format!(
                        "expected at most {MAX_FLOWS} flows in all (a flow takes about 10 KB), got {flows} ({n} here)"
                    )
                },
            ));
        }
        if let TopologySpec::Dumbbell(d) = &self.topology {
            let pairs = [
                ("topology.senders", u64::from(d.senders.unwrap_or(0))),
                ("topology.groups", d.groups.iter().map(|g| u64::from(g.senders)).sum()),
                ("topology.receiver_groups", d.receiver_groups.iter().map(|g| u64::from(g.receivers)).sum()),
            ];
            for (key, n) in pairs {
                if n > MAX_FLOWS {
                    return Err((
                        key.into(),
                        format!("expected at most {MAX_FLOWS} sender/receiver pairs (each two hosts and their links), got {n}"),
                    ));
                }
            }
        }
        let duration = self.duration.0 .0;
        let per_flow = |every: Dur| duration.div_ceil(every.0.max(1));
        let bins = per_flow(self.bin.map(|b| b.0).unwrap_or(Dur::from_secs(1)));
        if flows.max(1).saturating_mul(bins) > MAX_FLOW_BINS {
            return Err((
                "bin".into(),
                format!(
                    "expected a bin wide enough for at most {MAX_FLOW_BINS} goodput bins over all flows, got {flows} {} × {bins} bins (`duration` ÷ `bin`)", if flows == 1 { "flow" } else { "flows" }
                ),
            ));
        }
        if let Some(t) = self.trace_interval {
            let samples = per_flow(t.0);
            if flows.max(1).saturating_mul(samples) > MAX_TRACE_SAMPLES {
                return Err((
                    "trace_interval".into(),
                    format!(
                        "expected an interval long enough for at most {MAX_TRACE_SAMPLES} trace samples over all flows, got {flows} {} × {samples} samples (`duration` ÷ `trace_interval`)", if flows == 1 { "flow" } else { "flows" }
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// `[live]`: what only the live driver reads. Its keys are checked here so that a typo is an error
/// in the simulator too (`ackshape validate`), not a setting the live run silently lacks; the
/// testbed table's own keys are the live crate's (`ackshape validate` and the live commands check them).
fn validate_live(live: &toml::Table) -> Result<(), (String, String)> {
    for (k, v) in live {
        match k.as_str() {
            "cc" => {
                let ok = v.as_str().is_some_and(|c| {
                    !c.is_empty() && c.len() < 16 && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                });
                if !ok {
                    return Err((
                        "live.cc".into(),
                        format!("expected a Linux congestion control name like \"cubic\", \"reno\" or \"bbr\", got {v}"),
                    ));
                }
            }
            "testbed" => {
                if !v.is_table() {
                    return Err((
                        "live.testbed".into(),
                        format!("expected a table like {{ prefix = \"acks-live\" }}, got {v}"),
                    ));
                }
            }
            _ => {
                return Err((
                    format!("live.{k}"),
                    "unknown key; `[live]` has `cc` (the live senders' congestion control) and `testbed` (the namespaces: prefix, sender_addr, receiver_addr, prefix_len, middle, wanem, mtu)".into(),
                ))
            }
        }
    }
    Ok(())
}
