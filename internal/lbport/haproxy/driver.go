package haproxy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mythex/mythex/internal/lbport"
)

// Config configures a Driver.
type Config struct {
	// Client reaches the Runtime API. Required.
	Client *Client
	// Backend is the backend whose servers are the fleet's targets.
	// Required.
	Backend string
	// Servers maps a target's ID (the fleet host's name) to its server name
	// in the backend; an ID not listed is its own server name.
	Servers map[string]string
	// ConfigFile is the path of haproxy.cfg, read (never written) by
	// Settings for what the Runtime API does not expose (inter, timeout
	// check, the check path). Optional.
	ConfigFile string
}

// Driver drives one HAProxy backend through the Runtime API. It is safe for
// concurrent use.
//
// A reload of HAProxy (`systemctl reload haproxy`, `haproxy -sf`) starts a
// new process from haproxy.cfg: every server's runtime state is the file's
// again — a drain set before is lost — unless the operator keeps state across
// reloads (server-state-file, load-server-state-from-file). So the driver
// remembers the servers it set to drain and has not set ready since, and
// each Describe that finds one of them out of drain sets the drain again
// (and says so in the target's Description): a deploy's poll notices a
// reload, and puts back what it lost, within one poll.
type Driver struct {
	c       *Client
	backend string
	servers map[string]string
	cfgFile string

	// mu serialises the drain bookkeeping with the commands that change it,
	// so a Describe never sets drain again after Register set ready.
	mu        sync.Mutex
	drained   map[string]bool // by server name
	reapplied atomic.Int64
}

var (
	_ lbport.Driver        = (*Driver)(nil)
	_ lbport.SessionCutter = (*Driver)(nil)
)

// nameRE is what HAProxy accepts as a proxy or server name (letters, digits,
// '-', '_', '.', ':'); anything else could smuggle a second command.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// ValidName reports whether s can name an HAProxy backend or server.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// New returns a driver of cfg.Backend. It checks names only; Preflight
// checks them against HAProxy.
func New(cfg Config) (*Driver, error) {
	if cfg.Client == nil {
		return nil, errors.New("haproxy driver: no Runtime API client")
	}
	if !ValidName(cfg.Backend) {
		return nil, fmt.Errorf("haproxy driver: backend %q: want a name of letters, digits, '-', '_', '.', ':'", cfg.Backend)
	}
	servers := map[string]string{}
	for id, s := range cfg.Servers {
		if !ValidName(s) {
			return nil, fmt.Errorf("haproxy driver: server %q of %s: want a name of letters, digits, '-', '_', '.', ':'", s, id)
		}
		servers[id] = s
	}
	return &Driver{c: cfg.Client, backend: cfg.Backend, servers: servers, cfgFile: cfg.ConfigFile, drained: map[string]bool{}}, nil
}

// Kind is "haproxy".
func (d *Driver) Kind() string { return "haproxy" }

// Backend is the driven backend's name.
func (d *Driver) Backend() string { return d.backend }

// Server is the server name of target id.
func (d *Driver) Server(id string) string {
	if s, ok := d.servers[id]; ok {
		return s
	}
	return id
}

func (d *Driver) path(t lbport.TargetRef) (string, error) {
	s := d.Server(t.ID)
	if !ValidName(s) {
		return "", fmt.Errorf("haproxy: server %q: %w: not an HAProxy server name", s, lbport.ErrInvalidTarget)
	}
	return d.backend + "/" + s, nil
}

// Register puts the server back in rotation: `set server B/S state ready`.
// With a health check HAProxy then needs `rise` passing checks (Describe
// reports initial meanwhile); without one it routes to it at once. The wait
// is the caller's.
func (d *Driver) Register(ctx context.Context, t lbport.TargetRef) error {
	p, err := d.path(t)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.drained, d.Server(t.ID))
	return d.c.Exec(ctx, "set server "+p+" state ready")
}

// Deregister starts draining the server: `set server B/S state drain`. New
// requests stop going to it (sticky sessions included), health checks go on,
// open sessions finish. HAProxy has no deregistration timer: the caller
// bounds the drain and may then call CutSessions. An unknown server is not
// an error, as in ELBv2.
func (d *Driver) Deregister(ctx context.Context, t lbport.TargetRef) error {
	p, err := d.path(t)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	err = d.c.Exec(ctx, "set server "+p+" state drain")
	if errors.Is(err, lbport.ErrInvalidTarget) {
		return nil
	}
	if err == nil {
		d.drained[d.Server(t.ID)] = true
	}
	return err
}

// Reapplied is how many times Describe found a server this driver had set
// to drain out of drain (HAProxy reloaded) and set the drain again.
func (d *Driver) Reapplied() int64 { return d.reapplied.Load() }

