//! Live tests of core middleboxes running in the gateway (`MiddleboxPipeline`): real Linux TCP
//! through a `qdisc-link` box, and a box that rewrites and synthesises ACKs, with a capture at the
//! sender checked by tshark. Namespaces are created by the tests (prefix `acks-m…`) and removed
//! even when a test panics. Without root, `ip` and `ethtool` (and tshark/tcpdump for the capture
//! test) the tests print `SKIPPED: <reason>` to stderr and return.

use ackshape_core::middlebox::{Dir, Emit, Middlebox};
use ackshape_core::queue::{DropTail, Limit};
use ackshape_core::shape::qlink::{QdiscLink, Shaper};
use ackshape_core::stats::BoxStats;
use ackshape_core::time::Time;
use ackshape_live::mbpipe::MiddleboxPipeline;
use ackshape_live::rig::{Rig, RigSpec};
use ackshape_live::stats::Snapshot;
use ackshape_live::testbed::{self, spawn_in_netns, Testbed};
use ackshape_live::traffic::{self, SinkReport, SourceReport};
use ackshape_live::wanem::LinkSpec;
use ackshape_wire::{Packet, SeqNum};
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

static LIVE: Mutex<()> = Mutex::new(());

fn skipped(test: &str, reason: &str) {
    testbed::skip(test, reason);
}

/// Take the live lock, or None (after printing SKIPPED) when live tests cannot run here.
fn live(test: &str) -> Option<MutexGuard<'static, ()>> {
    if let Some(reason) = testbed::preflight() {
        skipped(test, &reason);
        return None;
    }
    Some(LIVE.lock().unwrap_or_else(|e| e.into_inner()))
}

fn qlink(rate_bps: u64, queue: usize) -> QdiscLink {
    let s = Shaper::new(rate_bps, Box::new(DropTail::new(Limit::Packets(queue))));
    QdiscLink::new(Some(s), None, 14)
}

