//! Any `ackshape_core` [`Middlebox`] as the engine's [`Pipeline`]: frames in, packets through the
//! box, frames out — at the box's own times.
//!
//! **In.** Each TCP frame (and, by default, each unfragmented non-TCP IP frame) is copied once into
//! a [`Bytes`], parsed ([`ackshape_wire::Packet::parse_frame`], done by the engine's classifier)
//! and handed to the box as a [`Packet`] whose payload is a slice of that copy (no second copy).
//! The pipeline remembers the frame (its *origin*) until the box emits the packet or drops it.
//! Frames it does not understand (non-IP, malformed, fragments) take the engine's usual path.
//!
//! **Out.** For every packet the box emits, the pipeline looks for the origin of the same packet
//! (same flow and direction; every header field equal except the ACK number, the window, the IP ECN
//! codepoint, the ECE/CWR flags and fewer SACK blocks; the same payload):
//! - found and unchanged: the original bytes are sent as they came (unknown TCP options, IP
//!   options, VLAN tags, padding all preserved);
//! - found and changed: a copy of the original frame is patched in place
//!   ([`ackshape_wire::TcpFrameMut`], RFC 1624 incremental checksums), so everything else is
//!   preserved too;
//! - not found (the box synthesised or rebuilt it, e.g. TCR's paced ACKs): it is serialised with
//!   the wire writer, behind the flow's last Ethernet header seen in that direction (or the
//!   reverse direction's with the addresses swapped; or the last one seen on that side of the
//!   box). Unknown options cannot be reproduced then; such frames are counted (`rebuilt`).
//!
//! **Time.** The box's [`Middlebox::poll_timeout`] is the engine's timer; frames emitted by
//! [`Middlebox::on_timeout`] carry the timer's deadline so the engine records how late they left
//! (the held-frame timing error).
//!
//! **Memory.** The box holds its own packets (its queues are its bound). The pipeline's own state
//! is bounded: at most `max_flows` flow entries (last Ethernet headers, origins in waiting), and
//! origins of at most `max_pending_bytes` in total; an origin whose packet the box dropped is
//! released by the sweep (data packets: once the box has let go of the payload) or after
//! `max_pending_age` (pure ACKs, whose empty payload cannot tell). The sweep is incremental: every
//! [`SWEEP_STEP`] it looks at the next [`SWEEP_CHUNK`] flows, so it never stalls the data plane
//! for long; a pass over all flows takes 10 ms up to 1 024 flows, ≈ 1 s at 100 000. A packet
//! whose origin was released is rebuilt when it comes out. Nothing here panics on input.

use crate::classify::FrameClass;
use crate::pipeline::{Dir, OutFrame, Pipeline, Verdict};
use crate::stats::FlowKey;
use ackshape_core::middlebox::{Emit, Middlebox};
use ackshape_core::time::{Dur, Time};
use ackshape_wire::{Ecn, Packet, ParsedFrame, TcpFlags, TcpFrameMut, L4};
use bytes::Bytes;
use indexmap::IndexMap;
use std::collections::VecDeque;

/// Bounds and choices of a [`MiddleboxPipeline`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MbPipelineConfig {
    /// Give unfragmented non-TCP IP frames (UDP, ICMP, …) to the box too, as the simulator does
    /// (default true). False: they bypass it (forwarded as the engine's policy says).
    pub non_tcp_to_box: bool,
    /// Flows with remembered state (Ethernet headers, origins in waiting) at most (default 65536).
    pub max_flows: usize,
    /// A flow with no frame for this long and nothing in waiting is forgotten (s, default 30).
    pub flow_idle_timeout_s: f64,
    /// Bytes of origins kept for packets inside the box at most (default 32 MiB).
    pub max_pending_bytes: usize,
    /// An origin not claimed within this long is released (s, default 10).
    pub max_pending_age_s: f64,
}

impl Default for MbPipelineConfig {
    fn default() -> Self {
        MbPipelineConfig {
            non_tcp_to_box: true,
            max_flows: 65_536,
            flow_idle_timeout_s: 30.0,
            max_pending_bytes: 32 << 20,
            max_pending_age_s: 10.0,
        }
    }
}

/// Flows one sweep step looks at (≈ 50 ns each: a step stays ≈ 50 µs).
pub const SWEEP_CHUNK: usize = 1024;
/// Sweep steps run at most this often: a pass over n flows takes `n / SWEEP_CHUNK` steps
/// (10 ms up to 1 024 flows, ≈ 1 s at 100 000).
pub const SWEEP_STEP: Dur = Dur(10_000_000);

/// Heap bytes charged per origin on top of its frame (entry, deque slot, Bytes header).
pub const PENDING_ENTRY_BYTES: usize = 256;
/// Heap bytes per flow entry (key, state, hash-map overhead), for the documented bound
/// `max_flows × MB_FLOW_BYTES + max_pending_bytes`.
pub const MB_FLOW_BYTES: usize = 320;

/// Counters of the pipeline itself (the box's own are its `Middlebox::stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct MbPipelineStats {
    /// Frames handed to the box.
    pub to_box: u64,
    /// Frames that bypassed the box (non-IP, malformed, fragments, non-TCP if so configured).
    pub bypassed: u64,
    /// Packets the box emitted.
    pub emitted: u64,
    /// … sent as the original bytes.
    pub sent_original: u64,
    /// … sent as the original frame patched in place.
    pub patched: u64,
    /// Patches by field.
    pub ack_rewrites: u64,
    pub window_rewrites: u64,
    pub ecn_rewrites: u64,
    pub sack_rewrites: u64,
    /// … serialised anew (no origin: synthesised by the box, or origin released).
    pub rebuilt: u64,
    /// … of which had a payload length but no payload bytes (written as zeros).
    pub rebuilt_zero_payload: u64,
    /// Emitted packets dropped because no Ethernet header was known for their direction.
    pub no_l2_header: u64,
    /// Origins released: the box dropped the packet (data) / not claimed in time / no room.
    pub origins_dropped_by_box: u64,
    pub origins_expired: u64,
    pub origins_untracked: u64,
    /// Flows forgotten after `flow_idle_timeout_s`; new flows not tracked (table full).
    pub flows_evicted: u64,
    pub flows_untracked: u64,
    /// Frames emitted by timers, and the latest timer deadline served.
    pub timer_frames: u64,
}

/// A frame waiting in the box: its bytes and the header copy to recognise it by.
struct Origin {
    at: Time,
    frame: Bytes,
    ip_offset: usize,
    l4_offset: usize,
    payload_offset: usize,
    /// Header copy, payload `None` (the payload is `frame[payload_offset..]`; holding no slice
    /// of it lets `frame.is_unique()` tell when the box let go of the packet).
    pkt: Packet,
}

/// An Ethernet header as seen (destination, source, optional 802.1Q tag), without the ethertype
/// of the IP layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct L2 {
    bytes: [u8; 16],
    len: u8,
}

impl L2 {
    fn of(frame: &[u8], parsed: &ParsedFrame) -> Option<L2> {
        // dst(6) src(6) [TPID TCI] ethertype: keep everything before the IP ethertype.
        let n = parsed.ip_offset.checked_sub(2)?;
        if !(n == 12 || n == 16) || frame.len() < n {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..n].copy_from_slice(&frame[..n]);
        Some(L2 { bytes, len: n as u8 })
    }
    /// The same header for the opposite direction (addresses swapped, tag kept).
    fn swapped(&self) -> L2 {
        let mut b = self.bytes;
        b[..6].copy_from_slice(&self.bytes[6..12]);
        b[6..12].copy_from_slice(&self.bytes[..6]);
        L2 { bytes: b, len: self.len }
    }
    fn write(&self, ethertype: u16, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.bytes[..self.len as usize]);
        out.extend_from_slice(&ethertype.to_be_bytes());
    }
}

#[derive(Default)]
struct FlowState {
    l2: [Option<L2>; 2],
    pending: [VecDeque<Origin>; 2],
    last: Time,
}

/// What differs between an origin and the packet the box emitted, when it is patchable.
#[derive(Default)]
struct Patch {
    ack: Option<u32>,
    window: Option<u16>,
    flags: Option<TcpFlags>,
    ecn: Option<Ecn>,
    sack: bool,
}

impl Patch {
    fn is_empty(&self) -> bool {
        self.ack.is_none() && self.window.is_none() && self.flags.is_none() && self.ecn.is_none() && !self.sack
    }
}