// reapplyDrains sets drain again on every server this driver drained that
// states shows out of drain and maintenance, marks it drained in states,
// and returns the servers it put back in drain.
func (d *Driver) reapplyDrains(ctx context.Context, states map[string]ServerState) (map[string]bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var again map[string]bool
	for name := range d.drained {
		st, ok := states[name]
		if !ok || st.Admin.Drain() || st.Admin.Maint() {
			continue
		}
		if err := d.c.Exec(ctx, "set server "+d.backend+"/"+name+" state drain"); err != nil {
			return again, fmt.Errorf("set the drain of %s/%s again after HAProxy lost it: %w", d.backend, name, err)
		}
		d.reapplied.Add(1)
		st.Admin |= AdminForcedDrain
		states[name] = st
		if again == nil {
			again = map[string]bool{}
		}
		again[name] = true
	}
	return again, nil
}

// Maintenance puts the server in maintenance: `set server B/S state maint`.
// Unlike drain it also stops health checks and, with `on-marked-down
// shutdown-sessions`, ends sessions: for a host that is going away rather
// than being replaced.
func (d *Driver) Maintenance(ctx context.Context, t lbport.TargetRef) error {
	p, err := d.path(t)
	if err != nil {
		return err
	}
	return d.c.Exec(ctx, "set server "+p+" state maint")
}

// CutSessions closes the server's open sessions: `shutdown sessions server
// B/S`. The requests on them fail; the deployer calls it only at the
// deregistration bound.
func (d *Driver) CutSessions(ctx context.Context, t lbport.TargetRef) error {
	p, err := d.path(t)
	if err != nil {
		return err
	}
	return d.c.Exec(ctx, "shutdown sessions server "+p)
}

// Describe reports the targets in the order given, from one `show stat` and
// one `show servers state` of the backend (see targetOf for the mapping). A
// server the backend does not have is unused, Target.NotRegistered; an
// unknown backend is lbport.ErrTargetGroupNotFound.
func (d *Driver) Describe(ctx context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	stats, states, err := d.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	again, err := d.reapplyDrains(ctx, states)
	if err != nil {
		return nil, err
	}
	out := make([]lbport.Target, 0, len(ts))
	for _, t := range ts {
		name := d.Server(t.ID)
		var sp *ServerStat
		for i := range stats {
			if stats[i].Server == name {
				sp = &stats[i]
				break
			}
		}
		var st *ServerState
		if s, ok := states[name]; ok {
			st = &s
		}
		tg := targetOf(t, sp, st)
		if again[name] {
			tg.Description = "HAProxy had lost the drain (reloaded without a server-state-file?): set again; " + tg.Description
		}
		out = append(out, tg)
	}
	return out, nil
}

// snapshot reads the backend's `show stat` and `show servers state`.
func (d *Driver) snapshot(ctx context.Context) ([]ServerStat, map[string]ServerState, error) {
	ans, err := d.c.Do(ctx, "show stat "+d.backend+" 4 -1")
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasPrefix(strings.TrimSpace(ans), "#") {
		if err := answerErr("show stat "+d.backend, ans); err != nil {
			return nil, nil, err
		}
	}
	stats, err := ParseStat(ans, d.backend)
	if err != nil {
		return nil, nil, err
	}
	ans, err = d.c.Do(ctx, "show servers state "+d.backend)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasPrefix(strings.TrimSpace(ans), "1") {
		if err := answerErr("show servers state "+d.backend, ans); err != nil {
			return nil, nil, err
		}
	}
	states, err := ParseServersState(ans)
	if err != nil {
		return nil, nil, err
	}
	return stats, states, nil
}

// Settings reads the health check: rise and fall from `show stat` (the
// Runtime API exposes them per server; the first checked server of the
// backend is reported), inter, timeout check and the check path only from
// the haproxy.cfg given as Config.ConfigFile. Without the file Interval and
// Timeout are 0 (unknown). DeregistrationDelay is always 0: HAProxy has none.
func (d *Driver) Settings(ctx context.Context) (lbport.Settings, error) {
	stats, _, err := d.snapshot(ctx)
	if err != nil {
		return lbport.Settings{}, err
	}
	var s lbport.Settings
	for _, st := range stats {
		if st.HasCheck() && st.CheckRise > 0 {
			s.HealthCheck.HealthyThreshold, s.HealthCheck.UnhealthyThreshold = st.CheckRise, st.CheckFall
			break
		}
	}
	if d.cfgFile == "" {
		return s, nil
	}
	bc, err := ReadConfig(d.cfgFile, d.backend)
	if err != nil {
		return s, err
	}
	s.HealthCheck.Path = bc.CheckPath
	for _, name := range bc.Order {
		sc := bc.Servers[name]
		if !sc.Check {
			continue
		}
		s.HealthCheck.Interval, s.HealthCheck.Timeout = sc.Inter, bc.CheckTimeout(sc)
		if s.HealthCheck.HealthyThreshold == 0 {
			s.HealthCheck.HealthyThreshold, s.HealthCheck.UnhealthyThreshold = sc.Rise, sc.Fall
		}
		break
	}
	return s, nil
}

// Apply is lbport.ErrUnsupported: HAProxy's check settings live in
// haproxy.cfg, which mythex never edits.
func (d *Driver) Apply(context.Context, lbport.Settings) error {
	return fmt.Errorf("apply haproxy backend settings: %w: inter, fall, rise and timeout check live in haproxy.cfg, which mythex does not edit; change them there and reload HAProxy", lbport.ErrUnsupported)
}
