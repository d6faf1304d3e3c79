//! `ackshape`: shape TCP by controlling its ACKs — the command-line front end.
//!
//! **What it is.** Argument parsing, progress bars, tables and exit codes around the library
//! crates: `run` (simulator, or `--live`), `sweep`, `validate`, `model`, `gateway`, `wanem`, `tap`,
//! `testbed`, `reproduce`, `compare`, `example`.
//! Exit codes: 0 success, 1 runtime failure, 2 bad input (file, key and expectation named),
//! 3 the live path cannot run on this machine (not root, tools missing).
//!
//! **What it is not.** No decisions live here: shaping and TCP are in `ackshape-core`, the event
//! loop in `ackshape-sim`, packet I/O in `ackshape-live`.

use ackshape_core::model::{self, ModelInput};
use ackshape_core::units;
use ackshape_sim::run::{format_table, run_scenario, RunRequest};
use ackshape_sim::Scenario;
use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::{parse_seed, wrote_line, BAD_INPUT, DEFAULT_SCENARIO, RUNTIME};

mod common;
mod compare_cmd;
mod live_cmd;
mod reproduce_cmd;
mod sweep_cmd;
mod tap_cmd;

#[derive(Parser)]
#[command(name = "ackshape", version, about = "Shape TCP by controlling its ACKs: a deterministic simulator, analytic models and a live gateway", long_about = None, after_help = EXIT_STATUS_HELP)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario in the simulator: prints a metrics table, writes summary.json and CSVs with --out.
    Run(RunArgs),
    /// Check scenario files (or, with --policy or --tap, live policy files) and exit: 0 if all
    /// are valid, 2 with the file and the offending key if not.
    Validate {
        /// Scenario files (TOML, see docs/scenario.md); with --policy or --tap, those policy files.
        /// Each is checked; the exit status is 2 if any is invalid.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
        /// FILE is a gateway policy (`ackshape gateway --policy`, docs/policy.md): check it as the
        /// gateway loads it (and a SIGHUP reload), print what it will do and any warnings.
        #[arg(long, conflicts_with = "tap")]
        policy: bool,
        /// FILE is a tap policy (`ackshape tap --policy`, docs/policy.md "Tap policy").
        #[arg(long)]
        tap: bool,
    },
    /// Analytic TCP throughput models.
    Model {
        #[command(subcommand)]
        which: ModelCmd,
    },
    /// Live inline gateway between two interfaces (root; AF_PACKET). Stops on SIGINT/SIGTERM.
    Gateway(live_cmd::GatewayArgs),
    /// Live userspace WAN emulator between two interfaces: delay, jitter, loss, rate limit.
    Wanem(live_cmd::WanemArgs),
    /// Live third-party tap (Bansal and Ward, P4): reads a router's mirrored traffic and injects duplicate
    /// ACKs (triple-ACK, zero-window) through a second port, per a policy (root; AF_PACKET).
    Tap(tap_cmd::TapArgs),
    /// Build or remove the network-namespace testbed of a scenario (root).
    Testbed {
        #[command(subcommand)]
        cmd: live_cmd::TestbedCmd,
    },
    /// Run the papers' experiments (IDs like P2-F10: paper P2, Fig. 10) and check their claims; writes reports.
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// Run scenarios in the simulator and live (root) and compare goodput, CoV and buffer occupancy.
    Compare(compare_cmd::CompareArgs),
    /// Run a scenario over several values of some of its keys (--set KEY=V1,V2) and several seeds:
    /// a table of means and standard errors; CSV, JSON and plots with --out.
    Sweep(sweep_cmd::SweepArgs),
    /// Print a commented starting file: a scenario (`ackshape example scenario > my.toml`), a
    /// gateway policy or a tap policy.
    Example {
        /// Which file.
        #[arg(value_enum, default_value = "scenario")]
        what: ExampleKind,
    },
}

/// The starting files `ackshape example` prints (the files in experiments/examples/).
#[derive(Clone, Copy, ValueEnum)]
enum ExampleKind {
    /// A simulation scenario (`ackshape run FILE`, `ackshape validate FILE`).
    Scenario,
    /// A gateway policy (`ackshape gateway --policy FILE`, `ackshape validate --policy FILE`).
    Policy,
    /// A tap policy (`ackshape tap --policy FILE`, `ackshape validate --tap FILE`).
    Tap,
}

