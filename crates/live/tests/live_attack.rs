//! Live tests of the gateway under attack: real Linux TCP through the policy's shaping gateway
//! while a sender inside the test's own namespaces floods it with new flows, or injects the
//! spoofs of the threat model (docs/policy.md, "Threat model"). Namespaces are created by the
//! tests (prefix `acks-x…`) and removed even when a test panics. Without root, `ip` and `ethtool`
//! the tests print `SKIPPED: <reason>` to stderr and return (`ACKSHAPE_LIVE=require` makes that a
//! failure).

use ackshape_live::gateway::PolicyPipeline;
use ackshape_live::policy::Policy;
use ackshape_live::port::{AfPacketPort, Port};
use ackshape_live::rig::{Rig, RigSpec};
use ackshape_live::stats::Snapshot;
use ackshape_live::testbed::{self, spawn_in_netns, Testbed};
use ackshape_live::testing;
use ackshape_live::traffic::{self, SinkReport, SourceReport};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
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

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("acks-x{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A rig (sender — gateway — receiver, no wanem) whose gateway runs the policy in `path`, as
/// `ackshape gateway --policy` does.
fn policy_rig(prefix: &str, path: &Path) -> Rig {
    let policy = Policy::load(path).expect("test policy loads");
    let mut spec = RigSpec::new(prefix);
    spec.topology.wanem = false;
    spec.gateway.policy = Some(path.to_path_buf());
    spec.gateway.stats_interval = Duration::from_millis(200);
    spec.pipeline = Box::new(PolicyPipeline::new(&policy));
    Rig::start(spec).expect("rig start")
}

fn stop(rig: &mut Rig) -> Snapshot {
    rig.stop().0.expect("gateway ran").expect("gateway result")
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

/// Start a TCP transfer sender → receiver port `port` for `secs` seconds.
fn start_timed_transfer(tb: &Testbed, port: u16, secs: f64) -> Running {
    let dst = SocketAddr::from((tb.receiver_addr, port));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = spawn_in_netns(&tb.ns_receiver, "sink", move || {
        let l = TcpListener::bind(dst)?;
        let _ = tx.send(());
        traffic::tcp_sink(&l, 64 << 10)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).expect("sink did not start");
    let d = Duration::from_secs_f64(secs);
    let src = spawn_in_netns(&tb.ns_sender, "source", move || traffic::tcp_source_until(dst, None, Some(d), 5, None))
        .unwrap();
    (src, sink)
}

/// Goodput (bit/s) the sink saw between two instants, from its marks.
fn goodput_between(r: &SinkReport, from: Instant, to: Instant) -> f64 {
    let t0 = r.first_byte_at.expect("bytes arrived");
    let at = |i: Instant| i.saturating_duration_since(t0);
    let (a, b) = (at(from), at(to));
    let bytes_at = |d: Duration| r.marks.iter().take_while(|(_, t)| *t <= d).last().map_or(0, |m| m.0);
    let secs = b.saturating_sub(a).as_secs_f64();
    assert!(secs > 0.5, "window too short: {secs} s");
    (bytes_at(b) - bytes_at(a)) as f64 * 8.0 / secs
}

/// What the flood generator sent: frames, and its wall time.
struct FloodReport {
    sent: u64,
    secs: f64,
}

/// Send `n` frames from `ifname` in `ns` at about `pps` (in batches of 32 through one AF_PACKET
/// socket), frame `i` written by `gen(i, buf)` just before it is sent.
fn flood(
    ns: &str,
    ifname: &str,
    n: usize,
    pps: u64,
    gen: impl Fn(usize, &mut Vec<u8>) + Send + 'static,
) -> JoinHandle<std::io::Result<std::io::Result<FloodReport>>> {
    let ifname = ifname.to_string();
    spawn_in_netns(ns, "flood", move || -> std::io::Result<FloodReport> {
        const B: usize = 32;
        let mut p = AfPacketPort::open(&ifname, "flood")?;
        let mut bufs: Vec<Vec<u8>> = (0..B).map(|_| Vec::with_capacity(256)).collect();
        let t0 = Instant::now();
        let mut sent = 0u64;
        let mut i = 0usize;
        while i < n {
            let k = B.min(n - i);
            for (j, b) in bufs.iter_mut().take(k).enumerate() {
                b.clear();
                gen(i + j, b);
            }
            let frames: Vec<&[u8]> = bufs[..k].iter().map(|b| &b[..]).collect();
            let mut off = 0;
            // A full socket buffer refuses part of a batch: send the rest again (the flood must
            // really send its frames), but never spin for long on it.
            let tries = Instant::now();
            while off < k && tries.elapsed() < Duration::from_millis(200) {
                let s = p.send_batch(ackshape_core::Time(0), &frames[off..]);
                off += s;
                if s == 0 {
                    std::thread::yield_now();
                }
            }
            sent += off as u64;
            i += k;
            let due = t0 + Duration::from_secs_f64(i as f64 / pps as f64);
            let now = Instant::now();
            if due > now + Duration::from_micros(200) {
                std::thread::sleep(due - now);
            }
        }
        Ok(FloodReport { sent, secs: t0.elapsed().as_secs_f64() })
    })
    .unwrap()
}

/// The n-th flood frame: a new 5-tuple towards the receiver (never port 5001), from one of 16 384
/// source addresses outside the testbed's subnet (so the receiver sends nothing back), a SYN
/// for even n and a data segment with ACK set for odd n (a flow picked up mid-stream: it is
/// tracked at once, with no embryonic timeout).
fn flood_frame(n: usize, dst: [u8; 4], buf: &mut Vec<u8>) {
    let n = n as u32;
    let src = [10, 128 + ((n >> 22) & 63) as u8, (n >> 14) as u8, (n >> 6) as u8];
    let sport = 1024 + (n & 63) as u16 * 97 + (n >> 28) as u16;
    let dport = 6000 + (n % 1000) as u16;
    if n % 2 == 0 {
        buf.extend_from_slice(&testing::tcp_syn_frame(src, dst, sport, dport, n.wrapping_mul(2654435761)));
    } else {
        buf.extend_from_slice(&testing::tcp_frame(src, dst, sport, dport, n, 0x18, &[], &[0x5a; 32]));
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Build point "isolation under a new-flow flood": one million new 5-tuples at ≥ 40 000 packets/s
/// into class `other` (a TCR class, so every new flow would reach a mechanism) leave an
/// established TCR flow in class `bulk` at ≥ 80 % of the rate it had before the flood, and the
/// gateway's memory bounded by `[flows] max_flows`.
#[test]
fn a_new_flow_flood_in_one_class_leaves_another_class_its_rate() {
    let Some(_l) = live("new_flow_flood") else { return };
    let dir = tmpdir("flood");
    let pol = dir.join("policy.toml");
    let max_flows = 65_536usize;
    std::fs::write(
        &pol,
        format!(
            r#"default_class = "other"
[flows]
max_flows = {max_flows}
[[class]]
name = "bulk"
rate = "40Mbit/s"
queue = "200pkt"
mechanism = {{ kind = "tcr" }}
[[class]]
name = "other"
rate = "10Mbit/s"
queue = "200pkt"
mechanism = {{ kind = "tcr" }}
[[rule]]
class = "bulk"
proto = "tcp"
dport = 5001
"#
        ),
    )
    .unwrap();
    let mut rig = policy_rig("acks-xf", &pol);
    let tb = rig.tb.tb.clone();
    let n_flood: usize = std::env::var("ACKS_FLOOD_FLOWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let pps: u64 = 50_000;
    let flood_secs = n_flood as f64 / pps as f64;
    let (before_s, after_s) = (5.0, 2.0);
    let t = start_timed_transfer(&tb, 5001, before_s + flood_secs + after_s + 1.0);
    std::thread::sleep(Duration::from_secs_f64(before_s));
    let rss0 = rss_kib();
    let dst = tb.receiver_addr.octets();
    let f0 = Instant::now();
    let h = flood(&tb.ns_sender, &tb.if_sender, n_flood, pps, move |i, b| flood_frame(i, dst, b));
    // The gateway's own view while the flood runs: its flow table and the process's memory.
    let ctl = rig.gateway().unwrap().clone();
    let (mut max_rss, mut max_table) = (rss0, 0usize);
    while !h.is_finished() {
        max_rss = max_rss.max(rss_kib());
        max_table = max_table.max(ctl.snapshot().flow_table.flows);
        std::thread::sleep(Duration::from_millis(50));
    }
    let f1 = Instant::now();
    let fr = join_within(h, Duration::from_secs(5), "flood").unwrap();
    let src = join_within(t.0, Duration::from_secs(120), "tcp source").unwrap();
    let sink = join_within(t.1, Duration::from_secs(20), "tcp sink").unwrap();
    let g = stop(&mut rig);
    assert_eq!(src.sha256, sink.sha256, "the bulk transfer's bytes");
    let start = sink.first_byte_at.unwrap();
    let before = goodput_between(&sink, start + Duration::from_secs(1), f0);
    let during = goodput_between(&sink, f0 + Duration::from_secs(1), f1);
    let lan = g.port("lan").unwrap().clone();
    let flows = &g.pipeline["stats"]["flows"];
    let other = &g.pipeline["stats"]["classes"]["other"];
    eprintln!(
        "flood: {} frames in {:.1} s ({:.0} packets/s); bulk goodput before {:.2} Mbit/s, during {:.2} Mbit/s ({:.1}%); \
         lan kernel drops {}; loop {:?}; engine flow table max {max_table} (cap {max_flows}); box flows {flows}; \
         class other: sent {} drops {}; RSS {rss0} KiB before, max {max_rss} KiB",
        fr.sent,
        fr.secs,
        fr.sent as f64 / fr.secs,
        before / 1e6,
        during / 1e6,
        100.0 * during / before,
        lan.kernel_drops,
        g.loop_timing,
        other["sent_pkts"],
        other["drops"],
    );
    assert!(fr.sent as usize >= n_flood * 99 / 100, "the flood sent {} of {n_flood}", fr.sent);
    assert!(fr.sent as f64 / fr.secs >= 40_000.0, "flood rate {:.0}/s below 40 000/s", fr.sent as f64 / fr.secs);
    assert!(during >= 0.8 * before, "bulk kept {:.1}% of its rate", 100.0 * during / before);
    assert!(max_table <= max_flows, "{max_table}");
    assert!(flows["tracked"].as_u64().unwrap() as usize <= max_flows, "{flows}");
    let _ = std::fs::remove_dir_all(&dir);
}
