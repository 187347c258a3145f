package probe

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Bounds that keep the recorder's memory independent of the number of
// requests: one bucket per second, each with at most maxKeysPerBucket versions
// and hosts; every other structure has a fixed size.
const (
	maxKeysPerBucket = 32
	maxKeysTotal     = 256
	maxValueLen      = 64
	maxReasonKeys    = 64
	maxErrorSamples  = 5
	// otherKey stands for every version or host past the cap.
	otherKey = "(other)"
	// histMax is the largest latency the histograms track, in µs (1 h);
	// larger values are clamped to it.
	histMax = int64(time.Hour / time.Microsecond)
	// secondDigits is the precision of each second's latency histogram: 2
	// significant digits (p99 within 1 %) keep one at about 27 KB, and only
	// the seconds with requests still in flight hold one.
	secondDigits = 2
)

// result is one request's outcome, handed from its goroutine to the recorder.
// It is passed by value and retained by nothing: the recorder only aggregates.
type result struct {
	second  int // the run's second the request was due in
	outcome Outcome
	status  int
	detail  string        // LB marker or Server header of an LB-generated response
	latency time.Duration // completion − due time (the honest one)
	sendLat time.Duration // completion − actual send
	lag     time.Duration // actual send − due time
	version string
	host    string
	err     error
}

// tally counts requests by class.
type tally struct {
	sent    int64
	byClass [numClasses]int64
	late    int64
	unsent  int64
}

// bucketAcc accumulates one second of the run.
type bucketAcc struct {
	tally
	outstanding int64 // dispatched, not yet recorded
	maxLatency  time.Duration
	// hist holds the second's latencies until the second is settled (every
	// request dispatched and recorded); then p50 and p99 keep its quantiles
	// and the histogram goes back to the recorder's free list.
	hist     *hdrhistogram.Histogram
	p50, p99 time.Duration
	versions map[string]int64
	hosts    map[string]int64
}

// reasonKey groups results for Report.Reasons.
type reasonKey struct {
	class  Class
	reason Reason
	status int
	detail string
}

// recorder aggregates results. All methods are safe for concurrent use; none
// keeps per-request state, so its memory grows only by one bucket per second.
type recorder struct {
	mu            sync.Mutex
	lateTolerance time.Duration
	total         tally
	buckets       []bucketAcc
	closed        int // buckets[:closed] have had every request dispatched
	emitted       int // buckets[:emitted] have been handed out by takeComplete
	latency       *hdrhistogram.Histogram
	sendLatency   *hdrhistogram.Histogram
	maxLag        time.Duration
	maxLatency    time.Duration // exact; the histograms round
	maxSendLat    time.Duration
	reasons       map[reasonKey]int64
	versions      map[string]int64
	hosts         map[string]int64
	samples       []string
	// freeHists are reset per-second histograms for reuse.
	freeHists []*hdrhistogram.Histogram
	// notify gets a token (never blocking) when a bucket may have completed.
	notify chan struct{}
}

func newRecorder(lateTolerance time.Duration) *recorder {
	return &recorder{
		lateTolerance: lateTolerance,
		latency:       hdrhistogram.New(1, histMax, 3),
		sendLatency:   hdrhistogram.New(1, histMax, 3),
		reasons:       make(map[reasonKey]int64),
		versions:      make(map[string]int64),
		hosts:         make(map[string]int64),
		notify:        make(chan struct{}, 1),
	}
}

// bucket returns the accumulator of second s, growing the slice as needed.
// Callers hold mu.
func (r *recorder) bucket(s int) *bucketAcc {
	for len(r.buckets) <= s {
		r.buckets = append(r.buckets, bucketAcc{})
	}
	return &r.buckets[s]
}

// dispatched notes that a request due in second s was sent off.
func (r *recorder) dispatched(s int) {
	r.mu.Lock()
	r.bucket(s).outstanding++
	r.mu.Unlock()
}

// unsent counts a request due in second s that was not sent because the
// in-flight bound was reached.
func (r *recorder) unsent(s int) {
	r.mu.Lock()
	r.bucket(s).unsent++
	r.total.unsent++
	r.mu.Unlock()
}

