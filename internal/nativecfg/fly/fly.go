// Package fly reads fly.toml with a TOML library and translates the app's
// stop into the timing model: Fly's proxy stops routing to a machine being
// stopped, the machine gets kill_signal, and kill_timeout later SIGKILL.
package fly

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

// Fly's documented defaults and the lag this reader assumes.
const (
	defaultKillTimeout = 5 * time.Second
	defaultKillSignal  = "SIGINT"
	// proxyLag is how long Fly's proxy may still route to a machine being
	// stopped, at worst: its state reaches the edge proxies within about
	// 1–2 s (assumed, not documented).
	proxyLag = 2 * time.Second
)

// flyFile is the part of fly.toml this reader uses.
type flyFile struct {
	App         string    `toml:"app"`
	KillTimeout *duration `toml:"kill_timeout"`
	KillSignal  string    `toml:"kill_signal"`
	HTTPService *struct {
		InternalPort int     `toml:"internal_port"`
		Checks       []check `toml:"checks"`
	} `toml:"http_service"`
	Checks map[string]check  `toml:"checks"`
	Env    map[string]string `toml:"env"`
}

type check struct {
	Interval    *duration `toml:"interval"`
	Timeout     *duration `toml:"timeout"`
	GracePeriod *duration `toml:"grace_period"`
	Path        string    `toml:"path"`
}

// duration reads fly.toml's durations: a string ("30s") or a whole number of
// seconds.
type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like 30s", b)
	}
	d.Duration = v
	return nil
}

// Read translates one fly.toml.
func Read(file string, data []byte) ([]*nativecfg.Subject, error) {
	var f flyFile
	// kill_timeout may be a bare integer of seconds.
	norm := bareSeconds(data)
	if err := toml.Unmarshal(norm, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	name := "app " + f.App
	if f.App == "" {
		name = "app"
	}
	s := nativecfg.NewSubject(nativecfg.Fly, name, file)
	c := &s.Config
	c.LoadBalancer.Kind, c.LoadBalancer.TargetType = fleet.KindOther, fleet.TargetTypeIP
	c.LoadBalancer.PropagationMargin = proxyLag
	line := lineFinder(data)
	if f.KillTimeout != nil {
		c.Backend.StopGracePeriod = f.KillTimeout.Duration
		s.Bind("backend.stop_grace_period", nativecfg.Loc{File: file, Line: line("", "kill_timeout"), Path: "kill_timeout"}, nativecfg.GoDuration)
	} else {
		c.Backend.StopGracePeriod = defaultKillTimeout
		s.Assume("backend.stop_grace_period", nativecfg.Loc{File: file, Path: "kill_timeout"}, nativecfg.GoDuration, "Fly's default 5s")
	}
	s.StopTimeoutName = "kill_timeout"
	sig := f.KillSignal
	if sig == "" {
		sig = defaultKillSignal
		s.Notes = append(s.Notes, "kill_signal not set: Fly sends SIGINT; an app that drains only on SIGTERM exits at once")
	}
	s.Notes = append(s.Notes, fmt.Sprintf("Fly's proxy may route to a stopping machine for about %s (assumed, not documented); the app gets %s", proxyLag, sig))
	hc := &c.LoadBalancer.HealthCheck
	hc.Interval, hc.Timeout, hc.HealthyThreshold, hc.UnhealthyThreshold = 15*time.Second, 2*time.Second, 1, 1
	var ck *check
	section := ""
	if f.HTTPService != nil && len(f.HTTPService.Checks) > 0 {
		ck, section = &f.HTTPService.Checks[0], "[[http_service.checks]]"
	} else {
		for n, v := range f.Checks {
			v := v
			ck, section = &v, "[checks."+n+"]"
			break
		}
	}
	if ck != nil {
		if ck.Interval != nil {
			hc.Interval = ck.Interval.Duration
			s.Bind("load_balancer.health_check.interval", nativecfg.Loc{File: file, Line: line(section, "interval"), Path: section + " interval"}, nativecfg.GoDuration)
		}
		if ck.Timeout != nil {
			hc.Timeout = ck.Timeout.Duration
			s.Bind("load_balancer.health_check.timeout", nativecfg.Loc{File: file, Line: line(section, "timeout"), Path: section + " timeout"}, nativecfg.GoDuration)
		}
	}
	if err := s.ApplyFacts(func(key string) (string, nativecfg.Loc, bool) {
		k := strings.ToUpper(strings.NewReplacer(nativecfg.FactPrefix, "MYTHEX_", "-", "_").Replace(key))
		v, ok := f.Env[k]
		return v, nativecfg.Loc{File: file, Line: line("[env]", k), Path: "[env] " + k}, ok
	}); err != nil {
		return nil, err
	}
	s.Unjudge("check-timeout", "Fly's checks have no vendor range beyond timeout < interval, which Fly enforces")
	// Fly documents no lag for its proxy to stop routing to a stopping
	// machine, and the proxy retries a refused connection on another
	// machine: a window is uncertain, not expected — marginal, not a fail.
	s.Unjudge("overlap", "judged as Fly's proxy lag below")
	s.Extra = append(s.Extra, proxyOverlap(c.Drain.ServePeriod))
	return []*nativecfg.Subject{s}, s.Validate()
}

// bareSeconds rewrites `kill_timeout = 30` to `kill_timeout = "30s"` so one
// type reads both forms fly.toml allows.
func bareSeconds(data []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		k, v, ok := strings.Cut(l, "=")
		if ok && strings.TrimSpace(k) == "kill_timeout" {
			v = strings.TrimSpace(v)
			if v != "" && v[0] >= '0' && v[0] <= '9' {
				l = k + `= "` + v + `s"`
			}
		}
		out.WriteString(l + "\n")
	}
	return out.Bytes()
}

// lineFinder returns the line of key inside section ("" for the top level,
// "[env]", "[[http_service.checks]]"), 0 when absent.
func lineFinder(data []byte) func(section, key string) int {
	lines := strings.Split(string(data), "\n")
	return func(section, key string) int {
		cur := ""
		for i, l := range lines {
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, "[") {
				cur = t
				if strings.HasPrefix(section, "[checks.") && strings.HasPrefix(t, section[:len(section)-1]) {
					cur = section
				}
				continue
			}
			k, _, ok := strings.Cut(t, "=")
			if ok && strings.TrimSpace(k) == key && cur == section {
				return i + 1
			}
		}
		return 0
	}
}

// proxyOverlap judges the app's serving after the kill signal against Fly's
// proxy lag: marginal when shorter, since the proxy retries refused
// connections elsewhere and the lag is not documented.
func proxyOverlap(serve time.Duration) timing.Result {
	r := timing.Result{Name: "overlap", Slack: serve - proxyLag, HasSlack: true,
		Formula: fmt.Sprintf("serve after the kill signal %s > Fly proxy lag ~%s", serve, proxyLag)}
	if serve <= proxyLag {
		r.Level = timing.Marginal
		r.Notes = []string{"Fly's proxy may still route to the machine for a moment after the kill signal (it retries refused connections elsewhere); an app that keeps serving a few seconds after the signal (declare MYTHEX_SERVE_PERIOD) closes the gap"}
	}
	return r
}
