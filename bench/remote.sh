#!/usr/bin/env bash
# bench/remote.sh — a fleet across machines (issue 12), side by side in one run:
#   - mythex status on a 10-host local fleet: p50 (and p90) of 20 runs of the
#     real command, process start included (target < 1 s)
#   - the per-host deploy time with the agents reached over SSH (a real
#     OpenSSH sshd on loopback, one connection per host) against loopback
#     HTTP, alternating, two deploys of 3 hosts each way (ratio; target ≤ 1.05)
#   - one agent status call's latency either way
# Needs root and /usr/sbin/sshd for the SSH half (Debian's openssh-server).
# Loopback only; every process it starts is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
go test -run '^$' -bench '^BenchmarkRemote$' -benchtime 1x -count 1 ./e2e/ | grep -E 'Benchmark|remote_bench|ok|FAIL'
echo "took $(( $(date +%s) - start ))s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
