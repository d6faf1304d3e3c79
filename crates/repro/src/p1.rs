//! Paper 001 (Karandikar, Kalyanaraman, Bagal, Packer, "TCP Rate Control"): Tables 1–12 with
//! Figs. 2 and 3 — RED, ECN and TCP rate control for 100 sources at 56 kb/s … 45 Mb/s: long
//! transfers with heterogeneous RTTs, short transfers, misbehaving sources and a remote bottleneck.
//! One runner serves the four workloads; settings, the paper's rows and tolerances live in
//! `experiments/p1/*.toml`.
//!
//! Claims assert an ordering only where every row of the paper's own tables agrees (traps P1-14,
//! P1-15); row-dependent orderings are listed in a table, row by row.

use crate::claims;
use crate::edge::*;
use crate::{Ctx, ExpOutput, Experiment, Measured};
use ackshape_sim::metrics::Summary;
use ackshape_sim::plot::{line_chart, Series};
use serde_json::Value as J;

macro_rules! exp_file {
    ($p:literal) => {
        ($p, include_str!(concat!("../../../", $p)))
    };
}

/// Paper 001's experiments.
pub fn experiments() -> Vec<Experiment> {
    let e = |id, title, (file, text): (&'static str, &'static str)| Experiment { id, title, file, text, run: run_p1 };
    vec![
        e(
            "P1-T1-3",
            "Long transfers, heterogeneous RTTs (Tables 1–3, Fig. 2)",
            exp_file!("experiments/p1/t1-3-long.toml"),
        ),
        e("P1-T4-6", "Short transfers (Tables 4–6, Fig. 3)", exp_file!("experiments/p1/t4-6-short.toml")),
        e("P1-T7-9", "Misbehaving sources (Tables 7–9)", exp_file!("experiments/p1/t7-9-misbehaving.toml")),
        e("P1-T10-12", "Remote bottleneck (Tables 10–12)", exp_file!("experiments/p1/t10-12-remote.toml")),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    Long,
    Short,
    Misbehaving,
    Remote,
}

/// One row of ours: the paper's columns plus what we add.
#[derive(Clone, Copy, Default)]
struct Row {
    util: f64,
    avgq: f64,
    maxq: f64,
    drops: f64,
    /// Mean per-flow goodput, Mbit/s.
    goodput: f64,
    /// CoV of per-flow goodput (long) or of transfer times (short).
    cov: f64,
    transfers: f64,
    time_ms: f64,
    /// Misbehaving / normal mean goodput.
    mis_ratio: f64,
    /// Aggregate goodput, Mbit/s.
    aggregate: f64,
}

/// A column of runs: a scheme, or (remote bottleneck) a scheme run at the bottleneck without the
/// upstream router (`-local`).
struct Col {
    key: String,
    scheme: Scheme,
    label: String,
    local: bool,
}

/// The bottleneck's queue: the link's, plus the gateway class's data queue where a gateway at the
/// bottleneck holds the packets (TCR at the bottleneck shapes it to the link's rate).
fn queue(s: &Summary) -> (f64, f64) {
    let l = s.link("bottleneck").expect("dumbbell has a bottleneck");
    let (mut avg, mut max) = (l.queue_avg_pkts, l.queue_max_pkts as f64);
    for m in s.middleboxes.iter().filter(|m| m["node"] == "left") {
        for c in gateway_classes(m) {
            avg += c["data_queue_avg_pkts"].as_f64().unwrap_or(0.0);
            max += c["data_queue_max_pkts"].as_f64().unwrap_or(0.0);
        }
    }
    (avg, max)
}

fn row_of(s: &Summary, w: Workload) -> Row {
    let (avgq, maxq) = queue(s);
    let n = s.flows.len().max(1) as f64;
    let agg = s.flows.iter().map(|f| f.goodput_bps).sum::<f64>() / 1e6;
    let mut r = Row {
        util: s.link("bottleneck").map(|l| l.utilization).unwrap_or(0.0) * 100.0,
        avgq,
        maxq,
        drops: drops_anywhere(s) as f64,
        goodput: agg / n,
        cov: s.aggregate.cov,
        aggregate: agg,
        ..Row::default()
    };
    if let Some(st) = &s.short_transfers {
        r.transfers = st.count as f64;
        // No transfer completed within the run: every one took longer than the run (∞ for
        // orderings), and their spread is unknown (NaN; tables show "–").
        r.time_ms = if st.count > 0 { st.mean_s * 1e3 } else { f64::INFINITY };
        r.cov = if st.count > 0 { st.cov } else { f64::NAN };
    }
    if w == Workload::Misbehaving {
        let g = |p: &str| {
            mean(&s.flows.iter().filter(|f| f.name.starts_with(p)).map(|f| f.goodput_bps).collect::<Vec<_>>())
        };
        let (m, nrm) = (g("misbehaving"), g("normal"));
        r.mis_ratio = if nrm > 0.0 { m / nrm } else { f64::INFINITY };
    }
    r
}

fn average(rows: &[Row]) -> Row {
    let m = |f: fn(&Row) -> f64| mean(&rows.iter().map(f).collect::<Vec<_>>());
    Row {
        util: m(|r| r.util),
        avgq: m(|r| r.avgq),
        maxq: m(|r| r.maxq),
        drops: m(|r| r.drops),
        goodput: m(|r| r.goodput),
        cov: m(|r| r.cov),
        transfers: m(|r| r.transfers),
        time_ms: m(|r| r.time_ms),
        mis_ratio: m(|r| r.mis_ratio),
        aggregate: m(|r| r.aggregate),
    }
}

/// The paper's row for a column at a speed: [util, avgQ, maxQ, drops or transfers, goodput or
/// time, CoV].
fn paper_row(f: &ExpFile, col: &str, full: &[f64], speed: f64) -> Result<Option<[f64; 6]>, String> {
    let Some(t) = f.paper.get("table").and_then(|t| t.get(col)) else {
        return Ok(None);
    };
    let Some(i) = full.iter().position(|&s| (s - speed).abs() < 1e-9) else {
        return Ok(None);
    };
    let key = format!("table.{col}.rows");
    let rows = t.get("rows").and_then(|r| r.as_array()).ok_or_else(|| f.err(&key, "an array of rows", None))?;
    let row = rows
        .get(i)
        .and_then(|r| r.as_array())
        .ok_or_else(|| f.err(&key, "one row per paper.speeds_mbps entry", None))?;
    let v: Vec<f64> = row.iter().filter_map(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64))).collect();
    if v.len() != 6 {
        return Err(f.err(&key, "rows of 6 numbers", None));
    }
    Ok(Some([v[0], v[1], v[2], v[3], v[4], v[5]]))
}

