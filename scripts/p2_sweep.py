#!/usr/bin/env python3
"""Preliminary hand sweep of paper 002 Fig. 10 (Internet delay) and Fig. 9 (asymmetry ratio), all five
disciplines, with the simulation set-up of EXPERIMENTS.md §3.4. A stand-in until `ackshape reproduce` exists.

    cargo build --release && python3 scripts/p2_sweep.py f10      # or f9; MINRTO=200ms to change the min RTO

Prints aggregated utilization U_u + U_d (ideal 2) and, in brackets, the population variance ((U_u − U_d)/2)².
"""
import json, subprocess, sys
import os
A = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target", "release", "ackshape")
DISC = {
  "fifo":       ('{ kind = "fifo", limit_pkts = 10000 }', None),
  "acks-first": ('{ kind = "acks-first", ack_limit_pkts = 10000, data_limit_pkts = 10000 }', None),
  "ack-filter": ('{ kind = "ack-filter-classic", limit_pkts = 10000 }', None),
  "acq":        ('{{ kind = "acq", rate_bps = {up}, reverse_rate_bps = {down}, ack_limit_pkts = 10000, data_limit_pkts = 10000 }}',
                 '{{ kind = "acq", rate_bps = {down}, reverse_rate_bps = {up}, ack_limit_pkts = 10000, data_limit_pkts = 10000 }}'),
  "afvq":       ('{ kind = "afvq", data_limit_pkts = 10000, non_tcp_limit_pkts = 10000 }', None),
}
def scen(up, down, inet_ms, q, qrev, seed, minrto=__import__("os").environ.get("MINRTO", "1s")):
    rev = f', qdisc = {qrev}' if qrev else ''
    return f'''
seed = {seed}
duration = "200s"
warmup = "20s"
[tcp]
cc = "reno"
sack = false
timestamps = false
mss = 960
min_rto = "{minrto}"
delack = 2
max_window = "200pkt"
[topology]
kind = "graph"
nodes = [{{ name = "local", kind = "host" }}, {{ name = "gw", kind = "router" }}, {{ name = "isp", kind = "router" }}, {{ name = "remote", kind = "host" }}]
links = [
  {{ name = "home", a = "local", b = "gw", rate = "100Mbit/s", delay = "100us", queue = "10000pkt" }},
  {{ name = "access", a = "gw", b = "isp", rate = "{up}bit/s", delay = "10ms", loss = {{ kind = "bernoulli", p = 0.01 }}, loss_both_ways = true, qdisc = {q}, reverse = {{ rate = "{down}bit/s"{rev} }} }},
  {{ name = "internet", a = "isp", b = "remote", rate = "100Mbit/s", delay = "{inet_ms}ms", queue = "10000pkt" }},
]
[[flows]]
name = "upload"
from = "local"
to = "remote"
[[flows]]
name = "download"
from = "remote"
to = "local"
'''
def point(up, down, inet_ms, disc, seeds=3):
    q, qrev = DISC[disc]
    if disc == "acq":
        q = q.format(up=up, down=down); qrev = qrev.format(up=up, down=down)
    uu = ud = 0.0
    for seed in range(1, seeds+1):
        open(SCN,"w").write(scen(up, down, inet_ms, q, qrev, seed))
        s = json.loads(subprocess.run([A,"run",SCN,"--json","--quiet"],check=True,capture_output=True,text=True).stdout)
        f = {x["name"]: x for x in s["flows"]}
        uu += f["upload"]["goodput_bps"] / up / seeds
        ud += f["download"]["goodput_bps"] / down / seeds
    return uu, ud
SCN = os.path.join(__import__("tempfile").gettempdir(), "ackshape-p2-sweep.toml")
which = sys.argv[1] if len(sys.argv) > 1 else "f10"
if which == "f10":
    print("| Internet delay | " + " | ".join(DISC) + " |"); print("|---" * (len(DISC)+1) + "|")
    for d in [1, 5, 10, 20, 50, 100]:
        row = []
        for disc in DISC:
            uu, ud = point(100_000, 3_000_000, d, disc)
            row.append(f"{uu+ud:.2f} ({((uu-ud)/2)**2:.3f})")
        print(f"| {d} ms | " + " | ".join(row) + " |", flush=True)
else:
    print("| ratio | " + " | ".join(DISC) + " |"); print("|---" * (len(DISC)+1) + "|")
    for r in [1, 4, 10, 25, 57, 100, 200]:
        row = []
        for disc in DISC:
            uu, ud = point(int(20_000_000 / r), 20_000_000, 20, disc, seeds=2)
            row.append(f"{uu+ud:.2f} ({((uu-ud)/2)**2:.3f})")
        print(f"| {r} | " + " | ".join(row) + " |", flush=True)
