//! Claims as data: one model for every paper.
//!
//! An experiment file lists its claims under `[[paper.claims]]` ([`ClaimSpec`]): the statement, the
//! paper's words and its value as a number (`paper_value`, `unit`), what is measured (`measure`), how the
//! two are compared (`check`, `tolerance`), the mechanisms the claim is about (`mechanism`) and, for a
//! claim that may not hold, why (`miss`: cause, one-line reason, section of `docs/reproduction.md`).
//! The experiment's code only measures: for each claim it reports a [`Measured`] value in the claim's
//! unit, a text, and — where there is nothing to measure — why not. [`evaluate`] turns specs and
//! measurements into [`ClaimRecord`]s with a [`Status`].
//!
//! Unstated parameters that decide a claim are swept, not picked: `[[paper.readings]]`
//! ([`ReadingGroup`]) names the parameter, the primary run's value and, per plausible other value, the
//! keys of the file to change; the runner re-runs the experiment under each and reports the claims it
//! lists once per reading.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a claim's measured value is compared with the paper's (`check` in the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// |measured − paper| ≤ tolerance.
    Within,
    /// |measured / paper − 1| ≤ tolerance (a fraction).
    WithinRel,
    /// measured ≥ paper − tolerance.
    AtLeast,
    /// measured ≤ paper + tolerance.
    AtMost,
    /// measured > paper + tolerance.
    Above,
    /// measured < paper − tolerance.
    Below,
}

impl Check {
    /// Whether `m` meets the check against `p` with tolerance `tol` (all finite).
    pub fn holds(self, m: f64, p: f64, tol: f64) -> bool {
        match self {
            Check::Within => (m - p).abs() <= tol + 1e-12 * p.abs().max(1.0),
            Check::WithinRel => p != 0.0 && (m / p - 1.0).abs() <= tol + 1e-12,
            Check::AtLeast => m >= p - tol,
            Check::AtMost => m <= p + tol,
            Check::Above => m > p + tol,
            Check::Below => m < p - tol,
        }
    }

    /// The check in words, e.g. `|measured − 750| ≤ 75 kbit/s`.
    pub fn criterion(self, p: f64, tol: f64, unit: &str) -> String {
        let u = |x: f64| if unit.is_empty() { num(x) } else { format!("{} {unit}", num(x)) };
        match self {
            Check::Within => format!("|measured − {}| ≤ {}", num(p), u(tol)),
            Check::WithinRel => format!("|measured / {} − 1| ≤ {}%", u(p), num(tol * 100.0)),
            Check::AtLeast if tol == 0.0 => format!("measured ≥ {}", u(p)),
            Check::AtLeast => format!("measured ≥ {} − {}", num(p), u(tol)),
            Check::AtMost if tol == 0.0 => format!("measured ≤ {}", u(p)),
            Check::AtMost => format!("measured ≤ {} + {}", num(p), u(tol)),
            Check::Above if tol == 0.0 => format!("measured > {}", u(p)),
            Check::Above => format!("measured > {} + {}", num(p), u(tol)),
            Check::Below if tol == 0.0 => format!("measured < {}", u(p)),
            Check::Below => format!("measured < {} − {}", num(p), u(tol)),
        }
    }
}

/// A number as a reader would write it: no trailing zeros, at most 6 significant decimals.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let s = format!("{:.6}", x);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// What became of a claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Holds,
    Fails,
    /// Nothing to measure, or the mechanism the claim is about did nothing.
    NotAssessable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Holds => "holds",
            Status::Fails => "fails",
            Status::NotAssessable => "not-assessable",
        }
    }
    pub fn parse(s: &str) -> Option<Status> {
        [Status::Holds, Status::Fails, Status::NotAssessable].into_iter().find(|x| x.as_str() == s)
    }
}