fn rig(prefix: &str, mb: Box<dyn Middlebox + Send>, kind: &str, wanem: Option<(LinkSpec, LinkSpec)>) -> Rig {
    let mut spec = RigSpec::new(prefix);
    spec.topology.wanem = wanem.is_some();
    if let Some(l) = wanem {
        spec.wanem = l;
    }
    spec.gateway.stats_interval = Duration::from_millis(200);
    spec.pipeline = Box::new(MiddleboxPipeline::new(mb, kind));
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

/// A TCP transfer sender → receiver through the rig.
fn transfer(tb: &Testbed, bytes: u64, limit: Duration) -> (SourceReport, SinkReport) {
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
    let s = join_within(src, limit, "tcp source").unwrap();
    let r = join_within(sink, Duration::from_secs(10), "tcp sink").unwrap();
    (s, r)
}

#[test]
fn qdisc_link_box_in_the_gateway_shapes_real_tcp_to_its_rate() {
    let Some(_l) = live("qdisc_link_box_in_the_gateway") else { return };
    let path = LinkSpec { delay_ns: 5_000_000, ..Default::default() };
    let mut rig = rig("acks-mq", Box::new(qlink(10_000_000, 100)), "qdisc-link", Some((path.clone(), path)));
    let (s, r) = transfer(&rig.tb, 7 << 20, Duration::from_secs(30));
    let g = stop(&mut rig);
    assert_eq!(s.sha256, r.sha256, "payload intact through the box");
    // The box charges the Ethernet frame (IP + 14 bytes): 1448 payload bytes per 1514.
    let expected = 10e6 * 1448.0 / 1514.0;
    let got = r.goodput_bps_after(1 << 20);
    let p = &g.pipeline;
    eprintln!(
        "qdisc-link box 10 Mbit/s in the gateway: goodput {:.3} Mbit/s vs header-adjusted {:.3} ({:+.2}%), \
         {} retransmits; held-frame timing {:?}; box {}",
        got / 1e6,
        expected / 1e6,
        (got / expected - 1.0) * 100.0,
        s.retransmits.unwrap_or(0),
        g.hold_timing,
        p
    );
    assert!((got / expected - 1.0).abs() <= 0.05, "goodput {got} vs {expected}");
    let st = &p["stats"]["a_to_b"];
    let sent = st["sent"].as_u64().unwrap();
    assert!(sent > (7 << 20) / 1514, "{st}");
    assert_eq!(p["kind"], "qdisc-link");
    // Every frame left as it came (no rewriting box): original bytes, none rebuilt.
    assert_eq!(p["frames"]["rebuilt"], 0, "{p}");
    assert!(p["frames"]["sent_original"].as_u64().unwrap() >= sent);
    // The box released its packets from timers: their lateness was recorded.
    assert!(g.hold_timing.samples > sent / 2, "{:?}", g.hold_timing);
    assert!(st["data_queue_max_pkts"].as_u64().unwrap() > 10, "TCP filled the box's queue: {st}");
}

/// Paper-style ACK handling for the capture test: on each pure ACK toward the sender, clamp the
/// window by one unit (a patch in place) and, when the ACK covers more than two segments, first
/// send a new ACK for half of the advance (synthesised: written anew). Data passes through a
/// qdisc-link at `rate`.
struct AckRewriter {
    q: QdiscLink,
    last_ack: Option<SeqNum>,
    split: u64,
}

impl Middlebox for AckRewriter {
    fn on_packet(&mut self, now: Time, dir: Dir, mut pkt: Packet, out: &mut Emit) {
        if dir == Dir::BToA && pkt.is_pure_ack() {
            let ack = pkt.tcp().unwrap().ack;
            if let Some(prev) = self.last_ack {
                let adv = ack - prev;
                if adv > 2 * 1448 {
                    let adv = adv as u32;
                    let mut mid = pkt.clone();
                    let t = mid.tcp_mut().unwrap();
                    t.ack = prev + adv / 2;
                    mid.ip.id ^= 0x8000; // not the original any more: written anew
                    out.push((dir, mid));
                    self.split += 1;
                }
            }
            self.last_ack = Some(ack);
            let t = pkt.tcp_mut().unwrap();
            t.window = t.window.saturating_sub(1).max(1);
            out.push((dir, pkt));
            return;
        }
        self.q.on_packet(now, dir, pkt, out);
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.q.poll_timeout()
    }
    fn on_timeout(&mut self, now: Time, out: &mut Emit) {
        self.q.on_timeout(now, out)
    }
    fn stats(&self) -> BoxStats {
        BoxStats::Named([("split_acks".into(), BoxStats::Count(self.split)), ("qlink".into(), self.q.stats())].into())
    }
}

fn tool(prog: &str) -> bool {
    Command::new(prog).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn transfer_through_a_rewriting_box_keeps_sha256_and_valid_checksums_at_the_sender() {
    let Some(_l) = live("rewriting_box") else { return };
    if !tool("tcpdump") || !tool("tshark") {
        skipped("rewriting_box", "tcpdump or tshark missing (apt-get install tcpdump tshark)");
        return;
    }
    let mb = AckRewriter { q: qlink(500_000_000, 1000), last_ack: None, split: 0 };
    let mut rig = rig("acks-mc", Box::new(mb), "ack-rewriter", None);
    let tb = rig.tb.tb.clone();
    let dir = std::env::temp_dir().join(format!("acks-mc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("sender-in.pcap");
    // Capture what reaches the sender (the ACKs the box patched or wrote), headers and all.
    let mut dump = Command::new("ip")
        .args(["netns", "exec", &tb.ns_sender, "tcpdump", "-i", &tb.if_sender, "-Q", "in", "-U", "-n", "-w"])
        .arg(&pcap)
        .args(["tcp and src host", &tb.receiver_addr.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tcpdump");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    // tcpdump says "listening on …" once it captures.
    let mut err = BufReader::new(dump.stderr.take().unwrap());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap_or(0) > 0 && !line.contains("listening on") {
        line.clear();
    }
    let mut dump = Kill(dump);
    let mb = std::env::var("ACKS_TRANSFER_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(200u64);
    let t0 = Instant::now();
    let (s, r) = transfer(&tb, mb << 20, Duration::from_secs(120));
    let secs = t0.elapsed().as_secs_f64();
    let g = stop(&mut rig);
    // SIGINT lets tcpdump flush; then wait for it.
    let _ = Command::new("kill").args(["-INT", &dump.0.id().to_string()]).status();
    let _ = dump.0.wait();
    assert_eq!(s.bytes, r.bytes);
    assert_eq!(s.sha256, r.sha256, "payload changed in transit");
    let p = &g.pipeline;
    let f = &p["frames"];
    let (patched, rebuilt) = (f["patched"].as_u64().unwrap(), f["rebuilt"].as_u64().unwrap());
    // tshark validates the IPv4 and TCP checksums of every captured frame.
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(&pcap)
        .args(["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE", "-T", "fields"])
        .args(["-e", "tcp.checksum.status", "-e", "ip.checksum.status", "-e", "frame.number", "-e", "tcp.flags"])
        .args(["-e", "tcp.ack", "-e", "tcp.len", "-e", "ip.len", "-e", "frame.len", "-e", "_ws.expert"])
        .output()
        .expect("tshark");
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut good, mut bad, mut zero_alias) = (0u64, 0u64, 0u64);
    let mut bad_lines = Vec::new();
    for l in text.lines() {
        let v: Vec<&str> = l.split('\t').collect();
        if v.len() >= 2 && v[..2].iter().all(|x| *x == "1") {
            good += 1;
        } else if v.len() >= 2 && v[1] == "1" && l.contains("TCP Checksum 0xffff instead of 0x0000") {
            // One's complement's other zero (Linux's skb_checksum_help writes it): valid by
            // RFC 1071's check, which tshark flags with a pointer to RFC 1624.
            good += 1;
            zero_alias += 1;
        } else {
            bad += 1;
            bad_lines.push(l.to_string());
        }
    }
    if bad > 0 {
        eprintln!("frames not valid (tcp status, ip status, frame, flags, ack, tcp len, ip len, frame len, expert): {bad_lines:#?}; pcap kept at {}", pcap.display());
    }
    eprintln!(
        "rewriting box: {mb} MB in {secs:.2} s ({:.0} Mbit/s), sha256 ok; box patched {patched} and wrote {rebuilt} \
         frames (split ACKs {}); capture at the sender: {good} frames with valid IP+TCP checksums ({zero_alias} of them a TCP checksum 0 written as 0xffff), {bad} not; \
         held-frame timing {:?}",
        (mb << 20) as f64 * 8.0 / secs / 1e6,
        p["stats"]["split_acks"],
        g.hold_timing
    );
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(bad, 0, "frames with bad checksums at the sender");
    assert!(patched > 1000 && rebuilt > 100, "{f}");
    // Most of what the box patched or wrote was captured (tcpdump may drop a few under load).
    assert!(good as f64 >= 0.9 * (patched + rebuilt) as f64, "captured {good} of {}", patched + rebuilt);
    let _ = std::fs::remove_dir_all(&dir);
}
