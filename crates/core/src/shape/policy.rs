//! The edge gateway's shaping policy: classes (a link-sharing tree with rates, ceilings and
//! priorities, a leaf queue and discipline, an ACK mechanism) and rules that map packets to
//! classes. The same TOML format is read by the simulator (`[[middlebox]] kind = "gateway"`,
//! inline or from a file) and by the live gateway (`--policy`); `docs/policy.md` documents it.
//!
//! [`PolicySpec`] is the file as written (serde); [`Policy::from_spec`] validates it into a
//! [`Policy`], whose errors ([`PolicyError`]) name the file, the dotted key and what was expected:
//!
//! ```text
//! policy.toml: key `class[2].ceil`: ceiling 1Mbit/s is below rate 2Mbit/s
//! ```
//!
//! **Rule order.** Rules are first-match. Without `order` keys they are tried in file order. With
//! them, *every* rule must have one; rules are tried by ascending `order`, and two rules with the
//! same `order` must not overlap (no packet may match both), so the file never relies on an
//! accidental tie. A rule that can never match because an earlier one matches everything it does
//! (it is shadowed) is an error too.

use crate::middlebox::Dir;
use crate::queue::Limit;
use crate::shape::ackmech;
use crate::shape::drr::DrrConfig;
use crate::shape::qdisc_spec::QdiscSpec;
use crate::table::{self, Table, Value};
use crate::time::Dur;
use crate::units::{DurV, Rate, RateV, Size, SizeV};
use ackshape_wire::{Packet, L4};
use ipnet::IpNet;
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::net::IpAddr;

/// A policy error: which file, which key, what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyError {
    pub file: String,
    /// Dotted key path (`class[2].ceil`), when known.
    pub key: Option<String>,
    pub msg: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{}: key `{}`: {}", self.file, k, self.msg),
            None => write!(f, "{}: {}", self.file, self.msg),
        }
    }
}
impl std::error::Error for PolicyError {}

/// Flow table bounds (shared with the live data plane's flow table; the keys of `[flows]`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlowTablePolicy {
    /// Maximum tracked flows; new flows beyond it are forwarded (and class-shaped) but not
    /// tracked (counted as `untracked`; no ACK mechanism sees them).
    pub max_flows: usize,
    /// A flow with no packet for this long is evicted (seconds).
    pub idle_timeout_s: f64,
    /// A flow that has only been seen opening (SYN, no data) or closing is evicted after this
    /// (seconds).
    pub embryonic_timeout_s: f64,
    /// Tracked flows of one class (per direction) at most; default: half of `max_flows` when the
    /// policy has two or more leaf classes, else `max_flows`. A flood of new flows into one class
    /// then leaves the other half of the table to the others.
    pub max_flows_per_class: Option<usize>,
    /// Tracked flows with the same data source address at most; default: no bound beyond
    /// `max_flows` (a NAT in front of the gateway is one source with every flow).
    pub max_flows_per_source: Option<usize>,
    /// Tracked flows of one class (per direction) seen only opening (SYN, no data yet) at most;
    /// default: a quarter of the class's bound. A SYN flood then cannot take the room of flows
    /// that carry data; a connection whose SYN was not tracked is tracked from its first data.
    pub max_embryonic_per_class: Option<usize>,
}

impl Default for FlowTablePolicy {
    fn default() -> Self {
        FlowTablePolicy {
            max_flows: 65_536,
            idle_timeout_s: 120.0,
            embryonic_timeout_s: 10.0,
            max_flows_per_class: None,
            max_flows_per_source: None,
            max_embryonic_per_class: None,
        }
    }
}

impl FlowTablePolicy {
    /// The bounds in force for a policy with `leaves` leaf classes: (per class, per source,
    /// embryonic per class), each at most `max_flows`.
    pub fn bounds(&self, leaves: usize) -> (usize, usize, usize) {
        let m = self.max_flows;
        let per_class = self.max_flows_per_class.unwrap_or(if leaves >= 2 { m.div_ceil(2) } else { m }).min(m);
        let per_source = self.max_flows_per_source.unwrap_or(m).min(m);
        let embryonic = self.max_embryonic_per_class.unwrap_or(per_class.div_ceil(4)).min(per_class);
        (per_class, per_source, embryonic)
    }

    /// Errors are `(key within [flows], message)`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.max_flows == 0 || self.max_flows > 50_000_000 {
            return Err(("max_flows".into(), format!("expected 1..=50000000 flows, got {}", self.max_flows)));
        }
        for (k, v) in [
            ("max_flows_per_class", self.max_flows_per_class),
            ("max_flows_per_source", self.max_flows_per_source),
            ("max_embryonic_per_class", self.max_embryonic_per_class),
        ] {
            match v {
                Some(n) if n == 0 || n > self.max_flows => {
                    return Err((k.into(), format!("expected 1 to max_flows ({}) flows, got {n}", self.max_flows)));
                }
                _ => {}
            }
        }
        for (k, v) in [("idle_timeout_s", self.idle_timeout_s), ("embryonic_timeout_s", self.embryonic_timeout_s)] {
            if !(v.is_finite() && v > 0.0) {
                return Err((k.into(), format!("expected a positive number of seconds, got {v}")));
            }
        }
        Ok(())
    }
}

/// `[link]`: the rate of each direction of the access link (the root of the class tree).
/// Without it a direction is unlimited: top-level classes borrow up to their ceilings.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// LAN → WAN.
    pub outbound: Option<RateV>,
    /// WAN → LAN.
    pub inbound: Option<RateV>,
}

/// One `[[class]]` as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    pub name: String,
    /// Parent class (none: a child of the link).
    pub parent: Option<String>,
    /// Assured rate.
    pub rate: RateV,
    /// Ceiling: the most the class may reach by borrowing (default: `rate`, no borrowing).
    pub ceil: Option<RateV>,
    /// 0 (first) ..= 7: who sends first among classes that can send, and who borrows first.
    #[serde(default)]
    pub priority: u8,
    /// Rate bucket depth (default 3000B).
    pub burst: Option<SizeV>,
    /// Ceiling bucket depth (default: `burst`).
    pub cburst: Option<SizeV>,
    /// Bytes per round-robin turn among classes of equal level and priority (default
    /// rate/80 bytes, i.e. HTB's r2q = 10, within 1514B..=200000B): the split of borrowed bandwidth.
    pub quantum: Option<SizeV>,
    /// Leaf data queue (PCDQ) size for the default FIFO and for `pfq-drr` (default 100pkt).
    pub queue: Option<SizeV>,
    /// Leaf discipline: `{ kind = "red" | "drr" | "pfq" | "pfq-drr" | "fifo" | "acks-first" | … }`.
    #[serde(default, deserialize_with = "crate::shape::qdisc_spec::optional_qdisc_table")]
    pub qdisc: Option<Table>,
    /// ACK mechanism: `{ kind = "none" | "tcr" | "postack", … }` (see [`crate::shape::mechanism::build`]).
    #[serde(default, deserialize_with = "crate::shape::qdisc_spec::optional_mechanism_table")]
    pub mechanism: Option<Table>,
    /// A per-host template: one leaf class per LAN-side address (or `host_prefix` block) of these
    /// subnets, named `NAME/ADDR`, each with this class's keys; rules naming the class go to the
    /// packet's host's class (see [`expand_hosts`]).
    pub per_host: Option<Nets>,
    /// The block each per-host class covers (default 32 for IPv4, 128 for IPv6; e.g. 56 for IPv6
    /// subscribers with a /56 each).
    pub host_prefix: Option<u8>,
}

/// Which data direction a rule matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleDir {
    /// LAN → WAN (default).
    #[default]
    Outbound,
    /// WAN → LAN (paper 000 App. A: shape WAN → LAN data, act on the LAN → WAN ACKs).
    Inbound,
    Both,
}

impl RuleDir {
    pub fn matches(self, d: Dir) -> bool {
        matches!((self, d), (RuleDir::Both, _) | (RuleDir::Outbound, Dir::AToB) | (RuleDir::Inbound, Dir::BToA))
    }
    fn dirs(self) -> &'static [Dir] {
        match self {
            RuleDir::Outbound => &[Dir::AToB],
            RuleDir::Inbound => &[Dir::BToA],
            RuleDir::Both => &[Dir::AToB, Dir::BToA],
        }
    }
}

/// Subnets: one string or a list (`"10.0.0.0/8"`, `["10.1.0.0/16", "2001:db8::/32"]`; a bare
/// address is a /32 or /128).
#[derive(Clone, Debug, PartialEq)]
pub struct Nets(pub Vec<IpNet>);

impl<'de> Deserialize<'de> for Nets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = Value::deserialize(d)?;
        let items = match v {
            Value::String(s) => vec![s],
            Value::Seq(a) => a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    other => Err(D::Error::custom(format!(
                        "expected a subnet string like \"10.0.0.0/8\", got {}",
                        table::show(&other)
                    ))),
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(D::Error::custom(format!(
                    "expected a subnet like \"10.0.0.0/8\" or \"2001:db8::/32\" (or a list of them), got {}",
                    table::show(&other)
                )))
            }
        };
        if items.is_empty() {
            return Err(D::Error::custom("expected at least one subnet (omit the key to match any address)"));
        }
        items
            .iter()
            .map(|s| {
                let s = s.trim();
                s.parse::<IpNet>().or_else(|_| s.parse::<IpAddr>().map(IpNet::from)).map(|n| n.trunc()).map_err(|_| {
                    D::Error::custom(format!("expected a subnet like \"10.0.0.0/8\" or \"2001:db8::/32\", got {s:?}"))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Nets)
    }
}

/// Port ranges: `80`, `"8000-8080"`, or a list of either. Inclusive.
#[derive(Clone, Debug, PartialEq)]
pub struct Ports(pub Vec<(u16, u16)>);

impl<'de> Deserialize<'de> for Ports {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        const EXP: &str = "a port (80), a range (\"8000-8080\") or a list of them";
        fn one(v: &Value) -> Result<(u16, u16), String> {
            let port = |s: &str| s.trim().parse::<u16>().map_err(|_| format!("expected {EXP}, got {}", table::show(v)));
            match v {
                Value::String(s) => {
                    let (a, b) = match s.split_once('-') {
                        Some((a, b)) => (port(a)?, port(b)?),
                        None => (port(s)?, port(s)?),
                    };
                    if a > b {
                        return Err(format!("expected a range low-high with low ≤ high, got {s:?}"));
                    }
                    Ok((a, b))
                }
                v => match table::as_int(v) {
                    Some(p) if (0..=65535).contains(&p) => Ok((p as u16, p as u16)),
                    _ => Err(format!("expected {EXP}, got {}", table::show(v))),
                },
            }
        }
        let v = Value::deserialize(d)?;
        let r = match &v {
            Value::Seq(a) if a.is_empty() => {
                return Err(D::Error::custom("expected at least one port (omit the key to match any port)"))
            }
            Value::Seq(a) => a.iter().map(one).collect::<Result<Vec<_>, _>>(),
            x => one(x).map(|r| vec![r]),
        };
        r.map(Ports).map_err(D::Error::custom)
    }
}

