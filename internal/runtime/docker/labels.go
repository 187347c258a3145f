package docker

import (
	"maps"
	"slices"

	"github.com/docker/docker/api/types/filters"
)

// Labels the runtime puts on every container it creates, tying it to its
// host, service, version and spec. Compose labels of a service must not use
// these keys (Start refuses them).
const (
	// LabelManaged marks containers and networks the runtime created: "true".
	LabelManaged = "mythex.managed"
	// LabelHost is the fleet host the container runs for (hosts[].name);
	// empty without a host.
	LabelHost = "mythex.host"
	// LabelService is the compose service name.
	LabelService = "mythex.service"
	// LabelVersion is the release version.
	LabelVersion = "mythex.version"
	// LabelSpecHash is the full spec hash of the service's definition
	// (definition.Service.SpecHash): the container runs exactly that spec.
	LabelSpecHash = "mythex.spec_hash"
	// LabelStopGracePeriod is the service's stop_grace_period as a Go
	// duration ("30s"), exact where the container's StopTimeout is whole
	// seconds.
	LabelStopGracePeriod = "mythex.stop_grace_period"
)

// reservedLabels are the keys above.
var reservedLabels = []string{LabelManaged, LabelHost, LabelService, LabelVersion, LabelSpecHash, LabelStopGracePeriod}

// scope is what ties containers to one runtime: the host and the extra
// labels (Options.Labels). The runtime sees only containers carrying all of
// them.
type scope struct {
	host   string
	labels map[string]string
}

// filter returns the label filter selecting the scope's containers, and of
// those only service's when service is not empty.
func (s scope) filter(service string) filters.Args {
	f := filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelHost+"="+s.host),
	)
	for _, k := range slices.Sorted(maps.Keys(s.labels)) {
		f.Add("label", k+"="+s.labels[k])
	}
	if service != "" {
		f.Add("label", LabelService+"="+service)
	}
	return f
}
