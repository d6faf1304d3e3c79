//! Live tests: real Linux TCP through the AF_PACKET gateway and the userspace wanem, inside
//! network namespaces these tests create (prefix `acks-`). They need root, `ip` and `ethtool`,
//! and print `SKIPPED: <reason>` to stderr and return when those are missing. Tests run one at a
//! time (a process-wide lock) so their timing measurements do not compete for the 2 cores.

use ackshape_core::impair::LossSpec;
use ackshape_live::engine::Control;
use ackshape_live::gateway::{self, GatewayConfig};
use ackshape_live::pipeline::PassThrough;
use ackshape_live::port::{AfPacketPort, Port};
use ackshape_live::rig::{Rig, RigSpec};
use ackshape_live::stats::Snapshot;
use ackshape_live::testbed::{self, spawn_in_netns, Testbed, TestbedGuard, TopologySpec};
use ackshape_live::traffic::{self, SinkReport, SourceReport};
use ackshape_live::wanem::LinkSpec;
use ackshape_live::{classify, testing};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

static LIVE: Mutex<()> = Mutex::new(());

/// Take the live lock, or None (after printing SKIPPED) when live tests cannot run here.
fn live(test: &str) -> Option<MutexGuard<'static, ()>> {
    if testbed::skip_unless_live(test) {
        return None;
    }
    Some(LIVE.lock().unwrap_or_else(|e| e.into_inner()))
}

fn rig_with(prefix: &str, link: Option<(LinkSpec, LinkSpec)>, policy: Option<PathBuf>) -> Rig {
    let mut spec = RigSpec::new(prefix);
    spec.topology.wanem = link.is_some();
    if let Some(l) = link {
        spec.wanem = l;
    }
    spec.wanem_seed = 11;
    spec.gateway.policy = policy;
    spec.gateway.stats_interval = Duration::from_millis(200);
    Rig::start(spec).expect("rig start")
}

fn stop(rig: &mut Rig) -> (Snapshot, Option<Snapshot>) {
    let (g, w) = rig.stop();
    (g.expect("gateway ran").expect("gateway result"), w.map(|w| w.expect("wanem result")))
}

