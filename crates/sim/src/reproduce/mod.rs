//! `ackshape reproduce`: the papers' experiments as code, each with claims checked against the
//! paper's values.
//!
//! An [`Experiment`] has an ID (e.g. `P2-F10`: paper P2, Fig. 10; the papers are [`PAPERS`]), an embedded
//! TOML file under `experiments/` (base scenario, sweep values, the `[paper]` values and the
//! tolerances), and a runner that returns an [`ExpOutput`]: claims (measured vs paper, tolerance,
//! holds), tables (written as CSV) and plots (SVG). [`write_output`] writes them and a Markdown
//! report into `OUT/ID/`.
//!
//! One module per paper registers its experiments; [`registry`] lists them all.
//!
//! **Running simulations.** An experiment builds its list of independent runs (sweep points ×
//! disciplines × seeds) as [`SimJob`]s and hands them to [`Ctx::run_sims`], which runs them on a
//! pool of [`workers`] threads (default: the machine's available parallelism) and reports
//! progress. Results come back in the order of the jobs, and every job seeds its own run, so the
//! results do not depend on the number of workers or on scheduling ([`run_parallel`]).
//!
//! **Experiment files** are scenario files (`ackshape run FILE` runs their base case) with two
//! free-form tables: `[paper]` (the paper's stated values, the claims and their tolerances, what
//! was assumed) and `[reproduce]` (sweeps, seeds, quick-mode settings). [`ExpFile`] reads them
//! with errors that name the file and the key; [`set_path`] edits the base scenario for a sweep
//! point.

use crate::metrics::Summary;
use crate::scenario::Scenario;
use crate::world::{RunOptions, Sim};
use serde::Serialize;

mod p4;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub mod edge;
pub mod p0;
pub mod p1;
pub mod p2;
pub mod p3;

/// One checked statement of a paper.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Claim {
    /// Short ID within the experiment, e.g. `afvq-highest`.
    pub id: String,
    /// The claim in words.
    pub claim: String,
    /// What the paper reports (value or statement).
    pub paper: String,
    /// What we measured.
    pub measured: String,
    /// The tolerance or criterion applied.
    pub tolerance: String,
    pub holds: bool,
}

/// A result table (written as CSV and shown in the report).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// What an experiment produced.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ExpOutput {
    pub id: String,
    pub title: String,
    pub claims: Vec<Claim>,
    pub tables: Vec<Table>,
    /// (file name `NAME.svg`, plot): written as `NAME.svg` and `NAME.png`.
    #[serde(skip)]
    pub plots: Vec<(String, crate::plot::Plot)>,
    /// Free text for the report (setup, assumptions, explanations of gaps).
    pub notes: Vec<String>,
}

/// Run settings shared by all experiments.
pub struct Ctx<'a> {
    /// Fewer seeds / shorter runs / fewer sweep points (used by the test suite); the report says so.
    pub quick: bool,
    /// Base seed; experiments derive their seeds from it.
    pub seed: u64,
    /// Progress callback: (fraction of this experiment done).
    pub progress: Option<&'a mut dyn FnMut(f64)>,
}

impl Ctx<'_> {
    /// A context without a progress callback.
    pub fn new(quick: bool, seed: u64) -> Ctx<'static> {
        Ctx { quick, seed, progress: None }
    }

    pub fn progress(&mut self, f: f64) {
        if let Some(p) = self.progress.as_mut() {
            p(f);
        }
    }

    /// Run independent simulations on [`workers`] threads; progress goes from 0 to 1 of this
    /// experiment. Results are in the order of `jobs` (see [`run_parallel`]).
    pub fn run_sims(&mut self, jobs: &[SimJob]) -> Vec<Result<Summary, String>> {
        self.run_sims_span(jobs, 0.0, 1.0)
    }

    /// [`run_sims`](Self::run_sims) for an experiment that runs several batches: this batch's
    /// progress is mapped onto `[from, to]` of the experiment's.
    pub fn run_sims_span(&mut self, jobs: &[SimJob], from: f64, to: f64) -> Vec<Result<Summary, String>> {
        self.run_jobs_span(jobs, from, to, |_, s| s)
    }

    /// Like [`run_sims_span`](Self::run_sims_span), but `extract` also reads the finished
    /// simulation (e.g. its goodput time series) and returns what the experiment keeps.
    pub fn run_jobs_span<T, F>(&mut self, jobs: &[SimJob], from: f64, to: f64, extract: F) -> Vec<Result<T, String>>
    where
        T: Send,
        F: Fn(&Sim, Summary) -> T + Sync,
    {
        let n = jobs.len().max(1) as f64;
        let mut progress = |done: usize| self.progress(from + (to - from) * done as f64 / n);
        run_parallel(jobs, workers(), |j| j.run_with(&extract), &mut progress)
    }
}

/// One independent simulation run of an experiment.
#[derive(Clone, Debug)]
pub struct SimJob {
    /// What this run is (e.g. `afvq delay=20ms seed=3`), for error messages.
    pub label: String,
    pub scenario: Scenario,
    /// The experiment file, for error messages.
    pub file: String,
    pub seed: u64,
}

impl SimJob {
    /// Build and run the simulation; errors name the file and the run.
    pub fn run(&self) -> Result<Summary, String> {
        self.run_with(&|_, s| s)
    }

    fn run_with<T>(&self, extract: &(impl Fn(&Sim, Summary) -> T + ?Sized)) -> Result<T, String> {
        let mut sim = Sim::build(&self.scenario, &self.file, Some(self.seed), RunOptions::default())
            .map_err(|e| format!("{} ({}): {e}", self.label, self.file))?;
        let t0 = std::time::Instant::now();
        sim.run(None);
        let s = sim.summary(t0.elapsed().as_secs_f64());
        Ok(extract(&sim, s))
    }
}

static WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Number of worker threads for [`Ctx::run_sims`]: set by [`set_workers`] (the CLI's `--jobs`),
/// else the machine's available parallelism.
pub fn workers() -> usize {
    match WORKERS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    }
}

/// Set the number of worker threads (0 = the machine's available parallelism).
pub fn set_workers(n: usize) {
    WORKERS.store(n, Ordering::Relaxed);
}

/// Apply `f` to every job on `workers` threads (scoped; a shared counter hands out the next job).
/// Returns the results in the order of `jobs`, whatever the number of workers or the order in
/// which jobs finish, so deterministic jobs give identical output with 1 or N workers.
/// `on_done(k)` is called on the calling thread after each completion with the number done.
pub fn run_parallel<J, T, F>(jobs: &[J], workers: usize, f: F, on_done: &mut dyn FnMut(usize)) -> Vec<T>
where
    J: Sync,
    T: Send,
    F: Fn(&J) -> T + Sync,
{
    let workers = workers.clamp(1, jobs.len().max(1));
    let mut out: Vec<Option<T>> = (0..jobs.len()).map(|_| None).collect();
    if workers == 1 {
        for (i, j) in jobs.iter().enumerate() {
            out[i] = Some(f(j));
            on_done(i + 1);
        }
    } else {
        let next = AtomicUsize::new(0);
        let (tx, rx) = std::sync::mpsc::channel::<(usize, T)>();
        std::thread::scope(|s| {
            for _ in 0..workers {
                let tx = tx.clone();
                let (next, f) = (&next, &f);
                s.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    if tx.send((i, f(j))).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (done, (i, r)) in rx.iter().enumerate() {
                out[i] = Some(r);
                on_done(done + 1);
            }
        });
    }
    out.into_iter().map(|r| r.expect("every job ran")).collect()
}

/// An experiment file: its name (for errors), the whole TOML table, and helpers to read the
/// `[paper]` and `[reproduce]` tables and to build scenarios from it.
#[derive(Clone, Debug)]
pub struct ExpFile {
    pub file: String,
    pub table: toml::Table,
}

impl ExpFile {
    /// Parse an experiment's embedded text; TOML errors name the file and the line.
    pub fn parse(exp: &Experiment) -> Result<ExpFile, String> {
        Self::parse_text(exp.text, exp.file)
    }

    pub fn parse_text(text: &str, file: &str) -> Result<ExpFile, String> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| format!("{file}: {}", ackshape_core::tomlerr::syntax_message(text, &e)))?;
        // The base scenario must be valid as it stands.
        Scenario::from_table(table.clone(), file).map_err(|e| e.to_string())?;
        check_finite(&table).map_err(|m| format!("{file}: {m}"))?;
        Ok(ExpFile { file: file.to_string(), table })
    }

    /// Deserialize the table at dotted `key` (e.g. `reproduce`) into `T`; errors name the file
    /// and the full key path (e.g. `reproduce.sweep.values[2]`).
    pub fn section<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<T, String> {
        let v = get_path(&self.table, key).ok_or_else(|| format!("{}: key `{key}`: missing", self.file))?;
        serde_path_to_error::deserialize::<_, T>(v.clone()).map_err(|e| {
            let path = e.path().to_string();
            let full = if path == "." || path.is_empty() { key.to_string() } else { format!("{key}.{path}") };
            format!("{}: key `{full}`: {}", self.file, e.into_inner().message().trim_end())
        })
    }

    /// The whole file as `T` (other keys ignored unless `T` denies them); errors name the file
    /// and the key.
    pub fn section_root<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        serde_path_to_error::deserialize::<_, T>(toml::Value::Table(self.table.clone())).map_err(|e| {
            let path = e.path().to_string();
            format!("{}: key `{path}`: {}", self.file, e.into_inner().message().trim_end())
        })
    }

    /// Report notes from the file's `[paper]` table: `source`, each `stated` item and each
    /// `assumed` item (strings), prefixed so the report shows which is which.
    pub fn paper_notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(src) = get_path(&self.table, "paper.source").and_then(|v| v.as_str()) {
            out.push(format!("Source: {src}."));
        }
        for (key, label) in [("paper.stated", "Paper"), ("paper.assumed", "Assumed")] {
            if let Some(a) = get_path(&self.table, key).and_then(|v| v.as_array()) {
                out.extend(a.iter().filter_map(|x| x.as_str()).map(|x| format!("{label}: {x}")));
            }
        }
        out
    }

    /// The base scenario with `edits` applied (dotted paths, see [`set_path`]).
    pub fn scenario_with(&self, edits: &[(String, toml::Value)]) -> Result<Scenario, String> {
        let mut t = self.table.clone();
        for (k, v) in edits {
            set_path(&mut t, k, v.clone()).map_err(|e| format!("{}: {e}", self.file))?;
        }
        Scenario::from_table(t, &self.file).map_err(|e| e.to_string())
    }
}

