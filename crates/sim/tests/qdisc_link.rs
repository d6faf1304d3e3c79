//! `kind = "qdisc-link"`: a discipline at a rate inside a box behaves like the same discipline on
//! a link of that rate — so the live gateway can run paper 002's AFVQ as the bottleneck.
mod common;
use common::*;

fn scenario(uplink: &str, boxed: Option<&str>) -> String {
    format!(
        r#"
seed = 2
duration = "60s"
warmup = "10s"
[tcp]
cc = "reno"
sack = false
delack = 2
max_window = "200pkt"
[topology]
kind = "graph"
nodes = [{{ name = "local", kind = "host" }}, {{ name = "gw", kind = "router" }}, {{ name = "isp", kind = "router" }}, {{ name = "remote", kind = "host" }}]
links = [
  {{ name = "home", a = "local", b = "gw", rate = "100Mbit/s", delay = "100us" }},
  {{ name = "access", a = "gw", b = "isp", {uplink}, delay = "10ms", reverse = {{ rate = "2.1Mbit/s", qdisc = {{ kind = "fifo", limit_pkts = 100 }} }} }},
  {{ name = "internet", a = "isp", b = "remote", rate = "100Mbit/s", delay = "20ms" }},
]
[[flows]]
name = "upload"
from = "local"
to = "remote"
[[flows]]
name = "download"
from = "remote"
to = "local"
start = "100ms"
{}
"#,
        boxed
            .map(|b| format!("[[middlebox]]\nnode = \"gw\"\nwan = \"access\"\nkind = \"qdisc-link\"\n{b}\n"))
            .unwrap_or_default()
    )
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
