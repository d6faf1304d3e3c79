//! # ackshape-repro
//!
//! `ackshape reproduce`: the papers' experiments as code, each with claims checked against the
//! paper's values.
//!
//! An [`Experiment`] has an ID (e.g. `P2-F10`: paper P2, Fig. 10; the papers are [`PAPERS`]), an embedded
//! TOML file under `experiments/` (base scenario, sweeps, and under `[paper]` the claims with the paper's
//! values, checks, tolerances and miss causes, and the readings of unstated parameters: [`claims`]), and a
//! runner that measures: it returns an [`ExpOutput`] with one [`Measured`] per claim, tables (written as
//! CSV) and plots (SVG). [`run_experiment`] runs it (and its readings) and judges the claims;
//! [`write_output`] writes the records, tables, plots and a Markdown report into `OUT/ID/`.
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

pub use ackshape_core::tcp::TcpStats;
use ackshape_sim::scenario::Scenario;
pub use ackshape_sim::sweep::{RunJob, RunRecord, Runner};
use experiment::check_finite;
use run::reborrow;
use serde::Serialize;

pub use ackshape_sim::keypath::{get_path, path_steps, set_path};
pub use ackshape_sim::parallel::{run_parallel, set_workers, workers};
pub use ackshape_sim::stats::{mean, mean_sd, sem};

mod p4;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub mod edge;
pub mod modern;
pub mod p0;
pub mod p1;
pub mod p2;
pub mod p3;

pub mod claims;
pub use claims::{ClaimRecord, Measured, Status};

// The types the paper modules and `claims` share sit in these two leaf modules (they use neither
// this root nor a paper module), so that no paper module has to name the root that registers it.
mod experiment;
mod run;
pub use experiment::{ExpFile, ExpOutput, Experiment, Table};
pub use run::{Ctx, RunView, SimJob};

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

/// The prefix of the modern-baselines study's experiments (`M-P0` … `M-P4`): no paper's claims,
/// the study's own questions (`docs/modern-baselines.md`).
pub const STUDY: &str = "M";

/// The study's one-line description (`reproduce --list`).
pub const STUDY_DESCRIPTION: &str = "the modern-baselines study (no paper): each paper's headline set-up against \
                                     FQ-CoDel, PIE, a CAKE-like shaper and RED/ECN with Reno, CUBIC and BBR senders \
                                     (docs/modern-baselines.md)";

/// One totals line per paper with records (`P2 (paper 002): partly reproduced: 7 of 12 claims hold, …`),
/// then the study's (`M (modern-baselines study): study: 3 of 5 questions hold, …`).
pub fn totals(records: &[ClaimRecord]) -> Vec<String> {
    let mut out = Vec::new();
    for p in &PAPERS {
        let mine: Vec<&ClaimRecord> =
            records.iter().filter(|r| paper_of(&r.id).is_some_and(|q| q.id == p.id)).collect();
        if !mine.is_empty() {
            out.push(format!("{} (paper {}): {}", p.id, p.number, claims::verdict_line(claims::counts(mine))));
        }
    }
    let study: Vec<&ClaimRecord> = records.iter().filter(|r| is_study(&r.id)).collect();
    if !study.is_empty() {
        out.push(format!("{STUDY} (modern-baselines study): {}", verdict_for(STUDY, claims::counts(study))));
    }
    out
}

/// Whether an experiment ID (`M-P2`) or prefix (`M`) is the modern-baselines study's.
pub fn is_study(id: &str) -> bool {
    id.split('-').next().unwrap_or(id).eq_ignore_ascii_case(STUDY)
}

