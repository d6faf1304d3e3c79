//! `ackshape compare`: run scenarios in the simulator and live, and compare what they measure.
//!
//! Per scenario: aggregate goodput (live / sim, within a tolerance), per-flow goodput CoV and
//! maximum buffer occupancy (the middlebox's data queue if the scenario has one, else the
//! bottleneck queue). Across scenarios: whether the mechanisms rank the same on buffer occupancy and
//! on CoV in both drivers — no pair of scenarios ordered oppositely, values within a tie margin
//! counting as ties; the strict rankings are reported too.
//!
//! The simulator runs each scenario with `--sim-seeds` seeds (the scenario's seed and the next
//! ones) and reports the mean; the spread over those seeds is the run-to-run noise of each metric.
//! Two scenarios count as tied on a metric when their difference is within `--noise-z` standard
//! deviations of the difference (√(sd_i² + sd_j²), the simulator's spread standing in for the live
//! run's, which is one sample), or within the fixed floor (`--cov-tie`, `--buffer-tie`).

use ackshape_sim::run::{fmt_rate, run_scenario, RunRequest};
use ackshape_sim::Scenario;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// Scenario files (dumbbell; each run once in the simulator and once live).
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// Largest accepted relative gap of aggregate goodput, |live − sim| / sim.
    #[arg(long, default_value_t = 0.10, value_parser = non_negative)]
    pub tolerance: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write OUT/NAME/sim/ and OUT/NAME/live/ (each run's files as `run --out` writes them; sim:
    /// the scenario's own seed), OUT/NAME/goodput-sim-vs-live.svg, OUT/compare.json and
    /// OUT/compare.csv.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit with status 1 if a scenario's goodput gap exceeds the tolerance or the orderings differ.
    #[arg(long)]
    pub strict: bool,
    /// Two scenarios' per-flow CoVs closer than this (absolute) count as a tie when comparing
    /// orderings (CoVs of a few hundredths are run-to-run noise).
    #[arg(long, default_value_t = 0.02, value_parser = non_negative)]
    pub cov_tie: f64,
    /// Two scenarios' buffer maxima closer than this fraction of the larger (or 2 packets) count
    /// as a tie when comparing orderings.
    #[arg(long, default_value_t = 0.10, value_parser = fraction)]
    pub buffer_tie: f64,
    /// Simulator runs per scenario (seeds: the scenario's and the next ones). Their spread is the
    /// run-to-run noise the orderings allow for; 1 = one run, fixed tie margins only.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub sim_seeds: u32,
    /// Differences within this many standard deviations of the seed-to-seed noise count as ties.
    #[arg(long, default_value_t = 2.0, value_parser = non_negative)]
    pub noise_z: f64,
    /// Set a key of every scenario, in both drivers, e.g. `--set tcp.cc=reno` (repeatable; as
    /// `run --set`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Never show a progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A finite number ≥ 0 (`--tolerance`, `--cov-tie`, `--noise-z`).
fn non_negative(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("expected a finite number ≥ 0, got {s:?}")),
    }
}

/// A fraction in [0, 1) (`--buffer-tie`).
fn fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => Err(format!("expected a fraction in [0, 1), got {s:?}")),
    }
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

