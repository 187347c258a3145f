package termui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/publish"
)

// TestWriteReconcileText_RollbackSaysWhetherItCompleted: a rollback that did
// not complete is never reported as a restore (a reconcile of an aborted
// publish once printed "restored v1" while v2 ran on).
func TestWriteReconcileText_RollbackSaysWhetherItCompleted(t *testing.T) {
	cases := map[string]struct {
		rb      *publish.Rollback
		want    string
		notWant string
	}{
		"completed":          {&publish.Rollback{From: "v2", To: "v1", Took: 2 * time.Second}, "restored v1 in 2s", "did not complete"},
		"did not complete":   {&publish.Rollback{From: "v2", To: "v1", Took: 20 * time.Second, Error: "not ready after 20s: machine m1 still runs release v2"}, "the rollback to v1 did not complete in 20s: not ready after 20s", "restored"},
		"nothing to restore": {&publish.Rollback{From: "v2"}, "api v2: failed", "restored"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			WriteReconcileText(&b, []publish.Check{{App: "api", Release: "v2", Action: publish.ActionFailed, Rollback: tc.rb}})
			got := b.String()
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.notWant) {
				t.Fatalf("got %q, want it to say %q and not %q", got, tc.want, tc.notWant)
			}
		})
	}
}
