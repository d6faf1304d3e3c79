//! The gateway policy file (TOML): what the data plane does with frames it does not shape
//! (non-IP, non-TCP, malformed), the flow table's bounds, and the shaping sections — `[link]`,
//! `[[class]]`, `[[rule]]`, `default_class`, `borrow_interval` — in the format the simulator's
//! `[[middlebox]] kind = "gateway"` reads ([`ackshape_core::shape::policy`]). Loading validates
//! everything; the validated shaping policy is [`Policy::shaping`].

use ackshape_core::shape::policy::{ClassSpec, LinkSpec, Policy as ShapingPolicy, PolicySpec, RuleSpec};
use ackshape_core::units::DurV;
use std::path::Path;

/// What to do with a class of frames the pipeline does not shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameAction {
    /// Forward the bytes untouched (default).
    #[default]
    Forward,
    /// Drop (counted).
    Drop,
}

/// Flow table bounds (`[flows]`): the same type the core gateway's flow table uses.
pub use ackshape_core::shape::policy::FlowTablePolicy;

/// The gateway policy.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    /// Frames that are not IPv4/IPv6 (ARP, LLDP, ...).
    pub non_ip: FrameAction,
    /// IP frames that are not TCP (UDP, ICMP, fragments, ...).
    pub non_tcp: FrameAction,
    /// Frames that fail to parse.
    pub malformed: FrameAction,
    /// Frames the kernel flagged with a partial checksum (TP_STATUS_CSUMNOTREADY).
    pub csum_not_ready: FrameAction,
    pub flows: FlowTablePolicy,
    /// Shaping: the access link's rate per direction (the root of the class tree).
    pub link: LinkSpec,
    /// Shaping: the class of packets no rule matches (none: they pass unshaped).
    pub default_class: Option<String>,
    /// Shaping: how often borrowing classes' effective rates are recomputed.
    pub borrow_interval: Option<DurV>,
    /// Shaping: `[[class]]` tables as written.
    pub class: Vec<ClassSpec>,
    /// Shaping: `[[rule]]` tables as written.
    pub rule: Vec<RuleSpec>,
    /// The validated shaping policy (classes, rules, flow table), filled by
    /// [`Policy::from_toml`]; what [`ackshape_core::shape::gateway::Gateway::new`] takes.
    #[serde(skip)]
    pub shaping: ShapingPolicy,
}

/// A policy that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("reading policy {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("policy {path}: {msg}")]
    Invalid { path: String, msg: String },
}

impl Policy {
    /// Parse and validate a policy from TOML text; `origin` names it in errors, with the dotted
    /// key (`policy p.toml: key `class[2].ceil`: ceiling 1Mbit/s is below rate 2Mbit/s`).
    pub fn from_toml(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        let invalid = |msg: String| PolicyError::Invalid { path: origin.into(), msg };
        let de = toml::Deserializer::new(text);
        let mut p: Policy = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let msg = inner.message().trim_end().to_string();
            let key = match msg.strip_prefix("unknown field `").and_then(|r| r.split('`').next()) {
                Some(f) if path == "." || path.is_empty() => f.to_string(),
                Some(f) if !path.ends_with(f) => format!("{path}.{f}"),
                _ => path,
            };
            match (key.as_str(), inner.span()) {
                ("." | "", Some(sp)) => {
                    invalid(format!("line {}: {msg}", text[..sp.start.min(text.len())].matches('\n').count() + 1))
                }
                ("." | "", None) => invalid(msg),
                (k, _) => invalid(format!("key `{k}`: {msg}")),
            }
        })?;
        p.validate().map_err(invalid)?;
        let spec = PolicySpec {
            link: p.link.clone(),
            default_class: p.default_class.clone(),
            borrow_interval: p.borrow_interval,
            class: p.class.clone(),
            rule: p.rule.clone(),
            flows: p.flows.clone(),
        };
        p.shaping = ShapingPolicy::from_spec(&spec, origin).map_err(|e| match e.key {
            Some(k) => invalid(format!("key `{k}`: {}", e.msg)),
            None => invalid(e.msg),
        })?;
        Ok(p)
    }
    /// Load a policy file.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| PolicyError::Io { path: path.display().to_string(), source })?;
        Policy::from_toml(&text, &path.display().to_string())
    }
    pub fn validate(&self) -> Result<(), String> {
        self.flows.validate().map_err(|(k, m)| format!("key `flows.{k}`: {m}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_ok_and_defaults() {
        let p = Policy::from_toml("non_ip = \"drop\"\n[flows]\nmax_flows = 10\n", "t.toml").unwrap();
        assert_eq!(p.non_ip, FrameAction::Drop);
        assert_eq!(p.non_tcp, FrameAction::Forward);
        assert_eq!(p.flows.max_flows, 10);
        assert_eq!(Policy::from_toml("", "e").unwrap(), Policy::default());
    }

    #[test]
    fn bad_policies_name_file_and_key() {
        let e = Policy::from_toml("non_ip = \"maybe\"", "p.toml").unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("non_ip"), "{e}");
        let e = Policy::from_toml("[flows]\nmax_flows = 0", "p.toml").unwrap_err().to_string();
        assert!(e.contains("flows.max_flows"), "{e}");
        let e = Policy::from_toml("bogus = 1", "p.toml").unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn one_file_holds_frame_handling_and_shaping() {
        let text = r#"
malformed = "drop"
default_class = "bulk"
[flows]
max_flows = 1000
[link]
outbound = "10Mbit/s"
[[class]]
name = "bulk"
rate = "2Mbit/s"
ceil = "10Mbit/s"
mechanism = { kind = "postack", variant = "zero-timer" }
qdisc = { kind = "pfq-drr" }
[[class]]
name = "voice"
rate = "1Mbit/s"
priority = 0
[[rule]]
class = "voice"
proto = "udp"
dport = "5060-5080"
"#;
        let p = Policy::from_toml(text, "gw.toml").unwrap();
        assert_eq!(p.malformed, FrameAction::Drop);
        assert_eq!(p.shaping.classes.len(), 2);
        assert_eq!(p.shaping.flows.max_flows, 1000);
        assert_eq!(p.shaping.default_class, Some(0));
        assert_eq!(p.shaping.link_bps[0], Some(10_000_000));
        // Without shaping sections the shaping policy is empty.
        assert!(Policy::from_toml("", "e").unwrap().shaping.classes.is_empty());
    }

    #[test]
    fn shaping_errors_name_file_and_key() {
        let e = Policy::from_toml("[[class]]\nname = \"a\"\nrate = \"2Mbit/s\"\nceil = \"1Mbit/s\"\n", "gw.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "policy gw.toml: key `class[0].ceil`: ceiling 1Mbit/s is below rate 2Mbit/s");
        let e = Policy::from_toml("[[class]]\nname = \"a\"\nrate = \"2Mbit/s\"\nspeed = 1\n", "gw.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `class[0].speed`"), "{e}");
        let e = Policy::from_toml("[[rule]]\nclass = \"x\"\n", "gw.toml").unwrap_err().to_string();
        assert!(e.contains("key `rule[0].class`"), "{e}");
    }

    #[test]
    fn every_example_in_docs_policy_md_loads() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/policy.md")).unwrap();
        let mut n = 0;
        for block in doc.split("```toml\n").skip(1) {
            let text = block.split("```").next().unwrap();
            Policy::from_toml(text, "docs/policy.md").unwrap_or_else(|e| panic!("{e}\n{text}"));
            n += 1;
        }
        assert!(n >= 3, "found {n} examples");
    }
}
