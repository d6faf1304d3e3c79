//! The modern-baselines study (`M-*`): each paper's headline set-up rerun against today's queue
//! disciplines (CoDel's family: FQ-CoDel, PIE, the CAKE-like shaper with its ACK filter) and with
//! Reno, CUBIC and BBR senders. Experiment files: `experiments/modern/`.
//!
//! Every file is a runnable scenario (its base case) with a `[reproduce]` table that lists the
//! disciplines (each a set of keys of the file to change, as `reproduce --set` does, and for an
//! ACK-control mechanism the keys that build the same run without it: the vacuity check), the
//! senders' congestion controls (the `cc` axis), the seeds and the metrics. One code path runs them
//! all: every discipline × cc × seed is one simulation; the tables give each metric's mean and
//! standard deviation over the seeds; one plot per metric puts the disciplines side by side per cc.
//!
//! The `[paper]` claims are the study's questions, stated before the run (there is no paper value):
//! each compares one discipline's metric with another's (`form = "diff"`: a − b, in the metric's
//! unit; `form = "ratio"`: (a / b − 1) · 100 %) or reads one value (`form = "value"`), for one cc.

use crate::claims;
use crate::{Ctx, ExpFile, ExpOutput, Experiment, Measured, SimJob, Table};
use ackshape_sim::metrics::Summary;
use ackshape_sim::plot::{xy_chart, Curve, XyChart};
use ackshape_sim::stats::mean_sd;
use serde::Deserialize;
use serde_json::json;

/// The experiments of the study.
pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "M-P0",
            title: "Many flows in a rate class: FIFO, PFQ, TCR, FQ-CoDel, CAKE class queues × Reno/CUBIC/BBR",
            file: "experiments/modern/m-p0-class.toml",
            text: include_str!("../../../experiments/modern/m-p0-class.toml"),
            run: run_study,
        },
        Experiment {
            id: "M-P1",
            title: "Long and short transfers at one bottleneck: TCR, RED/ECN, FQ-CoDel, PIE × Reno/CUBIC/BBR",
            file: "experiments/modern/m-p1-bottleneck.toml",
            text: include_str!("../../../experiments/modern/m-p1-bottleneck.toml"),
            run: run_study,
        },
        Experiment {
            id: "M-P2",
            title: "Two-way ADSL uplink: FIFO, AFVQ, CAKE-like with ACK filter, FQ-CoDel × Reno/CUBIC/BBR",
            file: "experiments/modern/m-p2-adsl.toml",
            text: include_str!("../../../experiments/modern/m-p2-adsl.toml"),
            run: run_study,
        },
        Experiment {
            id: "M-P4",
            title: "The third-party tap (triple ACK, zero window) against Reno, CUBIC and BBR senders",
            file: "experiments/modern/m-p4-tap.toml",
            text: include_str!("../../../experiments/modern/m-p4-tap.toml"),
            run: run_study,
        },
    ]
}

/// `[reproduce]` of a study file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cfg {
    /// The senders' congestion controls (`tcp.cc` of every run).
    cc: Vec<String>,
    seeds: usize,
    quick_seeds: usize,
    quick_duration: String,
    quick_warmup: String,
    disciplines: Vec<Discipline>,
    metrics: Vec<Metric>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Discipline {
    name: String,
    /// The ACK-control mechanism this discipline is (`tcr`, `afvq`, `tap`), empty for a baseline.
    #[serde(default)]
    mechanism: String,
    /// Keys of the file to change (dotted paths).
    #[serde(default)]
    set: toml::Table,
    /// With a mechanism: the keys that build the same run without it (the vacuity check).
    #[serde(default)]
    off: Option<toml::Table>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Metric {
    /// Short name (claims' `params.metric`, plot file names).
    key: String,
    label: String,
    what: What,
    /// Flows whose name starts with this (empty: every flow).
    #[serde(default)]
    flows: String,
    /// The link it is read on (`util`, `buffer-max`).
    #[serde(default)]
    link: String,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "kebab-case")]
