//! What the paper 000 and 001 experiments share: the shaping schemes as one list, scenario variants
//! built from an experiment file, a parallel runner and small statistics.
//!
//! An experiment file is a runnable scenario (the base point) with a `[paper]` table: the paper's
//! values, sweep values, tolerances, assumptions and, per scheme that needs them, its settings
//! (`red = { kind = "red", … }`, `tcr = { kind = "tcr", … }`). A [`Scheme`] turns the base into
//! "this scheme shapes link L at node N to rate R with a FIFO of F packets"; adding a scheme is one
//! more entry in [`schemes`]. A scheme whose building block is not in this build (e.g. the gateway
//! or a mechanism still being written) reports what it waits for; the experiments skip it and say
//! so in their notes.

use crate::{Ctx, ExpOutput, Experiment, Table};
use ackshape_sim::metrics::Summary;
use ackshape_sim::scenario::Scenario;
use serde_json::Value as J;

pub type Tbl = toml::Table;

/// An experiment file: the scenario table and its `[paper]` section.
pub struct ExpFile {
    pub file: &'static str,
    pub base: Tbl,
    pub paper: Tbl,
    pub quick: bool,
    /// The vacuity check ([`crate::Ctx::mechanism_off`]): schemes build without their mechanism.
    pub off: bool,
}

fn type_name(v: &toml::Value) -> &'static str {
    v.type_str()
}

impl ExpFile {
    /// Parse and validate `exp`'s file for a run with `ctx`'s settings.
    pub fn load_for(exp: &Experiment, ctx: &Ctx) -> Result<ExpFile, String> {
        let mut f = Self::load(exp, ctx.quick)?;
        f.off = ctx.mechanism_off;
        Ok(f)
    }

    /// Parse and validate `exp`'s file (the base must be a valid scenario).
    pub fn load(exp: &Experiment, quick: bool) -> Result<ExpFile, String> {
        Scenario::parse(exp.text, exp.file).map_err(|e| e.to_string())?;
        let mut base: Tbl = exp.text.parse().map_err(|e| format!("{}: {e}", exp.file))?;
        let paper = match base.remove("paper") {
            Some(toml::Value::Table(t)) => t,
            _ => {
                return Err(format!("{}: key `paper`: expected a [paper] table with the experiment's values", exp.file))
            }
        };
        Ok(ExpFile { file: exp.file, base, paper, quick, off: false })
    }

    /// `paper.KEY` (dotted), or in quick mode `paper.quick.KEY` when present.
    pub fn get(&self, key: &str) -> Option<&toml::Value> {
        if self.quick {
            if let Some(v) = lookup(self.paper.get("quick").and_then(|q| q.as_table()), key) {
                return Some(v);
            }
        }
        lookup(Some(&self.paper), key)
    }

    pub fn err(&self, key: &str, expected: &str, got: Option<&toml::Value>) -> String {
        match got {
            Some(v) => format!("{}: key `paper.{key}`: expected {expected}, got {} {v}", self.file, type_name(v)),
            None => format!("{}: key `paper.{key}`: expected {expected} (the key is missing)", self.file),
        }
    }

