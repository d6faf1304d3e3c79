//! What `ackshape testbed up` prints: the namespaces of a scenario's testbed and the commands that
//! run the scenario by hand in them (the WAN emulator's flags for the bottleneck, the gateway with
//! the scenario's policy, iperf3 for the bulk flows); `run --live` does all of it itself.

use crate::plan::{flow_paths, wan_link};
use crate::run::{Failure, RunError};
use crate::testbed;
use crate::wanem::LinkSpec as WanLink;
use ackshape_core::impair::{JitterSpec, LossSpec};
use ackshape_core::shape::qdisc_spec::QdiscSpec;
use ackshape_core::tcp::CcAlgo;
use ackshape_sim::scenario::{FlowKind, FlowOpen, Scenario, TopologySpec as SimTopo};
use std::path::{Path, PathBuf};

fn bad(msg: String) -> RunError {
    RunError { kind: Failure::BadInput, msg }
}

/// What `testbed up` says about the gateway's policy: the file to pass to `ackshape gateway`, or
/// why there is none.
pub enum HandPolicy {
    /// The scenario has no box: the gateway passes frames through.
    None,
    /// A policy file (the box's `policy_file`, or the inline policy written by `--policy-out`).
    File(String),
    /// An inline policy, not written: `--policy-out` would write it.
    Inline,
    /// A box `ackshape gateway` does not run (only `run --live` does): its index and kind.
    Other(usize, String),
}

/// The scenario's gateway policy for a hand-run `ackshape gateway`; with `out`, the policy (inline
/// or from its file) is written there as a policy file, after the same checks the gateway makes.
pub fn hand_policy(sc: &Scenario, file: &str, base: Option<&Path>, out: Option<&Path>) -> Result<HandPolicy, RunError> {
    let Some((i, m)) = sc.middlebox.iter().enumerate().next() else {
        return match out {
            Some(_) => {
                Err(bad(format!("{file}: --policy-out: the scenario has no `[[middlebox]]` kind = \"gateway\"")))
            }
            None => Ok(HandPolicy::None),
        };
    };
    if m.kind != "gateway" {
        return match out {
            Some(_) => Err(bad(format!(
                "{file}: --policy-out: `middlebox[{i}]` is kind = {:?}, not a gateway with a policy",
                m.kind
            ))),
            None => Ok(HandPolicy::Other(i, m.kind.clone())),
        };
    }
    let inline = m.settings.get("policy").and_then(|v| v.as_table());
    let from_file = m.settings.get("policy_file").and_then(|v| v.as_str()).map(|f| match base {
        Some(b) if Path::new(f).is_relative() && !b.as_os_str().is_empty() => b.join(f),
        _ => PathBuf::from(f),
    });
    // The same checks as the simulator's box and the live gateway's load.
    if let Some(Err((k, msg))) = ackshape_sim::middlebox::gateway_policy(m, base) {
        return Err(bad(format!("{file}: key `middlebox[{i}].{k}`: {msg}")));
    }
    let Some(out) = out else {
        return Ok(match from_file {
            Some(p) => HandPolicy::File(p.display().to_string()),
            None => HandPolicy::Inline,
        });
    };
    let text = match (inline, &from_file) {
        (Some(t), _) => format!(
            "# The gateway policy of {file} (`middlebox[{i}].policy`), for `ackshape gateway --policy`.\n{}",
            toml::to_string(t).expect("a TOML table serialises")
        ),
        (None, Some(p)) => match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(e) => return Err(bad(format!("{}: {e}", p.display()))),
        },
        (None, None) => unreachable!("gateway_policy refused a box without a policy"),
    };
    if let Err(e) = std::fs::write(out, text) {
        return Err(RunError { kind: Failure::Runtime, msg: format!("{}: {e}", out.display()) });
    }
    Ok(HandPolicy::File(out.display().to_string()))
}

