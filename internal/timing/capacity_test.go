package timing

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestCapacity(t *testing.T) {
	hosts := func(n int) []fleet.Host {
		var hs []fleet.Host
		for i := range n {
			hs = append(hs, fleet.Host{Name: string(rune('a' + i)), Target: "127.0.0.1:1"})
		}
		return hs
	}
	cases := []struct {
		name  string
		hosts int
		batch int
		want  Level
	}{
		{"three hosts one at a time", 3, 1, Pass},
		{"three hosts two at a time", 3, 2, Pass},
		{"batch as large as the fleet", 3, 3, Fail},
		{"batch larger than the fleet", 3, 5, Fail},
		{"a single host", 1, 1, Fail},
		{"no hosts listed: not judged, not noise", 0, 1, Pass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fleet.Default()
			c.Hosts = hosts(tc.hosts)
			c.Deploy.BatchSize = tc.batch
			r := evaluate(capacityInvariant, &c)
			if r.Level != tc.want {
				t.Errorf("level = %v, want %v (%s; %v)", r.Level, tc.want, r.Formula, r.Notes)
			}
			if tc.want == Fail && len(r.Notes) == 0 {
				t.Error("a failing capacity says nothing about what to do")
			}
		})
	}
}
