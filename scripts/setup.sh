#!/usr/bin/env bash
# Install what ackshape's tests and live path need on a fresh Debian machine (idempotent).
# Debian packages: tshark (pcap checksum checks), tcpdump, iperf3, ethtool, iproute2, ping,
# ns2 (ns-2.35, the conformance peer of scripts/peers/ns2 and the speed peer of scripts/bench_sim.py).
set -euo pipefail

need=()
command -v tshark  >/dev/null 2>&1 || need+=(tshark)
command -v tcpdump >/dev/null 2>&1 || need+=(tcpdump)
command -v iperf3  >/dev/null 2>&1 || need+=(iperf3)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v ip      >/dev/null 2>&1 || need+=(iproute2)
command -v ping    >/dev/null 2>&1 || need+=(iputils-ping)
command -v ns      >/dev/null 2>&1 || need+=(ns2)

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: missing ${need[*]} and cannot install them (need root and apt-get); tests that use them will say so" >&2
  else
    echo "setup: installing ${need[*]}" >&2
    apt-get update -qq
    # tshark asks a debconf question (non-root capture) unless told not to.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi
