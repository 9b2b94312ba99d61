#!/usr/bin/env bash
# An hour-long soak of the live half (not run by CI): the TUI demo (`fabric-tui` with no
# arguments) and a TUI on the daemon's stream (`fabric-tui --connect`), each in tmux;
# `fabric serve --sim` and `fabric serve --testbed` (root: a routed veth testbed in real
# namespaces), each with stream clients; a real Prometheus scraping both daemons every 5 s;
# a link of each daemon failed and restored DOWN seconds later, every FLAP seconds (default
# 15 and 5). The daemons keep EVENTS_KEPT events (default 200, `--events-kept`) and HISTORY
# frames (default 600, `--history`), small enough that every bounded buffer is full within
# the first 15 minutes, so the hour shows the plateau rather than buffers still filling.
# The RSS of every process and the events each daemon keeps are sampled every SAMPLE
# seconds into rss.csv; errors (daemon WARN/ERROR lines, failed API calls, failed scrapes,
# a process gone) into errors.log; a summary is printed at the end.
#
#   sudo scripts/soak.sh BIN_DIR OUT_DIR [SECONDS]     # BIN_DIR holds fabric, fabric-tui
#
# Copy the binaries out of target/ first, so rebuilds do not change them under the soak:
#   mkdir -p /tmp/soak-bin && cp target/ci/fabric target/ci/fabric-tui /tmp/soak-bin/
#   scripts/soak.sh /tmp/soak-bin /tmp/soak 3600
set -uo pipefail
bin=$(realpath "${1:?usage: soak.sh BIN_DIR OUT_DIR [SECONDS]}")
out=$(realpath -m "${2:?usage: soak.sh BIN_DIR OUT_DIR [SECONDS]}")
secs=${3:-3600}
flap=${FLAP:-15}
down=${DOWN:-5}
events_kept=${EVENTS_KEPT:-200}
history=${HISTORY:-600}
sample=${SAMPLE:-30}
streams=${STREAMS:-4}
mkdir -p "$out"
cd "$out" || exit 1
: >errors.log
tag=soak$$
pids=()
log_err() { echo "$(date -u +%FT%TZ) $*" >>errors.log; }

cleanup() {
  tmux kill-session -t "$tag-demo" 2>/dev/null
  tmux kill-session -t "$tag-connect" 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

# A daemon on a free port; prints its address once listening.
start_daemon() { # NAME ARGS...
  local name=$1
  shift
  "$bin/fabric" serve --listen 127.0.0.1:0 --token-file "$out/token" \
    --events-kept "$events_kept" --history "$history" "$@" \
    >"$out/$name.out" 2>"$out/$name.err" &
  pids+=($!)
  eval "${name}_pid=$!"
  for _ in $(seq 100); do
    grep -q '^listening on' "$out/$name.out" 2>/dev/null && break
    sleep 0.2
  done
  eval "${name}_addr=$(sed -n 's|^listening on http://||p' "$out/$name.out")"
}

head -c 24 /dev/urandom | base64 >token
auth="Authorization: Bearer $(cat token)"
start_daemon sim --sim
start_daemon testbed --testbed --fabric fat-tree-k4
echo "sim daemon http://$sim_addr (pid $sim_pid), testbed daemon http://$testbed_addr (pid $testbed_pid)"

# Stream clients: STREAMS per daemon, each reconnecting when its stream ends.
for d in "$sim_addr" "$testbed_addr"; do
  for i in $(seq "$streams"); do
    (while :; do
      curl -sN --max-time 600 "http://$d/api/v1/telemetry/stream" >/dev/null
      rc=$?
      [ $rc -eq 28 ] || log_err "stream client $d/$i: curl exit $rc"
      sleep 1
    done) &
    pids+=($!)
  done
done

# A real Prometheus scraping both daemons.
cat >prometheus.yml <<EOF
global: { scrape_interval: 5s, scrape_timeout: 4s }
scrape_configs:
  - job_name: fabric
    static_configs: [ { targets: ["$sim_addr", "$testbed_addr"] } ]
EOF
prometheus --config.file=prometheus.yml --storage.tsdb.path="$out/tsdb" \
  --web.listen-address=127.0.0.1:0 >prometheus.log 2>&1 &
prom_pid=$!
pids+=($prom_pid)
prom_addr=
for _ in $(seq 100); do
  prom_addr=$(ss -ltnpH 2>/dev/null | awk -v p="pid=$prom_pid," '$0 ~ p {print $4; exit}')
  [ -n "$prom_addr" ] && break
  sleep 0.2
done
echo "prometheus http://$prom_addr (pid $prom_pid)"

# The TUIs, in tmux at 120x40.
tmux new-session -d -s "$tag-demo" -x 120 -y 40 "exec $bin/fabric-tui"
tmux new-session -d -s "$tag-connect" -x 120 -y 40 "exec $bin/fabric-tui --connect $sim_addr"
sleep 1
demo_pid=$(tmux list-panes -t "$tag-demo" -F '#{pane_pid}')
connect_pid=$(tmux list-panes -t "$tag-connect" -F '#{pane_pid}')

rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo gone; }
# Events a daemon keeps now (reaches EVENTS_KEPT once its buffer is full).
kept() { curl -s "http://$1/api/v1/events?since=0&limit=10000" | grep -o '"seq":' | wc -l; }
echo "t_s,sim_kb,testbed_kb,prometheus_kb,tui_demo_kb,tui_connect_kb,sim_events,testbed_events" >rss.csv
procs="sim:$sim_pid testbed:$testbed_pid prometheus:$prom_pid tui-demo:$demo_pid tui-connect:$connect_pid"

