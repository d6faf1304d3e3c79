//! Paper 000 (Wei, Tsao, Lin, "Assessing and Improving TCP Rate Shaping over Edge Gateways"):
//! Fig. 8 (buffer requirement), Fig. 9 (goodput under random loss, with the App. C model),
//! Fig. 10 (fairness), Fig. 11 (robustness across sender RTO timers), Fig. 12 (the live WAN runs,
//! emulated) and Fig. 16 (model vs simulation). Settings, assumptions and tolerances live in
//! `experiments/p0/*.toml`; the schemes are [`super::edge::schemes`].

use super::edge::*;
use super::{Ctx, ExpOutput, Experiment};
use crate::metrics::Summary;
use crate::plot::{line_chart, Series};
use ackshape_core::model_edge;
use serde_json::Value as J;

macro_rules! exp_file {
    ($p:literal) => {
        ($p, include_str!(concat!("../../../../", $p)))
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
    notes.extend(missing_notes(schemes));
    if schemes.iter().any(|(s, w)| s.id.as_str() == "class-fifo" && w.is_none()) {
        notes.push(if crate::middlebox::KINDS.contains(&"gateway") {
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
    let f = ExpFile::load(exp, ctx.quick)?;
    let rate = f.rate_bps("class_rate")?;
    let flows = f.usizes("flows")?;
    let fifos = f.usizes("fifo_pkts")?;
    let schemes = f.schemes()?;
    let near = f.f64("tolerance.near_best")?;
    let small = f.f64("tolerance.small_buffer_pkts")?;
    let slack = f.f64("tolerance.retx_monotone_slack")?;
    let retx_abs = f.f64("tolerance.retx_ratio_abs")?;
    let best_rel = f.f64("tolerance.best_goodput_rel")?;
    let paper_best = f.f64("values.best_goodput_kBps")?;
    let paper_retx = f.f64("values.retx_ratio_at_32_flows_fifo_1")?;
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
    let show = |m: Option<usize>| m.map(|q| q.to_string()).unwrap_or_else(|| format!("> {}", fifos.last().unwrap()));
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
    out.claims.push(claim(
        "best-goodput",
        "the highest class goodput is about 480 KB/s (TCP/IP header overhead below 500 KB/s)",
        format!("{paper_best} KB/s (\"480kbps\", P0-1)"),
        format!("{best:.1} KB/s"),
        format!("within ±{:.0}%", best_rel * 100.0),
        (best - paper_best).abs() <= best_rel * paper_best,
    ));
    let nmax = *flows.iter().max().unwrap();
    let mech: Vec<&str> = ["tcr", "postack"].into_iter().filter(|m| ran(&schemes, m)).collect();
    if !mech.is_empty() {
        out.notes.push(
            "Why the class-tick schemes need more buffer as flows grow: each tick of the class timer (period n·MSS/BW_c) releases one ACK to every flow with one held, so up to n data packets reach the PCDQ together at LAN speed while the class drains one per MSS/BW_c; the PCDQ must hold that burst (the peak data queue with the largest FIFO shows it). Pacing each flow on its own Δ_i = MSS/BW_i (`tcr/per-flow`, paper 001's way) spreads the same releases and needs a few packets. Zero-timer PostACK (P0-A5) keeps about one packet per flow in its per-flow queues, so its buffer grows with n as well. The `*/burst20` schemes (a 20-packet class bucket, as Linux CBQ lets a class burst at line rate; not the paper's setting) test this: the bucket passes part of each tick's burst on at once.".into(),
        );
    }
    if ran(&schemes, "class-fifo") {
        let cbq = min_fifo("class-fifo", nmax);
        let others: Vec<(&str, Option<usize>)> = mech.iter().map(|m| (*m, min_fifo(m, nmax))).collect();
        let cbq_v = cbq.map(|q| q as f64).unwrap_or(f64::INFINITY);
        let holds = cbq_v > small && others.iter().all(|(_, m)| m.map(|q| (q as f64) < cbq_v).unwrap_or(false));
        let mut meas = format!("CBQ needs {} packets", show(cbq));
        for (m, q) in &others {
            meas += &format!(", {} {}", label(m), show(*q));
        }
        out.claims.push(claim(
            "cbq-needs-huge-buffer",
            &format!(
                "at {nmax} flows pure CBQ needs a far larger FIFO than TCR/PostACK for {:.0}% of the best goodput",
                near * 100.0
            ),
            "3^5 = 243 packets at 2^5 flows (TCR, PostACK: < 10)".into(),
            meas,
            format!("CBQ's smallest sufficient FIFO > {small} packets and larger than each mechanism's"),
            holds,
        ));
        let mono: Vec<(usize, String)> = flows
            .iter()
            .filter_map(|&n| {
                let mut pts: Vec<(usize, f64)> =
                    res.iter().filter(|x| x.0 == "class-fifo" && x.1 == n).map(|x| (x.2, x.4)).collect();
                pts.sort_by_key(|p| p.0);
                let bad = pts.windows(2).find(|w| w[1].1 > w[0].1 + slack)?;
                Some((
                    n,
                    format!("{:.1}% at {} → {:.1}% at {}", bad[0].1 * 100.0, bad[0].0, bad[1].1 * 100.0, bad[1].0),
                ))
            })
            .collect();
        out.claims.push(claim(
            "cbq-retx-grows-as-fifo-shrinks",
            "under class-only shaping the retransmission ratio grows as the FIFO shrinks",
            "Fig. 8b (up to 22%)".into(),
            if mono.is_empty() {
                "non-increasing in the FIFO size at every flow count".into()
            } else {
                format!("rises with the FIFO at {}", fmt_list(&mono))
            },
            format!("non-increasing in FIFO size within {:.0} point", slack * 100.0),
            mono.is_empty(),
        ));
        let q1 = *fifos.iter().min().unwrap();
        if let Some(x) = res.iter().find(|x| x.0 == "class-fifo" && x.1 == nmax && x.2 == q1) {
            out.claims.push(claim(
                "cbq-retx-ratio",
                &format!("retransmission ratio with {nmax} flows and a {q1}-packet FIFO under CBQ"),
                format!("{:.0}% (2^5 flows, 1-packet FIFO)", paper_retx * 100.0),
                format!("{:.1}%", x.4 * 100.0),
                format!("within ±{:.0} points", retx_abs * 100.0),
                (x.4 - paper_retx).abs() <= retx_abs,
            ));
        }
        if let Some(x) = res.iter().find(|x| x.0 == "class-fifo/linux22" && x.1 == nmax && x.2 == q1) {
            out.claims.push(claim(
                "cbq-retx-ratio-linux22",
                &format!(
                    "sensitivity (Linux 2.2's RTO formula, the paper's sender stack): retransmission ratio with {nmax} flows and a {q1}-packet FIFO under CBQ"
                ),
                format!("{:.0}% (2^5 flows, 1-packet FIFO)", paper_retx * 100.0),
                format!("{:.1}%", x.4 * 100.0),
                format!("within ±{:.0} points", retx_abs * 100.0),
                (x.4 - paper_retx).abs() <= retx_abs,
            ));
        }
    }
    // Every mechanism scheme that ran: the paper's (one class tick) and the variants.
    let qmax = *fifos.iter().max().unwrap();
    let mechs: Vec<&Scheme> =
        available(&schemes).into_iter().filter(|s| s.id.starts_with("tcr") || s.id.starts_with("postack")).collect();
    for s in mechs {
        let m = s.id.as_str();
        let per: Vec<(usize, String)> = flows.iter().map(|&n| (n, show(min_fifo(m, n)))).collect();
        let ok = flows.iter().all(|&n| min_fifo(m, n).map(|q| q as f64 <= small).unwrap_or(false));
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
        let what = if m == "tcr" || m == "postack" {
            format!("{} (one class tick releasing one ACK per flow, as paper 000 states)", label(m))
        } else {
            s.label.clone()
        };
        out.claims.push(claim(
            &format!("{m}-small-buffer"),
            &format!("{what} reaches {:.0}% of the best goodput with a small FIFO at every flow count", near * 100.0),
            "< 10 packets".into(),
            format!(
                "smallest sufficient FIFO per flow count: {}; retransmitted there: {}; peak data queue with a {qmax}-packet FIFO: {}",
                fmt_list(&per),
                fmt_list(&retx),
                fmt_list(&peak)
            ),
            format!("≤ {small} packets at every flow count"),
            ok,
        ));
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
    crate::metrics::cov(&g)
}

fn f9(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load(exp, ctx.quick)?;
    let rate = f.rate_bps("class_rate")?;
    let fifo = f.usize("fifo_pkts")?;
    let losses = f.f64s("loss")?;
    let seeds = f.usize("seeds")?.max(1);
    let schemes = f.schemes()?;
    let series_loss = f.f64("series_loss")?;
    let spread_tol = f.f64("tolerance.above_4pct_spread")?;
    let pfq_tol = f.f64("tolerance.pfq_postack")?;
    let paper_gain = f.f64("values.postack_gain_over_tcr_at_1pct")?;
    let above = f.f64("values.no_difference_above")?;
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
                J::from(if p > 0.0 { format!("{:?}", model_edge::regime(p, ww)) } else { "no loss".into() }),
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
    let has = |id| ran(&schemes, id);
    if has("tcr") && has("postack") {
        if let Some(&p1) = losses.iter().find(|&&p| (p - 0.01).abs() < 1e-12) {
            let (pm, pe, _) = stat("postack", p1);
            let (tm, te, _) = stat("tcr", p1);
            let gain = (pm - tm) / tm;
            let se = (pe * pe + te * te).sqrt();
            out.claims.push(claim(
                "postack-beats-tcr-at-1pct",
                "at 1% random loss PostACK's goodput exceeds TCR's",
                format!("+{:.0}%", paper_gain * 100.0),
                format!(
                    "{:+.1}% ({:.1} vs {:.1} KB/s, ± {:.1} KB/s s.e. of the difference)",
                    gain * 100.0,
                    pm / 1e3,
                    tm / 1e3,
                    se / 1e3
                ),
                "PostACK − TCR > 2 standard errors of the difference (the 10% itself is reported, not required)".into(),
                pm - tm > 2.0 * se,
            ));
            let mg = (model(p1, false) - model(p1, true)) / model(p1, true);
            out.claims.push(claim(
                "model-agrees-at-1pct",
                "App. C explains the gain: PFQ/PostACK above TCR at 1% loss",
                format!("model +{:.1}% at W_w = {ww:.1} (P0-14: the paper's +10% needs a larger W_w)", mg * 100.0),
                format!("simulation {:+.1}%", gain * 100.0),
                "same sign as the model".into(),
                (gain > 0.0) == (mg > 0.0),
            ));
        }
        // "Obviously outperforms": PostACK is never significantly below TCR in (0, 4%)
        // (differences within 2 standard errors are ties) and is significantly above somewhere.
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
        out.claims.push(claim(
            "postack-above-tcr-below-4pct",
            "below 4% loss PostACK outperforms TCR",
            "\"obviously outperforms\"".into(),
            format!(
                "significantly above at {} of {} loss rates ({}); significantly below at {}",
                better.len(),
                below.len(),
                better.join(", "),
                if worse.is_empty() { "none".to_string() } else { worse.join(", ") }
            ),
            "never more than 2 s.e. below TCR, and more than 2 s.e. above at some loss rate in (0, 4%)".into(),
            worse.is_empty() && !better.is_empty(),
        ));
        let cv = |p: f64| (stat("postack", p).2, stat("tcr", p).2);
        if losses.iter().any(|&p| (p - series_loss).abs() < 1e-12) {
            let (a, b) = cv(series_loss);
            out.claims.push(claim(
                "postack-steadier",
                &format!("at {:.1}% loss PostACK's goodput fluctuates less than TCR's", series_loss * 100.0),
                "Fig. 9a–c".into(),
                format!("CoV of 1 s bins: PostACK {a:.3}, TCR {b:.3}"),
                "PostACK's CoV < TCR's".into(),
                a < b,
            ));
        }
    }
    let trio: Vec<&str> = ["pfq", "tcr", "postack"].into_iter().filter(|s| has(s)).collect();
    if trio.len() >= 2 {
        let hi: Vec<f64> = losses.iter().copied().filter(|&p| p > above).collect();
        // "No significant difference": every pair within the tolerance of their mean, or within
        // 2 standard errors of their difference (seed noise).
        let mut worst: (f64, f64, bool) = (0.0, 0.0, true);
        for &p in &hi {
            let st: Vec<(f64, f64)> = trio.iter().map(|s| (stat(s, p).0, stat(s, p).1)).collect();
            let m = mean(&st.iter().map(|x| x.0).collect::<Vec<_>>());
            for i in 0..st.len() {
                for j in i + 1..st.len() {
                    let d = (st[i].0 - st[j].0).abs();
                    let se = (st[i].1.powi(2) + st[j].1.powi(2)).sqrt();
                    let ok = d <= spread_tol * m || d <= 2.0 * se;
                    if d / m > worst.1 {
                        worst = (p, d / m, worst.2 && ok);
                    } else {
                        worst.2 &= ok;
                    }
                }
            }
        }
        if !hi.is_empty() {
            out.claims.push(claim(
                "no-difference-above-4pct",
                &format!(
                    "beyond 4% loss {} do not differ significantly",
                    trio.iter().map(|s| label(s)).collect::<Vec<_>>().join(", ")
                ),
                "no significant difference".into(),
                format!(
                    "largest pairwise difference {:.1}% of the mean (at {:.0}% loss)",
                    worst.1 * 100.0,
                    worst.0 * 100.0
                ),
                format!(
                    "every pair within {:.0}% of the mean or within 2 s.e. of the difference, at every loss rate > 4%",
                    spread_tol * 100.0
                ),
                worst.2,
            ));
        }
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
        out.claims.push(claim(
            "postack-like-pfq",
            "below 4% loss PostACK keeps PFQ's goodput (the same TCP-friendliness)",
            "PostACK ≈ PFQ".into(),
            format!("largest difference {:.1}% (at {:.1}% loss)", worst.1 * 100.0, worst.0 * 100.0),
            format!("within {:.0}% at every loss rate < 4%", pfq_tol * 100.0),
            worst.1 <= pfq_tol,
        ));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 10

fn f10(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load(exp, ctx.quick)?;
    let rate = f.rate_bps("class_rate")?;
    let fifo = f.usize("fifo_pkts")?;
    let seeds = f.usize("seeds")?.max(1);
    let tol = f.f64("tolerance.tcr_postack_cov")?;
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
    let has = |id| ran(&schemes, id);
    if has("unshaped") {
        let (g, _, _) = stat("unshaped");
        out.claims.push(claim(
            "no-class-inverse-rtt",
            "without a class, throughput is inversely related to RTT",
            "Fig. 10a".into(),
            format!("{:.0} > {:.0} > {:.0} KB/s", g[0] / 1e3, g[1] / 1e3, g[2] / 1e3),
            "goodput strictly decreasing with WAN delay".into(),
            g[0] > g[1] && g[1] > g[2],
        ));
    }
    if has("unshaped") && has("class-fifo") {
        let (a, b) = (stat("unshaped").1, stat("class-fifo").1);
        out.claims.push(claim(
            "cbq-almost-fair",
            "a shared class FIFO makes the flows almost fair (its delay dominates every RTT)",
            "Fig. 10b".into(),
            format!("CoV no class {a:.3}, CBQ {b:.3}"),
            "CBQ's CoV < no class's".into(),
            b < a,
        ));
    }
    let mech: Vec<&str> = ["tcr", "postack"].into_iter().filter(|m| has(m)).collect();
    if has("class-fifo") && !mech.is_empty() {
        let cbq = stat("class-fifo").1;
        let c: Vec<(&str, f64)> = mech.iter().map(|m| (*m, stat(m).1)).collect();
        let meas = c.iter().map(|(m, v)| format!("{} {v:.3}", label(m))).collect::<Vec<_>>().join(", ");
        out.claims.push(claim(
            "mechanisms-remove-unfairness",
            "TCR and PostACK remove the remaining unfairness (CoV: no class > CBQ > TCR ≈ PostACK)",
            "Fig. 10c, 10d".into(),
            format!("CBQ {cbq:.3}; {meas}"),
            format!("each below CBQ's CoV and ≤ {tol}"),
            c.iter().all(|(_, v)| *v < cbq && *v <= tol),
        ));
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 11

fn f11(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load(exp, ctx.quick)?;
    let fifo = f.usize("fifo_pkts")?;
    let seeds = f.usize("seeds")?.max(1);
    let schemes = f.schemes()?;
    let far = f.f64("tolerance.far_below")?;
    let better = f.f64("tolerance.linux_better")?;
    let near = f.f64("tolerance.near_target")?;
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
    let (lin, coarse) = ("linux", "coarse");
    if ran(&schemes, "tcr") {
        let (_, fl, _) = stat("Ww1", lin, "tcr");
        let (_, fc, _) = stat("Ww1", coarse, "tcr");
        out.claims.push(claim(
            "tcr-tiny-window-coarse",
            "TCR at W_w = 1: a coarse-timer sender falls far below the target (Tiny-Window effect)",
            "Solaris \"performs badly\" (Fig. 11a)".into(),
            format!("coarse {:.0}% of target", fc * 100.0),
            format!("< {:.0}% of target", far * 100.0),
            fc < far,
        ));
        out.claims.push(claim(
            "tcr-tiny-window-linux-best",
            "TCR at W_w = 1: the fine-timer (Linux) sender does best",
            "Linux has the best performance (Fig. 11a)".into(),
            format!("Linux {:.0}% vs coarse {:.0}% of target", fl * 100.0, fc * 100.0),
            format!("Linux ≥ coarse × {:.2}", 1.0 + better),
            fl >= fc * (1.0 + better),
        ));
        let w5: Vec<(String, f64, f64)> =
            ["Ww3.3", "Ww5"].iter().map(|c| (c.to_string(), stat(c, lin, "tcr").1, stat(c, coarse, "tcr").1)).collect();
        out.claims.push(claim(
            "tcr-ww5-coarse-lower",
            "TCR at W_w > 4: coarse-timer senders are still slightly lower",
            "Windows 2000 and Solaris slightly lower (Fig. 11c)".into(),
            w5.iter()
                .map(|(c, a, b)| format!("{c}: Linux {:.0}%, coarse {:.0}%", a * 100.0, b * 100.0))
                .collect::<Vec<_>>()
                .join("; "),
            "coarse < Linux at the captioned W_w = 5".into(),
            w5.iter().find(|x| x.0 == "Ww5").map(|x| x.2 < x.1).unwrap_or(false),
        ));
        // Sensitivity: the WAN emulator drops every k-th packet in both directions (unstated).
        for c in
            configs.iter().filter(|c| flag(c, "sensitivity").unwrap_or(false) && flag(c, "both_ways").unwrap_or(false))
        {
            let cn = field(c, "configs", "name")?;
            let (_, fl, tl) = stat(&cn, lin, "tcr");
            let (_, fc, tc) = stat(&cn, coarse, "tcr");
            out.claims.push(claim(
                "tcr-tiny-window-both-ways",
                &format!("sensitivity ({cn}: the periodic drop hits the ACKs too): TCR at W_w = 1, a coarse-timer sender falls far below the target while the Linux sender does best"),
                "Solaris \"performs badly\", Linux best (Fig. 11a)".into(),
                format!(
                    "coarse {:.0}% ({tc:.0} timeouts), Linux {:.0}% ({tl:.0} timeouts) of target",
                    fc * 100.0,
                    fl * 100.0
                ),
                format!("coarse < {:.0}% of target and Linux ≥ coarse × {:.2}", far * 100.0, 1.0 + better),
                fc < far && fl >= fc * (1.0 + better),
            ));
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
        out.claims.push(claim(
            "postack-keeps-target",
            "PostACK keeps the target rate regardless of the sender's timers",
            "Fig. 11b, 11d".into(),
            format!("lowest {:.0}% of target ({})", worst.1 * 100.0, worst.0),
            format!("≥ {:.0}% of target in every configuration and profile", near * 100.0),
            worst.1 >= near,
        ));
        // "Regardless of TCP implementations": the timer profile barely moves PostACK's goodput.
        let indep = f.f64("tolerance.timer_independent")?;
        let mut gaps = Vec::new();
        for c in &primary {
            let cn = field(c, "configs", "name")?;
            let (a, b) = (stat(&cn, lin, "postack").1, stat(&cn, coarse, "postack").1);
            gaps.push((cn, a, b));
        }
        let worst_gap = gaps.iter().map(|g| (g.1 - g.2).abs()).fold(0.0, f64::max);
        out.claims.push(claim(
            "postack-timer-independent",
            "PostACK's goodput does not depend on the sender's RTO timer",
            "Fig. 11b, 11d (\"regardless of TCP implementations\")".into(),
            gaps.iter()
                .map(|(c, a, b)| format!("{c}: Linux {:.0}%, coarse {:.0}%", a * 100.0, b * 100.0))
                .collect::<Vec<_>>()
                .join("; "),
            format!("Linux and coarse within {:.0} points of target in every configuration", indep * 100.0),
            worst_gap <= indep,
        ));
    }
    if ran(&schemes, "postack") && ran(&schemes, "pfq") {
        out.notes.push(
            "Why PostACK stays below target at W_w = 1 even with a fine timer (its senders see no timeouts): each class slot releases at most one held ACK per flow (Fig. 4), whatever ACK it is. After a loss the sender's fast recovery sends nothing new until its pipe falls below the halved window, about W/2 − 3 duplicate ACKs later; those duplicates come back one per 150 ms slot and the class has nothing queued to fill the slots: the segments that triggered them have already left the class (held ACKs are not work the class can do during the pause; PFQ's queued data is). Traced (seed 1, coarse profile): in steady state W ≈ 8–9 segments and 2–3 slots idle per loss (one loss per ≈ 6.3 s), ≈ 6–7% of the target; in the first seconds of the window the start-up transient adds a longer pause (slow start behind held ACKs reaches the 22-segment rwnd before the first loss is seen). The cost grows with W/W_w and the loss rate.".into(),
        );
    }
    if ran(&schemes, "tcr") {
        out.notes.push(
            "TCR's Tiny-Window cost follows the paper's own arithmetic: one lost data packet in 40 at 10 KB/s (≈ 6.7 packets/s) is one timeout per 6 s, and the coarse timer fires 1.0–1.5 s after the lost packet was sent (RTO ≥ 1 s on a 500 ms tick; traced gaps 1.3–1.4 s), so the coarse sender loses about 16% of the target, not more: below 80% needs more than one timeout per 40 data packets, e.g. the periodic drop hitting the ACKs as well (Ww1-both: a lost ACK of a one-segment window is a timeout too). At W_w ≥ 3.3 every periodic loss of data is repaired by fast retransmit (no timeouts), so sender profiles that differ only in their RTO timers cannot differ there.".into(),
        );
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 12

fn f12(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load(exp, ctx.quick)?;
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
    let has = |id| ran(&schemes, id);
    if has("tcr") {
        let others: Vec<&str> = ["pfq", "postack"].into_iter().filter(|s| has(s)).collect();
        if !others.is_empty() {
            let t = avg("tcr");
            out.claims.push(claim(
                "tcr-suffers",
                "TCR's throughput suffers even under slight Internet losses",
                "Fig. 12a".into(),
                format!(
                    "mean goodput TCR {:.1} KB/s; {}",
                    t / 1e3,
                    others.iter().map(|s| format!("{} {:.1}", label(s), avg(s) / 1e3)).collect::<Vec<_>>().join(", ")
                ),
                "TCR below each of the others".into(),
                others.iter().all(|s| t < avg(s)),
            ));
        }
    }
    if has("postack") {
        let others: Vec<&str> = ["pfq", "tcr"].into_iter().filter(|s| has(s)).collect();
        if !others.is_empty() {
            let p = fluct("postack");
            out.claims.push(claim(
                "postack-smallest-fluctuation",
                "PostACK has the smallest rate fluctuation",
                "Fig. 12b".into(),
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
                "PostACK's below each of the others".into(),
                others.iter().all(|s| p < fluct(s)),
            ));
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------ Fig. 16

fn f16(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::load(exp, ctx.quick)?;
    let rate = f.rate_bps("class_rate")?;
    let fifo = f.usize("fifo_pkts")?;
    let losses = f.f64s("loss")?;
    let schemes = f.schemes()?;
    let share = f.f64("tolerance.overestimate_share")?;
    let cf = f.f64("tolerance.constant_factor")?;
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
                J::from(format!("{:?}", model_edge::regime(p, ww))),
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
    for s in &av {
        let over = losses.iter().filter(|&&p| model(s.id.as_str(), p) >= sim(s.id.as_str(), p)).count();
        let frac = over as f64 / losses.len() as f64;
        out.claims.push(claim(
            &format!("{}-model-overestimates", s.id.as_str()),
            &format!("the model overestimates the simulated {} goodput", s.label.as_str()),
            "\"overestimate … by some constant factor\"".into(),
            format!("model ≥ simulation at {over} of {} loss rates", losses.len()),
            format!("at ≥ {:.0}% of the points", share * 100.0),
            frac >= share,
        ));
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
            detail.push(format!("{reg:?}: mean {m:.2}, ±{:.0}%", dev * 100.0));
        }
        if !detail.is_empty() {
            out.claims.push(claim(
                &format!("{}-constant-factor", s.id.as_str()),
                &format!(
                    "{}: simulation follows the model's trend within each regime (a constant factor)",
                    s.label.as_str()
                ),
                "Fig. 16: trends follow the valid portion of each case".into(),
                format!("sim/model {}", detail.join("; ")),
                format!("within ±{:.0}% of its mean inside each regime", cf * 100.0),
                worst <= cf,
            ));
        }
    }
    Ok(out)
}
