#!/usr/bin/env bash
# bench/alb.sh — deploys through the alb driver (issue 10), against the embedded
# LB's ELBv2 endpoint:
#   - N consecutive deploys under R req/s: requests that reached nothing (target 0)
#   - per-host deploy time against the analytic lower bound
#   - ELBv2 API calls per host deploy, and per 2 s of it in real-time terms
#     (target ≤ 1 call per 2 s: the driver polls every 2 s, scaled with the demo)
# Usage: bench/alb.sh [DEPLOYS=10] [RATE=500] [TIME_SCALE=0.2]
# Loopback only; every process it starts is stopped by the demo itself.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPLOYS=${1:-10}
RATE=${2:-500}
SCALE=${3:-0.2}
. bench/lib.sh
bench_setup
demo_json --lb alb --deploys "$DEPLOYS" --rate "$RATE" --time-scale "$SCALE"
python3 - "$tmp/demo.json" <<'PY'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
scale = s["time_scale"]
deploys = s["deploys"]
ratios = [h["seconds"] / h["bound_seconds"] for d in deploys for h in d["hosts"] if h.get("bound_seconds")]
calls = [d.get("lb_calls", 0) for d in deploys]
hosts = [len(d["hosts"]) for d in deploys]
host_secs = [sum(h["seconds"] for h in d["hosts"]) for d in deploys]
print(f"deploys: {len(deploys)} ({sum(d['ok'] for d in deploys)} ok) through the alb driver at {s['rate']:g} req/s, time scale {scale:g}")
late = sum(d["probe"]["late_sends"] for d in deploys)
print(f"requests: {s['requests']}  reached nothing: {s['reached_nothing']}  app errors: {s['app_errors']}  late sends: {late}")
for i, d in enumerate(deploys):
    if d["probe"]["reached_nothing"] or not d["ok"]:
        why = ", ".join(f"{r['what']} x{r['count']}" for r in d["probe"].get("reasons") or [])
        print(f"  deploy {i + 1} {d['from']} -> {d['version']}: ok={d['ok']} reached nothing {d['probe']['reached_nothing']} ({why}) {d.get('error', '')}")
if ratios:
    print(f"per-host time / lower bound: median {statistics.median(ratios):.3f}  max {max(ratios):.3f}  (n={len(ratios)})")
if sum(hosts):
    per_host = sum(calls) / sum(hosts)
    # In real time (the demo's 2 s poll is scaled too): seconds of host deploy / scale.
    real_secs = sum(host_secs) / scale
    print(f"ELBv2 calls: {sum(calls)} in {len(deploys)} deploys, {per_host:.1f} per host deploy "
          f"(preflight and sweep included), {sum(calls) / (real_secs / 2):.2f} per 2 s of host deploy in real-time terms")
PY
