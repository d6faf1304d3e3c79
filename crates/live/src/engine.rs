//! The two-port forwarding engine shared by the gateway and the WAN emulator: receive from either
//! port, classify, count, apply policy, ask the pipeline, forward / drop / hold until a deadline.

use crate::classify::{classify, FrameClass};
use crate::clock::{Clock, TimerQueue};
use crate::pipeline::{Dir, Pipeline, Verdict};
use crate::policy::{FrameAction, Policy};
use crate::port::{FrameBatch, Port, RxMeta};
use crate::stats::{FlowTable, HoldTiming, PortStats, SharedSnapshot, Snapshot};
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
/// How long before a held frame's deadline the engine stops sleeping and spins.
const SPIN_BEFORE_DEADLINE: Duration = Duration::from_micros(40);

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
        }
    }
}

struct State {
    clock: Clock,
    ports: [PortStats; 2],
    flows: FlowTable,
    held: TimerQueue<(Dir, Vec<u8>)>,
    hold_err: hdrhistogram::Histogram<u64>,
    reloads: u64,
    reload_errors: u64,
}

impl State {
    fn snapshot(&self, names: [&str; 2], cfg: &EngineConfig, pipeline: &dyn Pipeline) -> Snapshot {
        let h = &self.hold_err;
        let hold_timing = if h.is_empty() {
            HoldTiming::default()
        } else {
            HoldTiming {
                samples: h.len(),
                p50_us: h.value_at_quantile(0.5) as f64 / 1000.0,
                p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
                max_us: h.max() as f64 / 1000.0,
            }
        };
        Snapshot {
            uptime_s: self.clock.now().as_secs_f64(),
            ports: vec![(names[0].to_string(), self.ports[0].clone()), (names[1].to_string(), self.ports[1].clone())],
            flow_table: self.flows.stats(),
            top_flows: self.flows.top(cfg.top_flows),
            held_now: self.held.len(),
            hold_timing,
            policy_reloads: self.reloads,
            policy_reload_errors: self.reload_errors,
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

#[allow(clippy::too_many_arguments)]
fn handle(
    st: &mut State,
    cfg: &EngineConfig,
    pipeline: &mut dyn Pipeline,
    dir: Dir,
    meta: RxMeta,
    frame: &mut [u8],
) -> bool {
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
            return false;
        }
        if meta.csum_not_ready {
            ps.csum_not_ready += 1;
            if cfg.policy.csum_not_ready == FrameAction::Drop {
                ps.drops += 1;
                return false;
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
        return false;
    }
    match pipeline.on_frame(now, dir, frame, &class) {
        Verdict::Forward => return true,
        Verdict::HoldUntil(t) if t <= now => return true,
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
    false
}

/// Send every held frame whose time has come; returns the time after the last send.
fn release_due(st: &mut State, a: &mut dyn Port, b: &mut dyn Port) -> Time {
    let mut now = st.clock.now();
    while let Some((at, (dir, frame))) = st.held.pop_due(now) {
        let tx: &mut dyn Port = if dir == Dir::AToB { &mut *b } else { &mut *a };
        let sent_at = st.clock.now();
        send_out(tx, &mut st.ports[1 - dir.index()], sent_at, &frame);
        let _ = st.hold_err.record(sent_at.since(at).0.max(1));
        now = sent_at;
    }
    now
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
        reloads: 0,
        reload_errors: 0,
    };
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
    let mut batch = FrameBatch::new(BATCH, BUF_LEN);
    let mut fwd: Vec<usize> = Vec::with_capacity(BATCH);
    let interval = Dur(cfg.stats_interval.as_nanos().max(1_000_000) as u64);
    let mut next_stats = st.clock.now() + interval;
    let fds: Vec<i32> = [a.poll_fd(), b.poll_fd()].into_iter().flatten().collect();
    let all_pollable = fds.len() == 2;
    let mut ready = [false; 2];
    ctl.running.store(true, Ordering::SeqCst);
    let result = loop {
        if ctl.stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        if ctl.reload.swap(false, Ordering::SeqCst) {
            if let Some(path) = &cfg.policy_path {
                match Policy::load(path) {
                    Ok(p) => {
                        st.flows.set_policy(p.flows.clone());
                        cfg.policy = p;
                        st.reloads += 1;
                        tracing::info!("policy reloaded from {}", path.display());
                    }
                    Err(e) => {
                        st.reload_errors += 1;
                        tracing::error!("policy reload rejected, keeping the running policy: {e}");
                        eprintln!("ackshape: policy reload rejected, keeping the running policy: {e}");
                    }
                }
            }
        }
        // Due held frames first: their timing matters most.
        let now = release_due(&mut st, &mut *a, &mut *b);
        if pipeline.poll_timeout().is_some_and(|t| t <= now) {
            pipeline.on_timeout(now);
        }
        let mut busy = false;
        for side in 0..2 {
            let (rx, tx, dir): (&mut dyn Port, &mut dyn Port, Dir) =
                if side == 0 { (&mut *a, &mut *b, Dir::AToB) } else { (&mut *b, &mut *a, Dir::BToA) };
            let now = st.clock.now();
            let n = match rx.recv_batch(now, &mut batch) {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!("recv on {}: {e}", rx.name());
                    0
                }
            };
            busy |= n > 0;
            fwd.clear();
            for i in 0..n {
                let (frame, meta) = batch.frame_mut(i);
                if handle(&mut st, &cfg, pipeline, dir, meta, frame) {
                    fwd.push(i);
                }
            }
            if !fwd.is_empty() {
                let frames: Vec<&[u8]> = fwd.iter().map(|&i| batch.frame(i)).collect();
                let sent = tx.send_batch(now, &frames);
                let ps = &mut st.ports[1 - dir.index()];
                ps.tx_packets += sent as u64;
                ps.tx_bytes += frames[..sent].iter().map(|f| f.len() as u64).sum::<u64>();
                ps.tx_errors += (frames.len() - sent) as u64;
            }
            release_due(&mut st, &mut *a, &mut *b);
        }
        let now = st.clock.now();
        st.flows.sweep(now, false);
        if now >= next_stats {
            next_stats = now + interval;
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
        }
        if busy {
            continue;
        }
        let mut deadline = next_stats;
        let mut frame_due = false;
        if let Some(t) = st.held.next_deadline() {
            frame_due = t < deadline;
            deadline = deadline.min(t);
        }
        if let Some(t) = pipeline.poll_timeout() {
            deadline = deadline.min(t);
        }
        let mut wait = Duration::from_nanos(deadline.0.saturating_sub(now.0)).min(Duration::from_millis(100));
        if !all_pollable {
            wait = wait.min(Duration::from_millis(1));
        }
        if frame_due {
            // Sleep until shortly before a held frame is due, then spin (checking the ports)
            // so the wake-up latency of ppoll does not land in the frame's timing.
            if wait <= SPIN_BEFORE_DEADLINE {
                std::hint::spin_loop();
                continue;
            }
            wait -= SPIN_BEFORE_DEADLINE;
        }
        if wait.is_zero() {
            continue;
        }
        if fds.is_empty() {
            std::thread::sleep(wait);
        } else if let Err(e) = sys::poll_readable(&fds, Some(wait), &mut ready[..fds.len()]) {
            break Err(e);
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