/// `emitted` is `origin` with at most the patchable fields changed: how to patch, or None.
fn diff(o: &Origin, e: &Packet) -> Option<Patch> {
    let op = &o.pkt;
    let (a, b) = (&op.ip, &e.ip);
    if a.src != b.src || a.dst != b.dst || a.ttl != b.ttl || a.dscp != b.dscp || a.id != b.id {
        return None;
    }
    if op.payload_len != e.payload_len {
        return None;
    }
    if let Some(p) = &e.payload {
        let po = o.payload_offset;
        let orig = o.frame.get(po..po + op.payload_len as usize)?;
        if p.len() != orig.len() || (p.as_ptr() != orig.as_ptr() && p[..] != orig[..]) {
            return None;
        }
    }
    let mut patch = Patch { ecn: (a.ecn != b.ecn).then_some(b.ecn), ..Default::default() };
    match (&op.l4, &e.l4) {
        (L4::Tcp(x), L4::Tcp(y)) => {
            const ECN_FLAGS: u8 = TcpFlags::ECE.0 | TcpFlags::CWR.0;
            if x.sport != y.sport || x.dport != y.dport || x.seq != y.seq || x.urgent != y.urgent {
                return None;
            }
            if (x.flags.0 ^ y.flags.0) & !ECN_FLAGS != 0 {
                return None;
            }
            if x.flags != y.flags {
                patch.flags = Some(y.flags);
            }
            if x.ack != y.ack {
                patch.ack = Some(y.ack.0);
            }
            if x.window != y.window {
                patch.window = Some(y.window);
            }
            if x.opts != y.opts {
                // Only fewer (or other) SACK blocks, in the room the header already has.
                let (mut xo, mut yo) = (x.opts.clone(), y.opts.clone());
                if yo.sack_len > xo.sack_len || xo.sack_len == 0 {
                    return None;
                }
                xo.set_sack_blocks(&[]);
                yo.set_sack_blocks(&[]);
                xo.normalize();
                yo.normalize();
                if xo != yo {
                    return None;
                }
                patch.sack = true;
            }
        }
        (x, y) if x == y => {}
        _ => return None,
    }
    Some(patch)
}

/// Drop boxes on a thread of their own: a box with a large policy and many flows takes
/// milliseconds to free, which the forwarding loop must not spend. (If no thread can be started,
/// they are dropped here.)
fn drop_off_thread(boxes: Vec<Box<dyn Middlebox + Send>>) {
    if boxes.is_empty() {
        return;
    }
    let _ = std::thread::Builder::new().name("acks-drop".into()).spawn(move || drop(boxes));
}

/// Runs a [`Middlebox`] on frames. See the module documentation.
pub struct MiddleboxPipeline {
    mb: Box<dyn Middlebox + Send>,
    kind: String,
    cfg: MbPipelineConfig,
    emit: Emit,
    out: Vec<OutFrame>,
    flows: IndexMap<FlowKey, FlowState>,
    /// The frame being handed to the box right now: most boxes emit it at once.
    cur: Option<(FlowKey, Dir, Origin)>,
    last_l2: [Option<L2>; 2],
    pending_bytes: usize,
    pending_count: usize,
    last_sweep: Option<Time>,
    last_full_sweep: Option<Time>,
    /// Where the next sweep step starts (an index into `flows`).
    sweep_cursor: usize,
    /// Boxes replaced by [`MiddleboxPipeline::replace_box`] that still release what they hold,
    /// until their deadline.
    retiring: Vec<(Box<dyn Middlebox + Send>, Time)>,
    reloads: u64,
    /// Over all reloads: flows and mechanisms the new box took over, flows the old one released.
    flows_carried: u64,
    flows_released: u64,
    mechanisms_carried: u64,
    /// Retiring boxes dropped at their deadline with a timer still pending (what they held is lost).
    retired_holding: u64,
    packets_seen: u64,
    stats: MbPipelineStats,
    scratch: Vec<u8>,
    /// When the box's measurement window starts ([`Middlebox::start_window`]), once the owner
    /// sets it (None: not asked for, or started).
    window_at: Option<WindowStart>,
    /// When it ends ([`Middlebox::end_window`]; None: not asked for, or ended).
    window_end: Option<WindowStart>,
}

/// When a box's measurement window starts, set once by the owner of the run.
pub type WindowStart = std::sync::Arc<std::sync::OnceLock<std::time::Instant>>;

impl MiddleboxPipeline {
    /// Run `mb` (its `kind` names it in stats) with the default bounds.
    pub fn new(mb: Box<dyn Middlebox + Send>, kind: &str) -> MiddleboxPipeline {
        MiddleboxPipeline::with_config(mb, kind, MbPipelineConfig::default())
    }

    pub fn with_config(mb: Box<dyn Middlebox + Send>, kind: &str, cfg: MbPipelineConfig) -> MiddleboxPipeline {
        MiddleboxPipeline {
            mb,
            kind: kind.to_string(),
            cfg,
            emit: Vec::new(),
            out: Vec::new(),
            flows: IndexMap::new(),
            cur: None,
            last_l2: [None, None],
            pending_bytes: 0,
            pending_count: 0,
            last_sweep: None,
            last_full_sweep: None,
            sweep_cursor: 0,
            retiring: Vec::new(),
            reloads: 0,
            flows_carried: 0,
            flows_released: 0,
            mechanisms_carried: 0,
            retired_holding: 0,
            packets_seen: 0,
            stats: MbPipelineStats::default(),
            scratch: Vec::new(),
            window_at: None,
            window_end: None,
        }
    }

    /// Start the box's measurement window (the scenario's warm-up over) at the first frame or
    /// timer at or after the instant the owner sets in `at` (from another thread, e.g. once the
    /// flows start): the box then reports its occupancy maxima and averages since then too.
    pub fn start_window_at(mut self, at: WindowStart) -> MiddleboxPipeline {
        self.window_at = Some(at);
        self
    }

    /// End the measurement window at the first frame or timer at or after the instant set in
    /// `at` (the scenario's duration, so a run's teardown is not measured; the simulator stops
    /// there). An end that comes before the start is applied once the window has started.
    pub fn end_window_at(mut self, at: WindowStart) -> MiddleboxPipeline {
        self.window_end = Some(at);
        self
    }

    #[inline]
    fn window_check(&mut self, now: Time) {
        if self.window_at.as_ref().and_then(|w| w.get()).is_some_and(|at| std::time::Instant::now() >= *at) {
            self.window_at = None;
            self.mb.start_window(now);
        }
        if self.window_at.is_none()
            && self.window_end.as_ref().and_then(|w| w.get()).is_some_and(|at| std::time::Instant::now() >= *at)
        {
            self.window_end = None;
            self.mb.end_window(now);
        }
    }

    /// The pipeline's own counters.
    pub fn stats(&self) -> &MbPipelineStats {
        &self.stats
    }
    /// Origins in waiting (count, bytes charged).
    pub fn pending(&self) -> (usize, usize) {
        (self.pending_count, self.pending_bytes)
    }
    /// Flows with remembered state.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }
    /// The box.
    pub fn middlebox(&self) -> &(dyn Middlebox + Send) {
        &*self.mb
    }

    /// Run `mb` from now on. The old box gets no new packets but keeps its timers: what it holds
    /// leaves at its own times until `grace` has passed; then it is dropped with whatever it still
    /// holds (counted in `retired_holding` if it still had a timer). A box without a timer
    /// pending is dropped at once. Origins, flows and counters of the pipeline carry over.
    ///
    /// The new box first takes over what of the old one's state it keeps
    /// ([`Middlebox::take_over`]: the gateway's flows of the classes both policies have); what the
    /// old box releases for the rest leaves with the next output.
    pub fn replace_box(&mut self, now: Time, mb: Box<dyn Middlebox + Send>, kind: &str, grace: Dur) {
        let mut old = std::mem::replace(&mut self.mb, mb);
        let t = self.mb.take_over(now, old.as_mut(), &mut self.emit);
        self.process_emit(None);
        self.flows_carried += t.flows_carried;
        self.flows_released += t.flows_released;
        self.mechanisms_carried += t.mechanisms_carried;
        if old.poll_timeout().is_some() {
            self.retiring.push((old, now + grace));
        } else {
            drop_off_thread(vec![old]);
        }
        self.kind = kind.to_string();
        self.reloads += 1;
    }

