//! `ackshape run --live` as a library: a simulator scenario's dumbbell as sender — gateway —
//! wanem — receiver namespaces with real Linux TCP. The wanem carries the bottleneck (rate, queue,
//! loss, jitter) and the path's whole one-way delay; the scenario's box runs in the gateway.
//!
//! Three steps, so that a front end can print between them and the checks and outputs can be
//! tested without root: [`prepare`] checks the scenario, plans the testbed and the flows (it
//! reports what a live run cannot give through its `warn` callback); [`Prepared::run`] builds the
//! testbed, runs the flows and builds the summary in the simulator's shape ([`summary`]), writing
//! the simulator's files with an output directory; [`LiveRun::text`] is the table a terminal shows.

use crate::mbpipe::{MiddleboxPipeline, WindowStart};
use crate::plan::{endpoint_tcp, flow_sock_opts, live_class_drift, live_link_gaps, live_tcp_gaps, wan_plan};
use crate::rig::{BoxResult, Rig, RigSpec};
use crate::testbed;
use crate::traffic::{self, FlowReport, FlowSpec};
use ackshape_core::tcp::CcAlgo;
use ackshape_core::units;
use ackshape_sim::metrics::{cov, jain};
use ackshape_sim::middlebox::build_middlebox;
use ackshape_sim::run::{fmt_rate, FLOW_ROWS_FOLDED, FLOW_ROWS_MAX};
use ackshape_sim::scenario::{FlowKind, FlowOpen, MbMode, Scenario, StartV, TopologySpec as SimTopo};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// At most this many flows in a live run (each a real connection with a thread at each end).
pub const MAX_LIVE_FLOWS: u64 = 1000;

/// Why a live run did not happen or did not finish, in the terms of the exit-code contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The scenario asks for what a live run cannot do (file, key and expectation named).
    BadInput,
    /// This machine cannot run it (not root, tools missing).
    CannotRun,
    /// It failed while running (the testbed, a flow, writing the outputs).
    Runtime,
}

/// A live run's error: its kind and the message for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    pub kind: Failure,
    pub msg: String,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for RunError {}

fn err(kind: Failure, msg: impl Into<String>) -> RunError {
    RunError { kind, msg: msg.into() }
}

fn bad(msg: impl Into<String>) -> RunError {
    err(Failure::BadInput, msg)
}

/// The box a live run puts into the gateway: (node, kind, the box).
type GatewayBox = (String, String, Box<dyn ackshape_core::middlebox::Middlebox + Send>);

/// The checks a live run makes before it needs the machine: a dumbbell without an upstream
/// router, at most [`MAX_LIVE_FLOWS`] flows, at most one inline box where the gateway sits
/// (`node = "left"`, `wan = "bottleneck"`), built by the simulator's factory. `path` is the
/// scenario's file (errors name it; a box's relative files are found beside it).
pub fn check(sc: &Scenario, path: &Path) -> Result<Option<GatewayBox>, RunError> {
    let file = path.display().to_string();
    let SimTopo::Dumbbell(d) = &sc.topology else {
        return Err(bad(format!("{file}: key `topology.kind`: run --live supports \"dumbbell\" scenarios")));
    };
    if d.upstream.is_some() {
        return Err(bad(format!("{file}: key `topology.upstream`: run --live has no upstream router yet")));
    }
    // Each live flow is a real connection on port 6000 + i with a thread at each end.
    let (live_flows, i, _) = sc.flow_total();
    if live_flows > MAX_LIVE_FLOWS {
        return Err(bad(format!(
            "{file}: key `flows[{i}].count`: run --live runs at most {MAX_LIVE_FLOWS} flows (each a real connection on \
             port 6000 + i with a thread at each end), got {live_flows}; the simulator takes up to {}",
            ackshape_sim::scenario::MAX_FLOWS
        )));
    }
    // [[middlebox]]: the same factory as the simulator builds the same box; it runs in the
    // gateway, which sits where the dumbbell's `left` router is (senders → box → bottleneck).
    let mut boxes = Vec::new();
    for (i, m) in sc.middlebox.iter().enumerate() {
        if m.node != "left" || m.wan != "bottleneck" {
            return Err(bad(format!(
                "{file}: key `middlebox[{i}].node`: run --live runs a box in the gateway between the senders and the \
                 bottleneck, i.e. node = \"left\", wan = \"bottleneck\"; got node = {:?}, wan = {:?}",
                m.node, m.wan
            )));
        }
        if m.mode != MbMode::Inline {
            return Err(bad(format!(
                "{file}: key `middlebox[{i}].mode`: run --live runs inline boxes (a mirror box is `ackshape tap`)"
            )));
        }
        match build_middlebox(m, sc.seed, i, path.parent()) {
            Ok(b) => boxes.push((m.node.clone(), m.kind.clone(), b)),
            Err((k, msg)) => return Err(bad(format!("{file}: key `middlebox[{i}].{k}`: {msg}"))),
        }
    }
    if boxes.len() > 1 {
        return Err(bad(format!("{file}: key `middlebox[1]`: run --live runs one box (the gateway's)")));
    }
    Ok(boxes.pop())
}

