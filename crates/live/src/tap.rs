//! The live third-party tap (paper 004): `ackshape tap --mirror IF --inject IF --policy P.toml`.
//!
//! ```text
//!  sender ns ──── router ns ───────────────────── (wanem ns) ──── receiver ns
//!  PFX-s0          PFX-r0 | PFX-r1 ─ tc mirred ─┐   PFX-w0|PFX-w1   PFX-d0
//!                  PFX-ri (inject in)           │
//!                     │                         │ (every frame in and out of PFX-r1)
//!                  PFX-ti ── tap ns ── PFX-tm ──┘
//!                  (inject out)        (mirror in)
//! ```
//!
//! The router forwards on its own; a `tc … action mirred egress mirror` filter on its forwarding
//! interface (both directions) copies every frame to a veth into the tap's namespace. The tap
//! reads those copies from an AF_PACKET socket on the mirror port, runs the sans-IO
//! [`ackshape_core::shape::tap::Tap`] on them (the same code as the simulator's
//! `kind = "tap"`), and sends what it injects through a second AF_PACKET port into one of the
//! router's interfaces; the router forwards the injected ACKs toward the sender like any packet.
//! The tap never sits in the forwarded path: if it stops, nothing else changes.
//!
//! An injected frame is the mirrored frame's IP packet, byte for byte (options, IP id, TTL, all
//! of it), behind a new Ethernet header (the inject port's MAC → `router_mac`); for zero-window
//! duplicates the window field is patched in place with an RFC 1624 checksum update. A copy the
//! kernel handed over with a partial checksum (sender offloads on) gets its TCP checksum
//! recomputed. Frames that do not parse are counted, never a panic.
//!
//! [`TapTopology`] builds the namespaces above (prefix `acks-…`), with the tc mirror, offloads
//! off, forwarding on, reverse-path filtering off on the router (injected ACKs arrive from the
//! "wrong" side), and optional per-namespace sysctls for the sender (`net.ipv4.tcp_sack`, …).

use crate::classify::{classify, FrameClass};
use crate::clock::{Clock, TimerQueue};
use crate::engine::{Control, SchedSpec};
use crate::gateway::{check_port, install_signal_handlers, GatewayError};
use crate::port::{AfPacketPort, FrameBatch, LinkWatch, PcapPort, Port};
use crate::sys;
use crate::testbed::{self, spawn_in_netns, TestbedError};
use crate::wanem::{self, LinkSpec, WanemConfig};
use ackshape_core::middlebox::{Dir, Emit, Middlebox};
use ackshape_core::shape::tap::{Tap, TapSpec};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::checksum::{finish, pseudo_header_sum, sum_bytes};
use ackshape_wire::{Packet, ParsedFrame, TcpFrameMut};
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const BUF_LEN: usize = 16_384;
const BATCH: usize = 64;

/// Tap settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TapConfig {
    /// Interface that receives the mirrored copies.
    pub mirror: String,
    /// Interface the injected frames leave by (toward the router).
    pub inject: String,
    /// Policy file ([`TapSpec`] TOML, see docs/policy.md). Re-read on SIGHUP.
    pub policy: PathBuf,
    /// Destination MAC of injected frames: the router's interface at the other end of `inject`.
    pub router_mac: [u8; 6],
    /// Extra delay before each injection (the router–shaper delay of P4-S4.2b). Default 0.
    pub delay: Duration,
    /// Append one JSON line of stats every `stats_interval` here.
    pub stats_json: Option<PathBuf>,
    pub stats_interval: Duration,
    /// Write `mirror.pcap` (copies received) and `inject.pcap` (frames sent) here.
    pub pcap_dir: Option<PathBuf>,
    /// Skip the start-up offload check of the mirror port.
    pub allow_offloads: bool,
    /// SCHED_FIFO priority of the tap thread (tighter reaction under CPU contention).
    pub realtime_priority: Option<i32>,
    /// How the tap thread is scheduled (nice, EEVDF slice, CPU; as the gateway's engine). Its
    /// reaction time decides whether injections beat the next true ACK (P4-S4.2b).
    pub sched: SchedSpec,
}

impl TapConfig {
    pub fn new(mirror: &str, inject: &str, policy: &Path, router_mac: [u8; 6]) -> TapConfig {
        TapConfig {
            mirror: mirror.into(),
            inject: inject.into(),
            policy: policy.into(),
            router_mac,
            delay: Duration::ZERO,
            stats_json: None,
            stats_interval: Duration::from_secs(1),
            pcap_dir: None,
            allow_offloads: false,
            realtime_priority: None,
            sched: SchedSpec::default(),
        }
    }
}

