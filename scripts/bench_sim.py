#!/usr/bin/env python3
"""Simulator benchmark: ackshape vs ns-2.35 and the ns-3 peer on the reference dumbbell, in one invocation.

Cases: 10 bulk flows at 10 Mbit/s, 100 flows at 10 Mbit/s, 10 flows at 100 Mbit/s; 60 s
simulated, goodput over [5, 60] s. For each case it runs ackshape (release build), ns-2.35 (`ns`,
Debian package ns2: scripts/peers/ns2/dumbbell.tcl with Agent/TCP/Sack1 and
TCPSink/Sack1/DelAck, 1460-byte segments so packets are 1500 B as ackshape's, the same
drop-tail sizes, no trace files) and, if available, ns-3 3.44 (`pip install ns3` into a venv;
--ns3-python points at its interpreter). The simulators run alternately, `--repeat` rounds, and
the median of each is reported: bottleneck packets per wall-second, events per wall-second
(ackshape, ns-3), goodput, utilization, Jain, memory per flow, and the ratios to each peer.

Two clocks per run. *Loop*: the event loop alone (ackshape: `Sim::run`, `sim.wall_time_s`; ns-2:
`$ns run`, timed inside the Tcl script; ns-3: `Simulator::Run()`). *Process*: the whole process
from spawn to exit (interpreter start-up, topology and route set-up, summary). The headline ratio
is the loop one; the process ratio is printed beside it, with the load average before and after.

    python3 scripts/bench_sim.py [--ns3-python /tmp/ns3venv/bin/python] [--repeat 3] [--json out.json]
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = os.path.join(ROOT, "benches", "reference-dumbbell.toml")
PEER = os.path.join(ROOT, "scripts", "peers", "ns3", "ns3_dumbbell.py")
NS2_TCL = os.path.join(ROOT, "scripts", "peers", "ns2", "dumbbell.tcl")
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
    wrapper = ("import json, resource, subprocess, sys, time; t0 = time.perf_counter(); "
               "o = subprocess.run(sys.argv[1:], check=True, capture_output=True, text=True).stdout; "
               "t = time.perf_counter() - t0; "
               "print(json.dumps({'out': o, 'wall': t, 'rss_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))")
    w = json.loads(subprocess.run([sys.executable, "-c", wrapper, binary, "run", path, "--json", "--quiet"],
                                  check=True, capture_output=True, text=True).stdout)
    out, rss_kb, process_s = w["out"], w["rss_kb"], w["wall"]
    os.unlink(path)
    s = json.loads(out)
    b = next(l for l in s["links"] if l["name"] == "bottleneck")
    wall = s["sim"]["wall_time_s"]
    return dict(
        wall_s=wall,
        process_s=process_s,
        bottleneck_pkts=b["tx_packets"],
        bottleneck_pkts_per_wall_s=b["tx_packets"] / wall,
        bottleneck_pkts_per_process_s=b["tx_packets"] / process_s,
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
        process_s=r["wall_time_s"],
        bottleneck_pkts=r["bottleneck_tx_pkts_total"],
        bottleneck_pkts_per_wall_s=r["bottleneck_pkts_per_wall_s"],
        bottleneck_pkts_per_process_s=r["bottleneck_tx_pkts_total"] / r["wall_time_s"],
        events_per_wall_s=r["events_per_wall_s"],
        goodput_mbps=r["aggregate_goodput_mbps"],
        utilization=r["link_utilization"],
        jain=r["jain_index"],
        drops=r["bottleneck_drops_total"],
    )


def run_ns2(flows, bw):
    """ns-2.35 on the same dumbbell: bottleneck bw/20 ms/100 packets, access 100 Mbit/s/1 ms,
    Sack1 with delayed ACKs, starts uniform in [0, 1) s, 60 s, goodput over [5, 60] s."""
    import random
    r = random.Random(1)
    starts = ",".join(f"{r.uniform(0, 1):.6f}" for _ in range(flows))
    args = ["ns", NS2_TCL, "cc=Sack1", "delack=1", f"flows={flows}", f"bw={bw}Mb", "delay=20ms", "q=100",
            "acc_bw=100Mb", "acc_delay=1ms", "acc_q=1000", "size=1460", "window=2872", "minrto=1.0",
            "duration=60", "warmup=5", f"starts={starts}"]
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        p = subprocess.run(args, cwd=d, check=True, capture_output=True, text=True)
        process_s = time.perf_counter() - t0
    j = json.loads(p.stdout.strip().splitlines()[-1])
    # `$ns run` alone: the script prints its wall time on stderr (the last JSON line there).
    wall = next(json.loads(l)["run_wall_s"] for l in reversed(p.stderr.splitlines()) if "run_wall_s" in l)
    g = [f["goodput_bps"] for f in j["flows"]]
    return dict(
        wall_s=wall,
        process_s=process_s,
        bottleneck_pkts=j["bottleneck_tx_pkts"],
        bottleneck_pkts_per_wall_s=j["bottleneck_tx_pkts"] / wall,
        bottleneck_pkts_per_process_s=j["bottleneck_tx_pkts"] / process_s,
        events_per_wall_s=float("nan"),
        goodput_mbps=j["aggregate_goodput_bps"] / 1e6,
        utilization=j["bottleneck_tx_bytes_after_warmup"] * 8 / (bw * 1e6 * 55),
        jain=sum(g) ** 2 / (len(g) * sum(x * x for x in g)),
        drops=j["drops"],
    )


def median_runs(fns, repeat):
    """Run the simulators alternately (one round = each once), `repeat` rounds; median of each."""
    runs = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            runs[k].append(fn())
    out = {}
    for k, rs in runs.items():
        rs.sort(key=lambda r: r["bottleneck_pkts_per_wall_s"])
        out[k] = rs[len(rs) // 2]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns3-python", default="/tmp/ns3venv/bin/python")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the median is reported")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--ackshape", help="this ackshape binary instead of building target/release/ackshape")
    ap.add_argument("--cases", default="1,2,3", help="which cases to run, by number (default 1,2,3)")
    a = ap.parse_args()
    if a.ackshape:
        binary = os.path.abspath(a.ackshape)
    else:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "ackshape-cli"], cwd=ROOT, check=True)
        binary = os.path.join(ROOT, "target", "release", "ackshape")
    cases = [CASES[int(i) - 1] for i in a.cases.split(",")]
    have_ns3 = os.path.exists(a.ns3_python) and os.path.exists(PEER)
    if not have_ns3:
        print(f"ns-3 peer not available ({a.ns3_python}); reporting ackshape alone", file=sys.stderr)
    have_ns2 = shutil.which("ns") is not None
    if not have_ns2:
        print("ns-2.35 (`ns`) not found (apt-get install ns2); no ns-2 column", file=sys.stderr)
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}", flush=True)
    results = []
    for name, flows, bw in cases:
        fns = {"ackshape": lambda: run_ackshape(binary, flows, bw)}
        if have_ns2:
            fns["ns2"] = lambda: run_ns2(flows, bw)
        if have_ns3:
            fns["ns3"] = lambda: run_ns3(a.ns3_python, flows, bw)
        m = median_runs(fns, a.repeat)
        results.append(dict(case=name, flows=flows, bw_mbps=bw, ackshape=m["ackshape"], ns2=m.get("ns2"),
                            ns3=m.get("ns3")))
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
    load_after = os.getloadavg()
    mem_per_flow_kb = (rss(2000) - rss(10)) / 1990
    print(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
          f"after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; {os.cpu_count()} CPUs; "
          f"median of {a.repeat} alternating runs")
    print(f"{'case':<22} {'':>8} {'pkts/loop-s':>12} {'pkts/proc-s':>12} {'events/loop-s':>14} {'loop s':>8} "
          f"{'proc s':>7} {'goodput Mb/s':>13} {'util':>7} {'Jain':>7}")
    for r in results:
        for who in ("ackshape", "ns2", "ns3"):
            x = r[who]
            if x is None:
                continue
            print(f"{r['case']:<22} {who:>8} {x['bottleneck_pkts_per_wall_s']:>12,.0f} "
                  f"{x['bottleneck_pkts_per_process_s']:>12,.0f} {x['events_per_wall_s']:>14,.0f} "
                  f"{x['wall_s']:>8.3f} {x['process_s']:>7.3f} {x['goodput_mbps']:>13.3f} {x['utilization']:>7.4f} "
                  f"{x['jain']:>7.4f}")
        for peer in ("ns2", "ns3"):
            if not r[peer]:
                continue
            o, p = r["ackshape"], r[peer]
            rr = dict(speedup=o["bottleneck_pkts_per_wall_s"] / p["bottleneck_pkts_per_wall_s"],
                      speedup_process=o["bottleneck_pkts_per_process_s"] / p["bottleneck_pkts_per_process_s"],
                      goodput_ratio=o["goodput_mbps"] / p["goodput_mbps"],
                      utilization_ratio=o["utilization"] / p["utilization"], jain_ratio=o["jain"] / p["jain"])
            r[f"vs_{peer}"] = rr
            print(f"{'':<22} {'/' + peer:>8} speed (loop) ×{rr['speedup']:.2f}  (process) ×{rr['speedup_process']:.2f}  "
                  f"goodput {rr['goodput_ratio']:.4f}  "
                  f"utilization {rr['utilization_ratio']:.4f}  Jain {rr['jain_ratio']:.4f}")
    print(f"memory per flow (peak RSS growth 10→2000 flows / 1990): {mem_per_flow_kb:.1f} KiB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(results=results, mem_per_flow_kb=mem_per_flow_kb, load_before=load_before,
                           load_after=load_after), f, indent=2)


if __name__ == "__main__":
    main()
