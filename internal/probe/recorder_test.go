package probe

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

func okResult(second int, latency time.Duration) result {
	return result{second: second, outcome: Outcome{ClassOK, ReasonResponse}, status: 200, latency: latency, sendLat: latency}
}

func TestRecorder_Record(t *testing.T) {
	r := newRecorder(time.Millisecond)
	add := func(res result) {
		r.dispatched(res.second)
		r.record(res)
	}
	add(okResult(0, 10*time.Millisecond))
	add(result{second: 0, outcome: Outcome{ClassReachedNothing, ReasonLBMarked}, status: 502, detail: "target-refused", latency: time.Millisecond})
	add(result{second: 0, outcome: Outcome{ClassReachedNothing, ReasonLBMarked}, status: 502, detail: "target-refused", latency: time.Millisecond})
	add(result{second: 1, outcome: Outcome{ClassAppError, ReasonAppStatus}, status: 500, version: "v2", host: "web-1"})
	add(result{second: 1, outcome: Outcome{ClassDrainSignal, ReasonHealth503}, status: 503, lag: time.Millisecond})                                               // at the tolerance: on time
	add(result{second: 2, outcome: Outcome{ClassProbeError, ReasonLocal}, err: errors.New("too many open files"), lag: 2 * time.Millisecond, latency: time.Hour}) // late
	add(result{second: 2, outcome: Outcome{ClassOK, ReasonResponse}, status: 200, version: "v1", host: "web-2", lag: time.Millisecond + 1})                       // late
	r.unsent(2)

	var rep Report
	r.fill(&rep)
	if got := [...]int64{rep.Requests, rep.OK, rep.ReachedNothing, rep.AppErrors, rep.DrainSignals, rep.ProbeErrors, rep.LateSends, rep.Unsent}; got != [...]int64{7, 2, 2, 1, 1, 1, 2, 1} {
		t.Errorf("requests, ok, nothing, app, drain, probe, late, unsent = %v", got)
	}
	if sum := rep.OK + rep.ReachedNothing + rep.AppErrors + rep.DrainSignals + rep.ProbeErrors; sum != rep.Requests {
		t.Errorf("classes add up to %d, not %d requests", sum, rep.Requests)
	}
	if rep.Latency.Max < 9*time.Millisecond || rep.Latency.Max > 11*time.Millisecond {
		t.Errorf("max latency %v, want ≈10ms (probe errors excluded)", rep.Latency.Max)
	}
	if len(rep.Buckets) != 3 {
		t.Fatalf("%d buckets, want 3", len(rep.Buckets))
	}
	b0, b1, b2 := rep.Buckets[0], rep.Buckets[1], rep.Buckets[2]
	if b0.Requests != 3 || b0.ReachedNothing != 2 || b0.OK != 1 || b0.MaxLatency != 10*time.Millisecond {
		t.Errorf("bucket 0 = %+v", b0)
	}
	if b1.AppErrors != 1 || b1.DrainSignals != 1 || b1.LateSends != 0 || b1.Versions["v2"] != 1 || b1.Hosts["web-1"] != 1 {
		t.Errorf("bucket 1 = %+v", b1)
	}
	if b2.ProbeErrors != 1 || b2.LateSends != 2 || b2.Unsent != 1 || b2.Versions["v1"] != 1 {
		t.Errorf("bucket 2 = %+v", b2)
	}
	wantReason := ReasonCount{Class: ClassReachedNothing, Reason: ReasonLBMarked, Status: 502, Detail: "target-refused", Count: 2}
	if len(rep.Reasons) != 4 || rep.Reasons[0] != wantReason {
		t.Errorf("reasons = %+v, want 4 with %+v first", rep.Reasons, wantReason)
	}
	if len(rep.ErrorSamples) != 1 || rep.ErrorSamples[0] != "probe_error/local-resource: too many open files" {
		t.Errorf("error samples = %q", rep.ErrorSamples)
	}
	if rep.MaxSendLag != 2*time.Millisecond {
		t.Errorf("max send lag %v", rep.MaxSendLag)
	}
}