    pub fn f64(&self, key: &str) -> Result<f64, String> {
        match self.get(key) {
            Some(toml::Value::Float(f)) => Ok(*f),
            Some(toml::Value::Integer(i)) => Ok(*i as f64),
            other => Err(self.err(key, "a number", other)),
        }
    }
    pub fn f64_or(&self, key: &str, d: f64) -> Result<f64, String> {
        if self.get(key).is_none() {
            Ok(d)
        } else {
            self.f64(key)
        }
    }
    pub fn usize(&self, key: &str) -> Result<usize, String> {
        match self.get(key) {
            Some(toml::Value::Integer(i)) if *i >= 0 => Ok(*i as usize),
            other => Err(self.err(key, "a non-negative integer", other)),
        }
    }
    pub fn usize_or(&self, key: &str, d: usize) -> Result<usize, String> {
        if self.get(key).is_none() {
            Ok(d)
        } else {
            self.usize(key)
        }
    }
    pub fn str(&self, key: &str) -> Result<&str, String> {
        match self.get(key) {
            Some(toml::Value::String(s)) => Ok(s),
            other => Err(self.err(key, "a string", other)),
        }
    }
    pub fn f64s(&self, key: &str) -> Result<Vec<f64>, String> {
        match self.get(key) {
            Some(toml::Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| match v {
                    toml::Value::Float(f) => Ok(*f),
                    toml::Value::Integer(i) => Ok(*i as f64),
                    _ => Err(self.err(key, "an array of numbers", Some(v))),
                })
                .collect(),
            other => Err(self.err(key, "a non-empty array of numbers", other)),
        }
    }
    pub fn usizes(&self, key: &str) -> Result<Vec<usize>, String> {
        match self.get(key) {
            Some(toml::Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| match v {
                    toml::Value::Integer(i) if *i > 0 => Ok(*i as usize),
                    _ => Err(self.err(key, "an array of positive integers", Some(v))),
                })
                .collect(),
            other => Err(self.err(key, "a non-empty array of positive integers", other)),
        }
    }
    pub fn strs(&self, key: &str) -> Result<Vec<String>, String> {
        match self.get(key) {
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| self.err(key, "an array of strings", Some(v))))
                .collect(),
            other => Err(self.err(key, "an array of strings", other)),
        }
    }
    pub fn table(&self, key: &str) -> Result<&Tbl, String> {
        match self.get(key) {
            Some(toml::Value::Table(t)) => Ok(t),
            other => Err(self.err(key, "a table", other)),
        }
    }
    /// A rate with its unit (`"500KB/s"`), in bits/s.
    pub fn rate_bps(&self, key: &str) -> Result<u64, String> {
        let s = self.str(key)?;
        ackshape_core::units::parse_rate(s).map(|r| r.0).map_err(|e| format!("{}: key `paper.{key}`: {e}", self.file))
    }
    /// The list `paper.assumptions` (free text with trap IDs), for the report.
    pub fn assumptions(&self) -> Vec<String> {
        self.strs("assumptions").unwrap_or_default()
    }
    /// The schemes `paper.schemes` names, each with what it waits for if it cannot run in this build.
    pub fn schemes(&self) -> Result<Vec<(Scheme, Option<String>)>, String> {
        let mut out = Vec::new();
        for id in self.strs("schemes")? {
            let s = scheme(&id).ok_or_else(|| {
                let known: Vec<String> = schemes().into_iter().map(|s| s.id).collect();
                format!("{}: key `paper.schemes`: unknown scheme {id:?}; known: {}", self.file, known.join(", "))
            })?;
            let why = (s.needs)();
            out.push((s, why));
        }
        Ok(out)
    }
    /// A duration of the base scenario (e.g. `topology.receiver_access.delay`), 0 when absent.
    pub fn base_secs(&self, path: &str) -> Result<f64, String> {
        match lookup(Some(&self.base), path) {
            None => Ok(0.0),
            Some(toml::Value::String(s)) => ackshape_core::units::parse_duration(s)
                .map(|d| d.as_secs_f64())
                .map_err(|e| format!("{}: key `{path}`: {e}", self.file)),
            Some(v) => Err(format!("{}: key `{path}`: expected a duration, got {v}", self.file)),
        }
    }
    /// IP packet size of full segments, from `[tcp]` (mss, timestamps).
    pub fn packet_bytes(&self) -> f64 {
        let tcp = self.base.get("tcp").and_then(|t| t.as_table());
        let mss = tcp.and_then(|t| t.get("mss")).and_then(|v| v.as_integer()).unwrap_or(1448) as f64;
        let ts = tcp.and_then(|t| t.get("timestamps")).and_then(|v| v.as_bool()).unwrap_or(true);
        mss + 40.0 + if ts { 12.0 } else { 0.0 }
    }
    pub fn mss(&self) -> f64 {
        let tcp = self.base.get("tcp").and_then(|t| t.as_table());
        tcp.and_then(|t| t.get("mss")).and_then(|v| v.as_integer()).unwrap_or(1448) as f64
    }
    /// `paper.KEY` as numbers, ignoring quick-mode overrides (e.g. the paper's full speed list).
    pub fn full_f64s(&self, key: &str) -> Result<Vec<f64>, String> {
        let q = ExpFile { file: self.file, base: Tbl::new(), paper: self.paper.clone(), quick: false, off: false };
        q.f64s(key)
    }
    /// The measurement window's start (the variant's `warmup`, quick mode included), seconds.
    pub fn warmup_secs(&self) -> Result<f64, String> {
        match self.variant().t.get("warmup") {
            None => Ok(0.0),
            Some(toml::Value::String(s)) => ackshape_core::units::parse_duration(s)
                .map(|d| d.as_secs_f64())
                .map_err(|e| format!("{}: key `warmup`: {e}", self.file)),
            Some(v) => Err(format!("{}: key `warmup`: expected a duration, got {v}", self.file)),
        }
    }
    /// A fresh variant of the base scenario (quick mode: `paper.quick.duration`/`warmup` applied).
    pub fn variant(&self) -> Variant {
        let mut v = Variant { t: self.base.clone() };
        if self.quick {
            if let Some(q) = self.paper.get("quick").and_then(|q| q.as_table()) {
                for k in ["duration", "warmup"] {
                    if let Some(x) = q.get(k) {
                        v.t.insert(k.into(), x.clone());
                    }
                }
            }
        }
        v
    }
}

