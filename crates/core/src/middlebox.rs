//! The seam where a box in the path shapes traffic: the [`Middlebox`] trait.
//!
//! A middlebox sits at a node between a LAN side and a WAN side (an edge gateway), or beside a
//! router seeing copies of its packets (a third-party tap, paper 004). It is sans-IO: the driver
//! hands it each packet with `now` and the direction, and sends out whatever it emits; held
//! packets and injected ones come out later from [`Middlebox::on_timeout`]. The simulator
//! (`ackshape-sim`) and the live gateway (`ackshape-live`, which parses frames into [`Packet`]s and
//! writes emitted ones back as frames) are its two drivers.
//!
//! Inline boxes must emit every packet they do not mean to drop or hold; mirror (tap) boxes get
//! copies and emit only what they inject.

use crate::time::Time;
use ackshape_wire::Packet;

/// Direction of a packet through a two-sided box.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dir {
    /// From the first side to the second (gateway: LAN → WAN, "outbound").
    AToB,
    /// From the second side to the first (gateway: WAN → LAN, "inbound").
    BToA,
}

impl Dir {
    pub fn index(self) -> usize {
        match self {
            Dir::AToB => 0,
            Dir::BToA => 1,
        }
    }
    pub fn reverse(self) -> Dir {
        match self {
            Dir::AToB => Dir::BToA,
            Dir::BToA => Dir::AToB,
        }
    }
}

/// Packets a middlebox sends now, each with the direction it travels.
pub type Emit = Vec<(Dir, Packet)>;

/// A packet-shaping box (gateway or tap). See the module documentation.
pub trait Middlebox {
    /// A packet crossing (inline) or mirrored at (tap) the box, travelling `dir`.
    fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit);
    /// The next time the box wants [`Middlebox::on_timeout`] (None: no timer).
    fn poll_timeout(&self) -> Option<Time> {
        None
    }
    /// Called at or after the time [`Middlebox::poll_timeout`] returned.
    fn on_timeout(&mut self, _now: Time, _out: &mut Emit) {}
    /// The measurement window (the scenario's warm-up is over) starts at `now`: a box that
    /// reports maxima or averages of its occupancy also reports them since then (under keys of
    /// its own, e.g. `…_after_warmup`), so start-up transients can be told apart. Counters and
    /// the whole-run values stay.
    fn start_window(&mut self, _now: Time) {}
    /// The measurement window ends at `now` (the scenario's duration; the live runner calls it,
    /// the simulator simply stops there): the since-warm-up maxima and averages stop at `now`,
    /// so what a run's teardown does is not counted. Counters and whole-run values go on.
    fn end_window(&mut self, _now: Time) {}
    /// Box-specific metrics for reports (JSON object), e.g. ACKs held, windows rewritten.
    fn stats_json(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Forwards everything unchanged (an inline box that does nothing).
#[derive(Clone, Copy, Debug, Default)]
pub struct PassThrough;

impl Middlebox for PassThrough {
    fn on_packet(&mut self, _now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
        out.push((dir, pkt));
    }
}

/// Emits nothing (a mirror box that only watches; inline it would drop everything).
#[derive(Clone, Copy, Debug, Default)]
pub struct Observe;

impl Middlebox for Observe {
    fn on_packet(&mut self, _now: Time, _dir: Dir, _pkt: Packet, _out: &mut Emit) {}
}
