//! The reproductions' runs through a sweep's [`Runner`] (what `reproduce --dask` and
//! `ackshape.reproduce(executor=…)` use): each run goes out as its resolved scenario and comes back
//! as a run record's text, and the claims, tables and notes must be exactly those of the runs made
//! on threads here. The runner below runs the jobs on threads of this process through that same
//! text, and counts them, so the test fails if the experiments bypass it.

use ackshape_repro::{registry, run_experiment, Ctx, ExpOutput, RunJob, RunRecord, Runner};
use ackshape_sim::sweep::Threads;

struct Counting {
    jobs: usize,
    inner: Threads,
}

impl Runner for Counting {
    fn run(
        &mut self,
        jobs: &[RunJob],
        keep: &(dyn Fn(&RunJob, &str) -> Result<(), String> + Sync),
        progress: &mut dyn FnMut(usize),
    ) -> Vec<Result<String, String>> {
        assert!(jobs.iter().all(|j| j.record), "a reproduction's job must ask for a run record");
        self.jobs += jobs.len();
        let out = self.inner.run(jobs, keep, progress);
        // What came back is a record whose text is stable (encode ∘ decode = identity).
        for t in out.iter().flatten() {
            assert_eq!(&RunRecord::from_text(t).expect("a run record").to_text(), t);
        }
        out
    }
}

/// What must not depend on where the runs ran: everything written but the run times (some
/// experiments' notes carry them).
fn key(o: &ExpOutput) -> String {
    let claims = serde_json::to_string_pretty(&o.claims).unwrap();
    let tables = serde_json::to_string(&o.tables).unwrap();
    format!("{claims}\n{tables}\n{:?}", o.activity)
}

/// Run `id` in quick mode here and through a counting runner: (local, through the runner, runs
/// that went through it).
fn both(id: &str) -> (ExpOutput, ExpOutput, usize) {
    let all = registry();
    let exp = all.iter().find(|e| e.id == id).unwrap_or_else(|| panic!("{id} is registered"));
    let local = run_experiment(exp, &mut Ctx::new(true, 1)).unwrap_or_else(|e| panic!("{id}: {e}"));
    let mut runner = Counting { jobs: 0, inner: Threads(2) };
    let elsewhere = {
        let mut ctx = Ctx { runner: Some(&mut runner), ..Ctx::new(true, 1) };
        run_experiment(exp, &mut ctx).unwrap_or_else(|e| panic!("{id} through the runner: {e}"))
    };
    println!("{id}: {} runs through the runner, {} claim records", runner.jobs, elsewhere.claims.len());
    (local, elsewhere, runner.jobs)
}

#[test]
fn quick_experiments_through_a_runner_equal_the_local_runs() {
    // One experiment of each kind of batch: P2's plain summaries, P2-F8's goodput series, P3's
    // per-flow bins, P0's edge-gateway jobs, P4's tap runs.
    for id in ["P2-F3", "P2-F8", "P3-F2", "P0-F8", "P4-F7"] {
        let (local, elsewhere, jobs) = both(id);
        assert!(jobs > 0, "{id}: no run went through the runner");
        assert_eq!(key(&local), key(&elsewhere), "{id}: the runner's results differ from the local ones");
    }
}

/// P4's zero-window experiments read each run's sender TCP counters (the zero windows it accepted
/// and how long its window stayed closed), which the summary does not carry: they come back in
/// the run record.
#[test]
fn sender_stats_come_back_through_the_runner() {
    for id in ["P4-F8", "P4-S4.2b"] {
        let (local, elsewhere, jobs) = both(id);
        assert!(jobs > 0, "{id}: no run went through the runner");
        // The ns2 sender accepts the copies' zero windows (RFC 793's window rule), so the counter is
        // not zero here, and a record that lost it would differ.
        let accepted = |o: &ExpOutput| o.activity.get("zero-window/ns2").copied().unwrap_or(0.0);
        println!(
            "{id}: zero windows accepted by the ns2 sender: {} here, {} through the runner",
            accepted(&local),
            accepted(&elsewhere)
        );
        assert!(accepted(&local) > 0.0, "{id}: the ns2 sender accepted no zero window: {:?}", local.activity);
        assert_eq!(key(&local), key(&elsewhere), "{id}: the runner's results differ from the local ones");
        // P4's notes carry no run times; P4-F8's quote the counters (zero windows, time closed).
        assert_eq!(local.notes, elsewhere.notes, "{id}: the notes differ");
    }
}
