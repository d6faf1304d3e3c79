//! The live subcommands: `gateway`, `wanem`, `testbed up|down`, `run --live`.

use ackshape_live::gateway::{self, GatewayConfig};
use ackshape_live::guide;
use ackshape_live::mbpipe::MiddleboxPipeline;
use ackshape_live::plan::{self, endpoint_tcp};
use ackshape_live::run as live_run;
use ackshape_live::testbed::{self, TopologySpec};
use ackshape_live::wanem::{self, WanemConfig};
use ackshape_sim::scenario::Scenario;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::common::{box_exit_code, dur, fail, BAD_INPUT, CANNOT_RUN, RUNTIME};

/// The exit code of a live run's error (and of `testbed up`'s policy file).
fn run_exit_code(e: &live_run::RunError) -> u8 {
    match e.kind {
        live_run::Failure::BadInput => BAD_INPUT,
        live_run::Failure::CannotRun => CANNOT_RUN,
        live_run::Failure::Runtime => RUNTIME,
    }
}

#[derive(clap::Args)]
pub struct GatewayArgs {
    /// LAN-side interface.
    #[arg(long)]
    lan: String,
    /// WAN-side interface.
    #[arg(long)]
    wan: String,
    /// Policy file (TOML, see docs/policy.md); SIGHUP reloads it, a bad one is rejected and the running one kept.
    #[arg(long)]
    policy: Option<PathBuf>,
    #[command(flatten)]
    common: BoxArgs,
}

/// Flags shared by the two boxes (gateway, wanem).
#[derive(clap::Args)]
pub struct BoxArgs {
    /// Append periodic stats as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Stats interval, e.g. 1s.
    #[arg(long, default_value = "1s")]
    stats_interval: String,
    /// Serve Prometheus text metrics on this loopback address, e.g. 127.0.0.1:9464.
    #[arg(long, value_name = "ADDR")]
    prometheus: Option<SocketAddr>,
    /// Write a pcap of each port into this directory.
    #[arg(long, value_name = "DIR")]
    pcap_dir: Option<PathBuf>,
    /// Run even if the ports have checksum/segmentation offloads on (frames may be partial or oversize).
    #[arg(long)]
    allow_offloads: bool,
    /// Run the data plane with SCHED_FIFO at this priority (1-99).
    #[arg(long, value_name = "PRIO")]
    realtime: Option<i32>,
    /// Nice value of the data-plane thread (normal class; -20 lets it preempt other load when a
    /// held frame is due).
    #[arg(long, default_value_t = ackshape_live::engine::DEFAULT_NICE, allow_negative_numbers = true)]
    nice: i32,
    /// Keep the data-plane thread in its session's scheduling group (autogroup) instead of a cpu
    /// cgroup of its own with the maximum weight; --nice then only counts within the session.
    #[arg(long)]
    no_cpu_group: bool,
    /// Busy-poll this long before a held frame is due instead of sleeping, e.g. 200us (0 = never).
    #[arg(long, default_value = "200us")]
    spin: String,
    /// Pin the data-plane thread to this CPU.
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
    /// Ask the kernel (Linux >= 6.12, EEVDF) for this time slice for the data-plane thread, so it
    /// preempts other load when it wakes (0 = the kernel's default slice).
    #[arg(long, value_name = "DUR", default_value = "100us")]
    latency_slice: String,
    /// After opening the ports, switch to this user (name or uid); the box keeps only
    /// CAP_NET_RAW (and CAP_SYS_NICE for --nice below 0, --latency-slice or --realtime).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Keep every capability the box started with (by default it drops all but CAP_NET_RAW and
    /// what its scheduling options need once its ports are open).
    #[arg(long, conflicts_with = "user")]
    keep_privileges: bool,
    /// Umask (octal) of the files the box writes (pcap, stats JSON): 077 makes them 0600.
    #[arg(long, value_name = "OCTAL", default_value = "077")]
    umask: String,
}

