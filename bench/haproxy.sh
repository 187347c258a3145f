#!/usr/bin/env bash
# bench/haproxy.sh — the rolling deploy behind a real HAProxy (Debian's
# haproxy package), driven through its Runtime API:
#   - N consecutive deploys under R req/s: requests that reached nothing (target 0)
#   - per-host deploy time against the analytic lower bound (median, max)
#   - drain phase per host: how long HAProxy took to report the server
#     drained and idle (state drain, scur + qcur = 0)
# The fleet is `mythex demo --lb haproxy`: a generated haproxy.cfg with an
# admin stats socket in a temporary directory, the demo's hosts as checked
# servers of one backend.
# Usage: bench/haproxy.sh [DEPLOYS=10] [RATE=500] [TIME_SCALE=0.2]
# Installs haproxy with apt when missing (as root). Loopback only; every
# process it starts is stopped by the demo itself.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPLOYS=${1:-10}
RATE=${2:-500}
SCALE=${3:-0.2}
if ! command -v haproxy >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "haproxy is not installed: apt-get install haproxy (as root)" >&2
    exit 2
  fi
  echo "== installing haproxy (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq haproxy >/dev/null
fi
. bench/lib.sh
bench_setup
echo "$(haproxy -v | head -1)"
demo_json --lb haproxy --deploys "$DEPLOYS" --rate "$RATE" --time-scale "$SCALE"
python3 - "$tmp/demo.json" <<'PY'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
ratios = [h["seconds"] / h["bound_seconds"] for d in s["deploys"] for h in d["hosts"] if h.get("bound_seconds")]
drains = [p["seconds"] for d in s["deploys"] for h in d["hosts"] for p in h["phases"] if p["phase"] == "drain"]
healthy = [p["seconds"] for d in s["deploys"] for h in d["hosts"] for p in h["phases"] if p["phase"] == "healthy"]
late = sum(d["probe"]["late_sends"] for d in s["deploys"])
print(f"behind HAProxy: deploys {len(s['deploys'])} ({sum(d['ok'] for d in s['deploys'])} ok) at {s['rate']:g} req/s, time scale {s['time_scale']:g}")
print(f"requests: {s['requests']}  reached nothing: {s['reached_nothing']}  app errors: {s['app_errors']}  late sends: {late}")
if ratios:
    print(f"per-host time / lower bound: median {statistics.median(ratios):.3f}  max {max(ratios):.3f}  (n={len(ratios)})")
if drains:
    print(f"drain (state drain until scur+qcur = 0): median {statistics.median(drains)*1000:.0f} ms  max {max(drains)*1000:.0f} ms")
if healthy:
    print(f"healthy (state ready until UP after rise checks): median {statistics.median(healthy):.2f}s  max {max(healthy):.2f}s")
reasons = {}
for d in s["deploys"]:
    for r in d["probe"].get("reasons") or []:
        if r["class"] == "reached_nothing":
            reasons[r["what"]] = reasons.get(r["what"], 0) + r["count"]
if reasons:
    print("reached nothing by reason: " + ", ".join(f"{w} {n}" for w, n in sorted(reasons.items(), key=lambda x: -x[1])))
for d in s["deploys"]:
    if not d["ok"]:
        print(f"FAILED {d['from']} -> {d['version']}: {d.get('error', '')}")
PY
