package runtime

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listener is a process listening on a TCP port, as PortHolder finds it.
type Listener struct {
	// PID is the process holding the listening socket; 0 when it is a
	// process this one may not look into (another user's).
	PID int
	// Command is its command line, cut to 120 bytes; "" when PID is 0.
	Command string
}

// String names the holder for error messages: "pid 1234 (app --listen …)".
func (l Listener) String() string {
	if l.PID == 0 {
		return "a process this agent cannot see (another user's)"
	}
	return fmt.Sprintf("pid %d (%s)", l.PID, l.Command)
}

// PortHolder finds who listens on TCP port (IPv4 or IPv6, any address):
// the listening sockets from /proc/net/tcp{,6} (state 0A), their owner from
// the socket links in /proc/*/fd — what `ss -ltnp` reports. ok false when
// nobody listens. Linux only.
//
// It first tries to bind the port's wildcard address: when that succeeds
// nobody listens, and the tables are not read at all. /proc/net/tcp lists
// every socket of the host, time-wait ones included, formatted by the
// kernel on each read: on a busy host that is tens of thousands of lines
// per service start.
func PortHolder(port int) (Listener, bool) {
	if portFree(port) {
		return Listener{}, false
	}
	inodes := listeningInodes(port)
	if len(inodes) == 0 {
		return Listener{}, false
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		ino, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"), 10, 64)
		if !inodes[ino] {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
		return Listener{PID: pid, Command: Cmdline(pid)}, true
	}
	return Listener{}, true
}

// portFree reports whether binding TCP port on the wildcard address (IPv6
// and IPv4 where the host has both, else IPv4) succeeds, and closes what it
// bound. A listener on any address of the port, IPv4 or IPv6, makes that
// bind fail (Linux refuses a wildcard bind beside a listening socket of the
// same port even with SO_REUSEADDR, which Go sets); so does a port this
// process may not bind (below 1024 without the capability), for which
// false only means "look".
func portFree(port int) bool {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// Cmdline is pid's command line, space-separated and cut to 120 bytes; "?"
// when it cannot be read.
func Cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// listeningInodes returns the socket inodes listening on TCP port.
func listeningInodes(port int) map[uint64]bool {
	out := map[uint64]bool{}
	hexPort := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], hexPort) {
				continue
			}
			if ino, err := strconv.ParseUint(fields[9], 10, 64); err == nil && ino != 0 {
				out[ino] = true
			}
		}
	}
	return out
}
