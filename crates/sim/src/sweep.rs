//! Parameter sweeps: one scenario with some of its keys set to several values, each point run over
//! several seeds, reduced to a mean and a standard error per metric.
//!
//! **What it is.** The part of `ackshape sweep` (and `ackshape run --set`) that does not touch the
//! terminal: parsing `KEY=V1,V2,…` settings, writing them into the scenario's TOML table (so the
//! scenario's own validation names a bad key), expanding the points, running them in parallel with
//! results in a fixed order, and the statistics and files.
//!
//! **What it is not.** Not a paper reproduction (`ackshape reproduce`, crate `ackshape-repro`, checks claims against stated values);
//! a sweep only measures. It sets keys of the scenario document; it does not know what they mean.

use crate::keypath::{path_steps, set_path};
use crate::metrics::Summary;
use crate::parallel::run_parallel;
use crate::plot::{xy_chart, Curve, Plot, XyChart};
use crate::run::{csv_field, RunError};
use crate::scenario::{Scenario, ScenarioError};
use crate::stats::mean_sd;
use crate::store::Store;
use crate::world::{RunOptions, Sim};
use ackshape_core::tcp::TcpStats;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// A `--set KEY=V1,V2,…`: a dotted key path into the scenario and the values to give it.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// The key as written, e.g. `topology.bottleneck.rate` or `flows[0].count`.
    pub key: String,
    pub values: Vec<toml::Value>,
    /// Each value as written (for tables, CSV columns and plot labels).
    pub texts: Vec<String>,
}

/// Parse `KEY=V1,V2,…`. Values are TOML literals (`5`, `0.01`, `true`, `"x"`, `{ kind = "red" }`);
/// anything that is not one is a string, so `10Mbit/s` and `afvq` need no quotes. Values are
/// separated by commas outside quotes, braces and brackets.
pub fn parse_setting(spec: &str) -> Result<Setting, String> {
    let Some((key, vals)) = spec.split_once('=') else {
        return Err(format!(
            "--set {spec:?}: expected KEY=VALUE[,VALUE…], e.g. topology.bottleneck.rate=5Mbit/s,10Mbit/s"
        ));
    };
    let key = key.trim();
    // Elements of an array may be named (`topology.links[access]`): checked as an index here,
    // resolved against the scenario by [`resolve_names`].
    path_steps(&names_as_indices(key)).map_err(|m| format!("--set {spec:?}: {m}"))?;
    let texts: Vec<String> = split_top_level(vals).into_iter().map(|s| s.trim().to_string()).collect();
    if texts.iter().any(|t| t.is_empty()) {
        return Err(format!("--set {spec:?}: expected a value after `=` and between commas"));
    }
    let values = texts.iter().map(|t| parse_value(t)).collect();
    Ok(Setting { key: key.to_string(), values, texts })
}