start=$(date +%s)
next_flap=$start
next_sample=$start
links=(16 17 20 24 28 31)
n=0
while :; do
  now=$(date +%s)
  t=$((now - start))
  [ $t -ge "$secs" ] && break
  if [ "$now" -ge "$next_sample" ]; then
    echo "$t,$(rss "$sim_pid"),$(rss "$testbed_pid"),$(rss "$prom_pid"),$(rss "$demo_pid"),$(rss "$connect_pid"),$(kept "$sim_addr"),$(kept "$testbed_addr")" >>rss.csv
    for p in $procs; do
      [ -d "/proc/${p#*:}" ] || log_err "${p%%:*} (pid ${p#*:}) is gone"
    done
    up=$(curl -s "http://$prom_addr/api/v1/query?query=up" | grep -o '"value":\[[^]]*"0"\]' | wc -l)
    [ "$up" -eq 0 ] || log_err "prometheus: $up target(s) down"
    for d in "$sim_addr" "$testbed_addr"; do
      code=$(curl -s -o /dev/null -w '%{http_code}' "http://$d/api/v1/health")
      [ "$code" = 200 ] || log_err "$d health: HTTP $code"
    done
    next_sample=$((next_sample + sample))
  fi
  if [ "$now" -ge "$next_flap" ]; then
    l=${links[$((n % ${#links[@]}))]}
    for d in "$sim_addr" "$testbed_addr"; do
      code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "$auth" "http://$d/api/v1/links/$l/fail")
      [ "$code" = 200 ] || log_err "$d fail link $l: HTTP $code"
    done
    sleep "$down"
    for d in "$sim_addr" "$testbed_addr"; do
      code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "$auth" "http://$d/api/v1/links/$l/restore")
      [ "$code" = 200 ] || log_err "$d restore link $l: HTTP $code"
    done
    n=$((n + 1))
    next_flap=$((next_flap + flap))
  fi
  sleep 1
done

# Final state, then the summary.
for d in sim testbed; do
  addr_var="${d}_addr"
  curl -s "http://${!addr_var}/metrics" >"$d.metrics"
done
tmux capture-pane -p -t "$tag-demo" >tui-demo.screen
tmux capture-pane -p -t "$tag-connect" >tui-connect.screen
kill "$testbed_pid" "$sim_pid"
wait "$testbed_pid"
echo "testbed daemon exit $?" | tee -a summary.txt
wait "$sim_pid"
echo "sim daemon exit $?" | tee -a summary.txt
grep -h -E ' (WARN|ERROR) ' sim.err testbed.err >daemon-warnings.log
{
  echo "flaps: $n per daemon over ${secs}s"
  echo "daemon WARN/ERROR lines: $(wc -l <daemon-warnings.log)"
  echo "errors.log lines: $(wc -l <errors.log)"
  awk -F, 'NR==2 {for (i=2;i<=NF;i++) first[i]=$i} NR>1 {for (i=2;i<=NF;i++) {last[i]=$i; if ($i+0>max[i]) max[i]=$i}}
    NR==1 {for (i=2;i<=NF;i++) name[i]=$i}
    END {for (i=2;i<=NF;i++) printf "%s: first %s, last %s, max %s\n", name[i], first[i], last[i], max[i]}' rss.csv
  grep -h '^fabric_daemon_source_errors_total\|^fabric_daemon_stream_clients_dropped_total' sim.metrics testbed.metrics
} | tee -a summary.txt
