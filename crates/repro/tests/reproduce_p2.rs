//! Paper 002 (ACKs-first variable-size queuing) in quick mode: one run of the paper, its claims'
//! statuses asserted exactly against `tests/expect/p2.txt` (see `common/mod.rs`), every record
//! complete, and the vacuity check. docs/reproduction.md has the full run.
mod common;

#[test]
fn p2_quick_claims_match_the_expectation_table() {
    let outs = common::run_paper("P2", false);
    let ids: Vec<&str> = outs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["P2-F3", "P2-F8", "P2-F9", "P2-F10", "P2-F11", "P2-S2b"]);
    common::check_records(&outs);
    common::check_expectations("P2", &outs);
    // P2-F3 and P2-S2b report each hosts'-window reading beside the primary.
    for o in [&outs[0], &outs[5]] {
        let readings: std::collections::BTreeSet<&str> =
            o.claims.iter().filter(|c| !c.primary).map(|c| c.reading.as_str()).collect();
        assert!(readings.len() >= 2, "{}: {readings:?}", o.id);
    }
}

#[test]
fn p2_claims_about_a_mechanism_do_not_hold_without_it() {
    let still = common::check_vacuity("P2");
    println!("hold without the asymmetric-link disciplines (claims about no mechanism): {still:?}");
}