/// The example gateway policy (`ackshape example policy`).
const EXAMPLE_POLICY: &str = include_str!("../../../experiments/examples/gateway-policy.toml");
/// The example tap policy (`ackshape example tap`).
const EXAMPLE_TAP: &str = include_str!("../../../experiments/examples/tap-policy.toml");

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario file (TOML, see docs/scenario.md). Default: the embedded example dumbbell.
    scenario: Option<PathBuf>,
    /// Override the scenario's seed (a whole number from 0 to 2^64 − 1).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_seed)]
    seed: Option<u64>,
    /// Set a key of the scenario for this run, e.g. `--set topology.bottleneck.rate=5Mbit/s` or
    /// `--set 'topology.bottleneck.qdisc={ kind = "red" }'` (repeatable; also with --live; `ackshape
    /// sweep` runs several values). The value is a TOML value; bare words and quantities with units
    /// need no quotes.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write summary.json, flows.csv, links.csv, timeseries.csv, goodput.svg, queues.csv,
    /// queue.svg (and trace.csv, cwnd.svg, pcaps) and scenario.toml (the scenario as run: --set
    /// values applied, policy files inlined, the seed) into this directory; with --live, the same
    /// summary, flow, link and goodput files plus gateway-stats.jsonl (the gateway's stats every
    /// second).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Capture a link, both directions, into OUT/LINK.pcap (repeatable; names as in the table, e.g.
    /// bottleneck). Frames are cut after --snaplen bytes.
    #[arg(long, value_name = "LINK")]
    pcap: Vec<String>,
    /// With --pcap: capture only the named link direction (e.g. bottleneck:rev, the ACKs).
    #[arg(long, requires = "pcap")]
    pcap_one_way: bool,
    /// With --pcap: bytes kept of each frame (the default keeps every header and no payload;
    /// 0 keeps whole frames).
    #[arg(long, value_name = "BYTES", default_value_t = ackshape_sim::run::DEFAULT_SNAPLEN, requires = "pcap")]
    snaplen: u32,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Never show a progress bar (nor the note that names `reproduce` for a paper's experiment file).
    #[arg(long, short)]
    quiet: bool,
    /// Run with real Linux TCP in network namespaces (sender — gateway — wanem — receiver)
    /// instead of the simulator (root; dumbbell scenarios with bulk flows).
    #[arg(long)]
    live: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Which {
    Mathis,
    Padhye,
    PadhyeApprox,
}

#[derive(clap::Args)]
struct ModelArgs {
    /// Loss event probability, e.g. 0.01.
    #[arg(long, short = 'p')]
    loss: f64,
    /// Round-trip time with unit, e.g. 100ms.
    #[arg(long)]
    rtt: String,
    /// Segment size in bytes (to convert packets/s into bit/s).
    #[arg(long, default_value_t = 1448)]
    mss: u32,
    /// Segments per ACK (b; 2 with delayed ACKs).
    #[arg(long, default_value_t = 2.0)]
    b: f64,
    /// Base retransmission timeout T0 with unit (Padhye).
    #[arg(long, default_value = "1s")]
    rto: String,
    /// Receiver window cap in segments (Padhye).
    #[arg(long)]
    wmax: Option<f64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum ModelCmd {
    /// Mathis et al. 1997: rate = MSS/RTT · sqrt(3/(2bp)).
    Mathis(ModelArgs),
    /// Padhye et al. 1998, full model (timeouts, window cap).
    Padhye(ModelArgs),
    /// Paper 002's two-way model (Eq. 1–15): download and upload throughput on an asymmetric link.
    Afvq(AfvqArgs),
    /// Paper 000's edge-gateway model (App. B/C, corrected): PFQ/PostACK vs TCR goodput of one
    /// shaped flow under periodic loss.
    Edge(EdgeArgs),
}

#[derive(clap::Args)]
struct EdgeArgs {
    /// Loss probability (one packet in 1/p), e.g. 0.01.
    #[arg(long, short = 'p')]
    loss: f64,
    /// The flow's shaped rate, e.g. 200KB/s (with --rtt and --mss gives W_w).
    #[arg(long)]
    rate: Option<String>,
    /// WAN round-trip delay D_w, e.g. 50ms.
    #[arg(long, default_value = "50ms")]
    rtt: String,
    /// Packet size in bytes (on the wire; W_w counts these).
    #[arg(long, default_value_t = 1500.0)]
    mss: f64,
    /// W_w directly (packets in the WAN pipe), instead of --rate.
    #[arg(long, conflicts_with = "rate")]
    ww: Option<f64>,
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct AfvqArgs {
    /// Downlink rate, e.g. 2.1Mbit/s.
    #[arg(long)]
    down: String,
    /// Uplink rate, e.g. 800kbit/s.
    #[arg(long)]
    up: String,
    /// One-way delay of each logical link, e.g. 30ms.
    #[arg(long, default_value = "30ms")]
    delay: String,
    /// Packet loss probability of each logical link.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Data packet size (bytes).
    #[arg(long, default_value_t = 1000.0)]
    data_bytes: f64,
    /// ACK size (bytes).
    #[arg(long, default_value_t = 40.0)]
    ack_bytes: f64,
    /// Data packets per ACK.
    #[arg(long, default_value_t = 2.0)]
    b: f64,
    /// Initial retransmission timeout.
    #[arg(long, default_value = "1s")]
    rto: String,
    /// Maximum window of both transfers (packets).
    #[arg(long, default_value_t = 200.0)]
    maxwnd: f64,
    /// Queueing delay of ACKs in the opposite output queue (both directions), e.g. 0ms for AFVQ-like.
    #[arg(long, default_value = "0ms")]
    ack_delay: String,
    /// ACKs queued ahead of data in the opposite output queue (both directions).
    #[arg(long, default_value_t = 0.0)]
    acks_queued: f64,
    #[arg(long)]
    json: bool,
}

/// The exit-status contract, shown at the end of `ackshape --help`.
const EXIT_STATUS_HELP: &str = "Exit status (every command): 0 success; 1 runtime failure (an output that cannot be \
written, a live flow that failed, a claim that does not hold under `reproduce --strict`); 2 bad input \
(the file, the key or flag and what was expected are named); 3 cannot run here (not root, a missing \
interface or tool, offloads on a live port)";

/// Log lines (the live boxes' start, policy reloads and their warnings, a CPU pin or real-time
/// priority that could not be had) go to stderr with a timestamp. `ACKSHAPE_LOG` sets the level:
/// off, error, warn, info (default), debug, trace.
fn init_logging() {
    let level = match std::env::var("ACKSHAPE_LOG").ok().as_deref().map(str::trim) {
        None | Some("") => Some(tracing::Level::INFO),
        Some(s) if s.eq_ignore_ascii_case("off") => None,
        Some(s) => Some(s.parse::<tracing::Level>().unwrap_or_else(|_| {
            eprintln!("warning: ACKSHAPE_LOG={s:?} is not one of off, error, warn, info, debug, trace; using info");
            tracing::Level::INFO
        })),
    };
    if let Some(level) = level {
        let _ =
            tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(level).with_target(false).try_init();
    }
}

/// For the commands that only print: writing into a closed pipe (`ackshape sweep | head`) ends the
/// process quietly, as with other Unix tools, instead of a panic in `print!`. The live boxes keep
/// Rust's default (SIGPIPE ignored) so that a closed socket, e.g. a Prometheus scrape that hangs up,
/// is an error to handle and not the end of the gateway.
fn die_quietly_on_broken_pipe() {
    // SAFETY: setting a signal's disposition to the default; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    match &cli.cmd {
        Cmd::Run(a) if !a.live => die_quietly_on_broken_pipe(),
        Cmd::Validate { .. } | Cmd::Model { .. } | Cmd::Reproduce(_) | Cmd::Sweep(_) | Cmd::Example { .. } => {
            die_quietly_on_broken_pipe()
        }
        _ => {}
    }
    match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Validate { files, policy, tap } => {
            let mut code = ExitCode::SUCCESS;
            for f in &files {
                let c = if policy {
                    validate_policy(f)
                } else if tap {
                    validate_tap(f)
                } else {
                    validate_scenario(f)
                };
                if c != ExitCode::SUCCESS {
                    code = c;
                }
            }
            code
        }
        Cmd::Model { which } => cmd_model(which),
        Cmd::Gateway(a) => live_cmd::cmd_gateway(a),
        Cmd::Wanem(a) => live_cmd::cmd_wanem(a),
        Cmd::Tap(a) => tap_cmd::cmd_tap(a),
        Cmd::Testbed { cmd } => live_cmd::cmd_testbed(cmd),
        Cmd::Reproduce(a) => reproduce_cmd::cmd_reproduce(a),
        Cmd::Compare(a) => compare_cmd::cmd_compare(a),
        Cmd::Sweep(a) => sweep_cmd::cmd_sweep(a),
        Cmd::Example { what } => {
            print!(
                "{}",
                match what {
                    ExampleKind::Scenario => DEFAULT_SCENARIO,
                    ExampleKind::Policy => EXAMPLE_POLICY,
                    ExampleKind::Tap => EXAMPLE_TAP,
                }
            );
            ExitCode::SUCCESS
        }
    }
}

fn cmd_run(a: RunArgs) -> ExitCode {
    let bad = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(BAD_INPUT)
    };
    if a.live {
        let Some(p) = &a.scenario else {
            return bad("run --live needs a scenario file".into());
        };
        let sc = if a.set.is_empty() {
            None
        } else {
            match sweep_cmd::with_sets(Some(p), &a.set) {
                Ok((sc, _)) => Some(sc),
                Err(e) => return bad(e),
            }
        };
        return live_cmd::cmd_run_live(p, sc, a.out.clone(), a.json, !a.quiet && std::io::stderr().is_terminal());
    }
    let (sc, file) = if !a.set.is_empty() {
        match sweep_cmd::with_sets(a.scenario.as_ref(), &a.set) {
            Ok(r) => r,
            Err(e) => return bad(e),
        }
    } else {
        match &a.scenario {
            Some(p) => match Scenario::load(p) {
                Ok(sc) => (sc, p.display().to_string()),
                Err(e) => return bad(e.to_string()),
            },
            None => match Scenario::parse(DEFAULT_SCENARIO, "<embedded example: experiments/examples/dumbbell.toml>") {
                Ok(sc) => (sc, "experiments/examples/dumbbell.toml".to_string()),
                Err(e) => {
                    eprintln!("internal error: embedded scenario invalid: {e}");
                    return ExitCode::FAILURE;
                }
            },
        }
    };
    if !a.json && !a.quiet {
        if let Some(note) = a.scenario.as_deref().and_then(experiment_note) {
            eprintln!("{note}");
        }
    }
    // With --out, the scenario as run goes to OUT/scenario.toml.
    let scenario_doc = match &a.out {
        Some(_) => match sweep_cmd::run_doc(a.scenario.as_ref(), &a.set) {
            Ok(d) => Some(d),
            Err(e) => return bad(e),
        },
        None => None,
    };
    let req = RunRequest {
        seed: a.seed,
        out: a.out.clone(),
        pcap: a.pcap.clone(),
        pcap_one_way: a.pcap_one_way,
        snaplen: a.snaplen,
        scenario_doc,
    };
    let show_bar = !a.quiet && std::io::stderr().is_terminal();
    let started = Instant::now();
    let bar = indicatif::ProgressBar::hidden();
    bar.set_length(1000);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} simulating [{bar:40}] {percent}% ({elapsed} elapsed, ~{eta} left)",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    let mut shown = false;
    let mut progress = |f: f64| {
        if show_bar && !shown && started.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_position((f * 1000.0) as u64);
    };
    let res = run_scenario(&sc, &file, &req, Some(&mut progress));
    bar.finish_and_clear();
    match res {
        Ok(ackshape_sim::run::RunOutput { summary, files }) => {
            if a.json {
                print!("{}", ackshape_sim::run::summary_json(&summary));
            } else {
                print!("{}", format_table(&summary));
                if let Some(out) = &a.out {
                    println!("\n{}", wrote_line(out, &files));
                }
            }
            if summary.verify.as_ref().is_some_and(|v| v.mismatched_flows > 0) {
                eprintln!("error: delivered payload differs from what was sent");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            // Writing the outputs is the run's own doing; everything else is the scenario's.
            let code = if matches!(e, ackshape_sim::run::RunError::Io { .. }) { RUNTIME } else { BAD_INPUT };
            ExitCode::from(code)
        }
    }
}

