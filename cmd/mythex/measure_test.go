package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/wire"
)

// TestMeasureHelperProcess is not a test: run as a child process (with
// MYTHEX_MEASURE_HELPER=1) it plays the role named after "--":
//
//	exit CODE [SLEEP]     a command: prints a line to stdout and stderr, waits, exits CODE
//	start                 a command: prints $MYTHEX_MEASURE_START as measure's deploy reads it
func TestMeasureHelperProcess(t *testing.T) {
	if os.Getenv("MYTHEX_MEASURE_HELPER") != "1" {
		t.Skip("helper process only")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	switch args[0] {
	case "exit":
		code, _ := strconv.Atoi(args[1])
		fmt.Println("helper stdout line")
		fmt.Fprintln(os.Stderr, "helper stderr line")
		if len(args) > 2 {
			d, _ := time.ParseDuration(args[2])
			time.Sleep(d) // the helper's own run time, not synchronisation
		}
		os.Exit(code)
	case "start":
		t0, ok := probe.StartFromEnv(time.Now())
		fmt.Printf("start %v %d\n", ok, t0.UnixNano())
		os.Exit(0)
	}
	os.Exit(99)
}

// helperArgv is the argv of a helper command role.
func helperArgv(role ...string) []string {
	return append([]string{os.Args[0], "-test.run=^TestMeasureHelperProcess$", "--"}, role...)
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// runMythex runs the mythex CLI as a real process (runMythexSplit) with
// the helper role on for the commands it runs, and returns its exit code
// and output.
func runMythex(t *testing.T, args ...string) cliResult {
	t.Helper()
	code, stdout, stderr := runMythexSplit(t, append(os.Environ(), "MYTHEX_MEASURE_HELPER=1", "NO_COLOR=1"), args...)
	return cliResult{code: code, stdout: stdout, stderr: stderr}
}

// measureJSON is the part of mythex measure --json that tests read.
type measureJSON struct {
	Requests       int64              `json:"requests"`
	ReachedNothing int64              `json:"reached_nothing"`
	AppErrors      int64              `json:"app_errors"`
	DrainSignals   int64              `json:"drain_signals"`
	OK             int64              `json:"ok"`
	ProbeErrors    int64              `json:"probe_errors"`
	Latency        map[string]float64 `json:"latency_ms"`
	Verdict        string             `json:"verdict"`
	VerdictReason  string             `json:"verdict_reason"`
	MaxDropped     *int64             `json:"max_dropped"`
	Command        *struct {
		Argv     []string `json:"argv"`
		ExitCode int      `json:"exit_code"`
		Error    string   `json:"error"`
	} `json:"command"`
	Buckets []struct {
		Second         int              `json:"second"`
		OK             int64            `json:"ok"`
		ReachedNothing int64            `json:"reached_nothing"`
		AppErrors      int64            `json:"app_errors"`
		DrainSignals   int64            `json:"drain_signals"`
		Versions       map[string]int64 `json:"versions"`
		Hosts          map[string]int64 `json:"hosts"`
	} `json:"buckets"`
}

func decodeReport(t *testing.T, r cliResult) measureJSON {
	t.Helper()
	var m measureJSON
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\nstdout:\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	for _, k := range []string{"requests", "reached_nothing", "app_errors", "drain_signals", "ok", "late_sends", "probe_errors", "latency_ms", "command", "buckets", "verdict", "verdict_reason", "max_dropped"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func appServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(wire.HeaderVersion, "v1")
		w.Header().Set(wire.HeaderHost, "web-1")
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String() + "/"
	ln.Close()
	return u
}

// TestMeasureCmd_Command runs mythex measure -- COMMAND as real processes.
func TestMeasureCmd_Command(t *testing.T) {
	t.Parallel() // every command a process of its own
	url := appServer(t)
	t.Run("command succeeds: exit 0, command output kept off the JSON", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		r := runMythex(t, append([]string{"measure", "--url", url, "--rate", "50", "--tail", "200ms", "--json", "--"}, helperArgv("exit", "0", "300ms")...)...)
		took := time.Since(began)
		if r.code != 0 {
			t.Fatalf("exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
		}
		m := decodeReport(t, r)
		if m.Command == nil || m.Command.ExitCode != 0 || m.Command.Error != "" || m.Command.Argv[0] != os.Args[0] {
			t.Errorf("command = %+v", m.Command)
		}
		// 0.3 s of command and 0.2 s of tail at 50/s: about 25 requests,
		// more when the command is slow to start on a loaded machine (once
		// 5.3 s: 263) — never more than 50/s for as long as mythex ran.
		if most := int64(50*took.Seconds()) + 10; m.Requests < 10 || m.Requests > most || m.OK != m.Requests {
			t.Errorf("requests %d ok %d in %v, want 10–%d (~25 unloaded), all ok", m.Requests, m.OK, took.Round(time.Millisecond), most)
		}
		if !strings.Contains(r.stderr, "helper stdout line") || !strings.Contains(r.stderr, "helper stderr line") {
			t.Errorf("command output did not pass through to stderr:\n%s", r.stderr)
		}
		if len(m.Buckets) == 0 || m.Buckets[0].Versions["v1"] == 0 || m.Buckets[0].Hosts["web-1"] == 0 {
			t.Errorf("buckets %+v lack versions/hosts", m.Buckets)
		}
	})
	t.Run("command fails: exit 1 naming the command", func(t *testing.T) {
		t.Parallel()
		r := runMythex(t, append([]string{"measure", "--url", url, "--rate", "20", "--tail", "0s", "--json", "--"}, helperArgv("exit", "3")...)...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\nstderr:\n%s", r.code, r.stderr)
		}
		m := decodeReport(t, r)
		if m.Command == nil || m.Command.ExitCode != 3 || m.Command.Error != "exit status 3" {
			t.Errorf("command = %+v", m.Command)
		}
		if !strings.Contains(r.stderr, "failed: exit status 3") {
			t.Errorf("stderr does not say the command failed:\n%s", r.stderr)
		}
	})
	t.Run("human output: command stdout passes through, timeline and summary", func(t *testing.T) {
		t.Parallel()
		r := runMythex(t, append([]string{"measure", "--url", url, "--rate", "20", "--tail", "1100ms", "--"}, helperArgv("exit", "0")...)...)
		if r.code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
		}
		for _, want := range []string{"helper stdout line", "reached nothing", "latency ms", "exit 0 after", "PASS: 0 of"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
		if !strings.Contains(r.stderr, "second    sent") || !strings.Contains(r.stderr, "v1=20 | web-1=20") {
			t.Errorf("stderr lacks the timeline:\n%s", r.stderr)
		}
		if strings.Contains(r.stderr+r.stdout, "\x1b[") {
			t.Error("ANSI colors in non-terminal output")
		}
	})
}

// TestMeasureCmd_ExitCodes checks the gate on requests that reached nothing
// and incomplete measurements, end to end.
func TestMeasureCmd_ExitCodes(t *testing.T) {
	t.Parallel() // every command a process of its own
	dead := closedPort(t)
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(http.StatusServiceUnavailable) // draining
			return
		}
		w.Header().Set(wire.HeaderLB, wire.ReasonNoTargets)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(lb.Close)
	cases := []struct {
		name  string
		args  []string
		code  int
		check func(m measureJSON) bool
	}{
		{"refused target: every request reached nothing", []string{"--url", dead}, 1,
			func(m measureJSON) bool { return m.Requests == 20 && m.ReachedNothing == 20 }},
		{"refused target within --max-dropped", []string{"--url", dead, "--max-dropped", "20"}, 0,
			func(m measureJSON) bool { return m.ReachedNothing == 20 }},
		{"LB with no targets: 503 marked by the LB reached nothing", []string{"--url", lb.URL + "/"}, 1,
			func(m measureJSON) bool { return m.ReachedNothing == 20 && m.AppErrors == 0 }},
		{"health path 503s are drain signals", []string{"--url", lb.URL + "/healthz"}, 0,
			func(m measureJSON) bool { return m.DrainSignals == 20 && m.ReachedNothing == 0 }},
		{"unresolvable host: probe errors, incomplete", []string{"--url", "http://mythex-measure-test.invalid/"}, 3,
			func(m measureJSON) bool { return m.ProbeErrors == 20 && m.ReachedNothing == 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runMythex(t, append([]string{"measure", "--rate", "40", "--duration", "500ms", "--json", "--quiet"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, tc.code, r.stderr)
			}
			if strings.Contains(r.stderr, "measuring ") {
				t.Errorf("--quiet still printed the header: %q", r.stderr)
			}
			m := decodeReport(t, r)
			if !tc.check(m) {
				t.Errorf("report %+v", m)
			}
			// The JSON carries the verdict the exit code does.
			want := map[int]string{0: "pass", 1: "fail", 3: "incomplete"}[tc.code]
			if m.Verdict != want || m.VerdictReason == "" || m.MaxDropped == nil {
				t.Errorf("verdict %q (%q), max_dropped %v; want %q with a reason", m.Verdict, m.VerdictReason, m.MaxDropped, want)
			}
		})
	}
}

// TestMeasureCmd_BadInput: bad input exits 2 before anything is probed.
func TestMeasureCmd_BadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no url", []string{"measure"}, "--url is required"},
		{"bad scheme", []string{"measure", "--url", "ftp://x/"}, "scheme must be http or https"},
		{"no scheme", []string{"measure", "--url", "localhost:9101"}, "e.g. http://localhost:9101"},
		{"zero timeout", []string{"measure", "--url", "http://127.0.0.1:1/", "--timeout", "0"}, "--timeout 0: give the per-request time limit"},
		{"zero rate", []string{"measure", "--url", "http://127.0.0.1:1/", "--rate", "0"}, "--rate: 0 requests per second: must be > 0"},
		{"negative in-flight bound", []string{"measure", "--url", "http://127.0.0.1:1/", "--max-in-flight", "-3"}, "--max-in-flight: -3 is negative"},
		{"rate not a number", []string{"measure", "--url", "http://127.0.0.1:1/", "--rate", "fast"}, "invalid argument"},
		{"negative max-dropped", []string{"measure", "--url", "http://127.0.0.1:1/", "--max-dropped", "-1"}, "--max-dropped"},
		{"duration with a command", []string{"measure", "--url", "http://127.0.0.1:1/", "--duration", "5s", "--", "true"}, "--duration applies only without a command"},
		{"tail without a command", []string{"measure", "--url", "http://127.0.0.1:1/", "--tail", "5s"}, "--tail applies only with"},
		{"argument without --", []string{"measure", "--url", "http://127.0.0.1:1/", "deploy"}, "after --"},
		{"command not found", []string{"measure", "--url", "http://127.0.0.1:1/", "--", "mythex-no-such-command"}, "mythex-no-such-command"},
		{"zero duration", []string{"measure", "--url", "http://127.0.0.1:1/", "--duration", "0s"}, "--duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runMythex(t, tc.args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr does not mention %q:\n%s", tc.want, r.stderr)
			}
			if strings.Contains(r.stderr, "measuring GET") {
				t.Errorf("probing started despite bad input:\n%s", r.stderr)
			}
		})
	}
}

