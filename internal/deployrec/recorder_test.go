package deployrec

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/probe"
)

var t0 = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)

func TestRecorder_RecordsADeployAsItRuns(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	r := New("mythex demo", clock)
	cfg := fleet.Default()
	cfg.Hosts = []fleet.Host{{Name: "web-1"}, {Name: "web-2"}}
	r.SetFleet(cfg, "time scale 0.2")

	r.BeginDeploy("v1", "v2", []string{"web-1", "web-2"})
	r.ProbeStarted("http://lb/", 100)
	var forwarded []deploy.Event
	obs := r.Observe(deploy.ObserverFunc(func(e deploy.Event) { forwarded = append(forwarded, e) }))
	state := &deploy.TargetState{State: "healthy", InRotation: true}
	obs.Event(deploy.Event{At: t0, Host: "web-1", Kind: deploy.EventTarget, Target: state})
	state.State = "tampered" // the deploy's copy changing must not change the recording
	obs.Event(deploy.Event{At: t0, Host: "web-1", Phase: deploy.PhaseLease, Kind: deploy.EventBegin})
	obs.Event(deploy.Event{At: t0, Host: "web-3", Phase: deploy.PhaseLease, Kind: deploy.EventBegin})
	r.ProbeSecond(probe.Bucket{Second: 0, Requests: 100, OK: 99, ReachedNothing: 1, P50Latency: 2 * time.Millisecond, P99Latency: 9 * time.Millisecond, MaxLatency: 12 * time.Millisecond, Versions: map[string]int64{"v1": 99}})
	clock.Advance(2 * time.Second)

	mid := r.Recording()
	if len(mid.Deploys) != 1 || len(mid.Deploys[0].Probe.Seconds) != 1 || !mid.Deploys[0].End.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("mid-run recording %+v: want the open deploy, one second, ending now", mid.Deploys)
	}
	r.ProbeSecond(probe.Bucket{Second: 1, Requests: 100, OK: 100, Versions: map[string]int64{"v2": 100}})
	if len(mid.Deploys[0].Probe.Seconds) != 1 {
		t.Error("a snapshot changed after later recording")
	}
	r.ProbeStopped(probe.Report{URL: "http://lb/", Rate: 100, StartedAt: t0.Add(time.Millisecond), Elapsed: 2 * time.Second,
		Requests: 200, OK: 199, ReachedNothing: 1, Latency: probe.Latency{P99: 9 * time.Millisecond},
		Reasons: []probe.ReasonCount{{Class: probe.ClassReachedNothing, Reason: probe.ReasonLBMarked, Status: 503, Detail: "no-targets", Count: 1}},
		Buckets: []probe.Bucket{{Second: 0}, {Second: 1}}})
	r.EndDeploy(deploy.Result{OK: true, Version: "v2", Seconds: 1.5, Hosts: []deploy.HostResult{{Host: "web-1", OK: true}}}, nil)
	r.Close()

	rec := r.Recording()
	if rec.Fleet == nil || !reflect.DeepEqual(rec.Fleet.Hosts, []string{"web-1", "web-2"}) || rec.Fleet.Notes[0] != "time scale 0.2" || len(rec.Invariants) == 0 {
		t.Errorf("fleet %+v, %d invariants", rec.Fleet, len(rec.Invariants))
	}
	d := rec.Deploys[0]
	if got := d.Events[0].Target.State; got != "healthy" {
		t.Errorf("target state recorded %q, want healthy", got)
	}
	if len(forwarded) != 3 {
		t.Errorf("%d events forwarded to the renderer, want 3", len(forwarded))
	}
	if !reflect.DeepEqual(d.Hosts, []string{"web-1", "web-2", "web-3"}) {
		t.Errorf("hosts %v: a host seen only in events belongs too", d.Hosts)
	}
	p := d.Probe
	if len(p.Seconds) != 2 || p.Seconds[0].P99Ms != 9 || p.Seconds[0].Versions["v1"] != 99 || !p.StartedAt.Equal(t0.Add(time.Millisecond)) {
		t.Errorf("probe %+v", p)
	}
	if p.Totals == nil || p.Totals.Requests != 200 || p.Totals.ReachedNothing != 1 || p.Totals.Reasons[0].What != "lb-marked no-targets" {
		t.Errorf("totals %+v", p.Totals)
	}
	if d.Result == nil || !d.Result.OK {
		t.Errorf("result %+v", d.Result)
	}

	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var back Recording
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Errorf("JSON round trip differs:\n%s\n%s", b, b2)
	}
}

