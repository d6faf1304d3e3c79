//! Paper 002 (Park et al., ACKs-first variable-size queuing, Comput. Commun. 2010): the
//! interference problem on an ADSL link (P2-F3, P2-S2b), AFVQ on that link (P2-F8), the
//! asymmetry-ratio and Internet-delay sweeps of the five disciplines (P2-F9, P2-F10) and the
//! analytic model's Theorem 1 (P2-F11). Experiment files: `experiments/p2/`.
//!
//! Utilization is per direction, goodput of the TCP flows whose data cross it over its raw rate
//! (`Summary::asym_links`); the sweeps average it over seeds first, then form the aggregated
//! utilization U_u + U_d and the variance of {U_u, U_d} (population form, sample form beside it:
//! trap P2-10).

use crate::claims::{self, ClaimSpec};
use crate::{Ctx, ExpFile, ExpOutput, Experiment, Measured, SimJob, Table};
use ackshape_core::model;
use ackshape_core::model_afvq::{self, AfvqModelInput, LinkParams};
use ackshape_sim::keypath::get_path;
use ackshape_sim::metrics::Summary;
use ackshape_sim::plot::{xy_chart, Curve, XyChart};
use ackshape_sim::run::fmt_rate;
use ackshape_sim::stats::mean_sd;
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;

/// The experiments of paper 002.
pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "P2-F3",
            title: "Two-way TCP on an ADSL link with a FIFO: the upload collapses (Fig. 3)",
            file: "experiments/p2/f3.toml",
            text: include_str!("../../../experiments/p2/f3.toml"),
            run: run_f3,
        },
        Experiment {
            id: "P2-S2b",
            title: "Uplink FIFO 100 -> 200 packets: the download suffers instead (§2.1)",
            file: "experiments/p2/s2b.toml",
            text: include_str!("../../../experiments/p2/s2b.toml"),
            run: run_s2b,
        },
        Experiment {
            id: "P2-F8",
            title: "AFVQ on the ADSL link: both directions near their raw rates (Fig. 8)",
            file: "experiments/p2/f8.toml",
            text: include_str!("../../../experiments/p2/f8.toml"),
            run: run_f8,
        },
        Experiment {
            id: "P2-F9",
            title: "Aggregated utilization and variance vs asymmetry ratio, five disciplines (Fig. 9)",
            file: "experiments/p2/f9.toml",
            text: include_str!("../../../experiments/p2/f9.toml"),
            run: run_sweep,
        },
        Experiment {
            id: "P2-F10",
            title: "Aggregated utilization and variance vs Internet delay, five disciplines (Fig. 10)",
            file: "experiments/p2/f10.toml",
            text: include_str!("../../../experiments/p2/f10.toml"),
            run: run_sweep,
        },
        Experiment {
            id: "P2-F11",
            title:
                "The two-way model: one root in (0, mu), rising as ACK delay and queued ACKs fall (Fig. 11, Theorem 1)",
            file: "experiments/p2/f10.toml",
            text: include_str!("../../../experiments/p2/f10.toml"),
            run: run_f11,
        },
    ]
}

// ---------------------------------------------------------------------------------------------
// Claims as the experiment files state them.

/// The file's claims (`[[paper.claims]]`) of one experiment: the code reads their measurement
/// parameters (`params`) and, for the sensitivity tables, judges a variant's measurement as the claim
/// would.
struct Claims {
    file: String,
    specs: Vec<ClaimSpec>,
}

impl Claims {
    fn read(f: &ExpFile, exp: &Experiment) -> Result<Claims, String> {
        Ok(Claims { file: f.file.clone(), specs: claims::specs(exp.text, exp.file, exp.id)? })
    }
    /// A measurement parameter of claim `id` (`params.KEY`).
    fn p(&self, id: &str, key: &str) -> Result<f64, String> {
        claims::param(&self.specs, &self.file, id, key)
    }
    /// The claim's spec, if this experiment checks it.
    fn spec(&self, id: &str) -> Option<&ClaimSpec> {
        self.specs.iter().find(|c| c.id == id)
    }
    /// `holds`/`fails` for a variant's measurement, as the claim would judge it (tables only).
    fn judge(&self, id: &str, m: &Measured) -> &'static str {
        match self.spec(id) {
            Some(_) if m.gate.is_some() || !m.value.is_finite() => "not assessable",
            Some(c) if c.check.holds(m.value, c.paper_value, c.tolerance) => "holds",
            Some(_) => "fails",
            None => "not checked",
        }
    }
}

/// ACKs an asymmetric-link discipline handled as its own class (served or dropped from its ACK
/// class) on both directions of `link`, if that discipline is `kind`: what the mechanism did.
fn acks_handled(s: &Summary, link: &str) -> (String, f64) {
    let Some(a) = s.asym_link(link) else { return (String::new(), 0.0) };
    let mut kind = String::new();
    let mut n = 0.0;
    for l in [s.link(&a.up), s.link(&a.down)].into_iter().flatten() {
        if let Some(c) = &l.classes {
            kind = c.kind.clone();
            n += (c.ack.dequeued + c.ack.dropped) as f64;
        }
    }
    (kind, n)
}

// ---------------------------------------------------------------------------------------------
// Building runs.

/// The `[reproduce]` keys every P2 experiment has.
fn link_index(f: &ExpFile, link: &str) -> Result<usize, String> {
    let links = get_path(&f.table, "topology.links")
        .and_then(|v| v.as_array())
        .ok_or_else(|| format!("{}: key `topology.links`: expected a graph topology with named links", f.file))?;
    links
        .iter()
        .position(|l| l.get("name").and_then(|n| n.as_str()) == Some(link))
        .ok_or_else(|| format!("{}: key `reproduce.link`: no link named {link:?} in topology.links", f.file))
}

/// Rewrite `link.` (the asymmetric link) in a dotted path.
fn expand(path: &str, li: usize) -> String {
    match path.strip_prefix("link.") {
        Some(rest) => format!("topology.links[{li}].{rest}"),
        None => path.to_string(),
    }
}

fn s(v: &str) -> toml::Value {
    toml::Value::String(v.to_string())
}

fn rate_str(bps: f64) -> String {
    format!("{}bit/s", bps.round() as u64)
}

/// The TOML spec of discipline `name` for a direction of `rate` whose opposite runs at `rev`;
/// queues hold `limit` packets; `afvq` adds keys to AFVQ's spec (e.g. measured s_max, n_thr).
fn disc_spec(name: &str, rate: f64, rev: f64, limit: usize, afvq: &toml::Table) -> Result<toml::Value, String> {
    let lim = limit as i64;
    let mut t = toml::Table::new();
    t.insert("kind".into(), s(name));
    match name {
        "fifo" => {
            t.insert("limit_pkts".into(), lim.into());
        }
        "acks-first" | "acq" => {
            t.insert("ack_limit_pkts".into(), lim.into());
            t.insert("data_limit_pkts".into(), lim.into());
            if name == "acq" {
                t.insert("rate_bps".into(), (rate.round() as i64).into());
                t.insert("reverse_rate_bps".into(), (rev.round() as i64).into());
            }
        }
        "ack-filter-classic" | "ack-filter-cake" => {
            t.insert("limit_pkts".into(), lim.into());
        }
        "afvq" => {
            t.insert("data_limit_pkts".into(), lim.into());
            t.insert("non_tcp_limit_pkts".into(), lim.into());
            for (k, v) in afvq {
                t.insert(k.clone(), v.clone());
            }
        }
        other => return Err(format!("unknown discipline {other:?}")),
    }
    Ok(toml::Value::Table(t))
}

/// Display name of a discipline.
fn disc_label(name: &str) -> &str {
    match name {
        "fifo" => "FIFO",
        "acks-first" => "ACKs-first",
        "ack-filter-classic" => "ACK filter",
        "ack-filter-cake" => "ACK filter (CAKE)",
        "acq" => "ACQ",
        "afvq" => "AFVQ",
        o => o,
    }
}

/// Palette index per discipline, the same in every plot.
fn disc_color(name: &str) -> usize {
    match name {
        "fifo" => 7,
        "acks-first" => 1,
        "ack-filter-classic" => 2,
        "acq" => 4,
        "afvq" => 3,
        _ => 0,
    }
}

/// What one run contributes: per-direction utilization and the model's inputs.
#[derive(Clone, Debug, Default)]
struct Point {
    uu: f64,
    ud: f64,
    /// Utilization from throughput (retransmissions included).
    uu_thr: f64,
    ud_thr: f64,
    /// Queueing delay of ACKs in the uplink (download's ACKs) and downlink (upload's ACKs), s.
    q_ack_up_s: f64,
    q_ack_down_s: f64,
    /// ACKs queued on average in the uplink / downlink queue.
    n_ack_up: f64,
    n_ack_down: f64,
    /// ACKs dropped by the uplink discipline / ACKs arriving there.
    ack_drop_up: f64,
    /// Max ACK queue and average data queue per direction (AFVQ's parameter rule, P2-11).
    ack_max: [f64; 2],
    data_avg: [f64; 2],
    /// Busy fraction of each direction and the share of it that carried ACKs and headers.
    busy: [f64; 2],
    ack_share: [f64; 2],
    /// P2-10's other reading: the larger of the two directions' variances of utilization over
    /// the 1-s bins of the window (population form).
    tvar: f64,
    /// The link's asymmetric-link discipline and the ACKs it handled as its own class.
    kind: String,
    acks_handled: f64,
}

