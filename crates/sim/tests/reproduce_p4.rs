//! Paper 004's experiments in quick mode: they run, write their tables, and the claims that the
//! model reproduces keep holding (the tap's hard switch, the controller's hold, zero-window's
//! lack of retransmissions). The full runs and their paper-vs-measured tables are in
//! docs/reproduction.md.
use ackshape_sim::reproduce::{registry, select, Ctx};

fn run(id: &str) -> ackshape_sim::reproduce::ExpOutput {
    let all = registry();
    let e = select(&all, &[id.to_string()]).unwrap();
    assert_eq!(e.len(), 1);
    let mut ctx = Ctx { quick: true, seed: 1, progress: None };
    (e[0].run)(e[0], &mut ctx).unwrap_or_else(|err| panic!("{id}: {err}"))
}

fn holds(out: &ackshape_sim::reproduce::ExpOutput, id: &str) -> bool {
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
    let s = run("P4-S4.2b");
    assert!(holds(&s, "hard-switch-triple-ack-ns2"));
    assert!(holds(&s, "hard-switch-triple-ack-modern"));
    let f8 = run("P4-F8");
    assert!(holds(&f8, "no-retransmissions-ns2") && holds(&f8, "no-retransmissions-modern"));
    let f7 = run("P4-F7");
    let t = f7.tables.iter().find(|t| t.name == "max_reduction_vs_f").unwrap();
    assert_eq!(t.rows.len(), 2 * 4, "two profiles × the quick f values");
    // ns-2 profile: f = 1 raises the rate, f = 6 cuts it by ~80%.
    let row = |p: &str, f: f64| t.rows.iter().find(|r| r[0] == p && r[1] == f).unwrap()[2].as_f64().unwrap();
    assert!(row("ns2", 1.0) < 0.01, "{}", row("ns2", 1.0));
    assert!(row("ns2", 6.0) > 0.7, "{}", row("ns2", 6.0));
    for id in ["P4-F6", "P4-S4.1a"] {
        let o = run(id);
        assert!(!o.claims.is_empty() && !o.tables.is_empty(), "{id}");
    }
}
