package sampleapp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener is an in-memory net.Listener (net.Pipe connections), durably
// blocking inside a synctest bubble; after Close, Dial is refused.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8081} }

func (l *pipeListener) Dial(ctx context.Context) (net.Conn, error) {
	refused := &net.OpError{Op: "dial", Net: "pipe", Err: syscall.ECONNREFUSED}
	select {
	case <-l.closed:
		return nil, refused
	default:
	}
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
	case <-ctx.Done():
	}
	server.Close()
	client.Close()
	return nil, refused
}

// inProcess runs serve in a synctest bubble on a pipeListener.
type inProcess struct {
	t        *testing.T
	ln       *pipeListener
	listenAt time.Duration // when serve listened; -1 if it never did
	t0       time.Time
	code     chan int
	exited   bool // code was received
	exitCode int
	exitAt   time.Duration
	cancel   context.CancelFunc
	client   *http.Client
	logs     *strings.Builder
	mu       sync.Mutex
}

// startServe starts serve(c) in the current bubble; signals are off (ctx
// stands in for SIGTERM).
func startServe(t *testing.T, c config) *inProcess {
	t.Helper()
	p := &inProcess{t: t, ln: newPipeListener(), listenAt: -1, t0: time.Now(), code: make(chan int, 1), logs: &strings.Builder{}}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return p.ln.Dial(ctx) }}
	p.client = &http.Client{Transport: tr}
	listen := func(network, addr string) (net.Listener, error) {
		p.mu.Lock()
		p.listenAt = time.Since(p.t0)
		p.mu.Unlock()
		return p.ln, nil
	}
	log := slog.New(slog.NewTextHandler(lockedWriter{&p.mu, p.logs}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { p.code <- serve(ctx, c, deps{listen: listen, log: log}) }()
	t.Cleanup(func() {
		cancel()
		p.exit() // the bubble may not end with serve still running
		tr.CloseIdleConnections()
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *inProcess) listenedAt() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listenAt
}

func (p *inProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// exit waits for serve to return and gives its code and when it returned.
func (p *inProcess) exit() (int, time.Duration) {
	if !p.exited {
		p.exitCode = <-p.code
		p.exitAt = time.Since(p.t0)
		p.exited = true
	}
	return p.exitCode, p.exitAt
}

func (p *inProcess) get(path string) (int, string, bool, error) {
	resp, err := p.client.Get("http://app" + path)
	if err != nil {
		return 0, "", false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Close, err
}

// baseConfig is a serving config with the drain timings of the write-up.
func baseConfig() config {
	return config{Listen: "127.0.0.1:8081", Service: "api", Version: "v2", HostName: "web-1", HealthPath: "/healthz",
		DrainServePeriod: 15 * time.Second, ShutdownTimeout: 10 * time.Second, IdleTimeout: 75 * time.Second, CrashExitCode: 1}
}

func TestServe_CrashOnStart_NeverListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := baseConfig()
		c.CrashOnStart = 2 * time.Second
		c.StartDelay = time.Second // the boot crash wins
		p := startServe(t, c)
		code, at := p.exit()
		if code != 1 || at != 2*time.Second {
			t.Errorf("exit %d at %s, want 1 at 2s", code, at)
		}
		if l := p.listenedAt(); l >= 0 {
			t.Errorf("listened at %s; a boot crash never listens", l)
		}
		if !strings.Contains(p.log(), "crash on start") {
			t.Errorf("no crash in the log:\n%s", p.log())
		}
	})
}

func TestServe_CrashOnStart_StoppedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := baseConfig()
		c.CrashOnStart = 2 * time.Second
		p := startServe(t, c)
		time.Sleep(time.Second)
		p.cancel()
		if code, at := p.exit(); code != 0 || at != time.Second {
			t.Errorf("exit %d at %s, want 0 at 1s (stopped before the crash)", code, at)
		}
	})
}

func TestServe_StartDelay_ListensLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := baseConfig()
		c.StartDelay = 3 * time.Second
		p := startServe(t, c)
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		if l := p.listenedAt(); l >= 0 {
			t.Fatalf("listened at %s, before the 3s start delay", l)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if l := p.listenedAt(); l != 3*time.Second {
			t.Fatalf("listened at %s, want 3s", l)
		}
		if code, body, _, err := p.get("/"); err != nil || code != 200 || body != "service=api version=v2 host=web-1\n" {
			t.Errorf("GET / = %d %q %v", code, body, err)
		}
	})
}

