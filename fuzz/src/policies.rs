//! The policies the frame targets run (`fuzz/seed.sh` also seeds `policy_text` with them).

/// Gateway policies covering every mechanism and leaf discipline, with small flow tables and
/// short idle timeouts so that the bounds and evictions are reached. Each parses as a live
/// policy (`ackshape_live::policy::Policy::from_toml`); `gateway_frames` picks one per input.
pub const GATEWAY_POLICIES: &[&str] = &[
    // 0: TCR max-min, per-flow pacing, outbound; TCR equal shares with class-tick pacing, inbound.
    r#"
default_class = "up"
[flows]
max_flows = 6
idle_timeout_s = 5
embryonic_timeout_s = 1
[link]
outbound = "10Mbit/s"
inbound = "20Mbit/s"
[[class]]
name = "up"
rate = "5Mbit/s"
queue = "20pkt"
mechanism = { kind = "tcr", target_utilization = 0.99 }
[[class]]
name = "down"
rate = "8Mbit/s"
mechanism = { kind = "tcr", allocation = "equal", pacing = "class-tick", idle_timeout_ms = 200 }
[[rule]]
class = "down"
direction = "inbound"
"#,
    // 1: TCR variants: receiver-ack release, window steps, min RTT, residual increment, leave.
    r#"
[flows]
max_flows = 5
idle_timeout_s = 3
embryonic_timeout_s = 1
[link]
inbound = "8Mbit/s"
[[class]]
name = "lab"
rate = "500KB/s"
mechanism = { kind = "tcr", release = "receiver-ack", window_step_segments = 2, window_rtt = "min", residual = "increment", all_bottlenecked = "leave", rtt_from = "enqueue", window_rounding = "down", min_window_segments = 2, sample_interval_ms = 5 }
[[class]]
name = "rest"
rate = "1Mbit/s"
mechanism = { kind = "tcr", residual = "unused", pacing = "none", window_rounding = "bytes", satisfaction = 0.5, default_mss = 536 }
[[rule]]
class = "lab"
direction = "inbound"
dst = "192.168.10.0/24"
[[rule]]
class = "rest"
direction = "both"
"#,
    // 2: PostACK basic and on-off (spread slots), FIFO.
    r#"
[flows]
max_flows = 6
idle_timeout_s = 4
embryonic_timeout_s = 1
[link]
outbound = "5Mbit/s"
[[class]]
name = "basic"
rate = "2Mbit/s"
queue = "30pkt"
mechanism = { kind = "postack", variant = "basic", packet_bytes = 1514, max_held_per_flow = 8 }
[[class]]
name = "onoff"
rate = "2Mbit/s"
mechanism = { kind = "postack", variant = "on-off", spread_slots = true, idle_timeout_ms = 100 }
[[rule]]
class = "basic"
dport = [80, 5060]
direction = "both"
[[rule]]
class = "onoff"
direction = "both"
"#,
    // 3: zero-timer PostACK over pfq-drr in the docs' office tree (borrowing, priorities).
    r#"
default_class = "bulk"
[flows]
max_flows = 4
idle_timeout_s = 2
embryonic_timeout_s = 1
[link]
outbound = "10Mbit/s"
[[class]]
name = "voice"
rate = "1Mbit/s"
[[class]]
name = "data"
rate = "9Mbit/s"
[[class]]
name = "web"
parent = "data"
rate = "6Mbit/s"
ceil = "9Mbit/s"
priority = 1
mechanism = { kind = "postack", variant = "zero-timer", keep_in_pfq = 1 }
qdisc = { kind = "pfq-drr", limit_pkts = 30, flow_limit_pkts = 8 }
[[class]]
name = "bulk"
parent = "data"
rate = "3Mbit/s"
ceil = "9Mbit/s"
priority = 2
qdisc = { kind = "pfq-drr" }
mechanism = { kind = "postack", variant = "zero-timer" }
[[rule]]
class = "voice"
proto = "udp"
dport = "5060-5090"
[[rule]]
class = "web"
proto = "tcp"
dport = [80, 443]
"#,
    // 4: PFQ token buckets and DRR, with mechanisms; zero-timer over a FIFO.
    r#"
[flows]
max_flows = 6
idle_timeout_s = 3
embryonic_timeout_s = 1
[[class]]
name = "pfq"
rate = "2Mbit/s"
qdisc = { kind = "pfq", rate = "1Mbit/s", burst = "3000B", flow_limit_pkts = 5, idle_timeout = "200ms" }
mechanism = { kind = "postack", variant = "on-off" }
[[class]]
name = "drr"
rate = "2Mbit/s"
qdisc = { kind = "drr", quantum_bytes = 300, limit_pkts = 20, flow_limit_pkts = 4 }
mechanism = { kind = "tcr" }
[[class]]
name = "zt"
rate = "1Mbit/s"
queue = "10pkt"
mechanism = { kind = "postack", variant = "zero-timer" }
[[rule]]
class = "pfq"
dport = 80
direction = "both"
[[rule]]
class = "drr"
dport = 443
direction = "both"
[[rule]]
class = "zt"
direction = "both"
"#,
    // 5: RED and RED+ECN (gentle), a bytes-limited FIFO.
    r#"
[flows]
max_flows = 6
idle_timeout_s = 3
embryonic_timeout_s = 1
[link]
outbound = "3Mbit/s"
inbound = "3Mbit/s"
[[class]]
name = "red"
rate = "1Mbit/s"
qdisc = { kind = "red", min_th = 2, max_th = 6, w_q = 0.2, max_p = 0.5, limit_pkts = 12 }
[[class]]
name = "ecn"
rate = "1Mbit/s"
qdisc = { kind = "red", min_th = 1, max_th = 4, w_q = 0.5, max_p = 0.9, limit_pkts = 10, ecn = true, gentle = true }
mechanism = { kind = "postack", variant = "basic" }
[[class]]
name = "bytes"
rate = "1Mbit/s"
queue = "4000B"
[[rule]]
class = "red"
dport = 80
direction = "both"
[[rule]]
class = "ecn"
dport = 443
direction = "both"
[[rule]]
class = "bytes"
direction = "both"
"#,
    // 6: AFVQ uplink, acks-first downlink (the ADSL example).
    r#"
[flows]
max_flows = 6
idle_timeout_s = 3
embryonic_timeout_s = 1
[link]
outbound = "800kbit/s"
inbound = "2Mbit/s"
[[class]]
name = "up"
rate = "800kbit/s"
qdisc = { kind = "afvq", s_max = 2, n_thr = 3, data_limit_pkts = 8, non_tcp_limit_pkts = 4, modifier = "sampled", period_ms = 50 }
[[class]]
name = "down"
rate = "2Mbit/s"
qdisc = { kind = "acks-first", ack_limit_pkts = 5, data_limit_pkts = 10 }
[[rule]]
class = "up"
[[rule]]
class = "down"
direction = "inbound"
"#,
    // 7: ACK filters: classic (keeping position) and CAKE-safe (aggressive, conservative).
    r#"
[flows]
max_flows = 6
idle_timeout_s = 3
embryonic_timeout_s = 1
[link]
outbound = "1Mbit/s"
inbound = "1Mbit/s"
[[class]]
name = "classic"
rate = "300kbit/s"
qdisc = { kind = "ack-filter-classic", limit_pkts = 8, keep_position = true }
[[class]]
name = "cake"
rate = "300kbit/s"
qdisc = { kind = "ack-filter-cake", limit_pkts = 8, mode = "aggressive" }
[[class]]
name = "cons"
rate = "300kbit/s"
qdisc = { kind = "ack-filter-cake", limit_pkts = 6, mode = "conservative" }
[[rule]]
class = "classic"
dport = 80
direction = "both"
[[rule]]
class = "cake"
dport = 443
direction = "both"
[[rule]]
class = "cons"
direction = "both"
"#,
    // 8: ACQ outbound; a small asym FIFO with equal-share TCR inbound.
    r#"
[flows]
max_flows = 6
idle_timeout_s = 3
embryonic_timeout_s = 1
[link]
outbound = "800kbit/s"
inbound = "2100kbit/s"
[[class]]
name = "acq"
rate = "800kbit/s"
qdisc = { kind = "acq", rate_bps = 800000, reverse_rate_bps = 2100000 }
[[class]]
name = "fifo"
rate = "2Mbit/s"
qdisc = { kind = "fifo", limit_pkts = 6 }
mechanism = { kind = "tcr", allocation = "equal" }
[[rule]]
class = "acq"
[[rule]]
class = "fifo"
direction = "inbound"
"#,
    // 9: per-host classes (IPv4 and IPv6 subscribers) with TCR and PostACK, both directions.
    r#"
default_class = "other"
[flows]
max_flows = 8
idle_timeout_s = 3
embryonic_timeout_s = 1
[link]
outbound = "100Mbit/s"
inbound = "100Mbit/s"
[[class]]
name = "subs"
rate = "60Mbit/s"
priority = 1
[[class]]
name = "home"
parent = "subs"
per_host = "10.1.0.0/30"
rate = "1Mbit/s"
ceil = "5Mbit/s"
queue = "16pkt"
mechanism = { kind = "tcr" }
[[class]]
name = "v6"
parent = "subs"
per_host = "2001:db8:1::/125"
host_prefix = 126
rate = "1Mbit/s"
ceil = "4Mbit/s"
mechanism = { kind = "postack", variant = "on-off" }
[[class]]
name = "other"
rate = "10Mbit/s"
priority = 2
[[rule]]
class = "home"
direction = "both"
[[rule]]
class = "v6"
direction = "both"
"#,
    // 10: borrowing: a tree with ceilings above rates, priorities, a short borrow interval.
    r#"
default_class = "b"
borrow_interval = "10ms"
[flows]
max_flows = 6
idle_timeout_s = 3
embryonic_timeout_s = 1
[link]
outbound = "4Mbit/s"
inbound = "8Mbit/s"
[[class]]
name = "root"
rate = "4Mbit/s"
[[class]]
name = "a"
parent = "root"
rate = "1Mbit/s"
ceil = "4Mbit/s"
priority = 0
burst = "1500B"
cburst = "3000B"
quantum = "1514B"
mechanism = { kind = "postack", variant = "on-off" }
[[class]]
name = "b"
parent = "root"
rate = "1Mbit/s"
ceil = "4Mbit/s"
priority = 1
mechanism = { kind = "tcr", all_bottlenecked = "leave" }
[[class]]
name = "c"
parent = "root"
rate = "1Mbit/s"
ceil = "3Mbit/s"
priority = 1
[[rule]]
class = "a"
dport = 80
direction = "both"
[[rule]]
class = "c"
proto = "udp"
direction = "both"
"#,
    // 11: ordered rules by subnet, port range and protocol; no link rates; an ICMP class.
    r#"
non_tcp = "forward"
default_class = "d"
[flows]
max_flows = 3
idle_timeout_s = 1
embryonic_timeout_s = 1
[[class]]
name = "icmp"
rate = "100kbit/s"
queue = "2pkt"
[[class]]
name = "lanv6"
rate = "1Mbit/s"
mechanism = { kind = "postack", variant = "basic" }
[[class]]
name = "d"
rate = "1Mbit/s"
mechanism = { kind = "tcr", pacing = "class-tick" }
[[rule]]
class = "icmp"
proto = "icmp"
order = 1
direction = "both"
[[rule]]
class = "lanv6"
src = "2001:db8:1::/48"
sport = "40000-40400"
order = 2
[[rule]]
class = "lanv6"
dst = ["2001:db8:1::/48", "10.1.0.0/16"]
direction = "inbound"
order = 3
"#,
];

