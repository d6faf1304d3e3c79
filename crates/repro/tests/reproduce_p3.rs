//! Paper 003 (VPS, MulTCP, application-layer WRR) in quick mode: one run of the paper, its claims'
//! statuses asserted exactly against `tests/expect/p3.txt` (see `common/mod.rs`), every record
//! complete, well-formed tables and plots, and the vacuity check. docs/reproduction.md has the full
//! run.
mod common;

#[test]
fn p3_quick_claims_match_the_expectation_table() {
    let outs = common::run_paper("P3", false);
    let ids: Vec<&str> = outs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["P3-F2", "P3-F21", "P3-F24", "P3-F30", "P3-F32", "P3-F36", "P3-F40"]);
    common::check_records(&outs);
    common::check_expectations("P3", &outs);
    for o in &outs {
        assert!(!o.tables.is_empty() && !o.plots.is_empty(), "{}", o.id);
        for t in &o.tables {
            assert!(!t.rows.is_empty(), "{}: table {} is empty", o.id, t.name);
            assert!(t.rows.iter().all(|r| r.len() == t.columns.len()), "{}: table {} ragged", o.id, t.name);
        }
        for (name, plot) in &o.plots {
            let r = plot.render();
            assert!(name.ends_with(".svg") && r.svg.starts_with("<svg"), "{}: plot {name}", o.id);
            assert!(r.problems.is_empty(), "{}: plot {name}: {:?}", o.id, r.problems);
        }
    }
    // The thesis's accuracy (whole run) is the primary; 5-s windows are reported beside it.
    let f32 = &outs[4];
    let acc = f32.claims.iter().find(|c| c.claim_id == "vps-accuracy" && c.primary).unwrap();
    let win = f32.claims.iter().find(|c| c.claim_id == "vps-accuracy-windows").unwrap();
    assert!(!acc.supplementary && win.supplementary);
}

#[test]
fn p3_claims_about_a_mechanism_do_not_hold_without_it() {
    let still = common::check_vacuity("P3");
    println!("hold without VPS, MulTCP and WRR (claims about no mechanism): {still:?}");
}
