package drain

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/testkit"
)

// pipeListener is an in-memory net.Listener: Dial hands the server end of a
// net.Pipe to Accept. Unlike a real socket, blocking on it is "durable" inside
// a testing/synctest bubble, so fake time advances while the server waits.
// After Close, Dial fails with ECONNREFUSED, as a closed port does.
type pipeListener struct {
	conns    chan net.Conn
	closed   chan struct{}
	once     sync.Once
	accepted atomic.Int64
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		l.accepted.Add(1)
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// Dial connects to the listener; it blocks until Accept takes the connection.
func (l *pipeListener) Dial(ctx context.Context) (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: syscall.ECONNREFUSED}
	default:
	}
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		server.Close()
		client.Close()
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: syscall.ECONNREFUSED}
	case <-ctx.Done():
		server.Close()
		client.Close()
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// harness is a drain.Server serving on a pipeListener, with a client dialing
// it. Make it inside a synctest bubble with startHarness.
type harness struct {
	t      *testing.T
	ln     *pipeListener
	srv    *http.Server
	d      *Server
	tr     *http.Transport
	client *http.Client
	logs   *testkit.SyncBuffer
	errc   chan error
	err    error // Serve's result, once errc delivered it
	t0     time.Time
}

// startHarness wraps an http.Server serving h with New(cfg) and starts Serve.
// Unless cfg sets Signals, signal handling is off. The cleanup stops the server
// (cutting anything left) and waits for Serve to return.
func startHarness(t *testing.T, cfg Config, h http.Handler) *harness {
	t.Helper()
	return startHarnessWith(t, cfg, h, nil)
}

// startHarnessWith is startHarness with a fake signal source when sigs is not
// nil.
func startHarnessWith(t *testing.T, cfg Config, h http.Handler, sigs chan os.Signal) *harness {
	t.Helper()
	hs := &harness{t: t, ln: newPipeListener(), logs: &testkit.SyncBuffer{}, errc: make(chan error, 1), t0: time.Now()}
	if h == nil {
		h = okHandler()
	}
	hs.srv = &http.Server{Handler: h}
	cfg.Logger = slog.New(slog.NewTextHandler(hs.logs, nil))
	if sigs == nil && len(cfg.Signals) == 0 {
		cfg.NoSignals = true
	}
	d, err := New(hs.srv, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if sigs != nil {
		d.subscribe = func([]os.Signal) (<-chan os.Signal, func()) { return sigs, func() {} }
	}
	hs.d = d
	hs.tr = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return hs.ln.Dial(ctx) }}
	hs.client = &http.Client{Transport: hs.tr}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { hs.errc <- d.Serve(ctx, hs.ln) }()
	t.Cleanup(func() {
		cancel()
		d.skipServePeriod()
		d.stop()
		hs.wait()
		hs.tr.CloseIdleConnections()
	})
	return hs
}

// wait returns Serve's result, waiting for it.
func (hs *harness) wait() error {
	if hs.errc != nil {
		hs.err = <-hs.errc
		hs.errc = nil
	}
	return hs.err
}

// since is the fake time elapsed since the harness started.
func (hs *harness) since() time.Duration { return time.Since(hs.t0) }

// sleepUntil advances fake time to t0+at.
func (hs *harness) sleepUntil(at time.Duration) {
	hs.t.Helper()
	d := at - hs.since()
	if d < 0 {
		hs.t.Fatalf("sleepUntil(%s): already at %s", at, hs.since())
	}
	time.Sleep(d)
}

// response is what a test looks at in an answer.
type response struct {
	status int
	body   string
	close  bool // resp.Close: the answer carried "Connection: close"
}

// get sends GET path and reads the whole answer; err is the transport error.
func (hs *harness) get(path string) (response, error) {
	hs.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://app"+path, nil)
	if err != nil {
		hs.t.Fatal(err)
	}
	resp, err := hs.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return response{}, err
	}
	return response{status: resp.StatusCode, body: b.String(), close: resp.Close}, nil
}

// mustGet is get that fails the test on a transport error.
func (hs *harness) mustGet(path string) response {
	hs.t.Helper()
	r, err := hs.get(path)
	if err != nil {
		hs.t.Fatalf("GET %s at %s: %v", path, hs.since(), err)
	}
	return r
}

// isDone reports whether Serve has returned, without waiting.
func (hs *harness) isDone() bool {
	select {
	case <-hs.d.Done():
		return true
	default:
		return false
	}
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("hello"))
	})
}
