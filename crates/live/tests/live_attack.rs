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
        // The flood stands for another machine: on this shared one it must not take the
        // gateway's CPU, so it runs only when nothing else wants one (its achieved rate is
        // measured and asserted by the caller).
        ackshape_live::sys::set_sched_idle()?;
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

/// Build point "isolation under a new-flow flood", functional part (in the suite): 200 000 new
/// 5-tuples at 50 000 packets/s into class `other` (a TCR class, so every new flow would reach a
/// mechanism) while an established TCR flow runs in class `bulk`: the flow's bytes arrive intact,
/// the tables stay within `[flows] max_flows` and the flood's class within its share; the rate the
/// flow kept is printed.
#[test]
fn a_new_flow_flood_stays_within_the_flow_bounds() {
    let Some(_l) = live("new_flow_flood") else { return };
    flood_scenario(200_000, false);
}

/// The same with one million new 5-tuples, asserting that the established flow keeps ≥ 80 % of
/// the rate it had before the flood. The flood generator runs in SCHED_IDLE (it stands for another
/// machine) and its achieved rate is asserted. A timing test: on the shared 2-core machine, at
/// load average 11–14 from other builds, the flow kept 71–89 % (25.8–26.6 Mbit/s during the flood
/// in every run; the spread is in the rate before it), and a flood of the same rate on 64 existing
/// tuples left it 79 %, so what remains is the packet rate's CPU cost on a busy machine rather
/// than the new flows'. It runs only on request (`--ignored`), on a quiet machine.
#[test]
#[ignore = "timing: run on a quiet machine with --ignored"]
fn a_new_flow_flood_in_one_class_leaves_another_class_its_rate() {
    let Some(_l) = live("new_flow_flood") else { return };
    flood_scenario(1_000_000, true);
}