fn lookup<'a>(t: Option<&'a Tbl>, key: &str) -> Option<&'a toml::Value> {
    let mut cur = t?;
    let mut parts = key.split('.').peekable();
    while let Some(p) = parts.next() {
        let v = cur.get(p)?;
        if parts.peek().is_none() {
            return Some(v);
        }
        cur = v.as_table()?;
    }
    None
}

/// One scenario built from an experiment file.
#[derive(Clone, Debug)]
pub struct Variant {
    pub t: Tbl,
}

impl Variant {
    /// Set a dotted key (`topology.bottleneck.qdisc`, `flows[0].count`), creating tables.
    pub fn set(&mut self, path: &str, v: impl Into<toml::Value>) {
        let parts: Vec<&str> = path.split('.').collect();
        let mut cur = &mut self.t;
        for (i, p) in parts.iter().enumerate() {
            let (name, idx) = match p.split_once('[') {
                Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
                None => (*p, None),
            };
            let last = i + 1 == parts.len();
            match idx {
                None if last => {
                    cur.insert(name.to_string(), v.into());
                    return;
                }
                None => {
                    let e = cur.entry(name.to_string()).or_insert_with(|| toml::Value::Table(Tbl::new()));
                    if !e.is_table() {
                        *e = toml::Value::Table(Tbl::new());
                    }
                    cur = e.as_table_mut().expect("table");
                }
                Some(k) => {
                    let arr = cur
                        .get_mut(name)
                        .and_then(|a| a.as_array_mut())
                        .unwrap_or_else(|| panic!("variant: `{name}` is not an array"));
                    let e = &mut arr[k];
                    if last {
                        *e = v.into();
                        return;
                    }
                    cur = e.as_table_mut().unwrap_or_else(|| panic!("variant: `{name}[{k}]` is not a table"));
                }
            }
        }
    }
    pub fn remove(&mut self, path: &str) {
        let (head, last) = match path.rsplit_once('.') {
            Some((h, l)) => (Some(h), l),
            None => (None, path),
        };
        let t = match head {
            None => Some(&mut self.t),
            Some(h) => {
                let mut cur = Some(&mut self.t);
                for p in h.split('.') {
                    cur = cur.and_then(|c| c.get_mut(p)).and_then(|v| v.as_table_mut());
                }
                cur
            }
        };
        if let Some(t) = t {
            t.remove(last);
        }
    }
    /// Append a `[[middlebox]]`.
    pub fn add_middlebox(&mut self, mb: Tbl) {
        let arr = self.t.entry("middlebox").or_insert_with(|| toml::Value::Array(Vec::new()));
        arr.as_array_mut().expect("middlebox is an array").push(toml::Value::Table(mb));
    }
    pub fn text(&self) -> String {
        toml::to_string(&self.t).expect("a TOML table serialises")
    }
}

/// A rate as scenario text.
pub fn rate_str(bps: u64) -> String {
    format!("{bps}bit/s")
}

/// Duration as scenario text.
pub fn secs_str(s: f64) -> String {
    format!("{}us", (s * 1e6).round() as u64)
}

