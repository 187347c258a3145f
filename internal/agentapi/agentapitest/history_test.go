package agentapitest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/history"
)

// TestHistory: the fake answers agentapi's client as an agent would — the
// records, one by id, a limit, a timeline or 404 — and refuses another
// token.
func TestHistory(t *testing.T) {
	const tok = "0123456789abcdef0123"
	addr := History(t, tok, []history.Record{{ID: "d2", Timeline: true}, {ID: "d1"}}, map[string][]byte{"d2": []byte("rec")})
	c := agentapi.NewClient("http://"+addr, tok, nil)
	ctx := context.Background()
	cases := []struct {
		name string
		call func() ([]history.Record, error)
		want []string
	}{
		{"all, in order", func() ([]history.Record, error) { return c.History(ctx, 0) }, []string{"d2", "d1"}},
		{"a limit", func() ([]history.Record, error) { return c.History(ctx, 1) }, []string{"d2"}},
		{"one by id", func() ([]history.Record, error) { return c.HistoryOf(ctx, "d1") }, []string{"d1"}},
		{"an id not kept", func() ([]history.Record, error) { return c.HistoryOf(ctx, "d9") }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("records %v, want %v", got, tc.want)
			}
		})
	}
	if b, err := c.Timeline(ctx, "d2"); err != nil || string(b) != "rec" {
		t.Errorf("timeline of d2 = %q, %v; want rec", b, err)
	}
	if _, err := c.Timeline(ctx, "d1"); !errors.Is(err, agentapi.ErrNotFound) {
		t.Errorf("timeline of d1 = %v, want ErrNotFound", err)
	}
	if _, err := agentapi.NewClient("http://"+addr, "another-token-000000", nil).History(ctx, 0); !errors.Is(err, agentapi.ErrUnauthorized) {
		t.Errorf("another token = %v, want ErrUnauthorized", err)
	}
}
