//! The two-port forwarding engine shared by the gateway and the WAN emulator: receive from either
//! port, classify, count, apply policy, ask the pipeline, forward / drop / hold until a deadline.

use crate::classify::{classify, is_pure_ack_frame, FrameClass};
use crate::clock::{Clock, TimerQueue};
use crate::pipeline::{Dir, OutFrame, Pipeline, Verdict};
use crate::policy::{FrameAction, Policy};
use crate::port::{FrameBatch, LinkWatch, Port, RxMeta};
use crate::stats::{FlowTable, HoldTiming, LoopTiming, PortStats, SharedSnapshot, Snapshot};
use crate::sys;
use ackshape_core::time::{Dur, Time};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Receive slot: larger than any frame a clean port delivers (1514 + VLAN tags) and than jumbo
/// frames; longer frames (GRO aggregates on a misconfigured port) are counted `truncated`
/// and `oversize`, and dropped.
const BUF_LEN: usize = 16_384;
/// Frames taken from one port before looking at the other and at due timers.
const BATCH: usize = 64;
/// Default of [`SchedSpec::spin`]: how long before a deadline the engine stops sleeping and
/// busy-polls. It covers the wake-up latency of an idle vCPU (40–100 µs on the project's
/// machines; docs/benchmarks.md, "Held-frame timing").
pub const SPIN_BEFORE_DEADLINE: Duration = Duration::from_micros(200);
/// Default of [`SchedSpec::nice`]. With [`DEFAULT_FAIR_SLICE`] the data plane wins the CPU when
/// it wakes for a deadline while other processes are busy, without a real-time class (held-frame
/// p99 at load average 12: 3.8 ms at nice 0 or nice -20 alone, 14.5 µs at nice -20 with a 0.1 ms
/// slice: docs/benchmarks.md).
pub const DEFAULT_NICE: i32 = -20;
/// Default of [`SchedSpec::fair_slice`]: EEVDF lets a waking task with a shorter slice preempt
/// the running one.
pub const DEFAULT_FAIR_SLICE: Duration = Duration::from_micros(100);

/// How the data-plane thread is scheduled and how it waits for a deadline (a held frame, a
/// pipeline timer). SCHED_FIFO is separate: [`EngineConfig::realtime_priority`].
#[derive(Clone, Debug, PartialEq)]
pub struct SchedSpec {
    /// Pin the thread to this CPU (None: anywhere).
    pub cpu: Option<usize>,
    /// Stay in the normal class but ask for this EEVDF time slice (Linux ≥ 6.12; 0.1–100 ms):
    /// a shorter slice preempts other tasks sooner when the thread wakes (default
    /// [`DEFAULT_FAIR_SLICE`]). None: the kernel's default slice.
    pub fair_slice: Option<Duration>,
    /// Nice value (-20..=19) of the thread (default [`DEFAULT_NICE`]).
    pub nice: i32,
    /// When the kernel groups tasks by session (`kernel.sched_autogroup_enabled`) a thread's nice
    /// only weighs against its own session's tasks; other sessions (other builds, shells) compete
    /// group against group. With this set (default) the thread joins the cgroup-v1 cpu cgroup
    /// [`CPU_GROUP`] with [`CPU_GROUP_SHARES`] while the engine runs, so it competes as a heavy
    /// group of its own; only the data-plane thread is affected, and it leaves the group when the
    /// engine stops (a crash leaves an empty cgroup, which weighs nothing).
    pub cpu_group: bool,
    /// Busy-poll the ports this long before a deadline instead of sleeping through it, so the
    /// wake-up latency of the sleep does not land in the frame's timing.
    pub spin: Duration,
}

impl Default for SchedSpec {
    fn default() -> Self {
        SchedSpec {
            cpu: None,
            fair_slice: Some(DEFAULT_FAIR_SLICE),
            nice: DEFAULT_NICE,
            cpu_group: true,
            spin: SPIN_BEFORE_DEADLINE,
        }
    }
}

/// The cpu cgroup data-plane threads join (see [`SchedSpec::cpu_group`]).
pub const CPU_GROUP: &str = "ackshape-dataplane";
/// Its `cpu.shares` (the kernel's maximum; a session's autogroup at nice 0 weighs 1024).
pub const CPU_GROUP_SHARES: u64 = 262_144;

/// Moves the thread back to the root cpu cgroup when the engine stops.
pub struct CpuGroupGuard(bool);

impl Drop for CpuGroupGuard {
    fn drop(&mut self) {
        if self.0 {
            let _ = sys::leave_cpu_cgroup(CPU_GROUP);
        }
    }
}

