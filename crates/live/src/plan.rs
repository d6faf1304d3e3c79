//! The live plan of a scenario: how `ackshape run --live`, `testbed up` and the hand-run `wanem`
//! and `gateway` commands carry out a simulator scenario on the network-namespace testbed.
//!
//! Pure functions of the scenario, no root and no I/O: the testbed of `[live.testbed]`
//! ([`testbed_of`]); the WAN emulator's links and the box it runs for a dumbbell's bottleneck and
//! each flow's path ([`wan_plan`]); the endpoints' Linux TCP knobs, host-wide ([`endpoint_tcp`]:
//! MSS with the timestamp option's 12 bytes, `tcp_rmem` twice the receive buffer) and per socket
//! ([`flow_sock_opts`]); and what a live run cannot give, as warnings naming the file and the key:
//! sender access links before the gateway ([`live_link_gaps`]), `[tcp]` keys Linux does otherwise
//! ([`live_tcp_gaps`]), flows a gateway policy would classify differently live ([`class_drift`]).
//! The CLI parses, dispatches and prints; the testbed, traffic and boxes run what this plans.

use crate::testbed::{self, TopologySpec};
use crate::traffic;
use crate::wanem::{self, LinkSpec as WanLink};
use ackshape_core::impair::{JitterSpec, LossSpec};
use ackshape_core::units;
use ackshape_sim::scenario::{DirParams, DumbbellSpec, FlowOpen, Scenario, TopologySpec as SimTopo};
use std::path::Path;

/// The testbed of a scenario: its `[live.testbed]` table (see docs/scenario.md) over the
/// defaults. The error names the file, the key and what was expected.
pub fn testbed_of(sc: &Scenario, file: &str) -> Result<TopologySpec, String> {
    let Some(t) = sc.live.as_ref().and_then(|l| l.get("testbed")) else {
        return Ok(TopologySpec::default());
    };
    let mut base = toml::Table::try_from(TopologySpec::default()).expect("serialisable");
    if let Some(tt) = t.as_table() {
        for (k, v) in tt {
            base.insert(k.clone(), v.clone());
        }
    }
    let spec = toml::Value::Table(base)
        .try_into::<TopologySpec>()
        .map_err(|e| format!("{file}: key `live.testbed`: {}", e.message().trim_end()))?;
    spec.check().map_err(|(key, msg)| format!("{file}: key `live.testbed.{key}`: {msg}"))?;
    Ok(spec)
}

pub fn wan_link(d: &DirParams, extra_delay: ackshape_core::time::Dur) -> WanLink {
    WanLink {
        delay_ns: (d.delay + extra_delay).0,
        jitter: if d.jitter.0 > 0 { JitterSpec::Uniform { max_ns: d.jitter.0 } } else { JitterSpec::None },
        reorder: d.reorder,
        loss: d.loss.clone(),
        rate_bps: Some(d.rate.0),
        queue_packets: match d.queue {
            units::Size::Packets(p) => p as usize,
            units::Size::Bytes(b) => (b / 1500).max(1) as usize,
        },
    }
}

/// What an access link does beyond its delay, each way: a rate below the bottleneck's, loss, a
/// queue discipline, jitter (empty: only the delay). The wanem runs a receivers' access link that
/// does ([`wan_plan`]); of a sender's, before the gateway, only the delay applies
/// ([`live_link_gaps`] names the rest).
pub fn beyond_delay((f, r): (&DirParams, &DirParams), (bf, br): (&DirParams, &DirParams)) -> Vec<String> {
    let mut what = Vec::new();
    if f.rate < bf.rate || r.rate < br.rate {
        what.push(format!("rate ({} Mbit/s, below the bottleneck's)", f.rate.0.min(r.rate.0) as f64 / 1e6));
    }
    if !matches!(f.loss, LossSpec::None) || !matches!(r.loss, LossSpec::None) {
        what.push("loss".to_string());
    }
    if f.qdisc.is_some() || r.qdisc.is_some() {
        what.push("a qdisc".to_string());
    }
    if f.jitter.0 > 0 || r.jitter.0 > 0 {
        what.push("jitter".to_string());
    }
    what
}

/// A sender/receiver pair: its index, its sender's and its receiver's access link (each way).
pub type PairPath = (u32, (DirParams, DirParams), (DirParams, DirParams));

/// The pairs a dumbbell's flows use ([`DumbbellSpec::placement`]), in order of first use, each
/// with its access links' directions (sender's, receiver's); each flow's index among them; and
/// whether the flows' paths differ beyond the bottleneck: a receivers' access link that does more
/// than delay ([`beyond_delay`]), or pairs whose access delays differ (RTT groups).
pub struct FlowPaths {
    pub pairs: Vec<PairPath>,
    pub slot: Vec<usize>,
    pub differ: bool,
}

