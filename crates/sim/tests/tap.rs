//! The third-party tap (`[[middlebox]] kind = "tap"`, paper 004) in the simulator: what it
//! injects reaches the sender after the original ACK, on either side of the router; triple-ACK
//! duplicates trigger fast retransmits and zero-window duplicates never do; a shaper delay above
//! the inter-ACK gap disables it; the pcap of injected ACKs validates in tshark.
mod common;
use ackshape_sim::RunOptions;
use common::*;
use std::path::PathBuf;
use std::process::Command;

/// Paper 004's topology: src — r — sink, both links at `bw`, one-way delay RTT/4 each.
fn scenario(tcp: &str, bw: &str, link_delay: &str, tap: &str, extra_flows: &str) -> String {
    format!(
        r#"
duration = "20s"
warmup = "5s"
[tcp]
{tcp}
[topology]
kind = "graph"
nodes = [ {{ name = "src", kind = "host" }}, {{ name = "r", kind = "router" }}, {{ name = "sink", kind = "host" }} ]
links = [
  {{ name = "up", a = "src", b = "r", rate = "{bw}", delay = "{link_delay}", queue = "50pkt" }},
  {{ name = "down", a = "r", b = "sink", rate = "{bw}", delay = "{link_delay}", queue = "50pkt" }},
]
[[flows]]
from = "src"
to = "sink"
{extra_flows}
{tap}
"#
    )
}

const NS2: &str = "cc = \"reno\"\nmss = 536\ninitial_window = 2\ntimestamps = false\nsack = false\nwscale = -1\nrcv_buf = \"10720B\"\ndelack = 1";
/// Not window-limited: ACKs are spaced by the bottleneck, one per segment.
const OPEN: &str = "cc = \"reno\"\nmss = 536\ntimestamps = false\nsack = false\nrcv_buf = \"1MiB\"\ndelack = 1";

fn tap(delay: &str, body: &str) -> String {
    format!(
        "[[middlebox]]\nnode = \"r\"\nwan = \"down\"\nmode = \"mirror\"\ndelay = \"{delay}\"\nkind = \"tap\"\n{body}\n"
    )
}

#[test]
fn triple_ack_cuts_the_rate_and_zero_window_never_retransmits() {
    let base = run(&scenario(NS2, "5Mbit/s", "7.5ms", "", ""));
    let b = &base.flows[0];
    assert_eq!(b.retransmitted_packets, 0);
    let t = run(&scenario(NS2, "5Mbit/s", "7.5ms", &tap("0s", "technique = \"triple-ack\"\nevery = 6"), ""));
    let f = &t.flows[0];
    let inj = t.middleboxes[0]["stats"]["injections"].as_u64().unwrap();
    assert!(inj > 100, "{inj}");
    assert_eq!(t.middleboxes[0]["packets_emitted"].as_u64().unwrap(), 3 * inj);
    assert!(
        f.fast_retransmits as f64 > 0.5 * inj as f64,
        "{} fast retransmits for {inj} injections",
        f.fast_retransmits
    );
    assert!(f.throughput_bps < 0.5 * b.throughput_bps, "{} vs unshaped {}", f.throughput_bps, b.throughput_bps);
    assert!(f.goodput_bps < f.throughput_bps, "the retransmitted segments were already delivered");

    // Zero-window duplicates change the window: not dupACKs (RFC 5681), no retransmission.
    let z = run(&scenario(NS2, "5Mbit/s", "7.5ms", &tap("0s", "technique = \"zero-window\""), ""));
    let zf = &z.flows[0];
    assert!(z.middleboxes[0]["stats"]["injections"].as_u64().unwrap() > 1000);
    assert_eq!(zf.retransmitted_packets, 0);
    assert_eq!(zf.fast_retransmits, 0);
    assert_eq!(zf.timeouts, 0);
    // A tap with a `none` technique is the baseline: it injects nothing and changes nothing.
    let n = run(&scenario(NS2, "5Mbit/s", "7.5ms", &tap("0s", "technique = \"none\""), ""));
    assert_eq!(n.flows[0].throughput_bps, b.throughput_bps);
    assert_eq!(n.middleboxes[0]["packets_emitted"], 0);
}

#[test]
fn injections_follow_the_original_and_reach_either_side() {
    // A second flow sink → src: its ACKs leave the router toward the sink (A→B), the first
    // flow's toward the source (B→A).
    let rev = "[[flows]]\nfrom = \"sink\"\nto = \"src\"\n";
    let text = scenario(NS2, "5Mbit/s", "7.5ms", &tap("0s", "technique = \"triple-ack\"\nevery = 6"), rev);
    let rec_up = Recorder::default();
    let rec_down = Recorder::default();
    let mut opts = RunOptions::default();
    opts.captures.push(("up:rev".into(), Box::new(rec_up.clone())));
    opts.captures.push(("down".into(), Box::new(rec_down.clone())));
    let (s, _) = run_with(&text, opts);
    for f in &s.flows {
        assert!(f.fast_retransmits > 50, "{}: {} fast retransmits", f.name, f.fast_retransmits);
    }
    // On each link toward a sender, every injected copy directly follows its original: pure
    // ACKs come in runs of exactly 1 or 4 identical packets.
    for rec in [rec_up, rec_down] {
        let pkts = rec.0.lock().unwrap();
        let acks: Vec<_> = pkts.iter().filter(|(_, p)| p.is_pure_ack()).map(|(_, p)| p.clone()).collect();
        let mut runs = std::collections::BTreeMap::new();
        let mut i = 0;
        while i < acks.len() {
            let mut j = i + 1;
            while j < acks.len() && acks[j] == acks[i] {
                j += 1;
            }
            *runs.entry(j - i).or_insert(0u32) += 1;
            i = j;
        }
        // A 4-run is original + 3 copies; a receiver's own dupACKs (after a retransmission it
        // already held) differ in IP id, so they never join a run.
        assert!(runs.keys().all(|&k| k == 1 || k == 4), "{runs:?}");
        assert!(runs.get(&4).copied().unwrap_or(0) > 50, "{runs:?}");
    }
}