pub fn tbl(pairs: &[(&str, toml::Value)]) -> Tbl {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

// ------------------------------------------------------------------------------------- schemes

/// Where and how much a scheme shapes.
pub struct Shape<'a> {
    /// Dotted key of the link whose forward direction is shaped (`topology.bottleneck`).
    pub link: &'a str,
    /// Node and link direction of a gateway box (`left`, `bottleneck`).
    pub node: &'a str,
    pub wan: &'a str,
    /// Class rate (bits/s of IP packets).
    pub rate_bps: u64,
    /// Class FIFO (PCDQ) or per-flow queue limit, packets.
    pub fifo_pkts: usize,
    /// The experiment file (per-scheme settings: `paper.<scheme id>`).
    pub file: &'a ExpFile,
}

/// A shaping scheme: one entry of [`schemes`].
#[derive(Clone)]
pub struct Scheme {
    /// `red`, `tcr`, … or a variant `tcr/per-flow` whose settings are `paper."tcr/per-flow"`.
    pub id: String,
    pub label: String,
    /// Shape the variant; the third argument is the key of the scheme's settings in `[paper]`.
    apply: fn(&mut Variant, &Shape, &str) -> Result<(), String>,
    /// What the scheme waits for, if this build lacks it.
    pub needs: fn() -> Option<String>,
}

impl Scheme {
    /// Shape the variant `v` as this scheme does. The scheme's settings may also carry
    /// `tcp = { … }`: keys of the scenario's `[tcp]` that this scheme's runs override (e.g. a
    /// sensitivity variant with another sender, `"pfq/tahoe" = { tcp = { cc = "tahoe" } }`).
    pub fn apply(&self, v: &mut Variant, s: &Shape) -> Result<(), String> {
        if s.file.off {
            // The vacuity check: TCR and PostACK become the class alone (CBQ), RED and ECN a
            // drop-tail FIFO of the same size; the other schemes have no mechanism to switch off.
            match self.id.split('/').next().unwrap_or("") {
                "tcr" | "postack" => return apply_class_fifo(v, s, "class-fifo"),
                "red" | "ecn" => {
                    let limit = s.file.table(&self.id).ok().and_then(|t| t.get("limit_pkts")).cloned();
                    let mut q = tbl(&[("kind", "fifo".into())]);
                    q.insert("limit_pkts".into(), limit.unwrap_or((s.fifo_pkts as i64).into()));
                    v.set(&format!("{}.qdisc", s.link), toml::Value::Table(q));
                    plain_reverse(v, s);
                    return Ok(());
                }
                _ => {}
            }
        }
        (self.apply)(v, s, &self.id)?;
        if let Some(toml::Value::Table(t)) = s.file.get(&self.id) {
            match t.get("tcp") {
                None => {}
                Some(toml::Value::Table(tcp)) => {
                    for (k, x) in tcp {
                        v.set(&format!("tcp.{k}"), x.clone());
                    }
                }
                Some(other) => {
                    return Err(s.file.err(&format!("{}.tcp", self.id), "a table of [tcp] keys", Some(other)))
                }
            }
        }
        Ok(())
    }
}

fn always() -> Option<String> {
    None
}

fn has_gateway() -> bool {
    ackshape_sim::middlebox::KINDS.contains(&"gateway")
}

fn needs_gateway() -> Option<String> {
    (!has_gateway()).then(|| "the gateway middlebox (`[[middlebox]] kind = \"gateway\"`)".to_string())
}

fn needs_mechanism(kind: &str) -> Option<String> {
    needs_gateway().or_else(|| {
        (!ackshape_core::shape::ackmech::KINDS.contains(&kind))
            .then(|| format!("the {kind} mechanism (`mechanism = {{ kind = \"{kind}\" }}`)"))
    })
}

/// Every scheme, in the order reports list them.
pub fn schemes() -> Vec<Scheme> {
    let s = |id: &str,
             label: &str,
             apply: fn(&mut Variant, &Shape, &str) -> Result<(), String>,
             needs: fn() -> Option<String>| Scheme { id: id.into(), label: label.into(), apply, needs };
    vec![
        s("unshaped", "no class", |_, _, _| Ok(()), always),
        s("class-fifo", "CBQ (class FIFO)", apply_class_fifo, always),
        s("pfq", "PFQ (per-flow token buckets)", |v, s, _| apply_pfq(v, s), always),
        s("fifo", "drop-tail FIFO", |v, s, _| apply_fifo(v, s), always),
        s("red", "RED", |v, s, k| apply_qdisc_from_file(v, s, k, false), always),
        s("ecn", "ECN", |v, s, k| apply_qdisc_from_file(v, s, k, true), always),
        s("tcr", "TCR", apply_mechanism, || needs_mechanism("tcr")),
        s("postack", "PostACK", apply_mechanism, || needs_mechanism("postack")),
    ]
}

