#!/usr/bin/env python3
"""Conformance harness: the same dumbbell set-up in ns-2.35 and in ackshape, side by side.

Each point is one set-up: cc (reno | newreno | sack), Bernoulli loss p on the forward data path,
base RTT, bottleneck buffer (packets), flows, minimum RTO, delayed ACKs on/off, bottleneck rate.
ns-2.35 runs `dumbbell.tcl` (stock Agent/TCP/Reno, Newreno, Sack1 with TCPSink, TCPSink/DelAck,
TCPSink/Sack1(/DelAck), DropTail, ErrorModel); ackshape runs the equivalent scenario TOML built
here from the same parameters (`ackshape run S.toml --json`). Both get the same flow start times
(drawn from the point's seed). Results go to JSON; a ratio table is printed.

    python3 scripts/peers/ns2/harness.py point cc=sack loss=0.01 rtt=100 flows=1 [--seeds 16]
    python3 scripts/peers/ns2/harness.py grid --set reduced --flow-runs 16 --json out.json [--profile ns2|default]
    python3 scripts/peers/ns2/harness.py grid --set full --jobs 2 --seeds 3 --flow-runs 60 --ns2-cache C --json ns2.json
    python3 scripts/peers/ns2/harness.py grid --set full --jobs 2 --seeds 3 --flow-runs 60 --ns2-cache C --profile default --json default.json
    python3 scripts/peers/ns2/harness.py compare ns2.json default.json     # the docs/validation.md table
    python3 scripts/peers/ns2/harness.py grid --set papers --jobs 2 --seeds 6 --flow-runs 60 --json papers.json

`--ns2-cache C` keeps each ns-2.35 run's result in directory C, keyed by its command line and
dumbbell.tcl, so the second profile's grid reruns only ackshape.

Pass criterion of a point (the tolerance the test suite and docs/validation.md use): aggregate
goodput within 5% of ns-2.35's, and timeouts per flow within 25% or 2 of ns-2.35's.

Topology: sources -- r1 == r2 -- sinks; access links 100 Mbit/s, `acc_delay` (1 ms), 1000 packets;
bottleneck `bw` (10 Mbit/s default) with one-way delay rtt/2 - 2·acc_delay, drop-tail `buf` packets
both ways. ns-2's DropTail (`DropTail::enque`) drops an arrival when length + 1 >= queue-limit, so
it holds queue-limit - 1 waiting packets: ackshape's queues get `buf` - 1. Segments carry `size` =
1000 payload bytes plus 40 header bytes (ns-2's tcpip_base_hdr_size_; ackshape with timestamps
off). Loss is applied before the bottleneck queue in both (ns-2: `$ns lossmodel` on each access
link, at the link's head; `loss_at=exit` puts it after the bottleneck queue and link with
`$ns link-lossmodel`, for ns-2 only). Optional: `maxburst`, `window` (ns-2's window_, ackshape's
rcv_buf), UDP exponential on/off background `udp_kbps` (see dumbbell.tcl).
"""
import argparse
import hashlib
import itertools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TCL = os.path.join(HERE, "dumbbell.tcl")

GOODPUT_TOL = 0.05
TIMEOUT_REL_TOL = 0.25
TIMEOUT_ABS_TOL = 2.0

DEFAULTS = dict(cc="sack", loss=0.0, rtt=100, buf=100, flows=1, minrto=0.2, delack=0, bw=10.0,
                duration=100, warmup=10, seed=1, size=1000, window=4194, loss_at="entry", acc_delay=1.0,
                maxburst=0, udp_kbps=0.0)
NS2_CC = {"reno": "Reno", "newreno": "Newreno", "sack": "Sack1"}
ACK_CC = {"reno": "reno", "newreno": "new-reno", "sack": "sack"}


def point(**kw):
    p = dict(DEFAULTS)
    for k, v in kw.items():
        if k not in DEFAULTS:
            raise SystemExit(f"unknown parameter {k}")
        p[k] = type(DEFAULTS[k])(v) if not isinstance(DEFAULTS[k], float) else float(v)
    return p


