//! `ackshape._native`: the simulator for the `ackshape` Python package (its Python sources are in
//! `python/ackshape/`). Everything that decides a result is the simulator crate's; this module
//! converts arguments, releases the GIL while a simulation runs and turns errors into exceptions
//! carrying the command line's messages (file, key, expected).

use ackshape_sim::run::{run_scenario_sim, RunError, RunRequest, FLOW_COLUMNS, LINK_COLUMNS};
use ackshape_sim::store;
use ackshape_sim::sweep::{self, Base, Setting};
use ackshape_sim::Scenario;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;

create_exception!(
    ackshape,
    ScenarioError,
    PyValueError,
    "A scenario, a setting or a sweep's grid is not valid; the message names the file, the key and what was expected."
);
create_exception!(
    ackshape,
    StoreError,
    PyRuntimeError,
    "The result store cannot be used (not a store, another format, a damaged file) or a result came from another build."
);

/// What went wrong, before it becomes an exception (the closures that run without the GIL return it).
enum Fail {
    Scenario(String),
    Io(String),
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> PyErr {
        match f {
            Fail::Scenario(m) => ScenarioError::new_err(m),
            Fail::Io(m) => PyOSError::new_err(m),
        }
    }
}

/// A Python value (as JSON) as a TOML value; `what` names it in errors.
fn json_to_toml(v: &serde_json::Value, what: &str) -> Result<toml::Value, String> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => return Err(format!("{what}: None has no TOML value (leave the key out instead)")),
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(_)) if n.is_u64() => return Err(format!("{what}: {n} is beyond TOML's 64-bit integers")),
            (None, Some(f)) => toml::Value::Float(f),
            (None, None) => return Err(format!("{what}: {n} is not a TOML number")),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(a) => toml::Value::Array(
            a.iter().enumerate().map(|(i, x)| json_to_toml(x, &format!("{what}[{i}]"))).collect::<Result<_, _>>()?,
        ),
        J::Object(o) => toml::Value::Table(
            o.iter()
                .map(|(k, x)| Ok((k.clone(), json_to_toml(x, &format!("{what}.{k}"))?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// How a scenario is given: `kind` is `path` (a file), `text` (TOML) or `json` (a dict, as JSON);
/// `file` names it in errors and the summary.
fn load_base(kind: &str, source: &str, file: &str) -> Result<Base, String> {
    match kind {
        "path" => {
            let text = std::fs::read_to_string(source).map_err(|e| format!("{file}: cannot read: {e}"))?;
            Base::parse(&text, file)
        }
        "text" => Base::parse(source, file),
        "json" => {
            let v: serde_json::Value = serde_json::from_str(source).map_err(|e| format!("{file}: {e}"))?;
            let doc = match json_to_toml(&v, file)? {
                toml::Value::Table(t) => t,
                _ => return Err(format!("{file}: expected a table (a dict) of scenario keys")),
            };
            Ok(Base { file: file.to_string(), doc })
        }
        k => Err(format!("internal: unknown scenario kind {k:?}")),
    }
}

/// The settings of `set=`: typed values (key, JSON) or command-line `KEY=VALUE` texts.
fn settings(typed: &[(String, String)], specs: &[String]) -> Result<Vec<Setting>, String> {
    let mut out = Vec::new();
    for (k, j) in typed {
        let v: serde_json::Value = serde_json::from_str(j).map_err(|e| format!("set {k:?}: {e}"))?;
        out.push(Setting::one(k, json_to_toml(&v, &format!("set {k:?}"))?)?);
    }
    for s in specs {
        let st = sweep::parse_setting(s)?;
        if st.values.len() != 1 {
            return Err(format!("set {s:?}: one value per key; ackshape.sweep runs several"));
        }
        out.push(st);
    }
    for (i, s) in out.iter().enumerate() {
        if out[..i].iter().any(|t| t.key == s.key) {
            return Err(format!("set {}: the key is set twice", s.key));
        }
    }
    Ok(out)
}

/// Columns of one table as `(name, kind, data)`: kind `f8`/`u8`/`i8` with little-endian bytes,
/// or `str` with a list of strings.
struct Columns(Vec<(String, &'static str, Vec<u8>, Vec<String>)>);

impl Columns {
    fn new() -> Columns {
        Columns(Vec::new())
    }
    fn f64s(&mut self, name: &str, xs: impl Iterator<Item = f64>) {
        self.0.push((name.into(), "<f8", xs.flat_map(f64::to_le_bytes).collect(), Vec::new()));
    }
    fn u64s(&mut self, name: &str, xs: impl Iterator<Item = u64>) {
        self.0.push((name.into(), "<u8", xs.flat_map(u64::to_le_bytes).collect(), Vec::new()));
    }
    fn strs(&mut self, name: &str, xs: impl Iterator<Item = String>) {
        self.0.push((name.into(), "str", Vec::new(), xs.collect()));
    }
    fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, &'static str, Bound<'py, PyAny>)>> {
        self.0
            .iter()
            .map(|(n, k, b, s)| {
                let data =
                    if *k == "str" { s.clone().into_pyobject(py)?.into_any() } else { PyBytes::new(py, b).into_any() };
                Ok((n.clone(), *k, data))
            })
            .collect()
    }
}

/// What `run` returns to Python before it becomes a `Result`.
struct Ran {
    summary: String,
    files: Vec<String>,
    timeseries: Columns,
    queues: Columns,
    trace: Columns,
}

/// Run a scenario once: `(summary_json, files, {table: columns})`. `kind`, `source`, `file`: see
/// [`load_base`]; `typed`/`specs`: see [`settings`]; with `out`, the command line's files (and
/// `scenario.toml`) are written there.
#[pyfunction]
#[pyo3(signature = (kind, source, file, seed=None, typed=Vec::new(), specs=Vec::new(), out=None, pcap=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    kind: String,
    source: String,
    file: String,
    seed: Option<u64>,
    typed: Vec<(String, String)>,
    specs: Vec<String>,
    out: Option<PathBuf>,
    pcap: Vec<String>,
) -> PyResult<(String, Vec<String>, Bound<'py, PyDict>)> {
    let ran = py.detach(move || -> Result<Ran, Fail> {
        let settings = settings(&typed, &specs).map_err(Fail::Scenario)?;
        // As `ackshape run`: a file without settings is read as the file; with them, as the
        // document with the values set (the same scenario either way).
        let (sc, doc) = if kind == "path" && settings.is_empty() {
            let sc = Scenario::load(std::path::Path::new(&source)).map_err(|e| Fail::Scenario(e.to_string()))?;
            let doc =
                if out.is_some() { Some(load_base(&kind, &source, &file).map_err(Fail::Scenario)?.doc) } else { None };
            (sc, doc)
        } else if kind == "text" && settings.is_empty() {
            let sc = Scenario::parse(&source, &file).map_err(|e| Fail::Scenario(e.to_string()))?;
            (sc, Some(load_base(&kind, &source, &file).map_err(Fail::Scenario)?.doc))
        } else {
            let base = load_base(&kind, &source, &file).map_err(Fail::Scenario)?;
            let pick = vec![0; settings.len()];
            let sc = base.with(&settings, &pick).map_err(|e| Fail::Scenario(e.to_string()))?;
            let (doc, _) = base.doc_with(&settings, &pick).map_err(|e| Fail::Scenario(e.to_string()))?;
            (sc, Some(doc))
        };
        // Captures as `ackshape run --pcap` makes them: both directions, frames cut at the default snap length.
        let req = RunRequest {
            seed,
            out,
            pcap,
            pcap_one_way: false,
            snaplen: ackshape_sim::run::DEFAULT_SNAPLEN,
            scenario_doc: doc,
        };
        let (sim, res) = run_scenario_sim(&sc, &file, &req, None).map_err(|e| match e {
            RunError::Io { .. } => Fail::Io(e.to_string()),
            e => Fail::Scenario(e.to_string()),
        })?;
        let mut timeseries = Columns::new();
        let g = sim.goodput_series();
        timeseries.f64s("t_end_s", g.iter().map(|x| x.0));
        timeseries.u64s("flow", g.iter().map(|x| x.1 as u64));
        timeseries.f64s("goodput_bps", g.iter().map(|x| x.2));
        let mut queues = Columns::new();
        let names = sim.link_names();
        let qs = sim.queue_series();
        let rows = || qs.iter().flat_map(|q| q.bins.iter().map(move |b| (q.link, b)));
        queues.f64s("t_end_s", rows().map(|(_, b)| b.t_end_s));
        queues.strs("link", rows().map(|(l, _)| names[l].clone()));
        queues.f64s("queue_avg_pkts", rows().map(|(_, b)| b.avg_pkts));
        queues.u64s("queue_max_pkts", rows().map(|(_, b)| b.max_pkts as u64));
        let mut trace = Columns::new();
        let t = &sim.trace;
        trace.f64s("t_s", t.iter().map(|r| r.t_s));
        trace.u64s("flow", t.iter().map(|r| r.flow as u64));
        trace.u64s("cwnd_bytes", t.iter().map(|r| r.tr.cwnd_bytes));
        trace.u64s("ssthresh_bytes", t.iter().map(|r| r.tr.ssthresh_bytes));
        trace.f64s("srtt_s", t.iter().map(|r| r.tr.srtt.as_secs_f64()));
        trace.f64s("rto_s", t.iter().map(|r| r.tr.rto.as_secs_f64()));
        trace.u64s("in_flight_bytes", t.iter().map(|r| r.tr.in_flight_bytes));
        trace.u64s("rwnd_seen_bytes", t.iter().map(|r| r.tr.rwnd_seen_bytes));
        trace.u64s("pacing_rate_bps", t.iter().map(|r| r.tr.pacing_rate_bytes_s * 8));
        // BBR's model; empty / NaN for other controllers.
        trace.strs("bbr_mode", t.iter().map(|r| r.tr.bbr.map_or(String::new(), |b| b.mode.name().to_string())));
        trace.f64s("bbr_bw_bps", t.iter().map(|r| r.tr.bbr.map_or(f64::NAN, |b| b.bw_bytes_s * 8.0)));
        trace.f64s("bbr_min_rtt_s", t.iter().map(|r| r.tr.bbr.map_or(f64::NAN, |b| b.min_rtt.as_secs_f64())));
        trace.f64s("bbr_pacing_gain", t.iter().map(|r| r.tr.bbr.map_or(f64::NAN, |b| b.pacing_gain)));
        Ok(Ran {
            summary: ackshape_sim::run::summary_json(&res.summary),
            files: res.files.iter().map(|f| f.display().to_string()).collect(),
            timeseries,
            queues,
            trace,
        })
    })?;
    let tables = PyDict::new(py);
    tables.set_item("timeseries", ran.timeseries.to_py(py)?)?;
    tables.set_item("queues", ran.queues.to_py(py)?)?;
    tables.set_item("trace", ran.trace.to_py(py)?)?;
    Ok((ran.summary, ran.files, tables))
}

/// Run one resolved scenario (a sweep's point, on whichever machine): the summary.json text.
#[pyfunction]
fn run_resolved(py: Python<'_>, scenario: String, file: String, set: Vec<String>, seed: u64) -> PyResult<String> {
    py.detach(move || sweep::run_resolved(&scenario, &file, &set, seed)).map_err(ScenarioError::new_err)
}

/// Run one resolved scenario (a reproduction's run, on whichever machine): the run record's text
/// (its summary with every number exact, its goodput series and its flows' sender TCP counters;
/// `ackshape_sim::sweep::RunRecord`).
#[pyfunction]
fn run_record(py: Python<'_>, scenario: String, file: String, set: Vec<String>, seed: u64) -> PyResult<String> {
    py.detach(move || sweep::run_record(&scenario, &file, &set, seed)).map_err(ScenarioError::new_err)
}

/// A reproduction's runs handed to Python: `submit(jobs)` gets a list of `(scenario, file, set,
/// seed)` (resolved TOML text) and returns one `(ok, text)` per job, in order: the run record's
/// text, or the error's message.
struct PyRunner {
    submit: Py<PyAny>,
    this: ackshape_sim::provenance::Provenance,
}

impl sweep::Runner for PyRunner {
    fn run(
        &mut self,
        jobs: &[sweep::RunJob],
        keep: &(dyn Fn(&sweep::RunJob, &str) -> Result<(), String> + Sync),
        progress: &mut dyn FnMut(usize),
    ) -> Vec<Result<String, String>> {
        if jobs.is_empty() {
            return Vec::new();
        }
        let args: Vec<(String, String, Vec<String>, u64)> =
            jobs.iter().map(|j| (j.scenario.clone(), j.file.clone(), j.set.clone(), j.seed)).collect();
        let res: Result<Vec<(bool, String)>, String> = Python::attach(|py| {
            self.submit
                .call1(py, (args,))
                .and_then(|r| r.bind(py).extract::<Vec<(bool, String)>>().map_err(PyErr::from))
                .map_err(|e| format!("the executor: {e}"))
        });
        let res = match res {
            Ok(v) if v.len() == jobs.len() => v,
            Ok(v) => vec![
                (false, format!("the executor handed back {} results for {} runs", v.len(), jobs.len()));
                jobs.len()
            ],
            Err(e) => vec![(false, e); jobs.len()],
        };
        res.into_iter()
            .zip(jobs)
            .enumerate()
            .map(|(k, ((ok, text), j))| {
                progress(k + 1);
                if !ok {
                    return Err(text);
                }
                match store::summary_provenance(&text) {
                    Ok(p) if p == self.this => keep(j, &text).map(|_| text),
                    Ok(p) => Err(format!(
                        "an executor's worker runs {p}, this package is {}: results of different builds are never \
                         mixed (install the same build on every worker)",
                        self.this
                    )),
                    Err(e) => Err(format!("an executor's result: {e}")),
                }
            })
            .collect()
    }
}

/// Run the reproductions `ids` (experiment IDs or paper prefixes; none: all) as `ackshape
/// reproduce` does, writing the same files into `out`; with `submit` (see `PyRunner`) the
/// simulations run wherever it sends them, else on threads here. Returns the claim records as JSON
/// (`reproduce --json`'s array).
#[pyfunction]
#[pyo3(signature = (ids, quick, seed, out, submit=None))]
fn reproduce(
    py: Python<'_>,
    ids: Vec<String>,
    quick: bool,
    seed: u64,
    out: PathBuf,
    submit: Option<Py<PyAny>>,
) -> PyResult<String> {
    use ackshape_repro::{
        claim_records, registry, run_experiment, select, write_index, write_output_with, Ctx, RunInfo,
    };
    py.detach(move || -> Result<String, Fail> {
        let all = registry();
        let chosen = select(&all, &ids).map_err(Fail::Scenario)?;
        let mut runner = submit.map(|submit| PyRunner { submit, this: ackshape_sim::provenance::Provenance::this() });
        let mut records = Vec::new();
        for exp in chosen {
            let mut ctx = Ctx {
                quick,
                seed,
                progress: None,
                mechanism_off: false,
                readings: true,
                runner: runner.as_mut().map(|r| r as &mut dyn sweep::Runner),
            };
            let t0 = std::time::Instant::now();
            let o = run_experiment(exp, &mut ctx).map_err(|e| Fail::Scenario(format!("{}: {e}", exp.id)))?;
            let run = RunInfo::new(&o, exp, quick, seed, t0.elapsed().as_secs_f64());
            let dir = out.join(exp.id);
            // As the command line: the experiment's file as run, beside the results.
            let doc: toml::Table = exp.text.parse().map_err(|e| Fail::Scenario(format!("{}: {e}", exp.file)))?;
            let text = ackshape_sim::run::resolved_scenario_toml(&doc, exp.file, seed, &[]).map_err(Fail::Scenario)?;
            let io = |p: &std::path::Path, e: std::io::Error| Fail::Io(format!("{}: {e}", p.display()));
            std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
            std::fs::write(dir.join("scenario.toml"), text).map_err(|e| io(&dir.join("scenario.toml"), e))?;
            write_output_with(&o, exp, &run, &dir).map_err(|e| io(&dir, e))?;
            records.extend(claim_records(&o, &[]));
        }
        write_index(&out).map_err(|e| Fail::Io(format!("{}: {e}", out.join("index.md").display())))?;
        Ok(serde_json::to_string(&records).expect("claim records are JSON"))
    })
    .map_err(PyErr::from)
}

/// Plan a sweep: every point checked (built) before anything runs. `points` is a list of points,
/// each a list of `(key, JSON value)`; `seeds` the seeds (`count` instead: the scenario's seed and
/// the ones after it). Returns JSON: `{"seeds": [...], "points": [{"set": [...], "hash", "scenario"}]}`.
#[pyfunction]
#[pyo3(signature = (kind, source, file, points, seeds=None, count=None, link=None))]
#[allow(clippy::too_many_arguments)]
fn plan(
    py: Python<'_>,
    kind: String,
    source: String,
    file: String,
    points: Vec<Vec<(String, String)>>,
    seeds: Option<Vec<u64>>,
    count: Option<u64>,
    link: Option<String>,
) -> PyResult<String> {
    py.detach(move || -> Result<String, String> {
        let base = load_base(&kind, &source, &file)?;
        let scenario_seed = base.doc.get("seed").and_then(|s| s.as_integer()).map_or(1, |s| s as u64);
        let seeds = match (seeds, count) {
            (Some(s), _) => {
                let spec = s.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
                if s.is_empty() {
                    return Err("seeds: expected at least one seed".into());
                }
                sweep::parse_seeds(&spec, scenario_seed).map_err(|e| e.replacen("--seeds", "seeds", 1))?
            }
            (None, Some(n)) => {
                sweep::parse_seeds(&n.to_string(), scenario_seed).map_err(|e| e.replacen("--seeds", "seeds", 1))?
            }
            (None, None) => vec![scenario_seed],
        };
        let mut out = Vec::new();
        for p in &points {
            let settings = settings(p, &[])?;
            let sw =
                sweep::Sweep { base: base.clone(), settings, seeds: seeds.clone(), link: link.clone(), extra: vec![] };
            // Builds the point's scenario and checks it (and that `link` is one of its links).
            sw.scenarios()?;
            let job = sw.jobs()?.into_iter().next().expect("one point, at least one seed");
            out.push(serde_json::json!({"set": job.set, "hash": job.hash, "scenario": job.scenario}));
        }
        Ok(serde_json::json!({"seeds": seeds, "points": out}).to_string())
    })
    .map_err(ScenarioError::new_err)
}

/// The sweep metrics of a run (summary.json text) for the link direction `link`, then the numbers
/// at `paths` (NaN where there is none), in the order of [`metric_names`] then `paths`.
#[pyfunction]
fn metrics(summary: &str, link: &str, paths: Vec<String>) -> PyResult<Vec<f64>> {
    let v: serde_json::Value = serde_json::from_str(summary)
        .map_err(|e| StoreError::new_err(format!("a summary.json does not parse: {e}")))?;
    let mut m = sweep::metrics_of_json(&v, link);
    m.extend(paths.iter().map(|p| sweep::json_number(&v, p).unwrap_or(f64::NAN)));
    Ok(m)
}

/// The sweep metrics' column names and what each is.
#[pyfunction]
fn metric_names() -> Vec<(&'static str, &'static str)> {
    sweep::METRICS.to_vec()
}

/// The link direction a sweep reports by default for a run: `bottleneck`, else the busiest.
#[pyfunction]
fn default_link(summary: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(summary)
        .map_err(|e| StoreError::new_err(format!("a summary.json does not parse: {e}")))?;
    Ok(sweep::default_link(&v))
}

/// Check a `--metric`-style path (`flows[0].goodput_bps`).
#[pyfunction]
fn check_path(path: &str) -> PyResult<()> {
    sweep::parse_metric(path).map(|_| ()).map_err(ScenarioError::new_err)
}

/// A numeric column for a setting's values (JSON list): `(unit suffix, numbers)`, or None.
#[pyfunction]
fn numeric_values(values: &str) -> PyResult<Option<(&'static str, Vec<f64>)>> {
    let v: Vec<serde_json::Value> = serde_json::from_str(values).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let t: Vec<toml::Value> = v.iter().filter_map(|x| json_to_toml(x, "value").ok()).collect();
    if t.len() != v.len() {
        return Ok(None);
    }
    Ok(sweep::numeric_values(&t))
}

/// A value as its label in tables: a string as it is, anything else as TOML (`{ kind = "red" }`).
#[pyfunction]
fn label(value: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(value).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let t = json_to_toml(&v, "value").map_err(ScenarioError::new_err)?;
    Ok(match t {
        toml::Value::String(s) => s,
        t => t.to_string(),
    })
}

/// This build: JSON `{version, commit, dirty, source}` and the store's name for it.
#[pyfunction]
fn provenance() -> (String, String) {
    let p = ackshape_sim::provenance::Provenance::this();
    (serde_json::to_string(&p).expect("JSON"), p.build_id())
}

/// The result store (see `ackshape_sim::store`).
#[pyclass(frozen, module = "ackshape._native")]
struct Store {
    inner: store::Store,
}

fn store_err(e: store::StoreError) -> PyErr {
    StoreError::new_err(e.to_string())
}

#[pymethods]
impl Store {
    #[new]
    fn new(dir: PathBuf) -> PyResult<Store> {
        Ok(Store { inner: store::Store::open(&dir).map_err(store_err)? })
    }
    /// This build's summary.json text of (hash, seed), or None.
    fn get(&self, hash: &str, seed: u64) -> PyResult<Option<String>> {
        self.inner.get(hash, seed).map_err(store_err)
    }
    /// Keep a summary.json text; refused if it is another build's.
    fn put(&self, hash: &str, seed: u64, scenario: &str, summary: &str) -> PyResult<()> {
        self.inner.put(hash, seed, scenario, summary).map_err(store_err)
    }
    /// Other builds that have (hash, seed) in the store.
    fn other_builds(&self, hash: &str, seed: u64) -> Vec<String> {
        self.inner.other_builds(hash, seed)
    }
    /// How many results this build has in the store.
    fn __len__(&self) -> usize {
        self.inner.len()
    }
    #[getter]
    fn root(&self) -> String {
        self.inner.root().display().to_string()
    }
    #[getter]
    fn build(&self) -> String {
        self.inner.build().to_string()
    }
    fn __repr__(&self) -> String {
        format!("Store({:?}, build={:?})", self.inner.root().display().to_string(), self.inner.build())
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ScenarioError", py.get_type::<ScenarioError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("FLOW_COLUMNS", FLOW_COLUMNS.to_vec())?;
    m.add("LINK_COLUMNS", LINK_COLUMNS.to_vec())?;
    m.add_class::<Store>()?;
    for f in [
        wrap_pyfunction!(run, m)?,
        wrap_pyfunction!(run_resolved, m)?,
        wrap_pyfunction!(run_record, m)?,
        wrap_pyfunction!(reproduce, m)?,
        wrap_pyfunction!(plan, m)?,
        wrap_pyfunction!(metrics, m)?,
        wrap_pyfunction!(metric_names, m)?,
        wrap_pyfunction!(default_link, m)?,
        wrap_pyfunction!(check_path, m)?,
        wrap_pyfunction!(numeric_values, m)?,
        wrap_pyfunction!(label, m)?,
        wrap_pyfunction!(provenance, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
