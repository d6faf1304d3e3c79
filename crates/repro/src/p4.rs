//! Paper 004 (Bansal & Ward, *Third-Party Flow Control*): triple-ACK duplication and zero-window
//! ACKs from a tap beside the router, and the feedback controller the paper leaves as future work.
//!
//! Every experiment file is a valid scenario (one point of the sweep) plus a `[paper]` table: the
//! stated claims, our assumptions with their trap IDs (docs/experiments.md), tolerances, the sweep
//! (`[paper.sweep]`) and a second TCP profile (`[paper.profiles.modern.tcp]`, overriding the
//! file's ns-2-like `[tcp]`). Each experiment runs both profiles and reports both (trap P4-7).

use crate::claims::share;
use crate::experiment::{exp_param as prm, exp_specs as specs};
use crate::{Ctx, ExpOutput, Experiment, Measured, RunView, SimJob, Table};
use ackshape_sim::metrics::Summary;
use ackshape_sim::plot::{line_chart, Series};
use ackshape_sim::scenario::Scenario;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "P4-S4.1a",
            title: "Triple-ACK extremes: f = 1 raises bandwidth, f = 2 cuts it at a goodput cost; a cap set by RTT",
            file: "experiments/p4/s4-1a-triple-ack-extremes.toml",
            text: include_str!("../../../experiments/p4/s4-1a-triple-ack-extremes.toml"),
            run: run_s41a,
        },
        Experiment {
            id: "P4-F6",
            title: "Triple-ACK at f = 6: reduction over bandwidth × RTT",
            file: "experiments/p4/f6-triple-ack-surface.toml",
            text: include_str!("../../../experiments/p4/f6-triple-ack-surface.toml"),
            run: run_f6,
        },
        Experiment {
            id: "P4-F7",
            title: "Maximum bandwidth reduction vs triple-ACK frequency f",
            file: "experiments/p4/f7-reduction-vs-f.toml",
            text: include_str!("../../../experiments/p4/f7-reduction-vs-f.toml"),
            run: run_f7,
        },
        Experiment {
            id: "P4-F8",
            title: "Zero-window duplicate ACKs: reduction over bandwidth × RTT",
            file: "experiments/p4/f8-zero-window.toml",
            text: include_str!("../../../experiments/p4/f8-zero-window.toml"),
            run: run_f8,
        },
        Experiment {
            id: "P4-S4.2b",
            title: "Shaper delay: a hard switch at the inter-ACK gap",
            file: "experiments/p4/s4-2b-shaper-delay.toml",
            text: include_str!("../../../experiments/p4/s4-2b-shaper-delay.toml"),
            run: run_s42b,
        },
        Experiment {
            id: "P4-A3",
            title: "Feedback controller: hold a flow at 50% and 25% of its unshaped rate",
            file: "experiments/p4/a3-controller.toml",
            text: include_str!("../../../experiments/p4/a3-controller.toml"),
            run: run_a3,
        },
    ]
}

// ------------------------------------------------------------------ the experiment file

/// An experiment file: the base scenario table and its `[paper]` table.
#[derive(Clone)]
struct Base {
    file: &'static str,
    table: toml::Table,
    paper: toml::Table,
    /// (profile name, tcp overrides); "ns2" (the file's own [tcp]) first.
    profiles: Vec<(String, toml::Table)>,
}

fn load(exp: &Experiment) -> Result<Base, String> {
    let table: toml::Table = toml::from_str(exp.text).map_err(|e| format!("{}: {e}", exp.file))?;
    // The file must also be a valid scenario as it is.
    Scenario::parse(exp.text, exp.file).map_err(|e| e.to_string())?;
    let paper =
        table.get("paper").and_then(|p| p.as_table()).cloned().ok_or(format!("{}: no [paper] table", exp.file))?;
    let mut profiles = vec![("ns2".to_string(), toml::Table::new())];
    if let Some(p) = paper.get("profiles").and_then(|p| p.as_table()) {
        for (name, v) in p {
            let tcp = v
                .get("tcp")
                .and_then(|t| t.as_table())
                .cloned()
                .ok_or(format!("{}: key `paper.profiles.{name}.tcp`: expected a table", exp.file))?;
            profiles.push((name.clone(), tcp));
        }
    }
    Ok(Base { file: exp.file, table, paper, profiles })
}

impl Base {
    fn f64(&self, key: &str) -> Result<f64, String> {
        match self.paper.get(key) {
            Some(toml::Value::Float(f)) => Ok(*f),
            Some(toml::Value::Integer(i)) => Ok(*i as f64),
            _ => Err(format!("{}: key `paper.{key}`: expected a number", self.file)),
        }
    }
    fn list(&self, key: &str, quick: bool) -> Result<Vec<f64>, String> {
        let sweep = self.paper.get("sweep").and_then(|s| s.as_table());
        let qk = format!("quick_{key}");
        let v = sweep
            .and_then(|s| if quick { s.get(&qk).or(s.get(key)) } else { s.get(key) })
            .and_then(|v| v.as_array())
            .ok_or(format!("{}: key `paper.sweep.{key}`: expected an array of numbers", self.file))?;
        v.iter()
            .map(|x| match x {
                toml::Value::Float(f) => Ok(*f),
                toml::Value::Integer(i) => Ok(*i as f64),
                _ => Err(format!("{}: key `paper.sweep.{key}`: expected numbers, got {x}", self.file)),
            })
            .collect()
    }
    fn strings(&self, key: &str) -> Vec<String> {
        self.paper
            .get(key)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
            .unwrap_or_default()
    }
    /// The assumptions and the stated claims, as report notes.
    fn notes(&self) -> Vec<String> {
        let mut n: Vec<String> = self.strings("stated").into_iter().map(|s| format!("Paper: {s}")).collect();
        n.extend(self.strings("assumed").into_iter().map(|s| format!("Assumed: {s}")));
        n
    }
}

/// What to put beside the router.
#[derive(Clone, Debug)]
enum TapCfg {
    /// No box: the unshaped baseline.
    Off,
    /// A `kind = "tap"` table (the keys after `kind`), with a shaper one-way delay.
    Tap { delay_us: f64, settings: toml::Table },
}

fn tap(technique: &str, every: f64) -> TapCfg {
    let mut t = toml::Table::new();
    t.insert("technique".into(), technique.into());
    t.insert("every".into(), every.into());
    TapCfg::Tap { delay_us: 0.0, settings: t }
}

/// One simulation: profile, bandwidth, RTT, tap, and optional overrides of the run length.
#[derive(Clone, Debug)]
struct Point {
    profile: usize,
    bw_mbps: f64,
    rtt_ms: f64,
    tap: TapCfg,
    /// (duration s, warmup s) instead of the file's.
    times: Option<(f64, f64)>,
    /// Extra [tcp] keys for this point (e.g. cc).
    tcp: toml::Table,
}

impl Point {
    fn new(profile: usize, bw_mbps: f64, rtt_ms: f64, tap: TapCfg) -> Point {
        Point { profile, bw_mbps, rtt_ms, tap, times: None, tcp: toml::Table::new() }
    }
}

fn dur(s: f64) -> toml::Value {
    toml::Value::String(format!("{}us", (s * 1e6).round() as u64))
}

/// The scenario of one point; with `off` (the vacuity check) the tap is left out.
fn scenario_for(base: &Base, p: &Point, quick: bool, off: bool) -> Result<Scenario, String> {
    Scenario::from_table(doc_for(base, p, quick, off)?, base.file).map_err(|e| e.to_string())
}