/// Run `path` live (`run --live --json`, with `sets` as `--set`s, writing its files into `out` if
/// given).
fn live_summary(path: &std::path::Path, sets: &[String], out: Option<&std::path::Path>) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["run", "--live", "--json"]).arg(path);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    if let Some(o) = out {
        cmd.arg("--out").arg(o);
    }
    let out = cmd.output().map_err(|e| format!("running the live driver: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "live run of {} failed ({}): {}",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("live run of {}: bad JSON: {e}", path.display()))
}

pub fn cmd_compare(a: CompareArgs) -> ExitCode {
    use std::io::IsTerminal;
    let mut rows = Vec::new();
    // One step per simulator run and per live run (on a terminal only).
    let steps = a.scenarios.len() as u64 * (a.sim_seeds as u64 + 1);
    let bar = if !a.quiet && std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(steps)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} runs ({elapsed}): {msg}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    for p in &a.scenarios {
        let loaded = if a.set.is_empty() {
            Scenario::load(p).map_err(|e| e.to_string())
        } else {
            crate::sweep_cmd::with_sets(Some(p), &a.set).map(|(sc, _)| sc)
        };
        let sc = match loaded {
            Ok(s) => s,
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let file = p.display().to_string();
        let name = sc.name.clone().unwrap_or_else(|| file.clone());
        let dir = a.out.as_ref().map(|o| o.join(name.replace(['/', ' '], "_")));
        let mut sims = Vec::new();
        for k in 0..a.sim_seeds as u64 {
            // The scenario's own seed writes its files, as `run --out` would.
            let out = if k == 0 { dir.as_ref().map(|d| d.join("sim")) } else { None };
            let req = RunRequest { seed: Some(sc.seed.wrapping_add(k)), out, ..RunRequest::default() };
            bar.set_message(format!("{name}: simulator, seed {}", sc.seed.wrapping_add(k)));
            let res = run_scenario(&sc, &file, &req, None);
            bar.inc(1);
            match res {
                Ok(r) => sims.push(serde_json::to_value(&r.summary).expect("summary serialises")),
                Err(e) => {
                    bar.finish_and_clear();
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
        }
        bar.set_message(format!("{name}: live ({:.0} s of traffic)", sc.duration.0.as_secs_f64()));
        let live = live_summary(p, &a.set, dir.as_ref().map(|d| d.join("live")).as_deref());
        bar.inc(1);
        let live = match live {
            Ok(v) => v,
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Some(d) = &dir {
            if let Err(e) = goodput_overlay(d, &name) {
                bar.finish_and_clear();
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
        // What the live run warned of (a flow in another class than in the simulator) is part
        // of the comparison: printed, and kept in compare.json.
        let warnings = live.get("warnings").cloned();
        if let Some(ws) = warnings.as_ref().and_then(|w| w.as_array()) {
            for w in ws {
                bar.suspend(|| eprintln!("warning: {}", w.as_str().unwrap_or_default()));
            }
        }
        let over = |f: &dyn Fn(&Value) -> Option<f64>| -> (f64, f64) {
            mean_sd(&sims.iter().map(|s| f(s).unwrap_or(f64::NAN)).collect::<Vec<_>>())
        };
        let (gs, gs_sd) = over(&|s| s["aggregate"]["goodput_bps"].as_f64());
        let (cs, cs_sd) = over(&|s| s["aggregate"]["cov"].as_f64());
        let (bs, bs_sd) = over(&buffer_max);
        let gs = if gs.is_nan() { 0.0 } else { gs };
        let gl = live["aggregate"]["goodput_bps"].as_f64().unwrap_or(0.0);
        let gap = if gs > 0.0 { (gl - gs).abs() / gs } else { f64::INFINITY };
        let seeds: Vec<u64> = (0..a.sim_seeds as u64).map(|k| sc.seed.wrapping_add(k)).collect();
        rows.push(json!({
            "scenario": name,
            "file": file,
            "sim": {
                "goodput_bps": gs, "cov": cs, "buffer_max_pkts": bs,
                "seeds": seeds,
                "sd": { "goodput_bps": gs_sd, "cov": cs_sd, "buffer_max_pkts": bs_sd },
            },
            "live": {
                "goodput_bps": gl, "cov": live["aggregate"]["cov"], "buffer_max_pkts": buffer_max(&live),
                "stall_frames": stall_frames(&live),
            },
            "goodput_gap": gap,
            "goodput_within_tolerance": gap <= a.tolerance,
            "live_warnings": warnings.as_ref().and_then(|w| w.as_array()).map_or(0, Vec::len),
        }));
        if let Some(w) = warnings {
            rows.last_mut().expect("pushed")["warnings"] = w;
        }
    }
    bar.finish_and_clear();
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
    if let Some(out) = &a.out {
        let p = out.join("compare.json");
        if let Err(e) = std::fs::write(&p, serde_json::to_string_pretty(&report).unwrap() + "\n") {
            eprintln!("error: {}: {e}", p.display());
            return ExitCode::FAILURE;
        }
        // One row per scenario: the simulator's mean over its seeds (and the goodput's sd) against
        // the live run.
        let p = out.join("compare.csv");
        if let Err(e) = ackshape_sim::run::write_json_csv(&p, &rows, &CSV_COLUMNS) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap());
    } else {
        println!(
            "{:<28} {:>12} {:>12} {:>7} {:>8} {:>8} {:>9} {:>9}",
            "scenario", "sim goodput", "live goodput", "gap", "sim CoV", "live CoV", "sim buf", "live buf"
        );
        for r in report["scenarios"].as_array().unwrap() {
            let f = |v: &Value| v.as_f64().map(|x| format!("{x:.3}")).unwrap_or_else(|| "–".into());
            let b = |v: &Value| v.as_f64().map(|x| format!("{x:.0}")).unwrap_or_else(|| "–".into());
            println!(
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
        println!(
            "sim: mean of {} seeds; goodput within {:.0}%: {}; same ordering on buffer: {} (ties within {:.0}%, 2 pkts \
             or {} sd of the seed spread; strict ranking {}); on CoV: {} (ties within {} or {} sd; strict ranking {})",
            a.sim_seeds,
            a.tolerance * 100.0,
            all_within,
            same_buffer_order,
            btie * 100.0,
            a.noise_z,
            strict_buffer,
            same_cov_order,
            ctie,
            a.noise_z,
            strict_cov
        );
        for (what, d) in [("buffer", &report["buffer_discordant_pairs"]), ("CoV", &report["cov_discordant_pairs"])] {
            for p in d.as_array().into_iter().flatten() {
                println!("  ordered oppositely on {what}: {} and {}", p[0], p[1]);
            }
        }
        for line in warning_footnotes(&rows) {
            println!("{line}");
        }
    }
    if a.strict && !(all_within && same_buffer_order && same_cov_order) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
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
fn aggregate_series(p: &std::path::Path) -> Result<Vec<(f64, f64)>, String> {
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
fn goodput_overlay(dir: &std::path::Path, name: &str) -> Result<(), String> {
    overlay_plot(dir, name)?
        .write(dir, "goodput-sim-vs-live")
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// The plot of [`goodput_overlay`].
fn overlay_plot(dir: &std::path::Path, name: &str) -> Result<ackshape_sim::plot::Plot, String> {
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

    #[test]
    fn ranking_orders_by_value() {
        assert_eq!(ranking(&[3.0, 1.0, 2.0]), vec![1, 2, 0]);
    }
}
