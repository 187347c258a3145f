package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/testbin"
)

// TestRollbackCmd: on a local fleet of real processes deployed v1 then v2,
// `mythex rollback --to` a version no host keeps any more is refused with
// exit 2 naming the hosts, nothing changed; `mythex rollback` takes the fleet
// back to v1 through the rolling deploy, records v1 as last good, and is in
// every host's history as a rollback.
func TestRollbackCmd(t *testing.T) {
	t.Parallel()              // its own fleet; the commands run as processes of their own
	testbin.FleetSlotFirst(t) // ahead of e2e's: while it waits, cmd/mythex holds one of go test's two slots idle
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, _ := startSuiteFleet(ctx, t, 2)
	for _, v := range []string{"v1", "v2"} {
		if _, err := f.Deploy(ctx, v, nil, nil); err != nil {
			t.Fatalf("deploy %s: %v", v, err)
		}
	}
	env := append(os.Environ(), agentTokenEnv+"="+f.AgentToken, lbTokenEnv+"="+f.LBToken)
	cli := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		return runMythexSplit(t, env, args...)
	}
	current := func() []string {
		var vs []string
		for i := range f.Loaded.Hosts {
			st, err := f.Agent(i).Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, st.Definitions.Current.Version+"/"+st.Definitions.LastGood.Version)
		}
		return vs
	}

	code, out, errOut := cli(t, "rollback", "-f", f.Loaded.Path, "--to", "v0")
	if code != exitBadUse || !strings.Contains(errOut, "v0 is no longer kept by web-1 (keeps v2, v1), web-2 (keeps v2, v1)") {
		t.Fatalf("rollback --to v0 = exit %d\n%s%s; want 2 naming both hosts", code, out, errOut)
	}
	if got := strings.Join(current(), ","); got != "v2/v2,v2/v2" {
		t.Fatalf("after a refused rollback the hosts run %s (current/last good); want v2/v2 untouched", got)
	}

	code, out, errOut = cli(t, "rollback", "-f", f.Loaded.Path, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res deploy.Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || code != exitOK || !res.OK || res.Version != "v1" {
		t.Fatalf("rollback = exit %d, result %+v (%v)\n%s\n%s", code, res, err, out, errOut)
	}
	if got := strings.Join(current(), ","); got != "v1/v1,v1/v1" {
		t.Fatalf("after the rollback the hosts run %s (current/last good); want v1/v1", got)
	}
	code, out, errOut = cli(t, "history", "-f", f.Loaded.Path, "--json", "--limit", "1")
	var ds []history.Deploy
	if err := json.Unmarshal([]byte(out), &ds); err != nil || code != exitOK || len(ds) != 1 {
		t.Fatalf("history = exit %d %v\n%s%s", code, err, out, errOut)
	}
	if d := ds[0]; d.Kind != history.KindRollback || d.To != "v1" || len(d.Hosts) != 2 || !strings.HasPrefix(d.Who, "rollback to v1 by ") {
		t.Errorf("newest history entry %+v; want the rollback to v1 on both hosts", d)
	}
}
