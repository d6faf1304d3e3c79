#!/usr/bin/env python3
"""Simulator benchmark: ackshape vs the ns-3 peer on the reference dumbbell, in one invocation.

Cases: 10 bulk flows at 10 Mbit/s, 100 flows at 10 Mbit/s, 10 flows at 100 Mbit/s; 60 s
simulated, goodput over [5, 60] s. For each case it runs ackshape (release build) and, if available,
ns-3 3.44 (`pip install ns3` into a venv; --ns3-python points at its interpreter) and prints
bottleneck packets per wall-second, events per wall-second, memory per flow, and the ratios.

    python3 scripts/bench_sim.py [--ns3-python /tmp/ns3venv/bin/python] [--repeat 3] [--json out.json]
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = os.path.join(ROOT, "benches", "reference-dumbbell.toml")
PEER = os.path.join(ROOT, "scripts", "peers", "ns3", "ns3_dumbbell.py")
CASES = [("10 flows, 10 Mbit/s", 10, 10), ("100 flows, 10 Mbit/s", 100, 10), ("10 flows, 100 Mbit/s", 10, 100)]


def scenario(flows, bw):
    text = open(REF).read()
    text = re.sub(r"count = \d+", f"count = {flows}", text)
    text = text.replace('rate = "10Mbit/s"', f'rate = "{bw}Mbit/s"')
    f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    f.write(text)
    f.close()
    return f.name


def run_ackshape(binary, flows, bw):
    path = scenario(flows, bw)
    # A wrapper process per run, so RUSAGE_CHILDREN sees only this ackshape (not ns-3).
    wrapper = ("import json, resource, subprocess, sys; "
               "o = subprocess.run(sys.argv[1:], check=True, capture_output=True, text=True).stdout; "
               "print(json.dumps({'out': o, 'rss_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))")
    w = json.loads(subprocess.run([sys.executable, "-c", wrapper, binary, "run", path, "--json", "--quiet"],
                                  check=True, capture_output=True, text=True).stdout)
    out, rss_kb = w["out"], w["rss_kb"]
    os.unlink(path)
    s = json.loads(out)
    b = next(l for l in s["links"] if l["name"] == "bottleneck")
    wall = s["sim"]["wall_time_s"]
    return dict(
        wall_s=wall,
        bottleneck_pkts=b["tx_packets"],
        bottleneck_pkts_per_wall_s=b["tx_packets"] / wall,
        events_per_wall_s=s["sim"]["events"] / wall,
        goodput_mbps=s["aggregate"]["goodput_bps"] / 1e6,
        utilization=b["utilization"],
        jain=s["aggregate"]["jain"],
        drops=b["drops"],
        peak_rss_kb=rss_kb,
    )


def run_ns3(py, flows, bw):
    out = subprocess.run(
        [py, PEER, "--flows", str(flows), "--bw", str(bw), "--delay", "20", "--sim-time", "60", "--no-socket-trace"],
        check=True, capture_output=True, text=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return dict(
        wall_s=r["run_wall_s"],
        bottleneck_pkts=r["bottleneck_tx_pkts_total"],
        bottleneck_pkts_per_wall_s=r["bottleneck_pkts_per_wall_s"],
        events_per_wall_s=r["events_per_wall_s"],
        goodput_mbps=r["aggregate_goodput_mbps"],
        utilization=r["link_utilization"],
        jain=r["jain_index"],
        drops=r["bottleneck_drops_total"],
    )


def median_run(fn, repeat):
    runs = [fn() for _ in range(repeat)]
    runs.sort(key=lambda r: r["bottleneck_pkts_per_wall_s"])
    return runs[len(runs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns3-python", default="/tmp/ns3venv/bin/python")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the median is reported")
    ap.add_argument("--ns3-repeat", type=int, default=1)
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "ackshape-cli"], cwd=ROOT, check=True)
    binary = os.path.join(ROOT, "target", "release", "ackshape")
    have_ns3 = os.path.exists(a.ns3_python) and os.path.exists(PEER)
    if not have_ns3:
        print(f"ns-3 peer not available ({a.ns3_python}); reporting ackshape alone", file=sys.stderr)
    results = []
    for name, flows, bw in CASES:
        ours = median_run(lambda: run_ackshape(binary, flows, bw), a.repeat)
        peer = median_run(lambda: run_ns3(a.ns3_python, flows, bw), a.ns3_repeat) if have_ns3 else None
        results.append(dict(case=name, flows=flows, bw_mbps=bw, ackshape=ours, ns3=peer))
    # Memory per flow: peak RSS growth from 10 to 2000 flows (10 Mbit/s, 10 s simulated).
    def rss(flows):
        path = scenario(flows, 10).replace(".toml", "")
        text = open(path + ".toml").read().replace('duration = "60s"', 'duration = "10s"')
        open(path + ".toml", "w").write(text)
        wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
                   "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        out = subprocess.run([sys.executable, "-c", wrapper, binary, "run", path + ".toml", "--quiet"],
                             check=True, capture_output=True, text=True).stdout
        os.unlink(path + ".toml")
        return int(out.strip())
    mem_per_flow_kb = (rss(2000) - rss(10)) / 1990
    print(f"{'case':<22} {'':>8} {'bneck pkts/wall-s':>18} {'events/wall-s':>14} {'wall s':>8} {'goodput Mb/s':>13} {'util':>7} {'Jain':>7}")
    for r in results:
        for who in ("ackshape", "ns3"):
            x = r[who]
            if x is None:
                continue
            print(f"{r['case']:<22} {who:>8} {x['bottleneck_pkts_per_wall_s']:>18,.0f} {x['events_per_wall_s']:>14,.0f} "
                  f"{x['wall_s']:>8.3f} {x['goodput_mbps']:>13.3f} {x['utilization']:>7.4f} {x['jain']:>7.4f}")
        if r["ns3"]:
            o, p = r["ackshape"], r["ns3"]
            r["speedup"] = o["bottleneck_pkts_per_wall_s"] / p["bottleneck_pkts_per_wall_s"]
            r["goodput_ratio"] = o["goodput_mbps"] / p["goodput_mbps"]
            r["utilization_ratio"] = o["utilization"] / p["utilization"]
            r["jain_ratio"] = o["jain"] / p["jain"]
            print(f"{'':<22} {'ratio':>8} speed ×{r['speedup']:.1f}  goodput {r['goodput_ratio']:.4f}  "
                  f"utilization {r['utilization_ratio']:.4f}  Jain {r['jain_ratio']:.4f}")
    print(f"memory per flow (peak RSS growth 10→2000 flows / 1990): {mem_per_flow_kb:.1f} KiB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(results=results, mem_per_flow_kb=mem_per_flow_kb), f, indent=2)


if __name__ == "__main__":
    main()
