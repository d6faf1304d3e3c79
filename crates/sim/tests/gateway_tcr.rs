//! TCR (`mechanism = { kind = "tcr" }`) in the edge gateway: flows of one class get equal
//! shares with a data queue of a few packets, where the class alone (a FIFO) fills its queue.
mod common;
use common::*;

/// Dumbbell whose 100 Mbit/s bottleneck is not the limit: the gateway's 10 Mbit/s class is.
/// `n` bulk SACK flows (delayed ACKs, 4 MiB windows, timestamps), RTT ≈ 44 ms.
fn scenario(n: u32, mechanism: &str, extra_tcp: &str) -> String {
    gateway_dumbbell(
        &format!("seed = 7\nduration = \"40s\"\nwarmup = \"10s\"\n[tcp]\ncc = \"sack\"\n{extra_tcp}"),
        n,
        &format!(
            r#"policy = {{ class = [{{ name = "bulk", rate = "10Mbit/s", queue = "1000pkt", mechanism = {mechanism} }}], rule = [{{ class = "bulk" }}] }}"#
        ),
    )
}

fn cov(x: &[f64]) -> f64 {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    (x.iter().map(|g| (g - m).powi(2)).sum::<f64>() / x.len() as f64).sqrt() / m
}

struct Out {
    goodput: Vec<f64>,
    q_avg: f64,
    q_max: u64,
    drops: u64,
    stats: serde_json::Value,
}

fn go(n: u32, mechanism: &str, extra_tcp: &str) -> Out {
    let s = run(&scenario(n, mechanism, extra_tcp));
    let c = &s.middleboxes[0]["stats"]["classes"]["bulk"];
    let o = Out {
        goodput: s.flows.iter().map(|f| f.goodput_bps).collect(),
        q_avg: c["data_queue_avg_pkts"].as_f64().unwrap(),
        q_max: c["data_queue_max_pkts"].as_u64().unwrap(),
        drops: c["drops"].as_u64().unwrap(),
        stats: c["mechanism_stats"].clone(),
    };
    eprintln!(
        "{mechanism} {extra_tcp}: goodput {:?} total {:.3} Mbit/s CoV {:.4}; class queue avg {:.2} max {} drops {}",
        o.goodput.iter().map(|g| (g / 1e3).round() / 1e3).collect::<Vec<_>>(),
        o.goodput.iter().sum::<f64>() / 1e6,
        cov(&o.goodput),
        o.q_avg,
        o.q_max,
        o.drops
    );
    o
}

#[test]
fn four_flows_get_fair_shares_with_a_small_data_queue() {
    let tcr = go(4, r#"{ kind = "tcr" }"#, "");
    let fifo = go(4, r#"{ kind = "none" }"#, "");
    // 1448-byte payloads in 1500-byte packets.
    let ceiling = 10e6 * 1448.0 / 1500.0;
    let total: f64 = tcr.goodput.iter().sum();
    assert!(cov(&tcr.goodput) <= 0.1, "CoV {}", cov(&tcr.goodput));
    assert!(total >= 0.95 * ceiling, "total {total} of {ceiling}");
    assert_eq!(tcr.drops, 0);
    assert!(tcr.q_avg <= 5.0, "TCR data queue avg {}", tcr.q_avg);
    assert!(fifo.q_avg >= 20.0 * tcr.q_avg.max(1.0), "FIFO data queue avg {} vs TCR {}", fifo.q_avg, tcr.q_avg);
    let st = &tcr.stats["outbound"];
    assert!(st["window_rewrites"].as_u64().unwrap() > 1000, "{st}");
    assert!(st["acks_paced"].as_u64().unwrap() > 1000, "{st}");
    assert_eq!(st["per_flow"].as_array().unwrap().len(), 4, "{st}");
}

#[test]
fn paper_000_variant_and_receivers_without_delayed_acks() {
    for (mech, tcp) in [
        (r#"{ kind = "tcr", pacing = "class-tick", allocation = "equal" }"#, ""),
        (r#"{ kind = "tcr" }"#, "delack = 1"),
        (r#"{ kind = "tcr", release = "receiver-ack" }"#, ""),
    ] {
        let o = go(4, mech, tcp);
        let total: f64 = o.goodput.iter().sum();
        assert!(cov(&o.goodput) <= 0.1, "{mech} {tcp}: CoV {}", cov(&o.goodput));
        assert!(total >= 0.93 * 10e6 * 1448.0 / 1500.0, "{mech} {tcp}: total {total}");
        assert!(o.drops == 0 && o.q_avg <= 8.0, "{mech} {tcp}: queue avg {} drops {}", o.q_avg, o.drops);
    }
}

#[test]
fn bad_tcr_settings_name_their_key() {
    let sc = parse(&scenario(1, r#"{ kind = "tcr", pacing = "sometimes" }"#, ""));
    let e = ackshape_sim::Sim::build(&sc, "gw.toml", None, Default::default()).err().unwrap().to_string();
    assert!(e.contains("mechanism.pacing"), "{e}");
}