/// Why a claim does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Shown not to come out of the paper's own set-up (in ns-2.35 or by the model's bound).
    Irreproducible,
    /// Decided by a parameter the paper does not state (the readings show which value makes it hold).
    UnstatedParameter,
    /// The paper's metric or threshold is not what its words imply, or is ours.
    Metric,
    /// Our model differs from the paper's system in a way that decides the claim.
    Model,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Irreproducible => "irreproducible",
            Cause::UnstatedParameter => "unstated-parameter",
            Cause::Metric => "metric",
            Cause::Model => "model",
        }
    }
}

/// The file's account of a miss (`miss = { cause, reason, section }`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Miss {
    pub cause: Cause,
    /// One line.
    pub reason: String,
    /// Anchor of the analysis in `docs/reproduction.md`.
    pub section: String,
}

/// One `[[paper.claims]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimSpec {
    /// Short ID within the experiment, e.g. `upload-collapses`.
    pub id: String,
    /// Experiments of a shared file that check this claim (default: every experiment of the file).
    #[serde(default)]
    pub experiment: Vec<String>,
    /// The claim in words.
    pub claim: String,
    /// What the paper says, as printed (value or statement).
    pub paper: String,
    /// The paper's value as a number, in `unit`.
    pub paper_value: f64,
    pub unit: String,
    /// What the measured number is.
    pub measure: String,
    pub check: Check,
    /// In `unit` (a fraction for `within-rel`); 0 for a strict comparison.
    pub tolerance: f64,
    /// Mechanisms (or `mechanism/profile`) the claim is about: if one of them did nothing in the run,
    /// the claim is not assessable.
    #[serde(default)]
    pub mechanism: Vec<String>,
    /// Parameters of the measurement (read by the experiment's code).
    #[serde(default)]
    pub params: toml::Table,
    /// Reported beside the primary claims (e.g. our own bar, another metric), not counted.
    #[serde(default)]
    pub supplementary: bool,
    /// Why it fails, when it does.
    pub miss: Option<Miss>,
}

/// One `[[paper.readings]]` entry: an unstated parameter that decides some claims.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadingGroup {
    /// The parameter, e.g. `class bucket depth`.
    pub parameter: String,
    /// Its value in the primary run (the file as written).
    pub primary: String,
    /// Why the primary value was chosen.
    #[serde(default)]
    pub why: String,
    /// The claims that hinge on it.
    pub claims: Vec<String>,
    pub values: Vec<ReadingValue>,
}

/// One plausible other value of a [`ReadingGroup`]'s parameter.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadingValue {
    pub name: String,
    /// Keys of the experiment file to change (dotted paths, as `reproduce --set`).
    pub set: toml::Table,
    /// Run in `--quick` mode too (default true).
    #[serde(default = "yes")]
    pub quick: bool,
}

fn yes() -> bool {
    true
}

impl ReadingGroup {
    /// `parameter: value`, the record's `reading`.
    pub fn label(&self, value: &str) -> String {
        format!("{}: {value}", self.parameter)
    }
}

/// What the code measured for one claim.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// The number compared with the paper's value; NaN when nothing was measured.
    pub value: f64,
    /// Its unit; must be the claim's.
    pub unit: String,
    /// What was measured, in words and numbers.
    pub detail: String,
    /// Set when the claim cannot be assessed in this run, with the reason.
    pub gate: Option<String>,
}

impl Measured {
    pub fn new(value: f64, unit: &str, detail: impl Into<String>) -> Measured {
        Measured { value, unit: unit.into(), detail: detail.into(), gate: None }
    }
    /// Nothing to assess, and why.
    pub fn gated(unit: &str, reason: impl Into<String>, detail: impl Into<String>) -> Measured {
        Measured { value: f64::NAN, unit: unit.into(), detail: detail.into(), gate: Some(reason.into()) }
    }
}