/// The scenario document of one point (what [`scenario_for`] builds).
fn doc_for(base: &Base, p: &Point, quick: bool, off: bool) -> Result<toml::Table, String> {
    let mut t = base.table.clone();
    t.remove("paper");
    let tcp = t.entry("tcp").or_insert(toml::Value::Table(Default::default()));
    let tcp = tcp.as_table_mut().ok_or("[tcp] is not a table")?;
    for (k, v) in base.profiles[p.profile].1.iter().chain(p.tcp.iter()) {
        tcp.insert(k.clone(), v.clone());
    }
    let links = t
        .get_mut("topology")
        .and_then(|x| x.get_mut("links"))
        .and_then(|x| x.as_array_mut())
        .ok_or(format!("{}: expected topology.links (src — r — sink)", base.file))?;
    for l in links.iter_mut() {
        let l = l.as_table_mut().ok_or("link is not a table")?;
        l.insert("rate".into(), toml::Value::String(format!("{}kbit/s", (p.bw_mbps * 1000.0).round() as u64)));
        l.insert("delay".into(), dur(p.rtt_ms / 4000.0));
    }
    match &p.tap {
        _ if off => {
            t.remove("middlebox");
        }
        TapCfg::Off => {
            t.remove("middlebox");
        }
        TapCfg::Tap { delay_us, settings } => {
            let mut m = toml::Table::new();
            m.insert("node".into(), "r".into());
            m.insert("wan".into(), "down".into());
            m.insert("mode".into(), "mirror".into());
            m.insert("delay".into(), dur(delay_us * 1e-6));
            m.insert("kind".into(), "tap".into());
            // Which ACKs f counts (the tap's `count`), for every tap of the experiment.
            if let Some(c) = base.paper.get("count") {
                m.insert("count".into(), c.clone());
            }
            for (k, v) in settings {
                m.insert(k.clone(), v.clone());
            }
            t.insert("middlebox".into(), toml::Value::Array(vec![toml::Value::Table(m)]));
        }
    }
    let (d, w) = match p.times {
        Some(x) => x,
        None if quick => (20.0, 5.0),
        None => {
            let get = |k: &str| -> f64 {
                t.get(k)
                    .and_then(|v| v.as_str())
                    .and_then(|s| ackshape_core::units::parse_duration(s).ok())
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0)
            };
            (get("duration"), get("warmup"))
        }
    };
    t.insert("duration".into(), dur(d));
    t.insert("warmup".into(), dur(w));
    Ok(t)
}

/// The flow's numbers from one run.
#[derive(Clone, Debug, Default)]
struct Res {
    thr: f64,
    good: f64,
    retx: u64,
    fast_retransmits: u64,
    timeouts: u64,
    injections: u64,
    tap: Value,
    /// Window advertisements that closed the sender's window, and the share of the run it
    /// stayed closed.
    zero_windows: u64,
    zero_window_frac: f64,
}

/// The run of one point, seeded with the context's seed.
fn job_for(base: &Base, p: &Point, seed: u64, quick: bool, off: bool) -> Result<SimJob, String> {
    let tap = match &p.tap {
        TapCfg::Off => "unshaped".to_string(),
        TapCfg::Tap { delay_us, settings } => format!("tap {settings} delay={delay_us}us").replace('\n', " "),
    };
    let label = format!("{} {} Mbit/s {} ms {tap}", base.profiles[p.profile].0, p.bw_mbps, p.rtt_ms);
    SimJob::new(label, doc_for(base, p, quick, off)?, base.file, seed)
}

/// The flow's numbers of a finished run; `zero_window_frac` is still the closed time in ns
/// ([`run_all`] divides it by the run's length).
fn res_of(run: &dyn RunView, s: Summary) -> Result<Res, String> {
    let f = s.flows.first().ok_or("no flow")?;
    let tap = s.middleboxes.first().map(|m| m["stats"].clone()).unwrap_or(Value::Null);
    let st = run.flow_sender_stats(0).unwrap_or_default();
    Ok(Res {
        zero_windows: st.zero_windows,
        zero_window_frac: st.zero_window_ns as f64,
        thr: f.throughput_bps,
        good: f.goodput_bps,
        retx: f.retransmitted_packets,
        fast_retransmits: f.fast_retransmits,
        timeouts: f.timeouts,
        injections: tap["injections"].as_u64().unwrap_or(0),
        tap,
    })
}

/// Run every point through the context (its worker threads or its runner), reporting progress;
/// results in order.
fn run_all(base: &Base, points: &[Point], ctx: &mut Ctx) -> Result<Vec<Res>, String> {
    let (seed, quick, off) = (ctx.seed, ctx.quick, ctx.mechanism_off);
    let jobs: Vec<SimJob> = points.iter().map(|p| job_for(base, p, seed, quick, off)).collect::<Result<_, _>>()?;
    let res = ctx.run_jobs_span(&jobs, 0.0, 1.0, res_of);
    jobs.iter()
        .zip(res)
        .map(|(j, r)| {
            let mut r = r.and_then(|r| r)?;
            let run_ns = j.scenario.duration.0.as_secs_f64() * 1e9;
            r.zero_window_frac = if run_ns > 0.0 { r.zero_window_frac / run_ns } else { 0.0 };
            Ok(r)
        })
        .collect()
}

fn reduction(r: &Res, base: &Res) -> f64 {
    if base.thr > 0.0 {
        1.0 - r.thr / base.thr
    } else {
        0.0
    }
}

