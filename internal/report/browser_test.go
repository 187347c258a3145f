package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	browser.close()
	testbin.Cleanup()
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	testkit.Exit(code)
}

// demoRun is one real, short demo run shared by the browser tests: a
// 2-host fleet of real processes at a tenth of the write-up's timings, one
// deploy v1 → v2 under 100 req/s, recorded as it ran.
type demoRun struct {
	rec     deployrec.Recording
	summary map[string]any // demo --json, as a user would read it
	path    string         // the rendered report
	size    int
	err     error
}

var (
	sharedOnce sync.Once
	shared     demoRun
	sharedDir  string
)

func realDemo(t *testing.T) demoRun {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: runs a fleet of real processes")
	}
	sharedOnce.Do(func() {
		shared.err = func() error {
			bin, err := testbin.Build(testbin.Mythex)
			if err != nil {
				return err
			}
			app, err := testbin.Build(testbin.App)
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "mythex-report-test-")
			if err != nil {
				return err
			}
			sharedDir = dir
			r := deployrec.New("mythex demo --report demo.html", nil)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			sum, err := demo.Run(ctx, demo.Options{TimeScale: 0.1, Hosts: 2, Rate: 100, Deploys: 1, Exe: bin, AppExe: app, Dir: dir, Recorder: r,
				// A loaded 2-core machine needs a longer health check timeout
				// than 0.1 × 2s; 0.4s keeps every invariant.
				Adjust: func(c *fleet.Config) { c.LoadBalancer.HealthCheck.Timeout = 400 * time.Millisecond }})
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			b, err := json.Marshal(sum)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &shared.summary); err != nil {
				return err
			}
			shared.rec = r.Recording()
			var buf bytes.Buffer
			if err := Write(&buf, shared.rec); err != nil {
				return err
			}
			shared.size = buf.Len()
			shared.path = filepath.Join(dir, "demo.html")
			return os.WriteFile(shared.path, buf.Bytes(), 0o644)
		}()
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared
}

// chromiumPath finds a Chromium to drive, or skips the test saying how to
// get one.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on this machine: install Debian's chromium (apt-get install -y chromium; .ci/run does it when run as root)")
	return ""
}

// page is a report loaded in headless Chromium with everything it did
// recorded: console messages, exceptions, requests and failed loads.
type browserPage struct {
	ctx      context.Context
	mu       sync.Mutex
	console  []string
	requests []string
	failed   []string
}

// sharedBrowser is the one headless Chromium of this test process: each
// browser test opens its own tab in it (chromedp.NewContext of the browser's
// context), so the tests run in parallel without starting a browser each.
type sharedBrowser struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab; its cancel closes the browser
	cancel func()
	err    error
}

var browser sharedBrowser

// tab opens a new tab in the shared browser, starting it on first use; the
// tab closes when t ends. A Chromium that does not start skips t.
func (b *sharedBrowser) tab(t *testing.T) context.Context {
	t.Helper()
	exe := chromiumPath(t)
	b.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1200, 900))
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		b.ctx, b.cancel = ctx, func() { cancel(); cancelA() }
		b.err = chromedp.Do(ctx) // start the browser with no deadline on it
	})
	if b.err != nil {
		t.Skipf("Chromium %s does not start here: %v", exe, b.err)
	}
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// close closes the shared browser if it was started.
func (b *sharedBrowser) close() {
	if b.cancel != nil {
		b.cancel()
	}
}

func openInChromium(t *testing.T, path string) *browserPage {
	t.Helper()
	ctx := browser.tab(t)
	p := &browserPage{ctx: ctx}
	if err := chromedp.Listen(ctx, p.event); err != nil {
		t.Fatal(err)
	}
	call := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	call(err)
	_, err = chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	call(err)
	_, err = chromedp.Call(ctx, cdpruntime.Enable, cdp.Empty{})
	call(err)
	nctx, ncancel := context.WithTimeout(ctx, time.Minute)
	defer ncancel()
	call(chromedp.Do(nctx, chromedp.Navigate("file://"+path), chromedp.WaitReady("body")))
	return p
}