def starts(p):
    """Flow start times: uniform in [0, 1 s), fixed by the point's seed; shared by both. The
    UDP background (if any) starts at the last one."""
    r = random.Random(1000 + p["seed"])
    return [round(r.uniform(0, 1.0), 6) for _ in range(p["flows"] + (p["udp_kbps"] > 0))]


def bottleneck_delay_ms(p):
    # RTT = 2 × (access + bottleneck + access) one-way delays.
    return max(p["rtt"] / 2.0 - 2.0 * p["acc_delay"], 0.1)


NS2_CACHE = None  # directory of stored ns-2.35 results (--ns2-cache), keyed by the command line


def run_ns2(p, ns="ns"):
    args = [ns, TCL,
            f"cc={NS2_CC[p['cc']]}", f"delack={p['delack']}", f"flows={p['flows']}",
            f"bw={p['bw']}Mb", f"delay={bottleneck_delay_ms(p)}ms", f"q={p['buf']}",
            f"loss={p['loss']}", f"loss_at={p['loss_at']}", f"minrto={p['minrto']}",
            f"size={p['size']}", f"window={p['window']}", f"duration={p['duration']}",
            f"warmup={p['warmup']}", f"seed={p['seed']}", f"acc_delay={p['acc_delay']}ms",
            "starts=" + ",".join(str(s) for s in starts(p))]
    if p["maxburst"]:
        args.append(f"maxburst={p['maxburst']}")
    if p["udp_kbps"] > 0:
        args.append(f"udp_rate={p['udp_kbps']}k")
    cached = None
    if NS2_CACHE:
        key = hashlib.sha256("\0".join(args[1:] + [open(TCL, "rb").read().hex()]).encode()).hexdigest()[:24]
        cached = os.path.join(NS2_CACHE, key + ".json")
        if os.path.exists(cached):
            with open(cached) as f:
                return json.load(f)
    with tempfile.TemporaryDirectory(prefix="ns2h-") as d:  # ns-2 writes nothing unless asked; keep cwd clean
        t0 = time.time()
        out = subprocess.run(args, cwd=d, check=True, capture_output=True, text=True).stdout
        wall = time.time() - t0
    r = json.loads(out.strip().splitlines()[-1])
    fl = r["flows"]
    data = sum(f["data_pkts"] for f in fl)
    res = dict(
        goodput_bps=r["aggregate_goodput_bps"],
        flow_goodput_bps=[f["goodput_bps"] for f in fl],
        timeouts_per_flow=sum(f["timeouts"] for f in fl) / len(fl),
        fast_retransmits_per_flow=sum(f["cwnd_cuts"] - f["timeouts"] for f in fl) / len(fl),
        retx_share=sum(f["rexmit_pkts"] for f in fl) / max(data, 1),
        queue_avg_pkts=r["queue_avg_pkts"],
        drops=r["drops"],
        bottleneck_tx_pkts=r["bottleneck_tx_pkts"],
        wall_s=wall,
    )
    if cached:
        with open(cached + ".tmp", "w") as f:
            json.dump(res, f)
        os.replace(cached + ".tmp", cached)
    return res


