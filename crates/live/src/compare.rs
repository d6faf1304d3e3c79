//! The comparison of a scenario run in the simulator and live (`ackshape compare`).
//!
//! Per scenario: aggregate goodput (live / sim, within a tolerance), per-flow goodput CoV and
//! maximum buffer occupancy (the middlebox's data queue if the scenario has one, else the
//! bottleneck queue). Across scenarios: whether the mechanisms rank the same on buffer occupancy and
//! on CoV in both drivers — no pair of scenarios ordered oppositely, values within a tie margin
//! counting as ties; the strict rankings are reported too.
//!
//! The simulator runs each scenario with several seeds (the scenario's seed and the next ones) and
//! the comparison takes the mean; the spread over those seeds is the run-to-run noise of each
//! metric. Two scenarios count as tied on a metric when their difference is within `noise_z`
//! standard deviations of the difference (√(sd_i² + sd_j²), the simulator's spread standing in for
//! the live run's, which is one sample), or within the fixed floor (`cov_tie`, `buffer_tie`).
//!
//! Everything here works on the two drivers' `summary.json` values; running them is the caller's.

use ackshape_sim::run::fmt_rate;
use serde_json::{json, Value};
use std::path::Path;

/// The margins of a comparison (the `compare` command's flags of the same names).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Largest accepted relative gap of aggregate goodput, |live − sim| / sim.
    pub tolerance: f64,
    /// Two scenarios' per-flow CoVs closer than this (absolute) count as a tie.
    pub cov_tie: f64,
    /// Two scenarios' buffer maxima closer than this fraction of the larger (or 2 packets) tie.
    pub buffer_tie: f64,
    /// Simulator runs per scenario.
    pub sim_seeds: u32,
    /// Differences within this many standard deviations of the seed-to-seed noise tie.
    pub noise_z: f64,
    /// The `--set`s applied to every scenario in both drivers.
    pub set: Vec<String>,
}

/// Mean and sample standard deviation (0 for one value); NaN values are skipped.
pub fn mean_sd(x: &[f64]) -> (f64, f64) {
    let v: Vec<f64> = x.iter().copied().filter(|x| !x.is_nan()).collect();
    ackshape_sim::stats::mean_sd(&v)
}

/// Pairs of scenarios (i, j) that the two drivers order oppositely: `a[i] < a[j]` beyond the tie
/// margin in one and `b[i] > b[j]` beyond it in the other. A pair tied in either driver is not
/// discordant. `tie(i, j, x, y)` is the margin for scenarios i and j with values x and y;
/// `tie_b`, when given, is the second driver's own margin (else `tie` serves both).
pub fn discordant_pairs(
    a: &[f64],
    b: &[f64],
    tie: &dyn Fn(usize, usize, f64, f64) -> f64,
    tie_b: Option<&dyn Fn(usize, usize, f64, f64) -> f64>,
) -> Vec<(usize, usize)> {
    let tie_b = tie_b.unwrap_or(tie);
    let mut out = Vec::new();
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            let da = a[i] - a[j];
            let db = b[i] - b[j];
            let ordered_a = da.abs() > tie(i, j, a[i], a[j]);
            let ordered_b = db.abs() > tie_b(i, j, b[i], b[j]);
            if ordered_a && ordered_b && da.signum() != db.signum() || da.is_nan() || db.is_nan() {
                out.push((i, j));
            }
        }
    }
    out
}

/// Frames that the gateway's longest measured stall (longest loop iteration, time runnable
/// between iterations, or timer wake-up lateness) accounts for at the run's goodput in full-size
/// frames, rounded up; None without the gateway's loop timing.
pub fn stall_frames(live: &Value) -> Option<f64> {
    let lt = live["gateway"].get("loop_timing")?;
    let stall_us = ["iteration_max_us", "between_iterations_max_us", "wake_late_max_us"]
        .iter()
        .filter_map(|k| lt[*k].as_f64())
        .fold(0.0, f64::max);
    let rate = live["aggregate"]["goodput_bps"].as_f64()?;
    Some((stall_us * 1e-6 * rate / (1514.0 * 8.0)).ceil())
}