/// One claim as `reproduce --json`, `claims.json` and the reports carry it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The experiment ID (e.g. `P2-F10`).
    pub id: String,
    /// The claim's ID within the experiment.
    pub claim_id: String,
    pub claim: String,
    /// What the paper says, as printed.
    pub paper: String,
    pub paper_value: f64,
    /// Null when nothing was measured.
    pub measured_value: Option<f64>,
    pub unit: String,
    /// What the measured number is.
    pub measure: String,
    /// What was measured, in words.
    pub measured: String,
    pub check: Check,
    pub tolerance: f64,
    /// The check in words.
    pub criterion: String,
    pub status: Status,
    /// `stated`, or the unstated parameter and the value this record was run under.
    pub reading: String,
    /// The primary record of the claim (the file as written); readings are not primary.
    pub primary: bool,
    /// Reported beside the primary claims, not counted.
    pub supplementary: bool,
    /// For a failure: irreproducible, unstated-parameter, metric or model; else `n/a`.
    pub cause: String,
    /// For a failure or a claim not assessable: why, in one line; else `n/a`.
    pub reason: String,
    /// For a failure: the analysis in `docs/reproduction.md`; else `n/a`.
    pub link: String,
    pub title: String,
    pub file: String,
    pub quick: bool,
    /// The `--set KEY=VALUE`s the experiment ran with (absent: as written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
}

impl ClaimRecord {
    /// The key of the expectation tables: `claim_id` for a primary record, `claim_id @ reading` else.
    pub fn key(&self) -> String {
        if self.primary {
            self.claim_id.clone()
        } else {
            format!("{} @ {}", self.claim_id, self.reading)
        }
    }
    /// Counted in the paper's totals.
    pub fn counted(&self) -> bool {
        self.primary && !self.supplementary
    }
}

/// The claims of `file_text` (`[[paper.claims]]`) that experiment `exp_id` checks.
pub fn specs(file_text: &str, file: &str, exp_id: &str) -> Result<Vec<ClaimSpec>, String> {
    let t: toml::Table = file_text.parse().map_err(|e| format!("{file}: {e}"))?;
    let Some(v) = t.get("paper").and_then(|p| p.get("claims")) else {
        return Err(format!("{file}: key `paper.claims`: missing (every experiment file lists its claims)"));
    };
    let all: Vec<ClaimSpec> = serde_path_to_error::deserialize(v.clone()).map_err(|e| {
        let path = e.path().to_string();
        format!("{file}: key `paper.claims{}`: {}", if path == "." { String::new() } else { path }, e.into_inner())
    })?;
    for (i, c) in all.iter().enumerate() {
        let at = |k: &str| format!("{file}: key `paper.claims[{i}].{k}` (claim \"{}\")", c.id);
        if !c.paper_value.is_finite() || !c.tolerance.is_finite() || c.tolerance < 0.0 {
            return Err(format!("{}: expected a finite paper_value and a tolerance ≥ 0", at("tolerance")));
        }
        if c.check == Check::WithinRel && c.paper_value == 0.0 {
            return Err(format!("{}: a relative check needs a paper_value other than 0", at("check")));
        }
        for (k, s) in [("claim", &c.claim), ("paper", &c.paper), ("measure", &c.measure)] {
            if s.trim().is_empty() || s.contains('\n') {
                return Err(format!("{}: expected one line of text", at(k)));
            }
        }
        if let Some(m) = &c.miss {
            if m.reason.trim().is_empty() || m.reason.contains('\n') || m.section.trim().is_empty() {
                return Err(format!("{}: expected a one-line reason and a section", at("miss")));
            }
        }
        if all[..i].iter().any(|d| d.id == c.id && overlap(&d.experiment, &c.experiment)) {
            return Err(format!("{}: the claim ID is used twice", at("id")));
        }
    }
    Ok(all.into_iter().filter(|c| c.experiment.is_empty() || c.experiment.iter().any(|e| e == exp_id)).collect())
}

fn overlap(a: &[String], b: &[String]) -> bool {
    a.is_empty() || b.is_empty() || a.iter().any(|x| b.contains(x))
}