/// The larger of the upload's and the download's population variance of utilization over the
/// goodput bins inside the measurement window.
fn time_bin_variance(s: &Summary, series: &[(f64, u32, f64)], link: &str, up_src: &str) -> f64 {
    let Some(a) = s.asym_link(link) else { return 0.0 };
    let from = s.scenario.measure_from_s;
    let mut bins: std::collections::BTreeMap<u64, [f64; 2]> = std::collections::BTreeMap::new();
    for &(t_end, flow, g) in series {
        let Some(fl) = s.flows.get(flow as usize) else { continue };
        if fl.cc == "udp" || t_end <= from + 1e-9 {
            continue;
        }
        let up = fl.src == up_src;
        let e = bins.entry((t_end * 1e6).round() as u64).or_insert([0.0; 2]);
        e[usize::from(!up)] += g / if up { a.up_rate_bps as f64 } else { a.down_rate_bps as f64 };
    }
    let var = |k: usize| {
        let x: Vec<f64> = bins.values().map(|b| b[k]).collect();
        let n = x.len().max(1) as f64;
        let m = x.iter().sum::<f64>() / n;
        x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n
    };
    var(0).max(var(1))
}

/// `hdr`: bytes of TCP/IP header per packet (a pure ACK's size), 40 or 52 with timestamps.
fn point_of(s: &Summary, link: &str, up_src: &str, hdr: f64) -> Result<Point, String> {
    let a = s.asym_link(link).ok_or_else(|| format!("no asymmetric-link metrics for {link:?}"))?;
    let (up, down) = (s.link(&a.up), s.link(&a.down));
    let (Some(up), Some(down)) = (up, down) else { return Err(format!("link {link:?} has no two directions")) };
    let thr = |upload: bool| -> f64 {
        s.flows.iter().filter(|f| f.cc != "udp" && (f.src == up_src) == upload).map(|f| f.throughput_bps).sum()
    };
    let win = (s.scenario.duration_s - s.scenario.measure_from_s).max(1e-9);
    let ack_bits = |l: &ackshape_sim::metrics::LinkSummary| {
        l.classes.as_ref().map(|c| c.ack.dequeued as f64 * hdr * 8.0 / win).unwrap_or(0.0)
    };
    let cls = |l: &ackshape_sim::metrics::LinkSummary| l.classes.clone().unwrap_or_default();
    let (cu, cd) = (cls(up), cls(down));
    Ok(Point {
        uu: a.up_utilization,
        ud: a.down_utilization,
        uu_thr: thr(true) / a.up_rate_bps as f64,
        ud_thr: thr(false) / a.down_rate_bps as f64,
        q_ack_up_s: cu.ack.queue_delay_avg_s,
        q_ack_down_s: cd.ack.queue_delay_avg_s,
        n_ack_up: cu.ack.queue_avg_pkts,
        n_ack_down: cd.ack.queue_avg_pkts,
        ack_drop_up: if cu.ack.arrived > 0 { cu.ack.dropped as f64 / cu.ack.arrived as f64 } else { 0.0 },
        ack_max: [cu.ack.queue_max_pkts as f64, cd.ack.queue_max_pkts as f64],
        data_avg: [cu.data.queue_avg_pkts, cd.data.queue_avg_pkts],
        busy: [up.utilization, down.utilization],
        ack_share: [ack_bits(up) / up.rate_bps as f64, ack_bits(down) / down.rate_bps as f64],
        tvar: 0.0,
        kind: acks_handled(s, link).0,
        acks_handled: acks_handled(s, link).1,
    })
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Duration and warm-up edits for quick mode (`[reproduce] quick_duration`, `quick_warmup`).
fn quick_edits(quick: bool, duration: &str, warmup: &str) -> Vec<(String, toml::Value)> {
    if quick {
        vec![("duration".into(), s(duration)), ("warmup".into(), s(warmup))]
    } else {
        Vec::new()
    }
}

fn job(f: &ExpFile, label: String, edits: &[(String, toml::Value)], seed: u64) -> Result<SimJob, String> {
    let doc = f.doc_with(edits).map_err(|e| format!("{e} (run {label})"))?;
    SimJob::new(label.clone(), doc, &f.file, seed).map_err(|e| format!("{e} (run {label})"))
}

// ---------------------------------------------------------------------------------------------
// P2-F3 and P2-S2b: the ADSL link with FIFOs.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdslCfg {
    link: String,
    uplink_source: String,
    up_queues: Vec<usize>,
    down_queues: Vec<usize>,
    quick_down_queues: Vec<usize>,
    quick_duration: String,
    quick_warmup: String,
}

/// (uplink FIFO, downlink queue, upload alone, download alone, upload both, download both),
/// goodput in bit/s.
type AdslRow = (usize, usize, f64, f64, f64, f64);

/// Goodput (up, down) in bit/s for each case, by (uplink queue, downlink queue).
struct AdslResults {
    rows: Vec<AdslRow>,
    assumed_down_q: usize,
}

impl AdslResults {
    fn at(&self, up_q: usize) -> Option<&AdslRow> {
        self.rows.iter().find(|r| r.0 == up_q && r.1 == self.assumed_down_q)
    }
}

/// Run the three cases (upload alone, download alone, both) for every uplink FIFO of `cfg` and
/// every downlink queue of `downs`, on file `f` (possibly edited by a variant).
fn adsl_rows(
    f: &ExpFile,
    cfg: &AdslCfg,
    li: usize,
    downs: &[usize],
    quick: &[(String, toml::Value)],
    label: &str,
    ctx: &mut Ctx,
) -> Result<Vec<AdslRow>, String> {
    let flows = get_path(&f.table, "flows").and_then(|v| v.as_array()).cloned().unwrap_or_default();
    let only = |upload: bool| -> toml::Value {
        toml::Value::Array(
            flows
                .iter()
                .filter(|fl| (fl.get("from").and_then(|v| v.as_str()) == Some(cfg.uplink_source.as_str())) == upload)
                .cloned()
                .collect(),
        )
    };
    let mut jobs = Vec::new();
    let mut keys = Vec::new();
    for &uq in &cfg.up_queues {
        for &dq in downs {
            for case in 0..3 {
                let mut e = quick.to_vec();
                e.push((format!("topology.links[{li}].qdisc"), disc_spec("fifo", 0.0, 0.0, uq, &toml::Table::new())?));
                e.push((
                    format!("topology.links[{li}].reverse.qdisc"),
                    disc_spec("fifo", 0.0, 0.0, dq, &toml::Table::new())?,
                ));
                match case {
                    0 => e.push(("flows".into(), only(true))),
                    1 => e.push(("flows".into(), only(false))),
                    _ => {}
                }
                jobs.push(job(f, format!("{label}up FIFO {uq}, down FIFO {dq}, case {case}"), &e, ctx.seed)?);
                keys.push((uq, dq, case));
            }
        }
    }
    let res = ctx.run_sims(&jobs);
    let mut rows = Vec::new();
    for &uq in &cfg.up_queues {
        for &dq in downs {
            let mut v = [0.0; 6];
            for (k, r) in keys.iter().zip(&res) {
                if k.0 != uq || k.1 != dq {
                    continue;
                }
                let s = r.as_ref().map_err(|e| e.clone())?;
                let g = |upload: bool| -> f64 {
                    s.flows.iter().filter(|fl| (fl.src == cfg.uplink_source) == upload).map(|fl| fl.goodput_bps).sum()
                };
                match k.2 {
                    0 => v[0] = g(true),
                    1 => v[1] = g(false),
                    _ => {
                        v[2] = g(true);
                        v[3] = g(false);
                    }
                }
            }
            rows.push((uq, dq, v[0], v[1], v[2], v[3]));
        }
    }
    Ok(rows)
}

fn run_adsl(f: &ExpFile, ctx: &mut Ctx) -> Result<(AdslCfg, AdslResults), String> {
    let cfg: AdslCfg = f.section("reproduce")?;
    let li = link_index(f, &cfg.link)?;
    let assumed_down_q = get_path(&f.table, &format!("topology.links[{li}].reverse.qdisc.limit_pkts"))
        .and_then(|v| v.as_integer())
        .ok_or_else(|| {
            format!(
                "{}: key `topology.links[{li}].reverse.qdisc.limit_pkts`: expected the assumed downlink FIFO size",
                f.file
            )
        })? as usize;
    let mut downs = if ctx.quick { cfg.quick_down_queues.clone() } else { cfg.down_queues.clone() };
    if !downs.contains(&assumed_down_q) {
        downs.push(assumed_down_q);
    }
    let quick = quick_edits(ctx.quick, &cfg.quick_duration, &cfg.quick_warmup);
    let rows = adsl_rows(f, &cfg, li, &downs, &quick, "", ctx)?;
    Ok((cfg, AdslResults { rows, assumed_down_q }))
}

/// Which direction a configuration hits: the one below `0.9` of alone, the worse of the two.
fn adsl_hit(ru: f64, rd: f64) -> &'static str {
    if ru.min(rd) >= 0.9 {
        "neither"
    } else if ru < rd {
        "upload"
    } else {
        "download"
    }
}

