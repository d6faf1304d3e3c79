//! The simulated network: nodes, links, routes, TCP/UDP flows, and the event loop.

use crate::engine::{DelayLine, Ev, EventQueue};
use crate::link::{Capture, LinkDir, LinkQueue};
use crate::metrics::*;
use crate::middlebox::{build_middlebox, MbSlot};
use crate::pool::{PacketPool, Pkt};
use crate::scenario::*;
use ackshape_core::impair::{Delay, JitterSpec, Loss};
use ackshape_core::middlebox::Dir as MbDir;
use ackshape_core::rng::{stream, Rng};
use ackshape_core::tcp::vps::{VpsConfig, VpsGroup};
use ackshape_core::tcp::{CcAlgo, Connection, TcpConfig, TcpEvent, TcpStats, TcpTrace};
use ackshape_core::time::{Dur, Time};
use ackshape_core::units::Size;
use ackshape_wire::{Ecn, IpHdr, Packet, UdpHdr, L4};
use bytes::Bytes;
use rand::{Rng as _, RngCore};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

const NONE: u32 = u32::MAX;
const LISTEN_PORT: u16 = 5001;
const CHUNK: usize = 64 * 1024;

/// Address of host number `k`.
pub fn host_addr(k: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0A00_0001u32 + k))
}
fn host_of(a: &IpAddr) -> u32 {
    match a {
        IpAddr::V4(v) => u32::from(*v).wrapping_sub(0x0A00_0001),
        IpAddr::V6(_) => NONE,
    }
}

struct Node {
    name: String,
    host: u32,
    next_port: u16,
}

struct ConnSlot {
    conn: Connection,
    node: u32,
    flow: u32,
    sender: bool,
    /// The WRR application (group) that writes to this connection's flow, or NONE.
    wrr: u32,
    timer: Option<Time>,
    key: (u32, u16, u16, u32),
}

/// Per-flow counters at the start of the measurement window.
#[derive(Clone, Default)]
struct Snap {
    delivered: u64,
    sent_bytes: u64,
    data_segs: u64,
    retrans: u64,
}

struct Flow {
    name: String,
    kind: FlowKind,
    src: u32,
    dst: u32,
    cfg: TcpConfig,
    bytes: Option<u64>,
    start: StartV,
    stop: Option<Time>,
    think: Dur,
    think_dist: ThinkDist,
    open: FlowOpen,
    rate_bps: u64,
    pkt_size: u32,
    rng: Rng,
    // live state
    sender: u32,
    receiver: u32,
    transfer_start: Time,
    transfer_delivered: u64,
    written: u64,
    udp_port: u16,
    /// The (src host, port, dst host) of this flow's current connection in `syn_flow`.
    syn_key: Option<(u32, u16, u32)>,
    // verification
    send_gen: Option<Rng>,
    recv_gen: Option<Rng>,
    verify_ok: bool,
    verify_bytes: u64,
    // metrics
    delivered: u64,
    bins: Vec<u64>,
    done_stats: TcpStats,
    udp_sent_bytes: u64,
    udp_sent_pkts: u64,
    completions: Vec<f64>,
    snap: Snap,
    /// The sender group this flow belongs to (VPS, WRR), or NONE; and its index in it.
    group: u32,
    gidx: u32,
    /// `udp-onoff`: end of the current on period; mean on and off periods.
    on_until: Time,
    on_mean: Dur,
    off_mean: Dur,
}

/// Application-layer weighted round robin over ordinary TCP connections (paper 003 Sec. 2.1).
struct WrrApp {
    /// Units per round, per flow.
    weights: Vec<u64>,
    unit: u64,
    sndbuf: u64,
    blocking: bool,
    /// Flow (index in the group) being served and units it got this round.
    cur: usize,
    sent: u64,
    /// Bytes written to each flow's connection.
    written: Vec<u64>,
    running: bool,
    again: bool,
}

enum GroupKind {
    Vps(Box<VpsGroup>),
    Wrr(WrrApp),
}

/// Flows that leave one sender together (a VPS group, a WRR application).
struct GroupSlot {
    kind: GroupKind,
    /// Sender node.
    node: u32,
    /// Flow ids, in group order.
    flows: Vec<u32>,
    timer: Option<Time>,
}

/// The queue of one link direction in one time bin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueBin {
    /// End of the bin (s).
    pub t_end_s: f64,
    /// Time-average queue length in the bin (packets).
    pub avg_pkts: f64,
    /// Maximum queue length in the bin (packets).
    pub max_pkts: usize,
}

/// The queue length of one link direction per bin ([`Sim::queue_series`]).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSeries {
    /// Index of the link direction (as in [`Sim::link_names`]).
    pub link: usize,
    pub bins: Vec<QueueBin>,
}

/// One row of the per-flow trace.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TraceRow {
    pub t_s: f64,
    pub flow: u32,
    #[serde(flatten)]
    pub tr: TcpTrace,
}

/// Options of a run that are not in the scenario.
#[derive(Default)]
pub struct RunOptions {
    /// Link names to capture, each with its sink.
    pub captures: Vec<(String, Box<dyn Capture>)>,
}

/// Names for an error message: all of them up to 16, else the first 12 and how many there are
/// (a dumbbell of 10,000 flows has 40,002 link directions).
fn name_list(names: &[&str]) -> String {
    if names.len() <= 16 {
        names.join(", ")
    } else {
        format!("{}, … ({} in all)", names[..12].join(", "), names.len())
    }
}

/// A built simulation.
pub struct Sim {
    now: Time,
    q: EventQueue,
    /// Packets in flight (in links, queues and delay lines), by handle.
    pool: PacketPool,
    nodes: Vec<Node>,
    links: Vec<LinkDir>,
    routes: Vec<Vec<u32>>,
    /// The only outgoing link of nodes that have one (their `routes` row is empty).
    default_route: Vec<u32>,
    hosts: Vec<u32>,
    conns: Vec<Option<ConnSlot>>,
    free_conns: Vec<u32>,
    // FxHash (`rustc-hash`) maps for integer keys: lookups only, never iterated, so their order
    // cannot reach a result.
    demux: FxHashMap<(u32, u16, u16, u32), u32>,
    syn_flow: FxHashMap<(u32, u16, u32), u32>,
    udp_sink: FxHashMap<(u32, u16), u32>,
    flows: Vec<Flow>,
    duration: Time,
    warmup: Time,
    bin: Dur,
    trace_interval: Option<Dur>,
    seed: u64,
    verify: bool,
    iss_rng: Rng,
    pub trace: Vec<TraceRow>,
    name: String,
    file: String,
    /// The scenario's `--set`s, for the summary.
    set: Vec<String>,
    link_snap: Vec<(u64, u128)>,
    /// Per link at the start of the window: per-class queue integrals and the discipline's stats.
    class_snap: Vec<([u128; 3], Option<ackshape_core::shape::asym::AsymStats>)>,
    /// Middleboxes, and for each node the index of its box (NONE: none).
    mbs: Vec<MbSlot>,
    node_mb: Vec<u32>,
    groups: Vec<GroupSlot>,
    /// Sender-side keys of group connections → (group, index in group).
    gdemux: FxHashMap<(u32, u16, u16, u32), (u32, u32)>,
    /// Per node, the output line of `host_jitter` (hosts only; empty without it).
    host_out: Vec<Option<HostLine>>,
}

/// A host's timing noise (`host_jitter`): what it sent waits here for its exit time, in order.
struct HostLine {
    delay: Delay,
    queue: DelayLine<Packet>,
}

/// Errors while building a simulation from a valid scenario (e.g. unreachable hosts).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    #[error("{file}: key `{key}`: {msg}")]
    Topology { file: String, key: String, msg: String },
}

fn queue_for(size: Size) -> LinkQueue {
    LinkQueue::fifo(size.into())
}

