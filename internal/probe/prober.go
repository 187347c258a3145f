package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// Lifecycle errors of a Prober.
var (
	// ErrAlreadyStarted is returned by Start on its second call.
	ErrAlreadyStarted = errors.New("probe already started")
	// ErrStopped is returned by Start after Stop.
	ErrStopped = errors.New("probe stopped")
)

// maxBatch bounds how many due requests the scheduler dispatches before it
// looks at Stop again, so a schedule the machine cannot keep up with still
// stops promptly.
const maxBatch = 1024

// Deps are a Prober's dependencies; zero fields get defaults.
type Deps struct {
	// Clock times the schedule and measures latency. Default (nil): the real
	// clock, with the last PreciseWindow of every wait slept precisely
	// (waiter.go: Go's timers can overshoot by a millisecond when the process
	// is otherwise idle, enough to make sends late). When set, the schedule
	// waits on this clock's timers only: a fake clock in tests, or
	// clockwork.NewRealClock() inside a testing/synctest bubble. (Request
	// timeouts always run on real time: the network stack enforces them.)
	Clock clockwork.Clock
	// Logger receives panics of request goroutines and of OnBucket. Default:
	// discard.
	Logger *slog.Logger
	// OnBucket, when set, receives live progress: each second of the run, in
	// order, once every request due in that second has finished (so at most
	// about Config.Timeout after the second ends). Seconds not delivered by
	// then are delivered before Stop returns. It is called from one goroutine
	// and must not block for long.
	OnBucket func(Bucket)

	// transport replaces the default fasthttp transport; for tests of the
	// scheduler, which run on fake time.
	transport transport
}

// Prober sends requests on an open-loop schedule and aggregates their
// outcomes. Create it with New, run it with Start, end it with Stop. Its
// methods are safe for concurrent use.
type Prober struct {
	cfg        Config
	clock      clockwork.Clock
	precise    bool // clock is the default real clock: sleep precisely
	log        *slog.Logger
	onBucket   func(Bucket)
	tr         transport
	url        string
	healthPath bool
	rec        *recorder

	// Requests are made by a pool of workers that grows on demand up to
	// MaxInFlight (workers keep their grown stacks; a goroutine per request
	// spends a good share of its CPU growing a fresh stack).
	jobs     chan job       // unbuffered: a hand-off succeeds only to an idle worker
	workers  int            // workers started; owned by the scheduler goroutine
	pool     sync.WaitGroup // one per worker
	inflight atomic.Int64   // jobs handed to workers and not yet recorded

	mu       sync.Mutex // guards started, stopped
	started  bool
	stopped  bool
	sched    schedule
	stopCh   chan struct{} // closed by Stop
	loopDone chan struct{} // closed when the scheduler has returned
	sendEnd  time.Time     // when the scheduler stopped; written before loopDone closes
	flush    chan struct{} // closed by Stop to make the emitter deliver the rest
	emitDone chan struct{}

	stopOnce sync.Once
	report   Report
}

// New validates cfg, applies defaults and returns a Prober ready to Start.
// Errors match ErrInvalidConfig and name the field.
func New(cfg Config, deps Deps) (*Prober, error) {
	cfg = cfg.withDefaults()
	u, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	p := &Prober{
		cfg:        cfg,
		clock:      deps.Clock,
		log:        deps.Logger,
		onBucket:   deps.OnBucket,
		tr:         deps.transport,
		url:        u.String(),
		healthPath: u.Path == cfg.HealthPath,
		rec:        newRecorder(cfg.LateTolerance),
		jobs:       make(chan job),
		stopCh:     make(chan struct{}),
		loopDone:   make(chan struct{}),
		flush:      make(chan struct{}),
		emitDone:   make(chan struct{}),
	}
	if p.clock == nil {
		p.clock = clockwork.NewRealClock()
		p.precise = true
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.tr == nil {
		p.tr = newFastTransport(u, cfg.Method, cfg.UserAgent, cfg.MaxInFlight, cfg.Timeout)
	}
	return p, nil
}

// Config returns the configuration in use, defaults applied.
func (p *Prober) Config() Config { return p.cfg }

// Start begins sending: request 0 is due now. Sending stops when
// Config.Duration has passed, when ctx ends, or at Stop; requests in flight
// then still finish (each within Config.Timeout) — ctx does not cancel them,
// so ending a run never turns into failed requests. Returns ErrAlreadyStarted
// or ErrStopped when called again or after Stop.
func (p *Prober) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stopped:
		return ErrStopped
	case p.started:
		return ErrAlreadyStarted
	}
	p.started = true
	p.sched = newSchedule(p.clock.Now(), p.cfg.Rate, p.cfg.Duration)
	go p.loop(ctx)
	if p.onBucket != nil {
		go p.emit()
	} else {
		close(p.emitDone)
	}
	return nil
}

// Done is closed when the prober has stopped sending: the schedule ended,
// Start's context ended, or Stop was called. Stop still has to be called for
// the Report.
func (p *Prober) Done() <-chan struct{} { return p.loopDone }

// InFlight returns the number of requests in flight now.
func (p *Prober) InFlight() int { return int(p.inflight.Load()) }