/// Maximum buffer occupancy in packets: a middlebox's data queue if it reports one (after the
/// warm-up if the box reports that), else the bottleneck's queue maximum.
pub fn buffer_max(s: &Value) -> Option<f64> {
    if let Some(mbs) = s["middleboxes"].as_array() {
        for m in mbs {
            // After the warm-up where the box reports it (start-up bursts excluded), else whole run.
            for key in ["data_queue_max_pkts_after_warmup", "data_queue_max_pkts", "buffer_data_max_pkts"] {
                if let Some(v) = find_key(&m["stats"], key) {
                    return Some(v);
                }
            }
        }
    }
    if let Some(v) = find_key(&s["gateway"]["pipeline"], "data_queue_max_pkts") {
        return Some(v);
    }
    s["links"].as_array()?.iter().find(|l| l["name"] == "bottleneck")?["queue_max_pkts"].as_f64()
}

fn find_key(v: &Value, key: &str) -> Option<f64> {
    match v {
        Value::Object(m) => {
            if let Some(x) = m.get(key).and_then(Value::as_f64) {
                return Some(x);
            }
            m.values().find_map(|x| find_key(x, key))
        }
        _ => None,
    }
}

/// Indices of `v` sorted by value (ties keep input order).
fn ranking(v: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].partial_cmp(&v[b]).unwrap_or(std::cmp::Ordering::Equal));
    idx
}

/// One scenario's row of the comparison: the simulator's mean over its runs `sims` (with their
/// spread and seeds, from `seed` on) against the live run's summary `live`, the goodput gap and
/// whether it is within the tolerance, and what the live run warned of.
pub fn scenario_row(name: &str, file: &str, seed: u64, sims: &[Value], live: &Value, o: &Options) -> Value {
    let warnings = live.get("warnings").cloned();
    let over = |f: &dyn Fn(&Value) -> Option<f64>| -> (f64, f64) {
        mean_sd(&sims.iter().map(|s| f(s).unwrap_or(f64::NAN)).collect::<Vec<_>>())
    };
    let (gs, gs_sd) = over(&|s| s["aggregate"]["goodput_bps"].as_f64());
    let (cs, cs_sd) = over(&|s| s["aggregate"]["cov"].as_f64());
    let (bs, bs_sd) = over(&buffer_max);
    let gs = if gs.is_nan() { 0.0 } else { gs };
    let gl = live["aggregate"]["goodput_bps"].as_f64().unwrap_or(0.0);
    let gap = if gs > 0.0 { (gl - gs).abs() / gs } else { f64::INFINITY };
    let seeds: Vec<u64> = (0..o.sim_seeds as u64).map(|k| seed.wrapping_add(k)).collect();
    let mut row = json!({
        "scenario": name,
        "file": file,
        "sim": {
            "goodput_bps": gs, "cov": cs, "buffer_max_pkts": bs,
            "seeds": seeds,
            "sd": { "goodput_bps": gs_sd, "cov": cs_sd, "buffer_max_pkts": bs_sd },
        },
        "live": {
            "goodput_bps": gl, "cov": live["aggregate"]["cov"], "buffer_max_pkts": buffer_max(live),
            "stall_frames": stall_frames(live),
        },
        "goodput_gap": gap,
        "goodput_within_tolerance": gap <= o.tolerance,
        "live_warnings": warnings.as_ref().and_then(|w| w.as_array()).map_or(0, Vec::len),
    });
    if let Some(w) = warnings {
        row["warnings"] = w;
    }
    row
}

/// The comparison across scenarios: `compare.json` (`report`) and its rows, floats rounded as
/// `summary.json`'s.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub report: Value,
    pub rows: Vec<Value>,
    /// Every scenario's goodput gap within the tolerance, and the same orderings on buffer and CoV.
    pub holds: bool,
}

