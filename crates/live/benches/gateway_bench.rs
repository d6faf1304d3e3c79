//! Gateway benchmark: see `crates/live/bench/gateway_bench.sh`. Reports ratios against the
//! kernel bridge measured in the same run on the same topology.

use ackshape_core::middlebox::PassThrough as CorePassThrough;
use ackshape_core::queue::{DropTail, Limit};
use ackshape_core::shape::qlink::{QdiscLink, Shaper};
use ackshape_live::engine::{Control, SchedSpec};
use ackshape_live::gateway::PolicyPipeline;
use ackshape_live::gateway::{self, GatewayConfig};
use ackshape_live::mbpipe::MiddleboxPipeline;
use ackshape_live::pipeline::Pipeline;
use ackshape_live::policy::Policy;
use ackshape_live::rig::{Rig, RigSpec};
use ackshape_live::testbed::{self, spawn_in_netns, Testbed, TestbedGuard, TopologySpec};
use ackshape_live::traffic;
use ackshape_live::wanem::LinkSpec;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn iperf3(tb: &Testbed, secs: u64) -> Result<f64, String> {
    let mut srv = Command::new("ip")
        .args(["netns", "exec", &tb.ns_receiver, "iperf3", "-s", "-1", "-p", "5201"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("iperf3 server: {e}"))?;
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new("ip")
        .args(["netns", "exec", &tb.ns_sender, "iperf3", "-c", &tb.receiver_addr.to_string(), "-p", "5201"])
        .args(["-t", &secs.to_string(), "-J"])
        .output()
        .map_err(|e| format!("iperf3 client: {e}"))?;
    let _ = srv.wait();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("iperf3 output: {e}: {}", String::from_utf8_lossy(&out.stderr)))?;
    v["end"]["sum_received"]["bits_per_second"].as_f64().ok_or_else(|| format!("iperf3: no result in {v}"))
}

