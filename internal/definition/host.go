package definition

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/mythex/mythex/internal/fleet"
)

// ForHost resolves the fleet's compose file (deploy.compose, relative to
// mythex.yml) for the host named host and the release version: the host's
// vars (hosts[].vars) and target (hosts[].target, as MYTHEX_TARGET and
// MYTHEX_TARGET_PORT) reach interpolation. Errors are as for Resolve; an
// unset deploy.compose or an unknown host is a *FieldError naming mythex.yml.
func ForHost(ctx context.Context, fl *fleet.Loaded, host, version string) (*Definition, error) {
	if fl.Deploy.Compose == "" {
		return nil, &FieldError{File: fl.Path, Field: "deploy.compose", Msg: "is not set; set it to the compose file that defines the services, relative to mythex.yml (e.g. compose.yaml)"}
	}
	for _, h := range fl.Hosts {
		if h.Name != host {
			continue
		}
		return Resolve(ctx, Input{
			ComposeFile: filepath.Join(fl.Dir(), fl.Deploy.Compose),
			Version:     version,
			Host:        h.Name,
			Target:      h.Target,
			Vars:        h.Vars,
		})
	}
	names := make([]string, 0, len(fl.Hosts))
	for _, h := range fl.Hosts {
		names = append(names, h.Name)
	}
	return nil, &FieldError{File: fl.Path, Field: "hosts", Msg: fmt.Sprintf("no host named %q; hosts are %v", host, names)}
}
