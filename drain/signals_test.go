package drain

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func TestDecideSignal(t *testing.T) {
	tests := []struct {
		name           string
		n              int
		ignoreRepeated bool
		want           signalAction
	}{
		{"first", 1, false, actStartDrain},
		{"second", 2, false, actSkipServe},
		{"third", 3, false, actStopNow},
		{"tenth", 10, false, actStopNow},
		{"first, repeats ignored", 1, true, actStartDrain},
		{"second, repeats ignored", 2, true, actIgnoreRepeat},
		{"third, repeats ignored", 3, true, actIgnoreRepeat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideSignal(tt.n, tt.ignoreRepeated); got != tt.want {
				t.Errorf("decideSignal(%d, %v) = %s, want %s", tt.n, tt.ignoreRepeated, got, tt.want)
			}
		})
	}
}

func TestServer_Signals(t *testing.T) {
	type sig struct {
		at time.Duration
		s  os.Signal
	}
	tests := []struct {
		name           string
		ignoreRepeated bool
		drainCallAt    time.Duration // > 0: Drain is called then
		signals        []sig
		inFlight       bool // a request that never ends on its own runs from 1s
		wantDrainAt    time.Duration
		wantEnd        time.Duration
		wantErr        error
		wantLog        string
	}{
		{
			name:        "one SIGTERM drains for the whole serve period",
			signals:     []sig{{2 * time.Second, syscall.SIGTERM}},
			wantDrainAt: 2 * time.Second, wantEnd: 2*time.Second + testD,
			wantLog: `reason="signal terminated"`,
		},
		{
			name:        "SIGINT drains too",
			signals:     []sig{{2 * time.Second, os.Interrupt}},
			wantDrainAt: 2 * time.Second, wantEnd: 2*time.Second + testD,
			wantLog: `reason="signal interrupt"`,
		},
		{
			name:        "second signal skips the rest of the serve period",
			signals:     []sig{{2 * time.Second, syscall.SIGTERM}, {5 * time.Second, os.Interrupt}},
			wantDrainAt: 2 * time.Second, wantEnd: 5 * time.Second,
			wantLog: "skipped=12s",
		},
		{
			name:           "second signal ignored when told",
			ignoreRepeated: true,
			signals:        []sig{{2 * time.Second, syscall.SIGTERM}, {5 * time.Second, syscall.SIGTERM}, {6 * time.Second, syscall.SIGTERM}},
			wantDrainAt:    2 * time.Second, wantEnd: 2*time.Second + testD,
			wantLog: "repeated signal ignored",
		},
		{
			name:        "second signal shortens the serve period, not the shutdown",
			signals:     []sig{{2 * time.Second, syscall.SIGTERM}, {5 * time.Second, syscall.SIGTERM}},
			inFlight:    true,
			wantDrainAt: 2 * time.Second, wantEnd: 5*time.Second + testS,
			wantErr: ErrShutdownTimeout,
		},
		{
			name:        "third signal stops at once",
			signals:     []sig{{2 * time.Second, syscall.SIGTERM}, {5 * time.Second, syscall.SIGTERM}, {7 * time.Second, syscall.SIGTERM}},
			inFlight:    true,
			wantDrainAt: 2 * time.Second, wantEnd: 7 * time.Second,
			wantErr: ErrStopped, wantLog: "stopping now",
		},
		{
			name:        "first signal after Drain does not skip",
			drainCallAt: time.Second,
			signals:     []sig{{3 * time.Second, syscall.SIGTERM}},
			wantDrainAt: time.Second, wantEnd: time.Second + testD,
			wantLog: "already draining",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sigs := make(chan os.Signal)
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
				hs := startHarnessWith(t, Config{ServePeriod: testD, ShutdownTimeout: testS, IgnoreRepeatedSignals: tt.ignoreRepeated}, h, sigs)
				if tt.inFlight {
					hs.sleepUntil(time.Second)
					go func() { _, _ = hs.get("/forever") }()
				}
				var drainedAt time.Duration = -1
				watch := func() {
					synctest.Wait()
					if drainedAt < 0 && hs.d.Draining() {
						drainedAt = hs.since()
					}
				}
				events := append([]sig(nil), tt.signals...)
				if tt.drainCallAt > 0 {
					hs.sleepUntil(tt.drainCallAt)
					hs.d.Drain()
					watch()
				}
				for _, e := range events {
					hs.sleepUntil(e.at)
					watch()
					sigs <- e.s
					watch()
				}
				err := hs.wait()
				if drainedAt != tt.wantDrainAt {
					t.Errorf("drain started at %s, want %s", drainedAt, tt.wantDrainAt)
				}
				if end := hs.since(); end != tt.wantEnd {
					t.Errorf("Serve returned at %s, want %s", end, tt.wantEnd)
				}
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Errorf("Serve = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(hs.logs.String(), tt.wantLog) {
					t.Errorf("log lacks %q:\n%s", tt.wantLog, hs.logs)
				}
			})
		})
	}
}

func TestServer_NoSignals_DoesNotSubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &http.Server{}
		d, err := New(srv, Config{NoSignals: true, ServePeriod: time.Second, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		subscribed := false
		d.subscribe = func([]os.Signal) (<-chan os.Signal, func()) {
			subscribed = true
			return nil, func() {}
		}
		d.Drain()
		if err := d.Serve(t.Context(), newPipeListener()); err != nil {
			t.Fatal(err)
		}
		if subscribed {
			t.Error("Serve subscribed to signals with NoSignals set")
		}
	})
}

func TestServer_Signals_SubscribesConfiguredSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &http.Server{}
		d, err := New(srv, Config{Signals: []os.Signal{syscall.SIGUSR2}, ServePeriod: time.Second, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		var got []os.Signal
		unsubscribed := false
		d.subscribe = func(s []os.Signal) (<-chan os.Signal, func()) {
			got = s
			return nil, func() { unsubscribed = true }
		}
		d.Drain()
		if err := d.Serve(t.Context(), newPipeListener()); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != syscall.SIGUSR2 {
			t.Errorf("subscribed to %v, want [SIGUSR2]", got)
		}
		if !unsubscribed {
			t.Error("Serve returned without unsubscribing")
		}
	})
}

func TestServer_Serving_AfterSignalsAreHandled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &http.Server{}
		d, err := New(srv, Config{ServePeriod: time.Second, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		sigs := make(chan os.Signal, 1)
		servingWhenSubscribed := true
		d.subscribe = func([]os.Signal) (<-chan os.Signal, func()) {
			select {
			case <-d.Serving():
			default:
				servingWhenSubscribed = false
			}
			return sigs, func() {}
		}
		select {
		case <-d.Serving():
			t.Fatal("Serving() closed before Serve")
		default:
		}
		errc := make(chan error, 1)
		go func() { errc <- d.Serve(t.Context(), newPipeListener()) }()
		<-d.Serving()
		if servingWhenSubscribed {
			t.Error("Serving() was closed before Serve subscribed to signals")
		}
		sigs <- syscall.SIGTERM // handled: drains rather than kills
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !d.Draining() {
			t.Error("a signal right after Serving() did not start the drain")
		}
	})
}
