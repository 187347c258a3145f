package publish

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// caseFile is one fixture of testdata/cases (format in its README.md).
type caseFile struct {
	Case          string        `json:"case"`
	Summary       string        `json:"summary"`
	NowS          float64       `json:"now_s"`
	WindowS       float64       `json:"window_s"`
	StableForS    float64       `json:"stable_for_s"`
	Image         string        `json:"image"`
	Release       string        `json:"release"`
	Policy        string        `json:"policy"`
	Looks         []caseLook    `json:"looks"`
	Serving       []caseMachine `json:"serving"`
	Expect        Status        `json:"expect"`
	ExpectReason  []string      `json:"expect_reason"`
	ExpectWarning []string      `json:"expect_warning"`
}

type caseLook struct {
	AtS      float64       `json:"at_s"`
	Machines []caseMachine `json:"machines"`
}

type caseMachine struct {
	ID           string   `json:"id"`
	State        string   `json:"state"`
	Image        string   `json:"image"`
	Release      string   `json:"release"`
	Instance     string   `json:"instance"`
	Policy       string   `json:"policy"`
	Events       []string `json:"events"`
	RestartCount *int     `json:"restart_count"`
	StartedS     *float64 `json:"started_s"`
	Probe        string   `json:"probe"`
	Error        string   `json:"error"`
}

// parseEvent reads "exit@4.5 code=1 rc=3 restarting".
func parseEvent(s string) (platform.Event, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return platform.Event{}, fmt.Errorf("empty event")
	}
	typ, secs, ok := strings.Cut(f[0], "@")
	if !ok {
		return platform.Event{}, fmt.Errorf("event %q: want type@secs", s)
	}
	sec, err := strconv.ParseFloat(secs, 64)
	if err != nil {
		return platform.Event{}, fmt.Errorf("event %q: %w", s, err)
	}
	e := platform.Event{Type: platform.EventType(typ), Timestamp: at(sec)}
	if e.Type == platform.EventExit {
		e.Exit = &platform.Exit{ExitedAt: at(sec)}
	}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.Atoi(v)
		switch {
		case k == "rc":
			e.RestartCount = n
		case e.Exit == nil:
			return platform.Event{}, fmt.Errorf("event %q: %s on a non-exit event", s, k)
		case k == "code":
			e.Exit.ExitCode = n
		case k == "signal":
			e.Exit.Signal = n
		case k == "restarting":
			e.Exit.Restarting = true
		case k == "requested":
			e.Exit.RequestedStop = true
		case k == "oom":
			e.Exit.OOMKilled = true
		default:
			return platform.Event{}, fmt.Errorf("event %q: unknown flag %s", s, k)
		}
	}
	return e, nil
}

func (c caseFile) machine(cm caseMachine) (platform.Machine, error) {
	img := cm.Image
	if img == "" {
		img = c.Image
	}
	pol := cm.Policy
	if pol == "" {
		pol = c.Policy
	}
	m := platform.Machine{ID: cm.ID, State: platform.State(cm.State), InstanceID: "i1",
		Config: platform.Config{Image: img, Restart: platform.Restart{Policy: platform.RestartPolicy(pol)}}}
	if cm.Instance != "" {
		m.InstanceID = cm.Instance
	}
	if cm.Release != "" {
		m.Config.Metadata = map[string]string{platform.MetadataRelease: cm.Release}
	}
	for _, s := range cm.Events {
		e, err := parseEvent(s)
		if err != nil {
			return m, err
		}
		m.Events = append(m.Events, e)
	}
	if cm.RestartCount != nil {
		m.RestartCount, m.HasRestartCount = *cm.RestartCount, true
	}
	if cm.StartedS != nil {
		m.StartedAt = at(*cm.StartedS)
	}
	return m, nil
}

func parseProbe(s string) HealthResult {
	switch s {
	case "":
		return HealthResult{}
	case "refused":
		return HealthResult{Ran: true, Error: "connection refused", Target: "http://app/healthz"}
	}
	code, _ := strconv.Atoi(s)
	return HealthResult{Ran: true, OK: code >= 200 && code < 300, Status: code, Target: "http://app/healthz"}
}

func (c caseFile) input() (Input, error) {
	if c.Image == "" {
		c.Image = "app:v2"
	}
	in := Input{Start: t0, Now: at(c.NowS), Deadline: at(c.WindowS), Image: c.Image, Release: c.Release,
		Policy: Policy{StableFor: time.Duration(c.StableForS * float64(time.Second)), LookInterval: 5 * time.Second, PollInterval: time.Second}}
	seen := map[string]bool{}
	for i, cl := range c.Looks {
		l := Look{N: i + 1, At: at(cl.AtS)}
		for _, cm := range cl.Machines {
			if !seen[cm.ID] {
				seen[cm.ID] = true
				in.Machines = append(in.Machines, cm.ID)
			}
			ml := MachineLook{ID: cm.ID, Health: parseProbe(cm.Probe)}
			if cm.Error != "" {
				ml.ErrKind, ml.Err = ErrKindControlPlane, cm.Error
			} else {
				m, err := c.machine(cm)
				if err != nil {
					return in, err
				}
				ml.Machine = m
			}
			l.Machines = append(l.Machines, ml)
		}
		in.Looks = append(in.Looks, l)
	}
	if c.Serving != nil {
		in.Serving = []platform.Machine{}
		for _, cm := range c.Serving {
			m, err := c.machine(cm)
			if err != nil {
				return in, err
			}
			in.Serving = append(in.Serving, m)
		}
	}
	return in, nil
}

// TestJudge_PublicCases runs every fixture of testdata/cases: the public
// reports of crash loops passed as successes, false failures and rollbacks,
// each with the verdict a correct judge gives.
func TestJudge_PublicCases(t *testing.T) {
	t.Parallel() // reads its fixtures only
	files, err := filepath.Glob(filepath.Join("testdata", "cases", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("fixtures: %v, %v (want at least 10)", files, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c caseFile
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if c.Case == "" || c.Expect == "" {
				t.Fatalf("%s: a fixture names its case and its expected verdict", f)
			}
			in, err := c.input()
			if err != nil {
				t.Fatal(err)
			}
			v := Judge(in)
			if v.Status != c.Expect {
				t.Fatalf("case %s: Judge() = %v, want %s\n(%s)", c.Case, v, c.Expect, c.Summary)
			}
			reasons, warns := strings.Join(v.Reasons, "\n"), strings.Join(v.Warnings, "\n")
			for _, s := range c.ExpectReason {
				if !strings.Contains(reasons, s) {
					t.Errorf("case %s: reasons %q lack %q", c.Case, reasons, s)
				}
			}
			for _, s := range c.ExpectWarning {
				if !strings.Contains(warns, s) {
					t.Errorf("case %s: warnings %q lack %q", c.Case, warns, s)
				}
			}
		})
	}
}
