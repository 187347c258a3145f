package haproxy

import (
	"strconv"
	"strings"

	"github.com/mythex/mythex/internal/lbport"
)

// AdminState is a server's administrative state bitmask as `show servers
// state` reports it (srv_admin_state; HAProxy's enum srv_admin).
type AdminState uint8

// Admin state bits.
const (
	// AdminForcedMaint: `set server ... state maint` (or `disable server`).
	AdminForcedMaint AdminState = 0x01
	// AdminInheritedMaint: the server tracks one in maintenance.
	AdminInheritedMaint AdminState = 0x02
	// AdminConfigMaint: `disabled` in haproxy.cfg.
	AdminConfigMaint AdminState = 0x04
	// AdminForcedDrain: `set server ... state drain`.
	AdminForcedDrain AdminState = 0x08
	// AdminInheritedDrain: the server tracks one in drain.
	AdminInheritedDrain AdminState = 0x10
	// AdminResolveMaint: DNS resolution failed.
	AdminResolveMaint AdminState = 0x20
	// AdminHostnameMaint: the FQDN resolved to no address.
	AdminHostnameMaint AdminState = 0x40
)

// Maint reports whether any maintenance bit is set.
func (a AdminState) Maint() bool {
	return a&(AdminForcedMaint|AdminInheritedMaint|AdminConfigMaint|AdminResolveMaint|AdminHostnameMaint) != 0
}

// Drain reports whether a drain bit is set.
func (a AdminState) Drain() bool { return a&(AdminForcedDrain|AdminInheritedDrain) != 0 }

// ServerState is one server's line of `show servers state <backend>`.
type ServerState struct {
	// Backend and Server name the server.
	Backend, Server string
	// OpState is srv_op_state: 0 stopped, 1 starting, 2 running, 3 stopping.
	OpState int
	// Admin is srv_admin_state.
	Admin AdminState
}

// ParseServersState parses the answer of `show servers state` (format
// version 1: a version line, a "# be_id be_name ..." header, one line per
// server) into a map by server name.
func ParseServersState(answer string) (map[string]ServerState, error) {
	lines := strings.Split(strings.TrimSpace(answer), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "1" {
		first := ""
		if len(lines) > 0 {
			first = lines[0]
		}
		return nil, &lbport.UnexpectedError{Op: "haproxy show servers state", Detail: "not format version 1: " + first}
	}
	col := map[string]int{}
	out := map[string]ServerState{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] == "#" {
			for i, name := range f[1:] {
				col[name] = i
			}
			continue
		}
		at := func(name string) string {
			i, ok := col[name]
			if !ok || i >= len(f) {
				return ""
			}
			return f[i]
		}
		op, err1 := strconv.Atoi(at("srv_op_state"))
		adm, err2 := strconv.Atoi(at("srv_admin_state"))
		if err1 != nil || err2 != nil || at("srv_name") == "" {
			return nil, &lbport.UnexpectedError{Op: "haproxy show servers state", Detail: "unreadable line: " + l}
		}
		out[at("srv_name")] = ServerState{Backend: at("be_name"), Server: at("srv_name"), OpState: op, Admin: AdminState(adm)}
	}
	return out, nil
}