func TestRecorder_KeyCaps(t *testing.T) {
	r := newRecorder(time.Millisecond)
	for i := 0; i < maxKeysPerBucket+10; i++ {
		r.dispatched(0)
		res := okResult(0, time.Millisecond)
		res.version = fmt.Sprintf("v%d", i)
		res.host = fmt.Sprintf("host-%d-%0100d", i, 0) // longer than maxValueLen
		r.record(res)
	}
	var rep Report
	r.fill(&rep)
	b := rep.Buckets[0]
	if len(b.Versions) != maxKeysPerBucket+1 || b.Versions[otherKey] != 10 {
		t.Errorf("bucket has %d versions, %d under %q; want %d and 10", len(b.Versions), b.Versions[otherKey], otherKey, maxKeysPerBucket+1)
	}
	for h := range b.Hosts {
		if len(h) > maxValueLen {
			t.Errorf("host key %q longer than %d", h, maxValueLen)
		}
	}
	if len(rep.Versions) != maxKeysPerBucket+10 {
		t.Errorf("run has %d versions, want %d (total cap is higher)", len(rep.Versions), maxKeysPerBucket+10)
	}
}

func TestRecorder_ReasonCap(t *testing.T) {
	r := newRecorder(time.Millisecond)
	for i := 0; i < maxReasonKeys+5; i++ {
		r.dispatched(0)
		r.record(result{outcome: Outcome{ClassReachedNothing, ReasonLBMarked}, status: 502, detail: fmt.Sprint("marker-", i)})
	}
	var rep Report
	r.fill(&rep)
	if len(rep.Reasons) != maxReasonKeys+1 {
		t.Errorf("%d reason keys, want %d", len(rep.Reasons), maxReasonKeys+1)
	}
	if rep.Reasons[0].Detail != otherKey || rep.Reasons[0].Count != 5 {
		t.Errorf("first reason = %+v, want 5 under %q", rep.Reasons[0], otherKey)
	}
}

func TestRecorder_TakeComplete(t *testing.T) {
	r := newRecorder(time.Millisecond)
	r.dispatched(0)
	r.dispatched(0)
	r.dispatched(1)
	if got := r.takeComplete(); len(got) != 0 {
		t.Fatalf("took %d buckets before any second closed", len(got))
	}
	r.record(okResult(0, 0))
	r.closeBefore(2) // seconds 0 and 1 fully dispatched
	if got := r.takeComplete(); len(got) != 0 {
		t.Fatalf("took %v while second 0 has a request outstanding", got)
	}
	r.record(okResult(1, 0)) // second 1 done, but 0 is not: order is kept
	if got := r.takeComplete(); len(got) != 0 {
		t.Fatalf("took %v out of order", got)
	}
	r.record(okResult(0, 0))
	got := r.takeComplete()
	if len(got) != 2 || got[0].Second != 0 || got[0].Requests != 2 || got[1].Second != 1 {
		t.Fatalf("took %+v, want seconds 0 (2 requests) and 1", got)
	}
	select {
	case <-r.notify:
	default:
		t.Error("no notification when seconds completed")
	}
	r.dispatched(3) // a request due in second 3; second 2 is empty
	if got := r.takeComplete(); len(got) != 0 {
		t.Fatalf("took %v before second 2 closed", got)
	}
	if got := r.takeRest(); len(got) != 2 || got[0].Second != 2 || got[0].Requests != 0 || got[1].Second != 3 {
		t.Fatalf("takeRest = %+v, want empty second 2 and second 3", got)
	}
}

// TestRecorder_RecordDoesNotAllocate: the recording path allocates nothing
// once a second's bucket has seen the version and host.
func TestRecorder_RecordDoesNotAllocate(t *testing.T) {
	r := newRecorder(time.Millisecond)
	res := okResult(0, 3*time.Millisecond)
	res.version, res.host = "v1", "web-1"
	rn := result{outcome: Outcome{ClassReachedNothing, ReasonLBMarked}, status: 502, detail: "target-refused", latency: time.Millisecond}
	r.dispatched(0)
	r.record(res)
	r.dispatched(0)
	r.record(rn)
	allocs := testing.AllocsPerRun(1000, func() {
		r.dispatched(0)
		r.record(res)
		r.dispatched(0)
		r.record(rn)
	})
	if allocs != 0 {
		t.Errorf("record allocates %v times per call pair, want 0", allocs)
	}
}

