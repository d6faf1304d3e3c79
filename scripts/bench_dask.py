#!/usr/bin/env python3
"""Scaling of a sweep over 1 and 2 workers: the command line's threads (`ackshape sweep -j N`, the
reference), the Python package on a local process pool, and on a Dask LocalCluster, alternating in
one invocation; wall time and the speed-up of 2 workers over 1 for each.

    target/venv/bin/python scripts/bench_dask.py [ROUNDS]

The sweep: 45 runs (3 bottleneck rates x 3 disciplines x 5 seeds of the embedded 60-s, 10-flow
example), no result store (every run computed). Every way gives the same numbers (checked).
"""

import concurrent.futures as cf
import pathlib
import statistics
import subprocess
import sys
import time

import ackshape

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASE = ROOT / "experiments/examples/dumbbell.toml"
GRID = {
    "topology.bottleneck.rate": ["5Mbit/s", "10Mbit/s", "20Mbit/s"],
    "topology.bottleneck.qdisc": [{"kind": "fifo"}, {"kind": "red"}, {"kind": "drr"}],
}
CLI_SETS = [
    "--set", "topology.bottleneck.rate=5Mbit/s,10Mbit/s,20Mbit/s",
    "--set", 'topology.bottleneck.qdisc={ kind = "fifo" },{ kind = "red" },{ kind = "drr" }',
]


def timed(f):
    t0 = time.perf_counter()
    r = f()
    return time.perf_counter() - t0, r


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    from distributed import Client, LocalCluster

    cli = ROOT / "target/release/ackshape"
    clusters = {n: LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0") for n in (1, 2)}
    clients = {n: Client(c) for n, c in clusters.items()}
    for c in clients.values():
        c.wait_for_workers(len(c.scheduler_info()["workers"]))
    ways = {}
    for n in (1, 2):
        ways[f"cli -j {n}"] = lambda n=n: subprocess.run(
            [cli, "sweep", BASE, "-q", "-j", str(n), "--seeds", "5", *CLI_SETS], check=True, capture_output=True
        )
        ways[f"process pool {n}"] = lambda n=n: ackshape.sweep(BASE, GRID, seeds=5, executor=cf.ProcessPoolExecutor(n))
        ways[f"dask {n} worker{'s' if n > 1 else ''}"] = lambda n=n: ackshape.sweep(
            BASE, GRID, seeds=5, executor=clients[n]
        )
    times = {k: [] for k in ways}
    frames = {}
    for r in range(rounds):
        for k, f in ways.items():
            t, res = timed(f)
            times[k].append(t)
            if not k.startswith("cli"):
                frames[k] = res
            print(f"round {r + 1}: {k:<16} {t:6.2f} s", flush=True)
    ref = frames["process pool 1"]
    for k, df in frames.items():
        assert df.equals(ref), f"{k} gave other numbers"
    print("\nmedian wall time over", rounds, "rounds (45 runs each):")
    for kind, a, b in [("cli -j N", "cli -j 1", "cli -j 2"), ("process pool", "process pool 1", "process pool 2"),
                       ("dask", "dask 1 worker", "dask 2 workers")]:
        one, two = statistics.median(times[a]), statistics.median(times[b])
        print(f"  {kind:<13} 1: {one:6.2f} s   2: {two:6.2f} s   speed-up {one / two:4.2f}")
    for c in clients.values():
        c.close()
    for c in clusters.values():
        c.close()


if __name__ == "__main__":
    main()
