// Package definition is the one definition of what a host runs: the services
// of one compose file, resolved for one release version and one host into a
// runtime-neutral model with a canonical encoding and a content hash, and the
// store that keeps a host's current, previous and last known good definitions.
//
// The write-up behind mythex (docs/watchdog.md) lost a gateway because a
// watchdog rewrote a server's compose file mid-deploy and copies of the file
// had drifted. Here there is exactly one source, the compose file referenced by
// mythex.yml (deploy.compose); a deploy resolves it (Resolve, ForHost) and
// publishes the result to the host agent, whose Store is the only writer of the
// host's copy. Everything downstream (runtimes, watchdog, verify) reads the
// Definition, never the compose file.
//
// Per-host variation (host name, ports when several hosts share one machine)
// is compose interpolation: mythex.yml gives each host a map of variables
// (hosts[].vars) and mythex adds MYTHEX_VERSION, MYTHEX_HOST, MYTHEX_TARGET and
// MYTHEX_TARGET_PORT; the compose file uses ${VAR}. See Resolve.
package definition

import (
	"slices"
	"time"
)

// Definition is what one host runs for one release: every service of the
// compose file, resolved (interpolated, defaults applied, paths absolute).
// Build one with Resolve or ForHost, or decode one with Decode; a Definition
// built in code must be sealed with Seal before it is encoded or stored.
type Definition struct {
	// Version is the release version being deployed, e.g. "v2" or a git sha.
	// It reaches every service as MYTHEX_VERSION (environment) and through
	// ${MYTHEX_VERSION} interpolation. Docker tag characters only:
	// [A-Za-z0-9_.-], at most 128, not starting with '.' or '-'.
	Version string `json:"version"`
	// Host is the name of the host this definition was resolved for
	// (fleet hosts[].name); empty when resolved without a host.
	Host string `json:"host,omitempty"`
	// Source says which compose file this was resolved from.
	Source Source `json:"source"`
	// Services are the services, sorted by name, names unique.
	Services []Service `json:"services"`
	// Hash is the lowercase hex SHA-256 of the canonical encoding (Encode). It
	// is not part of the encoding; Seal, Resolve and Decode set it.
	Hash string `json:"-"`
}

// Source identifies the compose file a definition came from.
type Source struct {
	// File is the absolute path of the compose file where it was resolved
	// (on the machine running the deploy).
	File string `json:"file"`
	// SHA256 is the lowercase hex SHA-256 of the compose file's bytes: the same
	// on every host of one release, so "every host runs the one definition" is
	// checkable even though per-host values make each Definition.Hash differ.
	SHA256 string `json:"sha256"`
}

// Service is one compose service, resolved. Fields follow the compose
// specification's names; Process holds what the process runtime needs (from
// the service's x-mythex extension).
type Service struct {
	// Name is the compose service name: [A-Za-z0-9][A-Za-z0-9_.-]*.
	Name string `json:"name"`
	// Version is the release version (copied from Definition.Version), so a
	// runtime can report which version an instance runs.
	Version string `json:"version"`
	// Image is the compose image, interpolated (e.g. "mythex/app:v2"). The
	// Docker runtime runs it; the process runtime ignores it.
	Image string `json:"image"`
	// Entrypoint is the compose entrypoint as an argv (exec form). Docker
	// runtime only; the process runtime runs Process.Executable instead.
	Entrypoint []string `json:"entrypoint,omitempty"`
	// Command is the compose command as an argv: the container's command, or
	// for the process runtime the arguments after Process.Executable. A
	// string-form command is split by compose's shell-word rules at load time;
	// it is never given to a shell.
	Command []string `json:"command,omitempty"`
	// Environment is the service's environment, fully resolved (env_file
	// merged), plus MYTHEX_VERSION, MYTHEX_SERVICE and, with a host,
	// MYTHEX_HOST. A runtime passes exactly this environment.
	Environment map[string]string `json:"environment,omitempty"`
	// Labels are the compose labels.
	Labels map[string]string `json:"labels,omitempty"`
	// StopGracePeriod is the time from SIGTERM to SIGKILL when the service is
	// stopped (compose stop_grace_period). Default 10s, Docker's stop timeout.
	StopGracePeriod time.Duration `json:"-"`
	// Restart is the compose restart policy. Runtimes record it; they do not
	// restart anything themselves (the watchdog decides).
	Restart RestartPolicy `json:"restart"`
	// Healthcheck is how the service's health is checked; nil when it has none
	// (no healthcheck test and no x-mythex health_path, or disable: true).
	Healthcheck *Healthcheck `json:"healthcheck,omitempty"`
	// Process is how the process runtime runs the service (x-mythex); nil when
	// the compose service has no x-mythex.executable.
	Process *ProcessSpec `json:"process,omitempty"`
	// Ports are the compose ports the Docker runtime publishes, in file
	// order. The process runtime ignores them: its service listens on the
	// host itself (x-mythex.port).
	Ports []Port `json:"ports,omitempty"`
	// Networks are the Docker networks the service's container joins, by
	// their Docker names, sorted: the compose networks it lists, resolved
	// through the top-level networks (networks.<key>.name), or, when it lists
	// none, the compose project's default network "<project>_default", where
	// the project is the compose file's name: (default "mythex") — compose's
	// own rule, so every host of a fleet shares one network per compose
	// file. The process runtime ignores them.
	Networks []string `json:"networks,omitempty"`
}