/// The one-line verdict of an experiment's counted records: the papers' (`partly reproduced: 7 of 12
/// claims hold, …`) or, for the study, `study: 3 of 5 questions hold, 2 fail, 0 not assessable`.
pub fn verdict_for(id: &str, c: (usize, usize, usize)) -> String {
    if is_study(id) {
        format!("study: {}", claims::study_line(c))
    } else {
        claims::verdict_line(c)
    }
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
    v.extend(modern::experiments());
    // The papers first, then the study.
    v.sort_by_key(|e| (is_study(e.id), id_order(e.id)));
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

/// Run an experiment and make its claim records: the experiment's code measures, the file's
/// `[[paper.claims]]` judge ([`claims::evaluate`]). With `ctx.readings`, every other value of the file's
/// `[[paper.readings]]` (in quick mode those with `quick = true`) re-runs the experiment with the file
/// changed as that value says, and adds one record per claim the reading lists (`primary = false`),
/// plus a `readings` table. Progress runs from 0 to 1 over all of it.
pub fn run_experiment(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let groups =
        if ctx.readings && !ctx.mechanism_off { claims::readings(exp.text, exp.file, exp.id)? } else { Vec::new() };
    let others: Vec<(usize, &claims::ReadingValue)> = groups
        .iter()
        .enumerate()
        .flat_map(|(gi, g)| g.values.iter().filter(|v| v.quick || !ctx.quick).map(move |v| (gi, v)))
        .collect();
    let total = 1 + others.len();
    // A claim under several groups was run under each group's primary value.
    let mut primary_labels: BTreeMap<String, String> = BTreeMap::new();
    for g in &groups {
        for c in &g.claims {
            let l = g.label(&g.primary);
            primary_labels.entry(c.clone()).and_modify(|x| *x = format!("{x}; {l}")).or_insert(l);
        }
    }
    let mut out = run_once(exp, ctx, 0, total, &primary_labels, None)?;
    if others.is_empty() {
        return Ok(out);
    }
    let mut rows = Vec::new();
    let primary_rows: Vec<Vec<serde_json::Value>> =
        out.claims.iter().filter(|r| primary_labels.contains_key(&r.claim_id)).map(|r| reading_row(r, true)).collect();
    rows.extend(primary_rows);
    for (k, (gi, v)) in others.iter().enumerate() {
        let g = &groups[*gi];
        let sets: Vec<(String, toml::Value)> = v.set.iter().map(|(k, x)| (k.clone(), x.clone())).collect();
        let text = apply_sets(exp.text, exp.file, &sets)
            .map_err(|e| format!("{e} (reading \"{}\" of `paper.readings`)", g.label(&v.name)))?;
        // Experiments borrow their file's text for the whole program; one changed copy per reading run.
        let changed = Experiment { text: Box::leak(text.into_boxed_str()), ..*exp };
        let label = g.label(&v.name);
        let labels: BTreeMap<String, String> = g.claims.iter().map(|c| (c.clone(), label.clone())).collect();
        let o = run_once(&changed, ctx, 1 + k, total, &labels, Some(&g.claims))?;
        for mut r in o.claims {
            r.primary = false;
            rows.push(reading_row(&r, false));
            out.claims.push(r);
        }
    }
    out.tables.push(Table {
        name: "readings".into(),
        columns: ["claim", "reading", "primary", "status", "measured_value", "unit", "measured"]
            .map(String::from)
            .to_vec(),
        rows,
    });
    for g in &groups {
        let mut line = format!(
            "Unstated parameter: {} (primary: {}{}); other readings: {}.",
            g.parameter,
            g.primary,
            if g.why.is_empty() { String::new() } else { format!(", {}", g.why) },
            g.values
                .iter()
                .map(|v| format!("{}{}", v.name, if ctx.quick && !v.quick { " (full run only)" } else { "" }))
                .collect::<Vec<_>>()
                .join("; ")
        );
        for c in &g.claims {
            let under: Vec<String> = out
                .claims
                .iter()
                .filter(|r| &r.claim_id == c && r.status == Status::Holds)
                .map(|r| r.reading.strip_prefix(&format!("{}: ", g.parameter)).unwrap_or(&r.reading).to_string())
                .collect();
            if out.claims.iter().any(|r| &r.claim_id == c) {
                line += &format!(
                    " `{c}` holds under: {}.",
                    if under.is_empty() { "none of them".to_string() } else { under.join("; ") }
                );
            }
        }
        out.notes.push(line);
    }
    Ok(out)
}

fn reading_row(r: &ClaimRecord, primary: bool) -> Vec<serde_json::Value> {
    vec![
        r.claim_id.clone().into(),
        r.reading.clone().into(),
        primary.into(),
        r.status.as_str().into(),
        r.measured_value.map(serde_json::Value::from).unwrap_or(serde_json::Value::Null),
        r.unit.clone().into(),
        r.measured.clone().into(),
    ]
}

/// One run of `exp` (part `k` of `total` for the progress), evaluated against its file's claims
/// (`only`: just these claims, for a reading's run, which may leave the others out).
fn run_once(
    exp: &Experiment,
    ctx: &mut Ctx,
    k: usize,
    total: usize,
    labels: &BTreeMap<String, String>,
    only: Option<&[String]>,
) -> Result<ExpOutput, String> {
    let mut specs = claims::specs(exp.text, exp.file, exp.id)?;
    if let Some(ids) = only {
        specs.retain(|c| ids.contains(&c.id));
    }
    let (quick, seed, off, readings) = (ctx.quick, ctx.seed, ctx.mechanism_off, ctx.readings);
    let Ctx { progress: parent, runner, .. } = ctx;
    let mut p = |f: f64| {
        if let Some(q) = parent.as_mut() {
            q((k as f64 + f.clamp(0.0, 1.0)) / total as f64)
        }
    };
    let mut sub = Ctx { quick, seed, progress: Some(&mut p), mechanism_off: off, readings, runner: reborrow(runner) };
    let mut out = (exp.run)(exp, &mut sub)?;
    let title = if out.title.is_empty() { exp.title.to_string() } else { out.title.clone() };
    let rc = claims::RecordCtx { exp_id: exp.id, title: &title, file: exp.file, quick };
    if only.is_some() {
        out.measured.retain(|(id, _)| specs.iter().any(|c| &c.id == id));
    }
    out.claims = claims::evaluate(&specs, &out.measured, &out.activity, labels, &rc)?;
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
    /// Counted claims (primary, not supplementary) and how many hold, fail, are not assessable.
    pub claims: usize,
    pub holds: usize,
    pub fails: usize,
    pub not_assessable: usize,
    /// The `--set KEY=VALUE`s the experiment file was run with (none: as written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
}

impl RunInfo {
    pub fn new(out: &ExpOutput, exp: &Experiment, quick: bool, seed: u64, wall_s: f64) -> RunInfo {
        let (h, f, n) = claims::counts(&out.claims);
        RunInfo {
            id: exp.id.to_string(),
            title: if out.title.is_empty() { exp.title.to_string() } else { out.title.clone() },
            file: exp.file.to_string(),
            quick,
            seed,
            wall_s,
            workers: workers(),
            claims: h + f + n,
            holds: h,
            fails: f,
            not_assessable: n,
            set: Vec::new(),
        }
    }

    /// `partly reproduced: 7 of 12 claims hold, 3 fail, 2 not assessable` ([`verdict_for`]).
    pub fn verdict(&self) -> String {
        verdict_for(&self.id, (self.holds, self.fails, self.not_assessable))
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

/// The claim records of one experiment, each with the `--set`s it ran with.
pub fn claim_records(out: &ExpOutput, set: &[String]) -> Vec<ClaimRecord> {
    out.claims.iter().map(|c| ClaimRecord { set: set.to_vec(), ..c.clone() }).collect()
}

/// Write `claims.json`, one CSV per table, the plots and `report.md` into `dir` (created).
pub fn write_output(out: &ExpOutput, exp: &Experiment, quick: bool, dir: &Path) -> std::io::Result<PathBuf> {
    write_output_with(out, exp, &RunInfo::new(out, exp, quick, 1, 0.0), dir)
}

/// [`write_output`] with the run's details, which also go to `run.json` (read by [`write_index`]).
///
/// Files an earlier run left in `dir` (reports, JSON, CSV tables, SVG plots) are removed first, so a
/// report never sits beside the tables of another run (a quick run's beside a full run's).
pub fn write_output_with(out: &ExpOutput, exp: &Experiment, run: &RunInfo, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    for e in std::fs::read_dir(dir)?.flatten() {
        let p = e.path();
        let ours = p.extension().and_then(|x| x.to_str()).is_some_and(|x| matches!(x, "csv" | "svg" | "json" | "md"));
        if ours && p.is_file() {
            std::fs::remove_file(&p)?;
        }
    }
    let mut out = out.clone();
    out.claims = claim_records(&out, &run.set);
    let out = &out;
    // Both start with the build that produced them (`ackshape`: version, commit).
    use ackshape_sim::provenance::pretty_stamped;
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
    let mut runs: Vec<(RunInfo, Vec<ClaimRecord>)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root) {
        for e in rd.flatten() {
            let d = e.path();
            let Ok(text) = std::fs::read_to_string(d.join("run.json")) else { continue };
            let Ok(run) = serde_json::from_str::<RunInfo>(&text) else { continue };
            let claims = std::fs::read_to_string(d.join("claims.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v.get("claims").cloned())
                .and_then(|c| serde_json::from_value::<Vec<ClaimRecord>>(c).ok())
                .unwrap_or_default();
            runs.push((run, claims));
        }
    }
    runs.sort_by_key(|r| (is_study(&r.0.id), id_order(&r.0.id)));
    let mut s = String::from("# Reproduced experiments\n\n");
    s += "Each row links to the experiment's report (paper vs measured for every claim, tables, plots). \
          Counts are of the primary claims (the file as written; readings of unstated parameters and \
          supplementary rows are in the reports).\n\n";
    s += "| paper | verdict |\n|---|---|\n";
    for p in &PAPERS {
        let mine: Vec<&ClaimRecord> =
            runs.iter().filter(|r| paper_of(&r.0.id).is_some_and(|q| q.id == p.id)).flat_map(|r| &r.1).collect();
        if !mine.is_empty() {
            s += &format!("| {} (paper {}) | {} |\n", p.id, p.number, claims::verdict_line(claims::counts(mine)));
        }
    }
    let study: Vec<&ClaimRecord> = runs.iter().filter(|r| is_study(&r.0.id)).flat_map(|r| &r.1).collect();
    if !study.is_empty() {
        s += &format!("| {STUDY} (modern-baselines study) | {} |\n", verdict_for(STUDY, claims::counts(study)));
    }
    s += "\n| experiment | title | hold | fail | not assessable | mode | wall time | command |\n\
          |---|---|---|---|---|---|---|---|\n";
    for (r, _) in &runs {
        s += &format!(
            "| [{}]({}/report.md) | {} | {} | {} | {} | {} | {:.0} s | `{}` |\n",
            r.id,
            r.id,
            r.title.replace('|', "\\|"),
            r.holds,
            r.fails,
            r.not_assessable,
            if r.quick { "quick" } else { "full" },
            r.wall_s,
            r.command()
        );
    }
    s += "\n## Claims\n\n| experiment | claim | paper | measured | status | cause |\n|---|---|---|---|---|---|\n";
    for (r, claims) in &runs {
        for c in claims.iter().filter(|c| c.primary) {
            s += &format!(
                "| {} | {}{} | {} | {} | {} | {} |\n",
                r.id,
                c.claim.replace('|', "\\|"),
                if c.supplementary { " (supplementary)" } else { "" },
                c.paper.replace('|', "\\|"),
                c.measured.replace('|', "\\|"),
                status_cell(c.status),
                c.cause
            );
        }
    }
    let p = root.join("index.md");
    std::fs::create_dir_all(root)?;
    std::fs::write(&p, s)?;
    Ok(p)
}

fn status_cell(s: Status) -> &'static str {
    match s {
        Status::Holds => "holds",
        Status::Fails => "**fails**",
        Status::NotAssessable => "not assessable",
    }
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

/// The Markdown report of one experiment, with how it was run: the paper's citation, the verdict
/// and where the misses are analysed, then the claims, the readings of unstated parameters, the
/// tables, plots and notes.
pub fn markdown_with(out: &ExpOutput, exp: &Experiment, run: &RunInfo) -> String {
    let id = if out.id.is_empty() { exp.id } else { out.id.as_str() };
    let title = if out.title.is_empty() { exp.title } else { out.title.as_str() };
    let mut s = format!("# {id} — {title}\n\n");
    let anchor = paper_of(id).map(|p| p.anchor).unwrap_or("");
    if let Some(p) = paper_of(id) {
        s += &format!(
            "Paper {} (paper {}): {}. Set-up, assumptions and traps: `docs/experiments.md#{}`.\n\n",
            p.id, p.number, p.citation, p.anchor
        );
    }
    let c = claims::counts(&out.claims);
    let mut sections: Vec<&str> = out.claims.iter().filter(|r| r.link != "n/a").map(|r| r.link.as_str()).collect();
    sections.sort_unstable();
    sections.dedup();
    if is_study(id) {
        s += &format!(
            "The modern-baselines study: no paper's claims, the study's own questions, stated in the file \
             before the first run; each answer is the measurement. What the answers mean: \
             `docs/modern-baselines.md`.\n\n**Answers: {}{}.**\n\n",
            claims::study_line(c),
            if run.quick { " (quick run)" } else { "" },
        );
    } else {
        s += &format!(
            "**Verdict: {}{}.** Analysis of the misses: {}.\n\n",
            claims::verdict_line(c),
            if run.quick { " (quick run)" } else { "" },
            if sections.is_empty() {
                format!("`docs/reproduction.md#{anchor}`")
            } else {
                sections.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
            }
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
    let row = |c: &ClaimRecord| {
        format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            c.claim_id.replace('|', "\\|"),
            c.claim.replace('|', "\\|"),
            c.paper.replace('|', "\\|"),
            c.measured.replace('|', "\\|"),
            c.criterion.replace('|', "\\|"),
            c.reading.replace('|', "\\|"),
            status_cell(c.status)
        )
    };
    let head = "| id | claim | paper | measured | criterion | reading | status |\n|---|---|---|---|---|---|---|\n";
    let heading = if is_study(id) { "Questions" } else { "Claims" };
    s += &format!("\n\n## {heading} ({} of {} hold)\n\n{head}", c.0, c.0 + c.1 + c.2);
    for r in out.claims.iter().filter(|r| r.counted()) {
        s += &row(r);
    }
    let why: Vec<&ClaimRecord> = out.claims.iter().filter(|r| r.primary && r.status != Status::Holds).collect();
    if !why.is_empty() {
        s += "\nWhy:\n\n";
        for r in why {
            s += &format!("- `{}` ({}", r.claim_id, r.status.as_str());
            if r.cause != "n/a" {
                s += &format!(", {}", r.cause);
            }
            s += &format!("): {}", r.reason);
            if r.link != "n/a" {
                s += &format!(" (`{}`)", r.link);
            }
            s += "\n";
        }
    }
    let sup: Vec<&ClaimRecord> = out.claims.iter().filter(|r| r.primary && r.supplementary).collect();
    if !sup.is_empty() {
        s += &format!("\n## Supplementary (not counted)\n\n{head}");
        for r in sup {
            s += &row(r);
        }
    }
    let alt: Vec<&ClaimRecord> = out.claims.iter().filter(|r| !r.primary).collect();
    if !alt.is_empty() {
        s += &format!("\n## Readings of unstated parameters\n\nThe claims that hinge on an unstated parameter, re-run under its other plausible values (the primary rows are above).\n\n{head}");
        for r in alt {
            s += &row(r);
        }
    }
    for t in out.tables.iter().filter(|t| t.name != "readings") {
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
    use ackshape_sim::metrics::Summary;

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
                let doc = f.doc_with(&[("topology.links[1].rate".into(), toml::Value::String(rate.to_string()))]);
                jobs.push(SimJob::new(format!("{i}/{seed}"), doc.unwrap(), &f.file, seed).unwrap());
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
        let one: Vec<_> = Ctx { progress: Some(&mut progress), ..Ctx::new(true, 1) }.run_sims(&jobs);
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
        let e = nan("paper.claims[0].tolerance").unwrap_err();
        assert!(e.contains("key `paper.claims[0].tolerance`: expected a finite number, got NaN"), "{e}");
        let e = nan("paper.loss[1]").unwrap_err();
        assert!(e.contains("key `paper.loss[1]`: expected a finite number"), "{e}");
        let inf = toml::Value::Float(f64::INFINITY);
        for n in [0, 1_000_000_000] {
            let e = apply_sets(f9.text, f9.file, &[("paper.seeds".into(), toml::Value::Integer(n))]).unwrap_err();
            assert!(e.contains("key `paper.seeds`: expected a number of seeds from 1 to 10000"), "{e}");
        }
        let e = apply_sets(f9.text, f9.file, &[("paper.claims[1].paper_value".into(), inf)]).unwrap_err();
        assert!(e.contains("key `paper.claims[1].paper_value`: expected a finite number, got inf"), "{e}");
        assert!(apply_sets(f9.text, f9.file, &[("paper.claims[0].tolerance".into(), toml::Value::Float(2.0))]).is_ok());
        assert_eq!(shell_word("tcp.cc=reno"), "tcp.cc=reno");
        assert_eq!(shell_word(r#"a={ kind = "red" }"#), r#"'a={ kind = "red" }'"#);
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        let run = RunInfo { id: "P0-F9".into(), set: vec!["tcp.cc=reno".into()], seed: 1, ..Default::default() };
        assert_eq!(run.command(), "ackshape reproduce P0-F9 --set tcp.cc=reno");
    }

    /// The study's experiments come after every paper's, and their one-line verdict counts
    /// questions, not a reproduction.
    #[test]
    fn the_study_is_listed_last_and_answers_questions() {
        let ids: Vec<&str> = registry().iter().map(|e| e.id).collect();
        let first = ids.iter().position(|id| is_study(id)).expect("the study is registered");
        assert!(ids[..first].iter().all(|id| paper_of(id).is_some()), "{ids:?}");
        assert!(ids[first..].iter().all(|id| is_study(id)), "{ids:?}");
        assert_eq!(verdict_for("M-P2", (3, 2, 0)), "study: 3 of 5 questions hold, 2 fail, 0 not assessable");
        assert_eq!(verdict_for("P2-F8", (3, 2, 0)), "partly reproduced: 3 of 5 claims hold, 2 fail, 0 not assessable");
        assert!(!is_study("P4-F7") && is_study("m") && is_study("M-P0"));
    }

    /// Every miss points at a section of docs/reproduction.md that exists.
    #[test]
    fn every_miss_links_to_a_section_of_the_docs() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/reproduction.md")).unwrap();
        for p in &PAPERS {
            assert!(
                doc.contains(&format!("<a id=\"{}\"></a>", p.anchor)),
                "docs/reproduction.md: no anchor {}",
                p.anchor
            );
        }
        for e in registry() {
            for c in claims::specs(e.text, e.file, e.id).unwrap() {
                if let Some(m) = &c.miss {
                    let a = format!("<a id=\"{}\"></a>", m.section);
                    assert!(doc.contains(&a), "{} {}: docs/reproduction.md has no {a}", e.id, c.id);
                }
            }
        }
    }

    #[test]
    fn ids_sort_numerically() {
        let mut v = vec!["P2-S2b", "P2-F10", "P2-F9", "P10-F1", "P2-F3"];
        v.sort_by_key(|a| id_order(a));
        assert_eq!(v, ["P2-F3", "P2-F9", "P2-F10", "P2-S2b", "P10-F1"]);
    }

    /// Paper 002's experiment `id` with its file's text edited.
    fn with_text(id: &'static str, edit: impl Fn(&str) -> String) -> Experiment {
        let e = p2::experiments().into_iter().find(|e| e.id == id).unwrap();
        Experiment { text: Box::leak(edit(e.text).into_boxed_str()), ..e }
    }

    fn err_of(e: &Experiment) -> String {
        run_experiment(e, &mut Ctx::new(true, 1)).expect_err("the experiment file is broken")
    }

    #[test]
    fn bad_p2_experiment_files_name_the_file_and_the_key() {
        let e = with_text("P2-F10", |t| t.replace("seeds = 5", "seeds = \"five\""));
        let m = err_of(&e);
        assert!(m.starts_with("experiments/p2/f10.toml: key `reproduce.seeds`"), "{m}");
        let e = with_text("P2-F10", |t| t.replace("\"acq\", \"afvq\"]", "\"acq\", \"afvq\", \"wfq\"]"));
        let m = err_of(&e);
        assert!(m.contains("experiments/p2/f10.toml: key `reproduce.disciplines[5]`") && m.contains("wfq"), "{m}");
        let e = with_text("P2-F10", |t| t.replace("id = \"afvq-variance\"", "id = \"something-else\""));
        let m = err_of(&e);
        assert!(m.contains("experiments/p2/f10.toml: the code of P2-F10 measures claim \"afvq-variance\""), "{m}");
        let e = with_text("P2-F9", |t| t.replace("link = \"access\"", "link = \"adsl\""));
        let m = err_of(&e);
        assert!(m.contains("experiments/p2/f9.toml: key `reproduce.link`: no link named \"adsl\""), "{m}");
        let e = with_text("P2-S2b", |t| t.replace("up_queues = [100, 200]", "up_queues = [100, 300]"));
        let m = err_of(&e);
        assert!(m.contains("experiments/p2/s2b.toml: key `reproduce.up_queues`: must include 200"), "{m}");
        let e = with_text("P2-F9", |t| t.replace("upto = 25.0, tie = 0.005", "upto = 25.0"));
        let m = err_of(&e);
        assert!(m.contains("experiments/p2/f9.toml: key `params.tie` of claim \"afvq-variance-lowest-1-25\""), "{m}");
        let e = with_text("P2-F3", |t| {
            t.replace("\"flows[1].tcp.rcv_buf\" = \"64240B\"", "\"flows[1].tcp.rcv_buf\" = \"lots\"")
        });
        let m = err_of(&e);
        assert!(m.contains("experiments/p2/f3.toml: key `flows[1].tcp.rcv_buf`") && m.contains("reading"), "{m}");
    }
}
