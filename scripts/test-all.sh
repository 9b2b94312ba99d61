#!/usr/bin/env bash
# Runs every check CI runs: formatting, clippy, and all tests (root-only tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --profile ci --no-fail-fast
