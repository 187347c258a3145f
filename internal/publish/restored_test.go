package publish

import (
	"testing"
	"time"
)

func TestRestoredTimes(t *testing.T) {
	t.Parallel() // a pure function of its inputs
	v1 := Release{ID: "v1", Seq: 1, Machines: []string{"m1", "m2"}, Since: map[string]time.Time{"m1": at(0), "m2": at(0)}}
	for _, tt := range []struct {
		name       string
		newer      []Release
		wantSince  []string // machines keeping v1's own t0
		wantBefore map[string]string
		wantAt     time.Time
	}{
		{name: "no newer release: v1's own t0s", newer: []Release{v1}, wantSince: []string{"m1", "m2"}},
		{name: "in-place v2 rolled back: judged from the restoring write, v2 is what it ran before",
			newer:      []Release{{ID: "v2", Seq: 2, Machines: []string{"m1", "m2"}, UpdatedAt: at(30)}, v1},
			wantBefore: map[string]string{"m1": "v2", "m2": "v2"}, wantAt: at(30)},
		{name: "blue-green v2 on other machines: v1 untouched", newer: []Release{{ID: "v2", Seq: 2, Machines: []string{"m3"}, UpdatedAt: at(30)}},
			wantSince: []string{"m1", "m2"}},
		{name: "two newer releases: the latest one that wrote each machine",
			newer:      []Release{{ID: "v3", Seq: 3, Machines: []string{"m1"}, UpdatedAt: at(60)}, {ID: "v2", Seq: 2, Machines: []string{"m1", "m2"}, UpdatedAt: at(30)}},
			wantBefore: map[string]string{"m1": "v3", "m2": "v2"}, wantAt: at(60)},
		{name: "older releases are ignored", newer: []Release{{ID: "v0", Seq: 0, Machines: []string{"m1"}, UpdatedAt: at(-30)}},
			wantSince: []string{"m1", "m2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			since, before, replacedAt := restoredTimes(v1, tt.newer)
			if len(since) != len(tt.wantSince) {
				t.Errorf("since = %v, want entries for %v", since, tt.wantSince)
			}
			for _, id := range tt.wantSince {
				if !since[id].Equal(v1.Since[id]) {
					t.Errorf("since[%s] = %v, want %v", id, since[id], v1.Since[id])
				}
			}
			if len(before) != len(tt.wantBefore) {
				t.Errorf("before = %v, want %v", before, tt.wantBefore)
			}
			for id, rel := range tt.wantBefore {
				if before[id].Release != rel {
					t.Errorf("before[%s] = %v, want %s", id, before[id], rel)
				}
			}
			if !replacedAt.Equal(tt.wantAt) {
				t.Errorf("replacedAt = %v, want %v", replacedAt, tt.wantAt)
			}
		})
	}
	if _, ok := v1.Since["m1"]; !ok {
		t.Error("restoredTimes changed the release's own Since")
	}
}
