//! The gateway policy file (TOML): what the data plane does with frames it does not shape
//! (non-IP, non-TCP, malformed, partial checksums), and the shaping policy of
//! `ackshape_core::shape::policy` (`[link]`, `[[class]]`, `[[rule]]`, `default_class`,
//! `borrow_interval`, `[flows]`) that the gateway runs as a `core::shape::gateway::Gateway` box.
//! One file, the same shaping format as a scenario's `[[middlebox]] kind = "gateway"`; errors
//! name the file and the dotted key (`docs/policy.md`).

use ackshape_format::policy_report::{PolicyReport, PolicyWarning};
use std::path::Path;

/// Flow table bounds (`[flows]`): the data plane's flow table and the shaping gateway's.
pub use ackshape_core::shape::policy::FlowTablePolicy;
/// The validated shaping policy.
pub use ackshape_core::shape::policy::Policy as ShapingPolicy;

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

/// The gateway policy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    /// Frames that are not IPv4/IPv6 (ARP, LLDP, ...).
    pub non_ip: FrameAction,
    /// IP frames that are not TCP (UDP, ICMP, fragments, ...).
    pub non_tcp: FrameAction,
    /// Frames that fail to parse.
    pub malformed: FrameAction,
    /// Frames the kernel flagged with a partial checksum (TP_STATUS_CSUMNOTREADY).
    pub csum_not_ready: FrameAction,
    /// TCP frames whose IPv4 header or TCP checksum is wrong (verified on receive; never shaped,
    /// rebuilt or learnt from).
    pub bad_checksum: FrameAction,
    pub flows: FlowTablePolicy,
    /// The shaping policy, if the file has any shaping key (`link`, `class`, `rule`,
    /// `default_class`, `borrow_interval`); None: pass-through.
    pub shaping: Option<ShapingPolicy>,
}

