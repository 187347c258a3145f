package deploy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
)

func defs(cur, prev, good string) agentapi.Definitions {
	ref := func(v string) *agentapi.DefinitionRef {
		if v == "" {
			return nil
		}
		return &agentapi.DefinitionRef{Version: v, Hash: "h-" + v}
	}
	return agentapi.Definitions{Current: ref(cur), Previous: ref(prev), LastGood: ref(good)}
}

func TestPlanRollback(t *testing.T) {
	cases := []struct {
		name     string
		hosts    []HostDefinitions
		to       string
		want     string
		wantRefs []definition.Ref
		wantErr  string
	}{
		{
			name:  "on the last good version: back to the one before",
			hosts: []HostDefinitions{{"web-1", defs("v2", "v1", "v2")}, {"web-2", defs("v2", "v1", "v2")}},
			want:  "v1", wantRefs: []definition.Ref{definition.RefPrevious, definition.RefPrevious},
		},
		{
			name:  "a deploy stopped halfway: back to the last good",
			hosts: []HostDefinitions{{"web-1", defs("v3", "v2", "v2")}, {"web-2", defs("v2", "v1", "v2")}},
			want:  "v2", wantRefs: []definition.Ref{definition.RefLastGood, definition.RefLastGood},
		},
		{
			name:  "--to a version every host keeps, from whichever ref keeps it",
			hosts: []HostDefinitions{{"web-1", defs("v3", "v1", "v2")}, {"web-2", defs("v1", "v3", "v2")}},
			to:    "v1", want: "v1", wantRefs: []definition.Ref{definition.RefPrevious, definition.RefCurrent},
		},
		{
			name:  "--to prefers the last good definition of the version",
			hosts: []HostDefinitions{{"web-1", defs("v2", "v1", "v2")}},
			to:    "v2", want: "v2", wantRefs: []definition.Ref{definition.RefLastGood},
		},
		{
			name:    "--to a version one host no longer keeps names it",
			hosts:   []HostDefinitions{{"web-1", defs("v3", "v1", "v3")}, {"web-2", defs("v3", "v2", "v3")}},
			to:      "v1",
			wantErr: "version v1 is no longer kept by web-2 (keeps v3, v2)",
		},
		{
			name:    "hosts disagree on the last good version",
			hosts:   []HostDefinitions{{"web-1", defs("v3", "v2", "v3")}, {"web-2", defs("v2", "v1", "v2")}},
			wantErr: "no one last good version (v3 on web-1; v2 on web-2)",
		},
		{
			name:    "nothing ever verified",
			hosts:   []HostDefinitions{{"web-1", defs("v1", "", "")}},
			wantErr: "(none) on web-1",
		},
		{
			name:    "on the last good version after a first rollout: nothing before it",
			hosts:   []HostDefinitions{{"web-1", defs("v1", "", "v1")}, {"web-2", defs("v1", "", "v1")}},
			wantErr: "keep no one version from before it ((none) on web-1, web-2)",
		},
		{
			name:    "on the last good version, hosts ran different versions before",
			hosts:   []HostDefinitions{{"web-1", defs("v3", "v2", "v3")}, {"web-2", defs("v3", "v1", "v3")}},
			wantErr: "v2 on web-1; v1 on web-2",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanRollback(tc.hosts, tc.to)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNotRetained) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PlanRollback = %+v, %v; want ErrNotRetained saying %q", p, err, tc.wantErr)
				}
				return
			}
			if err != nil || p.Version != tc.want || !slices.Equal(p.Refs, tc.wantRefs) {
				t.Fatalf("PlanRollback = %+v, %v; want %s from %v", p, err, tc.want, tc.wantRefs)
			}
		})
	}
}
