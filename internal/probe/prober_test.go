package probe

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/wire"
)

// fakeTarget is an in-memory target for tests run in a synctest bubble, a
// transport of its own: it answers after delay (fake time), one request at a
// time when capacity is 1, and times requests out like the real transport.
// Its state is real: it counts what it received.
type fakeTarget struct {
	delay    time.Duration
	status   int
	header   http.Header
	slots    chan struct{} // capacity: requests served at once; nil = unbounded
	received atomic.Int64
	sentAt   []time.Duration // arrival times since start, when recordArrivals
	mu       sync.Mutex
	start    time.Time
	arrivals bool
}

func (f *fakeTarget) newExchanger() exchanger { return f }
func (f *fakeTarget) dials() int64            { return 0 }
func (f *fakeTarget) closeIdle()              {}

func (f *fakeTarget) exchange(timeout time.Duration) (Observation, exchanged) {
	f.received.Add(1)
	if f.arrivals {
		f.mu.Lock()
		f.sentAt = append(f.sentAt, time.Since(f.start))
		f.mu.Unlock()
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if f.slots != nil {
		select {
		case f.slots <- struct{}{}:
			defer func() { <-f.slots }()
		case <-deadline.C:
			return Observation{Err: errTimedOut}, exchanged{}
		}
	}
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-deadline.C:
			return Observation{Err: errTimedOut}, exchanged{}
		}
	}
	status := f.status
	if status == 0 {
		status = 200
	}
	h := f.header
	ex := exchanged{version: h.Get(wire.HeaderVersion), host: h.Get(wire.HeaderHost)}
	return Observation{
		Status:      status,
		LBMarker:    h.Get(wire.HeaderLB),
		Server:      h.Get("Server"),
		AppAnswered: ex.version != "" || ex.host != "" || h.Get(wire.HeaderService) != "",
	}, ex
}

func mustNew(t *testing.T, cfg Config, deps Deps) *Prober {
	t.Helper()
	p, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkSums(t *testing.T, r Report) {
	t.Helper()
	if sum := r.OK + r.ReachedNothing + r.AppErrors + r.DrainSignals + r.ProbeErrors; sum != r.Requests {
		t.Errorf("classes add up to %d, requests %d", sum, r.Requests)
	}
	var bs int64
	for _, b := range r.Buckets {
		bs += b.Requests
	}
	if bs != r.Requests {
		t.Errorf("buckets hold %d requests, report %d", bs, r.Requests)
	}
}

// TestProber_OpenLoopAgainstSlowTarget: a target that serves one request at a
// time in 20 ms has capacity 50/s; probed at 100/s the queue grows, so the
// latency from each request's due time grows second by second — while every
// request still leaves on schedule. A closed-loop prober would have sent
// about half as many requests and reported a flat latency.
func TestProber_OpenLoopAgainstSlowTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &fakeTarget{delay: 20 * time.Millisecond, slots: make(chan struct{}, 1), arrivals: true, start: time.Now()}
		p := mustNew(t, Config{URL: "http://target/", Rate: 100, Duration: 3 * time.Second, Timeout: time.Minute}, Deps{Clock: clockwork.NewRealClock(), transport: target})
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		r := p.Stop()
		checkSums(t, r)
		if r.Requests != 300 || r.OK != 300 || r.Unsent != 0 {
			t.Fatalf("requests %d ok %d unsent %d, want 300 300 0", r.Requests, r.OK, r.Unsent)
		}
		if r.LateSends != 0 || r.MaxSendLag != 0 {
			t.Errorf("late sends %d, max lag %v: the schedule slipped", r.LateSends, r.MaxSendLag)
		}
		for i, at := range target.sentAt {
			if want := time.Duration(i) * 10 * time.Millisecond; at != want {
				t.Fatalf("request %d arrived at %v, due at %v", i, at, want)
			}
		}
		if len(r.Buckets) != 3 {
			t.Fatalf("%d buckets, want 3", len(r.Buckets))
		}
		// The last request of second k completes after (k+1)·100 requests of 20 ms.
		for k, b := range r.Buckets {
			due := time.Duration(k*100+99) * 10 * time.Millisecond
			want := time.Duration(k*100+100)*20*time.Millisecond - due
			if b.Requests != 100 || b.MaxLatency != want {
				t.Errorf("second %d: %d requests, max latency %v; want 100, %v", k, b.Requests, b.MaxLatency, want)
			}
		}
		if r.Latency.Max < 2900*time.Millisecond || r.Latency.P50 < time.Second {
			t.Errorf("latency from due time %+v does not show the queue", r.Latency)
		}
	})
}