/// Tap policies: triple-ACK (every f-th ACK, or counting all ACKs), zero-window, the controller
/// per flow and in aggregate, measurement only; small flow tables and short intervals.
pub const TAP_POLICIES: &[&str] = &[
    "technique = \"triple-ack\"\nevery = 2\nmax_flows = 4\nidle_timeout = \"2s\"\n",
    "technique = \"zero-window\"\nevery = 1\nmax_flows = 3\nidle_timeout = \"1s\"\n",
    r#"
interval = "100ms"
max_flows = 4
idle_timeout = "2s"
history = true
[[rule]]
name = "sub"
src = "10.1.0.0/24"
technique = "triple-ack"
target = "1Mbit/s"
scope = "aggregate"
[[rule]]
name = "p2p"
dport = 6881
technique = "zero-window"
every = 3
window = 1000
[[rule]]
name = "v6"
dst = "2001:db8::/32"
technique = "triple-ack"
target = "200kbit/s"
scope = "flow"
measure = "goodput"
min_every = 2
max_every = 50
count = "all-acks"
copies = 2
"#,
    r#"
interval = "50ms"
ewma = 0.5
gain = 2.0
max_flows = 2
idle_timeout = "500ms"
[[rule]]
technique = "triple-ack"
target = "50kbit/s"
scope = "flow"
[[rule]]
technique = "none"
"#,
];
