//! What a validated [`Policy`] will do, for people: a summary (`ackshape validate --policy`
//! prints it) and warnings about things that are valid but probably not what the author meant.
//!
//! Warnings never reject a policy (errors do, in [`Policy::from_spec`]); they name the key the
//! way errors do, so ``policy.toml: key `class[3]`: …`` points at the line to look at.
//!
//! The report is a trait on the core's [`Policy`] ([`PolicyReport`]): bring it into scope to call
//! `policy.describe()`.

use ackshape_core::middlebox::Dir;
use ackshape_core::queue::Limit;
use ackshape_core::shape::policy::{Class, LeafSpec, Policy, Rule, RuleDir, PROTO_NAMES};
use ackshape_core::units::Rate;
use std::fmt::Write;

/// An IP packet of a 1500-byte MTU: what a class's byte queue should hold at least.
const FULL_SIZE_PACKET: usize = 1500;

/// A valid policy's probable mistake: the dotted key and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyWarning {
    pub key: String,
    pub msg: String,
}

impl std::fmt::Display for PolicyWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "key `{}`: {}", self.key, self.msg)
    }
}

fn limit(l: &Limit) -> String {
    match l {
        Limit::Packets(p) => format!("{p}pkt"),
        Limit::Bytes(b) => format!("{b}B"),
    }
}

/// The leaf discipline in a few words.
fn leaf_words(leaf: &LeafSpec) -> String {
    match leaf {
        LeafSpec::Fifo(l) => format!("fifo {}", limit(l)),
        LeafSpec::PfqDrr { pcdq, .. } => format!("pfq-drr (pcdq {})", limit(pcdq)),
        LeafSpec::Qdisc(q) => q.label().into(),
    }
}

/// `kind (key = value, …)` of a mechanism.
fn mechanism_words(m: &Option<(String, ackshape_core::table::Table)>) -> String {
    match m {
        None => "no ACK mechanism".into(),
        Some((kind, settings)) if settings.is_empty() => kind.clone(),
        Some((kind, settings)) => {
            let kv: Vec<String> =
                settings.iter().map(|(k, v)| format!("{k} = {}", ackshape_core::table::show(v))).collect();
            format!("{kind} ({})", kv.join(", "))
        }
    }
}

fn dirs_words(c: &Class) -> &'static str {
    match c.dirs {
        [true, true] => "out+in",
        [true, false] => "out",
        [false, true] => "in",
        [false, false] => "-",
    }
}

fn rule_words(r: &Rule, classes: &[Class]) -> String {
    let mut m = Vec::new();
    m.push(
        match r.direction {
            RuleDir::Outbound => "outbound",
            RuleDir::Inbound => "inbound",
            RuleDir::Both => "both",
        }
        .to_string(),
    );
    if let Some(p) = r.proto {
        m.push(match PROTO_NAMES.iter().find(|&&(_, n)| n == p) {
            Some((name, _)) => name.to_string(),
            None => format!("proto {p}"),
        });
    }
    let nets = |n: &[ipnet::IpNet]| n.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    let ports = |p: &[(u16, u16)]| {
        p.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect::<Vec<_>>().join(",")
    };
    if !r.src.is_empty() {
        m.push(format!("src {}", nets(&r.src)));
    }
    if !r.dst.is_empty() {
        m.push(format!("dst {}", nets(&r.dst)));
    }
    if !r.sport.is_empty() {
        m.push(format!("sport {}", ports(&r.sport)));
    }
    if !r.dport.is_empty() {
        m.push(format!("dport {}", ports(&r.dport)));
    }
    if m.len() == 1 {
        m.push("any packet".into());
    }
    format!("{}  {}  -> {}", r.key, m.join(" "), classes[r.class].name)
}

/// The name, subnets and count of the per-host classes of template `t`: `home/… × 254 (10.1.0.0/24)`.
fn hosts_words(classes: &[Class], t: &str) -> String {
    let hosts: Vec<ipnet::IpNet> =
        classes.iter().filter_map(|c| c.host.as_ref().filter(|(x, _)| x == t).map(|(_, h)| *h)).collect();
    let nets = ipnet::IpNet::aggregate(&hosts);
    let shown: Vec<String> = nets.iter().take(4).map(|n| n.to_string()).collect();
    let more = if nets.len() > 4 { format!(", … {} more", nets.len() - 4) } else { String::new() };
    format!("{t}/… × {} ({}{more})", hosts.len(), shown.join(", "))
}

/// `outbound R, inbound R` ("unlimited" without a link rate).
fn link_words(p: &Policy) -> String {
    let rate = |r: Option<u64>| r.map_or("unlimited".into(), |b| Rate(b).to_string());
    format!("outbound {}, inbound {}", rate(p.link_bps[Dir::AToB.index()]), rate(p.link_bps[Dir::BToA.index()]))
}

