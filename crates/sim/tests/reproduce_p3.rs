//! Paper 003's experiments (VPS, MulTCP, application-layer WRR) in quick mode: they are
//! registered, run in seconds, and produce well-formed claims, tables and plots. Whether the
//! claims hold is what `ackshape reproduce P3` (full mode) reports; docs/reproduction.md has the
//! full run's paper-vs-measured table.
use ackshape_sim::reproduce::{registry, select, Ctx, ExpOutput};

fn run(id: &str) -> ExpOutput {
    let all = registry();
    let e = select(&all, &[id.to_string()]).unwrap();
    assert_eq!(e.len(), 1);
    let mut ctx = Ctx { quick: true, seed: 1, progress: None };
    (e[0].run)(e[0], &mut ctx).unwrap_or_else(|err| panic!("{id}: {err}"))
}

#[test]
fn p3_experiments_run_quick_with_well_formed_claims() {
    let ids: Vec<&str> = registry().iter().filter(|e| e.id.starts_with("P3-")).map(|e| e.id).collect();
    assert_eq!(ids, ["P3-F2", "P3-F21", "P3-F24", "P3-F30", "P3-F32", "P3-F36", "P3-F40"]);
    for id in ids {
        let out = run(id);
        assert!(out.claims.len() >= 3, "{id}: {} claims", out.claims.len());
        for c in &out.claims {
            for (k, s) in [("id", &c.id), ("claim", &c.claim), ("paper", &c.paper), ("tolerance", &c.tolerance)] {
                assert!(!s.is_empty() && !s.contains('\n'), "{id}: `{k}` of {c:?}");
            }
            // Computed, not placeholders: every measurement states a number.
            assert!(c.measured.chars().any(|ch| ch.is_ascii_digit()), "{id}: {c:?}");
            println!("{id} {}: {} — {}", c.id, c.measured, c.holds);
        }
        let mut claim_ids: Vec<&str> = out.claims.iter().map(|c| c.id.as_str()).collect();
        claim_ids.sort();
        claim_ids.dedup();
        assert_eq!(claim_ids.len(), out.claims.len(), "{id}: claim IDs are unique");
        assert!(!out.tables.is_empty(), "{id}: no table");
        for t in &out.tables {
            assert!(!t.rows.is_empty(), "{id}: table {} is empty", t.name);
            assert!(t.rows.iter().all(|r| r.len() == t.columns.len()), "{id}: table {} ragged", t.name);
        }
        assert!(!out.plots.is_empty(), "{id}: no plot");
        for (name, plot) in &out.plots {
            let r = plot.render();
            assert!(name.ends_with(".svg") && r.svg.starts_with("<svg"), "{id}: plot {name}");
            assert!(r.problems.is_empty(), "{id}: plot {name}: {:?}", r.problems);
        }
    }
}

/// Same seed, same claims: the quick P3-F30 sweep (VPS, MulTCP and the paired TCP runs) twice.
#[test]
fn p3_quick_is_deterministic() {
    let a = run("P3-F30");
    let b = run("P3-F30");
    let m = |o: &ExpOutput| o.claims.iter().map(|c| (c.id.clone(), c.measured.clone())).collect::<Vec<_>>();
    assert_eq!(m(&a), m(&b));
}