/// For a paper's experiment file (`experiments/pN/…`): `run` runs only its base scenario, without
/// the schemes, sweeps and claims that `reproduce` adds; say so and name the command.
fn experiment_note(path: &std::path::Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let all = ackshape_repro::registry();
    let ids: Vec<&str> = all
        .iter()
        .filter(|e| {
            let rel = std::path::Path::new(e.file);
            // The file itself, in this checkout or another: its path ends with the repository path.
            path.ends_with(rel)
        })
        .map(|e| e.id)
        .collect();
    if ids.is_empty() {
        return None;
    }
    Some(format!(
        "note: {} is the base scenario of {} {}: `run` simulates it as written; `ackshape reproduce {}` runs the \
         paper's schemes and sweeps on it and checks the claims",
        path.file_name()?.to_string_lossy(),
        if ids.len() == 1 { "experiment" } else { "experiments" },
        ids.join(", "),
        ids.join(" ")
    ))
}

fn cmd_model(which: ModelCmd) -> ExitCode {
    let (w, a) = match which {
        ModelCmd::Mathis(a) => (Which::Mathis, a),
        ModelCmd::Padhye(a) => (Which::Padhye, a),
        ModelCmd::Afvq(a) => return cmd_model_afvq(a),
        ModelCmd::Edge(a) => return cmd_model_edge(a),
    };
    let bad = |m: String| {
        eprintln!("error: {m}");
        ExitCode::from(BAD_INPUT)
    };
    if !(a.loss > 0.0 && a.loss < 1.0) {
        return bad(format!("--loss: expected a probability in (0, 1), got {}", a.loss));
    }
    let rtt = match units::parse_duration(&a.rtt) {
        Ok(d) if d.0 > 0 => d,
        Ok(_) => return bad("--rtt: expected a positive duration".into()),
        Err(e) => return bad(format!("--rtt: {e}")),
    };
    let t0 = match units::parse_duration(&a.rto) {
        Ok(d) => d,
        Err(e) => return bad(format!("--rto: {e}")),
    };
    if !(a.b >= 1.0 && a.b.is_finite()) {
        return bad(format!("--b: expected ≥ 1 segment per ACK, got {}", a.b));
    }
    if let Some(w) = a.wmax.filter(|w| !(*w >= 1.0 && w.is_finite())) {
        return bad(format!("--wmax: expected a window of at least 1 segment (leave it out for none), got {w}"));
    }
    let inp = ModelInput {
        p: a.loss,
        rtt_s: rtt.as_secs_f64(),
        b: a.b,
        t0_s: t0.as_secs_f64(),
        wmax: a.wmax.unwrap_or(f64::INFINITY),
    };
    let (name, pps) = match w {
        Which::Mathis => ("mathis", model::mathis(&inp)),
        Which::Padhye => ("padhye", model::padhye(&inp)),
        Which::PadhyeApprox => ("padhye-approx", model::padhye_approx(&inp)),
    };
    let bps = pps * a.mss as f64 * 8.0;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"model": name, "input": inp, "mss": a.mss, "packets_per_s": pps, "goodput_bps": bps})
        );
    } else {
        println!(
            "{name}: p = {}, RTT = {:.1} ms, b = {}, T0 = {:.3} s, Wmax = {}: {:.1} packets/s = {}",
            a.loss,
            rtt.as_secs_f64() * 1e3,
            a.b,
            t0.as_secs_f64(),
            a.wmax.map(|w| w.to_string()).unwrap_or_else(|| "none".into()),
            pps,
            ackshape_sim::run::fmt_rate(bps)
        );
    }
    ExitCode::SUCCESS
}