/// IP protocol: `"tcp"`, `"udp"`, `"icmp"`, `"icmpv6"` or a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proto(pub u8);

/// The protocol names a rule's `proto` accepts, and their numbers.
pub const PROTO_NAMES: [(&str, u8); 4] = [("tcp", 6), ("udp", 17), ("icmp", 1), ("icmpv6", 58)];

impl<'de> Deserialize<'de> for Proto {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(s) => match PROTO_NAMES.iter().find(|(n, _)| s.eq_ignore_ascii_case(n)) {
                Some(&(_, p)) => Ok(Proto(p)),
                None => Err(D::Error::custom(format!(
                    "expected \"tcp\", \"udp\", \"icmp\", \"icmpv6\" or a protocol number, got {s:?}"
                ))),
            },
            other => match table::as_int(&other) {
                Some(n) if (0..=255).contains(&n) => Ok(Proto(n as u8)),
                _ => Err(D::Error::custom(format!(
                    "expected \"tcp\", \"udp\", \"icmp\", \"icmpv6\" or a protocol number 0..=255, got {}",
                    table::show(&other)
                ))),
            },
        }
    }
}

/// One `[[rule]]` as written. Omitted match keys match anything.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// The (leaf) class the matching data goes to.
    pub class: String,
    /// Evaluation order (ascending); all rules or none have one.
    pub order: Option<i64>,
    /// Which data direction the rule matches (default `"outbound"`).
    #[serde(default)]
    pub direction: RuleDir,
    /// Sender subnets (the packet's source).
    pub src: Option<Nets>,
    /// Receiver subnets (the packet's destination).
    pub dst: Option<Nets>,
    pub sport: Option<Ports>,
    pub dport: Option<Ports>,
    pub proto: Option<Proto>,
}

/// A whole shaping policy as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    #[serde(default)]
    pub link: LinkSpec,
    /// The class for packets no rule matches (none: they pass unshaped).
    pub default_class: Option<String>,
    /// How often the effective rates of classes that can borrow are recomputed and handed to
    /// their mechanisms (default 100ms).
    pub borrow_interval: Option<DurV>,
    #[serde(default)]
    pub class: Vec<ClassSpec>,
    #[serde(default)]
    pub rule: Vec<RuleSpec>,
    #[serde(default)]
    pub flows: FlowTablePolicy,
}

/// A leaf class's discipline, validated.
#[derive(Clone, Debug, PartialEq)]
pub enum LeafSpec {
    /// The class PCDQ alone: drop-tail FIFO.
    Fifo(Limit),
    /// Paper 000 §6 (P0-A5): per-flow queues served by DRR feeding the class PCDQ, one packet
    /// pulled per PCDQ dequeue, so the PCDQ stays backlogged.
    PfqDrr { pcdq: Limit, drr: DrrConfig },
    /// Any other discipline (RED/ECN, DRR, per-flow token buckets, the asymmetric-link ones).
    Qdisc(QdiscSpec),
}

/// A validated class.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    pub name: String,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// 0 for top-level classes.
    pub depth: usize,
    pub rate_bps: u64,
    pub ceil_bps: u64,
    pub priority: u8,
    pub burst_bytes: u64,
    pub cburst_bytes: u64,
    pub quantum_bytes: u64,
    /// Only for leaves (classes without children).
    pub leaf: Option<LeafSpec>,
    /// `(kind, settings)` of the ACK mechanism (leaves only; `None` for kind "none").
    pub mechanism: Option<(String, Table)>,
    /// Directions rules (or the default class) send data into this class (or its subtree).
    pub dirs: [bool; 2],
    /// The key of the class in the file (`class[2]`), also for a per-host class.
    pub key: String,
    /// A per-host class: its template's name and the block of LAN addresses it carries.
    pub host: Option<(String, IpNet)>,
}

impl Class {
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }
}

/// A validated rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Position in the rule list after per-host expansion (file order).
    pub index: usize,
    /// The key of the rule in the file (`rule[1]`); the rules a per-host template's rule expands
    /// into share it.
    pub key: String,
    /// A per-host template's rule: the block of LAN addresses of the host it is for.
    pub host: Option<IpNet>,
    pub order: i64,
    pub class: usize,
    pub direction: RuleDir,
    /// Empty: any.
    pub src: Vec<IpNet>,
    pub dst: Vec<IpNet>,
    pub sport: Vec<(u16, u16)>,
    pub dport: Vec<(u16, u16)>,
    pub proto: Option<u8>,
}

fn nets_match(nets: &[IpNet], a: &IpAddr) -> bool {
    nets.is_empty() || nets.iter().any(|n| n.contains(a))
}
fn ports_match(r: &[(u16, u16)], p: Option<u16>) -> bool {
    if r.is_empty() {
        return true;
    }
    match p {
        Some(p) => r.iter().any(|&(a, b)| a <= p && p <= b),
        None => false,
    }
}

impl Rule {
    /// Does the rule match packet `pkt` travelling `dir` as data?
    #[inline]
    pub fn matches(&self, dir: Dir, pkt: &Packet) -> bool {
        if !self.direction.matches(dir) {
            return false;
        }
        let (proto, sport, dport) = match &pkt.l4 {
            L4::Tcp(t) => (6, Some(t.sport), Some(t.dport)),
            L4::Udp(u) => (17, Some(u.sport), Some(u.dport)),
            L4::Other { proto } => (*proto, None, None),
        };
        self.proto.is_none_or(|p| p == proto)
            && ports_match(&self.sport, sport)
            && ports_match(&self.dport, dport)
            && nets_match(&self.src, &pkt.ip.src)
            && nets_match(&self.dst, &pkt.ip.dst)
    }

    fn has_ports(&self) -> bool {
        !self.sport.is_empty() || !self.dport.is_empty()
    }

    /// Can some packet match both rules?
    fn overlaps(&self, o: &Rule) -> bool {
        let dirs = self.direction.dirs().iter().any(|d| o.direction.matches(*d));
        let proto = match (self.proto, o.proto) {
            (Some(a), Some(b)) => a == b,
            // Port constraints imply a protocol with ports.
            (Some(p), None) if o.has_ports() => p == 6 || p == 17,
            (None, Some(p)) if self.has_ports() => p == 6 || p == 17,
            _ => true,
        };
        let nets = |a: &[IpNet], b: &[IpNet]| {
            a.is_empty()
                || b.is_empty()
                || a.iter().any(|x| b.iter().any(|y| x.contains(&y.network()) || y.contains(&x.network())))
        };
        let ports = |a: &[(u16, u16)], b: &[(u16, u16)]| {
            a.is_empty() || b.is_empty() || a.iter().any(|x| b.iter().any(|y| x.0 <= y.1 && y.0 <= x.1))
        };
        dirs && proto
            && nets(&self.src, &o.src)
            && nets(&self.dst, &o.dst)
            && ports(&self.sport, &o.sport)
            && ports(&self.dport, &o.dport)
    }

    /// Does `self` match every packet `o` matches (so `o`, tried later, never matches)?
    fn covers(&self, o: &Rule) -> bool {
        let dirs = o.direction.dirs().iter().all(|d| self.direction.matches(*d));
        let proto = match (self.proto, o.proto) {
            (None, _) => !self.has_ports() || o.proto.is_some_and(|p| p == 6 || p == 17) || o.has_ports(),
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => false,
        };
        let nets = |a: &[IpNet], b: &[IpNet]| {
            a.is_empty() || (!b.is_empty() && b.iter().all(|y| a.iter().any(|x| x.contains(y))))
        };
        let ports = |a: &[(u16, u16)], b: &[(u16, u16)]| {
            a.is_empty()
                || a.iter().any(|x| x.0 == 0 && x.1 == u16::MAX)
                || (!b.is_empty() && b.iter().all(|y| a.iter().any(|x| x.0 <= y.0 && y.1 <= x.1)))
        };
        dirs && proto
            && nets(&self.src, &o.src)
            && nets(&self.dst, &o.dst)
            && ports(&self.sport, &o.sport)
            && ports(&self.dport, &o.dport)
    }
}

/// A validated shaping policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// Link rate per direction ([`Dir::index`]); `None`: unlimited.
    pub link_bps: [Option<u64>; 2],
    pub classes: Vec<Class>,
    /// In evaluation order.
    pub rules: Vec<Rule>,
    pub default_class: Option<usize>,
    pub borrow_interval: Dur,
    pub flows: FlowTablePolicy,
    /// The runs of rules a per-host template's rule expanded into, as hash lookups by host:
    /// `classify` costs one lookup per run instead of a test per host.
    host_runs: Vec<HostRun>,
}

/// Rules `start..end` (consecutive in evaluation order, from one per-host rule): the rule for
/// each (direction, host block). Their hosts are disjoint, so at most one can match a packet in a
/// direction, and a lookup by the packet's host finds the first match among them.
#[derive(Clone, Debug, PartialEq)]
struct HostRun {
    start: usize,
    end: usize,
    /// The host blocks' prefix lengths (one per address family, normally).
    lens: Vec<u8>,
    map: std::collections::HashMap<(usize, IpNet), usize>,
}

impl Default for Policy {
    /// The empty policy (no classes: everything passes).
    fn default() -> Self {
        Policy::empty()
    }
}

/// Default bucket depth of `burst` and `cburst`.
pub const DEFAULT_BURST_BYTES: u64 = 3000;
/// Default leaf queue.
pub const DEFAULT_QUEUE: Size = Size::Packets(100);
/// HTB's rate-to-quantum divisor.
pub const R2Q: u64 = 10;

fn limit_of(s: Size) -> Limit {
    s.into()
}

