#!/usr/bin/env python3
"""The AQM cross-check: the same dumbbell with CoDel, FQ-CoDel, PIE and COBALT in ns-3 3.44 and in
ackshape, side by side.

Each point is one set-up: the bottleneck's discipline, its rate (Mbit/s), the base RTT (ms), the
number of bulk TCP flows and whether ECN is on. ns-3 runs `ns3_dumbbell.py` (its CoDelQueueDisc,
FqCoDelQueueDisc, PieQueueDisc, CobaltQueueDisc, FqCobaltQueueDisc); ackshape runs the equivalent
scenario TOML built here (`ackshape run S.toml --json`). Results go to JSON; a table is printed.

    python3 scripts/peers/ns3/aqm_grid.py point qdisc=pie bw=10 rtt=50 flows=10
    python3 scripts/peers/ns3/aqm_grid.py grid --json aqm.json          # the sampled grid (~30 min)
    python3 scripts/peers/ns3/aqm_grid.py table aqm.json                # the docs/validation.md table
    python3 scripts/peers/ns3/aqm_grid.py rerun aqm.json --json new.json  # ackshape's side again, ns-3's kept
    python3 scripts/peers/ns3/aqm_grid.py point qdisc=pie bw=10 rtt=10 flows=1 ecn=1 \
        --ns3-set ns3::PieQueueDisc::UseDerandomization=false --qdisc-extra 'derandomize = false'

`--python` is the interpreter that has the `ns3` wheel (default /tmp/ns3venv/bin/python, see
README.md), `--ackshape` the binary (default target/release/ackshape).

Pass criterion of a point (docs/validation.md): aggregate goodput within 5% of ns-3's; average
sojourn time in the discipline within 20% or 1 ms; drops (and, with ECN, marks) within 25%, or
within 10 packets when both are that small. Goodput, sojourn, drops and marks are counted over
[warmup, end] on both sides (the start-up's slow-start overshoot is reported, not judged: the
JSON has the whole-run counts too).

Matched set-up (ns-3's defaults differ, README.md): NewReno window growth per ACK with SACK on
both sides (ns-3: TcpNewReno with PRR recovery; ackshape: `cc = "sack"`, RFC 6675 recovery), MSS
1448 with timestamps (1500-byte packets), initial window 10, delayed ACK every 2 segments, 1 s
minimum RTO, 4 MiB buffers. Access links 1 ms, 1000 packets, 10× the bottleneck's rate (so the
queue forms at the bottleneck); bottleneck one-way delay RTT/2 − 2 ms; the bottleneck's reverse
direction is a drop-tail FIFO of the same size. Flow starts uniform in [0, 1) s (drawn per side).
Discipline parameters: the RFCs' / Linux's defaults on both sides, the limit `queue` packets
(1000; 10240, CAKE's default, for the COBALT rows), plus: PIE with derandomisation on in ns-3 (ackshape's default, as Linux); ns-3's COBALT
`BlueThreshold` (an ns-3 addition that raises BLUE's probability when a sojourn exceeds 400 ms)
off, as Linux's COBALT has none; ns-3's FqCobalt with its 8-way set-associative hash, as CAKE.
The ns-3 COBALT is compared with ackshape's `cake` in `flowblind` mode (one queue, unshaped) and
FqCobalt with `cake` in `flows` mode.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PEER = os.path.join(HERE, "ns3_dumbbell.py")

GOODPUT_TOL = 0.05
SOJOURN_REL_TOL, SOJOURN_ABS_MS = 0.20, 1.0
DROP_REL_TOL, DROP_ABS = 0.25, 10

DEFAULTS = dict(qdisc="codel", bw=10, rtt=50, flows=10, ecn=0, queue=1000, duration=60, warmup=10, seed=1)
QDISCS = ("codel", "fqcodel", "pie", "cobalt", "fqcobalt")

ACKSHAPE_QDISC = {
    "codel": '{{ kind = "codel", limit_pkts = {q}{ecn} }}',
    "fqcodel": '{{ kind = "fq-codel", limit_pkts = {q}{ecn} }}',
    "pie": '{{ kind = "pie", limit_pkts = {q}{ecn} }}',
    # CAKE marks ECN-capable packets whatever the setting; with ECN off the endpoints send none.
    "cobalt": '{{ kind = "cake", flow_mode = "flowblind", limit_pkts = {q} }}',
    "fqcobalt": '{{ kind = "cake", flow_mode = "flows", limit_pkts = {q} }}',
}
NS3_EXTRA = {
    "pie": ["ns3::PieQueueDisc::UseDerandomization=true"],
    "cobalt": ["ns3::CobaltQueueDisc::BlueThreshold=1000s"],
    "fqcobalt": ["ns3::FqCobaltQueueDisc::BlueThreshold=1000s"],
}


def point(**kw):
    p = dict(DEFAULTS)
    for k, v in kw.items():
        if k not in DEFAULTS:
            raise SystemExit(f"unknown parameter {k} (parameters: {', '.join(DEFAULTS)})")
        p[k] = v if k == "qdisc" else type(DEFAULTS[k])(v)
    if p["qdisc"] not in QDISCS:
        raise SystemExit(f"qdisc must be one of {', '.join(QDISCS)}, got {p['qdisc']!r}")
    return p


def bottleneck_delay_ms(p):
    # RTT = 2 × (access + bottleneck + access) one-way delays, access = 1 ms.
    return max(p["rtt"] / 2.0 - 2.0, 0.1)


def access_bw(p):
    return 10 * p["bw"]


def run_ns3(p, python, extra_sets=()):
    args = [python, PEER, "--flows", str(p["flows"]), "--bw", str(p["bw"]),
            "--delay", str(bottleneck_delay_ms(p)), "--access-bw", str(access_bw(p)),
            "--queue", str(p["queue"]), "--sim-time", str(p["duration"]), "--warmup", str(p["warmup"]),
            "--seed", str(p["seed"]), "--qdisc", p["qdisc"], "--no-socket-trace", "--per-flow", "1"]
    if p["ecn"]:
        args.append("--ecn")
    if p["qdisc"] == "fqcobalt":
        args.append("--set-assoc")
    for kv in [*NS3_EXTRA.get(p["qdisc"], []), *extra_sets]:
        args += ["--set", kv]
    t0 = time.time()
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"ns-3 failed: {res.stderr.strip()[-2000:]}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    return dict(
        goodput_mbps=r["aggregate_goodput_mbps"],
        jain=r["jain_index"],
        sojourn_ms=r["sojourn_avg_ms"] or 0.0,
        drops=r["qdisc_drops_meas"],
        marks=r["qdisc_marks_meas"],
        drops_total=r["qdisc_drops_total"],
        marks_total=r["qdisc_marks_total"],
        wall_s=time.time() - t0,
    )


def scenario_toml(p, qdisc_extra=""):
    ecn = ", ecn = true" if p["ecn"] else ", ecn = false"
    qd = ACKSHAPE_QDISC[p["qdisc"]].format(q=p["queue"], ecn=ecn)
    if qdisc_extra:
        qd = qd[:-1].rstrip() + ", " + qdisc_extra + " }"
    lines = [
        'name = "ns3-aqm-point"', f"seed = {p['seed']}", f'duration = "{p["duration"]}s"',
        f'warmup = "{p["warmup"]}s"', "", "[tcp]",
        'cc = "sack"', "mss = 1448", "initial_window = 10", "delack = 2", 'rcv_buf = "4MiB"',
        'min_rto = "1s"', f"ecn = {'true' if p['ecn'] else 'false'}", "",
        "[topology]", 'kind = "dumbbell"',
        f'bottleneck = {{ rate = "{p["bw"]}Mbit/s", delay = "{bottleneck_delay_ms(p)}ms", queue = "{p["queue"]}pkt", '
        f'qdisc = {qd}, reverse = {{ qdisc = {{ kind = "fifo", limit_pkts = {p["queue"]} }} }} }}',
        f'access = {{ rate = "{access_bw(p)}Mbit/s", delay = "1ms", queue = "1000pkt" }}', "",
        "[[flows]]", 'kind = "bulk"', f"count = {p['flows']}", 'start = "uniform(0s, 1s)"', "",
    ]
    return "\n".join(lines)


def run_ackshape(p, binary, qdisc_extra=""):
    with tempfile.TemporaryDirectory(prefix="ns3aqm-") as d:
        path = os.path.join(d, "s.toml")
        with open(path, "w") as f:
            f.write(scenario_toml(p, qdisc_extra))
        t0 = time.time()
        res = subprocess.run([binary, "run", path, "--json", "--quiet"], cwd=d, capture_output=True, text=True)
        wall = time.time() - t0
        if res.returncode != 0:
            raise RuntimeError(f"ackshape failed: {res.stderr.strip()}\n{scenario_toml(p, qdisc_extra)}")
    s = json.loads(res.stdout)
    b = next(l for l in s["links"] if l["name"] == "bottleneck")
    c = b.get("qdisc_counters", {})
    return dict(
        goodput_mbps=s["aggregate"]["goodput_bps"] / 1e6,
        jain=s["aggregate"]["jain"],
        sojourn_ms=b["aqm"]["sojourn_avg_ms"],
        drops=b["aqm"]["drops"],
        marks=b["aqm"]["marks"],
        drops_total=b["drops"],
        marks_total=sum(v for k, v in c.items() if k.endswith("ecn_marks")),
        wall_s=wall,
    )


def within_count(a, b):
    return abs(a - b) <= max(DROP_ABS, DROP_REL_TOL * max(a, b))


def judge(ns, ak, ecn):
    g = ak["goodput_mbps"] / ns["goodput_mbps"] if ns["goodput_mbps"] > 0 else float("nan")
    s_ok = abs(ak["sojourn_ms"] - ns["sojourn_ms"]) <= max(SOJOURN_ABS_MS, SOJOURN_REL_TOL * ns["sojourn_ms"])
    d_ok = within_count(ak["drops"], ns["drops"]) and (not ecn or within_count(ak["marks"], ns["marks"]))
    g_ok = abs(g - 1.0) <= GOODPUT_TOL
    return dict(goodput_ratio=g, goodput_ok=g_ok, sojourn_ok=s_ok, drops_ok=d_ok, ok=g_ok and s_ok and d_ok)


def run_point(p, python, binary, ns3_sets=(), qdisc_extra=""):
    ns = run_ns3(p, python, ns3_sets)
    ak = run_ackshape(p, binary, qdisc_extra)
    return dict(point=p, ns3=ns, ackshape=ak, **judge(ns, ak, p["ecn"]))


# --- the grid ------------------------------------------------------------------------------------
#
# Factor space: discipline 5 × rate {10, 100} Mbit/s × RTT {10, 50, 200} ms × flows {1, 10, 50}
# (90 cells without ECN). Sampled: per discipline the full 3 × 3 of RTT × flows (the two factors
# that shape the control loop most), with the rate alternating between 10 and 100 Mbit/s over
# that square (a Latin-square assignment: each RTT and each flow count sees both rates), 45
# points; plus ECN on for CoDel, FQ-CoDel and PIE at three points each (the square's diagonal),
# 9 points. One seed per point.

RTTS, FLOWS, RATES = (10, 50, 200), (1, 10, 50), (10, 100)
# Buffers: 1000 packets for CoDel, FQ-CoDel and PIE; CAKE's default limit (10240 packets) for the
# COBALT rows, so that BLUE (raised by buffer overflows) stays out of the way of responsive flows
# as in CAKE's normal use (with 1000 packets, start-up overflow at 100 Mbit/s raised BLUE's
# probability, which in CAKE relaxes only when the scheduler finds the queue empty while other
# queues hold packets; see docs/validation.md).
QUEUE = {"codel": 1000, "fqcodel": 1000, "pie": 1000, "cobalt": 10240, "fqcobalt": 10240}


def grid_points():
    pts = []
    for q in QDISCS:
        for i, rtt in enumerate(RTTS):
            for j, n in enumerate(FLOWS):
                pts.append(point(qdisc=q, bw=RATES[(i + j) % 2], rtt=rtt, flows=n, queue=QUEUE[q]))
    for q in ("codel", "fqcodel", "pie"):
        for i, (rtt, n) in enumerate(zip(RTTS, FLOWS)):
            pts.append(point(qdisc=q, bw=RATES[i % 2], rtt=rtt, flows=n, ecn=1))
    return pts


def fmt_row(r):
    p, n, a = r["point"], r["ns3"], r["ackshape"]
    yes = lambda b: "yes" if b else "**no**"  # noqa: E731
    marks = f"{n['marks']} / {a['marks']}" if p["ecn"] else "–"
    return (f"| {p['qdisc']}{'+ecn' if p['ecn'] else ''} | {p['bw']} | {p['rtt']} | {p['flows']} "
            f"| {n['goodput_mbps']:.3f} | {a['goodput_mbps']:.3f} | {r['goodput_ratio']:.3f} "
            f"| {n['sojourn_ms']:.2f} | {a['sojourn_ms']:.2f} | {n['drops']} | {a['drops']} | {marks} "
            f"| {yes(r['goodput_ok'])} | {yes(r['sojourn_ok'])} | {yes(r['drops_ok'])} |")


HEADER = ("| qdisc | Mbit/s | RTT ms | flows | goodput ns-3 | goodput ackshape | ratio | sojourn ms ns-3 "
          "| sojourn ms ackshape | drops ns-3 | drops ackshape | marks ns-3 / ackshape | goodput ok | sojourn ok "
          "| drops ok |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def print_table(results):
    print(HEADER)
    for r in results:
        print(fmt_row(r))
    n = len(results)
    print()
    print(f"{sum(r['ok'] for r in results)}/{n} within all bounds; goodput within 5%: "
          f"{sum(r['goodput_ok'] for r in results)}; sojourn within 20% or 1 ms: "
          f"{sum(r['sojourn_ok'] for r in results)}; drops/marks within 25%: {sum(r['drops_ok'] for r in results)}")
    for q in QDISCS:
        rs = [r for r in results if r["point"]["qdisc"] == q]
        if rs:
            print(f"- {q}: {sum(r['ok'] for r in rs)}/{len(rs)} within all bounds")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default="/tmp/ns3venv/bin/python", help="interpreter with the ns3 wheel")
    ap.add_argument("--ackshape", default=os.path.join(ROOT, "target", "release", "ackshape"))
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("point", help="one point: KEY=VALUE … (" + ", ".join(DEFAULTS) + ")")
    sp.add_argument("kv", nargs="*")
    sp.add_argument("--ns3-set", action="append", default=[], metavar="ATTR=VALUE",
                    help="an extra ns-3 attribute for this point (repeatable), e.g. ns3::PieQueueDisc::MaxBurstAllowance=0s")
    sp.add_argument("--qdisc-extra", default="", metavar="KEYS",
                    help="extra keys of ackshape's qdisc table for this point, e.g. 'derandomize = false'")
    rp = sub.add_parser("rerun", help="run ackshape's side of every grid point of a JSON again, keeping ns-3's")
    rp.add_argument("json")
    rp.add_argument("--json", dest="out", required=True, help="write the new results here")
    gp = sub.add_parser("grid", help="the sampled grid")
    gp.add_argument("--json", help="write the results here (and resume from it)")
    gp.add_argument("--only", help="only points of this qdisc")
    tp = sub.add_parser("table", help="print the table of a grid's JSON (its points of the grid, in order)")
    tp.add_argument("json")
    a = ap.parse_args()
    if a.cmd == "table":
        with open(a.json) as f:
            done = json.load(f)
        order = {json.dumps(p, sort_keys=True): k for k, p in enumerate(grid_points())}
        done = [r for r in done if json.dumps(r["point"], sort_keys=True) in order]
        print_table(sorted(done, key=lambda r: order[json.dumps(r["point"], sort_keys=True)]))
        return
    if a.cmd == "rerun":
        with open(a.json) as f:
            done = json.load(f)
        order = {json.dumps(p, sort_keys=True): k for k, p in enumerate(grid_points())}
        done = sorted((r for r in done if json.dumps(r["point"], sort_keys=True) in order),
                      key=lambda r: order[json.dumps(r["point"], sort_keys=True)])
        out = []
        for r in done:
            ak = run_ackshape(r["point"], a.ackshape)
            out.append(dict(point=r["point"], ns3=r["ns3"], ackshape=ak, **judge(r["ns3"], ak, r["point"]["ecn"])))
            print(f"[{len(out)}/{len(done)}] " + fmt_row(out[-1]), file=sys.stderr, flush=True)
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
        print_table(out)
        return
    if a.cmd == "point":
        p = point(**dict(kv.split("=", 1) for kv in a.kv))
        r = run_point(p, a.python, a.ackshape, a.ns3_set, a.qdisc_extra)
        print(json.dumps(r, indent=1))
        print_table([r])
        return
    pts = grid_points()
    if a.only:
        pts = [p for p in pts if p["qdisc"] == a.only]
    done = []
    if a.json and os.path.exists(a.json):
        with open(a.json) as f:
            done = json.load(f)
    have = {json.dumps(r["point"], sort_keys=True) for r in done}
    for i, p in enumerate(pts):
        if json.dumps(p, sort_keys=True) in have:
            continue
        t0 = time.time()
        r = run_point(p, a.python, a.ackshape)
        done.append(r)
        print(f"[{i + 1}/{len(pts)}] {time.time() - t0:.0f}s " + fmt_row(r), file=sys.stderr, flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(done, f, indent=1)
    order = {json.dumps(p, sort_keys=True): k for k, p in enumerate(grid_points())}
    done = [r for r in done if json.dumps(r["point"], sort_keys=True) in order]
    done.sort(key=lambda r: order[json.dumps(r["point"], sort_keys=True)])
    print_table(done)


if __name__ == "__main__":
    main()
