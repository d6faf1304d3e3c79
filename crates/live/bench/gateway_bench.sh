#!/bin/sh
# Gateway benchmark (issue 5, "Done when" 7): TCP goodput (iperf3) through the kernel bridge vs the
# ackshape gateway in pass-through on the same veth topology, added latency at light load, and
# the timing error of held frames (wanem delay line). Needs root, iproute2, ethtool, iperf3.
# Usage: crates/live/bench/gateway_bench.sh [SECONDS_PER_IPERF_RUN]
set -eu
cd "$(dirname "$0")/../../.."
ACKS_BENCH_SECS="${1:-5}" exec cargo bench -p ackshape-live --bench gateway_bench