impl Policy {
    /// The leaf classes (the ones packets are queued in).
    pub fn leaves(&self) -> impl Iterator<Item = &Class> + '_ {
        self.classes.iter().filter(|c| c.is_leaf())
    }

    /// Read a policy from any serde deserialiser (the format crate, `ackshape-format`, gives a
    /// file's TOML table) and validate it; `file` names it in errors, which name the dotted key.
    pub fn read<'de, D: Deserializer<'de>>(d: D, file: &str) -> Result<Policy, PolicyError> {
        let spec: PolicySpec = serde_path_to_error::deserialize(d).map_err(|e| {
            let path = e.path().to_string();
            let (key, msg) = table::key_and_message(path, e.into_inner().to_string());
            PolicyError { file: file.to_string(), key, msg }
        })?;
        Policy::from_spec(&spec, file)
    }

    /// Validate a parsed policy.
    pub fn from_spec(spec: &PolicySpec, file: &str) -> Result<Policy, PolicyError> {
        validate(spec).map_err(|(k, msg)| PolicyError { file: file.to_string(), key: Some(k), msg })
    }

    /// An empty policy: no classes, everything passes.
    pub fn empty() -> Policy {
        validate(&PolicySpec::default()).expect("the empty policy is valid")
    }

    /// The class for packet `pkt` travelling `dir` as data: the first matching rule's, else the
    /// default class, else none (the packet passes unshaped).
    #[inline]
    pub fn classify(&self, dir: Dir, pkt: &Packet) -> Option<usize> {
        if self.host_runs.is_empty() {
            return self.rules.iter().find(|r| r.matches(dir, pkt)).map(|r| r.class).or(self.default_class);
        }
        let (mut i, mut run) = (0, 0);
        while i < self.rules.len() {
            if let Some(h) = self.host_runs.get(run).filter(|h| h.start == i) {
                // The host is the LAN side: the source of outbound data, the destination of inbound.
                let host = if dir == Dir::AToB { pkt.ip.src } else { pkt.ip.dst };
                for &len in &h.lens {
                    let Ok(net) = IpNet::new(host, len) else { continue }; // the other family
                    if let Some(&r) = h.map.get(&(dir.index(), net.trunc())) {
                        if self.rules[r].matches(dir, pkt) {
                            return Some(self.rules[r].class);
                        }
                    }
                }
                i = h.end;
                run += 1;
                continue;
            }
            if self.rules[i].matches(dir, pkt) {
                return Some(self.rules[i].class);
            }
            i += 1;
        }
        self.default_class
    }

    /// Class index by name.
    pub fn class_index(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|c| c.name == name)
    }
}

/// At most this many per-host classes per policy (the gateway chooses among its leaf classes for
/// every packet it sends, and tries the rules in order for every new flow).
pub const MAX_HOST_CLASSES: usize = 4096;

/// The intersection of two prefixes (one contains the other, or they are disjoint).
fn net_meet(a: &IpNet, b: &IpNet) -> Option<IpNet> {
    if a.contains(b) {
        Some(*b)
    } else if b.contains(a) {
        Some(*a)
    } else {
        None
    }
}

/// Expand per-host templates (`per_host`): each template becomes one leaf class per block of
/// `host_prefix` bits in its subnets (`NAME/ADDR`), and each rule naming a template becomes, per
/// host and per data direction, a rule for that host's class that also matches the host — as the
/// source of outbound data, the destination of inbound data (hosts are on the LAN side). A rule's
/// own `src` (outbound) or `dst` (inbound) narrows the hosts it applies to. Returns the expanded
/// spec and, per class and per rule, its key in the file and its host.
#[allow(clippy::type_complexity)]
pub fn expand_hosts(
    spec: &PolicySpec,
) -> Result<(PolicySpec, Vec<String>, Vec<Option<(String, IpNet)>>, Vec<(String, Option<IpNet>)>), (String, String)> {
    let templates: Vec<(usize, &ClassSpec)> =
        spec.class.iter().enumerate().filter(|(_, c)| c.per_host.is_some() || c.host_prefix.is_some()).collect();
    if templates.is_empty() {
        return Ok((
            spec.clone(),
            (0..spec.class.len()).map(|i| format!("class[{i}]")).collect(),
            vec![None; spec.class.len()],
            (0..spec.rule.len()).map(|i| (format!("rule[{i}]"), None)).collect(),
        ));
    }
    let mut hosts_of = std::collections::HashMap::new();
    let mut total = 0usize;
    for &(i, c) in &templates {
        let Some(nets) = &c.per_host else {
            return Err((
                format!("class[{i}].host_prefix"),
                "applies to a per-host class: add `per_host = \"SUBNET\"`".into(),
            ));
        };
        let mut hosts: Vec<IpNet> = Vec::new();
        for n in &nets.0 {
            let full = if n.addr().is_ipv4() { 32 } else { 128 };
            let hp = c.host_prefix.unwrap_or(full);
            if hp > full || hp < n.prefix_len() {
                return Err((
                    format!("class[{i}].host_prefix"),
                    format!("expected a prefix length from {} (the subnet {n}) to {full}, got {hp}", n.prefix_len()),
                ));
            }
            let count = 1u128.checked_shl((hp - n.prefix_len()) as u32).unwrap_or(u128::MAX);
            if total as u128 + hosts.len() as u128 + count > MAX_HOST_CLASSES as u128 {
                return Err((
                    format!("class[{i}].per_host"),
                    format!(
                        "{n} in blocks of /{hp} is {count} hosts; a policy has at most {MAX_HOST_CLASSES} per-host classes"
                    ),
                ));
            }
            for h in n.subnets(hp).expect("hp is within the subnet's range") {
                if hosts.iter().any(|x| x.contains(&h) || h.contains(x)) {
                    return Err((format!("class[{i}].per_host"), format!("the subnets overlap at {h}")));
                }
                hosts.push(h);
            }
        }
        total += hosts.len();
        hosts_of.insert(c.name.as_str(), hosts);
    }
    let host_name = |t: &str, h: &IpNet| {
        let full = if h.addr().is_ipv4() { 32 } else { 128 };
        if h.prefix_len() == full {
            format!("{t}/{}", h.addr())
        } else {
            format!("{t}/{h}")
        }
    };
    let mut out = spec.clone();
    out.class.clear();
    out.rule.clear();
    let (mut ckeys, mut chosts, mut rkeys) = (Vec::new(), Vec::new(), Vec::new());
    for (i, c) in spec.class.iter().enumerate() {
        match hosts_of.get(c.name.as_str()) {
            None => {
                if let Some(p) = c.parent.as_deref().filter(|p| hosts_of.contains_key(p)) {
                    return Err((
                        format!("class[{i}].parent"),
                        format!("class {p:?} is a per-host template (its hosts' classes are leaves): it cannot have children"),
                    ));
                }
                out.class.push(c.clone());
                ckeys.push(format!("class[{i}]"));
                chosts.push(None);
            }
            Some(hosts) => {
                for h in hosts {
                    let mut x = c.clone();
                    x.name = host_name(&c.name, h);
                    x.per_host = None;
                    x.host_prefix = None;
                    out.class.push(x);
                    ckeys.push(format!("class[{i}]"));
                    chosts.push(Some((c.name.clone(), *h)));
                }
            }
        }
    }
    if let Some(d) = spec.default_class.as_deref().filter(|d| hosts_of.contains_key(d)) {
        return Err((
            "default_class".into(),
            format!("class {d:?} is a per-host template: name it in a rule (`[[rule]] class = {d:?}`), which sends each host's packets to its class"),
        ));
    }
    for (i, r) in spec.rule.iter().enumerate() {
        let Some(hosts) = hosts_of.get(r.class.as_str()) else {
            out.rule.push(r.clone());
            rkeys.push((format!("rule[{i}]"), None));
            continue;
        };
        let before = out.rule.len();
        for h in hosts {
            for d in r.direction.dirs() {
                let mut x = r.clone();
                x.class = host_name(&r.class, h);
                x.direction = if *d == Dir::AToB { RuleDir::Outbound } else { RuleDir::Inbound };
                // The host is the LAN side: the sender of outbound data, the receiver of inbound.
                let side = if *d == Dir::AToB { &mut x.src } else { &mut x.dst };
                let nets: Vec<IpNet> = match side {
                    None => vec![*h],
                    Some(own) => own.0.iter().filter_map(|n| net_meet(n, h)).collect(),
                };
                if nets.is_empty() {
                    continue;
                }
                *side = Some(Nets(nets));
                out.rule.push(x);
                rkeys.push((format!("rule[{i}]"), Some(*h)));
            }
        }
        if out.rule.len() == before {
            let side = if r.direction == RuleDir::Inbound { "dst" } else { "src" };
            return Err((
                format!("rule[{i}].{side}"),
                format!("matches none of the hosts of the per-host class {:?}", r.class),
            ));
        }
    }
    Ok((out, ckeys, chosts, rkeys))
}