/// The steps of a dotted path: keys (bare TOML names), each optionally indexed (`links[2]`).
pub fn path_steps(path: &str) -> Result<Vec<(&str, Option<usize>)>, String> {
    let bare = |k: &str| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    path.split('.')
        .map(|seg| {
            let (k, i) = match seg.split_once('[') {
                Some((k, rest)) => {
                    let i = rest
                        .strip_suffix(']')
                        .and_then(|n| n.parse().ok())
                        .ok_or_else(|| format!("key `{path}`: bad index in `{seg}`, expected e.g. `flows[0]`"))?;
                    (k, Some(i))
                }
                None => (seg, None),
            };
            if !bare(k) {
                return Err(format!(
                    "key `{path}`: expected dotted names like `topology.bottleneck.rate`, got `{seg}`"
                ));
            }
            Ok((k, i))
        })
        .collect()
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a datetime",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

fn no_index(path: &str, k: &str, n: usize, i: usize) -> String {
    format!("key `{path}`: `{k}` has {n} element{}, no index {i} (indices count from 0)", if n == 1 { "" } else { "s" })
}

/// The value at a dotted path (`topology.links[1].rate`), if any.
pub fn get_path<'a>(t: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let steps = path_steps(path).ok()?;
    let mut cur: Option<&toml::Value> = None;
    for (k, idx) in steps {
        let table = match cur {
            None => t,
            Some(v) => v.as_table()?,
        };
        let mut v = table.get(k)?;
        if let Some(i) = idx {
            v = v.as_array()?.get(i)?;
        }
        cur = Some(v);
    }
    cur
}

/// Set the value at a dotted path (`topology.links[1].reverse.rate`), creating missing tables
/// (not array elements). Errors name the path and what was wrong.
pub fn set_path(t: &mut toml::Table, path: &str, value: toml::Value) -> Result<(), String> {
    let steps = path_steps(path)?;
    let (last, init) = steps.split_last().ok_or_else(|| format!("key `{path}`: empty"))?;
    let mut table = t;
    for (k, idx) in init {
        let entry = table.entry(k.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let v = match idx {
            Some(i) => {
                let what = type_name(entry);
                let arr = entry
                    .as_array_mut()
                    .ok_or_else(|| format!("key `{path}`: `{k}` is not an array (it is {what})"))?;
                let n = arr.len();
                arr.get_mut(*i).ok_or_else(|| no_index(path, k, n, *i))?
            }
            None => entry,
        };
        let what = type_name(v);
        table = v.as_table_mut().ok_or_else(|| format!("key `{path}`: `{k}` is not a table (it is {what})"))?;
    }
    match last {
        (k, None) => {
            table.insert(k.to_string(), value);
        }
        (k, Some(i)) => {
            let arr = table
                .get_mut(*k)
                .and_then(|v| v.as_array_mut())
                .ok_or_else(|| format!("key `{path}`: `{k}` is not an array"))?;
            let n = arr.len();
            *arr.get_mut(*i).ok_or_else(|| no_index(path, k, n, *i))? = value;
        }
    }
    Ok(())
}

/// Mean and sample standard deviation.
pub fn mean_sd(x: &[f64]) -> (f64, f64) {
    if x.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    if x.len() < 2 {
        return (m, 0.0);
    }
    let v = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0);
    (m, v.sqrt())
}

/// A registered experiment.
pub struct Experiment {
    /// ID, e.g. `P2-F10`: the paper (`P2`, see [`PAPERS`]) and its figure, table or section.
    pub id: &'static str,
    pub title: &'static str,
    /// Path of the experiment file within the repository (for messages and the report).
    pub file: &'static str,
    /// The file's text (embedded, so `reproduce` runs from anywhere).
    pub text: &'static str,
    pub run: fn(&Experiment, &mut Ctx) -> Result<ExpOutput, String>,
}

/// One source paper: the short ID used in experiment names (`P2` in `P2-F10`), its full
/// citation, and the section of `docs/experiments.md` with its set-up, assumptions and traps.
#[derive(Clone, Copy, Debug)]
pub struct Paper {
    /// `P0` … `P4`.
    pub id: &'static str,
    /// The number the papers are known by in the docs (`paper 000` … `paper 004`).
    pub number: &'static str,
    /// Authors, title, venue, year (as printed in the paper).
    pub citation: &'static str,
    /// Anchor in `docs/experiments.md` (e.g. `p2`).
    pub anchor: &'static str,
}

/// The five source papers, in ID order.
pub const PAPERS: [Paper; 5] = [
    Paper {
        id: "P0",
        number: "000",
        citation: "H.-Y. Wei, S.-C. Tsao, Y.-D. Lin, \"Assessing and Improving TCP Rate Shaping over Edge \
                   Gateways\", IEEE Transactions on Computers, vol. 53, no. 3, March 2004, doi:10.1109/TC.2004.1261834",
        anchor: "p0",
    },
    Paper {
        id: "P1",
        number: "001",
        citation: "S. Karandikar, S. Kalyanaraman, P. Bagal, B. Packer, \"TCP Rate Control\", ACM SIGCOMM \
                   Computer Communication Review, vol. 30, no. 1, pp. 45-58, 2000",
        anchor: "p1",
    },
    Paper {
        id: "P2",
        number: "002",
        citation: "J. Park, D. Park, S. Hong, J. Park, \"Preventing TCP performance interference on asymmetric \
                   links using ACKs-first variable-size queuing\", Computer Communications (Elsevier), 2010, \
                   doi:10.1016/j.comcom.2010.09.010",
        anchor: "p2",
    },
    Paper {
        id: "P3",
        number: "003",
        citation: "K. H. Lau, \"Sender-driven Bandwidth Differentiation for Transmitting Multimedia Flows over \
                   TCP\", M.Phil. thesis, Information Engineering, The Chinese University of Hong Kong, September 2006",
        anchor: "p3",
    },
    Paper {
        id: "P4",
        number: "004",
        citation: "D. Bansal, P. A. S. Ward, \"Third-Party Flow Control\", Shoshin Research Group, Department of \
                   Electrical and Computer Engineering, University of Waterloo (the text states no venue or year)",
        anchor: "p4",
    },
];

/// The paper an experiment ID (`P2-F10`) or paper prefix (`P2`) belongs to.
pub fn paper_of(id: &str) -> Option<&'static Paper> {
    let head = id.split('-').next().unwrap_or(id);
    PAPERS.iter().find(|p| p.id.eq_ignore_ascii_case(head))
}

