// Package platform is one interface over a machines platform: list the machines
// of an app, get one (state, config and image, events newest first as the
// platform returns them, restart information), create, update to a new
// config/image, start, stop, destroy, and wait for a state. The model and the
// field names follow the Fly Machines API v1, the platform mythex was first
// built against; the implementations
// live in the subpackages local (processes under a supervisor, the embedded
// default), fly (a REST client for the Fly Machines API) and docker
// (containers through the Docker Engine API).
package platform

import (
	"context"
	"time"
)

// Platform is a machines platform. Every method takes the app's name; machine
// ids are unique within an app. Implementations are safe for concurrent use.
//
// Errors: ErrNotFound (wrapped) for an unknown app or machine; ErrInvalid for a
// config the platform rejects; ErrRateLimited, ErrUnavailable and ErrTimeout
// (all matched by IsControlPlane) when the control plane could not answer —
// those say nothing about the app itself.
type Platform interface {
	// Name is the platform's short name: "local", "fly" or "docker".
	Name() string
	// List returns the app's machines that are not destroyed, in a stable order
	// (by creation time, then id). An app without machines gives an empty list.
	List(ctx context.Context, app string) ([]Machine, error)
	// Get returns one machine as the platform reports it now.
	Get(ctx context.Context, app, id string) (Machine, error)
	// Create makes a machine running cfg and starts it (Fly: POST
	// /v1/apps/{app}/machines). It returns once the platform has accepted it;
	// the machine may still be starting.
	Create(ctx context.Context, app string, cfg Config) (Machine, error)
	// Update replaces the machine's config (image, env, restart policy) and
	// restarts it on the new one, as a new instance (Fly: POST
	// /v1/apps/{app}/machines/{id}). The restart count starts again from zero.
	Update(ctx context.Context, app, id string, cfg Config) (Machine, error)
	// Start starts a stopped or suspended machine. Starting a started machine
	// is not an error.
	Start(ctx context.Context, app, id string) error
	// Stop stops the machine (SIGTERM, then SIGKILL after the platform's stop
	// timeout); the exit is recorded as requested and never restarted.
	Stop(ctx context.Context, app, id string) error
	// Destroy stops the machine if needed and removes it.
	Destroy(ctx context.Context, app, id string) error
	// Wait blocks until the machine is in state, for at most timeout (Fly: GET
	// .../wait?state=). It returns ErrTimeout (wrapped) when the time runs out.
	Wait(ctx context.Context, app, id string, state State, timeout time.Duration) error
}