fn cmd_model_edge(a: EdgeArgs) -> ExitCode {
    use ackshape_core::model_edge;
    let bad = |m: String| {
        eprintln!("error: {m}");
        ExitCode::from(BAD_INPUT)
    };
    if !(a.loss > 0.0 && a.loss < 1.0) {
        return bad(format!("--loss: expected a probability in (0, 1), got {}", a.loss));
    }
    let dw = match units::parse_duration(&a.rtt) {
        Ok(d) if d.0 > 0 => d.as_secs_f64(),
        Ok(_) => return bad("--rtt: expected a positive duration".into()),
        Err(e) => return bad(format!("--rtt: {e}")),
    };
    if !(a.mss > 0.0 && a.mss.is_finite()) {
        return bad(format!("--mss: expected a positive size in bytes, got {}", a.mss));
    }
    let ww = match (&a.rate, a.ww) {
        (_, Some(w)) if w > 0.0 && w.is_finite() => w,
        (_, Some(w)) => return bad(format!("--ww: expected a positive number of packets, got {w}")),
        (Some(r), None) => match units::parse_rate(r) {
            Ok(r) if r.0 > 0 => model_edge::ww(r.0 as f64, dw, a.mss),
            Ok(_) => return bad("--rate: expected a rate > 0".into()),
            Err(e) => return bad(format!("--rate: {e}")),
        },
        (None, None) => return bad("give the flow's share as --rate (e.g. 200KB/s) or --ww (packets)".into()),
    };
    let pt = model_edge::point(a.loss, ww);
    let bps = |t: f64| model_edge::goodput_bps(t, a.mss, dw);
    if a.json {
        println!(
            "{}",
            serde_json::json!({"model": "edge", "point": pt, "rtt_s": dw, "mss": a.mss,
                "pfq_bps": bps(pt.pfq), "tcr_bps": bps(pt.tcr), "unit": "packets per D_w; *_bps in bit/s"})
        );
    } else {
        println!(
            "edge (paper 000 App. C): p = {}, W_w = {:.2} packets, D_w = {:.1} ms, regime {:?}\n  PFQ/PostACK: {:.3} packets/D_w = {}\n  TCR:         {:.3} packets/D_w = {} (PFQ {:+.1}%)",
            a.loss,
            ww,
            dw * 1e3,
            pt.regime,
            pt.pfq,
            ackshape_sim::run::fmt_rate(bps(pt.pfq)),
            pt.tcr,
            ackshape_sim::run::fmt_rate(bps(pt.tcr)),
            (pt.pfq / pt.tcr - 1.0) * 100.0
        );
    }
    ExitCode::SUCCESS
}

