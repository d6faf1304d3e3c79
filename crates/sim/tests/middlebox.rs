//! The `[[middlebox]]` seam: a pass-through box changes nothing, inline or mirrored; bad tables
//! are rejected with the key.
mod common;
use common::*;

const BASE: &str = r#"
seed = 3
duration = "10s"
[tcp]
cc = "sack"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbit/s", delay = "20ms", queue = "50pkt" }
access = { rate = "100Mbit/s", delay = "1ms", queue = "1000pkt" }
[[flows]]
kind = "bulk"
count = 3
"#;

fn goodputs(s: &ackshape_sim::Summary) -> Vec<f64> {
    s.flows.iter().map(|f| f.goodput_bps).collect()
}

#[test]
fn pass_through_inline_and_mirror_change_nothing() {
    let plain = run(BASE);
    for extra in [
        "[[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nkind = \"pass-through\"\n",
        "[[middlebox]]\nnode = \"right\"\nwan = \"bottleneck:rev\"\nkind = \"pass-through\"\n",
        "[[middlebox]]\nnode = \"left\"\nwan = \"bottleneck\"\nmode = \"mirror\"\ndelay = \"1ms\"\nkind = \"pass-through\"\n",
    ] {
        let s = run(&format!("{BASE}{extra}"));
        assert_eq!(goodputs(&plain), goodputs(&s), "{extra}");
        assert_eq!(s.middleboxes.len(), 1);
        let seen = s.middleboxes[0]["packets_seen"].as_u64().unwrap();
        let tx = plain.link("bottleneck").unwrap().tx_packets + plain.link("bottleneck:rev").unwrap().tx_packets;
        // Every packet crossing the node passes the box (less those still in flight at the end).
        assert!(seen as f64 >= tx as f64 * 0.99, "seen {seen} < crossing {tx}");
        let emitted = s.middleboxes[0]["packets_emitted"].as_u64().unwrap();
        if extra.contains("mirror") {
            assert_eq!(emitted, 0, "a mirror pass-through injects nothing");
        } else {
            assert_eq!(emitted, seen);
        }
    }
}

#[test]
fn bad_middlebox_tables_name_the_key() {
    for (extra, key, want) in [
        ("node = \"nowhere\"\nwan = \"bottleneck\"\nkind = \"pass-through\"", "middlebox[0].node", "left"),
        ("node = \"s0\"\nwan = \"bottleneck\"\nkind = \"pass-through\"", "middlebox[0].node", "is a host"),
        ("node = \"left\"\nwan = \"access-d0\"\nkind = \"pass-through\"", "middlebox[0].wan", "bottleneck"),
        ("node = \"left\"\nwan = \"bottleneck\"\nkind = \"teleport\"", "middlebox[0].kind", "pass-through"),
        (
            "node = \"left\"\nwan = \"bottleneck\"\nkind = \"pass-through\"\nrate = \"1Mbit/s\"",
            "middlebox[0].rate",
            "unknown key",
        ),
    ] {
        let sc = parse(&format!("{BASE}[[middlebox]]\n{extra}\n"));
        let e = ackshape_sim::Sim::build(&sc, "mb.toml", None, Default::default()).err().expect(extra).to_string();
        assert!(e.contains(&format!("mb.toml: key `{key}`")) && e.contains(want), "{extra}\n=> {e}");
    }
}