    /// The bounds in force.
    pub fn config(&self) -> &MbPipelineConfig {
        &self.cfg
    }

    /// New bounds (a policy reload), in force from the next frame. Below a lowered `max_flows`
    /// the flows already kept stay until they go idle; new ones are not remembered meanwhile.
    pub fn set_config(&mut self, cfg: MbPipelineConfig) {
        self.cfg = cfg;
    }

    /// Boxes still draining after a replacement.
    pub fn retiring(&self) -> usize {
        self.retiring.len()
    }

    fn charge(o: &Origin) -> usize {
        o.frame.len() + PENDING_ENTRY_BYTES
    }

    /// Release origins the box let go of or that waited too long; forget idle flows.
    ///
    /// Incremental: a step (at most every [`SWEEP_STEP`]) looks at the next [`SWEEP_CHUNK`]
    /// flows, so one step stays short however many flows there are (a whole-table pass over
    /// 100 000 flows took 5 ms of the data-plane thread, every 100 ms; docs/benchmarks.md,
    /// "PostACK with many flows"), and a pass over all flows takes `flows / SWEEP_CHUNK` steps.
    /// `force` (origins over their byte budget) sweeps every flow, at most every 100 ms.
    fn sweep(&mut self, now: Time, force: bool) {
        let full = force && self.last_full_sweep.is_none_or(|t| now.since(t) >= Dur::from_millis(100));
        if !full && self.last_sweep.is_some_and(|t| now.since(t) < SWEEP_STEP) {
            return;
        }
        self.last_sweep = Some(now);
        let max_age = Dur::from_secs_f64(self.cfg.max_pending_age_s);
        let idle = Dur::from_secs_f64(self.cfg.flow_idle_timeout_s);
        let (mut freed_bytes, mut freed) = (0usize, 0usize);
        let (mut by_box, mut expired, mut evicted) = (0u64, 0u64, 0u64);
        let (mut i, mut budget) = if full {
            self.last_full_sweep = Some(now);
            (0, usize::MAX)
        } else {
            (self.sweep_cursor, SWEEP_CHUNK)
        };
        while budget > 0 && i < self.flows.len() {
            budget -= 1;
            let Some((_, f)) = self.flows.get_index_mut(i) else { break };
            for q in &mut f.pending {
                q.retain(|o| {
                    let release = if o.pkt.payload_len > 0 && o.frame.is_unique() {
                        by_box += 1;
                        true
                    } else if now.since(o.at) >= max_age {
                        expired += 1;
                        true
                    } else {
                        false
                    };
                    if release {
                        freed_bytes += Self::charge(o);
                        freed += 1;
                    }
                    !release
                });
            }
            if f.pending[0].is_empty() && f.pending[1].is_empty() && now.since(f.last) >= idle {
                // The last flow moves into slot i: look at it next.
                self.flows.swap_remove_index(i);
                evicted += 1;
            } else {
                i += 1;
            }
        }
        self.sweep_cursor = if i >= self.flows.len() { 0 } else { i };
        self.pending_bytes = self.pending_bytes.saturating_sub(freed_bytes);
        self.pending_count = self.pending_count.saturating_sub(freed);
        self.stats.origins_dropped_by_box += by_box;
        self.stats.origins_expired += expired;
        self.stats.flows_evicted += evicted;
        if self.sweep_cursor == 0 && self.flows.capacity() > 4 * self.flows.len().max(1024) {
            self.flows.shrink_to(2 * self.flows.len());
        }
    }

    /// Frames for the emitted packets in `self.emit`.
    fn process_emit(&mut self, due: Option<Time>) {
        let mut emit = std::mem::take(&mut self.emit);
        for (d, p) in emit.drain(..) {
            self.stats.emitted += 1;
            if due.is_some() {
                self.stats.timer_frames += 1;
            }
            let key = FlowKey::of(&p, d);
            // The origin: the frame being handled now, else the flow's frames in waiting.
            let mut found: Option<(Origin, Patch)> = None;
            if let Some((k, cd, o)) = &self.cur {
                if *k == key && *cd == d {
                    if let Some(patch) = diff(o, &p) {
                        let (_, _, o) = self.cur.take().expect("checked");
                        found = Some((o, patch));
                    }
                }
            }
            if found.is_none() {
                if let Some(f) = self.flows.get_mut(&key) {
                    let q = &mut f.pending[d.index()];
                    if let Some((i, patch)) = q.iter().enumerate().find_map(|(i, o)| diff(o, &p).map(|x| (i, x))) {
                        if let Some(o) = q.remove(i) {
                            self.pending_bytes = self.pending_bytes.saturating_sub(Self::charge(&o));
                            self.pending_count = self.pending_count.saturating_sub(1);
                            found = Some((o, patch));
                        }
                    }
                }
            }
            let frame = match found {
                Some((o, patch)) if patch.is_empty() => {
                    self.stats.sent_original += 1;
                    o.frame
                }
                Some((o, patch)) => match self.patched(&o, &p, &patch) {
                    Some(f) => f,
                    None => match self.rebuild(&key, d, &p) {
                        Some(f) => f,
                        None => continue,
                    },
                },
                None => match self.rebuild(&key, d, &p) {
                    Some(f) => f,
                    None => continue,
                },
            };
            self.out.push(OutFrame { dir: d, frame, due });
        }
        self.emit = emit;
    }

    /// A copy of the origin's frame with the patch applied in place.
    fn patched(&mut self, o: &Origin, p: &Packet, patch: &Patch) -> Option<Bytes> {
        let mut v = o.frame.to_vec();
        if let L4::Tcp(t) = &p.l4 {
            let mut view = TcpFrameMut::from_offsets(&mut v, o.ip_offset, o.l4_offset).ok()?;
            if let Some(a) = patch.ack {
                view.set_ack(ackshape_wire::SeqNum(a));
                self.stats.ack_rewrites += 1;
            }
            if let Some(w) = patch.window {
                view.set_window(w);
                self.stats.window_rewrites += 1;
            }
            if let Some(f) = patch.flags {
                view.set_flags(f);
            }
            if patch.sack {
                view.set_sack_blocks(t.opts.sack_blocks()).ok()?;
                self.stats.sack_rewrites += 1;
            }
            if let Some(e) = patch.ecn {
                view.set_ecn(e);
            }
        } else if let Some(e) = patch.ecn {
            ackshape_wire::set_ip_ecn(&mut v, o.ip_offset, e).ok()?;
        }
        if patch.ecn.is_some() || patch.flags.is_some() {
            self.stats.ecn_rewrites += 1;
        }
        self.stats.patched += 1;
        Some(Bytes::from(v))
    }

    /// Serialise `p` anew behind the best Ethernet header known for its flow and direction.
    fn rebuild(&mut self, key: &FlowKey, d: Dir, p: &Packet) -> Option<Bytes> {
        let i = d.index();
        let flow = self.flows.get(key);
        let l2 = flow
            .and_then(|f| f.l2[i])
            .or_else(|| flow.and_then(|f| f.l2[1 - i]).map(|h| h.swapped()))
            .or(self.last_l2[i])
            .or_else(|| self.last_l2[1 - i].map(|h| h.swapped()));
        let Some(l2) = l2 else {
            self.stats.no_l2_header += 1;
            return None;
        };
        self.stats.rebuilt += 1;
        if p.payload.is_none() && p.payload_len > 0 {
            self.stats.rebuilt_zero_payload += 1;
        }
        let ethertype = if p.ip.src.is_ipv4() { 0x0800 } else { 0x86dd };
        let mut v = std::mem::take(&mut self.scratch);
        v.clear();
        v.reserve(l2.len as usize + 2 + p.ip_len());
        l2.write(ethertype, &mut v);
        p.write_ip(&mut v);
        let out = Bytes::copy_from_slice(&v);
        self.scratch = v;
        Some(out)
    }

    /// Remember an origin the box kept, if there is room.
    fn keep_origin(&mut self, now: Time, key: FlowKey, d: Dir, o: Origin) {
        let size = Self::charge(&o);
        if self.pending_bytes + size > self.cfg.max_pending_bytes {
            self.sweep(now, true);
        }
        if self.pending_bytes + size > self.cfg.max_pending_bytes {
            self.stats.origins_untracked += 1;
            return;
        }
        match self.flows.get_mut(&key) {
            Some(f) => {
                f.pending[d.index()].push_back(o);
                self.pending_bytes += size;
                self.pending_count += 1;
            }
            None => self.stats.origins_untracked += 1,
        }
    }