/// `ackshape validate FILE` for a scenario: what parsing cannot check (the simulator builds it:
/// node and link names, routes, box settings), the live testbed's table (`[live.testbed]`, as
/// `testbed up` and `run --live` read it); then the warnings: what the gateway boxes' policies do
/// that is valid but probably not meant and, for a scenario meant for live runs too (it has
/// `[live]`), what a live run would do otherwise (as `run --live` warns). `base` is the directory
/// of the scenario's file.
pub fn validate(sc: &Scenario, file: &str, base: Option<&Path>) -> Result<Vec<String>, String> {
    use ackshape_format::policy_report::PolicyReport;
    ackshape_sim::Sim::build(sc, file, None, Default::default()).map_err(|e| e.to_string())?;
    let topo = crate::plan::testbed_of(sc, file)?;
    let mut warnings = Vec::new();
    for (i, mb) in sc.middlebox.iter().enumerate() {
        let Some(Ok(p)) = ackshape_sim::middlebox::gateway_policy(mb, base) else { continue };
        let (origin, prefix) = match mb.settings.get("policy_file").and_then(|f| f.as_str()) {
            Some(f) => (base.map_or_else(|| f.into(), |b| b.join(f)).display().to_string(), String::new()),
            None => (file.to_string(), format!("middlebox[{i}].policy.")),
        };
        for w in p.warnings() {
            warnings.push(format!("{origin}: key `{prefix}{}`: {}", w.key, w.msg));
        }
    }
    if sc.live.is_some() {
        warnings.extend(live_class_drift(sc, file, base, &topo));
        warnings.extend(live_link_gaps(sc, file));
        warnings.extend(live_tcp_gaps(sc, file));
    }
    Ok(warnings)
}

/// The live flows of a scenario: its bulk flows, each `count` times, with Linux's congestion
/// control for the scenario's (`live.cc` over it), their start times (a `uniform` start spread
/// evenly over its interval: the live runner has no random stream) and their socket options.
pub fn live_flows(sc: &Scenario, file: &str) -> Result<Vec<FlowSpec>, RunError> {
    let live_cc = sc.live.as_ref().and_then(|l| l.get("cc")).and_then(|v| v.as_str()).map(str::to_string);
    let mut flows = Vec::new();
    let dur_s = sc.duration.0.as_secs_f64();
    let mut k = 0u64;
    for (i, f) in sc.flows.iter().enumerate() {
        if f.kind != FlowKind::Bulk {
            return Err(bad(format!("{file}: key `flows[{i}].kind`: run --live supports bulk TCP flows")));
        }
        let tcp = f.tcp.clone().unwrap_or_default().over(&sc.tcp);
        let cc = match (&live_cc, tcp.cc.unwrap_or_default()) {
            (Some(c), _) => c.clone(),
            (None, CcAlgo::Cubic) => "cubic".into(),
            (None, CcAlgo::Bbr) => "bbr".into(),
            (None, CcAlgo::Misbehaving) => {
                return Err(bad(format!("{file}: key `flows[{i}].tcp.cc`: Linux has no misbehaving sender")))
            }
            (None, CcAlgo::MulTcp) => return Err(bad(format!("{file}: key `flows[{i}].tcp.cc`: Linux has no MulTCP"))),
            (None, _) => "reno".into(),
        };
        for _ in 0..f.count.unwrap_or(1) {
            let start = match f.start.unwrap_or(StartV::At(Default::default())) {
                StartV::At(t) => t.as_secs_f64(),
                // Deterministic spread over the interval (no random stream in the live runner).
                StartV::Uniform(a, b) => {
                    let n = f.count.unwrap_or(1).max(1) as f64;
                    a.as_secs_f64() + (b.as_secs_f64() - a.as_secs_f64()) * ((k % n as u64) as f64 + 0.5) / n
                }
            };
            flows.push(FlowSpec {
                name: format!("f{k}"),
                cc: Some(cc.clone()),
                start_s: start,
                bytes: f.bytes.map(|b| match b.0 {
                    units::Size::Bytes(x) => x,
                    units::Size::Packets(p) => p * 1448,
                }),
                duration_s: Some((dur_s - start).max(0.1)),
                open_by_receiver: f.open == FlowOpen::Receiver,
                sock: flow_sock_opts(f.tcp.as_ref(), &sc.tcp),
            });
            k += 1;
        }
    }
    Ok(flows)
}