fn validate(spec: &PolicySpec) -> Result<Policy, (String, String)> {
    let (expanded, ckey, chost, rkey) = expand_hosts(spec)?;
    let spec = &expanded;
    let link_bps = [spec.link.outbound.map(|r| r.0 .0), spec.link.inbound.map(|r| r.0 .0)];
    for (k, v) in [("link.outbound", link_bps[0]), ("link.inbound", link_bps[1])] {
        if v == Some(0) {
            return Err((k.into(), "expected a positive rate, got 0".into()));
        }
        if let Some(v) = v {
            check_rate_bounds(v).map_err(|m| (k.to_string(), m))?;
        }
    }
    spec.flows.validate().map_err(|(k, m)| (format!("flows.{k}"), m))?;
    let borrow_interval = spec.borrow_interval.map(|d| d.0).unwrap_or(Dur::from_millis(100));
    if borrow_interval == Dur::ZERO {
        return Err(("borrow_interval".into(), "expected a positive duration, got 0".into()));
    }

    // Classes: names, parents, cycles.
    let n = spec.class.len();
    let mut index = std::collections::HashMap::new();
    for (i, c) in spec.class.iter().enumerate() {
        if c.name.trim().is_empty() {
            return Err((format!("{}.name", ckey[i]), "expected a non-empty class name".into()));
        }
        if let Some(j) = index.insert(c.name.as_str(), i) {
            return Err((format!("{}.name", ckey[i]), format!("duplicate class name {:?} (also {})", c.name, ckey[j])));
        }
    }
    let names = || spec.class.iter().map(|c| format!("{:?}", c.name)).collect::<Vec<_>>().join(", ");
    let mut parent = vec![None; n];
    for (i, c) in spec.class.iter().enumerate() {
        if let Some(p) = &c.parent {
            match index.get(p.as_str()) {
                Some(&j) if j == i => {
                    return Err((format!("{}.parent", ckey[i]), format!("class {:?} cannot be its own parent", c.name)))
                }
                Some(&j) => parent[i] = Some(j),
                None => {
                    return Err((
                        format!("{}.parent", ckey[i]),
                        format!("expected the name of a class ({}), got {p:?}", names()),
                    ))
                }
            }
        }
    }
    let mut depth = vec![0usize; n];
    for i in 0..n {
        let (mut at, mut d) = (i, 0);
        while let Some(p) = parent[at] {
            d += 1;
            if d > n {
                let mut cyc = vec![spec.class[i].name.clone()];
                let mut x = parent[i].unwrap();
                while x != i && cyc.len() <= n {
                    cyc.push(spec.class[x].name.clone());
                    x = parent[x].unwrap();
                }
                cyc.push(spec.class[i].name.clone());
                return Err((format!("{}.parent", ckey[i]), format!("the parents form a cycle: {}", cyc.join(" → "))));
            }
            at = p;
        }
        depth[i] = d;
    }
    let mut children = vec![Vec::new(); n];
    for (i, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            children[p].push(i);
        }
    }

    // Rates, buckets, leaves.
    let mut classes = Vec::with_capacity(n);
    for (i, c) in spec.class.iter().enumerate() {
        let at = |k: &str| format!("{}.{k}", ckey[i]);
        let rate = c.rate.0 .0;
        if rate == 0 {
            return Err((at("rate"), "expected a positive rate, got 0".into()));
        }
        check_rate_bounds(rate).map_err(|m| (at("rate"), m))?;
        let ceil = c.ceil.map(|r| r.0 .0).unwrap_or(rate);
        check_rate_bounds(ceil).map_err(|m| (at("ceil"), m))?;
        if ceil < rate {
            return Err((at("ceil"), format!("ceiling {} is below rate {}", Rate(ceil), Rate(rate))));
        }
        if c.priority > 7 {
            return Err((at("priority"), format!("expected 0 (first) ..= 7, got {}", c.priority)));
        }
        let bytes = |v: Option<SizeV>, k: &str, dflt: u64| -> Result<u64, (String, String)> {
            match v.map(|s| s.0) {
                None => Ok(dflt),
                Some(Size::Bytes(b)) if b > MAX_BURST_BYTES => {
                    Err((at(k), format!("expected at most {MAX_BURST_BYTES}B (4 GiB), got {b}B")))
                }
                Some(Size::Bytes(b)) if b >= 64 => Ok(b),
                Some(Size::Bytes(b)) => Err((at(k), format!("expected at least 64B, got {b}B"))),
                Some(Size::Packets(_)) => Err((at(k), "expected a size in bytes like \"3000B\", not packets".into())),
            }
        };
        let burst_bytes = bytes(c.burst, "burst", DEFAULT_BURST_BYTES)?;
        let cburst_bytes = bytes(c.cburst, "cburst", burst_bytes)?;
        let quantum_bytes = bytes(c.quantum, "quantum", (rate / 8 / R2Q).clamp(1514, 200_000))?;
        let is_leaf = children[i].is_empty();
        let mechanism = match &c.mechanism {
            None => None,
            Some(t) => {
                let kind = match t.get("kind") {
                    Some(Value::String(k)) => k.clone(),
                    Some(v) => {
                        return Err((
                            at("mechanism.kind"),
                            format!("expected one of {}, got {}", ackmech::KINDS.join(", "), table::show(v)),
                        ))
                    }
                    None => {
                        return Err((
                            at("mechanism.kind"),
                            format!("expected one of {} (the key is missing)", ackmech::KINDS.join(", ")),
                        ))
                    }
                };
                let mut settings = t.clone();
                settings.remove("kind");
                crate::shape::mechanism::build(&kind, &settings)
                    .map_err(|(k, m)| (at(&format!("mechanism.{k}")), m))?;
                if kind == "none" {
                    None
                } else {
                    if !is_leaf {
                        return Err((
                            at("mechanism"),
                            format!(
                                "class {:?} has child classes; only leaf classes carry flows and a mechanism",
                                c.name
                            ),
                        ));
                    }
                    Some((kind, settings))
                }
            }
        };
        if !is_leaf && (c.qdisc.is_some() || c.queue.is_some()) {
            let k = if c.qdisc.is_some() { "qdisc" } else { "queue" };
            return Err((at(k), format!("class {:?} has child classes; only leaf classes hold packets", c.name)));
        }
        let leaf = if is_leaf { Some(leaf_spec(c, rate, &at)?) } else { None };
        if matches!(c.queue.map(|q| q.0), Some(Size::Packets(0) | Size::Bytes(0))) {
            return Err((at("queue"), "expected room for at least one packet, got 0".into()));
        }
        match c.queue.map(|q| q.0) {
            Some(Size::Packets(p)) if p > MAX_QUEUE_PACKETS => {
                return Err((at("queue"), format!("expected at most {MAX_QUEUE_PACKETS}pkt, got {p}pkt")))
            }
            Some(Size::Bytes(b)) if b > MAX_QUEUE_BYTES => {
                return Err((at("queue"), format!("expected at most {MAX_QUEUE_BYTES}B (4 GiB), got {b}B")))
            }
            _ => {}
        }
        classes.push(Class {
            name: c.name.clone(),
            parent: parent[i],
            children: children[i].clone(),
            depth: depth[i],
            rate_bps: rate,
            ceil_bps: ceil,
            priority: c.priority,
            burst_bytes,
            cburst_bytes,
            quantum_bytes,
            leaf,
            mechanism,
            dirs: [false; 2],
            key: ckey[i].clone(),
            host: chost[i].clone(),
        });
    }

    // Rules.
    let leaf_class = |name: &str, key: String| -> Result<usize, (String, String)> {
        match index.get(name) {
            None => Err((key, format!("expected the name of a class ({}), got {name:?}", names()))),
            Some(&j) if !classes[j].is_leaf() => Err((
                key,
                format!("class {name:?} has child classes; rules must name a leaf class (only leaves hold packets)"),
            )),
            Some(&j) => Ok(j),
        }
    };
    let with_order = spec.rule.iter().filter(|r| r.order.is_some()).count();
    let mut rules = Vec::with_capacity(spec.rule.len());
    for (i, r) in spec.rule.iter().enumerate() {
        let at = |k: &str| format!("{}.{k}", rkey[i].0);
        if with_order > 0 && r.order.is_none() {
            return Err((
                at("order"),
                format!(
                    "{with_order} other rule(s) have an `order`: give every rule one (evaluated by ascending order) or none (file order)"
                ),
            ));
        }
        let class = leaf_class(&r.class, at("class"))?;
        let (sport, dport) =
            (r.sport.clone().map(|p| p.0).unwrap_or_default(), r.dport.clone().map(|p| p.0).unwrap_or_default());
        let proto = r.proto.map(|p| p.0);
        if (!sport.is_empty() || !dport.is_empty()) && proto.is_some_and(|p| p != 6 && p != 17) {
            return Err((at("proto"), "ports match only \"tcp\" or \"udp\"".into()));
        }
        rules.push(Rule {
            index: i,
            key: rkey[i].0.clone(),
            host: rkey[i].1,
            order: r.order.unwrap_or(i as i64),
            class,
            direction: r.direction,
            src: r.src.clone().map(|n| n.0).unwrap_or_default(),
            dst: r.dst.clone().map(|n| n.0).unwrap_or_default(),
            sport,
            dport,
            proto,
        });
    }
    rules.sort_by_key(|r| (r.order, r.index));
    check_rule_order(&rules, with_order > 0)?;
    let default_class = match &spec.default_class {
        None => None,
        Some(name) => Some(leaf_class(name, "default_class".into())?),
    };

    // Directions each class carries data in (for the link-rate checks and the reports).
    let mark = |leaf: usize, dirs: &[Dir], classes: &mut Vec<Class>| {
        for d in dirs {
            let mut at = Some(leaf);
            while let Some(c) = at {
                classes[c].dirs[d.index()] = true;
                at = classes[c].parent;
            }
        }
    };
    for r in &rules {
        mark(r.class, r.direction.dirs(), &mut classes);
    }
    if let Some(d) = default_class {
        mark(d, RuleDir::Both.dirs(), &mut classes);
    }

    // Assured rates fit their parent's (and the link's, per direction).
    for c in classes.iter() {
        if c.children.is_empty() {
            continue;
        }
        let sum: u64 = c.children.iter().map(|&k| classes[k].rate_bps).sum();
        if sum > c.rate_bps {
            let kids = rate_terms(&classes, &c.children);
            return Err((
                c.key.clone() + ".rate",
                format!(
                    "the child classes' rates sum to {} ({}), above this class's rate {}",
                    Rate(sum),
                    kids.join(" + "),
                    Rate(c.rate_bps)
                ),
            ));
        }
    }
    for d in [Dir::AToB, Dir::BToA] {
        let Some(link) = link_bps[d.index()] else { continue };
        let top: Vec<usize> = (0..n).filter(|&i| classes[i].parent.is_none() && classes[i].dirs[d.index()]).collect();
        let sum: u64 = top.iter().map(|&i| classes[i].rate_bps).sum();
        if sum > link {
            let key = if d == Dir::AToB { "link.outbound" } else { "link.inbound" };
            let kids = rate_terms(&classes, &top);
            return Err((
                key.into(),
                format!(
                    "the top-level classes carrying {} traffic have rates summing to {} ({}), above the link rate {}",
                    if d == Dir::AToB { "outbound" } else { "inbound" },
                    Rate(sum),
                    kids.join(" + "),
                    Rate(link)
                ),
            ));
        }
    }
    // Runs of per-host rules (consecutive, from one rule of the file) become lookups.
    let mut host_runs = Vec::new();
    let mut i = 0;
    while i < rules.len() {
        let Some(_) = rules[i].host else {
            i += 1;
            continue;
        };
        let mut j = i;
        let mut run = HostRun { start: i, end: i, lens: Vec::new(), map: Default::default() };
        while j < rules.len() && rules[j].key == rules[i].key {
            let Some(h) = rules[j].host else { break };
            let d = if rules[j].direction == RuleDir::Inbound { Dir::BToA } else { Dir::AToB };
            run.map.insert((d.index(), h), j);
            if !run.lens.contains(&h.prefix_len()) {
                run.lens.push(h.prefix_len());
            }
            j += 1;
        }
        run.end = j;
        host_runs.push(run);
        i = j;
    }
    Ok(Policy { link_bps, classes, rules, default_class, borrow_interval, flows: spec.flows.clone(), host_runs })
}

