//! `kind = "gateway"`: the edge gateway box shapes classes to their rates and splits a link
//! between classes by their rates (and, with ceilings, lends idle bandwidth).
mod common;
use common::*;

/// Dumbbell with a fat bottleneck (the gateway is the bottleneck); `n` bulk flows, 1460-byte
/// payloads in 1500-byte IP packets (no timestamps), the gateway at `left`.
fn scenario(n: u32, duration: &str, gateway: &str) -> String {
    let head = format!(
        "seed = 4\nduration = \"{duration}\"\nwarmup = \"5s\"\n[tcp]\ncc = \"sack\"\nmss = 1460\ntimestamps = false"
    );
    gateway_dumbbell(&head, n, gateway)
}

fn class<'a>(s: &'a ackshape_sim::Summary, name: &str) -> &'a serde_json::Value {
    &s.middleboxes[0]["stats"]["classes"][name]
}

/// Goodput a class rate allows: 1460 payload bytes per 1500 IP bytes.
fn adjusted(rate: f64) -> f64 {
    rate * 1460.0 / 1500.0
}

#[test]
fn three_flows_in_a_class_get_the_header_adjusted_rate() {
    let s = run(&scenario(
        3,
        "30s",
        r#"policy = { class = [{ name = "bulk", rate = "2Mbit/s", queue = "50pkt" }], rule = [{ class = "bulk" }] }"#,
    ));
    let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    let want = adjusted(2e6);
    eprintln!(
        "aggregate goodput {total:.0} bit/s, expected {want:.0}; per flow {:?}",
        s.flows.iter().map(|f| f.goodput_bps as u64).collect::<Vec<_>>()
    );
    assert!((total / want - 1.0).abs() < 0.02, "aggregate {total} vs {want}");
    let c = class(&s, "bulk");
    assert!(c["data_queue_max_pkts"].as_u64().unwrap() <= 50);
    assert!(c["sent_pkts"].as_u64().unwrap() > 0);
    // The class is the bottleneck: its queue fills and overflows (FIFO drop-tail PCDQ).
    assert!(c["drops"].as_u64().unwrap() > 0, "{c}");
    assert!(c["data_queue_avg_pkts"].as_f64().unwrap() > 5.0, "{c}");
    assert_eq!(s.middleboxes[0]["stats"]["flows"]["shaped"].as_u64(), Some(3));
}

/// Dumbbell sender k has address 10.0.0.(2k+1).
const SPLIT: &str = r#"policy = { link = { outbound = "10Mbit/s" }, class = [
  { name = "a", rate = "3Mbit/s", ceil = "10Mbit/s" },
  { name = "b", rate = "7Mbit/s", ceil = "10Mbit/s" },
], rule = [
  { class = "a", src = ["10.0.0.1", "10.0.0.3"] },
  { class = "b", src = ["10.0.0.5", "10.0.0.7"] },
] }"#;

#[test]
fn two_classes_split_a_link_by_their_rates() {
    let s = run(&scenario(4, "30s", SPLIT));
    let a: f64 = s.flows[0].goodput_bps + s.flows[1].goodput_bps;
    let b: f64 = s.flows[2].goodput_bps + s.flows[3].goodput_bps;
    eprintln!("class a {a:.0} bit/s, class b {b:.0} bit/s");
    assert!((a / adjusted(3e6) - 1.0).abs() < 0.04, "a {a}");
    assert!((b / adjusted(7e6) - 1.0).abs() < 0.04, "b {b}");
}

