//! `kind = "qdisc-link"`: a discipline at a rate inside a box behaves like the same discipline on
//! a link of that rate — so the live gateway can run paper 002's AFVQ as the bottleneck.
mod common;
use ackshape_sim::scenario::TopologySpec;
use ackshape_sim::Scenario;
use common::*;

fn scenario(uplink: &str, boxed: Option<&str>) -> String {
    let boxed = boxed.map(|b| format!("[[middlebox]]\nnode = \"gw\"\nwan = \"access\"\nkind = \"qdisc-link\"\n{b}\n"));
    asymmetric_two_way("60s", uplink, &boxed.unwrap_or_default())
}

#[test]
fn afvq_in_a_box_matches_afvq_on_the_link() {
    let on_link = run(&scenario(r#"rate = "800kbit/s", qdisc = { kind = "afvq" }"#, None));
    let in_box = run(&scenario(r#"rate = "100Mbit/s""#, Some("rate = \"800kbit/s\"\nqdisc = { kind = \"afvq\" }")));
    let fifo_box = run(&scenario(
        r#"rate = "100Mbit/s""#,
        Some("rate = \"800kbit/s\"\nqdisc = { kind = \"fifo\", limit_pkts = 100 }"),
    ));
    let util = |s: &ackshape_sim::Summary| {
        let up = s.flows[0].goodput_bps / 800e3;
        let down = s.flows[1].goodput_bps / 2.1e6;
        (up, down)
    };
    let (lu, ld) = util(&on_link);
    let (bu, bd) = util(&in_box);
    let (fu, fd) = util(&fifo_box);
    eprintln!("goodput/rate  link AFVQ: up {lu:.3} down {ld:.3}; box AFVQ: up {bu:.3} down {bd:.3}; box FIFO: up {fu:.3} down {fd:.3}");
    assert!((lu - bu).abs() < 0.05 && (ld - bd).abs() < 0.05, "box and link differ");
    // The worse direction does better under AFVQ than under FIFO (paper 002's point).
    assert!(bu.min(bd) > fu.min(fd) + 0.05, "AFVQ in a box helps the worse direction");
    let st = &in_box.middleboxes[0]["stats"]["a_to_b"];
    assert!(st["sent"].as_u64().unwrap() > 1000 && st["asym"].is_object(), "{st}");
    assert!(in_box.middleboxes[0]["stats"]["b_to_a"].is_null());
}

#[test]
fn qdisc_link_keys_are_checked() {
    for (extra, key, want) in [
        ("qdisc = { kind = \"afvq\" }", "middlebox[0].rate", "needs a rate"),
        ("rate = \"fast\"", "middlebox[0].rate", "rate"),
        ("rate = \"1Mbit/s\"\nburst = 3", "middlebox[0]", "burst"),
        ("rate = \"1Mbit/s\"\nqdisc = { kind = \"nope\" }", "middlebox[0].qdisc", "afvq"),
    ] {
        let sc = parse(&scenario(r#"rate = "100Mbit/s""#, Some(extra)));
        let e = ackshape_sim::Sim::build(&sc, "q.toml", None, Default::default()).err().expect(extra).to_string();
        assert!(e.contains(&format!("q.toml: key `{key}")) && e.contains(want), "{extra}\n=> {e}");
    }
}

/// A dumbbell whose bottleneck has `link` (its queue keys).
fn dumbbell(link: &str) -> String {
    format!(
        r#"
seed = 3
duration = "20s"
warmup = "2s"
[tcp]
cc = "reno"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "5Mbit/s", delay = "20ms", {link} }}
access = {{ rate = "100Mbit/s", delay = "1ms" }}
[[flows]]
count = 6
start = "uniform(0s, 1s)"
"#
    )
}

fn queue_facts(s: &ackshape_sim::Summary, link: &str) -> (Vec<(u64, u64)>, u64, u64) {
    let l = s.links.iter().find(|l| l.name == link).unwrap();
    (s.flows.iter().map(|f| (f.goodput_bps as u64, f.retransmitted_packets)).collect(), l.drops, l.queue_max_pkts)
}

/// A link's `queue` sizes the discipline where the `qdisc` table leaves its limits out (as ns-2's
/// `queue-limit`), in each direction; a limit the table gives wins (docs/scenario.md).
#[test]
fn a_links_queue_sizes_its_qdisc() {
    let plain = queue_facts(&run(&dumbbell(r#"queue = "20pkt""#)), "bottleneck");
    let fifo = queue_facts(&run(&dumbbell(r#"queue = "20pkt", qdisc = { kind = "fifo" }"#)), "bottleneck");
    assert_eq!(plain, fifo, "a FIFO sized by `queue` is the drop-tail of that size");
    assert_eq!(fifo.2, 20);
    assert!(fifo.1 > 0, "the 20-packet queue overflows (the comparison is not vacuous)");
    let given =
        queue_facts(&run(&dumbbell(r#"queue = "20pkt", qdisc = { kind = "fifo", limit_pkts = 60 }"#)), "bottleneck");
    assert!(given.2 > 20 && given.2 <= 60, "the table's limit_pkts wins: max queue {}", given.2);
    let drr = queue_facts(&run(&dumbbell(r#"queue = "20pkt", qdisc = { kind = "drr" }"#)), "bottleneck");
    assert!(drr.2 <= 20 && drr.1 > 0, "DRR's total limit is the queue: max {} drops {}", drr.2, drr.1);
    // The reverse direction takes its own `reverse.queue`, else the forward one.
    let sc = parse(&dumbbell(r#"queue = "20pkt", qdisc = { kind = "acks-first" }, reverse = { queue = "7pkt" }"#));
    let TopologySpec::Dumbbell(d) = &sc.topology else { unreachable!() };
    let (f, r) = d.bottleneck.directions();
    use ackshape_core::shape::asym::AsymDiscSpec::AcksFirst;
    use ackshape_sim::scenario::QdiscSpec::Asym;
    assert!(matches!(f.qdisc, Some(Asym(AcksFirst { ack_limit_pkts: 20, data_limit_pkts: 20 }))), "{:?}", f.qdisc);
    assert!(matches!(r.qdisc, Some(Asym(AcksFirst { ack_limit_pkts: 7, data_limit_pkts: 7 }))), "{:?}", r.qdisc);
    // Without `queue` the discipline's own defaults stay.
    let sc = parse(&dumbbell(r#"qdisc = { kind = "red" }"#));
    let TopologySpec::Dumbbell(d) = &sc.topology else { unreachable!() };
    assert!(
        matches!(d.bottleneck.directions().0.qdisc, Some(ackshape_sim::scenario::QdiscSpec::Red(c)) if c.limit_pkts == 100)
    );
}

#[test]
fn a_queue_that_cannot_size_the_qdisc_is_named() {
    for (link, key, want) in [
        (r#"queue = "64KB", qdisc = { kind = "fifo" }"#, "topology.bottleneck.queue", "64000 bytes"),
        (
            r#"qdisc = { kind = "fifo" }, reverse = { queue = "8KB" }"#,
            "topology.bottleneck.reverse.queue",
            "`limit_pkts`",
        ),
        (
            r#"queue = "20pkt", qdisc = { kind = "red" }"#,
            "topology.bottleneck.qdisc",
            "(`limit_pkts` = 20 from `queue`)",
        ),
    ] {
        let e = Scenario::parse(&dumbbell(link), "q.toml").expect_err(link).to_string();
        assert!(e.contains(&format!("q.toml: key `{key}`")) && e.contains(want), "{link}\n=> {e}");
    }
    // Bytes are fine where the table gives every limit.
    parse(&dumbbell(r#"queue = "64KB", qdisc = { kind = "fifo", limit_pkts = 40 }"#));
}

/// The same rule in a `qdisc-link` box: `queue` sizes the box's discipline.
#[test]
fn a_boxs_queue_sizes_its_qdisc() {
    let up = r#"rate = "100Mbit/s""#;
    let facts = |b: &str| {
        let s = run(&scenario(up, Some(b)));
        let st = &s.middleboxes[0]["stats"]["a_to_b"];
        (queue_facts(&s, "access").0, st["dropped"].as_u64().unwrap(), st["data_queue_max_pkts"].as_u64().unwrap())
    };
    let plain = facts("rate = \"800kbit/s\"\nqueue = \"15pkt\"");
    let fifo = facts("rate = \"800kbit/s\"\nqueue = \"15pkt\"\nqdisc = { kind = \"fifo\" }");
    assert_eq!(plain, fifo);
    assert!(fifo.1 > 0 && fifo.2 <= 15, "{fifo:?}");
    let sc = parse(&scenario(up, Some("rate = \"800kbit/s\"\nqueue = \"9KB\"\nqdisc = { kind = \"afvq\" }")));
    let e = ackshape_sim::Sim::build(&sc, "q.toml", None, Default::default()).err().unwrap().to_string();
    assert!(e.contains("q.toml: key `middlebox[0].queue`") && e.contains("9000 bytes"), "{e}");
}
