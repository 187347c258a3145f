package testbin

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// AppProc is the sample app (App) running as a real process in a test, its
// stderr (the app's log) kept for the test to read.
type AppProc struct {
	// Cmd is the running command: signal it through Cmd.Process; once
	// Exited is closed, Cmd.ProcessState says how it ended.
	Cmd *exec.Cmd
	// Started is when the process was started (just before).
	Started time.Time

	exited chan struct{}
	addr   chan string
	mu     sync.Mutex
	log    strings.Builder
}

// listeningRE matches the line the app logs once it listens (see
// examples/app/README.md) and captures the address.
var listeningRE = regexp.MustCompile(`msg="app: listening".* addr=(\S+)`)

// StartApp builds the sample app (Build(App)) and starts it with args and
// env (KEY=VALUE, added to the test's environment); it does not wait for
// it to listen (Listening does). The test's cleanup kills it if it still
// runs and, if the test failed, logs what it wrote to stderr. A failure to
// build or start fails t.
func StartApp(t testing.TB, env []string, args ...string) *AppProc {
	t.Helper()
	bin, err := Build(App)
	if err != nil {
		t.Fatal(err)
	}
	p := &AppProc{Cmd: exec.Command(bin, args...), exited: make(chan struct{}), addr: make(chan string, 1)}
	p.Cmd.Env = append(os.Environ(), env...)
	stderr, err := p.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.Started = time.Now()
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case p.addr <- m[1]:
				default: // a second listening line: the first is the answer
				}
			}
		}
		_ = p.Cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("app %v log:\n%s", args, p.Logs())
		}
	})
	return p
}

// Exited is closed once the process has exited (Cmd.ProcessState is set
// by then).
func (p *AppProc) Exited() <-chan struct{} { return p.exited }

// Logs returns what the app has written to stderr so far.
func (p *AppProc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Listening waits (up to 30 s) for the app to log that it listens and
// returns the address it logged. It fails t when the app exits first or
// the 30 s run out. Call it once: the address is handed over once.
func (p *AppProc) Listening(t testing.TB) string {
	t.Helper()
	select {
	case a := <-p.addr:
		return a
	case <-p.exited:
		t.Fatalf("app exited (%v) before listening", p.Cmd.ProcessState)
	case <-time.After(30 * time.Second):
		t.Fatal("app did not listen within 30s")
	}
	return ""
}