    /// Note a frame's flow (and its Ethernet header).
    fn touch_flow(&mut self, now: Time, key: FlowKey, d: Dir, l2: Option<L2>) {
        if let Some(h) = l2 {
            self.last_l2[d.index()] = Some(h);
        }
        // One lookup for a known flow (the common case).
        if let Some(f) = self.flows.get_mut(&key) {
            f.last = now;
            if l2.is_some() {
                f.l2[d.index()] = l2;
            }
            return;
        }
        if self.flows.len() >= self.cfg.max_flows {
            self.sweep(now, false);
            if self.flows.len() >= self.cfg.max_flows {
                self.stats.flows_untracked += 1;
                return;
            }
        }
        let mut f = FlowState { last: now, ..Default::default() };
        f.l2[d.index()] = l2;
        self.flows.insert(key, f);
    }
}

impl Pipeline for MiddleboxPipeline {
    fn on_frame(&mut self, now: Time, dir: Dir, frame: &mut [u8], class: &FrameClass) -> Verdict {
        let parsed = match class {
            FrameClass::Tcp(p) => p,
            FrameClass::NonTcp { parsed, fragment: false } if self.cfg.non_tcp_to_box => parsed,
            _ => {
                self.stats.bypassed += 1;
                return Verdict::Forward;
            }
        };
        let po = parsed.payload_offset;
        let plen = parsed.packet.payload_len as usize;
        if po.checked_add(plen).is_none_or(|end| end > frame.len()) || parsed.l4_offset > frame.len() {
            self.stats.bypassed += 1;
            return Verdict::Forward;
        }
        self.sweep(now, false);
        self.window_check(now);
        let fb = Bytes::copy_from_slice(frame);
        let mut pkt = parsed.packet.clone();
        let key = FlowKey::of(&pkt, dir);
        self.touch_flow(now, key, dir, L2::of(frame, parsed));
        let origin = Origin {
            at: now,
            frame: fb.clone(),
            ip_offset: parsed.ip_offset,
            l4_offset: parsed.l4_offset,
            payload_offset: po,
            pkt: pkt.clone(),
        };
        pkt.payload = Some(fb.slice(po..po + plen));
        drop(fb);
        self.cur = Some((key, dir, origin));
        self.stats.to_box += 1;
        self.packets_seen += 1;
        self.mb.on_packet(now, dir, pkt, &mut self.emit);
        self.process_emit(None);
        if let Some((k, d, o)) = self.cur.take() {
            self.keep_origin(now, k, d, o);
        }
        Verdict::Consumed
    }

    fn poll_timeout(&self) -> Option<Time> {
        if !self.out.is_empty() {
            // Frames waiting to be taken (what a reload released): due at once.
            return Some(Time::ZERO);
        }
        let retiring = self.retiring.iter().filter_map(|(b, end)| b.poll_timeout().map(|t| t.min(*end)));
        self.mb.poll_timeout().into_iter().chain(retiring).min()
    }

    fn on_timeout(&mut self, now: Time) {
        self.window_check(now);
        if let Some(due) = self.mb.poll_timeout().filter(|&t| t <= now) {
            self.mb.on_timeout(now, &mut self.emit);
            self.process_emit(Some(due));
        }
        if !self.retiring.is_empty() {
            let mut retiring = std::mem::take(&mut self.retiring);
            for (b, _) in retiring.iter_mut() {
                if let Some(due) = b.poll_timeout().filter(|&t| t <= now) {
                    b.on_timeout(now, &mut self.emit);
                    self.process_emit(Some(due));
                }
            }
            let mut done = Vec::new();
            for (b, end) in retiring.drain(..) {
                match b.poll_timeout() {
                    None => done.push(b),
                    Some(_) if end <= now => {
                        self.retired_holding += 1;
                        done.push(b);
                    }
                    Some(_) => self.retiring.push((b, end)),
                }
            }
            drop_off_thread(done);
        }
        self.sweep(now, false);
    }

    fn take_output(&mut self, out: &mut Vec<OutFrame>) {
        out.append(&mut self.out);
    }

