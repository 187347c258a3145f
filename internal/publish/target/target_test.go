package target

import (
	"context"
	"errors"
	"testing"

	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/publish"
)

func TestPlatform_UsageErrors(t *testing.T) {
	t.Setenv(fly.TokenEnv, "")
	cases := []struct {
		name  string
		o     Options
		cause error
	}{
		{"unknown platform", Options{Platform: "heroku"}, nil},
		{"local daemon not running", Options{Platform: "local", StateDir: t.TempDir()}, local.ErrNotRunning},
		{"fly without a token", Options{Platform: "fly"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Platform(context.Background(), tc.o)
			if _, ok := errors.AsType[*UsageError](err); !ok || (tc.cause != nil && !errors.Is(err, tc.cause)) {
				t.Errorf("Platform = %v; want a *UsageError (wrapping %v)", err, tc.cause)
			}
		})
	}
}

func TestRouter(t *testing.T) {
	noToken := errors.New("no token")
	cases := []struct {
		name      string
		o         Options
		wantKind  string
		wantUsage bool
	}{
		{"in place: none", Options{Platform: "local"}, "", false},
		{"fly blue-green: Fly Proxy", Options{Platform: "fly", FlyToken: "t", Strategy: publish.StrategyBlueGreen, App: "api"}, "fly", false},
		{"embedded LB", Options{Platform: "local", LBAdmin: "http://127.0.0.1:1", LBToken: func() (string, error) { return "tok", nil }}, "embedded", false},
		{"embedded LB without a token", Options{Platform: "local", LBAdmin: "http://127.0.0.1:1", LBToken: func() (string, error) { return "", noToken }}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Router(tc.o)
			_, usage := errors.AsType[*UsageError](err)
			kind := ""
			if r != nil {
				kind = r.Kind()
			}
			if usage != tc.wantUsage || kind != tc.wantKind || (err != nil && !tc.wantUsage) {
				t.Errorf("Router = %v (kind %q), %v; want kind %q, usage error %v", r, kind, err, tc.wantKind, tc.wantUsage)
			}
		})
	}
}
