//! `ackshape tap`: the live third-party tap (paper 004), and `ackshape testbed tap-up`.

use crate::common::{box_exit_code, dur, fail, io_exit_code, BAD_INPUT, CANNOT_RUN, RUNTIME};
use ackshape_live::engine::{SchedSpec, DEFAULT_NICE};
use ackshape_live::tap::{self, parse_mac, TapConfig, TapError, TapTopologySpec};
use ackshape_live::testbed;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct TapArgs {
    /// Interface receiving the mirrored copies (fed by `tc … action mirred egress mirror dev IF`).
    #[arg(long)]
    mirror: String,
    /// Interface the injected ACKs leave by, toward the router.
    #[arg(long)]
    inject: String,
    /// Tap policy (TOML, see docs/policy.md "Tap policy"); SIGHUP reloads it, a bad one is rejected.
    #[arg(long)]
    policy: PathBuf,
    /// MAC address of the router's interface at the other end of --inject (aa:bb:cc:dd:ee:ff).
    #[arg(long, value_name = "MAC")]
    router_mac: String,
    /// Hold every injection this long first (emulates a distant shaper, P4-S4.2b), e.g. 1ms.
    #[arg(long, default_value = "0s")]
    delay: String,
    /// Append periodic stats as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,
    /// Stats interval, e.g. 1s.
    #[arg(long, default_value = "1s")]
    stats_interval: String,
    /// Write mirror.pcap (copies received) and inject.pcap (frames injected) into this directory.
    #[arg(long, value_name = "DIR")]
    pcap_dir: Option<PathBuf>,
    /// Run even if the mirror port has offloads on (partial checksums are then recomputed in copies).
    #[arg(long)]
    allow_offloads: bool,
    /// Run the tap thread SCHED_FIFO at this priority (1-99).
    #[arg(long, value_name = "PRIO")]
    realtime: Option<i32>,
    /// Nice value of the tap thread (-20..=19).
    #[arg(long, default_value_t = DEFAULT_NICE, allow_negative_numbers = true)]
    nice: i32,
    /// Pin the tap thread to this CPU.
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
}

pub fn cmd_tap(a: TapArgs) -> ExitCode {
    let router_mac = match parse_mac(&a.router_mac) {
        Ok(m) => m,
        Err(e) => return fail(BAD_INPUT, format!("--router-mac: {e}")),
    };
    let mut cfg = TapConfig::new(&a.mirror, &a.inject, &a.policy, router_mac);
    let r = (|| -> Result<(), String> {
        cfg.delay = dur("--delay", &a.delay)?;
        cfg.stats_interval = dur("--stats-interval", &a.stats_interval)?;
        if !(-20..=19).contains(&a.nice) {
            return Err(format!("--nice: expected -20..=19, got {}", a.nice));
        }
        cfg.sched = SchedSpec { cpu: a.cpu, nice: a.nice, ..SchedSpec::default() };
        Ok(())
    })();
    if let Err(e) = r {
        return fail(BAD_INPUT, e);
    }
    cfg.stats_json = a.stats_json;
    cfg.pcap_dir = a.pcap_dir;
    cfg.allow_offloads = a.allow_offloads;
    cfg.realtime_priority = a.realtime;
    match tap::run(cfg) {
        Ok(stats) => {
            println!("{stats}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            let code = match &e {
                TapError::PolicyIo { .. } | TapError::Policy { .. } | TapError::SamePort(_) => BAD_INPUT,
                TapError::Port(g) => box_exit_code(g),
                TapError::Io(io) => io_exit_code(io),
            };
            fail(code, e)
        }
    }
}

#[derive(clap::Args)]
pub struct TapUpArgs {
    /// Name prefix (acks-…, at most 11 characters).
    #[arg(long, default_value = "acks-tap")]
    prefix: String,
    /// Add a wanem namespace between router and receiver (run `ackshape wanem` in it).
    #[arg(long)]
    wanem: bool,
    /// Sender sysctl, e.g. net.ipv4.tcp_sack=0 (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    sender_sysctl: Vec<String>,
}

pub fn cmd_tap_up(a: TapUpArgs) -> ExitCode {
    if let Some(why) = testbed::preflight() {
        return fail(CANNOT_RUN, format!("the testbed cannot run here: {why}"));
    }
    let mut spec = TapTopologySpec::new(&a.prefix);
    if a.wanem {
        spec.wanem = Some(Default::default());
    }
    for kv in &a.sender_sysctl {
        let Some((k, v)) = kv.split_once('=') else {
            return fail(BAD_INPUT, format!("--sender-sysctl: expected KEY=VALUE, got {kv:?}"));
        };
        spec.sender_sysctls.push((k.trim().replace('.', "/"), v.trim().to_string()));
    }
    match tap::topology_up(&spec) {
        Ok(t) => {
            let bin = crate::common::self_path();
            println!("tap testbed {} is up: {t:#?}", t.prefix);
            if let Some(w) = &t.ns_wanem {
                println!(
                    "start the wanem:  ip netns exec {w} {bin} wanem --a {p}-w0 --b {p}-w1 --delay 10ms --rate 10Mbit/s",
                    p = t.prefix
                );
            }
            println!(
                "start the tap:    ip netns exec {} {bin} tap --mirror {} --inject {} --router-mac {} --policy POLICY.toml",
                t.ns_tap, t.if_tap_mirror, t.if_tap_inject, t.router_inject_mac
            );
            println!("remove it with:   {bin} testbed down --prefix {}", t.prefix);
            ExitCode::SUCCESS
        }
        Err(e) => fail(RUNTIME, e),
    }
}
