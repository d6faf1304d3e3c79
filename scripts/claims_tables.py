#!/usr/bin/env python3
"""The counts and readings tables of docs/reproduction.md, from `ackshape reproduce --json` output.

    ackshape reproduce --json > claims.json          # or --quick --json, or one file per paper
    python3 scripts/claims_tables.py claims.json [more.json ...]

Prints two Markdown tables:
- counts per paper: the primary reading's claims that are the paper's (not supplementary), by status, the
  verdict, and the supplementary claims by status;
- readings: per experiment and unstated parameter, the primary value, the other values run, and for each
  claim run under them the readings under which it holds ("primary", a value, or "none").
"""

import collections
import json
import re
import sys


def verdict(c):
    counted = sum(c.values())
    if counted and c["holds"] == counted:
        return "reproduced"
    if c["holds"] == 0:
        return "not reproduced"
    return "partly reproduced"


def parse_reading(text):
    """'param: value; param2: value2' -> [(param, value)] ('stated' -> [])."""
    if text == "stated":
        return []
    out = []
    # A value may hold "; " itself ("none (the paper gives none; ...)"): split only before "param: ".
    for part in re.split(r"; (?=[^;:()]+: )", text):
        param, _, value = part.partition(": ")
        out.append((param, value))
    return out


def counts_table(records):
    counted = collections.defaultdict(collections.Counter)
    supp = collections.defaultdict(collections.Counter)
    for r in records:
        if not r["primary"]:
            continue
        paper = r["id"].split("-")[0]
        (supp if r["supplementary"] else counted)[paper][r["status"]] += 1
    lines = [
        "| Paper | Claims counted | holds | fails | not assessable | verdict | supplementary (holds / fails / n. a.) |",
        "|---|---|---|---|---|---|---|",
    ]
    total = collections.Counter()
    for paper in sorted(set(counted) | set(supp)):
        c, s = counted[paper], supp[paper]
        total.update(c)
        lines.append(
            f"| {paper} | {sum(c.values())} | {c['holds']} | {c['fails']} | {c['not-assessable']} | {verdict(c)} "
            f"| {sum(s.values())} ({s['holds']} / {s['fails']} / {s['not-assessable']}) |"
        )
    lines.append(f"| all | {sum(total.values())} | {total['holds']} | {total['fails']} | {total['not-assessable']} | | |")
    return "\n".join(lines)


def readings_table(records):
    by_exp = collections.OrderedDict()
    for r in records:
        by_exp.setdefault(r["id"], []).append(r)
    lines = [
        "| Experiment | Unstated parameter | Primary reading | Other readings run | Claims: readings under which each holds |",
        "|---|---|---|---|---|",
    ]
    for exp, recs in by_exp.items():
        others = [r for r in recs if not r["primary"]]
        if not others:
            continue
        primary = {r["claim_id"]: r for r in recs if r["primary"]}
        params = collections.OrderedDict()
        for r in others:
            for param, value in parse_reading(r["reading"]):
                params.setdefault(param, collections.OrderedDict()).setdefault(value, []).append(r)
        for param, values in params.items():
            prim_value = "?"
            claims = collections.OrderedDict()
            for vrecs in values.values():
                for r in vrecs:
                    claims.setdefault(r["claim_id"], [])
            for cid in claims:
                p = primary.get(cid)
                if p is not None:
                    for pp, pv in parse_reading(p["reading"]):
                        if pp == param:
                            prim_value = pv
                    if p["status"] == "holds":
                        claims[cid].append("primary")
            for value, vrecs in values.items():
                for r in vrecs:
                    if r["status"] == "holds":
                        claims[r["claim_id"]].append(value)
            held = "; ".join(f"`{cid}`: {', '.join(v) if v else 'none'}" for cid, v in claims.items())
            lines.append(f"| {exp} | {param} | {prim_value} | {'; '.join(values)} | {held} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    records = []
    for f in sys.argv[1:]:
        try:
            with open(f) as fh:
                records.extend(json.load(fh))
        except (OSError, ValueError) as e:
            sys.exit(f"claims_tables: {f}: {e} (expected the JSON list of `ackshape reproduce --json`)")
    print(counts_table(records))
    print()
    print(readings_table(records))


if __name__ == "__main__":
    main()
