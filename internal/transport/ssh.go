package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Errors of DialSSH, matched with errors.Is.
var (
	// ErrUnknownHostKey: the host is not in known_hosts. The error shows the
	// key's fingerprint; add it with ssh-keyscan after checking it.
	ErrUnknownHostKey = errors.New("host key not in known_hosts")
	// ErrChangedHostKey: known_hosts has another key for the host — a
	// reinstalled host, or someone in the middle. Refused.
	ErrChangedHostKey = errors.New("host key differs from known_hosts")
	// ErrNoSSHKeys: neither ssh-agent nor an identity file offered a key.
	ErrNoSSHKeys = errors.New("no SSH key: start ssh-agent (SSH_AUTH_SOCK) or give an identity file")
)

// SSHOptions configure DialSSH. Zero values take OpenSSH's defaults.
type SSHOptions struct {
	// KnownHosts are known_hosts files. Default ~/.ssh/known_hosts.
	KnownHosts []string
	// IdentityFiles are private key files tried after ssh-agent. Default
	// ~/.ssh/id_ed25519, id_ecdsa and id_rsa, those that exist.
	IdentityFiles []string
	// NoAgent skips ssh-agent even when SSH_AUTH_SOCK is set.
	NoAgent bool
	// Timeout bounds the TCP connect and the SSH handshake. Default 10s.
	Timeout time.Duration
}

// SSHTarget is "user@host[:port]" parsed; port defaults to 22 and user to
// the current user.
type SSHTarget struct {
	User, Addr string
}

// ParseSSHTarget parses hosts[].ssh: "deploy@10.0.0.5", "deploy@web-1:2222",
// "web-1". Errors say what a valid one looks like.
func ParseSSHTarget(s string) (SSHTarget, error) {
	var t SSHTarget
	host := s
	if i := strings.LastIndex(s, "@"); i >= 0 {
		t.User, host = s[:i], s[i+1:]
		if t.User == "" {
			return t, fmt.Errorf("ssh %q: empty user before @; write user@host[:port]", s)
		}
	}
	if host == "" || strings.ContainsAny(host, " /") {
		return t, fmt.Errorf("ssh %q: write user@host[:port], e.g. deploy@10.0.0.5", s)
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "22")
	}
	t.Addr = host
	if t.User == "" {
		if u, err := user.Current(); err == nil {
			t.User = u.Username
		}
	}
	return t, nil
}

// ErrTunnelClosed is matched by DialContext's error after Close.
var ErrTunnelClosed = errors.New("ssh tunnel closed")

// SSHTunnel is one SSH connection to a host; DialContext opens a
// "direct-tcpip" channel through it to an address as seen from the host (the
// agent's loopback listener). When the connection breaks (a dropped network,
// a restarted sshd), the next DialContext connects again — verifying the host
// key again — so a deploy's bounded retries carry it over the break. Safe for
// concurrent use. Close ends the connection for good.
type SSHTunnel struct {
	target SSHTarget
	opts   SSHOptions

	mu     sync.Mutex
	conn   *sshConn
	closed bool
}

// sshConn is one SSH connection; dead is closed once it has ended.
type sshConn struct {
	client *ssh.Client
	dead   chan struct{}
}

func newSSHConn(c *ssh.Client) *sshConn {
	sc := &sshConn{client: c, dead: make(chan struct{})}
	go func() {
		_ = c.Wait()
		close(sc.dead)
	}()
	return sc
}

func (sc *sshConn) ended() bool {
	select {
	case <-sc.dead:
		return true
	default:
		return false
	}
}

// DialSSH connects to t, verifies the host key against known_hosts and
// authenticates with ssh-agent and identity files. Errors: ErrUnknownHostKey
// or ErrChangedHostKey (with the fingerprint), ErrNoSSHKeys, the network's
// or the server's refusal.
func DialSSH(ctx context.Context, t SSHTarget, o SSHOptions) (*SSHTunnel, error) {
	o = o.withDefaults()
	sc, err := connectSSH(ctx, t, o)
	if err != nil {
		return nil, err
	}
	return &SSHTunnel{target: t, opts: o, conn: sc}, nil
}