/// Copy the shared box flags into a `GatewayConfig` or `WanemConfig` (same field names).
macro_rules! apply_box_args {
    ($cfg:expr, $c:expr) => {{
        let c = $c;
        dur("--stats-interval", &c.stats_interval).and_then(|interval| {
            let spin = dur("--spin", &c.spin)?;
            let slice = Some(dur("--latency-slice", &c.latency_slice)?).filter(|d| !d.is_zero());
            if !(-20..=19).contains(&c.nice) {
                return Err(format!("--nice: expected -20..=19, got {}", c.nice));
            }
            $cfg.sched = ackshape_live::engine::SchedSpec {
                cpu: c.cpu,
                fair_slice: slice,
                nice: c.nice,
                cpu_group: !c.no_cpu_group,
                spin,
            };
            $cfg.stats_interval = interval;
            $cfg.stats_json = c.stats_json;
            $cfg.prometheus = c.prometheus;
            $cfg.pcap_dir = c.pcap_dir;
            $cfg.allow_offloads = c.allow_offloads;
            $cfg.realtime_priority = c.realtime;
            let umask = u32::from_str_radix(c.umask.trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| format!("--umask: expected an octal mask like 077, got {:?}", c.umask))?;
            $cfg.file_mode = ackshape_live::privs::mode_for_umask(umask);
            $cfg.privileges = (!c.keep_privileges).then(|| ackshape_live::privs::PrivDrop { user: c.user.clone() });
            Ok(())
        })
    }};
}

pub fn cmd_gateway(a: GatewayArgs) -> ExitCode {
    let mut cfg = GatewayConfig::new(&a.lan, &a.wan);
    cfg.policy = a.policy;
    if let Err(e) = apply_box_args!(cfg, a.common) {
        return fail(BAD_INPUT, e);
    }
    match gateway::run(cfg) {
        Ok(snap) => {
            println!("{}", snap.json_line());
            ExitCode::SUCCESS
        }
        Err(e) => fail(box_exit_code(&e), e),
    }
}

#[derive(clap::Args)]
pub struct WanemArgs {
    /// Port A (toward the gateway / sender side).
    #[arg(long = "a")]
    a: String,
    /// Port B (toward the receiver side).
    #[arg(long = "b")]
    b: String,
    /// One-way delay, each direction, e.g. 50ms.
    #[arg(long, default_value = "0ms")]
    delay: String,
    /// Uniform jitter added to the delay, in [0, JITTER].
    #[arg(long, default_value = "0ms")]
    jitter: String,
    /// Bernoulli loss probability per packet, each direction.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Periodic loss: drop every K-th packet (overrides --loss).
    #[arg(long, value_name = "K")]
    loss_every: Option<u64>,
    /// Gilbert-Elliott loss "P_GB,P_BG" (loss 0 in Good, 1 in Bad; overrides --loss).
    #[arg(long, value_name = "P_GB,P_BG")]
    loss_ge: Option<String>,
    /// Rate limit, e.g. 10Mbit/s (frame bytes count).
    #[arg(long)]
    rate: Option<String>,
    /// Rate limit for B→A only (default: --rate), for asymmetric links.
    #[arg(long)]
    rate_back: Option<String>,
    /// Queue in front of the rate limiter, packets.
    #[arg(long, default_value_t = 100)]
    queue: usize,
    /// Queue discipline of the rate limiter instead of drop-tail, as a scenario link's `qdisc`
    /// table, e.g. '{ kind = "red", ecn = true }' (RED/ECN, drr, pfq, tbf, acks-first, ack filters,
    /// acq, afvq; docs/scenario.md). `--queue` sizes the limits it leaves out. Both directions
    /// unless --qdisc-back; needs --rate. The WAN then runs the simulator's link code.
    #[arg(long, value_name = "TABLE")]
    qdisc: Option<String>,
    /// Queue discipline of B→A (default: --qdisc), or `drop-tail`.
    #[arg(long, value_name = "TABLE")]
    qdisc_back: Option<String>,
    /// Seed of the loss and jitter streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    common: BoxArgs,
}

/// One direction of the WAN as the flags give it (the rate differs between the two).
fn link_text<'a>(a: &'a WanemArgs, rate: Option<&'a str>) -> wanem::LinkText<'a> {
    wanem::LinkText {
        delay: &a.delay,
        jitter: &a.jitter,
        loss: a.loss,
        loss_every: a.loss_every,
        loss_ge: a.loss_ge.as_deref(),
        rate,
        queue: a.queue,
    }
}