impl Sim {
    /// Build from a parsed scenario. `file` names it in errors and in the summary.
    pub fn build(sc: &Scenario, file: &str, seed: Option<u64>, opts: RunOptions) -> Result<Sim, BuildError> {
        let seed = seed.unwrap_or(sc.seed);
        let topo_err = |key: String, msg: String| BuildError::Topology { file: file.to_string(), key, msg };
        let mut nodes: Vec<Node> = Vec::new();
        let mut hosts: Vec<u32> = Vec::new();
        let mut links: Vec<LinkDir> = Vec::new();
        let add_node = |nodes: &mut Vec<Node>, hosts: &mut Vec<u32>, name: String, host: bool| -> u32 {
            let id = nodes.len() as u32;
            let h = if host {
                hosts.push(id);
                hosts.len() as u32 - 1
            } else {
                NONE
            };
            nodes.push(Node { name, host: h, next_port: 32768 });
            id
        };
        let add_link = |links: &mut Vec<LinkDir>, name: &str, a: u32, b: u32, spec: &LinkSpec| {
            let (f, r) = spec.directions();
            for (dir, p, from, to) in [(name.to_string(), f, a, b), (format!("{name}:rev"), r, b, a)] {
                let idx = links.len() as u64;
                let loss = Loss::new(p.loss.clone(), stream(seed, "loss", idx));
                let jitter = if p.jitter.0 > 0 { JitterSpec::Uniform { max_ns: p.jitter.0 } } else { JitterSpec::None };
                let delay = Delay::new(p.delay, jitter.clone(), p.reorder, stream(seed, "jitter", idx));
                let queue = match &p.qdisc {
                    Some(q) => LinkQueue::Disc(q.build(p.rate.0, stream(seed, "qdisc", idx))),
                    None => queue_for(p.queue),
                };
                let mut ld = LinkDir::new(dir, from, to, p.rate.0, queue, loss, delay, &jitter, p.reorder);
                if let Some(crate::scenario::QdiscSpec::Asym(a)) = &p.qdisc {
                    ld.qdisc_kind = Some(a.kind());
                }
                links.push(ld);
            }
        };
        // Which host each flow runs between.
        let mut placement: Vec<(u32, u32)> = Vec::new();
        match &sc.topology {
            TopologySpec::Dumbbell(d) => {
                let n = d.senders.unwrap_or_else(|| sc.flow_count().max(1));
                let left = add_node(&mut nodes, &mut hosts, "left".into(), false);
                let right = add_node(&mut nodes, &mut hosts, "right".into(), false);
                add_link(&mut links, "bottleneck", left, right, &d.bottleneck);
                // Senders attach to `left`, or to an upstream router `edge` when there is one.
                let attach = match &d.upstream {
                    Some(u) => {
                        let edge = add_node(&mut nodes, &mut hosts, "edge".into(), false);
                        add_link(&mut links, "upstream", edge, left, u);
                        edge
                    }
                    None => left,
                };
                let mut pairs = Vec::new();
                for i in 0..n {
                    let (acc, racc_i) = d.pair_links(i);
                    let s = add_node(&mut nodes, &mut hosts, format!("s{i}"), true);
                    add_link(&mut links, &format!("access-s{i}"), s, attach, &acc);
                    let r = add_node(&mut nodes, &mut hosts, format!("d{i}"), true);
                    add_link(&mut links, &format!("access-d{i}"), right, r, &racc_i);
                    pairs.push((nodes[s as usize].host, nodes[r as usize].host));
                }
                for (s, r) in DumbbellSpec::placement(&sc.flows, n) {
                    placement.push((pairs[s as usize].0, pairs[r as usize].1));
                }
            }
            TopologySpec::Graph(g) => {
                let mut by_name = HashMap::new();
                for nspec in &g.nodes {
                    let id = add_node(&mut nodes, &mut hosts, nspec.name.clone(), nspec.kind == NodeKind::Host);
                    by_name.insert(nspec.name.clone(), id);
                }
                for (i, l) in g.links.iter().enumerate() {
                    let name = l.name.clone().unwrap_or_else(|| format!("{}-{}", l.a, l.b));
                    if links.iter().any(|x| x.name == name) {
                        return Err(topo_err(
                            format!("topology.links[{i}].name"),
                            format!("duplicate link name {name:?}"),
                        ));
                    }
                    add_link(&mut links, &name, by_name[&l.a], by_name[&l.b], &l.link());
                }
                for f in &sc.flows {
                    let a = nodes[by_name[f.from.as_ref().unwrap()] as usize].host;
                    let b = nodes[by_name[f.to.as_ref().unwrap()] as usize].host;
                    for _ in 0..f.count.unwrap_or(1) {
                        placement.push((a, b));
                    }
                }
            }
        }
        // Routes: for every node, shortest path (by hop count, ties by link order) to every host,
        // by a BFS backwards from each host over incoming links.
        let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
        let mut out_links: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
        for (i, l) in links.iter().enumerate() {
            incoming[l.to as usize].push(i as u32);
            out_links[l.from as usize].push(i as u32);
        }
        // A node with a single outgoing link (every host of a dumbbell) needs no table: that link
        // is its default route, and it gets no row (a full table is O(nodes × hosts): 1.6 GB for
        // 10,000 flows). A *leaf* is such a node whose incoming links all come from where its one
        // link goes: no shortest path between two other nodes crosses it (it would be a detour
        // out and back), so the BFS starts at leaves but never walks through them, and costs
        // O(hosts × links between non-leaves) instead of O(hosts × links).
        let next_hop = |n: usize| links[out_links[n][0] as usize].to;
        let leaf: Vec<bool> = (0..nodes.len())
            .map(|n| out_links[n].len() == 1 && incoming[n].iter().all(|&i| links[i as usize].from == next_hop(n)))
            .collect();
        let inner_in: Vec<Vec<u32>> = incoming
            .iter()
            .map(|ins| ins.iter().copied().filter(|&i| !leaf[links[i as usize].from as usize]).collect())
            .collect();
        let mut routes: Vec<Vec<u32>> =
            out_links.iter().map(|out| if out.len() == 1 { Vec::new() } else { vec![NONE; hosts.len()] }).collect();
        let mut default_route = vec![NONE; nodes.len()];
        for (n, out) in out_links.iter().enumerate() {
            if out.len() == 1 {
                default_route[n] = out[0];
            }
        }
        // Every flow needs a path both ways; checked per destination host while its BFS is fresh.
        let mut to_host: Vec<Vec<(usize, u32)>> = vec![Vec::new(); hosts.len()];
        for (fi, &(a, b)) in placement.iter().enumerate() {
            to_host[b as usize].push((fi, hosts[a as usize]));
            to_host[a as usize].push((fi, hosts[b as usize]));
        }
        let mut unreachable: Option<usize> = None;
        let mut seen = vec![u32::MAX; nodes.len()];
        let mut frontier = Vec::new();
        let mut next = Vec::new();
        for (h, &hn) in hosts.iter().enumerate() {
            seen[hn as usize] = h as u32;
            frontier.clear();
            frontier.push(hn);
            let mut first = true;
            while !frontier.is_empty() {
                next.clear();
                for &v in &frontier {
                    let ins = if first { &incoming[v as usize] } else { &inner_in[v as usize] };
                    for &i in ins {
                        let from = links[i as usize].from as usize;
                        if seen[from] != h as u32 {
                            seen[from] = h as u32;
                            if let Some(slot) = routes[from].get_mut(h) {
                                *slot = i;
                            }
                            next.push(from as u32);
                        }
                    }
                }
                first = false;
                std::mem::swap(&mut frontier, &mut next);
            }
            let reaches = |n: u32| {
                let n = n as usize;
                seen[n] == h as u32 || (leaf[n] && seen[next_hop(n) as usize] == h as u32)
            };
            for &(fi, n) in &to_host[h] {
                if !reaches(n) && unreachable.is_none_or(|u| fi < u) {
                    unreachable = Some(fi);
                }
            }
        }
        if let Some(fi) = unreachable {
            let (a, b) = placement[fi];
            return Err(topo_err(
                format!("flows[{fi}]"),
                format!(
                    "no path between {} and {} in the topology",
                    nodes[hosts[a as usize] as usize].name, nodes[hosts[b as usize] as usize].name
                ),
            ));
        }
        let duration = Time(sc.duration.0 .0);
        let warmup = Time(sc.warmup.map(|w| w.0 .0).unwrap_or(0));
        let bin = sc.bin.map(|b| b.0).unwrap_or(Dur::from_secs(1));
        let nbins = (duration.0.div_ceil(bin.0)) as usize;
        let mut flows = Vec::new();
        let mut groups: Vec<GroupSlot> = Vec::new();
        let mut fid = 0u32;
        let mut k = 0usize;
        for (fi, f) in sc.flows.iter().enumerate() {
            let tcp = f.tcp.clone().unwrap_or_default().over(&sc.tcp);
            let mut cfg = tcp.to_config();
            cfg.carry_payload = sc.verify_payload;
            let count = f.count.unwrap_or(1) as usize;
            let weights = f.weights.clone().unwrap_or_else(|| vec![1.0; count]);
            if sc.verify_payload && matches!(f.kind, FlowKind::Vps | FlowKind::Wrr) {
                return Err(topo_err(
                    format!("flows[{fi}].kind"),
                    "verify_payload is not supported with `vps` or `wrr` flows".into(),
                ));
            }
            let group = match f.kind {
                FlowKind::Vps => {
                    let v = f.vps.clone().unwrap_or_default();
                    let vcfg = VpsConfig {
                        weights: weights.clone(),
                        max_burst: v.max_burst.unwrap_or(4),
                        suspension: v.suspension.unwrap_or(true),
                        suppression: v.suppression.unwrap_or(true),
                        rto_suspension: v.rto_suspension.unwrap_or(true),
                    };
                    let g = VpsGroup::new(vcfg, cfg.clone(), stream(seed, "vps", groups.len() as u64))
                        .map_err(|e| topo_err(format!("flows[{fi}].weights"), e.to_string()))?;
                    Some(GroupKind::Vps(Box::new(g)))
                }
                FlowKind::Wrr => {
                    let size = |v: Option<SizeV>, d: u64| match v.map(|x| x.0) {
                        None => d,
                        Some(Size::Bytes(b)) => b,
                        Some(Size::Packets(p)) => p * cfg.mss as u64,
                    };
                    Some(GroupKind::Wrr(WrrApp {
                        weights: weights.iter().map(|w| (w.round() as u64).max(1)).collect(),
                        unit: size(f.unit, cfg.mss as u64).max(1),
                        sndbuf: size(f.sndbuf, 64 * 1024),
                        blocking: f.io.unwrap_or_default() == WrrIo::Blocking,
                        cur: 0,
                        sent: 0,
                        written: vec![0; count],
                        running: false,
                        again: false,
                    }))
                }
                _ => None,
            };
            let gid = match group {
                Some(kind) => {
                    let src = placement[k].0;
                    groups.push(GroupSlot { kind, node: hosts[src as usize], flows: Vec::new(), timer: None });
                    groups.len() as u32 - 1
                }
                None => NONE,
            };
            for (j, &w) in weights.iter().enumerate().take(count) {
                let (src, dst) = placement[k];
                k += 1;
                let mut cfg = cfg.clone();
                if f.kind == FlowKind::Multcp {
                    cfg.cc = CcAlgo::MulTcp;
                    cfg.multcp_n = w;
                }
                if gid != NONE {
                    groups[gid as usize].flows.push(fid);
                }
                let name = match (&f.name, f.count.unwrap_or(1)) {
                    (Some(n), 1) => n.clone(),
                    (Some(n), _) => format!("{n}-{fid}"),
                    (None, _) => format!("f{fid}"),
                };
                flows.push(Flow {
                    name,
                    kind: f.kind,
                    src,
                    dst,
                    cfg: cfg.clone(),
                    bytes: f.bytes.map(|SizeV(s)| match s {
                        Size::Bytes(b) => b,
                        Size::Packets(p) => p * cfg.mss as u64,
                    }),
                    start: f.start.unwrap_or(StartV::At(Dur::ZERO)),
                    stop: f.stop.map(|d| Time(d.0 .0)),
                    think: f.think.map(|d| d.0).unwrap_or(Dur::ZERO),
                    think_dist: f.think_dist,
                    open: f.open,
                    rate_bps: f.rate.map(|r| r.0 .0).unwrap_or(0),
                    pkt_size: match f.packet_size.map(|s| s.0) {
                        Some(Size::Bytes(b)) => b.clamp(29, 65_535) as u32,
                        _ => 1000,
                    },
                    rng: stream(seed, "flow", fid as u64),
                    sender: NONE,
                    receiver: NONE,
                    transfer_start: Time::ZERO,
                    transfer_delivered: 0,
                    written: 0,
                    udp_port: 20000 + (fid % 40000) as u16,
                    syn_key: None,
                    send_gen: None,
                    recv_gen: None,
                    verify_ok: true,
                    verify_bytes: 0,
                    delivered: 0,
                    bins: vec![0; nbins],
                    done_stats: TcpStats::default(),
                    udp_sent_bytes: 0,
                    udp_sent_pkts: 0,
                    completions: Vec::new(),
                    snap: Snap::default(),
                    group: gid,
                    gidx: j as u32,
                    on_until: Time::ZERO,
                    on_mean: f.on.map(|d| d.0).unwrap_or(Dur::from_millis(500)),
                    off_mean: f.off.map(|d| d.0).unwrap_or(Dur::from_millis(500)),
                });
                fid += 1;
            }
        }
        // Middleboxes.
        let mut node_mb = vec![NONE; nodes.len()];
        let mut mbs = Vec::new();
        for (i, m) in sc.middlebox.iter().enumerate() {
            let Some(n) = nodes.iter().position(|x| x.name == m.node) else {
                let known: Vec<&str> = nodes.iter().filter(|x| x.host == NONE).map(|x| x.name.as_str()).collect();
                return Err(topo_err(
                    format!("middlebox[{i}].node"),
                    format!("expected a router node ({}), got {:?}", name_list(&known), m.node),
                ));
            };
            if nodes[n].host != NONE {
                return Err(topo_err(
                    format!("middlebox[{i}].node"),
                    format!("{:?} is a host; a middlebox sits at a router node", m.node),
                ));
            }
            if node_mb[n] != NONE {
                return Err(topo_err(
                    format!("middlebox[{i}].node"),
                    format!("node {:?} already has a middlebox", m.node),
                ));
            }
            let Some(wl) = links.iter().position(|l| l.name == m.wan && l.from == n as u32) else {
                let known: Vec<&str> = links.iter().filter(|l| l.from == n as u32).map(|l| l.name.as_str()).collect();
                return Err(topo_err(
                    format!("middlebox[{i}].wan"),
                    format!("expected a link leaving {:?} ({}), got {:?}", m.node, name_list(&known), m.wan),
                ));
            };
            let mb = build_middlebox(m, seed, i, std::path::Path::new(file).parent())
                .map_err(|(k, msg)| topo_err(format!("middlebox[{i}].{k}"), msg))?;
            node_mb[n] = mbs.len() as u32;
            mbs.push(MbSlot {
                node: n as u32,
                wan_link: wl as u32,
                mode: m.mode,
                delay: m.delay.map(|d| d.0).unwrap_or(Dur::ZERO),
                kind: m.kind.clone(),
                mb,
                timer: None,
                copies: Default::default(),
                injects: Default::default(),
                out: Vec::new(),
                packets_seen: 0,
                packets_emitted: 0,
            });
        }
        let mut sim = Sim {
            now: Time::ZERO,
            q: EventQueue::with_bucket_shift(EventQueue::bucket_shift_for(links.iter().map(|l| l.rate_bps))),
            pool: PacketPool::default(),
            nodes,
            links,
            routes,
            default_route,
            hosts,
            conns: Vec::new(),
            free_conns: Vec::new(),
            demux: FxHashMap::default(),
            syn_flow: FxHashMap::default(),
            udp_sink: FxHashMap::default(),
            flows,
            duration,
            warmup,
            bin,
            trace_interval: sc.trace_interval.map(|d| d.0),
            seed,
            verify: sc.verify_payload,
            iss_rng: stream(seed, "iss", 0),
            trace: Vec::new(),
            name: sc.name.clone().unwrap_or_else(|| file.to_string()),
            file: file.to_string(),
            set: sc.set.clone(),
            link_snap: Vec::new(),
            class_snap: Vec::new(),
            mbs,
            node_mb,
            groups,
            gdemux: FxHashMap::default(),
            host_out: Vec::new(),
        };
        if let Some(j) = sc.host_jitter.filter(|j| j.0 > Dur::ZERO) {
            let lines = sim.nodes.iter().enumerate().map(|(i, node)| {
                (node.host != NONE).then(|| HostLine {
                    delay: Delay::new(
                        Dur::ZERO,
                        JitterSpec::Uniform { max_ns: j.0 .0 },
                        false,
                        stream(seed, "host-jitter", i as u64),
                    ),
                    queue: Default::default(),
                })
            });
            sim.host_out = lines.collect();
        }
        for l in &mut sim.links {
            l.keep_queue_bins(bin);
        }
        for (name, cap) in opts.captures {
            match sim.links.iter_mut().find(|l| l.name == name) {
                Some(l) => l.capture = Some(cap),
                None => {
                    let known: Vec<&str> = sim.links.iter().map(|l| l.name.as_str()).collect();
                    return Err(topo_err(
                        "--pcap".into(),
                        format!("no link named {name:?}; links are: {}", name_list(&known)),
                    ));
                }
            }
        }
        for i in 0..sim.flows.len() {
            let t = match sim.flows[i].start {
                StartV::At(d) => Time(d.0),
                StartV::Uniform(a, b) => {
                    let x: f64 = sim.flows[i].rng.gen();
                    Time(a.0 + ((b.0 - a.0) as f64 * x) as u64)
                }
            };
            if sim.flows[i].kind.is_udp() {
                let (dn, port) = (sim.hosts[sim.flows[i].dst as usize], sim.flows[i].udp_port);
                sim.udp_sink.insert((dn, port), i as u32);
                sim.q.push(t, Ev::UdpSend(i as u32));
            } else {
                sim.q.push(t, Ev::FlowStart(i as u32));
            }
        }
        sim.q.push(sim.warmup, Ev::Warmup);
        if let Some(ti) = sim.trace_interval {
            if ti.0 > 0 {
                sim.q.push(Time(ti.0), Ev::Trace);
            }
        }
        Ok(sim)
    }