/// The kernel bridge as the middle: `br` over the gateway namespace's two ports.
fn bridge_up(tb: &Testbed, ns: &str, br: &str) {
    testbed::sh("ip", &["-n", ns, "link", "add", br, "type", "bridge"]).unwrap();
    for port in [&tb.if_gw_lan, &tb.if_gw_wan] {
        testbed::sh("ip", &["-n", ns, "link", "set", port, "master", br]).unwrap();
    }
    testbed::sh("ip", &["-n", ns, "link", "set", br, "up"]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
}

fn pct(v: &mut [Duration], q: f64) -> f64 {
    v.sort();
    v[((v.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6
}

/// UDP echo round trips at light load (one probe every 2 ms).
fn ping(tb: &Testbed, n: usize) -> Vec<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let dst = SocketAddr::from((tb.receiver_addr, 5003));
    let (tx, rx) = std::sync::mpsc::channel();
    let st = stop.clone();
    let srv = spawn_in_netns(&tb.ns_receiver, "echo", move || {
        let u = UdpSocket::bind(dst).unwrap();
        tx.send(()).unwrap();
        traffic::udp_echo_server(u, st);
    })
    .unwrap();
    rx.recv().unwrap();
    let v = spawn_in_netns(&tb.ns_sender, "ping", move || traffic::udp_ping(dst, n, Duration::from_millis(2)))
        .unwrap()
        .join()
        .unwrap()
        .unwrap()
        .unwrap();
    stop.store(true, Ordering::SeqCst);
    let _ = srv.join();
    v
}

type MakePipeline = fn() -> Box<dyn Pipeline>;

/// A way to run the middle of the benchmark topology.
struct Middle {
    label: &'static str,
    key: &'static str,
    /// None: the kernel bridge. Else SCHED_FIFO priority, whether to use the default scheduling
    /// (else neutral: nice 0, kernel slice, the session's group, like the bridge's softirq work
    /// in the endpoints' context), and the pipeline.
    gateway: Option<(Option<i32>, bool, MakePipeline)>,
}

fn policy_pipeline() -> Box<dyn Pipeline> {
    // One class for everything at 10 Gbit/s: the shaping machinery runs on every packet (class
    // buckets, leaf FIFO, link-sharing choice, flow table) without limiting the rate.
    let p = Policy::from_toml(
        "default_class = \"all\"\n[[class]]\nname = \"all\"\nrate = \"10Gbit/s\"\nqueue = \"1000pkt\"\n",
        "bench",
    )
    .expect("bench policy");
    Box::new(PolicyPipeline::new(&p))
}

/// Kernel bridge (reference) vs the gateway on the same veths — pass-through, and with a core
/// middlebox through `MiddleboxPipeline` — TCP goodput and UDP echo RTT, alternating rounds (the
/// machine is shared: alternating spreads other load over all of them).
fn throughput(results: &mut serde_json::Map<String, serde_json::Value>, secs: u64, rounds: usize) {
    let middles = [
        Middle { label: "kernel bridge", key: "bridge", gateway: None },
        Middle {
            label: "gateway pass-through",
            key: "gateway",
            gateway: Some((None, false, || Box::new(ackshape_live::pipeline::PassThrough))),
        },
        Middle {
            label: "gateway pass-through, default scheduling (nice -20, 0.1 ms slice, own cpu cgroup)",
            key: "gateway_default_sched",
            gateway: Some((None, true, || Box::new(ackshape_live::pipeline::PassThrough))),
        },
        Middle {
            label: "gateway pass-through, SCHED_FIFO",
            key: "gateway_fifo",
            gateway: Some((Some(50), false, || Box::new(ackshape_live::pipeline::PassThrough))),
        },
        Middle {
            label: "gateway, MiddleboxPipeline + core PassThrough box",
            key: "mbpipe_passthrough",
            gateway: Some((None, false, || {
                Box::new(MiddleboxPipeline::new(Box::new(CorePassThrough), "pass-through"))
            })),
        },
        Middle {
            label: "gateway, MiddleboxPipeline + policy Gateway box (1 class, 10 Gbit/s)",
            key: "mbpipe_gateway",
            gateway: Some((None, false, policy_pipeline)),
        },
    ];
    let mut spec = TopologySpec::new("acks-bg");
    spec.wanem = false;
    let tb = TestbedGuard::up(&spec).expect("testbed");
    let br = format!("{}-br", tb.prefix);
    let mut bps: Vec<Vec<f64>> = vec![vec![]; middles.len()];
    let mut rtt: Vec<Vec<Duration>> = vec![vec![]; middles.len()];
    let ns = tb.ns_gateway.clone();
    for _ in 0..rounds {
        for (k, m) in middles.iter().enumerate() {
            match m.gateway {
                None => {
                    bridge_up(&tb, &ns, &br);
                    rtt[k].extend(ping(&tb, 300));
                    bps[k].push(iperf3(&tb, secs).expect("iperf3 through bridge"));
                    testbed::sh("ip", &["-n", &ns, "link", "del", &br]).unwrap();
                }
                Some((rt, default_sched, mk)) => {
                    let ctl = Control::new();
                    let c2 = ctl.clone();
                    let mut cfg = GatewayConfig::new(&tb.if_gw_lan, &tb.if_gw_wan);
                    cfg.realtime_priority = rt;
                    if !default_sched {
                        cfg.sched = SchedSpec { nice: 0, fair_slice: None, cpu_group: false, ..Default::default() };
                    }
                    let h = spawn_in_netns(&ns, "gateway", move || gateway::run_with(cfg, &c2, mk())).unwrap();
                    assert!(ctl.wait_running(Duration::from_secs(5)), "gateway did not start");
                    rtt[k].extend(ping(&tb, 300));
                    bps[k].push(iperf3(&tb, secs).expect("iperf3 through gateway"));
                    ctl.request_stop();
                    let g = h.join().unwrap().unwrap().expect("gateway");
                    let (l, w) = (g.port("lan").unwrap(), g.port("wan").unwrap());
                    if l.kernel_drops + w.kernel_drops > 0 {
                        println!("{}: kernel drops lan {} wan {}", m.label, l.kernel_drops, w.kernel_drops);
                    }
                }
            }
        }
    }
    drop(tb);
    let med = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let b = med(&bps[0]);
    let (bp50, bp99) = (pct(&mut rtt[0].clone(), 0.5), pct(&mut rtt[0].clone(), 0.99));
    println!("## ackshape gateway benchmark ({rounds} alternating rounds of {secs} s iperf3 runs, same veths)\n");
    println!("| path | TCP goodput (median) | ratio to bridge | UDP echo RTT p50 | p99 | added RTT p50 / p99 |");
    println!("|---|---|---|---|---|---|");
    for (k, m) in middles.iter().enumerate() {
        let g = med(&bps[k]);
        let (p50, p99) = (pct(&mut rtt[k], 0.5), pct(&mut rtt[k], 0.99));
        println!(
            "| {} | {:.2} Gbit/s | {:.2} | {p50:.0} µs | {p99:.0} µs | {:.0} / {:.0} µs |",
            m.label,
            g / 1e9,
            g / b,
            p50 - bp50,
            p99 - bp99
        );
        results.insert(format!("{}_bps", m.key), g.into());
        results.insert(format!("{}_ratio", m.key), (g / b).into());
        results.insert(format!("{}_rtt_us", m.key), serde_json::json!([p50, p99]));
    }
    println!();
    for (k, m) in middles.iter().enumerate() {
        println!("per-round goodput (Gbit/s), {}: {:.2?}", m.label, bps[k].iter().map(|x| x / 1e9).collect::<Vec<_>>());
    }
}

/// Held-frame timing of a box inside the gateway: TCP through a qdisc-link box at 10 Mbit/s
/// (every data frame is released by the box's timer), per scheduling variant; sender and
/// receiver directly behind the gateway.
fn box_timing(results: &mut serde_json::Map<String, serde_json::Value>, rounds: usize) {
    let old = SchedSpec {
        nice: 0,
        fair_slice: None,
        cpu_group: false,
        spin: Duration::from_micros(40),
        ..Default::default()
    };
    let variants: Vec<(&str, Option<i32>, SchedSpec)> = vec![
        ("before: nice 0, spin 40 µs", None, old),
        ("after (default)", None, SchedSpec::default()),
        ("SCHED_FIFO 50", Some(50), SchedSpec::default()),
    ];
    let mut per: Vec<Vec<ackshape_live::stats::HoldTiming>> = vec![vec![]; variants.len()];
    let mut good: Vec<Vec<f64>> = vec![vec![]; variants.len()];
    for _ in 0..rounds {
        for (k, (_, rt, sched)) in variants.iter().enumerate() {
            // No wanem: its own deadline spinning would compete with the gateway's.
            let mut spec = RigSpec::new("acks-bq");
            spec.topology.wanem = false;
            spec.gateway.realtime_priority = *rt;
            spec.gateway.sched = sched.clone();
            let s = Shaper::new(10_000_000, Box::new(DropTail::new(Limit::Packets(100))));
            spec.pipeline = Box::new(MiddleboxPipeline::new(Box::new(QdiscLink::new(Some(s), None, 14)), "qdisc-link"));
            let mut rig = Rig::start(spec).expect("rig");
            let flows = [traffic::FlowSpec {
                name: "f".into(),
                cc: Some("cubic".into()),
                start_s: 0.0,
                bytes: None,
                duration_s: Some(4.0),
                open_by_receiver: false,
                sock: Default::default(),
            }];
            let r = traffic::run_flows(&rig.tb, &flows, Duration::from_millis(500), 1).expect("flows");
            let (g, _) = rig.stop();
            per[k].push(g.unwrap().unwrap().hold_timing);
            good[k].push(r[0].goodput_bps);
        }
    }
    println!("\n| box-released frames (qdisc-link 10 Mbit/s, 100 pkt, in the gateway; 4 s cubic flow) | p50 µs (median of rounds) | p99 µs (median) | p99 per round | max µs (worst) | goodput Mbit/s (median) |");
    println!("|---|---|---|---|---|---|");
    for (k, (label, _, _)) in variants.iter().enumerate() {
        let m = |mut v: Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let p99s: Vec<f64> = per[k].iter().map(|t| t.p99_us).collect();
        println!(
            "| {label} | {:.1} | {:.1} | {} | {:.0} | {:.3} |",
            m(per[k].iter().map(|t| t.p50_us).collect()),
            m(p99s.clone()),
            p99s.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", "),
            per[k].iter().map(|t| t.max_us).fold(0.0, f64::max),
            m(good[k].clone()) / 1e6
        );
        results.insert(format!("box_timing: {label}"), serde_json::to_value(&per[k]).unwrap());
    }
}

/// Namespace/veth prefix of the many-flow part.
const MANY_PREFIX: &str = "acks-hb";

/// (rx bytes, tx bytes, rx packets, tx packets) of `ifname` in namespace `ns` (kernel counters).
fn link_counters(ns: &str, ifname: &str) -> [u64; 4] {
    let out = testbed::sh("ip", &["-n", ns, "-s", "-j", "link", "show", "dev", ifname]).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let st = &v[0]["stats64"];
    let g = |d: &str, k: &str| st[d][k].as_u64().unwrap_or(0);
    [g("rx", "bytes"), g("tx", "bytes"), g("rx", "packets"), g("tx", "packets")]
}

/// CPU time of one thread of this process, from `/proc/self/task/TID/schedstat` (ns on CPU).
fn thread_cpu_ns(tid: i64) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0)
}

