#!/usr/bin/env python3
"""The full (or quick) `reproduce` of some papers on a Dask LocalCluster of 1 and 2 workers against
the command line's `reproduce -j 2` (the reference), in one invocation: wall times, whether every
experiment's claims.json is byte-identical to the command line's, and what each batch of runs
cost, from which the wall time on W workers (16-100) is estimated.

    target/venv/bin/python scripts/bench_reproduce_dask.py OUT P2 [P3 ...] [--quick]
        [--workers 2,1] [--cli-out DIR]

--workers: the cluster sizes to run, in order (default 2,1; the estimate needs a 1-worker run, or uses the
first size's per-run times when there is none). --cli-out: compare with an existing command-line run of
the same papers, seed and mode in DIR (`ackshape reproduce ... --out DIR`) instead of running it here.

The estimate for W workers: every batch an experiment hands over is list-scheduled (in submission
order, each run to the first free worker, as Dask does with idle workers) from its runs' measured
times on 1 worker, plus the part of the experiment that is not a batch (evaluation, reports,
P4's simulations) as measured. It ignores the scheduler's per-task overhead (a few ms) and the
transfer of a run record (KB to MB).
"""

import concurrent.futures as cf
import heapq
import json
import pathlib
import subprocess
import sys
import time

import ackshape
from ackshape import _reproduce, _worker

ROOT = pathlib.Path(__file__).resolve().parents[1]


def timed_run(scenario, file, set, seed):
    t0 = time.perf_counter()
    text = _worker.run_record(scenario, file, set, seed)
    return text, time.perf_counter() - t0


class Log:
    """Wraps the package's batch submission: per batch, the runs' own times and its wall time."""

    def __init__(self):
        self.batches = []

    def submit_to(self, ex):
        def submit(jobs):
            t0 = time.perf_counter()
            futs = [ex.submit(timed_run, s, f, list(st), int(seed)) for s, f, st, seed in jobs]
            out, times = [], []
            for fut in futs:
                try:
                    text, dt = fut.result()
                    out.append((True, text))
                    times.append(dt)
                except Exception as e:  # noqa: BLE001
                    out.append((False, f"{type(e).__name__}: {e}"))
            self.batches.append({"runs": times, "wall": time.perf_counter() - t0})
            return out

        return submit


def same_part(path):
    """What must not depend on where the runs ran: the claims and tables of a claims.json (its
    provenance names the build, and its notes say how long the runs took)."""
    d = json.loads(path.read_text())
    return d["claims"], d["tables"]


def makespan(times, w):
    free = [0.0] * min(w, max(len(times), 1))
    for t in times:
        heapq.heapreplace(free, free[0] + t)
    return max(free)


def main():
    argv, opts = [], {}
    it = iter(sys.argv[1:])
    for a in it:
        if a in ("--workers", "--cli-out"):
            opts[a] = next(it)
        elif not a.startswith("--"):
            argv.append(a)
    quick = "--quick" in sys.argv
    out, papers = pathlib.Path(argv[0]), argv[1:]
    sizes = [int(w) for w in opts.get("--workers", "2,1").split(",")]
    from distributed import Client, LocalCluster

    cli = ROOT / "target/release/ackshape"
    res = {}
    if "--cli-out" in opts:
        cli_out = pathlib.Path(opts["--cli-out"])
    else:
        cli_out = out / "cli"
        t0 = time.perf_counter()
        subprocess.run([cli, "reproduce", *papers, "-q", "-j", "2", "--out", cli_out,
                        *(["--quick"] if quick else [])], check=True, capture_output=True)
        res["cli -j 2"] = time.perf_counter() - t0
        print(f"cli -j 2: {res['cli -j 2']:.1f} s", flush=True)
    logs = {}
    for n in sizes:
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0") as lc, \
                Client(lc) as client:
            client.wait_for_workers(n)
            log = Log()
            orig = _reproduce._submit_to
            _reproduce._submit_to = log.submit_to
            try:
                t0 = time.perf_counter()
                ackshape.reproduce(papers, quick=quick, executor=client, out=out / f"dask{n}")
                res[f"dask {n}"] = time.perf_counter() - t0
            finally:
                _reproduce._submit_to = orig
            logs[n] = log
            print(f"dask {n}: {res[f'dask {n}']:.1f} s, {len(log.batches)} batches, "
                  f"{sum(len(b['runs']) for b in log.batches)} runs", flush=True)
    same = {}
    for d in sorted(cli_out.iterdir()):
        if d.is_dir() and any(d.name.startswith(p + "-") or d.name == p for p in papers):
            c = same_part(d / "claims.json")
            same[d.name] = all(same_part(out / f"dask{n}" / d.name / "claims.json") == c for n in sizes)
    print("claims and tables of claims.json identical to the command line's:", json.dumps(same))
    print(f"all {len(same)} identical: {all(same.values())}")
    base = 1 if 1 in logs else sizes[0]
    one = logs[base]
    batch_wall = sum(b["wall"] for b in one.batches)
    rest = res[f"dask {base}"] - batch_wall
    runs = [t for b in one.batches for t in b["runs"]]
    print(f"{base} worker(s): {len(runs)} runs, summed run time {sum(runs):.1f} s, longest {max(runs):.1f} s, "
          f"largest batch {max(len(b['runs']) for b in one.batches)} runs; outside the batches {rest:.1f} s")
    for w in (1, 2, 16, 32, 64, 100):
        est = rest + sum(makespan(b["runs"], w) for b in one.batches)
        print(f"estimate {w:>3} workers: {est:8.1f} s  (x{res[f'dask {base}'] / est:.1f} over {base} measured)")
    (out / "bench.json").write_text(json.dumps({"times": res, "same": same, "batches": one.batches}))


if __name__ == "__main__":
    main()