    /// Names of the link directions.
    pub fn link_names(&self) -> Vec<String> {
        self.links.iter().map(|l| l.name.clone()).collect()
    }

    /// Run to the end. `progress` is called now and then with the fraction of simulated time done.
    pub fn run(&mut self, mut progress: Option<&mut dyn FnMut(f64)>) {
        while let Some((t, ev)) = self.q.pop_until(self.duration) {
            self.now = t;
            self.dispatch(ev);
            if self.q.processed() & 0xFFFF == 0 {
                if let Some(p) = progress.as_mut() {
                    p(t.0 as f64 / self.duration.0 as f64);
                }
            }
        }
        self.now = self.duration;
        for l in &mut self.links {
            l.settle(self.duration);
        }
        if let Some(p) = progress.as_mut() {
            p(1.0);
        }
    }

    #[inline(always)]
    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::TxDone(l) => {
                let link = &mut self.links[l as usize];
                link.txdone_pending = false;
                link.start_tx(self.now, &mut self.pool, &mut self.q, l);
            }
            Ev::Wire(l) => self.wire(l),
            Ev::QueueReady(l) => {
                let link = &mut self.links[l as usize];
                if link.ready_event == Some(self.now) {
                    link.ready_event = None;
                    link.start_tx(self.now, &mut self.pool, &mut self.q, l);
                }
            }
            Ev::ConnTimer(c) => self.conn_timer(c),
            Ev::FlowStart(f) => self.flow_start(f),
            Ev::UdpSend(f) => self.udp_send(f),
            Ev::Warmup => self.snapshot(),
            Ev::Trace => {
                for (i, f) in self.flows.iter().enumerate() {
                    if f.sender != NONE {
                        if let Some(s) = &self.conns[f.sender as usize] {
                            self.trace.push(TraceRow {
                                t_s: self.now.as_secs_f64(),
                                flow: i as u32,
                                tr: s.conn.trace(),
                            });
                        }
                    }
                }
                if let Some(ti) = self.trace_interval {
                    self.q.push(self.now + ti, Ev::Trace);
                }
            }
            Ev::MbTimer(m) => self.mb_timer(m),
            Ev::MbCopy(m) => self.mb_copy(m),
            Ev::MbInject(m) => self.mb_inject(m),
            Ev::HostOut(n) => self.host_out_due(n),
            Ev::GroupTimer(g) => {
                let slot = &mut self.groups[g as usize];
                if slot.timer == Some(self.now) {
                    slot.timer = None;
                    if let GroupKind::Vps(v) = &mut slot.kind {
                        v.handle_timeout(self.now);
                    }
                    self.drive_group(g);
                }
            }
        }
    }

    fn wire(&mut self, l: u32) {
        if self.links[l as usize].wire_event != Some(self.now) {
            return;
        }
        self.links[l as usize].wire_event = None;
        let to = self.links[l as usize].to;
        loop {
            let link = &mut self.links[l as usize];
            match link.wire.front() {
                Some((t, _)) if *t <= self.now => {
                    let (_, h) = link.wire.pop_front().unwrap();
                    self.arrive(to, h);
                }
                _ => break,
            }
        }
        let link = &mut self.links[l as usize];
        if let Some(&(t, _)) = link.wire.front() {
            if link.wire_event.is_none_or(|w| t < w) {
                link.wire_event = Some(t);
                self.q.push(t, Ev::Wire(l));
            }
        }
    }

    /// The link node `n` sends a packet for `dst` out over (NONE: no route).
    #[inline]
    fn route(&self, n: u32, dst: &IpAddr) -> u32 {
        let h = host_of(dst);
        let row = &self.routes[n as usize];
        if row.is_empty() {
            self.default_route[n as usize]
        } else if (h as usize) < row.len() {
            row[h as usize]
        } else {
            NONE
        }
    }

    /// Send a packet a host (node `n`) emits: after its `host_jitter`, if any, else now.
    #[inline]
    fn host_send(&mut self, n: u32, pkt: Packet) {
        let Some(Some(line)) = self.host_out.get_mut(n as usize) else {
            return self.forward_pkt(n, pkt);
        };
        let t = line.delay.exit_time(self.now);
        if let Some(t) = line.queue.push(t, pkt) {
            self.q.push(t, Ev::HostOut(n));
        }
    }

    /// Node `n`'s output line: send what is due, wait for the next.
    fn host_out_due(&mut self, n: u32) {
        let now = self.now;
        while let Some(p) = self.host_out[n as usize].as_mut().and_then(|l| l.queue.pop_due(now)) {
            self.forward_pkt(n, p);
        }
        if let Some(t) = self.host_out[n as usize].as_ref().and_then(|l| l.queue.next_at()) {
            self.q.push(t, Ev::HostOut(n));
        }
    }

    /// Send a packet from node `n` towards its destination.
    #[inline]
    fn forward_pkt(&mut self, n: u32, pkt: Packet) {
        let h = self.pool.put(pkt);
        self.forward(n, h);
    }

    /// Send packet `h` from node `n` towards its destination.
    #[inline]
    fn forward(&mut self, n: u32, h: Pkt) {
        let l = self.route(n, &self.pool.get(h).ip.dst);
        if l == NONE {
            self.pool.free(h);
            return; // no route: dropped (cannot happen for scenario flows, checked at build)
        }
        self.links[l as usize].offer(self.now, h, &mut self.pool, &mut self.q, l);
    }

    #[inline]
    fn arrive(&mut self, n: u32, h: Pkt) {
        let node = &self.nodes[n as usize];
        let pkt = self.pool.get(h);
        if node.host == NONE || host_of(&pkt.ip.dst) != node.host {
            let m = self.node_mb.get(n as usize).copied().unwrap_or(NONE);
            if m != NONE {
                let pkt = self.pool.take(h);
                self.mb_packet(m, pkt);
            } else {
                self.forward(n, h);
            }
            return;
        }
        let host = node.host;
        let src = host_of(&pkt.ip.src);
        match &pkt.l4 {
            L4::Tcp(t) => {
                let key = (n, t.dport, t.sport, src);
                if let Some(&c) = self.demux.get(&key) {
                    if let Some(slot) = self.conns[c as usize].as_mut() {
                        slot.conn.handle_packet(self.now, pkt);
                    }
                    self.pool.free(h);
                    self.drive(c);
                } else if let Some(&(g, i)) = self.gdemux.get(&key) {
                    if let GroupKind::Vps(v) = &mut self.groups[g as usize].kind {
                        v.handle_packet(self.now, i as usize, pkt);
                    }
                    self.pool.free(h);
                    self.drive_group(g);
                } else if t.dport == LISTEN_PORT {
                    let accepted = match self.syn_flow.get(&(src, t.sport, host)) {
                        Some(&f) => {
                            let iss = self.iss_rng.next_u32();
                            let cfg = self.flows[f as usize].cfg.clone();
                            Connection::accept(cfg, pkt, iss, self.now).map(|c| (f, c))
                        }
                        None => None,
                    };
                    self.pool.free(h);
                    if let Some((f, mut conn)) = accepted {
                        // Opened by the receiver: the listener is the sender and answers with
                        // the data.
                        let by_receiver = self.flows[f as usize].open == FlowOpen::Receiver;
                        if by_receiver && !self.verify {
                            write_transfer(&mut conn, self.flows[f as usize].bytes);
                        }
                        if by_receiver {
                            self.retire_sender(f);
                        }
                        let c = self.add_conn(conn, n, f, by_receiver, key);
                        if by_receiver {
                            self.flows[f as usize].sender = c;
                        } else {
                            self.flows[f as usize].receiver = c;
                        }
                        self.drive(c);
                    }
                } else {
                    self.pool.free(h);
                }
            }
            L4::Udp(u) => {
                if let Some(&f) = self.udp_sink.get(&(n, u.dport)) {
                    let fl = &mut self.flows[f as usize];
                    fl.delivered += pkt.payload_len as u64;
                    let b = (self.now.0 / self.bin.0) as usize;
                    if let Some(x) = fl.bins.get_mut(b) {
                        *x += pkt.payload_len as u64;
                    }
                }
                self.pool.free(h);
            }
            L4::Other { .. } => self.pool.free(h),
        }
    }

    fn add_conn(&mut self, conn: Connection, node: u32, flow: u32, sender: bool, key: (u32, u16, u16, u32)) -> u32 {
        let g = self.flows[flow as usize].group;
        let wrr = if g != NONE && matches!(self.groups[g as usize].kind, GroupKind::Wrr(_)) { g } else { NONE };
        let slot = ConnSlot { conn, node, flow, sender, wrr, timer: None, key };
        let c = match self.free_conns.pop() {
            Some(c) => {
                self.conns[c as usize] = Some(slot);
                c
            }
            None => {
                self.conns.push(Some(slot));
                self.conns.len() as u32 - 1
            }
        };
        self.demux.insert(key, c);
        c
    }

    fn conn_timer(&mut self, c: u32) {
        let now = self.now;
        let Some(slot) = self.conns[c as usize].as_mut() else {
            return;
        };
        if slot.timer != Some(now) {
            return;
        }
        slot.timer = None;
        if slot.conn.poll_timeout().is_some_and(|t| t <= now) {
            slot.conn.handle_timeout(now);
        }
        self.drive(c);
    }

    /// Drain a connection's output, events and timer after it was handed input.
    fn drive(&mut self, c: u32) {
        let now = self.now;
        // Keep a verifying sender's buffer topped up: its content is generated chunk by chunk.
        if self.verify {
            let Some(slot) = self.conns[c as usize].as_mut() else {
                return;
            };
            if slot.sender {
                let f = &mut self.flows[slot.flow as usize];
                let acked = slot.conn.stats().bytes_acked;
                let target = f.bytes.unwrap_or(u64::MAX);
                while f.written < target && f.written.saturating_sub(acked) < 4 * CHUNK as u64 {
                    let n = (target - f.written).min(CHUNK as u64) as usize;
                    let mut buf = vec![0u8; n];
                    f.send_gen.as_mut().unwrap().fill_bytes(&mut buf);
                    slot.conn.write_bytes(Bytes::from(buf));
                    f.written += n as u64;
                    if f.written == target {
                        slot.conn.close();
                    }
                }
            }
        }
        loop {
            let Some(slot) = self.conns[c as usize].as_mut() else {
                return;
            };
            let Some(p) = slot.conn.poll_transmit(now) else {
                break;
            };
            let n = slot.node;
            self.host_send(n, p);
        }
        let mut closed = false;
        loop {
            let Some(slot) = self.conns[c as usize].as_mut() else {
                return;
            };
            let Some(ev) = slot.conn.poll_event() else {
                break;
            };
            match ev {
                TcpEvent::Delivered { bytes } => {
                    let f = slot.flow;
                    self.on_delivered(c, f, bytes)
                }
                TcpEvent::Closed => closed = true,
                _ => {}
            }
        }
        let slot = self.conns[c as usize].as_mut().unwrap();
        if closed {
            let slot = self.conns[c as usize].take().unwrap();
            self.demux.remove(&slot.key);
            let f = &mut self.flows[slot.flow as usize];
            if slot.sender {
                add_stats(&mut f.done_stats, slot.conn.stats());
                if f.sender == c {
                    f.sender = NONE;
                }
            } else if f.receiver == c {
                f.receiver = NONE;
            }
            self.free_conns.push(c);
            return;
        }
        if let Some(t) = slot.conn.poll_timeout() {
            let t = t.max(now);
            if slot.timer.is_none_or(|p| t < p) {
                slot.timer = Some(t);
                self.q.push(t, Ev::ConnTimer(c));
            }
        }
        if slot.sender && slot.wrr != NONE {
            let g = slot.wrr;
            self.app_step(g);
        }
    }

    /// Send what a VPS group has to send and re-arm its timer.
    fn drive_group(&mut self, g: u32) {
        let node = self.groups[g as usize].node;
        loop {
            let GroupKind::Vps(v) = &mut self.groups[g as usize].kind else { return };
            let Some((_, p)) = v.poll_transmit() else { break };
            self.host_send(node, p);
        }
        let now = self.now;
        let slot = &mut self.groups[g as usize];
        let GroupKind::Vps(v) = &mut slot.kind else { return };
        while v.poll_event().is_some() {}
        if let Some(t) = v.poll_timeout() {
            let t = t.max(now);
            if slot.timer.is_none_or(|p| t < p) {
                slot.timer = Some(t);
                self.q.push(t, Ev::GroupTimer(g));
            }
        }
    }

    /// Let a WRR application write what its socket buffers take (paper 003 Sec. 2.1): `w_i`
    /// units per round; blocking waits on a full buffer, non-blocking skips the flow.
    fn app_step(&mut self, g: u32) {
        {
            let GroupKind::Wrr(app) = &mut self.groups[g as usize].kind else { return };
            if app.running {
                app.again = true;
                return;
            }
            app.running = true;
        }
        loop {
            let mut touched: Vec<u32> = Vec::new();
            let n = self.groups[g as usize].flows.len();
            let mut skipped = 0;
            loop {
                let GroupKind::Wrr(app) = &self.groups[g as usize].kind else { return };
                let (cur, unit, sndbuf, blocking) = (app.cur, app.unit, app.sndbuf, app.blocking);
                let f = self.groups[g as usize].flows[cur];
                let c = self.flows[f as usize].sender;
                let fits = c != NONE
                    && self.conns[c as usize].as_ref().is_some_and(|s| {
                        s.conn.state() != ackshape_core::tcp::TcpState::Closed
                            && app.written[cur].saturating_sub(s.conn.stats().bytes_acked) + unit <= sndbuf
                    });
                let GroupKind::Wrr(app) = &mut self.groups[g as usize].kind else { return };
                if fits {
                    if let Some(s) = self.conns[c as usize].as_mut() {
                        s.conn.write(unit);
                    }
                    app.written[cur] += unit;
                    if !touched.contains(&c) {
                        touched.push(c);
                    }
                    skipped = 0;
                    app.sent += 1;
                    if app.sent >= app.weights[cur] {
                        app.sent = 0;
                        app.cur = (cur + 1) % n;
                    }
                } else if blocking {
                    break; // wait until this socket has room
                } else {
                    skipped += 1;
                    app.sent = 0;
                    app.cur = (cur + 1) % n;
                    if skipped >= n {
                        break; // every socket is full
                    }
                }
            }
            for c in touched {
                self.drive(c);
            }
            let GroupKind::Wrr(app) = &mut self.groups[g as usize].kind else { return };
            if !std::mem::take(&mut app.again) {
                app.running = false;
                return;
            }
        }
    }

    fn on_delivered(&mut self, c: u32, f: u32, bytes: u64) {
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        fl.delivered += bytes;
        fl.transfer_delivered += bytes;
        let b = (now.0 / self.bin.0) as usize;
        if let Some(x) = fl.bins.get_mut(b) {
            *x += bytes;
        }
        if self.verify {
            if let Some(slot) = self.conns[c as usize].as_mut() {
                while let Some(data) = slot.conn.read() {
                    let gen = fl.recv_gen.as_mut().unwrap();
                    let mut exp = vec![0u8; data.len()];
                    gen.fill_bytes(&mut exp);
                    if exp[..] != data[..] {
                        fl.verify_ok = false;
                    }
                    fl.verify_bytes += data.len() as u64;
                }
            }
        }
        if let Some(total) = fl.bytes {
            if fl.transfer_delivered >= total && fl.transfer_delivered - bytes < total {
                fl.completions.push(now.since(fl.transfer_start).as_secs_f64());
                if fl.kind == FlowKind::Short {
                    let think = match fl.think_dist {
                        ThinkDist::Fixed => fl.think,
                        ThinkDist::Exponential => {
                            let u: f64 = fl.rng.gen::<f64>().max(1e-12);
                            Dur::from_secs_f64(-u.ln() * fl.think.as_secs_f64())
                        }
                    };
                    let next = now + think;
                    if fl.stop.is_none_or(|s| next < s) {
                        self.q.push(next, Ev::FlowStart(f));
                    }
                }
            }
        }
    }

    fn flow_start(&mut self, f: u32) {
        let now = self.now;
        if self.flows[f as usize].stop.is_some_and(|s| now >= s) {
            return;
        }
        let (src, dst) = (self.flows[f as usize].src, self.flows[f as usize].dst);
        // The opener connects from `src` to the listener at `dst`: the receiver of a flow it
        // opens (`open = "receiver"`) connects to its sender.
        let by_receiver = self.flows[f as usize].open == FlowOpen::Receiver;
        let (src, dst) = if by_receiver { (dst, src) } else { (src, dst) };
        let sn = self.hosts[src as usize];
        let node = &mut self.nodes[sn as usize];
        // Ephemeral port not in use by this node towards dst.
        let mut port = node.next_port;
        for _ in 0..40000 {
            port = if port >= 60999 { 32768 } else { port + 1 };
            if !self.demux.contains_key(&(sn, port, LISTEN_PORT, dst))
                && !self.syn_flow.contains_key(&(src, port, dst))
                && !self.gdemux.contains_key(&(sn, port, LISTEN_PORT, dst))
            {
                break;
            }
        }
        node.next_port = port;
        let local = SocketAddr::new(host_addr(src), port);
        let remote = SocketAddr::new(host_addr(dst), LISTEN_PORT);
        let iss = self.iss_rng.next_u32();
        let (g, gi) = (self.flows[f as usize].group, self.flows[f as usize].gidx);
        if g != NONE {
            if let GroupKind::Vps(v) = &mut self.groups[g as usize].kind {
                // A VPS actual flow: the group owns its sending side.
                v.connect(gi as usize, local, remote, iss, now);
                v.write(gi as usize, u64::MAX / 4, now);
                self.flows[f as usize].transfer_start = now;
                self.syn_flow.insert((src, port, dst), f);
                self.flows[f as usize].syn_key = Some((src, port, dst));
                self.gdemux.insert((sn, port, LISTEN_PORT, dst), (g, gi));
                self.drive_group(g);
                return;
            }
        }
        let app = g != NONE; // a WRR application writes the data
        if !by_receiver {
            self.retire_sender(f);
        }
        let fl = &mut self.flows[f as usize];
        let mut conn = Connection::connect(fl.cfg.clone(), local, remote, iss, now);
        fl.transfer_start = now;
        fl.transfer_delivered = 0;
        fl.written = 0;
        if self.verify {
            let gen = stream(self.seed, "payload", ((f as u64) << 24) + fl.completions.len() as u64);
            fl.send_gen = Some(gen.clone());
            fl.recv_gen = Some(gen);
        } else if !app && !by_receiver {
            write_transfer(&mut conn, fl.bytes);
        }
        // Old connection of a short flow: forget its SYN mapping.
        if let Some(k) = self.flows[f as usize].syn_key.replace((src, port, dst)) {
            self.syn_flow.remove(&k);
        }
        self.syn_flow.insert((src, port, dst), f);
        let c = self.add_conn(conn, sn, f, !by_receiver, (sn, port, LISTEN_PORT, dst));
        if by_receiver {
            self.flows[f as usize].receiver = c;
        } else {
            self.flows[f as usize].sender = c;
        }
        self.drive(c);
    }

    fn udp_send(&mut self, f: u32) {
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        if fl.stop.is_some_and(|s| now >= s) {
            return;
        }
        if fl.kind == FlowKind::UdpOnoff {
            let mut exp = |m: Dur| {
                let u: f64 = fl.rng.gen::<f64>().max(1e-12);
                Dur::from_secs_f64(-u.ln() * m.as_secs_f64())
            };
            if fl.on_until == Time::ZERO {
                fl.on_until = now + exp(fl.on_mean); // first on period starts now
            } else if now >= fl.on_until {
                let next = now + exp(fl.off_mean);
                fl.on_until = next + exp(fl.on_mean);
                self.q.push(next, Ev::UdpSend(f));
                return;
            }
        }
        let payload = fl.pkt_size.saturating_sub(28);
        let pkt = Packet {
            ip: IpHdr { src: host_addr(fl.src), dst: host_addr(fl.dst), ttl: 64, dscp: 0, ecn: Ecn::NotEct, id: 0 },
            l4: L4::Udp(UdpHdr { sport: fl.udp_port, dport: fl.udp_port }),
            payload_len: payload,
            payload: None,
        };
        fl.udp_sent_bytes += payload as u64;
        fl.udp_sent_pkts += 1;
        let gap = fl.pkt_size as f64 * 8.0 / fl.rate_bps as f64;
        let gap = match fl.kind {
            FlowKind::UdpPoisson => {
                let u: f64 = fl.rng.gen::<f64>().max(1e-12);
                -u.ln() * gap
            }
            _ => gap,
        };
        self.q.push(now + Dur::from_secs_f64(gap), Ev::UdpSend(f));
        let sn = self.hosts[fl.src as usize];
        self.host_send(sn, pkt);
    }

    /// A short flow's next transfer replaces its sending connection, which may linger (its FIN
    /// sent, the receiver never closing): count what it sent now, and keep it from being topped up
    /// with the next transfer's data or counted again if it closes.
    fn retire_sender(&mut self, f: u32) {
        let old = std::mem::replace(&mut self.flows[f as usize].sender, NONE);
        if old == NONE {
            return;
        }
        if let Some(slot) = self.conns[old as usize].as_mut() {
            if slot.sender && slot.flow == f {
                add_stats(&mut self.flows[f as usize].done_stats, slot.conn.stats());
                slot.sender = false;
            }
        }
    }

    fn flow_tcp_stats(&self, f: &Flow) -> TcpStats {
        let mut s = f.done_stats.clone();
        if f.group != NONE {
            if let GroupKind::Vps(v) = &self.groups[f.group as usize].kind {
                if let Some(st) = v.flow_stats(f.gidx as usize) {
                    add_stats(&mut s, st);
                }
                return s;
            }
        }
        if f.sender != NONE {
            if let Some(slot) = &self.conns[f.sender as usize] {
                add_stats(&mut s, slot.conn.stats());
            }
        }
        s
    }

    fn snapshot(&mut self) {
        for i in 0..self.flows.len() {
            let s = self.flow_tcp_stats(&self.flows[i]);
            let f = &mut self.flows[i];
            f.snap = Snap {
                delivered: f.delivered,
                sent_bytes: s.data_bytes_sent + f.udp_sent_bytes,
                data_segs: s.data_segs_sent + f.udp_sent_pkts,
                retrans: s.retrans_segs,
            };
        }
        let now = self.now;
        self.link_snap = self
            .links
            .iter_mut()
            .map(|l| {
                l.settle(now);
                l.start_window();
                (l.c.busy_ns, l.c.q_integral)
            })
            .collect();
        self.class_snap = self.links.iter().map(|l| (l.c.class_q_integral, l.queue.asym_stats().cloned())).collect();
        for slot in self.mbs.iter_mut() {
            slot.mb.start_window(now);
        }
    }

    /// The link directions a packet from host `src` to host `dst` crosses, in order.
    fn path_links(&self, src: u32, dst: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let (mut n, end) = (self.hosts[src as usize], self.hosts[dst as usize]);
        while n != end && out.len() <= self.links.len() {
            let row = &self.routes[n as usize];
            let l = if row.is_empty() { self.default_route[n as usize] } else { row[dst as usize] };
            if l == NONE {
                break;
            }
            out.push(l);
            n = self.links[l as usize].to;
        }
        out
    }

    /// Per-class summary of link `i` over the window (disciplines with classes only).
    fn classes_summary(&self, i: usize, win: f64) -> Option<ClassesSummary> {
        let l = &self.links[i];
        let st = l.queue.asym_stats()?;
        let (q0, s0) = match self.class_snap.get(i) {
            Some((q, s)) => (*q, s.clone().unwrap_or_default()),
            None => ([0; 3], Default::default()),
        };
        let class = |k: usize| {
            let pick = |c: &ackshape_core::shape::asym::ClassCounts| [c.ack, c.data, c.non_tcp][k];
            let avg = (l.c.class_q_integral[k] - q0[k]) as f64 * 1e-9 / win;
            let dequeued = pick(&st.dequeued) - pick(&s0.dequeued);
            ClassQueue {
                queue_avg_pkts: avg,
                queue_max_pkts: l.class_q_max_window[k] as u64,
                arrived: pick(&st.arrived) - pick(&s0.arrived),
                dequeued,
                dropped: pick(&st.dropped) - pick(&s0.dropped),
                queue_delay_avg_s: if dequeued > 0 { avg / (dequeued as f64 / win) } else { 0.0 },
            }
        };
        let ack = class(0);
        let filtered = st.drops.ack_filtered - s0.drops.ack_filtered;
        let random = st.drops.ack_random_drop - s0.drops.ack_random_drop;
        Some(ClassesSummary {
            kind: l.qdisc_kind.unwrap_or("").to_string(),
            ack_drops_queue_full: ack.dropped.saturating_sub(filtered + random),
            ack_drops_filtered: filtered,
            ack_drops_random: random,
            ack,
            data: class(1),
            non_tcp: class(2),
        })
    }

    /// A packet crossing the node of middlebox `m`.
    fn mb_packet(&mut self, m: u32, pkt: Packet) {
        let slot = &mut self.mbs[m as usize];
        let n = slot.node;
        let dir = if self.route(n, &pkt.ip.dst) == self.mbs[m as usize].wan_link { MbDir::AToB } else { MbDir::BToA };
        let slot = &mut self.mbs[m as usize];
        slot.packets_seen += 1;
        match slot.mode {
            crate::scenario::MbMode::Inline => {
                let mut out = std::mem::take(&mut slot.out);
                slot.mb.on_packet(self.now, dir, pkt, &mut out);
                self.mb_emit(m, &mut out);
                self.mbs[m as usize].out = out;
                self.mb_rearm(m);
            }
            crate::scenario::MbMode::Mirror => {
                // The original goes on first: the box only sees a copy of a packet that has
                // already passed, so even with no delay what it injects follows the original.
                let copy = pkt.clone();
                self.forward_pkt(n, pkt);
                let slot = &mut self.mbs[m as usize];
                if slot.delay == Dur::ZERO {
                    let mut out = std::mem::take(&mut slot.out);
                    slot.mb.on_packet(self.now, dir, copy, &mut out);
                    self.mb_emit(m, &mut out);
                    self.mbs[m as usize].out = out;
                    self.mb_rearm(m);
                } else {
                    if let Some(t) = slot.copies.push(self.now + slot.delay, (dir, copy)) {
                        self.q.push(t, Ev::MbCopy(m));
                    }
                }
            }
        }
    }

    /// Send what a box emitted: inline boxes' packets leave the node now; a mirror box's
    /// injections reach the node after its delay.
    fn mb_emit(&mut self, m: u32, out: &mut ackshape_core::middlebox::Emit) {
        let n = self.mbs[m as usize].node;
        self.mbs[m as usize].packets_emitted += out.len() as u64;
        let (mode, delay) = (self.mbs[m as usize].mode, self.mbs[m as usize].delay);
        for (_, p) in out.drain(..) {
            if mode == crate::scenario::MbMode::Mirror && delay > Dur::ZERO {
                if let Some(t) = self.mbs[m as usize].injects.push(self.now + delay, p) {
                    self.q.push(t, Ev::MbInject(m));
                }
            } else {
                self.forward_pkt(n, p);
            }
        }
    }

    fn mb_rearm(&mut self, m: u32) {
        let slot = &mut self.mbs[m as usize];
        if let Some(t) = slot.mb.poll_timeout() {
            let t = t.max(self.now);
            if slot.timer.is_none_or(|x| t < x) {
                slot.timer = Some(t);
                self.q.push(t, Ev::MbTimer(m));
            }
        }
    }

    fn mb_timer(&mut self, m: u32) {
        let slot = &mut self.mbs[m as usize];
        if slot.timer != Some(self.now) {
            return;
        }
        slot.timer = None;
        if slot.mb.poll_timeout().is_some_and(|t| t <= self.now) {
            let mut out = std::mem::take(&mut slot.out);
            slot.mb.on_timeout(self.now, &mut out);
            self.mb_emit(m, &mut out);
            self.mbs[m as usize].out = out;
        }
        self.mb_rearm(m);
    }

    fn mb_copy(&mut self, m: u32) {
        while let Some((dir, p)) = self.mbs[m as usize].copies.pop_due(self.now) {
            let slot = &mut self.mbs[m as usize];
            let mut out = std::mem::take(&mut slot.out);
            slot.mb.on_packet(self.now, dir, p, &mut out);
            self.mb_emit(m, &mut out);
            self.mbs[m as usize].out = out;
        }
        if let Some(t) = self.mbs[m as usize].copies.next_at() {
            self.q.push(t, Ev::MbCopy(m));
        }
        self.mb_rearm(m);
    }

    fn mb_inject(&mut self, m: u32) {
        let n = self.mbs[m as usize].node;
        while let Some(p) = self.mbs[m as usize].injects.pop_due(self.now) {
            self.forward_pkt(n, p);
        }
        if let Some(t) = self.mbs[m as usize].injects.next_at() {
            self.q.push(t, Ev::MbInject(m));
        }
    }

    pub fn middlebox_stats(&self) -> Vec<serde_json::Value> {
        self.mbs
            .iter()
            .map(|s| {
                serde_json::json!({
                    "node": self.nodes[s.node as usize].name,
                    "kind": s.kind,
                    "packets_seen": s.packets_seen,
                    "packets_emitted": s.packets_emitted,
                    "stats": serde_json::to_value(s.mb.stats()).unwrap_or_default(),
                })
            })
            .collect()
    }

    /// Stats of every VPS group: its flows, weights, the controller's counters and each virtual
    /// flow's congestion-control counters.
    pub fn group_stats(&self) -> Vec<serde_json::Value> {
        self.groups
            .iter()
            .filter_map(|g| match &g.kind {
                GroupKind::Vps(v) => {
                    let virt: Vec<serde_json::Value> = (0..v.len())
                        .map(|i| {
                            let c = v.virtual_flow(i);
                            let st = c.stats();
                            serde_json::json!({
                                "fast_retransmits": st.fast_retransmits,
                                "timeouts": st.timeouts,
                                "retransmitted_segments": st.retrans_segs,
                                "segments": st.data_segs_sent,
                                "cwnd_segments": c.cwnd_bytes() as f64 / v.actual(i).map_or(1000, |a| a.mss()) as f64,
                                "rtt_mean_ms": if st.rtt_samples > 0 { st.rtt_sum_ns as f64 / st.rtt_samples as f64 * 1e-6 } else { 0.0 },
                            })
                        })
                        .collect();
                    Some(serde_json::json!({
                        "kind": "vps",
                        "flows": g.flows,
                        "weights": v.weights(),
                        "stats": v.stats(),
                        "virtual": virt,
                    }))
                }
                GroupKind::Wrr(_) => None,
            })
            .collect()
    }

    /// Per-flow goodput time series: (bin end in s, flow id, goodput bit/s).
    pub fn goodput_series(&self) -> Vec<(f64, u32, f64)> {
        let mut out = Vec::new();
        let b = self.bin.as_secs_f64();
        for (i, f) in self.flows.iter().enumerate() {
            for (k, bytes) in f.bins.iter().enumerate() {
                let end = ((k + 1) as f64 * b).min(self.duration.as_secs_f64());
                let width = end - k as f64 * b;
                out.push((end, i as u32, *bytes as f64 * 8.0 / width));
            }
        }
        out
    }

    /// Queue length per bin of every link direction in which something was queued, in the bins of
    /// the goodput series. Every bin of such a link is listed, empty ones with zeros.
    pub fn queue_series(&self) -> Vec<QueueSeries> {
        let b = self.bin.as_secs_f64();
        let d = self.duration.as_secs_f64();
        let nbins = self.duration.0.div_ceil(self.bin.0.max(1)) as usize;
        let mut out = Vec::new();
        for (i, l) in self.links.iter().enumerate() {
            let bins = l.queue_bins(self.now.min(self.duration));
            if bins.is_empty() {
                continue;
            }
            let mut dense: Vec<QueueBin> = (0..nbins)
                .map(|k| QueueBin { t_end_s: ((k + 1) as f64 * b).min(d), avg_pkts: 0.0, max_pkts: 0 })
                .collect();
            for (k, avg, max) in bins {
                if let Some(x) = dense.get_mut(k as usize) {
                    x.avg_pkts = avg;
                    x.max_pkts = max;
                }
            }
            out.push(QueueSeries { link: i, bins: dense });
        }
        out
    }

    /// Summarise the run.
    pub fn summary(&self, wall_time_s: f64) -> Summary {
        let win = self.duration.since(self.warmup).as_secs_f64().max(1e-12);
        let mut flows = Vec::new();
        let mut short = Vec::new();
        let mut vsum = VerifySummary { flows_checked: 0, bytes_checked: 0, mismatched_flows: 0, incomplete_flows: 0 };
        for (i, f) in self.flows.iter().enumerate() {
            let s = self.flow_tcp_stats(f);
            let sent = s.data_bytes_sent + f.udp_sent_bytes - f.snap.sent_bytes;
            let segs = s.data_segs_sent + f.udp_sent_pkts - f.snap.data_segs;
            let retr = s.retrans_segs - f.snap.retrans;
            let tcp = !f.kind.is_udp();
            if f.kind == FlowKind::Short {
                short.extend_from_slice(&f.completions);
            }
            if self.verify && tcp {
                vsum.flows_checked += 1;
                vsum.bytes_checked += f.verify_bytes;
                if !f.verify_ok || f.verify_bytes != f.delivered {
                    vsum.mismatched_flows += 1;
                }
                if f.kind == FlowKind::Bulk && f.bytes.is_some_and(|b| f.delivered < b) {
                    vsum.incomplete_flows += 1;
                }
            }
            let ms = |ns: u64| ns as f64 * 1e-6;
            flows.push(FlowSummary {
                id: i as u32,
                name: f.name.clone(),
                kind: format!("{:?}", f.kind).to_lowercase(),
                src: self.nodes[self.hosts[f.src as usize] as usize].name.clone(),
                dst: self.nodes[self.hosts[f.dst as usize] as usize].name.clone(),
                cc: if tcp { format!("{:?}", f.cfg.cc).to_lowercase() } else { "udp".into() },
                goodput_bps: (f.delivered - f.snap.delivered) as f64 * 8.0 / win,
                throughput_bps: sent as f64 * 8.0 / win,
                bytes_delivered: f.delivered,
                data_packets_sent: segs,
                retransmitted_packets: retr,
                retransmit_ratio: if segs > 0 { retr as f64 / segs as f64 } else { 0.0 },
                timeouts: s.timeouts,
                fast_retransmits: s.fast_retransmits,
                rtt_samples: s.rtt_samples,
                rtt_mean_ms: if s.rtt_samples > 0 { ms(s.rtt_sum_ns) / s.rtt_samples as f64 } else { 0.0 },
                rtt_min_ms: ms(s.rtt_min_ns),
                rtt_max_ms: ms(s.rtt_max_ns),
                transfers_completed: f.completions.len() as u64,
            });
        }
        // TCP goodput carried by each link direction (the data path of each TCP flow).
        let mut link_goodput = vec![0.0f64; self.links.len()];
        for (f, fs) in self.flows.iter().zip(&flows) {
            if fs.cc == "udp" {
                continue;
            }
            for l in self.path_links(f.src, f.dst) {
                link_goodput[l as usize] += fs.goodput_bps;
            }
        }
        let links: Vec<LinkSummary> = self
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let (b0, q0) = self.link_snap.get(i).copied().unwrap_or((0, 0));
                LinkSummary {
                    name: l.name.clone(),
                    from: self.nodes[l.from as usize].name.clone(),
                    to: self.nodes[l.to as usize].name.clone(),
                    rate_bps: l.rate_bps,
                    tx_packets: l.c.tx_packets,
                    tx_bytes: l.c.tx_bytes,
                    drops: l.drops(),
                    lost: l.c.lost,
                    utilization: ((l.c.busy_ns - b0) as f64 * 1e-9 / win).min(1.0),
                    queue_avg_pkts: (l.c.q_integral - q0) as f64 * 1e-9 / win,
                    queue_max_pkts: l.q_max_window as u64,
                    qdisc: l.queue.asym_stats().map(|st| QdiscSummary { stats: st.clone() }),
                    qdisc_counters: l.queue.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                    aqm: l.queue.aqm_stats().map(|s| {
                        let s0 = l.aqm_window.unwrap_or_default();
                        AqmSummary {
                            sojourn_avg_ms: s.avg_since(&s0) * 1e3,
                            sojourn_max_ms: s.max_ns as f64 / 1e6,
                            packets: s.packets - s0.packets,
                            drops: s.drops - s0.drops,
                            marks: s.marks - s0.marks,
                        }
                    }),
                    tcp_goodput_bps: link_goodput[i],
                    goodput_utilization: link_goodput[i] / l.rate_bps.max(1) as f64,
                    classes: self.classes_summary(i, win),
                }
            })
            .collect();
        // Asymmetric links: a pair NAME / NAME:rev whose rates differ or that runs an
        // asymmetric-link discipline. Up = the slower direction (forward on a tie).
        let mut asym_links = Vec::new();
        for (i, f) in links.iter().enumerate() {
            let Some(r) = links.get(i + 1).filter(|r| r.name == format!("{}:rev", f.name)) else { continue };
            if f.rate_bps == r.rate_bps && f.classes.is_none() && r.classes.is_none() {
                continue;
            }
            let (up, down) = if r.rate_bps < f.rate_bps { (r, f) } else { (f, r) };
            asym_links.push(AsymLinkSummary::new(&f.name, up, down));
        }
        let g: Vec<f64> = flows.iter().map(|f| f.goodput_bps).collect();
        let aggregate = Aggregate {
            flows: flows.len() as u32,
            goodput_bps: g.iter().sum(),
            throughput_bps: flows.iter().map(|f| f.throughput_bps).sum(),
            jain: jain(&g),
            cov: cov(&g),
        };
        let short_transfers = if self.flows.iter().any(|f| f.kind == FlowKind::Short) {
            let n = short.len();
            Some(ShortSummary {
                count: n as u64,
                mean_s: if n > 0 { short.iter().sum::<f64>() / n as f64 } else { 0.0 },
                cov: cov(&short),
            })
        } else {
            None
        };
        Summary {
            ackshape: crate::provenance::Provenance::this(),
            scenario: ScenarioInfo {
                name: self.name.clone(),
                file: self.file.clone(),
                duration_s: self.duration.as_secs_f64(),
                measure_from_s: self.warmup.as_secs_f64(),
                set: self.set.clone(),
            },
            seed: self.seed,
            sim: SimInfo {
                events: self.q.processed(),
                wall_time_s,
                link_packets: self.links.iter().map(|l| l.c.tx_packets).sum(),
            },
            flows,
            links,
            aggregate,
            short_transfers,
            verify: if self.verify { Some(vsum) } else { None },
            middleboxes: self.middlebox_stats(),
            groups: self.group_stats(),
            asym_links,
        }
    }

    /// Flush and close every capture.
    pub fn finish_captures(&mut self) -> std::io::Result<()> {
        for l in &mut self.links {
            if let Some(c) = l.capture.as_mut() {
                c.finish()?;
            }
        }
        Ok(())
    }

    /// The TCP counters of flow `i`'s sending half over the whole run (not the measurement
    /// window); None for a UDP flow or no such flow.
    pub fn flow_sender_stats(&self, i: usize) -> Option<TcpStats> {
        let f = self.flows.get(i)?;
        if f.kind.is_udp() {
            return None;
        }
        Some(self.flow_tcp_stats(f))
    }

    /// The data's sender and receiver address of every flow (the order of `summary.flows`), and
    /// the port the opening side connects to (the other side's is ephemeral, from 32769 up).
    pub fn flow_endpoints(&self) -> Vec<(IpAddr, IpAddr, u16)> {
        self.flows.iter().map(|f| (host_addr(f.src), host_addr(f.dst), LISTEN_PORT)).collect()
    }

    /// Counters of a link direction by name.
    pub fn link_counters(&self, name: &str) -> Option<&crate::link::LinkCounters> {
        self.links.iter().find(|l| l.name == name).map(|l| &l.c)
    }
}