impl SchedSpec {
    /// Apply to the calling thread (failures are logged, not fatal). Keep the guard while the
    /// engine runs.
    pub fn apply(&self) -> CpuGroupGuard {
        if let Some(c) = self.cpu {
            if let Err(e) = sys::pin_to_cpu(c) {
                tracing::warn!("cannot pin the data plane to CPU {c}: {e}");
            }
        }
        if self.fair_slice.is_some() || self.nice != 0 {
            let ns = self.fair_slice.map_or(0, |d| d.as_nanos() as u64);
            if let Err(e) = sys::set_fair_slice(ns, self.nice) {
                tracing::warn!("cannot set slice {:?} / nice {}: {e}", self.fair_slice, self.nice);
            }
        }
        if !self.cpu_group {
            return CpuGroupGuard(false);
        }
        match sys::join_cpu_cgroup(CPU_GROUP, CPU_GROUP_SHARES) {
            Ok(()) => CpuGroupGuard(true),
            Err(e) => {
                // `ip netns exec` gives its command a /sys of the namespace, without the cgroup
                // mounts: say so, the usual case when the gateway is run by hand in a testbed.
                let why = if e.kind() == std::io::ErrorKind::Unsupported {
                    " (under `ip netns exec`, /sys is the namespace's, without cgroups)"
                } else {
                    ""
                };
                tracing::warn!(
                    "cannot join cpu cgroup {CPU_GROUP}: {e}{why}; the data plane stays in its session's \
                     scheduling group, where --nice counts only within the session (--no-cpu-group: do not try)"
                );
                CpuGroupGuard(false)
            }
        }
    }
}

/// Flags to stop the engine and to ask it to reload its policy; the latest stats snapshot.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// Set to stop (SIGINT/SIGTERM do this in `gateway::run`).
    pub stop: Arc<AtomicBool>,
    /// Set to reload the policy file (SIGHUP does this in `gateway::run`).
    pub reload: Arc<AtomicBool>,
    /// Updated every stats interval and at exit.
    pub snapshot: SharedSnapshot,
    /// Set by the engine once its ports are open and it is forwarding.
    pub running: Arc<AtomicBool>,
}

impl Control {
    pub fn new() -> Control {
        Control::default()
    }
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
    pub fn request_reload(&self) {
        self.reload.store(true, Ordering::SeqCst);
    }
    /// A copy of the latest snapshot.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot.lock().map(|s| s.clone()).unwrap_or_default()
    }
    /// Wait until the engine is running (true) or `timeout` passes (false).
    pub fn wait_running(&self, timeout: Duration) -> bool {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < timeout {
            if self.running.load(Ordering::SeqCst) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

/// Engine settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub policy: Policy,
    /// Policy file re-read on reload (None: reload requests are ignored).
    pub policy_path: Option<PathBuf>,
    /// Track flows in the flow table.
    pub track_flows: bool,
    /// Append one JSON line per interval here.
    pub stats_json: Option<PathBuf>,
    pub stats_interval: Duration,
    /// MTU of each port (frames above MTU + 14 (+4 per VLAN tag) are counted oversize).
    pub mtu: [Option<u32>; 2],
    /// Flows listed in the snapshot.
    pub top_flows: usize,
    /// Run the engine thread SCHED_FIFO at this priority (None: normal scheduling).
    pub realtime_priority: Option<i32>,
    /// CPU pinning, EEVDF slice, nice, busy-poll window.
    pub sched: SchedSpec,
    /// Verify the IPv4 header and TCP checksums of every TCP frame received (not those flagged
    /// CSUMNOTREADY): a frame that fails is counted (`bad_checksum`) and forwarded untouched or
    /// dropped per the policy, never handed to the pipeline. The gateway does; the WAN emulator
    /// (which must carry whatever its link would) does not.
    pub verify_checksums: bool,
    /// Mode the stats JSON file is created with.
    pub file_mode: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            policy: Policy::default(),
            policy_path: None,
            track_flows: true,
            stats_json: None,
            stats_interval: Duration::from_secs(1),
            mtu: [None, None],
            top_flows: 16,
            realtime_priority: None,
            sched: SchedSpec::default(),
            verify_checksums: true,
            file_mode: crate::privs::DEFAULT_FILE_MODE,
        }
    }
}