// record adds one finished request. It does not allocate once the second's
// bucket has seen the result's version and host.
func (r *recorder) record(res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucket(res.second)
	c := res.outcome.Class
	late := res.lag > r.lateTolerance
	for _, t := range [...]*tally{&b.tally, &r.total} {
		t.sent++
		t.byClass[c]++
		if late {
			t.late++
		}
	}
	if res.lag > r.maxLag {
		r.maxLag = res.lag
	}
	if c != ClassProbeError {
		recordDuration(r.latency, res.latency)
		recordDuration(r.sendLatency, res.sendLat)
		if res.latency > b.maxLatency {
			b.maxLatency = res.latency
		}
		if b.hist == nil {
			b.hist = r.newSecondHist()
		}
		recordDuration(b.hist, res.latency)
		r.maxLatency = max(r.maxLatency, res.latency)
		r.maxSendLat = max(r.maxSendLat, res.sendLat)
	}
	if res.version != "" {
		b.versions = countKey(b.versions, res.version, maxKeysPerBucket)
		r.versions = countKey(r.versions, res.version, maxKeysTotal)
	}
	if res.host != "" {
		b.hosts = countKey(b.hosts, res.host, maxKeysPerBucket)
		r.hosts = countKey(r.hosts, res.host, maxKeysTotal)
	}
	if res.outcome != (Outcome{ClassOK, ReasonResponse}) {
		k := reasonKey{class: c, reason: res.outcome.Reason, status: res.status, detail: clip(res.detail)}
		if _, ok := r.reasons[k]; !ok && len(r.reasons) >= maxReasonKeys {
			k.status, k.detail = 0, otherKey
		}
		r.reasons[k]++
	}
	if res.err != nil && len(r.samples) < maxErrorSamples {
		r.addSample(res.outcome, res.err)
	}
	b.outstanding--
	if b.outstanding == 0 && res.second < r.closed {
		r.settle(res.second)
		r.poke()
	}
}

// newSecondHist returns an empty per-second histogram. Callers hold mu.
func (r *recorder) newSecondHist() *hdrhistogram.Histogram {
	if n := len(r.freeHists); n > 0 {
		h := r.freeHists[n-1]
		r.freeHists = r.freeHists[:n-1]
		return h
	}
	return hdrhistogram.New(1, histMax, secondDigits)
}

// settle keeps second s's latency quantiles and frees its histogram once
// every request due in it has been dispatched and recorded, so memory holds
// histograms only for the few seconds still in flight. Callers hold mu.
func (r *recorder) settle(s int) {
	b := &r.buckets[s]
	if b.hist == nil || b.outstanding != 0 || s >= r.closed {
		return
	}
	b.p50, b.p99 = secondQuantiles(b.hist, b.maxLatency)
	b.hist.Reset()
	r.freeHists = append(r.freeHists, b.hist)
	b.hist = nil
}

// secondQuantiles are p50 and p99 of h, at most max (the exact maximum).
func secondQuantiles(h *hdrhistogram.Histogram, max time.Duration) (p50, p99 time.Duration) {
	if h.TotalCount() == 0 {
		return 0, 0
	}
	at := func(q float64) time.Duration { return min(time.Duration(h.ValueAtQuantile(q))*time.Microsecond, max) }
	return at(50), at(99)
}

// addSample keeps the first few distinct error messages. Callers hold mu.
func (r *recorder) addSample(o Outcome, err error) {
	s := o.Class.String() + "/" + o.Reason.String() + ": " + err.Error()
	for _, have := range r.samples {
		if have == s {
			return
		}
	}
	r.samples = append(r.samples, s)
}

// closeBefore notes that every request due before second s has been
// dispatched: those seconds complete once their requests are recorded.
func (r *recorder) closeBefore(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s <= r.closed {
		return
	}
	if s > 0 {
		r.bucket(s - 1)
	}
	from := r.closed
	r.closed = s
	for i := from; i < s; i++ {
		r.settle(i)
	}
	r.poke()
}