/// A scheme by id; `base/variant` is `base` with its settings read from `paper."base/variant"`.
pub fn scheme(id: &str) -> Option<Scheme> {
    let (base, variant) = match id.split_once('/') {
        Some((b, v)) => (b, Some(v)),
        None => (id, None),
    };
    let mut s = schemes().into_iter().find(|s| s.id == base)?;
    if let Some(v) = variant {
        s.id = id.to_string();
        s.label = format!("{} ({v})", s.label);
    }
    Some(s)
}

/// The reverse (ACK) direction of a shaped link keeps a plain FIFO.
fn plain_reverse(v: &mut Variant, s: &Shape) {
    v.set(
        &format!("{}.reverse.qdisc", s.link),
        toml::Value::Table(tbl(&[("kind", "fifo".into()), ("limit_pkts", 10_000i64.into())])),
    );
}

fn apply_fifo(v: &mut Variant, s: &Shape) -> Result<(), String> {
    v.set(&format!("{}.queue", s.link), format!("{}pkt", s.fifo_pkts));
    Ok(())
}

/// Class-only shaping; a variant (`class-fifo/x`) may set `paper."class-fifo/x" = { class = {…} }`.
fn apply_class_fifo(v: &mut Variant, s: &Shape, key: &str) -> Result<(), String> {
    if has_gateway() {
        let class = match s.file.get(key) {
            None => None,
            Some(_) => class_keys(s, key, s.file.table(key)?)?,
        };
        return apply_gateway(v, s, None, None, class);
    }
    // Until the gateway exists: a token-bucket class rate over a FIFO of the class's size.
    v.set(
        &format!("{}.qdisc", s.link),
        toml::Value::Table(tbl(&[
            ("kind", "tbf".into()),
            ("rate", rate_str(s.rate_bps).into()),
            ("burst", "3000B".into()),
            ("limit_pkts", (s.fifo_pkts as i64).into()),
        ])),
    );
    plain_reverse(v, s);
    Ok(())
}

fn apply_pfq(v: &mut Variant, s: &Shape) -> Result<(), String> {
    v.set(
        &format!("{}.qdisc", s.link),
        toml::Value::Table(tbl(&[
            ("kind", "pfq".into()),
            ("rate", rate_str(s.rate_bps).into()),
            ("burst", "1500B".into()),
            ("flow_limit_pkts", (s.fifo_pkts as i64).into()),
        ])),
    );
    plain_reverse(v, s);
    Ok(())
}

fn apply_qdisc_from_file(v: &mut Variant, s: &Shape, key: &str, ecn: bool) -> Result<(), String> {
    let q = s.file.table(key)?.clone();
    v.set(&format!("{}.qdisc", s.link), toml::Value::Table(q));
    plain_reverse(v, s);
    if ecn {
        v.set("tcp.ecn", true);
    }
    Ok(())
}

/// The scheme's settings `paper.KEY`: a mechanism table (`{ kind = "tcr", … }`), or
/// `{ mechanism = { … }, qdisc = { … }, class = { … } }` when the class also gets a leaf
/// discipline or other class keys (e.g. `burst`).
fn apply_mechanism(v: &mut Variant, s: &Shape, key: &str) -> Result<(), String> {
    let t = s.file.table(key)?.clone();
    let class = if t.contains_key("kind") { None } else { class_keys(s, key, &t)? };
    let (m, q) = if t.contains_key("kind") {
        (t, None)
    } else {
        let m = t.get("mechanism").and_then(|m| m.as_table()).cloned();
        let q = t.get("qdisc").and_then(|m| m.as_table()).cloned();
        match m {
            Some(m) => (m, q),
            None => {
                return Err(s.file.err(key, "a mechanism table with `kind`, or { mechanism = {…}, qdisc = {…} }", None))
            }
        }
    };
    apply_gateway(v, s, Some(m), q, class)
}

