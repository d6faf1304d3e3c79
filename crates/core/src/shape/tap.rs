//! Third-party flow control (paper 004, Bansal & Ward): a tap beside a router that sees copies of
//! the packets crossing it and can only *inject* packets, never drop, delay or modify them.
//!
//! Two techniques, both made of duplicates of the receiver's own ACKs (P4-A1, P4-A2):
//!
//! - **Triple-ACK duplication** (`technique = "triple-ack"`): on every *f*-th ACK of a shaped
//!   flow (new ACKs only, or with `count = "all-acks"` every ACK the receiver sends, its duplicate
//!   ACKs included, as the paper's shaper counted), inject `copies` (3) exact duplicates of it. The sender sees four identical ACKs,
//!   fast-retransmits the segment after the ACK (which the receiver already holds) and cuts cwnd
//!   and ssthresh. The copies carry the same window and options as the original, so they count as
//!   duplicate ACKs (P4-9); they only work if they reach the sender before the next true ACK.
//! - **Zero-window ACKs** (`technique = "zero-window"`): on every *f*-th ACK (every ACK by
//!   default) inject one duplicate advertising window `window` bytes (0 by default). Under RFC
//!   5681 a window change makes it *not* a duplicate ACK (P4-9), so it never triggers a
//!   retransmission; a sender with RFC 793's window rule closes its window until the next true ACK
//!   reopens it, Linux and BSD ignore it (a same-numbered segment may only grow the window).
//!
//! `technique = "none"` only measures (the baseline of an experiment, or monitoring).
//!
//! **Feedback controller** (P4-A3, the paper's future work). A rule with a `target` rate adjusts
//! *f* — the ACKs per injection — to hold the measured rate at the target, per flow
//! (`scope = "flow"`) or for all the rule's flows together (`scope = "aggregate"`, a subscriber's
//! subnet). Every `interval` it measures the data bytes the mirror showed for the flow (or the
//! aggregate) in that interval (`measure = "throughput"`: every payload byte, retransmissions
//! included; `"goodput"`: only bytes above the highest sequence seen), smooths the rate with an
//! EWMA of gain `ewma`, and takes one integral step on log f:
//!
//! ```text
//!   r_k     = ewma · bytes_k·8/interval + (1 − ewma) · r_{k−1}
//!   ln f_k  = clamp( ln f_{k−1} + gain · ln(target / r_k),  ln min_every, ln max_every )
//! ```
//!
//! A loss-driven TCP's rate goes as 1/√p with p the cut rate, i.e. as f^½ (Mathis), so the loop
//! gain on ln r is about gain/2: with the default `gain = 1` the error halves every interval. An
//! integral loop on a plant with slope β is stable for 0 < gain·β < 2 without lag; the EWMA and
//! TCP's own response (a few RTTs) add lag, so keep `gain·β ≤ 1` and `interval` ≥ ~10 RTT. At
//! `f ≥ max_every` the rule injects nothing (the flow is below target unshaped). The controller
//! cannot hold a target the technique cannot reach: below the rate the technique gives at
//! `min_every` (f saturates; `saturated_low` counts the samples), for window- or application-
//! limited flows that do not respond to cwnd, when injections arrive after the next true ACK
//! (shaper delay above the inter-ACK gap, P4-S4.2b), and for Tahoe senders (no fast retransmit)
//! or zero-window against a sender that has nothing to send between ACKs. Triple-ACK at f = 1
//! *raises* the sender's rate (every ACK causes a retransmission), so `min_every` must stay
//! above the technique's turning point (default 2). See `docs/scenario.md` and
//! `docs/reproduction.md` for measured limits.
//!
//! Sans-IO: the simulator's `[[middlebox]] kind = "tap", mode = "mirror"` and the live
//! `ackshape tap` drive the same [`Tap`]. Injected packets are clones of the mirrored ACK (same
//! IP id, TTL, options: timestamps, SACK blocks), with only the window changed for zero-window.

use crate::middlebox::{Dir, Emit, Middlebox};
pub use crate::shape::tapkind::{Scope, Technique};
pub use crate::stats::CtlSample;
use crate::stats::{BoxStats, TapControlStats, TapFlowControlStats, TapFlowStats, TapRuleStats, TapStats};
use crate::time::{Dur, Time};
use crate::units;
use ackshape_wire::{Packet, SeqNum, TcpFlags};
use serde::{Deserialize, Deserializer};
use std::net::IpAddr;

/// An IP prefix such as `10.0.0.0/24` or `2001:db8::/32` (a bare address is a /32 or /128).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub addr: IpAddr,
    pub len: u8,
}

impl Subnet {
    pub fn parse(s: &str) -> Result<Subnet, String> {
        let exp = || format!("expected an IP prefix like \"10.0.0.0/24\", got {s:?}");
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a.trim().parse().map_err(|_| exp())?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            Some(l) => l.trim().parse::<u8>().map_err(|_| exp())?,
            None => max,
        };
        if len > max {
            return Err(format!("prefix length {len} is longer than {max} in {s:?}"));
        }
        Ok(Subnet { addr, len })
    }
    pub fn contains(&self, a: &IpAddr) -> bool {
        match (self.addr, a) {
            (IpAddr::V4(n), IpAddr::V4(x)) => {
                let m = if self.len == 0 { 0 } else { u32::MAX << (32 - self.len) };
                u32::from(n) & m == u32::from(*x) & m
            }
            (IpAddr::V6(n), IpAddr::V6(x)) => {
                let m = if self.len == 0 { 0 } else { u128::MAX << (128 - self.len) };
                u128::from(n) & m == u128::from(*x) & m
            }
            _ => false,
        }
    }
}

impl<'de> Deserialize<'de> for Subnet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Subnet::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Which ACKs count toward f.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Count {
    /// Only new ACKs (a higher acknowledgement number than any seen before).
    #[default]
    NewAcks,
    /// Every pure ACK the receiver sends, its duplicate ACKs included (paper 004, Sec. 4.1: "how
    /// many ACKs it sees before it generates a triple-ACK duplicate"); an f-th ACK that is a
    /// duplicate is copied like any other. ACKs older than the highest seen, and the tap's own
    /// copies when the mirror shows them back (same acknowledgement number, IP id and window as
    /// the last injection, at most `copies` of them), never count.
    AllAcks,
}

