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

# The Python package (crates/py) in a virtual environment of its own (ACKSHAPE_VENV, default
# target/venv): numpy and pandas (the package's), maturin (its build), pytest and
# dask[distributed] (its tests and the dask extra); then the package built from this tree.
venv="${ACKSHAPE_VENV:-target/venv}"
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "setup: installing python3-venv" >&2
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv python3-pip >/dev/null
      rm -rf "$venv"
      python3 -m venv "$venv"
    else
      echo "setup: cannot make a Python virtual environment (python3 -m venv failed; need root and apt-get to install python3-venv)" >&2
      exit 1
    fi
  fi
fi
if ! "$venv/bin/python" -c "import numpy, pandas, pytest, distributed, maturin" >/dev/null 2>&1; then
  echo "setup: installing maturin, numpy, pandas, pytest, dask[distributed] into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check maturin numpy pandas pytest 'dask[distributed]'
fi
echo "setup: building the Python package ackshape into $venv" >&2
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./crates/py
