package docker

import (
	"maps"
	"slices"

	"github.com/docker/docker/api/types/filters"
)

// Labels the runtime puts on every container it creates, tying it to its
// host, service, version and spec. The keys are reverse-DNS under io.mythex,
// as Docker's object-label convention asks (and as internal/platform/docker's
// are). Compose labels of a service must not use these keys, nor their legacy
// ones (Start refuses them).
const (
	// LabelManaged marks containers and networks the runtime created: "true".
	LabelManaged = "io.mythex.managed"
	// LabelHost is the fleet host the container runs for (hosts[].name);
	// empty without a host.
	LabelHost = "io.mythex.host"
	// LabelService is the compose service name.
	LabelService = "io.mythex.service"
	// LabelVersion is the release version.
	LabelVersion = "io.mythex.version"
	// LabelSpecHash is the full spec hash of the service's definition
	// (definition.Service.SpecHash): the container runs exactly that spec.
	LabelSpecHash = "io.mythex.spec_hash"
	// LabelStopGracePeriod is the service's stop_grace_period as a Go
	// duration ("30s"), exact where the container's StopTimeout is whole
	// seconds.
	LabelStopGracePeriod = "io.mythex.stop_grace_period"
)

// legacyKeys maps each label key above to the key an older mythex put on its
// containers ("mythex.managed", …). Those containers may still run after an
// upgrade: the runtime finds and reads them by either key, so an upgrade
// never orphans a running service.
var legacyKeys = map[string]string{
	LabelManaged:         "mythex.managed",
	LabelHost:            "mythex.host",
	LabelService:         "mythex.service",
	LabelVersion:         "mythex.version",
	LabelSpecHash:        "mythex.spec_hash",
	LabelStopGracePeriod: "mythex.stop_grace_period",
}

// reservedLabels are the keys above and their legacy keys.
var reservedLabels = []string{
	LabelManaged, LabelHost, LabelService, LabelVersion, LabelSpecHash, LabelStopGracePeriod,
	legacyKeys[LabelManaged], legacyKeys[LabelHost], legacyKeys[LabelService],
	legacyKeys[LabelVersion], legacyKeys[LabelSpecHash], legacyKeys[LabelStopGracePeriod],
}

// label returns the value of the runtime's label key on a container's
// labels, or of its legacy key when the container lacks key (one an older
// mythex created); "" when it has neither.
func label(labels map[string]string, key string) string {
	if v, ok := labels[key]; ok {
		return v
	}
	return labels[legacyKeys[key]]
}

// scope is what ties containers to one runtime: the host and the extra
// labels (Options.Labels). The runtime sees only containers carrying all of
// them.
type scope struct {
	host   string
	labels map[string]string
}

// owns reports whether a container with labels is one of the scope's (of
// service only, when service is not empty): managed by mythex, of the
// scope's host and carrying its extra labels, under the current keys or the
// legacy ones.
func (s scope) owns(labels map[string]string, service string) bool {
	if label(labels, LabelManaged) != "true" || label(labels, LabelHost) != s.host {
		return false
	}
	for k, v := range s.labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return service == "" || label(labels, LabelService) == service
}

// filters returns the Engine API label filters that select the scope's
// containers (of service only, when not empty): one by the current keys, one
// by the legacy keys, since the engine ANDs label filters and cannot match
// either key. A container may match either; owns has the last word.
func (s scope) filters(service string) []filters.Args {
	return []filters.Args{s.filterBy(service, func(k string) string { return k }),
		s.filterBy(service, func(k string) string { return legacyKeys[k] })}
}

// filterBy is the label filter of the scope with the runtime's keys named by
// key.
func (s scope) filterBy(service string, key func(string) string) filters.Args {
	f := filters.NewArgs(
		filters.Arg("label", key(LabelManaged)+"=true"),
		filters.Arg("label", key(LabelHost)+"="+s.host),
	)
	for _, k := range slices.Sorted(maps.Keys(s.labels)) {
		f.Add("label", k+"="+s.labels[k])
	}
	if service != "" {
		f.Add("label", key(LabelService)+"="+service)
	}
	return f
}