/// The keys of the data plane's own frame handling; every other key is the shaping policy's.
const FRAME_KEYS: [&str; 6] = ["non_ip", "non_tcp", "malformed", "csum_not_ready", "bad_checksum", PASS_THROUGH_KEY];
/// The statement that a file without a shaping section means it: `pass_through = true`. Without
/// it such a file (an empty one, or one cut short before its first class) is rejected, so a
/// half-written file never turns shaping off.
pub const PASS_THROUGH_KEY: &str = "pass_through";
/// The largest policy file read (bytes).
pub const MAX_POLICY_BYTES: u64 = 64 << 20;
/// Keys that make a file a shaping policy (`flows` alone does not).
const SHAPING_KEYS: [&str; 5] = ["link", "class", "rule", "default_class", "borrow_interval"];

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameKeys {
    #[serde(default)]
    non_ip: FrameAction,
    #[serde(default)]
    non_tcp: FrameAction,
    #[serde(default)]
    malformed: FrameAction,
    #[serde(default)]
    csum_not_ready: FrameAction,
    #[serde(default)]
    bad_checksum: FrameAction,
    pass_through: Option<bool>,
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
        let invalid = |msg: String| PolicyError::Invalid { path: origin.into(), msg };
        let table: toml::Table =
            text.parse().map_err(|e: toml::de::Error| invalid(ackshape_format::tomlerr::syntax_message(text, &e)))?;
        let (frame, rest): (toml::Table, toml::Table) =
            table.into_iter().partition(|(k, _)| FRAME_KEYS.contains(&k.as_str()));
        let fk: FrameKeys = serde_path_to_error::deserialize(toml::Value::Table(frame))
            .map_err(|e| invalid(format!("key `{}`: {}", e.path(), e.inner().message().trim_end())))?;
        let is_shaping = rest.keys().any(|k| SHAPING_KEYS.contains(&k.as_str()));
        // The shaping part (and [flows], and any unknown key) is validated by the core policy.
        let sp = ackshape_format::policy::from_table(&rest, origin).map_err(|e| match e.key {
            Some(k) => invalid(format!("key `{k}`: {}", e.msg)),
            None => invalid(e.msg),
        })?;
        let shaping_keys = || SHAPING_KEYS.map(|k| format!("`{k}`")).join(", ");
        match (is_shaping, fk.pass_through) {
            (false, None)
                if rest.is_empty()
                    && !text.lines().any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')) =>
            {
                return Err(invalid(format!(
                    "the file is empty; a policy that shapes nothing says so: `{PASS_THROUGH_KEY} = true`"
                )))
            }
            (false, None) => {
                return Err(invalid(format!(
                    "no shaping section ({}): the gateway would forward every frame unshaped; say so with \
                     `{PASS_THROUGH_KEY} = true` (a file cut short before its classes is rejected this way)",
                    shaping_keys()
                )))
            }
            (false, Some(false)) => {
                return Err(invalid(format!(
                    "key `{PASS_THROUGH_KEY}`: false, but the file has no shaping section ({})",
                    shaping_keys()
                )))
            }
            (true, Some(true)) => {
                return Err(invalid(format!(
                    "key `{PASS_THROUGH_KEY}`: true, but the file has a shaping section; remove one of them"
                )))
            }
            _ => {}
        }
        Ok(Policy {
            non_ip: fk.non_ip,
            non_tcp: fk.non_tcp,
            malformed: fk.malformed,
            csum_not_ready: fk.csum_not_ready,
            bad_checksum: fk.bad_checksum,
            flows: sp.flows.clone(),
            shaping: is_shaping.then_some(sp),
        })
    }
    /// Load a policy file ([`read_policy_file`], then [`Policy::from_toml`]).
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = read_policy_file(path)?;
        Policy::from_toml(&text, &path.display().to_string())
    }

    /// What `ackshape validate --policy` prints for this policy, loaded from `file`: what the
    /// shaping section will do (or that there is none and every frame is forwarded unshaped),
    /// and what happens to the frames the gateway does not shape.
    pub fn summary(&self, file: &str) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let action = |a: FrameAction| format!("{a:?}").to_lowercase();
        match &self.shaping {
            Some(sp) => {
                let _ = writeln!(s, "{file}: valid gateway policy");
                s += &sp.describe();
            }
            None => {
                let _ = writeln!(
                    s,
                    "{file}: valid gateway policy, with no shaping section: the gateway forwards every frame unshaped"
                );
                let f = &self.flows;
                let _ = writeln!(
                    s,
                    "flows: at most {}, idle after {} s, embryonic after {} s",
                    f.max_flows, f.idle_timeout_s, f.embryonic_timeout_s
                );
            }
        }
        let _ = writeln!(
            s,
            "frames (live): non_ip {}, non_tcp {}, malformed {}, csum_not_ready {}, bad_checksum {}",
            action(self.non_ip),
            action(self.non_tcp),
            action(self.malformed),
            action(self.csum_not_ready),
            action(self.bad_checksum)
        );
        s
    }

    /// What in the shaping section is valid but probably not meant
    /// ([`ShapingPolicy::warnings`]).
    pub fn warnings(&self) -> Vec<PolicyWarning> {
        self.shaping.as_ref().map(|s| s.warnings()).unwrap_or_default()
    }

    /// Log [`Self::warnings`] (`tracing`, warn level) for the file at `path`: the gateway does
    /// this when it loads a policy and after each reload that takes effect.
    pub fn log_warnings(&self, path: &Path) {
        for w in self.warnings() {
            tracing::warn!("policy {}: {w}", path.display());
        }
    }

    /// One line on what the policy does, for the gateway's start and reload log lines.
    pub fn headline(&self) -> String {
        match &self.shaping {
            None => "no shaping section: pass-through".into(),
            Some(s) => s.headline(),
        }
    }
}