def scenario_toml(p, profile, extra_tcp=None):
    lines = [
        f'name = "ns2-conformance"', f"seed = {p['seed']}", f'duration = "{p["duration"]}s"',
        f'warmup = "{p["warmup"]}s"', 'bin = "1s"', "", "[tcp]",
    ]
    tcp = {}
    if profile == "ns2":
        tcp["profile"] = '"ns2"'
    tcp["cc"] = f'"{ACK_CC[p["cc"]]}"'
    tcp["sack"] = "true" if p["cc"] == "sack" else "false"
    tcp["mss"] = str(p["size"])
    tcp["timestamps"] = "false"  # 40-byte headers as ns-2's
    tcp["delack"] = "2" if p["delack"] else "1"
    tcp["min_rto"] = f'"{int(round(p["minrto"] * 1000))}ms"'
    # ns-2's window_ (receiver window in packets); the receive buffer holds as many segments.
    tcp["rcv_buf"] = f'"{p["window"]}pkt"'
    if p["maxburst"]:
        tcp["max_burst"] = str(p["maxburst"])
    if profile == "default":
        tcp["delack_timeout"] = '"100ms"'  # the DelAck sink's interval_, the one timer set-up key
    for k, v in (extra_tcp or {}).items():
        tcp[k] = v
    lines += [f"{k} = {v}" for k, v in tcp.items()]
    loss = f', loss = {{ kind = "bernoulli", p = {p["loss"]} }}' if p["loss"] > 0 else ""
    lines += [
        "", "[topology]", 'kind = "dumbbell"',
        f'bottleneck = {{ rate = "{p["bw"]}Mbit/s", delay = "{bottleneck_delay_ms(p)}ms", queue = "{p["buf"] - 1}pkt"{loss} }}',
        f'access = {{ rate = "100Mbit/s", delay = "{p["acc_delay"]}ms", queue = "999pkt" }}', "",
    ]
    st = starts(p)
    for s in st[: p["flows"]]:
        lines += ["[[flows]]", 'kind = "bulk"', f'start = "{s}s"', ""]
    if p["udp_kbps"] > 0:
        lines += ["[[flows]]", 'kind = "udp-onoff"', f'rate = "{p["udp_kbps"]}kbit/s"', 'on = "500ms"',
                  'off = "500ms"', 'packet_size = "1000B"', f'start = "{st[-1]}s"', ""]
    return "\n".join(lines)


def run_ackshape(p, binary, profile, extra_tcp=None):
    with tempfile.TemporaryDirectory(prefix="ns2h-") as d:
        path = os.path.join(d, "s.toml")
        with open(path, "w") as f:
            f.write(scenario_toml(p, profile, extra_tcp))
        t0 = time.time()
        res = subprocess.run([binary, "run", path, "--json", "--quiet"], cwd=d, capture_output=True, text=True)
        wall = time.time() - t0
        if res.returncode != 0:
            raise RuntimeError(f"ackshape failed: {res.stderr.strip()}\n{scenario_toml(p, profile, extra_tcp)}")
    s = json.loads(res.stdout)
    fl = [f for f in s["flows"] if f["kind"] == "bulk"]
    b = next(l for l in s["links"] if l["name"] == "bottleneck")
    data = sum(f["data_packets_sent"] for f in fl)
    return dict(
        goodput_bps=sum(f["goodput_bps"] for f in fl),
        flow_goodput_bps=[f["goodput_bps"] for f in fl],
        timeouts_per_flow=sum(f["timeouts"] for f in fl) / len(fl),
        fast_retransmits_per_flow=sum(f["fast_retransmits"] for f in fl) / len(fl),
        retx_share=sum(f["retransmitted_packets"] for f in fl) / max(data, 1),
        queue_avg_pkts=b["queue_avg_pkts"],
        drops=b["drops"],
        bottleneck_tx_pkts=b["tx_packets"],
        wall_s=wall,
    )


def judge(ns, ak):
    g = ak["goodput_bps"] / ns["goodput_bps"] if ns["goodput_bps"] > 0 else float("nan")
    t_ns, t_ak = ns["timeouts_per_flow"], ak["timeouts_per_flow"]
    t_ok = abs(t_ak - t_ns) <= max(TIMEOUT_ABS_TOL, TIMEOUT_REL_TOL * t_ns)
    g_ok = abs(g - 1.0) <= GOODPUT_TOL
    return dict(goodput_ratio=g, goodput_ok=g_ok, timeouts_ok=t_ok, ok=g_ok and t_ok)


def mean_runs(runs):
    """Average of per-seed results (per-flow goodputs concatenated)."""
    out = {}
    for k in runs[0]:
        if k == "flow_goodput_bps":
            out[k] = [g for r in runs for g in r[k]]
        else:
            out[k] = sum(r[k] for r in runs) / len(runs)
    return out


def seeds_for(p, seeds, flow_runs):
    """Seeds of a point: at least `seeds`, and enough that flows × seeds ≥ `flow_runs`. One
    flow's goodput under random loss varies by 10-25% between seeds (in ns-2.35 as in ackshape),
    so a mean over three single-flow runs cannot be judged against a 5% bound; points with many
    flows average over their flows already."""
    return max(seeds, math.ceil(flow_runs / p["flows"]))


def run_pair(p, k, binary, profile, ns, extra_tcp):
    q = dict(p, seed=p["seed"] + k)
    return run_ns2(q, ns), run_ackshape(q, binary, profile, extra_tcp)


