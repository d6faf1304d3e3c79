//! `ackshape tap` as a process beside a live router (namespaces `acks-tpk…`): it shapes while it
//! runs, and when it is killed (SIGKILL) the transfer it was shaping carries on unaffected — the
//! tap is never in the forwarded path. Needs root, `ip`, `ethtool`, `tc`; prints `SKIPPED:` and
//! returns otherwise. Also: bad arguments and policies are rejected with the key (no root needed).

use ackshape_live::tap::{TapBed, TapTopologySpec};
use ackshape_live::testbed::{self, spawn_in_netns};
use ackshape_live::traffic::{self, SinkReport, SourceReport};
use ackshape_live::wanem::LinkSpec;
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_ackshape")
}

#[test]
fn bad_tap_arguments_and_policies_name_the_problem() {
    let dir = std::env::temp_dir().join(format!("acks-tp-args-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("p.toml");
    std::fs::write(&p, "technique = \"triple-ack\"\ntarget = \"lots\"\n").unwrap();
    let run = |args: &[&str]| Command::new(exe()).arg("tap").args(args).output().unwrap();
    let o = run(&["--mirror", "a", "--inject", "b", "--policy", p.to_str().unwrap(), "--router-mac", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--router-mac"), "{}", String::from_utf8_lossy(&o.stderr));
    let o =
        run(&["--mirror", "a", "--inject", "b", "--policy", p.to_str().unwrap(), "--router-mac", "02:00:00:00:00:01"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("p.toml") && e.contains("key `target`") && e.contains("rate"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

type Running = (
    JoinHandle<std::io::Result<std::io::Result<SourceReport>>>,
    JoinHandle<std::io::Result<std::io::Result<SinkReport>>>,
);

fn start(bed: &TapBed, secs: f64, port: u16) -> Running {
    let t = &bed.topo;
    let dst = SocketAddr::from((t.receiver_addr, port));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = spawn_in_netns(&t.ns_receiver, "sink", move || {
        let l = TcpListener::bind(dst)?;
        let _ = tx.send(());
        traffic::tcp_sink(&l, 32 << 10)
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5)).expect("sink did not start");
    let src = spawn_in_netns(&t.ns_sender, "source", move || {
        traffic::tcp_source_until(dst, None, Some(Duration::from_secs_f64(secs)), 4, Some("reno"))
    })
    .unwrap();
    (src, sink)
}

fn finish(r: Running) -> (SourceReport, SinkReport) {
    (r.0.join().unwrap().unwrap().unwrap(), r.1.join().unwrap().unwrap().unwrap())
}

fn goodput_between(r: &SinkReport, from_s: f64, to_s: f64) -> f64 {
    let at = |t: f64| r.marks.iter().rev().find(|(_, d)| d.as_secs_f64() <= t).copied().unwrap_or((0, Duration::ZERO));
    let (a, b) = (at(from_s), at(to_s));
    let dt = b.1.as_secs_f64() - a.1.as_secs_f64();
    if dt <= 0.0 {
        0.0
    } else {
        (b.0 - a.0) as f64 * 8.0 / dt
    }
}

/// Kills the tap process on drop (also when the test panics).
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn transfer_continues_unaffected_when_the_tap_process_is_killed() {
    if testbed::skip_unless_live("tap kill") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("acks-tp-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut spec = TapTopologySpec::new("acks-tpk");
    let ab = LinkSpec { delay_ns: 10_000_000, rate_bps: Some(10_000_000), ..Default::default() };
    spec.wanem = Some((ab, LinkSpec { delay_ns: 10_000_000, ..Default::default() }));
    // Senders the technique works on (see docs/reproduction.md, P4 live).
    spec.sender_sysctls =
        [("net/ipv4/tcp_sack", "0"), ("net/ipv4/tcp_timestamps", "0"), ("net/ipv4/tcp_max_reordering", "3")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    let bed = TapBed::up(&spec).unwrap_or_else(|e| panic!("tap testbed: {e}"));
    let t = bed.topo.clone();
    // Unshaped reference.
    let (_, r0) = finish(start(&bed, 6.0, 5011));
    let g0 = goodput_between(&r0, 2.0, 6.0);
    // The tap as a process, duplicating every 3rd ACK.
    let pol = dir.join("tap.toml");
    std::fs::write(&pol, "technique = \"triple-ack\"\nevery = 3\n").unwrap();
    let stats = dir.join("stats.jsonl");
    let child = Command::new("ip")
        .args(["netns", "exec", &t.ns_tap, exe(), "tap", "--mirror", &t.if_tap_mirror, "--inject", &t.if_tap_inject])
        .args(["--router-mac", &t.router_inject_mac, "--policy"])
        .arg(&pol)
        .arg("--stats-json")
        .arg(&stats)
        .args(["--stats-interval", "200ms"])
        .spawn()
        .unwrap();
    let mut child = Child(child);
    // Wait until it runs (its first stats line).
    let t0 = Instant::now();
    while std::fs::read_to_string(&stats).map(|s| s.is_empty()).unwrap_or(true) {
        assert!(t0.elapsed() < Duration::from_secs(10), "the tap did not start");
        if let Some(st) = child.0.try_wait().unwrap() {
            panic!("the tap exited: {st}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    let run = start(&bed, 14.0, 5012);
    std::thread::sleep(Duration::from_secs(5));
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let killed_at = t0.elapsed().as_secs_f64();
    let last: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&stats).unwrap().lines().last().unwrap()).unwrap();
    let (s, r) = finish(run);
    assert_eq!(r.sha256, s.sha256, "the transfer is intact");
    let shaped = goodput_between(&r, 1.0, killed_at - 0.5);
    let after = goodput_between(&r, killed_at + 3.0, 13.5);
    eprintln!(
        "unshaped {:.2} Mbit/s; with the tap {:.2}; after kill -9 at {killed_at:.1} s {:.2}; tap had injected {}",
        g0 / 1e6,
        shaped / 1e6,
        after / 1e6,
        last["tap"]["injections"]
    );
    assert!(last["tap"]["injections"].as_u64().unwrap() > 20, "the tap was shaping: {last}");
    assert!(shaped < 0.6 * g0, "the tap slowed the flow while it ran: {shaped} vs {g0}");
    assert!(after > 0.85 * g0, "after the kill the flow is back to its unshaped rate: {after} vs {g0}");
    let _ = std::fs::remove_dir_all(&dir);
}
