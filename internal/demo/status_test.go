package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/fleetstatus"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport/embedded"
	"github.com/mythex/mythex/internal/termui"
)

// TestFleet_Status: `mythex status` on a real fleet says healthy after a
// rollout, and names the host the load balancer no longer routes to.
func TestFleet_Status(t *testing.T) {
	t.Parallel() // its own fleet: processes, ports and directories
	f := startFleet(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lbc := lbapi.NewClient("http://"+f.Loaded.LoadBalancer.AdminListen, f.LBToken, nil)
	driver := embedded.New(lbc)
	pool := agentconn.NewPool(agentconn.Options{})
	defer pool.Close()

	v := fleetstatus.Gather(ctx, f.Loaded, f.AgentToken, driver, pool, 10*time.Second)
	var out bytes.Buffer
	termui.WriteStatus(&out, v)
	if !v.OK || strings.Join(v.Versions, ",") != "v1" || len(v.Hosts) != 2 {
		t.Fatalf("after the rollout: %+v\n%s", v, out.String())
	}
	for _, want := range []string{"web-1", "web-2", "current v1", "lb: healthy, in rotation", "gateway up", "✓ healthy: 2 of 2 hosts on v1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, out.String())
		}
	}

	if _, err := lbc.Deregister(ctx, "web-2"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = lbc.Register(context.Background(), "web-2", f.Loaded.Hosts[1].Target) })
	v = fleetstatus.Gather(ctx, f.Loaded, f.AgentToken, driver, pool, 10*time.Second)
	out.Reset()
	termui.WriteStatus(&out, v)
	if v.OK || !strings.Contains(v.Summary, "web-2") || strings.Contains(v.Summary, "web-1") {
		t.Fatalf("with web-2 deregistered: %q\n%s", v.Summary, out.String())
	}
	if !strings.Contains(out.String(), "! out of rotation at the load balancer") {
		t.Errorf("the problem is not shown:\n%s", out.String())
	}
}
