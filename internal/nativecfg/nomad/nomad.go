// Package nomad reads Nomad job files with hashicorp/hcl/v2 and translates
// each task into the timing model: when an allocation stops, Nomad
// deregisters its services at once, waits shutdown_delay, sends kill_signal,
// and kill_timeout after that sends SIGKILL — kill_timeout starts after
// shutdown_delay.
package nomad

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

// Nomad's documented defaults and the discovery lag assumed.
const (
	defaultKillTimeout = 5 * time.Second
	// discoveryLag is a proxy following Consul or Nomad service discovery
	// (Traefik, Fabio, Consul's DNS) seeing a deregistration: about 2 s.
	discoveryLag = 2 * time.Second
)

// Read translates one job file: a Subject per task of each group.
func Read(file string, data []byte) ([]*nativecfg.Subject, error) {
	f, diags := hclsyntax.ParseConfig(data, file, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %s", file, diags.Error())
	}
	body := f.Body.(*hclsyntax.Body)
	var out []*nativecfg.Subject
	for _, job := range blocks(body, "job") {
		jobName := label(job)
		for _, g := range blocks(job.Body, "group") {
			gName := label(g)
			for _, t := range blocks(g.Body, "task") {
				s, err := task(file, jobName, g, t)
				if err != nil {
					return nil, err
				}
				s.Name = fmt.Sprintf("job %s group %s task %s", jobName, gName, label(t))
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no job { group { task } } found", file)
	}
	return out, nil
}

func task(file, job string, g, t *hclsyntax.Block) (*nativecfg.Subject, error) {
	s := nativecfg.NewSubject(nativecfg.Nomad, "", file)
	c := &s.Config
	c.LoadBalancer.Kind, c.LoadBalancer.TargetType = fleet.KindOther, fleet.TargetTypeIP
	c.LoadBalancer.PropagationMargin = discoveryLag
	s.Notes = append(s.Notes, fmt.Sprintf("Nomad deregisters the task's services when it stops; a proxy following service discovery sees it about %s later (assumed)", discoveryLag))
	gPath := fmt.Sprintf("job.%s.group.%s", job, label(g))
	tPath := gPath + ".task." + label(t)

	// shutdown_delay: on the task, else the group's.
	sd, sdAttr, sdPath := time.Duration(0), t.Body.Attributes["shutdown_delay"], tPath+".shutdown_delay"
	if sdAttr == nil {
		sdAttr, sdPath = g.Body.Attributes["shutdown_delay"], gPath+".shutdown_delay"
	}
	if sdAttr != nil {
		d, err := durationAttr(file, sdAttr)
		if err != nil {
			return nil, err
		}
		sd = d
	}
	kt := defaultKillTimeout
	ktAttr := t.Body.Attributes["kill_timeout"]
	if ktAttr != nil {
		d, err := durationAttr(file, ktAttr)
		if err != nil {
			return nil, err
		}
		kt = d
	}
	c.Drain.PreStop = sd
	c.Backend.StopGracePeriod = sd + kt
	if sdAttr != nil {
		s.Bind("drain.pre_stop", loc(file, sdPath, sdAttr), nativecfg.GoDuration)
	} else {
		s.Assume("drain.pre_stop", nativecfg.Loc{File: file, Line: t.TypeRange.Start.Line, Path: sdPath}, nativecfg.GoDuration, "Nomad's default 0s")
	}
	var b *nativecfg.Binding
	if ktAttr != nil {
		b = s.Bind("backend.stop_grace_period", loc(file, tPath+".kill_timeout", ktAttr), nativecfg.GoDuration)
	} else {
		b = s.Assume("backend.stop_grace_period", nativecfg.Loc{File: file, Line: t.TypeRange.Start.Line, Path: tPath + ".kill_timeout"}, nativecfg.GoDuration, "Nomad's default 5s")
	}
	b.Offset = sd // kill_timeout starts after shutdown_delay

	hc := &c.LoadBalancer.HealthCheck
	hc.Interval, hc.Timeout, hc.UnhealthyThreshold, hc.HealthyThreshold = 10*time.Second, 2*time.Second, 1, 1
	for _, body := range []*hclsyntax.Body{t.Body, g.Body} {
		for _, svc := range blocks(body, "service") {
			for _, ck := range blocks(svc.Body, "check") {
				for key, field := range map[string]string{"interval": "load_balancer.health_check.interval", "timeout": "load_balancer.health_check.timeout"} {
					a := ck.Body.Attributes[key]
					if a == nil {
						continue
					}
					d, err := durationAttr(file, a)
					if err != nil {
						return nil, err
					}
					if key == "interval" {
						hc.Interval = d
					} else {
						hc.Timeout = d
					}
					s.Bind(field, loc(file, tPath+".service.check."+key, a), nativecfg.GoDuration)
				}
			}
		}
	}
	s.Unjudge("check-timeout", "Consul and Nomad checks have no vendor range to hold them to")
	if err := s.ApplyFacts(meta(file, tPath, t, g)); err != nil {
		return nil, err
	}
	return s, s.Validate()
}

// meta reads app facts from the task's meta block, then the group's.
func meta(file, tPath string, t, g *hclsyntax.Block) func(string) (string, nativecfg.Loc, bool) {
	return func(key string) (string, nativecfg.Loc, bool) {
		for _, b := range []*hclsyntax.Block{t, g} {
			for _, m := range blocks(b.Body, "meta") {
				for _, a := range m.Body.Attributes {
					v, diags := a.Expr.Value(nil)
					if diags.HasErrors() || v.Type() != cty.String {
						continue
					}
					// Meta keys are identifiers: mythex.dev/serve-period is
					// written mythex_serve_period.
					if a.Name == "mythex_"+strings.ReplaceAll(strings.TrimPrefix(key, nativecfg.FactPrefix), "-", "_") {
						return v.AsString(), loc(file, tPath+".meta."+a.Name, a), true
					}
				}
			}
		}
		return "", nativecfg.Loc{}, false
	}
}

func blocks(b *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, bl := range b.Blocks {
		if bl.Type == typ {
			out = append(out, bl)
		}
	}
	return out
}

func label(b *hclsyntax.Block) string {
	if len(b.Labels) > 0 {
		return b.Labels[0]
	}
	return b.Type
}

func loc(file, path string, a *hclsyntax.Attribute) nativecfg.Loc {
	return nativecfg.Loc{File: file, Line: a.SrcRange.Start.Line, Path: path}
}

// durationAttr reads a literal duration string ("30s").
func durationAttr(file string, a *hclsyntax.Attribute) (time.Duration, error) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.String {
		return 0, fmt.Errorf("%s:%d: %s: want a literal duration such as \"30s\"", file, a.SrcRange.Start.Line, a.Name)
	}
	d, err := time.ParseDuration(v.AsString())
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s:%d: %s is %q: want a duration such as \"30s\"", file, a.SrcRange.Start.Line, a.Name, v.AsString())
	}
	return d, nil
}