func (p *browserPage) event(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := ev.(type) {
	case *cdpruntime.EventConsoleAPICalled:
		if e.Type == "error" || e.Type == "warning" || e.Type == "assert" {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.console = append(p.console, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
		}
	case *cdpruntime.EventExceptionThrown:
		msg := e.ExceptionDetails.Text
		if ex := e.ExceptionDetails.Exception; ex != nil {
			msg += " " + ex.Description
		}
		p.console = append(p.console, fmt.Sprintf("exception: %s (line %d)", msg, e.ExceptionDetails.LineNumber))
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
			p.console = append(p.console, fmt.Sprintf("log %s: %s (%s)", e.Entry.Level, e.Entry.Text, e.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, e.Request.URL)
	case *network.EventLoadingFailed:
		p.failed = append(p.failed, fmt.Sprintf("%s: %s", e.Type, e.ErrorText))
	}
}

func (p *browserPage) snapshot() (console, requests, failed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.console...), append([]string(nil), p.requests...), append([]string(nil), p.failed...)
}

func run[T any](t *testing.T, p *browserPage, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pageFacts is what the test reads off the rendered page.
type pageFacts struct {
	Verdict  string            `json:"verdict"`
	Sections int               `json:"sections"`
	Counts   map[string]string `json:"counts"`
	Charts   map[string]struct {
		SVGs    int      `json:"svgs"`
		Rows    []string `json:"rows"`
		Seconds string   `json:"seconds"`
		Paths   int      `json:"paths"`
		Empty   string   `json:"empty"`
	} `json:"charts"`
	Tip struct {
		Hidden bool   `json:"hidden"`
		Text   string `json:"text"`
	} `json:"tip"`
}

const factsJS = `(function () {
  var sec = document.querySelector("section.deploy");
  var f = {verdict: document.getElementById("verdict").textContent, sections: document.querySelectorAll("section.deploy").length, counts: {}, charts: {}, tip: {}};
  sec.querySelectorAll("[data-count]").forEach(function (c) { f.counts[c.dataset.count] = c.querySelector("dd").textContent; });
  sec.querySelectorAll("figure.chart").forEach(function (c) {
    var rows = []; c.querySelectorAll("g.row").forEach(function (r) { rows.push(r.dataset.row); });
    var e = c.querySelector(".empty");
    f.charts[c.dataset.chart] = {svgs: c.querySelectorAll("svg").length, rows: rows, seconds: c.dataset.seconds || "",
      paths: c.querySelectorAll("path[d]:not([d=''])").length, empty: e ? e.textContent : ""};
  });
  var tip = sec.querySelector(".tip");
  f.tip = {hidden: tip.hidden, text: tip.textContent};
  return f;
})()`

func number(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		t.Fatalf("count %q is not a number: %v", s, err)
	}
	return n
}

// TestReport_InChromium renders the report of a real demo run and reads it
// back in headless Chromium: no console error, no failed load, every chart
// drawn with one row per host and one bar per second, the headline counts
// those of demo --json, and a hovered second showing its numbers.
func TestReport_InChromium(t *testing.T) {
	t.Parallel()
	d := realDemo(t)
	p := openInChromium(t, d.path)
	art := artifactDir(t)

	f := run(t, p, chromedp.Evaluate[pageFacts](factsJS))
	if f.Sections != 1 {
		t.Fatalf("%d deploy sections, want 1", f.Sections)
	}
	dep := d.rec.Deploys[0]
	hosts := dep.Hosts
	if len(hosts) != 2 {
		t.Fatalf("recording has hosts %v, want 2", hosts)
	}
	// Headline counts equal the demo's JSON.
	wantReq := int64(d.summary["requests"].(float64))
	wantRN := int64(d.summary["reached_nothing"].(float64))
	if got := number(t, f.Counts["requests"]); got != wantReq || wantReq == 0 {
		t.Errorf("page says %d requests, demo --json %d", got, wantReq)
	}
	if got := number(t, f.Counts["reached_nothing"]); got != wantRN {
		t.Errorf("page says %d reached nothing, demo --json %d", got, wantRN)
	}
	if want := fmt.Sprintf("%s of %s requests reached nothing", deployrec.Thousands(wantRN), deployrec.Thousands(wantReq)); !strings.Contains(f.Verdict, want) {
		t.Errorf("verdict %q does not say %q", f.Verdict, want)
	}
	// Every chart, with the right hosts and seconds.
	for _, name := range []string{"requests", "phases", "targets", "versions", "latency"} {
		c, ok := f.Charts[name]
		if !ok || c.SVGs != 1 || c.Empty != "" {
			t.Errorf("chart %s: present %v, %d svg, empty %q", name, ok, c.SVGs, c.Empty)
		}
	}
	if got, want := f.Charts["requests"].Seconds, strconv.Itoa(len(dep.Probe.Seconds)); got != want || want == "0" {
		t.Errorf("requests chart covers %s seconds, the prober recorded %s", got, want)
	}
	if got := f.Charts["phases"].Rows; len(got) < 2 || got[0] != hosts[0] || got[1] != hosts[1] {
		t.Errorf("phase rows %v, want one per host %v (then the fleet)", got, hosts)
	}
	if got := f.Charts["targets"].Rows; len(got) != 2 || got[0] != hosts[0] || got[1] != hosts[1] {
		t.Errorf("target rows %v, want %v", got, hosts)
	}
	if got := f.Charts["versions"].Rows; len(got) != 2 || got[0] != "v1" || got[1] != "v2" {
		t.Errorf("version rows %v, want v1, v2", got)
	}
	if n := f.Charts["latency"].Paths; n < 2 {
		t.Errorf("latency chart has %d lines, want p50 and p99", n)
	}

	// Hover the middle of the requests chart: the tooltip shows that second.
	type box struct{ X, Y, W, H float64 }
	b := run(t, p, chromedp.Evaluate[box](`(function(){var r=document.querySelector('[data-chart="requests"] svg').getBoundingClientRect();return {X:r.left,Y:r.top,W:r.width,H:r.height};})()`))
	x, y := b.X+b.W*0.55, b.Y+b.H*0.4
	if err := chromedp.Do(p.ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y)); err != nil {
		t.Fatal(err)
	}
	f = run(t, p, chromedp.Evaluate[pageFacts](factsJS))
	if f.Tip.Hidden || !strings.Contains(f.Tip.Text, "requests") || !strings.Contains(f.Tip.Text, hosts[0]) {
		t.Errorf("hovering a second shows hidden=%v %q, want its requests and each host", f.Tip.Hidden, f.Tip.Text)
	}
	shot := run(t, p, chromedp.FullScreenshot(100))
	path := filepath.Join(art, "report-demo.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)

	// Dark mode: the page follows prefers-color-scheme.
	bgLight := run(t, p, chromedp.Evaluate[string](`getComputedStyle(document.documentElement).backgroundColor`))
	if _, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	bgDark := run(t, p, chromedp.Evaluate[string](`getComputedStyle(document.documentElement).backgroundColor`))
	if bgDark == bgLight {
		t.Errorf("dark mode keeps the background %s", bgLight)
	}
	shot = run(t, p, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(art, "report-demo-dark.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	// Print: the tooltip never reaches paper.
	if _, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
		t.Fatal(err)
	}
	if disp := run(t, p, chromedp.Evaluate[string](`getComputedStyle(document.querySelector(".tip")).display`)); disp != "none" {
		t.Errorf("printed, the tooltip is display %q, want none", disp)
	}

	console, _, failed := p.snapshot()
	if len(console) > 0 {
		t.Errorf("console errors: %q", console)
	}
	if len(failed) > 0 {
		t.Errorf("failed loads: %q", failed)
	}
}

// TestReport_NoNetworkAndSmall: the report loads nothing but itself
// (Chromium's network log sees one request, for the file), and stays under
// MaxBytes — the real run's and a 10-minute deploy of 20 hosts.
func TestReport_NoNetworkAndSmall(t *testing.T) {
	t.Parallel()
	d := realDemo(t)
	p := openInChromium(t, d.path)
	_ = run(t, p, chromedp.Evaluate[int](`document.querySelectorAll("svg").length`))
	_, requests, failed := p.snapshot()
	self := "file://" + d.path
	for _, u := range requests {
		if u != self && !strings.HasPrefix(u, "data:") {
			t.Errorf("the report requested %s", u)
		}
	}
	if len(requests) == 0 {
		t.Error("Chromium's network log saw no request at all, not even the file: the log is not being read")
	}
	if len(failed) > 0 {
		t.Errorf("failed loads: %q", failed)
	}
	if d.size >= MaxBytes {
		t.Errorf("the demo's report is %d bytes, want < %d", d.size, MaxBytes)
	}
	var buf bytes.Buffer
	if err := Write(&buf, synthetic(20, 600, 1000, 7)); err != nil {
		t.Fatal(err)
	}
	if buf.Len() >= MaxBytes {
		t.Errorf("a 10-minute deploy of 20 hosts makes a %d-byte report, want < %d", buf.Len(), MaxBytes)
	}
	t.Logf("sizes: demo %d bytes, 10-minute 20-host deploy %d bytes", d.size, buf.Len())
}

// TestReport_FailedInChromium: a failed deploy with a capacity wait, drawn
// and read back in headless Chromium (no demo run needed): the failure
// line is laid out across every chart and labelled, the failed host's row
// label and the never-reached host's note are on the page, the capacity
// wait is drawn on both hosts of its batch, hovering the failed phase says
// so, and the console stays clean. Its screenshot is a test artifact.
func TestReport_FailedInChromium(t *testing.T) {
	t.Parallel()
	rec := synthetic(3, 60, 200, 1)
	d := &rec.Deploys[0]
	// The first batch (web-1 and web-2) waited 1.9s for capacity before it
	// took its leases at 2s.
	d.Events = append([]deploy.Event{{At: t0.Add(2 * time.Second), Host: "web-1,web-2", Phase: deploy.PhaseCapacity,
		Kind: deploy.EventEnd, Elapsed: 1.9, Detail: "3 of 3 targets in service (need 1)"}}, d.Events...)
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	art := artifactDir(t)
	path := filepath.Join(art, "report-failed.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := openInChromium(t, path)
	type facts struct {
		Lines     []float64 `json:"lines"` // each failure line's laid-out height, in CSS px
		Label     string    `json:"label"`
		Failed    string    `json:"failed"`
		Note      string    `json:"note"`
		Capacity  []string  `json:"capacity"` // the rows with a capacity wait
		VerifyBox []float64 `json:"verify"`   // the failed verify bar: x, y, w, h
	}
	f := run(t, p, chromedp.Evaluate[facts](`(function () {
  var f = {lines: [], capacity: []};
  document.querySelectorAll("figure.chart line.failline").forEach(function (l) { f.lines.push(l.getBoundingClientRect().height); });
  f.label = (document.querySelector(".faillab") || {}).textContent || "";
  f.failed = (document.querySelector("[data-chart=phases] .rowlab.failed") || {}).textContent || "";
  f.note = (document.querySelector("[data-chart=phases] .lanenote") || {}).textContent || "";
  document.querySelectorAll("[data-chart=phases] g.row").forEach(function (r) {
    if (r.querySelector(".seg.ph-capacity")) { f.capacity.push(r.dataset.row); }
  });
  var v = document.querySelector("[data-chart=phases] .seg.ph-verify.failed").getBoundingClientRect();
  f.verify = [v.left, v.top, v.width, v.height];
  return f;
})()`))
	if len(f.Lines) != 5 || slices.Min(f.Lines) < 10 {
		t.Errorf("failure lines laid out %v px high; want one in each of the 5 charts", f.Lines)
	}
	if f.Label != "✗ web-2 failed at verify" || f.Failed != "✗ web-2" || !strings.HasPrefix(f.Note, "not reached") {
		t.Errorf("label %q, failed row %q, note %q", f.Label, f.Failed, f.Note)
	}
	if strings.Join(f.Capacity, ",") != "web-1,✗ web-2" {
		t.Errorf("capacity wait drawn in rows %v; want both hosts of the batch", f.Capacity)
	}
	v := f.VerifyBox
	if err := chromedp.Do(p.ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, v[0]+v[2]/2, v[1]+v[3]/2)); err != nil {
		t.Fatal(err)
	}
	if tip := run(t, p, chromedp.Evaluate[string](`document.querySelector(".tip").textContent`)); !strings.Contains(tip, "web-2verify (failed)") {
		t.Errorf("hovering the failed phase shows %q; want web-2's verify (failed)", tip)
	}
	shot := run(t, p, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(art, "report-failed.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if console, _, failed := p.snapshot(); len(console)+len(failed) > 0 {
		t.Errorf("console %q, failed loads %q", console, failed)
	}
}
