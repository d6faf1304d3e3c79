//! Live tests of the third-party tap: real Linux TCP from a sender namespace through a router
//! namespace (tc mirred copying its forwarding interface to the tap's namespace) and a wanem to a
//! receiver; the tap injects duplicate ACKs through a second port into the router. Namespaces
//! use the prefix `acks-tp…`. They need root, `ip`, `ethtool` and `tc`, and print
//! `SKIPPED: <reason>` to stderr otherwise. Tests run one at a time (a process-wide lock).

use ackshape_live::tap::{TapBed, TapTopologySpec};
use ackshape_live::testbed::{self, spawn_in_netns};
use ackshape_live::traffic::{self, SinkReport, SourceReport};
use ackshape_live::wanem::LinkSpec;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

static LIVE: Mutex<()> = Mutex::new(());

fn live(test: &str) -> Option<MutexGuard<'static, ()>> {
    let reason = testbed::preflight().or_else(|| match std::process::Command::new("tc").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("`tc` is missing (apt-get install iproute2)".into()),
    });
    if let Some(reason) = reason {
        testbed::skip(test, &reason);
        return None;
    }
    Some(LIVE.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A `mbps` bottleneck (wanem, router → receiver) with `one_way_ms` each way.
fn bed(prefix: &str, mbps: u64, one_way_ms: u64, sender_sysctls: &[(&str, &str)]) -> TapBed {
    let mut spec = TapTopologySpec::new(prefix);
    let ab = LinkSpec {
        delay_ns: one_way_ms * 1_000_000,
        rate_bps: Some(mbps * 1_000_000),
        queue_packets: 100,
        ..Default::default()
    };
    let ba = LinkSpec { delay_ns: one_way_ms * 1_000_000, ..Default::default() };
    spec.wanem = Some((ab, ba));
    spec.wanem_seed = 5;
    spec.sender_sysctls = sender_sysctls.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    TapBed::up(&spec).unwrap_or_else(|e| panic!("tap testbed: {e}"))
}

fn policy(dir: &Path, name: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn tmpdir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("acks-tp-{tag}-{}", std::process::id()))
}

type Running = (
    JoinHandle<std::io::Result<std::io::Result<SourceReport>>>,
    JoinHandle<std::io::Result<std::io::Result<SinkReport>>>,
);