// closeAll notes that no more requests will be dispatched.
func (r *recorder) closeAll() {
	r.mu.Lock()
	from := r.closed
	r.closed = len(r.buckets)
	for i := from; i < r.closed; i++ {
		r.settle(i)
	}
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) poke() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// takeComplete returns, in order, the seconds not handed out before whose
// requests have all been dispatched and recorded.
func (r *recorder) takeComplete() []Bucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Bucket
	for r.emitted < r.closed && r.buckets[r.emitted].outstanding == 0 {
		out = append(out, r.buckets[r.emitted].snapshot(r.emitted))
		r.emitted++
	}
	return out
}

// takeRest returns every second not handed out yet, complete or not.
func (r *recorder) takeRest() []Bucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Bucket
	for ; r.emitted < len(r.buckets); r.emitted++ {
		out = append(out, r.buckets[r.emitted].snapshot(r.emitted))
	}
	return out
}

// fill writes the aggregate into rep.
func (r *recorder) fill(rep *Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.total
	rep.Requests = t.sent
	rep.OK = t.byClass[ClassOK]
	rep.ReachedNothing = t.byClass[ClassReachedNothing]
	rep.AppErrors = t.byClass[ClassAppError]
	rep.DrainSignals = t.byClass[ClassDrainSignal]
	rep.ProbeErrors = t.byClass[ClassProbeError]
	rep.LateSends = t.late
	rep.Unsent = t.unsent
	rep.MaxSendLag = r.maxLag
	rep.Latency = latencyOf(r.latency, r.maxLatency)
	rep.SendLatency = latencyOf(r.sendLatency, r.maxSendLat)
	rep.Reasons = make([]ReasonCount, 0, len(r.reasons))
	for k, n := range r.reasons {
		rep.Reasons = append(rep.Reasons, ReasonCount{Class: k.class, Reason: k.reason, Status: k.status, Detail: k.detail, Count: n})
	}
	sortReasons(rep.Reasons)
	rep.Versions = copyCounts(r.versions)
	rep.Hosts = copyCounts(r.hosts)
	rep.ErrorSamples = append([]string{}, r.samples...)
	rep.Buckets = make([]Bucket, len(r.buckets))
	for i := range r.buckets {
		rep.Buckets[i] = r.buckets[i].snapshot(i)
	}
}

func (b *bucketAcc) snapshot(second int) Bucket {
	p50, p99 := b.p50, b.p99
	if b.hist != nil { // not settled: the quantiles so far
		p50, p99 = secondQuantiles(b.hist, b.maxLatency)
	}
	return Bucket{
		Second:         second,
		Requests:       b.sent,
		OK:             b.byClass[ClassOK],
		ReachedNothing: b.byClass[ClassReachedNothing],
		AppErrors:      b.byClass[ClassAppError],
		DrainSignals:   b.byClass[ClassDrainSignal],
		ProbeErrors:    b.byClass[ClassProbeError],
		LateSends:      b.late,
		Unsent:         b.unsent,
		MaxLatency:     b.maxLatency,
		P50Latency:     p50,
		P99Latency:     p99,
		Versions:       copyCounts(b.versions),
		Hosts:          copyCounts(b.hosts),
	}
}

// countKey adds one to m[k], creating m on first use; past max distinct keys,
// new keys count under otherKey. Long values are clipped.
func countKey(m map[string]int64, k string, max int) map[string]int64 {
	if m == nil {
		m = make(map[string]int64, 2)
	}
	k = clip(k)
	if _, ok := m[k]; !ok && len(m) >= max {
		k = otherKey
	}
	m[k]++
	return m
}

func clip(s string) string {
	if len(s) > maxValueLen {
		return s[:maxValueLen]
	}
	return s
}

func copyCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func recordDuration(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < 1 {
		us = 1
	}
	if us > histMax {
		us = histMax
	}
	_ = h.RecordValue(us) // in range by construction
}

// latencyOf summarises h; max is the exact maximum (the histogram's is rounded
// up to its precision).
func latencyOf(h *hdrhistogram.Histogram, max time.Duration) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	// The histogram reports the highest value equivalent to a bucket (3
	// significant digits), which can exceed the exact maximum.
	at := func(q float64) time.Duration { return min(time.Duration(h.ValueAtQuantile(q))*time.Microsecond, max) }
	return Latency{
		P50:  at(50),
		P90:  at(90),
		P99:  at(99),
		P999: at(99.9),
		Max:  max,
		Mean: time.Duration(h.Mean() * float64(time.Microsecond)),
	}
}