/// Why the tap could not start.
#[derive(Debug, thiserror::Error)]
pub enum TapError {
    #[error("reading policy {path}: {source}")]
    PolicyIo { path: String, source: std::io::Error },
    #[error("policy {path}: key `{key}`: {msg}")]
    Policy { path: String, key: String, msg: String },
    #[error(transparent)]
    Port(#[from] GatewayError),
    #[error("mirror and inject must be different interfaces (both are {0})")]
    SamePort(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Parse a MAC address `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    let bad = || format!("expected a MAC address like 02:00:00:00:00:01, got {s:?}");
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut m = [0u8; 6];
    for (d, p) in m.iter_mut().zip(parts) {
        if p.len() != 2 {
            return Err(bad());
        }
        *d = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(m)
}

pub fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// What `ackshape validate --tap` prints for a tap policy loaded from `file`: its rules in order,
/// each with its technique and how often or how hard it acts.
pub fn policy_summary(spec: &TapSpec, file: &str) -> String {
    use std::fmt::Write;
    let mut s = format!("{file}: valid tap policy, {} rule(s), first match wins:\n", spec.rule.len());
    for (i, r) in spec.rule.iter().enumerate() {
        let technique = serde_json::to_value(r.technique).ok().and_then(|v| v.as_str().map(String::from));
        let how = match (r.target, r.every) {
            (Some(t), _) => format!("hold {}", ackshape_core::units::Rate(t)),
            (None, Some(f)) => format!("every {f} ACKs"),
            (None, None) => "default frequency".into(),
        };
        let name = r.name.clone().unwrap_or_else(|| format!("rule-{i}"));
        let _ = writeln!(s, "  {name}: {}, {how}", technique.unwrap_or_default());
    }
    s
}

/// Load and validate a tap policy file; errors name the file and the key.
pub fn load_policy(path: &Path) -> Result<TapSpec, TapError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| TapError::PolicyIo { path: path.display().to_string(), source })?;
    ackshape_format::tap::from_toml(&text).map_err(|(key, msg)| TapError::Policy {
        path: path.display().to_string(),
        key,
        msg,
    })
}

/// Counters of the live tap (its [`Tap`]'s own are under `tap` in the stats).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct TapCounters {
    /// Copies read from the mirror port.
    pub mirror_rx_packets: u64,
    pub mirror_rx_bytes: u64,
    pub tcp: u64,
    pub non_tcp: u64,
    pub non_ip: u64,
    /// Frames that did not parse (counted and ignored).
    pub malformed: u64,
    /// Frames longer than the receive buffer (ignored).
    pub truncated: u64,
    /// Copies with a partial checksum (TP_STATUS_CSUMNOTREADY); their injected duplicates get
    /// the TCP checksum recomputed.
    pub csum_not_ready: u64,
    /// TCP copies whose IPv4 header or TCP checksum is wrong: ignored (never shown to the tap,
    /// never duplicated), as their endpoint discards them.
    pub bad_checksum: u64,
    pub mirror_kernel_drops: u64,
    /// Frames sent on the inject port, and send failures.
    pub inject_tx_packets: u64,
    pub inject_tx_bytes: u64,
    pub inject_tx_errors: u64,
    /// Injected frames whose window was patched (zero-window), whose checksum was recomputed,
    /// and that had no mirrored frame to copy (serialised anew).
    pub window_patched: u64,
    pub checksum_recomputed: u64,
    pub rebuilt: u64,
    /// Frames read (and ignored) on the inject port.
    pub inject_rx_ignored: u64,
    /// Injections waiting for their delay now; discarded at exit.
    pub held_now: u64,
    pub discarded_at_exit: u64,
    pub policy_reloads: u64,
    pub policy_reload_errors: u64,
}

/// Stop/reload flags and the latest stats (the same JSON object as each `--stats-json` line).
#[derive(Clone, Debug, Default)]
pub struct TapControl {
    pub ctl: Control,
    pub stats: Arc<Mutex<serde_json::Value>>,
}

impl TapControl {
    pub fn new() -> TapControl {
        TapControl { ctl: Control::new(), stats: Arc::new(Mutex::new(serde_json::Value::Null)) }
    }
    pub fn stats(&self) -> serde_json::Value {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Recompute the TCP checksum of the IPv4/IPv6 packet at `ip..end` of `f` (TCP at `l4`).
fn recompute_tcp_checksum(f: &mut [u8], ip: usize, l4: usize, end: usize, pkt: &Packet) {
    if end > f.len() || l4 + 18 > end {
        return;
    }
    f[l4 + 16] = 0;
    f[l4 + 17] = 0;
    let s = pseudo_header_sum(pkt.ip.src, pkt.ip.dst, 6, (end - l4) as u32);
    let c = finish(sum_bytes(s, &f[l4..end]));
    f[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
    let _ = ip;
}

/// The frame to inject for `p`, a packet the tap emitted while handling the mirrored frame
/// `frame` (parsed as `pf`): that frame's IP packet behind our Ethernet header, with the window
/// patched if `p`'s differs. `None` if `p` is not a copy of that frame (then it is serialised).
fn injected_frame(
    frame: &[u8],
    pf: &ParsedFrame,
    csum_not_ready: bool,
    p: &Packet,
    macs: ([u8; 6], [u8; 6]),
    c: &mut TapCounters,
) -> Vec<u8> {
    let (src, dst) = macs;
    let same_but_window = {
        let mut q = p.clone();
        if let (Some(a), Some(b)) = (q.tcp_mut(), pf.packet.tcp()) {
            a.window = b.window;
        }
        q.payload = None;
        let mut o = pf.packet.clone();
        o.payload = None;
        q == o
    };
    if !same_but_window || pf.ip_end > frame.len() || pf.ip_offset >= pf.ip_end {
        c.rebuilt += 1;
        return p.to_frame(src, dst);
    }
    let ip = &frame[pf.ip_offset..pf.ip_end];
    let mut f = Vec::with_capacity(14 + ip.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&pf.ethertype.to_be_bytes());
    f.extend_from_slice(ip);
    let l4 = 14 + (pf.l4_offset - pf.ip_offset);
    let end = f.len();
    if csum_not_ready {
        recompute_tcp_checksum(&mut f, 14, l4, end, &pf.packet);
        c.checksum_recomputed += 1;
    }
    let (w_new, w_old) = (p.tcp().map(|t| t.window), pf.packet.tcp().map(|t| t.window));
    if w_new != w_old {
        if let (Some(w), Ok(mut v)) = (w_new, TcpFrameMut::from_offsets(&mut f, 14, l4)) {
            v.set_window(w);
            c.window_patched += 1;
        }
    }
    f
}

/// The tap's work on one mirrored copy, without I/O (what [`run_ports`] does with each frame it
/// reads; the `tap_frames` fuzz target drives it too): classify it (counted in `c`), show a TCP
/// segment to `tap`, and hand each frame to inject for it to `inject` (`macs`: the inject port's
/// MAC and the router's). `emit` is scratch space. Never panics on input.
#[allow(clippy::too_many_arguments)]
pub fn on_mirrored_frame(
    tap: &mut Tap,
    now: Time,
    frame: &[u8],
    csum_not_ready: bool,
    macs: ([u8; 6], [u8; 6]),
    c: &mut TapCounters,
    emit: &mut Emit,
    mut inject: impl FnMut(Vec<u8>),
) {
    let pf = match classify(frame) {
        FrameClass::Tcp(pf) => {
            c.tcp += 1;
            // Verify before learning (a partial checksum is the known offload case).
            if !csum_not_ready && ackshape_wire::verify_parsed(frame, &pf).is_err() {
                c.bad_checksum += 1;
                return;
            }
            pf
        }
        FrameClass::NonTcp { .. } => {
            c.non_tcp += 1;
            return;
        }
        FrameClass::NonIp { .. } => {
            c.non_ip += 1;
            return;
        }
        FrameClass::Malformed(..) => {
            c.malformed += 1;
            return;
        }
    };
    emit.clear();
    tap.on_packet(now, Dir::AToB, pf.packet.clone(), emit);
    for (_, p) in emit.drain(..) {
        inject(injected_frame(frame, &pf, csum_not_ready, &p, macs, c));
    }
}

/// The tap's timer, without I/O: run `tap`'s timeout at `now` and append the frames it injects
/// (serialised anew: a timer has no mirrored frame to copy) to `out`.
pub fn on_tap_timeout(
    tap: &mut Tap,
    now: Time,
    macs: ([u8; 6], [u8; 6]),
    c: &mut TapCounters,
    emit: &mut Emit,
    out: &mut Vec<Vec<u8>>,
) {
    emit.clear();
    tap.on_timeout(now, emit);
    for (_, p) in emit.drain(..) {
        c.rebuilt += 1;
        out.push(p.to_frame(macs.0, macs.1));
    }
}

/// Open the ports and run until SIGINT/SIGTERM (the `ackshape tap` entry point).
pub fn run(cfg: TapConfig) -> Result<serde_json::Value, TapError> {
    let tc = TapControl::new();
    install_signal_handlers(&tc.ctl)?;
    run_with(cfg, &tc)
}

/// Open (and check) the two AF_PACKET ports in the calling thread's namespace and run.
pub fn run_with(cfg: TapConfig, tc: &TapControl) -> Result<serde_json::Value, TapError> {
    if cfg.mirror == cfg.inject {
        return Err(TapError::SamePort(cfg.mirror.clone()));
    }
    let spec = load_policy(&cfg.policy)?;
    if !cfg.allow_offloads {
        check_port(&cfg.mirror)?;
    }
    let src_mac = sys::if_hwaddr(&cfg.inject)
        .map_err(|e| std::io::Error::new(e.kind(), format!("reading the MAC of {}: {e}", cfg.inject)))?;
    let m = AfPacketPort::open(&cfg.mirror, "mirror")?;
    let i = AfPacketPort::open(&cfg.inject, "inject")?;
    let (m, i): (Box<dyn Port>, Box<dyn Port>) = match &cfg.pcap_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            (
                Box::new(PcapPort::create(m, &d.join("mirror.pcap"))?),
                Box::new(PcapPort::create(i, &d.join("inject.pcap"))?),
            )
        }
        None => (Box::new(m), Box::new(i)),
    };
    tracing::info!(
        "tap up: mirror {}, inject {}, policy {} ({} rules); SIGHUP reloads the policy, SIGINT/SIGTERM stop",
        cfg.mirror,
        cfg.inject,
        cfg.policy.display(),
        spec.rule.len()
    );
    Ok(run_ports(m, i, spec, &cfg, src_mac, tc)?)
}

fn snapshot(clock: &Clock, c: &TapCounters, links: &LinkWatch<2>, tap: &Tap) -> serde_json::Value {
    let link = |i: usize| serde_json::json!({"link": links.state[i], "link_down_events": links.down_events[i]});
    serde_json::json!({
        "uptime_s": clock.now().as_secs_f64(),
        "counters": c,
        "ports": {"mirror": link(0), "inject": link(1)},
        "tap": serde_json::to_value(tap.stats()).unwrap_or_default(),
    })
}

/// The tap loop on already-open ports (any [`Port`], e.g. `MemPort` in tests). `src_mac` is the
/// inject port's MAC. Returns the final stats.
pub fn run_ports(
    mut mirror: Box<dyn Port>,
    mut inject: Box<dyn Port>,
    spec: TapSpec,
    cfg: &TapConfig,
    src_mac: [u8; 6],
    tc: &TapControl,
) -> std::io::Result<serde_json::Value> {
    let _ = sys::set_timer_slack_ns(1);
    let _sched = cfg.sched.apply();
    if let Some(prio) = cfg.realtime_priority {
        if let Err(e) = sys::set_realtime_fifo(prio) {
            tracing::warn!("SCHED_FIFO {prio} not available, running with normal priority: {e}");
        }
    }
    let clock = Clock::new();
    // Flow tables keyed at random (crafted tuples cannot collide in them).
    let mut tap = Tap::with_hash_key(spec, ackshape_core::hash::HashKey::random());
    let mut c = TapCounters::default();
    let mut json = match &cfg.stats_json {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| std::io::Error::new(e.kind(), format!("opening stats file {}: {e}", p.display())))?,
        )),
        None => None,
    };
    let macs = (src_mac, cfg.router_mac);
    let delay = Dur(cfg.delay.as_nanos() as u64);
    let mut batch = FrameBatch::new(BATCH, BUF_LEN);
    let mut junk = FrameBatch::new(8, BUF_LEN);
    let mut held: TimerQueue<Vec<u8>> = TimerQueue::new();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut emit = Emit::new();
    let interval = Dur(cfg.stats_interval.as_nanos().max(1_000_000) as u64);
    let mut next_stats = clock.now() + interval;
    let fd = mirror.poll_fd();
    let mut ready = [false; 1];
    // Both ports' interfaces: checked now, once per stats interval and after a receive error.
    let mut links = LinkWatch::<2>::default();
    links.check(clock.now(), [&*mirror, &*inject])?;
    let mut check_links_now = false;
    tc.ctl.running.store(true, Ordering::SeqCst);
    let send = |inject: &mut Box<dyn Port>, c: &mut TapCounters, frames: &[Vec<u8>], now: Time| {
        if frames.is_empty() {
            return;
        }
        let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
        let k = inject.send_batch(now, &refs);
        c.inject_tx_packets += k as u64;
        c.inject_tx_bytes += refs[..k].iter().map(|f| f.len() as u64).sum::<u64>();
        c.inject_tx_errors += (refs.len() - k) as u64;
    };
    let result: std::io::Result<()> = loop {
        if tc.ctl.stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        if std::mem::take(&mut check_links_now) {
            if let Err(e) = links.check(clock.now(), [&*mirror, &*inject]) {
                break Err(e);
            }
        }
        if tc.ctl.reload.swap(false, Ordering::SeqCst) {
            match load_policy(&cfg.policy) {
                Ok(s) => {
                    tap = Tap::with_hash_key(s, ackshape_core::hash::HashKey::random());
                    c.policy_reloads += 1;
                    tracing::info!("tap policy reloaded from {}", cfg.policy.display());
                }
                Err(e) => {
                    c.policy_reload_errors += 1;
                    tracing::error!("tap policy reload rejected, keeping the running policy: {e}");
                }
            }
        }
        // Due injections.
        let now = clock.now();
        out.clear();
        while let Some((_, f)) = held.pop_due(now) {
            out.push(f);
        }
        send(&mut inject, &mut c, &out, now);
        if tap.poll_timeout().is_some_and(|t| t <= now) {
            out.clear();
            on_tap_timeout(&mut tap, now, macs, &mut c, &mut emit, &mut out);
            send(&mut inject, &mut c, &out, now);
        }
        // Mirrored copies.
        let n = match mirror.recv_batch(clock.now(), &mut batch) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("recv on the mirror port: {e}");
                check_links_now = true;
                0
            }
        };
        out.clear();
        for i in 0..n {
            let (frame, meta) = batch.frame_mut(i);
            c.mirror_rx_packets += 1;
            c.mirror_rx_bytes += meta.orig_len as u64;
            if meta.truncated() {
                c.truncated += 1;
                continue;
            }
            if meta.csum_not_ready {
                c.csum_not_ready += 1;
            }
            on_mirrored_frame(&mut tap, meta.ts, frame, meta.csum_not_ready, macs, &mut c, &mut emit, |f| {
                if delay == Dur::ZERO {
                    out.push(f);
                } else {
                    held.push(meta.ts + delay, f);
                }
            });
        }
        send(&mut inject, &mut c, &out, clock.now());
        // Nothing is expected on the inject port; keep its socket buffer empty.
        if let Ok(k) = inject.recv_batch(clock.now(), &mut junk) {
            c.inject_rx_ignored += k as u64;
        }
        let now = clock.now();
        if now >= next_stats {
            next_stats = now + interval;
            if let Err(e) = links.check(now, [&*mirror, &*inject]) {
                break Err(e);
            }
            c.mirror_kernel_drops += mirror.take_kernel_drops();
            c.held_now = held.len() as u64;
            let snap = snapshot(&clock, &c, &links, &tap);
            if let Some(w) = json.as_mut() {
                let _ = writeln!(w, "{snap}");
                let _ = w.flush();
            }
            if let Ok(mut s) = tc.stats.lock() {
                *s = snap;
            }
        }
        if n > 0 {
            continue;
        }
        let mut deadline = next_stats;
        if let Some(t) = held.next_deadline() {
            deadline = deadline.min(t);
        }
        if let Some(t) = tap.poll_timeout() {
            deadline = deadline.min(t);
        }
        let mut wait = Duration::from_nanos(deadline.0.saturating_sub(now.0)).min(Duration::from_millis(100));
        if fd.is_none() {
            wait = wait.min(Duration::from_millis(1));
        }
        if wait < Duration::from_micros(50) {
            std::hint::spin_loop();
            continue;
        }
        match fd {
            Some(fd) => {
                if let Err(e) = sys::poll_readable(&[fd], Some(wait), &mut ready) {
                    break Err(e);
                }
            }
            None => std::thread::sleep(wait),
        }
    };
    c.discarded_at_exit = held.drain().count() as u64;
    c.held_now = 0;
    c.mirror_kernel_drops += mirror.take_kernel_drops();
    let snap = snapshot(&clock, &c, &links, &tap);
    if let Some(w) = json.as_mut() {
        let _ = writeln!(w, "{snap}");
        let _ = w.flush();
    }
    if let Ok(mut s) = tc.stats.lock() {
        *s = snap.clone();
    }
    tc.ctl.running.store(false, Ordering::SeqCst);
    result.map(|_| snap)
}

// ------------------------------------------------------------------ the tap testbed

/// The namespaces of the module diagram.
#[derive(Clone, Debug, PartialEq)]
pub struct TapTopologySpec {
    /// Name prefix, `acks-…`, at most 11 characters.
    pub prefix: String,
    /// A wanem between router and receiver: (router → receiver, receiver → router). None: a
    /// plain veth.
    pub wanem: Option<(LinkSpec, LinkSpec)>,
    pub wanem_seed: u64,
    /// Sysctls written in the sender's namespace, e.g. `("net/ipv4/tcp_sack", "0")`.
    pub sender_sysctls: Vec<(String, String)>,
}

impl TapTopologySpec {
    pub fn new(prefix: &str) -> TapTopologySpec {
        TapTopologySpec { prefix: prefix.into(), wanem: None, wanem_seed: 1, sender_sysctls: Vec::new() }
    }
}

/// Names and addresses of a built tap testbed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TapTopology {
    pub prefix: String,
    pub ns_sender: String,
    pub ns_router: String,
    pub ns_wanem: Option<String>,
    pub ns_receiver: String,
    pub ns_tap: String,
    /// The router's forwarding interface toward the receiver (mirrored by tc).
    pub if_router_fwd: String,
    /// The tap's mirror port and inject port (in `ns_tap`).
    pub if_tap_mirror: String,
    pub if_tap_inject: String,
    /// MAC of the router's interface facing the tap's inject port (`--router-mac`).
    pub router_inject_mac: String,
    pub sender_addr: Ipv4Addr,
    pub receiver_addr: Ipv4Addr,
}

fn in_ns(ns: &str, prog: &str, args: &[&str]) -> Result<String, TestbedError> {
    let mut a = vec!["netns", "exec", ns, prog];
    a.extend_from_slice(args);
    testbed::sh("ip", &a)
}

fn mac(prefix: &str, host: u8) -> String {
    let h = prefix.bytes().fold(7u32, |h, b| h.wrapping_mul(131).wrapping_add(b as u32));
    format!("02:{:02x}:{:02x}:{:02x}:01:{:02x}", (h >> 16) as u8, (h >> 8) as u8, h as u8, host)
}

/// Write sysctls (`net/ipv4/…` paths under /proc/sys) from a thread inside `ns`.
fn sysctls(ns: &str, kv: &[(String, String)]) -> Result<(), TestbedError> {
    let kv = kv.to_vec();
    let h = spawn_in_netns(ns, "acks-sysctl", move || -> Result<(), String> {
        for (k, v) in &kv {
            let p = format!("/proc/sys/{}", k.trim_start_matches('/').replace('.', "/"));
            std::fs::write(&p, v).map_err(|e| format!("{p} = {v}: {e}"))?;
        }
        Ok(())
    })
    .map_err(|e| TestbedError::Command { cmd: format!("sysctls in {ns}"), stderr: e.to_string() })?;
    match h.join() {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => Err(TestbedError::Command { cmd: format!("sysctl in {ns}"), stderr: e }),
        Ok(Err(e)) => Err(TestbedError::Command { cmd: format!("setns {ns}"), stderr: e.to_string() }),
        Err(_) => Err(TestbedError::Command { cmd: format!("sysctl in {ns}"), stderr: "thread panicked".into() }),
    }
}

/// Build the tap testbed (removing a leftover one with the same prefix first). On failure
/// everything built so far is removed.
pub fn topology_up(spec: &TapTopologySpec) -> Result<TapTopology, TestbedError> {
    let p = &spec.prefix;
    let ok = p.starts_with("acks-")
        && p.len() <= 11
        && p.len() > 5
        && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !ok {
        return Err(TestbedError::BadPrefix(p.clone()));
    }
    let _ = testbed::down(p);
    match build(spec) {
        Ok(t) => Ok(t),
        Err(e) => {
            let _ = testbed::down(p);
            Err(e)
        }
    }
}

fn build(spec: &TapTopologySpec) -> Result<TapTopology, TestbedError> {
    let p = &spec.prefix;
    let n = |s: &str| format!("{p}-{s}");
    let ip = |args: &[&str]| testbed::sh("ip", args);
    let t = TapTopology {
        prefix: p.clone(),
        ns_sender: n("snd"),
        ns_router: n("rt"),
        ns_wanem: spec.wanem.as_ref().map(|_| n("wan")),
        ns_receiver: n("rcv"),
        ns_tap: n("tap"),
        if_router_fwd: n("r1"),
        if_tap_mirror: n("tm"),
        if_tap_inject: n("ti"),
        router_inject_mac: mac(p, 5),
        sender_addr: Ipv4Addr::new(10, 78, 1, 1),
        receiver_addr: Ipv4Addr::new(10, 78, 2, 1),
    };
    let mut all = vec![&t.ns_sender, &t.ns_router, &t.ns_receiver, &t.ns_tap];
    if let Some(w) = &t.ns_wanem {
        all.push(w);
    }
    for ns in &all {
        ip(&["netns", "add", ns])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
    }
    let (m_s0, m_r0, m_r1, m_d0) = (mac(p, 1), mac(p, 2), mac(p, 3), mac(p, 4));
    let veth = |a: &str, ans: &str, amac: &str, b: &str, bns: &str, bmac: &str| {
        ip(&[
            "link", "add", a, "address", amac, "netns", ans, "type", "veth", "peer", "name", b, "address", bmac,
            "netns", bns,
        ])
    };
    veth(&n("s0"), &t.ns_sender, &m_s0, &n("r0"), &t.ns_router, &m_r0)?;
    match &t.ns_wanem {
        Some(w) => {
            veth(&n("r1"), &t.ns_router, &m_r1, &n("w0"), w, &mac(p, 8))?;
            veth(&n("w1"), w, &mac(p, 9), &n("d0"), &t.ns_receiver, &m_d0)?;
        }
        None => {
            veth(&n("r1"), &t.ns_router, &m_r1, &n("d0"), &t.ns_receiver, &m_d0)?;
        }
    }
    veth(&n("ri"), &t.ns_router, &t.router_inject_mac, &n("ti"), &t.ns_tap, &mac(p, 6))?;
    veth(&n("rm"), &t.ns_router, &mac(p, 7), &n("tm"), &t.ns_tap, &mac(p, 10))?;
    let mut ends: Vec<(&str, String, bool)> = vec![
        (&t.ns_sender, n("s0"), false),
        (&t.ns_router, n("r0"), false),
        (&t.ns_router, n("r1"), false),
        (&t.ns_router, n("ri"), false),
        (&t.ns_router, n("rm"), false),
        (&t.ns_receiver, n("d0"), false),
        (&t.ns_tap, n("ti"), true),
        (&t.ns_tap, n("tm"), true),
    ];
    if let Some(w) = &t.ns_wanem {
        ends.push((w, n("w0"), true));
        ends.push((w, n("w1"), true));
    }
    // The router and the boxes keep quiet (no IPv6 of their own); the router forwards and does
    // not filter by reverse path (injected ACKs come in from the tap's side).
    let mut quiet = vec![t.ns_tap.clone(), t.ns_router.clone()];
    quiet.extend(t.ns_wanem.clone());
    for ns in &quiet {
        sysctls(
            ns,
            &[
                ("net/ipv6/conf/all/disable_ipv6".into(), "1".into()),
                ("net/ipv6/conf/default/disable_ipv6".into(), "1".into()),
            ],
        )?;
    }
    for (ns, ifname, bump) in &ends {
        ip(&["-n", ns, "link", "set", ifname, "mtu", "1500"])?;
        let mut k = vec!["-K", ifname.as_str(), "tx", "off", "tso", "off", "gso", "off", "gro", "off"];
        if *bump {
            k.extend(["rx-gro-list", "off"]);
        }
        in_ns(ns, "ethtool", &k)?;
        if *bump {
            ip(&["-n", ns, "link", "set", ifname, "promisc", "on"])?;
        }
        ip(&["-n", ns, "link", "set", ifname, "up"])?;
    }
    let rt = &t.ns_router;
    let mut rs: Vec<(String, String)> = vec![
        ("net/ipv4/ip_forward".into(), "1".into()),
        ("net/ipv4/conf/all/rp_filter".into(), "0".into()),
        ("net/ipv4/conf/default/rp_filter".into(), "0".into()),
        ("net/ipv4/conf/all/send_redirects".into(), "0".into()),
    ];
    for i in ["r0", "r1", "ri", "rm"] {
        rs.push((format!("net/ipv4/conf/{}/rp_filter", n(i)), "0".into()));
    }
    sysctls(rt, &rs)?;
    ip(&["-n", &t.ns_sender, "addr", "add", "10.78.1.1/24", "dev", &n("s0")])?;
    ip(&["-n", rt, "addr", "add", "10.78.1.254/24", "dev", &n("r0")])?;
    ip(&["-n", rt, "addr", "add", "10.78.2.254/24", "dev", &n("r1")])?;
    ip(&["-n", rt, "addr", "add", "10.78.3.254/24", "dev", &n("ri")])?;
    ip(&["-n", &t.ns_receiver, "addr", "add", "10.78.2.1/24", "dev", &n("d0")])?;
    ip(&["-n", &t.ns_sender, "route", "add", "default", "via", "10.78.1.254"])?;
    ip(&["-n", &t.ns_receiver, "route", "add", "default", "via", "10.78.2.254"])?;
    // Static neighbours: no ARP round trip in a measurement.
    let neigh = |ns: &str, addr: &str, m: &str, dev: &str| {
        ip(&["-n", ns, "neigh", "replace", addr, "lladdr", m, "dev", dev, "nud", "permanent"])
    };
    neigh(&t.ns_sender, "10.78.1.254", &m_r0, &n("s0"))?;
    neigh(rt, "10.78.1.1", &m_s0, &n("r0"))?;
    neigh(rt, "10.78.2.1", &m_d0, &n("r1"))?;
    neigh(&t.ns_receiver, "10.78.2.254", &m_r1, &n("d0"))?;
    // The mirror: every frame in and out of the forwarding interface, copied to PFX-rm.
    in_ns(rt, "tc", &["qdisc", "add", "dev", &n("r1"), "clsact"])?;
    for dir in ["ingress", "egress"] {
        // u32 matching everything (the matchall classifier is not in every kernel).
        let r1 = n("r1");
        let rm = n("rm");
        in_ns(
            rt,
            "tc",
            &[
                "filter", "add", "dev", &r1, dir, "protocol", "all", "u32", "match", "u32", "0", "0", "action",
                "mirred", "egress", "mirror", "dev", &rm,
            ],
        )?;
    }
    if !spec.sender_sysctls.is_empty() {
        sysctls(&t.ns_sender, &spec.sender_sysctls)?;
    }
    Ok(t)
}

type WanThread = JoinHandle<std::io::Result<Result<crate::stats::Snapshot, GatewayError>>>;

/// A tap testbed with its wanem (if any) running; dropping it stops the wanem and removes the
/// namespaces (also when a test panics).
pub struct TapBed {
    pub topo: TapTopology,
    wan: Option<(Control, WanThread)>,
}

impl TapBed {
    pub fn up(spec: &TapTopologySpec) -> Result<TapBed, String> {
        let topo = topology_up(spec).map_err(|e| e.to_string())?;
        let mut bed = TapBed { topo, wan: None };
        if let (Some(ns), Some((ab, ba))) = (bed.topo.ns_wanem.clone(), spec.wanem.clone()) {
            let p = &spec.prefix;
            let mut w = WanemConfig::new(&format!("{p}-w0"), &format!("{p}-w1"));
            w.a_to_b = ab;
            w.b_to_a = ba;
            w.seed = spec.wanem_seed;
            w.stats_interval = Duration::from_millis(500);
            let ctl = Control::new();
            let c2 = ctl.clone();
            let h = spawn_in_netns(&ns, "acks-wanem", move || wanem::run_with(w, &c2)).map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            while !ctl.wait_running(Duration::from_millis(20)) {
                if h.is_finished() || t0.elapsed() > Duration::from_secs(10) {
                    ctl.request_stop();
                    let msg = match h.join() {
                        Ok(Ok(Err(e))) => e.to_string(),
                        Ok(Err(e)) => e.to_string(),
                        _ => "did not start".into(),
                    };
                    return Err(format!("wanem: {msg}"));
                }
            }
            bed.wan = Some((ctl, h));
        }
        Ok(bed)
    }

    /// Start the tap as a thread in the tap namespace with `policy`.
    pub fn start_tap(&self, policy: &Path, delay: Duration) -> Result<RunningTap, String> {
        self.start_tap_with(policy, |c| c.delay = delay)
    }

    /// Start the tap with `policy` and settings adjusted by `adjust` (pcap, delay, priority…).
    pub fn start_tap_with(&self, policy: &Path, adjust: impl FnOnce(&mut TapConfig)) -> Result<RunningTap, String> {
        let t = &self.topo;
        let mut cfg = TapConfig::new(&t.if_tap_mirror, &t.if_tap_inject, policy, parse_mac(&t.router_inject_mac)?);
        cfg.stats_interval = Duration::from_millis(250);
        adjust(&mut cfg);
        let tc = TapControl::new();
        let t2 = tc.clone();
        let h = spawn_in_netns(&t.ns_tap, "acks-tap", move || run_with(cfg, &t2)).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        while !tc.ctl.wait_running(Duration::from_millis(20)) {
            if h.is_finished() || t0.elapsed() > Duration::from_secs(10) {
                tc.ctl.request_stop();
                return Err(match h.join() {
                    Ok(Ok(Err(e))) => e.to_string(),
                    Ok(Err(e)) => e.to_string(),
                    _ => "tap did not start".into(),
                });
            }
        }
        Ok(RunningTap { tc, h: Some(h) })
    }
}

impl Drop for TapBed {
    fn drop(&mut self) {
        if let Some((c, h)) = self.wan.take() {
            c.request_stop();
            let _ = h.join();
        }
        if let Err(e) = testbed::down(&self.topo.prefix) {
            eprintln!("tap testbed cleanup of {} failed: {e}", self.topo.prefix);
        }
    }
}

type TapThread = JoinHandle<std::io::Result<Result<serde_json::Value, TapError>>>;

/// A tap running as a thread; stopping (or dropping) it returns its final stats.
pub struct RunningTap {
    pub tc: TapControl,
    h: Option<TapThread>,
}

impl RunningTap {
    pub fn stop(&mut self) -> Result<serde_json::Value, String> {
        self.tc.ctl.request_stop();
        match self.h.take().map(|h| h.join()) {
            Some(Ok(Ok(Ok(v)))) => Ok(v),
            Some(Ok(Ok(Err(e)))) => Err(e.to_string()),
            Some(Ok(Err(e))) => Err(e.to_string()),
            Some(Err(_)) => Err("tap thread panicked".into()),
            None => Err("already stopped".into()),
        }
    }
}

impl Drop for RunningTap {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::{LinkState, MemPort};
    use crate::testing;

    /// A TCP frame with `ack` and window `win`, valid checksums.
    #[allow(clippy::too_many_arguments)]
    fn frame(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        win: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut f =
            testing::tcp_frame(src, dst, sport, dport, seq, 0x10, &[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 3], payload);
        f[42..46].copy_from_slice(&ack.to_be_bytes());
        f[48..50].copy_from_slice(&win.to_be_bytes());
        let pf = Packet::parse_frame(&f).unwrap();
        let end = pf.ip_end;
        recompute_tcp_checksum(&mut f, 14, pf.l4_offset, end, &pf.packet);
        f
    }
    fn ack_frame(win: u16, ack: u32) -> Vec<u8> {
        frame([10, 0, 2, 1], [10, 0, 1, 1], 80, 1000, 1, ack, win, &[])
    }

    #[test]
    fn macs_parse_and_print() {
        let m = parse_mac("02:aa:0b:00:00:ff").unwrap();
        assert_eq!(fmt_mac(&m), "02:aa:0b:00:00:ff");
        assert!(parse_mac("02:aa:0b:00:00").is_err());
        assert!(parse_mac("zz:aa:0b:00:00:01").is_err());
    }

    type TapThread = std::thread::JoinHandle<std::io::Result<serde_json::Value>>;

    /// Run the tap on `mirror`/`inject` with `policy` (written to a file in `dir`), router MAC
    /// 02:00:00:00:00:09, inject MAC 02:00:00:00:00:01; returns once it runs.
    fn start_tap(
        dir: &std::path::Path,
        policy: &str,
        mirror: Box<dyn Port>,
        inject: Box<dyn Port>,
        stats_interval: Duration,
    ) -> (TapControl, TapThread) {
        std::fs::create_dir_all(dir).unwrap();
        let pol = dir.join("p.toml");
        std::fs::write(&pol, policy).unwrap();
        let mut cfg = TapConfig::new("m", "i", &pol, [2, 0, 0, 0, 0, 9]);
        cfg.stats_interval = stats_interval;
        let tc = TapControl::new();
        let t2 = tc.clone();
        let spec = load_policy(&pol).unwrap();
        let h = std::thread::spawn(move || run_ports(mirror, inject, spec, &cfg, [2, 0, 0, 0, 0, 1], &t2));
        assert!(tc.ctl.wait_running(Duration::from_secs(5)));
        (tc, h)
    }

    /// Over in-memory ports: every 2nd new ACK gets 3 copies (same IP packet bytes behind the
    /// new Ethernet header), zero-window copies are patched with valid checksums, garbage is
    /// counted and ignored.
    #[test]
    fn injects_copies_of_the_mirrored_frames_over_mem_ports() {
        for (tech, extra) in [("triple-ack", "every = 2"), ("zero-window", "every = 1")] {
            let dir = std::env::temp_dir().join(format!("acks-tap-{}-{tech}", std::process::id()));
            let (mut wire, mirror) = MemPort::pair("wire", "mirror");
            let (inject, mut router) = MemPort::pair("inject", "router");
            let router_mac = [2, 0, 0, 0, 0, 9];
            let policy = format!("technique = \"{tech}\"\n{extra}\n");
            let (tc, h) = start_tap(&dir, &policy, Box::new(mirror), Box::new(inject), Duration::from_secs(1));
            let mut sent = Vec::new();
            for k in 0..10u32 {
                let f = ack_frame(1000, 101 + k * 100);
                wire.send(Time(0), &frame([10, 0, 1, 1], [10, 0, 2, 1], 1000, 80, 1 + k * 100, 1, 500, &[7; 100]))
                    .unwrap();
                wire.send(Time(0), &f).unwrap();
                sent.push(f);
            }
            for g in testing::malformed_corpus(3, 200) {
                wire.send(Time(0), &g).unwrap();
            }
            let want = if tech == "triple-ack" { 15 } else { 10 };
            let t0 = Instant::now();
            while router.pending() < want && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
            let mut st = tc.stats();
            while st["counters"]["mirror_rx_packets"].as_u64().unwrap_or(0) < 220
                && t0.elapsed() < Duration::from_secs(5)
            {
                std::thread::sleep(Duration::from_millis(5));
                st = tc.stats();
            }
            tc.ctl.request_stop();
            let fin = h.join().unwrap().unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0u8; 2048];
            while let Some(m) = router.recv(Time(0), &mut buf).unwrap() {
                got.push(buf[..m.len].to_vec());
            }
            assert_eq!(got.len(), want, "{tech}");
            for g in &got {
                assert_eq!(&g[..6], &router_mac);
                assert_eq!(&g[6..12], &[2, 0, 0, 0, 0, 1]);
                ackshape_wire::verify_checksums(g).unwrap();
                let orig = sent.iter().find(|s| s[42..46] == g[42..46]).expect("a copy of a sent ACK");
                if tech == "triple-ack" {
                    assert_eq!(&g[12..], &orig[12..], "the IP packet byte for byte");
                } else {
                    assert_eq!(u16::from_be_bytes([g[48], g[49]]), 0);
                    assert_eq!(&g[14..48], &orig[14..48]);
                }
            }
            let c = &fin["counters"];
            assert!(c["malformed"].as_u64().unwrap() > 0);
            assert_eq!(c["inject_tx_packets"], want as u64);
            assert_eq!(c["rebuilt"], 0);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// The tap reports its ports' links and stops, naming the port, when one is removed.
    #[test]
    fn a_removed_inject_port_stops_the_tap() {
        let dir = std::env::temp_dir().join(format!("acks-tap-link-{}", std::process::id()));
        let (_wire, mirror) = MemPort::pair("wire", "mirror");
        let (inject, _router) = MemPort::pair("inject", "router");
        let (inject, state) = testing::LinkPort::new(inject, "veth-inj0");
        let policy = "technique = \"triple-ack\"\nevery = 2\n";
        let (tc, h) = start_tap(&dir, policy, Box::new(mirror), Box::new(inject), Duration::from_millis(10));
        let t0 = Instant::now();
        while tc.stats()["ports"]["inject"]["link"] != "up" {
            assert!(t0.elapsed() < Duration::from_secs(5), "{}", tc.stats());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(tc.stats()["ports"]["mirror"]["link"], "unknown", "an in-memory port has no interface");
        *state.lock().unwrap() = LinkState::Down;
        while tc.stats()["ports"]["inject"]["link_down_events"] != 1 {
            assert!(t0.elapsed() < Duration::from_secs(5), "{}", tc.stats());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!h.is_finished(), "a link down does not stop the tap");
        *state.lock().unwrap() = LinkState::Gone;
        while !h.is_finished() {
            assert!(t0.elapsed() < Duration::from_secs(5), "the tap kept running without its inject port");
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = h.join().unwrap().expect_err("a removed port is an error").to_string();
        assert!(e.contains("port inject (veth-inj0)") && e.contains("removed"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_policy_names_file_and_key() {
        let dir = std::env::temp_dir().join(format!("acks-tap-pol-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.toml");
        std::fs::write(&p, "technique = \"triple-ack\"\nevery = \"often\"\n").unwrap();
        let e = load_policy(&p).unwrap_err().to_string();
        assert!(e.contains("bad.toml") && e.contains("key `every`"), "{e}");
        let e = load_policy(&dir.join("none.toml")).unwrap_err().to_string();
        assert!(e.contains("none.toml"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod checksum_tests {
    use super::*;
    use crate::testing;

    /// A copy with a wrong TCP or IPv4 header checksum is counted and ignored: never shown to the
    /// tap, never duplicated; the same frame with valid checksums is duplicated.
    #[test]
    fn bad_checksum_copies_are_never_duplicated() {
        let spec = ackshape_format::tap::from_toml("technique = \"triple-ack\"\nevery = 1\n").unwrap();
        let macs = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 9]);
        let mut emit = Emit::new();
        for corrupt in [None, Some(14 + 20 + 16), Some(14 + 10)] {
            let mut tap = Tap::new(spec.clone());
            let mut c = TapCounters::default();
            let mut injected = 0;
            for k in 0..20u32 {
                let mut f = testing::tcp_frame([10, 0, 2, 1], [10, 0, 1, 1], 80, 1000, 1, 0x10, &[], &[]);
                f[42..46].copy_from_slice(&(1000 + 1448 * k).to_be_bytes());
                let pf = Packet::parse_frame(&f).unwrap();
                let end = pf.ip_end;
                recompute_tcp_checksum(&mut f, 14, pf.l4_offset, end, &pf.packet);
                if let Some(at) = corrupt {
                    f[at] ^= 0x21;
                }
                on_mirrored_frame(&mut tap, Time(k as u64 * 1_000_000), &f, false, macs, &mut c, &mut emit, |_| {
                    injected += 1
                });
            }
            if corrupt.is_some() {
                assert_eq!((injected, c.bad_checksum, c.tcp), (0, 20, 20), "{corrupt:?}");
            } else {
                assert!(injected > 0, "valid ACKs are duplicated");
                assert_eq!(c.bad_checksum, 0);
            }
        }
    }
}