    fn stats_json(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind,
            "packets_seen": self.packets_seen,
            "packets_emitted": self.stats.emitted,
            "stats": serde_json::to_value(self.mb.stats()).unwrap_or_default(),
            "frames": self.stats,
            "origins_waiting": self.pending_count,
            "origins_bytes": self.pending_bytes,
            "flows": self.flows.len(),
            "reloads": self.reloads,
            "reload_flows_carried": self.flows_carried,
            "reload_flows_released": self.flows_released,
            "reload_mechanisms_carried": self.mechanisms_carried,
            "retiring_boxes": self.retiring.len(),
            "retired_holding": self.retired_holding,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::classify;
    use crate::testing::{tcp_frame, SINK_MAC, SRC_MAC};
    use ackshape_core::middlebox::PassThrough;
    use ackshape_wire::verify_checksums;

    /// A box that maps each packet through a closure.
    struct MapBox<F: FnMut(Dir, Packet) -> Vec<(Dir, Packet)> + Send>(F);
    impl<F: FnMut(Dir, Packet) -> Vec<(Dir, Packet)> + Send> Middlebox for MapBox<F> {
        fn on_packet(&mut self, _now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
            out.extend((self.0)(dir, pkt));
        }
    }

    /// Holds every packet for `delay`, then emits it unchanged.
    struct DelayBox {
        delay: Dur,
        q: VecDeque<(Time, Dir, Packet)>,
    }
    impl Middlebox for DelayBox {
        fn on_packet(&mut self, now: Time, dir: Dir, pkt: Packet, _out: &mut Emit) {
            self.q.push_back((now + self.delay, dir, pkt));
        }
        fn poll_timeout(&self) -> Option<Time> {
            self.q.front().map(|x| x.0)
        }
        fn on_timeout(&mut self, now: Time, out: &mut Emit) {
            while self.q.front().is_some_and(|x| x.0 <= now) {
                let (_, d, p) = self.q.pop_front().unwrap();
                out.push((d, p));
            }
        }
    }

    /// An IPv4/TCP frame with an unknown TCP option (kind 254), timestamps, and IP options, behind
    /// a VLAN tag: everything a rebuilt frame would lose.
    fn rich_frame(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
        let opts = [254u8, 6, 0xde, 0xad, 0xbe, 0xef, 1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9];
        let mut f = tcp_frame(src, dst, sport, dport, seq, flags, &opts, payload);
        // IP options: 4 bytes of NOPs + EOL (IHL 6), lengths and IP checksum fixed.
        f.splice(34..34, [1u8, 1, 1, 0]);
        f[14] = 0x46;
        let total = u16::from_be_bytes([f[16], f[17]]) + 4;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[24] = 0;
        f[25] = 0;
        let mut sum = 0u32;
        for w in f[14..38].chunks(2) {
            sum += u16::from_be_bytes([w[0], w[1]]) as u32;
        }
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
        // 802.1Q tag, VLAN 7.
        f.splice(12..12, [0x81u8, 0x00, 0x00, 0x07]);
        verify_checksums(&f).expect("test frame is valid");
        f
    }

    fn feed(p: &mut MiddleboxPipeline, now: Time, dir: Dir, frame: &[u8]) -> (Verdict, Vec<OutFrame>) {
        let mut f = frame.to_vec();
        let c = classify(&f);
        let v = p.on_frame(now, dir, &mut f, &c);
        let mut out = Vec::new();
        p.take_output(&mut out);
        (v, out)
    }

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    #[test]
    fn unchanged_packets_leave_as_their_original_bytes() {
        let mut p = MiddleboxPipeline::new(Box::new(PassThrough), "pass-through");
        let data = rich_frame(A, B, 1000, 80, 1, 0x18, &[7u8; 300]);
        let ack = rich_frame(B, A, 80, 1000, 5, 0x10, &[]);
        for (dir, f) in [(Dir::AToB, &data), (Dir::BToA, &ack)] {
            let (v, out) = feed(&mut p, Time(1), dir, f);
            assert_eq!(v, Verdict::Consumed);
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].dir, dir);
            assert_eq!(&out[0].frame[..], &f[..], "byte for byte");
            assert_eq!(out[0].due, None);
        }
        assert_eq!(p.stats().sent_original, 2);
        assert_eq!(p.pending(), (0, 0), "nothing left waiting");
        // Non-IP and malformed frames are not the box's.
        let arp = [&SINK_MAC[..], &SRC_MAC[..], &[0x08, 0x06], &[0u8; 28]].concat();
        assert_eq!(feed(&mut p, Time(2), Dir::AToB, &arp).0, Verdict::Forward);
        assert_eq!(feed(&mut p, Time(2), Dir::AToB, &data[..30]).0, Verdict::Forward);
        assert_eq!(p.stats().bypassed, 2);
    }

    #[test]
    fn ack_window_and_ecn_changes_patch_the_original_frame() {
        let mb = MapBox(|d: Dir, mut pkt: Packet| {
            if d == Dir::BToA {
                let t = pkt.tcp_mut().unwrap();
                t.ack += 1000;
                t.window = 77;
                t.flags.insert(TcpFlags::ECE);
                pkt.ip.ecn = Ecn::Ce;
            }
            vec![(d, pkt)]
        });
        let mut p = MiddleboxPipeline::new(Box::new(mb), "map");
        let ack = rich_frame(B, A, 80, 1000, 5, 0x10, &[]);
        let (_, out) = feed(&mut p, Time(1), Dir::BToA, &ack);
        let f = &out[0].frame;
        verify_checksums(f).expect("checksums valid after the patch");
        assert_eq!(f.len(), ack.len());
        let pf = Packet::parse_frame(f).unwrap();
        let t = pf.packet.tcp().unwrap();
        assert_eq!((t.ack.0, t.window), (1000, 77));
        assert!(t.flags.contains(TcpFlags::ECE) && t.opts.has_other);
        assert_eq!(pf.packet.ip.ecn, Ecn::Ce);
        assert_eq!(pf.vlan_tci, Some(7));
        // Everything else is the original's, byte for byte: only the ACK, window, flags and
        // checksum bytes of TCP and the TOS and checksum bytes of IP differ.
        let diff: Vec<usize> = (0..f.len()).filter(|&i| f[i] != ack[i]).collect();
        let (ip, tcp) = (18, pf.l4_offset);
        let allowed = [
            ip + 1,
            ip + 10,
            ip + 11,
            tcp + 8,
            tcp + 9,
            tcp + 10,
            tcp + 11,
            tcp + 13,
            tcp + 14,
            tcp + 15,
            tcp + 16,
            tcp + 17,
        ];
        assert!(diff.iter().all(|i| allowed.contains(i)), "changed bytes {diff:?}");
        let s = p.stats();
        assert_eq!((s.patched, s.ack_rewrites, s.window_rewrites, s.ecn_rewrites, s.rebuilt), (1, 1, 1, 1, 0));
    }

    #[test]
    fn fewer_sack_blocks_are_patched_in_place() {
        let mb = MapBox(|d: Dir, mut pkt: Packet| {
            let t = pkt.tcp_mut().unwrap();
            let first = t.opts.sack_blocks()[..1].to_vec();
            t.opts.set_sack_blocks(&first);
            vec![(d, pkt)]
        });
        let mut p = MiddleboxPipeline::new(Box::new(mb), "map");
        let mut sack = vec![1u8, 1, 5, 18];
        for x in [100u32, 200, 300, 400] {
            sack.extend_from_slice(&x.to_be_bytes());
        }
        let f = tcp_frame(B, A, 80, 1000, 5, 0x10, &sack, &[]);
        let (_, out) = feed(&mut p, Time(1), Dir::BToA, &f);
        verify_checksums(&out[0].frame).unwrap();
        let t = Packet::parse_frame(&out[0].frame).unwrap().packet.tcp().unwrap().clone();
        assert_eq!(t.opts.sack_blocks().len(), 1);
        assert_eq!((t.opts.sack[0].left.0, t.opts.sack[0].right.0), (100, 200));
        assert_eq!((p.stats().patched, p.stats().sack_rewrites), (1, 1));
    }

    #[test]
    fn synthesised_packets_are_written_behind_the_flows_ethernet_header() {
        // On every data packet, the box also answers with a new ACK toward the sender.
        let mb = MapBox(|d: Dir, pkt: Packet| {
            let mut v = vec![(d, pkt.clone())];
            if d == Dir::AToB {
                let t = pkt.tcp().unwrap();
                let mut ack = pkt.clone();
                ack.ip.src = pkt.ip.dst;
                ack.ip.dst = pkt.ip.src;
                ack.payload_len = 0;
                ack.payload = None;
                let at = ack.tcp_mut().unwrap();
                at.sport = t.dport;
                at.dport = t.sport;
                at.seq = t.ack;
                at.ack = t.seq + pkt.payload_len;
                at.flags = TcpFlags::ACK;
                v.push((Dir::BToA, ack));
            }
            v
        });
        let mut p = MiddleboxPipeline::new(Box::new(mb), "map");
        let data = rich_frame(A, B, 1000, 80, 1, 0x18, &[7u8; 100]);
        let (_, out) = feed(&mut p, Time(1), Dir::AToB, &data);
        assert_eq!(out.len(), 2);
        assert_eq!(&out[0].frame[..], &data[..]);
        let ack = &out[1];
        assert_eq!(ack.dir, Dir::BToA);
        verify_checksums(&ack.frame).expect("valid checksums");
        let pf = Packet::parse_frame(&ack.frame).unwrap();
        // The reverse direction was never seen: the data frame's header with the addresses swapped.
        assert_eq!((pf.eth_dst, pf.eth_src, pf.vlan_tci), (SRC_MAC, SINK_MAC, Some(7)));
        assert_eq!(pf.packet.tcp().unwrap().ack.0, 101);
        assert_eq!(p.stats().rebuilt, 1);
    }

    #[test]
    fn the_measurement_window_starts_and_ends_at_the_instants_set() {
        type Log = std::sync::Arc<std::sync::Mutex<Vec<(&'static str, Time)>>>;
        struct WinBox(Log);
        impl Middlebox for WinBox {
            fn on_packet(&mut self, _now: Time, dir: Dir, pkt: Packet, out: &mut Emit) {
                out.push((dir, pkt));
            }
            fn start_window(&mut self, now: Time) {
                self.0.lock().unwrap().push(("start", now));
            }
            fn end_window(&mut self, now: Time) {
                self.0.lock().unwrap().push(("end", now));
            }
        }
        let log = Log::default();
        let (start, end) = (WindowStart::default(), WindowStart::default());
        let mut p = MiddleboxPipeline::new(Box::new(WinBox(log.clone())), "win")
            .start_window_at(start.clone())
            .end_window_at(end.clone());
        let f = rich_frame(A, B, 1000, 80, 1, 0x18, &[1u8; 100]);
        feed(&mut p, Time(1), Dir::AToB, &f);
        // An end already due is held back until the window has started.
        let _ = end.set(std::time::Instant::now());
        feed(&mut p, Time(2), Dir::AToB, &f);
        assert!(log.lock().unwrap().is_empty());
        let _ = start.set(std::time::Instant::now());
        feed(&mut p, Time(3), Dir::AToB, &f);
        feed(&mut p, Time(4), Dir::AToB, &f);
        assert_eq!(*log.lock().unwrap(), vec![("start", Time(3)), ("end", Time(3))]);
    }

    #[test]
    fn held_packets_come_out_of_timers_with_their_deadline() {
        let mb = DelayBox { delay: Dur::from_millis(5), q: VecDeque::new() };
        let mut p = MiddleboxPipeline::new(Box::new(mb), "delay");
        let frames: Vec<Vec<u8>> =
            (0..10).map(|i| rich_frame(A, B, 1000, 80, 1 + 100 * i, 0x18, &[i as u8; 100])).collect();
        for (i, f) in frames.iter().enumerate() {
            let (_, out) = feed(&mut p, Time(i as u64 * 1000), Dir::AToB, f);
            assert!(out.is_empty());
        }
        assert_eq!(p.pending().0, 10);
        assert_eq!(p.poll_timeout(), Some(Time(5_000_000)));
        p.on_timeout(Time(5_004_500));
        let mut out = Vec::new();
        p.take_output(&mut out);
        assert_eq!(out.len(), 5);
        for (i, o) in out.iter().enumerate() {
            assert_eq!(&o.frame[..], &frames[i][..]);
            assert_eq!(o.due, Some(Time(5_000_000)));
        }
        assert_eq!(p.pending().0, 5);
    }

    #[test]
    fn a_replaced_box_drains_what_it_holds_until_its_grace_ends() {
        let mut p =
            MiddleboxPipeline::new(Box::new(DelayBox { delay: Dur::from_millis(10), q: VecDeque::new() }), "delay");
        let frames: Vec<Vec<u8>> =
            (0..4).map(|i| rich_frame(A, B, 1000, 80, 1 + 100 * i, 0x18, &[i as u8; 100])).collect();
        feed(&mut p, Time(0), Dir::AToB, &frames[0]);
        feed(&mut p, Time(20_000_000), Dir::AToB, &frames[1]);
        // New box: pass-through. The old one keeps its two packets, due at 10 ms and 30 ms.
        p.replace_box(Time(1_000_000), Box::new(PassThrough), "pass-through", Dur::from_millis(25));
        assert_eq!(p.retiring(), 1);
        let (_, out) = feed(&mut p, Time(2_000_000), Dir::AToB, &frames[2]);
        assert_eq!(out.len(), 1, "new packets go to the new box");
        assert_eq!(&out[0].frame[..], &frames[2][..]);
        assert_eq!(p.poll_timeout(), Some(Time(10_000_000)));
        p.on_timeout(Time(10_000_000));
        let mut out = Vec::new();
        p.take_output(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0].frame[..], &frames[0][..], "the old box's packet, as it came");
        assert_eq!(out[0].due, Some(Time(10_000_000)));
        // The second one is due after the grace (26 ms): dropped with the box.
        assert_eq!(p.poll_timeout(), Some(Time(26_000_000)));
        p.on_timeout(Time(26_000_000));
        out.clear();
        p.take_output(&mut out);
        assert!(out.is_empty());
        assert_eq!(p.retiring(), 0);
        let j = p.stats_json();
        assert_eq!((j["reloads"].as_u64(), j["retired_holding"].as_u64()), (Some(1), Some(1)), "{j}");
        assert_eq!(j["kind"], "pass-through");
        // An idle box is dropped at once.
        p.replace_box(Time(30_000_000), Box::new(PassThrough), "pass-through", Dur::from_millis(25));
        assert_eq!(p.retiring(), 0);
    }

    #[test]
    fn origins_of_packets_the_box_dropped_are_released() {
        // Drops every data packet, forwards ACKs unchanged.
        let mb = MapBox(|d: Dir, pkt: Packet| if pkt.payload_len > 0 { vec![] } else { vec![(d, pkt)] });
        let mut p = MiddleboxPipeline::new(Box::new(mb), "dropper");
        for i in 0..100u32 {
            feed(&mut p, Time(i as u64), Dir::AToB, &rich_frame(A, B, 1000, 80, i * 10, 0x18, &[1u8; 10]));
        }
        assert_eq!(p.pending().0, 100, "not swept yet");
        p.sweep(Time(200_000_000), false);
        assert_eq!(p.pending(), (0, 0));
        assert_eq!(p.stats().origins_dropped_by_box, 100);
    }

    /// A sweep step looks at SWEEP_CHUNK flows at most (so it stays short with 100 000 flows),
    /// steps come at most every SWEEP_STEP, and successive steps cover every flow.
    #[test]
    fn sweep_steps_are_bounded_and_a_pass_covers_every_flow() {
        let cfg = MbPipelineConfig { flow_idle_timeout_s: 1.0, ..Default::default() };
        let mut p = MiddleboxPipeline::with_config(Box::new(PassThrough), "pass", cfg);
        let n = 3 * SWEEP_CHUNK + 10;
        for i in 0..n as u32 {
            let src = [10, 1, (i >> 8) as u8, i as u8];
            feed(&mut p, Time(0), Dir::AToB, &tcp_frame(src, B, 1000, 80, i, 0x10, &[], &[]));
        }
        assert_eq!(p.flows(), n);
        let t = Time(2_000_000_000);
        p.sweep(t, false);
        assert_eq!(p.flows(), n - SWEEP_CHUNK, "one step");
        p.sweep(t, false);
        assert_eq!(p.flows(), n - SWEEP_CHUNK, "not again within SWEEP_STEP");
        for k in 1..=3 {
            p.sweep(t + Dur(SWEEP_STEP.0 * k), false);
        }
        assert_eq!(p.flows(), 0);
        assert_eq!(p.stats().flows_evicted, n as u64);
    }

    #[test]
    fn state_stays_within_its_bounds() {
        let cfg = MbPipelineConfig { max_flows: 100, max_pending_bytes: 64 * 1024, ..Default::default() };
        let mb = DelayBox { delay: Dur::from_secs(1000), q: VecDeque::new() };
        let mut p = MiddleboxPipeline::with_config(Box::new(mb), "delay", cfg);
        for i in 0..5000u32 {
            let src = [10, 1, (i >> 8) as u8, i as u8];
            feed(&mut p, Time(i as u64 * 1000), Dir::AToB, &tcp_frame(src, B, 1000, 80, i, 0x18, &[], &[0u8; 500]));
            assert!(p.flows() <= 100);
            assert!(p.pending().1 <= 64 * 1024);
        }
        let s = p.stats();
        assert!(s.flows_untracked > 0 && s.origins_untracked > 0, "{s:?}");
        // Held packets whose origins were not kept come out rebuilt, with their payload.
        p.on_timeout(Time(2_000_000_000_000));
        let mut out = Vec::new();
        p.take_output(&mut out);
        assert_eq!(out.len(), 5000);
        for o in &out {
            verify_checksums(&o.frame).unwrap();
            assert_eq!(Packet::parse_frame(&o.frame).unwrap().packet.payload_len, 500);
        }
        assert_eq!(p.stats().rebuilt_zero_payload, 0);
    }

    #[test]
    fn malformed_and_random_input_never_panics() {
        let qlink = || {
            let q = ackshape_core::queue::DropTail::new(ackshape_core::queue::Limit::Packets(50));
            let s = ackshape_core::shape::qlink::Shaper::new(1_000_000, Box::new(q));
            Box::new(ackshape_core::shape::qlink::QdiscLink::new(Some(s), None, 14))
        };
        for mb in [Box::new(PassThrough) as Box<dyn Middlebox + Send>, qlink()] {
            let mut p = MiddleboxPipeline::new(mb, "x");
            let mut corpus = crate::testing::malformed_corpus(3, 3000);
            corpus.extend(crate::testing::extra_malformed_corpus(4, 3000));
            for (i, f) in corpus.iter().enumerate() {
                let dir = if i % 2 == 0 { Dir::AToB } else { Dir::BToA };
                let (_, out) = feed(&mut p, Time(i as u64 * 10_000), dir, f);
                for o in out {
                    assert!(Packet::parse_frame(&o.frame).is_ok());
                }
                if p.poll_timeout().is_some_and(|t| t <= Time(i as u64 * 10_000)) {
                    p.on_timeout(Time(i as u64 * 10_000));
                }
            }
        }
    }
}