/// Which bytes the controller counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Every data byte seen, retransmissions included (what the link carries; paper 004's
    /// "bandwidth").
    #[default]
    Throughput,
    /// Only bytes above the highest sequence number seen (new data).
    Goodput,
}

fn de_rate_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let s = String::deserialize(d)?;
    units::parse_rate(&s).map(|r| Some(r.0)).map_err(serde::de::Error::custom)
}

fn de_dur<'de, D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
    let s = String::deserialize(d)?;
    units::parse_duration(&s).map_err(serde::de::Error::custom)
}

fn de_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum B {
        N(u64),
        S(String),
    }
    match B::deserialize(d)? {
        B::N(n) => Ok(n),
        B::S(s) => units::parse_bytes(&s).map_err(serde::de::Error::custom),
    }
}

/// One rule: which flows (by their data direction: `src` sends data to `dst`), which technique,
/// and either a fixed frequency (`every`) or a `target` rate for the controller.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Label in stats (default `rule-N`).
    pub name: Option<String>,
    /// Data sender's address prefix (default: any).
    pub src: Option<Subnet>,
    /// Data receiver's address prefix (default: any).
    pub dst: Option<Subnet>,
    /// Data sender's port.
    pub sport: Option<u16>,
    /// Data receiver's port.
    pub dport: Option<u16>,
    pub technique: Technique,
    /// f: ACKs per injection (new ACKs, or all ACKs with `count = "all-acks"`; open loop; fractional values spread injections evenly).
    /// Default 6 for triple-ack (the paper's best), 1 for zero-window (every ACK). With a
    /// `target`, the controller's starting value (default 20 and 1).
    pub every: Option<f64>,
    /// Duplicates per injection (default 3 for triple-ack, 1 for zero-window).
    pub copies: Option<u32>,
    /// Which ACKs f counts: `"new-acks"` (default) or `"all-acks"` (duplicate ACKs too).
    #[serde(default)]
    pub count: Count,
    /// zero-window: the window the duplicates advertise, in bytes (default 0), converted with the
    /// window scale learned from the handshake (unscaled if the tap did not see it).
    #[serde(default, deserialize_with = "de_bytes")]
    pub window: u64,
    /// Closed loop: the rate to hold (e.g. `"5Mbit/s"`).
    #[serde(default, deserialize_with = "de_rate_opt")]
    pub target: Option<u64>,
    #[serde(default)]
    pub scope: Scope,
    #[serde(default)]
    pub measure: Measure,
    /// Controller bounds on f (defaults: triple-ack 2 and 1000, zero-window 1 and 1000).
    pub min_every: Option<f64>,
    pub max_every: Option<f64>,
}

/// The whole tap configuration (a `[[middlebox]] kind = "tap"` table, or an `ackshape tap`
/// policy file). See `docs/scenario.md` and `docs/policy.md`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TapSpec {
    /// Rules, first match wins; flows matching none are ignored.
    pub rule: Vec<RuleSpec>,
    /// Controller sampling interval (default 500 ms).
    #[serde(default = "d_interval", deserialize_with = "de_dur")]
    pub interval: Dur,
    /// EWMA gain on the measured rate, in (0, 1] (default 0.5).
    #[serde(default = "d_ewma")]
    pub ewma: f64,
    /// Integral gain on ln f per unit of ln(target/rate), in (0, 4] (default 1).
    #[serde(default = "d_gain")]
    pub gain: f64,
    /// Flows tracked at most; more are ignored and counted (default 65536).
    #[serde(default = "d_max_flows")]
    pub max_flows: usize,
    /// A flow with no packet for this long is forgotten (default 60 s).
    #[serde(default = "d_idle", deserialize_with = "de_dur")]
    pub idle_timeout: Dur,
    /// Record every controller sample in the stats (`history`); for experiments.
    #[serde(default)]
    pub history: bool,
}

fn d_interval() -> Dur {
    Dur::from_millis(500)
}
fn d_ewma() -> f64 {
    0.5
}
fn d_gain() -> f64 {
    1.0
}
fn d_max_flows() -> usize {
    65_536
}
fn d_idle() -> Dur {
    Dur::from_secs(60)
}

/// Keys of [`TapSpec`] itself. A file format that accepts a one-rule shorthand (any other
/// top-level key belongs to the one rule) reads these as the spec's own keys.
pub const GLOBAL_KEYS: &[&str] = &["rule", "interval", "ewma", "gain", "max_flows", "idle_timeout", "history"];

impl TapSpec {
    /// Check the values serde cannot (ranges, combinations). Errors are `(dotted key, what was
    /// expected)`; reading a tap policy file is `ackshape_format::tap`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let err = |k: String, m: String| Err((k, m));
        if self.rule.is_empty() {
            return err("rule".into(), "expected at least one rule".into());
        }
        if self.interval < Dur::from_millis(1) {
            return err("interval".into(), format!("expected at least 1ms, got {:?}", self.interval));
        }
        if !(self.ewma > 0.0 && self.ewma <= 1.0) {
            return err("ewma".into(), format!("expected a gain in (0, 1], got {}", self.ewma));
        }
        if !(self.gain > 0.0 && self.gain <= 4.0) {
            return err("gain".into(), format!("expected a gain in (0, 4], got {}", self.gain));
        }
        if self.max_flows == 0 {
            return err("max_flows".into(), "expected at least 1".into());
        }
        for (i, r) in self.rule.iter().enumerate() {
            let k = |s: &str| format!("rule[{i}].{s}");
            let b = r.bounds();
            if let Some(e) = r.every {
                if !(e.is_finite() && e >= 1.0) {
                    return err(k("every"), format!("expected a number ≥ 1 (ACKs per injection), got {e}"));
                }
            }
            if let Some(c) = r.copies {
                if !(1..=10).contains(&c) {
                    return err(k("copies"), format!("expected 1..=10 duplicates per injection, got {c}"));
                }
            }
            if !(b.0.is_finite() && b.0 >= 1.0 && b.1.is_finite() && b.1 >= b.0) {
                return err(k("min_every"), format!("expected 1 ≤ min_every ≤ max_every, got {} and {}", b.0, b.1));
            }
            if r.target == Some(0) {
                return err(k("target"), "expected a rate > 0".into());
            }
            if r.technique == Technique::None && r.target.is_some() {
                return err(k("target"), "a target needs a technique (triple-ack or zero-window)".into());
            }
            if r.technique != Technique::ZeroWindow && r.window != 0 {
                return err(k("window"), "only zero-window duplicates carry a window".into());
            }
            if r.window > (u16::MAX as u64) << 14 {
                return err(
                    k("window"),
                    format!("expected at most {} bytes, got {}", (u16::MAX as u64) << 14, r.window),
                );
            }
        }
        Ok(())
    }
}

