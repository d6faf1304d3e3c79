//! Middleboxes at simulated nodes: the factory that turns a `[[middlebox]]` table into a
//! [`Middlebox`], and the per-box state the world keeps.

use crate::engine::DelayLine;
use crate::scenario::{MbMode, MiddleboxSpec};
use ackshape_core::middlebox::{Dir, Emit, Middlebox, Observe, PassThrough};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::Packet;

/// The kinds `[[middlebox]] kind = …` accepts.
pub const KINDS: &[&str] = &["pass-through", "qdisc-link", "gateway", "tap"];

/// Build the box a `[[middlebox]]` table describes. Errors are `(key within the table, message)`.
/// `base_dir` is the scenario file's folder (files a box names are relative to it).
pub fn build_middlebox(
    spec: &MiddleboxSpec,
    seed: u64,
    index: usize,
    base_dir: Option<&std::path::Path>,
) -> Result<Box<dyn Middlebox + Send>, (String, String)> {
    let _ = (seed, index);
    match spec.kind.as_str() {
        "pass-through" => {
            if let Some(k) = spec.settings.keys().next() {
                return Err((k.clone(), "unknown key for kind \"pass-through\" (it has no settings)".into()));
            }
            // Mirrored, "pass-through" means: watch, inject nothing.
            Ok(match spec.mode {
                MbMode::Inline => Box::new(PassThrough),
                MbMode::Mirror => Box::new(Observe),
            })
        }
        "qdisc-link" => qdisc_link(spec, seed, index),
        "gateway" => gateway(spec, seed, index, base_dir),
        "tap" => {
            if spec.mode != MbMode::Mirror {
                return Err(("mode".into(), "a tap only sees copies: expected mode = \"mirror\"".into()));
            }
            let t = ackshape_format::tap::from_table(spec.settings.clone())?;
            // Its flow tables keyed from the scenario seed (deterministic).
            let key = ackshape_core::hash::HashKey::from_seed(seed).derive("tap", index as u64);
            Ok(Box::new(ackshape_core::shape::tap::Tap::with_hash_key(t, key)))
        }
        other => Err(("kind".into(), format!("expected one of {}, got {other:?}", KINDS.join(", ")))),
    }
}

/// A box attached to a node, with its delay lines (mirror mode) and scratch output.
pub(crate) struct MbSlot {
    pub node: u32,
    pub wan_link: u32,
    pub mode: MbMode,
    pub delay: Dur,
    pub kind: String,
    pub mb: Box<dyn Middlebox + Send>,
    /// The pending timer event, if any.
    pub timer: Option<Time>,
    /// Mirror mode: copies on their way to the box.
    pub copies: DelayLine<(Dir, Packet)>,
    /// Mirror mode: injected packets on their way to the node.
    pub injects: DelayLine<Packet>,
    pub out: Emit,
    pub packets_seen: u64,
    pub packets_emitted: u64,
}

/// `kind = "qdisc-link"`: a rate and a queue discipline per direction
/// (`rate`, `qdisc`, `queue`; `reverse_rate`, `reverse_qdisc`, `reverse_queue`; `overhead`).
fn qdisc_link(spec: &MiddleboxSpec, seed: u64, index: usize) -> Result<Box<dyn Middlebox + Send>, (String, String)> {
    use crate::scenario::{QdiscTable, RateV, SizeV};
    use ackshape_core::queue::DropTail;
    use ackshape_core::shape::qlink::{QdiscLink, Shaper};
    use ackshape_core::units::Size;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct V {
        rate: Option<RateV>,
        qdisc: Option<QdiscTable>,
        queue: Option<SizeV>,
        reverse_rate: Option<RateV>,
        reverse_qdisc: Option<QdiscTable>,
        reverse_queue: Option<SizeV>,
        #[serde(default)]
        overhead: usize,
    }
    let v: V = serde_path_to_error::deserialize(toml::Value::Table(spec.settings.clone())).map_err(|e| {
        let path = e.path().to_string();
        (if path == "." { "kind".into() } else { path }, e.inner().message().trim_end().to_string())
    })?;
    let mk = |rate: Option<RateV>, q: Option<QdiscTable>, size: Option<SizeV>, key: &str, d: u64| {
        let Some(rate) = rate else {
            if q.is_some() || size.is_some() {
                return Err((key.to_string(), "a queue needs a rate in the same direction".to_string()));
            }
            return Ok(None);
        };
        if rate.0 .0 == 0 {
            return Err((key.to_string(), "expected a rate > 0".to_string()));
        }
        let queue: Box<dyn ackshape_core::queue::QueueDisc + Send> = match q {
            Some(q) => {
                // As on a link: `queue` (packets) sizes the limits the qdisc table leaves out.
                let qkey = key.replace("rate", "queue");
                let qdisc = key.replace("rate", "qdisc");
                let (q, _) = q.with_queue(size.map(|s| s.0)).map_err(|m| (qkey, m))?;
                q.validate().map_err(|m| (qdisc, m))?;
                q.build(rate.0 .0, ackshape_core::rng::stream(seed, "mb-qdisc", index as u64 * 2 + d))
            }
            None => Box::new(DropTail::new(size.map(|s| s.0).unwrap_or(Size::Packets(100)).into())),
        };
        Ok(Some(Shaper::new(rate.0 .0, queue)))
    };
    let f = mk(v.rate, v.qdisc, v.queue, "rate", 0)?;
    let r = mk(v.reverse_rate, v.reverse_qdisc, v.reverse_queue, "reverse_rate", 1)?;
    Ok(Box::new(QdiscLink::new(f, r, v.overhead)))
}

