//! `ackshape reproduce`: the papers' experiments as code, each with claims checked against the
//! paper's values.
//!
//! An [`Experiment`] has an ID from `../shared/papers/EXPERIMENTS.md` (e.g. `P2-F10`), an embedded
//! TOML file under `experiments/` (base scenario, sweep values, the `[paper]` values and the
//! tolerances), and a runner that returns an [`ExpOutput`]: claims (measured vs paper, tolerance,
//! holds), tables (written as CSV) and plots (SVG). [`write_output`] writes them and a Markdown
//! report into `OUT/ID/`.
//!
//! One module per paper registers its experiments; [`registry`] lists them all.

use serde::Serialize;
use std::path::{Path, PathBuf};

pub mod edge;
pub mod p0;
pub mod p1;

/// One checked statement of a paper.
#[derive(Clone, Debug, Serialize)]
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
    /// (file name, SVG text).
    #[serde(skip)]
    pub plots: Vec<(String, String)>,
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
    pub fn progress(&mut self, f: f64) {
        if let Some(p) = self.progress.as_mut() {
            p(f);
        }
    }
}

/// A registered experiment.
pub struct Experiment {
    /// ID as in EXPERIMENTS.md, e.g. `P2-F10`.
    pub id: &'static str,
    pub title: &'static str,
    /// Path of the experiment file within the repository (for messages and the report).
    pub file: &'static str,
    /// The file's text (embedded, so `reproduce` runs from anywhere).
    pub text: &'static str,
    pub run: fn(&Experiment, &mut Ctx) -> Result<ExpOutput, String>,
}

/// Every registered experiment, in paper order.
pub fn registry() -> Vec<Experiment> {
    let mut v: Vec<Experiment> = Vec::new();
    // Each paper module appends its experiments here, e.g. `v.extend(p2::experiments());`.
    v.extend(p0::experiments());
    v.extend(p1::experiments());
    v.sort_by(|a, b| a.id.cmp(b.id));
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
        let hits: Vec<&Experiment> = all.iter().filter(|e| e.id == up || e.id.starts_with(&format!("{up}-"))).collect();
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

/// Write `claims.json`, one CSV per table, the plots and `report.md` into `dir` (created).
pub fn write_output(out: &ExpOutput, exp: &Experiment, quick: bool, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("claims.json"), serde_json::to_string_pretty(out).expect("serialises") + "\n")?;
    for t in &out.tables {
        let mut s = t.columns.join(",") + "\n";
        for r in &t.rows {
            let cells: Vec<String> = r.iter().map(csv_cell).collect();
            s += &cells.join(",");
            s.push('\n');
        }
        std::fs::write(dir.join(format!("{}.csv", t.name)), s)?;
    }
    for (name, svg) in &out.plots {
        std::fs::write(dir.join(name), svg)?;
    }
    let report = dir.join("report.md");
    std::fs::write(&report, markdown(out, exp, quick))?;
    Ok(report)
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
    let mut s = format!("# {} — {}\n\nExperiment file: `{}`", out.id, out.title, exp.file);
    if quick {
        s += " (quick mode: fewer seeds/points than the full run)";
    }
    s += "\n\n## Claims\n\n| claim | paper | measured | tolerance | holds |\n|---|---|---|---|---|\n";
    for c in &out.claims {
        s += &format!(
            "| {} | {} | {} | {} | {} |\n",
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
        let e = select(&all, &["P9".into()]).err().unwrap();
        assert!(e.contains("unknown experiment `P9`") && e.contains("P2-F10"), "{e}");
    }
}
