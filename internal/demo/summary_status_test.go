package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleetstatus"
	"github.com/mythex/mythex/internal/termui"
)

// TestWriteSummary_EndsWithStatus: the demo's text ends with what
// `mythex status` prints for its fleet (the same renderer), and its JSON
// carries the status under "status"; a demo stopped before has none.
func TestWriteSummary_EndsWithStatus(t *testing.T) {
	v := fleetstatus.Judge([]fleetstatus.Observation{{Host: "web-1", AgentErr: errors.New("agent unreachable")}, {Host: "web-2", AgentErr: errors.New("agent unreachable")}}, time.Unix(1_800_000_000, 0))
	var want bytes.Buffer
	termui.WriteStatus(&want, v)
	cases := []struct {
		name   string
		status *fleetstatus.Verdict
		want   string
	}{
		{"with status", &v, "mythex status of the fleet:\n" + want.String()},
		{"stopped before", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := Summary{Status: tc.status}
			WriteSummary(&out, s)
			if got := out.String(); tc.want != "" && !strings.HasSuffix(got, tc.want) || tc.want == "" && strings.Contains(got, "mythex status") {
				t.Errorf("demo output:\n%s\nwant it to end with:\n%s", got, tc.want)
			}
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if has := bytes.Contains(b, []byte(`"status":{"hosts":`)); has != (tc.status != nil) {
				t.Errorf("demo --json = %s; status key present %v, want %v", b, has, tc.status != nil)
			}
		})
	}
}
