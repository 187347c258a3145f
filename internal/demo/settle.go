package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/lbport"
)

// Settle waits, bounded by limit, until the fleet is in one final state:
// every host's current definition is the same version and its last known
// good, no deploy lease is held (no recovery running), the agent verifies
// every service, and the load balancer reports every target healthy and in
// rotation. It returns that version, or "" and what was still wrong when
// limit passed.
func (f *Fleet) Settle(ctx context.Context, limit time.Duration) (string, string) {
	deadline := time.Now().Add(limit)
	for {
		v, problem := f.finalState(ctx)
		if problem == "" {
			return v, ""
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return "", problem
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

func (f *Fleet) finalState(ctx context.Context) (string, string) {
	version := ""
	lbd, err := f.lbDriver()
	if err != nil {
		return "", fmt.Sprintf("load balancer: %v", err)
	}
	for i, h := range f.Loaded.Hosts {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := f.Agent(i).Status(sctx)
		cancel()
		if err != nil {
			return "", fmt.Sprintf("%s: agent: %v", h.Name, err)
		}
		cur, good := st.Definitions.Current, st.Definitions.LastGood
		switch {
		case cur == nil:
			return "", h.Name + ": nothing published"
		case good == nil || good.Hash != cur.Hash:
			return "", fmt.Sprintf("%s: runs %s, not its last known good", h.Name, cur.Version)
		case st.Lease != nil:
			return "", fmt.Sprintf("%s: host lease held by %s", h.Name, st.Lease.Holder)
		case version != "" && cur.Version != version:
			return "", fmt.Sprintf("the fleet runs two versions: %s and %s (%s)", version, cur.Version, h.Name)
		}
		version = cur.Version
		sctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		rep, err := f.Agent(i).Verify(sctx, nil, version)
		cancel()
		if err != nil || !rep.OK {
			return "", fmt.Sprintf("%s: agent does not verify %s (%v)", h.Name, version, err)
		}
		sctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		t, err := lbport.Describe1(sctx, lbd, f.lbRef(i))
		cancel()
		if err != nil {
			return "", fmt.Sprintf("%s: load balancer: %v", h.Name, err)
		}
		if t.State != lbport.StateHealthy || !t.InRotation {
			return "", fmt.Sprintf("%s: load balancer reports it %s, in rotation %v", h.Name, t.State, t.InRotation)
		}
	}
	return version, ""
}

// killedDeploy runs `mythex deploy --json` as its own process and SIGKILLs
// it when the second host begins to stop (the deployer-kill fault): the
// first host is then on the new version, not yet recorded as good, and the
// second is drained with its old services stopping.
func killedDeploy(ctx context.Context, f *Fleet, exe, version string, obs deploy.Observer) (deploy.Result, error) {
	victim := f.Loaded.Hosts[min(1, len(f.Loaded.Hosts)-1)].Name
	_, res, err := f.DeployKilledAt(ctx, exe, version, func(e deploy.Event) bool {
		return e.Host == victim && e.Phase == deploy.PhaseStop && e.Kind == deploy.EventBegin
	}, obs)
	return res, err
}

// DeployKilledAt runs `mythex deploy --json` of version as its own process
// — the deployer a user runs — and SIGKILLs it at the first event of its
// progress output that at accepts: nothing of it runs after that line. It
// returns that event, and an error saying so (nil only if the deploy
// finished without reaching it, which is an error too). obs sees every
// event. The deployer's stderr and output go to deploy-VERSION.log in the
// fleet's directory.
func (f *Fleet) DeployKilledAt(ctx context.Context, exe, version string, at func(deploy.Event) bool, obs deploy.Observer) (*deploy.Event, deploy.Result, error) {
	res := deploy.Result{Version: version}
	logf, err := os.Create(filepath.Join(f.dir, "deploy-"+version+".log"))
	if err != nil {
		return nil, res, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "deploy", "-f", f.Loaded.Path, "--version", version, "--json", "--holder", "mythex demo "+version+" (to be killed)")
	cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, res, err
	}
	if err := cmd.Start(); err != nil {
		return nil, res, fmt.Errorf("start the deployer: %w", err)
	}
	var killedAt *deploy.Event
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(logf, "%s\n", line)
		var e deploy.Event
		if json.Unmarshal(line, &e) != nil || e.Phase == "" {
			var r deploy.Result
			if json.Unmarshal(line, &r) == nil && r.Version != "" {
				res = r
			}
			continue
		}
		if obs != nil {
			obs.Event(e)
		}
		if killedAt == nil && at(e) {
			_ = cmd.Process.Kill()
			killedAt = &e
			if obs != nil {
				obs.Event(deploy.Event{At: time.Now(), Host: e.Host, Phase: e.Phase, Kind: deploy.EventNote,
					Detail: fmt.Sprintf("deployer SIGKILLed as %s began %s", orFleet(e.Host), e.Phase)})
			}
		}
		if ctx.Err() != nil {
			_ = cmd.Process.Kill()
		}
	}
	werr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return killedAt, res, ctx.Err()
	case killedAt != nil:
		return killedAt, res, fmt.Errorf("deployer SIGKILLed as %s began %s", orFleet(killedAt.Host), killedAt.Phase)
	case werr != nil:
		return nil, res, fmt.Errorf("the deployer failed before the kill point: %v; the end of %s:\n%s", werr, logf.Name(), tailOf(logf.Name(), 2000))
	}
	return nil, res, errors.New("the deploy finished before the kill point was reached")
}

// tailOf is the last n bytes of the file at path, or why it could not be
// read.
func tailOf(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

func orFleet(host string) string {
	if host == "" {
		return "the fleet"
	}
	return host
}
