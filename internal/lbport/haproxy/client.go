// Package haproxy is the lbport.Driver of an HAProxy backend, over HAProxy's
// Runtime API (the stats socket, "management guide" §9.3): a fleet host is one
// `server` of one `backend`, deregistering it is `set server B/S state drain`,
// registering it again `set server B/S state ready`, and what HAProxy reports
// of it (`show stat`, `show servers state`) is mapped onto ALB target states.
//
// mythex never edits haproxy.cfg: it changes only the runtime state of
// servers the operator already configured, which a reload of HAProxy resets
// (unless the operator keeps server state across reloads with
// `load-server-state-from-file`).
package haproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/mythex/mythex/internal/lbport"
)

// DefaultTimeout bounds one Runtime API command (dial, write, read the whole
// answer) when the caller's context has no earlier deadline.
const DefaultTimeout = 5 * time.Second

// maxAnswer caps one answer: `show stat` of a large HAProxy is a few hundred
// KiB; anything beyond 16 MiB is not an answer we can use.
const maxAnswer = 16 << 20

// Address is a parsed Runtime API address.
type Address struct {
	// Network is "unix" or "tcp".
	Network string
	// Addr is the socket path (unix) or host:port (tcp).
	Addr string
}

// String formats a as written in mythex.yml: unix:/path or tcp:host:port.
func (a Address) String() string { return a.Network + ":" + a.Addr }

// ParseAddress parses a Runtime API address as written in mythex.yml:
// "unix:/run/haproxy/admin.sock" (an absolute socket path) or
// "tcp:127.0.0.1:9999" (host:port, as in HAProxy's `stats socket ipv4@...`).
func ParseAddress(s string) (Address, error) {
	network, rest, ok := strings.Cut(s, ":")
	switch {
	case !ok:
	case network == "unix":
		if !strings.HasPrefix(rest, "/") {
			return Address{}, fmt.Errorf("%q: a unix socket needs an absolute path, like unix:/run/haproxy/admin.sock", s)
		}
		return Address{Network: "unix", Addr: rest}, nil
	case network == "tcp":
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return Address{}, fmt.Errorf("%q: want tcp:host:port, like tcp:127.0.0.1:9999", s)
		}
		return Address{Network: "tcp", Addr: rest}, nil
	}
	return Address{}, fmt.Errorf("%q: want unix:/path/to/admin.sock or tcp:host:port", s)
}

// Client sends commands to HAProxy's Runtime API, one command per
// connection: HAProxy answers a command sent without `prompt` and closes the
// connection, so an answer ends at EOF and no state (prompt mode, a half-read
// answer after a timeout) survives between two commands. A connection costs a
// few tens of microseconds on a local socket, far below the deploy's polling
// interval. Client is safe for concurrent use.
type Client struct {
	addr   Address
	dialer net.Dialer
}

// NewClient returns a client of the Runtime API at addr.
func NewClient(addr Address) *Client { return &Client{addr: addr} }

// Address is where the client sends its commands.
func (c *Client) Address() Address { return c.addr }

// SocketError is a Runtime API that could not be reached or did not answer:
// the socket is missing, refused the connection, or timed out. It is
// transient (HAProxy may be reloading) unless the socket file is missing.
type SocketError struct {
	Addr Address
	Err  error
}

// Error says where and what, and for a missing socket the fix.
func (e *SocketError) Error() string {
	if e.missing() {
		return fmt.Sprintf("haproxy runtime API %s: the socket does not exist (is HAProxy running, and does haproxy.cfg have `stats socket %s level admin` in its global section?)", e.Addr, e.Addr.Addr)
	}
	return fmt.Sprintf("haproxy runtime API %s: %v", e.Addr, e.Err)
}

// Unwrap returns the network error.
func (e *SocketError) Unwrap() error { return e.Err }

// Transient is false only for a missing socket file.
func (e *SocketError) Transient() bool { return !e.missing() }

func (e *SocketError) missing() bool {
	return e.Addr.Network == "unix" && errors.Is(e.Err, os.ErrNotExist)
}

// Do sends one command and returns HAProxy's answer, trailing blank lines
// trimmed. cmd must be a single command: no newline, no ';' (HAProxy would
// run what follows as another command). Do does not interpret the answer;
// see Exec for commands whose answer is empty on success.
func (c *Client) Do(ctx context.Context, cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\n\r;") || cmd == "" {
		return "", fmt.Errorf("haproxy runtime API: refusing command %q: one command, no newline or ';'", cmd)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	conn, err := c.dialer.DialContext(ctx, c.addr.Network, c.addr.Addr)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &SocketError{Addr: c.addr, Err: unwrapSyscall(err)}
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", c.ioErr(ctx, cmd, err)
	}
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(conn), maxAnswer+1))
	if err != nil {
		return "", c.ioErr(ctx, cmd, err)
	}
	if len(b) > maxAnswer {
		return "", &lbport.UnexpectedError{Op: cmd, Detail: "answer larger than 16 MiB"}
	}
	return strings.TrimRight(string(b), "\n"), nil
}

func (c *Client) ioErr(ctx context.Context, cmd string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("haproxy runtime API %s: %s: %w", c.addr, cmd, ctx.Err())
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The only deadline on the connection is the context's.
		return fmt.Errorf("haproxy runtime API %s: %s: no answer: %w", c.addr, cmd, context.DeadlineExceeded)
	}
	return &SocketError{Addr: c.addr, Err: fmt.Errorf("%s: %w", cmd, err)}
}

// unwrapSyscall turns a dial error into its errno where there is one, so
// errors.Is(err, os.ErrNotExist) and syscall.ECONNREFUSED match.
func unwrapSyscall(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Errorf("%v: %w", err, errno)
	}
	return err
}

// Exec sends a command whose answer is empty on success (`set server`,
// `shutdown sessions server`) and maps a non-empty answer to an error:
// "Permission denied" to lbport.ErrUnauthorized, an unknown backend to
// lbport.ErrTargetGroupNotFound, an unknown server to lbport.ErrInvalidTarget,
// an unknown command to lbport.ErrUnsupported.
func (c *Client) Exec(ctx context.Context, cmd string) error {
	ans, err := c.Do(ctx, cmd)
	if err != nil {
		return err
	}
	return answerErr(cmd, ans)
}

// answerErr maps HAProxy's answer to a command to an error; nil for an empty
// answer. Query commands pass their answer's first line.
func answerErr(cmd, ans string) error {
	ans = strings.TrimSpace(ans)
	if ans == "" {
		return nil
	}
	first, _, _ := strings.Cut(ans, "\n")
	switch {
	case strings.HasPrefix(first, "Permission denied"):
		return fmt.Errorf("haproxy: %s: %w: the stats socket is not at level admin (put `level admin` on its `stats socket` line in haproxy.cfg)", cmd, lbport.ErrUnauthorized)
	case strings.HasPrefix(first, "No such backend"), strings.HasPrefix(first, "Can't find backend"),
		strings.HasPrefix(first, "No such proxy"):
		return fmt.Errorf("haproxy: %s: %w (%s)", cmd, lbport.ErrTargetGroupNotFound, first)
	case strings.HasPrefix(first, "No such server"):
		return fmt.Errorf("haproxy: %s: %w (%s)", cmd, lbport.ErrInvalidTarget, first)
	case strings.HasPrefix(first, "Unknown command"):
		return fmt.Errorf("haproxy: %s: %w: this HAProxy does not know the command", cmd, lbport.ErrUnsupported)
	}
	return &lbport.UnexpectedError{Op: "haproxy " + cmd, Detail: first}
}
