package deploy

import (
	"errors"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/history"
)

func TestHistoryRecords(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hosts := []Host{{Name: "web-1"}, {Name: "web-2"}, {Name: "web-3"}}
	res := Result{Version: "v2", Hosts: []HostResult{
		{Host: "web-1", OK: true, PreviousVersion: "v1", Phases: []PhaseTime{{Phase: PhaseDrain, Seconds: 1.5}}},
		{Host: "web-2", RolledBack: true, PreviousVersion: "v1"},
	}}
	recs := HistoryRecords("d1", "ci", t0, t0.Add(time.Minute), hosts, res, errors.New("web-2 failed at healthy"))
	want := []struct{ host, hostResult, from string }{{"web-1", "ok", "v1"}, {"web-2", "rolled_back", "v1"}, {"web-3", "untouched", ""}}
	for i, w := range want {
		r := recs[i]
		if r.Host != w.host || r.HostResult != w.hostResult || r.From != w.from || r.Result != history.ResultRolledBack || r.ID != "d1" || r.To != "v2" {
			t.Errorf("record %d = %+v; want %s %s from %q, deploy rolled_back", i, r, w.host, w.hostResult, w.from)
		}
		if err := history.Validate(r); err != nil {
			t.Errorf("record %d is not storable: %v", i, err)
		}
	}
	if len(recs[0].Phases) != 1 || recs[0].Phases[0].Phase != "drain" {
		t.Errorf("phases lost: %+v", recs[0].Phases)
	}
}
