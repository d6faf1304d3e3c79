//! Network-namespace testbed: sender — gateway — wanem — receiver, wired with veth pairs.
//!
//! ```text
//!  ns PREFIX-snd        ns PREFIX-gw              ns PREFIX-wan             ns PREFIX-rcv
//!  PREFIX-s0 ───────── PREFIX-g0 | PREFIX-g1 ───── PREFIX-w0 | PREFIX-w1 ───── PREFIX-r0
//!  10.77.0.1/24         (gateway: lan | wan)       (wanem: a | b)             10.77.0.2/24
//! ```
//!
//! Sender and receiver share one subnet (the boxes in the middle are bridges, not routers);
//! their neighbour entries are static so no ARP round trip lands in a measurement. Every veth
//! has MTU 1500 and offloads off (`tx tso gso gro`, plus `rx-gro-list` in the middle), IPv6 is
//! disabled in the middle namespaces so they stay quiet. All names start with the prefix, which
//! must start with `acks-`; [`down`] removes everything with the prefix, also after a crash.

use std::io;
use std::net::Ipv4Addr;
use std::process::Command;
use std::thread::JoinHandle;

/// What sits between sender and receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Middle {
    /// A gateway namespace with two bare ports for an AF_PACKET gateway (default).
    #[default]
    Gateway,
    /// A gateway namespace whose ports are joined by a kernel bridge (the benchmark reference).
    Bridge,
}

/// The topology to build.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopologySpec {
    /// Name prefix, `acks-…`, at most 11 characters (interface names are prefix + 3).
    pub prefix: String,
    pub middle: Middle,
    /// Insert a wanem namespace between gateway and receiver.
    pub wanem: bool,
    pub sender_addr: Ipv4Addr,
    pub receiver_addr: Ipv4Addr,
    pub prefix_len: u8,
    pub mtu: u32,
}

impl Default for TopologySpec {
    fn default() -> Self {
        TopologySpec {
            prefix: "acks-tb".into(),
            middle: Middle::Gateway,
            wanem: true,
            sender_addr: Ipv4Addr::new(10, 77, 0, 1),
            receiver_addr: Ipv4Addr::new(10, 77, 0, 2),
            prefix_len: 24,
            mtu: 1500,
        }
    }
}

impl TopologySpec {
    pub fn new(prefix: &str) -> TopologySpec {
        TopologySpec { prefix: prefix.into(), ..Default::default() }
    }