#[cfg(test)]
mod engine_tests {
    use super::*;
    use crate::engine::{run_engine, Control, EngineConfig, SchedSpec};
    use crate::port::{MemPort, Port};
    use crate::testing::tcp_frame;
    use std::time::{Duration, Instant};

    #[test]
    fn qdisc_link_box_paces_frames_through_the_engine_over_mem_ports() {
        // 10 Mbit/s, Ethernet header charged: a 1250-byte frame (1236 IP bytes + 14) takes 1 ms.
        let q = ackshape_core::queue::DropTail::new(ackshape_core::queue::Limit::Packets(1000));
        let s = ackshape_core::shape::qlink::Shaper::new(10_000_000, Box::new(q));
        let mb = ackshape_core::shape::qlink::QdiscLink::new(Some(s), None, 14);
        let mut pipe = MiddleboxPipeline::new(Box::new(mb), "qdisc-link");
        let (mut host_a, mut a) = MemPort::pair("host-a", "a");
        let (mut b, host_b) = MemPort::pair("b", "host-b");
        let ctl = Control::new();
        let c2 = ctl.clone();
        let cfg = EngineConfig {
            track_flows: true,
            stats_interval: Duration::from_millis(20),
            sched: SchedSpec { cpu_group: false, nice: 0, fair_slice: None, ..Default::default() },
            ..Default::default()
        };
        let h = std::thread::spawn(move || run_engine(&mut a, &mut b, &mut pipe, cfg, &c2));
        assert!(ctl.wait_running(Duration::from_secs(5)));
        let n = 100usize;
        let frames: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                tcp_frame([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 1 + 1196 * i as u32, 0x18, &[], &[i as u8; 1196])
            })
            .collect();
        assert_eq!(frames[0].len(), 1250);
        let t0 = Instant::now();
        for f in &frames {
            host_a.send(Time(0), f).unwrap();
        }
        let mut got = Vec::new();
        let mut at = Vec::new();
        let mut hb = host_b;
        let mut buf = vec![0u8; 2048];
        while got.len() < n {
            assert!(t0.elapsed() < Duration::from_secs(10), "only {} of {n} frames arrived", got.len());
            match hb.recv(Time(0), &mut buf).unwrap() {
                Some(m) => {
                    at.push(t0.elapsed());
                    got.push(buf[..m.len].to_vec());
                }
                None => std::thread::sleep(Duration::from_micros(100)),
            }
        }
        ctl.request_stop();
        let snap = h.join().unwrap().unwrap();
        assert_eq!(got, frames, "every frame, in order, byte for byte");
        // Never early: frame k cannot leave before k + 1 transmission times after the first
        // arrived (load can only make it later).
        for (k, t) in at.iter().enumerate() {
            assert!(
                *t >= Duration::from_micros(1000 * (k as u64 + 1)) - Duration::from_micros(50),
                "frame {k} at {t:?}"
            );
        }
        let st = &snap.pipeline["stats"]["a_to_b"];
        assert_eq!(st["sent"], n as u64, "{}", snap.pipeline);
        assert_eq!(snap.pipeline["frames"]["sent_original"], n as u64);
        assert!(snap.hold_timing.samples >= n as u64 - 1, "{:?}", snap.hold_timing);
        assert_eq!(snap.hold_timing_acks.samples, 0, "data frames are not counted as ACKs");
        assert_eq!(snap.port("b").unwrap().tx_packets, n as u64);
        let prom = snap.prometheus();
        assert!(prom.contains("ackshape_pipeline_sent{path=\"stats.a_to_b\"} 100"), "{prom}");
        // Where the data plane's time went: every send and every received batch was timed, and
        // an iteration's span includes both.
        let lt = &snap.loop_timing;
        assert!(lt.iterations > 0 && lt.send_max_us > 0.0 && lt.rx_max_us > 0.0, "{lt:?}");
        assert!(lt.iteration_max_us >= lt.send_max_us, "{lt:?}");
        assert!(lt.iteration_max_us >= lt.rx_max_us, "{lt:?}");
        assert!(lt.iteration_max_us >= lt.unaccounted_max_us, "{lt:?}");
        assert!(prom.contains("ackshape_loop_involuntary_switches_total"), "{prom}");
        assert!(prom.contains("ackshape_loop_max_us{part=\"send\"}"), "{prom}");
        assert!(prom.contains("ackshape_loop_max_us{part=\"rx\"}"), "{prom}");
        assert!(prom.contains("ackshape_loop_over_1ms_total{part=\"unaccounted\"}"), "{prom}");
        assert!(!prom.contains("ackshape_loop_over_1ms_total{part=\"stats\"}"), "{prom}");
    }
}

