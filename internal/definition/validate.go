package definition

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/mythex/mythex/internal/fleet"
)

// ErrInvalid is matched (errors.Is) by every error for a bad compose file or a
// bad definition. FieldErrors also match fleet.ErrInvalid, so the CLI maps them
// to exit code 2 at its one boundary, like a bad mythex.yml.
var ErrInvalid = errors.New("invalid definition")

// FieldError is one problem with one field of one service. Its message names
// the compose file, the service and the field (compose names: x-mythex.port,
// healthcheck.test, stop_grace_period), says what is wrong and how to fix it.
type FieldError struct {
	// File is the compose file's path; empty for a definition decoded or built
	// in code.
	File string
	// Service is the compose service name; empty for a problem of the whole
	// definition or file.
	Service string
	// Field is the field's path inside the service (or the document), e.g.
	// x-mythex.port or healthcheck.test.
	Field string
	// Msg says what is wrong and what to do about it.
	Msg string
}

// Error formats the problem as "file: services.<service>.<field>: msg".
func (e *FieldError) Error() string {
	file := e.File
	if file == "" {
		file = "definition"
	}
	field := e.Field
	if e.Service != "" {
		field = "services." + e.Service
		if e.Field != "" {
			field += "." + e.Field
		}
	}
	return fmt.Sprintf("%s: %s: %s", file, field, e.Msg)
}

// Is reports whether target is ErrInvalid or fleet.ErrInvalid.
func (e *FieldError) Is(target error) bool {
	return target == ErrInvalid || target == fleet.ErrInvalid
}

// Reserved environment variables: mythex sets them in every service.
const (
	// EnvVersion holds the release version (Definition.Version).
	EnvVersion = "MYTHEX_VERSION"
	// EnvService holds the service's name.
	EnvService = "MYTHEX_SERVICE"
	// EnvHost holds the host name (Definition.Host); set only with a host.
	EnvHost = "MYTHEX_HOST"
)

var (
	versionRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	envKeyRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
)

// errs collects FieldErrors for one file.
type errs struct {
	file string
	list []error
}

