package sampleapp

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	defaults := config{
		Listen: "127.0.0.1:8081", Service: "app", Version: "dev", HostName: host, HealthPath: "/healthz",
		DrainServePeriod: 15 * time.Second, ShutdownTimeout: 10 * time.Second, IdleTimeout: 75 * time.Second,
		CrashExitCode: 1,
	}
	with := func(f func(*config)) config { c := defaults; f(&c); return c }

	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr string // substring of the error; "" for none
	}{
		{name: "defaults", want: defaults},
		{
			name: "every flag",
			args: []string{"--listen", "0.0.0.0:9", "--service", "api", "--version", "v2", "--host-name", "web-1",
				"--health-path", "/up", "--drain-serve-period", "20s", "--shutdown-timeout", "5s", "--idle-timeout", "90s",
				"--start-delay", "1s", "--crash-on-start", "2s", "--crash-after", "3s", "--crash-exit-code", "7",
				"--ignore-sigterm", "--unhealthy", "--latency", "250ms"},
			want: config{Listen: "0.0.0.0:9", Service: "api", Version: "v2", HostName: "web-1", HealthPath: "/up",
				DrainServePeriod: 20 * time.Second, ShutdownTimeout: 5 * time.Second, IdleTimeout: 90 * time.Second,
				StartDelay: time.Second, CrashOnStart: 2 * time.Second, CrashAfter: 3 * time.Second, CrashExitCode: 7,
				IgnoreSIGTERM: true, Unhealthy: true, Latency: 250 * time.Millisecond},
		},
		{
			name: "every env variable",
			env: map[string]string{"MYTHEX_APP_LISTEN": "0.0.0.0:9", "MYTHEX_APP_SERVICE": "api", "MYTHEX_APP_VERSION": "v2",
				"MYTHEX_APP_HOST_NAME": "web-1", "MYTHEX_APP_HEALTH_PATH": "/up", "MYTHEX_APP_DRAIN_SERVE_PERIOD": "20s",
				"MYTHEX_APP_SHUTDOWN_TIMEOUT": "5s", "MYTHEX_APP_IDLE_TIMEOUT": "90s", "MYTHEX_APP_START_DELAY": "1s",
				"MYTHEX_APP_CRASH_ON_START": "2s", "MYTHEX_APP_CRASH_AFTER": "3s", "MYTHEX_APP_CRASH_EXIT_CODE": "7",
				"MYTHEX_APP_IGNORE_SIGTERM": "true", "MYTHEX_APP_UNHEALTHY": "1", "MYTHEX_APP_LATENCY": "250ms"},
			want: config{Listen: "0.0.0.0:9", Service: "api", Version: "v2", HostName: "web-1", HealthPath: "/up",
				DrainServePeriod: 20 * time.Second, ShutdownTimeout: 5 * time.Second, IdleTimeout: 90 * time.Second,
				StartDelay: time.Second, CrashOnStart: 2 * time.Second, CrashAfter: 3 * time.Second, CrashExitCode: 7,
				IgnoreSIGTERM: true, Unhealthy: true, Latency: 250 * time.Millisecond},
		},
		{
			name: "flag wins over env",
			args: []string{"--version=v3", "--unhealthy=false"},
			env:  map[string]string{"MYTHEX_APP_VERSION": "v2", "MYTHEX_APP_SERVICE": "gateway", "MYTHEX_APP_UNHEALTHY": "true"},
			want: with(func(c *config) { c.Version, c.Service = "v3", "gateway" }),
		},
		{
			name: "single-dash flags",
			args: []string{"-service", "orchestrator", "-crash-exit-code=0"},
			want: with(func(c *config) { c.Service, c.CrashExitCode = "orchestrator", 0 }),
		},
		{name: "bad env duration", env: map[string]string{"MYTHEX_APP_LATENCY": "fast"}, wantErr: `MYTHEX_APP_LATENCY="fast"`},
		{name: "bad env bool", env: map[string]string{"MYTHEX_APP_UNHEALTHY": "maybe"}, wantErr: "MYTHEX_APP_UNHEALTHY"},
		{name: "bad flag duration", args: []string{"--start-delay", "soon"}, wantErr: "start-delay"},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "bogus"},
		{name: "stray argument", args: []string{"serve"}, wantErr: `unexpected argument "serve"`},
		{name: "negative duration", args: []string{"--latency=-1s"}, wantErr: "--latency (MYTHEX_APP_LATENCY) is -1s"},
		{name: "negative duration from env", env: map[string]string{"MYTHEX_APP_CRASH_AFTER": "-2s"}, wantErr: "--crash-after"},
		{name: "exit code out of range", args: []string{"--crash-exit-code", "300"}, wantErr: "--crash-exit-code"},
		{name: "relative health path", args: []string{"--health-path", "healthz"}, wantErr: "--health-path"},
		{name: "empty listen", env: map[string]string{}, args: []string{"--listen="}, wantErr: "--listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, err := parseConfig("app", tt.args, getenv, io.Discard)
			if tt.wantErr != "" {
				if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseConfig error = %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseConfig: %v", err)
			}
			if got != tt.want {
				t.Errorf("parseConfig =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestParseConfig_Help(t *testing.T) {
	var out strings.Builder
	_, err := parseConfig("app", []string{"-h"}, func(string) string { return "" }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseConfig(-h) = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"--drain-serve-period", "$MYTHEX_APP_DRAIN_SERVE_PERIOD", "app check URL", "(default 15s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"listen":             "MYTHEX_APP_LISTEN",
		"host-name":          "MYTHEX_APP_HOST_NAME",
		"drain-serve-period": "MYTHEX_APP_DRAIN_SERVE_PERIOD",
		"ignore-sigterm":     "MYTHEX_APP_IGNORE_SIGTERM",
	} {
		if got := envName(flagName); got != want {
			t.Errorf("envName(%q) = %q, want %q", flagName, got, want)
		}
	}
}