/// What a hand-run testbed (`testbed up`) does otherwise than the simulator: the links and the
/// `[tcp]` keys it does not apply, and, with a gateway box, the flows its policy would put in
/// another class on the testbed's addresses (iperf3's port 5201), as under `run --live`.
pub fn hand_warnings(sc: &Scenario, file: &str, base: Option<&Path>, spec: &testbed::TopologySpec) -> Vec<String> {
    let mut w = crate::plan::live_link_gaps(sc, file);
    w.extend(crate::plan::live_tcp_gaps(sc, file));
    if let Some(i) = sc.middlebox.iter().position(|m| m.kind == "gateway") {
        w.extend(crate::plan::class_drift(sc, file, &sc.middlebox[i], i, base, spec, &|_| 5201));
    }
    w
}

/// A rate as the CLI takes it back: `100Mbit/s`, `1.5Mbit/s`, `800kbit/s`.
fn rate_arg(bps: u64) -> String {
    if bps >= 1_000_000_000 && bps.is_multiple_of(1_000_000_000) {
        format!("{}Gbit/s", bps / 1_000_000_000)
    } else if bps >= 1_000_000 && bps.is_multiple_of(1_000) {
        // Exact: at most three decimals.
        let v = format!("{:.3}", bps as f64 / 1e6);
        format!("{}Mbit/s", v.trim_end_matches('0').trim_end_matches('.'))
    } else if bps.is_multiple_of(1_000) {
        format!("{}kbit/s", bps / 1_000)
    } else {
        format!("{bps}bit/s")
    }
}

/// A duration as the CLI takes it back: `10ms`, `0.5ms`, `250us`.
fn dur_arg(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// `ackshape wanem` arguments for the scenario's WAN (what `run --live` gives its wanem), and notes
/// on what the command line cannot say (the CLI's delay, jitter, loss and queue are the same both
/// ways; the rate can differ).
fn wanem_args(fwd: &WanLink, back: &WanLink) -> (String, Vec<String>) {
    let mut a = format!("--delay {}", dur_arg(fwd.delay_ns));
    let mut notes = Vec::new();
    if let JitterSpec::Uniform { max_ns } = fwd.jitter {
        a += &format!(" --jitter {}", dur_arg(max_ns));
    }
    match &fwd.loss {
        LossSpec::None => {}
        LossSpec::Bernoulli { p } => a += &format!(" --loss {p}"),
        LossSpec::Periodic { every, offset: 0 } => a += &format!(" --loss-every {every}"),
        LossSpec::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } if *loss_good == 0.0 && *loss_bad == 1.0 => {
            a += &format!(" --loss-ge {p_gb},{p_bg}")
        }
        other => notes.push(format!("the WAN's loss model {other:?} has no wanem flag; `run --live` applies it")),
    }
    if let Some(r) = fwd.rate_bps {
        a += &format!(" --rate {}", rate_arg(r));
    }
    if back.rate_bps != fwd.rate_bps {
        if let Some(r) = back.rate_bps {
            a += &format!(" --rate-back {}", rate_arg(r));
        }
    }
    a += &format!(" --queue {}", fwd.queue_packets);
    if back.delay_ns != fwd.delay_ns {
        notes.push(format!(
            "the reverse (B→A) delay is {} in the scenario; the wanem flags set {} both ways",
            dur_arg(back.delay_ns),
            dur_arg(fwd.delay_ns)
        ));
    }
    if back.loss != fwd.loss || back.jitter != fwd.jitter || back.queue_packets != fwd.queue_packets {
        notes.push(
            "the reverse direction's loss, jitter or queue differ in the scenario; the flags use the forward one's"
                .into(),
        );
    }
    (a, notes)
}

