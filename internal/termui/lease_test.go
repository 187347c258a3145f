package termui

import (
	"testing"

	"github.com/mythex/mythex/internal/agentapi"
)

func TestRecoveryDetail(t *testing.T) {
	cases := map[string]struct {
		r    agentapi.Recovery
		want string
	}{
		"restored": {agentapi.Recovery{State: agentapi.RecoveryRestored, Version: "v1", Registered: true}, ": back on v1, registered with the load balancer"},
		"release completed": {agentapi.Recovery{State: agentapi.RecoveryRestored, Version: "v2", Released: true, Registered: true},
			": the deploy had committed; release completed, kept v2, registered with the load balancer"},
		"nothing before": {agentapi.Recovery{State: agentapi.RecoveryRestored}, ": the host ran nothing before that deploy; its new services were stopped"},
		"failed":         {agentapi.Recovery{State: agentapi.RecoveryFailed, Error: "boom"}, ": boom"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := RecoveryDetail(tc.r); got != tc.want {
				t.Errorf("RecoveryDetail = %q, want %q", got, tc.want)
			}
		})
	}
}
