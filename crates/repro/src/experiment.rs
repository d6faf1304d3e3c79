//! An experiment as the paper modules see it: its registration ([`Experiment`]), its file
//! ([`ExpFile`]: the `[paper]` and `[reproduce]` tables, the base scenario) and what it produced
//! ([`ExpOutput`], [`Table`]). The crate's root re-exports all of them.

use crate::claims::{self, ClaimRecord, ClaimSpec, Measured};
use crate::run::Ctx;
use ackshape_sim::keypath::{get_path, set_path};
use ackshape_sim::scenario::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// The claim records ([`run_experiment`](crate::run_experiment) makes them from the file's claims
    /// and [`Self::measured`]).
    pub claims: Vec<ClaimRecord>,
    pub tables: Vec<Table>,
    /// (file name `NAME.svg`, plot): written as `NAME.svg` and `NAME.png`.
    #[serde(skip)]
    pub plots: Vec<(String, ackshape_sim::plot::Plot)>,
    /// Free text for the report (setup, assumptions, explanations of gaps).
    pub notes: Vec<String>,
    /// What the code measured, per claim ID (the claims themselves are the file's).
    #[serde(skip)]
    pub measured: Vec<(String, Measured)>,
    /// How often each mechanism (or `mechanism/profile`) acted over the runs: a claim about one that
    /// did nothing is not assessable.
    #[serde(skip)]
    pub activity: BTreeMap<String, f64>,
}

impl ExpOutput {
    /// Record the measurement of claim `id`.
    pub fn measure(&mut self, id: &str, m: Measured) {
        self.measured.push((id.to_string(), m));
    }
    /// Add `n` actions of mechanism `mech` (creating the entry: 0 means it was run and did nothing).
    pub fn act(&mut self, mech: &str, n: f64) {
        *self.activity.entry(mech.to_string()).or_insert(0.0) += n;
    }
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
            .map_err(|e: toml::de::Error| format!("{file}: {}", ackshape_format::tomlerr::syntax_message(text, &e)))?;
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
        for (key, label) in [("paper.stated", "Paper"), ("paper.assumed", "Assumed"), ("paper.notes", "Note")] {
            if let Some(a) = get_path(&self.table, key).and_then(|v| v.as_array()) {
                out.extend(a.iter().filter_map(|x| x.as_str()).map(|x| format!("{label}: {x}")));
            }
        }
        out
    }

    /// The base scenario with `edits` applied (dotted paths, see [`set_path`]).
    pub fn scenario_with(&self, edits: &[(String, toml::Value)]) -> Result<Scenario, String> {
        Scenario::from_table(self.doc_with(edits)?, &self.file).map_err(|e| e.to_string())
    }

    /// The base scenario's TOML document with `edits` applied (what [`scenario_with`](Self::scenario_with) builds).
    pub fn doc_with(&self, edits: &[(String, toml::Value)]) -> Result<toml::Table, String> {
        let mut t = self.table.clone();
        for (k, v) in edits {
            set_path(&mut t, k, v.clone()).map_err(|e| format!("{}: {e}", self.file))?;
        }
        Ok(t)
    }
}

/// A registered experiment.
pub struct Experiment {
    /// ID, e.g. `P2-F10`: the paper (`P2`, see [`PAPERS`](crate::PAPERS)) and its figure, table or section.
    pub id: &'static str,
    pub title: &'static str,
    /// Path of the experiment file within the repository (for messages and the report).
    pub file: &'static str,
    /// The file's text (embedded, so `reproduce` runs from anywhere).
    pub text: &'static str,
    pub run: fn(&Experiment, &mut Ctx) -> Result<ExpOutput, String>,
}

/// Every number under `[paper]` and `[reproduce]` (the paper's values, tolerances, sweep points,
/// seeds) must be finite: a NaN tolerance would make a claim fail with "within NaN%", a NaN sweep
/// point would run as a nonsense scenario. The scenario's own keys are checked by the scenario.
/// The error names the first offending key (`paper.tolerance.x`, `reproduce.loss[1]`).
///
/// A seed count (`seeds`, `quick_seeds`) must be 1 … [`ackshape_sim::sweep::MAX_SEEDS`]: a billion seeds
/// would not run out of time but out of memory, building the list of runs.
pub(crate) fn check_finite(t: &toml::Table) -> Result<(), String> {
    fn walk(v: &toml::Value, path: &str) -> Result<(), String> {
        let max = ackshape_sim::sweep::MAX_SEEDS as i64;
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

/// The claims of experiment `exp` in its file, for their measurement parameters.
pub(crate) fn exp_specs(exp: &Experiment) -> Result<Vec<ClaimSpec>, String> {
    claims::specs(exp.text, exp.file, exp.id)
}

/// A measurement parameter of claim `id` (`params.KEY`) of experiment `exp`.
pub(crate) fn exp_param(sp: &[ClaimSpec], exp: &Experiment, id: &str, key: &str) -> Result<f64, String> {
    claims::param(sp, exp.file, id, key)
}