fn flood_scenario(n_default: usize, check_rate: bool) {
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
    let n_flood: usize = std::env::var("ACKS_FLOOD_FLOWS").ok().and_then(|v| v.parse().ok()).unwrap_or(n_default);
    let pps: u64 = 50_000;
    let flood_secs = n_flood as f64 / pps as f64;
    let (before_s, after_s) = (5.0, 2.0);
    let t = start_timed_transfer(&tb, 5001, before_s + flood_secs + after_s + 1.0);
    std::thread::sleep(Duration::from_secs_f64(before_s));
    let rss0 = rss_kib();
    let dst = tb.receiver_addr.octets();
    let f0 = Instant::now();
    // ACKS_FLOOD_SAME=1: the same packets on 64 tuples only (the reference: what the packet rate
    // alone costs, without new flows).
    let same = std::env::var("ACKS_FLOOD_SAME").is_ok();
    let h = flood(&tb.ns_sender, &tb.if_sender, n_flood, pps, move |i, b| {
        flood_frame(if same { 1 + 2 * (i % 64) } else { i }, dst, b)
    });
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
    if check_rate {
        assert!(during >= 0.8 * before, "bulk kept {:.1}% of its rate", 100.0 * during / before);
    }
    let per_class = flows["max_flows_per_class"].as_u64().unwrap();
    assert_eq!(per_class as usize, max_flows / 2, "{flows}");
    assert!(flows["untracked_class_full"].as_u64().unwrap() > 0, "the flood reached its class's bound: {flows}");
    assert!(max_table <= max_flows, "{max_table}");
    assert!(flows["tracked"].as_u64().unwrap() as usize <= max_flows, "{flows}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------------------------------------
// Spoofs with a shaped flow's real tuple (docs/policy.md, "Threat model").

/// IPv4 TTL that marks every frame the tests inject with a bad checksum, so a capture can tell
/// them apart (an endpoint's own frames leave with 64).
const BAD_TTL: u8 = 13;
/// IPv4 id of every frame the spoof tests inject.
const SPOOF_ID: u16 = 0xbeef;

/// An Ethernet + IPv4 + TCP frame from the header of `like` (addresses, ports, MACs), with the
/// given sequence/ACK numbers, flags, window, options and payload, valid checksums, TTL 64.
fn forge(like: &[u8], seq: u32, ack: u32, flags: u8, window: u16, opts: &[u8], payload: &[u8]) -> Vec<u8> {
    let p = ackshape_wire::Packet::parse_frame(like).expect("a frame of the flow");
    let t = p.packet.tcp().unwrap();
    let (std::net::IpAddr::V4(s), std::net::IpAddr::V4(d)) = (p.packet.ip.src, p.packet.ip.dst) else {
        panic!("IPv4 testbed")
    };
    let mut f = testing::tcp_frame(s.octets(), d.octets(), t.sport, t.dport, seq, flags, opts, payload);
    f[..12].copy_from_slice(&like[..12]);
    // IP id SPOOF_ID marks every injected frame (the endpoints' own never carry it here).
    f[18..20].copy_from_slice(&SPOOF_ID.to_be_bytes());
    f[42..46].copy_from_slice(&ack.to_be_bytes());
    f[48..50].copy_from_slice(&window.to_be_bytes());
    fix_tcp_checksum(&mut f);
    f
}

/// A frame of the reverse direction of `like` (addresses, ports and MACs swapped), valid
/// checksums, IP id `SPOOF_ID`.
fn forge_reverse(like: &[u8], seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut r = like.to_vec();
    r.copy_within(6..12, 0);
    r[6..12].copy_from_slice(&like[..6]);
    r.copy_within(30..34, 26);
    r[30..34].copy_from_slice(&like[26..30]);
    r.copy_within(36..38, 34);
    r[36..38].copy_from_slice(&like[34..36]);
    forge(&r, seq, ack, flags, 1000, &[], payload)
}

/// Recompute the IPv4 header and TCP checksums of an untagged frame.
fn fix_tcp_checksum(f: &mut [u8]) {
    let sum = |b: &[u8], mut s: u32| {
        for c in b.chunks(2) {
            s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
        }
        while s >> 16 != 0 {
            s = (s & 0xffff) + (s >> 16);
        }
        s
    };
    f[24] = 0;
    f[25] = 0;
    let c = !(sum(&f[14..34], 0) as u16);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let tcp_len = f.len() - 34;
    f[50] = 0;
    f[51] = 0;
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&f[26..34]);
    pseudo.extend_from_slice(&[0, 6, (tcp_len >> 8) as u8, tcp_len as u8]);
    let c = !(sum(&f[34..], sum(&pseudo, 0)) as u16);
    f[50..52].copy_from_slice(&c.to_be_bytes());
}

/// The same frame with TTL `BAD_TTL` and a TCP checksum that is wrong (the IP one fixed).
fn bad_checksum(f: &[u8]) -> Vec<u8> {
    let mut g = f.to_vec();
    g[22] = BAD_TTL;
    fix_tcp_checksum(&mut g);
    g[50] ^= 0x5a;
    g
}

/// Run `tcpdump` in `ns` on `ifname` (direction `inout`: "in"/"out") with a filter, the first
/// 400 bytes of each frame; its closing report (frames the kernel dropped) is kept.
struct Dump(std::process::Child, PathBuf, std::sync::Arc<Mutex<String>>);

impl Dump {
    fn start(ns: &str, ifname: &str, inout: &str, filter: &str, path: PathBuf) -> Dump {
        use std::io::BufRead;
        let mut c = std::process::Command::new("ip")
            .args([
                "netns", "exec", ns, "tcpdump", "-i", ifname, "-Q", inout, "-s", "400", "-B", "32768", "-U", "-n", "-w",
            ])
            .arg(&path)
            .arg(filter)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("tcpdump");
        let mut err = std::io::BufReader::new(c.stderr.take().unwrap());
        let mut line = String::new();
        while err.read_line(&mut line).unwrap_or(0) > 0 && !line.contains("listening on") {
            line.clear();
        }
        // Keep reading its stderr so it never blocks on a full pipe.
        let report = std::sync::Arc::new(Mutex::new(String::new()));
        let r2 = report.clone();
        std::thread::spawn(move || {
            let mut l = String::new();
            while err.read_line(&mut l).unwrap_or(0) > 0 {
                r2.lock().unwrap().push_str(&l);
                l.clear();
            }
        });
        Dump(c, path, report)
    }
    /// Stop it; the pcap and the frames the kernel dropped before tcpdump read them.
    fn stop(mut self) -> (PathBuf, u64) {
        let _ = std::process::Command::new("kill").args(["-INT", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
        std::thread::sleep(Duration::from_millis(50));
        let text = self.2.lock().unwrap().clone();
        let dropped = text
            .lines()
            .find(|l| l.contains("dropped by kernel"))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        (self.1.clone(), dropped)
    }
}

impl Drop for Dump {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// (time, captured bytes) of every packet in a classic little-endian µs pcap (tcpdump's own
/// format; read by hand because frames cut at the snap length are refused by the pcap crate).
fn read_pcap(p: &Path) -> Vec<(Duration, Vec<u8>)> {
    let b = std::fs::read(p).unwrap();
    assert!(b.len() >= 24 && b[..4] == [0xd4, 0xc3, 0xb2, 0xa1], "{}: not a µs little-endian pcap", p.display());
    let u32le = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let mut v = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        let (sec, usec, incl) = (u32le(i), u32le(i + 4), u32le(i + 8) as usize);
        if i + 16 + incl > b.len() {
            break; // the last record, cut short by the stop
        }
        v.push((Duration::new(sec as u64, usec * 1000), b[i + 16..i + 16 + incl].to_vec()));
        i += 16 + incl;
    }
    v
}

/// tshark's verdict on the IPv4 and TCP checksums of every frame in a pcap that carries
/// `BAD_TTL`: (valid, bad) counts (frames cut by the snap length are left out).
fn tshark_marked(p: &Path) -> (u64, u64) {
    let out = std::process::Command::new("tshark")
        .args(["-r"])
        .arg(p)
        .args(["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE", "-Y"])
        .arg(format!("ip.ttl == {BAD_TTL} && frame.len == frame.cap_len"))
        .args(["-T", "fields", "-e", "tcp.checksum.status", "-e", "ip.checksum.status"])
        .output()
        .expect("tshark");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let (mut good, mut bad) = (0, 0);
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        if l.split('\t').all(|x| x == "1") {
            good += 1;
        } else {
            bad += 1;
        }
    }
    (good, bad)
}

/// The shaped class's rate in the spoof tests.
const CLASS_MBPS: u64 = 50;

/// What one spoof run measured.
struct SpoofRun {
    goodput_bps: f64,
    injected: u64,
    fabricated_acks: u64,
    early_acks: (u64, Duration),
    acks_at_sender: u64,
    laundered: (u64, u64),
}

/// A 100 MB transfer through a `mechanism` class of `CLASS_MBPS` (wanem 5 ms each way, `loss` on
/// the way to the receiver), while an on-path attacker on the WAN side — it reads the receiver's
/// ACKs on the wanem's receiver-side port — injects, with the flow's real tuple: one SYN-ACK with
/// window scale 14 and MSS 88, a pure ACK at the real ACK + 2^30 and one at + 2^31 − 1, an RST
/// with a random sequence number, and data travelling WAN → LAN; each also with a bad checksum
/// (TTL `BAD_TTL`). With `flood`, 100 000 malformed frames are sent into each port meanwhile.
/// Without `inject`, nothing is injected (a control run: the same path, the same loss).
fn spoof_run(tag: &str, mechanism: &str, loss: f64, with_flood: bool, inject: bool) -> SpoofRun {
    use ackshape_live::wanem::LinkSpec;
    let dir = tmpdir(tag);
    let pol = dir.join("policy.toml");
    std::fs::write(
        &pol,
        format!(
            "default_class = \"other\"\n[[class]]\nname = \"bulk\"\nrate = \"{CLASS_MBPS}Mbit/s\"\nqueue = \"300pkt\"\nmechanism = {{ kind = \"{mechanism}\" }}\n\
             [[class]]\nname = \"other\"\nrate = \"10Mbit/s\"\n[[rule]]\nclass = \"bulk\"\nproto = \"tcp\"\ndport = 5001\n"
        ),
    )
    .unwrap();
    let policy = Policy::load(&pol).unwrap();
    let mut spec = RigSpec::new(&format!("acks-x{tag}"));
    spec.gateway.policy = Some(pol.clone());
    spec.gateway.stats_interval = Duration::from_millis(500);
    spec.pipeline = Box::new(PolicyPipeline::new(&policy));
    let path = |p: f64| LinkSpec {
        delay_ns: 5_000_000,
        queue_packets: 1000,
        loss: if p > 0.0 { ackshape_core::impair::LossSpec::Bernoulli { p } } else { Default::default() },
        ..Default::default()
    };
    spec.wanem = (path(loss), path(0.0));
    spec.wanem_seed = 7;
    let mut rig = Rig::start(spec).expect("rig start");
    let tb = rig.tb.tb.clone();
    let (wns, wa, wb) = (tb.ns_wanem.clone().unwrap(), tb.if_wan_a.clone().unwrap(), tb.if_wan_b.clone().unwrap());
    // Captures: what reaches the sender, what the receiver sends, and the receiver's inbound
    // (headers only, the flow's port; marked frames whole).
    let f = "tcp port 5001";
    let at_sender = Dump::start(&tb.ns_sender, &tb.if_sender, "in", f, dir.join("sender-in.pcap"));
    let rcv_if = tb.if_receiver.clone();
    let from_rcv = Dump::start(&tb.ns_receiver, &rcv_if, "out", f, dir.join("receiver-out.pcap"));
    let at_rcv = Dump::start(
        &tb.ns_receiver,
        &rcv_if,
        "in",
        &format!("{f} and ip[8] = {BAD_TTL}"),
        dir.join("receiver-in.pcap"),
    );
    let bytes: u64 = std::env::var("ACKS_TRANSFER_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(100) << 20;
    let dst = SocketAddr::from((tb.receiver_addr, 5001));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = spawn_in_netns(&tb.ns_receiver, "sink", move || {
        let l = TcpListener::bind(dst)?;
        let _ = tx.send(());
        traffic::tcp_sink(&l, 1 << 20)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).expect("sink did not start");
    let floods = with_flood.then(|| {
        let n = 100_000;
        let lan = testing::malformed_corpus(11, n);
        let wan = testing::malformed_corpus(12, n);
        let send = |ns: &str, ifn: &str, frames: Vec<Vec<u8>>| {
            flood(ns, ifn, frames.len(), 20_000, move |i, b| {
                b.extend_from_slice(&frames[i]);
                if b.len() < 14 {
                    b.resize(14, 0xff);
                    b[12] = 0x08;
                    b[13] = 0x00;
                }
            })
        };
        (send(&tb.ns_sender, &tb.if_sender, lan), send(&wns, &wa, wan))
    });
    let t0 = Instant::now();
    let src = spawn_in_netns(&tb.ns_sender, "source", move || traffic::tcp_source(dst, bytes, 3, None)).unwrap();
    // The attacker: reads the receiver's ACKs where they enter the wanem, injects towards the
    // gateway's WAN port.
    let (sns, sif) = (tb.ns_sender.clone(), tb.if_sender.clone());
    let mut lan_out = spawn_in_netns(&sns, "lan-socket", move || AfPacketPort::open(&sif, "inject-lan"))
        .unwrap()
        .join()
        .unwrap()
        .unwrap()
        .expect("a socket on the sender's port");
    let attacker = spawn_in_netns(&wns, "attacker", move || -> std::io::Result<u64> {
        let mut see = AfPacketPort::open(&wb, "see")?;
        let mut out = AfPacketPort::open(&wa, "inject")?;
        let mut buf = vec![0u8; 2048];
        let mut injected = 0u64;
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut rand = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng as u32
        };
        // (fraction of the transfer acknowledged, spoof number)
        let mut stage = 0;
        let mut ack0: Option<u32> = None;
        let deadline = Instant::now() + Duration::from_secs(100);
        while inject && stage < 5 && Instant::now() < deadline {
            let Some(m) = see.recv(ackshape_core::Time(0), &mut buf)? else {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            };
            let fr = &buf[..m.len];
            let Ok(p) = ackshape_wire::Packet::parse_frame(fr) else { continue };
            let Some(t) = p.packet.tcp() else { continue };
            if t.sport != 5001 || !t.flags.contains(ackshape_wire::TcpFlags::ACK) {
                continue;
            }
            let a0 = *ack0.get_or_insert(t.ack.0);
            let done = t.ack.0.wrapping_sub(a0) as f64 / bytes as f64;
            if done < 0.1 + 0.15 * stage as f64 {
                continue;
            }
            let (seq, ack) = (t.seq.0, t.ack.0);
            let frames: Vec<Vec<u8>> = match stage {
                // A SYN-ACK with random numbers, MSS 88 and window scale 14.
                0 => vec![forge(fr, rand(), rand(), 0x12, 65535, &[2, 4, 0, 88, 1, 3, 3, 14], &[])],
                // Pure ACKs far ahead of anything the sender sent.
                1 => vec![forge(fr, seq, ack.wrapping_add(1 << 30), 0x10, 65535, &[], &[])],
                2 => vec![forge(fr, seq, ack.wrapping_add((1 << 31) - 1), 0x10, 65535, &[], &[])],
                // An RST with a random sequence number.
                3 => vec![forge(fr, rand(), 0, 0x04, 0, &[], &[])],
                // Data from the receiver's side with the real tuple and random numbers.
                _ => (0..10).map(|_| forge(fr, rand(), rand(), 0x18, 65535, &[], &[0x42; 200])).collect(),
            };
            for f in frames {
                for g in [bad_checksum(&f), f] {
                    out.send(ackshape_core::Time(0), &g)?;
                    injected += 1;
                }
            }
            // From the LAN side: the sender's next segment, with a bad checksum.
            lan_out.send(ackshape_core::Time(0), &bad_checksum(&forge_reverse(fr, ack, seq, 0x18, &[0x33; 300])))?;
            injected += 1;
            stage += 1;
        }
        Ok(injected)
    })
    .unwrap();
    let s = join_within(src, Duration::from_secs(150), "tcp source").unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let r = join_within(sink, Duration::from_secs(20), "tcp sink").unwrap();
    let injected = join_within(attacker, Duration::from_secs(110), "attacker").unwrap();
    if let Some((a, b)) = floods {
        join_within(a, Duration::from_secs(60), "lan flood").unwrap();
        join_within(b, Duration::from_secs(60), "wan flood").unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let ((p_snd, d_snd), (p_rcv, d_rcv), (p_rin, _)) = (at_sender.stop(), from_rcv.stop(), at_rcv.stop());
    let g = stop(&mut rig);
    assert_eq!(s.sha256, r.sha256, "{tag}: the transfer's bytes");
    // No ACK reaching the sender acknowledges more than the receiver had sent by then.
    let rcv = read_pcap(&p_rcv);
    let snd = read_pcap(&p_snd);
    let ack_of = |f: &[u8]| {
        let p = ackshape_wire::Packet::parse_frame(f).ok()?;
        let t = p.packet.tcp()?;
        (t.flags.contains(ackshape_wire::TcpFlags::ACK) && !t.flags.contains(ackshape_wire::TcpFlags::SYN))
            .then_some(t.ack.0)
    };
    // Offsets from the sender's first sequence number: the receiver's SYN-ACK acknowledges it.
    let base = rcv
        .iter()
        .find_map(|(_, f)| {
            let p = ackshape_wire::Packet::parse_frame(f).ok()?;
            let t = p.packet.tcp()?;
            (t.flags.contains(ackshape_wire::TcpFlags::SYN) && t.flags.contains(ackshape_wire::TcpFlags::ACK))
                .then_some(t.ack.0)
        })
        .expect("the receiver's SYN-ACK captured");
    // The flow's own frames towards the sender: its addresses and ports (the malformed flood
    // carries other tuples, forwarded as they came).
    let tuple = |f: &[u8]| f.get(26..38).map(|x| x.to_vec());
    let flow = rcv.iter().find(|(_, f)| ack_of(f).is_some()).and_then(|(_, f)| tuple(f)).unwrap();
    let mut highest: Vec<(Duration, u32)> = Vec::new();
    for (t, f) in &rcv {
        if let Some(a) = ack_of(f) {
            let off = a.wrapping_sub(base);
            if off < 1 << 31 && highest.last().is_none_or(|h| off > h.1) {
                highest.push((*t, off));
            }
        }
    }
    // An ACK the receiver never sent at all is made up; one it sent, but that the sender's capture
    // shows before the receiver's does, is counted apart (the two captures' clocks and the
    // receiver-side capture's losses under load can put a real ACK early by a few ms).
    let (mut fabricated, mut early, mut acks) = (0u64, 0u64, 0u64);
    let mut lead = Duration::ZERO;
    // Nothing the receiver can acknowledge lies beyond the transfer's bytes and its FIN.
    let top = bytes as u32 + 1;
    for (t, f) in &snd {
        if f.get(18..20) == Some(&SPOOF_ID.to_be_bytes()[..]) {
            continue; // an injected frame, forwarded as it came (its checksum is checked below)
        }
        if tuple(f).as_ref() != Some(&flow) {
            continue;
        }
        let Some(a) = ack_of(f) else { continue };
        acks += 1;
        let off = a.wrapping_sub(base);
        let sent = highest.iter().take_while(|h| h.0 <= *t).last().map_or(0, |h| h.1);
        if off >= 1 << 31 || off > top {
            fabricated += 1;
        } else if off > sent {
            early += 1;
            let when = highest.iter().find(|h| h.1 >= off).map_or(Duration::ZERO, |h| h.0);
            lead = lead.max(when.saturating_sub(*t));
        }
    }
    // tshark: every marked frame that reached either endpoint still has its bad checksum.
    let (g1, b1) = tshark_marked(&p_snd);
    let (g2, b2) = tshark_marked(&p_rin);
    let goodput = bytes as f64 * 8.0 / secs;
    let bulk = &g.pipeline["stats"]["classes"]["bulk"];
    eprintln!(
        "spoofs {tag} ({mechanism}, loss {loss}, flood {with_flood}, spoofs {inject}): {} MB in {secs:.1} s = {:.1} Mbit/s, sha256 ok; \
         injected {injected}; ACKs at the sender {acks}, beyond any the receiver sent {fabricated}, captured \
         before the receiver's {early} (by up to {lead:?}; tcpdump drops: sender {d_snd}, receiver {d_rcv}); marked frames at the \
         sender valid/bad {g1}/{b1}, at the receiver {g2}/{b2}; lan {:?}; wan bad_checksum {}; mechanism {}",
        bytes >> 20,
        goodput / 1e6,
        g.port("lan").map(|p| (p.malformed, p.bad_checksum)),
        g.port("wan").map_or(0, |p| p.bad_checksum),
        bulk["mechanism_stats"]["outbound"]
    );
    if std::env::var("ACKS_KEEP").is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("captures kept in {}", dir.display());
    }
    SpoofRun {
        goodput_bps: goodput,
        injected,
        fabricated_acks: fabricated,
        early_acks: (early, if d_snd + d_rcv == 0 { lead } else { Duration::ZERO }),
        acks_at_sender: acks,
        laundered: (g1 + g2, b1 + b2),
    }
}

fn spoofs(mechanism: &str) {
    let tools = ["tcpdump", "tshark"].iter().all(|t| std::process::Command::new(t).arg("--version").output().is_ok());
    if !tools {
        testbed::skip(&format!("spoofs_{mechanism}"), "tcpdump or tshark missing (apt-get install tcpdump tshark)");
        return;
    }
    let tag = if mechanism == "tcr" { "t" } else { "p" };
    for (i, (loss, with_flood)) in [(0.0, true), (0.01, false)].into_iter().enumerate() {
        let r = spoof_run(&format!("{tag}{i}"), mechanism, loss, with_flood, true);
        assert_eq!(r.injected, 2 * (4 + 10) + 5, "every spoof was injected (the attacker saw the transfer through)");
        assert_eq!(r.fabricated_acks, 0, "ACKs beyond the receiver's at the sender (of {})", r.acks_at_sender);
        // A real ACK takes at least the wanem's 5 ms from the receiver to the sender: one the
        // sender's capture shows that much before the receiver's capture was not the receiver's
        // (checked when neither capture lost frames).
        assert!(r.early_acks.1 < Duration::from_millis(5), "ACKs ahead of the receiver's: {:?}", r.early_acks);
        assert_eq!(r.laundered.0, 0, "a frame that came with a bad checksum left with a valid one");
        assert!(r.laundered.1 > 0, "the marked frames were captured");
        // The class rate (of frames), 1448 of each 1514 bytes TCP payload; without loss
        // the transfer runs at it (the average includes slow start).
        if loss == 0.0 {
            assert!(
                r.goodput_bps > 0.8 * CLASS_MBPS as f64 * 1e6 * 1448.0 / 1514.0,
                "{:.1} Mbit/s",
                r.goodput_bps / 1e6
            );
        } else {
            // With loss the sender's congestion control, not the class, sets the rate: the
            // reference is a control run on the same path with the same loss and no spoofs. The
            // spoofs (a handful of frames) must not cost the transfer more than 20 %: the margin
            // covers the run-to-run spread of a loss-limited transfer on a shared machine (the
            // loss pattern is seeded, the timing is not); a transfer the spoofs broke runs far
            // below it or not at all (the probe's hung at 8.9 of 100 MB).
            let c = spoof_run(&format!("{tag}{i}c"), mechanism, loss, false, false);
            assert_eq!(c.injected, 0);
            eprintln!(
                "spoofs {tag}{i}: {:.1} Mbit/s with the spoofs, {:.1} Mbit/s in the control run ({:.0}%)",
                r.goodput_bps / 1e6,
                c.goodput_bps / 1e6,
                100.0 * r.goodput_bps / c.goodput_bps
            );
            assert!(
                r.goodput_bps >= 0.8 * c.goodput_bps,
                "{:.1} Mbit/s with the spoofs, {:.1} Mbit/s without",
                r.goodput_bps / 1e6,
                c.goodput_bps / 1e6
            );
        }
        assert!(
            r.goodput_bps < 1.05 * CLASS_MBPS as f64 * 1e6,
            "{:.1} Mbit/s above the class rate",
            r.goodput_bps / 1e6
        );
    }
}

/// Done-when 1 for TCR: the probe's spoofs leave a TCR-shaped 100 MB transfer intact and at its
/// class rate, the gateway never sends the sender an ACK beyond the receiver's, and no frame
/// leaves with a valid checksum that came with a bad one.
#[test]
fn tcr_transfer_survives_the_spoofs() {
    let Some(_l) = live("tcr_transfer_survives_the_spoofs") else { return };
    spoofs("tcr");
}

/// The same for PostACK.
#[test]
fn postack_transfer_survives_the_spoofs() {
    let Some(_l) = live("postack_transfer_survives_the_spoofs") else { return };
    spoofs("postack");
}
