#!/usr/bin/env bash
# bench/probe.sh — can mythex measure hold an open-loop schedule at 5,000 req/s
# on this machine, and does its memory stay flat over the run?
#
# Builds mythex and bench/probe-backend (a small Go HTTP backend), runs
#   mythex measure --url http://BACKEND/ --rate $RATE --duration $DURATION
# against it, samples the prober's RSS and CPU at 2 s and 1 s before the end
# (only twice: observing it every second made sends late by itself), and
# prints the late-send percentage, RSS early and late, CPU of prober and
# backend, and the load average before and after (the machine is shared:
# numbers from a busy machine say more about the machine).
#
# Usage: bench/probe.sh [extra mythex measure flags]
# Env:   RATE (default 5000), DURATION (default 20s; whole seconds, ≥ 5s)
# Linux only (reads /proc). Needs only Go and bash.
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${RATE:-5000}
DURATION=${DURATION:-20s}

. bench/lib.sh
echo "== build"
bench_setup
go build -o "$tmp/backend" ./bench/probe-backend

start_backend

echo "== machine: $(nproc) cores; load average before: $(loadavg)"
echo "== mythex measure --url http://$addr/ --rate $RATE --duration $DURATION $*"
code=0
"$tmp/mythex" measure --url "http://$addr/" --rate "$RATE" --duration "$DURATION" --quiet "$@" \
	>"$tmp/summary" 2>"$tmp/stderr" &
pid=$!
# cpu_ticks PID: user+system CPU time of PID so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || true; }
rss_kb() { awk '{print $2 * 4}' "/proc/$1/statm" 2>/dev/null || true; }
hz=$(getconf CLK_TCK)
backend_ticks0=$(cpu_ticks "$backend_pid")
# The prober is sampled twice, at 2 s and 1 s before its end: reading its
# /proc files every second was measured to make ~0.5 % of sends late by
# itself (0.3-0.4 % late unobserved, 1.0 % observed each second).
dur_s=${DURATION%s}
[[ $dur_s =~ ^[0-9]+$ && $dur_s -ge 5 ]] || { echo "DURATION must be whole seconds, at least 5s (got $DURATION)" >&2; exit 2; }
sleep 2
rss_first=$(rss_kb "$pid")
echo "  t=2s rss=${rss_first:-?} kB"
sleep $((dur_s - 3))
rss_last=$(rss_kb "$pid")
ticks=$(cpu_ticks "$pid")
t=$((dur_s - 1))
echo "  t=${t}s rss=${rss_last:-?} kB"
wait "$pid" || code=$?
backend_ticks=$(( $(cpu_ticks "$backend_pid") - backend_ticks0 ))

echo "== load average after: $(loadavg)"
echo "== mythex measure summary (exit $code)"
cat "$tmp/summary"
grep -v '^measuring ' "$tmp/stderr" || true

requests=$(awk '$1 == "requests" {print $2}' "$tmp/summary")
late=$(awk '$1 == "late" && $2 == "sends" {print $3}' "$tmp/summary")
echo "== result"
echo "  requests sent:  $requests (scheduled $RATE/s for $DURATION)"
if [[ -n $requests && $requests -gt 0 ]]; then
	awk -v l="$late" -v r="$requests" 'BEGIN { printf "  late sends:     %d (%.3f%%; target < 1%%)\n", l, 100 * l / r }'
fi
echo "  RSS:            ${rss_first:-?} kB at 2 s -> ${rss_last:-?} kB at ${t} s"
awk -v p="${ticks:-0}" -v b="$backend_ticks" -v hz="$hz" -v t="$t" 'BEGIN {
	printf "  CPU:            prober %.1f s, backend %.1f s over ~%d s (%.0f%% and %.0f%% of one core)\n", p / hz, b / hz, t, 100 * p / hz / t, 100 * b / hz / t }'
exit "$code"