fn cmd_model_afvq(a: AfvqArgs) -> ExitCode {
    use ackshape_core::model_afvq::{solve, AfvqModelInput, LinkParams};
    let bad = |m: String| {
        eprintln!("error: {m}");
        ExitCode::from(BAD_INPUT)
    };
    let rate = |flag: &str, v: &str| units::parse_rate(v).map(|r| r.0 as f64 / 8.0).map_err(|e| format!("{flag}: {e}"));
    let dur =
        |flag: &str, v: &str| units::parse_duration(v).map(|d| d.as_secs_f64()).map_err(|e| format!("{flag}: {e}"));
    let parsed = (|| -> Result<AfvqModelInput, String> {
        let delay = dur("--delay", &a.delay)?;
        let ack_delay = dur("--ack-delay", &a.ack_delay)?;
        Ok(AfvqModelInput {
            down: LinkParams { rate_bytes_per_s: rate("--down", &a.down)?, delay_s: delay, loss: a.loss },
            up: LinkParams { rate_bytes_per_s: rate("--up", &a.up)?, delay_s: delay, loss: a.loss },
            data_bytes: a.data_bytes,
            ack_bytes: a.ack_bytes,
            b: a.b,
            t0_s: dur("--rto", &a.rto)?,
            maxwnd_down: a.maxwnd,
            maxwnd_up: a.maxwnd,
            q_ack_down_s: ack_delay,
            q_ack_up_s: ack_delay,
            n_ack_in_down_queue: a.acks_queued,
            n_ack_in_up_queue: a.acks_queued,
        })
    })();
    let inp = match parsed {
        Ok(i) => i,
        Err(e) => return bad(e),
    };
    match solve(&inp) {
        Ok(o) => {
            if a.json {
                println!("{}", serde_json::json!({"model": "afvq", "input": inp, "output": o}));
            } else {
                let f = |d: &ackshape_core::model_afvq::DirectionSolution| {
                    format!(
                        "{} ({:.1}% of the link{})",
                        ackshape_sim::run::fmt_rate(d.throughput_bytes_per_s * 8.0),
                        d.utilization * 100.0,
                        if d.window_limited { ", window-limited" } else { "" }
                    )
                };
                println!("download: {}", f(&o.download));
                println!("upload:   {}", f(&o.upload));
                println!(
                    "aggregated utilization {:.3} (ideal 2), variance {:.4} (population) / {:.4} (sample)",
                    o.aggregated_utilization, o.utilization_variance_population, o.utilization_variance_sample
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => bad(afvq_error(&e)),
    }
}

/// A model error in the terms of `model afvq`'s flags (the model names its input fields).
fn afvq_error(e: &ackshape_core::model_afvq::AfvqModelError) -> String {
    use ackshape_core::model_afvq::AfvqModelError as E;
    let flag = |field: &str| match field {
        "down.rate_bytes_per_s" => "--down",
        "up.rate_bytes_per_s" => "--up",
        "down.delay_s" | "up.delay_s" => "--delay",
        "down.loss" | "up.loss" => "--loss",
        "data_bytes" => "--data-bytes",
        "ack_bytes" => "--ack-bytes",
        "t0_s" => "--rto",
        "maxwnd_down" | "maxwnd_up" => "--maxwnd",
        "q_ack_down_s" | "q_ack_up_s" => "--ack-delay",
        _ => "--acks-queued",
    };
    match e {
        E::NotPositive(f) => format!("{}: expected a number > 0", flag(f)),
        E::Negative(f) => format!("{}: expected a number >= 0", flag(f)),
        E::Loss(f) => format!("{}: expected a probability in [0, 1)", flag(f)),
        E::B => "--b: expected at least 1 data packet per ACK".into(),
        E::NoRoot(..) => format!("model afvq: {e}"),
    }
}

/// `validate FILE` for a scenario: parse, build, the live table, then warnings (gateway policies
/// that are probably not meant; with `[live]`, what a live run would do otherwise).
fn validate_scenario(scenario: &std::path::Path) -> ExitCode {
    let checked = Scenario::load(scenario).map_err(|e| e.to_string()).and_then(|sc| {
        ackshape_live::run::validate(&sc, &scenario.display().to_string(), scenario.parent()).map(|w| (sc, w))
    });
    match checked {
        Ok((sc, warnings)) => {
            let n = sc.flow_count();
            println!("{}: valid ({n} flow{})", scenario.display(), if n == 1 { "" } else { "s" });
            for w in warnings {
                eprintln!("warning: {w}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(BAD_INPUT)
        }
    }
}

/// `ackshape validate --policy FILE`: load the gateway policy as `ackshape gateway` does (and as
/// a SIGHUP reload does), print what it will do, and warn about what is valid but probably not
/// meant.
fn validate_policy(path: &std::path::Path) -> ExitCode {
    let p = match ackshape_live::policy::Policy::load(path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    let file = path.display();
    print!("{}", p.summary(&file.to_string()));
    for w in p.warnings() {
        eprintln!("warning: {file}: {w}");
    }
    ExitCode::SUCCESS
}

/// `ackshape validate --tap FILE`: load a tap policy as `ackshape tap` does.
fn validate_tap(path: &std::path::Path) -> ExitCode {
    let spec = match ackshape_live::tap::load_policy(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    print!("{}", ackshape_live::tap::policy_summary(&spec, &path.display().to_string()));
    ExitCode::SUCCESS
}