/// Every registered experiment, in paper order.
pub fn registry() -> Vec<Experiment> {
    let mut v: Vec<Experiment> = Vec::new();
    // Each paper module appends its experiments here.
    v.extend(p2::experiments());
    v.extend(p3::experiments());
    v.extend(p4::experiments());
    v.extend(p0::experiments());
    v.extend(p1::experiments());
    v.sort_by_key(|e| id_order(e.id));
    v
}

/// Find experiments by ID (case-insensitive); a prefix such as `P2` selects all of that paper.
pub fn select<'a>(all: &'a [Experiment], ids: &[String]) -> Result<Vec<&'a Experiment>, String> {
    if ids.is_empty() {
        return Ok(all.iter().collect());
    }
    let mut out = Vec::new();
    for id in ids {
        let up = id.to_ascii_uppercase();
        let hits: Vec<&Experiment> = all
            .iter()
            .filter(|e| {
                let eu = e.id.to_ascii_uppercase();
                eu == up || eu.starts_with(&format!("{up}-"))
            })
            .collect();
        if hits.is_empty() {
            let known: Vec<&str> = all.iter().map(|e| e.id).collect();
            return Err(format!("unknown experiment `{id}`; known: {}", known.join(", ")));
        }
        for h in hits {
            if !out.iter().any(|e: &&Experiment| e.id == h.id) {
                out.push(h);
            }
        }
    }
    Ok(out)
}

/// How an experiment was run (for `run.json`, the report and the index).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct RunInfo {
    pub id: String,
    pub title: String,
    pub file: String,
    pub quick: bool,
    pub seed: u64,
    /// Wall-clock time of the experiment (s).
    pub wall_s: f64,
    /// Worker threads used.
    pub workers: usize,
    pub claims: usize,
    pub claims_hold: usize,
    /// The `--set KEY=VALUE`s the experiment file was run with (none: as written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
}

impl RunInfo {
    pub fn new(out: &ExpOutput, exp: &Experiment, quick: bool, seed: u64, wall_s: f64) -> RunInfo {
        RunInfo {
            id: exp.id.to_string(),
            title: if out.title.is_empty() { exp.title.to_string() } else { out.title.clone() },
            file: exp.file.to_string(),
            quick,
            seed,
            wall_s,
            workers: workers(),
            claims: out.claims.len(),
            claims_hold: out.claims.iter().filter(|c| c.holds).count(),
            set: Vec::new(),
        }
    }

    /// The command that reproduces this run.
    pub fn command(&self) -> String {
        let mut c = format!("ackshape reproduce {}", self.id);
        if self.quick {
            c += " --quick";
        }
        if self.seed != 1 {
            c += &format!(" --seed {}", self.seed);
        }
        for kv in &self.set {
            c += &format!(" --set {}", shell_word(kv));
        }
        c
    }
}