/// Machine-wide (softirq, all busy) time from /proc/stat, in seconds.
fn machine_cpu_s() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<f64> =
        s.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 8 {
        return (0.0, 0.0);
    }
    // user nice system idle iowait irq softirq steal
    let hz = 100.0;
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    (v[6] / hz, busy / hz)
}

/// The many-flow gateway policy: the generator's flows (senders in 10.80.0.0/16) in one class
/// at twice their offered load, with PostACK on-off (`spread`: spread_slots) or no mechanism;
/// iperf3's flow matches no rule and passes unshaped through the same box.
fn many_policy(n: usize, gen: &ackshape_live::flowgen::FlowGenSpec, mech: Option<bool>) -> String {
    let rate = (2.0 * gen.data_bps()) as u64;
    // A flow sends a segment every n / fps seconds: it must stay in PostACK's n meanwhile.
    let idle_ms = ((2.0 * gen.flow_period_s() * 1e3).ceil() as u64).max(1000);
    let mech = match mech {
        None => String::new(),
        Some(spread) => format!(
            "mechanism = {{ kind = \"postack\", variant = \"on-off\", packet_bytes = 1514, idle_timeout_ms = {idle_ms}, spread_slots = {spread} }}\n"
        ),
    };
    format!(
        "[flows]\nmax_flows = {}\n[[class]]\nname = \"many\"\nrate = \"{rate}bit/s\"\nburst = \"256KB\"\nqueue = \"10000pkt\"\n{mech}\
         [[rule]]\nclass = \"many\"\nsrc = \"10.80.0.0/16\"\n",
        (2 * n).max(65_536)
    )
}

