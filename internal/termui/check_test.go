package termui

import (
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/timing"
)

func TestWriteCheckText_Wrapping(t *testing.T) {
	rep := timing.Report{Level: timing.Fail, Model: "m", Results: []timing.Result{{
		Name: "watchdog-patience", Level: timing.Fail, Formula: "f", Slack: -1, HasSlack: true,
		Breaks: []timing.Break{
			{Field: "watchdog.failures_before_heal", Op: timing.OpLessEq, Value: "3"},
			{Field: "load_balancer.health_check.interval", Op: timing.OpLess, Value: "5s"},
			{Field: "load_balancer.health_check.interval", Op: timing.OpGreaterEq, Value: "6.5s"},
		},
	}}}
	var b strings.Builder
	if err := WriteCheckText(&b, "x.yml", rep, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"\x1b[31m✗\x1b[0m watchdog-patience  f — short by 1ns",
		"holds at: watchdog.failures_before_heal ≥ 4,\n",
		"load_balancer.health_check.interval ≥ 5s and < 6.5s\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "load_balancer") && runeLen(line) > wrapWidth {
			t.Errorf("break line over %d runes: %q", wrapWidth, line)
		}
	}
}
