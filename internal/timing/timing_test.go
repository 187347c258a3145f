package timing

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestCheck_Seeds(t *testing.T) {
	cases := []struct {
		file     string
		level    Level
		failed   []string
		overlap  string // the overlap slack phrase
		breaksAt string // one break point of overlap, as Field Op Value
	}{
		{"before.yml", Fail, []string{"overlap", "watchdog-patience"}, "short by 57s", "load_balancer.health_check.interval >= 1.5s"},
		{"after.yml", Pass, nil, "slack 3s", "drain.serve_period <= 12s"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			l, err := fleet.Load(filepath.Join("..", "..", "examples", "seed", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			rep := Check(l.Config)
			if rep.Level != tc.level || !slices.Equal(rep.Failed(), tc.failed) || rep.OK() != (tc.level != Fail) {
				t.Errorf("level %v failed %v, want %v %v", rep.Level, rep.Failed(), tc.level, tc.failed)
			}
			if got := rep.Results[0].SlackPhrase(); got != tc.overlap {
				t.Errorf("overlap: %q, want %q", got, tc.overlap)
			}
			if !slices.Contains(breaksOf(rep, "overlap"), tc.breaksAt) {
				t.Errorf("overlap breaks %q lack %q", breaksOf(rep, "overlap"), tc.breaksAt)
			}
		})
	}
}

func TestBreak_Holding(t *testing.T) {
	cases := []struct {
		name string
		in   Break
		want Break
	}{
		{"duration at or below", Break{Field: "f", Op: OpLessEq, Value: "62s"}, Break{Field: "f", Op: OpGreater, Value: "62s"}},
		{"duration below", Break{Field: "f", Op: OpLess, Value: "6.5s"}, Break{Field: "f", Op: OpGreaterEq, Value: "6.5s"}},
		{"duration above", Break{Field: "f", Op: OpGreater, Value: "180s"}, Break{Field: "f", Op: OpLessEq, Value: "180s"}},
		{"count at or above", Break{Field: "f", Op: OpGreaterEq, Value: "3"}, Break{Field: "f", Op: OpLessEq, Value: "2"}},
		{"count at or below", Break{Field: "f", Op: OpLessEq, Value: "3"}, Break{Field: "f", Op: OpGreaterEq, Value: "4"}},
		{"keeps what the fix breaks", Break{Field: "f", Op: OpGreaterEq, Value: "1.5s", AlsoBreaks: []string{"check-timeout"}},
			Break{Field: "f", Op: OpLess, Value: "1.5s", AlsoBreaks: []string{"check-timeout"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.Holding(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Holding = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLevel_String(t *testing.T) {
	for l, want := range map[Level]string{Pass: "pass", Marginal: "marginal", Fail: "fail", Level(9): "unknown"} {
		if got := l.String(); got != want {
			t.Errorf("Level(%d) = %q, want %q", l, got, want)
		}
	}
}

func TestOp_Symbol(t *testing.T) {
	for op, want := range map[Op]string{OpLess: "<", OpLessEq: "≤", OpGreater: ">", OpGreaterEq: "≥"} {
		if got := op.Symbol(); got != want {
			t.Errorf("%s.Symbol() = %q, want %q", op, got, want)
		}
		if op.Negate().Negate() != op {
			t.Errorf("%s negated twice is %s", op, op.Negate().Negate())
		}
	}
}

func TestEvaluate_MatchesCheck(t *testing.T) {
	c := fleetWith(t, nil)
	a, b := Evaluate(c), Check(c)
	if a.Level != b.Level || len(a.Results) != len(b.Results) {
		t.Fatalf("Evaluate %v/%d, Check %v/%d", a.Level, len(a.Results), b.Level, len(b.Results))
	}
	for i := range a.Results {
		if a.Results[i].Formula != b.Results[i].Formula || len(a.Results[i].Breaks) != 0 {
			t.Errorf("%s: Evaluate and Check differ", a.Results[i].Name)
		}
	}
}

// A one-number fix that trades one failure for another says so: before.yml's
// overlap holds only at an interval below the 2s check timeout, which breaks
// check-timeout; raising failures_before_heal for watchdog-patience is clean.
func TestCheck_FixThatBreaksAnother(t *testing.T) {
	l, err := fleet.Load(filepath.Join("..", "..", "examples", "seed", "before.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(l.Config)
	find := func(inv, field string) Break {
		for _, r := range rep.Results {
			if r.Name != inv {
				continue
			}
			for _, b := range r.Breaks {
				if b.Field == field {
					return b
				}
			}
		}
		t.Fatalf("%s has no break on %s", inv, field)
		return Break{}
	}
	cases := []struct {
		name, inv, field string
		want             []string
	}{
		{"overlap by interval breaks check-timeout", "overlap", "load_balancer.health_check.interval", []string{"check-timeout"}},
		{"watchdog-patience by failures is clean", "watchdog-patience", "watchdog.failures_before_heal", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := find(tc.inv, tc.field).AlsoBreaks; !slices.Equal(got, tc.want) {
				t.Errorf("AlsoBreaks = %v, want %v", got, tc.want)
			}
		})
	}
	for _, r := range rep.Results {
		if r.OK() {
			for _, b := range r.Breaks {
				if len(b.AlsoBreaks) > 0 {
					t.Errorf("%s holds but its break %+v names AlsoBreaks", r.Name, b)
				}
			}
		}
	}
}