def run_point(p, binary, profile, ns="ns", extra_tcp=None, seeds=1, runs=None):
    """One point; with seeds > 1, seeds p.seed .. p.seed + seeds - 1 (flow starts and loss
    draws differ per seed) and the means are compared. `runs`: the (ns-2, ackshape) results
    per seed when already run."""
    if runs is None:
        runs = [run_pair(p, k, binary, profile, ns, extra_tcp) for k in range(seeds)]
    ns_runs, ak_runs = [r[0] for r in runs], [r[1] for r in runs]
    ns_r, ak_r = mean_runs(ns_runs), mean_runs(ak_runs)
    r = dict(point=p, profile=profile, seeds=seeds, ns2=ns_r, ackshape=ak_r, **judge(ns_r, ak_r))
    gap = KNOWN_GAPS.get((p["cc"], p["loss"], p["rtt"], p["flows"]))
    if gap and profile == "ns2" and not r["ok"]:
        r["known_gap"] = gap
    return r


# --- grids -------------------------------------------------------------------------------------
#
# The full factor space: cc 3 × loss 4 × RTT 3 × buffer 3 × flows 3 × min RTO 2 × delayed ACK 2
# = 1296 points. Sampled: a full factorial of the three factors that decide most (cc × loss ×
# RTT, 36 cells), each cell run at one Latin-hypercube draw of the other four (buffer, flows,
# min RTO, delayed ACK), so every level of every factor appears about equally often; fixed seed.

LEVELS = dict(cc=["reno", "newreno", "sack"], loss=[0.0, 0.001, 0.01, 0.05], rtt=[10, 100, 400],
              buf=[10, 100, 1000], flows=[1, 10, 50], minrto=[0.2, 1.0], delack=[0, 1])
MAIN = ["cc", "loss", "rtt"]
REST = ["buf", "flows", "minrto", "delack"]


