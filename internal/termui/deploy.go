// Package termui renders what mythex's commands report, for people and for
// machines: a deploy's progress (in-place lines on a terminal, one plain line
// per event in CI logs, or one JSON object per event), and the results of
// check, measure, publish, status, history, lease, maintenance and the LB
// commands, as text or as their --json shapes. It decides nothing: every
// function takes a decided value and writes it. The one terminal check
// (IsTerminal, Color) is in term.go.
package termui

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/deploy"
)

// Mode selects how progress is written.
type Mode int

// Modes.
const (
	// Plain writes one line per phase end or failure: for CI logs and pipes.
	Plain Mode = iota
	// TTY keeps one line per host and rewrites them in place.
	TTY
	// JSON writes one JSON object per event (the --json event stream).
	JSON
)

// DeployRenderer is a deploy.Observer that writes progress to w.
type DeployRenderer struct {
	mode  Mode
	w     io.Writer
	start time.Time

	mu    sync.Mutex
	order []string
	lines map[string]*hostLine
	drawn int
	stop  chan struct{}
	done  chan struct{}
}

type hostLine struct {
	phase   deploy.Phase
	since   time.Time
	status  string // running, ok, failed
	done    []string
	detail  string
	elapsed time.Duration
}

// NewDeployRenderer returns a renderer for mode writing to w, counting
// seconds from now. In TTY mode it redraws every 100ms until Close.
func NewDeployRenderer(w io.Writer, mode Mode) *DeployRenderer {
	return NewDeployRendererAt(w, mode, time.Now())
}

// NewDeployRendererAt is NewDeployRenderer counting seconds from start: under
// `mythex measure -- mythex deploy`, the prober's second 0, so the deploy's
// lines and the prober's per-second timeline share one clock.
func NewDeployRendererAt(w io.Writer, mode Mode, start time.Time) *DeployRenderer {
	r := &DeployRenderer{mode: mode, w: w, start: start, lines: map[string]*hostLine{}}
	if mode == TTY {
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.loop()
	}
	return r
}

func (r *DeployRenderer) loop() {
	defer close(r.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			r.redraw()
			r.mu.Unlock()
		}
	}
}

// Close stops redrawing and leaves the final lines on screen.
func (r *DeployRenderer) Close() {
	if r.mode != TTY {
		return
	}
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redraw()
}

// Event renders one deploy event.
func (r *DeployRenderer) Event(e deploy.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.mode {
	case JSON:
		b, _ := json.Marshal(e)
		fmt.Fprintf(r.w, "%s\n", b)
	case Plain:
		r.plain(e)
	case TTY:
		r.track(e)
		if e.Kind == deploy.EventNote || e.Kind == deploy.EventFail {
			// Notes and failures also stay on screen above the host lines.
			r.clear()
			r.plain(e)
		}
		r.redraw()
	}
}

func (r *DeployRenderer) plain(e deploy.Event) {
	host := e.Host
	if host == "" {
		host = "fleet"
	}
	at := e.At.Sub(r.start).Seconds()
	switch e.Kind {
	case deploy.EventBegin:
		if e.Phase == deploy.PhaseLease || e.Phase == deploy.PhaseRollback || e.Phase == deploy.PhaseSweep {
			fmt.Fprintf(r.w, "%7.2fs  %-8s %-9s started\n", at, host, e.Phase)
		}
	case deploy.EventEnd:
		fmt.Fprintf(r.w, "%7.2fs  %-8s %-9s ok    %6.2fs  %s\n", at, host, e.Phase, e.Elapsed, e.Detail)
	case deploy.EventFail:
		fmt.Fprintf(r.w, "%7.2fs  %-8s %-9s FAIL  %6.2fs  %s\n", at, host, e.Phase, e.Elapsed, e.Detail)
	case deploy.EventNote:
		fmt.Fprintf(r.w, "%7.2fs  %-8s %-9s note          %s\n", at, host, e.Phase, e.Detail)
	case deploy.EventProgress:
		fmt.Fprintf(r.w, "%7.2fs  %-8s %-9s …     %6.2fs  %s\n", at, host, e.Phase, e.Elapsed, e.Detail)
	}
}

func (r *DeployRenderer) track(e deploy.Event) {
	host := e.Host
	if host == "" {
		host = "fleet"
	}
	l, ok := r.lines[host]
	if !ok {
		l = &hostLine{}
		r.lines[host] = l
		r.order = append(r.order, host)
	}
	switch e.Kind {
	case deploy.EventBegin:
		l.phase, l.since, l.status = e.Phase, e.At, "running"
	case deploy.EventEnd:
		l.done = append(l.done, fmt.Sprintf("%s %.1fs", e.Phase, e.Elapsed))
		l.detail, l.status = "", "ok"
		l.elapsed += time.Duration(e.Elapsed * float64(time.Second))
	case deploy.EventFail:
		l.status, l.detail = "failed", e.Detail
	case deploy.EventProgress:
		// What the running phase waits for, until the phase ends.
		l.detail = e.Detail
	}
}

// clear erases the host lines drawn last.
func (r *DeployRenderer) clear() {
	for range r.drawn {
		fmt.Fprint(r.w, "\x1b[1A\x1b[2K")
	}
	r.drawn = 0
}

func (r *DeployRenderer) redraw() {
	r.clear()
	for _, host := range r.order {
		l := r.lines[host]
		mark := "…"
		switch l.status {
		case "ok":
			mark = "✓"
		case "failed":
			mark = "✗"
		}
		cur := ""
		if l.status == "running" {
			cur = fmt.Sprintf("%s %.1fs", l.phase, time.Since(l.since).Seconds())
		}
		parts := append([]string(nil), l.done...)
		if cur != "" {
			parts = append(parts, cur)
		}
		line := fmt.Sprintf("%s %-8s %s", mark, host, strings.Join(parts, " · "))
		if l.detail != "" {
			line += "  " + l.detail
		}
		fmt.Fprintln(r.w, line)
		r.drawn++
	}
}
