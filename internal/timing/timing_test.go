package timing

import (
	"path/filepath"
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
		{"before.yml", Fail, []string{"overlap", "quick-return", "watchdog-patience"}, "short by 57s", "load_balancer.health_check.interval >= 1.5s"},
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
		{"duration at or below", Break{"f", OpLessEq, "62s"}, Break{"f", OpGreater, "62s"}},
		{"duration below", Break{"f", OpLess, "6.5s"}, Break{"f", OpGreaterEq, "6.5s"}},
		{"duration above", Break{"f", OpGreater, "180s"}, Break{"f", OpLessEq, "180s"}},
		{"count at or above", Break{"f", OpGreaterEq, "3"}, Break{"f", OpLessEq, "2"}},
		{"count at or below", Break{"f", OpLessEq, "3"}, Break{"f", OpGreaterEq, "4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.Holding(); got != tc.want {
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