/// A TCP transfer sender → receiver lasting `secs`, with congestion control `cc`.
fn start(bed: &TapBed, secs: f64, cc: &str, port: u16) -> Running {
    let t = &bed.topo;
    let dst = SocketAddr::from((t.receiver_addr, port));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = spawn_in_netns(&t.ns_receiver, "sink", move || {
        let l = TcpListener::bind(dst)?;
        let _ = tx.send(());
        traffic::tcp_sink(&l, 64 << 10)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).expect("sink did not start");
    let cc = cc.to_string();
    let src = spawn_in_netns(&t.ns_sender, "source", move || {
        traffic::tcp_source_until(dst, None, Some(Duration::from_secs_f64(secs)), 9, Some(&cc))
    })
    .unwrap();
    (src, sink)
}

fn finish(r: Running) -> (SourceReport, SinkReport) {
    let s = r.0.join().unwrap().unwrap().unwrap();
    let k = r.1.join().unwrap().unwrap().unwrap();
    (s, k)
}

/// Goodput (bit/s) over [from_s, to_s] after the first byte, from the sink's marks.
fn goodput_between(r: &SinkReport, from_s: f64, to_s: f64) -> f64 {
    let at = |t: f64| r.marks.iter().rev().find(|(_, d)| d.as_secs_f64() <= t).copied().unwrap_or((0, Duration::ZERO));
    let (a, b) = (at(from_s), at(to_s));
    let dt = b.1.as_secs_f64() - a.1.as_secs_f64();
    if dt <= 0.0 {
        return 0.0;
    }
    (b.0 - a.0) as f64 * 8.0 / dt
}

/// Sender sysctls under which Linux reacts to triple duplicate ACKs the way the paper's senders
/// do: no SACK (with SACK, RACK marks nothing lost on dupACKs without SACK blocks), no timestamps
/// (their echo undoes the spurious recovery), and the duplicate-ACK threshold kept at 3 (Reno
/// raises it after its first spurious fast retransmit, `TCPRenoReorder`).
const PAPER_SENDER: &[(&str, &str)] =
    &[("net/ipv4/tcp_sack", "0"), ("net/ipv4/tcp_timestamps", "0"), ("net/ipv4/tcp_max_reordering", "3")];

/// Bytes and packets the router sent toward the receiver so far (kernel interface counters).
fn router_tx(bed: &TapBed) -> (u64, u64) {
    let t = &bed.topo;
    let o = std::process::Command::new("ip")
        .args(["-n", &t.ns_router, "-s", "-j", "link", "show", "dev", &t.if_router_fwd])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tx = &v[0]["stats64"]["tx"];
    (tx["bytes"].as_u64().unwrap(), tx["packets"].as_u64().unwrap())
}

/// TCP payload rate (bit/s) between two `router_tx` readings: frame bytes less 54 bytes of
/// Ethernet, IP and TCP headers per packet (no TCP options: timestamps are off).
fn payload_bps(a: (u64, u64), b: (u64, u64), secs: f64) -> f64 {
    ((b.0 - a.0) as f64 - 54.0 * (b.1 - a.1) as f64) * 8.0 / secs
}

fn tshark_count(pcap: &Path, filter: &str) -> u64 {
    let o = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args([
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "ip.check_checksum:TRUE",
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .expect("tshark is not installed: run ./scripts/setup.sh (the test command does)");
    assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.is_empty()).count() as u64
}

/// Triple-ACK duplicates reach the sender through the router and make Linux Reno fast-
/// retransmit and slow down; zero-window duplicates leave with patched windows. Every injected
/// frame (the tap's own pcap) passes tshark's checksum validation.
#[test]
fn injections_reach_the_sender_and_pass_tshark_checksums() {
    let Some(_l) = live("tap_injections") else { return };
    let dir = tmpdir("inj");
    let b = bed("acks-tpi", 10, 10, PAPER_SENDER);
    let none = policy(&dir, "none.toml", "technique = \"none\"\n");
    let mut tap = b.start_tap(&none, Duration::ZERO).unwrap();
    let (_, r0) = finish(start(&b, 5.0, "reno", 5001));
    let _ = tap.stop().unwrap();
    let g0 = goodput_between(&r0, 1.0, 5.0);
    for (name, text) in [("triple", "technique = \"triple-ack\"\nevery = 6\n"), ("zw", "technique = \"zero-window\"\n")]
    {
        let pol = policy(&dir, &format!("{name}.toml"), text);
        let pdir = dir.join(name);
        let pd = pdir.clone();
        let mut tap = b.start_tap_with(&pol, move |c| c.pcap_dir = Some(pd)).unwrap();
        let (s, r) = finish(start(&b, 5.0, "reno", 5002));
        let st = tap.stop().unwrap();
        assert_eq!(r.sha256, s.sha256, "{name}: the transfer is intact");
        let inj = st["tap"]["injections"].as_u64().unwrap();
        let sent = st["counters"]["inject_tx_packets"].as_u64().unwrap();
        let g = goodput_between(&r, 1.0, 5.0);
        eprintln!(
            "{name}: {inj} injections, {sent} frames injected, sender retransmits {:?}, goodput {:.2} Mbit/s (unshaped {:.2}); counters {}",
            s.retransmits,
            g / 1e6,
            g0 / 1e6,
            st["counters"]
        );
        assert!(inj > 50, "{name}: {inj}");
        assert_eq!(st["counters"]["inject_tx_errors"], 0);
        assert_eq!(st["counters"]["rebuilt"], 0, "every injection is a copy of a mirrored frame");
        let pcap = pdir.join("inject.pcap");
        let tcp = tshark_count(&pcap, "tcp");
        assert_eq!(tcp, sent, "{name}: the pcap holds every injected frame");
        assert_eq!(tshark_count(&pcap, "tcp.checksum.status == \"Good\" && ip.checksum.status == \"Good\""), tcp);
        if name == "triple" {
            assert_eq!(sent, 3 * inj);
            assert!(
                s.retransmits.unwrap_or(0) >= inj / 2,
                "fast retransmits: {:?} for {inj} injections",
                s.retransmits
            );
            assert!(g < 0.5 * g0, "triple-ACK at f = 6: {g} vs unshaped {g0}");
        } else {
            assert_eq!(sent, inj);
            assert_eq!(tshark_count(&pcap, "tcp.window_size_value == 0"), sent, "zero windows");
            assert_eq!(st["counters"]["window_patched"].as_u64().unwrap(), sent);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The controller holds Linux Reno and CUBIC at 50% and 25% of their unshaped rate within ±15%
/// (throughput measured independently, from the router's interface counters), and reports the
/// goodput loss.
#[test]
fn controller_holds_linux_reno_and_cubic_at_50_and_25_percent() {
    let Some(_l) = live("tap_controller") else { return };
    let dir = tmpdir("ctl");
    let b = bed("acks-tpc", 20, 10, PAPER_SENDER);
    let (secs, from, to) = (24.0, 9.0, 23.0);
    for cc in ["reno", "cubic"] {
        let none = policy(&dir, "none.toml", "technique = \"none\"\n");
        let mut tap = b.start_tap(&none, Duration::ZERO).unwrap();
        let t0 = Instant::now();
        let run = start(&b, 10.0, cc, 5003);
        wait_until(t0, 3.0);
        let a = router_tx(&b);
        wait_until(t0, 9.0);
        let z = router_tx(&b);
        let _ = finish(run);
        let _ = tap.stop().unwrap();
        let unshaped = payload_bps(a, z, 6.0);
        for frac in [0.5, 0.25] {
            let target = unshaped * frac;
            let pol =
                policy(&dir, "ctl.toml", &format!("technique = \"triple-ack\"\ntarget = \"{}bit/s\"\n", target as u64));
            let mut tap = b.start_tap_with(&pol, |c| c.realtime_priority = Some(10)).unwrap();
            let t0 = Instant::now();
            let run = start(&b, secs, cc, 5004);
            wait_until(t0, from);
            let a = router_tx(&b);
            wait_until(t0, to);
            let z = router_tx(&b);
            let (s, r) = finish(run);
            let st = tap.stop().unwrap();
            let thr = payload_bps(a, z, to - from);
            let good = goodput_between(&r, from, to);
            let err = thr / target - 1.0;
            let flow = &st["tap"]["top_flows"][0];
            eprintln!(
                "{cc} at {:.0}%: target {:.2} Mbit/s, throughput {:.2} ({:+.1}%), goodput {:.2} (loss {:.1}%), unshaped {:.2}; f now {:.1}, injections {}, retransmits {:?}",
                frac * 100.0,
                target / 1e6,
                thr / 1e6,
                err * 100.0,
                good / 1e6,
                (1.0 - good / thr) * 100.0,
                unshaped / 1e6,
                flow["every"].as_f64().unwrap_or(0.0),
                flow["injections"],
                s.retransmits
            );
            assert_eq!(r.sha256, s.sha256);
            assert!(err.abs() <= 0.15, "{cc} at {frac}: throughput {thr} vs target {target}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sleep until `secs` after `t0` (a measurement window edge, not a wait for a condition).
fn wait_until(t0: Instant, secs: f64) {
    let d = Duration::from_secs_f64(secs).saturating_sub(t0.elapsed());
    std::thread::sleep(d);
}
