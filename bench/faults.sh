#!/usr/bin/env bash
# bench/faults.sh — every fault of `mythex demo --fault`, at the demo's default
# scale, RUNS times each (default 3). Per run: requests, requests that reached
# nothing, the fault's bound (its physical cost), the ratio, and the version the
# whole fleet settled on. Targets: every run within its bound; degraded-fleet,
# deployer-kill, agent-kill and lb-restart at 0.
# Usage: bench/faults.sh [RUNS=3] [RATE=200] [FAULTS="late-crash degraded-fleet deployer-kill lb-restart agent-kill"] [LB=embedded]
# LB haproxy runs them behind a real HAProxy (the faults that involve the load
# balancer: FAULTS="degraded-fleet lb-restart").
# Loopback only; every process it starts is stopped by the demo itself.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
RATE=${2:-200}
FAULTS=${3:-late-crash degraded-fleet deployer-kill lb-restart agent-kill}
LB=${4:-embedded}
. bench/lib.sh
bench_setup
echo "load average before: $(loadavg); load balancer: $LB"
printf "%-15s %3s %8s %15s %6s %7s %-6s %-11s %s\n" fault run requests reached_nothing bound ratio after rolled_back handled
for fault in $FAULTS; do
  for run in $(seq 1 "$RUNS"); do
    out="$tmp/$fault-$run.json"
    "$tmp/mythex" demo --lb "$LB" --fault "$fault" --rate "$RATE" --json > "$out" 2> "$tmp/$fault-$run.err" || true
    python3 - "$out" "$fault" "$run" "$tmp/$fault-$run.err" <<'PY'
import json, sys
path, fault, run, err = sys.argv[1:5]
try:
    s = json.load(open(path))
except Exception:
    print(f"{fault:<15} {run:>3}  demo failed: {open(err).read().strip()[:200]}")
    sys.exit(0)
n, b = s.get("reached_nothing", 0), s.get("reached_nothing_bound", 0)
ratio = "-" if b == 0 else f"{n / b:.2f}"
after = s.get("fleet_version_after") or "unsettled"
ok = after == s.get("want_version") and n <= b
print(f"{fault:<15} {run:>3} {s['requests']:>8} {n:>15} {b:>6} {ratio:>7} {after:<6} {str(s.get('rolled_back')):<11} {'yes' if ok else 'NO'}")
PY
  done
done
echo "load average after: $(loadavg)"