enum What {
    /// Sum of the flows' goodput, Mbit/s.
    Goodput,
    /// Jain's index of the flows' goodputs.
    Jain,
    /// An asymmetric link's U_u + U_d, or a link's utilization, %.
    Util,
    /// Mean completion time of the short transfers, ms.
    ShortMs,
    /// Mean of the flows' mean RTT (propagation plus queueing), ms.
    RttMs,
    /// The largest backlog at the link's queue plus the gateway's data queue and ACKs held, packets.
    BufferMax,
    /// The flows' retransmitted packets (sum).
    Retransmits,
}

impl What {
    fn unit(self) -> &'static str {
        match self {
            What::Goodput => "Mbit/s",
            What::Jain => "",
            What::Util => "%",
            What::ShortMs | What::RttMs => "ms",
            What::BufferMax | What::Retransmits => "packets",
        }
    }
}

fn flows_of<'a>(s: &'a Summary, prefix: &'a str) -> impl Iterator<Item = &'a ackshape_sim::metrics::FlowSummary> {
    s.flows.iter().filter(move |f| f.name.starts_with(prefix))
}

/// One metric of one run (NaN when the run has nothing to measure, e.g. no short transfer done).
fn value(m: &Metric, s: &Summary) -> f64 {
    match m.what {
        What::Goodput => flows_of(s, &m.flows).map(|f| f.goodput_bps).sum::<f64>() / 1e6,
        What::Jain => {
            let x: Vec<f64> = flows_of(s, &m.flows).map(|f| f.goodput_bps).collect();
            let (s1, s2) = (x.iter().sum::<f64>(), x.iter().map(|v| v * v).sum::<f64>());
            if x.is_empty() || s2 <= 0.0 {
                f64::NAN
            } else {
                s1 * s1 / (x.len() as f64 * s2)
            }
        }
        What::Util => match s.asym_link(&m.link) {
            Some(a) => a.aggregated_utilization * 100.0,
            None => s.link(&m.link).map(|l| l.utilization * 100.0).unwrap_or(f64::NAN),
        },
        What::ShortMs => match &s.short_transfers {
            Some(st) if st.count > 0 => st.mean_s * 1e3,
            _ => f64::NAN,
        },
        What::RttMs => {
            let r: Vec<f64> = flows_of(s, &m.flows).filter(|f| f.rtt_samples > 0).map(|f| f.rtt_mean_ms).collect();
            if r.is_empty() {
                f64::NAN
            } else {
                r.iter().sum::<f64>() / r.len() as f64
            }
        }
        What::BufferMax => {
            let link = s.link(&m.link).map(|l| l.queue_max_pkts as f64).unwrap_or(0.0);
            let gw = crate::edge::gateway_buffer(s).map(|(_, dmax, _, amax)| dmax + amax).unwrap_or(0.0);
            link + gw
        }
        What::Retransmits => flows_of(s, &m.flows).map(|f| f.retransmitted_packets as f64).sum(),
    }
}

/// How often mechanism `mech` acted in a run: TCR's paced ACKs and rewritten windows, AFVQ's ACKs
/// handled as their own class, the tap's injections.
fn activity(mech: &str, s: &Summary) -> Result<f64, String> {
    match mech {
        "tcr" => Ok(crate::edge::mechanism_activity("tcr", s).unwrap_or(0.0)),
        "afvq" => Ok(s
            .links
            .iter()
            .filter_map(|l| l.classes.as_ref())
            .filter(|c| c.kind == "afvq")
            .map(|c| (c.ack.dequeued + c.ack.dropped) as f64)
            .sum()),
        "tap" => Ok(s.middleboxes.iter().map(|m| m["stats"]["injections"].as_f64().unwrap_or(0.0)).sum()),
        other => Err(format!("unknown mechanism {other:?} (known: tcr, afvq, tap)")),
    }
}

