package lbtest

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/mythex/mythex/internal/lbapi"
)

// TestStart: the balancer serves both addresses; with no target registered
// the traffic port answers 503, and the admin API takes the token and
// refuses another.
func TestStart(t *testing.T) {
	traffic, admin := Start(t, "lb-token")
	resp, err := http.Get("http://" + traffic + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("traffic with no target = %d, want 503", resp.StatusCode)
	}
	ctx := context.Background()
	if _, err := lbapi.NewClient(admin, "lb-token", nil).Targets(ctx); err != nil {
		t.Errorf("admin API with the token: %v", err)
	}
	if _, err := lbapi.NewClient(admin, "wrong", nil).Targets(ctx); !errors.Is(err, lbapi.ErrUnauthorized) {
		t.Errorf("admin API with another token = %v, want ErrUnauthorized", err)
	}
}