/// What a validated policy will do, in words for people.
pub trait PolicyReport {
    /// One line: `2 classes, 1 rule, outbound 10Mbit/s, inbound unlimited` (the live gateway's
    /// start and reload log lines).
    fn headline(&self) -> String;
    /// A multi-line summary: the link, the class tree (rate, ceiling, priority, the directions it
    /// carries, leaf queue and ACK mechanism), the rules in the order they are tried, what no rule
    /// matches, and the flow table's bounds.
    fn describe(&self) -> String;
    /// Things that are valid but probably not what the author meant.
    fn warnings(&self) -> Vec<PolicyWarning>;
}

impl PolicyReport for Policy {
    /// One line: `2 classes, 1 rule, outbound 10Mbit/s, inbound unlimited` (the live gateway's
    /// start and reload log lines).
    fn headline(&self) -> String {
        let n = |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
        format!(
            "{}, {}, {}",
            n(self.classes.len(), "class", "classes"),
            n(self.rules.len(), "rule", "rules"),
            link_words(self)
        )
    }

    /// A multi-line summary: the link, the class tree (rate, ceiling, priority, the directions it
    /// carries, leaf queue and ACK mechanism), the rules in the order they are tried, what no rule
    /// matches, and the flow table's bounds.
    fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "link: {}", link_words(self));
        if self.classes.is_empty() {
            let _ = writeln!(s, "classes: none (every packet passes unshaped)");
        } else {
            let _ = writeln!(s, "classes (dirs: the directions whose data they carry):");
            // Depth-first, children in file order, so the tree reads top-down.
            let mut order = Vec::with_capacity(self.classes.len());
            let mut stack: Vec<usize> =
                (0..self.classes.len()).filter(|&i| self.classes[i].parent.is_none()).rev().collect();
            while let Some(i) = stack.pop() {
                order.push(i);
                stack.extend(self.classes[i].children.iter().rev());
            }
            // A per-host template's classes differ only by host: one line for all of them.
            let mut shown = std::collections::HashSet::new();
            let rows: Vec<(usize, String)> = order
                .into_iter()
                .filter_map(|i| {
                    let c = &self.classes[i];
                    match &c.host {
                        None => Some((i, c.name.clone())),
                        Some((t, _)) if shown.insert(t.clone()) => Some((i, hosts_words(&self.classes, t))),
                        Some(_) => None,
                    }
                })
                .collect();
            let width = rows.iter().map(|(i, l)| 2 * self.classes[*i].depth + l.chars().count()).max().unwrap_or(0);
            for (i, label) in rows {
                let c = &self.classes[i];
                let name = format!("{}{}", "  ".repeat(c.depth), label);
                let mut line = format!(
                    "  {name:<width$}  rate {:<11} ceil {:<11} prio {}  dirs {:<6}",
                    Rate(c.rate_bps).to_string(),
                    Rate(c.ceil_bps).to_string(),
                    c.priority,
                    dirs_words(c)
                );
                if let Some(leaf) = &c.leaf {
                    let _ = write!(line, "  {}  {}", leaf_words(leaf), mechanism_words(&c.mechanism));
                }
                let _ = writeln!(s, "{}", line.trim_end());
            }
        }
        if !self.rules.is_empty() {
            let _ = writeln!(s, "rules (first match, in this order):");
            let mut i = 0;
            while i < self.rules.len() {
                let r = &self.rules[i];
                // The rules a per-host template's rule expanded into: one line.
                if let Some((t, _)) = &self.classes[r.class].host {
                    let n = self.rules[i..]
                        .iter()
                        .take_while(|x| {
                            x.key == r.key && self.classes[x.class].host.as_ref().is_some_and(|(y, _)| y == t)
                        })
                        .count();
                    let dirs: std::collections::BTreeSet<&str> = self.rules[i..i + n]
                        .iter()
                        .map(|x| {
                            if x.direction == RuleDir::Inbound {
                                "inbound data to the host"
                            } else {
                                "outbound data from the host"
                            }
                        })
                        .collect();
                    let _ = writeln!(
                        s,
                        "  {}  per host ({} rules: {})  -> {t}/HOST",
                        r.key,
                        n,
                        dirs.into_iter().collect::<Vec<_>>().join(", ")
                    );
                    i += n;
                    continue;
                }
                let _ = writeln!(s, "  {}", rule_words(r, &self.classes));
                i += 1;
            }
        }
        let _ = match self.default_class {
            Some(d) => writeln!(s, "no rule matches: class {} (default_class)", self.classes[d].name),
            None => writeln!(s, "no rule matches: the packet passes unshaped (no default_class)"),
        };
        let _ = writeln!(
            s,
            "borrow_interval {} ms; flows: at most {}, idle after {} s, embryonic after {} s",
            self.borrow_interval.0 as f64 / 1e6,
            self.flows.max_flows,
            self.flows.idle_timeout_s,
            self.flows.embryonic_timeout_s
        );
        s
    }

    /// Valid but probably unintended: a byte queue below one full-size packet; a leaf no rule (and not `default_class`) sends data to; a
    /// link rate for a direction no class carries (its packets pass unshaped, so the rate shapes
    /// nothing); zero-timer PostACK over a plain FIFO (it is clocked by per-flow queue lengths).
    fn warnings(&self) -> Vec<PolicyWarning> {
        let mut w = Vec::new();
        let mut warned = std::collections::HashSet::new();
        for c in self.classes.iter() {
            // Per-host classes: one warning per template and kind.
            if c.host.is_some() && !warned.insert(c.key.clone() + if c.dirs == [false, false] { "0" } else { "1" }) {
                continue;
            }
            if let (Some((t, _)), [false, false]) = (&c.host, c.dirs) {
                let idle = self
                    .classes
                    .iter()
                    .filter(|x| x.host.as_ref().is_some_and(|(y, _)| y == t) && x.dirs == [false, false])
                    .count();
                let all = self.classes.iter().filter(|x| x.host.as_ref().is_some_and(|(y, _)| y == t)).count();
                let msg = if idle == all {
                    format!("no rule names the per-host class {t:?}: its {all} classes will never carry traffic")
                } else {
                    format!(
                        "no rule sends data to {idle} of the {all} per-host classes of {t:?} (the rules naming it \
                         match only some hosts): they will never carry traffic"
                    )
                };
                w.push(PolicyWarning { key: c.key.clone(), msg });
            } else if c.is_leaf() && c.dirs == [false, false] {
                w.push(PolicyWarning {
                    key: c.key.clone(),
                    msg: format!(
                        "no rule names class {:?} and it is not the default_class: it will never carry traffic",
                        c.name
                    ),
                });
            }
            // A byte limit (IP bytes) below one Ethernet-MTU packet drops every full-size packet.
            if let Some(LeafSpec::Fifo(Limit::Bytes(b)) | LeafSpec::PfqDrr { pcdq: Limit::Bytes(b), .. }) = &c.leaf {
                if *b < FULL_SIZE_PACKET {
                    w.push(PolicyWarning {
                        key: format!("{}.queue", c.key),
                        msg: format!(
                            "a queue of {b} B holds no full-size packet ({FULL_SIZE_PACKET} B on a 1500-byte MTU): \
                             such packets are dropped whenever the class has to queue"
                        ),
                    });
                }
            }
            let zero_timer = c.mechanism.as_ref().is_some_and(|(k, t)| {
                k == "postack" && t.get("variant").and_then(ackshape_core::table::as_str) == Some("zero-timer")
            });
            if zero_timer && !matches!(c.leaf, Some(LeafSpec::PfqDrr { .. })) {
                w.push(PolicyWarning {
                    key: format!("{}.qdisc", c.key),
                    msg: "zero-timer PostACK releases ACKs by the flow's per-flow queue length at each class \
                          dequeue; without per-flow queues it can only count the flow's packets in the class. \
                          Paper 000 §6 runs it over qdisc = { kind = \"pfq-drr\" }"
                        .into(),
                });
            }
        }
        for (d, key) in [(Dir::AToB, "link.outbound"), (Dir::BToA, "link.inbound")] {
            if self.link_bps[d.index()].is_some() && !self.classes.iter().any(|c| c.dirs[d.index()]) {
                w.push(PolicyWarning {
                    key: key.into(),
                    msg: format!(
                        "no class carries {} data (no rule for that direction and no default_class), so its \
                         packets pass unshaped and this rate limits nothing",
                        if d == Dir::AToB { "outbound" } else { "inbound" }
                    ),
                });
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pol(text: &str) -> Policy {
        crate::policy::parse(text, "p.toml").unwrap()
    }

    #[test]
    fn describe_shows_the_tree_rules_and_fallback() {
        let p = pol(r#"
default_class = "bulk"
[link]
outbound = "10Mbit/s"
[[class]]
name = "data"
rate = "9Mbit/s"
[[class]]
name = "voice"
rate = "1Mbit/s"
[[class]]
name = "web"
parent = "data"
rate = "6Mbit/s"
ceil = "9Mbit/s"
priority = 1
mechanism = { kind = "tcr", pacing = "per-flow" }
[[class]]
name = "bulk"
parent = "data"
rate = "3Mbit/s"
qdisc = { kind = "pfq-drr" }
mechanism = { kind = "postack", variant = "zero-timer" }
[[rule]]
class = "web"
proto = "tcp"
dport = [80, 443, "8000-8080"]
dst = "10.0.0.0/8"
"#);
        let d = p.describe();
        assert!(d.contains("link: outbound 10Mbit/s, inbound unlimited"), "{d}");
        // Children right under their parent, indented; "voice" (a top-level class declared before
        // "web") comes after the "data" subtree.
        let at = |n: &str| d.find(n).unwrap_or_else(|| panic!("{n} missing in\n{d}"));
        assert!(
            at("\n  data ") < at("\n    web ")
                && at("\n    web ") < at("\n    bulk ")
                && at("\n    bulk ") < at("\n  voice "),
            "{d}"
        );
        assert!(d.contains("ceil 9Mbit/s") && d.contains("prio 1"), "{d}");
        assert!(d.contains("tcr (pacing = \"per-flow\")"), "{d}");
        assert!(d.contains("pfq-drr (pcdq 1pkt)  postack (variant = \"zero-timer\")"), "{d}");
        assert!(d.contains("rule[0]  outbound tcp dst 10.0.0.0/8 dport 80,443,8000-8080  -> web"), "{d}");
        assert!(d.contains("no rule matches: class bulk (default_class)"), "{d}");
        // bulk carries both directions (default class), web outbound only, voice nothing.
        let line = |n: &str| d.lines().find(|l| l.trim_start().starts_with(n)).unwrap().to_string();
        assert!(line("bulk").contains("dirs out+in"), "{d}");
        assert!(line("web").contains("dirs out "), "{d}");
        assert!(line("voice").contains("dirs -"), "{d}");
        assert_eq!(
            p.warnings(),
            vec![PolicyWarning {
                key: "class[1]".into(),
                msg: "no rule names class \"voice\" and it is not the default_class: it will never carry traffic"
                    .into()
            }]
        );
        assert!(pol("").describe().contains("classes: none"));
        assert!(pol("[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[rule]]\nclass = \"a\"\n")
            .describe()
            .contains("passes unshaped (no default_class)"));
    }

    #[test]
    fn warnings_name_the_key() {
        let keys = |text: &str| pol(text).warnings().into_iter().map(|w| w.key).collect::<Vec<_>>();
        // A link rate for a direction no class carries.
        assert_eq!(
            keys(
                "[link]\ninbound = \"5Mbit/s\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[rule]]\nclass = \"a\"\n"
            ),
            ["link.inbound"]
        );
        // The same with a rule for that direction: nothing to say.
        assert!(keys(
            "[link]\ninbound = \"5Mbit/s\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[rule]]\nclass = \"a\"\ndirection = \"both\"\n"
        )
        .is_empty());
        // Zero-timer PostACK over a FIFO, and over pfq-drr.
        let zt = "[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nmechanism = { kind = \"postack\", variant = \"zero-timer\" }\n\
                  [[rule]]\nclass = \"a\"\n";
        assert_eq!(keys(zt), ["class[0].qdisc"]);
        assert!(keys(&zt.replace("rate = \"1Mbit/s\"\n", "rate = \"1Mbit/s\"\nqdisc = { kind = \"pfq-drr\" }\n"))
            .is_empty());
        // An empty policy has nothing to warn about.
        assert!(keys("").is_empty());
    }

    #[test]
    fn a_byte_queue_below_one_packet_is_warned_about() {
        let text = |q: &str| {
            format!("default_class = \"c\"\n[link]\noutbound = \"10Mbit/s\"\n[[class]]\nname = \"c\"\nrate = \"10Mbit/s\"\nqueue = \"{q}\"\n")
        };
        let w = pol(&text("1000B")).warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].key, "class[0].queue");
        assert!(w[0].msg.contains("1000 B holds no full-size packet (1500 B"), "{}", w[0].msg);
        for q in ["1500B", "64KB", "1pkt"] {
            assert!(pol(&text(q)).warnings().is_empty(), "{q}");
        }
    }

    #[test]
    fn per_host_classes_are_one_line_and_unreachable_hosts_are_warned_about() {
        let p = pol(include_str!("../../core/tests/data/per-host-policy.toml"));
        let d = p.describe();
        assert!(d.contains("home/… × 6 (10.1.0.0/30, 10.1.0.8/31)"), "{d}");
        assert!(
            d.contains(
                "rule[1]  per host (12 rules: inbound data to the host, outbound data from the host)  -> home/HOST"
            ),
            "{d}"
        );
        assert!(p.warnings().is_empty(), "{:?}", p.warnings());
        // A rule's own `src` narrows the hosts it applies to: three of four get no data.
        let p = pol(include_str!("../../core/tests/data/per-host-v6-policy.toml"));
        let w = p.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].key, "class[0]");
        assert!(w[0].msg.contains("3 of the 4 per-host classes of \"v6\""), "{}", w[0].msg);
    }
}