struct State {
    clock: Clock,
    ports: [PortStats; 2],
    flows: FlowTable,
    held: TimerQueue<(Dir, Vec<u8>)>,
    hold_err: hdrhistogram::Histogram<u64>,
    /// The same for the pure ACKs among them (what ACK mechanisms release).
    hold_err_acks: hdrhistogram::Histogram<u64>,
    reloads: u64,
    reload_errors: u64,
    /// Reloads of a file identical to the running policy's (nothing to do).
    reloads_unchanged: u64,
    timing: LoopTiming,
    links: LinkWatch<2>,
}

impl State {
    /// [`LinkWatch::check`] of both ports, copied into their stats.
    fn check_links(&mut self, ports: [&dyn Port; 2]) -> std::io::Result<()> {
        let r = self.links.check(self.clock.now(), ports);
        for (i, ps) in self.ports.iter_mut().enumerate() {
            ps.link = self.links.state[i];
            ps.link_down_events = self.links.down_events[i];
        }
        r
    }

    /// Record how late a held or timer-released frame left (ns), also among pure ACKs.
    fn record_lateness(&mut self, ns: u64, frame: &[u8]) {
        let _ = self.hold_err.record(ns);
        if is_pure_ack_frame(frame) {
            let _ = self.hold_err_acks.record(ns);
        }
    }

    fn snapshot(&mut self, names: [&str; 2], cfg: &EngineConfig, pipeline: &dyn Pipeline) -> Snapshot {
        self.timing.involuntary_switches = sys::thread_involuntary_switches();
        let timing = |h: &hdrhistogram::Histogram<u64>| {
            if h.is_empty() {
                HoldTiming::default()
            } else {
                HoldTiming {
                    samples: h.len(),
                    p50_us: h.value_at_quantile(0.5) as f64 / 1000.0,
                    p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
                    max_us: h.max() as f64 / 1000.0,
                }
            }
        };
        let hold_timing = timing(&self.hold_err);
        let hold_timing_acks = timing(&self.hold_err_acks);
        Snapshot {
            uptime_s: self.clock.now().as_secs_f64(),
            ports: vec![(names[0].to_string(), self.ports[0].clone()), (names[1].to_string(), self.ports[1].clone())],
            flow_table: self.flows.stats(),
            top_flows: self.flows.top(cfg.top_flows),
            held_now: self.held.len(),
            hold_timing,
            hold_timing_acks,
            loop_timing: self.timing.clone(),
            policy_reloads: self.reloads,
            policy_reload_errors: self.reload_errors,
            policy_reloads_unchanged: self.reloads_unchanged,
            pipeline: pipeline.stats_json(),
        }
    }
}

fn send_out(tx: &mut dyn Port, st: &mut PortStats, now: Time, frame: &[u8]) {
    match tx.send(now, frame) {
        Ok(()) => {
            st.tx_packets += 1;
            st.tx_bytes += frame.len() as u64;
        }
        Err(_) => st.tx_errors += 1,
    }
}

/// What became of a received frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handled {
    /// Forward the received bytes out of the other port now.
    Forward,
    /// Dropped or held by the engine.
    Done,
    /// The pipeline took it; its output is in `take_output`.
    Consumed,
}