fn gfrac(r: &Res) -> f64 {
    if r.thr > 0.0 {
        r.good / r.thr
    } else {
        0.0
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The profile's segment size (its `[tcp] mss`, or the file's).
fn profile_mss(base: &Base, pi: usize) -> f64 {
    let tcp = base.table.get("tcp").and_then(|t| t.as_table()).cloned().unwrap_or_default();
    let over = &base.profiles[pi].1;
    over.get("mss").or(tcp.get("mss")).and_then(|v| v.as_integer()).unwrap_or(1448) as f64
}

/// Whether the unshaped flow at `bw` Mbit/s already fills the link: its throughput is within
/// `headroom` of the link's payload rate (`bw × mss / (mss + 40)`). There, no sender can send
/// more, so "f = 1 increases bandwidth" can only mean "does not reduce it".
fn link_full(base: &Base, pi: usize, bw: f64, unshaped: &Res, headroom: f64) -> bool {
    let mss = profile_mss(base, pi);
    unshaped.thr >= (1.0 - headroom) * bw * 1e6 * mss / (mss + 40.0)
}

/// "f = 1 increases total bandwidth" over (bandwidth, unshaped, shaped) points: the share of points
/// that agree — above unshaped where the link has headroom, not reduced by more than `full_tol` where
/// the unshaped flow already fills it. Not assessable (NaN) when no point has headroom: a full link
/// cannot carry more, so the claim has nothing to be tested on.
fn f1_increase(base: &Base, pi: usize, pts: &[(f64, &Res, &Res)], headroom: f64, full_tol: f64) -> Measured {
    let (mut open, mut inc, mut full, mut full_ok) = (0, 0, 0, 0);
    let mut worst_full = f64::NEG_INFINITY;
    for &(bw, b0, x) in pts {
        if link_full(base, pi, bw, b0, headroom) {
            full += 1;
            let red = reduction(x, b0);
            worst_full = worst_full.max(red);
            if red <= full_tol {
                full_ok += 1;
            }
        } else {
            open += 1;
            if x.thr > b0.thr {
                inc += 1;
            }
        }
    }
    let text = format!(
        "above unshaped at {inc} of {open} points with headroom; {full} points where the unshaped flow fills the link{}",
        if full > 0 { format!(" (largest reduction there {})", pct(worst_full)) } else { String::new() }
    );
    if open == 0 {
        return Measured::gated(
            "% of points",
            "no point of the grid leaves the unshaped flow headroom on the link: an increase cannot be measured",
            text,
        );
    }
    Measured::new(share(inc + full_ok, open + full), "% of points", text)
}

/// What a tap configuration did over a grid, per profile: for triple-ACK the injections, for
/// zero-window the zero windows the sender accepted (copies it ignored do nothing).
fn grid_activity(g: &Grid, base: &Base, out: &mut ExpOutput) {
    for (pi, (pname, _)) in base.profiles.iter().enumerate() {
        for (ci, (_, cfg)) in g.cfgs.iter().enumerate() {
            let TapCfg::Tap { settings, .. } = cfg else { continue };
            let tech = settings.get("technique").and_then(|v| v.as_str()).unwrap_or("tap");
            let key = format!("{tech}/{pname}");
            let mut n = 0.0;
            for pb in &g.res[pi] {
                for (_, v) in pb {
                    n += if tech == "zero-window" { v[ci].zero_windows as f64 } else { v[ci].injections as f64 };
                }
            }
            out.act(&key, n);
        }
    }
}

fn setup_note(base: &Base, quick: bool) -> String {
    let names: Vec<&str> = base.profiles.iter().map(|p| p.0.as_str()).collect();
    format!(
        "Profiles: {} (ns2 = the file's [tcp]: ns-2 defaults; modern = [paper.profiles.modern.tcp]). {}",
        names.join(", "),
        if quick { "Quick mode: 20 s runs (5 s warm-up) on a reduced grid." } else { "" }
    )
}

/// One grid point: the baseline and one result per tap config.
type Cell = (Res, Vec<Res>);

/// Grid of baselines + shaped runs: for each profile, bandwidth, RTT and tap config.
struct Grid {
    bws: Vec<f64>,
    rtts: Vec<f64>,
    /// (label, tap) columns.
    cfgs: Vec<(String, TapCfg)>,
    /// [profile][bw][rtt] → (baseline, [cfg] results).
    res: Vec<Vec<Vec<Cell>>>,
}

fn run_grid(
    base: &Base,
    ctx: &mut Ctx,
    bws: Vec<f64>,
    rtts: Vec<f64>,
    cfgs: Vec<(String, TapCfg)>,
) -> Result<Grid, String> {
    let mut points = Vec::new();
    for pi in 0..base.profiles.len() {
        for &b in &bws {
            for &r in &rtts {
                points.push(Point::new(pi, b, r, TapCfg::Off));
                for (_, c) in &cfgs {
                    points.push(Point::new(pi, b, r, c.clone()));
                }
            }
        }
    }
    let mut all = run_all(base, &points, ctx)?.into_iter();
    let mut res = Vec::new();
    for _ in 0..base.profiles.len() {
        let mut pb = Vec::new();
        for _ in &bws {
            let mut pr = Vec::new();
            for _ in &rtts {
                let b = all.next().unwrap();
                let v: Vec<Res> = cfgs.iter().map(|_| all.next().unwrap()).collect();
                pr.push((b, v));
            }
            pb.push(pr);
        }
        res.push(pb);
    }
    Ok(Grid { bws, rtts, cfgs, res })
}

impl Grid {
    /// The grid as a table; `zw` adds the sender's zero-window counters.
    fn table(&self, base: &Base, name: &str, zw: bool) -> Table {
        let mut t = Table {
            name: name.into(),
            columns: [
                "profile",
                "bandwidth_mbps",
                "rtt_ms",
                "config",
                "unshaped_mbps",
                "throughput_mbps",
                "goodput_mbps",
                "reduction",
                "goodput_fraction",
                "retransmitted_packets",
                "fast_retransmits",
                "timeouts",
                "injections",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        if zw {
            t.columns.extend(["zero_windows".to_string(), "zero_window_time_fraction".to_string()]);
        }
        for (pi, p) in self.res.iter().enumerate() {
            for (bi, pb) in p.iter().enumerate() {
                for (ri, (b0, v)) in pb.iter().enumerate() {
                    for (ci, r) in v.iter().enumerate() {
                        t.rows.push(vec![
                            json!(base.profiles[pi].0),
                            json!(self.bws[bi]),
                            json!(self.rtts[ri]),
                            json!(self.cfgs[ci].0),
                            json!(b0.thr / 1e6),
                            json!(r.thr / 1e6),
                            json!(r.good / 1e6),
                            json!(reduction(r, b0)),
                            json!(gfrac(r)),
                            json!(r.retx),
                            json!(r.fast_retransmits),
                            json!(r.timeouts),
                            json!(r.injections),
                        ]);
                        if zw {
                            t.rows.last_mut().unwrap().extend([json!(r.zero_windows), json!(r.zero_window_frac)]);
                        }
                    }
                }
            }
        }
        t
    }
    fn get(&self, pi: usize, bw: f64, rtt: f64, ci: usize) -> Option<(&Res, &Res)> {
        let bi = self.bws.iter().position(|&b| b == bw)?;
        let ri = self.rtts.iter().position(|&r| r == rtt)?;
        let (b0, v) = &self.res[pi][bi][ri];
        Some((b0, &v[ci]))
    }
    /// Reduction vs RTT, one series per bandwidth, for config `ci` of profile `pi`.
    fn plot_vs_rtt(&self, base: &Base, pi: usize, ci: usize, title: &str) -> ackshape_sim::plot::Plot {
        let series: Vec<Series> = self
            .bws
            .iter()
            .enumerate()
            .map(|(bi, b)| Series {
                name: format!("{b} Mbit/s"),
                points: self
                    .rtts
                    .iter()
                    .enumerate()
                    .map(|(ri, r)| {
                        let (b0, v) = &self.res[pi][bi][ri];
                        (*r, reduction(&v[ci], b0) * 100.0)
                    })
                    .collect(),
            })
            .collect();
        line_chart(&format!("{title} ({})", base.profiles[pi].0), "RTT (ms)", "bandwidth reduction (%)", 1.0, &series)
    }
}

// ------------------------------------------------------------------ P4-F7

fn run_f7(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let base = load(exp)?;
    let everies = base.list("every", ctx.quick)?;
    let cfgs: Vec<(String, TapCfg)> = everies.iter().map(|&f| (format!("f={f}"), tap("triple-ack", f))).collect();
    let g = run_grid(&base, ctx, base.list("bandwidth_mbps", ctx.quick)?, base.list("rtt_ms", ctx.quick)?, cfgs)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    out.tables.push(g.table(&base, "grid", false));
    let sp = specs(exp)?;
    grid_activity(&g, &base, &mut out);
    let mut summary = Table {
        name: "max_reduction_vs_f".into(),
        columns: [
            "profile",
            "every",
            "max_reduction",
            "at_bandwidth_mbps",
            "at_rtt_ms",
            "goodput_fraction_there",
            "mean_reduction",
            "min_goodput_fraction",
            "mean_goodput_fraction",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: Vec::new(),
    };
    let mut plot = Vec::new();
    let mut gplot = Vec::new();
    for (pi, (pname, _)) in base.profiles.iter().enumerate() {
        let per_f = per_f_summary(&g, pi, &everies, pname, &mut summary);
        plot.push(pct_series(format!("{pname}: max"), &per_f, |x| x.1 .0));
        plot.push(pct_series(format!("{pname}: mean"), &per_f, |x| x.2));
        gplot.push(pct_series(format!("{pname}: mean goodput fraction"), &per_f, |x| x.3));
        let peak = per_f.iter().max_by(|a, b| a.1 .0.total_cmp(&b.1 .0)).unwrap();
        let last = per_f.last().unwrap();
        out.measure(
            &format!("peak-f-{pname}"),
            Measured::new(
                peak.0,
                "f",
                format!("largest at f = {} ({} at {} Mbit/s, {} ms)", peak.0, pct(peak.1 .0), peak.1 .1, peak.1 .2),
            ),
        );
        out.measure(
            &format!("decline-{pname}"),
            Measured::new(
                (peak.1 .0 - last.1 .0) * 100.0,
                "points",
                format!("{} at f = {}, {} at f = {}", pct(peak.1 .0), peak.0, pct(last.1 .0), last.0),
            ),
        );
        out.measure(&format!("peak-value-{pname}"), Measured::new(peak.1 .0 * 100.0, "%", pct(peak.1 .0)));
        let f1 = format!("f1-increase-{pname}");
        if let Some((ci1, _)) = everies.iter().enumerate().find(|x| *x.1 == 1.0) {
            let pts: Vec<(f64, &Res, &Res)> = g
                .bws
                .iter()
                .flat_map(|&b| g.rtts.iter().map(move |&r| (b, r)))
                .map(|(b, r)| {
                    let (b0, x) = g.get(pi, b, r, ci1).unwrap();
                    (b, b0, x)
                })
                .collect();
            let (headroom, full_tol) = (prm(&sp, exp, &f1, "headroom")?, prm(&sp, exp, &f1, "full_tol")?);
            out.measure(&f1, f1_increase(&base, pi, &pts, headroom, full_tol));
        } else {
            out.measure(&f1, Measured::gated("% of points", "f = 1 is not in the sweep", "f = 1 not run"));
        }
        // Goodput > 90% only for f > 10, where the max reduction still reaches ≈ 83%.
        let gt = format!("goodput-threshold-{pname}");
        let hi_g = prm(&sp, exp, &gt, "goodput")? / 100.0;
        let lo: Vec<_> = per_f.iter().filter(|x| x.0 <= 10.0).collect();
        let hi: Vec<_> = per_f.iter().filter(|x| x.0 > 10.0).collect();
        let agree = hi.iter().filter(|x| x.1 .3 > hi_g).count() + lo.iter().filter(|x| x.1 .3 <= hi_g).count();
        out.measure(
            &gt,
            Measured::new(
                if hi.is_empty() || lo.is_empty() { f64::NAN } else { share(agree, per_f.len()) },
                "% of f values",
                format!(
                    "goodput fraction at the point of maximum reduction: {}",
                    per_f.iter().map(|x| format!("f={}: {}", x.0, pct(x.1 .3))).collect::<Vec<_>>().join(", ")
                ),
            ),
        );
        let best_hi = hi.iter().map(|x| x.1 .0).fold(f64::NAN, f64::max);
        out.measure(
            &format!("high-f-reduction-{pname}"),
            Measured::new(
                best_hi * 100.0,
                "%",
                format!(
                    "largest reduction at f > 10: {}",
                    if hi.is_empty() { "no f > 10 run".into() } else { pct(best_hi) }
                ),
            ),
        );
    }
    // Sensitivity: the ns2 profile with the other way of counting f (which ACKs the tap counts).
    if let Some(c) = base.paper.get("sensitivity_count").and_then(|v| v.as_str()) {
        let mut b2 = base.clone();
        b2.profiles.truncate(1);
        b2.paper.insert("count".into(), c.into());
        let cfgs: Vec<(String, TapCfg)> = everies.iter().map(|&f| (format!("f={f}"), tap("triple-ack", f))).collect();
        let g2 = run_grid(&b2, ctx, g.bws.clone(), g.rtts.clone(), cfgs)?;
        let label = format!("{} (count = {c})", base.profiles[0].0);
        let per_f = per_f_summary(&g2, 0, &everies, &label, &mut summary);
        plot.push(pct_series(format!("{label}: max"), &per_f, |x| x.1 .0));
        gplot.push(pct_series(format!("{label}: mean goodput fraction"), &per_f, |x| x.3));
        let mut t = g2.table(&b2, &format!("grid_count_{c}"), false);
        for row in &mut t.rows {
            row[0] = json!(label);
        }
        out.tables.push(t);
        out.notes.push(format!(
            "Sensitivity (table grid_count_{c}, rows `{label}` of max_reduction_vs_f): the ns2 profile with the tap \
             counting f as `{c}` instead of `{}`; no claims are checked on it.",
            base.paper.get("count").and_then(|v| v.as_str()).unwrap_or("new-acks")
        ));
    }
    out.tables.push(summary);
    // The paper's values, as the file's claims of the ns-2-like profile state them.
    let paper_pct = |id: &str| sp.iter().find(|c| c.id == id).map(|c| c.paper_value / 100.0);
    let (peak_v, hi_r) =
        (paper_pct("peak-value-ns2").unwrap_or(f64::NAN), paper_pct("high-f-reduction-ns2").unwrap_or(f64::NAN));
    let hi_g = prm(&sp, exp, "goodput-threshold-ns2", "goodput")? / 100.0;
    out.plots.push((
        "reduction_vs_f.svg".into(),
        line_chart(
            "P4-F7: bandwidth reduction vs f (max and mean over the grid)",
            "f (ACKs per injection)",
            "reduction (%)",
            1.0,
            &plot,
        )
        .x_ticks(&everies)
        // The paper's values: the peak (about 85% at f = 6) and the reduction still reached for
        // f > 10 (83%), at the swept f above 10.
        .paper("paper: peak, f = 6", vec![(6.0, peak_v * 100.0)])
        .paper(
            "paper: reached for f > 10",
            everies.iter().filter(|&&f| f > 10.0).map(|&f| (f, hi_r * 100.0)).collect(),
        ),
    ));
    out.plots.push((
        "goodput_vs_f.svg".into(),
        line_chart(
            "P4-F7: goodput fraction vs f (mean over the grid)",
            "f (ACKs per injection)",
            "goodput / throughput (%)",
            1.0,
            &gplot,
        )
        .x_ticks(&everies)
        .hline(hi_g * 100.0, "paper: above this only for f > 10"),
    ));
    out.notes.push(setup_note(&base, ctx.quick));
    out.notes.extend(base.notes());
    Ok(out)
}

/// For each f: the maximum reduction over the grid (value, bandwidth, RTT, goodput fraction
/// there), the mean reduction and the mean goodput fraction; one `summary` row per f.
#[allow(clippy::type_complexity)]
/// One row of [`per_f_summary`]: f, (max reduction, its bandwidth, RTT, goodput), mean
/// reduction, mean goodput fraction.
type PerF = (f64, (f64, f64, f64, f64), f64, f64);

/// A plot series over f of one per-f figure (a fraction), in percent.
fn pct_series(name: String, per_f: &[PerF], pick: impl Fn(&PerF) -> f64) -> Series {
    Series { name, points: per_f.iter().map(|x| (x.0, pick(x) * 100.0)).collect() }
}

fn per_f_summary(g: &Grid, pi: usize, everies: &[f64], label: &str, summary: &mut Table) -> Vec<PerF> {
    let mut per_f = Vec::new();
    for (ci, &f) in everies.iter().enumerate() {
        let mut best = (f64::NEG_INFINITY, 0.0, 0.0, 0.0);
        let (mut sum, mut n, mut gmin, mut gsum) = (0.0, 0.0, f64::INFINITY, 0.0);
        for &b in &g.bws {
            for &r in &g.rtts {
                let (b0, x) = g.get(pi, b, r, ci).unwrap();
                let red = reduction(x, b0);
                if red > best.0 {
                    best = (red, b, r, gfrac(x));
                }
                sum += red;
                n += 1.0;
                gmin = gmin.min(gfrac(x));
                gsum += gfrac(x);
            }
        }
        summary.rows.push(vec![
            json!(label),
            json!(f),
            json!(best.0),
            json!(best.1),
            json!(best.2),
            json!(best.3),
            json!(sum / n),
            json!(gmin),
            json!(gsum / n),
        ]);
        per_f.push((f, best, sum / n, gsum / n));
    }
    per_f
}

// ------------------------------------------------------------------ P4-S4.1a

fn run_s41a(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let base = load(exp)?;
    let everies = base.list("every", ctx.quick)?;
    let cfgs: Vec<(String, TapCfg)> = everies.iter().map(|&f| (format!("f={f}"), tap("triple-ack", f))).collect();
    let g = run_grid(&base, ctx, base.list("bandwidth_mbps", ctx.quick)?, base.list("rtt_ms", ctx.quick)?, cfgs)?;
    let sp = specs(exp)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    out.tables.push(g.table(&base, "grid", false));
    grid_activity(&g, &base, &mut out);
    let ci = |f: f64| everies.iter().position(|&x| x == f);
    for (pi, (pname, _)) in base.profiles.iter().enumerate() {
        let pts: Vec<(f64, f64)> = g.bws.iter().flat_map(|&b| g.rtts.iter().map(move |&r| (b, r))).collect();
        if let Some(c1) = ci(1.0) {
            let reds: Vec<f64> =
                pts.iter().map(|(b, r)| g.get(pi, *b, *r, c1).map(|(b0, x)| reduction(x, b0)).unwrap()).collect();
            let triples: Vec<(f64, &Res, &Res)> = pts
                .iter()
                .map(|&(b, r)| {
                    let (b0, x) = g.get(pi, b, r, c1).unwrap();
                    (b, b0, x)
                })
                .collect();
            let id = format!("f1-more-bandwidth-{pname}");
            let (headroom, full_tol) = (prm(&sp, exp, &id, "headroom")?, prm(&sp, exp, &id, "full_tol")?);
            let mut m = f1_increase(&base, pi, &triples, headroom, full_tol);
            m.detail += &format!(
                " (reduction {} to {})",
                pct(reds.iter().cloned().fold(f64::INFINITY, f64::min)),
                pct(reds.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
            );
            out.measure(&id, m);
            let ratios: Vec<f64> = pts
                .iter()
                .map(|(b, r)| g.get(pi, *b, *r, c1).map(|(b0, x)| x.good / b0.good.max(1.0)).unwrap())
                .collect();
            let worst = ratios.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            out.measure(
                &format!("f1-goodput-collapse-{pname}"),
                Measured::new(
                    worst * 100.0,
                    "% of unshaped",
                    format!(
                        "goodput {} to {} of unshaped",
                        pct(ratios.iter().cloned().fold(f64::INFINITY, f64::min)),
                        pct(worst)
                    ),
                ),
            );
        }
        if let Some(c2) = ci(2.0) {
            let red = pts.iter().filter(|(b, r)| g.get(pi, *b, *r, c2).is_some_and(|(b0, x)| x.thr < b0.thr)).count();
            let gf: Vec<f64> = pts.iter().map(|(b, r)| gfrac(g.get(pi, *b, *r, c2).unwrap().1)).collect();
            let gmax = gf.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let gmin = gf.iter().cloned().fold(f64::INFINITY, f64::min);
            out.measure(
                &format!("f2-reduces-{pname}"),
                Measured::new(
                    share(red, pts.len()),
                    "% of points",
                    format!("reduced at {red} of {} points", pts.len()),
                ),
            );
            out.measure(
                &format!("f2-goodput-severe-{pname}"),
                Measured::new(gmax * 100.0, "% of sent", format!("goodput fraction {} to {}", pct(gmin), pct(gmax))),
            );
        }
        // The cap: at the largest RTT all bandwidths agree; the RTT where it is reached does not
        // grow with bandwidth.
        for (c, f) in everies.iter().enumerate().filter(|x| *x.1 >= 2.0) {
            let last = *g.rtts.last().unwrap();
            let at_last: Vec<f64> =
                g.bws.iter().map(|&b| g.get(pi, b, last, c).map(|(b0, x)| reduction(x, b0)).unwrap()).collect();
            let lo = at_last.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = at_last.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let near = prm(&sp, exp, &format!("cap-reach-f{f}-{pname}"), "near")? / 100.0;
            let reach: Vec<f64> = g
                .bws
                .iter()
                .enumerate()
                .map(|(bi, &b)| {
                    g.rtts
                        .iter()
                        .copied()
                        .find(|&r| g.get(pi, b, r, c).is_some_and(|(b0, x)| reduction(x, b0) >= at_last[bi] - near))
                        .unwrap_or(last)
                })
                .collect();
            let rising = reach.windows(2).filter(|w| w[1] > w[0]).count();
            let list = |v: &[f64]| v.iter().map(|x| crate::claims::num(*x)).collect::<Vec<_>>().join(", ");
            out.measure(
                &format!("cap-f{f}-{pname}"),
                Measured::new(
                    (hi - lo) * 100.0,
                    "points",
                    format!("at {last} ms: {} to {} over {} Mbit/s", pct(lo), pct(hi), list(&g.bws)),
                ),
            );
            out.measure(
                &format!("cap-reach-f{f}-{pname}"),
                Measured::new(
                    rising as f64,
                    "steps",
                    format!("cap reached at RTT {} ms for {} Mbit/s", list(&reach), list(&g.bws)),
                ),
            );
        }
        if let Some(c6) = ci(6.0) {
            out.plots.push((
                format!("reduction_f6_{pname}.svg"),
                g.plot_vs_rtt(&base, pi, c6, "P4-S4.1a: reduction at f = 6"),
            ));
        }
        if let Some(c1) = ci(1.0) {
            out.plots.push((
                format!("reduction_f1_{pname}.svg"),
                g.plot_vs_rtt(&base, pi, c1, "P4-S4.1a: reduction at f = 1"),
            ));
        }
    }
    out.notes.push(setup_note(&base, ctx.quick));
    out.notes.extend(base.notes());
    Ok(out)
}

// ------------------------------------------------------------------ P4-F6

fn run_f6(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let base = load(exp)?;
    let cfgs = vec![
        ("f=6".to_string(), tap("triple-ack", 6.0)),
        ("f=4".into(), tap("triple-ack", 4.0)),
        ("f=20".into(), tap("triple-ack", 20.0)),
    ];
    let g = run_grid(&base, ctx, base.list("bandwidth_mbps", ctx.quick)?, base.list("rtt_ms", ctx.quick)?, cfgs)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    out.tables.push(g.table(&base, "grid", false));
    let sp = specs(exp)?;
    grid_activity(&g, &base, &mut out);
    for (pi, (pname, _)) in base.profiles.iter().enumerate() {
        let red = |b: f64, r: f64, c: usize| g.get(pi, b, r, c).map(|(b0, x)| (reduction(x, b0), gfrac(x)));
        // Trend with RTT: the largest fall of the reduction from one RTT to the next larger.
        let mut worst = (0.0, 0.0, 0.0);
        for &b in &g.bws {
            for w in g.rtts.windows(2) {
                let d = red(b, w[0], 0).unwrap().0 - red(b, w[1], 0).unwrap().0;
                if d > worst.0 {
                    worst = (d, b, w[1]);
                }
            }
        }
        out.measure(
            &format!("trend-{pname}"),
            Measured::new(
                worst.0 * 100.0,
                "points",
                if worst.0 > 0.0 {
                    format!(
                        "largest drop to a larger RTT: {} points (at {} Mbit/s, {} ms)",
                        fmt1(worst.0 * 100.0),
                        worst.1,
                        worst.2
                    )
                } else {
                    "never falls with RTT".into()
                },
            ),
        );
        let mut best = (f64::NEG_INFINITY, 0.0, 0.0, 0.0);
        for &b in &g.bws {
            for &r in &g.rtts {
                let (x, gf) = red(b, r, 0).unwrap();
                if x > best.0 {
                    best = (x, b, r, gf);
                }
            }
        }
        out.measure(
            &format!("cap-{pname}"),
            Measured::new(best.0 * 100.0, "%", format!("{} (at {} Mbit/s, {} ms)", pct(best.0), best.1, best.2)),
        );
        out.measure(
            &format!("goodput-at-cap-{pname}"),
            Measured::new(best.3 * 100.0, "% of sent", format!("{} of the data sent", pct(best.3))),
        );
        let (p1, p1_20) = (format!("1mbps-50ms-{pname}"), format!("1mbps-50ms-f20-{pname}"));
        match (red(1.0, 50.0, 0), red(1.0, 50.0, 2)) {
            (Some((a, _)), Some((b20, _))) => {
                out.measure(&p1, Measured::new(a * 100.0, "%", pct(a)));
                let ratio = if a > 0.0 { b20 / a } else { f64::NAN };
                out.measure(
                    &p1_20,
                    Measured::new(ratio, "ratio", format!("ratio {:.2} ({} vs {})", ratio, pct(b20), pct(a))),
                );
            }
            _ => {
                let why = "1 Mbit/s, 50 ms is not in the grid";
                out.measure(&p1, Measured::gated("%", why, "not run"));
                out.measure(&p1_20, Measured::gated("ratio", why, "not run"));
            }
        }
        let p5 = format!("5mbps-30ms-{pname}");
        match red(5.0, 30.0, 0) {
            Some((a, _)) => out.measure(&p5, Measured::new(a * 100.0, "%", pct(a))),
            None => out.measure(&p5, Measured::gated("%", "5 Mbit/s, 30 ms is not in the grid", "not run")),
        }
        // Critical range: low single-digit Mbit/s, RTT 20–30 ms.
        let crit_id = format!("critical-{pname}");
        let crit = prm(&sp, exp, &crit_id, "threshold")? / 100.0;
        let crit_pts: Vec<(f64, f64)> = g
            .bws
            .iter()
            .filter(|&&b| b <= 5.0)
            .flat_map(|&b| g.rtts.iter().filter(|&&r| (20.0..=30.0).contains(&r)).map(move |&r| (b, r)))
            .collect();
        let vals: Vec<String> =
            crit_pts.iter().map(|&(b, r)| format!("{b}/{r}: {}", pct(red(b, r, 0).unwrap().0))).collect();
        let lowest = crit_pts.iter().map(|&(b, r)| red(b, r, 0).unwrap().0).fold(f64::NAN, f64::min);
        out.measure(
            &crit_id,
            Measured::new(
                lowest * 100.0,
                "%",
                if vals.is_empty() { "no grid point in the range".into() } else { vals.join(", ") },
            ),
        );
        // f = 4 reaches the threshold at an RTT no larger than f = 6 does.
        let first = |b: f64, c: usize| g.rtts.iter().copied().find(|&r| red(b, r, c).unwrap().0 > crit);
        let lows: Vec<f64> = g.bws.iter().copied().filter(|&b| b <= 5.0).collect();
        let rtt_text = |x: Option<f64>| x.map(|r| format!("{r} ms")).unwrap_or_else(|| "none in the grid".into());
        let cmp: Vec<String> = lows
            .iter()
            .map(|&b| format!("{b} Mbit/s: f=4 {}, f=6 {}", rtt_text(first(b, 1)), rtt_text(first(b, 0))))
            .collect();
        let ok4 = lows
            .iter()
            .filter(|&&b| match (first(b, 1), first(b, 0)) {
                (Some(a), Some(c)) => a <= c,
                (Some(_), None) => true,
                (None, _) => false,
            })
            .count();
        out.measure(
            &format!("critical-f4-{pname}"),
            Measured::new(
                share(ok4, lows.len()),
                "% of bandwidths",
                format!("first RTT above {}: {}", pct(crit), cmp.join("; ")),
            ),
        );
        out.plots.push((format!("reduction_f6_{pname}.svg"), g.plot_vs_rtt(&base, pi, 0, "P4-F6: reduction at f = 6")));
    }
    out.notes.push(setup_note(&base, ctx.quick));
    out.notes.extend(base.notes());
    Ok(out)
}

fn fmt3(x: f64) -> String {
    format!("{x:.3}")
}

fn fmt1(x: f64) -> String {
    format!("{x:.1}")
}

// ------------------------------------------------------------------ P4-F8

fn run_f8(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let base = load(exp)?;
    let cfgs =
        vec![("zero-window".to_string(), tap("zero-window", 1.0)), ("triple-ack f=6".into(), tap("triple-ack", 6.0))];
    let g = run_grid(&base, ctx, base.list("bandwidth_mbps", ctx.quick)?, base.list("rtt_ms", ctx.quick)?, cfgs)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    out.tables.push(g.table(&base, "grid", true));
    let sp = specs(exp)?;
    grid_activity(&g, &base, &mut out);
    for (pi, (pname, _)) in base.profiles.iter().enumerate() {
        let pts: Vec<(f64, f64)> = g.bws.iter().flat_map(|&b| g.rtts.iter().map(move |&r| (b, r))).collect();
        let reds: Vec<f64> =
            pts.iter().map(|&(b, r)| g.get(pi, b, r, 0).map(|(b0, x)| reduction(x, b0)).unwrap()).collect();
        let hi = reds.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lo = reds.iter().cloned().fold(f64::INFINITY, f64::min);
        out.measure(
            &format!("cap-{pname}"),
            Measured::new(hi * 100.0, "%", format!("largest {} (smallest {})", pct(hi), pct(lo))),
        );
        let extra = pts
            .iter()
            .filter(|&&(b, r)| {
                let (b0, x) = g.get(pi, b, r, 0).unwrap();
                x.retx > b0.retx
            })
            .count();
        let tot: u64 = pts.iter().map(|&(b, r)| g.get(pi, b, r, 0).unwrap().1.retx).sum();
        out.measure(
            &format!("no-retransmissions-{pname}"),
            Measured::new(
                extra as f64,
                "points",
                format!("{tot} retransmissions in all shaped runs; {extra} points with more than unshaped"),
            ),
        );
        // The two shape claims contrast small and large bandwidth-delay products: with no reduction
        // anywhere there is no contrast to assess.
        let weak = format!("weak-small-bdp-{pname}");
        let effect_min = prm(&sp, exp, &weak, "effect_min")? / 100.0;
        let flat = (hi < effect_min).then(|| {
            format!("zero-window reduces nothing anywhere in the grid (largest {}): no contrast to assess", pct(hi))
        });
        let gate = |m: Measured| match &flat {
            Some(why) => Measured { gate: Some(why.clone()), value: f64::NAN, ..m },
            None => m,
        };
        match g.get(pi, 5.0, 30.0, 0) {
            Some((b0, x)) => {
                let tri = g.get(pi, 5.0, 30.0, 1).map(|(b0, x)| reduction(x, b0)).unwrap_or(f64::NAN);
                out.measure(
                    &weak,
                    gate(Measured::new(
                        reduction(x, b0) * 100.0,
                        "%",
                        format!("{} (triple-ACK {})", pct(reduction(x, b0)), pct(tri)),
                    )),
                );
            }
            None => out.measure(&weak, Measured::gated("%", "5 Mbit/s, 30 ms is not in the grid", "not run")),
        }
        let co = format!("coincide-{pname}");
        if g.bws.contains(&13.0) && g.bws.contains(&15.0) {
            let d = g
                .rtts
                .iter()
                .map(|&r| {
                    let a = g.get(pi, 13.0, r, 0).map(|(b0, x)| reduction(x, b0)).unwrap();
                    let b = g.get(pi, 15.0, r, 0).map(|(b0, x)| reduction(x, b0)).unwrap();
                    (a - b).abs()
                })
                .fold(0.0, f64::max);
            out.measure(
                &co,
                gate(Measured::new(d * 100.0, "points", format!("largest difference {} points", fmt1(d * 100.0)))),
            );
        } else {
            out.measure(&co, Measured::gated("points", "13 and 15 Mbit/s are not both in the grid", "not run"));
        }
        out.plots
            .push((format!("reduction_zw_{pname}.svg"), g.plot_vs_rtt(&base, pi, 0, "P4-F8: zero-window reduction")));
    }
    out.notes.push(setup_note(&base, ctx.quick));
    // What the sender did with the zero windows, at the paper's quoted point.
    for (pi, (pname, over)) in base.profiles.iter().enumerate() {
        let Some((b0, x)) = g.get(pi, 5.0, 30.0, 0) else { continue };
        let rule = over.get("window_update").and_then(|v| v.as_str()).unwrap_or("rfc793");
        out.notes.push(format!(
            "[{pname}] 5 Mbit/s, 30 ms (window rule {rule}): {} zero-window copies injected; the sender accepted {} \
             zero windows and its window was closed {} of the run; throughput {} Mbit/s vs {} unshaped ({} \
             reduction), {} retransmissions.",
            x.injections,
            x.zero_windows,
            pct(x.zero_window_frac),
            fmt3(x.thr / 1e6),
            fmt3(b0.thr / 1e6),
            pct(reduction(x, b0)),
            x.retx
        ));
    }
    out.notes.push(
        "Why zero-window does nothing here: the duplicate follows the true ACK it copies, so it reaches the sender \
         after the sender has already sent what that ACK allowed (an ACK-clocked sender transmits only when an ACK \
         arrives). Under RFC 793's window rule the sender accepts the zero window and stays closed until the next \
         true ACK, which reopens the window and clocks out exactly what it would have anyway: the window is closed \
         most of the time, yet no transmission is lost. Under the BSD/Linux rule (`window_update = \"bsd\"`) a \
         segment with the same sequence and acknowledgement numbers may only grow the window, so the copies are \
         ignored altogether. The duplicate changes the window, so it is not a duplicate ACK either (P4-9) and \
         causes no retransmission. ns-2's FullTcp has no advertised-window field, so the authors must have added \
         one; how their sender reacted is not described (P4-1). See docs/reproduction.md, Paper 004."
            .into(),
    );
    out.notes.extend(base.notes());
    Ok(out)
}

// ------------------------------------------------------------------ P4-S4.2b

fn run_s42b(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let base = load(exp)?;
    let gaps = base.list("round_trip_gaps", ctx.quick)?;
    let (bw, rtt) = (base.f64("bandwidth_mbps")?, base.f64("rtt_ms")?);
    let techs = [("triple-ack f=6", "triple-ack", 6.0), ("zero-window", "zero-window", 1.0)];
    let sp = specs(exp)?;
    // The inter-ACK gap of each profile: b × (mss + 40 B) at the bottleneck.
    let mut gap_s = Vec::new();
    for (_, over) in &base.profiles {
        let tcp = base.table.get("tcp").and_then(|t| t.as_table()).cloned().unwrap_or_default();
        let get = |k: &str| over.get(k).or(tcp.get(k)).and_then(|v| v.as_integer());
        let mss = get("mss").unwrap_or(1448) as f64;
        let b = get("delack").unwrap_or(2) as f64;
        gap_s.push(b * (mss + 40.0) * 8.0 / (bw * 1e6));
    }
    let mut points = Vec::new();
    for (pi, gap) in gap_s.iter().enumerate() {
        points.push(Point::new(pi, bw, rtt, TapCfg::Off));
        for (_, t, f) in techs {
            for &k in &gaps {
                let TapCfg::Tap { settings, .. } = tap(t, f) else { unreachable!() };
                // One-way delay = half the round trip.
                points.push(Point::new(pi, bw, rtt, TapCfg::Tap { delay_us: k * gap * 1e6 / 2.0, settings }));
            }
        }
    }
    let res = run_all(&base, &points, ctx)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    let mut table = Table {
        name: "delay_sweep".into(),
        columns: [
            "profile",
            "technique",
            "round_trip_gaps",
            "round_trip_ms",
            "reduction",
            "goodput_fraction",
            "fast_retransmits",
            "injections",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: Vec::new(),
    };
    let mut series = Vec::new();
    let per = 1 + techs.len() * gaps.len();
    for (pi, (pname, _)) in base.profiles.iter().enumerate() {
        let b0 = &res[pi * per];
        for (ti, (label, _, _)) in techs.iter().enumerate() {
            let rs: Vec<&Res> = (0..gaps.len()).map(|k| &res[pi * per + 1 + ti * gaps.len() + k]).collect();
            let reds: Vec<f64> = rs.iter().map(|r| reduction(r, b0)).collect();
            for (k, r) in rs.iter().enumerate() {
                table.rows.push(vec![
                    json!(pname),
                    json!(label),
                    json!(gaps[k]),
                    json!(gaps[k] * gap_s[pi] * 1e3),
                    json!(reds[k]),
                    json!(gfrac(r)),
                    json!(r.fast_retransmits),
                    json!(r.injections),
                ]);
            }
            series.push(Series {
                name: format!("{pname}: {label}"),
                points: gaps.iter().zip(&reds).map(|(g, r)| (*g, r * 100.0)).collect(),
            });
            let r0 = reds[0];
            let tech = label.split(' ').next().unwrap_or(label);
            let (below_id, above_id) = (format!("below-gap-{tech}-{pname}"), format!("above-gap-{tech}-{pname}"));
            let wb = prm(&sp, exp, &below_id, "up_to_gaps")?;
            let oa = prm(&sp, exp, &above_id, "from_gaps")?;
            let effect_min = prm(&sp, exp, &above_id, "effect_min")? / 100.0;
            let acted: f64 = rs
                .iter()
                .map(|r| if tech == "zero-window" { r.zero_windows as f64 } else { r.injections as f64 })
                .sum();
            out.act(&format!("{tech}/{pname}"), acted);
            let works: Vec<f64> = gaps.iter().zip(&reds).filter(|x| *x.0 <= wb).map(|x| *x.1).collect();
            let off: Vec<f64> = gaps.iter().zip(&reds).filter(|x| *x.0 >= oa).map(|x| *x.1).collect();
            let dev = works.iter().map(|r| (r - r0).abs()).fold(f64::NAN, f64::max);
            let off_max = off.iter().cloned().fold(f64::NAN, f64::max);
            let switch = gaps.iter().zip(&reds).find(|x| *x.1 < r0 / 2.0).map(|x| *x.0);
            let detail = format!(
                "undelayed {}; up to {wb} g: {}; from {oa} g: {}; {} (g = {:.2} ms)",
                pct(r0),
                works.iter().map(|r| pct(*r)).collect::<Vec<_>>().join(", "),
                off.iter().map(|r| pct(*r)).collect::<Vec<_>>().join(", "),
                match switch {
                    Some(k) => format!("below half of undelayed from {k} g"),
                    None => "never below half of undelayed".into(),
                },
                gap_s[pi] * 1e3
            );
            // A switch needs an effect to switch off: with none even undelayed there is nothing to assess.
            let gate = (r0 <= effect_min)
                .then(|| format!("{label} reduces nothing even undelayed ({}): no switch to assess", pct(r0)));
            for (id, v) in [(below_id, dev * 100.0), (above_id, off_max * 100.0)] {
                let unit = if id.starts_with("below") { "points" } else { "%" };
                let m = Measured::new(v, unit, detail.clone());
                out.measure(
                    &id,
                    Measured { gate: gate.clone(), value: if gate.is_some() { f64::NAN } else { v }, ..m },
                );
            }
        }
    }
    out.tables.push(table);
    out.plots.push((
        "reduction_vs_delay.svg".into(),
        line_chart(
            "P4-S4.2b: reduction vs shaper round trip",
            "round trip / inter-ACK gap g",
            "reduction (%)",
            1.0,
            &series,
        ),
    ));
    out.notes.push(setup_note(&base, ctx.quick));
    out.notes.push(format!(
        "{bw} Mbit/s, {rtt} ms RTT; inter-ACK gap g per profile: {}",
        base.profiles
            .iter()
            .zip(&gap_s)
            .map(|(p, g)| format!("{} {:.3} ms", p.0, g * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.notes.extend(base.notes());
    Ok(out)
}

// ------------------------------------------------------------------ P4-A3

fn run_a3(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let base = load(exp)?;
    let fracs: Vec<f64> = base.list("fractions", false).or_else(|_| {
        base.paper
            .get("fractions")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_float()).collect())
            .ok_or("no fractions".to_string())
    })?;
    let (bin_s, bw, rtt) = (base.f64("bin_s")?, base.f64("bandwidth_mbps")?, base.f64("rtt_ms")?);
    let ccs: Vec<String> = base.strings("modern_cc");
    let times = if ctx.quick { Some((40.0, 10.0)) } else { None };
    // Cases: (profile, cc override).
    let mut cases: Vec<(usize, Option<String>)> = Vec::new();
    for pi in 0..base.profiles.len() {
        if base.profiles[pi].0 == "modern" && !ccs.is_empty() {
            cases.extend(ccs.iter().map(|c| (pi, Some(c.clone()))));
        } else {
            cases.push((pi, None));
        }
    }
    let mk = |pi: usize, cc: &Option<String>, t: TapCfg| {
        let mut p = Point::new(pi, bw, rtt, t);
        p.times = times;
        if let Some(c) = cc {
            p.tcp.insert("cc".into(), c.clone().into());
        }
        p
    };
    let baselines = run_all(&base, &cases.iter().map(|(pi, cc)| mk(*pi, cc, TapCfg::Off)).collect::<Vec<_>>(), ctx)?;
    let mut points = Vec::new();
    for (ci, (pi, cc)) in cases.iter().enumerate() {
        for &f in &fracs {
            let mut s = toml::Table::new();
            s.insert("technique".into(), "triple-ack".into());
            s.insert("target".into(), format!("{}bit/s", (baselines[ci].thr * f).round() as u64).into());
            s.insert("history".into(), true.into());
            points.push(mk(*pi, cc, TapCfg::Tap { delay_us: 0.0, settings: s }));
        }
    }
    let res = run_all(&base, &points, ctx)?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    let mut table = Table {
        name: "controller".into(),
        columns: [
            "profile",
            "cc",
            "target_fraction",
            "unshaped_mbps",
            "target_mbps",
            "throughput_mbps",
            "error",
            "worst_bin_error",
            "goodput_mbps",
            "goodput_loss",
            "final_every",
            "injections",
            "fast_retransmits",
            "timeouts",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: Vec::new(),
    };
    let mut series = Vec::new();
    for (ci, (pi, cc)) in cases.iter().enumerate() {
        let pname = &base.profiles[*pi].0;
        let cc_name = cc.clone().unwrap_or_else(|| {
            base.table.get("tcp").and_then(|t| t.get("cc")).and_then(|v| v.as_str()).unwrap_or("sack").to_string()
        });
        let sc = scenario_for(&base, &points[ci * fracs.len()], ctx.quick, ctx.mechanism_off)?;
        let (dur_s, warm_s) = (sc.duration.0.as_secs_f64(), sc.warmup.map(|w| w.0.as_secs_f64()).unwrap_or(0.0));
        for (fi, &f) in fracs.iter().enumerate() {
            let r = &res[ci * fracs.len() + fi];
            let target = baselines[ci].thr * f;
            let err = r.thr / target - 1.0;
            // Bins of the controller's per-interval measurements inside the window.
            // The controller of the flow (the one with the most data).
            let fid = r.tap["top_flows"][0]["id"].clone();
            let hist: Vec<(f64, f64, f64)> = r.tap["history"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter(|s| s["flow"] == fid)
                        .filter_map(|s| Some((s["t_s"].as_f64()?, s["raw_bps"].as_f64()?, s["every"].as_f64()?)))
                        .collect()
                })
                .unwrap_or_default();
            let mut bins: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
            for &(t, raw, _) in &hist {
                if t > warm_s && t <= dur_s + 1e-9 {
                    let e = bins.entry(((t - warm_s - 1e-9) / bin_s) as u64).or_default();
                    e.0 += raw;
                    e.1 += 1.0;
                }
            }
            let worst = bins.values().map(|(s, n)| (s / n / target - 1.0).abs()).fold(0.0, f64::max);
            let every = hist.last().map(|x| x.2).unwrap_or(f64::NAN);
            table.rows.push(vec![
                json!(pname),
                json!(cc_name),
                json!(f),
                json!(baselines[ci].thr / 1e6),
                json!(target / 1e6),
                json!(r.thr / 1e6),
                json!(err),
                json!(worst),
                json!(r.good / 1e6),
                json!(1.0 - gfrac(r)),
                json!(every),
                json!(r.injections),
                json!(r.fast_retransmits),
                json!(r.timeouts),
            ]);
            let id = format!("hold-{pname}-{cc_name}-{}", (f * 100.0).round());
            out.act(&format!("controller/{pname}-{cc_name}"), r.injections as f64);
            let value = if bins.is_empty() { f64::NAN } else { err.abs().max(worst) * 100.0 };
            out.measure(
                &id,
                Measured::new(
                    value,
                    "%",
                    format!(
                        "{:.2} Mbit/s against a target of {:.2} ({:+.1}%); worst {bin_s} s bin {:.1}%; goodput loss {}",
                        r.thr / 1e6,
                        target / 1e6,
                        err * 100.0,
                        worst * 100.0,
                        pct(1.0 - gfrac(r))
                    ),
                ),
            );
            series.push(Series {
                name: format!("{pname} {cc_name} {}%", (f * 100.0).round()),
                points: hist.iter().map(|&(t, raw, _)| (t, raw / target * 100.0)).collect(),
            });
        }
    }
    out.tables.push(table);
    out.plots.push((
        "rate_over_target.svg".into(),
        line_chart("P4-A3: measured rate / target over time", "time (s)", "rate / target (%)", 1.0, &series),
    ));
    out.notes.push(setup_note(&base, ctx.quick));
    out.notes.push(format!("{bw} Mbit/s, {rtt} ms RTT; targets are fractions of each case's unshaped throughput."));
    out.notes.extend(base.notes());
    Ok(out)
}
