package haproxy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	parser "github.com/haproxytech/config-parser/v5"
	cperrors "github.com/haproxytech/config-parser/v5/errors"
	"github.com/haproxytech/config-parser/v5/options"
	"github.com/haproxytech/config-parser/v5/params"
	"github.com/haproxytech/config-parser/v5/types"

	"github.com/mythex/mythex/internal/lbport"
)

// HAProxy's health check defaults (configuration manual, `inter`, `fall`,
// `rise`): a check every 2s, 3 failures make a server DOWN, 2 passes UP.
const (
	DefaultInter = 2 * time.Second
	DefaultFall  = 3
	DefaultRise  = 2
)

// ServerConfig is one `server` line of a backend in haproxy.cfg, with the
// backend's and defaults' `default-server` applied.
type ServerConfig struct {
	// Name and Address as written.
	Name, Address string
	// Check is true when the server has the `check` keyword: without it
	// HAProxy never checks the server and always routes to it while ready.
	Check bool
	// Inter is the time between two checks (`inter`; default 2s).
	Inter time.Duration
	// Fall and Rise are the consecutive failed and passed checks that make
	// the server DOWN and UP (defaults 3 and 2).
	Fall, Rise int
}

// BackendConfig is what mythex reads of one backend of haproxy.cfg.
type BackendConfig struct {
	// Name is the backend's name.
	Name string
	// Servers by name, in file order in Order.
	Servers map[string]ServerConfig
	Order   []string
	// CheckPath is the URI of `option httpchk`; "" without one (HAProxy
	// then checks only that a TCP connection opens).
	CheckPath string
	// TimeoutCheck is `timeout check` of the backend or its defaults; 0 when
	// unset (HAProxy then bounds a check by inter).
	TimeoutCheck time.Duration
}

// CheckTimeout is how long one check of s may take: `timeout check` when
// set, else inter (HAProxy's rule).
func (b BackendConfig) CheckTimeout(s ServerConfig) time.Duration {
	if b.TimeoutCheck > 0 {
		return b.TimeoutCheck
	}
	return s.Inter
}

// ReadConfig reads backend from the haproxy.cfg at path with haproxytech's
// config-parser; the file is only read, never written. Errors: the file
// cannot be read or parsed, lbport.ErrTargetGroupNotFound when it has no
// such backend.
func ReadConfig(path, backend string) (BackendConfig, error) {
	p, err := parser.New(options.Path(path))
	if err != nil {
		return BackendConfig{}, fmt.Errorf("read haproxy config %s: %w", path, err)
	}
	names, _ := p.SectionsGet(parser.Backends)
	if !contains(names, backend) {
		return BackendConfig{}, fmt.Errorf("haproxy config %s: backend %q: %w (backends: %s)", path, backend, lbport.ErrTargetGroupNotFound, strings.Join(names, ", "))
	}
	defs, _ := p.SectionsDefaultsFromGet(parser.Backends, backend)
	b := BackendConfig{Name: backend, Servers: map[string]ServerConfig{}}

	// default-server lines: the defaults section's first, the backend's over them.
	base := ServerConfig{Inter: DefaultInter, Fall: DefaultFall, Rise: DefaultRise}
	var perr error
	if defs != "" {
		if v, err := p.Get(parser.Defaults, defs, "default-server"); err == nil {
			for _, ds := range v.([]types.DefaultServer) {
				base, perr = applyServerParams(base, ds.Params)
				if perr != nil {
					return BackendConfig{}, fmt.Errorf("haproxy config %s: defaults default-server: %w", path, perr)
				}
			}
		}
	}
	if v, err := p.Get(parser.Backends, backend, "default-server"); err == nil {
		for _, ds := range v.([]types.DefaultServer) {
			base, perr = applyServerParams(base, ds.Params)
			if perr != nil {
				return BackendConfig{}, fmt.Errorf("haproxy config %s: backend %s default-server: %w", path, backend, perr)
			}
		}
	}
	if v, err := p.Get(parser.Backends, backend, "server"); err == nil {
		for _, s := range v.([]types.Server) {
			sc, err := applyServerParams(base, s.Params)
			if err != nil {
				return BackendConfig{}, fmt.Errorf("haproxy config %s: backend %s server %s: %w", path, backend, s.Name, err)
			}
			sc.Name, sc.Address = s.Name, s.Address
			b.Servers[s.Name] = sc
			b.Order = append(b.Order, s.Name)
		}
	}
	// option httpchk and timeout check: the backend's, else its defaults'.
	for _, sec := range []struct {
		t    parser.Section
		name string
	}{{parser.Backends, backend}, {parser.Defaults, defs}} {
		if sec.name == "" {
			continue
		}
		if v, err := p.Get(sec.t, sec.name, "option httpchk"); err == nil && b.CheckPath == "" {
			if hc, ok := v.(*types.OptionHttpchk); ok && !hc.NoOption {
				b.CheckPath = hc.URI
				if b.CheckPath == "" {
					b.CheckPath = "/"
				}
			}
		}
		if v, err := p.Get(sec.t, sec.name, "timeout check"); err == nil && b.TimeoutCheck == 0 {
			if tc, ok := v.(*types.SimpleTimeout); ok {
				d, err := ParseDuration(tc.Value)
				if err != nil {
					return BackendConfig{}, fmt.Errorf("haproxy config %s: timeout check: %w", path, err)
				}
				b.TimeoutCheck = d
			}
		} else if err != nil && !errors.Is(err, cperrors.ErrFetch) && !errors.Is(err, cperrors.ErrSectionMissing) {
			return BackendConfig{}, fmt.Errorf("haproxy config %s: %w", path, err)
		}
	}
	return b, nil
}

// applyServerParams applies the health-check keywords of a server or
// default-server line to s.
func applyServerParams(s ServerConfig, ps []params.ServerOption) (ServerConfig, error) {
	for _, o := range ps {
		switch o := o.(type) {
		case *params.ServerOptionWord:
			switch o.Name {
			case "check":
				s.Check = true
			case "no-check":
				s.Check = false
			}
		case *params.ServerOptionValue:
			var err error
			switch o.Name {
			case "inter":
				s.Inter, err = ParseDuration(o.Value)
			case "fall":
				s.Fall, err = positiveInt(o.Value)
			case "rise":
				s.Rise, err = positiveInt(o.Value)
			}
			if err != nil {
				return s, fmt.Errorf("%s %s: %w", o.Name, o.Value, err)
			}
		}
	}
	return s, nil
}

func positiveInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a whole number of at least 1")
	}
	return n, nil
}

// ParseDuration parses an HAProxy time value: a number with an optional unit
// us, ms, s, m, h or d; no unit means milliseconds.
func ParseDuration(s string) (time.Duration, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("HAProxy time %q: want a number with an optional unit (us, ms, s, m, h, d)", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("HAProxy time %q: %w", s, err)
	}
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := unit[s[i:]]
	if !ok {
		return 0, fmt.Errorf("HAProxy time %q: unknown unit %q (us, ms, s, m, h, d)", s, s[i:])
	}
	if n > int64(365*24*time.Hour/u) {
		return 0, fmt.Errorf("HAProxy time %q: too long", s)
	}
	return time.Duration(n) * u, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
