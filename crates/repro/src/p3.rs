//! Paper 003 (Lau 2006, Virtual Packet Substitution): the thesis's experiments.
//!
//! Every experiment runs the thesis topology (Sec. 6.2, Fig. 23; `experiments/p3/*.toml`): a group of
//! flows from one sender (VPS, MulTCP, or a WRR application), as many competing TCP flows and an
//! on/off UDP background through one drop-tail bottleneck. The fairness ratio F (Eq. 5) divides the
//! group's throughput by that of a paired run, same seed, where the group is replaced by ordinary TCP
//! flows (trap P3-5). Allocation accuracy A_i (Eq. 3) and A (Eq. 4) are computed per window of the
//! time scale at hand (trap P3-4: mean and CoV over all windows of all runs, per-flow A_i too).

use crate::{claims, Ctx, ExpFile, ExpOutput, Experiment, Measured, SimJob, Table};
use ackshape_sim::keypath::set_path;
use ackshape_sim::metrics::Summary;
use ackshape_sim::plot::{xy_chart, Curve, XyChart};
use ackshape_sim::stats::mean;
use serde::Deserialize;

macro_rules! exp {
    ($id:expr, $title:expr, $file:expr, $run:expr) => {
        Experiment {
            id: $id,
            title: $title,
            file: concat!("experiments/p3/", $file),
            text: include_str!(concat!("../../../experiments/p3/", $file)),
            run: $run,
        }
    };
}

/// Paper 003's experiments, one per figure family.
pub fn experiments() -> Vec<Experiment> {
    vec![
        exp!(
            "P3-F2",
            "Application-layer WRR: differentiation or fairness, not both (Fig. 2–3)",
            "f02-wrr.toml",
            run_f2
        ),
        exp!(
            "P3-F21",
            "ACK-translation overhead: PSR scan and virtual ACKs per actual ACK (Fig. 21–22)",
            "f21-overhead.toml",
            run_f21
        ),
        exp!(
            "P3-F24",
            "VPS vs MulTCP over time scales: throughput, accuracy, fairness (Fig. 24–29)",
            "f24-timescales.toml",
            run_f24
        ),
        exp!("P3-F30", "Accuracy and fairness vs bottleneck bandwidth (Fig. 30–31)", "f30-bandwidth.toml", run_f30),
        exp!("P3-F32", "Accuracy and fairness vs ratio differential d (Fig. 32–35)", "f32-ratios.toml", run_f32),
        exp!("P3-F36", "Accuracy and fairness vs number of flows N (Fig. 36–39)", "f36-flows.toml", run_f36),
        exp!(
            "P3-F40",
            "Heterogeneous receivers: accuracy and fairness vs extra delay y (Fig. 40–45)",
            "f40-heterogeneous.toml",
            run_f40
        ),
    ]
}

// ------------------------------------------------------------------ settings

/// The `[reproduce]` table (and its `quick` sub-table, whose keys override in quick mode).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rep {
    seeds: Option<u64>,
    duration: Option<String>,
    d: Option<Vec<u32>>,
    n: Option<Vec<u32>>,
    rates_mbit: Option<Vec<f64>>,
    delays: Option<Vec<String>>,
    y_ms: Option<Vec<u64>>,
    scales_s: Option<Vec<u64>>,
    window_s: Option<u64>,
    /// P3-F40: the bandwidth and delay label of the ablation runs (VPS without suspension or
    /// suppression).
    ablation_rate_mbit: Option<f64>,
    ablation_delay: Option<String>,
    /// Sensitivity variants of the sweep (unstated settings that decide a result).
    sensitivity: Option<Vec<Sens>>,
    quick: Option<Box<Rep>>,
}

/// One `[[reproduce.sensitivity]]` entry: the sweep re-run with some unstated setting changed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sens {
    /// What changes and why (the report's series label).
    label: String,
    /// `[tcp]` keys over the file's (every flow, the paired TCP runs too).
    tcp: Option<toml::Table>,
    /// VPS controller keys (`vps = { ... }`).
    vps: Option<toml::Table>,
    rates_mbit: Vec<f64>,
    seeds: Option<u64>,
    /// Subset of the sweep's x values (d or N); default all.
    x: Option<Vec<u32>>,
    /// "vps" and/or "multcp" (the paired TCP runs are always made).
    protocols: Vec<String>,
}

impl Rep {
    fn read(ef: &ExpFile, quick: bool) -> Result<Rep, String> {
        let mut r: Rep = ef.section("reproduce")?;
        if quick {
            if let Some(q) = r.quick.take() {
                macro_rules! over {
                    ($($f:ident),*) => { $( if q.$f.is_some() { r.$f = q.$f.clone(); } )* };
                }
                over!(
                    seeds,
                    duration,
                    d,
                    n,
                    rates_mbit,
                    delays,
                    y_ms,
                    scales_s,
                    window_s,
                    ablation_rate_mbit,
                    ablation_delay,
                    sensitivity
                );
            }
        }
        Ok(r)
    }
    fn need<T: Clone>(v: &Option<T>, file: &str, key: &str) -> Result<T, String> {
        v.clone().ok_or_else(|| format!("{file}: key `reproduce.{key}`: missing"))
    }
}

/// What the group of flows (`flows[0]` of the experiment file) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proto {
    Vps,
    MulTcp,
    /// The paired run: the group replaced by ordinary TCP flows.
    Tcp,
    WrrBlocking,
    WrrNonBlocking,
    /// Ablations: VPS without temporary suspension / without false-dupACK suppression.
    VpsNoSuspension,
    VpsNoSuppression,
}

impl Proto {
    fn name(self) -> &'static str {
        match self {
            Proto::Vps => "VPS",
            Proto::MulTcp => "MulTCP",
            Proto::Tcp => "TCP",
            Proto::WrrBlocking => "WRR blocking",
            Proto::WrrNonBlocking => "WRR non-blocking",
            Proto::VpsNoSuspension => "VPS without suspension",
            Proto::VpsNoSuppression => "VPS without suppression",
        }
    }
    fn color(self) -> usize {
        match self {
            Proto::Vps => 0,
            Proto::MulTcp => 1,
            Proto::Tcp => 2,
            Proto::WrrBlocking => 3,
            Proto::WrrNonBlocking => 4,
            Proto::VpsNoSuspension => 5,
            Proto::VpsNoSuppression => 6,
        }
    }
}

/// One sweep point: the settings that differ from the experiment file.
#[derive(Clone, Debug, Default)]
struct Point {
    rate_mbit: Option<f64>,
    delay: Option<String>,
    weights: Vec<f64>,
    /// Extra one-way delay step of the group's receivers (heterogeneous receivers), ms.
    y_ms: Option<u64>,
    /// Sensitivity variants: `[tcp]` keys over the file's, for every flow of the run.
    tcp: Option<toml::Table>,
    /// Sensitivity variants: VPS controller keys (`vps = { ... }`), for VPS runs.
    vps: Option<toml::Table>,
}

impl Point {
    /// The point in words, for run labels and errors.
    fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = self.rate_mbit {
            parts.push(format!("{r} Mbit/s"));
        }
        if let Some(d) = &self.delay {
            parts.push(format!("{d} delays"));
        }
        parts.push(format!(
            "weights {}",
            self.weights.iter().map(|w| crate::claims::num(*w)).collect::<Vec<_>>().join(":")
        ));
        if let Some(y) = self.y_ms {
            parts.push(format!("y = {y} ms"));
        }
        if self.tcp.is_some() || self.vps.is_some() {
            parts.push("sensitivity settings".into());
        }
        parts.join(", ")
    }
}

fn delays(label: &str) -> Result<(u64, u64), String> {
    match label {
        "short" => Ok((5, 1)),
        "mid" => Ok((25, 5)),
        "long" => Ok((50, 10)),
        other => Err(format!("unknown delay label {other:?} (short, mid, long)")),
    }
}

fn tv<T: Into<toml::Value>>(x: T) -> toml::Value {
    x.into()
}

/// The scenario of one run.
#[cfg(test)]
fn scenario(ef: &ExpFile, p: &Point, proto: Proto, duration: &str) -> Result<ackshape_sim::scenario::Scenario, String> {
    ackshape_sim::scenario::Scenario::from_table(scenario_doc(ef, p, proto, duration)?, &ef.file)
        .map_err(|e| e.to_string())
}