/// Compare the rows of [`scenario_row`] across scenarios: the pairs ordered oppositely on buffer
/// and on CoV beyond their tie margins, the strict rankings, one object per metric and scenario.
pub fn compare(mut rows: Vec<Value>, a: &Options) -> Comparison {
    let col = |side: &str, key: &str| -> Vec<f64> {
        rows.iter().map(|r| r[side][key].as_f64().unwrap_or(f64::NAN)).collect()
    };
    let strict_buffer = ranking(&col("sim", "buffer_max_pkts")) == ranking(&col("live", "buffer_max_pkts"));
    let strict_cov = ranking(&col("sim", "cov")) == ranking(&col("live", "cov"));
    let btie = a.buffer_tie;
    let ctie = a.cov_tie;
    let names: Vec<String> = rows.iter().map(|r| r["scenario"].as_str().unwrap_or("").to_string()).collect();
    let pairs =
        |d: Vec<(usize, usize)>| -> Vec<Value> { d.into_iter().map(|(i, j)| json!([names[i], names[j]])).collect() };
    let sd = |key: &str| -> Vec<f64> { rows.iter().map(|r| r["sim"]["sd"][key].as_f64().unwrap_or(0.0)).collect() };
    let z = a.noise_z;
    let noise = |s: &[f64], i: usize, j: usize| z * (s[i] * s[i] + s[j] * s[j]).sqrt();
    let (bsd, csd) = (sd("buffer_max_pkts"), sd("cov"));
    // Live only: while the gateway process does not run, what the senders send meanwhile waits
    // and then sits in the queue whatever the mechanism, so a live pair is also tied within the
    // frames the longer of the two runs' measured stalls accounts for (docs/live.md).
    let stall = col("live", "stall_frames");
    let btie_sim = |i, j, x: f64, y: f64| (btie * x.max(y)).max(2.0).max(noise(&bsd, i, j));
    let btie_live = |i: usize, j: usize, x: f64, y: f64| {
        btie_sim(i, j, x, y).max(stall[i].max(stall[j]).max(0.0) /* NaN: no stall measured */)
    };
    let buf_disc = pairs(discordant_pairs(
        &col("sim", "buffer_max_pkts"),
        &col("live", "buffer_max_pkts"),
        &btie_sim,
        Some(&btie_live),
    ));
    let cov_disc = pairs(discordant_pairs(
        &col("sim", "cov"),
        &col("live", "cov"),
        &|i, j, _, _| ctie.max(noise(&csd, i, j)),
        None,
    ));
    let same_buffer_order = buf_disc.is_empty();
    let same_cov_order = cov_disc.is_empty();
    let all_within = rows.iter().all(|r| r["goodput_within_tolerance"] == true);
    // One object per metric and scenario (`metric`, `sim`, `live`, `tolerance`, `holds`): goodput
    // has a tolerance of its own; CoV and buffer are judged across scenarios by their ordering.
    let mut metrics = Vec::new();
    for r in &rows {
        metrics.push(json!({
            "scenario": r["scenario"], "metric": "aggregate_goodput_bps",
            "sim": r["sim"]["goodput_bps"], "live": r["live"]["goodput_bps"],
            "tolerance": a.tolerance, "holds": r["goodput_within_tolerance"],
        }));
        metrics.push(json!({
            "scenario": r["scenario"], "metric": "per_flow_cov",
            "sim": r["sim"]["cov"], "live": r["live"]["cov"],
            "tolerance": format!(
                "same ordering across scenarios (ties within {} or {} sd of the simulator's {}-seed spread)",
                a.cov_tie, a.noise_z, a.sim_seeds
            ),
            "holds": same_cov_order,
        }));
        metrics.push(json!({
            "scenario": r["scenario"], "metric": "buffer_max_pkts",
            "sim": r["sim"]["buffer_max_pkts"], "live": r["live"]["buffer_max_pkts"],
            "tolerance": format!(
                "same ordering across scenarios (ties within {:.0}%, 2 packets or {} sd of the simulator's {}-seed spread)",
                a.buffer_tie * 100.0,
                a.noise_z,
                a.sim_seeds
            ),
            "holds": same_buffer_order,
        }));
    }
    // Floats as summary.json prints them (12 significant digits), in compare.json and compare.csv alike.
    rows.iter_mut().for_each(ackshape_sim::run::round_json);
    let mut report = json!({
        "ackshape": ackshape_sim::provenance::Provenance::json(),
        "set": a.set,
        "tolerance": a.tolerance,
        "metrics": metrics,
        "scenarios": rows,
        "same_buffer_ordering": same_buffer_order,
        "same_cov_ordering": same_cov_order,
        "buffer_tie": btie,
        "cov_tie": ctie,
        "sim_seeds": a.sim_seeds,
        "noise_z": a.noise_z,
        "buffer_discordant_pairs": buf_disc,
        "cov_discordant_pairs": cov_disc,
        "same_buffer_ranking_strict": strict_buffer,
        "same_cov_ranking_strict": strict_cov,
        "all_goodput_within_tolerance": all_within,
    });
    ackshape_sim::run::round_json(&mut report);
    Comparison { report, rows, holds: all_within && same_buffer_order && same_cov_order }
}

