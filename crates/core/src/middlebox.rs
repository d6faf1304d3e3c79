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

use crate::stats::BoxStats;
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
    /// Box-specific metrics for reports, e.g. ACKs held, windows rewritten: typed, serialised by
    /// the drivers at the edge ([`BoxStats::None`]: nothing to report).
    fn stats(&self) -> BoxStats {
        BoxStats::None
    }
    /// A reload replaces `old` by this box (built from a new configuration): take over the state
    /// of `old` that the new configuration keeps (the edge gateway: flows of the classes both
    /// policies have, with their mechanisms), and let `old` release, onto `out`, what it holds for
    /// state that does not carry over. `old` then gets no more packets; it keeps its timers for
    /// what it still holds. Default: nothing carries over.
    fn take_over(&mut self, _now: Time, _old: &mut (dyn Middlebox + Send), _out: &mut Emit) -> TakeOver {
        TakeOver::default()
    }
    /// The box as [`std::any::Any`], so that [`Middlebox::take_over`] can recognise a box of its
    /// own type. Default: None (nothing to take over from).
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

/// What [`Middlebox::take_over`] carried over and released.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TakeOver {
    /// Flows whose state the new box took over.
    pub flows_carried: u64,
    /// Flows the old box ended (releasing what it held for them), their class being gone or
    /// changed.
    pub flows_released: u64,
    /// Mechanisms (with their per-flow state) the new box took over.
    pub mechanisms_carried: u64,
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

/// Boxes with names (for their stats), as [`Series`] and [`Split`] hold them.
pub type Named = Vec<(String, Box<dyn Middlebox + Send>)>;

/// Each named box's stats under its name.
fn stats_by_name(boxes: &Named) -> BoxStats {
    BoxStats::Named(boxes.iter().map(|(n, b)| (n.clone(), b.stats())).collect())
}

/// Boxes in series, as links in a path: a packet travelling A → B passes the stages in order, one
/// travelling B → A in reverse order, and what a stage emits goes on to the next stage in the
/// direction it was emitted (a packet a stage turns around goes back the way it came). Each
/// stage sees a packet at the `now` the one before let it go, so delays and serialisation add
/// up. The live WAN emulator runs the bottleneck and the receivers' access link this way.
pub struct Series {
    stages: Named,
    scratch: Vec<Emit>,
}

impl Series {
    /// `stages`, named for [`Middlebox::stats`], from the A side to the B side.
    pub fn new(stages: Named) -> Series {
        let scratch = stages.iter().map(|_| Emit::new()).collect();
        Series { stages, scratch }
    }

    /// What stage `i` emitted goes on, stage by stage, until it leaves at either end.
    fn carry(&mut self, now: Time, i: usize, out: &mut Emit) {
        let mut batch = std::mem::take(&mut self.scratch[i]);
        for (dir, pkt) in batch.drain(..) {
            let next = match dir {
                Dir::AToB => i + 1,
                Dir::BToA => i.wrapping_sub(1),
            };
            if next < self.stages.len() {
                self.deliver(now, next, dir, pkt, out);
            } else {
                out.push((dir, pkt));
            }
        }
        self.scratch[i] = batch;
    }

    fn deliver(&mut self, now: Time, i: usize, dir: Dir, pkt: Packet, out: &mut Emit) {
        let mut emitted = std::mem::take(&mut self.scratch[i]);
        self.stages[i].1.on_packet(now, dir, pkt, &mut emitted);
        self.scratch[i] = emitted;
        self.carry(now, i, out);
    }
}

impl Middlebox for Series {
    fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
        match (dir, self.stages.len()) {
            (_, 0) => out.push((dir, pkt)),
            (Dir::AToB, _) => self.deliver(now, 0, dir, pkt, out),
            (Dir::BToA, n) => self.deliver(now, n - 1, dir, pkt, out),
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.stages.iter().filter_map(|(_, b)| b.poll_timeout()).min()
    }

    fn on_timeout(&mut self, now: Time, out: &mut Emit) {
        for i in 0..self.stages.len() {
            if self.stages[i].1.poll_timeout().is_some_and(|t| t <= now) {
                let mut emitted = std::mem::take(&mut self.scratch[i]);
                self.stages[i].1.on_timeout(now, &mut emitted);
                self.scratch[i] = emitted;
                self.carry(now, i, out);
            }
        }
    }

    fn start_window(&mut self, now: Time) {
        self.stages.iter_mut().for_each(|(_, b)| b.start_window(now));
    }

    fn end_window(&mut self, now: Time) {
        self.stages.iter_mut().for_each(|(_, b)| b.end_window(now));
    }

    /// Each stage's stats under its name.
    fn stats(&self) -> BoxStats {
        stats_by_name(&self.stages)
    }
}

/// Boxes side by side, a packet going to the one its classifier picks (e.g. each receiver's own
/// access link, chosen by the packet's flow). Each box keeps its own queues and timers.
pub struct Split {
    classify: Box<dyn Fn(&Packet) -> usize + Send>,
    boxes: Named,
}

impl Split {
    /// `boxes`, named for [`Middlebox::stats`]; `classify` gives a packet's box (an index
    /// past the end is taken as the last).
    pub fn new(
        boxes: Vec<(String, Box<dyn Middlebox + Send>)>,
        classify: Box<dyn Fn(&Packet) -> usize + Send>,
    ) -> Split {
        Split { classify, boxes }
    }
}

impl Middlebox for Split {
    fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
        match self.boxes.len() {
            0 => out.push((dir, pkt)),
            n => {
                let i = (self.classify)(&pkt).min(n - 1);
                self.boxes[i].1.on_packet(now, dir, pkt, out);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.boxes.iter().filter_map(|(_, b)| b.poll_timeout()).min()
    }

    fn on_timeout(&mut self, now: Time, out: &mut Emit) {
        for (_, b) in &mut self.boxes {
            if b.poll_timeout().is_some_and(|t| t <= now) {
                b.on_timeout(now, out);
            }
        }
    }

    fn start_window(&mut self, now: Time) {
        self.boxes.iter_mut().for_each(|(_, b)| b.start_window(now));
    }

    fn end_window(&mut self, now: Time) {
        self.boxes.iter_mut().for_each(|(_, b)| b.end_window(now));
    }

    /// Each box's stats under its name.
    fn stats(&self) -> BoxStats {
        stats_by_name(&self.boxes)
    }
}
