//! The gateway policy file (TOML). For now it covers what the pass-through data plane decides:
//! what to do with non-IP, non-TCP and malformed frames, and the flow table's bounds. The
//! shaping-mechanism sections will extend this struct.

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

/// Flow table bounds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlowTablePolicy {
    /// Maximum tracked flows; new flows beyond it are forwarded but not tracked (counted as
    /// `untracked`). Memory is bounded by about `max_flows × FLOW_ENTRY_BYTES`.
    pub max_flows: usize,
    /// A flow with no packet for this long is evicted (seconds).
    pub idle_timeout_s: f64,
    /// A flow that has only been seen opening (SYN, no data) is evicted after this (seconds).
    pub embryonic_timeout_s: f64,
}

impl Default for FlowTablePolicy {
    fn default() -> Self {
        FlowTablePolicy { max_flows: 65_536, idle_timeout_s: 120.0, embryonic_timeout_s: 10.0 }
    }
}

/// The gateway policy.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Parse and validate a policy from TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        let p: Policy =
            toml::from_str(text).map_err(|e| PolicyError::Invalid { path: origin.into(), msg: e.to_string() })?;
        p.validate().map_err(|msg| PolicyError::Invalid { path: origin.into(), msg })?;
        Ok(p)
    }
    /// Load a policy file.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| PolicyError::Io { path: path.display().to_string(), source })?;
        Policy::from_toml(&text, &path.display().to_string())
    }
    pub fn validate(&self) -> Result<(), String> {
        let f = &self.flows;
        if f.max_flows == 0 || f.max_flows > 50_000_000 {
            return Err(format!("flows.max_flows must be in 1..=50000000, got {}", f.max_flows));
        }
        for (k, v) in [("flows.idle_timeout_s", f.idle_timeout_s), ("flows.embryonic_timeout_s", f.embryonic_timeout_s)]
        {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{k} must be a positive number of seconds, got {v}"));
            }
        }
        Ok(())
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
}
