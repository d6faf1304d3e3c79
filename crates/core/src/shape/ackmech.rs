//! The seam between an edge gateway's class and the ACK-side mechanism that shapes its flows
//! (TCR, paper 001 / 000 §2.4; PostACK, paper 000 §3, §6).
//!
//! The gateway classifies packets into classes and flows; for a class whose mechanism works on
//! ACKs it hands the mechanism every data packet of the shaped direction (after the class
//! accepted it) and every ACK travelling back to the shaped senders. The mechanism forwards ACKs
//! (possibly rewritten) now, or holds them and releases them later from `on_timeout` or when the
//! class dequeues data (`on_class_dequeue`, the zero-timer PostACK clock).

use super::guard::SeqGuard;
use crate::time::Time;
use ackshape_wire::Packet;

/// A flow as the gateway sees it: (sender addr, receiver addr, sender port, receiver port), in
/// the shaped direction (data goes sender → receiver).
pub type FlowKey = (std::net::IpAddr, std::net::IpAddr, u16, u16);

/// The options of one end's SYN or SYN-ACK: what a mechanism needs from a handshake it did not
/// see (see [`AckMechanism::on_receiver_open`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SynOptions {
    pub mss: Option<u16>,
    /// The window-scale shift this end will apply to the windows it advertises.
    pub wscale: Option<u8>,
    pub timestamps: bool,
    pub sack_permitted: bool,
}

impl SynOptions {
    pub fn of(opts: &ackshape_wire::TcpOptions) -> SynOptions {
        SynOptions {
            mss: opts.mss,
            wscale: opts.wscale,
            timestamps: opts.timestamps.is_some(),
            sack_permitted: opts.sack_permitted,
        }
    }
}

/// An ACK-side shaping mechanism for one class. See the module documentation.
pub trait AckMechanism {
    /// The class's rate (bits/s) changed (set at construction, and when borrowing changes it).
    fn set_rate(&mut self, now: Time, bps: u64);
    /// Bytes the gateway charges per packet beyond the IP packet (its `overhead`: 14 for
    /// Ethernet on the live path, 0 in most simulator scenarios). Called once, right after the
    /// mechanism is built, so that the mechanism counts packets as the class does. Default: ignored.
    fn set_overhead(&mut self, _bytes: u32) {}
    /// Key the mechanism's flow table (`crate::hash`): called by the gateway right after the
    /// mechanism is built, before any packet. Default: nothing to key.
    fn set_hash_key(&mut self, _key: crate::hash::HashKey) {}
    /// The handshake of a connection its *receiver* opened (a download from the WAN asked for on
    /// the LAN side), told when the gateway starts tracking `flow` — at the sender's SYN-ACK if
    /// that takes this class's data path, else at the sender's first data — and before `on_data`
    /// sees that packet. `sender` and `receiver` are the options of the sender's SYN-ACK and of
    /// the receiver's SYN: the SYN went the other way as data of the reverse half, and the
    /// SYN-ACK may have taken another class's ACK path, so this mechanism saw neither. (With a
    /// connection its sender opened, `on_data` sees the sender's SYN and `on_ack` the receiver's
    /// SYN-ACK instead.) Default: ignored.
    fn on_receiver_open(&mut self, _now: Time, _flow: FlowKey, _sender: &SynOptions, _receiver: &SynOptions) {}
    /// The sequence-number facts this mechanism keeps of `flow` (see [`super::guard`]), if it
    /// tracks it. Default: none.
    fn seq_facts(&self, _flow: FlowKey) -> Option<SeqGuard> {
        None
    }
    /// `flow` has just started to be tracked, and the other half of its connection is tracked by
    /// a mechanism whose facts are `reverse` (see [`Self::seq_facts`]): learn what this flow's
    /// guard has not seen yet ([`SeqGuard::adopt_reverse`]). Called after
    /// [`Self::on_receiver_open`] and before `on_data` sees the packet. Default: ignored.
    fn adopt_reverse_facts(&mut self, _now: Time, _flow: FlowKey, _reverse: &SeqGuard) {}
    /// A data packet (or SYN/FIN) of `flow` in the shaped direction, accepted by the class.
    fn on_data(&mut self, now: Time, flow: FlowKey, pkt: &Packet);
    /// A packet travelling to the shaped sender of `flow` (ACK, possibly piggy-backed on data).
    /// Push what leaves now onto `out`; keep what is held.
    fn on_ack(&mut self, now: Time, flow: FlowKey, pkt: Packet, out: &mut Vec<Packet>);
    /// Whether the packet of the last [`Self::on_ack`] call was judged inconsistent with what the
    /// mechanism has seen of its flow (see [`super::guard`]) and pushed onto `out` untouched,
    /// learning nothing from it. The gateway then forwards it without letting it start tracking
    /// a flow (spoofed data with a real flow's tuple must not open a flow the other way).
    /// Default: false.
    fn last_ack_untouched(&self) -> bool {
        false
    }
    /// Would this RST of `flow` (travelling from its sender if `from_sender`, else towards it)
    /// act at its endpoint, i.e. is its sequence number in window (RFC 5961 §3)? The gateway
    /// ends a tracked flow on an RST only if its mechanism says so. Default: true.
    fn rst_in_window(&self, _flow: FlowKey, _pkt: &Packet, _from_sender: bool) -> bool {
        true
    }
    /// The class's data queue sent a packet of `flow` (the zero-timer PostACK clock, 000 §6 step
    /// 2.4). `flow_qlen` is the length, in packets, of the flow's own per-flow queue under the
    /// class after the dequeue (`None` when the class has no per-flow queues).
    fn on_class_dequeue(&mut self, _now: Time, _flow: FlowKey, _flow_qlen: Option<usize>, _out: &mut Vec<Packet>) {}
    /// The flow ended or was evicted: release what is held for it onto `out` and forget it.
    fn on_flow_end(&mut self, now: Time, flow: FlowKey, out: &mut Vec<Packet>);
    /// The next time the mechanism wants `on_timeout` (None: no timer).
    fn poll_timeout(&self) -> Option<Time>;
    fn on_timeout(&mut self, now: Time, out: &mut Vec<Packet>);
    /// ACKs currently held (total and per flow are in [`AckMechanism::stats`]).
    fn acks_held(&self) -> usize;
    /// Mechanism metrics (window rewrites, ACKs held, per-flow ACK queue lengths, …), typed; the
    /// drivers serialise them at the edge. (TCR's and PostACK's inherent `stats()` give their
    /// counters alone; this is their whole report.)
    fn stats(&self) -> MechStats;
}

