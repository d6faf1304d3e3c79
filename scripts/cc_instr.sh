#!/bin/sh
# Instructions per ACK of the sender's work for each congestion controller, and the ratio to
# reno, load-independent: runs the ignored workload test (crates/core/tests/cc_perf.rs) under
# callgrind, collecting only inside the sender's ACK handling (`cc_workload::sender_ack`, i.e.
# `Connection::handle_packet`) and, second figure, also inside its sending
# (`cc_workload::sender_send`, `poll_transmit`), each divided by the ACKs the sender handled.
# Usage: scripts/cc_instr.sh [SECS]   (simulated seconds, default 10; needs valgrind)
set -eu
SECS=${1:-10}
cd "$(dirname "$0")/.."
BIN=$(cargo test --release -p ackshape-core --test cc_perf --no-run 2>&1 | sed -n 's/.*(\(target[^)]*cc_perf[^)]*\)).*/\1/p' | tail -1)
count() { # KIND TOGGLE... → "instructions acks"
    kind=$1
    shift
    out=$(env CC_KIND="$kind" CC_SECS="$SECS" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" \
        "$BIN" --ignored --exact workload --nocapture 2>&1)
    echo "$(printf '%s\n' "$out" | sed -n 's/.*Collected : //p' | tr -d ,) $(printf '%s\n' "$out" | sed -n 's/^CC_ACKS //p')"
}
ref_a=
ref_b=
for kind in reno sack cubic bbr; do
    set -- $(count "$kind" --toggle-collect='*sender_ack*')
    a=$(($1 / $2))
    acks=$2
    set -- $(count "$kind" --toggle-collect='*sender_ack*' --toggle-collect='*sender_send*')
    b=$(($1 / $2))
    [ -n "$ref_a" ] || { ref_a=$a; ref_b=$b; }
    echo "$kind: $a instructions per ACK handled ($(awk "BEGIN{printf \"%.2f\", $a/$ref_a}")x reno), $b with sending ($(awk "BEGIN{printf \"%.2f\", $b/$ref_b}")x reno); $acks ACKs"
done
