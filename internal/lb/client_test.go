package lb

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"
)

func newClientEnv(t *testing.T, token string) (*harness, *Client) {
	t.Helper()
	h := newHarness(t, testSettings())
	admin, err := NewAdmin(h.g, NewMetrics(h.g), testToken)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(admin)
	t.Cleanup(ts.Close)
	return h, NewClient(ts.URL, token, nil)
}

func TestClient_RegisterListDeregister(t *testing.T) {
	h, c := newClientEnv(t, testToken)
	ctx := context.Background()
	h.prober.set(addrA, modePass)
	st, err := c.Register(ctx, "a", addrA)
	if err != nil || st.ID != "a" || st.State != StateInitial {
		t.Fatalf("Register = %+v, %v; want a initial", st, err)
	}
	h.started(addrA)
	h.checkOf("a")
	st, err = c.Target(ctx, "a")
	if err != nil || st.State != StateHealthy || !st.InRotation || len(st.LastChecks) != 1 {
		t.Fatalf("Target = %+v, %v; want healthy in rotation with one check", st, err)
	}
	list, err := c.Targets(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "a" {
		t.Fatalf("Targets = %+v, %v; want [a]", list, err)
	}
	if _, err := c.Deregister(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitOutOfRotation(ctx, "a", 5*time.Millisecond); err != nil {
		t.Fatalf("WaitOutOfRotation: %v", err)
	}
	if _, err := c.Target(ctx, "a"); !errors.Is(err, ErrTargetNotFound) {
		t.Fatalf("Target after the drain = %v, want ErrTargetNotFound", err)
	}
}

func TestClient_Errors(t *testing.T) {
	h, c := newClientEnv(t, testToken)
	h.register("a", addrA, modePass)
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"unknown target", func() error { _, err := c.Target(ctx, "zz"); return err }, ErrTargetNotFound},
		{"deregister unknown", func() error { _, err := c.Deregister(ctx, "zz"); return err }, ErrTargetNotFound},
		{"bad address", func() error { _, err := c.Register(ctx, "b", "nowhere"); return err }, ErrInvalidTarget},
		{"conflict", func() error { _, err := c.Register(ctx, "a", addrB); return err }, ErrTargetConflict},
		{"wrong token", func() error {
			_, err := NewClient(c.base, "nope", nil).Targets(ctx)
			return err
		}, ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.Message == "" {
				t.Fatalf("err = %v, want an *APIError with the API's message", err)
			}
		})
	}
}

func TestClient_WaitOutOfRotationHonoursContext(t *testing.T) {
	h, c := newClientEnv(t, testToken)
	h.register("a", addrA, modePass)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.WaitOutOfRotation(ctx, "a", 5*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitOutOfRotation on a healthy target = %v, want the context's deadline", err)
	}
}

func TestNewClient_BareAddress(t *testing.T) {
	if c := NewClient("127.0.0.1:8079/", "t", nil); c.base != "http://127.0.0.1:8079" {
		t.Fatalf("base = %q", c.base)
	}
}
