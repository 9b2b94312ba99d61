#!/usr/bin/env bash
# CPU of the real fabric-tui at 10 Hz with 10k links (docs/tui.md): replays a 10,368-link
# recording written at 10 Hz in tmux at 200×50 and reads the process's CPU time (user +
# system) from /proc; the baseline is the same replay frozen (Space: the source thread
# still reads, parses and aggregates every snapshot, nothing is drawn). Alternates live and
# frozen runs, and, given several binaries (say an older build against this one), the
# binaries within each round, so all of them see the same machine load.
# Usage: tui/benches/cpu.sh [SECONDS] [RUNS] [BINARY...]   (after: cargo build --release -p tui)
set -euo pipefail
secs=${1:-20}
runs=${2:-2}
shift $(($# < 2 ? $# : 2))
target=${CARGO_TARGET_DIR:-target}
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("$target/release/fabric-tui")
rec=/tmp/tui-10k.rec
[ -f "$rec" ] || cargo bench -p tui --bench tui -- record "$rec" $((secs * runs * 2 * ${#bins[@]} + 20))
tck=$(getconf CLK_TCK)
# a tmux server of its own, so no other tmux user (a test, another bench) can disturb it
tm() { tmux -L "tui-cpu-$$" "$@"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$runs"); do
  for bin in "${bins[@]}"; do
    for mode in live frozen; do
      s="tui-cpu-$$-$run-$mode"
      tm new-session -d -s "$s" -x 200 -y 50 "exec $bin --replay $rec --speed 1"
      sleep 3
      pid=$(tm display -p -t "$s" '#{pane_pid}')
      [ "$mode" = frozen ] && tm send-keys -t "$s" Space
      sleep 1
      a=$(cpu "$pid"); t0=$(date +%s.%N)
      sleep "$secs"
      b=$(cpu "$pid"); t1=$(date +%s.%N)
      rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
      tm kill-session -t "$s"
      awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" -v tck="$tck" -v m="$mode" -v rss="$rss" \
        -v bin="$bin" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
        'BEGIN { printf "%-40s %-6s %5.1f %% of one core, RSS %d MiB (load %s)\n", bin, m, 100 * (b - a) / tck / (t1 - t0), rss / 1024, l }'
    done
  done
done
