//! Open-loop sweep of the live tap against Linux TCP (root): for each congestion control and
//! technique setting, an 10-second transfer through the tap testbed; prints throughput (router
//! counters, retransmissions included), goodput (receiver) and retransmissions.
//!
//! ```sh
//! cargo run --release -p ackshape-live --example tap_sweep -- [MBIT/S] [ONE-WAY-MS] [paper|default]
//! ```
//! `paper`: sender with SACK and timestamps off and tcp_max_reordering = 3 (how the paper's
//! senders react to duplicate ACKs); `default`: the kernel's defaults (SACK, timestamps, RACK).
use ackshape_live::tap::{TapBed, TapTopologySpec};
use ackshape_live::testbed::{self, spawn_in_netns};
use ackshape_live::traffic;
use ackshape_live::wanem::LinkSpec;
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

fn router_tx(b: &TapBed) -> (u64, u64) {
    let t = &b.topo;
    let o = std::process::Command::new("ip")
        .args(["-n", &t.ns_router, "-s", "-j", "link", "show", "dev", &t.if_router_fwd])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (v[0]["stats64"]["tx"]["bytes"].as_u64().unwrap(), v[0]["stats64"]["tx"]["packets"].as_u64().unwrap())
}

fn main() {
    if let Some(why) = testbed::preflight() {
        eprintln!("cannot run: {why}");
        std::process::exit(3);
    }
    let args: Vec<String> = std::env::args().collect();
    let mbps: u64 = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(10);
    let ow: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(10);
    let paper = args.get(3).is_none_or(|v| v == "paper");
    let mut spec = TapTopologySpec::new("acks-tsw");
    spec.wanem = Some((
        LinkSpec { delay_ns: ow * 1_000_000, rate_bps: Some(mbps * 1_000_000), ..Default::default() },
        LinkSpec { delay_ns: ow * 1_000_000, ..Default::default() },
    ));
    if paper {
        spec.sender_sysctls =
            [("net/ipv4/tcp_sack", "0"), ("net/ipv4/tcp_timestamps", "0"), ("net/ipv4/tcp_max_reordering", "3")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
    }
    let b = TapBed::up(&spec).expect("testbed");
    let dir = std::env::temp_dir().join(format!("acks-tsw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ts = (ow as f64 * 2.0, if paper { "paper" } else { "default" });
    println!("# {mbps} Mbit/s, {} ms RTT, sender sysctls: {}", ts.0, ts.1);
    println!("cc,policy,throughput_mbps,goodput_mbps,retransmits,injections");
    let settings: Vec<(String, String)> = std::iter::once(("none".to_string(), "technique = \"none\"".to_string()))
        .chain(
            [2.0, 3.0, 4.0, 6.0, 10.0, 20.0, 50.0]
                .iter()
                .map(|f| (format!("triple-ack f={f}"), format!("technique = \"triple-ack\"\nevery = {f}"))),
        )
        .chain(std::iter::once(("zero-window".to_string(), "technique = \"zero-window\"".to_string())))
        .collect();
    for cc in ["reno", "cubic"] {
        for (name, text) in &settings {
            let p = dir.join("p.toml");
            std::fs::write(&p, text).unwrap();
            let mut tap = b.start_tap(&p, Duration::ZERO).unwrap();
            let dst = SocketAddr::from((b.topo.receiver_addr, 5100));
            let (tx, rx) = std::sync::mpsc::channel();
            let sink = spawn_in_netns(&b.topo.ns_receiver, "sink", move || {
                let l = TcpListener::bind(dst)?;
                let _ = tx.send(());
                traffic::tcp_sink(&l, 32 << 10)
            })
            .unwrap();
            rx.recv_timeout(Duration::from_secs(5)).unwrap();
            let c = cc.to_string();
            let t0 = Instant::now();
            let src = spawn_in_netns(&b.topo.ns_sender, "src", move || {
                traffic::tcp_source_until(dst, None, Some(Duration::from_secs(10)), 1, Some(&c))
            })
            .unwrap();
            std::thread::sleep(Duration::from_secs(3).saturating_sub(t0.elapsed()));
            let a = router_tx(&b);
            std::thread::sleep(Duration::from_secs(9).saturating_sub(t0.elapsed()));
            let z = router_tx(&b);
            let s = src.join().unwrap().unwrap().unwrap();
            let r = sink.join().unwrap().unwrap().unwrap();
            let st = tap.stop().unwrap();
            let thr = ((z.0 - a.0) as f64 - 54.0 * (z.1 - a.1) as f64) * 8.0 / 6.0;
            let at = |t: f64| {
                r.marks.iter().rev().find(|(_, d)| d.as_secs_f64() <= t).copied().unwrap_or((0, Duration::ZERO))
            };
            let (ga, gz) = (at(3.0), at(9.0));
            let good = (gz.0 - ga.0) as f64 * 8.0 / (gz.1.as_secs_f64() - ga.1.as_secs_f64()).max(1e-9);
            println!(
                "{cc},{name},{:.2},{:.2},{},{}",
                thr / 1e6,
                good / 1e6,
                s.retransmits.map(|x| x.to_string()).unwrap_or_default(),
                st["tap"]["injections"]
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
