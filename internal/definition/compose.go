package definition

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/compose-spec/compose-go/v2/types"
)

// Interpolation variables mythex provides to the compose file, besides the
// host's own (fleet hosts[].vars).
const (
	// VarVersion is the release version being deployed (also set in every
	// service's environment as MYTHEX_VERSION).
	VarVersion = EnvVersion
	// VarHost is the host's name (hosts[].name); set only with a host.
	VarHost = EnvHost
	// VarTarget is the host's load balancer target, host:port (hosts[].target);
	// set only when the host has one.
	VarTarget = "MYTHEX_TARGET"
	// VarTargetPort is the port of VarTarget, e.g. for the gateway's
	// x-mythex.port.
	VarTargetPort = "MYTHEX_TARGET_PORT"
)

// ExtensionKey is the compose service extension mythex reads (ProcessSpec).
const ExtensionKey = "x-mythex"

// Input is what Resolve turns into a Definition.
type Input struct {
	// ComposeFile is the path of the compose file. Required.
	ComposeFile string
	// Version is the release version being deployed. Required; Docker tag
	// characters.
	Version string
	// Host is the name of the host the definition is for; empty for none.
	Host string
	// Target is the host's load balancer target (host:port); empty for none.
	// It becomes ${MYTHEX_TARGET} and ${MYTHEX_TARGET_PORT}.
	Target string
	// Vars are the host's interpolation variables (fleet hosts[].vars). Names
	// starting with MYTHEX_ are reserved for mythex and refused.
	Vars map[string]string
	// Fleet are variables mythex derives from mythex.yml (FleetVars), so the
	// compose file takes the drain and grace numbers `mythex check` proved
	// instead of repeating them. Names start with MYTHEX_.
	Fleet map[string]string
}