/// One measured run of the many-flow part.
#[derive(Clone, Debug, Default, serde::Serialize)]
struct ManyRun {
    iperf_bps: f64,
    /// Frames forwarded by the middle (both directions, kernel tx counters of its ports), bit/s.
    fwd_bps: f64,
    fwd_pps: f64,
    /// Data-plane thread CPU over the iperf3 window, cores; per Gbit/s forwarded.
    dp_cores: Option<f64>,
    dp_cores_per_gbps: Option<f64>,
    /// Machine-wide softirq and all busy time over the window, cores.
    softirq_cores: f64,
    busy_cores: f64,
    gen: ackshape_live::flowgen::FlowGenReport,
    engine_flows: usize,
    pipeline_flows: u64,
    gw_flows_tracked: u64,
    gw_flows_shaped: u64,
    postack_active: Option<u64>,
    postack_acks_held_max: Option<u64>,
    postack_released_by_rule: Option<u64>,
    postack_slot_ms: Option<f64>,
    postack_hold_ms_mean: Option<f64>,
    /// Lateness of every frame released from a timer, and of the pure ACKs among them.
    hold_timing: Option<ackshape_live::stats::HoldTiming>,
    ack_timing: Option<ackshape_live::stats::HoldTiming>,
    rebuilt: u64,
    origins_untracked: u64,
    flows_untracked: u64,
    kernel_drops: u64,
}