/// `key` with every `[name]` written as `[0]`, to check its syntax.
fn names_as_indices(key: &str) -> String {
    let mut out = String::new();
    let mut rest = key;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else { break };
        out.push_str(&rest[..open]);
        let inner = &rest[open + 1..close];
        let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if !inner.is_empty() && !inner.chars().all(|c| c.is_ascii_digit()) && inner.chars().all(name_char) {
            out.push_str("[0]");
        } else {
            out.push_str(&rest[open..=close]);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `key` with each named element (`topology.links[access]`) replaced by its index in `doc`
/// (`topology.links[1]`): the element of that array whose `name` is the given one. An unknown
/// name, or an array addressed like a table (`topology.links.access`), gets an error that lists
/// the elements by name and index.
pub fn resolve_names(doc: &toml::Table, key: &str) -> Result<String, String> {
    let segs: Vec<&str> = key.split('.').collect();
    let mut out: Vec<String> = Vec::new();
    let mut cur: Option<&toml::Value> = None;
    let listing = |arr: &Vec<toml::Value>| -> String {
        let named: Vec<String> = arr
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.get("name").and_then(|n| n.as_str()).map(|n| format!("[{i}] or [{n}]")))
            .collect();
        if named.is_empty() {
            format!("its elements have no `name`; use an index from 0 to {}", arr.len().saturating_sub(1))
        } else {
            format!("its elements: {}", named.join(", "))
        }
    };
    for (si, seg) in segs.iter().enumerate() {
        let (k, idx) = match seg.split_once('[') {
            Some((k, r)) => (k, r.strip_suffix(']')),
            None => (*seg, None),
        };
        let table = match cur {
            None => Some(doc),
            Some(v) => v.as_table(),
        };
        let here = out.iter().cloned().chain([k.to_string()]).collect::<Vec<_>>().join(".");
        let v = table.and_then(|t| t.get(k));
        match (idx, v) {
            (Some(name), Some(toml::Value::Array(arr))) if !name.chars().all(|c| c.is_ascii_digit()) => {
                let i = arr
                    .iter()
                    .position(|e| e.get("name").and_then(|n| n.as_str()) == Some(name))
                    .ok_or_else(|| format!("key `{key}`: `{here}` has no element named `{name}` ({})", listing(arr)))?;
                out.push(format!("{k}[{i}]"));
                cur = arr.get(i);
            }
            (Some(i), Some(toml::Value::Array(arr))) => {
                out.push(seg.to_string());
                cur = i.parse::<usize>().ok().and_then(|i| arr.get(i));
            }
            (None, Some(toml::Value::Array(arr))) if si + 1 < segs.len() => {
                return Err(format!(
                    "key `{key}`: `{here}` is an array; address one of its elements as `{here}[INDEX]` or \
                     `{here}[NAME]` ({})",
                    listing(arr)
                ));
            }
            _ => {
                out.push(seg.to_string());
                cur = v;
            }
        }
    }
    Ok(out.join("."))
}

impl Setting {
    /// A setting of `key` to one typed value (from a program, not a command line): a string
    /// stays a string; its label is the string, or the value as TOML (`{ kind = "red" }`).
    pub fn one(key: &str, value: toml::Value) -> Result<Setting, String> {
        let key = key.trim();
        path_steps(&names_as_indices(key)).map_err(|m| format!("set {key:?}: {m}"))?;
        let text = match &value {
            toml::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        Ok(Setting { key: key.to_string(), values: vec![value], texts: vec![text] })
    }
}

/// Numbers for a setting's values in base units, for a numeric column beside the labels: rates
/// in bit/s (`"bps"`), durations in seconds (`"s"`), queue sizes in packets (`"pkts"`) or bytes
/// (`"bytes"`). `None` if the values are numbers already (they are their own column) or are not
/// all of one of these kinds.
pub fn numeric_values(values: &[toml::Value]) -> Option<(&'static str, Vec<f64>)> {
    use ackshape_core::units::{parse_duration, parse_rate, parse_size, Size};
    let strs: Vec<&str> = values.iter().map(|v| v.as_str()).collect::<Option<_>>()?;
    if strs.is_empty() {
        return None;
    }
    if let Ok(r) = strs.iter().map(|t| parse_rate(t)).collect::<Result<Vec<_>, _>>() {
        return Some(("bps", r.iter().map(|r| r.0 as f64).collect()));
    }
    if let Ok(d) = strs.iter().map(|t| parse_duration(t)).collect::<Result<Vec<_>, _>>() {
        return Some(("s", d.iter().map(|d| d.as_secs_f64()).collect()));
    }
    let sizes = strs.iter().map(|t| parse_size(t)).collect::<Result<Vec<_>, _>>().ok()?;
    if let Some(p) = sizes.iter().map(|x| if let Size::Packets(n) = x { Some(*n as f64) } else { None }).collect() {
        return Some(("pkts", p));
    }
    sizes
        .iter()
        .map(|x| if let Size::Bytes(n) = x { Some(*n as f64) } else { None })
        .collect::<Option<Vec<f64>>>()
        .map(|b| ("bytes", b))
}

/// A TOML literal if `s` is one, else the string `s`.
pub fn parse_value(s: &str) -> toml::Value {
    match format!("v = {s}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(s.to_string())),
        Err(_) => toml::Value::String(s.to_string()),
    }
}

/// Split at commas that are outside quotes, `{}` and `[]`.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut out = Vec::new();
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[') => depth += 1,
            (None, '}' | ']') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// A scenario document (as parsed TOML) and the file it came from; `file` names it in errors and
/// resolves its relative paths (`policy_file`).
#[derive(Clone, Debug)]
pub struct Base {
    pub file: String,
    pub doc: toml::Table,
}

impl Base {
    /// Read a scenario file as TOML (its keys are checked when a point is built).
    pub fn load(path: &Path) -> Result<Base, String> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: cannot read: {e}"))?;
        Base::parse(&text, &file)
    }

    /// Parse scenario text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Base, String> {
        // The scenario's own parser gives the syntax error with its line.
        Scenario::parse(text, file).map_err(|e| e.to_string())?;
        let doc = text.parse::<toml::Table>().map_err(|e| format!("{file}: {e}"))?;
        Ok(Base { file: file.to_string(), doc })
    }

    /// The scenario with each setting's only value (`run --set`: one value per key).
    pub fn with_one_each(&self, settings: &[Setting]) -> Result<Scenario, String> {
        one_value_each(settings)?;
        self.with(settings, &vec![0; settings.len()]).map_err(|e| e.to_string())
    }

    /// The scenario with each setting given its value `pick[i]`; errors name the file, the key and
    /// the `--set` that led there.
    pub fn with(&self, settings: &[Setting], pick: &[usize]) -> Result<Scenario, ScenarioError> {
        let (doc, set) = self.doc_with(settings, pick)?;
        let mut sc = Scenario::from_table(doc, &self.file).map_err(|mut e| {
            if !set.is_empty() {
                e.msg = format!("{} (with --set {})", e.msg, set.join(" --set "));
            }
            e
        })?;
        sc.set = set;
        Ok(sc)
    }

    /// The document with each setting given its value `pick[i]` (not yet checked as a scenario),
    /// and the settings as `KEY=VALUE` texts (the summary's `scenario.set`).
    pub fn doc_with(&self, settings: &[Setting], pick: &[usize]) -> Result<(toml::Table, Vec<String>), ScenarioError> {
        let mut doc = self.doc.clone();
        for (s, &k) in settings.iter().zip(pick) {
            let key = resolve_names(&doc, &s.key).map_err(|msg| ScenarioError {
                file: self.file.clone(),
                key: None,
                msg: format!("{msg} (with --set {}={})", s.key, s.texts[k]),
            })?;
            // The message names the key (`key `flows[3].count`: …`).
            set_path(&mut doc, &key, s.values[k].clone()).map_err(|msg| ScenarioError {
                file: self.file.clone(),
                key: None,
                msg: format!("{msg} (with --set {}={})", s.key, s.texts[k]),
            })?;
        }
        let set: Vec<String> = settings.iter().zip(pick).map(|(s, &k)| format!("{}={}", s.key, s.texts[k])).collect();
        Ok((doc, set))
    }
}

/// What one sweep measures per run, in CSV column order: (column, description).
pub const METRICS: &[(&str, &str)] = &[
    ("goodput_mbps", "aggregate goodput, Mbit/s"),
    ("throughput_mbps", "aggregate throughput (retransmissions included), Mbit/s"),
    ("jain", "Jain's index of per-flow goodput"),
    ("cov", "CoV of per-flow goodput"),
    ("retransmit_ratio", "retransmitted / all data segments sent"),
    ("timeouts", "retransmission timeouts, all flows"),
    ("link_utilization", "busy fraction of the reported link direction"),
    ("link_queue_avg_pkts", "time-average queue of the reported link direction, packets"),
    ("link_queue_max_pkts", "maximum queue of the reported link direction, packets"),
    ("link_drops", "queue drops of the reported link direction"),
    ("gateway_data_avg_pkts", "time-average data packets queued in the gateway boxes (after the warm-up)"),
    ("gateway_data_max_pkts", "maximum data packets queued in the gateway boxes (after the warm-up)"),
    ("gateway_acks_avg", "time-average ACKs held by the gateway boxes (after the warm-up)"),
    ("gateway_acks_max", "maximum ACKs held by the gateway boxes (after the warm-up)"),
    ("gateway_drops", "data packets dropped by the gateway boxes' classes (after the warm-up)"),
];

/// The metrics that only a scenario with a `kind = "gateway"` box has (columns left out otherwise).
const GATEWAY_METRICS: &str = "gateway_";

/// The gateway boxes' buffer: summed averages, the largest maximum, summed class drops; the
/// `…_after_warmup` values where the box has them (a run with a warm-up), else the whole run's.
/// `None` without a gateway box. `middleboxes`: the summary's `middleboxes`.
fn gateway_metrics(middleboxes: &[serde_json::Value]) -> Option<[f64; 5]> {
    let gws: Vec<&serde_json::Value> = middleboxes.iter().filter(|m| m["kind"] == "gateway").collect();
    if gws.is_empty() {
        return None;
    }
    let get = |b: &serde_json::Value, key: &str| {
        b.get(format!("{key}_after_warmup")).and_then(|v| v.as_f64()).or_else(|| b[key].as_f64())
    };
    let num = |b: &serde_json::Value, key: &str| get(b, key).unwrap_or(0.0);
    let mut m = [0.0; 5];
    for g in gws {
        let b = &g["stats"]["buffer"];
        m[0] += num(b, "data_avg_pkts");
        m[1] = m[1].max(num(b, "data_max_pkts"));
        m[2] += num(b, "acks_avg");
        m[3] = m[3].max(num(b, "acks_max"));
        if let Some(cls) = g["stats"]["classes"].as_object() {
            m[4] += cls.values().filter_map(|c| get(c, "drops")).sum::<f64>();
        }
    }
    Some(m)
}

/// The metrics of one run, in [`METRICS`] order; the link ones are NaN if `link` is not in it, the
/// gateway ones if the run has no gateway box.
pub fn metrics_of(s: &Summary, link: &str) -> Vec<f64> {
    metrics_of_json(&serde_json::to_value(s).expect("a summary is JSON"), link)
}

fn array(v: &serde_json::Value) -> &[serde_json::Value] {
    v.as_array().map_or(&[], |a| a.as_slice())
}

/// [`metrics_of`] a summary.json document (what the result store keeps); the same numbers bit
/// for bit.
pub fn metrics_of_json(s: &serde_json::Value, link: &str) -> Vec<f64> {
    let flows = array(&s["flows"]);
    let total = |k: &str| flows.iter().map(|f| f[k].as_u64().unwrap_or(0)).sum::<u64>();
    let (sent, retx) = (total("data_packets_sent"), total("retransmitted_packets"));
    let l = array(&s["links"]).iter().find(|l| l["name"] == link);
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let link_num = |k: &str| l.map_or(f64::NAN, |l| num(&l[k]));
    let gw = gateway_metrics(array(&s["middleboxes"])).unwrap_or([f64::NAN; 5]);
    vec![
        num(&s["aggregate"]["goodput_bps"]) / 1e6,
        num(&s["aggregate"]["throughput_bps"]) / 1e6,
        num(&s["aggregate"]["jain"]),
        num(&s["aggregate"]["cov"]),
        if sent == 0 { 0.0 } else { retx as f64 / sent as f64 },
        total("timeouts") as f64,
        link_num("utilization"),
        link_num("queue_avg_pkts"),
        link_num("queue_max_pkts"),
        link_num("drops"),
        gw[0],
        gw[1],
        gw[2],
        gw[3],
        gw[4],
    ]
}

/// A metric of the user's (`--metric NAME=PATH`): a number anywhere in `summary.json`, by its
/// dotted path (`middleboxes[0].stats.injections`, `flows[2].goodput_bps`).
#[derive(Clone, Debug, PartialEq)]
pub struct ExtraMetric {
    /// The column name (the path if none was given).
    pub name: String,
    pub path: String,
}

/// Parse `NAME=PATH` or `PATH`.
pub fn parse_metric(spec: &str) -> Result<ExtraMetric, String> {
    let (name, path) = match spec.split_once('=') {
        Some((n, p)) => (n.trim(), p.trim()),
        None => (spec.trim(), spec.trim()),
    };
    let bad = |m: String| {
        format!("--metric {spec:?}: {m}; expected [NAME=]PATH into summary.json, e.g. injections=middleboxes[0].stats.injections")
    };
    if name.is_empty() || name.contains(',') || name.contains('"') {
        return Err(bad("expected a name without commas or quotes".into()));
    }
    path_steps(path).map_err(bad)?;
    if METRICS.iter().any(|m| m.0 == name) || ["point", "seed", "runs"].contains(&name) {
        return Err(bad(format!("`{name}` is already a column")));
    }
    Ok(ExtraMetric { name: name.to_string(), path: path.to_string() })
}

/// The number at a dotted path of a JSON document (booleans as 0/1), if there is one.
pub fn json_number(v: &serde_json::Value, path: &str) -> Option<f64> {
    let mut cur = v;
    for (k, i) in path_steps(path).ok()? {
        cur = cur.get(k)?;
        if let Some(i) = i {
            cur = cur.get(i)?;
        }
    }
    cur.as_f64().or_else(|| cur.as_bool().map(|b| b as u8 as f64))
}

/// A sweep: a base scenario, the keys to vary, the seeds, and the link direction to report.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub base: Base,
    pub settings: Vec<Setting>,
    pub seeds: Vec<u64>,
    /// The link direction whose queue, drops and utilization are reported; `None`: `bottleneck`
    /// if the scenario has one, else the busiest direction of the first run.
    pub link: Option<String>,
    /// More metrics from each run's `summary.json` (after [`METRICS`], in this order).
    pub extra: Vec<ExtraMetric>,
}

/// One run of a sweep.
#[derive(Clone, Debug)]
pub struct RunRow {
    /// Index of the point (the settings' values), in expansion order.
    pub point: usize,
    pub seed: u64,
    /// In [`METRICS`] order, then the extra metrics (NaN where a run has none).
    pub metrics: Vec<f64>,
}

/// One point of a sweep over its seeds.
#[derive(Clone, Debug)]
pub struct PointStats {
    /// The settings' values, as written.
    pub values: Vec<String>,
    pub runs: usize,
    /// Per metric, in [`SweepResult::names`] order.
    pub mean: Vec<f64>,
    /// Standard error of the mean (sample standard deviation / √runs; 0 with one run).
    pub se: Vec<f64>,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
}