#[test]
fn shaper_delay_above_the_inter_ack_gap_switches_the_tap_off() {
    // 5 Mbit/s, 576-byte packets: one ACK every 0.92 ms. The injection's round trip is 2 × delay.
    let base = run(&scenario(OPEN, "5Mbit/s", "10ms", "", ""));
    let thr = |d: &str| {
        let s = run(&scenario(OPEN, "5Mbit/s", "10ms", &tap(d, "technique = \"triple-ack\"\nevery = 6"), ""));
        (s.flows[0].throughput_bps / base.flows[0].throughput_bps, s.flows[0].fast_retransmits)
    };
    let (near, fr_near) = thr("100us");
    let (far, fr_far) = thr("5ms");
    assert!(near < 0.5, "0.2 ms round trip: relative rate {near}");
    assert!(fr_near > 100);
    assert!(far > 0.95, "10 ms round trip: relative rate {far}");
    let fr_base = base.flows[0].fast_retransmits;
    assert!(
        fr_far <= fr_base + 1,
        "copies arriving after the next true ACK are old ACKs: {fr_far} vs {fr_base} unshaped"
    );
}

#[test]
fn tap_tables_are_checked() {
    for (body, key, want) in [
        ("mode = \"inline\"\nkind = \"tap\"\ntechnique = \"triple-ack\"", "middlebox[0].mode", "mirror"),
        ("mode = \"mirror\"\nkind = \"tap\"\ntechnique = \"triple-ack\"\nevery = 0", "middlebox[0].every", "≥ 1"),
        ("mode = \"mirror\"\nkind = \"tap\"\ntechnique = \"x\"", "middlebox[0].technique", "zero-window"),
        ("mode = \"mirror\"\nkind = \"tap\"", "middlebox[0].technique", "technique"),
        (
            "mode = \"mirror\"\nkind = \"tap\"\n[[middlebox.rule]]\ntechnique = \"triple-ack\"\ntarget = \"fast\"",
            "middlebox[0].rule[0].target",
            "rate",
        ),
    ] {
        let text =
            scenario(NS2, "5Mbit/s", "7.5ms", &format!("[[middlebox]]\nnode = \"r\"\nwan = \"down\"\n{body}\n"), "");
        let sc = parse(&text);
        let e = ackshape_sim::Sim::build(&sc, "tap.toml", None, Default::default()).err().expect(body).to_string();
        assert!(e.contains(&format!("tap.toml: key `{key}`")) && e.contains(want), "{body}\n=> {e}");
    }
}

fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(cmd)).find(|p| p.is_file()))
}

/// Injected copies carry the original's options (timestamps, SACK blocks) and valid checksums:
/// tshark validates every TCP checksum on the router → sender link and counts the copies as
/// duplicate ACKs.
#[test]
fn injected_acks_in_the_pcap_validate_in_tshark() {
    let Some(tshark) = which("tshark") else {
        panic!("tshark is not installed: run ./scripts/setup.sh (the test command does)");
    };
    let dir = std::env::temp_dir().join(format!("acks-tap-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("up_rev.pcap");
    // SACK + timestamps, a little loss so that some ACKs carry SACK blocks.
    let tcp = "cc = \"sack\"\nmss = 1448\ndelack = 1";
    let mut text = scenario(tcp, "10Mbit/s", "5ms", &tap("0s", "technique = \"triple-ack\"\nevery = 10"), "");
    text =
        text.replace("queue = \"50pkt\" },\n]", "queue = \"50pkt\", loss = { kind = \"periodic\", every = 97 } },\n]");
    let mut opts = RunOptions::default();
    let cap = ackshape_sim::pcap::PcapCapture::create(&path).unwrap();
    opts.captures.push(("up:rev".into(), Box::new(cap)));
    let (s, mut sim) = run_with(&text, opts);
    sim.finish_captures().unwrap();
    let inj = s.middleboxes[0]["stats"]["injections"].as_u64().unwrap();
    assert!(inj > 50);
    let count = |filter: &str| -> u64 {
        let o = Command::new(&tshark)
            .args(["-n", "-r"])
            .arg(&path)
            .args(["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"])
            .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
            .output()
            .unwrap();
        assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.is_empty()).count() as u64
    };
    let tcp = count("tcp");
    assert_eq!(count("tcp.checksum.status == \"Good\""), tcp);
    assert_eq!(count("tcp.checksum.status == \"Bad\" || ip.checksum.status == \"Bad\""), 0);
    let dup = count("tcp.analysis.duplicate_ack");
    assert!(dup >= 3 * inj, "tshark sees {dup} duplicate ACKs for {inj} injections of 3");
    assert!(count("tcp.options.timestamp.tsval && tcp.analysis.duplicate_ack") >= 3 * inj, "timestamps copied");
    let sack_dups = count("tcp.options.sack_le && tcp.analysis.duplicate_ack");
    assert!(sack_dups > 0, "some duplicated ACKs carry the original's SACK blocks");
    std::fs::remove_dir_all(&dir).ok();
}