fn handle(
    st: &mut State,
    cfg: &EngineConfig,
    pipeline: &mut dyn Pipeline,
    dir: Dir,
    meta: RxMeta,
    frame: &mut [u8],
) -> Handled {
    let now = meta.ts;
    let i = dir.index();
    {
        let ps = &mut st.ports[i];
        ps.rx_packets += 1;
        ps.rx_bytes += meta.orig_len as u64;
        if let Some(mtu) = cfg.mtu[i] {
            if meta.orig_len > mtu as usize + 14 + 8 {
                ps.oversize += 1;
            }
        }
        if meta.truncated() {
            ps.truncated += 1;
            ps.drops += 1;
            return Handled::Done;
        }
        if meta.csum_not_ready {
            ps.csum_not_ready += 1;
            if cfg.policy.csum_not_ready == FrameAction::Drop {
                ps.drops += 1;
                return Handled::Done;
            }
        }
    }
    let class = classify(frame);
    let ps = &mut st.ports[i];
    let action = match &class {
        FrameClass::Tcp(p) => {
            ps.tcp += 1;
            if p.packet.is_pure_ack() {
                ps.pure_acks += 1;
            }
            // Verify before learning: a frame its endpoint would discard must reach no box's
            // state and never leave rebuilt with a valid checksum. One pass over the packet
            // (docs/benchmarks.md has its cost); a partial checksum (CSUMNOTREADY) is the known
            // offload case, handled above.
            if cfg.verify_checksums && !meta.csum_not_ready && ackshape_wire::verify_parsed(frame, p).is_err() {
                ps.bad_checksum += 1;
                if cfg.policy.bad_checksum == FrameAction::Drop {
                    ps.drops += 1;
                    return Handled::Done;
                }
                // Not in the flow table either: its tuple may be anyone's.
                return Handled::Forward;
            }
            FrameAction::Forward
        }
        FrameClass::NonTcp { .. } => {
            ps.non_tcp += 1;
            cfg.policy.non_tcp
        }
        FrameClass::NonIp { .. } => {
            ps.non_ip += 1;
            cfg.policy.non_ip
        }
        FrameClass::Malformed(..) => {
            ps.malformed += 1;
            cfg.policy.malformed
        }
    };
    let mut flow = match (cfg.track_flows, class.packet()) {
        (true, Some(p)) => st.flows.touch(now, dir, p, frame.len()),
        _ => None,
    };
    if action == FrameAction::Drop {
        st.ports[i].drops += 1;
        if let Some(f) = flow.as_mut() {
            f.drops += 1;
        }
        return Handled::Done;
    }
    match pipeline.on_frame(now, dir, frame, &class) {
        Verdict::Forward => return Handled::Forward,
        Verdict::HoldUntil(t) if t <= now => return Handled::Forward,
        Verdict::Consumed => return Handled::Consumed,
        Verdict::Drop => {
            st.ports[i].drops += 1;
            if let Some(f) = flow.as_mut() {
                f.drops += 1;
            }
        }
        Verdict::HoldUntil(t) => {
            st.ports[i].held += 1;
            if let Some(f) = flow.as_mut() {
                f.held += 1;
            }
            st.held.push(t, (dir, frame.to_vec()));
        }
    }
    Handled::Done
}

/// Send every held frame whose time has come; returns the time after the last send.
fn release_due(st: &mut State, a: &mut dyn Port, b: &mut dyn Port) -> Time {
    let mut now = st.clock.now();
    while let Some((at, (dir, frame))) = st.held.pop_due(now) {
        let tx: &mut dyn Port = if dir == Dir::AToB { &mut *b } else { &mut *a };
        let sent_at = st.clock.now();
        send_out(tx, &mut st.ports[1 - dir.index()], sent_at, &frame);
        st.record_lateness(sent_at.since(at).0.max(1), &frame);
        now = st.clock.now();
        st.timing.send(now.since(sent_at).0);
    }
    now
}

/// Send `frames` out of `tx` (port index `ti`), counting.
fn send_counted(st: &mut State, tx: &mut dyn Port, ti: usize, now: Time, frames: &[&[u8]]) {
    if frames.is_empty() {
        return;
    }
    let t0 = st.clock.now();
    let sent = tx.send_batch(now, frames);
    st.timing.send(st.clock.now().since(t0).0);
    let ps = &mut st.ports[ti];
    ps.tx_packets += sent as u64;
    ps.tx_bytes += frames[..sent].iter().map(|f| f.len() as u64).sum::<u64>();
    ps.tx_errors += (frames.len() - sent) as u64;
}

/// Send the frames of `out` travelling `dir` out of `tx` (the port `dir` leaves by), in order;
/// frames released by a timer record their lateness.
fn send_output_dir(st: &mut State, tx: &mut dyn Port, dir: Dir, out: &[OutFrame]) {
    let frames: Vec<&[u8]> = out.iter().filter(|o| o.dir == dir).map(|o| &o.frame[..]).collect();
    if frames.is_empty() {
        return;
    }
    let sent_at = st.clock.now();
    send_counted(st, tx, 1 - dir.index(), sent_at, &frames);
    for o in out.iter().filter(|o| o.dir == dir) {
        if let Some(due) = o.due {
            st.record_lateness(sent_at.since(due).0.max(1), &o.frame);
        }
    }
}

/// The shortest time between the starts of two policy loads: requests meanwhile (a storm of
/// SIGHUPs) are coalesced into one load after it.
pub const RELOAD_HOLDOFF: Dur = Dur(1_000_000_000);
/// A load that has not finished after this long is given up (counted as a rejected reload); a
/// later request starts a new one.
pub const RELOAD_TIMEOUT: Dur = Dur(30_000_000_000);

/// The result of a policy load on the loader thread.
enum Loaded {
    /// The file's bytes are those of the running policy.
    Unchanged,
    /// The policy twice: one for the pipeline to keep, one for the engine (copied on the loader
    /// thread, not on the data path), with its warnings and headline already worded (checking a
    /// 40 000-rule policy for warnings takes milliseconds: not on the data path either).
    Valid(Box<Policy>, Box<Policy>, Option<crate::pipeline::Prepared>, [u8; 32], Box<(Vec<String>, String)>),
    Invalid(String),
}