#[test]
fn an_idle_class_lends_its_rate_up_to_the_ceiling() {
    // Only class a has traffic (senders 0 and 1): it borrows b's idle 7 Mbit/s.
    let s = run(&scenario(2, "30s", SPLIT));
    let a: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    eprintln!("class a alone: {a:.0} bit/s");
    assert!((a / adjusted(10e6) - 1.0).abs() < 0.03, "a {a}");
    let c = class(&s, "a");
    assert!(c["borrowed_pkts"].as_u64().unwrap() > c["sent_pkts"].as_u64().unwrap() / 2, "{c}");
    // Without a ceiling above its rate it stays at its rate.
    let s = run(&scenario(2, "30s", &SPLIT.replace(r#"rate = "3Mbit/s", ceil = "10Mbit/s""#, r#"rate = "3Mbit/s""#)));
    let a: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    assert!((a / adjusted(3e6) - 1.0).abs() < 0.03, "a {a}");
}

#[test]
fn policy_file_is_read_relative_to_the_scenario_and_errors_name_the_key() {
    let dir = std::env::temp_dir().join(format!("ackshape-gw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p.toml"), "[[class]]\nname = \"c\"\nrate = \"2Mbit/s\"\n[[rule]]\nclass = \"c\"\n")
        .unwrap();
    let sc = scenario(1, "6s", "policy_file = \"p.toml\"");
    let path = dir.join("s.toml");
    std::fs::write(&path, &sc).unwrap();
    let parsed = ackshape_sim::Scenario::load(&path).unwrap();
    let mut sim = ackshape_sim::Sim::build(&parsed, &path.display().to_string(), None, Default::default()).unwrap();
    sim.run(None);
    assert!(sim.summary(0.0).middleboxes[0]["stats"]["classes"]["c"]["sent_pkts"].as_u64().unwrap() > 0);

    std::fs::write(dir.join("p.toml"), "[[class]]\nname = \"c\"\nrate = \"2Mbit/s\"\nceil = \"1Mbit/s\"\n").unwrap();
    let e = ackshape_sim::Sim::build(&parsed, &path.display().to_string(), None, Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("key `middlebox[0].policy_file`")
            && e.contains("p.toml: key `class[0].ceil`: ceiling 1Mbit/s is below rate 2Mbit/s"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();

    for (gw, key) in [
        (
            r#"policy = { class = [{ name = "c", rate = "2Mbit/s", ceil = "1Mbit/s" }] }"#,
            "middlebox[0].policy.class[0].ceil",
        ),
        (r#"policy = { rule = [{ class = "nope" }] }"#, "middlebox[0].policy.rule[0].class"),
        ("overhead = 14", "middlebox[0].policy"),
        ("policy = {}\nrate = \"1Mbit/s\"", "middlebox[0].rate"),
        (
            r#"policy = { class = [{ name = "c", rate = "2Mbit/s" }] }
warmup = 5"#,
            "middlebox[0].warmup",
        ),
        (
            r#"policy = { class = [{ name = "c", rate = "2Mbit/s" }] }
warmup = "5 parsecs""#,
            "middlebox[0].warmup",
        ),
    ] {
        let sc = parse(&scenario(1, "6s", gw));
        let e = ackshape_sim::Sim::build(&sc, "gw.toml", None, Default::default()).err().expect(gw).to_string();
        assert!(e.contains(&format!("gw.toml: key `{key}`")), "{gw}\n=> {e}");
    }
}

/// `scenario` with receivers ACKing every segment (paper 000's assumption).
fn scenario_ack_every(n: u32, duration: &str, gateway: &str) -> String {
    scenario(n, duration, gateway).replace("timestamps = false", "timestamps = false\ndelack = 1\nrcv_buf = \"64KB\"")
}

fn jain(s: &ackshape_sim::Summary) -> f64 {
    ackshape_sim::metrics::jain(&s.flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>())
}

fn report(label: &str, s: &ackshape_sim::Summary, class_name: &str) {
    let c = class(s, class_name);
    let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    eprintln!(
        "{label:>24}: goodput {total:>9.0} jain {:.4} data avg {:>6.2} max {:>4} acks avg {:>6.2} max {:>4} drops {} rtx {}",
        jain(s),
        c["data_queue_avg_pkts"].as_f64().unwrap(),
        c["data_queue_max_pkts"],
        c["acks_held_avg"].as_f64().unwrap(),
        c["acks_held_max"],
        c["drops"],
        s.flows.iter().map(|f| f.retransmitted_packets).sum::<u64>(),
    );
}

/// Paper 000's picture (Fig. 8, Table 1) in one 2 Mbit/s class with 4 flows: per-flow queuing
/// holds the windows as data; PostACK holds them as ACKs; TCR shrinks the windows. All reach the
/// class rate.
#[test]
fn mechanisms_move_the_class_queue_from_data_to_acks() {
    let pol = |extra: &str| {
        format!(r#"policy = {{ class = [{{ name = "c", rate = "2Mbit/s"{extra} }}], rule = [{{ class = "c" }}] }}"#)
    };
    let runs: Vec<(&str, ackshape_sim::Summary)> = [
        ("fifo", pol("")),
        ("pfq-drr", pol(r#", qdisc = { kind = "pfq-drr" }"#)),
        ("pfq token buckets", pol(r#", qdisc = { kind = "pfq" }"#)),
        (
            "postack zero-timer",
            pol(r#", qdisc = { kind = "pfq-drr" }, mechanism = { kind = "postack", variant = "zero-timer" }"#),
        ),
        ("postack on-off", pol(r#", mechanism = { kind = "postack" }"#)),
        ("tcr", pol(r#", mechanism = { kind = "tcr" }"#)),
    ]
    .into_iter()
    .map(|(l, gw)| {
        let s = run(&scenario_ack_every(4, "30s", &gw));
        report(l, &s, "c");
        (l, s)
    })
    .collect();
    let get = |l: &str| &runs.iter().find(|r| r.0 == l).unwrap().1;
    let f = |l: &str, k: &str| class(get(l), "c")[k].as_f64().unwrap();
    for (l, s) in &runs {
        let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
        assert!((total / adjusted(2e6) - 1.0).abs() < 0.02, "{l}: {total}");
        // The gateway-wide buffer is the class's here.
        let b = &s.middleboxes[0]["stats"]["buffer"];
        assert!((b["data_avg_pkts"].as_f64().unwrap() - f(l, "data_queue_avg_pkts")).abs() < 1e-6, "{l}");
        assert!((b["acks_avg"].as_f64().unwrap() - f(l, "acks_held_avg")).abs() < 1e-6, "{l}");
    }
    // A shared FIFO overflows; the per-flow schemes lose nothing and are fair.
    assert!(f("fifo", "drops") > 0.0);
    for l in ["pfq-drr", "pfq token buckets", "postack zero-timer", "postack on-off", "tcr"] {
        assert_eq!(f(l, "drops"), 0.0, "{l}");
        assert!(jain(get(l)) > 0.99, "{l}");
    }
    // PFQ queues the windows as data; PostACK relocates that queue to the ACKs.
    assert!(f("pfq-drr", "data_queue_avg_pkts") > 40.0);
    assert!(f("pfq token buckets", "data_queue_avg_pkts") > 40.0);
    assert_eq!(f("pfq-drr", "acks_held_max"), 0.0);
    for l in ["postack zero-timer", "postack on-off"] {
        assert!(f(l, "data_queue_avg_pkts") < f("pfq-drr", "data_queue_avg_pkts") / 5.0, "{l}");
        assert!(f(l, "acks_held_avg") > f("pfq-drr", "data_queue_avg_pkts") / 2.0, "{l}");
    }
    // TCR keeps both short (the window is rewritten to the pipe).
    assert!(f("tcr", "data_queue_avg_pkts") < 5.0 && f("tcr", "acks_held_avg") < 5.0);
    // Mechanism metrics come through.
    assert!(class(get("tcr"), "c")["mechanism_stats"]["outbound"].is_object());
}

/// Paper 000 App. A: an inbound rule shapes WAN → LAN data and its mechanism acts on the
/// LAN → WAN ACKs.
#[test]
fn inbound_rules_shape_downloads_through_their_acks() {
    // The gateway at `right` (the receivers' side): WAN is the bottleneck back to `left`.
    let sc = scenario_ack_every(
        3,
        "30s",
        r#"policy = { class = [{ name = "down", rate = "2Mbit/s", mechanism = { kind = "postack" } }], rule = [{ class = "down", direction = "inbound" }] }"#,
    )
    .replace("node = \"left\"\nwan = \"bottleneck\"", "node = \"right\"\nwan = \"bottleneck:rev\"");
    let s = run(&sc);
    report("inbound postack", &s, "down");
    let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    assert!((total / adjusted(2e6) - 1.0).abs() < 0.02, "{total}");
    let c = class(&s, "down");
    assert_eq!(c["directions"], serde_json::json!(["inbound"]));
    assert!(c["acks_in"].as_u64().unwrap() > 1000, "{c}");
    assert!(c["acks_held_avg"].as_f64().unwrap() > c["data_queue_avg_pkts"].as_f64().unwrap(), "{c}");
}

/// A download its receiver opened (a LAN client fetching from a WAN server, the usual case at an
/// ISP's edge): the gateway shows the handshake — the client's SYN went out as data of the other
/// half — to the inbound class's TCR, which then knows the window scale and rewrites the windows
/// as it does for a download its sender opened. Without that it saw no handshake, could not
/// scale a window and only paced the ACKs.
#[test]
fn inbound_tcr_shapes_downloads_whichever_end_opened_them() {
    let gw = r#"policy = { class = [{ name = "down", rate = "4Mbit/s", mechanism = { kind = "tcr" } }], rule = [{ class = "down", direction = "inbound" }] }"#;
    let sc = |open: &str| {
        scenario(3, "30s", gw)
            .replace("timestamps = false", "timestamps = true\nrcv_buf = \"1MB\"")
            .replace("count = 3", &format!("count = 3\nopen = \"{open}\""))
            .replace("node = \"left\"\nwan = \"bottleneck\"", "node = \"right\"\nwan = \"bottleneck:rev\"")
    };
    let mut goodputs = Vec::new();
    for open in ["sender", "receiver"] {
        let s = run(&sc(open));
        report(&format!("tcr, opened by the {open}"), &s, "down");
        let c = class(&s, "down");
        let m = &c["mechanism_stats"]["inbound"];
        let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
        eprintln!(
            "  window rewrites {}, flows without handshake {}, rcv_scale {:?}, receiver-opened {}",
            m["window_rewrites"],
            m["flows_without_handshake"],
            m["per_flow"].as_array().unwrap().iter().map(|f| f["rcv_scale"].clone()).collect::<Vec<_>>(),
            s.middleboxes[0]["stats"]["flows"]["receiver_opened"]
        );
        assert_eq!(m["flows_without_handshake"].as_u64(), Some(0), "{open}: {m}");
        assert!(m["window_rewrites"].as_u64().unwrap() > 1000, "{open}: {m}");
        for f in m["per_flow"].as_array().unwrap() {
            assert_eq!(f["rcv_scale"].as_u64(), Some(7), "{open}: {f}");
            assert_eq!(f["mss"].as_u64(), Some(1460), "{open}: {f}"); // the scenario's segments
        }
        let opened = s.middleboxes[0]["stats"]["flows"]["receiver_opened"].as_u64().unwrap();
        assert_eq!(opened, if open == "receiver" { 3 } else { 0 });
        // TCR keeps the class queue short and drops nothing.
        assert_eq!(c["drops"].as_u64(), Some(0), "{open}: {c}");
        assert!(c["data_queue_avg_pkts"].as_f64().unwrap() < 5.0, "{open}: {c}");
        assert!(jain(&s) > 0.99, "{open}");
        goodputs.push(total);
    }
    let (a, b) = (goodputs[0], goodputs[1]);
    assert!((a / b - 1.0).abs() < 0.02, "opened by the sender {a}, by the receiver {b}");
    assert!((b / (4e6 * 1448.0 / 1500.0) - 1.0).abs() < 0.03, "{b}");
}

/// The mechanism of a class that may borrow sees the rate it can get: its ceiling while the
/// other class is idle.
#[test]
fn borrowing_raises_the_rate_a_mechanism_sees() {
    let gw = r#"policy = { link = { outbound = "10Mbit/s" }, class = [
  { name = "a", rate = "2Mbit/s", ceil = "10Mbit/s", mechanism = { kind = "postack" } },
  { name = "b", rate = "8Mbit/s" },
], rule = [
  { class = "a", src = ["10.0.0.1", "10.0.0.3"] },
  { class = "b", src = ["10.0.0.5", "10.0.0.7"] },
] }"#;
    let s = run(&scenario_ack_every(2, "20s", gw));
    report("a alone, borrowing", &s, "a");
    let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    let seen = class(&s, "a")["mechanism_rate_bps"]["outbound"].as_u64().unwrap();
    assert!(seen > 9_500_000, "mechanism rate {seen}");
    assert!(total > adjusted(9e6), "{total}");
    // With class b busy too, a is back at its assured rate and b gets its own.
    let s = run(&scenario_ack_every(4, "20s", gw));
    let seen = class(&s, "a")["mechanism_rate_bps"]["outbound"].as_u64().unwrap();
    let a: f64 = s.flows[0].goodput_bps + s.flows[1].goodput_bps;
    let b: f64 = s.flows[2].goodput_bps + s.flows[3].goodput_bps;
    eprintln!("both busy: a {a:.0} b {b:.0}, a's mechanism sees {seen}");
    assert!(seen < 2_100_000, "mechanism rate {seen}");
    assert!((a / adjusted(2e6) - 1.0).abs() < 0.05 && (b / adjusted(8e6) - 1.0).abs() < 0.05, "a {a} b {b}");
}

/// RED with ECN marking as a class's leaf discipline keeps its queue near the thresholds mostly by
/// marking (it still drops when the average passes max_th, as RFC 3168 RED does).
#[test]
fn red_ecn_leaf_marks_instead_of_dropping() {
    let gw = r#"policy = { class = [{ name = "c", rate = "2Mbit/s", qdisc = { kind = "red", ecn = true, limit_pkts = 200 } }], rule = [{ class = "c" }] }"#;
    let s = run(&scenario(4, "30s", gw).replace("timestamps = false", "timestamps = false\necn = true"));
    report("red/ecn", &s, "c");
    let c = class(&s, "c");
    let q = &c["qdisc"]["outbound"]["counters"];
    let (marks, drops) = (q["red_ecn_marks"].as_u64().unwrap(), c["drops"].as_u64().unwrap());
    assert!(marks > 2 * drops, "{c}");
    assert!((drops as f64) < 0.02 * c["enqueued_pkts"].as_f64().unwrap(), "{c}");
    assert!(c["data_queue_avg_pkts"].as_f64().unwrap() < 40.0, "{c}");
    let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    assert!((total / adjusted(2e6) - 1.0).abs() < 0.03, "{total}");
}

/// Two-way TCP on an asymmetric access link (paper 002): the gateway with one outbound class at
/// the uplink rate and AFVQ as its discipline behaves like the same discipline on the link, and
/// each direction's discipline is chosen by the class its rule names.
#[test]
fn asymmetric_link_disciplines_per_direction() {
    let sc = |uplink: &str, boxed: &str| {
        asymmetric_two_way("40s", uplink, &format!("[[middlebox]]\nnode = \"gw\"\nwan = \"access\"\n{boxed}"))
    };
    let util = |s: &ackshape_sim::Summary| (s.flows[0].goodput_bps / 800e3, s.flows[1].goodput_bps / 2.1e6);
    let qlink =
        run(&sc(r#"rate = "100Mbit/s""#, "kind = \"qdisc-link\"\nrate = \"800kbit/s\"\nqdisc = { kind = \"afvq\" }"));
    let gw = |up: &str| {
        run(&sc(
            r#"rate = "100Mbit/s""#,
            &format!(
                r#"kind = "gateway"
policy = {{ link = {{ outbound = "800kbit/s" }}, class = [
  {{ name = "up", rate = "800kbit/s", qdisc = {{ kind = "{up}" }} }},
  {{ name = "down", rate = "100Mbit/s" }},
], rule = [{{ class = "up" }}, {{ class = "down", direction = "inbound" }}] }}"#
            ),
        ))
    };
    let afvq = gw("afvq");
    let fifo = gw("fifo");
    let (qu, qd) = util(&qlink);
    let (au, ad) = util(&afvq);
    let (fu, fd) = util(&fifo);
    eprintln!("up/down utilisation: qdisc-link AFVQ {qu:.3}/{qd:.3}; gateway AFVQ {au:.3}/{ad:.3}; gateway FIFO {fu:.3}/{fd:.3}");
    assert!((qu - au).abs() < 0.05 && (qd - ad).abs() < 0.05, "gateway AFVQ differs from the qdisc-link box");
    // AFVQ on the uplink class lets the download's ACKs through: the download does better than
    // behind a FIFO uplink.
    assert!(ad > fd + 0.1, "AFVQ {ad} vs FIFO {fd}");
    let s = &afvq.middleboxes[0]["stats"]["classes"];
    assert_eq!(s["up"]["directions"], serde_json::json!(["outbound"]));
    assert_eq!(s["down"]["directions"], serde_json::json!(["inbound"]));
    assert!(s["up"]["qdisc"]["outbound"]["asym"].is_object(), "{}", s["up"]);
}

#[test]
fn the_gateway_example_in_docs_scenario_md_runs() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenario.md")).unwrap();
    let sec = doc.split("### `kind = \"gateway\"`").nth(1).expect("gateway section");
    let block = sec.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    let sc = scenario(3, "8s", "")
        .replace("[[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nkind = \"gateway\"\n", block);
    let s = run(&sc);
    let total: f64 = s.flows.iter().map(|f| f.goodput_bps).sum();
    assert!((total / adjusted(2e6) - 1.0).abs() < 0.03, "{total}");
}

/// The occupancy statistics after the warm-up (`Middlebox::start_window` at the warm-up event)
/// leave out the start-up burst: with PostACK, the flows' initial windows fill the class queue at
/// start-up (no ACK can pace them) and the queue then stays small.
#[test]
fn occupancy_after_the_warmup_leaves_out_the_start_up_burst() {
    let s = run(&scenario_ack_every(
        8,
        "15s",
        r#"policy = { class = [{ name = "c", rate = "5Mbit/s", queue = "200pkt", mechanism = { kind = "postack", variant = "on-off" } }], rule = [{ class = "c" }] }"#,
    ));
    let c = class(&s, "c");
    let (all, after) =
        (c["data_queue_max_pkts"].as_u64().unwrap(), c["data_queue_max_pkts_after_warmup"].as_u64().unwrap());
    let (avg_all, avg_after) =
        (c["data_queue_avg_pkts"].as_f64().unwrap(), c["data_queue_avg_pkts_after_warmup"].as_f64().unwrap());
    eprintln!("max data queue {all} (whole run), {after} after the warm-up; average {avg_all:.2} / {avg_after:.2}");
    assert!(all >= 40, "the 8 initial windows reach the queue at start-up: {all}");
    assert!(after * 2 < all, "after the warm-up {after} vs whole run {all}");
    assert!(avg_after > 0.0 && avg_after.is_finite());
    assert!(c["acks_held_max_after_warmup"].as_u64().unwrap() <= c["acks_held_max"].as_u64().unwrap());
    let b = &s.middleboxes[0]["stats"]["buffer"];
    assert_eq!(b["data_max_pkts_after_warmup"].as_u64().unwrap(), after, "{b}");
    // One class: the gateway's held ACKs are the class's, over the same window.
    let acks_after = c["acks_held_avg_after_warmup"].as_f64().unwrap();
    assert!(acks_after.is_finite() && acks_after >= 0.0, "{c}");
    assert!(acks_after <= c["acks_held_max_after_warmup"].as_f64().unwrap(), "{c}");
    assert_eq!(b["acks_avg_after_warmup"].as_f64().unwrap(), acks_after, "{b}");
    assert!(c["drops_after_warmup"].as_u64().unwrap() <= c["drops"].as_u64().unwrap(), "{c}");
}

/// Two subscribers (dumbbell senders 10.0.0.1 and 10.0.0.3; flows 0 and 2 from the first, flow 1
/// from the second) under a per-host template: each host gets its own class under `subs`.
fn per_host(ceil: &str) -> String {
    format!(
        r#"
seed = 4
duration = "30s"
warmup = "5s"
[tcp]
cc = "sack"
mss = 1460
timestamps = false
[topology]
kind = "dumbbell"
senders = 2
bottleneck = {{ rate = "100Mbit/s", delay = "20ms", queue = "1000pkt" }}
access = {{ rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }}
[[flows]]
kind = "bulk"
count = 3
[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
policy = {{ class = [
  {{ name = "subs", rate = "4Mbit/s" }},
  {{ name = "home", parent = "subs", per_host = "10.0.0.0/29", rate = "500kbit/s", ceil = "{ceil}", queue = "50pkt" }},
], rule = [ {{ class = "home" }} ] }}
"#
    )
}

#[test]
fn per_host_classes_share_by_subscriber_not_by_flow_and_cap_each_at_its_ceiling() {
    // Both subscribers backlogged: the 4 Mbit/s parent splits by host (equal rates, equal
    // quanta), whatever each runs: 2 flows against 1.
    let s = run(&per_host("10Mbit/s"));
    let g: Vec<f64> = s.flows.iter().map(|f| f.goodput_bps).collect();
    let (h1, h3) = (g[0] + g[2], g[1]);
    eprintln!("per host: 10.0.0.1 {h1:.0} bit/s (2 flows), 10.0.0.3 {h3:.0} bit/s (1 flow); flows {g:?}");
    assert!((h1 / adjusted(2e6) - 1.0).abs() < 0.05, "host .1 {h1}");
    assert!((h3 / adjusted(2e6) - 1.0).abs() < 0.05, "host .3 {h3}");
    let stats = &s.middleboxes[0]["stats"]["classes"];
    for h in ["home/10.0.0.1", "home/10.0.0.3"] {
        assert!(stats[h]["sent_pkts"].as_u64().unwrap() > 1000, "{h}: {}", stats[h]);
    }
    // The other six hosts' classes stay idle: the stats list the busy ones and count them all.
    assert!(stats.get("home/10.0.0.5").is_none(), "{stats}");
    assert_eq!(stats.as_object().unwrap().len(), 3, "subs and the 2 busy hosts");
    let ph = &s.middleboxes[0]["stats"]["per_host"]["home"];
    assert_eq!(
        (ph["classes"].as_u64(), ph["active"].as_u64(), ph["listed"].as_u64()),
        (Some(8), Some(2), Some(2)),
        "{ph}"
    );
    let sent: u64 = ["home/10.0.0.1", "home/10.0.0.3"].iter().map(|h| stats[h]["sent_bytes"].as_u64().unwrap()).sum();
    assert_eq!(ph["sent_bytes"].as_u64(), Some(sent), "{ph}");
    // A 1.5 Mbit/s plan: each host stops at its ceiling although the parent has 4.
    let s = run(&per_host("1.5Mbit/s"));
    let g: Vec<f64> = s.flows.iter().map(|f| f.goodput_bps).collect();
    let (h1, h3) = (g[0] + g[2], g[1]);
    eprintln!("1.5 Mbit/s plans: 10.0.0.1 {h1:.0} bit/s, 10.0.0.3 {h3:.0} bit/s");
    assert!((h1 / adjusted(1.5e6) - 1.0).abs() < 0.04, "host .1 {h1}");
    assert!((h3 / adjusted(1.5e6) - 1.0).abs() < 0.04, "host .3 {h3}");
}
