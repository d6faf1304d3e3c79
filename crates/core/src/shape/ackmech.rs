//! The seam between an edge gateway's class and the ACK-side mechanism that shapes its flows
//! (TCR, paper 001 / 000 §2.4; PostACK, paper 000 §3, §6).
//!
//! The gateway classifies packets into classes and flows; for a class whose mechanism works on
//! ACKs it hands the mechanism every data packet of the shaped direction (after the class
//! accepted it) and every ACK travelling back to the shaped senders. The mechanism forwards ACKs
//! (possibly rewritten) now, or holds them and releases them later from `on_timeout` or when the
//! class dequeues data (`on_class_dequeue`, the zero-timer PostACK clock).

use super::guard::SeqGuard;
pub use super::guard::SynOptions;
pub use super::mechstats::MechStats;
use crate::time::Time;
use ackshape_wire::Packet;

/// A flow as the gateway sees it: (sender addr, receiver addr, sender port, receiver port), in
/// the shaped direction (data goes sender → receiver).
pub type FlowKey = (std::net::IpAddr, std::net::IpAddr, u16, u16);

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

/// The `mechanism = { kind = …, … }` table of a policy class, and the names it accepts.
pub const KINDS: &[&str] = &["none", "tcr", "postack"];