// Stop stops sending, waits for the requests in flight (each ends within
// Config.Timeout), closes the transport's idle connections, delivers
// the remaining seconds to Deps.OnBucket and returns the Report. Later calls
// return the same Report. Stop before Start returns an empty Report, closes
// Done and makes Start fail.
func (p *Prober) Stop() Report {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		started := p.started
		p.mu.Unlock()
		close(p.stopCh)
		p.report = Report{URL: p.url, Rate: p.cfg.Rate, MaxInFlight: p.cfg.MaxInFlight}
		if !started {
			p.report.Buckets = []Bucket{}
			close(p.loopDone)
			return
		}
		<-p.loopDone
		close(p.jobs) // the scheduler, the only sender, has returned
		p.pool.Wait()
		p.tr.closeIdle()
		p.rec.closeAll()
		close(p.flush)
		<-p.emitDone
		p.report.StartedAt = p.sched.start
		p.report.Elapsed = p.sendEnd.Sub(p.sched.start)
		p.rec.fill(&p.report)
		p.report.NewConns = p.tr.dials()
	})
	return p.report
}

// Run probes with cfg until the schedule ends or ctx ends, and returns the
// Report. With Config.Duration 0 it runs until ctx ends.
func Run(ctx context.Context, cfg Config, deps Deps) (Report, error) {
	p, err := New(cfg, deps)
	if err != nil {
		return Report{}, err
	}
	if err := p.Start(ctx); err != nil {
		return Report{}, err
	}
	<-p.Done()
	return p.Stop(), nil
}

// loop is the scheduler: it dispatches every request that is due and sleeps
// until the next one is. It never waits for responses.
func (p *Prober) loop(ctx context.Context) {
	defer close(p.loopDone)
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("probe scheduler panicked; sending stopped", "panic", v, "stack", string(debug.Stack()))
		}
	}()
	w := p.newWaiter(ctx)
	defer w.close()
	if w.stopped() { // ctx ended (or Stop came) before the first send
		p.sendEnd = p.sched.start
		return
	}
	var next int64
	for {
		n := p.sched.dueBy(p.clock.Now())
		if n > next+maxBatch {
			n = next + maxBatch
		}
		for ; next < n; next++ {
			p.dispatch(next)
		}
		if p.sched.ended(next) {
			p.sendEnd = p.sched.start.Add(p.cfg.Duration)
			return
		}
		p.rec.closeBefore(p.sched.second(next))
		if !w.until(p.sched.due(next)) {
			p.sendEnd = p.clock.Now()
			return
		}
	}
}

// job is one request for a worker.
type job struct {
	due    time.Time
	second int
}

// dispatch hands request i to an idle worker, starts a new worker when none
// is idle, or counts the request unsent when MaxInFlight requests are in
// flight. Only the scheduler goroutine calls it.
func (p *Prober) dispatch(i int64) {
	j := job{due: p.sched.due(i), second: p.sched.second(i)}
	max := p.cfg.MaxInFlight
	if p.inflight.Load() >= int64(max) {
		p.rec.unsent(j.second)
		return
	}
	p.rec.dispatched(j.second)
	p.inflight.Add(1)
	select {
	case p.jobs <- j:
		return
	default:
	}
	if p.workers < max {
		p.workers++
		p.pool.Add(1)
		go p.worker(j)
		return
	}
	// Every worker exists and fewer than all are busy: one has just finished
	// and is on its way back for the next job.
	p.jobs <- j
}

// worker makes requests until jobs is closed, each through its own
// exchanger.
func (p *Prober) worker(j job) {
	defer p.pool.Done()
	x := p.tr.newExchanger()
	for ok := true; ok; j, ok = <-p.jobs {
		p.send(x, j.due, j.second)
		p.inflight.Add(-1)
	}
}

// send makes one request and records its result. A panic is recovered,
// logged and recorded as a probe error.
func (p *Prober) send(x exchanger, due time.Time, second int) {
	recorded := false
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("probe request panicked", "panic", v, "stack", string(debug.Stack()))
			if !recorded {
				p.rec.record(result{second: second, outcome: Outcome{ClassProbeError, ReasonPanic}, err: fmt.Errorf("panic: %v", v)})
			}
		}
	}()
	sent := p.clock.Now()
	obs, ex := x.exchange(p.cfg.Timeout)
	end := p.clock.Now()
	obs.HealthPath = p.healthPath
	out := Classify(obs)
	var detail string
	switch out.Reason {
	case ReasonLBMarked:
		detail = obs.LBMarker
	case ReasonALB:
		detail = obs.Server
	case ReasonLBRejected:
		detail = obs.LBMarker
		if detail == "" {
			detail = obs.Server
		}
	}
	recorded = true
	p.rec.record(result{
		second:  second,
		outcome: out,
		status:  obs.Status,
		detail:  detail,
		latency: end.Sub(due),
		sendLat: end.Sub(sent),
		lag:     sent.Sub(due),
		version: ex.version,
		host:    ex.host,
		err:     obs.Err,
	})
}

// emit delivers completed seconds to OnBucket as they complete.
func (p *Prober) emit() {
	defer close(p.emitDone)
	for {
		select {
		case <-p.rec.notify:
			p.deliver(p.rec.takeComplete())
		case <-p.flush:
			p.deliver(p.rec.takeComplete())
			p.deliver(p.rec.takeRest())
			return
		}
	}
}

func (p *Prober) deliver(bs []Bucket) {
	for _, b := range bs {
		func() {
			defer func() {
				if v := recover(); v != nil {
					p.log.Error("probe OnBucket panicked", "panic", v, "second", b.Second, "stack", string(debug.Stack()))
				}
			}()
			p.onBucket(b)
		}()
	}
}