/// Reloads off the data path: the file is read, parsed and validated on a thread of its own
/// ([`crate::policy::read_policy_file`] never blocks on a FIFO); the forwarding loop only asks,
/// once per iteration, whether a result is ready, and swaps it in. At most one load runs at a
/// time; requests while one runs, or within [`RELOAD_HOLDOFF`] of the start of the last one,
/// are coalesced into one; a file with the running policy's bytes changes nothing.
struct Loader {
    /// sha256 of the running policy file's bytes (None: unknown, e.g. a policy given in code).
    running: Option<[u8; 32]>,
    pending: bool,
    inflight: Option<(std::sync::mpsc::Receiver<Loaded>, Time)>,
    /// When the last load started.
    last_start: Option<Time>,
    /// The pipeline's [`crate::pipeline::Pipeline::preparer`].
    prepare: Option<crate::pipeline::Preparer>,
}

impl Loader {
    fn new(path: Option<&std::path::Path>, prepare: Option<crate::pipeline::Preparer>) -> Loader {
        // The file the engine starts with is (normally) the running policy.
        let running = path.and_then(|p| crate::policy::read_policy_file(p).ok()).map(|t| digest(t.as_bytes()));
        Loader { running, pending: false, inflight: None, last_start: None, prepare }
    }

    fn applied(&mut self, digest: [u8; 32]) {
        self.running = Some(digest);
    }

    /// Start a load if one is due, or take the result of the one running.
    fn poll(&mut self, path: &std::path::Path, now: Time) -> Option<Loaded> {
        if let Some((rx, started)) = &self.inflight {
            return match rx.try_recv() {
                Ok(r) => {
                    self.inflight = None;
                    Some(r)
                }
                Err(std::sync::mpsc::TryRecvError::Empty) if now.since(*started) > RELOAD_TIMEOUT => {
                    self.inflight = None;
                    Some(Loaded::Invalid(format!(
                        "policy {}: not loaded within {} s",
                        path.display(),
                        RELOAD_TIMEOUT.0 / 1_000_000_000
                    )))
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => None,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    self.inflight = None;
                    Some(Loaded::Invalid(format!("policy {}: the loader thread failed", path.display())))
                }
            };
        }
        if !self.pending || self.last_start.is_some_and(|t| now < t + RELOAD_HOLDOFF) {
            return None;
        }
        self.pending = false;
        self.last_start = Some(now);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let (file, running, prepare) = (path.to_path_buf(), self.running, self.prepare.clone());
        let spawned = std::thread::Builder::new().name("acks-policy".into()).spawn(move || {
            let path = file;
            // The data plane comes first: the loader competes for the CPU at a tenth of its weight (nice 10).
            let _ = sys::set_fair_slice(0, 10);
            let r = match crate::policy::read_policy_file(&path) {
                Err(e) => Loaded::Invalid(e.to_string()),
                Ok(text) => {
                    let d = digest(text.as_bytes());
                    if Some(d) == running {
                        Loaded::Unchanged
                    } else {
                        match Policy::from_toml(&text, &path.display().to_string()) {
                            Ok(p) => {
                                let prepared = prepare.map(|f| f(&p));
                                let words = (p.warnings().iter().map(|w| w.to_string()).collect(), p.headline());
                                Loaded::Valid(Box::new(p.clone()), Box::new(p), prepared, d, Box::new(words))
                            }
                            Err(e) => Loaded::Invalid(e.to_string()),
                        }
                    }
                }
            };
            let _ = tx.send(r);
        });
        match spawned {
            Ok(_) => {
                self.inflight = Some((rx, now));
                None
            }
            Err(e) => Some(Loaded::Invalid(format!("policy {}: cannot start the loader: {e}", path.display()))),
        }
    }
}

fn digest(b: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(b).into()
}

/// Call the pipeline's timer if it is due and send what it releases.
fn serve_pipeline_timer(
    st: &mut State,
    a: &mut dyn Port,
    b: &mut dyn Port,
    pipeline: &mut dyn Pipeline,
    now: Time,
    pout: &mut Vec<OutFrame>,
) {
    if pipeline.poll_timeout().is_some_and(|t| t <= now) {
        pout.clear();
        let t0 = st.clock.now();
        pipeline.on_timeout(now);
        pipeline.take_output(pout);
        st.timing.timer(st.clock.now().since(t0).0);
        send_output_dir(st, b, Dir::AToB, pout);
        send_output_dir(st, a, Dir::BToA, pout);
        pout.clear();
    }
}