// TestProber_LatencyFromScheduleIncludesSendLag: when the prober itself
// stalls (a GC pause, a starved CPU — here the injected clock jumps 500 ms at
// once), the requests due meanwhile leave late. They are sent, counted as
// late, and their latency from the due time includes the stall; latency from
// the actual send hides it.
func TestProber_LatencyFromScheduleIncludesSendLag(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	p := mustNew(t, Config{URL: "http://target/", Rate: 10, Duration: time.Second}, Deps{Clock: clock, transport: &fakeTarget{}})
	ctx := t.Context()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := clock.BlockUntilContext(ctx, 1); err != nil { // the scheduler waits for the next due time
			t.Fatal(err)
		}
		waitFor(t, func() bool { return p.InFlight() == 0 }) // and what it sent has finished
		clock.Advance(500 * time.Millisecond)
	}
	<-p.Done()
	r := p.Stop()
	checkSums(t, r)
	// Requests 1–5 leave at 0.5 s (lags 400…0 ms), 6–9 at 1.0 s (400…100 ms).
	if r.Requests != 10 || r.LateSends != 8 || r.MaxSendLag != 400*time.Millisecond {
		t.Errorf("requests %d late %d max lag %v; want 10 8 400ms", r.Requests, r.LateSends, r.MaxSendLag)
	}
	if r.Latency.Max != 400*time.Millisecond || r.SendLatency.Max > time.Millisecond {
		t.Errorf("latency max %v (from due), %v (from send); want 400ms and ≈0", r.Latency.Max, r.SendLatency.Max)
	}
	if r.Buckets[0].LateSends != 8 {
		t.Errorf("bucket 0 late sends %d, want 8", r.Buckets[0].LateSends)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProber_InFlightBound: a target that never answers within the run fills
// the in-flight bound; later requests are counted unsent, not dropped, and the
// ones sent end as timeouts.
func TestProber_InFlightBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &fakeTarget{delay: time.Hour}
		p := mustNew(t, Config{URL: "http://target/", Rate: 100, Duration: time.Second, Timeout: 5 * time.Second, MaxInFlight: 7}, Deps{Clock: clockwork.NewRealClock(), transport: target})
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		r := p.Stop()
		checkSums(t, r)
		if r.Requests != 7 || r.Unsent != 93 || r.ReachedNothing != 7 {
			t.Errorf("requests %d unsent %d reached nothing %d; want 7 93 7", r.Requests, r.Unsent, r.ReachedNothing)
		}
		if got := target.received.Load(); got != 7 {
			t.Errorf("target received %d requests, want 7", got)
		}
		if r.Complete() {
			t.Error("a run with unsent requests reports itself complete")
		}
		if len(r.Reasons) != 1 || r.Reasons[0].Reason != ReasonTimeout {
			t.Errorf("reasons %+v, want timeouts", r.Reasons)
		}
		if r.Latency.Max != 5*time.Second {
			t.Errorf("max latency %v, want the 5s timeout", r.Latency.Max)
		}
	})
}