fn adsl_table(r: &AdslResults) -> Table {
    Table {
        name: "cases".into(),
        columns: [
            "uplink FIFO (pkts)",
            "downlink queue (pkts)",
            "upload alone (kbit/s)",
            "download alone (kbit/s)",
            "upload with download (kbit/s)",
            "download with upload (kbit/s)",
            "upload both/alone",
            "download both/alone",
            "hit",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .rows
            .iter()
            .map(|&(uq, dq, ua, da, ub, db)| {
                let (ru, rd) = (ub / ua.max(1.0), db / da.max(1.0));
                let hit = adsl_hit(ru, rd);
                vec![
                    json!(uq),
                    json!(if dq == r.assumed_down_q { format!("{dq} (assumed)") } else { dq.to_string() }),
                    json!((ua / 1e3).round() as i64),
                    json!((da / 1e3).round() as i64),
                    json!((ub / 1e3).round() as i64),
                    json!((db / 1e3).round() as i64),
                    json!((ru * 1000.0).round() / 1000.0),
                    json!((rd * 1000.0).round() / 1000.0),
                    json!(hit),
                ]
            })
            .collect(),
    }
}

/// Computed notes: which direction each configuration hits.
fn adsl_notes(r: &AdslResults) -> Vec<String> {
    let mut notes = vec![format!(
        "The downlink queue (at the ISP, not in the gateway) is not stated; the primary assumes {} packets and the `cases` table sweeps it: it decides which direction loses.",
        r.assumed_down_q
    )];
    for uq in r.rows.iter().map(|x| x.0).collect::<std::collections::BTreeSet<_>>() {
        let hits: Vec<String> = r
            .rows
            .iter()
            .filter(|x| x.0 == uq)
            .map(|&(_, dq, ua, da, ub, db)| {
                let (ru, rd) = (ub / ua.max(1.0), db / da.max(1.0));
                format!("{dq}: up {:.0}%/down {:.0}%", ru * 100.0, rd * 100.0)
            })
            .collect();
        notes.push(format!(
            "Uplink FIFO {uq}: goodput with both transfers as a share of alone, by downlink queue size: {}.",
            hits.join("; ")
        ));
    }
    notes
}

fn kbit(bps: f64) -> f64 {
    (bps / 1e3 * 10.0).round() / 10.0
}

fn run_f3(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::parse(exp)?;
    let (_, r) = run_adsl(&f, ctx)?;
    let &(_, _, ua, da, ub, db) =
        r.at(100).ok_or_else(|| format!("{}: key `reproduce.up_queues`: must include 100 (Fig. 3)", f.file))?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    out.measure("upload-alone", Measured::new(kbit(ua), "kbit/s", format!("{} alone", fmt_rate(ua))));
    let m = (ub / ua - 1.0) * 100.0;
    out.measure("upload-collapses", Measured::new(m, "%", format!("{} -> {} ({m:+.0}%)", fmt_rate(ua), fmt_rate(ub))));
    out.measure(
        "download-unaffected",
        Measured::new(
            db / da * 100.0,
            "% of alone",
            format!("{} alone, {} with the upload ({})", fmt_rate(da), fmt_rate(db), pct(db / da)),
        ),
    );
    out.tables.push(adsl_table(&r));
    out.notes = f.paper_notes();
    out.notes.extend(adsl_notes(&r));
    Ok(out)
}

fn run_s2b(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::parse(exp)?;
    let claims = Claims::read(&f, exp)?;
    let (_, r) = run_adsl(&f, ctx)?;
    let &(_, _, ua, da, ub, db) =
        r.at(200).ok_or_else(|| format!("{}: key `reproduce.up_queues`: must include 200 (S2b)", f.file))?;
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    let m = (db / da - 1.0) * 100.0;
    out.measure(
        "s2b-download-drops",
        Measured::new(m, "%", format!("{} -> {} ({m:+.0}%)", fmt_rate(da), fmt_rate(db))),
    );
    out.measure(
        "s2b-upload-same",
        Measured::new(
            ub / ua * 100.0,
            "% of alone",
            format!("{} alone, {} with the download ({})", fmt_rate(ua), fmt_rate(ub), pct(ub / ua)),
        ),
    );
    let ratio = claims.p("s2b-either-direction", "ratio")?;
    let hit = |upload: bool| -> Vec<String> {
        r.rows
            .iter()
            .filter(|&&(_, _, ua, da, ub, db)| {
                let (ru, rd) = (ub / ua.max(1.0), db / da.max(1.0));
                if upload {
                    ru < ratio && ru < rd
                } else {
                    rd < ratio && rd < ru
                }
            })
            .map(|&(uq, dq, ..)| format!("{uq}/{dq}"))
            .collect()
    };
    let (hu, hd) = (hit(true), hit(false));
    out.measure(
        "s2b-either-direction",
        Measured::new(
            f64::from(u8::from(!hu.is_empty()) + u8::from(!hd.is_empty())),
            "directions",
            format!(
                "upload hit at {} of {} configurations (uplink/downlink queue: {}), download at {} ({})",
                hu.len(),
                r.rows.len(),
                if hu.is_empty() { "none".into() } else { hu.join(", ") },
                hd.len(),
                if hd.is_empty() { "none".into() } else { hd.join(", ") }
            ),
        ),
    );
    out.tables.push(adsl_table(&r));
    out.notes = f.paper_notes();
    out.notes.extend(adsl_notes(&r));
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// P2-F8: AFVQ on the ADSL link.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct F8Cfg {
    link: String,
    uplink_source: String,
    fifo: UpDown,
    quick_duration: String,
    quick_warmup: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpDown {
    up: toml::Value,
    down: toml::Value,
}

fn run_f8(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::parse(exp)?;
    let cfg: F8Cfg = f.section("reproduce")?;
    let li = link_index(&f, &cfg.link)?;
    let quick = quick_edits(ctx.quick, &cfg.quick_duration, &cfg.quick_warmup);
    let afvq_base = get_path(&f.table, &format!("topology.links[{li}].qdisc"))
        .cloned()
        .ok_or_else(|| format!("{}: key `topology.links[{li}].qdisc`: expected the AFVQ spec", f.file))?;
    let mut continuous = afvq_base.clone();
    if let Some(t) = continuous.as_table_mut() {
        t.insert("modifier".into(), s("continuous"));
    }
    let (afvq_base, continuous) =
        if ctx.mechanism_off { (cfg.fifo.up.clone(), cfg.fifo.up.clone()) } else { (afvq_base, continuous) };
    let cases: Vec<(&str, toml::Value, toml::Value)> = vec![
        ("FIFO", cfg.fifo.up.clone(), cfg.fifo.down.clone()),
        ("AFVQ, modifier at 1 Hz", afvq_base.clone(), afvq_base.clone()),
        ("AFVQ, modifier at every enqueue", continuous.clone(), continuous),
        ("AFVQ on the uplink only", afvq_base.clone(), cfg.fifo.down.clone()),
    ];
    let mut jobs = Vec::new();
    for (name, up, down) in &cases {
        let mut e = quick.clone();
        e.push((format!("topology.links[{li}].qdisc"), up.clone()));
        e.push((format!("topology.links[{li}].reverse.qdisc"), down.clone()));
        jobs.push(job(&f, name.to_string(), &e, ctx.seed)?);
    }
    let link = cfg.link.clone();
    let src = cfg.uplink_source.clone();
    let hdr = header_bytes(&f);
    let res = ctx.run_jobs_span(&jobs, 0.0, 1.0, move |sim, s| {
        let series = sim.goodput_series();
        (point_of(&s, &link, &src, hdr), s, series)
    });
    let mut pts = Vec::new();
    for r in res {
        let (p, s, series) = r?;
        pts.push((p?, s, series));
    }
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    // What AFVQ did: ACKs it handled as its own class in the AFVQ runs.
    out.act("afvq", 0.0);
    for (_, s, _) in &pts[1..] {
        let (kind, n) = acks_handled(s, &cfg.link);
        if kind == "afvq" {
            out.act("afvq", n);
        }
    }
    let (fifo, afvq) = (&pts[0].0, &pts[1].0);
    out.measure(
        "afvq-download",
        Measured::new(
            afvq.ud * 100.0,
            "% of link",
            format!("{} (every-enqueue modifier: {})", pct(afvq.ud), pct(pts[2].0.ud)),
        ),
    );
    out.measure(
        "afvq-upload",
        Measured::new(
            afvq.uu * 100.0,
            "% of link",
            format!("{} (every-enqueue modifier: {})", pct(afvq.uu), pct(pts[2].0.uu)),
        ),
    );
    let up_rate = pts[0].1.asym_link(&cfg.link).map(|a| a.up_rate_bps as f64).unwrap_or(1.0);
    let m = (fifo.uu / afvq.uu - 1.0) * 100.0;
    out.measure(
        "fifo-upload-degraded",
        Measured::new(
            m,
            "%",
            format!(
                "FIFO {} vs AFVQ {} ({m:+.0}%); FIFO download {}",
                fmt_rate(fifo.uu * up_rate),
                fmt_rate(afvq.uu * up_rate),
                pct(fifo.ud)
            ),
        ),
    );
    // Shortfall: 1 - U = idle + ACK share + header share of the data packets; what is left over is
    // neither (retransmissions, idle time the ACKs do not explain).
    let mss = mss_of(&f);
    let hdr = header_bytes(&f) / (mss + header_bytes(&f));
    let mut parts = Vec::new();
    let mut rest_max = f64::NEG_INFINITY;
    for (k, (name, u)) in [("up", afvq.uu), ("down", afvq.ud)].into_iter().enumerate() {
        let data_share = (afvq.busy[k] - afvq.ack_share[k]).max(0.0);
        let header = data_share * hdr;
        let idle = 1.0 - afvq.busy[k];
        let rest = (1.0 - u) - afvq.ack_share[k] - header;
        rest_max = rest_max.max(rest);
        parts.push(format!(
            "{name}: shortfall {} = ACKs {} + headers {} + idle {}",
            pct(1.0 - u),
            pct(afvq.ack_share[k]),
            pct(header),
            pct(idle)
        ));
    }
    out.measure("shortfall-is-acks", Measured::new(rest_max * 100.0, "points", parts.join("; ")));
    out.tables.push(Table {
        name: "cases".into(),
        columns: [
            "case",
            "upload",
            "download",
            "U_u",
            "U_d",
            "uplink ACK queue delay (ms)",
            "uplink ACKs dropped",
            "uplink busy",
            "downlink busy",
        ]
        .map(String::from)
        .to_vec(),
        rows: cases
            .iter()
            .zip(&pts)
            .map(|((name, ..), (p, s, _))| {
                let a = s.asym_link(&cfg.link);
                vec![
                    json!(name),
                    json!(a.map(|a| fmt_rate(a.up_goodput_bps)).unwrap_or_default()),
                    json!(a.map(|a| fmt_rate(a.down_goodput_bps)).unwrap_or_default()),
                    json!(round4(p.uu)),
                    json!(round4(p.ud)),
                    json!(round4(p.q_ack_up_s * 1e3)),
                    json!(pct(p.ack_drop_up)),
                    json!(pct(p.busy[0])),
                    json!(pct(p.busy[1])),
                ]
            })
            .collect(),
    });
    // Fig. 8: FIFO first, then AFVQ (two runs shown one after the other).
    let dur = pts[0].1.scenario.duration_s;
    let mut curves = Vec::new();
    for (fi, name) in [(0usize, "upload"), (1, "download")] {
        let mut pts_xy = Vec::new();
        for (run, off) in [(0usize, 0.0), (1, dur)] {
            for &(t, flow, g) in &pts[run].2 {
                if flow as usize == fi {
                    pts_xy.push((t + off, g / 1e3));
                }
            }
        }
        curves.push(Curve { name: name.into(), points: pts_xy, color: Some(fi), ..Default::default() });
    }
    out.plots.push((
        "throughput.svg".into(),
        xy_chart(
            &XyChart {
                title: format!("P2-F8: FIFO for {dur:.0} s, then AFVQ (1 Hz modifier) — two runs"),
                x_label: "time (s)".into(),
                y_label: "goodput (kbit/s)".into(),
                hlines: vec![(800.0, "uplink rate".into()), (2100.0, "downlink rate".into())],
                ..Default::default()
            },
            &curves,
        ),
    ));
    out.notes = f.paper_notes();
    out.notes.extend([
        "Simulated stand-in for the paper's real gateway (see the [paper] assumptions in the file); the paper switched AFVQ on at run time, here the FIFO and AFVQ cases are separate runs.".into(),
        format!("AFVQ only on the uplink (a FIFO of 10^4 packets at the ISP side): upload {}, download {} — AFVQ needs both ends, as the paper applies it.", pct(pts[3].0.uu), pct(pts[3].0.ud)),
        "No random loss: deterministic, one seed.".into(),
    ]);
    Ok(out)
}

/// TCP/IP header bytes per packet: 40, plus 12 with timestamps (on unless `tcp.timestamps = false`).
fn header_bytes(f: &ExpFile) -> f64 {
    let ts = get_path(&f.table, "tcp.timestamps").and_then(|v| v.as_bool()).unwrap_or(true);
    if ts {
        52.0
    } else {
        40.0
    }
}

fn mss_of(f: &ExpFile) -> f64 {
    get_path(&f.table, "tcp.mss").and_then(|v| v.as_integer()).map(|m| m as f64).unwrap_or(1460.0)
}

/// A sweep value as JSON: an integer when it is one.
fn xnum(x: f64) -> serde_json::Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

// ---------------------------------------------------------------------------------------------
// P2-F9 and P2-F10: sweeps of five disciplines.

#[derive(Deserialize, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "kebab-case")]
enum SweepKind {
    InternetDelay,
    AsymmetryRatio,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepCfg {
    link: String,
    uplink_source: String,
    sweep: SweepKind,
    internet_link: Option<String>,
    values: Vec<f64>,
    quick_values: Vec<f64>,
    x_label: String,
    disciplines: Vec<String>,
    queue_pkts: usize,
    seeds: u64,
    quick_seeds: u64,
    quick_duration: String,
    quick_warmup: String,
    #[serde(default)]
    variants: Vec<Variant>,
}

#[derive(Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
struct Variant {
    name: String,
    note: String,
    /// Dotted path -> value; `link.` is the asymmetric link's entry.
    #[serde(default)]
    set: toml::Table,
    /// Extra keys of AFVQ's spec.
    #[serde(default)]
    afvq: toml::Table,
    /// Re-measure s_max and n_thr per configuration (P2-11).
    #[serde(default)]
    afvq_measured: bool,
    seeds: Option<u64>,
}

/// Results of one variant: per value, per discipline, per seed.
struct Grid {
    values: Vec<f64>,
    discs: Vec<String>,
    /// [value][disc][seed]
    pts: Vec<Vec<Vec<Point>>>,
    /// Measured AFVQ (s_max, n_thr) per value and direction, for the re-measured variant.
    measured: Vec<Option<[(usize, usize); 2]>>,
    /// Per discipline of the grid: ACKs it handled as its own class, over every run.
    acks: BTreeMap<String, f64>,
}

/// Aggregates of one (value, discipline) over seeds.
#[derive(Clone, Copy, Debug, Default)]
struct Agg {
    uu: f64,
    ud: f64,
    agg: f64,
    agg_sd: f64,
    var_pop: f64,
    var_sample: f64,
    uu_thr: f64,
    ud_thr: f64,
    /// Mean over seeds of [`Point::tvar`].
    tvar: f64,
    n: usize,
}

fn agg_of(pts: &[Point], thr: bool) -> Agg {
    let n = pts.len().max(1) as f64;
    let (uu, ud) = if thr {
        (pts.iter().map(|p| p.uu_thr).sum::<f64>() / n, pts.iter().map(|p| p.ud_thr).sum::<f64>() / n)
    } else {
        (pts.iter().map(|p| p.uu).sum::<f64>() / n, pts.iter().map(|p| p.ud).sum::<f64>() / n)
    };
    let aggs: Vec<f64> = pts.iter().map(|p| if thr { p.uu_thr + p.ud_thr } else { p.uu + p.ud }).collect();
    let (agg, agg_sd) = mean_sd(&aggs);
    let (var_pop, var_sample) = ackshape_sim::metrics::utilization_variances(uu, ud);
    Agg {
        uu,
        ud,
        agg,
        agg_sd,
        var_pop,
        var_sample,
        uu_thr: pts.iter().map(|p| p.uu_thr).sum::<f64>() / n,
        ud_thr: pts.iter().map(|p| p.ud_thr).sum::<f64>() / n,
        tvar: pts.iter().map(|p| p.tvar).sum::<f64>() / n,
        n: pts.len(),
    }
}

impl Grid {
    fn disc(&self, name: &str) -> Option<usize> {
        self.discs.iter().position(|d| d == name)
    }
    fn agg(&self, v: usize, d: usize, thr: bool) -> Agg {
        agg_of(&self.pts[v][d], thr)
    }
    /// Is `a` not significantly below `b` at value `v`: mean(a - b) + 2·SE ≥ 0 over paired seeds.
    fn not_below(&self, v: usize, a: usize, b: usize, thr: bool) -> (bool, f64) {
        let tot = |p: &Point| if thr { p.uu_thr + p.ud_thr } else { p.uu + p.ud };
        let diff: Vec<f64> = self.pts[v][a].iter().zip(&self.pts[v][b]).map(|(x, y)| tot(x) - tot(y)).collect();
        let (m, sd) = mean_sd(&diff);
        let se = if diff.len() > 1 { sd / (diff.len() as f64).sqrt() } else { 0.0 };
        (m + 2.0 * se >= 0.0, m)
    }
}

/// The four disciplines the paper compares (FIFO is ours, for reference).
const FOUR: [&str; 4] = ["afvq", "acq", "acks-first", "ack-filter-classic"];

fn sweep_edits(
    cfg: &SweepCfg,
    f: &ExpFile,
    li: usize,
    value: f64,
    disc: &str,
    variant: &Variant,
    afvq_params: Option<[(usize, usize); 2]>,
) -> Result<Vec<(String, toml::Value)>, String> {
    let mut e = Vec::new();
    let down_rate = rate_of(f, &format!("topology.links[{li}].reverse.rate"))?;
    let mut up_rate = rate_of(f, &format!("topology.links[{li}].rate"))?;
    match cfg.sweep {
        SweepKind::InternetDelay => {
            let name = cfg.internet_link.as_deref().ok_or_else(|| {
                format!("{}: key `reproduce.internet_link`: needed by sweep = \"internet-delay\"", f.file)
            })?;
            let ii = link_index(f, name).map_err(|e| e.replace("reproduce.link", "reproduce.internet_link"))?;
            e.push((format!("topology.links[{ii}].delay"), s(&format!("{value}ms"))));
        }
        SweepKind::AsymmetryRatio => {
            up_rate = down_rate / value;
            e.push((format!("topology.links[{li}].rate"), s(&rate_str(up_rate))));
        }
    }
    let mut afvq = variant.afvq.clone();
    let mut specs = [None, None];
    for (k, (rate, rev)) in [(up_rate, down_rate), (down_rate, up_rate)].into_iter().enumerate() {
        if disc == "afvq" {
            if let Some(p) = afvq_params {
                afvq.insert("s_max".into(), (p[k].0 as i64).into());
                afvq.insert("n_thr".into(), (p[k].1 as i64).into());
            }
        }
        specs[k] = Some(disc_spec(disc, rate, rev, cfg.queue_pkts, &afvq)?);
    }
    let [Some(up), Some(down)] = specs else { unreachable!() };
    e.push((format!("topology.links[{li}].qdisc"), up));
    e.push((format!("topology.links[{li}].reverse.qdisc"), down));
    for (k, v) in &variant.set {
        e.push((expand(k, li), v.clone()));
    }
    Ok(e)
}

fn rate_of(f: &ExpFile, key: &str) -> Result<f64, String> {
    let v =
        get_path(&f.table, key).and_then(|v| v.as_str()).ok_or_else(|| format!("{}: key `{key}`: missing", f.file))?;
    ackshape_core::units::parse_rate(v).map(|r| r.0 as f64).map_err(|e| format!("{}: key `{key}`: {e}", f.file))
}

/// Run one variant's grid (and, for the re-measured AFVQ variant, its calibration runs first).
#[allow(clippy::too_many_arguments)]
fn run_grid(
    f: &ExpFile,
    cfg: &SweepCfg,
    li: usize,
    variant: &Variant,
    values: &[f64],
    seeds: u64,
    ctx: &mut Ctx,
    span: (f64, f64),
) -> Result<Grid, String> {
    let quick = quick_edits(ctx.quick, &cfg.quick_duration, &cfg.quick_warmup);
    let base_seed = ctx.seed;
    let mut measured = vec![None; values.len()];
    let mid = if variant.afvq_measured { span.0 + (span.1 - span.0) * 0.1 } else { span.0 };
    if variant.afvq_measured {
        // P2-11: traffic in one direction only, ACKs-first with unbounded queues (so the ACK class
        // is separate and never dropped): s_max = max ACK queue, n_thr = mean data queue.
        let flows = get_path(&f.table, "flows").and_then(|v| v.as_array()).cloned().unwrap_or_default();
        let only = |upload: bool| -> toml::Value {
            toml::Value::Array(
                flows
                    .iter()
                    .filter(|fl| {
                        (fl.get("from").and_then(|v| v.as_str()) == Some(cfg.uplink_source.as_str())) == upload
                    })
                    .cloned()
                    .collect(),
            )
        };
        let mut jobs = Vec::new();
        for &v in values {
            for upload in [true, false] {
                let mut e = quick.clone();
                e.extend(sweep_edits(cfg, f, li, v, "acks-first", variant, None)?);
                e.push(("flows".into(), only(upload)));
                jobs.push(job(f, format!("{} calibration {v} upload-only={upload}", variant.name), &e, base_seed)?);
            }
        }
        let res = ctx.run_sims_span(&jobs, span.0, mid);
        for (vi, pair) in res.chunks(2).enumerate() {
            let hdr = header_bytes(f);
            let up_only = point_of(pair[0].as_ref().map_err(|e| e.clone())?, &cfg.link, &cfg.uplink_source, hdr)?;
            let down_only = point_of(pair[1].as_ref().map_err(|e| e.clone())?, &cfg.link, &cfg.uplink_source, hdr)?;
            let one = |x: f64| (x.round() as usize).max(1);
            // Uplink queue: its ACKs are the download's (download-only run), its data the upload's.
            let up = (one(down_only.ack_max[0]), one(up_only.data_avg[0]));
            let down = (one(up_only.ack_max[1]), one(down_only.data_avg[1]));
            measured[vi] = Some([up, down]);
        }
    }
    let mut jobs = Vec::new();
    for (vi, &v) in values.iter().enumerate() {
        for d in &cfg.disciplines {
            for k in 0..seeds {
                let mut e = quick.clone();
                // The vacuity check: every discipline replaced by the FIFO.
                let disc = if ctx.mechanism_off { "fifo" } else { d.as_str() };
                e.extend(sweep_edits(cfg, f, li, v, disc, variant, measured[vi])?);
                jobs.push(job(f, format!("{} {d} x={v} seed={}", variant.name, base_seed + k), &e, base_seed + k)?);
            }
        }
    }
    let (link, src, hdr) = (cfg.link.clone(), cfg.uplink_source.clone(), header_bytes(f));
    let res = ctx.run_jobs_span(&jobs, mid, span.1, move |sim, s| {
        point_of(&s, &link, &src, hdr).map(|mut p| {
            p.tvar = time_bin_variance(&s, &sim.goodput_series(), &link, &src);
            p
        })
    });
    let mut it = res.into_iter();
    let mut pts = Vec::new();
    for _ in values {
        let mut per_d = Vec::new();
        for _ in &cfg.disciplines {
            let mut per_s = Vec::new();
            for _ in 0..seeds {
                per_s.push(it.next().ok_or("missing result")???);
            }
            per_d.push(per_s);
        }
        pts.push(per_d);
    }
    let mut acks = BTreeMap::new();
    for (di, d) in cfg.disciplines.iter().enumerate() {
        let n: f64 =
            pts.iter().flat_map(|pv: &Vec<Vec<Point>>| &pv[di]).filter(|p| &p.kind == d).map(|p| p.acks_handled).sum();
        acks.insert(d.clone(), n);
    }
    Ok(Grid { values: values.to_vec(), discs: cfg.disciplines.clone(), pts, measured, acks })
}

/// The claims' measurements on one grid.
///
/// `thr`: utilization from throughput instead of goodput; `time_bins`: the variance claims use
/// P2-10's other reading (variance of each direction's utilization over 1-s bins, the larger).
fn check_grid(
    g: &Grid,
    claims: &Claims,
    kind: SweepKind,
    thr: bool,
    time_bins: bool,
) -> Result<Vec<(String, Measured)>, String> {
    let var = |a: &Agg| if time_bins { a.tvar } else { a.var_pop };
    let mut out = Vec::new();
    let x_unit = if kind == SweepKind::InternetDelay { " ms" } else { "" };
    let four: Vec<usize> = FOUR.iter().filter_map(|d| g.disc(d)).collect();
    let afvq = g.disc("afvq").ok_or("the sweep needs the afvq discipline")?;
    let share = |k: usize, n: usize| if n == 0 { f64::NAN } else { k as f64 / n as f64 * 100.0 };
    // AFVQ highest: points where it is significantly below none of the others.
    let mut strict = 0;
    let mut ok_points = 0;
    let mut fails = Vec::new();
    for v in 0..g.values.len() {
        let a = g.agg(v, afvq, thr).agg;
        if four.iter().all(|&d| d == afvq || g.agg(v, d, thr).agg <= a) {
            strict += 1;
        }
        let mut ok = true;
        for &d in &four {
            if d == afvq {
                continue;
            }
            let (nb, m) = g.not_below(v, afvq, d, thr);
            if !nb {
                ok = false;
                fails.push(format!("{}{x_unit}: {} by {:.3}", g.values[v], disc_label(&g.discs[d]), -m));
            }
        }
        ok_points += usize::from(ok);
    }
    out.push((
        "afvq-highest".to_string(),
        Measured::new(
            share(ok_points, g.values.len()),
            "% of points",
            format!(
                "AFVQ not significantly below another at {ok_points}/{n} points, highest (mean) at {strict}/{n}; significantly below at {}{}",
                fails.len(),
                if fails.is_empty() { String::new() } else { format!(" ({})", fails.join("; ")) },
                n = g.values.len()
            ),
        ),
    ));
    // Close to AFVQ only in a region.
    let close_id = if kind == SweepKind::InternetDelay { "close-only-at-top" } else { "close-only-at-extremes" };
    let margin = claims.p(close_id, "margin")?;
    let expect_close = |x: f64| -> Result<bool, String> {
        Ok(match kind {
            SweepKind::InternetDelay => x >= claims.p(close_id, "from")?,
            SweepKind::AsymmetryRatio => x < claims.p(close_id, "below")? || x > claims.p(close_id, "above")?,
        })
    };
    let mut agree = 0;
    let mut total = 0;
    let mut closes = Vec::new();
    for v in 0..g.values.len() {
        let a = g.agg(v, afvq, thr).agg;
        let mut cl = Vec::new();
        for name in ["acq", "acks-first"] {
            let Some(d) = g.disc(name) else { continue };
            let close = a - g.agg(v, d, thr).agg <= margin;
            total += 1;
            if close == expect_close(g.values[v])? {
                agree += 1;
            }
            if close {
                cl.push(disc_label(name));
            }
        }
        closes.push(format!("{}{x_unit}: {}", g.values[v], if cl.is_empty() { "-".into() } else { cl.join("+") }));
    }
    out.push((
        close_id.to_string(),
        Measured::new(
            share(agree, total),
            "% of pairs",
            format!("as the paper at {agree}/{total} (discipline, point) pairs; close: {}", closes.join(", ")),
        ),
    ));
    if kind == SweepKind::AsymmetryRatio {
        // AF lowest of the four: ratios where it is significantly above none of them.
        if let Some(af) = g.disc("ack-filter-classic") {
            let mut strict = 0;
            let mut ok_points = 0;
            let mut fails = Vec::new();
            for v in 0..g.values.len() {
                let a = g.agg(v, af, thr).agg;
                if four.iter().all(|&d| d == af || g.agg(v, d, thr).agg >= a) {
                    strict += 1;
                }
                let mut ok = true;
                for &d in &four {
                    if d != af && !g.not_below(v, d, af, thr).0 {
                        ok = false;
                        fails.push(format!("{}: above {}", g.values[v], disc_label(&g.discs[d])));
                    }
                }
                ok_points += usize::from(ok);
            }
            out.push((
                "af-lowest".into(),
                Measured::new(
                    share(ok_points, g.values.len()),
                    "% of points",
                    format!(
                        "AF not significantly above another at {ok_points}/{n} ratios, lowest (mean) at {strict}/{n}; significantly above at {}{}",
                        fails.len(),
                        if fails.is_empty() { String::new() } else { format!(" ({})", fails.join("; ")) },
                        n = g.values.len()
                    ),
                ),
            ));
        }
        // Variance ordering (mean over the ratios): AFVQ's rank among the four, lowest = 1.
        let mean_var =
            |d: usize| (0..g.values.len()).map(|v| g.agg(v, d, thr).var_pop).sum::<f64>() / g.values.len() as f64;
        let mut order: Vec<(f64, usize)> = four.iter().map(|&d| (mean_var(d), d)).collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0));
        let names: Vec<String> = order.iter().map(|(m, d)| format!("{} {:.4}", disc_label(&g.discs[*d]), m)).collect();
        let rank = order.iter().position(|x| x.1 == afvq).map(|i| i as f64 + 1.0).unwrap_or(f64::NAN);
        out.push((
            "afvq-variance-second".into(),
            Measured::new(rank, "rank", format!("mean population variance: {}", names.join(" < "))),
        ));
        let upto = claims.p("afvq-variance-lowest-1-25", "upto")?;
        let tie = claims.p("afvq-variance-lowest-1-25", "tie")?;
        let mut n = 0;
        let mut ok_n = 0;
        let mut bad = Vec::new();
        for v in 0..g.values.len() {
            if g.values[v] > upto {
                continue;
            }
            n += 1;
            let a = g.agg(v, afvq, thr).var_pop;
            let best =
                four.iter().filter(|&&d| d != afvq).map(|&d| g.agg(v, d, thr).var_pop).fold(f64::INFINITY, f64::min);
            if a <= best + tie {
                ok_n += 1;
            } else {
                bad.push(format!("{}: {:.4} vs {:.4}", g.values[v], a, best));
            }
        }
        out.push((
            "afvq-variance-lowest-1-25".into(),
            Measured::new(
                share(ok_n, n),
                "% of points",
                format!(
                    "AFVQ lowest at {ok_n}/{n} ratios <= {upto}{}",
                    if bad.is_empty() { String::new() } else { format!(" (not at {})", bad.join("; ")) }
                ),
            ),
        ));
    }
    // Variance bound: the largest AFVQ variance over the points.
    let vid = if kind == SweepKind::InternetDelay { "afvq-variance" } else { "afvq-variance-bound" };
    let (mut maxp, mut maxs, mut at) = (f64::NEG_INFINITY, 0.0f64, 0.0);
    for v in 0..g.values.len() {
        let a = g.agg(v, afvq, thr);
        if var(&a) > maxp {
            maxp = var(&a);
            at = g.values[v];
        }
        maxs = maxs.max(if time_bins { a.tvar } else { a.var_sample });
    }
    out.push((
        vid.to_string(),
        Measured::new(
            maxp,
            "",
            if time_bins {
                format!("max {maxp:.4} (over 1-s bins, at {at}{x_unit})")
            } else {
                format!("max {maxp:.4} (population, at {at}{x_unit}; sample form max {maxs:.4})")
            },
        ),
    ));
    Ok(out)
}

/// The analytic model (Eq. 14) for one point, with the run's measured ACK delays and counts.
fn model_point(f: &ExpFile, cfg: &SweepCfg, li: usize, x: f64, p: &Point) -> Option<(f64, f64)> {
    let down = rate_of(f, &format!("topology.links[{li}].reverse.rate")).ok()?;
    let mut up = rate_of(f, &format!("topology.links[{li}].rate")).ok()?;
    let delay_ms = |key: String| -> f64 {
        get_path(&f.table, &key)
            .and_then(|v| v.as_str())
            .and_then(|d| ackshape_core::units::parse_duration(d).ok())
            .map(|d| d.as_secs_f64() * 1e3)
            .unwrap_or(0.0)
    };
    let links = get_path(&f.table, "topology.links")?.as_array()?;
    let mut tau_ms: f64 = (0..links.len()).map(|i| delay_ms(format!("topology.links[{i}].delay"))).sum();
    match cfg.sweep {
        SweepKind::InternetDelay => {
            let ii = link_index(f, cfg.internet_link.as_deref()?).ok()?;
            tau_ms += x - delay_ms(format!("topology.links[{ii}].delay"));
        }
        SweepKind::AsymmetryRatio => up = down / x,
    }
    let loss = get_path(&f.table, &format!("topology.links[{li}].loss.p")).and_then(|v| v.as_float()).unwrap_or(0.0);
    let mss = mss_of(f);
    let h = header_bytes(f);
    let min_rto = delay_ms("tcp.min_rto".into()).max(1.0) / 1e3;
    let lp = |rate: f64| LinkParams { rate_bytes_per_s: rate / 8.0, delay_s: tau_ms / 1e3, loss };
    let input = AfvqModelInput {
        down: lp(down),
        up: lp(up),
        data_bytes: mss + h,
        ack_bytes: h,
        b: 2.0,
        t0_s: min_rto,
        maxwnd_down: 200.0,
        maxwnd_up: 200.0,
        q_ack_down_s: p.q_ack_up_s,
        q_ack_up_s: p.q_ack_down_s,
        n_ack_in_down_queue: p.n_ack_down,
        n_ack_in_up_queue: p.n_ack_up,
    };
    let o = model_afvq::solve(&input).ok()?;
    // The model counts data packets of size D; goodput counts payload.
    let payload = mss / (mss + h);
    Some((o.upload.utilization * payload, o.download.utilization * payload))
}

/// Padhye's loss-limited ceiling of the download's utilization at the base RTT (no queueing).
fn padhye_ceiling(f: &ExpFile, cfg: &SweepCfg, li: usize, x: f64) -> Option<f64> {
    let down = rate_of(f, &format!("topology.links[{li}].reverse.rate")).ok()?;
    let up = match cfg.sweep {
        SweepKind::AsymmetryRatio => down / x,
        SweepKind::InternetDelay => rate_of(f, &format!("topology.links[{li}].rate")).ok()?,
    };
    let links = get_path(&f.table, "topology.links")?.as_array()?;
    let dl = |i: usize| {
        get_path(&f.table, &format!("topology.links[{i}].delay"))
            .and_then(|v| v.as_str())
            .and_then(|d| ackshape_core::units::parse_duration(d).ok())
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    };
    let mut one_way: f64 = (0..links.len()).map(dl).sum();
    if cfg.sweep == SweepKind::InternetDelay {
        let ii = link_index(f, cfg.internet_link.as_deref()?).ok()?;
        one_way += x / 1e3 - dl(ii);
    }
    let mss = mss_of(f);
    let loss = get_path(&f.table, &format!("topology.links[{li}].loss.p")).and_then(|v| v.as_float())?;
    let h = header_bytes(f);
    let rtt = 2.0 * one_way + (mss + h) * 8.0 / down + h * 8.0 / up;
    let min_rto = get_path(&f.table, "tcp.min_rto")
        .and_then(|v| v.as_str())
        .and_then(|d| ackshape_core::units::parse_duration(d).ok())
        .map(|d| d.as_secs_f64())
        .unwrap_or(1.0);
    let pps = model::padhye(&model::ModelInput { p: loss, rtt_s: rtt, b: 2.0, t0_s: min_rto, wmax: 200.0 });
    Some((pps * mss * 8.0 / down).min(1.0))
}

fn run_sweep(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::parse(exp)?;
    let claims = Claims::read(&f, exp)?;
    let cfg: SweepCfg = f.section("reproduce")?;
    let li = link_index(&f, &cfg.link)?;
    for (i, d) in cfg.disciplines.iter().enumerate() {
        disc_spec(d, 1.0, 1.0, 1, &toml::Table::new())
            .map_err(|e| format!("{}: key `reproduce.disciplines[{i}]`: {e}", f.file))?;
    }
    let values = if ctx.quick { cfg.quick_values.clone() } else { cfg.values.clone() };
    let seeds = if ctx.quick { cfg.quick_seeds } else { cfg.seeds };
    let variants: Vec<Variant> = if ctx.quick { Vec::new() } else { cfg.variants.clone() };
    // Rough cost weights for the progress bar: the primary grid, then each variant.
    let w_primary = (seeds as f64) * 1.0;
    let w_var: Vec<f64> = variants.iter().map(|v| v.seeds.unwrap_or(seeds) as f64).collect();
    let total = w_primary + w_var.iter().sum::<f64>();
    let primary_variant = Variant { name: "stated".into(), ..Default::default() };
    let g = run_grid(&f, &cfg, li, &primary_variant, &values, seeds, ctx, (0.0, w_primary / total))?;
    let mut at = w_primary / total;
    let mut vgrids = Vec::new();
    for (v, w) in variants.iter().zip(&w_var) {
        let span = (at, at + w / total);
        at = span.1;
        let vg = run_grid(&f, &cfg, li, v, &values, v.seeds.unwrap_or(seeds), ctx, span)
            .map_err(|e| format!("variant {:?}: {e}", v.name))?;
        vgrids.push((v.clone(), vg));
    }
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    for (id, m) in check_grid(&g, &claims, cfg.sweep, false, false)? {
        out.measure(&id, m);
    }
    for (d, n) in &g.acks {
        out.act(d, *n);
    }
    // Tables.
    let x_col = if cfg.sweep == SweepKind::InternetDelay { "internet delay (ms)" } else { "asymmetry ratio" };
    let mut rows = Vec::new();
    for (vi, &x) in g.values.iter().enumerate() {
        for (di, d) in g.discs.iter().enumerate() {
            let a = g.agg(vi, di, false);
            let pts = &g.pts[vi][di];
            let n = pts.len().max(1) as f64;
            let mean = |f: &dyn Fn(&Point) -> f64| pts.iter().map(f).sum::<f64>() / n;
            let avg = Point {
                q_ack_up_s: mean(&|p| p.q_ack_up_s),
                q_ack_down_s: mean(&|p| p.q_ack_down_s),
                n_ack_up: mean(&|p| p.n_ack_up),
                n_ack_down: mean(&|p| p.n_ack_down),
                ..Default::default()
            };
            let model = model_point(&f, &cfg, li, x, &avg);
            rows.push(vec![
                xnum(x),
                json!(disc_label(d)),
                json!(round4(a.uu)),
                json!(round4(a.ud)),
                json!(round4(a.agg)),
                json!(round4(a.agg_sd)),
                json!(round4(a.var_pop)),
                json!(round4(a.var_sample)),
                json!(round4(a.tvar)),
                json!(round4(a.uu_thr + a.ud_thr)),
                json!(round4(avg.q_ack_up_s * 1e3)),
                json!(round4(mean(&|p| p.ack_drop_up))),
                model.map(|(u, d)| json!(round4(u + d))).unwrap_or(json!(null)),
                json!(a.n),
            ]);
        }
    }
    out.tables.push(Table {
        name: "sweep".into(),
        columns: [
            x_col,
            "discipline",
            "U_u",
            "U_d",
            "aggregated",
            "aggregated sd (seeds)",
            "variance (population)",
            "variance (sample)",
            "variance over 1-s bins (larger direction)",
            "aggregated from throughput",
            "uplink ACK queue delay (ms)",
            "uplink ACK drop share",
            "model aggregated (measured ACK delay/count)",
            "seeds",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    // Sensitivity: the same checks on each variant, and on throughput instead of goodput.
    let mut srows = Vec::new();
    let mut sens_curves = Vec::new();
    let afvq_i = g.disc("afvq").unwrap_or(0);
    let mut add_row = |name: &str, gr: &Grid, thr: bool, tb: bool, note: &str| -> Result<(), String> {
        let checks = check_grid(gr, &claims, cfg.sweep, thr, tb)?;
        let mut row = vec![json!(name)];
        for (id, m) in &checks {
            row.push(json!(format!("{}: {}", claims.judge(id, m), m.detail)));
        }
        row.push(json!(note));
        srows.push(row);
        Ok(())
    };
    add_row("stated assumptions (goodput)", &g, false, false, "primary")?;
    add_row(
        "stated assumptions, utilization from throughput",
        &g,
        true,
        false,
        "X-1: the paper says 'TCP throughput'",
    )?;
    add_row(
        "stated assumptions, variance over 1-s time bins",
        &g,
        false,
        true,
        "P2-10: variance of each direction's utilization over time (the larger of the two) instead of between the two directions",
    )?;
    for (v, vg) in &vgrids {
        let mut note = v.note.clone();
        if v.afvq_measured {
            let m: Vec<String> = vg
                .values
                .iter()
                .zip(&vg.measured)
                .filter_map(|(x, m)| {
                    m.map(|m| format!("{x}: up ({}, {}), down ({}, {})", m[0].0, m[0].1, m[1].0, m[1].1))
                })
                .collect();
            note += &format!(" — measured (s_max, n_thr): {}", m.join("; "));
        }
        add_row(&v.name, vg, false, false, &note)?;
    }
    // Each variant's own sweep table (compact).
    let mut vtables = Vec::new();
    let mut vplots = Vec::new();
    for (v, vg) in &vgrids {
        let slug: String = v
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
            .collect::<String>()
            .split('-')
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        let mut rows = Vec::new();
        for (vi, &x) in vg.values.iter().enumerate() {
            for (di, d) in vg.discs.iter().enumerate() {
                let a = vg.agg(vi, di, false);
                rows.push(vec![
                    xnum(x),
                    json!(disc_label(d)),
                    json!(round4(a.uu)),
                    json!(round4(a.ud)),
                    json!(round4(a.agg)),
                    json!(round4(a.var_pop)),
                    json!(round4(a.var_sample)),
                    json!(a.n),
                ]);
            }
        }
        let curves: Vec<Curve> = vg
            .discs
            .iter()
            .enumerate()
            .map(|(di, d)| Curve {
                name: disc_label(d).into(),
                points: vg.values.iter().enumerate().map(|(vi, &x)| (x, vg.agg(vi, di, false).agg)).collect(),
                markers: true,
                color: Some(disc_color(d)),
                ..Default::default()
            })
            .collect();
        vplots.push((
            format!("aggregated-{slug}.svg"),
            xy_chart(
                &XyChart {
                    title: format!("{}: aggregated utilization, variant \"{}\"", exp.id, v.name),
                    x_label: cfg.x_label.clone(),
                    y_label: "aggregated utilization".into(),
                    log_x: cfg.sweep == SweepKind::AsymmetryRatio,
                    y_range: Some((0.0, 2.0)),
                    hlines: vec![(2.0, "ideal".into())],
                },
                &curves,
            ),
        ));
        vtables.push(Table {
            name: format!("variant-{slug}"),
            columns: [
                x_col,
                "discipline",
                "U_u",
                "U_d",
                "aggregated",
                "variance (population)",
                "variance (sample)",
                "seeds",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    let check_ids: Vec<String> = check_grid(&g, &claims, cfg.sweep, false, false)?.into_iter().map(|c| c.0).collect();
    let mut cols = vec!["variant".to_string()];
    cols.extend(check_ids);
    cols.push("what it tests".into());
    out.tables.push(Table { name: "sensitivity".into(), columns: cols, rows: srows });
    out.tables.extend(vtables);
    // Per-variant AFVQ curves for the sensitivity plot.
    for (k, (name, gr)) in std::iter::once(("stated assumptions".to_string(), &g))
        .chain(vgrids.iter().map(|(v, vg)| (v.name.clone(), vg)))
        .enumerate()
    {
        let ai = gr.disc("afvq").unwrap_or(afvq_i);
        sens_curves.push(Curve {
            name,
            points: gr.values.iter().enumerate().map(|(vi, &x)| (x, gr.agg(vi, ai, false).var_pop)).collect(),
            markers: true,
            color: Some(k),
            ..Default::default()
        });
    }
    // Plots.
    let log_x = cfg.sweep == SweepKind::AsymmetryRatio;
    let fig = if cfg.sweep == SweepKind::InternetDelay { "Fig. 10" } else { "Fig. 9" };
    let curves = |val: &dyn Fn(&Agg) -> f64, err: bool| -> Vec<Curve> {
        g.discs
            .iter()
            .enumerate()
            .map(|(di, d)| Curve {
                name: disc_label(d).into(),
                points: g.values.iter().enumerate().map(|(vi, &x)| (x, val(&g.agg(vi, di, false)))).collect(),
                markers: true,
                color: Some(disc_color(d)),
                err: if err {
                    g.values
                        .iter()
                        .enumerate()
                        .map(|(vi, &x)| {
                            let a = g.agg(vi, di, false);
                            (x, a.agg - a.agg_sd, a.agg + a.agg_sd)
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                ..Default::default()
            })
            .collect()
    };
    let chart = |title: &str, y: &str, hl: Vec<(f64, String)>, yr: Option<(f64, f64)>| XyChart {
        title: format!("{}: {title}", exp.id),
        x_label: cfg.x_label.clone(),
        y_label: y.into(),
        log_x,
        y_range: yr,
        hlines: hl,
    };
    out.plots.push((
        "aggregated.svg".into(),
        xy_chart(
            &chart(
                &format!("aggregated utilization U_u + U_d ({fig}A; bars: ±1 sd over seeds)"),
                "aggregated utilization",
                vec![(2.0, "ideal".into())],
                Some((0.0, 2.0)),
            ),
            &curves(&|a| a.agg, true),
        ),
    ));
    let vid = if cfg.sweep == SweepKind::InternetDelay { "afvq-variance" } else { "afvq-variance-bound" };
    let vb = claims.spec(vid).map(|c| c.paper_value).unwrap_or(0.0);
    out.plots.push((
        "variance.svg".into(),
        xy_chart(
            &chart(
                &format!("utilization variance, population form ({fig}B)"),
                "variance of {U_u, U_d}",
                vec![(vb, format!("paper: AFVQ below {vb}"))],
                None,
            ),
            &curves(&|a| a.var_pop, false),
        ),
    ));
    // U_u (solid) and U_d (dashed) per discipline, with Padhye's loss ceiling for U_d.
    let mut uc = Vec::new();
    for (di, d) in g.discs.iter().enumerate() {
        for (down, tag) in [(false, "up"), (true, "down")] {
            uc.push(Curve {
                name: format!("{} {tag}", disc_label(d)),
                points: g
                    .values
                    .iter()
                    .enumerate()
                    .map(|(vi, &x)| {
                        let a = g.agg(vi, di, false);
                        (x, if down { a.ud } else { a.uu })
                    })
                    .collect(),
                dashed: down,
                markers: !down,
                color: Some(disc_color(d)),
                ..Default::default()
            });
        }
    }
    let ceiling: Vec<(f64, f64)> =
        g.values.iter().map(|&x| (x, padhye_ceiling(&f, &cfg, li, x).unwrap_or(f64::NAN))).collect();
    if ceiling.iter().any(|p| p.1.is_finite()) {
        uc.push(Curve {
            name: "Padhye U_d ceiling".into(),
            points: ceiling.clone(),
            dashed: true,
            color: Some(0),
            ..Default::default()
        });
    }
    out.plots.push((
        "directions.svg".into(),
        xy_chart(
            &chart("U_u (solid) and U_d (dashed) per discipline", "utilization", Vec::new(), Some((0.0, 1.0))),
            &uc,
        ),
    ));
    // The paper's model with each discipline's measured ACK delays and counts, next to the simulation.
    let mut mc = Vec::new();
    for (di, d) in g.discs.iter().enumerate() {
        let pts_m: Vec<(f64, f64)> = g
            .values
            .iter()
            .enumerate()
            .map(|(vi, &x)| {
                let ps = &g.pts[vi][di];
                let n = ps.len().max(1) as f64;
                let avg = Point {
                    q_ack_up_s: ps.iter().map(|p| p.q_ack_up_s).sum::<f64>() / n,
                    q_ack_down_s: ps.iter().map(|p| p.q_ack_down_s).sum::<f64>() / n,
                    n_ack_up: ps.iter().map(|p| p.n_ack_up).sum::<f64>() / n,
                    n_ack_down: ps.iter().map(|p| p.n_ack_down).sum::<f64>() / n,
                    ..Default::default()
                };
                (x, model_point(&f, &cfg, li, x, &avg).map(|(u, d)| u + d).unwrap_or(f64::NAN))
            })
            .collect();
        mc.push(Curve {
            name: format!("{} sim", disc_label(d)),
            points: g.values.iter().enumerate().map(|(vi, &x)| (x, g.agg(vi, di, false).agg)).collect(),
            markers: true,
            color: Some(disc_color(d)),
            ..Default::default()
        });
        mc.push(Curve {
            name: format!("{} model", disc_label(d)),
            points: pts_m,
            dashed: true,
            color: Some(disc_color(d)),
            ..Default::default()
        });
    }
    out.plots.push((
        "model.svg".into(),
        xy_chart(
            &chart(
                "simulation (solid) vs the paper's model Eq. 14 fed with the run's ACK delays and counts (dashed)",
                "aggregated utilization",
                Vec::new(),
                Some((0.0, 2.0)),
            ),
            &mc,
        ),
    ));
    out.plots.extend(vplots);
    if !vgrids.is_empty() {
        out.plots.push((
            "sensitivity.svg".into(),
            xy_chart(
                &chart(
                    "AFVQ's utilization variance under each assumption",
                    "variance (population)",
                    vec![(vb, format!("paper: below {vb}"))],
                    None,
                ),
                &sens_curves,
            ),
        ));
    }
    // Notes.
    let mut notes = f.paper_notes();
    notes.push(format!(
        "{} points x {} disciplines x {} seeds under the stated assumptions{}.",
        values.len(),
        cfg.disciplines.len(),
        seeds,
        if ctx.quick { " (quick mode: fewer points and seeds, shorter runs, no sensitivity variants)" } else { "" }
    ));
    notes.push("Utilization = goodput of the direction's TCP flows / raw rate, averaged over seeds; aggregated = U_u + U_d; variance = population variance of the two averaged utilizations (the sample form is twice it: P2-10). FIFO is not in the paper's figure and is shown for reference; the claims compare the paper's four.".into());
    let ceil_txt: Vec<String> =
        ceiling.iter().filter(|p| p.1.is_finite()).map(|(x, c)| format!("{x}: {c:.2}")).collect();
    if !ceil_txt.is_empty() {
        notes.push(format!(
            "Padhye's model bounds a single Reno download with 1% loss, b = 2, T0 = the minimum RTO, at the base RTT (no queueing at all), to U_d <= {}. A population variance below v needs |U_u - U_d| < 2*sqrt(v) (0.35 for 0.03): with the upload near its line rate, no discipline can meet that where the ceiling is low.",
            ceil_txt.join(", ")
        ));
    }
    notes.push("The model plot feeds the paper's Eq. 14 (core::model_afvq) with each run's measured ACK queueing delays (Little's law on the ACK class) and ACK counts; the paper itself plots no model curves next to its simulations.".into());
    for (v, _) in &vgrids {
        notes.push(format!("Variant \"{}\": {}", v.name, v.note));
    }
    out.notes = notes;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// P2-F11: the model's Lemma 1 and Theorem 1 on the Fig. 10 set-up.

fn run_f11(exp: &Experiment, ctx: &mut Ctx) -> Result<ExpOutput, String> {
    let f = ExpFile::parse(exp)?;
    let cfg: SweepCfg = f.section("reproduce")?;
    let li = link_index(&f, &cfg.link)?;
    let down = rate_of(&f, &format!("topology.links[{li}].reverse.rate"))?;
    let up = rate_of(&f, &format!("topology.links[{li}].rate"))?;
    let loss = get_path(&f.table, &format!("topology.links[{li}].loss.p")).and_then(|v| v.as_float()).unwrap_or(0.0);
    let mss = mss_of(&f);
    let h = header_bytes(&f);
    let mut out = ExpOutput { id: exp.id.into(), title: exp.title.into(), ..Default::default() };
    let base = |q: f64, n: f64, tau: f64| AfvqModelInput {
        down: LinkParams { rate_bytes_per_s: down / 8.0, delay_s: tau, loss },
        up: LinkParams { rate_bytes_per_s: up / 8.0, delay_s: tau, loss },
        data_bytes: mss + h,
        ack_bytes: h,
        b: 2.0,
        t0_s: 1.0,
        maxwnd_down: 200.0,
        maxwnd_up: 200.0,
        q_ack_down_s: q,
        q_ack_up_s: 0.0,
        n_ack_in_down_queue: n,
        n_ack_in_up_queue: 0.0,
    };
    // Lemma 1 and Theorem 1 over a grid of delays, ACK delays and ACK counts, both model cases
    // (loss as in the file: Padhye case; no loss: window-limited case).
    let mut lemma_ok = 0;
    let mut lemma_n = 0;
    let mut mono_ok = 0;
    let mut mono_n = 0;
    let mut worst = String::new();
    for p in [loss, 0.0] {
        for tau in [0.011, 0.03, 0.06, 0.11] {
            for n in [0.0, 2.0, 10.0, 50.0] {
                let mut last = f64::INFINITY;
                for q in [0.0, 0.01, 0.05, 0.1, 0.5, 1.0] {
                    let mut i = base(q, n, tau);
                    i.down.loss = p;
                    i.up.loss = p;
                    let d = i.download();
                    lemma_n += 1;
                    match model_afvq::solve_direction(&d, "download") {
                        Ok(sol) => {
                            let (a, b, c) = sol.quadratic;
                            let fq = |l: f64| a * l * l - b * l + c;
                            let mu = d.mu_data;
                            // Exactly one sign change of f on a fine grid of (0, mu).
                            let changes = (0..400)
                                .map(|k| fq(mu * (k as f64 + 0.5) / 400.0))
                                .collect::<Vec<_>>()
                                .windows(2)
                                .filter(|w| w[0].signum() != w[1].signum())
                                .count();
                            if fq(0.0) > 0.0 && fq(mu) < 0.0 && changes == 1 {
                                lemma_ok += 1;
                            }
                            mono_n += 1;
                            if sol.throughput_bytes_per_s < last {
                                mono_ok += 1;
                            } else {
                                worst = format!("p={p}, tau={tau}, n={n}, q={q}");
                            }
                            last = sol.throughput_bytes_per_s;
                        }
                        Err(e) => worst = e.to_string(),
                    }
                }
            }
        }
    }
    let share = |k: usize, n: usize| if n == 0 { f64::NAN } else { k as f64 / n as f64 * 100.0 };
    out.measure(
        "lemma1",
        Measured::new(
            share(lemma_ok, lemma_n),
            "% of input sets",
            format!("{lemma_ok}/{lemma_n} input sets (Fig. 10 link, delays 11-110 ms, ACK delay 0-1 s, 0-50 queued ACKs, 1% and no loss)"),
        ),
    );
    out.measure(
        "theorem1-q",
        Measured::new(
            share(mono_ok, mono_n),
            "% of steps",
            format!(
                "strictly decreasing in q at {mono_ok}/{mono_n} steps{}",
                if worst.is_empty() { String::new() } else { format!(" (last exception: {worst})") }
            ),
        ),
    );
    let mut n_ok = 0;
    let mut n_n = 0;
    for tau in [0.011, 0.06, 0.11] {
        let mut last = f64::INFINITY;
        for n in [0.0, 1.0, 5.0, 20.0, 100.0] {
            let d = base(0.02, n, tau).download();
            if let Ok(sol) = model_afvq::solve_direction(&d, "download") {
                n_n += 1;
                if sol.throughput_bytes_per_s < last {
                    n_ok += 1;
                }
                last = sol.throughput_bytes_per_s;
            }
        }
    }
    out.measure(
        "theorem1-n",
        Measured::new(share(n_ok, n_n), "% of steps", format!("strictly decreasing in n at {n_ok}/{n_n} steps")),
    );
    // Fig. 11: f_d for two ACK delays q1 > q2 (Internet delay 20 ms: tau = 30.1 ms).
    let tau = 0.0301;
    let mut curves = Vec::new();
    let mut roots = Vec::new();
    for (k, q) in [(0usize, 0.5), (1, 0.05)] {
        let d = base(q, 0.0, tau).download();
        let sol = model_afvq::solve_direction(&d, "download").map_err(|e| e.to_string())?;
        let (a, b, c) = sol.quadratic;
        let mu = d.mu_data;
        let pts: Vec<(f64, f64)> = (0..=100)
            .map(|i| {
                let l = mu * i as f64 / 100.0;
                (l * 8.0 / 1e3, (a * l * l - b * l + c) / c)
            })
            .collect();
        roots.push((q, sol.throughput_bytes_per_s * 8.0 / 1e3));
        curves.push(Curve {
            name: format!("f_d, q_d^ack = {} ms", q * 1e3),
            points: pts,
            color: Some(k),
            ..Default::default()
        });
    }
    out.plots.push((
        "f_d.svg".into(),
        xy_chart(
            &XyChart {
                title: "P2-F11: f_d(lambda) / f_d(0) for two ACK delays (Fig. 10 link, 20 ms Internet delay, 1% loss)"
                    .into(),
                x_label: "lambda_d (kbit/s)".into(),
                y_label: "f_d / f_d(0)".into(),
                hlines: vec![(0.0, "0".into())],
                y_range: Some((-1.0, 1.0)),
                ..Default::default()
            },
            &curves,
        ),
    ));
    out.tables.push(Table {
        name: "roots".into(),
        columns: vec!["q_d^ack (ms)".into(), "root lambda_d (kbit/s)".into()],
        rows: roots.iter().map(|(q, r)| vec![json!(q * 1e3), json!(round4(*r))]).collect(),
    });
    out.notes = vec![
        "Pure model checks (core::model_afvq, Eq. 13 reconstructed so that it gives Eq. 14, docs/experiments.md#p2-8); no simulation. The paper's Fig. 11 is a sketch of f_d for q1 > q2.".into(),
        "The model's throughput is of D-byte data packets (payload + TCP/IP header).".into(),
    ];
    let _ = ctx;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_file_is_a_valid_scenario_with_its_claims() {
        for e in experiments() {
            ExpFile::parse(&e).unwrap_or_else(|err| panic!("{}: {err}", e.id));
            let c = claims::specs(e.text, e.file, e.id).unwrap();
            assert!(!c.is_empty(), "{}", e.id);
            claims::readings(e.text, e.file, e.id).unwrap();
        }
    }

    #[test]
    fn discipline_specs_build_and_validate() {
        for d in ["fifo", "acks-first", "ack-filter-classic", "ack-filter-cake", "acq", "afvq"] {
            let v = disc_spec(d, 1e6, 2e7, 500, &toml::Table::new()).unwrap();
            let spec: ackshape_sim::scenario::QdiscSpec = v.clone().try_into().unwrap_or_else(|e| panic!("{d}: {e}"));
            spec.validate().unwrap_or_else(|e| panic!("{d}: {e}"));
        }
        let mut extra = toml::Table::new();
        extra.insert("s_max".into(), 7.into());
        let v = disc_spec("afvq", 1e6, 2e7, 500, &extra).unwrap();
        assert_eq!(v.get("s_max").and_then(|x| x.as_integer()), Some(7));
        assert!(disc_spec("red", 1.0, 1.0, 1, &toml::Table::new()).is_err());
        assert_eq!(expand("link.reverse.loss", 3), "topology.links[3].reverse.loss");
        assert_eq!(expand("tcp.mss", 3), "tcp.mss");
    }
}