// supported lists every compose attribute a Definition carries. Anything else
// in the compose file is refused rather than silently ignored: a volume or a
// port mapping that no runtime honours would be a definition that lies.
var supported = []tree.Path{
	tree.NewPath("name"),
	tree.NewPath("services"),
	tree.NewPath("services", "*"),
	tree.NewPath("services", "*", "image"),
	tree.NewPath("services", "*", "command"),
	tree.NewPath("services", "*", "command", "[]"),
	tree.NewPath("services", "*", "entrypoint"),
	tree.NewPath("services", "*", "entrypoint", "[]"),
	tree.NewPath("services", "*", "environment"),
	tree.NewPath("services", "*", "environment", "*"),
	tree.NewPath("services", "*", "environment", "[]"),
	tree.NewPath("services", "*", "env_file"),
	tree.NewPath("services", "*", "env_file", "[]"),
	tree.NewPath("services", "*", "env_file", "[]", "*"),
	tree.NewPath("services", "*", "labels"),
	tree.NewPath("services", "*", "labels", "*"),
	tree.NewPath("services", "*", "labels", "[]"),
	tree.NewPath("services", "*", "stop_grace_period"),
	tree.NewPath("services", "*", "restart"),
	tree.NewPath("services", "*", "healthcheck"),
	tree.NewPath("services", "*", "healthcheck", "test"),
	tree.NewPath("services", "*", "healthcheck", "test", "[]"),
	tree.NewPath("services", "*", "healthcheck", "interval"),
	tree.NewPath("services", "*", "healthcheck", "timeout"),
	tree.NewPath("services", "*", "healthcheck", "retries"),
	tree.NewPath("services", "*", "healthcheck", "start_period"),
	tree.NewPath("services", "*", "healthcheck", "start_interval"),
	tree.NewPath("services", "*", "healthcheck", "disable"),
	tree.NewPath("services", "*", "ports"),
	tree.NewPath("services", "*", "ports", "[]"),
	tree.NewPath("services", "*", "ports", "[]", "target"),
	tree.NewPath("services", "*", "ports", "[]", "published"),
	tree.NewPath("services", "*", "ports", "[]", "host_ip"),
	tree.NewPath("services", "*", "ports", "[]", "protocol"),
	// mode is swarm's (ingress or host); compose's loader sets it on every
	// port, and a single engine publishes the same way under either.
	tree.NewPath("services", "*", "ports", "[]", "mode"),
	tree.NewPath("services", "*", "networks"),
	tree.NewPath("services", "*", "networks", "[]"),
	tree.NewPath("services", "*", "networks", "*"),
	tree.NewPath("networks"),
	tree.NewPath("networks", "*"),
	tree.NewPath("networks", "*", "name"),
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Resolve loads the compose file with compose-go's loader and resolves it for
// in.Version and in.Host into a sealed Definition:
//
//   - Interpolation (${VAR}, ${VAR:-default}, ${VAR:?err}) sees only in.Vars
//     and mythex's variables (MYTHEX_VERSION, MYTHEX_HOST, MYTHEX_TARGET,
//     MYTHEX_TARGET_PORT), never the environment of the process running the
//     deploy: the same inputs give the same definition on any machine. A
//     variable that is used but not set, without a default, is an error.
//   - Every service gets MYTHEX_VERSION, MYTHEX_SERVICE and (with a host)
//     MYTHEX_HOST in its environment.
//   - Compose attributes mythex does not carry (volumes, network drivers…)
//     are refused by name, not ignored.
//   - ports get host_ip 127.0.0.1 unless they name one, and must name a host
//     port; a service without networks joins "<project>_default".
//   - healthcheck.test must be exec form (["CMD", …]); CMD-SHELL and plain
//     strings are refused, since no config string may reach a shell.
//   - x-mythex.executable and working_dir are made absolute against the
//     compose file's directory.
//
// Problems are *FieldErrors naming the compose file, the service and the
// field, joined, matching ErrInvalid. An unreadable file gives the os error,
// wrapped.
func Resolve(ctx context.Context, in Input) (*Definition, error) {
	abs, err := filepath.Abs(in.ComposeFile)
	if err != nil {
		return nil, fmt.Errorf("definition: compose file %s: %w", in.ComposeFile, err)
	}
	content, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("definition: read compose file: %w", err)
	}
	e := &errs{file: abs}
	vars, err := interpolationVars(in, e)
	if err != nil {
		return nil, err
	}

	var unsupported []loader.UnsupportedAttribute
	unset := map[string]bool{}
	lookup := func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(abs),
		ConfigFiles: []types.ConfigFile{{Filename: abs, Content: content}},
		Environment: vars,
	}
	project, err := loader.LoadWithContext(ctx, details,
		func(o *loader.Options) {
			// The file's name: wins; it names the default network.
			o.SetProjectName(DefaultProject, false)
			o.Interpolate.LookupValue = lookup
			o.Interpolate.Substitute = strictSubstitute(unset)
		},
		loader.WithSupportedAttributes(supported, func(found []loader.UnsupportedAttribute) {
			unsupported = found
		}),
	)
	for _, name := range slices.Sorted(maps.Keys(unset)) {
		e.add("", "(interpolation)", "variable %s is used%s but not set; set it in mythex.yml under the host's vars, or give a default with ${%s:-value} (mythex sets %s, %s, %s and %s)",
			name, lineOf(content, name), name, VarVersion, VarHost, VarTarget, VarTargetPort)
	}
	for _, u := range unsupported {
		service, field := splitServicePath(u.Path)
		e.add(service, field, "is not supported by mythex, which would silently ignore it; remove it (mythex carries image, command, entrypoint, environment, env_file, labels, ports, networks (only their name), stop_grace_period, restart, healthcheck and x-mythex)")
	}
	if err != nil {
		if len(e.list) > 0 {
			return nil, e.err()
		}
		return nil, &FieldError{File: abs, Field: "(compose)", Msg: fmt.Sprintf("%v; see https://docs.docker.com/reference/compose-file/", err)}
	}
	if len(e.list) > 0 {
		return nil, e.err()
	}

	sum := hashOf(content)
	d := &Definition{
		Version: in.Version,
		Host:    in.Host,
		Source:  Source{File: abs, SHA256: sum},
	}
	for _, name := range slices.Sorted(maps.Keys(project.Services)) {
		if s, ok := convertService(e, details.WorkingDir, project.Services[name], project.Networks, d); ok {
			d.Services = append(d.Services, s)
		}
	}
	if len(e.list) > 0 {
		return nil, e.err()
	}
	if err := d.validate(abs); err != nil {
		return nil, err
	}
	if err := d.Seal(); err != nil {
		return nil, err
	}
	return d, nil
}

