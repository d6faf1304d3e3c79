//! `ackshape sweep`: one scenario over several values of some of its keys and several seeds.

use ackshape_sim::sweep::Base;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// Scenario file (TOML, see docs/scenario.md). Default: the embedded example dumbbell.
    pub scenario: Option<PathBuf>,
    /// A key of the scenario and the values to run it with, e.g.
    /// `--set topology.bottleneck.rate=5Mbit/s,10Mbit/s,20Mbit/s` or
    /// `--set 'topology.bottleneck.qdisc={ kind = "red" },{ kind = "drr" }'` or
    /// `--set flows[0].count=2,4,8` (repeatable: every combination runs). Values are TOML values;
    /// bare words and quantities with units need no quotes.
    #[arg(long = "set", value_name = "KEY=V1,V2,…")]
    pub set: Vec<String>,
    /// Seeds per point: a count N (the scenario's seed and the N − 1 after it), a range 1-10, or a
    /// list 1,5,9.
    #[arg(long, default_value = "5", allow_hyphen_values = true)]
    pub seeds: String,
    /// The link direction whose queue, drops and utilization are reported (names as in `run`'s
    /// table). Default: `bottleneck` if there is one, else the busiest.
    #[arg(long, value_name = "LINK")]
    pub link: Option<String>,
    /// Write sweep.json, sweep.csv (one row per run), sweep-points.csv (mean and standard error per
    /// point), sweep-goodput.svg and sweep-queue.svg into this directory (with a gateway box also
    /// sweep-gateway-queue.svg and sweep-gateway-acks.svg: its data queue and held ACKs).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// More columns: any number in each run's summary.json, by its dotted path, optionally named,
    /// e.g. `--metric injections=middleboxes[0].stats.injections` or `--metric flows[0].goodput_bps`
    /// (repeatable; `ackshape run FILE --json` shows the keys).
    #[arg(long = "metric", value_name = "[NAME=]PATH")]
    pub metric: Vec<String>,
    /// With --out, also plot these metrics (comma-separated column names of sweep.csv, e.g.
    /// jain,retransmit_ratio, or a --metric's name) as sweep-METRIC.svg.
    #[arg(long, value_name = "METRIC,…", value_delimiter = ',')]
    pub plot: Vec<String>,
    /// Print sweep.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Worker threads (default: the machine's available parallelism). Results do not depend on it.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Never show a progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// A result store (a directory, created if new): runs it has from this build are not run
    /// again, and every run is kept in it as soon as it finishes, so that a sweep that was stopped
    /// resumes where it was. Results of other builds (version, commit) are never used.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Run the simulations on a Dask cluster: the address of its scheduler (e.g.
    /// tcp://10.0.0.5:8786). Needs the Python package (`pip install './crates/py[dask]'`, the same
    /// build on the workers) in the Python named by ACKSHAPE_PYTHON (default python3).
    #[arg(long, value_name = "ADDRESS", conflicts_with = "jobs")]
    pub dask: Option<String>,
}

/// The scenario to start from: the file, or the embedded example.
pub(crate) fn load_base(path: Option<&PathBuf>) -> Result<Base, String> {
    match path {
        Some(p) => Base::load(p),
        None => Base::parse(crate::common::DEFAULT_SCENARIO, "experiments/examples/dumbbell.toml"),
    }
}

pub(crate) use ackshape_sim::sweep::parse_settings;

/// The scenario (the file, or the embedded example) with one value per `--set`, and its name.
pub(crate) fn with_sets(path: Option<&PathBuf>, specs: &[String]) -> Result<(ackshape_sim::Scenario, String), String> {
    let settings = parse_settings(specs)?;
    ackshape_sim::sweep::one_value_each(&settings)?;
    let base = load_base(path)?;
    let sc = base.with_one_each(&settings)?;
    Ok((sc, base.file))
}

/// The scenario document `run` runs (the file, or the embedded example, with its `--set`s
/// applied), for `OUT/scenario.toml`.
pub(crate) fn run_doc(path: Option<&PathBuf>, specs: &[String]) -> Result<toml::Table, String> {
    let settings = parse_settings(specs)?;
    let base = load_base(path)?;
    let (doc, _) = base.doc_with(&settings, &vec![0; settings.len()]).map_err(|e| e.to_string())?;
    Ok(doc)
}