// TestProber_OnBucket: seconds arrive in order, each once, as soon as every
// request due in it has finished.
func TestProber_OnBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &fakeTarget{delay: 300 * time.Millisecond, header: http.Header{wire.HeaderVersion: {"v7"}, wire.HeaderHost: {"web-1"}}}
		start := time.Now()
		var got []Bucket
		var at []time.Duration
		var mu sync.Mutex
		p := mustNew(t, Config{URL: "http://target/", Rate: 10, Duration: 3 * time.Second}, Deps{Clock: clockwork.NewRealClock(), transport: target, OnBucket: func(b Bucket) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, b)
			at = append(at, time.Since(start))
		}})
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		if len(got) != 1 || got[0].Second != 0 {
			t.Errorf("at 1.5s delivered %+v, want second 0 only", got)
		}
		mu.Unlock()
		<-p.Done()
		r := p.Stop()
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 3 {
			t.Fatalf("delivered %d seconds, want 3", len(got))
		}
		for i, b := range got {
			if b.Second != i || b.Requests != 10 || b.Versions["v7"] != 10 || b.Hosts["web-1"] != 10 {
				t.Errorf("delivery %d = %+v", i, b)
			}
		}
		// Second 0's last request is due at 0.9s and answers at 1.2s.
		if at[0] != 1200*time.Millisecond {
			t.Errorf("second 0 delivered at %v, want 1.2s", at[0])
		}
		if len(r.Buckets) != 3 || r.Versions["v7"] != 30 {
			t.Errorf("report buckets %d versions %v", len(r.Buckets), r.Versions)
		}
	})
}

// TestProber_LongRunMemoryBound: a long run keeps one bucket per second and
// nothing per request.
func TestProber_LongRunMemoryBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &fakeTarget{header: http.Header{wire.HeaderVersion: {"v1"}}}
		const seconds, rate = 600, 10
		p := mustNew(t, Config{URL: "http://target/", Rate: rate, Duration: seconds * time.Second}, Deps{Clock: clockwork.NewRealClock(), transport: target})
		var heapAt100, heapAt500 uint64
		p.onBucket = func(b Bucket) {
			switch b.Second {
			case 100:
				heapAt100 = heapInUse()
			case 500:
				heapAt500 = heapInUse()
			}
		}
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		r := p.Stop()
		checkSums(t, r)
		if r.Requests != seconds*rate || len(r.Buckets) != seconds {
			t.Fatalf("requests %d buckets %d", r.Requests, len(r.Buckets))
		}
		// 400 seconds and 4000 requests later: one small bucket per second
		// (well under 2 KiB each), nothing per request.
		if grew := int64(heapAt500) - int64(heapAt100); grew > 400*2048 {
			t.Errorf("heap grew %d bytes over 400 s (%d B/s)", grew, grew/400)
		}
		t.Logf("heap growth over 400 s of %d req/s: %d bytes", rate, int64(heapAt500)-int64(heapAt100))
	})
}

// TestProber_StopEarly: Stop ends sending at once and waits for requests in
// flight, which still finish and are counted.
func TestProber_StopEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &fakeTarget{delay: 500 * time.Millisecond}
		p := mustNew(t, Config{URL: "http://target/", Rate: 10}, Deps{Clock: clockwork.NewRealClock(), transport: target})
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(950 * time.Millisecond) // requests due at 0, 0.1, …, 0.9 s
		r := p.Stop()
		checkSums(t, r)
		if r.Requests != 10 || r.OK != 10 {
			t.Errorf("requests %d ok %d, want 10 10 (in-flight requests finish)", r.Requests, r.OK)
		}
		if r.Elapsed != 950*time.Millisecond {
			t.Errorf("elapsed %v, want 950ms", r.Elapsed)
		}
		if again := p.Stop(); again.Requests != r.Requests {
			t.Error("second Stop returned a different report")
		}
		select {
		case <-p.Done():
		default:
			t.Error("Done not closed after Stop")
		}
	})
}