/// The slowest rate a class or link may have: below it a single 1500-byte packet takes more
/// than 12 s to send, which no shaping policy means.
pub const MIN_RATE_BPS: u64 = 1_000;
/// The fastest (10 000 Gbit/s).
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// The deepest `burst` / `cburst` bucket.
pub const MAX_BURST_BYTES: u64 = 1 << 32;
/// The longest leaf queue in packets (about 1.5 GB of full-size frames).
pub const MAX_QUEUE_PACKETS: u64 = 1_000_000;
/// The longest leaf queue in bytes.
pub const MAX_QUEUE_BYTES: u64 = 1 << 32;

fn check_rate_bounds(bps: u64) -> Result<(), String> {
    if bps < MIN_RATE_BPS {
        Err(format!("expected at least 1kbit/s, got {}", Rate(bps)))
    } else if bps > MAX_RATE_BPS {
        Err(format!("expected at most 10000Gbit/s, got {}", Rate(bps)))
    } else {
        Ok(())
    }
}

/// At most this many rules may share one `order` value (rules with equal orders are checked
/// pairwise for overlap, so the check stays linear in the number of rules).
pub const MAX_SAME_ORDER: usize = 256;

/// A rule's port constraint, as a key of [`CoverIndex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum PortKey {
    /// No constraint (or the full range 0-65535).
    Any,
    /// Exactly one port.
    One(u16),
    /// Anything else (ranges, lists).
    Other,
}

fn port_key(r: &[(u16, u16)]) -> PortKey {
    if r.is_empty() || r.iter().any(|x| x.0 == 0 && x.1 == u16::MAX) {
        PortKey::Any
    } else if r.iter().all(|x| x.0 == x.1 && x.0 == r[0].0) {
        PortKey::One(r[0].0)
    } else {
        PortKey::Other
    }
}

/// The port keys a rule that covers ports `r` can have (see [`Rule::covers`]).
fn covering_port_keys(r: &[(u16, u16)]) -> impl Iterator<Item = PortKey> {
    let one = match r.first() {
        Some(&(a, b)) if a == b => Some(PortKey::One(a)),
        _ => None,
    };
    let nonempty = !r.is_empty();
    [Some(PortKey::Any), nonempty.then_some(PortKey::Other), one].into_iter().flatten()
}

/// `(src, dst, sport, dport)`; a net `None` is "any".
type CoverKey = (Option<IpNet>, Option<IpNet>, PortKey, PortKey);

/// Earlier rules indexed by their match fields, so finding the earlier rules that may cover a
/// rule costs a few hash lookups instead of a test against every earlier rule: a rule that
/// covers another has, in each address field, no constraint or a prefix containing the other's
/// first prefix, and, in each port field, no constraint, a range or exactly the other's first
/// port. Prefixes are looked up at the prefix lengths earlier rules use (tuple space search,
/// Srinivasan, Suri & Varghese, SIGCOMM 1999); the candidates found are tested with
/// [`Rule::covers`].
#[derive(Default)]
struct CoverIndex {
    map: std::collections::HashMap<CoverKey, Vec<usize>>,
    /// Distinct `(src, dst)` prefix lengths of the indexed rules: `(is_v4, len)`, None for any.
    shapes: Vec<(Option<(bool, u8)>, Option<(bool, u8)>)>,
    shape_set: std::collections::HashSet<(Option<(bool, u8)>, Option<(bool, u8)>)>,
    /// Rules with too many address combinations to index: tried against every later rule.
    unindexed: Vec<usize>,
}

/// A rule with more (src × dst) prefix combinations than this is not indexed.
const MAX_INDEX_COMBOS: usize = 64;

impl CoverIndex {
    fn insert(&mut self, i: usize, r: &Rule) {
        let nets = |v: &[IpNet]| -> Vec<Option<IpNet>> {
            if v.is_empty() {
                vec![None]
            } else {
                v.iter().map(|n| Some(*n)).collect()
            }
        };
        let (srcs, dsts) = (nets(&r.src), nets(&r.dst));
        if srcs.len() * dsts.len() > MAX_INDEX_COMBOS {
            self.unindexed.push(i);
            return;
        }
        let (sp, dp) = (port_key(&r.sport), port_key(&r.dport));
        let shape = |n: &Option<IpNet>| n.map(|n| (n.addr().is_ipv4(), n.prefix_len()));
        for s in &srcs {
            for d in &dsts {
                let v = self.map.entry((*s, *d, sp, dp)).or_default();
                if v.last() != Some(&i) {
                    v.push(i);
                }
                let sh = (shape(s), shape(d));
                if self.shape_set.insert(sh) {
                    self.shapes.push(sh);
                }
            }
        }
    }

    /// Indexed rules that may cover `r` (each at least once; some that do not).
    fn candidates<'a>(&'a self, r: &'a Rule, out: &mut Vec<usize>) {
        out.clear();
        out.extend_from_slice(&self.unindexed);
        // The key a covering rule has in an address field of shape `sh`, if any.
        let key = |sh: Option<(bool, u8)>, v: &[IpNet]| -> Option<Option<IpNet>> {
            match (sh, v.first()) {
                (None, _) => Some(None),
                (Some(_), None) => None,
                (Some((v4, len)), Some(n)) => {
                    if n.addr().is_ipv4() != v4 || len > n.prefix_len() {
                        return None;
                    }
                    IpNet::new(n.addr(), len).ok().map(|x| Some(x.trunc()))
                }
            }
        };
        for &(ss, ds) in &self.shapes {
            let (Some(s), Some(d)) = (key(ss, &r.src), key(ds, &r.dst)) else { continue };
            for sp in covering_port_keys(&r.sport) {
                for dp in covering_port_keys(&r.dport) {
                    if let Some(v) = self.map.get(&(s, d, sp, dp)) {
                        out.extend_from_slice(v);
                    }
                }
            }
        }
    }
}

/// The first problem of rule `b` against the rules tried before it, as the error to report:
/// an equal `order` that can match the same packets, or a rule that covers it.
fn rule_conflict(rules: &[Rule], b: usize, ordered: bool) -> Option<(String, String)> {
    let rb = &rules[b];
    for ra in &rules[..b] {
        if ra.order == rb.order && ordered && ra.overlaps(rb) {
            return Some((
                format!("{}.order", rb.key),
                format!(
                    "{} and {} both have order {} and can match the same packets: give them different orders",
                    ra.key, rb.key, rb.order
                ),
            ));
        }
        if ra.covers(rb) {
            return Some((
                rb.key.clone(),
                format!("never matches: {}, tried first, matches every packet it does", ra.key),
            ));
        }
    }
    None
}

/// Rules (in evaluation order) are never shadowed by an earlier one, and rules with equal
/// explicit orders never overlap. Linear in the number of rules for usual policies (the earlier
/// rules that could cover a rule are found through a [`CoverIndex`]; rules sharing an order,
/// at most [`MAX_SAME_ORDER`], are compared pairwise); the error is the one the rule-by-rule
/// comparison reports first.
fn check_rule_order(rules: &[Rule], ordered: bool) -> Result<(), (String, String)> {
    let mut index = CoverIndex::default();
    let mut cand = Vec::new();
    let mut group_start = 0;
    for (b, rb) in rules.iter().enumerate() {
        if rules[group_start].order != rb.order {
            group_start = b;
        }
        let mut bad = false;
        if ordered {
            if b - group_start >= MAX_SAME_ORDER {
                return Err((
                    format!("{}.order", rb.key),
                    format!("more than {MAX_SAME_ORDER} rules have order {}: give them distinct orders", rb.order),
                ));
            }
            bad = rules[group_start..b].iter().any(|ra| ra.overlaps(rb));
        }
        if !bad {
            index.candidates(rb, &mut cand);
            bad = cand.iter().any(|&a| rules[a].covers(rb));
        }
        if bad {
            // Report what the pairwise comparison reports (the first offending earlier rule).
            if let Some(e) = rule_conflict(rules, b, ordered) {
                return Err(e);
            }
        }
        index.insert(b, rb);
    }
    Ok(())
}

/// The terms of a sum of rates for an error message: `a 2Mbit/s`, and the per-host classes of a
/// template as one term, `254 × home/… 1Mbit/s`.
fn rate_terms(classes: &[Class], of: &[usize]) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &k in of {
        let c = &classes[k];
        match &c.host {
            None => terms.push(format!("{} {}", c.name, Rate(c.rate_bps))),
            Some((t, _)) if seen.insert(t.as_str()) => {
                let n = of.iter().filter(|&&j| classes[j].host.as_ref().is_some_and(|(x, _)| x == t)).count();
                terms.push(format!("{n} × {t}/… {}", Rate(c.rate_bps)));
            }
            Some(_) => {}
        }
    }
    terms
}

/// `pfq-drr`'s own keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PfqDrrV {
    quantum_bytes: Option<u32>,
    flow_limit_pkts: Option<usize>,
    limit_pkts: Option<usize>,
}

/// Default PCDQ of `pfq-drr`: one packet, so the per-flow queues hold the backlog and the PCDQ
/// just stays backlogged (P0-A5).
pub const DEFAULT_PFQ_DRR_PCDQ: Size = Size::Packets(1);