func TestServe_CrashAfter(t *testing.T) {
	tests := []struct {
		name       string
		crashAfter time.Duration
		startDelay time.Duration
		exitCode   int
		wantServed bool
	}{
		{"crashes with its code after serving", 5 * time.Second, 0, 3, true},
		{"exit-0 crash", 5 * time.Second, 0, 0, true},
		{"crash during the start delay", 2 * time.Second, 4 * time.Second, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := baseConfig()
				c.CrashAfter, c.StartDelay, c.CrashExitCode = tt.crashAfter, tt.startDelay, tt.exitCode
				p := startServe(t, c)
				if tt.wantServed {
					time.Sleep(time.Second)
					if code, _, _, err := p.get("/"); err != nil || code != 200 {
						t.Fatalf("GET / before the crash = %d, %v", code, err)
					}
				}
				code, at := p.exit()
				if code != tt.exitCode || at != tt.crashAfter {
					t.Errorf("exit %d at %s, want %d at %s", code, at, tt.exitCode, tt.crashAfter)
				}
				if !strings.Contains(p.log(), "crash (--crash-after)") {
					t.Errorf("no crash in the log:\n%s", p.log())
				}
				if served := p.listenedAt() >= 0; served != tt.wantServed {
					t.Errorf("listened = %v, want %v", served, tt.wantServed)
				}
				if !tt.wantServed {
					return
				}
				if _, err := p.ln.Dial(context.Background()); !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("dial after the crash: %v, want refused", err)
				}
			})
		})
	}
}

func TestServe_Unhealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := baseConfig()
		c.Unhealthy = true
		p := startServe(t, c)
		synctest.Wait()
		if code, body, _, err := p.get("/healthz"); err != nil || code != 503 || !strings.Contains(body, "--unhealthy") {
			t.Errorf("health = %d %q %v, want 503 naming --unhealthy", code, body, err)
		}
		if code, _, _, err := p.get("/"); err != nil || code != 200 {
			t.Errorf("GET / = %d %v, want 200", code, err)
		}
	})
}

func TestServe_Drain(t *testing.T) {
	tests := []struct {
		name        string
		servePeriod time.Duration
		wantExitAt  time.Duration // after the drain starts at 1s
	}{
		{"serves for the serve period", 15 * time.Second, 15 * time.Second},
		{"0 means no serve period", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := baseConfig()
				c.DrainServePeriod = tt.servePeriod
				p := startServe(t, c)
				time.Sleep(time.Second)
				if code, body, _, err := p.get("/healthz"); err != nil || code != 200 || body != "ok" {
					t.Fatalf("health before the drain = %d %q %v", code, body, err)
				}
				p.cancel() // as SIGTERM would
				synctest.Wait()
				if tt.servePeriod > 0 {
					if code, body, closes, err := p.get("/healthz"); err != nil || code != 503 || body != "draining" || !closes {
						t.Errorf("health while draining = %d %q close=%v %v, want 503 draining, close", code, body, closes, err)
					}
					if code, _, closes, err := p.get("/"); err != nil || code != 200 || !closes {
						t.Errorf("GET / while draining = %d close=%v %v, want 200, close", code, closes, err)
					}
				}
				code, at := p.exit()
				if code != 0 || at < time.Second+tt.wantExitAt || at > time.Second+tt.wantExitAt+time.Second {
					t.Errorf("exit %d at %s, want 0 at %s", code, at, time.Second+tt.wantExitAt)
				}
			})
		})
	}
}

func TestServe_ListenFails(t *testing.T) {
	var log strings.Builder
	c := baseConfig()
	listen := func(string, string) (net.Listener, error) { return nil, syscall.EADDRINUSE }
	code := serve(context.Background(), c, deps{listen: listen, log: slog.New(slog.NewTextHandler(&log, nil))})
	if code != exitFailure || !strings.Contains(log.String(), "cannot listen") {
		t.Errorf("serve = %d, log %q; want 1 and the reason", code, log.String())
	}
}