/// What the summary of a live run is laid out by, apart from what was measured: the scenario's
/// names and times, where the box sits, and the WAN's links.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The scenario's file, as errors and the summary name it.
    pub file: String,
    /// The node of the gateway's box, if the scenario has one.
    pub mb_node: Option<String>,
    /// The wanem runs the bottleneck as the simulator's link code in a box.
    pub wan_boxed: bool,
    /// The receivers' access links run in series behind the bottleneck: (name, forward rate,
    /// reverse rate).
    pub wan_paths: Vec<(String, u64, u64)>,
    /// The bottleneck's rate, forward and reverse (bit/s).
    pub bottleneck_bps: (u64, u64),
    /// The goodput bin.
    pub bin: Duration,
}

/// A scenario checked and planned for a live run: the testbed and its boxes, the flows.
pub struct Prepared {
    sc: Scenario,
    layout: Layout,
    spec: RigSpec,
    flows: Vec<FlowSpec>,
    warnings: Vec<String>,
    out: Option<PathBuf>,
    window_at: WindowStart,
    window_end: WindowStart,
}

/// Check `sc` (built from the file `path`, e.g. with `--set`s applied) for a live run and plan
/// it: [`check`], then whether this machine can run it ([`testbed::preflight`]), the testbed
/// (`[live.testbed]`, prefix `acks-run` by default), what the live run will do otherwise than the
/// simulator (each passed to `warn` as it is found, and kept for the summary), the WAN emulator's
/// links and boxes, and the flows. With `out`, the directory is created and the gateway's stats
/// go there every second as JSON lines.
pub fn prepare(
    sc: Scenario,
    path: &Path,
    out: Option<&Path>,
    warn: &mut dyn FnMut(&str),
) -> Result<Prepared, RunError> {
    let file = path.display().to_string();
    let gw_box = check(&sc, path)?;
    let SimTopo::Dumbbell(d) = &sc.topology else { unreachable!("check() takes only dumbbells") };
    let mb_node = gw_box.as_ref().map(|b| b.0.clone());
    if let Some(why) = testbed::preflight() {
        return Err(err(Failure::CannotRun, format!("run --live cannot run here: {why}")));
    }
    let mut topo = crate::plan::testbed_of(&sc, &file).map_err(bad)?;
    if sc.live.as_ref().and_then(|l| l.get("testbed")).and_then(|t| t.get("prefix")).is_none() {
        topo.prefix = "acks-run".into();
    }
    // A policy that matches on addresses or ports may put a flow into another class live.
    let mut warnings = live_class_drift(&sc, &file, path.parent(), &topo);
    // Links the testbed does not apply: the two drivers then run different paths.
    warnings.extend(live_link_gaps(&sc, &file));
    warnings.extend(live_tcp_gaps(&sc, &file));
    for w in &warnings {
        warn(w);
    }
    let (bf, br) = d.bottleneck.directions();
    let mut spec = RigSpec::new(&topo.prefix);
    spec.topology = topo;
    // A bottleneck with a queue discipline, or a receivers' access link that shapes: the wanem runs
    // the simulator's link code in a box.
    let plan = wan_plan(&sc, d);
    spec.wanem = plan.links;
    spec.wanem_seed = sc.seed;
    let (wan_boxed, wan_paths) = (plan.boxed.is_some(), plan.paths);
    if let Some(b) = plan.boxed {
        spec.wanem_pipeline = Some(Box::new(MiddleboxPipeline::new(b, "wan-link")));
    }
    // With an output directory, the gateway's stats (ports, flows, the box's per-class and
    // per-flow counters) every second as JSON lines: the run's course, not only its end.
    if let Some(o) = out {
        std::fs::create_dir_all(o).map_err(|e| err(Failure::Runtime, format!("{}: {e}", o.display())))?;
        spec.gateway.stats_json = Some(o.join("gateway-stats.jsonl"));
    }
    // The box's measurement window starts after the warm-up, counted from when the flows start.
    let window_at = WindowStart::default();
    let window_end = WindowStart::default();
    if let Some((_, kind, mb)) = gw_box {
        spec.pipeline = Box::new(
            MiddleboxPipeline::new(mb, &kind).start_window_at(window_at.clone()).end_window_at(window_end.clone()),
        );
    }
    let flows = live_flows(&sc, &file)?;
    let layout = Layout {
        file,
        mb_node,
        wan_boxed,
        wan_paths,
        bottleneck_bps: (bf.rate.0, br.rate.0),
        bin: sc.bin.map(|b| Duration::from_nanos(b.0 .0)).unwrap_or(Duration::from_secs(1)),
    };
    Ok(Prepared { sc, layout, spec, flows, warnings, out: out.map(Path::to_path_buf), window_at, window_end })
}