// Machine is one machine as a platform reports it at one moment.
type Machine struct {
	// ID identifies the machine within its app.
	ID string `json:"id"`
	// Name is a human-readable name; may equal ID.
	Name string `json:"name,omitempty"`
	// App is the app the machine belongs to.
	App string `json:"app"`
	// State is the machine's state now.
	State State `json:"state"`
	// Config is the config the machine runs (image, env, restart policy).
	Config Config `json:"config"`
	// ImageRef is the image the platform resolved Config.Image to (Fly:
	// image_ref as registry/repository:tag@digest; docker: the image id; local:
	// the executable's path). Empty when the platform does not say.
	ImageRef string `json:"image_ref,omitempty"`
	// InstanceID changes every time the machine gets a new version (an update),
	// as Fly's instance_id. Empty when the platform has no such notion.
	InstanceID string `json:"instance_id,omitempty"`
	// Address is the host:port on which the app in this machine answers
	// directly, reachable from where mythex runs; empty when there is none (Fly
	// machines are reachable only on the private network).
	Address string `json:"address,omitempty"`
	// Events are the machine's recent events, newest first, exactly as the
	// platform returned them: platforms keep only a few per machine, so the list
	// is bounded and slides: count crashes by their timestamps, never by events
	// (docs/publish.md).
	Events []Event `json:"events"`
	// RestartCount is how many times the platform restarted the current
	// instance after it exited on its own (docker: State.RestartCount; local:
	// the supervisor's count; fly: request.restart_count of the newest exit
	// event). Valid only when HasRestartCount; it only grows within an instance.
	RestartCount    int  `json:"restart_count"`
	HasRestartCount bool `json:"has_restart_count"`
	// StartedAt is when the current instance's process last started; zero when
	// the platform does not say (derive it from the newest start event then).
	StartedAt time.Time `json:"started_at,omitzero"`
	// Checks are the platform's own health checks of the machine (Fly:
	// checks[] with status passing, warning or critical), empty when the
	// platform runs none.
	Checks []Check `json:"checks,omitempty"`
	// CreatedAt and UpdatedAt are when the machine was created and last changed.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Release returns the release id recorded in the machine's config metadata
// (MetadataRelease), or "".
func (m Machine) Release() string { return m.Config.Metadata[MetadataRelease] }

// MetadataRelease is the config metadata key under which mythex records the id
// of the release a machine runs (as flyctl records fly_release_id).
const MetadataRelease = "mythex_release"

// State is a machine's state, with Fly's names (fly.io/docs/machines/machine-states).
type State string

// Machine states. Persistent: created, started, stopped, suspended, failed;
// transient: creating, starting, stopping, restarting, suspending, replacing,
// updating, destroying, and replaced / migrated (Fly: an old version of the
// machine, or one moved to another host — the next look shows what runs);
// terminal: destroyed; launch_failed (Fly could not launch it).
// fly.io/docs/machines/machine-states; updating can last minutes on Fly.
const (
	StateCreated    State = "created"
	StateStarting   State = "starting"
	StateStarted    State = "started"
	StateStopping   State = "stopping"
	StateStopped    State = "stopped"
	StateRestarting State = "restarting"
	StateSuspending State = "suspending"
	StateSuspended  State = "suspended"
	StateReplacing  State = "replacing"
	StateFailed     State = "failed"
	StateDestroying State = "destroying"
	StateDestroyed  State = "destroyed"
	// Fly's further states.
	StateCreating     State = "creating"
	StateUpdating     State = "updating"
	StateReplaced     State = "replaced"
	StateMigrated     State = "migrated"
	StateLaunchFailed State = "launch_failed"
)

// String returns the state's name.
func (s State) String() string { return string(s) }

// Transient reports whether the platform will move the machine out of s by
// itself (creating, starting, stopping, restarting, suspending, replacing,
// updating, replaced, migrated, destroying).
func (s State) Transient() bool {
	switch s {
	case StateStarting, StateStopping, StateRestarting, StateSuspending, StateReplacing, StateDestroying,
		StateCreating, StateUpdating, StateReplaced, StateMigrated:
		return true
	}
	return false
}

// RestartPolicy says whether the platform restarts a machine whose main
// process exits, with Fly's (and Docker's) names.
type RestartPolicy string

// Restart policies.
const (
	// RestartNo never restarts, whether the exit was a crash or clean.
	RestartNo RestartPolicy = "no"
	// RestartAlways always restarts, even after a clean exit (code 0).
	RestartAlways RestartPolicy = "always"
	// RestartOnFailure restarts after a non-zero exit, up to MaxRetries times
	// (Fly's default policy; Fly's default MaxRetries is 10).
	RestartOnFailure RestartPolicy = "on-failure"
)

// Restart is a machine's restart policy (Fly config.restart).
type Restart struct {
	// Policy is no, always or on-failure. Empty means on-failure.
	Policy RestartPolicy `json:"policy,omitempty"`
	// MaxRetries bounds the restarts under on-failure; 0 means the platform's
	// default (DefaultMaxRetries). Ignored by the other policies.
	MaxRetries int `json:"max_retries,omitempty"`
}

// DefaultMaxRetries is the on-failure retry budget when none is set (Fly's
// default: 10).
const DefaultMaxRetries = 10

// Effective returns r with the defaults applied: policy on-failure when empty,
// MaxRetries DefaultMaxRetries when on-failure and zero.
func (r Restart) Effective() Restart {
	if r.Policy == "" {
		r.Policy = RestartOnFailure
	}
	if r.Policy == RestartOnFailure && r.MaxRetries == 0 {
		r.MaxRetries = DefaultMaxRetries
	}
	return r
}

// Validate returns an ErrInvalid error naming the field when the policy is
// unknown or MaxRetries is negative.
func (r Restart) Validate() error {
	switch r.Policy {
	case "", RestartNo, RestartAlways, RestartOnFailure:
	default:
		return invalidf("restart.policy: %q is not one of no, always, on-failure", r.Policy)
	}
	if r.MaxRetries < 0 {
		return invalidf("restart.max_retries: %d is negative; give 0 for the default (%d)", r.MaxRetries, DefaultMaxRetries)
	}
	return nil
}

// Config is what a machine runs: the release's image and settings.
type Config struct {
	// Image is the image reference (fly, docker) or, on the local platform, the
	// path of the executable to run. Required.
	Image string `json:"image"`
	// Args are the arguments after the image's entrypoint (docker: Cmd; local:
	// argv[1:]). Passed as argv, never through a shell.
	Args []string `json:"args,omitempty"`
	// Env is the environment of the app's process.
	Env map[string]string `json:"env,omitempty"`
	// Restart is the restart policy.
	Restart Restart `json:"restart"`
	// Port is the TCP port the app listens on inside the machine (docker,
	// fly). The local platform ignores it and gives each machine its own
	// loopback port.
	Port int `json:"port,omitempty"`
	// Metadata are free-form labels (MetadataRelease among them).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Validate checks cfg and returns an ErrInvalid error naming the first bad
// field and how to fix it.
func (c Config) Validate() error {
	if c.Image == "" {
		return invalidf("image: empty; give the image reference (or, on the local platform, the executable's path)")
	}
	if c.Port < 0 || c.Port > 65535 {
		return invalidf("port: %d is outside 0..65535", c.Port)
	}
	return c.Restart.Validate()
}

// Clone returns a deep copy of c.
func (c Config) Clone() Config {
	out := c
	out.Args = append([]string(nil), c.Args...)
	if c.Env != nil {
		out.Env = make(map[string]string, len(c.Env))
		for k, v := range c.Env {
			out.Env[k] = v
		}
	}
	if c.Metadata != nil {
		out.Metadata = make(map[string]string, len(c.Metadata))
		for k, v := range c.Metadata {
			out.Metadata[k] = v
		}
	}
	return out
}

// WithMetadata returns a copy of c with metadata key set to value.
func (c Config) WithMetadata(key, value string) Config {
	out := c.Clone()
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	out.Metadata[key] = value
	return out
}

// Check is one of the platform's own health checks of a machine (Fly:
// MachineCheckStatus).
type Check struct {
	Name string `json:"name"`
	// Status is passing, warning or critical.
	Status string `json:"status"`
	// Output is what the check last saw.
	Output string `json:"output,omitempty"`
}

// UnroutedCreator is a platform with its own proxy (Fly Proxy) that can
// create a machine the proxy does not route to until it is registered (Fly:
// skip_service_registration, registered by uncordoning). A blue-green
// publish creates its new machines this way, so they take no traffic
// before they are judged.
type UnroutedCreator interface {
	CreateUnrouted(ctx context.Context, app string, cfg Config) (Machine, error)
}
