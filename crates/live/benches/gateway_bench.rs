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
                    testbed::sh("ip", &["-n", &ns, "link", "add", &br, "type", "bridge"]).unwrap();
                    for port in [&tb.if_gw_lan, &tb.if_gw_wan] {
                        testbed::sh("ip", &["-n", &ns, "link", "set", port, "master", &br]).unwrap();
                    }
                    testbed::sh("ip", &["-n", &ns, "link", "set", &br, "up"]).unwrap();
                    std::thread::sleep(Duration::from_millis(200));
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
    // ACKS_BENCH_PARTS: comma-separated subset of "throughput,timing,box" (default: all).
    let parts = std::env::var("ACKS_BENCH_PARTS").unwrap_or_else(|_| "throughput,timing,box".into());

    if parts.contains("throughput") {
        throughput(&mut results, secs, rounds);
    }
    if parts.contains("box") {
        box_timing(&mut results, rounds);
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