impl Comparison {
    /// Write `OUT/compare.json` and `OUT/compare.csv` (one row per scenario: the simulator's mean
    /// over its seeds, and the goodput's sd, against the live run).
    pub fn write(&self, out: &Path) -> Result<(), String> {
        let p = out.join("compare.json");
        std::fs::write(&p, serde_json::to_string_pretty(&self.report).unwrap() + "\n")
            .map_err(|e| format!("{}: {e}", p.display()))?;
        let p = out.join("compare.csv");
        ackshape_sim::run::write_json_csv(&p, &self.rows, &CSV_COLUMNS).map_err(|e| e.to_string())
    }

    /// The table a terminal shows: a row per scenario, a line on the orderings, the pairs ordered
    /// oppositely and the scenarios whose live run warned.
    pub fn text(&self, a: &Options) -> String {
        use std::fmt::Write;
        let report = &self.report;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<28} {:>12} {:>12} {:>7} {:>8} {:>8} {:>9} {:>9}",
            "scenario", "sim goodput", "live goodput", "gap", "sim CoV", "live CoV", "sim buf", "live buf"
        );
        for r in report["scenarios"].as_array().into_iter().flatten() {
            let f = |v: &Value| v.as_f64().map(|x| format!("{x:.3}")).unwrap_or_else(|| "–".into());
            let b = |v: &Value| v.as_f64().map(|x| format!("{x:.0}")).unwrap_or_else(|| "–".into());
            let _ = writeln!(
                s,
                "{:<28} {:>12} {:>12} {:>6.1}% {:>8} {:>8} {:>9} {:>9}",
                r["scenario"].as_str().unwrap_or(""),
                fmt_rate(r["sim"]["goodput_bps"].as_f64().unwrap_or(0.0)),
                fmt_rate(r["live"]["goodput_bps"].as_f64().unwrap_or(0.0)),
                r["goodput_gap"].as_f64().unwrap_or(f64::NAN) * 100.0,
                f(&r["sim"]["cov"]),
                f(&r["live"]["cov"]),
                b(&r["sim"]["buffer_max_pkts"]),
                b(&r["live"]["buffer_max_pkts"]),
            );
        }
        let _ = writeln!(
            s,
            "sim: mean of {} seeds; goodput within {:.0}%: {}; same ordering on buffer: {} (ties within {:.0}%, 2 pkts \
             or {} sd of the seed spread; strict ranking {}); on CoV: {} (ties within {} or {} sd; strict ranking {})",
            a.sim_seeds,
            a.tolerance * 100.0,
            report["all_goodput_within_tolerance"],
            report["same_buffer_ordering"],
            a.buffer_tie * 100.0,
            a.noise_z,
            report["same_buffer_ranking_strict"],
            report["same_cov_ordering"],
            a.cov_tie,
            a.noise_z,
            report["same_cov_ranking_strict"]
        );
        for (what, d) in [("buffer", &report["buffer_discordant_pairs"]), ("CoV", &report["cov_discordant_pairs"])] {
            for p in d.as_array().into_iter().flatten() {
                let _ = writeln!(s, "  ordered oppositely on {what}: {} and {}", p[0], p[1]);
            }
        }
        for line in warning_footnotes(&self.rows) {
            let _ = writeln!(s, "{line}");
        }
        s
    }
}

