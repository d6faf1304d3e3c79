//! A userspace WAN emulator between two interfaces: per direction a loss model, a rate limiter
//! with a drop-tail queue, and a delay line with jitter. Loss and delay use
//! `ackshape_core::impair` — the same code as the simulator's links.
//!
//! Order per frame: loss (a lost frame uses no capacity) → rate limiter queue (drop-tail when
//! `queue_packets` frames are waiting or in transmission) → delay line (fixed delay + jitter,
//! FIFO unless `reorder`). The rate limiter charges the Ethernet frame length as received
//! (14-byte header + IP packet; no preamble, FCS or inter-frame gap), so the TCP goodput to
//! expect is `rate × payload / (payload + headers + 14)`, e.g. 1448/1514 with timestamps.

use crate::classify::FrameClass;
use crate::engine::{run_engine, Control, EngineConfig, SchedSpec};
use crate::gateway::{install_signal_handlers, open_ports, GatewayError};
use crate::pipeline::{Dir, Pipeline, Verdict};
use crate::port::Port;
use crate::stats::{serve_prometheus, Snapshot};
use ackshape_core::impair::{Delay, JitterSpec, Loss, LossSpec};
use ackshape_core::rng::stream;
use ackshape_core::time::{Dur, Time};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Impairments of one direction.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkSpec {
    /// Fixed one-way delay (ns).
    pub delay_ns: u64,
    pub jitter: JitterSpec,
    /// Allow jitter to reorder frames (default: FIFO delay line).
    pub reorder: bool,
    pub loss: LossSpec,
    /// Rate limit in bit/s (frame bytes × 8); None = unlimited.
    pub rate_bps: Option<u64>,
    /// Frames queued or in transmission at the rate limiter before drop-tail (default 100).
    pub queue_packets: usize,
}

impl Default for LinkSpec {
    fn default() -> Self {
        LinkSpec {
            delay_ns: 0,
            jitter: JitterSpec::None,
            reorder: false,
            loss: LossSpec::None,
            rate_bps: None,
            queue_packets: 100,
        }
    }
}

impl LinkSpec {
    pub fn validate(&self) -> Result<(), String> {
        self.loss.validate()?;
        if self.rate_bps == Some(0) {
            return Err("rate_bps must be > 0 (omit it for no limit)".into());
        }
        if self.queue_packets == 0 {
            return Err("queue_packets must be ≥ 1".into());
        }
        Ok(())
    }
}

/// WAN emulator settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WanemConfig {
    /// First interface (frames from it travel A→B).
    pub a: String,
    pub b: String,
    pub a_to_b: LinkSpec,
    pub b_to_a: LinkSpec,
    /// Seed of the loss and jitter streams.
    pub seed: u64,
    pub stats_json: Option<PathBuf>,
    pub stats_interval: Duration,
    /// Loopback address for a Prometheus text endpoint.
    pub prometheus: Option<SocketAddr>,
    pub pcap_dir: Option<PathBuf>,
    pub allow_offloads: bool,
    /// Run the data-plane thread SCHED_FIFO at this priority (1..=99) for tighter hold timing
    /// under CPU contention. Default None.
    pub realtime_priority: Option<i32>,
    /// CPU pinning, EEVDF slice, busy-poll window of the data-plane thread.
    pub sched: SchedSpec,
    /// Drop privileges once the ports are open ([`crate::privs`]); None: keep them.
    pub privileges: Option<crate::privs::PrivDrop>,
    /// Mode of the files written (pcap, stats JSON); default 0600.
    pub file_mode: u32,
}

impl WanemConfig {
    pub fn new(a: &str, b: &str) -> WanemConfig {
        WanemConfig {
            a: a.into(),
            b: b.into(),
            a_to_b: LinkSpec::default(),
            b_to_a: LinkSpec::default(),
            seed: 1,
            stats_json: None,
            stats_interval: Duration::from_secs(1),
            prometheus: None,
            pcap_dir: None,
            allow_offloads: false,
            realtime_priority: None,
            sched: SchedSpec::default(),
            privileges: None,
            file_mode: crate::privs::DEFAULT_FILE_MODE,
        }
    }
    /// The same impairments both ways.
    pub fn symmetric(a: &str, b: &str, link: LinkSpec) -> WanemConfig {
        let mut c = WanemConfig::new(a, b);
        c.a_to_b = link.clone();
        c.b_to_a = link;
        c
    }
}