/// The TOML document of [`scenario`].
fn scenario_doc(ef: &ExpFile, p: &Point, proto: Proto, duration: &str) -> Result<toml::Table, String> {
    let mut t = ef.table.clone();
    let e = |r: Result<(), String>| r.map_err(|m| format!("{}: {m}", ef.file));
    let n = p.weights.len();
    e(set_path(&mut t, "duration", tv(duration)))?;
    if let Some(r) = p.rate_mbit {
        e(set_path(&mut t, "topology.bottleneck.rate", tv(format!("{r}Mbit/s"))))?;
        // The background is 10% of the bottleneck on average: 20% peak, on half the time.
        e(set_path(&mut t, "flows[2].rate", tv(format!("{}kbit/s", r * 200.0))))?;
    }
    let (bdelay, adelay) = match &p.delay {
        Some(l) => {
            let (b, a) = delays(l).map_err(|m| format!("{}: key `reproduce.delays`: {m}", ef.file))?;
            e(set_path(&mut t, "topology.bottleneck.delay", tv(format!("{b}ms"))))?;
            e(set_path(&mut t, "topology.access.delay", tv(format!("{a}ms"))))?;
            (b, a)
        }
        None => (0, 0),
    };
    let _ = bdelay;
    match p.y_ms {
        Some(y) => {
            let groups: Vec<toml::Value> = (0..n as u64)
                .map(|i| {
                    let mut g = toml::Table::new();
                    g.insert("receivers".into(), tv(1));
                    let mut a = toml::Table::new();
                    a.insert("delay".into(), tv(format!("{}ms", adelay + i * y)));
                    g.insert("access".into(), toml::Value::Table(a));
                    toml::Value::Table(g)
                })
                .collect();
            e(set_path(&mut t, "topology.receiver_groups", toml::Value::Array(groups)))?;
        }
        None => {
            if let Some(tp) = t.get_mut("topology").and_then(|v| v.as_table_mut()) {
                tp.remove("receiver_groups");
            }
        }
    }
    if let Some(over) = &p.tcp {
        for (k, v) in over {
            e(set_path(&mut t, &format!("tcp.{k}"), v.clone()))?;
        }
    }
    e(set_path(&mut t, "topology.senders", tv(2 * n as i64 + 1)))?;
    e(set_path(&mut t, "flows[0].count", tv(n as i64)))?;
    e(set_path(&mut t, "flows[1].count", tv(n as i64)))?;
    let g = t
        .get_mut("flows")
        .and_then(|f| f.as_array_mut())
        .and_then(|a| a.get_mut(0))
        .and_then(|v| v.as_table_mut())
        .ok_or_else(|| format!("{}: key `flows[0]`: expected the group's flow entry", ef.file))?;
    for k in ["kind", "weights", "io", "sndbuf", "vps"] {
        g.remove(k);
    }
    let w = toml::Value::Array(p.weights.iter().map(|&x| tv(x)).collect());
    match proto {
        Proto::Vps | Proto::VpsNoSuspension | Proto::VpsNoSuppression => {
            g.insert("kind".into(), tv("vps"));
            g.insert("weights".into(), w);
            let mut v = p.vps.clone().unwrap_or_default();
            if proto == Proto::VpsNoSuspension {
                v.insert("suspension".into(), tv(false));
            }
            if proto == Proto::VpsNoSuppression {
                v.insert("suppression".into(), tv(false));
            }
            if !v.is_empty() {
                g.insert("vps".into(), toml::Value::Table(v));
            }
        }
        Proto::MulTcp => {
            g.insert("kind".into(), tv("multcp"));
            g.insert("weights".into(), w);
        }
        Proto::Tcp => {
            g.insert("kind".into(), tv("bulk"));
        }
        Proto::WrrBlocking | Proto::WrrNonBlocking => {
            g.insert("kind".into(), tv("wrr"));
            g.insert("weights".into(), w);
            g.insert("io".into(), tv(if proto == Proto::WrrBlocking { "blocking" } else { "non-blocking" }));
            g.insert("sndbuf".into(), tv("64KB"));
        }
    }
    Ok(t)
}

// ------------------------------------------------------------------ running

/// What one run leaves for the metrics.
#[derive(Clone, Debug)]
struct Out {
    /// Bytes delivered per 1 s bin, per flow (all flows of the run).
    bins: Vec<Vec<f64>>,
    summary: Summary,
}

fn extract(sim: &dyn crate::RunView, s: Summary) -> Out {
    let nflows = s.flows.len();
    let mut bins: Vec<Vec<f64>> = vec![Vec::new(); nflows];
    let mut prev = vec![0.0f64; nflows];
    for (t, f, bps) in sim.goodput_series() {
        let f = f as usize;
        let w = t - prev[f];
        prev[f] = t;
        bins[f].push(bps * w / 8.0);
    }
    Out { bins, summary: s }
}

/// One job per (point, protocol, seed), in that order.
struct Batch {
    jobs: Vec<SimJob>,
    keys: Vec<(usize, Proto, u64)>,
}

fn batch(
    ef: &ExpFile,
    ctx: &Ctx,
    points: &[Point],
    protos: &[Proto],
    seeds: u64,
    duration: &str,
) -> Result<Batch, String> {
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for (pi, p) in points.iter().enumerate() {
        for &proto in protos {
            for k in 0..seeds {
                let seed = ctx.seed + k;
                // The vacuity check: the group runs as ordinary TCP flows whatever it should be.
                let built = if ctx.mechanism_off { Proto::Tcp } else { proto };
                jobs.push(SimJob::new(
                    format!("{} {} seed={seed}", proto.name(), p.label()),
                    scenario_doc(ef, p, built, duration)?,
                    &ef.file,
                    seed,
                )?);
                keys.push((pi, proto, seed));
            }
        }
    }
    Ok(Batch { jobs, keys })
}

struct Results {
    outs: Vec<Out>,
    keys: Vec<(usize, Proto, u64)>,
}

impl Results {
    fn run(ctx: &mut Ctx, b: Batch) -> Result<Results, String> {
        let outs = ctx.run_jobs_span(&b.jobs, 0.0, 1.0, extract);
        let outs = outs.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(Results { outs, keys: b.keys })
    }
    /// What the group's mechanism did: bytes delivered by flows of its kind (VPS, MulTCP, WRR).
    fn activity(&self, out: &mut ExpOutput) {
        for ((_, proto, _), o) in self.keys.iter().zip(&self.outs) {
            let (key, kind) = match proto {
                Proto::Vps | Proto::VpsNoSuspension | Proto::VpsNoSuppression => ("vps", "vps"),
                Proto::MulTcp => ("multcp", "multcp"),
                Proto::WrrBlocking | Proto::WrrNonBlocking => ("wrr", "wrr"),
                Proto::Tcp => continue,
            };
            let n: u64 = o.summary.flows.iter().filter(|f| f.kind == kind).map(|f| f.bytes_delivered).sum();
            out.act(key, n as f64);
        }
    }
    /// The runs of point `p`, protocol `proto`, by seed.
    fn get(&self, p: usize, proto: Proto) -> Vec<(u64, &Out)> {
        self.keys.iter().zip(&self.outs).filter(|(k, _)| k.0 == p && k.1 == proto).map(|(k, o)| (k.2, o)).collect()
    }
    fn paired(&self, p: usize, seed: u64) -> Option<&Out> {
        self.keys.iter().zip(&self.outs).find(|(k, _)| k.0 == p && k.1 == Proto::Tcp && k.2 == seed).map(|(_, o)| o)
    }
}

// ------------------------------------------------------------------ metrics

/// Eq. 3 and Eq. 4: per-flow accuracy A_i and overall A. `None` when nothing was received.
pub fn accuracy(r: &[f64], w: &[f64]) -> Option<(f64, Vec<f64>)> {
    let (sr, sw): (f64, f64) = (r.iter().sum(), w.iter().sum());
    if sr <= 0.0 || sw <= 0.0 || r.len() != w.len() {
        return None;
    }
    let ai: Vec<f64> = r.iter().zip(w).map(|(&x, &wi)| (x / sr) / (wi / sw)).collect();
    let s: f64 = ai.iter().sum();
    let s2: f64 = ai.iter().map(|a| a * a).sum();
    Some((s * s / (ai.len() as f64 * s2), ai))
}

/// Per-window throughputs (bytes/s) of flows `0..n`: windows of `l` bins from t = 0, whole ones only.
fn windows(o: &Out, n: usize, l: usize) -> Vec<Vec<f64>> {
    let nb = o.bins.first().map_or(0, |b| b.len());
    (0..nb / l.max(1))
        .map(|k| (0..n).map(|f| o.bins[f][k * l..(k + 1) * l].iter().sum::<f64>() / l as f64).collect())
        .collect()
}

/// Whole-run throughput (bytes/s) of flows `0..n`.
fn whole(o: &Out, n: usize) -> Vec<f64> {
    (0..n).map(|f| o.bins[f].iter().sum::<f64>() / o.bins[f].len().max(1) as f64).collect()
}

/// Pearson correlation of two equally long series (NaN when undefined).
fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let (ma, mb) = (mean(a), mean(b));
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let den =
        (a.iter().map(|x| (x - ma).powi(2)).sum::<f64>() * b.iter().map(|y| (y - mb).powi(2)).sum::<f64>()).sqrt();
    num / den
}

fn cov(x: &[f64]) -> f64 {
    ackshape_sim::metrics::cov(x)
}

/// Accuracy and fairness of one protocol at one point, over its seeds.
#[derive(Clone, Debug, Default)]
struct Stat {
    /// A from whole-run throughputs, per seed.
    a_whole: Vec<f64>,
    /// A per window of the chosen time scale, over all seeds.
    a_win: Vec<f64>,
    /// Per-flow A_i per window, over all seeds.
    ai_win: Vec<Vec<f64>>,
    /// F per seed (whole run over paired whole run).
    f_whole: Vec<f64>,
    /// F per window (window over paired whole run).
    f_win: Vec<f64>,
    /// Same-run fairness per seed: the group's throughput over that of the n competing TCP flows
    /// of the same run (P3-5's alternative reading).
    f_same: Vec<f64>,
    /// Paired run only: its n replaced flows over its n competing flows (1 = no bias between
    /// the two sets of ordinary TCP flows; phase effects of drop-tail show here).
    paired_bias: Vec<f64>,
}

fn stat(res: &Results, p: usize, proto: Proto, w: &[f64], l: usize) -> Stat {
    let n = w.len();
    let mut s = Stat { ai_win: vec![Vec::new(); n], ..Default::default() };
    for (seed, o) in res.get(p, proto) {
        let r = whole(o, n);
        if let Some((a, _)) = accuracy(&r, w) {
            s.a_whole.push(a);
        }
        let all = whole(o, 2 * n);
        let competing: f64 = all[n..].iter().sum();
        if competing > 0.0 {
            s.f_same.push(r.iter().sum::<f64>() / competing);
        }
        if let Some(t) = res.paired(p, seed) {
            let tw = whole(t, 2 * n);
            let c: f64 = tw[n..].iter().sum();
            if c > 0.0 {
                s.paired_bias.push(tw[..n].iter().sum::<f64>() / c);
            }
        }
        let denom = res.paired(p, seed).map(|t| whole(t, n).iter().sum::<f64>());
        if let Some(d) = denom.filter(|d| *d > 0.0) {
            s.f_whole.push(r.iter().sum::<f64>() / d);
        }
        for win in windows(o, n, l) {
            if let Some((a, ai)) = accuracy(&win, w) {
                s.a_win.push(a);
                for (k, x) in ai.into_iter().enumerate() {
                    s.ai_win[k].push(x);
                }
            }
            if let Some(d) = denom.filter(|d| *d > 0.0) {
                s.f_win.push(win.iter().sum::<f64>() / d);
            }
        }
    }
    s
}

