//! Paper 000 (Wei, Tsao, Lin, "Assessing and Improving TCP Rate Shaping over Edge Gateways"):
//! Fig. 8 (buffer requirement), Fig. 9 (goodput under random loss, with the App. C model),
//! Fig. 10 (fairness), Fig. 11 (robustness across sender RTO timers), Fig. 12 (the live WAN runs,
//! emulated) and Fig. 16 (model vs simulation). Settings, assumptions and tolerances live in
//! `experiments/p0/*.toml`; the schemes are [`crate::edge::schemes`].

use crate::claims::share;
use crate::edge::*;
use crate::experiment::{exp_param as prm, exp_specs as specs};
use crate::{Ctx, ExpOutput, Experiment, Measured};
use ackshape_core::model_edge;
use ackshape_sim::metrics::Summary;
use ackshape_sim::plot::{line_chart, Series};
use serde_json::Value as J;

macro_rules! exp_file {
    ($p:literal) => {
        ($p, include_str!(concat!("../../../", $p)))
    };
}

/// Paper 000's experiments.
pub fn experiments() -> Vec<Experiment> {
    let e = |id, title, (file, text): (&'static str, &'static str), run| Experiment { id, title, file, text, run };
    vec![
        e("P0-F8", "Buffer requirement of a 500 KB/s class (Fig. 8)", exp_file!("experiments/p0/f8-buffer.toml"), f8),
        e(
            "P0-F9",
            "Goodput vs random WAN loss, with the App. C model (Fig. 9)",
            exp_file!("experiments/p0/f9-loss.toml"),
            f9,
        ),
        e(
            "P0-F10",
            "Fairness among flows with 10/50/150 ms WAN delays (Fig. 10)",
            exp_file!("experiments/p0/f10-fairness.toml"),
            f10,
        ),
        e(
            "P0-F11",
            "Robustness across sender RTO timers (Fig. 11)",
            exp_file!("experiments/p0/f11-robustness.toml"),
            f11,
        ),
        e("P0-F12", "Live WAN runs, emulated (Fig. 12)", exp_file!("experiments/p0/f12-live-wan.toml"), f12),
        e("P0-F16", "App. C model vs simulation (Fig. 16)", exp_file!("experiments/p0/f16-model.toml"), f16),
    ]
}

/// Where WAN loss is applied: the receivers' access links, which carry the WAN delay (wan-emu),
/// i.e. after the gateway and after the bottleneck link's queue discipline. Every scheme's dropped
/// packet has then used its class or per-flow token-bucket slot, as in the paper's testbed, where
/// the WAN emulator sits behind the gateway (App. D). (On `topology.bottleneck`, loss is applied
/// when a packet enters the link, before its queue discipline: PFQ, which is that discipline,
/// would not have been charged for the packets the WAN drops.)
const WAN_LOSS: &str = "topology.receiver_access.loss";

/// The edge gateway shapes `left → right` (LAN → WAN).
fn shape(f: &ExpFile, rate_bps: u64, fifo_pkts: usize) -> Shape<'_> {
    Shape { link: "topology.bottleneck", node: "left", wan: "bottleneck", rate_bps, fifo_pkts, file: f }
}

fn base_output(exp: &Experiment, f: &ExpFile, schemes: &[(Scheme, Option<String>)]) -> ExpOutput {
    let mut notes = f.assumptions();
    notes.extend(f.strs("notes").unwrap_or_default());
    notes.extend(missing_notes(schemes));
    if schemes.iter().any(|(s, w)| s.id.as_str() == "class-fifo" && w.is_none()) {
        notes.push(if ackshape_sim::middlebox::KINDS.contains(&"gateway") {
            "CBQ (class FIFO) is the gateway's class without an ACK mechanism.".into()
        } else {
            "CBQ (class FIFO) is a token-bucket class rate (tbf, 2-packet burst) over a FIFO of the class's size: the gateway class is not in this build.".into()
        });
    }
    ExpOutput { id: exp.id.into(), title: exp.title.into(), notes, ..Default::default() }
}

fn available(schemes: &[(Scheme, Option<String>)]) -> Vec<&Scheme> {
    schemes.iter().filter(|(_, w)| w.is_none()).map(|(s, _)| s).collect()
}

fn ran(schemes: &[(Scheme, Option<String>)], id: &str) -> bool {
    schemes.iter().any(|(s, w)| s.id.as_str() == id && w.is_none())
}

/// A claim whose scheme this run did not include.
fn not_run(unit: &str, what: &str) -> Measured {
    Measured::gated(unit, format!("{what} is not among this run's schemes"), "not run")
}

/// App. C's regime in words.
fn regime_name(r: model_edge::Regime) -> &'static str {
    match r {
        model_edge::Regime::Case1 => "case 1",
        model_edge::Regime::Case2 => "case 2",
        model_edge::Regime::Case3 => "case 3",
    }
}

fn label(id: &str) -> String {
    scheme(id).map(|s| s.label).unwrap_or_else(|| id.to_string())
}

/// Round-trip WAN delay D_w of the base topology (sender access + bottleneck + receiver access,
/// both ways).
fn dw_secs(f: &ExpFile) -> Result<f64, String> {
    Ok(2.0
        * (f.base_secs("topology.access.delay")?
            + f.base_secs("topology.bottleneck.delay")?
            + f.base_secs("topology.receiver_access.delay")?))
}

fn kb(bytes_per_s: f64) -> J {
    r(bytes_per_s / 1e3, 2)
}

fn fmt_list<T: std::fmt::Display>(v: &[(usize, T)]) -> String {
    v.iter().map(|(n, x)| format!("{n}: {x}")).collect::<Vec<_>>().join(", ")
}

// ------------------------------------------------------------------------------------- Fig. 8

