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

/// What must not depend on where the runs ran: everything written but the run times.
fn key(o: &ExpOutput) -> String {
    let claims = serde_json::to_string_pretty(&o.claims).unwrap();
    let tables = serde_json::to_string(&o.tables).unwrap();
    format!("{claims}\n{tables}\n{:?}", o.activity)
}

#[test]
fn quick_experiments_through_a_runner_equal_the_local_runs() {
    let all = registry();
    // One experiment of each kind of batch: P2's plain summaries, P2-F8's goodput series, P3's
    // per-flow bins, P0's edge-gateway jobs.
    for id in ["P2-F3", "P2-F8", "P3-F2", "P0-F8"] {
        let exp = all.iter().find(|e| e.id == id).unwrap_or_else(|| panic!("{id} is registered"));
        let local = run_experiment(exp, &mut Ctx::new(true, 1)).unwrap_or_else(|e| panic!("{id}: {e}"));
        let mut runner = Counting { jobs: 0, inner: Threads(2) };
        let elsewhere = {
            let mut ctx = Ctx {
                quick: true,
                seed: 1,
                progress: None,
                mechanism_off: false,
                readings: true,
                runner: Some(&mut runner),
            };
            run_experiment(exp, &mut ctx).unwrap_or_else(|e| panic!("{id} through the runner: {e}"))
        };
        println!("{id}: {} runs through the runner, {} claim records", runner.jobs, elsewhere.claims.len());
        assert!(runner.jobs > 0, "{id}: no run went through the runner");
        assert_eq!(key(&local), key(&elsewhere), "{id}: the runner's results differ from the local ones");
    }
}