impl RuleSpec {
    fn bounds(&self) -> (f64, f64) {
        let (lo, hi) = match self.technique {
            Technique::TripleAck => (2.0, 1000.0),
            _ => (1.0, 1000.0),
        };
        (self.min_every.unwrap_or(lo), self.max_every.unwrap_or(hi))
    }
    fn default_every(&self) -> f64 {
        match (self.technique, self.target.is_some()) {
            (Technique::TripleAck, false) => 6.0,
            (Technique::TripleAck, true) => 20.0,
            _ => 1.0,
        }
    }
    fn copies(&self) -> u32 {
        self.copies.unwrap_or(match self.technique {
            Technique::TripleAck => 3,
            _ => 1,
        })
    }
    fn matches(&self, k: &FlowKey) -> bool {
        self.src.is_none_or(|s| s.contains(&k.src))
            && self.dst.is_none_or(|s| s.contains(&k.dst))
            && self.sport.is_none_or(|p| p == k.sport)
            && self.dport.is_none_or(|p| p == k.dport)
    }
}

/// A flow in its data direction: `src:sport` sends data to `dst:dport`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct FlowKey {
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
}

/// The feedback controller of one flow or one aggregate.
#[derive(Clone, Debug)]
struct Ctl {
    target_bps: f64,
    ln_every: f64,
    rate: Option<f64>,
    /// Byte counter value at the last sample (None: not sampled yet).
    last_bytes: Option<u64>,
    samples: u64,
    saturated_low: u64,
    saturated_high: u64,
}

impl Ctl {
    fn new(target: u64, every: f64) -> Ctl {
        Ctl {
            target_bps: target as f64,
            ln_every: every.ln(),
            rate: None,
            last_bytes: None,
            samples: 0,
            saturated_low: 0,
            saturated_high: 0,
        }
    }
    /// One sample: `bytes` is the counter now. Returns (raw rate, smoothed rate) if it sampled.
    fn sample(&mut self, bytes: u64, dt: Dur, spec: &TapSpec, bounds: (f64, f64)) -> Option<(f64, f64)> {
        let last = self.last_bytes.replace(bytes)?;
        let raw = (bytes - last) as f64 * 8.0 / dt.as_secs_f64().max(1e-9);
        let r = match self.rate {
            Some(r) => spec.ewma * raw + (1.0 - spec.ewma) * r,
            None => raw,
        };
        self.rate = Some(r);
        self.samples += 1;
        if r > 0.0 {
            let (lo, hi) = (bounds.0.ln(), bounds.1.ln());
            let x = self.ln_every + spec.gain * (self.target_bps / r).ln();
            if x <= lo && r > self.target_bps {
                self.saturated_low += 1;
            }
            if x >= hi {
                self.saturated_high += 1;
            }
            self.ln_every = x.clamp(lo, hi);
        }
        Some((raw, r))
    }
}

#[derive(Clone, Debug)]
struct FlowState {
    key: FlowKey,
    id: u64,
    rule: usize,
    last_seen: Time,
    /// Payload bytes seen in the data direction (retransmissions included) / above the highest seq.
    bytes: u64,
    new_bytes: u64,
    high: Option<SeqNum>,
    /// Highest ACK seen from the receiver.
    last_ack: Option<SeqNum>,
    /// The last injection (acknowledgement number, IP id, window) and how many of its copies
    /// the mirror may still show back (`count = "all-acks"` must not count them).
    own: (SeqNum, u16, u16, u32),
    credit: f64,
    acks: u64,
    new_acks: u64,
    injections: u64,
    /// Window scale the receiver announced (None: none or not seen) and whether the sender offered one.
    rcv_ws: Option<u8>,
    snd_ws: bool,
    /// Scope = flow: this flow's controller.
    ctl: Option<Ctl>,
}

impl FlowState {
    fn measured(&self, m: Measure) -> u64 {
        match m {
            Measure::Throughput => self.bytes,
            Measure::Goodput => self.new_bytes,
        }
    }
}

/// Per-rule counters and the aggregate controller.
#[derive(Clone, Debug, Default)]
struct RuleState {
    flows: u64,
    bytes: u64,
    new_bytes: u64,
    acks: u64,
    new_acks: u64,
    injections: u64,
    packets_injected: u64,
    ctl: Option<Ctl>,
}

/// The tap. See the module documentation.
pub struct Tap {
    spec: TapSpec,
    flows: Vec<Option<FlowState>>,
    free: Vec<usize>,
    index: crate::hash::KeyedMap<FlowKey, usize>,
    /// Handshake facts (receiver's window scale, sender scales, when) of flows not tracked yet.
    handshakes: crate::hash::KeyedMap<FlowKey, (Option<u8>, bool, Time)>,
    rules: Vec<RuleState>,
    next_id: u64,
    next_tick: Option<Time>,
    last_tick: Time,
    untracked: u64,
    evicted: u64,
    packets_seen: u64,
    non_tcp: u64,
    /// ACKs beyond the highest data the mirror showed for their flow: not the receiver's (a
    /// spoof), never counted or duplicated.
    acks_beyond_data: u64,
    history: Vec<CtlSample>,
}

/// Samples kept at most in `history`.
const HISTORY_MAX: usize = 1 << 20;

