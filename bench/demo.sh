#!/usr/bin/env bash
# bench/demo.sh — the deploy's targets (issue 3), measured on the local demo fleet:
#   - N consecutive deploys under R req/s: total requests that reached nothing (target 0)
#   - per-host deploy time against the analytic lower bound (target ≤ 1.15×); the
#     bound includes deploy.min_healthy_time, the look twice no deploy can skip
#   - agent RSS at the end (target ≤ 30 MB)
# Usage: bench/demo.sh [DEPLOYS=20] [RATE=500] [TIME_SCALE=0.2]
# Loopback only; every process it starts is stopped by the demo itself.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPLOYS=${1:-20}
RATE=${2:-500}
SCALE=${3:-0.2}
. bench/lib.sh
bench_setup
demo_json --deploys "$DEPLOYS" --rate "$RATE" --time-scale "$SCALE"
python3 - "$tmp/demo.json" <<'PY'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
ratios = [h["seconds"] / h["bound_seconds"] for d in s["deploys"] for h in d["hosts"] if h.get("bound_seconds")]
late = sum(d["probe"]["late_sends"] for d in s["deploys"])
print(f"deploys: {len(s['deploys'])} ({sum(d['ok'] for d in s['deploys'])} ok) at {s['rate']:g} req/s, time scale {s['time_scale']:g}")
print(f"requests: {s['requests']}  reached nothing: {s['reached_nothing']}  app errors: {s['app_errors']}  late sends: {late}")
if ratios:
    b = s["deploys"][-1]["bound"]
    print(f"per-host time / lower bound: median {statistics.median(ratios):.3f}  max {max(ratios):.3f}  (n={len(ratios)}); "
          f"bound {b['total_seconds']:.2f}s = stop {b['stop_seconds']:.2f}s + healthy {b['healthy_seconds']:.2f}s + min_healthy_time {b['verify_seconds']:.2f}s")
rss = s.get("agent_rss_mb") or {}
if rss:
    print("agent RSS MB: " + ", ".join(f"{h} {v:.1f}" for h, v in sorted(rss.items())))
PY