// withDefaults fills in OpenSSH's defaults.
func (o SSHOptions) withDefaults() SSHOptions {
	home, _ := os.UserHomeDir()
	if len(o.KnownHosts) == 0 {
		o.KnownHosts = []string{filepath.Join(home, ".ssh", "known_hosts")}
	}
	if o.IdentityFiles == nil {
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			if p := filepath.Join(home, ".ssh", n); fileExists(p) {
				o.IdentityFiles = append(o.IdentityFiles, p)
			}
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return o
}

// connectSSH makes one SSH connection to t with o (defaults filled in).
func connectSSH(ctx context.Context, t SSHTarget, o SSHOptions) (*sshConn, error) {
	hostKeys, err := knownhosts.New(o.KnownHosts...)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	auth, closeAgent, err := authMethods(o)
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	cfg := &ssh.ClientConfig{
		User:            t.User,
		Auth:            auth,
		HostKeyCallback: verifyHostKey(hostKeys),
		Timeout:         o.Timeout,
	}
	d := net.Dialer{Timeout: o.Timeout}
	conn, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return nil, fmt.Errorf("ssh %s@%s: %w", t.User, t.Addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(o.Timeout))
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, t.Addr, cfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s@%s: %w", t.User, t.Addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return newSSHConn(ssh.NewClient(c, chans, reqs)), nil
}

// verifyHostKey wraps known_hosts checking so that an unknown or changed key
// is refused with the key's fingerprint and what to do.
func verifyHostKey(cb ssh.HostKeyCallback) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(hostname, remote, key)
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) {
			fp := ssh.FingerprintSHA256(key)
			if len(ke.Want) == 0 {
				return fmt.Errorf("%w: %s offers %s %s; check it out of band, then add it (ssh-keyscan -p PORT HOST >> ~/.ssh/known_hosts)",
					ErrUnknownHostKey, hostname, key.Type(), fp)
			}
			return fmt.Errorf("%w: %s offers %s %s but known_hosts line %d has %s; refused (a reinstalled host needs its old line removed)",
				ErrChangedHostKey, hostname, key.Type(), fp, ke.Want[0].Line, ssh.FingerprintSHA256(ke.Want[0].Key))
		}
		return err
	}
}

func authMethods(o SSHOptions) ([]ssh.AuthMethod, func(), error) {
	var signers []ssh.Signer
	closeAgent := func() {}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && !o.NoAgent {
		if conn, err := net.Dial("unix", sock); err == nil {
			if s, err := agent.NewClient(conn).Signers(); err == nil {
				signers = append(signers, s...)
			}
			closeAgent = func() { conn.Close() }
		}
	}
	for _, p := range o.IdentityFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			closeAgent()
			return nil, nil, fmt.Errorf("identity file: %w", err)
		}
		s, err := ssh.ParsePrivateKey(b)
		var pe *ssh.PassphraseMissingError
		if errors.As(err, &pe) {
			continue // encrypted: only usable through ssh-agent
		}
		if err != nil {
			closeAgent()
			return nil, nil, fmt.Errorf("identity file %s: %w", p, err)
		}
		signers = append(signers, s)
	}
	if len(signers) == 0 {
		closeAgent()
		return nil, nil, ErrNoSSHKeys
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, closeAgent, nil
}

// live returns the tunnel's connection, connecting again when the last one
// ended. Errors: ErrTunnelClosed after Close; DialSSH's.
func (t *SSHTunnel) live(ctx context.Context) (*sshConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("ssh %s@%s: %w", t.target.User, t.target.Addr, ErrTunnelClosed)
	}
	if !t.conn.ended() {
		return t.conn, nil
	}
	sc, err := connectSSH(ctx, t.target, t.opts)
	if err != nil {
		return nil, fmt.Errorf("reconnect: %w", err)
	}
	t.conn = sc
	return sc, nil
}

// DialContext opens a channel to addr (host:port as the remote host sees
// it). It fits http.Transport.DialContext; the network must be tcp. A
// connection found broken is made again once (host key checked again).
func (t *SSHTunnel) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("ssh tunnel: network %q: only tcp", network)
	}
	sc, err := t.live(ctx)
	if err != nil {
		return nil, err
	}
	c, err := t.channel(ctx, sc, addr)
	var refused *ssh.OpenChannelError
	if err == nil || ctx.Err() != nil || errors.As(err, &refused) {
		// A refusal is the host's answer (nothing listens there): the
		// connection is fine.
		return c, err
	}
	// The connection broke under this call; the client notices at once
	// (its read loop ends), bounded by the handshake timeout.
	select {
	case <-sc.dead:
	case <-ctx.Done():
		return nil, err
	case <-time.After(t.opts.Timeout):
		return nil, err
	}
	if sc, err = t.live(ctx); err != nil {
		return nil, err
	}
	return t.channel(ctx, sc, addr)
}

// channel opens one direct-tcpip channel on sc, bounded by ctx.
func (t *SSHTunnel) channel(ctx context.Context, sc *sshConn, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := sc.client.Dial("tcp", addr)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("through ssh %s@%s to %s: %w", t.target.User, t.target.Addr, addr, r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Close ends the SSH connection and every channel through it; later dials
// fail with ErrTunnelClosed.
func (t *SSHTunnel) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	return t.conn.client.Close()
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