pub fn flow_paths(sc: &Scenario, d: &DumbbellSpec) -> FlowPaths {
    let (bf, br) = d.bottleneck.directions();
    let mut used: Vec<u32> = Vec::new();
    let slot: Vec<usize> = DumbbellSpec::placement(&sc.flows, d.pair_count(sc.flow_count()))
        .iter()
        .map(|&(_, r)| {
            used.iter().position(|&u| u == r).unwrap_or_else(|| {
                used.push(r);
                used.len() - 1
            })
        })
        .collect();
    if used.is_empty() {
        used.push(0);
    }
    let pairs: Vec<_> = used
        .iter()
        .map(|&j| {
            let (a, r) = d.pair_links(j);
            (j, a.directions(), r.directions())
        })
        .collect();
    let first = pair_delays(&pairs[0]);
    let differ =
        pairs.iter().any(|p| !beyond_delay((&p.2 .0, &p.2 .1), (&bf, &br)).is_empty() || pair_delays(p) != first);
    FlowPaths { pairs, slot, differ }
}

/// A pair's access delays each way (sender's plus receiver's).
pub fn pair_delays((_, (af, ar), (rf, rr)): &PairPath) -> (ackshape_core::time::Dur, ackshape_core::time::Dur) {
    (af.delay + rf.delay, ar.delay + rr.delay)
}

/// How the wanem runs a dumbbell's WAN.
pub struct WanPlan {
    /// The wanem's own settings of each direction ([`wan_link`]): the bottleneck with the first
    /// flow's access links' delays added.
    pub links: (WanLink, WanLink),
    /// The box the wanem runs instead of its drop-tail limiter, if the scenario needs one.
    pub boxed: Option<Box<dyn ackshape_core::middlebox::Middlebox + Send>>,
    /// When the box is the bottleneck followed by each flow's own path (its stats under
    /// `bottleneck` and `access`): the receivers' access links it runs, as the simulator names
    /// them, with their rates each way. Empty when the box (if any) is the bottleneck alone.
    pub paths: Vec<(String, u64, u64)>,
}

/// The WAN of a dumbbell for the wanem. The simulator's link code ([`wanem::link_box`]) runs in a
/// box when the bottleneck has a queue discipline (`qdisc`), which the wanem's own drop-tail
/// limiter cannot run, and when the flows' paths differ beyond the bottleneck ([`flow_paths`]: a
/// receivers' access link that does more than delay, or pairs whose access delays differ, RTT
/// groups). Then the box is the bottleneck followed by one link per sender/receiver pair the
/// flows use, a flow's packets going to its pair's link by their port ([`traffic::FLOW_PORT`]): the
/// receiver's access link (its rate, queue, loss, jitter) with the pair's two access delays, as
/// the simulator places the flows ([`DumbbellSpec::placement`]). The sender's access delay then
/// comes after the bottleneck, not before it: the same round trip, with the gateway (which is
/// before the wanem) seeing it too. Otherwise the wanem runs its limiter, its delays the sum of
/// the first flow's three links'.
pub fn wan_plan(sc: &Scenario, d: &DumbbellSpec) -> WanPlan {
    use ackshape_core::middlebox::{Series, Split};
    use ackshape_core::time::Dur;
    fn dir<'a>(d: &'a DirParams, link: &'a WanLink) -> wanem::BoxDir<'a> {
        wanem::BoxDir { link, limit: d.queue.into(), qdisc: d.qdisc.as_ref() }
    }
    let (bf, br) = d.bottleneck.directions();
    let FlowPaths { pairs: paths, slot, differ: per_path } = flow_paths(sc, d);
    let (df, dr) = pair_delays(&paths[0]);
    let links = (wan_link(&bf, df), wan_link(&br, dr));
    if per_path {
        let bl = (wan_link(&bf, Dur::ZERO), wan_link(&br, Dur::ZERO));
        let mut boxes = ackshape_core::middlebox::Named::new();
        let mut names = Vec::new();
        for (k, (j, (af, ar), (rf, rr))) in paths.iter().enumerate() {
            let al = (wan_link(rf, af.delay), wan_link(rr, ar.delay));
            let name = format!("access-d{j}");
            boxes.push((name.clone(), wanem::link_box(dir(rf, &al.0), dir(rr, &al.1), sc.seed, 1 + k as u64)));
            names.push((name, rf.rate.0, rr.rate.0));
        }
        // A flow's packets by its port (to it for the data a sender opened, from it for the
        // data of a flow the receiver opened and for the ACKs); anything else takes the first path.
        let classify = move |p: &ackshape_wire::Packet| {
            let flow = |port: u16| port.checked_sub(traffic::FLOW_PORT).and_then(|i| slot.get(i as usize).copied());
            p.tcp().and_then(|t| flow(t.dport).or_else(|| flow(t.sport))).unwrap_or(0)
        };
        let stages = vec![
            ("bottleneck".to_string(), wanem::link_box(dir(&bf, &bl.0), dir(&br, &bl.1), sc.seed, 0)),
            ("access".to_string(), Box::new(Split::new(boxes, Box::new(classify))) as Box<_>),
        ];
        return WanPlan { links, boxed: Some(Box::new(Series::new(stages))), paths: names };
    }
    let boxed = (bf.qdisc.is_some() || br.qdisc.is_some())
        .then(|| wanem::link_box(dir(&bf, &links.0), dir(&br, &links.1), sc.seed, 0));
    WanPlan { links, boxed, paths: Vec::new() }
}

