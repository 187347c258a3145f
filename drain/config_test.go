package drain

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestNew_Defaults(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		serverIdle time.Duration // http.Server.IdleTimeout before New
		want       Config        // fields compared: paths, durations, signals
	}{
		{
			name: "zero config",
			want: Config{HealthPath: "/healthz", ServePeriod: 15 * time.Second, ShutdownTimeout: 10 * time.Second,
				IdleTimeout: 75 * time.Second, Signals: []os.Signal{syscall.SIGTERM, os.Interrupt}},
		},
		{
			name: "every field set",
			cfg: Config{HealthPath: "/up", ServePeriod: 20 * time.Second, ShutdownTimeout: 5 * time.Second,
				IdleTimeout: 90 * time.Second, Signals: []os.Signal{syscall.SIGUSR1}},
			serverIdle: 30 * time.Second,
			want: Config{HealthPath: "/up", ServePeriod: 20 * time.Second, ShutdownTimeout: 5 * time.Second,
				IdleTimeout: 90 * time.Second, Signals: []os.Signal{syscall.SIGUSR1}},
		},
		{
			name:       "idle timeout from the http.Server",
			serverIdle: 120 * time.Second,
			want: Config{HealthPath: "/healthz", ServePeriod: 15 * time.Second, ShutdownTimeout: 10 * time.Second,
				IdleTimeout: 120 * time.Second, Signals: []os.Signal{syscall.SIGTERM, os.Interrupt}},
		},
		{
			name: "no signals",
			cfg:  Config{NoSignals: true},
			want: Config{HealthPath: "/healthz", ServePeriod: 15 * time.Second, ShutdownTimeout: 10 * time.Second,
				IdleTimeout: 75 * time.Second, NoSignals: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &http.Server{IdleTimeout: tt.serverIdle}
			d, err := New(srv, tt.cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got := d.Config()
			if got.HealthPath != tt.want.HealthPath || got.ServePeriod != tt.want.ServePeriod ||
				got.ShutdownTimeout != tt.want.ShutdownTimeout || got.IdleTimeout != tt.want.IdleTimeout ||
				got.NoSignals != tt.want.NoSignals || !slices.Equal(got.Signals, tt.want.Signals) {
				t.Errorf("Config() = %+v\nwant %+v", got, tt.want)
			}
			if got.Logger == nil {
				t.Error("Config().Logger is nil, want slog.Default()")
			}
			if srv.IdleTimeout != tt.want.IdleTimeout {
				t.Errorf("http.Server.IdleTimeout = %s, want %s", srv.IdleTimeout, tt.want.IdleTimeout)
			}
			if srv.Handler == nil {
				t.Error("http.Server.Handler not wrapped")
			}
		})
	}
}

func TestNew_Invalid(t *testing.T) {
	tests := []struct {
		name      string
		srv       *http.Server
		cfg       Config
		wantField string
	}{
		{"nil server", nil, Config{}, "srv"},
		{"relative health path", &http.Server{}, Config{HealthPath: "healthz"}, "HealthPath"},
		{"negative serve period", &http.Server{}, Config{ServePeriod: -time.Second}, "ServePeriod"},
		{"negative shutdown timeout", &http.Server{}, Config{ShutdownTimeout: -time.Second}, "ShutdownTimeout"},
		{"negative idle timeout", &http.Server{}, Config{IdleTimeout: -time.Second}, "IdleTimeout"},
		{"signals and no signals", &http.Server{}, Config{NoSignals: true, Signals: []os.Signal{syscall.SIGTERM}}, "NoSignals"},
		{"nil signal", &http.Server{}, Config{Signals: []os.Signal{nil}}, "Signals[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var idle time.Duration
			var handler http.Handler
			if tt.srv != nil {
				idle, handler = tt.srv.IdleTimeout, tt.srv.Handler
			}
			d, err := New(tt.srv, tt.cfg)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", d, err)
			}
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("error %q does not name %s", err, tt.wantField)
			}
			if tt.srv != nil && (tt.srv.IdleTimeout != idle || tt.srv.Handler != handler) {
				t.Error("New changed the http.Server although it failed")
			}
		})
	}
}
