//! Paper 004's experiments in quick mode: they run, write their tables, and the claims that the
//! model reproduces keep holding (the tap's hard switch, the controller's hold, zero-window's
//! lack of retransmissions). The full runs and their paper-vs-measured tables are in
//! docs/reproduction.md.
use ackshape_repro::{registry, select, Ctx};

fn run(id: &str) -> ackshape_repro::ExpOutput {
    let all = registry();
    let e = select(&all, &[id.to_string()]).unwrap();
    assert_eq!(e.len(), 1);
    let mut ctx = Ctx { quick: true, seed: 1, progress: None };
    (e[0].run)(e[0], &mut ctx).unwrap_or_else(|err| panic!("{id}: {err}"))
}

fn holds(out: &ackshape_repro::ExpOutput, id: &str) -> bool {
    let c = out.claims.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("{}: no claim {id}", out.id));
    println!("{}: {} — {}", c.id, c.measured, c.holds);
    c.holds
}

#[test]
fn p4_experiments_run_quick_and_key_claims_hold() {
    let ids: Vec<&str> = registry().iter().filter(|e| e.id.starts_with("P4-")).map(|e| e.id).collect();
    assert_eq!(ids.len(), 6, "{ids:?}");
    let a3 = run("P4-A3");
    assert_eq!(a3.claims.len(), 6);
    for c in &a3.claims {
        assert!(c.holds, "{}: {}", c.id, c.measured);
    }
    // Both targets (50% and 25% of the unshaped rate) in each of the three senders.
    for case in ["ns2-reno", "modern-cubic", "modern-sack"] {
        for pct in [50, 25] {
            assert!(a3.claims.iter().any(|c| c.id == format!("hold-{case}-{pct}")), "no claim hold-{case}-{pct}");
        }
    }
    let s = run("P4-S4.2b");
    assert!(holds(&s, "hard-switch-triple-ack-modern"));
    // ns2: the same reduction at every shaper round trip below the inter-ACK gap g; above it
    // only the triples copied from the last ACK of a window (an idle gap follows it) still reach
    // the sender in time, so most injections stop causing fast retransmits.
    let _ = holds(&s, "hard-switch-triple-ack-ns2");
    let t = s.tables.iter().find(|t| t.name == "delay_sweep").unwrap();
    let rows: Vec<_> = t.rows.iter().filter(|r| r[0] == "ns2" && r[1] == "triple-ack f=6").collect();
    // Columns: round_trip_gaps 2, reduction 4, fast_retransmits 6, injections 7.
    let num = |r: &[serde_json::Value], c: usize| r[c].as_f64().unwrap();
    let r0 = rows.iter().find(|r| r[2] == 0.0).unwrap();
    assert!(num(r0, 4) > 0.5 && num(r0, 6) == num(r0, 7), "undelayed: every injection fast-retransmits");
    for r in &rows {
        let k = num(r, 2);
        if k < 1.0 {
            assert_eq!(num(r, 4), num(r0, 4), "{k} g");
        } else if k >= 2.0 {
            assert!(num(r, 6) < 0.25 * num(r, 7), "{k} g: {} fast retransmits of {} injections", num(r, 6), num(r, 7));
        }
    }
    let f8 = run("P4-F8");
    assert!(holds(&f8, "no-retransmissions-ns2") && holds(&f8, "no-retransmissions-modern"));
    let f7 = run("P4-F7");
    assert!(holds(&f7, "f1-increase-ns2"), "duplicating every ACK raises the ns-2 sender's throughput");
    let t = f7.tables.iter().find(|t| t.name == "max_reduction_vs_f").unwrap();
    assert_eq!(t.rows.len(), 3 * 4, "two profiles and the ns2 count sensitivity × the quick f values");
    // ns-2 profile: f = 1 raises the rate, f = 6 cuts it by more than half.
    let cell = |p: &str, f: f64, c: usize| t.rows.iter().find(|r| r[0] == p && r[1] == f).unwrap()[c].as_f64().unwrap();
    assert!(cell("ns2", 1.0, 2) < 0.01, "{}", cell("ns2", 1.0, 2));
    assert!(cell("ns2", 6.0, 2) > 0.5, "{}", cell("ns2", 6.0, 2));
    // Reno retransmits exactly one segment per triple, and the receiver answers it with one
    // duplicate ACK: counting all ACKs, f − 1 of every f are new (goodput (f − 1)/f, the paper's
    // 83% at f = 6); counting new ACKs only, f of f + 1 segments are new.
    for f in [6.0, 20.0] {
        let all = cell("ns2", f, 5);
        let new = cell("ns2 (count = new-acks)", f, 5);
        assert!((all - (f - 1.0) / f).abs() < 0.01, "f = {f}: {all}");
        assert!((new - f / (f + 1.0)).abs() < 0.01, "f = {f}: {new}");
    }
    for id in ["P4-F6", "P4-S4.1a"] {
        let o = run(id);
        assert!(!o.claims.is_empty() && !o.tables.is_empty(), "{id}");
    }
}
