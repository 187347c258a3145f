package runtime

import (
	"slices"
	"testing"
	"time"
)

func TestSortStatuses(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		in   []ServiceStatus
		want []string // IDs in order
	}{
		{"by name first", []ServiceStatus{{Name: "gateway", ID: "g"}, {Name: "api", ID: "a"}}, []string{"a", "g"}},
		{"then oldest start first", []ServiceStatus{{Name: "api", ID: "new", StartedAt: t0.Add(time.Second)}, {Name: "api", ID: "old", StartedAt: t0}}, []string{"old", "new"}},
		{"then by ID in the same instant", []ServiceStatus{{Name: "api", ID: "b", StartedAt: t0}, {Name: "api", ID: "a", StartedAt: t0}}, []string{"a", "b"}},
		{"empty", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			SortStatuses(tc.in)
			var got []string
			for _, s := range tc.in {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}