/// The optional `class = { … }` of a scheme's settings: extra keys of the class (e.g. `burst`).
fn class_keys(s: &Shape, key: &str, t: &Tbl) -> Result<Option<Tbl>, String> {
    match t.get("class") {
        None => Ok(None),
        Some(toml::Value::Table(c)) => Ok(Some(c.clone())),
        Some(other) => {
            Err(s.file.err(&format!("{key}.class"), "a table of class keys (e.g. { burst = \"30000B\" })", Some(other)))
        }
    }
}

/// A gateway at `s.node` with one class of `s.rate_bps` and a FIFO of `s.fifo_pkts`, and the ACK
/// mechanism `mechanism` (None: class-only shaping). With a `pfq-drr` leaf the class's buffer of
/// `s.fifo_pkts` is the per-flow queues' (the PCDQ keeps one packet).
fn apply_gateway(
    v: &mut Variant,
    s: &Shape,
    mechanism: Option<Tbl>,
    qdisc: Option<Tbl>,
    extra: Option<Tbl>,
) -> Result<(), String> {
    let mut class = tbl(&[
        ("name", "shaped".into()),
        ("rate", rate_str(s.rate_bps).into()),
        ("queue", format!("{}pkt", s.fifo_pkts).into()),
    ]);
    if let Some(m) = mechanism {
        class.insert("mechanism".into(), toml::Value::Table(m));
    }
    // The class's token-bucket depth, for every scheme (`paper.class_burst`; a scheme's own
    // `class = { burst = … }` wins).
    if let Some(b) = s.file.get("class_burst") {
        class.insert("burst".into(), b.clone());
    }
    for (k, x) in extra.into_iter().flatten() {
        class.insert(k, x);
    }
    if let Some(mut q) = qdisc {
        if q.get("kind").and_then(|k| k.as_str()) == Some("pfq-drr") {
            class.insert("queue".into(), "1pkt".into());
            q.entry("limit_pkts").or_insert((s.fifo_pkts as i64).into());
            q.entry("flow_limit_pkts").or_insert((s.fifo_pkts as i64).into());
        }
        class.insert("qdisc".into(), toml::Value::Table(q));
    }
    let rule = tbl(&[("class", "shaped".into())]);
    let policy = tbl(&[
        ("class", toml::Value::Array(vec![toml::Value::Table(class)])),
        ("rule", toml::Value::Array(vec![toml::Value::Table(rule)])),
    ]);
    let mut mb = tbl(&[
        ("node", s.node.into()),
        ("wan", s.wan.into()),
        ("kind", "gateway".into()),
        ("policy", toml::Value::Table(policy)),
    ]);
    // The gateway's class and buffer statistics cover the scenario's measurement window, as the
    // flows' metrics do (the start-up burst does not count).
    if let Some(w) = v.t.get("warmup").cloned() {
        mb.insert("warmup".into(), w);
    }
    v.add_middlebox(mb);
    Ok(())
}

// -------------------------------------------------------------------------------------- runner

/// One simulation to run.
pub struct Job {
    /// Names the run in errors (`class-fifo, 32 flows, FIFO 9`).
    pub label: String,
    pub variant: Variant,
    pub seed: u64,
    /// Keep the per-flow goodput time series.
    pub series: bool,
}

/// What a run produced.
pub struct Outcome {
    pub summary: Summary,
    /// (bin end s, flow, goodput bit/s), when the job asked for it.
    pub series: Vec<(f64, u32, f64)>,
}

/// Run every job on the runner's worker threads ([`Ctx::run_jobs_span`]); results in job order.
pub fn run_jobs(ctx: &mut Ctx, file: &str, jobs: &[Job]) -> Result<Vec<Outcome>, String> {
    let mut sims = Vec::with_capacity(jobs.len());
    for j in jobs {
        let sim = crate::SimJob::new(j.label.clone(), j.variant.t.clone(), file, j.seed)
            .map_err(|e| format!("{} ({}): {e}", file, j.label))?;
        sims.push(sim);
    }
    let keep: Vec<bool> = jobs.iter().map(|j| j.series).collect();
    let labels: Vec<String> = jobs.iter().map(|j| j.label.clone()).collect();
    // The extractor sees only the simulation; it keeps the series when any job asked for it
    // (cheap next to the run) and each outcome drops it unless its job wanted it.
    let any = keep.iter().any(|&k| k);
    let res = ctx.run_jobs_span(&sims, 0.0, 1.0, |sim, summary| Outcome {
        series: if any { sim.goodput_series() } else { Vec::new() },
        summary,
    });
    res.into_iter()
        .zip(keep)
        .zip(labels)
        .map(|((r, k), l)| {
            r.map(|mut o| {
                if !k {
                    o.series = Vec::new();
                }
                o
            })
            .map_err(|e| format!("{e} [{l}]"))
        })
        .collect()
}