/// One frame to send in a batch: a received one (index) or one the pipeline emitted.
#[derive(Clone, Copy)]
enum Item {
    Rx(usize),
    Out(usize),
}

/// Run the engine between ports `a` and `b` until `ctl.stop` is set. Returns the final snapshot.
pub fn run_engine(
    a: &mut dyn Port,
    b: &mut dyn Port,
    pipeline: &mut dyn Pipeline,
    mut cfg: EngineConfig,
    ctl: &Control,
) -> std::io::Result<Snapshot> {
    let _ = sys::set_timer_slack_ns(1);
    let _cpu_group = cfg.sched.apply();
    if let Some(prio) = cfg.realtime_priority {
        if let Err(e) = sys::set_realtime_fifo(prio) {
            tracing::warn!("SCHED_FIFO {prio} not available, running with normal priority: {e}");
        }
    }
    let names = [a.name().to_string(), b.name().to_string()];
    let mut st = State {
        clock: Clock::new(),
        ports: Default::default(),
        flows: FlowTable::new(cfg.policy.flows.clone()),
        held: TimerQueue::new(),
        hold_err: hdrhistogram::Histogram::new_with_bounds(1, 60_000_000_000, 3)
            .map_err(|e| std::io::Error::other(e.to_string()))?,
        hold_err_acks: hdrhistogram::Histogram::new_with_bounds(1, 60_000_000_000, 3)
            .map_err(|e| std::io::Error::other(e.to_string()))?,
        reloads: 0,
        reload_errors: 0,
        reloads_unchanged: 0,
        timing: LoopTiming::default(),
        links: LinkWatch::default(),
    };
    st.check_links([&*a, &*b])?;
    let mut json = match &cfg.stats_json {
        Some(p) => Some(std::io::BufWriter::new(
            crate::privs::append_file(p, cfg.file_mode)
                .map_err(|e| std::io::Error::new(e.kind(), format!("opening stats file {}: {e}", p.display())))?,
        )),
        None => None,
    };
    let mut loader = Loader::new(cfg.policy_path.as_deref(), pipeline.preparer());
    let mut batch = FrameBatch::new(BATCH, BUF_LEN);
    // Frames the pipeline emitted: this batch's (in arrival order) and timer-released ones.
    let mut pout: Vec<OutFrame> = Vec::new();
    let mut order: Vec<Item> = Vec::with_capacity(BATCH);
    let interval = Dur(cfg.stats_interval.as_nanos().max(1_000_000) as u64);
    let mut next_stats = st.clock.now() + interval;
    let fds: Vec<i32> = [a.poll_fd(), b.poll_fd()].into_iter().flatten().collect();
    let all_pollable = fds.len() == 2;
    let mut ready = [false; 2];
    ctl.running.store(true, Ordering::SeqCst);
    // End of the last iteration or of its wait: what passes until the next one starts is time
    // the thread did not run.
    let mut last_end = st.clock.now();
    // A receive error (ENETDOWN when a link goes down) asks for a link check at once.
    let mut check_links_now = false;
    let result = loop {
        // A policy reload below is part of the iteration, not time the thread did not run.
        let iteration_start = st.clock.now();
        st.timing.between(iteration_start.since(last_end).0);
        if ctl.stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        if std::mem::take(&mut check_links_now) {
            if let Err(e) = st.check_links([&*a, &*b]) {
                break Err(e);
            }
        }
        if ctl.reload.swap(false, Ordering::SeqCst) && cfg.policy_path.is_some() {
            loader.pending = true;
        }
        if let Some(path) = &cfg.policy_path {
            let now = st.clock.now();
            match loader.poll(path, now) {
                None => {}
                Some(Loaded::Unchanged) => st.reloads_unchanged += 1,
                Some(Loaded::Invalid(e)) => {
                    st.reload_errors += 1;
                    tracing::error!("policy reload rejected, keeping the running policy: {e}");
                }
                Some(Loaded::Valid(pp, p, prepared, digest, words)) => match pipeline
                    .reload_prepared(now, *pp, prepared)
                {
                    Ok(()) => {
                        loader.applied(digest);
                        st.flows.set_policy(p.flows.clone());
                        let (warnings, headline) = *words;
                        for w in warnings {
                            tracing::warn!("policy {}: {w}", path.display());
                        }
                        let old = std::mem::replace(&mut cfg.policy, *p);
                        // Freeing a large policy takes milliseconds: not on the data path.
                        if std::thread::Builder::new().name("acks-policy".into()).spawn(move || drop(old)).is_err() {
                            tracing::warn!("cannot start a thread to free the old policy");
                        }
                        st.reloads += 1;
                        tracing::info!("policy reloaded from {}: {headline}", path.display());
                    }
                    Err(e) => {
                        st.reload_errors += 1;
                        tracing::error!(
                            "policy reload rejected, keeping the running policy: policy {}: {e}",
                            path.display()
                        );
                    }
                },
            }
        }
        // Due held frames first: their timing matters most.
        let now = release_due(&mut st, &mut *a, &mut *b);
        serve_pipeline_timer(&mut st, &mut *a, &mut *b, pipeline, now, &mut pout);
        let mut busy = false;
        for side in 0..2 {
            let (rx, tx, dir): (&mut dyn Port, &mut dyn Port, Dir) =
                if side == 0 { (&mut *a, &mut *b, Dir::AToB) } else { (&mut *b, &mut *a, Dir::BToA) };
            let now = st.clock.now();
            let rx_start = now;
            let n = match rx.recv_batch(now, &mut batch) {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!("recv on {}: {e}", rx.name());
                    check_links_now = true;
                    0
                }
            };
            busy |= n > 0;
            order.clear();
            pout.clear();
            for i in 0..n {
                let (frame, meta) = batch.frame_mut(i);
                match handle(&mut st, &cfg, pipeline, dir, meta, frame) {
                    Handled::Forward => order.push(Item::Rx(i)),
                    Handled::Consumed => {
                        let k = pout.len();
                        pipeline.take_output(&mut pout);
                        order.extend((k..pout.len()).filter(|&j| pout[j].dir == dir).map(Item::Out));
                    }
                    Handled::Done => {}
                }
            }
            st.timing.rx(st.clock.now().since(rx_start).0);
            // Forwarded frames and what the pipeline emitted in this direction, in order.
            let frames: Vec<&[u8]> = order
                .iter()
                .map(|it| match *it {
                    Item::Rx(i) => batch.frame(i),
                    Item::Out(j) => &pout[j].frame[..],
                })
                .collect();
            send_counted(&mut st, tx, 1 - dir.index(), now, &frames);
            // What the pipeline sent back the other way (e.g. an ACK it answered with).
            send_output_dir(&mut st, rx, dir.reverse(), &pout);
            // Timers again after each batch: a box that releases packets at a high rate (µs apart)
            // is served twice per loop, not once.
            let now = release_due(&mut st, &mut *a, &mut *b);
            serve_pipeline_timer(&mut st, &mut *a, &mut *b, pipeline, now, &mut pout);
        }
        let now = st.clock.now();
        st.flows.sweep(now, false);
        if now >= next_stats {
            next_stats = now + interval;
            let t0 = st.clock.now();
            if let Err(e) = st.check_links([&*a, &*b]) {
                break Err(e);
            }
            st.ports[0].kernel_drops += a.take_kernel_drops();
            st.ports[1].kernel_drops += b.take_kernel_drops();
            let snap = st.snapshot([&names[0], &names[1]], &cfg, pipeline);
            if let Some(w) = json.as_mut() {
                let _ = writeln!(w, "{}", snap.json_line());
                let _ = w.flush();
            }
            if let Ok(mut s) = ctl.snapshot.lock() {
                *s = snap;
            }
            st.timing.stats(st.clock.now().since(t0).0);
        }
        let now = st.clock.now();
        st.timing.iteration(now.since(iteration_start).0);
        last_end = now;
        if busy {
            continue;
        }
        let mut deadline = next_stats;
        let mut frame_due = false;
        // Held frames and pipeline timers both release frames: their deadlines are spun for.
        for t in [st.held.next_deadline(), pipeline.poll_timeout()].into_iter().flatten() {
            if t < deadline {
                frame_due = true;
                deadline = t;
            }
        }
        let mut wait = Duration::from_nanos(deadline.0.saturating_sub(now.0)).min(Duration::from_millis(100));
        if !all_pollable {
            wait = wait.min(Duration::from_millis(1));
        }
        if frame_due {
            // Sleep until shortly before the deadline, then spin (checking the ports) so the
            // wake-up latency of ppoll does not land in the frame's timing.
            if wait <= cfg.sched.spin {
                std::hint::spin_loop();
                continue;
            }
            wait -= cfg.sched.spin;
        }
        if wait.is_zero() {
            continue;
        }
        let wake_at = now + Dur(wait.as_nanos() as u64);
        if fds.is_empty() {
            std::thread::sleep(wait);
            last_end = st.clock.now();
            st.timing.wake_late(last_end.0.saturating_sub(wake_at.0));
        } else {
            let r = sys::poll_readable(&fds, Some(wait), &mut ready[..fds.len()]);
            last_end = st.clock.now();
            match r {
                Ok(0) => st.timing.wake_late(last_end.0.saturating_sub(wake_at.0)),
                // A frame ended the wait, but only after its deadline: the thread ran late
                // (the frame was ready meanwhile), so it is a late wake-up too.
                Ok(_) if last_end >= wake_at => st.timing.wake_late(last_end.since(wake_at).0),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        }
    };
    let dropped_on_exit = st.held.drain().count();
    if dropped_on_exit > 0 {
        tracing::info!("{dropped_on_exit} held frames discarded at shutdown");
    }
    st.ports[0].kernel_drops += a.take_kernel_drops();
    st.ports[1].kernel_drops += b.take_kernel_drops();
    let snap = st.snapshot([&names[0], &names[1]], &cfg, pipeline);
    if let Some(w) = json.as_mut() {
        let _ = writeln!(w, "{}", snap.json_line());
        let _ = w.flush();
    }
    if let Ok(mut s) = ctl.snapshot.lock() {
        *s = snap.clone();
    }
    ctl.running.store(false, Ordering::SeqCst);
    result.map(|_| snap)
}

