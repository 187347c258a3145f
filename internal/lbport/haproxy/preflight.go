package haproxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mythex/mythex/internal/lbport"
)

// MinVersion is the oldest HAProxy the driver drives: `show cli level`,
// `set server ... state drain`, and `show stat` with check_rise/check_fall
// columns are all there from 2.0 on (Debian bullseye ships 2.2, bookworm 2.6).
var MinVersion = [2]int{2, 0}

// ErrTooOld: the HAProxy answering is older than MinVersion. It wraps
// lbport.ErrUnsupported.
var ErrTooOld = fmt.Errorf("HAProxy too old: %w", lbport.ErrUnsupported)

// Report is what Preflight found.
type Report struct {
	// Version is HAProxy's version, e.g. "2.6.12-1+deb12u4".
	Version string
	// Servers are the backend's servers as `show stat` reports them, by
	// server name.
	Servers map[string]ServerStat
	// NoCheck lists the fleet's servers that have no health check: HAProxy
	// cannot take them out of rotation on a failing check, so a drain by
	// health check cannot be proved for them.
	NoCheck []string
}

// Preflight checks, changing nothing, that the driver can drive the
// backend's servers for the targets ids: the socket answers at level admin,
// HAProxy is at least MinVersion, the backend exists and has every server.
// Errors: a *SocketError (socket missing or refused), lbport.ErrUnauthorized
// (not level admin), ErrTooOld, lbport.ErrTargetGroupNotFound,
// lbport.ErrInvalidTarget naming every missing server; each says the fix.
func (d *Driver) Preflight(ctx context.Context, ids []string) (Report, error) {
	var r Report
	info, err := d.c.Do(ctx, "show info")
	if err != nil {
		return r, err
	}
	if err := answerErr("show info", firstLineIfError(info, "Name:")); err != nil {
		return r, err
	}
	r.Version = infoField(info, "Version")
	if !versionAtLeast(r.Version, MinVersion) {
		return r, fmt.Errorf("haproxy %s at %s: %w: mythex needs %d.%d or newer for `set server ... state drain` and `show cli level`", orNone(r.Version), d.c.Address(), ErrTooOld, MinVersion[0], MinVersion[1])
	}
	level, err := d.c.Do(ctx, "show cli level")
	if err != nil {
		return r, err
	}
	switch lv := strings.TrimSpace(level); lv {
	case "admin":
	case "user", "operator", "Permission denied":
		return r, fmt.Errorf("haproxy runtime API %s answers at level %q: %w; mythex changes server states, which needs `level admin` on the `stats socket` line of haproxy.cfg's global section (e.g. `stats socket /run/haproxy/admin.sock mode 600 level admin`)",
			d.c.Address(), lv, lbport.ErrUnauthorized)
	default:
		return r, answerErr("show cli level", level)
	}
	stats, _, err := d.snapshot(ctx)
	if err != nil {
		if errors.Is(err, lbport.ErrTargetGroupNotFound) {
			return r, fmt.Errorf("haproxy backend %q: %w: set load_balancer.backend to a backend of haproxy.cfg", d.backend, lbport.ErrTargetGroupNotFound)
		}
		return r, err
	}
	r.Servers = map[string]ServerStat{}
	for _, s := range stats {
		r.Servers[s.Server] = s
	}
	var missing []string
	for _, id := range ids {
		name := d.Server(id)
		s, ok := r.Servers[name]
		if !ok {
			missing = append(missing, fmt.Sprintf("%s (host %s)", name, id))
			continue
		}
		if !s.HasCheck() {
			r.NoCheck = append(r.NoCheck, name)
		}
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(stats))
		for _, s := range stats {
			have = append(have, s.Server)
		}
		return r, fmt.Errorf("haproxy backend %q has no server %s: %w; it has %s — set hosts[].server to the name on the `server` line",
			d.backend, strings.Join(missing, ", "), lbport.ErrInvalidTarget, strings.Join(have, ", "))
	}
	return r, nil
}

// firstLineIfError returns ans when it does not start with want (so that
// answerErr can map it), else "".
func firstLineIfError(ans, want string) string {
	if strings.HasPrefix(strings.TrimSpace(ans), want) {
		return ""
	}
	if strings.TrimSpace(ans) == "" {
		return "empty answer"
	}
	return ans
}

// infoField returns the value of `Key: value` in a `show info` answer.
func infoField(info, key string) string {
	for _, l := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// versionAtLeast reports whether an HAProxy version string ("2.6.12-1+deb12u4",
// "3.0-dev5") is at least min (major, minor).
func versionAtLeast(v string, min [2]int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minorDigits := parts[1]
	if i := strings.IndexFunc(minorDigits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorDigits = minorDigits[:i]
	}
	minor, err2 := strconv.Atoi(minorDigits)
	if err1 != nil || err2 != nil {
		return false
	}
	return major > min[0] || (major == min[0] && minor >= min[1])
}