/// The endpoints' TCP as the scenario's `[tcp]` says, where Linux has a knob for it
/// ([`testbed::EndpointTcp`]): `delack = 1` (an ACK for every segment, paper 000's assumption) →
/// `quickack 1` on the receiver's route; `rcv_buf` → the receiver's `tcp_rmem` default and maximum
/// (twice the size: Linux advertises about half its buffer, so the window is approximate);
/// `initial_window` → `initcwnd` and `min_rto` → `rto_min` on the sender's route; `mss` →
/// `advmss` on both hosts' routes (up to what the 1500-byte MTU carries); `sack`,
/// `timestamps`, `ecn` → those sysctls in both hosts; `dupthresh` → the sender's `tcp_reordering`
/// (Linux's starting reordering degree, which it raises on reordering). The other keys (except `cc`) are the
/// simulator's only ([`live_tcp_gaps`] names them).
pub fn endpoint_tcp(tcp: &ackshape_sim::scenario::TcpSpec) -> testbed::EndpointTcp {
    testbed::EndpointTcp {
        quickack: tcp.delack == Some(1),
        rmem_bytes: tcp.rcv_buf.as_ref().map(|b| 2 * rcv_buf_bytes(b, tcp.mss)),
        initcwnd: tcp.initial_window,
        advmss: tcp.mss.and_then(|m| linux_mss(m, tcp.timestamps.unwrap_or(true))),
        rto_min_ms: tcp.min_rto.map(|d| d.0 .0.div_ceil(1_000_000)),
        sack: tcp.sack,
        timestamps: tcp.timestamps,
        ecn: tcp.ecn,
        // Linux takes 1..=`tcp_max_reordering` (300); above it the key is warned of.
        reordering: tcp.dupthresh.filter(|&n| n <= 300),
    }
}

/// A flow's own `tcp` table where Linux has a per-socket knob ([`traffic::SockOpts`]): `mss` →
/// `TCP_MAXSEG` on the sender's socket (plus 12 bytes when the hosts use timestamps, as
/// [`endpoint_tcp`]'s `advmss`; up to what the 1500-byte MTU carries), `rcv_buf` → `SO_RCVBUF` on
/// the receiver's (Linux doubles it: the same buffer as the scenario-wide `tcp_rmem` of twice the
/// size), `delack = 1` → `TCP_QUICKACK` after every read. The scenario's `[tcp]` is on the hosts
/// already; keys only it sets are not repeated here.
pub fn flow_sock_opts(
    own: Option<&ackshape_sim::scenario::TcpSpec>,
    all: &ackshape_sim::scenario::TcpSpec,
) -> traffic::SockOpts {
    let Some(t) = own else { return Default::default() };
    traffic::SockOpts {
        max_seg: t.mss.and_then(|m| linux_mss(m, all.timestamps.unwrap_or(true))),
        rcv_buf: t.rcv_buf.as_ref().map(|b| rcv_buf_bytes(b, t.mss.or(all.mss))),
        quickack: t.delack == Some(1),
    }
}

/// Linux's MSS for a payload of `mss` bytes per segment: it counts the timestamp option's 12 bytes
/// (the simulator's `mss` is the payload). None above what the testbed's 1500-byte MTU carries:
/// Linux's own stays (and is warned of).
pub fn linux_mss(mss: u32, timestamps: bool) -> Option<u32> {
    Some(mss + if timestamps { 12 } else { 0 }).filter(|&m| m <= 1460)
}

/// A `rcv_buf` in bytes; one in packets counts `mss` bytes each (the simulator's meaning; 1448
/// when the table leaves `mss` out).
pub fn rcv_buf_bytes(b: &units::SizeV, mss: Option<u32>) -> u64 {
    match b.0 {
        units::Size::Bytes(x) => x,
        units::Size::Packets(p) => p * u64::from(mss.unwrap_or(1448)),
    }
}