/// Read a policy file without ever blocking on it and without taking a file in the middle of
/// being written: it must be a regular file (a FIFO or a device is refused, not opened for a
/// blocking read), at most [`MAX_POLICY_BYTES`], unchanged in size and modification time while
/// it is read, and, unless empty, end with a newline (a write cut short usually ends mid-line).
/// Write a new policy to a temporary file and rename it over the old one.
pub fn read_policy_file(path: &Path) -> Result<String, PolicyError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let ps = path.display().to_string();
    let io = |source: std::io::Error| PolicyError::Io { path: ps.clone(), source };
    let invalid = |msg: String| PolicyError::Invalid { path: ps.clone(), msg };
    let not_regular = |m: &std::fs::Metadata| {
        invalid(format!(
            "not a regular file ({}): write the policy to a file",
            if m.file_type().is_dir() { "a directory" } else { "a FIFO, socket or device" }
        ))
    };
    let before = std::fs::metadata(path).map_err(io)?;
    if !before.is_file() {
        return Err(not_regular(&before));
    }
    // O_NONBLOCK: if the path was swapped for a FIFO since, the open does not wait for a writer.
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    if meta.len() > MAX_POLICY_BYTES {
        return Err(invalid(format!("{} bytes, more than the {MAX_POLICY_BYTES} a policy may have", meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_POLICY_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    let after = std::fs::metadata(path).map_err(io)?;
    let changed =
        |a: &std::fs::Metadata, b: &std::fs::Metadata| a.len() != b.len() || a.modified().ok() != b.modified().ok();
    if bytes.len() as u64 != meta.len() || changed(&meta, &after) {
        return Err(invalid(
            "the file changed while it was read (a write in progress?): write the new policy to a temporary \
             file and rename it over this one"
                .into(),
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| invalid(format!("not UTF-8 text (at byte {})", e.utf8_error().valid_up_to())))?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(invalid(
            "the file does not end with a newline: it looks cut short (a write in progress?); write the new \
             policy to a temporary file and rename it over this one"
                .into(),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_ok_and_defaults() {
        let p =
            Policy::from_toml("pass_through = true\nnon_ip = \"drop\"\n[flows]\nmax_flows = 10\n", "t.toml").unwrap();
        assert_eq!(p.non_ip, FrameAction::Drop);
        assert_eq!(p.non_tcp, FrameAction::Forward);
        assert_eq!(p.flows.max_flows, 10);
        assert_eq!(Policy::from_toml("pass_through = true\n", "e").unwrap(), Policy::default());
    }

    #[test]
    fn bad_policies_name_file_and_key() {
        let e = Policy::from_toml("non_ip = \"maybe\"", "p.toml").unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("non_ip"), "{e}");
        let e = Policy::from_toml("[flows]\nmax_flows = 0", "p.toml").unwrap_err().to_string();
        assert!(e.contains("flows.max_flows"), "{e}");
        let e = Policy::from_toml("bogus = 1", "p.toml").unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
        let e = Policy::from_toml(
            "non_ip = \"drop\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\nceil = \"1kbit/s\"\n",
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("p.toml") && e.contains("class[0].ceil"), "{e}");
        let e = Policy::from_toml("non_ip = [", "p.toml").unwrap_err().to_string();
        assert!(e.contains("p.toml") && e.contains("line 1"), "{e}");
    }

    #[test]
    fn every_toml_example_in_docs_policy_md_loads() {
        let full = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/policy.md")).unwrap();
        let doc = full.clone();
        // The "Tap policy" section's examples are `ackshape tap` policies (a core TapSpec).
        let mut tap_blocks = 0;
        let doc: String = doc
            .split("\n## ")
            .filter(|section| {
                if !section.starts_with("Tap policy") {
                    return true;
                }
                for block in section.split("```toml").skip(1).map(|b| b.split("```").next().unwrap()) {
                    ackshape_format::tap::from_toml(block)
                        .unwrap_or_else(|e| panic!("docs/policy.md tap example: {e:?}"));
                    tap_blocks += 1;
                }
                false
            })
            .collect::<Vec<_>>()
            .join("\n## ");
        assert!(tap_blocks >= 1, "docs/policy.md has a tap policy example");
        let blocks: Vec<&str> = doc.split("```toml").skip(1).map(|b| b.split("```").next().unwrap()).collect();
        assert!(blocks.len() >= 3, "docs/policy.md has its examples");
        let mut shaping = 0;
        for (i, block) in blocks.iter().enumerate() {
            let p = Policy::from_toml(block, &format!("docs/policy.md block {i}")).unwrap_or_else(|e| panic!("{e}"));
            shaping += p.shaping.is_some() as usize;
        }
        assert!(shaping >= 3, "{shaping} shaping examples");
        // The first example sets frame handling and the flow table as well.
        let p = Policy::from_toml(blocks[0], "docs/policy.md").unwrap();
        assert_eq!(p.flows.max_flows, 20000);
        assert_eq!(p.malformed, FrameAction::Drop);
        let sp = p.shaping.expect("shapes");
        assert_eq!(sp.classes.len(), 4);
        // "Checking a policy" shows `ackshape validate --policy` on that example: the summary
        // there is what `describe` prints now.
        let shown = full.split("$ ackshape validate --policy office.toml\n").nth(1).expect("the validate example");
        let shown = shown.split("```").next().unwrap();
        for line in sp.describe().lines() {
            assert!(shown.lines().any(|l| l == line), "docs/policy.md's validate example lacks {line:?}");
        }
        assert!(sp.warnings().is_empty());
    }

    #[test]
    fn headline_counts_classes_and_rules() {
        assert_eq!(
            Policy::from_toml("pass_through = true", "e").unwrap().headline(),
            "no shaping section: pass-through"
        );
        let p = Policy::from_toml(
            "[link]\ninbound = \"5Mbit/s\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[rule]]\nclass = \"a\"\ndirection = \"inbound\"\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(p.headline(), "1 class, 1 rule, outbound unlimited, inbound 5Mbit/s");
        let p = Policy::from_toml(
            "[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n[[class]]\nname = \"b\"\nrate = \"1Mbit/s\"\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(p.headline(), "2 classes, 0 rules, outbound unlimited, inbound unlimited");
    }

    #[test]
    fn shaping_sections_make_a_shaping_policy() {
        let text = r#"
non_tcp = "drop"
default_class = "bulk"
[link]
outbound = "10Mbit/s"
[[class]]
name = "bulk"
rate = "8Mbit/s"
ceil = "10Mbit/s"
mechanism = { kind = "postack" }
[flows]
max_flows = 1000
"#;
        let p = Policy::from_toml(text, "g.toml").unwrap();
        assert_eq!(p.non_tcp, FrameAction::Drop);
        assert_eq!(p.flows.max_flows, 1000);
        let s = p.shaping.expect("shaping policy");
        assert_eq!(s.classes.len(), 1);
        assert_eq!(s.link_bps[0], Some(10_000_000));
        assert_eq!(s.flows.max_flows, 1000);
        // [flows] alone is not a shaping policy.
        assert!(Policy::from_toml("pass_through = true\n[flows]\nmax_flows = 5\n", "f.toml")
            .unwrap()
            .shaping
            .is_none());
    }

    #[test]
    fn pass_through_is_an_explicit_statement() {
        for (text, want) in [
            ("", "the file is empty"),
            ("# only a comment\n\n", "the file is empty"),
            ("non_ip = \"drop\"\n", "no shaping section"),
            ("[flows]\nmax_flows = 5\n", "say so with `pass_through = true`"),
            ("pass_through = false\n", "key `pass_through`: false"),
            (
                "pass_through = true\ndefault_class = \"a\"\n[[class]]\nname = \"a\"\nrate = \"1Mbit/s\"\n",
                "remove one of them",
            ),
        ] {
            let e = Policy::from_toml(text, "p.toml").unwrap_err().to_string();
            assert!(e.starts_with("policy p.toml: ") && e.contains(want), "{text:?}: {e}");
        }
        assert!(Policy::from_toml("pass_through = true\nnon_ip = \"drop\"\n", "p.toml").unwrap().shaping.is_none());
    }

    #[test]
    fn reading_refuses_fifos_truncated_and_changing_files_without_blocking() {
        let dir = std::env::temp_dir().join(format!("acks-polread-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.toml");
        let _ = std::fs::remove_file(&fifo);
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let t0 = std::time::Instant::now();
        let e = Policy::load(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file") && e.contains("FIFO"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(1), "{:?}", t0.elapsed());
        let cut = dir.join("cut.toml");
        std::fs::write(&cut, "default_class = \"a\"\n[[class]]\nname = \"a\"\nrate = \"1Mb").unwrap();
        let e = Policy::load(&cut).unwrap_err().to_string();
        assert!(e.contains("does not end with a newline"), "{e}");
        // Cut at a line boundary before its first class: no shaping section, no pass-through.
        std::fs::write(&cut, "non_tcp = \"forward\"\n").unwrap();
        let e = Policy::load(&cut).unwrap_err().to_string();
        assert!(e.contains("no shaping section"), "{e}");
        std::fs::write(&cut, "").unwrap();
        let e = Policy::load(&cut).unwrap_err().to_string();
        assert!(e.contains("the file is empty"), "{e}");
        let e = Policy::load(&dir).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
