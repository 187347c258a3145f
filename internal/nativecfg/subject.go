// Package nativecfg judges the deploy timing of the files teams already have —
// Kubernetes manifests, ECS task definitions and services, compose files with
// Traefik labels, Kamal's deploy.yml, fly.toml, Nomad jobs — with the timing
// model of package timing, and answers in those files' own keys.
//
// A reader (one sub-package per platform) translates each deployable unit into
// a Subject: a fleet.Config carrying the platform's semantics, and a Binding
// for every number that says which file, line and key it came from, how that
// key writes values, and whether it was assumed from the platform's documented
// default. Judge evaluates a Subject and turns each failing relation into a
// Finding that names the key, its current value and the smallest change that
// fixes it.
package nativecfg

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/timing"
)

// Platform names, as printed and as in --format json.
const (
	Kubernetes = "kubernetes"
	ECS        = "ecs"
	Compose    = "compose"
	Kamal      = "kamal"
	Fly        = "fly"
	Nomad      = "nomad"
	Mythex     = "mythex"
)

// Loc is where a key lives in a native file.
type Loc struct {
	// File is the path as given on the command line ("-" for stdin).
	File string `json:"file"`
	// Line is the 1-based line of the key, 0 when unknown (the key is
	// absent, or the format keeps no positions).
	Line int `json:"line,omitempty"`
	// Path is the key path in the platform's own terms, e.g.
	// spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds.
	Path string `json:"path"`
	// src finds Line lazily; nil when the reader sets Line itself.
	src *Source
}

// resolved returns l with Line filled in from its source.
func (l Loc) resolved() Loc {
	if l.Line == 0 && l.src != nil {
		l.Line = l.src.Line(l.Path)
	}
	l.src = nil
	return l
}

// String writes "file:line path" (without the line when unknown).
func (l Loc) String() string {
	s := l.File
	if l.Line > 0 {
		s += ":" + strconv.Itoa(l.Line)
	}
	return s + " " + l.Path
}

// Unit is how a native key writes its value.
type Unit int

const (
	// Seconds is a whole number of seconds (terminationGracePeriodSeconds,
	// stopTimeout, Kamal's drain_timeout).
	Seconds Unit = iota
	// Millis is a whole number of milliseconds.
	Millis
	// GoDuration is a duration string in whole seconds, "30s" (compose,
	// fly.toml, Nomad).
	GoDuration
	// Count is a plain number (thresholds, retries).
	Count
)

// Binding ties one number of the timing model to the native key it came from.
type Binding struct {
	// Field is the dotted fleet.Config path of the number, e.g. drain.pre_stop.
	Field string
	// Loc is the native key. When the key is absent, Loc names where it
	// belongs and Assumed is set.
	Loc Loc
	// Unit is how the key writes values.
	Unit Unit
	// Offset is what the model adds to the native value: model = native +
	// Offset (Nomad's kill_timeout starts after shutdown_delay, so the model's
	// stop grace period is kill_timeout + shutdown_delay).
	Offset time.Duration
	// Assumed says the key is absent and the model uses the platform's
	// documented default; Default says what that is, in words.
	Assumed bool
	// Default describes the assumed value ("Kubernetes' default 30").
	Default string
	// Derived says the number is not one key to change (a sum, a value of
	// another system): findings never propose changing it.
	Derived bool
}

// Subject is one deployable unit translated into the timing model.
type Subject struct {
	// Platform is one of the platform names above.
	Platform string
	// Name identifies the unit in its platform's terms ("Deployment web",
	// "service web", "job api group web task app").
	Name string
	// File is the file the unit comes from (the first, when several files
	// make it up).
	File string
	// Config holds the model's numbers; it must pass fleet validation.
	Config fleet.Config
	// Bindings map model numbers to native keys, in the order a fix should
	// prefer them.
	Bindings []Binding
	// Notes are facts about the translation worth printing ("the ALB
	// reaches the pod by ip targets").
	Notes []string
	// Unjudged names invariants the files cannot decide, with why; they are
	// left out of the verdict.
	Unjudged map[string]string
	// Extra are relations outside fleet.Config, judged already (call-timeout).
	Extra []timing.Result
	// ExtraFix gives, by relation name, the change of native keys that makes
	// an Extra relation hold (timing's break search does not cover them).
	ExtraFix map[string][]Change
	// IdleTimeoutKnown says the load balancer's idle timeout comes from the
	// files or its vendor's documented default (an ALB's 60 s): a declared
	// longest request is judged against it even when the app's keep-alive
	// is unknown.
	IdleTimeoutKnown bool
	// StopTimeoutName, when set, names the platform's stop timeout (the
	// model's stop grace period) that an API call of mythex publish waits on
	// (fly.toml's kill_timeout): the call-timeout relation applies.
	StopTimeoutName string
}

// Bind records that the model's field came from loc, written in unit.
func (s *Subject) Bind(field string, loc Loc, unit Unit) *Binding {
	s.Bindings = append(s.Bindings, Binding{Field: field, Loc: loc, Unit: unit})
	return &s.Bindings[len(s.Bindings)-1]
}

// Assume records that the model's field uses the platform default def
// because the key at loc is absent.
func (s *Subject) Assume(field string, loc Loc, unit Unit, def string) *Binding {
	s.Bindings = append(s.Bindings, Binding{Field: field, Loc: loc, Unit: unit, Assumed: true, Default: def})
	return &s.Bindings[len(s.Bindings)-1]
}

// Unjudge leaves the invariant out of the verdict, saying why.
func (s *Subject) Unjudge(invariant, why string) {
	if s.Unjudged == nil {
		s.Unjudged = map[string]string{}
	}
	s.Unjudged[invariant] = why
}

// binding returns the binding of a model field, or nil.
func (s *Subject) binding(field string) *Binding {
	for i := range s.Bindings {
		if s.Bindings[i].Field == field {
			return &s.Bindings[i]
		}
	}
	return nil
}

// Assumptions lists, in words, every number taken from a platform default.
func (s *Subject) Assumptions() []string {
	var out []string
	for _, b := range s.Bindings {
		if b.Assumed {
			out = append(out, fmt.Sprintf("%s not set: %s assumed", b.Loc.Path, b.Default))
		}
	}
	return out
}

// Secs is n whole seconds, a helper for readers.
func Secs(n int64) time.Duration { return time.Duration(n) * time.Second }

// AddCallTimeout judges mythex publish's --call-timeout against the
// platform's stop timeout (StopTimeoutName, the model's stop grace period):
// when it fails, the file's fix is a stop timeout under the call timeout
// (or raise --call-timeout, which the note says).
func (s *Subject) AddCallTimeout(call time.Duration) {
	stop := s.Config.Backend.StopGracePeriod
	r := timing.CallTimeout("mythex publish --call-timeout", call, s.StopTimeoutName, stop)
	if r.Level == timing.Fail {
		r.Notes[0] += "; raise --call-timeout above it, or"
	}
	s.Extra = append(s.Extra, r)
	b := s.binding("backend.stop_grace_period")
	if r.Level != timing.Fail || b == nil || b.Derived || call <= time.Second {
		return
	}
	to := (call - time.Second - b.Offset).Truncate(time.Second)
	if to <= 0 {
		return
	}
	if s.ExtraFix == nil {
		s.ExtraFix = map[string][]Change{}
	}
	s.ExtraFix[timing.CallTimeoutName] = []Change{{Loc: b.Loc, To: b.Unit.format(int64(to / b.Unit.stepDur())), From: s.current(b)}}
}

// stepDur is one native unit of a duration key.
func (u Unit) stepDur() time.Duration { return time.Duration(u.step(true)) }