/// Percent of `k` out of `n`; NaN (nothing to assess) when `n` is 0.
fn share(k: usize, n: usize) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        k as f64 / n as f64 * 100.0
    }
}

fn fmt_speed(s: f64) -> String {
    format!("{s} Mbit/s")
}

fn run_p1(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load_for(exp, ctx)?;
    let w = match f.str("workload")? {
        "long" => Workload::Long,
        "short" => Workload::Short,
        "misbehaving" => Workload::Misbehaving,
        "remote" => Workload::Remote,
        other => {
            return Err(f.err("workload", "\"long\", \"short\", \"misbehaving\" or \"remote\"", Some(&other.into())))
        }
    };
    let speeds = f.f64s("speeds_mbps")?;
    let full = f.full_f64s("speeds_mbps")?;
    let factor = f.f64("access_factor")?;
    // Router 1's rate (remote bottleneck), as a multiple of the bottleneck's: unstated (P1-11).
    let up_factor = f.f64_or("upstream_factor", factor)?;
    let fifo = f.usize("fifo_pkts")?;
    let seeds = f.usize_or("seeds", 1)?.max(1);
    let schemes = f.schemes()?;
    let mut cols: Vec<Col> = Vec::new();
    for (s, why) in &schemes {
        if why.is_none() {
            cols.push(Col { key: s.id.clone(), scheme: s.clone(), label: s.label.clone(), local: false });
        }
    }
    let mut local_missing = Vec::new();
    if w == Workload::Remote {
        for id in f.strs("local")? {
            let s = scheme(&id).ok_or_else(|| f.err("local", "scheme ids", Some(&id.clone().into())))?;
            match (s.needs)() {
                None => cols.push(Col {
                    key: format!("{id}-local"),
                    scheme: s.clone(),
                    label: format!("{} (local)", s.label.as_str()),
                    local: true,
                }),
                Some(why) => {
                    local_missing.push(format!("{} (local) was not run: this build lacks {why}.", s.label.as_str()))
                }
            }
        }
    }
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for (ci, c) in cols.iter().enumerate() {
        let s = &c.scheme;
        for &sp in &speeds {
            for k in 0..seeds {
                let mut v = f.variant();
                let bps = (sp * 1e6).round() as u64;
                let fast = rate_str((sp * 1e6 * factor).round() as u64);
                v.set("topology.bottleneck.rate", rate_str(bps));
                v.set("topology.access.rate", fast.clone());
                v.set("topology.receiver_access.rate", fast.clone());
                let base = c.scheme.id.split('/').next().unwrap_or("");
                let remote_tcr = w == Workload::Remote && !c.local && base != "red" && base != "ecn";
                if w == Workload::Remote {
                    if c.local {
                        v.remove("topology.upstream");
                    } else {
                        v.set("topology.upstream.rate", rate_str((sp * 1e6 * up_factor).round() as u64));
                    }
                }
                // TCR upstream shapes at router 1 with that link's rate (it does not know the
                // remote bottleneck); everything else shapes the bottleneck at its speed.
                let sh = if remote_tcr {
                    Shape {
                        link: "topology.upstream",
                        node: "edge",
                        wan: "upstream",
                        rate_bps: (sp * 1e6 * up_factor).round() as u64,
                        fifo_pkts: fifo,
                        file: &f,
                    }
                } else {
                    Shape {
                        link: "topology.bottleneck",
                        node: "left",
                        wan: "bottleneck",
                        rate_bps: bps,
                        fifo_pkts: fifo,
                        file: &f,
                    }
                };
                s.apply(&mut v, &sh)?;
                jobs.push(Job {
                    label: format!("{}, {sp} Mbit/s, seed {k}", c.key),
                    variant: v,
                    seed: ctx.seed + k as u64,
                    series: false,
                });
                keys.push((ci, sp));
            }
        }
    }
    let outs = run_jobs(ctx, f.file, &jobs)?;
    let mut out =
        ExpOutput { id: exp.id.into(), title: exp.title.into(), notes: f.assumptions(), ..Default::default() };
    out.notes.extend(missing_notes(&schemes));
    out.notes.extend(local_missing);
    out.notes.push(cost_note(&jobs, &outs));
    if seeds > 1 {
        out.notes.push(format!("Every cell is the mean of {seeds} seeds."));
    }
    let get = |key: &str, sp: f64| -> Option<Row> {
        let ci = cols.iter().position(|c| c.key == key)?;
        let rows: Vec<Row> = keys
            .iter()
            .zip(&outs)
            .filter(|(k, _)| k.0 == ci && k.1 == sp)
            .map(|(_, o)| row_of(&o.summary, w))
            .collect();
        (!rows.is_empty()).then(|| average(&rows))
    };
    let short = w == Workload::Short;
    // Tables: ours beside the paper's, per column.
    for c in &cols {
        let mut rows = Vec::new();
        for &sp in &speeds {
            let o = get(&c.key, sp).expect("ran");
            let p = paper_row(&f, &c.key, &full, sp)?;
            let pv = |i: usize| p.map(|p| J::from(p[i])).unwrap_or(J::Null);
            let mut row = vec![J::from(sp), r(o.util, 2), pv(0), r(o.avgq, 2), pv(1), r(o.maxq, 0), pv(2)];
            if short {
                row.extend([r(o.transfers, 0), pv(3), r(o.time_ms, 0), pv(4), r(o.cov, 5), pv(5)]);
            } else {
                row.extend([r(o.drops, 0), pv(3), r(o.goodput, 5), pv(4), r(o.cov, 5), pv(5)]);
            }
            if w == Workload::Misbehaving {
                row.push(r(o.mis_ratio, 3));
            }
            rows.push(row);
        }
        let mut columns =
            vec!["speed_mbps", "util_pct", "paper_util_pct", "avg_q_pkts", "paper_avg_q", "max_q_pkts", "paper_max_q"];
        if short {
            columns.extend(["transfers", "paper_transfers", "avg_time_ms", "paper_avg_time_ms", "cov", "paper_cov"]);
        } else {
            columns.extend(["drops", "paper_drops", "avg_goodput_mbps", "paper_avg_goodput_mbps", "cov", "paper_cov"]);
        }
        if w == Workload::Misbehaving {
            columns.push("misbehaving_over_normal");
        }
        let name = f
            .paper
            .get("table")
            .and_then(|t| t.get(&c.key))
            .and_then(|t| t.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or(&c.label);
        let fname: String = name
            .chars()
            .map(|ch| if ch.is_ascii_alphanumeric() { ch.to_ascii_lowercase() } else { '-' })
            .collect::<String>();
        let fname = fname.split('-').filter(|x| !x.is_empty()).collect::<Vec<_>>().join("-");
        out.tables.push(table(&fname, &columns, rows));
    }
    // Fig. 2 / Fig. 3: CoV against speed, ours and the paper's.
    let lx = |s: f64| s;
    let mut series = Vec::new();
    for c in &cols {
        series.push(Series {
            name: format!("{} (ours)", c.label),
            points: speeds.iter().map(|&s| (lx(s), get(&c.key, s).expect("ran").cov)).collect(),
        });
        let pts: Vec<(f64, f64)> = speeds
            .iter()
            .filter_map(|&s| paper_row(&f, &c.key, &full, s).ok().flatten().map(|p| (lx(s), p[5])))
            .collect();
        if !pts.is_empty() {
            series.push(Series { name: format!("{} (paper)", c.label), points: pts });
        }
    }
    let (fig, what) = if short { ("fig3-cov.svg", "transfer time") } else { ("fig2-cov.svg", "per-flow goodput") };
    out.plots.push((
        fig.into(),
        line_chart(
            &format!("CoV of {what}: ours and the paper's"),
            "bottleneck speed (Mbit/s, log scale)",
            "coefficient of variation",
            1.0,
            &series,
        )
        .log_x(10.0)
        .x_ticks(&speeds),
    ));
    // Claims: the code measures, the file's [[paper.claims]] judge.
    for (k, o) in keys.iter().zip(&outs) {
        if let Some(n) = mechanism_activity(&cols[k.0].scheme.id, &o.summary) {
            out.act(&cols[k.0].key, n);
        }
    }
    let sp = claims::specs(exp.text, exp.file, exp.id)?;
    let has = |k: &str| cols.iter().any(|c| c.key == k);
    let each = |k: &str, m: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        speeds.iter().map(|&s| (s, m(&get(k, s).expect("ran")))).collect()
    };
    let list = |v: &[(f64, f64)], d: usize| {
        v.iter()
            .map(|(s, x)| if x.is_finite() { format!("{s}: {x:.d$}") } else { format!("{s}: none completed") })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let missing = |what: &str| Measured::gated("", format!("{what} is not among this run's schemes"), "not run");
    // The file lists which claims this workload checks; the code measures each of them.
    for spec in &sp {
        let id = spec.id.as_str();
        let unit = spec.unit.as_str();
        let m = match id {
            // "a below b at every speed": the share of speeds where a's metric is below b's. A CoV of
            // transfer times is undefined where a scheme completed no transfer within the run (NaN):
            // such speeds are named, not counted either way.
            "ecn-cov-below-red"
            | "tcr-cov-below-red"
            | "tcr-cov-below-ecn"
            | "tcr-queue-below-ecn"
            | "remote-tcr-cov-below-local-red" => {
                let (a, b, metric): (&str, &str, fn(&Row) -> f64) = match id {
                    "ecn-cov-below-red" => ("ecn", "red", |r| r.cov),
                    "tcr-cov-below-red" => ("tcr", "red", |r| r.cov),
                    "tcr-cov-below-ecn" => ("tcr", "ecn", |r| r.cov),
                    "tcr-queue-below-ecn" => ("tcr", "ecn", |r| r.avgq),
                    _ => ("tcr", "red-local", |r| r.cov),
                };
                if !(has(a) && has(b)) {
                    missing(&format!("{a} or {b}"))
                } else {
                    let d = if id.contains("queue") { 1 } else { 3 };
                    let (x, y) = (each(a, metric), each(b, metric));
                    let ok: Vec<bool> = x
                        .iter()
                        .zip(&y)
                        .filter(|(p, q)| !(p.1.is_nan() || q.1.is_nan()))
                        .map(|(p, q)| p.1 < q.1)
                        .collect();
                    let undefined = x.len() - ok.len();
                    Measured::new(
                        share(ok.iter().filter(|&&o| o).count(), ok.len()),
                        unit,
                        format!(
                            "{}: {}; {}: {}{}",
                            a.to_uppercase(),
                            list(&x, d),
                            b.to_uppercase(),
                            list(&y, d),
                            if undefined > 0 { format!(" ({undefined} speeds not comparable)") } else { String::new() }
                        ),
                    )
                }
            }
            // "ECN trades drops for much longer queues than RED's": ECN's average queue over RED's, at
            // the speed where it is smallest.
            "red-queue-below-ecn" => {
                if !(has("red") && has("ecn")) {
                    missing("RED or ECN")
                } else {
                    let (x, y) = (each("red", |r| r.avgq), each("ecn", |r| r.avgq));
                    let ratio = x.iter().zip(&y).map(|(r, e)| e.1 / r.1.max(1e-9)).fold(f64::INFINITY, f64::min);
                    Measured::new(ratio, unit, format!("RED: {}; ECN: {}", list(&x, 1), list(&y, 1)))
                }
            }
            // Growth with speed: the exponent of a power law through the lowest and the highest speed.
            "red-drops-grow-with-speed" | "ecn-queue-grows" => {
                let (k, metric): (&str, fn(&Row) -> f64) =
                    if id == "ecn-queue-grows" { ("ecn", |r| r.avgq) } else { ("red", |r| r.drops) };
                if !has(k) {
                    missing(k)
                } else {
                    let v = each(k, metric);
                    let (lo, hi) = (v.first().unwrap(), v.last().unwrap());
                    let e = if lo.1 > 0.0 && hi.1 > 0.0 && hi.0 > lo.0 {
                        (hi.1 / lo.1).ln() / (hi.0 / lo.0).ln()
                    } else {
                        f64::NAN
                    };
                    Measured::new(
                        e,
                        unit,
                        format!(
                            "{} ({:.2}x over {}x the speed)",
                            list(&v, if id == "ecn-queue-grows" { 1 } else { 0 }),
                            hi.1 / lo.1,
                            crate::claims::num((hi.0 / lo.0 * 100.0).round() / 100.0)
                        ),
                    )
                }
            }
            "ecn-no-drops" | "tcr-no-drops" => {
                let k = &id[..3];
                if !has(k) {
                    missing(k)
                } else {
                    let d = each(k, |r| r.drops);
                    Measured::new(d.iter().map(|x| x.1).sum(), unit, list(&d, 0))
                }
            }
            "high-utilization" => {
                let ks: Vec<&str> = ["red", "ecn", "tcr"].into_iter().filter(|k| has(k)).collect();
                let all: Vec<(String, f64)> = ks
                    .iter()
                    .flat_map(|k| {
                        each(k, |r| r.util).into_iter().map(move |x| (format!("{k} at {}", fmt_speed(x.0)), x.1))
                    })
                    .collect();
                let low =
                    all.iter().cloned().fold((String::new(), f64::INFINITY), |a, b| if b.1 < a.1 { b } else { a });
                Measured::new(low.1, unit, format!("lowest {:.1}% ({})", low.1, low.0))
            }
            "red-queue-near-thresholds" => {
                if !has("red") {
                    missing("RED")
                } else {
                    let (lo, hi) =
                        (claims::param(&sp, exp.file, id, "low")?, claims::param(&sp, exp.file, id, "high")?);
                    let q = each("red", |r| r.avgq);
                    let inside = q.iter().filter(|x| x.1 >= lo && x.1 <= hi).count();
                    Measured::new(share(inside, q.len()), unit, list(&q, 1))
                }
            }
            "red-loses-goodput-at-top-speed" => {
                let top = claims::param(&sp, exp.file, id, "speed")?;
                match (get("red", top), get("ecn", top)) {
                    (Some(r), Some(e)) => Measured::new(
                        r.aggregate / e.aggregate * 100.0,
                        unit,
                        format!("{}: RED {:.2}, ECN {:.2} Mbit/s aggregate", fmt_speed(top), r.aggregate, e.aggregate),
                    ),
                    _ => Measured::gated(unit, format!("{} is not among this run's speeds", fmt_speed(top)), "not run"),
                }
            }
            "red-time-falls-with-speed" | "ecn-time-falls-with-speed" | "tcr-time-falls-with-speed" => {
                let k = &id[..3];
                if !has(k) {
                    missing(k)
                } else {
                    let t = each(k, |r| r.time_ms);
                    let falls = t.windows(2).filter(|p| p[1].1 < p[0].1).count();
                    Measured::new(share(falls, t.len().saturating_sub(1)), unit, list(&t, 0))
                }
            }
            "ecn-slower-at-low-speed" => {
                let below = claims::param(&sp, exp.file, id, "below_speed")?;
                let lows: Vec<f64> = speeds.iter().copied().filter(|&s| s < below).collect();
                if !(has("red") && has("ecn")) {
                    missing("RED or ECN")
                } else if lows.is_empty() {
                    Measured::gated(unit, format!("no speed below {} in this run", fmt_speed(below)), "not run")
                } else {
                    let v: Vec<(f64, f64, f64)> = lows
                        .iter()
                        .map(|&s| (s, get("ecn", s).expect("ran").time_ms, get("red", s).expect("ran").time_ms))
                        .collect();
                    let fin = |x: f64| if x.is_finite() { format!("{x:.0} ms") } else { "none completed".into() };
                    let ratios: Vec<f64> =
                        v.iter().filter(|x| x.1.is_finite() && x.2.is_finite()).map(|x| x.1 / x.2).collect();
                    Measured::new(
                        ratios.iter().cloned().fold(f64::NAN, f64::min),
                        unit,
                        v.iter()
                            .map(|(s, e, r)| format!("{s}: ECN {} vs RED {}", fin(*e), fin(*r)))
                            .collect::<Vec<_>>()
                            .join("; "),
                    )
                }
            }
            "tcr-contains-misbehaving" => {
                if !has("tcr") {
                    missing("TCR")
                } else {
                    let m = each("tcr", |r| r.mis_ratio);
                    let worst = m.iter().map(|x| (x.1 - 1.0).abs()).fold(0.0, f64::max);
                    let others: Vec<String> = ["red", "ecn"]
                        .into_iter()
                        .filter(|k| has(k))
                        .map(|k| format!("{}: {}", k.to_uppercase(), list(&each(k, |r| r.mis_ratio), 2)))
                        .collect();
                    Measured::new(
                        worst * 100.0,
                        unit,
                        format!("misbehaving/normal goodput, TCR: {} ({})", list(&m, 2), others.join("; ")),
                    )
                }
            }
            "remote-tcr-less-fidelity-at-high-speed" => {
                let from = claims::param(&sp, exp.file, id, "from_speed")?;
                let hi: Vec<f64> = speeds.iter().copied().filter(|&s| s >= from).collect();
                if !(has("tcr") && has("tcr-local")) {
                    missing("remote or local TCR")
                } else if hi.is_empty() {
                    Measured::gated(unit, format!("no speed of {} or more in this run", fmt_speed(from)), "not run")
                } else {
                    let v: Vec<(f64, f64, f64)> = hi
                        .iter()
                        .map(|&s| (s, get("tcr", s).expect("ran").cov, get("tcr-local", s).expect("ran").cov))
                        .collect();
                    Measured::new(
                        v.iter().map(|x| x.1 / x.2.max(1e-9)).fold(f64::INFINITY, f64::min),
                        unit,
                        v.iter()
                            .map(|(s, a, b)| format!("{s}: remote {a:.3} vs local {b:.3}"))
                            .collect::<Vec<_>>()
                            .join("; "),
                    )
                }
            }
            "remote-tcr-goodput-above-local-red" => {
                let above = claims::param(&sp, exp.file, id, "above_speed")?;
                if !(has("tcr") && has("red-local")) {
                    missing("remote TCR or local RED")
                } else {
                    let v: Vec<(f64, f64, f64)> = speeds
                        .iter()
                        .filter(|&&s| s > above)
                        .map(|&s| (s, get("tcr", s).expect("ran").goodput, get("red-local", s).expect("ran").goodput))
                        .collect();
                    Measured::new(
                        share(v.iter().filter(|x| x.1 > x.2).count(), v.len()),
                        unit,
                        v.iter().map(|(s, a, b)| format!("{s}: {a:.5} vs {b:.5}")).collect::<Vec<_>>().join("; "),
                    )
                }
            }
            // Tables 12 vs 10: remote TCR's CoV is below remote RED's at 0.056–1.5 Mbit/s but above it at
            // 10 and 45 (P1-15); the per-row ordering of the paper is what is checked.
            "remote-tcr-vs-red-cov-as-paper" => {
                if !(has("tcr") && has("red")) {
                    missing("TCR or RED")
                } else {
                    let mut rows = Vec::new();
                    for &sp_ in &speeds {
                        let (t, r) = (get("tcr", sp_).expect("ran").cov, get("red", sp_).expect("ran").cov);
                        let p = paper_row(&f, "tcr", &full, sp_)?.zip(paper_row(&f, "red", &full, sp_)?);
                        rows.push((sp_, t, r, p.map(|(a, b)| a[5] < b[5])));
                    }
                    let word = |b: bool| if b { "below" } else { "above" };
                    let judged: Vec<&(f64, f64, f64, Option<bool>)> = rows.iter().filter(|x| x.3.is_some()).collect();
                    let agree = judged.iter().filter(|x| x.3 == Some(x.1 < x.2)).count();
                    Measured::new(
                        share(agree, judged.len()),
                        unit,
                        rows.iter()
                            .map(|x| {
                                format!(
                                    "{}: {:.3} vs {:.3} ({}; paper {})",
                                    x.0,
                                    x.1,
                                    x.2,
                                    word(x.1 < x.2),
                                    x.3.map(word).unwrap_or("no row")
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    )
                }
            }
            other => return Err(format!("{}: claim \"{other}\": the P1 code has no measurement of this name", f.file)),
        };
        out.measure(id, Measured { unit: unit.to_string(), ..m });
    }
    // Row-dependent orderings of the paper, listed row by row (P1-14, P1-15).
    if has("tcr") && has("ecn") && !short {
        let rows: Vec<Vec<J>> = speeds
            .iter()
            .map(|&s| {
                let (t, e) = (get("tcr", s).expect("ran").cov, get("ecn", s).expect("ran").cov);
                let p =
                    paper_row(&f, "tcr", &full, s).ok().flatten().zip(paper_row(&f, "ecn", &full, s).ok().flatten());
                let pt =
                    p.map(|(a, b)| J::from(if a[5] < b[5] { "TCR < ECN" } else { "TCR ≥ ECN" })).unwrap_or(J::Null);
                vec![J::from(s), r(t, 4), r(e, 4), J::from(if t < e { "TCR < ECN" } else { "TCR ≥ ECN" }), pt]
            })
            .collect();
        out.tables.push(table(
            "tcr-vs-ecn-cov-row-by-row",
            &["speed_mbps", "tcr_cov", "ecn_cov", "ours", "paper"],
            rows,
        ));
    }
    Ok(out)
}