// TestRunMeasure_InProcess runs the command in-process with buffers for its
// streams (the race detector watches the timeline and the command's output
// writing at once).
func TestRunMeasure_InProcess(t *testing.T) {
	t.Setenv("MYTHEX_MEASURE_HELPER", "1") // for the command, a helper process
	url := appServer(t)
	var out, errb bytes.Buffer
	o := measureOptions{url: url, rate: 50, timeout: 2 * time.Second, tail: 1100 * time.Millisecond,
		lateTolerance: time.Millisecond, healthPath: "/healthz"}
	err := runMeasure(t.Context(), o, helperArgv("exit", "0", "200ms"), measureIO{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, tailChanged: true})
	if err != nil {
		t.Fatalf("runMeasure: %v\nstderr:\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "helper stdout line") || !strings.Contains(out.String(), "PASS: 0 of") {
		t.Errorf("stdout:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "helper stderr line") || !strings.Contains(errb.String(), "v1=50 | web-1=50") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

// TestRunMeasure_Report: measure --report writes the HTML report of the
// run, its headline the report's counts.
func TestRunMeasure_Report(t *testing.T) {
	url := appServer(t)
	path := filepath.Join(t.TempDir(), "measure.html")
	var out, errb bytes.Buffer
	o := measureOptions{url: url, rate: 50, duration: 1500 * time.Millisecond, timeout: 2 * time.Second,
		lateTolerance: time.Millisecond, healthPath: "/healthz", quiet: true, jsonOut: true, report: path}
	if err := runMeasure(t.Context(), o, nil, measureIO{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, durationChanged: true}); err != nil {
		t.Fatalf("runMeasure: %v\nstderr:\n%s", err, errb.String())
	}
	var rep struct{ Requests, ReachedNothing int64 }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v\nstderr:\n%s", err, errb.String())
	}
	if want := fmt.Sprintf("0 of %s requests reached nothing", deployrec.Thousands(rep.Requests)); rep.Requests == 0 || !bytes.Contains(html, []byte(want)) {
		t.Errorf("report does not say %q", want)
	}
	if !strings.Contains(errb.String(), "report: "+path) {
		t.Errorf("stderr does not say where the report went:\n%s", errb.String())
	}
	o.report = filepath.Join(t.TempDir(), "nope", "m.html")
	if err := runMeasure(t.Context(), o, nil, measureIO{stdout: &out, stderr: &errb, durationChanged: true}); !isUsageError(err) {
		t.Errorf("a report in a missing directory: %v, want a usage error before probing", err)
	}
}

// TestMeasureCmd_CommandSharesSecondZero: the command measure runs learns the
// prober's second 0, which `mythex deploy` counts its progress lines from, so
// "web-2 drain at 4.1s" and the timeline's second 4 are the same second.
func TestMeasureCmd_CommandSharesSecondZero(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(srv.Close)
	before := time.Now()
	r := runMythex(t, append([]string{"measure", "--url", srv.URL + "/", "--rate", "20", "--tail", "0s", "--quiet", "--"}, helperArgv("start")...)...)
	after := time.Now()
	var ok bool
	var ns int64
	if _, err := fmt.Sscanf(r.stdout[strings.Index(r.stdout, "start "):], "start %t %d", &ok, &ns); err != nil || !ok {
		t.Fatalf("the command did not get a usable $MYTHEX_MEASURE_START (%v): stdout %q stderr %q", err, r.stdout, r.stderr)
	}
	if t0 := time.Unix(0, ns); t0.Before(before) || t0.After(after) {
		t.Errorf("second 0 %v is outside the run [%v, %v]", t0, before, after)
	}
	t.Setenv(probe.StartEnv, strconv.FormatInt(ns, 10))
	if got, ok := probe.StartFromEnv(after); !ok || got.UnixNano() != ns {
		t.Errorf("measureStart = %v, %v; want the value set", got, ok)
	}
	if _, ok := probe.StartFromEnv(after.Add(48 * time.Hour)); ok {
		t.Error("a second 0 two days old was accepted")
	}
}
