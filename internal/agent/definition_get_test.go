package agent

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
)

// TestAgent_DefinitionReadBack: GET /v1/definition returns each stored
// definition byte for byte as it was published (what mythex rollback
// publishes again), 404 for a ref never set, 422 for an unknown ref.
func TestAgent_DefinitionReadBack(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	l, err := h.client.AcquireLease(ctx, false, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := h.def("v1", nil), h.def("v2", nil)
	for _, d := range [][]byte{v1, v2} {
		if _, err := h.client.Publish(ctx, l.ID, d); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, ref string
		want      []byte
		wantErr   error
	}{
		{"current", "current", v2, nil},
		{"previous", "previous", v1, nil},
		{"last good never set", "last_good", nil, agentapi.ErrNotFound},
		{"unknown ref", "pending", nil, agentapi.ErrBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := h.client.Definition(ctx, tc.ref)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Definition(%s) = %q, %v; want %v", tc.ref, b, err, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(bytes.TrimSpace(b), bytes.TrimSpace(tc.want)) {
				t.Fatalf("Definition(%s) = %s, %v; want the published bytes %s", tc.ref, b, err, tc.want)
			}
		})
	}
}