/// The columns of `compare.csv`: (header, path into a row of the report's `scenarios`).
const CSV_COLUMNS: [(&str, &str); 12] = [
    ("scenario", "scenario"),
    ("file", "file"),
    ("sim_goodput_bps", "sim/goodput_bps"),
    ("sim_goodput_sd_bps", "sim/sd/goodput_bps"),
    ("live_goodput_bps", "live/goodput_bps"),
    ("goodput_gap", "goodput_gap"),
    ("goodput_within_tolerance", "goodput_within_tolerance"),
    ("sim_cov", "sim/cov"),
    ("live_cov", "live/cov"),
    ("sim_buffer_max_pkts", "sim/buffer_max_pkts"),
    ("live_buffer_max_pkts", "live/buffer_max_pkts"),
    ("live_warnings", "live_warnings"),
];

/// One line under the table per scenario whose live run warned (its policy puts flows in another
/// class live than in the simulator, or its links have what the testbed does not apply): by the
/// time the table prints, those warnings have scrolled by, and they may be the whole of the gap.
fn warning_footnotes(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let n = r["warnings"].as_array().map_or(0, Vec::len);
            (n > 0).then(|| {
                format!(
                    "  {}: {n} warning{} above (`warnings` in compare.json): the live run classifies, queues or \
                     delays traffic otherwise than the simulator, so the two runs may not measure the same thing",
                    r["scenario"].as_str().unwrap_or(""),
                    if n == 1 { "" } else { "s" }
                )
            })
        })
        .collect()
}

/// Aggregate goodput per bin (sum over the flows of `timeseries.csv`).
fn aggregate_series(p: &Path) -> Result<Vec<(f64, f64)>, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut by_t: std::collections::BTreeMap<u64, f64> = Default::default();
    for (i, l) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let num = |k: usize| f.get(k).and_then(|x| x.parse::<f64>().ok());
        let (Some(t), Some(g)) = (num(0), num(2)) else {
            return Err(format!("{}: line {}: expected t_end_s,flow,goodput_bps", p.display(), i + 1));
        };
        *by_t.entry((t * 1e9).round() as u64).or_default() += g;
    }
    Ok(by_t.into_iter().map(|(t, g)| (t as f64 * 1e-9, g)).collect())
}

