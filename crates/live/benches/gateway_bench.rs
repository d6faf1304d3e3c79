//! Gateway benchmark: see `crates/live/bench/gateway_bench.sh`. Reports ratios against the
//! kernel bridge measured in the same run on the same topology.

use ackshape_live::rig::{Rig, RigSpec};
use ackshape_live::testbed::{self, spawn_in_netns, Middle, Testbed};
use ackshape_live::traffic;
use ackshape_live::wanem::LinkSpec;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn iperf3(tb: &Testbed, secs: u64) -> Result<f64, String> {
    let mut srv = Command::new("ip")
        .args([
            "netns",
            "exec",
            &tb.ns_receiver,
            "iperf3",
            "-s",
            "-1",
            "-p",
            "5201",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("iperf3 server: {e}"))?;
    std::thread::sleep(Duration::from_millis(300));
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &tb.ns_sender,
            "iperf3",
            "-c",
            &tb.receiver_addr.to_string(),
            "-p",
            "5201",
        ])
        .args(["-t", &secs.to_string(), "-J"])
        .output()
        .map_err(|e| format!("iperf3 client: {e}"))?;
    let _ = srv.wait();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "iperf3 output: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .ok_or_else(|| format!("iperf3: no result in {v}"))
}

fn pct(v: &mut [Duration], q: f64) -> f64 {
    v.sort();
    v[((v.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e6
}

/// UDP echo round trips at light load (one probe every 2 ms): (p50, p99) in µs.
fn ping(tb: &Testbed, n: usize) -> (f64, f64) {
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
    let mut v = spawn_in_netns(&tb.ns_sender, "ping", move || {
        traffic::udp_ping(dst, n, Duration::from_millis(2))
    })
    .unwrap()
    .join()
    .unwrap()
    .unwrap()
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let _ = srv.join();
    (pct(&mut v, 0.5), pct(&mut v, 0.99))
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
    let secs: u64 = std::env::var("ACKS_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let mut results = serde_json::Map::new();

    // 1. Kernel bridge (reference) and gateway pass-through on the same topology (no wanem).
    let mut spec = RigSpec::new("acks-bb");
    spec.topology.middle = Middle::Bridge;
    spec.topology.wanem = false;
    let rig = Rig::start(spec).expect("bridge rig");
    let (bp50, bp99) = ping(&rig.tb, 500);
    let bridge = iperf3(&rig.tb, secs).expect("iperf3 through bridge");
    drop(rig);

    let mut spec = RigSpec::new("acks-bg");
    spec.topology.wanem = false;
    let mut rig = Rig::start(spec).expect("gateway rig");
    let (gp50, gp99) = ping(&rig.tb, 500);
    let gw = iperf3(&rig.tb, secs).expect("iperf3 through gateway");
    let (g, _) = rig.stop();
    let g = g.unwrap().unwrap();
    drop(rig);
    println!("## ackshape gateway benchmark ({secs} s iperf3 runs, same veth topology)\n");
    println!("| path | TCP goodput | ratio to bridge | UDP echo RTT p50 | p99 |");
    println!("|---|---|---|---|---|");
    println!(
        "| kernel bridge | {:.2} Gbit/s | 1.00 | {bp50:.0} µs | {bp99:.0} µs |",
        bridge / 1e9
    );
    println!(
        "| ackshape gateway (pass-through, AF_PACKET) | {:.2} Gbit/s | {:.2} | {gp50:.0} µs | {gp99:.0} µs |",
        gw / 1e9,
        gw / bridge
    );
    println!(
        "\nadded RTT (two crossings of the gateway): p50 {:.0} µs, p99 {:.0} µs",
        gp50 - bp50,
        gp99 - bp99
    );
    let lan = g.port("lan").unwrap();
    println!(
        "gateway kernel drops: lan {} wan {}",
        lan.kernel_drops,
        g.port("wan").unwrap().kernel_drops
    );
    results.insert("bridge_bps".into(), bridge.into());
    results.insert("gateway_bps".into(), gw.into());
    results.insert("gateway_ratio".into(), (gw / bridge).into());
    results.insert("bridge_rtt_us".into(), serde_json::json!([bp50, bp99]));
    results.insert("gateway_rtt_us".into(), serde_json::json!([gp50, gp99]));

    // 2. Held-frame timing: a 1 ms delay line at light load, normal and SCHED_FIFO scheduling.
    for rt in [None, Some(50)] {
        let mut spec = RigSpec::new("acks-bh");
        spec.topology.wanem = true;
        let l = LinkSpec {
            delay_ns: 1_000_000,
            ..Default::default()
        };
        spec.wanem = (l.clone(), l);
        spec.wanem_realtime_priority = rt;
        let mut rig = Rig::start(spec).expect("wanem rig");
        let _ = ping(&rig.tb, 1000);
        let (_, w) = rig.stop();
        let t = w.unwrap().unwrap().hold_timing;
        let label = if rt.is_some() { "SCHED_FIFO" } else { "normal" };
        println!(
            "held-frame timing error ({label} scheduling, {} frames): p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            t.samples, t.p50_us, t.p99_us, t.max_us
        );
        results.insert(
            format!("hold_timing_{label}"),
            serde_json::to_value(&t).unwrap(),
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average during the run: {}", load.trim());
    results.insert("loadavg".into(), load.trim().into());
    println!("\n{}", serde_json::Value::Object(results));
}