/// A note on the runs' cost: how many, their summed run time and the slowest.
pub fn cost_note(jobs: &[Job], outs: &[Outcome]) -> String {
    let total: f64 = outs.iter().map(|o| o.summary.sim.wall_time_s).sum();
    let (i, slow) = outs.iter().enumerate().map(|(i, o)| (i, o.summary.sim.wall_time_s)).fold((0, 0.0), |a, b| {
        if b.1 > a.1 {
            b
        } else {
            a
        }
    });
    format!(
        "{} simulation runs, {:.1} s of run time in all (one core each); the slowest took {:.1} s ({}).",
        outs.len(),
        total,
        slow,
        jobs.get(i).map(|j| j.label.as_str()).unwrap_or("")
    )
}

// ------------------------------------------------------------------------------------- helpers

pub use ackshape_sim::stats::{mean, sem};

pub fn table(name: &str, columns: &[&str], rows: Vec<Vec<J>>) -> Table {
    Table { name: name.into(), columns: columns.iter().map(|c| c.to_string()).collect(), rows }
}

/// Round for tables (keeps CSVs readable and stable).
pub fn r(x: f64, digits: i32) -> J {
    let k = 10f64.powi(digits);
    J::from((x * k).round() / k)
}

/// Class-level metrics of a run: summed goodput (bytes/s) and the retransmission ratio.
pub fn class_goodput_bytes(s: &Summary) -> f64 {
    s.flows.iter().map(|f| f.goodput_bps).sum::<f64>() / 8.0
}

pub fn class_retx_ratio(s: &Summary) -> f64 {
    let sent: u64 = s.flows.iter().map(|f| f.data_packets_sent).sum();
    let retx: u64 = s.flows.iter().map(|f| f.retransmitted_packets).sum();
    if sent == 0 {
        0.0
    } else {
        retx as f64 / sent as f64
    }
}

/// Data packets dropped anywhere: link queues and gateway classes (whole run).
pub fn drops_anywhere(s: &Summary) -> u64 {
    let links: u64 = s.links.iter().map(|l| l.drops).sum();
    links
        + s.middleboxes
            .iter()
            .map(|m| gateway_classes(m).map(|c| c["drops"].as_u64().unwrap_or(0)).sum::<u64>())
            .sum::<u64>()
}

/// The class objects of a gateway box's stats (`stats.classes.NAME`).
pub fn gateway_classes(mb: &J) -> impl Iterator<Item = &J> {
    mb["stats"]["classes"].as_object().into_iter().flat_map(|o| o.values())
}

/// The gateway's buffer at the class (`stats.buffer`): data packets (avg, max) and ACKs held (avg, max).
pub fn gateway_buffer(s: &Summary) -> Option<(f64, f64, f64, f64)> {
    let b = s.middleboxes.iter().map(|m| &m["stats"]["buffer"]).find(|b| b.is_object())?;
    let g = |k: &str| b[k].as_f64().unwrap_or(0.0);
    Some((g("data_avg_pkts"), g("data_max_pkts"), g("acks_avg"), g("acks_max")))
}

/// What scheme `id`'s mechanism did in a run: TCR's ACKs paced plus windows rewritten, PostACK's ACKs
/// held, RED's early drops, ECN's marks (the base scheme before a `/variant`). `None` for schemes
/// without such a mechanism (no class, CBQ, PFQ, FIFO).
pub fn mechanism_activity(id: &str, s: &Summary) -> Option<f64> {
    let base = id.split('/').next().unwrap_or(id);
    let gw = |mech: &str, keys: &[&str]| -> f64 {
        s.middleboxes
            .iter()
            .flat_map(gateway_classes)
            .filter(|c| c["mechanism"] == mech)
            .flat_map(|c| c["mechanism_stats"].as_object().into_iter().flat_map(|o| o.values()))
            .map(|d| keys.iter().map(|k| d.pointer(k).and_then(|v| v.as_f64()).unwrap_or(0.0)).sum::<f64>())
            .sum()
    };
    let link = |key: &str| -> f64 { s.links.iter().map(|l| *l.qdisc_counters.get(key).unwrap_or(&0) as f64).sum() };
    match base {
        "tcr" => Some(gw("tcr", &["/acks_paced", "/window_rewrites"])),
        "postack" => Some(gw("postack", &["/counters/acks_queued"])),
        "red" => Some(link("red_early_drops")),
        "ecn" => Some(link("red_ecn_marks")),
        _ => None,
    }
}

