//! A running testbed: the namespaces of [`crate::testbed`] plus the gateway and (optionally) the
//! wanem running as threads inside their namespaces. What `ackshape run --live` and the live
//! tests and benchmark build on.

use crate::engine::{Control, SchedSpec};
use crate::gateway::{self, GatewayConfig, GatewayError};
use crate::pipeline::{PassThrough, Pipeline};
use crate::stats::Snapshot;
use crate::testbed::{spawn_in_netns, Middle, TestbedError, TestbedGuard, TopologySpec};
use crate::wanem::{self, LinkSpec, WanemConfig};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a box (gateway or wanem) ended: its final stats or the error.
pub type BoxResult = Result<Snapshot, String>;

type Handle = JoinHandle<std::io::Result<Result<Snapshot, GatewayError>>>;

/// Why a rig could not start.
#[derive(Debug, thiserror::Error)]
pub enum RigError {
    #[error(transparent)]
    Testbed(#[from] TestbedError),
    #[error("{what} failed to start: {msg}")]
    Start { what: &'static str, msg: String },
}

/// What to run in the middle of the testbed.
pub struct RigSpec {
    pub topology: TopologySpec,
    /// Gateway settings; `lan`/`wan` are filled in from the testbed. Ignored for `Middle::Bridge`.
    pub gateway: GatewayConfig,
    /// The gateway's pipeline (pass-through by default).
    pub pipeline: Box<dyn Pipeline>,
    /// wanem impairments (A→B = toward the receiver, B→A = toward the sender); used when
    /// `topology.wanem` is set.
    pub wanem: (LinkSpec, LinkSpec),
    pub wanem_seed: u64,
    /// SCHED_FIFO priority for the wanem thread (None: normal).
    pub wanem_realtime_priority: Option<i32>,
    /// Scheduling of the wanem thread (CPU, EEVDF slice, busy-poll window).
    pub wanem_sched: SchedSpec,
    /// Run this pipeline in the wanem instead of `wanem`'s impairments (a link with a queue
    /// discipline: `ackshape_core::shape::qlink::WanLink` in a `MiddleboxPipeline`).
    pub wanem_pipeline: Option<Box<dyn Pipeline>>,
}

impl RigSpec {
    pub fn new(prefix: &str) -> RigSpec {
        RigSpec {
            topology: TopologySpec::new(prefix),
            gateway: GatewayConfig::new("", ""),
            pipeline: Box::new(PassThrough),
            wanem: (LinkSpec::default(), LinkSpec::default()),
            wanem_seed: 1,
            wanem_realtime_priority: None,
            wanem_sched: SchedSpec::default(),
            wanem_pipeline: None,
        }
    }
}

/// A testbed with its boxes running. Dropping it stops the boxes and removes the namespaces.
pub struct Rig {
    gw: Option<(Control, Handle)>,
    wan: Option<(Control, Handle)>,
    /// The namespaces (removed on drop, after the boxes stop).
    pub tb: TestbedGuard,
}

fn wait_started(ctl: &Control, h: &mut Option<Handle>, what: &'static str) -> Result<(), RigError> {
    let t0 = Instant::now();
    while !ctl.wait_running(Duration::from_millis(20)) {
        let finished = h.as_ref().is_none_or(|h| h.is_finished());
        if finished || t0.elapsed() > Duration::from_secs(10) {
            let msg = match h.take().map(|h| h.join()) {
                Some(Ok(Ok(Err(e)))) => e.to_string(),
                Some(Ok(Err(e))) => e.to_string(),
                Some(Err(_)) => "thread panicked".into(),
                _ => "timed out".into(),
            };
            ctl.request_stop();
            return Err(RigError::Start { what, msg });
        }
    }
    Ok(())
}

impl Rig {
    /// Build the namespaces and start the gateway (unless the middle is a kernel bridge) and
    /// the wanem (if the topology has one).
    pub fn start(spec: RigSpec) -> Result<Rig, RigError> {
        let tb = TestbedGuard::up(&spec.topology)?;
        let mut rig = Rig { gw: None, wan: None, tb };
        if spec.topology.middle == Middle::Gateway {
            let mut gcfg = spec.gateway;
            gcfg.lan = rig.tb.if_gw_lan.clone();
            gcfg.wan = rig.tb.if_gw_wan.clone();
            let ctl = Control::new();
            let c2 = ctl.clone();
            let pipeline = spec.pipeline;
            let mut h = Some(
                spawn_in_netns(&rig.tb.ns_gateway, "acks-gateway", move || gateway::run_with(gcfg, &c2, pipeline))
                    .map_err(|e| RigError::Start { what: "gateway", msg: e.to_string() })?,
            );
            wait_started(&ctl, &mut h, "gateway")?;
            rig.gw = h.map(|h| (ctl, h));
        }
        if let (Some(ns), Some(a), Some(b)) = (&rig.tb.ns_wanem, &rig.tb.if_wan_a, &rig.tb.if_wan_b) {
            let mut wcfg = WanemConfig::new(a, b);
            wcfg.a_to_b = spec.wanem.0;
            wcfg.b_to_a = spec.wanem.1;
            wcfg.seed = spec.wanem_seed;
            wcfg.realtime_priority = spec.wanem_realtime_priority;
            wcfg.sched = spec.wanem_sched;
            wcfg.stats_interval = Duration::from_millis(200);
            let ctl = Control::new();
            let c2 = ctl.clone();
            let pipeline = spec.wanem_pipeline;
            let mut h = Some(
                spawn_in_netns(ns, "acks-wanem", move || wanem::run_with_pipeline(wcfg, &c2, pipeline))
                    .map_err(|e| RigError::Start { what: "wanem", msg: e.to_string() })?,
            );
            wait_started(&ctl, &mut h, "wanem")?;
            rig.wan = h.map(|h| (ctl, h));
        }
        Ok(rig)
    }

    /// The gateway's control handle (live stats, reload, stop).
    pub fn gateway(&self) -> Option<&Control> {
        self.gw.as_ref().map(|g| &g.0)
    }
    pub fn wanem(&self) -> Option<&Control> {
        self.wan.as_ref().map(|g| &g.0)
    }
    /// Whether the gateway thread is still running.
    pub fn gateway_alive(&self) -> bool {
        self.gw.as_ref().is_some_and(|(_, h)| !h.is_finished())
    }

    /// Stop the boxes; returns their final stats (gateway, wanem). Namespaces stay until drop.
    pub fn stop(&mut self) -> (Option<BoxResult>, Option<BoxResult>) {
        let fin = |x: Option<(Control, Handle)>| {
            x.map(|(c, h)| {
                c.request_stop();
                match h.join() {
                    Ok(Ok(Ok(s))) => Ok(s),
                    Ok(Ok(Err(e))) => Err(e.to_string()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err("thread panicked".to_string()),
                }
            })
        };
        (fin(self.gw.take()), fin(self.wan.take()))
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
