package deploy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/fleet"
)

// CheckServices checks that every service deploy.verify and
// deploy.target_services name is a service of def (host's resolved
// definition). Errors: a *fleet.FieldError (matching fleet.ErrInvalid) per
// missing name, joined.
func CheckServices(cfg *fleet.Loaded, host string, def *definition.Definition) error {
	var errs []error
	lists := []struct {
		field string
		names []string
	}{{"deploy.verify", cfg.Deploy.Verify}, {"deploy.target_services", cfg.Deploy.TargetServices}}
	for _, l := range lists {
		for i, n := range l.names {
			if _, ok := def.Service(n); !ok {
				errs = append(errs, &fleet.FieldError{File: cfg.Path, Field: fmt.Sprintf("%s[%d]", l.field, i),
					Msg: fmt.Sprintf("service %q is not in deploy.compose (%s) as resolved for %s, which has %s; fix the name or add the service",
						n, cfg.Deploy.Compose, host, strings.Join(def.Names(), ", "))})
			}
		}
	}
	return errors.Join(errs...)
}

// CheckCompose checks deploy.compose without touching a host: it is set,
// the file exists, it resolves for every host, and deploy.verify and
// deploy.target_services name services of it. `mythex check` and the
// deploy's preflight both run it. Errors: *fleet.FieldError or
// *definition.FieldError (matching fleet.ErrInvalid), joined.
func CheckCompose(ctx context.Context, cfg *fleet.Loaded) error {
	if cfg.Deploy.Compose == "" {
		return &fleet.FieldError{File: cfg.Path, Field: "deploy.compose",
			Msg: "is not set; set it to the compose file that defines the services, relative to mythex.yml (e.g. compose.yaml)"}
	}
	path := filepath.Join(cfg.Dir(), cfg.Deploy.Compose)
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("cannot read %s: %v", path, err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("%s does not exist; deploy.compose is relative to mythex.yml (%s)", path, cfg.Dir())
		}
		return &fleet.FieldError{File: cfg.Path, Field: "deploy.compose", Msg: msg}
	}
	var errs []error
	for _, h := range cfg.Hosts {
		d, err := definition.ForHost(ctx, cfg, h.Name, "check")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, CheckServices(cfg, h.Name, d))
	}
	return errors.Join(errs...)
}

// isLocal reports whether an agent address is on this machine (loopback):
// then the deployer can check the host's executables and ports itself.
func isLocal(addr string) bool {
	host, _, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(addr, "http://"), "https://"))
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// localProblems checks what the deployer can see of a host on this machine
// before anything changes: for the process runtime, that every service's
// executable exists and may be run; for Docker, that every image exists
// (asked of the engine through imageExists, when set). ports collects the
// process ports across hosts to catch two services on one port.
func localProblems(ctx context.Context, h Host, runtimeName string, imageExists func(context.Context, string) error, ports map[string]string) []string {
	d, err := definition.Decode(h.Definition)
	if err != nil {
		return []string{fmt.Sprintf("host %s: definition: %v", h.Name, err)}
	}
	var probs []string
	for _, s := range d.Services {
		switch runtimeName {
		case "process":
			if s.Process == nil {
				continue
			}
			fi, err := os.Stat(s.Process.Executable)
			switch {
			case err != nil:
				probs = append(probs, fmt.Sprintf("host %s: service %s: executable %s: %v", h.Name, s.Name, s.Process.Executable, err))
			case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
				probs = append(probs, fmt.Sprintf("host %s: service %s: %s is not an executable file", h.Name, s.Name, s.Process.Executable))
			}
			if s.Process.Port > 0 {
				key := "127.0.0.1:" + strconv.Itoa(s.Process.Port)
				who := h.Name + "/" + s.Name
				if other, dup := ports[key]; dup {
					probs = append(probs, fmt.Sprintf("host %s: service %s listens on port %d, as %s does", h.Name, s.Name, s.Process.Port, other))
				}
				ports[key] = who
			}
		case "docker":
			if imageExists != nil && s.Image != "" {
				if err := imageExists(ctx, s.Image); err != nil {
					probs = append(probs, fmt.Sprintf("host %s: service %s: image %s: %v", h.Name, s.Name, s.Image, err))
				}
			}
		}
	}
	return probs
}
