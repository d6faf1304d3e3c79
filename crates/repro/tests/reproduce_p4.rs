//! Paper 004 (third-party flow control) in quick mode: one run of the paper, its claims' statuses
//! asserted exactly against `tests/expect/p4.txt` (see `common/mod.rs`), every record complete, the
//! mechanisms' arithmetic in the tables, and the vacuity check. docs/reproduction.md has the full run.
mod common;

#[test]
fn p4_quick_claims_match_the_expectation_table() {
    let outs = common::run_paper("P4", false);
    let ids: Vec<&str> = outs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["P4-A3", "P4-F6", "P4-F7", "P4-F8", "P4-S4.1a", "P4-S4.2b"]);
    common::check_records(&outs);
    common::check_expectations("P4", &outs);
    let get = |id: &str| outs.iter().find(|o| o.id == id).unwrap();
    // The controller (not in the paper: supplementary) holds both targets in each of the three senders.
    let a3 = get("P4-A3");
    assert_eq!(a3.claims.len(), 6);
    assert!(a3.claims.iter().all(|c| c.supplementary));
    // Shaper delay, ns2: the same reduction at every shaper round trip below the inter-ACK gap g; from
    // 2 g on only triples copied from the last ACK of a window (an idle gap follows it) still act.
    let t = get("P4-S4.2b").tables.iter().find(|t| t.name == "delay_sweep").unwrap();
    let rows: Vec<_> = t.rows.iter().filter(|r| r[0] == "ns2" && r[1] == "triple-ack f=6").collect();
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
    // F7: ns-2 profile, f = 1 raises the rate, f = 6 cuts it by more than half; Reno retransmits exactly
    // one segment per triple and the receiver answers it with one duplicate ACK: counting all ACKs,
    // goodput is (f - 1)/f (the paper's 83% at f = 6); counting new ACKs only, f/(f + 1).
    let t = get("P4-F7").tables.iter().find(|t| t.name == "max_reduction_vs_f").unwrap();
    assert_eq!(t.rows.len(), 3 * 5, "two profiles and the ns2 count sensitivity × the quick f values");
    let cell = |p: &str, f: f64, c: usize| t.rows.iter().find(|r| r[0] == p && r[1] == f).unwrap()[c].as_f64().unwrap();
    assert!(cell("ns2", 1.0, 2) < 0.01, "{}", cell("ns2", 1.0, 2));
    assert!(cell("ns2", 6.0, 2) > 0.5, "{}", cell("ns2", 6.0, 2));
    for f in [6.0, 20.0] {
        let all = cell("ns2", f, 5);
        let new = cell("ns2 (count = new-acks)", f, 5);
        assert!((all - (f - 1.0) / f).abs() < 0.01, "f = {f}: {all}");
        assert!((new - f / (f + 1.0)).abs() < 0.01, "f = {f}: {new}");
    }
    // F8: the modern sender ignores every zero-window copy (Linux's window rule), so its claims
    // cannot be assessed; the ns2 sender takes them and still loses nothing.
    let f8 = get("P4-F8");
    for c in f8.claims.iter().filter(|c| c.claim_id.ends_with("-modern")) {
        assert_eq!(c.status, ackshape_repro::Status::NotAssessable, "{}: {}", c.claim_id, c.measured);
    }
}

#[test]
fn p4_claims_about_a_mechanism_do_not_hold_without_it() {
    let still = common::check_vacuity("P4");
    assert!(still.is_empty(), "every P4 claim is about the tap: {still:?}");
}