fn add_stats(a: &mut TcpStats, b: &TcpStats) {
    a.segs_sent += b.segs_sent;
    a.data_segs_sent += b.data_segs_sent;
    a.data_bytes_sent += b.data_bytes_sent;
    a.retrans_segs += b.retrans_segs;
    a.retrans_bytes += b.retrans_bytes;
    a.timeouts += b.timeouts;
    a.fast_retransmits += b.fast_retransmits;
    a.dupacks_rcvd += b.dupacks_rcvd;
    a.acks_sent += b.acks_sent;
    a.bytes_delivered += b.bytes_delivered;
    a.bytes_acked += b.bytes_acked;
    if b.rtt_samples > 0 {
        a.rtt_min_ns = if a.rtt_samples == 0 { b.rtt_min_ns } else { a.rtt_min_ns.min(b.rtt_min_ns) };
        a.rtt_max_ns = a.rtt_max_ns.max(b.rtt_max_ns);
    }
    a.rtt_samples += b.rtt_samples;
    a.rtt_sum_ns += b.rtt_sum_ns;
    a.ce_rcvd += b.ce_rcvd;
    a.ece_rcvd += b.ece_rcvd;
    a.persist_probes += b.persist_probes;
    a.zero_windows += b.zero_windows;
    a.zero_window_ns += b.zero_window_ns;
}

/// Hand a transfer to its sending connection: `bytes` then FIN, or endless data.
fn write_transfer(conn: &mut Connection, bytes: Option<u64>) {
    match bytes {
        Some(b) => {
            conn.write(b);
            conn.close();
        }
        None => conn.write(u64::MAX / 4),
    }
}
