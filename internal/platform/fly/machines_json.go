// Package fly speaks the Fly Machines API v1 (https://api.machines.dev/v1):
// Client is a platform.Platform over it, and Handler serves any
// platform.Platform in the same shape (the local platform's daemon uses it).
// The JSON shapes follow superfly/fly-go machine_types.go and the Fly
// Machines API docs: a machine has id, name, state, region, image_ref,
// instance_id, private_ip, created_at, updated_at, config (image, env, init.cmd,
// restart.policy / max_retries, metadata, services[].internal_port) and
// events, newest first, each {type, status, source, timestamp (ms since the
// epoch), request {exit_event {exit_code, oom_killed, requested_stop,
// restarting, signal, exited_at}, restart_count}}.
package fly

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// apiMachine is a machine as the API returns it. Fields mythex does not use
// (checks, nonce, ...) are left to the decoder to skip. When host_status is
// not "ok" the API leaves config out and gives a partial incomplete_config,
// rebuilt from several sources and "not suitable to clone or recreate the
// original machine" (fly-go machine_types.go).
type apiMachine struct {
	ID               string      `json:"id"`
	Name             string      `json:"name,omitempty"`
	State            string      `json:"state"`
	Region           string      `json:"region,omitempty"`
	ImageRef         apiImageRef `json:"image_ref"`
	InstanceID       string      `json:"instance_id,omitempty"`
	Version          string      `json:"version,omitempty"`
	PrivateIP        string      `json:"private_ip,omitempty"`
	CreatedAt        string      `json:"created_at,omitempty"`
	UpdatedAt        string      `json:"updated_at,omitempty"`
	Config           *apiConfig  `json:"config,omitempty"`
	IncompleteConfig *apiConfig  `json:"incomplete_config,omitempty"`
	HostStatus       string      `json:"host_status,omitempty"`
	Events           []apiEvent  `json:"events,omitempty"`
	Checks           []apiCheck  `json:"checks,omitempty"`
	Cordoned         bool        `json:"cordoned,omitempty"`
}

// apiCheck is one entry of checks[] (fly-go MachineCheckStatus).
type apiCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Output string `json:"output,omitempty"`
}

// Process groups flyctl reserves for machines that are not the app's own
// (fly-go machine_types.go: fly_app_release_command, fly_app_console,
// fly_app_test_machine_command, under the fly_process_group metadata key).
const metadataProcessGroup = "fly_process_group"

var reservedProcessGroups = map[string]bool{
	"fly_app_release_command":      true,
	"fly_app_console":              true,
	"fly_app_test_machine_command": true,
}

// serving reports whether m is one of the app's own machines: not a
// release-command, console or test machine (flaps ListActive leaves those
// out the same way).
func (m apiMachine) serving() bool {
	c := m.Config
	if c == nil {
		c = m.IncompleteConfig
	}
	if c == nil {
		return true
	}
	return !reservedProcessGroups[c.Metadata[metadataProcessGroup]] && c.Metadata["process_group"] != "release_command"
}

type apiImageRef struct {
	Registry   string            `json:"registry,omitempty"`
	Repository string            `json:"repository,omitempty"`
	Tag        string            `json:"tag,omitempty"`
	Digest     string            `json:"digest,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

type apiConfig struct {
	Image    string            `json:"image"`
	Env      map[string]string `json:"env,omitempty"`
	Init     *apiInit          `json:"init,omitempty"`
	Restart  *apiRestart       `json:"restart,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Services []apiService      `json:"services,omitempty"`
}

type apiInit struct {
	Cmd []string `json:"cmd,omitempty"`
}

type apiRestart struct {
	Policy     string `json:"policy,omitempty"`
	MaxRetries int    `json:"max_retries,omitempty"`
}

type apiService struct {
	Protocol     string    `json:"protocol,omitempty"`
	InternalPort int       `json:"internal_port,omitempty"`
	Ports        []apiPort `json:"ports,omitempty"`
}

type apiPort struct {
	Port     int      `json:"port,omitempty"`
	Handlers []string `json:"handlers,omitempty"`
}

type apiEvent struct {
	ID        string      `json:"id,omitempty"`
	Type      string      `json:"type"`
	Status    string      `json:"status,omitempty"`
	Source    string      `json:"source,omitempty"`
	Timestamp int64       `json:"timestamp"`
	Request   *apiRequest `json:"request,omitempty"`
}

