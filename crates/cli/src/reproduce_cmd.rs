//! `ackshape reproduce`: run the papers' experiments and check their claims.

use ackshape_repro::{
    apply_sets, check_set_keys, claim_records, registry, run_experiment, select, set_workers, totals, workers,
    write_index, write_output_with, Ctx, Experiment, RunInfo, Status, PAPERS, STUDY, STUDY_DESCRIPTION,
};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReproduceArgs {
    /// Experiment IDs (e.g. P2-F10) or paper prefixes (e.g. P2). Default: all.
    pub ids: Vec<String>,
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Print one JSON array on stdout with one object per claim record: `id` (the experiment),
    /// `claim_id`, `claim`, `paper`, `paper_value`, `measured_value`, `unit`, `measure`, `measured`,
    /// `check`, `tolerance`, `criterion`, `status` (holds, fails, not-assessable), `reading`, `primary`,
    /// `supplementary`, `cause`, `reason`, `link`, `title`, `file`, `quick`.
    #[arg(long)]
    pub json: bool,
    /// Directory for the results (OUT/ID/report.md, claims.json, CSVs, SVG plots). Default:
    /// results/reproduce, or results/reproduce-quick with --quick.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Fewer seeds and sweep points (what the test suite runs); the report says so.
    #[arg(long)]
    pub quick: bool,
    /// Base seed (a whole number from 0 to 2^64 − 1).
    #[arg(long, default_value_t = 1, allow_hyphen_values = true, value_parser = crate::common::parse_seed)]
    pub seed: u64,
    /// Exit with status 1 if any claim does not hold.
    #[arg(long)]
    pub strict: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Worker threads for the simulations (default: the machine's available parallelism).
    /// Results do not depend on it.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Change a key of each chosen experiment's file for this run, e.g. `--set tcp.cc=reno` or
    /// `--set paper.seeds=20` (repeatable; as `run --set`). The paper's values and tolerances stay;
    /// keys the experiment sets per run (what it sweeps) keep its values. The report, run.json and
    /// the JSON records say what was changed; use --out to keep the results apart.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Run the simulations on the Dask cluster whose scheduler is at ADDRESS (e.g.
    /// tcp://10.0.0.5:8786) instead of on threads here; the claims are the same. Needs the Python
    /// package (`pip install './crates/py[dask]'`, the same build on every worker).
    #[arg(long, value_name = "ADDRESS")]
    pub dask: Option<String>,
}

pub fn cmd_reproduce(a: ReproduceArgs) -> ExitCode {
    let all = registry();
    if a.list {
        println!("Papers (set-up, assumptions and traps of each: docs/experiments.md):");
        for p in &PAPERS {
            println!("  {}  {}.", p.id, p.citation);
        }
        println!("  {:<2}  {}.", STUDY, STUDY_DESCRIPTION);
        println!(
            "\nExperiments (ID = paper, then F figure, T table, S section, A algorithm, M model; M-Pn: the study's rerun of paper n's set-up):"
        );
        for e in &all {
            println!("{:<10} {:<60} {}", e.id, e.title, e.file);
        }
        return ExitCode::SUCCESS;
    }
    let chosen = match select(&all, &a.ids) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if chosen.is_empty() {
        eprintln!("error: no experiments are registered");
        return ExitCode::from(2);
    }
    // With --set: each chosen experiment with its file changed, all checked before any runs.
    let mut set_texts = Vec::new();
    let changed: Vec<Experiment> = if a.set.is_empty() {
        Vec::new()
    } else {
        let settings = match crate::sweep_cmd::parse_settings(&a.set) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        if let Some(s) = settings.iter().find(|s| s.values.len() > 1) {
            eprintln!(
                "error: --set {}: reproduce takes one value per key, got {}; run it once per value",
                s.key,
                s.values.len()
            );
            return ExitCode::from(2);
        }
        set_texts = settings.iter().map(|s| format!("{}={}", s.key, s.texts[0])).collect();
        let sets: Vec<(String, toml::Value)> = settings.iter().map(|s| (s.key.clone(), s.values[0].clone())).collect();
        let mut v = Vec::new();
        let keys: Vec<String> = sets.iter().map(|(k, _)| k.clone()).collect();
        for exp in &chosen {
            match check_set_keys(exp.text, exp.file, exp.id, &keys, a.quick) {
                Ok(warnings) => warnings.iter().for_each(|w| eprintln!("warning: {}: {w}", exp.id)),
                Err(e) => {
                    eprintln!("error: {}: {e}", exp.id);
                    return ExitCode::from(2);
                }
            }
            match apply_sets(exp.text, exp.file, &sets) {
                // Experiments borrow their file's text for the whole program; a changed copy is
                // made once per chosen experiment.
                Ok(text) => v.push(Experiment { text: Box::leak(text.into_boxed_str()), ..**exp }),
                Err(e) => {
                    eprintln!("error: {}: {e}", exp.id);
                    return ExitCode::from(2);
                }
            }
        }
        v
    };
    let chosen: Vec<&Experiment> = if changed.is_empty() { chosen } else { changed.iter().collect() };
    if let Some(j) = a.jobs {
        set_workers(j);
    }
    let out_root = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(if a.quick { "results/reproduce-quick" } else { "results/reproduce" }));
    let mut dask = match &a.dask {
        Some(addr) => match ackshape_sim::dask::DaskRunner::connect(addr) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("error: --dask {addr}: {e}");
                return ExitCode::from(crate::common::CANNOT_RUN);
            }
        },
        None => None,
    };
    let show_bar = !a.quiet && std::io::stderr().is_terminal();
    let mut records = Vec::new();
    let mut failed_claims = 0usize;
    let mut errors = 0usize;
    for (i, exp) in chosen.iter().enumerate() {
        let bar = if show_bar { indicatif::ProgressBar::new(1000) } else { indicatif::ProgressBar::hidden() };
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "[{}/{}] {{msg}} [{{bar:40}}] {{percent}}% ({{elapsed}}, ~{{eta}} left)",
                i + 1,
                chosen.len()
            ))
            .unwrap()
            .progress_chars("=> "),
        );
        bar.set_message(exp.id.to_string());
        let mut progress = |f: f64| bar.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64);
        let runner = dask.as_mut().map(|r| r as &mut dyn ackshape_repro::Runner);
        let mut ctx = Ctx {
            quick: a.quick,
            seed: a.seed,
            progress: Some(&mut progress),
            mechanism_off: false,
            readings: true,
            runner,
        };
        let t0 = std::time::Instant::now();
        let res = run_experiment(exp, &mut ctx);
        let wall = t0.elapsed().as_secs_f64();
        bar.finish_and_clear();
        match res {
            Ok(out) => {
                let dir = out_root.join(exp.id);
                let run = RunInfo { set: set_texts.clone(), ..RunInfo::new(&out, exp, a.quick, a.seed, wall) };
                // The experiment's file as run (its --set values applied) beside the results.
                let scenario = exp
                    .text
                    .parse::<toml::Table>()
                    .map_err(|e| format!("{}: {e}", exp.file))
                    .and_then(|doc| ackshape_sim::run::resolved_scenario_toml(&doc, exp.file, a.seed, &set_texts))
                    .and_then(|text| {
                        std::fs::create_dir_all(&dir)
                            .and_then(|_| std::fs::write(dir.join("scenario.toml"), text))
                            .map_err(|e| format!("{}: {e}", dir.join("scenario.toml").display()))
                    });
                if let Err(e) = scenario {
                    eprintln!("error: {e}");
                    errors += 1;
                }
                match write_output_with(&out, exp, &run, &dir) {
                    Ok(report) => {
                        if !a.json {
                            println!(
                                "{} — {}: {} ({:.0} s, {} workers)",
                                exp.id,
                                run.title,
                                run.verdict(),
                                wall,
                                workers()
                            );
                            for c in &out.claims {
                                let tag = match c.status {
                                    Status::Holds => "ok",
                                    Status::Fails => "NO",
                                    Status::NotAssessable => "--",
                                };
                                let mut extra = String::new();
                                if c.supplementary {
                                    extra += ", supplementary";
                                }
                                if !c.primary {
                                    extra += &format!(", reading {}", c.reading);
                                }
                                println!(
                                    "  [{tag}] {}: measured {} (paper {}; {}{extra})",
                                    c.claim, c.measured, c.paper, c.criterion
                                );
                                if c.status != Status::Holds {
                                    println!(
                                        "       {}: {}",
                                        if c.cause == "n/a" { "why" } else { &c.cause },
                                        c.reason
                                    );
                                }
                            }
                            println!("  report: {}", report.display());
                        }
                    }
                    Err(e) => {
                        eprintln!("error: {}: {e}", dir.display());
                        errors += 1;
                    }
                }
                failed_claims += out.claims.iter().filter(|c| c.counted() && c.status == Status::Fails).count();
                records.extend(claim_records(&out, &set_texts));
            }
            Err(e) => {
                eprintln!("error: {}: {e}", exp.id);
                errors += 1;
            }
        }
    }
    // One totals line per paper and the study's (to stderr with --json: stdout is one JSON document).
    for line in totals(&records) {
        if a.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    match write_index(&out_root) {
        Ok(p) if !a.json => println!("index: {}", p.display()),
        Ok(_) => {}
        Err(e) => {
            eprintln!("error: {}: {e}", out_root.join("index.md").display());
            errors += 1;
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&records).unwrap());
    }
    if errors > 0 {
        ExitCode::FAILURE
    } else if a.strict && failed_claims > 0 {
        eprintln!("{failed_claims} claim(s) do not hold");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
