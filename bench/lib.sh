# bench/lib.sh — what the bench scripts share. Source it from the repository
# root (the scripts cd there first): `. bench/lib.sh`.

# bench_setup makes the scratch directory $tmp, removed when the script
# exits (killing the backend whose pid is in $backend_pid, if one was
# started), and builds mythex into it as $tmp/mythex.
bench_setup() {
	tmp=$(mktemp -d)
	backend_pid=
	trap bench_cleanup EXIT
	go build -o "$tmp/mythex" ./cmd/mythex
}

bench_cleanup() {
	if [[ -n $backend_pid ]]; then kill "$backend_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}

# loadavg prints the 1, 5 and 15 minute load averages: the machine is
# shared, and numbers from a busy machine say more about the machine.
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# demo_json ARGS… runs `mythex demo ARGS… --json` into $tmp/demo.json and
# says how long it took and the load average before and after. A failed
# demo is not fatal: its JSON (what it has) is still for the report.
demo_json() {
	echo "load average before: $(loadavg)"
	local start
	start=$(date +%s)
	"$tmp/mythex" demo "$@" --json >"$tmp/demo.json" || true
	echo "took $(($(date +%s) - start))s; load average after: $(loadavg)"
}

# start_backend starts $tmp/backend (bench/probe-backend, built by the
# caller) on a free loopback port, its pid in $backend_pid (so the exit
# cleanup stops it), and sets $addr to where it listens; it exits the
# script if the backend has not said so within 5 s.
start_backend() {
	"$tmp/backend" -listen 127.0.0.1:0 >"$tmp/backend.out" 2>&1 &
	backend_pid=$!
	for _ in $(seq 100); do
		[[ -s $tmp/backend.out ]] && break
		sleep 0.05
	done
	addr=$(head -n1 "$tmp/backend.out")
	[[ -n $addr ]] || { echo "backend did not start" >&2; exit 1; }
}
