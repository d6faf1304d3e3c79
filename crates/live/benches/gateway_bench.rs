//! Gateway benchmark: see `crates/live/bench/gateway_bench.sh`. Reports ratios against the
//! kernel bridge measured in the same run on the same topology.

use ackshape_live::engine::{Control, SchedSpec};
use ackshape_live::gateway::{self, GatewayConfig};
use ackshape_live::pipeline::PassThrough;
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

/// Kernel bridge (reference) vs gateway pass-through on the same veths: TCP goodput and UDP
/// echo RTT.
fn throughput(results: &mut serde_json::Map<String, serde_json::Value>, secs: u64, rounds: usize) {
    // 1. Kernel bridge (reference) vs gateway pass-through on the same veths, alternating rounds
    //    (the machine is shared: alternating spreads other load over both).
    let mut spec = TopologySpec::new("acks-bg");
    spec.wanem = false;
    let tb = TestbedGuard::up(&spec).expect("testbed");
    let br = format!("{}-br", tb.prefix);
    let (mut bridge, mut gw, mut gw_rt) = (vec![], vec![], vec![]);
    let (mut b_rtt, mut g_rtt, mut g_rtt_rt) = (vec![], vec![], vec![]);
    let mut last = None;
    for _ in 0..rounds {
        // kernel bridge
        let ns = &tb.ns_gateway;
        testbed::sh("ip", &["-n", ns, "link", "add", &br, "type", "bridge"]).unwrap();
        for port in [&tb.if_gw_lan, &tb.if_gw_wan] {
            testbed::sh("ip", &["-n", ns, "link", "set", port, "master", &br]).unwrap();
        }
        testbed::sh("ip", &["-n", ns, "link", "set", &br, "up"]).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        b_rtt.extend(ping(&tb, 300));
        bridge.push(iperf3(&tb, secs).expect("iperf3 through bridge"));
        testbed::sh("ip", &["-n", ns, "link", "del", &br]).unwrap();
        // gateway, normal scheduling and SCHED_FIFO
        for rt in [None, Some(50)] {
            let ctl = Control::new();
            let c2 = ctl.clone();
            let mut cfg = GatewayConfig::new(&tb.if_gw_lan, &tb.if_gw_wan);
            cfg.realtime_priority = rt;
            let h = spawn_in_netns(ns, "gateway", move || gateway::run_with(cfg, &c2, Box::new(PassThrough))).unwrap();
            assert!(ctl.wait_running(Duration::from_secs(5)), "gateway did not start");
            let (rtt, bps) = if rt.is_some() { (&mut g_rtt_rt, &mut gw_rt) } else { (&mut g_rtt, &mut gw) };
            rtt.extend(ping(&tb, 300));
            bps.push(iperf3(&tb, secs).expect("iperf3 through gateway"));
            ctl.request_stop();
            last = Some(h.join().unwrap().unwrap().expect("gateway"));
        }
    }
    drop(tb);
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (b, g, grt) = (med(&mut bridge), med(&mut gw), med(&mut gw_rt));
    let (bp50, bp99) = (pct(&mut b_rtt, 0.5), pct(&mut b_rtt, 0.99));
    let (gp50, gp99) = (pct(&mut g_rtt, 0.5), pct(&mut g_rtt, 0.99));
    let (rp50, rp99) = (pct(&mut g_rtt_rt, 0.5), pct(&mut g_rtt_rt, 0.99));
    println!("## ackshape gateway benchmark ({rounds} alternating rounds of {secs} s iperf3 runs, same veths)\n");
    println!("| path | TCP goodput (median) | ratio to bridge | UDP echo RTT p50 | p99 |");
    println!("|---|---|---|---|---|");
    println!("| kernel bridge | {:.2} Gbit/s | 1.00 | {bp50:.0} µs | {bp99:.0} µs |", b / 1e9);
    println!("| ackshape gateway pass-through | {:.2} Gbit/s | {:.2} | {gp50:.0} µs | {gp99:.0} µs |", g / 1e9, g / b);
    println!(
        "| ackshape gateway pass-through, SCHED_FIFO | {:.2} Gbit/s | {:.2} | {rp50:.0} µs | {rp99:.0} µs |",
        grt / 1e9,
        grt / b
    );
    println!("\nper-round goodput (Gbit/s): bridge {bridge:.2?}, gateway {gw:.2?}, gateway SCHED_FIFO {gw_rt:.2?}");
    println!(
        "added RTT at light load (two crossings of the gateway): p50 {:.0} µs, p99 {:.0} µs (SCHED_FIFO: p50 {:.0} µs, p99 {:.0} µs)",
        gp50 - bp50,
        gp99 - bp99,
        rp50 - bp50,
        rp99 - bp99
    );
    if let Some(g) = last {
        let (l, w) = (g.port("lan").unwrap(), g.port("wan").unwrap());
        println!("gateway (last run) kernel drops: lan {} wan {}", l.kernel_drops, w.kernel_drops);
    }
    results.insert("bridge_bps".into(), b.into());
    results.insert("gateway_bps".into(), g.into());
    results.insert("gateway_fifo_bps".into(), grt.into());
    results.insert("gateway_ratio".into(), (g / b).into());
    results.insert("gateway_fifo_ratio".into(), (grt / b).into());
    results.insert("bridge_rtt_us".into(), serde_json::json!([bp50, bp99]));
    results.insert("gateway_rtt_us".into(), serde_json::json!([gp50, gp99]));
    results.insert("gateway_fifo_rtt_us".into(), serde_json::json!([rp50, rp99]));
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
    // ACKS_BENCH_PARTS: comma-separated subset of "throughput,timing" (default: all).
    let parts = std::env::var("ACKS_BENCH_PARTS").unwrap_or_else(|_| "throughput,timing".into());

    if parts.contains("throughput") {
        throughput(&mut results, secs, rounds);
    }
    // 2. Held-frame timing: a 1 ms delay line at light load, under each way of waiting for a
    //    deadline, alternating rounds so other load on the machine spreads over all of them.
    if parts.contains("timing") {
        let spin = |us: u64| Duration::from_micros(us);
        let old = SchedSpec { nice: 0, fair_slice: None, autogroup: false, spin: spin(40), ..Default::default() };
        let variants: Vec<(&str, Option<i32>, SchedSpec)> = vec![
            ("before: nice 0, spin 40 µs (issue-5 engine)", None, old.clone()),
            ("spin 200 µs", None, SchedSpec { spin: spin(200), ..old.clone() }),
            (
                "spin 200 µs, thread nice -20, EEVDF slice 0.1 ms",
                None,
                SchedSpec { autogroup: false, ..Default::default() },
            ),
            ("after (default): the same + autogroup nice -20", None, SchedSpec::default()),
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
