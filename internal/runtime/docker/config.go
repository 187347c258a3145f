package docker

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/go-connections/nat"

	"github.com/mythex/mythex/internal/definition"
)

// containerSpec is everything needed to create one service's container.
type containerSpec struct {
	// Name is the container name (containerName).
	Name       string
	Config     *container.Config
	Host       *container.HostConfig
	Networking *network.NetworkingConfig
	// Connect are the networks joined after create, before start: engines
	// before API 1.44 join only one network at create.
	Connect []string
}

// buildSpec maps a resolved service to its container, in compose's terms:
//
//   - image, entrypoint and command as given (empty keeps the image's);
//   - environment exactly the definition's (sorted "K=V"; the image's ENV
//     still applies underneath, as with docker run);
//   - labels: the compose labels plus the runtime's (LabelHost, LabelService,
//     LabelVersion, LabelSpecHash, LabelStopGracePeriod, LabelManaged) and the
//     scope's extra labels;
//   - StopTimeout: stop_grace_period rounded up to whole seconds (the Engine
//     API counts seconds; the runtime never kills before the grace);
//   - healthcheck: the compose exec-form test as ["CMD", …] with interval,
//     timeout, retries and start_period; start_interval only when the engine
//     speaks API 1.44 or later (Docker 25), else Docker checks at interval
//     during the start period too and the runtime runs the start-interval
//     checks itself (startinterval.go). A service without healthcheck gets
//     ["NONE"], so an image's HEALTHCHECK does not run behind the
//     definition's back;
//   - ports: published on host_ip:published (and exposed);
//   - restart: the compose restart policy, handed to Docker;
//   - networks: the first at create (with the service name as DNS alias, as
//     compose), the others in Connect.
//
// apiVersion is the negotiated Engine API version. Errors are
// *definition.FieldErrors (matching definition.ErrInvalid) for what the
// Docker runtime cannot honour: a compose label using a reserved key, a
// healthcheck with no exec test (x-mythex.health_path is the process
// runtime's).
func buildSpec(svc definition.Service, sc scope, apiVersion string) (containerSpec, error) {
	spec := svc.SpecHash()
	if err := checkDockerable(svc); err != nil {
		return containerSpec{}, err
	}
	labels := map[string]string{}
	maps.Copy(labels, svc.Labels)
	maps.Copy(labels, sc.labels)
	maps.Copy(labels, map[string]string{
		LabelManaged:         "true",
		LabelHost:            sc.host,
		LabelService:         svc.Name,
		LabelVersion:         svc.Version,
		LabelSpecHash:        spec,
		LabelStopGracePeriod: svc.StopGracePeriod.String(),
	})
	timeout := graceSeconds(svc.StopGracePeriod)
	cfg := &container.Config{
		Image:       svc.Image,
		Entrypoint:  slices.Clone(svc.Entrypoint),
		Cmd:         slices.Clone(svc.Command),
		Env:         envList(svc.Environment),
		Labels:      labels,
		StopTimeout: &timeout,
		Healthcheck: healthConfig(svc.Healthcheck, apiVersion),
	}
	host := &container.HostConfig{
		RestartPolicy: container.RestartPolicy{
			Name:              container.RestartPolicyMode(svc.Restart.Policy),
			MaximumRetryCount: svc.Restart.MaxRetries,
		},
	}
	if len(svc.Ports) > 0 {
		cfg.ExposedPorts = nat.PortSet{}
		host.PortBindings = nat.PortMap{}
		for _, p := range svc.Ports {
			port := nat.Port(strconv.Itoa(p.Target) + "/" + p.Protocol)
			cfg.ExposedPorts[port] = struct{}{}
			host.PortBindings[port] = append(host.PortBindings[port], nat.PortBinding{HostIP: p.HostIP, HostPort: strconv.Itoa(p.Published)})
		}
	}
	out := containerSpec{Name: containerName(sc.host, svc.Name, spec), Config: cfg, Host: host}
	if len(svc.Networks) > 0 {
		first := svc.Networks[0]
		host.NetworkMode = container.NetworkMode(first)
		out.Networking = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			first: {Aliases: []string{svc.Name}},
		}}
		out.Connect = slices.Clone(svc.Networks[1:])
	}
	return out, nil
}

// checkDockerable refuses what the Docker runtime cannot honour.
func checkDockerable(svc definition.Service) error {
	for _, k := range slices.Sorted(maps.Keys(svc.Labels)) {
		if slices.Contains(reservedLabels, k) {
			return &definition.FieldError{Service: svc.Name, Field: "labels." + k,
				Msg: fmt.Sprintf("uses a label key the Docker runtime sets itself (%s); rename the label", strings.Join(reservedLabels, ", "))}
		}
	}
	if h := svc.Healthcheck; h != nil && len(h.Test) == 0 {
		return &definition.FieldError{Service: svc.Name, Field: "healthcheck.test",
			Msg: `is empty: x-mythex.health_path is the process runtime's check, the Docker runtime runs a command inside the container; add test: ["CMD", "prog", "arg", …]`}
	}
	return nil
}

// healthConfig maps a definition healthcheck to Docker's; nil disables the
// image's.
func healthConfig(h *definition.Healthcheck, apiVersion string) *container.HealthConfig {
	if h == nil {
		return &container.HealthConfig{Test: []string{"NONE"}}
	}
	hc := &container.HealthConfig{
		Test:        append([]string{"CMD"}, h.Test...),
		Interval:    h.Interval,
		Timeout:     h.Timeout,
		StartPeriod: h.StartPeriod,
		Retries:     h.Retries,
	}
	if versions.GreaterThanOrEqualTo(apiVersion, "1.44") {
		hc.StartInterval = h.StartInterval
	}
	return hc
}

// envList renders an environment as sorted "K=V" entries.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// graceSeconds is grace in whole seconds, rounded up (Docker's stop timeout
// is seconds; rounding down would kill before the grace period ends).
func graceSeconds(grace time.Duration) int {
	if grace <= 0 {
		return 0
	}
	return int((grace + time.Second - 1) / time.Second)
}

// containerName is "mythex-<host>-<service>-<first 12 hex of spec>", or
// without a host "mythex-<service>-<12 hex>": one container per host, service
// and spec on an engine. Characters Docker refuses in names become '-'.
func containerName(host, service, spec string) string {
	parts := []string{"mythex"}
	if host != "" {
		parts = append(parts, host)
	}
	parts = append(parts, service, spec[:12])
	return sanitizeName(strings.Join(parts, "-"))
}

// sanitizeName keeps [A-Za-z0-9_.-] and turns anything else into '-'.
func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, s)
}