pub fn cmd_wanem(a: WanemArgs) -> ExitCode {
    let fwd = match link_text(&a, a.rate.as_deref()).link() {
        Ok(l) => l,
        Err(e) => return fail(BAD_INPUT, e),
    };
    let rate_back = a.rate_back.clone().or(a.rate.clone());
    let back = match link_text(&a, rate_back.as_deref()).link() {
        Ok(l) => l,
        Err(e) => return fail(BAD_INPUT, e),
    };
    let (fq, bq) = match (
        wanem::qdisc_from_text("--qdisc", a.qdisc.as_deref(), a.queue, &fwd),
        wanem::qdisc_from_text(
            if a.qdisc_back.is_some() { "--qdisc-back" } else { "--qdisc" },
            a.qdisc_back.as_deref().or(a.qdisc.as_deref()),
            a.queue,
            &back,
        ),
    ) {
        (Ok(f), Ok(b)) => (f, b),
        (Err(e), _) | (_, Err(e)) => return fail(BAD_INPUT, e),
    };
    let boxed = (fq.is_some() || bq.is_some()).then(|| {
        let dir =
            |link, q| wanem::BoxDir { link, limit: ackshape_core::queue::Limit::Packets(a.queue.max(1)), qdisc: q };
        let b = wanem::link_box(dir(&fwd, fq.as_ref()), dir(&back, bq.as_ref()), a.seed, 0);
        Box::new(MiddleboxPipeline::new(b, "wan-link")) as Box<dyn ackshape_live::pipeline::Pipeline>
    });
    let mut cfg = WanemConfig::new(&a.a, &a.b);
    cfg.a_to_b = fwd;
    cfg.b_to_a = back;
    cfg.seed = a.seed;
    if let Err(e) = apply_box_args!(cfg, a.common) {
        return fail(BAD_INPUT, e);
    }
    match wanem::run_piped(cfg, boxed) {
        Ok(snap) => {
            println!("{}", snap.json_line());
            ExitCode::SUCCESS
        }
        Err(e) => fail(box_exit_code(&e), e),
    }
}

#[derive(clap::Subcommand)]
pub enum TestbedCmd {
    /// Build the namespaces of a scenario (its [live.testbed] table; defaults otherwise), list them
    /// and print the commands that run the scenario's WAN and gateway in them by hand.
    Up {
        /// The scenario (TOML): its `[live.testbed]` table names the namespaces (prefix, addresses),
        /// its bottleneck and `kind = "gateway"` box give the printed wanem and gateway commands.
        scenario: PathBuf,
        /// Write the gateway policy of the scenario's `kind = "gateway"` box to this file, for
        /// `ackshape gateway --policy` (an inline `policy = { … }` becomes a policy file).
        #[arg(long, value_name = "FILE")]
        policy_out: Option<PathBuf>,
    },
    /// Remove every namespace and veth with the scenario's prefix (or --prefix), also after a crash.
    Down {
        /// The scenario whose testbed to remove (its `[live.testbed]` prefix; without a scenario or --prefix, `acks-tb`, the default).
        scenario: Option<PathBuf>,
        /// The prefix to remove instead, e.g. `acks-live` (as `testbed up` printed it).
        #[arg(long)]
        prefix: Option<String>,
    },
    /// Build the third-party tap's namespaces: sender — router (tc mirred to the tap) — receiver,
    /// and the tap's mirror and inject ports; prints the commands to start it.
    TapUp(crate::tap_cmd::TapUpArgs),
}

fn load(p: &std::path::Path) -> Result<Scenario, ExitCode> {
    Scenario::load(p).map_err(|e| fail(BAD_INPUT, e))
}

/// The testbed of a scenario: `[live.testbed]` (see docs/scenario.md) over the defaults.
pub(crate) fn topology_of(sc: &Scenario, file: &str) -> Result<TopologySpec, ExitCode> {
    plan::testbed_of(sc, file).map_err(|e| fail(BAD_INPUT, e))
}