/// Counters of one direction.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DirStats {
    pub frames: u64,
    pub lost: u64,
    pub queue_drops: u64,
    pub forwarded: u64,
    pub max_queue: usize,
}

struct DirState {
    loss: Loss,
    delay: Delay,
    rate: Option<u64>,
    cap: usize,
    busy_until: Time,
    queue: VecDeque<Time>,
    stats: DirStats,
}

/// The wanem as a [`Pipeline`] (usable on any ports, also in-memory ones).
pub struct WanemPipeline {
    dirs: [DirState; 2],
}

impl WanemPipeline {
    pub fn new(a_to_b: &LinkSpec, b_to_a: &LinkSpec, seed: u64) -> WanemPipeline {
        let mk = |l: &LinkSpec, i: u64| DirState {
            loss: Loss::new(l.loss.clone(), stream(seed, "wanem-loss", i)),
            delay: Delay::new(Dur(l.delay_ns), l.jitter.clone(), l.reorder, stream(seed, "wanem-jitter", i)),
            rate: l.rate_bps,
            cap: l.queue_packets.max(1),
            busy_until: Time::ZERO,
            queue: VecDeque::new(),
            stats: DirStats::default(),
        };
        WanemPipeline { dirs: [mk(a_to_b, 0), mk(b_to_a, 1)] }
    }
    pub fn stats(&self) -> [DirStats; 2] {
        [self.dirs[0].stats.clone(), self.dirs[1].stats.clone()]
    }
}

impl Pipeline for WanemPipeline {
    fn on_frame(&mut self, now: Time, dir: Dir, frame: &mut [u8], _class: &FrameClass) -> Verdict {
        let d = &mut self.dirs[dir.index()];
        d.stats.frames += 1;
        if d.loss.drop_next() {
            d.stats.lost += 1;
            return Verdict::Drop;
        }
        let done = match d.rate {
            Some(rate) => {
                while d.queue.front().is_some_and(|&t| t <= now) {
                    d.queue.pop_front();
                }
                if d.queue.len() >= d.cap {
                    d.stats.queue_drops += 1;
                    return Verdict::Drop;
                }
                let start = d.busy_until.max(now);
                let done = start + Dur::tx_time(frame.len(), rate);
                d.busy_until = done;
                d.queue.push_back(done);
                d.stats.max_queue = d.stats.max_queue.max(d.queue.len());
                done
            }
            None => now,
        };
        let exit = d.delay.exit_time(done);
        d.stats.forwarded += 1;
        if exit <= now {
            Verdict::Forward
        } else {
            Verdict::HoldUntil(exit)
        }
    }
    fn stats_json(&self) -> serde_json::Value {
        serde_json::json!({"a_to_b": self.dirs[0].stats, "b_to_a": self.dirs[1].stats})
    }
}

/// One direction of [`link_box`]: its impairments and rate (`link`; `queue_packets` unused),
/// the limit of its drop-tail queue when it has no discipline, and its discipline.
pub struct BoxDir<'a> {
    pub link: &'a LinkSpec,
    pub limit: ackshape_core::queue::Limit,
    pub qdisc: Option<&'a ackshape_core::shape::qdisc_spec::QdiscSpec>,
}

