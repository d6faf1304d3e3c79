//! Paper 001 (TCP Rate Control) in quick mode: one run of the paper, its claims' statuses asserted
//! exactly against `tests/expect/p1.txt` (see `common/mod.rs`), every record complete, and the
//! vacuity check. docs/reproduction.md has the full run.
mod common;

#[test]
fn p1_quick_claims_match_the_expectation_table() {
    let outs = common::run_paper("P1", false);
    let ids: Vec<&str> = outs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["P1-T1-3", "P1-T4-6", "P1-T7-9", "P1-T10-12"]);
    common::check_records(&outs);
    common::check_expectations("P1", &outs);
    // One table per scheme, one row per quick speed, with the paper's cells beside ours.
    for t in ["table-1-red", "table-2-ecn", "table-3-tcp-rate-control"] {
        let t = outs[0].tables.iter().find(|x| x.name == t).unwrap_or_else(|| panic!("no {t}"));
        assert_eq!(t.rows.len(), 2, "{}", t.name);
        assert!(t.rows.iter().all(|r| r[2].is_number()), "{}: the paper's cell beside ours", t.name);
    }
}

#[test]
fn p1_claims_about_a_mechanism_do_not_hold_without_it() {
    let still = common::check_vacuity("P1");
    println!("hold without RED, ECN and TCR (claims about no mechanism): {still:?}");
}