// Port is one compose port: the Docker runtime publishes the container's
// Target port on the host at HostIP:Published (docker run -p
// host_ip:published:target/protocol).
type Port struct {
	// HostIP is the host address the port is published on. Default
	// DefaultPortHostIP (127.0.0.1), where compose's default is every
	// interface: mythex publishes on loopback unless the compose file says
	// host_ip: 0.0.0.0.
	HostIP string `json:"host_ip"`
	// Published is the host port, 1–65535. Required: the load balancer
	// must know where a service is, so a random host port is refused.
	Published int `json:"published"`
	// Target is the container port, 1–65535.
	Target int `json:"target"`
	// Protocol is "tcp" (default) or "udp".
	Protocol string `json:"protocol"`
}

// DefaultPortHostIP is a port's host_ip when the compose file gives none.
const DefaultPortHostIP = "127.0.0.1"

// DefaultProject is the compose project name when the compose file has no
// name:; its default network is "mythex_default".
const DefaultProject = "mythex"

// Restart policy names, as in compose and Docker.
const (
	// RestartNo never restarts (compose default).
	RestartNo = "no"
	// RestartAlways restarts whatever the exit code.
	RestartAlways = "always"
	// RestartOnFailure restarts on a non-zero exit, up to MaxRetries times
	// (0: no limit).
	RestartOnFailure = "on-failure"
	// RestartUnlessStopped restarts unless the service was stopped on purpose.
	RestartUnlessStopped = "unless-stopped"
)

// RestartPolicy is a compose restart policy ("no", "always",
// "on-failure[:max_retries]", "unless-stopped").
type RestartPolicy struct {
	// Policy is one of RestartNo, RestartAlways, RestartOnFailure,
	// RestartUnlessStopped. Default RestartNo.
	Policy string `json:"policy"`
	// MaxRetries bounds restarts under RestartOnFailure; 0 means no limit.
	MaxRetries int `json:"max_retries,omitempty"`
}

// Healthcheck is a compose healthcheck, resolved with Docker's defaults. The
// status it yields follows Docker: starting, then healthy after one success,
// unhealthy after Retries consecutive failures outside StartPeriod.
type Healthcheck struct {
	// Test is the exec-form command (the argv after "CMD"); exit 0 is healthy.
	// Empty when the check is the process runtime's HTTP GET of
	// Process.HealthPath. Shell forms (CMD-SHELL, a plain string) are refused
	// at load time: no config string reaches a shell.
	Test []string `json:"test,omitempty"`
	// Interval is the time between two checks. Default 30s (Docker).
	Interval time.Duration `json:"-"`
	// Timeout bounds one check; a check that takes longer fails. Default 30s
	// (Docker).
	Timeout time.Duration `json:"-"`
	// Retries is the consecutive failures that make the service unhealthy.
	// Default 3 (Docker).
	Retries int `json:"retries"`
	// StartPeriod is the boot time during which failures do not count toward
	// Retries (a success ends it early). Default 0.
	StartPeriod time.Duration `json:"-"`
	// StartInterval is the time between checks during StartPeriod. Default 5s
	// (Docker), never more than Interval.
	StartInterval time.Duration `json:"-"`
}

// ProcessSpec is the process runtime's view of a service, from the compose
// service's x-mythex extension:
//
//	x-mythex:
//	  executable: ./bin/app     # required; relative to the compose file's directory
//	  working_dir: .            # optional; default the compose file's directory
//	  port: 9111                # the port the service listens on (127.0.0.1)
//	  health_path: /healthz     # optional; HTTP health check of 127.0.0.1:port
type ProcessSpec struct {
	// Executable is the absolute path of the program run as the service's
	// process, with Command as its arguments. It must exist on the host.
	Executable string `json:"executable"`
	// WorkingDir is the absolute working directory of the process. Default the
	// compose file's directory.
	WorkingDir string `json:"working_dir"`
	// Port is the TCP port the service listens on at 127.0.0.1; 0 when the
	// service listens on none. Required with HealthPath.
	Port int `json:"port,omitempty"`
	// HealthPath is the HTTP path the process runtime GETs at
	// 127.0.0.1:Port to check health (2xx/3xx is healthy, as Kubernetes
	// httpGet probes). When set, it takes precedence over Healthcheck.Test for
	// the process runtime, because a test in a compose file shared with the
	// Docker runtime names a path inside the image.
	HealthPath string `json:"health_path,omitempty"`
}

// Docker's healthcheck and stop defaults (docker run reference, compose spec).
const (
	// DefaultStopGracePeriod is Docker's default stop timeout.
	DefaultStopGracePeriod = 10 * time.Second
	// DefaultHealthInterval is Docker's default healthcheck interval.
	DefaultHealthInterval = 30 * time.Second
	// DefaultHealthTimeout is Docker's default healthcheck timeout.
	DefaultHealthTimeout = 30 * time.Second
	// DefaultHealthRetries is Docker's default healthcheck retries.
	DefaultHealthRetries = 3
	// DefaultHealthStartInterval is Docker's default healthcheck start interval.
	DefaultHealthStartInterval = 5 * time.Second
)

// Service returns the service named name, and whether there is one.
func (d *Definition) Service(name string) (Service, bool) {
	for _, s := range d.Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// Names returns the service names, sorted.
func (d *Definition) Names() []string {
	names := make([]string, 0, len(d.Services))
	for _, s := range d.Services {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// SpecHashes returns the spec hash of every service, in service order: what a
// runtime's Prune must keep for this definition.
func (d *Definition) SpecHashes() []string {
	out := make([]string, 0, len(d.Services))
	for _, s := range d.Services {
		out = append(out, s.SpecHash())
	}
	return out
}
