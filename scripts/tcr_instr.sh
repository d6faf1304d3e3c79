#!/bin/sh
# Instructions per operation of TCR (core::shape::tcr), load-independent: runs the ignored
# workload test under callgrind with 0 and N operations and divides the difference by N.
# Usage: scripts/tcr_instr.sh [N]   (needs valgrind)
set -eu
N=${1:-100000}
cd "$(dirname "$0")/.."
BIN=$(cargo test --release -p ackshape-core --test tcr_perf --no-run 2>&1 | sed -n 's/.*(\(target[^)]*tcr_perf[^)]*\)).*/\1/p' | tail -1)
count() {
    env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" --ignored --exact workload 2>&1 |
        sed -n 's/.*Collected : //p' | tr -d ,
}
for pacing in per-flow class-tick; do
    for flows in 16 4096; do
        for mode in data ack; do
            a=$(count TCR_OPS=0 TCR_FLOWS=$flows TCR_MODE=$mode TCR_PACING=$pacing)
            b=$(count TCR_OPS=$N TCR_FLOWS=$flows TCR_MODE=$mode TCR_PACING=$pacing)
            echo "$pacing, $flows flows, $mode: $(( (b - a) / N )) instructions per operation"
        done
    done
done
