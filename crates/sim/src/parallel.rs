//! Independent jobs on a pool of threads, results in job order (sweeps and the paper reproductions).

use std::sync::atomic::{AtomicUsize, Ordering};

static WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Number of worker threads for [`run_parallel`] callers that do not choose: set by [`set_workers`] (the CLI's `--jobs`),
/// else the machine's available parallelism.
pub fn workers() -> usize {
    match WORKERS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    }
}

/// Set the number of worker threads (0 = the machine's available parallelism).
pub fn set_workers(n: usize) {
    WORKERS.store(n, Ordering::Relaxed);
}

/// Apply `f` to every job on `workers` threads (scoped; a shared counter hands out the next job).
/// Returns the results in the order of `jobs`, whatever the number of workers or the order in
/// which jobs finish, so deterministic jobs give identical output with 1 or N workers.
/// `on_done(k)` is called on the calling thread after each completion with the number done.
pub fn run_parallel<J, T, F>(jobs: &[J], workers: usize, f: F, on_done: &mut dyn FnMut(usize)) -> Vec<T>
where
    J: Sync,
    T: Send,
    F: Fn(&J) -> T + Sync,
{
    let workers = workers.clamp(1, jobs.len().max(1));
    let mut out: Vec<Option<T>> = (0..jobs.len()).map(|_| None).collect();
    if workers == 1 {
        for (i, j) in jobs.iter().enumerate() {
            out[i] = Some(f(j));
            on_done(i + 1);
        }
    } else {
        let next = AtomicUsize::new(0);
        let (tx, rx) = std::sync::mpsc::channel::<(usize, T)>();
        std::thread::scope(|s| {
            for _ in 0..workers {
                let tx = tx.clone();
                let (next, f) = (&next, &f);
                s.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    if tx.send((i, f(j))).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (done, (i, r)) in rx.iter().enumerate() {
                out[i] = Some(r);
                on_done(done + 1);
            }
        });
    }
    out.into_iter().map(|r| r.expect("every job ran")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_parallel_keeps_job_order_and_reports_progress() {
        let jobs: Vec<u64> = (0..37).collect();
        // Uneven work so that completions come out of order with several workers.
        let f = |&j: &u64| (0..(37 - j) * 2000).fold(j, |a, k| a.wrapping_mul(6364136223846793005).wrapping_add(k));
        let mut seen = Vec::new();
        let one = run_parallel(&jobs, 1, f, &mut |k| seen.push(k));
        assert_eq!(seen, (1..=37).collect::<Vec<_>>());
        for w in [2, 3, 8, 100] {
            let mut count = 0;
            let many = run_parallel(&jobs, w, f, &mut |k| {
                count += 1;
                assert_eq!(k, count);
            });
            assert_eq!(many, one, "{w} workers");
            assert_eq!(count, 37);
        }
        assert!(run_parallel(&Vec::<u64>::new(), 4, f, &mut |_| panic!("no jobs")).is_empty());
    }
}