fn f8(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load_for(exp, ctx)?;
    let rate = f.rate_bps("class_rate")?;
    let flows = f.usizes("flows")?;
    let fifos = f.usizes("fifo_pkts")?;
    let schemes = f.schemes()?;
    let sp = specs(exp)?;
    let near = f.f64("measure.near_best")?;
    let slack = prm(&sp, exp, "cbq-retx-grows-as-fifo-shrinks", "slack")? / 100.0;
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    let seeds = f.usize_or("seeds", 1)?.max(1);
    for s in available(&schemes) {
        for &n in &flows {
            for &q in &fifos {
                for k in 0..seeds {
                    let mut v = f.variant();
                    v.set("flows[0].count", n as i64);
                    s.apply(&mut v, &shape(&f, rate, q))?;
                    jobs.push(Job {
                        label: format!("{}, {n} flows, FIFO {q}, seed {k}", s.id),
                        variant: v,
                        seed: ctx.seed + k as u64,
                        series: false,
                    });
                    keys.push((s.id.as_str(), n, q));
                }
            }
        }
    }
    let outs = run_jobs(ctx, f.file, &jobs)?;
    let mut out = base_output(exp, &f, &schemes);
    out.notes.push(cost_note(&jobs, &outs));
    record_activity(&mut out, keys.iter().zip(&outs).map(|(k, o)| (k.0, &o.summary)));
    // (scheme, flows, fifo) → (goodput B/s, retx ratio, drops, timeouts), means over the seeds,
    // and the gateway's buffer (data packets max, ACKs held max) where there is one.
    let mut res: Vec<(&str, usize, usize, f64, f64, u64, u64)> = Vec::new();
    let mut bufs: Vec<Option<(f64, f64)>> = Vec::new();
    for (i, &(s, n, q)) in keys.iter().enumerate() {
        if res.iter().any(|x| x.0 == s && x.1 == n && x.2 == q) {
            continue;
        }
        let runs: Vec<&Outcome> =
            keys.iter().zip(&outs).skip(i).filter(|(k, _)| k.0 == s && k.1 == n && k.2 == q).map(|(_, o)| o).collect();
        let m = |f: &dyn Fn(&Summary) -> f64| mean(&runs.iter().map(|o| f(&o.summary)).collect::<Vec<_>>());
        res.push((
            s,
            n,
            q,
            m(&class_goodput_bytes),
            m(&class_retx_ratio),
            m(&|x| drops_anywhere(x) as f64).round() as u64,
            m(&|x| x.flows.iter().map(|f| f.timeouts).sum::<u64>() as f64).round() as u64,
        ));
        let b: Vec<(f64, f64)> = runs.iter().filter_map(|o| gateway_buffer(&o.summary)).map(|b| (b.1, b.3)).collect();
        bufs.push(
            (!b.is_empty())
                .then(|| (b.iter().map(|x| x.0).fold(0.0, f64::max), b.iter().map(|x| x.1).fold(0.0, f64::max))),
        );
    }
    out.tables.push(table(
        "fig8",
        &[
            "scheme",
            "flows",
            "fifo_pkts",
            "goodput_KBps",
            "retx_ratio",
            "drops",
            "timeouts",
            "gw_data_max_pkts",
            "gw_acks_held_max",
        ],
        res.iter()
            .zip(&bufs)
            .map(|(&(s, n, q, g, x, d, t), b)| {
                vec![
                    J::from(s),
                    J::from(n),
                    J::from(q),
                    kb(g),
                    r(x, 4),
                    J::from(d),
                    J::from(t),
                    b.map(|b| J::from(b.0)).unwrap_or(J::Null),
                    b.map(|b| J::from(b.1)).unwrap_or(J::Null),
                ]
            })
            .collect(),
    ));
    let best_at = |n: usize| res.iter().filter(|x| x.1 == n).map(|x| x.3).fold(0.0, f64::max);
    // The buffer a scheme needs at a flow count: the smallest FIFO from which on (it and every
    // larger one) the scheme reaches `near` × the best goodput at that flow count. (Goodput is
    // not monotone in the FIFO size, so "the first FIFO that reaches it" would mislead.)
    let min_fifo = |s: &str, n: usize| -> Option<usize> {
        let b = best_at(n);
        let ok = |q: usize| res.iter().any(|x| x.0 == s && x.1 == n && x.2 == q && x.3 >= near * b);
        let mut sorted = fifos.clone();
        sorted.sort_unstable();
        (0..sorted.len()).find(|&i| sorted[i..].iter().all(|&q| ok(q))).map(|i| sorted[i])
    };
    let show = |m: Option<usize>| {
        m.map(|q| q.to_string()).unwrap_or_else(|| format!("more than {}", fifos.iter().max().unwrap()))
    };
    let mut rows = Vec::new();
    for s in available(&schemes) {
        for &n in &flows {
            rows.push(vec![
                J::from(s.id.as_str()),
                J::from(n),
                kb(best_at(n)),
                min_fifo(s.id.as_str(), n).map(J::from).unwrap_or(J::Null),
            ]);
        }
    }
    out.tables.push(table("fig8-min-buffer", &["scheme", "flows", "best_goodput_KBps", "buffer_needed_pkts"], rows));
    // Plots: goodput and retransmission ratio against log3(FIFO), a line per scheme and flow count.
    let mut ga = Vec::new();
    let mut gb = Vec::new();
    for s in available(&schemes) {
        for &n in &flows {
            let pts: Vec<&(&str, usize, usize, f64, f64, u64, u64)> =
                res.iter().filter(|x| x.0 == s.id.as_str() && x.1 == n).collect();
            let lx = |q: usize| q as f64;
            ga.push(Series {
                name: format!("{} n={n}", s.id.as_str()),
                points: pts.iter().map(|x| (lx(x.2), x.3)).collect(),
            });
            gb.push(Series {
                name: format!("{} n={n}", s.id.as_str()),
                points: pts.iter().map(|x| (lx(x.2), x.4 * 100.0)).collect(),
            });
        }
    }
    out.plots.push((
        "fig8a-goodput.svg".into(),
        line_chart("Fig. 8a: class goodput", "FIFO size (packets, log scale)", "goodput (KB/s)", 1e3, &ga).log_x(3.0),
    ));
    out.plots.push((
        "fig8b-retx.svg".into(),
        line_chart(
            "Fig. 8b: retransmission ratio",
            "FIFO size (packets, log scale)",
            "retransmitted / sent (%)",
            1.0,
            &gb,
        )
        .log_x(3.0),
    ));
    // Claims.
    let best = res.iter().map(|x| x.3).fold(0.0, f64::max) / 1e3;
    out.measure("best-goodput", Measured::new(best, "KB/s", format!("{best:.1} KB/s")));
    let nmax = *flows.iter().max().unwrap();
    let qmax = *fifos.iter().max().unwrap();
    let mech: Vec<&str> = ["tcr", "postack"].into_iter().filter(|m| ran(&schemes, m)).collect();
    // A buffer never reached within the grid counts as the next size of its 3^k steps.
    let needed = |s: &str, n: usize| min_fifo(s, n).map(|q| q as f64).unwrap_or(3.0 * qmax as f64);
    if ran(&schemes, "class-fifo") && !mech.is_empty() {
        let cbq = min_fifo("class-fifo", nmax);
        let others: Vec<(&str, Option<usize>)> = mech.iter().map(|m| (*m, min_fifo(m, nmax))).collect();
        let worst_mech = mech.iter().map(|m| needed(m, nmax)).fold(0.0, f64::max);
        let mut meas = format!("at {nmax} flows CBQ needs {} packets", show(cbq));
        for (m, q) in &others {
            meas += &format!(", {} {}", label(m), show(*q));
        }
        out.measure("cbq-needs-huge-buffer", Measured::new(needed("class-fifo", nmax) / worst_mech, "x", meas));
    } else {
        out.measure("cbq-needs-huge-buffer", not_run("x", "CBQ, TCR or PostACK"));
    }
    if ran(&schemes, "class-fifo") {
        let mut steps = 0;
        let mono: Vec<(usize, String)> = flows
            .iter()
            .filter_map(|&n| {
                let mut pts: Vec<(usize, f64)> =
                    res.iter().filter(|x| x.0 == "class-fifo" && x.1 == n).map(|x| (x.2, x.4)).collect();
                pts.sort_by_key(|p| p.0);
                steps += pts.len().saturating_sub(1);
                let bad = pts.windows(2).find(|w| w[1].1 > w[0].1 + slack)?;
                Some((
                    n,
                    format!("{:.1}% at {} → {:.1}% at {}", bad[0].1 * 100.0, bad[0].0, bad[1].1 * 100.0, bad[1].0),
                ))
            })
            .collect();
        let rises = flows
            .iter()
            .map(|&n| {
                let mut pts: Vec<(usize, f64)> =
                    res.iter().filter(|x| x.0 == "class-fifo" && x.1 == n).map(|x| (x.2, x.4)).collect();
                pts.sort_by_key(|p| p.0);
                pts.windows(2).filter(|w| w[1].1 > w[0].1 + slack).count()
            })
            .sum::<usize>();
        out.measure(
            "cbq-retx-grows-as-fifo-shrinks",
            Measured::new(
                if steps == 0 { f64::NAN } else { rises as f64 },
                "steps",
                if mono.is_empty() {
                    format!("non-increasing in the FIFO size at every flow count ({steps} steps)")
                } else {
                    format!("rises with the FIFO at {}", fmt_list(&mono))
                },
            ),
        );
        let q1 = *fifos.iter().min().unwrap();
        for (id, sid) in [("cbq-retx-ratio", "class-fifo"), ("cbq-retx-ratio-linux22", "class-fifo/linux22")] {
            match res.iter().find(|x| x.0 == sid && x.1 == nmax && x.2 == q1) {
                Some(x) => out.measure(
                    id,
                    Measured::new(x.4 * 100.0, "%", format!("{:.1}% at {nmax} flows, FIFO {q1}", x.4 * 100.0)),
                ),
                None => out.measure(id, not_run("%", sid)),
            }
        }
    } else {
        for (id, u) in
            [("cbq-retx-grows-as-fifo-shrinks", "steps"), ("cbq-retx-ratio", "%"), ("cbq-retx-ratio-linux22", "%")]
        {
            out.measure(id, not_run(u, "CBQ"));
        }
    }
    // Every mechanism scheme the file names: the paper's (one class tick) and the variants.
    let mech_ids: Vec<String> =
        sp.iter().filter_map(|c| c.id.strip_suffix("-small-buffer").map(str::to_string)).collect();
    for m in &mech_ids {
        let id = format!("{m}-small-buffer");
        if !ran(&schemes, m) {
            out.measure(&id, not_run("packets", m));
            continue;
        }
        let per: Vec<(usize, String)> = flows.iter().map(|&n| (n, show(min_fifo(m, n)))).collect();
        let largest = flows.iter().map(|&n| needed(m, n)).fold(0.0, f64::max);
        // Where the buffer goes: the largest data queue the gateway reaches (measurement window)
        // with the largest FIFO, where nothing is dropped.
        let peak: Vec<(usize, String)> = flows
            .iter()
            .filter_map(|&n| {
                let i = res.iter().position(|x| x.0 == m && x.1 == n && x.2 == qmax)?;
                bufs[i].map(|b| (n, format!("{:.0}", b.0)))
            })
            .collect();
        // Retransmissions at the smallest sufficient FIFO (goodput alone can hide losses).
        let retx: Vec<(usize, String)> = flows
            .iter()
            .filter_map(|&n| {
                let q = min_fifo(m, n)?;
                let x = res.iter().find(|x| x.0 == m && x.1 == n && x.2 == q)?;
                Some((n, format!("{:.1}%", x.4 * 100.0)))
            })
            .collect();
        out.measure(
            &id,
            Measured::new(
                largest,
                "packets",
                format!(
                    "smallest sufficient FIFO per flow count: {}; retransmitted there: {}; peak data queue with a {qmax}-packet FIFO: {}",
                    fmt_list(&per),
                    fmt_list(&retx),
                    fmt_list(&peak)
                ),
            ),
        );
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------- Fig. 9

fn loss_table(p: f64) -> toml::Value {
    toml::Value::Table(tbl(&[("kind", "bernoulli".into()), ("p", p.into())]))
}

/// CoV of one run's goodput bins after the warm-up (1 flow).
fn bin_cov(o: &Outcome, from_s: f64) -> f64 {
    let g: Vec<f64> = flow_bins(&o.series, 0, from_s).into_iter().map(|(_, g)| g).collect();
    ackshape_sim::metrics::cov(&g)
}

fn f9(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load_for(exp, ctx)?;
    let rate = f.rate_bps("class_rate")?;
    let fifo = f.usize("fifo_pkts")?;
    let losses = f.f64s("loss")?;
    let seeds = f.usize("seeds")?.max(1);
    let schemes = f.schemes()?;
    let series_loss = f.f64("series_loss")?;
    let sp = specs(exp)?;
    let spread_tol = prm(&sp, exp, "no-difference-above-4pct", "spread")? / 100.0;
    let above = prm(&sp, exp, "no-difference-above-4pct", "above_loss")?;
    let warm = f.warmup_secs()?;
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for s in available(&schemes) {
        for &p in &losses {
            for k in 0..seeds {
                let mut v = f.variant();
                if p > 0.0 {
                    v.set(WAN_LOSS, loss_table(p));
                }
                s.apply(&mut v, &shape(&f, rate, fifo))?;
                jobs.push(Job {
                    label: format!("{}, loss {p}, seed {k}", s.id.as_str()),
                    variant: v,
                    seed: ctx.seed + k as u64,
                    series: true,
                });
                keys.push((s.id.as_str(), p, k));
            }
        }
    }
    let outs = run_jobs(ctx, f.file, &jobs)?;
    let mut out = base_output(exp, &f, &schemes);
    out.notes.push(cost_note(&jobs, &outs));
    // Model (App. C, corrected): T packets per D_w at W_w = rate·D_w/packet.
    let dw = dw_secs(&f)?;
    let pkt = f.packet_bytes();
    let mss = f.mss();
    let ww = model_edge::ww(rate as f64, dw, pkt);
    let model = |p: f64, tcr: bool| -> f64 {
        let t = if p <= 0.0 {
            ww
        } else if tcr {
            model_edge::tcr(p, ww)
        } else {
            model_edge::pfq(p, ww)
        };
        t * mss / dw
    };
    let stat = |s: &str, p: f64| -> (f64, f64, f64) {
        let (g, c): (Vec<f64>, Vec<f64>) = keys
            .iter()
            .zip(&outs)
            .filter(|(k, _)| k.0 == s && k.1 == p)
            .map(|(_, o)| (class_goodput_bytes(&o.summary), bin_cov(o, warm)))
            .unzip();
        (mean(&g), sem(&g), mean(&c))
    };
    let av = available(&schemes);
    let mut cols: Vec<String> = vec!["loss".into(), "regime".into()];
    for s in &av {
        cols.push(format!("{}_KBps", s.id.as_str()));
        cols.push(format!("{}_sem", s.id.as_str()));
        cols.push(format!("{}_bin_cov", s.id.as_str()));
    }
    cols.push("model_pfq_KBps".into());
    cols.push("model_tcr_KBps".into());
    let rows: Vec<Vec<J>> = losses
        .iter()
        .map(|&p| {
            let mut row = vec![
                J::from(p),
                J::from(if p > 0.0 { regime_name(model_edge::regime(p, ww)).to_string() } else { "no loss".into() }),
            ];
            for s in &av {
                let (m, e, c) = stat(s.id.as_str(), p);
                row.extend([kb(m), kb(e), r(c, 3)]);
            }
            row.extend([kb(model(p, false)), kb(model(p, true))]);
            row
        })
        .collect();
    let colr: Vec<&str> = cols.iter().map(String::as_str).collect();
    out.tables.push(table("fig9d", &colr, rows));
    out.notes.push(format!(
        "W_w = {:.2} packets ({} KB/s × {:.0} ms / {pkt:.0} B); the model goodput is T × {mss:.0} B / D_w.",
        ww,
        rate as f64 / 8e3,
        dw * 1e3
    ));
    // Plot (d): average goodput vs loss, with the model.
    let mut sd: Vec<Series> = av
        .iter()
        .map(|s| Series {
            name: s.label.clone(),
            points: losses.iter().map(|&p| (p * 100.0, stat(s.id.as_str(), p).0)).collect(),
        })
        .collect();
    sd.push(Series {
        name: "model PFQ/PostACK (App. C)".into(),
        points: losses.iter().map(|&p| (p * 100.0, model(p, false))).collect(),
    });
    sd.push(Series {
        name: "model TCR (App. C)".into(),
        points: losses.iter().map(|&p| (p * 100.0, model(p, true))).collect(),
    });
    out.plots.push((
        "fig9d-average.svg".into(),
        line_chart("Fig. 9d: average goodput, 10–30 s", "random loss (%)", "goodput (KB/s)", 1e3, &sd),
    ));
    // Plots (a)–(c): time series at the series loss, first seed.
    if let Some(&ps) = losses.iter().find(|&&p| (p - series_loss).abs() < 1e-12) {
        for s in &av {
            if let Some((_, o)) = keys.iter().zip(&outs).find(|(k, _)| k.0 == s.id.as_str() && k.1 == ps && k.2 == 0) {
                let pts = flow_bins(&o.series, 0, 0.0).into_iter().map(|(t, g)| (t, g / 8.0)).collect();
                out.plots.push((
                    format!("fig9-series-{}.svg", s.id.as_str()),
                    line_chart(
                        &format!("Fig. 9: {} at {:.1}% loss", s.label.as_str(), ps * 100.0),
                        "time (s)",
                        "goodput (KB/s)",
                        1e3,
                        &[Series { name: s.label.clone(), points: pts }],
                    ),
                ));
            }
        }
    }
    // Claims.
    record_activity(&mut out, keys.iter().zip(&outs).map(|(k, o)| (k.0, &o.summary)));
    let has = |id| ran(&schemes, id);
    let p1 = losses.iter().copied().find(|&p| (p - 0.01).abs() < 1e-12);
    match (has("tcr") && has("postack"), p1) {
        (true, Some(p1)) => {
            let (pm, pe, _) = stat("postack", p1);
            let (tm, te, _) = stat("tcr", p1);
            let gain = (pm - tm) / tm;
            let se = (pe * pe + te * te).sqrt();
            out.measure(
                "postack-beats-tcr-at-1pct",
                Measured::new(
                    gain * 100.0,
                    "%",
                    format!(
                        "{:+.1}% ({:.1} vs {:.1} KB/s, ± {:.1} KB/s s.e. of the difference)",
                        gain * 100.0,
                        pm / 1e3,
                        tm / 1e3,
                        se / 1e3
                    ),
                ),
            );
            let mg = (model(p1, false) - model(p1, true)) / model(p1, true);
            out.measure(
                "model-agrees-at-1pct",
                Measured::new(
                    mg * 100.0,
                    "%",
                    format!(
                        "App. C (corrected) at W_w = {ww:.1}: {:+.1}%; simulation {:+.1}%",
                        mg * 100.0,
                        gain * 100.0
                    ),
                ),
            );
        }
        _ => {
            out.measure("postack-beats-tcr-at-1pct", not_run("%", "TCR and PostACK at 1% loss"));
            out.measure("model-agrees-at-1pct", not_run("%", "TCR and PostACK at 1% loss"));
        }
    }
    if has("tcr") && has("postack") {
        // "Obviously outperforms": loss rates in (0, 4%) where PostACK is more than 2 standard errors
        // of the difference above TCR.
        let below: Vec<f64> = losses.iter().copied().filter(|&p| p > 0.0 && p < above).collect();
        let z = |p: f64| {
            let (a, ae, _) = stat("postack", p);
            let (b, be, _) = stat("tcr", p);
            let se = (ae * ae + be * be).sqrt();
            if se > 0.0 {
                (a - b) / se
            } else {
                (a - b).signum() * f64::INFINITY
            }
        };
        let worse: Vec<String> = below.iter().filter(|&&p| z(p) < -2.0).map(|p| format!("{:.1}%", p * 100.0)).collect();
        let better: Vec<String> = below.iter().filter(|&&p| z(p) > 2.0).map(|p| format!("{:.1}%", p * 100.0)).collect();
        out.measure(
            "postack-above-tcr-below-4pct",
            Measured::new(
                share(better.len(), below.len()),
                "% of loss rates",
                format!(
                    "significantly above at {} of {} loss rates ({}); significantly below at {}",
                    better.len(),
                    below.len(),
                    if better.is_empty() { "none".to_string() } else { better.join(", ") },
                    if worse.is_empty() { "none".to_string() } else { worse.join(", ") }
                ),
            ),
        );
        match losses.iter().copied().find(|&p| (p - series_loss).abs() < 1e-12) {
            Some(ps) => {
                let (a, b) = (stat("postack", ps).2, stat("tcr", ps).2);
                out.measure(
                    "postack-steadier",
                    Measured::new(
                        a / b,
                        "ratio",
                        format!("CoV of 1 s bins at {:.1}% loss: PostACK {a:.3}, TCR {b:.3}", ps * 100.0),
                    ),
                );
            }
            None => out.measure(
                "postack-steadier",
                Measured::gated("ratio", "the series loss rate is not in this run's grid", "not run"),
            ),
        }
    } else {
        out.measure("postack-above-tcr-below-4pct", not_run("% of loss rates", "TCR and PostACK"));
        out.measure("postack-steadier", not_run("ratio", "TCR and PostACK"));
    }
    let trio: Vec<&str> = ["pfq", "tcr", "postack"].into_iter().filter(|s| has(s)).collect();
    let hi: Vec<f64> = losses.iter().copied().filter(|&p| p > above).collect();
    if trio.len() >= 2 && !hi.is_empty() {
        // "No significant difference": the largest pairwise difference (share of the pair's mean) among
        // pairs that also differ by more than 2 standard errors; within `spread` of the mean passes.
        let mut worst: (f64, f64) = (0.0, 0.0);
        let mut largest: (f64, f64) = (0.0, 0.0);
        for &p in &hi {
            let st: Vec<(f64, f64)> = trio.iter().map(|s| (stat(s, p).0, stat(s, p).1)).collect();
            let m = mean(&st.iter().map(|x| x.0).collect::<Vec<_>>());
            for i in 0..st.len() {
                for j in i + 1..st.len() {
                    let d = (st[i].0 - st[j].0).abs();
                    let se = (st[i].1.powi(2) + st[j].1.powi(2)).sqrt();
                    if d / m > largest.1 {
                        largest = (p, d / m);
                    }
                    if d > 2.0 * se && d / m > worst.1 {
                        worst = (p, d / m);
                    }
                }
            }
        }
        out.measure(
            "no-difference-above-4pct",
            Measured::new(
                worst.1 * 100.0,
                "% of the mean",
                format!(
                    "largest significant pairwise difference {:.1}% of the mean{}; largest of any pair {:.1}% (at {:.0}% loss); within {:.0}% passes",
                    worst.1 * 100.0,
                    if worst.1 > 0.0 { format!(" (at {:.0}% loss)", worst.0 * 100.0) } else { String::new() },
                    largest.1 * 100.0,
                    largest.0 * 100.0,
                    spread_tol * 100.0
                ),
            ),
        );
    } else {
        out.measure(
            "no-difference-above-4pct",
            Measured::gated(
                "% of the mean",
                "no loss rate above 4% in this run, or fewer than two of PFQ, TCR, PostACK",
                "not run",
            ),
        );
    }
    if has("pfq") && has("postack") {
        let below: Vec<f64> = losses.iter().copied().filter(|&p| p < above).collect();
        let dev: Vec<(f64, f64)> = below
            .iter()
            .map(|&p| {
                let (a, b) = (stat("postack", p).0, stat("pfq", p).0);
                (p, (a - b).abs() / b)
            })
            .collect();
        let worst = dev.iter().cloned().fold((0.0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        out.measure(
            "postack-like-pfq",
            Measured::new(
                worst.1 * 100.0,
                "%",
                format!("largest difference {:.1}% (at {:.1}% loss)", worst.1 * 100.0, worst.0 * 100.0),
            ),
        );
    } else {
        out.measure("postack-like-pfq", not_run("%", "PFQ and PostACK"));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 10

fn f10(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load_for(exp, ctx)?;
    let rate = f.rate_bps("class_rate")?;
    let fifo = f.usize("fifo_pkts")?;
    let seeds = f.usize("seeds")?.max(1);
    let schemes = f.schemes()?;
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for s in available(&schemes) {
        for k in 0..seeds {
            let mut v = f.variant();
            s.apply(&mut v, &shape(&f, rate, fifo))?;
            jobs.push(Job {
                label: format!("{}, seed {k}", s.id.as_str()),
                variant: v,
                seed: ctx.seed + k as u64,
                series: k == 0,
            });
            keys.push((s.id.as_str(), k));
        }
    }
    let outs = run_jobs(ctx, f.file, &jobs)?;
    let mut out = base_output(exp, &f, &schemes);
    out.notes.push(cost_note(&jobs, &outs));
    let delays = ["10 ms", "50 ms", "150 ms"];
    // Per scheme: mean per-flow goodput (B/s), mean CoV, mean max/min.
    let stat = |s: &str| -> (Vec<f64>, f64, f64) {
        let runs: Vec<&Outcome> = keys.iter().zip(&outs).filter(|(k, _)| k.0 == s).map(|(_, o)| o).collect();
        let per: Vec<f64> = (0..3)
            .map(|i| mean(&runs.iter().map(|o| o.summary.flows[i].goodput_bps / 8.0).collect::<Vec<_>>()))
            .collect();
        let covs: Vec<f64> = runs.iter().map(|o| o.summary.aggregate.cov).collect();
        let mm: Vec<f64> = runs
            .iter()
            .map(|o| {
                let g: Vec<f64> = o.summary.flows.iter().map(|x| x.goodput_bps).collect();
                g.iter().cloned().fold(0.0, f64::max) / g.iter().cloned().fold(f64::INFINITY, f64::min).max(1.0)
            })
            .collect();
        (per, mean(&covs), mean(&mm))
    };
    let av = available(&schemes);
    out.tables.push(table(
        "fig10",
        &["scheme", "goodput_10ms_KBps", "goodput_50ms_KBps", "goodput_150ms_KBps", "cov", "max_over_min"],
        av.iter()
            .map(|s| {
                let (g, c, m) = stat(s.id.as_str());
                vec![J::from(s.id.as_str()), kb(g[0]), kb(g[1]), kb(g[2]), r(c, 4), r(m, 3)]
            })
            .collect(),
    ));
    for (i, s) in av.iter().enumerate() {
        if let Some((_, o)) = keys.iter().zip(&outs).find(|(k, _)| k.0 == s.id.as_str() && k.1 == 0) {
            let series: Vec<Series> = (0..3)
                .map(|fl| Series {
                    name: format!("{} WAN delay", delays[fl as usize]),
                    points: flow_bins(&o.series, fl, 0.0).into_iter().map(|(t, g)| (t, g / 8.0)).collect(),
                })
                .collect();
            let panel = (b'a' + i as u8) as char;
            out.plots.push((
                format!("fig10{panel}-{}.svg", s.id.as_str()),
                line_chart(
                    &format!("Fig. 10{panel}: {}", s.label.as_str()),
                    "time (s)",
                    "goodput (KB/s)",
                    1e3,
                    &series,
                ),
            ));
        }
    }
    record_activity(&mut out, keys.iter().zip(&outs).map(|(k, o)| (k.0, &o.summary)));
    let has = |id| ran(&schemes, id);
    if has("unshaped") {
        // Inverse relation: the slope of log goodput against log RTT over the three flows (-1:
        // throughput proportional to 1/RTT). RTT = the WAN round trip of each flow's group.
        let (g, _, _) = stat("unshaped");
        let rtts = [10.0f64, 50.0, 150.0];
        let (x, y): (Vec<f64>, Vec<f64>) = rtts.iter().zip(&g).map(|(r, g)| (r.ln(), g.max(1e-9).ln())).unzip();
        let (mx, my) = (mean(&x), mean(&y));
        let slope = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum::<f64>()
            / x.iter().map(|a| (a - mx).powi(2)).sum::<f64>();
        out.measure(
            "no-class-inverse-rtt",
            Measured::new(
                slope,
                "log-log slope",
                format!("{:.0}, {:.0}, {:.0} KB/s at 10, 50, 150 ms", g[0] / 1e3, g[1] / 1e3, g[2] / 1e3),
            ),
        );
    } else {
        out.measure("no-class-inverse-rtt", not_run("log-log slope", "no class"));
    }
    if has("unshaped") && has("class-fifo") {
        let (a, b) = (stat("unshaped").1, stat("class-fifo").1);
        out.measure("cbq-almost-fair", Measured::new(b, "CoV", format!("CoV no class {a:.3}, CBQ {b:.3}")));
    } else {
        out.measure("cbq-almost-fair", not_run("CoV", "no class or CBQ"));
    }
    let mech: Vec<&str> = ["tcr", "postack"].into_iter().filter(|m| has(m)).collect();
    if has("class-fifo") && !mech.is_empty() {
        let cbq = stat("class-fifo").1;
        let c: Vec<(&str, f64)> = mech.iter().map(|m| (*m, stat(m).1)).collect();
        let meas = c.iter().map(|(m, v)| format!("{} {v:.3}", label(m))).collect::<Vec<_>>().join(", ");
        let worst = c.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
        out.measure("mechanisms-remove-unfairness", Measured::new(worst, "CoV", format!("CBQ {cbq:.3}; {meas}")));
    } else {
        out.measure("mechanisms-remove-unfairness", not_run("CoV", "CBQ, TCR or PostACK"));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 11

fn f11(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load_for(exp, ctx)?;
    let fifo = f.usize("fifo_pkts")?;
    let seeds = f.usize("seeds")?.max(1);
    let schemes = f.schemes()?;
    let arr = |key: &str| -> Result<Vec<Tbl>, String> {
        match f.get(key) {
            Some(toml::Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| v.as_table().cloned().ok_or_else(|| f.err(key, "an array of tables", Some(v))))
                .collect(),
            other => Err(f.err(key, "a non-empty array of tables", other)),
        }
    };
    let configs = arr("configs")?;
    let profiles = arr("profiles")?;
    let field = |t: &Tbl, key: &str, k: &str| -> Result<String, String> {
        t.get(k)
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| format!("{}: key `paper.{key}[].{k}`: expected a string", f.file))
    };
    // Optional booleans of a configuration: `both_ways` (the periodic drop applies to the ACKs
    // coming back as well) and `sensitivity` (not one of the paper's configurations: reported and
    // checked by its own claim, left out of the claims about the paper's configurations).
    let flag = |t: &Tbl, k: &str| -> Result<bool, String> {
        match t.get(k) {
            None => Ok(false),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => Err(format!("{}: key `paper.configs[].{k}`: expected true or false, got {v}", f.file)),
        }
    };
    let primary: Vec<&Tbl> = configs.iter().filter(|c| !flag(c, "sensitivity").unwrap_or(false)).collect();
    let pkt = f.packet_bytes();
    let mss = f.mss();
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for c in &configs {
        flag(c, "sensitivity")?;
        let cname = field(c, "configs", "name")?;
        let rate = ackshape_core::units::parse_rate(&field(c, "configs", "class_rate")?)
            .map_err(|e| format!("{}: key `paper.configs[].class_rate`: {e}", f.file))?
            .0;
        let every = c
            .get("drop_every")
            .and_then(|v| v.as_integer())
            .ok_or_else(|| format!("{}: key `paper.configs[].drop_every`: expected an integer", f.file))?;
        let rtt = ackshape_core::units::parse_duration(&field(c, "configs", "rtt")?)
            .map_err(|e| format!("{}: key `paper.configs[].rtt`: {e}", f.file))?
            .as_secs_f64();
        let both_ways = flag(c, "both_ways")?;
        for p in &profiles {
            let pname = field(p, "profiles", "name")?;
            for s in available(&schemes) {
                for k in 0..seeds {
                    let mut v = f.variant();
                    v.set("topology.receiver_access.delay", secs_str(rtt / 2.0));
                    v.set(WAN_LOSS, toml::Value::Table(tbl(&[("kind", "periodic".into()), ("every", every.into())])));
                    if both_ways {
                        v.set("topology.receiver_access.loss_both_ways", true);
                    }
                    v.set("tcp.rto_granularity", field(p, "profiles", "rto_granularity")?);
                    v.set("tcp.min_rto", field(p, "profiles", "min_rto")?);
                    s.apply(&mut v, &shape(&f, rate, fifo))?;
                    jobs.push(Job {
                        label: format!("{cname}, {pname}, {}, seed {k}", s.id.as_str()),
                        variant: v,
                        seed: ctx.seed + k as u64,
                        series: k == 0,
                    });
                    keys.push((cname.clone(), pname.clone(), s.id.as_str(), k, rate));
                }
            }
        }
    }
    let outs = run_jobs(ctx, f.file, &jobs)?;
    let mut out = base_output(exp, &f, &schemes);
    out.notes.push(cost_note(&jobs, &outs));
    let stat = |c: &str, p: &str, s: &str| -> (f64, f64, f64) {
        let runs: Vec<(&Outcome, u64)> =
            keys.iter().zip(&outs).filter(|(k, _)| k.0 == c && k.1 == p && k.2 == s).map(|(k, o)| (o, k.4)).collect();
        let g: Vec<f64> = runs.iter().map(|(o, _)| class_goodput_bytes(&o.summary)).collect();
        let target = runs.first().map(|(_, r)| *r as f64 / 8.0 * mss / pkt).unwrap_or(1.0);
        let to: Vec<f64> =
            runs.iter().map(|(o, _)| o.summary.flows.iter().map(|x| x.timeouts).sum::<u64>() as f64).collect();
        (mean(&g), mean(&g) / target, mean(&to))
    };
    let mut rows = Vec::new();
    for c in &configs {
        let cn = field(c, "configs", "name")?;
        for p in &profiles {
            let pn = field(p, "profiles", "name")?;
            for s in available(&schemes) {
                let (g, frac, to) = stat(&cn, &pn, s.id.as_str());
                rows.push(vec![
                    J::from(cn.clone()),
                    J::from(pn.clone()),
                    J::from(s.id.as_str()),
                    kb(g),
                    r(frac * 100.0, 1),
                    r(to, 1),
                ]);
            }
        }
    }
    out.tables.push(table(
        "fig11",
        &["config", "profile", "scheme", "goodput_KBps", "pct_of_target", "timeouts"],
        rows,
    ));
    // Panels (a)–(d): TCR and PostACK at W_w = 1 and at the captioned W_w = 5, one line per profile.
    let panels = [("a", "Ww1", "tcr"), ("b", "Ww1", "postack"), ("c", "Ww5", "tcr"), ("d", "Ww5", "postack")];
    for (panel, cn, sid) in panels {
        if !ran(&schemes, sid) {
            continue;
        }
        let series: Vec<Series> = keys
            .iter()
            .zip(&outs)
            .filter(|(k, _)| k.0 == cn && k.2 == sid && k.3 == 0)
            .map(|(k, o)| Series {
                name: k.1.clone(),
                points: flow_bins(&o.series, 0, 0.0).into_iter().map(|(t, g)| (t, g / 8.0)).collect(),
            })
            .collect();
        out.plots.push((
            format!("fig11{panel}-{sid}-{cn}.svg"),
            line_chart(&format!("Fig. 11{panel}: {} at {cn}", label(sid)), "time (s)", "goodput (KB/s)", 1e3, &series),
        ));
    }
    record_activity(&mut out, keys.iter().zip(&outs).map(|(k, o)| (k.2, &o.summary)));
    let (lin, coarse) = ("linux", "coarse");
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    if ran(&schemes, "tcr") {
        let (_, fl, tl) = stat("Ww1", lin, "tcr");
        let (_, fc, tc) = stat("Ww1", coarse, "tcr");
        let d =
            format!("W_w = 1: Linux {} ({tl:.0} timeouts), coarse {} ({tc:.0} timeouts) of target", pct(fl), pct(fc));
        out.measure("tcr-tiny-window-linux-best", Measured::new((fl - fc) * 100.0, "points", d.clone()));
        out.measure("tcr-tiny-window-coarse", Measured::new(fc * 100.0, "% of target", d));
        let w5: Vec<(String, f64, f64)> =
            ["Ww3.3", "Ww5"].iter().map(|c| (c.to_string(), stat(c, lin, "tcr").1, stat(c, coarse, "tcr").1)).collect();
        let at5 = w5.iter().find(|x| x.0 == "Ww5").map(|x| (x.1 - x.2) * 100.0).unwrap_or(f64::NAN);
        out.measure(
            "tcr-ww5-coarse-lower",
            Measured::new(
                at5,
                "points",
                w5.iter()
                    .map(|(c, a, b)| format!("{c}: Linux {}, coarse {}", pct(*a), pct(*b)))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        );
    } else {
        for (id, u) in [
            ("tcr-tiny-window-linux-best", "points"),
            ("tcr-tiny-window-coarse", "% of target"),
            ("tcr-ww5-coarse-lower", "points"),
        ] {
            out.measure(id, not_run(u, "TCR"));
        }
    }
    if ran(&schemes, "postack") {
        let mut worst = (String::new(), f64::INFINITY);
        for c in &primary {
            let cn = field(c, "configs", "name")?;
            for p in &profiles {
                let pn = field(p, "profiles", "name")?;
                let fr = stat(&cn, &pn, "postack").1;
                if fr < worst.1 {
                    worst = (format!("{cn}/{pn}"), fr);
                }
            }
        }
        out.measure(
            "postack-keeps-target",
            Measured::new(worst.1 * 100.0, "% of target", format!("lowest {} of target ({})", pct(worst.1), worst.0)),
        );
        // "Regardless of TCP implementations": the timer profile barely moves PostACK's goodput.
        let mut gaps = Vec::new();
        for c in &primary {
            let cn = field(c, "configs", "name")?;
            let (a, b) = (stat(&cn, lin, "postack").1, stat(&cn, coarse, "postack").1);
            gaps.push((cn, a, b));
        }
        let worst_gap = gaps.iter().map(|g| (g.1 - g.2).abs()).fold(0.0, f64::max);
        out.measure(
            "postack-timer-independent",
            Measured::new(
                worst_gap * 100.0,
                "points",
                gaps.iter()
                    .map(|(c, a, b)| format!("{c}: Linux {}, coarse {}", pct(*a), pct(*b)))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        );
    } else {
        out.measure("postack-keeps-target", not_run("% of target", "PostACK"));
        out.measure("postack-timer-independent", not_run("points", "PostACK"));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 12

fn f12(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load_for(exp, ctx)?;
    let rate = f.rate_bps("class_rate")?;
    let fifo = f.usize("fifo_pkts")?;
    let pairs = f.usize("pairs")?.max(1);
    let lr = f.f64s("loss_range")?;
    let rr = f.f64s("rtt_range_ms")?;
    if lr.len() != 2 || rr.len() != 2 {
        return Err(format!("{}: keys `paper.loss_range`, `paper.rtt_range_ms`: expected two numbers each", f.file));
    }
    let schemes = f.schemes()?;
    let warm = f.warmup_secs()?;
    let seeds = f.usize_or("seeds", 1)?.max(1);
    let lerp = |a: f64, b: f64, i: usize| if pairs == 1 { a } else { a + (b - a) * i as f64 / (pairs - 1) as f64 };
    let pts: Vec<(f64, f64)> = (0..pairs).map(|i| (lerp(lr[0], lr[1], i), lerp(rr[0], rr[1], i))).collect();
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for s in available(&schemes) {
        for (i, &(p, rtt)) in pts.iter().enumerate() {
            for k in 0..seeds {
                let mut v = f.variant();
                v.set(WAN_LOSS, loss_table(p));
                v.set("topology.receiver_access.delay", secs_str(rtt / 2e3));
                s.apply(&mut v, &shape(&f, rate, fifo))?;
                jobs.push(Job {
                    label: format!("{}, loss {p:.4}, RTT {rtt:.0} ms, seed {k}", s.id.as_str()),
                    variant: v,
                    // Every (pair, seed) its own seed; the schemes share them (paired runs).
                    seed: ctx.seed + (k * pairs + i) as u64,
                    series: true,
                });
                keys.push((s.id.as_str(), i, k));
            }
        }
    }
    let outs = run_jobs(ctx, f.file, &jobs)?;
    let mut out = base_output(exp, &f, &schemes);
    out.notes.push(cost_note(&jobs, &outs));
    let get = |s: &str, i: usize, k: usize| {
        keys.iter().zip(&outs).find(|(x, _)| x.0 == s && x.1 == i && x.2 == k).map(|(_, o)| o)
    };
    // Per pair: the mean over its seeds.
    let pair_mean = |s: &str, i: usize, m: &dyn Fn(&Outcome) -> f64| {
        mean(&(0..seeds).map(|k| m(get(s, i, k).expect("ran"))).collect::<Vec<_>>())
    };
    let gp = |o: &Outcome| class_goodput_bytes(&o.summary);
    let cv = |o: &Outcome| bin_cov(o, warm);
    let av = available(&schemes);
    let mut cols = vec!["run".to_string(), "loss".into(), "rtt_ms".into()];
    for s in &av {
        cols.push(format!("{}_KBps", s.id.as_str()));
        cols.push(format!("{}_bin_cov", s.id.as_str()));
    }
    let rows = pts
        .iter()
        .enumerate()
        .map(|(i, &(p, rtt))| {
            let mut row = vec![J::from(i + 1), r(p, 5), r(rtt, 1)];
            for s in &av {
                row.extend([kb(pair_mean(s.id.as_str(), i, &gp)), r(pair_mean(s.id.as_str(), i, &cv), 3)]);
            }
            row
        })
        .collect();
    let colr: Vec<&str> = cols.iter().map(String::as_str).collect();
    out.tables.push(table("fig12", &colr, rows));
    let avg = |s: &str| mean(&(0..pairs).map(|i| pair_mean(s, i, &gp)).collect::<Vec<_>>());
    let fluct = |s: &str| mean(&(0..pairs).map(|i| pair_mean(s, i, &cv)).collect::<Vec<_>>());
    // Standard error of the mean paired difference of the CoV (same pair and seed), over all runs.
    let cov_diff_se = |a: &str, b: &str| {
        let d: Vec<f64> = (0..pairs)
            .flat_map(|i| (0..seeds).map(move |k| (i, k)))
            .map(|(i, k)| cv(get(a, i, k).expect("ran")) - cv(get(b, i, k).expect("ran")))
            .collect();
        sem(&d)
    };
    let sa: Vec<Series> = av
        .iter()
        .map(|s| Series {
            name: s.label.clone(),
            points: (0..pairs).map(|i| ((i + 1) as f64, pair_mean(s.id.as_str(), i, &gp))).collect(),
        })
        .collect();
    out.plots.push((
        "fig12a-goodput.svg".into(),
        line_chart("Fig. 12a: average goodput per run", "run (loss and RTT rising)", "goodput (KB/s)", 1e3, &sa),
    ));
    let mid = pairs / 2;
    let sb: Vec<Series> = av
        .iter()
        .map(|s| Series {
            name: s.label.clone(),
            points: flow_bins(&get(s.id.as_str(), mid, 0).expect("ran").series, 0, 0.0)
                .into_iter()
                .map(|(t, g)| (t, g / 8.0))
                .collect(),
        })
        .collect();
    out.plots.push((
        "fig12b-snapshot.svg".into(),
        line_chart(&format!("Fig. 12b: bandwidth snapshot (run {})", mid + 1), "time (s)", "goodput (KB/s)", 1e3, &sb),
    ));
    record_activity(&mut out, keys.iter().zip(&outs).map(|(k, o)| (k.0, &o.summary)));
    let has = |id| ran(&schemes, id);
    let others: Vec<&str> = ["pfq", "postack"].into_iter().filter(|s| has(s)).collect();
    if has("tcr") && !others.is_empty() {
        let t = avg("tcr");
        let best = others.iter().map(|s| avg(s)).fold(f64::NEG_INFINITY, f64::max);
        out.measure(
            "tcr-suffers",
            Measured::new(
                t / best * 100.0,
                "% of the best other",
                format!(
                    "mean goodput TCR {:.1} KB/s; {}",
                    t / 1e3,
                    others.iter().map(|s| format!("{} {:.1}", label(s), avg(s) / 1e3)).collect::<Vec<_>>().join(", ")
                ),
            ),
        );
    } else {
        out.measure("tcr-suffers", not_run("% of the best other", "TCR with PFQ or PostACK"));
    }
    let others: Vec<&str> = ["pfq", "tcr"].into_iter().filter(|s| has(s)).collect();
    if has("postack") && !others.is_empty() {
        let p = fluct("postack");
        let lowest = others.iter().map(|s| fluct(s)).fold(f64::INFINITY, f64::min);
        out.measure(
            "postack-smallest-fluctuation",
            Measured::new(
                p / lowest,
                "ratio",
                format!(
                    "CoV of 1 s bins (mean of {} runs): PostACK {p:.3}; {} (s.e. of the paired difference from PostACK: {})",
                    pairs * seeds,
                    others.iter().map(|s| format!("{} {:.3}", label(s), fluct(s))).collect::<Vec<_>>().join(", "),
                    others
                        .iter()
                        .map(|s| format!("{} {:.3}", label(s), cov_diff_se("postack", s)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        );
    } else {
        out.measure("postack-smallest-fluctuation", not_run("ratio", "PostACK with PFQ or TCR"));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 16

fn f16(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load_for(exp, ctx)?;
    let rate = f.rate_bps("class_rate")?;
    let fifo = f.usize("fifo_pkts")?;
    let losses = f.f64s("loss")?;
    let schemes = f.schemes()?;
    let sp = specs(exp)?;
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for s in available(&schemes) {
        for (i, &p) in losses.iter().enumerate() {
            let mut v = f.variant();
            v.set(WAN_LOSS, loss_table(p));
            s.apply(&mut v, &shape(&f, rate, fifo))?;
            jobs.push(Job {
                label: format!("{}, loss {p}", s.id.as_str()),
                variant: v,
                seed: ctx.seed + i as u64,
                series: false,
            });
            keys.push((s.id.as_str(), p));
        }
    }
    let outs = run_jobs(ctx, f.file, &jobs)?;
    let mut out = base_output(exp, &f, &schemes);
    out.notes.push(cost_note(&jobs, &outs));
    let dw = dw_secs(&f)?;
    let pkt = f.packet_bytes();
    let mss = f.mss();
    let ww = model_edge::ww(rate as f64, dw, pkt);
    // A variant (`tcr/tahoe`) is compared with its base scheme's model.
    let model = |s: &str, p: f64| {
        (if s.split('/').next() == Some("tcr") { model_edge::tcr(p, ww) } else { model_edge::pfq(p, ww) }) * mss / dw
    };
    let sim = |s: &str, p: f64| {
        keys.iter()
            .zip(&outs)
            .find(|(k, _)| k.0 == s && k.1 == p)
            .map(|(_, o)| class_goodput_bytes(&o.summary))
            .unwrap_or(0.0)
    };
    let av = available(&schemes);
    let mut rows = Vec::new();
    for &p in &losses {
        for s in &av {
            let (m, x) = (model(s.id.as_str(), p), sim(s.id.as_str(), p));
            rows.push(vec![
                J::from(s.id.as_str()),
                J::from(p),
                J::from(regime_name(model_edge::regime(p, ww)).to_string()),
                kb(m),
                kb(x),
                r(x / m, 3),
            ]);
        }
    }
    out.tables.push(table("fig16", &["scheme", "loss", "regime", "model_KBps", "sim_KBps", "sim_over_model"], rows));
    out.notes.push(format!("W_w = {ww:.2} packets; model goodput = T × {mss:.0} B / {:.0} ms.", dw * 1e3));
    for (panel, s) in av.iter().enumerate() {
        let ser = vec![
            Series {
                name: format!("model ({})", s.label.as_str()),
                points: losses.iter().map(|&p| (p * 100.0, model(s.id.as_str(), p))).collect(),
            },
            Series {
                name: format!("simulation ({})", s.label.as_str()),
                points: losses.iter().map(|&p| (p * 100.0, sim(s.id.as_str(), p))).collect(),
            },
        ];
        let c = (b'a' + panel as u8) as char;
        out.plots.push((
            format!("fig16{c}-{}.svg", s.id.as_str().replace('/', "-")),
            line_chart(
                &format!("Fig. 16{c}: {} model vs simulation", s.label.as_str()),
                "random loss (%)",
                "goodput (KB/s)",
                1e3,
                &ser,
            ),
        ));
    }
    record_activity(&mut out, keys.iter().zip(&outs).map(|(k, o)| (k.0, &o.summary)));
    // Every scheme the file has claims for; one not run here (quick mode runs fewer) is not assessable.
    let ids: Vec<String> =
        sp.iter().filter_map(|c| c.id.strip_suffix("-model-overestimates").map(str::to_string)).collect();
    for sid in &ids {
        let (over_id, cf_id) = (format!("{sid}-model-overestimates"), format!("{sid}-constant-factor"));
        let Some(s) = av.iter().find(|s| s.id.as_str() == sid) else {
            out.measure(&over_id, not_run("% of loss rates", sid));
            out.measure(&cf_id, not_run("%", sid));
            continue;
        };
        let over = losses.iter().filter(|&&p| model(s.id.as_str(), p) >= sim(s.id.as_str(), p)).count();
        out.measure(
            &over_id,
            Measured::new(
                share(over, losses.len()),
                "% of loss rates",
                format!("model ≥ simulation at {over} of {} loss rates", losses.len()),
            ),
        );
        let mut worst = 0.0f64;
        let mut detail = Vec::new();
        for reg in [model_edge::Regime::Case1, model_edge::Regime::Case2, model_edge::Regime::Case3] {
            let ratios: Vec<f64> = losses
                .iter()
                .filter(|&&p| model_edge::regime(p, ww) == reg)
                .map(|&p| sim(s.id.as_str(), p) / model(s.id.as_str(), p))
                .collect();
            if ratios.len() < 2 {
                continue;
            }
            let m = mean(&ratios);
            let dev = ratios.iter().map(|x| (x / m - 1.0).abs()).fold(0.0, f64::max);
            worst = worst.max(dev);
            detail.push(format!("{}: mean {m:.2}, ±{:.0}%", regime_name(reg), dev * 100.0));
        }
        if detail.is_empty() {
            out.measure(
                &cf_id,
                Measured::gated(
                    "%",
                    "no model regime has two loss rates in this run: no trend to compare",
                    "fewer than two points per regime",
                ),
            );
        } else {
            out.measure(&cf_id, Measured::new(worst * 100.0, "%", format!("sim/model {}", detail.join("; "))));
        }
    }
    Ok(out)
}
