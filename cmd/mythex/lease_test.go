package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
)

func TestLeaseCmd(t *testing.T) {
	url := maintenanceAgent(t)
	code, stdout, stderr := runCLI(t, "lease", "status", "--agent", url)
	if code != exitOK || !strings.Contains(stdout, "none") {
		t.Fatalf("status with no lease: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	c := agentapi.NewClient(url, "s3cret-0123456789abcdef", nil)
	l, err := c.AcquireLease(context.Background(), false, "deploy v2 by ci", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runCLI(t, "lease", "status", "--agent", url, "--json")
	var rows []agentapi.HostLeases
	if code != exitOK || json.Unmarshal([]byte(stdout), &rows) != nil || len(rows) != 1 || rows[0].Lease == nil || rows[0].Lease.Holder != "deploy v2 by ci" {
		t.Fatalf("status --json: exit %d, %q", code, stdout)
	}
	code, _, stderr = runCLI(t, "lease", "break", "--agent", url)
	if code != exitFailed || !strings.Contains(stderr, "deploy v2 by ci") || !strings.Contains(stderr, "--force") {
		t.Errorf("break of a renewed lease: exit %d, stderr %q; want 1 naming the holder and --force", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "lease", "break", "--agent", url, "--force", "--by", "alice")
	// Nothing was ever published here: the recovery stops nothing and the
	// host stays empty, which is restored as far as it can be.
	if code != exitOK || !strings.Contains(stdout, "broken") {
		t.Errorf("break --force: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := c.RenewLease(context.Background(), false, l.ID, time.Minute); err == nil {
		t.Error("the broken lease can still be renewed")
	}
	if code, _, stderr = runCLI(t, "lease", "break"); code != exitBadUse || !strings.Contains(stderr, "--agent") {
		t.Errorf("break without a host: exit %d, stderr %q; want 2", code, stderr)
	}
}