/// The listing `testbed up` prints: the namespaces and their ports, and the commands that run the
/// scenario by hand in them (`run --live` does all of it itself). `bin` is the path of the
/// `ackshape` binary the commands run (the running one: it need not be on PATH, nor on root's).
pub fn hand_guide(tb: &testbed::Testbed, sc: &Scenario, policy: &HandPolicy, bin: &str) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "testbed {} is up:", tb.prefix);
    let _ = writeln!(s, "  sender    netns {:<16} {} {}", tb.ns_sender, tb.if_sender, tb.sender_addr);
    let _ = writeln!(s, "  gateway   netns {:<16} lan {}, wan {}", tb.ns_gateway, tb.if_gw_lan, tb.if_gw_wan);
    if let (Some(ns), Some(a), Some(b)) = (&tb.ns_wanem, &tb.if_wan_a, &tb.if_wan_b) {
        let _ = writeln!(s, "  wanem     netns {ns:<16} a {a} (gateway side), b {b} (receiver side)");
    }
    let _ = writeln!(s, "  receiver  netns {:<16} {} {}", tb.ns_receiver, tb.if_receiver, tb.receiver_addr);
    let _ = writeln!(s);
    if let (Some(ns), Some(a), Some(b)) = (&tb.ns_wanem, &tb.if_wan_a, &tb.if_wan_b) {
        if let SimTopo::Dumbbell(d) = &sc.topology {
            let (bf, br) = d.bottleneck.directions();
            let (af, ar) = d.access.directions();
            let racc = d.receiver_access_link();
            let (rf, rr) = racc.directions();
            let (mut args, mut notes) =
                wanem_args(&wan_link(&bf, af.delay + rf.delay), &wan_link(&br, ar.delay + rr.delay));
            if flow_paths(sc, d).differ {
                notes.push(
                    "the receivers' access links shape (rate, loss, jitter or qdisc) or the flows' delays differ \
                     (RTT groups): the wanem below runs the bottleneck with the first flow's delays; `run --live` \
                     runs each flow's path behind the bottleneck"
                        .to_string(),
                );
            }
            // The disciplines as `--qdisc` tables (every key written out).
            let table = |q: &Option<QdiscSpec>, sub: &str, notes: &mut Vec<String>| match q {
                None => Some("drop-tail".to_string()),
                Some(q) => match q.to_table() {
                    Some(t) => toml::Value::try_from(ackshape_core::table::value_of(t)).ok().map(|t| format!("'{t}'")),
                    None => {
                        notes.push(format!(
                            "`topology.bottleneck{sub}.qdisc` cannot be written as a flag; `run --live` applies it"
                        ));
                        None
                    }
                },
            };
            if bf.qdisc.is_some() || br.qdisc.is_some() {
                let f = table(&bf.qdisc, "", &mut notes);
                let b = table(&br.qdisc, ".reverse", &mut notes);
                if let Some(f) = f.as_ref().filter(|f| *f != "drop-tail") {
                    args += &format!(" --qdisc {f}");
                }
                if b != f {
                    if let Some(b) = b {
                        args += &format!(" --qdisc-back {b}");
                    }
                }
            }
            let _ = writeln!(s, "start the WAN (the scenario's bottleneck; delays include the access links):");
            let _ = writeln!(s, "  ip netns exec {ns} {bin} wanem --a {a} --b {b} {args} --seed {} &", sc.seed);
            for n in notes {
                let _ = writeln!(s, "  (note: {n})");
            }
        } else {
            let _ = writeln!(s, "start the WAN:");
            let _ = writeln!(s, "  ip netns exec {ns} {bin} wanem --a {a} --b {b} --delay 10ms &");
        }
    }
    let gw = format!("ip netns exec {} {bin} gateway --lan {} --wan {}", tb.ns_gateway, tb.if_gw_lan, tb.if_gw_wan);
    let stats = "--stats-json gateway-stats.jsonl";
    match policy {
        HandPolicy::None => {
            let _ = writeln!(
                s,
                "start the gateway (the scenario has no box: a pass-through; add --policy P.toml to shape):"
            );
            let _ = writeln!(s, "  {gw} {stats} &");
        }
        HandPolicy::File(f) => {
            let _ = writeln!(s, "start the gateway with the scenario's policy (kill -HUP reloads the file):");
            let _ = writeln!(s, "  {gw} --policy {f} {stats} &");
        }
        HandPolicy::Inline => {
            let _ = writeln!(
                s,
                "start the gateway (the scenario's policy is inline: `testbed up --policy-out gw.toml` writes it as a file):"
            );
            let _ = writeln!(s, "  {gw} --policy gw.toml {stats} &");
        }
        HandPolicy::Other(i, kind) => {
            let _ = writeln!(
                s,
                "start the gateway (`middlebox[{i}]`, kind = {kind:?}, runs only under `ackshape run --live`; by hand the gateway runs a policy):"
            );
            let _ = writeln!(s, "  {gw} [--policy P.toml] {stats} &");
        }
    }
    // The scenario's bulk flows as one iperf3 run (`run --live` starts them at their own times).
    let n: u32 = sc.flows.iter().filter(|f| f.kind == FlowKind::Bulk).map(|f| f.count.unwrap_or(1)).sum();
    let cc = match sc.live.as_ref().and_then(|l| l.get("cc")).and_then(|v| v.as_str()) {
        Some(c) => c.to_string(),
        None if sc.tcp.cc == Some(CcAlgo::Cubic) => "cubic".into(),
        None if sc.tcp.cc == Some(CcAlgo::Bbr) => "bbr".into(),
        None => "reno".into(),
    };
    let secs = sc.duration.0.as_secs_f64().ceil().max(1.0) as u64;
    let bulk = || sc.flows.iter().filter(|f| f.kind == FlowKind::Bulk);
    let by_receiver = bulk().count() > 0 && bulk().all(|f| f.open == FlowOpen::Receiver);
    // With the receivers opening the connections, the iperf3 server sends (-R) from the sender side.
    let (how, server_ns, client_ns, server_addr, reverse) = if by_receiver {
        (", opened by their receivers, with iperf3 -R", &tb.ns_sender, &tb.ns_receiver, tb.sender_addr, " -R")
    } else {
        (", with iperf3", &tb.ns_receiver, &tb.ns_sender, tb.receiver_addr, "")
    };
    let _ = writeln!(s, "run traffic (the scenario's {} bulk flows at once{how}):", n.max(1));
    let _ = writeln!(s, "  ip netns exec {server_ns} iperf3 -s -D");
    let _ =
        writeln!(s, "  ip netns exec {client_ns} iperf3 -c {server_addr}{reverse} -t {secs} -P {} -C {cc}", n.max(1));
    let _ = writeln!(s, "remove it (this stops what runs in its namespaces too):");
    let _ = writeln!(s, "  {bin} testbed down --prefix {}", tb.prefix);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ackshape_core::shape::qdisc_spec::QdiscTable;

    fn testbed() -> testbed::Testbed {
        testbed::Testbed {
            prefix: "acks-t".into(),
            ns_sender: "acks-t-snd".into(),
            ns_gateway: "acks-t-gw".into(),
            ns_wanem: None,
            ns_receiver: "acks-t-rcv".into(),
            if_sender: "snd0".into(),
            if_gw_lan: "lan0".into(),
            if_gw_wan: "wan0".into(),
            if_wan_a: None,
            if_wan_b: None,
            if_receiver: "rcv0".into(),
            sender_addr: "10.77.0.1".parse().unwrap(),
            receiver_addr: "10.77.0.2".parse().unwrap(),
        }
    }

    /// The iperf3 lines of `testbed up`: the server where the data's receiver listens, or, for
    /// downloads their receivers open, in the sender namespace with the client running `-R`.
    #[test]
    fn the_hand_guide_runs_iperf3_the_way_the_flows_open() {
        let text = |open: &str| {
            let sc = Scenario::parse(
                &format!(
                    "duration = \"4s\"\n[tcp]\ncc = \"cubic\"\n[topology]\nkind = \"dumbbell\"\n\
                     bottleneck = {{ rate = \"10Mbit/s\", delay = \"5ms\" }}\n\
                     access = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n\
                     [[flows]]\nkind = \"bulk\"\ncount = 3\nopen = \"{open}\"\n"
                ),
                "t.toml",
            )
            .unwrap();
            hand_guide(&testbed(), &sc, &HandPolicy::None, "/bin/ackshape")
        };
        let by_sender = text("sender");
        // The printed commands run the binary given, by its path.
        let me = "/bin/ackshape";
        assert!(by_sender.contains(&format!("ip netns exec acks-t-gw {me} gateway --lan ")), "{by_sender}");
        assert!(by_sender.contains(&format!("{me} testbed down --prefix acks-t")), "{by_sender}");
        assert!(by_sender.contains("ip netns exec acks-t-rcv iperf3 -s -D"), "{by_sender}");
        assert!(by_sender.contains("ip netns exec acks-t-snd iperf3 -c 10.77.0.2 -t 4 -P 3 -C cubic"), "{by_sender}");
        assert!(!by_sender.contains("-R"), "{by_sender}");
        let by_receiver = text("receiver");
        assert!(by_receiver.contains("opened by their receivers"), "{by_receiver}");
        assert!(by_receiver.contains("ip netns exec acks-t-snd iperf3 -s -D"), "{by_receiver}");
        assert!(
            by_receiver.contains("ip netns exec acks-t-rcv iperf3 -c 10.77.0.1 -R -t 4 -P 3 -C cubic"),
            "{by_receiver}"
        );
    }

    /// A bottleneck `qdisc` is printed as the wanem's `--qdisc` (every key written out, so the
    /// flag reads as the same discipline), a different reverse one as `--qdisc-back`.
    #[test]
    fn the_hand_guide_gives_the_wanem_the_bottleneck_qdisc() {
        let wanem_line = |bottleneck: &str| {
            let sc = Scenario::parse(
                &format!(
                    "duration = \"4s\"\n[topology]\nkind = \"dumbbell\"\nbottleneck = {{ rate = \"10Mbit/s\", \
                     delay = \"5ms\"{bottleneck} }}\naccess = {{ rate = \"100Mbit/s\", delay = \"1ms\" }}\n\
                     [[flows]]\nkind = \"bulk\"\n"
                ),
                "t.toml",
            )
            .unwrap();
            let tb = testbed::Testbed {
                ns_wanem: Some("acks-t-wan".into()),
                if_wan_a: Some("w0".into()),
                if_wan_b: Some("w1".into()),
                ..testbed()
            };
            let g = hand_guide(&tb, &sc, &HandPolicy::None, "/bin/ackshape");
            g.lines().find(|l| l.contains(" wanem --a ")).unwrap_or_else(|| panic!("a wanem line in {g}")).to_string()
        };
        let flag = |line: &str, f: &str| -> Option<QdiscSpec> {
            let rest = line.split_once(&format!("{f} '"))?.1;
            let t: toml::Table = format!("q = {}", rest.split_once('\'')?.0).parse().unwrap();
            let q: QdiscTable = t["q"].clone().try_into().unwrap();
            Some(q.spec)
        };
        assert!(!wanem_line("").contains("--qdisc"));
        let red = ", qdisc = { kind = \"red\", ecn = true, min_th = 5, max_th = 15 }";
        let l = wanem_line(red);
        let q = flag(&l, "--qdisc").expect("--qdisc");
        assert!(matches!(&q, QdiscSpec::Red(c) if c.ecn && c.min_th == 5.0 && c.max_th == 15.0), "{l}");
        assert!(!l.contains("--qdisc-back"), "the same both ways: {l}");
        let l = wanem_line(", qdisc = { kind = \"drr\" }, reverse = { qdisc = { kind = \"afvq\" } }");
        assert!(matches!(flag(&l, "--qdisc"), Some(QdiscSpec::Drr(_))), "{l}");
        assert!(matches!(flag(&l, "--qdisc-back"), Some(QdiscSpec::Asym(_))), "{l}");
        // Only the reverse direction has one (a forward `qdisc` would be the reverse's too).
        let l = wanem_line(", reverse = { qdisc = { kind = \"afvq\" } }");
        assert!(!l.contains("--qdisc '"), "{l}");
        assert!(matches!(flag(&l, "--qdisc-back"), Some(QdiscSpec::Asym(_))), "{l}");
    }
}