/// The WAN as one box ([`ackshape_core::shape::qlink::WanLink`], the simulator's link code): per
/// direction the loss before the queue, the rate with the discipline (or a drop-tail queue of
/// `limit`), then the delay with its jitter. Frames are charged their Ethernet header (14 bytes),
/// as [`WanemPipeline`]'s limiter does. A direction without a rate is not queued. Run it in a
/// [`crate::mbpipe::MiddleboxPipeline`] (see [`run_with_pipeline`]) for what the drop-tail
/// limiter cannot do: RED/ECN (marks patched into the frames), DRR, AFVQ, …. `index` tells the
/// random streams of links in series apart (0 for a lone link: the wanem's own streams).
pub fn link_box(
    fwd: BoxDir,
    back: BoxDir,
    seed: u64,
    index: u64,
) -> Box<dyn ackshape_core::middlebox::Middlebox + Send> {
    use ackshape_core::queue::{DropTail, QueueDisc};
    use ackshape_core::shape::qlink::{Impair, QdiscLink, Shaper, WanLink};
    let shaper = |d: &BoxDir, i: u64| {
        let rate = d.link.rate_bps?;
        let queue: Box<dyn QueueDisc + Send> = match d.qdisc {
            Some(q) => q.build(rate, stream(seed, "wan-qdisc", i)),
            None => Box::new(DropTail::new(d.limit)),
        };
        Some(Shaper::new(rate.max(1), queue))
    };
    let impair = |d: &BoxDir, i: u64| Impair {
        loss: Loss::new(d.link.loss.clone(), stream(seed, "wanem-loss", i)),
        delay: Delay::new(Dur(d.link.delay_ns), d.link.jitter.clone(), d.link.reorder, stream(seed, "wanem-jitter", i)),
    };
    let (f, r) = (2 * index, 2 * index + 1);
    let link = QdiscLink::new(shaper(&fwd, f), shaper(&back, r), 14);
    Box::new(WanLink::new(link, Some(impair(&fwd, f)), Some(impair(&back, r))))
}

/// Run the WAN emulator until SIGINT/SIGTERM (the `ackshape wanem` entry point).
pub fn run(cfg: WanemConfig) -> Result<Snapshot, GatewayError> {
    run_piped(cfg, None)
}

/// [`run`] with `pipeline` (if given) instead of `cfg`'s impairments (see [`run_with_pipeline`]).
pub fn run_piped(cfg: WanemConfig, pipeline: Option<Box<dyn Pipeline>>) -> Result<Snapshot, GatewayError> {
    let ctl = Control::new();
    install_signal_handlers(&ctl)?;
    run_with_pipeline(cfg, &ctl, pipeline)
}

/// Run the WAN emulator with an explicit control handle.
pub fn run_with(cfg: WanemConfig, ctl: &Control) -> Result<Snapshot, GatewayError> {
    run_with_pipeline(cfg, ctl, None)
}

/// Run the WAN emulator with an explicit control handle; `pipeline`, if given, replaces the
/// impairments of `cfg.a_to_b`/`b_to_a` (e.g. a [`crate::mbpipe::MiddleboxPipeline`] running
/// `ackshape_core::shape::qlink::WanLink`: a link with a queue discipline).
pub fn run_with_pipeline(
    cfg: WanemConfig,
    ctl: &Control,
    pipeline: Option<Box<dyn Pipeline>>,
) -> Result<Snapshot, GatewayError> {
    for (n, l) in [("a_to_b", &cfg.a_to_b), ("b_to_a", &cfg.b_to_a)] {
        l.validate().map_err(|m| {
            GatewayError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("wanem {n}: {m}")))
        })?;
    }
    let (a, b, mtu) = open_ports(&cfg.a, &cfg.b, ["a", "b"], cfg.allow_offloads, cfg.pcap_dir.as_ref(), cfg.file_mode)?;
    tracing::info!("wanem up: {} <-> {}; SIGINT/SIGTERM stop", cfg.a, cfg.b);
    match pipeline {
        Some(mut p) => run_ports_with(a, b, mtu, &cfg, ctl, &mut *p),
        None => run_ports(a, b, mtu, &cfg, ctl),
    }
}

/// Run the WAN emulator on already-open ports.
pub fn run_ports(
    a: Box<dyn Port>,
    b: Box<dyn Port>,
    mtu: [Option<u32>; 2],
    cfg: &WanemConfig,
    ctl: &Control,
) -> Result<Snapshot, GatewayError> {
    let mut p = WanemPipeline::new(&cfg.a_to_b, &cfg.b_to_a, cfg.seed);
    run_ports_with(a, b, mtu, cfg, ctl, &mut p)
}