#[cfg(test)]
mod checksum_tests {
    use super::*;
    use crate::engine::{run_engine, Control, EngineConfig, SchedSpec};
    use crate::policy::{FrameAction, Policy};
    use crate::port::{MemPort, Port};
    use crate::testing::tcp_frame;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    /// Records every packet it sees and sends it on with its window halved (so whatever passes
    /// through it leaves patched, with a recomputed checksum).
    struct Rewriter(Arc<Mutex<Vec<Packet>>>);
    impl Middlebox for Rewriter {
        fn on_packet(&mut self, _now: Time, dir: Dir, mut pkt: Packet, out: &mut Emit) {
            self.0.lock().unwrap().push(pkt.clone());
            if let Some(t) = pkt.tcp_mut() {
                t.window /= 2;
            }
            out.push((dir, pkt));
        }
    }

    /// Frames with a wrong TCP or IPv4 header checksum are verified on receive: counted, never
    /// shown to the box, forwarded byte for byte (so never rebuilt with a valid checksum) or
    /// dropped per `bad_checksum`; valid frames go through the box as before.
    #[test]
    fn bad_checksum_frames_bypass_the_box_untouched_or_are_dropped() {
        for action in [FrameAction::Forward, FrameAction::Drop] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let mut pipe = MiddleboxPipeline::new(Box::new(Rewriter(seen.clone())), "rewriter");
            let (mut host_a, mut a) = MemPort::pair("host-a", "a");
            let (mut b, mut host_b) = MemPort::pair("b", "host-b");
            let ctl = Control::new();
            let c2 = ctl.clone();
            let cfg = EngineConfig {
                policy: Policy { bad_checksum: action, ..Policy::default() },
                track_flows: true,
                stats_interval: Duration::from_millis(20),
                sched: SchedSpec { cpu_group: false, nice: 0, fair_slice: None, ..Default::default() },
                ..Default::default()
            };
            let h = std::thread::spawn(move || run_engine(&mut a, &mut b, &mut pipe, cfg, &c2));
            assert!(ctl.wait_running(Duration::from_secs(5)));
            let mut good = Vec::new();
            let mut bad = Vec::new();
            for i in 0..30u32 {
                let f = tcp_frame([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 1 + 100 * i, 0x10, &[], &[i as u8; 100]);
                ackshape_wire::verify_checksums(&f).unwrap();
                let mut x = f.clone();
                if i % 2 == 0 {
                    x[14 + 20 + 16] ^= 0x5a; // TCP checksum
                } else {
                    x[14 + 10] ^= 0x01; // IPv4 header checksum
                }
                assert!(ackshape_wire::verify_checksums(&x).is_err());
                good.push(f);
                bad.push(x);
            }
            for (g, x) in good.iter().zip(&bad) {
                host_a.send(Time(0), g).unwrap();
                host_a.send(Time(0), x).unwrap();
            }
            let want = if action == FrameAction::Forward { 60 } else { 30 };
            let mut got = Vec::new();
            let mut buf = vec![0u8; 2048];
            let t0 = Instant::now();
            while got.len() < want {
                assert!(t0.elapsed() < Duration::from_secs(10), "{action:?}: only {} of {want} arrived", got.len());
                match host_b.recv(Time(0), &mut buf).unwrap() {
                    Some(m) => got.push(buf[..m.len].to_vec()),
                    None => std::thread::sleep(Duration::from_micros(100)),
                }
            }
            // Nothing more comes (a dropped frame stays dropped).
            std::thread::sleep(Duration::from_millis(50));
            assert!(host_b.recv(Time(0), &mut buf).unwrap().is_none());
            ctl.request_stop();
            let snap = h.join().unwrap().unwrap();
            assert_eq!(seen.lock().unwrap().len(), 30, "{action:?}: the box saw only the valid frames");
            let out_bad: Vec<&Vec<u8>> = got.iter().filter(|f| ackshape_wire::verify_checksums(f).is_err()).collect();
            let out_good = got.len() - out_bad.len();
            assert_eq!(out_good, 30, "{action:?}: every valid frame, rewritten with a valid checksum");
            for f in &out_bad {
                assert!(bad.contains(f), "{action:?}: a bad frame left changed");
            }
            assert_eq!(out_bad.len(), if action == FrameAction::Forward { 30 } else { 0 });
            let pa = snap.port("a").unwrap();
            assert_eq!(pa.bad_checksum, 30, "{action:?}");
            assert_eq!(pa.drops, if action == FrameAction::Drop { 30 } else { 0 });
            let prom = snap.prometheus();
            assert!(prom.contains("ackshape_port_bad_checksum_total{port=\"a\"} 30"), "{prom}");
        }
    }
}

#[cfg(test)]
mod cost {
    use super::*;
    use crate::classify::classify;
    use crate::testing::tcp_frame;