/// What a mechanism reports ([`AckMechanism::stats`]): one variant per mechanism. Serialised as
/// the mechanism's own object (no tag: each carries its kind in a field of its own).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum MechStats {
    Tcr(crate::shape::tcr::TcrReport),
    PostAck(crate::shape::postack::PostAckReport),
    /// A mechanism with no report of its own (one defined outside this crate, a test's): what
    /// every mechanism has.
    Other {
        acks_held: usize,
    },
}

impl MechStats {
    /// TCR's report, if this is TCR's.
    pub fn tcr(&self) -> Option<&crate::shape::tcr::TcrReport> {
        match self {
            MechStats::Tcr(r) => Some(r),
            _ => None,
        }
    }
    /// PostACK's report, if this is PostACK's.
    pub fn postack(&self) -> Option<&crate::shape::postack::PostAckReport> {
        match self {
            MechStats::PostAck(r) => Some(r),
            _ => None,
        }
    }
}

/// The `mechanism = { kind = …, … }` table of a policy class, and the names it accepts.
pub const KINDS: &[&str] = &["none", "tcr", "postack"];

/// Build the mechanism a policy class names. `settings` is the table without `kind`.
/// `Ok(None)` for `kind = "none"` (class-only shaping). Errors are `(key within the table,
/// message)`, so the policy loader can name the file and the dotted key.
///
/// Each mechanism (TCR, PostACK) adds its arm here.
pub fn build(kind: &str, settings: &toml::Table) -> Result<Option<Box<dyn AckMechanism + Send>>, (String, String)> {
    match kind {
        "none" => {
            if let Some(k) = settings.keys().next() {
                return Err((k.clone(), "unknown key for mechanism \"none\" (it has no settings)".into()));
            }
            Ok(None)
        }
        "tcr" => {
            let cfg = super::tcr::TcrConfig::from_table(settings)?;
            // The class rate arrives through `set_rate` before the first packet.
            Ok(Some(Box::new(super::tcr::Tcr::new(cfg, 0))))
        }
        "postack" => {
            let cfg = super::postack::PostAckConfig::from_table(settings)?;
            Ok(Some(Box::new(super::postack::PostAck::new(cfg))))
        }
        other => Err(("kind".into(), format!("expected one of {}, got {other:?}", KINDS.join(", ")))),
    }
}
