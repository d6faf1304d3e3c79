#!/usr/bin/env bash
# The whole test suite: installs what the tests need, then runs every test of every crate.
# Live tests create their own network namespaces (root needed; they skip loudly otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cargo test --workspace --release "$@"