/// Add every run's mechanism activity to `out`, by scheme ID (see [`mechanism_activity`]).
pub fn record_activity<'a>(out: &mut ExpOutput, runs: impl IntoIterator<Item = (&'a str, &'a Summary)>) {
    for (id, s) in runs {
        if let Some(n) = mechanism_activity(id, s) {
            out.act(id, n);
        }
    }
}

/// Per-bin goodput of one flow from a series, restricted to bins ending after `from_s`.
pub fn flow_bins(series: &[(f64, u32, f64)], flow: u32, from_s: f64) -> Vec<(f64, f64)> {
    series.iter().filter(|(t, f, _)| *f == flow && *t > from_s + 1e-9).map(|(t, _, g)| (*t, *g)).collect()
}

/// Notes for schemes this build cannot run.
pub fn missing_notes(schemes: &[(Scheme, Option<String>)]) -> Vec<String> {
    schemes
        .iter()
        .filter_map(|(s, why)| {
            why.as_ref()
                .map(|w| format!("{} was not run: this build lacks {w}; its columns and claims are left out.", s.label))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_set_creates_and_indexes() {
        let mut v = Variant { t: "a = 1\n[[flows]]\ncount = 1\n".parse().unwrap() };
        v.set("topology.bottleneck.qdisc", toml::Value::Table(tbl(&[("kind", "fifo".into())])));
        v.set("flows[0].count", 8i64);
        v.set("tcp.ecn", true);
        let t = v.text();
        let back: Tbl = t.parse().unwrap();
        assert_eq!(back["topology"]["bottleneck"]["qdisc"]["kind"].as_str(), Some("fifo"));
        assert_eq!(back["flows"][0]["count"].as_integer(), Some(8));
        assert_eq!(back["tcp"]["ecn"].as_bool(), Some(true));
        v.remove("topology.bottleneck.qdisc");
        assert!(v.t["topology"]["bottleneck"].get("qdisc").is_none());
    }

    #[test]
    fn scheme_settings_may_override_tcp_keys() {
        let paper: Tbl =
            "\"pfq/tahoe\" = { tcp = { cc = \"tahoe\", min_rto = \"1s\" } }\nbad = { tcp = 3 }\n".parse().unwrap();
        let file = ExpFile { file: "x.toml", base: Tbl::new(), paper, quick: false, off: false };
        let shape = |f| Shape {
            link: "topology.bottleneck",
            node: "left",
            wan: "bottleneck",
            rate_bps: 8_000_000,
            fifo_pkts: 10,
            file: f,
        };
        let mut v = Variant { t: "[tcp]\ncc = \"sack\"\n".parse().unwrap() };
        scheme("pfq/tahoe").unwrap().apply(&mut v, &shape(&file)).unwrap();
        assert_eq!(v.t["tcp"]["cc"].as_str(), Some("tahoe"));
        assert_eq!(v.t["tcp"]["min_rto"].as_str(), Some("1s"));
        assert_eq!(v.t["topology"]["bottleneck"]["qdisc"]["kind"].as_str(), Some("pfq"));
        // Without settings the scenario's [tcp] stays; a `tcp` that is not a table is an error naming it.
        let mut w = Variant { t: "[tcp]\ncc = \"sack\"\n".parse().unwrap() };
        scheme("pfq").unwrap().apply(&mut w, &shape(&file)).unwrap();
        assert_eq!(w.t["tcp"]["cc"].as_str(), Some("sack"));
        let e = scheme("pfq/bad").map(|mut s| {
            s.id = "bad".into();
            s.apply(&mut w, &shape(&file))
        });
        let e = e.unwrap().unwrap_err();
        assert!(e.contains("x.toml") && e.contains("paper.bad.tcp"), "{e}");
    }

    #[test]
    fn every_scheme_id_is_unique() {
        let all = schemes();
        let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
        let mut d = ids.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), ids.len());
    }
}