// interpolationVars builds the variables interpolation may see.
func interpolationVars(in Input, e *errs) (types.Mapping, error) {
	if err := CheckVersion(in.Version); err != nil {
		// The version is the caller's input (a flag), not the compose file's.
		return nil, err
	}
	vars := types.Mapping{VarVersion: in.Version}
	if in.Host != "" {
		vars[VarHost] = in.Host
	}
	if in.Target != "" {
		_, port, err := net.SplitHostPort(in.Target)
		if err != nil {
			return nil, &FieldError{File: e.file, Field: "(target)", Msg: fmt.Sprintf("host target %q is not host:port", in.Target)}
		}
		vars[VarTarget] = in.Target
		vars[VarTargetPort] = port
	}
	for k, v := range in.Fleet {
		vars[k] = v
	}
	for k, v := range in.Vars {
		switch {
		case !varNameRE.MatchString(k):
			e.add("", "(vars)", "variable name %q is not valid; use letters, digits and '_', not starting with a digit", k)
		case strings.HasPrefix(k, "MYTHEX_"):
			e.add("", "(vars)", "variable %s is reserved (the MYTHEX_ prefix belongs to mythex); rename it", k)
		default:
			vars[k] = v
		}
	}
	return vars, e.err()
}

// strictSubstitute is compose's substitution without its "variable is not
// set, defaulting to a blank string" warning: unset variables are recorded in
// unset and become errors.
func strictSubstitute(unset map[string]bool) func(string, template.Mapping) (string, error) {
	return func(s string, mapping template.Mapping) (string, error) {
		return template.SubstituteWithOptions(s, mapping,
			template.WithoutLogging,
			template.WithReplacementFunction(func(sub string, m template.Mapping, cfg *template.Config) (string, error) {
				v, applied, err := template.DefaultReplacementAppliedFunc(sub, m, cfg)
				if err == nil && !applied {
					unset[varName(sub)] = true
				}
				return v, err
			}))
	}
}

