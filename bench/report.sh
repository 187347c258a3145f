#!/usr/bin/env bash
# bench/report.sh — what recording and writing the deploy report costs:
#   1. a demo's wall time with and without --report (target: < 5 % more), and
#      the demo prober's late-send share in both (target: no rise);
#   2. mythex measure at RATE req/s against bench/probe-backend, with and
#      without --report SIDE BY SIDE: both probers run at the same time, so
#      whatever else the shared machine does weighs on both alike; the
#      prober's late-send share of each, and their ratio (target: no rise,
#      ratio ≤ 1 within noise), with the load average around each pair.
# Demo runs are interleaved (without, with, without, with, …) for the same
# reason; medians are printed, and every run.
#
# Usage: bench/report.sh
# Env:   RUNS (default 3 pairs of measures), DEMO_RUNS (default RUNS pairs
#        of demos; 0 skips them), RATE (default 2000), DURATION (default
#        10s), DEMO_RATE (default 200)
# Loopback only; every process it starts is stopped before it exits.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
DEMO_RUNS=${DEMO_RUNS:-$RUNS}
RATE=${RATE:-2000}
DURATION=${DURATION:-10s}
DEMO_RATE=${DEMO_RATE:-200}

. bench/lib.sh
echo "== build"
bench_setup
go build -o "$tmp/backend" ./bench/probe-backend
echo "== machine: $(nproc) cores; load average before: $(loadavg)"

# demo_run KIND N: one demo, timed; KIND is plain or report.
demo_run() {
	local kind=$1 n=$2 flags=()
	[[ $kind == report ]] && flags=(--report "$tmp/demo-$n.html")
	local t0 t1
	t0=$(date +%s.%N)
	"$tmp/mythex" demo --rate "$DEMO_RATE" --json "${flags[@]}" >"$tmp/demo-$kind-$n.json" 2>/dev/null || true
	t1=$(date +%s.%N)
	echo "$kind $(echo "$t1 - $t0" | bc)" >>"$tmp/demo-times"
}

echo "== 1. mythex demo --rate $DEMO_RATE, $DEMO_RUNS pairs, with and without --report"
: >"$tmp/demo-times"
for n in $(seq "$DEMO_RUNS"); do
	demo_run plain "$n"
	demo_run report "$n"
	[[ -s $tmp/demo-$n.html ]] || { echo "demo --report wrote no report" >&2; exit 1; }
done

start_backend

echo "== 2. mythex measure --rate $RATE --duration $DURATION, $RUNS pairs, with and without --report side by side"
measure_run() { # KIND N: one measure, in the background
	local kind=$1 n=$2 flags=()
	[[ $kind == report ]] && flags=(--report "$tmp/measure-$n.html")
	"$tmp/mythex" measure --url "http://$addr/" --rate "$RATE" --duration "$DURATION" --quiet --json "${flags[@]}" \
		>"$tmp/measure-$kind-$n.json" 2>/dev/null &
}
for n in $(seq "$RUNS"); do
	before=$(cut -d' ' -f1 /proc/loadavg)
	# Alternate which starts first, so neither always has the head start.
	if ((n % 2)); then
		measure_run plain "$n"; p1=$!; measure_run report "$n"; p2=$!
	else
		measure_run report "$n"; p2=$!; measure_run plain "$n"; p1=$!
	fi
	wait "$p1" "$p2" || true
	echo "$n $before $(cut -d' ' -f1 /proc/loadavg)" >>"$tmp/measure-loads"
done
echo "== load average after: $(loadavg)"

python3 - "$tmp" "$RUNS" <<'PY'
import json, os, statistics, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
times = {"plain": [], "report": []}
for line in open(os.path.join(tmp, "demo-times")):
    k, v = line.split()
    times[k].append(float(v))
def late_demo(kind, n):
    s = json.load(open(os.path.join(tmp, f"demo-{kind}-{n}.json")))
    late = sum(d["probe"]["late_sends"] for d in s["deploys"])
    return 100 * late / max(s["requests"], 1), s["requests"], s["reached_nothing"]
print("demo runs (wall s, late %, requests, reached nothing):")
for n in range(1, len(times["plain"]) + 1):
    for k in ("plain", "report"):
        l, r, rn = late_demo(k, n)
        print(f"  {k:6} #{n}: {times[k][n-1]:6.2f}s  late {l:5.2f}%  requests {r}  reached nothing {rn}")
if times["plain"]:
    tp, tr = statistics.median(times["plain"]), statistics.median(times["report"])
    lp = statistics.median(late_demo("plain", n)[0] for n in range(1, len(times["plain"]) + 1))
    lr = statistics.median(late_demo("report", n)[0] for n in range(1, len(times["plain"]) + 1))
    print(f"demo wall time, median: without {tp:.2f}s, with --report {tr:.2f}s: {100*(tr-tp)/tp:+.1f}% (target < +5%)")
    print(f"demo prober late sends, median: without {lp:.2f}%, with --report {lr:.2f}%")
def measure(kind, n):
    s = json.load(open(os.path.join(tmp, f"measure-{kind}-{n}.json")))
    return s["late_sends"], s["requests"]
loads = {int(l.split()[0]): l.split()[1:] for l in open(os.path.join(tmp, "measure-loads"))}
print("measure pairs, side by side (late sends / requests; load average 1 min before → after):")
tot = {"plain": [0, 0], "report": [0, 0]}
ratios = []
for n in range(1, runs + 1):
    (lp, rp), (lr, rr) = measure("plain", n), measure("report", n)
    for k, (l, r) in (("plain", (lp, rp)), ("report", (lr, rr))):
        tot[k][0] += l; tot[k][1] += r
    sp, sr = 100 * lp / max(rp, 1), 100 * lr / max(rr, 1)
    ratio = f"{sr / sp:.2f}" if sp > 0 else "n/a"
    if sp > 0:
        ratios.append(sr / sp)
    print(f"  #{n}: without {lp}/{rp} = {sp:.3f}%  with --report {lr}/{rr} = {sr:.3f}%  ratio {ratio}  load {loads[n][0]} → {loads[n][1]}")
sp, sr = (100 * tot[k][0] / max(tot[k][1], 1) for k in ("plain", "report"))
pooled = f"{sr / sp:.2f}" if sp > 0 else "n/a (no late send without --report)"
print(f"measure late sends, all pairs pooled: without {sp:.3f}%, with --report {sr:.3f}%: ratio with/without {pooled}"
      + (f"; median pair ratio {statistics.median(ratios):.2f}" if ratios else ""))
html = [os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp) if f.endswith(".html")]
print(f"report sizes: {min(html)}–{max(html)} bytes")
PY