impl Tap {
    /// A tap whose flow tables are keyed with a fixed key: the driver gives it its own with
    /// [`Tap::with_hash_key`] (the simulator from the scenario seed, the live tap a random one).
    pub fn new(spec: TapSpec) -> Tap {
        Tap::with_hash_key(spec, crate::hash::HashKey::default())
    }

    /// A tap whose flow tables are keyed with `key` (`crate::hash`).
    pub fn with_hash_key(spec: TapSpec, key: crate::hash::HashKey) -> Tap {
        let rules = spec
            .rule
            .iter()
            .map(|r| RuleState {
                ctl: match (r.target, r.scope) {
                    (Some(t), Scope::Aggregate) => Some(Ctl::new(t, r.every.unwrap_or(r.default_every()))),
                    _ => None,
                },
                ..Default::default()
            })
            .collect();
        Tap {
            spec,
            flows: Vec::new(),
            free: Vec::new(),
            index: crate::hash::map(key.derive("tap-flows", 0)),
            handshakes: crate::hash::map(key.derive("tap-handshakes", 0)),
            rules,
            next_id: 0,
            next_tick: None,
            last_tick: Time::ZERO,
            untracked: 0,
            evicted: 0,
            packets_seen: 0,
            non_tcp: 0,
            acks_beyond_data: 0,
            history: Vec::new(),
        }
    }

    pub fn spec(&self) -> &TapSpec {
        &self.spec
    }

    /// Controller samples so far (empty unless `history = true`).
    pub fn history(&self) -> &[CtlSample] {
        &self.history
    }

    /// Number of flows tracked now.
    pub fn flow_count(&self) -> usize {
        self.index.len()
    }

    /// Current f of the flow with this key (its own controller, its rule's aggregate one, or
    /// the fixed value).
    pub fn every_of(&self, key: &FlowKey) -> Option<f64> {
        let f = self.flows[*self.index.get(key)?].as_ref()?;
        Some(self.every(f))
    }

    fn every(&self, f: &FlowState) -> f64 {
        let r = &self.spec.rule[f.rule];
        if let Some(c) = &f.ctl {
            return c.ln_every.exp();
        }
        if let Some(c) = &self.rules[f.rule].ctl {
            return c.ln_every.exp();
        }
        r.every.unwrap_or(r.default_every())
    }

    /// The flow's slot, created if a rule matches and there is room.
    fn flow(&mut self, now: Time, key: FlowKey) -> Option<usize> {
        if let Some(&i) = self.index.get(&key) {
            return Some(i);
        }
        let rule = self.spec.rule.iter().position(|r| r.matches(&key))?;
        if self.index.len() >= self.spec.max_flows {
            self.untracked += 1;
            return None;
        }
        let r = &self.spec.rule[rule];
        let ctl = match (r.target, r.scope) {
            (Some(t), Scope::Flow) => Some(Ctl::new(t, r.every.unwrap_or(r.default_every()))),
            _ => None,
        };
        let st = FlowState {
            key,
            id: self.next_id,
            rule,
            last_seen: now,
            bytes: 0,
            new_bytes: 0,
            high: None,
            last_ack: None,
            own: (SeqNum(0), 0, 0, 0),
            credit: 0.0,
            acks: 0,
            new_acks: 0,
            injections: 0,
            rcv_ws: None,
            snd_ws: false,
            ctl,
        };
        let mut st = st;
        if let Some((ws, snd, _)) = self.handshakes.remove(&key) {
            st.rcv_ws = ws;
            st.snd_ws = snd;
        }
        self.next_id += 1;
        self.rules[rule].flows += 1;
        let i = match self.free.pop() {
            Some(i) => {
                self.flows[i] = Some(st);
                i
            }
            None => {
                self.flows.push(Some(st));
                self.flows.len() - 1
            }
        };
        self.index.insert(key, i);
        if self.next_tick.is_none() {
            self.next_tick = Some(now + self.spec.interval);
            self.last_tick = now;
        }
        Some(i)
    }

    fn tick(&mut self, now: Time) {
        let dt = now.since(self.last_tick);
        self.last_tick = now;
        let t_s = now.as_secs_f64();
        // Aggregate controllers.
        for (ri, rs) in self.rules.iter_mut().enumerate() {
            let r = &self.spec.rule[ri];
            let bytes = match r.measure {
                Measure::Throughput => rs.bytes,
                Measure::Goodput => rs.new_bytes,
            };
            if let Some(c) = rs.ctl.as_mut() {
                if let Some((raw, rate)) = c.sample(bytes, dt, &self.spec, r.bounds()) {
                    if self.spec.history && self.history.len() < HISTORY_MAX {
                        self.history.push(CtlSample {
                            t_s,
                            rule: ri,
                            flow: None,
                            raw_bps: raw,
                            rate_bps: rate,
                            every: c.ln_every.exp(),
                        });
                    }
                }
            }
        }
        // Per-flow controllers and idle eviction.
        for i in 0..self.flows.len() {
            let Some(f) = self.flows[i].as_mut() else { continue };
            if now.since(f.last_seen) > self.spec.idle_timeout {
                let k = f.key;
                self.flows[i] = None;
                self.index.remove(&k);
                self.free.push(i);
                self.evicted += 1;
                continue;
            }
            let r = &self.spec.rule[f.rule];
            let bytes = f.measured(r.measure);
            if let Some(c) = f.ctl.as_mut() {
                if let Some((raw, rate)) = c.sample(bytes, dt, &self.spec, r.bounds()) {
                    if self.spec.history && self.history.len() < HISTORY_MAX {
                        self.history.push(CtlSample {
                            t_s,
                            rule: f.rule,
                            flow: Some(f.id),
                            raw_bps: raw,
                            rate_bps: rate,
                            every: c.ln_every.exp(),
                        });
                    }
                }
            }
        }
        let idle = self.spec.idle_timeout;
        self.handshakes.retain(|_, h| now.since(h.2) <= idle);
        self.next_tick =
            if self.index.is_empty() && self.handshakes.is_empty() { None } else { Some(now + self.spec.interval) };
    }