// TestRecorder_ProbeStoppedFillsUndeliveredSeconds: a prober run without
// OnBucket still yields every second, from its report.
func TestRecorder_ProbeStoppedFillsUndeliveredSeconds(t *testing.T) {
	r := New("mythex measure", clockwork.NewFakeClockAt(t0))
	r.ProbeSecond(probe.Bucket{Second: 0, Requests: 5})
	r.ProbeStopped(probe.Report{StartedAt: t0, Requests: 15, Buckets: []probe.Bucket{{Second: 0, Requests: 5}, {Second: 1, Requests: 6}, {Second: 2, Requests: 4}}})
	rec := r.Recording()
	if n := len(rec.Deploys[0].Probe.Seconds); n != 3 {
		t.Fatalf("%d seconds, want 3", n)
	}
	if s := rec.Deploys[0].Probe.Seconds[2]; s.Second != 2 || s.Requests != 4 {
		t.Errorf("second 2 = %+v", s)
	}
}

func TestRecorder_NilRecordsNothing(t *testing.T) {
	var r *Recorder
	r.BeginDeploy("v1", "v2", nil)
	r.Event(deploy.Event{})
	r.ProbeSecond(probe.Bucket{})
	r.ProbeStopped(probe.Report{})
	r.EndDeploy(deploy.Result{}, nil)
	r.Close()
	r.Observe(nil).Event(deploy.Event{})
	if rec := r.Recording(); len(rec.Deploys) != 0 {
		t.Errorf("nil recorder recorded %+v", rec)
	}
}

func TestRecorder_ConcurrentHosts(t *testing.T) {
	r := New("mythex deploy", nil)
	r.BeginDeploy("v1", "v2", nil)
	var wg sync.WaitGroup
	for _, h := range []string{"web-1", "web-2", "web-3"} {
		wg.Go(func() {
			for range 100 {
				r.Event(deploy.Event{Host: h, Kind: deploy.EventNote})
				_ = r.Recording()
			}
		})
	}
	wg.Go(func() {
		for i := range 100 {
			r.ProbeSecond(probe.Bucket{Second: i})
		}
	})
	wg.Wait()
	d := r.Recording().Deploys[0]
	if len(d.Events) != 300 || len(d.Probe.Seconds) != 100 || len(d.Hosts) != 3 {
		t.Errorf("%d events, %d seconds, hosts %v", len(d.Events), len(d.Probe.Seconds), d.Hosts)
	}
}

func TestRecorder_EndDeployLearnsFrom(t *testing.T) {
	cases := []struct {
		name  string
		hosts []deploy.HostResult
		want  string
	}{
		{"all on v1", []deploy.HostResult{{PreviousVersion: "v1"}, {PreviousVersion: "v1"}}, "v1"},
		{"mixed", []deploy.HostResult{{PreviousVersion: "v1"}, {PreviousVersion: "v0"}}, ""},
		{"a first rollout", []deploy.HostResult{{PreviousVersion: "v1"}, {}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := New("mythex deploy", clockwork.NewFakeClockAt(t0))
			r.BeginDeploy("", "v2", nil)
			r.EndDeploy(deploy.Result{OK: true, Hosts: c.hosts}, nil)
			if got := r.Recording().Deploys[0].From; got != c.want {
				t.Errorf("from %q, want %q", got, c.want)
			}
		})
	}
}

// TestRecorder_CapacityBatchLabelIsNoHost: the capacity wait before a batch
// is labelled with the batch ("web-1,web-2"); the report must not draw it as
// a host of its own, while a target the capacity check polled is a host.
func TestRecorder_CapacityBatchLabelIsNoHost(t *testing.T) {
	r := New("mythex deploy", clockwork.NewFakeClockAt(t0))
	r.BeginDeploy("", "v2", []string{"web-1", "web-2", "web-3"})
	r.Event(deploy.Event{At: t0, Host: "web-1,web-2", Phase: deploy.PhaseCapacity, Kind: deploy.EventProgress, Detail: "waiting"})
	r.Event(deploy.Event{At: t0, Host: "web-1,web-2", Phase: deploy.PhaseCapacity, Kind: deploy.EventEnd, Elapsed: 1})
	r.Event(deploy.Event{At: t0, Host: "web-4", Phase: deploy.PhaseCapacity, Kind: deploy.EventTarget, Target: &deploy.TargetState{State: "healthy"}})
	r.Close()
	d := r.Recording().Deploys[0]
	if want := []string{"web-1", "web-2", "web-3", "web-4"}; !reflect.DeepEqual(d.Hosts, want) {
		t.Errorf("hosts %v, want %v", d.Hosts, want)
	}
	if len(d.Events) != 3 {
		t.Errorf("%d events recorded, want all 3", len(d.Events))
	}
}