type apiRequest struct {
	ExitEvent    *apiExitEvent `json:"exit_event,omitempty"`
	MonitorEvent *struct {
		ExitEvent *apiExitEvent `json:"exit_event,omitempty"`
	} `json:"MonitorEvent,omitempty"`
	RestartCount int `json:"restart_count,omitempty"`
}

type apiExitEvent struct {
	ExitCode      int      `json:"exit_code"`
	GuestExitCode int      `json:"guest_exit_code,omitempty"`
	GuestSignal   int      `json:"guest_signal,omitempty"`
	OOMKilled     bool     `json:"oom_killed,omitempty"`
	RequestedStop bool     `json:"requested_stop,omitempty"`
	Restarting    bool     `json:"restarting,omitempty"`
	Signal        int      `json:"signal,omitempty"`
	ExitedAt      flexTime `json:"exited_at,omitzero"`
}

// flexTime is exited_at as the API has sent it: an RFC 3339 string in
// current clients (fly-go's time.Time), integer milliseconds since the epoch
// in older samples, or absent / null / "".
type flexTime struct{ time.Time }

// UnmarshalJSON implements json.Unmarshaler for both shapes.
func (t *flexTime) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	switch {
	case s == "null" || s == `""` || s == "0":
		t.Time = time.Time{}
		return nil
	case strings.HasPrefix(s, `"`):
		return t.Time.UnmarshalJSON(b)
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("exited_at %s: neither an RFC 3339 time nor milliseconds", s)
	}
	t.Time = time.UnixMilli(ms).UTC()
	return nil
}

// MarshalJSON writes RFC 3339, as current clients expect.
func (t flexTime) MarshalJSON() ([]byte, error) { return t.Time.MarshalJSON() }

// IsZero lets omitzero leave an unknown time out.
func (t flexTime) IsZero() bool { return t.Time.IsZero() }

// apiError is the body of a non-2xx answer.
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
	Status  string `json:"status,omitempty"`
}

// createRequest is the body of POST /v1/apps/{app}/machines and of an update.
// Fields from fly-go's LaunchMachineInput: skip_launch keeps an updated
// machine stopped, skip_service_registration keeps Fly Proxy from routing to
// a new machine until it is uncordoned; current_version makes the update
// conditional on the version read (no overwriting a concurrent update).
type createRequest struct {
	Name                    string         `json:"name,omitempty"`
	Region                  string         `json:"region,omitempty"`
	Config                  map[string]any `json:"config"`
	CurrentVersion          string         `json:"current_version,omitempty"`
	SkipLaunch              bool           `json:"skip_launch,omitempty"`
	SkipServiceRegistration bool           `json:"skip_service_registration,omitempty"`
}

// toPlatform converts an API machine. withAddress sets Address from
// private_ip and the first service's internal port (reachable only inside
// Fly's private network, or on the local platform's loopback).
func (m apiMachine) toPlatform(app string, withAddress bool) platform.Machine {
	out := platform.Machine{ID: m.ID, Name: m.Name, App: app, State: platform.State(m.State), InstanceID: m.InstanceID,
		ImageRef: m.ImageRef.full()}
	out.CreatedAt, _ = time.Parse(time.RFC3339Nano, m.CreatedAt)
	out.UpdatedAt, _ = time.Parse(time.RFC3339Nano, m.UpdatedAt)
	if m.Config != nil {
		out.Config = m.Config.toPlatform()
	} else if m.IncompleteConfig != nil {
		// Read-only use: image and release to tell what runs. Never written
		// back (see Client.Update).
		out.Config = m.IncompleteConfig.toPlatform()
	}
	for _, e := range m.Events {
		out.Events = append(out.Events, e.toPlatform())
	}
	for _, c := range m.Checks {
		// flaps inserts bg_deployments_compat checks for old flyctl
		// versions (fly-go RemoveCompatChecks): not the app's.
		if !strings.HasPrefix(c.Name, "bg_deployments_compat") {
			out.Checks = append(out.Checks, platform.Check{Name: c.Name, Status: c.Status, Output: c.Output})
		}
	}
	// The newest exit event carries the restart count of the instance.
	for _, e := range out.Events {
		if e.Type == platform.EventExit {
			out.RestartCount, out.HasRestartCount = e.RestartCount, true
			break
		}
	}
	if withAddress && m.PrivateIP != "" && out.Config.Port > 0 {
		host := m.PrivateIP
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		out.Address = fmt.Sprintf("%s:%d", host, out.Config.Port)
	}
	return out
}