    /// A SYN or SYN-ACK: remember the window scale it announces for the flow toward its
    /// sender (whose receiver it is) and whether its sender scales, until that flow shows up.
    fn on_syn(&mut self, now: Time, pkt: &Packet) {
        let t = pkt.tcp().expect("tcp");
        for (key, rcv) in [
            (FlowKey { src: pkt.ip.dst, sport: t.dport, dst: pkt.ip.src, dport: t.sport }, true),
            (FlowKey { src: pkt.ip.src, sport: t.sport, dst: pkt.ip.dst, dport: t.dport }, false),
        ] {
            if !self.spec.rule.iter().any(|r| r.matches(&key)) {
                continue;
            }
            if let Some(&i) = self.index.get(&key) {
                let f = self.flows[i].as_mut().unwrap();
                if rcv {
                    f.rcv_ws = t.opts.wscale;
                } else {
                    f.snd_ws = t.opts.wscale.is_some();
                }
                continue;
            }
            if !self.handshakes.contains_key(&key) && self.handshakes.len() >= self.spec.max_flows {
                continue;
            }
            let h = self.handshakes.entry(key).or_insert((None, false, now));
            if rcv {
                h.0 = t.opts.wscale;
            } else {
                h.1 = t.opts.wscale.is_some();
            }
            h.2 = now;
        }
        if self.next_tick.is_none() {
            self.next_tick = Some(now + self.spec.interval);
            self.last_tick = now;
        }
    }
}