/// Run `p` as the WAN emulator on already-open ports (`cfg`'s impairments unused).
pub fn run_ports_with(
    mut a: Box<dyn Port>,
    mut b: Box<dyn Port>,
    mtu: [Option<u32>; 2],
    cfg: &WanemConfig,
    ctl: &Control,
    p: &mut dyn Pipeline,
) -> Result<Snapshot, GatewayError> {
    crate::gateway::after_open(
        cfg.privileges.as_ref(),
        cfg.stats_json.as_deref(),
        cfg.file_mode,
        &cfg.sched,
        cfg.realtime_priority,
    )?;
    let prom = match cfg.prometheus {
        Some(addr) => Some(serve_prometheus(addr, ctl.snapshot.clone(), ctl.stop.clone())?),
        None => None,
    };
    let ecfg = EngineConfig {
        track_flows: false,
        verify_checksums: false,
        stats_json: cfg.stats_json.clone(),
        stats_interval: cfg.stats_interval,
        mtu,
        realtime_priority: cfg.realtime_priority,
        sched: cfg.sched.clone(),
        file_mode: cfg.file_mode,
        ..Default::default()
    };
    let r = run_engine(&mut *a, &mut *b, p, ecfg, ctl);
    if let Some((_, h)) = prom {
        ctl.request_stop();
        let _ = h.join();
    }
    Ok(r?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_and_delay_schedule() {
        let link =
            LinkSpec { delay_ns: 10_000_000, rate_bps: Some(10_000_000), queue_packets: 3, ..Default::default() };
        let mut p = WanemPipeline::new(&link, &LinkSpec::default(), 1);
        let mut f = vec![0u8; 1250]; // 1 ms at 10 Mbit/s
        let c = FrameClass::NonIp { ethertype: 0 };
        let v: Vec<Verdict> = (0..5).map(|_| p.on_frame(Time(0), Dir::AToB, &mut f, &c)).collect();
        assert_eq!(
            v,
            vec![
                Verdict::HoldUntil(Time(11_000_000)),
                Verdict::HoldUntil(Time(12_000_000)),
                Verdict::HoldUntil(Time(13_000_000)),
                Verdict::Drop,
                Verdict::Drop
            ]
        );
        // after the first frame has left the queue there is room again
        assert_eq!(p.on_frame(Time(1_000_000), Dir::AToB, &mut f, &c), Verdict::HoldUntil(Time(14_000_000)));
        assert_eq!(p.on_frame(Time(0), Dir::BToA, &mut f, &c), Verdict::Forward);
        assert_eq!(p.stats()[0].queue_drops, 2);
    }

    #[test]
    fn engine_holds_frames_for_the_delay_over_mem_ports() {
        use crate::port::MemPort;
        let (mut host_a, a) = MemPort::pair("host-a", "a");
        let (b, host_b) = MemPort::pair("b", "host-b");
        let link = LinkSpec { delay_ns: 20_000_000, ..Default::default() };
        let cfg = WanemConfig::symmetric("a", "b", link);
        let ctl = Control::new();
        let c2 = ctl.clone();
        let h = std::thread::spawn(move || run_ports(Box::new(a), Box::new(b), [None, None], &cfg, &c2));
        assert!(ctl.wait_running(Duration::from_secs(5)));
        let t0 = std::time::Instant::now();
        // Seven non-IP frames and three pure TCP ACKs (counted apart in hold_timing_acks).
        let frames: Vec<Vec<u8>> = (0..10u8)
            .map(|i| {
                if i % 3 == 1 {
                    crate::testing::tcp_frame([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000, i as u32, 0x10, &[], &[])
                } else {
                    vec![i; 60]
                }
            })
            .collect();
        for f in &frames {
            host_a.send(Time(0), f).unwrap();
        }
        while host_b.pending() < 10 {
            assert!(t0.elapsed() < Duration::from_secs(2), "frames not delivered");
            std::thread::sleep(Duration::from_micros(200));
        }
        let took = t0.elapsed();
        ctl.request_stop();
        let snap = h.join().unwrap().unwrap();
        assert!(took >= Duration::from_millis(20), "{took:?}");
        assert_eq!(snap.port("b").unwrap().tx_packets, 10);
        assert_eq!(snap.port("a").unwrap().held, 10);
        assert_eq!(snap.hold_timing.samples, 10);
        assert_eq!(snap.hold_timing_acks.samples, 3);
        let mut host_b = host_b;
        let mut buf = [0u8; 100];
        for f in &frames {
            let m = host_b.recv(Time(0), &mut buf).unwrap().unwrap();
            assert_eq!(&buf[..m.len], &f[..], "FIFO order kept");
        }
    }

    /// The link box in a MiddleboxPipeline (what `run --live` and `wanem --qdisc` run): RED with
    /// ECN marks ECN-capable frames as the queue builds, the marks are patched into the frames
    /// (checksums valid), and every frame leaves after its serialisation plus the delay.
    #[test]
    fn link_box_marks_ecn_in_the_frames_and_delays_them() {
        use crate::classify::classify;
        use crate::mbpipe::MiddleboxPipeline;
        use ackshape_core::shape::qdisc_spec::QdiscSpec;
        use ackshape_core::shape::red::RedConfig;
        use ackshape_wire::{Ecn, Packet};
        let red = QdiscSpec::Red(RedConfig {
            min_th: 1.0,
            max_th: 40.0,
            w_q: 1.0,
            max_p: 1.0,
            limit_pkts: 50,
            ecn: true,
            ..Default::default()
        });
        let link = LinkSpec { delay_ns: 20_000_000, rate_bps: Some(10_000_000), ..Default::default() };
        let dir = |q| BoxDir { link: &link, limit: ackshape_core::queue::Limit::Packets(50), qdisc: q };
        let mut p = MiddleboxPipeline::new(link_box(dir(Some(&red)), dir(None), 1, 0), "wan-link");
        let mut out = Vec::new();
        for i in 0..20u32 {
            let mut f =
                crate::testing::tcp_frame([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 1 + i * 1000, 0x18, &[], &[7; 1000]);
            ackshape_wire::set_ip_ecn(&mut f, 14, Ecn::Ect0).unwrap();
            let c = classify(&f);
            assert_eq!(p.on_frame(Time::ZERO, Dir::AToB, &mut f, &c), Verdict::Consumed);
            p.take_output(&mut out);
        }
        assert!(out.is_empty(), "nothing leaves before the delay");
        let mut left = Vec::new();
        while let Some(t) = p.poll_timeout() {
            p.on_timeout(t);
            p.take_output(&mut out);
            left.extend(out.drain(..).map(|o| (t, o)));
        }
        assert_eq!(left.len(), 20, "RED with ECN marks here, it does not drop");
        let mut ce = 0;
        for (k, (t, o)) in left.iter().enumerate() {
            ackshape_wire::verify_checksums(&o.frame).expect("checksums valid");
            let pf = Packet::parse_frame(&o.frame).unwrap();
            ce += (pf.packet.ip.ecn == Ecn::Ce) as usize;
            // 1054-byte frames (14 + 1040) at 10 Mbit/s: 843.2 µs each, back to back, then 20 ms.
            let end = Time(843_200 * (k as u64 + 1)) + Dur::from_millis(20);
            assert!(*t >= end && t.since(end) < Dur::from_micros(2), "frame {k} left at {t:?}, expected {end:?}");
        }
        assert!(ce > 0 && ce < 20, "some frames marked CE as the queue grew: {ce}");
        let st = p.stats_json();
        assert_eq!(st["stats"]["a_to_b"]["qdisc"]["red_ecn_marks"].as_u64(), Some(ce as u64), "{st}");
        assert_eq!(st["stats"]["a_to_b"]["forwarded"].as_u64(), Some(20), "{st}");
    }

    #[test]
    fn bernoulli_loss_matches_core_model() {
        let link = LinkSpec { loss: LossSpec::Bernoulli { p: 0.01 }, ..Default::default() };
        let mut p = WanemPipeline::new(&link, &link, 9);
        let mut f = vec![0u8; 100];
        let c = FrameClass::NonIp { ethertype: 0 };
        let lost = (0..100_000).filter(|_| p.on_frame(Time(0), Dir::AToB, &mut f, &c) == Verdict::Drop).count();
        let mut l = Loss::new(LossSpec::Bernoulli { p: 0.01 }, stream(9, "wanem-loss", 0));
        let lost2 = (0..100_000).filter(|_| l.drop_next()).count();
        assert_eq!(lost, lost2);
    }
}

/// One direction of `ackshape wanem` as its command line gives it, in text: `delay`, `jitter`
/// (durations), `loss` (Bernoulli) or `loss_every` (periodic) or `loss_ge` (Gilbert-Elliott
/// `"P_GB,P_BG"`), `rate` and the queue in packets. Errors name the flag.
#[derive(Clone, Debug)]
pub struct LinkText<'a> {
    pub delay: &'a str,
    pub jitter: &'a str,
    pub loss: f64,
    pub loss_every: Option<u64>,
    pub loss_ge: Option<&'a str>,
    pub rate: Option<&'a str>,
    pub queue: usize,
}

impl LinkText<'_> {
    /// The link's settings, checked (the loss model's own checks included).
    pub fn link(&self) -> Result<LinkSpec, String> {
        let dur = |flag: &str, s: &str| {
            ackshape_core::units::parse_duration(s).map(|d| d.0).map_err(|e| format!("{flag}: {e}"))
        };
        let mut l = LinkSpec { delay_ns: dur("--delay", self.delay)?, queue_packets: self.queue, ..Default::default() };
        let j = dur("--jitter", self.jitter)?;
        if j > 0 {
            l.jitter = JitterSpec::Uniform { max_ns: j };
        }
        l.loss = if let Some(k) = self.loss_every {
            LossSpec::Periodic { every: k, offset: 0 }
        } else if let Some(ge) = self.loss_ge {
            let v: Vec<f64> = ge.split(',').filter_map(|x| x.trim().parse().ok()).collect();
            if v.len() != 2 {
                return Err(format!("--loss-ge: expected \"P_GB,P_BG\", got {ge:?}"));
            }
            LossSpec::GilbertElliott { p_gb: v[0], p_bg: v[1], loss_good: 0.0, loss_bad: 1.0 }
        } else if self.loss > 0.0 {
            LossSpec::Bernoulli { p: self.loss }
        } else {
            LossSpec::None
        };
        let loss_flag = if self.loss_every.is_some() {
            "--loss-every"
        } else if self.loss_ge.is_some() {
            "--loss-ge"
        } else {
            "--loss"
        };
        l.loss.validate().map_err(|e| format!("{loss_flag}: {e}"))?;
        if let Some(r) = self.rate {
            l.rate_bps = Some(ackshape_core::units::parse_rate(r).map_err(|e| format!("--rate: {e}"))?.0);
        }
        Ok(l)
    }
}

/// A queue discipline given as a scenario link's `qdisc` table in TOML inline-table text
/// (`{ kind = "red", ecn = true }`), or none for `drop-tail` or no text; the limits it leaves
/// out are `queue` packets. It needs a rate on `link`. Errors name `flag`.
pub fn qdisc_from_text(
    flag: &str,
    text: Option<&str>,
    queue: usize,
    link: &LinkSpec,
) -> Result<Option<ackshape_core::shape::qdisc_spec::QdiscSpec>, String> {
    use ackshape_core::shape::qdisc_spec::QdiscTable;
    let Some(text) = text.filter(|t| t.trim() != "drop-tail") else { return Ok(None) };
    let t: toml::Table = format!("q = {text}").parse().map_err(|_| {
        format!("{flag}: expected a TOML table like '{{ kind = \"red\", ecn = true }}' or `drop-tail`, got {text:?}")
    })?;
    let table: QdiscTable =
        t["q"].clone().try_into().map_err(|e: toml::de::Error| format!("{flag}: {}", e.message().trim_end()))?;
    let (spec, _) = table
        .with_queue(Some(ackshape_core::units::Size::Packets(queue as u64)))
        .map_err(|m| format!("{flag}: {m}"))?;
    spec.validate().map_err(|m| format!("{flag}: {m}"))?;
    if link.rate_bps.is_none() {
        return Err(format!("{flag}: a queue discipline needs a rate in that direction (--rate)"));
    }
    Ok(Some(spec))
}
