#!/usr/bin/env bash
# Runs every check CI runs: formatting, clippy, all tests (root-only tests included), and
# the profile-guided build, which must give the plain build's results.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --profile ci --no-fail-fast
scripts/build-pgo.sh --check