/// A finished live run: its summary (the simulator's shape, floats rounded as the simulator's),
/// the flows' reports and the files written.
pub struct LiveRun {
    pub summary: Value,
    pub reports: Vec<FlowReport>,
    /// Each flow's goodput over the measurement window (bit/s).
    pub goodput: Vec<f64>,
    /// The files written into the output directory (with the gateway's stats), if any.
    pub written: Vec<PathBuf>,
}

impl Prepared {
    /// The scenario's duration in milliseconds (a progress bar's length).
    pub fn duration_ms(&self) -> u64 {
        self.sc.duration.0 .0 / 1_000_000
    }

    /// Build the testbed, run the flows, stop the boxes and take down the testbed, then build the
    /// summary and write the outputs. `progress` gets the milliseconds of the scenario run so far
    /// (at most [`Prepared::duration_ms`]) every 100 ms while the flows run.
    pub fn run(self, progress: &(dyn Fn(u64) + Sync)) -> Result<LiveRun, RunError> {
        let Prepared { sc, layout, spec, flows, warnings, out, window_at, window_end } = self;
        let runtime = |m: String| err(Failure::Runtime, m);
        let t0 = Instant::now();
        let mut rig = Rig::start(spec).map_err(|e| runtime(format!("starting the testbed: {e}")))?;
        if let Err(e) = rig.tb.apply_tcp(&endpoint_tcp(&sc.tcp)) {
            drop(rig);
            return Err(runtime(format!("{}: key `tcp`: setting the live endpoints' TCP: {e}", layout.file)));
        }
        // The flows start now (at their `start` offsets) and stop at `duration`: the box measures
        // from the warm-up to the duration, as the simulator does, not the teardown after it.
        let warmup = sc.warmup.map(|w| Duration::from_nanos(w.0 .0)).unwrap_or_default();
        let flows_t0 = Instant::now();
        let _ = window_at.set(flows_t0 + warmup);
        let _ = window_end.set(flows_t0 + Duration::from_nanos(sc.duration.0 .0));
        let len = sc.duration.0 .0 / 1_000_000;
        let running = std::sync::atomic::AtomicBool::new(true);
        let reports = std::thread::scope(|s| {
            s.spawn(|| {
                while running.load(std::sync::atomic::Ordering::Relaxed) {
                    progress((flows_t0.elapsed().as_millis() as u64).min(len));
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
            let r = traffic::run_flows(&rig.tb, &flows, layout.bin, sc.seed);
            running.store(false, std::sync::atomic::Ordering::Relaxed);
            r
        });
        let (gw, wan) = rig.stop();
        drop(rig);
        let reports = reports.map_err(|e| runtime(format!("live flows: {e}")))?;
        let measured = Measured {
            reports,
            gateway: snapshot_json(gw),
            wanem: snapshot_json(wan),
            wall_time_s: t0.elapsed().as_secs_f64(),
        };
        let (summary, goodput) = summary(&sc, &layout, &measured, &warnings);
        let mut written = Vec::new();
        if let Some(o) = &out {
            let files =
                write_outputs(o, &summary, &measured.reports, layout.bin).map_err(|e| runtime(e.to_string()))?;
            written = [files, vec![o.join("gateway-stats.jsonl")]].concat();
        }
        Ok(LiveRun { summary, reports: measured.reports, goodput, written })
    }
}

/// A box's final stats as JSON: its snapshot, `{"error": …}` if it failed, null if it did not run.
pub fn snapshot_json(x: Option<BoxResult>) -> Value {
    match x {
        Some(Ok(s)) => serde_json::from_str(&s.json_line()).unwrap_or(Value::Null),
        Some(Err(e)) => json!({ "error": e }),
        None => Value::Null,
    }
}

/// What a live run measured: the flows' reports and the boxes' final stats.
#[derive(Clone, Debug)]
pub struct Measured {
    pub reports: Vec<FlowReport>,
    /// The gateway's final snapshot ([`snapshot_json`]).
    pub gateway: Value,
    /// The WAN emulator's final snapshot.
    pub wanem: Value,
    /// From the testbed's start to the boxes' stop.
    pub wall_time_s: f64,
}

/// The summary's `scenario` object, with the keys of the simulator's (`set` only when there are
/// `--set`s).
fn scenario_info(sc: &Scenario, file: &str, dur_s: f64, warm: f64) -> Value {
    let mut v = json!({
        "name": sc.name.clone().unwrap_or_else(|| file.to_string()),
        "file": file,
        "duration_s": dur_s,
        "measure_from_s": warm,
    });
    if !sc.set.is_empty() {
        v["set"] = json!(sc.set);
    }
    v
}

/// A live run's `summary.json` in the simulator's shape (`flows`, `aggregate`, `links`,
/// `middleboxes`, so that `ackshape compare` reads both), with the boxes' own stats under
/// `gateway` and `wanem`, `mode = "live"`, and the warnings if any; floats rounded as the
/// simulator's. Also returns each flow's goodput over the measurement window.
pub fn summary(sc: &Scenario, layout: &Layout, m: &Measured, warnings: &[String]) -> (Value, Vec<f64>) {
    let dur_s = sc.duration.0.as_secs_f64();
    let warm = sc.warmup.map(|w| w.0.as_secs_f64()).unwrap_or(0.0);
    let mut fl = Vec::new();
    let mut good = Vec::new();
    for (i, r) in m.reports.iter().enumerate() {
        let win: Vec<&(f64, f64)> = r.series.iter().filter(|(t, _)| *t >= warm && *t < dur_s).collect();
        let g = if win.is_empty() { r.goodput_bps } else { win.iter().map(|(_, v)| v).sum::<f64>() / win.len() as f64 };
        good.push(g);
        fl.push(json!({
            "id": i, "name": r.name, "cc": r.cc, "goodput_bps": g, "bytes_delivered": r.bytes,
            "intact": r.intact, "error": r.error,
            "retransmitted_packets": r.retransmitted_packets,
            "mss": r.mss, "receiver_acks_per_segment": r.receiver_acks_per_segment,
        }));
    }
    // Links in the simulator's terms, from the wanem's counters: A→B is the bottleneck's data
    // direction (it leaves by port b), B→A the reverse. Real flows run a little longer than the
    // scenario (connection set-up, draining), so utilization is over the span in which the
    // receivers got data (from the goodput series), not over `duration`.
    let (wan_json, gw_json) = (&m.wanem, &m.gateway);
    // The box's stats in the simulator's shape (`middleboxes[]`), so `ackshape compare` reads both.
    let middleboxes: Vec<Value> = match &layout.mb_node {
        Some(node) => {
            let p = &gw_json["pipeline"];
            vec![json!({
                "node": node,
                "kind": p["kind"],
                "packets_seen": p["packets_seen"],
                "packets_emitted": p["packets_emitted"],
                "stats": p["stats"],
                "frames": p["frames"],
            })]
        }
        None => vec![],
    };
    let bin = layout.bin;
    let span_s = m
        .reports
        .iter()
        .flat_map(|r| r.series.iter().filter(|(_, v)| *v > 0.0).map(|(t, _)| t + bin.as_secs_f64()))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let mut links = Vec::new();
    let wan_stats = &wan_json["pipeline"]["stats"];
    let (bf, br) = layout.bottleneck_bps;
    let mut rows = vec![
        ("bottleneck".to_string(), &wan_stats["bottleneck"], "a_to_b", "b", bf),
        ("bottleneck:rev".to_string(), &wan_stats["bottleneck"], "b_to_a", "a", br),
    ];
    for (name, f, r) in &layout.wan_paths {
        let st = &wan_stats["access"][name.as_str()];
        rows.push((name.clone(), st, "a_to_b", "b", *f));
        rows.push((format!("{name}:rev"), st, "b_to_a", "a", *r));
    }
    let series = !layout.wan_paths.is_empty();
    for (name, stage, dir, port, rate) in rows {
        // The wanem's own counters, or those of the link box (the same keys, under the box's
        // stats; per link when the box is links in series, each counting what it sent).
        let (p, tx_packets, tx_bytes) = if series {
            let p = &stage[dir];
            (p, p["sent"].clone(), p["sent_bytes"].as_u64().unwrap_or(0))
        } else {
            let p = if layout.wan_boxed { &wan_json["pipeline"]["stats"][dir] } else { &wan_json["pipeline"][dir] };
            let tx = &wan_json["ports"][port];
            (p, tx["tx_packets"].clone(), tx["tx_bytes"].as_u64().unwrap_or(0))
        };
        if p.is_null() {
            continue;
        }
        links.push(json!({
            "name": name,
            "rate_bps": rate,
            "tx_packets": tx_packets,
            "tx_bytes": tx_bytes,
            "drops": p["queue_drops"],
            "lost": p["lost"],
            "utilization": tx_bytes as f64 * 8.0 / (rate as f64 * span_s),
            "queue_max_pkts": p["max_queue"],
        }));
    }
    let mut summary = json!({
        "ackshape": ackshape_sim::provenance::Provenance::json(),
        "scenario": scenario_info(sc, &layout.file, dur_s, warm),
        "seed": sc.seed,
        "mode": "live",
        "sim": { "events": 0, "wall_time_s": m.wall_time_s },
        "flows": fl,
        "aggregate": { "flows": good.len(), "goodput_bps": good.iter().sum::<f64>(), "jain": jain(&good), "cov": cov(&good) },
        "links": links,
        "middleboxes": middleboxes,
        "gateway": gw_json,
        "wanem": wan_json,
    });
    if !warnings.is_empty() {
        summary["warnings"] = json!(warnings);
    }
    // Printed and written as the simulator's: floats to 12 significant digits.
    ackshape_sim::run::round_json(&mut summary);
    (summary, good)
}

impl LiveRun {
    /// A flow failed or the receiver's data differ from what was sent.
    pub fn failed(&self) -> bool {
        self.reports.iter().any(|r| !r.intact || r.error.is_some())
    }

    /// The table a terminal shows: one row per flow (with many flows the first rows, every flow
    /// whose stream was not intact and a line on all), the box's counts and the aggregate.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let (summary, reports, good) = (&self.summary, &self.reports, &self.goodput);
        let mut s = String::new();
        let dur_s = summary["scenario"]["duration_s"].as_f64().unwrap_or(0.0);
        let _ = writeln!(s, "live run of {} ({} flows, {:.0} s)", summary["scenario"]["name"], good.len(), dur_s);
        let _ = writeln!(
            s,
            "{:>4} {:<6} {:<6} {:>14} {:>14} {:>8} {:>7}",
            "flow", "name", "cc", "goodput", "bytes", "retrans", "intact"
        );
        let fold = reports.len() > FLOW_ROWS_MAX;
        for (i, r) in reports.iter().enumerate() {
            if fold && i >= FLOW_ROWS_FOLDED && r.intact {
                continue;
            }
            let _ = writeln!(
                s,
                "{:>4} {:<6} {:<6} {:>14} {:>14} {:>8} {:>7}",
                i,
                r.name,
                r.cc.clone().unwrap_or_default(),
                fmt_rate(good[i]),
                r.bytes,
                r.retransmitted_packets.map_or("–".to_string(), |x| x.to_string()),
                r.intact
            );
        }
        if fold {
            let mut g = good.clone();
            g.sort_by(f64::total_cmp);
            let _ = writeln!(
                s,
                "… {} more flows; goodput over all {}: min {}, median {}, max {}; {} with none; {} not intact (listed above)",
                reports.len() - FLOW_ROWS_FOLDED.min(reports.len()),
                g.len(),
                fmt_rate(g[0]),
                fmt_rate(g[g.len() / 2]),
                fmt_rate(g[g.len() - 1]),
                g.iter().filter(|&&x| x == 0.0).count(),
                reports.iter().filter(|r| !r.intact).count()
            );
        }
        for m in summary["middleboxes"].as_array().into_iter().flatten() {
            let _ = writeln!(
                s,
                "middlebox {} at {}: {} packets seen, {} emitted",
                m["kind"].as_str().unwrap_or("?"),
                m["node"].as_str().unwrap_or("?"),
                m["packets_seen"],
                m["packets_emitted"]
            );
        }
        let _ = writeln!(
            s,
            "aggregate goodput {}, Jain {:.4}, CoV {:.4}",
            fmt_rate(good.iter().sum()),
            jain(good),
            cov(good)
        );
        s
    }
}

/// Write a live run's `summary.json`, `flows.csv`, `links.csv`, `timeseries.csv` and
/// `goodput.svg` into `out`, in the simulator's formats (with the columns a live run has);
/// returns the files written.
pub fn write_outputs(
    out: &Path,
    summary: &serde_json::Value,
    reports: &[traffic::FlowReport],
    bin: Duration,
) -> Result<Vec<PathBuf>, ackshape_sim::run::RunError> {
    use ackshape_sim::run::{write_csv, write_json_csv, RunError};
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |err| RunError::Io { path: path.clone(), err }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let mut files = Vec::new();
    let p = out.join("summary.json");
    std::fs::write(&p, serde_json::to_string_pretty(summary).unwrap() + "\n").map_err(io(&p))?;
    files.push(p);
    let p = out.join("flows.csv");
    let cols = [
        "id",
        "name",
        "cc",
        "goodput_bps",
        "bytes_delivered",
        "retransmitted_packets",
        "mss",
        "receiver_acks_per_segment",
        "intact",
    ];
    write_json_csv(&p, summary["flows"].as_array().into_iter().flatten(), &cols.map(|k| (k, k)))?;
    files.push(p);
    let p = out.join("links.csv");
    let cols = ["name", "rate_bps", "tx_packets", "tx_bytes", "drops", "lost", "utilization", "queue_max_pkts"];
    write_json_csv(&p, summary["links"].as_array().into_iter().flatten(), &cols.map(|k| (k, k)))?;
    files.push(p);
    // The simulator's bins: a bin's start plus its width is its end.
    let b = bin.as_secs_f64();
    let p = out.join("timeseries.csv");
    write_csv(
        &p,
        "t_end_s,flow,goodput_bps",
        reports.iter().enumerate().flat_map(|(i, r)| r.series.iter().map(move |(t, g)| format!("{},{i},{g}", t + b))),
    )?;
    files.push(p);
    let mut series: Vec<ackshape_sim::plot::Series> = reports
        .iter()
        .map(|r| ackshape_sim::plot::Series {
            name: format!("{} ({})", r.name, r.cc.as_deref().unwrap_or("default")),
            points: r.series.iter().map(|(t, g)| (t + b, *g)).collect(),
        })
        .collect();
    let name = summary["scenario"]["name"].as_str().unwrap_or("live run");
    // Many flows: their spread per bin, as the simulator's plot does.
    let title = if series.len() > ackshape_sim::run::FLOW_ROWS_MAX {
        let n = series.len();
        series = ackshape_sim::run::goodput_spread(&series);
        format!("{name} (live): goodput per flow, spread over the {n} flows per bin")
    } else {
        format!("{name} (live): goodput per flow")
    };
    let plot = ackshape_sim::plot::line_chart(&title, "time (s)", "goodput (Mbit/s)", 1e6, &series);
    files.extend(plot.write(out, "goodput").map_err(io(out))?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        Scenario::parse(
            &format!(
                "duration = \"4s\"\nwarmup = \"1s\"\n[topology]\nkind = \"dumbbell\"\n\
                 bottleneck = {{ rate = \"10Mbit/s\", delay = \"5ms\" }}\n\
                 access = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n{extra}"
            ),
            "live.toml",
        )
        .unwrap()
    }

    fn report(name: &str, series: &[(f64, f64)], intact: bool) -> FlowReport {
        FlowReport {
            name: name.into(),
            cc: Some("reno".into()),
            bytes: 1000,
            intact,
            goodput_bps: 1.0,
            series: series.to_vec(),
            retransmitted_packets: Some(2),
            mss: Some(1448),
            receiver_acks_per_segment: Some(0.5),
            error: None,
        }
    }

    /// What a live run cannot do is refused before it needs root, naming the file and the key.
    #[test]
    fn the_checks_name_the_file_and_key_without_root() {
        let e = |extra: &str| match check(&scenario(extra), Path::new("live.toml")) {
            Err(e) => e,
            Ok(_) => panic!("{extra} was accepted"),
        };
        let many = e("[[flows]]\nkind = \"bulk\"\ncount = 1001\n");
        assert_eq!(many.kind, Failure::BadInput);
        assert!(many.msg.starts_with("live.toml: key `flows[0].count`") && many.msg.contains("at most 1000"), "{many}");
        let node = e(
            "[[flows]]\nkind = \"bulk\"\n[[middlebox]]\nkind = \"gateway\"\nnode = \"right\"\nwan = \"bottleneck\"\n",
        );
        assert!(node.msg.contains("key `middlebox[0].node`"), "{node}");
        assert!(check(&scenario("[[flows]]\nkind = \"bulk\"\n"), Path::new("live.toml")).unwrap().is_none());
    }

    /// Bulk flows only, Linux's congestion controls only; a uniform start is spread evenly.
    #[test]
    fn the_flows_are_spread_and_linux_only() {
        let f =
            live_flows(&scenario("[[flows]]\nkind = \"bulk\"\ncount = 2\nstart = \"uniform(0s, 2s)\"\n"), "live.toml")
                .unwrap();
        let starts: Vec<f64> = f.iter().map(|f| f.start_s).collect();
        assert_eq!(starts, [0.5, 1.5]);
        assert_eq!(f[1].name, "f1");
        assert_eq!(f[0].duration_s, Some(3.5));
        let e =
            live_flows(&scenario("[[flows]]\nkind = \"bulk\"\ntcp = { cc = \"multcp\" }\n"), "live.toml").unwrap_err();
        assert_eq!(e.msg, "live.toml: key `flows[0].tcp.cc`: Linux has no MulTCP");
        let e = live_flows(&scenario("[[flows]]\nkind = \"udp-cbr\"\nrate = \"1Mbit/s\"\n"), "live.toml");
        assert!(e.unwrap_err().msg.contains("flows[0].kind"));
    }

    /// The summary in the simulator's shape from what the boxes and flows reported: goodput over
    /// the window after the warm-up, the wanem's counters as the bottleneck's links, the box as a
    /// middlebox; the table folds nothing with few flows.
    #[test]
    fn the_summary_and_table_are_built_from_the_measurements() {
        let sc = scenario("[[flows]]\nkind = \"bulk\"\ncount = 2\n");
        let layout = Layout {
            file: "live.toml".into(),
            mb_node: Some("left".into()),
            wan_boxed: false,
            wan_paths: vec![],
            bottleneck_bps: (10_000_000, 10_000_000),
            bin: Duration::from_secs(1),
        };
        let m = Measured {
            reports: vec![
                report("f0", &[(0.0, 9e6), (1.0, 4e6), (2.0, 6e6), (3.0, 5e6), (4.0, 1e6)], true),
                report("f1", &[(1.0, 2e6), (2.0, 4e6), (3.0, 3e6)], false),
            ],
            gateway: json!({"pipeline": {"kind": "gateway", "packets_seen": 10, "packets_emitted": 9, "stats": {}}}),
            wanem: json!({"pipeline": {"a_to_b": {"queue_drops": 3, "lost": 0, "max_queue": 7}},
                          "ports": {"b": {"tx_packets": 100, "tx_bytes": 5_000_000}}}),
            wall_time_s: 6.0,
        };
        let (s, good) = summary(&sc, &layout, &m, &["w".into()]);
        assert_eq!(good, [5e6, 3e6]);
        assert_eq!(s["aggregate"]["goodput_bps"], 8e6);
        assert_eq!(s["mode"], "live");
        assert_eq!(s["warnings"], json!(["w"]));
        assert_eq!(s["scenario"]["measure_from_s"], 1.0);
        assert_eq!(s["middleboxes"][0]["packets_seen"], 10);
        // Only the forward direction reported: one link, utilization over the 5 s with data.
        let links = s["links"].as_array().unwrap();
        assert_eq!(links.len(), 1, "{links:?}");
        assert_eq!(links[0]["drops"], 3);
        assert_eq!(links[0]["utilization"], 0.8);
        let run = LiveRun { summary: s, reports: m.reports, goodput: good, written: vec![] };
        assert!(run.failed());
        let t = run.text();
        assert!(t.starts_with("live run of \"live.toml\" (2 flows, 4 s)\n"), "{t}");
        assert!(t.contains("middlebox gateway at left: 10 packets seen, 9 emitted"), "{t}");
        let last = format!("aggregate goodput 8.000 Mbit/s, Jain 0.9412, CoV {:.4}\n", cov(&[5e6, 3e6]));
        assert!(t.ends_with(&last), "{t}");
        // The files a run writes, in the simulator's formats.
        let d = std::env::temp_dir().join(format!("ackshape-live-run-{}", std::process::id()));
        let files = write_outputs(&d, &run.summary, &run.reports, layout.bin).unwrap();
        let csv = std::fs::read_to_string(d.join("timeseries.csv")).unwrap();
        assert!(csv.starts_with("t_end_s,flow,goodput_bps\n1,0,9000000\n"), "{csv}");
        assert!(files.iter().any(|f| f.ends_with("flows.csv")) && files.iter().any(|f| f.ends_with("summary.json")));
        std::fs::remove_dir_all(&d).ok();
    }
}
