#!/usr/bin/env python3
"""Classify a dumbbell scenario's retransmission timeouts from packet captures.

Runs `ackshape run SCENARIO --seed S --set tcp.min_rto=R --pcap access-sN --pcap access-dN ...` for
each seed and minimum RTO, reads the captures with tshark and, per sender host, finds

* timeouts: retransmissions of SND.UNA sent more than 100 ms after the flow's last ACK arrived (a
  fast retransmit leaves at the instant of the duplicate ACK that triggers it), split by whether
  an earlier transmission of that segment had reached the receiver's access link before the
  timer fired ("spurious": the segment was not lost) or not ("lost"), and by the duplicate ACKs
  the sender had counted for SND.UNA when it fired;
* fast retransmits of a first transmission of SND.UNA, and how many came more than `--late`
  seconds after SND.UNA last advanced (with a smaller minimum RTO, the timer would have fired first).

    python3 scripts/classify_timeouts.py experiments/p3/thesis-topology.toml --senders s0,s3,s4,s5 \\
        --receivers d0,d1,d2,d3,d4,d5 --seeds 1-6 --min-rto 1s,200ms

Needs tshark. Prints one table per minimum RTO; sender hosts are named as in the scenario's
dumbbell (sN, dN).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows(path):
    out = subprocess.run(
        ["tshark", "-r", path, "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "tcp.srcport", "-e",
         "ip.dst", "-e", "tcp.dstport", "-e", "tcp.seq_raw", "-e", "tcp.len", "-e", "tcp.ack_raw"],
        capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 8 or not f[5]:
            continue
        yield float(f[0]), (f[1], f[2]), (f[3], f[4]), int(f[5]), int(f[6]), int(f[7] or 0)


def classify(d, senders, receivers, late):
    arrived = collections.defaultdict(lambda: collections.defaultdict(list))  # flow -> seq -> arrival times
    for r in receivers:
        for t, a, b, seq, ln, _ in rows(os.path.join(d, f"access-{r}.pcap")):
            if ln > 0:
                arrived[(a, b)][seq].append(t)
    res = collections.Counter()
    for s in senders:
        st = {}
        for t, a, b, seq, ln, ack in rows(os.path.join(d, f"access-{s}.pcap")):
            if ln == 0:  # an ACK reaching the sender
                f = st.setdefault((b, a), dict(una=0, hi=0, sent=collections.defaultdict(list), dup=0, adv=0.0))
                f["last_ack"] = t
                if ack > f["una"]:
                    f["una"], f["dup"], f["adv"] = ack, 0, t
                elif ack == f["una"]:
                    f["dup"] += 1
                continue
            k = (a, b)
            f = st.setdefault(k, dict(una=0, hi=0, sent=collections.defaultdict(list), dup=0, adv=0.0))
            if seq < f["hi"] and seq == f["una"]:
                timer = t - f.get("last_ack", 0.0) > 0.1
                if timer:
                    early = [x for x in arrived[k].get(seq, []) if x < t]
                    res[(s, "timeouts")] += 1
                    res[(s, "  head " + ("spurious (had reached the receiver)" if early else "lost"))] += 1
                    res[(s, f"  duplicate ACKs counted when it fired: {min(f['dup'], 3)}{'+' if f['dup'] >= 3 else ''}")] += 1
                elif len(f["sent"][seq]) == 1:
                    res[(s, "fast retransmits")] += 1
                    if t - f["adv"] > late:
                        res[(s, f"  more than {late:g} s after SND.UNA last advanced")] += 1
            f["sent"][seq].append(t)
            f["hi"] = max(f["hi"], seq + ln)
    return res


def seeds(spec):
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--senders", required=True, help="sender hosts, e.g. s0,s3")
    ap.add_argument("--receivers", required=True, help="receiver hosts, e.g. d0,d3")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--min-rto", default="1s,200ms")
    ap.add_argument("--late", type=float, default=0.6)
    ap.add_argument("--set", dest="sets", action="append", default=[], help="extra `run --set` (repeatable)")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "ackshape"))
    a = ap.parse_args()
    senders, receivers = a.senders.split(","), a.receivers.split(",")
    for rto in a.min_rto.split(","):
        tot = collections.Counter()
        for seed in seeds(a.seeds):
            with tempfile.TemporaryDirectory(prefix="rto-") as d:
                cmd = [a.binary, "run", a.scenario, "--quiet", "--seed", str(seed), "--set", f'tcp.min_rto="{rto}"',
                       "--out", d]
                for x in a.sets:
                    cmd += ["--set", x]
                for h in senders + receivers:
                    cmd += ["--pcap", f"access-{h}"]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                tot.update(classify(d, senders, receivers, a.late))
        print(f"min RTO {rto}, seeds {a.seeds}:")
        for s in senders:
            keys = [k for k in tot if k[0] == s]
            for what in ("timeouts", "fast retransmits"):
                print(f"  {s} {what}: {tot[(s, what)]}")
                for k in sorted(keys):
                    if k[1].startswith("  ") and (("fast" in what) == ("advanced" in k[1])):
                        print(f"  {s}  {k[1].strip()}: {tot[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