/// The flows a gateway policy would put into another class live than in the simulator: its rules
/// see the drivers' addresses and ports, which differ (simulator: `10.0.0.x`, the opener connecting
/// to port 5001; live: `[live.testbed]`'s two addresses, port `live_port(i)`: 6000 + i under
/// `run --live`, iperf3's 5201 by hand). One line naming such flows (at
/// most 5, then a count), empty when every flow lands in the same class (of the file: a per-host
/// class counts as its template). The flows' ephemeral ports are taken equal in both.
pub fn class_drift(
    sc: &Scenario,
    file: &str,
    m: &ackshape_sim::scenario::MiddleboxSpec,
    i: usize,
    base: Option<&Path>,
    topo: &TopologySpec,
    live_port: &dyn Fn(usize) -> u16,
) -> Vec<String> {
    use ackshape_core::middlebox::Dir;
    use ackshape_wire::{Ecn, IpHdr, Packet, SeqNum, TcpFlags, TcpHdr, L4};
    use std::net::IpAddr;
    let Some(Ok(policy)) = ackshape_sim::middlebox::gateway_policy(m, base) else { return Vec::new() };
    let Ok(sim) = ackshape_sim::Sim::build(sc, file, None, Default::default()) else { return Vec::new() };
    const EPHEMERAL: u16 = 40000;
    let data = |src: IpAddr, sport: u16, dst: IpAddr, dport: u16| Packet {
        ip: IpHdr { src, dst, ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: 0 },
        l4: L4::Tcp(TcpHdr {
            sport,
            dport,
            seq: SeqNum(1),
            ack: SeqNum(1),
            flags: TcpFlags::ACK,
            window: 1000,
            ..Default::default()
        }),
        payload_len: 1448,
        payload: None,
    };
    let class_of = |p: &Packet| match policy.classify(Dir::AToB, p) {
        Some(c) => {
            format!("`{}` ({})", policy.classes[c].name.split('/').next().unwrap_or_default(), policy.classes[c].key)
        }
        None => "no class (unshaped)".to_string(),
    };
    let opens: Vec<bool> = sc
        .flows
        .iter()
        .flat_map(|f| std::iter::repeat_n(f.open == FlowOpen::Receiver, f.count.unwrap_or(1) as usize))
        .collect();
    let (ls, lr) = (IpAddr::V4(topo.sender_addr), IpAddr::V4(topo.receiver_addr));
    let ep = |p: &Packet| {
        let t = p.tcp().expect("TCP");
        format!("{}:{} → {}:{}", p.ip.src, t.sport, p.ip.dst, t.dport)
    };
    // The flows that move, at most 5 of them described, in one line.
    let mut shown = Vec::new();
    let mut n = 0;
    let mut example = None;
    for (k, ((ss, sr, sport), by_receiver)) in sim.flow_endpoints().into_iter().zip(opens).enumerate() {
        let lport = live_port(k);
        let (sim_pkt, live_pkt) = if by_receiver {
            (data(ss, sport, sr, EPHEMERAL), data(ls, lport, lr, EPHEMERAL))
        } else {
            (data(ss, EPHEMERAL, sr, sport), data(ls, EPHEMERAL, lr, lport))
        };
        let (a, b) = (class_of(&sim_pkt), class_of(&live_pkt));
        if a != b {
            n += 1;
            if shown.len() < 5 {
                shown.push(format!("flow {k}'s data is in {a} in the simulator but in {b} live"));
            }
            example.get_or_insert_with(|| (ep(&sim_pkt), ep(&live_pkt)));
        }
    }
    let Some((sim_ep, live_ep)) = example else { return Vec::new() };
    let more = if n > shown.len() { format!("; and {} more flows", n - shown.len()) } else { String::new() };
    vec![format!(
        "{file}: key `middlebox[{i}].policy`: {}{more}. The rules see each driver's addresses and ports (e.g. {sim_ep} \
         in the simulator, {live_ep} live); `[live.testbed]` sender_addr/receiver_addr set the live ones (docs/scenario.md)",
        shown.join("; ")
    )]
}

/// What of a dumbbell's links the live testbed does not apply, one warning each (file and key):
/// the wanem runs the bottleneck and each flow's receiver access link and delays ([`wan_plan`]),
/// but a sender's access link is before the gateway, where only its delay can go (into the
/// wanem's). A simulated run of the same file then shapes traffic that the live run does not.
pub fn live_link_gaps(sc: &Scenario, file: &str) -> Vec<String> {
    let SimTopo::Dumbbell(d) = &sc.topology else { return Vec::new() };
    let mut out = Vec::new();
    let (bf, br) = d.bottleneck.directions();
    // The sender access links the flows use, each named by the table it comes from.
    let mut keys: Vec<Option<usize>> = Vec::new();
    for (s, _) in DumbbellSpec::placement(&sc.flows, d.pair_count(sc.flow_count())) {
        let g = d.sender_group(s);
        if !keys.contains(&g) {
            keys.push(g);
        }
    }
    for g in keys {
        let (key, link) = match g {
            None => ("topology.access".to_string(), d.access.clone()),
            Some(g) => (format!("topology.groups[{g}].access"), d.groups[g].access.over(&d.access)),
        };
        let (f, r) = link.directions();
        let what = beyond_delay((&f, &r), (&bf, &br));
        if !what.is_empty() {
            out.push(format!(
                "{file}: key `{key}`: the live testbed applies only the sender access link's delay (in the WAN \
                 emulator; the link is before the gateway), not its {}",
                what.join(", ")
            ));
        }
    }
    out
}

