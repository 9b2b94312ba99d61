#!/usr/bin/env bash
# Builds `fabric` with profile-guided optimisation (PGO): an instrumented build runs a
# training set, then the release build is optimised with the profile it wrote (which
# branches are taken, which calls are hot). Results are the same as the plain release
# build's (same digests; `--check` proves it on three runs); only the CPU time changes
# (docs/sim.md, the session 14 section on the profile-guided build).
#
# The training set is the repository's own scenarios and presets, not the benchmarks'
# inputs: htsim's 1024-host permutation and `fat-tree-k48` are never run here, so the
# figures measured on them are out of sample.
#
# Needs llvm-profdata of the LLVM major version rustc uses (`rustc -vV`): from
# `rustup component add llvm-tools`, or the distribution's llvm-<major> package
# (scripts/install-deps.sh installs it).
#
# usage: scripts/build-pgo.sh [--check]
#   Writes target/pgo/release/fabric. With --check, also runs three scenarios with it
#   and with the plain release build and fails if any digest differs.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "build-pgo: unknown argument '$1' (expected nothing or --check)" >&2; exit 2 ;;
esac

major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
if [ -z "$major" ]; then
  echo "build-pgo: rustc -vV names no LLVM version" >&2
  exit 1
fi

# llvm-profdata whose major version is rustc's LLVM's (the profile format follows it).
find_profdata() {
  local sysroot c
  sysroot=$(rustc --print sysroot)
  for c in "$sysroot"/lib/rustlib/*/bin/llvm-profdata "llvm-profdata-$major" \
    "/usr/lib/llvm-$major/bin/llvm-profdata" llvm-profdata; do
    if command -v "$c" >/dev/null 2>&1 &&
      grep -Eq "LLVM version $major\." <<<"$("$c" --version 2>/dev/null)"; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}
if ! profdata=$(find_profdata); then
  echo "build-pgo: no llvm-profdata for LLVM $major (rustc's); install llvm-$major" \
    "(apt) or run 'rustup component add llvm-tools'" >&2
  exit 1
fi

data=target/pgo-data
rm -rf "$data"
mkdir -p "$data"
data_abs=$(cd "$data" && pwd)

echo "build-pgo: instrumented build (target/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$data_abs" \
  cargo build --release --bin fabric --target-dir target/pgo-gen --quiet
gen=target/pgo-gen/release/fabric

echo "build-pgo: training runs" >&2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for s in permutation incast-15to1 ring-allreduce moe-all-to-all fairness; do
  for cc in nscc dcqcn; do
    for lb in ecmp spray; do
      "$gen" sim --preset fat-tree-k8 --scenario "scenarios/$s.toml" --cc "$cc" --lb "$lb" \
        --quiet >/dev/null
    done
  done
done
"$gen" sim --preset fat-tree-k16 --scenario scenarios/permutation.toml --quiet >/dev/null
"$gen" sim --preset fat-tree-k8 --scenario scenarios/link-failure.toml --quiet >/dev/null
"$gen" sim --preset fat-tree-k4 --scenario scenarios/incast-15to1.toml --cc hpcc --lb mixed \
  --quiet >/dev/null
"$gen" build --out "$scratch/build" >/dev/null
"$gen" routes verify --preset fat-tree-k32 --lft >/dev/null
"$gen" routes verify --preset deepseek-mpft --fail-links 20 --seed 7 --lft >/dev/null
"$gen" routes export --preset fat-tree-k16 --format ip,sonic,opensm --out "$scratch/tables" \
  >/dev/null
"$gen" plan resilience fat-tree-k16 --job-gpus 256 --days 30 --trials 20 >/dev/null
"$gen" place job fat-tree-k8 --gpus 16 --pattern ring >/dev/null

"$profdata" merge -o "$data/fabric.profdata" "$data"

echo "build-pgo: optimised build (target/pgo)" >&2
RUSTFLAGS="-Cprofile-use=$data_abs/fabric.profdata" \
  cargo build --release --bin fabric --target-dir target/pgo --quiet
echo "target/pgo/release/fabric"

if [ "$check" -eq 1 ]; then
  cargo build --release --bin fabric --quiet
  digest() { "$1" sim "${@:2}" --quiet 2>/dev/null | grep -o 'digest [0-9a-f]*'; }
  for run in "--preset fat-tree-k8 --scenario scenarios/permutation.toml" \
    "--preset fat-tree-k8 --scenario scenarios/incast-15to1.toml --cc dcqcn --lb spray" \
    "--scenario scenarios/htsim-incast.cm"; do
    # shellcheck disable=SC2086 # the runs are word lists
    a=$(digest target/release/fabric $run)
    # shellcheck disable=SC2086
    b=$(digest target/pgo/release/fabric $run)
    if [ "$a" != "$b" ] || [ -z "$a" ]; then
      echo "build-pgo: fabric sim $run: release gives '$a', PGO build '$b'" >&2
      exit 1
    fi
    echo "build-pgo: fabric sim $run: $a in both builds" >&2
  done
fi
