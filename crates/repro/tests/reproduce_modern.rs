//! The modern-baselines study (`M-*`: each paper's headline set-up against FQ-CoDel, PIE, the CAKE-like
//! shaper, with Reno, CUBIC and BBR senders) in quick mode: its questions' statuses asserted exactly
//! against `tests/expect/m.txt` (see `common/mod.rs`), every record complete, every discipline × cc
//! cell measured, and the vacuity check. docs/modern-baselines.md has the full run.
mod common;

#[test]
fn study_quick_claims_match_the_expectation_table() {
    let outs = common::run_paper("M", false);
    let ids: Vec<&str> = outs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["M-P0", "M-P1", "M-P2", "M-P4"]);
    common::check_records(&outs);
    common::check_expectations("M", &outs);
    for o in &outs {
        let t = o.tables.iter().find(|t| t.name == "results").unwrap_or_else(|| panic!("{}: no results table", o.id));
        // Every discipline ran with the three senders, and every metric but the short transfers'
        // completion time (none may finish in a starved run) has a number in every cell.
        let ccs: Vec<&str> = t.rows.iter().map(|r| r[1].as_str().unwrap()).collect();
        for cc in ["reno", "cubic", "bbr"] {
            assert_eq!(ccs.iter().filter(|c| **c == cc).count() * 3, ccs.len(), "{}: {cc}", o.id);
        }
        for r in &t.rows {
            for (i, c) in t.columns.iter().enumerate().skip(2) {
                if !c.starts_with("short-transfer") {
                    assert!(r[i].is_number(), "{} {:?} {}: {}", o.id, &r[..2], c, r[i]);
                }
            }
        }
        assert_eq!(o.plots.len() * 2, t.columns.len() - 2, "{}: one plot per metric", o.id);
    }
    // The tap injected in every tap run, and a Reno sender slows down under triple-ACK copies of every
    // 6th ACK (fast retransmits it did not need): the mechanism is live in this set-up.
    let m4 = outs.iter().find(|o| o.id == "M-P4").unwrap();
    assert!(m4.activity["tap"] > 0.0);
    let t = &m4.tables[0];
    let good = |d: &str, cc: &str| t.rows.iter().find(|r| r[0] == d && r[1] == cc).unwrap()[2].as_f64().unwrap();
    assert!(good("triple-ACK f=6", "reno") < good("no tap", "reno"));
    // The report answers the study's questions; it has no paper to reproduce, so no verdict.
    let exp = ackshape_repro::registry().into_iter().find(|e| e.id == "M-P4").unwrap();
    let report = ackshape_repro::markdown(m4, &exp, true);
    let (h, f, n) = ackshape_repro::claims::counts(&m4.claims);
    assert!(
        report.contains(&format!(
            "**Answers: {h} of {} questions hold, {f} fail, {n} not assessable (quick run).**",
            h + f + n
        )),
        "{report}"
    );
    assert!(report.contains("docs/modern-baselines.md") && report.contains("## Questions ("), "{report}");
    assert!(!report.contains("Verdict"), "{report}");
}

#[test]
fn study_claims_about_a_mechanism_do_not_hold_without_it() {
    let still = common::check_vacuity("M");
    // Only the baseline questions (no ACK-control mechanism) may still hold.
    println!("hold with every ACK-control mechanism off (baseline questions): {still:?}");
    for s in &still {
        assert!(
            [
                "M-P0 pfq-jain-vs-fqcodel-bbr",
                "M-P1 fqcodel-short-vs-fifo-bbr",
                "M-P2 cake-util-over-fifo-cubic",
                "M-P2 fqcodel-upload-over-fifo-bbr"
            ]
            .contains(&s.as_str()),
            "{s}"
        );
    }
}