fn join_within<T>(h: JoinHandle<std::io::Result<T>>, limit: Duration, what: &str) -> T {
    let t0 = Instant::now();
    while !h.is_finished() {
        assert!(t0.elapsed() < limit, "{what} did not finish within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    h.join().unwrap_or_else(|_| panic!("{what} panicked")).unwrap_or_else(|e| panic!("{what}: {e}"))
}

type Running = (
    JoinHandle<std::io::Result<std::io::Result<SourceReport>>>,
    JoinHandle<std::io::Result<std::io::Result<SinkReport>>>,
);

/// Start a TCP transfer sender → receiver through the rig.
fn start_transfer(tb: &Testbed, bytes: u64) -> Running {
    let dst = SocketAddr::from((tb.receiver_addr, 5001));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = spawn_in_netns(&tb.ns_receiver, "sink", move || {
        let l = TcpListener::bind(dst)?;
        let _ = tx.send(());
        traffic::tcp_sink(&l, 1 << 20)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).expect("sink did not start");
    let src = spawn_in_netns(&tb.ns_sender, "source", move || traffic::tcp_source(dst, bytes, 3, None)).unwrap();
    (src, sink)
}

fn finish_transfer(t: Running, limit: Duration) -> (SourceReport, SinkReport) {
    let s = join_within(t.0, limit, "tcp source").unwrap();
    let r = join_within(t.1, Duration::from_secs(10), "tcp sink").unwrap();
    (s, r)
}

/// A TCP transfer sender → receiver through the rig.
fn transfer(tb: &Testbed, bytes: u64, limit: Duration) -> (SourceReport, SinkReport) {
    finish_transfer(start_transfer(tb, bytes), limit)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn pct(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

/// Latency probes through the rig: TCP connect times and UDP echo round trips.
fn latency(tb: &Testbed, n: usize) -> (Vec<Duration>, Vec<Duration>) {
    let stop = Arc::new(AtomicBool::new(false));
    let tcp = SocketAddr::from((tb.receiver_addr, 5002));
    let udp = SocketAddr::from((tb.receiver_addr, 5003));
    let (tx, rx) = std::sync::mpsc::channel();
    let st = stop.clone();
    let srv = spawn_in_netns(&tb.ns_receiver, "probe-srv", move || {
        let l = TcpListener::bind(tcp).unwrap();
        let u = UdpSocket::bind(udp).unwrap();
        tx.send(()).unwrap();
        let s2 = st.clone();
        let t = std::thread::spawn(move || traffic::tcp_accept_loop(l, s2));
        traffic::udp_echo_server(u, st);
        let _ = t.join();
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let cli = spawn_in_netns(&tb.ns_sender, "probe-cli", move || -> std::io::Result<_> {
        let c = traffic::tcp_connect_times(tcp, n)?;
        let u = traffic::udp_ping(udp, n, Duration::from_millis(5))?;
        Ok((c, u))
    })
    .unwrap();
    let r = cli.join().unwrap().unwrap().unwrap();
    stop.store(true, Ordering::SeqCst);
    let _ = srv.join();
    r
}

fn transfer_mb() -> u64 {
    std::env::var("ACKS_TRANSFER_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
}

#[test]
fn transparency_sha256_through_gateway_and_wanem() {
    let Some(_l) = live("transparency") else {
        return;
    };
    let mut rig = rig_with("acks-tt", Some((LinkSpec::default(), LinkSpec::default())), None);
    let (mut c, mut u) = latency(&rig.tb, 20);
    let mb = transfer_mb();
    let t0 = Instant::now();
    let (s, r) = transfer(&rig.tb, mb << 20, Duration::from_secs(120));
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(r.bytes, s.bytes);
    assert_eq!(r.sha256, s.sha256, "payload changed in transit");
    let (g, w) = stop(&mut rig);
    let w = w.unwrap();
    eprintln!(
        "transparency: {mb} MB in {secs:.2} s ({:.0} Mbit/s) through gateway+wanem; sha256 {}",
        (mb << 20) as f64 * 8.0 / secs / 1e6,
        r.sha256
    );
    eprintln!(
        "latency through gateway+wanem: TCP connect p50 {:?} p99 {:?}; UDP echo RTT p50 {:?} p99 {:?}",
        median(&mut c),
        pct(&mut c, 0.99),
        median(&mut u),
        pct(&mut u, 0.99)
    );
    let lan = g.port("lan").unwrap();
    eprintln!("gateway lan port: {lan:?}\nwanem a port: {:?}", w.port("a").unwrap());
    assert_eq!(lan.csum_not_ready, 0);
    assert_eq!(lan.oversize, 0);
    assert!(lan.tcp > (mb << 20) / 1500);
}

#[test]
fn wanem_delay_50ms_each_way_gives_100ms_rtt() {
    let Some(_l) = live("wanem_delay") else {
        return;
    };
    let link = LinkSpec { delay_ns: 50_000_000, ..Default::default() };
    let rig = rig_with("acks-td", Some((link.clone(), link)), None);
    let (mut c, mut u) = latency(&rig.tb, 15);
    let (cm, um) = (median(&mut c), median(&mut u));
    eprintln!("wanem 50 ms each way: TCP connect median {cm:?}, UDP echo median {um:?}, max {:?}", u.last());
    for m in [cm, um] {
        assert!(m >= Duration::from_millis(95) && m <= Duration::from_millis(105), "RTT {m:?}");
    }
    let t = rig.wanem().unwrap().snapshot().hold_timing;
    eprintln!("wanem held-frame timing error: {t:?}");
}

#[test]
fn wanem_bernoulli_1pct_loss_over_100k_packets() {
    let Some(_l) = live("wanem_loss") else { return };
    let link = LinkSpec { loss: LossSpec::Bernoulli { p: 0.01 }, ..Default::default() };
    let mut rig = rig_with("acks-tl", Some((link, LinkSpec::default())), None);
    let n = 100_000u64;
    let dst = SocketAddr::from((rig.tb.receiver_addr, 5004));
    let (tx, rx) = std::sync::mpsc::channel();
    let cnt = spawn_in_netns(&rig.tb.ns_receiver, "udp-count", move || {
        let s = UdpSocket::bind(dst)?;
        let _ = nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::RcvBufForce, &(16 << 20));
        let _ = tx.send(());
        traffic::udp_count(&s, n, Duration::from_millis(1500))
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let snd = spawn_in_netns(&rig.tb.ns_sender, "udp-blast", move || traffic::udp_blast(dst, n, 64, 40_000)).unwrap();
    let sent = join_within(snd, Duration::from_secs(30), "udp blast").unwrap();
    let got = join_within(cnt, Duration::from_secs(30), "udp count").unwrap();
    let (g, w) = stop(&mut rig);
    let w = w.unwrap();
    let loss = 1.0 - got as f64 / sent as f64;
    let kd = g.port("lan").unwrap().kernel_drops + w.port("a").unwrap().kernel_drops;
    eprintln!(
        "wanem 1% Bernoulli: sent {sent}, received {got}, loss {:.3}% (kernel drops in boxes: {kd}); wanem {}",
        loss * 100.0,
        w.pipeline
    );
    assert_eq!(sent, n);
    assert!((0.008..=0.012).contains(&loss), "loss {loss}");
}

#[test]
fn wanem_rate_limit_10mbit_tcp_goodput() {
    let Some(_l) = live("wanem_rate") else { return };
    let link = LinkSpec { rate_bps: Some(10_000_000), queue_packets: 100, delay_ns: 5_000_000, ..Default::default() };
    let back = LinkSpec { delay_ns: 5_000_000, ..Default::default() };
    let mut rig = rig_with("acks-tr", Some((link, back)), None);
    let (s, r) = transfer(&rig.tb, 7 << 20, Duration::from_secs(30));
    assert_eq!(s.sha256, r.sha256);
    let (_, w) = stop(&mut rig);
    // Linux uses timestamps: 1448 payload bytes per 1514-byte frame.
    let expected = 10e6 * 1448.0 / 1514.0;
    let got = r.goodput_bps_after(1 << 20);
    eprintln!(
        "wanem 10 Mbit/s: goodput {:.3} Mbit/s vs header-adjusted line rate {:.3} Mbit/s ({:+.2}%); wanem {}",
        got / 1e6,
        expected / 1e6,
        (got / expected - 1.0) * 100.0,
        w.unwrap().pipeline
    );
    assert!((got / expected - 1.0).abs() <= 0.05, "goodput {got} vs {expected}");
}

#[test]
fn ports_with_offloads_on_are_refused_with_the_fix() {
    let Some(_l) = live("offloads") else { return };
    let prefix = "acks-to";
    let _ = testbed::down(prefix);
    struct Cleanup(&'static str);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            let _ = testbed::down(self.0);
        }
    }
    let _c = Cleanup(prefix);
    let ns = "acks-to-x";
    testbed::sh("ip", &["netns", "add", ns]).unwrap();
    testbed::sh("ip", &["-n", ns, "link", "add", "acks-to-a", "type", "veth", "peer", "name", "acks-to-b"]).unwrap();
    for i in ["acks-to-a", "acks-to-b"] {
        testbed::sh("ip", &["-n", ns, "link", "set", i, "up"]).unwrap();
    }
    let r = spawn_in_netns(ns, "gw", || {
        let ctl = Control::new();
        gateway::run_with(GatewayConfig::new("acks-to-a", "acks-to-b"), &ctl, Box::new(PassThrough))
    })
    .unwrap()
    .join()
    .unwrap()
    .unwrap();
    let msg = r.expect_err("offloads on must be refused").to_string();
    eprintln!("refusal message: {msg}");
    assert!(msg.contains("ethtool -K acks-to-a tx off tso off gso off gro off"), "{msg}");
    assert!(msg.contains("rx-gro-list off"), "{msg}");
    // After the fix the same ports are accepted.
    for i in ["acks-to-a", "acks-to-b"] {
        let fix = ackshape_live::port::offload_fix(i);
        let args: Vec<&str> = fix.split_whitespace().collect();
        let mut a = vec!["netns", "exec", ns];
        a.extend(args);
        testbed::sh("ip", &a).unwrap();
    }
    let ok = spawn_in_netns(ns, "chk", || {
        (gateway::check_port("acks-to-a").is_ok(), gateway::check_port("acks-to-b").is_ok())
    })
    .unwrap()
    .join()
    .unwrap()
    .unwrap();
    assert_eq!(ok, (true, true));
}

fn inject(ns: &str, ifname: &str, frames: Vec<Vec<u8>>, pps: u64) -> JoinHandle<std::io::Result<std::io::Result<u64>>> {
    let n = frames.len();
    inject_gen(ns, ifname, n, pps, move |i, buf| buf.extend_from_slice(&frames[i]))
}

/// Send `n` frames from `ifname` in `ns` at `pps`, frame `i` written by `gen(i, buf)` into a
/// reused buffer just before it is sent (no frame list in memory).
fn inject_gen(
    ns: &str,
    ifname: &str,
    n: usize,
    pps: u64,
    gen: impl Fn(usize, &mut Vec<u8>) + Send + 'static,
) -> JoinHandle<std::io::Result<std::io::Result<u64>>> {
    let ifname = ifname.to_string();
    spawn_in_netns(ns, "inject", move || -> std::io::Result<u64> {
        let mut p = AfPacketPort::open(&ifname, "inject")?;
        let t0 = Instant::now();
        let mut sent = 0u64;
        let mut f = Vec::with_capacity(2048);
        for i in 0..n {
            f.clear();
            gen(i, &mut f);
            if f.len() < 14 {
                // The kernel refuses frames shorter than an Ethernet header on a raw socket; send
                // them padded to 14 bytes of garbage instead (still malformed for us).
                f.resize(14, 0xff);
                f[12] = 0x08;
                f[13] = 0x00;
            }
            if p.send(ackshape_core::Time(0), &f).is_ok() {
                sent += 1;
            }
            let due = t0 + Duration::from_secs_f64((i + 1) as f64 / pps as f64);
            let now = Instant::now();
            if due > now + Duration::from_micros(500) {
                std::thread::sleep(due - now);
            }
        }
        Ok(sent)
    })
    .unwrap()
}

fn expected_malformed(frames: &[Vec<u8>]) -> u64 {
    frames
        .iter()
        .map(|f| {
            if f.len() < 14 {
                let mut g = f.clone();
                g.resize(14, 0xff);
                g[12] = 0x08;
                g[13] = 0x00;
                g
            } else {
                f.clone()
            }
        })
        .filter(|f| classify::classify(f).is_malformed())
        .count() as u64
}

#[test]
fn malformed_frames_on_both_ports_during_transfer() {
    let Some(_l) = live("robustness") else { return };
    let mut rig = rig_with("acks-tm", Some((LinkSpec::default(), LinkSpec::default())), None);
    let n = 100_000;
    let lan_frames = testing::malformed_corpus(1, n);
    let wan_frames = testing::malformed_corpus(2, n);
    let (exp_lan, exp_wan) = (expected_malformed(&lan_frames), expected_malformed(&wan_frames));
    let tb = rig.tb.tb.clone();
    let h_lan = inject(&tb.ns_sender, &tb.if_sender, lan_frames, 25_000);
    let h_wan = inject(tb.ns_wanem.as_deref().unwrap(), tb.if_wan_a.as_deref().unwrap(), wan_frames, 25_000);
    let (s, r) = transfer(&tb, 200 << 20, Duration::from_secs(90));
    let sl = join_within(h_lan, Duration::from_secs(60), "lan injection").unwrap();
    let sw = join_within(h_wan, Duration::from_secs(60), "wan injection").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(rig.gateway_alive(), "gateway must still be running");
    let (g, _) = stop(&mut rig);
    let (lan, wan) = (g.port("lan").unwrap(), g.port("wan").unwrap());
    eprintln!(
        "robustness: injected {sl} (lan) + {sw} (wan) frames; malformed expected {exp_lan}/{exp_wan}, counted {}/{}; kernel drops {}/{}; sha256 ok = {}",
        lan.malformed,
        wan.malformed,
        lan.kernel_drops,
        wan.kernel_drops,
        s.sha256 == r.sha256
    );
    assert_eq!(s.sha256, r.sha256);
    assert_eq!((sl, sw), (n as u64, n as u64));
    // Never more than injected; a few may be lost before the gateway reads them (veth backlog
    // or socket buffer overflow while the machine is loaded: the latter shows in kernel_drops).
    assert!(lan.malformed <= exp_lan && wan.malformed <= exp_wan, "{lan:?} {wan:?}");
    // Frames the kernel dropped before the gateway read them (socket buffer full while the
    // machine is loaded) are reported as kernel_drops; most must reach the classifier.
    assert!(lan.malformed as f64 >= 0.5 * exp_lan as f64 && wan.malformed as f64 >= 0.5 * exp_wan as f64);
}

#[test]
fn testbed_cleanup_after_panic_and_after_crash() {
    let Some(_l) = live("cleanup") else { return };
    let r = std::thread::spawn(|| {
        let g = TestbedGuard::up(&TopologySpec::new("acks-tu")).unwrap();
        assert!(!testbed::leftovers(&g.prefix).is_empty());
        panic!("deliberate panic mid-test");
    })
    .join();
    assert!(r.is_err());
    assert_eq!(testbed::leftovers("acks-tu"), Vec::<String>::new());
    // A "crash": built without a guard, never cleaned up by its owner.
    let tb = testbed::up(&TopologySpec::new("acks-tc")).unwrap();
    assert!(testbed::leftovers(&tb.prefix).len() >= 4);
    let removed = testbed::down("acks-tc").unwrap();
    assert!(removed.len() >= 4, "{removed:?}");
    assert_eq!(testbed::leftovers("acks-tc"), Vec::<String>::new());
    assert_eq!(testbed::down("acks-tc").unwrap(), Vec::<String>::new(), "down is idempotent");
}

/// A scenario's `[tcp]` reaches Linux's knobs in the testbed's two hosts (`run --live` applies
/// it before the flows start): the routes between them carry `quickack`, `initcwnd` and `rto_min`,
/// and each host's own sysctls the rest. The machine's own sysctls stay as they were.
#[test]
fn endpoint_tcp_settings_reach_the_testbeds_hosts_only() {
    let Some(_l) = live("endpoint_tcp") else { return };
    let keys = ["tcp_sack", "tcp_timestamps", "tcp_ecn", "tcp_rmem", "tcp_reordering"];
    let machine = || keys.map(|k| std::fs::read_to_string(format!("/proc/sys/net/ipv4/{k}")).unwrap());
    let before = machine();
    let mut rig = rig_with("acks-tk", None, None);
    let g = rig.tb.clone();
    // A fresh host has Linux's defaults.
    assert_eq!(Testbed::read_sysctl(&g.ns_sender, "tcp_sack").unwrap(), "1");
    let t = testbed::EndpointTcp {
        quickack: true,
        rmem_bytes: Some(131_072),
        initcwnd: Some(4),
        rto_min_ms: Some(1000),
        advmss: Some(548),
        sack: Some(false),
        timestamps: Some(false),
        ecn: Some(true),
        reordering: Some(5),
    };
    g.apply_tcp(&t).unwrap();
    assert_eq!(Testbed::read_sysctl(&g.ns_sender, "tcp_reordering").unwrap(), "5");
    assert_eq!(Testbed::read_sysctl(&g.ns_receiver, "tcp_reordering").unwrap(), "3", "the sender's alone");
    let route = |ns: &str, to: std::net::Ipv4Addr| {
        testbed::sh("ip", &["-n", ns, "route", "show", &format!("{to}/32")]).unwrap()
    };
    let snd = route(&g.ns_sender, g.receiver_addr);
    eprintln!("sender's route: {snd}");
    assert!(snd.contains("initcwnd 4"), "{snd}");
    assert!(snd.contains("rto_min") && (snd.contains("1s") || snd.contains("1000ms")), "{snd}");
    assert!(snd.contains("advmss 548"), "{snd}");
    let rcv = route(&g.ns_receiver, g.sender_addr);
    assert!(rcv.contains("quickack 1") && rcv.contains("advmss 548"), "both on the one route: {rcv}");
    for ns in [&g.ns_sender, &g.ns_receiver] {
        assert_eq!(Testbed::read_sysctl(ns, "tcp_sack").unwrap(), "0", "{ns}");
        assert_eq!(Testbed::read_sysctl(ns, "tcp_timestamps").unwrap(), "0", "{ns}");
        assert_eq!(Testbed::read_sysctl(ns, "tcp_ecn").unwrap(), "1", "{ns}");
    }
    let rmem = Testbed::read_sysctl(&g.ns_receiver, "tcp_rmem").unwrap();
    assert_eq!(rmem.split_whitespace().collect::<Vec<_>>(), ["4096", "131072", "131072"]);
    // A transfer still runs with every knob set (SYNs without SACK/timestamps options, ECN asked).
    let (src, sink) = transfer(&g, 2_000_000, Duration::from_secs(30));
    assert_eq!((sink.bytes, &sink.sha256), (src.bytes, &src.sha256));
    // The advertised MSS took: the gateway forwarded no TCP frame longer than 548 bytes of payload
    // (timestamps off: 548 + 40 header bytes + 14 Ethernet = 602 bytes), about 3,600 of them.
    let (gw, _) = stop(&mut rig);
    let lan = gw.port("lan").unwrap();
    eprintln!("gateway lan port: {lan:?}");
    assert!(lan.rx_packets >= 2_000_000 / 548, "2 MB in ≤ 548-byte segments: {} frames", lan.rx_packets);
    assert!(lan.rx_bytes <= lan.rx_packets * 602, "frames of at most 602 bytes: {lan:?}");
    drop(rig);
    assert_eq!(machine(), before, "the machine's own sysctls are untouched");
    assert!(testbed::leftovers("acks-tk").is_empty());
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Resident-memory growth allowed on top of a table's documented bound in
/// `flow_table_bounded_under_200k_syns`.
const RSS_SLACK: usize = 8 << 20;

#[test]
fn flow_table_bounded_under_200k_syns() {
    let Some(_l) = live("flow_table") else { return };
    let dir = std::env::temp_dir().join(format!("acks-ft-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pol = dir.join("policy.toml");
    let cap = 20_000usize;
    std::fs::write(
        &pol,
        format!("pass_through = true\n[flows]\nmax_flows = {cap}\nidle_timeout_s = 30\nembryonic_timeout_s = 1\n"),
    )
    .unwrap();
    let mut rig = rig_with("acks-tf", None, Some(pol));
    let syn = |i: usize, buf: &mut Vec<u8>| {
        let i = i as u32;
        buf.extend_from_slice(&testing::tcp_syn_frame(
            [10, 200 + (i >> 16) as u8, (i >> 8) as u8, i as u8],
            [10, 77, 0, 2],
            1024 + (i % 50_000) as u16,
            80,
            i,
        ))
    };
    let tb = rig.tb.tb.clone();
    let ctl = rig.gateway().unwrap().clone();
    let watch_stop = Arc::new(AtomicBool::new(false));
    let ws = watch_stop.clone();
    // Samples the table size and this process's resident memory (the gateway is a thread of
    // it) every 20 ms; returns their maxima.
    let watcher = std::thread::spawn(move || {
        let (mut max_flows, mut max_rss) = (0, 0);
        while !ws.load(Ordering::Relaxed) {
            max_flows = max_flows.max(ctl.snapshot().flow_table.flows);
            max_rss = max_rss.max(rss_kib());
            std::thread::sleep(Duration::from_millis(20));
        }
        (max_flows, max_rss)
    });
    let t = start_transfer(&tb, 60 << 20);
    // Resident memory before the flood, once the transfer is under way (gateway, transfer and
    // watcher threads all running and their buffers touched).
    let t0 = Instant::now();
    while rig.gateway().unwrap().snapshot().port("lan").map_or(0, |p| p.rx_bytes) < 4 << 20 {
        assert!(t0.elapsed() < Duration::from_secs(20), "transfer did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let rss0 = rss_kib();
    // The 200k SYNs are generated one by one as they are sent (no frame list in memory).
    let h = inject_gen(&tb.ns_sender, &tb.if_sender, 200_000, 100_000, syn);
    let (s, r) = finish_transfer(t, Duration::from_secs(60));
    let sent = join_within(h, Duration::from_secs(60), "syn flood").unwrap();
    // Wait for the embryonic timeout (1 s) to empty the table of SYN-only flows.
    let t0 = Instant::now();
    let during = loop {
        let snap = rig.gateway().unwrap().snapshot();
        if snap.flow_table.flows < cap / 2 || t0.elapsed() > Duration::from_secs(10) {
            break snap;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    watch_stop.store(true, Ordering::SeqCst);
    let (max_seen, max_rss) = watcher.join().unwrap();
    let (g, _) = stop(&mut rig);
    let ft = &g.flow_table;
    let table_bound = cap * ackshape_live::stats::FLOW_ENTRY_BYTES;
    let growth_kib = max_rss.saturating_sub(rss0);
    eprintln!(
        "flow table: cap {cap}, {sent} SYNs injected, max flows seen {max_seen}, after idle {} flows; {ft:?}; table bytes {} (bound {table_bound}); process RSS {rss0} KiB before the flood, peak {max_rss} KiB (+{growth_kib} KiB; bound {} KiB)",
        during.flow_table.flows,
        ft.approx_bytes,
        (table_bound + RSS_SLACK) >> 10,
    );
    // Resident memory grew by at most the table's documented bound plus a fixed slack (thread
    // stacks, receive batches, allocator arenas): an unbounded table of 200k flows would add
    // ~40 MB.
    assert!(growth_kib as usize * 1024 <= table_bound + RSS_SLACK, "RSS grew by {growth_kib} KiB");
    assert_eq!(s.sha256, r.sha256, "established flow kept flowing");
    assert!(max_seen <= cap && ft.flows <= cap);
    assert!(ft.evicted_embryonic > 0, "idle SYN-only flows are evicted");
    assert!(during.flow_table.flows < cap / 2, "embryonic flows gone after their timeout");
    assert!(ft.approx_bytes <= cap * ackshape_live::stats::FLOW_ENTRY_BYTES);
    // the transfer's flow is tracked (it was inserted before the flood and stayed active)
    assert!(g.top_flows.iter().any(|(k, f)| k.b_port == 5001 && f.bytes[0] > 60 << 20), "{:?}", g.top_flows.first());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn partial_checksums_from_an_offloading_sender_are_counted() {
    let Some(_l) = live("csum_not_ready") else {
        return;
    };
    let mut rig = rig_with("acks-tk", None, None);
    let tb = rig.tb.tb.clone();
    // Misconfigure the sender: checksum offload on. The gateway's own ports are clean, so it
    // starts, and must count the partial-checksum frames it now receives.
    testbed::sh("ip", &["netns", "exec", &tb.ns_sender, "ethtool", "-K", &tb.if_sender, "tx", "on"]).unwrap();
    let dst = SocketAddr::from((tb.receiver_addr, 5009));
    let _ = spawn_in_netns(&tb.ns_sender, "conn", move || {
        for _ in 0..3 {
            let _ = std::net::TcpStream::connect_timeout(&dst, Duration::from_millis(200));
        }
    })
    .unwrap()
    .join();
    std::thread::sleep(Duration::from_millis(100));
    let (g, _) = stop(&mut rig);
    let lan = g.port("lan").unwrap();
    eprintln!("offloading sender: lan port {lan:?}");
    assert!(lan.csum_not_ready > 0, "{lan:?}");
}

#[test]
fn run_flows_with_per_flow_congestion_control() {
    let Some(_l) = live("run_flows") else { return };
    let link = LinkSpec { rate_bps: Some(20_000_000), delay_ns: 5_000_000, ..Default::default() };
    let back = LinkSpec { delay_ns: 5_000_000, ..Default::default() };
    let mut rig = rig_with("acks-tw", Some((link, back)), None);
    let flows: Vec<traffic::FlowSpec> = ["reno", "cubic", "bbr"]
        .iter()
        .enumerate()
        .map(|(i, cc)| traffic::FlowSpec {
            name: format!("f{i}-{cc}"),
            cc: Some(cc.to_string()),
            start_s: 0.2 * i as f64,
            bytes: None,
            duration_s: Some(2.0),
            open_by_receiver: false,
            sock: Default::default(),
        })
        .collect();
    let reps = traffic::run_flows(&rig.tb, &flows, Duration::from_millis(250), 5).unwrap();
    let (g, _) = stop(&mut rig);
    let total: f64 = reps.iter().map(|r| r.goodput_bps).sum();
    for r in &reps {
        eprintln!(
            "flow {} ({:?}): {} bytes, {:.2} Mbit/s, intact {}, error {:?}, series {:?}",
            r.name,
            r.cc,
            r.bytes,
            r.goodput_bps / 1e6,
            r.intact,
            r.error,
            r.series.iter().map(|(t, b)| format!("{t:.2}:{:.1}", b / 1e6)).collect::<Vec<_>>()
        );
        assert!(r.error.is_none() && r.intact && r.bytes > 0, "{r:?}");
    }
    eprintln!("sum of flow goodputs {:.2} Mbit/s; gateway tracked {} flows", total / 1e6, g.flow_table.flows);
    assert!(g.flow_table.flows >= 3);
}

/// A flow's own socket options (a scenario flow's `tcp` table under `run --live`) reach its
/// sockets and only its: `TCP_MAXSEG` its segments, `SO_RCVBUF` its window, `TCP_QUICKACK` its ACKs
/// — for a flow the sender opens and for one the receiver opens.
#[test]
fn run_flows_with_per_flow_socket_options() {
    let Some(_l) = live("sock_opts") else { return };
    let link = LinkSpec { rate_bps: Some(20_000_000), delay_ns: 20_000_000, ..Default::default() };
    let back = LinkSpec { delay_ns: 20_000_000, ..Default::default() };
    let mut rig = rig_with("acks-to", Some((link, back)), None);
    let small = traffic::SockOpts { max_seg: Some(548), rcv_buf: Some(8_000), quickack: true };
    let small_delayed = traffic::SockOpts { quickack: false, ..small.clone() };
    let flows: Vec<traffic::FlowSpec> =
        [(small.clone(), false), (Default::default(), false), (small, true), (small_delayed, false)]
            .into_iter()
            .enumerate()
            .map(|(i, (sock, open_by_receiver))| traffic::FlowSpec {
                name: format!("f{i}"),
                cc: Some("cubic".into()),
                start_s: 0.0,
                bytes: None,
                duration_s: Some(3.0),
                open_by_receiver,
                sock,
            })
            .collect();
    let reps = traffic::run_flows(&rig.tb, &flows, Duration::from_millis(500), 5).unwrap();
    let _ = stop(&mut rig);
    for r in &reps {
        eprintln!(
            "flow {}: {} bytes, {:.2} Mbit/s, mss {:?}, receiver ACKs per segment {:?}, error {:?}",
            r.name,
            r.bytes,
            r.goodput_bps / 1e6,
            r.mss,
            r.receiver_acks_per_segment,
            r.error
        );
        assert!(r.error.is_none() && r.intact && r.bytes > 0, "{r:?}");
    }
    // TCP_MAXSEG 548 with timestamps: 536-byte segments; the other flow keeps the link's 1448.
    assert_eq!(reps.iter().map(|r| r.mss).collect::<Vec<_>>(), [Some(536), Some(1448), Some(536), Some(536)]);
    // SO_RCVBUF 8000: Linux doubles it, and a window never exceeds the buffer, so over the 40-ms
    // round trip at most 16 000 B per RTT (3.2 Mbit/s); without it autotuning opens the window
    // to what the 20 Mbit/s link takes.
    let bound = 2.0 * 8_000.0 * 8.0 / 0.040;
    for r in [&reps[0], &reps[2], &reps[3]] {
        assert!(
            r.goodput_bps <= bound,
            "{}: {:.2} Mbit/s above the buffer's {:.2}",
            r.name,
            r.goodput_bps / 1e6,
            bound / 1e6
        );
    }
    assert!(reps[1].goodput_bps > bound, "the flow without options is not held to it: {:?}", reps[1]);
    // TCP_QUICKACK after every read: more ACKs per data segment than Linux's delayed ACKs. The
    // control is f3, the same segments, buffer and rate without it (about one ACK per two
    // segments); the unlimited f1 is no control: its ratio moves with its rate (0.55–0.66 seen).
    let acks = |r: &traffic::FlowReport| r.receiver_acks_per_segment.expect("TCP_INFO segs");
    for r in [&reps[0], &reps[2]] {
        assert!(acks(r) > acks(&reps[3]) + 0.2, "{}: {:.2} vs {:.2} without", r.name, acks(r), acks(&reps[3]));
    }
}

#[test]
fn stats_json_lines_and_prometheus_endpoint() {
    let Some(_l) = live("stats_export") else { return };
    let dir = std::env::temp_dir().join(format!("acks-se-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut spec = RigSpec::new("acks-ts");
    spec.topology.wanem = false;
    spec.gateway.stats_json = Some(dir.join("gw.jsonl"));
    spec.gateway.stats_interval = Duration::from_millis(100);
    spec.gateway.prometheus = Some("127.0.0.1:9109".parse().unwrap());
    spec.gateway.pcap_dir = Some(dir.clone());
    // As `ackshape gateway` runs it: privileges dropped once the ports are open.
    spec.gateway.privileges = Some(ackshape_live::privs::PrivDrop { user: None });
    let nice = spec.gateway.sched.nice;
    let mut rig = Rig::start(spec).unwrap();
    let (s, r) = transfer(&rig.tb, 2 << 20, Duration::from_secs(20));
    assert_eq!(s.sha256, r.sha256);
    std::thread::sleep(Duration::from_millis(250));
    // The gateway's threads (data plane, metrics endpoint) run with CAP_NET_RAW (bit 13) and,
    // for a negative nice, CAP_SYS_NICE (bit 23) only.
    let want: u64 = (1 << 13) | if nice < 0 { 1 << 23 } else { 0 };
    let mut seen = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap() {
        let t = t.unwrap().path();
        let comm = std::fs::read_to_string(t.join("comm")).unwrap_or_default();
        if comm.trim() == "acks-gateway" || comm.trim() == "acks-prometheus" {
            let st = std::fs::read_to_string(t.join("status")).unwrap();
            let eff = st.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap().trim().to_string();
            seen.push((comm.trim().to_string(), u64::from_str_radix(&eff, 16).unwrap()));
        }
    }
    eprintln!("CapEff of the gateway's threads: {seen:x?} (expected {want:#x})");
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|(_, e)| *e == want), "{seen:x?}, expected {want:#x}");
    let text = spawn_in_netns(&rig.tb.ns_gateway, "scrape", || -> std::io::Result<(String, Duration)> {
        use std::io::{Read, Write};
        // A scrape with 200 idle connections open answers in under a second.
        let idle: Vec<_> =
            (0..200).map(|_| std::net::TcpStream::connect("127.0.0.1:9109")).collect::<Result<_, _>>()?;
        let t0 = Instant::now();
        let mut c = std::net::TcpStream::connect("127.0.0.1:9109")?;
        c.set_read_timeout(Some(Duration::from_secs(10)))?;
        c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")?;
        let mut s = String::new();
        c.read_to_string(&mut s)?;
        let took = t0.elapsed();
        drop(idle);
        Ok((s, took))
    })
    .unwrap()
    .join()
    .unwrap()
    .unwrap()
    .unwrap();
    let (text, took) = text;
    eprintln!("scrape with 200 idle connections: {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let (g, _) = stop(&mut rig);
    use std::os::unix::fs::PermissionsExt;
    for f in ["gw.jsonl", "lan.pcap", "wan.pcap"] {
        let mode = std::fs::metadata(dir.join(f)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{f}: {mode:o}");
    }
    assert!(text.contains("ackshape_port_rx_packets_total{port=\"lan\"}"), "{text}");
    assert!(text.contains("ackshape_flows "), "{text}");
    let lines = std::fs::read_to_string(dir.join("gw.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(last["ports"]["lan"]["rx_packets"].as_u64().unwrap(), g.port("lan").unwrap().rx_packets);
    assert!(lines.lines().count() >= 3);
    // pcap of each port, readable, with every frame the lan port received and sent
    let f = std::fs::File::open(dir.join("lan.pcap")).unwrap();
    let mut rd = pcap_file::pcap::PcapReader::new(f).unwrap();
    let mut n = 0u64;
    while let Some(p) = rd.next_packet() {
        p.unwrap();
        n += 1;
    }
    let lan = g.port("lan").unwrap();
    assert_eq!(n, lan.rx_packets + lan.tx_packets);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn vlan_tagged_frames_cross_unchanged() {
    let Some(_l) = live("vlan") else { return };
    let rig = rig_with("acks-tv", Some((LinkSpec::default(), LinkSpec::default())), None);
    let tb = rig.tb.tb.clone();
    let frames: Vec<Vec<u8>> = (0..50u32)
        .map(|i| {
            let mut f = testing::tcp_syn_frame([10, 9, 0, 1], [10, 9, 0, 2], 1000 + i as u16, 80, i);
            let tag = [0x81, 0x00, 0x00, (i % 200) as u8 + 1];
            f.splice(12..12, tag);
            f
        })
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let rif = tb.if_receiver.clone();
    let cap = spawn_in_netns(&tb.ns_receiver, "capture", move || -> std::io::Result<Vec<Vec<u8>>> {
        let mut p = AfPacketPort::open(&rif, "cap")?;
        let _ = tx.send(());
        let mut got = Vec::new();
        let mut buf = vec![0u8; 2048];
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(1500) && got.len() < 50 {
            match p.recv(ackshape_core::Time(0), &mut buf)? {
                Some(m) if buf[..6] == testing::SINK_MAC => got.push(buf[..m.len].to_vec()),
                Some(_) => {}
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        Ok(got)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let sent = frames.clone();
    join_within(inject(&tb.ns_sender, &tb.if_sender, frames, 10_000), Duration::from_secs(10), "inject").unwrap();
    let got = join_within(cap, Duration::from_secs(10), "capture").unwrap();
    assert_eq!(got.len(), sent.len());
    assert_eq!(got, sent, "VLAN tags must survive the gateway and the wanem");
    let snap = rig.gateway().unwrap().snapshot();
    eprintln!(
        "vlan: {} tagged frames crossed unchanged; gateway lan tcp {}",
        got.len(),
        snap.port("lan").map_or(0, |p| p.tcp)
    );
}

/// Wait (up to 5 s) until the gateway's published snapshot satisfies `ok`.
fn wait_snapshot(ctl: &Control, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let t0 = Instant::now();
    loop {
        let s = ctl.snapshot();
        if ok(&s) {
            return s;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "{what}: last snapshot ports {:?}", s.ports);
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn link_down_and_up_are_reported_and_a_removed_port_stops_the_gateway() {
    use ackshape_live::port::LinkState;
    let Some(_l) = live("link_state") else { return };
    let mut spec = RigSpec::new("acks-tl");
    spec.topology.wanem = false;
    spec.gateway.stats_interval = Duration::from_millis(50);
    let mut rig = Rig::start(spec).unwrap();
    let ctl = rig.gateway().unwrap().clone();
    let tb = rig.tb.tb.clone();
    let link = |s: &Snapshot, p: &str| s.port(p).map(|p| (p.link, p.link_down_events));
    wait_snapshot(&ctl, "both up", |s| {
        link(s, "lan") == Some((LinkState::Up, 0)) && link(s, "wan") == Some((LinkState::Up, 0))
    });
    // The far end goes down: the gateway's WAN port loses its carrier.
    testbed::sh("ip", &["-n", &tb.ns_receiver, "link", "set", &tb.if_receiver, "down"]).unwrap();
    let s = wait_snapshot(&ctl, "wan down", |s| link(s, "wan") == Some((LinkState::Down, 1)));
    assert_eq!(link(&s, "lan"), Some((LinkState::Up, 0)));
    // The gateway's own LAN port is set down by hand.
    testbed::sh("ip", &["-n", &tb.ns_gateway, "link", "set", &tb.if_gw_lan, "down"]).unwrap();
    wait_snapshot(&ctl, "lan down", |s| link(s, "lan") == Some((LinkState::Down, 1)));
    testbed::sh("ip", &["-n", &tb.ns_gateway, "link", "set", &tb.if_gw_lan, "up"]).unwrap();
    testbed::sh("ip", &["-n", &tb.ns_receiver, "link", "set", &tb.if_receiver, "up"]).unwrap();
    wait_snapshot(&ctl, "both up again", |s| {
        link(s, "lan") == Some((LinkState::Up, 1)) && link(s, "wan") == Some((LinkState::Up, 1))
    });
    assert!(rig.gateway_alive(), "links that come back do not stop the gateway");
    // It still forwards.
    let (s, r) = transfer(&rig.tb, 1 << 20, Duration::from_secs(30));
    assert_eq!(s.sha256, r.sha256);
    // The WAN port's interface is deleted: the gateway stops with an error naming it.
    testbed::sh("ip", &["-n", &tb.ns_gateway, "link", "del", &tb.if_gw_wan]).unwrap();
    let t0 = Instant::now();
    while rig.gateway_alive() {
        assert!(t0.elapsed() < Duration::from_secs(5), "the gateway kept running without its WAN port");
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = rig.stop().0.expect("gateway ran").expect_err("a removed port is an error");
    eprintln!("link state: gateway stopped with: {err}");
    assert!(err.contains(&format!("port wan ({})", tb.if_gw_wan)) && err.contains("removed"), "{err}");
}
