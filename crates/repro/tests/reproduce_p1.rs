//! Paper 001 (TCP Rate Control) in quick mode: the four experiments run, write their tables, and
//! the claims the model reproduces keep holding — TCR drops nothing and has a lower per-flow
//! goodput CoV than RED and a shorter queue than ECN, RED's drops grow with speed, TCR contains
//! the misbehaving sources. The full runs and their paper-vs-measured tables are in
//! docs/reproduction.md.
use ackshape_repro::{registry, select, Ctx, ExpOutput};

fn run(id: &str) -> ExpOutput {
    let all = registry();
    let e = select(&all, &[id.to_string()]).unwrap();
    assert_eq!(e.len(), 1);
    let mut ctx = Ctx { quick: true, seed: 1, progress: None };
    (e[0].run)(e[0], &mut ctx).unwrap_or_else(|err| panic!("{id}: {err}"))
}

fn holds(out: &ExpOutput, id: &str) -> bool {
    let c = out.claims.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("{}: no claim {id}", out.id));
    println!("{} {}: {} — {}", out.id, c.id, c.measured, c.holds);
    c.holds
}

#[test]
fn p1_experiments_run_quick_and_key_claims_hold() {
    let ids: Vec<&str> = registry().iter().filter(|e| e.id.starts_with("P1-")).map(|e| e.id).collect();
    assert_eq!(ids, ["P1-T1-3", "P1-T4-6", "P1-T7-9", "P1-T10-12"]);
    let long = run("P1-T1-3");
    for c in ["tcr-no-drops", "ecn-no-drops", "tcr-cov-below-red", "tcr-queue-below-ecn", "red-drops-grow-with-speed"] {
        assert!(holds(&long, c), "P1-T1-3 {c}");
    }
    // One table per scheme, one row per quick speed, with the paper's cells beside ours.
    for t in ["table-1-red", "table-2-ecn", "table-3-tcp-rate-control"] {
        let t = long.tables.iter().find(|x| x.name == t).unwrap_or_else(|| panic!("no {t}"));
        assert_eq!(t.rows.len(), 2, "{}", t.name);
    }
    let short = run("P1-T4-6");
    assert!(holds(&short, "tcr-cov-below-red"));
    let mis = run("P1-T7-9");
    for c in ["tcr-no-drops", "tcr-contains-misbehaving", "tcr-cov-below-red", "tcr-cov-below-ecn"] {
        assert!(holds(&mis, c), "P1-T7-9 {c}");
    }
    let remote = run("P1-T10-12");
    for c in ["tcr-no-drops", "ecn-no-drops", "red-drops-grow-with-speed"] {
        assert!(holds(&remote, c), "P1-T10-12 {c}");
    }
}
