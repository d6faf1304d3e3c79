#!/usr/bin/env python3
"""BBR v1 against ns-3 3.44's TcpBbr on a few dumbbell points (docs/validation.md, "BBR vs ns-3's TcpBbr").

Each point: N bulk BBR flows (MSS 1448 with timestamps, initial window 10, delayed ACKs every 2
segments, 4 MiB buffers, 1 s minimum RTO, ns-3 with pacing on) through a drop-tail FIFO at the
bottleneck; access links 10x the bottleneck rate (at least 100 Mbit/s) and 1 ms; flows start uniform
in [0, 1) s; 30 s, measured over [5 s, 30 s], seed 1. ns-3 runs `ns3_dumbbell.py` (its FIFO queue
disc, sojourn times from its trace); ackshape runs the same set-up as a scenario.

    python3 scripts/peers/ns3/bbr_points.py --json bbr.json            # the default points
    python3 scripts/peers/ns3/bbr_points.py --point 10,40,10,100       # Mbit/s,RTT ms,flows,FIFO pkts

Prints one Markdown row per point (the table of docs/validation.md) and stores both sides in --json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
POINTS = ["10,10,1,100", "100,200,1,1000", "10,10,10,100", "10,40,10,100", "10,200,10,100",
          "100,40,10,1000", "10,40,50,100"]


def run_ns3(python, bw, delay_ms, flows, fifo, access):
    cmd = [python, os.path.join(HERE, "ns3_dumbbell.py"), "--tcp", "Bbr", "--flows", str(flows),
           "--bw", str(bw), "--delay", str(delay_ms), "--access-bw", str(access), "--queue", str(fifo),
           "--sim-time", "30", "--warmup", "5", "--seed", "1", "--qdisc", "fifo",
           "--set", "ns3::TcpSocketState::EnablePacing=true"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"ns-3 failed: {res.stderr.strip()[-2000:]}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    return dict(goodput_mbps=r["aggregate_goodput_mbps"], jain=r["jain_index"],
                queue_delay_ms=r["sojourn_avg_ms"], drops=r["qdisc_drops_total"],
                drops_window=r["qdisc_drops_meas"], rtos_window=r["rto_events_meas"])


def run_ackshape(binary, bw, delay_ms, flows, fifo, access):
    toml = f'''name = "bbr-point"
duration = "30s"
warmup = "5s"
seed = 1
[tcp]
cc = "bbr"
mss = 1448
timestamps = true
initial_window = 10
delack = 2
rcv_buf = "4MiB"
min_rto = "1s"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "{bw}Mbit/s", delay = "{delay_ms}ms", qdisc = {{ kind = "fifo", limit_pkts = {fifo} }} }}
access = {{ rate = "{access}Mbit/s", delay = "1ms", queue = "10000pkt" }}
[[flows]]
count = {flows}
start = "uniform(0s, 1s)"
'''
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(toml)
    try:
        res = subprocess.run([binary, "run", f.name, "--json", "-q"], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if res.returncode != 0:
        sys.exit(f"ackshape failed: {res.stderr.strip()[-2000:]}")
    s = json.loads(res.stdout)
    link = next(l for l in s["links"] if l["name"] == "bottleneck")
    pkt_ms = 1500 * 8 / (bw * 1e6) * 1e3
    return dict(goodput_mbps=s["aggregate"]["goodput_bps"] / 1e6, jain=s["aggregate"]["jain"],
                queue_delay_ms=link["queue_avg_pkts"] * pkt_ms, drops=link["drops"],
                rtos=sum(fl["timeouts"] for fl in s["flows"]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--point", action="append", help="Mbit/s,RTT ms,flows,FIFO packets (repeatable)")
    p.add_argument("--json", help="write both sides of every point here")
    p.add_argument("--ns3-python", default="/tmp/ns3venv/bin/python3",
                   help="a Python with the ns3 wheel (scripts/peers/ns3/README.md)")
    p.add_argument("--ackshape", default=os.path.join(ROOT, "target", "release", "ackshape"))
    a = p.parse_args()
    out = []
    print("| Mbit/s | RTT ms | flows | FIFO pkts | goodput ns-3 | goodput ackshape | ratio | queue delay ns-3 ms "
          "| ackshape ms | drops ns-3 (window) | drops ackshape | RTOs ns-3 | RTOs ackshape | Jain ns-3 / ackshape |")
    print("|" + "---|" * 14)
    for pt in a.point or POINTS:
        bw, rtt, flows, fifo = (int(x) for x in pt.split(","))
        delay = max(rtt / 2 - 2, 0.1)  # RTT = 2 × (1 ms + bottleneck + 1 ms)
        access = max(100, 10 * bw)
        n = run_ns3(a.ns3_python, bw, delay, flows, fifo, access)
        k = run_ackshape(a.ackshape, bw, delay, flows, fifo, access)
        out.append(dict(point=dict(bw_mbps=bw, rtt_ms=rtt, flows=flows, fifo_pkts=fifo), ns3=n, ackshape=k))
        print(f"| {bw} | {rtt} | {flows} | {fifo} | {n['goodput_mbps']:.3f} | {k['goodput_mbps']:.3f} | "
              f"{k['goodput_mbps'] / n['goodput_mbps']:.3f} | {n['queue_delay_ms']:.1f} | {k['queue_delay_ms']:.1f} | "
              f"{n['drops']} ({n['drops_window']}) | {k['drops']} | {n['rtos_window']} | {k['rtos']} | "
              f"{n['jain']:.3f} / {k['jain']:.3f} |", flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