/// `[tcp]` settings (the scenario's and each flow's `tcp`) that a live run cannot give: the live
/// endpoints are Linux's TCP, which has its own behaviour where the simulator has a key. `cc`, the
/// keys a flow's own table reaches per socket ([`flow_sock_opts`]: `mss`, `rcv_buf`, `delack = 1`)
/// and, in the scenario's `[tcp]`, the keys [`endpoint_tcp`] maps are not named, nor a key set to what
/// Linux does anyway (`mss = 1448` with timestamps, `dupthresh = 3`, …). One
/// warning per table, naming the file, the key and what Linux does instead.
pub fn live_tcp_gaps(sc: &Scenario, file: &str) -> Vec<String> {
    use ackshape_core::time::Dur;
    let ms = |d: Dur| format!("{} ms", d.0 as f64 / 1e6);
    let differs = |t: &ackshape_sim::scenario::TcpSpec, mapped: bool| -> Vec<String> {
        let mut v = Vec::new();
        // The hosts use timestamps as `[tcp]` says (a flow's own `timestamps` is not applied).
        let ts = sc.tcp.timestamps.unwrap_or(true);
        let linux_mss = if ts { 1448 } else { 1460 };
        if let Some(m) = t.mss.filter(|&m| m > linux_mss) {
            v.push(format!("mss = {m} (Linux: at most {linux_mss} on the testbed's 1500-byte MTU)"));
        } else if let (Some(m), Some(all), false) = (t.mss, sc.tcp.mss, mapped) {
            if m > all {
                v.push(format!(
                    "mss = {m} (live: the hosts' routes carry `[tcp]`'s mss = {all} for every flow; a flow's own \
                     can only be lower)"
                ));
            }
        }
        if let Some(n) = t.initial_window.filter(|&n| n != 10 && !mapped) {
            v.push(format!("initial_window = {n} (Linux: 10)"));
        }
        if let Some(n) = t.delack.filter(|&n| n > 2) {
            v.push(format!("delack = {n} (Linux: an ACK for every 1–2 segments)"));
        }
        if let Some(d) = t.delack_timeout {
            v.push(format!("delack_timeout = {} (Linux: adaptive, 40–200 ms)", ms(d.0)));
        }
        for (key, val, linux) in
            [("min_rto", t.min_rto.filter(|_| !mapped), 200u64), ("initial_rto", t.initial_rto, 1000)]
        {
            if let Some(d) = val.filter(|d| d.0 != Dur::from_millis(linux)) {
                v.push(format!("{key} = {} (Linux: {linux} ms)", ms(d.0)));
            }
        }
        if let Some(d) = t.max_rto.filter(|d| d.0 != Dur::from_secs(120)) {
            v.push(format!("max_rto = {} (Linux: 120 s)", ms(d.0)));
        }
        if let Some(d) = t.rto_granularity.filter(|d| d.0 > Dur::from_millis(4)) {
            v.push(format!("rto_granularity = {} (Linux: a jiffy, ≤ 4 ms)", ms(d.0)));
        }
        if t.profile == Some(ackshape_core::tcp::TcpProfile::Ns2) {
            v.push("profile = \"ns2\" (Linux: its own stack; only the mapped keys above apply)".to_string());
        }
        if let Some(m) = t.rto_model.filter(|m| *m != Default::default()) {
            v.push(format!("rto_model = \"{}\" (Linux: RFC 6298)", format!("{m:?}").to_lowercase()));
        }
        for (key, val, linux) in [
            ("sack", t.sack.filter(|_| !mapped), true),
            ("timestamps", t.timestamps.filter(|_| !mapped), true),
            ("ecn", t.ecn.filter(|_| !mapped), false),
            ("limited_transmit", t.limited_transmit, true),
            ("congestion_avoidance", t.congestion_avoidance, true),
            ("new_data_on_fast_retransmit", t.new_data_on_fast_retransmit, true),
            ("ns2_slowdown", t.ns2_slowdown, false),
            ("rto_restart_on_fast_retransmit", t.rto_restart_on_fast_retransmit, true),
            ("rto_rearm_on_head_retransmit", t.rto_rearm_on_head_retransmit, true),
            ("sack_clear_on_rto", t.sack_clear_on_rto, false),
            ("ns2_recovery", t.ns2_recovery, false),
        ] {
            if let Some(b) = val.filter(|&b| b != linux) {
                v.push(format!("{key} = {b} (Linux: {})", if linux { "on" } else { "off" }));
            }
        }
        if let Some(w) = t.window_update.filter(|w| *w != ackshape_core::tcp::WindowUpdate::Bsd) {
            v.push(format!("window_update = \"{}\" (Linux: as BSD)", format!("{w:?}").to_lowercase()));
        }
        if let Some(n) = t.dupthresh.filter(|&n| n != 3 && (!mapped || n > 300)) {
            v.push(format!("dupthresh = {n} (Linux: 3, raised on reordering)"));
        }
        if let Some(w) = t.wscale {
            v.push(format!("wscale = {w} (Linux: from its buffer size)"));
        }
        if let Some(w) = &t.max_window {
            v.push(format!("max_window = {:?} (Linux: `rcv_buf` is the live knob)", w.0));
        }
        if let Some(n) = t.max_burst {
            v.push(format!("max_burst = {n} (Linux: no such limit)"));
        }
        if let Some(b) = t.abc {
            v.push(format!("abc = {b} (Linux: its own ACK counting)"));
        }
        if let Some(n) = t.initial_ssthresh {
            v.push(format!("initial_ssthresh = {n} (Linux: unlimited)"));
        }
        v
    };
    let mut out = Vec::new();
    // The scenario's `[tcp]` reaches Linux's knobs where there is one (`endpoint_tcp`); a flow's
    // own `tcp` only the per-socket ones (`flow_sock_opts`: cc, mss, rcv_buf, delack = 1), the
    // hosts' routes and sysctls being shared by every flow.
    let tables = std::iter::once(("tcp".to_string(), &sc.tcp, true)).chain(
        sc.flows.iter().enumerate().filter_map(|(i, f)| f.tcp.as_ref().map(|t| (format!("flows[{i}].tcp"), t, false))),
    );
    for (key, t, mapped) in tables {
        let d = differs(t, mapped);
        if !d.is_empty() {
            out.push(format!(
                "{file}: key `{key}`: the live endpoints are Linux's TCP, which does otherwise: {}; these apply in the \
                 simulator only",
                d.join(", ")
            ));
        }
    }
    out
}