fn leaf_spec(c: &ClassSpec, rate: u64, at: &dyn Fn(&str) -> String) -> Result<LeafSpec, (String, String)> {
    let queue = c.queue.map(|q| q.0).unwrap_or(DEFAULT_QUEUE);
    let Some(t) = &c.qdisc else {
        return Ok(LeafSpec::Fifo(limit_of(queue)));
    };
    let kind = t.get("kind").and_then(table::as_str).unwrap_or("");
    let mut t = t.clone();
    if kind == "pfq-drr" {
        t.remove("kind");
        let v: PfqDrrV = table::read_keyed(t).map_err(|(k, m)| (at(&format!("qdisc.{}", k.unwrap_or_default())), m))?;
        let d = DrrConfig::default();
        let drr = DrrConfig {
            quantum_bytes: v.quantum_bytes.unwrap_or(d.quantum_bytes),
            flow_limit_pkts: v.flow_limit_pkts.unwrap_or(d.flow_limit_pkts),
            limit_pkts: v.limit_pkts.unwrap_or(d.limit_pkts),
        };
        drr.validate().map_err(|m| (at("qdisc"), m))?;
        return Ok(LeafSpec::PfqDrr { pcdq: limit_of(c.queue.map(|q| q.0).unwrap_or(DEFAULT_PFQ_DRR_PCDQ)), drr });
    }
    if c.queue.is_some() {
        return Err((
            at("queue"),
            format!(
                "`queue` sizes the default FIFO and pfq-drr's PCDQ; the {kind:?} discipline has its own limit keys"
            ),
        ));
    }
    if kind == "tbf" {
        return Err((
            at("qdisc.kind"),
            "a class is already a token bucket (rate, ceil, burst); use those keys instead of \"tbf\"".into(),
        ));
    }
    // Per-flow token buckets share the class rate unless told otherwise.
    if kind == "pfq" && !t.contains_key("rate") {
        t.insert("rate".into(), Value::String(format!("{rate}bit/s")));
    }
    let q: QdiscSpec = table::read_keyed(t).map_err(|(k, m)| {
        // A class takes its own set of kinds.
        let m = m.replace(crate::shape::qdisc_spec::KINDS, crate::shape::qdisc_spec::POLICY_KINDS);
        (
            at(&match k {
                Some(k) => format!("qdisc.{k}"),
                None => "qdisc".into(),
            }),
            m,
        )
    })?;
    q.validate().map_err(|m| (at("qdisc"), m))?;
    Ok(LeafSpec::Qdisc(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A policy file's text read as the format crate reads it (a TOML table).
    pub(crate) fn parse(text: &str, file: &str) -> Result<Policy, PolicyError> {
        Policy::read(text.parse::<toml::Value>().expect("TOML"), file)
    }

    fn err(text: &str) -> String {
        parse(text, "policy.toml").expect_err(text).to_string()
    }

    const TWO: &str = r#"
[link]
outbound = "10Mbit/s"
[[class]]
name = "bulk"
rate = "2Mbit/s"
ceil = "10Mbit/s"
[[class]]
name = "web"
rate = "8Mbit/s"
[[rule]]
class = "web"
dport = [80, 443]
proto = "tcp"
[[rule]]
class = "bulk"
"#;

    /// The core reads no file format: the same policy given as JSON (any serde format) is the
    /// same policy, with the same error keys.
    #[test]
    fn any_serde_format_gives_the_same_policy() {
        let json = serde_json::json!({
            "link": { "outbound": "10Mbit/s" },
            "class": [
                { "name": "bulk", "rate": "2Mbit/s", "ceil": "10Mbit/s",
                  "mechanism": { "kind": "tcr" }, "qdisc": { "kind": "red", "min_th": 5 } },
                { "name": "web", "rate": "8Mbit/s" },
            ],
            "rule": [ { "class": "web", "dport": [80, 443], "proto": "tcp" }, { "class": "bulk" } ],
        });
        let toml = TWO.replacen(
            "ceil = \"10Mbit/s\"\n",
            "ceil = \"10Mbit/s\"\nmechanism = { kind = \"tcr\" }\nqdisc = { kind = \"red\", min_th = 5 }\n",
            1,
        );
        let from_json = Policy::read(json, "p.json").unwrap();
        assert_eq!(from_json, parse(&toml, "p.json").unwrap());
        assert_eq!(from_json.classes[0].mechanism.as_ref().map(|m| m.0.as_str()), Some("tcr"));
        let bad = serde_json::json!({ "class": [ { "name": "a", "rate": "1Mbit/s", "qdisc": { "kind": "red", "min_th": "x" } } ] });
        let e = Policy::read(bad, "p.json").unwrap_err();
        let t =
            parse("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nqdisc = { kind = \"red\", min_th = \"x\" }", "p.json");
        assert_eq!(e, t.unwrap_err());
        assert!(
            e.key.as_deref().is_some_and(|k| k.starts_with("class[0].qdisc")) && e.msg.contains("invalid type"),
            "{e}"
        );
    }

    #[test]
    fn parses_a_two_class_policy() {
        let p = parse(TWO, "p.toml").unwrap();
        assert_eq!(p.classes.len(), 2);
        assert_eq!(p.classes[0].ceil_bps, 10_000_000);
        assert_eq!(p.classes[1].ceil_bps, 8_000_000, "ceil defaults to rate");
        assert_eq!(p.link_bps, [Some(10_000_000), None]);
        assert_eq!(p.rules[0].dport, vec![(80, 80), (443, 443)]);
        assert_eq!(p.classes[0].dirs, [true, false]);
        assert!(matches!(p.classes[0].leaf, Some(LeafSpec::Fifo(Limit::Packets(100)))));
    }

    #[test]
    fn classifies_first_match_and_default() {
        use ackshape_wire::{Ecn, IpHdr, TcpHdr, UdpHdr};
        let pk = |src: &str, dst: &str, l4: L4| Packet {
            ip: IpHdr {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                ttl: 64,
                dscp: 0,
                ecn: Ecn::NotEct,
                id: 0,
            },
            l4,
            payload_len: 100,
            payload: None,
        };
        let tcp = |s, d| L4::Tcp(TcpHdr { sport: s, dport: d, ..Default::default() });
        let p = parse(
            r#"
default_class = "other"
[[class]]
name = "lan6"
rate = "1Mbit/s"
[[class]]
name = "dns"
rate = "1Mbit/s"
[[class]]
name = "down"
rate = "1Mbit/s"
[[class]]
name = "other"
rate = "1Mbit/s"
[[rule]]
class = "dns"
proto = "udp"
dport = 53
[[rule]]
class = "lan6"
src = "2001:db8::/32"
[[rule]]
class = "down"
direction = "inbound"
sport = "1000-2000"
"#,
            "p.toml",
        )
        .unwrap();
        let c = |d, pkt: &Packet| p.classes[p.classify(d, pkt).unwrap()].name.clone();
        assert_eq!(c(Dir::AToB, &pk("10.0.0.1", "1.1.1.1", L4::Udp(UdpHdr { sport: 5, dport: 53 }))), "dns");
        assert_eq!(c(Dir::AToB, &pk("10.0.0.1", "1.1.1.1", tcp(5, 53))), "other", "dns rule is UDP only");
        assert_eq!(c(Dir::AToB, &pk("2001:db8::1", "2001:db9::1", tcp(5, 80))), "lan6");
        assert_eq!(c(Dir::BToA, &pk("2001:db8::1", "2001:db9::1", tcp(5, 80))), "other", "outbound rule");
        assert_eq!(c(Dir::BToA, &pk("9.9.9.9", "10.0.0.1", tcp(1500, 80))), "down");
        assert_eq!(c(Dir::BToA, &pk("9.9.9.9", "10.0.0.1", tcp(2001, 80))), "other");
        assert_eq!(c(Dir::AToB, &pk("10.0.0.1", "1.1.1.1", L4::Other { proto: 1 })), "other");
    }

    #[test]
    fn ceiling_below_rate() {
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"b\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"c\"\nrate = \"2Mbit/s\"\nceil = \"1Mbit/s\"\n");
        assert_eq!(e, "policy.toml: key `class[2].ceil`: ceiling 1Mbit/s is below rate 2Mbit/s");
    }

    #[test]
    fn rate_without_unit() {
        let e = err("[[class]]\nname = \"a\"\nrate = 2000000\n");
        assert!(e.starts_with("policy.toml: key `class[0].rate`: expected a string with a unit"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nrate = \"2000000\"\n");
        assert!(e.contains("`class[0].rate`") && e.contains("unit"), "{e}");
    }

    #[test]
    fn unknown_mechanism() {
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nmechanism = { kind = \"magic\" }\n");
        assert!(e.contains("key `class[0].mechanism.kind`") && e.contains("none") && e.contains("magic"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nmechanism = { kind = \"none\", x = 1 }\n");
        assert!(e.contains("key `class[0].mechanism.x`"), "{e}");
    }

    #[test]
    fn unknown_parent_and_cycles() {
        let e = err("[[class]]\nname = \"a\"\nparent = \"root\"\nrate = \"1Mbit/s\"\n");
        assert!(e.contains("key `class[0].parent`") && e.contains("\"root\""), "{e}");
        let e = err("[[class]]\nname = \"a\"\nparent = \"b\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"b\"\nparent = \"a\"\nrate = \"1Mbit/s\"\n");
        assert!(e.contains("key `class[0].parent`") && e.contains("cycle: a → b → a"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nparent = \"a\"\nrate = \"1Mbit/s\"\n");
        assert!(e.contains("own parent"), "{e}");
    }

    #[test]
    fn children_above_parent() {
        let e = err(
            "[[class]]\nname = \"p\"\nrate = \"3Mbit/s\"\n[[class]]\nname = \"a\"\nparent = \"p\"\nrate = \"2Mbit/s\"\n[[class]]\nname = \"b\"\nparent = \"p\"\nrate = \"2Mbit/s\"\n",
        );
        assert!(
            e.contains("key `class[0].rate`") && e.contains("4Mbit/s") && e.contains("a 2Mbit/s + b 2Mbit/s"),
            "{e}"
        );
        // Top-level classes against the link rate of the direction they carry.
        let e = err(
            "[link]\noutbound = \"1Mbit/s\"\n[[class]]\nname = \"a\"\nrate = \"2Mbit/s\"\n[[rule]]\nclass = \"a\"\n",
        );
        assert!(e.contains("key `link.outbound`") && e.contains("above the link rate 1Mbit/s"), "{e}");
        // The same class used only inbound does not count against the outbound link.
        parse("[link]\noutbound = \"1Mbit/s\"\n[[class]]\nname = \"a\"\nrate = \"2Mbit/s\"\n[[rule]]\nclass = \"a\"\ndirection = \"inbound\"\n", "p").unwrap();
    }

    #[test]
    fn overlapping_rules_and_order() {
        let classes = "[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"b\"\nrate = \"1Mbit/s\"\n";
        // Equal explicit orders that can match the same packet.
        let e = err(&format!("{classes}[[rule]]\nclass = \"a\"\norder = 1\ndst = \"10.0.0.0/8\"\n[[rule]]\nclass = \"b\"\norder = 1\ndst = \"10.1.0.0/16\"\n"));
        assert!(e.contains("key `rule[1].order`") && e.contains("same packets"), "{e}");
        // Equal orders that cannot overlap are fine; different orders decide.
        parse(&format!("{classes}[[rule]]\nclass = \"a\"\norder = 1\ndst = \"10.0.0.0/8\"\n[[rule]]\nclass = \"b\"\norder = 1\ndst = \"11.0.0.0/8\"\n"), "p").unwrap();
        let p = parse(&format!("{classes}[[rule]]\nclass = \"a\"\norder = 2\ndst = \"10.0.0.0/8\"\n[[rule]]\nclass = \"b\"\norder = 1\ndst = \"10.1.0.0/16\"\n"), "p").unwrap();
        assert_eq!(p.rules[0].index, 1, "ascending order");
        // Mixed: some with order, some without.
        let e = err(&format!(
            "{classes}[[rule]]\nclass = \"a\"\norder = 1\n[[rule]]\nclass = \"b\"\ndst = \"10.0.0.0/8\"\n"
        ));
        assert!(e.contains("key `rule[1].order`") && e.contains("every rule"), "{e}");
        // Shadowed rule.
        let e = err(&format!("{classes}[[rule]]\nclass = \"a\"\ndst = \"10.0.0.0/8\"\n[[rule]]\nclass = \"b\"\ndst = \"10.1.0.0/16\"\ndport = 80\n"));
        assert!(e.contains("key `rule[1]`") && e.contains("never matches"), "{e}");
        // Rules naming an unknown or an inner class.
        let e = err(&format!("{classes}[[rule]]\nclass = \"c\"\n"));
        assert!(e.contains("key `rule[0].class`"), "{e}");
        let e = err("[[class]]\nname = \"p\"\nrate = \"2Mbit/s\"\n[[class]]\nname = \"a\"\nparent = \"p\"\nrate = \"1Mbit/s\"\n[[rule]]\nclass = \"p\"\n");
        assert!(e.contains("key `rule[0].class`") && e.contains("leaf"), "{e}");
    }

    #[test]
    fn bad_match_values() {
        let c = "[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n";
        let e = err(&format!("{c}[[rule]]\nclass = \"a\"\ndst = \"10.0.0.300/8\"\n"));
        assert!(e.contains("key `rule[0].dst`") && e.contains("10.0.0.300/8"), "{e}");
        let e = err(&format!("{c}[[rule]]\nclass = \"a\"\ndport = \"90-80\"\n"));
        assert!(e.contains("key `rule[0].dport`") && e.contains("low ≤ high"), "{e}");
        let e = err(&format!("{c}[[rule]]\nclass = \"a\"\nproto = \"sctp\"\n"));
        assert!(e.contains("key `rule[0].proto`"), "{e}");
        let e = err(&format!("{c}[[rule]]\nclass = \"a\"\nproto = \"icmp\"\ndport = 1\n"));
        assert!(e.contains("key `rule[0].proto`"), "{e}");
        let e = err(&format!("{c}[[rule]]\nclass = \"a\"\ndirection = \"sideways\"\n"));
        assert!(e.contains("key `rule[0].direction`"), "{e}");
        let e = err(&format!("{c}[[rule]]\nclass = \"a\"\ncolour = \"red\"\n"));
        assert!(e.contains("key `rule[0].colour`"), "{e}");
    }

    #[test]
    fn leaf_disciplines() {
        let p = parse(
            "[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nqueue = \"4pkt\"\nqdisc = { kind = \"pfq-drr\", quantum_bytes = 1600 }\n[[class]]\nname = \"b\"\nrate = \"1Mbit/s\"\nqdisc = { kind = \"pfq\" }\n[[class]]\nname = \"c\"\nrate = \"1Mbit/s\"\nqdisc = { kind = \"red\", ecn = true }\n[[class]]\nname = \"d\"\nrate = \"1Mbit/s\"\nqdisc = { kind = \"afvq\" }\n",
            "p",
        )
        .unwrap();
        assert!(
            matches!(&p.classes[0].leaf, Some(LeafSpec::PfqDrr { pcdq: Limit::Packets(4), drr }) if drr.quantum_bytes == 1600)
        );
        assert!(matches!(&p.classes[1].leaf, Some(LeafSpec::Qdisc(QdiscSpec::Pfq(c))) if c.rate_bps == 1_000_000));
        assert!(matches!(&p.classes[2].leaf, Some(LeafSpec::Qdisc(QdiscSpec::Red(c))) if c.ecn));
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nqueue = \"4pkt\"\nqdisc = { kind = \"red\" }\n");
        assert!(e.contains("key `class[0].queue`"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nqdisc = { kind = \"tbf\", rate = \"1Mbit/s\" }\n");
        assert!(e.contains("key `class[0].qdisc.kind`"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nqdisc = { kind = \"pfq-drr\", quantum = 5 }\n");
        assert!(e.contains("key `class[0].qdisc.quantum`"), "{e}");
        let e = err("[[class]]\nname = \"p\"\nrate = \"2Mbit/s\"\nqueue = \"5pkt\"\n[[class]]\nname = \"a\"\nparent = \"p\"\nrate = \"1Mbit/s\"\n");
        assert!(e.contains("key `class[0].queue`") && e.contains("leaf"), "{e}");
    }

    #[test]
    fn misc_errors() {
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n");
        assert!(e.contains("key `class[1].name`") && e.contains("duplicate"), "{e}");
        let e = err("default_class = \"zz\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n");
        assert!(e.contains("key `default_class`"), "{e}");
        let e = err("[flows]\nmax_flows = 0\n");
        assert!(e.contains("key `flows.max_flows`"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\npriority = 9\n");
        assert!(e.contains("key `class[0].priority`"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nbogus = 1\n");
        assert!(e.contains("key `class[0].bogus`"), "{e}");
        for (key, v, want) in [
            ("queue", "\"100000000pkt\"", "expected at most 1000000pkt, got 100000000pkt"),
            ("queue", "\"100GB\"", "expected at most 4294967296B"),
            ("burst", "\"1000000000000000B\"", "expected at most 4294967296B (4 GiB), got 1000000000000000B"),
            ("cburst", "\"1000000000000000B\"", "expected at most 4294967296B"),
            ("rate", "\"1bit/s\"", "expected at least 1kbit/s, got 1bit/s"),
            ("ceil", "\"100000Gbit/s\"", "expected at most 10000Gbit/s"),
        ] {
            let e = err(&format!("[[class]]\nname = \"a\"\nrate = \"1kbit/s\"\n{key} = {v}\n")
                .replace("rate = \"1kbit/s\"\nrate", "rate"));
            assert!(e.starts_with("policy.toml: key `class[0].") && e.contains(key) && e.contains(want), "{key}: {e}");
        }
        let e = err("[link]\ninbound = \"999bit/s\"\n");
        assert!(e.contains("key `link.inbound`") && e.contains("at least 1kbit/s"), "{e}");
        let e = err("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nburst = \"2pkt\"\n");
        assert!(e.contains("key `class[0].burst`"), "{e}");
        let e = err("[[class]]\nname = \"a\"\n");
        assert!(e.contains("class[0]") && e.contains("rate"), "{e}");
    }

    const HOSTS: &str = include_str!("../../tests/data/per-host-policy.toml");

    #[test]
    fn per_host_templates_expand_into_a_class_and_rules_per_host() {
        use ackshape_wire::{Ecn, IpHdr, TcpHdr};
        let p = parse(HOSTS, "p.toml").unwrap();
        let names: Vec<&str> = p.classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "subs",
                "home/10.1.0.0",
                "home/10.1.0.1",
                "home/10.1.0.2",
                "home/10.1.0.3",
                "home/10.1.0.8",
                "home/10.1.0.9",
                "other"
            ]
        );
        for c in &p.classes[1..7] {
            assert_eq!(
                (c.rate_bps, c.ceil_bps, c.parent, c.key.as_str()),
                (10_000_000, 50_000_000, Some(0), "class[1]")
            );
            assert_eq!(c.mechanism.as_ref().map(|m| m.0.as_str()), Some("tcr"));
            assert_eq!(c.dirs, [true, true]);
        }
        assert_eq!(p.classes[0].children, (1..7).collect::<Vec<_>>());
        // rule[0], then rule[1] as two rules per host: outbound from it, inbound to it.
        assert_eq!(p.rules.len(), 1 + 12);
        assert!(p.rules[1..].iter().all(|r| r.key == "rule[1]"));
        let pk = |src: &str, dst: &str| Packet {
            ip: IpHdr {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                ttl: 64,
                dscp: 0,
                ecn: Ecn::NotEct,
                id: 0,
            },
            l4: L4::Tcp(TcpHdr { sport: 1000, dport: 80, ..Default::default() }),
            payload_len: 100,
            payload: None,
        };
        let name = |d: Dir, src: &str, dst: &str| p.classify(d, &pk(src, dst)).map(|c| p.classes[c].name.clone());
        assert_eq!(name(Dir::AToB, "10.1.0.9", "192.0.2.1").as_deref(), Some("home/10.1.0.9"));
        assert_eq!(name(Dir::BToA, "192.0.2.1", "10.1.0.2").as_deref(), Some("home/10.1.0.2"));
        // The host is the LAN side: inbound data *from* 10.1.0.2 is not its, nor is a host outside.
        assert_eq!(name(Dir::BToA, "10.1.0.2", "192.0.2.1").as_deref(), Some("other"));
        assert_eq!(name(Dir::AToB, "10.1.0.4", "192.0.2.1").as_deref(), Some("other"));
        // The host lookups give what trying every rule in order gives, for addresses inside, at
        // the edges of and outside the subnets, both directions, TCP and UDP.
        let linear =
            |d: Dir, pkt: &Packet| p.rules.iter().find(|r| r.matches(d, pkt)).map(|r| r.class).or(p.default_class);
        for a in 0..16u8 {
            for other in ["192.0.2.1", "10.1.0.3", "10.1.0.9"] {
                let lan = format!("10.1.0.{a}");
                for (d, src, dst) in [(Dir::AToB, lan.as_str(), other), (Dir::BToA, other, lan.as_str())] {
                    let mut pkt = pk(src, dst);
                    assert_eq!(p.classify(d, &pkt), linear(d, &pkt), "{d:?} {src} -> {dst}");
                    pkt.l4 = L4::Udp(ackshape_wire::UdpHdr { sport: 1, dport: 2 });
                    assert_eq!(p.classify(d, &pkt), linear(d, &pkt), "udp {d:?} {src} -> {dst}");
                }
            }
        }
        // The report of these hosts is tested with the report (the format crate).
    }

    #[test]
    fn per_host_blocks_rule_narrowing_and_their_errors() {
        // IPv6 subscribers with a /56 each; a rule's own `src` narrows the hosts it applies to.
        let p = parse(include_str!("../../tests/data/per-host-v6-policy.toml"), "p.toml").unwrap();
        assert_eq!(p.classes.len(), 4);
        assert_eq!(p.classes[1].name, "v6/2001:db8:0:100::/56");
        assert_eq!(p.rules.len(), 1, "outbound only, and only the host inside the rule's src");
        assert_eq!(p.classes[p.rules[0].class].name, "v6/2001:db8:0:100::/56");
        assert_eq!(p.rules[0].src, vec!["2001:db8:0:100::/56".parse::<IpNet>().unwrap()]);
        {
            use ackshape_wire::{Ecn, IpHdr, TcpHdr};
            let pk = |src: &str| Packet {
                ip: IpHdr {
                    src: src.parse().unwrap(),
                    dst: "2001:db8:ffff::1".parse().unwrap(),
                    ttl: 64,
                    dscp: 0,
                    ecn: Ecn::NotEct,
                    id: 0,
                },
                l4: L4::Tcp(TcpHdr::default()),
                payload_len: 1,
                payload: None,
            };
            assert_eq!(p.classify(Dir::AToB, &pk("2001:db8:0:1ab::7")), Some(p.rules[0].class));
            assert_eq!(p.classify(Dir::AToB, &pk("2001:db8:0:2ab::7")), None);
            assert_eq!(p.classify(Dir::BToA, &pk("2001:db8:0:1ab::7")), None);
        }
        // Errors name the template's own key, not the expanded position.
        let base = "[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"h\"\nper_host = \"10.0.0.0/30\"\n";
        let e = err(&format!("{base}rate = \"2Mbit/s\"\nceil = \"1Mbit/s\"\n[[rule]]\nclass = \"h\"\n"));
        assert!(e.contains("key `class[1].ceil`"), "{e}");
        let e = err(&format!(
            "{base}rate = \"1Mbit/s\"\n[[rule]]\nclass = \"h\"\norder = 1\n[[rule]]\nclass = \"a\"\norder = 1\n"
        ));
        assert!(e.contains("key `rule[1].order`") && e.contains("rule[0] and rule[1] both have order 1"), "{e}");
        let e = err(&format!("{base}rate = \"1Mbit/s\"\ndefault_class = \"h\"\n")
            .replace("default_class = \"h\"\n", "")
            .replacen("[[class]]", "default_class = \"h\"\n[[class]]", 1));
        assert!(e.contains("key `default_class`") && e.contains("per-host template"), "{e}");
        let e =
            err(&format!("{base}rate = \"1Mbit/s\"\n[[class]]\nname = \"c\"\nparent = \"h\"\nrate = \"1Mbit/s\"\n"));
        assert!(e.contains("key `class[2].parent`") && e.contains("cannot have children"), "{e}");
        let e = err(&format!("{base}rate = \"1Mbit/s\"\n[[rule]]\nclass = \"h\"\nsrc = \"192.0.2.0/24\"\n"));
        assert!(e.contains("key `rule[0].src`") && e.contains("none of the hosts"), "{e}");
        let e = err(&base
            .replace("10.0.0.0/30", "10.0.0.0/16")
            .replace("name = \"h\"\n", "name = \"h\"\nrate = \"1kbit/s\"\n"));
        assert!(
            e.contains("key `class[1].per_host`") && e.contains("65536 hosts") && e.contains("at most 4096"),
            "{e}"
        );
        let e = err(&base
            .replace("\"10.0.0.0/30\"", "[\"10.0.0.0/30\", \"10.0.0.2\"]")
            .replace("name = \"h\"\n", "name = \"h\"\nrate = \"1kbit/s\"\n"));
        assert!(e.contains("overlap at 10.0.0.2/32"), "{e}");
        let e = err("[[class]]\nname = \"h\"\nrate = \"1Mbit/s\"\nhost_prefix = 24\n");
        assert!(e.contains("key `class[0].host_prefix`") && e.contains("per_host"), "{e}");
        let e = err("[[class]]\nname = \"h\"\nrate = \"1Mbit/s\"\nper_host = \"10.0.0.0/24\"\nhost_prefix = 20\n");
        assert!(e.contains("from 24 (the subnet 10.0.0.0/24) to 32, got 20"), "{e}");
        // Their rates count against the parent's, summed in one term.
        let e = err("[[class]]\nname = \"p\"\nrate = \"3Mbit/s\"\n[[class]]\nname = \"h\"\nparent = \"p\"\nper_host = \"10.0.0.0/30\"\nrate = \"1Mbit/s\"\n");
        assert!(e.contains("sum to 4Mbit/s (4 × h/… 1Mbit/s)"), "{e}");
    }

    /// A policy of `n` rules over two classes: distinct /32 destinations, some with a port,
    /// a few broader prefixes and ranges, none shadowed.
    pub(crate) fn many_rules(n: usize) -> String {
        let mut t = String::from(
            "default_class = \"b\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"b\"\nrate = \"1Mbit/s\"\n",
        );
        for i in 0..n {
            let (x, y, z) = (10 + i / 65536 % 200, i / 256 % 256, i % 256);
            let c = if i % 2 == 0 { "a" } else { "b" };
            match i % 4 {
                0 => t += &format!("[[rule]]\nclass = \"{c}\"\ndst = \"{x}.{y}.{z}.1/32\"\n"),
                1 => t += &format!("[[rule]]\nclass = \"{c}\"\ndst = \"{x}.{y}.{z}.0/28\"\ndport = {}\nproto = \"tcp\"\n", 1 + i % 60000),
                2 => t += &format!("[[rule]]\nclass = \"{c}\"\nsrc = \"172.16.{y}.{z}\"\nsport = \"{}-{}\"\n", i % 1000, i % 1000 + 10),
                _ => t += &format!("[[rule]]\nclass = \"{c}\"\nsrc = [\"192.168.{y}.{z}/32\", \"2001:db8:{y:x}:{z:x}::/64\"]\ndirection = \"both\"\n"),
            }
        }
        t
    }

    #[test]
    fn forty_thousand_rules_validate_in_under_a_second() {
        let text = many_rules(40_000);
        let t0 = std::time::Instant::now();
        let spec: PolicySpec = toml::from_str(&text).unwrap();
        let parsed = t0.elapsed();
        let t0 = std::time::Instant::now();
        let p = Policy::from_spec(&spec, "big.toml").unwrap();
        let took = t0.elapsed();
        eprintln!("40000 rules ({} bytes): parse {parsed:?}, validate {took:?}", text.len());
        assert_eq!(p.rules.len(), 40_000);
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
        // A shadowed rule at the end is still found, and named as the pairwise check names it.
        let e = err(&format!("{text}[[rule]]\nclass = \"a\"\ndst = \"10.0.4.1/32\"\ndport = 99\n"));
        assert!(e.contains("key `rule[40000]`") && e.contains("never matches: rule[4]"), "{e}");
    }

    /// The indexed order check reports exactly what comparing every pair reports.
    #[test]
    fn indexed_rule_check_agrees_with_the_pairwise_one() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let nets = [
            "10.0.0.0/8",
            "10.1.0.0/16",
            "10.1.2.0/24",
            "10.1.2.3/32",
            "0.0.0.0/0",
            "11.0.0.0/8",
            "2001:db8::/32",
            "2001:db8:1::/48",
        ];
        let ports = ["80", "\"80-90\"", "[80, 443]", "443", "\"0-65535\"", "\"1-1000\""];
        let pick = |rng: &mut rand_xoshiro::Xoshiro256PlusPlus, v: &[&str]| v[rng.gen_range(0..v.len())].to_string();
        let (mut found, mut clean) = (0, 0);
        for case in 0..3000 {
            let ordered = case % 3 == 0;
            let mut rules = Vec::new();
            for i in 0..rng.gen_range(1..7) {
                let mut r = Rule {
                    index: i,
                    key: format!("rule[{i}]"),
                    host: None,
                    order: if ordered { rng.gen_range(0..3) } else { i as i64 },
                    class: 0,
                    direction: [RuleDir::Outbound, RuleDir::Inbound, RuleDir::Both][rng.gen_range(0..3)],
                    src: vec![],
                    dst: vec![],
                    sport: vec![],
                    dport: vec![],
                    proto: [None, Some(6), Some(17)][rng.gen_range(0..3)],
                };
                let net = |rng: &mut rand_xoshiro::Xoshiro256PlusPlus| -> Vec<IpNet> {
                    (0..rng.gen_range(0..3)).map(|_| pick(rng, &nets).parse().unwrap()).collect()
                };
                let port = |rng: &mut rand_xoshiro::Xoshiro256PlusPlus| -> Vec<(u16, u16)> {
                    if rng.gen_bool(0.5) {
                        return vec![];
                    }
                    let v: toml::Value =
                        toml::from_str::<toml::Table>(&format!("p = {}", pick(rng, &ports))).unwrap()["p"].clone();
                    Ports::deserialize(v).unwrap().0
                };
                r.src = net(&mut rng);
                r.dst = net(&mut rng);
                r.sport = port(&mut rng);
                r.dport = port(&mut rng);
                rules.push(r);
            }
            rules.sort_by_key(|r| (r.order, r.index));
            let pairwise = (0..rules.len()).find_map(|b| rule_conflict(&rules, b, ordered));
            let indexed = check_rule_order(&rules, ordered).err();
            assert_eq!(indexed, pairwise, "{rules:#?}");
            if pairwise.is_some() {
                found += 1
            } else {
                clean += 1
            }
        }
        assert!(found > 300 && clean > 300, "{found} conflicting, {clean} clean cases");
    }
}