/// The reading groups of `file_text` (`[[paper.readings]]`) whose claims experiment `exp_id` checks.
pub fn readings(file_text: &str, file: &str, exp_id: &str) -> Result<Vec<ReadingGroup>, String> {
    let t: toml::Table = file_text.parse().map_err(|e| format!("{file}: {e}"))?;
    let Some(v) = t.get("paper").and_then(|p| p.get("readings")) else { return Ok(Vec::new()) };
    let all: Vec<ReadingGroup> = serde_path_to_error::deserialize(v.clone()).map_err(|e| {
        let path = e.path().to_string();
        format!("{file}: key `paper.readings{}`: {}", if path == "." { String::new() } else { path }, e.into_inner())
    })?;
    let mine: Vec<String> = specs(file_text, file, exp_id)?.into_iter().map(|c| c.id).collect();
    for (i, g) in all.iter().enumerate() {
        for c in &g.claims {
            if !file_has_claim(&t, c) {
                return Err(format!("{file}: key `paper.readings[{i}].claims`: no claim with id = \"{c}\""));
            }
        }
        if g.values.is_empty() {
            return Err(format!("{file}: key `paper.readings[{i}].values`: expected at least one other value"));
        }
    }
    Ok(all.into_iter().filter(|g| g.claims.iter().any(|c| mine.contains(c))).collect())
}

fn file_has_claim(t: &toml::Table, id: &str) -> bool {
    t.get("paper")
        .and_then(|p| p.get("claims"))
        .and_then(|c| c.as_array())
        .is_some_and(|a| a.iter().any(|c| c.get("id").and_then(|v| v.as_str()) == Some(id)))
}

/// A numeric measurement parameter of a claim (`params.KEY`), for the experiment's code.
pub fn param(specs: &[ClaimSpec], file: &str, claim: &str, key: &str) -> Result<f64, String> {
    let c = specs
        .iter()
        .find(|c| c.id == claim)
        .ok_or_else(|| format!("{file}: key `paper.claims`: no claim with id = \"{claim}\""))?;
    match c.params.get(key) {
        Some(toml::Value::Float(x)) if x.is_finite() => Ok(*x),
        Some(toml::Value::Integer(i)) => Ok(*i as f64),
        other => Err(format!(
            "{file}: key `params.{key}` of claim \"{claim}\": expected a finite number{}",
            other.map(|v| format!(", got {v}")).unwrap_or_else(|| " (the key is missing)".into())
        )),
    }
}

/// Who ran, for the records.
pub struct RecordCtx<'a> {
    pub exp_id: &'a str,
    pub title: &'a str,
    pub file: &'a str,
    pub quick: bool,
}

