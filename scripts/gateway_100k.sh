#!/bin/sh
# 100,000 concurrent TCP flows through a simulated edge gateway (benchmark; docs/benchmarks.md
# "100,000-flow gateway"). One process per mechanism, so the peak RSS is that run's:
#   none         the same gateway class with no ACK mechanism (the simulator's own cost: hosts, TCP, links)
#   tcr          TCP rate control (paper 001: max-min + per-flow ACK pacing + rwnd rewrite)
#   postack-zt   PostACK zero-timer over per-flow DRR queues (paper 000 Fig. 13/14)
# Prints per run: events, wall time, events/s, peak RSS, RSS per flow, and (vs `none`) per flow.
# Usage: scripts/gateway_100k.sh [FLOWS] [MECHANISMS...]   (default 100000; none tcr postack-zt)
# Needs target/release/ackshape (cargo build --release -p ackshape-cli) and GNU time (/usr/bin/time).
set -eu
N=${1:-100000}
[ $# -gt 0 ] && shift
MECHS=${*:-none tcr postack-zt}
BIN=${ACKSHAPE:-$(dirname "$0")/../target/release/ackshape}
DIR=${OUT:-$(mktemp -d /tmp/gateway_100k.XXXXXX)}
scenario() { # $1 = mechanism table, $2 = extra class keys
cat <<T
# $N bulk Reno flows from 1000 hosts through one 1 Gbit/s gateway class (10 kbit/s each, ~1.25
# packets/s), 100 ms one-way WAN delay, starting over the first 10 s; measured over 15-30 s.
name = "gateway-$N-flows"
seed = 1
duration = "30s"
warmup = "15s"
[tcp]
cc = "reno"
mss = 1000
delack = 1
initial_window = 2
rcv_buf = "64000B"
[topology]
kind = "dumbbell"
senders = 1000
bottleneck = { rate = "2Gbit/s", delay = "100ms", queue = "100000pkt" }
access = { rate = "10Gbit/s", delay = "1ms", queue = "100000pkt" }
[[flows]]
kind = "bulk"
count = $N
start = "uniform(0s, 10s)"
[[middlebox]]
node = "left"
wan = "bottleneck"
kind = "gateway"
policy = { flows = { max_flows = 200000 }, class = [{ name = "all", rate = "1Gbit/s", queue = "100000pkt", $2 mechanism = $1 }], rule = [{ class = "all" }] }
T
}
base=""
echo "flows $N; results in $DIR; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-11s %10s %9s %10s %10s %9s %12s %9s %9s\n' mechanism events wall_s events/s peak_MB B/flow B/flow-none gput_Mb/s class_q
for m in $MECHS; do
  case $m in
    none) scenario '{ kind = "none" }' '' > "$DIR/$m.toml" ;;
    tcr) scenario '{ kind = "tcr" }' '' > "$DIR/$m.toml" ;;
    postack-zt) scenario '{ kind = "postack", variant = "zero-timer" }' 'qdisc = { kind = "pfq-drr" },' > "$DIR/$m.toml" ;;
    postack-onoff) scenario '{ kind = "postack", variant = "on-off" }' '' > "$DIR/$m.toml" ;;
    *) echo "unknown mechanism $m" >&2; exit 2 ;;
  esac
  /usr/bin/time -v "$BIN" run "$DIR/$m.toml" --out "$DIR/o-$m" > "$DIR/$m.log" 2> "$DIR/$m.time"
  python3 - "$DIR" "$m" "$N" "$base" <<'P'
import json, re, statistics as st, sys
d, m, n, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = json.load(open(f"{d}/o-{m}/summary.json"))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f"{d}/{m}.time").read()).group(1)) * 1024
ev, wall = s["sim"]["events"], s["sim"]["wall_time_s"]
g = [f["goodput_bps"] for f in s["flows"]]
c = s["middleboxes"][0]["stats"]["classes"]["all"]
extra = f"{(rss - int(base)) / n:.0f}" if base else "-"
print(f"{m:<11} {ev:>10} {wall:>9.1f} {ev / wall:>10.0f} {rss / 2**20:>10.0f} {rss / n:>9.0f} {extra:>12} {sum(g) / 1e6:>9.1f} {c['data_queue_avg_pkts']:>9.0f}")
open(f"{d}/{m}.rss", "w").write(str(rss))
P
  [ "$m" = none ] && base=$(cat "$DIR/none.rss")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