// TestProber_ContextEndsSending: canceling Start's context stops sending but
// does not cancel requests in flight (they would read as failures).
func TestProber_ContextEndsSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &fakeTarget{delay: 200 * time.Millisecond}
		p := mustNew(t, Config{URL: "http://target/", Rate: 10}, Deps{Clock: clockwork.NewRealClock(), transport: target})
		ctx, cancel := context.WithCancel(t.Context())
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(450 * time.Millisecond)
		cancel()
		<-p.Done()
		r := p.Stop()
		if r.Requests != 5 || r.OK != 5 || r.ProbeErrors != 0 {
			t.Errorf("requests %d ok %d probe errors %d, want 5 5 0", r.Requests, r.OK, r.ProbeErrors)
		}
	})
}

func TestProber_Lifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{URL: "http://target/", Rate: 1, Duration: time.Second}
		p := mustNew(t, cfg, Deps{Clock: clockwork.NewRealClock(), transport: &fakeTarget{}})
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(t.Context()); !errors.Is(err, ErrAlreadyStarted) {
			t.Errorf("second Start = %v, want ErrAlreadyStarted", err)
		}
		p.Stop()

		q := mustNew(t, cfg, Deps{Clock: clockwork.NewRealClock(), transport: &fakeTarget{}})
		r := q.Stop()
		if r.Requests != 0 || r.Buckets == nil {
			t.Errorf("Stop before Start = %+v", r)
		}
		if err := q.Start(t.Context()); !errors.Is(err, ErrStopped) {
			t.Errorf("Start after Stop = %v, want ErrStopped", err)
		}
		select {
		case <-q.Done():
		default:
			t.Error("Done not closed by Stop before Start")
		}
	})
}

// TestProber_OnBucketPanicIsContained: a panicking callback is logged and
// the run goes on.
func TestProber_OnBucketPanicIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		p := mustNew(t, Config{URL: "http://target/", Rate: 5, Duration: 2 * time.Second}, Deps{Clock: clockwork.NewRealClock(), transport: &fakeTarget{}, OnBucket: func(Bucket) {
			calls++
			panic("boom")
		}})
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		r := p.Stop()
		if calls != 2 || r.Requests != 10 {
			t.Errorf("callback calls %d, requests %d; want 2, 10", calls, r.Requests)
		}
	})
}

// TestRun_Classes: every class reaches the report through the prober.
func TestRun_Classes(t *testing.T) {
	cases := []struct {
		name   string
		target *fakeTarget
		url    string
		check  func(Report) bool
	}{
		{"ok", &fakeTarget{}, "http://t/", func(r Report) bool { return r.OK == 10 }},
		{"lb 502", &fakeTarget{status: 502, header: http.Header{wire.HeaderLB: {wire.ReasonTargetRefused}}}, "http://t/", func(r Report) bool { return r.ReachedNothing == 10 }},
		{"app 500", &fakeTarget{status: 500, header: http.Header{wire.HeaderVersion: {"v1"}}}, "http://t/", func(r Report) bool { return r.AppErrors == 10 }},
		{"health 503", &fakeTarget{status: 503}, "http://t/healthz", func(r Report) bool { return r.DrainSignals == 10 }},
		{"lb 400", &fakeTarget{status: 400, header: http.Header{wire.HeaderLB: {wire.ReasonBadRequest}}}, "http://t/", func(r Report) bool { return r.ProbeErrors == 10 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, err := Run(t.Context(), Config{URL: tc.url, Rate: 10, Duration: time.Second}, Deps{Clock: clockwork.NewRealClock(), transport: tc.target})
				if err != nil {
					t.Fatal(err)
				}
				checkSums(t, r)
				if r.Requests != 10 || !tc.check(r) {
					t.Errorf("report %+v", r)
				}
			})
		})
	}
}

func TestProber_StartWithEndedContextSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &fakeTarget{}
		p := mustNew(t, Config{URL: "http://target/", Rate: 10, Duration: time.Second}, Deps{Clock: clockwork.NewRealClock(), transport: target})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		if r := p.Stop(); r.Requests != 0 || target.received.Load() != 0 {
			t.Errorf("sent %d requests with an ended context", r.Requests)
		}
	})
}