/// `DIR/goodput-sim-vs-live.svg` and `.png`: the aggregate goodput per bin of `DIR/sim` and `DIR/live`.
pub fn goodput_overlay(dir: &Path, name: &str) -> Result<(), String> {
    overlay_plot(dir, name)?
        .write(dir, "goodput-sim-vs-live")
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// The plot of [`goodput_overlay`].
pub fn overlay_plot(dir: &Path, name: &str) -> Result<ackshape_sim::plot::Plot, String> {
    use ackshape_sim::plot::{line_chart, Series};
    let series = vec![
        Series { name: "simulator".into(), points: aggregate_series(&dir.join("sim/timeseries.csv"))? },
        Series { name: "live".into(), points: aggregate_series(&dir.join("live/timeseries.csv"))? },
    ];
    Ok(line_chart(
        &format!("{name}: aggregate goodput, simulator vs live"),
        "time (s)",
        "aggregate goodput (Mbit/s)",
        1e6,
        &series,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sim-vs-live plot of a compare run, from a simulated run and a live run's recorded
    /// `timeseries.csv` (as `run --live --out` writes it: the live flows end at their last byte),
    /// renders with no text cut or overlapping and no data outside its axes.
    #[test]
    fn the_sim_vs_live_plot_lays_out_cleanly() {
        let d = std::env::temp_dir().join(format!("ackshape-overlay-{}", std::process::id()));
        for (sub, scale, bins) in [("sim", 1.0, 30), ("live", 0.93, 27)] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
            let mut s = String::from("t_end_s,flow,goodput_bps\n");
            for f in 0..3 {
                for t in 1..=bins {
                    let g = scale * 3.2e6 * (1.0 + 0.1 * ((t * (f + 2)) % 5) as f64);
                    s += &format!("{t},{f},{g}\n");
                }
            }
            std::fs::write(d.join(sub).join("timeseries.csv"), s).unwrap();
        }
        let plot = overlay_plot(&d, "rate-tcr").unwrap();
        let r = plot.render();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(plot.series_names(), ["simulator", "live"]);
        goodput_overlay(&d, "rate-tcr").unwrap();
        assert!(d.join("goodput-sim-vs-live.svg").is_file() && d.join("goodput-sim-vs-live.png").is_file());
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn scenarios_whose_live_run_warned_are_named_under_the_table() {
        let rows = vec![
            json!({"scenario": "a"}),
            json!({"scenario": "b", "warnings": ["w1", "w2"]}),
            json!({"scenario": "c", "warnings": []}),
            json!({"scenario": "d", "warnings": ["w"]}),
        ];
        let lines = warning_footnotes(&rows);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("  b: 2 warnings above"), "{}", lines[0]);
        assert!(lines[1].starts_with("  d: 1 warning above"), "{}", lines[1]);
    }

    #[test]
    fn buffer_max_prefers_the_middlebox() {
        let s = json!({"middleboxes": [{"stats": {"classes": {"c": {"data_queue_max_pkts": 7}}}}],
                       "links": [{"name": "bottleneck", "queue_max_pkts": 50}]});
        assert_eq!(buffer_max(&s), Some(7.0));
        let s = json!({"links": [{"name": "bottleneck:rev", "queue_max_pkts": 3}, {"name": "bottleneck", "queue_max_pkts": 50}]});
        assert_eq!(buffer_max(&s), Some(50.0));
    }

    #[test]
    fn buffer_max_prefers_the_window_after_warmup() {
        let s = json!({"middleboxes": [{"stats": {"classes": {"c": {"data_queue_max_pkts": 77, "data_queue_max_pkts_after_warmup": 8}}}}]});
        assert_eq!(buffer_max(&s), Some(8.0));
    }

    #[test]
    fn discordant_pairs_ignore_ties() {
        let tie = |_: usize, _: usize, _: f64, _: f64| 0.02;
        // 0.010 vs 0.011 is a tie; 0.05 vs 0.2 is ordered the same way in both.
        assert!(discordant_pairs(&[0.010, 0.011, 0.2], &[0.016, 0.011, 0.05], &tie, None).is_empty());
        // Ordered oppositely beyond the margin.
        assert_eq!(discordant_pairs(&[0.01, 0.2], &[0.3, 0.05], &tie, None), vec![(0, 1)]);
        // Missing values never agree.
        assert_eq!(discordant_pairs(&[f64::NAN, 0.2], &[0.3, 0.05], &tie, None), vec![(0, 1)]);
        // A wider margin in the second driver only (a live stall): the same pair is a tie there.
        let wide = |_: usize, _: usize, _: f64, _: f64| 0.5;
        assert!(discordant_pairs(&[0.01, 0.2], &[0.3, 0.05], &tie, Some(&wide)).is_empty());
    }

    #[test]
    fn seed_noise_widens_the_tie_of_noisy_pairs_only() {
        // Two noisy scenarios (sd 0.1 each) and a steady one (sd 0).
        let sd: [f64; 3] = [0.1, 0.1, 0.0];
        let tie = |i: usize, j: usize, _: f64, _: f64| 0.02f64.max(2.0 * (sd[i] * sd[i] + sd[j] * sd[j]).sqrt());
        // 0.21 vs 0.43 in one driver and 0.16 vs 0.13 in the other: within the noise, a tie.
        assert!(discordant_pairs(&[0.21, 0.43, 0.0], &[0.16, 0.13, 0.01], &tie, None).is_empty());
        // The steady one ordered oppositely against a noisy one beyond its noise: discordant.
        assert_eq!(discordant_pairs(&[0.0, 0.1, 0.5], &[0.0, 0.9, 0.5], &tie, None), vec![(1, 2)]);
    }

    #[test]
    fn mean_sd_of_samples() {
        let (m, s) = mean_sd(&[1.0, 3.0, f64::NAN]);
        assert_eq!(m, 2.0);
        assert!((s - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[5.0]), (5.0, 0.0));
        assert!(mean_sd(&[]).0.is_nan());
    }

    fn opts() -> Options {
        Options { tolerance: 0.1, cov_tie: 0.02, buffer_tie: 0.1, sim_seeds: 2, noise_z: 2.0, set: vec![] }
    }

    fn summary(goodput: f64, cov: f64, queue: u64) -> Value {
        json!({"aggregate": {"goodput_bps": goodput, "cov": cov},
               "links": [{"name": "bottleneck", "queue_max_pkts": queue}]})
    }

    /// Two scenarios whose simulator runs and live run agree on goodput and order the buffer the
    /// same way, but the CoV oppositely beyond the margins: the comparison does not hold, names
    /// the pair, and the table says so.
    #[test]
    fn a_comparison_finds_the_pairs_ordered_oppositely() {
        let o = opts();
        let a = scenario_row(
            "a",
            "a.toml",
            7,
            &[summary(9e6, 0.05, 10), summary(11e6, 0.05, 12)],
            &summary(10.5e6, 0.30, 20),
            &o,
        );
        assert_eq!(a["sim"]["goodput_bps"], 10e6);
        assert_eq!(a["sim"]["seeds"], json!([7, 8]));
        assert_eq!(a["goodput_within_tolerance"], true);
        let mut live_b = summary(4e6, 0.01, 80);
        live_b["warnings"] = json!(["w"]);
        let b = scenario_row("b", "b.toml", 1, &[summary(5e6, 0.4, 60), summary(5e6, 0.4, 60)], &live_b, &o);
        assert_eq!(b["goodput_gap"], 0.2);
        assert_eq!(b["live_warnings"], 1);
        let c = compare(vec![a, b], &o);
        assert!(!c.holds);
        assert_eq!(c.report["same_buffer_ordering"], true);
        assert_eq!(c.report["cov_discordant_pairs"], json!([["a", "b"]]));
        assert_eq!(c.report["all_goodput_within_tolerance"], false);
        assert_eq!(c.report["metrics"].as_array().unwrap().len(), 6);
        let t = c.text(&o);
        assert!(t.contains("  ordered oppositely on CoV: \"a\" and \"b\"\n"), "{t}");
        assert!(t.contains("  b: 1 warning above"), "{t}");
        let d = std::env::temp_dir().join(format!("ackshape-compare-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        c.write(&d).unwrap();
        let csv = std::fs::read_to_string(d.join("compare.csv")).unwrap();
        assert!(csv.starts_with("scenario,file,sim_goodput_bps,"), "{csv}");
        assert_eq!(csv.lines().count(), 3, "{csv}");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn ranking_orders_by_value() {
        assert_eq!(ranking(&[3.0, 1.0, 2.0]), vec![1, 2, 0]);
    }
}
