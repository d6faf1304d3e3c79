//! Paper 000 (TCR and PostACK at an edge gateway) in quick mode: one run of the paper, its claims'
//! statuses asserted exactly against `tests/expect/p0.txt` (see `common/mod.rs`), every record
//! complete, and the vacuity check. docs/reproduction.md has the full run.
mod common;

#[test]
fn p0_quick_claims_match_the_expectation_table() {
    let outs = common::run_paper("P0", false);
    let ids: Vec<&str> = outs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["P0-F8", "P0-F9", "P0-F10", "P0-F11", "P0-F12", "P0-F16"]);
    common::check_records(&outs);
    common::check_expectations("P0", &outs);
    // Fig. 8's table: with 32 flows class-only shaping retransmits a large share with a 1-packet FIFO
    // and less with 81; TCR paced per flow drops nothing with 81 packets.
    let f8 = &outs[0];
    let t = f8.tables.iter().find(|t| t.name == "fig8").unwrap();
    let row = |s: &str, n: u64, q: u64| {
        t.rows.iter().find(|r| r[0] == s && r[1] == n && r[2] == q).unwrap_or_else(|| panic!("{s} {n} {q}"))
    };
    let retx = |s: &str, q: u64| row(s, 32, q)[4].as_f64().unwrap();
    assert!(retx("class-fifo", 1) > 0.1 && retx("class-fifo", 1) > retx("class-fifo", 81));
    assert_eq!(row("tcr/per-flow", 32, 81)[5].as_u64(), Some(0), "no drops with 81 packets at 32 flows");
    // Fig. 9 plots the model beside the simulation.
    assert!(outs[1]
        .plots
        .iter()
        .any(|(n, p)| n.contains("fig9d") && p.series_names().iter().any(|s| s.contains("model"))));
}

#[test]
fn p0_claims_about_a_mechanism_do_not_hold_without_it() {
    let still = common::check_vacuity("P0");
    println!("hold without TCR and PostACK (claims about no mechanism): {still:?}");
}
