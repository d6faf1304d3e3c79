#!/bin/sh
# Instructions per packet (one enqueue + one dequeue) of the AQM disciplines against drop-tail and
# RED, load-independent: runs the ignored workload test (crates/core/tests/aqm_perf.rs) under
# callgrind with 0 and N rounds and divides the difference by N.
# Usage: scripts/aqm_instr.sh [N]   (needs valgrind)
set -eu
N=${1:-100000}
cd "$(dirname "$0")/.."
BIN=$(cargo test --release -p ackshape-core --test aqm_perf --no-run 2>&1 | sed -n 's/.*(\(target[^)]*aqm_perf[^)]*\)).*/\1/p' | tail -1)
count() {
    env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" --ignored --exact workload 2>&1 |
        sed -n 's/.*Collected : //p' | tr -d ,
}
for flows in 16 1024; do
    for kind in drop-tail red codel fq-codel pie cake cake-shaped cake-ack-filter; do
        a=$(count AQM_OPS=0 AQM_FLOWS=$flows AQM_KIND=$kind)
        b=$(count AQM_OPS=$N AQM_FLOWS=$flows AQM_KIND=$kind)
        echo "$kind, $flows flows: $(( (b - a) / N )) instructions per packet"
    done
done
