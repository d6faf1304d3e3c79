//! `ackshape compare`: run scenarios in the simulator and live, and compare what they measure.
//!
//! Per scenario: aggregate goodput (live / sim, within a tolerance), per-flow goodput CoV and
//! maximum buffer occupancy (the middlebox's data queue if the scenario has one, else the
//! bottleneck queue). Across scenarios: whether the mechanisms rank the same on buffer occupancy and
//! on CoV in both drivers.

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
    #[arg(long, default_value_t = 0.10)]
    pub tolerance: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write OUT/NAME/{sim,live}/summary.json and OUT/compare.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit with status 1 if a scenario's goodput gap exceeds the tolerance or the orderings differ.
    #[arg(long)]
    pub strict: bool,
}

/// Maximum buffer occupancy in packets: a middlebox's data queue if it reports one, else the
/// bottleneck's queue maximum.
pub fn buffer_max(s: &Value) -> Option<f64> {
    if let Some(mbs) = s["middleboxes"].as_array() {
        for m in mbs {
            for key in ["data_queue_max_pkts", "buffer_data_max_pkts"] {
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

fn live_summary(path: &std::path::Path) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let out = Command::new(exe)
        .args(["run", "--live", "--json"])
        .arg(path)
        .output()
        .map_err(|e| format!("running the live driver: {e}"))?;
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
    let mut rows = Vec::new();
    for p in &a.scenarios {
        let sc = match Scenario::load(p) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let file = p.display().to_string();
        let name = sc.name.clone().unwrap_or_else(|| file.clone());
        let sim = match run_scenario(&sc, &file, &RunRequest::default(), None) {
            Ok(s) => serde_json::to_value(&s).expect("summary serialises"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let live = match live_summary(p) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Some(out) = &a.out {
            for (which, v) in [("sim", &sim), ("live", &live)] {
                let d = out.join(name.replace(['/', ' '], "_")).join(which);
                if let Err(e) = std::fs::create_dir_all(&d)
                    .and_then(|_| std::fs::write(d.join("summary.json"), serde_json::to_string_pretty(v).unwrap()))
                {
                    eprintln!("error: {}: {e}", d.display());
                    return ExitCode::FAILURE;
                }
            }
        }
        let gs = sim["aggregate"]["goodput_bps"].as_f64().unwrap_or(0.0);
        let gl = live["aggregate"]["goodput_bps"].as_f64().unwrap_or(0.0);
        let gap = if gs > 0.0 { (gl - gs).abs() / gs } else { f64::INFINITY };
        rows.push(json!({
            "scenario": name,
            "file": file,
            "sim": { "goodput_bps": gs, "cov": sim["aggregate"]["cov"], "buffer_max_pkts": buffer_max(&sim) },
            "live": { "goodput_bps": gl, "cov": live["aggregate"]["cov"], "buffer_max_pkts": buffer_max(&live) },
            "goodput_gap": gap,
            "goodput_within_tolerance": gap <= a.tolerance,
        }));
    }
    let col = |side: &str, key: &str| -> Vec<f64> {
        rows.iter().map(|r| r[side][key].as_f64().unwrap_or(f64::NAN)).collect()
    };
    let same_buffer_order = ranking(&col("sim", "buffer_max_pkts")) == ranking(&col("live", "buffer_max_pkts"));
    let same_cov_order = ranking(&col("sim", "cov")) == ranking(&col("live", "cov"));
    let all_within = rows.iter().all(|r| r["goodput_within_tolerance"] == true);
    let report = json!({
        "tolerance": a.tolerance,
        "scenarios": rows,
        "same_buffer_ordering": same_buffer_order,
        "same_cov_ordering": same_cov_order,
        "all_goodput_within_tolerance": all_within,
    });
    if let Some(out) = &a.out {
        let p = out.join("compare.json");
        if let Err(e) = std::fs::write(&p, serde_json::to_string_pretty(&report).unwrap() + "\n") {
            eprintln!("error: {}: {e}", p.display());
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
            "goodput within {:.0}%: {}; same ordering on buffer: {}; on CoV: {}",
            a.tolerance * 100.0,
            all_within,
            same_buffer_order,
            same_cov_order
        );
    }
    if a.strict && !(all_within && same_buffer_order && same_cov_order) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_max_prefers_the_middlebox() {
        let s = json!({"middleboxes": [{"stats": {"classes": {"c": {"data_queue_max_pkts": 7}}}}],
                       "links": [{"name": "bottleneck", "queue_max_pkts": 50}]});
        assert_eq!(buffer_max(&s), Some(7.0));
        let s = json!({"links": [{"name": "bottleneck:rev", "queue_max_pkts": 3}, {"name": "bottleneck", "queue_max_pkts": 50}]});
        assert_eq!(buffer_max(&s), Some(50.0));
    }

    #[test]
    fn ranking_orders_by_value() {
        assert_eq!(ranking(&[3.0, 1.0, 2.0]), vec![1, 2, 0]);
    }
}
