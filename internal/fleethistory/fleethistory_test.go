package fleethistory

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi/agentapitest"
	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/history"
)

const token = "0123456789abcdef0123"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// fakeAgent serves host's records of deploys d1 (older) and d2 and, for d2,
// timeline when it is not nil.
func fakeAgent(t *testing.T, host string, timeline []byte) string {
	t.Helper()
	var recs []history.Record
	for i, id := range []string{"d2", "d1"} {
		recs = append(recs, history.Record{ID: id, Kind: history.KindDeploy, Host: host, Started: t0.Add(time.Duration(-i) * time.Hour),
			To: "v2", Result: history.ResultOK, HostResult: history.ResultOK, Timeline: id == "d2" && timeline != nil})
	}
	return agentapitest.History(t, token, recs, map[string][]byte{"d2": timeline})
}

func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func fleetOf(t *testing.T, agents ...string) *fleet.Loaded {
	t.Helper()
	cfg := fleet.Default()
	for i, a := range agents {
		cfg.Hosts = append(cfg.Hosts, fleet.Host{Name: "web-" + string(rune('1'+i)), Target: "127.0.0.1:1", Agent: a})
	}
	return &fleet.Loaded{Config: cfg, Path: "mythex.yml"}
}

// TestReader: the hosts' records merge by deploy; an unreachable host is
// named and the others still read; a deploy's timeline comes from the first
// host whose copy decodes.
func TestReader(t *testing.T) {
	t.Parallel()
	good, err := deployrec.Encode(deployrec.Recording{Format: deployrec.FormatVersion, Command: "mythex deploy",
		Deploys: []deployrec.Deploy{{Version: "v2", Start: t0, End: t0.Add(time.Minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fleetOf(t, fakeAgent(t, "web-1", []byte("{corrupt")), fakeAgent(t, "web-2", good), closedAddr(t))
	pool := agentconn.NewPool(agentconn.Options{Timeout: 5 * time.Second})
	defer pool.Close()
	r := NewReader(cfg, pool, token)
	ctx := context.Background()

	res := r.Read(ctx, Query{})
	if len(res.Deploys) != 2 || res.Deploys[0].ID != "d2" || len(res.Deploys[0].Hosts) != 2 {
		t.Fatalf("Read = %+v; want d2 then d1, each of the two hosts that answered", res.Deploys)
	}
	if len(res.Unread) != 1 || !strings.HasPrefix(res.Unread[0], "web-3 (") {
		t.Errorf("unread %q; want web-3, with why", res.Unread)
	}
	one := r.Read(ctx, Query{ID: "d1"})
	if len(one.Deploys) != 1 || one.Deploys[0].ID != "d1" {
		t.Errorf("Read(id d1) = %+v", one.Deploys)
	}

	rec, host, err := r.Timeline(ctx, res.Deploys[0])
	if err != nil || host != "web-2" || rec.Deploys[0].Version != "v2" {
		t.Errorf("Timeline = %+v from %q, %v; want web-2's copy (web-1's is corrupt)", rec.Deploys, host, err)
	}
	if _, _, err := r.Timeline(ctx, res.Deploys[1]); !errors.Is(err, history.ErrNoTimeline) {
		t.Errorf("Timeline of d1 = %v; want ErrNoTimeline", err)
	}
}