/// `kind = "gateway"`: the edge gateway with a shaping policy, inline (`policy = { … }`) or from
/// a file (`policy_file`, relative to the scenario file); `overhead` bytes per packet.
fn gateway(
    spec: &MiddleboxSpec,
    seed: u64,
    index: usize,
    base_dir: Option<&std::path::Path>,
) -> Result<Box<dyn Middlebox + Send>, (String, String)> {
    use ackshape_core::shape::gateway::Gateway;
    if spec.mode == MbMode::Mirror {
        return Err(("mode".into(), "a gateway sits inline (mode = \"inline\")".into()));
    }
    let mut policy = None;
    let mut file = None;
    let mut overhead = 0usize;
    let mut warmup = None;
    for (k, v) in &spec.settings {
        match (k.as_str(), v) {
            ("warmup", toml::Value::String(s)) => {
                warmup = Some(
                    ackshape_core::units::parse_duration(s)
                        .map_err(|e| (k.clone(), format!("expected a duration (e.g. \"10s\"): {e}")))?,
                )
            }
            ("warmup", other) => {
                return Err((k.clone(), format!("expected a duration string (e.g. \"10s\"), got {other}")))
            }
            ("policy", toml::Value::Table(t)) => policy = Some(t),
            ("policy", other) => return Err((k.clone(), format!("expected a table of policy keys, got {other}"))),
            ("policy_file", toml::Value::String(s)) => file = Some(s),
            ("policy_file", other) => return Err((k.clone(), format!("expected a file name, got {other}"))),
            ("overhead", toml::Value::Integer(n)) if (0..=1000).contains(n) => overhead = *n as usize,
            ("overhead", other) => return Err((k.clone(), format!("expected bytes per packet 0..=1000, got {other}"))),
            _ => {
                return Err((
                    k.clone(),
                    "unknown key for kind \"gateway\" (expected policy, policy_file, overhead, warmup)".into(),
                ))
            }
        }
    }
    let policy = resolve_policy(policy, file, base_dir)?;
    use rand::RngCore;
    let gw_seed = ackshape_core::rng::stream(seed, "gateway", index as u64).next_u64();
    let mut gw = Gateway::new(policy, overhead, gw_seed);
    if let Some(w) = warmup {
        gw.reset_stats_at(ackshape_core::time::Time::ZERO + w);
    }
    Ok(Box::new(gw))
}

/// The policy of a `kind = "gateway"` box: `policy` (inline) or `policy_file` (relative to
/// `base_dir`, the scenario's folder). Errors are `(key, message)` within the box's table.
fn resolve_policy(
    policy: Option<&toml::Table>,
    file: Option<&String>,
    base_dir: Option<&std::path::Path>,
) -> Result<ackshape_core::shape::policy::Policy, (String, String)> {
    Ok(match (policy, file) {
        (Some(_), Some(_)) => {
            return Err(("policy_file".into(), "give either `policy` (inline) or `policy_file`, not both".into()))
        }
        (None, None) => {
            return Err(("policy".into(), "expected an inline `policy = { … }` table or a `policy_file`".into()))
        }
        (Some(t), None) => ackshape_format::policy::from_table(t, "<inline>").map_err(|e| match e.key {
            Some(k) => (format!("policy.{k}"), e.msg),
            None => ("policy".into(), e.msg),
        })?,
        (None, Some(f)) => {
            let path = match base_dir {
                Some(b) if std::path::Path::new(f).is_relative() => b.join(f),
                _ => std::path::PathBuf::from(f),
            };
            ackshape_format::policy::load(&path).map_err(|e| ("policy_file".to_string(), e.to_string()))?
        }
    })
}

/// The shaping policy of a `kind = "gateway"` box, as the simulator will run it (for reports such
/// as `ackshape validate`'s warnings); `None` if the box is not a gateway or names no policy.
pub fn gateway_policy(
    spec: &MiddleboxSpec,
    base_dir: Option<&std::path::Path>,
) -> Option<Result<ackshape_core::shape::policy::Policy, (String, String)>> {
    if spec.kind != "gateway" {
        return None;
    }
    let policy = spec.settings.get("policy").and_then(|v| v.as_table());
    let file = match spec.settings.get("policy_file") {
        Some(toml::Value::String(f)) => Some(f),
        _ => None,
    };
    (policy.is_some() || file.is_some()).then(|| resolve_policy(policy, file, base_dir))
}
