#!/bin/sh
# Gateway benchmark (issue 5, "Done when" 7; issue 6, point 8): TCP goodput (iperf3) through the
# kernel bridge vs the ackshape gateway on the same veth topology, added latency at light load, the
# timing error of held frames (wanem delay line), and (part "manyflows") goodput, data-plane CPU
# per Gbit/s and ACK release timing while PostACK shapes 1 000 / 100 000 generated flows.
# Needs root, iproute2, ethtool, iperf3. Parts: ACKS_BENCH_PARTS=throughput,timing,box,manyflows.
# Usage: crates/live/bench/gateway_bench.sh [SECONDS_PER_IPERF_RUN]
set -eu
cd "$(dirname "$0")/../../.."
ACKS_BENCH_SECS="${1:-5}" exec cargo bench -p ackshape-live --bench gateway_bench
