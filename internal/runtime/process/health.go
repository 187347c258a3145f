package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// healthClient GETs health paths: no keep-alive (each check is a fresh
// connection, as a load balancer's would be after a drain), no proxy.
var healthClient = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// startHealth starts rn's health loop when the spec has a healthcheck. p.mu
// must be held.
func (p *Process) startHealth(inst *instance, rn *run) {
	spec := inst.rec.Spec
	if spec.Healthcheck == nil {
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	rn.cancelHealth = cancel
	p.goBackground(func() { p.healthLoop(ctx, inst, rn, spec) })
}

// healthLoop checks rn's health until ctx ends (exit, Close), with Docker's
// intervals and state rules (runtime.NextHealth).
func (p *Process) healthLoop(ctx context.Context, inst *instance, rn *run, spec definition.Service) {
	hc := spec.Healthcheck
	h := runtime.InitialHealth(hc)
	for {
		delay := runtime.NextCheckDelay(h, p.clock.Since(rn.startedAt), hc)
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(delay):
		}
		r := p.checkOnce(ctx, spec)
		if ctx.Err() != nil {
			return
		}
		h = runtime.NextHealth(h, r, r.Start.Sub(rn.startedAt), hc)
		p.mu.Lock()
		if inst.run == rn {
			inst.health = h
		}
		p.mu.Unlock()
	}
}

// checkOnce runs one health check of spec: an HTTP GET of
// 127.0.0.1:<port><health_path> when x-mythex.health_path is set, else the
// healthcheck's exec-form test, bounded by the healthcheck's timeout.
func (p *Process) checkOnce(ctx context.Context, spec definition.Service) runtime.CheckResult {
	hc := spec.Healthcheck
	start := p.clock.Now()
	ctx, cancel := context.WithTimeout(ctx, hc.Timeout)
	defer cancel()
	var r runtime.CheckResult
	if spec.Process.HealthPath != "" {
		r = httpCheck(ctx, spec.Process.Port, spec.Process.HealthPath)
	} else {
		r = execCheck(ctx, spec)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r = runtime.CheckResult{ExitCode: -1, Output: fmt.Sprintf("health check exceeded its timeout (%v)", hc.Timeout)}
	}
	r.Start, r.End = start, p.clock.Now()
	return r
}

func httpCheck(ctx context.Context, port int, path string) runtime.CheckResult {
	url := "http://127.0.0.1:" + strconv.Itoa(port) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return runtime.CheckResult{ExitCode: -1, Output: err.Error()}
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return runtime.CheckResult{ExitCode: -1, Output: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, runtime.MaxCheckOutput))
	return runtime.CheckResult{
		// 200–399, as a Kubernetes httpGet probe: a redirect is an answer
		// from a live server.
		OK:       resp.StatusCode >= 200 && resp.StatusCode < 400,
		ExitCode: resp.StatusCode,
		Output:   string(body),
	}
}

// execCheck runs the healthcheck's argv directly (no shell) in the service's
// working directory and environment, in its own process group, killed as a
// group when the context ends.
func execCheck(ctx context.Context, spec definition.Service) runtime.CheckResult {
	test := spec.Healthcheck.Test
	cmd := exec.CommandContext(ctx, test[0], test[1:]...)
	cmd.Dir = spec.Process.WorkingDir
	cmd.Env = environ(spec.Environment)
	out := &runtime.OutputBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code, _ = exitStatus(ee.ProcessState)
	default:
		return runtime.CheckResult{ExitCode: -1, Output: err.Error()}
	}
	return runtime.CheckResult{OK: code == 0, ExitCode: code, Output: out.String()}
}