/// Turn measurements into records, one per spec, in the file's order. `activity` holds how often each
/// mechanism acted (a claim about a mechanism that did nothing is not assessable); `reading` maps claim
/// IDs to their reading label (others: `stated`). Errors: a spec the code did not measure, a measurement
/// of no spec, a unit that differs from the file's. A mechanism the run did not include leaves its
/// claims not assessable.
pub fn evaluate(
    specs: &[ClaimSpec],
    measured: &[(String, Measured)],
    activity: &BTreeMap<String, f64>,
    reading: &BTreeMap<String, String>,
    rc: &RecordCtx,
) -> Result<Vec<ClaimRecord>, String> {
    for (id, _) in measured {
        if !specs.iter().any(|s| &s.id == id) {
            return Err(format!(
                "{}: the code of {} measures claim \"{id}\", which the file does not list under [[paper.claims]]",
                rc.file, rc.exp_id
            ));
        }
        if measured.iter().filter(|(x, _)| x == id).count() > 1 {
            return Err(format!("{}: claim \"{id}\" was measured twice by {}", rc.file, rc.exp_id));
        }
    }
    let mut out = Vec::new();
    for s in specs {
        let m = measured.iter().find(|(id, _)| id == &s.id).map(|(_, m)| m).ok_or_else(|| {
            format!(
                "{}: claim \"{}\" is listed under [[paper.claims]] but {} does not measure it",
                rc.file, s.id, rc.exp_id
            )
        })?;
        if m.unit != s.unit {
            return Err(format!(
                "{}: claim \"{}\": key `unit`: the file says {:?}, the code measures in {:?}",
                rc.file, s.id, s.unit, m.unit
            ));
        }
        let mut gate = m.gate.clone();
        // A claim gated by its measurement (e.g. its scheme did not run) needs no activity.
        for mech in s.mechanism.iter().filter(|_| m.gate.is_none()) {
            match activity.get(mech) {
                // Not run at all (a `--set` or a reading left it out): nothing to assess.
                None if gate.is_none() => gate = Some(format!("{mech} was not run")),
                Some(&a) if a <= 0.0 && gate.is_none() => {
                    gate = Some(format!("the mechanism did nothing: {mech} acted 0 times in the runs"));
                }
                _ => {}
            }
        }
        if gate.is_none() && !m.value.is_finite() {
            gate = Some("nothing to measure".into());
        }
        let status = match gate {
            Some(_) => Status::NotAssessable,
            None if s.check.holds(m.value, s.paper_value, s.tolerance) => Status::Holds,
            None => Status::Fails,
        };
        let (cause, reason, link) = match (status, &s.miss) {
            (Status::Fails, Some(miss)) => {
                (miss.cause.as_str().to_string(), miss.reason.clone(), format!("docs/reproduction.md#{}", miss.section))
            }
            (Status::Fails, None) => {
                ("unexplained".into(), "the experiment file gives no cause for this miss".into(), "n/a".into())
            }
            (Status::NotAssessable, _) => ("n/a".into(), gate.clone().unwrap_or_default(), "n/a".into()),
            _ => ("n/a".into(), "n/a".into(), "n/a".into()),
        };
        out.push(ClaimRecord {
            id: rc.exp_id.to_string(),
            claim_id: s.id.clone(),
            claim: s.claim.clone(),
            paper: s.paper.clone(),
            paper_value: s.paper_value,
            measured_value: m.value.is_finite().then_some(m.value),
            unit: s.unit.clone(),
            measure: s.measure.clone(),
            measured: if m.detail.is_empty() { "n/a".into() } else { m.detail.clone() },
            check: s.check,
            tolerance: s.tolerance,
            criterion: s.check.criterion(s.paper_value, s.tolerance, &s.unit),
            status,
            reading: reading.get(&s.id).cloned().unwrap_or_else(|| "stated".into()),
            primary: true,
            supplementary: s.supplementary,
            cause,
            reason,
            link,
            title: rc.title.to_string(),
            file: rc.file.to_string(),
            quick: rc.quick,
            set: Vec::new(),
        });
    }
    Ok(out)
}

/// Counts of primary, counted records: (holds, fails, not assessable).
pub fn counts<'a>(records: impl IntoIterator<Item = &'a ClaimRecord>) -> (usize, usize, usize) {
    let (mut h, mut f, mut n) = (0, 0, 0);
    for r in records.into_iter().filter(|r| r.counted()) {
        match r.status {
            Status::Holds => h += 1,
            Status::Fails => f += 1,
            Status::NotAssessable => n += 1,
        }
    }
    (h, f, n)
}

/// `reproduced`, `partly reproduced` or `not reproduced`, from (holds, fails, not assessable).
pub fn verdict((h, f, _n): (usize, usize, usize)) -> &'static str {
    match (h, f) {
        (0, 0) => "not assessable",
        (_, 0) => "reproduced",
        (0, _) => "not reproduced",
        _ => "partly reproduced",
    }
}

/// `3 of 5 questions hold, 2 fail, 0 not assessable` (the modern-baselines study: its records answer
/// the study's own questions, so there is no reproduced / not reproduced).
pub fn study_line((h, f, n): (usize, usize, usize)) -> String {
    format!("{h} of {} questions hold, {f} fail, {n} not assessable", h + f + n)
}