pub fn cmd_sweep(a: SweepArgs) -> ExitCode {
    let bad = |m: String| {
        eprintln!("error: {m}");
        ExitCode::from(crate::common::BAD_INPUT)
    };
    let base = match load_base(a.scenario.as_ref()) {
        Ok(b) => b,
        Err(e) => return bad(e),
    };
    let settings = match parse_settings(&a.set) {
        Ok(s) => s,
        Err(e) => return bad(e),
    };
    let (sweep, plots) = match ackshape_sim::sweep::plan(
        base,
        settings,
        &a.seeds,
        &a.metric,
        &a.plot,
        a.link.clone(),
        a.out.is_some(),
    ) {
        Ok(p) => p,
        Err(e) => return bad(e),
    };
    // 0 or none: the machine's available parallelism, as `reproduce -j`.
    let workers = a.jobs.filter(|&n| n > 0).unwrap_or_else(ackshape_sim::parallel::workers);
    let show_bar = !a.quiet && std::io::stderr().is_terminal();
    // Shown (on a terminal) once the sweep has taken a second, as `run`'s bar.
    let bar = indicatif::ProgressBar::hidden();
    let started = std::time::Instant::now();
    let mut shown = false;
    bar.set_style(
        indicatif::ProgressStyle::with_template("sweeping [{bar:40}] {pos}/{len} runs ({elapsed}, ~{eta} left)")
            .unwrap()
            .progress_chars("=> "),
    );
    let store = match &a.store {
        Some(dir) => match ackshape_sim::store::Store::open(dir) {
            Ok(s) => Some(s),
            Err(e) => return bad(format!("--store: {e}")),
        },
        None => None,
    };
    let mut runner: Box<dyn ackshape_sim::sweep::Runner> = match &a.dask {
        Some(addr) => match ackshape_sim::dask::DaskRunner::connect(addr) {
            Ok(r) => Box::new(r),
            Err(e) => {
                eprintln!("error: --dask {addr}: {e}");
                return ExitCode::from(crate::common::CANNOT_RUN);
            }
        },
        None => Box::new(ackshape_sim::sweep::Threads(workers)),
    };
    let res = sweep.run_with(runner.as_mut(), store.as_ref(), &mut |k, total| {
        if show_bar && !shown && started.elapsed() > std::time::Duration::from_secs(1) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_length(total as u64);
        bar.set_position(k as u64);
    });
    bar.finish_and_clear();
    let res = match res {
        Ok(r) => r,
        Err(e) => return bad(e),
    };
    if let Some(st) = &store {
        eprintln!(
            "store {}: {} runs found, {} computed and kept (build {}){}",
            st.root().display(),
            res.stored,
            res.computed,
            st.build(),
            match res.other_builds {
                0 => String::new(),
                n => format!("; {n} of them were in the store from other builds only, which are never used"),
            }
        );
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&res.to_json(&sweep.settings)).unwrap());
    } else {
        let goodput = ackshape_sim::sweep::metric_index("goodput_mbps").expect("listed");
        let seeds = match res.seeds.len() {
            1 => format!("seed {}", res.seeds[0]),
            n if res.same_over_seeds(goodput) => {
                format!("{n} seeds each; note: every point gave the same goodput with all {n} seeds (nothing random reaches it), so no ± s.e.")
            }
            n => format!("{n} seeds each, goodput as mean ± standard error"),
        };
        println!("{}: {} points, {seeds}; link columns: {}", res.file, res.points.len(), res.link);
        print!("{res}");
    }
    if let Some(out) = &a.out {
        let written = res.write(out, &sweep.settings, &plots).and_then(|mut files| {
            // The base scenario, resolved; sweep.json has the values of every point.
            let p = out.join("scenario.toml");
            let seed = sweep.seeds[0];
            let text = ackshape_sim::run::resolved_scenario_toml(&sweep.base.doc, &sweep.base.file, seed, &[])
                .map_err(ackshape_sim::run::RunError::Scenario)?;
            std::fs::write(&p, text)
                .map_err(|err| ackshape_sim::run::RunError::Io { path: p.display().to_string(), err })?;
            files.push(p);
            Ok(files)
        });
        match written {
            Ok(files) => {
                if !a.json {
                    println!("\n{}", crate::common::wrote_line(out, &files));
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