func (e *errs) add(service, field, format string, args ...any) {
	e.list = append(e.list, &FieldError{File: e.file, Service: service, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (e *errs) err() error { return errors.Join(e.list...) }

// Validate checks d: a version in Docker tag characters, at least one service,
// unique well-formed names, and for each service an image or an x-mythex
// executable, a positive stop grace period, a known restart policy, a
// healthcheck that can run, absolute process paths, a valid port, and the
// reserved environment (MYTHEX_VERSION, MYTHEX_SERVICE, MYTHEX_HOST) matching
// the definition. It returns every problem joined, each a *FieldError matching
// ErrInvalid, or nil.
func (d *Definition) Validate() error {
	return d.validate("")
}

func (d *Definition) validate(file string) error {
	e := &errs{file: file}
	if !versionRE.MatchString(d.Version) {
		e.add("", "version", "%s", (&VersionError{Version: d.Version}).Error())
	}
	if len(d.Services) == 0 {
		e.add("", "services", "no services; define at least one service in the compose file")
	}
	seen := map[string]bool{}
	for i := range d.Services {
		s := &d.Services[i]
		if seen[s.Name] {
			e.add(s.Name, "", "service defined twice; service names must be unique")
		}
		seen[s.Name] = true
		s.validate(e, d)
	}
	return e.err()
}

func (s *Service) validate(e *errs, d *Definition) {
	n := s.Name
	if !nameRE.MatchString(n) {
		e.add("", "services", "service name %q is not valid; use letters, digits, '_', '.', '-', starting with a letter or digit", n)
		return
	}
	if s.Version != d.Version {
		e.add(n, "version", "service version %q differs from the definition's %q; every service of a definition runs one release", s.Version, d.Version)
	}
	if s.Image == "" && s.Process == nil {
		e.add(n, "image", "neither an image nor x-mythex.executable; set image for the Docker runtime or x-mythex.executable for the process runtime")
	}
	if s.StopGracePeriod <= 0 {
		e.add(n, "stop_grace_period", "must be more than 0, got %v; set a duration like 30s (Docker's default is 10s)", s.StopGracePeriod)
	}
	checkArgv(e, n, "entrypoint", s.Entrypoint)
	checkArgv(e, n, "command", s.Command)
	s.validateRestart(e)
	s.validateEnv(e, d)
	for k := range s.Labels {
		if k == "" {
			e.add(n, "labels", "a label has an empty key; give every label a name")
		}
	}
	s.validateProcess(e)
	s.validateHealthcheck(e)
	s.validatePorts(e)
	s.validateNetworks(e)
}

func (s *Service) validatePorts(e *errs) {
	type binding struct {
		ip       string
		port     int
		protocol string
	}
	seen := map[binding]int{}
	for i, p := range s.Ports {
		field := fmt.Sprintf("ports[%d]", i)
		if p.Published < 1 || p.Published > 65535 {
			e.add(s.Name, field+".published", "must be a host port 1–65535, got %d", p.Published)
		}
		if p.Target < 1 || p.Target > 65535 {
			e.add(s.Name, field+".target", "must be a container port 1–65535, got %d", p.Target)
		}
		if ip := net.ParseIP(p.HostIP); ip == nil {
			e.add(s.Name, field+".host_ip", "%q is not an IP address; use 127.0.0.1 (the default) or 0.0.0.0 for every interface", p.HostIP)
		}
		if p.Protocol != "tcp" && p.Protocol != "udp" {
			e.add(s.Name, field+".protocol", "must be tcp or udp, got %q", p.Protocol)
		}
		b := binding{p.HostIP, p.Published, p.Protocol}
		if j, dup := seen[b]; dup {
			e.add(s.Name, field, "publishes %s:%d/%s again (ports[%d] does already); a host port can be published once", p.HostIP, p.Published, p.Protocol, j)
		}
		seen[b] = i
	}
}

func (s *Service) validateNetworks(e *errs) {
	for i, n := range s.Networks {
		if !nameRE.MatchString(n) {
			e.add(s.Name, fmt.Sprintf("networks[%d]", i), "network name %q is not valid; use letters, digits, '_', '.', '-', starting with a letter or digit", n)
		}
		if i > 0 && s.Networks[i-1] >= n {
			e.add(s.Name, "networks", "must be sorted and unique, got %q after %q", n, s.Networks[i-1])
		}
	}
}

func checkArgv(e *errs, service, field string, argv []string) {
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			e.add(service, fmt.Sprintf("%s[%d]", field, i), "contains a NUL byte; remove it")
		}
	}
}

func (s *Service) validateRestart(e *errs) {
	r := s.Restart
	switch r.Policy {
	case RestartNo, RestartAlways, RestartUnlessStopped:
		if r.MaxRetries != 0 {
			e.add(s.Name, "restart", "max retries apply only to on-failure, got %q with %d; use on-failure:%d or drop the count", r.Policy, r.MaxRetries, r.MaxRetries)
		}
	case RestartOnFailure:
		if r.MaxRetries < 0 {
			e.add(s.Name, "restart", "max retries must be 0 or more, got %d", r.MaxRetries)
		}
	default:
		e.add(s.Name, "restart", "unknown restart policy %q; use one of no, always, on-failure[:max_retries], unless-stopped", r.Policy)
	}
}

func (s *Service) validateEnv(e *errs, d *Definition) {
	for k, v := range s.Environment {
		if !envKeyRE.MatchString(k) {
			e.add(s.Name, "environment", "variable name %q is not valid; use letters, digits and '_', not starting with a digit", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			e.add(s.Name, "environment."+k, "value contains a NUL byte; remove it")
		}
	}
	want := map[string]string{EnvVersion: d.Version, EnvService: s.Name}
	if d.Host != "" {
		want[EnvHost] = d.Host
	}
	for k, v := range want {
		if got, ok := s.Environment[k]; !ok || got != v {
			e.add(s.Name, "environment."+k, "is %q, want %q; mythex sets %s itself, remove it from the compose file", got, v, k)
		}
	}
	if d.Host == "" {
		if got, ok := s.Environment[EnvHost]; ok {
			e.add(s.Name, "environment."+EnvHost, "is %q but the definition has no host; mythex sets %s itself, remove it from the compose file", got, EnvHost)
		}
	}
}

func (s *Service) validateProcess(e *errs) {
	p := s.Process
	if p == nil {
		return
	}
	if !filepath.IsAbs(p.Executable) {
		e.add(s.Name, "x-mythex.executable", "%q is not an absolute path; give a path relative to the compose file, e.g. ./bin/app", p.Executable)
	}
	if !filepath.IsAbs(p.WorkingDir) {
		e.add(s.Name, "x-mythex.working_dir", "%q is not an absolute path; give a path relative to the compose file, or leave it out", p.WorkingDir)
	}
	if p.Port < 0 || p.Port > 65535 {
		e.add(s.Name, "x-mythex.port", "must be a TCP port 1–65535, got %d", p.Port)
	}
	if p.HealthPath != "" {
		if !strings.HasPrefix(p.HealthPath, "/") {
			e.add(s.Name, "x-mythex.health_path", "must be an absolute HTTP path like /healthz, got %q", p.HealthPath)
		}
		if p.Port == 0 {
			e.add(s.Name, "x-mythex.port", "is required with x-mythex.health_path: the health check GETs 127.0.0.1:<port><health_path>")
		}
	}
}

func (s *Service) validateHealthcheck(e *errs) {
	h := s.Healthcheck
	if h == nil {
		return
	}
	if len(h.Test) == 0 && (s.Process == nil || s.Process.HealthPath == "") {
		e.add(s.Name, "healthcheck.test", "is empty and there is no x-mythex.health_path; give test: [\"CMD\", \"prog\", \"arg\"] or x-mythex.health_path")
	}
	if len(h.Test) > 0 && h.Test[0] == "" {
		e.add(s.Name, "healthcheck.test", "the program (first element after CMD) is empty; name the program to run")
	}
	checkArgv(e, s.Name, "healthcheck.test", h.Test)
	positive := func(field string, v interface{ Seconds() float64 }) {
		if v.Seconds() <= 0 {
			e.add(s.Name, "healthcheck."+field, "must be more than 0, got %v; set a duration like 5s", v)
		}
	}
	positive("interval", h.Interval)
	positive("timeout", h.Timeout)
	positive("start_interval", h.StartInterval)
	if h.StartPeriod < 0 {
		e.add(s.Name, "healthcheck.start_period", "must be 0 or more, got %v", h.StartPeriod)
	}
	if h.Retries < 1 {
		e.add(s.Name, "healthcheck.retries", "must be at least 1, got %d (Docker's default is 3)", h.Retries)
	}
}

// Validate checks one service as Definition.Validate checks each of its
// services, taking the definition's version from s.Version and its host from
// s's MYTHEX_HOST. A runtime calls it before running a service it was handed.
// Errors are *FieldErrors joined, matching ErrInvalid.
func (s Service) Validate() error {
	d := Definition{Version: s.Version, Host: s.Environment[EnvHost], Services: []Service{s}}
	return d.Validate()
}