/// `partly reproduced: 7 of 12 claims hold, 3 fail, 2 not assessable`.
pub fn verdict_line(c: (usize, usize, usize)) -> String {
    let (h, f, n) = c;
    format!("{}: {h} of {} claims hold, {f} fail, {n} not assessable", verdict(c), h + f + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[[paper.claims]]
id = "a"
claim = "A rises"
paper = "+10%"
paper_value = 10.0
unit = "%"
measure = "relative change"
check = "within"
tolerance = 5.0
miss = { cause = "unstated-parameter", reason = "the window is unstated", section = "p9-a" }

[[paper.claims]]
id = "b"
experiment = ["X-2"]
claim = "B is on"
paper = "on"
paper_value = 1.0
unit = "share"
measure = "share of points"
check = "at-least"
tolerance = 0.0
mechanism = ["tap"]
params = { ratio = 0.9 }

[[paper.readings]]
parameter = "window"
primary = "100 packets"
claims = ["a"]
values = [{ name = "10 packets", set = { "tcp.max_window" = "10pkt" } }]
"#;

    fn rc() -> RecordCtx<'static> {
        RecordCtx { exp_id: "X-2", title: "t", file: "x.toml", quick: true }
    }

    #[test]
    fn checks_and_criteria() {
        assert!(Check::Within.holds(14.0, 10.0, 5.0) && !Check::Within.holds(15.5, 10.0, 5.0));
        assert!(Check::Within.holds(15.0, 10.0, 5.0), "the bound itself holds");
        assert!(Check::WithinRel.holds(0.95, 1.0, 0.05) && !Check::WithinRel.holds(0.9, 1.0, 0.05));
        assert!(Check::AtLeast.holds(1.0, 1.0, 0.0) && !Check::AtLeast.holds(0.99, 1.0, 0.0));
        assert!(Check::Above.holds(10.1, 10.0, 0.0) && !Check::Above.holds(10.0, 10.0, 0.0));
        assert!(Check::Below.holds(4.0, 10.0, 5.0) && !Check::Below.holds(5.0, 10.0, 5.0));
        assert!(Check::AtMost.holds(12.0, 10.0, 2.0) && !Check::AtMost.holds(12.1, 10.0, 2.0));
        assert_eq!(Check::Within.criterion(750.0, 75.0, "kbit/s"), "|measured − 750| ≤ 75 kbit/s");
        assert_eq!(Check::WithinRel.criterion(750.0, 0.1, "kbit/s"), "|measured / 750 kbit/s − 1| ≤ 10%");
        assert_eq!(Check::AtLeast.criterion(100.0, 0.0, "% of points"), "measured ≥ 100 % of points");
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(-0.0), "0");
    }

    #[test]
    fn records_from_specs_and_measurements() {
        let s = specs(FILE, "x.toml", "X-2").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(specs(FILE, "x.toml", "X-1").unwrap().len(), 1, "b belongs to X-2 only");
        assert_eq!(param(&s, "x.toml", "b", "ratio").unwrap(), 0.9);
        assert!(param(&s, "x.toml", "b", "nope").unwrap_err().contains("`params.nope` of claim \"b\""));
        let mut act = BTreeMap::from([("tap".to_string(), 3.0)]);
        let reading = BTreeMap::from([("a".to_string(), "window: 100 packets".to_string())]);
        let m = vec![
            ("a".to_string(), Measured::new(22.0, "%", "+22%")),
            ("b".to_string(), Measured::new(1.0, "share", "all")),
        ];
        let r = evaluate(&s, &m, &act, &reading, &rc()).unwrap();
        assert_eq!((r[0].status, r[1].status), (Status::Fails, Status::Holds));
        assert_eq!(r[0].cause, "unstated-parameter");
        assert_eq!(r[0].link, "docs/reproduction.md#p9-a");
        assert_eq!(r[0].reading, "window: 100 packets");
        assert_eq!((r[1].cause.as_str(), r[1].reason.as_str(), r[1].link.as_str()), ("n/a", "n/a", "n/a"));
        assert_eq!(r[1].reading, "stated");
        // The mechanism did nothing: not assessable, whatever the number.
        act.insert("tap".into(), 0.0);
        let r = evaluate(&s, &m, &act, &reading, &rc()).unwrap();
        assert_eq!(r[1].status, Status::NotAssessable);
        assert!(r[1].reason.contains("tap acted 0 times"), "{}", r[1].reason);
        // Nothing measured (e.g. 0 of 0 points): not assessable, not a failure.
        let m2 = vec![m[0].clone(), ("b".to_string(), Measured::new(f64::NAN, "share", "0 of 0 points"))];
        act.insert("tap".into(), 1.0);
        let r = evaluate(&s, &m2, &act, &reading, &rc()).unwrap();
        assert_eq!((r[1].status, r[1].measured_value), (Status::NotAssessable, None));
        assert_eq!(counts(&r), (0, 1, 1));
        assert_eq!(verdict_line(counts(&r)), "not reproduced: 0 of 2 claims hold, 1 fail, 1 not assessable");
        let json = serde_json::to_string(&r[1]).unwrap();
        assert!(json.contains("\"status\":\"not-assessable\"") && json.contains("\"measured_value\":null"), "{json}");
    }

    #[test]
    fn mismatches_between_file_and_code_are_errors() {
        let s = specs(FILE, "x.toml", "X-2").unwrap();
        let act = BTreeMap::from([("tap".to_string(), 1.0)]);
        let none = BTreeMap::new();
        let one = vec![("a".to_string(), Measured::new(1.0, "%", ""))];
        let e = evaluate(&s, &one, &act, &none, &rc()).unwrap_err();
        assert!(e.contains("claim \"b\" is listed") && e.contains("does not measure it"), "{e}");
        let extra = vec![
            ("a".to_string(), Measured::new(1.0, "%", "")),
            ("b".to_string(), Measured::new(1.0, "share", "")),
            ("c".to_string(), Measured::new(1.0, "%", "")),
        ];
        assert!(evaluate(&s, &extra, &act, &none, &rc()).unwrap_err().contains("measures claim \"c\""));
        let unit = vec![
            ("a".to_string(), Measured::new(1.0, "kbit/s", "")),
            ("b".to_string(), Measured::new(1.0, "share", "")),
        ];
        assert!(evaluate(&s, &unit, &act, &none, &rc()).unwrap_err().contains("key `unit`"));
        let r = evaluate(&s, &extra[..2], &BTreeMap::new(), &none, &rc()).unwrap();
        assert_eq!((r[1].status, r[1].reason.as_str()), (Status::NotAssessable, "tap was not run"));
        // File errors name the key.
        let bad = FILE.replace("check = \"within\"", "check = \"roughly\"");
        assert!(specs(&bad, "x.toml", "X-2").unwrap_err().starts_with("x.toml: key `paper.claims[0].check`"));
        let bad = FILE.replace("tolerance = 5.0", "tolerance = -1.0");
        assert!(specs(&bad, "x.toml", "X-2").unwrap_err().contains("paper.claims[0].tolerance"));
        let g = readings(FILE, "x.toml", "X-2").unwrap();
        assert_eq!((g.len(), g[0].label("10 packets").as_str()), (1, "window: 10 packets"));
        let bad = FILE.replace("claims = [\"a\"]", "claims = [\"zz\"]");
        assert!(readings(&bad, "x.toml", "X-2").unwrap_err().contains("no claim with id = \"zz\""));
    }
}

/// Percent of `k` out of `n`; NaN (nothing to assess) when `n` is 0.
pub(crate) fn share(k: usize, n: usize) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        k as f64 / n as f64 * 100.0
    }
}