fn dur(s: &str) -> toml::Value {
    toml::Value::String(s.to_string())
}

/// The cells: per discipline × cc, per metric, the values over the seeds.
struct Cells {
    vals: Vec<Vec<Vec<Vec<f64>>>>,
}

impl Cells {
    fn get(&self, d: usize, c: usize, m: usize) -> &[f64] {
        &self.vals[d][c][m]
    }
    fn mean(&self, d: usize, c: usize, m: usize) -> f64 {
        let v: Vec<f64> = self.get(d, c, m).iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            f64::NAN
        } else {
            mean_sd(&v).0
        }
    }
    fn sd(&self, d: usize, c: usize, m: usize) -> f64 {
        let v: Vec<f64> = self.get(d, c, m).iter().copied().filter(|x| x.is_finite()).collect();
        if v.len() < 2 {
            0.0
        } else {
            mean_sd(&v).1
        }
    }
}

fn fmt(x: f64) -> String {
    if !x.is_finite() {
        "n/a".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn round(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!((x * 1e4).round() / 1e4)
    } else {
        serde_json::Value::Null
    }
}

fn run_study(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::parse(exp)?;
    let cfg: Cfg = f.section("reproduce")?;
    if cfg.cc.is_empty() || cfg.disciplines.is_empty() || cfg.metrics.is_empty() {
        return Err(format!("{}: key `reproduce`: expected at least one cc, discipline and metric", f.file));
    }
    for (i, d) in cfg.disciplines.iter().enumerate() {
        if !d.mechanism.is_empty() && d.off.is_none() {
            return Err(format!(
                "{}: key `reproduce.disciplines[{i}].off`: discipline {:?} is the mechanism {:?}; expected the keys that build it without (the vacuity check)",
                f.file, d.name, d.mechanism
            ));
        }
    }
    let seeds = if ctx.quick { cfg.quick_seeds } else { cfg.seeds }.max(1);
    let mut jobs = Vec::new();
    for d in &cfg.disciplines {
        let set = match (&d.off, ctx.mechanism_off && !d.mechanism.is_empty()) {
            (Some(off), true) => off,
            _ => &d.set,
        };
        for cc in &cfg.cc {
            for k in 0..seeds {
                let mut e: Vec<(String, toml::Value)> = Vec::new();
                if ctx.quick {
                    e.push(("duration".into(), dur(&cfg.quick_duration)));
                    e.push(("warmup".into(), dur(&cfg.quick_warmup)));
                }
                e.push(("tcp.cc".into(), toml::Value::String(cc.clone())));
                e.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
                let doc = f.doc_with(&e)?;
                let seed = ctx.seed.wrapping_add(k as u64);
                jobs.push(SimJob::new(format!("{} {cc} seed={seed}", d.name), doc, &f.file, seed)?);
            }
        }
    }
    let res = ctx.run_sims(&jobs);
    let mut out =
        ExpOutput { id: exp.id.into(), title: exp.title.into(), notes: f.paper_notes(), ..Default::default() };
    let (nd, nc, nm) = (cfg.disciplines.len(), cfg.cc.len(), cfg.metrics.len());
    let mut cells = Cells { vals: vec![vec![vec![Vec::new(); nm]; nc]; nd] };
    let mut it = res.into_iter();
    let mut events = 0u64;
    let mut wall = 0.0;
    for (di, d) in cfg.disciplines.iter().enumerate() {
        if !d.mechanism.is_empty() {
            out.act(&d.mechanism, 0.0);
        }
        for ci in 0..nc {
            for _ in 0..seeds {
                let s = it.next().ok_or("a run went missing")??;
                events += s.sim.events;
                wall += s.sim.wall_time_s;
                if !d.mechanism.is_empty() {
                    let n = activity(&d.mechanism, &s)
                        .map_err(|e| format!("{}: key `reproduce.disciplines[{di}].mechanism`: {e}", f.file))?;
                    out.act(&d.mechanism, n);
                }
                for (mi, m) in cfg.metrics.iter().enumerate() {
                    cells.vals[di][ci][mi].push(value(m, &s));
                }
            }
        }
    }
    out.notes.push(format!(
        "{} runs ({} disciplines × {} congestion controls × {seeds} seed{}){}; {events} events.",
        jobs.len(),
        nd,
        nc,
        if seeds == 1 { "" } else { "s" },
        if ctx.quick { ", quick mode (shorter runs, one seed)" } else { "" }
    ));
    let _ = wall;
    // The table: one row per discipline × cc, each metric's mean and sd over the seeds.
    let mut columns = vec!["discipline".to_string(), "cc".to_string()];
    for m in &cfg.metrics {
        let u = m.what.unit();
        let l = if u.is_empty() { m.label.clone() } else { format!("{} ({u})", m.label) };
        columns.push(l.clone());
        columns.push(format!("{l} sd"));
    }
    let mut rows = Vec::new();
    for (di, d) in cfg.disciplines.iter().enumerate() {
        for (ci, cc) in cfg.cc.iter().enumerate() {
            let mut row = vec![json!(d.name), json!(cc)];
            for mi in 0..nm {
                row.push(round(cells.mean(di, ci, mi)));
                row.push(round(cells.sd(di, ci, mi)));
            }
            rows.push(row);
        }
    }
    out.tables.push(Table { name: "results".into(), columns, rows });
    // The claims: the study's questions.
    let specs = claims::specs(exp.text, exp.file, exp.id)?;
    let find_d = |name: &str, claim: &str, key: &str| {
        cfg.disciplines.iter().position(|d| d.name == name).ok_or_else(|| {
            let known: Vec<&str> = cfg.disciplines.iter().map(|d| d.name.as_str()).collect();
            format!(
                "{}: key `params.{key}` of claim \"{claim}\": no discipline {name:?} (known: {})",
                f.file,
                known.join(", ")
            )
        })
    };
    for s in &specs {
        let p = |key: &str| -> Result<String, String> {
            s.params
                .get(key)
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("{}: key `params.{key}` of claim \"{}\": expected a string", f.file, s.id))
        };
        let metric = p("metric")?;
        let mi = cfg.metrics.iter().position(|m| m.key == metric).ok_or_else(|| {
            format!("{}: key `params.metric` of claim \"{}\": no metric {metric:?} in reproduce.metrics", f.file, s.id)
        })?;
        let m = &cfg.metrics[mi];
        let cc = p("cc")?;
        let ci = cfg.cc.iter().position(|c| *c == cc).ok_or_else(|| {
            format!("{}: key `params.cc` of claim \"{}\": {cc:?} is not in reproduce.cc", f.file, s.id)
        })?;
        let a = find_d(&p("a")?, &s.id, "a")?;
        let form = p("form")?;
        let (va, u) = (cells.mean(a, ci, mi), m.what.unit());
        let per_seed = |d: usize| cells.get(d, ci, mi).iter().map(|x| fmt(*x)).collect::<Vec<_>>().join(", ");
        let da = &cfg.disciplines[a].name;
        let show = |x: f64| if u.is_empty() { fmt(x) } else { format!("{} {u}", fmt(x)) };
        let measured = match form.as_str() {
            "value" => {
                Measured::new(va, u, format!("{da}, {cc}: {} {} (per seed: {})", m.label, show(va), per_seed(a)))
            }
            "diff" | "ratio" => {
                let b = find_d(&p("b")?, &s.id, "b")?;
                let vb = cells.mean(b, ci, mi);
                let db = &cfg.disciplines[b].name;
                let (v, unit) = if form == "diff" { (va - vb, u) } else { ((va / vb - 1.0) * 100.0, "%") };
                let what = format!(
                    "{}, {cc}: {da} {} (per seed {}) vs {db} {} (per seed {})",
                    m.label,
                    show(va),
                    per_seed(a),
                    show(vb),
                    per_seed(b)
                );
                if va.is_finite() && vb.is_finite() {
                    Measured::new(v, unit, what)
                } else {
                    Measured::gated(unit, "a discipline's runs measured nothing for this metric", what)
                }
            }
            other => {
                return Err(format!(
                    "{}: key `params.form` of claim \"{}\": expected \"value\", \"diff\" or \"ratio\", got {other:?}",
                    f.file, s.id
                ))
            }
        };
        out.measure(&s.id, measured);
    }
    // One plot per metric: x = the congestion controls, one curve per discipline (±1 sd).
    let ticks: Vec<(f64, String)> = cfg.cc.iter().enumerate().map(|(i, c)| (i as f64, c.clone())).collect();
    for (mi, m) in cfg.metrics.iter().enumerate() {
        let curves: Vec<Curve> = cfg
            .disciplines
            .iter()
            .enumerate()
            .map(|(di, d)| Curve {
                name: d.name.clone(),
                points: (0..nc).map(|ci| (ci as f64, cells.mean(di, ci, mi))).collect(),
                markers: true,
                color: Some(di),
                err: if seeds > 1 {
                    (0..nc)
                        .map(|ci| {
                            let (mu, sd) = (cells.mean(di, ci, mi), cells.sd(di, ci, mi));
                            (ci as f64, mu - sd, mu + sd)
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                ..Default::default()
            })
            .collect();
        let u = m.what.unit();
        let y_label = if u.is_empty() { m.label.clone() } else { format!("{} ({u})", m.label) };
        let title = format!(
            "{}: {} per sender cc{}",
            exp.id,
            m.label,
            if seeds > 1 { " (bars: ±1 sd over seeds)" } else { "" }
        );
        let plot = xy_chart(
            &XyChart { title, x_label: "sender congestion control".into(), y_label, ..Default::default() },
            &curves,
        )
        .x_tick_labels(ticks.clone());
        out.plots.push((format!("{}.svg", m.key), plot));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every study file parses, names known disciplines, metrics and ccs in its claims, and gives
    /// every mechanism its vacuity keys.
    #[test]
    fn study_files_are_consistent() {
        for e in experiments() {
            let f = ExpFile::parse(&e).unwrap();
            let cfg: Cfg = f.section("reproduce").unwrap();
            for s in claims::specs(e.text, e.file, e.id).unwrap() {
                let g = |k: &str| s.params.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
                assert!(cfg.metrics.iter().any(|m| m.key == g("metric")), "{} {}", e.id, s.id);
                assert!(cfg.cc.contains(&g("cc")), "{} {}", e.id, s.id);
                assert!(cfg.disciplines.iter().any(|d| d.name == g("a")), "{} {}", e.id, s.id);
                if g("form") != "value" {
                    assert!(cfg.disciplines.iter().any(|d| d.name == g("b")), "{} {}", e.id, s.id);
                }
                // A claim about a mechanism names the mechanism of one of its disciplines.
                for mech in &s.mechanism {
                    assert!(cfg.disciplines.iter().any(|d| &d.mechanism == mech), "{} {}: {mech}", e.id, s.id);
                }
                assert!(s.miss.is_some(), "{} {}: a question that may fail says where its answer is read", e.id, s.id);
            }
            for d in &cfg.disciplines {
                assert_eq!(d.mechanism.is_empty(), d.off.is_none(), "{} {}", e.id, d.name);
            }
            assert_eq!(cfg.cc, ["reno", "cubic", "bbr"], "{}: every study runs the three senders", e.id);
        }
    }

    #[test]
    fn units_follow_the_metric() {
        assert_eq!(What::Goodput.unit(), "Mbit/s");
        assert_eq!(What::Jain.unit(), "");
        assert_eq!(What::ShortMs.unit(), "ms");
        assert_eq!(fmt(f64::NAN), "n/a");
        assert_eq!(fmt(0.98765), "0.988");
    }
}