/// [`class_drift`] of the box `run --live` runs (the first; it runs one), with its ports.
pub fn live_class_drift(sc: &Scenario, file: &str, base: Option<&Path>, topo: &TopologySpec) -> Vec<String> {
    sc.middlebox
        .first()
        .map(|m| class_drift(sc, file, m, 0, base, topo, &|k| traffic::FLOW_PORT + k as u16))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[topology]\nkind = \"dumbbell\"\nbottleneck = { rate = \"10Mbit/s\" }\naccess = { rate = \"100Mbit/s\" }\n[[flows]]\ncount = 1\n";

    /// A policy whose rules match on addresses or ports: the flows that would be in another class
    /// live than in the simulator are named, and none when the testbed's addresses match too.
    #[test]
    fn flows_in_another_class_live_are_named() {
        let drift = |rule: &str, testbed: &str| {
            let text = format!(
                "duration = \"4s\"\n[topology]\nkind = \"dumbbell\"\n\
                 bottleneck = {{ rate = \"10Mbit/s\", delay = \"5ms\" }}\n\
                 access = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n\
                 [[flows]]\nkind = \"bulk\"\ncount = 7\n\
                 [[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nkind = \"gateway\"\n\
                 policy = {{ class = [{{ name = \"c\", rate = \"5Mbit/s\" }}], rule = [{{ class = \"c\", {rule} }}] }}\n\
                 {testbed}"
            );
            let sc = Scenario::parse(&text, "d.toml").unwrap();
            let topo = testbed_of(&sc, "d.toml").unwrap();
            // (A policy that does not load warns of nothing: make sure this one does.)
            ackshape_sim::middlebox::gateway_policy(&sc.middlebox[0], None).unwrap().unwrap();
            class_drift(&sc, "d.toml", &sc.middlebox[0], 0, None, &topo, &|k| 6000 + k as u16)
        };
        // The simulator's receivers are 10.0.0.2, .4, …; the testbed's 10.77.0.2.
        let w = drift("dst = \"10.0.0.0/24\"", "");
        assert_eq!(w.len(), 1, "one line, 5 flows named, then a count: {w:#?}");
        assert!(
            w[0].starts_with(
                "d.toml: key `middlebox[0].policy`: flow 0's data is in `c` (class[0]) in the simulator but in no class \
                 (unshaped) live; flow 1's"
            ),
            "{}",
            w[0]
        );
        assert!(
            w[0].contains(
                "(e.g. 10.0.0.1:40000 → 10.0.0.2:5001 in the simulator, 10.77.0.1:40000 → 10.77.0.2:6000 live)"
            ),
            "{}",
            w[0]
        );
        assert!(
            w[0].contains("flow 4's") && !w[0].contains("flow 5's") && w[0].contains("; and 2 more flows."),
            "{}",
            w[0]
        );
        // The testbed in the simulator's subnet: the same classes.
        let tb = "[live.testbed]\nsender_addr = \"10.0.0.101\"\nreceiver_addr = \"10.0.0.102\"\n";
        assert_eq!(drift("dst = \"10.0.0.0/24\"", tb), Vec::<String>::new());
        // The simulator's listening port.
        let w = drift("dport = 5001", "");
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(w[0].contains(":6000 live)") && w[0].contains("and 2 more flows"), "{}", w[0]);
        // Rules on what both drivers share.
        assert_eq!(drift("proto = \"tcp\"", ""), Vec::<String>::new());
        assert_eq!(drift("direction = \"outbound\"", ""), Vec::<String>::new());
    }

    /// What of the links the live testbed does not apply is named, key by key; a plain dumbbell
    /// (its access links faster than the bottleneck, no loss, no discipline) warns of nothing, nor
    /// does a bottleneck with a discipline, a receivers' access link that shapes or RTT groups.
    #[test]
    fn links_the_testbed_does_not_apply_are_named() {
        let gaps = |bottleneck: &str, access: &str, more: &str| {
            let text = format!(
                "duration = \"4s\"\n[topology]\nkind = \"dumbbell\"\n\
                 bottleneck = {{ rate = \"10Mbit/s\", delay = \"5ms\"{bottleneck} }}\n\
                 access = {{ delay = \"1ms\", {access} }}\n{more}\
                 [[flows]]\nkind = \"bulk\"\ncount = 4\n"
            );
            live_link_gaps(&Scenario::parse(&text, "g.toml").unwrap(), "g.toml")
        };
        const A: &str = "rate = \"100Mbit/s\"";
        assert_eq!(gaps("", A, ""), Vec::<String>::new());
        assert_eq!(gaps(", queue = \"50pkt\"", "rate = \"100Mbit/s\", jitter = \"0ms\"", ""), Vec::<String>::new());
        // A bottleneck discipline runs live (the wanem runs the link in a box): no gap.
        assert_eq!(gaps(", qdisc = { kind = \"red\" }", A, ""), Vec::<String>::new());
        assert_eq!(gaps(", reverse = { qdisc = { kind = \"afvq\" } }", A, ""), Vec::<String>::new());
        // An access link slower than the bottleneck, with loss: both named for the sender's; the
        // receivers' (inherited) runs in the wanem, in series behind the bottleneck.
        let w = gaps("", "rate = \"2Mbit/s\", loss = { kind = \"bernoulli\", p = 0.01 }", "");
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(
            w[0].starts_with("g.toml: key `topology.access`")
                && w[0].contains("sender access link")
                && w[0].contains("rate (2 Mbit/s")
                && w[0].ends_with("loss")
        );
        let racc = "receiver_access = { rate = \"1Gbit/s\", delay = \"3ms\", jitter = \"1ms\" }\n";
        assert_eq!(gaps("", A, racc), Vec::<String>::new());
        // RTT groups: their delays run in the wanem, flow by flow; a group's access loss is named
        // by the group, and `topology.access` (the other two flows') is not.
        let groups = "[[topology.groups]]\nsenders = 2\naccess = { rate = \"100Mbit/s\", delay = \"30ms\" }\n";
        assert_eq!(gaps("", A, groups), Vec::<String>::new());
        let lossy = "[[topology.groups]]\nsenders = 2\naccess = { delay = \"30ms\", loss = { kind = \"bernoulli\", p = 0.01 } }\n";
        let w = gaps("", A, lossy);
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(
            w[0].starts_with("g.toml: key `topology.groups[0].access`") && w[0].ends_with("not its loss"),
            "{}",
            w[0]
        );
        // With every flow in the group, `topology.access` is not used by any.
        let all = "[[topology.groups]]\nsenders = 4\naccess = { loss = { kind = \"bernoulli\", p = 0.01 } }\n";
        let w = gaps("", "rate = \"1Mbit/s\"", all);
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(
            w[0].contains("`topology.groups[0].access`")
                && w[0].ends_with("rate (1 Mbit/s, below the bottleneck's), loss"),
            "{}",
            w[0]
        );
    }

    /// Each flow's path beyond the bottleneck: the wanem's box is the bottleneck and then the
    /// flow's pair's own link, found by the flow's port, with the pair's access delays (here an RTT
    /// group's 30 ms for flow 0) each way.
    #[test]
    fn the_wanem_runs_each_flows_path_behind_the_bottleneck() {
        use ackshape_core::middlebox::{Dir, Emit};
        use ackshape_core::time::Time;
        let text = "duration = \"1s\"\n[topology]\nkind = \"dumbbell\"\nbottleneck = { rate = \"10Mbit/s\", delay = \"5ms\" }\n\
                    access = { rate = \"1Gbit/s\", delay = \"1ms\" }\n\
                    [[topology.groups]]\nsenders = 1\naccess = { delay = \"30ms\" }\n[[flows]]\ncount = 2\n";
        let sc = Scenario::parse(text, "p.toml").unwrap();
        let SimTopo::Dumbbell(d) = &sc.topology else { unreachable!() };
        let plan = wan_plan(&sc, d);
        let names: Vec<_> = plan.paths.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(names, ["access-d0", "access-d1"]);
        let mut b = plan.boxed.expect("a box");
        let mut rng = ackshape_wire::testing::Rng::new(1);
        let pkt = |port: u16, to_receiver: bool, rng: &mut ackshape_wire::testing::Rng| {
            let mut p = ackshape_wire::testing::sample_tcp(false, 1000, rng);
            if let ackshape_wire::L4::Tcp(t) = &mut p.l4 {
                (t.sport, t.dport) = if to_receiver { (40000, port) } else { (port, 40000) };
            }
            p
        };
        let mut out = Emit::new();
        b.on_packet(Time::ZERO, Dir::AToB, pkt(6000, true, &mut rng), &mut out);
        b.on_packet(Time::ZERO, Dir::AToB, pkt(6001, true, &mut rng), &mut out);
        b.on_packet(Time::ZERO, Dir::BToA, pkt(6000, false, &mut rng), &mut out);
        let mut left = Vec::new();
        while let Some(t) = b.poll_timeout() {
            b.on_timeout(t, &mut out);
            left.extend(out.drain(..).map(|(d, p)| (t, d, p.tcp().unwrap().dport)));
        }
        // Data: 5 ms + the sender's and receiver's access delays (30 + 1, or 1 + 1) after their
        // serialisation; the ACK of flow 0 back through its 1 + 30 ms and the bottleneck's 5.
        let ms = |t: Time| t.0 as f64 / 1e6;
        assert_eq!(left.len(), 3, "{left:?}");
        let find = |d: Dir, port: u16| ms(left.iter().find(|x| x.1 == d && x.2 == port).expect("left").0);
        let (f0, f1, ack) = (find(Dir::AToB, 6000), find(Dir::AToB, 6001), find(Dir::BToA, 40000));
        assert!((f0 - 36.0).abs() < 3.0 && (f1 - 7.0).abs() < 3.0 && (ack - 36.0).abs() < 3.0, "{left:?}");
        let st = serde_json::to_value(b.stats()).unwrap();
        assert_eq!(st["access"]["access-d0"]["a_to_b"]["forwarded"].as_u64(), Some(1), "{st}");
        assert_eq!(st["access"]["access-d1"]["a_to_b"]["forwarded"].as_u64(), Some(1), "{st}");
    }

    /// `[tcp]` keys the live run cannot give are named per table, with what Linux does; keys set to
    /// Linux's own behaviour, and the mapped ones, are not.
    #[test]
    fn tcp_settings_linux_does_otherwise_are_named() {
        let gaps = |tcp: &str, flow_tcp: &str| {
            let text = format!(
                "duration = \"4s\"\n[tcp]\n{tcp}\n[topology]\nkind = \"dumbbell\"\n\
                 bottleneck = {{ rate = \"10Mbit/s\", delay = \"5ms\" }}\n\
                 access = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n\
                 [[flows]]\nkind = \"bulk\"\ncount = 2\n{flow_tcp}"
            );
            live_tcp_gaps(&Scenario::parse(&text, "t.toml").unwrap(), "t.toml")
        };
        let linux = "cc = \"cubic\"\nmss = 1448\ninitial_window = 10\ndelack = 1\nrcv_buf = \"64KB\"\nsack = true\n\
                     min_rto = \"200ms\"\nwindow_update = \"bsd\"\ndupthresh = 3";
        assert_eq!(gaps(linux, ""), Vec::<String>::new());
        assert_eq!(gaps("timestamps = false\nmss = 1460", ""), Vec::<String>::new(), "mapped, and then Linux's MSS");
        let w =
            gaps("cc = \"reno\"\nmss = 536\nmin_rto = \"1s\"\nsack = false\nmax_window = \"20pkt\"\ndupthresh = 5", "");
        assert_eq!(w.len(), 1, "{w:#?}");
        for part in ["t.toml: key `tcp`:", "max_window"] {
            assert!(w[0].contains(part), "{part}: {}", w[0]);
        }
        for mapped in ["cc =", "min_rto", "sack", "mss", "dupthresh"] {
            assert!(!w[0].contains(mapped), "{mapped} reaches Linux's knobs: {}", w[0]);
        }
        // An MSS the testbed's MTU cannot carry is named.
        let w = gaps("mss = 8948", "");
        assert!(w.len() == 1 && w[0].contains("mss = 8948 (Linux: at most 1448"), "{w:#?}");
        assert_eq!(
            endpoint_tcp(
                &Scenario::parse(&format!("duration = \"4s\"\n[tcp]\nmss = 8948\n{BASE}"), "t.toml").unwrap().tcp
            )
            .advmss,
            None
        );
        let tcp = |t: &str| {
            endpoint_tcp(&Scenario::parse(&format!("duration = \"4s\"\n[tcp]\n{t}\n{BASE}"), "t.toml").unwrap().tcp)
        };
        assert_eq!(tcp("mss = 536").advmss, Some(548), "the timestamp option counts in Linux's MSS");
        assert_eq!(tcp("mss = 536\ntimestamps = false").advmss, Some(536));
        assert_eq!(tcp("mss = 1448").advmss, Some(1460));
        assert_eq!(tcp("dupthresh = 5").reordering, Some(5));
        // Beyond Linux's `tcp_max_reordering` (300) it stays the simulator's, and is named.
        assert_eq!(tcp("dupthresh = 400").reordering, None);
        assert!(gaps("dupthresh = 400", "")[0].contains("dupthresh = 400 (Linux: 3"));
        // In a flow's own `tcp` they do not (the hosts are shared by every flow): named there.
        let w = gaps("", "tcp = { min_rto = \"1s\", sack = false, initial_window = 4 }\n");
        assert_eq!(w.len(), 1, "{w:#?}");
        for part in ["min_rto = 1000 ms (Linux: 200 ms)", "sack = false (Linux: on)", "initial_window = 4 (Linux: 10)"]
        {
            assert!(w[0].contains(part), "{part}: {}", w[0]);
        }
        // A flow's own `mss`, `rcv_buf` and `delack = 1` reach its sockets: not named.
        assert_eq!(
            gaps("", "tcp = { cc = \"reno\", mss = 536, rcv_buf = \"64KB\", delack = 1 }\n"),
            Vec::<String>::new()
        );
        let own = |tcp: &str, flow: &str| {
            let sc = Scenario::parse(
                &format!("duration = \"4s\"\n[tcp]\n{tcp}\n{BASE}")
                    .replace("count = 1", &format!("count = 1\ntcp = {flow}")),
                "t.toml",
            )
            .unwrap();
            flow_sock_opts(sc.flows[0].tcp.as_ref(), &sc.tcp)
        };
        let o = own("", "{ mss = 536, rcv_buf = \"64KB\", delack = 1 }");
        assert_eq!((o.max_seg, o.rcv_buf, o.quickack), (Some(548), Some(64_000), true), "{o:?}");
        let o = own("timestamps = false\nmss = 1000", "{ mss = 536, rcv_buf = \"10pkt\" }");
        assert_eq!((o.max_seg, o.rcv_buf, o.quickack), (Some(536), Some(5_360), false), "{o:?}");
        assert_eq!(own("mss = 536", "{ delack = 2 }"), Default::default(), "only the flow's own keys");
        // A flow's MSS above the hosts' (`[tcp]`'s, on their routes) cannot be had: named.
        let w = gaps("mss = 536", "tcp = { mss = 1000 }\n");
        assert!(
            w.len() == 1 && w[0].contains("mss = 1000 (live: the hosts' routes carry `[tcp]`'s mss = 536"),
            "{w:#?}"
        );
        // A flow's own `tcp` table is named by its key.
        let w = gaps("", "tcp = { ecn = true, rto_model = \"ns2\" }\n");
        assert_eq!(w.len(), 1, "{w:#?}");
        assert!(
            w[0].starts_with("t.toml: key `flows[0].tcp`:") && w[0].contains("ecn = true (Linux: off)"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("rto_model"), "{}", w[0]);
    }
}
