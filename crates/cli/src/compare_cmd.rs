//! `ackshape compare`: run scenarios in the simulator and live, and compare what they measure
//! ([`ackshape_live::compare`] says how).

use ackshape_live::compare::{self, Options};
use ackshape_sim::run::{run_scenario, RunRequest};
use ackshape_sim::Scenario;
use serde_json::Value;
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
    let opts = Options {
        tolerance: a.tolerance,
        cov_tie: a.cov_tie,
        buffer_tie: a.buffer_tie,
        sim_seeds: a.sim_seeds,
        noise_z: a.noise_z,
        set: a.set.clone(),
    };
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
    let fail = |code: u8, e: String| {
        bar.finish_and_clear();
        eprintln!("error: {e}");
        ExitCode::from(code)
    };
    for p in &a.scenarios {
        let loaded = if a.set.is_empty() {
            Scenario::load(p).map_err(|e| e.to_string())
        } else {
            crate::sweep_cmd::with_sets(Some(p), &a.set).map(|(sc, _)| sc)
        };
        let sc = match loaded {
            Ok(s) => s,
            Err(e) => return fail(crate::common::BAD_INPUT, e),
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
                Err(e) => return fail(crate::common::BAD_INPUT, e.to_string()),
            }
        }
        bar.set_message(format!("{name}: live ({:.0} s of traffic)", sc.duration.0.as_secs_f64()));
        let live = live_summary(p, &a.set, dir.as_ref().map(|d| d.join("live")).as_deref());
        bar.inc(1);
        let live = match live {
            Ok(v) => v,
            Err(e) => return fail(crate::common::RUNTIME, e),
        };
        if let Some(d) = &dir {
            if let Err(e) = compare::goodput_overlay(d, &name) {
                return fail(crate::common::RUNTIME, e);
            }
        }
        // What the live run warned of (a flow in another class than in the simulator) is part
        // of the comparison: printed, and kept in compare.json.
        for w in live.get("warnings").and_then(|w| w.as_array()).into_iter().flatten() {
            bar.suspend(|| eprintln!("warning: {}", w.as_str().unwrap_or_default()));
        }
        rows.push(compare::scenario_row(&name, &file, sc.seed, &sims, &live, &opts));
    }
    bar.finish_and_clear();
    let c = compare::compare(rows, &opts);
    if let Some(out) = &a.out {
        if let Err(e) = c.write(out) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&c.report).unwrap());
    } else {
        print!("{}", c.text(&opts));
    }
    if a.strict && !c.holds {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