/// What a sweep measured.
#[derive(Clone, Debug)]
pub struct SweepResult {
    pub file: String,
    pub keys: Vec<String>,
    pub seeds: Vec<u64>,
    pub link: String,
    /// Every metric's column name and description: [`METRICS`], then the extra ones.
    pub names: Vec<(String, String)>,
    /// The metrics this sweep reports (indices into `names`): all but the gateway ones when no
    /// run had a gateway box.
    pub columns: Vec<usize>,
    pub runs: Vec<RunRow>,
    pub points: Vec<PointStats>,
    /// Runs computed by this sweep, …
    pub computed: usize,
    /// … found in the result store, …
    pub stored: usize,
    /// … and of those computed, how many the store had from other builds (not used).
    pub other_builds: usize,
}

impl Sweep {
    /// Every combination of the settings' values, the first setting varying slowest.
    pub fn picks(&self) -> Vec<Vec<usize>> {
        let mut picks = vec![Vec::new()];
        for s in &self.settings {
            picks = picks
                .into_iter()
                .flat_map(|p| {
                    (0..s.values.len()).map(move |k| {
                        let mut q = p.clone();
                        q.push(k);
                        q
                    })
                })
                .collect();
        }
        picks
    }

    /// Build every point's scenario and check it, before anything runs: a bad key or value fails
    /// the sweep at once, naming the file, the key and the `--set`.
    pub fn scenarios(&self) -> Result<Vec<(Vec<String>, Scenario)>, String> {
        let mut out = Vec::new();
        for pick in self.picks() {
            let sc = self.base.with(&self.settings, &pick).map_err(|e| e.to_string())?;
            // Building checks what parsing cannot (names, routes, box settings).
            let sim = Sim::build(&sc, &self.base.file, self.seeds.first().copied(), RunOptions::default())
                .map_err(|e| e.to_string())?;
            if let Some(l) = &self.link {
                let names = sim.link_names();
                if !names.contains(l) {
                    return Err(format!(
                        "--link {l}: {} has no such link direction (it has: {})",
                        self.base.file,
                        names.join(", ")
                    ));
                }
            }
            let texts = self.settings.iter().zip(&pick).map(|(s, &k)| s.texts[k].clone()).collect();
            out.push((texts, sc));
        }
        Ok(out)
    }

    /// Whether some point's scenario has a gateway box (and so the `gateway_…` metrics).
    pub fn has_gateway(&self) -> bool {
        self.picks().iter().any(|pick| {
            self.base.with(&self.settings, pick).is_ok_and(|sc| sc.middlebox.iter().any(|m| m.kind == "gateway"))
        })
    }

    /// Run every point over every seed on `workers` threads. Results are in a fixed order whatever
    /// the number of workers; `on_done(k, total)` follows progress.
    pub fn run(&self, workers: usize, on_done: &mut dyn FnMut(usize, usize)) -> Result<SweepResult, String> {
        self.run_with(&mut Threads(workers), None, on_done)
    }

    /// The runs of this sweep, in result order (points in expansion order, each over the seeds):
    /// every point's resolved scenario ([`crate::store::resolve`]) and its store hash.
    pub fn jobs(&self) -> Result<Vec<RunJob>, String> {
        let file = &self.base.file;
        let mut jobs = Vec::new();
        for (p, pick) in self.picks().iter().enumerate() {
            let (doc, set) = self.base.doc_with(&self.settings, pick).map_err(|e| e.to_string())?;
            let resolved = crate::store::resolve(&doc, file)?;
            let hash = crate::store::scenario_hash(&resolved);
            let text = toml::to_string(&resolved).map_err(|e| format!("{file}: {e}"))?;
            for &seed in &self.seeds {
                let scenario = text.clone();
                jobs.push(RunJob {
                    point: p,
                    seed,
                    hash: hash.clone(),
                    scenario,
                    file: file.clone(),
                    set: set.clone(),
                    record: false,
                });
            }
        }
        Ok(jobs)
    }

    /// Run every point over every seed with `runner`, taking from `store` the runs it has (of this
    /// build) and keeping each run in it as soon as it finishes, so that an interrupted sweep
    /// resumes. Results are in a fixed order whatever the runner; `on_done(k, total)` follows
    /// progress (runs found in the store count as done at once).
    pub fn run_with(
        &self,
        runner: &mut dyn Runner,
        store: Option<&Store>,
        on_done: &mut dyn FnMut(usize, usize),
    ) -> Result<SweepResult, String> {
        if self.seeds.is_empty() {
            return Err("a sweep needs at least one seed".into());
        }
        // Every point is built and checked before anything runs.
        let points = self.scenarios()?;
        let jobs = self.jobs()?;
        let total = jobs.len();
        let file = &self.base.file;
        let mut texts: Vec<Option<String>> = vec![None; total];
        let (mut stored, mut elsewhere) = (0, 0);
        if let Some(st) = store {
            for (j, t) in jobs.iter().zip(texts.iter_mut()) {
                *t = st.get(&j.hash, j.seed).map_err(|e| e.to_string())?;
                if t.is_some() {
                    stored += 1;
                } else if !st.other_builds(&j.hash, j.seed).is_empty() {
                    elsewhere += 1;
                }
            }
        }
        let keep = |j: &RunJob, summary: &str| -> Result<(), String> {
            store.map_or(Ok(()), |st| st.put(&j.hash, j.seed, &j.scenario, summary).map_err(|e| e.to_string()))
        };
        let (mut done, mut computed) = (stored, 0);
        if stored > 0 {
            on_done(done, total);
        }
        // With --metric, the first run first: a path its summary does not have (a typo, most
        // likely) fails the sweep before the other runs are spent.
        if !self.extra.is_empty() {
            if texts[0].is_none() {
                let r = runner.run(&jobs[..1], &keep, &mut |_| {}).pop().expect("one result")?;
                texts[0] = Some(r);
                computed = 1;
            }
            let doc = parse_summary(texts[0].as_deref().expect("the first run"))?;
            if let Some(e) = self.extra.iter().find(|e| json_number(&doc, &e.path).is_none()) {
                return Err(format!(
                    "--metric {}: the first run's summary.json has no number at `{}` (`ackshape run {} --json` shows its keys)",
                    e.name, e.path, file
                ));
            }
            if computed == 1 {
                done += 1;
                on_done(done, total);
            }
        }
        let missing: Vec<usize> = (0..total).filter(|&i| texts[i].is_none()).collect();
        let todo: Vec<RunJob> = missing.iter().map(|&i| jobs[i].clone()).collect();
        computed += todo.len();
        let base_done = done;
        let results = runner.run(&todo, &keep, &mut |k| on_done(base_done + k, total));
        for (i, r) in missing.into_iter().zip(results) {
            texts[i] = Some(r?);
        }
        let summaries: Vec<serde_json::Value> =
            texts.iter().map(|t| parse_summary(t.as_deref().expect("every run ran"))).collect::<Result<_, _>>()?;
        let link = match &self.link {
            Some(l) => l.clone(),
            None => default_link(&summaries[0]),
        };
        let runs: Vec<RunRow> = jobs
            .iter()
            .zip(&summaries)
            .map(|(j, s)| {
                let mut metrics = metrics_of_json(s, &link);
                metrics.extend(self.extra.iter().map(|e| json_number(s, &e.path).unwrap_or(f64::NAN)));
                RunRow { point: j.point, seed: j.seed, metrics }
            })
            .collect();
        let stats = points
            .iter()
            .enumerate()
            .map(|(p, (values, _))| {
                let rows: Vec<&RunRow> = runs.iter().filter(|r| r.point == p).collect();
                point_stats(values.clone(), &rows)
            })
            .collect();
        let gateway = summaries.iter().any(|s| gateway_metrics(array(&s["middleboxes"])).is_some());
        Ok(SweepResult {
            file: file.clone(),
            keys: self.settings.iter().map(|s| s.key.clone()).collect(),
            seeds: self.seeds.clone(),
            link,
            names: METRICS
                .iter()
                .map(|(n, w)| (n.to_string(), w.to_string()))
                .chain(self.extra.iter().map(|e| (e.name.clone(), format!("{} (summary.json)", e.path))))
                .collect(),
            columns: (0..METRICS.len())
                .filter(|&j| gateway || !METRICS[j].0.starts_with(GATEWAY_METRICS))
                .chain(METRICS.len()..METRICS.len() + self.extra.len())
                .collect(),
            runs,
            points: stats,
            computed,
            stored,
            other_builds: elsewhere,
        })
    }
}

fn parse_summary(text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| format!("a run's summary.json does not parse: {e}"))
}

/// One run of a sweep as it goes to a [`Runner`]: the resolved scenario as TOML text (what
/// [`run_resolved`] runs, on this machine or another), the file that names it and the `--set`s
/// that made it (for the summary), the seed, and its store hash.
#[derive(Clone, Debug, PartialEq)]
pub struct RunJob {
    /// Index of the point (the settings' values), in expansion order.
    pub point: usize,
    pub seed: u64,
    pub hash: String,
    pub scenario: String,
    pub file: String,
    pub set: Vec<String>,
    /// What the run hands back: false, its summary.json text (a sweep's); true, a [`RunRecord`]
    /// ([`run_record`]; a reproduction's, which needs every number as computed).
    pub record: bool,
}

impl RunJob {
    /// Run it here: the summary.json text, or the [`RunRecord`] text when `record` is set.
    pub fn run(&self) -> Result<String, String> {
        if self.record {
            run_record(&self.scenario, &self.file, &self.set, self.seed)
        } else {
            run_resolved(&self.scenario, &self.file, &self.set, self.seed)
        }
    }
}

