//! Paper 001 (Karandikar, Kalyanaraman, Bagal, Packer, "TCP Rate Control"): Tables 1–12 with
//! Figs. 2 and 3 — RED, ECN and TCP rate control for 100 sources at 56 kb/s … 45 Mb/s: long
//! transfers with heterogeneous RTTs, short transfers, misbehaving sources and a remote bottleneck.
//! One runner serves the four workloads; settings, the paper's rows and tolerances live in
//! `experiments/p1/*.toml`.
//!
//! Claims assert an ordering only where every row of the paper's own tables agrees (traps P1-14,
//! P1-15); row-dependent orderings are listed in a table, row by row.

use super::edge::*;
use super::{Ctx, ExpOutput, Experiment};
use crate::metrics::Summary;
use crate::plot::{line_chart, Series};
use serde_json::Value as J;

macro_rules! exp_file {
    ($p:literal) => {
        ($p, include_str!(concat!("../../../../", $p)))
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

fn fmt_speed(s: f64) -> String {
    format!("{s} Mbit/s")
}

fn run_p1(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load(exp, ctx.quick)?;
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
    let fifo = f.usize("fifo_pkts")?;
    let seeds = f.usize_or("seeds", 1)?.max(1);
    let schemes = f.schemes()?;
    let min_util = f.f64_or("tolerance.min_utilization", 0.9)?;
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
                        v.set("topology.upstream.rate", fast.clone());
                    }
                }
                // TCR upstream shapes at router 1 with that link's rate (it does not know the
                // remote bottleneck); everything else shapes the bottleneck at its speed.
                let sh = if remote_tcr {
                    Shape {
                        link: "topology.upstream",
                        node: "edge",
                        wan: "upstream",
                        rate_bps: (sp * 1e6 * factor).round() as u64,
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
    // Claims.
    let has = |k: &str| cols.iter().any(|c| c.key == k);
    let label_of = |k: &str| cols.iter().find(|c| c.key == k).map(|c| c.label.clone()).unwrap_or_default();
    let each = |k: &str, m: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        speeds.iter().map(|&s| (s, m(&get(k, s).expect("ran")))).collect()
    };
    let list = |v: &[(f64, f64)], d: usize| {
        v.iter()
            .map(|(s, x)| if x.is_finite() { format!("{s}: {x:.d$}") } else { format!("{s}: none completed") })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let paper_list = |k: &str, i: usize, d: usize| -> String {
        full.iter()
            .filter_map(|&s| paper_row(&f, k, &full, s).ok().flatten().map(|p| format!("{s}: {:.d$}", p[i])))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // "a below b at every speed" for metric m.
    let mut below = |id: &str, text: &str, a: &str, b: &str, m: fn(&Row) -> f64, pi: usize, d: usize| {
        if !(has(a) && has(b)) {
            return;
        }
        let (x, y) = (each(a, m), each(b, m));
        // A CoV of transfer times is undefined where a scheme completed no transfer within the
        // run (NaN): such speeds cannot be compared and are named, not counted either way.
        let undefined: Vec<String> =
            x.iter().zip(&y).filter(|(p, q)| p.1.is_nan() || q.1.is_nan()).map(|(p, _)| fmt_speed(p.0)).collect();
        let compared = x.len() - undefined.len();
        let bad: Vec<String> = x
            .iter()
            .zip(&y)
            .filter(|(p, q)| !(p.1.is_nan() || q.1.is_nan() || p.1 < q.1))
            .map(|(p, q)| format!("{} ({:.d$} ≥ {:.d$})", fmt_speed(p.0), p.1, q.1))
            .collect();
        let mut tol = if undefined.is_empty() {
            "at every speed".to_string()
        } else {
            format!("at every speed where both are defined (not comparable at {})", undefined.join(", "))
        };
        if !bad.is_empty() {
            tol = format!("{tol}; fails at {}", bad.join(", "));
        }
        out.claims.push(claim(
            id,
            text,
            format!("{}: {}; {}: {}", label_of(a), paper_list(a, pi, d), label_of(b), paper_list(b, pi, d)),
            format!("{}: {}; {}: {}", label_of(a), list(&x, d), label_of(b), list(&y, d)),
            tol,
            bad.is_empty() && compared > 0,
        ));
    };
    let cov_i = 5;
    if short {
        below(
            "tcr-cov-below-red",
            "TCR lowers the CoV of transfer times vs RED at every speed",
            "tcr",
            "red",
            |r| r.cov,
            cov_i,
            3,
        );
        below(
            "ecn-cov-below-red",
            "ECN lowers the CoV of transfer times vs RED at every speed",
            "ecn",
            "red",
            |r| r.cov,
            cov_i,
            3,
        );
        below("tcr-queue-below-ecn", "TCR has smaller queues than ECN at every speed", "tcr", "ecn", |r| r.avgq, 1, 1);
    } else {
        below(
            "ecn-cov-below-red",
            "ECN's per-flow goodput CoV is below RED's at every speed",
            "ecn",
            "red",
            |r| r.cov,
            cov_i,
            3,
        );
        if w != Workload::Remote {
            below(
                "tcr-cov-below-red",
                "TCR's per-flow goodput CoV is below RED's at every speed",
                "tcr",
                "red",
                |r| r.cov,
                cov_i,
                3,
            );
        }
        below(
            "tcr-queue-below-ecn",
            "TCR's average queue is below ECN's at every speed",
            "tcr",
            "ecn",
            |r| r.avgq,
            1,
            1,
        );
        below(
            "red-queue-below-ecn",
            "ECN trades drops for much longer queues than RED's at every speed",
            "red",
            "ecn",
            |r| r.avgq,
            1,
            1,
        );
        if w == Workload::Misbehaving {
            below(
                "tcr-cov-below-ecn",
                "TCR's CoV is below ECN's at every speed (misbehaving sources contained)",
                "tcr",
                "ecn",
                |r| r.cov,
                cov_i,
                3,
            );
        }
        if w == Workload::Remote {
            below(
                "remote-tcr-cov-below-local-red",
                "remote TCR's CoV is below local RED's (Table 1) at every speed",
                "tcr",
                "red-local",
                |r| r.cov,
                cov_i,
                3,
            );
        }
        if w == Workload::Remote && has("tcr") && has("red") {
            // Tables 12 vs 10: remote TCR's CoV is below remote RED's at 0.056–1.5 Mbit/s but
            // above it at 10 and 45 (1.276 > 0.656, 0.588 > 0.498), so "below at every speed"
            // is not the paper's (P1-15); the per-row ordering is asserted instead.
            let mut rows = Vec::new();
            for &s in &speeds {
                let (t, r) = (get("tcr", s).expect("ran").cov, get("red", s).expect("ran").cov);
                let p = paper_row(&f, "tcr", &full, s)?.zip(paper_row(&f, "red", &full, s)?);
                rows.push((s, t, r, p.map(|(a, b)| a[5] < b[5])));
            }
            let bad: Vec<String> =
                rows.iter().filter(|x| x.3.is_some_and(|pb| pb != (x.1 < x.2))).map(|x| fmt_speed(x.0)).collect();
            let word = |b: bool| if b { "below" } else { "above" };
            out.claims.push(claim(
                "remote-tcr-vs-red-cov-as-paper",
                "remote TCR's CoV is below or above RED's (Table 10) at each speed as in the paper",
                rows.iter()
                    .filter_map(|x| x.3.map(|pb| format!("{}: {}", x.0, word(pb))))
                    .collect::<Vec<_>>()
                    .join(", "),
                rows.iter()
                    .map(|x| format!("{}: {:.3} vs {:.3} ({})", x.0, x.1, x.2, word(x.1 < x.2)))
                    .collect::<Vec<_>>()
                    .join(", "),
                if bad.is_empty() {
                    "the paper's ordering at every speed".into()
                } else {
                    format!("the paper's ordering at every speed; differs at {}", bad.join(", "))
                },
                bad.is_empty() && rows.iter().any(|x| x.3.is_some()),
            ));
        }
    }
    if !short {
        // Drops.
        if has("red") {
            let d = each("red", |r| r.drops);
            let pos = d.iter().all(|x| x.1 > 0.0);
            let grow = d.windows(2).all(|p| p[1].1 > p[0].1);
            out.claims.push(claim(
                "red-drops-grow-with-speed",
                "RED drops packets at every speed, more as the speed grows",
                paper_list("red", 3, 0),
                list(&d, 0),
                "> 0 and strictly increasing with speed".into(),
                pos && grow,
            ));
        }
        for k in ["ecn", "tcr"] {
            if has(k) {
                let d = each(k, |r| r.drops);
                out.claims.push(claim(
                    &format!("{k}-no-drops"),
                    &format!("{} drops no packets", label_of(k)),
                    "0 at every speed".into(),
                    list(&d, 0),
                    "0 at every speed".into(),
                    d.iter().all(|x| x.1 == 0.0),
                ));
            }
        }
        let ks: Vec<&str> = ["red", "ecn", "tcr"].into_iter().filter(|k| has(k)).collect();
        let low: Vec<String> = ks
            .iter()
            .flat_map(|k| {
                each(k, |r| r.util)
                    .into_iter()
                    .filter(|x| x.1 < min_util * 100.0)
                    .map(move |x| format!("{k} at {} ({:.1}%)", fmt_speed(x.0), x.1))
            })
            .collect();
        out.claims.push(claim(
            "high-utilization",
            "every scheme keeps the bottleneck busy",
            "94.17–100% in every row".into(),
            if low.is_empty() { format!("all ≥ {:.0}%", min_util * 100.0) } else { low.join(", ") },
            format!("≥ {:.0}% at every speed", min_util * 100.0),
            low.is_empty(),
        ));
        if has("red") {
            let (lo, hi) = match f.f64s("tolerance.red_queue_range") {
                Ok(v) if v.len() == 2 => (v[0], v[1]),
                _ => (5.0, 35.0),
            };
            let q = each("red", |r| r.avgq);
            out.claims.push(claim(
                "red-queue-near-thresholds",
                "RED keeps its average queue near its thresholds (10–30)",
                paper_list("red", 1, 1),
                list(&q, 1),
                format!("within [{lo}, {hi}] packets at every speed"),
                q.iter().all(|x| x.1 >= lo && x.1 <= hi),
            ));
        }
    }
    match w {
        Workload::Long => {
            if has("red") && has("ecn") {
                let top = *speeds.iter().fold(&0.0, |a, b| if b > a { b } else { a });
                let (a, b) = (get("red", top).expect("ran").aggregate, get("ecn", top).expect("ran").aggregate);
                out.claims.push(claim(
                    "red-loses-goodput-at-top-speed",
                    "losses cost RED aggregate goodput at the highest speed",
                    "45 Mbit/s: RED 32 Mbit/s vs ECN 45 Mbit/s aggregate".into(),
                    format!("{}: RED {a:.2}, ECN {b:.2} Mbit/s aggregate", fmt_speed(top)),
                    "RED's aggregate below ECN's".into(),
                    a < b,
                ));
            }
        }
        Workload::Short => {
            for k in ["red", "ecn", "tcr"] {
                if has(k) {
                    let t = each(k, |r| r.time_ms);
                    out.claims.push(claim(
                        &format!("{k}-time-falls-with-speed"),
                        &format!("{}: the average transfer time falls as the speed grows", label_of(k)),
                        paper_list(k, 4, 0),
                        list(&t, 0),
                        "strictly decreasing with speed".into(),
                        t.windows(2).all(|p| p[1].1 < p[0].1),
                    ));
                }
            }
            if has("red") && has("ecn") {
                let lows: Vec<f64> = speeds.iter().copied().filter(|&s| s < 1.0).collect();
                if !lows.is_empty() {
                    let v: Vec<(f64, f64, f64)> = lows
                        .iter()
                        .map(|&s| (s, get("ecn", s).expect("ran").time_ms, get("red", s).expect("ran").time_ms))
                        .collect();
                    out.claims.push(claim(
                        "ecn-slower-at-low-speed",
                        "at low speeds ECN's transfers are slower than RED's (queueing delay)",
                        "0.056: 99624 vs 75925 ms; 0.384: 22294 vs 16797 ms".into(),
                        v.iter()
                            .map(|(s, e, r)| {
                                let f = |x: &f64| {
                                    if x.is_finite() {
                                        format!("{x:.0} ms")
                                    } else {
                                        "none completed".into()
                                    }
                                };
                                format!("{s}: {} vs {}", f(e), f(r))
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                        "ECN > RED below 1 Mbit/s".into(),
                        v.iter().all(|(_, e, r)| e > r),
                    ));
                }
            }
            // Transfer counts: row by row, as in the paper (P1-14).
            let mut rows = Vec::new();
            for &s in &speeds {
                let mut row = vec![J::from(s)];
                for k in ["red", "ecn", "tcr"] {
                    row.push(get(k, s).map(|x| r(x.transfers, 0)).unwrap_or(J::Null));
                    row.push(paper_row(&f, k, &full, s)?.map(|p| J::from(p[3])).unwrap_or(J::Null));
                }
                rows.push(row);
            }
            out.tables.push(table(
                "transfers-row-by-row",
                &["speed_mbps", "red", "paper_red", "ecn", "paper_ecn", "tcr", "paper_tcr"],
                rows,
            ));
        }
        Workload::Misbehaving => {
            if has("ecn") {
                let q = each("ecn", |r| r.avgq);
                out.claims.push(claim(
                    "ecn-queue-grows",
                    "under ECN the misbehaving sources show up as queues growing with speed",
                    paper_list("ecn", 1, 1),
                    list(&q, 1),
                    "strictly increasing with speed".into(),
                    q.windows(2).all(|p| p[1].1 > p[0].1),
                ));
            }
            if has("tcr") {
                let (lo, hi) = match f.f64s("tolerance.containment") {
                    Ok(v) if v.len() == 2 => (v[0], v[1]),
                    _ => return Err(f.err("tolerance.containment", "[low, high]", None)),
                };
                let m = each("tcr", |r| r.mis_ratio);
                let others: Vec<String> = ["red", "ecn"]
                    .into_iter()
                    .filter(|k| has(k))
                    .map(|k| format!("{}: {}", label_of(k), list(&each(k, |r| r.mis_ratio), 2)))
                    .collect();
                out.claims.push(claim(
                    "tcr-contains-misbehaving",
                    "TCR contains the misbehaving sources (they get what normal sources get)",
                    "\"virtually no effect of misbehaving sources\"".into(),
                    format!(
                        "misbehaving/normal goodput, TCR: {}{}",
                        list(&m, 2),
                        if others.is_empty() { String::new() } else { format!(" ({})", others.join("; ")) }
                    ),
                    format!("within [{lo}, {hi}] at every speed"),
                    m.iter().all(|x| x.1 >= lo && x.1 <= hi),
                ));
            }
        }
        Workload::Remote => {
            if has("ecn") {
                let q = each("ecn", |r| r.avgq);
                out.claims.push(claim(
                    "ecn-queue-grows",
                    "ECN's queue at the remote bottleneck grows with speed",
                    paper_list("ecn", 1, 1),
                    list(&q, 1),
                    "strictly increasing with speed".into(),
                    q.windows(2).all(|p| p[1].1 > p[0].1),
                ));
            }
            if has("tcr") && has("tcr-local") {
                let hi: Vec<f64> = speeds.iter().copied().filter(|&s| s >= 10.0).collect();
                if !hi.is_empty() {
                    let v: Vec<(f64, f64, f64)> = hi
                        .iter()
                        .map(|&s| (s, get("tcr", s).expect("ran").cov, get("tcr-local", s).expect("ran").cov))
                        .collect();
                    out.claims.push(claim(
                        "remote-tcr-less-fidelity-at-high-speed",
                        "at the two highest speeds remote TCR's CoV is above local TCR's (flows stay hungry longer)",
                        "10: 1.27570 vs 0.16378; 45: 0.58762 vs 0.07962".into(),
                        v.iter().map(|(s, a, b)| format!("{s}: {a:.3} vs {b:.3}")).collect::<Vec<_>>().join("; "),
                        "remote > local at 10 and 45 Mbit/s".into(),
                        v.iter().all(|(_, a, b)| a > b),
                    ));
                }
            }
            if has("tcr") && has("red-local") {
                let sp: Vec<f64> = speeds.iter().copied().filter(|&s| s > 0.1).collect();
                let v: Vec<(f64, f64, f64)> = sp
                    .iter()
                    .map(|&s| (s, get("tcr", s).expect("ran").goodput, get("red-local", s).expect("ran").goodput))
                    .collect();
                out.claims.push(claim(
                    "remote-tcr-goodput-above-local-red",
                    "remote TCR's average goodput beats local RED's above 56 kbit/s (P1-15: not at 0.056)",
                    "0.384–45: 0.00344 > 0.00313, 0.01494 > 0.01252, 0.09982 > 0.08803, 0.44791 > 0.32083".into(),
                    v.iter().map(|(s, a, b)| format!("{s}: {a:.5} vs {b:.5}")).collect::<Vec<_>>().join("; "),
                    "remote TCR > local RED at every speed above 0.1 Mbit/s".into(),
                    v.iter().all(|(_, a, b)| a > b),
                ));
            }
        }
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