pub fn cmd_testbed(c: TestbedCmd) -> ExitCode {
    if let Some(why) = testbed::preflight() {
        return fail(CANNOT_RUN, format!("the testbed cannot run here: {why}"));
    }
    match c {
        TestbedCmd::TapUp(a) => crate::tap_cmd::cmd_tap_up(a),
        TestbedCmd::Up { scenario, policy_out } => {
            let sc = match load(&scenario) {
                Ok(s) => s,
                Err(e) => return e,
            };
            let file = scenario.display().to_string();
            let spec = match topology_of(&sc, &file) {
                Ok(s) => s,
                Err(e) => return e,
            };
            // The policy file is written (and so checked) before anything is built.
            let policy = match guide::hand_policy(&sc, &file, scenario.parent(), policy_out.as_deref()) {
                Ok(p) => p,
                Err(e) => return fail(run_exit_code(&e), e),
            };
            for w in guide::hand_warnings(&sc, &file, scenario.parent(), &spec) {
                eprintln!("warning: {w}");
            }
            match testbed::up(&spec) {
                Ok(tb) => {
                    // The hosts get the scenario's `[tcp]` knobs, as under `run --live`.
                    if let Err(e) = tb.apply_tcp(&endpoint_tcp(&sc.tcp)) {
                        let _ = testbed::down(&tb.prefix);
                        return fail(RUNTIME, format!("{file}: key `tcp`: setting the hosts' TCP: {e}"));
                    }
                    print!("{}", guide::hand_guide(&tb, &sc, &policy, &crate::common::self_path()));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(RUNTIME, e),
            }
        }
        TestbedCmd::Down { scenario, prefix } => {
            let prefix = match (prefix, scenario) {
                (Some(p), _) => p,
                (None, Some(s)) => {
                    let sc = match load(&s) {
                        Ok(s) => s,
                        Err(e) => return e,
                    };
                    match topology_of(&sc, &s.display().to_string()) {
                        Ok(t) => t.prefix,
                        Err(e) => return e,
                    }
                }
                (None, None) => TopologySpec::default().prefix,
            };
            match testbed::down(&prefix) {
                Ok(removed) => {
                    let (procs, objs): (Vec<&String>, Vec<&String>) =
                        removed.iter().partition(|r| r.starts_with("pid "));
                    if !procs.is_empty() {
                        let p: Vec<&str> = procs.iter().map(|s| s.as_str()).collect();
                        println!("stopped {} processes in the namespaces: {}", p.len(), p.join(", "));
                    }
                    let o: Vec<&str> = objs.iter().map(|s| s.as_str()).collect();
                    println!("removed {} objects with prefix {prefix}: {}", o.len(), o.join(" "));
                    ExitCode::SUCCESS
                }
                Err(e @ testbed::TestbedError::BadPrefix(_)) => fail(BAD_INPUT, format!("--prefix: {e}")),
                Err(e) => fail(RUNTIME, e),
            }
        }
    }
}

/// `ackshape run --live` ([`ackshape_live::run`]): check and plan the scenario, run it with a
/// progress bar on a terminal, print the summary (JSON or a table).
/// `sc` is the scenario already built from `path` (e.g. with `--set` applied); `None` loads `path`.
pub fn cmd_run_live(
    path: &std::path::Path,
    sc: Option<Scenario>,
    out: Option<PathBuf>,
    json: bool,
    show_bar: bool,
) -> ExitCode {
    let sc = match sc.map_or_else(|| load(path), Ok) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let prepared = match live_run::prepare(sc, path, out.as_deref(), &mut |w| eprintln!("warning: {w}")) {
        Ok(p) => p,
        Err(e) => return fail(run_exit_code(&e), e),
    };
    // A progress bar over the scenario's duration while the flows run (on a terminal only).
    let bar =
        if show_bar { indicatif::ProgressBar::new(prepared.duration_ms()) } else { indicatif::ProgressBar::hidden() };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} live run [{bar:40}] {pos}/{len} ms of the scenario ({elapsed})",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    let res = prepared.run(&|ms| bar.set_position(ms));
    bar.finish_and_clear();
    let run = match res {
        Ok(r) => r,
        Err(e) => return fail(run_exit_code(&e), e),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&run.summary).unwrap());
    } else {
        print!("{}", run.text());
        if let Some(o) = &out {
            println!("\n{}", crate::common::wrote_line(o, &run.written));
        }
    }
    if run.failed() {
        return fail(RUNTIME, "a live flow failed or delivered corrupted data");
    }
    ExitCode::SUCCESS
}
