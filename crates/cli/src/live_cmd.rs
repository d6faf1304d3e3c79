//! The live subcommands: `gateway`, `wanem`, `testbed up|down`, `run --live`.

use ackshape_core::impair::{JitterSpec, LossSpec};
use ackshape_core::shape::qdisc_spec::{QdiscSpec, QdiscTable};
use ackshape_core::tcp::CcAlgo;
use ackshape_core::units;
use ackshape_live::gateway::{self, GatewayConfig, GatewayError};
use ackshape_live::mbpipe::MiddleboxPipeline;
use ackshape_live::plan::{
    self, class_drift, endpoint_tcp, flow_paths, flow_sock_opts, live_class_drift, live_link_gaps, live_tcp_gaps,
    wan_link, wan_plan,
};
use ackshape_live::rig::{Rig, RigSpec};
use ackshape_live::testbed::{self, TopologySpec};
use ackshape_live::traffic::{self, FlowSpec};
use ackshape_live::wanem::{self, LinkSpec as WanLink, WanemConfig};
use ackshape_sim::metrics::{cov, jain};
use ackshape_sim::middlebox::build_middlebox;
use ackshape_sim::scenario::{FlowKind, FlowOpen, MbMode, Scenario, StartV, TopologySpec as SimTopo};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub(crate) use crate::{BAD_INPUT, CANNOT_RUN, RUNTIME};

/// At most this many flows in `run --live` (and `compare`'s live half).
pub const MAX_LIVE_FLOWS: u64 = 1000;