/// What a run of a reproduction hands back when it ran elsewhere (another process or machine): its
/// summary with every number as the run computed it (summary.json rounds them, and writes a
/// non-finite one as `null`), its goodput time series and its flows' sender TCP counters, which
/// is all an experiment reads of a finished run.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub summary: Summary,
    /// (bin end s, flow, goodput bit/s): [`Sim::goodput_series`].
    pub goodput_series: Vec<(f64, u32, f64)>,
    /// Each flow's sending TCP counters over the whole run, in the order of `summary.flows`
    /// (`None` for a UDP flow): [`Sim::flow_sender_stats`].
    pub sender_stats: Vec<Option<TcpStats>>,
}

impl RunRecord {
    /// As text: `{"ackshape": {version, commit, ...}, "record": BASE64}`, the record in CBOR, which
    /// keeps every float bit for bit (NaN and infinities too). The `ackshape` key is the build's, as
    /// in a summary.json ([`crate::store::summary_provenance`] reads it).
    pub fn to_text(&self) -> String {
        use base64::Engine;
        let mut bytes = Vec::new();
        ciborium::into_writer(self, &mut bytes).expect("a run record serialises");
        serde_json::json!({
            "ackshape": self.summary.ackshape,
            "record": base64::engine::general_purpose::STANDARD.encode(bytes),
        })
        .to_string()
    }

    /// The record of [`to_text`](Self::to_text).
    pub fn from_text(text: &str) -> Result<RunRecord, String> {
        use base64::Engine;
        let bad = |m: String| format!("a run record: {m}");
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let b64 = v["record"].as_str().ok_or_else(|| bad("expected a `record` key (a base64 string)".into()))?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| bad(format!("`record`: {e}")))?;
        ciborium::from_reader(bytes.as_slice()).map_err(|e| bad(format!("`record`: {e}")))
    }
}

/// Run a resolved scenario like [`run_resolved`], handing back its [`RunRecord`] as text.
pub fn run_record(scenario: &str, file: &str, set: &[String], seed: u64) -> Result<String, String> {
    let (sim, summary) = run_text(scenario, file, set, seed)?;
    let sender_stats = (0..sim.flow_endpoints().len()).map(|i| sim.flow_sender_stats(i)).collect();
    Ok(RunRecord { goodput_series: sim.goodput_series(), sender_stats, summary }.to_text())
}

/// Build and run a resolved scenario (TOML text) with `seed`: the simulation and its summary.
fn run_text(scenario: &str, file: &str, set: &[String], seed: u64) -> Result<(Sim, Summary), String> {
    let doc: toml::Table = scenario.parse().map_err(|e: toml::de::Error| format!("{file}: {}", e.message()))?;
    let mut sc = Scenario::from_table(doc, file).map_err(|e| e.to_string())?;
    sc.set = set.to_vec();
    let mut sim = Sim::build(&sc, file, Some(seed), RunOptions::default()).map_err(|e| e.to_string())?;
    let t0 = std::time::Instant::now();
    sim.run(None);
    let summary = sim.summary(t0.elapsed().as_secs_f64());
    Ok((sim, summary))
}

/// Run a resolved scenario (TOML text, see [`crate::store::resolve`]) with `seed`; `file` and
/// `set` name it in errors and in the summary. Returns the summary.json text, byte for byte what
/// `ackshape run --out` writes for the same scenario and seed (apart from `sim.wall_time_s`).
pub fn run_resolved(scenario: &str, file: &str, set: &[String], seed: u64) -> Result<String, String> {
    Ok(crate::run::summary_json(&run_text(scenario, file, set, seed)?.1))
}

/// Where a sweep's runs run: threads of this process ([`Threads`]), or elsewhere (the command
/// line's `--dask`, which hands the jobs to a Dask cluster).
pub trait Runner {
    /// Run `jobs`; `keep(job, summary)` is called once each has finished, as soon as it has (from
    /// any thread), and an error from it is that job's; `progress(k)` on the calling thread after
    /// the k-th has finished. Results (summary.json texts) in the order of `jobs`.
    fn run(
        &mut self,
        jobs: &[RunJob],
        keep: &(dyn Fn(&RunJob, &str) -> Result<(), String> + Sync),
        progress: &mut dyn FnMut(usize),
    ) -> Vec<Result<String, String>>;
}

/// Run on this many threads of this process (see [`run_parallel`]).
pub struct Threads(pub usize);

impl Runner for Threads {
    fn run(
        &mut self,
        jobs: &[RunJob],
        keep: &(dyn Fn(&RunJob, &str) -> Result<(), String> + Sync),
        progress: &mut dyn FnMut(usize),
    ) -> Vec<Result<String, String>> {
        let one = |j: &RunJob| -> Result<String, String> {
            let s = j.run()?;
            keep(j, &s)?;
            Ok(s)
        };
        run_parallel(jobs, self.0, one, progress)
    }
}

/// `bottleneck` if the run has it, else its busiest link direction.
pub fn default_link(s: &serde_json::Value) -> String {
    let links = array(&s["links"]);
    if links.iter().any(|l| l["name"] == "bottleneck") {
        return "bottleneck".into();
    }
    let util = |l: &serde_json::Value| l["utilization"].as_f64().unwrap_or(f64::NAN);
    links
        .iter()
        .max_by(|a, b| util(a).total_cmp(&util(b)))
        .and_then(|l| l["name"].as_str())
        .map(String::from)
        .unwrap_or_default()
}

fn point_stats(values: Vec<String>, rows: &[&RunRow]) -> PointStats {
    let n = rows.len();
    let m = rows.first().map_or(METRICS.len(), |r| r.metrics.len());
    let (mut mean, mut se, mut min, mut max) = (vec![0.0; m], vec![0.0; m], vec![0.0; m], vec![0.0; m]);
    for j in 0..m {
        let xs: Vec<f64> = rows.iter().map(|r| r.metrics[j]).collect();
        let (mu, sd) = mean_sd(&xs);
        mean[j] = mu;
        se[j] = sd / (n as f64).sqrt();
        min[j] = xs.iter().cloned().fold(f64::INFINITY, f64::min);
        max[j] = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    }
    PointStats { values, runs: n, mean, se, min, max }
}

/// The most seeds `--seeds` takes per point.
pub const MAX_SEEDS: u64 = 10_000;

/// `run --set`: one value per key.
pub fn one_value_each(settings: &[Setting]) -> Result<(), String> {
    match settings.iter().find(|s| s.values.len() > 1) {
        Some(s) => Err(format!(
            "--set {}: run takes one value per key, got {}; `ackshape sweep` runs several",
            s.key,
            s.values.len()
        )),
        None => Ok(()),
    }
}

/// `--set KEY=V1,V2,…` settings ([`parse_setting`]), each key at most once.
pub fn parse_settings(specs: &[String]) -> Result<Vec<Setting>, String> {
    let settings: Vec<Setting> = specs.iter().map(|s| parse_setting(s)).collect::<Result<_, _>>()?;
    for (i, s) in settings.iter().enumerate() {
        if settings[..i].iter().any(|t| t.key == s.key) {
            return Err(format!("--set {}: the key is set twice; give all its values in one --set", s.key));
        }
    }
    Ok(settings)
}

/// A sweep as `ackshape sweep` gives it in text: the base, the `--set` settings, `--seeds`
/// (count, range or list; [`parse_seeds`]), `--metric`s ([`parse_metric`], each name once),
/// `--link` and the `--plot` metrics, which need an output directory (`has_out`) and, for a
/// gateway metric, a gateway box in the base. Returns the sweep and the plotted metrics' indices
/// (past [`METRICS`] for the extra ones). Errors name the flag.
pub fn plan(
    base: Base,
    settings: Vec<Setting>,
    seeds: &str,
    metrics: &[String],
    plots: &[String],
    link: Option<String>,
    has_out: bool,
) -> Result<(Sweep, Vec<usize>), String> {
    let scenario_seed = base.doc.get("seed").and_then(|s| s.as_integer()).map_or(1, |s| s as u64);
    let seeds = parse_seeds(seeds, scenario_seed)?;
    let mut extra: Vec<ExtraMetric> = Vec::new();
    for spec in metrics {
        let m = parse_metric(spec)?;
        if extra.iter().any(|e| e.name == m.name) {
            return Err(format!("--metric {spec}: the name `{}` is given twice", m.name));
        }
        extra.push(m);
    }
    let mut plotted = Vec::new();
    for m in plots {
        let by_extra = extra.iter().position(|e| e.name == m.trim()).map(|k| METRICS.len() + k);
        match metric_index(m.trim()).or(by_extra) {
            Some(i) => plotted.push(i),
            None => {
                let names: Vec<&str> =
                    METRICS.iter().map(|m| m.0).chain(extra.iter().map(|e| e.name.as_str())).collect();
                return Err(format!("--plot {m}: no such metric (there are: {})", names.join(", ")));
            }
        }
    }
    if !plotted.is_empty() && !has_out {
        return Err("--plot needs --out DIR to write into".into());
    }
    let sweep = Sweep { base, settings, seeds, link, extra };
    let gateway_plot =
        plotted.iter().filter(|&&i| i < METRICS.len()).map(|&i| METRICS[i].0).find(|m| m.starts_with("gateway_"));
    if let Some(m) = gateway_plot {
        if !sweep.has_gateway() {
            return Err(format!(
                "--plot {m}: {} has no gateway box (`[[middlebox]]` with kind = \"gateway\")",
                sweep.base.file
            ));
        }
    }
    Ok((sweep, plotted))
}

