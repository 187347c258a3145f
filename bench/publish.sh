#!/usr/bin/env bash
# Time to a verdict of the publish gate, per crash shape, against the ideal.
#
# 1. The local platform (real processes, the default timings: looks every
#    5 s, polls every 1 s, 30 s stable window, 10 s start period, unhealthy
#    threshold 3, restart policy on-failure with 10 retries): a release that
#    crashes 0.5 s, 7 s or 12 s after boot, exits 0, is killed by SIGKILL, or
#    answers its health check with 500, and a healthy release that answers
#    503 for its first 20 s. RUNS runs each (default 3), all shapes of a run
#    at once, each on its own platform. The ideal is the first look at which
#    the evidence exists: two crashes closer than the crash-loop window
#    known, the platform stopped, the threshold-th wrong answer after the
#    start period, or stable-for of uptime with a passing health check.
#    Target: every run within 1.5x the ideal.
# 2. The Fly Machines API client against the test fake enforcing the
#    documented rate limits (actions 1/s burst 3 per machine, reads 5/s
#    burst 10), on the fake's clock: time to verdict per shape and API calls
#    per publish; target: no request over the limits.
#
# Loopback only; about RUNS x 40 s plus builds. Every process it starts is a
# child of `go test` and stopped when it ends.
#
#   bench/publish.sh
#   RUNS=5 bench/publish.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
export MYTHEX_BENCH=1 RUNS

echo "== local platform: time to verdict per shape, $RUNS runs"
go test -count=1 -v -timeout 30m -run '^TestBench_PublishVerdicts$' ./internal/publish/ |
  grep -v -e '^=== ' -e '^--- ' -e 'bench_test.go' -e '^        ' -e '^PASS' -e '^ok '
echo
echo "== Fly Machines API (fake at the documented rate limits)"
go test -count=1 -v -timeout 10m -run '^TestBench_FlyFake$' ./internal/platform/fly/ |
  grep -v -e '^=== ' -e '^--- ' -e 'bench_test.go' -e '^        ' -e '^PASS' -e '^ok '