fn fail(code: u8, msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

/// The exit code of a live box that could not start or stopped with an error: bad input for what
/// the command line or the policy file got wrong, cannot-run-here for what this machine lacks (root,
/// the interface, offloads turned off on it), runtime for the rest.
pub(crate) fn box_exit_code(e: &GatewayError) -> u8 {
    match e {
        GatewayError::Policy(_) | GatewayError::SamePort(_) => BAD_INPUT,
        GatewayError::NoInterface { .. } | GatewayError::Offloads { .. } => CANNOT_RUN,
        GatewayError::OffloadCheck { source, .. } | GatewayError::Io(source) => io_exit_code(source),
    }
}

/// An I/O error of a live box: no permission (not root: an AF_PACKET socket needs CAP_NET_RAW) or
/// no such device means it cannot run here; anything else is a runtime failure.
pub(crate) fn io_exit_code(e: &std::io::Error) -> u8 {
    let no_device = matches!(e.raw_os_error(), Some(libc::ENODEV | libc::ENXIO | libc::EPERM | libc::EACCES));
    if e.kind() == std::io::ErrorKind::PermissionDenied || no_device {
        CANNOT_RUN
    } else {
        RUNTIME
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

fn dur(flag: &str, s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map(|d| Duration::from_nanos(d.0)).map_err(|e| format!("{flag}: {e}"))
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

pub fn cmd_wanem(a: WanemArgs) -> ExitCode {
    let link = |rate: &Option<String>| -> Result<WanLink, String> {
        let mut l = WanLink {
            delay_ns: dur("--delay", &a.delay)?.as_nanos() as u64,
            queue_packets: a.queue,
            ..Default::default()
        };
        let j = dur("--jitter", &a.jitter)?.as_nanos() as u64;
        if j > 0 {
            l.jitter = JitterSpec::Uniform { max_ns: j };
        }
        l.loss = if let Some(k) = a.loss_every {
            LossSpec::Periodic { every: k, offset: 0 }
        } else if let Some(ge) = &a.loss_ge {
            let v: Vec<f64> = ge.split(',').filter_map(|x| x.trim().parse().ok()).collect();
            if v.len() != 2 {
                return Err(format!("--loss-ge: expected \"P_GB,P_BG\", got {ge:?}"));
            }
            LossSpec::GilbertElliott { p_gb: v[0], p_bg: v[1], loss_good: 0.0, loss_bad: 1.0 }
        } else if a.loss > 0.0 {
            LossSpec::Bernoulli { p: a.loss }
        } else {
            LossSpec::None
        };
        let loss_flag = if a.loss_every.is_some() {
            "--loss-every"
        } else if a.loss_ge.is_some() {
            "--loss-ge"
        } else {
            "--loss"
        };
        l.loss.validate().map_err(|e| format!("{loss_flag}: {e}"))?;
        if let Some(r) = rate {
            l.rate_bps = Some(units::parse_rate(r).map_err(|e| format!("--rate: {e}"))?.0);
        }
        Ok(l)
    };
    let fwd = match link(&a.rate) {
        Ok(l) => l,
        Err(e) => return fail(BAD_INPUT, e),
    };
    let back = match link(&a.rate_back.clone().or(a.rate.clone())) {
        Ok(l) => l,
        Err(e) => return fail(BAD_INPUT, e),
    };
    let qdisc = |flag: &str, text: Option<&String>, link: &WanLink| -> Result<Option<QdiscSpec>, String> {
        let Some(text) = text.filter(|t| t.trim() != "drop-tail") else { return Ok(None) };
        let t: toml::Table = format!("q = {text}").parse().map_err(|_| {
            format!(
                "{flag}: expected a TOML table like '{{ kind = \"red\", ecn = true }}' or `drop-tail`, got {text:?}"
            )
        })?;
        let table: QdiscTable =
            t["q"].clone().try_into().map_err(|e: toml::de::Error| format!("{flag}: {}", e.message().trim_end()))?;
        let (spec, _) =
            table.with_queue(Some(units::Size::Packets(a.queue as u64))).map_err(|m| format!("{flag}: {m}"))?;
        spec.validate().map_err(|m| format!("{flag}: {m}"))?;
        if link.rate_bps.is_none() {
            return Err(format!("{flag}: a queue discipline needs a rate in that direction (--rate)"));
        }
        Ok(Some(spec))
    };
    let (fq, bq) = match (
        qdisc("--qdisc", a.qdisc.as_ref(), &fwd),
        qdisc(
            if a.qdisc_back.is_some() { "--qdisc-back" } else { "--qdisc" },
            a.qdisc_back.as_ref().or(a.qdisc.as_ref()),
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
            let policy = match hand_policy(&sc, &file, scenario.parent(), policy_out.as_deref()) {
                Ok(p) => p,
                Err(e) => return e,
            };
            for w in live_link_gaps(&sc, &file).into_iter().chain(live_tcp_gaps(&sc, &file)) {
                eprintln!("warning: {w}");
            }
            // The gateway runs by hand on the testbed's addresses, as under `run --live`.
            if let Some(i) = sc.middlebox.iter().position(|m| m.kind == "gateway") {
                for w in class_drift(&sc, &file, &sc.middlebox[i], i, scenario.parent(), &spec, &|_| 5201) {
                    eprintln!("warning: {w}");
                }
            }
            match testbed::up(&spec) {
                Ok(tb) => {
                    // The hosts get the scenario's `[tcp]` knobs, as under `run --live`.
                    if let Err(e) = tb.apply_tcp(&endpoint_tcp(&sc.tcp)) {
                        let _ = testbed::down(&tb.prefix);
                        return fail(RUNTIME, format!("{file}: key `tcp`: setting the hosts' TCP: {e}"));
                    }
                    print!("{}", hand_guide(&tb, &sc, &policy));
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

/// What `testbed up` says about the gateway's policy: the file to pass to `ackshape gateway`, or
/// why there is none.
enum HandPolicy {
    /// The scenario has no box: the gateway passes frames through.
    None,
    /// A policy file (the box's `policy_file`, or the inline policy written by `--policy-out`).
    File(String),
    /// An inline policy, not written: `--policy-out` would write it.
    Inline,
    /// A box `ackshape gateway` does not run (only `run --live` does): its index and kind.
    Other(usize, String),
}

/// The scenario's gateway policy for a hand-run `ackshape gateway`; with `out`, the policy (inline
/// or from its file) is written there as a policy file, after the same checks the gateway makes.
fn hand_policy(sc: &Scenario, file: &str, base: Option<&Path>, out: Option<&Path>) -> Result<HandPolicy, ExitCode> {
    let Some((i, m)) = sc.middlebox.iter().enumerate().next() else {
        return match out {
            Some(_) => Err(fail(
                BAD_INPUT,
                format!("{file}: --policy-out: the scenario has no `[[middlebox]]` kind = \"gateway\""),
            )),
            None => Ok(HandPolicy::None),
        };
    };
    if m.kind != "gateway" {
        return match out {
            Some(_) => Err(fail(
                BAD_INPUT,
                format!("{file}: --policy-out: `middlebox[{i}]` is kind = {:?}, not a gateway with a policy", m.kind),
            )),
            None => Ok(HandPolicy::Other(i, m.kind.clone())),
        };
    }
    let inline = m.settings.get("policy").and_then(|v| v.as_table());
    let from_file = m.settings.get("policy_file").and_then(|v| v.as_str()).map(|f| match base {
        Some(b) if Path::new(f).is_relative() && !b.as_os_str().is_empty() => b.join(f),
        _ => PathBuf::from(f),
    });
    // The same checks as the simulator's box and the live gateway's load.
    if let Some(Err((k, msg))) = ackshape_sim::middlebox::gateway_policy(m, base) {
        return Err(fail(BAD_INPUT, format!("{file}: key `middlebox[{i}].{k}`: {msg}")));
    }
    let Some(out) = out else {
        return Ok(match from_file {
            Some(p) => HandPolicy::File(p.display().to_string()),
            None => HandPolicy::Inline,
        });
    };
    let text = match (inline, &from_file) {
        (Some(t), _) => format!(
            "# The gateway policy of {file} (`middlebox[{i}].policy`), for `ackshape gateway --policy`.\n{}",
            toml::to_string(t).expect("a TOML table serialises")
        ),
        (None, Some(p)) => match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) => return Err(fail(BAD_INPUT, format!("{}: {e}", p.display()))),
        },
        (None, None) => unreachable!("gateway_policy refused a box without a policy"),
    };
    if let Err(e) = std::fs::write(out, text) {
        return Err(fail(RUNTIME, format!("{}: {e}", out.display())));
    }
    Ok(HandPolicy::File(out.display().to_string()))
}

/// A rate as the CLI takes it back: `100Mbit/s`, `1.5Mbit/s`, `800kbit/s`.
fn rate_arg(bps: u64) -> String {
    if bps >= 1_000_000_000 && bps.is_multiple_of(1_000_000_000) {
        format!("{}Gbit/s", bps / 1_000_000_000)
    } else if bps >= 1_000_000 && bps.is_multiple_of(1_000) {
        // Exact: at most three decimals.
        let v = format!("{:.3}", bps as f64 / 1e6);
        format!("{}Mbit/s", v.trim_end_matches('0').trim_end_matches('.'))
    } else if bps.is_multiple_of(1_000) {
        format!("{}kbit/s", bps / 1_000)
    } else {
        format!("{bps}bit/s")
    }
}

/// A duration as the CLI takes it back: `10ms`, `0.5ms`, `250us`.
fn dur_arg(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// `ackshape wanem` arguments for the scenario's WAN (what `run --live` gives its wanem), and notes
/// on what the command line cannot say (the CLI's delay, jitter, loss and queue are the same both
/// ways; the rate can differ).
fn wanem_args(fwd: &WanLink, back: &WanLink) -> (String, Vec<String>) {
    let mut a = format!("--delay {}", dur_arg(fwd.delay_ns));
    let mut notes = Vec::new();
    if let JitterSpec::Uniform { max_ns } = fwd.jitter {
        a += &format!(" --jitter {}", dur_arg(max_ns));
    }
    match &fwd.loss {
        LossSpec::None => {}
        LossSpec::Bernoulli { p } => a += &format!(" --loss {p}"),
        LossSpec::Periodic { every, offset: 0 } => a += &format!(" --loss-every {every}"),
        LossSpec::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } if *loss_good == 0.0 && *loss_bad == 1.0 => {
            a += &format!(" --loss-ge {p_gb},{p_bg}")
        }
        other => notes.push(format!("the WAN's loss model {other:?} has no wanem flag; `run --live` applies it")),
    }
    if let Some(r) = fwd.rate_bps {
        a += &format!(" --rate {}", rate_arg(r));
    }
    if back.rate_bps != fwd.rate_bps {
        if let Some(r) = back.rate_bps {
            a += &format!(" --rate-back {}", rate_arg(r));
        }
    }
    a += &format!(" --queue {}", fwd.queue_packets);
    if back.delay_ns != fwd.delay_ns {
        notes.push(format!(
            "the reverse (B→A) delay is {} in the scenario; the wanem flags set {} both ways",
            dur_arg(back.delay_ns),
            dur_arg(fwd.delay_ns)
        ));
    }
    if back.loss != fwd.loss || back.jitter != fwd.jitter || back.queue_packets != fwd.queue_packets {
        notes.push(
            "the reverse direction's loss, jitter or queue differ in the scenario; the flags use the forward one's"
                .into(),
        );
    }
    (a, notes)
}

/// The listing `testbed up` prints: the namespaces and their ports, and the commands that run the
/// scenario by hand in them (`run --live` does all of it itself).
fn hand_guide(tb: &testbed::Testbed, sc: &Scenario, policy: &HandPolicy) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "testbed {} is up:", tb.prefix);
    let _ = writeln!(s, "  sender    netns {:<16} {} {}", tb.ns_sender, tb.if_sender, tb.sender_addr);
    let _ = writeln!(s, "  gateway   netns {:<16} lan {}, wan {}", tb.ns_gateway, tb.if_gw_lan, tb.if_gw_wan);
    if let (Some(ns), Some(a), Some(b)) = (&tb.ns_wanem, &tb.if_wan_a, &tb.if_wan_b) {
        let _ = writeln!(s, "  wanem     netns {ns:<16} a {a} (gateway side), b {b} (receiver side)");
    }
    let _ = writeln!(s, "  receiver  netns {:<16} {} {}", tb.ns_receiver, tb.if_receiver, tb.receiver_addr);
    let _ = writeln!(s);
    // The running binary's path: `ackshape` need not be on PATH (nor on root's).
    let bin = crate::self_path();
    if let (Some(ns), Some(a), Some(b)) = (&tb.ns_wanem, &tb.if_wan_a, &tb.if_wan_b) {
        if let SimTopo::Dumbbell(d) = &sc.topology {
            let (bf, br) = d.bottleneck.directions();
            let (af, ar) = d.access.directions();
            let racc = d.receiver_access_link();
            let (rf, rr) = racc.directions();
            let (mut args, mut notes) =
                wanem_args(&wan_link(&bf, af.delay + rf.delay), &wan_link(&br, ar.delay + rr.delay));
            if flow_paths(sc, d).differ {
                notes.push(
                    "the receivers' access links shape (rate, loss, jitter or qdisc) or the flows' delays differ \
                     (RTT groups): the wanem below runs the bottleneck with the first flow's delays; `run --live` \
                     runs each flow's path behind the bottleneck"
                        .to_string(),
                );
            }
            // The disciplines as `--qdisc` tables (every key written out).
            let table = |q: &Option<QdiscSpec>, sub: &str, notes: &mut Vec<String>| match q {
                None => Some("drop-tail".to_string()),
                Some(q) => match q.to_table() {
                    Some(t) => Some(format!("'{}'", toml::Value::Table(t))),
                    None => {
                        notes.push(format!(
                            "`topology.bottleneck{sub}.qdisc` cannot be written as a flag; `run --live` applies it"
                        ));
                        None
                    }
                },
            };
            if bf.qdisc.is_some() || br.qdisc.is_some() {
                let f = table(&bf.qdisc, "", &mut notes);
                let b = table(&br.qdisc, ".reverse", &mut notes);
                if let Some(f) = f.as_ref().filter(|f| *f != "drop-tail") {
                    args += &format!(" --qdisc {f}");
                }
                if b != f {
                    if let Some(b) = b {
                        args += &format!(" --qdisc-back {b}");
                    }
                }
            }
            let _ = writeln!(s, "start the WAN (the scenario's bottleneck; delays include the access links):");
            let _ = writeln!(s, "  ip netns exec {ns} {bin} wanem --a {a} --b {b} {args} --seed {} &", sc.seed);
            for n in notes {
                let _ = writeln!(s, "  (note: {n})");
            }
        } else {
            let _ = writeln!(s, "start the WAN:");
            let _ = writeln!(s, "  ip netns exec {ns} {bin} wanem --a {a} --b {b} --delay 10ms &");
        }
    }
    let gw = format!("ip netns exec {} {bin} gateway --lan {} --wan {}", tb.ns_gateway, tb.if_gw_lan, tb.if_gw_wan);
    let stats = "--stats-json gateway-stats.jsonl";
    match policy {
        HandPolicy::None => {
            let _ = writeln!(
                s,
                "start the gateway (the scenario has no box: a pass-through; add --policy P.toml to shape):"
            );
            let _ = writeln!(s, "  {gw} {stats} &");
        }
        HandPolicy::File(f) => {
            let _ = writeln!(s, "start the gateway with the scenario's policy (kill -HUP reloads the file):");
            let _ = writeln!(s, "  {gw} --policy {f} {stats} &");
        }
        HandPolicy::Inline => {
            let _ = writeln!(
                s,
                "start the gateway (the scenario's policy is inline: `testbed up --policy-out gw.toml` writes it as a file):"
            );
            let _ = writeln!(s, "  {gw} --policy gw.toml {stats} &");
        }
        HandPolicy::Other(i, kind) => {
            let _ = writeln!(
                s,
                "start the gateway (`middlebox[{i}]`, kind = {kind:?}, runs only under `ackshape run --live`; by hand the gateway runs a policy):"
            );
            let _ = writeln!(s, "  {gw} [--policy P.toml] {stats} &");
        }
    }
    // The scenario's bulk flows as one iperf3 run (`run --live` starts them at their own times).
    let n: u32 = sc.flows.iter().filter(|f| f.kind == FlowKind::Bulk).map(|f| f.count.unwrap_or(1)).sum();
    let cc = match sc.live.as_ref().and_then(|l| l.get("cc")).and_then(|v| v.as_str()) {
        Some(c) => c.to_string(),
        None if sc.tcp.cc == Some(CcAlgo::Cubic) => "cubic".into(),
        None if sc.tcp.cc == Some(CcAlgo::Bbr) => "bbr".into(),
        None => "reno".into(),
    };
    let secs = sc.duration.0.as_secs_f64().ceil().max(1.0) as u64;
    let bulk = || sc.flows.iter().filter(|f| f.kind == FlowKind::Bulk);
    let by_receiver = bulk().count() > 0 && bulk().all(|f| f.open == FlowOpen::Receiver);
    // With the receivers opening the connections, the iperf3 server sends (-R) from the sender side.
    let (how, server_ns, client_ns, server_addr, reverse) = if by_receiver {
        (", opened by their receivers, with iperf3 -R", &tb.ns_sender, &tb.ns_receiver, tb.sender_addr, " -R")
    } else {
        (", with iperf3", &tb.ns_receiver, &tb.ns_sender, tb.receiver_addr, "")
    };
    let _ = writeln!(s, "run traffic (the scenario's {} bulk flows at once{how}):", n.max(1));
    let _ = writeln!(s, "  ip netns exec {server_ns} iperf3 -s -D");
    let _ =
        writeln!(s, "  ip netns exec {client_ns} iperf3 -c {server_addr}{reverse} -t {secs} -P {} -C {cc}", n.max(1));
    let _ = writeln!(s, "remove it (this stops what runs in its namespaces too):");
    let _ = writeln!(s, "  {bin} testbed down --prefix {}", tb.prefix);
    s
}

/// The summary's `scenario` object, with the keys of the simulator's (`set` only when there are
/// `--set`s).
fn scenario_info(sc: &Scenario, file: &str, dur_s: f64, warm: f64) -> serde_json::Value {
    let mut v = serde_json::json!({
        "name": sc.name.clone().unwrap_or_else(|| file.to_string()),
        "file": file,
        "duration_s": dur_s,
        "measure_from_s": warm,
    });
    if !sc.set.is_empty() {
        v["set"] = serde_json::json!(sc.set);
    }
    v
}

/// `ackshape run --live`: the scenario's dumbbell as sender — gateway — wanem — receiver
/// namespaces with real Linux TCP. The wanem carries the bottleneck (rate, queue, loss, jitter)
/// and the path's whole one-way delay.
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
    let file = path.display().to_string();
    let SimTopo::Dumbbell(d) = &sc.topology else {
        return fail(BAD_INPUT, format!("{file}: key `topology.kind`: run --live supports \"dumbbell\" scenarios"));
    };
    if d.upstream.is_some() {
        return fail(BAD_INPUT, format!("{file}: key `topology.upstream`: run --live has no upstream router yet"));
    }
    // Each live flow is a real connection on port 6000 + i with a thread at each end.
    let (live_flows, i, _) = sc.flow_total();
    if live_flows > MAX_LIVE_FLOWS {
        return fail(
            BAD_INPUT,
            format!(
                "{file}: key `flows[{i}].count`: run --live runs at most {MAX_LIVE_FLOWS} flows (each a real connection on \
                 port 6000 + i with a thread at each end), got {live_flows}; the simulator takes up to {}",
                ackshape_sim::scenario::MAX_FLOWS
            ),
        );
    }
    // [[middlebox]]: the same factory as the simulator builds the same box; it runs in the
    // gateway, which sits where the dumbbell's `left` router is (senders → box → bottleneck).
    let mut boxes = Vec::new();
    for (i, m) in sc.middlebox.iter().enumerate() {
        if m.node != "left" || m.wan != "bottleneck" {
            return fail(
                BAD_INPUT,
                format!(
                    "{file}: key `middlebox[{i}].node`: run --live runs a box in the gateway between the senders and the \
                     bottleneck, i.e. node = \"left\", wan = \"bottleneck\"; got node = {:?}, wan = {:?}",
                    m.node, m.wan
                ),
            );
        }
        if m.mode != MbMode::Inline {
            return fail(
                BAD_INPUT,
                format!(
                    "{file}: key `middlebox[{i}].mode`: run --live runs inline boxes (a mirror box is `ackshape tap`)"
                ),
            );
        }
        match build_middlebox(m, sc.seed, i, path.parent()) {
            Ok(b) => boxes.push((m.node.clone(), m.kind.clone(), b)),
            Err((k, msg)) => return fail(BAD_INPUT, format!("{file}: key `middlebox[{i}].{k}`: {msg}")),
        }
    }
    if boxes.len() > 1 {
        return fail(BAD_INPUT, format!("{file}: key `middlebox[1]`: run --live runs one box (the gateway's)"));
    }
    let mb_node = boxes.first().map(|b| b.0.clone());
    if let Some(why) = testbed::preflight() {
        return fail(CANNOT_RUN, format!("run --live cannot run here: {why}"));
    }
    let mut topo = match topology_of(&sc, &file) {
        Ok(t) => t,
        Err(e) => return e,
    };
    if sc.live.as_ref().and_then(|l| l.get("testbed")).and_then(|t| t.get("prefix")).is_none() {
        topo.prefix = "acks-run".into();
    }
    // A policy that matches on addresses or ports may put a flow into another class live.
    let mut warnings = live_class_drift(&sc, &file, path.parent(), &topo);
    // Links the testbed does not apply: the two drivers then run different paths.
    warnings.extend(live_link_gaps(&sc, &file));
    warnings.extend(live_tcp_gaps(&sc, &file));
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let (bf, br) = d.bottleneck.directions();
    let mut spec = RigSpec::new(&topo.prefix);
    spec.topology = topo;
    // A bottleneck with a queue discipline, or a receivers' access link that shapes: the wanem runs
    // the simulator's link code in a box.
    let plan = wan_plan(&sc, d);
    spec.wanem = plan.links;
    spec.wanem_seed = sc.seed;
    let (wan_boxed, wan_paths) = (plan.boxed.is_some(), plan.paths);
    if let Some(b) = plan.boxed {
        spec.wanem_pipeline = Some(Box::new(MiddleboxPipeline::new(b, "wan-link")));
    }
    // With --out, the gateway's stats (ports, flows, the box's per-class and per-flow counters)
    // every second as JSON lines: the run's course, not only its end.
    if let Some(o) = &out {
        if let Err(e) = std::fs::create_dir_all(o) {
            return fail(RUNTIME, format!("{}: {e}", o.display()));
        }
        spec.gateway.stats_json = Some(o.join("gateway-stats.jsonl"));
    }
    // The box's measurement window starts after the warm-up, counted from when the flows start.
    let warmup = sc.warmup.map(|w| Duration::from_nanos(w.0 .0)).unwrap_or_default();
    let window_at = ackshape_live::mbpipe::WindowStart::default();
    let window_end = ackshape_live::mbpipe::WindowStart::default();
    if let Some((_, kind, mb)) = boxes.pop() {
        spec.pipeline = Box::new(
            MiddleboxPipeline::new(mb, &kind).start_window_at(window_at.clone()).end_window_at(window_end.clone()),
        );
    }
    let live_cc = sc.live.as_ref().and_then(|l| l.get("cc")).and_then(|v| v.as_str()).map(str::to_string);
    let mut flows = Vec::new();
    let dur_s = sc.duration.0.as_secs_f64();
    let mut k = 0u64;
    for (i, f) in sc.flows.iter().enumerate() {
        if f.kind != FlowKind::Bulk {
            return fail(BAD_INPUT, format!("{file}: key `flows[{i}].kind`: run --live supports bulk TCP flows"));
        }
        let tcp = f.tcp.clone().unwrap_or_default().over(&sc.tcp);
        let cc = match (&live_cc, tcp.cc.unwrap_or_default()) {
            (Some(c), _) => c.clone(),
            (None, CcAlgo::Cubic) => "cubic".into(),
            (None, CcAlgo::Bbr) => "bbr".into(),
            (None, CcAlgo::Misbehaving) => {
                return fail(BAD_INPUT, format!("{file}: key `flows[{i}].tcp.cc`: Linux has no misbehaving sender"))
            }
            (None, CcAlgo::MulTcp) => {
                return fail(BAD_INPUT, format!("{file}: key `flows[{i}].tcp.cc`: Linux has no MulTCP"))
            }
            (None, _) => "reno".into(),
        };
        for _ in 0..f.count.unwrap_or(1) {
            let start = match f.start.unwrap_or(StartV::At(Default::default())) {
                StartV::At(t) => t.as_secs_f64(),
                // Deterministic spread over the interval (no random stream in the live runner).
                StartV::Uniform(a, b) => {
                    let n = f.count.unwrap_or(1).max(1) as f64;
                    a.as_secs_f64() + (b.as_secs_f64() - a.as_secs_f64()) * ((k % n as u64) as f64 + 0.5) / n
                }
            };
            flows.push(FlowSpec {
                name: format!("f{k}"),
                cc: Some(cc.clone()),
                start_s: start,
                bytes: f.bytes.map(|b| match b.0 {
                    units::Size::Bytes(x) => x,
                    units::Size::Packets(p) => p * 1448,
                }),
                duration_s: Some((dur_s - start).max(0.1)),
                open_by_receiver: f.open == FlowOpen::Receiver,
                sock: flow_sock_opts(f.tcp.as_ref(), &sc.tcp),
            });
            k += 1;
        }
    }
    let t0 = Instant::now();
    let mut rig = match Rig::start(spec) {
        Ok(r) => r,
        Err(e) => return fail(RUNTIME, format!("starting the testbed: {e}")),
    };
    let bin = sc.bin.map(|b| Duration::from_nanos(b.0 .0)).unwrap_or(Duration::from_secs(1));
    if let Err(e) = rig.tb.apply_tcp(&endpoint_tcp(&sc.tcp)) {
        drop(rig);
        return fail(RUNTIME, format!("{file}: key `tcp`: setting the live endpoints' TCP: {e}"));
    }
    // The flows start now (at their `start` offsets) and stop at `duration`: the box measures
    // from the warm-up to the duration, as the simulator does, not the teardown after it.
    let flows_t0 = Instant::now();
    let _ = window_at.set(flows_t0 + warmup);
    let _ = window_end.set(flows_t0 + Duration::from_nanos(sc.duration.0 .0));
    // A progress bar over the scenario's duration while the flows run (on a terminal only).
    let bar = if show_bar {
        indicatif::ProgressBar::new(sc.duration.0 .0 / 1_000_000)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} live run [{bar:40}] {pos}/{len} ms of the scenario ({elapsed})",
        )
        .unwrap()
        .progress_chars("=> "),
    );
    let running = std::sync::atomic::AtomicBool::new(true);
    let reports = std::thread::scope(|s| {
        s.spawn(|| {
            while running.load(std::sync::atomic::Ordering::Relaxed) {
                bar.set_position((flows_t0.elapsed().as_millis() as u64).min(bar.length().unwrap_or(0)));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let r = traffic::run_flows(&rig.tb, &flows, bin, sc.seed);
        running.store(false, std::sync::atomic::Ordering::Relaxed);
        r
    });
    bar.finish_and_clear();
    let (gw, wan) = rig.stop();
    drop(rig);
    let reports = match reports {
        Ok(r) => r,
        Err(e) => return fail(RUNTIME, format!("live flows: {e}")),
    };
    let warm = sc.warmup.map(|w| w.0.as_secs_f64()).unwrap_or(0.0);
    let snap = |x: Option<Result<ackshape_live::stats::Snapshot, String>>| -> serde_json::Value {
        match x {
            Some(Ok(s)) => serde_json::from_str(&s.json_line()).unwrap_or(serde_json::Value::Null),
            Some(Err(e)) => serde_json::json!({ "error": e }),
            None => serde_json::Value::Null,
        }
    };
    let mut fl = Vec::new();
    let mut good = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let win: Vec<&(f64, f64)> = r.series.iter().filter(|(t, _)| *t >= warm && *t < dur_s).collect();
        let g = if win.is_empty() { r.goodput_bps } else { win.iter().map(|(_, v)| v).sum::<f64>() / win.len() as f64 };
        good.push(g);
        fl.push(serde_json::json!({
            "id": i, "name": r.name, "cc": r.cc, "goodput_bps": g, "bytes_delivered": r.bytes,
            "intact": r.intact, "error": r.error,
            "retransmitted_packets": r.retransmitted_packets,
            "mss": r.mss, "receiver_acks_per_segment": r.receiver_acks_per_segment,
        }));
    }
    // Links in the simulator's terms, from the wanem's counters: A→B is the bottleneck's data
    // direction (it leaves by port b), B→A the reverse. Real flows run a little longer than the
    // scenario (connection set-up, draining), so utilization is over the span in which the
    // receivers got data (from the goodput series), not over `duration`.
    let wan_json = snap(wan);
    let gw_json = snap(gw);
    // The box's stats in the simulator's shape (`middleboxes[]`), so `ackshape compare` reads both.
    let middleboxes: Vec<serde_json::Value> = match &mb_node {
        Some(node) => {
            let p = &gw_json["pipeline"];
            vec![serde_json::json!({
                "node": node,
                "kind": p["kind"],
                "packets_seen": p["packets_seen"],
                "packets_emitted": p["packets_emitted"],
                "stats": p["stats"],
                "frames": p["frames"],
            })]
        }
        None => vec![],
    };
    let span_s = reports
        .iter()
        .flat_map(|r| r.series.iter().filter(|(_, v)| *v > 0.0).map(|(t, _)| t + bin.as_secs_f64()))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let mut links = Vec::new();
    let wan_stats = &wan_json["pipeline"]["stats"];
    let mut rows = vec![
        ("bottleneck".to_string(), &wan_stats["bottleneck"], "a_to_b", "b", bf.rate.0),
        ("bottleneck:rev".to_string(), &wan_stats["bottleneck"], "b_to_a", "a", br.rate.0),
    ];
    for (name, f, r) in &wan_paths {
        let st = &wan_stats["access"][name.as_str()];
        rows.push((name.clone(), st, "a_to_b", "b", *f));
        rows.push((format!("{name}:rev"), st, "b_to_a", "a", *r));
    }
    let series = !wan_paths.is_empty();
    for (name, stage, dir, port, rate) in rows {
        // The wanem's own counters, or those of the link box (the same keys, under the box's
        // stats; per link when the box is links in series, each counting what it sent).
        let (p, tx_packets, tx_bytes) = if series {
            let p = &stage[dir];
            (p, p["sent"].clone(), p["sent_bytes"].as_u64().unwrap_or(0))
        } else {
            let p = if wan_boxed { &wan_json["pipeline"]["stats"][dir] } else { &wan_json["pipeline"][dir] };
            let tx = &wan_json["ports"][port];
            (p, tx["tx_packets"].clone(), tx["tx_bytes"].as_u64().unwrap_or(0))
        };
        if p.is_null() {
            continue;
        }
        links.push(serde_json::json!({
            "name": name,
            "rate_bps": rate,
            "tx_packets": tx_packets,
            "tx_bytes": tx_bytes,
            "drops": p["queue_drops"],
            "lost": p["lost"],
            "utilization": tx_bytes as f64 * 8.0 / (rate as f64 * span_s),
            "queue_max_pkts": p["max_queue"],
        }));
    }
    let summary = serde_json::json!({
        "ackshape": ackshape_sim::provenance::Provenance::json(),
        "scenario": scenario_info(&sc, &file, dur_s, warm),
        "seed": sc.seed,
        "mode": "live",
        "sim": { "events": 0, "wall_time_s": t0.elapsed().as_secs_f64() },
        "flows": fl,
        "aggregate": { "flows": good.len(), "goodput_bps": good.iter().sum::<f64>(), "jain": jain(&good), "cov": cov(&good) },
        "links": links,
        "middleboxes": middleboxes,
        "gateway": gw_json,
        "wanem": wan_json,
    });
    let mut summary = summary;
    if !warnings.is_empty() {
        summary["warnings"] = serde_json::json!(warnings);
    }
    // Printed and written as the simulator's: floats to 12 significant digits.
    ackshape_sim::run::round_json(&mut summary);
    let mut written = Vec::new();
    if let Some(o) = &out {
        match write_live_outputs(o, &summary, &reports, bin) {
            Ok(f) => written = [f, vec![o.join("gateway-stats.jsonl")]].concat(),
            Err(e) => return fail(RUNTIME, e.to_string()),
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap());
    } else {
        println!("live run of {} ({} flows, {:.0} s)", summary["scenario"]["name"], good.len(), dur_s);
        println!(
            "{:>4} {:<6} {:<6} {:>14} {:>14} {:>8} {:>7}",
            "flow", "name", "cc", "goodput", "bytes", "retrans", "intact"
        );
        // Many flows: the first rows, every flow whose stream was not intact, and a line on all.
        let fold = reports.len() > ackshape_sim::run::FLOW_ROWS_MAX;
        for (i, r) in reports.iter().enumerate() {
            if fold && i >= ackshape_sim::run::FLOW_ROWS_FOLDED && r.intact {
                continue;
            }
            println!(
                "{:>4} {:<6} {:<6} {:>14} {:>14} {:>8} {:>7}",
                i,
                r.name,
                r.cc.clone().unwrap_or_default(),
                ackshape_sim::run::fmt_rate(good[i]),
                r.bytes,
                r.retransmitted_packets.map_or("–".to_string(), |x| x.to_string()),
                r.intact
            );
        }
        if fold {
            let mut g = good.clone();
            g.sort_by(f64::total_cmp);
            let fmt = ackshape_sim::run::fmt_rate;
            println!(
                "… {} more flows; goodput over all {}: min {}, median {}, max {}; {} with none; {} not intact (listed above)",
                reports.len() - ackshape_sim::run::FLOW_ROWS_FOLDED.min(reports.len()),
                g.len(),
                fmt(g[0]),
                fmt(g[g.len() / 2]),
                fmt(g[g.len() - 1]),
                g.iter().filter(|&&x| x == 0.0).count(),
                reports.iter().filter(|r| !r.intact).count()
            );
        }
        for m in &middleboxes {
            println!(
                "middlebox {} at {}: {} packets seen, {} emitted",
                m["kind"].as_str().unwrap_or("?"),
                m["node"].as_str().unwrap_or("?"),
                m["packets_seen"],
                m["packets_emitted"]
            );
        }
        println!(
            "aggregate goodput {}, Jain {:.4}, CoV {:.4}",
            ackshape_sim::run::fmt_rate(good.iter().sum()),
            jain(&good),
            cov(&good)
        );
        if let Some(o) = &out {
            println!("\n{}", crate::wrote_line(o, &written));
        }
    }
    if reports.iter().any(|r| !r.intact || r.error.is_some()) {
        return fail(RUNTIME, "a live flow failed or delivered corrupted data");
    }
    ExitCode::SUCCESS
}

/// Write a live run's `summary.json`, `flows.csv`, `links.csv`, `timeseries.csv` and
/// `goodput.svg` into `out`, in the simulator's formats (with the columns a live run has);
/// returns the files written.
fn write_live_outputs(
    out: &Path,
    summary: &serde_json::Value,
    reports: &[traffic::FlowReport],
    bin: Duration,
) -> Result<Vec<PathBuf>, ackshape_sim::run::RunError> {
    use ackshape_sim::run::{write_csv, write_json_csv, RunError};
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |err| RunError::Io { path: path.clone(), err }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut files = Vec::new();
    let p = out.join("summary.json");
    std::fs::write(&p, serde_json::to_string_pretty(summary).unwrap() + "\n").map_err(io(&p))?;
    files.push(p);
    let p = out.join("flows.csv");
    let cols = [
        "id",
        "name",
        "cc",
        "goodput_bps",
        "bytes_delivered",
        "retransmitted_packets",
        "mss",
        "receiver_acks_per_segment",
        "intact",
    ];
    write_json_csv(&p, summary["flows"].as_array().into_iter().flatten(), &cols.map(|k| (k, k)))?;
    files.push(p);
    let p = out.join("links.csv");
    let cols = ["name", "rate_bps", "tx_packets", "tx_bytes", "drops", "lost", "utilization", "queue_max_pkts"];
    write_json_csv(&p, summary["links"].as_array().into_iter().flatten(), &cols.map(|k| (k, k)))?;
    files.push(p);
    // The simulator's bins: a bin's start plus its width is its end.
    let b = bin.as_secs_f64();
    let p = out.join("timeseries.csv");
    write_csv(
        &p,
        "t_end_s,flow,goodput_bps",
        reports.iter().enumerate().flat_map(|(i, r)| r.series.iter().map(move |(t, g)| format!("{},{i},{g}", t + b))),
    )?;
    files.push(p);
    let mut series: Vec<ackshape_sim::plot::Series> = reports
        .iter()
        .map(|r| ackshape_sim::plot::Series {
            name: format!("{} ({})", r.name, r.cc.as_deref().unwrap_or("default")),
            points: r.series.iter().map(|(t, g)| (t + b, *g)).collect(),
        })
        .collect();
    let name = summary["scenario"]["name"].as_str().unwrap_or("live run");
    // Many flows: their spread per bin, as the simulator's plot does.
    let title = if series.len() > ackshape_sim::run::FLOW_ROWS_MAX {
        let n = series.len();
        series = ackshape_sim::run::goodput_spread(&series);
        format!("{name} (live): goodput per flow, spread over the {n} flows per bin")
    } else {
        format!("{name} (live): goodput per flow")
    };
    let plot = ackshape_sim::plot::line_chart(&title, "time (s)", "goodput (Mbit/s)", 1e6, &series);
    files.extend(plot.write(out, "goodput").map_err(io(out))?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testbed() -> testbed::Testbed {
        testbed::Testbed {
            prefix: "acks-t".into(),
            ns_sender: "acks-t-snd".into(),
            ns_gateway: "acks-t-gw".into(),
            ns_wanem: None,
            ns_receiver: "acks-t-rcv".into(),
            if_sender: "snd0".into(),
            if_gw_lan: "lan0".into(),
            if_gw_wan: "wan0".into(),
            if_wan_a: None,
            if_wan_b: None,
            if_receiver: "rcv0".into(),
            sender_addr: "10.77.0.1".parse().unwrap(),
            receiver_addr: "10.77.0.2".parse().unwrap(),
        }
    }

    /// The iperf3 lines of `testbed up`: the server where the data's receiver listens, or, for
    /// downloads their receivers open, in the sender namespace with the client running `-R`.
    #[test]
    fn the_hand_guide_runs_iperf3_the_way_the_flows_open() {
        let text = |open: &str| {
            let sc = Scenario::parse(
                &format!(
                    "duration = \"4s\"\n[tcp]\ncc = \"cubic\"\n[topology]\nkind = \"dumbbell\"\n\
                     bottleneck = {{ rate = \"10Mbit/s\", delay = \"5ms\" }}\n\
                     access = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n\
                     [[flows]]\nkind = \"bulk\"\ncount = 3\nopen = \"{open}\"\n"
                ),
                "t.toml",
            )
            .unwrap();
            hand_guide(&testbed(), &sc, &HandPolicy::None)
        };
        let by_sender = text("sender");
        // The printed commands run this very binary, by its path.
        let me = std::env::current_exe().unwrap().display().to_string();
        assert!(by_sender.contains(&format!("ip netns exec acks-t-gw {me} gateway --lan ")), "{by_sender}");
        assert!(by_sender.contains(&format!("{me} testbed down --prefix acks-t")), "{by_sender}");
        assert!(by_sender.contains("ip netns exec acks-t-rcv iperf3 -s -D"), "{by_sender}");
        assert!(by_sender.contains("ip netns exec acks-t-snd iperf3 -c 10.77.0.2 -t 4 -P 3 -C cubic"), "{by_sender}");
        assert!(!by_sender.contains("-R"), "{by_sender}");
        let by_receiver = text("receiver");
        assert!(by_receiver.contains("opened by their receivers"), "{by_receiver}");
        assert!(by_receiver.contains("ip netns exec acks-t-snd iperf3 -s -D"), "{by_receiver}");
        assert!(
            by_receiver.contains("ip netns exec acks-t-rcv iperf3 -c 10.77.0.1 -R -t 4 -P 3 -C cubic"),
            "{by_receiver}"
        );
    }

    /// A bottleneck `qdisc` is printed as the wanem's `--qdisc` (every key written out, so the
    /// flag reads as the same discipline), a different reverse one as `--qdisc-back`.
    #[test]
    fn the_hand_guide_gives_the_wanem_the_bottleneck_qdisc() {
        let wanem_line = |bottleneck: &str| {
            let sc = Scenario::parse(
                &format!(
                    "duration = \"4s\"\n[topology]\nkind = \"dumbbell\"\nbottleneck = {{ rate = \"10Mbit/s\", \
                     delay = \"5ms\"{bottleneck} }}\naccess = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n\
                     [[flows]]\nkind = \"bulk\"\n"
                ),
                "t.toml",
            )
            .unwrap();
            let tb = testbed::Testbed {
                ns_wanem: Some("acks-t-wan".into()),
                if_wan_a: Some("w0".into()),
                if_wan_b: Some("w1".into()),
                ..testbed()
            };
            let g = hand_guide(&tb, &sc, &HandPolicy::None);
            g.lines().find(|l| l.contains(" wanem --a ")).unwrap_or_else(|| panic!("a wanem line in {g}")).to_string()
        };
        let flag = |line: &str, f: &str| -> Option<QdiscSpec> {
            let rest = line.split_once(&format!("{f} '"))?.1;
            let t: toml::Table = format!("q = {}", rest.split_once('\'')?.0).parse().unwrap();
            let q: QdiscTable = t["q"].clone().try_into().unwrap();
            Some(q.spec)
        };
        assert!(!wanem_line("").contains("--qdisc"));
        let red = ", qdisc = { kind = \"red\", ecn = true, min_th = 5, max_th = 15 }";
        let l = wanem_line(red);
        let q = flag(&l, "--qdisc").expect("--qdisc");
        assert!(matches!(&q, QdiscSpec::Red(c) if c.ecn && c.min_th == 5.0 && c.max_th == 15.0), "{l}");
        assert!(!l.contains("--qdisc-back"), "the same both ways: {l}");
        let l = wanem_line(", qdisc = { kind = \"drr\" }, reverse = { qdisc = { kind = \"afvq\" } }");
        assert!(matches!(flag(&l, "--qdisc"), Some(QdiscSpec::Drr(_))), "{l}");
        assert!(matches!(flag(&l, "--qdisc-back"), Some(QdiscSpec::Asym(_))), "{l}");
        // Only the reverse direction has one (a forward `qdisc` would be the reverse's too).
        let l = wanem_line(", reverse = { qdisc = { kind = \"afvq\" } }");
        assert!(!l.contains("--qdisc '"), "{l}");
        assert!(matches!(flag(&l, "--qdisc-back"), Some(QdiscSpec::Asym(_))), "{l}");
    }
}