/// Seeds from `--seeds`: a count N (the scenario's seed and the N − 1 after it), a range `A-B`, or a
/// list `1,5,9`.
pub fn parse_seeds(spec: &str, scenario_seed: u64) -> Result<Vec<u64>, String> {
    let bad = || format!("--seeds {spec:?}: expected a count (5), a range (1-5) or a list (1,5,9)");
    let spec = spec.trim();
    let too_many = |n: u64| format!("--seeds {spec:?}: {n} seeds per point; expected at most {MAX_SEEDS}");
    let seeds: Vec<u64> = if spec.contains(',') {
        let seeds: Vec<u64> = spec.split(',').map(|s| s.trim().parse().map_err(|_| bad())).collect::<Result<_, _>>()?;
        if let Some(s) = seeds.iter().enumerate().find_map(|(i, s)| seeds[..i].contains(s).then_some(s)) {
            return Err(format!("--seeds {spec:?}: seed {s} is given twice (a repeated seed repeats a run exactly)"));
        }
        seeds
    } else if let Some((a, b)) = spec.split_once('-') {
        let (a, b): (u64, u64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
        if b < a {
            return Err(bad());
        }
        if b - a >= MAX_SEEDS {
            return Err(too_many((b - a).saturating_add(1)));
        }
        (a..=b).collect()
    } else {
        let n: u64 = spec.parse().map_err(|_| bad())?;
        if n > MAX_SEEDS {
            return Err(too_many(n));
        }
        (0..n).map(|i| scenario_seed.wrapping_add(i)).collect()
    };
    if seeds.is_empty() {
        return Err(format!("--seeds {spec:?}: expected at least one seed"));
    }
    if seeds.len() as u64 > MAX_SEEDS {
        return Err(too_many(seeds.len() as u64));
    }
    Ok(seeds)
}

/// A number for CSV and JSON: empty / null when not finite.
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

fn json_num(x: f64) -> serde_json::Value {
    serde_json::Number::from_f64(x).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

#[derive(Serialize)]
struct MetricDoc<'a> {
    name: &'a str,
    what: &'a str,
}

impl SweepResult {
    /// `sweep.json`: the settings, seeds, metrics, every run and every point's statistics.
    pub fn to_json(&self, settings: &[Setting]) -> serde_json::Value {
        let values = |texts: &[String]| -> serde_json::Map<String, serde_json::Value> {
            self.keys.iter().zip(texts).map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect()
        };
        let runs: Vec<serde_json::Value> = self
            .runs
            .iter()
            .map(|r| {
                let mut o = serde_json::Map::new();
                o.insert("point".into(), r.point.into());
                o.insert("values".into(), values(&self.points[r.point].values).into());
                o.insert("seed".into(), r.seed.into());
                for &j in &self.columns {
                    o.insert(self.names[j].0.clone(), json_num(r.metrics[j]));
                }
                o.into()
            })
            .collect();
        let points: Vec<serde_json::Value> = self
            .points
            .iter()
            .map(|p| {
                let mut o = serde_json::Map::new();
                o.insert("values".into(), values(&p.values).into());
                o.insert("runs".into(), p.runs.into());
                for &j in &self.columns {
                    o.insert(
                        self.names[j].0.clone(),
                        serde_json::json!({
                            "mean": json_num(p.mean[j]), "se": json_num(p.se[j]),
                            "min": json_num(p.min[j]), "max": json_num(p.max[j]),
                        }),
                    );
                }
                o.into()
            })
            .collect();
        serde_json::json!({
            "ackshape": crate::provenance::Provenance::json(),
            "scenario": self.file,
            "settings": settings.iter().map(|s| serde_json::json!({"key": s.key, "values": s.texts})).collect::<Vec<_>>(),
            "seeds": self.seeds,
            "link": self.link,
            "metrics": self.columns.iter().map(|&j| MetricDoc { name: &self.names[j].0, what: &self.names[j].1 }).collect::<Vec<_>>(),
            "runs": runs,
            "points": points,
        })
    }

    /// `sweep.csv`: one row per run.
    pub fn runs_csv(&self) -> String {
        let mut head: Vec<String> = vec!["point".into()];
        head.extend(self.keys.iter().map(|k| csv_field(k)));
        head.push("seed".into());
        head.extend(self.columns.iter().map(|&j| csv_field(&self.names[j].0)));
        let mut o = head.join(",") + "\n";
        for r in &self.runs {
            let mut row = vec![r.point.to_string()];
            row.extend(self.points[r.point].values.iter().map(|v| csv_field(v)));
            row.push(r.seed.to_string());
            row.extend(self.columns.iter().map(|&j| num(r.metrics[j])));
            o += &(row.join(",") + "\n");
        }
        o
    }

    /// `sweep-points.csv`: one row per point, each metric's mean and standard error.
    pub fn points_csv(&self) -> String {
        let mut head: Vec<String> = self.keys.iter().map(|k| csv_field(k)).collect();
        head.push("runs".into());
        for &j in &self.columns {
            head.push(csv_field(&format!("{}_mean", self.names[j].0)));
            head.push(csv_field(&format!("{}_se", self.names[j].0)));
        }
        let mut o = head.join(",") + "\n";
        for p in &self.points {
            let mut row: Vec<String> = p.values.iter().map(|v| csv_field(v)).collect();
            row.push(p.runs.to_string());
            for &j in &self.columns {
                row.push(num(p.mean[j]));
                row.push(num(p.se[j]));
            }
            o += &(row.join(",") + "\n");
        }
        o
    }

    /// A plot of one metric's mean (± one standard error) against a setting: the first with
    /// numeric values (numbers, rates, durations, sizes), ticked at the swept values, else the
    /// first, one tick per value. One curve per combination of the other settings' values.
    pub fn plot(&self, metric: usize, settings: &[Setting]) -> Plot {
        let name = &self.names[metric].0;
        let axes: Vec<(Vec<f64>, String, bool)> = settings.iter().map(x_axis).collect();
        let xi = axes.iter().position(|a| a.2).unwrap_or(0);
        let x_label = axes.get(xi).map_or_else(|| "(no --set)".to_string(), |a| a.1.clone());
        let mut curves: Vec<Curve> = Vec::new();
        let mut curve_of: Vec<Vec<String>> = Vec::new();
        for p in &self.points {
            let rest: Vec<String> =
                p.values.iter().enumerate().filter(|(i, _)| *i != xi).map(|(_, v)| v.clone()).collect();
            let c = match curve_of.iter().position(|r| *r == rest) {
                Some(c) => c,
                None => {
                    let label: Vec<String> = self
                        .keys
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != xi)
                        .zip(&rest)
                        .map(|((_, k), v)| format!("{}={}", k.rsplit('.').next().unwrap_or(k), compact(v)))
                        .collect();
                    curve_of.push(rest);
                    curves.push(Curve {
                        name: if label.is_empty() { axis_label(name, &self.names[metric].1) } else { label.join(", ") },
                        markers: true,
                        ..Default::default()
                    });
                    curves.len() - 1
                }
            };
            let x = match axes.get(xi) {
                Some((xs, _, _)) => {
                    let k = settings[xi].texts.iter().position(|t| *t == p.values[xi]).unwrap_or(0);
                    xs[k]
                }
                None => 1.0,
            };
            let (m, se) = (p.mean[metric], p.se[metric]);
            if m.is_finite() {
                curves[c].points.push((x, m));
                if p.runs > 1 && se > 0.0 {
                    curves[c].err.push((x, m - se, m + se));
                }
            }
        }
        let what = self.names[metric].1.replace("the reported link direction", &self.link);
        let file = Path::new(&self.file).file_name().map_or(self.file.clone(), |f| f.to_string_lossy().into_owned());
        let title = format!("{file}: {}, {}", what.split(", ").next().unwrap_or(&what), self.seeds_note(metric));
        let plot =
            xy_chart(&XyChart { title, x_label, y_label: axis_label(name, &what), ..Default::default() }, &curves);
        match axes.get(xi) {
            Some((xs, _, true)) => plot.x_ticks(xs),
            Some((xs, _, false)) => {
                plot.x_tick_labels(xs.iter().zip(&settings[xi].texts).map(|(&x, t)| (x, compact(t))).collect())
            }
            None => plot.x_tick_labels(vec![(1.0, String::new())]),
        }
    }

    /// How the seeds show in a plot's title: "1 seed", "mean ± s.e. over 5 seeds", or, when every
    /// point's seeds gave the same value, "5 seeds, all the same".
    fn seeds_note(&self, metric: usize) -> String {
        match self.seeds.len() {
            1 => "1 seed".to_string(),
            n if self.points.iter().all(|p| p.min[metric] == p.max[metric] || !p.mean[metric].is_finite()) => {
                format!("{n} seeds, each point the same in all")
            }
            n => format!("mean ± s.e. over {n} seeds"),
        }
    }

    /// Whether every point's runs gave the same value of the metric (a scenario without
    /// randomness, or one whose randomness does not reach it).
    pub fn same_over_seeds(&self, metric: usize) -> bool {
        self.seeds.len() > 1
            && self.points.iter().all(|p| p.min[metric] == p.max[metric] || !p.mean[metric].is_finite())
    }

    /// Write `sweep.json`, `sweep.csv`, `sweep-points.csv`, plots of goodput and of the link's
    /// queue (with a gateway box also of its data queue and held ACKs: `sweep-gateway-queue.svg`,
    /// `sweep-gateway-acks.svg`), and `sweep-METRIC.svg` for each of `more_plots` (indices into
    /// [`SweepResult::names`]; those not among [`SweepResult::columns`] are skipped) into `dir`
    /// (created); returns the files written.
    pub fn write(&self, dir: &Path, settings: &[Setting], more_plots: &[usize]) -> Result<Vec<PathBuf>, RunError> {
        std::fs::create_dir_all(dir).map_err(|err| RunError::Io { path: dir.display().to_string(), err })?;
        let json = serde_json::to_string_pretty(&self.to_json(settings)).expect("JSON of numbers and strings") + "\n";
        let goodput = metric_index("goodput_mbps").expect("listed");
        let queue = metric_index("link_queue_avg_pkts").expect("listed");
        let mut files = vec![
            ("sweep.json".to_string(), json),
            ("sweep.csv".to_string(), self.runs_csv()),
            ("sweep-points.csv".to_string(), self.points_csv()),
        ];
        let mut plots = vec![("sweep-goodput".to_string(), goodput), ("sweep-queue".to_string(), queue)];
        // With a gateway box, where its buffer goes: data queued and ACKs held.
        for (name, m) in [("gateway-queue", "gateway_data_avg_pkts"), ("gateway-acks", "gateway_acks_avg")] {
            let m = metric_index(m).expect("listed");
            if self.columns.contains(&m) {
                plots.push((format!("sweep-{name}"), m));
            }
        }
        for &m in more_plots {
            if !plots.iter().any(|p| p.1 == m) && self.columns.contains(&m) {
                let file: String = self.names[m]
                    .0
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
                    .collect();
                plots.push((format!("sweep-{file}"), m));
            }
        }
        let mut out = Vec::new();
        for (name, text) in files.drain(..) {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|err| RunError::Io { path: p.display().to_string(), err })?;
            out.push(p);
        }
        for (name, m) in plots {
            let written = self
                .plot(m, settings)
                .write(dir, &name)
                .map_err(|err| RunError::Io { path: dir.join(&name).display().to_string(), err })?;
            out.extend(written);
        }
        Ok(out)
    }
}