def lhs(n, seed):
    """n Latin-hypercube draws over REST: each factor's levels spread evenly over the n rows, in
    an independently shuffled order per factor."""
    r = random.Random(seed)
    cols = {}
    for f in REST:
        lv = LEVELS[f]
        col = [lv[i * len(lv) // n] for i in range(n)]
        r.shuffle(col)
        cols[f] = col
    return [{f: cols[f][i] for f in REST} for i in range(n)]


def full_grid(seed=20261203, reps=1):
    cells = list(itertools.product(*[LEVELS[f] for f in MAIN]))
    pts = []
    for rep in range(reps):
        rest = lhs(len(cells), seed + rep)
        for (cc, loss, rtt), o in zip(cells, rest):
            pts.append(point(cc=cc, loss=loss, rtt=rtt, **o))
    return pts


KNOWN_GAPS = {
    # (cc, loss, rtt, flows): cause. Printed, not asserted, by the test suite; listed in
    # docs/validation.md. Remove an entry when the point agrees.
    ("reno", 0.0, 100, 50): "Reno, 50 flows, 10-packet drop-tail: ns-2.35's flows fast-retransmit at "
    "smaller windows (a quarter of them at 2-3 segments against 4% here) and then time out when the "
    "halved window's one segment is lost again; goodput agrees within 2%; not isolated",
}


def reduced_grid():
    """About a minute on 2 cores (with --flow-runs 16): the corners where timeouts and loss
    recovery decide."""
    return [
        # One flow, 1% Bernoulli loss, 100 ms, an ACK per segment (the last row).
        point(cc="sack", loss=0.01, rtt=100, flows=1),
        point(cc="newreno", loss=0.01, rtt=100, flows=1),
        point(cc="reno", loss=0.001, rtt=100, flows=1),
        point(cc="sack", loss=0.05, rtt=10, flows=1),
        # Drop-tail congestion: SACK with delayed ACKs; NewReno at 1 Mbit/s.
        point(cc="sack", loss=0.0, rtt=40, flows=10, buf=100, delack=1, duration=60),
        point(cc="newreno", loss=0.0, rtt=100, flows=20, buf=50, duration=60, bw=1),
        # Reno's second loss in a window waits for the timer (bug_fix_).
        point(cc="reno", loss=0.01, rtt=10, flows=10, buf=100),
        # Windows of about two segments: 50 SACK flows, 10 ms, 100 packets.
        point(cc="sack", loss=0.0, rtt=10, flows=50, buf=100),
    ]


# Paper 003's base topology (the experiments/p3 files): 25 ms bottleneck, 5 ms access links,
# 50-packet drop-tail, 1000-byte segments, receiver window 128, maxburst 4, an ACK per segment,
# exponential on/off UDP at 200 kbit/s while on (0.5 s / 0.5 s), 500 s.
P3_BASE = dict(cc="sack", rtt=70, acc_delay=5.0, buf=50, window=128, maxburst=4, udp_kbps=200.0, duration=500)


def papers_grid():
    """The paper set-ups of the conformance issue that fit the dumbbell."""
    return [
        point(**P3_BASE, flows=20, bw=1, minrto=0.2),
        point(**P3_BASE, flows=20, bw=1, minrto=1.0),
        point(**P3_BASE, flows=6, bw=1, minrto=0.2),
        point(**P3_BASE, flows=6, bw=1, minrto=1.0),
        point(**P3_BASE, flows=20, bw=10, minrto=0.2),
        point(cc="sack", loss=0.01, rtt=100, flows=1),
        point(cc="newreno", loss=0.01, rtt=100, flows=1),
    ]


def fmt_table(rows):
    h = ("cc", "p", "RTT", "buf", "n", "minRTO", "dack", "gput ns2", "gput ak", "ratio", "TO/f ns2", "TO/f ak",
         "retx ns2", "retx ak", "q ns2", "q ak", "drop ns2", "drop ak", "ok")
    out = ["| " + " | ".join(h) + " |", "|" + "---|" * len(h)]
    for r in rows:
        p, a, b = r["point"], r["ns2"], r["ackshape"]
        out.append("| " + " | ".join([
            p["cc"], f"{p['loss']:g}", f"{p['rtt']}", f"{p['buf']}", f"{p['flows']}", f"{p['minrto']:g}",
            "on" if p["delack"] else "off", f"{a['goodput_bps']/1e6:.3f}", f"{b['goodput_bps']/1e6:.3f}",
            f"{r['goodput_ratio']:.3f}", f"{a['timeouts_per_flow']:.1f}", f"{b['timeouts_per_flow']:.1f}",
            f"{100*a['retx_share']:.2f}%", f"{100*b['retx_share']:.2f}%", f"{a['queue_avg_pkts']:.1f}",
            f"{b['queue_avg_pkts']:.1f}", f"{a['drops']:.0f}", f"{b['drops']:.0f}", "yes" if r["ok"] else "**no**",
        ]) + " |")
    return "\n".join(out)


def compare_table(ns2_rows, def_rows):
    """The docs/validation.md table: one row per point, ns-2.35 beside both ackshape profiles."""
    out = ["| cc | p | RTT ms | buf | flows | min RTO | delack | goodput ns-2 (Mbit/s) | ratio, ns2 profile | ratio, default "
           "| TO/flow ns-2 | TO/flow, ns2 profile | TO/flow, default | retx ns-2 | retx, ns2 profile | queue ns-2 "
           "| queue, ns2 profile | drops ns-2 | drops, ns2 profile | within: ns2 / default |", "|" + "---|" * 20]
    for r, d in zip(ns2_rows, def_rows):
        p, n, k, dk = r["point"], r["ns2"], r["ackshape"], d["ackshape"]
        assert p == d["point"], "the two result files must hold the same grid"
        out.append("| " + " | ".join([
            p["cc"], f"{p['loss']:g}", f"{p['rtt']}", f"{p['buf']}", f"{p['flows']}", f"{p['minrto']:g}",
            "on" if p["delack"] else "off", f"{n['goodput_bps']/1e6:.3f}", f"{r['goodput_ratio']:.3f}",
            f"{d['goodput_ratio']:.3f}", f"{n['timeouts_per_flow']:.1f}", f"{k['timeouts_per_flow']:.1f}",
            f"{dk['timeouts_per_flow']:.1f}", f"{100*n['retx_share']:.2f}%", f"{100*k['retx_share']:.2f}%",
            f"{n['queue_avg_pkts']:.1f}", f"{k['queue_avg_pkts']:.1f}", f"{n['drops']:.0f}", f"{k['drops']:.0f}",
            ("yes" if r["ok"] else "no") + " / " + ("yes" if d["ok"] else "no")]) + " |")
    for name, rows in (("ns2", ns2_rows), ("default", def_rows)):
        out.append(f"\nprofile {name}: {sum(x['ok'] for x in rows)}/{len(rows)} within both bounds; goodput within 5%: "
                   f"{sum(x['goodput_ok'] for x in rows)}; timeouts within bounds: {sum(x['timeouts_ok'] for x in rows)}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["point", "grid", "toml", "compare"])
    ap.add_argument("params", nargs="*", help="point parameters key=value (point/toml mode); "
                    "compare mode: NS2_PROFILE.json DEFAULT_PROFILE.json from two grid runs")
    ap.add_argument("--set", dest="gset", default="reduced", choices=["reduced", "full", "papers"])
    ap.add_argument("--profile", default="ns2", choices=["ns2", "default"])
    ap.add_argument("--tcp", action="append", default=[], help="extra [tcp] key=TOMLvalue for ackshape")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "ackshape"))
    ap.add_argument("--ns", default="ns")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1, help="seeds per point (at least); means are compared")
    ap.add_argument("--flow-runs", type=int, default=1,
                    help="more seeds for points with few flows: flows × seeds ≥ this (the full grid: 60)")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--ns2-cache", help="directory keeping each ns-2.35 run's result (keyed by its command line "
                    "and dumbbell.tcl), so a second profile's grid reuses the first one's ns-2 runs")
    ap.add_argument("--min-pass", type=float, default=None,
                    help="exit 1 unless at least this fraction of points pass")
    a = ap.parse_intermixed_args()
    extra = dict(kv.split("=", 1) for kv in a.tcp)
    kw = dict(kv.split("=", 1) for kv in a.params) if a.mode != "compare" else {}
    if a.mode == "compare":
        rows = [json.load(open(f))["rows"] for f in a.params]
        print(compare_table(*rows))
        return 0
    if a.mode == "toml":
        print(scenario_toml(point(**kw), a.profile, extra))
        return 0
    if shutil.which(a.ns) is None:
        print(f"ns-2 binary {a.ns!r} not found (Debian/Ubuntu: apt-get install ns2)", file=sys.stderr)
        return 3
    global NS2_CACHE
    if a.ns2_cache:
        os.makedirs(a.ns2_cache, exist_ok=True)
        NS2_CACHE = a.ns2_cache
    grids = dict(reduced=reduced_grid, full=full_grid, papers=papers_grid)
    pts = [point(**kw)] if a.mode == "point" else grids[a.gset]()
    t0 = time.time()
    jobs = [(i, k) for i, p in enumerate(pts) for k in range(seeds_for(p, a.seeds, a.flow_runs))]
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        res = list(ex.map(lambda j: run_pair(pts[j[0]], j[1], a.binary, a.profile, a.ns, extra), jobs))
    rows = []
    for i, p in enumerate(pts):
        runs = [r for (pi, _), r in zip(jobs, res) if pi == i]
        rows.append(run_point(p, a.binary, a.profile, a.ns, extra, len(runs), runs))
    print(fmt_table(rows))
    n_ok = sum(r["ok"] for r in rows)
    print(f"\n{n_ok}/{len(rows)} points within tolerance (goodput ±{GOODPUT_TOL:.0%}, timeouts/flow "
          f"±{TIMEOUT_REL_TOL:.0%} or ±{TIMEOUT_ABS_TOL:g}); profile {a.profile}; {a.seeds} seed(s) or more (flows × seeds ≥ {a.flow_runs}); {time.time()-t0:.0f} s wall")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(profile=a.profile, extra_tcp=extra, tolerance=dict(
                goodput=GOODPUT_TOL, timeouts_rel=TIMEOUT_REL_TOL, timeouts_abs=TIMEOUT_ABS_TOL), rows=rows), f, indent=1)
    if a.min_pass is not None and n_ok < a.min_pass * len(rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