/// `w` as one POSIX shell word: as it is if it has nothing the shell would interpret, else in
/// single quotes.
fn shell_word(w: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-.,/=:+%@".contains(c);
    if !w.is_empty() && w.chars().all(plain) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// An experiment file's text with some keys changed (`reproduce --set`): each `(key, value)` is
/// written into the document (tables on the way are created), the result is checked as a scenario
/// (errors name the file, the key and the `--set`s), and returned as TOML text. The experiment's
/// code reads the changed document as it would the file; keys it sets itself per run (what it
/// sweeps) still take its values.
pub fn apply_sets(text: &str, file: &str, sets: &[(String, toml::Value)]) -> Result<String, String> {
    let mut t: toml::Table = text.parse().map_err(|e| format!("{file}: {e}"))?;
    // As typed: strings without their quotes.
    let shown: Vec<String> =
        sets.iter().map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect();
    let with = || format!(" (with --set {})", shown.join(" --set "));
    for (k, v) in sets {
        set_path(&mut t, k, v.clone()).map_err(|m| format!("{file}: {m}{}", with()))?;
    }
    Scenario::from_table(t.clone(), file).map_err(|e| format!("{e}{}", with()))?;
    check_finite(&t).map_err(|m| format!("{file}: {m}{}", with()))?;
    toml::to_string(&t).map_err(|e| format!("{file}: cannot write the changed document: {e}"))
}

/// What `reproduce --set` would change nothing with, checked on the experiment's file before
/// anything runs. Errors: a key under `[paper]` or `[reproduce]` when the file has no such table
/// (its experiment reads its settings elsewhere), and, with `--quick`, a key the quick settings
/// shadow (`paper.quick.K`, `reproduce.quick.K`, a sibling `quick_K`; `duration`/`warmup` under
/// `paper.quick` or `reproduce.quick_*`): the run would read those instead. Returns warnings for
/// keys under `[paper]`/`[reproduce]` that the file does not have (read only if the experiment's
/// code knows them; an unknown key of a checked section is an error when it runs).
pub fn check_set_keys(text: &str, file: &str, id: &str, keys: &[String], quick: bool) -> Result<Vec<String>, String> {
    let t: toml::Table = text.parse().map_err(|e| format!("{file}: {e}"))?;
    let mut warnings = Vec::new();
    for key in keys {
        let (top, rest) = key.split_once('.').unwrap_or((key.as_str(), ""));
        let section = top.split('[').next().unwrap_or(top);
        let settings = || {
            ["paper", "reproduce"].iter().filter(|s| t.contains_key(**s)).map(|s| format!("[{s}]")).collect::<Vec<_>>()
        };
        if matches!(section, "paper" | "reproduce") && !t.contains_key(section) {
            return Err(format!(
                "{file}: key `{key}`: the file has no [{section}] table, so {id} reads nothing there \
                 (its settings are under {})",
                settings().join(" and ")
            ));
        }
        if quick {
            let mut shadows = Vec::new();
            let (parent, last) = match key.rsplit_once('.') {
                Some((p, l)) => (Some(p), l),
                None => (None, key.as_str()),
            };
            if matches!(section, "paper" | "reproduce") && !rest.is_empty() && !rest.starts_with("quick") {
                shadows.push(format!("{section}.quick.{rest}"));
            }
            if !last.starts_with("quick") {
                match parent {
                    Some(p) => shadows.push(format!("{p}.quick_{last}")),
                    None if matches!(key.as_str(), "duration" | "warmup") => {
                        shadows.push(format!("paper.quick.{key}"));
                        shadows.push(format!("reproduce.quick_{key}"));
                    }
                    None => {}
                }
            }
            if let Some(sh) = shadows.iter().find(|p| get_path(&t, p).is_some()) {
                return Err(format!(
                    "{file}: key `{key}`: with --quick {id} reads `{sh}` instead, so this would change nothing; \
                     set `{sh}` (or run without --quick)"
                ));
            }
        }
        if matches!(section, "paper" | "reproduce") && get_path(&t, key).is_none() {
            warnings.push(format!(
                "{file}: key `{key}` is not in the file: {id} reads it only if its code knows the key \
                 (if not, the run is the same as without it)"
            ));
        }
    }
    Ok(warnings)
}

/// Every number under `[paper]` and `[reproduce]` (the paper's values, tolerances, sweep points,
/// seeds) must be finite: a NaN tolerance would make a claim fail with "within NaN%", a NaN sweep
/// point would run as a nonsense scenario. The scenario's own keys are checked by the scenario.
/// The error names the first offending key (`paper.tolerance.x`, `reproduce.loss[1]`).
///
/// A seed count (`seeds`, `quick_seeds`) must be 1 … [`crate::sweep::MAX_SEEDS`]: a billion seeds
/// would not run out of time but out of memory, building the list of runs.
fn check_finite(t: &toml::Table) -> Result<(), String> {
    fn walk(v: &toml::Value, path: &str) -> Result<(), String> {
        let max = crate::sweep::MAX_SEEDS as i64;
        match v {
            toml::Value::Float(x) if !x.is_finite() => Err(format!("key `{path}`: expected a finite number, got {x}")),
            toml::Value::Integer(n)
                if (path.ends_with(".seeds") || path.ends_with(".quick_seeds")) && !(1..=max).contains(n) =>
            {
                Err(format!("key `{path}`: expected a number of seeds from 1 to {max}, got {n}"))
            }
            toml::Value::Array(a) => a.iter().enumerate().try_for_each(|(i, x)| walk(x, &format!("{path}[{i}]"))),
            toml::Value::Table(t) => t.iter().try_for_each(|(k, x)| walk(x, &format!("{path}.{k}"))),
            _ => Ok(()),
        }
    }
    ["paper", "reproduce"].iter().filter_map(|k| t.get(*k).map(|v| (k, v))).try_for_each(|(k, v)| walk(v, k))
}

/// One claim as `reproduce --json` prints it: flat, with the experiment's ID.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimRecord {
    /// The experiment ID (e.g. `P2-F10`).
    pub id: String,
    /// The claim's ID within the experiment (e.g. `afvq-highest`).
    pub claim_id: String,
    pub claim: String,
    pub paper: String,
    pub measured: String,
    pub tolerance: String,
    pub holds: bool,
    /// The experiment's title and file, and whether it ran in quick mode.
    pub title: String,
    pub file: String,
    pub quick: bool,
    /// The `--set KEY=VALUE`s the experiment ran with (absent: as written).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
}

/// The claims of one experiment as flat records.
pub fn claim_records(out: &ExpOutput, exp: &Experiment, quick: bool) -> Vec<ClaimRecord> {
    out.claims
        .iter()
        .map(|c| ClaimRecord {
            id: exp.id.to_string(),
            claim_id: c.id.clone(),
            claim: c.claim.clone(),
            paper: c.paper.clone(),
            measured: c.measured.clone(),
            tolerance: c.tolerance.clone(),
            holds: c.holds,
            title: if out.title.is_empty() { exp.title.to_string() } else { out.title.clone() },
            file: exp.file.to_string(),
            quick,
            set: Vec::new(),
        })
        .collect()
}

/// Write `claims.json`, one CSV per table, the plots and `report.md` into `dir` (created).
pub fn write_output(out: &ExpOutput, exp: &Experiment, quick: bool, dir: &Path) -> std::io::Result<PathBuf> {
    write_output_with(out, exp, &RunInfo::new(out, exp, quick, 1, 0.0), dir)
}

/// [`write_output`] with the run's details, which also go to `run.json` (read by [`write_index`]).
pub fn write_output_with(out: &ExpOutput, exp: &Experiment, run: &RunInfo, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    // Both start with the build that produced them (`ackshape`: version, commit).
    use crate::provenance::pretty_stamped;
    std::fs::write(dir.join("claims.json"), pretty_stamped(out) + "\n")?;
    std::fs::write(dir.join("run.json"), pretty_stamped(run) + "\n")?;
    for t in &out.tables {
        let mut s = t.columns.join(",") + "\n";
        for r in &t.rows {
            let cells: Vec<String> = r.iter().map(csv_cell).collect();
            s += &cells.join(",");
            s.push('\n');
        }
        std::fs::write(dir.join(format!("{}.csv", t.name)), s)?;
    }
    for (name, plot) in &out.plots {
        plot.write(dir, name)?;
    }
    let report = dir.join("report.md");
    std::fs::write(&report, markdown_with(out, exp, run))?;
    Ok(report)
}

