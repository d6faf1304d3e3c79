#!/usr/bin/env bash
# The whole test suite: installs what the tests need (and builds the Python package), then runs
# every test of every crate, then the Python package's tests (pytest).
# Live tests create their own network namespaces (root needed; they skip loudly otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo test --workspace --release "$@"
# The Python tests compare with target/release/ackshape, which the cargo tests built.
"${ACKSHAPE_VENV:-target/venv}/bin/python" -m pytest crates/py/tests -q