// TestRecorder_MemoryDoesNotGrowWithRequests: 60,000 requests over ten
// seconds leave the heap where it was: nothing is kept per request (even
// 2.2 bytes a request would show; TestRecorder_RecordDoesNotAllocate pins
// the per-call allocations at zero).
func TestRecorder_MemoryDoesNotGrowWithRequests(t *testing.T) {
	r := newRecorder(time.Millisecond)
	res := okResult(0, 0)
	res.version, res.host = "v1", "web-1"
	for s := 0; s < 10; s++ { // warm every bucket
		res.second = s
		r.dispatched(s)
		r.record(res)
	}
	before := heapInUse()
	const n = 60_000
	for i := 0; i < n; i++ {
		res.second = i % 10
		res.latency = time.Duration(i%5000) * time.Microsecond
		r.dispatched(res.second)
		r.record(res)
	}
	after := heapInUse()
	if grew := int64(after) - int64(before); grew > 128<<10 {
		t.Errorf("heap grew %d bytes over %d requests (%.2f B/request), want < 128 KiB", grew, n, float64(grew)/n)
	}
	var rep Report
	r.fill(&rep)
	if rep.Requests != n+10 || len(rep.Buckets) != 10 {
		t.Errorf("requests %d, buckets %d", rep.Requests, len(rep.Buckets))
	}
	runtime.KeepAlive(r)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func BenchmarkRecorder_Record(b *testing.B) {
	r := newRecorder(time.Millisecond)
	res := okResult(0, 3*time.Millisecond)
	res.version, res.host = "v1", "web-1"
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res.second = (i >> 12) & 1023 // a new second every 4096 requests
		res.latency = time.Duration(i&4095) * time.Microsecond
		r.dispatched(res.second)
		r.record(res)
		i++
	}
}

func BenchmarkRecorder_RecordParallel(b *testing.B) {
	r := newRecorder(time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		res := okResult(0, 3*time.Millisecond)
		res.version, res.host = "v1", "web-1"
		for pb.Next() {
			r.dispatched(0)
			r.record(res)
		}
	})
}

// TestRecorder_PercentilesNeverExceedMax: the histogram rounds up; the
// report's percentiles are capped by the exact maximum.
func TestRecorder_PercentilesNeverExceedMax(t *testing.T) {
	r := newRecorder(time.Millisecond)
	for _, d := range []time.Duration{time.Millisecond, 20770 * time.Microsecond} {
		r.dispatched(0)
		r.record(okResult(0, d))
	}
	var rep Report
	r.fill(&rep)
	l := rep.Latency
	if l.Max != 20770*time.Microsecond || l.P999 > l.Max || l.P99 > l.Max {
		t.Errorf("latency %+v: a percentile exceeds the max", l)
	}
}

// TestRecorder_SecondQuantiles: each second carries its own p50 and p99;
// a settled second (every request dispatched and recorded) gives its
// histogram back for reuse, so only seconds in flight hold one.
func TestRecorder_SecondQuantiles(t *testing.T) {
	r := newRecorder(time.Millisecond)
	for i := 1; i <= 100; i++ {
		r.dispatched(0)
		r.record(okResult(0, time.Duration(i)*time.Millisecond))
	}
	r.dispatched(1)
	r.record(okResult(1, 7*time.Millisecond))
	r.dispatched(1) // still in flight
	r.closeBefore(2)
	if r.buckets[0].hist != nil || len(r.freeHists) != 1 {
		t.Errorf("second 0 settled: hist %v, free list %d; want nil, 1", r.buckets[0].hist, len(r.freeHists))
	}
	if r.buckets[1].hist == nil {
		t.Error("second 1 has a request in flight but lost its histogram")
	}
	bs := r.takeComplete()
	if len(bs) != 1 {
		t.Fatalf("%d complete seconds, want 1", len(bs))
	}
	near := func(got, want time.Duration) bool { return got >= want*98/100 && got <= want*102/100 }
	if b := bs[0]; !near(b.P50Latency, 50*time.Millisecond) || !near(b.P99Latency, 99*time.Millisecond) || b.P99Latency > b.MaxLatency {
		t.Errorf("second 0: p50 %v p99 %v max %v; want ≈50ms, ≈99ms, ≤ max", b.P50Latency, b.P99Latency, b.MaxLatency)
	}
	r.record(okResult(1, 9*time.Millisecond))
	if r.buckets[1].hist != nil || len(r.freeHists) != 2 {
		t.Errorf("second 1 settled on its last record: hist %v, free list %d", r.buckets[1].hist, len(r.freeHists))
	}
	var rep Report
	r.fill(&rep)
	if b := rep.Buckets[1]; !near(b.P50Latency, 7*time.Millisecond) || b.P99Latency != 9*time.Millisecond {
		t.Errorf("second 1: p50 %v p99 %v, want ≈7ms, 9ms (capped by the max)", b.P50Latency, b.P99Latency)
	}
}