/// Write `index.md` in `root`: every experiment found under it (`ID/run.json`), with its claims
/// held and a link to its report. Experiments run at different times accumulate.
pub fn write_index(root: &Path) -> std::io::Result<PathBuf> {
    let mut runs: Vec<(RunInfo, Vec<Claim>)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let d = e.path();
            let Ok(text) = std::fs::read_to_string(d.join("run.json")) else { continue };
            let Ok(run) = serde_json::from_str::<RunInfo>(&text) else { continue };
            let claims = std::fs::read_to_string(d.join("claims.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v.get("claims").cloned())
                .and_then(|c| serde_json::from_value::<Vec<Claim>>(c).ok())
                .unwrap_or_default();
            runs.push((run, claims));
        }
    }
    runs.sort_by_key(|r| id_order(&r.0.id));
    let mut s = String::from("# Reproduced experiments\n\n");
    s += "Each row links to the experiment's report (paper vs measured for every claim, tables, plots).\n\n";
    s += "| experiment | title | claims hold | mode | wall time | command |\n|---|---|---|---|---|---|\n";
    for (r, _) in &runs {
        s += &format!(
            "| [{}]({}/report.md) | {} | {}/{} | {} | {:.0} s | `{}` |\n",
            r.id,
            r.id,
            r.title.replace('|', "\\|"),
            r.claims_hold,
            r.claims,
            if r.quick { "quick" } else { "full" },
            r.wall_s,
            r.command()
        );
    }
    s += "\n## Claims\n\n| experiment | claim | paper | measured | holds |\n|---|---|---|---|---|\n";
    for (r, claims) in &runs {
        for c in claims {
            s += &format!(
                "| {} | {} | {} | {} | {} |\n",
                r.id,
                c.claim.replace('|', "\\|"),
                c.paper.replace('|', "\\|"),
                c.measured.replace('|', "\\|"),
                if c.holds { "yes" } else { "**no**" }
            );
        }
    }
    let p = root.join("index.md");
    std::fs::create_dir_all(root)?;
    std::fs::write(&p, s)?;
    Ok(p)
}

/// Sort key for IDs such as `P2-F9` < `P2-F10` < `P2-S2b`: numbers compare as numbers.
pub fn id_order(id: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut num = String::new();
    for ch in id.chars() {
        if ch.is_ascii_digit() {
            num.push(ch);
        } else {
            if !num.is_empty() {
                out.push((std::mem::take(&mut text), num.parse().unwrap_or(0)));
                num.clear();
            }
            text.push(ch);
        }
    }
    out.push((text, num.parse().unwrap_or(0)));
    out
}

fn csv_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) if s.contains([',', '"', '\n']) => format!("\"{}\"", s.replace('"', "\"\"")),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn md_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.replace('|', "\\|"),
        serde_json::Value::Null => "–".into(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.4}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// The Markdown report of one experiment.
pub fn markdown(out: &ExpOutput, exp: &Experiment, quick: bool) -> String {
    markdown_with(out, exp, &RunInfo::new(out, exp, quick, 1, 0.0))
}