    /// What [`up`] would refuse, checked without building anything: the prefix, and two distinct
    /// host addresses in one subnet of `prefix_len` bits. The error names the key (`prefix`,
    /// `receiver_addr`, `prefix_len`) and says what was expected.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        check_prefix(&self.prefix).map_err(|e| ("prefix", e.to_string()))?;
        if !(8..=30).contains(&self.prefix_len) {
            return Err(("prefix_len", format!("expected a subnet prefix length of 8 to 30, got {}", self.prefix_len)));
        }
        let mask = u32::MAX << (32 - self.prefix_len);
        let (s, r) = (u32::from(self.sender_addr), u32::from(self.receiver_addr));
        if s == r {
            return Err(("receiver_addr", format!("expected an address other than the sender's {}", self.sender_addr)));
        }
        if s & mask != r & mask {
            return Err((
                "receiver_addr",
                format!(
                    "expected an address in the sender's subnet {}/{} (the testbed is one subnet), got {}",
                    Ipv4Addr::from(s & mask),
                    self.prefix_len,
                    self.receiver_addr
                ),
            ));
        }
        for (key, a) in [("sender_addr", s), ("receiver_addr", r)] {
            let host = a & !mask;
            if host == 0 || host == !mask {
                return Err((
                    key,
                    format!(
                        "expected a host address, got {} (the subnet's network or broadcast address)",
                        Ipv4Addr::from(a)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Names of what [`up`] built.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Testbed {
    pub prefix: String,
    pub ns_sender: String,
    pub ns_gateway: String,
    pub ns_wanem: Option<String>,
    pub ns_receiver: String,
    /// Sender's interface (in ns_sender).
    pub if_sender: String,
    /// Gateway LAN port (in ns_gateway).
    pub if_gw_lan: String,
    /// Gateway WAN port (in ns_gateway).
    pub if_gw_wan: String,
    /// wanem A port (toward the gateway) and B port (toward the receiver), in ns_wanem.
    pub if_wan_a: Option<String>,
    pub if_wan_b: Option<String>,
    /// Receiver's interface (in ns_receiver).
    pub if_receiver: String,
    pub sender_addr: Ipv4Addr,
    pub receiver_addr: Ipv4Addr,
}

/// A testbed operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    #[error("testbed prefix {0:?} must start with \"acks-\" and be at most 11 characters of [a-z0-9-]")]
    BadPrefix(String),
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    #[error("running `{cmd}`: {source}")]
    Spawn { cmd: String, source: io::Error },
    #[error("testbed key `{key}`: {msg}")]
    Spec { key: &'static str, msg: String },
    #[error("testbed {0} already exists (run `down` first)")]
    Exists(String),
}

fn check_prefix(p: &str) -> Result<(), TestbedError> {
    let ok = p.starts_with("acks-")
        && p.len() <= 11
        && p.len() > 5
        && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(TestbedError::BadPrefix(p.into()))
    }
}

/// Run a command, returning stdout; an error carries the command line and its stderr.
pub fn sh(prog: &str, args: &[&str]) -> Result<String, TestbedError> {
    let cmd = format!("{prog} {}", args.join(" "));
    let out =
        Command::new(prog).args(args).output().map_err(|source| TestbedError::Spawn { cmd: cmd.clone(), source })?;
    if !out.status.success() {
        return Err(TestbedError::Command { cmd, stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ip(args: &[&str]) -> Result<String, TestbedError> {
    sh("ip", args)
}

fn in_ns(ns: &str, prog: &str, args: &[&str]) -> Result<String, TestbedError> {
    let mut a = vec!["netns", "exec", ns, prog];
    a.extend_from_slice(args);
    sh("ip", &a)
}

/// A live test that cannot run here: prints `SKIPPED: <test>: <reason>` straight to stderr (libtest
/// captures the output of passing tests; a skip must be seen). With `ACKSHAPE_LIVE=require` in the
/// environment (CI sets it) a skip is a failure instead: it panics with the same text, so a suite
/// cannot go green by not running its live tests.
pub fn skip(test: &str, reason: &str) {
    if std::env::var("ACKSHAPE_LIVE").is_ok_and(|v| v == "require") {
        panic!("{test} cannot run here and ACKSHAPE_LIVE=require: {reason}");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {test}: {reason}");
}

/// [`preflight`] for a live test: true (after [`skip`]) when it cannot run here.
pub fn skip_unless_live(test: &str) -> bool {
    match preflight() {
        Some(reason) => {
            skip(test, &reason);
            true
        }
        None => false,
    }
}

/// Why live tests or the testbed cannot run here (None: they can).
pub fn preflight() -> Option<String> {
    if crate::sys::euid() != 0 {
        return Some("not root (namespaces and AF_PACKET need CAP_SYS_ADMIN/CAP_NET_ADMIN/CAP_NET_RAW)".into());
    }
    for (prog, arg) in [("ip", "-V"), ("ethtool", "--version")] {
        match Command::new(prog).arg(arg).output() {
            Ok(o) if o.status.success() => {}
            _ => return Some(format!("`{prog}` is missing (apt-get install iproute2 ethtool)")),
        }
    }
    None
}

/// Names of the network namespaces with this prefix.
pub fn namespaces(prefix: &str) -> Vec<String> {
    let out = ip(&["netns", "list"]).unwrap_or_default();
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{prefix}-")) || *n == prefix)
        .map(String::from)
        .collect()
}

/// Names of links in the calling thread's namespace with this prefix.
pub fn host_links(prefix: &str) -> Vec<String> {
    let out = ip(&["-o", "link", "show"]).unwrap_or_default();
    out.lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or("").to_string())
        .filter(|n| n.starts_with(&format!("{prefix}-")))
        .collect()
}

/// Everything with this prefix that still exists (namespaces and host-side links).
pub fn leftovers(prefix: &str) -> Vec<String> {
    let mut v = namespaces(prefix);
    v.extend(host_links(prefix));
    v
}

/// The processes whose network namespace is one of the prefix's (`ip netns pids`), other than
/// this one: pid and command name.
pub fn processes(prefix: &str) -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    let mut v = Vec::new();
    for ns in namespaces(prefix) {
        let Ok(out) = ip(&["netns", "pids", &ns]) else { continue };
        for pid in out.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            if pid != me && !v.iter().any(|(p, _)| *p == pid) {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                v.push((pid, comm.trim().to_string()));
            }
        }
    }
    v
}

/// Stop the processes running in the prefix's namespaces: SIGTERM, then SIGKILL to those still
/// there after 3 s. Returns the processes signalled.
pub fn stop_processes(prefix: &str) -> Vec<(i32, String)> {
    let procs = processes(prefix);
    let alive = |pid: i32| crate::sys::signal(pid, 0);
    for (pid, _) in &procs {
        crate::sys::signal(*pid, libc::SIGTERM);
    }
    let t0 = std::time::Instant::now();
    while procs.iter().any(|(p, _)| alive(*p)) && t0.elapsed() < std::time::Duration::from_secs(3) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for (pid, _) in &procs {
        if alive(*pid) {
            crate::sys::signal(*pid, libc::SIGKILL);
        }
    }
    procs
}

/// Remove every namespace and host link whose name starts with `prefix-` (veths inside a
/// namespace go with it), after stopping the processes running in those namespaces
/// ([`stop_processes`]). Idempotent; works after a crash. Returns what was removed, the processes
/// first (`pid 123 (iperf3)`).
pub fn down(prefix: &str) -> Result<Vec<String>, TestbedError> {
    if !prefix.starts_with("acks-") {
        return Err(TestbedError::BadPrefix(prefix.into()));
    }
    // Processes started in the namespaces (a gateway or iperf3 run by hand) keep a deleted
    // namespace, its veths and their work alive: stop them first.
    let mut removed: Vec<String> =
        stop_processes(prefix).into_iter().map(|(pid, comm)| format!("pid {pid} ({comm})")).collect();
    let mut first_err = None;
    for ns in namespaces(prefix) {
        match ip(&["netns", "del", &ns]) {
            Ok(_) => removed.push(ns),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    for l in host_links(prefix) {
        match ip(&["link", "del", &l]) {
            Ok(_) => removed.push(l),
            Err(e) => {
                // Deleting one end of a veth removes its peer: not an error.
                if !leftovers(prefix).contains(&l) {
                    continue;
                }
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) if !leftovers(prefix).is_empty() => Err(e),
        _ => Ok(removed),
    }
}

fn mac(prefix: &str, host: u8) -> String {
    // Locally administered, derived from the prefix so parallel testbeds differ.
    let h = prefix.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
    format!("02:{:02x}:{:02x}:{:02x}:00:{:02x}", (h >> 16) as u8, (h >> 8) as u8, h as u8, host)
}

/// Build the topology. On failure everything built so far is removed.
pub fn up(spec: &TopologySpec) -> Result<Testbed, TestbedError> {
    check_prefix(&spec.prefix)?;
    if let Err((key, msg)) = spec.check() {
        return Err(TestbedError::Spec { key, msg });
    }
    if !leftovers(&spec.prefix).is_empty() {
        return Err(TestbedError::Exists(spec.prefix.clone()));
    }
    match build(spec) {
        Ok(t) => Ok(t),
        Err(e) => {
            let _ = down(&spec.prefix);
            Err(e)
        }
    }
}

fn build(spec: &TopologySpec) -> Result<Testbed, TestbedError> {
    let p = &spec.prefix;
    let n = |s: &str| format!("{p}-{s}");
    let tb = Testbed {
        prefix: p.clone(),
        ns_sender: n("snd"),
        ns_gateway: n("gw"),
        ns_wanem: spec.wanem.then(|| n("wan")),
        ns_receiver: n("rcv"),
        if_sender: n("s0"),
        if_gw_lan: n("g0"),
        if_gw_wan: n("g1"),
        if_wan_a: spec.wanem.then(|| n("w0")),
        if_wan_b: spec.wanem.then(|| n("w1")),
        if_receiver: n("r0"),
        sender_addr: spec.sender_addr,
        receiver_addr: spec.receiver_addr,
    };
    let mut all_ns = vec![tb.ns_sender.clone(), tb.ns_gateway.clone(), tb.ns_receiver.clone()];
    if let Some(w) = &tb.ns_wanem {
        all_ns.push(w.clone());
    }
    for ns in &all_ns {
        ip(&["netns", "add", ns])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
    }
    let smac = mac(p, 1);
    let rmac = mac(p, 2);
    let veth = |a: &str, ans: &str, amac: Option<&str>, b: &str, bns: &str, bmac: Option<&str>| {
        let mut args = vec!["link", "add", a];
        if let Some(m) = amac {
            args.extend(["address", m]);
        }
        args.extend(["netns", ans, "type", "veth", "peer", "name", b]);
        if let Some(m) = bmac {
            args.extend(["address", m]);
        }
        args.extend(["netns", bns]);
        ip(&args)
    };
    veth(&tb.if_sender, &tb.ns_sender, Some(&smac), &tb.if_gw_lan, &tb.ns_gateway, None)?;
    match (&tb.ns_wanem, &tb.if_wan_a, &tb.if_wan_b) {
        (Some(wns), Some(wa), Some(wb)) => {
            veth(&tb.if_gw_wan, &tb.ns_gateway, None, wa, wns, None)?;
            veth(wb, wns, None, &tb.if_receiver, &tb.ns_receiver, Some(&rmac))?;
        }
        _ => {
            veth(&tb.if_gw_wan, &tb.ns_gateway, None, &tb.if_receiver, &tb.ns_receiver, Some(&rmac))?;
        }
    }
    let mtu = spec.mtu.to_string();
    let mut ends: Vec<(&str, &str, bool)> = vec![
        (&tb.ns_sender, &tb.if_sender, false),
        (&tb.ns_gateway, &tb.if_gw_lan, true),
        (&tb.ns_gateway, &tb.if_gw_wan, true),
        (&tb.ns_receiver, &tb.if_receiver, false),
    ];
    if let (Some(wns), Some(wa), Some(wb)) = (&tb.ns_wanem, &tb.if_wan_a, &tb.if_wan_b) {
        ends.push((wns, wa, true));
        ends.push((wns, wb, true));
    }
    for ns in [&tb.ns_gateway].into_iter().chain(tb.ns_wanem.as_ref()) {
        // Keep the middle boxes quiet (no IPv6 link-local traffic of their own). Best effort.
        disable_ipv6(ns);
    }
    for (ns, ifname, middle) in &ends {
        ip(&["-n", ns, "link", "set", ifname, "mtu", &mtu])?;
        let mut k = vec!["-K", ifname, "tx", "off", "tso", "off", "gso", "off", "gro", "off"];
        if *middle {
            k.extend(["rx-gro-list", "off"]);
        }
        in_ns(ns, "ethtool", &k)?;
        if *middle {
            ip(&["-n", ns, "link", "set", ifname, "promisc", "on"])?;
        }
        ip(&["-n", ns, "link", "set", ifname, "up"])?;
    }
    if spec.middle == Middle::Bridge {
        let br = format!("{p}-br");
        ip(&["-n", &tb.ns_gateway, "link", "add", &br, "type", "bridge"])?;
        for port in [&tb.if_gw_lan, &tb.if_gw_wan] {
            ip(&["-n", &tb.ns_gateway, "link", "set", port, "master", &br])?;
        }
        ip(&["-n", &tb.ns_gateway, "link", "set", &br, "up"])?;
    }
    let plen = spec.prefix_len;
    ip(&["-n", &tb.ns_sender, "addr", "add", &format!("{}/{plen}", spec.sender_addr), "dev", &tb.if_sender])?;
    ip(&["-n", &tb.ns_receiver, "addr", "add", &format!("{}/{plen}", spec.receiver_addr), "dev", &tb.if_receiver])?;
    ip(&[
        "-n",
        &tb.ns_sender,
        "neigh",
        "replace",
        &spec.receiver_addr.to_string(),
        "lladdr",
        &rmac,
        "dev",
        &tb.if_sender,
        "nud",
        "permanent",
    ])?;
    ip(&[
        "-n",
        &tb.ns_receiver,
        "neigh",
        "replace",
        &spec.sender_addr.to_string(),
        "lladdr",
        &smac,
        "dev",
        &tb.if_receiver,
        "nud",
        "permanent",
    ])?;
    Ok(tb)
}

/// Write `net.ipv6.conf.{all,default}.disable_ipv6 = 1` inside `ns` (from a thread in that
/// namespace, so no `sysctl` binary is needed). Errors are ignored.
fn disable_ipv6(ns: &str) {
    if let Ok(h) = spawn_in_netns(ns, "acks-sysctl", || {
        for k in ["all", "default"] {
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{k}/disable_ipv6"), "1");
        }
    }) {
        let _ = h.join();
    }
}

/// What of a scenario's `[tcp]` the live endpoints take, as Linux's knobs: on the routes between
/// the two hosts and in the two namespaces' sysctls (each namespace has its own; the host's are
/// untouched). `None`/`false`: Linux's default stays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointTcp {
    /// An ACK for every segment: `quickack 1` on the receiver's route to the sender.
    pub quickack: bool,
    /// The receiver's `tcp_rmem` default and maximum, in bytes.
    pub rmem_bytes: Option<u64>,
    /// The sender's initial congestion window in segments: `initcwnd` on its route to the receiver.
    pub initcwnd: Option<u32>,
    /// The sender's minimum retransmission timeout in ms: `rto_min` on its route to the receiver.
    pub rto_min_ms: Option<u64>,
    /// The MSS both hosts advertise (`advmss` on their routes to each other): the TCP payload per
    /// segment plus 12 bytes when timestamps are on (Linux counts the options in it).
    pub advmss: Option<u32>,
    /// `net.ipv4.tcp_sack`, `tcp_timestamps` and `tcp_ecn` (1: request and accept) in both hosts.
    pub sack: Option<bool>,
    pub timestamps: Option<bool>,
    pub ecn: Option<bool>,
    /// The sender's duplicate-ACK threshold: `net.ipv4.tcp_reordering`, the reordering degree a
    /// connection starts with (it still raises it when it sees reordering; with RACK, the default,
    /// a loss is marked at once when that many segments are SACKed above it).
    pub reordering: Option<u32>,
}

/// `f` on `/proc/sys/net/ipv4/KEY` from a thread inside namespace `ns` (each namespace has its own
/// sysctls); an error names the key, what was being done (`doing`) and the namespace.
fn sysctl<T: Send + 'static>(
    ns: &str,
    key: &str,
    doing: &str,
    f: impl FnOnce(&str) -> io::Result<T> + Send + 'static,
) -> Result<T, String> {
    let path = format!("/proc/sys/net/ipv4/{key}");
    let h = spawn_in_netns(ns, "acks-sysctl", move || f(&path)).map_err(|e| format!("{key}: {e}"))?;
    h.join()
        .map_err(|_| format!("{key}: the thread {doing} it panicked"))?
        .and_then(|r| r)
        .map_err(|e| format!("{key}: {doing} it in namespace {ns}: {e}"))
}

impl Testbed {
    /// Apply `t` to the two hosts. An error names the knob (`initcwnd`, `tcp_sack`, …) and why.
    pub fn apply_tcp(&self, t: &EndpointTcp) -> Result<(), String> {
        // Each host's route to the other carries its attributes in one `route replace` (a second
        // one would drop the first's): the receiver's `quickack` and `advmss` (what it advertises
        // bounds the sender's segments), the sender's `initcwnd`, `rto_min` and `advmss`.
        let advmss = t.advmss.map(|m| ["advmss".to_string(), m.to_string()]);
        let mut rcv: Vec<String> = Vec::new();
        if t.quickack {
            rcv.extend(["quickack".into(), "1".into()]);
        }
        let mut snd: Vec<String> = Vec::new();
        if let Some(n) = t.initcwnd {
            snd.extend(["initcwnd".into(), n.to_string()]);
        }
        if let Some(ms) = t.rto_min_ms {
            snd.extend(["rto_min".into(), format!("{ms}ms")]);
        }
        if let Some(a) = &advmss {
            rcv.extend(a.iter().cloned());
            snd.extend(a.iter().cloned());
        }
        for (attrs, ns, dev, to, whose) in [
            (&rcv, &self.ns_receiver, &self.if_receiver, self.sender_addr, "receiver"),
            (&snd, &self.ns_sender, &self.if_sender, self.receiver_addr, "sender"),
        ] {
            if attrs.is_empty() {
                continue;
            }
            let route = format!("{to}/32");
            let mut args: Vec<&str> = vec!["-n", ns, "route", "replace", &route, "dev", dev];
            args.extend(attrs.iter().map(String::as_str));
            let names: Vec<&str> = attrs.iter().step_by(2).map(String::as_str).collect();
            sh("ip", &args).map_err(|e| format!("{} on the {whose}'s route: {e}", names.join(", ")))?;
        }
        let write = |ns: &str, key: &str, v: String| sysctl(ns, key, "writing", move |p| std::fs::write(p, v));
        if let Some(b) = t.rmem_bytes {
            write(&self.ns_receiver, "tcp_rmem", format!("4096 {b} {b}"))?;
        }
        if let Some(n) = t.reordering {
            write(&self.ns_sender, "tcp_reordering", n.to_string())?;
        }
        for (key, v) in [("tcp_sack", t.sack), ("tcp_timestamps", t.timestamps), ("tcp_ecn", t.ecn)] {
            if let Some(on) = v {
                for ns in [&self.ns_sender, &self.ns_receiver] {
                    write(ns, key, u8::from(on).to_string())?;
                }
            }
        }
        Ok(())
    }

    /// A sysctl under `net.ipv4` as one of the hosts sees it (`tcp_sack`, …), trimmed.
    pub fn read_sysctl(ns: &str, key: &str) -> Result<String, String> {
        sysctl(ns, key, "reading", |p| std::fs::read_to_string(p)).map(|s| s.trim().to_string())
    }
}

/// Removes the testbed on drop (also when a test panics).
pub struct TestbedGuard {
    pub tb: Testbed,
}

impl TestbedGuard {
    pub fn up(spec: &TopologySpec) -> Result<TestbedGuard, TestbedError> {
        // A previous crashed run may have left the same prefix behind.
        let _ = down(&spec.prefix);
        Ok(TestbedGuard { tb: up(spec)? })
    }
}

impl std::ops::Deref for TestbedGuard {
    type Target = Testbed;
    fn deref(&self) -> &Testbed {
        &self.tb
    }
}

impl Drop for TestbedGuard {
    fn drop(&mut self) {
        if let Err(e) = down(&self.tb.prefix) {
            eprintln!("testbed cleanup of {} failed: {e}", self.tb.prefix);
        }
    }
}

/// Enter network namespace `ns` (by name, `/run/netns/NAME`) in the calling thread.
pub fn enter_netns(ns: &str) -> io::Result<()> {
    let f = std::fs::File::open(format!("/run/netns/{ns}"))
        .map_err(|e| io::Error::new(e.kind(), format!("opening netns {ns}: {e}")))?;
    nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| io::Error::other(format!("setns into {ns}: {e}")))
}

/// Spawn a thread that runs `f` inside network namespace `ns`.
pub fn spawn_in_netns<T, F>(ns: &str, name: &str, f: F) -> io::Result<JoinHandle<io::Result<T>>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let ns = ns.to_string();
    std::thread::Builder::new().name(name.into()).spawn(move || {
        enter_netns(&ns)?;
        Ok(f())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert!(check_prefix("acks-t1").is_ok());
        assert!(check_prefix("acks-").is_err());
        assert!(check_prefix("foo-t1").is_err());
        assert!(check_prefix("acks-toolongname").is_err());
        assert!(down("eth").is_err());
    }
}
