package docker

import (
	"maps"
	"slices"
	"testing"
)

// legacy returns labels with the runtime's current keys moved to their
// legacy keys, as an older mythex labeled its containers.
func legacy(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if old, ok := legacyKeys[k]; ok {
			k = old
		}
		out[k] = v
	}
	return out
}

func TestLabel(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"current key", map[string]string{LabelVersion: "v2"}, "v2"},
		{"legacy key of an older mythex", map[string]string{"mythex.version": "v1"}, "v1"},
		{"current key wins over legacy", map[string]string{LabelVersion: "v2", "mythex.version": "v1"}, "v2"},
		{"current key empty still wins", map[string]string{LabelVersion: "", "mythex.version": "v1"}, ""},
		{"neither", map[string]string{"other": "x"}, ""},
		{"no labels at all", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := label(tc.labels, LabelVersion); got != tc.want {
				t.Errorf("label(%v, version) = %q; want %q", tc.labels, got, tc.want)
			}
		})
	}
}

func TestLegacyKeys(t *testing.T) {
	want := map[string]string{
		"io.mythex.managed": "mythex.managed", "io.mythex.host": "mythex.host", "io.mythex.service": "mythex.service",
		"io.mythex.version": "mythex.version", "io.mythex.spec_hash": "mythex.spec_hash",
		"io.mythex.stop_grace_period": "mythex.stop_grace_period",
	}
	for k, old := range want {
		if legacyKeys[k] != old {
			t.Errorf("legacy key of %s = %q; want %q", k, legacyKeys[k], old)
		}
		if !slices.Contains(reservedLabels, k) || !slices.Contains(reservedLabels, old) {
			t.Errorf("%s and %s must both be reserved", k, old)
		}
	}
	if len(legacyKeys) != len(want) || len(reservedLabels) != 2*len(want) {
		t.Errorf("legacyKeys = %v, reservedLabels = %v; want exactly the six keys and their legacy ones", legacyKeys, reservedLabels)
	}
}

func TestScope_Owns(t *testing.T) {
	sc := scope{host: "web-1", labels: map[string]string{"team": "core"}}
	ours := map[string]string{LabelManaged: "true", LabelHost: "web-1", LabelService: "api", LabelVersion: "v2", "team": "core"}
	with := func(base map[string]string, k, v string) map[string]string { // v "": without k
		out := maps.Clone(base)
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		labels  map[string]string
		service string
		want    bool
	}{
		{"current keys", ours, "", true},
		{"legacy keys of an older mythex", legacy(ours), "", true},
		{"current keys, its service", ours, "api", true},
		{"legacy keys, its service", legacy(ours), "api", true},
		{"another service", ours, "web", false},
		{"legacy keys, another service", legacy(ours), "web", false},
		{"another host", with(ours, LabelHost, "web-2"), "", false},
		{"legacy keys, another host", legacy(with(ours, LabelHost, "web-2")), "", false},
		{"not managed", with(ours, LabelManaged, ""), "", false},
		{"managed not true", with(ours, LabelManaged, "false"), "", false},
		{"scope label missing", with(ours, "team", ""), "", false},
		{"scope label differs", with(ours, "team", "edge"), "", false},
		{"legacy keys, scope label missing", legacy(with(ours, "team", "")), "", false},
		{"no labels", nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sc.owns(tc.labels, tc.service); got != tc.want {
				t.Errorf("owns(%v, %q) = %v; want %v", tc.labels, tc.service, got, tc.want)
			}
		})
	}
}

func TestScope_Filters(t *testing.T) {
	sc := scope{host: "web-1", labels: map[string]string{"team": "core"}}
	tests := []struct {
		name    string
		service string
		want    [][]string // the label filters, current keys then legacy keys
	}{
		{"every service", "", [][]string{
			{"io.mythex.host=web-1", "io.mythex.managed=true", "team=core"},
			{"mythex.host=web-1", "mythex.managed=true", "team=core"},
		}},
		{"one service", "api", [][]string{
			{"io.mythex.host=web-1", "io.mythex.managed=true", "io.mythex.service=api", "team=core"},
			{"mythex.host=web-1", "mythex.managed=true", "mythex.service=api", "team=core"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := sc.filters(tc.service)
			if len(fs) != len(tc.want) {
				t.Fatalf("%d filters; want %d", len(fs), len(tc.want))
			}
			for i, f := range fs {
				got := f.Get("label")
				slices.Sort(got)
				if !slices.Equal(got, tc.want[i]) {
					t.Errorf("filter %d = %q; want %q", i, got, tc.want[i])
				}
			}
		})
	}
}