#[cfg(test)]
mod link_tests {
    use super::*;
    use crate::pipeline::PassThrough;
    use crate::port::{LinkState, MemPort};
    use crate::testing::LinkPort;
    use std::time::Instant;

    /// Wait (up to 5 s) until the engine's published snapshot satisfies `ok`.
    fn wait_for(ctl: &Control, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Snapshot {
        let t0 = Instant::now();
        loop {
            let s = ctl.snapshot();
            if ok(&s) {
                return s;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "{what}: last snapshot {:?}", s.port("a"));
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_link_going_down_and_up_is_counted_and_a_removed_interface_stops_the_engine() {
        let (_host_a, a) = MemPort::pair("host-a", "a");
        let (mut b, _host_b) = MemPort::pair("b", "host-b");
        let (mut a, state) = LinkPort::new(a, "veth-test0");
        let ctl = Control::new();
        let c2 = ctl.clone();
        let cfg = EngineConfig {
            stats_interval: Duration::from_millis(10),
            sched: SchedSpec { cpu_group: false, nice: 0, fair_slice: None, ..Default::default() },
            ..Default::default()
        };
        let h = std::thread::spawn(move || run_engine(&mut a, &mut b, &mut PassThrough, cfg, &c2));
        assert!(ctl.wait_running(Duration::from_secs(5)));
        let s = wait_for(&ctl, "up", |s| s.port("a").is_some_and(|p| p.link == LinkState::Up));
        assert_eq!(s.port("a").unwrap().link_down_events, 0);
        assert_eq!(s.port("b").unwrap().link, LinkState::Unknown, "an in-memory port has no interface");
        assert!(s.prometheus().contains("ackshape_port_link_up{port=\"a\"} 1"), "{}", s.prometheus());
        assert!(!s.prometheus().contains("ackshape_port_link_up{port=\"b\"}"));

        *state.lock().unwrap() = LinkState::Down;
        let s = wait_for(&ctl, "down", |s| s.port("a").is_some_and(|p| p.link == LinkState::Down));
        assert_eq!(s.port("a").unwrap().link_down_events, 1);
        assert!(s.prometheus().contains("ackshape_port_link_up{port=\"a\"} 0"));
        assert!(s.prometheus().contains("ackshape_port_link_down_events_total{port=\"a\"} 1"));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s.json_line()).unwrap()["ports"]["a"]["link"], "down");

        *state.lock().unwrap() = LinkState::Up;
        let s = wait_for(&ctl, "up again", |s| s.port("a").is_some_and(|p| p.link == LinkState::Up));
        assert_eq!(s.port("a").unwrap().link_down_events, 1, "coming back is not a down event");
        assert!(!h.is_finished(), "a link that comes back does not stop the engine");

        *state.lock().unwrap() = LinkState::Gone;
        let t0 = Instant::now();
        while !h.is_finished() {
            assert!(t0.elapsed() < Duration::from_secs(5), "the engine kept running on a removed interface");
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = h.join().unwrap().expect_err("a removed interface is an error");
        let msg = e.to_string();
        assert!(msg.contains("port a (veth-test0)") && msg.contains("removed"), "{msg}");
        assert!(!ctl.running.load(Ordering::SeqCst));
    }
}