/// Many flows (issue 6, point 8): iperf3 TCP goodput through the kernel bridge and through the
/// gateway while a generator keeps N = 1 000 / 100 000 TCP-like flows alive through the middle
/// (`ackshape_live::flowgen`; the same generator load for every variant), the gateway running a
/// policy whose class shapes the generator's flows by PostACK on-off. Same veths, alternating
/// variants each round.
fn many_flows(results: &mut serde_json::Map<String, serde_json::Value>, secs: u64, rounds: usize) {
    use ackshape_live::flowgen::{self, FlowGenSpec};
    let env = |k: &str| std::env::var(k).ok();
    let flow_counts: Vec<usize> = env("ACKS_BENCH_FLOWS")
        .unwrap_or_else(|| "1000,100000".into())
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    let fps: u64 = env("ACKS_BENCH_GEN_FPS").and_then(|s| s.parse().ok()).unwrap_or(20_000);
    // (label, key, None: bridge / Some(mechanism: None none, Some(spread)))
    type Variant = (&'static str, &'static str, Option<Option<bool>>);
    let all: Vec<Variant> = vec![
        ("kernel bridge", "bridge", None),
        ("gateway, class without mechanism", "gw_none", Some(None)),
        ("gateway, PostACK on-off (paper Fig. 4)", "gw_postack", Some(Some(false))),
        ("gateway, PostACK on-off, spread_slots", "gw_postack_spread", Some(Some(true))),
    ];
    let want = env("ACKS_BENCH_MANY_VARIANTS").unwrap_or_else(|| "bridge,gw_none,gw_postack,gw_postack_spread".into());
    let variants: Vec<Variant> = all.into_iter().filter(|v| want.split(',').any(|w| w.trim() == v.1)).collect();
    // The gateway's data-plane scheduling: the CLI's default (nice -20, 0.1 ms slice, own cpu
    // cgroup), or "neutral" (nice 0, kernel slice, the session's group: like the bridge's softirq
    // work, which runs in the endpoints' context).
    let neutral = env("ACKS_BENCH_MANY_SCHED").is_some_and(|v| v == "neutral");
    let mut spec = TopologySpec::new(MANY_PREFIX);
    spec.wanem = false;
    let tb = TestbedGuard::up(&spec).expect("testbed");
    let ns = tb.ns_gateway.clone();
    let br = format!("{}-br", tb.prefix);
    let dir = std::env::temp_dir().join(format!("{MANY_PREFIX}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Send-only sockets on the endpoints' interfaces and their MACs.
    let open = |ns: &str, ifname: &str| {
        let ifname = ifname.to_string();
        spawn_in_netns(ns, "gen-sock", move || {
            let s = ackshape_live::sys::PacketSocket::open_send_only(&ifname).expect("send-only socket");
            (s, ackshape_live::sys::if_hwaddr(&ifname).expect("MAC"))
        })
        .unwrap()
        .join()
        .unwrap()
        .unwrap()
    };
    let (fwd_sock, smac) = open(&tb.ns_sender, &tb.if_sender);
    let (rev_sock, rmac) = open(&tb.ns_receiver, &tb.if_receiver);
    let (fwd_sock, rev_sock) = (Arc::new(fwd_sock), Arc::new(rev_sock));
    let mut runs: Vec<Vec<Vec<ManyRun>>> = vec![vec![vec![]; variants.len()]; flow_counts.len()];
    for _ in 0..rounds {
        for (ni, &n) in flow_counts.iter().enumerate() {
            let mut gspec = FlowGenSpec::new(n, fps);
            gspec.sender_mac = smac;
            gspec.receiver_mac = rmac;
            for (vi, (label, _, v)) in variants.iter().enumerate() {
                // The middle.
                let mut gw = None;
                match v {
                    None => {
                        bridge_up(&tb, &ns, &br);
                    }
                    Some(mech) => {
                        let path = dir.join(format!("policy-{n}-{vi}.toml"));
                        std::fs::write(&path, many_policy(n, &gspec, *mech)).unwrap();
                        let policy = Policy::load(&path).expect("bench policy");
                        let mut cfg = GatewayConfig::new(&tb.if_gw_lan, &tb.if_gw_wan);
                        cfg.policy = Some(path);
                        if neutral {
                            cfg.sched = SchedSpec { nice: 0, fair_slice: None, cpu_group: false, ..Default::default() };
                        }
                        let ctl = Control::new();
                        let c2 = ctl.clone();
                        let (ttx, trx) = std::sync::mpsc::channel();
                        let h = spawn_in_netns(&ns, "gateway", move || {
                            let _ = ttx.send(ackshape_live::sys::gettid());
                            gateway::run_with(cfg, &c2, Box::new(PolicyPipeline::new(&policy)))
                        })
                        .unwrap();
                        let tid = trx.recv().unwrap();
                        assert!(ctl.wait_running(Duration::from_secs(5)), "gateway did not start");
                        gw = Some((ctl, h, tid));
                    }
                }
                // The generator, until every flow is open.
                let stop = Arc::new(AtomicBool::new(false));
                let warm = Arc::new(AtomicBool::new(false));
                let (st, wm, fs, rs, gs) =
                    (stop.clone(), warm.clone(), fwd_sock.clone(), rev_sock.clone(), gspec.clone());
                let gen = std::thread::Builder::new()
                    .name("flowgen".into())
                    .spawn(move || {
                        // Nice -20 with a short slice (not the data plane's cgroup): the generator
                        // keeps its rate against iperf3 and the machine's other load in every
                        // variant. With neutral scheduling it is neutral too (it would otherwise
                        // outrank the data plane within this process's session).
                        let _g =
                            (!neutral).then(|| SchedSpec { nice: -20, cpu_group: false, ..Default::default() }.apply());
                        flowgen::run(gs, &fs, &rs, &st, &wm)
                    })
                    .unwrap();
                let t0 = std::time::Instant::now();
                let limit = Duration::from_secs_f64(3.0 * gspec.flow_period_s() + 10.0);
                while !warm.load(Ordering::SeqCst) && t0.elapsed() < limit {
                    std::thread::sleep(Duration::from_millis(20));
                }
                // One more second: every flow has sent its first data and been ACKed.
                std::thread::sleep(Duration::from_secs(1));
                let sample = || {
                    let l = link_counters(&ns, &tb.if_gw_lan);
                    let w = link_counters(&ns, &tb.if_gw_wan);
                    (l[1] + w[1], l[3] + w[3], std::time::Instant::now(), machine_cpu_s())
                };
                let cpu0 = gw.as_ref().map(|g| thread_cpu_ns(g.2));
                let (b0, p0, i0, m0) = sample();
                let bps = iperf3(&tb, secs).expect("iperf3 with many flows");
                let (b1, p1, i1, m1) = sample();
                let cpu1 = gw.as_ref().map(|g| thread_cpu_ns(g.2));
                stop.store(true, Ordering::SeqCst);
                let grep = gen.join().unwrap().expect("flowgen");
                let el = (i1 - i0).as_secs_f64();
                let fwd_bps = (b1 - b0) as f64 * 8.0 / el;
                let mut r = ManyRun {
                    iperf_bps: bps,
                    fwd_bps,
                    fwd_pps: (p1 - p0) as f64 / el,
                    softirq_cores: (m1.0 - m0.0) / el,
                    busy_cores: (m1.1 - m0.1) / el,
                    gen: grep,
                    ..Default::default()
                };
                if let (Some(c0), Some(c1)) = (cpu0, cpu1) {
                    let cores = (c1 - c0) as f64 / 1e9 / el;
                    r.dp_cores = Some(cores);
                    r.dp_cores_per_gbps = Some(cores / (fwd_bps / 1e9));
                }
                match gw {
                    None => {
                        testbed::sh("ip", &["-n", &ns, "link", "del", &br]).unwrap();
                    }
                    Some((ctl, h, _)) => {
                        ctl.request_stop();
                        let g = h.join().unwrap().unwrap().expect("gateway");
                        let p = &g.pipeline;
                        let st = &p["stats"];
                        let m = &st["classes"]["many"]["mechanism_stats"]["outbound"];
                        r.engine_flows = g.flow_table.flows;
                        r.pipeline_flows = p["flows"].as_u64().unwrap_or(0);
                        r.gw_flows_tracked = st["flows"]["tracked"].as_u64().unwrap_or(0);
                        r.gw_flows_shaped = st["flows"]["shaped"].as_u64().unwrap_or(0);
                        r.postack_active = m["active_flows"].as_u64();
                        r.postack_acks_held_max = m["acks_held_max"].as_u64();
                        r.postack_released_by_rule = m["counters"]["released_by_rule"].as_u64();
                        r.postack_slot_ms = m["slot_period_ms"].as_f64();
                        r.postack_hold_ms_mean = m["hold_ms_mean"].as_f64();
                        r.hold_timing = Some(g.hold_timing.clone());
                        r.ack_timing = Some(g.hold_timing_acks.clone());
                        r.rebuilt = p["frames"]["rebuilt"].as_u64().unwrap_or(0);
                        r.origins_untracked = p["frames"]["origins_untracked"].as_u64().unwrap_or(0);
                        r.flows_untracked = p["frames"]["flows_untracked"].as_u64().unwrap_or(0);
                        r.kernel_drops = g.ports.iter().map(|(_, s)| s.kernel_drops).sum();
                    }
                }
                eprintln!(
                    "many-flows: {n} flows, {label}: iperf3 {:.2} Gbit/s, forwarded {:.2} Gbit/s ({:.0} kframes/s), \
                     data-plane {:?} cores, generator {:.0} seg/s ({} failures), flows engine/pipeline/gateway {}/{}/{}, \
                     PostACK n {:?}, held max {:?}, timing all {:?} ACKs {:?}",
                    r.iperf_bps / 1e9,
                    r.fwd_bps / 1e9,
                    r.fwd_pps / 1e3,
                    r.dp_cores,
                    r.gen.data_fps,
                    r.gen.send_failures,
                    r.engine_flows,
                    r.pipeline_flows,
                    r.gw_flows_tracked,
                    r.postack_active,
                    r.postack_acks_held_max,
                    r.hold_timing,
                    r.ack_timing
                );
                runs[ni][vi].push(r);
            }
        }
    }
    drop(tb);
    let _ = std::fs::remove_dir_all(&dir);
    let med = |mut v: Vec<f64>| {
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    println!(
        "\n## Many flows: iperf3 through the middle while flowgen keeps N flows alive ({fps} data segments/s + as many ACKs, \
         1514-byte segments; {rounds} alternating rounds of {secs} s; gateway scheduling: {})\n",
        if neutral { "neutral (nice 0, kernel slice, no cgroup)" } else { "default (nice -20, 0.1 ms slice, own cpu cgroup)" }
    );
    println!("| flows | path | iperf3 goodput | ratio to bridge | forwarded (all frames) | data-plane thread, cores | cores per Gbit/s forwarded | softirq cores (machine) | flows tracked (engine / pipeline / gateway / PostACK n) | ACKs held max | ACK release error p50 / p99 / max (µs) | all timer-released frames p50 / p99 / max (µs) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (ni, &n) in flow_counts.iter().enumerate() {
        let bridge = variants
            .iter()
            .position(|v| v.2.is_none())
            .map(|vi| med(runs[ni][vi].iter().map(|r| r.iperf_bps).collect()));
        for (vi, (label, key, _)) in variants.iter().enumerate() {
            let rs = &runs[ni][vi];
            let g = med(rs.iter().map(|r| r.iperf_bps).collect());
            let f = med(rs.iter().map(|r| r.fwd_bps).collect());
            let dp: Vec<f64> = rs.iter().filter_map(|r| r.dp_cores).collect();
            let dpg: Vec<f64> = rs.iter().filter_map(|r| r.dp_cores_per_gbps).collect();
            let last = rs.last().cloned().unwrap_or_default();
            let ht: Vec<&ackshape_live::stats::HoldTiming> = rs.iter().filter_map(|r| r.hold_timing.as_ref()).collect();
            let at: Vec<&ackshape_live::stats::HoldTiming> = rs.iter().filter_map(|r| r.ack_timing.as_ref()).collect();
            let fmt = |ht: &[&ackshape_live::stats::HoldTiming]| {
                if ht.iter().any(|t| t.samples > 0) {
                    format!(
                        "{:.1} / {:.0} / {:.0} ({} samples, last round)",
                        med(ht.iter().map(|t| t.p50_us).collect()),
                        med(ht.iter().map(|t| t.p99_us).collect()),
                        ht.iter().map(|t| t.max_us).fold(0.0, f64::max),
                        ht.last().map_or(0, |t| t.samples)
                    )
                } else {
                    "—".into()
                }
            };
            let (timing, all_timing) = (fmt(&at), fmt(&ht));
            println!(
                "| {n} | {label} | {:.2} Gbit/s | {} | {:.2} Gbit/s | {} | {} | {:.2} | {} | {} | {timing} | {all_timing} |",
                g / 1e9,
                bridge.map_or("—".into(), |b| format!("{:.2}", g / b)),
                f / 1e9,
                if dp.is_empty() { "—".into() } else { format!("{:.2}", med(dp)) },
                if dpg.is_empty() { "—".into() } else { format!("{:.2}", med(dpg)) },
                med(rs.iter().map(|r| r.softirq_cores).collect()),
                if ht.is_empty() {
                    "—".into()
                } else {
                    format!(
                        "{} / {} / {} / {}",
                        last.engine_flows,
                        last.pipeline_flows,
                        last.gw_flows_tracked,
                        last.postack_active.map_or("—".into(), |x| x.to_string())
                    )
                },
                last.postack_acks_held_max.map_or("—".into(), |x| x.to_string()),
            );
            results.insert(format!("many_{n}_{key}"), serde_json::to_value(rs).unwrap());
        }
    }
    println!();
    for &n in &flow_counts {
        let mut g = FlowGenSpec::new(n, fps);
        g.sender_mac = smac;
        println!("policy of the PostACK variant, {n} flows:\n```toml\n{}```", many_policy(n, &g, Some(false)));
    }
    for (ni, &n) in flow_counts.iter().enumerate() {
        for (vi, (label, _, _)) in variants.iter().enumerate() {
            let rs = &runs[ni][vi];
            println!(
                "per-round, {n} flows, {label}: iperf3 {:.2?} Gbit/s; generator {:.0?} seg/s, {:?} send failures; \
                 machine busy {:.2?} cores; gateway kernel drops {:?}, frames rebuilt {:?}, origins untracked {:?}, \
                 pipeline flows untracked {:?}; PostACK slot {:?} ms, mean hold {:?} ms, released by rule {:?}",
                rs.iter().map(|r| r.iperf_bps / 1e9).collect::<Vec<_>>(),
                rs.iter().map(|r| r.gen.data_fps).collect::<Vec<_>>(),
                rs.iter().map(|r| r.gen.send_failures).collect::<Vec<_>>(),
                rs.iter().map(|r| r.busy_cores).collect::<Vec<_>>(),
                rs.iter().map(|r| r.kernel_drops).collect::<Vec<_>>(),
                rs.iter().map(|r| r.rebuilt).collect::<Vec<_>>(),
                rs.iter().map(|r| r.origins_untracked).collect::<Vec<_>>(),
                rs.iter().map(|r| r.flows_untracked).collect::<Vec<_>>(),
                rs.iter().map(|r| r.postack_slot_ms).collect::<Vec<_>>(),
                rs.iter().map(|r| r.postack_hold_ms_mean).collect::<Vec<_>>(),
                rs.iter().map(|r| r.postack_released_by_rule).collect::<Vec<_>>(),
            );
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Some(r) = testbed::preflight() {
        eprintln!("SKIPPED: gateway_bench: {r}");
        return;
    }
    if Command::new("iperf3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: gateway_bench: iperf3 missing (apt-get install iperf3)");
        return;
    }
    let secs: u64 = std::env::var("ACKS_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let rounds: usize = std::env::var("ACKS_BENCH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let mut results = serde_json::Map::new();
    // ACKS_BENCH_PARTS: comma-separated subset of "throughput,timing,box,manyflows" (default: all).
    let parts = std::env::var("ACKS_BENCH_PARTS").unwrap_or_else(|_| "throughput,timing,box,manyflows".into());

    if parts.contains("throughput") {
        throughput(&mut results, secs, rounds);
    }
    if parts.contains("box") {
        box_timing(&mut results, rounds);
    }
    if parts.contains("manyflows") {
        many_flows(&mut results, secs, rounds);
    }
    // 2. Held-frame timing: a 1 ms delay line at light load, under each way of waiting for a
    //    deadline, alternating rounds so other load on the machine spreads over all of them.
    if parts.contains("timing") {
        let spin = |us: u64| Duration::from_micros(us);
        let old = SchedSpec { nice: 0, fair_slice: None, cpu_group: false, spin: spin(40), ..Default::default() };
        let variants: Vec<(&str, Option<i32>, SchedSpec)> = vec![
            ("before: nice 0, spin 40 µs (issue-5 engine)", None, old.clone()),
            ("spin 200 µs", None, SchedSpec { spin: spin(200), ..old.clone() }),
            (
                "spin 200 µs, thread nice -20, EEVDF slice 0.1 ms",
                None,
                SchedSpec { cpu_group: false, ..Default::default() },
            ),
            ("after (default): the same in a cpu cgroup of its own (shares 262144)", None, SchedSpec::default()),
            ("SCHED_FIFO 50, spin 200 µs", Some(50), SchedSpec::default()),
        ];
        let probes: usize = std::env::var("ACKS_BENCH_PROBES").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
        // ACKS_BENCH_HOGS=N: N busy-looping threads (normal priority) compete for the CPUs during
        // the timing runs, a reproducible stand-in for other builds on the machine.
        let hogs: usize = std::env::var("ACKS_BENCH_HOGS").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        let hog_stop = Arc::new(AtomicBool::new(false));
        let hog_threads: Vec<_> = (0..hogs)
            .map(|_| {
                let st = hog_stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !st.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                })
            })
            .collect();
        let mut per: Vec<Vec<ackshape_live::stats::HoldTiming>> = vec![vec![]; variants.len()];
        for _ in 0..rounds {
            for (k, (_, rt, sched)) in variants.iter().enumerate() {
                let mut spec = RigSpec::new("acks-bh");
                spec.topology.wanem = true;
                let l = LinkSpec { delay_ns: 1_000_000, ..Default::default() };
                spec.wanem = (l.clone(), l);
                spec.wanem_realtime_priority = *rt;
                spec.wanem_sched = sched.clone();
                let mut rig = Rig::start(spec).expect("wanem rig");
                let _ = ping(&rig.tb.tb, probes);
                let (_, w) = rig.stop();
                per[k].push(w.unwrap().unwrap().hold_timing);
            }
        }
        hog_stop.store(true, Ordering::SeqCst);
        for h in hog_threads {
            let _ = h.join();
        }
        println!("\n| held-frame timing error (wanem 1 ms delay line, {probes} echo probes per round, {hogs} CPU hogs) | p50 µs (median of rounds) | p99 µs (median) | p99 per round | max µs (worst) |");
        println!("|---|---|---|---|---|");
        for (k, (label, _, _)) in variants.iter().enumerate() {
            let mut p50: Vec<f64> = per[k].iter().map(|t| t.p50_us).collect();
            let mut p99: Vec<f64> = per[k].iter().map(|t| t.p99_us).collect();
            let rounds_p99 = p99.clone();
            let max = per[k].iter().map(|t| t.max_us).fold(0.0, f64::max);
            let m = |v: &mut Vec<f64>| {
                v.sort_by(|a, b| a.total_cmp(b));
                v[v.len() / 2]
            };
            println!(
                "| {label} | {:.1} | {:.1} | {} | {max:.0} |",
                m(&mut p50),
                m(&mut p99),
                rounds_p99.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ")
            );
            results.insert(format!("hold_timing: {label}"), serde_json::to_value(&per[k]).unwrap());
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average during the run: {}", load.trim());
    results.insert("loadavg".into(), load.trim().into());
    println!("\n{}", serde_json::Value::Object(results));
}
