#!/usr/bin/env python3
"""What `host_jitter` costs the simulator: the reference dumbbell with and without host noise, in one
invocation, alternating runs; prints events and wall time per case and the ratios to the noise-free run.

    python3 scripts/bench_host_jitter.py [--repeat 7] [--jitter 100us]

Uses target/release/ackshape (build it first: cargo build --release).
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "ackshape"
SCENARIO = ROOT / "benches" / "reference-dumbbell.toml"


def run(extra):
    out = subprocess.run(
        [str(BIN), "run", str(SCENARIO), "-q", "--json", *extra], check=True, capture_output=True, text=True
    ).stdout
    d = json.loads(out)
    return d["sim"]["events"], d["sim"]["wall_time_s"], d["aggregate"]["goodput_bps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7, help="runs per case (median reported)")
    ap.add_argument("--jitter", default="100us", help="host_jitter of the noisy case")
    a = ap.parse_args()
    if not BIN.exists():
        sys.exit(f"{BIN} not found: run `cargo build --release` first")
    cases = {
        "10 flows, 10 Mbit/s": [],
        "10 flows, 100 Mbit/s": ["--set", "topology.bottleneck.rate=100Mbit/s"],
    }
    print(f"reference dumbbell, median of {a.repeat} alternating runs per case")
    print(f"{'case':24} {'host_jitter':>11} {'events':>9} {'wall s':>8} {'events/s':>11} {'goodput':>12}  ratio (wall, events)")
    for name, extra in cases.items():
        res = {"0s": [], a.jitter: []}
        for _ in range(a.repeat):
            for j in res:
                res[j].append(run(extra + ["--set", f'host_jitter="{j}"']))
        base = None
        for j, runs in res.items():
            ev = runs[0][0]
            wall = statistics.median(r[1] for r in runs)
            gp = runs[0][2]
            ratio = "" if base is None else f"x{wall / base[1]:.2f}, x{ev / base[0]:.2f}"
            print(f"{name:24} {j:>11} {ev:>9} {wall:>8.3f} {ev / wall:>11,.0f} {gp / 1e6:>8.3f} Mbit/s  {ratio}")
            base = base or (ev, wall)


if __name__ == "__main__":
    main()