impl Middlebox for Tap {
    fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
        self.packets_seen += 1;
        let Some(t) = pkt.tcp() else {
            self.non_tcp += 1;
            return;
        };
        if t.flags.contains(TcpFlags::RST) {
            return;
        }
        if t.flags.contains(TcpFlags::SYN) {
            self.on_syn(now, &pkt);
            return;
        }
        if pkt.payload_len > 0 {
            let key = FlowKey { src: pkt.ip.src, sport: t.sport, dst: pkt.ip.dst, dport: t.dport };
            let Some(i) = self.flow(now, key) else { return };
            let f = self.flows[i].as_mut().unwrap();
            f.last_seen = now;
            let len = pkt.payload_len;
            let end = t.seq + len;
            let new = match f.high {
                None => len,
                Some(h) if end > h => (end.diff(h) as u32).min(len),
                Some(_) => 0,
            };
            if f.high.is_none_or(|h| end > h) {
                f.high = Some(end);
            }
            f.bytes += len as u64;
            f.new_bytes += new as u64;
            let rs = &mut self.rules[f.rule];
            rs.bytes += len as u64;
            rs.new_bytes += new as u64;
            return;
        }
        if !pkt.is_pure_ack() {
            return;
        }
        // A pure ACK from the receiver of the flow in the other direction.
        let key = FlowKey { src: pkt.ip.dst, sport: t.dport, dst: pkt.ip.src, dport: t.sport };
        let Some(i) = self.flow(now, key) else { return };
        let every = {
            let f = self.flows[i].as_ref().unwrap();
            self.every(f)
        };
        let f = self.flows[i].as_mut().unwrap();
        if f.high.is_some_and(|h| t.ack > h) {
            // It acknowledges data the sender never sent past the mirror (RFC 5961 §5.2: its
            // sender discards it): the tap never duplicates an ACK beyond what the receiver
            // could have sent, nor lets one pass for the flow's newest.
            self.acks_beyond_data += 1;
            return;
        }
        f.last_seen = now;
        f.acks += 1;
        self.rules[f.rule].acks += 1;
        let rule = &self.spec.rule[f.rule];
        if f.last_ack.is_some_and(|a| t.ack <= a) {
            // Not a new ACK: an old one, one of our own copies, or a true duplicate ACK, which
            // counts only with `count = "all-acks"`.
            if rule.count == Count::NewAcks || f.last_ack != Some(t.ack) {
                return;
            }
            let (a, id, w, left) = f.own;
            if left > 0 && a == t.ack && id == pkt.ip.id && w == t.window {
                f.own.3 -= 1;
                return;
            }
        } else {
            f.last_ack = Some(t.ack);
            f.new_acks += 1;
            self.rules[f.rule].new_acks += 1;
        }
        let rs = &mut self.rules[f.rule];
        if rule.technique == Technique::None {
            return;
        }
        let closed = f.ctl.is_some() || rs.ctl.is_some();
        if closed && every >= rule.bounds().1 * (1.0 - 1e-9) {
            f.credit = 0.0; // at the top of its range the controller injects nothing
            return;
        }
        f.credit += 1.0;
        if f.credit + 1e-9 < every {
            return;
        }
        f.credit = (f.credit - every).max(0.0);
        f.injections += 1;
        rs.injections += 1;
        let copies = rule.copies();
        let ack = t.ack;
        let mut dup = pkt;
        if rule.technique == Technique::ZeroWindow {
            let shift = if f.snd_ws { f.rcv_ws.unwrap_or(0).min(14) } else { 0 };
            let raw = (rule.window >> shift).min(u16::MAX as u64) as u16;
            dup.tcp_mut().expect("tcp").window = raw;
        }
        rs.packets_injected += copies as u64;
        f.own = (ack, dup.ip.id, dup.tcp().map_or(0, |x| x.window), copies);
        for _ in 1..copies {
            out.push((dir, dup.clone()));
        }
        out.push((dir, dup));
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next_tick
    }

    fn on_timeout(&mut self, now: Time, _out: &mut Emit) {
        if self.next_tick.is_some_and(|t| t <= now) {
            self.tick(now);
        }
    }

    fn stats(&self) -> BoxStats {
        let rules = self
            .spec
            .rule
            .iter()
            .zip(&self.rules)
            .enumerate()
            .map(|(i, (r, s))| {
                let every = match &s.ctl {
                    Some(c) => Some(c.ln_every.exp()),
                    None if r.target.is_none() => Some(r.every.unwrap_or(r.default_every())),
                    None => None,
                };
                TapRuleStats {
                    name: r.name.clone().unwrap_or_else(|| format!("rule-{i}")),
                    technique: r.technique,
                    flows: s.flows,
                    data_bytes: s.bytes,
                    new_data_bytes: s.new_bytes,
                    acks: s.acks,
                    new_acks: s.new_acks,
                    injections: s.injections,
                    packets_injected: s.packets_injected,
                    target_bps: r.target,
                    scope: r.target.map(|_| r.scope),
                    every,
                    control: s.ctl.as_ref().map(|c| TapControlStats {
                        rate_bps: c.rate.unwrap_or(0.0),
                        samples: c.samples,
                        saturated_low: c.saturated_low,
                        saturated_high: c.saturated_high,
                    }),
                }
            })
            .collect();
        let mut flows: Vec<&FlowState> = self.flows.iter().flatten().collect();
        flows.sort_by_key(|f| std::cmp::Reverse(f.bytes));
        let top_flows = flows
            .iter()
            .take(16)
            .map(|f| TapFlowStats {
                id: f.id,
                src: format!("{}:{}", f.key.src, f.key.sport),
                dst: format!("{}:{}", f.key.dst, f.key.dport),
                rule: f.rule as u64,
                data_bytes: f.bytes,
                new_data_bytes: f.new_bytes,
                acks: f.acks,
                new_acks: f.new_acks,
                injections: f.injections,
                every: self.every(f),
                control: f.ctl.as_ref().map(|c| TapFlowControlStats {
                    rate_bps: c.rate.unwrap_or(0.0),
                    saturated_low: c.saturated_low,
                    saturated_high: c.saturated_high,
                }),
            })
            .collect();
        BoxStats::Tap(Box::new(TapStats {
            packets_seen: self.packets_seen,
            non_tcp: self.non_tcp,
            acks_beyond_data: self.acks_beyond_data,
            flows_now: self.index.len() as u64,
            flows_untracked: self.untracked,
            flows_evicted: self.evicted,
            injections: self.rules.iter().map(|r| r.injections).sum::<u64>(),
            packets_injected: self.rules.iter().map(|r| r.packets_injected).sum::<u64>(),
            rules,
            top_flows,
            history: self.spec.history.then(|| self.history.clone()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackshape_wire::{IpHdr, TcpHdr, TcpOptions, L4};
    use std::net::Ipv4Addr;

    const S: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const R: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1));

    #[allow(clippy::too_many_arguments)]
    fn pkt(src: IpAddr, dst: IpAddr, sport: u16, dport: u16, seq: u32, ack: u32, flags: TcpFlags, len: u32) -> Packet {
        let mut opts = TcpOptions { timestamps: Some((1000 + seq, 77)), ..Default::default() };
        opts.set_sack_blocks(&[]);
        Packet {
            ip: IpHdr { src, dst, ttl: 63, dscp: 0, ecn: Default::default(), id: seq as u16 },
            l4: L4::Tcp(TcpHdr {
                sport,
                dport,
                seq: SeqNum(seq),
                ack: SeqNum(ack),
                flags,
                window: 500,
                urgent: 0,
                opts,
            }),
            payload_len: len,
            payload: None,
        }
    }
    fn data(seq: u32, len: u32) -> Packet {
        pkt(S, R, 1000, 80, seq, 1, TcpFlags::ACK, len)
    }
    fn ack(a: u32) -> Packet {
        pkt(R, S, 80, 1000, 1, a, TcpFlags::ACK, 0)
    }
    /// A spec from the one-rule shorthand of the tests (global keys first, then the rule's);
    /// the file format itself (and its errors) is `ackshape_format::tap`'s to test.
    fn spec(text: &str) -> TapSpec {
        let text = if text.contains("[[rule]]") {
            text.to_string()
        } else {
            let global = |l: &&str| GLOBAL_KEYS.iter().any(|k| l.split('=').next().unwrap().trim() == *k);
            let (g, r): (Vec<&str>, Vec<&str>) = text.lines().partition(global);
            format!("{}\n[[rule]]\n{}", g.join("\n"), r.join("\n"))
        };
        let s: TapSpec = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        s.validate().unwrap_or_else(|e| panic!("{e:?}"));
        s
    }

    /// An ACK beyond the highest data the mirror showed (a spoof at +2^30 or +2^31 − 1) is never
    /// duplicated and does not pass for the flow's newest: the real ACKs after it still are.
    #[test]
    fn acks_beyond_the_data_seen_are_never_duplicated() {
        let mut tap = Tap::new(spec("technique = \"triple-ack\"\nevery = 1"));
        let mut out = Emit::new();
        let mut seq = 1u32;
        for _ in 0..10 {
            tap.on_packet(Time::ZERO, Dir::AToB, data(seq, 1000), &mut out);
            seq += 1000;
        }
        for off in [1u32 << 30, (1u32 << 31) - 1] {
            out.clear();
            tap.on_packet(Time::ZERO, Dir::BToA, ack(2001u32.wrapping_add(off)), &mut out);
            assert!(out.is_empty(), "+{off}: duplicated");
        }
        assert_eq!(tap.stats().to_json()["acks_beyond_data"], 2);
        out.clear();
        tap.on_packet(Time::ZERO, Dir::BToA, ack(3001), &mut out);
        assert_eq!(out.len(), 3, "the real ACK is still new and duplicated");
        assert!(out.iter().all(|(_, p)| p.tcp().unwrap().ack == SeqNum(3001)));
    }

    #[test]
    fn subnets() {
        let s = Subnet::parse("10.0.0.0/24").unwrap();
        assert!(s.contains(&S) && !s.contains(&R));
        assert!(Subnet::parse("10.0.0.0/8").unwrap().contains(&R));
        assert!(Subnet::parse("0.0.0.0/0").unwrap().contains(&R));
        assert!(Subnet::parse("10.0.1.1").unwrap().contains(&R));
        assert!(!Subnet::parse("::/0").unwrap().contains(&R), "families never match");
        assert!(Subnet::parse("10.0.0.0/33").unwrap_err().contains("longer than 32"));
        assert!(Subnet::parse("ten").is_err());
    }

    #[test]
    fn every_bounds_default_by_technique() {
        let s = spec("[[rule]]\ntechnique = \"zero-window\"\ntarget = \"2Mbit/s\"\nscope = \"aggregate\"");
        assert_eq!(s.rule[0].bounds(), (1.0, 1000.0));
        let s = spec("technique = \"triple-ack\"\ntarget = \"2Mbit/s\"\nmin_every = 3");
        assert_eq!(s.rule[0].bounds(), (3.0, 1000.0));
    }

    /// Drive `n` data segments each followed by its ACK (one ACK per segment); returns what the
    /// tap emitted per ACK.
    fn drive(tap: &mut Tap, n: u32) -> Vec<Emit> {
        let mut v = Vec::new();
        for i in 0..n {
            let mut out = Emit::new();
            tap.on_packet(Time(i as u64 * 1000), Dir::AToB, data(1 + i * 100, 100), &mut out);
            assert!(out.is_empty(), "data is never injected");
            tap.on_packet(Time(i as u64 * 1000 + 500), Dir::BToA, ack(1 + (i + 1) * 100), &mut out);
            v.push(out);
        }
        v
    }

    #[test]
    fn triple_ack_duplicates_every_fth_new_ack_exactly() {
        let mut tap = Tap::new(spec("technique = \"triple-ack\"\nevery = 6"));
        let outs = drive(&mut tap, 30);
        for (i, o) in outs.iter().enumerate() {
            if (i + 1) % 6 == 0 {
                assert_eq!(o.len(), 3, "ACK {i}");
                let orig = ack(1 + (i as u32 + 1) * 100);
                for (d, p) in o {
                    assert_eq!(*d, Dir::BToA, "toward the sender, the ACK's own direction");
                    assert_eq!(*p, orig, "an exact copy: same window, options, IP id");
                }
            } else {
                assert!(o.is_empty(), "ACK {i}");
            }
        }
        // Our own copies, mirrored back (or a receiver's true dupACKs), are not new ACKs.
        let mut out = Emit::new();
        for _ in 0..20 {
            tap.on_packet(Time(1), Dir::BToA, ack(3001), &mut out);
        }
        assert!(out.is_empty());
        let st = tap.stats().to_json();
        assert_eq!(st["rules"][0]["injections"], 5);
        assert_eq!(st["packets_injected"], 15);
        assert_eq!(st["rules"][0]["new_acks"], 30);
        assert_eq!(st["rules"][0]["data_bytes"], 3000);
    }

    #[test]
    fn all_acks_counts_the_receivers_duplicate_acks_not_our_copies() {
        let mut tap = Tap::new(spec("technique = \"triple-ack\"\nevery = 3\ncount = \"all-acks\""));
        let mut send = |p: Packet| {
            let mut out = Emit::new();
            tap.on_packet(Time(1), Dir::BToA, p, &mut out);
            out
        };
        let dup = |a: u32, id: u16| {
            let mut p = ack(a);
            p.ip.id = id;
            p
        };
        assert!(send(ack(101)).is_empty() && send(ack(201)).is_empty());
        let o = send(ack(301));
        assert_eq!(o.len(), 3);
        // Our own copies, mirrored back: not counted.
        for (_, p) in o {
            assert!(send(p).is_empty());
        }
        // The receiver's duplicate ACK counts (1), a new ACK (2), an old ACK never, and the
        // third is a duplicate again: it is the one copied.
        assert!(send(dup(301, 9)).is_empty());
        assert!(send(ack(401)).is_empty());
        assert!(send(dup(201, 10)).is_empty());
        let o = send(dup(401, 11));
        assert_eq!(o.len(), 3);
        assert!(o.iter().all(|(_, p)| *p == dup(401, 11)));
        let mut tap = Tap::new(spec("technique = \"triple-ack\"\nevery = 3"));
        let mut n = 0;
        for p in [ack(101), ack(201), ack(301), dup(301, 9), ack(401), dup(401, 11), ack(501), ack(601)] {
            let mut out = Emit::new();
            tap.on_packet(Time(1), Dir::BToA, p, &mut out);
            n += out.len();
        }
        assert_eq!(n, 6, "new-acks (the default): only ACKs 301 and 601");
    }

    #[test]
    fn fractional_every_spreads_injections() {
        let mut tap = Tap::new(spec("technique = \"triple-ack\"\nevery = 2.5\ncopies = 1"));
        let n = drive(&mut tap, 100).iter().filter(|o| !o.is_empty()).count();
        assert_eq!(n, 40);
    }

    #[test]
    fn zero_window_copies_scale_the_window_from_the_handshake() {
        let mut tap = Tap::new(spec("technique = \"zero-window\"\nwindow = \"64KB\""));
        let mut syn = pkt(S, R, 1000, 80, 0, 0, TcpFlags::SYN, 0);
        syn.tcp_mut().unwrap().opts.wscale = Some(7);
        let mut synack = pkt(R, S, 80, 1000, 0, 1, TcpFlags::SYN | TcpFlags::ACK, 0);
        synack.tcp_mut().unwrap().opts.wscale = Some(4);
        let mut out = Emit::new();
        tap.on_packet(Time(0), Dir::AToB, syn, &mut out);
        tap.on_packet(Time(0), Dir::BToA, synack, &mut out);
        assert!(out.is_empty(), "handshake packets are not ACKs to duplicate");
        assert_eq!(tap.flow_count(), 0, "a handshake alone tracks no flow");
        let outs = drive(&mut tap, 3);
        for (i, o) in outs.iter().enumerate() {
            assert_eq!(o.len(), 1);
            let mut want = ack(1 + (i as u32 + 1) * 100);
            want.tcp_mut().unwrap().window = (64_000 >> 4) as u16;
            assert_eq!(o[0].1, want);
        }
        // Default window 0, no handshake seen.
        let mut tap = Tap::new(spec("technique = \"zero-window\""));
        let outs = drive(&mut tap, 2);
        assert_eq!(outs[1][0].1.tcp().unwrap().window, 0);
    }

    #[test]
    fn rules_match_the_data_direction_and_none_only_measures() {
        let t = "[[rule]]\ntechnique = \"none\"\nsrc = \"10.0.1.0/24\"\n[[rule]]\ntechnique = \"triple-ack\"\nevery = 1\ndport = 80";
        let mut tap = Tap::new(spec(t));
        let outs = drive(&mut tap, 4);
        assert!(outs.iter().all(|o| o.len() == 3), "S→R:80 falls to rule 1");
        let st = tap.stats().to_json();
        assert_eq!(st["rules"][0]["flows"], 0);
        assert_eq!(st["rules"][1]["flows"], 1);
        let mut tap = Tap::new(spec("technique = \"none\""));
        assert!(drive(&mut tap, 10).iter().all(|o| o.is_empty()));
        assert_eq!(tap.stats().to_json()["rules"][0]["data_bytes"], 1000);
        let mut tap = Tap::new(spec("technique = \"triple-ack\"\nsrc = \"192.168.0.0/16\""));
        assert!(drive(&mut tap, 10).iter().all(|o| o.is_empty()));
        assert_eq!(tap.flow_count(), 0);
    }

    #[test]
    fn goodput_measure_skips_retransmissions() {
        let mut tap = Tap::new(spec("technique = \"none\""));
        let mut out = Emit::new();
        for (s, l) in [(1, 100), (101, 100), (1, 100), (51, 100), (201, 50)] {
            tap.on_packet(Time(0), Dir::AToB, data(s, l), &mut out);
        }
        let st = tap.stats().to_json();
        assert_eq!(st["rules"][0]["data_bytes"], 450);
        assert_eq!(st["rules"][0]["new_data_bytes"], 250);
    }

    #[test]
    fn flow_table_is_bounded_and_idle_flows_expire() {
        let mut tap = Tap::new(spec("technique = \"none\"\nmax_flows = 3\nidle_timeout = \"2s\"\ninterval = \"1s\""));
        let mut out = Emit::new();
        for p in 0..5u16 {
            tap.on_packet(Time(0), Dir::AToB, pkt(S, R, 2000 + p, 80, 1, 1, TcpFlags::ACK, 10), &mut out);
        }
        assert_eq!(tap.flow_count(), 3);
        assert_eq!(tap.stats().to_json()["flows_untracked"], 2);
        let mut now = Time(0);
        while let Some(t) = tap.poll_timeout() {
            assert!(t > now);
            now = t;
            tap.on_timeout(now, &mut out);
        }
        assert_eq!(tap.flow_count(), 0, "expired; the timer stops when no flow is left");
        assert_eq!(tap.stats().to_json()["flows_evicted"], 3);
        assert!(now <= Time::from_secs_f64(3.0));
    }

    /// A synthetic plant: the flow's rate is c·f^β (c chosen so the unshaped rate is reached at
    /// f = max). The controller must settle within 2% of the target for β in the range of loss-
    /// driven TCP, from above and below.
    #[test]
    fn controller_settles_on_a_power_law_plant() {
        for &(beta, target) in &[(0.5, 5e6), (0.5, 2.5e6), (0.3, 4e6), (0.8, 1e6)] {
            let text = "technique = \"triple-ack\"\ntarget = \"TGT\"\ncopies = 1\nhistory = true\ninterval = \"100ms\"";
            let mut tap = Tap::new(spec(&text.replace("TGT", &format!("{}bit/s", target as u64))));
            let c = 10e6 / 1000f64.powf(beta);
            let mut out = Emit::new();
            let mut seq = 1u32;
            let mut now = Time(0);
            for _k in 0..200 {
                let f = tap.every_of(&FlowKey { src: S, sport: 1000, dst: R, dport: 80 }).unwrap_or(20.0);
                let rate = (c * f.powf(beta)).min(10e6);
                let bytes = (rate * 0.1 / 8.0) as u32;
                tap.on_packet(now, Dir::AToB, data(seq, bytes), &mut out);
                seq += bytes;
                tap.on_packet(now, Dir::BToA, ack(seq), &mut out);
                now += Dur::from_millis(100);
                tap.on_timeout(now, &mut out);
            }
            let h = tap.history();
            let last = h.last().unwrap();
            assert!((last.rate_bps / target - 1.0).abs() < 0.02, "β={beta} target={target}: {last:?}");
            // Settled within 30 samples (3 s).
            let late = &h[30..];
            assert!(late.iter().all(|s| (s.raw_bps / target - 1.0).abs() < 0.1), "β={beta}: {:?}", &h[..40]);
        }
    }

    #[test]
    fn controller_turns_injection_off_when_the_flow_is_below_target() {
        let mut tap = Tap::new(spec("technique = \"triple-ack\"\ntarget = \"100Mbit/s\"\ninterval = \"100ms\""));
        let mut now = Time(0);
        let mut out = Emit::new();
        let mut seq = 1;
        for _ in 0..50 {
            tap.on_packet(now, Dir::AToB, data(seq, 1000), &mut out);
            seq += 1000;
            now += Dur::from_millis(100);
            tap.on_timeout(now, &mut out);
        }
        out.clear();
        for _ in 0..100 {
            tap.on_packet(now, Dir::AToB, data(seq, 1000), &mut out);
            seq += 1000;
            tap.on_packet(now, Dir::BToA, ack(seq), &mut out);
        }
        assert!(out.is_empty(), "f at max_every: nothing injected");
        let st = tap.stats().to_json();
        assert!(st["top_flows"][0]["saturated_high"].as_u64().unwrap() > 0);
    }

    #[test]
    fn aggregate_scope_shares_one_controller() {
        let t = "technique = \"triple-ack\"\ntarget = \"1Mbit/s\"\nscope = \"aggregate\"\nsrc = \"10.0.0.0/24\"";
        let mut tap = Tap::new(spec(t));
        let mut out = Emit::new();
        for p in [1000u16, 1001] {
            tap.on_packet(Time(0), Dir::AToB, pkt(S, R, p, 80, 1, 1, TcpFlags::ACK, 10), &mut out);
        }
        let k = |p| FlowKey { src: S, sport: p, dst: R, dport: 80 };
        assert_eq!(tap.every_of(&k(1000)), tap.every_of(&k(1001)));
        let st = tap.stats().to_json();
        assert_eq!(st["rules"][0]["flows"], 2);
        assert!((st["rules"][0]["every"].as_f64().unwrap() - 20.0).abs() < 1e-9);
    }
}