/// Percent of `k` out of `n`; NaN (nothing to assess) when `n` is 0.
fn share(k: usize, n: usize) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        k as f64 / n as f64 * 100.0
    }
}

fn min_of(x: impl IntoIterator<Item = f64>) -> f64 {
    x.into_iter().fold(f64::NAN, f64::min)
}

fn max_of(x: impl IntoIterator<Item = f64>) -> f64 {
    x.into_iter().fold(f64::NAN, f64::max)
}

fn f4(x: f64) -> serde_json::Value {
    if x.is_finite() {
        serde_json::json!((x * 1e4).round() / 1e4)
    } else {
        serde_json::Value::Null
    }
}

fn paper_notes(ef: &ExpFile) -> Vec<String> {
    let mut notes = Vec::new();
    for key in ["stated", "assumed"] {
        if let Ok(v) = ef.section::<Vec<String>>(&format!("paper.{key}")) {
            for s in v {
                notes.push(format!("{key}: {s}"));
            }
        }
    }
    notes
}

fn runs_note(seeds: u64, duration: &str, quick: bool) -> String {
    format!(
        "{seeds} seed(s) per point, {duration} per run{} (the thesis: 30 runs per point)",
        if quick { ", quick mode" } else { "" }
    )
}

fn chart(
    title: &str,
    x: &str,
    y: &str,
    curves: Vec<Curve>,
    hlines: Vec<(f64, String)>,
    y_range: Option<(f64, f64)>,
) -> ackshape_sim::plot::Plot {
    xy_chart(
        &XyChart { title: title.into(), x_label: x.into(), y_label: y.into(), log_x: false, y_range, hlines },
        &curves,
    )
}

fn curve(name: String, color: usize, dashed: bool, points: Vec<(f64, f64)>) -> Curve {
    Curve { name, points, dashed, markers: true, color: Some(color), err: Vec::new() }
}

// ------------------------------------------------------------------ P3-F2