func (r apiImageRef) full() string {
	if r.Repository == "" {
		return ""
	}
	s := r.Repository
	if r.Registry != "" {
		s = r.Registry + "/" + s
	}
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

func (c apiConfig) toPlatform() platform.Config {
	out := platform.Config{Image: c.Image, Env: c.Env, Metadata: c.Metadata}
	if c.Init != nil {
		out.Args = c.Init.Cmd
	}
	if c.Restart != nil {
		out.Restart = platform.Restart{Policy: platform.RestartPolicy(c.Restart.Policy), MaxRetries: c.Restart.MaxRetries}
	}
	for _, s := range c.Services {
		if s.InternalPort > 0 {
			out.Port = s.InternalPort
			break
		}
	}
	return out
}

func (e apiEvent) toPlatform() platform.Event {
	out := platform.Event{Type: platform.EventType(e.Type), Status: e.Status, Source: e.Source, Timestamp: time.UnixMilli(e.Timestamp).UTC()}
	if r := e.Request; r != nil {
		out.RestartCount = r.RestartCount
		x := r.ExitEvent
		if r.MonitorEvent != nil && r.MonitorEvent.ExitEvent != nil {
			x = r.MonitorEvent.ExitEvent
		}
		if x != nil {
			out.Exit = &platform.Exit{ExitCode: x.ExitCode, Signal: x.Signal, OOMKilled: x.OOMKilled, RequestedStop: x.RequestedStop,
				Restarting: x.Restarting, ExitedAt: x.ExitedAt.Time}
			if out.Exit.Signal <= 0 && x.GuestSignal > 0 {
				out.Exit.Signal = x.GuestSignal
			}
			// Fly sends signal -1 for "no signal": a clean exit 0 with
			// signal -1 is not a kill.
			if out.Exit.Signal < 0 {
				out.Exit.Signal = 0
			}
		}
	}
	return out
}

// fromPlatform converts a platform machine to the API shape (for Handler).
func fromPlatform(m platform.Machine) apiMachine {
	out := apiMachine{ID: m.ID, Name: m.Name, State: string(m.State), InstanceID: m.InstanceID, Region: "local",
		ImageRef: apiImageRef{Repository: m.ImageRef}}
	if !m.CreatedAt.IsZero() {
		out.CreatedAt = m.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	if !m.UpdatedAt.IsZero() {
		out.UpdatedAt = m.UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	cfg := configFromPlatform(m.Config)
	if host, port, ok := splitHostPort(m.Address); ok {
		out.PrivateIP = host
		cfg.Services = []apiService{{Protocol: "tcp", InternalPort: port}}
	}
	out.Config = &cfg
	out.Events = []apiEvent{}
	for _, e := range m.Events {
		ae := apiEvent{Type: string(e.Type), Status: e.Status, Source: e.Source, Timestamp: e.Timestamp.UnixMilli()}
		if e.Exit != nil || e.RestartCount != 0 {
			ae.Request = &apiRequest{RestartCount: e.RestartCount}
			if x := e.Exit; x != nil {
				ae.Request.ExitEvent = &apiExitEvent{ExitCode: x.ExitCode, Signal: x.Signal, OOMKilled: x.OOMKilled,
					RequestedStop: x.RequestedStop, Restarting: x.Restarting, ExitedAt: flexTime{x.ExitedAt}}
			}
		}
		out.Events = append(out.Events, ae)
	}
	return out
}

func configFromPlatform(c platform.Config) apiConfig {
	out := apiConfig{Image: c.Image, Env: c.Env, Metadata: c.Metadata,
		Restart: &apiRestart{Policy: string(c.Restart.Policy), MaxRetries: c.Restart.MaxRetries}}
	if len(c.Args) > 0 {
		out.Init = &apiInit{Cmd: c.Args}
	}
	if c.Port > 0 {
		out.Services = []apiService{{Protocol: "tcp", InternalPort: c.Port,
			Ports: []apiPort{{Port: 80, Handlers: []string{"http"}}, {Port: 443, Handlers: []string{"tls", "http"}}}}}
	}
	return out
}

func splitHostPort(addr string) (string, int, bool) {
	i := strings.LastIndex(addr, ":")
	if i <= 0 {
		return "", 0, false
	}
	var port int
	if _, err := fmt.Sscanf(addr[i+1:], "%d", &port); err != nil {
		return "", 0, false
	}
	return strings.Trim(addr[:i], "[]"), port, true
}