    /// CPU cost of verifying a received frame's checksums (`verify_parsed`, what the engine
    /// adds to every TCP frame) against classifying it: `cargo test --release -p ackshape-live
    /// --lib cost::checksum -- --ignored --nocapture`. Reported, not asserted.
    #[test]
    #[ignore]
    fn checksum_verify_cost_per_frame() {
        let ts = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        for (name, payload) in [("pure ACK (66 B)", 0usize), ("full segment (1514 B)", 1448)] {
            let f = tcp_frame([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 1, 0x10, &ts, &vec![7u8; payload]);
            let FrameClass::Tcp(pf) = classify(&f) else { panic!("TCP") };
            let n = 2_000_000u32;
            let t0 = std::time::Instant::now();
            let mut ok = 0u32;
            for _ in 0..n {
                ok += ackshape_wire::verify_parsed(std::hint::black_box(&f), std::hint::black_box(&pf)).is_ok() as u32;
            }
            let verify = t0.elapsed().as_nanos() as f64 / n as f64;
            assert_eq!(ok, n);
            let t0 = std::time::Instant::now();
            for _ in 0..n / 4 {
                std::hint::black_box(classify(std::hint::black_box(&f)));
            }
            let cls = t0.elapsed().as_nanos() as f64 / (n / 4) as f64;
            println!("{name}: verify_parsed {verify:.1} ns/frame, classify {cls:.1} ns/frame");
        }
    }

    /// CPU cost per frame of the pipeline with a box (no I/O): `cargo test --release -p
    /// ackshape-live --lib cost -- --ignored --nocapture`. Reported, not asserted.
    #[test]
    #[ignore]
    fn pipeline_cost_per_frame() {
        let data = tcp_frame(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            1000,
            80,
            1,
            0x18,
            &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
            &[7; 1448],
        );
        let ack =
            tcp_frame([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000, 1, 0x10, &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2], &[]);
        let (cd, ca) = (classify(&data), classify(&ack));
        let policy = ackshape_format::policy::parse(
            "default_class = \"all\"\n[[class]]\nname = \"all\"\nrate = \"10Gbit/s\"\nqueue = \"1000pkt\"\n",
            "x",
        )
        .unwrap();
        let boxes: Vec<(&str, Box<dyn Middlebox + Send>)> = vec![
            ("core PassThrough", Box::new(ackshape_core::middlebox::PassThrough)),
            ("policy Gateway, 1 class 10 Gbit/s", Box::new(ackshape_core::shape::gateway::Gateway::new(policy, 14, 1))),
        ];
        for (name, mb) in boxes {
            let mut p = MiddleboxPipeline::new(mb, name);
            let n = 400_000u64;
            let mut out = Vec::new();
            let (mut f, mut g) = (data.clone(), ack.clone());
            let t0 = std::time::Instant::now();
            let c0 = crate::sys::thread_cpu_time();
            let mut sent = 0usize;
            for i in 0..n {
                // 1 Gbit/s of data + an ACK every other segment
                let now = Time(i * 12_000);
                p.on_frame(now, Dir::AToB, &mut f, &cd);
                if i % 2 == 0 {
                    p.on_frame(now, Dir::BToA, &mut g, &ca);
                }
                if p.poll_timeout().is_some_and(|t| t <= now) {
                    p.on_timeout(now);
                }
                p.take_output(&mut out);
                sent += out.len();
                out.clear();
            }
            let (el, cpu) = (t0.elapsed(), crate::sys::thread_cpu_time().saturating_sub(c0));
            let per = |d: std::time::Duration| d.as_nanos() as f64 / (n as f64 * 1.5);
            eprintln!(
                "{name}: {:.0} ns of CPU per frame ({:.0} ns wall; {} in, {sent} out)",
                per(cpu),
                per(el),
                n * 3 / 2
            );
        }
    }

    /// CPU cost per frame of the pipeline with the policy `Gateway` shaping by PostACK (on-off,
    /// ACK per segment), with 1 000 and 100 000 concurrent flows (no I/O; frames built in place):
    /// `cargo test --release -p ackshape-live --lib postack_cost -- --ignored --nocapture`.
    /// Each flow sends a full segment every 5 ms (synthetic time) and its receiver ACKs it; the
    /// class rate is 1.1 × the offered load, so the flows are ACK-clocked by PostACK. Reported:
    /// CPU ns per frame (thread CPU clock) and CPU cores per Gbit/s of 1514-byte data frames (with
    /// one ACK each). Not asserted.
    #[test]
    #[ignore]
    fn postack_cost_per_frame_by_flow_count() {
        let opts = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        for n_flows in [1_000u64, 100_000] {
            let step_ns = 5_000_000 / n_flows;
            let offered_bps = 1514.0 * 8.0 * 1e9 / step_ns as f64;
            let policy = ackshape_format::policy::parse(
                &format!(
                    "default_class = \"all\"\n[flows]\nmax_flows = 200000\n[[class]]\nname = \"all\"\nrate = \"{}bit/s\"\n\
                     queue = \"100000pkt\"\nmechanism = {{ kind = \"postack\", variant = \"on-off\", packet_bytes = 1514 }}\n",
                    (offered_bps * 1.1) as u64
                ),
                "x",
            )
            .unwrap();
            let cfg = MbPipelineConfig { max_flows: 200_000, max_pending_bytes: 1 << 30, ..Default::default() };
            let gw = ackshape_core::shape::gateway::Gateway::new(policy, 14, 1);
            let mut p = MiddleboxPipeline::with_config(Box::new(gw), "gateway", cfg);
            let mut data = tcp_frame([10, 0, 0, 1], [10, 0, 0, 2], 1000, 80, 1, 0x18, &opts, &[7; 1448]);
            let mut ack = tcp_frame([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000, 1, 0x10, &opts, &[]);
            // TCP header offsets: ports at 34/36, seq at 38, ack at 42.
            let rounds = (600_000 / n_flows).max(3);
            let total = rounds * n_flows;
            let mut out = Vec::new();
            let (mut frames, mut sent) = (0u64, 0usize);
            let t0 = std::time::Instant::now();
            let c0 = crate::sys::thread_cpu_time();
            for i in 0..total {
                let k = i % n_flows;
                let r = (i / n_flows) as u32;
                let now = Time(i * step_ns);
                let port = (1024 + k % 60_000) as u16;
                let src = [10, 0, (k / 60_000) as u8, 1];
                data[26..30].copy_from_slice(&src);
                data[34..36].copy_from_slice(&port.to_be_bytes());
                data[38..42].copy_from_slice(&(1 + r * 1448).to_be_bytes());
                let cd = classify(&data);
                p.on_frame(now, Dir::AToB, &mut data, &cd);
                ack[30..34].copy_from_slice(&src);
                ack[36..38].copy_from_slice(&port.to_be_bytes());
                ack[42..46].copy_from_slice(&(1 + (r + 1) * 1448).to_be_bytes());
                let ca = classify(&ack);
                p.on_frame(now, Dir::BToA, &mut ack, &ca);
                frames += 2;
                while p.poll_timeout().is_some_and(|t| t <= now) {
                    p.on_timeout(now);
                }
                p.take_output(&mut out);
                sent += out.len();
                out.clear();
            }
            let (el, cpu) = (t0.elapsed(), crate::sys::thread_cpu_time().saturating_sub(c0));
            let per = |d: std::time::Duration| d.as_nanos() as f64 / frames as f64;
            // Frames per second at 1 Gbit/s of 1514-byte data frames, each with its ACK.
            let fps_per_gbit = 2.0 * 1e9 / (1514.0 * 8.0);
            let ts = crate::sys::thread_cpu_time();
            let st = p.mb.stats();
            let stats_el = crate::sys::thread_cpu_time().saturating_sub(ts);
            let c1 = crate::sys::thread_cpu_time();
            p.sweep(Time(total * step_ns + SWEEP_STEP.0), false);
            let step_cpu = crate::sys::thread_cpu_time().saturating_sub(c1);
            p.last_full_sweep = None;
            p.sweep(Time(total * step_ns + 2 * SWEEP_STEP.0), true);
            let full_cpu = crate::sys::thread_cpu_time().saturating_sub(c1) - step_cpu;
            eprintln!(
                "{n_flows} flows: box stats {stats_el:?} ({} bytes as JSON); pipeline sweep step {step_cpu:?}, \
                 full pass {full_cpu:?} of CPU",
                serde_json::to_string(&st).map_or(0, |s| s.len())
            );
            eprintln!(
                "PostACK on-off, {n_flows} flows: {:.0} ns of CPU per frame ({:.0} ns wall) = {:.3} CPU cores per Gbit/s; \
                 {frames} frames in, {sent} out; flows tracked {}, ACKs held max {}",
                per(cpu),
                per(el),
                per(cpu) * fps_per_gbit / 1e9,
                st.gateway().map_or(0, |g| g.flows.tracked),
                st.gateway().and_then(|g| g.classes.get("all")).map_or(0, |c| c.acks_held_max)
            );
        }
    }
}