// varName extracts NAME from "$NAME", "${NAME}" or "${NAME…}".
func varName(sub string) string {
	s := strings.TrimPrefix(sub, "$")
	s = strings.TrimPrefix(s, "{")
	end := strings.IndexFunc(s, func(r rune) bool {
		return r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	if end >= 0 {
		s = s[:end]
	}
	return s
}

// lineOf returns " (line N)" for the first line of content using variable
// name, or "".
func lineOf(content []byte, name string) string {
	for i, line := range bytes.Split(content, []byte("\n")) {
		if bytes.Contains(line, []byte("${"+name)) || bytes.Contains(line, []byte("$"+name)) {
			return fmt.Sprintf(" (line %d)", i+1)
		}
	}
	return ""
}

// splitServicePath turns "services.api.volumes" into ("api", "volumes").
func splitServicePath(p tree.Path) (service, field string) {
	parts := p.Parts()
	if len(parts) >= 2 && parts[0] == "services" {
		return parts[1], strings.Join(parts[2:], ".")
	}
	return "", string(p)
}

// convertService maps one compose service to a Service; problems go to e.
func convertService(e *errs, dir string, c types.ServiceConfig, networks types.Networks, d *Definition) (Service, bool) {
	n := c.Name
	before := len(e.list)
	s := Service{
		Name:            n,
		Version:         d.Version,
		Image:           c.Image,
		Entrypoint:      slices.Clone([]string(c.Entrypoint)),
		Command:         slices.Clone([]string(c.Command)),
		StopGracePeriod: DefaultStopGracePeriod,
		Environment:     map[string]string{},
	}
	if c.StopGracePeriod != nil {
		s.StopGracePeriod = time.Duration(*c.StopGracePeriod)
	}
	for k, v := range c.Environment {
		if v == nil {
			e.add(n, "environment."+k, "has no value and no variable of that name is set; give it a value (%s: value) or set %s in the host's vars", k, k)
			continue
		}
		s.Environment[k] = *v
	}
	reserved := map[string]string{EnvVersion: d.Version, EnvService: n}
	if d.Host != "" {
		reserved[EnvHost] = d.Host
	}
	for k, want := range reserved {
		if got, ok := s.Environment[k]; ok && got != want {
			e.add(n, "environment."+k, "is %q but mythex sets %s to %q itself; remove it from the compose file", got, k, want)
		}
		s.Environment[k] = want
	}
	if len(c.Labels) > 0 {
		s.Labels = map[string]string{}
		for k, v := range c.Labels {
			s.Labels[k] = v
		}
	}
	s.Ports = convertPorts(e, n, c.Ports)
	s.Networks = convertNetworks(c.Networks, networks)
	s.Restart = parseRestart(e, n, c.Restart)
	s.Process = parseExtension(e, dir, n, c.Extensions)
	s.Healthcheck = convertHealthcheck(e, n, c.HealthCheck, s.Process)
	return s, len(e.list) == before
}

func parseRestart(e *errs, service, v string) RestartPolicy {
	if v == "" {
		return RestartPolicy{Policy: RestartNo}
	}
	policy, count, hasCount := strings.Cut(v, ":")
	r := RestartPolicy{Policy: policy}
	if hasCount {
		if policy != RestartOnFailure {
			e.add(service, "restart", "%q: a retry count applies only to on-failure; use on-failure:%s or %s", v, count, policy)
			return r
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 {
			e.add(service, "restart", "%q: the retry count must be a whole number 0 or more, e.g. on-failure:3", v)
			return r
		}
		r.MaxRetries = n
	}
	switch policy {
	case RestartNo, RestartAlways, RestartOnFailure, RestartUnlessStopped:
	default:
		e.add(service, "restart", "unknown restart policy %q; use one of no, always, on-failure[:max_retries], unless-stopped", v)
	}
	return r
}

// parseExtension reads the service's x-mythex mapping into a ProcessSpec.
func parseExtension(e *errs, dir, service string, ext types.Extensions) *ProcessSpec {
	raw, ok := ext[ExtensionKey]
	if !ok {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		e.add(service, ExtensionKey, "must be a mapping like {executable: ./bin/app, port: 9101, health_path: /healthz}, got %T", raw)
		return nil
	}
	known := []string{"executable", "working_dir", "port", "health_path"}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(known, k) {
			e.add(service, ExtensionKey+"."+k, "unknown key; known keys: %s", strings.Join(known, ", "))
		}
	}
	str := func(k string) string {
		v, ok := m[k]
		if !ok || v == nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			e.add(service, ExtensionKey+"."+k, "must be a string, got %v", v)
		}
		return s
	}
	p := &ProcessSpec{
		Executable: str("executable"),
		WorkingDir: str("working_dir"),
		HealthPath: str("health_path"),
	}
	if p.Executable == "" {
		e.add(service, ExtensionKey+".executable", "is required: the program the process runtime runs, relative to the compose file (e.g. ./bin/app)")
		return nil
	}
	p.Executable = absUnder(dir, p.Executable)
	if p.WorkingDir == "" {
		p.WorkingDir = dir
	}
	p.WorkingDir = absUnder(dir, p.WorkingDir)
	if v, ok := m["port"]; ok {
		port, ok := toPort(v)
		if !ok {
			e.add(service, ExtensionKey+".port", "must be a TCP port 1–65535, got %v", v)
		}
		p.Port = port
	}
	return p
}

func absUnder(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// toPort accepts a YAML number or, after interpolation, a string of digits.
func toPort(v any) (int, bool) {
	var n float64
	switch x := v.(type) {
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case uint64:
		n = float64(x)
	case float64:
		n = x
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, false
		}
		n = float64(i)
	default:
		return 0, false
	}
	if n != math.Trunc(n) || n < 1 || n > 65535 {
		return 0, false
	}
	return int(n), true
}

// convertHealthcheck resolves a compose healthcheck with Docker's defaults.
func convertHealthcheck(e *errs, service string, hc *types.HealthCheckConfig, p *ProcessSpec) *Healthcheck {
	httpCheck := p != nil && p.HealthPath != ""
	if hc != nil && (hc.Disable || (len(hc.Test) > 0 && hc.Test[0] == "NONE")) {
		if httpCheck {
			e.add(service, "healthcheck.disable", "the healthcheck is disabled but x-mythex.health_path is set; remove one of them")
		}
		return nil
	}
	if hc == nil && !httpCheck {
		return nil
	}
	h := &Healthcheck{
		Interval: DefaultHealthInterval,
		Timeout:  DefaultHealthTimeout,
		Retries:  DefaultHealthRetries,
	}
	explicitStart := false
	if hc != nil {
		if len(hc.Test) > 0 {
			switch hc.Test[0] {
			case "CMD":
				h.Test = slices.Clone([]string(hc.Test[1:]))
				if len(h.Test) == 0 {
					e.add(service, "healthcheck.test", `["CMD"] names no program; write test: ["CMD", "prog", "arg"]`)
				}
			case "CMD-SHELL":
				e.add(service, "healthcheck.test", `is in shell form (CMD-SHELL or a plain string), which would run through a shell; mythex never passes config to a shell: write the exec form test: ["CMD", "prog", "arg", …]`)
			default:
				e.add(service, "healthcheck.test", `must start with "CMD" (exec form), got %q; write test: ["CMD", "prog", "arg", …]`, hc.Test[0])
			}
		}
		if hc.Interval != nil {
			h.Interval = time.Duration(*hc.Interval)
		}
		if hc.Timeout != nil {
			h.Timeout = time.Duration(*hc.Timeout)
		}
		if hc.Retries != nil {
			if *hc.Retries > math.MaxInt32 {
				e.add(service, "healthcheck.retries", "%d is too large", *hc.Retries)
			} else {
				h.Retries = int(*hc.Retries)
			}
		}
		if hc.StartPeriod != nil {
			h.StartPeriod = time.Duration(*hc.StartPeriod)
		}
		if hc.StartInterval != nil {
			h.StartInterval = time.Duration(*hc.StartInterval)
			explicitStart = true
		}
	}
	if !explicitStart {
		h.StartInterval = min(DefaultHealthStartInterval, h.Interval)
	}
	return h
}

// convertPorts maps compose ports to Ports: host_ip defaults to
// DefaultPortHostIP, protocol to tcp; a port without a single host port
// (published empty, or a range) is refused.
func convertPorts(e *errs, service string, ports []types.ServicePortConfig) []Port {
	var out []Port
	for i, p := range ports {
		field := fmt.Sprintf("ports[%d]", i)
		if p.Published == "" {
			e.add(service, field, "container port %d has no host port; mythex never publishes on a random port (the load balancer must know where the service is): write \"127.0.0.1:<host port>:%d\"", p.Target, p.Target)
			continue
		}
		published, err := strconv.Atoi(p.Published)
		if err != nil {
			e.add(service, field+".published", "%q is not a single port; give one host port per container port, e.g. \"127.0.0.1:9111:%d\"", p.Published, p.Target)
			continue
		}
		port := Port{HostIP: p.HostIP, Published: published, Target: int(p.Target), Protocol: p.Protocol}
		if port.HostIP == "" {
			port.HostIP = DefaultPortHostIP
		}
		if port.Protocol == "" {
			port.Protocol = "tcp"
		}
		out = append(out, port)
	}
	return out
}

// convertNetworks resolves the service's compose networks to Docker network
// names, sorted. compose's loader has already given a service without
// networks the project's "default" network.
func convertNetworks(mine map[string]*types.ServiceNetworkConfig, all types.Networks) []string {
	var out []string
	for key := range mine {
		name := key
		if n, ok := all[key]; ok && n.Name != "" {
			name = n.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
