package nomad

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/nativecfg"
)

const job = `job "api" {
  group "web" {
    shutdown_delay = "5s"
    task "app" {
      kill_timeout = "10s"
      meta {
        mythex_shutdown_timeout = "20s"
      }
      service {
        check {
          interval = "10s"
          timeout  = "2s"
        }
      }
    }
  }
}
`

// TestRead_KillTimeoutStartsAfterShutdownDelay: SIGKILL comes at
// shutdown_delay + kill_timeout, and the fix is written as kill_timeout.
func TestRead_KillTimeoutStartsAfterShutdownDelay(t *testing.T) {
	subs, err := Read("job.nomad.hcl", []byte(job))
	if err != nil || len(subs) != 1 {
		t.Fatalf("subs %d err %v", len(subs), err)
	}
	s := subs[0]
	if s.Name != "job api group web task app" {
		t.Errorf("name %q", s.Name)
	}
	c := s.Config
	if c.Drain.PreStop != 5*time.Second || c.Backend.StopGracePeriod != 15*time.Second || c.Drain.ShutdownTimeout != 20*time.Second {
		t.Fatalf("pre_stop %v grace %v shutdown %v", c.Drain.PreStop, c.Backend.StopGracePeriod, c.Drain.ShutdownTimeout)
	}
	v := nativecfg.Judge(s)
	if len(v.Findings) != 1 || v.Findings[0].Invariant != "grace" {
		t.Fatalf("findings %+v", v.Findings)
	}
	f := v.Findings[0]
	// 5s delay + 20s shutdown needs SIGKILL at 25s or later: kill_timeout 20s.
	if f.Loc.Line != 5 || f.Current != "10s" || len(f.Fix) != 1 || f.Fix[0].To != "20s" {
		t.Errorf("finding %+v", f)
	}
}

func TestRead_Defaults(t *testing.T) {
	subs, err := Read("j.hcl", []byte("job \"x\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"docker\"\n    }\n  }\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := subs[0].Config
	if c.Drain.PreStop != 0 || c.Backend.StopGracePeriod != 5*time.Second {
		t.Errorf("pre_stop %v grace %v", c.Drain.PreStop, c.Backend.StopGracePeriod)
	}
	if a := strings.Join(subs[0].Assumptions(), "\n"); !strings.Contains(a, "kill_timeout not set: Nomad's default 5s") {
		t.Errorf("assumptions %q", a)
	}
}

func TestRead_BadInput(t *testing.T) {
	for name, src := range map[string]string{
		"not HCL":          "job {{",
		"no task":          "job \"x\" {\n  group \"g\" {\n  }\n}\n",
		"not a duration":   nest(`kill_timeout = "soon"`),
		"not a literal":    nest(`kill_timeout = var.k`),
		"bad fact in meta": nest("meta {\n mythex_longest_request = \"long\"\n}"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Read("j.hcl", []byte(src)); err == nil || !strings.Contains(err.Error(), "j.hcl") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

// nest puts body inside job "x" { group "g" { task "t" { ... } } }.
func nest(body string) string {
	return "job \"x\" {\n  group \"g\" {\n    task \"t\" {\n" + body + "\n    }\n  }\n}\n"
}