/// The Markdown report of one experiment, with how it was run.
pub fn markdown_with(out: &ExpOutput, exp: &Experiment, run: &RunInfo) -> String {
    let id = if out.id.is_empty() { exp.id } else { out.id.as_str() };
    let title = if out.title.is_empty() { exp.title } else { out.title.as_str() };
    let mut s = format!("# {id} — {title}\n\n");
    if let Some(p) = paper_of(id) {
        s += &format!(
            "Paper {} (paper {}): {}. Set-up, assumptions and traps: `docs/experiments.md#{}`.\n\n",
            p.id, p.number, p.citation, p.anchor
        );
    }
    s += &format!("Experiment file: `{}`", exp.file);
    if run.quick {
        s += " (quick mode: fewer seeds/points than the full run)";
    }
    if !run.set.is_empty() {
        s += &format!(
            "\n\n**Changed from the file** (`--set`): {}. The paper's values and the tolerances are the file's; \
             keys the experiment sets per run (what it sweeps) keep its values.",
            run.set.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        );
    }
    s += &format!("\n\nCommand: `{}`", run.command());
    if run.wall_s > 0.0 {
        s += &format!(" ({:.0} s on {} worker threads)", run.wall_s, run.workers);
    }
    s += &format!(
        "\n\n## Claims ({}/{} hold)\n\n| id | claim | paper | measured | tolerance | holds |\n|---|---|---|---|---|---|\n",
        out.claims.iter().filter(|c| c.holds).count(),
        out.claims.len()
    );
    for c in &out.claims {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            c.id.replace('|', "\\|"),
            c.claim.replace('|', "\\|"),
            c.paper.replace('|', "\\|"),
            c.measured.replace('|', "\\|"),
            c.tolerance.replace('|', "\\|"),
            if c.holds { "yes" } else { "**no**" }
        );
    }
    for t in &out.tables {
        s += &format!("\n## {}\n\n| {} |\n|{}\n", t.name, t.columns.join(" | "), "---|".repeat(t.columns.len()));
        for r in &t.rows {
            let cells: Vec<String> = r.iter().map(md_cell).collect();
            s += &format!("| {} |\n", cells.join(" | "));
        }
    }
    if !out.plots.is_empty() {
        s += "\n## Plots\n\n";
        for (name, _) in &out.plots {
            s += &format!("![{name}]({name})\n");
        }
    }
    if !out.notes.is_empty() {
        s += "\n## Notes\n\n";
        for n in &out.notes {
            s += &format!("- {n}\n");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dummy(_: &Experiment, _: &mut Ctx) -> Result<ExpOutput, String> {
        Ok(ExpOutput::default())
    }

    #[test]
    fn select_by_id_and_prefix() {
        let all = vec![
            Experiment { id: "P2-F10", title: "", file: "", text: "", run: dummy },
            Experiment { id: "P2-F9", title: "", file: "", text: "", run: dummy },
            Experiment { id: "P3-F2", title: "", file: "", text: "", run: dummy },
        ];
        assert_eq!(select(&all, &["p2".into()]).unwrap().len(), 2);
        assert_eq!(select(&all, &["P3-F2".into()]).unwrap()[0].id, "P3-F2");
        let all2 = vec![Experiment { id: "P4-S4.1a", title: "", file: "", text: "", run: dummy }];
        assert_eq!(select(&all2, &["p4-s4.1A".into()]).unwrap()[0].id, "P4-S4.1a", "IDs with lower-case letters");
        let e = select(&all, &["P9".into()]).err().unwrap();
        assert!(e.contains("unknown experiment `P9`") && e.contains("P2-F10"), "{e}");
    }

    #[test]
    fn run_parallel_keeps_job_order_and_reports_progress() {
        let jobs: Vec<u64> = (0..37).collect();
        // Uneven work so that completions come out of order with several workers.
        let f = |&j: &u64| (0..(37 - j) * 2000).fold(j, |a, k| a.wrapping_mul(6364136223846793005).wrapping_add(k));
        let mut seen = Vec::new();
        let one = run_parallel(&jobs, 1, f, &mut |k| seen.push(k));
        assert_eq!(seen, (1..=37).collect::<Vec<_>>());
        for w in [2, 3, 8, 100] {
            let mut count = 0;
            let many = run_parallel(&jobs, w, f, &mut |k| {
                count += 1;
                assert_eq!(k, count);
            });
            assert_eq!(many, one, "{w} workers");
            assert_eq!(count, 37);
        }
        assert!(run_parallel(&Vec::<u64>::new(), 4, f, &mut |_| panic!("no jobs")).is_empty());
    }

    const SCEN: &str = r#"
name = "t"
duration = "3s"
warmup = "1s"
[tcp]
cc = "reno"
[topology]
kind = "graph"
nodes = [{ name = "a", kind = "host" }, { name = "r", kind = "router" }, { name = "b", kind = "host" }]
links = [
  { name = "l1", a = "a", b = "r", rate = "10Mbit/s", delay = "5ms" },
  { name = "l2", a = "r", b = "b", rate = "2Mbit/s", delay = "10ms", loss = { kind = "bernoulli", p = 0.01 }, loss_both_ways = true },
]
[[flows]]
from = "a"
to = "b"
[[flows]]
from = "b"
to = "a"
[reproduce]
seeds = 3
"#;

    #[test]
    fn sims_give_the_same_results_with_one_or_many_workers() {
        let f = ExpFile::parse_text(SCEN, "t.toml").unwrap();
        let mut jobs = Vec::new();
        for (i, rate) in ["2Mbit/s", "1Mbit/s", "500kbit/s"].iter().enumerate() {
            for seed in 1..=3 {
                let sc = f.scenario_with(&[("topology.links[1].rate".into(), toml::Value::String(rate.to_string()))]);
                jobs.push(SimJob { label: format!("{i}/{seed}"), scenario: sc.unwrap(), file: f.file.clone(), seed });
            }
        }
        let key = |r: &Result<Summary, String>| {
            let s = r.as_ref().unwrap();
            s.flows.iter().map(|f| (f.goodput_bps, f.retransmitted_packets, f.timeouts)).collect::<Vec<_>>()
        };
        set_workers(1);
        let mut last = 0.0;
        let mut progress = |p: f64| {
            assert!(p >= last && p <= 1.0);
            last = p;
        };
        let one: Vec<_> = Ctx { quick: true, seed: 1, progress: Some(&mut progress) }.run_sims(&jobs);
        set_workers(3);
        let many: Vec<_> = Ctx::new(true, 1).run_sims(&jobs);
        set_workers(0);
        assert_eq!(one.iter().map(key).collect::<Vec<_>>(), many.iter().map(key).collect::<Vec<_>>());
        // The sweep value and the seeds matter (the comparison is not vacuous).
        assert_ne!(key(&one[0]), key(&one[1]));
        assert_ne!(key(&one[0]), key(&one[3]));
    }

    #[test]
    fn experiment_file_errors_name_the_file_and_key() {
        let f = ExpFile::parse_text(SCEN, "experiments/t.toml").unwrap();
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct R {
            seeds: u32,
            sweep: Vec<f64>,
        }
        let e = f.section::<R>("reproduce").unwrap_err();
        assert!(e.contains("experiments/t.toml: key `reproduce") && e.contains("sweep"), "{e}");
        let bad = SCEN.replace("seeds = 3", "seeds = \"three\"\nsweep = [1.0]");
        let e = ExpFile::parse_text(&bad, "experiments/t.toml").unwrap().section::<R>("reproduce").unwrap_err();
        assert!(e.starts_with("experiments/t.toml: key `reproduce.seeds`"), "{e}");
        let e = f.section::<R>("nothing.here").unwrap_err();
        assert_eq!(e, "experiments/t.toml: key `nothing.here`: missing");
        // Base scenario errors, TOML errors and bad edits name the file and key too.
        let e = ExpFile::parse_text(&SCEN.replace("10Mbit/s", "fast"), "x.toml").unwrap_err();
        assert!(e.starts_with("x.toml: key `topology.links[0].rate`"), "{e}");
        let e = ExpFile::parse_text("a = [", "x.toml").unwrap_err();
        assert!(e.starts_with("x.toml: TOML syntax error at line 1"), "{e}");
        let e = f.scenario_with(&[("topology.links[5].rate".into(), toml::Value::String("1Mbit/s".into()))]);
        assert!(e.unwrap_err().contains("key `topology.links[5].rate`: `links` has 2 elements, no index 5"));
        let e = f.scenario_with(&[("topology.links[1].rate".into(), toml::Value::String("slow".into()))]);
        assert!(e.unwrap_err().starts_with("experiments/t.toml: key `topology.links[1].rate`"));
    }

    #[test]
    fn paper_notes_come_from_the_paper_table() {
        let text = format!("{SCEN}\n[paper]\nsource = \"Fig. 1\"\nstated = [\"a\", \"b\"]\nassumed = [\"X-1: c\"]\n");
        let f = ExpFile::parse_text(&text, "t.toml").unwrap();
        assert_eq!(f.paper_notes(), ["Source: Fig. 1.", "Paper: a", "Paper: b", "Assumed: X-1: c"]);
        assert!(ExpFile::parse_text(SCEN, "t.toml").unwrap().paper_notes().is_empty());
    }

    #[test]
    fn set_and_get_paths() {
        let mut t: toml::Table = SCEN.parse().unwrap();
        set_path(&mut t, "topology.links[1].reverse.rate", "1Mbit/s".into()).unwrap();
        set_path(&mut t, "tcp.min_rto", "200ms".into()).unwrap();
        assert_eq!(get_path(&t, "topology.links[1].reverse.rate").and_then(|v| v.as_str()), Some("1Mbit/s"));
        assert_eq!(get_path(&t, "tcp.min_rto").and_then(|v| v.as_str()), Some("200ms"));
        assert_eq!(get_path(&t, "topology.links[0].name").and_then(|v| v.as_str()), Some("l1"));
        assert!(get_path(&t, "topology.links[7]").is_none());
        assert!(set_path(&mut t, "name.x", 1.into()).unwrap_err().contains("`name` is not a table"));
        assert!(set_path(&mut t, "a..b", 1.into()).is_err());
        let sc = Scenario::from_table(t, "t.toml").unwrap();
        assert_eq!(sc.tcp.min_rto.map(|d| d.0), Some(ackshape_core::time::Dur::from_millis(200)));
    }

    #[test]
    fn every_experiment_file_survives_a_set_and_names_bad_ones() {
        for e in registry() {
            // Nothing changed: the same document (comments aside).
            let same = apply_sets(e.text, e.file, &[]).unwrap_or_else(|m| panic!("{}: {m}", e.id));
            let (a, b): (toml::Table, toml::Table) = (e.text.parse().unwrap(), same.parse().unwrap());
            assert_eq!(a, b, "{}", e.id);
        }
        let f9 = registry().into_iter().find(|e| e.id == "P0-F9").unwrap();
        let t = apply_sets(f9.text, f9.file, &[("tcp.cc".into(), toml::Value::String("reno".into()))]).unwrap();
        let t: toml::Table = t.parse().unwrap();
        assert_eq!(get_path(&t, "tcp.cc").and_then(|v| v.as_str()), Some("reno"));
        assert!(get_path(&t, "paper.schemes").is_some(), "the [paper] table stays");
        let e = apply_sets(f9.text, f9.file, &[("tcp.cc".into(), toml::Value::String("vegas".into()))]).unwrap_err();
        assert!(
            e.contains("experiments/p0/f9-loss.toml: key `tcp.cc`") && e.contains("(with --set tcp.cc=vegas)"),
            "{e}"
        );
        let e = apply_sets(f9.text, f9.file, &[("flows[4].count".into(), toml::Value::Integer(2))]).unwrap_err();
        assert!(e.contains("no index 4"), "{e}");
        // A non-finite paper value, tolerance or sweep point is refused, naming the key.
        let nan = |k: &str| apply_sets(f9.text, f9.file, &[(k.into(), toml::Value::Float(f64::NAN))]);
        let e = nan("paper.tolerance.pfq_postack").unwrap_err();
        assert!(e.contains("key `paper.tolerance.pfq_postack`: expected a finite number, got NaN"), "{e}");
        let e = nan("paper.loss[1]").unwrap_err();
        assert!(e.contains("key `paper.loss[1]`: expected a finite number"), "{e}");
        let inf = toml::Value::Float(f64::INFINITY);
        for n in [0, 1_000_000_000] {
            let e = apply_sets(f9.text, f9.file, &[("paper.seeds".into(), toml::Value::Integer(n))]).unwrap_err();
            assert!(e.contains("key `paper.seeds`: expected a number of seeds from 1 to 10000"), "{e}");
        }
        let e = apply_sets(f9.text, f9.file, &[("paper.values.no_difference_above".into(), inf)]).unwrap_err();
        assert!(e.contains("key `paper.values.no_difference_above`: expected a finite number, got inf"), "{e}");
        assert!(
            apply_sets(f9.text, f9.file, &[("paper.tolerance.pfq_postack".into(), toml::Value::Float(0.2))]).is_ok()
        );
        assert_eq!(shell_word("tcp.cc=reno"), "tcp.cc=reno");
        assert_eq!(shell_word(r#"a={ kind = "red" }"#), r#"'a={ kind = "red" }'"#);
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        let run = RunInfo { id: "P0-F9".into(), set: vec!["tcp.cc=reno".into()], seed: 1, ..Default::default() };
        assert_eq!(run.command(), "ackshape reproduce P0-F9 --set tcp.cc=reno");
    }

    #[test]
    fn ids_sort_numerically() {
        let mut v = vec!["P2-S2b", "P2-F10", "P2-F9", "P10-F1", "P2-F3"];
        v.sort_by_key(|a| id_order(a));
        assert_eq!(v, ["P2-F3", "P2-F9", "P2-F10", "P2-S2b", "P10-F1"]);
    }
}