fn run_f2(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let ef = ExpFile::parse(exp)?;
    let rep = Rep::read(&ef, ctx.quick)?;
    let seeds = Rep::need(&rep.seeds, &ef.file, "seeds")?;
    let duration = Rep::need(&rep.duration, &ef.file, "duration")?;
    let ds = Rep::need(&rep.d, &ef.file, "d")?;
    let points: Vec<Point> = ds
        .iter()
        .map(|&d| Point {
            rate_mbit: None,
            delay: None,
            weights: (0..3).map(|i| 1.0 + (i * d) as f64).collect(),
            y_ms: None,
            ..Default::default()
        })
        .collect();
    let protos = [Proto::WrrBlocking, Proto::WrrNonBlocking, Proto::Tcp];
    let res = Results::run(ctx, batch(&ef, ctx, &points, &protos, seeds, &duration)?)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    let mut table = Table {
        name: "throughput_vs_d".into(),
        columns: [
            "d",
            "io",
            "r1_mbps",
            "r2_mbps",
            "r3_mbps",
            "aggregate_mbps",
            "accuracy_A",
            "spread_max_min",
            "fairness_F",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let mut worst_acc = f64::INFINITY;
    let mut worst_spread: f64 = 0.0;
    let mut worst_agg: f64 = 0.0;
    let (mut fmin, mut fmax) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut per_flow: Vec<Vec<(f64, f64)>> = vec![Vec::new(); 6];
    let mut agg: Vec<Vec<(f64, f64)>> = vec![Vec::new(); 3];
    for (pi, p) in points.iter().enumerate() {
        let d = ds[pi] as f64;
        let mut aggs = [0.0; 3];
        for (k, proto) in protos.iter().enumerate() {
            let runs = res.get(pi, *proto);
            let r: Vec<f64> =
                (0..3).map(|f| mean(&runs.iter().map(|(_, o)| whole(o, 3)[f] * 8e-6).collect::<Vec<_>>())).collect();
            let a = accuracy(&r, &p.weights).map_or(f64::NAN, |x| x.0);
            let spread = r.iter().cloned().fold(0.0, f64::max) / r.iter().cloned().fold(f64::INFINITY, f64::min);
            let st = stat(&res, pi, *proto, &p.weights, 1);
            let f = mean(&st.f_whole);
            aggs[k] = r.iter().sum();
            agg[k].push((d, aggs[k]));
            if k < 2 {
                for f_ in 0..3 {
                    per_flow[k * 3 + f_].push((d, r[f_]));
                }
            }
            match proto {
                Proto::WrrBlocking => worst_acc = worst_acc.min(a),
                Proto::WrrNonBlocking => {
                    worst_spread = worst_spread.max(spread);
                    fmin = fmin.min(f);
                    fmax = fmax.max(f);
                }
                _ => {}
            }
            table.rows.push(vec![
                serde_json::json!(ds[pi]),
                serde_json::json!(proto.name()),
                f4(r[0]),
                f4(r[1]),
                f4(r[2]),
                f4(aggs[k]),
                f4(a),
                f4(spread),
                f4(f),
            ]);
        }
        worst_agg = worst_agg.max(aggs[0] / aggs[1]);
    }
    res.activity(&mut out);
    out.measure(
        "blocking-differentiates",
        Measured::new(worst_acc, "A", format!("overall accuracy A >= {worst_acc:.3} over d")),
    );
    out.measure(
        "nonblocking-no-differentiation",
        Measured::new(worst_spread, "ratio", format!("largest/smallest throughput <= {worst_spread:.3} over d")),
    );
    out.measure(
        "blocking-aggregate-lower",
        Measured::new(worst_agg, "ratio", format!("blocking / non-blocking aggregate <= {worst_agg:.3} over d")),
    );
    out.measure(
        "nonblocking-fair",
        Measured::new(
            (fmin - 1.0).abs().max((fmax - 1.0).abs()) * 100.0,
            "% from 1",
            format!("F in [{fmin:.3}, {fmax:.3}] over d"),
        ),
    );
    out.tables.push(table);
    let names = ["flow 1", "flow 2", "flow 3"];
    let mut curves = Vec::new();
    for k in 0..2 {
        for f_ in 0..3 {
            curves.push(curve(format!("{} {}", protos[k].name(), names[f_]), f_, k == 1, per_flow[k * 3 + f_].clone()));
        }
    }
    out.plots.push((
        "fig2_throughput.svg".into(),
        chart(
            "Fig. 2: throughput of the controlled flows (solid: blocking, dashed: non-blocking)",
            "d",
            "Mbit/s",
            curves,
            vec![],
            None,
        ),
    ));
    let curves = (0..3).map(|k| curve(protos[k].name().into(), protos[k].color(), false, agg[k].clone())).collect();
    out.plots.push((
        "fig3_aggregate.svg".into(),
        chart("Fig. 3: aggregate throughput of the 3 flows (TCP: the paired run)", "d", "Mbit/s", curves, vec![], None),
    ));
    out.notes.push(runs_note(seeds, &duration, ctx.quick));
    out.notes.extend(paper_notes(&ef));
    Ok(out)
}

// ------------------------------------------------------------------ P3-F21

fn run_f21(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let ef = ExpFile::parse(exp)?;
    let rep = Rep::read(&ef, ctx.quick)?;
    let seeds = Rep::need(&rep.seeds, &ef.file, "seeds")?;
    let duration = Rep::need(&rep.duration, &ef.file, "duration")?;
    let points =
        vec![Point { rate_mbit: None, delay: None, weights: vec![1.0, 2.0, 3.0], y_ms: None, ..Default::default() }];
    let res = Results::run(ctx, batch(&ef, ctx, &points, &[Proto::Vps], seeds, &duration)?)?;
    let mut scan: Vec<u64> = Vec::new();
    let mut scan_head: Vec<u64> = Vec::new();
    let mut vack: Vec<u64> = Vec::new();
    let mut live: u64 = 0;
    let mut psr_bytes = 0;
    for (_, o) in res.get(0, Proto::Vps) {
        // Without a VPS group (the vacuity check runs plain TCP) there is nothing to count.
        let Some(g) = o.summary.groups.first() else { continue };
        let add = |acc: &mut Vec<u64>, key: &str| {
            if let Some(h) = g["stats"][key].as_array() {
                if acc.len() < h.len() {
                    acc.resize(h.len(), 0);
                }
                for (i, v) in h.iter().enumerate() {
                    acc[i] += v.as_u64().unwrap_or(0);
                }
            }
        };
        add(&mut scan, "scan_hist");
        add(&mut scan_head, "scan_head_hist");
        add(&mut vack, "vacks_hist");
        live = live.max(g["stats"]["translator"]["psr_live_max"].as_u64().unwrap_or(0));
        psr_bytes = g["stats"]["psr_bytes"].as_u64().unwrap_or(0);
    }
    let total = |h: &[u64]| h.iter().sum::<u64>().max(1) as f64;
    let frac = |h: &[u64], pred: &dyn Fn(usize) -> bool| {
        h.iter().enumerate().filter(|(i, _)| pred(*i)).map(|(_, v)| *v).sum::<u64>() as f64 / total(h)
    };
    let s2 = frac(&scan, &|i| i == 2);
    let s20 = frac(&scan, &|i| i < 20);
    let v1 = frac(&vack, &|i| i == 1);
    let v2 = frac(&vack, &|i| i == 2);
    let v0 = frac(&vack, &|i| i == 0);
    let h2 = frac(&scan_head, &|i| i == 2);
    let h20 = frac(&scan_head, &|i| i < 20);
    // Of the actual ACKs that produce at least one virtual ACK (Fig. 22's CDF starts at 1).
    let v1_given = v1 / (1.0 - v0).max(1e-12);
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    res.activity(&mut out);
    out.measure("scan-below-20", Measured::new(s20 * 100.0, "% of actual ACKs", format!("{:.1}%", s20 * 100.0)));
    out.measure("scan-eq-2", Measured::new(s2 * 100.0, "% of actual ACKs", format!("{:.1}%", s2 * 100.0)));
    out.measure(
        "vack-eq-1",
        Measured::new(
            v1 * 100.0,
            "% of actual ACKs",
            format!("{:.2}% (0: {:.2}%, 2: {:.2}%)", v1 * 100.0, v0 * 100.0, v2 * 100.0),
        ),
    );
    out.measure(
        "psr-memory",
        Measured::new(
            live as f64 / 3.0,
            "PSRs per flow",
            format!("at most {live} live PSRs of {psr_bytes} bytes ({} bytes) for 3 flows", live * psr_bytes),
        ),
    );
    let cdf = |h: &[u64]| {
        let t = total(h);
        let mut acc = 0u64;
        h.iter()
            .enumerate()
            .map(|(i, v)| {
                acc += v;
                (i as f64, acc as f64 / t * 100.0)
            })
            .collect::<Vec<_>>()
    };
    let scan_cdf: Vec<(f64, f64)> = cdf(&scan).into_iter().take_while(|(i, _)| *i <= 64.0).collect();
    let vack_cdf: Vec<(f64, f64)> = cdf(&vack).into_iter().take_while(|(i, _)| *i <= 8.0).collect();
    let mut t = Table {
        name: "cdfs".into(),
        columns: ["count", "scan_cdf_percent", "scan_from_head_cdf_percent", "vack_cdf_percent"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    };
    let head_cdf = cdf(&scan_head);
    for (i, (x, y)) in scan_cdf.iter().enumerate().take(41) {
        let v = vack_cdf.get(i).map_or(serde_json::Value::Null, |p| f4(p.1));
        let h = head_cdf.get(i).map_or(serde_json::Value::Null, |p| f4(p.1));
        t.rows.push(vec![serde_json::json!(*x as u64), f4(*y), h, v]);
    }
    out.tables.push(t);
    out.plots.push((
        "fig21_scan_cdf.svg".into(),
        chart(
            "Fig. 21: PSR scan iterations per actual ACK (CDF)",
            "iterations",
            "cumulative %",
            vec![curve("VPS".into(), 0, false, scan_cdf)],
            vec![(90.0, "thesis: 90% below 20".into()), (40.0, "thesis: 40% at 2".into())],
            Some((0.0, 100.0)),
        ),
    ));
    out.plots.push((
        "fig22_vack_cdf.svg".into(),
        chart(
            "Fig. 22: virtual ACKs per actual ACK (CDF)",
            "virtual ACKs",
            "cumulative %",
            vec![curve("VPS".into(), 0, false, vack_cdf)],
            vec![(99.7, "thesis: 99.7% at 1".into())],
            Some((0.0, 100.0)),
        ),
    ));
    out.notes.push(runs_note(seeds, &duration, ctx.quick));
    out.notes.push(format!(
        "{:.2}% of actual ACKs produce no virtual ACK: duplicate ACKs that only mark a packet lost, \
         translations buffered behind an unacknowledged packet (Sec. 4.4), and old ACKs.",
        v0 * 100.0
    ));
    out.notes.push(
        "Our scan stops at the first PSR at or beyond the highest acknowledged edge, so an in-order ACK costs \
         2 iterations (the PSR acknowledged and the next one). The thesis's 40% at 2 suggests it counted \
         differently or scanned more PSRs per ACK; it does not define an iteration."
            .into(),
    );
    out.notes.push(format!(
        "Alternative count (the thesis frees a PSR only once both the actual and the virtual edge have passed \
         it, Sec. 4.6, so a list linked from both sides still holds, at its head, records the actual ACK has \
         passed but a virtual flow has not): scanning from that head, {:.1}% of actual ACKs take exactly 2 \
         iterations and {:.1}% fewer than 20.",
        h2 * 100.0,
        h20 * 100.0
    ));
    out.notes.push(format!(
        "Of the actual ACKs that produce at least one virtual ACK, {:.2}% produce exactly one (the thesis's \
         Fig. 22 starts at 1: 99.7%).",
        v1_given * 100.0
    ));
    out.notes.extend(paper_notes(&ef));
    Ok(out)
}

// ------------------------------------------------------------------ P3-F24..F29

fn run_f24(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let ef = ExpFile::parse(exp)?;
    let rep = Rep::read(&ef, ctx.quick)?;
    let seeds = Rep::need(&rep.seeds, &ef.file, "seeds")?;
    let duration = Rep::need(&rep.duration, &ef.file, "duration")?;
    let dl = Rep::need(&rep.delays, &ef.file, "delays")?;
    let scales = Rep::need(&rep.scales_s, &ef.file, "scales_s")?;
    let sp = claims::specs(exp.text, exp.file, exp.id)?;
    let acc_scale = claims::param(&sp, exp.file, "vps-accuracy", "from_scale_s")? as u64;
    let w = vec![1.0, 2.0, 3.0];
    let points: Vec<Point> = dl
        .iter()
        .map(|d| Point {
            rate_mbit: None,
            delay: Some(d.clone()),
            weights: w.clone(),
            y_ms: None,
            ..Default::default()
        })
        .collect();
    let protos = [Proto::Vps, Proto::MulTcp, Proto::Tcp];
    let res = Results::run(ctx, batch(&ef, ctx, &points, &protos, seeds, &duration)?)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    let mut table = Table {
        name: "timescales".into(),
        columns: [
            "delay", "protocol", "scale_s", "mean_A", "cov_A", "mean_A1", "mean_A2", "mean_A3", "mean_F", "cov_F",
            "windows",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let mut vps_min_acc = f64::INFINITY;
    // Points (delay × time scale) where VPS beats MulTCP, of all; smallest accuracy margin.
    let (mut beats, mut cov_lower, mut npts, mut margin) = (0usize, 0usize, 0usize, f64::INFINITY);
    // (protocol, delay) pairs whose CoV of F is higher at the shortest scale, of all.
    let (mut fcov_up, mut fcov_n) = (0usize, 0usize);
    let mut curves_a = Vec::new();
    let mut curves_ca = Vec::new();
    let mut curves_f = Vec::new();
    let mut curves_cf = Vec::new();
    let mut fwhole: Vec<(String, Proto, f64)> = Vec::new();
    for (pi, dlabel) in dl.iter().enumerate() {
        for &proto in protos.iter() {
            let (mut pa, mut pca, mut pf, mut pcf) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut fcovs = Vec::new();
            for &sc in &scales {
                let st = stat(&res, pi, proto, &w, sc as usize);
                let (ma, ca) = (mean(&st.a_win), cov(&st.a_win));
                let (mf, cf) = (mean(&st.f_win), cov(&st.f_win));
                fcovs.push(cf);
                if proto == Proto::Vps && sc >= acc_scale {
                    vps_min_acc = vps_min_acc.min(ma);
                }
                if proto == Proto::MulTcp {
                    let v = stat(&res, pi, Proto::Vps, &w, sc as usize);
                    npts += 1;
                    beats += usize::from(mean(&v.a_win) > ma);
                    cov_lower += usize::from(cov(&v.a_win) < ca);
                    margin = margin.min(mean(&v.a_win) - ma);
                }
                pa.push((sc as f64, ma));
                pca.push((sc as f64, ca));
                pf.push((sc as f64, mf));
                pcf.push((sc as f64, cf));
                let ai: Vec<serde_json::Value> = st.ai_win.iter().map(|x| f4(mean(x))).collect();
                table.rows.push(vec![
                    serde_json::json!(dlabel),
                    serde_json::json!(proto.name()),
                    serde_json::json!(sc),
                    f4(ma),
                    f4(ca),
                    ai[0].clone(),
                    ai[1].clone(),
                    ai[2].clone(),
                    f4(mf),
                    f4(cf),
                    serde_json::json!(st.a_win.len()),
                ]);
            }
            if fcovs.len() >= 2 {
                fcov_n += 1;
                fcov_up += usize::from(fcovs[0] > *fcovs.last().unwrap());
            }
            let fw = mean(&stat(&res, pi, proto, &w, 1).f_whole);
            fwhole.push((dlabel.clone(), proto, fw));
            let dashed = pi % 3 == 1;
            let name = format!("{} {dlabel}", proto.name());
            if proto != Proto::Tcp {
                curves_a.push(curve(name.clone(), proto.color() + 3 * pi, dashed, pa));
                curves_ca.push(curve(name.clone(), proto.color() + 3 * pi, dashed, pca));
            }
            curves_f.push(curve(name.clone(), proto.color() + 3 * pi, dashed, pf));
            curves_cf.push(curve(name, proto.color() + 3 * pi, dashed, pcf));
        }
    }
    let mk = |title: &str, y: &str, curves: Vec<Curve>, h: Vec<(f64, String)>| {
        xy_chart(
            &XyChart {
                title: title.into(),
                x_label: "time scale (s)".into(),
                y_label: y.into(),
                log_x: true,
                y_range: None,
                hlines: h,
            },
            &curves,
        )
    };
    out.plots.push((
        "fig26_accuracy.svg".into(),
        mk("Fig. 26: mean allocation accuracy A", "A", curves_a, vec![(1.0, "perfect".into())]),
    ));
    out.plots
        .push(("fig27_accuracy_cov.svg".into(), mk("Fig. 27: CoV of allocation accuracy", "CoV", curves_ca, vec![])));
    out.plots.push((
        "fig28_fairness.svg".into(),
        mk("Fig. 28: mean fairness ratio F", "F", curves_f, vec![(1.0, "fair".into())]),
    ));
    out.plots
        .push(("fig29_fairness_cov.svg".into(), mk("Fig. 29: CoV of the fairness ratio", "CoV", curves_cf, vec![])));
    // Fig. 24/25: 1 s throughput of the first run at the first delay setting.
    for (proto, name, fig) in
        [(Proto::Vps, "fig24_vps_throughput.svg", 24), (Proto::MulTcp, "fig25_multcp_throughput.svg", 25)]
    {
        if let Some((_, o)) = res.get(0, proto).first() {
            let curves = (0..3)
                .map(|f| {
                    let pts = o.bins[f].iter().enumerate().take(200).map(|(t, b)| (t as f64 + 1.0, b * 8e-3)).collect();
                    curve(format!("flow {} (w = {})", f + 1, w[f]), f, false, pts)
                })
                .map(|mut c| {
                    c.markers = false;
                    c
                })
                .collect();
            out.plots.push((
                name.into(),
                chart(
                    &format!(
                        "Fig. {fig}: {} throughput over 1 s intervals ({} delays, seed {}, first 200 s)",
                        proto.name(),
                        dl[0],
                        ctx.seed
                    ),
                    "time (s)",
                    "kbit/s",
                    curves,
                    vec![],
                    None,
                ),
            ));
        }
    }
    // Inversions: a higher-weight flow below a lower-weight one in a 1 s interval.
    let inversions = |proto: Proto| {
        let (mut inv, mut tot) = (0usize, 0usize);
        for (_, o) in res.get(0, proto) {
            for k in 0..o.bins[0].len() {
                tot += 1;
                if o.bins[2][k] < o.bins[1][k] || o.bins[1][k] < o.bins[0][k] {
                    inv += 1;
                }
            }
        }
        inv as f64 / tot.max(1) as f64
    };
    let (iv, im) = (inversions(Proto::Vps), inversions(Proto::MulTcp));
    out.tables.push(table);
    let fv: Vec<f64> = fwhole.iter().filter(|x| x.1 == Proto::Vps).map(|x| x.2).collect();
    let fm: Vec<f64> = fwhole.iter().filter(|x| x.1 == Proto::MulTcp).map(|x| x.2).collect();
    let fvr = (fv.iter().cloned().fold(f64::INFINITY, f64::min), fv.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    let fm_min = fm.iter().cloned().fold(f64::INFINITY, f64::min);
    res.activity(&mut out);
    out.measure(
        "vps-accuracy",
        Measured::new(vps_min_acc, "A", format!("min over delays and scales >= {acc_scale} s: {vps_min_acc:.4}")),
    );
    out.measure(
        "vps-above-multcp",
        Measured::new(
            share(beats, npts),
            "% of points",
            format!("VPS > MulTCP at {beats}/{npts} (delay, scale) points; smallest margin {margin:.4}"),
        ),
    );
    out.measure(
        "vps-cov-lower",
        Measured::new(
            share(cov_lower, npts),
            "% of points",
            format!("VPS's CoV lower at {cov_lower}/{npts} (delay, scale) points"),
        ),
    );
    out.measure(
        "vps-fair",
        Measured::new(
            (fvr.0 - 1.0).abs().max((fvr.1 - 1.0).abs()) * 100.0,
            "% from 1",
            format!("F in [{:.3}, {:.3}] over delays", fvr.0, fvr.1),
        ),
    );
    out.measure("multcp-aggressive", Measured::new(fm_min, "F", format!("F >= {fm_min:.3} over delays")));
    out.measure(
        "fairness-cov-rises",
        Measured::new(share(fcov_up, fcov_n), "% of pairs", format!("{fcov_up}/{fcov_n} (protocol, delay) pairs")),
    );
    out.measure(
        "ordering-inversions",
        Measured::new(
            (iv - im) * 100.0,
            "points",
            format!("1 s intervals out of order: VPS {:.1}%, MulTCP {:.1}% ({} delays)", iv * 100.0, im * 100.0, dl[0]),
        ),
    );
    out.notes.push(runs_note(seeds, &duration, ctx.quick));
    out.notes.extend(paper_notes(&ef));
    Ok(out)
}

// ------------------------------------------------------------------ sweeps (F30..F45)

/// A sweep of points for VPS and MulTCP (and the paired TCP runs): tables, plots and claims.
struct Sweep {
    x_name: &'static str,
    /// (series label, point indices with their x values).
    series: Vec<(String, Vec<(usize, f64)>)>,
    points: Vec<Point>,
    protos: Vec<Proto>,
    window: usize,
}

struct SweepStats {
    /// (series, x, proto) → (A whole mean, A window mean, A window CoV, F mean, F CoV over
    /// seeds, same-run F mean, paired-run bias mean)
    rows: Vec<(usize, f64, Proto, [f64; 7])>,
}

impl Sweep {
    fn compute(&self, res: &Results) -> SweepStats {
        let mut rows = Vec::new();
        for (si, (_, pts)) in self.series.iter().enumerate() {
            for &(pi, x) in pts {
                for &proto in &self.protos {
                    let st = stat(res, pi, proto, &self.points[pi].weights, self.window);
                    rows.push((
                        si,
                        x,
                        proto,
                        [
                            mean(&st.a_whole),
                            mean(&st.a_win),
                            cov(&st.a_win),
                            mean(&st.f_whole),
                            cov(&st.f_whole),
                            mean(&st.f_same),
                            mean(&st.paired_bias),
                        ],
                    ));
                }
            }
        }
        SweepStats { rows }
    }

    fn table(&self, s: &SweepStats, name: &str) -> Table {
        let mut t = Table {
            name: name.into(),
            columns: vec![
                "series".into(),
                self.x_name.into(),
                "protocol".into(),
                "A_whole_run".into(),
                format!("mean_A_{}s", self.window),
                format!("cov_A_{}s", self.window),
                "mean_F".into(),
                "cov_F".into(),
                "mean_F_same_run".into(),
                "paired_run_bias".into(),
            ],
            rows: Vec::new(),
        };
        for (si, x, proto, v) in &s.rows {
            let mut row = vec![serde_json::json!(self.series[*si].0), f4(*x), serde_json::json!(proto.name())];
            row.extend(v.iter().map(|x| f4(*x)));
            t.rows.push(row);
        }
        t
    }

    fn plot(
        &self,
        s: &SweepStats,
        what: usize,
        title: &str,
        y: &str,
        h: Vec<(f64, String)>,
    ) -> ackshape_sim::plot::Plot {
        let mut curves = Vec::new();
        for (si, (label, _)) in self.series.iter().enumerate() {
            for &proto in &self.protos {
                if proto == Proto::Tcp {
                    continue;
                }
                let pts: Vec<(f64, f64)> =
                    s.rows.iter().filter(|r| r.0 == si && r.2 == proto).map(|r| (r.1, r.3[what])).collect();
                let name =
                    if self.series.len() > 1 { format!("{} {label}", proto.name()) } else { proto.name().into() };
                curves.push(curve(name, proto.color() + 3 * si, si % 2 == 1, pts));
            }
        }
        chart(title, self.x_name, y, curves, h, None)
    }

    /// The common claims' measurements: VPS's accuracy at every point, on the thesis's definition
    /// (Eq. 3-4 on the throughput of the whole run) and, supplementary, over windows; VPS above
    /// MulTCP; VPS's fairness ratio; MulTCP's above VPS's. With N = 1 both are one TCP flow (A = 1 by
    /// definition), so that point is left out of the comparisons.
    fn claims(&self, s: &SweepStats, out: &mut ExpOutput, check_fairness: bool) -> Result<(), String> {
        let get = |proto: Proto| s.rows.iter().filter(move |r| r.2 == proto);
        let single = |r: &(usize, f64, Proto, [f64; 7])| self.points.iter().any(|p| p.weights.len() == 1) && r.1 == 1.0;
        let vps_whole_min = min_of(get(Proto::Vps).filter(|r| !single(r)).map(|r| r.3[0]));
        let vps_win_min = min_of(get(Proto::Vps).filter(|r| !single(r)).map(|r| r.3[1]));
        let at_min = |k: usize, m: f64| {
            get(Proto::Vps)
                .find(|r| r.3[k] == m)
                .map(|r| format!(" (at {} = {}{})", self.x_name, crate::claims::num(r.1), self.series_label(r.0)))
                .unwrap_or_default()
        };
        out.measure(
            "vps-accuracy",
            Measured::new(
                vps_whole_min,
                "A",
                format!(
                    "lowest whole-run A {vps_whole_min:.4}{}; lowest mean over {} s windows {vps_win_min:.4}",
                    at_min(0, vps_whole_min),
                    self.window
                ),
            ),
        );
        out.measure(
            "vps-accuracy-windows",
            Measured::new(
                vps_win_min,
                "A",
                format!("lowest mean A over {} s windows {vps_win_min:.4}{}", self.window, at_min(1, vps_win_min)),
            ),
        );
        if self.protos.contains(&Proto::MulTcp) {
            let mut beats = 0;
            let mut total = 0;
            let mut worst = String::new();
            for r in get(Proto::Vps).filter(|r| !single(r)) {
                if let Some(m) = get(Proto::MulTcp).find(|m| m.0 == r.0 && m.1 == r.1) {
                    total += 1;
                    if r.3[0] > m.3[0] {
                        beats += 1;
                    } else if worst.is_empty() {
                        worst = format!(
                            " (not at {} = {}{}: VPS {:.4}, MulTCP {:.4})",
                            self.x_name,
                            crate::claims::num(r.1),
                            self.series_label(r.0),
                            r.3[0],
                            m.3[0]
                        );
                    }
                }
            }
            out.measure(
                "vps-above-multcp",
                Measured::new(
                    share(beats, total),
                    "% of points",
                    format!("whole-run A higher at {beats}/{total} points{worst}"),
                ),
            );
        }
        if check_fairness {
            let fv: Vec<f64> = get(Proto::Vps).map(|r| r.3[3]).collect();
            let (lo, hi) = (min_of(fv.iter().copied()), max_of(fv.iter().copied()));
            out.measure(
                "vps-fair",
                Measured::new(
                    (lo - 1.0).abs().max((hi - 1.0).abs()) * 100.0,
                    "% from 1",
                    format!("F in [{lo:.3}, {hi:.3}]"),
                ),
            );
            if self.protos.contains(&Proto::MulTcp) {
                let mut above = 0;
                let mut total = 0;
                for r in get(Proto::Vps).filter(|r| !single(r)) {
                    if let Some(m) = get(Proto::MulTcp).find(|m| m.0 == r.0 && m.1 == r.1) {
                        total += 1;
                        above += (m.3[3] > r.3[3]) as usize;
                    }
                }
                out.measure(
                    "multcp-more-aggressive",
                    Measured::new(
                        share(above, total),
                        "% of points",
                        format!("MulTCP's F above VPS's at {above}/{total} points"),
                    ),
                );
            }
        }
        Ok(())
    }

    /// `, 1 Mbit/s` for a sweep with several series, else nothing.
    fn series_label(&self, si: usize) -> String {
        if self.series.len() > 1 {
            format!(", {}", self.series[si].0)
        } else {
            String::new()
        }
    }
}

/// A series label (`10 Mbit/s`) as part of a claim ID (`10mbit`).
fn id_part(label: &str) -> String {
    label.replace(" Mbit/s", "mbit").replace(' ', "-").to_ascii_lowercase()
}

fn rates(rep: &Rep, file: &str) -> Result<Vec<f64>, String> {
    Rep::need(&rep.rates_mbit, file, "rates_mbit")
}

fn run_f30(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let ef = ExpFile::parse(exp)?;
    let rep = Rep::read(&ef, ctx.quick)?;
    let seeds = Rep::need(&rep.seeds, &ef.file, "seeds")?;
    let duration = Rep::need(&rep.duration, &ef.file, "duration")?;
    let rs = rates(&rep, &ef.file)?;
    let window = rep.window_s.unwrap_or(5) as usize;
    let points: Vec<Point> = rs
        .iter()
        .map(|&r| Point {
            rate_mbit: Some(r),
            delay: None,
            weights: vec![1.0, 2.0, 3.0],
            y_ms: None,
            ..Default::default()
        })
        .collect();
    let protos = vec![Proto::Vps, Proto::MulTcp, Proto::Tcp];
    let res = Results::run(ctx, batch(&ef, ctx, &points, &protos, seeds, &duration)?)?;
    let sw = Sweep {
        x_name: "bottleneck (Mbit/s)",
        series: vec![("".into(), rs.iter().enumerate().map(|(i, &r)| (i, r)).collect())],
        points,
        protos,
        window,
    };
    let s = sw.compute(&res);
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    sw.claims(&s, &mut out, true)?;
    res.activity(&mut out);
    // MulTCP's accuracy is worst at low bandwidth (whole-run A).
    let mul: Vec<&(usize, f64, Proto, [f64; 7])> = s.rows.iter().filter(|r| r.2 == Proto::MulTcp).collect();
    match (mul.first(), mul.last()) {
        (Some(lo), Some(hi)) if mul.len() > 1 => out.measure(
            "multcp-worse-at-low-bandwidth",
            Measured::new(
                hi.3[0] - lo.3[0],
                "A",
                format!("whole-run A {:.4} at {} vs {:.4} at {} Mbit/s", lo.3[0], lo.1, hi.3[0], hi.1),
            ),
        ),
        _ => out.measure(
            "multcp-worse-at-low-bandwidth",
            Measured::gated("A", "fewer than two bandwidths in this run", "not run"),
        ),
    }
    out.tables.push(sw.table(&s, "vs_bandwidth"));
    out.plots.push((
        "fig30_accuracy.svg".into(),
        sw.plot(&s, 1, "Fig. 30: accuracy vs bottleneck bandwidth", "mean A", vec![(1.0, "perfect".into())]),
    ));
    out.plots.push((
        "fig31_fairness.svg".into(),
        sw.plot(&s, 3, "Fig. 31: fairness ratio vs bottleneck bandwidth", "F", vec![(1.0, "TCP".into())]),
    ));
    out.notes.push(runs_note(seeds, &duration, ctx.quick));
    out.notes.extend(paper_notes(&ef));
    Ok(out)
}

/// Whether the curve of `proto` in series `si` moves in direction `sign` (+1 rising, −1 falling)
/// from its first to its last point.
fn trend(s: &SweepStats, si: usize, proto: Proto, what: usize) -> (f64, f64) {
    let pts: Vec<f64> = s.rows.iter().filter(|r| r.0 == si && r.2 == proto).map(|r| r.3[what]).collect();
    (pts.first().copied().unwrap_or(f64::NAN), pts.last().copied().unwrap_or(f64::NAN))
}

/// Sensitivity variants of a sweep (`[[reproduce.sensitivity]]`): each entry re-runs the sweep's
/// points at its own rates, with its `[tcp]` and VPS keys over the file's, and reports A (whole
/// run and per window), F and the group's timeouts per flow, next to the main results. Quick
/// mode runs one seed at the first and last x value.
#[allow(clippy::too_many_arguments)]
fn sensitivity(
    ef: &ExpFile,
    ctx: &mut Ctx,
    rep: &Rep,
    seeds: u64,
    duration: &str,
    window: usize,
    x_name: &str,
    xs: &[u32],
    point: &dyn Fn(f64, u32) -> Point,
    out: &mut ExpOutput,
) -> Result<(), String> {
    let Some(list) = rep.sensitivity.clone() else { return Ok(()) };
    let mut t = Table {
        name: "sensitivity".into(),
        columns: vec![
            "variant".into(),
            "rate_mbit".into(),
            x_name.into(),
            "protocol".into(),
            "A_whole_run".into(),
            format!("mean_A_{window}s"),
            "mean_F".into(),
            "group_timeouts_per_flow".into(),
        ],
        rows: Vec::new(),
    };
    for (vi, sv) in list.iter().enumerate() {
        let at = format!("{}: key `reproduce.sensitivity[{vi}]`", ef.file);
        let mut protos = Vec::new();
        for name in &sv.protocols {
            protos.push(match name.as_str() {
                "vps" => Proto::Vps,
                "multcp" => Proto::MulTcp,
                other => return Err(format!("{at}.protocols: expected \"vps\" or \"multcp\", got {other:?}")),
            });
        }
        protos.push(Proto::Tcp);
        let mut vx = sv.x.clone().unwrap_or_else(|| xs.to_vec());
        let vseeds = if ctx.quick { 1 } else { sv.seeds.unwrap_or(seeds) };
        if ctx.quick && vx.len() > 2 {
            vx = vec![vx[0], vx[vx.len() - 1]];
        }
        let mut keys = Vec::new();
        let mut points = Vec::new();
        for &r in &sv.rates_mbit {
            for &x in &vx {
                let mut p = point(r, x);
                p.tcp = sv.tcp.clone();
                p.vps = sv.vps.clone();
                keys.push((r, x));
                points.push(p);
            }
        }
        let res = Results::run(ctx, batch(ef, ctx, &points, &protos, vseeds, duration)?)?;
        let (mut vps_amin, mut vps_fmin, mut vps_fmax) = (f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY);
        let mut mul_f: Vec<(f64, u32, f64)> = Vec::new();
        for (pi, (r, x)) in keys.iter().enumerate() {
            let n = points[pi].weights.len();
            for &proto in &protos[..protos.len() - 1] {
                let st = stat(&res, pi, proto, &points[pi].weights, window);
                let runs = res.get(pi, proto);
                let to =
                    runs.iter().map(|(_, o)| o.summary.flows[..n].iter().map(|f| f.timeouts).sum::<u64>()).sum::<u64>()
                        as f64
                        / (runs.len().max(1) * n) as f64;
                let (a, f) = (mean(&st.a_win), mean(&st.f_whole));
                if proto == Proto::Vps && n != 1 {
                    vps_amin = vps_amin.min(a);
                }
                if proto == Proto::Vps {
                    vps_fmin = vps_fmin.min(f);
                    vps_fmax = vps_fmax.max(f);
                }
                if proto == Proto::MulTcp {
                    mul_f.push((*r, *x, f));
                }
                t.rows.push(vec![
                    serde_json::json!(sv.label),
                    f4(*r),
                    serde_json::json!(x),
                    serde_json::json!(proto.name()),
                    f4(mean(&st.a_whole)),
                    f4(a),
                    f4(f),
                    f4(to),
                ]);
            }
        }
        let mut note = format!("Sensitivity \"{}\" ({vseeds} seed(s) per point):", sv.label);
        if protos.contains(&Proto::Vps) {
            note += &format!(
                " VPS mean A over {window} s windows ≥ {vps_amin:.4}, VPS F in [{vps_fmin:.3}, {vps_fmax:.3}];"
            );
        }
        for &r in &sv.rates_mbit {
            let m: Vec<&(f64, u32, f64)> = mul_f.iter().filter(|m| m.0 == r).collect();
            if let (Some(a), Some(b)) = (m.first(), m.last()) {
                note += &format!(
                    " MulTCP F at {r} Mbit/s: {:.3} ({x_name} = {}) → {:.3} ({x_name} = {});",
                    a.2, a.1, b.2, b.1
                );
            }
        }
        out.notes.push(note.trim_end_matches(';').to_string() + ".");
    }
    out.tables.push(t);
    Ok(())
}

fn run_f32(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let ef = ExpFile::parse(exp)?;
    let rep = Rep::read(&ef, ctx.quick)?;
    let seeds = Rep::need(&rep.seeds, &ef.file, "seeds")?;
    let duration = Rep::need(&rep.duration, &ef.file, "duration")?;
    let rs = rates(&rep, &ef.file)?;
    let ds = Rep::need(&rep.d, &ef.file, "d")?;
    let window = rep.window_s.unwrap_or(5) as usize;
    let mut points = Vec::new();
    let mut series = Vec::new();
    for &r in &rs {
        let mut pts = Vec::new();
        for &d in &ds {
            pts.push((points.len(), d as f64));
            points.push(Point {
                rate_mbit: Some(r),
                delay: None,
                weights: (0..3).map(|i| 1.0 + (i * d) as f64).collect(),
                y_ms: None,
                ..Default::default()
            });
        }
        series.push((format!("{r} Mbit/s"), pts));
    }
    let protos = vec![Proto::Vps, Proto::MulTcp, Proto::Tcp];
    let res = Results::run(ctx, batch(&ef, ctx, &points, &protos, seeds, &duration)?)?;
    let sw = Sweep { x_name: "d", series, points, protos, window };
    let s = sw.compute(&res);
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    sw.claims(&s, &mut out, true)?;
    res.activity(&mut out);
    for (si, (label, _)) in sw.series.iter().enumerate() {
        let (f1, f10) = trend(&s, si, Proto::MulTcp, 3);
        out.measure(
            &format!("multcp-aggressive-grows-{}", id_part(label)),
            Measured::new(f10 - f1, "F", format!("F {f1:.3} at the smallest d, {f10:.3} at the largest ({label})")),
        );
        let (a1, a10) = trend(&s, si, Proto::MulTcp, 0);
        out.measure(
            &format!("multcp-accuracy-falls-{}", id_part(label)),
            Measured::new(
                a1 - a10,
                "A",
                format!("whole-run A {a1:.4} at the smallest d, {a10:.4} at the largest ({label})"),
            ),
        );
    }
    out.tables.push(sw.table(&s, "vs_ratio_differential"));
    let mk = |r: f64, d: u32| Point {
        rate_mbit: Some(r),
        weights: (0..3).map(|i| 1.0 + (i * d) as f64).collect(),
        ..Default::default()
    };
    sensitivity(&ef, ctx, &rep, seeds, &duration, window, "d", &ds, &mk, &mut out)?;
    out.plots.push((
        "fig32_33_accuracy.svg".into(),
        sw.plot(&s, 1, "Fig. 32/33: accuracy vs ratio differential d", "mean A", vec![(1.0, "perfect".into())]),
    ));
    out.plots.push((
        "fig34_35_fairness.svg".into(),
        sw.plot(&s, 3, "Fig. 34/35: fairness ratio vs d", "F", vec![(1.0, "TCP".into())]),
    ));
    out.notes.push(runs_note(seeds, &duration, ctx.quick));
    out.notes.extend(paper_notes(&ef));
    Ok(out)
}

fn run_f36(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let ef = ExpFile::parse(exp)?;
    let rep = Rep::read(&ef, ctx.quick)?;
    let seeds = Rep::need(&rep.seeds, &ef.file, "seeds")?;
    let duration = Rep::need(&rep.duration, &ef.file, "duration")?;
    let rs = rates(&rep, &ef.file)?;
    let ns = Rep::need(&rep.n, &ef.file, "n")?;
    let window = rep.window_s.unwrap_or(5) as usize;
    let mut points = Vec::new();
    let mut series = Vec::new();
    for &r in &rs {
        let mut pts = Vec::new();
        for &n in &ns {
            pts.push((points.len(), n as f64));
            points.push(Point {
                rate_mbit: Some(r),
                delay: None,
                weights: (1..=n).map(|i| i as f64).collect(),
                y_ms: None,
                ..Default::default()
            });
        }
        series.push((format!("{r} Mbit/s"), pts));
    }
    let protos = vec![Proto::Vps, Proto::MulTcp, Proto::Tcp];
    let res = Results::run(ctx, batch(&ef, ctx, &points, &protos, seeds, &duration)?)?;
    let sw = Sweep { x_name: "N", series, points, protos, window };
    let s = sw.compute(&res);
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    sw.claims(&s, &mut out, true)?;
    res.activity(&mut out);
    for (si, (label, _)) in sw.series.iter().enumerate() {
        // MulTCP's fairness from N = 1 to N = 3.
        let f_at = |n: f64| s.rows.iter().find(|r| r.0 == si && r.1 == n && r.2 == Proto::MulTcp).map(|r| r.3[3]);
        let id = format!("multcp-fairness-n1-n3-{}", id_part(label));
        match (f_at(1.0), f_at(3.0)) {
            (Some(f1), Some(f3)) => {
                out.measure(&id, Measured::new(f3 - f1, "F", format!("F {f1:.3} at N = 1, {f3:.3} at N = 3 ({label})")))
            }
            _ => out.measure(&id, Measured::gated("F", "N = 1 and N = 3 are not both in this run", "not run")),
        }
    }
    out.tables.push(sw.table(&s, "vs_flows"));
    let mk = |r: f64, n: u32| Point {
        rate_mbit: Some(r),
        weights: (1..=n).map(|i| i as f64).collect(),
        ..Default::default()
    };
    sensitivity(&ef, ctx, &rep, seeds, &duration, window, "N", &ns, &mk, &mut out)?;
    out.plots.push((
        "fig36_37_accuracy.svg".into(),
        sw.plot(&s, 1, "Fig. 36/37: accuracy vs number of flows", "mean A", vec![(1.0, "perfect".into())]),
    ));
    out.plots.push((
        "fig38_39_fairness.svg".into(),
        sw.plot(&s, 3, "Fig. 38/39: fairness ratio vs number of flows", "F", vec![(1.0, "TCP".into())]),
    ));
    out.notes.push(runs_note(seeds, &duration, ctx.quick));
    out.notes.push(
        "With N = 1 both VPS and MulTCP are one TCP flow (A = 1 by definition; left out of the comparisons).".into(),
    );
    out.notes.extend(paper_notes(&ef));
    Ok(out)
}

fn run_f40(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let ef = ExpFile::parse(exp)?;
    let rep = Rep::read(&ef, ctx.quick)?;
    let seeds = Rep::need(&rep.seeds, &ef.file, "seeds")?;
    let duration = Rep::need(&rep.duration, &ef.file, "duration")?;
    let rs = rates(&rep, &ef.file)?;
    let dl = Rep::need(&rep.delays, &ef.file, "delays")?;
    let ys = Rep::need(&rep.y_ms, &ef.file, "y_ms")?;
    let window = rep.window_s.unwrap_or(5) as usize;
    let mut points = Vec::new();
    let mut series = Vec::new();
    for &r in &rs {
        for d in &dl {
            let mut pts = Vec::new();
            for &y in &ys {
                pts.push((points.len(), y as f64));
                points.push(Point {
                    rate_mbit: Some(r),
                    delay: Some(d.clone()),
                    weights: vec![1.0, 2.0, 3.0],
                    y_ms: Some(y),
                    ..Default::default()
                });
            }
            series.push((format!("{r} Mbit/s {d}"), pts));
        }
    }
    let protos = vec![Proto::Vps, Proto::Tcp];
    let res = Results::run(ctx, batch(&ef, ctx, &points, &protos, seeds, &duration)?)?;
    let sw = Sweep { x_name: "y (ms)", series, points, protos, window };
    let s = sw.compute(&res);
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    sw.claims(&s, &mut out, false)?;
    // Fairness vs y (y ≥ 1, the thesis's range): per bandwidth, averaged over the delay labels;
    // F against the paired run (Eq. 5), the same-run F, and the paired run's own bias.
    let ends = |r: f64, what: usize| {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (si, (label, _)) in sw.series.iter().enumerate() {
            if label.starts_with(&format!("{r} Mbit/s")) {
                let pts: Vec<f64> =
                    s.rows.iter().filter(|x| x.0 == si && x.2 == Proto::Vps && x.1 >= 1.0).map(|x| x.3[what]).collect();
                if let (Some(f), Some(l)) = (pts.first(), pts.last()) {
                    a.push(*f);
                    b.push(*l);
                }
            }
        }
        (mean(&a), mean(&b))
    };
    let mut falls = 0;
    let (mut meas, mut same, mut bias) = (Vec::new(), Vec::new(), Vec::new());
    for &r in &rs {
        let (f1, f2) = ends(r, 3);
        falls += usize::from(f2 < f1);
        meas.push(format!("{r} Mbit/s: {f1:.3} → {f2:.3}"));
        let (g1, g2) = ends(r, 5);
        same.push(format!("{r} Mbit/s: {g1:.3} → {g2:.3}"));
        let (b1, b2) = ends(r, 6);
        bias.push(format!("{r} Mbit/s: {b1:.3} → {b2:.3}"));
    }
    res.activity(&mut out);
    out.measure(
        "vps-fairness-falls",
        Measured::new(
            share(falls, rs.len()),
            "% of bandwidths",
            format!("F (paired run) at the smallest -> largest y >= 1 ms, mean over delay labels: {}", meas.join("; ")),
        ),
    );
    if let Some(y0) = s.rows.iter().find(|x| x.2 == Proto::Vps && x.1 == 0.0) {
        let y0s: Vec<String> = sw
            .series
            .iter()
            .enumerate()
            .filter_map(|(si, (l, _))| {
                s.rows
                    .iter()
                    .find(|x| x.0 == si && x.2 == Proto::Vps && x.1 == 0.0)
                    .map(|x| format!("{l}: {:.3}", x.3[3]))
            })
            .collect();
        let _ = y0;
        out.notes.push(format!("Reference y = 0 (homogeneous receivers, not in the thesis): F = {}.", y0s.join("; ")));
    }
    out.notes.push(format!(
        "Same-run F (the group over the competing TCP flows of the same run), smallest → largest y: {}.",
        same.join("; ")
    ));
    out.notes.push(format!(
        "Paired-run bias (the replaced TCP flows over the competing TCP flows in the paired run; 1 = none), smallest → largest y: {}.",
        bias.join("; ")
    ));
    // Mechanism counters (P3-7): false virtual fast retransmits, buffering, virtual RTT.
    let mut mech = Table {
        name: "mechanism".into(),
        columns: [
            "series",
            "y_ms",
            "F",
            "actual_fast_retransmits",
            "virtual_fr_lost",
            "virtual_fr_false",
            "virtual_timeouts",
            "buffered_per_actual_ack",
            "mean_buffer_delay_ms",
            "actual_rtt_ms",
            "virtual_rtt_ms",
            "tcp_paired_rtt_ms",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let mut false_fr = 0u64;
    let mut lost_fr = 0u64;
    for (si, (label, pts)) in sw.series.iter().enumerate() {
        for &(pi, y) in pts {
            let runs = res.get(pi, Proto::Vps);
            let (mut afr, mut vl, mut vf, mut vto, mut buf, mut acks, mut bd, mut br) = (0u64, 0, 0, 0, 0, 0, 0, 0);
            let (mut artt, mut vrtt, mut trtt) = (Vec::new(), Vec::new(), Vec::new());
            for (seed, o) in &runs {
                let Some(g) = o.summary.groups.first() else { continue };
                let st = &g["stats"];
                let u = |k: &str| st[k].as_u64().unwrap_or(0);
                vl += u("virtual_fr_lost");
                vf += u("virtual_fr_false");
                vto += u("virtual_timeouts");
                acks += u("actual_acks");
                bd += u("buffer_delay_ns");
                br += u("buffer_released");
                buf += st["translator"]["buffered"].as_u64().unwrap_or(0);
                afr += o.summary.flows[..3].iter().map(|f| f.fast_retransmits).sum::<u64>();
                artt.push(mean(&o.summary.flows[..3].iter().map(|f| f.rtt_mean_ms).collect::<Vec<_>>()));
                if let Some(v) = g["virtual"].as_array() {
                    vrtt.push(mean(&v.iter().filter_map(|x| x["rtt_mean_ms"].as_f64()).collect::<Vec<_>>()));
                }
                if let Some(t) = res.paired(pi, *seed) {
                    trtt.push(mean(&t.summary.flows[..3].iter().map(|f| f.rtt_mean_ms).collect::<Vec<_>>()));
                }
            }
            false_fr += vf;
            lost_fr += vl;
            let f = s.rows.iter().find(|r| r.0 == si && r.1 == y && r.2 == Proto::Vps).map_or(f64::NAN, |r| r.3[3]);
            mech.rows.push(vec![
                serde_json::json!(label),
                serde_json::json!(y),
                f4(f),
                serde_json::json!(afr),
                serde_json::json!(vl),
                serde_json::json!(vf),
                serde_json::json!(vto),
                f4(buf as f64 / acks.max(1) as f64),
                f4(bd as f64 * 1e-6 / br.max(1) as f64),
                f4(mean(&artt)),
                f4(mean(&vrtt)),
                f4(mean(&trtt)),
            ]);
        }
    }
    // Pearson correlation over all (series, y) points of F with the virtual timeouts and with
    // the virtual flows' RTT excess over the actual flows' (the delay suppression adds).
    let col = |k: usize| mech.rows.iter().map(|r| r[k].as_f64().unwrap_or(f64::NAN)).collect::<Vec<f64>>();
    let (fcol, tocol) = (col(2), col(6));
    let excess: Vec<f64> = col(10).iter().zip(col(9)).map(|(v, a)| v - a).collect();
    let max_excess = excess.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let total_fr = false_fr + lost_fr;
    let false_share = false_fr as f64 / total_fr.max(1) as f64;
    out.measure(
        "false-retransmits-cause",
        Measured::new(
            if total_fr > 0 { false_share * 100.0 } else { f64::NAN },
            "% of virtual fast retransmits",
            format!(
                "false virtual fast retransmits (hole not a lost actual packet): {false_fr} of {total_fr} ({:.4}%); \
                 correlation of F with virtual timeouts r = {:.2}, with the virtual flows' RTT excess r = {:.2} \
                 (up to {max_excess:.0} ms)",
                100.0 * false_share,
                pearson(&fcol, &tocol),
                pearson(&fcol, &excess),
            ),
        ),
    );
    // Ablation: which of VPS's mechanisms the fairness drop depends on.
    if let (Some(ar), Some(ad)) = (rep.ablation_rate_mbit, rep.ablation_delay.clone()) {
        let apoints: Vec<Point> = ys
            .iter()
            .map(|&y| Point {
                rate_mbit: Some(ar),
                delay: Some(ad.clone()),
                weights: vec![1.0, 2.0, 3.0],
                y_ms: Some(y),
                ..Default::default()
            })
            .collect();
        let aprotos = [Proto::Vps, Proto::VpsNoSuspension, Proto::VpsNoSuppression, Proto::Tcp];
        let ares = Results::run(ctx, batch(&ef, ctx, &apoints, &aprotos, seeds, &duration)?)?;
        let mut t = Table {
            name: "ablation".into(),
            columns: ["y_ms", "variant", "F", "mean_A_window", "virtual_fr_false", "actual_timeouts"]
                .map(String::from)
                .to_vec(),
            rows: Vec::new(),
        };
        let mut curves = Vec::new();
        for proto in &aprotos[..3] {
            let mut pts = Vec::new();
            for (pi, &y) in ys.iter().enumerate() {
                let st = stat(&ares, pi, *proto, &apoints[pi].weights, window);
                let runs = ares.get(pi, *proto);
                let vf: u64 = runs
                    .iter()
                    .filter_map(|(_, o)| o.summary.groups.first().and_then(|g| g["stats"]["virtual_fr_false"].as_u64()))
                    .sum();
                let to: u64 =
                    runs.iter().map(|(_, o)| o.summary.flows[..3].iter().map(|f| f.timeouts).sum::<u64>()).sum();
                let f = mean(&st.f_whole);
                pts.push((y as f64, f));
                t.rows.push(vec![
                    serde_json::json!(y),
                    serde_json::json!(proto.name()),
                    f4(f),
                    f4(mean(&st.a_win)),
                    serde_json::json!(vf),
                    serde_json::json!(to),
                ]);
            }
            curves.push(curve(proto.name().into(), proto.color(), false, pts));
        }
        out.plots.push((
            "ablation_fairness.svg".into(),
            chart(
                &format!("Fairness ratio vs y, {ar} Mbit/s {ad}: VPS and ablations"),
                "y (ms)",
                "F",
                curves,
                vec![(1.0, "TCP".into())],
                None,
            ),
        ));
        out.tables.push(t);
    }
    out.tables.push(sw.table(&s, "vs_extra_delay"));
    out.tables.push(mech);
    out.plots.push((
        "fig40_42_accuracy.svg".into(),
        sw.plot(&s, 1, "Fig. 40–42: accuracy vs extra delay factor y", "mean A", vec![(1.0, "perfect".into())]),
    ));
    out.plots.push((
        "fig43_45_fairness.svg".into(),
        sw.plot(&s, 3, "Fig. 43–45: fairness ratio vs extra delay factor y", "F", vec![(1.0, "TCP".into())]),
    ));
    out.notes.push(runs_note(seeds, &duration, ctx.quick));
    out.notes.push(
        "How to read the `mechanism` table: virtual_fr_false counts virtual fast retransmits whose hole was not a \
         lost actual packet (the thesis's conjecture); buffered_per_actual_ack and mean_buffer_delay_ms show how \
         often and how long suppression (Sec. 4.4) holds translations back; virtual_rtt_ms is the virtual flows' \
         own RTT estimate (send of a virtual packet to its virtual ACK), next to the actual flows' and the paired \
         TCP flows' RTTs. paired_run_bias (sweep table) separates a change of the denominator of F from a change \
         of the VPS group's own throughput."
            .into(),
    );
    out.notes.extend(paper_notes(&ef));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_eq3_eq4() {
        let (a, ai) = accuracy(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((a - 1.0).abs() < 1e-12 && ai.iter().all(|x| (x - 1.0).abs() < 1e-12));
        // Equal throughputs for 1:2:3: A_i = (1/3)/(w_i/6) = 2, 1, 2/3.
        let (a, ai) = accuracy(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((ai[0] - 2.0).abs() < 1e-12 && (ai[2] - 2.0 / 3.0).abs() < 1e-12);
        let expect = (2.0f64 + 1.0 + 2.0 / 3.0).powi(2) / (3.0 * (4.0 + 1.0 + 4.0 / 9.0));
        assert!((a - expect).abs() < 1e-12);
        assert!(accuracy(&[0.0, 0.0], &[1.0, 1.0]).is_none());
    }

    #[test]
    fn files_parse_and_scenarios_build() {
        for e in experiments() {
            let ef = ExpFile::parse(&e).unwrap_or_else(|m| panic!("{m}"));
            for q in [false, true] {
                let r = Rep::read(&ef, q).unwrap();
                assert!(r.seeds.is_some() && r.duration.is_some(), "{}", e.file);
            }
            let p = Point {
                rate_mbit: Some(2.0),
                delay: Some("long".into()),
                weights: vec![1.0, 3.0],
                y_ms: Some(4),
                ..Default::default()
            };
            for proto in [Proto::Vps, Proto::MulTcp, Proto::Tcp, Proto::WrrBlocking, Proto::VpsNoSuspension] {
                let sc = scenario(&ef, &p, proto, "10s").unwrap_or_else(|m| panic!("{m}"));
                assert_eq!(sc.flow_count(), 5);
            }
        }
    }
}