/// A metric as an axis label with its unit: "aggregate goodput (Mbit/s)" for `goodput_mbps`
/// (from its description, "what, unit"); a metric of the user's by its path.
fn axis_label(name: &str, what: &str) -> String {
    match name {
        "retransmit_ratio" => "retransmitted / sent data segments".into(),
        _ => match what.rsplit_once(", ") {
            Some((w, unit)) if !unit.contains(' ') || unit == "packets" => format!("{w} ({unit})"),
            _ => what.to_string(),
        },
    }
}

/// A mean for the table: 4 significant digits, no exponent for everyday magnitudes.
fn fmt_sig(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a == 0.0 {
        return "0".into();
    }
    if (1e-3..1e9).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.3e}")
    }
}

/// The position of a metric in [`METRICS`] by its column name.
pub fn metric_index(name: &str) -> Option<usize> {
    METRICS.iter().position(|m| m.0 == name)
}

/// A value as a legend shows it: an inline table without its braces, quotes and `kind = `
/// (`{ kind = "red", limit_pkts = 100 }` → `red, limit_pkts=100`).
fn compact(v: &str) -> String {
    let t = v.trim();
    if !(t.starts_with('{') && t.ends_with('}')) {
        return t.to_string();
    }
    let inner = t[1..t.len() - 1].trim();
    split_top_level(inner)
        .into_iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').map_or(("", kv), |(k, v)| (k.trim(), v.trim()));
            let v = v.trim_matches('"');
            match k {
                "" | "kind" => v.to_string(),
                k => format!("{k}={v}"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The x positions of a setting's values, the axis label and whether the values are numeric:
/// numbers as they are, rates in Mbit/s, durations in ms, queue sizes in packets or bytes; anything
/// else by position, named in the label.
fn x_axis(s: &Setting) -> (Vec<f64>, String, bool) {
    let nums: Option<Vec<f64>> = s
        .values
        .iter()
        .map(|v| match v {
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::Float(f) => Some(*f),
            _ => None,
        })
        .collect();
    if let Some(xs) = nums {
        return (xs, s.key.clone(), true);
    }
    let strs: Option<Vec<&str>> = s.values.iter().map(|v| v.as_str()).collect();
    if let Some(strs) = &strs {
        if let Ok(xs) = strs.iter().map(|t| ackshape_core::units::parse_rate(t)).collect::<Result<Vec<_>, _>>() {
            return (xs.iter().map(|r| r.0 as f64 / 1e6).collect(), format!("{} (Mbit/s)", s.key), true);
        }
        if let Ok(xs) = strs.iter().map(|t| ackshape_core::units::parse_duration(t)).collect::<Result<Vec<_>, _>>() {
            return (xs.iter().map(|d| d.0 as f64 / 1e6).collect(), format!("{} (ms)", s.key), true);
        }
        // Queue sizes: all in packets, or all in bytes.
        use ackshape_core::units::{parse_size, Size};
        if let Ok(xs) = strs.iter().map(|t| parse_size(t)).collect::<Result<Vec<_>, _>>() {
            if let Some(p) = xs.iter().map(|x| if let Size::Packets(n) = x { Some(*n as f64) } else { None }).collect()
            {
                return (p, format!("{} (packets)", s.key), true);
            }
            if let Some(b) = xs.iter().map(|x| if let Size::Bytes(n) = x { Some(*n as f64) } else { None }).collect() {
                return (b, format!("{} (bytes)", s.key), true);
            }
        }
    }
    let names: Vec<String> = s.texts.iter().enumerate().map(|(i, t)| format!("{} = {t}", i + 1)).collect();
    ((1..=s.values.len()).map(|i| i as f64).collect(), format!("{}: {}", s.key, names.join(", ")), false)
}

impl fmt::Display for SweepResult {
    /// The terminal table: one line per point, means (± s.e. for goodput) over the seeds; with a
    /// gateway box also its average data queue, held ACKs and drops.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let idx = |n: &str| metric_index(n).expect("listed");
        let (g, j, r, q, d) =
            (idx("goodput_mbps"), idx("jain"), idx("retransmit_ratio"), idx("link_queue_avg_pkts"), idx("link_drops"));
        let widths: Vec<usize> = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| self.points.iter().map(|p| p.values[i].len()).chain([k.len()]).max().unwrap_or(0))
            .collect();
        let mut head = String::new();
        for (k, w) in self.keys.iter().zip(&widths) {
            head += &format!("{k:<w$}  ");
        }
        let link_q = format!("{} queue pkts", self.link);
        let gw = self.columns.contains(&idx("gateway_data_avg_pkts"));
        let (gq, ga, gd) = (idx("gateway_data_avg_pkts"), idx("gateway_acks_avg"), idx("gateway_drops"));
        write!(
            f,
            "{head}{:>4}  {:>20}  {:>6}  {:>6}  {:>w$}  {:>8}",
            "runs",
            "goodput Mbit/s",
            "Jain",
            "retx %",
            link_q,
            "drops",
            w = link_q.len().max(8)
        )?;
        if gw {
            write!(f, "  {:>8}  {:>8}  {:>8}", "gw data", "gw acks", "gw drops")?;
        }
        let extra: Vec<usize> = self.columns.iter().copied().filter(|&c| c >= METRICS.len()).collect();
        for &c in &extra {
            write!(f, "  {:>w$}", self.names[c].0, w = self.names[c].0.len().max(10))?;
        }
        writeln!(f)?;
        for p in &self.points {
            let mut line = String::new();
            for (v, w) in p.values.iter().zip(&widths) {
                line += &format!("{v:<w$}  ");
            }
            // ± s.e. over the seeds; none when they all gave the same value (the table's header
            // says so when every point did).
            let gp = if p.runs > 1 && p.min[g] != p.max[g] {
                format!("{:.3} ± {:.3}", p.mean[g], p.se[g])
            } else {
                format!("{:.3}", p.mean[g])
            };
            write!(
                f,
                "{line}{:>4}  {gp:>20}  {:>6.4}  {:>5.2}%  {:>w$.2}  {:>8.1}",
                p.runs,
                p.mean[j],
                p.mean[r] * 100.0,
                p.mean[q],
                p.mean[d],
                w = link_q.len().max(8)
            )?;
            if gw {
                write!(f, "  {:>8.2}  {:>8.2}  {:>8.1}", p.mean[gq], p.mean[ga], p.mean[gd])?;
            }
            for &c in &extra {
                write!(f, "  {:>w$}", fmt_sig(p.mean[c]), w = self.names[c].0.len().max(10))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCN: &str = r#"
name = "sweep-unit"
seed = 3
duration = "4s"
warmup = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "4Mbit/s", delay = "10ms", queue = "40pkt", loss = { kind = "bernoulli", p = 0.002 } }
access = { rate = "100Mbit/s", delay = "1ms" }
[[flows]]
count = 3
start = "uniform(0s, 500ms)"
"#;

    #[test]
    fn values_split_at_top_level_commas_and_bare_words_are_strings() {
        let s = parse_setting(r#"topology.bottleneck.qdisc={ kind = "red", min = 5 },{ kind = "drr" }"#).unwrap();
        assert_eq!(s.texts, vec![r#"{ kind = "red", min = 5 }"#, r#"{ kind = "drr" }"#]);
        assert!(s.values[0].as_table().is_some_and(|t| t["min"].as_integer() == Some(5)));
        let s = parse_setting(r#"a.b=5Mbit/s, 7, 0.5, true, "x,y", [1, 2]"#).unwrap();
        assert_eq!(s.values[0], toml::Value::String("5Mbit/s".into()));
        assert_eq!(s.values[1], toml::Value::Integer(7));
        assert_eq!(s.values[2], toml::Value::Float(0.5));
        assert_eq!(s.values[3], toml::Value::Boolean(true));
        assert_eq!(s.values[4], toml::Value::String("x,y".into()));
        assert!(s.values[5].as_array().is_some_and(|a| a.len() == 2));
        assert_eq!(s.key, "a.b");
        // (`flows[x]` is a flow named x, resolved against the scenario.)
        for bad in ["novalue", "a.b=", "a.b=1,,2", "=3", "a..b=1", "flows[x y].count=1", "flows[0=1", "a b=1"] {
            assert!(parse_setting(bad).is_err(), "{bad:?} should be refused");
        }
        let p = path_steps("flows[1].tcp.cc").unwrap();
        assert_eq!(p, vec![("flows", Some(1)), ("tcp", None), ("cc", None)]);
    }

    #[test]
    fn set_path_creates_tables_and_names_what_is_in_the_way() {
        let mut doc = SCN.parse::<toml::Table>().unwrap();
        let set = |doc: &mut toml::Table, spec: &str| {
            let s = parse_setting(spec).unwrap();
            set_path(doc, &s.key, s.values[0].clone())
        };
        set(&mut doc, "flows[0].tcp.cc=cubic").unwrap();
        assert_eq!(doc["flows"][0]["tcp"]["cc"].as_str(), Some("cubic"));
        let e = set(&mut doc, "flows[2].count=1").unwrap_err();
        assert!(e.contains("`flows` has 1 element,") && e.contains("no index 2"), "{e}");
        let e = set(&mut doc, "duration.x=1").unwrap_err();
        assert!(e.contains("`duration` is not a table (it is a string)"), "{e}");
        let e = set(&mut doc, "name[0]=1").unwrap_err();
        assert!(e.contains("not an array"), "{e}");
    }

    #[test]
    fn array_elements_are_addressed_by_name_and_a_wrong_one_lists_them() {
        let doc = r#"
[topology]
kind = "graph"
links = [ { name = "home", a = "x", b = "y" }, { name = "access", a = "y", b = "z" } ]
"#
        .parse::<toml::Table>()
        .unwrap();
        assert_eq!(resolve_names(&doc, "topology.links[access].qdisc").unwrap(), "topology.links[1].qdisc");
        assert_eq!(resolve_names(&doc, "topology.links[0].rate").unwrap(), "topology.links[0].rate");
        let e = resolve_names(&doc, "topology.links[acces].qdisc").unwrap_err();
        assert!(e.contains("no element named `acces`") && e.contains("[1] or [access]"), "{e}");
        let e = resolve_names(&doc, "topology.links.access.qdisc").unwrap_err();
        assert!(e.contains("`topology.links` is an array") && e.contains("[0] or [home]"), "{e}");
        assert!(parse_setting("topology.links[access].qdisc=red").is_ok());
        assert_eq!(names_as_indices("a[x].b[2].c[y]"), "a[0].b[2].c[0]");
    }

    #[test]
    fn a_bad_value_is_named_with_the_file_the_key_and_the_set() {
        let base = Base::parse(SCN, "s.toml").unwrap();
        let s = vec![parse_setting("topology.bottleneck.rate=fast").unwrap()];
        let e = base.with(&s, &[0]).unwrap_err().to_string();
        assert!(e.starts_with("s.toml: key `topology.bottleneck.rate`"), "{e}");
        assert!(e.contains("--set topology.bottleneck.rate=fast"), "{e}");
        let s = vec![parse_setting("topology.botleneck.rate=1Mbit/s").unwrap()];
        let e = base.with(&s, &[0]).unwrap_err().to_string();
        assert!(e.contains("botleneck"), "{e}");
        // A good one changes the scenario.
        let s = vec![parse_setting("topology.bottleneck.rate=2Mbit/s").unwrap()];
        let sc = base.with(&s, &[0]).unwrap();
        let sim = Sim::build(&sc, "s.toml", None, RunOptions::default()).unwrap();
        assert!(sim.link_names().contains(&"bottleneck".to_string()));
    }

    #[test]
    fn legends_show_inline_tables_compactly() {
        assert_eq!(compact(r#"{ kind = "red", limit_pkts = 100 }"#), "red, limit_pkts=100");
        assert_eq!(compact(r#"{ kind = "drr" }"#), "drr");
        assert_eq!(compact("5Mbit/s"), "5Mbit/s");
        assert_eq!(compact(r#"{ p = 0.01, kind = "bernoulli" }"#), "p=0.01, bernoulli");
    }

    #[test]
    fn numeric_axes_read_rates_durations_and_queue_sizes() {
        let axis = |spec: &str| x_axis(&parse_setting(spec).unwrap());
        assert_eq!(axis("a=5Mbit/s,500kbit/s").0, vec![5.0, 0.5]);
        assert_eq!(axis("a=20ms,1s").0, vec![20.0, 1000.0]);
        let (xs, label, numeric) = axis("a.queue=5pkt,50pkt");
        assert!(numeric && label.ends_with("(packets)"), "{label}");
        assert_eq!(xs, vec![5.0, 50.0]);
        assert_eq!(axis("a=1500B,3000B").1, "a (bytes)");
        // Mixed packets and bytes have no common axis: by position.
        let (xs, label, numeric) = axis("a=5pkt,3000B");
        assert!(!numeric && label.contains("1 = 5pkt"), "{label}");
        assert_eq!(xs, vec![1.0, 2.0]);
    }

    #[test]
    fn seeds_as_count_range_or_list() {
        assert_eq!(parse_seeds("3", 7).unwrap(), vec![7, 8, 9]);
        assert_eq!(parse_seeds("2-4", 7).unwrap(), vec![2, 3, 4]);
        assert_eq!(parse_seeds("1, 5,9", 7).unwrap(), vec![1, 5, 9]);
        for bad in ["0", "x", "4-2", "1,,2", "", "1,5,1", "10001", "1-10001", "1000000000000"] {
            assert!(parse_seeds(bad, 1).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn point_statistics_are_the_mean_and_the_standard_error() {
        let rows: Vec<RunRow> =
            [1.0, 2.0, 6.0].iter().map(|&x| RunRow { point: 0, seed: 1, metrics: vec![x; METRICS.len()] }).collect();
        let refs: Vec<&RunRow> = rows.iter().collect();
        let p = point_stats(vec!["a".into()], &refs);
        assert_eq!(p.runs, 3);
        assert_eq!(p.mean[0], 3.0);
        // Sample variance (4 + 1 + 9) / 2 = 7; s.e. = √(7/3).
        assert!((p.se[0] - (7.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!((p.min[0], p.max[0]), (1.0, 6.0));
        let one = point_stats(vec![], &refs[..1]);
        assert_eq!(one.se[0], 0.0);
    }

    #[test]
    fn a_sweep_runs_every_point_and_seed_as_single_runs_would_in_any_number_of_workers() {
        let base = Base::parse(SCN, "s.toml").unwrap();
        let settings = vec![
            parse_setting("topology.bottleneck.rate=2Mbit/s,4Mbit/s").unwrap(),
            parse_setting("tcp.cc=reno,cubic").unwrap(),
        ];
        let sweep =
            Sweep { base: base.clone(), settings: settings.clone(), seeds: vec![1, 2], link: None, extra: vec![] };
        let one = sweep.run(1, &mut |_, _| {}).unwrap();
        let two = sweep.run(2, &mut |_, _| {}).unwrap();
        assert_eq!(one.runs_csv(), two.runs_csv());
        assert_eq!(one.points_csv(), two.points_csv());
        assert_eq!(one.runs.len(), 8);
        assert_eq!(one.points.len(), 4);
        assert_eq!(one.link, "bottleneck");
        // The first setting varies slowest; each row is the run of its point and seed.
        let expect = [("2Mbit/s", "reno"), ("2Mbit/s", "cubic"), ("4Mbit/s", "reno"), ("4Mbit/s", "cubic")];
        for (p, (rate, cc)) in expect.iter().enumerate() {
            assert_eq!(one.points[p].values, vec![rate.to_string(), cc.to_string()]);
        }
        for r in &one.runs {
            let pick: Vec<usize> = one.points[r.point]
                .values
                .iter()
                .zip(&settings)
                .map(|(v, s)| s.texts.iter().position(|t| t == v).unwrap())
                .collect();
            let sc = base.with(&settings, &pick).unwrap();
            let mut sim = Sim::build(&sc, "s.toml", Some(r.seed), RunOptions::default()).unwrap();
            sim.run(None);
            // Bit for bit with the run's summary.json as written (the gateway metrics are NaN: no
            // gateway box).
            let written: serde_json::Value =
                serde_json::from_str(&crate::run::summary_json(&sim.summary(0.0))).unwrap();
            let bits = |m: &[f64]| m.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&r.metrics),
                bits(&metrics_of_json(&written, "bottleneck")),
                "point {} seed {}",
                r.point,
                r.seed
            );
        }
        // No gateway box: no gateway columns.
        assert!(!one.runs_csv().lines().next().unwrap().contains("gateway_"));
        assert!(!one.to_string().contains("gw data"));
        // The rate was applied: goodput stays near each bottleneck's rate, and the seeds differ.
        // Goodput counts in-order delivery in the measured window, so data that arrived out of
        // order before it and is released when a hole fills can lift it a little above the rate
        // (2.004 Mbit/s at 2 Mbit/s with cubic): a 5% margin, far below the other rate's 2x.
        for p in &one.points {
            let cap = if p.values[0] == "2Mbit/s" { 2.0 } else { 4.0 };
            assert!(p.mean[0] < 1.05 * cap && p.mean[0] > 0.5 * cap, "{:?}: {}", p.values, p.mean[0]);
        }
        assert!(one.points.iter().any(|p| p.se[0] > 0.0));
        // The CSVs and the plot carry every point.
        assert_eq!(one.runs_csv().lines().count(), 9);
        assert_eq!(one.points_csv().lines().count(), 5);
        let svg = one.plot(0, &settings).svg();
        assert!(svg.contains("topology.bottleneck.rate (Mbit/s)") && svg.contains("cc=cubic"));
    }

    #[test]
    fn a_gateway_box_adds_its_buffer_and_drops_after_the_warm_up() {
        // A 2 Mbit/s class with a small FIFO in front of a 100 Mbit/s path: the class is the
        // bottleneck, so the data queue and the drops are the gateway's, not the link's.
        let scn = r#"
name = "sweep-gateway"
seed = 1
duration = "6s"
warmup = "2s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "100Mbit/s", delay = "10ms", queue = "1000pkt" }
access = { rate = "1Gbit/s", delay = "0ms" }
[[flows]]
count = 3
start = "uniform(0s, 200ms)"
[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
policy = { default_class = "c", class = [ { name = "c", rate = "2Mbit/s", queue = "8pkt" } ] }
"#;
        let base = Base::parse(scn, "g.toml").unwrap();
        let settings = vec![parse_setting(
            r#"middlebox[0].policy.class[0].mechanism={ kind = "none" },{ kind = "tcr" }"#,
        )
        .unwrap()];
        let sweep =
            Sweep { base: base.clone(), settings: settings.clone(), seeds: vec![1, 2], link: None, extra: vec![] };
        assert!(sweep.has_gateway());
        let res = sweep.run(2, &mut |_, _| {}).unwrap();
        let head = res.runs_csv().lines().next().unwrap().to_string();
        for m in
            ["gateway_data_avg_pkts", "gateway_data_max_pkts", "gateway_acks_avg", "gateway_acks_max", "gateway_drops"]
        {
            assert!(head.contains(m), "{head}");
        }
        assert!(res.to_string().contains("gw data"));
        let col = |n: &str| metric_index(n).unwrap();
        for r in &res.runs {
            let sc = base.with(&settings, &[r.point]).unwrap();
            let mut sim = Sim::build(&sc, "g.toml", Some(r.seed), RunOptions::default()).unwrap();
            sim.run(None);
            // As the run's summary.json has them (12 significant digits).
            let s: serde_json::Value = serde_json::from_str(&crate::run::summary_json(&sim.summary(0.0))).unwrap();
            let st = &s["middleboxes"][0]["stats"];
            let (b, c) = (&st["buffer"], &st["classes"]["c"]);
            assert_eq!(r.metrics[col("gateway_data_avg_pkts")], b["data_avg_pkts_after_warmup"].as_f64().unwrap());
            assert_eq!(r.metrics[col("gateway_data_max_pkts")], b["data_max_pkts_after_warmup"].as_f64().unwrap());
            assert_eq!(r.metrics[col("gateway_acks_avg")], b["acks_avg_after_warmup"].as_f64().unwrap());
            assert_eq!(r.metrics[col("gateway_acks_max")], b["acks_max_after_warmup"].as_f64().unwrap());
            let (after, all) = (c["drops_after_warmup"].as_f64().unwrap(), c["drops"].as_f64().unwrap());
            assert_eq!(r.metrics[col("gateway_drops")], after);
            // Without a mechanism the start-up burst (3 initial windows into 8 packets) drops before
            // the warm-up ends, and the windows keep overflowing the FIFO after it.
            assert!(after <= all, "point {}: drops after the warm-up {after}, whole run {all}", r.point);
            if r.point == 0 {
                assert!(0.0 < after && after < all, "FIFO: drops after the warm-up {after}, whole run {all}");
            }
            // The class FIFO holds 8; the gateway-wide count also has the other direction's packets.
            let class_max = c["data_queue_max_pkts_after_warmup"].as_f64().unwrap();
            assert!(class_max <= 8.0 && r.metrics[col("gateway_data_max_pkts")] >= class_max, "{b} {c}");
        }
        // Plain FIFO: the senders' windows sit in the class queue; TCR holds them as ACKs.
        let (fifo, tcr) = (&res.points[0], &res.points[1]);
        let (q, a) = (col("gateway_data_avg_pkts"), col("gateway_acks_avg"));
        assert!(fifo.mean[q] > tcr.mean[q], "data queue FIFO {} vs TCR {}", fifo.mean[q], tcr.mean[q]);
        assert!(fifo.mean[a] == 0.0 && tcr.mean[a] > 0.0, "ACKs held FIFO {} vs TCR {}", fifo.mean[a], tcr.mean[a]);
    }

    #[test]
    fn extra_metrics_are_numbers_of_each_runs_summary() {
        let m = parse_metric("fr=flows[1].fast_retransmits").unwrap();
        assert_eq!((m.name.as_str(), m.path.as_str()), ("fr", "flows[1].fast_retransmits"));
        assert_eq!(parse_metric("aggregate.cov").unwrap().name, "aggregate.cov");
        assert_eq!(fmt_sig(0.0), "0");
        assert_eq!(fmt_sig(2282.0), "2282");
        assert_eq!(fmt_sig(0.012345), "0.01235");
        assert_eq!(fmt_sig(f64::NAN), "-");
        assert_eq!(fmt_sig(3.2e12), "3.200e12");
        for bad in ["jain=aggregate.jain", "seed=flows[0].id", "x=a..b", "x=flows[z].id", "=a", "a,b=c"] {
            assert!(parse_metric(bad).is_err(), "{bad:?} should be refused");
        }
        let doc = serde_json::json!({ "a": [{ "b": 2.5 }, { "b": true }], "s": "text" });
        assert_eq!(json_number(&doc, "a[0].b"), Some(2.5));
        assert_eq!(json_number(&doc, "a[1].b"), Some(1.0));
        assert_eq!(json_number(&doc, "a[2].b"), None);
        assert_eq!(json_number(&doc, "s"), None);
        assert_eq!(json_number(&doc, "a"), None);

        let base = Base::parse(SCN, "s.toml").unwrap();
        let settings = vec![parse_setting("tcp.cc=reno,cubic").unwrap()];
        let extra = vec![parse_metric("fr=flows[1].fast_retransmits").unwrap(), parse_metric("aggregate.cov").unwrap()];
        let sweep = Sweep { base: base.clone(), settings: settings.clone(), seeds: vec![1, 2], link: None, extra };
        let res = sweep.run(2, &mut |_, _| {}).unwrap();
        let n = METRICS.len();
        for r in &res.runs {
            let sc = base.with(&settings, &[r.point]).unwrap();
            let mut sim = Sim::build(&sc, "s.toml", Some(r.seed), RunOptions::default()).unwrap();
            sim.run(None);
            let s = sim.summary(0.0);
            assert_eq!(r.metrics[n], s.flows[1].fast_retransmits as f64);
            assert_eq!(r.metrics[n + 1], crate::run::round_sig(s.aggregate.cov));
            assert_eq!(r.metrics[n + 1], r.metrics[metric_index("cov").unwrap()]);
        }
        assert!(res.runs.iter().any(|r| r.metrics[n] > 0.0), "the lossy bottleneck causes fast retransmits");
        let head = res.runs_csv().lines().next().unwrap().to_string();
        assert!(head.ends_with(",fr,aggregate.cov"), "{head}");
        assert!(res
            .points_csv()
            .lines()
            .next()
            .unwrap()
            .ends_with("fr_mean,fr_se,aggregate.cov_mean,aggregate.cov_se"));
        let table = res.to_string();
        assert!(table.lines().next().unwrap().contains("aggregate.cov"), "{table}");
        assert!(res.plot(n, &settings).svg().contains("flows[1].fast_retransmits (summary.json)"));
        // A path the first run does not have fails before the others run.
        let typo = vec![parse_metric("flows[1].fast_retransmit").unwrap()];
        let sweep = Sweep { base, settings, seeds: vec![1, 2], link: None, extra: typo };
        let mut ran = 0;
        let e = sweep.run(1, &mut |k, _| ran = k).unwrap_err();
        assert!(e.contains("flows[1].fast_retransmit") && e.contains("first run"), "{e}");
        assert_eq!(ran, 0);
    }

    #[test]
    fn an_unknown_link_is_refused_before_anything_runs() {
        let base = Base::parse(SCN, "s.toml").unwrap();
        let sweep = Sweep { base, settings: vec![], seeds: vec![1], link: Some("nosuch".into()), extra: vec![] };
        let mut ran = 0;
        let e = sweep.run(1, &mut |_, _| ran += 1).unwrap_err();
        assert!(e.contains("--link nosuch") && e.contains("bottleneck"), "{e}");
        assert_eq!(ran, 0);
    }
}
